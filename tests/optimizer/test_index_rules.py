"""Index math under analyses, masks proved all-true, and what extraction may return (issue #10).

- ``sdiv-nonneg-unsigned`` / ``srem-nonneg-unsigned`` (and the ``-i64`` twins): a signed
  division or remainder of a dividend proved ``>= 0`` by a divisor proved ``>= 1`` becomes the
  unsigned one between renaming casts. They fire on the naive kernels' ``xindex % 768`` once the
  launch fact ``offsets_i32`` bounds ``program_id``, and not without it.
- A load or store whose mask is extracted as all-true loses the mask (and a load its ``other``);
  translation validation checks the dropped mask is true on every lane.
- The cost model prices same-width integer casts as renames and unsigned division below signed,
  and ``optimize`` never returns a program its model prices above the input.

Soundness: every optimized program is translation-validated, and run by the numpy interpreter
against the unoptimized one on ragged sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
from bench.naive import BY_NAME, launch_facts, load, param_names
from eggpu.ir import Builder, f32, i32, i64, pointer, scalar, u32
from eggpu.ir.interp import interpret
from eggpu.ir.parser import parse_function
from eggpu.optimizer import optimize
from eggpu.optimizer.cost import CostModel
from eggpu.optimizer.rules_loader import load_rules
from eggpu.optimizer.validate import validate
from eggpu.testing import assert_rewrites

RULES = {r.name: r for r in load_rules(env=False).rules}
UNSIGNED_RULES = ("sdiv-nonneg-unsigned", "srem-nonneg-unsigned", "sdiv-nonneg-unsigned-i64",
                  "srem-nonneg-unsigned-i64")


def _rule(*names: str) -> str:
    return "\n".join(RULES[n].text for n in names)


# ---------------------------------------------------------------- the unsigned rewrites, alone

def _divrem_prog(op: str, dt: str, lo: int, divisor: int) -> str:
    """``op(arange(lo, lo + 64) as dt, divisor)`` stored: the dividend's range is the arange's."""
    cast = "" if dt == "i32" else f"\n  %a = cast(%0) {{dtype={dt}}} : {dt}[64]"
    x = "%0" if dt == "i32" else "%a"
    return f"""kernel k(%y: ptr<{dt}>) grid=1 {{
  %r = splat(%y) {{shape=(64)}} : ptr<{dt}>[64]
  %z = arange() {{end=64, start=0}} : i32[64]
  %s = addptr(%r, %z) : ptr<{dt}>[64]
  %0 = arange() {{end={lo + 64}, start={lo}}} : i32[64]{cast}
  %1 = const() {{dtype={dt}, value={divisor}}} : {dt}
  %2 = splat(%1) {{shape=(64)}} : {dt}[64]
  %3 = {op}({x}, %2) : {dt}[64]
  store(%s, %3)
}}"""


def _unsigned_prog(op: str, dt: str, lo: int, divisor: int) -> str:
    u = {"i32": "u32", "i64": "u64"}[dt]
    cast = "" if dt == "i32" else f"\n  %a = cast(%0) {{dtype={dt}}} : {dt}[64]"
    x = "%0" if dt == "i32" else "%a"
    return f"""kernel k(%y: ptr<{dt}>) grid=1 {{
  %r = splat(%y) {{shape=(64)}} : ptr<{dt}>[64]
  %z = arange() {{end=64, start=0}} : i32[64]
  %s = addptr(%r, %z) : ptr<{dt}>[64]
  %0 = arange() {{end={lo + 64}, start={lo}}} : i32[64]{cast}
  %u = cast({x}) {{dtype={u}}} : {u}[64]
  %1 = const() {{dtype={dt}, value={divisor}}} : {dt}
  %c = splat(%1) {{shape=(64)}} : {dt}[64]
  %2 = cast(%c) {{dtype={u}}} : {u}[64]
  %3 = {op}(%u, %2) : {u}[64]
  %4 = cast(%3) {{dtype={dt}}} : {dt}[64]
  store(%s, %4)
}}"""


RANGE_RULES = ("range-arange", "range-const-signed", "range-splat-lo", "range-splat-hi", "range-cast-int")


@pytest.mark.parametrize(("op", "dt", "rule"), [
    ("div", "i32", "sdiv-nonneg-unsigned"), ("rem", "i32", "srem-nonneg-unsigned"),
    ("div", "i64", "sdiv-nonneg-unsigned-i64"), ("rem", "i64", "srem-nonneg-unsigned-i64"),
])
def test_signed_divrem_of_non_negatives_becomes_unsigned(op, dt, rule):
    assert_rewrites(_rule(rule, *RANGE_RULES), _divrem_prog(op, dt, 3, 768), _unsigned_prog(op, dt, 3, 768))


@pytest.mark.parametrize(("lo", "divisor"), [(-1, 768), (0, 0), (0, -768)])
def test_a_possibly_negative_operand_keeps_the_signed_form(lo, divisor):
    prog = _divrem_prog("rem", "i32", lo, divisor)
    res = optimize(parse_function(prog), rules=[], shipped_rules=True)
    assert res.rule_hits.get("srem-nonneg-unsigned", 0) == 0
    assert not any(o.op == "rem" and o.results[0].type.dtype == u32 for o in res.function.walk())


@pytest.mark.parametrize("name", UNSIGNED_RULES)
def test_the_unsigned_rules_ship_fully_proved(name):
    """Their proofs are in rules/proofs.json for every dtype they match (test_shipped_proofs
    checks that file against the rule texts; proving again here would depend on wall-clock)."""
    from eggpu.optimizer import shipped_proofs

    found = [e for e in shipped_proofs.entries().values() if e["rule"] == name]
    assert len(found) == 1 and found[0]["results"]
    assert all(r["status"] == "proved" for r in found[0]["results"])


# ---------------------------------------------------------------- on the naive kernels

def _case(name: str, size: int):
    k = BY_NAME[name]
    case = k.make(size, np.random.default_rng(size))
    jf = getattr(load("eggpu"), name)
    inst = jf.specialize(*case.args, **k.consts)
    options, _, _ = launch_facts(case, param_names(jf), k.consts)
    return k, case, inst, options


@pytest.mark.parametrize("name", ["poi_bias_relu", "poi_row_col_affine", "poi_masked_fill", "poi_embedding"])
def test_rem_and_div_by_768_become_unsigned_under_launch_facts(name):
    _, _, inst, options = _case(name, 10)
    ck = eggpu.compile(inst, target="sm_90", cache=False, **options)
    opt = ck.report["optimizer"]
    fired = opt["rules_fired"]
    assert fired.get("srem-nonneg-unsigned", 0) + fired.get("sdiv-nonneg-unsigned", 0) >= 1, fired
    assert opt["validation"] == "valid" and not opt["fell_back"]
    assert opt["cost_after"] < opt["cost_before"]
    assert not any(o.op in ("div", "rem") and o.results[0].type.dtype == i32 for o in ck.ir.walk()), str(ck.ir)


def test_without_the_offsets_fact_the_index_is_not_known_non_negative():
    _, _, inst, options = _case("poi_bias_relu", 10)
    options = {k: v for k, v in options.items() if k != "offsets_i32"}
    ck = eggpu.compile(inst, target="sm_90", cache=False, **options)
    assert ck.report["optimizer"]["rules_fired"].get("srem-nonneg-unsigned", 0) == 0
    assert any(o.op == "rem" and o.results[0].type.dtype == i32 for o in ck.ir.walk())


@pytest.mark.parametrize(("name", "size"), [(n, s) for n in ("poi_bias_relu", "poi_row_col_affine", "poi_embedding",
                                                               "poi_permute") for s in BY_NAME[n].sizes])
def test_optimized_naive_kernels_interpret_like_the_originals(name, size, optimized_like_original):
    _, case, inst, options = _case(name, size)
    optimized_like_original(inst, case, options, f"{name} size {size}")


# ---------------------------------------------------------------- all-true masks

def _masked_copy(bound: str, n_param: bool = False) -> str:
    """y[offs] = x[offs] * 2 for offs = arange(0, 128), masked with ``offs < bound``."""
    return f"""kernel k(%x: ptr<f32>, %y: ptr<f32>, %n: i32) grid=1 {{
  %0 = arange() {{end=128, start=0}} : i32[128]
  {"%b = splat(%n) {shape=(128)} : i32[128]" if n_param else
   f"%c = const() {{dtype=i32, value={bound}}} : i32" + chr(10) + "  %b = splat(%c) {shape=(128)} : i32[128]"}
  %m = lt(%0, %b) : bool[128]
  %p = splat(%x) {{shape=(128)}} : ptr<f32>[128]
  %q = addptr(%p, %0) : ptr<f32>[128]
  %z = const() {{dtype=f32, value=0.0}} : f32
  %o = splat(%z) {{shape=(128)}} : f32[128]
  %1 = load(%q, %m, %o) : f32[128]
  %2 = add(%1, %1) : f32[128]
  %r = splat(%y) {{shape=(128)}} : ptr<f32>[128]
  %s = addptr(%r, %0) : ptr<f32>[128]
  store(%s, %2, %m)
}}"""


def _memory_ops(fn):
    return [o for o in fn.walk() if o.op in ("load", "store")]


@pytest.mark.parametrize("bound", [128, 129, 4096])
def test_a_mask_proved_all_true_is_dropped(bound):
    fn = parse_function(_masked_copy(str(bound)))
    res = optimize(fn)
    assert not res.fell_back and res.validation.ok, res.reason
    load_op, store_op = _memory_ops(res.function)
    assert len(load_op.operands) == 1 and len(store_op.operands) == 2, str(res.function)
    x = np.random.default_rng(bound).standard_normal(128).astype(np.float32)
    outs = []
    for f in (fn, res.function):
        y = np.full(128, -7.0, np.float32)
        interpret(f, 1, x, y, 5)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[1], x * 2)


@pytest.mark.parametrize(("bound", "n_param"), [("127", False), ("1", False), ("", True)])
def test_a_mask_that_may_be_false_stays(bound, n_param):
    res = optimize(parse_function(_masked_copy(bound, n_param)))
    assert not res.fell_back
    load_op, store_op = _memory_ops(res.function)
    assert len(load_op.operands) == 3 and len(store_op.operands) == 3


def _copy_with_mask(mask_bound: int | None) -> object:
    b = Builder("k", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    offs = b.op("arange", start=0, end=8)
    px = b.op("addptr", b.op("splat", b.param("x"), shape=(8,)), offs)
    py = b.op("addptr", b.op("splat", b.param("y"), shape=(8,)), offs)
    if mask_bound is None:
        v = b.op("load", px)
        b.effect("store", py, v)
    else:
        m = b.op("lt", offs, b.op("splat", b.const(mask_bound, i32), shape=(8,)))
        v = b.op("load", px, m, b.op("splat", b.const(0.0, f32), shape=(8,)))
        b.effect("store", py, v, m)
    return b.finish()


def test_validation_accepts_dropping_a_true_mask_and_rejects_dropping_another():
    unmasked = _copy_with_mask(None)
    assert validate(_copy_with_mask(8), unmasked).verdict == "valid"
    v = validate(_copy_with_mask(7), unmasked)
    assert v.verdict == "invalid" and "mask" in v.detail and "not true on every lane" in v.detail


def test_validation_still_rejects_other_operand_count_changes():
    b = Builder("k", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    offs = b.op("arange", start=0, end=8)
    px = b.op("addptr", b.op("splat", b.param("x"), shape=(8,)), offs)
    py = b.op("addptr", b.op("splat", b.param("y"), shape=(8,)), offs)
    m = b.op("lt", offs, b.op("splat", b.const(8, i32), shape=(8,)))
    v = b.op("load", px, m)
    b.effect("store", py, v, m)
    masked_load_only = b.finish()
    # the original's load has no mask: the optimized one may not gain one
    assert validate(_copy_with_mask(None), masked_load_only).verdict == "invalid"


# ---------------------------------------------------------------- cost model and extraction

def _types(*specs):
    from eggpu.ir import BlockType

    return [BlockType(d, (128,)) for d in specs]


def test_same_width_integer_casts_are_renames_and_others_are_not():
    m = CostModel.for_target("sm_90")
    rename = m.op_cost("cast", _types(i32), _types(u32))
    assert 0 < rename < m.op_cost("add", _types(i32, i32), _types(i32)) / 10
    assert m.op_cost("cast", _types(i32), _types(i64)) == pytest.approx(m.cast_lane * 128)
    assert m.op_cost("cast", _types(i32), _types(f32)) == pytest.approx(m.cast_lane * 128)


@pytest.mark.parametrize(("signed", "unsigned"), [(i32, u32), (i64, eggpu.ir.u64)])
def test_unsigned_division_is_cheaper_and_wins_with_its_casts(signed, unsigned):
    m = CostModel.for_target("sm_90")
    for op in ("div", "rem"):
        s = m.op_cost(op, _types(signed, signed), _types(signed))
        u = m.op_cost(op, _types(unsigned, unsigned), _types(unsigned))
        casts = 3 * m.op_cost("cast", _types(signed), _types(unsigned))
        assert u + casts < s


def test_optimize_never_returns_a_costlier_program(monkeypatch):
    """If extraction ever picks a program the model prices above the input, the input is kept."""
    import eggpu.optimizer.decode as decode

    fn = parse_function(_masked_copy("n", n_param=True))
    real_run = decode.Decoder.run

    def costlier(self):
        out = real_run(self)
        b = Builder("k", [(p.name, p.type) for p in out.params], grid_rank=out.grid_rank)
        # the same program with a pointless integer division added to the stored value's path
        offs = b.op("arange", start=0, end=128)
        q = b.op("div", offs, b.op("splat", b.param("n"), shape=(128,)))
        m = b.op("lt", b.op("add", offs, b.op("sub", q, q)), b.op("splat", b.param("n"), shape=(128,)))
        px = b.op("addptr", b.op("splat", b.param("x"), shape=(128,)), offs)
        v = b.op("load", px, m, b.op("splat", b.const(0.0, f32), shape=(128,)))
        py = b.op("addptr", b.op("splat", b.param("y"), shape=(128,)), offs)
        b.effect("store", py, b.op("add", v, v), m)
        return b.finish()

    monkeypatch.setattr(decode.Decoder, "run", costlier)
    res = optimize(fn)
    model = CostModel.for_target("sm_90")
    assert res.cost_after == pytest.approx(res.cost_before) == pytest.approx(model.function_cost(fn))
    assert model.function_cost(res.function) <= model.function_cost(fn)
    assert res.reason and "costlier" in res.reason


@pytest.mark.parametrize("name", ["poi_gelu", "poi_cast_chain", "red_row_sum", "poi_bias_relu"])
def test_extraction_is_never_priced_above_the_input(name, monkeypatch):
    """These kernels used to extract a costlier DAG (a tree-cheaper hoisted address that kept a
    shared index alive too), so optimize kept the whole input; the input as a candidate plus the
    local search give a strictly cheaper program instead."""
    import eggpu.optimizer.decode as decode

    _, _, inst, options = _case(name, BY_NAME[name].bench_size)
    fn = eggpu.compile(inst, target="sm_90", cache=False, optimize=False, **options).ir
    seen = []
    real_run = decode.Decoder.run

    def spy(self):
        out = real_run(self)
        seen.extend(self.extractions)
        return out

    monkeypatch.setattr(decode.Decoder, "run", spy)
    res = optimize(fn)
    assert not res.fell_back and res.reason == "" and res.validation.ok
    assert res.cost_after < res.cost_before
    assert seen and all(ex.cost <= ex.candidates["original"] * (1 + 1e-9) for ex in seen)


# ---------------------------------------------------------------- where(m, load(p, m, o), o)

def _where_of_load(load_mask: str, where_mask: str, other: str = "0.0", fallback: str = "0.0") -> str:
    """out = where(<where_mask>, load(x, <load_mask>, other), fallback) with a = offs < n and
    b = offs < 100 (masks: "a", "b", "ab" for a & b)."""
    return f"""kernel k(%x: ptr<f32>, %y: ptr<f32>, %n: i32) grid=1 {{
  %0 = arange() {{end=128, start=0}} : i32[128]
  %sn = splat(%n) {{shape=(128)}} : i32[128]
  %a = lt(%0, %sn) : bool[128]
  %c = const() {{dtype=i32, value=100}} : i32
  %sc = splat(%c) {{shape=(128)}} : i32[128]
  %b = lt(%0, %sc) : bool[128]
  %ab = and(%a, %b) : bool[128]
  %p = splat(%x) {{shape=(128)}} : ptr<f32>[128]
  %q = addptr(%p, %0) : ptr<f32>[128]
  %z = const() {{dtype=f32, value={other}}} : f32
  %o = splat(%z) {{shape=(128)}} : f32[128]
  %f = const() {{dtype=f32, value={fallback}}} : f32
  %fo = splat(%f) {{shape=(128)}} : f32[128]
  %1 = load(%q, %{load_mask}, %o) : f32[128]
  %2 = where(%{where_mask}, %1, %fo) : f32[128]
  %r = splat(%y) {{shape=(128)}} : ptr<f32>[128]
  %s = addptr(%r, %0) : ptr<f32>[128]
  store(%s, %2)
}}"""


@pytest.mark.parametrize(("load_mask", "where_mask", "other", "fallback", "folds"), [
    ("a", "a", "0.0", "0.0", True),            # where(m, load(p, m, 0), 0) is the load
    ("ab", "a", "0.0", "0.0", True),           # Inductor: where(m, load(p, m & xmask, 0), 0)
    ("ab", "b", "-inf", "-inf", True),         # either operand of the and, any fallback equal to other
    ("a", "a", "0.0", "-inf", False),          # a different fallback is a real selection
    ("a", "ab", "0.0", "0.0", False),          # a narrower selection than the load's mask
    ("a", "a", "-0.0", "0.0", False),          # -0.0 is not 0.0
])
def test_a_where_around_a_masked_load_with_the_same_fallback_folds(load_mask, where_mask, other, fallback, folds):
    fn = parse_function(_where_of_load(load_mask, where_mask, other, fallback))
    res = optimize(fn)
    assert not res.fell_back and res.validation.ok, res.reason
    wheres = [o for o in res.function.walk() if o.op == "where"]
    assert (not wheres) == folds, str(res.function)
    rng = np.random.default_rng(3)
    for n in (1, 77, 128):
        x = rng.standard_normal(128).astype(np.float32)
        outs = []
        for f in (fn, res.function):
            y = np.full(128, 5.0, np.float32)
            interpret(f, 1, x, y, n)
            outs.append(y)
        np.testing.assert_array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))
