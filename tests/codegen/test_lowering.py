"""The lowering's API, its LLVM modules (verifier), errors, launch checks and the address analysis."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
import pytest

from eggpu.codegen import build_host, lower
from eggpu.codegen.analysis import BIG, AddressAnalysis, Stride, vector_width
from eggpu.codegen.layout import Layout
from eggpu.ir import Builder, bf16, bool_, f16, f32, f64, i8, i32, i64, pointer, scalar, u8
from eggpu.ir.errors import CodegenError, LaunchError
from eggpu.ir.types import BlockType


def vector_add(dt=f32, block=1024):
    b = Builder("vector_add", [("x_ptr", pointer(dt)), ("y_ptr", pointer(dt)), ("out_ptr", pointer(dt)),
                               ("n", scalar(i32))])
    pid = b.op("program_id", axis=0)
    offs = b.op("add", b.op("splat", b.op("mul", pid, b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    mask = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))

    def ptr(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    b.effect("store", ptr("out_ptr"), b.op("add", b.op("load", ptr("x_ptr"), mask), b.op("load", ptr("y_ptr"), mask)),
             mask)
    return b.finish()


def softmax_row(dt=f32, block=256):
    """One row per program, strided rows, a loop, reductions, exp, casts, a scalar loop carry."""
    b = Builder("softmax_row", [("x", pointer(dt)), ("y", pointer(dt)), ("n", scalar(i32)), ("stride", scalar(i32))])
    row = b.op("program_id", axis=0)
    base = b.op("mul", row, b.param("stride"))
    cols = b.op("arange", start=0, end=block)
    ninf = b.op("splat", b.const(float("-inf"), dt), shape=(block,))
    with b.region([scalar(i32), scalar(f32)]) as body:
        start, m = body.args
        idx = b.op("add", cols, b.op("splat", b.op("add", base, start), shape=(block,)))
        mask = b.op("lt", b.op("add", cols, b.op("splat", start, shape=(block,))), b.op("splat", b.param("n"), shape=(block,)))
        x = b.op("cast", b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(block,)), idx), mask, ninf), dtype=f32)
        b.yield_(b.op("maximum", m, b.op("reduce_max", x, axis=0)))
    m = b.for_(b.const(0, i32), b.param("n"), b.const(block, i32), [b.const(float("-inf"), f32)], body).results[0]
    idx = b.op("add", cols, b.op("splat", base, shape=(block,)))
    mask = b.op("lt", cols, b.op("splat", b.param("n"), shape=(block,)))
    x = b.op("cast", b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(block,)), idx), mask, ninf), dtype=f32)
    e = b.op("exp", b.op("sub", x, b.op("splat", m, shape=(block,))))
    s = b.op("reduce_sum", e, axis=0)
    out = b.op("cast", b.op("div", e, b.op("splat", s, shape=(block,))), dtype=dt)
    b.effect("store", b.op("addptr", b.op("splat", b.param("y"), shape=(block,)), idx), out, mask)
    return b.finish()


def _verify(text):
    mod = llvm.parse_assembly(text)
    mod.verify()
    return mod


# ---------------------------------------------------------------- modules and API


@pytest.mark.parametrize("target", ("sm_80", "sm_90", "host"))
@pytest.mark.parametrize("dt", (f32, f16, bf16, f64), ids=str)
def test_every_module_passes_the_llvm_verifier(target, dt):
    for fn in (vector_add(dt), softmax_row(dt)):
        lm = lower(fn, target)
        _verify(lm.llvm_ir)
        assert lm.num_threads == 128
        if target == "host":
            assert lm.entry == f"{fn.name}_grid" and lm.mode == "host"
        else:
            assert lm.entry == f"{fn.name}_entry_point" and lm.mode == "ptx"
            assert 'target triple = "nvptx64-nvidia-cuda"' in lm.llvm_ir
            assert "ptx_kernel" in lm.llvm_ir and "nvvm.annotations" in lm.llvm_ir


def test_lowered_module_reports_shared_memory_and_threads():
    lm = lower(softmax_row(), "sm_90", num_warps=8)
    assert lm.num_threads == 256
    assert lm.shared_bytes > 0
    # strided rows: alignment cannot be used, nothing assumed about pointers; the row loop
    # (step 256) runs in the stepped form up to n, so n <= 2**31 - 256 is (codegen/loop_form.py)
    assert lm.assumptions == {"n": f"le{2**31 - 256}"}
    assert lower(vector_add(), "sm_90").shared_bytes == 0


def test_no_contract_flags_by_default():
    assert " contract " not in lower(softmax_row(), "sm_90").llvm_ir


def test_block_parameters_are_rejected():
    b = Builder("blockparam", [("v", BlockType(f32, (4,))), ("o", pointer(f32))])
    b.effect("store", b.param("o"), b.op("reduce_sum", b.param("v"), axis=0))
    with pytest.raises(CodegenError, match="blockparam: parameter 'v' has type f32\\[4\\]"):
        lower(b.finish(), "sm_90")


def _transpose_kernel(rows: int, cols: int):
    """``x[r, c] = x[c, r]``-style transposition of a rows x cols f32 block (staged in shared memory)."""
    b = Builder("big_trans", [("x", pointer(f32))])
    ri, ci = b.op("arange", start=0, end=rows), b.op("arange", start=0, end=cols)
    shape = (rows, cols)
    off = b.op("add", b.op("mul", b.op("broadcast", b.op("expand_dims", ri, axis=1), shape=shape),
                               b.op("splat", b.const(cols, i32), shape=shape)),
               b.op("broadcast", b.op("expand_dims", ci, axis=0), shape=shape))
    p = b.op("addptr", b.op("splat", b.param("x"), shape=shape), off)
    b.effect("store", b.op("addptr", b.op("splat", b.param("x"), shape=(cols, rows)),
                           b.op("trans", off, perm=(1, 0))),
             b.op("trans", b.op("load", p), perm=(1, 0)))
    return b.finish()


def test_shared_memory_beyond_48k_is_dynamic_up_to_the_target_limit():
    """A 128 KiB transposition: dynamic shared memory on sm_90 (227 KiB opt-in), a clear error
    naming the bytes and the limit on sm_86 (99 KiB); the host build has no such limit."""
    fn = _transpose_kernel(256, 128)
    assert lower(fn, "sm_90").dynamic_shared_bytes >= 128 * 1024
    with pytest.raises(CodegenError, match=r"131072 bytes of shared memory, more than the 101376 bytes .* sm_86"):
        lower(fn, "sm_86")
    lower(fn, "host")


def test_unknown_target_and_bad_num_warps():
    with pytest.raises(CodegenError, match="unknown target"):
        lower(vector_add(), "sm_1234")
    with pytest.raises(CodegenError, match="num_warps"):
        lower(vector_add(), "sm_90", num_warps=3)


# ---------------------------------------------------------------- HostKernel.run checks


@pytest.fixture(scope="module")
def vadd_host():
    return build_host(vector_add())


def test_host_run_checks_arguments(vadd_host):
    x = np.ones(10, np.float32)
    with pytest.raises(LaunchError, match="takes 4 argument"):
        vadd_host.run(1, x, x, x)
    with pytest.raises(LaunchError, match="'y_ptr'.*expects an array of f32, got an array of f64"):
        vadd_host.run(1, x, np.ones(10), x, 10)
    with pytest.raises(LaunchError, match="'x_ptr'.*expects a numpy array"):
        vadd_host.run(1, [1.0], x, x, 10)
    with pytest.raises(LaunchError, match="C-contiguous"):
        vadd_host.run(1, np.ones(20, np.float32)[::2], x, x, 10)
    with pytest.raises(LaunchError, match="'n' \\(i32\\) expects an integer"):
        vadd_host.run(1, x, x, x, 1.5)
    with pytest.raises(LaunchError, match="out of range"):
        vadd_host.run(1, x, x, x, 2**31)
    with pytest.raises(LaunchError, match=r"^vector_add: grid \(1, 2, 3, 4\) has 4 axes; a grid has at most 3 "
                       r"\(x, y, z\) and entries past the third may only be 1$"):
        vadd_host.run((1, 2, 3, 4), x, x, x, 10)
    with pytest.raises(LaunchError, match=r"^vector_add: grid dimensions must be >= 0, got \(-1,\)$"):
        vadd_host.run(-1, x, x, x, 10)
    with pytest.raises(LaunchError, match=r"^vector_add: grid dimensions must be at most 2147483647, "
                       r"got \(1, 2147483648\)$"):
        vadd_host.run((1, 2**31), x, x, x, 10)


def test_host_run_empty_grid_checks_arguments_and_runs_nothing(vadd_host):
    x = np.ones(10, np.float32)
    out = np.zeros(10, np.float32)
    vadd_host.run((4, 0), x, x, out, 10)
    assert not out.any()
    with pytest.raises(LaunchError, match=r"^vector_add: parameter 'n' \(i32\) expects an integer, got float 1\.5$"):
        vadd_host.run(0, x, x, out, 1.5)


def test_read_only_arrays_only_for_inputs(vadd_host):
    assert vadd_host.written == {"out_ptr"}
    x = np.arange(10, dtype=np.float32)
    x.flags.writeable = False
    out = np.zeros(10, np.float32)
    vadd_host.run(1, x, x, out, 10)
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(LaunchError, match="'out_ptr' is a read-only array, but the kernel may write through it"):
        vadd_host.run(1, out, out, x, 10)


def test_alignment_assumption_is_checked_at_launch(vadd_host):
    assert vadd_host.lowered.assumptions == {}  # host code never needs the alignment
    fn = vector_add()
    lm = lower(fn, "sm_90")
    assert lm.assumptions == {"x_ptr": "align16", "y_ptr": "align16", "out_ptr": "align16"}
    # a host kernel carrying the GPU's assumptions refuses misaligned buffers
    from eggpu.codegen.host import HostKernel

    hk = HostKernel(fn, lm, vadd_host._engine, 0)
    buf = np.zeros(17, np.float32)
    with pytest.raises(LaunchError, match="'x_ptr' must be 16-byte aligned"):
        hk._pack([buf[1:], buf[1:], buf[1:], 16])
    aligned = np.zeros(16, np.float32)
    assert aligned.__array_interface__["data"][0] % 16 == 0
    hk._pack([aligned, aligned, aligned, 16])


def test_host_run_writes_in_place(vadd_host):
    n = 3000
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, np.float32)
    out = np.zeros(n, np.float32)
    vadd_host.run((n + 1023) // 1024, x, y, out, np.int64(n))
    np.testing.assert_array_equal(out, x + y)


def test_host_scalar_conversions():
    b = Builder("scal", [("o", pointer(f64)), ("a", scalar(f16)), ("c", scalar(u8)), ("f", scalar(bool_)),
                         ("g", scalar(i8)), ("h", scalar(bf16))])
    s = b.op("add", b.op("cast", b.param("a"), dtype=f64), b.op("cast", b.param("c"), dtype=f64))
    s = b.op("add", s, b.op("cast", b.param("f"), dtype=f64))
    s = b.op("add", s, b.op("cast", b.param("g"), dtype=f64))
    s = b.op("add", s, b.op("cast", b.param("h"), dtype=f64))
    b.effect("store", b.param("o"), s)
    hk = build_host(b.finish())
    o = np.zeros(1, np.float64)
    hk.run(1, o, 1.5, 200, True, -3, 0.25)
    assert o[0] == 1.5 + 200 + 1 - 3 + 0.25
    with pytest.raises(LaunchError, match="'a' \\(f16\\): value 1000000.0 is out of range"):
        hk.run(1, o, 1e6, 200, True, -3, 0.25)
    with pytest.raises(LaunchError, match=r"^scal: parameter 'f' \(bool\) expects a bool, got int 2$"):
        hk.run(1, o, 1.5, 200, 2, -3, 0.25)
    # bools count as integers and 0/1 as bools (the interpreter's rules); numpy scalars keep their value
    hk.run(1, o, np.float64(-2.5), np.uint8(255), 0, True, np.float32(0.5))
    assert o[0] == -2.5 + 255 + 0 + 1 + 0.5


# ---------------------------------------------------------------- layout and analysis


def test_layout_ownership():
    lay = Layout((1000,), 128)
    assert lay.per == 8 and not lay.all_owned and lay.numel == 1000
    assert Layout((1024,), 128).all_owned
    assert Layout((16, 64), 128).per == 8
    assert Layout((3, 5), 128).per == 1
    assert Layout((), 128).per == 1


def test_layout_is_blocked_with_repetition():
    lay = Layout((1024,), 128)
    assert (lay.per, lay.vec, lay.chunks, lay.stride) == (8, 4, 2, 512)
    assert [lay.slot_flat(0, j) for j in range(8)] == [0, 1, 2, 3, 512, 513, 514, 515]
    assert [lay.slot_flat(1, j) for j in range(4)] == [4, 5, 6, 7]
    assert lay.slot_flat(127, 7) == 1023
    assert lay.owner(516) == (1, 4) and lay.owner(3) == (0, 3)
    # the chunk width depends on the element count only (never on the dtype)
    assert Layout((16, 64), 128).vec == 4 and Layout((2, 512), 128).vec == 4
    assert Layout((128, 6), 128).vec == 2 and Layout((3, 128), 128).vec == 1
    assert Layout((128,), 128).vec == 1 and Layout((3, 5), 128).vec == 1


@pytest.mark.parametrize("shape", [(1024,), (1000,), (129,), (3, 5), (64, 48), (7, 100), (4096,), (128, 6), ()])
def test_layout_owns_every_element_exactly_once(shape):
    lay = Layout(shape, 128)
    owned = [lay.slot_flat(t, j) for t in range(128) for j in range(lay.per) if lay.slot_flat(t, j) < lay.numel]
    assert sorted(owned) == list(range(lay.numel))
    for f in owned:
        t, j = lay.owner(f)
        assert lay.slot_flat(t, j) == f
    assert lay.all_owned == (len(owned) == 128 * lay.per)


def test_address_analysis_of_vector_add():
    fn = vector_add()
    facts = AddressAnalysis(fn)
    stores = [op for op in fn.walk() if op.op == "store"]
    f = facts.get(stores[0].operands[0])
    assert f is not None and f.origin == "out_ptr"
    assert f.strides == (Stride(1, 1),)
    assert f.base_div == 1024  # pid * 1024
    assert vector_width(f, (1024,), 8, 4, 16) == 4
    assert vector_width(f, (1024,), 8, 4, 4) == 1  # without the parameter's alignment
    assert vector_width(f, (1024,), 8, 2, 16) == 8  # halves: 16 bytes
    assert vector_width(f, (1024,), 2, 4, 16) == 2  # runs of 2


def test_address_analysis_strided_rows_and_loops():
    fn = softmax_row()
    facts = AddressAnalysis(fn)
    loads = [op for op in fn.walk() if op.op == "load"]
    inner = facts.get(loads[0].operands[0])  # inside the loop: base + row*stride + start
    assert inner is not None and inner.strides == (Stride(1, 1),) and inner.base_div == 1
    assert vector_width(inner, (256,), 2, 4, 16) == 1  # row * stride: unknown alignment


def test_address_analysis_2d_and_broadcast():
    b = Builder("tile", [("p", pointer(f32)), ("ld", scalar(i32))])
    r = b.op("arange", start=0, end=16)
    c = b.op("arange", start=0, end=32)
    shape = (16, 32)
    rows = b.op("broadcast", b.op("expand_dims", r, axis=1), shape=shape)
    cols = b.op("broadcast", b.op("expand_dims", c, axis=0), shape=shape)
    const_ld = b.op("add", b.op("mul", rows, b.op("splat", b.const(32, i32), shape=shape)), cols)
    var_ld = b.op("add", b.op("mul", rows, b.op("splat", b.param("ld"), shape=shape)), cols)
    p1 = b.op("addptr", b.op("splat", b.param("p"), shape=shape), const_ld)
    p2 = b.op("addptr", b.op("splat", b.param("p"), shape=shape), var_ld)
    b.effect("store", p1, b.op("load", p2))
    fn = b.finish()
    facts = AddressAnalysis(fn)
    f1, f2 = facts.get(p1), facts.get(p2)
    assert f1.strides == (Stride(32, 32), Stride(1, 1))
    assert f2.strides[1] == Stride(1, 1) and f2.strides[0].const is None
    assert vector_width(f1, shape, 4, 4, 16) == 4
    assert vector_width(f2, shape, 4, 4, 16) == 1
    assert facts.get(b.param("ld")).base_div == 1  # integer arguments are never assumed divisible
    assert facts.get(b.param("p")).base_div == BIG and facts.get(b.param("p")).origin == "p"


def test_i64_and_u8_pointer_offsets_on_host():
    b = Builder("offs", [("x", pointer(f32)), ("o", pointer(f32)), ("k", scalar(i64)), ("u", scalar(u8))])
    off = b.op("add", b.param("k"), b.op("cast", b.param("u"), dtype=i64))
    b.effect("store", b.param("o"), b.op("load", b.op("addptr", b.param("x"), off)))
    hk = build_host(b.finish())
    x = np.arange(300, dtype=np.float32)
    o = np.zeros(1, np.float32)
    hk.run(1, x, o, -5, 255)
    assert o[0] == 250.0
