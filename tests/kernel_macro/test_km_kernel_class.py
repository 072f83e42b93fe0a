"""@kernel: the generated Kernel / Dispatch classes and KernelInstance (DESIGN.md §3)."""

from __future__ import annotations

import sys
from typing import TypeVar

import ml_dtypes
import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.structural import structurally_equal
from eggpu.kernel_macro import hooks
from eggpu.kernel_macro.errors import (
    BackwardKernelError,
    CompileUnavailableError,
    ConstexprArgumentError,
    DecoratorArgumentError,
    DtypeArgumentError,
    DtypeInferenceError,
    DuplicateDtypeError,
    KernelSignatureError,
    UnknownDtypeError,
    UnsupportedDtypeError,
)
from eggpu.kernel_macro.kernel import Dispatch, Kernel, KernelInstance, pascal_case

D = TypeVar("D", bound=tl.Float)
I = TypeVar("I", bound=tl.Int)  # noqa: E741
N = TypeVar("N", bound=tl.Num)
B = TypeVar("B", bound=tl.Bool)
A = TypeVar("A", bound=tl.Dtype)
Unbound = TypeVar("Unbound")

MOD = sys.modules[__name__]


@eggpu.kernel(backward="gelu_backward")
def gelu_forward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], n: tl.i32, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=mask)


@eggpu.kernel
def gelu_backward(x_ptr: tl.Pointer[D], dy_ptr: tl.Pointer[D], dx_ptr: tl.Pointer[D], n: tl.i32,
                  BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.f32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.f32)
    cdf = 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    tl.store(dx_ptr + offs, (dy * (cdf + x * pdf)).to(D), mask=mask)


@eggpu.kernel
def scale_gather(x_ptr: tl.Pointer[D], idx_ptr: tl.Pointer[I], y_ptr: tl.Pointer[D], n: tl.i32, alpha: D,
                 BLOCK_SIZE: tl.constexpr, REPEAT: tl.constexpr):
    """y[i] = x[idx[i]] * alpha * REPEAT for i < n (one program per BLOCK_SIZE lanes)."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    x = tl.load(x_ptr + idx, mask=mask, other=0.0)
    acc = tl.zeros_like(x)
    for _ in tl.static_range(REPEAT):
        acc += x * alpha
    tl.store(y_ptr + offs, acc, mask=mask)


@eggpu.kernel
def adam_step(p_ptr: tl.Pointer[tl.f32], g_ptr: tl.Pointer[tl.f32], n: tl.i32, lr: tl.f32,
              BLOCK_SIZE: tl.constexpr, NESTEROV: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    if NESTEROV:
        g = g * 2.0
    tl.store(p_ptr + offs, p - lr * g, mask=mask)


@eggpu.kernel
def conv2d_bn_silu(x_ptr: tl.Pointer[tl.f32]):
    tl.store(x_ptr, tl.sigmoid(tl.load(x_ptr)))


@eggpu.kernel(dtypes=[tl.f32, "f16"])
def explicit_dtypes(x_ptr: tl.Pointer[D], OUT_DTYPE: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr).to(OUT_DTYPE).to(D))


@eggpu.kernel(dtypes=[tl.f32])
def no_typevar_dispatch(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@eggpu.kernel(backward=gelu_backward)
def fwd_with_function_backward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], n: tl.i32, BLOCK_SIZE: tl.constexpr):
    tl.store(y_ptr, tl.load(x_ptr))


@eggpu.kernel(backward=GeluBackward)  # noqa: F821 - bound in this module by @kernel above
def fwd_with_class_backward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], n: tl.i32, BLOCK_SIZE: tl.constexpr):
    tl.store(y_ptr, tl.load(x_ptr))


@eggpu.kernel(backward="other_consts_backward")
def fwd_other_consts(x_ptr: tl.Pointer[D], BLOCK_SIZE: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr))


@eggpu.kernel
def other_consts_backward(x_ptr: tl.Pointer[D], BLOCK: tl.constexpr, EXTRA: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr))


@eggpu.kernel(backward="not_defined_anywhere")
def fwd_missing_backward(x_ptr: tl.Pointer[D], BLOCK_SIZE: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr))


@eggpu.kernel(backward="int_backward")
def int_forward(x_ptr: tl.Pointer[I], BLOCK: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr))


@eggpu.kernel
def int_backward(x_ptr: tl.Pointer[I], BLOCK: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr))


# ---------------------------------------------------------------- the function and the class


def test_function_is_returned_unchanged_with_kernel_attributes():
    assert callable(gelu_forward) and gelu_forward.__name__ == "gelu_forward"
    assert gelu_forward.Kernel is GeluForward  # noqa: F821
    assert gelu_forward.Dispatch is GeluForwardDispatch  # noqa: F821
    assert MOD.GeluForward.__name__ == "GeluForward"
    assert issubclass(MOD.GeluForward, Kernel) and issubclass(MOD.GeluForwardDispatch, Dispatch)
    assert not hasattr(gelu_backward, "Dispatch")  # no dtypes=/backward= -> no Dispatch class
    assert "GeluBackwardDispatch" not in vars(MOD)


def test_calling_the_kernel_function_says_how_to_launch_it():
    with pytest.raises(eggpu.KernelError) as ei:
        gelu_forward(np.zeros(4, np.float32), np.zeros(4, np.float32), 4, 4)
    msg = str(ei.value)
    assert "gelu_forward is a @kernel and cannot be called directly" in msg
    assert "GeluForward[tl.f16](block_size=...).interpret(grid, *args)" in msg
    assert "eggpu.compile(GeluForward[tl.f16](block_size=...))" in msg


def test_pascal_case_names():
    assert pascal_case("gelu_forward") == "GeluForward"
    assert pascal_case("conv2d_bn_silu") == "Conv2dBnSilu"
    assert conv2d_bn_silu.Kernel.__name__ == "Conv2dBnSilu"
    assert MOD.Conv2dBnSilu is conv2d_bn_silu.Kernel
    assert MOD.AdamStep.__module__ == __name__


def test_instance_attributes_with_distinct_placeholders():
    k = MOD.ScaleGather[tl.f16, tl.i64](96, 7)
    assert k.name == "scale_gather"
    assert k.id == "scale_gather__f16__i64__96__7"
    assert k.block_size == 96 and k.repeat == 7
    assert k.dtypes == (tl.f16, tl.i64)
    assert k.consts == {"BLOCK_SIZE": 96, "REPEAT": 7}
    assert k.entry_point == "scale_gather_entry_point"
    assert k.arg_types == (tl.Pointer[tl.f16], tl.Pointer[tl.i64], tl.Pointer[tl.f16], tl.i32, tl.f16)
    assert str(k.arg_types) == "(Pointer[f16], Pointer[i64], Pointer[f16], i32, f16)"
    assert k.entry_point_source == (
        "def scale_gather_entry_point(x_ptr: Pointer[f16], idx_ptr: Pointer[i64], y_ptr: Pointer[f16], "
        "n: i32, alpha: f16):\n"
        "    scale_gather(x_ptr, idx_ptr, y_ptr, n, alpha, BLOCK_SIZE=96, REPEAT=7)"
    )
    assert k.kernel_source.startswith("@eggpu.kernel\ndef scale_gather(")
    assert "acc += x * alpha" in k.kernel_source
    assert k.source == k.kernel_source.rstrip() + "\n\n\n" + k.entry_point_source + "\n"
    assert repr(k) == "ScaleGather[f16, i64](block_size=96, repeat=7)"
    # the IR uses the substitutions too
    fn = k.ir()
    assert fn.name == "scale_gather"
    assert [str(p.type) for p in fn.params] == ["ptr<f16>", "ptr<i64>", "ptr<f16>", "i32", "f16"]
    assert [p.name for p in fn.params] == ["x_ptr", "idx_ptr", "y_ptr", "n", "alpha"]
    assert any(op.op == "arange" and op.attrs["end"] == 96 for op in fn.walk())
    assert sum(op.op == "mul" and str(op.results[0].type) == "f16[96]" for op in fn.walk()) == 1  # CSE'd
    assert sum(op.op == "add" and str(op.results[0].type) == "f16[96]" for op in fn.walk()) == 7


def test_scale_gather_runs():
    k = MOD.ScaleGather[tl.f32, tl.i32](96, 7)
    n = 150
    rng = np.random.default_rng(0)
    x = rng.standard_normal(200).astype(np.float32)
    idx = rng.integers(0, 200, n).astype(np.int32)
    y = np.zeros(n, np.float32)
    k.interpret(2, x, idx, y, n, np.float32(0.5))
    want = np.zeros(n, np.float32)
    for _ in range(7):
        want = (want + x[idx] * np.float32(0.5)).astype(np.float32)
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_constexprs_by_position_or_lowercase_name_and_defaults():
    a = MOD.GeluForward[tl.f32](1024)
    assert a == MOD.GeluForward[tl.f32](block_size=1024) == MOD.GeluForward["f32"](BLOCK_SIZE=1024)
    assert hash(a) == hash(MOD.GeluForward[np.float32](1024))
    assert a != MOD.GeluForward[tl.f16](1024)
    assert a != MOD.GeluForward[tl.f32](512)
    assert a != MOD.GeluBackward[tl.f32](1024)
    assert len({a, MOD.GeluForward[tl.f32](block_size=1024)}) == 1
    s = MOD.AdamStep(256)  # no dtype parameter: constructed directly
    assert s.id == "adam_step__256__false" and s.nesterov is False and s.block_size == 256
    t = MOD.AdamStep(256, True)
    assert t.id == "adam_step__256__true" and t != s
    assert MOD.AdamStep(256, nesterov=1) != t  # 1 is not True
    assert s.arg_types == (tl.Pointer[tl.f32], tl.Pointer[tl.f32], tl.i32, tl.f32)
    assert s.entry_point_source.endswith("adam_step(p_ptr, g_ptr, n, lr, BLOCK_SIZE=256, NESTEROV=False)")


def test_dtype_constexpr_and_numpy_scalars():
    k = MOD.ExplicitDtypes[tl.f32](tl.f16)
    assert k.id == "explicit_dtypes__f32__f16" and k.out_dtype is tl.f16
    assert MOD.GeluForward[tl.f32](np.int64(64)).block_size == 64
    assert type(MOD.GeluForward[tl.f32](np.int64(64)).block_size) is int


def test_ir_is_fresh_each_call_and_not_corrupted_by_mutation():
    k = MOD.GeluForward[tl.f32](128)
    f1, f2 = k.ir(), k.ir()
    assert f1 is not f2 and f1.body is not f2.body
    assert structurally_equal(f1, f2, names=True, locs=True)
    f1.body.ops.clear()
    assert structurally_equal(k.ir(), f2, names=True, locs=True)


def test_interpret_checks_argument_count():
    with pytest.raises(eggpu.LaunchError, match=r"gelu_forward__f32__128 takes 3 launch arguments "
                       r"\(Pointer\[f32\], Pointer\[f32\], i32\), got 2"):
        MOD.GeluForward[tl.f32](128).interpret(1, np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_gelu_forward_interprets():
    n = 1001
    x = np.linspace(-4, 4, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    MOD.GeluForward[tl.f32](256).interpret(4, x, y, n)
    from math import erf

    want = np.array([0.5 * v * (1 + erf(v / np.sqrt(2))) for v in x.astype(np.float64)])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- Kernel errors


def test_subscript_errors():
    with pytest.raises(DtypeArgumentError, match=r"scale_gather: ScaleGather\[\.\.\.\] takes 2 dtypes "
                       r"\(D: Float, I: Int\), got 1"):
        MOD.ScaleGather[tl.f32]
    with pytest.raises(UnknownDtypeError, match=r"gelu_forward: unknown dtype 'f33' \(did you mean f32\?\)"):
        MOD.GeluForward["f33"]
    with pytest.raises(UnknownDtypeError, match=r"did you mean f32\?"):
        MOD.GeluForward["float32"]
    with pytest.raises(UnsupportedDtypeError, match=r"gelu_forward: dtype i32 is not a Float \(dtype parameter "
                       r"D accepts f16, bf16, f32, f64\)"):
        MOD.GeluForward[tl.i32]
    with pytest.raises(DtypeArgumentError, match=r"adam_step: AdamStep has no dtype parameters; construct it "
                       r"directly: AdamStep\(\.\.\.\)"):
        MOD.AdamStep[tl.f32]
    with pytest.raises(DtypeArgumentError, match=r"gelu_forward: GeluForward has dtype parameters \(D: Float\); "
                       r"give them first: GeluForward\[tl\.f16\]\(\.\.\.\)"):
        MOD.GeluForward(1024)
    with pytest.raises(UnknownDtypeError, match=r"gelu_forward: 3 is not a dtype"):
        MOD.GeluForward[3]


def test_constexpr_errors():
    with pytest.raises(ConstexprArgumentError, match=r"scale_gather: ScaleGather\[f32, i32\]\(\.\.\.\) takes 2 "
                       r"constexpr arguments \(block_size, repeat\), got 3"):
        MOD.ScaleGather[tl.f32, tl.i32](96, 7, 5)
    with pytest.raises(ConstexprArgumentError, match=r"scale_gather: ScaleGather\[f32, i32\]\(\.\.\.\) is missing "
                       r"constexpr argument repeat"):
        MOD.ScaleGather[tl.f32, tl.i32](96)
    with pytest.raises(ConstexprArgumentError, match=r"gelu_forward: GeluForward\[f32\]\(\.\.\.\) got an unexpected "
                       r"constexpr keyword 'blok_size' \(did you mean block_size\?\); constexpr parameters: block_size"):
        MOD.GeluForward[tl.f32](blok_size=4)
    with pytest.raises(ConstexprArgumentError, match=r"got multiple values for constexpr block_size"):
        MOD.GeluForward[tl.f32](4, block_size=4)
    with pytest.raises(ConstexprArgumentError, match=r"gelu_forward: constexpr BLOCK_SIZE must be an int, float, "
                       r"bool, string, None or dtype, got bytes \(b'1024'\)"):
        MOD.GeluForward[tl.f32](b"1024")
    with pytest.raises(ConstexprArgumentError, match=r"adam_step: constexpr NESTEROV must be .* got list"):
        MOD.AdamStep(4, [1])
    assert issubclass(ConstexprArgumentError, eggpu.KernelError) and issubclass(ConstexprArgumentError, TypeError)


def test_signature_errors():
    def unannotated(x_ptr: tl.Pointer[tl.f32], n):
        pass

    with pytest.raises(KernelSignatureError, match=r"unannotated: parameter n has no annotation; annotate it with"):
        eggpu.kernel(unannotated)

    def unbound(x_ptr: tl.Pointer[Unbound]):
        pass

    with pytest.raises(KernelSignatureError, match=r"unbound: TypeVar Unbound has no bound; a dtype parameter must "
                       r"be bound by a category: Unbound = TypeVar\('Unbound', bound=tl.Float\)"):
        eggpu.kernel(unbound)

    Wrong = TypeVar("Wrong", bound=int)

    def wrong_bound(x_ptr: tl.Pointer[Wrong]):
        pass

    wrong_bound.__annotations__["x_ptr"] = tl.Pointer[Wrong]

    with pytest.raises(KernelSignatureError, match=r"wrong_bound: TypeVar Wrong is bound by 'int'"):
        eggpu.kernel(wrong_bound)

    def python_type(n: int):
        pass

    with pytest.raises(KernelSignatureError, match=r"python_type: parameter n has annotation int, which is not a "
                       r"kernel type"):
        eggpu.kernel(python_type)

    def star(*args: tl.i32):
        pass

    with pytest.raises(KernelSignatureError, match=r"star: parameter \*args: .*plain positional parameters only"):
        eggpu.kernel(star)

    def reserved(x_ptr: tl.Pointer[tl.f32], ID: tl.constexpr):
        pass

    with pytest.raises(KernelSignatureError, match=r"reserved: constexpr parameter ID would become the instance "
                       r"attribute 'id', which is reserved"):
        eggpu.kernel(reserved)


def test_compile_goes_through_the_hook(monkeypatch):
    k = MOD.GeluForward[tl.f32](256)
    monkeypatch.setattr(hooks, "COMPILE_HOOK", None)
    with pytest.raises(CompileUnavailableError, match=r"^eggpu.compile is not available: .*gelu_forward__f32__256"):
        k.compile()
    assert issubclass(CompileUnavailableError, eggpu.KernelError)
    calls = []

    def hook(kern, **options):
        calls.append((kern, options))
        return ("compiled", kern.id, tuple(sorted(options)))

    monkeypatch.setattr(hooks, "COMPILE_HOOK", hook)
    assert k.compile(target="sm_90") == ("compiled", "gelu_forward__f32__256", ("target",))
    inst = MOD.GeluForwardDispatch.dispatch(tl.f32, 256)
    assert inst.compile(target="sm_80") == ("compiled", "gelu_forward__f32__256", ("target",))
    assert inst.compile(target="sm_80") is inst.compile(target="sm_80")  # on demand, memoized
    assert calls[0] == (k, {"target": "sm_90"}) and len(calls) == 2


# ---------------------------------------------------------------- Dispatch


def test_supported_dtypes_inferred_from_the_bound():
    assert MOD.GeluForwardDispatch.SUPPORTED_DTYPES == (tl.f16, tl.bf16, tl.f32, tl.f64)
    assert MOD.IntForwardDispatch.SUPPORTED_DTYPES == (tl.i8, tl.i16, tl.i32, tl.i64, tl.u8, tl.u16, tl.u32, tl.u64)
    for bound, want in [(tl.Num, tl.Int.DTYPES + tl.Float.DTYPES), (tl.Bool, (tl.bool,)),
                        (tl.Dtype, (tl.bool,) + tl.Int.DTYPES + tl.Float.DTYPES)]:
        T = TypeVar("T", bound=bound)

        def k(x_ptr: tl.Pointer[T], BLOCK: tl.constexpr):
            pass

        k.__annotations__["x_ptr"] = tl.Pointer[T]
        eggpu.kernel(backward="nothing")(k)
        assert k.Dispatch.SUPPORTED_DTYPES == want


def test_explicit_dtypes():
    assert MOD.ExplicitDtypesDispatch.SUPPORTED_DTYPES == (tl.f32, tl.f16)
    assert MOD.NoTypevarDispatchDispatch.SUPPORTED_DTYPES == (tl.f32,)
    inst = MOD.NoTypevarDispatchDispatch.dispatch("f32", 8)
    assert inst.kernel == MOD.NoTypevarDispatch(8) and inst.backward is None


def test_dispatch_returns_kernel_instances():
    inst = MOD.GeluForwardDispatch.dispatch(tl.f32, 1024)
    assert isinstance(inst, KernelInstance)
    assert inst.name == "gelu_forward" and inst.id == "gelu_forward__f32__1024" and inst.dtype is tl.f32
    assert inst.kernel == MOD.GeluForward[tl.f32](1024)
    assert inst.source == MOD.GeluForward[tl.f32](1024).source
    assert inst.backward is not None and inst.backward.kernel == MOD.GeluBackward[tl.f32](1024)
    assert inst.backward.name == "gelu_backward" and inst.backward.backward is None
    for spelled in ("f16", tl.f16, np.float16, np.dtype("float16")):
        assert MOD.GeluForwardDispatch.dispatch(spelled, block_size=64).kernel == MOD.GeluForward[tl.f16](64)
    assert MOD.GeluForwardDispatch.dispatch(ml_dtypes.bfloat16, 64).kernel.dtypes == (tl.bf16,)
    assert MOD.GeluForwardDispatch().dispatch("f64", 64).id == "gelu_forward__f64__64"
    assert MOD.GeluForwardDispatch.backward_kernel() is MOD.GeluBackward


def test_backward_given_as_function_or_class():
    a = fwd_with_function_backward.Dispatch.dispatch("f32", 32)
    b = fwd_with_class_backward.Dispatch.dispatch("f32", 32)
    assert a.backward.kernel == b.backward.kernel == MOD.GeluBackward[tl.f32](32)


def test_dispatch_errors():
    with pytest.raises(UnsupportedDtypeError) as ei:
        MOD.GeluForwardDispatch.dispatch(tl.i32, 1024)
    assert str(ei.value) == "gelu_forward does not support dtype i32 (supported: f16, bf16, f32, f64)"
    assert isinstance(ei.value, eggpu.KernelError)
    with pytest.raises(UnsupportedDtypeError, match=r"^explicit_dtypes does not support dtype f64 "
                       r"\(supported: f32, f16\)$"):
        MOD.ExplicitDtypesDispatch.dispatch(np.float64, tl.f32)
    with pytest.raises(UnknownDtypeError, match=r"gelu_forward: unknown dtype 'fp32'"):
        MOD.GeluForwardDispatch.dispatch("fp32", 1024)
    with pytest.raises(UnknownDtypeError, match=r"gelu_forward: .* is not a dtype"):
        MOD.GeluForwardDispatch.dispatch(np.dtype("complex64"), 1024)
    with pytest.raises(ConstexprArgumentError, match=r"gelu_forward: GeluForward\[f32\]\(\.\.\.\) takes 1 "
                       r"constexpr argument \(block_size\), got 2"):
        MOD.GeluForwardDispatch.dispatch("f32", 1, 2)


def test_cannot_infer_supported_dtypes():
    def adam(p_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
        pass

    with pytest.raises(DtypeInferenceError) as ei:
        eggpu.kernel(backward="x")(adam)
    assert str(ei.value) == (
        "cannot infer supported dtypes: a @kernel that opts into dispatch without an explicit dtypes=[...] must "
        "have a dtype parameter bound by one of Dtype/Num/Int/Float/Bool"
    )
    assert isinstance(ei.value, eggpu.KernelError)


def test_decorator_argument_errors():
    def k(x_ptr: tl.Pointer[D], BLOCK: tl.constexpr):
        pass

    with pytest.raises(DecoratorArgumentError, match=r"k: @kernel got an unknown argument 'dtype' \(did you mean "
                       r"dtypes=\?\); it accepts dtypes=\[\.\.\.\] and backward=\.\.\."):
        eggpu.kernel(dtype=[tl.f32])(k)
    with pytest.raises(DuplicateDtypeError, match=r"k: dtypes=\[\.\.\.\] lists f32 twice"):
        eggpu.kernel(dtypes=[tl.f32, "f32"])(k)
    with pytest.raises(UnknownDtypeError, match=r"k: unknown dtype 'f31'"):
        eggpu.kernel(dtypes=["f31"])(k)
    with pytest.raises(UnsupportedDtypeError, match=r"k: dtypes=\[\.\.\.\] lists i32, which is outside the bound "
                       r"of dtype parameter D: Float"):
        eggpu.kernel(dtypes=[tl.i32])(k)
    with pytest.raises(DecoratorArgumentError, match=r"k: dtypes= must be a list of dtypes"):
        eggpu.kernel(dtypes="f32")(k)
    with pytest.raises(DecoratorArgumentError, match=r"k: backward= must be a @kernel function, its Kernel class"):
        eggpu.kernel(backward=42)(k)
    for err in (DecoratorArgumentError, DuplicateDtypeError, UnknownDtypeError):
        assert issubclass(err, eggpu.KernelError)


def test_backward_errors():
    with pytest.raises(BackwardKernelError) as ei:
        fwd_other_consts.Dispatch.dispatch("f32", 64)
    assert str(ei.value) == (
        "fwd_other_consts: backward kernel other_consts_backward has constexpr parameters (BLOCK, EXTRA) but "
        "fwd_other_consts has (BLOCK_SIZE); they must match so dispatch can build both with the same constants"
    )
    with pytest.raises(BackwardKernelError, match=r"fwd_missing_backward: backward='not_defined_anywhere' is not "
                       r"defined in module"):
        fwd_missing_backward.Dispatch.dispatch("f32", 64)

    def k(x_ptr: tl.Pointer[D], BLOCK_SIZE: tl.constexpr):
        pass

    with pytest.raises(BackwardKernelError, match=r"k: backward kernel other_consts_backward has constexpr "
                       r"parameters \(BLOCK, EXTRA\) but k has \(BLOCK_SIZE\)"):
        eggpu.kernel(backward=other_consts_backward)(k)  # checked at decoration when not a name


def test_int_dispatch_pairs_backward():
    inst = MOD.IntForwardDispatch.dispatch(np.int16, 8)
    assert inst.kernel.id == "int_forward__i16__8" and inst.backward.kernel.id == "int_backward__i16__8"


def test_jit_and_kernel_decorator_forms():
    def helper(x):
        return x

    j = eggpu.jit(helper)
    assert j.fn is helper and helper.__eggpu_jit__ is True and j.__name__ == "helper" and j(3) == 3
    assert eggpu.jit(j) is j
    with pytest.raises(DecoratorArgumentError):
        eggpu.jit(3)
    with pytest.raises(DecoratorArgumentError, match="decorates a function"):
        eggpu.kernel(3)

    def plain(x_ptr: tl.Pointer[tl.f32]):
        tl.store(x_ptr, 1.0)

    assert eggpu.kernel()(plain) is plain and plain.Kernel().id == "plain"
