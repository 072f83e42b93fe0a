"""Environment variables read on every launch, cheaply.

``os.environ.get(name)`` encodes the name, looks it up and decodes the value (~0.35 µs); a
``@eggpu.jit`` launch reads two variables (``EGGPU_JIT_DEVICE``, ``TRITON_DEBUG``) and must cost no
more than Triton's launch. On POSIX, CPython keeps the environment as a dict of encoded bytes
(``os.environ._data``, updated by every ``os.environ[...] = ...`` and ``del``, which is how
Python code changes the environment); :func:`getenv` looks the pre-encoded name up there and
decodes only a value that is present. Elsewhere (or if that dict is absent) it is
``os.environ.get``. Changes made behind Python's back (C code calling ``setenv``) are not seen,
as ``os.environ`` does not see them either.
"""

from __future__ import annotations

import os

_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None
_KEYS: dict[str, bytes] = {}


def getenv(name: str, default: str) -> str:
    """``os.environ.get(name, default)``, without re-encoding the name each time (module docs)."""
    if _DATA is None:
        return os.environ.get(name, default)
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = os.fsencode(name)
    value = _DATA.get(key)
    return default if value is None else os.fsdecode(value)
