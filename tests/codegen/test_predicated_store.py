"""Masked element stores on the GPU are one predicated ``@p st.global.bW`` (``codegen/predicated.py``),
with no branch for LLVM to sink the stored value's computation into; every element width
assembles with ptxas, and the stored value is computed where it is not stored too (the IR's ops
are total, so that is harmless)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvmlite import ir

from eggpu.codegen.predicated import predicated_store
from eggpu.ir import Builder, bf16, bool_, f16, f32, f64, i8, i32, i64, pointer, scalar

from .conftest import run_compare

WIDTH = {f16: 16, bf16: 16, f32: 32, f64: 64, i8: 8, bool_: 8, i32: 32, i64: 64}


def masked_copy_kernel(dt, block: int = 128):
    """o[i] = x[i] / y[i] (floats) or x[i] (others) where i < n: a masked store per element."""
    b = Builder(f"masked_copy_{dt}", [("x", pointer(dt)), ("y", pointer(dt)), ("o", pointer(dt)),
                                      ("n", scalar(i32))])
    offs = b.op("add", b.op("splat", b.op("mul", b.op("program_id", axis=0), b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    m = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    x = b.op("load", at("x"), m)
    v = b.op("div", x, b.op("load", at("y"), m)) if dt.is_float else x
    b.effect("store", at("o"), v, m)
    return b.finish()


@pytest.mark.parametrize("dt", list(WIDTH), ids=str)
@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_masked_store_is_one_predicated_instruction_and_assembles(dt, target, ptxas_registers):
    from eggpu.codegen import compile_ptx

    # assume_aligned=False: no vector width, so every element is its own masked store
    ptx, _ = compile_ptx(masked_copy_kernel(dt), target, assume_aligned=False)
    stores = re.findall(r"^\s*(@!?%p\d+\s+)?st\.global\.(\S+)\s", ptx, re.M)
    assert stores and all(pred for pred, _ in stores), stores
    assert {w for _, w in stores} == {f"b{WIDTH[dt]}"}, stores
    assert ptxas_registers(ptx, target) > 0


def _blocks(llvm_text: str) -> list[str]:
    body = llvm_text[llvm_text.index("define "):]
    return re.split(r"\n(?=[\w.$-]+:)", body)


def test_the_stored_value_is_not_computed_under_a_branch():
    """In the optimized LLVM IR every division sits in the block of its predicated store (with a
    branch around the store, LLVM sank the division into the store's conditional block)."""
    from eggpu.codegen import compile_ptx_module

    c = compile_ptx_module(masked_copy_kernel(f32), "sm_90", assume_aligned=False)
    with_div = [blk for blk in _blocks(c.llvm_ir_optimized) if "fdiv" in blk]
    assert with_div and all("st.global.b32" in blk for blk in with_div)
    assert sum(blk.count("fdiv") for blk in with_div) == sum(blk.count("st.global.b32") for blk in with_div)


def test_unsupported_shapes_fall_back_to_the_branch():
    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType(addrspace=1), ir.IntType(1)]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    p, m = fn.args
    assert not predicated_store(b, p, [ir.Constant(ir.IntType(8), 1)] * 2, m)  # no v2.b8
    assert not predicated_store(b, p, [ir.Constant(ir.DoubleType(), 1.0)] * 4, m)  # no v4.b64
    assert not predicated_store(b, p, [ir.Constant(ir.IntType(32), 1)] * 3, m)  # no v3
    assert not predicated_store(b, p, [ir.Constant(ir.IntType(32), 1), ir.Constant(ir.IntType(16), 1)], m)
    assert predicated_store(b, p, [ir.Constant(ir.FloatType(), 1.0)] * 4, m)
    assert "@$5 st.global.v4.b32 [$4], {$0, $1, $2, $3};" in str(mod)


@pytest.mark.parametrize("dt", (f32, f16, i8, bool_), ids=str)
@pytest.mark.parametrize("n", (1, 1000, 1001))
def test_host_masked_stores_match_the_interpreter(dt, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 4).astype(dt.np)
    y = (rng.standard_normal(n) + 3).astype(dt.np)
    run_compare(masked_copy_kernel(dt), ((n + 127) // 128,), [x, y, np.zeros(n, dt.np), n])


def offset_store_kernel(base_param: bool, block: int = 256):
    """o[base + i] = x[base + i] where base + i < n; base is program_id * block (a multiple of
    the chunk width) or the runtime integer ``start`` (no known divisibility)."""
    b = Builder(f"offset_store_{base_param}", [("x", pointer(f32)), ("o", pointer(f32)), ("n", scalar(i32)),
                                               ("start", scalar(i32))])
    base = b.param("start") if base_param else b.op("mul", b.op("program_id", axis=0), b.const(block, i32))
    offs = b.op("add", b.op("splat", base, shape=(block,)), b.op("arange", start=0, end=block))
    m = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    b.effect("store", at("o"), b.op("load", at("x"), m), m)
    return b.finish()


def _stores(ptx: str) -> list[tuple[str, str]]:
    return re.findall(r"st\.global\.b32\s+\[(%rd\d+)(\+\d+)?\]", ptx)


def test_consecutive_elements_of_a_chunk_share_one_address_register():
    """With 256 elements on 128 threads each thread owns chunks of 2 consecutive elements; at a
    base that is a multiple of 2 the second store is ``[a+4]`` off the first's register."""
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(offset_store_kernel(False), "sm_90", assume_aligned=False)
    st = _stores(ptx)
    assert len(st) == 2 and st[0][0] == st[1][0] and {st[0][1], st[1][1]} == {"", "+4"}, st


def test_no_shared_address_when_the_offset_may_wrap_inside_a_chunk():
    """``start + i`` in i32 may wrap between the two elements of a chunk (start odd, near 2**31):
    then they are not adjacent in memory, so each store keeps its own address."""
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(offset_store_kernel(True), "sm_90", assume_aligned=False)
    st = _stores(ptx)
    assert len(st) == 2 and st[0][0] != st[1][0] and not any(off for _, off in st), st


@pytest.mark.parametrize("base_param", (False, True))
@pytest.mark.parametrize("n", (1, 1000, 1001))
def test_offset_stores_match_the_interpreter(base_param, n):
    x = np.arange(n, dtype=np.float32) + 0.5
    start = 3 if base_param else 0
    run_compare(offset_store_kernel(base_param), ((n + 255) // 256,), [x, np.zeros(n, np.float32), n, start])
