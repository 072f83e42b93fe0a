"""Integer <-> pointer casts (Triton's ``x.to(tl.pointer_type(dt))`` and ``p.to(tl.int64)``) and raw
host addresses in the interpreter and run_cpu: every access through a raw address is checked
against the launch's arrays (pointer arguments and ``buffers=``), with one message in both modes.
Tutorial 08's grouped GEMM itself runs in tests/triton_compat/test_tc_compat_harness.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eggpu
import eggpu.language as tl
from bench import compat
from eggpu.ir.errors import OutOfBoundsError

MODES = ("interpret", "cpu")


def launch(monkeypatch, mode, fn, grid, *args, **kwargs):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", mode)
    fn[grid](*args, **kwargs)


@eggpu.jit
def gather_rows(table, out, n, BLOCK: tl.constexpr):
    """Row g of ``out`` = 2 * the first n elements of the f32 array whose address is table[g]."""
    g = tl.program_id(0)
    row = tl.load(table + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    x = tl.load(row + offs, mask=offs < n, other=0.0)
    tl.store(out + g * BLOCK + offs, 2 * x, mask=offs < n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_loads_through_an_address_table(monkeypatch, mode, n):
    rng = np.random.default_rng(n)
    rows = [rng.standard_normal(n + extra).astype(np.float32) for extra in (0, 3, 17)]
    table = np.array([r.ctypes.data for r in rows], np.int64)
    out = np.full((3, 1024), -1.0, np.float32)
    launch(monkeypatch, mode, gather_rows, (3,), table, out, n, BLOCK=1024, buffers=rows)
    for g, r in enumerate(rows):
        np.testing.assert_array_equal(out[g, :n], 2 * r[:n])
        assert (out[g, n:] == -1.0).all()


@eggpu.jit
def stores_through(table, x, n, BLOCK: tl.constexpr):
    dst = tl.load(table + tl.program_id(0)).to(tl.pointer_type(tl.int16))
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("mode", MODES)
def test_stores_through_raw_addresses_land_in_the_buffers(monkeypatch, mode):
    a, b = np.zeros(10, np.int16), np.zeros(7, np.int16)
    x = np.arange(1, 11, dtype=np.int16)
    table = np.array([a.ctypes.data, b.ctypes.data + 2], np.uint64).view(np.int64)  # b from its element 1
    launch(monkeypatch, mode, stores_through, (1,), table, x, 10, BLOCK=16, buffers=[a, b])
    np.testing.assert_array_equal(a, x)
    launch(monkeypatch, mode, stores_through, (1,), table[1:], x, 6, BLOCK=16, buffers=[b])
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4, 5, 6])


# ---------------------------------------------------------------- the error


def _oob(monkeypatch, mode, *args, **kwargs) -> str:
    with pytest.raises(OutOfBoundsError) as ei:
        launch(monkeypatch, mode, *args, **kwargs)
    return str(ei.value)


@pytest.mark.parametrize("mode", MODES)
def test_an_address_outside_every_array_is_an_error_naming_kernel_op_and_address(monkeypatch, mode):
    rows = [np.ones(5, np.float32)]
    out = np.zeros((1, 8), np.float32)
    table = np.array([rows[0].ctypes.data], np.int64)
    msg = _oob(monkeypatch, mode, gather_rows, (1,), table, out, 5, BLOCK=8)  # no buffers=
    assert msg.startswith("gather_rows: load at ")
    assert "in program 0: out-of-bounds access: lane (0,) reads address " f"{rows[0].ctypes.data:#x} (f32, 4 bytes)" in msg
    assert "not an aligned element of any array among the 2 of this launch" in msg and "buffers=[...]" in msg
    # one element past the end: lane 5 of 6 is the first outside
    msg = _oob(monkeypatch, mode, gather_rows, (1,), table, out, 6, BLOCK=8, buffers=rows)
    assert f"lane (5,) reads address {rows[0].ctypes.data + 20:#x}" in msg and "among the 3 of" in msg


@pytest.mark.parametrize("mode", MODES)
def test_misaligned_and_read_only_targets_are_errors(monkeypatch, mode):
    buf = np.zeros(8, np.float32)
    out = np.zeros((1, 8), np.float32)
    misaligned = np.array([buf.ctypes.data + 2], np.int64)
    msg = _oob(monkeypatch, mode, gather_rows, (1,), misaligned, out, 2, BLOCK=8, buffers=[buf])
    assert f"lane (0,) reads address {buf.ctypes.data + 2:#x} (f32, 4 bytes)" in msg
    ro = np.zeros(4, np.int16)
    ro.flags.writeable = False
    msg = _oob(monkeypatch, mode, stores_through, (1,), np.array([ro.ctypes.data], np.int64), np.ones(4, np.int16),
               4, BLOCK=4, buffers=[ro])
    assert "stores_through: store at " in msg and "writes address" in msg and "any writable array among the 3" in msg
    assert (ro == 0).all()


def test_the_error_has_the_same_words_in_interpret_and_run_cpu(monkeypatch):
    rows = [np.ones(3, np.float32)]
    table = np.array([rows[0].ctypes.data], np.int64)
    msgs = {mode: _oob(monkeypatch, mode, gather_rows, (1,), table, np.zeros((1, 4), np.float32), 4, BLOCK=4,
                       buffers=rows) for mode in MODES}
    assert msgs["interpret"] == msgs["cpu"]


def test_buffers_must_be_numpy_arrays(monkeypatch):
    out = np.zeros((1, 4), np.float32)
    for mode in MODES:
        with pytest.raises(eggpu.EggpuError, match=r"gather_rows: buffers\[1\] must be a numpy array, got list"):
            launch(monkeypatch, mode, gather_rows, (1,), np.zeros(1, np.int64), out, 0, BLOCK=4,
                   buffers=[np.zeros(2), [1, 2]])
        with pytest.raises(eggpu.EggpuError, match=r"gather_rows: buffers\[0\] must be C-contiguous"):
            launch(monkeypatch, mode, gather_rows, (1,), np.zeros(1, np.int64), out, 0, BLOCK=4,
                   buffers=[np.zeros((4, 4))[:, 1]])


# ---------------------------------------------------------------- round trips


@eggpu.jit
def round_trip(x, addrs, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x + offs
    a = p.to(tl.int64)
    tl.store(addrs + offs, a, mask=offs < n)
    q = a.to(tl.pointer_type(tl.float32))  # ptr -> int -> ptr
    bits = (x + 1).to(tl.pointer_type(tl.int32))  # a pointer to another dtype: same address
    u = (q.to(tl.uint64) + 0).to(tl.pointer_type(tl.float32))
    y = tl.load(q, mask=offs < n) + tl.load(u, mask=offs < n)
    tl.store(out + offs, y + tl.load(bits - 1 + offs, mask=offs < n).to(tl.float32), mask=offs < n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_pointer_int_pointer_round_trip(monkeypatch, mode, n):
    x = np.random.default_rng(n).standard_normal(1024).astype(np.float32)
    addrs, out = np.zeros(1024, np.int64), np.zeros(1024, np.float32)
    launch(monkeypatch, mode, round_trip, (1,), x, addrs, out, n, BLOCK=1024)
    np.testing.assert_array_equal(addrs[:n], x.ctypes.data + 4 * np.arange(n))
    np.testing.assert_array_equal(out[:n], 2 * x[:n] + x.view(np.int32)[:n].astype(np.float32))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 99), min_size=1, max_size=16))
def test_interpreted_addresses_are_the_arrays_addresses(offsets):
    x = np.zeros(100, np.float32)
    addrs = np.zeros(16, np.int64)
    idx = np.array(offsets + [0] * (16 - len(offsets)), np.int32)
    round_trip_offsets.specialize(x, idx, addrs, BLOCK=16).interpret((1,), x, idx, addrs)
    np.testing.assert_array_equal(addrs, x.ctypes.data + 4 * idx.astype(np.int64))


@eggpu.jit
def round_trip_offsets(x, idx, addrs, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(addrs + offs, (x + tl.load(idx + offs)).to(tl.int64).to(tl.pointer_type(tl.float32)).to(tl.int64))


# ---------------------------------------------------------------- compile errors


@eggpu.jit
def narrow_address(table, out):
    p = tl.load(table).to(tl.pointer_type(tl.float32))
    tl.store(out, tl.load(p))


@eggpu.jit
def pointer_to_float(x, out):
    tl.store(out, x.to(tl.float32))


def test_a_narrow_integer_is_not_an_address():
    with pytest.raises(eggpu.CompileError) as ei:
        narrow_address.specialize(np.zeros(1, np.int32), np.zeros(1, np.float32)).ir()
    lines = str(ei.value).splitlines()
    assert "cannot convert i32 to a pointer: only a 64-bit integer (int64 or uint64) holds an address" in lines[0]
    assert lines[1].strip() == "p = tl.load(table).to(tl.pointer_type(tl.float32))" and "^" in lines[2]
    assert any("convert the integer with .to(tl.int64) first" in ln for ln in lines)
    with pytest.raises(eggpu.CompileError, match="cannot convert i16 to a pointer"):
        narrow_address.specialize(np.zeros(1, np.int16), np.zeros(1, np.float32)).ir()


def test_a_pointer_converts_only_to_a_64_bit_integer():
    with pytest.raises(eggpu.CompileError) as ei:
        pointer_to_float.specialize(np.zeros(1, np.float32), np.zeros(1, np.float32)).ir()
    lines = str(ei.value).splitlines()
    assert "cannot convert a pointer (ptr<f32>) to f32: a pointer converts only to int64 or uint64" in lines[0]
    assert "tl.store(out, x.to(tl.float32))" in lines[1]


def test_pointer_type_outside_a_kernel():
    assert tl.pointer_type(tl.float16) == tl.Pointer[tl.float16]
    assert tl.pointer_type("float32") == tl.Pointer[tl.f32]
    with pytest.raises(TypeError, match=r"only global pointers \(address_space=1\), got 3"):
        tl.pointer_type(tl.float16, address_space=3)
    assert tl.pointer_type(tl.float16, "global", const=True) == tl.const_pointer_type(tl.float16)
    assert tl.pointer_type(tl.float16, const=True) != tl.Pointer[tl.float16]
    with pytest.raises(TypeError, match="takes a dtype such as tl.float16, got 3"):
        tl.pointer_type(3)


# ---------------------------------------------------------------- PTX and the optimizer


def _grouped_gemm_kernel():
    k = compat.load("eggpu").grouped_matmul_kernel
    tables = [np.zeros(2, np.int64)] * 3
    return k.specialize(*tables, np.zeros(6, np.int32), np.zeros(6, np.int32), 2, NUM_SM=4, BLOCK_SIZE_M=16,
                        BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_grouped_gemm_ptx_assembles(target, ptxas_registers):
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(_grouped_gemm_kernel().ir(), target)
    # the loaded addresses are global addresses as they are: no generic<->global conversion anywhere
    assert "cvta" not in ptx
    assert "ld.global" in ptx and "mma.sync" in ptx
    assert ptxas_registers(ptx, target) > 0


def test_optimized_casts_pass_translation_validation():
    ck = eggpu.compile(round_trip.specialize(np.zeros(4, np.float32), np.zeros(4, np.int64),
                                             np.zeros(4, np.float32), 4, BLOCK=16))
    assert ck.report["optimizer"]["validation"] == "valid"
    assert "int_to_ptr" in str(ck.ir) and "ptr_to_int" in str(ck.ir)


@settings(max_examples=30, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_z3_encoding_keeps_the_64_address_bits(v):
    """int_to_ptr/ptr_to_int are the identity on 64-bit addresses (pointers are BitVec(64) in z3),
    so rules and translation validation see ptr_to_int(int_to_ptr(a)) == a."""
    from eggpu.ir.dtypes import f16, i64, u64
    from eggpu.optimizer import z3ops

    as_pointer = z3ops.eval_concrete("int_to_ptr", i64, {"dtype": f16}, v)
    assert as_pointer == v % 2**64
    assert z3ops.eval_concrete("ptr_to_int", f16, {"dtype": i64}, as_pointer) == v
    assert z3ops.eval_concrete("ptr_to_int", f16, {"dtype": u64}, as_pointer) == v % 2**64


@eggpu.jit
def histogram_into(table, keys, n, BLOCK: tl.constexpr):
    counts = tl.load(table).to(tl.pointer_type(tl.int32))
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(counts + tl.load(keys + offs, mask=offs < n), 1, mask=offs < n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_atomics_through_a_raw_address(monkeypatch, mode, n):
    keys = np.random.default_rng(n).integers(0, 7, 1024).astype(np.int32)
    counts = np.zeros(7, np.int32)
    launch(monkeypatch, mode, histogram_into, (1,), np.array([counts.ctypes.data], np.int64), keys, n, BLOCK=1024,
           buffers=[counts])
    np.testing.assert_array_equal(counts, np.bincount(keys[:n], minlength=7))


@eggpu.jit
def _optional_scale(x_ptr, w_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if w_ptr:  # Triton: a pointer is true when it is not null; None is a compile-time False
        w = tl.load(w_ptr + offs, mask=offs < n)
    else:
        w = 1.0
    tl.store(o_ptr + offs, x * w, mask=offs < n)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("weighted", [True, False])
def test_a_pointer_as_an_if_condition_is_a_null_check(run_both, n, weighted):
    """FlagGems' batch_norm: `if weight_pointer:` runs the weighted branch for a buffer, the other for None."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32) if weighted else None
    out = run_both(_optional_scale, (eggpu.cdiv(n, 256),), x, w, np.zeros(n, np.float32), n, BLOCK=256)
    for dev in ("interpret", "cpu"):
        np.testing.assert_array_equal(out[dev][-1], x * w if weighted else x, err_msg=dev)


def test_a_pointer_condition_compiles_to_ptx():
    x = np.zeros(16, np.float32)
    ck = eggpu.compile(_optional_scale.specialize(x, x, x, 16, BLOCK=16), target="sm_80", cache=False)
    assert ".entry _optional_scale" in ck.ptx and ck.ptx.count("ld.global") >= 2  # both loads kept
