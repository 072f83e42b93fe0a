"""Import z3 and the validation modules in a background thread while egglog saturates.

A cold compile needs z3 only for translation validation, after saturation and extraction, but
importing it costs ~70 ms of a ~400 ms compile (``z3`` itself, its main context, eggpu's
encodings in :mod:`.z3ops`, :mod:`.validate`). egglog's ``run_program`` and z3's ctypes calls
release the GIL, so :func:`optimize <eggpu.optimizer.optimize>` starts :func:`start` once the
rules are prepared (the proof look-up needs no z3: :mod:`.proof_versions`) and :func:`join`\\ s
it before validating: the imports then overlap saturation. Nothing else changes: validation
imports the same modules itself (a no-op once the thread has), so a failed import in the thread
is simply raised again there, as without the thread.

Rules that keep it safe:

* the thread never outlives the ``optimize`` call that started it (joined in a ``finally``), so
  ``compile()`` returns with no thread of ours alive (``compile_many`` forks workers; a live
  thread holding an import lock would deadlock a child);
* a ``fork()`` while it runs (hot saturation steps fork: :mod:`.isolate`) first joins the
  forking thread's own warm-up (``os.register_at_fork``), so the child never inherits a
  half-done import; the warm-up waits for no lock a forking thread may hold (it takes
  ``_Z3_LOCK`` only if it is free, to create z3's main context);
* only leaf imports (z3, then eggpu modules without import cycles among them) run in it, so
  two threads importing the same modules just wait for each other.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

_MINE = threading.local()  # the warm-up thread the current thread started, if any
_HOOKED = False
_HOOK_LOCK = threading.Lock()


def needed() -> bool:
    """Whether a warm-up has anything to do (validation's modules not all imported yet)."""
    return "eggpu.optimizer.validate_lemmas" not in sys.modules or "z3" not in sys.modules


def start(z3_lock: Any) -> threading.Thread | None:
    """Start importing z3 and validation's modules in a daemon thread (None when they are
    already imported). ``z3_lock`` (the optimizer's ``_Z3_LOCK``) is taken, without waiting, to
    create z3's main context; the caller must :func:`join` the thread before it returns."""
    if not needed() or getattr(_MINE, "thread", None) is not None:
        return None
    _hook_fork()
    t = threading.Thread(target=_warm, args=(z3_lock,), name="eggpu-z3-warmup", daemon=True)
    _MINE.thread = t
    t.start()
    return t


def join(thread: threading.Thread | None) -> None:
    """Wait for ``thread`` (from :func:`start`; None: nothing to wait for)."""
    if thread is None:
        return
    thread.join()
    if getattr(_MINE, "thread", None) is thread:
        _MINE.thread = None


def _warm(z3_lock: Any) -> None:
    # Errors are left to validation: it imports the same modules and raises what they raise.
    try:
        import z3

        from . import validate, validate_lemmas  # noqa: F401  (z3ops, validate_solver, ...)

        if z3_lock.acquire(blocking=False):  # busy: another thread runs z3, so the context exists
            try:
                z3.main_ctx()
            finally:
                z3_lock.release()
    except Exception:  # noqa: BLE001 - re-raised by validation's own import
        pass


def _before_fork() -> None:
    """At ``fork()``: let the forking thread's warm-up finish first (its imports hold locks the
    child would inherit held)."""
    t = getattr(_MINE, "thread", None)
    if t is not None and t is not threading.current_thread():
        t.join()


def _hook_fork() -> None:
    global _HOOKED
    with _HOOK_LOCK:
        if not _HOOKED and hasattr(os, "register_at_fork"):
            os.register_at_fork(before=_before_fork)
            _HOOKED = True


__all__ = ["join", "needed", "start"]
