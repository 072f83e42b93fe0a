"""Content-hashed on-disk cache of compiled kernels (DESIGN.md §4).

Layout: ``$EGGPU_CACHE_DIR`` (default: the user cache dir, ``.../eggpu``) holds, per key,
``{name}_{sha256}.ptx``, ``.ll``, ``.ir``, ``.py`` (source) and ``.json`` (report + manifest).
The ``.json`` file is written last and lists the sha256 of every other file, so an entry is
complete only when its manifest exists and every listed file hashes to what it says; a
truncated or corrupt entry is treated as a miss (and recompiled over), never returned.

Writes are atomic (temp file in the same directory + ``os.replace``). Concurrent compiles of one
key in several processes compile once: :meth:`Cache.lock` takes a per-key file lock, and the
caller re-checks the cache after acquiring it.

A hit costs one small JSON read and hashing the (small) artefacts it lists; nothing large is
hashed to compute the key (see :func:`cache_key`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ARTEFACTS = ("ptx", "ll", "ir", "py")


def default_cache_dir() -> Path:
    env = os.environ.get("EGGPU_CACHE_DIR")
    if env:
        return Path(env)
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("eggpu", appauthor=False))
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        return Path.home() / ".cache" / "eggpu"


def cache_key(parts: dict[str, Any]) -> str:
    """sha256 over a canonical JSON rendering of everything that changes the output."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class CacheEntry:
    """A complete cache entry: artefact texts plus the JSON report."""

    key: str
    stem: Path
    files: dict[str, str]
    report: dict[str, Any]


class Cache:
    """One cache directory."""

    def __init__(self, directory: str | os.PathLike[str] | None = None):
        self.dir = Path(directory) if directory is not None else default_cache_dir()

    def stem(self, name: str, key: str) -> Path:
        return self.dir / f"{name}_{key}"

    def get(self, name: str, key: str) -> CacheEntry | None:
        """The entry for (name, key), or None when absent, incomplete or corrupt."""
        stem = self.stem(name, key)
        try:
            manifest = json.loads(stem.with_suffix(".json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or manifest.get("key") != key:
            return None
        files: dict[str, str] = {}
        for ext, digest in manifest.get("sha256", {}).items():
            try:
                data = stem.with_suffix("." + ext).read_bytes()
            except OSError:
                return None
            if _sha(data) != digest:
                return None
            files[ext] = data.decode()
        return CacheEntry(key, stem, files, manifest.get("report", {}))

    def put(self, name: str, key: str, files: dict[str, str], report: dict[str, Any]) -> CacheEntry:
        """Write artefacts atomically, manifest last."""
        self.dir.mkdir(parents=True, exist_ok=True)
        stem = self.stem(name, key)
        digests = {}
        for ext, text in files.items():
            data = text.encode()
            _atomic_write(stem.with_suffix("." + ext), data)
            digests[ext] = _sha(data)
        manifest = {"key": key, "name": name, "sha256": digests, "report": report}
        _atomic_write(stem.with_suffix(".json"), json.dumps(manifest, indent=1, default=str).encode())
        return CacheEntry(key, stem, dict(files), report)

    @contextmanager
    def lock(self, name: str, key: str, timeout: float = 600.0) -> Iterator[None]:
        """Hold the per-key lock (other processes compiling the same key wait)."""
        from filelock import FileLock

        self.dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.stem(name, key)) + ".lock", timeout=timeout):
            yield


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
