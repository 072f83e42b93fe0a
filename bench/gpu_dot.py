"""GPU checks of the tensor-core ``dot`` paths and of float min/max semantics (used by ``bench.gpu_check``).

Cases (each compiled with ``eggpu.compile`` for the device's target, launched with numpy arrays):

- ``dot``: ``C = A @ B`` in tiles, ragged ``M, N, K`` (not multiples of any tile), dtypes f16,
  bf16 (tensor cores, ``mma.sync`` on sm_80+) and f32 (exact, CUDA cores), tile configurations
  32x32x16 (the benchmark's), 64x64x32 and 128x64x32 (f32 result staged in bands); the GPU
  result is compared with numpy (f64 reference) and with ``run_cpu`` (the host's lock-step
  emulation of the same data movement), and the strategy of ``ck.report["dot"]`` is recorded;
- ``dot ... wgmma``: the same on the opt-in ``wgmma`` strategy (``target="sm_90a",
  dot_strategy="wgmma"``, :data:`WGMMA_TILES`), on sm_90 devices only (``Case.options``);
  then again on :data:`PIPE_SHAPE` (multiples of 16, not of the tiles) with the launch facts
  :data:`PIPE_FACTS`, where the K loop is cp.async-pipelined (``num_stages`` default 3) and one
  wgmma group stays in flight (``pipelined`` in the recorded ``dot`` report);
- ``minmax``: ``tl.minimum``/``tl.maximum`` of every pair of NaN, ±0, ±inf, subnormal and normal
  values, and ``tl.min``/``tl.max`` row reductions, in f32/f64/f16/bf16: the GPU must match the
  interpreter bit for bit (NaN ignored, -0.0 < +0.0: PTX ``min``/``max``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import eggpu
import eggpu.language as tl
from bench.mma_kernels import k_loop, store_c, tile_start

DOT_DTYPES = ("f16", "bf16", "f32")
DOT_TILES = ((32, 32, 16), (64, 64, 32), (128, 64, 32))
DOT_SHAPE = (300, 260, 200)  # M, N, K: ragged for every tile
WGMMA_TILES = (((64, 64, 32), 4), ((128, 128, 32), 4), ((128, 64, 64), 8))  # (BM, BN, BK), num_warps
WGMMA_OPTIONS = {"target": "sm_90a", "dot_strategy": "wgmma"}
PIPE_SHAPE = (336, 272, 208)  # M, N, K: multiples of 16 (16-byte cp.async pieces), ragged for every tile
PIPE_FACTS = {"M": "div16", "N": "div16", "K": "div16", "a_ptr": "align16", "b_ptr": "align16"}
SPECIALS = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 1e-40, -1e-40, 3.5, -2.25]


@eggpu.jit
def dot_tiles(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    store_c(c_ptr, k_loop(a_ptr, b_ptr, rm, rn, rk, acc, M, N, K, BK), rm, rn, M, N)


@eggpu.jit
def minmax_pairs(x_ptr, y_ptr, lo_ptr, hi_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(lo_ptr + offs, tl.minimum(x, y), mask=m)
    tl.store(hi_ptr + offs, tl.maximum(x, y), mask=m)


@eggpu.jit
def minmax_rows(x_ptr, lo_ptr, hi_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * COLS + tl.arange(0, COLS))
    tl.store(lo_ptr + row, tl.min(x, axis=0))
    tl.store(hi_ptr + row, tl.max(x, axis=0))


def np_dtype(name: str) -> Any:
    if name == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return {"f16": np.float16, "f32": np.float32, "f64": np.float64}[name]


@dataclass
class Case:
    """One GPU check: ``instance`` (a Kernel to compile), ``grid``, ``args`` (numpy), ``check(gpu_args, ck)``,
    ``options``: ``eggpu.compile`` options of the case (its ``target`` replaces the device's)."""

    label: str
    instance: Any
    grid: tuple[int, ...]
    args: list[Any]
    check: Any
    options: dict[str, Any] = field(default_factory=dict)


def _copy(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _dot_case(dt: str, tiles: tuple[int, int, int], options: dict[str, Any] | None = None,
              shape: tuple[int, int, int] = DOT_SHAPE) -> Case:
    M, N, K = shape
    rng = np.random.default_rng(1)
    t = np_dtype(dt)
    a, b = rng.standard_normal((M, K)).astype(t), rng.standard_normal((K, N)).astype(t)
    c = np.zeros((M, N), np.float32)
    bm, bn, bk = tiles
    args = [a, b, c, np.int32(M), np.int32(N), np.int32(K)]
    inst = dot_tiles.specialize(*args, BM=bm, BN=bn, BK=bk)
    grid = (-(-M // bm), -(-N // bn))

    def check(got: list[Any], ck: Any) -> dict[str, Any]:
        want = a.astype(np.float64) @ b.astype(np.float64)
        host = _copy(args)
        ck.run_cpu(grid, *host)
        tol = 1e-4 * np.sqrt(K)  # f32 accumulation; 16-bit products are exact
        err = float(np.abs(got[2] - want).max())
        err_cpu = float(np.abs(got[2] - host[2]).max())
        if not (err <= tol and err_cpu <= tol):
            raise AssertionError(f"max error {err:.3g} vs numpy, {err_cpu:.3g} vs run_cpu (tolerance {tol:.3g})")
        return {"max_err": err, "max_err_vs_run_cpu": err_cpu, "dot": ck.report.get("dot")}

    how = f" {options['dot_strategy']} num_warps={options.get('num_warps', 4)}" if options else ""
    how += " pipelined" if options and "specialize" in options else ""
    return Case(f"dot[{dt}] {bm}x{bn}x{bk}{how} on {M}x{N}x{K}", inst, grid, args, check, dict(options or {}))


def _same_bits(want: np.ndarray, got: np.ndarray) -> int:
    """Elements that differ (NaN == NaN of any payload)."""
    w, g = want.astype(np.float64), got.astype(np.float64)
    nan = np.isnan(w) & np.isnan(g)
    wb = np.ascontiguousarray(want).view(f"u{want.dtype.itemsize}")
    gb = np.ascontiguousarray(got).view(f"u{got.dtype.itemsize}")
    return int(np.sum((wb != gb) & ~nan))


def _minmax_cases(dt: str) -> Iterator[Case]:
    t = np_dtype(dt)
    x, y = np.meshgrid(np.array(SPECIALS), np.array(SPECIALS))
    with np.errstate(all="ignore"):
        x, y = x.ravel().astype(t), y.ravel().astype(t)
    n = x.size
    args = [x, y, np.zeros(n, t), np.zeros(n, t), np.int32(n)]
    inst = minmax_pairs.specialize(*args, BLOCK=256)

    def check_pairs(got: list[Any], ck: Any) -> dict[str, Any]:
        ref = _copy(args)
        inst.interpret((1,), *ref)
        bad = _same_bits(ref[2], got[2]) + _same_bits(ref[3], got[3])
        if bad:
            raise AssertionError(f"{bad} min/max results differ from the op table's reference")
        return {"pairs": n}

    yield Case(f"minmax pairs[{dt}]", inst, (1,), args, check_pairs)
    rng = np.random.default_rng(2)
    rows = rng.choice(np.array(SPECIALS), size=(8, 32))
    rows[0, :] = np.nan
    rows[1, :] = [0.0, -0.0] * 16
    rows[2, :] = -0.0
    with np.errstate(all="ignore"):
        rows = rows.astype(t)
    rargs = [rows, np.zeros(8, t), np.zeros(8, t)]
    rinst = minmax_rows.specialize(*rargs, COLS=32)

    def check_rows(got: list[Any], ck: Any) -> dict[str, Any]:
        ref = _copy(rargs)
        rinst.interpret((8,), *ref)
        bad = _same_bits(ref[1], got[1]) + _same_bits(ref[2], got[2])
        if bad:
            raise AssertionError(f"{bad} row min/max results differ from the op table's reference")
        return {"rows": 8}

    yield Case(f"minmax rows[{dt}]", rinst, (8,), rargs, check_rows)


def cases() -> Iterator[Case]:
    """Every GPU check of this module, in a fixed order."""
    for dt in DOT_DTYPES:
        for tiles in DOT_TILES:
            yield _dot_case(dt, tiles)
    for dt in ("f16", "bf16"):
        for tiles, nw in WGMMA_TILES:
            yield _dot_case(dt, tiles, WGMMA_OPTIONS | {"num_warps": nw})
    for dt in ("f16", "bf16"):
        for tiles, nw in WGMMA_TILES:
            yield _dot_case(dt, tiles, WGMMA_OPTIONS | {"num_warps": nw, "specialize": PIPE_FACTS}, PIPE_SHAPE)
    for dt in ("f32", "f64", "f16", "bf16"):
        yield from _minmax_cases(dt)
