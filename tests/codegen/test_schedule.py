"""``codegen/schedule.py``: each block's pure instructions are placed on demand (right before the
first instruction that needs them), effects keep their order, and the block computes the same
values. Random straight-line programs are run before and after the reordering (LLVM's JIT on
the host) and must store the same bits; gelu, the kernel the pass is for, needs fewer
registers with it (ptxas) and still agrees with numpy through ``run_cpu``."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir

from eggpu.codegen import schedule

I32 = ir.IntType(32)
F32 = ir.FloatType()
PTR = ir.PointerType()

# a step of a random program: ("op", kind, a, b) on earlier values, ("load", k) from the input
# buffer, ("store", v, k) to the output buffer, ("erf", a): a libdevice-like pure call
_STEP = st.one_of(
    st.tuples(st.just("op"), st.sampled_from(["add", "mul", "xor", "sub", "select"]),
              st.integers(0, 1 << 16), st.integers(0, 1 << 16)),
    st.tuples(st.just("load"), st.integers(0, 7)),
    st.tuples(st.just("store"), st.integers(0, 1 << 16), st.integers(0, 7)),
    st.tuples(st.just("call"), st.integers(0, 1 << 16)),
)


def _program(steps: list[tuple]) -> tuple[ir.Module, ir.Function]:
    """``void f(i32* in, i32* out, i32 a)``: one block running ``steps`` (operands index the
    values made so far, modulo their count), plus a pure helper called like a libdevice
    function (``__nv_`` prefix)."""
    mod = ir.Module(name="sched")
    helper = ir.Function(mod, ir.FunctionType(I32, [I32]), "__nv_mix")
    hb = ir.IRBuilder(helper.append_basic_block("entry"))
    hb.ret(hb.xor(hb.mul(helper.args[0], I32(0x9E3779B1 - (1 << 32))), I32(0x5BD1E995)))
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [PTR, PTR, I32]), "f")
    src, dst, a = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vals: list[ir.Value] = [a, b.add(a, I32(1))]
    for step in steps:
        if step[0] == "op":
            x, y = vals[step[2] % len(vals)], vals[step[3] % len(vals)]
            if step[1] == "select":
                vals.append(b.select(b.icmp_signed("<", x, y), x, y))
            else:
                vals.append(getattr(b, step[1])(x, y))
        elif step[0] == "load":
            # the output buffer, read back: a load moved across a store to its slot reads other bits
            buf = dst if step[1] % 2 else src
            vals.append(b.load(b.gep(buf, [I32(step[1])], source_etype=I32), typ=I32))
        elif step[0] == "store":
            b.store(vals[step[1] % len(vals)], b.gep(dst, [I32(step[2])], source_etype=I32))
        else:
            vals.append(b.call(helper, [vals[step[1] % len(vals)]]))
    b.store(vals[-1], b.gep(dst, [I32(8)], source_etype=I32))
    b.ret_void()
    return mod, fn


def _run(mod: ir.Module, inputs: np.ndarray, a: int) -> np.ndarray:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(str(mod))
    parsed.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    with llvm.create_mcjit_compiler(parsed, tm) as ee:
        ee.finalize_object()
        cfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)(ee.get_function_address("f"))
        out = np.zeros(9, dtype=np.int32)
        cfn(inputs.ctypes.data, out.ctypes.data, a)
    return out


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=40), a=st.integers(-(1 << 31), (1 << 31) - 1))
def test_reordered_block_stores_the_same_values(steps, a):
    inputs = np.arange(8, dtype=np.int32) * 7919 - 3
    mod, fn = _program(steps)
    before = [str(i) for i in fn.blocks[0].instructions]
    expected = _run(mod, inputs, a)
    schedule.order_on_demand(fn)
    after = fn.blocks[0].instructions
    assert sorted(before) == sorted(str(i) for i in after)
    # effects (loads, stores) in their original order, the terminator last
    effects = [s for s in before if " = load " in s or s.lstrip().startswith("store ")]
    assert [str(i) for i in after if str(i) in effects] == effects
    assert str(after[-1]).strip() == "ret void"
    # every operand defined in the block comes before its user
    pos = {id(i): k for k, i in enumerate(after)}
    for k, ins in enumerate(after):
        assert all(pos.get(id(op), -1) < k for op in ins.operands)
    np.testing.assert_array_equal(_run(mod, inputs, a), expected)


def test_each_chain_runs_just_before_the_store_that_needs_it():
    """Op-major emission (all products, then all calls, then all stores) becomes one chain per
    stored value, which is what keeps one value live per finished element."""
    steps = [("op", "mul", 0, 0), ("op", "mul", 1, 1),          # v2 = a*a, v3 = v1*v1
             ("call", 2), ("call", 3),                          # v4 = mix(v2), v5 = mix(v3)
             ("store", 4, 0), ("store", 5, 1)]
    mod, fn = _program(steps)
    schedule.order_on_demand(fn)
    text = [str(i).strip() for i in fn.blocks[0].instructions]
    first_call = next(k for k, s in enumerate(text) if "__nv_mix" in s)
    first_store = next(k for k, s in enumerate(text) if s.startswith("store"))
    second_mul = [k for k, s in enumerate(text) if " = mul " in s][1]
    # mul, call, store of the first value before the second value's mul
    assert first_call < first_store < second_mul


def test_phis_stay_first():
    mod = ir.Module(name="phis")
    fn = ir.Function(mod, ir.FunctionType(I32, [I32]), "g")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I32)
    acc = b.phi(I32)
    nxt = b.add(i, I32(1))
    acc2 = b.mul(acc, I32(3))
    i.add_incoming(I32(0), entry)
    i.add_incoming(nxt, loop)
    acc.add_incoming(fn.args[0], entry)
    acc.add_incoming(acc2, loop)
    b.cbranch(b.icmp_signed("<", nxt, I32(4)), loop, done)
    b.position_at_end(done)
    b.ret(acc2)
    schedule.order_on_demand(fn)
    instrs = loop.instructions
    assert instrs[0] is i and instrs[1] is acc
    import llvmlite.binding as llvm

    llvm.parse_assembly(str(mod)).verify()


@pytest.fixture
def unscheduled():
    saved = schedule.ENABLED
    schedule.ENABLED = False
    yield
    schedule.ENABLED = saved


def _gelu_ptx(target: str) -> str:
    import eggpu
    import eggpu.language as tl
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.target import get_target
    from eggpu.kernels import gelu_forward

    # codegen's own PTX: the pipeline may still split erf's constant selects after it
    fn = eggpu.compile(gelu_forward.Kernel[tl.f32](1024), target=target, cache=False).ir
    return compile_ptx_module(fn, get_target(target, num_warps=4), num_warps=4).ptx


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_gelu_needs_fewer_registers_with_the_pass(target, request, ptxas_registers):
    with_pass = ptxas_registers(_gelu_ptx(target), target)
    request.getfixturevalue("unscheduled")
    without = ptxas_registers(_gelu_ptx(target), target)
    assert with_pass < without, (with_pass, without)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_gelu_run_cpu_matches_numpy(n):
    import math

    import eggpu
    import eggpu.language as tl
    from eggpu.kernels import gelu_forward

    ck = eggpu.compile(gelu_forward.Kernel[tl.f32](1024), target="sm_90", cache=False)
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32) * 3
    y = np.zeros_like(x)
    ck.run_cpu((math.ceil(n / 1024),), x, y, n)
    erf = np.vectorize(math.erf)
    ref = 0.5 * x.astype(np.float64) * (1 + erf(x.astype(np.float64) / math.sqrt(2)))
    np.testing.assert_allclose(y, ref, rtol=2e-6, atol=1e-7)
