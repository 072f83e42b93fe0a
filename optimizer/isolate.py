"""Run a function in a forked child process under a hard deadline and a memory ceiling.

egglog 13.2 cannot be interrupted from Python while a rule iteration runs (it is Rust code that
never looks at signals), and one iteration can take minutes and gigabytes on an exploding
e-graph. :func:`run_forked` therefore runs such work in a ``fork()`` of the current process:

* the child inherits the e-graph copy-on-write (no rebuilding, no serialization of egglog state);
* its address space may grow by at most ``memory_mb`` MiB minus the memory it starts with
  (``RLIMIT_AS``), so its resident size stays under ``memory_mb`` MiB; an allocation past that
  aborts the child (Rust aborts on allocation failure; Python raises ``MemoryError``);
* the parent waits for the pickled result until ``deadline`` (a ``time.monotonic()`` value) and
  kills the child with ``SIGKILL`` when it is late.

The parent's state is never touched by the child. Forking costs tens of milliseconds for a
process of a few hundred MB (page tables), so callers fork only when the work is at risk of
exploding, not on every call. Only POSIX systems with ``fork`` support this
(:data:`AVAILABLE`).

Fork caveats: only the forking thread exists in the child, so the child must not need locks
other threads may hold; it should only run egglog and pure-Python code that is already
imported. In particular egglog runs large iterations on a rayon thread pool, whose worker
threads do not exist in the child: with a pool of more than one thread (``RAYON_NUM_THREADS=2``
here, or the default on a machine with many cores) a child running a large iteration waits
for them forever (and is killed at its deadline). :func:`pin_egglog_threads` makes egglog's
pool single-threaded by setting ``RAYON_NUM_THREADS=1`` while the process's first e-graph is
created (the pool is built then, once per process; a value the user set is overridden for that
moment only and restored right after, so other libraries are not affected). It cannot help when
something else created an egglog e-graph first with more threads: then forked steps on large
e-graphs end at their deadline (bounded, but without their result). The child leaves with ``os._exit`` (no atexit handlers, no flushing of inherited
buffers); its stderr goes to ``/dev/null`` (what it has to say comes back in the outcome).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

AVAILABLE = hasattr(os, "fork") and hasattr(os, "pipe")

# exit codes of the child (a child killed by a signal shows up as a negative status instead)
_EXIT_OK = 0
_EXIT_MEMORY = 3
_EXIT_PICKLE = 4


@dataclass
class ForkOutcome:
    """What :func:`run_forked` observed.

    ``status`` is ``"ok"`` (``value`` is the function's return value), ``"error"`` (the function
    raised: ``detail`` is ``"ExcType: message"``), ``"timeout"`` (killed at the deadline),
    ``"memory"`` (ran out of its address-space budget) or ``"crashed"`` (died otherwise: ``detail``
    says how). ``seconds`` is the wall time from the fork to the end of the child; ``max_rss_mb``
    the child's peak resident size where the OS reports it (0.0 otherwise)."""

    status: str
    value: Any = None
    detail: str = ""
    seconds: float = 0.0
    max_rss_mb: float = 0.0


_PINNED = False


def pin_egglog_threads() -> None:
    """Create the process's first egglog e-graph with a one-thread rayon pool (see the module
    docstring); later calls do nothing. ``RAYON_NUM_THREADS`` is set to 1 only while that
    e-graph is created, whatever the user set it to (a pool of more threads would hang every
    forked saturation step that needs it), and restored right after."""
    global _PINNED
    if _PINNED:
        return
    _PINNED = True
    had = os.environ.get("RAYON_NUM_THREADS")
    os.environ["RAYON_NUM_THREADS"] = "1"
    try:
        from .egglog_bindings import bindings

        EGraph = bindings().EGraph

        EGraph()  # builds egglog's global thread pool (once per process)
    finally:
        if had is None:
            os.environ.pop("RAYON_NUM_THREADS", None)
        else:
            os.environ["RAYON_NUM_THREADS"] = had


def _rss_bytes() -> int:
    """Resident size of this process (Linux /proc; 0 where unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _vm_bytes() -> int:
    """Address-space size of this process (Linux /proc; 0 where unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_memory(memory_mb: float) -> None:
    """Cap this (child) process's address-space growth so its RSS stays under ``memory_mb``."""
    import resource

    vm = _vm_bytes()
    if not vm:
        return
    budget = max(64 << 20, int(memory_mb * (1 << 20)) - _rss_bytes())
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = vm + budget
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def _child(fn: Callable[[], Any], wfd: int, memory_mb: float | None) -> None:
    """Body of the child: run ``fn``, write the pickled outcome to ``wfd``, ``os._exit``."""
    code = _EXIT_OK
    try:
        # the parent's SIGINT handler (KeyboardInterrupt) must not run here: the parent decides
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # a child dying at its memory limit is an expected outcome the parent reports: no
        # faulthandler dump, no "memory allocation failed" message from Rust on the user's terminal
        import faulthandler

        faulthandler.disable()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        if memory_mb is not None:
            _limit_memory(memory_mb)
        try:
            payload = ("ok", fn())
        except MemoryError:
            os._exit(_EXIT_MEMORY)
        except BaseException as e:  # egglog's PanicException is a BaseException
            payload = ("error", f"{type(e).__name__}: {e}")
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            os._exit(_EXIT_MEMORY)
        except Exception as e:
            data = pickle.dumps(("error", f"result not picklable: {type(e).__name__}: {e}"))
            code = _EXIT_PICKLE
        view = memoryview(data)
        while view:
            n = os.write(wfd, view)
            view = view[n:]
    except MemoryError:
        code = _EXIT_MEMORY
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def run_forked(fn: Callable[[], Any], *, deadline: float, memory_mb: float | None = None) -> ForkOutcome:
    """Run ``fn()`` in a forked child; see the module docstring. ``deadline`` is a
    ``time.monotonic()`` time; ``memory_mb`` (None: no cap) bounds the child's resident size.

    Raises ``OSError`` only if the fork or the pipe cannot be created."""
    if not AVAILABLE:  # pragma: no cover - POSIX only
        raise OSError("fork() is not available on this platform")
    rfd, wfd = os.pipe()
    t0 = time.monotonic()
    try:
        pid = os.fork()
    except BaseException:
        os.close(rfd)
        os.close(wfd)
        raise
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        os.close(rfd)
        _child(fn, wfd, memory_mb)
    os.close(wfd)
    chunks: list[bytes] = []
    timed_out = False
    done = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([rfd], [], [], left)
            if not ready:
                continue
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                done = True
                break
            chunks.append(chunk)
    finally:
        os.close(rfd)
        if not done:  # late, or this process was interrupted (KeyboardInterrupt) while waiting
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # a child that closed its pipe is exiting; after SIGKILL it is gone within milliseconds
        _, status, usage = os.wait4(pid, 0)
    seconds = time.monotonic() - t0
    rss = usage.ru_maxrss / 1024.0 if usage is not None else 0.0  # Linux reports KiB
    if timed_out:
        return ForkOutcome("timeout", detail=f"killed after {seconds:.2f} s", seconds=seconds, max_rss_mb=rss)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        # Rust aborts (SIGABRT) when an allocation fails under RLIMIT_AS; the kernel's OOM killer
        # sends SIGKILL
        if memory_mb is not None and sig in (signal.SIGABRT, signal.SIGKILL):
            return ForkOutcome("memory", detail=f"died of signal {signal.Signals(sig).name} at its "
                               f"{memory_mb:.0f} MiB memory limit", seconds=seconds, max_rss_mb=rss)
        return ForkOutcome("crashed", detail=f"died of signal {signal.Signals(sig).name}", seconds=seconds,
                           max_rss_mb=rss)
    code = os.WEXITSTATUS(status)
    if code == _EXIT_MEMORY:
        return ForkOutcome("memory", detail=f"ran out of its {memory_mb} MiB memory limit", seconds=seconds,
                           max_rss_mb=rss)
    try:
        kind, value = pickle.loads(b"".join(chunks))
    except Exception as e:
        return ForkOutcome("crashed", detail=f"exited with status {code} without a readable result "
                           f"({type(e).__name__})", seconds=seconds, max_rss_mb=rss)
    if kind == "ok":
        return ForkOutcome("ok", value, seconds=seconds, max_rss_mb=rss)
    return ForkOutcome("error", detail=str(value), seconds=seconds, max_rss_mb=rss)


__all__ = ["AVAILABLE", "ForkOutcome", "pin_egglog_threads", "run_forked"]
