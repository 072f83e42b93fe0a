"""Installed versions of distributions, without importing ``importlib.metadata``.

``importlib.metadata`` costs ~45 ms to import in a fresh process (more than a whole cache hit
may take); the versions eggpu needs (egglog, llvmlite, z3-solver: they shape the output and are
part of cache keys) are read from the names of the ``*.dist-info`` folders on ``sys.path``,
the first one per distribution, as ``importlib.metadata`` finds it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable


def library_versions(names: Iterable[str]) -> list[str]:
    """``name=version`` (``name=absent`` when not installed) for each distribution, from the
    first ``name-version.dist-info`` folder on ``sys.path``."""
    wanted = {_normalized(n): n for n in names}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            if not item.endswith(".dist-info"):
                continue
            dist, _, ver = item[: -len(".dist-info")].partition("-")
            key = _normalized(dist)
            if key in wanted and wanted[key] not in found and ver:
                found[wanted[key]] = ver
        if len(found) == len(wanted):
            break
    return [f"{n}={found.get(n, 'absent')}" for n in names]


def _normalized(name: str) -> str:
    """``re.sub(r"[-_.]+", "_", name).lower()`` (PEP 503), without compiling a pattern on a hit."""
    key = name.replace("-", "_").replace(".", "_")
    while "__" in key:
        key = key.replace("__", "_")
    return key.lower()


def version_of(name: str) -> str | None:
    """The installed version of distribution ``name``, or None when it is not installed."""
    ver = library_versions([name])[0].partition("=")[2]
    return None if ver == "absent" else ver


__all__ = ["library_versions", "version_of"]
