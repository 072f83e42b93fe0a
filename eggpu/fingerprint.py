"""The toolchain fingerprint in the cache key, cheap enough for a 30 ms cache hit.

The fingerprint is the sha256 of eggpu's own sources (every ``*.py`` and ``*.egg`` of its
packages, by name and content), the versions of the libraries that shape the output (llvmlite,
egglog, z3-solver) and eggpu's version. Hashing the ~1 MB of sources and asking
``importlib.metadata`` for versions costs tens of milliseconds in a fresh process, more than
the rest of a cache hit, so the result is memoized on disk in the ``toolchain/`` folder of
the (trusted) kernel cache directory — beside the ptxas version, the other fact about the
installation rather than about any kernel — under the sha256 of a *stat signature*: every source file's path, size, inode,
modification and status-change times (nanoseconds), the library versions and eggpu's version.

Why the memo can never serve a stale fingerprint: any write to a source file changes its
status-change time (``st_ctime``, set by the kernel; ``touch``/``utime`` cannot set it back),
so an edited file gives a new signature. The one gap is the timestamp granularity (file
systems take times from a coarse clock): a file written twice within one clock tick, with the
same size, could keep its times. So a memo is only written when every file's times are more
than :data:`RACY_SECONDS` older than the moment of writing (the "racily clean" rule git uses);
until then the sources are hashed on every call.

Library versions are read from the names of the ``*.dist-info`` folders on ``sys.path`` (the
first one per library, as ``importlib.metadata`` finds it), without importing
``importlib.metadata``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

from eggpu.ir import versions
from eggpu.ir.hashing import sha256

#: files whose times are this close to "now" are not trusted to a memo (see the module docstring)
RACY_SECONDS = 2.0
LIBRARIES = ("llvmlite", "egglog", "z3-solver")


def source_files(dirs: Iterable[Path]) -> list[Path]:
    """Every ``*.py`` and ``*.egg`` under ``dirs`` (not in ``__pycache__``), sorted by path parts
    (``Path`` order). Walked with :func:`os.walk`, which skips the ``__pycache__`` folders
    instead of listing and sorting their bytecode (a cache hit runs this: ``Path.rglob`` and
    sorting ``Path`` objects cost several ms); symbolic links to folders are not followed."""
    return [Path(p) for p in _source_paths(dirs)]


def _source_paths(dirs: Iterable[Path]) -> list[str]:
    """:func:`source_files` as strings (``str(path)`` of each): a cache hit stats them without
    making ``Path`` objects."""
    out = []
    for root in sorted(dirs):
        if "__pycache__" in root.parts:
            continue
        top = str(root)
        found = []
        for folder, subdirs, names in os.walk(top):
            subdirs[:] = [d for d in subdirs if d != "__pycache__"]
            rel = tuple(os.path.relpath(folder, top).split(os.sep)) if folder != top else ()
            found += [(*rel, n) for n in names if n.endswith((".py", ".egg"))]
        out += [os.path.join(top, *parts) for parts in sorted(found)]
    return out


def library_versions(names: Iterable[str] = LIBRARIES) -> list[str]:
    """``name=version`` for each of ``names`` (default: the libraries in the fingerprint); see
    :func:`eggpu.ir.versions.library_versions`."""
    return versions.library_versions(names)


def hash_sources(files: Iterable[Path], libraries: Iterable[str], version: str) -> str:
    """The fingerprint itself: sha256 over every file's name and bytes, the library versions
    and eggpu's version."""
    h = sha256()
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for lib in libraries:
        h.update(lib.encode())
    h.update(version.encode())
    return h.hexdigest()


def fingerprint(dirs: Iterable[Path], version: str, memo_dir: Path | None, *, under: Path | None = None) -> str:
    """The fingerprint of the sources under ``dirs`` (see the module docstring), memoized in
    ``memo_dir`` (None: no memo). ``under``: the trusted cache root ``memo_dir`` lies in, which
    is then created inside it when missing (:func:`eggpu.ir.cachefs.ensure_trusted_dir`); None:
    ``memo_dir`` itself must be a trusted directory."""
    paths = _source_paths(dirs)
    libs = library_versions()
    stats = []
    newest = 0
    for p in paths:
        st = os.stat(p)
        stats.append((p, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    signature = sha256(json.dumps([stats, libs, version]).encode()).hexdigest()
    memo = memo_dir / f"toolchain-{signature}.fingerprint" if memo_dir is not None else None
    if memo is not None:
        from eggpu.ir.cachefs import CacheUnavailable, read_trusted

        try:
            data = read_trusted(memo)
        except CacheUnavailable:
            data = None
        if data is not None and len(data) == 64 and not data.strip(b"0123456789abcdef"):
            return data.decode()
    fp = hash_sources([Path(p) for p in paths], libs, version)
    if memo is not None and time.time_ns() - newest > RACY_SECONDS * 1e9:
        from eggpu.ir.cachefs import CacheUnavailable, atomic_write, ensure_trusted_dir

        try:
            if under is not None:
                ensure_trusted_dir(memo.parent, under=under)
            atomic_write(memo, fp.encode())
        except CacheUnavailable:
            pass  # the memo is only a shortcut
    return fp


__all__ = ["LIBRARIES", "RACY_SECONDS", "fingerprint", "hash_sources", "library_versions", "source_files"]
