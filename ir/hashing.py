"""``sha256`` for the cache-hit path without loading OpenSSL.

:mod:`hashlib` loads OpenSSL's ``_hashlib`` when it is imported (~2.5 ms, 6% of a fresh-process
cache hit); the interpreter's own SHA-2 module (``_sha2`` on Python 3.12+, ``_sha256`` on 3.11; :mod:`hashlib` otherwise)
computes the same digests. Code that a cache hit runs (the key, the fingerprint, the entry
manifest) takes ``sha256`` from here; anything else may keep using :mod:`hashlib`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any


try:  # Python >= 3.12
    from _sha2 import sha256 as _sha256
except ImportError:  # pragma: no cover - Python 3.11 names the same module _sha256
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[no-redef]
    except ImportError:  # a build without it: OpenSSL's
        from hashlib import sha256 as _sha256  # type: ignore[no-redef]

__all__ = ["sha256"]


def sha256(data: bytes = b"") -> Any:
    """A new SHA-256 hash object (``update``, ``digest``, ``hexdigest``), fed ``data``."""
    return _sha256(data)
