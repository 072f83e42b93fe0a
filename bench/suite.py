"""The benchmark suite: which kernels, in which dtype, at which sizes, and what each one moves.

Every entry names an eggpu library kernel (:data:`eggpu.kernels.LIBRARY`) and its Triton twin
(:mod:`bench.triton_kernels`, same name). The constexpr values both compilers get are the ones
the eggpu library's own case builder chooses for the entry's size (``LibraryKernel.make_case``):
``BLOCK_SIZE = 1024`` for 1-D kernels, ``min(256, next_pow2(n_cols))`` (at least 16) for row
kernels, ``32 x 32 x 16`` tiles for matmul. This module imports neither eggpu's compiler nor
Triton, so it is cheap to import in worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass

# Sizes: compile-time constexprs depend on them (row kernels: the block), so every measurement
# of one entry uses the same constexprs.
N_1D = 1 << 24  # 16 Mi elements: 64 MiB per f32 array on the GPU
ROWS, COLS = 4096, 4096  # row kernels on the GPU
MATMUL = (2048, 2048, 2048)  # M, N, K on the GPU
N_1D_CPU = 1 << 22  # CPU execution of the lowering: 16 MiB per f32 array, past the CPU caches
ROWS_CPU = (1024, 4096)


@dataclass(frozen=True)
class Entry:
    """One benchmarked kernel specialization.

    ``key``: unique label (``matmul_f16``); ``kernel``: library (and Triton) kernel name;
    ``dtype``: eggpu dtype name; ``shape``: 1-D ``n``, rows ``(rows, cols)`` or matmul ``(M, N, K)``
    (GPU sizes; the constexprs follow from it); ``memory_bound``: held to the memory-bound goals;
    ``cpu``: measured on the CPU path (with ``cpu_shape``).
    """

    key: str
    kernel: str
    dtype: str
    shape: tuple[int, ...]
    memory_bound: bool
    cpu_shape: tuple[int, ...] | None = None

    @property
    def family(self) -> str:
        if self.kernel == "matmul":
            return "matmul"
        return "1d" if len(self.shape) == 1 else "rows"

    def size_arg(self, shape: tuple[int, ...] | None = None):
        s = shape or self.shape
        return s[0] if len(s) == 1 else tuple(s)

    def bytes_moved(self, shape: tuple[int, ...] | None = None) -> int:
        """Compulsory DRAM traffic in bytes (each input read once, each output written once)."""
        s = shape or self.shape
        e = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}[self.dtype]
        if self.kernel == "vector_add":
            return 3 * s[0] * e
        if self.kernel == "gelu_forward":
            return 2 * s[0] * e
        if self.family == "matmul":
            m, n, k = s
            return (m * k + k * n + m * n) * e
        rows, cols = s
        per_row = {
            "softmax_forward": 2 * cols * e,
            "layer_norm_forward": 2 * cols * e + 8,
            "rms_norm_forward": 2 * cols * e,
            "cross_entropy_forward": cols * e + 8,
            "row_argmax": cols * e + 4,
        }[self.kernel]
        extra = {"layer_norm_forward": 2 * cols * e, "rms_norm_forward": cols * e}.get(self.kernel, 0)
        return rows * per_row + extra

    def flops(self, shape: tuple[int, ...] | None = None) -> int:
        s = shape or self.shape
        if self.family == "matmul":
            m, n, k = s
            return 2 * m * n * k
        return 0


SUITE: tuple[Entry, ...] = (
    Entry("vector_add", "vector_add", "f32", (N_1D,), True, (N_1D_CPU,)),
    Entry("gelu_forward", "gelu_forward", "f32", (N_1D,), True, (N_1D_CPU,)),
    Entry("softmax_forward", "softmax_forward", "f32", (ROWS, COLS), True, ROWS_CPU),
    Entry("layer_norm_forward", "layer_norm_forward", "f32", (ROWS, COLS), True, ROWS_CPU),
    Entry("rms_norm_forward", "rms_norm_forward", "f32", (ROWS, COLS), True, ROWS_CPU),
    Entry("cross_entropy_forward", "cross_entropy_forward", "f32", (ROWS, COLS), True, ROWS_CPU),
    Entry("row_argmax", "row_argmax", "f32", (ROWS, COLS), True, ROWS_CPU),
    Entry("matmul_f16", "matmul", "f16", MATMUL, False),
    Entry("matmul_bf16", "matmul", "bf16", MATMUL, False),
    Entry("matmul_f32", "matmul", "f32", MATMUL, False),
)

BY_KEY = {e.key: e for e in SUITE}

# The kernels issue 5 holds to the cold-compile goal.
COLD_COMPILE_GOAL_KERNELS = ("vector_add", "softmax_forward", "layer_norm_forward", "matmul_f16", "matmul_f32")

TARGETS = ("sm_80", "sm_90")  # static code quality
TIMING_TARGET = "sm_90"  # compile-time measurements
NUM_WARPS = 4


def worker_args(entry: Entry, target: str, num_warps: int) -> dict:
    """The arguments of a :mod:`bench.worker` compile of ``entry``: its key, constexprs, and the
    library kernel name and dtype, so the worker finds the kernel without importing this module
    (``dataclasses`` imports ``inspect``: ~8 ms a timed fresh process would otherwise count)."""
    return {"key": entry.key, "kernel": entry.kernel, "dtype": entry.dtype, "consts": consts_for(entry),
            "target": target, "num_warps": num_warps}


def consts_for(entry: Entry) -> list:
    """The constexpr values of ``entry`` as the eggpu library's case builder picks them.

    Built from a small case of the same constexpr class (same ``n_cols`` for rows), so no large
    arrays are allocated.
    """
    import numpy as np

    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    lk = get(entry.kernel)
    if entry.family == "1d":
        size = 4096
    elif entry.family == "rows":
        size = (1, entry.shape[1])
    else:
        size = (64, 64, 64)
    case = lk.make_case(size, parse_dtype(entry.dtype), np.random.default_rng(0))
    return list(case.consts)


def select(keys: list[str] | None) -> list[Entry]:
    """The suite entries named by ``keys`` (all when None); ValueError naming the choices."""
    if not keys:
        return list(SUITE)
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        raise ValueError(f"unknown benchmark kernel(s) {unknown}; choose from {', '.join(BY_KEY)}")
    return [BY_KEY[k] for k in keys]
