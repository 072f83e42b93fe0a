"""The per-process cache of lowered kernel IR: bounded, least recently used evicted first.

:meth:`eggpu.kernel_macro.kernel.Kernel.ir` lowers a specialization's Python source to tensor
IR once per process and keeps it here, keyed by ``(Kernel class, specialization)`` and tagged
with the digest of the kernel's dependencies (a changed digest is a miss, and the new IR
replaces the entry). The cache holds at most :data:`IR_CACHE_SIZE` entries: a process that
creates specializations without end (an autotuning sweep over block sizes, a long-running
server) would otherwise keep every IR graph it ever lowered. A hit makes the entry the most
recently used; an insert beyond the bound evicts the least recently used one, which is simply
lowered again if asked for. The entries are never mutated: callers get ``Function.clone()``.
Safe to use from several threads (one lock around each operation).
"""

from __future__ import annotations

from _thread import allocate_lock  # threading.Lock itself; the threading module costs a cache hit ~0.5 ms
from collections import OrderedDict
from collections.abc import Hashable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

__all__ = ["IR_CACHE_SIZE", "LruCache"]

#: the most lowered specializations one process keeps (each is one IR graph, typically a few
#: hundred ops; 256 covers a library of kernels times their dtypes and tuned block sizes)
IR_CACHE_SIZE = 256


class LruCache:
    """A mapping of at most ``maxsize`` (>= 1) entries, each tagged with a digest.

    :meth:`get` returns the value only when the stored digest equals the one asked for (and
    then marks the entry most recently used); :meth:`put` stores or replaces an entry and evicts
    the least recently used ones beyond ``maxsize``.
    """

    def __init__(self, maxsize: int = IR_CACHE_SIZE):
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1:
            raise ValueError(f"LruCache maxsize must be a positive int, got {maxsize!r}")
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, tuple[str, Any]] = OrderedDict()
        self._lock = allocate_lock()

    def get(self, key: Hashable, digest: str) -> Any:
        """The value stored under ``key`` with ``digest``; None when absent or stale."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None or hit[0] != digest:
                return None
            self._entries.move_to_end(key)
            return hit[1]

    def put(self, key: Hashable, digest: str, value: Any) -> None:
        """Store ``value`` under ``key`` (most recently used), evicting beyond ``maxsize``."""
        with self._lock:
            self._entries[key] = (digest, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
