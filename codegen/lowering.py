"""The lowering driver: IR function -> LLVM module, in ``ptx`` or ``host`` mode.

:class:`Lowerer` walks the IR in program order, keeps an environment from IR values to lowered
values (:class:`~eggpu.codegen.layout.LV`) and dispatches every operation to the handler in
:data:`eggpu.codegen.lower_ops.TABLE`. Structured control flow is lowered here:

* ``for``: Triton's stepped loop (``iv < hi``, ``iv += step``) where it is exact (a positive
  constant step and a bound proved or assumed, and checked at launch, to be at most
  ``2**31 - step``: :mod:`eggpu.codegen.loop_form`); otherwise the trip count of Python's
  ``range(lo, hi, step)`` is computed once in unsigned 32-bit arithmetic (no overflow for any
  bounds; step 0 runs zero times), then a counted loop runs with ``iv = lo + k * step``; every carried value gets one phi (scalars) or one phi per
  owned element slot (blocks), except a tensor-core accumulator that only the body's ``dot``
  updates: one phi per mma fragment register (:mod:`eggpu.codegen.mma_carry`);
* ``while``: a loop head with one phi per carried value slot that runs the condition region
  and branches to the body region or out;
* ``if``: a branch on the (uniform) condition and phis for the results.

Conditions and loop bounds are IR scalars, which are uniform by construction, so branches never
diverge within a CTA (the host mode relies on this for lock-step execution).

Entry points: PTX ``{name}_entry_point(params...)`` (a kernel of ``.reqntid NT``, pointer
parameters in ``addrspace(1)``, bool scalars passed as bytes); host ``{name}_cta(params...,
i64 byte limit per pointer parameter, ptr error record, pid x/y/z, num_programs x/y/z, smem)``
plus ``{name}_grid(ptr args, i32 gx, i32 gy, i32 gz)``, which runs the programs in row-major
order (last axis fastest, like the interpreter) with one shared-memory buffer and
stops after a program whose bounds check failed (:mod:`eggpu.codegen.bounds`). ``args`` points
to one 8-byte slot per parameter holding a data pointer or the scalar's bits, then one slot
per pointer parameter with its byte limit, then the error record's address, then the address
of the shared-memory buffer (``shared_bytes`` bytes, 64-byte aligned, owned by the caller).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from llvmlite import ir

from eggpu.ir.dtypes import DType
from eggpu.ir.errors import CodegenError
from eggpu.ir.graph import Block, Function, Operation, Value
from eggpu.ir.ops import ELEMENTWISE, OPS
from eggpu.ir.types import BlockType

from . import schedule
from .analysis import AddressAnalysis, chunk_uniform, run_of
from .emitter import HOST, I8, I32, I64, PTX, VOID, Emitter
from .layout import LV, Layout, replicas_valid
from .loop_form import stepped_step
from .stripmine import strip_mine, strip_shape
from .target import check_dot_strategy, max_shared_bytes_of

MAX_SHARED_BYTES = 48 * 1024
"""Static shared memory limit of a CTA; beyond it the PTX uses dynamic shared memory, up to the
target's opt-in limit (:attr:`eggpu.codegen.target.Target.max_shared_bytes`)."""
MAX_BLOCK_NUMEL = 1 << 20
"""Largest block (elements of one block value) the lowering accepts: Triton's ``TRITON_MAX_TENSOR_NUMEL``."""
MAX_ELEMENTS_PER_THREAD = 1024
"""Largest ``ceil(numel / threads)`` the unrolled lowering accepts. Every thread's elements are
unrolled (one LLVM value per element slot), and LLVM's and ptxas' time grows faster than
linearly with that count (sm_90, ``num_warps=4``, this 2-core machine): a masked f32 kernel took
3.5 s at 32768 elements (256 per thread), 9-11 s at 131072 (1024; Triton 10.6 s) and 66 s at
262144 (2048); cross-entropy at 131072 7.5 s (Triton 36 s). A lane-wise kernel
(:mod:`eggpu.codegen.stripmine`) is strip-mined into a loop beyond 256 per thread instead and
never reaches this limit."""


@dataclass
class LoweredModule:
    """The result of lowering one IR function.

    ``llvm_ir``: LLVM IR text (verified); ``entry``: the entry function's name (PTX:
    ``{name}_entry_point``; host: ``{name}_grid``); ``num_threads``: threads per CTA;
    ``shared_bytes``: static shared memory the lowering uses; ``assumptions``: facts the code
    relies on that the launcher must check, e.g. ``{"x_ptr": "align16"}`` (the buffer's address
    is a multiple of 16 bytes); ``mode``: ``"ptx"`` or ``"host"``; ``kernel``: the IR name.
    """

    llvm_ir: str
    entry: str
    num_threads: int
    shared_bytes: int
    assumptions: dict[str, str] = field(default_factory=dict)
    mode: str = PTX
    kernel: str = ""
    param_names: tuple[str, ...] = ()
    bounds_checks: tuple = ()
    """Host mode: the :class:`~eggpu.codegen.bounds.BoundsCheck` of every checked access, in the
    order of their error codes (code = index + 1)."""
    pointer_params: tuple[str, ...] = ()
    """Host mode: the pointer parameters, in order, whose byte limits follow the parameter slots."""
    dots: tuple[dict, ...] = ()
    """One entry per ``dot`` op, in program order: ``{"shape": [M, N, K], "dtype", "strategy",
    "reason"}`` (:func:`eggpu.codegen.lower_dot.select_strategy`)."""
    dynamic_shared_bytes: int = 0
    """PTX mode: the dynamic shared memory a launch must provide (``shared_bytes`` when it is more
    than the 48 KiB a CTA may declare statically, else 0)."""
    strip_mined: tuple[int, int] = ()
    """``(block lanes, lanes per loop iteration)`` when the kernel was strip-mined
    (:mod:`eggpu.codegen.stripmine`), else empty."""
    prints: tuple = ()
    """Host mode: the :class:`~eggpu.codegen.host_debug.PrintSpec` of every ``device_print``, by print id."""


class Lowerer:
    """Lowers one IR function body with an :class:`Emitter` (see the module docstring)."""

    def __init__(self, fn: Function, em: Emitter, *, assume_aligned: bool = True):
        self.fn = fn
        self.em = em
        self.nt = em.nt
        self.facts = AddressAnalysis(fn)
        self.assume_aligned = assume_aligned
        self.assumptions: dict[str, str] = {}
        self.env: dict[int, LV] = {}
        self._scopes: list[int] = [0]
        self._next_scope = 1
        self.current_op: Operation | None = None
        self.bounds = None  # host mode: the BoundsChecker (eggpu.codegen.bounds)
        self.prints: list = []  # host mode: one host_debug.PrintSpec per device_print (LoweredModule.prints)
        self.dots: list[dict] = []  # the strategy chosen for each dot (LoweredModule.dots)
        self.smem_limit = MAX_SHARED_BYTES  # shared bytes a strategy may plan for (set by lower_function)
        self.op_overrides: dict[int, Callable] = {}  # id(op) -> handler replacing TABLE's (mma_carry)
        self.dot_strategy: str | None = None  # a forced key of lower_dot.DOT_STRATEGIES (set by lower_function)
        self.target_name = ""  # the GPU target's name, e.g. "sm_90a" (wgmma needs it; set by lower_function)
        self.num_stages = 1  # software-pipelining stages of tensor-core K loops (mma_pipeline; set by lower_function)
        self.loop_depth = 0  # how many for/while bodies enclose the op being lowered
        self.preheaders: list[tuple[Block, ir.Block]] = []  # (for body, its preheader), innermost last
        self.blocks: list[Block] = []  # the regions being lowered, innermost last
        self.fused_results: dict[int, LV] = {}  # id(op) -> result lowered early with a sibling (lower_reduce)

    # ------------------------------------------------------------ environment

    def get(self, v: Value) -> LV:
        try:
            return self.env[id(v)]
        except KeyError:
            raise CodegenError(f"{self.fn.name}: internal: value {v!r} used before it was lowered") from None

    def bind(self, v: Value, lv: LV) -> None:
        if lv.fn is not None and lv.src is None and v.type.shape == lv.type.shape:
            lv.src = v
        self.env[id(v)] = lv

    def layout(self, shape: tuple[int, ...]) -> Layout:
        return Layout(tuple(shape), self.nt)

    def error(self, msg: str) -> CodegenError:
        op = self.current_op
        where = f" in {op.op}" if op is not None else ""
        loc = f" (at {op.loc})" if op is not None and op.loc is not None else ""
        return CodegenError(f"{self.fn.name}{where}: {msg}{loc}")

    # ------------------------------------------------------------ materialization

    def _cached(self, lv: LV) -> list[ir.Value] | None:
        for s in reversed(self._scopes):
            got = lv.cache.get(s)
            if got is not None:
                return got
        return None

    def elems(self, lv: LV) -> list[ir.Value]:
        """The thread-level values of every element slot of a block value (materialized once per region)."""
        if lv.elems is not None:
            return lv.elems
        got = self._cached(lv)
        if got is not None:
            return got
        lay = self.layout(lv.type.shape)
        if lv.u is not None:
            v = self.em.spread(lv.u)
            out = [v] * lay.per
        else:
            run = self._chunk_constant(lv, lay)
            out = [lv.fn(lay.coords(self.em, j - j % run)) for j in range(lay.per)]  # type: ignore[misc]
        lv.cache[self._scopes[-1]] = out
        return out

    def _chunk_constant(self, lv: LV, lay: Layout) -> int:
        """``lay.vec`` when the lazy value is proven constant on each layout chunk (a mask
        :func:`~eggpu.codegen.analysis.chunk_uniform` proves so, an index whose run has step 0:
        ``rindex < rnumel`` with ``rnumel`` divisible by 16, ``x // 768``), else 1. Such a value is
        computed once per chunk (its first slot) and shared by the chunk's slots, rather than
        once per slot (LLVM cannot tell ``4t + 1 < n`` from ``4t < n`` without the fact). A
        chunk lies in one row when ``vec`` divides the last dimension; unowned slots take
        don't-care values either way."""
        v, V = lv.src, lay.vec
        if v is None or V == 1 or lay.rep or not v.type.shape or v.type.shape[-1] % V:
            return 1
        elem = v.type.elem
        if not isinstance(elem, DType):
            return 1
        if elem.is_bool:
            return V if chunk_uniform(v, V, self.facts) else 1
        if elem.is_int:
            r = run_of(v, V, self.facts)
            return V if r is not None and r.step == 0 else 1
        return 1

    def elem(self, lv: LV, j: int) -> ir.Value:
        return self.elems(lv)[j]

    def at(self, lv: LV, coords: list[ir.Value]) -> ir.Value:
        """Thread-level value of a uniform or lazy value at the given element coordinates. A lazy
        value's answer is remembered for the coordinates object (one element's evaluation passes
        the same list to every operand) while the builder stays in its block: a shared operand is
        emitted once per element, not once per path (exponential: docs/codegen.md, "lazy")."""
        if lv.u is not None:
            return self.em.spread(lv.u)
        if lv.fn is not None:
            memo = lv.memo
            if memo is None or memo[0] is not coords or memo[1] is not self.em.b.block:
                value = lv.fn(coords)  # (the block after emitting it: where the value is defined)
                memo = lv.memo = (coords, self.em.b.block, value)
            return memo[2]
        raise self.error("internal: at() on a distributed value")

    def uniform(self, lv: LV) -> ir.Value:
        if lv.u is None:
            raise self.error(f"internal: expected a uniform value, got {lv}")
        return lv.u

    def record_assumption(self, param: str, what: str) -> None:
        self.assumptions[param] = what

    # ------------------------------------------------------------ walking

    def run(self, param_values: list[ir.Value]) -> None:
        for p, v in zip(self.fn.params, param_values):
            self.bind(p, LV(p.type, u=v))
        self.block(self.fn.body)

    def block(self, blk: Block) -> list[LV]:
        self.blocks.append(blk)
        try:
            return self._block_ops(blk)
        finally:
            self.blocks.pop()

    def _block_ops(self, blk: Block) -> list[LV]:
        from .lower_ops import TABLE

        for op in blk.ops:
            self.current_op = op
            if op.op == "yield":
                return [self.get(v) for v in op.operands]
            if op.op == "for":
                self._for(op)
                continue
            if op.op == "if":
                self._if(op)
                continue
            if op.op == "while":
                self._while(op)
                continue
            handler = self.op_overrides.get(id(op)) or TABLE.get(op.op)
            if handler is None:
                from .lower_ops import UNSUPPORTED

                reason = UNSUPPORTED.get(op.op, "no lowering")
                raise self.error(f"op {op.op!r} cannot be lowered: {reason}")
            results = handler(self, op)
            for r, lv in zip(op.results, results):
                self.bind(r, lv)
        return []

    def _push_scope(self) -> None:
        self._scopes.append(self._next_scope)
        self._next_scope += 1

    def _pop_scope(self) -> None:
        self._scopes.pop()

    def _carried_types(self, lvs: list[LV]) -> list[tuple[bool, ir.Type, int]]:
        out = []
        for lv in lvs:
            t = lv.type
            rt = self.em.reg_type(t.dtype if not t.is_pointer else None)
            if t.is_scalar:
                out.append((True, rt, 1))
            else:
                out.append((False, self.em.thread_type(rt), self.layout(t.shape).per))
        return out

    def _flatten(self, lvs: list[LV]) -> list[ir.Value]:
        vals: list[ir.Value] = []
        for lv in lvs:
            if lv.type.is_scalar:
                vals.append(self.uniform(lv))
            else:
                vals.extend(self.elems(lv))
        return vals

    def _rebuild(self, types: list[BlockType], vals: list[ir.Value], rep: bool = False) -> list[LV]:
        out, i = [], 0
        for t in types:
            if t.is_scalar:
                out.append(LV(t, u=vals[i]))
                i += 1
            else:
                n = self.layout(t.shape).per
                out.append(LV(t, elems=list(vals[i:i + n]), rep=rep))
                i += n
        return out

    def _for(self, op: Operation) -> None:
        """A counted loop (module docstring). A carried f32 block that the body only updates with
        a tensor-core ``dot`` stays in mma fragment registers (:mod:`eggpu.codegen.mma_carry`), and
        that dot's operand loads may become ``cp.async`` stages (:mod:`eggpu.codegen.mma_pipeline`:
        a prologue before the loop, one extra carried list with the look-ahead address state)."""
        em, b = self.em, self.em.b
        lo, hi, step = (self.uniform(self.get(v)) for v in op.operands[:3])
        inits = [self.get(v) for v in op.operands[3:]]
        types = [v.type for v in op.operands[3:]]
        if any(o.op == "dot" for o in op.regions[0].walk()):
            from .mma_carry import find_carries
            from .mma_pipeline import plan_pipeline

            carries = find_carries(self, op, inits)
            pipe = plan_pipeline(self, op, carries)  # cp.async stages of the dot's loads (mma_pipeline)
        else:  # no dot in the body: nothing to carry in mma registers (and those modules stay unloaded)
            carries, pipe = {}, None
        init_lists = [carries[i].init(self, lv) if i in carries else self._flatten([lv]) for i, lv in enumerate(inits)]
        # Triton's stepped form where it is exact, else a counted loop (codegen/loop_form.py)
        stepped = stepped_step(self, op) if pipe is None else None
        trips = self._trip_count(lo, hi, step, op.operands[2]) if stepped is None else None
        if pipe is not None:
            init_lists.append(pipe.prologue(self, op, lo, step, trips, inits))
        pre = b.block
        head = em.new_block("for.head")
        body = em.new_block("for.body")
        done = em.new_block("for.done")
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I32)  # the counter k, or iv itself in the stepped form
        k.add_incoming(I32(0) if stepped is None else lo, pre)
        phi_lists = [[self._phi(v, pre) for v in vals] for vals in init_lists]
        if stepped is None:
            b.cbranch(b.icmp_unsigned("<", k, trips), body, done)
        else:
            b.cbranch(b.icmp_signed("<", k, hi), body, done)
        b.position_at_end(body)
        dirty_before = em.smem_dirty
        em.smem_dirty = True  # iteration k+1 may write while iteration k's reads are in flight
        touches = em.smem_touches
        region = op.regions[0]
        iv = b.add(lo, b.mul(k, step)) if stepped is None else k
        self.bind(region.args[0], LV(region.args[0].type, u=iv))
        filled = self._filled_carries(op, inits, carries)
        for i, (a, t, phis) in enumerate(zip(region.args[1:], types, phi_lists)):
            if i in carries:
                carries[i].begin(self, phis)
                self.bind(a, carries[i].placeholder(self, t))
            else:
                self.bind(a, self._rebuild([t], phis, i in filled)[0])
        ahead = pipe.begin(self, op, k, lo, step, trips, phi_lists[-1]) if pipe is not None else None
        self._push_scope()
        self.loop_depth += 1
        self.preheaders.append((region, pre))
        yields = self.block(region)
        self.preheaders.pop()
        self.loop_depth -= 1
        self.current_op = op
        if any(not replicas_valid(yields[i]) for i in filled):
            raise self.error("internal: a carried replicated block lost its copies in the loop body")
        new_lists = [carries[i].end(self) if i in carries else self._flatten([y]) for i, y in enumerate(yields)]
        self._pop_scope()
        if pipe is not None:
            pipe.end(self)
            new_lists.append(ahead)
        self._close_loop(head, k, b.add(k, I32(1 if stepped is None else stepped)), phi_lists, new_lists)
        b.position_at_end(done)
        em.smem_dirty = dirty_before if em.smem_touches == touches and pipe is None else True
        if pipe is not None:
            pipe.finish(self)
        for i, (r, t, phis) in enumerate(zip(op.results, types, phi_lists)):
            self.bind(r, carries[i].result(self, phis, t) if i in carries else self._rebuild([t], phis, i in filled)[0])

    def _phi(self, v, pre):
        """A phi of ``v``'s type at the current block, ``v`` incoming from ``pre``."""
        p = self.em.b.phi(v.type)
        p.add_incoming(v, pre)
        return p

    def _close_loop(self, head, k, k_next, phi_lists, new_lists) -> None:
        """Branch back to ``head`` from the current block (the latch), which supplies ``k_next``
        and each carried list's new values to the loop's phis."""
        b = self.em.b
        latch = b.block
        b.branch(head)
        k.add_incoming(k_next, latch)
        for phis, vals in zip(phi_lists, new_lists):
            for p, v in zip(phis, vals, strict=True):
                if v.type != p.type:
                    raise self.error(f"internal: carried value type {v.type} != {p.type}")
                p.add_incoming(v, latch)

    def _filled_carries(self, op: Operation, inits: list[LV], carries: dict) -> set[int]:
        """Indices of the loop's carried blocks of a replicated layout whose copies stay filled
        (:func:`~eggpu.codegen.layout.replicas_valid`), so a reduction after the loop needs no
        shared memory: the initial value's copies are filled and the body yields a value computed
        by loads and elementwise ops (not inline asm) from values whose copies are filled, the
        carried ones included (the greatest such set). Exactly what the handlers mark, which
        :meth:`_for` checks on the yielded values."""
        region = op.regions[0]
        args = region.args[1:]
        cand = {i for i, (a, lv) in enumerate(zip(args, inits))
                if i not in carries and not a.type.is_scalar and self.layout(a.type.shape).rep and replicas_valid(lv)}
        term = region.terminator
        if not cand or term is None:
            return set()
        defs = {id(r): o for o in region.ops for r in o.results}
        arg_of = {id(a): i for i, a in enumerate(args)}
        while True:
            keep = {i for i in cand if _copies_filled(term.operands[i], defs, arg_of, cand, self.env, {})}
            if keep == cand:
                return cand
            cand = keep

    def _trip_count(self, lo: ir.Value, hi: ir.Value, step: ir.Value, step_ir: Value) -> ir.Value:
        """Iterations of ``range(lo, hi, step)`` as u32 (0 for step 0)."""
        b = self.em.b
        c = _const_attr(step_ir)

        def up() -> ir.Value:
            n = b.sub(hi, lo)
            if c != 1:
                n = b.add(b.udiv(b.sub(n, I32(1)), step), I32(1))
            return b.select(b.icmp_signed(">", hi, lo), n, I32(0))

        def down() -> ir.Value:
            n = b.add(b.udiv(b.sub(b.sub(lo, hi), I32(1)), b.sub(I32(0), step)), I32(1))
            return b.select(b.icmp_signed(">", lo, hi), n, I32(0))

        if c is not None:
            if c > 0:
                return up()
            if c < 0:
                return down()
            return I32(0)
        safe = b.select(b.icmp_signed("==", step, I32(0)), I32(1), step)
        step_pos = b.icmp_signed(">", step, I32(0))
        n_up = b.select(b.icmp_signed(">", hi, lo), b.add(b.udiv(b.sub(b.sub(hi, lo), I32(1)), safe), I32(1)), I32(0))
        n_dn = b.select(b.icmp_signed(">", lo, hi),
                        b.add(b.udiv(b.sub(b.sub(lo, hi), I32(1)), b.sub(I32(0), safe)), I32(1)), I32(0))
        n = b.select(step_pos, n_up, n_dn)
        return b.select(b.icmp_signed("==", step, I32(0)), I32(0), n)

    def _while(self, op: Operation) -> None:
        """A loop whose head runs the condition region on the phis of the carried values; the
        condition is a scalar (uniform), so every thread of the CTA leaves the loop together."""
        em, b = self.em, self.em.b
        inits = [self.get(v) for v in op.operands]
        types = [v.type for v in op.operands]
        init_vals = self._flatten(inits)
        pre = b.block
        head = em.new_block("while.head")
        body = em.new_block("while.body")
        done = em.new_block("while.done")
        b.branch(head)
        b.position_at_end(head)
        phis = []
        for v in init_vals:
            p = b.phi(v.type)
            p.add_incoming(v, pre)
            phis.append(p)
        dirty_before = em.smem_dirty
        em.smem_dirty = True  # the next iteration may write while this one's reads are in flight
        touches = em.smem_touches
        cond_region, body_region = op.regions
        for a, lv in zip(cond_region.args, self._rebuild(types, list(phis))):
            self.bind(a, lv)
        self._push_scope()
        self.loop_depth += 1
        (cond_lv,) = self.block(cond_region)
        self.loop_depth -= 1
        self.current_op = op
        cond = self.uniform(cond_lv)
        self._pop_scope()
        b.cbranch(cond, body, done)
        b.position_at_end(body)
        for a, lv in zip(body_region.args, self._rebuild(types, list(phis))):
            self.bind(a, lv)
        self._push_scope()
        self.loop_depth += 1
        yields = self.block(body_region)
        self.loop_depth -= 1
        self.current_op = op
        new_vals = self._flatten(yields)
        self._pop_scope()
        latch = b.block
        b.branch(head)
        for p, v in zip(phis, new_vals):
            if v.type != p.type:
                raise self.error(f"internal: carried value type {v.type} != {p.type}")
            p.add_incoming(v, latch)
        b.position_at_end(done)
        em.smem_dirty = dirty_before if em.smem_touches == touches else True
        for r, lv in zip(op.results, self._rebuild(types, list(phis))):
            self.bind(r, lv)

    def _if(self, op: Operation) -> None:
        em, b = self.em, self.em.b
        cond = self.uniform(self.get(op.operands[0]))
        then_bb = em.new_block("if.then")
        else_bb = em.new_block("if.else")
        merge = em.new_block("if.end")
        b.cbranch(cond, then_bb, else_bb)
        types = [r.type for r in op.results]
        incoming = []
        dirty = em.smem_dirty
        ends: list[bool] = []
        for region, bb in zip(op.regions, (then_bb, else_bb)):
            b.position_at_end(bb)
            em.smem_dirty = dirty
            self._push_scope()
            yields = self.block(region)
            self.current_op = op
            vals = self._flatten(yields)
            self._pop_scope()
            incoming.append((vals, b.block))
            ends.append(em.smem_dirty)
            b.branch(merge)
        b.position_at_end(merge)
        em.smem_dirty = any(ends)  # reads in flight after either branch
        merged = []
        for i, v in enumerate(incoming[0][0]):
            p = b.phi(v.type)
            for vals, blk in incoming:
                p.add_incoming(vals[i], blk)
            merged.append(p)
        for r, lv in zip(op.results, self._rebuild(types, merged)):
            self.bind(r, lv)


def _copies_filled(v: Value, defs: dict[int, Operation], arg_of: dict[int, int], cand: set[int],
                   env: dict[int, LV], memo: dict[int, bool]) -> bool:
    """Whether a loop body's value ``v`` has its replicated copies filled when the carried
    values ``cand`` (indices, ``arg_of``: region argument -> index) have (``defs``: the body's
    top-level results -> their op; ``env``: values lowered before the loop). ``splat`` and
    ``arange`` lower to uniform and lazy values, evaluated at every slot's element."""
    key = id(v)
    if key not in memo:
        if v.type.is_scalar:
            memo[key] = True
        elif key in arg_of:
            memo[key] = arg_of[key] in cand
        elif key in defs:
            o = defs[key]
            memo[key] = o.op in ("splat", "arange") or ((o.op == "load" or (ELEMENTWISE in OPS[o.op].traits and o.op != "inline_asm"))
                         and all(_copies_filled(x, defs, arg_of, cand, env, memo) for x in o.operands))
        else:
            memo[key] = key in env and replicas_valid(env[key])
    return memo[key]


def _const_attr(v: Value) -> int | None:
    op = v.owner
    if getattr(op, "op", None) == "const":
        return int(op.attrs["value"])  # type: ignore[union-attr]
    return None


# ---------------------------------------------------------------- entry points


def _check_params(fn: Function) -> None:
    for p in fn.params:
        if not p.type.is_scalar:
            raise CodegenError(f"{fn.name}: parameter '{p.name}' has type {p.type}; only pointers and scalars "
                               "can be kernel parameters in compiled code")


def check_block_sizes(fn: Function, num_warps: int, *, per_thread: bool = True) -> None:
    """CodegenError naming ``fn`` and the size when its largest block value has more than
    :data:`MAX_BLOCK_NUMEL` elements, or more than :data:`MAX_ELEMENTS_PER_THREAD` per thread
    at ``num_warps`` (the message says which ``num_warps`` would do; checked only with
    ``per_thread``: a kernel :func:`~eggpu.codegen.stripmine.strip_mine` loops over is exempt)."""
    biggest: BlockType | None = None
    for op in fn.walk():
        for v in (*op.operands, *op.results):
            t = v.type
            if not t.is_scalar and (biggest is None or t.numel > biggest.numel):
                biggest = t
    if biggest is None:
        return
    n = biggest.numel
    shape = "x".join(map(str, biggest.shape))
    if n > MAX_BLOCK_NUMEL:
        raise CodegenError(f"{fn.name}: a block of {n} elements ({shape}) is larger than the largest supported "
                           f"block, {MAX_BLOCK_NUMEL} elements (2**20, Triton's limit); use a smaller block")
    nt = num_warps * 32
    per = -(-n // nt)
    if per_thread and per > MAX_ELEMENTS_PER_THREAD:
        fits = [w for w in (1, 2, 4, 8, 16, 32) if -(-n // (32 * w)) <= MAX_ELEMENTS_PER_THREAD]
        fix = f"compile with num_warps={fits[0]} or use a smaller block" if fits else "use a smaller block"
        raise CodegenError(
            f"{fn.name}: a block of {n} elements ({shape}) puts {per} elements on each of the {nt} threads "
            f"(num_warps={num_warps}); the lowering unrolls each thread's elements and supports at most "
            f"{MAX_ELEMENTS_PER_THREAD} per thread (compile time grows faster than linearly; only a kernel that "
            f"works lane by lane, its loads and stores at one offset vector, is looped instead); {fix}")


def _param_abi_type(em: Emitter, t: BlockType) -> ir.Type:
    if t.is_pointer:
        return em.global_ptr
    dt = t.elem
    assert isinstance(dt, DType)
    return I8 if dt.is_bool else em.reg_type(dt)


def _param_values(em: Emitter, fn: Function, args) -> list[ir.Value]:
    out = []
    for p, a in zip(fn.params, args):
        a.name = p.name or ""
        t = p.type
        if not t.is_pointer and t.elem.is_bool:  # type: ignore[union-attr]
            out.append(em.b.icmp_unsigned("!=", a, I8(0)))
        else:
            out.append(a)
    return out


def _begin_entry(fn: Function, module: ir.Module, em: Emitter, mode: str, abi: list) -> tuple:
    """The entry function of ``fn`` begun in ``em``: ``(entry name, llvm function, parameter
    values, host CTA arguments)``. PTX: the kernel itself. Host: the per-CTA function, whose
    arguments are the parameters, one i64 byte limit per pointer parameter and the error record
    (bounds checks, :mod:`eggpu.codegen.bounds`), program ids, grid size and shared memory;
    the last item is ``(args, number of parameters, index of the first program id)``."""
    if mode == PTX:
        entry = f"{fn.name}_entry_point"
        module.triple = "nvptx64-nvidia-cuda"
        func = ir.Function(module, ir.FunctionType(VOID, abi), entry)
        em.begin_function(func)
        return entry, func, _param_values(em, fn, func.args), None
    ptr_params = [p for p in fn.params if p.type.is_pointer]
    cta_t = ir.FunctionType(VOID, abi + [I64] * len(ptr_params) + [ir.PointerType()] + [I32] * 6 + [em.shared_ptr])
    func = ir.Function(module, cta_t, f"{fn.name}_cta")
    func.linkage = "internal"
    a = func.args
    n = len(fn.params)
    m = n + len(ptr_params) + 1
    em.begin_function(func, pids=a[m:m + 3], nprogs=a[m + 3:m + 6], smem=a[m + 6])
    return f"{fn.name}_grid", func, _param_values(em, fn, a[:n]), (a, n, m)


def lower_function(fn: Function, mode: str, num_warps: int, *, fast_math: bool = False,
                   assume_aligned: bool = True, verify_llvm: bool = True,
                   max_shared_bytes: int = MAX_SHARED_BYTES,
                   target_name: str = "", sm: int | None = None,
                   num_stages: int | None = 1, dot_strategy: str | None = None) -> tuple[ir.Module, LoweredModule]:
    """Lower ``fn`` in ``mode`` (``"ptx"`` or ``"host"``); return the llvmlite module and its summary.

    ``sm`` is the compute capability (``90`` for sm_90/sm_90a) that GPU-specific strategies
    (tensor-core ``dot``) are chosen for; in host mode it is the GPU whose data movement the
    CPU build executes. None: no such strategy (the portable ones). ``num_stages``: the
    ``cp.async`` stages of a software-pipelined tensor-core K loop (1: none;
    :mod:`eggpu.codegen.mma_pipeline`; None: the default number, fewer where the stage buffers
    do not fit in shared memory); the host build runs the same schedule. ``dot_strategy``:
    None (automatic) or the key of :data:`eggpu.codegen.lower_dot.DOT_STRATEGIES` every ``dot``
    must use (CodegenError naming the dot where it does not apply; ``"wgmma"`` needs ``sm_90a``).

    With ``verify_llvm`` the text is parsed and checked by LLVM's verifier (CodegenError with
    LLVM's message otherwise); callers that parse the text themselves pass False.

    PTX: a kernel needing up to :data:`MAX_SHARED_BYTES` of shared memory declares it
    statically; one needing more, up to ``max_shared_bytes`` (the target's opt-in limit), uses
    dynamic shared memory (``LoweredModule.dynamic_shared_bytes``, to be given at launch); one
    needing more than that raises CodegenError naming ``fn``, the bytes, the limit and
    ``target_name``.
    """
    from eggpu.ir.verifier import verify

    verify(fn)
    _check_params(fn)
    stripped = strip_mine(fn, num_warps)  # a loop over chunks, when lane-wise and wide
    check_block_sizes(fn, num_warps, per_thread=stripped is None)
    strip = strip_shape(fn, stripped)
    fn = stripped or fn
    module = ir.Module(name=fn.name)
    em = Emitter(module, mode, num_warps, fast_math=fast_math, sm=sm)
    abi = [_param_abi_type(em, p.type) for p in fn.params]
    entry, func, params, cta_args = _begin_entry(fn, module, em, mode, abi)
    lw = Lowerer(fn, em, assume_aligned=assume_aligned)
    lw.num_stages = num_stages
    lw.dot_strategy = check_dot_strategy(dot_strategy, fn.name)
    lw.target_name = target_name
    # what a strategy may plan for (lower_mma): the target's limit; a host build, the emulated GPU's
    lw.smem_limit = (max(max_shared_bytes, MAX_SHARED_BYTES) if mode == PTX
                     else max_shared_bytes_of(sm) if sm else MAX_SHARED_BYTES)
    if mode == HOST:
        from .bounds import BoundsChecker

        a, n, m = cta_args
        ptr_index = [i for i, p in enumerate(fn.params) if p.type.is_pointer]
        bases = {fn.params[i].name or f"arg{i}": (a[i], a[n + k]) for k, i in enumerate(ptr_index)}
        lw.bounds = BoundsChecker(fn, em, bases, a[m - 1], list(a[m:m + 3]))
    lw.run(params)
    em.b.ret_void()
    dynamic = mode == PTX and _needs_dynamic_shared(fn, em.smem_bytes, max_shared_bytes, target_name)
    em.finish(dynamic_shared=dynamic)
    if mode == PTX:
        from .ptx import mark_kernel

        mark_kernel(module, entry, em.nt)
    else:
        _host_grid(module, em, fn, func, abi)
    if schedule.ENABLED:  # operands on demand: fewer values live across libdevice's branches
        for f in module.functions:
            if f.blocks:
                schedule.order_on_demand(f)
    text = str(module)
    if verify_llvm:
        _verify(text, fn.name, mode)
    names = tuple(p.name or f"arg{i}" for i, p in enumerate(fn.params))
    lm = LoweredModule(text, entry, em.nt, em.smem_bytes, dict(lw.assumptions), mode, fn.name, names,
                       tuple(lw.bounds.checks) if lw.bounds is not None else (),
                       tuple(nm for nm, p in zip(names, fn.params) if p.type.is_pointer), tuple(lw.dots),
                       em.smem_bytes if dynamic else 0, strip, tuple(lw.prints))
    return module, lm


def _needs_dynamic_shared(fn: Function, nbytes: int, max_shared_bytes: int, target_name: str) -> bool:
    """Whether a GPU kernel using ``nbytes`` of shared memory needs it dynamic (over the static
    limit); CodegenError when it is over the target's limit too."""
    limit = max(max_shared_bytes, MAX_SHARED_BYTES)
    if nbytes > limit:
        on = f" on {target_name}" if target_name else ""
        raise CodegenError(f"{fn.name}: needs {nbytes} bytes of shared memory, more than the {limit} bytes "
                           f"a CTA may use{on}; use smaller blocks (or a target with more shared memory)")
    return nbytes > MAX_SHARED_BYTES


def _host_grid(module: ir.Module, em: Emitter, fn: Function, cta: ir.Function, abi: list[ir.Type]) -> None:
    ptr = ir.PointerType()
    grid = ir.Function(module, ir.FunctionType(VOID, [ptr, I32, I32, I32]), f"{fn.name}_grid")
    args, gx, gy, gz = grid.args
    b = em.builder(grid.append_basic_block("entry"))
    vals = []
    for i, t in enumerate(abi):
        slot = b.gep(args, [I64(8 * i)], source_etype=I8)
        vals.append(b.load(slot, typ=t, align=8))
    n = len(abi)
    nptr = sum(1 for p in fn.params if p.type.is_pointer)
    for k in range(nptr):  # byte limits of the pointer parameters
        vals.append(b.load(b.gep(args, [I64(8 * (n + k))], source_etype=I8), typ=I64, align=8))
    record = b.load(b.gep(args, [I64(8 * (n + nptr))], source_etype=I8), typ=ptr, align=8)
    vals.append(record)
    # the shared-memory buffer is on the heap (the caller's): a stack array would make the
    # stack use grow with the kernel's shared memory (up to 227 KiB with dynamic shared memory)
    smem = b.load(b.gep(args, [I64(8 * (n + nptr + 1))], source_etype=I8), typ=ptr, align=8)
    dims = (gx, gy, gz)

    def loop(axis: int, pids: list[ir.Value]) -> None:
        pre = b.block
        head = grid.append_basic_block(f"g{axis}.head")
        body = grid.append_basic_block(f"g{axis}.body")
        done = grid.append_basic_block(f"g{axis}.done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I32)
        i.add_incoming(I32(0), pre)
        b.cbranch(b.icmp_signed("<", i, dims[axis]), body, done)
        b.position_at_end(body)
        if axis == 2:
            b.call(cta, vals + pids + [i] + list(dims) + [smem])
            # a failed bounds check filled the record: run no further program
            failed = b.icmp_unsigned("!=", b.load(record, typ=I64, align=8), I64(0))
            stop = grid.append_basic_block("g.stop")
            go_on = grid.append_basic_block("g.next")
            b.cbranch(failed, stop, go_on)
            b.position_at_end(stop)
            b.ret_void()
            b.position_at_end(go_on)
        else:
            loop(axis + 1, pids + [i])
        nxt = b.add(i, I32(1))
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)

    loop(0, [])
    b.ret_void()


def _verify(text: str, name: str, mode: str) -> None:
    import llvmlite.binding as llvm

    from .ptx import _LOCK  # llvmlite parses into LLVM's global context: one thread at a time

    try:
        with _LOCK:
            mod = llvm.parse_assembly(text)
            mod.verify()
    except RuntimeError as exc:
        raise CodegenError(f"{name}: the {mode} lowering produced invalid LLVM IR: {str(exc).strip()}") from exc


__all__ = ["HOST", "PTX", "LoweredModule", "Lowerer", "lower_function"]
