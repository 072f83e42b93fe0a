"""eggpu.codegen — tensor IR -> LLVM IR (llvmlite) -> PTX, and the same lowering run on the CPU.

Public API (llvmlite is imported on first use, so ``import eggpu.codegen`` stays light):

- :func:`lower` ``(fn, target="sm_90", *, num_warps=4, fast_math=False, assume_aligned=True)
  -> LoweredModule`` (``llvm_ir``, ``entry``, ``num_threads``, ``shared_bytes``,
  ``assumptions``);
- :func:`compile_ptx` ``(fn, target, ...) -> (ptx, llvm_ir)`` and :func:`compile_ptx_module`
  (which also returns the :class:`LoweredModule`, whose ``assumptions`` a launcher must check);
- :func:`build_host` ``(fn, *, num_warps=4) -> HostKernel`` with ``.run(grid, *numpy_args)``.

See ``docs/codegen.md`` ("Lowering") for the design: one lowering, parameterized by an
Emitter in ``ptx`` or ``host`` mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from eggpu.ir.graph import Function

    from .host import HostKernel
    from .lowering import LoweredModule
    from .target import Target

HOST_EMULATED_SM = 90
"""The compute capability a host build emulates when none is given (the default target, sm_90)."""

__all__ = ["HOST_EMULATED_SM", "CompiledPTX", "HostKernel", "LoweredModule", "build_host", "compile_ptx", "compile_ptx_module", "lower"]


def lower(fn: Function, target: Target | str = "sm_90", *, num_warps: int | None = None, fast_math: bool = False,
          assume_aligned: bool = True, num_stages: int | None = 1, dot_strategy: str | None = None) -> LoweredModule:
    """Lower ``fn`` to LLVM IR for ``target`` (a GPU target name, a Target or ``"host"``).

    ``num_warps`` (default: the Target's, else 4) sets the threads per program. GPU: the module
    holds ``{fn.name}_entry_point`` marked as a kernel of ``num_warps * 32`` threads. Host:
    ``{fn.name}_grid`` (see :mod:`eggpu.codegen.lowering`). The text is checked by LLVM's verifier.
    ``num_stages``: software pipelining of tensor-core K loops (1: none; :mod:`eggpu.codegen.mma_pipeline`).
    ``dot_strategy``: None (automatic) or the strategy every ``dot`` must use (``"wgmma"``: sm_90a, opt-in).
    """
    from .lowering import lower_function
    from .target import check_num_stages

    tgt = _target(target, num_warps)
    mode = "ptx" if tgt.is_gpu else "host"
    _module, lm = lower_function(fn, mode, tgt.num_warps, fast_math=fast_math, assume_aligned=assume_aligned,
                                 sm=tgt.sm if tgt.is_gpu else HOST_EMULATED_SM, **_shared_limit(tgt),
                                 num_stages=check_num_stages(num_stages, fn.name), dot_strategy=dot_strategy)
    return lm


def _shared_limit(tgt: Target) -> dict[str, Any]:
    """``lower_function``'s shared-memory keywords for ``tgt`` (GPU targets only)."""
    return {"max_shared_bytes": tgt.max_shared_bytes, "target_name": tgt.name} if tgt.is_gpu else {}


def _target(target: Any, num_warps: int | None) -> Target:
    """``target`` as a Target, with ``num_warps`` applied when given."""
    from .target import get_target

    return get_target(target, num_warps=num_warps)


@dataclass(frozen=True)
class CompiledPTX:
    """PTX of one kernel: ``ptx``, the lowered (unoptimized) ``llvm_ir``, the optimized module
    text ``llvm_ir_optimized`` and the :class:`LoweredModule` (``assumptions``!)."""

    ptx: str
    llvm_ir: str
    llvm_ir_optimized: str
    lowered: LoweredModule


def compile_ptx_module(fn: Function, target: Target | str = "sm_90", *, num_warps: int | None = None,
                       fast_math: bool = False, assume_aligned: bool = True, num_stages: int | None = 1,
                       dot_strategy: str | None = None) -> CompiledPTX:
    """Lower ``fn`` and emit PTX (libdevice linked, internalized, O3) for a GPU target.
    ``num_stages``: ``cp.async`` stages of a tensor-core K loop (1: no software pipelining;
    ``eggpu.compile`` defaults to Triton's 3). ``dot_strategy``: as :func:`lower`."""
    from eggpu.ir.errors import CodegenError

    from .lowering import lower_function
    from .ptx import emit_ptx
    from .target import check_num_stages

    tgt = _target(target, num_warps)
    if not tgt.is_gpu:
        raise CodegenError(f"{fn.name}: compile_ptx needs a GPU target, got {tgt.name!r}")
    # emit_ptx parses and verifies the text itself
    _module, lm = lower_function(fn, "ptx", tgt.num_warps, fast_math=fast_math, assume_aligned=assume_aligned,
                                 verify_llvm=False, sm=tgt.sm, **_shared_limit(tgt),
                                 num_stages=check_num_stages(num_stages, fn.name), dot_strategy=dot_strategy)
    res = emit_ptx(lm.llvm_ir, tgt, entry=lm.entry, fast_math=fast_math)
    return CompiledPTX(res.ptx, lm.llvm_ir, res.llvm_ir_optimized, lm)


def compile_ptx(fn: Function, target: Target | str = "sm_90", *, num_warps: int | None = None,
                fast_math: bool = False, assume_aligned: bool = True) -> tuple[str, str]:
    """``(ptx, llvm_ir)`` of ``fn`` for ``target`` (see :func:`compile_ptx_module`)."""
    c = compile_ptx_module(fn, target, num_warps=num_warps, fast_math=fast_math, assume_aligned=assume_aligned)
    return c.ptx, c.llvm_ir


def build_host(fn: Function, *, num_warps: int = 4, assume_aligned: bool = True, fast_math: bool = False,
               sm: int | None = None, num_stages: int | None = 1, dot_strategy: str | None = None) -> HostKernel:
    """JIT-compile the host-mode lowering of ``fn``; call ``.run(grid, *args)`` on numpy arrays.

    ``sm``: the GPU (compute capability) whose strategies the CPU build executes, e.g. the
    tensor-core ``dot`` of sm_80+ (default :data:`HOST_EMULATED_SM`, the default target's; 0: the
    portable strategies only). ``num_stages``: the software-pipelined K loop schedule to execute
    (as :func:`compile_ptx_module`). ``dot_strategy``: as :func:`lower` (``"wgmma"`` needs ``sm=90``)."""
    from .host import build_host as _build
    from .target import check_num_stages

    return _build(fn, num_warps=num_warps, assume_aligned=assume_aligned, fast_math=fast_math,
                  sm=HOST_EMULATED_SM if sm is None else sm, num_stages=check_num_stages(num_stages, fn.name),
                  dot_strategy=dot_strategy)


def __getattr__(name: str):
    if name == "HostKernel":
        from .host import HostKernel

        return HostKernel
    if name == "LoweredModule":
        from .lowering import LoweredModule

        return LoweredModule
    raise AttributeError(f"module 'eggpu.codegen' has no attribute {name!r}")
