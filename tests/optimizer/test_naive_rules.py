"""The shipped rules added for naive (Inductor-style) kernels fire where they should and not elsewhere.

Each rule runs alone (its text from the shipped file, so the test follows the file), on a small
program: ``before`` must become ``after`` (translation-validated by ``assert_rewrites``), and a
program just outside its guard (a constant that does not fit the narrow type, a narrowing cast,
unsigned dtypes, a two-lane arange) must stay as it is.
"""

from __future__ import annotations

import pytest

from eggpu.optimizer.rules_loader import load_rules
from eggpu.testing import assert_rewrites

RULES = {r.name: r for r in load_rules(env=False).rules}


def _rule(*names: str) -> str:
    return "\n".join(RULES[n].text for n in names)


def _cmp_prog(op: str, const_left: bool, narrow: str = "i32", wide: str = "i64", value: int = 256) -> str:
    """``op(cast<wide>(load x), c)`` (or ``op(c, cast(...))``) stored as a bool."""
    a, b = ("%4", "%2") if const_left else ("%2", "%4")
    return f"""kernel k(%x: ptr<{narrow}>, %y: ptr<bool>) grid=1 {{
  %0 = arange() {{end=128, start=0}} : i32[128]
  %p = splat(%x) {{shape=(128)}} : ptr<{narrow}>[128]
  %q = addptr(%p, %0) : ptr<{narrow}>[128]
  %1 = load(%q) : {narrow}[128]
  %2 = cast(%1) {{dtype={wide}}} : {wide}[128]
  %3 = const() {{dtype={wide}, value={value}}} : {wide}
  %4 = splat(%3) {{shape=(128)}} : {wide}[128]
  %5 = {op}({a}, {b}) : bool[128]
  %r = splat(%y) {{shape=(128)}} : ptr<bool>[128]
  %s = addptr(%r, %0) : ptr<bool>[128]
  store(%s, %5)
}}"""


def _narrowed(op: str, const_left: bool, narrow: str = "i32", value: int = 256) -> str:
    a, b = ("%4", "%1") if const_left else ("%1", "%4")
    return f"""kernel k(%x: ptr<{narrow}>, %y: ptr<bool>) grid=1 {{
  %0 = arange() {{end=128, start=0}} : i32[128]
  %p = splat(%x) {{shape=(128)}} : ptr<{narrow}>[128]
  %q = addptr(%p, %0) : ptr<{narrow}>[128]
  %1 = load(%q) : {narrow}[128]
  %3 = const() {{dtype={narrow}, value={value}}} : {narrow}
  %4 = splat(%3) {{shape=(128)}} : {narrow}[128]
  %5 = {op}({a}, {b}) : bool[128]
  %r = splat(%y) {{shape=(128)}} : ptr<bool>[128]
  %s = addptr(%r, %0) : ptr<bool>[128]
  store(%s, %5)
}}"""


CAST_CASES = [("lt-cast-narrow", "lt", False), ("gt-cast-narrow", "lt", True), ("le-cast-narrow", "le", False),
              ("ge-cast-narrow", "le", True), ("eq-cast-narrow", "eq", False), ("ne-cast-narrow", "ne", False)]


@pytest.mark.parametrize(("rule", "op", "const_left"), CAST_CASES, ids=[c[0] for c in CAST_CASES])
def test_cast_compare_narrows(rule, op, const_left):
    res = assert_rewrites(_rule(rule), _cmp_prog(op, const_left), _narrowed(op, const_left))
    assert res.rule_hits.get(rule) == 1


def test_cast_compare_narrows_inductor_ge_spelling():
    # Inductor writes `x0 >= 256` on an i64 view of an i32 index; ge-to-le makes it `256 <= x0`
    res = assert_rewrites(_rule("ge-to-le", "ge-cast-narrow"), _cmp_prog("ge", False), _narrowed("le", True))
    assert res.rule_hits.get("ge-cast-narrow") == 1


@pytest.mark.parametrize(("rule", "op", "const_left"), CAST_CASES, ids=[c[0] for c in CAST_CASES])
def test_cast_compare_keeps_a_constant_that_does_not_fit(rule, op, const_left):
    prog = _cmp_prog(op, const_left, value=1 << 40)
    res = assert_rewrites(_rule(rule), prog, prog)
    assert not res.rule_hits.get(rule)


@pytest.mark.parametrize(("narrow", "wide"), [("i64", "i32"), ("u32", "u64"), ("u8", "i32")])
def test_cast_compare_dtype_guard(narrow, wide):
    # a narrowing cast, unsigned types and zero extension are outside the guard
    prog = _cmp_prog("lt", False, narrow=narrow, wide=wide, value=7)
    res = assert_rewrites(_rule("lt-cast-narrow"), prog, prog)
    assert not res.rule_hits.get("lt-cast-narrow")


def _row_prog(end: int) -> str:
    """Inductor's ``xindex = pid * XBLOCK + tl.arange(0, XBLOCK)[:, None]`` with XBLOCK = ``end``."""
    return f"""kernel k(%x: ptr<f32>) grid=1 {{
  %0 = program_id() {{axis=0}} : i32
  %1 = splat(%0) {{shape=({end},1)}} : i32[{end},1]
  %2 = arange() {{end={end}, start=0}} : i32[{end}]
  %3 = expand_dims(%2) {{axis=1}} : i32[{end},1]
  %4 = add(%1, %3) : i32[{end},1]
  %5 = splat(%x) {{shape=({end},1)}} : ptr<f32>[{end},1]
  %6 = addptr(%5, %4) : ptr<f32>[{end},1]
  %7 = load(%6) : f32[{end},1]
  store(%6, %7)
}}"""


def test_single_lane_arange_becomes_a_splatted_zero():
    after = """kernel k(%x: ptr<f32>) grid=1 {
  %0 = program_id() {axis=0} : i32
  %1 = splat(%0) {shape=(1,1)} : i32[1,1]
  %5 = splat(%x) {shape=(1,1)} : ptr<f32>[1,1]
  %6 = addptr(%5, %1) : ptr<f32>[1,1]
  %7 = load(%6) : f32[1,1]
  store(%6, %7)
}"""
    rules = _rule("arange-single", "expand-dims-splat-1", "splat-add", "add-zero-int-scalar")
    res = assert_rewrites(rules, _row_prog(1), after)
    assert res.rule_hits.get("arange-single") == 1 and res.rule_hits.get("expand-dims-splat-1") == 1


def test_a_two_lane_arange_stays():
    prog = _row_prog(2)
    res = assert_rewrites(_rule("arange-single", "expand-dims-splat-1"), prog, prog)
    assert not res.rule_hits
