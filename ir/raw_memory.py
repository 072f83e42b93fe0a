"""Raw addresses on the host: what ``int_to_ptr`` pointers refer to in the interpreter and run_cpu.

A kernel may load a 64-bit address from memory and turn it into a pointer
(``tl.load(table + g).to(tl.pointer_type(tl.float16))``, Triton's grouped GEMM). On the GPU that
is a device address; on the host (the interpreter and ``run_cpu``) it is a host address, and it
may only refer to memory the launch was given: the pointer arguments' arrays and the arrays
passed as ``buffers=[...]`` (the arrays reachable through raw addresses, e.g. those whose
``arr.ctypes.data`` fill the table). Every access through such a pointer is looked up in these
arrays by address range:

* an access of a ``T`` element at address ``a`` is valid when ``[a, a + sizeof(T))`` lies inside
  one of the arrays and ``a`` is a multiple of ``sizeof(T)`` (the GPU faults on a misaligned
  access too); the element is read or written in that array's memory, whatever the array's own
  dtype (the bytes are reinterpreted, as on the GPU); a store or an atomic also needs a writable
  array (a read-only numpy array is not written through a raw address either);
* any other address is an :class:`~eggpu.ir.errors.OutOfBoundsError` naming the kernel, the op,
  the program, the lane and the address (:func:`raw_message`, the same words in the interpreter
  and in run_cpu) — never a read of unrelated memory, never a crash.

Arrays may overlap (views of one array): an address inside several of them refers to the same
bytes whichever is picked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import DType
from .errors import OutOfBoundsError

__all__ = ["AddressSpace", "RawPointer", "address_of", "check_buffers", "oob", "raw_message"]


class RawPointer:
    """A block (or scalar) of pointers made by ``int_to_ptr``: byte addresses (int64; an unsigned
    address is kept as its two's-complement bit pattern) to elements of ``dtype``.

    ``offsets`` holds the addresses (the name the interpreter's shape ops use for a pointer
    value's payload), so ``splat``/``broadcast``/``reshape``... apply to them unchanged."""

    __slots__ = ("offsets", "dtype")
    name = "<raw address>"

    def __init__(self, addresses: np.ndarray, dtype: DType):
        self.offsets = np.asarray(addresses, dtype=np.int64)
        self.dtype = dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.offsets.shape

    def with_offsets(self, addresses: np.ndarray) -> RawPointer:
        return RawPointer(addresses, self.dtype)

    def add(self, elements: np.ndarray) -> RawPointer:
        """``addptr``: ``elements`` elements further (wrapping at 64 bits, as the GPU's address add)."""
        with np.errstate(over="ignore"):
            return RawPointer(self.offsets + elements.astype(np.int64) * np.int64(self.dtype.itemsize), self.dtype)

    def __repr__(self) -> str:
        return f"RawPointer({self.dtype}, addresses={self.offsets!r})"


def address_of(p: Any) -> np.ndarray:
    """The byte addresses (int64) of a pointer value: a :class:`RawPointer`'s own, or an argument
    pointer's (``PointerValue``: its array's data address plus ``offsets * itemsize``)."""
    if isinstance(p, RawPointer):
        return p.offsets
    start = np.int64(p.base.__array_interface__["data"][0])
    with np.errstate(over="ignore"):
        return start + p.offsets * np.int64(p.base.itemsize)


def check_buffers(kernel: str, buffers: Any, error: type[Exception]) -> list[np.ndarray]:
    """``buffers=`` as a list of C-contiguous numpy arrays; ``error`` (naming the kernel and the
    index) for anything else."""
    if buffers is None:
        return []
    if isinstance(buffers, np.ndarray) or not isinstance(buffers, Sequence):
        raise error(f"{kernel}: buffers= takes a list of numpy arrays (the arrays reachable through raw "
                    f"addresses), got {type(buffers).__name__}")
    out = []
    for i, b in enumerate(buffers):
        if not isinstance(b, np.ndarray):
            raise error(f"{kernel}: buffers[{i}] must be a numpy array, got {type(b).__name__}")
        if not b.flags.c_contiguous:
            raise error(f"{kernel}: buffers[{i}] must be C-contiguous (strides {b.strides} for shape {b.shape}); "
                        f"pass np.ascontiguousarray(...) and use its address")
        out.append(b)
    return out


def raw_message(head: str, lane: str, verb: str, address: int, dtype: DType, arrays: int) -> str:
    """The error of an access through a raw address outside every known array (interpreter and
    run_cpu). ``head``: "kernel: op at loc in program P"; ``lane``: "lane (i, j) " or ""."""
    which = "array" if verb == "reads" else "writable array"
    return (f"{head}: out-of-bounds access: {lane}{verb} address {address & 0xFFFF_FFFF_FFFF_FFFF:#x} "
            f"({dtype}, {dtype.itemsize} bytes), which is not an aligned element of any {which} among the "
            f"{arrays} of this launch (pointer arguments and buffers=); pass the arrays the kernel reaches "
            f"through raw addresses as buffers=[...]")


class AddressSpace:
    """The arrays a launch can reach by address: ``(name, array)`` pairs (the pointer arguments,
    then ``buffers``). :meth:`resolve` maps raw addresses to elements of them."""

    def __init__(self, arrays: Sequence[tuple[str, np.ndarray]]):
        spans = []
        for name, a in arrays:
            start = int(a.__array_interface__["data"][0])
            spans.append((start, start + a.nbytes, name, a))
        spans.sort(key=lambda s: (s[0], -s[1]))
        self.spans = spans
        self._typed: dict[tuple[int, str], tuple[np.ndarray, int]] = {}

    def __len__(self) -> int:
        return len(self.spans)

    def _view(self, i: int, dt: DType) -> tuple[np.ndarray, int]:
        """Array ``i``'s bytes as elements of ``dt`` from its first ``dt``-aligned address, and
        that address."""
        key = (i, dt.name)
        hit = self._typed.get(key)
        if hit is None:
            start, end, _, a = self.spans[i]
            size = dt.itemsize
            pad = -start % size
            raw = a.reshape(-1).view(np.uint8)
            n = max(0, (end - start - pad) // size)
            hit = self._typed[key] = (raw[pad:pad + n * size].view(dt.np), start + pad)
        return hit

    def resolve(self, addresses: np.ndarray, dt: DType,
                write: bool = False) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], int]:
        """Group the accesses of ``dt`` elements at ``addresses`` (flat int64) by array (only the
        writable arrays when ``write``): ``([(typed view, element indices, positions in
        addresses)], first bad position or -1)``."""
        size = dt.itemsize
        addr = addresses.astype(np.int64).view(np.uint64)
        owner = np.full(addr.size, -1, dtype=np.int64)
        aligned = (addr % np.uint64(size)) == 0
        for i, (start, end, _, a) in enumerate(self.spans):
            if end - start < size or (write and not a.flags.writeable):
                continue
            # the first array (by start address) holding the element: one address, one owner
            owner[(owner < 0) & aligned & (addr >= np.uint64(start)) & (addr <= np.uint64(end - size))] = i
        bad = np.flatnonzero(owner < 0)
        groups = []
        for i in np.unique(owner[owner >= 0]).tolist():
            pos = np.flatnonzero(owner == i)
            view, base = self._view(int(i), dt)
            idx = ((addr[pos] - np.uint64(base)) // np.uint64(size)).astype(np.int64)
            groups.append((view, idx, pos))
        return groups, (int(bad[0]) if bad.size else -1)



def oob(head: str, lane: str, verb: str, address: int, dtype: DType, arrays: int) -> OutOfBoundsError:
    """The :class:`OutOfBoundsError` of :func:`raw_message`."""
    return OutOfBoundsError(raw_message(head, lane, verb, address, dtype, arrays))
