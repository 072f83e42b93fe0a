"""``eggpu rules synthesize``: enumeration over the op table, fingerprints, proofs, the .egg file, the CLI."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eggpu
import eggpu.language as tl
from eggpu.ir import OPS
from eggpu.ir.dtypes import bool_, f32, i32, u8, u64
from eggpu.ir.ops import ELEMENTWISE, PURE, TRANSCENDENTAL
from eggpu.optimizer.cost import CostModel
from eggpu.optimizer.rule_verifier import verify_rule
from eggpu.optimizer.rules_loader import load_rule_files, parse_rules
from eggpu.optimizer.synth_terms import Term, canonical_names, enumerate_terms, fingerprints, signatures
from eggpu.optimizer.synthesize import derivable, egg_text, rule_text, states, synthesize

CM = CostModel.for_target("sm_90")


@pytest.fixture(scope="module")
def small_i32():
    """A size-3 run over i32 (seconds): the shipped rules skipped."""
    return synthesize([i32], max_size=3, time_limit=120)


# ------------------------------------------------------------------ the op set comes from the op table


def test_signatures_are_derived_from_the_op_table():
    sigs = signatures(i32)
    ops = {s.op for s in sigs}
    for s in sigs:
        d = OPS[s.op]
        assert d.has(PURE) and d.has(ELEMENTWISE) and not d.has(TRANSCENDENTAL) and not d.attrs
    assert {"add", "sub", "mul", "div", "rem", "shl", "shr", "and", "not", "abs", "where", "lt"} <= ops
    assert "sqrt" not in ops and "fma" not in ops  # float-only ops never at i32
    fops = {s.op for s in signatures(f32)}
    assert {"sqrt", "fma", "floor", "where"} <= fops and not fops & {"shl", "exp", "tanh"}
    lt = [s for s in sigs if s.op == "lt"]
    assert [(s.operands, s.result) for s in lt] == [((i32, i32), bool_)]
    assert ("where", (bool_, i32, i32), i32) in {(s.op, s.operands, s.result) for s in sigs}


def test_enumeration_groups_equal_terms_and_counts_every_term():
    e = enumerate_terms(i32, max_size=3, lane_cost=CM.lane_cost, const_cost=0.06)
    assert not e.partial and e.sizes_done == 3
    assert e.terms == sum(len(c.members) for c in e.classes)
    by_str = {str(t): c for c in e.classes for t in c.members}
    assert by_str["add(x, 0)"] is by_str["x"]
    assert by_str["shl(x, 1)"] is by_str["mul(x, 2)"] is by_str["add(x, x)"]
    assert by_str["add(x, 1)"] is not by_str["x"]
    assert "add(0, x)" not in by_str  # commutative ops: one operand order
    assert str(by_str["mul(x, 2)"].best) == "add(x, x)"  # cheapest: an add costs less than a mul or a shift


def test_fingerprints_canonicalize_nan_but_not_signed_zero():
    mult = np.array([[3, 5, 7], [11, 13, 17]], dtype=np.uint64)
    a = np.array([[np.nan, 1.0, -0.0]], dtype=np.float32)
    b = a.copy()
    b.view(np.uint32)[0, 0] = 0x7FC00123  # another NaN payload
    c = np.array([[np.nan, 1.0, 0.0]], dtype=np.float32)
    fa, fb, fc = (fingerprints(x, f32, mult)[0] for x in (a, b, c))
    assert fa == fb and fa != fc


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=4, max_size=4),
       st.lists(st.integers(-(2**31), 2**31 - 1), min_size=4, max_size=4))
def test_fingerprints_separate_different_rows(xs, ys):
    mult = np.random.default_rng(1).integers(1, 2**62, (2, 4), dtype=np.uint64) | np.uint64(1)
    rows = np.array([xs, ys], dtype=np.int32)
    f = fingerprints(rows, i32, mult)
    assert (f[0] == f[1]) == (xs == ys)


def test_canonical_names_keep_one_renaming():
    x, y = Term("var", i32, value="x"), Term("var", i32, value="y")
    assert canonical_names(Term("sub", i32, (x, y)))
    assert not canonical_names(Term("sub", i32, (y, x)))
    assert not canonical_names(Term("neg", i32, (y,)))


# ------------------------------------------------------------------ rules: found, proved, loadable


def test_every_emitted_rule_loads_and_is_proved(small_i32, tmp_path):
    res = small_i32
    assert res.rules and not res.partial
    p = tmp_path / "synth.egg"
    p.write_text(egg_text(res, "test"))
    loaded = load_rule_files([p])
    assert [r.name for r in loaded.rules] == [r.name for r in res.rules]
    for r in loaded.rules:
        v = verify_rule(r)
        assert v.usable, (r.name, v.summary())
    text = p.read_text()
    assert text.count(";; eggpu rules synthesize v1 | dtype i32 | lhs size") == len(res.rules)
    assert "proved i32 by" in text and "units)" in text


def test_known_identities_are_found(small_i32):
    found = {f"{r.lhs} => {r.rhs}" for r in small_i32.rules}
    assert "mul(x, 2) => add(x, x)" in found
    assert "div(x, -1) => neg(x)" in found
    # x + 0 => x is a shipped rule (add-zero-int): found, then skipped as already shipped
    assert "add(x, 0) => x" in small_i32.skipped_shipped
    again = synthesize([i32], max_size=3, time_limit=120, skip_shipped=False, max_rules=400)
    assert "add(x, 0) => x" in {f"{r.lhs} => {r.rhs}" for r in again.rules}


def test_rules_save_cost(small_i32):
    for r in small_i32.rules:
        assert r.rhs.cost <= r.lhs.cost - 0.5
        assert set(r.rhs.variables()) <= set(r.lhs.variables())


def test_unsound_candidates_from_few_samples_are_refuted_and_not_emitted():
    res = synthesize([i32], max_size=3, time_limit=120, n_samples=2, seed=3)
    assert res.refuted, "two samples per variable must give false equalities"
    emitted = {f"{r.lhs} => {r.rhs}" for r in res.rules}
    assert not emitted & set(res.refuted)
    for r in res.rules:
        assert verify_rule(parse_rules(r.text)[0][0]).usable, r.text


def test_a_tiny_time_limit_stops_early_with_a_partial_result():
    res = synthesize([i32, f32], max_size=5, time_limit=0.05)
    assert res.partial
    assert "time limit" in res.stop_reason
    res = synthesize([i32], max_size=3, time_limit=120, max_rules=2)
    assert res.partial and len(res.rules) == 2 and "rule limit (2)" in res.stop_reason


def test_shipped_and_derivable_candidates_are_recognized():
    shipped = parse_rules('(rewrite (Add t x (Splat t s (Const t 0))) x :when ((IsInt t)) :name "add-zero")')[0][0]
    cand = parse_rules(rule_text("c", Term("add", i32, (Term("var", i32, value="x"), Term("const", i32, value=0))),
                                 Term("var", i32, value="x")))[0][0]
    assert states(shipped, cand)
    fshipped = parse_rules('(rewrite (Add t x (Splat t s (Const t 0))) x :when ((IsFloat t)) :name "f")')[0][0]
    assert not states(fshipped, cand)  # the family guard does not hold at i32
    swapped = parse_rules('(rewrite (Add (I32) (Splat (I32) s (Const (I32) 0)) x) x :name "sw")')[0][0]
    assert states(shipped, swapped)  # commutative operands in either order
    bigger = parse_rules('(rewrite (Mul (I32) (Add (I32) y (Splat (I32) s (Const (I32) 0))) y) (Mul (I32) y y) '
                         ':name "b")')[0][0]
    assert derivable([shipped], bigger)
    assert not derivable([shipped], dataclasses.replace(bigger, lhs=bigger.rhs))


def test_bad_max_size_and_time_limit_raise():
    from eggpu.ir.errors import RuleError

    with pytest.raises(RuleError, match="max size must be between 1 and 7, got 9"):
        synthesize([i32], max_size=9)
    with pytest.raises(RuleError, match="time limit must be a positive number of seconds, got -2"):
        synthesize([i32], time_limit=-2)


# ------------------------------------------------------------------ the command line


def test_cli_writes_a_loadable_file_with_progress_on_stderr(cli_run, tmp_path):
    out = tmp_path / "mine.egg"
    code, stdout, err = cli_run("rules", "synthesize", "--out", str(out), "--max-size", "3", "--time-limit",
                                "120", "--dtypes", "i32")
    assert code == 0 and stdout == ""
    assert "candidates to prove" in err and f"rules to {out}" in err
    rules = load_rule_files([out]).rules
    assert rules and all(r.name.startswith("syn-i32-") for r in rules)
    assert ";; command: eggpu rules synthesize --out" in out.read_text()
    # the proofs went to the proof cache: a compile with the file does not prove them again
    from eggpu.optimizer.rule_verifier import verify_rules

    verdicts = verify_rules(rules, workers=1)
    assert all(v.cached and v.usable for v in verdicts.values())


@pytest.mark.parametrize("args, message", [
    (["--dtypes", "i33"], "--dtypes: unknown dtype 'i33' (choose from i8, "),
    (["--dtypes", "i32,i32"], "--dtypes: 'i32' is given twice"),
    (["--dtypes", "bool"], "--dtypes: bool terms are enumerated with every dtype 'bool'"),
    (["--dtypes", "i32,,f32"], "--dtypes: expected comma-separated dtype names such as i32,f32, got 'i32,,f32'"),
    (["--max-size", "8"], "--max-size: must be between 1 and 7, got 8"),
    (["--vars", "4"], "--vars: must be 1, 2 or 3, got 4"),
])
def test_cli_bad_arguments_are_one_error_line(cli_run, tmp_path, args, message):
    code, out, err = cli_run("rules", "synthesize", "--out", str(tmp_path / "o.egg"), *args)
    assert code == 2 and out == ""
    assert err.startswith("eggpu: error: ") and message in err
    assert not (tmp_path / "o.egg").exists()


def test_cli_bad_out_and_numbers(cli_run, tmp_path):
    code, _, err = cli_run("rules", "synthesize", "--out", str(tmp_path / "no" / "o.egg"))
    assert code == 2 and f"--out: folder {tmp_path / 'no'} does not exist" in err
    code, _, err = cli_run("rules", "synthesize", "--out", str(tmp_path))
    assert code == 2 and f"--out: {tmp_path} is a directory" in err
    code, _, err = cli_run("rules", "synthesize", "--out", str(tmp_path / "o.egg"), "--time-limit", "-1")
    assert code == 2 and "--time-limit" in err and "must be a positive number, got -1" in err
    code, _, err = cli_run("rules", "synthesize", "--out", str(tmp_path / "o.egg"), "--time-limit", "soon")
    assert code == 2 and "expected a positive number, got 'soon'" in err
    code, _, err = cli_run("rules", "synthesize")
    assert code == 2 and "--out" in err


def test_unsigned_constants_and_samples_fit_the_dtype():
    e = enumerate_terms(u8, max_size=2, lane_cost=CM.lane_cost, const_cost=0.06, n_samples=16)
    consts = sorted(t.value for c in e.classes for t in c.members if t.op == "const")
    assert consts == [0, 1, 2, 255]


def test_a_candidate_past_its_wall_clock_cap_is_stopped_and_not_emitted():
    res = synthesize([i32], max_size=3, time_limit=120, candidate_cap_s=0.001, max_rules=5)
    assert res.tried and not res.rules
    assert all("(stopped after 0.0s)" in u for u in res.unknown) and len(res.unknown) == res.tried


@eggpu.kernel
def negdiv(x_ptr: tl.Pointer[tl.i32], y_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, x // -1 + x * 2, mask=mask)


def test_synthesized_rules_fire_in_a_compile_and_the_kernel_stays_right(small_i32, tmp_path):
    p = tmp_path / "synth.egg"
    p.write_text(egg_text(small_i32))
    ck = eggpu.compile(negdiv.Kernel(256), rules=[str(p)], cache=False)
    fired = {r for r in ck.report["optimizer"]["rules_fired"] if r.startswith("syn-")}
    div_neg = next(r.name for r in small_i32.rules if str(r.lhs) == "div(x, -1)")
    assert div_neg in fired
    assert ck.report["optimizer"]["validation"] == "valid"
    assert " div(" not in str(ck.ir)
    for n in (1, 1000, 1001):
        x = np.random.default_rng(n).integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        y = np.zeros(n, np.int32)
        ck.run_cpu(((n + 255) // 256,), x, y, np.int32(n))
        with np.errstate(over="ignore"):
            assert np.array_equal(y, (-x) + x * np.int32(2))


def test_workload_terms_come_from_the_kernel_and_are_tried_first():
    from eggpu.optimizer.synth_workload import workload_terms

    fn = negdiv.Kernel(256).ir()
    terms = {str(t) for t in workload_terms([fn], i32, 2, CM.lane_cost, 0.06)}
    # the load is a variable, the splatted constants are constants
    assert {"div(x, -1)", "mul(x, 2)", "add(div(x, -1), mul(x, 2))"} <= terms
    res = synthesize([i32], max_size=3, time_limit=120, workload=[fn], max_rules=3)
    assert res.workload_terms == len(terms) and res.workload_candidates >= 2
    first = res.rules[0]
    assert first.workload and str(first.lhs) in terms
    assert "| workload | proved i32" in first.provenance()
    assert all(r.workload for r in res.rules[:res.workload_candidates] if str(r.lhs) in terms)


def test_u64_all_ones_is_written_as_the_schemas_wrapped_i64():
    res = synthesize([u64], max_size=3, time_limit=120)
    assert not res.unknown and not res.refuted
    text = egg_text(res)
    assert "(Const (U64) -1)" in text and "(Const (U64) 18446744073709551615)" not in text
    assert "minimum(x, 18446744073709551615) => x" in {f"{r.lhs} => {r.rhs}" for r in res.rules}
