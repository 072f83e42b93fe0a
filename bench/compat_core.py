"""Compatibility harness for Triton's ``test_core.py``: a catalogue of its kernel kinds through eggpu.

``bench/compat_core_kernels.py`` and ``compat_core_kernels2.py`` hold small ``@triton.jit``
kernels, one per feature that Triton's ``python/test/unit/language/test_core.py`` tests (binary and
unary ops per dtype, shifts, compares, where, math, casts, reductions with axis/keep_dims, scans,
atomics, broadcast, constexpr branches, while/for loops, masked loads with ``other=``, dot,
join/split, histogram, inline asm, ...), written anew in that file's style with only the import
and decorator changed. Each :class:`~bench.compat.Case` below (its check in
``bench/compat_core_ops.py`` or ``compat_core_blocks.py``) launches one kernel over the dtypes the
Triton test covers and compares with numpy, in the interpreter and through the compiled CPU
lowering (``run_cpu``), exactly as ``bench.compat`` does for the tutorials.

Cases whose feature the goal of issue #11 leaves out (FP8 dot, multi-CTA) are not in the catalogue
(FP8 storage and conversions are: ``fp8_roundtrip``; device-side tensor descriptors are:
``tensor_descriptor``, from Triton's ``test_tensor_descriptor.py``); ``inline_asm_elementwise`` is in it but is GPU-only by design (PTX), so it is
listed under :data:`GPU_ONLY` and not counted in the pass rate.

    python -m bench.compat_core [--only NAME ...] [--triton] [--json OUT.json]

``--triton`` also compiles every launch with Triton (PTX, sm_90, no GPU needed), which shows
that the catalogue is Triton code.

The last run is kept in ``bench/results/compat_core.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from bench import compat, dual
from bench import compat_core_blocks as B
from bench import compat_core_ops as O
from bench.compat import Case
from bench.compat_core_ops import FLOATS, GPU_ONLY, INTS, SIZE, DtypeError, _each, _rand  # noqa: F401 - re-exported

SOURCES = (Path(__file__).with_name("compat_core_kernels.py"), Path(__file__).with_name("compat_core_kernels2.py"))
_LOADED: dict[str, SimpleNamespace] = {}


def load(backend: str) -> SimpleNamespace:
    """Both catalogue files executed for ``backend``, as one namespace of kernels (and ``tl``)."""
    if backend not in _LOADED:
        ns: dict = {}
        for i, src in enumerate(SOURCES):
            mod = dual.load(src, backend, f"compat_core_kernels{i + 1}")
            ns.update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
        _LOADED[backend] = SimpleNamespace(**ns)
    return _LOADED[backend]


CASES: tuple[Case, ...] = (
    Case("empty_kernel", "test_empty_kernel", O._empty),
    Case("neg", "test_unary_op -x", O._unary("neg_kernel", np.negative, O.INTS + O.FLOATS)),
    Case("invert", "test_unary_op ~x", O._unary("invert_kernel", np.invert, O.INTS)),
    Case("add", "test_bin_op +", O._binary("add_kernel", O._arith("add"), O._same(O.INTS + O.FLOATS) + O.MIXED)),
    Case("sub", "test_bin_op -", O._binary("sub_kernel", O._arith("sub"), O._same(O.INTS + O.FLOATS) + O.MIXED)),
    Case("mul", "test_bin_op *", O._binary("mul_kernel", O._arith("mul"), O._same(O.INTS + O.FLOATS) + O.MIXED)),
    Case("truediv", "test_bin_op /", O._truediv),
    Case("floordiv", "test_floordiv", O._binary("floordiv_kernel", O._arith("floordiv"), O._same(O.INTS),
                                               y_nonzero=True)),
    Case("mod", "test_bin_op %", O._binary("mod_kernel", O._arith("mod"), O._same(O.INTS + O.FLOATS), y_nonzero=True)),
    Case("broadcast_lhs", "test_bin_op (broadcast lhs)", O._broadcast_lhs),
    Case("scalar_rhs", "test_bin_op (constexpr scalar rhs)", O._scalar_rhs),
    Case("bitwise", "test_bitwise_op", O._bitwise),
    Case("shift", "test_shift_op", O._shift),
    Case("compare", "test_compare_op", O._compare),
    Case("broadcast", "test_broadcast", O._broadcast),
    Case("where", "test_where", O._where),
    Case("where_scalar_pointer", "test_where (scalar pointers)", O._where_scalar_pointer),
    Case("where_scalar_condition", "test_where_broadcast", O._where_scalar_condition),
    Case("math", "test_math_op", O._math),
    Case("abs", "test_abs", O._unary("abs_kernel", np.abs, O.INTS + O.FLOATS)),
    Case("fma", "test_math_fma_op", O._fma),
    Case("minmax", "test_maximum_minimum (propagate_nan)", O._minmax),
    Case("clamp", "test_clamp", O._clamp),
    Case("umulhi", "test_umulhi", O._umulhi),
    Case("divide", "test_math_divide_op", O._divide),
    Case("precise_math", "test_precise_math", O._precise),
    Case("cast", "test_cast", O._cast),
    Case("bitcast", "test_cast (bitcast)", O._bitcast),
    Case("cast_fn", "test_cast (tl.cast)", O._cast_fn),
    Case("fp8_roundtrip", "test_fp8_fpN_roundtrip", O._fp8_roundtrip),
    Case("store_constant", "test_store_constant", O._store_constant),
    Case("zeros_like", "test_zeros_like", O._zeros_like),
    Case("masked_load", "test_masked_load", O._masked_load),
    Case("cache_modifier", "test_load_cache_modifier", O._cache_modifier),
    Case("masked_store_2d", "test_masked_load_shared_memory (2-D masks)", O._masked_store_2d),
    Case("index1d", "test_index1d", O._index1d),
    Case("trans", "test_trans_2d", O._trans),
    Case("permute", "test_permute", O._permute),
    Case("reshape", "test_reshape", O._reshape),
    Case("expand_dims", "test_expand_dims", O._expand_dims),
    Case("reduce1d", "test_reduce1d", B._reduce1d),
    Case("reduce2d", "test_reduce2d (axis, keep_dims)", B._reduce2d),
    Case("reduce_all", "test_reduce (axis=None)", B._reduce_all),
    Case("max_indices", "test_reduce (return_indices)", B._max_indices),
    Case("sum_dtype", "test_sum_dtype", B._sum_dtype),
    Case("generic_reduce", "test_generic_reduction (tl.reduce)", B._generic_reduce),
    Case("chained_reductions", "test_chained_reductions", B._chained),
    Case("cumsum", "test_scan2d (cumsum)", B._cumsum),
    Case("cumprod", "test_scan2d (cumprod reverse)", B._cumprod),
    Case("associative_scan", "test_scan2d (linear_recurrence)", B._assoc_scan),
    Case("atomic_rmw", "test_atomic_rmw", B._atomic_rmw),
    Case("tensor_atomic", "test_tensor_atomic_rmw", B._tensor_atomic),
    Case("masked_atomic", "test_tensor_atomic_add_non_exclusive_offset", B._masked_atomic),
    Case("atomic_cas", "test_atomic_cas", B._atomic_cas),
    Case("bitwise_atomic", "test_atomic_rmw (or)", B._bitwise_atomic),
    Case("if_else", "test_if_else", B._if_else),
    Case("if_return", "test_if_return", B._if_return),
    Case("constexpr_if", "test_constexpr_if_return", B._constexpr_if),
    Case("nested_if", "test_nested_if_else_return", B._nested_if),
    Case("while", "test_while", B._while),
    Case("for_iv", "test_for_iv", B._for_iv),
    Case("nested_for", "test_nested_for", B._nested_for),
    Case("static_range", "test_static_range", B._static_range),
    Case("tl_range", "test_tl_range", B._tl_range),
    Case("call", "test_noinline / test_call", B._call),
    Case("program_ids", "test_num_programs", B._program_ids),
    Case("scalar_args", "test_value_specialization", B._scalar_args),
    Case("side_effect_sum", "test_side_effectful_reduction", B._side_effect_sum),
    Case("temp_var", "test_temp_var_in_loop", B._temp_var),
    Case("static", "test_static_assert / constexpr", B._static),
    Case("join_split", "test_join / test_split", B._join_split),
    Case("interleave", "test_interleave", B._interleave),
    Case("cat", "test_cat", B._cat),
    Case("histogram", "test_histogram", B._histogram),
    Case("gather", "test_gather", B._gather),
    Case("flip", "test_flip", B._flip),
    Case("dot", "test_dot (acc, trans)", B._dot),
    Case("dot_int8", "test_dot (int8, out_dtype)", B._dot_int),
    Case("dot3d", "test_dot3d", B._dot3d),
    Case("default_args", "test_default", B._default_args),
    Case("short_circuit", "test_short_circuiting / test_constexpr_not_op", B._short_circuit),
    Case("unsigned_abs", "test_unsigned_name_mangling", B._unsigned_abs),
    Case("tensor_atomic_cas", "test_tensor_atomic_cas", B._tensor_atomic_cas),
    Case("ravel_view", "test_ravel / test_reshape", B._ravel_view),
    Case("argmax_keep_dims", "test_reduce (argmax keep_dims)", B._argmax_keep_dims),
    Case("zero_strided", "test_zero_strided_tensors", B._zero_strided),
    Case("scalar_masked_load", "test_load_scalar_with_mask", B._scalar_masked_load),
    Case("inline_asm_elementwise", "test_inline_asm", B._inline_asm),
    Case("topk", "test_topk", B._topk),
    Case("bitonic_merge", "test_bitonic_merge (bitonic rows)", B._bitonic_merge),
    Case("squeeze", "tl.squeeze / tl.unsqueeze", B._squeeze),
    Case("device_print", "test_subprocess test_print (device_print)", B._device_print),
    Case("device_assert", "test_subprocess test_assert (device_assert, debug=True)", B._device_assert),
    Case("map_elementwise", "test_map_elementwise", B._map_elementwise),
    Case("downcast_rtz", "test_cast (fp_downcast_rounding='rtz')", B._downcast_rtz),
    Case("volatile_load", "tl.load(volatile=True)", B._volatile_load),
    Case("argmax_tie_break", "test_reduce (tie_break_left=False)", B._argmax_tie_break),
    Case("tensor_descriptor", "test_tensor_descriptor.py (device-side load/store)", B._tensor_descriptor),
)
BY_NAME = {c.name: c for c in CASES}


def run_case(case: Case, mode: str, seed: int = 0) -> str | None:
    """None when ``case`` matches numpy in ``mode``, else why not (one line)."""
    return compat.run_case(case, mode, seed, loader=load)


def main(argv: list[str] | None = None) -> int:
    rows, ns = compat.run_cli(argv, __doc__, CASES, BY_NAME, run_case,
                              lambda case: compat.triton_compiles(case, loader=load), "test_core", 45,
                              extra=lambda case: {"gpu_only": case.name in GPU_ONLY})
    counted = [r for r in rows if not r["gpu_only"]]
    passed = sum(r["pass"] for r in counted)
    tri = "" if not ns.triton else f"; Triton compiles {sum(r['triton'] is None for r in rows)}/{len(rows)}"
    print(f"\n{passed}/{len(counted)} test_core-style kernels match numpy in interpret and run_cpu{tri} "
          f"({100 * passed / max(len(counted), 1):.0f} %; GPU-only, not counted: {sorted(GPU_ONLY)})")
    if ns.json:
        ns.json.write_text(json.dumps({"passed": passed, "total": len(counted), "cases": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
