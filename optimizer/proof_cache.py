"""On-disk cache of rule verdicts.

One JSON file, ``proofs.json``, in ``$EGGPU_PROOF_CACHE_DIR``, else ``$EGGPU_CACHE_DIR/proofs`` or the platform user cache dir
(``platformdirs.user_cache_dir("eggpu")/proofs``). Entries are keyed by the sha256 of the rule's
canonical egglog text, its kind and ruleset (with the semantics and budget versions),
:data:`~eggpu.optimizer.schema.SCHEMA_VERSION` and the verifier's own version — so editing a rule, the schema or
the verifier re-proves it, while a proof (or a refutation) stays valid across z3 releases: it is a
fact about the encoded formula, not about the solver that found it. An ``unknown`` verdict is
stored under a key that adds its budget and the z3 version
(:func:`~eggpu.optimizer.rule_verifier._unknown_key`: a later run with a larger budget or another
z3 tries again), except one the wall-clock safety cap gave. Writes are atomic and serialized by a file
lock, so concurrent processes can share the cache.

Trust, as for the kernel cache (:mod:`eggpu.ir.cachefs`): a cached "proved" verdict lets a rule
fire without a proof, so the directory must be owned by the user and not writable by group or
others, else the cache is ignored (rules are proved again, nothing is written) with one
:class:`~eggpu.ir.cachefs.CacheWarning`. ``proofs.json`` is read without following symlinks and
only when it is a regular file of the user's; writes go to a fresh ``mkstemp`` file renamed over
it, so a planted ``proofs.<pid>.tmp`` or ``proofs.json`` symlink is never followed. A malformed
file or entry is ignored with a warning; no cache problem ever fails verification.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from eggpu.ir.cachefs import (
    CacheUnavailable,
    atomic_write,
    ensure_trusted_dir,
    file_lock,
    read_trusted,
    warn_once,
)

#: folder (inside the proof directory) of the markers of rule programs egglog accepted
MARKERS = "egglog-accepted"
#: bump when the verifier's encoding changes meaning (invalidates every cached proof)
VERIFIER_VERSION = "3"


def cache_dir() -> Path:
    """Directory of the proof cache (created on first write).

    ``EGGPU_PROOF_CACHE_DIR`` wins; then ``$EGGPU_CACHE_DIR/proofs``; then the user cache dir.
    """
    explicit = os.environ.get("EGGPU_PROOF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    env = os.environ.get("EGGPU_CACHE_DIR")
    if env:
        return Path(env) / "proofs"
    import platformdirs

    return Path(platformdirs.user_cache_dir("eggpu")) / "proofs"


def cache_root() -> Path:
    """The cache directory the proof directory lives in (``$EGGPU_PROOF_CACHE_DIR`` itself when
    that is set): the folders between it and :func:`cache_dir` are eggpu's and are checked to be
    real directories (:func:`~eggpu.ir.cachefs.ensure_trusted_dir` with ``under=``)."""
    explicit = os.environ.get("EGGPU_PROOF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return cache_dir().parent


def _z3_version() -> str:
    """z3's version (:func:`.proof_versions.z3_version`: asked once per process, without
    importing z3 when its distribution says it)."""
    from .proof_versions import z3_version

    return z3_version()


def rule_key(egglog_text: str, extra: str = "", *, solver: bool = False) -> str:
    """Cache key of a rule: sha256 of its text, ``extra``, the schema and verifier versions, and
    with ``solver`` z3's version.

    A decided verdict (proved, or refuted with a counterexample) is a fact about the encoded
    formula, whichever z3 found it, so it is keyed without the solver: shipped proofs and a
    user's cache stay valid across z3 releases. An ``unknown`` is what one z3 reached within a
    budget of its resource units, which another z3 counts differently: ``solver=True``."""
    from .schema import SCHEMA_VERSION

    h = hashlib.sha256()
    parts = (egglog_text, extra, SCHEMA_VERSION, VERIFIER_VERSION) + ((_z3_version(),) if solver else ())
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class ProofCache:
    """A dict-like view of ``proofs.json`` (key -> JSON verdict). Never raises for a cache problem."""

    def __init__(self, directory: Path | str | None = None):
        self.dir = Path(directory) if directory is not None else cache_dir()
        self.root = self.dir if directory is not None else cache_root()
        self.path = self.dir / "proofs.json"
        self._data: dict[str, Any] | None = None
        # the user cache dir is relative only when "~" cannot be expanded (no home directory)
        self._problem: str | None = None if directory is not None or self.dir.is_absolute() else (
            "no home directory to put it in; set EGGPU_PROOF_CACHE_DIR")

    def _warn(self, problem: str) -> None:
        warn_once(f"eggpu: ignoring the proof cache {self.path}: {problem}; rules are proved again",
                  key=f"proof-cache:{self.path}:{problem}")

    def _trusted(self, create: bool) -> bool:
        """Whether the directory may be used (creating it when ``create``); warns once if not."""
        if self._problem is not None:
            self._warn(self._problem)
            return False
        if not create and not self.dir.exists():
            return True  # nothing to read yet
        try:
            ensure_trusted_dir(self.dir, under=self.root)
        except CacheUnavailable as e:
            self._problem = str(e)  # not retried by this object
            self._warn(self._problem)
            return False
        return True

    def _read(self) -> dict[str, Any]:
        if not self._trusted(create=False):
            return {}
        try:
            raw = read_trusted(self.path)
        except CacheUnavailable as e:
            self._warn(str(e))
            return {}
        if raw is None:
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            self._warn(f"it is not valid JSON ({e})")
            return {}
        if not isinstance(data, dict):
            self._warn(f"it holds a JSON {type(data).__name__}, not an object")
            return {}
        good = {k: v for k, v in data.items() if _valid_verdict(v)}
        if len(good) != len(data):
            self._warn(f"{len(data) - len(good)} malformed entr{'y' if len(data) - len(good) == 1 else 'ies'}")
        return good

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            self._data = self._read()
        return self._data

    def get(self, key: str) -> Any | None:
        return self._load().get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._load()

    def __len__(self) -> int:
        return len(self._load())

    def put_many(self, entries: dict[str, Any]) -> None:
        """Merge ``entries`` into the cache file (re-reading it under the lock first). When the
        directory cannot be used the entries are kept in memory only (one warning)."""
        if not entries:
            return
        if not self._trusted(create=True):
            self._data = {**self._load(), **entries}
            return
        with ExitStack() as stack:
            try:
                stack.enter_context(file_lock(self.dir / "proofs.json.lock", timeout=30))
            except CacheUnavailable as e:  # still safe to write (atomically); a concurrent merge may be lost
                warn_once(f"eggpu: writing the proof cache {self.path} without its lock: {e}",
                          key=f"proof-cache-lock:{self.path}")
            data = {**self._read(), **entries}
            try:
                atomic_write(self.path, json.dumps(data, sort_keys=True).encode())
            except CacheUnavailable as e:
                self._warn(f"cannot write it ({e})")
        self._data = data

    def has_marker(self, name: str) -> bool:
        """Whether the empty marker file ``egglog-accepted/<name>`` exists (a regular file of the
        user's: a planted symlink or foreign file is no marker). False when the cache is unusable."""
        if not self._trusted(create=False):
            return False
        try:
            return read_trusted(self.dir / MARKERS / name) is not None
        except CacheUnavailable:
            return False

    def put_marker(self, name: str) -> None:
        """Create the marker ``egglog-accepted/<name>`` (atomically, never through a symlink; the
        folder must be a real directory). Silently does nothing when that is not possible: a
        marker is only a shortcut."""
        if not self._trusted(create=True):
            return
        folder = self.dir / MARKERS
        try:
            ensure_trusted_dir(folder, under=self.root)
            atomic_write(folder / name, b"")
        except CacheUnavailable:
            pass

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def clear(self) -> None:
        """Forget every verdict (removes ``proofs.json``; a symlink there is removed, not followed)."""
        self._data = {}
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            self._warn(f"cannot remove it ({e.strerror or e})")


def _valid_verdict(v: Any) -> bool:
    """The shape :meth:`RuleVerdict.from_json` reads: rule/location/ruleset strings and a list of
    per-dtype results, each with ``key`` and ``status`` strings."""
    if not isinstance(v, dict) or not all(isinstance(v.get(k), str) for k in ("rule", "location", "ruleset")):
        return False
    results = v.get("results")
    if not isinstance(results, list):
        return False
    for r in results:
        if not isinstance(r, dict) or not isinstance(r.get("key"), str) or not isinstance(r.get("status"), str):
            return False
        if not isinstance(r.get("detail", ""), str) or not isinstance(r.get("seconds", 0.0), int | float):
            return False
        if r.get("cex") is not None and not isinstance(r.get("cex"), dict):
            return False
        if not isinstance(r.get("strategy", ""), str) or type(r.get("rlimit", 0)) is not int:
            return False
    return isinstance(v.get("seconds", 0.0), int | float) and isinstance(v.get("note", ""), str)
