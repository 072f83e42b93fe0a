"""The opt-in ``wgmma`` dot on an sm_90 GPU, timed beside ``mma_sync`` and Triton (used by ``bench.gpu``).

The library ``matmul`` (f16 and bf16, ``M = N = K = 2048``, ``num_warps=4``) at the tile
configurations of :data:`TILES`, compiled three ways with the same constexprs:

- ``mma_sync``: eggpu's default on ``sm_90`` (``num_stages`` default: cp.async pipelined);
- ``wgmma``: ``target="sm_90a", dot_strategy="wgmma"`` (``num_stages`` default: cp.async
  stages feeding the descriptors, one wgmma group in flight, where the loads are proven 16-byte
  contiguous; the recorded ``wgmma_dot`` report says whether it was pipelined);
- Triton, its own ``kernel[grid](...)`` launch (wgmma on sm_90a, ``num_stages=3``).

Each output is checked against a PyTorch f32 matmul (rounded to the dtype) before timing;
``wgmma_over_triton_time`` and ``wgmma_over_mma_sync_time`` are the ratios of median times.
Only an sm_90 device runs it (wgmma is sm_90a only); elsewhere :func:`run` returns
``{"skipped": why}``.
"""

from __future__ import annotations

from typing import Any

TILES = ((128, 128, 32), (64, 64, 32))
DTYPES = ("f16", "bf16")
SHAPE = (2048, 2048, 2048)
VARIANTS: dict[str, dict[str, Any]] = {
    "mma_sync": {"target": "sm_90"},
    "wgmma": {"target": "sm_90a", "dot_strategy": "wgmma"},
}


def instance(dt: str, tiles: tuple[int, int, int]) -> Any:
    """The library matmul Kernel instance for ``dt`` with ``BLOCK_M, BLOCK_N, BLOCK_K = tiles``."""
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    return get("matmul").kernel(parse_dtype(dt), list(tiles))


def prepare(directory: str) -> None:
    """Compile every variant into the eggpu cache ``directory`` (for a GPU machine without egglog/z3)."""
    import eggpu

    for dt in DTYPES:
        for tiles in TILES:
            for name, opts in VARIANTS.items():
                ck = eggpu.compile(instance(dt, tiles), cache=directory, num_warps=4, **opts)
                print(f"prepared matmul_{dt} {tiles} {name}: {ck.report.get('cache')}")


def run(torch: Any, time_gpu: Any, flush: Any, reps: int, warmup: int, progress=print) -> dict[str, Any]:
    """``{"rows": [...]}``: per dtype and tile configuration, each variant's max error and timing
    (``time_gpu(launch, reps, warmup, flush) -> (times_ms, host_ms)``, as ``bench.gpu``'s)."""
    cap = torch.cuda.get_device_capability(0)
    if tuple(cap) != (9, 0):
        return {"skipped": f"wgmma needs an sm_90 device (this one is sm_{cap[0]}{cap[1]})"}
    rows = []
    for dt in DTYPES:
        for tiles in TILES:
            row = _row(torch, dt, tiles, lambda launch: time_gpu(launch, reps, warmup, flush))
            rows.append(row)
            progress(f"  gpu matmul_{dt} {'x'.join(map(str, tiles))}: " + ", ".join(
                f"{t} {row[t]['median_ms']:.3f} ms" if "median_ms" in row[t] else f"{t} ERROR"
                for t in ("mma_sync", "wgmma", "triton")))
        torch.cuda.empty_cache()
    return {"rows": rows}


def _row(torch: Any, dt: str, tiles: tuple[int, int, int], timed: Any) -> dict[str, Any]:
    """One dtype and tile configuration: every variant and Triton, checked then timed."""
    import statistics

    import numpy as np

    import eggpu

    from . import triton_kernels as tk

    M, N, K = SHAPE
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dt]
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, generator=g, device="cuda").to(tdt)
    b = torch.randn(K, N, generator=g, device="cuda").to(tdt)
    c = torch.empty(M, N, device="cuda", dtype=tdt)
    want = (a.float() @ b.float()).to(tdt).float()
    tol = 2e-2 * float(want.abs().max())  # one rounding of the output to 16 bits dominates
    bm, bn, _ = tiles
    grid = (-(-M // bm), -(-N // bn))
    row: dict[str, Any] = {"dtype": dt, "tiles": list(tiles), "shape": list(SHAPE), "num_warps": 4}

    def measure(launch: Any) -> dict[str, Any]:
        c.zero_()
        launch()
        torch.cuda.synchronize()
        err = float((c.float() - want).abs().max())
        if not err <= tol:
            return {"error": f"max error {err:.3g} > {tol:.3g}"}
        times, host = timed(launch)
        med = statistics.median(times)
        return {"max_err": err, "median_ms": med, "tflops": 2 * M * N * K / (med * 1e-3) / 1e12,
                "host_ms_per_call": host}

    scalars = [np.int32(x) for x in (M, N, K, K, 1, N, 1, N, 1)]
    for name, opts in VARIANTS.items():
        try:
            ck = eggpu.compile(instance(dt, tiles), num_warps=4, **opts)
            row[f"{name}_dot"] = ck.report.get("dot")
            row[name] = measure(lambda ck=ck: ck.launch(grid, a, b, c, *scalars, synchronize=False))
        except Exception as exc:  # noqa: BLE001 - a failure is a result to record
            row[name] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    try:
        spec = tk.SPECS["matmul"]
        kw = dict(zip(spec.constexpr_names, tiles)) | tk.extra_constexprs("matmul", dt)
        row["triton"] = measure(lambda: spec.fn[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, **kw, num_warps=4,
                                                      enable_fp_fusion=False))
    except Exception as exc:  # noqa: BLE001
        row["triton"] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    for other in ("triton", "mma_sync"):
        if "median_ms" in row["wgmma"] and "median_ms" in row[other]:
            row[f"wgmma_over_{other}_time"] = row["wgmma"]["median_ms"] / row[other]["median_ms"]
    return row
