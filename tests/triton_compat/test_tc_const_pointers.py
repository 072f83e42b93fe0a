"""Triton's const pointers: a parameter annotated ``tl.const`` and ``p.to(tl.pointer_type(dt,
const=True))`` (older Triton: ``tl.const_pointer_type(dt)``) are read-only pointers
(``ptr<dt, const>`` in the IR): loads match numpy in the interpreter and run_cpu and use
``ld.global.nc`` in PTX (ptxas accepts it); a store or atomic through one is a located error with
Triton's wording."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def scale_const(in_ptr: tl.const, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=mask, other=0.0) * 3.0, mask=mask)


@eggpu.jit
def cast_const(x_ptr, y_ptr, n, BLOCK: tl.constexpr, OLD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if OLD:
        c = x_ptr.to(tl.const_pointer_type(tl.int32))
    else:
        c = x_ptr.to(tl.pointer_type(tl.int32, const=True))
    tl.store(y_ptr + offs, tl.load(c + offs, mask=mask) - 7, mask=mask)


@pytest.mark.parametrize("n", (1, 1000, 1001))
def test_tl_const_parameter_loads_match_numpy(run_both, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    for device, (_, y) in run_both(scale_const, (eggpu.cdiv(n, 256),), x, np.zeros(n, np.float32), n,
                                   BLOCK=256).items():
        np.testing.assert_array_equal(y, x * np.float32(3.0), err_msg=device)


@pytest.mark.parametrize("n,old", [(1, True), (1000, False), (1001, False)])
def test_const_pointer_casts_load_as_numpy(run_both, n, old):
    x = np.arange(n, dtype=np.int32) * 5
    for device, (_, y) in run_both(cast_const, (eggpu.cdiv(n, 128),), x, np.zeros(n, np.int32), n, BLOCK=128,
                                   OLD=old).items():
        np.testing.assert_array_equal(y, x - 7, err_msg=device)


def test_the_ir_types_the_pointer_const_and_prints_and_parses_it():
    from eggpu.ir.parser import parse_function

    x = np.zeros(8, np.float32)
    text = str(scale_const.specialize(x, x.copy(), 8, BLOCK=8).ir())
    assert "%in_ptr: ptr<f32, const>" in text and "%out_ptr: ptr<f32>" in text
    assert str(parse_function(text)) == text
    assert "int_to_ptr(%8) {const=1, dtype=i32} : ptr<i32, const>" in str(
        cast_const.specialize(np.zeros(8, np.int32), np.zeros(8, np.int32), 8, BLOCK=8, OLD=False).ir())


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_const_loads_are_ld_global_nc_and_ptxas_accepts_them(target, ptxas_registers):
    x = np.zeros(1001, np.float32)
    ck = eggpu.compile(scale_const.specialize(x, x.copy(), 1001, BLOCK=1024), target=target)
    loads = [ln for ln in ck.ptx.splitlines() if "ld.global" in ln]
    assert loads and all("ld.global.nc" in ln for ln in loads), loads
    assert ptxas_registers(ck.ptx, target) > 0
    ck2 = eggpu.compile(cast_const.specialize(np.zeros(8, np.int32), np.zeros(8, np.int32), 8, BLOCK=8, OLD=True),
                        target=target)
    assert any("ld.global.nc" in ln for ln in ck2.ptx.splitlines())
    assert ptxas_registers(ck2.ptx, target) > 0


@eggpu.jit
def writes_const(in_ptr: tl.const, out_ptr, WHICH: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(in_ptr + offs)
    if WHICH == 0:
        tl.store(in_ptr + offs, x)
    if WHICH == 1:
        tl.atomic_add(in_ptr + offs, x)
    if WHICH == 2:
        tl.store(out_ptr.to(tl.pointer_type(tl.float32, const=True)) + offs, x)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("which,fn,marker", [(0, "store", "in_ptr + offs"), (1, "atomic_add", "in_ptr + offs"),
                                             (2, "store", "out_ptr.to(")])
def test_writing_through_a_const_pointer_is_a_located_error(located_which, which, fn, marker):
    x = np.zeros(16, np.float32)
    located_which(writes_const, which, marker, f"tl.{fn}: cannot store to a constant pointer (ptr<f32, const>[16])",
                  x, x.copy())


def test_the_ir_refuses_a_store_through_a_const_pointer():
    from eggpu.ir import Builder, IRError
    from eggpu.ir.types import pointer

    b = Builder("k", [("p", pointer(tl.float32, const=True))])
    with pytest.raises(IRError, match=r"store: cannot store through a const pointer \(ptr<f32, const>\)"):
        b.effect("store", b.param("p"), b.const(1.0, tl.float32))


def test_tl_const_is_an_annotation_only():
    with pytest.raises(TypeError, match="tl.const is an annotation of a pointer parameter"):
        tl.const()
    assert tl.pointer_type(tl.float16, const=True) == tl.const_pointer_type(tl.float16)
    assert str(tl.const_pointer_type(tl.float16)) == "const Pointer[f16]"
    with pytest.raises(TypeError, match="eggpu has only global pointers"):
        tl.pointer_type(tl.float16, address_space=3)
