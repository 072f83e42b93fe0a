"""``tl.topk``, ``tl.bitonic_merge``, ``tl.squeeze`` and ``tl.unsqueeze`` (Triton's standard library)
against numpy on ragged sizes,
in the interpreter and run_cpu, and compiled to PTX that ptxas accepts; misuse is a located
compile error naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def topk_prefix(X, Y, N, FILL: tl.constexpr, K: tl.constexpr, DESC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=FILL)  # padding never makes the top k
    tl.store(Y + tl.arange(0, K), tl.topk(x, K, descending=DESC))


@eggpu.jit
def topk_rows(X, Y, R: tl.constexpr, C: tl.constexpr, K: tl.constexpr):
    x = tl.load(X + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    tl.store(Y + tl.arange(0, R)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@eggpu.jit
def merge_rows(X, Y, DESC: tl.constexpr, DIM: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(Y + offs, tl.bitonic_merge(tl.load(X + offs), dim=DIM, descending=DESC))


def _block(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@pytest.mark.parametrize("n, k, desc", [
    (1, 1, True), (1, 1, False), (1000, 8, True), (1001, 16, False),
    # a 1024-lane sort network costs ~12 s to build for the CPU: the other two orders only in -m slow
    pytest.param(1000, 8, False, marks=pytest.mark.slow), pytest.param(1001, 16, True, marks=pytest.mark.slow),
])
def test_topk_matches_numpy_on_ragged_sizes(run_both, n, k, desc):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    x[5::9] = x[4::9][: x[5::9].size]  # duplicates among the top values too
    want = (np.sort(x)[::-1] if desc else np.sort(x))[:k]
    fill = float("-inf") if desc else float("inf")
    for _, y in run_both(topk_prefix, (1,), x, np.zeros(k, np.float32), n, FILL=fill, K=k, DESC=desc,
                         BLOCK=_block(n)).values():
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dt", [np.int8, np.uint16, np.int64, np.float16])
def test_topk_of_each_row_for_integer_and_half_dtypes(run_both, dt):
    rng = np.random.default_rng(7)
    x = (rng.integers(0, 120, (4, 32)) if np.dtype(dt).kind in "iu" else rng.standard_normal((4, 32)) * 50).astype(dt)
    want = -np.sort(-x.astype(np.float64), axis=1)[:, :8]
    for _, y in run_both(topk_rows, (1,), x, np.zeros((4, 8), dt), R=4, C=32, K=8).values():
        np.testing.assert_array_equal(y.astype(np.float64), want)


def test_bitonic_merge_sorts_a_bitonic_row_and_permutes_any_row(run_both):
    rng = np.random.default_rng(11)
    x = rng.integers(-500, 500, (4, 64)).astype(np.int32)
    bitonic = np.concatenate([np.sort(x[:, :32], axis=1), np.sort(x[:, 32:], axis=1)[:, ::-1]], axis=1)
    for desc in (False, True):
        want = np.sort(x, axis=1)[:, ::-1] if desc else np.sort(x, axis=1)
        for _, y in run_both(merge_rows, (1,), bitonic, np.zeros_like(x), DESC=desc, DIM=None, R=4, C=64).values():
            np.testing.assert_array_equal(y, want)
    # any input: a permutation of each row (one compare-exchange pass per distance)
    for _, y in run_both(merge_rows, (1,), x, np.zeros_like(x), DESC=False, DIM=-1, R=4, C=64).values():
        np.testing.assert_array_equal(np.sort(y, axis=1), np.sort(x, axis=1))
        assert (y[:, :32] <= y[:, 32:]).all()  # the first step puts each pair's smaller lane first


@pytest.mark.parametrize("kernel, consts, message", [
    (topk_prefix, dict(FILL=0.0, K=3, DESC=True, BLOCK=8), r"tl.topk: k must be a compile-time power of 2 in "
                                                           r"\[1, 8\], got the compile-time int 3"),
    (topk_prefix, dict(FILL=0.0, K=16, DESC=True, BLOCK=8), r"in \[1, 8\], got the compile-time int 16"),
    (topk_prefix, dict(FILL=0.0, K=2, DESC="no", BLOCK=8), "tl.topk: descending must be a compile-time bool"),
])
def test_topk_errors_name_the_argument(kernel, consts, message):
    x = np.zeros(8, np.float32)
    with pytest.raises(eggpu.CompileError, match=message):
        kernel.specialize(x, x.copy(), 8, **consts).ir()


def test_bitonic_merge_only_on_the_last_dimension_as_in_triton():
    m = np.zeros((4, 8), np.int32)
    with pytest.raises(eggpu.CompileError, match=r"tl.bitonic_merge: only the last dimension is supported \(as in "
                                                 r"Triton\), got dim=0"):
        merge_rows.specialize(m, m.copy(), DESC=False, DIM=0, R=4, C=8).ir()
    with pytest.raises(eggpu.CompileError, match="tl.bitonic_merge needs a power-of-2 length along dim 1, got 6"):
        merge_rows.specialize(np.zeros((4, 6), np.int32), np.zeros((4, 6), np.int32), DESC=False, DIM=None,
                              R=4, C=6).ir()


def test_topk_and_bitonic_merge_compile_to_ptx_that_ptxas_accepts(ptxas_registers):
    x = np.zeros(1024, np.float32)
    ck = eggpu.compile(topk_prefix.specialize(x, x[:16].copy(), 1000, FILL=float("-inf"), K=16, DESC=True,
                                              BLOCK=1024), target="sm_90", cache=False)
    assert ptxas_registers(ck.ptx, "sm_90") > 0
    m = np.zeros((4, 64), np.int32)
    ck = eggpu.compile(merge_rows.specialize(m, m.copy(), DESC=True, DIM=None, R=4, C=64), target="sm_80",
                       cache=False)
    assert ptxas_registers(ck.ptx, "sm_80") > 0


@eggpu.jit
def squeeze_unsqueeze(X, Y, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)[None, :])  # [1, N]
    row = tl.squeeze(x, 0)  # [N]
    col = tl.unsqueeze(row, -1)  # [N, 1]
    tl.store(Y + tl.arange(0, N)[:, None], col * 2)
    one = tl.squeeze(tl.load(X + tl.arange(0, 1)), dim=-1)  # a scalar
    tl.store(Z, one + tl.sum(row, axis=0))


@pytest.mark.parametrize("n", [1, 16])
def test_squeeze_and_unsqueeze_match_numpy(run_both, n):
    x = np.arange(3, 3 + n, dtype=np.int32)
    for _, y, z in run_both(squeeze_unsqueeze, (1,), x, np.zeros(n, np.int32), np.zeros(1, np.int32), N=n).values():
        np.testing.assert_array_equal(y, 2 * x)
        assert z[0] == x[0] + x.sum()


@eggpu.jit
def squeeze_dim(X, Y, DIM: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)[None, :])
    tl.store(Y + tl.arange(0, N), tl.squeeze(x, DIM))


def test_squeeze_of_a_longer_dimension_is_a_located_error():
    x = np.zeros(4, np.int32)
    with pytest.raises(eggpu.CompileError, match="tl.squeeze: dimension 1 of the block has length 4, not 1") as e:
        squeeze_dim.specialize(x, x.copy(), DIM=-1, N=4).ir()
    assert "tl.squeeze(x, DIM)" in str(e.value) and "^" in str(e.value)
    with pytest.raises(eggpu.CompileError, match=r"tl.squeeze: dim must be a compile-time int in \[-2, 2\)"):
        squeeze_dim.specialize(x, x.copy(), DIM=2, N=4).ir()
