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
from eggpu.optimizer.synthesize import SYNTH_VERSION, derivable, egg_text, rule_text, states, synthesize

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
    assert text.count(f";; eggpu rules synthesize v{SYNTH_VERSION} | dtype i32 | lhs size") == len(res.rules)
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
    terms = {str(t) for t in workload_terms([fn], i32, 3, CM.lane_cost, 0.06)}
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


# ------------------------------------------------------------------ workload: targeted search, range guards


@eggpu.kernel
def regroup(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    # Inductor-style index math: column x % 512 of row x // 512 in a matrix of 1024 columns
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = offs % 512 + 1024 * (offs // 512)
    tl.store(y_ptr + offs, tl.load(x_ptr + src, mask=mask, other=0.0), mask=mask)


@eggpu.kernel
def regroup_loaded(i_ptr: tl.Pointer[tl.i32], y_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr):
    # the same expression on loaded values: nothing says they are >= 0
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(i_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, x % 512 + 1024 * (x // 512), mask=mask)


REGROUP = "add(rem(x, 512), mul(1024, div(x, 512)))"


def test_workload_terms_make_a_value_the_term_reads_twice_one_variable():
    from eggpu.optimizer.synth_workload import workload_terms

    terms = {str(t) for t in workload_terms([regroup.Kernel(256).ir()], i32, 3, CM.lane_cost, 0.06)}
    assert REGROUP in terms  # offs = pid * BLOCK + arange is one variable, not add(mul(x, 256), y) twice
    assert "add(rem(add(x, y), 512), mul(1024, div(add(x, y), 512)))" not in terms
    # the second cut keeps ops of values used once: offs itself as a term
    assert "add(x, y)" in terms


def test_derived_constants_hold_what_index_math_needs_and_fit_the_dtype():
    from eggpu.optimizer.synth_workload import MAX_POOL, derived_constants

    t = Term("mul", i32, (Term("const", i32, value=1024), Term("rem", i32, (
        Term("div", i32, (Term("var", i32, value="x"), Term("const", i32, value=64))),
        Term("const", i32, value=32)))))
    pool = derived_constants(t, i32)
    assert {0, 1, -1, 2, 1024, 64, 32, -64, 63, 6, 10, 31 * 1024, 4} <= set(pool)
    assert len(pool) == len(set(pool)) <= MAX_POOL
    small = derived_constants(Term("add", u8, (Term("var", u8, value="x"), Term("const", u8, value=200))), u8)
    assert all(0 <= v <= 255 for v in small) and 199 in small and -200 not in small


def test_nonneg_samples_cover_zero_to_max_only():
    e = enumerate_terms(i32, max_size=1, lane_cost=CM.lane_cost, const_cost=0.06, nonneg=True, pool=[7])
    x = e.var_samples[(i32, "x")]
    assert x.min() == 0 and x.max() == 2**31 - 1
    assert {str(c.best) for c in e.classes if c.best.op == "const"} == {"7"}


@pytest.fixture(scope="module")
def regroup_rules():
    """The regroup kernel as workload, its constants generalized (the default); not skipped as
    shipped (rules/synthesized.egg ships the same family as syn-i32-regroup-pow2)."""
    fn = regroup.Kernel(256).ir()
    return synthesize([i32], max_size=3, time_limit=120, workload=[fn], max_rules=1, skip_shipped=False)


def test_a_targeted_search_finds_a_range_guarded_rule_and_z3_proves_it(regroup_rules):
    res = regroup_rules
    assert res.targeted_candidates >= 1 and res.generalized == 1
    r = res.rules[0]
    assert (str(r.lhs), str(r.rhs), r.nonneg) == (REGROUP, "add(and(x, -512), x)", ("x",))
    assert ":when ((>= (LowerBound x) 0) " in r.text and "| guard x >= 0 | generalized: c0 a power of two" in r.provenance()
    assert verify_rule(parse_rules(r.text, "<t>")[0][0]).status == "proved"
    # the range guard is needed: without it z3 refutes the rule (x = -1: -1 against -513)
    bare = r.text.replace("(>= (LowerBound x) 0) ", "")
    assert verify_rule(parse_rules(bare, "<t>")[0][0]).status == "refuted"


def test_without_generalization_the_rule_holds_for_its_constants():
    fn = regroup.Kernel(256).ir()
    res = synthesize([i32], max_size=3, time_limit=120, workload=[fn], max_rules=1, skip_shipped=False,
                     generalize=False)
    r = res.rules[0]
    assert str(r.lhs) == REGROUP and ":when ((>= (LowerBound x) 0))" in r.text and res.generalized == 0
    assert "(Const (I32) 512)" in r.text and "generalized" not in r.provenance()


def test_the_guarded_rule_fires_only_when_the_range_holds(regroup_rules):
    from eggpu.testing import assert_rule_does_not_fire, assert_rule_fires

    text = regroup_rules.rules[0].text
    s = '(Splat (I32) "16" (Const (I32) {}))'
    x = "(Opaque (I32) 1)"
    before = f"(Add (I32) (Rem (I32) {x} {s.format(512)}) (Mul (I32) {s.format(1024)} (Div (I32) {x} {s.format(512)})))"
    after = f"(Add (I32) (And (I32) {x} {s.format(-512)}) {x})"
    assert_rule_fires(text, before, after, facts=[f"(set (LowerBound {x}) 0)"])
    assert_rule_does_not_fire(text, before, after, facts=[f"(set (LowerBound {x}) -1)"])
    assert_rule_does_not_fire(text, before, after)


def test_the_guarded_rule_wins_in_a_compile_and_the_kernel_stays_right(regroup_rules, tmp_path, monkeypatch,
                                                                      without_shipped_synthesized):
    import functools

    import eggpu.optimizer as opt_mod

    # the rule needs the range analysis to run first: a saturation time limit that a loaded
    # machine cannot cut short (the iteration and e-node limits stay)
    monkeypatch.setattr(opt_mod, "Limits", functools.partial(opt_mod.Limits, seconds=120))
    # (without_shipped_synthesized: rules/synthesized.egg ships this family; compare with the rest)
    p = tmp_path / "synth.egg"
    p.write_text(egg_text(regroup_rules))
    name = regroup_rules.rules[0].name
    # offsets_i32 (the launch fact the bench kernels get) bounds program_id, so offs >= 0 is known
    base = eggpu.compile(regroup.Kernel(256), cache=False, offsets_i32=True)
    ck = eggpu.compile(regroup.Kernel(256), rules=[str(p)], cache=False, offsets_i32=True)
    opt = ck.report["optimizer"]
    assert opt["stop_reason"] != "TIME_LIMIT" and base.report["optimizer"]["stop_reason"] != "TIME_LIMIT"
    assert name in opt["rules_fired"] and opt["validation"] == "valid"
    assert opt["cost_after"] < base.report["optimizer"]["cost_after"] - 256  # two ops a lane fewer
    for n in (1, 1000, 1001):
        x = np.random.default_rng(n).standard_normal(2048 * ((n + 511) // 512)).astype(np.float32)
        y = np.zeros(n, np.float32)
        ck.run_cpu(((n + 255) // 256,), x, y, np.int32(n))
        i = np.arange(n)
        assert np.array_equal(y, x[i % 512 + 1024 * (i // 512)])
    # on loaded values (no range fact) it does not fire, and the result is still C's % and //
    ck2 = eggpu.compile(regroup_loaded.Kernel(256), rules=[str(p)], cache=False, offsets_i32=True)
    assert name not in ck2.report["optimizer"]["rules_fired"]
    for n in (1, 1000, 1001):
        v = np.random.default_rng(n).integers(-2**20, 2**20, n).astype(np.int32)
        out = np.zeros(n, np.int32)
        ck2.run_cpu(((n + 255) // 256,), v, out, np.int32(n))
        q = np.trunc(v / 512).astype(np.int32)
        assert np.array_equal(out, (v - q * 512) + 1024 * q)


# ------------------------------------------------------------------ workload: the sharing pass


@eggpu.kernel
def row_col(x_ptr: tl.Pointer[tl.f32], r_ptr: tl.Pointer[tl.f32], c_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32],
            n: tl.i32, BLOCK: tl.constexpr):
    # a row index and a column index of one flat index (768 columns): x * rowscale + colshift
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) * tl.load(r_ptr + offs // 768, mask=mask) + tl.load(c_ptr + offs % 768, mask=mask)
    tl.store(y_ptr + offs, v, mask=mask)


@eggpu.kernel
def col_only(x_ptr: tl.Pointer[tl.f32], c_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32,
             BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(c_ptr + offs % 768, mask=mask), mask=mask)


def test_shared_terms_pair_a_remainder_with_the_kernels_division_of_the_same_value():
    from eggpu.optimizer.synth_workload import shared_terms

    sh = shared_terms([row_col.Kernel(256).ir()], i32, 3, CM.lane_cost, 0.06)
    assert [str(t) for t in sh["rem(x, 768)"]] == ["div(x, 768)"]
    assert [str(t) for t in sh["div(x, 768)"]] == ["rem(x, 768)"]
    # cheap value terms (the index itself) are not worth sharing (a mask shares terms of 2 a lane or
    # more: test_a_mask_shares_...); a kernel without the division has nothing to share
    assert all(t.cost >= 4 for ts in sh.values() for t in ts)
    assert "rem(x, 768)" not in shared_terms([col_only.Kernel(256).ir()], i32, 3, CM.lane_cost, 0.06)


def test_the_sharing_pass_finds_a_remainder_from_the_division_and_z3_proves_it():
    from eggpu.optimizer.synth_workload import shared_terms, targeted_candidates, workload_terms

    fn = row_col.Kernel(256).ir()
    terms = [t for t in workload_terms([fn], i32, 3, CM.lane_cost, 0.06) if str(t) == "rem(x, 768)"]
    assert not targeted_candidates(terms, i32, CM.lane_cost, 0.06, 0.5, n_samples=192)  # nothing alone
    sh = shared_terms([fn], i32, 3, CM.lane_cost, 0.06)
    (c,) = targeted_candidates(terms, i32, CM.lane_cost, 0.06, 0.5, n_samples=192, shared=sh)
    assert str(c.lhs) == "rem(x, 768)" and [str(s) for s in c.shares] == ["div(x, 768)"]
    assert "div(x, 768)" in str(c.rhs) and not c.nonneg  # C's % and //: no range guard needed
    assert c.rhs.cost > c.lhs.cost  # as a term it costs more: it wins only beside the division
    text = rule_text("syn-test-rem", c.lhs, c.rhs, c.nonneg)
    assert verify_rule(parse_rules(text, "<t>")[0][0]).status == "proved"
    from eggpu.optimizer.synthesize import SynthRule

    prov = SynthRule("syn-test-rem", i32, c.lhs, c.rhs, text, "z3", 1, workload=True, shares="div(x, 768)").provenance()
    assert "| workload | wins beside div(x, 768) (computed anyway) | proved i32" in prov


@eggpu.kernel
def two_halves(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    # poi_cat's masks: the first half of each 512-wide row from one place, the second from another
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    col = offs % 512
    lo = tl.load(x_ptr + offs, mask=(col < 256) & mask, other=0.0)
    hi = tl.load(x_ptr + offs + 7, mask=(col >= 256) & mask, other=0.0)
    tl.store(y_ptr + offs, lo + hi, mask=mask)


#: ``(col >= 256) & mask`` as a workload term (the extraction spells ``col >= 256`` either way)
SECOND_MASK = {"and(le(256, x), p)", "and(ge(x, 256), p)"}


def _halves_ir():
    """``two_halves`` as the shipped rules but the synthesized ones leave it: ``col`` read by both
    comparisons (one variable)."""
    from bench.synth_sass import without_shipped_synthesized

    with without_shipped_synthesized():
        return eggpu.compile(two_halves.Kernel(256), cache=False).ir


def test_a_mask_shares_the_kernels_other_mask_over_the_same_comparison_operands():
    # bool terms take part in the sharing pass; the other mask is abstracted over the same leaves
    # (col, mask), so the comparison the two share is spelt out, not a fresh variable
    from eggpu.optimizer.synth_workload import shared_terms

    fn = _halves_ir()
    sh = shared_terms([fn], i32, 3, CM.lane_cost, 0.06)
    (ge,) = set(sh) & SECOND_MASK
    assert "and(lt(x, 256), p)" in [str(t) for t in sh[ge]]
    assert all(t.cost >= 2 for ts in sh.values() for t in ts)


def test_a_bool_extra_leaf_reads_value_and_bool_variables():
    from eggpu.optimizer.synth_workload import evaluate

    x, p = Term("var", i32, value="x"), Term("var", bool_, value="p")
    m = Term("and", bool_, (Term("lt", bool_, (x, Term("const", i32, value=256, cost=0.06)), size=3, cost=1.06), p),
             size=5, cost=0.0)
    e = enumerate_terms(i32, max_size=3, lane_cost=CM.lane_cost, const_cost=0.06, n_vars=1, bool_vars=1,
                        n_samples=64, pool=[0, 1, 256], extra=[m])
    (fp,) = fingerprints(evaluate(m, e.var_samples, 64)[None, :], bool_, e.mult)
    assert str(m) in [str(t) for t in e.index[(bool_, fp)].members]


def test_the_sharing_pass_finds_the_second_mask_from_the_first_and_z3_proves_it():
    from eggpu.optimizer.synth_workload import shared_terms, targeted_candidates, workload_terms

    fn = _halves_ir()
    terms = [t for t in workload_terms([fn], i32, 3, CM.lane_cost, 0.06) if str(t) in SECOND_MASK]
    assert len(terms) == 1
    assert not targeted_candidates(terms, i32, CM.lane_cost, 0.06, 0.5, n_samples=192)  # nothing alone
    sh = shared_terms([fn], i32, 3, CM.lane_cost, 0.06)
    (c,) = targeted_candidates(terms, i32, CM.lane_cost, 0.06, 0.5, n_samples=192, shared=sh)
    assert str(c.rhs) == "xor(p, and(lt(x, 256), p))" and [str(s) for s in c.shares] == ["and(lt(x, 256), p)"]
    assert not c.nonneg and c.rhs.cost > c.lhs.cost  # every x; wins only beside the other mask
    text = rule_text("syn-test-mask", c.lhs, c.rhs, c.nonneg)
    assert verify_rule(parse_rules(text, "<t>")[0][0]).status == "proved"


def test_terms_the_single_term_searches_did_not_reach_still_get_the_sharing_pass(monkeypatch):
    # with many kernels the single-term searches fill any budget; they stop at ALONE_SHARE of it
    # (0 here: at once), and the sharing pass still tries every term they left
    import time

    import eggpu.optimizer.synth_workload as sw

    fn = _halves_ir()
    terms = [t for t in sw.workload_terms([fn], i32, 3, CM.lane_cost, 0.06) if str(t) in SECOND_MASK | {"rem(x, 512)"}]
    monkeypatch.setattr(sw, "ALONE_SHARE", 0.0)
    seen: list[str] = []
    found = sw.targeted_candidates(terms, i32, CM.lane_cost, 0.06, 0.5, n_samples=192, shared=sw.shared_terms(
        [fn], i32, 3, CM.lane_cost, 0.06), deadline=time.perf_counter() + 3600, progress=seen.append)
    assert [str(c.rhs) for c in found] == ["xor(p, and(lt(x, 256), p))"]  # rem(x, 512) alone: not reached
    assert sum("single-term searches stopped" in m for m in seen) == 1
