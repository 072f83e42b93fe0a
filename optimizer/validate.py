"""Translation validation: z3 checks that an optimized function behaves like the original.

The optimizer keeps every effect (load, store, atomic), control op (``for``, ``if``) and
``yield`` in place and only rewrites pure dataflow, so the two functions must have the same
*skeleton*: the same non-pure ops in the same order, with the same attributes and types, in the
same nesting. :func:`validate` checks the skeleton, then proves with z3 that, lane by lane,

* every ``store``/``atomic`` has the same mask, and where the original's mask is on, the same
  address and the same value (compare/value for ``atomic_cas``);
* every ``load`` has the same mask, the same address where the mask is on and the same
  ``other`` where it is off;
* a mask the optimized op no longer has (the decoder drops masks extracted as all-true, and a
  load's ``other`` with them) must be defined and true on every lane of the original;
* every ``for`` gets the same bounds, step and initial values, every ``if`` the same condition
  and every ``yield`` the same values.

Each check is an equality under the IR's total semantics (integer division by zero is 0,
out-of-range shifts give 0 or the sign fill: nothing is undefined, see :mod:`.z3ops`); floats are
compared by structure (NaN equals NaN, -0.0 differs from +0.0). Only with ``fast_math`` (real
arithmetic) is a check a refinement: where the original's value is defined (``x / 0``, ``log``
of a non-positive value are not) the optimized one must be defined and equal. Lanes are modelled with symbolic indices
(``BitVec(32)`` per dimension, constrained to the shape), so shape ops map indices
exactly (``broadcast``, ``expand_dims``, ``reshape`` by row-major linearization, ``trans`` by the
permutation). Values the checker does not look into are shared uninterpreted symbols:

* parameters, block arguments and results of ``for``/``if`` (equal by induction once the
  operands and yields above are equal);
* the k-th load's value is a fresh per-lane value ``mem{k}(lane)`` where its mask is on and
  ``other`` (or another fresh value) where it is off; the optimized program's k-th load reuses
  the original's term. That is sound because the checks above prove, in program order, the same
  mask, address and ``other`` for every load (so it reads the same memory, all earlier effects
  being equal), and a load's operands never depend on its own result. Atomics likewise;
* ``program_id``/``num_programs`` are shared symbols with their range facts;
* reductions and ``dot`` are uninterpreted functions of their operand *blocks*: an optimized
  reduction is identified with an original one of the same kind when z3 proves their operands
  equal on every lane (operands shown structurally equal are matched without a query);
* transcendental functions are uninterpreted per dtype (see :mod:`eggpu.optimizer.z3ops`).

With ``fast_math=True`` floats are compared as real numbers (the semantics ``fast_math`` rules
are proved in: finite values, exact arithmetic, exp/log/sqrt axioms); ``Validation.mode`` says
which semantics a verdict is about.

How checks are proved, cheapest first: identical z3 terms (both programs are encoded into one
hash-consed z3 context; commutative operands are put in a canonical order, and both sides of
every check are brought to canonical form modulo associativity and commutativity of the integer
``+ * ^ & |`` chains, constants folded — :mod:`.validate_canon`, exact under the total
semantics); then a structural
diff that descends through equal operators and proves only the differing subterms, each by a
small query (first with the subterms common to both sides abstracted into fresh variables —
cached by text across calls — then as is); only then the whole obligation as one query.

Budgets are deterministic (:mod:`.rule_budget`): every solver check is bounded by z3 resource
units (``rlimit``), ``timeout_ms`` idle-machine milliseconds per check and ``total_seconds`` for
the whole validation, converted per strategy (``z3``, ``z3-fp``, ``z3-real``) with
:data:`~.rule_budget.UNITS_PER_MS`. Every check runs in a fresh z3 context (and the diff's
simplification in one of the validation's own), so the same pair of functions gets the same
verdict and the same unit count in every fresh process, however loaded the machine. The wall clock only stops a runaway solver (``WALL_FACTOR`` times the
budget); a verdict it caused says so (``Validation.wall_capped``).

Verdicts: ``valid`` (every check proved), ``invalid`` (z3 found a lane where the programs
differ; ``detail`` names the op, operand and lane values), ``unknown`` (a check ran out of its
resource units — ``detail`` gives the count — or a difference involves a reduction/dot that could
not be matched, where the abstraction is too coarse to tell).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import z3

from eggpu.ir import BlockType, Function, Operation, Value
from eggpu.ir.dtypes import DType, i32, round_float
from eggpu.ir.ops import Trait

from . import z3ops
from .analyses import loop_iv_facts
from .rule_budget import SessionModel
from .validate_skeleton import BLOCK_OPS as _BLOCK_OPS
from .validate_skeleton import LaneDispatch, check_skeleton, mask_and_other, source_index
from .validate_skeleton import Mismatch as _Mismatch
from .validate_skeleton import describe as _describe
from .validate_skeleton import obligations as _obligations
from .validate_skeleton import skeleton as _skeleton
from .validate_solver import Validation, _Checker, abstract_fp_rem
from .z3ops import Enc

TRUE = z3.BoolVal(True)


def _sort(t: BlockType, mode: str = z3ops.EXACT) -> z3.SortRef:
    return z3ops.sort_of(None if t.is_pointer else t.dtype, mode)


def _idx_key(idx: Sequence[z3.ExprRef]) -> tuple[int, ...]:
    return tuple(e.get_id() for e in idx)


def _bv(n: int) -> z3.BitVecRef:
    return z3.BitVecVal(n, 32)


def lane_vars(prefix: str, shape: Sequence[int]) -> tuple[list[z3.BitVecRef], z3.BoolRef]:
    """Fresh index variables for ``shape`` and the constraint that they are in range."""
    vs = [z3.BitVec(f"{prefix}_{d}", 32) for d in range(len(shape))]
    rng = z3.And([z3.ULT(v, _bv(s)) for v, s in zip(vs, shape)]) if vs else TRUE
    return vs, rng


class _BlockOps:
    """Identities of reductions/dots shared by both sides (see module docstring)."""

    def __init__(self, checker: _Checker):
        self.checker = checker
        self.known: list[tuple[tuple, list[Enc], str]] = []  # (key, operand lane values, uf name)
        self.unmatched: set[str] = set()
        self.count = 0

    def _same(self, a: Enc, b: Enc) -> bool:
        """The same terms, as they are or in canonical form (:mod:`.validate_canon`)."""
        if a.value.eq(b.value) and a.defined.eq(b.defined):
            return True
        ca, cb = self.checker.canonical(a), self.checker.canonical(b)
        return ca.value.eq(cb.value) and ca.defined.eq(cb.defined)

    def identify(self, key: tuple, operands: list[Enc], side: str, ranges: z3.BoolRef) -> str:
        """The uninterpreted function standing for this reduction/dot: one already known whose
        operands are equal on every lane, else a fresh one."""
        for k, ops, name in self.known:
            if k != key:
                continue
            if all(self._same(a, b) for a, b in zip(ops, operands)):
                return name
        if side == "after":
            canon = self.checker.canonical
            for k, ops, name in self.known:
                if k != key:
                    continue
                if all(self.checker.lanes_equal(canon(b), canon(a), ranges) for b, a in zip(ops, operands)):
                    return name
        name = f"blk{self.count}"
        self.count += 1
        self.known.append((key, operands, name))
        if side == "after":
            self.unmatched.add(name)
        return name


class _Eval(LaneDispatch):
    """Lane values of one side's IR values at symbolic indices."""

    def __init__(self, checker: _Checker, side: str, leaf_names: dict[int, str], op_keys: dict[int, int]):
        self.ck = checker
        self.side = side
        self.leaf_names = leaf_names  # id(Value) -> shared symbol name
        self.op_keys = op_keys  # id(Operation) -> index k of the non-pure op in walk order
        self.memo: dict[tuple[int, tuple[int, ...]], tuple[Enc, tuple]] = {}
        # the optimized side reads memory through the original's terms (see _memory_result)
        self.partner: _Eval | None = None
        self.partner_ops: list[Operation] = []

    def at(self, v: Value, idx: Sequence[z3.ExprRef]) -> Enc:
        shape = v.type.shape
        idx = tuple(_bv(0) if s == 1 else i for i, s in zip(idx, shape))
        key = (id(v), _idx_key(idx))
        hit = self.memo.get(key)
        if hit is not None:
            return hit[0]
        enc = self._at(v, idx)
        self.memo[key] = (enc, idx)
        return enc

    def _symbol(self, name: str, t: BlockType, idx: Sequence[z3.ExprRef]) -> z3.ExprRef:
        if not idx:
            return z3.Const(name, _sort(t, self.ck.mode))
        f = z3.Function(name, *([z3.BitVecSort(32)] * len(idx)), _sort(t, self.ck.mode))
        return f(*idx)

    def _at(self, v: Value, idx: tuple) -> Enc:
        name = self.leaf_names.get(id(v))
        owner = v.owner
        if isinstance(owner, Operation) and owner.op in ("load",) or (
                isinstance(owner, Operation) and owner.op.startswith("atomic_")):
            return self._memory_result(owner, v, idx)
        if name is not None:
            return Enc(self._symbol(name, v.type, idx), TRUE)
        assert isinstance(owner, Operation), v
        return self._pure(owner, v, idx)

    def _memory_result(self, op: Operation, v: Value, idx: tuple) -> Enc:
        """The k-th load/atomic result: a fresh per-lane value ``mem{k}(lane)`` where the mask is
        on, ``other`` (or another fresh value) where it is off. The optimized side uses the
        ORIGINAL's term for its k-th load: sound because the checks prove, for every load and
        atomic in program order, the same mask, the same address where the mask is on and the
        same ``other`` where it is off — and these operands only depend on earlier loads (SSA).
        Sharing the term keeps address arithmetic out of the data values compared later."""
        k = self.op_keys[id(op)]
        if self.partner is not None:
            twin = self.partner_ops[k]
            return self.partner.at(twin.results[v.index], idx)
        ptr = self.at(op.operands[0], idx)
        mask, other = (None if i is None else self.at(op.operands[i], idx) for i in mask_and_other(op))
        on = Enc(self._symbol(f"mem{k}", v.type, idx), ptr.defined)
        if mask is None:
            return on
        if other is None:
            other = Enc(self._symbol(f"mem{k}_off", v.type, idx), TRUE)
        value = z3.If(mask.value, on.value, other.value)
        defined = z3.And(mask.defined, z3.If(mask.value, on.defined, other.defined))
        return Enc(value, defined)

    def _pure(self, op: Operation, v: Value, idx: tuple) -> Enc:
        name = op.op
        attrs = op.attrs
        if name == "const":
            value, dt = attrs["value"], attrs["dtype"]
            if dt.is_float and self.ck.mode == z3ops.EXACT:
                # round first, so constants equal in their dtype get one z3 term
                value = round_float(value, dt)
            return z3ops.const(value, dt, self.ck.mode)
        if name in ("program_id", "num_programs"):
            enc = z3ops.encode(name, i32, attrs, [])
            self.ck.add_fact(z3ops.leaf_facts(name, attrs, enc.value))
            return enc
        if name == "arange":
            return Enc(_bv(attrs["start"]) + idx[0], TRUE)
        got = self.structural(op, v, idx)
        if got is not None:
            return got
        args = [self.at(o, idx) for o in op.operands]
        if len(args) == 2 and op.opdef.has(Trait.COMMUTATIVE):
            # Canonical operand order (by z3's structural hash, deterministic across runs):
            # commutative ops are commutative in the z3 encoding too, so both programs get the
            # same term for a swapped pair.
            args.sort(key=lambda a: (a.value.hash(), a.value.get_id()))
        defined = [a.defined for a in args]
        t0 = op.operands[0].type
        if t0.is_pointer and name in ("eq", "ne", "where"):
            a = [x.value for x in args]
            val = a[0] == a[1] if name == "eq" else a[0] != a[1] if name == "ne" else z3.If(a[0], a[1], a[2])
            return Enc(val, _and(defined))
        if name == "where":
            dt: DType = op.operands[1].type.dtype
            if op.operands[1].type.is_pointer:
                return Enc(z3.If(args[0].value, args[1].value, args[2].value), _and(defined))
        else:
            dt = t0.dtype
        a2 = dict(attrs)
        if name == "addptr":
            a2["offset_dtype"] = op.operands[1].type.dtype
        enc = z3ops.encode(name, dt, a2, [x.value for x in args], self.ck.mode)
        return Enc(enc.value, _and(defined + [enc.defined]))

    def _source_index(self, op: Operation, idx: tuple) -> tuple:
        src = source_index(op, idx, _bv(0))
        if src is not None:
            return src
        src_t, out_t = op.operands[0].type, op.results[0].type
        # reshape: row-major linearization
        lin = _bv(0)
        stride = 1
        for i, s in reversed(list(zip(idx, out_t.shape))):
            if s != 1:
                lin = lin + i * _bv(stride) if stride != 1 else lin + i
            stride *= s
        out = []
        stride = 1
        strides = []
        for s in reversed(src_t.shape):
            strides.append(stride)
            stride *= s
        strides.reverse()
        for s, st in zip(src_t.shape, strides):
            out.append(_bv(0) if s == 1 else z3.URem(z3.UDiv(lin, _bv(st)), _bv(s)))
        # simplified in the validation's scratch context (see _Checker.simplified), brought back
        return tuple(self.ck.simplified(x).translate(z3.main_ctx()) for x in out)

    def _block_op(self, op: Operation, v: Value, idx: tuple) -> Enc:
        ck = self.ck
        key_id = (self.side, id(op))
        name = ck.block_names.get(key_id)
        if name is None:
            operands = []
            ranges = []
            for j, o in enumerate(op.operands):
                vs, rng = lane_vars(f"blk_{j}", o.type.shape)
                operands.append(self.at(o, vs))
                ranges.append(rng)
            key = (op.op, tuple(sorted(op.attrs.items())), tuple(o.type for o in op.operands))
            name = ck.blocks.identify(key, operands, self.side, z3.And(ranges))
            ck.block_names[key_id] = name
        val = self._symbol(name, v.type, idx)
        return Enc(val, z3.Bool(f"{name}_def"))


def _and(xs: list[z3.BoolRef]) -> z3.BoolRef:
    xs = [x for x in xs if not z3.is_true(x)]
    if not xs:
        return TRUE
    return xs[0] if len(xs) == 1 else z3.And(xs)


def validate(before: Function, after: Function, *, timeout_ms: int = 2000, total_seconds: float = 10.0,
             fast_math: bool = False, lemmas: Sequence[Any] = ()) -> Validation:
    """Check that ``after`` refines ``before`` (see the module docstring). Never raises for a
    well-formed pair of functions; internal problems give an ``unknown`` verdict.

    ``fast_math=True`` compares floats as real numbers (:data:`z3ops.REAL`: finite, no NaN or
    -0.0, exact arithmetic, with the exp/log/sqrt axioms) — the semantics ``fast_math`` rules are
    proved in, so a fast-math optimization is checked against the same contract; integer and
    pointer arithmetic stay exact.

    ``lemmas``: proved rules as :class:`.validate_lemmas.Lemma` (exact mode only): a pair of
    differing subterms that is an instance of one is equal without a solver call."""
    t0 = time.perf_counter()
    mode = z3ops.REAL if fast_math else z3ops.EXACT
    try:
        return replace(_validate(before, after, timeout_ms, total_seconds, t0, mode, lemmas), mode=mode)
    except _Mismatch as e:
        return Validation("invalid", str(e), seconds=time.perf_counter() - t0, mode=mode)
    except z3.Z3Exception as e:
        return Validation("unknown", f"z3 error: {e}", seconds=time.perf_counter() - t0, mode=mode)


def _launch_facts(fn: Function, mode: str) -> list[z3.BoolRef]:
    """What the launch-time specialization facts (checked at every launch) say about the shared
    symbols: a ``divK`` integer parameter is a multiple of the power of two in ``K``; under
    ``offsets_i32`` every grid axis has at most ``2**31 // block`` programs; and what the
    ``for`` semantics says of each induction variable (:func:`.analyses.loop_iv_facts`)."""
    out = []
    for i, p in enumerate(fn.params):
        t = p.type
        if t.is_pointer or not t.is_scalar or not t.dtype.is_int:
            continue
        d = fn.facts.divisor(p.name)
        if 1 < d < (1 << t.dtype.bits):
            x = z3.Const(f"param{i}", _sort(t, mode))
            out.append(x & (d - 1) == 0)
    # the body of a counted loop runs only for the induction values the IR's semantics allows
    # (the optimizer's e-graph is seeded with the same facts: analyses.fact_seeds)
    arg_names = _skeleton(fn)[0]
    for lf in loop_iv_facts(fn):
        x = z3.Const(arg_names[id(lf.iv)], _sort(lf.iv.type, mode))
        out += [x >= lf.lo, x <= lf.hi_max] + ([x & (lf.p - 1) == 0] if lf.p > 1 else [])
        if lf.hi is not None:
            out.append(x < z3.Const(arg_names[id(lf.hi)], _sort(lf.hi.type, mode)))
    if fn.facts.block:
        top = (1 << 31) // fn.facts.block
        out += [z3.ULE(z3.BitVec(f"num_programs_{a}", 32), top) for a in range(3)]
    return out


def _validate(before: Function, after: Function, timeout_ms: int, total_seconds: float, t0: float,
              mode: str, lemmas: Sequence[Any] = ()) -> Validation:
    nb, kb, ops_b, na, ka, ops_a = check_skeleton(before, after)
    ck = _Checker(timeout_ms, total_seconds, mode, lemmas)
    ck.blocks = _BlockOps(ck)
    for f in _launch_facts(before, mode):
        ck.add_fact(f)
    if mode == z3ops.REAL:
        for ax in z3ops.real_axioms():
            ck.add_fact(ax)
    eb = _Eval(ck, "before", nb, kb)
    ea = _Eval(ck, "after", na, ka)
    ea.partner, ea.partner_ops = eb, [o for o, _ in ops_b]
    # Identify the original's reductions first, so optimized ones can be matched against them.
    for op in before.walk():
        if op.op in _BLOCK_OPS:
            vs, _ = lane_vars("i", op.results[0].type.shape)
            eb.at(op.results[0], vs)
    failures: list[str] = []
    unknown: list[str] = []
    for k, ((ob, _), (oa, _)) in enumerate(zip(ops_b, ops_a)):
        for j, role, mask_j, on in _obligations(ob, k):
            vb = ob.operands[j]
            shape = vb.type.shape
            idx, rng = lane_vars("i", shape)
            if j >= len(oa.operands):  # a mask the optimizer dropped as all-true (and the load's other)
                if role == "mask":
                    _check_dropped_mask(ck, eb.at(vb, idx), rng, f"{_describe(ob, k)} mask", unknown, failures)
                continue  # `other` is never selected under a mask that is true on every lane
            va = oa.operands[j]
            xb, xa = eb.at(vb, idx), ea.at(va, idx)
            ck.checks += 1
            if _identical(xb, xa):
                continue
            ctx = _context(eb, ob, mask_j, on, idx, rng)
            shown, xb, xa = _shown_equal(ck, xb, xa, ctx)
            if shown:
                continue
            bad = z3.And(ctx, xb.defined, z3.Not(z3.And(xa.defined, xa.value == xb.value)))
            r, model = ck.solve(bad)
            what = f"{_describe(ob, k)} {role}"
            if r == z3.unsat:
                continue
            if r == z3.unknown:
                unknown.append(f"{what}: {ck.last_reason}")
                continue
            if ck.blocks.unmatched and _mentions(bad, ck.blocks.unmatched):
                unknown.append(f"{what}: differs through a reduction/dot whose operand could not be matched")
                continue
            failures.append(_counterexample(what, model, idx, xb, xa))
            break
        if failures:
            break
    secs = time.perf_counter() - t0
    if failures:
        return ck.result("invalid", failures[0], secs)
    if unknown:
        return ck.result("unknown", "; ".join(unknown), secs)
    return ck.result("valid", "", secs)


def _context(eb: _Eval, ob: Operation, mask_j: int | None, on: bool, idx: list[z3.BitVecRef],
             rng: z3.BoolRef) -> z3.BoolRef:
    """The lanes an obligation is about: in range, and where the original's mask (operand
    ``mask_j``, if any) is defined and on (``on``) or off."""
    if mask_j is None:
        return rng
    m = eb.at(ob.operands[mask_j], idx)
    return z3.And([rng, m.defined, m.value if on else z3.Not(m.value)])


def _identical(xb: Enc, xa: Enc) -> bool:
    """The same value term, and ``xa`` defined wherever ``xb`` is (the same term, or true)."""
    return xb.value.eq(xa.value) and (xb.defined.eq(xa.defined) or z3.is_true(xa.defined))


def _shown_equal(ck: _Checker, xb: Enc, xa: Enc, ctx: z3.BoolRef) -> tuple[bool, Enc, Enc]:
    """Whether ``xa`` refines ``xb`` under ``ctx`` by the cheap means, in order: identity and the
    lemmas built so far on the terms as they are; identity of their canonical forms modulo
    associativity and commutativity (exact: :mod:`.validate_canon`); the dtype-generic guarded
    lemmas, built now (:class:`.validate_lemmas.Lemmas`), on the terms as they are; the structural
    diff of the canonical forms with small queries. Also returns the canonical forms (the
    whole-obligation query uses them)."""
    if ck.refines_without_solver(xb, xa, ctx):
        return True, xb, xa
    cb, ca = ck.canonical(xb), ck.canonical(xa)
    if _identical(cb, ca):
        return True, cb, ca
    if ck.build_lemmas() and ck.refines_without_solver(xb, xa, ctx):
        return True, cb, ca
    return ck.refines(cb, ca, ctx), cb, ca


def _check_dropped_mask(ck: _Checker, m: Any, rng: Any, what: str, unknown: list[str], failures: list[str]) -> None:
    """The original mask ``m`` must be defined and true on every lane (``rng``) for the optimized
    op to go unmasked; a lane where it is not is a counterexample."""
    ck.checks += 1
    r, _ = ck.solve(z3.And(rng, z3.Not(z3.And(m.defined, m.value))))
    if r == z3.unknown:
        unknown.append(f"{what}: not proved all-true: {ck.last_reason}")
    elif r != z3.unsat:
        failures.append(f"{what}: dropped by the optimizer but not true on every lane")


def _mentions(e: z3.ExprRef, names: set[str]) -> bool:
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_app(x):
            if x.decl().name() in names or x.decl().name().removesuffix("_def") in names:
                return True
            stack.extend(x.children())
    return False


def _counterexample(what: str, model: SessionModel | None, idx: list[z3.ExprRef], xb: Enc, xa: Enc) -> str:
    if model is None:
        return f"{what} differs"
    lane = ", ".join(str(model.eval(i, model_completion=True)) for i in idx)
    vb = model.eval(xb.value, model_completion=True)
    va = model.eval(xa.value, model_completion=True)
    da = model.eval(xa.defined, model_completion=True)
    extra = "" if z3.is_true(da) else " (undefined in the optimized function)"
    return f"{what} differs at lane [{lane}]: original {vb}, optimized {va}{extra}"


__all__ = ["Validation", "abstract_fp_rem", "lane_vars", "validate"]
