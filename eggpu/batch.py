"""``eggpu.compile_many`` (this module is ``eggpu.batch``: a submodule named ``compile_many`` would
shadow the function on the package): many kernel specializations compiled at once (autotune
sweeps, whole kernel libraries).

``compile_many(instances, workers=N, **options)`` compiles every instance with
:func:`eggpu.compile` (the same ``options``) and returns a :class:`BatchResult` in the order of
``instances``. Every failing instance is reported with its own error (a :class:`BatchFailure`
naming the instance, its position and what went wrong) while the others are returned.

Where the work runs:

* ``workers=1`` (or a single instance): in this process, one after the other;
* ``workers=N`` (default: the number of CPUs): a pool of ``N`` forked worker processes. The
  instances reach the workers through the fork (kernel classes made by ``@eggpu.kernel`` and
  ``Kernel[dtype]`` need not be picklable); each worker compiles through the shared on-disk
  cache, whose per-key lock makes equal instances compile once, and sends back the artefact
  texts and the report, from which this process builds the :class:`~eggpu.CompiledKernel`
  exactly as for a cache hit. Where ``fork`` is not available, or where it is not safe (egglog
  13.2 already imported here: a child forked after that hangs on its first e-graph; egglog 14
  forks cleanly), workers run in threads (compilation is thread-safe, but z3 and LLVM run one
  thread at a time, so threads gain little);
* ``executor=`` any :class:`concurrent.futures.Executor`. A ``ThreadPoolExecutor`` runs
  ``eggpu.compile(instance, **options)`` in this process. Any other executor (a process pool, a
  Dask ``Client.get_executor()``, Ray's, ...) may run it in another process or on another
  machine: it is submitted :func:`compile_payload`, the instance travels pickled (a Kernel
  specialization pickles by reference: its module, class name, dtypes and constexpr values,
  so its module must be importable on the workers) and the result comes back as artefact texts
  and report, rebuilt here like a cache hit. A failure to send an instance is reported for that
  instance. The executor is not shut down.

Progress: with ``progress=None`` a batch that runs longer than :data:`PROGRESS_AFTER` seconds
reports ``eggpu: compiled k/N (f failed)`` on stderr about once a second and at the end;
``progress=True`` reports from the start, ``False`` never, and a callable is called as
``progress(done, total, item)`` after every instance.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from eggpu.ir.errors import CompileError, EggpuError, unknown_keyword

#: seconds after which a batch with ``progress=None`` starts reporting on stderr
PROGRESS_AFTER = 2.0


class BatchFailure(EggpuError):
    """One instance of a :func:`compile_many` batch that did not compile: ``index`` (its position
    in ``instances``), ``kernel`` (its name and id) and ``error`` (the exception's type and
    message) say which and why."""

    def __init__(self, index: int, kernel: str, error: str):
        super().__init__(f"instance {index} ({kernel}): {error}")
        self.index, self.kernel, self.error = index, kernel, error

    def __reduce__(self):
        return (BatchFailure, (self.index, self.kernel, self.error))


@dataclass
class BatchResult(Sequence):
    """What :func:`compile_many` produced: ``items[i]`` is the CompiledKernel of ``instances[i]``
    or its :class:`BatchFailure`. ``kernels`` are the successes, ``failures`` the rest;
    :meth:`raise_failures` raises a CompileError listing every failure (when there is one)."""

    items: list[Any]
    seconds: float = 0.0

    def __getitem__(self, i):  # type: ignore[override]
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    @property
    def kernels(self) -> list[Any]:
        return [x for x in self.items if not isinstance(x, BatchFailure)]

    @property
    def failures(self) -> list[BatchFailure]:
        return [x for x in self.items if isinstance(x, BatchFailure)]

    @property
    def ok(self) -> bool:
        return not self.failures

    def raise_failures(self) -> None:
        bad = self.failures
        if bad:
            lines = "\n".join(f"  {f}" for f in bad)
            raise CompileError(f"{len(bad)} of {len(self.items)} instances failed to compile:\n{lines}")


def _describe(kernel: Any) -> str:
    name, kid = getattr(kernel, "name", None), getattr(kernel, "id", None)
    if name is None:
        return type(kernel).__name__
    return f"{name} {kid}" if kid and kid != name else str(name)


def _failure(index: int, kernel: Any, e: BaseException) -> BatchFailure:
    return BatchFailure(index, _describe(kernel), f"{type(e).__name__}: {e}")


# ---------------------------------------------------------------------- forked workers

_JOBS: list[Any] = []  # (instances, options) of the running batch; read by forked workers


def _work(index: int) -> tuple[str, Any]:
    """In a forked worker: compile instance ``index`` of the running batch (see
    :func:`compile_payload`)."""
    instances, options = _JOBS
    return compile_payload(instances[index], options)


def compile_payload(kernel: Any, options: dict[str, Any]) -> tuple[str, Any]:
    """In a worker (a forked pool process, a cluster worker): compile ``kernel`` and return what
    the caller rebuilds the CompiledKernel from, as plain picklable data: ``("ok", (files,
    report, cache_path))`` (the artefact texts by suffix, the report dict) or ``("error", "Type:
    message")``. The CompiledKernel itself never crosses the process boundary."""
    from eggpu.pipeline import _files, compile

    try:
        ck = compile(kernel, **options)
    except Exception as e:  # noqa: BLE001 - every failure is reported for its own instance
        return "error", f"{type(e).__name__}: {e}"
    return "ok", (_files(ck), ck.report, ck.cache_path)


def _rebuild(kernel: Any, options: dict[str, Any], payload: Any) -> Any:
    """The CompiledKernel of a worker's (files, report, cache_path), built as a cache hit is."""
    from eggpu.cache import CacheEntry
    from eggpu.pipeline import CompileOptions, _from_cache, _gpu_target_name, _specialization

    files, report, cache_path = payload
    opts = CompileOptions(_gpu_target_name(options.get("target", "sm_90")), options.get("optimize", True),
                          options.get("fast_math", False), options.get("num_warps", 4),
                          tuple(str(r) for r in options.get("rules", ())),
                          _specialization(kernel, options.get("specialize")), bool(options.get("offsets_i32", False)),
                          num_stages=options.get("num_stages"), dot_strategy=options.get("dot_strategy"))
    ck = _from_cache(kernel, opts, CacheEntry("", None, files, report))  # type: ignore[arg-type]
    ck.cache_path = cache_path
    return ck


def _egglog_forks_cleanly() -> bool:
    """Whether a process forked from this one can still make egglog e-graphs. egglog 13.2 starts
    a native thread when it is imported, which a forked child lacks: its first e-graph waits for
    it forever. egglog 14 starts none. (A child that does not import egglog before the fork, as
    in a fresh process, is always fine.)"""
    return "egglog.bindings" not in sys.modules or _egglog_major() >= 14


def _egglog_major() -> int:
    from eggpu.fingerprint import library_versions

    major = library_versions(["egglog"])[0].partition("=")[2].split(".")[0]
    return int(major) if major.isdigit() else 0


def _warm(options: dict[str, Any]) -> None:
    """Import the compiler (and, where egglog forks cleanly, prepare the rules: load and prove
    them) here, once, before the fork, so the workers inherit that instead of each doing it.
    Failures are left to the workers, which report them per instance. No e-graph is made here:
    an egglog e-graph belongs to the thread that created it."""
    try:
        import eggpu.codegen  # noqa: F401
        import eggpu.kernel_macro.frontend  # noqa: F401

        if options.get("optimize", True) and _egglog_major() >= 14:  # (importing 13.2 here would hang the fork)
            from eggpu.optimizer import prepare_rules

            prepare_rules(list(options.get("rules", ())), fast_math=bool(options.get("fast_math", False)))
    except Exception:  # noqa: BLE001 - e.g. a bad rule file: every instance will say so
        pass


def _fork_pool(workers: int) -> Executor | None:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in mp.get_all_start_methods() or not _egglog_forks_cleanly():
        return None
    return ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))


# ---------------------------------------------------------------------- progress


class _Progress:
    def __init__(self, total: int, progress: bool | Callable | None):
        self.total, self.done, self.failed = total, 0, 0
        self.mode = progress
        self.t0 = self.last = time.monotonic()
        self.shown = False

    def step(self, item: Any) -> None:
        self.done += 1
        self.failed += isinstance(item, BatchFailure)
        if callable(self.mode):
            self.mode(self.done, self.total, item)
            return
        if self.mode is False:
            return
        now = time.monotonic()
        due = self.mode is True or now - self.t0 >= PROGRESS_AFTER
        if due and (now - self.last >= 1.0 or self.done == self.total or not self.shown):
            self.last, self.shown = now, True
            failed = f" ({self.failed} failed)" if self.failed else ""
            print(f"eggpu: compiled {self.done}/{self.total}{failed}, {now - self.t0:.1f} s",
                  file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- compile_many


def compile_many(instances: Iterable[Any], workers: int | None = None, *, executor: Executor | None = None,
                 progress: bool | Callable[[int, int, Any], None] | None = None,
                 **options: Any) -> BatchResult:
    """Compile every kernel instance with ``eggpu.compile(instance, **options)`` (see the module
    docstring); never raises for a failing instance. ``workers`` must be a positive integer."""
    from eggpu.pipeline import compile

    items = _instances(instances)
    if workers is None:
        workers = os.cpu_count() or 1
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise CompileError(f"compile_many: workers must be a positive integer, got {workers!r}")
    if executor is not None and not isinstance(executor, Executor):
        raise CompileError(f"compile_many: executor must be a concurrent.futures.Executor, got "
                           f"{type(executor).__name__}")
    _check_options(compile, options)
    t0 = time.monotonic()
    results: list[Any] = [None] * len(items)
    prog = _Progress(len(items), progress)

    def finish(i: int, item: Any) -> None:
        results[i] = item
        prog.step(item)

    if executor is None and (workers == 1 or len(items) <= 1):
        for i, k in enumerate(items):
            try:
                finish(i, compile(k, **options))
            except Exception as e:  # noqa: BLE001
                finish(i, _failure(i, k, e))
        return BatchResult(results, time.monotonic() - t0)

    def unpack(i: int, value: tuple[str, Any]) -> Any:
        status, payload = value
        if status == "error":
            return BatchFailure(i, _describe(items[i]), payload)
        return _rebuild(items[i], options, payload)

    if executor is not None:
        if isinstance(executor, ThreadPoolExecutor):  # same process: the CompiledKernel itself
            futures = _submit_all(executor, items, lambda k: executor.submit(compile, k, **options))
            _collect(futures, items, finish, lambda i, value: value)
        else:  # another process or machine: the instance travels pickled, the result as data
            def send(k: Any) -> Future:
                pickle.dumps(k)  # an instance that cannot travel fails here with its own message
                return executor.submit(compile_payload, k, options)

            futures = _submit_all(executor, items, send)
            _collect(futures, items, finish, unpack)
        return BatchResult(results, time.monotonic() - t0)

    global _JOBS
    pool = _fork_pool(min(workers, len(items)))
    if pool is None:  # no (safe) fork: threads (compilation is thread-safe)
        with ThreadPoolExecutor(max_workers=min(workers, len(items))) as tp:
            futures = _submit_all(tp, items, lambda k: tp.submit(compile, k, **options))
            _collect(futures, items, finish, lambda i, value: value)
        return BatchResult(results, time.monotonic() - t0)
    _JOBS = [items, options]
    _warm(options)
    try:
        with pool:
            futures = {i: pool.submit(_work, i) for i in range(len(items))}
            _collect(futures, items, finish, unpack)
    finally:
        _JOBS = []
    return BatchResult(results, time.monotonic() - t0)


def _instances(instances: Any) -> list[Any]:
    """``instances`` as a list; a single kernel instance, a string or a non-iterable is a
    CompileError (each element is checked by ``eggpu.compile`` as its own failure)."""
    if isinstance(instances, str | bytes) or hasattr(instances, "ir") or not hasattr(instances, "__iter__"):
        from eggpu.ir.launch_args import short_repr

        what = (f"one kernel instance ({_describe(instances)}); pass a list" if hasattr(instances, "ir")
                else f"{type(instances).__name__} {short_repr(instances)}")
        raise CompileError(f"compile_many: instances must be an iterable of kernel instances "
                           f"(a list, a generator), got {what}")
    try:
        return list(instances)
    except Exception as e:  # noqa: BLE001 - the user's generator raised
        raise CompileError(f"compile_many: iterating over instances raised {type(e).__name__}: {e}") from None


def _check_options(compile: Callable[..., Any], options: dict[str, Any]) -> None:
    """Unknown option names fail the call once, not every instance."""
    import inspect

    allowed = [n for n in inspect.signature(compile).parameters if n != "kernel"]
    for name in options:
        if name not in allowed:
            raise CompileError(unknown_keyword("compile_many", name, ["workers", "executor", "progress"]
                                              + [a for a in allowed if a != "progress"]))


def _submit_all(executor: Executor, items: list[Any], submit: Callable[[Any], Future]) -> dict[int, Any]:
    """Submit every item; an item the executor refuses is a failure of its own."""
    out: dict[int, Any] = {}
    for i, k in enumerate(items):
        try:
            out[i] = submit(k)
        except Exception as e:  # noqa: BLE001 - e.g. a shut-down executor
            out[i] = _failure(i, k, e)
    return out


def _collect(futures: dict[int, Any], items: list[Any], finish: Callable[[int, Any], None],
             unpack: Callable[[int, Any], Any]) -> None:
    """Wait for every future in completion order and record its result or failure."""
    from concurrent.futures import as_completed

    index = {}
    for i, f in futures.items():
        if isinstance(f, BatchFailure):
            finish(i, f)
        else:
            index[f] = i
    for f in as_completed(index):
        i = index[f]
        try:
            item = unpack(i, f.result())
        except Exception as e:  # noqa: BLE001 - a dead worker, an unpicklable instance, ...
            item = _failure(i, items[i], e)
        finish(i, item)


__all__ = ["PROGRESS_AFTER", "BatchFailure", "BatchResult", "compile_many", "compile_payload"]
