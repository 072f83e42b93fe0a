"""The z3 encoding of one rule at one dtype assignment (:class:`_Instance`: type inference, lane
terms, i64 expressions, guards) and the query built from it (:func:`_build`: a formula that is
unsat exactly when the rule is sound at that assignment; see :mod:`.rule_verifier` for the
obligation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from eggpu.ir import OPS, DType
from eggpu.ir.dtypes import BY_NAME, bool_, i32

from . import analyses, z3ops
from .analyses import ANALYSES
from .rule_analysis import (
    Ptr,
    Ty,
    _canonical_sym,
    _const_names,
    _dt_vars,
    _exact_in,
    _family_mismatch,
    _family_ok,
    _IllTyped,
    _Infeasible,
    _int,
    _lane_paths,
    _partial_inside,
    _Unsupported,
    _value_of,
)
from .rules_loader import RANGE_FUNCTIONS, Atom, Rule, SList, Sx
from .schema import CONSTRUCTOR_DTYPES, CONSTRUCTORS, FAMILY_RELATIONS, bits_float, canonical_int

_UB_OPS = frozenset({"div", "rem"})


# ------------------------------------------------------------------ one instance



#: ops a rule cannot mention, with the reason (the encoding keys a term's result dtype on its
#: dtype arguments; these take theirs from another kind of argument)
_NOT_IN_RULES = {
    "libdevice": "a libdevice call's dtypes come from its symbol's signature, not the rule's dtype "
                 "arguments",
    "ptr_to_int": "its operand is a pointer, not data of the rule's dtype",
    "int_to_ptr": "its result is a pointer, not data of the rule's dtype",
}

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
        dt_nodes, attrs, operands = info.split(node.items[1:])
        dts = [self.dt(a) for a in dt_nodes]
        t = dts[0]
        op = info.op
        if op is None:  # Opaque / OpaquePtr
            res: Ty | None = Ptr(t) if node.head == "OpaquePtr" else t
        elif op in ("const", "program_id", "num_programs", "arange"):
            res = self._leaf_type(node.head, op, t, bad)
        else:
            want, res = self._signature(op, t, dts, attrs, len(operands), bad)
            got = [self._infer_operand(o, w, t, expected, rhs) for o, w in zip(operands, want)]
            if res is None:
                res = got[-1]
        if expected is not None and res != expected:
            raise bad(f"{node} has type {res}, expected {expected}")
        return res

    @staticmethod
    def _leaf_type(head: str, op: str, t: DType, bad: type[Exception]) -> Ty:
        """The type of a constant or a launch-index leaf of dtype ``t``."""
        if op == "const":
            if head == "Const" and t.is_float:
                raise bad(f"Const of float dtype {t} (use ConstF)")
            if head == "ConstF" and not t.is_float:
                raise bad(f"ConstF of non-float dtype {t}")
        elif t != i32:
            raise bad(f"{head} is i32, not {t}")
        return t

    def _signature(self, op: str, t: DType, dts: list[DType], attrs: Sequence[Sx], n_operands: int,
                   bad: type[Exception]) -> tuple[list[Ty | None], Ty | None]:
        """(the operand types — None: data of dtype t or pointers to t —, the result type — None:
        the last operand's) of ``op`` at dtype ``t``; raises ``bad`` when ``op`` refuses ``t``."""
        if op == "gather":  # a block op over two differently typed blocks: not modelled for rules
            raise _Unsupported("rules over gather are not supported (its index block has its own dtype)")
        if op in _NOT_IN_RULES:
            raise _Unsupported(f"rules over {op} are not supported ({_NOT_IN_RULES[op]})")
        if op == "addptr":
            if not dts[1].is_int:
                raise bad(f"addptr offset dtype {dts[1]} is not an integer")
            return [Ptr(t), dts[1]], Ptr(t)
        if op == "where":
            return [bool_, None, None], None
        od = OPS[op]
        if not _family_ok(od.family, t):
            raise bad(_family_mismatch(op, od.family, t), kind="op")
        target = self.dt(attrs[0]) if op in ("cast", "bitcast") else None
        if op == "bitcast" and target.bits != t.bits:
            raise bad(f"bitcast {t} -> {target} changes the width")
        if op == "dot":
            want: list[Ty | None] = [t, t, i32 if t.is_int else BY_NAME["f32"]][:n_operands]
        elif op in z3ops.LANE_IDENTITY_OPS or op == "trans":
            want = [None]
        else:
            want = [t] * n_operands
        if op in z3ops.LANE_IDENTITY_OPS:
            return want, None
        return want, z3ops.result_dtype(op, t, {"dtype": target} if target is not None else {})

    def _infer_operand(self, o: Sx, w: Ty | None, t: DType, expected: Ty | None, rhs: bool) -> Ty:
        if w is None:  # shape ops / where branches: data of dtype t, or pointers to t
            w = expected if (isinstance(expected, Ptr) and expected.pointee == t) else t
            if isinstance(o, SList) and CONSTRUCTORS[o.head].op == "addptr":
                w = Ptr(t)
        return self.infer(o, w, rhs)

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

    def analysis(self, g: Sx) -> z3.BoolRef:
        """The meaning of ``(Divisible x k)``, ``(NotNan x)``, ... (:mod:`.analyses`) on ``x``'s lane,
        with the egglog-level definedness of ``k``."""
        h, term = g.head, g.items[1]
        ty = self.types.get(term.text) if isinstance(term, Atom) else self.infer(term, None, False)
        if ty is None or isinstance(ty, Ptr):
            raise _Unsupported(f"{h} of a {ty or 'untyped'} term")
        if ty.is_float:
            if h == "Divisible":
                raise _Unsupported("Divisible of a float term")
            value, _, _ = self.term(term)
            return analyses.float_predicate(h, value, self.mode == z3ops.REAL)
        lane = self.lane_int(term)
        if h == "Divisible":
            k, dk = self.i64(g.items[2])
            return z3.And(dk, analyses.int_predicate(h, lane, k))
        return analyses.int_predicate(h, lane)

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
        dt_nodes, attr_nodes, operands = info.split(node.items[1:])
        dts = [self.dt(a) for a in dt_nodes]
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
            if not canonical_int(lit, t):
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
        elif op == "dot":
            attrs["precision"] = str(attr_nodes[0]).strip('"')  # a literal, or a rule variable's name
        else:
            attrs["axis"] = str(attr_nodes[0])
        return z3ops.encode(op, t, attrs, stands + extra, self.mode).value

    # -------------------------------------------------------------- guards

    def guard(self, g: Sx) -> None:
        """Add one guard / fact as an assumption (relations were applied to the assignment)."""
        h = g.head
        args = g.items[1:]
        if h in FAMILY_RELATIONS:
            return
        if h in ANALYSES:
            self.assume.append(self.analysis(g))
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
            elif a.head in ANALYSES:
                _, u, p = inst.term(a.items[1])
                inst.assume += [u, p]
                obligations.append(inst.analysis(a))
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
    """Type the variables of guard ``g``: a constructor term, or an ``(= a b)`` over Terms.

    Range functions and comparisons add nothing: their arguments are typed by the patterns.
    """
    if not isinstance(g, SList):
        return
    if g.head in CONSTRUCTORS:
        inst.infer(g, None, False)
    elif g.head == "=":
        a, b = g.items[1:]
        _infer_term_equation(inst, a, b)


def _infer_term_equation(inst: _Instance, a: Sx, b: Sx) -> None:
    """Type an ``(= a b)`` guard when either side is a Term: a compound side gives its type to
    the other (``b`` first, as written); two variables share whichever type one already has."""
    if inst._sort_of(a) != "Term" and inst._sort_of(b) != "Term":
        return
    for x, y in ((a, b), (b, a)):
        if isinstance(y, SList):
            inst.infer(x, inst.infer(y, None, False), False)
            return
    ta = inst.types.get(a.text) or inst.types.get(b.text)
    if ta is not None:
        inst.infer(a, ta, False)
        inst.infer(b, ta, False)
