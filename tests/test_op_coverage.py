"""What did I forget? Every table keyed by op, checked against the op table in seconds.

The op table (``ir/ops.py``) is the single source of truth. Every other encoding of an op — the
interpreter's reference, the egglog schema, the z3 encoding, the cost model, the LLVM lowering,
the libdevice/libm names, the language surface — is a table keyed by op name. Each test below
checks one of those tables against the op table and, when it fails, names the file and the table
to edit (``docs/ir.md``, "Adding an op", walks through the whole list).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from pathlib import Path

import pytest

from eggpu.ir.ops import COMMUTATIVE, ELEMENTWISE, FLOAT, OPS, PURE, TRANSCENDENTAL, _family_ok
from eggpu.ir.types import BlockType

ROOT = Path(__file__).resolve().parents[1]


def _ops(*traits: str, exclude: tuple[str, ...] = ()) -> list[str]:
    return [n for n, d in OPS.items() if all(t in d.traits for t in traits) and not set(exclude) & d.traits]


def _missing(what: str, names, where: str) -> str:
    return f"{what} missing for {sorted(names)}: add them to {where}"


# ---------------------------------------------------------------- ir


def test_every_elementwise_op_has_a_reference_and_edge_cases() -> None:
    """ir/ops.py: the interpreter runs ``reference``; docs/ir.md shows ``edge_cases``."""
    from eggpu.ir.ops import POINTER_OPS

    no_ref = [n for n in _ops(ELEMENTWISE) if OPS[n].reference is None and n not in POINTER_OPS]
    assert not no_ref, _missing("numpy reference", no_ref, "the op's row in ir/ops.py (reference=...)")
    no_edges = [n for n in _ops(PURE) if not OPS[n].edge_cases and not OPS[n].doc]
    assert not no_edges, _missing("edge_cases/doc text", no_edges, "the op's row in ir/ops.py")


def test_every_trait_in_the_table_is_a_declared_trait() -> None:
    """A misspelled trait in a row would make every trait query on that op silently False."""
    import eggpu.ir.ops as ops_mod

    declared = {v for k, v in vars(ops_mod).items() if k.isupper() and isinstance(v, str)}
    for name, d in OPS.items():
        unknown = set(d.traits) - declared
        assert not unknown, f"ir/ops.py: op {name!r} has undeclared traits {sorted(unknown)}"


def test_docs_op_table_is_generated_from_the_op_table() -> None:
    text = (ROOT / "docs" / "ir.md").read_text()
    absent = [n for n in OPS if f"`{n}`" not in text]
    assert not absent, _missing("docs/ir.md rows", absent, "docs/ir.md (regenerate the op table section)")


# ---------------------------------------------------------------- optimizer


def test_z3_encodes_every_pure_op_or_says_why_not() -> None:
    from eggpu.optimizer import z3ops

    missing = set(OPS) - set(z3ops.Z3_OPS) - set(z3ops.NOT_ENCODED)
    assert not missing, _missing("z3 encoding", missing, "optimizer/z3ops.py Z3_OPS (or NOT_ENCODED with a reason)")
    pure_not_encoded = [n for n in z3ops.NOT_ENCODED if OPS[n].is_pure]
    assert not pure_not_encoded, f"optimizer/z3ops.py NOT_ENCODED lists pure ops {pure_not_encoded}: encode them"


def test_transcendentals_are_uninterpreted_in_z3() -> None:
    from eggpu.optimizer import z3ops

    want = set(_ops(TRANSCENDENTAL))
    assert set(z3ops.UF_OPS) == want, (
        f"optimizer/z3ops.py UF_OPS {sorted(z3ops.UF_OPS)} != the TRANSCENDENTAL ops {sorted(want)}")


def test_egglog_schema_has_a_constructor_for_every_pure_op() -> None:
    from eggpu.optimizer.schema import CONSTRUCTORS

    ops_in_schema = {info.op for info in CONSTRUCTORS.values()}
    missing = set(_ops(PURE)) - ops_in_schema
    assert not missing, _missing("egglog constructors", missing, "optimizer/schema.py _build_constructors")


def _sample_dtypes(family: str):
    from eggpu.ir.dtypes import ALL_DTYPES

    return [d for d in ALL_DTYPES if _family_ok(family, BlockType(d, ()))]


def test_cost_model_prices_every_elementwise_op_on_every_dtype_it_accepts() -> None:
    from eggpu.ir.errors import EggpuError
    from eggpu.optimizer.cost import CostModel

    model = CostModel.for_target("sm_90")
    missing = set()
    for name in _ops(ELEMENTWISE):
        for dt in _sample_dtypes(OPS[name].family):
            try:
                model.lane_cost(name, dt)
            except EggpuError:
                missing.add((name, "float" if dt.is_float else "int/bool"))
    assert not missing, _missing(
        "per-lane costs", missing, "optimizer/cost.py (_INT_ARITH, _FLOAT_ARITH or _TRANSCENDENTAL)")


def test_cost_model_prices_transcendentals_by_name() -> None:
    from eggpu.optimizer.cost import CostModel

    missing = set(_ops(TRANSCENDENTAL)) - set(CostModel.for_target("sm_90").transcendental)
    assert not missing, _missing("transcendental costs", missing, "optimizer/cost.py _TRANSCENDENTAL")


def test_transcendental_cost_overrides_name_transcendental_ops() -> None:
    """The set of priced ops derives from the op table; an override for another op is stale."""
    from eggpu.optimizer import cost

    stale = set(cost._TRANSCENDENTAL_COSTS) - set(_ops(TRANSCENDENTAL))
    assert not stale, f"optimizer/cost.py _TRANSCENDENTAL_COSTS prices ops that are not TRANSCENDENTAL: {sorted(stale)}"


def test_thread_cost_op_sets_name_ops_and_every_group_is_calibratable() -> None:
    """optimizer/thread_cost.py keys its per-thread prices by op name: a stale name would price
    nothing; and every group it reports must be one ``CostModel.scaled`` can multiply."""
    from eggpu.optimizer import thread_cost
    from eggpu.optimizer.cost import CostModel

    named = (thread_cost._FREE | thread_cost._MEMORY | thread_cost._REDUCE | thread_cost._LOOPS
             | thread_cost._FLOAT_DIV | thread_cost._CONTROL)
    stale = named - set(OPS)
    assert not stale, f"optimizer/thread_cost.py names ops that are not in ir/ops.py: {sorted(stale)}"
    model = CostModel.for_target("sm_90")
    for group in thread_cost.GROUPS:
        if group != "int_simple":  # the unit
            assert model.scaled({group: 2.0}) != model, f"CostModel.scaled ignores calibration group {group!r}"


def _rule_texts() -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / "rules").glob("*.egg")))


def test_every_commutative_op_has_a_commutativity_rule() -> None:
    """The COMMUTATIVE trait is a promise the e-graph keeps only through a rule."""
    from eggpu.optimizer.schema import CONSTRUCTORS

    text = _rule_texts()
    lacking = []
    for name in _ops(COMMUTATIVE):
        ctors = [c for c, info in CONSTRUCTORS.items() if info.op == name]
        swap = [rf"\(rewrite\s+\({re.escape(c)}\s+(\w+)\s+(\w+)\s+(\w+)\)\s+\({re.escape(c)}\s+\1\s+\3\s+\2\)"
                for c in ctors]
        if not any(re.search(pat, text) for pat in swap):
            lacking.append(name)
    assert not lacking, _missing("commutativity rules", lacking, "rules/algebra.egg (a '<op>-comm' rewrite)")


# ---------------------------------------------------------------- codegen


def test_lowering_table_covers_every_op() -> None:
    from eggpu.codegen.lower_ops import STRUCTURAL, TABLE, UNSUPPORTED

    missing = set(OPS) - set(TABLE) - STRUCTURAL - set(UNSUPPORTED)
    assert not missing, _missing("LLVM lowerings", missing, "codegen/lower_ops.py TABLE (or UNSUPPORTED with a reason)")
    stale = (set(TABLE) | STRUCTURAL | set(UNSUPPORTED)) - set(OPS)
    assert not stale, f"codegen/lower_ops.py lowers ops that the op table no longer has: {sorted(stale)}"


def test_every_transcendental_has_libdevice_and_libm_names() -> None:
    """codegen/emitter.py _MATH: (libdevice f32, libdevice f64, libm f32, libm f64) per op."""
    from eggpu.codegen import emitter

    missing = set(_ops(TRANSCENDENTAL)) - set(emitter._MATH)
    assert not missing, _missing("libdevice/libm names", missing, "codegen/emitter.py _MATH")
    for name in _ops(TRANSCENDENTAL):
        dev32, dev64, *_ = emitter._MATH[name]
        assert dev32 and dev32.startswith("__nv_") and dev64 and dev64.startswith("__nv_"), (
            f"codegen/emitter.py _MATH[{name!r}] needs libdevice names (__nv_...) for f32 and f64")


def test_math_names_are_only_for_transcendental_ops() -> None:
    """emitter._MATH is the one hand-written table of a transcendental op; its keys are those ops."""
    from eggpu.codegen import emitter

    stale = set(emitter._MATH) - set(_ops(TRANSCENDENTAL))
    assert not stale, (f"codegen/emitter.py _MATH names ops that are not TRANSCENDENTAL in ir/ops.py: "
                       f"{sorted(stale)} (add the trait or drop the row)")


def test_every_transcendental_is_lowered_as_a_math_call() -> None:
    """codegen/scalar_ops.py derives UNARY/BINARY entries for transcendental ops of arity 1 or 2."""
    from eggpu.codegen import scalar_ops

    lowered = set(scalar_ops.UNARY) | set(scalar_ops.BINARY)
    missing = [n for n in _ops(TRANSCENDENTAL) if n not in lowered]
    assert not missing, _missing(
        "scalar lowerings (only arity 1 and 2 are derived from the op table)", missing,
        "codegen/scalar_ops.py UNARY/BINARY")


def test_libdevice_provides_every_name_codegen_calls() -> None:
    from eggpu.codegen import emitter, toolchain

    try:
        path = toolchain.find_libdevice()
    except Exception as e:  # a machine without NVIDIA's wheels: nothing to check against
        pytest.skip(f"libdevice not found: {e}")
    import llvmlite.binding as llvm

    defined = {f.name for f in llvm.parse_bitcode(Path(path).read_bytes()).functions}
    names = {n for row in emitter._MATH.values() for n in row[:2] if n}
    names |= set(emitter._FAST_MATH_F32.values())
    absent = sorted(names - defined)
    assert not absent, f"codegen/emitter.py calls libdevice functions that libdevice lacks: {absent}"


def test_libm_provides_every_host_name_codegen_calls() -> None:
    from eggpu.codegen import emitter

    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    names = {n for row in emitter._MATH.values() for n in row[2:] if n}
    absent = sorted(n for n in names if not hasattr(libm, n))
    assert not absent, f"codegen/emitter.py _MATH names host functions that libm lacks: {absent}"


# ---------------------------------------------------------------- language


def test_every_unary_float_function_is_in_the_language() -> None:
    """A unary float op is reachable as ``tl.<name>`` and known to the frontend.

    (``tl.math`` follows Triton's own list, which is not the op table's: Triton has no ``tl.math.tanh``.)
    """
    import eggpu.language as tl
    from eggpu.kernel_macro import frontend_ops

    unary_float = [n for n in _ops(ELEMENTWISE) if OPS[n].family == FLOAT and OPS[n].arity == (1, 1)]
    not_in_frontend = set(unary_float) - set(frontend_ops.FLOAT_FUNCTIONS)
    assert not not_in_frontend, _missing(
        "frontend entries", not_in_frontend, "kernel_macro/frontend_ops.py FLOAT_FUNCTIONS")
    not_in_tl = [n for n in unary_float if not callable(getattr(tl, n, None))]
    assert not not_in_tl, _missing("language stubs", not_in_tl, "kernel_macro/language.py (a _math row, kind _FLOAT or _FLOAT_T)")


def test_every_transcendental_is_in_the_language_and_libdevice() -> None:
    """Each transcendental op (unary or binary) has a ``tl.<name>`` stub, a frontend entry, and is
    in ``tl.extra.cuda.libdevice``; language.__all__ and LIBDEVICE_NAMES derive from the op table."""
    import eggpu.language as tl
    from eggpu.kernel_macro.builtins import IMPLS

    names = _ops(TRANSCENDENTAL)
    no_stub = [n for n in names if not callable(getattr(tl, n, None))]
    assert not no_stub, _missing(
        "language stubs", no_stub, "kernel_macro/language.py (a _math row)")
    no_impl = [n for n in names if n not in IMPLS]
    assert not no_impl, _missing(
        "frontend implementations (only arity 1 and 2 are derived from the op table)", no_impl,
        "kernel_macro/builtins.py IMPLS")
    from eggpu.kernel_macro import language as lang

    unmarked = sorted(set(names) - set(lang.TRANSCENDENTAL_STUBS))
    assert not unmarked, _missing("stubs marked transcendental", unmarked,
                                  "kernel_macro/language.py (a _math row of kind _FLOAT_T or _PLAIN_T)")
    stale = sorted(set(lang.TRANSCENDENTAL_STUBS) - set(names))
    assert not stale, f"kernel_macro/language.py marks {stale} transcendental, but the op table does not"
    not_in_libdevice = [n for n in names if not callable(getattr(tl.extra.cuda.libdevice, n, None))]
    assert not not_in_libdevice, _missing("libdevice entries", not_in_libdevice, "kernel_macro/language.py stubs")


def test_fp8_op_list_names_ops_and_fp8_stays_out_of_the_optimizer() -> None:
    """FP8 is storage only: the ops that take it are ops of the table (of family ANY: move, select,
    convert), and no category, schema dtype or rule can see an FP8 term."""
    from eggpu.ir.dtypes import ALL_DTYPES, CATEGORIES, FP8_DTYPES
    from eggpu.ir.ops import ANY, FP8_OPS
    from eggpu.optimizer.schema import DTYPE_CONSTRUCTORS

    assert not set(FP8_OPS) - set(OPS), _missing("ops", set(FP8_OPS) - set(OPS), "ir/ops.py FP8_OPS")
    assert all(OPS[n].family == ANY for n in FP8_OPS)
    for dt in FP8_DTYPES:
        assert dt not in ALL_DTYPES and dt not in DTYPE_CONSTRUCTORS
        assert not any(dt in members for members in CATEGORIES.values())


# ---------------------------------------------------------------- the libdevice op's symbol table


def test_every_libdevice_symbol_is_in_libdevice_and_has_a_host_meaning() -> None:
    """ir/libdevice_table.py: each symbol is defined by libdevice; each host kind is backed (libm
    has the ``libm`` ones, ir/libdevice_refs.py a scalar reference for every other non-GPU one)."""
    from eggpu.ir.libdevice_refs import scalar
    from eggpu.ir.libdevice_table import SYMBOLS, host_kind

    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    no_libm = sorted(s for s, (n, _, _) in SYMBOLS.items() if host_kind(n) == "libm" and not hasattr(libm, s[5:]))
    assert not no_libm, f"ir/libdevice_table.py LIBM names functions libm lacks: {no_libm}"
    for s, (n, _, _) in SYMBOLS.items():
        if host_kind(n) != "gpu":
            assert callable(scalar(s)), s
    from eggpu.codegen import toolchain

    try:
        path = toolchain.find_libdevice()
    except Exception as e:  # a machine without NVIDIA's wheels: nothing to check against
        pytest.skip(f"libdevice not found: {e}")
    import llvmlite.binding as llvm

    defined = {f.name for f in llvm.parse_bitcode(Path(path).read_bytes()).functions}
    absent = sorted(set(SYMBOLS) - defined)
    assert not absent, f"ir/libdevice_table.py names symbols libdevice lacks: {absent}"
