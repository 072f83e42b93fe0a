"""The shipped rewrite rules (``*.egg`` data files, see docs/rules.md) and where rule files come
from: this package, ``EGGPU_RULES_PATH`` (``os.pathsep``-separated files or folders of ``*.egg``)
and the ``rules=[...]`` a compile names. Standard library only at import time: the compile cache
reads these files' contents for its key on every compile, cache hits included.

What counts as a rule file (checked by :func:`rule_files` and :func:`read_rule_file`, so neither the
cache key nor the loader ever blocks on or drains something that is not a file):

* a **regular file** of at most :data:`MAX_RULE_FILE_BYTES` (4 MiB). A symbolic link is followed
  and accepted when it ends at a regular file (rule folders made of links into a checkout work);
  a FIFO, socket, device (``/dev/zero``), folder or dangling link is refused with a
  :class:`~eggpu.ir.errors.RuleError` naming the path and what it is;
* a missing path is a RuleError ``PATH: rule file not found``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

#: the largest rule file read (the shipped ones are a few KiB)
MAX_RULE_FILE_BYTES = 4 * 1024 * 1024


def shipped_files() -> list[Path]:
    """The shipped rule files, in name order."""
    return _egg_files(Path(__file__).resolve().parent)


def _egg_files(folder: Path) -> list[Path]:
    """``sorted(folder.glob("*.egg"))`` (POSIX: case-sensitive, dot-files too) from one
    ``os.listdir``: a cache hit hashes the rule files without compiling a glob pattern."""
    return sorted(folder / n for n in os.listdir(folder) if n.endswith(".egg"))


def env_entries() -> list[str]:
    """Entries of ``EGGPU_RULES_PATH`` (empty entries ignored)."""
    return [p for p in os.environ.get("EGGPU_RULES_PATH", "").split(os.pathsep) if p.strip()]


def expand(entry: str | os.PathLike[str]) -> list[Path]:
    """A folder gives its ``*.egg`` files in name order; anything else is taken as one file."""
    p = Path(entry)
    return _egg_files(p) if p.is_dir() else [p]


def rule_files(extra: Sequence[str | os.PathLike[str]] = (), *, shipped: bool = True, env: bool = True) -> list[Path]:
    """Every rule file a compile uses: shipped, then ``extra``, then ``EGGPU_RULES_PATH``.

    Each one is checked with :func:`check_rule_file` (RuleError for a missing path, a path that
    is not a regular file, or one over :data:`MAX_RULE_FILE_BYTES`)."""
    files = shipped_files() if shipped else []
    for entry in [*extra, *(env_entries() if env else [])]:
        files += expand(entry)
    for f in files:
        check_rule_file(f)
    return files


def read_rule_sources(extra: Sequence[str | os.PathLike[str]] = (), *, shipped: bool = True,
                      env: bool = True) -> list[tuple[str, bytes]]:
    """``(label, bytes)`` of every rule file a compile uses (the files of :func:`rule_files`, in
    that order), each read once with :func:`read_rule_file`. Labels are what error messages name:
    ``rules/<file>`` for the shipped files, the path otherwise.

    The compile pipeline hashes these bytes into its cache key and hands the same bytes to the
    optimizer, so a rule file edited during a compile can never be cached under the key of its
    old content (and nothing is read twice)."""
    out = [(f"rules/{f.name}", read_rule_file(f)) for f in shipped_files()] if shipped else []
    for entry in [*extra, *(env_entries() if env else [])]:
        out += [(str(f), read_rule_file(f)) for f in expand(entry)]
    return out


def _rule_error(msg: str) -> Exception:
    from eggpu.ir.errors import RuleError  # lazily: importing this package stays stdlib-only

    return RuleError(msg)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _check_stat(path: str | os.PathLike[str], st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise _rule_error(f"{path}: not a rule file: it is {_kind(st.st_mode)} (only regular files are read)")
    if st.st_size > MAX_RULE_FILE_BYTES:
        raise _rule_error(f"{path}: rule file too large ({st.st_size} bytes; the limit is "
                          f"{MAX_RULE_FILE_BYTES} bytes)")


def check_rule_file(path: str | os.PathLike[str]) -> None:
    """RuleError unless ``path`` is (a link to) a regular file of at most the size limit."""
    try:
        st = os.stat(path)  # follows links: a link to a regular file is fine
    except FileNotFoundError:
        raise _rule_error(f"{path}: rule file not found") from None
    except OSError as e:
        raise _rule_error(f"{path}: cannot read rule file: {e.strerror or e}") from None
    _check_stat(path, st)


def read_rule_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of one rule file, read safely.

    The file is opened with ``O_NONBLOCK`` (opening a FIFO never waits for a writer) and checked
    with ``fstat`` on the open descriptor (no race between the check and the read); at most
    ``MAX_RULE_FILE_BYTES + 1`` bytes are read, so a file that grows meanwhile is still refused.
    RuleError for a missing path, anything but a regular file, or a file over the limit."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _rule_error(f"{path}: rule file not found") from None
    except OSError as e:
        raise _rule_error(f"{path}: cannot read rule file: {e.strerror or e}") from None
    try:
        _check_stat(path, os.fstat(fd))
        chunks, size = [], 0
        while size <= MAX_RULE_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_RULE_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_RULE_FILE_BYTES:
            raise _rule_error(f"{path}: rule file too large (over the limit of {MAX_RULE_FILE_BYTES} bytes)")
        return b"".join(chunks)
    except OSError as e:
        raise _rule_error(f"{path}: cannot read rule file: {e.strerror or e}") from None
    finally:
        os.close(fd)
