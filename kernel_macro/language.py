"""The kernel language: ``import eggpu.language as tl``.

Triton's names and semantics. Everything here is *declarative*: the names are what a ``@kernel``
body refers to, and the frontend (:mod:`eggpu.kernel_macro.frontend`) gives them their meaning
while it lowers the body to the tensor IR. Called as ordinary Python (outside a kernel being
compiled) every function raises :class:`~eggpu.KernelError` explaining how to launch a kernel.

Names:

* dtypes ``bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64`` (the
  :class:`eggpu.ir.DType` objects themselves) and the FP8 storage dtypes ``fp8e4nv``, ``fp8e5``
  (Triton's ``float8e4nv``, ``float8e5``);
* dtype categories ``Dtype`` > ``Num`` > ``Int``/``Float`` and ``Dtype`` > ``Bool``, usable as
  ``TypeVar`` bounds (``D = TypeVar("D", bound=tl.Float)``);
* ``Pointer[T]`` (``T`` a dtype or a dtype ``TypeVar``) and ``constexpr`` for annotations;
* the functions listed in ``__all__``.
"""

from __future__ import annotations

import builtins

from eggpu.ir.dtypes import DType

from .language_base import _JIT_CODES, _KERNEL_CODES, _builtin  # noqa: F401 - registries
from .language_debug import debug_barrier, device_assert, device_print, static_assert, static_print
from .language_namespaces import (  # noqa: F401 - re-exported
    MATH_NAMES,
    ExternStubs,
    build_namespaces,
    extern_stubs,
    internal_namespaces,
    libdevice_names,
)
from .language_types import (  # noqa: F401 - re-exported: tl.f32, tl.float32, tl.Pointer, ...
    CATEGORY_CLASSES,
    TRITON_DTYPE_NAMES,
    UNSUPPORTED_DTYPES,
    Bool,
    Dtype,
    Float,
    Int,
    Num,
    Pointer,
    PointerAnnotation,
    PropagateNan,
    bf16,
    bfloat16,
    bool,
    const,
    const_pointer_type,
    constexpr,
    dtype,
    f16,
    f32,
    f64,
    float8e4b15,
    float8e4nv,
    float8e5,
    float16,
    float32,
    float64,
    fp8e4b15,
    fp8e4nv,
    fp8e5,
    i8,
    i16,
    i32,
    i64,
    int1,
    int8,
    int16,
    int32,
    int64,
    pointer_type,
    tensor,
    tensor_descriptor,
    tensor_descriptor_base,
    u8,
    u16,
    u32,
    u64,
    uint8,
    uint16,
    uint32,
    uint64,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

_builtin_bool = builtins.bool

# ---------------------------------------------------------------- program model


@_builtin
def program_id(axis: int) -> Any:
    """Index of this program along grid axis ``axis`` (0, 1 or 2): an i32 scalar."""


@_builtin
def num_programs(axis: int) -> Any:
    """Number of programs along grid axis ``axis``: an i32 scalar."""


@_builtin
def cdiv(a: Any, b: Any) -> Any:
    """Ceiling division ``(a + b - 1) // b``; folded when both are compile-time ints."""


@_builtin
def arange(start: int, end: int) -> Any:
    """The i32 block ``[start, start+1, ..., end-1]``; bounds must be compile-time ints."""


@_builtin
def full(shape: Any, value: Any, dtype: DType) -> Any:
    """A block of ``shape`` (compile-time ints; ``[]`` = scalar) filled with ``value``."""


@_builtin
def zeros(shape: Any, dtype: DType) -> Any:
    """``full(shape, 0, dtype)``."""


@_builtin
def zeros_like(input: Any) -> Any:
    """Zeros with the shape and dtype of ``input``."""


@_builtin
def expand_dims(input: Any, axis: Any) -> Any:
    """Insert a size-1 axis at ``axis`` (an int or a tuple of ints; negative counts from the end)."""


@_builtin
def reshape(input: Any, *shape: Any, can_reorder: _builtin_bool = False) -> Any:
    """Row-major reshape to a compile-time shape with the same number of elements: ``reshape(x, (M, N))``
    or ``reshape(x, M, N)``. ``can_reorder=True`` (Triton's permission to reorder elements) is
    accepted; eggpu always keeps the row-major order."""


@_builtin
def view(input: Any, *shape: Any) -> Any:
    """Triton's ``view``: a reshape that may reorder elements; eggpu keeps the row-major order."""


@_builtin
def ravel(input: Any, can_reorder: _builtin_bool = False) -> Any:
    """Flatten to 1-D (row-major)."""


@_builtin
def trans(input: Any, *dims: int) -> Any:
    """Permute axes: ``trans(x)`` reverses them (transpose of a 2-D block); ``trans(x, 1, 0, 2)``."""


@_builtin
def permute(input: Any, *dims: int) -> Any:
    """Permute axes: ``permute(x, 1, 0, 2)`` or ``permute(x, (1, 0, 2))`` (``trans`` with explicit dims)."""


@_builtin
def broadcast_to(input: Any, *shape: Any) -> Any:
    """Broadcast ``input`` to ``shape`` (numpy rules: size-1 dims repeat, missing leading dims added)."""


@_builtin
def broadcast(input: Any, other: Any) -> Any:
    """Broadcast two blocks to their common shape; returns the pair."""


# ---------------------------------------------------------------- memory


@_builtin
def load(ptr: Any, mask: Any = None, other: Any = None, boundary_check: Any = (), padding_option: Any = "",
         cache_modifier: str = "", eviction_policy: str = "", volatile: _builtin_bool = False) -> Any:
    """Load the elements ``ptr`` points to. Masked-off lanes are not read and take ``other``
    (converted to the pointee dtype; undefined when ``other`` is None). ``ptr`` and ``mask``
    broadcast against each other. ``cache_modifier`` (``""``, ``".ca"``, ``".cg"``, ``".cv"``) and
    ``eviction_policy`` (``""``, ``"evict_first"``, ``"evict_last"``) are Triton's cache hints:
    checked, and without effect on the result. On a block pointer (``tl.make_block_ptr``),
    ``boundary_check`` lists the dimensions to bound-check and ``padding_option`` (``""``,
    ``"zero"``, ``"nan"``) fills the out-of-bounds elements; ``mask``/``other`` are then not
    allowed. ``volatile=True``: on a GPU each element is read by its own ``ld.volatile`` (never merged
    with another load or reused); the interpreter and ``run_cpu`` read memory as any load."""


@_builtin
def store(ptr: Any, value: Any, mask: Any = None, boundary_check: Any = (), cache_modifier: str = "",
          eviction_policy: str = "") -> Any:
    """Store ``value`` (converted to the pointee dtype, broadcast to ``ptr``'s shape) where
    ``mask`` is true (on a block pointer: where the ``boundary_check`` dimensions are in bounds). ``cache_modifier`` (``""``, ``".wb"``, ``".cg"``, ``".cs"``, ``".wt"``) and
    ``eviction_policy`` are hints without effect on the result."""


def _atomic_fn(name: str, doc: str):
    """The stub of the atomic read-modify-write ``tl.<name>(ptr, val, mask=None, sem=None, scope=None)``."""

    def fn(ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
        ...

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = __name__
    return _builtin(fn)


atomic_add = _atomic_fn(
    "atomic_add", """Atomically ``*ptr += val``; returns the old values. As in Triton, every atomic's ``sem``
    defaults to ``"acq_rel"`` (or relaxed/acquire/release) and ``scope`` to ``"gpu"`` (cta, sys).""")
atomic_max = _atomic_fn("atomic_max", "Atomically ``*ptr = max(*ptr, val)``; returns the old values.")
atomic_min = _atomic_fn("atomic_min", "Atomically ``*ptr = min(*ptr, val)``; returns the old values.")
atomic_xchg = _atomic_fn("atomic_xchg", "Atomically ``*ptr = val``; returns the old values.")
atomic_and = _atomic_fn("atomic_and", "Atomically ``*ptr &= val`` (integer pointers); returns the old values.")
atomic_or = _atomic_fn("atomic_or", "Atomically ``*ptr |= val`` (integer pointers); returns the old values.")
atomic_xor = _atomic_fn("atomic_xor", "Atomically ``*ptr ^= val`` (integer pointers); returns the old values.")


@_builtin
def atomic_cas(ptr: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> Any:
    """Atomically ``*ptr = val if *ptr == cmp``; returns the old values."""


# ---------------------------------------------------------------- compute


@_builtin
def where(condition: Any, x: Any, y: Any) -> Any:
    """``condition ? x : y`` lane by lane (both sides are computed); operands broadcast."""


@_builtin
def minimum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> Any:
    """Elementwise minimum (floats: a NaN operand is ignored; with ``propagate_nan=tl.PropagateNan.ALL``
    a NaN operand gives NaN)."""


@_builtin
def maximum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> Any:
    """Elementwise maximum (floats: a NaN operand is ignored, or propagated with ``PropagateNan.ALL``)."""


@_builtin
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = PropagateNan.NONE) -> Any:  # noqa: A002
    """``minimum(maximum(x, min), max)`` (Triton's parameter names ``min``/``max``)."""


@_builtin
def abs(x: Any) -> Any:  # noqa: A001
    """``|x|`` (ints wrap: ``abs(INT_MIN) == INT_MIN``)."""


# ---------------------------------------------------------------- elementwise math functions
# The table of the elementwise math functions whose parameters are all operands, one row each:
# ``name = _math("name(x, y)", KIND, "Docstring.")``. KIND is _FLOAT (a float operand: the docstring
# gains "Needs a float operand ..."), _INT (an integer operand: "Needs an integer operand.") or _PLAIN
# (the docstring says what the operands are); _FLOAT_T and _PLAIN_T also mark an op of the op table's
# TRANSCENDENTAL trait (listed in TRANSCENDENTAL_STUBS, hence in __all__ and tl.extra.libdevice).
# To add a function, add its row; tests/test_op_coverage.py names what else an op needs (its
# ir/ops.py row, its frontend entry, ...). A function with options (``fdiv(x, y, ieee_rounding=False)``)
# is an ``@_builtin def`` below.

#: the stubs of the op table's TRANSCENDENTAL ops, in definition order (kept here rather than
#: read from eggpu.ir.ops: a cache hit imports this module and must not import the op table;
#: tests/test_op_coverage.py checks this list against the op table)
TRANSCENDENTAL_STUBS: list[str] = []

#: the kinds of a row: (the sentence appended to the docstring, whether the op is TRANSCENDENTAL)
_FLOAT = (" Needs a float operand (convert ints with ``x.to(tl.f32)``).", False)
_FLOAT_T = (_FLOAT[0], True)
_INT = (" Needs an integer operand.", False)
_PLAIN = ("", False)
_PLAIN_T = ("", True)


def _math(signature: str, kind: tuple[str, bool], doc: str) -> Any:
    """The stub of the math function ``signature`` (``"atan2(x, y)"``: its name, then its operands),
    documented by ``doc`` plus the sentence of ``kind``; a transcendental ``kind`` appends the name
    to TRANSCENDENTAL_STUBS."""
    name, _, rest = signature.partition("(")
    params = ", ".join(f"{p.strip()}: Any" for p in rest.rstrip(")").split(","))
    sentence, transcendental = kind
    if transcendental:
        TRANSCENDENTAL_STUBS.append(name)
    # A generated def (as dataclasses writes its __init__): the stub has the row's exact signature, so
    # help(), inspect.signature and the frontend's argument binding see the operands, and a call with
    # the wrong count is Python's TypeError, without importing inspect (a cache hit must not). exec
    # inherits this module's ``from __future__ import annotations``: ``Any`` stays the string 'Any'.
    ns: dict[str, Any] = {}
    exec(f"def {name}({params}) -> Any:\n    pass\n", ns)
    fn = ns[name]
    fn.__doc__ = doc + sentence
    fn.__module__ = __name__
    return _builtin(fn)


exp = _math("exp(x)", _FLOAT_T, "``e**x``.")
exp2 = _math("exp2(x)", _FLOAT_T, "``2**x``.")
log = _math("log(x)", _FLOAT_T, "Natural logarithm.")
log2 = _math("log2(x)", _FLOAT_T, "Base-2 logarithm.")
sqrt = _math("sqrt(x)", _FLOAT, "Square root (correctly rounded).")
rsqrt = _math("rsqrt(x)", _FLOAT_T, "``1/sqrt(x)``.")
sin = _math("sin(x)", _FLOAT_T, "Sine.")
cos = _math("cos(x)", _FLOAT_T, "Cosine.")
tanh = _math("tanh(x)", _FLOAT_T, "Hyperbolic tangent.")
erf = _math("erf(x)", _FLOAT_T, "Error function.")
asin = _math("asin(x)", _FLOAT_T, "Arcsine in radians (NaN outside [-1, 1]).")
acos = _math("acos(x)", _FLOAT_T, "Arccosine in radians (NaN outside [-1, 1]).")
atan = _math("atan(x)", _FLOAT_T, "Arctangent in radians.")
sinh = _math("sinh(x)", _FLOAT_T, "Hyperbolic sine.")
cosh = _math("cosh(x)", _FLOAT_T, "Hyperbolic cosine.")
asinh = _math("asinh(x)", _FLOAT_T, "Inverse hyperbolic sine.")
acosh = _math("acosh(x)", _FLOAT_T, "Inverse hyperbolic cosine (NaN below 1).")
atanh = _math("atanh(x)", _FLOAT_T, "Inverse hyperbolic tangent (+-inf at +-1, NaN outside [-1, 1]).")
tan = _math("tan(x)", _FLOAT_T, "Tangent (radians).")
log10 = _math("log10(x)", _FLOAT_T, "Base-10 logarithm.")
log1p = _math("log1p(x)", _FLOAT_T, "``log(1 + x)``, accurate for small ``x`` (-inf at -1, NaN below).")
expm1 = _math("expm1(x)", _FLOAT_T, "``e**x - 1``, accurate for small ``x``.")
exp10 = _math("exp10(x)", _FLOAT_T, "``10**x``.")
cbrt = _math("cbrt(x)", _FLOAT_T, "Cube root (odd: ``cbrt(-8.0) == -2.0``).")
erfc = _math("erfc(x)", _FLOAT_T, "Complementary error function ``1 - erf(x)``, accurate where erf is near 1.")
lgamma = _math("lgamma(x)", _FLOAT_T, "``log(|gamma(x)|)`` (+inf at 0 and the negative integers).")
tgamma = _math("tgamma(x)", _FLOAT_T, "The gamma function (+-inf at +-0, NaN at the negative integers).")
sigmoid = _math("sigmoid(x)", _FLOAT, "``1 / (1 + exp(-x))`` computed in x's dtype.")
floor = _math("floor(x)", _FLOAT, "Round toward -inf.")
ceil = _math("ceil(x)", _FLOAT, "Round toward +inf.")
trunc = _math("trunc(x)", _FLOAT, "Round toward zero (exact; ``trunc(-0.5) == -0.0``).")
rint = _math("rint(x)", _FLOAT, "Round to the nearest integer, ties to even (exact; ``rint(2.5) == 2.0``).")
nearbyint = _math("nearbyint(x)", _FLOAT, "``rint``: the nearest integer, ties to even (exact).")
round = _math("round(x)", _FLOAT, "Round to the nearest integer, ties away from zero (exact; C's ``round``: ``round(2.5) == 3.0``, ``round(-0.5) == -1.0``).")
isnan = _math("isnan(x)", _FLOAT, "Whether ``x`` is NaN, as a bool block (Triton's ``libdevice.isnan``: int1).")
isinf = _math("isinf(x)", _FLOAT, "Whether ``x`` is +-inf, as a bool block.")
finitef = _math("finitef(x)", _FLOAT, "Whether ``x`` is neither NaN nor +-inf, as a bool block (libdevice's f32 name; eggpu takes any float dtype).")
isfinited = _math("isfinited(x)", _FLOAT, "Whether ``x`` is neither NaN nor +-inf, as a bool block (libdevice's f64 name; eggpu takes any float dtype).")
signbit = _math("signbit(x)", _FLOAT, "1 where the sign bit of ``x`` is set (-0.0 and negative NaNs included), else 0, as i32 (Triton's ``libdevice.signbit`` result dtype).")
fma = _math("fma(x, y, z)", _PLAIN, "``x * y + z`` rounded once (floats).")
sqrt_rn = _math("sqrt_rn(x)", _FLOAT, "Square root rounded to nearest (``sqrt`` is already correctly rounded).")
atan2 = _math("atan2(x, y)", _PLAIN_T, "C's ``atan2(x, y)``: the angle of the point ``(y, x)`` in radians, in [-pi, pi] (libdevice's argument order: the ordinate first). Float operands.")
pow = _math("pow(x, y)", _PLAIN_T, "C's ``pow(x, y)`` = ``x ** y`` (libdevice's ``__nv_pow``): float operands (a literal exponent takes x's dtype; convert an integer block first); ``pow(x, 0) == 1`` even for NaN ``x``, a negative base with a non-integer exponent gives NaN.")
hypot = _math("hypot(x, y)", _PLAIN_T, "``sqrt(x*x + y*y)`` without intermediate overflow or underflow; +inf when either is +-inf.")
popc = _math("popc(x)", _INT, "The number of set bits of ``x``'s pattern, as i32 (Triton's result dtype).")
clz = _math("clz(x)", _INT, "The leading zero bits of ``x``'s pattern (its width for 0), as i32.")
ffs = _math("ffs(x)", _INT, "1 + the index of ``x``'s lowest set bit (0 for 0), as i32.")
brev = _math("brev(x)", _INT, "``x`` with its bits in reverse order, in ``x``'s dtype.")
mulhi = _math("mulhi(x, y)", _PLAIN, "The high half of the double-width product of two integers (signed for signed dtypes: libdevice's ``__nv_mulhi``/``__nv_mul64hi``; unsigned: ``__nv_umulhi``/``__nv_umul64hi``), in their dtype.")
umulhi = _math("umulhi(x, y)", _PLAIN, "The high 32 bits of the 64-bit product of two 32-bit integers (signed for i32, unsigned for u32).")
fmod = _math("fmod(x, y)", _PLAIN, "C's ``fmod``: ``x - trunc(x / y) * y`` exactly, with x's sign (the IR's float ``rem``).")
copysign = _math("copysign(x, y)", _PLAIN, "``|x|`` with the sign bit of ``y`` (exact; NaNs included).")
fdim = _math("fdim(x, y)", _PLAIN, "C's ``fdim``: ``x - y`` when ``x > y``, else +0; NaN when either is NaN.")
div_rn = _math("div_rn(x, y)", _PLAIN, "``x / y`` rounded to nearest (IEEE division, as ``/`` on floats).")


def _arith_fn(name: str, op: str):
    """The stub of Triton's functional ``tl.<name>(x, y, sanitize_overflow=True)`` (``x op y``)."""

    def fn(x: Any, y: Any, sanitize_overflow: _builtin_bool = True) -> Any:
        ...

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``x {op} y`` (Triton's functional form; pointers as with ``{op}``). ``sanitize_overflow`` "
                  "is accepted: Triton checks integer overflow with it under ``debug=True``, eggpu's integers wrap.")
    fn.__module__ = __name__
    return _builtin(fn)


add = _arith_fn("add", "+")
sub = _arith_fn("sub", "-")
mul = _arith_fn("mul", "*")


@_builtin
def fdiv(x: Any, y: Any, ieee_rounding: _builtin_bool = False) -> Any:
    """``x / y`` on floats. Triton allows an approximate quotient unless ``ieee_rounding``; eggpu
    always computes the IEEE quotient."""


@_builtin
def inline_asm_elementwise(asm: str, constraints: str, args: Any, dtype: Any, is_pure: _builtin_bool,
                           pack: int) -> Any:
    """Run PTX ``asm`` once per element of the broadcast ``args`` (LLVM inline-asm syntax: ``$0``
    is the result of ``dtype``, ``$1``.. the arguments; ``constraints`` as ``"=r,r,r"``). A tuple
    of dtypes gives a tuple of results (``$0``, ``$1``, ... first). GPU only: the interpreter and
    ``run_cpu`` refuse a kernel that uses it. eggpu supports ``pack=1``."""


@_builtin
def cast(input: Any, dtype: DType, fp_downcast_rounding: Any = None, bitcast: _builtin_bool = False) -> Any:
    """Convert ``input`` to ``dtype`` (value conversion; ``bitcast=True`` reinterprets bits of equal
    width). ``fp_downcast_rounding`` (float -> narrower float only) is None or ``"rtne"`` (round to
    nearest even, the default) or ``"rtz"`` (round toward zero), as in Triton."""


# ---------------------------------------------------------------- reductions


@_builtin
def sum(input: Any, axis: Any = None, keep_dims: _builtin_bool = False, dtype: Any = None) -> Any:  # noqa: A001
    """Sum along ``axis`` (None: all axes). Integers narrower than 32 bits (and bool) sum in 32 bits.
    ``dtype=`` converts the input to that dtype first (Triton's meaning)."""


@_builtin
def max(input: Any, axis: Any = None, return_indices: _builtin_bool = False,  # noqa: A001
        return_indices_tie_break_left: _builtin_bool = True, keep_dims: _builtin_bool = False) -> Any:
    """Maximum along ``axis`` (None: all axes); with ``return_indices=True`` the pair (maximum,
    i32 index of its first occurrence). Parameters in Triton's order."""


@_builtin
def min(input: Any, axis: Any = None, return_indices: _builtin_bool = False,  # noqa: A001
        return_indices_tie_break_left: _builtin_bool = True, keep_dims: _builtin_bool = False) -> Any:
    """Minimum along ``axis`` (None: all axes); ``return_indices=True`` as for ``max``."""


@_builtin
def argmax(input: Any, axis: Any = None, tie_break_left: _builtin_bool = True,
           keep_dims: _builtin_bool = False) -> Any:
    """i32 index of the first maximum along ``axis`` (None: of the flattened block).
    ``tie_break_left=False`` lets Triton return any of tied maxima; eggpu returns the first."""


@_builtin
def argmin(input: Any, axis: Any = None, tie_break_left: _builtin_bool = True,
           keep_dims: _builtin_bool = False) -> Any:
    """i32 index of the first minimum along ``axis`` (None: of the flattened block)."""


@_builtin
def softmax(input: Any, dim: Any = None, keep_dims: _builtin_bool = False,
            ieee_rounding: _builtin_bool = False) -> Any:
    """``exp(x - max(x, dim)) / sum(exp(x - max(x, dim)), dim)`` along ``dim`` (default 0), the shape
    of ``input``; floats only."""


@_builtin
def dot(a: Any, b: Any, acc: Any = None, input_precision: Any = None, allow_tf32: Any = None,
        max_num_imprecise_acc: Any = None, out_dtype: DType = f32) -> Any:
    """Matrix product of 2-D blocks ``[M,K] x [K,N]``; floats accumulate in f32 (ints in i32),
    plus ``acc`` when given (the result then has ``acc``'s dtype). ``out_dtype`` follows Triton:
    f16 inputs with ``out_dtype=tl.float16`` give f16 (accumulated in f32, rounded once; ``acc``
    must be f16), f32/bf16 inputs give f32 and integer inputs i32 whatever it says (f32/f16 for
    floats, f32/i32 for ints); ``tl.bfloat16`` is refused.
    ``input_precision="ieee"`` (the default; Triton's default for f32 is TF32) multiplies f32 in
    full precision; ``"tf32"`` (or ``allow_tf32=True``) rounds f32 operands to TF32 first (tensor
    cores on sm_80+, exact f32 before sm_80); other precisions are refused."""


@_builtin
def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: _builtin_bool = False, lhs_k_pack: _builtin_bool = True,
               rhs_k_pack: _builtin_bool = True, out_dtype: DType = f32) -> Any:
    """Microscaled matrix product ``[M,K] x [K,N]`` (Triton's ``tl.dot_scaled``, OCP MX formats):
    each operand in ``"e4m3"``, ``"e5m2"`` (FP8 blocks or their ``u8`` bits), ``"e2m1"`` (``u8``,
    two values per byte, the first in the low nibble, packed along K unless ``*_k_pack=False``),
    ``"bf16"`` or ``"fp16"``; each scale None or a ``u8`` block of e8m0 exponents, one per 32
    elements along K (``lhs_scale``: ``[M, K//32]``, ``rhs_scale``: ``[N, K//32]``; 255 is NaN).
    Every element is multiplied by ``2**(scale - 127)`` in f32, rounded once to bf16 (f16 when a
    format is ``"fp16"``), and the products are accumulated in f32 (plus ``acc``, an f32 block)."""


# ---------------------------------------------------------------- compile-time helpers


@_builtin
def static_range(start: int, end: int | None = None, step: int = 1) -> Any:
    """``for i in tl.static_range(...)`` unrolls the loop at compile time (bounds are compile-time ints)."""


@_builtin
def range(arg1: Any, arg2: Any = None, step: Any = None, num_stages: Any = None,  # noqa: A001
          loop_unroll_factor: Any = None, disallow_acc_multi_buffer: _builtin_bool = False,
          flatten: _builtin_bool = False, warp_specialize: _builtin_bool = False) -> Any:
    """``for i in tl.range(lo, hi, step)`` is ``for i in range(lo, hi, step)``; Triton's pipelining
    hints (``num_stages``, ``loop_unroll_factor``, ...) are accepted and have no effect."""


@_builtin
def multiple_of(input: Any, values: Any) -> Any:
    """Triton's hint that every element of ``input`` is a multiple of ``values``; returns
    ``input`` unchanged (the hint does not change results)."""


@_builtin
def max_contiguous(input: Any, values: Any) -> Any:
    """Triton's hint that ``input`` has runs of ``values`` consecutive values; returns ``input``."""


@_builtin
def max_constancy(input: Any, values: Any) -> Any:
    """Triton's hint that ``input`` has runs of ``values`` equal values; returns ``input``."""


@_builtin
def assume(cond: Any) -> Any:
    """Triton's hint that ``cond`` holds; no effect on results (a compile-time False is an error)."""



# Triton's scans, shuffles and random numbers (declared in language_triton.py)
from .language_triton import (  # noqa: E402
    advance,
    associative_scan,
    bitonic_merge,
    cat,
    cumprod,
    cumsum,
    flip,
    gather,
    histogram,
    interleave,
    join,
    load_tensor_descriptor,
    make_block_ptr,
    make_tensor_descriptor,
    map_elementwise,
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    reduce,
    reduce_or,
    sort,
    split,
    squeeze,
    store_tensor_descriptor,
    swizzle2d,
    topk,
    uint_to_uniform_float,
    unsqueeze,
    xor_sum,
)

__all__ = [
    # dtypes
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "bfloat16", "float32", "float64", "fp8e4nv", "fp8e5", "fp8e4b15", "float8e4nv", "float8e5",
    "float8e4b15", "dtype", "PropagateNan", "math", "extra",
    # categories and annotations
    "Dtype", "Num", "Int", "Float", "Bool", "Pointer", "PointerAnnotation", "pointer_type", "const",
    "const_pointer_type", "constexpr",
    "tensor", "tensor_descriptor", "tensor_descriptor_base",
    # program model
    "program_id", "num_programs", "cdiv", "arange", "full", "zeros", "zeros_like", "expand_dims",
    "reshape", "view", "ravel", "trans", "permute", "broadcast_to", "broadcast", "swizzle2d", "squeeze", "unsqueeze",
    # memory
    "load", "store", "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor",
    "store_tensor_descriptor", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "atomic_and",
    "atomic_or", "atomic_xor",
    # compute
    "where", "minimum", "maximum", "clamp", "abs", "sqrt",
    *TRANSCENDENTAL_STUBS,  # exp, log, sin, ..., atan2: the stubs of the op table's TRANSCENDENTAL ops
    "sigmoid", "floor", "ceil", "trunc", "rint", "round", "fma", "cast", "add", "sub", "mul", "sqrt_rn", "div_rn", "fdiv", "umulhi", "inline_asm_elementwise",
    "map_elementwise",
    # reductions, scans, shuffles, random numbers
    "sum", "max", "min", "argmax", "argmin", "softmax", "dot", "dot_scaled", "associative_scan", "reduce", "cumsum",
    "cumprod", "xor_sum", "reduce_or", "sort", "topk", "bitonic_merge", "gather", "join", "split", "interleave",
    "cat", "flip",
    "histogram", "philox_impl", "philox", "randint4x", "randint", "rand", "rand4x", "randn", "randn4x",
    "uint_to_uniform_float", "pair_uniform_to_normal",
    "static_range", "static_assert", "static_print", "range",  # compile time and hints
    "multiple_of", "max_contiguous", "max_constancy", "assume", "debug_barrier", "device_print", "device_assert",
]

BUILTIN_FUNCTIONS: dict[str, Any] = {
    n: v for n, v in dict(globals()).items() if callable(v) and hasattr(v, "__eggpu_builtin__")
}

# ---------------------------------------------------------------- tl.math and libdevice

EXTERN_FUNCTIONS = ExternStubs(__name__)
"""libdevice's functions without an op of their own (one ``libdevice`` op each), by Triton name."""
LIBDEVICE_NAMES = libdevice_names(TRANSCENDENTAL_STUBS) + tuple(EXTERN_FUNCTIONS)
math, extra = build_namespaces(globals(), __name__, libdevice_names(TRANSCENDENTAL_STUBS), EXTERN_FUNCTIONS)
libdevice = extra.libdevice
core, standard = internal_namespaces(globals(), __all__, __name__)



def __getattr__(name: str) -> Any:
    """A Triton name eggpu does not have says so (``tl.float8e4b15``, ``tl.map_elementwise``, ...)."""
    if name.startswith("__"):  # dunder probes (pickling, typing, import machinery)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in ("core", "standard"):  # not in __all__ (internals): eggpu.language reaches them here
        return globals()[name]
    reason = UNSUPPORTED_DTYPES.get(name)
    if reason is None:
        from .unsupported import UNSUPPORTED

        reason = UNSUPPORTED.get(name)
    if reason is not None:
        raise AttributeError(f"tl.{name} is not supported by eggpu: {reason}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
