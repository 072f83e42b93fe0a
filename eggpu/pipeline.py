"""The compile pipeline: frontend -> optimizer -> codegen -> ptxas, timed per stage and cached.

``eggpu.compile(kernel_instance, target="sm_90", ...)`` returns a :class:`CompiledKernel`.
Cache hits (same process or a fresh one) skip every stage and read the artefacts from disk;
the IR is parsed and the host build made only when asked for (``ck.ir``, ``ck.run_cpu``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from eggpu.cache import Cache, cache_key
from eggpu.ir.cachefs import warn_once
from eggpu.ir.debug_ops import resolve_debug
from eggpu.ir.errors import CompileError, EggpuError, KernelError, checked_call
from eggpu.ir.facts import Facts
from eggpu.ir.hashing import sha256
from eggpu.ir.record import Record
from eggpu.rules import read_rule_sources
from eggpu.runtime import Param, check_args, normalize_grid

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TARGET = "sm_90"


class CompileOptions(Record):
    """Everything besides the kernel that changes the compiled output.

    ``facts``: launch-time specialization facts of parameters asked for by the caller
    (``specialize=``); ``offsets_i32``: the launch fact that element offsets fit in i32
    (:mod:`eggpu.ir.facts`); ``num_stages``: ``cp.async`` stages of a software-pipelined
    tensor-core K loop (1: none; None: Triton's default 3, fewer where the stage buffers do not
    fit the target's shared memory); ``dot_strategy``: the ``dot`` strategy every dot must use
    (None: automatic; ``"wgmma"``: sm_90a, opt-in); ``debug``: Triton's ``debug``, keep the
    kernel's ``tl.device_assert`` checks (False: they compile to nothing)."""

    _fields = ("target", "optimize", "fast_math", "num_warps", "rules", "facts", "offsets_i32", "num_stages",
               "dot_strategy", "debug", "_rule_sources")
    _no_repr = _no_compare = ("_rule_sources",)
    target: str
    optimize: bool
    fast_math: bool
    num_warps: int
    rules: tuple[str, ...]
    facts: Facts
    offsets_i32: bool
    num_stages: int | None
    dot_strategy: str | None
    debug: bool
    _rule_sources: list[tuple[str, bytes]] | None

    def __init__(self, target: str = DEFAULT_TARGET, optimize: bool = True, fast_math: bool = False,
                 num_warps: int = 4, rules: tuple[str, ...] = (), facts: Facts | None = None,
                 offsets_i32: bool = False, num_stages: int | None = None, dot_strategy: str | None = None,
                 debug: bool = False, _rule_sources: list[tuple[str, bytes]] | None = None):
        self._assign(target, optimize, fast_math, num_warps, rules, Facts() if facts is None else facts,
                     offsets_i32, num_stages, dot_strategy, debug, _rule_sources)

    def rule_sources(self) -> list[tuple[str, bytes]]:
        """``(label, bytes)`` of every rule file of this compile (shipped, ``rules``,
        ``EGGPU_RULES_PATH``), read once (bounded, regular files only: a FIFO, a device or an
        oversized file is a RuleError, never a hang) and reused: the cache key hashes exactly the
        bytes the optimizer is given."""
        if self._rule_sources is None:
            self._rule_sources = read_rule_sources(self.rules)
        return self._rule_sources

    def key_parts(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "optimize": self.optimize,
            "fast_math": self.fast_math,
            "num_warps": self.num_warps,
            "rules": [[Path(label).name, sha256(data).hexdigest()] for label, data in self.rule_sources()]
            if self.optimize else [],
            "specialize": self.facts.as_dict(),
            "offsets_i32": self.offsets_i32,
            "num_stages": self.num_stages,
            "dot_strategy": self.dot_strategy,
            "debug": self.debug,
        }


class CompiledKernel(Record):
    """A compiled kernel specialization. Artefacts are texts; ``ir`` and the host build are lazy."""

    _fields = ("name", "id", "entry_point", "target", "ptx", "llvm_ir", "ir_text", "source", "params",
               "num_threads", "report", "options", "cache_path", "_ir", "_host", "_plan")
    _no_repr = ("ptx", "llvm_ir", "ir_text", "source", "report", "_ir", "_host", "_plan")
    _no_compare = ("_plan",)
    name: str
    id: str
    entry_point: str
    target: str
    ptx: str
    llvm_ir: str
    ir_text: str
    source: str
    params: tuple[Param, ...]
    num_threads: int
    report: dict[str, Any]
    options: CompileOptions
    cache_path: str | None
    _ir: Any
    _host: Any
    _plan: Any

    def __init__(self, name: str, id: str, entry_point: str, target: str, ptx: str, llvm_ir: str,
                 ir_text: str, source: str, params: tuple[Param, ...], num_threads: int, report: dict[str, Any],
                 options: CompileOptions, cache_path: str | None = None, _ir: Any = None, _host: Any = None,
                 _plan: Any = None):
        self._assign(name, id, entry_point, target, ptx, llvm_ir, ir_text, source, params, num_threads, report,
                     options, cache_path, _ir, _host, _plan)

    @property
    def ir(self):
        """The optimized tensor IR (an ``eggpu.ir.Function``; ``str()`` gives its text form)."""
        if self._ir is None:
            from eggpu.ir.parser import parse_function

            self._ir = parse_function(self.ir_text)
        return self._ir

    @property
    def shared_bytes(self) -> int:
        """Shared memory (bytes) one program uses: static up to 48 KiB, dynamic beyond (up to the
        target's limit, :attr:`eggpu.codegen.target.Target.max_shared_bytes`)."""
        return int(self.report.get("shared_bytes", 0))

    @property
    def dynamic_shared_bytes(self) -> int:
        """The dynamic shared memory a launch provides (0 when the kernel's is static)."""
        return int(self.report.get("dynamic_shared_bytes", 0))

    @property
    def arg_types(self):
        return tuple(p.type for p in self.params)

    @property
    def facts(self) -> Facts:
        """The launch-time specialization facts this code was compiled under (``report["specialization"]``)."""
        return Facts.from_dict(self.report.get("specialization", {}))

    def _check_facts(self, grid: Sequence[int], args: Sequence[Any]) -> None:
        """A launch that breaks a specialization fact never runs: LaunchError naming the argument.
        (Host arrays handed to ``launch`` are copied into fresh 256-byte-aligned device buffers,
        so only their values and the device addresses matter.)"""
        from eggpu.ir.errors import LaunchError
        from eggpu.ir.facts import check_launch

        check_launch(self.name, self.facts, [p.name for p in self.params], list(args), grid, LaunchError)

    def _refuse_gpu_only(self) -> None:
        """run_cpu of a kernel with inline asm: one CodegenError at its first use in the source."""
        used = self.report.get("gpu_only") or []
        if used:
            from types import SimpleNamespace

            from eggpu.ir.errors import CodegenError, gpu_only_message
            from eggpu.ir.graph import Loc

            first = used[0]
            op, _, symbol = first[0].partition(":")
            where = SimpleNamespace(loc=Loc(first[1], first[2], first[3]) if len(first) == 4 else None, op=op,
                                    attrs={"symbol": symbol} if symbol else {})
            raise CodegenError(gpu_only_message(self.name, where, "run_cpu (the host lowering)"))

    def _no_keywords(self, method: str, kwargs: dict[str, Any]) -> None:
        if kwargs:
            from eggpu.ir.errors import LaunchError

            raise LaunchError(f"{self.name}: {method} takes the launch arguments positionally "
                              f"({', '.join(p.name for p in self.params)}), got keyword {', '.join(map(repr, kwargs))}")

    def run_cpu(self, grid: int | Sequence[int], *args: Any, buffers: Sequence[Any] | None = None,
                **kwargs: Any) -> None:
        """Run the compiled lowering on the CPU (lock-step CTAs); arrays are written in place.
        Arguments are positional, in the kernel's parameter order (a keyword is a LaunchError).
        ``buffers``: the arrays the kernel reaches through raw addresses (``int_to_ptr``), see
        :mod:`eggpu.ir.raw_memory`."""
        self._no_keywords("run_cpu", kwargs)
        # Checked here as well as by the host kernel so a bad call fails before the JIT build.
        g = normalize_grid(self.name, grid)
        check_args(self.name, self.params, args)
        self._check_facts(g, args)
        self._refuse_gpu_only()
        if self._host is None:
            from eggpu.codegen import build_host
            from eggpu.codegen.target import get_target

            # the CPU build executes the data movement of this kernel's GPU target (e.g. tensor-core dots)
            self._host = build_host(self.ir, num_warps=self.options.num_warps, sm=get_target(self.target).sm,
                                    num_stages=self.options.num_stages, dot_strategy=self.options.dot_strategy)
        self._host.run(grid, *args, buffers=buffers)

    def launch(self, grid: int | Sequence[int], *args: Any, synchronize: bool = True, stream: Any = None,
               **kwargs: Any) -> None:
        """Run on the CUDA GPU (numpy arrays are copied in and out; device arrays are not).
        Arguments are positional, in the kernel's parameter order (a keyword is a LaunchError).

        ``stream`` (:mod:`eggpu.streams`): None launches on the arrays' device and their
        framework's current stream there (PyTorch's for CUDA tensors, as Triton does; CuPy's for
        CuPy arrays; else device 0 and the legacy default stream 0); or a raw stream handle (int), a
        ``torch.cuda.Stream`` or a ``cupy.cuda.Stream`` (on its own device). ``synchronize``: wait
        for the device after the launch (a launch with host arrays always does, to copy them back).

        The per-call work goes through this kernel's :class:`~eggpu.launch_plan.LaunchPlan`
        (built on the first launch); a launch it does not take at once (host arrays, anything
        unusual or wrong) runs :meth:`_launch_checked`, which reports every error."""
        if kwargs:
            self._no_keywords("launch", kwargs)
        plan = self._plan
        if plan is None:
            from eggpu.launch_plan import LaunchPlan

            plan = self._plan = LaunchPlan(self)
        device, raw = plan.target(stream, args)
        plan.launch(grid, args, synchronize, raw, device)

    def _launch_checked(self, grid: Any, args: Sequence[Any], synchronize: bool = True, stream: int = 0,
                        device: int = 0) -> None:
        """The general launch path: grid, arguments, specialization facts and alignment
        assumptions checked in that order (LaunchError naming the kernel and argument), then
        :meth:`CudaRuntime.launch <eggpu.runtime.CudaRuntime.launch>`."""
        from eggpu.runtime import CudaRuntime

        g = normalize_grid(self.name, grid)
        checked = check_args(self.name, self.params, args, written=self.report.get("written_params", ()))
        self._check_facts(g, [{"device": a.value, "host": None}.get(a.kind, v) for a, v in zip(checked, args)])
        _check_assumptions(self.name, self.report.get("assumptions", {}), checked)
        CudaRuntime.get().launch(self.ptx, self.entry_point, g, self.num_threads, checked,
                                 synchronize=synchronize, shared_bytes=self.dynamic_shared_bytes, stream=stream,
                                 device=device)

    def __getstate__(self) -> dict[str, Any]:
        # the launch plan holds ctypes classes and a driver handle: rebuilt where it is launched
        return {**self.__dict__, "_plan": None}


def _check_assumptions(kernel: str, assumptions: dict[str, str], checked: list[Any]) -> None:
    """Reject device pointers that break an alignment the PTX was specialized on, and integers
    above a loop bound's ``le{K}`` assumption (:mod:`eggpu.codegen.loop_form`).

    (numpy arrays are copied into fresh, 256-byte-aligned device buffers, so they always comply.)
    """
    from eggpu.ir.errors import LaunchError
    from eggpu.ir.facts import loop_bound_message

    for a in checked:
        if a.kind == "scalar" and (msg := loop_bound_message(kernel, a.param.name,
                                                             assumptions.get(a.param.name), a.value)):
            raise LaunchError(msg)
        if a.kind == "device" and assumptions.get(a.param.name) == "align16" and a.value % 16:
            raise LaunchError(
                f"{kernel}: argument {a.param.name!r} must be 16-byte aligned (the PTX was specialized on it), "
                f"got address {a.value:#x}; pass an aligned buffer"
            )


_FINGERPRINT: str | None = None
#: the cache directory's folder of per-installation facts (codegen/toolchain.py keeps the ptxas
#: version there too)
TOOLCHAIN_FOLDER = "toolchain"


def toolchain_fingerprint(store: Cache | None = None) -> str:
    """sha256 of eggpu's own sources (``*.py``, ``*.egg`` of every eggpu package) and the versions
    of the libraries that shape the output (llvmlite, egglog, z3-solver).

    Part of every cache key, so a changed lowering, optimizer or rule set in a development tree
    never serves a stale artefact (the version string alone would). Computed once per process;
    memoized across processes in ``toolchain/`` of ``store``'s directory under a stat signature
    of the sources (:mod:`eggpu.fingerprint`: a fresh process pays ~1 ms of ``stat`` calls
    instead of hashing ~2 MB, ~20 ms). ``toolchain/`` holds facts about the installation, not
    about any kernel (the ptxas version is the other one), so a compile into an emptied kernel
    cache that keeps them does not hash eggpu's sources again.
    """
    global _FINGERPRINT
    if _FINGERPRINT is None:
        import eggpu
        from eggpu.fingerprint import fingerprint

        root = store.dir if store is not None and store.usable() else None
        memo = root / TOOLCHAIN_FOLDER if root is not None else None
        _FINGERPRINT = fingerprint(_eggpu_package_dirs(), eggpu.__version__, memo, under=root)
    return _FINGERPRINT


def _eggpu_package_dirs() -> set[Path]:
    """The folders of eggpu's packages, found without importing them."""
    import importlib.util

    names = ("eggpu", "eggpu.ir", "eggpu.kernel_macro", "eggpu.optimizer", "eggpu.codegen", "eggpu.rules")
    dirs = set()
    for n in names:
        spec = importlib.util.find_spec(n)
        for loc in (spec.submodule_search_locations or []) if spec else []:
            dirs.add(Path(loc).resolve())
    return dirs


def _kernel_key_parts(kernel: Any) -> tuple[dict[str, Any], str | None]:
    """Identity of a Kernel instance for the cache key, and why it cannot be cached (or None).

    The id (dtypes, constexprs) and source, plus :meth:`Kernel.dependencies`: the source of every
    helper it may inline (wherever defined) and the current value of every module-level name it
    reads. Nothing is read from disk beyond the sources ``inspect`` already caches.
    """
    parts: dict[str, Any] = {"id": kernel.id, "source": kernel.source}
    deps_of = getattr(type(kernel), "dependencies", None)  # on the class: a constexpr may shadow it
    if deps_of is None:  # a kernel-like object from elsewhere: its id and source are all we know
        return parts, None
    deps = deps_of(kernel)
    parts["deps"] = deps.description
    return parts, deps.opaque


@checked_call("eggpu.compile")
def compile(kernel: Any, target: str = DEFAULT_TARGET, *, optimize: bool = True, fast_math: bool = False,
            num_warps: int = 4, rules: Sequence[str] = (), cache: bool | str | os.PathLike[str] = True,
            progress: Any = None, specialize: Mapping[str, str | Sequence[str]] | None = None,
            offsets_i32: bool = False, num_stages: int | None = None,
            dot_strategy: str | None = None, debug: bool | None = None) -> CompiledKernel:
    """Compile a Kernel instance (e.g. ``GeluForward[tl.f32](1024)``) to PTX for ``target``.

    ``specialize``: launch-time specialization facts per parameter, e.g. ``{"row_stride": "div16",
    "x_ptr": "align16"}`` (:mod:`eggpu.ir.facts`: ``divK`` and ``eq1`` on integers, ``alignK`` on
    pointers); ``offsets_i32=True`` adds the fact that ``grid axis * block <= 2**31``. The facts
    are part of the cache key and of ``ck.report["specialization"]``, and every launch
    (``launch``, ``run_cpu``) checks them: a violating launch raises LaunchError naming the
    argument and the fact. Facts the kernel states itself (``tl.multiple_of``, ``tl.assume``)
    join them.

    ``num_stages`` (1 to 8): the ``cp.async`` shared-memory stages of a tensor-core ``dot`` K
    loop whose operand loads are recognised (the tutorial matmul shape,
    :mod:`eggpu.codegen.mma_pipeline`); 1 turns software pipelining off. The default None is
    Triton's 3, lowered to what fits where three stage buffers would not fit in the target's
    shared memory (down to no pipelining); a number given explicitly that does not fit is a
    CompileError naming the kernel. Whether a loop was pipelined, with how many stages, and why
    not, is in ``ck.report["dot"]``.

    ``dot_strategy``: None (automatic) or the strategy every ``tl.dot`` must use (``"shared_fma"``,
    ``"mma_sync"``, ``"wgmma"``: sm_90a, opt-in, docs/pipeline.md); CodegenError where it does not apply.
    ``debug``: Triton's option: True keeps the ``tl.device_assert`` checks (``__assertfail`` in the PTX,
    :class:`~eggpu.DeviceAssertionError` from ``run_cpu``); False removes them; None: ``TRITON_DEBUG``.

    ``cache``: True (``$EGGPU_CACHE_DIR`` or the user cache dir), a directory, or False. A cache
    that cannot be used (untrusted or unwritable directory, malformed entry) never fails the
    compile: it is bypassed with one :class:`~eggpu.ir.cachefs.CacheWarning`.
    """

    _check_kernel(kernel)
    if not isinstance(num_warps, int) or isinstance(num_warps, bool) or num_warps not in (1, 2, 4, 8, 16, 32):
        raise CompileError(f"num_warps must be one of 1, 2, 4, 8, 16, 32, got {num_warps!r}")
    from eggpu.ir.targets import check_dot_strategy, check_num_stages

    check_num_stages(num_stages, getattr(kernel, "name", ""))
    check_dot_strategy(dot_strategy, getattr(kernel, "name", ""))
    for name, flag in (("optimize", optimize), ("fast_math", fast_math), ("offsets_i32", offsets_i32)):
        if not _is_flag(flag):
            raise CompileError(f"{name} must be True or False, got {_short_repr(flag)}")
    if progress is not None and progress is not False and not callable(progress):
        raise CompileError(f"progress must be None or a function called with each stage's name, "
                           f"got {_short_repr(progress)}")
    if not (isinstance(cache, bool | str) or isinstance(cache, os.PathLike)):
        raise CompileError(f"cache must be True, False or a directory path, got {_short_repr(cache)}")
    opts = CompileOptions(_gpu_target_name(target), bool(optimize), bool(fast_math), num_warps, _rule_paths(rules),
                          _specialization(kernel, specialize), bool(offsets_i32), num_stages=num_stages,
                          dot_strategy=dot_strategy, debug=resolve_debug(debug, "eggpu.compile", CompileError))
    from eggpu.kernel_macro import source_index

    if cache is False:
        source_index.configure(None, "")
        return _compile_uncached(kernel, opts, progress)
    return _compile_cached(kernel, opts, progress, Cache(None if cache is True else cache))


def _compile_cached(kernel: Any, opts: CompileOptions, progress: Any, store: Cache) -> CompiledKernel:
    """The compile through the kernel cache ``store``: a hit reads the entry (no frontend,
    optimizer or codegen); a miss compiles under the entry's lock and writes it."""
    from eggpu import __version__
    from eggpu.kernel_macro import source_index

    # the kernel-file index in the cache directory, keyed on the toolchain too: the key parts
    # below need no inspect/ast when the kernel's file is indexed (kernel_macro/source_index.py)
    trusted = store.trusted_dir()
    source_index.configure(trusted, toolchain_fingerprint(store) if trusted is not None else "")
    kernel_parts, opaque = _kernel_key_parts(kernel)
    if opaque is not None:
        warn_once(f"eggpu: {kernel.name} is compiled without the cache: {opaque}; pass such values as "
                  f"constexpr arguments or read module constants by name", key=f"kernel-opaque:{kernel.id}:{opaque}")
        ck = _compile_uncached(kernel, opts, progress)
        ck.report["cache"] = "bypass"
        return ck
    key = cache_key({"eggpu": __version__, "toolchain": toolchain_fingerprint(store), "kernel": kernel_parts,
                     "options": opts.key_parts()})
    t0 = time.perf_counter()
    hit = _cached(store, kernel, opts, key)
    if hit is None:
        with store.lock(kernel.name, key):
            hit = _cached(store, kernel, opts, key)  # another process may have finished it
            if hit is None:
                ck = _compile_uncached(kernel, opts, progress)
                entry = store.put(kernel.name, key, _files(ck), ck.report)
                if entry is None:
                    ck.report["cache"] = "bypass"
                else:
                    ck.cache_path = str(entry.stem)
                return ck
    hit.report = dict(hit.report, cache="hit", cache_lookup_ms=(time.perf_counter() - t0) * 1e3)
    return hit


def _specialization(kernel: Any, specialize: Mapping[str, str | Sequence[str]] | None) -> Facts:
    """The ``specialize=`` mapping as Facts, checked against the kernel's parameters."""
    from eggpu.ir.facts import parse_fact

    if not specialize:
        return Facts()
    if not isinstance(specialize, Mapping):
        raise KernelError(f"{kernel.name}: specialize= takes a dict such as {{'n': 'div16'}}, got {specialize!r}")
    kinds = {str(p.name): p.type for p in kernel.ir().params}
    by: dict[str, list[str]] = {}
    for name, facts in specialize.items():
        if name not in kinds:
            raise KernelError(f"{kernel.name}: specialize= names {name!r}, which is not a launch parameter "
                              f"(parameters: {', '.join(kinds) or 'none'})")
        for f in [facts] if isinstance(facts, str) else list(facts):
            try:
                kind, _ = parse_fact(str(f))
            except EggpuError as e:
                raise KernelError(f"{kernel.name}: specialize= for {name!r}: {e}") from None
            t = kinds[name]
            ok = t.is_scalar and (t.is_pointer if kind == "align" else (not t.is_pointer and t.dtype.is_int))
            if not ok:
                raise KernelError(f"{kernel.name}: specialize= fact {f} does not apply to parameter {name!r} of type "
                                  f"{t} ({'pointers' if kind == 'align' else 'integer scalars'} only)")
            by.setdefault(name, []).append(str(f))
    return Facts.make(by)


def _check_kernel(kernel: Any) -> None:
    """KernelError unless ``kernel`` is a kernel instance (a class or a function is named, with
    what to write instead)."""
    if hasattr(kernel, "ir") and hasattr(kernel, "id") and not isinstance(kernel, type):
        return
    what = type(kernel).__name__
    if isinstance(kernel, type):
        what = f"the kernel class {kernel.__name__}; instantiate it first, e.g. {kernel.__name__}[tl.f32](1024)"
    elif hasattr(kernel, "Kernel"):
        what = f"the @eggpu.kernel function {getattr(kernel, '__name__', '?')}; compile an instance of its Kernel class"
    raise KernelError(f"eggpu.compile expects a kernel instance such as GeluForward[tl.f32](1024), got {what}")


def _short_repr(value: Any) -> str:
    """``short_repr`` for error messages, imported on the error path only (it needs numpy, which a
    cache hit never imports)."""
    from eggpu.ir.launch_args import short_repr

    return short_repr(value)


def _is_flag(value: Any) -> bool:
    """A bool, or something equal to one that is not a string (0, 1, numpy bools)."""
    if isinstance(value, str | bytes):
        return False
    try:
        return bool(value in (True, False))
    except Exception:  # noqa: BLE001 - e.g. a numpy array: ambiguous truth value
        return False


def _rule_paths(rules: Any) -> tuple[str, ...]:
    """``rules=`` as a tuple of paths: one path (str or PathLike) or a sequence of them."""
    if isinstance(rules, str | os.PathLike):
        return (os.fspath(rules),)
    try:
        items = list(rules)
    except TypeError:
        items = None
    if items is None or not all(isinstance(r, str | os.PathLike) for r in items):
        raise CompileError(f"rules must be a rule file or folder path, or a list of them, got {_short_repr(rules)}")
    return tuple(os.fspath(r) for r in items)


def _cached(store: Cache, kernel: Any, opts: CompileOptions, key: str) -> CompiledKernel | None:
    """The cached compile of ``key``, or None; an entry whose report is malformed is ignored with
    a warning (and recompiled over)."""
    entry = store.get(kernel.name, key)
    if entry is None:
        return None
    try:
        return _from_cache(kernel, opts, entry)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, EggpuError) as e:
        store.reject(entry.stem, f"its report is malformed: {type(e).__name__}: {e}")
        return None


def _gpu_only_key(op: Any) -> str:
    """How the report's ``gpu_only`` list names an op the host cannot run: ``"inline_asm"``, or
    ``"libdevice:<symbol>"`` for a GPU-only libdevice function; ``""`` for any other op."""
    if op.op == "inline_asm":
        return "inline_asm"
    if op.op == "libdevice":
        from eggpu.ir.libdevice_table import gpu_only_reason

        if gpu_only_reason(op.attrs["symbol"]) is not None:
            return f"libdevice:{op.attrs['symbol']}"
    return ""


def _gpu_target_name(target: object) -> str:
    """``target`` in its canonical spelling (``"SM90"`` -> ``"sm_90"``), so that every spelling
    of one target shares its cache entries and its cost model; ``host`` and unknown names are a
    clear error (:mod:`eggpu.ir.targets` is the one list of targets)."""
    from eggpu.ir.targets import HOST, canonical_target_name

    name = canonical_target_name(target)
    if name == HOST:
        raise CompileError("eggpu.compile builds PTX for an NVIDIA target such as 'sm_90'; 'host' is the CPU "
                           "lowering behind ck.run_cpu: compile for a GPU target and call ck.run_cpu(grid, *args)")
    return name


def _files(ck: CompiledKernel) -> dict[str, str]:
    return {"ptx": ck.ptx, "ll": ck.llvm_ir, "ir": ck.ir_text, "py": ck.source}


def _from_cache(kernel: Any, opts: CompileOptions, entry: Any) -> CompiledKernel:
    r = entry.report
    params = tuple(Param(str(n), _param_type(t)) for n, t in r["params"])
    entry_point, num_threads = r["entry_point"], r["num_threads"]
    if entry_point != f"{kernel.name}_entry_point":
        raise ValueError(f"entry point {entry_point!r} is not {kernel.name}_entry_point")
    if type(num_threads) is not int or num_threads != 32 * opts.num_warps:
        raise ValueError(f"num_threads {num_threads!r} does not match num_warps={opts.num_warps}")
    if not isinstance(r.get("assumptions", {}), dict):
        raise TypeError("assumptions is not an object")
    if not isinstance(r.get("specialization", {}), dict):
        raise TypeError("specialization is not an object")
    Facts.from_dict(r.get("specialization", {}))  # malformed facts: the entry is rejected
    if not isinstance(r.get("written_params", []), list):
        raise TypeError("written_params is not a list")
    gpu_only = r.get("gpu_only", [])
    if not isinstance(gpu_only, list) or not all(
            isinstance(g, list) and len(g) in (1, 4) and all(isinstance(x, str | int) for x in g) for g in gpu_only):
        raise TypeError("gpu_only is not a list of [op, file, line, col] entries")
    if type(r.get("dynamic_shared_bytes", 0)) is not int or r.get("dynamic_shared_bytes", 0) < 0:
        raise TypeError("dynamic_shared_bytes is not a non-negative int")
    return CompiledKernel(kernel.name, kernel.id, entry_point, opts.target, entry.files["ptx"],
                          entry.files["ll"], entry.files["ir"], entry.files["py"], params,
                          num_threads, r, opts, str(entry.stem))


def _param_type(text: str):
    """A launch parameter's type from its text (``ptr<f32>`` or ``i32``) without the IR parser."""
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.ir.types import BlockType, PointerType

    if text.startswith("ptr<") and text.endswith(">"):
        name, _, const = text[4:-1].partition(", ")
        return BlockType(PointerType(parse_dtype(name), const == "const"), ())
    if "[" not in text:
        return BlockType(parse_dtype(text), ())
    from eggpu.ir.parser import parse_type

    return parse_type(text)


def _compile_uncached(kernel: Any, opts: CompileOptions, progress: Any) -> CompiledKernel:
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.libdevice_prefetch import start as prefetch_libdevice
    from eggpu.codegen.target import get_target
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    times: dict[str, float] = {}
    report: dict[str, Any] = {"cache": "miss", "target": opts.target, "options": opts.key_parts()}

    def stage(name: str):
        if progress:
            progress(name)
        return _Timer(times, name)

    with stage("frontend"):
        fn = kernel.ir()
        _apply_facts(fn, opts)
        if not opts.debug:  # Triton's rule: without debug=True a device_assert compiles to nothing
            from eggpu.ir.debug_ops import strip_device_asserts

            strip_device_asserts(fn)
    report["specialization"] = fn.facts.as_dict()
    report["ir_ops_before"] = fn.op_count()
    # where the kernel uses GPU-only ops (inline asm), from the source IR: run_cpu refuses it with
    # the source line even when the compiled kernel comes from the cache (its IR text has no locations)
    report["gpu_only"] = [[_gpu_only_key(op), op.loc.file, op.loc.line, op.loc.col] if op.loc is not None
                          else [_gpu_only_key(op)] for op in fn.walk() if _gpu_only_key(op)]
    # a kernel calling libdevice has it parsed in a thread while the optimizer runs (cold compiles);
    # timed as codegen (no progress call): starting it loads llvmlite, which codegen would load
    with _Timer(times, "codegen"):
        prefetch = prefetch_libdevice(fn)
    try:
        if opts.optimize:
            from eggpu.optimizer import optimize as run_optimizer

            with stage("optimize"):
                res = run_optimizer(fn, rules=list(opts.rules), fast_math=opts.fast_math, target=opts.target,
                                    rule_sources=opts.rule_sources())
            fn = res.function
            report["optimizer"] = _optimizer_report(res)
        report["ir_ops_after"] = fn.op_count()
        target = get_target(opts.target, num_warps=opts.num_warps)
        with stage("codegen"):
            compiled = compile_ptx_module(fn, target, num_warps=opts.num_warps, fast_math=opts.fast_math,
                                          num_stages=opts.num_stages, dot_strategy=opts.dot_strategy)
    finally:
        if prefetch is not None:
            prefetch.close()
    ptx, llvm_ir = compiled.ptx, compiled.llvm_ir
    _report_lowering(report, fn, compiled.lowered)
    try:
        find_ptxas()
        have_ptxas = True
    except ToolchainError as e:
        have_ptxas = False
        report["ptxas"] = {"skipped": str(e)}
    if have_ptxas:
        with stage("ptxas"):
            ptx, pr = _fewer_registers(ptx, target)
        report["ptxas"] = {"registers": pr.registers, "spill_stores": pr.spills_stores,
                           "spill_loads": pr.spills_loads, "shared_bytes": pr.shared_bytes}
    from eggpu.ir.printer import print_function

    ir_text = print_function(fn)
    params = tuple(Param(p.name, p.type) for p in fn.params)
    num_threads = 32 * opts.num_warps
    report.update(times_ms={k: v * 1e3 for k, v in times.items()}, entry_point=f"{kernel.name}_entry_point",
                  params=[(p.name, str(p.type)) for p in params], num_threads=num_threads)
    ck = CompiledKernel(kernel.name, kernel.id, f"{kernel.name}_entry_point", opts.target, ptx, llvm_ir,
                        ir_text, kernel.source, params, num_threads, report, opts)
    ck._ir = fn
    return ck


def _report_lowering(report: dict[str, Any], fn: Any, lowered: Any) -> None:
    """What the lowering of ``fn`` (its :class:`~eggpu.codegen.lowering.LoweredModule`) adds to
    ``ck.report``: assumptions a launch checks, written parameters, shared memory, ``dot``
    strategies and strip-mining."""
    from eggpu.ir.effects import written_params

    report["assumptions"] = dict(lowered.assumptions)
    report["written_params"] = sorted(written_params(fn))
    report["shared_bytes"] = lowered.shared_bytes
    report["dynamic_shared_bytes"] = lowered.dynamic_shared_bytes
    if lowered.dots:
        report["dot"] = [dict(d) for d in lowered.dots]
    if lowered.strip_mined:  # a wide lane-wise kernel lowered as a loop over chunks
        report["strip_mined"] = dict(zip(("block", "chunk"), lowered.strip_mined))


def _fewer_registers(ptx: str, target: Any) -> tuple[str, Any]:
    """``ptx`` or its variant with recurring constant selects split (:mod:`eggpu.codegen.ptx_selects`),
    whichever ptxas gives fewer registers without more spills, with its report. The split costs
    one instruction per select, so it is kept only where it frees a register; ptxas runs twice
    only for a kernel that has such selects (libdevice's ``erff``), both at once
    (:func:`~eggpu.codegen.ptxas.run_ptxas_each`): the wall time of one run, not two."""
    from eggpu.codegen.ptx_selects import split_constant_selects
    from eggpu.codegen.ptxas import run_ptxas_each

    split = split_constant_selects(ptx)
    if split == ptx:
        return ptx, run_ptxas_each([ptx], target)[0]
    pr, ps = run_ptxas_each([ptx, split], target)
    if ps.registers < pr.registers and ps.spills_stores + ps.spills_loads <= pr.spills_stores + pr.spills_loads:
        return split, ps
    return ptx, pr


def _apply_facts(fn: Any, opts: CompileOptions) -> None:
    """Attach the caller's facts (and ``offsets_i32`` for the kernel's largest block) to ``fn``
    and replace ``eq1`` parameters by the constant 1."""
    from eggpu.ir.facts import max_block, substitute_constants

    block = max_block(fn) if opts.offsets_i32 else 0
    fn.facts = fn.facts.merged(opts.facts).merged(Facts.make({}, block))
    substitute_constants(fn)


def _optimizer_report(res: Any) -> dict[str, Any]:
    """The JSON-able part of an :class:`eggpu.optimizer.OptimizeResult` kept in ``ck.report``."""
    return {
        "rules_fired": dict(res.rule_hits),
        "rules_used": len(res.rules_used),
        # rules that were not given to egglog, with why: refuted, unknown, fast_math (not enabled)
        "rules_rejected": dict(res.rules_rejected),
        # how many of the usable rules were loaded into egglog: only those that can match
        "rules_loaded": res.rules_loaded,
        "rules_loaded_why": res.rules_loaded_why,
        "cost_before": res.cost_before,
        "cost_after": res.cost_after,
        "egraph_nodes": res.egraph_nodes,
        "stop_reason": res.stop_reason.name if res.stop_reason is not None else None,
        # what the reason alone does not say (a rolled-back step, a hot child killed at its limit)
        "stop_detail": res.stop_detail,
        "validation": res.validation.verdict if res.validation is not None else None,
        # strategy, z3 resource units and budget of translation validation (deterministic per kernel)
        "validation_detail": res.validation.as_dict() if res.validation is not None else None,
        "fell_back": bool(res.fell_back),
        "fallback_reason": res.reason if res.fell_back else None,
        "times_ms": {k: s * 1e3 for k, s in res.times.items()},
    }


class _Timer:
    def __init__(self, times: dict[str, float], name: str):
        self.times, self.name = times, name

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.times[self.name] = self.times.get(self.name, 0.0) + time.perf_counter() - self.t0
        return False
