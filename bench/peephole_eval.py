"""Re-evaluate a printed counterexample of a corpus rule with the op table's reference semantics,
independently of the verifier's own check (`optimizer/cex_check.py`): the values are parsed back
from the printed text (`"-0.0 (f32)"`), the rule's guards are evaluated on them (egglog's checked
i64 arithmetic via `optimizer/egglog_i64.py`; a range guard `(LowerBound x)` is evaluated with the
lane value itself, the tightest bound that holds; analyses by their definitions) and both sides are
computed with `OPS[op].reference`. A refutation counts as confirmed only when the guards hold and
the two sides differ structurally (NaN == NaN, +0.0 != -0.0)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from eggpu.ir import ALL_DTYPES, DType
from eggpu.ir.ops import OPS
from eggpu.optimizer.rules_loader import Atom, Rule
from eggpu.optimizer.schema import CONSTRUCTOR_DTYPES, CONSTRUCTORS, bits_float

DTYPES: dict[str, DType] = {d.name: d for d in ALL_DTYPES}
_FAMILY = {"IsInt": lambda d: d.is_int, "IsSigned": lambda d: d.is_int and d.is_signed,
           "IsUnsigned": lambda d: d.is_int and not d.is_signed, "IsFloat": lambda d: d.is_float,
           "IsBool": lambda d: d.is_bool, "IsIntOrBool": lambda d: d.is_int or d.is_bool,
           "IsNum": lambda d: d.is_int or d.is_float}


class Unconfirmed(Exception):
    """The counterexample could not be evaluated or does not refute the rule."""


def _wrap64(n: int) -> int:
    n %= 1 << 64
    return n - (1 << 64) if n >= 1 << 63 else n


def _i64_op(head: str, args: list[int]) -> int:
    """egglog's checked i64 primitives; a failure (overflow, /0, shift out of [0, 64)) raises."""
    from eggpu.optimizer.egglog_i64 import I64Undefined, i64_binary

    if head == "not-i64":
        return ~args[0]
    if head == "log2":  # egglog panics on a non-positive operand
        if args[0] <= 0:
            raise I64Undefined("log2 of a non-positive value")
        return args[0].bit_length() - 1
    return i64_binary(head, *args)


def parse_value(text: str, sort: str = "Term") -> tuple[Any, DType | None]:
    """``"-0.0 (f32)"`` -> (np.float32(-0.0), f32); ``"3 (i64)"`` of an i64 rule variable (``sort``
    ``"i64"``) -> (3, None)."""
    val, _, ty = text.rpartition(" (")
    ty = ty.rstrip(")")
    if sort == "i64":
        return int(val), None
    d = DTYPES[ty]
    if d.is_bool:
        return np.bool_(val in ("true", "True", "1")), d
    if d.is_float:
        return np.asarray(float(val), dtype=np.float64).astype(d.np), d
    return np.asarray(int(val) % (1 << d.bits), dtype=np.uint64).astype(d.np), d


class _Eval:
    def __init__(self, rule: Rule, dtype_env: Mapping[str, DType], values: Mapping[str, tuple[Any, DType | None]]):
        self.rule = rule
        self.dt_env = dict(dtype_env)
        self.terms = {k: v for k, (v, d) in values.items() if d is not None}
        self.ints: dict[str, int] = {k: v for k, (v, d) in values.items() if d is None}

    def dt(self, node: Any) -> DType:
        if isinstance(node, Atom):
            return self.dt_env[node.text]
        return CONSTRUCTOR_DTYPES[node.head]

    def i64(self, node: Any) -> int:
        if isinstance(node, Atom):
            try:
                return int(node.text)
            except ValueError:
                if node.text not in self.ints:
                    raise Unconfirmed(f"i64 variable {node.text} has no value") from None
                return self.ints[node.text]
        if node.head in ("LowerBound", "UpperBound"):
            v = self.term(node.items[1])
            return int(v)
        return _i64_op(node.head, [self.i64(a) for a in node.items[1:]])

    def term(self, node: Any) -> Any:
        if isinstance(node, Atom):
            if node.text not in self.terms:
                raise Unconfirmed(f"term variable {node.text} has no value")
            return self.terms[node.text]
        info = CONSTRUCTORS[node.head]
        dt_nodes, attrs_n, ops = info.split(node.items[1:])
        dts = [self.dt(a) for a in dt_nodes]
        t = dts[0]
        if info.op == "const":
            v = self.i64(attrs_n[0])
            if node.head == "ConstF":
                return np.asarray(bits_float(v % (1 << 64)), dtype=np.float64).astype(t.np)
            if t.is_bool:
                return np.bool_(v != 0)
            return np.asarray(v % (1 << t.bits), dtype=np.uint64).astype(t.np)
        if info.op in ("splat", "broadcast", "expand_dims", "reshape"):
            return self.term(ops[0])
        if info.op is None or info.op not in OPS:
            raise Unconfirmed(f"{node.head} is not evaluated lane-wise")
        attrs: dict[str, Any] = {}
        if info.op in ("cast", "bitcast"):
            attrs["dtype"] = self.dt(attrs_n[0])
        vals = [np.asarray(self.term(o)) for o in ops]
        with np.errstate(all="ignore"):
            out = OPS[info.op].reference(attrs, *vals, dtype=t)
        return np.asarray(out).reshape(())[()]

    def guard(self, g: Any) -> bool:
        head = g.head
        if head in _FAMILY:
            return _FAMILY[head](self.dt(g.items[1]))
        if head == "Width":
            d = self.dt(g.items[1])
            w = g.items[2]
            bits = 1 if d.is_bool else d.bits
            if isinstance(w, Atom) and not w.text.lstrip("-").isdigit() and w.text not in self.ints:
                self.ints[w.text] = bits
                return True
            return self.i64(w) == bits
        if head in ("NotNan", "Finite", "NonNeg", "Positive", "Divisible"):
            v = self.term(g.items[1])
            d = np.asarray(v).dtype
            if head == "Divisible":
                k = self.i64(g.items[2])
                return k > 0 and k & (k - 1) == 0 and int(v) % k == 0
            if d.kind != "f":
                return {"NotNan": True, "Finite": True, "NonNeg": int(v) >= 0, "Positive": int(v) > 0}[head]
            f = float(v)
            return {"NotNan": not math.isnan(f), "Finite": math.isfinite(f), "NonNeg": f >= 0, "Positive": f > 0}[head]
        if head == "=":
            a, b = g.items[1], g.items[2]
            if isinstance(a, Atom) and not a.text.lstrip("-").isdigit() and a.text not in self.ints:
                try:
                    self.ints[a.text] = self.i64(b)
                except Unconfirmed:
                    raise
                except Exception:  # egglog's checked arithmetic failed: the rule does not match
                    return False
                return True
            try:
                return self.i64(a) == self.i64(b)
            except Unconfirmed:
                raise
            except Exception:
                return False
        cmp = {"<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__, "!=": int.__ne__}
        if head in cmp:
            try:
                return cmp[head](self.i64(g.items[1]), self.i64(g.items[2]))
            except Unconfirmed:
                raise
            except Exception:
                return False
        raise Unconfirmed(f"guard {head} not evaluated")


def same(a: Any, b: Any) -> bool:
    """Structural equality: NaN == NaN, +0.0 != -0.0, bool/int by value."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return fa == fb and math.copysign(1, fa) == math.copysign(1, fb)
    return int(a) == int(b)


def confirm(rule: Rule, dtype_env: Mapping[str, DType], cex: Mapping[str, str]) -> str:
    """Re-evaluate a counterexample; returns ``"lhs = ..., rhs = ..."`` or raises :class:`Unconfirmed`."""
    if rule.lhs is None or rule.rhs is None:
        raise Unconfirmed("not a rewrite")
    ev = _Eval(rule, dtype_env, {k: parse_value(v, rule.var_sorts.get(k, "Term")) for k, v in cex.items()})
    pending = list(rule.guards)
    for _ in range(len(pending) + 1):  # guards in dependency order: retry those naming unbound i64s
        left = []
        for g in pending:
            try:
                if not ev.guard(g):
                    raise Unconfirmed(f"guard {g} does not hold on the counterexample")
            except Unconfirmed as e:
                if "has no value" not in str(e):
                    raise
                left.append(g)
        if not left or len(left) == len(pending):
            pending = left
            break
        pending = left
    if pending:
        raise Unconfirmed(f"guards not evaluated: {pending}")
    lhs, rhs = ev.term(rule.lhs), ev.term(rule.rhs)
    if same(lhs, rhs):
        raise Unconfirmed(f"both sides are {_show(lhs)}")
    return f"lhs = {_show(lhs)}, rhs = {_show(rhs)}"


def _show(v: Any) -> str:
    a = np.asarray(v)
    if a.dtype.kind == "f":
        return repr(float(a))
    if a.dtype.kind == "b":
        return "true" if bool(a) else "false"
    return str(int(a))
