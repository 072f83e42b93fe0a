"""The reference interpreter: run a :class:`Function` on numpy arrays, one program at a time.

``interpret(fn, grid, *args)`` runs every program of ``grid`` (an int or a tuple of up to three
ints; program ids are visited in row-major order, the last axis fastest) through the function
body. Within a program every value is a numpy array of its dtype (``DType.np``; 0-d for
scalars) or, for pointer-typed values, a :class:`PointerValue`.

What the interpreter does itself and what it takes from the op table:

* Every op with a ``reference`` in :data:`eggpu.ir.ops.OPS` is computed by that reference
  (``ref(attrs, *arrays, dtype=<element dtype of the first operand>)``); the interpreter never
  restates an op's meaning. The shape ops (``splat``, ``broadcast``, ``expand_dims``,
  ``reshape``, ``trans``) and ``where``/``eq``/``ne`` also accept pointer values: the op is
  applied to the pointers' offsets. A ``where`` whose lanes pick pointers of different arguments
  gives a :class:`~eggpu.ir.mixed_pointers.MixedPointer`: each lane keeps its own buffer and is
  bounds-checked against it.
* Leaves (``const``, ``program_id``, ``num_programs``, ``arange``), ``addptr``, the memory ops
  and ``for``/``while``/``if``/``yield`` are the interpreter's own.

Memory model: a pointer argument is a C-contiguous numpy array whose dtype is the pointee dtype;
it is addressed flat (element offsets into ``arr.reshape(-1)``) and written in place. A pointer
made by ``int_to_ptr`` is a :class:`~eggpu.ir.raw_memory.RawPointer` of host byte addresses,
resolved at each access against the pointer arguments' arrays and ``buffers=``
(:mod:`eggpu.ir.raw_memory`); ``ptr_to_int`` of an argument pointer is its array's address plus
the byte offset.

* ``load(ptr[, mask[, other]])`` reads only unmasked lanes; masked lanes take ``other`` (0
  without it).
* ``store(ptr, value[, mask])`` writes only unmasked lanes; when several lanes of one store hit
  one address, the last lane in row-major order wins.
* ``atomic_*`` apply lane by lane in row-major order and return the old values (masked lanes
  return 0). ``atomic_add``/``max``/``min`` combine with the ``add``/``maximum``/``minimum``
  references, ``atomic_xchg`` writes the value, ``atomic_cas`` writes where ``old == cmp``.
* An unmasked lane outside its buffer raises :class:`OutOfBoundsError` (an
  :class:`InterpreterError`) naming the kernel, the op, the program, the lane, the offset and
  the buffer size; ``run_cpu`` raises the same error with the same words.

Control flow: ``for`` runs like Python ``range(lo, hi, step)`` with carried values (step 0 is an
:class:`InterpreterError`); ``while`` runs its condition region on the carried values and, while
it yields true, its body; ``if`` runs one region on a bool scalar.

Numpy floating-point warnings are suppressed: overflow, NaN and division by zero are values here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import launch_args
from .debug_ops import assertion_error, first_failing_lane, print_lines
from .dtypes import bool_, i64
from .errors import InterpreterError, gpu_only_message
from .facts import check_launch
from .graph import Block, Function, Operation, Value
from .libdevice_table import ORDER_LIMIT, gpu_only_reason, order_bounded, order_limit_message
from .mixed_pointers import MixedPointer, addresses, out_of_bounds, resolve, same_address, select
from .ops import OPS
from .raw_memory import AddressSpace, RawPointer, address_of, check_buffers, oob
from .semantics import round_f64
from .types import BlockType

__all__ = ["PointerValue", "interpret"]

Handler = Callable[[list], None]

_POINTER_SHAPE_OPS = frozenset({"splat", "broadcast", "expand_dims", "reshape", "trans"})
_ATOMIC_COMBINE = {"atomic_add": "add", "atomic_max": "maximum", "atomic_min": "minimum", "atomic_and": "and",
                   "atomic_or": "or", "atomic_xor": "xor"}


class PointerValue:
    """A block (or scalar) of pointers into one buffer.

    ``base`` is the flat view of the argument array (writes land in the caller's array);
    ``offsets`` is an int64 array of the value's shape holding element offsets into ``base``;
    ``name`` is the parameter the pointer came from (for error messages).
    """

    __slots__ = ("base", "offsets", "name")

    def __init__(self, base: np.ndarray, offsets: np.ndarray, name: str):
        self.base = base
        self.offsets = offsets
        self.name = name

    @property
    def shape(self) -> tuple[int, ...]:
        return self.offsets.shape

    def with_offsets(self, offsets: np.ndarray) -> PointerValue:
        return PointerValue(self.base, np.asarray(offsets, dtype=np.int64), self.name)

    def __repr__(self) -> str:
        return f"PointerValue({self.name}, offsets={self.offsets!r})"


def interpret(fn: Function, grid: int | Sequence[int], *args: Any, buffers: Sequence[np.ndarray] | None = None) -> None:
    """Run ``fn`` for every program of ``grid`` on ``args``.

    ``grid``: an int or a tuple of 1 to 3 non-negative ints within CUDA's limits (x at most
    2**31 - 1, y and z at most 65535: :data:`eggpu.ir.launch_args.GRID_MAX`; a 0 runs nothing). ``args``: one per
    parameter; pointer parameters take C-contiguous numpy arrays of the pointee dtype (written in
    place), scalar parameters take Python or numpy numbers converted to the parameter dtype
    (floats are rejected for integer parameters, out-of-range values are rejected).
    ``buffers``: the arrays the kernel reaches through raw addresses (``int_to_ptr``, see
    :mod:`eggpu.ir.raw_memory`), besides the pointer arguments; an access through a raw address
    outside all of them is an :class:`OutOfBoundsError`.
    Raises :class:`InterpreterError` for bad arguments, arguments that break ``fn.facts``, out-of-bounds accesses and ``for`` loops
    with step 0; for a ``fn`` that is not an IR :class:`Function` too (a ``@kernel`` instance runs
    with ``instance.interpret(grid, ...)``).
    """
    if not isinstance(fn, Function):
        what = type(fn).__name__
        hint = (f"; call {fn.name}.interpret(grid, ...) on the kernel instance, or pass its .ir()"
                if hasattr(fn, "ir") and isinstance(getattr(fn, "name", None), str) else "")
        raise InterpreterError(f"interpret runs an IR Function (a kernel instance's .ir()), got a {what}{hint}")
    dims, rank = launch_args.normalize_grid(fn.name, grid, InterpreterError)
    with np.errstate(all="ignore"):
        params = _bind_args(fn, args)
        bufs = check_buffers(fn.name, buffers, InterpreterError)
        # the function's specialization facts hold for every launch, here as for compiled code
        check_launch(fn.name, fn.facts, launch_args.param_names(fn.params), args, dims, InterpreterError)
        program = _Program(fn, dims, params)
        program.memory = AddressSpace([(p.name, p.base) for p in params if isinstance(p, PointerValue)]
                                      + [(f"buffers[{i}]", b) for i, b in enumerate(bufs)])
        program.grid_rank = rank
        program.run()


def _address_of(p: Any) -> np.ndarray:
    """Byte addresses of a pointer value of any kind (``ptr_to_int``, raw-pointer ``where``)."""
    return addresses(p, address_of) if isinstance(p, MixedPointer) else address_of(p)


# ------------------------------------------------------------------ arguments (rules: launch_args)


def _bind_args(fn: Function, args: Sequence[Any]) -> list[Any]:
    params = fn.params
    names = launch_args.param_names(params)
    launch_args.check_arg_count(fn.name, names, args, InterpreterError)
    bases: dict[tuple, np.ndarray] = {}
    out = []
    for name, p, a in zip(names, params, args):
        t = p.type
        if t.is_pointer:
            out.append(_bind_pointer(fn, name, t, a, bases))
        elif t.is_scalar:
            value = launch_args.convert_scalar(fn.name, name, t.elem, a, InterpreterError)
            out.append(_frozen(np.asarray(value)))
        else:
            out.append(_bind_block(fn, name, t, a))
    return out


def _bind_pointer(fn: Function, name: str, t: BlockType, a: Any, bases: dict[tuple, np.ndarray]) -> PointerValue:
    if not t.is_scalar:
        raise InterpreterError(f"{fn.name}: parameter '{name}' has the unsupported type {t} (pointer blocks)")
    a = launch_args.check_host_array(fn.name, name, t, a, InterpreterError)
    key = (a.__array_interface__["data"][0], a.size, a.dtype)
    base = bases.get(key)
    if base is None:
        base = bases[key] = a.reshape(-1)
    return PointerValue(base, _frozen(np.zeros((), dtype=np.int64)), name)


def _bind_block(fn: Function, name: str, t: BlockType, a: Any) -> np.ndarray:
    if not isinstance(a, np.ndarray) or a.shape != t.shape or a.dtype != t.dtype.np:
        raise InterpreterError(f"{fn.name}: parameter '{name}' expects an array of {t.dtype} with shape {t.shape}, "
                               f"got {launch_args.describe(a)}")
    return _frozen(a.copy())


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# ------------------------------------------------------------------ the compiled program


class _Program:
    """A function compiled to closures over a slot-indexed environment (one list per program).

    Program-invariant leaves (``const``, ``arange``, ``num_programs``) and the parameters live in
    a template environment copied at the start of each program; ``program_id`` slots are filled
    per program; every other op is a handler ``h(env)`` that reads operand slots and writes
    result slots.
    """

    def __init__(self, fn: Function, dims: tuple[int, int, int], params: list[Any]):
        self.fn = fn
        self.dims = dims
        self.pid: tuple[int, int, int] = (0, 0, 0)
        self.grid_rank = 3  # how many program-id axes error messages show
        self.memory = AddressSpace([])  # what raw addresses may refer to (set by interpret)
        self.slots: dict[int, int] = {}
        self.template: list[Any] = []
        self.pid_slots: list[tuple[int, int]] = []
        for p, v in zip(fn.params, params):
            self.template[self._slot(p)] = v
        self.body, _ = self._block(fn.body)

    # -- environment slots

    def _slot(self, v: Value) -> int:
        s = self.slots.get(id(v))
        if s is None:
            s = self.slots[id(v)] = len(self.template)
            self.template.append(None)
        return s

    def _in(self, op: Operation, v: Value) -> int:
        s = self.slots.get(id(v))
        if s is None:
            raise InterpreterError(f"{self.fn.name}: operand of {op.op} is used before it is defined")
        return s

    # -- running

    def run(self) -> None:
        g0, g1, g2 = self.dims
        pid_arrays = [[_frozen(np.asarray(i, dtype=np.int32)) for i in range(g)] for g in self.dims]
        body = self.body
        template = self.template
        pid_slots = self.pid_slots
        for pid in itertools.product(range(g0), range(g1), range(g2)):
            self.pid = pid
            env = template.copy()
            for s, axis in pid_slots:
                env[s] = pid_arrays[axis][pid[axis]]
            for h in body:
                h(env)

    # -- diagnostics

    def _where(self, op: Operation) -> str:
        loc = f" at {op.loc}" if op.loc is not None else ""
        pid = self.pid[: self.grid_rank]
        return f"{self.fn.name}: {op.op}{loc} in program {pid[0] if len(pid) == 1 else pid}"

    def _error(self, op: Operation, msg: str) -> InterpreterError:
        return InterpreterError(f"{self._where(op)}: {msg}")

    # -- compilation

    def _block(self, blk: Block) -> tuple[tuple[Handler, ...], tuple[int, ...] | None]:
        handlers: list[Handler] = []
        yields: tuple[int, ...] | None = None
        for op in blk.ops:
            if op.op == "yield":
                yields = tuple(self._in(op, v) for v in op.operands)
                continue
            h = self._compile(op)
            if h is not None:
                handlers.append(h)
        return tuple(handlers), yields

    def _compile(self, op: Operation) -> Handler | None:
        name = op.op
        if name == "const":
            self.template[self._slot(op.result)] = self._const(op)
            return None
        if name == "arange":
            start, end = op.attrs["start"], op.attrs["end"]
            self.template[self._slot(op.result)] = _frozen(np.arange(start, end, dtype=np.int32))
            return None
        if name == "num_programs":
            axis = op.attrs["axis"]
            self.template[self._slot(op.result)] = _frozen(np.asarray(self.dims[axis], dtype=np.int32))
            return None
        if name == "program_id":
            self.pid_slots.append((self._slot(op.result), op.attrs["axis"]))
            return None
        if name == "addptr":
            return self._addptr(op)
        if name in ("int_to_ptr", "ptr_to_int"):
            return self._int_ptr(op)
        if name == "load":
            return self._load(op)
        if name == "store":
            return self._store(op)
        if name.startswith("atomic_"):
            return self._atomic(op)
        if name == "device_print":
            return self._device_print(op)
        if name == "device_assert":
            return self._device_assert(op)
        if name == "inline_asm" or (name == "libdevice" and gpu_only_reason(op.attrs["symbol"]) is not None):
            raise InterpreterError(gpu_only_message(self.fn.name, op, "the numpy interpreter"))
        if name == "for":
            return self._for(op)
        if name == "if":
            return self._if(op)
        if name == "while":
            return self._while(op)
        opdef = OPS.get(name)
        if opdef is None or opdef.reference is None:
            raise InterpreterError(f"{self.fn.name}: the interpreter has no rule for op {name!r}")
        if any(v.type.is_pointer for v in op.operands):
            return self._pointer_op(op)
        if name == "libdevice" and order_bounded(op.attrs["symbol"]):
            return self._order_checked(op, self._reference(op))
        return self._reference(op)

    def _order_checked(self, op: Operation, run: Handler) -> Handler:
        """``jn``/``yn``: refuse an order beyond ORDER_LIMIT (libdevice_table) before any lane is
        computed; the first such lane in row-major order is named. A negative order is not
        refused: its lane is libdevice's NaN (libdevice_refs)."""
        io = self._in(op, op.operands[0])
        shape = op.operands[0].type.shape

        def check(env: list) -> None:
            n = np.asarray(env[io])
            bad = n.astype(np.int64) > ORDER_LIMIT  # a negative order is NaN (libdevice_refs)
            if bad.any():
                flat = int(np.argmax(bad.reshape(-1)))
                lane = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else None
                order = int(np.broadcast_to(n, shape).reshape(-1)[flat]) if shape else int(n)
                raise InterpreterError(order_limit_message(self._where(op), op.attrs["symbol"], order, lane, op.loc))
            run(env)

        return check

    def _const(self, op: Operation) -> np.ndarray:
        value, dt = op.attrs["value"], op.attrs["dtype"]
        if dt.is_bool:
            return _frozen(np.asarray(bool(value)))
        if dt.is_int:
            if isinstance(value, float) or not isinstance(value, int | np.integer):
                raise InterpreterError(f"{self.fn.name}: const {value!r} of dtype {dt} is not an integer")
            if not dt.min <= int(value) <= dt.max:
                raise InterpreterError(
                    f"{self.fn.name}: const {value!r} is out of range for {dt} [{dt.min}, {dt.max}]")
            return _frozen(np.asarray(int(value), dtype=dt.np))
        try:
            x = float(value)
        except OverflowError:
            x = math.inf if value > 0 else -math.inf
        return _frozen(np.asarray(round_f64(np.asarray(x, dtype=np.float64), dt)))

    def _reference(self, op: Operation) -> Handler:
        ref = OPS[op.op].reference
        attrs = dict(op.attrs)
        ins = tuple(self._in(op, v) for v in op.operands)
        dt = op.operands[0].type.dtype if op.operands else None
        (res,) = op.results
        out = self._slot(res)
        want_dtype, want_shape = res.type.dtype.np, res.type.shape

        def run(env: list) -> None:
            r = ref(attrs, *[env[i] for i in ins], dtype=dt)
            if type(r) is not np.ndarray:
                r = np.asarray(r)
            if r.dtype != want_dtype or r.shape != want_shape:
                raise self._error(op, f"internal error: the reference returned {r.dtype}{list(r.shape)}, "
                                      f"expected {res.type}")
            env[out] = r

        return run

    # -- pointers

    def _addptr(self, op: Operation) -> Handler:
        ip, io = (self._in(op, v) for v in op.operands)
        out = self._slot(op.result)

        def run(env: list) -> None:
            p = env[ip]
            if isinstance(p, RawPointer):
                env[out] = p.add(env[io])
                return
            env[out] = p.with_offsets(p.offsets + env[io].astype(np.int64))  # MixedPointer too

        return run

    def _int_ptr(self, op: Operation) -> Handler:
        """``int_to_ptr``: the integers are byte addresses (a :class:`RawPointer`); ``ptr_to_int``:
        a pointer's byte address (an argument pointer's is its array's address plus the offset)."""
        (ia,) = (self._in(op, v) for v in op.operands)
        out = self._slot(op.result)
        dt = op.attrs["dtype"]
        if op.op == "int_to_ptr":
            def to_ptr(env: list) -> None:
                env[out] = RawPointer(np.asarray(env[ia]).view(np.int64), dt)

            return to_ptr

        def to_int(env: list) -> None:
            env[out] = _frozen(np.array(_address_of(env[ia]), dtype=np.int64).view(dt.np))

        return to_int

    def _pointer_op(self, op: Operation) -> Handler:
        name = op.op
        ref = OPS[name].reference
        attrs = dict(op.attrs)
        ins = tuple(self._in(op, v) for v in op.operands)
        out = self._slot(op.result)
        if name in _POINTER_SHAPE_OPS:
            (ia,) = ins

            def shape_op(env: list) -> None:
                p = env[ia]
                if isinstance(p, MixedPointer):
                    env[out] = p.reshaped(lambda x: ref(attrs, x, dtype=i64))
                    return
                env[out] = p.with_offsets(ref(attrs, p.offsets, dtype=i64))

            return shape_op
        if name == "where":
            ic, ia, ib = ins

            def where(env: list) -> None:
                a, b = env[ia], env[ib]
                if isinstance(a, RawPointer) or isinstance(b, RawPointer):  # select addresses
                    sel = ref(attrs, env[ic], _address_of(a), _address_of(b), dtype=bool_)
                    env[out] = RawPointer(sel, op.result.type.dtype)
                    return
                if isinstance(a, MixedPointer) or isinstance(b, MixedPointer) or a.base is not b.base:
                    # lanes may pick different arguments' buffers: each lane keeps its own
                    env[out] = select(env[ic], a, b, op.result.type.shape)
                    return
                env[out] = a.with_offsets(ref(attrs, env[ic], a.offsets, b.offsets, dtype=bool_))

            return where
        if name in ("eq", "ne"):
            ia, ib = ins
            shape = op.result.type.shape

            def compare(env: list) -> None:
                a, b = env[ia], env[ib]
                if isinstance(a, RawPointer) or isinstance(b, RawPointer):  # compare addresses
                    env[out] = np.asarray(ref(attrs, _address_of(a), _address_of(b), dtype=i64))
                elif isinstance(a, MixedPointer) or isinstance(b, MixedPointer):  # same buffer and offset
                    same = np.broadcast_to(same_address(a, b), shape)
                    env[out] = same if name == "eq" else ~same
                elif a.base is b.base:
                    env[out] = np.asarray(ref(attrs, a.offsets, b.offsets, dtype=i64))
                else:  # distinct allocations never share an address
                    env[out] = np.full(shape, name == "ne", dtype=bool)

            return compare
        raise InterpreterError(f"{self.fn.name}: {name} does not accept pointer operands")

    # -- memory

    def _check_bounds(self, op: Operation, p: PointerValue, sel: np.ndarray, lanes: np.ndarray | None,
                      verb: str) -> None:
        size = p.base.size
        bad = (sel < 0) | (sel >= size)
        if bad.any():
            k = int(np.argmax(bad))
            flat_lane = k if lanes is None else int(lanes[k])
            raise out_of_bounds(self._where(op), p.offsets.shape, flat_lane, verb, int(sel[k]), p.name, size)

    def _raw_resolve(self, op: Operation, p: RawPointer, addrs: np.ndarray, lanes: np.ndarray | None, verb: str,
                     write: bool = False) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The accesses at raw ``addrs`` (the active lanes ``lanes`` of ``p``, all when None) grouped by
        array (:meth:`AddressSpace.resolve`); OutOfBoundsError for the first lane outside them all."""
        groups, bad = self.memory.resolve(addrs, p.dtype, write)
        if bad >= 0:
            flat = bad if lanes is None else int(lanes[bad])
            shape = p.shape
            lane = f"lane {tuple(int(i) for i in np.unravel_index(flat, shape))} " if shape else ""
            raise oob(self._where(op), lane, verb, int(addrs[bad]), p.dtype, len(self.memory))
        return groups

    def _mixed_resolve(self, op: Operation, p: MixedPointer, offs: np.ndarray, lanes: np.ndarray | None, verb: str,
                       write: bool = False) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """:meth:`_raw_resolve` for a :class:`MixedPointer`: each lane checked against its own buffer."""
        groups = resolve(self._where(op), p, offs, lanes, verb)
        if write:
            for part, _, _ in groups:
                self._check_writable(op, part)
        return [(part.base, idx, pos) for part, idx, pos in groups]

    def _resolver(self, p: RawPointer | MixedPointer) -> Callable[..., list]:
        return self._mixed_resolve if isinstance(p, MixedPointer) else self._raw_resolve

    def _raw_load(self, op: Operation, p: RawPointer | MixedPointer, mask: np.ndarray | None,
                  other: np.ndarray | None, np_dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        addrs = p.offsets.reshape(-1)
        lanes = None if mask is None else np.flatnonzero(mask)
        r = np.zeros(addrs.size, dtype=np_dt) if other is None else np.array(other, dtype=np_dt).reshape(-1)
        sel = addrs if lanes is None else addrs[lanes]
        for view, idx, pos in self._resolver(p)(op, p, sel, lanes, "reads"):
            r[pos if lanes is None else lanes[pos]] = view[idx]
        return r.reshape(shape)

    def _raw_store(self, op: Operation, p: RawPointer | MixedPointer, addrs: np.ndarray, vals: np.ndarray,
                   lanes: np.ndarray | None) -> None:
        groups = self._resolver(p)(op, p, addrs, lanes, "writes", write=True)
        for view, idx, pos in groups:
            v = vals[pos]
            if idx.size > 1 and not bool(np.all(idx[1:] > idx[:-1])):  # the last lane of each address wins
                order = np.argsort(idx, kind="stable")
                s = idx[order]
                last = np.ones(s.size, dtype=bool)
                last[:-1] = s[1:] != s[:-1]
                idx, v = idx[order[last]], v[order[last]]
            view[idx] = v

    def _check_writable(self, op: Operation, p: PointerValue) -> None:
        if not p.base.flags.writeable:
            raise self._error(op, f"buffer '{p.name}' is a read-only array")

    def _load(self, op: Operation) -> Handler:
        ins = tuple(self._in(op, v) for v in op.operands)
        out = self._slot(op.result)
        rt = op.result.type
        np_dt, shape = rt.dtype.np, rt.shape
        ip = ins[0]
        im = ins[1] if len(ins) > 1 else None
        io = ins[2] if len(ins) > 2 else None

        def run(env: list) -> None:
            p = env[ip]
            if isinstance(p, (RawPointer, MixedPointer)):
                env[out] = self._raw_load(op, p, env[im] if im is not None else None,
                                          env[io] if io is not None else None, np_dt, shape)
                return
            offs = p.offsets.reshape(-1)
            if im is None:
                self._check_bounds(op, p, offs, None, "reads")
                env[out] = p.base[offs].reshape(shape)
                return
            lanes = np.flatnonzero(env[im])
            sel = offs[lanes]
            self._check_bounds(op, p, sel, lanes, "reads")
            if io is None:
                r = np.zeros(offs.size, dtype=np_dt)
            else:
                r = np.array(env[io], dtype=np_dt).reshape(-1)
            r[lanes] = p.base[sel]
            env[out] = r.reshape(shape)

        return run

    def _store(self, op: Operation) -> Handler:
        ins = tuple(self._in(op, v) for v in op.operands)
        ip, iv = ins[0], ins[1]
        im = ins[2] if len(ins) > 2 else None

        def run(env: list) -> None:
            p = env[ip]
            offs = p.offsets.reshape(-1)
            vals = env[iv].reshape(-1)
            lanes = None
            if im is not None:
                lanes = np.flatnonzero(env[im])
                offs, vals = offs[lanes], vals[lanes]
            if isinstance(p, (RawPointer, MixedPointer)):
                self._raw_store(op, p, offs, vals, lanes)
                return
            self._check_bounds(op, p, offs, lanes, "writes")
            self._check_writable(op, p)
            if offs.size > 1 and not bool(np.all(offs[1:] > offs[:-1])):
                # several lanes may hit one address: keep the last lane (row-major) of each
                order = np.argsort(offs, kind="stable")
                s = offs[order]
                last = np.ones(s.size, dtype=bool)
                last[:-1] = s[1:] != s[:-1]
                keep = order[last]
                offs, vals = offs[keep], vals[keep]
            p.base[offs] = vals

        return run

    def _device_print(self, op: Operation) -> Handler:
        ins = tuple(self._in(op, v) for v in op.operands)
        dts = tuple(v.type.dtype for v in op.operands)
        prefix, hex_ = op.attrs["prefix"], op.attrs["hex"]

        def run(env: list) -> None:
            for line in print_lines(prefix, self.pid, [(env[i], dt) for i, dt in zip(ins, dts)], hex_):
                print(line)

        return run

    def _device_assert(self, op: Operation) -> Handler:
        ic = self._in(op, op.operands[0])
        im = self._in(op, op.operands[1]) if len(op.operands) > 1 else None
        msg, src = op.attrs["msg"], op.attrs["src"]

        def run(env: list) -> None:
            lane = first_failing_lane(env[ic], None if im is None else env[im])
            if lane is not False:
                raise assertion_error(self.fn.name, msg, src, self.pid, self.grid_rank, lane)

        return run

    def _atomic(self, op: Operation) -> Handler:
        name = op.op
        if name not in _ATOMIC_COMBINE and name not in ("atomic_xchg", "atomic_cas"):
            raise InterpreterError(f"{self.fn.name}: the interpreter has no rule for op {name!r}")
        ins = tuple(self._in(op, v) for v in op.operands)
        out = self._slot(op.result)
        rt = op.result.type
        dt, shape = rt.dtype, rt.shape
        np_dt = dt.np
        ip = ins[0]
        if name == "atomic_cas":
            ic, iv, im = ins[1], ins[2], None
            eq = OPS["eq"].reference

            def combine(old: np.ndarray, v: np.ndarray, c: np.ndarray) -> np.ndarray:
                return np.where(eq({}, old, c, dtype=dt), v, old)
        else:
            ic, iv = None, ins[1]
            im = ins[2] if len(ins) > 2 else None
            if name == "atomic_xchg":
                def combine(old: np.ndarray, v: np.ndarray, c: np.ndarray) -> np.ndarray:
                    return v
            else:
                ref = OPS[_ATOMIC_COMBINE[name]].reference

                def combine(old: np.ndarray, v: np.ndarray, c: np.ndarray) -> np.ndarray:
                    return ref({}, old, v, dtype=dt)

        def run(env: list) -> None:
            p = env[ip]
            offs = p.offsets.reshape(-1)
            vals = env[iv].reshape(-1)
            cmps = env[ic].reshape(-1) if ic is not None else vals
            lanes = None
            if im is not None:
                lanes = np.flatnonzero(env[im])
                offs, vals, cmps = offs[lanes], vals[lanes], cmps[lanes]
            if isinstance(p, (RawPointer, MixedPointer)):
                # per array (distinct arrays never share an address: lane order per address is kept)
                old = np.zeros(offs.size, dtype=np_dt)
                for view, idx, pos in self._resolver(p)(op, p, offs, lanes, "updates", write=True):
                    old[pos] = _apply_atomic(view, idx, vals[pos], cmps[pos], combine)
            else:
                self._check_bounds(op, p, offs, lanes, "updates")
                self._check_writable(op, p)
                old = _apply_atomic(p.base, offs, vals, cmps, combine)
            if lanes is None:
                env[out] = old.reshape(shape)
            else:
                r = np.zeros(p.offsets.size, dtype=np_dt)
                r[lanes] = old
                env[out] = r.reshape(shape)

        return run

    # -- control flow

    def _for(self, op: Operation) -> Handler:
        ins = tuple(self._in(op, v) for v in op.operands)
        ilo, ihi, istep = ins[:3]
        inits = ins[3:]
        body_blk = op.regions[0]
        arg_slots = tuple(self._slot(a) for a in body_blk.args)
        iv_slot, carried_slots = arg_slots[0], arg_slots[1:]
        body, yields = self._block(body_blk)
        yields = yields or ()
        outs = tuple(self._slot(r) for r in op.results)

        def run(env: list) -> None:
            lo, hi, step = int(env[ilo]), int(env[ihi]), int(env[istep])
            if step == 0:
                raise self._error(op, f"loop step is 0 (lo={lo}, hi={hi})")
            carried = [env[i] for i in inits]
            for iv in range(lo, hi, step):
                env[iv_slot] = np.asarray(iv, dtype=np.int32)
                for s, v in zip(carried_slots, carried):
                    env[s] = v
                for h in body:
                    h(env)
                carried = [env[i] for i in yields]
            for s, v in zip(outs, carried):
                env[s] = v

        return run

    def _while(self, op: Operation) -> Handler:
        inits = tuple(self._in(op, v) for v in op.operands)
        cond_blk, body_blk = op.regions
        cond_args = tuple(self._slot(a) for a in cond_blk.args)
        body_args = tuple(self._slot(a) for a in body_blk.args)
        cond, cond_yields = self._block(cond_blk)
        body, yields = self._block(body_blk)
        (ic,) = cond_yields or (None,)
        yields = yields or ()
        outs = tuple(self._slot(r) for r in op.results)

        def run(env: list) -> None:
            carried = [env[i] for i in inits]
            while True:
                for s, v in zip(cond_args, carried):
                    env[s] = v
                for h in cond:
                    h(env)
                if not bool(env[ic]):
                    break
                for s, v in zip(body_args, carried):
                    env[s] = v
                for h in body:
                    h(env)
                carried = [env[i] for i in yields]
            for s, v in zip(outs, carried):
                env[s] = v

        return run

    def _if(self, op: Operation) -> Handler:
        ic = self._in(op, op.operands[0])
        then_body, then_yields = self._block(op.regions[0])
        else_body, else_yields = self._block(op.regions[1])
        branches = ((else_body, else_yields or ()), (then_body, then_yields or ()))
        outs = tuple(self._slot(r) for r in op.results)

        def run(env: list) -> None:
            body, yields = branches[bool(env[ic])]
            for h in body:
                h(env)
            vals = [env[i] for i in yields]
            for s, v in zip(outs, vals):
                env[s] = v

        return run


def _apply_atomic(base: np.ndarray, offs: np.ndarray, vals: np.ndarray, cmps: np.ndarray,
                  combine: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply an atomic read-modify-write lane by lane in row-major order; return the old values.

    Lanes on distinct addresses are independent, so the lanes are processed in rounds: round k
    holds the k-th lane (in row-major order) of every address, vectorized.
    """
    n = offs.size
    if n == 0:
        return base[offs]
    order = np.argsort(offs, kind="stable")
    s = offs[order]
    first = np.ones(n, dtype=bool)
    first[1:] = s[1:] != s[:-1]
    if first.all():
        old = base[offs]
        base[offs] = combine(old, vals, cmps)
        return old
    pos = np.arange(n)
    rank_sorted = pos - np.maximum.accumulate(np.where(first, pos, 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = rank_sorted
    old = np.empty(n, dtype=base.dtype)
    for k in range(int(rank_sorted.max()) + 1):
        idx = np.flatnonzero(rank == k)
        a = offs[idx]
        o = base[a]
        base[a] = combine(o, vals[idx], cmps[idx])
        old[idx] = o
    return old

