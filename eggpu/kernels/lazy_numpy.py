"""``np`` for the library's fixtures and references, imported on first use.

The kernel library is imported wherever its kernels are compiled (``eggpu.kernels.get(...)``,
the benchmarks, ``eggpu demo``), but numpy (~100 ms to import) is needed only to build test
cases and run references. Modules of the library write ``from .lazy_numpy import np`` and use
``np.<name>`` inside functions as usual; the first attribute read imports numpy. Nothing at
module level may read an attribute of it (that would import numpy on import again).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any


__all__ = ["np"]


class _LazyNumpy:
    """Forwards every attribute read to the numpy module, importing it the first time."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        import numpy

        return getattr(numpy, name)

    def __repr__(self) -> str:
        return "<numpy, imported on first use>"


np: Any = _LazyNumpy()
