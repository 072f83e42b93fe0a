"""The shipped rewrite rules (``*.egg`` data files, see docs/rules.md) and where rule files come
from: this package, ``EGGPU_RULES_PATH`` (``os.pathsep``-separated files or folders of ``*.egg``)
and the ``rules=[...]`` a compile names. Standard library only: the compile cache reads these
files' contents for its key on every compile, cache hits included.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def shipped_files() -> list[Path]:
    """The shipped rule files, in name order."""
    return sorted(Path(__file__).resolve().parent.glob("*.egg"))


def env_entries() -> list[str]:
    """Entries of ``EGGPU_RULES_PATH`` (empty entries ignored)."""
    return [p for p in os.environ.get("EGGPU_RULES_PATH", "").split(os.pathsep) if p.strip()]


def expand(entry: str | os.PathLike[str]) -> list[Path]:
    """A folder gives its ``*.egg`` files in name order; anything else is taken as one file."""
    p = Path(entry)
    return sorted(p.glob("*.egg")) if p.is_dir() else [p]


def rule_files(extra: Sequence[str | os.PathLike[str]] = (), *, shipped: bool = True, env: bool = True) -> list[Path]:
    """Every rule file a compile uses: shipped, then ``extra``, then ``EGGPU_RULES_PATH``."""
    files = shipped_files() if shipped else []
    for entry in [*extra, *(env_entries() if env else [])]:
        files += expand(entry)
    return files
