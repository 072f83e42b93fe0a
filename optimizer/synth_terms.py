"""Term enumeration and fingerprinting for the rule synthesizer (:mod:`.synthesize`).

Ruler/Enumo style: every term up to ``max_size`` nodes over a few variables and small constants
is evaluated on the same sample inputs with the op table's reference semantics (the functions
the interpreter uses); terms with equal values on every sample (equal *fingerprints*) are
candidate equalities. Nothing here lists ops by hand:

* The op set is derived from the op table: every ``PURE`` ``ELEMENTWISE`` op with a reference,
  fixed arity, no attributes and not ``TRANSCENDENTAL`` (those are approximate in the reference
  and uninterpreted in z3), at every operand signature over the sorts ``{dtype, bool}`` that its
  type rule accepts (:func:`signatures`): ``add`` at ``(i32, i32) -> i32``, ``lt`` at
  ``(i32, i32) -> bool``, ``where`` at ``(bool, i32, i32) -> i32``, ``and`` at ``(bool, bool) ->
  bool``...
* Enumeration is bottom-up by size over *classes*: the children of a new term are only the
  cheapest representative of each fingerprint class of smaller size, so a term whose subterm
  already has a cheaper equivalent is never built (its rule would be derivable). Commutative ops
  take their operands in one order only (the bigger first, so a constant is on the right, as in
  the shipped rules); terms without variables are not built (constant
  folding is the fold rules' job).
* Evaluation is vectorised: for each op signature and split of sizes, every combination of
  child classes is evaluated in one numpy call on a ``(combinations, samples)`` matrix, and rows
  are hashed to 128-bit fingerprints (two independent multiply-xorshift hashes). A collision
  only makes a candidate that z3 refutes; soundness never depends on fingerprints.

Float fingerprints compare bit patterns with every NaN made the canonical NaN: the verifier's
float equality is structural (NaN == NaN, +0.0 != -0.0), and so is this one.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eggpu.ir import OPS_LIST, BlockType, DType
from eggpu.ir.dtypes import bool_, numpy_dtype
from eggpu.ir.errors import IRError
from eggpu.ir.ops import COMMUTATIVE, ELEMENTWISE, PURE, TRANSCENDENTAL, result_types

#: samples per variable (rows of the fingerprint matrix)
DEFAULT_SAMPLES = 192
#: variable names per sort: the value sort's and bool's
VALUE_VARS = ("x", "y", "z")
BOOL_VARS = ("p", "q")
#: combinations evaluated per numpy call
CHUNK = 4096


@dataclass(frozen=True, slots=True)
class Sig:
    """One signature of an op: operand dtypes -> result dtype; ``commutative`` from its traits."""

    op: str
    operands: tuple[DType, ...]
    result: DType
    commutative: bool


@dataclass(frozen=True, slots=True)
class Term:
    """A term: ``op`` is ``"var"`` (``value`` = name), ``"const"`` (``value`` = the Python
    number) or an op-table name applied to ``args``; ``dtype`` is the result dtype."""

    op: str
    dtype: DType
    args: tuple[Term, ...] = ()
    value: Any = None
    size: int = 1
    cost: float = 0.0

    def variables(self) -> list[tuple[DType, str]]:
        """(sort, name) of each variable in first-occurrence order (left to right), no repeats."""
        out: list[tuple[DType, str]] = []
        stack = [self]
        while stack:
            t = stack.pop()
            if t.op == "var":
                if (t.dtype, t.value) not in out:
                    out.append((t.dtype, t.value))
            else:
                stack.extend(reversed(t.args))
        return out

    def has_const(self) -> bool:
        return self.op == "const" or any(a.has_const() for a in self.args)

    def ops(self) -> list[str]:
        """Op names, pre-order."""
        if self.op in ("var", "const"):
            return []
        return [self.op] + [o for a in self.args for o in a.ops()]

    def __str__(self) -> str:
        if self.op == "var":
            return str(self.value)
        if self.op == "const":
            return repr(self.value)
        return f"{self.op}({', '.join(map(str, self.args))})"


def signatures(dtype: DType, *, with_bool: bool = True) -> list[Sig]:
    """Every op signature over the sorts ``{dtype}`` (plus ``bool`` when ``with_bool``) that the
    op table's type rules accept, for the ops the synthesizer uses (see the module docstring)."""
    sorts = [dtype] + ([bool_] if with_bool and dtype != bool_ else [])
    out = []
    for op in OPS_LIST:
        if not (op.has(PURE) and op.has(ELEMENTWISE)) or op.has(TRANSCENDENTAL):
            continue
        lo, hi = op.arity
        if op.reference is None or op.attrs or lo != hi or lo == 0:
            continue
        for combo in itertools.product(sorts, repeat=lo):
            try:
                (res,) = result_types(op.name, [BlockType(d) for d in combo], {})
            except (IRError, ValueError):
                continue
            if res.shape == () and res.dtype in sorts:
                out.append(Sig(op.name, tuple(combo), res.dtype, op.has(COMMUTATIVE)))
    return out


def constants(dtype: DType) -> list[Any]:
    """The small constants of ``dtype`` the synthesizer uses (none for bool)."""
    if dtype.is_float:
        return [0.0, -0.0, 1.0, -1.0, 2.0, 0.5]
    if dtype.is_bool:
        return []
    if dtype.is_unsigned:
        return [0, 1, 2, (1 << dtype.bits) - 1]
    return [0, 1, -1, 2]


def samples(dtype: DType, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` sample values of ``dtype``: special values, small numbers and random ones mixed."""
    npd = numpy_dtype(dtype)
    if dtype.is_bool:
        return rng.random(n) < 0.5
    if dtype.is_float:
        fi = np.finfo(npd)
        special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, np.inf, -np.inf, np.nan,
                            float(fi.max), -float(fi.max), float(fi.tiny), -float(fi.tiny),
                            float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 1e-3, 1e3], dtype=np.float64)
        k = n // 3
        small = rng.integers(-8, 9, k).astype(np.float64)
        m = max(n - k - len(special), 0)
        wide = rng.standard_normal(m) * np.exp2(rng.integers(-30, 30, m))
        vals = np.concatenate([special, small, wide])
        with np.errstate(all="ignore"):
            out = vals.astype(npd)
    else:
        info = np.iinfo(npd)
        lo, hi = int(info.min), int(info.max)
        special = [0, 1, 2, 3, 4, 7, 8, hi, hi - 1, lo, lo + 1] + ([-1, -2, -8] if lo < 0 else [hi >> 1])
        special += [1 << k for k in range(4, dtype.bits - 1, 5)]
        k = n // 3
        small = rng.integers(max(lo, -17), min(hi, 17) + 1, k)
        wide = rng.integers(lo, hi, max(n - k - len(special), 0), dtype=npd, endpoint=True)
        out = np.concatenate([np.array(special, dtype=object).astype(np.int64 if lo < 0 else np.uint64).astype(npd),
                              small.astype(npd), wide.astype(npd)])
    return rng.permutation(out)[:n]  # all of them when n covers the specials; else a random subset


def _canonical_bits(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Rows as unsigned 64-bit words: bool/int bits, float bit patterns with NaN made canonical."""
    if dtype.is_float:
        v = np.where(np.isnan(values), np.asarray(np.nan, dtype=values.dtype), values)
        return v.view(np.dtype(f"u{values.dtype.itemsize}")).astype(np.uint64)
    if dtype.is_bool:
        return values.astype(np.uint64)
    return values.view(np.dtype(f"u{values.dtype.itemsize}")).astype(np.uint64)


def fingerprints(values: np.ndarray, dtype: DType, mult: np.ndarray) -> list[bytes]:
    """One 128-bit fingerprint per row of ``values`` (two multiply-xorshift hashes; ``mult`` is a
    ``(2, samples)`` array of odd random words)."""
    x = _canonical_bits(values, dtype)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(32)
        h = np.stack([(x * mult[0]).sum(axis=1), (x * mult[1]).sum(axis=1)], axis=1)
    return [bytes(r) for r in np.ascontiguousarray(h).view(np.uint8).reshape(len(values), 16)]


@dataclass
class FClass:
    """One fingerprint class of a sort: its members (every term built with that fingerprint)."""

    dtype: DType
    members: list[Term] = field(default_factory=list)

    @property
    def best(self) -> Term:
        """The cheapest member (ties: smallest, then first built)."""
        return min(self.members, key=lambda t: (round(t.cost, 6), t.size))


@dataclass
class Enumeration:
    """What :func:`enumerate_terms` built: classes per sort, counts and whether it was cut short."""

    dtype: DType
    classes: list[FClass]
    terms: int
    sizes_done: int
    partial: bool
    stop_reason: str
    seconds: float
    #: what a term built elsewhere needs to be fingerprinted the same way (:mod:`.synth_workload`):
    #: each variable's samples by (sort, name), the sample count, the hash multipliers, and the
    #: classes by (sort, fingerprint)
    var_samples: dict[tuple[DType, str], np.ndarray] = field(default_factory=dict)
    n_samples: int = 0
    mult: np.ndarray | None = None
    index: dict[tuple[DType, bytes], FClass] = field(default_factory=dict)


class _Pool:
    """Child representatives of one sort and size: terms, their values (rows) and has-variable flags."""

    def __init__(self, terms: list[Term], values: np.ndarray, has_var: np.ndarray):
        self.terms, self.values, self.has_var = terms, values, has_var


def enumerate_terms(
    dtype: DType,
    *,
    max_size: int,
    lane_cost: Callable[[str, DType], float],
    const_cost: float,
    n_vars: int = 2,
    bool_vars: int = 1,
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    deadline: float | None = None,
    max_terms: int = 400_000,
    progress: Callable[[str], None] | None = None,
    pool: Sequence[Any] | None = None,
    nonneg: bool = False,
    max_op_cost: float = float("inf"),
    extra: Sequence[Term] = (),
) -> Enumeration:
    """Enumerate terms of ``dtype`` (and bool, when ``bool_vars`` or comparisons give it) up to
    ``max_size`` nodes and group them by fingerprint.

    ``pool`` replaces the constants of ``dtype`` (default :func:`constants`; a workload term's
    own constants, :mod:`.synth_workload`); ``nonneg`` draws the value variables' samples from
    ``[0, MAX]`` only (signed integers; other dtypes ignore it): the classes are then equalities
    that hold for non-negative variables, which a rule must guard with ``(>= (LowerBound x) 0)``.
    Ops whose ``lane_cost`` exceeds ``max_op_cost`` are left out (a targeted search looks for
    right-hand sides without divisions). ``extra``: terms over the variables seeded as leaves
    (size 1, their own cost): right-hand sides already found for subterms, so a bigger right-hand
    side is built from them (a targeted search's composition pass, :mod:`.synth_workload`).

    ``lane_cost(op, dtype)`` prices an op by the dtype of the schema's dtype argument (the cost
    model's per-lane cost); a constant costs ``const_cost``, a variable 0. Stops early (``partial``
    with the reason) at ``deadline`` (a ``time.perf_counter()`` value) or after ``max_terms`` terms;
    sizes finished before that are complete."""
    t0 = time.perf_counter()
    en = _Enumerator(dtype, n_samples, np.random.default_rng(seed), bool_vars, deadline, max_terms)
    en.max_op_cost = max_op_cost
    en.seed_leaves(n_vars, bool_vars, const_cost, pool, nonneg, extra)
    sizes_done = 1
    for size in range(2, max_size + 1):
        en.grow(size, lane_cost)
        if progress:
            progress(f"{dtype}: size {size}: {en.count} terms, {sum(len(c) for c in en.classes.values())} classes")
        if en.stop != "max size reached":
            break
        sizes_done = size
    flat = [c for s in en.sorts for c in en.classes[s].values()]
    index = {(s, fp): c for s in en.sorts for fp, c in en.classes[s].items()}
    return Enumeration(dtype, flat, en.count, sizes_done, en.stop != "max size reached", en.stop,
                       time.perf_counter() - t0, en.var_samples, n_samples, en.mult, index)


class _Enumerator:
    """The state of one :func:`enumerate_terms` run: the fingerprint classes per sort, the child
    pools (one representative per class, by sort and size), and the stop reason (``stop`` stays
    ``"max size reached"`` while the run goes on)."""

    def __init__(self, dtype: DType, n_samples: int, rng: np.random.Generator, bool_vars: int,
                 deadline: float | None, max_terms: int) -> None:
        from .schema import CONSTRUCTORS, pascal

        self.dtype, self.n_samples, self.rng = dtype, n_samples, rng
        self.deadline, self.max_terms = deadline, max_terms
        sigs = signatures(dtype, with_bool=True)
        self.sorts = [dtype] + ([bool_] if dtype != bool_ and (bool_vars or any(s.result == bool_ for s in sigs))
                                else [])
        if dtype != bool_ and bool_ not in self.sorts:
            sigs = [s for s in sigs if bool_ not in s.operands]
        self.sigs = sigs
        self.dt_arg = {s: CONSTRUCTORS[pascal(s.op)].dtypes[0] for s in sigs}
        self.mult = rng.integers(1, 2**63, (2, n_samples), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        self.classes: dict[DType, dict[bytes, FClass]] = {s: {} for s in self.sorts}
        self.pools: dict[tuple[DType, int], _Pool] = {}
        self.var_samples: dict[tuple[DType, str], np.ndarray] = {}
        self.count = 0
        self.max_op_cost = float("inf")
        self.stop = "max size reached"

    def add_pool(self, sort: DType, size: int, rows: list[tuple[Term, np.ndarray, bool]]) -> None:
        if rows:
            vals = np.stack([r[1] for r in rows])
            self.pools[(sort, size)] = _Pool([r[0] for r in rows], vals, np.array([r[2] for r in rows]))

    def seed_leaves(self, n_vars: int, bool_vars: int, const_cost: float, pool: Sequence[Any] | None = None,
                    nonneg: bool = False, extra: Sequence[Term] = ()) -> None:
        """Size 1: the variables and constants of every sort (``pool``, ``nonneg``, ``extra``:
        see :func:`enumerate_terms`)."""
        leaves: dict[DType, list[tuple[Term, np.ndarray, bool]]] = {}
        for sort in self.sorts:  # every sort's variables first: an extra leaf may read both (a mask over x and p)
            names = VALUE_VARS[:n_vars] if sort == self.dtype else BOOL_VARS[:bool_vars]
            leaves[sort] = []
            for name in names:
                v = samples(sort, self.n_samples, self.rng)
                if nonneg and sort == self.dtype and sort.is_signed:
                    v = np.where(v < 0, ~v, v)  # a bijection of [MIN, -1] onto [0, MAX]: MIN -> MAX
                self.var_samples[(sort, name)] = v
                leaves[sort].append((Term("var", sort, value=name), v, True))
        for sort in self.sorts:
            rows = leaves[sort]
            for c in (pool if pool is not None and sort == self.dtype else constants(sort)):
                v = np.full(self.n_samples, c, dtype=numpy_dtype(sort))
                rows.append((Term("const", sort, value=c, cost=const_cost), v, False))
            if extra:  # of either sort: a kernel's mask is a bool extra leaf
                from .synth_workload import evaluate

                rows += [(t, evaluate(t, self.var_samples, self.n_samples), True) for t in extra
                         if t.dtype == sort and set(t.variables()) <= set(self.var_samples)]
            kept = []
            for t, v, hv in rows:
                (fp,) = fingerprints(v[None, :], sort, self.mult)
                cl = self.classes[sort].setdefault(fp, FClass(sort))
                cl.members.append(t)
                self.count += 1
                if len(cl.members) == 1:
                    kept.append((t, v, hv))
            self.add_pool(sort, 1, kept)

    def grow(self, size: int, lane_cost: Callable[[str, DType], float]) -> None:
        """Every term of ``size`` nodes over the pools of smaller sizes; its new classes' cheapest
        members become the pool of ``size``. Sets ``stop`` when a limit cuts the size short."""
        new: dict[DType, dict[bytes, tuple[Term, np.ndarray, bool]]] = {s: {} for s in self.sorts}
        for sig in self.sigs:
            price_dt = sig.operands[1] if self.dt_arg[sig] == "operand1" else sig.operands[0]
            op_cost = lane_cost(sig.op, price_dt)
            if op_cost > self.max_op_cost:
                continue
            for split in _splits(size - 1, len(sig.operands)):
                ps = [self.pools.get((d, k)) for d, k in zip(sig.operands, split)]
                if any(p is None for p in ps) or (sig.commutative and split[0] < split[1]):
                    continue  # bigger operand first for a commutative op: constants on the right
                self._apply(sig, ps, sig.commutative and split[0] == split[1], size, op_cost, new[sig.result])
                if self.stop != "max size reached":
                    break
            if self.stop != "max size reached":
                break
        for sort in self.sorts:
            self.add_pool(sort, size, list(new[sort].values()))

    def _apply(self, sig: Any, ps: list[_Pool], same: bool, size: int, op_cost: float,
               new: dict[bytes, tuple[Term, np.ndarray, bool]]) -> None:
        """``sig`` over every combination of children from ``ps`` (in chunks of :data:`CHUNK`;
        at least one child holds a variable; ``same``: equal pools of a commutative op, one order)."""
        shape = tuple(len(p.terms) for p in ps)
        total = int(np.prod(shape))
        for lo in range(0, total, CHUNK):
            idx = np.unravel_index(np.arange(lo, min(total, lo + CHUNK)), shape)
            keep = np.zeros(len(idx[0]), dtype=bool)
            for p, i in zip(ps, idx):
                keep |= p.has_var[i]
            if same:
                keep &= idx[0] <= idx[1]
            if keep.any():
                self._classify(sig, ps, tuple(i[keep] for i in idx), size, op_cost, new)
            if self._out_of_budget(size):
                return

    def _classify(self, sig: Any, ps: list[_Pool], idx: tuple, size: int, op_cost: float,
                  new: dict[bytes, tuple[Term, np.ndarray, bool]]) -> None:
        """Evaluate one chunk of combinations and file each term under its fingerprint's class."""
        with np.errstate(all="ignore"):
            vals = np.asarray(_OPREF[sig.op]({}, *[p.values[i] for p, i in zip(ps, idx)], dtype=sig.operands[0]))
        fps = fingerprints(vals, sig.result, self.mult)
        table = self.classes[sig.result]
        for r, fp in enumerate(fps):
            args = tuple(p.terms[i[r]] for p, i in zip(ps, idx))
            t = Term(sig.op, sig.result, args, size=size, cost=op_cost + sum(a.cost for a in args))
            cl = table.get(fp)
            if cl is None:
                cl = table[fp] = FClass(sig.result)
                new[fp] = (t, vals[r], True)
            elif fp in new and t.cost < new[fp][0].cost:
                new[fp] = (t, vals[r], True)
            cl.members.append(t)
        self.count += len(fps)

    def _out_of_budget(self, size: int) -> bool:
        if self.count >= self.max_terms:
            self.stop = f"term limit ({self.max_terms}) reached at size {size}"
        elif self.deadline is not None and time.perf_counter() > self.deadline:
            self.stop = f"time limit reached at size {size}"
        return self.stop != "max size reached"


def _splits(total: int, parts: int) -> list[tuple[int, ...]]:
    """Ordered ways to write ``total`` as ``parts`` sizes >= 1."""
    if parts == 1:
        return [(total,)] if total >= 1 else []
    return [(k, *rest) for k in range(1, total) for rest in _splits(total - k, parts - 1)]


def _references() -> dict[str, Callable[..., np.ndarray]]:
    return {o.name: o.reference for o in OPS_LIST if o.reference is not None}


_OPREF = _references()


def reference(op: str) -> Callable[..., np.ndarray]:
    """The op table's reference semantics of ``op`` (the interpreter's)."""
    return _OPREF[op]


def render(t: Term, const: Callable[[Term], str]) -> str:
    """The term in the rule language (``const`` renders a constant leaf), e.g.
    ``(Add (I32) x (Splat (I32) s (Const (I32) 0)))``."""
    from .schema import CONSTRUCTORS, DTYPE_CONSTRUCTORS, pascal

    if t.op == "var":
        return str(t.value)
    if t.op == "const":
        return const(t)
    info = CONSTRUCTORS[pascal(t.op)]
    kinds = {"operand0": t.args[0].dtype, "operand1": t.args[1].dtype if len(t.args) > 1 else None,
             "result": t.dtype}
    dts = " ".join(f"({DTYPE_CONSTRUCTORS[kinds[k]]})" for k in info.dtypes)
    return f"({info.name} {dts} {' '.join(render(a, const) for a in t.args)})"


def canonical_names(t: Term) -> bool:
    """Whether the variables first occur in name order (``x`` before ``y``, ``p`` before ``q``):
    of the renamings of one term only this one is kept."""
    seen: dict[DType, list[str]] = {}
    for sort, name in t.variables():
        seen.setdefault(sort, []).append(name)
    for names in seen.values():
        order = VALUE_VARS if names[0] in VALUE_VARS else BOOL_VARS
        if names != list(order[:len(names)]):
            return False
    return True


__all__ = ["DEFAULT_SAMPLES", "Enumeration", "FClass", "Sig", "Term", "canonical_names", "constants", "enumerate_terms",
           "fingerprints", "render", "samples", "signatures"]
