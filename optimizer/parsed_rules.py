"""A disk cache of parsed rule files, so a new process does not parse the same rule bytes again.

Parsing and checking the ~260 shipped rules (:func:`.rules_loader.parse_rules`) takes 100-150 ms
per process here; reading them back takes 5-15 ms. An entry is ``parsed/<key>.pickle`` in the
proof cache directory, where ``key`` is the sha256 of

* every source's label and text, in order (the exact bytes :func:`.rules_loader.load_sources`
  parses: the labels are the rules' ``file``), and
* the code that parses them: the bytes of ``rules_loader.py``, ``schema.py``, ``analyses.py``
  and ``eggpu/ir/ops.py`` (the schema is generated from the op table), and :data:`FORMAT`.

So an entry only ever answers for the same text parsed by the same parser. Only sources that
parse without error are stored (an error is reported by parsing again).

The entry is a pickle of ``[(rules, declared rulesets), ...]`` (rebuilding ~8,000 frozen
dataclass nodes from JSON cost 25-60 ms, most of this cache's time). It is read with an
unpickler that resolves no global except :class:`~.rules_loader.Rule`,
:class:`~.rules_loader.SList` and :class:`~.rules_loader.Atom` (so loading builds only those and
builtin containers, and runs no code: a planted ``os.system`` is refused), and the result is
checked field by field, down every tree, before it is used. Entries are read and written only
through :mod:`eggpu.ir.cachefs` (no symlink followed, the user's own files, atomic replacement);
a directory that cannot be trusted, a malformed entry or any other problem makes :func:`get`
return None: the rules are then parsed as usual. At most :data:`KEEP` entries are kept (the
oldest are removed when a new one is written).
"""

from __future__ import annotations

import hashlib
import io
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FORMAT = 2
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


_SUFFIX = ".pickle"


class _RulesOnly(pickle.Unpickler):
    """An unpickler that can build Rule, SList and Atom and builtin values, and nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        from . import rules_loader

        if module == rules_loader.__name__ and name in ("Rule", "SList", "Atom"):
            return getattr(rules_loader, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a parsed-rule entry")


def get(sources: Sequence[tuple[str, str]]) -> list[tuple[list[Any], list[str]]] | None:
    """The parsed ``(rules, declared rulesets)`` of each source, or None (see the module docstring)."""
    from eggpu.ir.cachefs import CacheUnavailable, read_trusted

    folder, root = _folder()
    try:
        raw = read_trusted(folder / f"{key(sources)}{_SUFFIX}")
        if raw is None:
            return None
        doc = _RulesOnly(io.BytesIO(raw)).load()
        return doc if _valid(doc, len(sources)) else None
    except (CacheUnavailable, OSError, pickle.UnpicklingError, ValueError, KeyError, TypeError, IndexError,
            AttributeError, EOFError, RecursionError, UnicodeDecodeError, MemoryError):
        return None


def put(sources: Sequence[tuple[str, str]], parsed: Sequence[tuple[list[Any], list[str]]]) -> None:
    """Store what :func:`get` returns for ``sources``; silently does nothing when the cache
    directory cannot be used (the entry is only a shortcut)."""
    from eggpu.ir.cachefs import CacheUnavailable, atomic_write, ensure_trusted_dir, prune_newest

    folder, root = _folder()
    doc = [(list(rules), list(decl)) for rules, decl in parsed]
    try:
        data = pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)
        ensure_trusted_dir(folder, under=root)
        atomic_write(folder / f"{key(sources)}{_SUFFIX}", data)
        prune_newest(folder, _SUFFIX, 64 + len(_SUFFIX), KEEP)
    except (CacheUnavailable, OSError, ValueError, TypeError, pickle.PicklingError, RecursionError):
        pass


# ---------------------------------------------------------------------- checking an entry


def _valid(doc: Any, n_sources: int) -> bool:
    """Whether ``doc`` has exactly the shape :func:`put` writes: a list of ``(rules, declared)``
    per source, every rule's fields of their declared types, every tree made of Atoms/SLists."""
    if type(doc) is not list or len(doc) != n_sources:
        return False
    for entry in doc:
        if type(entry) is not tuple or len(entry) != 2:
            return False
        rules, declared = entry
        if type(rules) is not list or type(declared) is not list or not all(type(d) is str for d in declared):
            return False
        if not all(_valid_rule(r) for r in rules):
            return False
    return True


def _valid_rule(r: Any) -> bool:
    from .rules_loader import Rule

    if type(r) is not Rule:
        return False
    try:
        fields = (r.name, r.file, r.ruleset, r.kind, r.text, r.egglog)
        trees = (r.lhs, r.rhs, *r.guards, *r.actions)
        sorts = r.var_sorts
        line = r.line
    except (AttributeError, TypeError):
        return False
    return (all(type(f) is str for f in fields) and type(line) is int and type(r.guards) is tuple
            and type(r.actions) is tuple and type(sorts) is dict
            and all(type(k) is str and type(v) is str for k, v in sorts.items())
            and all(t is None or _valid_tree(t) for t in trees))


def _valid_tree(x: Any) -> bool:
    from .rules_loader import Atom, SList

    stack = [x]
    while stack:
        x = stack.pop()
        if type(x) is Atom:
            try:
                if type(x.text) is not str or type(x.line) is not int:
                    return False
            except AttributeError:
                return False
            continue
        if type(x) is not SList:
            return False
        try:
            items, ints = x.items, (x.line, x.end, x.start)
        except AttributeError:
            return False
        if type(items) is not tuple or not all(type(i) is int for i in ints):
            return False
        stack.extend(items)
    return True


__all__ = ["FORMAT", "KEEP", "get", "key", "put"]
