"""LLVM IR -> PTX through llvmlite's NVPTX back end, with libdevice linked on demand.

:func:`emit_ptx` is the whole PTX path after lowering. In order, it

1. parses and verifies the module (parse and verifier errors raise CodegenError with
   LLVM's message) and sets the target triple and data layout;
2. links the module flag ``nvvm-reflect-ftz`` (1 under ``fast_math``, else 0). libdevice
   asks ``__nvvm_reflect("__CUDA_FTZ")`` whether to flush denormals; LLVM's NVVMReflect
   pass folds it (the NVPTX target machine adds it at the start of every pass-builder
   pipeline, and code generation runs it again);
3. links libdevice only when the module declares ``__nv_*`` functions, and then only those
   functions and what they reach (:func:`eggpu.codegen.libdevice.libdevice_subset`: the file
   is read once per process, each new set of functions parsed and cut once). A ``__nv_*``
   name libdevice does not define raises CodegenError;
4. internalizes every function and global but the entry, then removes whatever is unused
   (GlobalDCE + dead prototypes), so only the libdevice functions reached remain;
5. optimizes: by default with LLVM's ``default<O0>`` (NVVMReflect, always-inline) followed
   by :data:`LIGHT_PIPELINE` (scalar clean-ups without LICM — the register measurements in
   ``docs/codegen.md`` explain why), or with LLVM's
   ``default<On>`` pipeline (new pass manager, with the target machine so NVPTX's own passes
   take part) when :class:`PtxOptions` asks for it;
6. emits PTX and checks its ``.version``, ``.target`` and ``.visible .entry``.

Kernels: the entry must be a PTX kernel. :func:`mark_kernel` makes one: ``ptx_kernel``
calling convention (llvmlite modules) and ``!nvvm.annotations`` ``kernel`` + ``reqntidx/y/z``
entries. LLVM 22 upgrades the annotations on parsing to the ``ptx_kernel`` calling
convention and the ``"nvvm.reqntid"="N,1,1"`` function attribute, which print as
``.visible .entry NAME(`` and ``.reqntid N, 1, 1``.

Floating point. LLVM 22's NVPTX back end fuses ``fmul``+``fadd`` into ``fma.rn`` only when
both instructions carry the ``contract`` (or ``fast``) flag: the ``"unsafe-fp-math"``
function attribute is ignored for this, llvmlite does not expose the target machine's
``AllowFPOpFusion``, and ``-nvptx-fma-level`` is a process-wide switch. Without the flag
NVPTX prints ``mul.rn.f32``/``add.rn.f32``; the explicit ``.rn`` also stops ``ptxas`` (whose
``--fmad`` defaults to true) from fusing them. So: IEEE results by default; under
``fast_math`` the lowering builds the instructions with the flag
(:class:`~eggpu.codegen.fp_flags.FlaggedBuilder`), and :func:`emit_ptx` compiles the flags it
is given: its own ``fast_math`` only selects the ``nvvm-reflect-ftz`` value. ``afn``/``arcp``
are deliberately *not* used: ``afn`` turns ``fdiv`` and ``llvm.sqrt`` into
``div.approx``/``sqrt.approx``.

All LLVM work happens under one process-wide lock: NVPTX tuning switches are LLVM
command-line options (global state), set before each emission.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from eggpu.ir.errors import CodegenError

from .fp_flags import FAST_MATH_FLAGS, fp_flags
from .libdevice import LibdeviceMissing, internalize, libdevice_subset
from .ptx_loops import no_unroll
from .target import Target, get_target

if TYPE_CHECKING:  # pragma: no cover
    import llvmlite.binding as llvm_binding

__all__ = [
    "ENTRY_SUFFIX",
    "FAST_MATH_FLAGS",
    "DEFAULT_PTX_OPTIONS",
    "LIGHT_PIPELINE",
    "PIPELINES",
    "PtxOptions",
    "PtxResult",
    "emit_ptx",
    "entry_point_name",
    "fp_flags",
    "initialize_llvm",
    "mark_kernel",
    "target_machine",
]

ENTRY_SUFFIX = "_entry_point"
LIBDEVICE_PREFIX = "__nv_"

_LOCK = threading.RLock()
_initialized = False


def entry_point_name(kernel_name: str) -> str:
    """The PTX entry symbol of a kernel: ``{kernel_name}_entry_point``."""
    return f"{kernel_name}{ENTRY_SUFFIX}"


PIPELINES = ("none", "light", "O1", "O2", "O3")

# The "light" pipeline: LLVM's scalar clean-ups without loop-invariant code motion. LICM
# (in every default<On> pipeline) hoists the address arithmetic of a loop out of it and keeps
# it live across the loop (bench proxy matmul: 128 registers with O1/O3 vs 80 here). Full
# unrolling of constant-trip loops is kept (per-thread arrays indexed in such loops become
# registers after SROA); Reassociate is what brings elementwise kernels (adam, gelu,
# vector_add) down to O3's counts. Measurements on the real lowering: docs/codegen.md.
LIGHT_PIPELINE: tuple[str, ...] = (
    "always_inliner",
    "sroa",
    "instruction_combine",
    "simplify_cfg",
    "loop_simplify",
    "loop_rotate",
    "loop_unroll",
    "sroa",
    "instruction_combine",
    "sccp",
    "new_gvn",
    "aggressive_dce",
    "instruction_combine",
    "simplify_cfg",
    "reassociate",
    "instruction_combine",
)


@dataclass(frozen=True)
class PtxOptions:
    """Tuning knobs of the PTX path. The defaults are what ``bench/ptx_registers.py``
    measured best for registers (see ``docs/codegen.md`` for the numbers).

    - ``pipeline``: LLVM IR passes run before code generation: ``"light"`` (default:
      ``default<O0>`` for NVVMReflect and always-inline, then :data:`LIGHT_PIPELINE`: SROA,
      instcombine, simplifycfg, full unrolling, SCCP, NewGVN, ADCE, Reassociate — no LICM), ``"O1"``/``"O2"``/``"O3"`` (LLVM's ``default<On>`` with the
      NVPTX target machine's own passes), or ``"none"`` (only the internalize/dead-strip step).
    - ``codegen_opt_level``: the target machine's optimization level (0-3).
    - ``sched4reg``: ``-nvptx-sched4reg`` (schedule the selection DAG for register pressure).
    - ``short_pointers``: ``-nvptx-short-ptr`` (32-bit pointers for shared/const/local memory).
    - ``mad_wide``: ``-nvptx-mad-wide-opt`` (fold address arithmetic into ``mad.wide``).
    - ``slp_vectorize`` / ``loop_vectorize`` / ``loop_unroll``: tuning of the ``On`` pipelines.
    - ``instcombine_sinking``: ``-instcombine-code-sinking`` in a module that calls libdevice
      (off by default: instcombine would sink every value used only by the final stores into the
      returning block, past the inlined branches, undoing the on-demand order of
      :mod:`eggpu.codegen.schedule`; gelu f32 sm_90 39 registers with it, 32 without). A module
      without libdevice calls always sinks (poi_masked_fill: 5 fewer SASS instructions).
    - ``ptxas_unroll``: let ptxas unroll loops as it likes (the default); off marks every loop
      without tensor-core instructions ``.pragma "nounroll"`` (:mod:`eggpu.codegen.ptx_loops`:
      layer norm's static SASS 677 -> 294 on sm_90, Triton 418; its run-time effect awaits a GPU).
    """

    pipeline: str = "light"
    codegen_opt_level: int = 3
    sched4reg: bool = False
    short_pointers: bool = False
    mad_wide: bool = True
    slp_vectorize: bool = True
    loop_vectorize: bool = True
    loop_unroll: bool = True
    instcombine_sinking: bool = False
    ptxas_unroll: bool = True

    def __post_init__(self) -> None:
        if self.pipeline not in PIPELINES:
            raise CodegenError(
                f"PtxOptions.pipeline must be one of {', '.join(PIPELINES)}, got {self.pipeline!r}"
            )
        value = self.codegen_opt_level
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
            raise CodegenError(f"PtxOptions.codegen_opt_level must be 0..3, got {value!r}")

    @property
    def speed_level(self) -> int:
        """The ``n`` of a ``default<On>`` pipeline; 0 for ``light`` and ``none``."""
        return int(self.pipeline[1]) if self.pipeline.startswith("O") else 0

    def cl_options(self) -> tuple[str, ...]:
        """The LLVM command-line options these settings stand for."""
        return (
            f"-nvptx-sched4reg={'true' if self.sched4reg else 'false'}",
            f"-nvptx-short-ptr={'true' if self.short_pointers else 'false'}",
            f"-nvptx-mad-wide-opt={'true' if self.mad_wide else 'false'}",
        )


DEFAULT_PTX_OPTIONS = PtxOptions()


@dataclass(frozen=True)
class PtxResult:
    """What :func:`emit_ptx` produced.

    ``ptx``: the PTX text; ``llvm_ir_optimized``: the final LLVM module (after linking,
    internalizing, dead-stripping and optimization); ``libdevice_functions_used``: sorted
    ``__nv_*`` names the input module declared (empty when libdevice was not linked);
    ``target``, ``entry``: what was compiled.
    """

    ptx: str
    llvm_ir_optimized: str
    libdevice_functions_used: tuple[str, ...]
    target: Target
    entry: str


def initialize_llvm() -> None:
    """Register LLVM's targets and asm printers once (llvmlite 0.50 initializes the core itself),
    and tell NVVMReflect libdevice's precise-sqrt answer (:func:`.libdevice.prec_sqrt`)."""
    global _initialized
    if _initialized:
        return
    with _LOCK:
        if not _initialized:
            import llvmlite.binding as llvm

            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            from .libdevice import PREC_SQRT_OPTION, prec_sqrt

            if prec_sqrt():  # libdevice's internal square roots correctly rounded, as nvcc's default
                llvm.set_option("eggpu", PREC_SQRT_OPTION)
            _initialized = True


def _apply_cl_options(options: PtxOptions) -> None:
    import llvmlite.binding as llvm

    for opt in options.cl_options():
        llvm.set_option("eggpu", opt)


def _set_sinking(on: bool) -> None:
    import llvmlite.binding as llvm

    llvm.set_option("eggpu", f"-instcombine-code-sinking={'true' if on else 'false'}")


_tm_cache: dict[tuple, llvm_binding.TargetMachine] = {}


def target_machine(
    target: Target | str, options: PtxOptions = DEFAULT_PTX_OPTIONS
) -> llvm_binding.TargetMachine:
    """An llvmlite TargetMachine for ``target`` (cached per target, features and options).

    GPU targets use the PIC relocation model and the default code model; the host target
    uses llvmlite's JIT defaults. The NVPTX command-line switches of ``options`` are set
    before the machine is created (its data layout depends on ``short_pointers``).
    """
    import llvmlite.binding as llvm

    target = get_target(target)
    initialize_llvm()
    key = (target.triple, target.cpu, target.features, options)
    with _LOCK:
        tm = _tm_cache.get(key)
        if tm is None:
            if target.is_gpu:
                _apply_cl_options(options)
            llvm_target = llvm.Target.from_triple(target.triple)
            if target.is_gpu:
                tm = llvm_target.create_target_machine(
                    cpu=target.cpu,
                    features=target.features,
                    opt=options.codegen_opt_level,
                    reloc="pic",
                    codemodel="default",
                )
            else:
                tm = llvm_target.create_target_machine(
                    cpu=target.cpu, features=target.features, opt=options.codegen_opt_level, jit=True
                )
            _tm_cache[key] = tm
        return tm




M = TypeVar("M")


def mark_kernel(module: M, fn_name: str, num_threads: int) -> M:
    """Make ``fn_name`` a PTX kernel of exactly ``num_threads`` threads per CTA.

    ``module`` is an ``llvmlite.ir.Module`` (changed in place and returned) or LLVM IR text
    (a new text is returned). Adds ``!nvvm.annotations`` entries ``kernel``, ``reqntidx``
    = ``num_threads``, ``reqntidy`` = ``reqntidz`` = 1; on an llvmlite module it also sets the
    ``ptx_kernel`` calling convention. Marking the same function again with the same count
    is a no-op; with another count it is a CodegenError, as is an unknown or bodiless function.
    """
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or not 1 <= num_threads <= 1024:
        raise CodegenError(f"mark_kernel: num_threads must be 1..1024, got {num_threads!r}")
    if isinstance(module, str):
        return _mark_kernel_text(module, fn_name, num_threads)  # type: ignore[return-value]
    return _mark_kernel_ir(module, fn_name, num_threads)


def _annotation_entries(num_threads: int) -> list[tuple[str, int]]:
    return [("kernel", 1), ("reqntidx", num_threads), ("reqntidy", 1), ("reqntidz", 1)]


def _mark_kernel_ir(module, fn_name: str, num_threads: int):
    from llvmlite import ir

    if not isinstance(module, ir.Module):
        raise CodegenError(
            f"mark_kernel expects an llvmlite.ir.Module or LLVM IR text, got {type(module).__name__}"
        )
    fn = module.globals.get(fn_name)
    if not isinstance(fn, ir.Function) or fn.is_declaration:
        raise CodegenError(f"mark_kernel: module has no function definition named {fn_name!r}")
    existing: dict[str, int] = {}
    if "nvvm.annotations" in module.namedmetadata:
        for node in module.get_named_metadata("nvvm.annotations").operands:
            ops = node.operands
            if len(ops) == 3 and ops[0] is fn:
                existing[ops[1].string] = int(ops[2].constant)
    if existing.get("reqntidx", num_threads) != num_threads:
        raise CodegenError(
            f"mark_kernel: {fn_name!r} is already a kernel of {existing['reqntidx']} threads, not {num_threads}"
        )
    fn.calling_convention = "ptx_kernel"
    annotations = module.add_named_metadata("nvvm.annotations")
    i32 = ir.IntType(32)
    for key, value in _annotation_entries(num_threads):
        if key not in existing:
            annotations.add(module.add_metadata([fn, key, ir.Constant(i32, value)]))
    return module


def _mark_kernel_text(text: str, fn_name: str, num_threads: int) -> str:
    quoted = re.escape(fn_name)
    define = re.compile(rf'^define\b[^\n]*@(?:{quoted}|"{quoted}")\(', re.M)
    if not define.search(text):
        raise CodegenError(f"mark_kernel: module has no function definition named {fn_name!r}")
    ref = rf'ptr @(?:{quoted}|"{quoted}")'
    existing = {
        m.group(1): int(m.group(2))
        for m in re.finditer(rf'^!\d+\s*=\s*!\{{\s*{ref}\s*,\s*!"(\w+)"\s*,\s*i32\s+(\d+)\s*\}}', text, re.M)
    }
    if existing.get("reqntidx", num_threads) != num_threads:
        raise CodegenError(
            f"mark_kernel: {fn_name!r} is already a kernel of {existing['reqntidx']} threads, not {num_threads}"
        )
    todo = [(k, v) for k, v in _annotation_entries(num_threads) if k not in existing]
    if not todo:
        return text
    next_id = max((int(n) for n in re.findall(r"^!(\d+)\s*=", text, re.M)), default=-1) + 1
    ids = list(range(next_id, next_id + len(todo)))
    fn_ref = f'ptr @"{fn_name}"' if not re.fullmatch(r"[A-Za-z_.$][\w.$]*", fn_name) else f"ptr @{fn_name}"
    nodes = "".join(f'!{i} = !{{{fn_ref}, !"{k}", i32 {v}}}\n' for i, (k, v) in zip(ids, todo))
    refs = ", ".join(f"!{i}" for i in ids)
    named = re.compile(r"^!nvvm\.annotations\s*=\s*!\{(.*)\}\s*$", re.M)
    m = named.search(text)
    if m:
        inner = m.group(1).strip()
        joined = f"{inner}, {refs}" if inner else refs
        text = text[: m.start()] + f"!nvvm.annotations = !{{{joined}}}" + text[m.end() :]
    else:
        text = text.rstrip("\n") + f"\n\n!nvvm.annotations = !{{{refs}}}\n"
    return text.rstrip("\n") + "\n" + nodes


# ---------------------------------------------------------------- emission


def _parse(text: str, what: str, context=None) -> llvm_binding.ModuleRef:
    import llvmlite.binding as llvm

    try:
        mod = llvm.parse_assembly(text, context=context)
    except RuntimeError as exc:
        raise CodegenError(f"{what}: LLVM IR does not parse: {str(exc).strip()}") from exc
    try:
        mod.verify()
    except RuntimeError as exc:
        raise CodegenError(f"{what}: LLVM verifier rejected the module: {str(exc).strip()}") from exc
    return mod


def _reflect_flag_module(ftz: bool, triple: str, data_layout: str, context=None) -> llvm_binding.ModuleRef:
    import llvmlite.binding as llvm

    mod = llvm.parse_assembly(
        f'!llvm.module.flags = !{{!0}}\n!0 = !{{i32 4, !"nvvm-reflect-ftz", i32 {int(ftz)}}}\n',
        context=context,
    )
    mod.triple = triple
    mod.data_layout = data_layout
    return mod


def _link(dst, src, what: str) -> None:
    try:
        dst.link_in(src)
    except RuntimeError as exc:
        raise CodegenError(f"linking {what} failed: {str(exc).strip()}") from exc


def _optimize(mod, tm, options: PtxOptions) -> None:
    """Run the IR pipeline of ``options`` on ``mod``, whose non-entry symbols are internal; the
    first pass manager ends with dead-code elimination, so what the entry does not reach is
    gone before anything expensive runs. Each pass manager runs with a pass builder of its own
    (:func:`_run`)."""
    import llvmlite.binding as llvm

    if options.pipeline == "none":
        _run(mod, _dead_strip(llvm.create_new_module_pass_manager()), tm, options, 0)
        return
    if options.pipeline.startswith("O"):
        _run(mod, None, tm, options, options.speed_level)
        return
    # light: LLVM's default<O0> first, for the NVPTX pipeline-start passes (NVVMReflect folds
    # libdevice's __nvvm_reflect branches before they are optimized; NVVMIntrRange bounds
    # %tid/%ntid by the kernel's reqntid, which lets instcombine narrow masks) and inlining
    _run(mod, None, tm, options, 0, then_strip=True)
    mpm = llvm.create_new_module_pass_manager()
    for name in LIGHT_PIPELINE:
        getattr(mpm, f"add_{name}_pass")()
    _run(mod, _dead_strip(mpm), tm, options, 2)


def _dead_strip(mpm):
    mpm.add_global_dead_code_eliminate_pass()
    mpm.add_strip_dead_prototype_pass()
    return mpm


def _run(mod, mpm, tm, options: PtxOptions, speed_level: int, *, then_strip: bool = False) -> None:
    """Run ``mpm`` (None: LLVM's ``default<speed_level>`` pipeline, with dead-code stripping
    appended when ``then_strip``) on the module with a pass builder made for this one run.

    Why one builder per run: llvmlite's run registers the run's instrumentation callbacks in
    the builder's callback list and frees the instrumentation when it returns, so a second
    run on the same builder would call the first run's freed callbacks; and building LLVM's
    default pipelines or running them leaks tens of KiB per builder in llvmlite (the callback
    list is never freed), which is why eggpu runs as few of them as it can (see
    docs/codegen.md, "Memory of a long-lived process")."""
    pb = _pass_builder(tm, options, speed_level)
    if mpm is None:
        mpm = pb.getModulePassManager()
        if then_strip:
            _dead_strip(mpm)
    mpm.run(mod, pb)


def _pass_builder(tm, options: PtxOptions, speed_level: int):
    import llvmlite.binding as llvm

    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.slp_vectorization = options.slp_vectorize
    pto.loop_vectorization = options.loop_vectorize
    pto.loop_unrolling = options.loop_unroll
    return llvm.create_pass_builder(tm, pto)


def emit_ptx(
    llvm_module_text: str,
    target: Target | str,
    *,
    entry: str,
    fast_math: bool = False,
    options: PtxOptions = DEFAULT_PTX_OPTIONS,
) -> PtxResult:
    """Compile the LLVM IR text ``llvm_module_text`` to PTX for ``target`` (see module docs).

    ``entry`` must be a function definition marked as a kernel (:func:`mark_kernel`); it is
    the only symbol left visible. Raises CodegenError for IR that does not parse or verify,
    a missing or unmarked entry, an unknown ``__nv_*`` function, or PTX whose header does
    not match the target; ToolchainError when libdevice is needed but not installed.
    """
    import llvmlite.binding as llvm

    target = get_target(target)
    if not target.is_gpu:
        raise CodegenError(f"emit_ptx needs a GPU target, got {target.name!r}")
    what = f"kernel {entry!r} for {target.name}"
    with _LOCK:
        tm = target_machine(target, options)
        _apply_cl_options(options)
        # a context per compile: what LLVM keeps in a context (metadata, constants, types of
        # every module parsed into it) is freed with it, not kept for the life of the process
        context = llvm.create_context()
        mod = _parse(llvm_module_text, what, context)
        fn = mod.get_function(entry) if entry in {f.name for f in mod.functions} else None
        if fn is None or fn.is_declaration:
            raise CodegenError(f"{what}: the module has no definition of the entry function {entry!r}")
        data_layout = str(tm.target_data)
        mod.triple = target.triple
        mod.data_layout = data_layout

        flags = _reflect_flag_module(fast_math, target.triple, data_layout, context)
        _link(mod, flags, "the nvvm-reflect-ftz flag")
        used = tuple(
            sorted(f.name for f in mod.functions if f.is_declaration and f.name.startswith(LIBDEVICE_PREFIX))
        )
        # sinking undoes the on-demand order around inlined libdevice branches (codegen/schedule.py)
        _set_sinking(options.instcombine_sinking or not used)
        if used:
            try:
                subset = libdevice_subset(used, target.triple, data_layout,
                                          lambda: _pass_builder(tm, options, 0), context=context)
            except LibdeviceMissing as exc:
                raise CodegenError(f"{what}: {exc}") from exc
            _link(mod, subset, "libdevice")

        internalize(mod, (entry,))
        _optimize(mod, tm, options)
        try:
            mod.verify()
        except RuntimeError as exc:  # pragma: no cover - an LLVM bug, not a user error
            raise CodegenError(f"{what}: module no longer verifies after optimization: {exc}") from exc
        optimized = str(mod)
        ptx = tm.emit_assembly(mod)
        if not options.ptxas_unroll:
            ptx = no_unroll(ptx)
        # the modules go before their context (disposing a context frees its modules)
        del mod, fn, flags
        if used:
            del subset
        context.close()
    _check_ptx(ptx, target, entry, what)
    return PtxResult(
        ptx=ptx, llvm_ir_optimized=optimized, libdevice_functions_used=used, target=target, entry=entry
    )


def _check_ptx(ptx: str, target: Target, entry: str, what: str) -> None:
    version = re.search(r"^\.version\s+(\d+)\.(\d+)", ptx, re.M)
    if version is None or (int(version.group(1)), int(version.group(2))) != target.ptx_isa:
        found = f"{version.group(1)}.{version.group(2)}" if version else "none"
        raise CodegenError(f"{what}: PTX .version is {found}, expected {target.ptx_version_str}")
    tgt = re.search(r"^\.target\s+(\w+)", ptx, re.M)
    if tgt is None or tgt.group(1) != target.name:
        raise CodegenError(
            f"{what}: PTX .target is {tgt.group(1) if tgt else 'missing'}, expected {target.name}"
        )
    if not re.search(rf"^\.visible \.entry {re.escape(entry)}\(", ptx, re.M):
        raise CodegenError(
            f"{what}: {entry!r} is not a PTX kernel entry (mark it with eggpu.codegen.ptx.mark_kernel)"
        )
