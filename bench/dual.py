"""One kernel source file, executed for eggpu or for Triton: the same text compiled by both.

A *dual* source file reads a ``BACKEND`` global (injected before it runs) and imports either
``eggpu``/``eggpu.language`` or ``triton``/``triton.language`` as ``jitlib``/``tl``; everything
after that is the kernel text both compilers see. :func:`load` executes such a file once per
backend under its own module name (Triton resolves a kernel's globals through its module, so the
module is registered in ``sys.modules``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BACKENDS = ("eggpu", "triton")
_LOADED: dict[tuple[str, str], ModuleType] = {}


def load(source: Path, backend: str, prefix: str) -> ModuleType:
    """``source`` executed with ``BACKEND = backend`` as module ``bench.{prefix}_{backend}`` (once)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose 'eggpu' or 'triton'")
    key = (str(source), backend)
    if key not in _LOADED:
        name = f"bench.{prefix}_{backend}"
        spec = importlib.util.spec_from_file_location(name, source)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        mod.__dict__["BACKEND"] = backend
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        _LOADED[key] = mod
    return _LOADED[key]
