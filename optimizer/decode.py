"""Extracted terms -> IR: rebuild a function from the chosen e-graph terms.

The decoder walks the ORIGINAL function's structure and rebuilds it with
:class:`eggpu.ir.Builder`, so every effect (load, store, atomic), control op (``for``, ``if``)
and ``yield`` is re-emitted once, in its original order, with its original attributes and
location. Pure values are not copied: each root of a region (see
:mod:`eggpu.optimizer.encode`) is materialized from the extracted term of its e-class no later
than just before the first op that needs it (values used inside a nested region are materialized
before the ``for``/``if`` that owns it); the parts of later roots' terms that need no value
defined from there on (index, mask and address math) are emitted before the block's first load,
store or atomic, as a frontend orders them (:meth:`Decoder.materialize_early` says why). Opaque leaves map back to the rebuilt counterparts of the
original values (parameters, block arguments, effect and control results, values of enclosing
blocks). Extraction is scoped: a region's terms may only use its own leaves and those of
enclosing blocks; a root needed before some load of its own block is re-extracted without that
load's value if the first choice used it. The Builder interns pure ops, so equal terms share one
value. The result is checked with :func:`eggpu.ir.verify`.
"""

from __future__ import annotations

from collections.abc import Callable

from eggpu.ir import Block, Builder, Function, Operation, Value, verify
from eggpu.ir.errors import EggpuError, IRError

from .encode import Encoding, Region, needed_values
from .extract import Extraction, TNode, TypedGraph, extract


class DecodeError(EggpuError):
    """The extracted terms could not be turned back into a well-formed IR function."""


class Decoder:
    """Rebuilds ``encoding.function`` from extractions over ``typed``."""

    def __init__(self, encoding: Encoding, typed: TypedGraph, let_classes: dict[str, int],
                 extractor: Callable[..., Extraction] = extract):
        self.enc = encoding
        self.tg = typed
        self.let_classes = let_classes
        self.extractor = extractor
        self.vmap: dict[int, Value] = {}
        self.builder: Builder | None = None
        self._extractions: dict[tuple[int, int | None], Extraction] = {}
        self._memo: dict[int, dict[int, Value]] = {}  # id(new Block) -> slot -> value
        self.extractions: list[Extraction] = []

    # ------------------------------------------------------------------ extraction

    def root_slot(self, v: Value) -> int:
        name = self.enc.let_of[id(v)]
        c = self.let_classes.get(name)
        if c is None:
            raise DecodeError(f"e-class of {name} not found after saturation")
        sid = self.tg.slot_id(c, v.type)
        if sid is None:
            raise DecodeError(f"no term of type {v.type} in the e-class of {name}")
        return sid

    def _extraction(self, region: Region, before: int | None, roots: list[int]) -> Extraction:
        key = (id(region), before)
        ex = self._extractions.get(key)
        if ex is None:
            ex = self.extractor(self.tg, roots, lambda lid: region.leaf_allowed(lid, before))
            self._extractions[key] = ex
            self.extractions.append(ex)
        return ex

    def nodes_for(self, region: Region, root: Value, pos: int) -> list[TNode]:
        """The chosen nodes (children first) for ``root``, usable before op ``pos``."""
        slot = self.root_slot(root)
        all_roots = [self.root_slot(v) for v in region.roots]
        ex = self._extraction(region, None, all_roots)
        nodes = ex.dag_nodes([slot])
        if all(tn.node.leaf is None or region.leaf_allowed(tn.node.leaf, pos) for tn in nodes):
            return nodes
        here = [self.root_slot(v) for v in region.roots if region.first_use[id(v)] == pos]
        ex = self._extraction(region, pos, here)
        return ex.dag_nodes([slot])

    def prepare(self) -> None:
        """Extract every region's roots up front (decoding then only re-extracts for roots
        needed before one of their region's own loads)."""
        for region in self.enc.regions:
            if region.roots:
                self._extraction(region, None, [self.root_slot(v) for v in region.roots])

    # ------------------------------------------------------------------ emission

    @property
    def b(self) -> Builder:
        assert self.builder is not None
        return self.builder

    def materialize(self, region: Region, v: Value, pos: int, loc) -> None:
        """Emit the extracted term of root ``v`` (a pure value of ``region``) if not done yet."""
        if id(v) in self.vmap:
            return
        memo = self._memo.setdefault(id(self.b.block), {})
        self.b.loc = loc if v.owner is None else getattr(v.owner, "loc", None) or loc
        for tn in self.nodes_for(region, v, pos):
            if tn.slot in memo:
                continue
            memo[tn.slot] = self.emit(tn, [memo[c] for c in tn.children])
        self.vmap[id(v)] = memo[self.root_slot(v)]

    def emit(self, tn: TNode, args: list[Value]) -> Value:
        n = tn.node
        if n.leaf is not None:
            leaf = self.enc.leaves[n.leaf]
            out = self.vmap.get(id(leaf.value))
            if out is None:
                raise DecodeError(f"opaque value {n.leaf} ({leaf.value.type}) used before it is available")
            return out
        try:
            if n.op == "const":
                out = self.b.const(n.attrs["value"], n.attrs["dtype"])
            else:
                out = self.b.op(n.op, *args, **n.attrs)  # type: ignore[arg-type]
        except IRError as e:
            raise DecodeError(f"extracted term {n.ctor} does not type-check: {e}") from None
        if out.type != tn.type:
            raise DecodeError(f"extracted {n.ctor} has type {out.type}, expected {tn.type}")
        return out

    def get(self, v: Value) -> Value:
        out = self.vmap.get(id(v))
        if out is None:
            raise DecodeError(f"value {v!r} is not available in the rebuilt function")
        return out

    # ------------------------------------------------------------------ structure

    def run(self) -> Function:
        fn = self.enc.function
        self.builder = Builder(fn.name, [(p.name or f"arg{i}", p.type) for i, p in enumerate(fn.params)],
                               grid_rank=fn.grid_rank)
        self.builder.function.facts = fn.facts
        for old, new in zip(fn.params, self.builder.params):
            self.vmap[id(old)] = new
        self.block(fn.body)
        try:
            verify(self.builder.function)
        except IRError as e:
            raise DecodeError(f"rebuilt function does not verify: {e}") from None
        return self.builder.function

    def block(self, blk: Block) -> None:
        region = self.enc.region_of[id(blk)]
        first_effect = True
        for i, op in enumerate(blk.ops):
            if op.opdef.is_pure and not op.regions:
                continue
            if first_effect and not op.regions:
                self.materialize_early(region, i)
                first_effect = False
            for v in needed_values(op):
                if id(v) not in self.vmap and id(v) in region.first_use:
                    self.materialize(region, v, i, op.loc)
            self.op(op)

    def materialize_early(self, region: Region, pos: int) -> None:
        """Before the FIRST effect of a block (at ``pos``), emit every part of a later root's
        chosen term that needs no value defined at or after ``pos`` (index, mask and address math).

        Why: emitting pure values only just before their first use interleaves index math with
        masked loads, which are lowered with branches; LLVM then cannot pair a ``div`` and a
        ``rem`` of one value across those blocks, and ptxas schedules the program worse than the
        frontend's own order (compute indices, then load). Doing it before every effect instead
        of only the first measured more SASS instructions on the larger kernels (register
        pressure); see docs/performance.md. Roots first used in a nested region (a loop or
        branch) are left where they are, so nothing moves across a region boundary."""
        memo = self._memo.setdefault(id(self.b.block), {})
        for v in region.roots:
            first = region.first_use[id(v)]
            if id(v) in self.vmap or first < pos or region.block.ops[first].regions:
                continue
            ready: set[int] = set()
            for tn in self.nodes_for(region, v, first):
                n = tn.node
                if n.leaf is not None and not region.leaf_allowed(n.leaf, pos):
                    continue
                if not all(c in ready for c in tn.children):
                    continue
                ready.add(tn.slot)
                if tn.slot not in memo:
                    memo[tn.slot] = self.emit(tn, [memo[c] for c in tn.children])

    def op(self, op: Operation) -> None:
        b = self.b
        b.loc = op.loc
        args = [self.get(v) for v in op.operands]
        if op.op == "for":
            body = op.regions[0]
            with b.region([a.type for a in body.args]) as nb:
                for old, new in zip(body.args, nb.args):
                    self.vmap[id(old)] = new
                self.block(body)
            b.loc = op.loc
            new_op = b.for_(args[0], args[1], args[2], args[3:], nb)
        elif op.op == "while":
            blocks = []
            for r in op.regions:
                with b.region([a.type for a in r.args]) as nb:
                    for old, new in zip(r.args, nb.args):
                        self.vmap[id(old)] = new
                    self.block(r)
                blocks.append(nb)
            b.loc = op.loc
            new_op = b.while_(args, blocks[0], blocks[1])
        elif op.op == "if":
            blocks = []
            for r in op.regions:
                with b.region([]) as nb:
                    self.block(r)
                blocks.append(nb)
            b.loc = op.loc
            new_op = b.if_(args[0], blocks[0], blocks[1], [r.type for r in op.results])
        elif op.op == "yield":
            b.yield_(*args)
            return
        else:
            args = drop_true_mask(op.op, args)
            new_op = b.create(op.op, args, dict(op.attrs), result_types_=[r.type for r in op.results])
        for old, new in zip(op.results, new_op.results):
            self.vmap[id(old)] = new
            if old.name is not None and new.name is None:
                new.name = old.name


#: memory op -> index of its optional mask operand (a load's ``other`` follows its mask)
MASK_OPERAND = {"load": 1, "store": 2}


def is_all_true(v: Value) -> bool:
    """Whether ``v`` is the constant ``true`` on every lane: a bool ``const`` 1, or a ``splat``,
    ``broadcast``, ``expand_dims`` or ``reshape`` of one (how an extracted proved-true mask looks)."""
    while True:
        op = v.owner
        if not isinstance(op, Operation) or getattr(v.type.dtype, "name", None) != "bool":
            return False
        if op.op == "const":
            return bool(op.attrs.get("value"))
        if op.op not in ("splat", "broadcast", "expand_dims", "reshape"):
            return False
        v = op.operands[0]


def drop_true_mask(name: str, args: list[Value]) -> list[Value]:
    """The operands of memory op ``name`` without a mask the optimizer proved all-true (and
    without a load's ``other``, which such a mask never selects): ``load(p, true, o)`` is
    ``load(p)`` and ``store(p, v, true)`` is ``store(p, v)``. Translation validation checks the
    dropped mask is true on every lane (:mod:`eggpu.optimizer.validate`)."""
    j = MASK_OPERAND.get(name)
    if j is None or len(args) <= j or not is_all_true(args[j]):
        return args
    return args[:j]


def decode(encoding: Encoding, typed: TypedGraph, let_classes: dict[str, int],
           extractor: Callable[..., Extraction] = extract) -> tuple[Function, list[Extraction]]:
    """Rebuild the function of ``encoding`` from ``typed`` (see the module docstring).

    Returns the new function and the extractions made; raises :class:`DecodeError` (or
    :class:`~eggpu.optimizer.extract.ExtractionError`) when no well-formed program comes out."""
    d = Decoder(encoding, typed, let_classes, extractor)
    d.prepare()
    return d.run(), d.extractions




def clone(fn: Function) -> Function:
    """A structural copy of ``fn`` (:meth:`eggpu.ir.Function.clone`, the one cloner)."""
    return fn.clone()


__all__ = ["DecodeError", "Decoder", "clone", "decode"]
