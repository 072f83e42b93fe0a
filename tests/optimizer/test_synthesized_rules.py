"""The shipped synthesized rules (``rules/synthesized.egg``, docs/rules.md §7).

Five rules written by ``eggpu rules synthesize`` from the benchmark kernels ship; each fires on a
benchmark kernel, lowers its cost, and passes the SASS check (``bench.synth_sass``: no kernel it
fires on gets longer machine code at sm_80 or sm_90): two over the index math, their constants
generalized into guarded variables (``optimizer/synth_generalize.py``),
``0.5 * (1.0 + x) => fma(x, 0.5, 0.5)`` at f32, ``x % 768 => x + -768 * (x // 768)`` at
i32 (it wins only beside the division the kernel computes anyway) and ``(x >= c) & p => p ^ ((x <
c) & p)`` (poi_cat's second load mask, which wins only beside its first). A sixth proved rule,
``syn-i32-regroup-pow2``, fails the SASS check (poi_silu_mul 294 -> 297 at sm_80) and stays in
the file as a comment. Each shipped rule:

- fires on its family at constants the kernels do not use (so it is the family, not an instance);
- does not fire when one guard fails: a constant that is not a power of two, a shift that would
  be negative, or ``x`` not known ``>= 0`` (the f32 rule: another constant, another dtype);
- is fully proved at its dtype in ``rules/proofs.json`` (``test_shipped_proofs`` checks that file);
- fires on the naive kernel it was found on, lowers its cost, keeps its loads vectorized, and the
  optimized kernel computes what the original does on ragged sizes (1, 1000, 1001);
- (slow) passes the SASS check on the kernels it fires on, which refuses the regroup rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.naive import BY_NAME, launch_facts, load, param_names
from eggpu.optimizer.rules_loader import load_rules
from eggpu.testing import assert_rule_does_not_fire, assert_rule_fires

SYNTH = {r.name: r for r in load_rules(env=False).rules if r.file == "rules/synthesized.egg"}
X = "(Opaque (I32) 1)"
NONNEG = (f"(set (LowerBound {X}) 0)",)
NEG = (f"(set (LowerBound {X}) -1)",)


def k(v: int) -> str:
    return f'(Splat (I32) "16" (Const (I32) {v}))'


def _div(c: int) -> str:
    return f"(Div (I32) {X} {k(c)})"


def _rem(a: str, c: int) -> str:
    return f"(Rem (I32) {a} {k(c)})"


def _mul(c: int, a: str) -> str:
    return f"(Mul (I32) {k(c)} {a})"


def _and(a: str, c: int) -> str:
    return f"(And (I32) {a} {k(c)})"


# rule -> (a term of the family at other constants, what it becomes, near misses: one guard false)
CASES = {
    "syn-i32-mul-divrem-pow2": (
        _mul(256, _rem(_div(16), 8)), _and(f"(Shl (I32) {X} {k(4)})", 7 * 256),
        [_mul(8, _rem(_div(16), 8)),                                    # shift log2 8 - log2 16 < 0
         _mul(256, _rem(_div(16), 12)),                                 # 12 is not a power of two
         _mul(256, _rem(_div(24), 8))]),                                # 24 neither
    "syn-i32-mul-div-pow2": (
        _mul(16, _div(4096)), _and(f"(Shr (I32) {X} {k(8)})", -16),
        [_mul(16, _div(8)),                                             # shift log2 8 - log2 16 < 0
         _mul(16, _div(3000)), _mul(48, _div(4096))]),                  # not powers of two
}
NOT_SHIPPED = "syn-i32-regroup-pow2"  # lengthens poi_silu_mul's SASS (docs/rules.md §7)


F = "(Opaque (F32) 1)"


def _fk(v: float, t: str = "F32") -> str:
    from eggpu.optimizer.schema import float_bits

    return f'(Splat ({t}) "16" (ConstF ({t}) {float_bits(v)}))'


FMA = ("syn-f32-half-one-plus-fma",
       f"(Mul (F32) {_fk(0.5)} (Add (F32) {_fk(1.0)} {F}))", f"(Fma (F32) {F} {_fk(0.5)} {_fk(0.5)})",
       [f"(Mul (F32) {_fk(0.25)} (Add (F32) {_fk(1.0)} {F}))",   # 0.25 * (1.0 + x): not the rule's constant
        f"(Mul (F32) {_fk(0.5)} (Add (F32) {_fk(2.0)} {F}))",
        "(Mul (F64) {} (Add (F64) {} (Opaque (F64) 1)))".format(_fk(0.5, "F64"), _fk(1.0, "F64"))])  # proved at f32 only


REM = ("syn-i32-rem-beside-div-768",
       _rem(X, 768), f"(Add (I32) {_mul(-768, _div(768))} {X})",
       [_rem(X, 769), _rem(X, 1536),                                  # not the rule's constant
        "(Rem (I64) (Opaque (I64) 1) (Splat (I64) \"16\" (Const (I64) 768)))"])  # proved at i32 only


P = "(Opaque (Bool) 2)"


def _mask(cmp: str, c: int, x: str = X, t: str = "I32") -> str:
    k_ = f'(Splat ({t}) "16" (Const ({t}) {c}))'
    return f"(And (Bool) ({cmp} ({t}) {k_} {x}) {P})" if cmp == "Le" else f"(And (Bool) ({cmp} ({t}) {x} {k_}) {P})"


MASK = ("syn-i32-mask-ge-beside-lt",
        _mask("Le", 64), f"(Xor (Bool) {P} {_mask('Lt', 64)})",
        [_mask("Le", 300),                                              # the family as found: c a power of two
         _mask("Lt", 64),                                               # x < c: not the rule's comparison
         _mask("Le", 64, "(Opaque (I64) 1)", "I64")])                   # proved at i32 only


def test_the_cases_cover_every_shipped_synthesized_rule():
    assert set(CASES) | {FMA[0], REM[0], MASK[0]} == set(SYNTH) and len(SYNTH) == 5


@pytest.mark.parametrize("facts", [(), NONNEG, NEG])
@pytest.mark.parametrize("case", ["mask", "rem"])
def test_the_unguarded_rules_fire_for_every_x_and_only_on_their_shape(case, facts):
    # no range guard: (x >= c) & p == p ^ ((x < c) & p) whatever x and p; C's truncating % and //
    # agree with x - 768 * (x // 768) for negative x too (only at that constant and dtype)
    name, before, after, misses = {"mask": MASK, "rem": REM}[case]
    assert_rule_fires(SYNTH[name], before, after, facts=facts)
    for term in misses:
        assert_rule_does_not_fire(SYNTH[name], term, facts=facts)


@eggpu.kernel
def halves(a_ptr: tl.Pointer[tl.f32], b_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32,
           BLOCK: tl.constexpr):
    # poi_cat's shape over loaded (possibly negative) column indices: the first load where c < 128,
    # the second where c >= 128, each and-ed with the bounds mask
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.int32)
    lo = tl.load(b_ptr + offs, mask=(c < 128) & mask, other=1.0)
    hi = tl.load(b_ptr + offs + 1, mask=(c >= 128) & mask, other=2.0)
    tl.store(y_ptr + offs, lo * 3.0 + hi, mask=mask)


def test_the_mask_rule_wins_beside_the_other_mask_and_the_kernel_stays_right():
    ck = eggpu.compile(halves.Kernel(256), cache=False)
    opt = ck.report["optimizer"]
    assert opt["rules_fired"].get(MASK[0], 0) >= 1 and opt["validation"] == "valid" and not opt["fell_back"]
    assert any(o.op == "xor" for o in ck.ir.walk()) and not any(o.op in ("le", "ge") for o in ck.ir.walk())
    for n in (1, 1000, 1001):
        rng = np.random.default_rng(n)
        a = rng.integers(-300, 300, n).astype(np.float32)
        a[: min(n, 4)] = [127.0, 128.0, -1.0, 129.0][: min(n, 4)]
        b = rng.standard_normal(n + 1).astype(np.float32)
        y = np.zeros(n, np.float32)
        ck.run_cpu(((n + 255) // 256,), a, b, y, np.int32(n))
        c = a.astype(np.int32)
        want = np.where(c < 128, b[:n], np.float32(1.0)) * np.float32(3.0) + np.where(c >= 128, b[1:], np.float32(2.0))
        assert np.array_equal(y, want.astype(np.float32))


def test_the_rule_that_lengthens_sass_is_kept_as_a_comment_only():
    text = (Path(__file__).resolve().parents[2] / "rules" / "synthesized.egg").read_text()
    assert ';; (rewrite (Add (I32) (Rem (I32) x' in text and f':name "{NOT_SHIPPED}")' in text
    assert NOT_SHIPPED not in SYNTH


@eggpu.kernel
def divrem_loaded(i_ptr: tl.Pointer[tl.i32], q_ptr: tl.Pointer[tl.i32], r_ptr: tl.Pointer[tl.i32], n: tl.i32,
                  BLOCK: tl.constexpr):
    # row and column of loaded (possibly negative) flat indices: nothing says they are >= 0
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(i_ptr + offs, mask=mask, other=0)
    tl.store(q_ptr + offs, x // 768, mask=mask)
    tl.store(r_ptr + offs, x % 768, mask=mask)


def test_the_remainder_rule_wins_on_negative_values_and_keeps_cs_remainder():
    ck = eggpu.compile(divrem_loaded.Kernel(256), cache=False)
    opt = ck.report["optimizer"]
    assert opt["rules_fired"].get(REM[0], 0) >= 1 and opt["validation"] == "valid" and not opt["fell_back"]
    assert not any(o.op == "rem" for o in ck.ir.walk())  # the remainder is x + -768 * q now
    for n in (1, 1000, 1001):
        x = np.random.default_rng(n).integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        x[:4] = [-1, -768, 767, -2**31][:n] if n >= 4 else x[:4]
        q, r = np.zeros(n, np.int32), np.zeros(n, np.int32)
        ck.run_cpu(((n + 255) // 256,), x, q, r, np.int32(n))
        assert np.array_equal(q, np.trunc(x.astype(np.int64) / 768).astype(np.int32))
        assert np.array_equal(r, np.fmod(x, np.int32(768)))  # C: the sign of x (-1 % 768 == -1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fires_on_its_family_at_other_constants(name):
    before, after, _ = CASES[name]
    assert_rule_fires(SYNTH[name], before, after, facts=NONNEG)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_constant_guard_blocks(name):
    _, after, misses = CASES[name]
    for term in misses:
        assert_rule_does_not_fire(SYNTH[name], term, facts=NONNEG)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_range_guard_blocks(name):
    before, after, _ = CASES[name]
    assert_rule_does_not_fire(SYNTH[name], before, after, facts=NEG)
    assert_rule_does_not_fire(SYNTH[name], before, after)  # nothing known about x


@pytest.mark.parametrize("name", sorted(CASES) + [FMA[0], REM[0], MASK[0]])
def test_ships_fully_proved(name):
    from eggpu.optimizer import shipped_proofs

    found = [e for e in shipped_proofs.entries().values() if e["rule"] == name]
    assert len(found) == 1 and [r["status"] for r in found[0]["results"]] == ["proved"]


def _case(name: str, size: int):
    kern = BY_NAME[name]
    case = kern.make(size, np.random.default_rng(size))
    jf = getattr(load("eggpu"), name)
    options, _, _ = launch_facts(case, param_names(jf), kern.consts)
    return case, jf.specialize(*case.args, **kern.consts), options


KERNELS = {"poi_permute": {"syn-i32-mul-divrem-pow2"}, "poi_cat": {"syn-i32-mul-div-pow2", MASK[0]},
           "poi_row_col_affine": {"syn-i32-rem-beside-div-768"}}  # naive kernels; gelu_backward (library): below


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_fires_on_the_naive_kernel_and_lowers_its_cost(name, monkeypatch, tmp_path):
    import functools

    import eggpu.optimizer as opt_mod
    from eggpu.optimizer import optimize
    from eggpu.rules import shipped_files

    # the rules need the range analysis first: a saturation limit load cannot cut short
    monkeypatch.setattr(opt_mod, "Limits", functools.partial(opt_mod.Limits, seconds=120))
    case, inst, options = _case(name, 10)
    ck = eggpu.compile(inst, target="sm_90", cache=False, **options)
    opt = ck.report["optimizer"]
    assert KERNELS[name] <= set(opt["rules_fired"]), opt["rules_fired"]
    assert opt["validation"] == "valid" and not opt["fell_back"]
    # the same kernel with every shipped rule but these: a higher cost
    others = [str(f) for f in shipped_files() if f.name != "synthesized.egg"]
    assert len(others) == len(shipped_files()) - 1
    unopt = eggpu.compile(inst, target="sm_90", cache=False, optimize=False, **options).ir
    without = optimize(unopt, rules=others, shipped_rules=False, target="sm_90")
    assert opt["cost_after"] < without.cost_after - 1.0, (opt["cost_after"], without.cost_after)


def test_the_mask_rule_alone_lowers_poi_cats_cost(monkeypatch, tmp_path):
    # not redundant with the other shipped rules: without it (every other rule kept) poi_cat costs
    # one op a lane more (the second mask's compare and and, against one xor)
    import functools

    import eggpu.optimizer as opt_mod
    from eggpu.optimizer import optimize
    from eggpu.rules import shipped_files

    monkeypatch.setattr(opt_mod, "Limits", functools.partial(opt_mod.Limits, seconds=120))
    case, inst, options = _case("poi_cat", 10)
    unopt = eggpu.compile(inst, target="sm_90", cache=False, optimize=False, **options).ir
    text = Path(_shipped_file()).read_text()
    (tmp_path / "minus.egg").write_text("\n".join(ln for ln in text.splitlines() if f':name "{MASK[0]}")' not in ln))
    others = [str(f) for f in shipped_files() if f.name != "synthesized.egg"]
    full = optimize(unopt, rules=[*others, _shipped_file()], shipped_rules=False, target="sm_90")
    minus = optimize(unopt, rules=[*others, str(tmp_path / "minus.egg")], shipped_rules=False, target="sm_90")
    assert full.rule_hits.get(MASK[0], 0) >= 1 and MASK[0] not in minus.rule_hits
    assert full.cost_after < minus.cost_after - 1.0, (full.cost_after, minus.cost_after)


@pytest.mark.parametrize(("name", "size"), [(n, s) for n in sorted(KERNELS) for s in (1, 1000, 1001)])
def test_optimized_kernel_computes_what_the_original_does(name, size, optimized_like_original):
    case, inst, options = _case(name, size)
    optimized_like_original(inst, case, options, f"{name} size {size}")


@pytest.mark.parametrize("size", [1, 1000, 1001])
def test_the_f32_rule_fires_on_gelu_backward_and_the_kernel_stays_right(size):
    from eggpu.ir.dtypes import f32
    from eggpu.kernels import LIBRARY

    lk = next(k for k in LIBRARY if k.name == "gelu_backward")
    case = lk.make_case(size, f32, np.random.default_rng(size))
    ck = eggpu.compile(lk.instance(case), target="sm_90", cache=False)
    opt = ck.report["optimizer"]
    assert opt["rules_fired"].get(FMA[0], 0) >= 1 and opt["validation"] == "valid" and not opt["fell_back"]
    assert any(o.op == "fma" for o in ck.ir.walk())
    lk.check(case, case.run(ck.run_cpu))


@pytest.mark.parametrize("name", ["poi_permute", "poi_cat"])
def test_the_index_rules_keep_the_loads_vectorized(name):
    # their shift and mask forms hid the runs codegen's run_of proved for x // c and x % c, and
    # the vector loads became per-lane (poi_cat 50 -> 98 SASS); run_of now sees through them
    from bench.synth_sass import without_shipped_synthesized

    case, inst, options = _case(name, 10)
    ck = eggpu.compile(inst, target="sm_90", cache=False, **options)
    assert KERNELS[name] <= set(ck.report["optimizer"]["rules_fired"])
    with without_shipped_synthesized():
        base = eggpu.compile(inst, target="sm_90", cache=False, **options)
    assert not any(r.startswith("syn-") for r in base.report["optimizer"]["rules_fired"])
    loads = re.findall(r"ld\.global[.\w]*", ck.ptx)
    assert loads.count("ld.global.v4.b32") >= 2 and loads == re.findall(r"ld\.global[.\w]*", base.ptx), loads


def _shipped_file() -> str:
    return str(Path(__file__).resolve().parents[2] / "rules" / "synthesized.egg")


@pytest.mark.slow
def test_every_shipped_synthesized_rule_passes_the_sass_check():
    from bench.synth_sass import measure

    res = measure(_shipped_file(), kernel_names=[*KERNELS, "gelu_backward"], progress=lambda m: None)
    assert {n: v["verdict"] for n, v in res["rules"].items()} == dict.fromkeys(SYNTH, "accepted"), res["rules"]
    fired = {lb: set(r["fired_alone"]) for lb, r in res["kernels"].items()}
    for k, rules in [*((f"naive/{k}", v) for k, v in KERNELS.items()), ("library/gelu_backward", {FMA[0]})]:
        assert rules <= fired[k], (k, fired)
    assert res["rules"][FMA[0]]["shortens"]  # gelu_backward 374 -> 366 at sm_80


@pytest.mark.slow
def test_the_sass_check_refuses_the_regroup_rule(tmp_path):
    from bench.synth_sass import measure

    text = Path(_shipped_file()).read_text()
    line = next(ln[3:] for ln in text.splitlines() if ln.startswith(";; (rewrite") and NOT_SHIPPED in ln)
    (tmp_path / "regroup.egg").write_text(line + "\n")
    res = measure(str(tmp_path / "regroup.egg"), kernel_names=["poi_silu_mul"], progress=lambda m: None)
    v = res["rules"][NOT_SHIPPED]
    assert v["verdict"] == "refused" and v["fired"] == ["naive/poi_silu_mul"], v
    assert any(s.startswith("naive/poi_silu_mul sm_80 ") for s in v["lengthens"]), v
