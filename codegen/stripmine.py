"""Strip-mining: a wide lane-by-lane kernel becomes a loop over chunks of its block.

The lowering unrolls every element a thread owns (one LLVM value per element slot), so its cost
grows with the block size, faster than linearly (LLVM's and ptxas' passes over one huge basic
block): a 131072-element masked kernel at ``num_warps=4`` (1024 elements per thread) took 9 s
on the 2-core build host, one of 262144 elements 66 s. A kernel whose every block operation acts
lane by lane does not need the whole block at once: :func:`strip_mine` rewrites it as

    for base in range(0, N, M):   # M = threads * STRIP_ELEMENTS_PER_THREAD
        ... the same operations on M lanes, arange(s, s + N) replaced by base + arange(s, s + M)

so the lowering sees one M-lane body whatever ``N`` is: the compile cost scales with the number
of distinct operations, not with the lanes (Triton unrolls instead and takes 11 s at 131072).

Which kernels qualify (anything else is left to the unrolled lowering and its per-thread limit):

* no control flow (``for``/``while``/``if``), every block value 1-D of the same length ``N``,
  ``N`` a multiple of ``M`` (both powers of two in practice);
* block operations: ``arange``, ``splat``, ``addptr``, ``where``, ``cast``, ``bitcast``, ops
  with the elementwise trait, ``load`` and ``store`` on blocks; no reduction, reshape, ``dot``,
  ``gather``, atomic, and no scalar load or store (a scalar effect would repeat per chunk);
* every load and store addresses ``splat(pointer parameter) + OFFS`` with one and the same
  ``OFFS`` value, and ``OFFS`` is injective (``base + s * i`` with a known constant ``s != 0``,
  :mod:`eggpu.codegen.analysis`): lane ``i`` of every access touches element ``OFFS[i]`` of its
  buffer and no other lane does, so a chunk's stores never hit what another chunk loads through
  the same pointer (an in-place ``x[offs] = f(x[offs])`` stays exact; ``x[offs] = x[offs + 1]``
  and ``x[offs // 2] += 1`` are not strip-mined). Two
  *different* pointer arguments that partly overlap are a data race between threads on the GPU
  already (no ordering between one thread's store and another's load), so they add no case.

The scalar operations (program ids, parameters, index arithmetic) stay before the loop; the
block operations, in their order, form its body. Semantics per lane are unchanged: each lane's
chain of values is computed from the same inputs, and effects on distinct elements commute.
"""

from __future__ import annotations

from eggpu.ir.builder import Builder
from eggpu.ir.dtypes import i32
from eggpu.ir.graph import Function, Operation, Value
from eggpu.ir.ops import ELEMENTWISE, get
from eggpu.ir.types import scalar

STRIP_ELEMENTS_PER_THREAD = 32
"""Elements each thread handles per loop iteration of a strip-mined kernel (8 four-wide vector
accesses per array: enough independent memory operations in flight, a small straight-line body)."""

STRIP_ABOVE_PER_THREAD = 256
"""A lane-wise kernel is strip-mined when its block puts more than this many elements on each
thread; up to it the unrolled lowering is kept (one straight-line body, no loop overhead)."""

_LANEWISE = frozenset({"arange", "splat", "addptr", "where", "cast", "bitcast", "load", "store"})


def strip_mine(fn: Function, num_warps: int, max_per_thread: int = STRIP_ABOVE_PER_THREAD) -> Function | None:
    """``fn`` as a loop over chunks of ``32 * num_warps * STRIP_ELEMENTS_PER_THREAD`` lanes, when
    it qualifies (module docstring) and its block puts more than ``max_per_thread`` elements on
    each thread; None otherwise (``fn`` is then lowered as it is)."""
    n = _common_length(fn)
    nt = 32 * num_warps
    if n is None or -(-n // nt) <= max_per_thread:
        return None
    m = nt * STRIP_ELEMENTS_PER_THREAD
    if n % m or not _lanewise(fn):
        return None
    return _rewrite(fn, n, m)


def strip_shape(original: Function, stripped: Function | None) -> tuple[int, ...]:
    """``(block lanes, lanes per iteration)`` of a :func:`strip_mine` result; ``()`` for None."""
    if stripped is None:
        return ()
    (loop,) = (op for op in stripped.body.ops if op.op == "for")
    return (_common_length(original), loop.operands[2].owner.attrs["value"])


def _common_length(fn: Function) -> int | None:
    """The length ``N`` when every block value of ``fn`` has shape ``(N,)`` and there is no
    control flow; None otherwise (also when there are no block values)."""
    lengths: set[tuple[int, ...]] = set()
    for op in fn.body.ops:
        if op.regions:
            return None
        for v in (*op.operands, *op.results):
            if not v.type.is_scalar:
                lengths.add(v.type.shape)
    if len(lengths) != 1:
        return None
    (shape,) = lengths
    return shape[0] if len(shape) == 1 else None


def _is_block_op(op: Operation) -> bool:
    return any(not v.type.is_scalar for v in (*op.operands, *op.results))


def _lanewise(fn: Function) -> bool:
    """Whether every block operation of ``fn`` acts lane by lane, there is no scalar effect and
    every memory access shares one injective offset vector (module docstring)."""
    offsets: dict[int, Value] = {}
    for op in fn.body.ops:
        if not _is_block_op(op):
            if not get(op.op).is_pure:  # a scalar load/store/atomic would repeat per chunk
                return False
            continue
        if op.op not in _LANEWISE and ELEMENTWISE not in get(op.op).traits:
            return False
        if op.op in ("load", "store"):
            addr = op.operands[0].owner
            if not (isinstance(addr, Operation) and addr.op == "addptr"):
                return False
            base = addr.operands[0].owner
            if not (isinstance(base, Operation) and base.op == "splat" and base.operands[0].owner is fn):
                return False
            offsets[id(addr.operands[1])] = addr.operands[1]
    if len(offsets) != 1:
        return False
    (offs,) = offsets.values()
    return _injective(fn, offs)


def _injective(fn: Function, offs: Value) -> bool:
    """Whether distinct lanes of ``offs`` are distinct elements: ``base + s * i`` with a known
    constant ``s != 0`` and ``|s| * N`` below the offset type's modulus (no two lanes wrap onto
    one value)."""
    from .analysis import AddressAnalysis

    f = AddressAnalysis(fn).get(offs)
    if f is None or len(f.strides) != 1 or not f.strides[0].const:
        return False
    return abs(f.strides[0].const) * offs.type.shape[0] < (1 << offs.type.elem.bits)


def _rewrite(fn: Function, n: int, m: int) -> Function:
    b = Builder(fn.name, [(p.name or f"arg{i}", p.type) for i, p in enumerate(fn.params)], fn.grid_rank)
    b.function.facts = fn.facts
    vmap: dict[int, Value] = {id(old): new for old, new in zip(fn.params, b.params)}
    block_ops = [op for op in fn.body.ops if _is_block_op(op)]
    for op in fn.body.ops:  # scalar ops first: they read no block value
        if not _is_block_op(op):
            _copy(b, op, vmap)
    lo, hi, step = b.const(0, i32), b.const(n, i32), b.const(m, i32)
    with b.region([scalar(i32)]) as body:
        base = b.op("splat", body.args[0], shape=(m,))
        for op in block_ops:
            b.loc = op.loc
            if op.op == "arange":
                start = op.attrs["start"]
                vmap[id(op.result)] = b.op("add", base, b.op("arange", start=start, end=start + m))
            elif op.op == "splat":
                vmap[id(op.result)] = b.op("splat", vmap[id(op.operands[0])], shape=(m,))
            else:
                _copy(b, op, vmap)
        b.yield_()
    b.for_(lo, hi, step, [], body)
    return b.finish()


def _copy(b: Builder, op: Operation, vmap: dict[int, Value]) -> None:
    b.loc = op.loc
    new = b.create(op.op, [vmap[id(v)] for v in op.operands], dict(op.attrs))
    for old, r in zip(op.results, new.results):
        r.name = old.name
        vmap[id(old)] = r
