"""Symlink-safe file primitives shared by eggpu's on-disk caches (compiled kernels, rule proofs).

Threat model: a cache directory is trusted only when it is a real directory owned by the current
user and not writable by group or others (:func:`untrusted_reason`). Whoever could write a
trusted directory could already run code as the user, so inside it the rules are about not being
fooled by what *was* planted before it became ours, and never writing outside it:

* reads open with ``O_NOFOLLOW | O_NONBLOCK`` and accept only regular files owned by the user and
  not group/world-writable (:func:`read_trusted`) — a planted symlink, FIFO or foreign file is
  refused, not followed;
* writes go to a fresh temporary file created by :func:`tempfile.mkstemp` in the same directory
  (``O_CREAT | O_EXCL``, mode 0600: it never opens an existing path, so a planted symlink is never
  followed) and are renamed over the destination with :func:`os.replace` (which replaces a
  symlink itself, never its target) — :func:`atomic_write`;
* locks open their lock file with ``O_CREAT | O_NOFOLLOW`` and never truncate or write it
  (:func:`file_lock`).

The parent directories of the cache directory are assumed trustworthy (as for any file the user
keeps in their home); the folders eggpu makes inside it (``proofs/``, ``proofs/egglog-accepted/``)
are checked too and must be real directories, not symbolic links (:func:`ensure_trusted_dir` with
``under=``). Nothing eggpu writes on its own ever lands outside the cache directory. Every problem is reported as :class:`CacheUnavailable`; callers turn it into
one :class:`CacheWarning` and carry on without the cache (:func:`warn_once`). Standard library
only, so both the facade and the optimizer can use it.
"""

from __future__ import annotations

import errno
import os
import stat
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CacheUnavailable", "CacheWarning", "atomic_write", "ensure_trusted_dir", "file_lock",
           "read_trusted", "untrusted_reason", "warn_once"]

#: files bigger than this are not cache artefacts (a planted one would only cost memory and time)
MAX_FILE_BYTES = 256 * 1024 * 1024


class CacheWarning(UserWarning):
    """An on-disk cache (compiled kernels or rule proofs) was bypassed or an entry was ignored.

    The compile still succeeds, without the cache; the message names the path and the reason.
    """


class CacheUnavailable(Exception):
    """A cache path cannot be used; the message says which and why (internal, never escapes)."""


def _uid() -> int:
    """The user the cache must belong to (a function so tests can simulate another owner)."""
    return os.geteuid()


def _mode_problem(st: os.stat_result, what: str) -> str | None:
    if st.st_uid != _uid():
        return f"{what} is owned by uid {st.st_uid}, not by the current user (uid {_uid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def untrusted_reason(directory: Path) -> str | None:
    """Why ``directory`` must not be used as a cache (None when it is trusted; it must exist)."""
    try:
        st = os.stat(directory)
    except OSError as e:
        return f"cannot stat it: {e.strerror or e}"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    return _mode_problem(st, "it")


def ensure_trusted_dir(directory: Path, *, under: Path | None = None) -> None:
    """Create ``directory`` (mode 0700) when missing; raise :class:`CacheUnavailable` when it cannot
    be created or is not trusted (see :func:`untrusted_reason`).

    ``under`` names the cache root ``directory`` was derived from (e.g. ``$EGGPU_CACHE_DIR`` for
    ``$EGGPU_CACHE_DIR/proofs``). The root is checked as above (it may be a symbolic link the user
    made, like any directory the user names); every folder between it and ``directory`` is eggpu's
    own, so it must be a real directory: a symbolic link planted there (which could point anywhere
    the user can write) is refused, never followed."""
    if under is None:
        _make_trusted(directory)
        return
    _make_trusted(under)
    try:
        parts = directory.relative_to(under).parts
    except ValueError:
        raise CacheUnavailable(f"{directory} is not inside the cache directory {under}") from None
    current = under
    for part in parts:
        current = current / part
        try:
            os.mkdir(current, 0o700)
        except FileExistsError:
            pass
        except OSError as e:
            raise CacheUnavailable(f"cache directory {current} cannot be created: {e.strerror or e}") from None
        try:
            st = os.lstat(current)
        except OSError as e:
            raise CacheUnavailable(f"cannot stat {current}: {e.strerror or e}") from None
        if stat.S_ISLNK(st.st_mode):
            raise CacheUnavailable(f"cache directory {current} is a symbolic link (eggpu creates it as a folder)")
        if not stat.S_ISDIR(st.st_mode):
            raise CacheUnavailable(f"cache directory {current} cannot be used: a file is in the way")
        problem = _mode_problem(st, "it")
        if problem is not None:
            raise CacheUnavailable(f"cache directory {current} is not trusted: {problem}; make it yours and "
                                   f"`chmod go-w` it, or use another directory")


def _make_trusted(directory: Path) -> None:
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise CacheUnavailable(f"cache directory {directory} cannot be used: a file is in the way") from None
    except OSError as e:
        raise CacheUnavailable(f"cache directory {directory} cannot be created: {e.strerror or e}") from None
    reason = untrusted_reason(directory)
    if reason is not None:
        raise CacheUnavailable(f"cache directory {directory} is not trusted: {reason}; make it yours and "
                               f"`chmod go-w` it, or use another directory")


def read_trusted(path: Path) -> bytes | None:
    """The bytes of ``path``, or None when it does not exist. Raises :class:`CacheUnavailable`
    when it is a symlink, not a regular file, not the user's, group/world-writable, too large or
    unreadable."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise CacheUnavailable(f"{path} is a symbolic link") from None
        raise CacheUnavailable(f"cannot read {path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CacheUnavailable(f"{path} is not a regular file")
        problem = _mode_problem(st, str(path))
        if problem is not None:
            raise CacheUnavailable(problem)
        if st.st_size > MAX_FILE_BYTES:
            raise CacheUnavailable(f"{path} is too large ({st.st_size} bytes)")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise CacheUnavailable(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a fresh ``mkstemp`` file in the same directory,
    then :func:`os.replace`. Never opens ``path`` itself, so a planted symlink there is replaced,
    not followed. Raises :class:`CacheUnavailable` on any OS error (the temp file is removed)."""
    import tempfile  # lazily: a cache hit reads only (tempfile pulls in shutil and random)

    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except OSError as e:
        raise CacheUnavailable(f"cannot write in {path.parent}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise CacheUnavailable(f"cannot write {path}: {e.strerror or e}") from None
        raise


@contextmanager
def file_lock(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created 0600 if missing, never followed if it is a
    symlink, never truncated or written; without ``fcntl`` no lock is taken). Raises
    :class:`CacheUnavailable` when the file cannot be opened or the lock is not acquired within
    ``timeout`` seconds."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock; writes stay atomic (may compile twice)
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        what = "is a symbolic link" if e.errno == errno.ELOOP else f"cannot be opened: {e.strerror or e}"
        raise CacheUnavailable(f"lock file {path} {what}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CacheUnavailable(f"lock file {path} is not a regular file")
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise CacheUnavailable(f"timed out after {timeout:g} s waiting for the lock {path}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


_WARNED: set[str] = set()


def prune_newest(folder: Path, suffix: str, name_length: int, keep: int) -> None:
    """Delete all but the ``keep`` newest entries of ``folder``: regular files whose names end
    in ``suffix`` and are ``name_length`` characters long (``sha256 + suffix``). Nothing is
    followed (symbolic links are never entries) and a file that cannot be removed is left."""
    entries = []
    with os.scandir(folder) as it:
        for e in it:
            if e.name.endswith(suffix) and len(e.name) == name_length and e.is_file(follow_symlinks=False):
                entries.append((e.stat(follow_symlinks=False).st_mtime, e.path))
    for _, path in sorted(entries, reverse=True)[keep:]:
        try:
            os.unlink(path)
        except OSError:
            pass


def warn_once(message: str, *, key: str | None = None, stacklevel: int = 3) -> None:
    """Issue ``message`` as a :class:`CacheWarning`, once per process per ``key`` (default: the
    message), so a broken cache directory produces one warning, not one per compile."""
    k = message if key is None else key
    if k in _WARNED:
        return
    _WARNED.add(k)
    warnings.warn(message, CacheWarning, stacklevel=stacklevel)
