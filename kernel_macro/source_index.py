"""The kernel-file index: a function's source text and the names its body loads, looked up by
the bytes of its file, so that a fresh-process cache hit builds its cache key without importing
inspect, ast, tokenize or textwrap (~8 ms of a 30 ms budget, issue 12).

What :meth:`Source.of <eggpu.kernel_macro.diagnostics.Source.of>` needs of a function is a
function of three things: the bytes of its file, its code object's first line and name, and
the code that finds and parses the source (Python's :mod:`inspect`, eggpu's name walk). An
entry is stored under the sha256 of all of them — the file's sha256, ``co_firstlineno``,
``co_name``, the Python version and a *salt* that the facade sets to the toolchain fingerprint
(every eggpu source file), so an edited file, a moved function, another interpreter or an
edited eggpu each look up another entry, never a stale one.

An entry is written only from a source that ``inspect`` read out of exactly the bytes hashed
for its key: after ``inspect.getsourcelines`` the lines it used (``linecache``'s) must equal the
hashed bytes decoded the way ``linecache`` decodes them, else nothing is written (a file
edited while it was read). Functions whose file cannot be read as a regular file (a notebook
cell, a zip import, a vanished file) and wrapped functions (``__wrapped__``, which inspect
follows) are never indexed.

Entries live in the kernel cache directory (``source-<sha256>.json``), read and written with
the same checks as compiled kernels (:mod:`eggpu.ir.cachefs`: owner, permissions, no symbolic
links, atomic replace). A malformed entry is ignored (the source is read with inspect again and
the entry rewritten). Without a configured directory (``cache=False``, an unusable cache) the
index is not used at all.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from eggpu.ir.cachefs import CacheUnavailable, atomic_write, read_trusted
from eggpu.ir.hashing import sha256

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Entry", "configure", "lookup", "refresh_linecache", "store"]

#: the layout of an entry; part of its key
FORMAT = 1
#: source files bigger than this are not indexed (read with inspect every time)
MAX_SOURCE_BYTES = 16 * 1024 * 1024

_directory: Path | None = None
_salt = ""


def configure(directory: Path | None, salt: str) -> None:
    """Use the trusted cache ``directory`` (None: no index) with entries keyed on ``salt``
    as well (the facade passes the toolchain fingerprint). Process-wide: threads compiling
    into different cache directories may read each other's index, which gives the same answer
    (every entry is keyed on the bytes it was read from, and every directory set is trusted)."""
    global _directory, _salt
    _directory, _salt = directory, salt


class Entry:
    """What the index holds for one function: ``first_line`` (1-based, decorators included),
    ``lines`` (verbatim, with their line ends), ``text`` (dedented) and ``names`` (the sorted
    name/attribute chains its body loads)."""

    __slots__ = ("first_line", "lines", "names", "text")

    def __init__(self, first_line: int, lines: list[str], text: str, names: tuple[tuple[str, ...], ...]):
        self.first_line, self.lines, self.text, self.names = first_line, lines, text, names


def _read_source(path: str) -> bytes | None:
    """The bytes of the regular file ``path`` (None when it is anything else, unreadable or too
    big); opened non-blocking, so a FIFO planted under a source name never hangs a compile."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _path(fn: Any, data: bytes) -> Path | None:
    code = fn.__code__
    key = json.dumps([FORMAT, _salt, list(sys.version_info[:2]), code.co_filename, sha256(data).hexdigest(),
                      code.co_firstlineno, code.co_name])
    return _directory / f"source-{sha256(key.encode()).hexdigest()}.json" if _directory is not None else None


def _indexable(fn: Any) -> bytes | None:
    """The bytes of ``fn``'s file when ``fn`` can be indexed (see the module docstring)."""
    if _directory is None or hasattr(fn, "__wrapped__") or getattr(fn, "__code__", None) is None:
        return None
    return _read_source(fn.__code__.co_filename)


def lookup(fn: Any) -> tuple[Entry | None, bytes | None]:
    """``fn``'s entry (None when absent, malformed or not indexable) and the file bytes it was
    looked up by (pass them to :func:`store`; None: do not store)."""
    data = _indexable(fn)
    path = _path(fn, data) if data is not None else None
    if path is None:
        return None, None
    try:
        raw = read_trusted(path)
    except CacheUnavailable:
        return None, None  # a planted or foreign file: neither trusted nor overwritten
    if raw is None:
        return None, data
    try:
        d = json.loads(raw)
        first, lines, text = d["first_line"], d["lines"], d["text"]
        names = tuple(tuple(c) for c in d["names"])
        ok = (type(first) is int and first >= 1 and isinstance(text, str) and isinstance(lines, list)
              and all(isinstance(s, str) for s in lines)
              and all(c and all(isinstance(s, str) for s in c) for c in names))
    except (ValueError, KeyError, TypeError, RecursionError):
        ok = False
    return (Entry(first, lines, text, names) if ok else None), data


def _decoded_lines(data: bytes) -> list[str] | None:
    """``data`` as ``linecache`` reads a source file (its PEP 263 encoding, universal newlines)."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return io.TextIOWrapper(io.BytesIO(data), encoding, line_buffering=True).readlines()
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def refresh_linecache(filename: str, data: bytes | None = None) -> None:
    """Make ``linecache``'s lines of the regular file ``filename`` its current bytes (``data``, or
    read now) when they differ: ``linecache.checkcache`` compares only size and mtime, which a
    rewrite within one mtime tick keeps. Anything that is not a readable regular file (a notebook
    cell, a zip import) is left alone."""
    import linecache

    if filename not in linecache.cache:
        return  # inspect reads it afresh
    if data is None:
        data = _read_source(filename)
    if data is not None and linecache.getlines(filename) != _decoded_lines(data):
        linecache.updatecache(filename)


def store(fn: Any, data: bytes | None, entry: Entry) -> None:
    """Index ``entry`` for ``fn`` under the bytes ``data`` of its file, if the lines inspect just
    read (``linecache``'s) are exactly those bytes; a cache that cannot be written is skipped."""
    import linecache

    path = _path(fn, data) if data is not None else None
    if path is None or linecache.getlines(fn.__code__.co_filename) != _decoded_lines(data):
        return
    blob = {"first_line": entry.first_line, "lines": entry.lines, "text": entry.text,
            "names": [list(c) for c in entry.names]}
    try:
        atomic_write(path, json.dumps(blob).encode())
    except CacheUnavailable:
        pass  # the index is only a shortcut
