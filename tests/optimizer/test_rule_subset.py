"""Only the rules that can match (issue 12 item 2): the selection, and that it changes nothing."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from eggpu.ir.printer import print_function
from eggpu.kernels import LIBRARY
from eggpu.optimizer import optimize, prepare_rules
from eggpu.optimizer.rule_subset import program_constructors, rule_needs, select_rules
from eggpu.optimizer.rules_loader import load_sources

RULES = """
(rewrite (Add t x (Const t 0)) x :name "add-zero")
(rewrite (Mul t x (Const t 2)) (Shl t x (Const t 1)) :name "mul-two")
(rewrite (Shl t x (Const t 1)) (Add t x x) :name "shl-one")
(birewrite (Sub t x y) (Add t x (Neg t y)) :name "sub-neg")
(rewrite (Maximum t x x) x :name "max-self")
(rule ((= e (Neg t x)) (IsInt t)) ((union e (Sub t (Const t 0) x))) :ruleset ranges :name "neg-analysis")
"""


@pytest.fixture(scope="module")
def rules():
    return load_sources([("test.egg", RULES)], validate_egglog=False).rules


def test_needs_and_gives(rules):
    by = {r.name: rule_needs(r) for r in rules}
    assert by["mul-two"].needs == (frozenset({"Mul", "Const"}),)
    assert by["mul-two"].gives == frozenset({"Shl", "Const"})
    assert by["sub-neg"].needs == (frozenset({"Sub"}), frozenset({"Add", "Neg"}))  # both directions
    assert by["neg-analysis"].needs == (frozenset({"Neg"}),)
    assert by["neg-analysis"].gives == frozenset({"Sub", "Const"})


def test_selection_is_closed_under_what_right_hand_sides_build(rules):
    sel = select_rules(rules, {"Mul", "Const"})
    # mul-two builds Shl, shl-one then builds Add, add-zero can match that
    assert [r.name for r in sel.rules] == ["add-zero", "mul-two", "shl-one"]
    assert sel.skipped == {"sub-neg": ("Sub",), "max-self": ("Maximum",), "neg-analysis": ("Neg",)}
    assert "3 of 6 rules can match" in sel.why(6)


def test_birewrite_and_analysis_rules_are_followed_both_ways(rules):
    sel = select_rules(rules, {"Add", "Neg", "Const"})  # the right-hand side of sub-neg
    names = {r.name for r in sel.rules}
    assert {"sub-neg", "neg-analysis", "add-zero"} <= names and "max-self" not in names
    assert "Sub" in sel.constructors
    assert select_rules(rules, set()).rules == ()


def test_program_constructors_reads_encoded_commands():
    cmds = '(let $v0 (Add (I32) (Opaque (I32) 0) (Const (I32) 0)))\n(let $v1 (Neg (I32) $v0))'
    assert program_constructors(cmds) == frozenset({"Add", "Opaque", "Const", "Neg"})
    assert "I32" not in program_constructors(cmds)  # dtypes are not Term constructors


def _library_functions():
    for lk in LIBRARY:
        case = lk.make_case(lk.sizes[0], lk.dtypes[0], np.random.default_rng(0))
        yield lk.name, lk.instance(case).ir()


def _in_fresh_thread(fn, **kw):
    """optimize() in a new thread: its engine cache is empty, so only the subset is loaded."""
    out = {}
    t = threading.Thread(target=lambda: out.update(r=optimize(fn, **kw)))
    t.start()
    t.join()
    return out["r"]


def test_library_kernels_optimize_the_same_with_only_the_rules_that_can_match():
    usable = len(prepare_rules().used)
    for name, fn in _library_functions():
        full = optimize(fn, subset_rules=False, validate=False)
        sub = _in_fresh_thread(fn, validate=False)
        assert not full.fell_back and not sub.fell_back, name
        assert print_function(sub.function) == print_function(full.function), name
        assert (sub.rule_hits, sub.egraph_nodes, sub.iterations, sub.stop_reason) == (
            full.rule_hits, full.egraph_nodes, full.iterations, full.stop_reason), name
        assert full.rules_loaded == usable and "subsetting is off" in full.rules_loaded_why
        assert 0 < sub.rules_loaded < usable, name
        assert f"{sub.rules_loaded} of {usable} rules can match" in sub.rules_loaded_why
        assert set(sub.rule_hits) <= set(prepare_rules().used)


def test_a_thread_reuses_a_loaded_superset_and_then_loads_every_rule():
    fns = dict(_library_functions())

    def run():
        a = optimize(fns["vector_add"], validate=False)  # the first e-graph: only its subset
        b = optimize(fns["layer_norm_backward"], validate=False)  # needs more: every rule
        c = optimize(fns["gelu_forward"], validate=False)  # served by the loaded full e-graph
        d = optimize(fns["vector_add"], validate=False)  # its own subset is still the smallest fit
        return a, b, c, d

    out = {}
    t = threading.Thread(target=lambda: out.update(r=run()))
    t.start()
    t.join()
    a, b, c, d = out["r"]
    usable = len(prepare_rules().used)
    assert a.rules_loaded < usable and b.rules_loaded == usable and c.rules_loaded == usable
    assert d.rules_loaded == a.rules_loaded
    assert f"the e-graph that ran holds all {usable} rules" in c.rules_loaded_why
    assert print_function(a.function) == print_function(d.function)
