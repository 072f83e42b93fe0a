"""Assembling PTX with NVIDIA's ``ptxas`` and reading its resource report.

:func:`run_ptxas` writes the PTX to a temporary directory, runs
``ptxas -v --gpu-name <sm> in.ptx -o out.cubin`` and parses the ``-v`` lines::

    ptxas info    : Compiling entry function 'k_entry_point' for 'sm_90'
    ptxas info    : Function properties for k_entry_point
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 26 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]

The report is for the kernel entries (with several, the maximum of each figure). Results
are cached in memory by sha256 of (PTX text, target name, ptxas path and release); a
failing ``ptxas`` raises CodegenError carrying its error lines.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from eggpu.ir.errors import CodegenError

from .target import Target, get_target
from .toolchain import find_ptxas, ptxas_version

__all__ = ["FunctionResources", "PtxasReport", "clear_cache", "parse_ptxas_log", "run_ptxas", "run_ptxas_each"]

_TIMEOUT_S = 300


@dataclass(frozen=True)
class FunctionResources:
    """Resources ``ptxas -v`` reports for one function (``is_entry`` for kernels)."""

    name: str
    is_entry: bool = False
    registers: int = 0
    spills_stores: int = 0
    spills_loads: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0
    barriers: int = 0


@dataclass(frozen=True)
class PtxasReport:
    """What ``ptxas`` said about a PTX module, for its kernel entries.

    ``registers`` per thread, spill ``stores``/``loads`` in bytes, static ``shared_bytes``,
    ``stack_bytes`` (stack frame), the assembled ``cubin``, the full ``log`` and the
    per-function details in ``functions``.
    """

    registers: int
    spills_stores: int
    spills_loads: int
    shared_bytes: int
    stack_bytes: int
    cubin: bytes = field(repr=False)
    log: str = field(repr=False)
    functions: tuple[FunctionResources, ...] = ()

    @property
    def spills(self) -> int:
        """Total spill traffic in bytes (stores + loads)."""
        return self.spills_stores + self.spills_loads


_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_ptxas_log(log: str) -> tuple[FunctionResources, ...]:
    """Per-function resources from ``ptxas -v`` output, in order of appearance."""
    funcs: dict[str, dict] = {}
    entries: set[str] = set()
    current: str | None = None
    for line in log.splitlines():
        if m := _COMPILING.search(line):
            entries.add(m.group(1))
            current = m.group(1)
        elif m := _PROPERTIES.search(line):
            current = m.group(1)
        if current is None:
            continue
        info = funcs.setdefault(current, {})
        if m := _FRAME.search(line):
            info["stack_bytes"] = int(m.group(1))
            info["spills_stores"] = int(m.group(2))
            info["spills_loads"] = int(m.group(3))
        if m := _USED.search(line):
            info["registers"] = int(m.group(1))
            if s := _SMEM.search(line):
                info["shared_bytes"] = int(s.group(1))
            if b := _BARRIERS.search(line):
                info["barriers"] = int(b.group(1))
    return tuple(FunctionResources(name, name in entries, **info) for name, info in funcs.items())


CACHE_SIZE = 64
"""ptxas results kept per process (each holds its cubin), least recently used dropped first:
a process compiling thousands of kernels keeps a bounded amount (see docs/codegen.md, Memory
of a long-lived process)."""
_cache: OrderedDict[str, PtxasReport] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every cached ptxas result."""
    with _cache_lock:
        _cache.clear()


def _error_lines(log: str) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower() or "fatal" in ln.lower()]
    return "\n".join(lines) if lines else log.strip()


def run_ptxas(ptx: str, target: Target | str, *, extra_args: tuple[str, ...] = ()) -> PtxasReport:
    """Assemble ``ptx`` for ``target`` with ``ptxas -v`` and report registers, spills, memory.

    Raises ToolchainError when no ``ptxas`` is found, CodegenError when this ``ptxas`` is too
    old for the target's PTX ISA or when it rejects the PTX (message = ptxas's errors).
    """
    target = get_target(target)
    if not target.is_gpu:
        raise CodegenError(f"ptxas assembles GPU targets only, got {target.name!r}")
    ptxas = find_ptxas()
    version = ptxas_version(ptxas)
    if target.min_cuda is not None and version < target.min_cuda:
        raise CodegenError(
            f"{ptxas} is from CUDA {version[0]}.{version[1]}, which does not accept PTX ISA "
            f"{target.ptx_version_str} for {target.name}; CUDA "
            f"{target.min_cuda[0]}.{target.min_cuda[1]} or newer is needed "
            "(pip install -U nvidia-cuda-nvcc)"
        )
    args = tuple(extra_args)
    key = hashlib.sha256(
        "\0".join([ptx, target.name, str(ptxas), f"{version[0]}.{version[1]}", *args]).encode()
    ).hexdigest()
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is not None:
        return hit
    with tempfile.TemporaryDirectory(prefix="eggpu-ptxas-") as tmp:
        src = Path(tmp) / "kernel.ptx"
        out = Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        cmd = [str(ptxas), "-v", "--gpu-name", target.name, *args, str(src), "-o", str(out)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise CodegenError(f"ptxas timed out after {_TIMEOUT_S} s on {target.name}") from exc
        except OSError as exc:
            raise CodegenError(f"could not run {ptxas}: {exc}") from exc
        log = (proc.stdout or "") + (proc.stderr or "")
        if proc.returncode != 0:
            raise CodegenError(
                f"ptxas rejected the PTX for {target.name} (exit code {proc.returncode}):\n{_error_lines(log)}"
            )
        cubin = out.read_bytes()
    functions = parse_ptxas_log(log)
    entries = [f for f in functions if f.is_entry] or list(functions)
    report = PtxasReport(
        registers=max((f.registers for f in entries), default=0),
        spills_stores=max((f.spills_stores for f in entries), default=0),
        spills_loads=max((f.spills_loads for f in entries), default=0),
        shared_bytes=max((f.shared_bytes for f in entries), default=0),
        stack_bytes=max((f.stack_bytes for f in entries), default=0),
        cubin=cubin,
        log=log,
        functions=functions,
    )
    with _cache_lock:
        _cache[key] = report
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return report


def run_ptxas_each(ptxs: list[str], target: Target | str) -> list[PtxasReport]:
    """:func:`run_ptxas` of every text in ``ptxs`` (same order), the ``ptxas`` processes running
    at the same time: each waits in its own thread, the GIL released while it waits, so two
    variants of one kernel take the wall time of the slower one instead of the sum.

    Errors are those of :func:`run_ptxas`, raised for the first text (in ``ptxs`` order) that
    failed, after every process has finished; one text runs in the calling thread."""
    if len(ptxs) <= 1:
        return [run_ptxas(p, target) for p in ptxs]
    target = get_target(target)
    ptxas_version(find_ptxas())  # found and asked once, before the threads (ToolchainError here)
    results: list[PtxasReport | BaseException | None] = [None] * len(ptxs)

    def one(i: int) -> None:
        try:
            results[i] = run_ptxas(ptxs[i], target)
        except BaseException as exc:  # re-raised in the caller's thread below
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,), name=f"eggpu-ptxas-{i}", daemon=True)
               for i in range(1, len(ptxs))]
    for t in threads:
        t.start()
    one(0)
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results  # type: ignore[return-value]
