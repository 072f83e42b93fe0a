"""Runs of flattened index math (codegen.analysis.run_of): what the analysis claims about
``x % C``, ``x // C``, ``x & (2**k-1)``, ``x >> k`` on runs of lanes holds on the values the
interpreter computes, and loads through such indices become vector loads on the GPU."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.interp import interpret

FACTS = {"out_ptr": ("align16",), "src_ptr": ("align16",), "n": ("div16",)}
BLOCK = 256


@eggpu.kernel
def index_math(out_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr, WHICH: tl.constexpr):
    x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if WHICH == 0:
        v = x % 768
    elif WHICH == 1:
        v = x // 512
    elif WHICH == 2:
        v = (x // 64) % 32
    elif WHICH == 3:
        v = x & 511
    elif WHICH == 4:
        v = x >> 9
    elif WHICH == 5:
        v = x % 64 + 128
    elif WHICH == 6:
        v = (x % 64) * 2
    elif WHICH == 7:
        v = x % 24
    elif WHICH == 8:
        v = x % 12
    elif WHICH == 9:
        v = x % 6
    elif WHICH == 10:
        v = x % 128 + (x // 128) * 1024
    elif WHICH == 11:
        v = tl.where((x // 128) % 2 == 0, x % 128, x % 128 + 1024)
    else:
        v = tl.where(x % 512 < 256, 7, 9)
    tl.store(out_ptr + x, v, mask=x < n)


#: name -> (WHICH, the numpy reference)
EXPRS = {
    "rem 768": (0, lambda x: x % 768),
    "div 512": (1, lambda x: x // 512),
    "rem of div": (2, lambda x: (x // 64) % 32),
    "and 511": (3, lambda x: x & 511),
    "shr 9": (4, lambda x: x >> 9),
    "rem plus const": (5, lambda x: x % 64 + 128),
    "rem times 2": (6, lambda x: (x % 64) * 2),
    "rem 24": (7, lambda x: x % 24),
    "rem 12": (8, lambda x: x % 12),
    "rem 6 (period 2)": (9, lambda x: x % 6),
    "sum of rem and div": (10, lambda x: x % 128 + (x // 128) * 1024),
    "where on a run-constant condition": (11, lambda x: np.where((x // 128) % 2 == 0, x % 128, x % 128 + 1024)),
    "where on a run-aligned comparison": (12, lambda x: np.where(x % 512 < 256, 7, 9)),
}


@eggpu.kernel
def embedding_index(out_ptr: tl.Pointer[tl.i32], idx_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr):
    x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    t = tl.load(idx_ptr + x // 128, mask=x < n)
    tl.store(out_ptr + x, x % 128 + 128 * tl.where(t < 0, t + 1000, t), mask=x < n)


def test_a_loaded_index_constant_on_runs_keeps_the_gather_contiguous(check_run_claims) -> None:
    ck = eggpu.compile(embedding_index.Kernel(BLOCK), specialize={"out_ptr": ("align16",), "idx_ptr": ("align16",),
                                                                  "n": ("div16",)}, offsets_i32=True, cache=False)
    fn = ck.ir
    value = next(op for op in fn.walk() if op.op == "store").operands[1]
    n = 128 * 13
    idx = np.random.default_rng(5).integers(-1000, 1000, n // 128).astype(np.int32)
    out = np.zeros(n, dtype=np.int32)
    interpret(fn, (n + BLOCK - 1) // BLOCK, out, idx, n)
    x = np.arange(n)
    t = idx[x // 128]
    np.testing.assert_array_equal(out, x % 128 + 128 * np.where(t < 0, t + 1000, t))
    assert check_run_claims(fn, value, out, "embedding") == 4


@pytest.mark.parametrize("name", sorted(EXPRS))
def test_claimed_runs_hold_on_the_interpreted_values(name: str, check_run_claims) -> None:
    which, reference = EXPRS[name]
    ck = eggpu.compile(index_math.Kernel(BLOCK, which), specialize={"out_ptr": ("align16",), "n": ("div16",)},
                       offsets_i32=True, cache=False)
    fn = ck.ir
    store = next(op for op in fn.walk() if op.op == "store")
    value = store.operands[1]
    n = 16 * 97
    out = np.zeros(n, dtype=np.int32)
    interpret(fn, (n + BLOCK - 1) // BLOCK, out, n)
    want = reference(np.arange(n, dtype=np.int64))
    np.testing.assert_array_equal(out, want)  # the optimized program computes the expression
    claims = check_run_claims(fn, value, out, name)
    # a remainder by C keeps runs up to the largest power of two dividing C
    expected_claims = {"rem 12": 2, "rem 24": 3, "rem 6 (period 2)": 1}.get(name, 4)
    assert claims == expected_claims, (name, claims)


def _gather_kernel():
    @eggpu.kernel
    def bias_add(src_ptr: tl.Pointer[tl.f32], bias_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32],
                 n: tl.i32, BLOCK: tl.constexpr):
        x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = x < n
        tl.store(out_ptr + x, tl.load(src_ptr + x, mask) + tl.load(bias_ptr + x % 768, mask), mask)

    return bias_add


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_a_load_through_a_remainder_is_a_vector_load(target: str) -> None:
    facts = {"src_ptr": ("align16",), "bias_ptr": ("align16",), "out_ptr": ("align16",), "n": ("div16",)}
    ck = eggpu.compile(_gather_kernel().Kernel(1024), specialize=facts, offsets_i32=True, target=target, cache=False)
    loads = re.findall(r"ld\.global[.\w]*", ck.ptx)
    assert loads and all(ld.startswith("ld.global.v4") for ld in loads), loads
    assert ck.report["assumptions"] == {}
    # without a stated alignment of the bias buffer the vector load rests on an assumption that
    # the launch checks (as for affine addresses), recorded in the report
    no_align = {k: v for k, v in facts.items() if k != "bias_ptr"}
    ck2 = eggpu.compile(_gather_kernel().Kernel(1024), specialize=no_align, offsets_i32=True, target=target,
                        cache=False)
    assert ck2.report["assumptions"] == {"bias_ptr": "align16"}
    # and without offsets_i32 the remainder stays signed: nothing is claimed, the load is scalar
    ck3 = eggpu.compile(_gather_kernel().Kernel(1024), specialize=facts, target=target, cache=False)
    assert "ld.global.b32" in ck3.ptx


def test_the_vectorized_kernel_still_computes_the_reference_on_the_cpu() -> None:
    facts = {"src_ptr": ("align16",), "bias_ptr": ("align16",), "out_ptr": ("align16",), "n": ("div16",)}
    ck = eggpu.compile(_gather_kernel().Kernel(1024), specialize=facts, offsets_i32=True, cache=False)
    for n in (16, 768 * 3, 16 * 1001):
        src = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        bias = np.arange(768, dtype=np.float32)
        out = np.zeros(n, dtype=np.float32)
        ck.run_cpu(((n + 1023) // 1024,), src, bias, out, n)
        np.testing.assert_array_equal(out, src + bias[np.arange(n) % 768])


@eggpu.kernel
def row_scale(src_ptr: tl.Pointer[tl.f32], scale_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], n: tl.i32,
              BLOCK: tl.constexpr):
    x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = x < n
    tl.store(out_ptr + x, tl.load(src_ptr + x, mask) * tl.load(scale_ptr + x // 512, mask, other=-1.0), mask)


@pytest.mark.parametrize("facts", [True, False])
def test_a_run_constant_load_reads_each_element_once_and_stays_exact(facts: bool) -> None:
    spec = {"src_ptr": ("align16",), "scale_ptr": ("align16",), "out_ptr": ("align16",)}
    if facts:
        spec["n"] = ("div16",)
    ck = eggpu.compile(row_scale.Kernel(1024), specialize=spec, offsets_i32=True, target="sm_90", cache=False)
    scalar_loads = len(re.findall(r"ld\.global\.b32", ck.ptx))
    # the mask x < n is run-uniform only when n is divisible by 16: then one load per piece of 4
    assert (scalar_loads <= 2) if facts else (scalar_loads >= 8), scalar_loads
    for n in ((16, 512 * 3, 16 * 1001) if facts else (1, 1000, 1001)):
        src = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        scale = np.arange(1, (n + 511) // 512 + 1, dtype=np.float32)
        out = np.zeros(n, dtype=np.float32)
        ck.run_cpu(((n + 1023) // 1024,), src, scale, out, n)
        np.testing.assert_array_equal(out, src * scale[np.arange(n) // 512])
