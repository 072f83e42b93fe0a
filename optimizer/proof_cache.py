"""On-disk cache of rule verdicts.

One JSON file, ``proofs.json``, in ``$EGGPU_PROOF_CACHE_DIR``, else ``$EGGPU_CACHE_DIR/proofs`` or the platform user cache dir
(``platformdirs.user_cache_dir("eggpu")/proofs``). Entries are keyed by the sha256 of the rule's
canonical egglog text, its kind and ruleset, :data:`~eggpu.optimizer.schema.SCHEMA_VERSION`,
the verifier's own version and the z3 version — so editing a rule, the schema, the verifier or
upgrading z3 re-proves it. Only final verdicts are stored (``unknown`` results are not cached, so
a later run with a larger time budget tries again). Writes are atomic and serialized by a file
lock, so concurrent processes can share the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

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


def rule_key(egglog_text: str, extra: str = "") -> str:
    """Cache key of a rule: sha256 of its text, the schema and verifier versions and z3's."""
    import z3

    from .schema import SCHEMA_VERSION

    h = hashlib.sha256()
    for part in (egglog_text, extra, SCHEMA_VERSION, VERIFIER_VERSION, z3.get_version_string()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class ProofCache:
    """A dict-like view of ``proofs.json`` (key -> JSON verdict)."""

    def __init__(self, directory: Path | str | None = None):
        self.dir = Path(directory) if directory is not None else cache_dir()
        self.path = self.dir / "proofs.json"
        self._data: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            try:
                self._data = json.loads(self.path.read_text())
                if not isinstance(self._data, dict):
                    self._data = {}
            except (OSError, ValueError):
                self._data = {}
        return self._data

    def get(self, key: str) -> Any | None:
        return self._load().get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._load()

    def __len__(self) -> int:
        return len(self._load())

    def put_many(self, entries: dict[str, Any]) -> None:
        """Merge ``entries`` into the cache file (re-reading it under the lock first)."""
        if not entries:
            return
        from filelock import FileLock

        self.dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock", timeout=30):
            self._data = None
            data = dict(self._load())
            data.update(entries)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, sort_keys=True))
            os.replace(tmp, self.path)
            self._data = data

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def clear(self) -> None:
        self._data = {}
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
