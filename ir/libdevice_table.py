"""Triton's libdevice functions that eggpu provides through the generic ``libdevice`` op.

The functions of ``triton.language.extra.cuda.libdevice`` that are not already ops of their own
(exp, popc, fmod, ... in :mod:`eggpu.ir.ops`) are all one op, ``libdevice``, whose ``symbol``
attribute names the ``__nv_*`` function called (Triton's ``extern_elementwise``). This module is
the data: :data:`FUNCTIONS` maps each Triton name to its overloads ``(operand dtypes, symbol,
result dtype)``, copied from Triton's ``python/triton/language/extra/cuda/libdevice.py`` (result
dtypes as Triton states them: ``float2uint_rn`` gives i32, the unsigned value's bits), and
:data:`SYMBOLS` is the inverse. It imports nothing heavy (the op table's type rule reads it).

Where each function runs (:func:`host_kind`):

* ``"libm"``: the C library has the same function (``__nv_nextafterf`` -> ``nextafterf``); the
  interpreter and run_cpu call it.
* ``"bitcast"``: a bit reinterpretation (``float_as_int``), exact everywhere.
* ``"exact"``: eggpu's own reference (:mod:`eggpu.ir.libdevice_refs`): exact for the rounding-mode
  arithmetic and conversions, the integer functions and ``saturatef``; for ``sinpi``, ``cospi``,
  ``rcbrt``, ``rhypot``, ``norm3d``, ``cyl_bessel_i0``... within a few ulp, as libdevice itself. run_cpu calls the
  same reference per lane.
* ``"gpu"``: GPU only (the ``fast_*`` hardware approximations and ``rcp64h``, whose bits are the
  GPU's); the interpreter and run_cpu refuse them with a located error naming the function, PTX
  compiles.
"""

from __future__ import annotations

Overload = tuple[tuple[str, ...], str, str]

def _pair(f32: str, f64: str, arity: int = 1, *, f64_first: bool = False) -> tuple[Overload, ...]:
    """The two overloads of a float function of ``arity`` operands: all f32 -> f32 calling
    ``__nv_<f32>``, all f64 -> f64 calling ``__nv_<f64>`` (in Triton's order: f32 first unless
    ``f64_first``)."""
    single: Overload = (("f32",) * arity, f"__nv_{f32}", "f32")
    double: Overload = (("f64",) * arity, f"__nv_{f64}", "f64")
    return (double, single) if f64_first else (single, double)


# One row a function: "args -> result" for one overload calling __nv_<name>; with "float" in it, the
# f32/f64 pair named as in libm (__nv_<name>f, __nv_<name>); _pair(...) for another f32/f64 pair of
# float functions; else the overloads written out.
_TABLE: dict[str, str | tuple[Overload, ...]] = {
    'byte_perm': 'i32, i32, i32 -> i32',
    'mul24': ((('i32', 'i32'), '__nv_mul24', 'i32'), (('u32', 'u32'), '__nv_umul24', 'u32')),
    'sad': ((('i32', 'i32', 'u32'), '__nv_sad', 'i32'), (('u32', 'u32', 'u32'), '__nv_usad', 'u32')),
    'rcp64h': 'f64 -> f64',
    'saturatef': 'f32 -> f32',
    'fma_rn': _pair('fmaf_rn', 'fma_rn', 3),
    'fma_rz': _pair('fmaf_rz', 'fma_rz', 3),
    'fma_rd': _pair('fmaf_rd', 'fma_rd', 3),
    'fma_ru': _pair('fmaf_ru', 'fma_ru', 3),
    'fast_dividef': ((('f32', 'f32'), '__nv_fast_fdividef', 'f32'),),
    'div_rz': _pair('fdiv_rz', 'ddiv_rz', 2),
    'div_rd': _pair('fdiv_rd', 'ddiv_rd', 2),
    'div_ru': _pair('fdiv_ru', 'ddiv_ru', 2),
    'rcp_rn': _pair('frcp_rn', 'drcp_rn'),
    'rcp_rz': _pair('frcp_rz', 'drcp_rz'),
    'rcp_rd': _pair('frcp_rd', 'drcp_rd'),
    'rcp_ru': _pair('frcp_ru', 'drcp_ru'),
    'sqrt_rz': _pair('fsqrt_rz', 'dsqrt_rz'),
    'sqrt_rd': _pair('fsqrt_rd', 'dsqrt_rd'),
    'sqrt_ru': _pair('fsqrt_ru', 'dsqrt_ru'),
    'add_rn': _pair('fadd_rn', 'dadd_rn', 2, f64_first=True),
    'add_rz': _pair('fadd_rz', 'dadd_rz', 2, f64_first=True),
    'add_rd': _pair('fadd_rd', 'dadd_rd', 2, f64_first=True),
    'add_ru': _pair('fadd_ru', 'dadd_ru', 2, f64_first=True),
    'mul_rn': _pair('fmul_rn', 'dmul_rn', 2, f64_first=True),
    'mul_rz': _pair('fmul_rz', 'dmul_rz', 2, f64_first=True),
    'mul_rd': _pair('fmul_rd', 'dmul_rd', 2, f64_first=True),
    'mul_ru': _pair('fmul_ru', 'dmul_ru', 2, f64_first=True),
    'double2float_rn': 'f64 -> f32',
    'double2float_rz': 'f64 -> f32',
    'double2float_rd': 'f64 -> f32',
    'double2float_ru': 'f64 -> f32',
    'double2int_rn': 'f64 -> i32',
    'double2int_rz': 'f64 -> i32',
    'double2int_rd': 'f64 -> i32',
    'double2int_ru': 'f64 -> i32',
    'double2uint_rn': 'f64 -> i32',
    'double2uint_rz': 'f64 -> i32',
    'double2uint_rd': 'f64 -> i32',
    'double2uint_ru': 'f64 -> i32',
    'int2double_rn': 'i32 -> f64',
    'uint2double_rn': 'u32 -> f64',
    'float2int_rn': 'f32 -> i32',
    'float2int_rz': 'f32 -> i32',
    'float2int_rd': 'f32 -> i32',
    'float2int_ru': 'f32 -> i32',
    'float2uint_rn': 'f32 -> i32',
    'float2uint_rz': 'f32 -> i32',
    'float2uint_rd': 'f32 -> i32',
    'float2uint_ru': 'f32 -> i32',
    'int2float_rn': 'i32 -> f32',
    'int2float_rz': 'i32 -> f32',
    'int2float_rd': 'i32 -> f32',
    'int2float_ru': 'i32 -> f32',
    'uint2float_rn': 'u32 -> f32',
    'uint2float_rz': 'u32 -> f32',
    'uint2float_rd': 'u32 -> f32',
    'uint2float_ru': 'u32 -> f32',
    'hiloint2double': 'i32, i32 -> f64',
    'double2loint': 'f64 -> i32',
    'double2hiint': 'f64 -> i32',
    'float2ll_rn': 'f32 -> i64',
    'float2ll_rz': 'f32 -> i64',
    'float2ll_rd': 'f32 -> i64',
    'float2ll_ru': 'f32 -> i64',
    'float2ull_rn': 'f32 -> i64',
    'float2ull_rz': 'f32 -> i64',
    'float2ull_rd': 'f32 -> i64',
    'float2ull_ru': 'f32 -> i64',
    'double2ll_rn': 'f64 -> i64',
    'double2ll_rz': 'f64 -> i64',
    'double2ll_rd': 'f64 -> i64',
    'double2ll_ru': 'f64 -> i64',
    'double2ull_rn': 'f64 -> i64',
    'double2ull_rz': 'f64 -> i64',
    'double2ull_rd': 'f64 -> i64',
    'double2ull_ru': 'f64 -> i64',
    'll2float_rn': 'i64 -> f32',
    'll2float_rz': 'i64 -> f32',
    'll2float_rd': 'i64 -> f32',
    'll2float_ru': 'i64 -> f32',
    'ull2float_rn': 'u64 -> f32',
    'ull2float_rz': 'u64 -> f32',
    'ull2float_rd': 'u64 -> f32',
    'ull2float_ru': 'u64 -> f32',
    'll2double_rn': 'i64 -> f64',
    'll2double_rz': 'i64 -> f64',
    'll2double_rd': 'i64 -> f64',
    'll2double_ru': 'i64 -> f64',
    'ull2double_rn': 'u64 -> f64',
    'ull2double_rz': 'u64 -> f64',
    'ull2double_rd': 'u64 -> f64',
    'ull2double_ru': 'u64 -> f64',
    'int_as_float': 'i32 -> f32',
    'float_as_int': 'f32 -> i32',
    'uint_as_float': 'u32 -> f32',
    'float_as_uint': 'f32 -> i32',
    'longlong_as_double': 'i64 -> f64',
    'double_as_longlong': 'f64 -> i64',
    'fast_sinf': 'f32 -> f32',
    'fast_cosf': 'f32 -> f32',
    'fast_log2f': 'f32 -> f32',
    'fast_logf': 'f32 -> f32',
    'fast_expf': 'f32 -> f32',
    'fast_tanf': 'f32 -> f32',
    'fast_exp10f': 'f32 -> f32',
    'fast_log10f': 'f32 -> f32',
    'fast_powf': 'f32, f32 -> f32',
    'hadd': ((('i32', 'i32'), '__nv_hadd', 'i32'), (('u32', 'u32'), '__nv_uhadd', 'u32')),
    'rhadd': ((('i32', 'i32'), '__nv_rhadd', 'i32'), (('u32', 'u32'), '__nv_urhadd', 'u32')),
    'sub_rn': _pair('fsub_rn', 'dsub_rn', 2),
    'sub_rz': _pair('fsub_rz', 'dsub_rz', 2),
    'sub_rd': _pair('fsub_rd', 'dsub_rd', 2),
    'sub_ru': _pair('fsub_ru', 'dsub_ru', 2),
    'rsqrt_rn': ((('f32',), '__nv_frsqrt_rn', 'f32'),),
    'llrint': 'float -> i64',
    'nextafter': 'float, float -> float',
    'sinpi': 'float -> float',
    'cospi': 'float -> float',
    'rhypot': 'float, float -> float',
    'norm3d': 'float, float, float -> float',
    'rnorm3d': 'float, float, float -> float',
    'norm4d': 'float, float, float, float -> float',
    'rnorm4d': 'float, float, float, float -> float',
    'rcbrt': 'float -> float',
    'j0': 'float -> float',
    'j1': 'float -> float',
    'y0': 'float -> float',
    'y1': 'float -> float',
    'yn': 'i32, float -> float',
    'jn': 'i32, float -> float',
    'cyl_bessel_i0': 'float -> float',
    'cyl_bessel_i1': 'float -> float',
    'erfinv': 'float -> float',
    'erfcx': 'float -> float',
    'erfcinv': 'float -> float',
    'normcdfinv': 'float -> float',
    'normcdf': 'float -> float',
    'ldexp': 'float, i32 -> float',
    'scalbn': 'float, i32 -> float',
    'remainder': 'float, float -> float',
    'llround': 'float -> i64',
    'ilogb': 'float -> i32',
    'logb': 'float -> float',
}


def _overloads(name: str, entry: str | tuple[Overload, ...]) -> tuple[Overload, ...]:
    """A table entry as overloads: ``"f32, i32 -> f32"`` is the one overload calling ``__nv_<name>``;
    with ``float`` in it (``"float, i32 -> float"``), the pair calling ``__nv_<name>f`` with f32 for
    each ``float`` and ``__nv_<name>`` with f64."""
    if isinstance(entry, tuple):
        return entry
    args, res = entry.split(" -> ")
    types = (*args.split(", "), res)
    if "float" not in types:
        return ((types[:-1], f"__nv_{name}", res),)
    # libm's naming: "float" is f32 in __nv_<name>f and f64 in __nv_<name>
    single, double = (tuple(f if t == "float" else t for t in types) for f in ("f32", "f64"))
    return ((single[:-1], f"__nv_{name}f", single[-1]), (double[:-1], f"__nv_{name}", double[-1]))


FUNCTIONS: dict[str, tuple[Overload, ...]] = {name: _overloads(name, e) for name, e in _TABLE.items()}
"""Triton name -> its overloads (operand dtype names, ``__nv_*`` symbol, result dtype name)."""

SYMBOLS: dict[str, tuple[str, tuple[str, ...], str]] = {
    sym: (name, args, res) for name, overloads in FUNCTIONS.items() for args, sym, res in overloads
}
"""``__nv_*`` symbol -> (Triton name, operand dtype names, result dtype name)."""

LIBM = frozenset({"nextafter", "remainder", "ilogb", "ldexp", "scalbn", "logb", "j0", "j1", "y0", "y1", "jn", "yn"})
"""Functions the C library has under the symbol's name without ``__nv_``."""

ORDER_LIMIT = 100_000
"""Largest order ``n`` of ``jn(n, x)``/``yn(n, x)`` the interpreter and run_cpu compute. The C
library's ``jnf``/``jn``/``ynf``/``yn`` (glibc's, from fdlibm) run a recurrence of about ``|n|``
steps, ~20 ns each: at 100,000 an element costs ~2 ms, at 2**31 - 1 about 40 s. libdevice's own
``__nv_jn*``/``__nv_yn*`` recur ``n`` steps too (forward, or backward from about ``n + sqrt(40 n)``,
whose ``n * 40`` (``n * 60`` in f64) overflows i32 beyond ~5.4e7 (3.6e7)), so there is no
shortcut to the same results. Beyond the limit both refuse the call with
:func:`order_limit_message` (interp.py, codegen/lower_libdevice.py); the GPU lowering is unaffected.
A negative order is not refused: it is NaN (:data:`NEGATIVE_ORDER_NAN`)."""

NEGATIVE_ORDER_NAN = {"__nv_jnf": 0x7FFFFFFF, "__nv_ynf": 0x7FFFFFFF,
                      "__nv_jn": 0xFFF8000000000000, "__nv_yn": 0xFFF8000000000000}
"""The bits libdevice's ``jn``/``yn`` return for every order ``n < 0``, whatever ``x`` (libdevice
tests ``n == 0``, ``n == 1``, then returns this NaN for ``n < 0``), where the C library reflects
(``jn(-n, x) = (-1)**n jn(n, x)``): the host references return these bits instead of calling
the C library, so interpret and run_cpu give the GPU's result."""

ORDER_BOUNDED = frozenset({"jn", "yn"})
"""Functions whose first operand (the order) :data:`ORDER_LIMIT` bounds on the host."""


def order_bounded(symbol: str) -> bool:
    """Whether the host refuses ``symbol`` (an ``__nv_*`` name) for orders beyond :data:`ORDER_LIMIT`
    (and returns :data:`NEGATIVE_ORDER_NAN` for negative orders)."""
    return SYMBOLS[symbol][0] in ORDER_BOUNDED


def order_limit_message(head: str, symbol: str, order: int, lane: tuple[int, ...] | None, loc: object = None) -> str:
    """The error of a ``jn``/``yn`` call whose order ``order`` (at ``lane`` of its block, None for
    a scalar) is beyond :data:`ORDER_LIMIT`: ``head`` locates the op (``kernel: libdevice at
    file:line:col in program 0``), then the source line and a caret when ``loc`` (the op's
    :class:`~eggpu.ir.graph.Loc`) can show them; the interpreter and run_cpu say the same words."""
    name = SYMBOLS[symbol][0]
    at = f"lane {lane}: " if lane is not None else ""
    text = (f"{head}: {at}libdevice.{name}(n, x) ({symbol}) with the order n = {order}: the interpreter "
            f"and run_cpu compute n <= {ORDER_LIMIT} only (the C library's {symbol[len('__nv_'):]} takes "
            "time proportional to |n|, about 40 s per element at 2**31 - 1); keep the order within the "
            "limit or launch the kernel on a CUDA GPU")
    excerpt = loc.excerpt() if loc is not None else ""  # type: ignore[attr-defined]
    return f"{text}\n{excerpt}" if excerpt else text


BITCAST = frozenset({"float_as_int", "int_as_float", "uint_as_float", "float_as_uint", "longlong_as_double",
                     "double_as_longlong"})

GPU_ONLY: dict[str, str] = {
    **{n: "a hardware approximation whose bits are the GPU's" for n in FUNCTIONS if n.startswith("fast_")},
    "rcp64h": "a hardware approximation whose bits are the GPU's",
}
"""Functions the interpreter and run_cpu refuse, with the reason."""


def host_kind(name: str) -> str:
    """How the interpreter and run_cpu compute ``name``: libm, bitcast, exact or gpu."""
    if name in GPU_ONLY:
        return "gpu"
    if name in LIBM:
        return "libm"
    if name in BITCAST:
        return "bitcast"
    return "exact"


def gpu_only_reason(symbol: str) -> str | None:
    """Why ``symbol`` runs on the GPU only, or None when the host can run it."""
    return GPU_ONLY.get(SYMBOLS[symbol][0])
