"""Launch-time specialization facts: what a compiled kernel may assume about its arguments.

A :class:`Facts` value rides on every :class:`~eggpu.ir.graph.Function` (``fn.facts``; empty by
default) and is the one source the optimizer seeds its analyses from and code generation reads
(so the two never disagree). Every fact is checkable from the launch arguments alone, and every
way of running compiled code checks it first (:func:`check_launch`): a launch that violates a
fact never runs code compiled under it.

Facts per parameter (names as printed in the IR and in ``ck.report["specialization"]``):

* ``divK`` on an integer parameter (``K`` >= 2): the value is a multiple of ``K`` (as a
  mathematical integer; ``div16`` is Triton's 16-divisibility specialization, ``tl.multiple_of``
  and ``tl.assume(x % K == 0)`` give any ``K``);
* ``eq1`` on an integer parameter: the value is 1 (Triton specializes such arguments too; the
  pipeline replaces the parameter's uses by the constant 1, see :func:`substitute_constants`);
* ``alignK`` on a pointer parameter: the address is a multiple of ``K`` bytes (``align16``).

One fact about the whole launch:

* ``offsets_i32``: every grid axis ``g`` satisfies ``g * block <= 2**31`` where ``block`` is
  :attr:`Facts.block` (the largest block extent of the kernel, recorded when the fact is made).
  So ``program_id(a) * BLOCK + arange(0, BLOCK)`` never wraps in i32 for any ``BLOCK <= block``:
  the optimizer seeds ``program_id``'s upper bound with ``2**31 // block - 1``.

Facts are values (frozen, hashable); :meth:`Facts.text` / :func:`parse_facts` are the text form
used by the IR printer and parser (``facts(%n: div16, %x: align16, offsets_i32=1024)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from .errors import EggpuError, IRError
from .record import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

__all__ = ["I32_SPAN", "LOOP_BOUND_PREFIX", "Facts", "assumed_max", "check_launch", "describe_fact", "fact_holds",
           "facts_for_args", "grid_fits_i32", "loop_bound_assumption", "loop_bound_message",
           "max_block", "parse_fact", "pointer_address", "substitute_constants"]

I32_SPAN = 1 << 31
"""The bound of the ``offsets_i32`` fact: ``grid axis * block <= 2**31``."""

def parse_fact(text: str) -> tuple[str, int]:
    """``("div", 16)``, ``("align", 16)`` or ``("eq", 1)`` for a fact name; IRError otherwise."""
    m = re.match(r"(div|align)([0-9]+)\Z|eq1\Z", text)  # compiled on first use (a hit has no facts)
    if m is None:
        raise IRError(f"unknown specialization fact {text!r} (known: divK, alignK for K >= 2, eq1)")
    if text == "eq1":
        return "eq", 1
    k = int(m.group(2))
    if k < 2 or k > 1 << 62:
        raise IRError(f"specialization fact {text!r}: K must be in [2, 2**62]")
    return m.group(1), k


def describe_fact(text: str) -> str:
    """Words for a fact, as launch errors quote it (``divisible by 16``)."""
    kind, k = parse_fact(text)
    return {"div": f"divisible by {k}", "align": f"{k}-byte aligned", "eq": "equal to 1"}[kind]


class Facts(Frozen):
    """The specialization facts of one compiled kernel (module docstring).

    ``params``: sorted ``(parameter name, sorted fact names)`` pairs; ``block``: 0 without the
    ``offsets_i32`` fact, else the block extent it was made for.
    """

    _fields = ("params", "block")
    params: tuple[tuple[str, tuple[str, ...]], ...]
    block: int

    def __init__(self, params: tuple[tuple[str, tuple[str, ...]], ...] = (), block: int = 0):
        self._assign(params, block)

    @staticmethod
    def make(by_param: Mapping[str, Iterable[str]] | None = None, block: int = 0) -> Facts:
        """Facts from a mapping (fact names are checked; empty entries dropped)."""
        items = []
        for name, facts in sorted((by_param or {}).items()):
            fs = tuple(sorted(set(facts)))
            for f in fs:
                parse_fact(f)
            if fs:
                items.append((str(name), fs))
        if block < 0 or block > I32_SPAN:
            raise IRError(f"offsets_i32 block extent must be in [1, 2**31], got {block}")
        return Facts(tuple(items), int(block))

    def __bool__(self) -> bool:
        return bool(self.params) or self.block > 0

    def of(self, name: str | None) -> tuple[str, ...]:
        """The facts of parameter ``name`` (empty when none)."""
        for n, fs in self.params:
            if n == name:
                return fs
        return ()

    def divisor(self, name: str | None) -> int:
        """The largest power of two the facts prove divides integer parameter ``name`` (1: none)."""
        best = 1
        for f in self.of(name):
            kind, k = parse_fact(f)
            if kind == "div":
                best = max(best, k & -k)
        return best

    def alignment(self, name: str | None) -> int:
        """The byte alignment the facts give pointer parameter ``name`` (1: none)."""
        best = 1
        for f in self.of(name):
            kind, k = parse_fact(f)
            if kind == "align":
                best = max(best, k & -k)
        return best

    def is_one(self, name: str | None) -> bool:
        return "eq1" in self.of(name)

    @property
    def program_id_max(self) -> int | None:
        """The largest program id along any axis under ``offsets_i32`` (None without it)."""
        return I32_SPAN // self.block - 1 if self.block else None

    def merged(self, other: Facts) -> Facts:
        """Both sets of facts (the stronger ``offsets_i32`` block wins)."""
        d: dict[str, set[str]] = {}
        for n, fs in (*self.params, *other.params):
            d.setdefault(n, set()).update(fs)
        return Facts.make(d, max(self.block, other.block))

    def without(self, names: Iterable[str]) -> Facts:
        drop = set(names)
        return Facts(tuple((n, fs) for n, fs in self.params if n not in drop), self.block)

    def as_dict(self) -> dict[str, Any]:
        """JSON form (``ck.report["specialization"]``)."""
        out: dict[str, Any] = {n: list(fs) for n, fs in self.params}
        if self.block:
            out["*"] = [f"offsets_i32={self.block}"]
        return out

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Facts:
        """The inverse of :meth:`as_dict` (IRError on a malformed entry)."""
        block = 0
        by: dict[str, list[str]] = {}
        for n, fs in d.items():
            if not isinstance(fs, list | tuple) or not all(isinstance(f, str) for f in fs):
                raise IRError(f"specialization facts of {n!r} must be a list of names, got {fs!r}")
            if n == "*":
                for f in fs:
                    if not f.startswith("offsets_i32=") or not f[12:].isdigit():
                        raise IRError(f"unknown launch fact {f!r}")
                    block = int(f[12:])
            else:
                by[n] = list(fs)
        return Facts.make(by, block)

    def text(self) -> str:
        """``%n: div16 eq1, %x: align16, offsets_i32=1024`` (the IR printer's form)."""
        parts = [f"%{n}: {' '.join(fs)}" for n, fs in self.params]
        if self.block:
            parts.append(f"offsets_i32={self.block}")
        return ", ".join(parts)


def max_block(fn: Any) -> int:
    """The block extent the ``offsets_i32`` fact is made for: the longest ``arange`` of ``fn``
    (1 when it has none)."""
    return max([op.attrs["end"] - op.attrs["start"] for op in fn.walk() if op.op == "arange"] or [1])


def grid_fits_i32(grid: Sequence[int], block: int) -> bool:
    """Whether a launch of ``grid`` satisfies ``offsets_i32`` for ``block``."""
    return all(int(g) * block <= I32_SPAN for g in grid)


def fact_holds(fact: str, value: Any) -> bool:
    """Whether a launch value satisfies ``fact``: an int for ``divK``/``eq1``, an address (int)
    for ``alignK``."""
    kind, k = parse_fact(fact)
    v = int(value)
    if kind == "eq":
        return v == 1
    return v % k == 0


def pointer_address(v: Any) -> int | None:
    """The address of a host or device buffer argument (numpy's ``__array_interface__``, a CUDA
    tensor's ``data_ptr()``, ``__cuda_array_interface__``), or None when it has none we can read."""
    ai = getattr(v, "__array_interface__", None)  # numpy arrays (not imported here: ir.graph needs this module)
    if isinstance(ai, Mapping) and isinstance(ai.get("data"), tuple):
        return int(ai["data"][0])
    if getattr(v, "is_cuda", None) is True and callable(getattr(v, "data_ptr", None)):
        return int(v.data_ptr())  # a CUDA tensor (PyTorch's protocol; its __cuda_array_interface__ is slow)
    cai = getattr(v, "__cuda_array_interface__", None)
    if isinstance(cai, Mapping) and isinstance(cai.get("data"), tuple):
        return int(cai["data"][0])
    return None


def facts_for_args(names: Sequence[str], kinds: Sequence[str], values: Sequence[Any],
                   skip: Iterable[str] = ()) -> dict[str, tuple[str, ...]]:
    """Triton's automatic specialization of launch arguments: an integer divisible by 16 gets
    ``div16``, an integer equal to 1 ``eq1``, a buffer whose address is 16-byte aligned
    ``align16``. ``kinds`` are ``"int"``, ``"pointer"`` or anything else (no facts); parameters
    in ``skip`` (``do_not_specialize``) get none."""
    skipped = set(skip)
    out: dict[str, tuple[str, ...]] = {}
    for n, kind, v in zip(names, kinds, values):
        if n in skipped:
            continue
        if kind == "int" and not isinstance(v, bool):
            iv = int(v)
            if iv == 1:
                out[n] = ("eq1",)
            elif iv % 16 == 0:
                out[n] = ("div16",)
        elif kind == "pointer":
            a = pointer_address(v)
            if a is not None and a % 16 == 0:
                out[n] = ("align16",)
    return out


def check_launch(kernel: str, facts: Facts, names: Sequence[str], values: Sequence[Any],
                 grid: Sequence[int], error: type[EggpuError]) -> None:
    """Raise ``error`` naming the kernel, the argument and the fact when a launch breaks a fact.

    ``names``/``values``: the launch arguments by parameter name (scalars as numbers, buffers as
    numpy arrays, device arrays, or integer addresses); ``grid``: programs per axis.
    """
    if not facts:
        return
    by_name = dict(zip(names, values))
    for name, fs in facts.params:
        if name not in by_name:
            continue
        v = by_name[name]
        for f in fs:
            kind, _ = parse_fact(f)
            if kind == "align":
                a = v if isinstance(v, int) else pointer_address(v)
                if a is None or fact_holds(f, a):
                    continue
                got = f"address {a:#x}"
            else:
                try:
                    iv = int(v)
                except (TypeError, ValueError):
                    continue  # the argument check reports a wrong kind of value
                if fact_holds(f, iv):
                    continue
                got = str(iv)
            raise error(f"{kernel}: argument {name!r} must be {describe_fact(f)} (the kernel was compiled "
                        f"with the specialization fact {f}), got {got}; pass such a value or compile the kernel "
                        f"without that fact")
    if facts.block and not grid_fits_i32(grid, facts.block):
        for axis, g in enumerate(grid):
            if int(g) * facts.block > I32_SPAN:
                raise error(f"{kernel}: grid axis {axis} has {g} programs, more than the offsets_i32 fact allows "
                            f"({I32_SPAN // facts.block} programs of block {facts.block}: element offsets must fit "
                            f"in i32); compile it without offsets_i32")


def substitute_constants(fn: Any) -> int:
    """Replace every use of an integer parameter with the ``eq1`` fact by a constant 1 (inserted
    at the top of the body), as Triton does; returns how many parameters were replaced.

    The parameter stays in the signature (the launch ABI does not change), and the launch check
    guarantees it is 1.
    """
    from .graph import Operation

    facts = getattr(fn, "facts", None)
    if not facts:
        return 0
    subs: dict[int, Any] = {}
    new_ops = []
    for p in fn.params:
        t = p.type
        if facts.is_one(p.name) and not t.is_pointer and t.is_scalar and t.dtype.is_int:
            op = Operation("const", (), {"value": 1, "dtype": t.dtype}, (t,))
            op.results[0].name = f"{p.name}_eq1"
            new_ops.append(op)
            subs[id(p)] = op.results[0]
    if not subs:
        return 0

    def walk(block: Any) -> None:
        for op in block.ops:
            if any(id(v) in subs for v in op.operands):
                op.operands = tuple(subs.get(id(v), v) for v in op.operands)
            for r in op.regions:
                walk(r)

    walk(fn.body)
    fn.body.ops[:0] = new_ops
    return len(subs)


# ---------------------------------------------------------------- loop-bound assumptions

LOOP_BOUND_PREFIX = "le"
"""Code generation's assumption ``le{K}`` on an integer parameter (``LoweredModule.assumptions``,
``ck.report["assumptions"]``): the value is at most ``K``. A ``for`` loop whose upper bound is
that parameter steps ``iv += step; iv < hi`` without a wrap check, which is exact only when
``hi <= 2**31 - step`` (:mod:`eggpu.codegen.loop_form`); every launch checks it."""


def loop_bound_assumption(k: int) -> str:
    """The assumption text for "the value is at most ``k``"."""
    return f"{LOOP_BOUND_PREFIX}{int(k)}"


def assumed_max(what: str | None) -> int | None:
    """``K`` of an ``le{K}`` assumption, None for any other assumption (or None)."""
    if what and what.startswith(LOOP_BOUND_PREFIX) and what[len(LOOP_BOUND_PREFIX):].isdigit():
        return int(what[len(LOOP_BOUND_PREFIX):])
    return None


def loop_bound_message(kernel: str, name: str, what: str, value: Any) -> str | None:
    """The launch error for an integer argument that breaks its ``le{K}`` assumption, else None."""
    k = assumed_max(what)
    if k is None or int(value) <= k:
        return None
    return (f"{kernel}: argument {name!r} must be <= {k} (a compiled loop runs up to it in steps of "
            f"{I32_SPAN - k} without a 32-bit wrap check), got {int(value)}")
