"""The form of a counted ``for`` loop: Triton's stepped loop where it is exact.

``for iv in range(lo, hi, step)`` has two lowerings (:meth:`eggpu.codegen.lowering.Lowerer._for`):

* **stepped** (Triton's form): ``iv`` starts at ``lo``, the loop runs while ``iv < hi``
  (signed) and adds ``step`` per iteration. LLVM rotates it into a guard ``lo < hi`` and a
  bottom test ``iv + step < hi``: one induction variable compared with a loop-invariant bound,
  the shape ptxas recognizes and unrolls exactly as it does Triton's loops. It is exact when
  ``iv + step`` never wraps for an ``iv < hi``, i.e. ``hi <= 2**31 - step``; then every
  iteration of Python's ``range`` runs and no other.
* **counted** (any bounds): the trip count is computed once in unsigned 32-bit arithmetic and a
  counter ``k`` runs up to it with ``iv = lo + k*step``. Exact for every ``lo``, ``hi`` and
  ``step`` (wrapping ranges, step 0, negative or runtime steps), but ptxas unrolls it with two
  induction variables and an unsigned trip count: on sm_80 rms_norm's two row loops cost 183
  SASS instructions counted against 153 stepped (``fast_math=True``, 10-column rows).

:func:`stepped_step` picks the stepped form when ``step`` is a positive constant and ``hi`` is
a constant ``<= 2**31 - step``, or an ``i32`` parameter: a parameter's bound comes from a
``divK`` fact when ``K`` is a multiple of ``step`` (a multiple of ``K`` that is at most
``2**31 - 1`` is at most ``2**31 - K``), otherwise it becomes the assumption ``le{2**31 - step}``
on that parameter (:func:`eggpu.ir.facts.loop_bound_assumption`), which every launch checks
(``launch``, ``run_cpu``): a launch with a larger value raises LaunchError naming the kernel,
the argument and the bound, it never runs the loop. Any other bound keeps the counted form.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.facts import I32_SPAN, assumed_max, loop_bound_assumption
from eggpu.ir.graph import Function, Operation, Value

__all__ = ["stepped_step"]


def _const(v: Value) -> int | None:
    op = v.owner
    if getattr(op, "op", None) == "const":
        return int(op.attrs["value"])  # type: ignore[union-attr]
    return None


def stepped_step(lw: Any, op: Operation) -> int | None:
    """The constant step of ``op`` (a ``for``) when the stepped form is exact for it (module
    docstring), recording the parameter assumption that makes it so on ``lw``; else None."""
    lo, hi, step = op.operands[:3]
    c = _const(step)
    if c is None or c <= 0 or any(getattr(v.type.dtype, "name", "") != "i32" for v in (lo, hi)):
        return None
    limit = I32_SPAN - c  # the largest hi for which iv + c cannot wrap while iv < hi
    h = _const(hi)
    if h is not None:
        return c if h <= limit else None
    if not isinstance(hi.owner, Function) or not hi.name:
        return None
    div = lw.fn.facts.divisor(hi.name)
    if div >= c and div % c == 0:
        return c
    known = assumed_max(lw.assumptions.get(hi.name))
    if lw.assumptions.get(hi.name) is not None and known is None:
        return None  # another kind of assumption on this parameter: leave it alone
    lw.record_assumption(hi.name, loop_bound_assumption(limit if known is None else min(known, limit)))
    return c
