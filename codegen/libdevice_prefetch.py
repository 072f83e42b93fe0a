"""libdevice parsed in a background thread while the optimizer runs: the cold compile's bitcode
parse moves off the critical path.

A compile whose kernel calls libdevice functions, and whose subset is neither in the process
nor on disk (:mod:`.libdevice`), parses libdevice before it can cut the subset: the *math cut*
(``toolchain/``, ~107 KB, ~6-7 ms) once an installation has stored it, else the whole file
(~470 KB of bitcode, ~25 ms: the installation's first libdevice compile, and every kernel with a
``libdevice`` op, whose symbols lie outside the math cut). The names are known only after
lowering, but the parse does not need them: :func:`start` begins it as soon as the frontend's IR
shows a transcendental op (:func:`eggpu.ir.ops.transcendental_ops`, the ops lowered to
``__nv_*`` calls) or a ``libdevice`` op (Triton's ``extern_elementwise``). llvmlite's ``parse_bitcode`` is a ctypes call, which releases the
GIL, so on a machine with a free core the parse runs beside the optimizer's Python and egglog
work instead of after it. :func:`.libdevice.libdevice_subset` then takes the parsed module
(:func:`take`, waiting for the thread if needed), cuts the subset from it exactly as from its own
parse, and parses the few-KB subset bitcode into the kernel's LLVM context — the path an
in-process cache hit takes, so the linked module and the PTX are the same.

Scope and safety:

- A prefetch belongs to the thread that started it (a thread-local slot): compiles running in
  several threads never take each other's module. :meth:`Prefetch.close` (the pipeline calls
  it when the compile ends, whatever happened) waits for the thread and frees whatever was not
  taken; a prefetch is used at most once.
- Only the process's first libdevice compile prefetches (no subset made or loaded yet): later
  ones usually find their subset in the process, and a background parse would only burn CPU
  beside them (a ``compile_many`` worker, an autotuning sweep).
- The module is parsed into an LLVM context of its own (LLVM contexts are independent, so the
  thread touches nothing the compiling thread uses) from bytes read in the thread (the math
  cut's: read by :func:`start`); it is used only when those bytes equal the ones
  :mod:`.libdevice` reads for the same file or cut.
- llvmlite's bindings are imported by :func:`start`, in the compiling thread (the import is
  Python code holding the GIL, and codegen needs it anyway): the thread runs only the file read
  and the parse, which release the GIL, so it does not slow the optimizer's Python down.
- ``fork`` (the optimizer's isolated saturation, :mod:`eggpu.optimizer.isolate`; a process
  pool) first waits for every running parse (``os.register_at_fork``), so no child starts with
  LLVM half-way through a parse; a child starts with no prefetch of its own.
- Any failure in the thread (no libdevice, an unreadable or corrupt file) is dropped: the
  compile then parses libdevice itself and reports the error as it always did.
- ``EGGPU_LIBDEVICE_PREFETCH=0`` turns prefetching off.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any

__all__ = ["Prefetch", "start", "take"]

_local = threading.local()
_live: weakref.WeakSet[Prefetch] = weakref.WeakSet()  # prefetches whose thread may still run
_live_lock = threading.Lock()


class Prefetch:
    """One background parse: of the libdevice file ``file_key`` (``(path, size, mtime_ns)``), read
    in the thread, or, when ``data`` is given, of those bytes (the stored math cut; ``file_key``
    is then :func:`.libdevice.math_slot` of its key)."""

    def __init__(self, file_key: tuple, data: bytes | None = None) -> None:
        self.file_key = file_key
        self.data: bytes | None = data
        self._read = data is None
        self.module: Any = None
        self.context: Any = None
        self._thread = threading.Thread(target=self._parse, name="eggpu-libdevice-prefetch", daemon=True)

    def _parse(self) -> None:
        try:
            import llvmlite.binding as llvm  # imported by start(): no import work here

            if self._read:
                self.data = Path(self.file_key[0]).read_bytes()
            self.context = llvm.create_context()
            self.module = llvm.parse_bitcode(self.data, context=self.context)
        except Exception:  # the compile parses libdevice itself and reports what is wrong
            self._free()

    def join(self) -> None:
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def take(self, file_key: tuple, data: bytes) -> tuple[Any, Any] | None:
        """``(module, context)`` parsed from the file (or math cut) with this key and these bytes, now the
        caller's (it must close the module, then the context); None when the parse failed or was
        of other bytes, or when it was already taken."""
        self.join()
        if self.module is None or self.file_key != file_key or self.data != data:
            return None
        got = (self.module, self.context)
        self.module = self.context = None
        return got

    def close(self) -> None:
        """Wait for the thread and free an untaken module; clears the thread's slot."""
        self.join()
        self._free()
        if getattr(_local, "prefetch", None) is self:
            _local.prefetch = None
        with _live_lock:
            _live.discard(self)

    def _free(self) -> None:
        mod, ctx = self.module, self.context
        self.module = self.context = self.data = None
        if mod is not None:
            mod.close()  # the module before its context (disposing a context frees its modules)
        if ctx is not None:
            ctx.close()


def start(fn: Any) -> Prefetch | None:
    """Begin parsing libdevice for the compile of ``fn`` (an IR Function) in this thread, when
    ``fn`` has a transcendental op or a ``libdevice`` op, no subset was made in this process yet, a
    libdevice file is installed and ``EGGPU_LIBDEVICE_PREFETCH`` is not ``"0"``; else None. The
    parse is of the stored math cut when there is one and every ``libdevice`` op's symbol is in it
    (none of :mod:`eggpu.ir.libdevice_table`'s is), else of the whole file. The caller must
    :meth:`~Prefetch.close` it when the compile ends."""
    from eggpu.ir.errors import EggpuError
    from eggpu.ir.ops import transcendental_ops

    from . import libdevice

    if os.environ.get("EGGPU_LIBDEVICE_PREFETCH", "1") == "0" or libdevice.has_subsets():
        return None
    wanted = set(transcendental_ops())
    ops = list(fn.walk())
    symbols = {op.attrs["symbol"] for op in ops if op.op == "libdevice"}
    if not symbols and not any(op.op in wanted for op in ops):
        return None
    try:
        key = libdevice.file_key()
        # stored: parse that ~107 KB cut, not the whole file, unless a symbol lies outside it
        math = None if symbols and not symbols <= _math_cut_names() else libdevice.stored_math_cut()
    except EggpuError:  # no libdevice (ToolchainError) or an unreadable one: the compile says so if it needs it
        return None
    import llvmlite.binding  # noqa: F401  (here, not in the thread: see the module docstring)

    old = getattr(_local, "prefetch", None)
    if old is not None:
        old.close()
    pre = Prefetch(key) if math is None else Prefetch(*math)
    with _live_lock:
        _live.add(pre)
    _local.prefetch = pre
    pre._thread.start()
    return pre


def _math_cut_names() -> set[str]:
    from .emitter import LIBDEVICE_FUNCTIONS

    return set(LIBDEVICE_FUNCTIONS)


def take(file_key: tuple, data: bytes) -> tuple[Any, Any] | None:
    """The parsed module (and its context) of this thread's prefetch for that file or math cut, see
    :meth:`Prefetch.take`; None when this thread has none."""
    pre = getattr(_local, "prefetch", None)
    return pre.take(file_key, data) if pre is not None else None


def _join_all() -> None:
    with _live_lock:
        running = list(_live)
    for pre in running:
        pre.join()


def _forget_in_child() -> None:
    global _local, _live_lock
    _local = threading.local()  # the parent's modules are not this process's to free
    _live_lock = threading.Lock()
    _live.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_join_all, after_in_child=_forget_in_child)
