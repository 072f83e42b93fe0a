"""Typed, DAG-aware extraction from a saturated e-graph.

Pipeline:

1. :func:`read_egraph` copies the e-graph out of egglog (``EGraph.freeze``): every non-subsumed
   row of a ``Term`` constructor becomes an :class:`ENode` (constructor, dtype arguments, IR
   attributes, child e-classes); ``let`` bindings give the e-classes of the encoded IR values.
2. :class:`TypedGraph` infers IR types bottom-up. A slot is ``(e-class, BlockType)``: an e-class
   can hold lane-wise-equal values of different shapes (a sound lane-wise rule may equate a block
   ``x - x`` with a scalar ``0``), so types are tracked per slot (slots are numbered densely; at
   most ``MAX_TYPES_PER_CLASS`` per e-class). Seeds are the types of the
   encoded IR values and of the opaque leaves; a node gets a type from its children's slots via
   the op table's type rules (:func:`eggpu.ir.ops.result_types`) and must agree with its own
   dtype arguments and attributes. A node whose type cannot be computed is not extractable;
   an integer constant outside its dtype's range is not extractable either.
3. :func:`extract` picks one typed node per needed slot for a region's roots. Costs come from
   the :class:`~eggpu.optimizer.cost.CostModel` on the node's operand and result types. Three
   candidates are computed and the one with the lower DAG cost (every chosen slot paid once) is
   kept: a tree-cost fixpoint (Bellman-Ford style; strictly positive costs of non-leaf nodes
   make it acyclic), a greedy DAG extraction (each slot carries the set of slots its choice
   needs, shared slots paid once) and the input program itself (so a region is never priced
   above its input); then a bounded hill-climb switches single slots while the DAG cost
   strictly drops (:func:`improve_locally`). Leaves the region may not use (opaque values of other regions
   or defined after the point of use) are excluded by a leaf filter. The final choice is checked
   to be acyclic; a cycle raises instead of producing a wrong program. On cost ties, nodes of the
   input program win (:func:`mark_original`), so equal-cost rewrites do not churn the program.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir import BlockType, DType
from eggpu.ir.errors import EggpuError, IRError
from eggpu.ir.ops import result_types
from eggpu.ir.types import PointerType

from .cost import CostModel
from .schema import ATTR_DEFAULTS, CONSTRUCTOR_DTYPES, CONSTRUCTORS, ConstructorInfo, const_value, decode_attr

Slot = tuple[int, BlockType]
INF = float("inf")


class ExtractionError(EggpuError):
    """Extraction could not produce a program (no typed term for a root, or a cycle)."""


@dataclass(eq=False, slots=True)
class ENode:
    """One e-node: constructor, dtype arguments, IR attributes, child e-classes.

    ``leaf`` is the opaque id for ``Opaque``/``OpaquePtr``; ``attrs`` holds the IR attributes
    (for constants: ``value`` and ``dtype``)."""

    ctor: str
    info: ConstructorInfo
    dtypes: tuple[DType, ...]
    attrs: dict[str, Any]
    children: tuple[int, ...]
    eclass: int
    leaf: int | None = None
    original: bool = False  # the node encodes an op of the input program

    @property
    def op(self) -> str | None:
        return self.info.op

    def __repr__(self) -> str:
        return f"ENode({self.ctor} {self.dtypes} {self.attrs} {self.children} -> {self.eclass})"


@dataclass(eq=False)
class EGraphView:
    """A frozen copy of the e-graph: e-class ids are dense ints."""

    nodes: list[ENode]
    class_nodes: dict[int, list[ENode]]
    lets: dict[str, int]  # let name -> e-class
    n_classes: int

    @property
    def size(self) -> int:
        return len(self.nodes)


def _row_attrs(eg: Any, info: Any, ins: Sequence[Any], first: int, dt_of: dict[Any, DType]) -> dict[str, Any]:
    """The attributes of one constructor row (its inputs from ``first`` on, in the
    constructor's attribute order); an optional attribute holding its default is left out."""
    attrs: dict[str, Any] = {}
    for (aname, kind), v in zip(info.attrs, ins[first:]):
        if kind in ("i64", "bits"):
            attrs[aname] = eg.value_to_i64(v)
        elif kind == "DT":
            attrs[aname] = dt_of[v]
        else:
            value = decode_attr(kind, eg.value_to_string(v))
            if value != ATTR_DEFAULTS.get(aname):  # (an optional attribute's default is left out)
                attrs[aname] = value
    return attrs



def read_egraph(eg: Any, let_names: Iterable[str] | None = None) -> EGraphView:
    """Copy the ``Term`` part of an ``egglog.bindings.EGraph`` (after a run: canonical ids)."""
    fz = eg.freeze()
    funcs = fz.functions
    dt_of: dict[Any, DType] = {}
    for name, dt in CONSTRUCTOR_DTYPES.items():
        f = funcs.get(name)
        if f is not None:
            for row in f.rows:
                dt_of[row.output] = dt
    ids: dict[Any, int] = {}

    def cid(v: Any) -> int:
        i = ids.get(v)
        if i is None:
            i = ids[v] = len(ids)
        return i

    nodes: list[ENode] = []
    class_nodes: dict[int, list[ENode]] = {}
    for name, info in CONSTRUCTORS.items():
        f = funcs.get(name)
        if f is None or not f.rows:
            continue
        sorts = info.arg_sorts
        nd = len(info.dtypes)
        for row in f.rows:
            if row.subsumed:
                continue
            ins = row.inputs
            dts = tuple(dt_of[ins[i]] for i in range(nd))
            attrs = _row_attrs(eg, info, ins, nd, dt_of)
            leaf = None
            k = nd + len(info.attrs)
            children = tuple(cid(ins[i]) for i in range(k, len(sorts)))
            if info.op is None:
                leaf = attrs.pop("id")
            elif info.op == "const":
                attrs = {"value": const_value(name, attrs["value"], dts[0]), "dtype": dts[0]}
            n = ENode(name, info, dts, attrs, children, cid(row.output), leaf)
            nodes.append(n)
            class_nodes.setdefault(n.eclass, []).append(n)
    lets: dict[str, int] = {}
    wanted = set(let_names) if let_names is not None else None
    for name, f in funcs.items():
        if f.is_let_binding and f.rows and (wanted is None or name in wanted):
            lets[name] = cid(f.rows[0].output)
    return EGraphView(nodes, class_nodes, lets, len(ids))


def mark_original(view: EGraphView, structure: Mapping[str, tuple[str, tuple[tuple[str, Any], ...]]]) -> int:
    """Flag the e-nodes that encode the input program's ops (``Encoding.structure``); returns
    how many were found. Extraction prefers them on cost ties, so equal-cost rewrites do not
    churn the program (and translation validation has less to prove)."""
    leaf_class = {n.leaf: n.eclass for n in view.nodes if n.leaf is not None}
    index = {(n.eclass, n.ctor, n.children): n for n in view.nodes}
    found = 0
    for name, (ctor, refs) in structure.items():
        kids = tuple(view.lets.get(r) if kind == "let" else leaf_class.get(r) for kind, r in refs)
        n = index.get((view.lets.get(name), ctor, kids))
        if n is not None:
            n.original = True
            found += 1
    return found


# ---------------------------------------------------------------------- typing


@dataclass(eq=False, slots=True)
class TNode:
    """A node at one type: the slot it fills (a dense int, see :meth:`TypedGraph.slot_id`), its
    type, its children's slots and its own cost."""

    node: ENode
    slot: int
    type: BlockType
    children: tuple[int, ...]
    cost: float


def _in_range(value: Any, dt: DType) -> bool:
    if dt.is_float:
        return True
    if dt.is_bool:
        return value in (0, 1, True, False)
    return dt.min <= int(value) <= dt.max


class TypedGraph:
    """Slots and typed nodes of an :class:`EGraphView` (see the module docstring).

    Slots ``(e-class, type)`` are numbered densely; :meth:`slot_id` maps one to its number and
    :attr:`slot_info` back. ``tnodes[slot]`` lists the typed nodes filling a slot and
    ``parents[slot]`` the typed nodes using it."""

    MAX_TYPES_PER_CLASS = 4
    TIE_BIAS = 1e-6  # relative extra cost of nodes not in the input program (breaks ties)

    def __init__(self, view: EGraphView, seeds: Mapping[int, Iterable[BlockType]],
                 leaf_types: Mapping[int, BlockType], cost: CostModel):
        self.view = view
        self.cost = cost
        self.leaf_types = dict(leaf_types)
        self.slot_index: dict[Slot, int] = {}
        self.slot_info: list[Slot] = []
        self.class_slots: dict[int, list[int]] = {}
        self.tnodes: dict[int, list[TNode]] = {}
        self.parents: dict[int, list[TNode]] = {}
        self._rt_cache: dict[tuple, BlockType | None] = {}
        self.untypable = 0
        for c, ts in seeds.items():
            for t in ts:
                self._add_slot(c, t)
        self._infer()

    def slot_id(self, eclass: int, t: BlockType) -> int | None:
        """The number of slot ``(eclass, t)``, or None when the class has no term of type ``t``."""
        return self.slot_index.get((eclass, t))

    def types_of(self, eclass: int) -> list[BlockType]:
        return [self.slot_info[s][1] for s in self.class_slots.get(eclass, ())]

    def _add_slot(self, c: int, t: BlockType) -> int | None:
        sid = self.slot_index.get((c, t))
        if sid is not None:
            return sid
        lst = self.class_slots.setdefault(c, [])
        if len(lst) >= self.MAX_TYPES_PER_CLASS:
            return None
        sid = len(self.slot_info)
        self.slot_info.append((c, t))
        self.slot_index[(c, t)] = sid
        lst.append(sid)
        return sid

    def node_type(self, n: ENode, child_types: Sequence[BlockType]) -> BlockType | None:
        """The IR type of ``n`` given its children's types, or None when it is ill-typed."""
        info = n.info
        if info.op is None:  # Opaque / OpaquePtr
            t = self.leaf_types.get(n.leaf)  # type: ignore[arg-type]
            if t is None or t.dtype != n.dtypes[0] or t.is_pointer != (n.ctor == "OpaquePtr"):
                return None
            return t
        if info.op == "const":
            dt = n.dtypes[0]
            if dt.is_float != (n.ctor == "ConstF") or not _in_range(n.attrs["value"], dt):
                return None
            return BlockType(dt, ())
        key = (n.ctor, n.dtypes, tuple(child_types), tuple(sorted((k, v) for k, v in n.attrs.items())))
        if key in self._rt_cache:
            return self._rt_cache[key]
        out: BlockType | None = None
        try:
            rts = result_types(info.op, list(child_types), dict(n.attrs))
            if len(rts) == 1:
                out = rts[0]
                if not self._dtypes_agree(info, n.dtypes, child_types, out):
                    out = None
        except (IRError, KeyError, TypeError, ValueError, IndexError):
            out = None
        self._rt_cache[key] = out
        return out

    @staticmethod
    def _dtypes_agree(info: ConstructorInfo, dts: tuple[DType, ...], cts: Sequence[BlockType],
                      out: BlockType) -> bool:
        for role, dt in zip(info.dtypes, dts):
            if role == "result":
                want = out.dtype
            elif role in ("operand0", "pointee"):
                want = cts[0].dtype
                if role == "pointee" and not isinstance(cts[0].elem, PointerType):
                    return False
            else:  # operand1, offset
                want = cts[1].dtype
            if want != dt:
                return False
        return True

    def _infer(self) -> None:
        view = self.view
        users: dict[int, list[ENode]] = {}
        for n in view.nodes:
            for c in set(n.children):
                users.setdefault(c, []).append(n)
        done: set[tuple[int, tuple[int, ...]]] = set()
        work: list[ENode] = list(view.nodes)
        info = self.slot_info
        while work:
            n = work.pop()
            options = [self.class_slots.get(c) for c in n.children]
            if any(not o for o in options):
                continue
            for sids in itertools.islice(itertools.product(*options), 16):
                key = (id(n), sids)
                if key in done:
                    continue
                done.add(key)
                cts = tuple(info[s][1] for s in sids)
                t = self.node_type(n, cts)
                if t is None:
                    self.untypable += 1
                    continue
                new = (n.eclass, t) not in self.slot_index
                slot = self._add_slot(n.eclass, t)
                if slot is None:
                    continue
                if n.info.op is None:
                    c = 0.0
                else:
                    c = self.cost.op_cost(n.info.op, cts, (t,), n.attrs)
                    if not n.original:
                        c *= 1.0 + self.TIE_BIAS
                tn = TNode(n, slot, t, sids, c)
                self.tnodes.setdefault(slot, []).append(tn)
                for s in set(sids):
                    self.parents.setdefault(s, []).append(tn)
                if new:
                    work.extend(users.get(n.eclass, ()))

    def reachable(self, roots: Iterable[int]) -> set[int]:
        """Slots reachable from ``roots`` through any typed node."""
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            for tn in self.tnodes.get(s, ()):
                stack.extend(c for c in tn.children if c not in seen)
        return seen


# ---------------------------------------------------------------------- extraction


LeafFilter = Callable[[int], bool]


@dataclass
class Extraction:
    """A choice of typed node per slot (slot numbers of a :class:`TypedGraph`), valid for the
    roots it was computed for."""

    choice: dict[int, TNode]
    roots: list[int]
    method: str = ""
    cost: float = 0.0
    candidates: dict[str, float] = field(default_factory=dict)

    def dag_nodes(self, roots: Iterable[int] | None = None) -> list[TNode]:
        """The chosen typed nodes reachable from ``roots``, children before parents."""
        return _topo(self.choice, list(self.roots if roots is None else roots))


def _topo(choice: Mapping[int, TNode], roots: Sequence[int]) -> list[TNode]:
    """Post-order over chosen nodes; raises ExtractionError on a missing choice or a cycle."""
    state: dict[int, int] = {}  # 1 = on stack, 2 = done
    order: list[TNode] = []
    for r in roots:
        if state.get(r) == 2:
            continue
        stack: list[tuple[int, int]] = [(r, 0)]
        while stack:
            s, i = stack.pop()
            tn = choice.get(s)
            if tn is None:
                raise ExtractionError(f"no extractable term for slot {s}")
            if i == 0:
                if state.get(s) == 2:
                    continue
                if state.get(s) == 1:
                    raise ExtractionError(f"extraction produced a cycle through e-class {tn.node.eclass}")
                state[s] = 1
            if i < len(tn.children):
                stack.append((s, i + 1))
                c = tn.children[i]
                st = state.get(c)
                if st == 1:
                    raise ExtractionError(f"extraction produced a cycle through e-class {tn.node.eclass}")
                if st != 2:
                    stack.append((c, 0))
            else:
                state[s] = 2
                order.append(tn)
    return order


def dag_cost(choice: Mapping[int, TNode], roots: Sequence[int]) -> float:
    """Cost of the chosen DAG for ``roots`` with every slot paid once (INF if incomplete/cyclic)."""
    try:
        return sum(tn.cost for tn in _topo(choice, roots))
    except ExtractionError:
        return INF


def _candidates(tg: TypedGraph, roots: Sequence[int], leaf_ok: LeafFilter) -> tuple[set[int], list[TNode]]:
    region = tg.reachable(roots)
    tns: list[TNode] = []
    for s in region:
        for tn in tg.tnodes.get(s, ()):
            if tn.node.leaf is not None and not leaf_ok(tn.node.leaf):
                continue
            tns.append(tn)
    return region, tns


def _slot_ids(tg: TypedGraph, roots: Sequence[int | Slot]) -> list[int]:
    out = []
    for r in roots:
        if isinstance(r, tuple):
            sid = tg.slot_id(*r)
            if sid is None:
                raise ExtractionError(f"e-class {r[0]} has no term of type {r[1]}")
            r = sid
        out.append(r)
    return list(dict.fromkeys(out))


def tree_extract(tg: TypedGraph, roots: Sequence[int | Slot], leaf_ok: LeafFilter) -> dict[int, TNode]:
    """Bottom-up fixpoint on tree cost (a node pays for its children's whole trees)."""
    region, tns = _candidates(tg, _slot_ids(tg, roots), leaf_ok)
    best: dict[int, TNode] = {}
    cost: dict[int, float] = {}
    allowed = {id(tn) for tn in tns}
    work = [tn for tn in tns if not tn.children]
    while work:
        nxt: list[TNode] = []
        for tn in work:
            if any(c not in cost for c in tn.children):
                continue
            total = sum((cost[c] for c in tn.children), tn.cost)  # the same order as adding one by one
            if total < cost.get(tn.slot, INF) * (1 - 1e-12):
                best[tn.slot] = tn
                cost[tn.slot] = total
                nxt.extend(p for p in tg.parents.get(tn.slot, ()) if id(p) in allowed and p.slot in region)
        work = nxt
    return best


def greedy_dag_extract(tg: TypedGraph, roots: Sequence[int | Slot], leaf_ok: LeafFilter,
                       max_updates: int = 200_000) -> dict[int, TNode]:
    """Greedy DAG extraction: a slot's cost is the sum over the set of slots its choice needs."""
    region, tns = _candidates(tg, _slot_ids(tg, roots), leaf_ok)
    best: dict[int, TNode] = {}
    sets: dict[int, dict[int, float]] = {}
    total: dict[int, float] = {}
    allowed = {id(tn) for tn in tns}
    work = [tn for tn in tns if not tn.children]
    updates = 0
    while work and updates < max_updates:
        nxt: list[TNode] = []
        for tn in work:
            s = tn.slot
            ch = tn.children
            if any(c not in sets for c in ch):
                continue
            if any(s in sets[c] for c in ch):
                continue  # would make the choice depend on itself
            merged = _union_of_sets(sets, ch)
            merged[s] = tn.cost
            t = sum(merged.values())
            if t < total.get(s, INF) * (1 - 1e-12):
                updates += 1
                best[s] = tn
                sets[s] = merged
                total[s] = t
                nxt.extend(p for p in tg.parents.get(s, ()) if id(p) in allowed and p.slot in region)
        work = nxt
    return best


def _union_of_sets(sets: dict[int, dict[int, float]], children: Sequence[int]) -> dict[int, float]:
    """The slots (with their costs) the children's choices need together: a copy of the largest
    child set updated with the others (cheaper than merging into an empty dict)."""
    if not children:
        return {}
    biggest = max(children, key=lambda c: len(sets[c]))
    merged = dict(sets[biggest])
    for c in children:
        if c != biggest:
            merged.update(sets[c])
    return merged


def extract(tg: TypedGraph, roots: Sequence[int | Slot], leaf_ok: LeafFilter = lambda _i: True) -> Extraction:
    """Choose terms for ``roots`` (slot numbers or ``(e-class, type)`` pairs; see the module
    docstring); raises ExtractionError when a root has no extractable term."""
    ids = _slot_ids(tg, roots)
    tree = tree_extract(tg, ids, leaf_ok)
    missing = [r for r in ids if r not in tree]
    if missing:
        c, t = tg.slot_info[missing[0]]
        raise ExtractionError(f"no extractable term of type {t} for e-class {c}")
    cands = {"tree": (tree, dag_cost(tree, ids))}
    dag = greedy_dag_extract(tg, ids, leaf_ok)
    if all(r in dag for r in ids):
        cands["greedy-dag"] = (dag, dag_cost(dag, ids))
    orig = original_choice(tg, ids, leaf_ok, tree)
    cands["original"] = (orig, dag_cost(orig, ids))
    method = min(cands, key=lambda k: cands[k][1])  # on ties the first: the input only when cheaper
    choice, c = cands[method]
    if c == INF:
        raise ExtractionError("extraction produced no acyclic program")
    choice, c2 = improve_locally(tg, ids, leaf_ok, choice, c)
    if c2 < c:
        method, c = f"{method}+local", c2
    _topo(choice, ids)  # acyclicity check (raises)
    return Extraction(choice, ids, method, c, {k: v[1] for k, v in cands.items()})


def original_choice(tg: TypedGraph, roots: Sequence[int], leaf_ok: LeafFilter,
                    base: Mapping[int, TNode]) -> dict[int, TNode]:
    """``base`` with every slot that holds a node of the input program (:func:`mark_original`)
    choosing it (the cheapest, when several): the input program itself, as a candidate, so
    extraction never prices a region above its input (greedy DAG extraction can: a rewrite that
    is cheaper as a tree, e.g. a hoisted address, may keep a shared value alive as well)."""
    _region, tns = _candidates(tg, roots, leaf_ok)
    choice = dict(base)
    picked: dict[int, TNode] = {}
    for tn in tns:
        if tn.node.original and (tn.slot not in picked or tn.cost < picked[tn.slot].cost):
            picked[tn.slot] = tn
    choice.update(picked)
    return choice


#: bound on the work of :func:`improve_locally`: DAG cost evaluations times nodes per evaluation
LOCAL_SEARCH_WORK = 1_500_000


def improve_locally(tg: TypedGraph, roots: Sequence[int], leaf_ok: LeafFilter, choice: Mapping[int, TNode],
                    cost: float) -> tuple[dict[int, TNode], float]:
    """Hill-climb on DAG cost: for each chosen slot, switch to another of its typed nodes when
    that strictly lowers the cost of the whole choice (every slot paid once; a switch that makes
    a cycle costs INF and is refused). Rounds repeat until none improves or the work bound
    :data:`LOCAL_SEARCH_WORK` is spent; the result is never costlier than ``choice``."""
    _region, tns = _candidates(tg, roots, leaf_ok)
    alts: dict[int, list[TNode]] = {}
    for tn in tns:
        alts.setdefault(tn.slot, []).append(tn)
    best = dict(choice)
    work = 0
    improved = True
    while improved and work < LOCAL_SEARCH_WORK:
        improved = False
        in_use = _topo(best, roots)
        size = max(len(in_use), 1)
        for cur in in_use:
            s = cur.slot
            for alt in alts.get(s, ()):
                if alt is best[s] or any(ch not in best for ch in alt.children):
                    continue
                if work >= LOCAL_SEARCH_WORK:
                    break
                old = best[s]
                best[s] = alt
                c = dag_cost(best, roots)
                work += size
                if c < cost * (1 - 1e-12):
                    cost, improved = c, True
                else:
                    best[s] = old
    return best, cost


__all__ = [
    "EGraphView", "ENode", "Extraction", "ExtractionError", "Slot", "TNode", "TypedGraph", "dag_cost",
    "extract", "greedy_dag_extract", "mark_original", "read_egraph", "tree_extract",
]
