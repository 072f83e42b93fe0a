"""Translation validation without z3, for the pairs that need no solver.

Most compiles are validated without a single solver call: every obligation of
:func:`.validate.validate` is closed by identical terms or by a proved rule's instance whose
guards the validation re-establishes from its own bounds (the library kernels: 0 solver calls).
Building those z3 terms still costs a cold compile the z3 import and eggpu's encodings (~40 ms).
:func:`validate_structurally` decides such pairs on z3-free terms (:mod:`.term_bounds`) and
returns ``None`` as soon as one obligation is not closed that way; the caller then runs
:func:`.validate.validate` from the start, so z3 is imported exactly when a solver may be needed.

What it does is the solver path's, step for step, on other terms (exact mode only; ``fast_math``
always goes to the solver path):

* the skeletons must correspond (:func:`.validate_skeleton.check_skeleton`; a mismatch is the
  same ``invalid`` verdict, with the same message);
* lane values are evaluated as :class:`.validate._Eval` does: the same shared names for opaque
  values, the k-th load's value shared by both sides, the original's reductions named first and
  an optimized reduction identified with one whose operands are the same terms, commutative
  operands in a canonical order, shape ops as index maps (a ``reshape`` that changes the shape
  goes to the solver path);
* an obligation is closed when both sides are the same term and the optimized one is defined
  wherever the original is; else by congruence down to differing subterms each of which is an
  instance of a proved rule (:mod:`.term_lemmas`), its guards shown by the intervals the facts
  give (launch facts, loop induction ranges, lane ranges, the mask: :class:`.term_bounds.Bounds`);
* a dropped mask, an optimized reduction matching no original one, or any obligation not closed
  so: ``None``.

Sound on its own: identical terms have identical values under the IR's (total, deterministic)
semantics, and a lemma instance is an instance of a proved equality whose premises hold. Every
step is one the solver path also takes without a solver, so a pair decided here gets the verdict
the solver path gives it (``tests/optimizer/test_validate_terms.py`` compares the two on random
pairs and on every library kernel).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from eggpu.ir import BlockType, Function, Operation, Value
from eggpu.ir.dtypes import DType, bool_, i32, round_float
from eggpu.ir.ops import Trait

from .analyses import loop_iv_facts
from .proof_versions import units
from .rules_loader import Rule
from .term_bounds import TRUE, Bounds, Terms
from .term_canon import Canon
from .term_lemmas import Matcher, TermLemma, commutative_ops, term_lemmas
from .validate_result import Validation
from .validate_skeleton import BLOCK_OPS as _BLOCK_OPS
from .validate_skeleton import LaneDispatch, Mismatch, check_skeleton, mask_and_other, source_index
from .validate_skeleton import obligations as _obligations


class NeedsSolver(Exception):
    """An obligation this module does not close (the solver path decides the pair)."""


def validate_structurally(before: Function, after: Function, rules: Iterable[Rule] = (),
                          dtypes: Iterable[DType] | None = None, *, total_seconds: float = 10.0,
                          fast_math: bool = False) -> Validation | None:
    """The verdict of :func:`.validate.validate` on ``(before, after)`` when it needs no solver,
    else None (see the module docstring). ``rules``: the proved rules that fired (their lemmas,
    at the ``dtypes`` of the kernel); ``total_seconds``: the budget the solver path would have
    (reported in units, never spent here)."""
    if fast_math:
        return None
    t0 = time.perf_counter()
    try:
        skeleton = check_skeleton(before, after)
    except Mismatch as e:
        return Validation("invalid", str(e), seconds=time.perf_counter() - t0)
    try:
        st = _State(before, list(rules), dtypes)
        checks = st.run(before, skeleton)
    except NeedsSolver:
        return None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        return None  # IR this layer does not model (a float induction variable...): the solver path decides
    return Validation("valid", "", checks, 0, time.perf_counter() - t0, budget_units=units("z3", total_seconds * 1000),
                      lemma_hits=st.lemma_hits, guarded_lemma_hits=st.guarded_hits)


class _State:
    """One validation: the terms of both sides, the facts, the lemmas and the counters."""

    def __init__(self, before: Function, rules: list[Rule], dtypes: Iterable[DType] | None):
        self.terms = Terms()
        self.commutative = commutative_ops()
        self.matcher = Matcher(self.terms, self.commutative)
        self.canon = Canon(self.terms, self.commutative)
        self._rules, self._dtypes = rules, dtypes
        self._lemmas: list[TermLemma] | None = None
        self.facts = Bounds(self.terms)
        self.block_names: dict[tuple[str, int], str] = {}
        self.known_blocks: list[tuple[tuple, list[tuple[int, int]], str]] = []
        self.lemma_hits = 0
        self.guarded_hits = 0
        self._memo: dict[tuple[int, int, int], bool] = {}
        self._contexts: list[Bounds] = []

    @property
    def lemmas(self) -> list[TermLemma]:
        if self._lemmas is None:
            self._lemmas = term_lemmas(self._rules, self._dtypes)
        return self._lemmas

    # ------------------------------------------------------------------ the obligations

    def run(self, before: Function, skeleton: tuple) -> int:
        nb, kb, ops_b, na, ka, ops_a = skeleton
        self._launch_facts(before, nb)
        eb = _Side(self, "before", nb, kb)
        ea = _Side(self, "after", na, ka)
        ea.partner, ea.partner_ops = eb, [o for o, _ in ops_b]
        for op in before.walk():  # the original's reductions are named first (as the solver path)
            if op.op in _BLOCK_OPS:
                eb.at(op.results[0], self.lane_vars("i", op.results[0].type.shape))
        checks = 0
        for k, ((ob, _), (oa, _)) in enumerate(zip(ops_b, ops_a)):
            for j, _role, mask_j, on in _obligations(ob, k):
                if j >= len(oa.operands):
                    raise NeedsSolver("a dropped mask is shown all-true by a solver call")
                idx = self.lane_vars("i", ob.operands[j].type.shape)
                xb, xa = eb.at(ob.operands[j], idx), ea.at(oa.operands[j], idx)
                checks += 1
                if _identical(xb, xa):
                    continue
                ctx = self._context(eb, ob, mask_j, on, idx, ob.operands[j].type.shape)
                if not self._shown_equal(xb, xa, ctx):
                    raise NeedsSolver("an obligation is not closed without a solver")
        return checks

    def _shown_equal(self, xb: tuple[int, int], xa: tuple[int, int], ctx: Bounds) -> bool:
        """Whether ``xa`` refines ``xb`` on the lanes of ``ctx``, as :func:`.validate._shown_equal`
        tries it before any solver call: by congruence and lemmas on the terms as they are; as
        the same canonical forms (:mod:`.term_canon`); by congruence and lemmas on those."""
        if self._refines(xb, xa, ctx):
            return True
        cb = (self.canon.of(xb[0]), self.canon.of(xb[1]))
        ca = (self.canon.of(xa[0]), self.canon.of(xa[1]))
        return _identical(cb, ca) or self._refines(cb, ca, ctx)

    def _refines(self, xb: tuple[int, int], xa: tuple[int, int], ctx: Bounds) -> bool:
        return (xa[1] == TRUE or xb[1] == xa[1]) and self.equal(xb[0], xa[0], ctx)

    def lane_vars(self, prefix: str, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(self.terms.mk(("idx", f"{prefix}_{d}"), (), i32) for d in range(len(shape)))

    def _context(self, eb: _Side, ob: Operation, mask_j: int | None, on: bool, idx: tuple[int, ...],
                 shape: Sequence[int]) -> Bounds:
        """The facts and what holds on the obligation's lanes: in range, the mask on (or off)."""
        ctx = self.facts.copy()
        self._contexts.append(ctx)  # kept alive: equal()'s memo is keyed by the context's id
        for i, s in zip(idx, shape):
            ctx.below(i, s - 1)
        if mask_j is not None:
            value, defined = eb.at(ob.operands[mask_j], idx)
            if defined != TRUE:
                ctx.learn(defined)
            if on:
                ctx.learn(value)
            else:
                ctx.false.add(value)
        return ctx

    def _launch_facts(self, fn: Function, names: dict[int, str]) -> None:
        """:func:`.validate._launch_facts` as bounds: loop induction ranges (and ``iv < hi`` for a
        signed induction variable), the grid size under ``offsets_i32``. (A ``divK`` parameter's
        divisibility gives no interval: it is left out, which only weakens the bounds.)"""
        f = self.facts
        for lf in loop_iv_facts(fn):
            t = lf.iv.type
            x = self.terms.mk(("sym", names[id(lf.iv)], t.dtype.name), (), t.dtype)
            f.narrow(x, lf.lo, lf.hi_max)
            if lf.hi is not None and t.dtype.is_signed and lf.hi.type.dtype == t.dtype:
                hi = self.terms.mk(("sym", names[id(lf.hi)], t.dtype.name), (), t.dtype)
                f.learn(self.terms.op("lt", t.dtype.name, (), (x, hi), bool_))
        if fn.facts.block:
            top = (1 << 31) // fn.facts.block
            for a in range(3):
                f.below(self.terms.mk(("sym", f"num_programs_{a}", "i32"), (), i32), top)

    # ------------------------------------------------------------------ equality

    def equal(self, a: int, b: int, ctx: Bounds) -> bool:
        """Whether ``a == b`` on every lane of ``ctx``: the same term, or the same head with equal
        operands (commutative ones in either order), or a lemma instance
        (:meth:`.validate_solver._Checker.equal` without its solver calls)."""
        if a == b:
            return True
        key = (a, b, id(ctx))
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        (ha, ka), (hb, kb) = self.terms.nodes[a], self.terms.nodes[b]
        res = False
        if ha == hb and len(ka) == len(kb) and ka:
            orders = [kb]
            if ha[0] == "op" and ha[1] in self.commutative and len(kb) == 2:
                orders.append((kb[1], kb[0]))
            res = any(all(self.equal(x, y, ctx) for x, y in zip(ka, o)) for o in orders)
        if not res:
            res = self._by_lemma(a, b, ctx)
        self._memo[key] = res
        return res

    def _by_lemma(self, a: int, b: int, ctx: Bounds) -> bool:
        dt = self.terms.dtypes[a]
        if dt is None or dt != self.terms.dtypes[b]:
            return False
        for lm in self.lemmas:
            if any(self._instance(lm, p, q, a, b, ctx)
                   for p, q in ((lm.rule.lhs, lm.rule.rhs), (lm.rule.rhs, lm.rule.lhs))):
                self.lemma_hits += 1
                self.guarded_hits += lm.guarded
                return True
        return False

    def _instance(self, lm: TermLemma, p: Any, q: Any, a: int, b: int, ctx: Bounds) -> bool:
        """Whether ``a`` matches side ``p`` and ``b`` side ``q`` with the same bindings, the guards
        holding there."""
        for ba in self.matcher.matches(lm, p, a, None, {}):
            if any(self.matcher.guards_hold(lm, found, ctx) for found in self.matcher.matches(lm, q, b, None, dict(ba))):
                return True
        return False


def _identical(xb: tuple[int, int], xa: tuple[int, int]) -> bool:
    """The same value, and ``xa`` defined wherever ``xb`` is (the same condition, or true)."""
    return xb[0] == xa[0] and (xb[1] == xa[1] or xa[1] == TRUE)


class _Side(LaneDispatch):
    """Lane values ``(value, defined)`` of one side's IR values at symbolic indices
    (:class:`.validate._Eval` on z3-free terms)."""

    def __init__(self, st: _State, side: str, leaf_names: dict[int, str], op_keys: dict[int, int]):
        self.st, self.terms = st, st.terms
        self.side = side
        self.leaf_names = leaf_names
        self.op_keys = op_keys
        self.memo: dict[tuple[int, tuple[int, ...]], tuple[int, int]] = {}
        self.partner: _Side | None = None
        self.partner_ops: list[Operation] = []

    def at(self, v: Value, idx: Sequence[int]) -> tuple[int, int]:
        shape = v.type.shape
        idx = tuple(self.terms.index(0) if s == 1 else i for i, s in zip(idx, shape))
        key = (id(v), idx)
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self._at(v, idx)
        return hit

    def _symbol(self, name: str, t: BlockType, idx: Sequence[int]) -> int:
        dt = None if t.is_pointer else t.dtype
        return self.terms.mk(("sym", name, "ptr" if dt is None else dt.name), tuple(idx), dt)

    def _at(self, v: Value, idx: tuple[int, ...]) -> tuple[int, int]:
        owner = v.owner
        if isinstance(owner, Operation) and (owner.op == "load" or owner.op.startswith("atomic_")):
            return self._memory_result(owner, v, idx)
        name = self.leaf_names.get(id(v))
        if name is not None:
            return self._symbol(name, v.type, idx), TRUE
        assert isinstance(owner, Operation), v
        return self._pure(owner, v, idx)

    def _memory_result(self, op: Operation, v: Value, idx: tuple[int, ...]) -> tuple[int, int]:
        """The k-th load/atomic result (:meth:`.validate._Eval._memory_result`)."""
        k = self.op_keys[id(op)]
        if self.partner is not None:
            return self.partner.at(self.partner_ops[k].results[v.index], idx)
        ptr = self.at(op.operands[0], idx)
        mask, other = (None if i is None else self.at(op.operands[i], idx) for i in mask_and_other(op))
        on = (self._symbol(f"mem{k}", v.type, idx), ptr[1])
        if mask is None:
            return on
        if other is None:
            other = (self._symbol(f"mem{k}_off", v.type, idx), TRUE)
        dt = None if v.type.is_pointer else v.type.dtype
        value = self.terms.mk(("ite",), (mask[0], on[0], other[0]), dt)
        defined = self.terms.mk(("and",), (mask[1], self.terms.mk(("ite",), (mask[0], on[1], other[1]), None)), None)
        return value, defined

    def _pure(self, op: Operation, v: Value, idx: tuple[int, ...]) -> tuple[int, int]:
        name, attrs, terms = op.op, op.attrs, self.terms
        if name == "const":
            value, dt = attrs["value"], attrs["dtype"]
            if dt.is_float:
                value = round_float(value, dt)
            return terms.const(value, dt), TRUE
        if name in ("program_id", "num_programs"):
            return self._leaf(name, attrs["axis"]), TRUE
        if name == "arange":
            return terms.op("add", "i32", (), (terms.index(attrs["start"]), idx[0]), i32), TRUE
        got = self.structural(op, v, idx)
        if got is not None:
            return got
        args = [self.at(o, idx) for o in op.operands]
        if len(args) == 2 and op.opdef.has(Trait.COMMUTATIVE):
            args.sort(key=lambda a: a[0])
        defined = terms.conj(a[1] for a in args)
        vals = tuple(a[0] for a in args)
        result = None if v.type.is_pointer else v.type.dtype
        t0 = op.operands[0].type
        if (t0.is_pointer and name in ("eq", "ne", "where")) or (name == "where" and op.operands[1].type.is_pointer):
            return terms.op(name, "ptr", (), vals, result), defined
        dt = op.operands[1].type.dtype if name == "where" else t0.dtype
        shift = terms.unsigned_value(vals[1]) if name == "shl" and not dt.is_bool else None
        if shift is not None and shift < dt.bits:
            # x << c is x * 2**c (mod 2**bits), as z3ops encodes it: mul(x, 8) -> shl(x, 3) is
            # then the very same term
            kids = tuple(sorted((vals[0], terms.const(1 << shift, dt))))
            return terms.op("mul", dt.name, (), kids, result), defined
        a2 = dict(attrs)
        if name == "addptr":
            a2["offset_dtype"] = op.operands[1].type.dtype
        return terms.op(name, dt.name, _freeze(a2), vals, result), defined

    def _leaf(self, name: str, axis: int) -> int:
        """``program_id``/``num_programs`` of ``axis`` with their range facts (``0 <= pid < n``,
        ``n >= 1``: :func:`.z3ops.leaf_facts`)."""
        terms, facts = self.terms, self.st.facts
        t = terms.mk(("sym", f"{name}_{axis}", "i32"), (), i32)
        n = terms.mk(("sym", f"num_programs_{axis}", "i32"), (), i32)
        facts.narrow(n, 1, (1 << 31) - 1)
        if name == "program_id":
            facts.narrow(t, 0, (1 << 31) - 1)
            facts.learn(terms.op("lt", "i32", (), (t, n), bool_))
        return t

    def _source_index(self, op: Operation, idx: tuple[int, ...]) -> tuple[int, ...]:
        src = source_index(op, idx, self.terms.index(0))
        if src is None:
            raise NeedsSolver("a reshape's index map is simplified by z3")
        return src

    def _block_op(self, op: Operation, v: Value, idx: tuple[int, ...]) -> tuple[int, int]:
        """A reduction/dot as an opaque function of its operand blocks (:meth:`.validate._Eval._block_op`):
        the original's get fresh names unless the same terms were reduced before; an optimized one
        must reduce the same terms as an original one of the same kind."""
        st = self.st
        key_id = (self.side, id(op))
        name = st.block_names.get(key_id)
        if name is None:
            operands = []
            for j, o in enumerate(op.operands):
                operands.append(self.at(o, st.lane_vars(f"blk_{j}", o.type.shape)))
            key = (op.op, tuple(sorted(op.attrs.items())), tuple(o.type for o in op.operands))
            for k, ops, known in st.known_blocks:
                if k == key and ops == operands:
                    name = known
                    break
            else:
                if self.side == "after":
                    raise NeedsSolver("an optimized reduction reduces other terms")
                name = f"blk{len(st.known_blocks)}"
                st.known_blocks.append((key, operands, name))
            st.block_names[key_id] = name
        dt = None if v.type.is_pointer else v.type.dtype
        return (self.terms.mk(("sym", name, "ptr" if dt is None else dt.name), idx, dt),
                self.terms.mk(("sym", f"{name}_def", "bool"), (), bool_))


def _freeze(attrs: dict[str, Any]) -> tuple:
    """Attributes as a hashable key (lists as tuples)."""
    def f(x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return tuple(f(y) for y in x)
        if isinstance(x, dict):
            return tuple(sorted((k, f(y)) for k, y in x.items()))
        return x

    return tuple(sorted((k, f(v)) for k, v in attrs.items()))


__all__ = ["NeedsSolver", "validate_structurally"]
