"""Prove rewrite rules sound with z3, per dtype, before they may fire.

For a rule ``lhs -> rhs :when guards`` and each assignment of its dtype variables that the
patterns and guards allow (concrete ``(I32)`` constructors, family relations such as ``(IsInt
t)``, and each op's dtype family — a dtype variable with no guard ranges over every dtype its ops
accept), the verifier proves, lane-wise,

    ``guards ∧ defined(lhs) ⇒ defined(rhs) ∧ lhs ≡ rhs``

* ``≡`` is STRUCTURAL equality: on floats ``==`` of FP terms (NaN ≡ NaN, +0 ≢ -0), not IEEE
  ``fpEQ``; on ints bit-vector equality at the dtype's width (see :mod:`.z3ops`).
* The IR is total (see :mod:`.z3ops`): integer ``x / 0`` and ``x % 0`` are 0, ``INT_MIN / -1``
  wraps, shifts by amounts outside ``[0, bits)`` give 0 or the sign fill — so in exact mode every
  side is defined and the obligation is plain equality. ``defined`` only matters for
  ``fast_math`` rules (real arithmetic: ``x / 0``, ``log`` of a non-positive value and ``sqrt``
  of a negative one are undefined there, and a rule may remove such a term but never introduce
  one) and for egglog itself: right-hand sides must not panic egglog (their i64 primitive
  arithmetic — ``+``, ``<<``, ... — must not overflow) and a ``Const`` they build must hold a
  canonical value of its dtype.
* Pattern variables over ``Term`` are free lane values of their dtype; ``splat``, ``broadcast``,
  ``expand_dims``, ``reshape`` are lane identities; ``trans``, reductions and ``dot`` are
  uninterpreted functions of a stand-in for their whole operand block (one per structurally
  distinct operand), so rules can only reason about them by structure. A variable reached
  through different chains of shape ops on the two sides (different lane mappings) is not
  verified (``unknown``).
* Range guards ``(LowerBound x)``/``(UpperBound x)`` become constraints on the lane value of
  ``x`` (as a mathematical integer: signed or unsigned by dtype; bool is 0/1).
* ``ProgramId``: ``0 <= pid < NumPrograms``, ``NumPrograms >= 1``; ``Arange``: ``start <= lane <
  end``; ``Const`` patterns hold canonical values (the encoder's invariant).
* ``fast_math`` rules are proved over the reals (:data:`.z3ops.REAL`), other rules exactly.
* ``rule`` commands (range transfer): each ``(set (LowerBound e) k)`` action becomes the
  obligation ``facts ⇒ value(e) >= k`` (``UpperBound``: ``<=``); ``(union a b)`` is proved like
  a rewrite ``a -> b``.

Verdicts per dtype: ``proved``, ``refuted`` (with a counterexample in the rule's own variables,
re-evaluated with the reference semantics — :mod:`.cex_check`), ``unknown`` (timeout or outside
what the encoding can decide), and ``proved-reduced-width``, a DIAGNOSTIC only: for an integer
dtype whose full-width proof timed out, the rule was proved at 8 and 16 bits and holds on sampled
full-width values — which is not a proof, so such a dtype is NOT usable. Before giving up on a
timeout the verifier tries a full proof by case split: an i64 variable of the rule (a shift
amount, a ``log2``) that the guards bound to at most 65 values is fixed to each value in turn and
each case is proved by bit-blasting (width-independent lemmas in practice: ``x / 2^k == x >> k``
for each k). Only rules proved for every dtype may fire (:func:`usable_rules`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from eggpu.ir import ALL_DTYPES, OPS, DType
from eggpu.ir.dtypes import BY_NAME, bool_, i32
from eggpu.ir.errors import RuleError, VerificationError

from . import cex_check, z3ops
from .rules_loader import RANGE_FUNCTIONS, Atom, Rule, SList, Sx
from .schema import CONSTRUCTOR_DTYPES, CONSTRUCTORS, FAMILY_RELATIONS, bits_float

PROVED = "proved"
PROVED_REDUCED = "proved-reduced-width"
REFUTED = "refuted"
UNKNOWN = "unknown"
USABLE = (PROVED,)  # reduced width + sampling is not a proof: reported, never used

DEFAULT_TIMEOUT_MS = 4000
REDUCED_WIDTHS = (8, 16)
SAMPLES = 1000  # concrete full-width cases tried after a timeout
PRE_SEARCH = 64  # concrete cases tried before z3 on formulas with wide division

_UB_OPS = frozenset({"div", "rem"})
_SHAPE_PATH_OPS = frozenset({"broadcast", "expand_dims", "reshape"})


# ------------------------------------------------------------------ results


@dataclass
class DtypeResult:
    """The verdict of one rule at one dtype assignment (``key``: ``"i32"`` or ``"t=i32,u=f32"``)."""

    key: str
    status: str
    counterexample: dict[str, str] | None = None
    detail: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "status": self.status, "cex": self.counterexample, "detail": self.detail,
                "seconds": round(self.seconds, 4)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DtypeResult:
        return cls(d["key"], d["status"], d.get("cex"), d.get("detail", ""), d.get("seconds", 0.0))

    def format_counterexample(self) -> str:
        if not self.counterexample:
            return ""
        return ", ".join(f"{k} = {v}" for k, v in self.counterexample.items())


@dataclass
class RuleVerdict:
    """All per-dtype results of one rule."""

    rule: str
    location: str
    ruleset: str
    results: list[DtypeResult] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    note: str = ""

    @property
    def usable(self) -> bool:
        """True when every dtype the rule can match is fully proved."""
        return bool(self.results) and all(r.status in USABLE for r in self.results)

    @property
    def refuted(self) -> bool:
        return any(r.status == REFUTED for r in self.results)

    @property
    def status(self) -> str:
        """``refuted`` if any dtype is refuted, else ``unknown`` if any is, else
        ``proved-reduced-width`` if any is, else ``proved`` (``unknown`` when no dtype matches)."""
        sts = {r.status for r in self.results}
        for s in (REFUTED, UNKNOWN, PROVED_REDUCED):
            if s in sts:
                return s
        return PROVED if sts else UNKNOWN

    def first(self, status: str) -> DtypeResult | None:
        return next((r for r in self.results if r.status == status), None)

    @property
    def counterexample(self) -> dict[str, str] | None:
        r = self.first(REFUTED)
        return r.counterexample if r else None

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "location": self.location, "ruleset": self.ruleset,
                "results": [r.to_json() for r in self.results], "seconds": round(self.seconds, 4),
                "note": self.note}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RuleVerdict:
        return cls(d["rule"], d["location"], d["ruleset"], [DtypeResult.from_json(x) for x in d["results"]],
                   d.get("seconds", 0.0), note=d.get("note", ""))

    def summary(self) -> str:
        """One line per status: ``proved: i8 i16 i32 i64 u8..u64``."""
        by: dict[str, list[str]] = {}
        for r in self.results:
            by.setdefault(r.status, []).append(r.key)
        if not by:
            return "no dtype can match" + (f" ({self.note})" if self.note else "")
        return "; ".join(f"{s}: {compress_keys(ks)}" for s, ks in by.items())


def _compress_multi(keys: Sequence[str]) -> str | None:
    """``t=i8,u=i16`` style keys that form a full product -> ``t in i8..i64 x u in f16..f64``."""
    rows = [dict(p.split("=", 1) for p in k.split(",")) for k in keys]
    names = list(rows[0])
    if any(list(r) != names for r in rows):
        return None
    values = {n: list(dict.fromkeys(r[n] for r in rows)) for n in names}
    size = 1
    for v in values.values():
        size *= len(v)
    if size != len(set(keys)):
        return None
    return " x ".join(f"{n} in {compress_keys(values[n]) if len(values[n]) > 1 else values[n][0]}" for n in names)


_DT_ORDER = [d.name for d in ALL_DTYPES]
_RUNS = [["i8", "i16", "i32", "i64"], ["u8", "u16", "u32", "u64"], ["f16", "bf16", "f32", "f64"]]


def compress_keys(keys: Sequence[str]) -> str:
    """``i8 i16 i32 i64 u8 u16 u32 u64`` -> ``i8..i64 u8..u64`` (runs of 3+ of one family)."""
    ks = list(keys)
    if ks and all("=" in k for k in ks):
        multi = _compress_multi(ks)
        if multi is not None:
            return multi
    out: list[str] = []
    used: set[str] = set()
    for run in _RUNS:
        present = [k for k in run if k in ks]
        if len(present) >= 3 and present == run[run.index(present[0]):run.index(present[0]) + len(present)]:
            out.append(f"{present[0]}..{present[-1]}")
            used.update(present)
    rest = [k for k in ks if k not in used]
    order = {n: i for i, n in enumerate(_DT_ORDER)}
    rest.sort(key=lambda k: order.get(k, 99))
    merged = out + rest
    merged.sort(key=lambda k: order.get(k.split("..")[0], 99))
    return " ".join(merged)


# ------------------------------------------------------------------ types


@dataclass(frozen=True)
class Ptr:
    pointee: DType

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


Ty = DType | Ptr


#: why a dtype assignment cannot match (``_Infeasible.kind`` -> the words ``rules check`` prints)
NO_MATCH_REASONS = {
    "op": "an op is not defined on the dtype",
    "literal": "a literal is not a value of the dtype",
    "guard": "the guards cannot hold",
    "types": "the patterns' types do not fit together",
}


class _Infeasible(Exception):
    """This dtype assignment cannot match (the lhs/guards are ill-typed for it); ``kind`` is a
    key of :data:`NO_MATCH_REASONS`."""

    def __init__(self, msg: str, kind: str = "types"):
        super().__init__(msg)
        self.kind = kind


class _IllTyped(Exception):
    """The rhs builds an ill-typed term for a feasible assignment (the rule is wrong)."""

    def __init__(self, msg: str, kind: str = "types"):
        super().__init__(msg)


@dataclass(frozen=True)
class _NoMatch:
    """An assignment that cannot match, with the reason kind (see :data:`NO_MATCH_REASONS`)."""

    kind: str
    detail: str = ""


#: the words for an op family in a "does not accept" message
_FAMILY_WORDS = {"num": "ints and floats", "int": "ints (not bool)", "int|bool": "ints and bool",
                 "float": "floats"}
#: what to write instead on bool, where the IR has a bool op with the intended meaning
_BOOL_INSTEAD = {"add": "or (saturating) or xor (mod 2)", "sub": "xor (mod 2)", "mul": "and",
                 "minimum": "and", "maximum": "or", "neg": "the operand itself (mod 2)"}


def _family_mismatch(op: str, family: str, t: DType) -> str:
    """Why ``op`` cannot take ``t``, e.g. ``add does not accept bool (its operands are ints and
    floats; on bool write or (saturating) or xor (mod 2))``: the IR has no bool arithmetic, as
    Triton's frontend promotes bool operands of ``+``/``*`` to int first."""
    msg = f"{op} does not accept {t} (its operands are {_FAMILY_WORDS.get(family, family)}"
    if t.is_bool and op in _BOOL_INSTEAD:
        msg += f"; on bool write {_BOOL_INSTEAD[op]}"
    return msg + ")"


class _Unsupported(Exception):
    """The rule uses something the encoding cannot decide."""


def _family_ok(family: str, d: DType) -> bool:
    if family == "any":
        return True
    if family == "num":
        return d.is_int or d.is_float
    if family == "int":
        return d.is_int
    if family == "int|bool":
        return d.is_int or d.is_bool
    if family == "float":
        return d.is_float
    raise AssertionError(family)


def _int(node: Sx) -> int | None:
    if isinstance(node, Atom):
        try:
            return int(node.text)
        except ValueError:
            return None
    return None


def _canon(node: Sx, env: Mapping[str, DType]) -> str:
    """Canonical text of a subtree with dtype variables replaced by their assignment."""
    if isinstance(node, Atom):
        d = env.get(node.text)
        return f"({CONSTRUCTOR_DTYPES_INV[d]})" if d is not None else node.text
    return "(" + " ".join(_canon(i, env) for i in node.items) + ")"


CONSTRUCTOR_DTYPES_INV = {v: k for k, v in CONSTRUCTOR_DTYPES.items()}


# ------------------------------------------------------------------ one instance


class _Instance:
    """The z3 encoding of one rule at one dtype assignment."""

    def __init__(self, rule: Rule, env: Mapping[str, DType], mode: str):
        self.rule = rule
        self.env = dict(env)
        self.mode = mode
        self.sorts = rule.var_sorts
        self.types: dict[str, Ty] = {}
        self.terms: dict[str, tuple[z3.ExprRef, z3.BoolRef, z3.BoolRef]] = {}  # var -> (value, ub, np)
        self.ints: dict[str, z3.ExprRef] = {}  # i64 variables (BitVec 64)
        self.int_defined: list[z3.BoolRef] = []  # egglog-level obligations of the rhs/actions
        self.panic_ok: list[z3.BoolRef] = []  # must hold unconditionally (egglog panics otherwise)
        self.bounds: dict[str, z3.ExprRef] = {}  # "LowerBound(x)" -> BitVec 64
        self.assume: list[z3.BoolRef] = []
        self.shown: dict[str, tuple[z3.ExprRef, Ty | str]] = {}
        self.blocks: dict[str, z3.ExprRef] = {}
        self.leaves: dict[str, z3.ExprRef] = {}
        self.real_consts: dict[str, z3.ExprRef] = {}

    # -------------------------------------------------------------- dtypes

    def dt(self, node: Sx) -> DType:
        if isinstance(node, SList):
            return CONSTRUCTOR_DTYPES[node.head]
        return self.env[node.text]

    # -------------------------------------------------------------- type inference

    def infer(self, node: Sx, expected: Ty | None, rhs: bool) -> Ty:
        bad = _IllTyped if rhs else _Infeasible
        if isinstance(node, Atom):
            name = node.text
            have = self.types.get(name)
            if have is None:
                if expected is None:
                    raise _Unsupported(f"cannot infer the dtype of {name}")
                self.types[name] = expected
                return expected
            if expected is not None and have != expected:
                raise bad(f"{name} is {have} here but {expected} elsewhere")
            return have
        info = CONSTRUCTORS[node.head]
        args = node.items[1:]
        nd = len(info.dtypes)
        dts = [self.dt(a) for a in args[:nd]]
        attrs = args[nd:nd + len(info.attrs)]
        operands = args[nd + len(info.attrs):]
        t = dts[0]
        op = info.op
        if op is None:  # Opaque / OpaquePtr
            res: Ty = Ptr(t) if node.head == "OpaquePtr" else t
        elif op == "const":
            if node.head == "Const" and t.is_float:
                raise bad(f"Const of float dtype {t} (use ConstF)")
            if node.head == "ConstF" and not t.is_float:
                raise bad(f"ConstF of non-float dtype {t}")
            res = t
        elif op in ("program_id", "num_programs", "arange"):
            if t != i32:
                raise bad(f"{node.head} is i32, not {t}")
            res = t
        else:
            od = OPS[op]
            if op == "addptr":
                if not dts[1].is_int:
                    raise bad(f"addptr offset dtype {dts[1]} is not an integer")
                want: list[Ty | None] = [Ptr(t), dts[1]]
                res = Ptr(t)
            elif op == "where":
                want = [bool_, None, None]
                res = None  # type: ignore[assignment]
            else:
                if not _family_ok(od.family, t):
                    raise bad(_family_mismatch(op, od.family, t), kind="op")
                target = self.dt(attrs[0]) if op in ("cast", "bitcast") else None
                if op == "bitcast" and target.bits != t.bits:
                    raise bad(f"bitcast {t} -> {target} changes the width")
                if op == "dot":
                    acc = i32 if t.is_int else BY_NAME["f32"]
                    want = [t, t, acc][: len(operands)]
                elif op in z3ops.LANE_IDENTITY_OPS or op == "trans":
                    want = [None]
                else:
                    want = [t] * len(operands)
                attrs_d = {"dtype": target} if target is not None else {}
                res = z3ops.result_dtype(op, t, attrs_d) if op not in z3ops.LANE_IDENTITY_OPS else None
            got = []
            for o, w in zip(operands, want):
                if w is None:  # shape ops / where branches: data of dtype t, or pointers to t
                    w2: Ty = expected if (isinstance(expected, Ptr) and expected.pointee == t) else t
                    if isinstance(o, SList) and CONSTRUCTORS[o.head].op == "addptr":
                        w2 = Ptr(t)
                    got.append(self.infer(o, w2, rhs))
                else:
                    got.append(self.infer(o, w, rhs))
            if res is None:
                res = got[-1]
        if expected is not None and res != expected:
            raise bad(f"{node} has type {res}, expected {expected}")
        return res

    # -------------------------------------------------------------- i64 expressions

    def i64(self, node: Sx) -> tuple[z3.BitVecRef, z3.BoolRef]:
        """An egglog i64 expression: (value, defined) — primitives are checked (fail on overflow)."""
        if isinstance(node, Atom):
            v = _int(node)
            if v is not None:
                return z3.BitVecVal(v % (1 << 64), 64), z3ops.TRUE
            name = node.text
            if name not in self.ints:
                self.ints[name] = z3.BitVec(name, 64)
                self.shown[name] = (self.ints[name], "i64")
            return self.ints[name], z3ops.TRUE
        h = node.head
        if h in RANGE_FUNCTIONS:
            return self.bound(h, node.items[1]), z3ops.TRUE
        args = [self.i64(a) for a in node.items[1:]]
        ok = z3.And(*[d for _, d in args]) if args else z3ops.TRUE
        vals = [v for v, _ in args]
        if h == "not-i64":
            return ~vals[0], ok
        if h == "log2":
            a = vals[0]
            self.panic_ok.append(z3.Implies(ok, a > 0))
            r = z3.BitVecVal(0, 64)
            for i in range(1, 64):
                r = z3.If(z3.Extract(i, i, a) == 1, z3.BitVecVal(i, 64), r)
            return r, ok
        a, b = vals
        mn = z3.BitVecVal(1 << 63, 64)
        if h == "+":
            return a + b, z3.And(ok, z3.BVAddNoOverflow(a, b, True), z3.BVAddNoUnderflow(a, b))
        if h == "-":
            return a - b, z3.And(ok, z3.BVSubNoOverflow(a, b), z3.BVSubNoUnderflow(a, b, True))
        if h == "*":
            return a * b, z3.And(ok, z3.BVMulNoOverflow(a, b, True), z3.BVMulNoUnderflow(a, b))
        if h in ("/", "%"):
            d = z3.And(ok, b != 0, z3.Not(z3.And(a == mn, b == -1)))
            return (a / b if h == "/" else z3.SRem(a, b)), d
        if h in ("<<", ">>"):
            d = z3.And(ok, z3.ULT(b, 64))
            return (a << b if h == "<<" else a >> b), d
        if h == "&":
            return a & b, ok
        if h == "|":
            return a | b, ok
        if h == "^":
            return a ^ b, ok
        if h == "min":
            return z3.If(a < b, a, b), ok
        if h == "max":
            return z3.If(a < b, b, a), ok
        raise _Unsupported(f"primitive {h}")

    def lane_int(self, node: Sx) -> z3.BitVecRef:
        """The lane value of an integer/bool term as a 66-bit signed integer."""
        ty = self.types.get(node.text) if isinstance(node, Atom) else self.infer(node, None, False)
        value, _, _ = self.term(node)
        if isinstance(ty, Ptr) or ty is None or ty.is_float:
            raise _Unsupported(f"range bounds of a {ty} term")
        if ty.is_bool:
            return z3.If(value, z3.BitVecVal(1, 66), z3.BitVecVal(0, 66))
        ext = 66 - ty.bits
        return z3.SignExt(ext, value) if ty.is_signed else z3.ZeroExt(ext, value)

    def bound(self, fn: str, term: Sx) -> z3.BitVecRef:
        key = f"{fn}({term})"
        if key not in self.bounds:
            b = z3.BitVec(key, 64)
            self.bounds[key] = b
            self.shown[key] = (b, "i64")
            lane = self.lane_int(term)
            bb = z3.SignExt(2, b)
            self.assume.append(lane >= bb if fn == "LowerBound" else lane <= bb)
        return self.bounds[key]

    # -------------------------------------------------------------- terms

    def _lane_var(self, name: str) -> tuple[z3.ExprRef, z3.BoolRef, z3.BoolRef]:
        if name not in self.terms:
            ty = self.types.get(name)
            if ty is None:
                raise _Unsupported(f"cannot infer the dtype of {name}")
            v = z3ops.var(name, None if isinstance(ty, Ptr) else ty, self.mode)
            self.terms[name] = (v, z3ops.TRUE, z3ops.TRUE)
            self.shown[name] = (v, ty)
        return self.terms[name]

    def term(self, node: Sx, rhs: bool = False, ub: list | None = None) -> tuple[z3.ExprRef, z3.BoolRef, z3.BoolRef]:
        """(lane value, defined, defined-through-operands) of a Term tree.

        In exact mode both conditions are true (the IR is total); in REAL mode they carry the
        domain conditions of ``/``, ``log`` and ``sqrt``. ``div``/``rem`` undefinedness makes the
        whole side undefined; that of other ops propagates through operands except the
        unselected branch of ``where``."""
        if isinstance(node, Atom):
            return self._lane_var(node.text)
        info = CONSTRUCTORS[node.head]
        args = node.items[1:]
        nd = len(info.dtypes)
        dts = [self.dt(a) for a in args[:nd]]
        attr_nodes = args[nd:nd + len(info.attrs)]
        operands = args[nd + len(info.attrs):]
        t = dts[0]
        op = info.op
        T = z3ops.TRUE
        if op is None:
            key = f"{node.head}({t},{attr_nodes[0]})"
            if key not in self.leaves:
                ty: Ty | None = Ptr(t) if node.head == "OpaquePtr" else t
                self.leaves[key] = z3ops.var(key, None if isinstance(ty, Ptr) else ty, self.mode)
            return self.leaves[key], T, T
        if op == "const":
            return self._const(node.head, t, attr_nodes[0], rhs)
        if op in ("program_id", "num_programs", "arange"):
            return self._leaf(op, attr_nodes), T, T
        if op in z3ops.BLOCK_OPS:
            return self._block(node, op, t, attr_nodes, operands, rhs), T, T
        enc_args = []
        nps = []
        ubs = []
        for o in operands:
            v, u, p = self.term(o, rhs)
            enc_args.append(v)
            nps.append(p)
            ubs.append(u)
        attrs: dict[str, Any] = {}
        if op in ("cast", "bitcast"):
            attrs["dtype"] = self.dt(attr_nodes[0])
        if op == "addptr":
            attrs["offset_dtype"] = dts[1]
        enc = z3ops.encode(op, t, attrs, enc_args, self.mode)
        u_all = z3.And(*ubs) if ubs else T
        if op in _UB_OPS:
            u_all = z3.And(u_all, enc.defined)
            np_all = z3.And(*nps)
        elif op == "where":
            c = enc_args[0]
            np_all = z3.And(nps[0], z3.If(c, nps[1], nps[2]))
        else:
            np_all = z3.And(*nps, enc.defined) if nps else enc.defined
        return enc.value, u_all, np_all

    def _const(self, ctor: str, t: DType, payload: Sx, rhs: bool):
        T = z3ops.TRUE
        lit = _int(payload)
        if ctor == "ConstF":
            if lit is not None:
                v = bits_float(lit)
                if not rhs and not _exact_in(v, t):
                    raise _Infeasible(f"{v!r} is not a canonical {t} constant (the pattern never matches)",
                                      kind="literal")
                enc = z3ops.const(v, t, self.mode)
                return enc.value, T, enc.defined
            bits, d = self.i64(payload)
            if rhs:
                self.int_defined.append(d)
                d = T
            if self.mode == z3ops.REAL:
                key = str(payload)
                if key not in self.real_consts:
                    self.real_consts[key] = z3.Real(f"value({key})")
                return self.real_consts[key], d, T
            f64 = z3.fpBVToFP(bits, z3.Float64())
            val = f64 if t.bits == 64 else z3.fpFPToFP(z3.RNE(), f64, z3ops.fp_sort(t))
            if not rhs:
                back = val if t.bits == 64 else z3.fpFPToFP(z3.RNE(), val, z3.Float64())
                self.assume.append(back == f64)
            return val, d, T
        # integer / bool constant
        if lit is not None:
            if not _canonical_int(lit, t):
                if rhs:
                    raise _IllTyped(f"Const {lit} is not a canonical {t} value")
                raise _Infeasible(f"Const {lit} is not a canonical {t} value", kind="literal")
            return z3ops.const(_value_of(lit, t), t, self.mode).value, T, T
        if (not rhs and isinstance(payload, Atom) and payload.text not in self.ints and t.bits < 64
                and _int(payload) is None):
            # a canonical payload is an extension of a w-bit value: tell z3 so (much faster)
            narrow = z3.BitVec(payload.text, t.bits)
            ext = z3.SignExt(64 - t.bits, narrow) if t.is_signed else z3.ZeroExt(64 - t.bits, narrow)
            self.ints[payload.text] = ext
            self.shown[payload.text] = (ext, "i64")
        v, d = self.i64(payload)
        canon = _canonical_sym(v, t)
        if rhs:
            self.int_defined += [d, canon]
            d = T
        else:
            self.assume.append(canon)
        if t.is_bool:
            return v != 0, d, T
        return z3.Extract(t.bits - 1, 0, v), d, T

    def _attr_val(self, node: Sx) -> z3.BitVecRef:
        return self.i64(node)[0]

    def _leaf(self, op: str, attr_nodes: Sequence[Sx]) -> z3.ExprRef:
        key = f"{op}({','.join(map(str, attr_nodes))})"
        if key in self.leaves:
            return self.leaves[key]
        v = z3.BitVec(key, 32)
        self.leaves[key] = v
        self.shown[key] = (v, i32)
        w = z3.SignExt(32, v)
        if op == "program_id":
            n = self._leaf("num_programs", attr_nodes)
            self.assume.append(z3.And(v >= 0, v < n))
        elif op == "num_programs":
            self.assume.append(v >= 1)
        else:
            self.assume.append(z3.And(w >= self._attr_val(attr_nodes[0]), w < self._attr_val(attr_nodes[1])))
        return v

    def _block(self, node: SList, op: str, t: DType, attr_nodes, operands, rhs: bool) -> z3.ExprRef:
        """A block op: an uninterpreted function of one stand-in per distinct operand BLOCK.

        Two operands get the same stand-in when their simplified lane expressions are equal and
        every variable inside reaches them through the same shape ops (attributes included) —
        then they are the same function of the same blocks."""
        stands = []
        n_block = 1 if op != "dot" else 2
        for o in operands[:n_block]:
            value, _, _ = self.term(o, rhs)
            paths: dict[str, set] = {}
            _lane_paths(o, (), paths, with_attrs=True)
            if any(len(p) > 1 for p in paths.values()):
                raise _Unsupported(f"a variable inside the block operand {o} has no single lane mapping")
            simple = z3.simplify(value)
            used = _const_names(simple)
            key = (simple.sexpr() + "|" + repr(sorted((k, sorted(p)) for k, p in paths.items() if k in used))
                   + "|" + str(value.sort()))
            if key not in self.blocks:
                if rhs and _partial_inside(o):
                    raise _Unsupported(f"cannot prove definedness inside the new block operand {o}")
                self.blocks[key] = z3.Const(f"block!{len(self.blocks)}", value.sort())
            stands.append(self.blocks[key])
        extra = [self.term(o, rhs)[0] for o in operands[n_block:]]  # dot's accumulator is lane-wise
        attrs: dict[str, Any] = {}
        if op == "trans":
            attrs["perm"] = [str(attr_nodes[0]).strip('"')]
        elif op != "dot":
            attrs["axis"] = str(attr_nodes[0])
        return z3ops.encode(op, t, attrs, stands + extra, self.mode).value

    # -------------------------------------------------------------- guards

    def guard(self, g: Sx) -> None:
        """Add one guard / fact as an assumption (relations were applied to the assignment)."""
        h = g.head
        args = g.items[1:]
        if h in FAMILY_RELATIONS:
            return
        if h == "Width":
            w = self.dt(args[0]).bits
            lit = _int(args[1])
            if lit is None:
                name = args[1].text
                if name in self.ints:
                    self.assume.append(self.ints[name] == w)
                else:
                    self.ints[name] = z3.BitVecVal(w, 64)
            return
        if h in ("<", "<=", ">", ">=", "!="):
            (a, da), (b, db) = self.i64(args[0]), self.i64(args[1])
            rel = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "!=": a != b}[h]
            self.assume.append(z3.And(da, db, rel))
            return
        if h == "=":
            a, b = args
            sort = self._sort_of(a) or self._sort_of(b)
            if sort == "Term":
                self._bind_term(a, b)
                return
            if sort == "DT":
                if self.dt(a) != self.dt(b):
                    raise _Infeasible("dtype equation does not hold", kind="guard")
                return
            # i64
            for x, y in ((a, b), (b, a)):
                if isinstance(x, Atom) and _int(x) is None and x.text not in self.ints:
                    vy, dy = self.i64(y)
                    self.ints[x.text] = vy
                    self.shown[x.text] = (vy, "i64")
                    self.assume.append(dy)
                    return
            (va, da), (vb, dbb) = self.i64(a), self.i64(b)
            self.assume.append(z3.And(da, dbb, va == vb))
            return
        if h in CONSTRUCTORS:  # bare fact pattern: the term exists (assume it defined)
            v, u, p = self.term(g)
            self.assume += [u, p]
            return
        raise _Unsupported(f"guard {h}")

    def _sort_of(self, node: Sx) -> str | None:
        if isinstance(node, Atom):
            return self.sorts.get(node.text) or ("i64" if _int(node) is not None else None)
        if node.head in CONSTRUCTORS:
            return "Term"
        if node.head in CONSTRUCTOR_DTYPES:
            return "DT"
        return "i64"

    def _bind_term(self, a: Sx, b: Sx) -> None:
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Atom) and x.text not in self.terms:
                v, u, p = self.term(y)
                self.terms[x.text] = (v, z3ops.TRUE, z3ops.TRUE)
                ty = self.types.get(x.text)
                self.shown.setdefault(x.text, (v, ty)) if ty is not None else None
                self.assume += [u, p]
                return
        (va, ua, pa), (vb, ub, pb) = self.term(a), self.term(b)
        self.assume += [ua, pa, ub, pb, va == vb]


def _const_names(e: z3.ExprRef) -> set[str]:
    out: set[str] = set()
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(x.decl().name())
        stack.extend(x.children())
    return out


def _exact_in(v: float, t: DType) -> bool:
    import math

    import numpy as np

    if math.isnan(v):
        return True
    with np.errstate(all="ignore"):
        r = float(np.asarray(v).astype(t.np))
    return r == v and math.copysign(1, r) == math.copysign(1, v)


def _canonical_int(v: int, t: DType) -> bool:
    if t.is_bool:
        return v in (0, 1)
    if t.is_unsigned and t.bits == 64:
        return -(1 << 63) <= v < (1 << 63)
    return t.min <= v <= t.max


def _value_of(v: int, t: DType) -> int:
    if t.is_unsigned and v < 0:
        return v + (1 << 64)
    return v


def _canonical_sym(v: z3.BitVecRef, t: DType) -> z3.BoolRef:
    if t.is_bool:
        return z3.Or(v == 0, v == 1)
    if t.bits == 64:
        return z3ops.TRUE
    low = z3.Extract(t.bits - 1, 0, v)
    ext = z3.SignExt(64 - t.bits, low) if t.is_signed else z3.ZeroExt(64 - t.bits, low)
    return ext == v


def _partial_inside(node: Sx) -> bool:
    if isinstance(node, Atom):
        return False
    info = CONSTRUCTORS.get(node.head)
    if info is not None and info.op in ("div", "rem", "shl", "shr"):
        return True
    return any(_partial_inside(i) for i in node.items[1:])


# ------------------------------------------------------------------ rule analysis


def _dt_vars(rule: Rule) -> list[str]:
    return sorted(v for v, s in rule.var_sorts.items() if s == "DT")


def _relation_ok(rule: Rule, env: Mapping[str, DType]) -> bool:
    for g in rule.guards:
        if isinstance(g, SList) and g.head in FAMILY_RELATIONS:
            a = g.items[1]
            d = CONSTRUCTOR_DTYPES[a.head] if isinstance(a, SList) else env[a.text]
            if not FAMILY_RELATIONS[g.head](d):
                return False
        if isinstance(g, SList) and g.head == "Width":
            a, w = g.items[1], _int(g.items[2])
            d = CONSTRUCTOR_DTYPES[a.head] if isinstance(a, SList) else env[a.text]
            if w is not None and d.bits != w:
                return False
    return True


def _lane_paths(node: Sx, path: tuple, out: dict[str, set], with_attrs: bool = False) -> None:
    """For each variable, the chains of shape ops (``broadcast``/``expand_dims``/``reshape`` with
    their attributes) between it and the root; a ``splat`` resets the chain (a scalar has one
    lane). Block ops are not entered (their operands are compared as whole blocks)."""
    if isinstance(node, Atom):
        if _int(node) is None and not node.is_string:
            out.setdefault(node.text, set()).add(path)
        return
    info = CONSTRUCTORS.get(node.head)
    if info is None:
        return
    op = info.op
    if op in z3ops.BLOCK_OPS:
        acc = node.items[1 + len(info.dtypes) + len(info.attrs) + 2:] if op == "dot" else ()
        for a in acc:
            _lane_paths(a, path, out, with_attrs)
        return
    nd = len(info.dtypes)
    operands = node.items[1 + nd + len(info.attrs):]
    attr_txt = tuple(str(a) for a in node.items[1 + nd:1 + nd + len(info.attrs)])
    if op == "splat":
        sub = ("splat", attr_txt) if with_attrs else ("splat",)
    elif op in _SHAPE_PATH_OPS:
        sub = path + ((node.head, attr_txt),)
    else:
        sub = path
    for o in operands:
        _lane_paths(o, sub, out, with_attrs)


def _lane_mapping_problem(rule: Rule) -> str | None:
    """A Term variable reached through different shape-op chains has no single lane value."""
    out: dict[str, set] = {}
    roots = [rule.lhs, rule.rhs] if rule.kind != "rule" else []
    if rule.kind == "rule":
        for g in rule.guards:
            if isinstance(g, SList) and g.head == "=":
                roots += [x for x in g.items[1:] if isinstance(x, SList) and x.head in CONSTRUCTORS]
            elif isinstance(g, SList) and g.head in CONSTRUCTORS:
                roots.append(g)
        for a in rule.actions:
            if a.head == "union":
                roots += list(a.items[1:])
    for r in roots:
        if r is not None:
            _lane_paths(r, (), out)
    for v, paths in out.items():
        if rule.var_sorts.get(v) == "Term" and len(paths) > 1:
            return f"variable {v} is reached through different shape ops (no single lane value)"
    return None


# ------------------------------------------------------------------ building the query


@dataclass
class _Query:
    solver_formula: z3.BoolRef
    inst: _Instance
    lhs_val: z3.ExprRef | None
    rhs_val: z3.ExprRef | None
    lhs_def: z3.BoolRef | None = None
    rhs_def: z3.BoolRef | None = None


def _env_key(rule: Rule, env: Mapping[str, DType], inst: _Instance | None = None) -> str:
    dvs = _dt_vars(rule)
    if len(dvs) == 1:
        return env[dvs[0]].name
    if dvs:
        return ",".join(f"{v}={env[v].name}" for v in dvs)
    if inst is not None and rule.lhs is not None:
        ty = inst.infer(rule.lhs, None, False)
        return str(ty)
    return "-"


def _build(rule: Rule, env: Mapping[str, DType], mode: str) -> _Query:
    """Encode one instance; raises _Infeasible/_IllTyped/_Unsupported."""
    inst = _Instance(rule, env, mode)
    T = z3ops.TRUE
    if rule.kind == "rule":
        for g in rule.guards:  # type inference over fact patterns first
            _infer_guard(inst, g)
        for a in rule.actions:
            if a.head == "union":
                ta = inst.infer(a.items[1], None, False)
                inst.infer(a.items[2], ta, True)
        for g in rule.guards:
            inst.guard(g)
        obligations = []
        lval = rval = None
        for a in rule.actions:
            if a.head == "set":
                target, val = a.items[1], a.items[2]
                fn, term = target.head, target.items[1]
                lane = inst.lane_int(term)
                _, u, p = inst.term(term)
                inst.assume += [u, p]
                k, dk = inst.i64(val)
                kk = z3.SignExt(2, k)
                obligations.append(z3.And(dk, lane >= kk if fn == "LowerBound" else lane <= kk))
            else:  # union
                va, ua, pa = inst.term(a.items[1])
                vb, ub, pb = inst.term(a.items[2], rhs=True)
                inst.assume += [ua, pa]
                obligations.append(z3.And(ub, pb, va == vb))
                lval, rval = va, vb
        goal = z3.And(*obligations, *inst.int_defined) if obligations else T
        formula = z3.Or(z3.And(*inst.assume, z3.Not(goal)), z3.Not(z3.And(*inst.panic_ok)))
        return _Query(formula, inst, lval, rval)
    # rewrite / birewrite
    lt = inst.infer(rule.lhs, None, False)
    for g in rule.guards:
        _infer_guard(inst, g)
    inst.infer(rule.rhs, lt, True)
    lv, lu, lp = inst.term(rule.lhs)
    for g in rule.guards:
        inst.guard(g)
    rv, ru, rp = inst.term(rule.rhs, rhs=True)
    eq = lv == rv
    dl = z3.And(lu, lp)
    dr = z3.And(ru, rp)
    egg_ok = z3.And(*inst.int_defined)  # no egglog panic, canonical new constants (whenever it fires)
    bad = z3.And(dl, z3.Not(z3.And(dr, eq)))
    if rule.kind == "birewrite":
        bad = z3.Or(bad, z3.And(dr, z3.Not(z3.And(dl, eq))))
    formula = z3.Or(z3.And(*inst.assume, z3.Or(z3.Not(egg_ok), bad)), z3.Not(z3.And(*inst.panic_ok)))
    return _Query(formula, inst, lv, rv, dl, z3.And(dr, egg_ok))


def _infer_guard(inst: _Instance, g: Sx) -> None:
    if not isinstance(g, SList):
        return
    if g.head in CONSTRUCTORS:
        inst.infer(g, None, False)
    elif g.head == "=":
        a, b = g.items[1:]
        if inst._sort_of(a) == "Term" or inst._sort_of(b) == "Term":
            for x, y in ((a, b), (b, a)):
                if isinstance(y, SList):
                    ty = inst.infer(y, None, False)
                    if isinstance(x, Atom):
                        inst.infer(x, ty, False)
                    else:
                        inst.infer(x, ty, False)
                    return
            # both variables: they share a type
            ta = inst.types.get(a.text) or inst.types.get(b.text)
            if ta is not None:
                inst.infer(a, ta, False)
                inst.infer(b, ta, False)
    # range functions and comparisons: arguments are already typed by patterns


# ------------------------------------------------------------------ counterexamples


def _fmt_value(v: z3.ExprRef, ty: Ty | str, mode: str) -> str:
    if ty == "i64":
        n = v.as_long() if z3.is_bv_value(v) else None
        if n is None:
            return str(v)
        return f"{n - (1 << 64) if n >= 1 << 63 else n} (i64)"
    if isinstance(ty, Ptr):
        return hex(v.as_long()) + f" ({ty})" if z3.is_bv_value(v) else str(v)
    try:
        if ty.is_float and mode == z3ops.REAL:
            f = v.as_fraction() if z3.is_rational_value(v) else None
            txt = str(f) if f is not None else str(v)
            return f"{txt} ({ty}, real)"
        py = z3ops.to_python(v, ty)
    except (ValueError, AttributeError, z3.Z3Exception):
        return f"{v} ({ty})"
    if isinstance(py, bool):
        return f"{'true' if py else 'false'} ({ty})"
    return f"{py!r} ({ty})"


def _z3_detail(q: _Query, value_of: cex_check.ValueOf) -> str:
    """``lhs = ..., rhs = ...`` as the z3 encoding computes them (plus undefined sides)."""
    inst = q.inst
    detail = ""
    if q.lhs_val is not None and q.rhs_val is not None:
        lty = _ty_of_expr(inst, q.inst.rule)
        if lty is not None:
            detail = (f"lhs = {_fmt_value(value_of(q.lhs_val), lty, inst.mode)}, "
                      f"rhs = {_fmt_value(value_of(q.rhs_val), lty, inst.mode)}")
        for side, d in (("lhs", q.lhs_def), ("rhs", q.rhs_def)):
            if d is not None and z3.is_false(z3.simplify(value_of(d))):
                detail += f"; {side} is undefined (outside fast-math's domain, or an egglog i64 overflow)"
    return detail


def _refutation(q: _Query, value_of: cex_check.ValueOf, key: str, t0: float, found_by: str) -> DtypeResult:
    """The verdict for a counterexample (a z3 model or a concrete search hit, read through
    ``value_of``). Exact-mode rewrites are re-evaluated with the op table's reference semantics:
    only a difference the reference confirms is a refutation. z3 gives uninterpreted functions
    (exp, log, ...) whatever values suit it, so an unconfirmed model over them proves nothing
    either way (``unknown``, labelled); an unconfirmed model without them means the z3 encoding
    and the reference disagree (``unknown``, reported as such)."""
    inst = q.inst
    rule = inst.rule
    cex = {name: _fmt_value(value_of(expr), ty, inst.mode) for name, (expr, ty) in inst.shown.items()
           if ty is not None}
    apps = cex_check.uninterpreted_apps(q.solver_formula)
    chosen = cex_check.describe_uninterpreted(apps, value_of) if apps else ""
    suffix = f"; found by {found_by}" if found_by else ""
    egg_ok = z3.And(*inst.int_defined, *inst.panic_ok)
    if z3.is_false(z3.simplify(value_of(egg_ok))):  # an egglog-level failure, whatever the lane values
        detail = _z3_detail(q, value_of) + ("; the right-hand side would build a non-canonical constant "
                                            "or overflow egglog's checked i64 arithmetic")
        return DtypeResult(key, REFUTED, cex, detail + suffix, time.perf_counter() - t0)
    if inst.mode == z3ops.REAL or rule.kind == "rule" or rule.lhs is None or rule.rhs is None:
        detail = _z3_detail(q, value_of)
        if chosen:
            detail += f"; uninterpreted values chosen by z3, not computed: {chosen}"
        return DtypeResult(key, REFUTED, cex, detail + suffix, time.perf_counter() - t0)
    try:
        lv, lty = cex_check.evaluate(inst, rule.lhs, value_of)
        rv, rty = cex_check.evaluate(inst, rule.rhs, value_of)
    except (cex_check.NotEvaluable, KeyError, ValueError, AttributeError, z3.Z3Exception) as e:
        detail = _z3_detail(q, value_of) + f" (z3 model, not re-evaluated: {e})"
        return DtypeResult(key, REFUTED, cex, detail + suffix, time.perf_counter() - t0)
    if not cex_check.same(lv, rv):
        detail = (f"lhs = {cex_check.fmt(lv, lty)}, rhs = {cex_check.fmt(rv, rty)} "
                  f"(computed with the reference semantics)")
        return DtypeResult(key, REFUTED, cex, detail + suffix, time.perf_counter() - t0)
    if chosen:
        detail = ("not proved: z3's counterexample needs values of uninterpreted functions "
                  f"({chosen}; chosen by z3, not computed); at these inputs the reference gives both "
                  f"sides {cex_check.fmt(lv, lty)}")
    else:
        detail = ("z3's counterexample is not confirmed by the reference semantics (the z3 encoding "
                  f"disagrees with eggpu.ir.semantics; please report): both sides {cex_check.fmt(lv, lty)} "
                  f"at {', '.join(f'{k} = {v}' for k, v in cex.items())}")
    return DtypeResult(key, UNKNOWN, None, detail, time.perf_counter() - t0)


def _ty_of_expr(inst: _Instance, rule: Rule) -> Ty | None:
    try:
        if rule.lhs is not None:
            return inst.infer(rule.lhs, None, False)
    except Exception:
        return None
    return None


# ------------------------------------------------------------------ solving


def _has_fp(formula: z3.ExprRef) -> bool:
    seen: set[int] = set()
    stack = [formula]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if e.sort().kind() == z3.Z3_FLOATING_POINT_SORT:
            return True
        stack.extend(e.children())
    return False


def _solve(formula: z3.BoolRef, mode: str, timeout_ms: int) -> tuple[z3.CheckSatResult, z3.Solver]:
    """Check ``formula`` within ``timeout_ms``. Bit-vector formulas get a small portfolio (half
    the time with z3's default solver, half with its QF_BV solver: their run times vary a lot
    between problems); formulas over floats and reals use the default solver throughout."""
    bv_only = mode == z3ops.EXACT and not _has_fp(formula)
    s = z3.Solver()
    first = max(1, timeout_ms // 2) if bv_only else timeout_ms
    s.set("timeout", first)
    if mode == z3ops.REAL:
        s.add(*z3ops.real_axioms(formula))
    s.add(formula)
    res = s.check()
    if res != z3.unknown or not bv_only:
        return res, s
    s2 = z3.SolverFor("QF_BV")
    s2.set("timeout", max(1, timeout_ms - first))
    s2.add(formula)
    res2 = s2.check()
    if res2 == z3.unknown:
        return res2, s
    return res2, s2


def _vacuous(inst: _Instance) -> bool:
    """True when the guards and pattern facts alone cannot hold (the rule never fires here)."""
    s = z3.Solver()
    s.set("timeout", 1000)
    s.add(*inst.assume)
    return s.check() == z3.unsat


def _reduced_env(env: Mapping[str, DType], width: int) -> dict[str, DType] | None:
    out = {}
    changed = False
    for v, d in env.items():
        if d.is_int and d.bits > width:
            out[v] = BY_NAME[f"{d.kind}{width}"]
            changed = True
        else:
            out[v] = d
    return out if changed else None


_DIVISION_KINDS = frozenset({z3.Z3_OP_BUDIV, z3.Z3_OP_BSDIV, z3.Z3_OP_BUREM, z3.Z3_OP_BSREM, z3.Z3_OP_BSMOD,
                             z3.Z3_OP_BUDIV_I, z3.Z3_OP_BSDIV_I, z3.Z3_OP_BUREM_I, z3.Z3_OP_BSREM_I,
                             z3.Z3_OP_BSMOD_I})


def _has_division(formula: z3.ExprRef) -> bool:
    """True when ``formula`` divides bit-vectors wider than 8 bits."""
    seen: set[int] = set()
    stack = [formula]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_app(e) and e.decl().kind() in _DIVISION_KINDS and e.sort().size() > 8:
            return True
        stack.extend(e.children())
    return False


CASE_SPLIT_MAX = 65  # most values of one i64 variable proved one by one
_CASE_TACTIC = ("simplify", "propagate-values", "solve-eqs", "simplify", "bit-blast", "sat")


def _case_split(q: _Query, mode: str, timeout_ms: int) -> tuple[z3.CheckSatResult, str, int] | None:
    """Prove ``q`` by fixing one i64 variable that the assumptions bound to a small range
    (``0 <= k <= 64``: shift amounts, ``log2`` results) to each of its values; None when no
    variable qualifies. Returns (unsat = proved / sat / unknown, the variable, the case count).
    Each case is bit-blasted (with every other variable free, a case is a fixed-shape identity
    such as ``x / 2^5 == x >> 5``, which z3 decides quickly); the whole split shares a budget of
    ``20 * timeout_ms``."""
    if mode != z3ops.EXACT or not q.inst.ints:
        return None
    assume = z3.And(*q.inst.assume) if q.inst.assume else z3ops.TRUE
    for name, v in q.inst.ints.items():  # a variable, or an expression a guard binds a name to
        if z3.is_bv_value(z3.simplify(v)):
            continue
        s = z3.Solver()
        s.set("timeout", 1000)
        outside = z3.Or(v < 0, v >= CASE_SPLIT_MAX)
        s.add(assume, outside)
        if s.check() != z3.unsat:
            continue
        rest = z3.Solver()  # the values outside the range (egglog panics do not need the guards)
        rest.set("timeout", timeout_ms)
        rest.add(q.solver_formula, outside)
        if rest.check() != z3.unsat:
            continue
        deadline = time.perf_counter() + 20 * timeout_ms / 1000
        for i in range(CASE_SPLIT_MAX):
            left_ms = int((deadline - time.perf_counter()) * 1000)
            if left_ms <= 0:
                return z3.unknown, name, i
            solver = z3.Then(*_CASE_TACTIC).solver()
            solver.set("timeout", max(1, min(timeout_ms, left_ms)))
            solver.add(q.solver_formula, v == i)
            res = solver.check()
            if res != z3.unsat:
                return res, name, i
        return z3.unsat, name, CASE_SPLIT_MAX
    return None


def _signedness(inst: _Instance) -> dict[str, bool]:
    return {n: t.is_signed for n, t in inst.types.items() if isinstance(t, DType)}


def _verify_instance(rule: Rule, env: Mapping[str, DType], mode: str, timeout_ms: int,
                     memo: dict[int, DtypeResult | _NoMatch] | None = None) -> DtypeResult | _NoMatch:
    """One dtype assignment; :class:`_NoMatch` when the assignment cannot match. ``memo`` reuses
    the verdict of an earlier assignment whose query is the same formula (e.g. pointees of one
    size)."""
    t0 = time.perf_counter()
    try:
        q = _build(rule, env, mode)
    except _Infeasible as e:
        return _NoMatch(e.kind, str(e) if e.kind == "op" else "")
    except _IllTyped as e:
        key = _env_key(rule, env)
        return DtypeResult(key, REFUTED, {}, f"the right-hand side is ill-typed: {e}", time.perf_counter() - t0)
    except _Unsupported as e:
        return DtypeResult(_env_key(rule, env), UNKNOWN, None, f"not decidable by the encoding: {e}",
                           time.perf_counter() - t0)
    key = _env_key(rule, env, q.inst)
    if memo is not None:
        h = hash(q.solver_formula.sexpr())
        prev = memo.get(h)
        if prev is not None and (isinstance(prev, _NoMatch) or prev.status != REFUTED):  # refutations: re-run
            if isinstance(prev, _NoMatch):
                return prev
            return DtypeResult(key, prev.status, prev.counterexample, prev.detail, time.perf_counter() - t0)
        res_ = _verify_instance(rule, env, mode, timeout_ms)
        memo[h] = res_
        return res_
    if mode == z3ops.EXACT and _has_division(q.solver_formula):
        # bit-vector division makes z3 slow even on easy satisfiable queries: a few concrete
        # cases first (milliseconds) refute most unsound division rules without a timeout
        _, subs = cex_check.search(q.solver_formula, tries=PRE_SEARCH)
        if subs is not None:
            return _refutation(q, cex_check.substitution(subs), key, t0, "a concrete search at full width")
    res, s = _solve(q.solver_formula, mode, timeout_ms)
    if res == z3.unsat:
        if q.inst.assume and _vacuous(q.inst):
            return _NoMatch("guard")
        return DtypeResult(key, PROVED, None, "", time.perf_counter() - t0)
    if res == z3.sat and q.inst.blocks:
        return DtypeResult(key, UNKNOWN, None, "reductions, dot and trans are compared by structure only; "
                           "their operands differ", time.perf_counter() - t0)
    if res == z3.sat:
        model = s.model()
        return _refutation(q, lambda e: model.eval(e, model_completion=True), key, t0, "")
    return _after_timeout(rule, env, mode, timeout_ms, q, key, t0, s.reason_unknown())


def _after_timeout(rule: Rule, env: Mapping[str, DType], mode: str, timeout_ms: int, q: _Query, key: str,
                   t0: float, reason: str) -> DtypeResult:
    """z3 timed out at full width: solve narrower integer widths (a model there seeds the search),
    then search concrete counterexamples at full width; a rule with no counterexample whose
    narrow proofs all hold is ``proved-reduced-width``, otherwise ``unknown``."""
    split = _case_split(q, mode, timeout_ms)
    if split is not None and split[0] == z3.unsat:
        return DtypeResult(key, PROVED, None, f"full width by case split on {split[1]} ({split[2]} cases)",
                           time.perf_counter() - t0)
    notes: list[str] = []
    if split is not None:
        notes.append(f"case split on {split[1]}: {split[0]}")
    seeds: list[list] = []
    proved_at: list[int] = []
    widths = [(e, w) for w in REDUCED_WIDTHS if (e := _reduced_env(env, w)) is not None] if mode == z3ops.EXACT else []
    wide = cex_check.free_constants(q.solver_formula)
    for renv, w in widths:
        try:
            rq = _build(rule, renv, mode)
        except (_Infeasible, _IllTyped, _Unsupported) as e:
            notes.append(f"{w} bits: {e}")
            continue
        rres, rs = _solve(rq.solver_formula, mode, timeout_ms * 4)
        if rres == z3.unsat:
            proved_at.append(w)
        elif rres == z3.sat:
            notes.append(f"refuted at {w} bits")
            narrow = cex_check.free_constants(rq.solver_formula)
            m = rs.model()
            seeds.append(cex_check.lift(m, narrow, wide, _signedness(q.inst)))
            seeds.append(cex_check.lift(m, narrow, wide, {}))
        else:
            notes.append(f"{w} bits: {rres}")
    holds, subs = cex_check.search(q.solver_formula, tries=SAMPLES, seeds=seeds)
    if subs is not None:
        return _refutation(q, cex_check.substitution(subs), key, t0, "a concrete search at full width")
    if widths and len(proved_at) == len(widths) and holds >= 50:
        return DtypeResult(key, PROVED_REDUCED, None,
                           f"full width timed out ({reason}); proved at {'/'.join(map(str, proved_at))} bits; "
                           f"{holds} sampled full-width cases hold", time.perf_counter() - t0)
    if holds:
        notes.append(f"no counterexample in {holds} concrete full-width cases")
    return DtypeResult(key, UNKNOWN, None, f"timeout after {timeout_ms} ms ({reason})"
                       + ("; " + "; ".join(notes) if notes else ""), time.perf_counter() - t0)


def _mode_for(rule: Rule) -> str:
    return z3ops.REAL if rule.fast_math else z3ops.EXACT


def assignments(rule: Rule, dtypes: Iterable[DType] | None = None) -> list[dict[str, DType]]:
    """Every assignment of the rule's dtype variables allowed by its family/width relations
    (type feasibility is checked when encoding)."""
    pool = list(dtypes) if dtypes is not None else list(ALL_DTYPES)
    dvs = _dt_vars(rule)
    out = []
    for combo in itertools.product(pool, repeat=len(dvs)):
        env = dict(zip(dvs, combo))
        if _relation_ok(rule, env):
            out.append(env)
    if not dvs:
        out = [{}]
    return out


def verify_rule(rule: Rule | str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                dtypes: Iterable[DType] | None = None) -> RuleVerdict:
    """Prove one rule for every dtype it can match (``dtypes`` restricts the candidates).

    ``rule`` may be a :class:`Rule` or the text of one rule command."""
    if isinstance(rule, str):
        from .rules_loader import parse_rule

        rule = parse_rule(rule)
    t0 = time.perf_counter()
    verdict = RuleVerdict(rule.name, rule.location, rule.ruleset)
    problem = _lane_mapping_problem(rule)
    mode = _mode_for(rule)
    envs = assignments(rule, dtypes)
    if problem is not None:
        for env in envs:
            try:
                _build(rule, env, mode)
            except (_Infeasible, _IllTyped, _Unsupported):
                continue
            verdict.results.append(DtypeResult(_env_key(rule, env), UNKNOWN, None, problem))
        verdict.note = problem
    else:
        memo: dict[int, DtypeResult | _NoMatch] = {}
        no_match: dict[str, list[str]] = {}
        details: dict[str, None] = {}  # distinct, in order
        for env in envs:
            r = _verify_instance(rule, env, mode, timeout_ms, memo)
            if isinstance(r, _NoMatch):
                no_match.setdefault(r.kind, []).append(_env_key(rule, env))
                if r.detail:
                    details[r.detail] = None
            else:
                verdict.results.append(r)
        if not verdict.results:
            verdict.note = "; ".join(NO_MATCH_REASONS[k] + (f": {compress_keys(no_match[k])}" if no_match[k] != ["-"]
                                                            else "")
                                     for k in NO_MATCH_REASONS if k in no_match) or "no dtype assignment"
            if details:
                verdict.note += " — " + "; ".join(details)
    verdict.seconds = time.perf_counter() - t0
    return verdict


# ------------------------------------------------------------------ many rules, cache, pool


def _verify_job(args: tuple[Rule, int]) -> dict[str, Any]:
    rule, timeout_ms = args
    return verify_rule(rule, timeout_ms=timeout_ms).to_json()


def _cache_key(rule: Rule, timeout_ms: int) -> str:
    from .proof_cache import rule_key

    # the semantics version: a verdict proved under other op encodings is never reused
    return rule_key(rule.egglog, f"{rule.kind}|{rule.ruleset}|semantics={z3ops.SEMANTICS_VERSION}")


def verify_rules(
    rules: Iterable[Rule],
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    progress: Callable[[int, int, RuleVerdict], None] | None = None,
    cache: Any | None = None,
    use_cache: bool = True,
    workers: int | None = None,
) -> dict[str, RuleVerdict]:
    """Verify many rules (rule name -> verdict), using the proof cache and a process pool.

    ``progress(done, total, verdict)`` is called after each rule (cached ones included).
    ``cache`` is a :class:`~.proof_cache.ProofCache` (default: the user cache dir); verdicts
    with an ``unknown`` result are not cached. A rule the user cache lacks is looked up in the
    verdicts shipped with the package (:mod:`.shipped_proofs`) before it is proved. ``workers`` defaults to ``min(2, cpu count)``;
    1 verifies in this process."""
    from .proof_cache import ProofCache

    rules = list(rules)
    if use_cache and cache is None:
        cache = ProofCache()
    out: dict[str, RuleVerdict] = {}
    todo: list[Rule] = []
    total = len(rules)
    done = 0
    from . import shipped_proofs

    for r in rules:
        hit = None
        if use_cache:
            k = _cache_key(r, timeout_ms)
            hit = cache.get(k)
            if hit is None:  # proved when the package was built (keyed by the exact text: never stale)
                hit = shipped_proofs.get(k)
        if hit is not None:
            v = RuleVerdict.from_json(hit)
            v.cached = True
            v.location, v.rule = r.location, r.name
            out[r.name] = v
            done += 1
            if progress:
                progress(done, total, v)
        else:
            todo.append(r)
    new_entries: dict[str, Any] = {}

    def finish(r: Rule, d: dict[str, Any]) -> None:
        nonlocal done
        v = RuleVerdict.from_json(d)
        out[r.name] = v
        if use_cache and all(x.status != UNKNOWN for x in v.results):
            new_entries[_cache_key(r, timeout_ms)] = d
        done += 1
        if progress:
            progress(done, total, v)

    if workers is None:
        import os

        workers = min(2, os.cpu_count() or 1)
    if todo and workers > 1 and len(todo) > 2:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        # fork (not spawn): works from scripts without a __main__ guard and skips re-imports
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
            # longest-looking rules first keeps both workers busy
            order = sorted(todo, key=lambda r: -len(r.egglog))
            futs = {ex.submit(_verify_job, (r, timeout_ms)): r for r in order}
            from concurrent.futures import as_completed

            for f in as_completed(futs):
                finish(futs[f], f.result())
    else:
        for r in todo:
            finish(r, _verify_job((r, timeout_ms)))
    if use_cache and new_entries:
        cache.put_many(new_entries)
    return {r.name: out[r.name] for r in rules}


def usable_rules(rules: Iterable[Rule], verdicts: Mapping[str, RuleVerdict], fast_math: bool) -> list[Rule]:
    """The rules that may fire: every dtype proved; ``fast_math`` rules only when ``fast_math``;
    ``ranges`` and user rulesets always (with ``exact``)."""
    out = []
    for r in rules:
        v = verdicts.get(r.name)
        if v is None or not v.usable:
            continue
        if r.fast_math and not fast_math:
            continue
        out.append(r)
    return out


def require_sound(rule: Rule | str, **kw: Any) -> RuleVerdict:
    """verify_rule, raising VerificationError unless every dtype is proved."""
    v = verify_rule(rule, **kw)
    if not v.usable:
        raise VerificationError(f"{v.location}: rule {v.rule!r}: {v.summary()}"
                                + (f"; counterexample: {v.first(REFUTED).format_counterexample()}"
                                   if v.refuted else ""))
    return v


__all__ = [
    "DEFAULT_TIMEOUT_MS", "PROVED", "PROVED_REDUCED", "REFUTED", "UNKNOWN", "DtypeResult", "RuleError",
    "RuleVerdict", "assignments", "compress_keys", "require_sound", "usable_rules", "verify_rule",
    "verify_rules",
]
