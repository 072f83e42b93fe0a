"""Bounds checks of the host build: ``run_cpu`` never reads or writes outside the arrays it was given.

Only the ``host`` mode emits them; the PTX is unchanged. Before every global ``load``,
``store`` and atomic, the lowering checks the address of every *active* lane (its slot owned
by the thread and its mask lane true; masked-off lanes are never checked, exactly as they are
never accessed) against the buffer of the pointer parameter the address derives from:

* **Provenance.** :func:`eggpu.ir.effects.pointer_origins` follows a pointer operand back through the IR
  (``addptr``, the shape ops, ``where``, ``for`` carried values, ``if`` results) to the pointer
  parameters it may derive from. With one origin (the usual case, and the interpreter's rule:
  a pointer stays in the buffer of its base parameter, even if arithmetic makes it point into
  another array) the address must lie inside that parameter's array. When control flow merges
  pointers of several parameters (``p = a_ptr if c else b_ptr``), the static origin is not one
  parameter: the address must then lie inside *any* of those parameters' arrays, and an error
  gives the offset from the first of them (a pointer whose origin cannot be traced at all —
  not produced by the frontend — is checked against every pointer parameter the same way).
* **The check**: ``d = address - base`` in bytes must satisfy ``d <u limit`` where ``limit =
  nbytes - itemsize + 1`` (0 for an empty array), so a negative offset fails too. A block
  access spills its pointer and mask vectors to stack buffers and runs one scalar loop over the
  CTA's lanes that checks every slot and keeps the failing lane with the smallest flat index
  (the first in row-major order, as the interpreter reports it) and its offset: scalar code
  keeps the JIT cheap (arithmetic on ``<NT x i64>`` vectors doubled the JIT time of the library
  kernels; the loop adds ~20 %). A scalar access is one compare. On a failure a cold block
  writes the error record and returns from the CTA function; the grid loop stops at a non-zero
  record and :meth:`eggpu.codegen.host.HostKernel.run` raises
  :class:`~eggpu.ir.errors.OutOfBoundsError` in the interpreter's words.

* **Raw addresses** (a pointer that may derive from ``int_to_ptr``: :data:`RAW_ORIGIN` among its
  origins, :mod:`eggpu.ir.raw_memory`): the address is looked up in the launch's address table,
  every pointer argument's array and every ``buffers=`` array, by an internal function
  ``eggpu_raw_inside`` (a loop over the table): the element must lie inside one array, be aligned
  to its size and, for a write or an atomic, the array must be writable. The error names the
  address, in the interpreter's words (:func:`eggpu.ir.raw_memory.raw_message`).

Error record (``RECORD_SLOTS`` i64 values): ``[0]`` check index + 1 (0: no error), ``[1]`` the
failing lane's flat index in the access's block (-1 for a scalar access), ``[2]`` its element
offset (from the first candidate's base; a raw access: its address), ``[3..5]`` the program id;
``[6]``, ``[7]`` are inputs: the address of the address table (``int64[n, 3]``: start address,
size in bytes, writable) and ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from eggpu.ir.dtypes import DType
from eggpu.ir.effects import RAW_ORIGIN, pointer_origins
from eggpu.ir.graph import Function, Operation

from .emitter import I8, I32, I64, Emitter, is_const_false
from .llvm_values import I1

RECORD_SLOTS = 8
RAW_TABLE_SLOT = 6
"""Record slots 6 and 7: the address table of raw-address checks and its length (inputs)."""
I64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class BoundsCheck:
    """One checked access of the host module: what the error message needs to name it."""

    op: str
    loc: str | None
    verb: str  # "reads", "writes", "updates" (the interpreter's words)
    params: tuple[str, ...]  # the pointer parameters the address may derive from, in parameter order
    shape: tuple[int, ...]  # the access's block shape; () for a scalar access
    dtype: DType | None = None  # the accessed element dtype (the message of a raw access)

    @property
    def raw(self) -> bool:
        """Whether the address may be raw (``int_to_ptr``): checked against the address table."""
        return self.params == (RAW_ORIGIN,)


class BoundsChecker:
    """Emits the checks of one host-mode lowering (see the module docstring).

    ``bases``: pointer parameter name -> (its LLVM pointer argument, its i64 byte limit
    argument); ``record``: the error record pointer argument; ``pids``: the CTA's program ids.
    ``checks`` collects one :class:`BoundsCheck` per emitted check, in emission order.
    """

    def __init__(self, fn: Function, em: Emitter, bases: dict[str, tuple[ir.Value, ir.Value]], record: ir.Value,
                 pids: list[ir.Value]):
        self.fn = fn
        self.em = em
        self.bases = bases
        self.record = record
        self.pids = pids
        self.origins = pointer_origins(fn)
        self.checks: list[BoundsCheck] = []

    def check(self, lw, op: Operation, ptrs: list[ir.Value], masks: list[ir.Value | None], elem_bytes: int,
              verb: str) -> None:
        """Check the active lanes of every slot (``ptrs[j]`` under ``masks[j]``; None = active)
        of ``op``; return from the CTA with the error record filled when one is outside."""
        b = self.em.b
        names = self.origins.get(id(op.operands[0])) or tuple(self.bases)
        if RAW_ORIGIN in names:  # every array of the launch is a candidate: the address table
            names = (RAW_ORIGIN,)
            self._raw_access = (elem_bytes, verb != "reads")
        else:
            names = tuple(n for n in names if n in self.bases) or tuple(self.bases)
        shape = tuple(op.operands[0].type.shape)
        code = len(self.checks) + 1
        self.checks.append(BoundsCheck(op.op, str(op.loc) if op.loc is not None else None, verb, names, shape,
                                       op.operands[0].type.dtype))
        live = [(j, p, m) for j, (p, m) in enumerate(zip(ptrs, masks)) if not is_const_false(m)]
        if not live or not names:  # (no pointer parameter: nothing to check against)
            return
        if shape and isinstance(live[0][1].type, ir.VectorType):
            lane, diff = self._scan(lw.layout(shape), live, names)
            failed = b.icmp_unsigned("!=", lane, I64(I64_MAX))
        else:  # a scalar access (uniform pointer): no lane
            (_j, p, m), = live
            diff, inside = self._inside(p, names)
            failed = b.not_(inside) if m is None else b.and_(b.not_(inside), m)
            lane = I64(-1)
        self._fail_when(code, failed, lane, lambda: diff if names == (RAW_ORIGIN,) else b.sdiv(diff, I64(elem_bytes)))

    def report(self, check: object, failed: ir.Value, lane: ir.Value, value: ir.Value | None = None) -> None:
        """Register ``check`` (a failure kind of its own, e.g. a device assertion: the host runner
        turns its code back into it) and return from the CTA with the error record filled when the
        i1 ``failed`` holds; ``lane`` is the i64 flat index of the failing lane, ``value`` an i64
        stored in the offset slot (default 0; a ``jn`` order for codegen/lower_libdevice.py)."""
        self.checks.append(check)  # type: ignore[arg-type]
        self._fail_when(len(self.checks), failed, lane, lambda: I64(0) if value is None else value)

    def _fail_when(self, code: int, failed: ir.Value, lane: ir.Value, offset) -> None:
        em, b = self.em, self.em.b
        cold = em.new_block("oob")
        cont = em.new_block("inbounds")
        b.cbranch(failed, cold, cont)
        b.position_at_end(cold)
        for i, v in enumerate([I64(code), lane, offset()] + [b.zext(p, I64) for p in self.pids]):
            b.store(v, b.gep(self.record, [I64(i)], source_etype=I64))
        b.ret_void()
        b.position_at_end(cont)

    def _inside(self, p: ir.Value, names: tuple[str, ...]) -> tuple[ir.Value, ir.Value]:
        """Scalar pointer ``p``: (its byte offset from the first candidate's base, i1 inside some candidate)."""
        b = self.em.b
        addr = b.ptrtoint(p, I64)
        if names == (RAW_ORIGIN,):
            size, write = self._raw_access
            return addr, b.call(self._raw_fn(), [addr, I64(size), I64(int(write)), self.record])
        first = None
        ok = None
        for name in names:
            base, limit = self.bases[name]
            d = b.sub(addr, b.ptrtoint(base, I64))
            first = d if first is None else first
            inside = b.icmp_unsigned("<", d, limit)
            ok = inside if ok is None else b.or_(ok, inside)
        assert first is not None and ok is not None
        return first, ok

    def _raw_fn(self) -> ir.Function:
        """``i1 eggpu_raw_inside(i64 addr, i64 size, i64 write, ptr record)``: whether a ``size``-byte
        element at ``addr`` lies inside an array of the record's address table, aligned, and in a
        writable one when ``write`` (module docstring). Emitted once per module."""
        module = self.em.module
        fn = module.globals.get("eggpu_raw_inside")
        if fn is not None:
            return fn
        fn = ir.Function(module, ir.FunctionType(I1, [I64, I64, I64, ir.PointerType()]), "eggpu_raw_inside")
        fn.linkage = "internal"
        addr, size, write, record = fn.args
        entry, head, body, found, done = (fn.append_basic_block(n) for n in ("entry", "head", "body", "found", "done"))
        b = ir.IRBuilder(entry)
        table = b.inttoptr(b.load(b.gep(record, [I64(RAW_TABLE_SLOT)], source_etype=I64), typ=I64), ir.PointerType())
        n = b.load(b.gep(record, [I64(RAW_TABLE_SLOT + 1)], source_etype=I64), typ=I64)
        aligned = b.icmp_unsigned("==", b.and_(addr, b.sub(size, I64(1))), I64(0))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(I64(0), entry)
        b.cbranch(b.and_(aligned, b.icmp_unsigned("<", i, n)), body, done)
        b.position_at_end(body)
        row = [b.load(b.gep(table, [b.add(b.mul(i, I64(3)), I64(k))], source_etype=I64), typ=I64) for k in range(3)]
        start, nbytes, writable = row
        fits = b.icmp_unsigned(">=", nbytes, size)
        inside = b.icmp_unsigned("<=", b.sub(addr, start), b.sub(nbytes, size))
        may = b.or_(b.icmp_unsigned("==", write, I64(0)), b.icmp_unsigned("!=", writable, I64(0)))
        i_next = b.add(i, I64(1))
        i.add_incoming(i_next, body)
        b.cbranch(b.and_(b.and_(fits, inside), may), found, head)
        b.position_at_end(found)
        b.ret(ir.Constant(I1, 1))
        b.position_at_end(done)
        b.ret(ir.Constant(I1, 0))
        return fn

    def _scan(self, lay, live, names: tuple[str, ...]) -> tuple[ir.Value, ir.Value]:
        """A loop over the CTA's lanes (scalar code, like :meth:`Emitter.lane_loop`) checking
        every live slot; returns (the smallest flat index of a failing lane, I64_MAX if none;
        that lane's byte offset from the first candidate's base). Vector arithmetic on
        ``<NT x i64>`` values would cost far more JIT time than this loop costs at run time."""
        with self.em.lane_buffer_scope():
            return self._scan_lanes(lay, live, names)

    def _scan_lanes(self, lay, live, names: tuple[str, ...]) -> tuple[ir.Value, ir.Value]:
        em, b = self.em, self.em.b
        nt = em.nt
        bufs = []
        for j, p, m in live:
            pb = em.lane_buffer(p.type)
            b.store(p, pb)
            mb = None
            if m is not None:
                mb = em.lane_buffer(ir.VectorType(I8, nt))
                b.store(b.zext(m, ir.VectorType(I8, nt)), mb)
            bufs.append((j, pb, mb))
        pre = b.block
        head = em.new_block("oob.head")
        body = em.new_block("oob.body")
        done = em.new_block("oob.done")
        b.branch(head)
        b.position_at_end(head)
        t = b.phi(I32)
        t.add_incoming(I32(0), pre)
        best = b.phi(I64)
        best.add_incoming(I64(I64_MAX), pre)
        best_d = b.phi(I64)
        best_d.add_incoming(I64(0), pre)
        b.cbranch(b.icmp_unsigned("<", t, I32(nt)), body, done)
        b.position_at_end(body)
        t64 = b.zext(t, I64)
        lane_base = b.mul(t64, I64(lay.vec)) if lay.vec != 1 else t64
        k, kd = best, best_d
        for j, pb, mb in bufs:
            p = b.load(b.gep(pb, [I32(0), t], source_etype=pb.allocated_type), typ=pb.allocated_type.element)
            d, inside = self._inside(p, names)
            bad = b.not_(inside)
            if mb is not None:
                m = b.load(b.gep(mb, [I32(0), t], source_etype=mb.allocated_type), typ=I8)
                bad = b.and_(bad, b.icmp_unsigned("!=", m, I8(0)))
            flat = b.add(lane_base, I64((j // lay.vec) * lay.stride + j % lay.vec))
            better = b.and_(bad, b.icmp_unsigned("<", flat, k))
            k = b.select(better, flat, k)
            kd = b.select(better, d, kd)
        t_next = b.add(t, I32(1))
        end = b.block
        b.branch(head)
        t.add_incoming(t_next, end)
        best.add_incoming(k, end)
        best_d.add_incoming(kd, end)
        b.position_at_end(done)
        return best, best_d


def message(kernel: str, chk: BoundsCheck, record, pid_rank: int, sizes: dict[str, int],
            arrays: dict[str, object] | None = None) -> str:
    """The error text of a failed check, in the interpreter's words (see
    :meth:`eggpu.ir.interp._Program._check_bounds`). ``arrays`` (the pointer arguments by name)
    lets an access that may point into several buffers give its offset from the nearest one."""
    import numpy as np

    from eggpu.ir.raw_memory import raw_message

    flat, off = int(record[1]), int(record[2])
    pid = tuple(int(x) for x in record[3:3 + 3])[:pid_rank]
    where = f" at {chk.loc}" if chk.loc is not None else ""
    lane = ""
    if chk.shape and flat >= 0:
        lane = f"lane {tuple(int(i) for i in np.unravel_index(flat, chk.shape))} "
    if chk.raw:
        assert chk.dtype is not None
        return raw_message(f"{kernel}: {chk.op}{where} in program {pid[0] if len(pid) == 1 else pid}", lane,
                           chk.verb, off, chk.dtype, int(record[RAW_TABLE_SLOT + 1]))
    head = f"{kernel}: {chk.op}{where} in program {pid[0] if len(pid) == 1 else pid}: out-of-bounds access: "
    first = chk.params[0]
    if len(chk.params) == 1:
        return f"{head}{lane}{chk.verb} offset {off} of buffer '{first}' which has {sizes[first]} element(s)"
    bufs = " or ".join(f"'{n}' ({sizes[n]} element(s))" for n in chk.params)
    name, off = _nearest(chk.params, off, sizes, arrays) if arrays else (first, off)
    return f"{head}{lane}{chk.verb} outside every buffer it may point into, {bufs}: offset {off} from '{name}'"


def _nearest(names: tuple[str, ...], off: int, sizes: dict[str, int], arrays: dict) -> tuple[str, int]:
    """The candidate buffer nearest to element ``off`` of ``names[0]``, and the offset from it (the
    lanes of a ``where`` between two arguments' pointers usually stray just past their own)."""
    start = {n: int(arrays[n].__array_interface__["data"][0]) for n in names}
    item = arrays[names[0]].itemsize
    addr = start[names[0]] + off * item

    def rebased(n: str) -> tuple[int, int]:
        o = (addr - start[n]) // item
        return (0 if 0 <= o < sizes[n] else (-o if o < 0 else o - sizes[n] + 1)), o

    best = min(names, key=lambda n: rebased(n)[0])
    return best, rebased(best)[1]
