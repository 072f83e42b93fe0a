"""The one definition of eggpu's NVIDIA targets: which names exist, how they are spelled and what
each one is (compute capability, PTX ISA, first CUDA release, shared-memory limit, f64 rate).

Every layer that takes a target name resolves it here, so the compile API, the CLI, the cost
model and code generation accept exactly the same set and agree on what a name means:

* spellings ``sm_90``, ``SM90``, ``90`` and ``compute_90`` all mean ``sm_90`` (an ``a`` suffix
  is kept: ``sm_90a`` is a target of its own);
* an unknown name raises :class:`~eggpu.ir.errors.CodegenError` listing the supported targets
  and the closest matches;
* ``host`` is not a GPU target: :func:`resolve_gpu_target` refuses it and
  :func:`canonical_target_name` returns it as ``"host"`` (the CPU lowering behind ``run_cpu``).

A GPU target carries the *minimum* PTX ISA version that supports its SM: exactly the version
LLVM 22 picks on its own for that CPU, passed explicitly as the ``+ptxNN`` feature so the PTX's
``.version`` line is stable. A PTX ISA version is first accepted by the ``ptxas`` of one CUDA
release (:attr:`GpuTargetInfo.min_cuda`); a newer ``ptxas`` accepts every older ISA.

=========  ========  ======================
target     PTX ISA   first CUDA with ptxas
=========  ========  ======================
sm_75      6.3       10.0
sm_80      7.0       11.0
sm_86      7.1       11.1
sm_87      7.4       11.4
sm_89      7.8       11.8
sm_90      7.8       11.8
sm_90a     8.0       12.0
sm_100     8.6       12.8
sm_100a    8.6       12.8
sm_103     8.8       12.9
sm_110     9.0       13.0
sm_120     8.7       12.8
sm_120a    8.7       12.8
sm_121     8.8       12.9
=========  ========  ======================

(``sm_101`` exists in LLVM 22 but CUDA 13 renamed it ``sm_110``, so it is not offered.)

This module is a leaf (standard library only), so a cache hit can canonicalize its target
without importing code generation.
"""

from __future__ import annotations

import re

from eggpu.ir.errors import CodegenError
from eggpu.ir.record import Frozen

__all__ = [
    "DEFAULT_NUM_STAGES",
    "GPU_TARGETS",
    "HOST",
    "STATIC_SHARED_BYTES",
    "MAX_NUM_STAGES",
    "GpuTargetInfo",
    "canonical_target_name",
    "DOT_STRATEGY_NAMES",
    "check_dot_strategy",
    "check_num_stages",
    "max_shared_bytes_of",
    "resolve_gpu_target",
]

HOST = "host"

# name -> (PTX ISA (major, minor), first CUDA release whose ptxas accepts that ISA)
_GPU_TABLE: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "sm_75": ((6, 3), (10, 0)),
    "sm_80": ((7, 0), (11, 0)),
    "sm_86": ((7, 1), (11, 1)),
    "sm_87": ((7, 4), (11, 4)),
    "sm_89": ((7, 8), (11, 8)),
    "sm_90": ((7, 8), (11, 8)),
    "sm_90a": ((8, 0), (12, 0)),
    "sm_100": ((8, 6), (12, 8)),
    "sm_100a": ((8, 6), (12, 8)),
    "sm_103": ((8, 8), (12, 9)),
    "sm_110": ((9, 0), (13, 0)),
    "sm_120": ((8, 7), (12, 8)),
    "sm_120a": ((8, 7), (12, 8)),
    "sm_121": ((8, 8), (12, 9)),
}

GPU_TARGETS: tuple[str, ...] = tuple(_GPU_TABLE)

STATIC_SHARED_BYTES = 48 * 1024
"""Shared memory a CTA may declare statically (``.shared`` arrays) on every target."""

# Most shared memory one CTA may use on each compute capability, dynamic shared memory included
# after opting in with cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES):
# "Maximum amount of shared memory per thread block" in the CUDA C++ Programming Guide's
# table of technical specifications per compute capability.
_KIB = 1024
_MAX_SHARED: dict[int, int] = {
    75: 64 * _KIB,
    80: 163 * _KIB,
    86: 99 * _KIB,
    87: 163 * _KIB,
    89: 99 * _KIB,
    90: 227 * _KIB,
    100: 227 * _KIB,
    103: 227 * _KIB,
    110: 227 * _KIB,
    120: 99 * _KIB,
    121: 99 * _KIB,
}

# Data-centre parts run f64 at half the f32 rate; the others (sm_75, sm_86, sm_89, sm_120...)
# at 1/32 or 1/64 (CUDA C++ Programming Guide, arithmetic instruction throughput).
_FULL_RATE_F64 = frozenset({80, 90, 100})


def max_shared_bytes_of(sm: int) -> int:
    """The most shared memory (bytes) one CTA may use on compute capability ``sm``; host builds
    emulating ``sm`` plan with the same limit. Unknown capabilities get the static 48 KiB."""
    return _MAX_SHARED.get(sm, STATIC_SHARED_BYTES)


class GpuTargetInfo(Frozen):
    """What one GPU target is. ``name`` is canonical (``"sm_90a"``); ``sm`` the compute
    capability as an int (90); ``ptx_isa``/``min_cuda`` as in the module table."""

    _fields = ("name", "sm", "ptx_isa", "min_cuda")
    name: str
    sm: int
    ptx_isa: tuple[int, int]
    min_cuda: tuple[int, int]

    def __init__(self, name: str, sm: int, ptx_isa: tuple[int, int], min_cuda: tuple[int, int]):
        self._assign(name, sm, ptx_isa, min_cuda)

    @property
    def max_shared_bytes(self) -> int:
        """Shared memory one CTA may use, dynamic shared memory included (:func:`max_shared_bytes_of`)."""
        return max_shared_bytes_of(self.sm)

    @property
    def full_rate_f64(self) -> bool:
        """True on data-centre parts, whose f64 throughput is half the f32 rate."""
        return self.sm in _FULL_RATE_F64


def _normalize(name: str) -> str:
    """``sm_NN[x]`` for what ``(?:sm_?|compute_?)?(\\d+)([a-z]?)`` matches in full, else ``name``
    stripped and lowercased; string tests, so that a cache hit compiles no regular expression."""
    text = name.strip().lower()
    rest = text
    for prefix in ("sm_", "sm", "compute_", "compute"):
        if rest.startswith(prefix):
            rest = rest[len(prefix):]
            break
    suffix = rest[-1:] if rest[-1:] in _LOWER else ""
    digits = rest[:len(rest) - len(suffix)]
    return f"sm_{digits}{suffix}" if digits and digits.isdecimal() else text


_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def canonical_target_name(name: object) -> str:
    """``name`` in its one canonical spelling (``"SM90"`` -> ``"sm_90"``, ``"HOST"`` ->
    ``"host"``). Raises CodegenError for anything that is not a supported target name."""
    if not isinstance(name, str):
        raise CodegenError(f"a target is a name such as 'sm_80' or 'host', got {name!r}")
    key = _normalize(name)
    if key == HOST or key in _GPU_TABLE:
        return key
    import difflib  # only on the error path: a cache hit stays light

    choices = [*GPU_TARGETS, HOST]
    close = difflib.get_close_matches(key, choices, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise CodegenError(f"unknown target {name!r}.{hint} Supported targets: {', '.join(choices)}.")


def resolve_gpu_target(name: object) -> GpuTargetInfo:
    """The GPU target called ``name`` (any spelling :func:`canonical_target_name` takes).
    ``host`` and unknown names raise CodegenError."""
    key = canonical_target_name(name)
    if key == HOST:
        raise CodegenError(f"{name!r} is the CPU, not an NVIDIA GPU target; supported GPU targets: "
                           f"{', '.join(GPU_TARGETS)}")
    isa, cuda = _GPU_TABLE[key]
    sm = int(re.fullmatch(r"sm_(\d+)[a-z]?", key).group(1))  # type: ignore[union-attr]
    return GpuTargetInfo(name=key, sm=sm, ptx_isa=isa, min_cuda=cuda)


DEFAULT_NUM_STAGES = 3
"""``eggpu.compile``'s ``num_stages`` (Triton's default): software-pipelining stages of a
tensor-core K loop (:mod:`eggpu.codegen.mma_pipeline`)."""
MAX_NUM_STAGES = 8


def check_num_stages(value: object, kernel: str = "") -> int | None:
    """``value`` when it is None (automatic: :data:`DEFAULT_NUM_STAGES`, fewer where the stage
    buffers do not fit the target's shared memory) or an int from 1 (no software pipelining) to
    :data:`MAX_NUM_STAGES` (not a bool), else CompileError naming ``kernel``. Here (the IR leaf,
    no llvmlite) because a cache hit checks it too."""
    from eggpu.ir.errors import CompileError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_NUM_STAGES:
        who = f"{kernel}: " if kernel else ""
        raise CompileError(f"{who}num_stages must be None (automatic) or an int from 1 (no software pipelining) "
                           f"to {MAX_NUM_STAGES}, got {value!r}")
    return value


DOT_STRATEGY_NAMES = ("shared_fma", "mma_sync", "wgmma")
"""The values of the compile option ``dot_strategy`` besides None (automatic): the keys of
``eggpu.codegen.lower_dot.DOT_STRATEGIES`` (a test holds them equal). ``"wgmma"`` (sm_90a) is
opt-in: the automatic choice never takes it until it has been checked on a GPU."""


def check_dot_strategy(value: object, kernel: str = "") -> str | None:
    """``value`` when it is None (automatic) or one of :data:`DOT_STRATEGY_NAMES`, else
    CompileError naming ``kernel`` and the accepted values."""
    from eggpu.ir.errors import CompileError

    if value is None or (isinstance(value, str) and value in DOT_STRATEGY_NAMES):
        return value  # type: ignore[return-value]
    who = f"{kernel}: " if kernel else ""
    raise CompileError(f"{who}dot_strategy must be None (automatic) or one of "
                       f"{', '.join(repr(n) for n in DOT_STRATEGY_NAMES)}, got {value!r}")
