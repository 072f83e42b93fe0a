"""``for i in range(lo, hi, step)``: the loop variable's dtype and the IR loop's operands.

The IR ``for`` counts with an i32 induction value. A loop whose bounds promote to i32 (or a
narrower type) maps onto it directly. A wider loop — i64, u32 or u64 bounds, as Triton's
integer promotion of the three bounds gives them — keeps its dtype: its trip count is computed
in the loop's (unsigned) dtype, the frontend lowers it to an IR ``while`` over a counter of that
dtype, and the loop variable is computed from the counter in the loop's dtype, so large bounds
are never truncated and the trip count is not limited to 2**31 - 1.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import DType, i32, i64, promote, u32, u64
from eggpu.ir.graph import Value

from .frontend_ops import Semantic, SemanticError, Tensor, describe


def _operand_dtype(sem: Semantic, v: Any, what: str) -> DType:
    """The dtype one bound contributes to the loop's promotion (bool counts as i32)."""
    if isinstance(v, Tensor):
        if v.is_block or v.is_pointer or not (v.dtype.is_int or v.dtype.is_bool):
            raise SemanticError(f"range {what} must be an integer scalar, got {v.type}")
        return i32 if v.dtype.is_bool else v.dtype
    if isinstance(v, int) and not isinstance(v, bool):
        return sem.default_dtype(v)
    raise SemanticError(f"range {what} must be an integer, got {describe(v)}")


def loop_dtype(sem: Semantic, lo: Any, hi: Any, step: Any) -> DType:
    """dtype of the variable of ``for i in range(lo, hi, step)``: the integer promotion of the
    three bounds (Triton's ``integer_promote_impl``; literals as i32, or i64/u64 when larger).
    Types that every value of fits in i32 (i8, i16, u8, u16) give an i32 loop."""
    dt = i32
    for v, what in ((lo, "start"), (hi, "end"), (step, "step")):
        dt = promote(dt, _operand_dtype(sem, v, what))
    return dt if dt in (i64, u32, u64) else i32


def loop_bounds(sem: Semantic, lo: Any, hi: Any, step: Any) -> tuple[Tensor, Tensor, Tensor, Any, Tensor | None]:
    """For ``range(lo, hi, step)``: the i32 ``lo, hi, step`` operands of an IR ``for``, a function
    that maps the loop's counter to the loop variable, and ``None`` — or, for a wide loop, the
    trip count (in the loop's unsigned dtype) that a ``while`` over a counter of that dtype runs.

    An i32 loop maps directly onto the IR ``for``. A wider loop (i64, u32, u64 bounds) keeps its
    dtype: it counts iterations ``k = 0 .. trips-1`` (``trips`` computed in the loop dtype,
    unsigned, before the loop) and the variable is ``lo + k * step`` in the loop dtype, so
    ``range(2**35, 2**35 + 3)`` runs 2**35, 2**35+1, 2**35+2. A runtime step of 0 runs no iteration.
    """
    dt = loop_dtype(sem, lo, hi, step)
    if dt == i32:
        return _as_i32(sem, lo), _as_i32(sem, hi), _as_i32(sem, step), lambda k: k, None
    lo_w, hi_w, step_w = (_as_wide(sem, v, dt, w) for v, w in ((lo, "start"), (hi, "end"), (step, "step")))
    udt = {32: u32, 64: u64}[dt.bits]
    op = sem.b.op

    def const(v: int, t: DType) -> Value:
        return sem.b.const(v, t)

    def as_u(v: Value) -> Value:
        return v if dt.is_unsigned else op("bitcast", v, dtype=udt)

    def count(first: Value, last: Value, stride: Value) -> Value:
        """Iterations of first, first + stride, ... while < last (stride > 0 as unsigned)."""
        d = as_u(op("sub", last, first))
        n = op("add", op("div", op("sub", d, const(1, udt)), stride), const(1, udt))
        return op("where", op("gt", last, first), n, const(0, udt))

    if isinstance(step, int):
        if step > 0:
            n = count(lo_w.value, hi_w.value, as_u(step_w.value))
        else:  # Python int step < 0 (0 is refused by the caller); dt is signed here
            n = count(hi_w.value, lo_w.value, as_u(op("neg", step_w.value)))
    else:
        zero = const(0, dt)
        is_zero = op("eq", step_w.value, zero)
        safe = op("where", is_zero, const(1, dt), step_w.value)
        n = count(lo_w.value, hi_w.value, as_u(safe))
        if dt.is_signed:
            down = count(hi_w.value, lo_w.value, as_u(op("neg", safe)))
            n = op("where", op("gt", safe, zero), n, down)
        n = op("where", is_zero, const(0, udt), n)
    def variable(k: Tensor) -> Tensor:
        kw = op("cast", k.value, dtype=dt) if k.dtype != dt else k.value
        return Tensor(op("add", lo_w.value, op("mul", kw, step_w.value)))

    return sem.const(0, i32), sem.const(0, i32), sem.const(1, i32), variable, Tensor(n)


def _as_i32(sem: Semantic, v: Any) -> Tensor:
    if isinstance(v, Tensor):
        return sem.cast(v, i32)
    sem.check_fits(v, i32)
    return sem.const(v, i32)


def _as_wide(sem: Semantic, v: Any, dt: DType, what: str) -> Tensor:
    if isinstance(v, Tensor):
        return sem.cast(v, dt)
    if not sem.fits(v, dt):
        raise SemanticError(f"range {what} {v} does not fit the loop's dtype {dt}",
                            "convert the bounds to one integer dtype first, e.g. n.to(tl.int64)")
    return sem.const(v, dt)
