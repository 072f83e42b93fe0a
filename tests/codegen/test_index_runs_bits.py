"""Runs through shifts and masks (codegen.analysis.run_of, ``_bits_of``): ``x >> k``, ``x << k``,
``x & M`` for any constant ``M`` (``2**k - 1``, ``-2**k``, shifted masks), and their
compositions (``(x >> k) << k``, ``(x >> 1) & -256``) — the forms the power-of-two synthesized
rules turn ``x // c`` and ``x % c`` into. What the analysis claims must hold on the values the
interpreter computes, negative ``x`` included (arithmetic shifts) and unsigned ``x`` (logical
ones); loads through such indices stay vector loads, and the kernels compute what numpy does."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.codegen.analysis import AddressAnalysis, run_of
from eggpu.ir.interp import interpret

BLOCK = 256
OFF = 4096  # x - OFF is negative on the first programs


@eggpu.kernel
def bit_math(out_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr, WHICH: tl.constexpr):
    x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = x - 4096
    if WHICH == 0:
        v = (x >> 1) & -256
    elif WHICH == 1:
        v = x + (x & -512)
    elif WHICH == 2:
        v = (x << 4) & 31744
    elif WHICH == 3:
        v = (x >> 3) << 3
    elif WHICH == 4:
        v = x & -64
    elif WHICH == 5:
        v = y >> 3
    elif WHICH == 6:
        v = y & -64
    elif WHICH == 7:
        v = (y >> 2) << 2
    elif WHICH == 8:
        v = (y << 2) >> 2
    elif WHICH == 9:
        v = x & 0x5555
    elif WHICH == 10:
        v = (x >> 1) & 1
    elif WHICH == 11:
        v = (y.to(tl.uint32) >> 3).to(tl.int32)
    elif WHICH == 12:
        v = (x << 28) >> 28
    elif WHICH == 13:
        v = (y << 29) & -536870912
    elif WHICH == 14:
        v = ((x >> 4) << 6) + (x & 15)
    else:
        v = y & (x >> 4)  # a mask that is not a constant: nothing is claimed
    tl.store(out_ptr + x, v, mask=x < n)


def _i32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int64).astype(np.uint32).astype(np.int32).astype(np.int64)


#: name -> (WHICH, numpy reference on int64 x, claims expected without the optimizer for run
#: lengths 2, 4, 8, 16: how many are proven)
EXPRS = {
    "(x >> 1) & -256": (0, lambda x, y: (x >> 1) & -256, 4),
    "x + (x & -512)": (1, lambda x, y: x + (x & -512), 4),
    "(x << 4) & 31744": (2, lambda x, y: (x << 4) & 31744, 4),
    "(x >> 3) << 3": (3, lambda x, y: (x >> 3) << 3, 3),
    "x & -64": (4, lambda x, y: x & -64, 4),
    "negative y >> 3": (5, lambda x, y: y >> 3, 3),
    "negative y & -64": (6, lambda x, y: y & -64, 4),
    "(negative y >> 2) << 2": (7, lambda x, y: (y >> 2) << 2, 2),
    "(negative y << 2) >> 2": (8, lambda x, y: _i32(y << 2) >> 2, 4),
    "x & 0x5555 (bits 0, 2, ...)": (9, lambda x, y: x & 0x5555, 1),
    "(x >> 1) & 1": (10, lambda x, y: (x >> 1) & 1, 1),
    "unsigned y >> 3": (11, lambda x, y: (y.astype(np.uint32) >> 3).astype(np.int64), 3),
    "(x << 28) >> 28 (wraps)": (12, lambda x, y: _i32(x << 28) >> 28, 3),
    "(y << 29) & -2**29 (wraps)": (13, lambda x, y: _i32(_i32(y << 29) & -536870912), 2),
    "((x >> 4) << 6) + (x & 15)": (14, lambda x, y: ((x >> 4) << 6) + (x & 15), 4),
    "y & (x >> 4)": (15, lambda x, y: y & (x >> 4), 0),
}


def _run(which: int, optimize: bool, n: int):
    ck = eggpu.compile(bit_math.Kernel(BLOCK, which), specialize={"out_ptr": ("align16",), "n": ("div16",)},
                       offsets_i32=True, optimize=optimize, cache=False)
    out = np.zeros(n, dtype=np.int32)
    interpret(ck.ir, (n + BLOCK - 1) // BLOCK, out, n)
    return ck, out


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("name", sorted(EXPRS))
def test_claimed_runs_through_shifts_and_masks_hold(name: str, optimize: bool, check_run_claims) -> None:
    which, reference, expected = EXPRS[name]
    n = 16 * 1001  # 63 programs: y = x - 4096 is negative on the first 16
    ck, out = _run(which, optimize, n)
    x = np.arange(n, dtype=np.int64)
    np.testing.assert_array_equal(out, reference(x, x - OFF))
    value = next(op for op in ck.ir.walk() if op.op == "store").operands[1]
    claims = check_run_claims(ck.ir, value, out, name)
    if not optimize:  # the forms as written; the optimizer may rewrite them (its claims must hold too)
        assert claims == expected, (name, claims)


def test_a_constant_run_of_a_staircase_is_not_a_run_of_its_own() -> None:
    # (x >> 1) on runs of 4 lanes is A, A, A + 1, A + 1: no Run, but its & -256 is constant
    ck, _ = _run(0, False, 16)
    facts = AddressAnalysis(ck.ir)
    v = next(op for op in ck.ir.walk() if op.op == "store").operands[1]
    shr = next(o for o in v.owner.operands if o.owner.op == "shr")
    assert run_of(shr, 2, facts).step == 0 and run_of(shr, 4, facts) is None
    r = run_of(v, 16, facts)
    assert r.step == 0 and r.start_div == 256


@eggpu.kernel
def shifted_gather(src_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr,
                   WHICH: tl.constexpr):
    x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = x < n
    if WHICH == 0:  # poi_cat's 256 * (x // 512) + x % 512 after syn-i32-mul-div-pow2
        idx = ((x >> 1) & -256) + (x & 511)
    elif WHICH == 1:  # poi_silu_mul's x % 512 + 1024 * (x // 512) after syn-i32-regroup-pow2
        idx = x + (x & -512)
    else:  # poi_permute's 1024 * ((x // 64) % 32) + x % 64 after syn-i32-mul-divrem-pow2
        idx = ((x << 4) & 31744) + (x & 63)
    tl.store(out_ptr + x, tl.load(src_ptr + idx, mask=mask, other=0.0), mask=mask)


def _reference_index(which: int, x: np.ndarray) -> np.ndarray:
    if which == 0:
        return ((x >> 1) & -256) + (x & 511)
    if which == 1:
        return x + (x & -512)
    return ((x << 4) & 31744) + (x & 63)


SPEC = {"src_ptr": ("align16",), "out_ptr": ("align16",), "n": ("div16",)}


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_loads_through_shift_and_mask_indices_are_vector_loads(which: int, target: str) -> None:
    ck = eggpu.compile(shifted_gather.Kernel(1024, which), specialize=SPEC, offsets_i32=True, target=target,
                       cache=False)
    loads = re.findall(r"ld\.global[.\w]*", ck.ptx)
    assert loads and all(ld.startswith("ld.global.v4") for ld in loads), loads


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 1000, 1001, 16 * 1001])
def test_shift_and_mask_gathers_compute_the_reference_on_the_cpu(which: int, n: int) -> None:
    spec = SPEC if n % 16 == 0 else {k: v for k, v in SPEC.items() if k != "n"}
    ck = eggpu.compile(shifted_gather.Kernel(1024, which), specialize=spec, offsets_i32=True, cache=False)
    x = np.arange(n, dtype=np.int64)
    idx = _reference_index(which, x)
    src = np.random.default_rng(n + which).standard_normal(int(idx.max()) + 1).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    ck.run_cpu(((n + 1023) // 1024,), src, out, n)
    np.testing.assert_array_equal(out, src[idx])
