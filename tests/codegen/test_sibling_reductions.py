"""Sibling reductions sharing one tree, and small (replicated) blocks reduced without shared memory.

Two lowering changes are checked here against the interpreter and numpy (run_cpu runs the same
LLVM reduction tree, CTAs in lock-step):

* reductions of same-shape operands along one axis in one region are lowered together
  (``tl.max(x)`` beside ``tl.argmax(x)``, ``tl.sum(a)`` beside ``tl.sum(b)``): each result must
  be exactly the one it has alone (first index of the max, NaN ignored, -0.0 ties +0.0, all NaN
  gives index 0, max of an all-NaN block is NaN);
* a block of at most 32 elements is replicated over the CTA (``Layout.rep``): every group of
  ``rep`` lanes holds the whole block, so a reduction of a loaded block runs in every thread at
  once; stores and atomics still act once per element.
"""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.codegen.layout import Layout
from eggpu.ir import Builder, f16, f32, i32, pointer
from eggpu.ir.dtypes import f64

from .conftest import load_tile, run_compare

SPECIALS = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.5, 7.0, 7.0]
KINDS = ("reduce_max", "reduce_argmax", "reduce_min", "reduce_argmin", "reduce_sum")


def ref(x: np.ndarray, kind: str) -> float:
    """The op table's result for one slice (float64 values)."""
    num = ~np.isnan(x)
    if kind == "reduce_sum":
        with np.errstate(invalid="ignore"):
            return float(np.sum(x))
    if not num.any():
        return 0 if kind.startswith("reduce_arg") else np.nan
    best = x[num].max() if kind in ("reduce_max", "reduce_argmax") else x[num].min()
    if kind.startswith("reduce_arg"):
        return int(np.flatnonzero(num & (x == best))[0])
    if best == 0:  # maximumNumber/minimumNumber order -0.0 below +0.0
        zeros = x[num & (x == 0)]
        pos = ~np.signbit(zeros)
        return 0.0 if (pos.any() if kind == "reduce_max" else pos.all()) else -0.0
    return float(best)


def full_siblings(n: int, dt=f32):
    """out[k] = KINDS[k](x[:n]) (floats as f32/f64, indices as floats too): five siblings."""
    b = Builder(f"sib_full_{n}_{dt}", [("x", pointer(dt)), ("out", pointer(dt))])
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), b.op("arange", start=0, end=n)))
    for k, kind in enumerate(KINDS):
        r = b.op(kind, x, axis=0)
        if kind.startswith("reduce_arg"):
            r = b.op("cast", r, dtype=dt)
        b.effect("store", b.op("addptr", b.param("out"), b.const(k, i32)), r)
    return b.finish()


def row_siblings(rows: int, cols: int):
    """out[k*rows + r] = max / argmax / sum of row r (the rows strategy)."""
    b = Builder(f"sib_rows_{rows}x{cols}", [("x", pointer(f32)), ("out", pointer(f32))])
    x = load_tile(b, "x", rows, cols)
    for k, kind in enumerate(("reduce_max", "reduce_argmax", "reduce_sum")):
        red = b.op(kind, x, axis=1)
        if kind == "reduce_argmax":
            red = b.op("cast", red, dtype=f32)
        dst = b.op("add", b.op("arange", start=0, end=rows), b.op("splat", b.const(k * rows, i32), shape=(rows,)))
        b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(rows,)), dst), red)
    return b.finish()


def special_values(n: int, case: str, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).choice(np.array(SPECIALS), size=n)
    if case == "all_nan":
        x[:] = np.nan
    elif case == "nan_and_neg_inf":
        x[:] = np.nan
        x[n // 2] = -np.inf
    elif case == "zeros":
        x[:] = -0.0
        x[n // 3] = 0.0
    elif case == "all_neg_inf":
        x[:] = -np.inf
    elif case == "ties":
        x[:] = 1.0
        x[n // 4] = x[n - 1] = 9.0
    elif case == "random":
        x = np.random.default_rng(seed).standard_normal(n)
    return x


def _check_full(n: int, case: str, dt=f32) -> None:
    x = special_values(n, case, n).astype(dt.np)
    got = run_compare(full_siblings(n, dt), (1,), [x, np.zeros(len(KINDS), dt.np)], rtol=1e-6)[1]
    xs = x.astype(np.float64)
    for k, kind in enumerate(KINDS):
        want = ref(xs, kind)
        if kind == "reduce_sum":
            np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-6, err_msg=f"{kind} n={n} {case}")
        elif np.isnan(want):
            assert np.isnan(got[k]), (kind, n, case, got[k])
        else:  # exact, sign of zero included
            assert got[k] == want and np.signbit(got[k]) == np.signbit(want), (kind, n, case, got[k], want)


CASES = ("all_nan", "nan_and_neg_inf", "zeros", "all_neg_inf", "ties", "specials", "random")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("n", (1, 10, 16, 32, 1000, 1001, 1024))
def test_full_siblings_match_numpy_and_interpreter(n, case):
    _check_full(n, case)


@pytest.mark.parametrize("case", ("zeros", "ties", "nan_and_neg_inf"))
def test_full_siblings_f64(case):
    _check_full(24, case, f64)


@pytest.mark.parametrize("rows,cols", [(4, 32), (2, 512), (16, 8), (3, 4), (128, 2)])
def test_row_siblings_match_numpy_and_interpreter(rows, cols):
    x = special_values(rows * cols, "specials", rows + cols).reshape(rows, cols)
    x[0] = np.nan
    x[-1] = -0.0
    x[-1, cols // 2] = 0.0
    got = run_compare(row_siblings(rows, cols), (1,), [x.astype(np.float32).ravel(), np.zeros(3 * rows, np.float32)],
                      rtol=1e-6)[1].reshape(3, rows)
    xs = x.astype(np.float32).astype(np.float64)
    for r in range(rows):
        for k, kind in enumerate(("reduce_max", "reduce_argmax")):
            want = ref(xs[r], kind)
            assert (np.isnan(want) and np.isnan(got[k, r])) or (got[k, r] == want and
                                                                np.signbit(got[k, r]) == np.signbit(want)), (r, kind)


def test_sibling_over_a_later_operand_is_not_hoisted():
    """``sum(x - max(x))``: the sum's operand needs the max, so the two are separate trees and
    both results are right (a sibling is only taken when its operand is already computed)."""
    n = 16
    b = Builder("later_operand", [("x", pointer(f32)), ("out", pointer(f32))])
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), b.op("arange", start=0, end=n)))
    m = b.op("reduce_max", x, axis=0)
    s = b.op("reduce_sum", b.op("sub", x, b.op("splat", m, shape=(n,))), axis=0)
    b.effect("store", b.param("out"), m)
    b.effect("store", b.op("addptr", b.param("out"), b.const(1, i32)), s)
    x0 = np.arange(n, dtype=np.float32)
    got = run_compare(b.finish(), (1,), [x0, np.zeros(2, np.float32)])[1]
    assert got.tolist() == [15.0, float(np.sum(x0 - 15))]


def test_small_layouts_replicate_and_keep_one_owner():
    assert Layout((16,), 128).rep == 16 and Layout((10,), 128).rep == 16 and Layout((1,), 128).rep == 1
    assert Layout((2, 8), 128).rep == 16 and Layout((32,), 128).rep == 32
    assert Layout((33,), 128).rep == 0 and Layout((256,), 128).rep == 0
    assert Layout((32,), 32).rep == 0 and Layout((16,), 32).rep == 16
    # the ownership map is unchanged: every element has one owner, thread f for flat index f
    lay = Layout((10,), 128)
    assert [lay.slot_flat(t, 0) for t in range(10)] == list(range(10)) and lay.owner(7) == (7, 0)


def test_replicated_block_stores_and_atomics_act_once():
    """A 10-element block over 128 threads: copies compute the elements too, but the store
    writes each element once and an atomic add adds once per element (counts checked), and a
    reduction of the atomics' old values (copies not filled) is still right."""
    n = 10
    b = Builder("rep_effects", [("x", pointer(f32)), ("cnt", pointer(i32)), ("out", pointer(f32))])
    idx = b.op("arange", start=0, end=n)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), idx))
    y = b.op("mul", x, b.op("splat", b.const(2.0, f32), shape=(n,)))
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(n,)), idx), y)
    ones = b.op("splat", b.const(1, i32), shape=(n,))
    old = b.op("atomic_add", b.op("addptr", b.op("splat", b.param("cnt"), shape=(n,)), idx), ones)
    total = b.op("reduce_sum", old, axis=0)
    b.effect("store", b.op("addptr", b.param("cnt"), b.const(n, i32)), total)
    x0 = np.arange(n, dtype=np.float32) - 3
    cnt = np.arange(n + 1, dtype=np.int32)
    got = run_compare(b.finish(), (3,), [x0, cnt, np.zeros(n, np.float32)])
    # three programs: each adds 1 per element once; the last stores the sum of the old counts
    assert got[1][:n].tolist() == [i + 3 for i in range(n)]
    assert got[1][n] == sum(i + 2 for i in range(n))
    assert got[2].tolist() == (2 * x0).tolist()


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_small_row_argmax_reduces_without_shared_memory(target):
    """The library's row_argmax at BLOCK_SIZE 16: max and argmax of the loaded tile run in every
    thread's 16-lane group, so the PTX has no barrier and no shared memory at all; at 256 the
    two reductions share one exchange (two barriers per tile, not four)."""
    import eggpu
    from eggpu.kernels import get

    lk = get("row_argmax")
    small = eggpu.compile(lk.kernel(f32, (16,)), target=target, cache=False).ptx
    assert "bar.sync" not in small and "__eggpu_smem" not in small
    # max and argmax index, 4 levels each: argmax compares the value tl.max carries (Fused.partners)
    assert small.count("shfl.sync.bfly") == 2 * 4
    big = eggpu.compile(lk.kernel(f32, (256,)), target=target, cache=False).ptx
    assert big.count("bar.sync") == 2


@pytest.mark.parametrize("block", (16, 256))
@pytest.mark.parametrize("cols", (1, 10, 16, 1000, 1001))
def test_row_argmax_on_the_host_matches_numpy(block, cols):
    import eggpu
    from eggpu.kernels import get
    from eggpu.kernels.library import padded_rows, sentinel

    rng = np.random.default_rng(cols + block)
    rows = rng.choice(np.array(SPECIALS[1:] + [3.0, -2.0], np.float32), size=(8, cols))
    rows[0] = np.nan
    rows[1] = -np.inf
    rows[2] = -0.0
    rows[2, cols // 2] = 0.0
    rows[3, ::2] = np.nan
    rows[4] = 5.0
    rows[5] = rng.standard_normal(cols)
    rows[6, -1] = 1e30
    rows[7] = np.nan
    rows[7, -1] = -np.inf
    x = padded_rows(rows)
    out = sentinel(8, i32)
    lk = get("row_argmax").kernel(f32, (block,))
    eggpu.compile(lk, cache=False).run_cpu((8,), x, out, np.int32(cols), np.int32(x.shape[1]))
    # the kernel's contract: the first index of the row's maximum, NaN ignored; a row whose
    # maximum is -inf (or with no number) gives 0
    real = np.where(np.isnan(rows), -np.inf, rows)
    want = [0 if r.max() == -np.inf else int(np.argmax(r)) for r in real]
    np.testing.assert_array_equal(out, want)
    ref_out = sentinel(8, i32)
    lk.interpret((8,), x, ref_out, np.int32(cols), np.int32(x.shape[1]))
    np.testing.assert_array_equal(out, ref_out)


ROW_KERNELS = ("softmax_forward", "log_softmax_forward", "layer_norm_forward", "rms_norm_forward",
               "cross_entropy_forward", "row_sum", "row_max", "row_argmax", "softmax_backward",
               "layer_norm_backward")


@pytest.mark.parametrize("name", ROW_KERNELS)
@pytest.mark.parametrize("size", [(3, 10), (2, 1), (4, 33)])
def test_row_kernels_at_a_replicated_block_run_on_the_host(name, size):
    """BLOCK_SIZE 16 over 128 threads (replicated tiles, accumulators carried with their copies
    filled, reductions without shared memory): run_cpu meets the numpy reference."""
    import eggpu
    from eggpu.kernels import get

    lk = get(name)
    case = lk.make_case(size, f32, np.random.default_rng(sum(size)))
    case = case._replace(consts=(16,))
    ck = eggpu.compile(lk.instance(case), cache=False)
    lk.check(case, case.run(ck.run_cpu))


@pytest.mark.parametrize("name", ("rms_norm_forward", "layer_norm_forward", "softmax_forward"))
def test_accumulated_replicated_tile_reduces_without_shared_memory(name):
    """A tile accumulated in a loop (``acc += x * x``) and reduced after it: the carried
    accumulator keeps its copies filled, so the reductions need no barrier at BLOCK_SIZE 16."""
    import eggpu
    from eggpu.kernels import get

    ptx = eggpu.compile(get(name).kernel(f32, (16,)), target="sm_80", cache=False).ptx
    assert "bar.sync" not in ptx


def _minmax_siblings(n: int, dt):
    """out[k] = (max, argmax, min, argmin)[k](x[:n]), indices cast to dt: each arg-reduction's
    value is its max/min sibling's (Fused.partners)."""
    b = Builder(f"sib_pairs_{n}_{dt}", [("x", pointer(dt)), ("out", pointer(dt))])
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), b.op("arange", start=0, end=n)))
    for k, kind in enumerate(("reduce_argmax", "reduce_max", "reduce_min", "reduce_argmin")):  # arg first too
        r = b.op(kind, x, axis=0)
        if kind.startswith("reduce_arg"):
            r = b.op("cast", r, dtype=dt)
        b.effect("store", b.op("addptr", b.param("out"), b.const(k, i32)), r)
    return b.finish()


@pytest.mark.parametrize("n", (16, 200, 1001))
@pytest.mark.parametrize("dt,case", [(f16, "specials"), (f16, "all_nan"), (f16, "zeros"), (f16, "nan_and_neg_inf"),
                                     (i32, "ties"), (i32, "random")], ids=str)
def test_arg_reduction_sharing_its_siblings_value_matches_numpy(n, dt, case):
    """Unowned slots (n = 200, 1001), NaN, -0.0/+0.0 and ties in f16 (widened to f32) and i32."""
    x = special_values(n, case, n)
    if dt == i32:
        x = np.round(x * 3).astype(np.int32)
        x[n // 5] = x[n - 2] = np.iinfo(np.int32).min if case == "ties" else x[n // 5]
    x = x.astype(dt.np)
    got = run_compare(_minmax_siblings(n, dt), (1,), [x, np.zeros(4, dt.np)])[1]
    xs = x.astype(np.float64)
    for k, kind in enumerate(("reduce_argmax", "reduce_max", "reduce_min", "reduce_argmin")):
        want = ref(xs, kind)
        if np.isnan(want):
            assert np.isnan(got[k]), (kind, got[k])
        else:
            assert got[k] == want and np.signbit(got[k]) == np.signbit(want), (kind, got[k], want)


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_argmax_beside_max_carries_only_its_index(target):
    """With ``tl.max(x)`` beside ``tl.argmax(x)`` each butterfly level shuffles two values (the
    max and the index), not three; without the sibling it is value and index."""
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(_minmax_siblings(16, f32), target)
    assert ptx.count("shfl.sync.bfly") == 4 * 4  # (max, argmax index) + (min, argmin index), 4 levels
