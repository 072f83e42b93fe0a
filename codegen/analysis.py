"""Address analysis: which integer and pointer values are affine in the element coordinates.

For a value ``v`` of shape ``S`` the analysis may prove ``v[i_0, ..., i_r] = base + sum_d
s_d * i_d`` (modulo ``2**bits`` for integers; in elements of the pointee for pointers) and
records, as an :class:`Affine` fact:

* ``base_div``: a power of two that divides ``base`` (for pointers: the element offset from
  the pointer parameter ``origin`` that the value derives from);
* per dimension a :class:`Stride`: the constant ``s_d`` when known, and a power of two
  dividing it;
* ``const``: the value itself when it is a known constant (uniform values only).

Facts come from ``const``, ``arange``, ``program_id``/``num_programs`` (no divisibility),
parameters (an integer parameter is divisible by what its specialization facts say,
:attr:`eggpu.ir.graph.Function.facts` — ``div16``, ``tl.multiple_of`` — and nothing more;
``eq1`` makes it the constant 1; pointer parameters start at offset 0 of their buffer), and are propagated through ``add``, ``sub``, ``mul``, ``shl``,
integer ``cast``, ``splat``, ``broadcast``, ``expand_dims``, ``reshape``, ``trans``,
``addptr`` and, by a fixpoint, through ``for`` carried values and ``if`` results.

The lowering uses the facts to decide when a thread's chunk of elements is contiguous and
aligned in memory (:func:`vector_width`), and when a mask selects whole vector pieces
(:func:`chunk_uniform`). Wrap-around does not break this: a run of ``w``
elements starting at a multiple of ``w`` never crosses a multiple of ``2**bits``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from eggpu.ir.dtypes import DType, bool_
from eggpu.ir.graph import Block, Function, Operation, Value

BIG = 1 << 40  # "divisible by anything we care about" (the value 0)


def pow2div(c: int) -> int:
    """The largest power of two dividing ``c`` (BIG for 0)."""
    if c == 0:
        return BIG
    return min(c & -c, BIG)


@dataclass(frozen=True)
class Stride:
    """The stride of one dimension: the constant when known, and a power of two dividing it."""

    const: int | None
    div: int

    @staticmethod
    def of(c: int) -> Stride:
        return Stride(c, pow2div(c))


ZERO = Stride(0, BIG)


@dataclass(frozen=True)
class Affine:
    """``value = base + sum_d stride_d * i_d`` with ``base`` divisible by ``base_div``."""

    base_div: int
    strides: tuple[Stride, ...]
    origin: str | None = None
    const: int | None = None

    @property
    def is_uniform(self) -> bool:
        return all(s.const == 0 for s in self.strides)


def _join_stride(a: Stride, b: Stride) -> Stride:
    if a.const is not None and a.const == b.const:
        return a
    return Stride(None, min(a.div, b.div))


def join(a: Affine | None, b: Affine | None) -> Affine | None:
    """The weakest fact implied by both (None = nothing known)."""
    if a is None or b is None or len(a.strides) != len(b.strides) or a.origin != b.origin:
        return None
    return Affine(min(a.base_div, b.base_div), tuple(_join_stride(x, y) for x, y in zip(a.strides, b.strides)),
                  a.origin, a.const if a.const == b.const else None)


def _wrap(c: int | None, dt: DType | None) -> int | None:
    if c is None or dt is None:
        return c
    m = 1 << dt.bits
    c %= m
    if dt.is_signed and c >= m // 2:
        c -= m
    return c


def _add(a: Affine, b: Affine, sign: int, dt: DType | None) -> Affine:
    strides = []
    for x, y in zip(a.strides, b.strides):
        if x.const is not None and y.const is not None:
            strides.append(Stride.of(_wrap(x.const + sign * y.const, dt)))
        else:
            strides.append(Stride(None, min(x.div, y.div)))
    const = _wrap(a.const + sign * b.const, dt) if a.const is not None and b.const is not None else None
    return Affine(min(a.base_div, b.base_div), tuple(strides), a.origin or b.origin, const)


def _scale(a: Affine, c: int, dt: DType | None) -> Affine:
    strides = tuple(Stride.of(_wrap(s.const * c, dt)) if s.const is not None else Stride(None, min(s.div * pow2div(c), BIG))
                    for s in a.strides)
    const = _wrap(a.const * c, dt) if a.const is not None else None
    return Affine(min(a.base_div * pow2div(c), BIG), strides, None, const)


def _mul(a: Affine, b: Affine, dt: DType | None) -> Affine | None:
    if b.const is not None:
        return _scale(a, b.const, dt)
    if a.const is not None:
        return _scale(b, a.const, dt)
    if b.is_uniform:
        a, b = b, a
    if not a.is_uniform:
        return None
    # a uniform (unknown), b affine: strides become unknown multiples of a
    strides = tuple(ZERO if s.const == 0 else Stride(None, min(s.div * a.base_div, BIG)) for s in b.strides)
    return Affine(min(a.base_div * b.base_div, BIG), strides)


class AddressAnalysis:
    """Run the analysis on a function; ``facts[id(value)]`` is an :class:`Affine` or absent."""

    MAX_ITERATIONS = 8

    def __init__(self, fn: Function):
        self.facts: dict[int, Affine] = {}
        # run_of's answers by (id(value), length, depth): the value DAG shares operands, and
        # without the memo a chain of selects and compares is walked once per path (exponential)
        self.run_memo: dict[tuple[int, int, int], Run | None] = {}
        spec = fn.facts  # launch-time specialization facts, checked at every launch
        for p in fn.params:
            t = p.type
            if t.is_pointer and t.is_scalar:
                self.facts[id(p)] = Affine(BIG, (), p.name)
            elif t.is_scalar and isinstance(t.elem, DType) and t.elem.is_int:
                one = spec.is_one(p.name)
                self.facts[id(p)] = Affine(1 if one else spec.divisor(p.name), (), None, 1 if one else None)
        self._block(fn.body)

    def get(self, v: Value) -> Affine | None:
        return self.facts.get(id(v))

    def _set(self, v: Value, f: Affine | None) -> None:
        self.run_memo.clear()  # (empty while the analysis runs: run_of is asked afterwards)
        if f is None:
            self.facts.pop(id(v), None)
        else:
            self.facts[id(v)] = f

    def _block(self, blk: Block) -> list[Affine | None]:
        for op in blk.ops:
            if op.op == "yield":
                return [self.get(v) for v in op.operands]
            if op.op == "for":
                self._for(op)
            elif op.op == "if":
                self._if(op)
            elif op.op == "while":
                self._while(op)
            elif op.results:
                self._set(op.results[0], self._transfer(op))
        return []

    def _for(self, op: Operation) -> None:
        lo, _hi, step, *inits = op.operands
        body = op.regions[0]
        iv = body.args[0]
        fl, fs = self.get(lo), self.get(step)
        self._set(iv, Affine(min(fl.base_div, fs.base_div), ()) if fl and fs else None)
        carried = [self.get(v) for v in inits]
        for _ in range(self.MAX_ITERATIONS):
            for a, f in zip(body.args[1:], carried):
                self._set(a, f)
            yields = self._block(body)
            new = [join(c, y) for c, y in zip(carried, yields)]
            if new == carried:
                break
            carried = new
        else:
            carried = [None] * len(carried)
            for a in body.args[1:]:
                self._set(a, None)
            self._block(body)
        for r, f in zip(op.results, carried):
            self._set(r, f)

    def _while(self, op: Operation) -> None:
        # Conservative: the carried values may change in any iteration, so nothing is known
        # about them (no fixpoint: a while loop's trip count is not bounded by its operands).
        for r in op.regions:
            for a in r.args:
                self._set(a, None)
            self._block(r)
        for r in op.results:
            self._set(r, None)

    def _if(self, op: Operation) -> None:
        a = self._block(op.regions[0])
        b = self._block(op.regions[1])
        for r, x, y in zip(op.results, a, b):
            self._set(r, join(x, y))

    def _transfer(self, op: Operation) -> Affine | None:
        name = op.op
        out = op.results[0].type
        dt = out.elem if isinstance(out.elem, DType) else None
        if dt is not None and not dt.is_int:
            return None
        ins = [self.get(v) for v in op.operands]
        if name == "const":
            v = op.attrs["value"]
            return Affine(pow2div(int(v)), (), None, int(v)) if dt is not None else None
        if name in ("program_id", "num_programs"):
            return Affine(1, ())
        if name == "arange":
            return Affine(pow2div(op.attrs["start"]), (Stride(1, 1),))
        if any(f is None for f in ins):
            return None
        rank = out.rank
        if name == "splat":
            (a,) = ins
            return Affine(a.base_div, (ZERO,) * rank, a.origin, a.const)
        if name in ("add", "sub"):
            return _add(ins[0], ins[1], 1 if name == "add" else -1, dt)
        if name == "mul":
            return _mul(ins[0], ins[1], dt)
        if name == "shl":
            k = ins[1].const
            if k is None or dt is None or not 0 <= k < dt.bits:
                return None
            return _scale(ins[0], 1 << k, dt)
        if name == "cast":
            src = op.operands[0].type.elem
            if isinstance(src, DType) and src.is_int and dt is not None:
                a = ins[0]
                cap = 1 << min(src.bits, dt.bits)
                return Affine(min(a.base_div, cap), tuple(Stride(_wrap(s.const, dt), min(s.div, cap)) for s in a.strides),
                              None, _wrap(a.const, dt))
            return None
        if name == "expand_dims":
            (a,) = ins
            s = list(a.strides)
            s.insert(op.attrs["axis"], ZERO)
            return Affine(a.base_div, tuple(s), a.origin, a.const)
        if name == "broadcast":
            (a,) = ins
            src = op.operands[0].type.shape
            return Affine(a.base_div, tuple(ZERO if n == 1 else s for n, s in zip(src, a.strides)), a.origin, a.const)
        if name == "trans":
            (a,) = ins
            return Affine(a.base_div, tuple(a.strides[p] for p in op.attrs["perm"]), a.origin, a.const)
        if name == "reshape":
            return _reshape(ins[0], op.operands[0].type.shape, out.shape)
        if name == "addptr":
            p, off = ins
            r = _add(p, off, 1, None)
            return Affine(r.base_div, r.strides, p.origin, None)
        return None


@dataclass(frozen=True)
class Run:
    """What a value is on every run of ``length`` lanes along its last dimension that starts at
    a lane index multiple of ``length``: ``start + i * step`` for ``i = 0 .. length - 1`` (no
    wrap-around inside the run), with ``start`` divisible by ``start_div``. For pointers the
    values are element offsets from the pointer parameter ``origin``."""

    step: int
    start_div: int
    origin: str | None = None


def run_of(v: Value, length: int, facts: AddressAnalysis, depth: int = 0) -> Run | None:
    """:func:`_run_of`, memoized in ``facts`` (shared operands are analysed once per depth)."""
    key = (id(v), length, depth)
    memo = facts.run_memo
    if key not in memo:
        memo[key] = _run_of(v, length, facts, depth)
    return memo[key]


def _run_of(v: Value, length: int, facts: AddressAnalysis, depth: int) -> Run | None:
    """The :class:`Run` of ``v`` for runs of ``length`` lanes (a power of two dividing the last
    dimension), or None when nothing is proven.

    Affine values give theirs directly; sums, constant products and shifts left combine runs.
    Beyond the affine facts it follows the index math of
    flattened kernels (``x % C``, ``x // C``, ``x & (2**k - 1)``, ``x >> k`` with constants,
    Triton's axis analysis does the same): with ``x = A + i`` on a run, ``A`` a multiple of
    ``length`` and ``C`` one too, ``x % C = (A % C) + i`` (the run never crosses a multiple of
    ``C``) and ``x // C`` is constant on the run. ``rem``/``div`` only on unsigned operands
    (signed ones round toward zero; the optimizer turns those of proven non-negative operands
    into unsigned ones). Shifts and masks by constants (``x >> k``, ``x << k``, ``x & M`` for any
    ``M``: ``2**k - 1``, ``-2**k``, ``(c - 1) << j``, and compositions such as ``(x >> k) << k``
    or ``(x >> 1) & -256``) go through a bit-level view of the run (:class:`_Bits`), exact on
    any sign: arithmetic and logical shifts alike, two's complement masks. ``x % 0`` is 0, so
    a zero divisor proves nothing.
    """
    shape = v.type.shape
    if not shape or shape[-1] % length or depth > 24:
        return None
    f = facts.get(v)
    if f is not None:
        return _affine_run(f, shape, length)
    op = v.owner
    if not isinstance(op, Operation):
        return None
    ins = op.operands
    name = op.op
    if name in ("splat", "const"):
        return Run(0, 1)
    if name in _FLIP:
        a, b = ins if name in ("lt", "ge") else ins[::-1]
        if _run_aligned(a, length, facts, 1, depth + 1) and _run_aligned(b, length, facts, 0, depth + 1):
            return Run(0, 1)  # A + i < B iff A < B when A and B are multiples of the run length
    if name in _CONSTANT_IF_OPERANDS_ARE or (name in ("and", "or", "xor") and v.type.elem == bool_):
        runs = [run_of(x, length, facts, depth + 1) for x in ins]  # (a load: address, mask and other)
        return Run(0, 1) if all(r is not None and r.step == 0 for r in runs) else None
    if name == "where":
        c, a, b = (run_of(x, length, facts, depth + 1) for x in ins)
        if c is None or a is None or b is None or c.step != 0 or a.step != b.step:
            return None
        return Run(a.step, min(a.start_div, b.start_div), a.origin if a.origin == b.origin else None)
    if name in ("add", "sub", "addptr"):
        a, b = (run_of(x, length, facts, depth + 1) for x in ins)
        if a is None or b is None:
            return None
        step = a.step + b.step if name != "sub" else a.step - b.step
        return Run(step, min(a.start_div, b.start_div), a.origin if name == "addptr" else None)
    if name == "mul":
        return _run_mul(ins, length, facts, depth)
    if name == "shl":
        k, dt = _uniform_const(ins[1], facts), op.results[0].type.elem
        r = run_of(ins[0], length, facts, depth + 1) if k is not None and isinstance(dt, DType) else None
        if r is not None and 0 <= k < dt.bits:  # type: ignore[union-attr,operator]
            return Run(r.step << k, min(r.start_div << k, BIG))
        return _bits_run(v, length, facts, depth)  # e.g. (x >> k) << k: a staircase made constant
    if name == "cast":
        return _run_cast(op, length, facts, depth)
    if name in ("and", "shr"):
        return _bits_run(v, length, facts, depth)
    if name in ("rem", "div"):
        return _run_index_math(op, length, facts, depth)
    if name == "broadcast" and ins[0].type.shape and ins[0].type.shape[-1] == shape[-1]:
        return run_of(ins[0], length, facts, depth + 1)
    return None


#: ops whose result is constant on a run when every operand is: comparisons, and a load whose
#: address, mask and ``other`` are (every lane of the run reads the same element at once)
_CONSTANT_IF_OPERANDS_ARE = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "not", "load"})


def _affine_run(f: Affine, shape: tuple[int, ...], length: int) -> Run | None:
    last = f.strides[-1].const if shape[-1] > 1 else 0
    if last is None:
        return None
    div = f.base_div
    for n, s in zip(shape[:-1], f.strides[:-1]):
        if n != 1:
            div = min(div, s.div)
    if last:
        div = min(div, pow2div(last) * length)  # the run start adds last * k * length
    return Run(last, div, f.origin)


def _uniform_const(v: Value, facts: AddressAnalysis) -> int | None:
    f = facts.get(v)
    return f.const if f is not None and f.is_uniform else None


def _run_mul(ins: tuple[Value, ...], length: int, facts: AddressAnalysis, depth: int) -> Run | None:
    for x, y in (ins, ins[::-1]):
        c = _uniform_const(y, facts)
        r = run_of(x, length, facts, depth + 1) if c is not None else None
        if r is not None:
            return Run(r.step * c, min(r.start_div * pow2div(c), BIG))
    return None


def _run_cast(op: Operation, length: int, facts: AddressAnalysis, depth: int) -> Run | None:
    src, dst = op.operands[0].type.elem, op.results[0].type.elem
    if not (isinstance(src, DType) and isinstance(dst, DType) and src.is_int and dst.is_int):
        return None
    r = run_of(op.operands[0], length, facts, depth + 1)
    if r is None or r.step not in (0, 1):
        return None
    # a run of consecutive values starting at a multiple of ``length`` never crosses a multiple
    # of 2**bits, so truncation and extension keep it
    cap = 1 << min(src.bits, dst.bits)
    return Run(r.step, min(r.start_div, cap)) if r.step == 0 or cap >= length else None


def _run_index_math(op: Operation, length: int, facts: AddressAnalysis, depth: int) -> Run | None:
    """``x % C`` and ``x // C`` on unsigned ``x`` with a positive constant ``C``."""
    x, y = op.operands
    dt = op.results[0].type.elem
    c = _uniform_const(y, facts)
    if c is None or not isinstance(dt, DType) or dt.is_signed or c <= 0:
        return None
    r = run_of(x, length, facts, depth + 1)
    if r is None:
        return None
    if r.step == 0:  # constant on the run stays constant
        return Run(0, 1)
    period = pow2div(c)
    if r.step != 1 or r.start_div < length or period < length:
        return None
    if op.op == "div":
        return Run(0, 1)
    return Run(1, min(r.start_div, period))


@dataclass(frozen=True)
class _Bits:
    """A value on every run of ``length`` lanes (as :class:`Run`), bit by bit: lane ``i`` holds
    ``A | ((i >> drop) << lift)`` (two's complement, the value's width), where ``A`` is divisible
    by ``start_div`` and ``start_div >= 2**top``, ``top = lift + log2(length) - drop`` being the
    end of the bits the lane part can occupy, with ``top < bits`` (the sign bit is ``A``'s). So
    the two parts never share a bit (``|`` is ``+``), and shifts and constant masks act on each
    part alone. The lane part is 0 (the value constant on the run) when ``drop >= log2(length)``;
    ``drop == 0`` is the run ``A + i * 2**lift``; ``drop > 0`` a staircase, which is not a
    :class:`Run` but may become one (``(x >> 1) & -256`` is constant on runs of 4 lanes)."""

    drop: int
    lift: int
    start_div: int

    def top(self, length: int) -> int:
        """The end of the lane part's bits (``lift`` when the part is 0)."""
        return self.lift + max(length.bit_length() - 1 - self.drop, 0)

    def run(self, length: int) -> Run | None:
        if self.top(length) == self.lift:
            return Run(0, self.start_div)
        return Run(1 << self.lift, self.start_div) if self.drop == 0 else None


def _bits_run(v: Value, length: int, facts: AddressAnalysis, depth: int) -> Run | None:
    b = _bits_of(v, length, facts, depth)
    return b.run(length) if b is not None else None


def _bits_of(v: Value, length: int, facts: AddressAnalysis, depth: int) -> _Bits | None:
    """The :class:`_Bits` of the integer value ``v``: through ``x >> k``, ``x << k`` and
    ``x & M`` with constants ``k`` (``0 <= k < bits``) and ``M``, from the :class:`Run` of
    whatever else (a run of step ``2**u`` whose start is a multiple of ``2**u * length``, or a
    constant). ``x >> k`` is exact for arithmetic (signed) and logical (unsigned) shifts alike:
    the lane part lies below the sign bit, so the sign fill is ``A``'s. ``x << k`` is refused
    when the lane part would reach the sign bit (that would wrap inside a run)."""
    dt = v.type.elem
    op = v.owner
    if not isinstance(dt, DType) or not dt.is_int or depth > 24:
        return None
    log_len = length.bit_length() - 1
    if isinstance(op, Operation) and op.op in ("and", "shr", "shl"):
        x, y = op.operands
        k = _uniform_const(y, facts)
        if k is None and op.op == "and":
            x, y = y, x
            k = _uniform_const(y, facts)
        b = _bits_of(x, length, facts, depth + 1) if k is not None else None
        if b is None:
            return None
        top = b.top(length)
        if op.op == "and":
            m = k & ((1 << dt.bits) - 1)  # type: ignore[operator]
            div = max(b.start_div, pow2div(m))  # A & M keeps A's low zero bits and M's
            window = ((1 << top) - 1) & ~((1 << b.lift) - 1)
            if m & window == window:
                return _Bits(b.drop, b.lift, div)
            return _Bits(log_len, 0, div) if m & window == 0 else None
        if not 0 <= k < dt.bits:  # type: ignore[operator]
            return None
        if op.op == "shr":
            div = max(b.start_div >> k, 1)
            if top - k <= 0:
                return _Bits(log_len, 0, div)
            return _Bits(b.drop, b.lift - k, div) if k <= b.lift else _Bits(b.drop + k - b.lift, 0, div)
        if top > b.lift and top + k >= dt.bits:
            return None
        return _Bits(b.drop, b.lift + k, min(b.start_div << k, BIG))
    r = run_of(v, length, facts, depth + 1)
    if r is None or r.origin is not None:
        return None
    if r.step == 0:
        return _Bits(log_len, 0, r.start_div)
    lift = r.step.bit_length() - 1
    if r.step < 0 or r.step & (r.step - 1) or r.start_div < r.step * length or lift + log_len >= dt.bits:
        return None
    return _Bits(0, lift, r.start_div)


def _reshape(a: Affine, src: tuple[int, ...], dst: tuple[int, ...]) -> Affine | None:
    src_big = [(n, s) for n, s in zip(src, a.strides) if n != 1]
    if [n for n, _ in src_big] == [n for n in dst if n != 1]:
        it = iter(s for _, s in src_big)
        return Affine(a.base_div, tuple(ZERO if n == 1 else next(it) for n in dst), a.origin, a.const)
    # a linear function of the flat index survives any reshape
    c = None
    for d, (n, s) in enumerate(zip(src, a.strides)):
        if n == 1:
            continue
        if s.const is None:
            return None
        slab = prod(src[d + 1:])
        if s.const % slab:
            return None
        cd = s.const // slab
        if c is None:
            c = cd
        elif c != cd:
            return None
    c = 0 if c is None else c
    return Affine(a.base_div, tuple(ZERO if n == 1 else Stride.of(c * prod(dst[d + 1:])) for d, n in enumerate(dst)),
                  a.origin, a.const)


def vector_width(fact: Affine | None, shape: tuple[int, ...], chunk: int, elem_bytes: int, origin_align: int) -> int:
    """How many consecutive elements of a thread's layout chunk one memory instruction may cover.

    ``chunk`` is the layout's chunk width (:attr:`eggpu.codegen.layout.Layout.vec`): a thread's
    slots come in runs of ``chunk`` consecutive flat elements starting at multiples of
    ``chunk``. A piece of ``w`` elements (``w`` a power of two, at most 16 bytes, dividing ``chunk``
    and the last dimension) is contiguous when the last dimension has stride 1, and aligned
    to ``w * elem_bytes`` when the base pointer is aligned to ``origin_align`` bytes and the
    element offset of every chunk start is a multiple of ``w``. Returns 1 when nothing wider
    is proven.
    """
    if fact is None or not shape or elem_bytes > 16:
        return 1
    last = fact.strides[-1]
    if shape[-1] > 1 and last.const != 1:
        return 1
    w = 16 // elem_bytes
    while w > 1:
        if chunk % w == 0 and shape[-1] % w == 0 and (shape[-1] > 1 or w == 1):
            offset_div = fact.base_div
            for n, s in zip(shape[:-1], fact.strides[:-1]):
                if n != 1:
                    offset_div = min(offset_div, s.div)
            align = min(origin_align, offset_div * elem_bytes) if offset_div < BIG else origin_align
            if align >= w * elem_bytes and offset_div * elem_bytes >= w * elem_bytes:
                return w
        w //= 2
    return 1


def run_vector_width(ptr: Value, shape: tuple[int, ...], chunk: int, elem_bytes: int, origin_align: int,
                     facts: AddressAnalysis) -> int:
    """:func:`vector_width` for a pointer block without an affine fact, from its :class:`Run`:
    ``w`` consecutive elements per piece (step 1), each piece starting at an element offset
    that is a multiple of ``w`` from a base aligned to ``origin_align`` bytes."""
    if not shape or elem_bytes > 16:
        return 1
    w = 16 // elem_bytes
    while w > 1:
        if chunk % w == 0 and shape[-1] % w == 0:
            r = run_of(ptr, w, facts)
            if (r is not None and r.step == 1 and r.origin is not None and r.start_div >= w
                    and origin_align >= w * elem_bytes):
                return w
        w //= 2
    return 1


def _chunk_aligned(fact: Affine | None, shape: tuple[int, ...], w: int, last: int) -> bool:
    """``fact`` describes a value whose last dimension has stride ``last`` (0 or 1) and whose
    other terms are multiples of ``w``: on a run of ``w`` lanes starting at a multiple of ``w``
    along the last dimension it is ``A + i * last`` with ``A`` a multiple of ``w``."""
    if fact is None or not shape:
        return False
    if shape[-1] > 1 and fact.strides[-1].const != last:
        return False
    if fact.base_div < w:
        return False
    return all(n == 1 or s.div >= w for n, s in zip(shape[:-1], fact.strides[:-1]))


_FLIP = {"lt": "gt", "ge": "le", "gt": "lt", "le": "ge"}


def chunk_uniform(v: Value, w: int, facts: AddressAnalysis, depth: int = 0) -> bool:
    """Whether the bool block ``v`` is constant on every run of ``w`` lanes that starts at a
    multiple of ``w`` along the last dimension (``w`` a power of two dividing the last dimension).

    Proven for: constants and splats; ``a < b`` and ``a >= b`` (and ``b > a``, ``b <= a``) where
    ``a`` is ``A + i`` and ``b`` is ``B`` on such a run, ``A`` and ``B`` multiples of ``w`` (then
    ``A + i < B`` iff ``A < B``; in i32 the run cannot straddle a wrap-around, which happens at a
    multiple of ``w``); ``and``/``or``/``xor``/``not`` of such masks; ``broadcast`` of a mask
    whose last dimension is 1 (constant along it) or kept (each run is a source run), and
    ``expand_dims``/``reshape`` that keep the last dimension. So a mask like
    ``offs < n`` with ``n`` specialized divisible by 16 selects whole vector pieces.
    """
    shape = v.type.shape
    if not shape or shape[-1] == 1:
        return True
    if depth > 16 or shape[-1] % w:
        return False
    op = v.owner
    if not isinstance(op, Operation):
        return False
    name = op.op
    if name in ("const", "splat"):
        return True
    if name in ("and", "or", "xor"):
        return all(chunk_uniform(o, w, facts, depth + 1) for o in op.operands)
    if name == "not":
        return chunk_uniform(op.operands[0], w, facts, depth + 1)
    if name in ("broadcast", "expand_dims", "reshape"):
        src = op.operands[0]
        sshape = src.type.shape
        if name == "broadcast" and (not sshape or sshape[-1] == 1):
            return True  # constant along the last dimension
        # the last dimension is kept: each run of the result is a run of the source (broadcast
        # copies whole rows; expand_dims and reshape keep the flat order)
        return bool(sshape) and sshape[-1] == shape[-1] and chunk_uniform(src, w, facts, depth + 1)
    if name in _FLIP:
        pair = _int_compare(op, shape, ("gt", "le"))  # as a < b or a >= b
        if pair is None:
            return False
        a, b = pair
        if _chunk_aligned(facts.get(a), shape, w, 1) and _chunk_aligned(facts.get(b), b.type.shape or shape, w, 0):
            return True
        return _run_aligned(a, w, facts, 1) and _run_aligned(b, w, facts, 0)
    r = run_of(v, w, facts)  # e.g. a comparison of values that are constant on each run
    return r is not None and r.step == 0


def down_closed(v: Value, w: int, facts: AddressAnalysis, depth: int = 0) -> bool:
    """Whether the bool block ``v`` is true on a prefix of every run of ``w`` lanes that starts at
    a multiple of ``w`` along the last dimension (``w`` a power of two dividing it): lane ``i``
    true implies every earlier lane of its run true, so the run is all true iff its last lane is.

    Proven for: :func:`chunk_uniform` masks; ``a < b`` and ``a <= b`` (and ``b > a``, ``b >= a``)
    where ``a`` is ``A + i`` on the run, ``A`` a multiple of ``w`` (:func:`run_of`), and ``b``
    is constant on it (``offs < n`` for any ``n``); ``and`` of such
    masks; ``or`` of one with a :func:`chunk_uniform` mask; ``broadcast``, ``expand_dims`` and
    ``reshape`` that keep the last dimension.
    """
    if chunk_uniform(v, w, facts):
        return True
    shape = v.type.shape
    if depth > 16 or not shape or shape[-1] % w:
        return False
    op = v.owner
    if not isinstance(op, Operation):
        return False
    name = op.op
    if name == "and":
        return all(down_closed(o, w, facts, depth + 1) for o in op.operands)
    if name == "or":
        a, b = op.operands
        return ((chunk_uniform(a, w, facts) and down_closed(b, w, facts, depth + 1))
                or (chunk_uniform(b, w, facts) and down_closed(a, w, facts, depth + 1)))
    if name in ("broadcast", "expand_dims", "reshape"):
        src = op.operands[0]
        sshape = src.type.shape
        return bool(sshape) and sshape[-1] == shape[-1] and down_closed(src, w, facts, depth + 1)
    if name in _FLIP:
        pair = _int_compare(op, shape, ("gt", "ge"))  # as a < b or a <= b
        if pair is None or pair[1].type.shape != shape:
            return False
        a, b = pair
        # a = A + i with A a multiple of w: the run crosses no multiple of w, hence neither the
        # signed nor the unsigned wrap-around, and a increases along it in either order
        ra, rb = run_of(a, w, facts), run_of(b, w, facts)
        return (ra is not None and rb is not None and rb.step == 0
                and (ra.step == 0 or (ra.step == 1 and ra.start_div >= w)))
    return False


def _int_compare(op: Operation, shape: tuple[int, ...], flip: tuple[str, ...]) -> tuple[Value, Value] | None:
    """The operands ``(a, b)`` of the comparison ``op`` (result shape ``shape``), swapped when its
    op is in ``flip``; None unless ``a`` is an integer block of that shape."""
    a, b = op.operands
    if op.op in flip:
        a, b = b, a
    at = a.type
    if not isinstance(at.elem, DType) or not at.elem.is_int or at.shape != shape:
        return None
    return a, b


def _run_aligned(v: Value, w: int, facts: AddressAnalysis, step: int, depth: int = 0) -> bool:
    """``v`` is ``A + i * step`` on each run of ``w`` lanes with ``A`` a multiple of ``w`` (so,
    for step 1 against step 0, ``A + i < B`` iff ``A < B`` on the whole run)."""
    r = run_of(v, w, facts, depth)
    return r is not None and r.step == step and r.start_div >= w


def chunk_contiguous(ptr: Value, w: int, facts: AddressAnalysis) -> bool:
    """Whether the pointer block ``ptr`` addresses ``w`` consecutive elements on every run of
    ``w`` lanes that starts at a multiple of ``w`` along the last dimension (``w`` dividing it):
    the address of lane ``k*w + i`` is that of lane ``k*w`` plus ``i`` elements. No alignment is
    needed, so the stores of such a run can share one address register with immediate offsets.

    Proven for ``addptr(p, o)`` with ``p`` constant along the last dimension and ``o`` equal to
    ``A + i`` on the run, ``A`` a multiple of ``w`` (:func:`_chunk_aligned`): the run cannot
    straddle an integer wrap-around of ``o`` (one happens at a multiple of ``w``), and the
    sign-extended offset is added to the 64-bit address.
    """
    shape = ptr.type.shape
    if not shape or w < 1 or shape[-1] % w:
        return False
    op = ptr.owner
    if not isinstance(op, Operation) or op.op != "addptr":
        return False
    p, o = op.operands
    pf = facts.get(p)
    if pf is not None and (shape[-1] == 1 or pf.strides[-1].const == 0) and _chunk_aligned(facts.get(o), shape, w, 1):
        return True
    return _run_aligned(ptr, w, facts, 1)  # index math beyond affine (x % C + ...)

