"""Code-generation targets: a name (``sm_90``, ``host``) -> LLVM triple, CPU, features.

Which GPU targets exist, their spellings, PTX ISA versions, CUDA releases and shared-memory
limits are defined once in :mod:`eggpu.ir.targets` (shared with the cost model and the compile
API). This module turns a name into the :class:`Target` LLVM needs: GPU targets compile to PTX
through LLVM's NVPTX back end (triple ``nvptx64-nvidia-cuda``, CPU = the SM name, the minimum
PTX ISA passed as the ``+ptxNN`` feature so the ``.version`` line is stable).

The host target (name ``host``) runs the same lowering on the CPU: the process triple from
llvmlite, the host CPU name and its feature string.

Every target has ``num_warps`` (default 4): a program (CTA) runs ``num_warps * 32`` threads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from eggpu.ir.errors import CodegenError
from eggpu.ir.targets import (
    DEFAULT_NUM_STAGES,
    GPU_TARGETS,
    HOST,
    MAX_NUM_STAGES,
    STATIC_SHARED_BYTES,
    canonical_target_name,
    check_dot_strategy,
    check_num_stages,
    max_shared_bytes_of,
    resolve_gpu_target,
)

__all__ = [
    "DEFAULT_NUM_STAGES",
    "DEFAULT_NUM_WARPS",
    "GPU_TARGETS",
    "MAX_NUM_STAGES",
    "NVPTX_TRIPLE",
    "STATIC_SHARED_BYTES",
    "WARP_SIZE",
    "Target",
    "check_dot_strategy",
    "check_num_stages",
    "get_target",
    "host_target",
]

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
WARP_SIZE = 32
DEFAULT_NUM_WARPS = 4
MAX_NUM_WARPS = 32  # 1024 threads per CTA, the CUDA limit


@dataclass(frozen=True)
class Target:
    """A compilation target. Build one with :func:`get_target` or :func:`host_target`.

    Fields: ``name`` (``"sm_90a"`` or ``"host"``), ``triple``, ``cpu`` (LLVM CPU name),
    ``features`` (LLVM feature string, ``"+ptx78"`` for GPUs), ``ptx_isa`` ((major, minor)
    or None on the host), ``min_cuda`` (oldest CUDA release whose ptxas takes this PTX; None
    on the host), ``num_warps``.
    """

    name: str
    triple: str
    cpu: str
    features: str
    ptx_isa: tuple[int, int] | None
    min_cuda: tuple[int, int] | None
    num_warps: int = DEFAULT_NUM_WARPS

    @property
    def is_gpu(self) -> bool:
        return self.ptx_isa is not None

    @property
    def is_host(self) -> bool:
        return not self.is_gpu

    @property
    def warp_size(self) -> int:
        return WARP_SIZE

    @property
    def threads_per_cta(self) -> int:
        """Threads per program: ``num_warps * 32`` (the PTX ``.reqntid``)."""
        return self.num_warps * WARP_SIZE

    @property
    def sm(self) -> int | None:
        """Compute capability as an int (``sm_90a`` -> 90), None on the host."""
        return None if self.name == HOST else resolve_gpu_target(self.name).sm

    @property
    def max_shared_bytes(self) -> int | None:
        """The most shared memory (bytes) one CTA may use on this target: up to
        :data:`STATIC_SHARED_BYTES` statically, beyond that as dynamic shared memory with the
        launch-time opt-in (sm_75: 64 KiB, sm_80/87: 163 KiB, sm_86/89/120: 99 KiB, sm_90 and
        later data-center parts: 227 KiB). None on the host (no limit but memory)."""
        sm = self.sm
        return None if sm is None else max_shared_bytes_of(sm)

    @property
    def ptx_version_str(self) -> str | None:
        """The PTX ``.version`` text, e.g. ``"7.8"``; None on the host."""
        return f"{self.ptx_isa[0]}.{self.ptx_isa[1]}" if self.ptx_isa else None

    def with_num_warps(self, num_warps: int) -> Target:
        """The same target with another ``num_warps`` (validated like :func:`get_target`)."""
        return replace(self, num_warps=_check_num_warps(num_warps))

    def __str__(self) -> str:
        return self.name


def _check_num_warps(num_warps: int) -> int:
    if (
        isinstance(num_warps, bool)
        or not isinstance(num_warps, int)
        or num_warps < 1
        or num_warps > MAX_NUM_WARPS
        or num_warps & (num_warps - 1)
    ):
        raise CodegenError(
            f"num_warps must be a power of two between 1 and {MAX_NUM_WARPS}, got {num_warps!r}"
        )
    return num_warps


def get_target(name: str | Target, *, num_warps: int | None = None) -> Target:
    """The target called ``name``: one of :data:`GPU_TARGETS` or ``"host"``.

    Spellings ``sm_90``, ``SM90``, ``90`` and ``compute_90`` all mean ``sm_90``. A
    :class:`Target` is returned as is (with ``num_warps`` replaced when given). Unknown names
    raise CodegenError listing the supported targets and the closest matches.
    """
    if isinstance(name, Target):
        return name if num_warps is None else name.with_num_warps(num_warps)
    warps = _check_num_warps(DEFAULT_NUM_WARPS if num_warps is None else num_warps)
    key = canonical_target_name(name)
    if key == HOST:
        return host_target(num_warps=warps)
    info = resolve_gpu_target(key)
    isa, cuda = info.ptx_isa, info.min_cuda
    return Target(
        name=key,
        triple=NVPTX_TRIPLE,
        cpu=key,
        features=f"+ptx{isa[0]}{isa[1]}",
        ptx_isa=isa,
        min_cuda=cuda,
        num_warps=warps,
    )


def host_target(*, num_warps: int = DEFAULT_NUM_WARPS) -> Target:
    """The CPU this process runs on (llvmlite's process triple, host CPU name and features)."""
    import llvmlite.binding as llvm

    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # some platforms cannot report features
        features = ""
    return Target(
        name=HOST,
        triple=llvm.get_process_triple(),
        cpu=llvm.get_host_cpu_name(),
        features=features,
        ptx_isa=None,
        min_cuda=None,
        num_warps=_check_num_warps(num_warps),
    )
