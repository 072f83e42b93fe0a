"""Blocks of pointers whose lanes point into different argument buffers (the interpreter's).

Triton lets ``tl.where`` choose per lane between pointers of two arguments
(``p = tl.where(m, a_ptr + offs, b_ptr + offs)``); each lane then keeps the buffer it was chosen
from. A :class:`MixedPointer` records that buffer per lane (``which`` indexes ``parts``) beside the
element offset, so every access is checked lane by lane against the lane's own buffer: an
out-of-bounds lane is an :class:`~eggpu.ir.errors.OutOfBoundsError` naming that buffer, even when
its address happens to fall inside another argument's array.

Pointer arithmetic, the shape ops, ``where``, ``eq``/``ne`` and ``ptr_to_int`` work on it as on a
one-buffer pointer; a selection whose lanes all land in one buffer is a plain pointer again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import OutOfBoundsError

__all__ = ["MixedPointer", "addresses", "out_of_bounds", "resolve", "same_address", "select"]


class MixedPointer:
    """Lane ``i`` points at element ``offsets[i]`` of ``parts[which[i]]`` (``parts``: one-buffer
    pointer values, of which only ``base`` and ``name`` are used; ``which`` and ``offsets`` are
    int64 arrays of the block's shape)."""

    __slots__ = ("parts", "which", "offsets")

    def __init__(self, parts: tuple[Any, ...], which: np.ndarray, offsets: np.ndarray):
        self.parts = parts
        self.which = np.asarray(which, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.offsets.shape

    def with_offsets(self, offsets: np.ndarray) -> MixedPointer:
        """Same buffers per lane, new offsets (``addptr``: same shape)."""
        return MixedPointer(self.parts, np.broadcast_to(self.which, np.shape(offsets)), offsets)

    def reshaped(self, fn: Callable[[np.ndarray], np.ndarray]) -> MixedPointer:
        """A shape op (``fn`` on an int64 array) applied to buffers and offsets alike."""
        return MixedPointer(self.parts, fn(self.which), fn(self.offsets))

    def __repr__(self) -> str:
        names = ", ".join(p.name for p in self.parts)
        return f"MixedPointer({names}, which={self.which!r}, offsets={self.offsets!r})"


def _split(p: Any) -> tuple[tuple[Any, ...], np.ndarray, np.ndarray]:
    if isinstance(p, MixedPointer):
        return p.parts, p.which, p.offsets
    return (p,), np.zeros(p.offsets.shape, dtype=np.int64), p.offsets


def _joined(parts: tuple[Any, ...], which: np.ndarray, offsets: np.ndarray) -> Any:
    """``parts``/``which``/``offsets`` as the simplest pointer value: one buffer for every lane
    gives a plain pointer of it."""
    used = np.unique(which)
    if used.size == 1:
        return parts[int(used[0])].with_offsets(offsets)
    return MixedPointer(parts, which, offsets)


def _common(a: Any, b: Any) -> tuple[tuple[Any, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both pointers over one list of buffers (identified by their array): parts, which_a,
    offsets_a, which_b, offsets_b."""
    pa, wa, oa = _split(a)
    pb, wb, ob = _split(b)
    parts = list(pa)
    remap = []
    for part in pb:
        k = next((i for i, q in enumerate(parts) if q.base is part.base), None)
        if k is None:
            parts.append(part)
            k = len(parts) - 1
        remap.append(k)
    return tuple(parts), wa, oa, np.asarray(remap, dtype=np.int64)[wb], ob


def select(cond: np.ndarray, a: Any, b: Any, shape: tuple[int, ...]) -> Any:
    """``where(cond, a, b)`` on pointer values (one-buffer or mixed), lane by lane."""
    parts, wa, oa, wb, ob = _common(a, b)
    which = np.broadcast_to(np.where(cond, wa, wb), shape)
    offsets = np.broadcast_to(np.where(cond, oa, ob), shape)
    return _joined(parts, which, offsets)


def same_address(a: Any, b: Any) -> np.ndarray:
    """Per lane: whether ``a`` and ``b`` point at the same element (same buffer, same offset)."""
    _, wa, oa, wb, ob = _common(a, b)
    return (wa == wb) & (oa == ob)


def addresses(p: MixedPointer, address_of: Callable[[Any], np.ndarray]) -> np.ndarray:
    """Byte addresses of every lane (``ptr_to_int``), each from its own buffer."""
    out = np.zeros(p.shape, dtype=np.int64)
    for k, part in enumerate(p.parts):
        sel = p.which == k
        out[sel] = address_of(part.with_offsets(p.offsets[sel]))
    return out


def out_of_bounds(where: str, shape: tuple[int, ...], flat_lane: int, verb: str, offset: int, name: str,
                  size: int) -> OutOfBoundsError:
    """The interpreter's out-of-bounds error for one lane of an access through an argument pointer."""
    lane = f"lane {tuple(int(i) for i in np.unravel_index(flat_lane, shape))} " if shape else ""
    return OutOfBoundsError(f"{where}: out-of-bounds access: {lane}{verb} offset {offset} "
                            f"of buffer '{name}' which has {size} element(s)")


def resolve(where: str, p: MixedPointer, offs: np.ndarray, lanes: np.ndarray | None,
            verb: str) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    """The accesses of the active lanes (``lanes``: flat indices, all when None; ``offs``: their
    offsets) grouped by buffer as ``(part, offsets, positions in offs)``, after checking every lane
    against its own buffer: the first out-of-bounds lane in row-major order raises."""
    which = p.which.reshape(-1)
    if lanes is not None:
        which = which[lanes]
    groups = []
    first: tuple[int, Any] | None = None
    for k, part in enumerate(p.parts):
        pos = np.flatnonzero(which == k)
        if not pos.size:
            continue
        idx = offs[pos]
        bad = (idx < 0) | (idx >= part.base.size)
        if bad.any():
            j = int(pos[int(np.argmax(bad))])
            if first is None or j < first[0]:
                first = (j, part)
        groups.append((part, idx, pos))
    if first is not None:
        j, part = first
        flat = j if lanes is None else int(lanes[j])
        raise out_of_bounds(where, p.shape, flat, verb, int(offs[j]), part.name, part.base.size)
    return groups
