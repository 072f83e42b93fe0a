"""A compile cache prepared on a machine with eggpu's full toolchain, for a GPU machine without it.

The GPU image lent to sessions has no egglog or z3 (and another llvmlite), so eggpu cannot
compile there; the artefacts are compiled here into a cache folder that travels with the tree.
The cache key includes :func:`eggpu.pipeline.toolchain_fingerprint` (eggpu's sources and the
versions of llvmlite/egglog/z3), which differs on the GPU machine, so :func:`record` writes the
fingerprint the artefacts were built with and :func:`adopt` makes the GPU-side process use it.
Benchmark-only: the product never trusts a foreign fingerprint on its own.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE = "toolchain_fingerprint"


def record(directory: str) -> None:
    from eggpu.pipeline import toolchain_fingerprint

    Path(directory, FILE).write_text(toolchain_fingerprint())


def adopt() -> bool:
    """Use the fingerprint recorded in ``$EGGPU_CACHE_DIR`` (if any); True when adopted."""
    directory = os.environ.get("EGGPU_CACHE_DIR")
    path = Path(directory, FILE) if directory else None
    if path is None or not path.is_file():
        return False
    import eggpu.pipeline as pipeline

    pipeline._FINGERPRINT = path.read_text().strip()
    return True
