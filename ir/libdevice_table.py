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

FUNCTIONS: dict[str, tuple[Overload, ...]] = {
    'byte_perm': ((('i32', 'i32', 'i32'), '__nv_byte_perm', 'i32'),),
    'mul24': ((('i32', 'i32'), '__nv_mul24', 'i32'), (('u32', 'u32'), '__nv_umul24', 'u32')),
    'sad': ((('i32', 'i32', 'u32'), '__nv_sad', 'i32'), (('u32', 'u32', 'u32'), '__nv_usad', 'u32')),
    'rcp64h': ((('f64',), '__nv_rcp64h', 'f64'),),
    'saturatef': ((('f32',), '__nv_saturatef', 'f32'),),
    'fma_rn': ((('f32', 'f32', 'f32'), '__nv_fmaf_rn', 'f32'), (('f64', 'f64', 'f64'), '__nv_fma_rn', 'f64')),
    'fma_rz': ((('f32', 'f32', 'f32'), '__nv_fmaf_rz', 'f32'), (('f64', 'f64', 'f64'), '__nv_fma_rz', 'f64')),
    'fma_rd': ((('f32', 'f32', 'f32'), '__nv_fmaf_rd', 'f32'), (('f64', 'f64', 'f64'), '__nv_fma_rd', 'f64')),
    'fma_ru': ((('f32', 'f32', 'f32'), '__nv_fmaf_ru', 'f32'), (('f64', 'f64', 'f64'), '__nv_fma_ru', 'f64')),
    'fast_dividef': ((('f32', 'f32'), '__nv_fast_fdividef', 'f32'),),
    'div_rz': ((('f32', 'f32'), '__nv_fdiv_rz', 'f32'), (('f64', 'f64'), '__nv_ddiv_rz', 'f64')),
    'div_rd': ((('f32', 'f32'), '__nv_fdiv_rd', 'f32'), (('f64', 'f64'), '__nv_ddiv_rd', 'f64')),
    'div_ru': ((('f32', 'f32'), '__nv_fdiv_ru', 'f32'), (('f64', 'f64'), '__nv_ddiv_ru', 'f64')),
    'rcp_rn': ((('f32',), '__nv_frcp_rn', 'f32'), (('f64',), '__nv_drcp_rn', 'f64')),
    'rcp_rz': ((('f32',), '__nv_frcp_rz', 'f32'), (('f64',), '__nv_drcp_rz', 'f64')),
    'rcp_rd': ((('f32',), '__nv_frcp_rd', 'f32'), (('f64',), '__nv_drcp_rd', 'f64')),
    'rcp_ru': ((('f32',), '__nv_frcp_ru', 'f32'), (('f64',), '__nv_drcp_ru', 'f64')),
    'sqrt_rz': ((('f32',), '__nv_fsqrt_rz', 'f32'), (('f64',), '__nv_dsqrt_rz', 'f64')),
    'sqrt_rd': ((('f32',), '__nv_fsqrt_rd', 'f32'), (('f64',), '__nv_dsqrt_rd', 'f64')),
    'sqrt_ru': ((('f32',), '__nv_fsqrt_ru', 'f32'), (('f64',), '__nv_dsqrt_ru', 'f64')),
    'add_rn': ((('f64', 'f64'), '__nv_dadd_rn', 'f64'), (('f32', 'f32'), '__nv_fadd_rn', 'f32')),
    'add_rz': ((('f64', 'f64'), '__nv_dadd_rz', 'f64'), (('f32', 'f32'), '__nv_fadd_rz', 'f32')),
    'add_rd': ((('f64', 'f64'), '__nv_dadd_rd', 'f64'), (('f32', 'f32'), '__nv_fadd_rd', 'f32')),
    'add_ru': ((('f64', 'f64'), '__nv_dadd_ru', 'f64'), (('f32', 'f32'), '__nv_fadd_ru', 'f32')),
    'mul_rn': ((('f64', 'f64'), '__nv_dmul_rn', 'f64'), (('f32', 'f32'), '__nv_fmul_rn', 'f32')),
    'mul_rz': ((('f64', 'f64'), '__nv_dmul_rz', 'f64'), (('f32', 'f32'), '__nv_fmul_rz', 'f32')),
    'mul_rd': ((('f64', 'f64'), '__nv_dmul_rd', 'f64'), (('f32', 'f32'), '__nv_fmul_rd', 'f32')),
    'mul_ru': ((('f64', 'f64'), '__nv_dmul_ru', 'f64'), (('f32', 'f32'), '__nv_fmul_ru', 'f32')),
    'double2float_rn': ((('f64',), '__nv_double2float_rn', 'f32'),),
    'double2float_rz': ((('f64',), '__nv_double2float_rz', 'f32'),),
    'double2float_rd': ((('f64',), '__nv_double2float_rd', 'f32'),),
    'double2float_ru': ((('f64',), '__nv_double2float_ru', 'f32'),),
    'double2int_rn': ((('f64',), '__nv_double2int_rn', 'i32'),),
    'double2int_rz': ((('f64',), '__nv_double2int_rz', 'i32'),),
    'double2int_rd': ((('f64',), '__nv_double2int_rd', 'i32'),),
    'double2int_ru': ((('f64',), '__nv_double2int_ru', 'i32'),),
    'double2uint_rn': ((('f64',), '__nv_double2uint_rn', 'i32'),),
    'double2uint_rz': ((('f64',), '__nv_double2uint_rz', 'i32'),),
    'double2uint_rd': ((('f64',), '__nv_double2uint_rd', 'i32'),),
    'double2uint_ru': ((('f64',), '__nv_double2uint_ru', 'i32'),),
    'int2double_rn': ((('i32',), '__nv_int2double_rn', 'f64'),),
    'uint2double_rn': ((('u32',), '__nv_uint2double_rn', 'f64'),),
    'float2int_rn': ((('f32',), '__nv_float2int_rn', 'i32'),),
    'float2int_rz': ((('f32',), '__nv_float2int_rz', 'i32'),),
    'float2int_rd': ((('f32',), '__nv_float2int_rd', 'i32'),),
    'float2int_ru': ((('f32',), '__nv_float2int_ru', 'i32'),),
    'float2uint_rn': ((('f32',), '__nv_float2uint_rn', 'i32'),),
    'float2uint_rz': ((('f32',), '__nv_float2uint_rz', 'i32'),),
    'float2uint_rd': ((('f32',), '__nv_float2uint_rd', 'i32'),),
    'float2uint_ru': ((('f32',), '__nv_float2uint_ru', 'i32'),),
    'int2float_rn': ((('i32',), '__nv_int2float_rn', 'f32'),),
    'int2float_rz': ((('i32',), '__nv_int2float_rz', 'f32'),),
    'int2float_rd': ((('i32',), '__nv_int2float_rd', 'f32'),),
    'int2float_ru': ((('i32',), '__nv_int2float_ru', 'f32'),),
    'uint2float_rn': ((('u32',), '__nv_uint2float_rn', 'f32'),),
    'uint2float_rz': ((('u32',), '__nv_uint2float_rz', 'f32'),),
    'uint2float_rd': ((('u32',), '__nv_uint2float_rd', 'f32'),),
    'uint2float_ru': ((('u32',), '__nv_uint2float_ru', 'f32'),),
    'hiloint2double': ((('i32', 'i32'), '__nv_hiloint2double', 'f64'),),
    'double2loint': ((('f64',), '__nv_double2loint', 'i32'),),
    'double2hiint': ((('f64',), '__nv_double2hiint', 'i32'),),
    'float2ll_rn': ((('f32',), '__nv_float2ll_rn', 'i64'),),
    'float2ll_rz': ((('f32',), '__nv_float2ll_rz', 'i64'),),
    'float2ll_rd': ((('f32',), '__nv_float2ll_rd', 'i64'),),
    'float2ll_ru': ((('f32',), '__nv_float2ll_ru', 'i64'),),
    'float2ull_rn': ((('f32',), '__nv_float2ull_rn', 'i64'),),
    'float2ull_rz': ((('f32',), '__nv_float2ull_rz', 'i64'),),
    'float2ull_rd': ((('f32',), '__nv_float2ull_rd', 'i64'),),
    'float2ull_ru': ((('f32',), '__nv_float2ull_ru', 'i64'),),
    'double2ll_rn': ((('f64',), '__nv_double2ll_rn', 'i64'),),
    'double2ll_rz': ((('f64',), '__nv_double2ll_rz', 'i64'),),
    'double2ll_rd': ((('f64',), '__nv_double2ll_rd', 'i64'),),
    'double2ll_ru': ((('f64',), '__nv_double2ll_ru', 'i64'),),
    'double2ull_rn': ((('f64',), '__nv_double2ull_rn', 'i64'),),
    'double2ull_rz': ((('f64',), '__nv_double2ull_rz', 'i64'),),
    'double2ull_rd': ((('f64',), '__nv_double2ull_rd', 'i64'),),
    'double2ull_ru': ((('f64',), '__nv_double2ull_ru', 'i64'),),
    'll2float_rn': ((('i64',), '__nv_ll2float_rn', 'f32'),),
    'll2float_rz': ((('i64',), '__nv_ll2float_rz', 'f32'),),
    'll2float_rd': ((('i64',), '__nv_ll2float_rd', 'f32'),),
    'll2float_ru': ((('i64',), '__nv_ll2float_ru', 'f32'),),
    'ull2float_rn': ((('u64',), '__nv_ull2float_rn', 'f32'),),
    'ull2float_rz': ((('u64',), '__nv_ull2float_rz', 'f32'),),
    'ull2float_rd': ((('u64',), '__nv_ull2float_rd', 'f32'),),
    'ull2float_ru': ((('u64',), '__nv_ull2float_ru', 'f32'),),
    'll2double_rn': ((('i64',), '__nv_ll2double_rn', 'f64'),),
    'll2double_rz': ((('i64',), '__nv_ll2double_rz', 'f64'),),
    'll2double_rd': ((('i64',), '__nv_ll2double_rd', 'f64'),),
    'll2double_ru': ((('i64',), '__nv_ll2double_ru', 'f64'),),
    'ull2double_rn': ((('u64',), '__nv_ull2double_rn', 'f64'),),
    'ull2double_rz': ((('u64',), '__nv_ull2double_rz', 'f64'),),
    'ull2double_rd': ((('u64',), '__nv_ull2double_rd', 'f64'),),
    'ull2double_ru': ((('u64',), '__nv_ull2double_ru', 'f64'),),
    'int_as_float': ((('i32',), '__nv_int_as_float', 'f32'),),
    'float_as_int': ((('f32',), '__nv_float_as_int', 'i32'),),
    'uint_as_float': ((('u32',), '__nv_uint_as_float', 'f32'),),
    'float_as_uint': ((('f32',), '__nv_float_as_uint', 'i32'),),
    'longlong_as_double': ((('i64',), '__nv_longlong_as_double', 'f64'),),
    'double_as_longlong': ((('f64',), '__nv_double_as_longlong', 'i64'),),
    'fast_sinf': ((('f32',), '__nv_fast_sinf', 'f32'),),
    'fast_cosf': ((('f32',), '__nv_fast_cosf', 'f32'),),
    'fast_log2f': ((('f32',), '__nv_fast_log2f', 'f32'),),
    'fast_logf': ((('f32',), '__nv_fast_logf', 'f32'),),
    'fast_expf': ((('f32',), '__nv_fast_expf', 'f32'),),
    'fast_tanf': ((('f32',), '__nv_fast_tanf', 'f32'),),
    'fast_exp10f': ((('f32',), '__nv_fast_exp10f', 'f32'),),
    'fast_log10f': ((('f32',), '__nv_fast_log10f', 'f32'),),
    'fast_powf': ((('f32', 'f32'), '__nv_fast_powf', 'f32'),),
    'hadd': ((('i32', 'i32'), '__nv_hadd', 'i32'), (('u32', 'u32'), '__nv_uhadd', 'u32')),
    'rhadd': ((('i32', 'i32'), '__nv_rhadd', 'i32'), (('u32', 'u32'), '__nv_urhadd', 'u32')),
    'sub_rn': ((('f32', 'f32'), '__nv_fsub_rn', 'f32'), (('f64', 'f64'), '__nv_dsub_rn', 'f64')),
    'sub_rz': ((('f32', 'f32'), '__nv_fsub_rz', 'f32'), (('f64', 'f64'), '__nv_dsub_rz', 'f64')),
    'sub_rd': ((('f32', 'f32'), '__nv_fsub_rd', 'f32'), (('f64', 'f64'), '__nv_dsub_rd', 'f64')),
    'sub_ru': ((('f32', 'f32'), '__nv_fsub_ru', 'f32'), (('f64', 'f64'), '__nv_dsub_ru', 'f64')),
    'rsqrt_rn': ((('f32',), '__nv_frsqrt_rn', 'f32'),),
    'llrint': ((('f32',), '__nv_llrintf', 'i64'), (('f64',), '__nv_llrint', 'i64')),
    'nextafter': ((('f32', 'f32'), '__nv_nextafterf', 'f32'), (('f64', 'f64'), '__nv_nextafter', 'f64')),
    'sinpi': ((('f32',), '__nv_sinpif', 'f32'), (('f64',), '__nv_sinpi', 'f64')),
    'cospi': ((('f32',), '__nv_cospif', 'f32'), (('f64',), '__nv_cospi', 'f64')),
    'rhypot': ((('f32', 'f32'), '__nv_rhypotf', 'f32'), (('f64', 'f64'), '__nv_rhypot', 'f64')),
    'norm3d': ((('f32', 'f32', 'f32'), '__nv_norm3df', 'f32'), (('f64', 'f64', 'f64'), '__nv_norm3d', 'f64')),
    'rnorm3d': ((('f32', 'f32', 'f32'), '__nv_rnorm3df', 'f32'), (('f64', 'f64', 'f64'), '__nv_rnorm3d', 'f64')),
    'norm4d': ((('f32', 'f32', 'f32', 'f32'), '__nv_norm4df', 'f32'), (('f64', 'f64', 'f64', 'f64'), '__nv_norm4d', 'f64')),
    'rnorm4d': ((('f32', 'f32', 'f32', 'f32'), '__nv_rnorm4df', 'f32'), (('f64', 'f64', 'f64', 'f64'), '__nv_rnorm4d', 'f64')),
    'rcbrt': ((('f32',), '__nv_rcbrtf', 'f32'), (('f64',), '__nv_rcbrt', 'f64')),
    'j0': ((('f32',), '__nv_j0f', 'f32'), (('f64',), '__nv_j0', 'f64')),
    'j1': ((('f32',), '__nv_j1f', 'f32'), (('f64',), '__nv_j1', 'f64')),
    'y0': ((('f32',), '__nv_y0f', 'f32'), (('f64',), '__nv_y0', 'f64')),
    'y1': ((('f32',), '__nv_y1f', 'f32'), (('f64',), '__nv_y1', 'f64')),
    'yn': ((('i32', 'f32'), '__nv_ynf', 'f32'), (('i32', 'f64'), '__nv_yn', 'f64')),
    'jn': ((('i32', 'f32'), '__nv_jnf', 'f32'), (('i32', 'f64'), '__nv_jn', 'f64')),
    'cyl_bessel_i0': ((('f32',), '__nv_cyl_bessel_i0f', 'f32'), (('f64',), '__nv_cyl_bessel_i0', 'f64')),
    'cyl_bessel_i1': ((('f32',), '__nv_cyl_bessel_i1f', 'f32'), (('f64',), '__nv_cyl_bessel_i1', 'f64')),
    'erfinv': ((('f32',), '__nv_erfinvf', 'f32'), (('f64',), '__nv_erfinv', 'f64')),
    'erfcx': ((('f32',), '__nv_erfcxf', 'f32'), (('f64',), '__nv_erfcx', 'f64')),
    'erfcinv': ((('f32',), '__nv_erfcinvf', 'f32'), (('f64',), '__nv_erfcinv', 'f64')),
    'normcdfinv': ((('f32',), '__nv_normcdfinvf', 'f32'), (('f64',), '__nv_normcdfinv', 'f64')),
    'normcdf': ((('f32',), '__nv_normcdff', 'f32'), (('f64',), '__nv_normcdf', 'f64')),
    'ldexp': ((('f32', 'i32'), '__nv_ldexpf', 'f32'), (('f64', 'i32'), '__nv_ldexp', 'f64')),
    'scalbn': ((('f32', 'i32'), '__nv_scalbnf', 'f32'), (('f64', 'i32'), '__nv_scalbn', 'f64')),
    'remainder': ((('f32', 'f32'), '__nv_remainderf', 'f32'), (('f64', 'f64'), '__nv_remainder', 'f64')),
    'llround': ((('f32',), '__nv_llroundf', 'i64'), (('f64',), '__nv_llround', 'i64')),
    'ilogb': ((('f32',), '__nv_ilogbf', 'i32'), (('f64',), '__nv_ilogb', 'i32')),
    'logb': ((('f32',), '__nv_logbf', 'f32'), (('f64',), '__nv_logb', 'f64')),
}

SYMBOLS: dict[str, tuple[str, tuple[str, ...], str]] = {
    sym: (name, args, res) for name, overloads in FUNCTIONS.items() for args, sym, res in overloads
}
"""``__nv_*`` symbol -> (Triton name, operand dtype names, result dtype name)."""

LIBM = frozenset({"nextafter", "remainder", "ilogb", "ldexp", "scalbn", "logb", "j0", "j1", "y0", "y1", "jn", "yn"})
"""Functions the C library has under the symbol's name without ``__nv_``."""

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
