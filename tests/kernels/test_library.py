"""The kernel library against its numpy references, run with the interpreter.

Every entry of ``eggpu.kernels.LIBRARY``, every dtype it lists, on ragged sizes (n = 1, 1000,
1001, 4097; rows of 10 and 781 columns; a 100x70x50 matmul); backward kernels against central
finite differences of the forward in float64; the registry's own invariants; the references'
self-consistency; the bundled examples.
"""

from __future__ import annotations

import runpy
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eggpu.language as tl
from eggpu.ir.dtypes import f32, f64
from eggpu.ir.graph import Function
from eggpu.kernels import LIBRARY, assert_close, get
from eggpu.kernels import reference as ref
from eggpu.kernels.library import LAYER_NORM_EPS, padded_rows, row_block, rows_of, sentinel
from eggpu.kernels.registry import Tol

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _rng(*key: object) -> np.random.Generator:
    """A generator seeded from the test's parameters (stable across runs and processes)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _params(size_attr: str):
    return [
        pytest.param(lk, dt, size, id=f"{lk.name}-{dt}-{'x'.join(map(str, np.atleast_1d(size)))}")
        for lk in LIBRARY
        for dt in lk.dtypes
        for size in getattr(lk, size_attr)
    ]


# ---------------------------------------------------------------- every kernel, dtype and size


@pytest.mark.parametrize("lk,dtype,size", _params("sizes"))
def test_kernel_matches_reference(lk, dtype, size):
    case = lk.make_case(size, dtype, _rng(lk.name, dtype, size))
    lk.check(case, lk.interpret(case))


@pytest.mark.parametrize("lk,dtype,size", _params("extra_sizes"))
def test_kernel_matches_reference_on_edge_and_large_sizes(lk, dtype, size):
    case = lk.make_case(size, dtype, _rng(lk.name, dtype, size))
    lk.check(case, lk.interpret(case))


ROW_KERNELS = [lk for lk in LIBRARY if isinstance(lk.sizes[0], tuple) and len(lk.sizes[0]) == 2]


@pytest.mark.parametrize("lk", ROW_KERNELS, ids=lambda lk: lk.name)
@pytest.mark.parametrize("block", [16, 64, 1024])
def test_row_kernels_do_not_depend_on_the_block_size(lk, block):
    """Tiles smaller than the row (a loop with a partial last tile) and larger (one masked tile)."""
    case = lk.make_case((3, 100), f32, _rng(lk.name, "blocks"))._replace(consts=(block,))
    lk.check(case, lk.interpret(case))


def _random_size(lk, data):
    if isinstance(lk.sizes[0], int):
        return data.draw(st.integers(1, 5000), label="n")
    if len(lk.sizes[0]) == 2:
        return (data.draw(st.integers(1, 6), label="rows"), data.draw(st.integers(1, 1300), label="cols"))
    return tuple(data.draw(st.integers(1, 80), label=d) for d in "MNK")


@pytest.mark.slow
@pytest.mark.parametrize("lk", LIBRARY, ids=lambda lk: lk.name)
@settings(deadline=None, max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_sizes_and_dtypes(lk, data):
    dtype = data.draw(st.sampled_from(lk.dtypes), label="dtype")
    size = _random_size(lk, data)
    case = lk.make_case(size, dtype, _rng(lk.name, dtype, size, "random"))
    lk.check(case, lk.interpret(case))


# ---------------------------------------------------------------- the registry


def test_registry_entries_are_consistent():
    names = [lk.name for lk in LIBRARY]
    assert len(names) == len(set(names))
    for lk in LIBRARY:
        assert lk.fn.__name__ == lk.name
        assert lk.kernel_class.__name__ == "".join(w.capitalize() for w in lk.name.split("_"))
        assert lk.dtypes and lk.sizes
        assert set(lk.dtypes) <= set(lk.tolerances)
        if lk.backward:
            assert get(lk.backward).forward == lk.name
        if lk.forward:
            assert get(lk.forward).backward == lk.name


def test_registry_covers_the_ragged_sizes():
    sizes = {lk.name: set(lk.sizes) for lk in LIBRARY}
    assert {1, 1000, 1001, 4097} <= sizes["vector_add"]
    for name in ("softmax_forward", "log_softmax_forward", "layer_norm_forward", "rms_norm_forward",
                 "cross_entropy_forward", "row_sum", "row_max", "row_argmax"):
        assert {c for _, c in sizes[name]} >= {10, 781}, name
    assert (100, 70, 50) in sizes["matmul"]
    assert row_block(781) == 256 and row_block(10) == 16


def test_case_run_uses_fresh_copies_and_reports_outputs():
    lk = get("vector_add")
    case = lk.make_case(5, f32, _rng("copies"))
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]

    def fake(grid, x, y, out, n):
        assert grid == case.grid
        out[:] = x + y

    got = case.run(fake)
    assert set(got) == {"out_ptr"}
    lk.check(case, got)
    assert np.isnan(case.arg("out_ptr")).all()  # the case itself is never written
    for a, b in zip(case.args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_check_rejects_a_wrong_result():
    lk = get("softmax_forward")
    case = lk.make_case((3, 10), f32, _rng("wrong"))
    want = lk.expected(case)["y_ptr"]
    got = want.astype(np.float32)
    lk.check(case, {"y_ptr": got})
    bad = got.copy()
    bad[1, 4] += 1e-3
    with pytest.raises(AssertionError, match=r"(?s)output y_ptr: 1 of .* worst at \(1, 4\)"):
        lk.check(case, {"y_ptr": bad})
    spilled = got.copy()
    spilled[0, 10] = 0.0  # a write into the padding after the row
    with pytest.raises(AssertionError):
        lk.check(case, {"y_ptr": spilled})


def test_assert_close_semantics():
    assert_close(np.array([1.0, np.nan, np.inf]), np.array([1.0 + 1e-7, np.nan, np.inf]), Tol(1e-6, 0))
    with pytest.raises(AssertionError):
        assert_close(np.array([np.nan]), np.array([0.0]), Tol(1, 1))
    with pytest.raises(AssertionError):
        assert_close(np.array([np.inf]), np.array([-np.inf]), Tol(1, 1))
    with pytest.raises(AssertionError):  # indices are compared exactly whatever the tolerance
        assert_close(np.array([3], np.int32), np.array([2.0]), Tol(1, 1))


# ---------------------------------------------------------------- backward = derivative of forward


H = 1e-6  # central-difference step; everything below runs in float64


def _kernel_fd_rows(forward, x, dy):
    """Central differences of ``sum(dy * forward(x))`` for a row kernel run with the interpreter."""
    grad = np.zeros_like(x)
    for j in range(x.shape[1]):
        xp, xm = x.copy(), x.copy()
        xp[:, j] += H
        xm[:, j] -= H
        grad[:, j] = ((forward(xp) - forward(xm)) * dy).sum(axis=1) / (2 * H)
    return grad


def test_gelu_backward_matches_finite_differences():
    rng = _rng("gelu-fd")
    n = 1001
    x, dy = rng.standard_normal(n) * 3, rng.standard_normal(n)
    dx = sentinel(n, f64)
    get("gelu_backward").kernel(f64, (256,)).interpret((4,), x, dy, dx, n)
    assert_close(dx, ref.central_difference(ref.gelu, x, dy, h=H), Tol(1e-8, 1e-9), what="gelu dx vs FD")

    fwd = get("gelu_forward").kernel(f64, (256,))

    def forward(xx):
        y = sentinel(n, f64)
        fwd.interpret((4,), xx, y, n)
        return y

    fd = dy * (forward(x + H) - forward(x - H)) / (2 * H)
    assert_close(dx, fd, Tol(1e-8, 1e-9), what="gelu dx vs FD of the forward kernel")


def test_relu_backward_matches_finite_differences():
    rng = _rng("relu-fd")
    x = rng.standard_normal(1000)
    x = np.where(np.abs(x) < 1e-3, 0.5, x)  # keep away from the kink
    dy = rng.standard_normal(1000)
    dx = sentinel(1000, f64)
    get("relu_backward").kernel(f64, (1024,)).interpret((1,), ref.relu(x), dy, dx, 1000)
    assert_close(dx, ref.central_difference(ref.relu, x, dy, h=H), Tol(1e-8, 1e-9), what="relu dx vs FD")


def _softmax_forward_kernel(cols):
    fwd = get("softmax_forward").kernel(f64, (row_block(cols),))

    def forward(x):
        buf = padded_rows(x)
        y = sentinel(buf.shape, f64)
        fwd.interpret((x.shape[0],), buf, y, cols, buf.shape[1])
        return rows_of(y, cols)

    return forward


@pytest.mark.parametrize("shape", [(3, 10), (5, 781)])
def test_softmax_backward_matches_finite_differences(shape):
    rng = _rng("softmax-fd", shape)
    rows, cols = shape
    x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
    forward = _softmax_forward_kernel(cols)
    y = padded_rows(forward(x))
    dx = sentinel(y.shape, f64)
    get("softmax_backward").kernel(f64, (row_block(cols),)).interpret(
        (rows,), y, padded_rows(dy), dx, cols, y.shape[1])
    tol = Tol(1e-7, 1e-9)
    fd = ref.central_difference(ref.softmax, x, dy, h=H, independent="rows")
    assert_close(rows_of(dx, cols), fd, tol, what="softmax dx vs FD")
    assert np.isnan(dx[:, cols:]).all()
    if cols <= 16:  # the forward kernel itself, differentiated numerically (2 launches per column)
        assert_close(rows_of(dx, cols), _kernel_fd_rows(forward, x, dy), tol, what="softmax dx vs FD of the kernel")


@pytest.mark.parametrize("shape", [(3, 10), (5, 781)])
def test_layer_norm_backward_matches_finite_differences(shape):
    rng = _rng("layer-norm-fd", shape)
    rows, cols = shape
    x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
    w, b = 1.0 + 0.5 * rng.standard_normal(cols), 0.5 * rng.standard_normal(cols)
    eps = LAYER_NORM_EPS
    fwd = get("layer_norm_forward").kernel(f64, (row_block(cols),))

    def forward(xx, ww=w, bb=b):
        buf = padded_rows(xx)
        y, mean, rstd = sentinel(buf.shape, f64), sentinel(rows, f32), sentinel(rows, f32)
        fwd.interpret((rows,), buf, y, ww, bb, mean, rstd, cols, buf.shape[1], eps)
        return rows_of(y, cols), mean, rstd

    _, mean, rstd = forward(x)  # the saved statistics, as the forward kernel stores them (f32)
    dx = sentinel((rows, cols + 3), f64)
    dw, db = np.zeros(cols, np.float32), np.zeros(cols, np.float32)
    get("layer_norm_backward").kernel(f64, (row_block(cols),)).interpret(
        (rows,), padded_rows(x), padded_rows(dy), w, mean, rstd, dx, dw, db, cols, cols + 3)
    tol = Tol(1e-5, 1e-6)  # mean and rstd are saved in f32; dweight/dbias accumulate in f32

    def ln(xx=x, ww=w, bb=b):
        return ref.layer_norm(xx, ww, bb, eps)[0]

    fd_x = ref.central_difference(lambda xx: ln(xx=xx), x, dy, h=H, independent="rows")
    assert_close(rows_of(dx, cols), fd_x, tol, what="layer norm dx vs FD")
    fd_w = ref.central_difference(lambda ww: ln(ww=ww[0]), w[None, :], dy, h=H, independent="none")[0]
    fd_b = ref.central_difference(lambda bb: ln(bb=bb[0]), b[None, :], dy, h=H, independent="none")[0]
    assert_close(dw, fd_w, tol, what="layer norm dweight vs FD")
    assert_close(db, fd_b, tol, what="layer norm dbias vs FD")
    if cols <= 16:
        assert_close(rows_of(dx, cols), _kernel_fd_rows(lambda xx: forward(xx)[0], x, dy), tol,
                     what="layer norm dx vs FD of the forward kernel")


def test_layer_norm_backward_accumulates_into_dweight_and_dbias():
    """dweight/dbias are added to (atomically), not overwritten: two launches give twice the sum."""
    lk = get("layer_norm_backward")
    case = lk.make_case((5, 781), f32, _rng("ln-acc"))
    kernel = lk.instance(case)
    args = case.fresh_args()
    kernel.interpret(case.grid, *args)
    kernel.interpret(case.grid, *args)
    want = lk.expected(case)
    tol = lk.tolerance(f32)
    assert_close(args[case.arg_names.index("dweight_ptr")], 2 * want["dweight_ptr"], tol)
    assert_close(args[case.arg_names.index("dbias_ptr")], 2 * want["dbias_ptr"], tol)


def _pointer_root(v):
    """The kernel parameter a pointer value is derived from (through addptr and shape ops)."""
    while not isinstance(v.owner, Function):
        v = v.owner.operands[0]
    return v.name


def test_layer_norm_backward_updates_dweight_and_dbias_only_atomically():
    """A plain load-add-store from every row-program would race on a GPU (teenygrad's B3); the
    interpreter runs programs one after another and cannot see that, so check the IR."""
    fn = get("layer_norm_backward").kernel(f32, (256,)).ir()
    written = {}
    for op in fn.walk():
        if op.op == "store" or op.op.startswith("atomic_"):
            written.setdefault(_pointer_root(op.operands[0]), set()).add(op.op)
    assert written == {"dx_ptr": {"store"}, "dweight_ptr": {"atomic_add"}, "dbias_ptr": {"atomic_add"}}


# ---------------------------------------------------------------- edge behaviour of particular kernels


def test_row_argmax_breaks_ties_by_first_index_across_tiles():
    cols = 600  # three tiles of 256
    rows = np.zeros((5, cols), np.float32)
    rows[0, [3, 300, 599]] = 7.0  # tie across tiles: the first tile wins
    rows[1, [599, 520]] = 7.0  # tie in the last, partial tile: the earlier column
    rows[2, :] = -1.0  # all equal: index 0
    rows[3, [255, 256]] = 2.0  # tie across a tile boundary
    rows[4, 599] = 1.0  # the very last column
    x = padded_rows(rows)
    out = sentinel(5, tl.i32)
    get("row_argmax").kernel(f32, (256,)).interpret((5,), x, out, np.int32(cols), np.int32(x.shape[1]))
    np.testing.assert_array_equal(out, [3, 520, 0, 255, 599])
    np.testing.assert_array_equal(out, np.argmax(rows, axis=1))


def test_softmax_handles_extreme_logits_without_overflow():
    x = np.array([[1000.0, 999.0, -1000.0] + [0.0] * 7, [-1e4] * 10], np.float32)
    buf = padded_rows(x)
    y = sentinel(buf.shape, f32)
    get("softmax_forward").kernel(f32, (16,)).interpret((2,), buf, y, np.int32(10), np.int32(buf.shape[1]))
    assert_close(rows_of(y, 10), ref.softmax(x), Tol(1e-6, 1e-7))


def test_row_argmax_ignores_nan_and_handles_all_minus_inf():
    rows = np.array([[np.nan, 1.0, 3.0, np.nan], [-np.inf] * 4, [np.nan] * 4], np.float32)
    x = padded_rows(rows)
    out = sentinel(3, tl.i32)
    get("row_argmax").kernel(f32, (16,)).interpret((3,), x, out, 4, x.shape[1])
    np.testing.assert_array_equal(out, [2, 0, 0])


def test_cross_entropy_ignores_out_of_range_targets():
    rng = _rng("ce-ignore")
    x = padded_rows(rng.standard_normal((4, 10)).astype(np.float32))
    targets = np.array([2, -100, 10, 9], np.int32)  # 10 == n_cols is out of range too
    loss = sentinel(4, f32)
    get("cross_entropy_forward").kernel(f32, (16,)).interpret((4,), x, targets, loss, np.int32(10),
                                                              np.int32(x.shape[1]))
    want = ref.cross_entropy(x[:, :10], np.array([2, 0, 0, 9]))
    assert_close(loss, np.array([want[0], 0.0, 0.0, want[3]]), Tol(1e-6, 1e-6))


def test_relu_on_integers_is_exact_at_the_extremes():
    x = np.array([-128, -1, 0, 1, 127], np.int8)
    y = sentinel(5, tl.i8)
    get("relu_forward").kernel(tl.i8, (16,)).interpret((1,), x, y, np.int32(5))
    np.testing.assert_array_equal(y, [0, 0, 0, 1, 127])


def test_matmul_with_row_major_b_and_multiple_k_tiles():
    rng = _rng("matmul-layout")
    M, N, K = 40, 33, 70
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = sentinel((M, N), f32)
    get("matmul").kernel(f32, (16, 32, 32)).interpret(
        (3, 2), a, b, c, np.int32(M), np.int32(N), np.int32(K), np.int32(K), np.int32(1), np.int32(N), np.int32(1),
        np.int32(N), np.int32(1))
    assert_close(c, ref.matmul(a, b), Tol(1e-5, 1e-5))


# ---------------------------------------------------------------- forward/backward pairing


@pytest.mark.parametrize("forward", [lk.name for lk in LIBRARY if lk.backward])
def test_dispatch_pairs_forward_with_backward(forward):
    lk = get(forward)
    inst = lk.fn.Dispatch.dispatch("f32", 256)
    assert inst.kernel.name == forward
    assert inst.backward is not None and inst.backward.kernel.name == lk.backward


def test_relu_dispatch_supports_ints_and_floats():
    supported = get("relu_forward").fn.Dispatch.SUPPORTED_DTYPES
    assert tl.i8 in supported and tl.u32 in supported and tl.f16 in supported


def test_matmul_dispatch_excludes_f64():
    assert get("matmul").fn.Dispatch.SUPPORTED_DTYPES == (tl.f16, tl.bf16, tl.f32)


# ---------------------------------------------------------------- the references themselves


def test_references_are_consistent():
    rng = _rng("refs")
    x = rng.standard_normal((4, 37))
    np.testing.assert_allclose(ref.softmax(x).sum(axis=1), 1.0)
    np.testing.assert_allclose(ref.log_softmax(x), np.log(ref.softmax(x)), atol=1e-12)
    t = rng.integers(0, 37, 4)
    np.testing.assert_allclose(ref.cross_entropy(x, t), -ref.log_softmax(x)[np.arange(4), t])
    dy = rng.standard_normal((4, 37))
    np.testing.assert_allclose(ref.softmax_backward(ref.softmax(x), dy),
                               ref.central_difference(ref.softmax, x, dy, independent="rows"), atol=1e-8)
    np.testing.assert_allclose(ref.gelu_backward(x, dy), ref.central_difference(ref.gelu, x, dy), atol=1e-8)
    w, b = rng.standard_normal(37), rng.standard_normal(37)
    y, mean, rstd = ref.layer_norm(x, w, b, 1e-5)
    np.testing.assert_allclose(((y - b) / w).mean(axis=1), 0.0, atol=1e-12)
    dx, dw, db = ref.layer_norm_backward(x, dy, w, mean, rstd)
    np.testing.assert_allclose(
        dx, ref.central_difference(lambda xx: ref.layer_norm(xx, w, b, 1e-5)[0], x, dy, independent="rows"),
        atol=1e-7)
    np.testing.assert_allclose(ref.gelu(np.array([0.0, 1.0])), [0.0, 0.8413447460685429])
    np.testing.assert_array_equal(ref.row_argmax(np.array([[1.0, 3.0, 3.0]])), [1])


def test_adam_reference_matches_a_scalar_loop():
    p, g, m, v = 0.5, -0.2, 0.01, 0.002
    lr, b1, b2, eps, wd, t = 1e-3, 0.9, 0.999, 1e-8, 0.01, 3
    gg = g + wd * p
    m2 = b1 * m + (1 - b1) * gg
    v2 = b2 * v + (1 - b2) * gg * gg
    m_hat, v_hat = m2 / (1 - b1**t), v2 / (1 - b2**t)
    p2 = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    got = ref.adam_step(np.array([p]), np.array([g]), np.array([m]), np.array([v]), lr=lr, beta1=b1, beta2=b2,
                        eps=eps, weight_decay=wd, bias_correction1=1 - b1**t, bias_correction2=1 - b2**t)
    np.testing.assert_allclose([a[0] for a in got], [p2, m2, v2], rtol=1e-12)


# ---------------------------------------------------------------- examples


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_example_runs(script, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [script])
    runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    assert "ok" in capsys.readouterr().out
