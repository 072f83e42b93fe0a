"""A disk cache of parsed rule files, so a new process does not parse the same rule bytes again.

Parsing and checking the ~260 shipped rules (:func:`.rules_loader.parse_rules`) takes 100-150 ms
per process here; rebuilding them from a JSON copy takes about a quarter of that. An entry is
``parsed/<key>.json`` in the proof cache directory, where ``key`` is the sha256 of

* every source's label and text, in order (the exact bytes :func:`.rules_loader.load_sources`
  parses: the labels are the rules' ``file``), and
* the code that parses them: the bytes of ``rules_loader.py``, ``schema.py``, ``analyses.py``
  and ``eggpu/ir/ops.py`` (the schema is generated from the op table), and :data:`FORMAT`.

So an entry only ever answers for the same text parsed by the same parser. Only sources that
parse without error are stored (an error is reported by parsing again). Entries are read and
written only through :mod:`eggpu.ir.cachefs` (no symlink followed, the user's own files,
atomic replacement); a directory that cannot be trusted, a malformed entry or any other problem
makes :func:`get` return None: the rules are then parsed as usual. At most :data:`KEEP` entries
are kept (the oldest are removed when a new one is written).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FORMAT = 1
KEEP = 8
_code: str | None = None


def _code_digest() -> str:
    """sha256 of the parser's code (see the module docstring); computed once per process."""
    global _code
    if _code is None:
        from eggpu.ir import ops

        from . import analyses, rules_loader, schema

        h = hashlib.sha256(f"parsed-rules-{FORMAT}".encode())
        for mod in (rules_loader, schema, analyses, ops):
            h.update(Path(mod.__file__).read_bytes())
        _code = h.hexdigest()
    return _code


def key(sources: Sequence[tuple[str, str]]) -> str:
    h = hashlib.sha256(_code_digest().encode())
    for label, text in sources:
        for part in (label, text):
            data = part.encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
    return h.hexdigest()


def _folder() -> tuple[Path, Path]:
    from .proof_cache import cache_dir, cache_root

    return cache_dir() / "parsed", cache_root()


def get(sources: Sequence[tuple[str, str]]) -> list[tuple[list[Any], list[str]]] | None:
    """The parsed ``(rules, declared rulesets)`` of each source, or None (see the module docstring)."""
    from eggpu.ir.cachefs import CacheUnavailable, read_trusted

    folder, root = _folder()
    try:
        raw = read_trusted(folder / f"{key(sources)}.json")
        if raw is None:
            return None
        doc = json.loads(raw.decode("utf-8"))
        files = doc["files"]
        if doc.get("format") != FORMAT or not isinstance(files, list) or len(files) != len(sources):
            return None
        return [([_rule(v) for v in f["rules"]], [str(d) for d in f["declared"]]) for f in files]
    except (CacheUnavailable, OSError, ValueError, KeyError, TypeError, IndexError, AttributeError,
            RecursionError, UnicodeDecodeError):
        return None


def put(sources: Sequence[tuple[str, str]], parsed: Sequence[tuple[list[Any], list[str]]]) -> None:
    """Store what :func:`get` returns for ``sources``; silently does nothing when the cache
    directory cannot be used (the entry is only a shortcut)."""
    from eggpu.ir.cachefs import CacheUnavailable, atomic_write, ensure_trusted_dir, prune_newest

    folder, root = _folder()
    doc = {"format": FORMAT, "files": [{"rules": [_rule_json(r) for r in rules], "declared": list(decl)}
                                       for rules, decl in parsed]}
    try:
        ensure_trusted_dir(folder, under=root)
        atomic_write(folder / f"{key(sources)}.json", json.dumps(doc, separators=(",", ":")).encode())
        prune_newest(folder, ".json", 69, KEEP)
    except (CacheUnavailable, OSError, ValueError):
        pass


# ---------------------------------------------------------------------- JSON form of a Rule


def _sx_json(x: Any) -> Any:
    from .rules_loader import Atom

    if x is None:
        return None
    if isinstance(x, Atom):
        return [x.text, x.line]
    return {"i": [_sx_json(i) for i in x.items], "l": x.line, "e": x.end, "s": x.start}


def _sx(v: Any) -> Any:
    from .rules_loader import Atom, SList

    if v is None:
        return None
    if isinstance(v, list):
        text, line = v
        if not isinstance(text, str) or not isinstance(line, int):
            raise TypeError("bad atom")
        return Atom(text, line)
    return SList(tuple(_sx(i) for i in v["i"]), int(v["l"]), int(v["e"]), int(v["s"]))


def _rule_json(r: Any) -> list[Any]:
    return [r.name, r.file, r.line, r.ruleset, r.kind, _sx_json(r.lhs), _sx_json(r.rhs),
            [_sx_json(g) for g in r.guards], [_sx_json(a) for a in r.actions], r.text, r.egglog,
            dict(r.var_sorts)]


def _rule(v: list[Any]) -> Any:
    from .rules_loader import Rule

    name, file, line, ruleset, kind, lhs, rhs, guards, actions, text, egglog, var_sorts = v
    if not all(isinstance(s, str) for s in (name, file, ruleset, kind, text, egglog)) or not isinstance(line, int):
        raise TypeError("bad rule")
    if not isinstance(var_sorts, dict) or not all(isinstance(s, str) for s in var_sorts.values()):
        raise TypeError("bad variable sorts")
    return Rule(name, file, line, ruleset, kind, _sx(lhs), _sx(rhs), tuple(_sx(g) for g in guards),
                tuple(_sx(a) for a in actions), text, egglog, var_sorts)


__all__ = ["FORMAT", "KEEP", "get", "key", "put"]
