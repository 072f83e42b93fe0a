"""A corpus of real peephole rules written in eggpu's rule language, with the verdict expected
per dtype — the measurement of issue #14's goal "on peephole rules (integer and float, widths
8-64): >= 98 % decided, 0 false proofs, 0 false refutations" (`python -m bench.peephole`).

Each entry: a name, its source (the Alive test file and rule name, the Alive paper, Alive2's
floating-point tests, Herbie's rule set), the rule text (without ``:name``), the dtypes it is
checked at, and which of them are expected UNSOUND under eggpu's semantics (docs/ir.md op table:
wrapping integers, total division `x/0 = x%0 = 0`, `INT_MIN/-1 = INT_MIN`, shifts by amounts
outside [0, bits) give 0 or the sign fill, IEEE floats with structural equality: NaN == NaN,
+0.0 != -0.0). The expectations were decided by hand from those semantics, not from the tool;
where the semantics differ from LLVM's (LLVM's UB/poison makes some unsound-looking rules valid
there and vice versa) the comment says so. A rule written from its source without the source's
precondition is marked "(precondition dropped)": a deliberate unsound variant.
"""

from __future__ import annotations

from dataclasses import dataclass

INT = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
SINT = ("i8", "i16", "i32", "i64")
UINT = ("u8", "u16", "u32", "u64")
SINT_U64 = SINT + ("u64",)  # a (Const t -1) pattern is canonical all-ones only for signed and u64
FL = ("f16", "f32", "f64")
ALL = "all"

_ALIVE = "https://github.com/nunoplopes/alive/blob/master/tests/instcombine/"
ADDSUB = _ALIVE + "addsub.opt"
MULDIV = _ALIVE + "muldivrem.opt"
ANDOR = _ALIVE + "andorxor.opt"
SELECT = _ALIVE + "select.opt"
SHIFT = _ALIVE + "shift.opt"
CMP = _ALIVE + "compares.opt"
PAPER = "Lopes et al., Provably Correct Peephole Optimizations with Alive, PLDI 2015"
_A2 = "https://github.com/AliveToolkit/alive2/blob/master/tests/alive-tv/fp/"
HERBIE = "https://github.com/herbie-fp/herbie/blob/main/src/core/rules.rkt"
IC = "LLVM InstCombine/InstSimplify (llvm/lib/Transforms/InstCombine)"


@dataclass(frozen=True)
class Entry:
    name: str
    source: str
    rule: str
    dtypes: tuple[str, ...]
    unsound: tuple[str, ...] | str = ()
    why: str = ""

    def expected(self, dtype: str) -> str:
        """``sound`` or ``unsound`` at ``dtype``."""
        bad = self.dtypes if self.unsound == ALL else self.unsound
        return "unsound" if dtype in bad else "sound"

    def text(self) -> str:
        return f'{self.rule[:-1]} :name "{self.name}")'


def E(name: str, source: str, rule: str, dtypes: tuple[str, ...], unsound: tuple[str, ...] | str = (),
      why: str = "") -> Entry:
    return Entry(name, source, " ".join(rule.split()), dtypes, unsound, why)


# signed fit of an i64 value d in the dtype's width (the idiom of rules/fold.egg)
FIT = "(>= (>> d (- w 1)) -1) (<= (>> d (- w 1)) 0)"
# egglog's log2 panics on a non-positive operand and a guard is not evaluated in order, so every
# log2 is written (log2 (max c 1)) — written as (log2 c) the verifier rightly refutes the rule
POW2 = "(> c 0) (= k (log2 (max c 1))) (= c (<< 1 k))"

CORPUS: list[Entry] = [
    # ---------------------------------------------------------------- Alive paper / AddSub
    E("paper-not-plus-one", PAPER + " §2 ((x ^ -1) + 1 => -x)",
      "(rewrite (Add t (Not t x) (Const t 1)) (Neg t x) :when ((IsInt t)))", INT),
    E("paper-or-minus-and", PAPER + " §1 ((x | y) - (x & y) => x ^ y)",
      "(rewrite (Sub t (Or t x y) (And t x y)) (Xor t x y) :when ((IsInt t)))", INT),
    E("paper-mul-pow2", PAPER + " §2 (x * 2^k => x << k)",
      f"(rewrite (Mul t x (Const t c)) (Shl t x (Const t k)) :when ((IsInt t) {POW2}))", INT),
    E("paper-mul-log2-nopow2", PAPER + " §2 (x * C => x << log2(C), precondition isPowerOf2 dropped)",
      "(rewrite (Mul t x (Const t c)) (Shl t x (Const t k)) :when ((IsInt t) (> c 0) (= k (log2 (max c 1)))))", INT, ALL,
      "c = 3"),
    E("paper-add-add-const", PAPER + " §2 ((x + c1) + c2 => x + (c1 + c2))",
      f"(rewrite (Add t (Add t x (Const t a)) (Const t b)) (Add t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (= d (+ a b)) {FIT}))", SINT),
    E("paper-and-eq-pow2", PAPER + " §6 ((x & C) == C => (x & C) != 0, C a power of two)",
      f"(rewrite (Eq t (And t x (Const t c)) (Const t c)) (Ne t (And t x (Const t c)) (Const t 0)) "
      f":when ((IsInt t) {POW2}))", INT),
    E("paper-and-eq-any", PAPER + " §6 ((x & C) == C => (x & C) != 0, isPowerOf2 dropped)",
      "(rewrite (Eq t (And t x (Const t c)) (Const t c)) (Ne t (And t x (Const t c)) (Const t 0)) "
      ":when ((IsInt t) (> c 0)))", INT, ALL, "c = 3, x = 1"),
    E("AddSub:1156", ADDSUB, "(rewrite (Add t b b) (Shl t b (Const t 1)) :when ((IsInt t)))", INT),
    E("AddSub:1164", ADDSUB, "(rewrite (Add t (Sub t (Const t 0) a) b) (Sub t b a) :when ((IsInt t)))", INT),
    E("AddSub:1165", ADDSUB, "(rewrite (Add t (Neg t a) (Neg t b)) (Neg t (Add t a b)) :when ((IsInt t)))", INT),
    E("AddSub:1176", ADDSUB, "(rewrite (Add t a (Neg t b)) (Sub t a b) :when ((IsInt t)))", INT),
    E("AddSub:1295", ADDSUB, "(rewrite (Add t (And t a b) (Xor t a b)) (Or t a b) :when ((IsInt t)))", INT),
    E("AddSub:1309", ADDSUB, "(rewrite (Add t (And t a b) (Or t a b)) (Add t a b) :when ((IsInt t)))", INT),
    E("AddSub:1539", ADDSUB, "(rewrite (Sub t x (Neg t a)) (Add t x a) :when ((IsInt t)))", INT),
    E("AddSub:1560", ADDSUB, "(rewrite (Sub t (Const t -1) a) (Not t a) :when ((IsInt t)))", SINT_U64),
    E("AddSub:1614", ADDSUB, "(rewrite (Sub t x (Add t x y)) (Neg t y) :when ((IsInt t)))", INT),
    E("AddSub:1619", ADDSUB, "(rewrite (Sub t (Sub t x y) x) (Neg t y) :when ((IsInt t)))", INT),
    E("AddSub:1624", ADDSUB, "(rewrite (Sub t (Or t a b) (Xor t a b)) (And t a b) :when ((IsInt t)))", INT),
    E("AddSub:1638", ADDSUB, "(rewrite (Sub t x (Sub t y z)) (Add t x (Sub t z y)) :when ((IsInt t)))", INT),
    E("AddSub:1643", ADDSUB, "(rewrite (Sub t x (And t x y)) (And t x (Not t y)) :when ((IsInt t)))", INT),
    E("AddSub:1655-2", ADDSUB, "(rewrite (Neg t (Shl t (Neg t x) y)) (Shl t x y) :when ((IsInt t)))", INT,
      why="shift amounts out of range give 0 on both sides"),
    E("AddSub:1660", ADDSUB, "(rewrite (Sub t x (Mul t a (Neg t b))) (Add t x (Mul t a b)) :when ((IsInt t)))", INT),
    E("AddSub:1088", ADDSUB + " (isSignBit(C): x + C => x ^ C)",
      "(rewrite (Add t x (Const t c)) (Xor t x (Const t c)) "
      ":when ((IsSigned t) (Width t w) (= c (<< -1 (- w 1)))))", SINT),
    E("AddSub:1202", ADDSUB + " (~x + C => (C - 1) - x)",
      f"(rewrite (Add t (Not t x) (Const t c)) (Sub t (Const t d) x) "
      f":when ((IsSigned t) (Width t w) (= d (- c 1)) {FIT}))", SINT),
    E("AddSub:1564", ADDSUB + " (C - ~x => x + (C + 1))",
      f"(rewrite (Sub t (Const t c) (Not t x)) (Add t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (= d (+ c 1)) {FIT}))", SINT),
    E("AddSub:1574", ADDSUB + " (C - (x + C2) => (C - C2) - x)",
      f"(rewrite (Sub t (Const t c) (Add t x (Const t c2))) (Sub t (Const t d) x) "
      f":when ((IsSigned t) (Width t w) (= d (- c c2)) {FIT}))", SINT),
    E("AddSub:1539-2", ADDSUB + " (x - C => x + -C)",
      f"(rewrite (Sub t x (Const t c)) (Add t x (Const t d)) :when ((IsSigned t) (Width t w) (= d (- 0 c)) {FIT}))",
      SINT),
    E("AddSub:1142", ADDSUB + " (isSignBit(C1): (a ^ C1) + C2 => a + (C1 ^ C2))",
      "(rewrite (Add t (Xor t a (Const t c)) (Const t c2)) (Add t a (Const t (^ c c2))) "
      ":when ((IsSigned t) (Width t w) (= c (<< -1 (- w 1)))))", SINT),
    E("AddSub:1184-guarded", ADDSUB + " (no common bits: x + y => x | y, masks as the known bits)",
      "(rewrite (Add t (And t x (Const t c)) (And t y (Const t d))) (Or t (And t x (Const t c)) (And t y (Const t d))) "
      ":when ((IsInt t) (= (& c d) 0)))", INT),
    E("AddSub:1184-nopre", ADDSUB + " (x + y => x | y, precondition dropped)",
      "(rewrite (Add t x y) (Or t x y) :when ((IsInt t)))", INT, ALL, "x = y = 1"),
    E("AddSub:1251", ADDSUB + " (select(c, 0, n - a) + a => select(c, a, n))",
      "(rewrite (Add t (Where t c (Const t 0) (Sub t n a)) a) (Where t c a n) :when ((IsInt t)))", INT),
    E("AddSub:1650", ADDSUB + " (-(x / C) => x / -C; PR20186: LLVM needs C != 1, eggpu's INT_MIN / -1 wraps)",
      f"(rewrite (Neg t (Div t x (Const t c))) (Div t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (= d (- 0 c)) {FIT}))", SINT,
      why="sound in eggpu: x / -1 and -(x / 1) both wrap INT_MIN to INT_MIN"),
    E("PR20186-sdiv-neg", "https://github.com/nunoplopes/alive/blob/master/tests/unit/PR20186.opt "
      "((0 - x) / C => x / -C)",
      f"(rewrite (Div t (Neg t x) (Const t c)) (Div t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (= d (- 0 c)) {FIT}))", SINT, ALL, "x = INT_MIN, C = 2"),
    # ---------------------------------------------------------------- MulDivRem
    E("MulDivRem:152", MULDIV, "(rewrite (Mul t x (Const t -1)) (Neg t x) :when ((IsInt t)))", SINT_U64),
    E("MulDivRem:160", MULDIV + " ((x << C2) * C1 => x * (C1 << C2))",
      f"(rewrite (Mul t (Shl t x (Const t b)) (Const t a)) (Mul t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (>= b 0) (< b w) (= d (<< a b)) (= a (>> d b)) {FIT}))", SINT),
    E("MulDivRem:201", MULDIV + " ((y - x) * C => (x - y) * -C)",
      f"(rewrite (Mul t (Sub t y x) (Const t c)) (Mul t (Sub t x y) (Const t d)) "
      f":when ((IsSigned t) (Width t w) (= d (- 0 c)) {FIT}))", SINT),
    E("MulDivRem:229", MULDIV, "(rewrite (Mul t (Add t x (Const t c)) y) (Add t (Mul t x y) (Mul t (Const t c) y)) "
      ":when ((IsInt t)))", INT),
    E("MulDivRem:239", MULDIV, "(rewrite (Mul t (Neg t x) (Neg t y)) (Mul t x y) :when ((IsInt t)))", INT),
    E("MulDivRem:265-noexact", MULDIV + " ((x / y) * y => x, `exact` dropped)",
      "(rewrite (Mul t (Div t x y) y) x :when ((IsInt t)))", INT, ALL, "x = 1, y = 2"),
    E("MulDivRem:290", MULDIV + " ((1 << y) * z => z << y)",
      "(rewrite (Mul t (Shl t (Const t 1) y) z) (Shl t z y) :when ((IsInt t)))", INT),
    E("MulDivRem:304", MULDIV + " (x in {0,1}: x * y => -x & y)",
      "(rewrite (Mul t (And t x (Const t 1)) y) (And t (Neg t (And t x (Const t 1))) y) :when ((IsInt t)))", INT),
    E("MulDivRem:SimplifyDivRemOfSelect", MULDIV + " (x / select(c, y, 0) => x / y; LLVM: x / 0 is UB)",
      "(rewrite (Div t x (Where t c y (Const t 0))) (Div t x y) :when ((IsInt t)))", INT, ALL,
      "eggpu defines x / 0 = 0: c false, x = 1, y = 1"),
    E("MulDivRem:735-sdiv", MULDIV + " ((x / C1) / C2 => x / (C1 * C2), C1, C2 > 0, no overflow)",
      f"(rewrite (Div t (Div t x (Const t a)) (Const t b)) (Div t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (> a 0) (> b 0) (= d (* a b)) {FIT}))", SINT),
    E("MulDivRem:735-udiv", MULDIV + " (udiv(udiv(x, C1), C2) => udiv(x, C1 * C2), no overflow)",
      "(rewrite (Div t (Div t x (Const t a)) (Const t b)) (Div t x (Const t d)) "
      ":when ((IsUnsigned t) (Width t w) (> a 0) (> b 0) (= d (* a b)) (<= (>> d (- w 1)) 1)))", UINT),
    E("MulDivRem:735-negative", MULDIV + " ((x / C1) / C2 => x / (C1 * C2), signs not restricted)",
      f"(rewrite (Div t (Div t x (Const t a)) (Const t b)) (Div t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (!= a 0) (!= b 0) (= d (* a b)) {FIT}))", SINT, ALL,
      "x = INT_MIN, C1 = -1, C2 = 2: INT_MIN / -1 wraps"),
    E("MulDivRem:748-nonsw", MULDIV + " ((x * C1) / C2 => x / (C2 / C1), `nsw` dropped)",
      "(rewrite (Div t (Mul t x (Const t a)) (Const t b)) (Div t x (Const t d)) "
      ":when ((IsInt t) (> a 1) (> b 0) (= (% b a) 0) (= d (/ b a))))", INT, ALL, "x * C1 wraps"),
    E("MulDivRem:756-nonsw", MULDIV + " ((x * C1) / C2 => x * (C1 / C2), `nsw`/`nuw` dropped)",
      "(rewrite (Div t (Mul t x (Const t a)) (Const t b)) (Mul t x (Const t d)) "
      ":when ((IsInt t) (> b 1) (> a b) (= (% a b) 0) (= d (/ a b))))", INT, ALL, "x * C1 wraps"),
    # ---------------------------------------------------------------- division / remainder
    E("udiv-pow2", IC + " (udiv x, 2^k => lshr x, k)",
      f"(rewrite (Div t x (Const t c)) (Shr t x (Const t k)) :when ((IsUnsigned t) {POW2}))", UINT),
    E("sdiv-pow2-nofix", IC + " (sdiv x, 2^k => ashr x, k without the sign fix-up)",
      "(rewrite (Div t x (Const t c)) (Shr t x (Const t k)) :when ((IsSigned t) (> c 1) (= k (log2 (max c 1))) "
      "(= c (<< 1 k))))", SINT, ALL, "x = -1, c = 2"),
    E("sdiv-pow2-fixup", IC + " (sdiv x, 2^k => (x + ((x >>s (w-1)) & (2^k - 1))) >>s k)",
      "(rewrite (Div t x (Const t c)) (Shr t (Add t x (And t (Shr t x (Const t w1)) (Const t m))) (Const t k)) "
      ":when ((IsSigned t) (Width t w) (> c 1) (= k (log2 (max c 1))) (= c (<< 1 k)) (= w1 (- w 1)) (= m (- c 1))))", SINT),
    E("sdiv-pow2-nonneg", IC + " (sdiv x, 2^k => ashr x, k when x >= 0)",
      "(rewrite (Div t x (Const t c)) (Shr t x (Const t k)) "
      ":when ((IsSigned t) (>= (LowerBound x) 0) (> c 1) (= k (log2 (max c 1))) (= c (<< 1 k))))", SINT),
    E("urem-pow2", IC + " (urem x, 2^k => x & (2^k - 1))",
      f"(rewrite (Rem t x (Const t c)) (And t x (Const t m)) :when ((IsUnsigned t) {POW2} (= m (- c 1))))", UINT),
    E("srem-pow2-nofix", IC + " (srem x, 2^k => x & (2^k - 1), sign not handled)",
      "(rewrite (Rem t x (Const t c)) (And t x (Const t m)) "
      ":when ((IsSigned t) (> c 1) (= k (log2 (max c 1))) (= c (<< 1 k)) (= m (- c 1))))", SINT, ALL, "x = -1, c = 2"),
    E("srem-pow2-nonneg", IC + " (srem x, 2^k => x & (2^k - 1) when x >= 0)",
      "(rewrite (Rem t x (Const t c)) (And t x (Const t m)) "
      ":when ((IsSigned t) (>= (LowerBound x) 0) (> c 1) (= k (log2 (max c 1))) (= c (<< 1 k)) (= m (- c 1))))", SINT),
    E("div-one", IC + " InstSimplify (x / 1 => x)", "(rewrite (Div t x (Const t 1)) x :when ((IsInt t)))", INT),
    E("sdiv-minus-one", IC + " (sdiv x, -1 => -x)",
      "(rewrite (Div t x (Const t -1)) (Neg t x) :when ((IsSigned t)))", SINT),
    E("rem-one", IC + " InstSimplify (x % 1 => 0)", "(rewrite (Rem t x (Const t 1)) (Const t 0) :when ((IsInt t)))", INT),
    E("srem-minus-one", IC + " InstSimplify (srem x, -1 => 0)",
      "(rewrite (Rem t x (Const t -1)) (Const t 0) :when ((IsSigned t)))", SINT),
    E("div-self", IC + " InstSimplify (x / x => 1; LLVM: x = 0 is UB)",
      "(rewrite (Div t x x) (Const t 1) :when ((IsInt t)))", INT, ALL, "x = 0"),
    E("rem-self", IC + " InstSimplify (x % x => 0)", "(rewrite (Rem t x x) (Const t 0) :when ((IsInt t)))", INT,
      why="x % 0 = 0 in eggpu"),
    E("zero-div", IC + " InstSimplify (0 / x => 0)", "(rewrite (Div t (Const t 0) x) (Const t 0) :when ((IsInt t)))", INT),
    E("zero-rem", IC + " InstSimplify (0 % x => 0)", "(rewrite (Rem t (Const t 0) x) (Const t 0) :when ((IsInt t)))", INT),
    E("div-zero", "docs/ir.md (eggpu: x / 0 = 0; LLVM: UB)",
      "(rewrite (Div t x (Const t 0)) (Const t 0) :when ((IsInt t)))", INT),
    E("div-mul-rem", IC + " ((x / y) * y => x - x % y; LLVM: y = 0 is UB)",
      "(rewrite (Mul t (Div t x y) y) (Sub t x (Rem t x y)) :when ((IsInt t)))", INT, ALL, "y = 0"),
    E("sub-div-mul-rem", IC + " (x - (x / y) * y => x % y)",
      "(rewrite (Sub t x (Mul t (Div t x y) y)) (Rem t x y) :when ((IsInt t)))", INT, ALL, "y = 0"),
    E("sub-div-mul-rem-pos", IC + " (x - (x / y) * y => x % y when y >= 1)",
      "(rewrite (Sub t x (Mul t (Div t x y) y)) (Rem t x y) :when ((IsInt t) (>= (LowerBound y) 1)))", INT),
    E("neg-div", IC + " (-(x / y) => (-x) / y)",
      "(rewrite (Neg t (Div t x y)) (Div t (Neg t x) y) :when ((IsInt t)))", INT, ALL, "x = INT_MIN / unsigned"),
    E("div-small-range", IC + " InstSimplify (x / C => 0 when |x| < C)",
      "(rewrite (Div t x (Const t c)) (Const t 0) "
      ":when ((IsSigned t) (> c 0) (> (LowerBound x) (- 0 c)) (< (UpperBound x) c)))", SINT),
    E("rem-small-range", IC + " InstSimplify (x % C => x when 0 <= x < C)",
      "(rewrite (Rem t x (Const t c)) x :when ((IsSigned t) (> c 0) (>= (LowerBound x) 0) (< (UpperBound x) c)))",
      SINT),
    E("rem-divisible", IC + " (x % 16 => 0 when 16 divides x, known bits)",
      "(rewrite (Rem t x (Const t 16)) (Const t 0) :when ((IsInt t) (Divisible x 16)))", INT),
    E("rem8-divisible16", IC + " (x % 8 => 0 when 16 divides x)",
      "(rewrite (Rem t x (Const t 8)) (Const t 0) :when ((IsInt t) (Divisible x 16)))", INT),
    E("rem32-divisible16", IC + " (x % 32 => 0 when only 16 is known to divide x)",
      "(rewrite (Rem t x (Const t 32)) (Const t 0) :when ((IsInt t) (Divisible x 16)))", INT, ALL, "x = 16"),
    E("and-divisible", IC + " (x & 15 => 0 when 16 divides x)",
      "(rewrite (And t x (Const t 15)) (Const t 0) :when ((IsInt t) (Divisible x 16)))", INT),
    # ---------------------------------------------------------------- shifts
    E("shl-shl", SHIFT + " ((x << C1) << C2 => x << (C1 + C2), C1 + C2 < width)",
      "(rewrite (Shl t (Shl t x (Const t a)) (Const t b)) (Shl t x (Const t c)) "
      ":when ((IsInt t) (Width t w) (>= a 0) (>= b 0) (= c (+ a b)) (< c w)))", INT),
    E("shl-shl-wide", SHIFT + " ((x << C1) << C2 => x << (C1 + C2), sum up to 64: eggpu shifts >= width give 0)",
      "(rewrite (Shl t (Shl t x (Const t a)) (Const t b)) (Shl t x (Const t c)) "
      ":when ((IsInt t) (>= a 0) (>= b 0) (= c (+ a b)) (<= c 64)))", INT,
      why="LLVM: poison when C1 + C2 >= width; eggpu: both sides 0"),
    E("lshr-lshr-wide", SHIFT + " ((x >>u C1) >>u C2 => x >>u (C1 + C2))",
      "(rewrite (Shr t (Shr t x (Const t a)) (Const t b)) (Shr t x (Const t c)) "
      ":when ((IsUnsigned t) (>= a 0) (>= b 0) (= c (+ a b)) (<= c 64)))", UINT),
    E("ashr-ashr-wide", SHIFT + " ((x >>s C1) >>s C2 => x >>s (C1 + C2); sums >= width fill with the sign)",
      "(rewrite (Shr t (Shr t x (Const t a)) (Const t b)) (Shr t x (Const t c)) "
      ":when ((IsSigned t) (>= a 0) (>= b 0) (= c (+ a b)) (<= c 64)))", SINT),
    E("shl-lshr-mask", SHIFT + " ((x << C) >>u C => x & (-1 >>u C))",
      "(rewrite (Shr t (Shl t x (Const t c)) (Const t c)) (And t x (Const t m)) "
      ":when ((IsUnsigned t) (Width t w) (> c 0) (< c w) (= m (- (<< 1 (- w c)) 1))))", UINT),
    E("shl-ashr-mask", SHIFT + " ((x << C) >> C => x & mask, on an arithmetic shift)",
      "(rewrite (Shr t (Shl t x (Const t c)) (Const t c)) (And t x (Const t m)) "
      ":when ((IsSigned t) (Width t w) (> c 0) (< c w) (= m (- (<< 1 (- w c)) 1))))", SINT, ALL,
      "x = 2^(w-2), c = 1"),
    E("ashr-shl-mask", SHIFT + " ((x >>s C) << C => x & (-1 << C))",
      "(rewrite (Shl t (Shr t x (Const t c)) (Const t c)) (And t x (Const t m)) "
      ":when ((IsSigned t) (Width t w) (>= c 0) (< c w) (= m (<< -1 c))))", SINT),
    E("shl-to-mul", IC + " (x << C => x * 2^C)",
      f"(rewrite (Shl t x (Const t c)) (Mul t x (Const t d)) "
      f":when ((IsSigned t) (Width t w) (>= c 0) (< c w) (= d (<< 1 c)) {FIT}))", SINT),
    E("shl-shr-roundtrip", IC + " ((x << y) >> y => x)",
      "(rewrite (Shr t (Shl t x y) y) x :when ((IsInt t)))", INT, ALL, "x = 2^(w-1), y = 1"),
    E("lshr-wide-zero", SHIFT + " (lshr x, C >= width => 0; LLVM: poison)",
      "(rewrite (Shr t x (Const t c)) (Const t 0) :when ((IsUnsigned t) (Width t w) (>= c w)))", UINT),
    E("ashr-wide-zero", SHIFT + " (ashr x, C >= width => 0; LLVM: poison)",
      "(rewrite (Shr t x (Const t c)) (Const t 0) :when ((IsSigned t) (Width t w) (>= c w)))", SINT, ALL,
      "x = -1: the sign fill"),
    E("ashr-wide-signfill", SHIFT + " (ashr x, C >= width => ashr x, width - 1)",
      "(rewrite (Shr t x (Const t c)) (Shr t x (Const t w1)) :when ((IsSigned t) (Width t w) (>= c w) (= w1 (- w 1))))",
      SINT),
    E("shl-wide-zero", SHIFT + " (shl x, C >= width => 0)",
      "(rewrite (Shl t x (Const t c)) (Const t 0) :when ((IsInt t) (Width t w) (>= c w)))", INT),
    E("shl-negative-zero", "docs/ir.md (shl by a negative amount gives 0)",
      "(rewrite (Shl t x (Const t c)) (Const t 0) :when ((IsSigned t) (< c 0)))", SINT),
    E("shl-masked-amount", IC + " (x << (y & (w-1)) => x << y, mask dropped)",
      "(rewrite (Shl t x (And t y (Const t m))) (Shl t x y) :when ((IsInt t) (Width t w) (= m (- w 1))))", INT, ALL,
      "y = w"),
    # ---------------------------------------------------------------- and / or / xor
    E("and-self", ANDOR, "(rewrite (And t x x) x :when ((IsInt t)))", INT),
    E("or-self", ANDOR, "(rewrite (Or t x x) x :when ((IsInt t)))", INT),
    E("xor-self", ANDOR, "(rewrite (Xor t x x) (Const t 0) :when ((IsInt t)))", INT),
    E("and-zero", ANDOR, "(rewrite (And t x (Const t 0)) (Const t 0) :when ((IsInt t)))", INT),
    E("or-zero", ANDOR, "(rewrite (Or t x (Const t 0)) x :when ((IsInt t)))", INT),
    E("and-allones", ANDOR, "(rewrite (And t x (Const t -1)) x :when ((IsInt t)))", SINT_U64),
    E("or-allones", ANDOR, "(rewrite (Or t x (Const t -1)) (Const t -1) :when ((IsInt t)))", SINT_U64),
    E("and-not-self", ANDOR, "(rewrite (And t x (Not t x)) (Const t 0) :when ((IsInt t)))", INT),
    E("or-not-self", ANDOR, "(rewrite (Or t x (Not t x)) (Const t -1) :when ((IsInt t)))", SINT_U64),
    E("demorgan-and", ANDOR, "(rewrite (Not t (And t x y)) (Or t (Not t x) (Not t y)) :when ((IsInt t)))", INT),
    E("demorgan-or", ANDOR, "(rewrite (Not t (Or t x y)) (And t (Not t x) (Not t y)) :when ((IsInt t)))", INT),
    E("absorb-and-or", ANDOR, "(rewrite (And t (Or t x y) x) x :when ((IsInt t)))", INT),
    E("absorb-or-and", ANDOR, "(rewrite (Or t (And t x y) x) x :when ((IsInt t)))", INT),
    E("and-xor-or", ANDOR, "(rewrite (Xor t (And t x y) (Or t x y)) (Xor t x y) :when ((IsInt t)))", INT),
    E("xor-and-self", ANDOR, "(rewrite (And t (Xor t x y) x) (And t x (Not t y)) :when ((IsInt t)))", INT),
    E("or-xor-and", ANDOR, "(rewrite (Or t (Xor t x y) (And t x y)) (Or t x y) :when ((IsInt t)))", INT),
    E("xor-xor-cancel", ANDOR, "(rewrite (Xor t (Xor t x y) y) x :when ((IsInt t)))", INT),
    E("and-or-or-not", ANDOR, "(rewrite (And t (Or t x y) (Or t x (Not t y))) x :when ((IsInt t)))", INT),
    E("or-and-consts", ANDOR + " ((x & C1) | (x & C2) => x & (C1 | C2))",
      "(rewrite (Or t (And t x (Const t a)) (And t x (Const t b))) (And t x (Const t (| a b))) :when ((IsInt t)))", INT),
    E("xor-or-const", ANDOR + " ((x | C) ^ C => x & ~C)",
      "(rewrite (Xor t (Or t x (Const t c)) (Const t c)) (And t x (Const t (not-i64 c))) :when ((IsSigned t)))", SINT),
    E("and-distrib-wrong", ANDOR + " (x & (y | z) => (x & y) | z, a wrong distribution)",
      "(rewrite (And t x (Or t y z)) (Or t (And t x y) z) :when ((IsInt t)))", INT, ALL, "x = 0, z = 1"),
    E("not-xor-both", ANDOR + " (~(x ^ y) => ~x ^ ~y: the complements cancel)",
      "(rewrite (Not t (Xor t x y)) (Xor t (Not t x) (Not t y)) :when ((IsInt t)))", INT, ALL, "any x, y"),
    E("not-xor-one", ANDOR, "(rewrite (Not t (Xor t x y)) (Xor t (Not t x) y) :when ((IsInt t)))", INT),
    E("neg-as-not", IC + " (-x => ~x + 1)", "(rewrite (Neg t x) (Add t (Not t x) (Const t 1)) :when ((IsInt t)))", INT),
    E("not-as-sub", IC + " (~x => -1 - x)", "(rewrite (Not t x) (Sub t (Const t -1) x) :when ((IsInt t)))", SINT_U64),
    E("not-neg", IC + " (~(-x) => x - 1)", "(rewrite (Not t (Neg t x)) (Sub t x (Const t 1)) :when ((IsInt t)))", INT),
    E("not-sub-one", IC + " (~(x - 1) => -x)", "(rewrite (Not t (Sub t x (Const t 1))) (Neg t x) :when ((IsInt t)))", INT),
    E("xor-as-sub", ANDOR + " (x ^ y => x - y, wrong)", "(rewrite (Xor t x y) (Sub t x y) :when ((IsInt t)))", INT, ALL,
      "x = 0, y = 1"),
    E("and-mask-range", IC + " (x & (2^k - 1) => x when 0 <= x <= 2^k - 1)",
      "(rewrite (And t x (Const t m)) x :when ((IsSigned t) (>= (LowerBound x) 0) (<= (UpperBound x) m) "
      "(> m 0) (= k (log2 (max (+ m 1) 1))) (= (+ m 1) (<< 1 k))))", SINT),
    E("and-mask-range-nolower", IC + " (x & (2^k - 1) => x when x <= 2^k - 1, the lower bound dropped)",
      "(rewrite (And t x (Const t m)) x :when ((IsSigned t) (<= (UpperBound x) m) "
      "(> m 0) (= k (log2 (max (+ m 1) 1))) (= (+ m 1) (<< 1 k))))", SINT, ALL, "x = -1"),
    # ---------------------------------------------------------------- comparisons
    E("eq-xor-zero", CMP + " ((x ^ y) == 0 => x == y)",
      "(rewrite (Eq t (Xor t x y) (Const t 0)) (Eq t x y) :when ((IsInt t)))", INT),
    E("ne-sub-zero", CMP + " ((x - y) != 0 => x != y)",
      "(rewrite (Ne t (Sub t x y) (Const t 0)) (Ne t x y) :when ((IsInt t)))", INT),
    E("lt-self", IC + " InstSimplify (x < x => false)", "(rewrite (Lt t x x) (Const (Bool) 0) :when ((IsInt t)))", INT),
    E("le-self-int", IC + " InstSimplify (x <= x => true)", "(rewrite (Le t x x) (Const (Bool) 1) :when ((IsInt t)))", INT),
    E("le-self-float", IC + " (fcmp ole x, x => true: wrong for NaN)",
      "(rewrite (Le t x x) (Const (Bool) 1) :when ((IsFloat t)))", FL, ALL, "x = NaN"),
    E("slt-sub-zero", CMP + " ((x - y) < 0 => x < y, nsw dropped)",
      "(rewrite (Lt t (Sub t x y) (Const t 0)) (Lt t x y) :when ((IsSigned t)))", SINT, ALL, "x - y overflows"),
    E("ult-zero", IC + " InstSimplify (x <u 0 => false)",
      "(rewrite (Lt t x (Const t 0)) (Const (Bool) 0) :when ((IsUnsigned t)))", UINT),
    E("uge-zero", IC + " InstSimplify (x >=u 0 => true)",
      "(rewrite (Ge t x (Const t 0)) (Const (Bool) 1) :when ((IsUnsigned t)))", UINT),
    E("lt-add-const", CMP + " (x + C < y + C => x < y, nsw/nuw dropped)",
      "(rewrite (Lt t (Add t x (Const t c)) (Add t y (Const t c))) (Lt t x y) :when ((IsInt t)))", INT, ALL,
      "wrap-around"),
    E("gt-swap", IC + " (x > y => y < x)", "(rewrite (Gt t x y) (Lt t y x) :when ((IsNum t)))", INT + FL),
    E("not-lt-int", IC + " (!(x < y) => x >= y)",
      "(rewrite (Not (Bool) (Lt t x y)) (Ge t x y) :when ((IsNum t)))", INT + FL, FL, "x = NaN on floats"),
    E("lt-to-le", CMP + " (x < C => x <= C - 1)",
      f"(rewrite (Lt t x (Const t c)) (Le t x (Const t d)) :when ((IsSigned t) (Width t w) (= d (- c 1)) {FIT}))",
      SINT),
    E("eq-neg-zero", CMP + " (-x == 0 => x == 0)",
      "(rewrite (Eq t (Neg t x) (Const t 0)) (Eq t x (Const t 0)) :when ((IsInt t)))", INT),
    E("eq-mul2-zero", CMP + " (x * 2 == 0 => x == 0, nsw dropped)",
      "(rewrite (Eq t (Mul t x (Const t 2)) (Const t 0)) (Eq t x (Const t 0)) :when ((IsInt t)))", INT, ALL,
      "x = 2^(w-1)"),
    E("abs-lt-zero", CMP + " (|x| < 0 => false: INT_MIN)",
      "(rewrite (Lt t (Abs t x) (Const t 0)) (Const (Bool) 0) :when ((IsSigned t)))", SINT, ALL, "x = INT_MIN"),
    # ---------------------------------------------------------------- select
    E("select-same", SELECT, "(rewrite (Where t c x x) x)", INT + FL),
    E("select-true", SELECT, "(rewrite (Where t (Const (Bool) 1) x y) x)", INT + FL),
    E("select-not-cond", SELECT, "(rewrite (Where t (Not (Bool) c) x y) (Where t c y x))", INT + FL),
    E("select-lt-min", SELECT + " (select(x < y, x, y) => min(x, y))",
      "(rewrite (Where t (Lt t x y) x y) (Minimum t x y) :when ((IsNum t)))", INT + FL, FL, "NaN, -0.0 vs +0.0"),
    E("select-gt-max", SELECT + " (select(x > y, x, y) => max(x, y))",
      "(rewrite (Where t (Gt t x y) x y) (Maximum t x y) :when ((IsNum t)))", INT + FL, FL, "NaN, -0.0 vs +0.0"),
    E("select-eq-other", SELECT + " (select(x == y, x, y) => y)",
      "(rewrite (Where t (Eq t x y) x y) y :when ((IsNum t)))", INT + FL, FL, "x = -0.0, y = +0.0"),
    E("select-ne-self", SELECT + " (select(x != y, x, y) => x)",
      "(rewrite (Where t (Ne t x y) x y) x :when ((IsNum t)))", INT + FL, FL, "x = +0.0, y = -0.0"),
    E("select-one-zero", SELECT + " (select(c, 1, 0) => zext c)",
      "(rewrite (Where t c (Const t 1) (Const t 0)) (Cast (Bool) t c) :when ((IsInt t)))", INT),
    E("select-zero-one", SELECT + " (select(c, 0, 1) => zext !c)",
      "(rewrite (Where t c (Const t 0) (Const t 1)) (Cast (Bool) t (Not (Bool) c)) :when ((IsInt t)))", INT),
    E("select-nested-false", SELECT, "(rewrite (Where t c x (Where t c y z)) (Where t c x z))", INT + FL),
    E("select-nested-true", SELECT, "(rewrite (Where t c (Where t c x y) z) (Where t c x z))", INT + FL),
    E("select-add-zero-int", SELECT + " (select(c, x, 0) + y => select(c, x + y, y))",
      "(rewrite (Add t (Where t c x (Const t 0)) y) (Where t c (Add t x y) y) :when ((IsInt t)))", INT),
    E("select-add-zero-float", SELECT + " (select(c, x, 0.0) + y => select(c, x + y, y))",
      "(rewrite (Add t (Where t c x (ConstF t 0.0)) y) (Where t c (Add t x y) y) :when ((IsFloat t)))", FL, ALL,
      "y = -0.0"),
    E("select-swap-wrong", SELECT + " (select(c, x, y) => select(c, y, x))",
      "(rewrite (Where t c x y) (Where t c y x))", INT + FL, ALL),
    E("select-abs", SELECT + " (select(x < 0, -x, x) => abs(x))",
      "(rewrite (Where t (Lt t x (Const t 0)) (Neg t x) x) (Abs t x) :when ((IsSigned t)))", SINT),
    E("select-fabs", _A2 + "fabs.srctgt.ll (select(x < 0.0, -x, x) => fabs(x))",
      "(rewrite (Where t (Lt t x (ConstF t 0.0)) (Neg t x) x) (Abs t x) :when ((IsFloat t)))", FL, ALL, "x = -0.0"),
    # ---------------------------------------------------------------- min / max / abs / bits
    E("min-max-absorb", IC, "(rewrite (Minimum t x (Maximum t x y)) x :when ((IsNum t)))", INT + FL, FL, "x = NaN"),
    E("max-min-absorb", IC, "(rewrite (Maximum t x (Minimum t x y)) x :when ((IsNum t)))", INT + FL, FL, "x = NaN"),
    E("min-neg-neg", IC + " (min(-x, -y) => -max(x, y))",
      "(rewrite (Minimum t (Neg t x) (Neg t y)) (Neg t (Maximum t x y)) :when ((IsSigned t)))", SINT, ALL,
      "x = INT_MIN, y = 0"),
    E("fmin-neg-neg", HERBIE + " (fmin(-x, -y) => -fmax(x, y))",
      "(rewrite (Minimum t (Neg t x) (Neg t y)) (Neg t (Maximum t x y)) :when ((IsFloat t)))", FL,
      why="sound: min/max ignore NaN and order -0.0 < +0.0 symmetrically"),
    E("min-self", IC, "(rewrite (Minimum t x x) x :when ((IsNum t)))", INT + FL),
    E("min-comm", IC, "(rewrite (Minimum t x y) (Minimum t y x) :when ((IsNum t)))", INT + FL),
    E("min-upper-bound", IC + " (min(x, C) => x when x <= C)",
      "(rewrite (Minimum t x (Const t c)) x :when ((IsSigned t) (<= (UpperBound x) c)))", SINT),
    E("abs-neg", IC + " (abs(-x) => abs(x))", "(rewrite (Abs t (Neg t x)) (Abs t x) :when ((IsNum t)))", INT + FL, UINT,
      "unsigned abs is the identity"),
    E("abs-abs", IC, "(rewrite (Abs t (Abs t x)) (Abs t x) :when ((IsNum t)))", INT + FL),
    E("popc-brev", IC, "(rewrite (Popc t (Brev t x)) (Popc t x) :when ((IsInt t)))", INT),
    E("brev-brev", IC, "(rewrite (Brev t (Brev t x)) x :when ((IsInt t)))", INT),
    E("mulhi-zero", IC, "(rewrite (Mulhi t x (Const t 0)) (Const t 0) :when ((IsInt t)))", INT),
    E("mulhi-one-unsigned", IC + " (umulh(x, 1) => 0)",
      "(rewrite (Mulhi t x (Const t 1)) (Const t 0) :when ((IsUnsigned t)))", UINT),
    E("mulhi-one-signed", IC + " (smulh(x, 1) => x >>s (w - 1))",
      "(rewrite (Mulhi t x (Const t 1)) (Shr t x (Const t w1)) :when ((IsSigned t) (Width t w) (= w1 (- w 1))))", SINT),
    E("mulhi-one-signed-zero", IC + " (smulh(x, 1) => 0, the sign extension forgotten)",
      "(rewrite (Mulhi t x (Const t 1)) (Const t 0) :when ((IsSigned t)))", SINT, ALL, "x = -1"),
    # ---------------------------------------------------------------- casts
    E("sext-trunc-i8", IC + " (trunc(sext x) => x)", "(rewrite (Cast (I32) (I8) (Cast (I8) (I32) x)) x)", ("i8",)),
    E("trunc-sext-i32", IC + " (sext(trunc x) => x, wrong)", "(rewrite (Cast (I8) (I32) (Cast (I32) (I8) x)) x)",
      ("i32",), ALL, "x = 128"),
    E("zext-trunc-u16", IC, "(rewrite (Cast (U64) (U16) (Cast (U16) (U64) x)) x)", ("u16",)),
    E("fpext-fptrunc", _A2 + "fpext-trunc.srctgt.ll (fptrunc(fpext x) => x)",
      "(rewrite (Cast (F64) (F32) (Cast (F32) (F64) x)) x)", ("f32",)),
    E("fptrunc-fpext", _A2 + "fpext-trunc.srctgt.ll (fpext(fptrunc x) => x, wrong)",
      "(rewrite (Cast (F32) (F64) (Cast (F64) (F32) x)) x)", ("f64",), ALL, "x = 0.1"),
    E("sitofp-i16-f32", IC + " (fptosi(sitofp i16 x to f32) => x: exact)",
      "(rewrite (Cast (F32) (I16) (Cast (I16) (F32) x)) x)", ("i16",)),
    E("sitofp-i32-f32", IC + " (fptosi(sitofp i32 x to f32) => x, 24-bit mantissa)",
      "(rewrite (Cast (F32) (I32) (Cast (I32) (F32) x)) x)", ("i32",), ALL, "x = 2^24 + 1"),
    E("uitofp-u8-f16", IC + " (fptoui(uitofp u8 x to f16) => x: exact)",
      "(rewrite (Cast (F16) (U8) (Cast (U8) (F16) x)) x)", ("u8",)),
    E("sitofp-i16-f16", IC + " (fptosi(sitofp i16 x to f16) => x, 11-bit mantissa)",
      "(rewrite (Cast (F16) (I16) (Cast (I16) (F16) x)) x)", ("i16",), ALL, "x = 2049"),
    E("fneg-bitcast", _A2 + "fneg.srctgt.ll (bitcast(fneg x) => bitcast(x) ^ signbit)",
      "(rewrite (Bitcast (F32) (I32) (Neg (F32) x)) (Xor (I32) (Bitcast (F32) (I32) x) (Const (I32) -2147483648)))",
      ("f32",)),
    E("fabs-bitcast", _A2 + "fabs.srctgt.ll (bitcast(fabs x) => bitcast(x) & 0x7fffffff)",
      "(rewrite (Bitcast (F32) (I32) (Abs (F32) x)) (And (I32) (Bitcast (F32) (I32) x) (Const (I32) 2147483647)))",
      ("f32",)),
    # ---------------------------------------------------------------- floats (Alive2, Herbie)
    E("fmul-one", _A2 + "fmuladd.srctgt.ll / " + HERBIE + " (x * 1 => x)",
      "(rewrite (Mul t x (ConstF t 1.0)) x :when ((IsFloat t)))", FL),
    E("fadd-zero", _A2 + "fadd-fail.srctgt.ll (x + 0.0 => x)",
      "(rewrite (Add t x (ConstF t 0.0)) x :when ((IsFloat t)))", FL, ALL, "x = -0.0"),
    E("fadd-negzero", _A2 + "fadd.srctgt.ll (x + -0.0 => x)",
      "(rewrite (Add t x (ConstF t -0.0)) x :when ((IsFloat t)))", FL),
    E("fsub-zero", IC + " (x - 0.0 => x)", "(rewrite (Sub t x (ConstF t 0.0)) x :when ((IsFloat t)))", FL),
    E("fsub-negzero", IC + " (x - -0.0 => x, wrong)", "(rewrite (Sub t x (ConstF t -0.0)) x :when ((IsFloat t)))",
      FL, ALL, "x = -0.0"),
    E("fsub-zero-x", HERBIE + " (0 - x => -x)", "(rewrite (Sub t (ConstF t 0.0) x) (Neg t x) :when ((IsFloat t)))",
      FL, ALL, "x = +0.0"),
    E("fsub-negzero-x", _A2 + "fneg.srctgt.ll (-0.0 - x => fneg x)",
      "(rewrite (Sub t (ConstF t -0.0) x) (Neg t x) :when ((IsFloat t)))", FL),
    E("fmul-zero", HERBIE + " (x * 0 => 0)", "(rewrite (Mul t x (ConstF t 0.0)) (ConstF t 0.0) :when ((IsFloat t)))",
      FL, ALL, "x = -1, NaN, inf"),
    E("fsub-self", HERBIE + " (x - x => 0)", "(rewrite (Sub t x x) (ConstF t 0.0) :when ((IsFloat t)))", FL, ALL,
      "x = inf"),
    E("fdiv-self", HERBIE + " (x / x => 1)", "(rewrite (Div t x x) (ConstF t 1.0) :when ((IsFloat t)))", FL, ALL,
      "x = 0"),
    E("fadd-sub-cancel", HERBIE + " ((a + b) - b => a)", "(rewrite (Sub t (Add t a b) b) a :when ((IsFloat t)))",
      FL, ALL, "rounding"),
    E("fneg-neg", HERBIE + " (-(-x) => x)", "(rewrite (Neg t (Neg t x)) x :when ((IsFloat t)))", FL),
    E("fabs-fneg", _A2 + "fabs.srctgt.ll (fabs(-x) => fabs(x))",
      "(rewrite (Abs t (Neg t x)) (Abs t x) :when ((IsFloat t)))", FL),
    E("fmul-negone", HERBIE + " (x * -1 => -x)", "(rewrite (Mul t x (ConstF t -1.0)) (Neg t x) :when ((IsFloat t)))", FL),
    E("fdiv-one", HERBIE + " (x / 1 => x)", "(rewrite (Div t x (ConstF t 1.0)) x :when ((IsFloat t)))", FL),
    E("fdiv-negone", HERBIE + " (x / -1 => -x)", "(rewrite (Div t x (ConstF t -1.0)) (Neg t x) :when ((IsFloat t)))", FL),
    E("fmul-two", HERBIE + " (x * 2 => x + x)", "(rewrite (Mul t x (ConstF t 2.0)) (Add t x x) :when ((IsFloat t)))", FL),
    E("fdiv-two", IC + " (x / 2 => x * 0.5: exact reciprocal)",
      "(rewrite (Div t x (ConstF t 2.0)) (Mul t x (ConstF t 0.5)) :when ((IsFloat t)))", FL),
    E("fdiv-three", IC + " (x / 3 => x * (1/3): inexact reciprocal)",
      "(rewrite (Div t x (ConstF t 3.0)) (Mul t x (ConstF t 0.3333333333333333)) :when ((IsFloat t)))", FL, ALL),
    E("fdiv-ten", HERBIE + " (x / 10 => x * 0.1)",
      "(rewrite (Div t x (ConstF t 10.0)) (Mul t x (ConstF t 0.1)) :when ((IsFloat t)))", FL, ALL),
    E("fmul-comm", HERBIE, "(rewrite (Mul t a b) (Mul t b a) :when ((IsFloat t)))", FL),
    E("fadd-comm", HERBIE, "(rewrite (Add t a b) (Add t b a) :when ((IsFloat t)))", FL),
    E("fadd-assoc", HERBIE, "(rewrite (Add t (Add t a b) c) (Add t a (Add t b c)) :when ((IsFloat t)))", FL, ALL),
    E("fmul-assoc", HERBIE, "(rewrite (Mul t (Mul t a b) c) (Mul t a (Mul t b c)) :when ((IsFloat t)))", FL, ALL),
    E("fdistribute", HERBIE, "(rewrite (Mul t a (Add t b c)) (Add t (Mul t a b) (Mul t a c)) :when ((IsFloat t)))",
      FL, ALL),
    E("fneg-add", HERBIE + " (-(a + b) => -a + -b)",
      "(rewrite (Neg t (Add t a b)) (Add t (Neg t a) (Neg t b)) :when ((IsFloat t)))", FL, ALL,
      "a = +0.0, b = -0.0"),
    E("fneg-mul", HERBIE + " (-(a * b) => (-a) * b)",
      "(rewrite (Neg t (Mul t a b)) (Mul t (Neg t a) b) :when ((IsFloat t)))", FL),
    E("fneg-sub", HERBIE + " (-(a - b) => b - a)", "(rewrite (Neg t (Sub t a b)) (Sub t b a) :when ((IsFloat t)))",
      FL, ALL, "a = b"),
    E("fsub-as-add", HERBIE + " (a - b => a + -b)",
      "(rewrite (Sub t a b) (Add t a (Neg t b)) :when ((IsFloat t)))", FL),
    E("fsub-neg", HERBIE + " (x - (-y) => x + y)", "(rewrite (Sub t x (Neg t y)) (Add t x y) :when ((IsFloat t)))", FL),
    E("fdiv-neg-neg", HERBIE, "(rewrite (Div t (Neg t a) (Neg t b)) (Div t a b) :when ((IsFloat t)))", FL),
    E("fmul-neg-neg", HERBIE, "(rewrite (Mul t (Neg t a) (Neg t b)) (Mul t a b) :when ((IsFloat t)))", FL),
    E("fma-split", _A2 + "fmuladd.srctgt.ll (fma(a, b, c) => a * b + c)",
      "(rewrite (Fma t a b c) (Add t (Mul t a b) c) :when ((IsFloat t)))", FL, ALL, "double rounding"),
    E("fma-contract", _A2 + "fmuladd2.srctgt.ll (a * b + c => fma(a, b, c))",
      "(rewrite (Add t (Mul t a b) c) (Fma t a b c) :when ((IsFloat t)))", FL, ALL, "double rounding"),
    E("fma-one", IC + " (fma(a, 1, c) => a + c)", "(rewrite (Fma t a (ConstF t 1.0) c) (Add t a c) :when ((IsFloat t)))",
      FL),
    E("fma-negzero", IC + " (fma(a, b, -0.0) => a * b)",
      "(rewrite (Fma t a b (ConstF t -0.0)) (Mul t a b) :when ((IsFloat t)))", FL),
    E("fma-zero", IC + " (fma(a, b, 0.0) => a * b)",
      "(rewrite (Fma t a b (ConstF t 0.0)) (Mul t a b) :when ((IsFloat t)))", FL, ALL, "a * b = -0.0"),
    E("sqrt-square", HERBIE + " (sqrt(x * x) => fabs(x))",
      "(rewrite (Sqrt t (Mul t x x)) (Abs t x) :when ((IsFloat t)))", FL, ALL, "x * x overflows"),
    E("sqrt-mul-self", HERBIE + " (sqrt(x) * sqrt(x) => x)",
      "(rewrite (Mul t (Sqrt t x) (Sqrt t x)) x :when ((IsFloat t)))", FL, ALL, "x = -1 or rounding"),
    E("fmin-self", _A2 + "reduce_fmin.srctgt.ll", "(rewrite (Minimum t x x) x :when ((IsFloat t)))", FL),
    E("fmax-neginf", IC + " (maxnum(x, -inf) => x)",
      "(rewrite (Maximum t x (ConstF t -inf)) x :when ((IsFloat t)))", FL, ALL, "x = NaN"),
    E("fmax-neginf-nnan", IC + " (maxnum(x, -inf) => x when x is not NaN)",
      "(rewrite (Maximum t x (ConstF t -inf)) x :when ((IsFloat t) (NotNan x)))", FL),
    E("fmin-inf-nnan", IC + " (minnum(x, +inf) => x when x is not NaN)",
      "(rewrite (Minimum t x (ConstF t inf)) x :when ((IsFloat t) (NotNan x)))", FL),
    E("fadd-zero-pos", IC + " (x + 0.0 => x when x > 0)",
      "(rewrite (Add t x (ConstF t 0.0)) x :when ((IsFloat t) (Positive x)))", FL),
    E("fmul-zero-nonneg", HERBIE + " (x * 0 => 0 when x >= 0 and finite: -0.0 is >= 0)",
      "(rewrite (Mul t x (ConstF t 0.0)) (ConstF t 0.0) :when ((IsFloat t) (Finite x) (NonNeg x)))", FL, ALL,
      "x = -0.0"),
    E("fmul-zero-pos", HERBIE + " (x * 0 => 0 when 0 < x < inf)",
      "(rewrite (Mul t x (ConstF t 0.0)) (ConstF t 0.0) :when ((IsFloat t) (Finite x) (Positive x)))", FL),
    E("fsub-self-finite", HERBIE + " (x - x => 0 when x is finite)",
      "(rewrite (Sub t x x) (ConstF t 0.0) :when ((IsFloat t) (Finite x)))", FL),
    E("fdiv-self-finite", HERBIE + " (x / x => 1 when x is finite, x = 0 allowed)",
      "(rewrite (Div t x x) (ConstF t 1.0) :when ((IsFloat t) (Finite x)))", FL, ALL, "x = 0"),
    E("fdiv-self-pos", HERBIE + " (x / x => 1 when 0 < x < inf)",
      "(rewrite (Div t x x) (ConstF t 1.0) :when ((IsFloat t) (Finite x) (Positive x)))", FL),
    E("fadd-sub-finite", HERBIE + " ((a + b) - b => a when finite)",
      "(rewrite (Sub t (Add t a b) b) a :when ((IsFloat t) (Finite a) (Finite b)))", FL, ALL, "rounding"),
    E("fsquare-fabs", HERBIE + " (x * x => |x| * |x|)",
      "(rewrite (Mul t x x) (Mul t (Abs t x) (Abs t x)) :when ((IsFloat t)))", FL),
    E("fabs-mul", HERBIE + " (|x * y| => |x| * |y|)",
      "(rewrite (Abs t (Mul t x y)) (Mul t (Abs t x) (Abs t y)) :when ((IsFloat t)))", FL),
    E("fabs-div", HERBIE + " (|x / y| => |x| / |y|)",
      "(rewrite (Abs t (Div t x y)) (Div t (Abs t x) (Abs t y)) :when ((IsFloat t)))", FL),
    E("fabs-add", HERBIE + " (|x + y| => |x| + |y|, wrong)",
      "(rewrite (Abs t (Add t x y)) (Add t (Abs t x) (Abs t y)) :when ((IsFloat t)))", FL, ALL, "x = 1, y = -1"),
    E("fdiv-inv", HERBIE + " (a / b => a * (1 / b))",
      "(rewrite (Div t a b) (Mul t a (Div t (ConstF t 1.0) b)) :when ((IsFloat t)))", FL, ALL, "rounding"),
    E("fsub-flip", HERBIE + " (a - b => -(b - a))",
      "(rewrite (Sub t a b) (Neg t (Sub t b a)) :when ((IsFloat t)))", FL, ALL, "a = b"),
    E("frem-self", IC + " (fmod(x, x) => 0)", "(rewrite (Rem t x x) (ConstF t 0.0) :when ((IsFloat t)))", FL, ALL,
      "x = 0 or inf: NaN; x = -1: -0.0"),
    E("ftrunc-trunc", IC + " (trunc(trunc x) => trunc x)", "(rewrite (Trunc t (Trunc t x)) (Trunc t x) :when ((IsFloat t)))",
      FL),
    E("floor-neg", HERBIE + " (floor(-x) => -ceil(x))",
      "(rewrite (Floor t (Neg t x)) (Neg t (Ceil t x)) :when ((IsFloat t)))", FL),
    E("fexp-sub-self", HERBIE + " (exp(x) - exp(x) => 0)",
      "(rewrite (Sub t (Exp t x) (Exp t x)) (ConstF t 0.0) :when ((IsFloat t)))", FL, ALL, "x = 1000: inf - inf"),
    E("fexp-log", HERBIE + " (exp(log x) => x)", "(rewrite (Exp t (Log t x)) x :when ((IsFloat t)))", FL, ALL,
      "x = -1"),
    E("fexp-sum", HERBIE + " (exp(a) * exp(b) => exp(a + b))",
      "(rewrite (Mul t (Exp t a) (Exp t b)) (Exp t (Add t a b)) :when ((IsFloat t)))", FL, ALL, "rounding"),
    E("fsin-neg", HERBIE + " (sin(-x) => -sin(x): needs sin's oddness)",
      "(rewrite (Sin t (Neg t x)) (Neg t (Sin t x)) :when ((IsFloat t)))", FL,
      why="sound for the math library's sin (odd), not provable with sin uninterpreted"),
]
