"""Content-hashed on-disk cache of compiled kernels (DESIGN.md §4).

Layout: ``$EGGPU_CACHE_DIR`` (default: the user cache dir, ``.../eggpu``) holds, per key,
``{name}_{sha256}.ptx``, ``.ll``, ``.ir``, ``.py`` (source) and ``.json`` (report + manifest).
The ``.json`` file is written last and records the key, the kernel name and the sha256 of every
artefact, so an entry is complete only when its manifest exists, names this key and every listed
file hashes to what it says.

Trust (the cache holds PTX that ``launch`` runs and IR that ``run_cpu`` JIT-compiles natively):

* the directory must be owned by the current user and not writable by group or others, else the
  cache is bypassed (compiles still work, without it) with one :class:`~eggpu.ir.cachefs.CacheWarning`;
* entry files are opened without following symlinks and used only when they are regular files
  owned by the user and not group/world-writable; everything else is ignored with a warning;
* writes never open an existing path: a fresh ``mkstemp`` file, then ``os.replace``
  (:mod:`eggpu.ir.cachefs`), so a planted symlink can never redirect a write outside the directory.

Failures never escape: an unusable directory (unwritable, a file in the way, no home directory),
a malformed, foreign, truncated or non-UTF-8 entry each cost one warning and a compile without the
cache. A plain miss (no manifest) is silent.

Concurrent compiles of one key in several processes compile once: :meth:`Cache.lock` takes a
per-key ``flock`` and the caller re-checks the cache after acquiring it.

A hit costs one small JSON read and hashing the (small) artefacts it lists; nothing large is
hashed to compute the key (see :func:`cache_key`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from eggpu.ir import cachefs as _fs
from eggpu.ir.cachefs import CacheUnavailable, warn_once
from eggpu.ir.hashing import sha256
from eggpu.ir.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

ARTEFACTS = ("ptx", "ll", "ir", "py")
#: the characters a kernel name keeps in a file name (any other becomes ``_``); string tests, not
#: regular expressions, so that a cache hit compiles none
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _is_hex64(d: object) -> bool:
    """``d`` is a str of exactly 64 lowercase hex digits (a sha256 digest)."""
    return isinstance(d, str) and len(d) == 64 and not d.strip("0123456789abcdef")


def default_cache_dir() -> Path:
    """``$EGGPU_CACHE_DIR``, else the platform user cache dir (``~/.cache/eggpu`` on Linux).

    Raises :class:`CacheUnavailable` when no absolute location can be determined (no home).
    """
    env = os.environ.get("EGGPU_CACHE_DIR")
    if env:
        return Path(env)
    try:
        from platformdirs import user_cache_dir

        path = Path(user_cache_dir("eggpu", appauthor=False))
    except Exception as e:  # noqa: BLE001 - any failure to find a home means: no cache
        raise CacheUnavailable(f"cannot determine the user cache directory: {e}") from None
    if not path.is_absolute():  # "~" could not be expanded (no home directory)
        raise CacheUnavailable(f"cannot determine the user cache directory (got {path}); set EGGPU_CACHE_DIR")
    return path


def cache_key(parts: dict[str, Any]) -> str:
    """sha256 over a canonical JSON rendering of everything that changes the output."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return sha256(blob.encode()).hexdigest()


def _sha(data: bytes) -> str:
    return sha256(data).hexdigest()


class CacheEntry(Record):
    """A complete cache entry: artefact texts plus the JSON report."""

    _fields = ("key", "stem", "files", "report")
    key: str
    stem: Path
    files: dict[str, str]
    report: dict[str, Any]

    def __init__(self, key: str, stem: Path, files: dict[str, str], report: dict[str, Any]):
        self._assign(key, stem, files, report)


class _BadEntry(Exception):
    """An entry that must be ignored (the message says why)."""


class Cache:
    """One cache directory. No method raises for a cache problem: each warns once and degrades."""

    def __init__(self, directory: str | os.PathLike[str] | None = None):
        self._problem: str | None = None
        self._checked = False
        self.dir: Path | None
        if directory is not None:
            self.dir = Path(directory)
        else:
            try:
                self.dir = default_cache_dir()
            except CacheUnavailable as e:
                self.dir = None
                self._problem, self._checked = str(e), True

    def trusted_dir(self) -> Path | None:
        """The directory, created/checked once per Cache object; None when it cannot be used
        (without a warning: :meth:`usable` gives that)."""
        if not self._checked:
            self._checked = True
            try:
                _fs.ensure_trusted_dir(self.dir)  # type: ignore[arg-type]
            except CacheUnavailable as e:
                self._problem = str(e)
        return self.dir if self._problem is None else None

    def usable(self) -> bool:
        """Create/check the directory (once per Cache object); False (after one warning per
        directory and process) when it cannot be used: compile without the cache then."""
        if self.trusted_dir() is None:
            warn_once(f"eggpu: compiling without the kernel cache: {self._problem}",
                      key=f"kernel-cache-dir:{self.dir}")
            return False
        return True

    def stem(self, name: str, key: str) -> Path:
        """``{name}_{key}`` in the cache directory. ``name`` is reduced to ``[A-Za-z0-9_]`` (at
        most 64 characters) so that no kernel name (``../x``, ``a/b``) can place a file outside
        the directory; the key alone identifies the entry."""
        if self.dir is None:
            raise CacheUnavailable(self._problem or "no cache directory")
        return self.dir / f"{''.join(c if c in _NAME_CHARS else '_' for c in str(name))[:64] or 'kernel'}_{key}"

    def reject(self, stem: Path, reason: str) -> None:
        """Warn (once per entry) that the entry at ``stem`` is ignored and will be recompiled."""
        warn_once(f"eggpu: ignoring cache entry {stem}.json ({reason}); recompiling",
                  key=f"kernel-cache-entry:{stem}:{reason}")

    def get(self, name: str, key: str) -> CacheEntry | None:
        """The entry for (name, key), or None when absent (silently) or unusable (with a warning):
        malformed or foreign manifest, missing/truncated/modified/non-UTF-8 artefact, a symlink or
        a file not owned by the user or writable by others."""
        if not self.usable():
            return None
        stem = self.stem(name, key)
        try:
            raw = _fs.read_trusted(stem.with_suffix(".json"))
            if raw is None:
                return None
            return self._load(stem, name, key, raw)
        except (CacheUnavailable, _BadEntry) as e:
            self.reject(stem, str(e))
            return None

    def _load(self, stem: Path, name: str, key: str, raw: bytes) -> CacheEntry:
        try:
            manifest = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise _BadEntry(f"the manifest is not valid JSON: {e}") from None
        if not isinstance(manifest, dict):
            raise _BadEntry(f"the manifest is a JSON {type(manifest).__name__}, not an object")
        if manifest.get("key") != key or manifest.get("name") != name:
            raise _BadEntry("the manifest belongs to another key or kernel")
        digests = manifest.get("sha256")
        if not isinstance(digests, dict) or sorted(digests) != sorted(ARTEFACTS) or not all(
                _is_hex64(d) for d in digests.values()):
            raise _BadEntry(f"the manifest's sha256 must map each of {', '.join(ARTEFACTS)} to a digest")
        report = manifest.get("report")
        if not isinstance(report, dict):
            raise _BadEntry("the manifest has no report object")
        files: dict[str, str] = {}
        for ext in ARTEFACTS:
            path = stem.with_suffix("." + ext)
            data = _fs.read_trusted(path)
            if data is None:
                raise _BadEntry(f"{path.name} is missing")
            if _sha(data) != digests[ext]:
                raise _BadEntry(f"{path.name} does not match its manifest (truncated or modified)")
            try:
                files[ext] = data.decode("utf-8")
            except UnicodeDecodeError:
                raise _BadEntry(f"{path.name} is not UTF-8 text") from None
        return CacheEntry(key, stem, files, report)

    def put(self, name: str, key: str, files: dict[str, str], report: dict[str, Any]) -> CacheEntry | None:
        """Write artefacts atomically, manifest last. None (after one warning) when the cache
        cannot be written; the compile result is unaffected."""
        if not self.usable():
            return None
        stem = self.stem(name, key)
        try:
            digests = {}
            for ext in ARTEFACTS:
                data = files[ext].encode()
                _fs.atomic_write(stem.with_suffix("." + ext), data)
                digests[ext] = _sha(data)
            manifest = {"key": key, "name": name, "sha256": digests, "report": report}
            _fs.atomic_write(stem.with_suffix(".json"), json.dumps(manifest, indent=1, default=str).encode())
        except CacheUnavailable as e:
            warn_once(f"eggpu: cannot write the kernel cache ({e}); the result is not cached",
                      key=f"kernel-cache-write:{self.dir}")
            return None
        return CacheEntry(key, stem, {ext: files[ext] for ext in ARTEFACTS}, report)

    @contextmanager
    def lock(self, name: str, key: str, timeout: float = 600.0) -> Iterator[bool]:
        """Hold the per-key lock (other processes compiling the same key wait). Yields True when
        held, False (after a warning) when the cache or the lock file is unusable — the caller
        compiles anyway; writes stay atomic."""
        with ExitStack() as stack:
            held = False
            if self.usable():
                try:
                    stack.enter_context(_fs.file_lock(Path(str(self.stem(name, key)) + ".lock"), timeout))
                    held = True
                except CacheUnavailable as e:
                    warn_once(f"eggpu: compiling {name} without the cache lock: {e}",
                              key=f"kernel-cache-lock:{self.dir}")
            yield held
