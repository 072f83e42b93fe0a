"""The test_core catalogue (``bench/compat_core.py``): kernels in the style of Triton's
``test_core.py`` with only the imports changed match numpy in the interpreter and run_cpu; the
ones eggpu cannot run fail for the documented reason. Also the small language fixes the catalogue
asked for: a tensor method on a compile-time number, and ``@eggpu.jit(noinline=True)``."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench import compat_core

EXPECTED_FAILURES = {
    "inline_asm_elementwise": "tl.inline_asm_elementwise is GPU-only",
}
FAST = ["empty_kernel", "neg", "shift", "compare", "where_scalar_pointer", "masked_load", "reduce2d",
        "atomic_cas", "while", "for_iv", "join_split", "scalar_args"]


@pytest.mark.parametrize("name", FAST)
def test_catalogue_kernel_matches_numpy_interpreted(name):
    assert compat_core.run_case(compat_core.BY_NAME[name], "interpret") is None


@pytest.mark.parametrize("name", ["for_iv", "atomic_cas", "where_scalar_pointer"])
def test_catalogue_kernel_matches_numpy_compiled(name):
    assert compat_core.run_case(compat_core.BY_NAME[name], "cpu") is None


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["interpret", "cpu"])
@pytest.mark.parametrize("name", [c.name for c in compat_core.CASES])
def test_every_catalogue_kernel(name, mode):
    why = compat_core.run_case(compat_core.BY_NAME[name], mode)
    if name in EXPECTED_FAILURES:
        assert why is not None and EXPECTED_FAILURES[name] in why, why
    else:
        assert why is None, why


@pytest.mark.parametrize("name", sorted(EXPECTED_FAILURES))
def test_what_fails_fails_with_a_located_reason(name):
    why = compat_core.run_case(compat_core.BY_NAME[name], "interpret")
    assert why is not None and EXPECTED_FAILURES[name] in why
    assert "bench/compat_core_kernels" in why.split(": ", 1)[1]


def test_a_failing_dtype_is_named_in_the_report():
    def wrong(k, launch, rng):
        def body(d):
            x = np.ones(4, d)
            z = np.zeros_like(x)
            launch(k.neg_kernel, (1,), z, x, SIZE=4)
            return [(d, z, x, 0, 0)]  # -x is not x
        return compat_core._each(("int8", "float32"), body)

    why = compat_core.run_case(compat_core.Case("wrong", "test", wrong), "interpret")
    assert why == "int8: 4 of 4 elements differ, e.g. at (0,): -1.0 != 1.0"


def test_every_case_names_a_kernel_of_the_catalogue_and_the_rate_counts_gpu_only_apart():
    k = compat_core.load("eggpu")
    assert len(compat_core.CASES) == len(compat_core.BY_NAME) >= 40
    assert compat_core.GPU_ONLY <= set(compat_core.BY_NAME)
    for name in compat_core.GPU_ONLY:
        assert hasattr(k, f"{name.split('_elementwise')[0]}_kernel")


# ---------------------------------------------------------------- the fixes


@eggpu.jit
def _sum_in_i64(X, Out, n, BLOCK: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)  # test_core's test_for_iv: a method of a compile-time number
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.sum(tl.load(X + offs, mask=offs < n, other=0).to(tl.int64), axis=0)
    half = 0.5
    tl.store(Out, acc)
    tl.store(Out + 1, half.to(tl.float32).to(tl.int64) + 7)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_a_method_of_a_compile_time_number_applies_to_it_as_a_scalar(run_both, n):
    x = np.random.default_rng(n).integers(2**30, 2**31 - 1, n).astype(np.int32)
    for (_, out) in run_both(_sum_in_i64, (1,), x, np.zeros(2, np.int64), n, BLOCK=256).values():
        assert out.tolist() == [int(x.astype(np.int64).sum()), 7]


@eggpu.jit
def _not_a_method(Out):
    n = 3
    tl.store(Out, n.bit_length())


def test_other_attributes_of_a_compile_time_number_are_a_located_error():
    with pytest.raises(eggpu.CompileError) as ei:
        _not_a_method.specialize(np.zeros(1, np.int32)).ir()
    first, line, caret = str(ei.value).splitlines()[:3]
    assert first.endswith("cannot read attribute 'bit_length' of the compile-time int 3")
    assert line[caret.index("^"):].startswith("bit_length")


@eggpu.jit(noinline=True, debug=False)
def _helper(x, y):
    return x * 2 + y


@eggpu.jit
def _calls_noinline(X, Out, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    tl.store(Out + offs, _helper(x, 1.0), mask=offs < N)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_jit_accepts_tritons_noinline_and_debug(run_both, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    for (_, out) in run_both(_calls_noinline, (eggpu.cdiv(n, 512),), x, np.zeros_like(x), n, BLOCK=512).values():
        np.testing.assert_array_equal(out, x * 2 + 1)


@eggpu.jit
def _dot3d(X, Y, W, Z, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, ACC: tl.constexpr):
    b = tl.arange(0, B)[:, None, None]
    x = tl.load(X + b * M * K + tl.arange(0, M)[None, :, None] * K + tl.arange(0, K)[None, None, :])
    y = tl.load(Y + b * K * N + tl.arange(0, K)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    zp = Z + b * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    if ACC:
        z = tl.dot(x, y, acc=tl.load(W + b * M * N + tl.arange(0, M)[None, :, None] * N
                                     + tl.arange(0, N)[None, None, :]))
    else:
        z = tl.dot(x, y)
    tl.store(zp, z)


@pytest.mark.parametrize("dt, acc", [(np.float16, False), (np.float32, True), (np.int8, False)])
def test_a_3d_dot_is_a_batched_matrix_product(run_both, dt, acc):
    rng = np.random.default_rng(3)
    bsz, m, n, k = 2, 4, 8, 16
    x = rng.integers(-9, 9, (bsz, m, k)).astype(dt) if dt == np.int8 else rng.standard_normal((bsz, m, k)).astype(dt)
    y = rng.integers(-9, 9, (bsz, k, n)).astype(dt) if dt == np.int8 else rng.standard_normal((bsz, k, n)).astype(dt)
    out_dt = np.int32 if dt == np.int8 else np.float32
    w = rng.standard_normal((bsz, m, n)).astype(out_dt)
    want = x.astype(np.float64) @ y.astype(np.float64) + (w if acc else 0)
    for (*_, z) in run_both(_dot3d, (1,), x, y, w, np.zeros((bsz, m, n), out_dt), B=bsz, M=m, N=n, K=k,
                            ACC=acc).values():
        np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-4)


def test_a_3d_dot_compiles_to_ptx():
    x = np.zeros((2, 4, 16), np.float16)
    ck = eggpu.compile(_dot3d.specialize(x, np.zeros((2, 16, 8), np.float16), np.zeros((2, 4, 8), np.float32),
                                         np.zeros((2, 4, 8), np.float32), B=2, M=4, N=8, K=16, ACC=False),
                       target="sm_90")
    assert ".visible .entry _dot3d_entry_point" in ck.ptx


@eggpu.jit
def _dot3d_mismatch(X, Z):
    x = tl.load(X + tl.arange(0, 2)[:, None, None] * 64 + tl.arange(0, 4)[None, :, None] * 16
                + tl.arange(0, 16)[None, None, :])
    tl.store(Z + tl.arange(0, 2)[:, None, None] + tl.arange(0, 4)[None, :, None] + tl.arange(0, 4)[None, None, :],
             tl.dot(x, x))


def test_a_3d_dot_of_mismatched_shapes_is_a_located_error():
    with pytest.raises(eggpu.CompileError) as ei:
        _dot3d_mismatch.specialize(np.zeros(128, np.float32), np.zeros(32, np.float32)).ir()
    assert "tl.dot needs [B, M, K] x [B, K, N] blocks, got [2, 4, 16] and [2, 4, 16]" in str(ei.value).splitlines()[0]
