"""Triton's functional arithmetic ``tl.add``, ``tl.sub``, ``tl.mul`` (``sanitize_overflow=`` accepted):
the operators' meaning, pointers included, against numpy on ragged sizes in the interpreter and
run_cpu."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def functional(X, Y, S, D, P, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(tl.add(X, offs), mask=m, other=0)  # a pointer plus offsets
    y = tl.load(Y + offs, mask=m, other=0)
    tl.store(S + offs, tl.add(x, y), mask=m)
    tl.store(D + offs, tl.sub(x, y, sanitize_overflow=False), mask=m)
    tl.store(P + offs, tl.mul(x, 3), mask=m)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("dt", [np.int32, np.float32, np.uint8])
def test_functional_add_sub_mul_match_the_operators(run_both, n, dt):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 200, n).astype(dt) if np.dtype(dt).kind in "iu" else rng.standard_normal(n).astype(dt)
    y = rng.integers(0, 200, n).astype(dt) if np.dtype(dt).kind in "iu" else rng.standard_normal(n).astype(dt)
    with np.errstate(over="ignore"):
        want = (x + y, x - y, x * dt(3))  # uint8 wraps, as in Triton
    outs = [np.zeros(n, dt) for _ in range(3)]
    for _, _, s, d, p in run_both(functional, (-(-n // 256),), x, y, *outs, n, BLOCK=256).values():
        for got, w in zip((s, d, p), want):
            np.testing.assert_array_equal(got, w)


def test_sanitize_overflow_must_be_a_bool():
    x = np.zeros(4, np.int32)
    with pytest.raises(eggpu.CompileError, match="tl.sub: sanitize_overflow must be a compile-time bool"):
        bad.specialize(x, x.copy(), BLOCK=4).ir()


@eggpu.jit
def bad(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.sub(tl.load(X + offs), 1, sanitize_overflow="no"))
