"""FileCheck-style checks of the PTX the lowering produces (regexes, independent of register
numbering), and ptxas acceptance for sm_80 and sm_90 (skipped, with the reason, only when no
ptxas or libdevice can be found)."""

from __future__ import annotations

import re

import pytest

from eggpu.ir import Builder, f16, f32, i32, pointer, scalar

TARGETS = ("sm_80", "sm_90")


def _toolchain_problem() -> str | None:
    from eggpu.codegen.toolchain import find_libdevice, find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
        find_libdevice()
    except ToolchainError as e:
        return str(e)
    return None


needs_toolchain = pytest.mark.skipif(_toolchain_problem() is not None,
                                     reason=f"no ptxas/libdevice: {_toolchain_problem()}")


def vector_add(dt=f32, block=1024):
    b = Builder("vector_add", [("x_ptr", pointer(dt)), ("y_ptr", pointer(dt)), ("out_ptr", pointer(dt)),
                               ("n", scalar(i32))])
    pid = b.op("program_id", axis=0)
    offs = b.op("add", b.op("splat", b.op("mul", pid, b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    mask = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))

    def ptr(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    s = b.op("add", b.op("load", ptr("x_ptr"), mask), b.op("load", ptr("y_ptr"), mask))
    b.effect("store", ptr("out_ptr"), s, mask)
    return b.finish()


def row_sum(block=1024):
    b = Builder("row_sum", [("x", pointer(f32)), ("out", pointer(f32)), ("n", scalar(i32))])
    offs = b.op("arange", start=0, end=block)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(block,)), offs),
             b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,))), b.op("splat", b.const(0.0, f32), shape=(block,)))
    b.effect("store", b.param("out"), b.op("reduce_sum", x, axis=0))
    return b.finish()


def mul_add():
    b = Builder("mul_add", [("x", pointer(f32)), ("y", pointer(f32))])
    offs = b.op("arange", start=0, end=128)
    px = b.op("addptr", b.op("splat", b.param("x"), shape=(128,)), offs)
    py = b.op("addptr", b.op("splat", b.param("y"), shape=(128,)), offs)
    x = b.op("load", px)
    b.effect("store", py, b.op("add", b.op("mul", x, x), b.op("load", py)))
    return b.finish()


def gelu_like():
    b = Builder("erf_exp", [("x", pointer(f32)), ("y", pointer(f32))])
    offs = b.op("arange", start=0, end=256)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(256,)), offs))
    b.effect("store", b.op("addptr", b.op("splat", b.param("y"), shape=(256,)), offs),
             b.op("add", b.op("erf", x), b.op("exp", x)))
    return b.finish()


def _ptx(fn, target, **kw):
    from eggpu.codegen import compile_ptx_module

    return compile_ptx_module(fn, target, **kw)


@needs_toolchain
@pytest.mark.parametrize("target", TARGETS)
def test_vector_add_ptx(target):
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.target import get_target

    c = _ptx(vector_add(), target)
    ptx = c.ptx
    isa = get_target(target).ptx_version_str
    assert re.search(rf"^\.version {re.escape(isa)}$", ptx, re.M)
    assert re.search(rf"^\.target {target}\b", ptx, re.M)
    assert re.search(r"^\.visible \.entry vector_add_entry_point\(", ptx, re.M)
    assert re.search(r"\.reqntid 128, 1, 1", ptx)
    assert re.search(r"ld\.global\.v4\.(f32|b32)\s", ptx), "contiguous aligned loads must vectorize"
    assert re.search(r"st\.global\.v4\.(f32|b32)\s", ptx), "contiguous aligned stores must vectorize"
    assert c.lowered.assumptions == {"x_ptr": "align16", "y_ptr": "align16", "out_ptr": "align16"}
    rep = run_ptxas(ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0
    assert rep.registers > 0


@needs_toolchain
def test_no_vector_loads_without_the_alignment_assumption():
    c = _ptx(vector_add(), "sm_90", assume_aligned=False)
    assert c.lowered.assumptions == {}
    assert not re.search(r"ld\.global\.v\d", c.ptx)
    assert re.search(r"ld\.global\.(f32|b32)\s", c.ptx)


@needs_toolchain
def test_f16_vector_loads():
    # the layout chunk is 4 elements whatever the dtype: 4 halves per 8-byte load, and the
    # thread's second chunk is one repetition (128 threads x 4 halves = 1024 bytes) further
    c = _ptx(vector_add(f16), "sm_90")
    assert re.search(r"ld\.global\.v4\.b16\s+\{[^}]*\}, \[%rd\d+\]", c.ptx), "4 halves per 8-byte load"
    # (an immediate offset, or, in the branch-free masked form, a register one add of 1024 away)
    plus = re.search(r"ld\.global\.v4\.b16\s+\{[^}]*\}, \[%rd\d+\+1024\]", c.ptx)
    reg = re.search(r"add\.s64\s+(%rd\d+), %rd\d+, 1024;", c.ptx)
    assert plus or (reg and re.search(r"ld\.global\.v4\.b16\s+\{[^}]*\}, \[" + reg.group(1) + r"\]", c.ptx))


@needs_toolchain
def test_vector_add_warp_loads_are_contiguous():
    """Blocked layout with repetition: thread t's v4 loads are at 16*t and 16*t + 2048 bytes,
    so one warp-wide v4 instruction reads 512 contiguous bytes."""
    c = _ptx(vector_add(), "sm_90")
    ptx = c.ptx
    assert re.search(r"shl\.b32\s+%r\d+, %r\d+, 2;", ptx), "thread index scaled by the 4-element chunk"
    # an address is a register plus an immediate, the register possibly one add of a constant
    # from another (the branch-free masked form addresses each piece from its own register)
    adds = {d: (b, int(k)) for d, b, k in re.findall(r"add\.s64\s+(%rd\d+), (%rd\d+), (\d+);", ptx)}

    def resolve(reg: str, off: str) -> tuple[str, str]:
        base, k = adds.get(reg, (reg, 0))
        k += int(off or 0)
        return base, f"+{k}" if k else ""

    v4 = [resolve(r, o) for r, o in
          re.findall(r"ld\.global\.v4\.(?:f32|b32)\s+\{[^}]*\}, \[(%rd\d+)(\+\d+)?\]", ptx)]
    assert len(v4) == 4, v4
    by_base: dict[str, set[str]] = {}
    for base, off in v4:
        by_base.setdefault(base, set()).add(off)
    assert all(offs == {"", "+2048"} for offs in by_base.values()), by_base
    st = [resolve(r, o)[1] for r, o in re.findall(r"st\.global\.v4\.(?:f32|b32)\s+\[(%rd\d+)(\+\d+)?\]", ptx)]
    assert sorted(st) == ["", "+2048"]


@needs_toolchain
@pytest.mark.parametrize("target", TARGETS)
def test_reduction_uses_warp_shuffles_and_shared_memory(target):
    from eggpu.codegen.ptxas import run_ptxas

    c = _ptx(row_sum(), target)
    assert len(re.findall(r"shfl\.sync\.bfly\.b32", c.ptx)) >= 5, "butterfly 16, 8, 4, 2, 1"
    assert re.search(r"bar\.sync\s+0", c.ptx)
    assert re.search(r"st\.shared\.(f32|b32)", c.ptx) and re.search(r"ld\.shared\.(f32|b32)", c.ptx)
    assert c.lowered.shared_bytes > 0
    rep = run_ptxas(c.ptx, target)
    assert rep.shared_bytes >= 4 * 4  # one partial per warp


@needs_toolchain
@pytest.mark.parametrize("num_warps", (1, 8))
def test_reqntid_follows_num_warps(num_warps):
    c = _ptx(row_sum(), "sm_90", num_warps=num_warps)
    assert re.search(rf"\.reqntid {32 * num_warps}, 1, 1", c.ptx)
    assert c.lowered.num_threads == 32 * num_warps
    if num_warps == 1:
        assert not re.search(r"bar\.sync", c.ptx), "one warp needs no shared-memory round trip"


@needs_toolchain
def test_contraction_only_under_fast_math():
    plain = _ptx(mul_add(), "sm_90").ptx
    assert re.search(r"mul\.rn\.f32", plain) and re.search(r"add\.rn\.f32", plain)
    assert not re.search(r"fma\.rn\.f32", plain)
    fast = _ptx(mul_add(), "sm_90", fast_math=True).ptx
    assert re.search(r"fma\.rn\.f32", fast)


@needs_toolchain
def test_libdevice_is_linked_and_inlined():
    c = _ptx(gelu_like(), "sm_90")
    assert "__nv_erff" in c.llvm_ir and "__nv_expf" in c.llvm_ir
    assert not re.search(r"\.extern \.func", c.ptx)
    assert not re.search(r"\bcall(\.uni)?\b", c.ptx)


@needs_toolchain
@pytest.mark.parametrize("target", ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"))
def test_every_target_assembles(target):
    from eggpu.codegen.ptxas import run_ptxas

    for fn in (vector_add(), row_sum()):
        c = _ptx(fn, target)
        assert re.search(rf"^\.target {target}\b", c.ptx, re.M)
        run_ptxas(c.ptx, target)


@needs_toolchain
def test_dot_goes_through_shared_memory():
    from eggpu.ir.types import BlockType

    b = Builder("tile_dot", [("a", pointer(f16)), ("b", pointer(f16)), ("c", pointer(f32))])
    r = b.op("arange", start=0, end=32)
    shape = (32, 32)
    rows = b.op("broadcast", b.op("expand_dims", r, axis=1), shape=shape)
    cols = b.op("broadcast", b.op("expand_dims", r, axis=0), shape=shape)
    off = b.op("add", b.op("mul", rows, b.op("splat", b.const(32, i32), shape=shape)), cols)

    def ptrs(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=shape), off)

    d = b.op("dot", b.op("load", ptrs("a")), b.op("load", ptrs("b")))
    assert d.type == BlockType(f32, shape)
    b.effect("store", ptrs("c"), d)
    fn = b.finish()
    c = _ptx(fn, "sm_75")  # before sm_80: CUDA cores
    assert re.search(r"st\.shared\.", c.ptx) and re.search(r"ld\.shared\.", c.ptx)
    assert re.search(r"fma\.rn\.f32", c.ptx), "f32 accumulation with fused multiply-add"
    assert c.lowered.shared_bytes >= 2 * 32 * 32 * 2
    c = _ptx(fn, "sm_90")  # tensor cores, operands through shared memory (tests/codegen/test_mma.py)
    assert re.search(r"st\.shared\.", c.ptx) and "ldmatrix.sync.aligned" in c.ptx and "mma.sync.aligned" in c.ptx
    assert c.lowered.shared_bytes >= 2 * 32 * 32 * 2
