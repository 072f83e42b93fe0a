"""GPU timing of eggpu and Triton, side by side (self-contained; < 8 minutes on one GPU).

    python -m bench.gpu --prepare DIR      # on any machine with eggpu's full toolchain: fill an
                                           # eggpu cache in DIR for the suite (sm_90 by default)
    EGGPU_CACHE_DIR=DIR python -m bench.gpu --out FILE.json   # on the GPU machine

Without a CUDA device (or without PyTorch, used for device buffers, events and Triton launches)
it prints why and exits 0 with ``{"skipped": reason}``. With one, for each suite entry:

- inputs are made on the device with PyTorch; eggpu launches through ``ck.launch`` with the
  tensors (no copies) and Triton through its usual ``kernel[grid](...)`` launch (which applies
  its alignment/value specialization); both use ``num_warps=4``, FP contraction off;
- outputs of both are checked against a PyTorch float32 reference;
- timing: ``warmup`` launches, then ``reps`` (>= 50) launches each bracketed by CUDA events, the
  L2 cache flushed (a 256 MiB buffer zeroed) before each, the GPU queue pre-loaded with a spin
  kernel so host launch overhead does not show in the events; the median is reported together
  with the host time per launch call;
- achieved bandwidth (compulsory bytes / median time) against the device's measured copy
  bandwidth (a 1 GiB device-to-device copy, read + write bytes), and TFLOP/s for matmul
  (f16 and bf16: eggpu's tensor-core path on sm_80+; f32: exact on both sides, Triton with
  ``input_precision="ieee"``); each matmul row records eggpu's ``ck.report["dot"]`` (the
  strategy and why) as ``eggpu_dot``;
- on an sm_90 device, when the suite includes a matmul: the opt-in ``wgmma`` dot beside
  ``mma_sync`` and Triton at two tile configurations (:mod:`bench.gpu_wgmma`), as ``"wgmma"``;
- with the whole suite, the naive (Inductor-style) kernels with eggpu's optimizer off and on
  beside Triton (:mod:`bench.gpu_naive`), as ``"naive"``;
- for the row kernels, two more eggpu builds timed the same way (``"eggpu_variants"``), the
  decisions issue #10 left to a GPU: ``nounroll`` is the same PTX with ``.pragma "nounroll"`` on
  its loops (what ``PtxOptions(ptxas_unroll=False)`` emits, :func:`eggpu.codegen.ptx_loops.no_unroll`:
  fewer static SASS instructions on sm_90, fewer loads in flight), ``fast_math`` is
  ``fast_math=True`` (``div.full.f32`` and ``ex2.approx``, Triton's own precision: the share of
  the time gap that the IEEE division and libdevice ``expf`` cost). Each carries its time over
  the default build's (``over_default``) and over Triton's (``over_triton``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from .suite import SUITE, Entry, consts_for

FLUSH_BYTES = 256 << 20
EPS = 1e-5
VARIANTS = ("nounroll", "fast_math")
"""The extra eggpu builds timed for the row kernels (see the module docs)."""
VARIANT_OPTIONS = {"nounroll": {}, "fast_math": {"fast_math": True}}
"""The compile options of each variant (``nounroll`` rewrites the default build's PTX)."""


def gpu_available() -> tuple[bool, str]:
    """(True, device name) or (False, why not)."""
    try:
        import torch
    except ImportError:
        return False, "PyTorch is not installed (the GPU benchmark uses it for device buffers and events)"
    if not torch.cuda.is_available():
        return False, "no CUDA device is visible (torch.cuda.is_available() is False)"
    return True, torch.cuda.get_device_name(0)


def prepare(directory: str, target: str = "sm_90", entries: list[Entry] | None = None, naive: bool = True) -> None:
    """Compile every suite entry with eggpu into the cache ``directory`` (for a GPU machine that
    lacks egglog/z3: its compiles are then cache hits); ``naive``: the naive suite's too."""
    os.environ["EGGPU_CACHE_DIR"] = directory
    import eggpu
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    for e in entries or SUITE:
        for options in [{}] + [VARIANT_OPTIONS[v] for v in VARIANTS if e.family == "rows" and VARIANT_OPTIONS[v]]:
            ck = eggpu.compile(get(e.kernel).kernel(parse_dtype(e.dtype), consts_for(e)), target=target,
                               cache=directory, **options)
            print(f"prepared {e.key} {options or ''}: {ck.report.get('cache')} -> {ck.cache_path}")
    if target == "sm_90" and any(e.family == "matmul" for e in entries or SUITE):
        from . import gpu_wgmma

        gpu_wgmma.prepare(directory)
    if naive:
        from . import gpu_naive

        gpu_naive.prepare(directory, target)
    from .prepared_cache import record

    record(directory)


# --------------------------------------------------------------------------- timing


def _time_gpu(fn, reps: int, warmup: int, flush) -> tuple[list[float], float]:
    """Per-launch GPU times (ms) from CUDA events, and the host time per call (ms)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(warmup):
        fn()
    host_ms = (time.perf_counter() - t) * 1e3 / max(warmup, 1)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda._sleep(int(2e8))  # ~0.1 s of spinning: launches below queue up behind it
    for i in range(reps):
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)], host_ms


def copy_bandwidth(reps: int = 30) -> dict[str, Any]:
    """Device-to-device copy of 1 GiB; bandwidth counts bytes read + written."""
    import torch

    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    src.fill_(1)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    times, _ = _time_gpu(lambda: dst.copy_(src), reps, 5, flush)
    med = statistics.median(times)
    return {"bytes": 2 * n, "median_ms": med, "gbps": 2 * n / (med * 1e-3) / 1e9}


# --------------------------------------------------------------------------- problems


def _problem(e: Entry, torch: Any) -> dict[str, Any]:
    """Device tensors, launch arguments and the reference for entry ``e`` at its GPU size."""
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[e.dtype]
    g = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32).to(dt)

    if e.kernel == "vector_add":
        n = e.shape[0]
        x, y, out = randn(n), randn(n), torch.empty(n, device="cuda", dtype=dt)
        return {"args": [x, y, out, n], "scalars": {3: "i32"}, "grid": (-(-n // 1024),), "outputs": [out],
                "ref": lambda: [x + y]}
    if e.kernel == "gelu_forward":
        n = e.shape[0]
        x, y = randn(n), torch.empty(n, device="cuda", dtype=dt)
        return {"args": [x, y, n], "scalars": {2: "i32"}, "grid": (-(-n // 1024),), "outputs": [y],
                "ref": lambda: [torch.nn.functional.gelu(x.float()).to(dt)]}
    if e.family == "rows":
        rows, cols = e.shape
        x = randn(rows, cols)
        if e.kernel == "softmax_forward":
            y = torch.empty_like(x)
            return {"args": [x, y, cols, cols], "scalars": {2: "i32", 3: "i32"}, "grid": (rows,), "outputs": [y],
                    "ref": lambda: [torch.softmax(x.float(), dim=1).to(dt)]}
        if e.kernel == "layer_norm_forward":
            y, w, b = torch.empty_like(x), randn(cols), randn(cols)
            mean = torch.empty(rows, device="cuda", dtype=torch.float32)
            rstd = torch.empty_like(mean)

            def ref():
                xf = x.float()
                m = xf.mean(dim=1)
                r = torch.rsqrt(xf.var(dim=1, unbiased=False) + EPS)
                return [((xf - m[:, None]) * r[:, None] * w.float() + b.float()).to(dt), m, r]
            return {"args": [x, y, w, b, mean, rstd, cols, cols, EPS], "scalars": {6: "i32", 7: "i32", 8: "f32"},
                    "grid": (rows,), "outputs": [y, mean, rstd], "ref": ref}
        if e.kernel == "rms_norm_forward":
            y, w = torch.empty_like(x), randn(cols)

            def ref():
                xf = x.float()
                return [(xf * torch.rsqrt((xf * xf).mean(dim=1, keepdim=True) + EPS) * w.float()).to(dt)]
            return {"args": [x, y, w, cols, cols, EPS], "scalars": {3: "i32", 4: "i32", 5: "f32"}, "grid": (rows,),
                    "outputs": [y], "ref": ref}
        if e.kernel == "cross_entropy_forward":
            t = torch.randint(0, cols, (rows,), generator=g, device="cuda", dtype=torch.int32)
            loss = torch.empty(rows, device="cuda", dtype=torch.float32)
            return {"args": [x, t, loss, cols, cols], "scalars": {3: "i32", 4: "i32"}, "grid": (rows,),
                    "outputs": [loss],
                    "ref": lambda: [torch.nn.functional.cross_entropy(x.float(), t.long(), reduction="none")]}
        if e.kernel == "row_argmax":
            out = torch.empty(rows, device="cuda", dtype=torch.int32)
            return {"args": [x, out, cols, cols], "scalars": {2: "i32", 3: "i32"}, "grid": (rows,), "outputs": [out],
                    "ref": lambda: [x.float().argmax(dim=1).to(torch.int32)]}
    if e.kernel == "matmul":
        m, n, k = e.shape
        a, b, c = randn(m, k), randn(k, n), torch.empty(m, n, device="cuda", dtype=dt)
        return {"args": [a, b, c, m, n, k, k, 1, n, 1, n, 1], "scalars": {i: "i32" for i in range(3, 12)},
                "grid": (-(-m // 32), -(-n // 32)), "outputs": [c],
                "ref": lambda: [(a.float() @ b.float()).to(dt)]}
    raise ValueError(f"no GPU problem for {e.key}")


def _max_err(got: list[Any], want: list[Any]) -> float:
    err = 0.0
    for g_, w in zip(got, want):
        if g_.dtype.is_floating_point:
            err = max(err, float((g_.float() - w.float()).abs().max()))
        else:
            err = max(err, float((g_ != w).sum()))  # mismatching indices
    return err


def _eggpu_args(p: dict[str, Any]) -> list[Any]:
    import numpy as np

    out = []
    for i, a in enumerate(p["args"]):
        kind = p["scalars"].get(i)
        out.append(np.int32(a) if kind == "i32" else np.float32(a) if kind == "f32" else a)
    return out


def run(entries: list[Entry] | None = None, reps: int = 100, warmup: int = 10, target: str | None = None,
        progress=print, naive: bool = True) -> dict[str, Any]:
    """The GPU part of the benchmark; ``{"skipped": reason}`` without a GPU."""
    ok, name = gpu_available()
    if not ok:
        progress(f"  gpu: skipped: {name}")
        return {"skipped": name}
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")
    import torch
    import triton

    import eggpu
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    from .prepared_cache import adopt

    adopt()  # artefacts compiled elsewhere (this machine may lack egglog/z3)
    from . import triton_kernels as tk

    reps = max(reps, 50)
    cap = torch.cuda.get_device_capability(0)
    target = target or f"sm_{cap[0]}{cap[1]}"
    props = torch.cuda.get_device_properties(0)
    out: dict[str, Any] = {
        "device": name, "capability": list(cap), "target": target, "sms": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1), "torch": torch.__version__, "triton": triton.__version__,
        "reps": reps, "warmup": warmup, "copy": copy_bandwidth(),
    }
    progress(f"  gpu {name}: copy bandwidth {out['copy']['gbps']:.0f} GB/s")
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    results: dict[str, Any] = {}
    for e in entries or list(SUITE):
        row: dict[str, Any] = {"shape": list(e.shape), "bytes": e.bytes_moved(), "flops": e.flops()}
        try:
            p = _problem(e, torch)
            consts = consts_for(e)
            want = p["ref"]()
            # eggpu
            try:
                ck = eggpu.compile(get(e.kernel).kernel(parse_dtype(e.dtype), consts), target=target)
                if ck.report.get("dot"):  # which dot path was measured (tensor cores or CUDA cores) and why
                    row["eggpu_dot"] = ck.report["dot"]
                eargs = _eggpu_args(p)

                def launch_eggpu(ck=ck, eargs=eargs, grid=p["grid"]):
                    ck.launch(grid, *eargs, synchronize=False)
                launch_eggpu()
                torch.cuda.synchronize()
                row["eggpu_max_err"] = _max_err(p["outputs"], want)
                times, host = _time_gpu(launch_eggpu, reps, warmup, flush)
                row["eggpu"] = _timing(times, host, e)
            except Exception as exc:  # noqa: BLE001
                row["eggpu"] = {"error": f"{type(exc).__name__}: {exc}"}
            if e.family == "rows":
                row["eggpu_variants"] = _variants(e, p, want, target, reps, warmup, flush)
            # Triton
            try:
                spec = tk.SPECS[e.kernel]
                kw = dict(zip(spec.constexpr_names, consts)) | tk.extra_constexprs(e.kernel, e.dtype)
                fn = spec.fn
                grid = p["grid"]

                def launch_triton(fn=fn, args=p["args"], kw=kw, grid=grid):
                    fn[grid](*args, **kw, num_warps=4, enable_fp_fusion=False)
                for o in p["outputs"]:
                    o.zero_()
                launch_triton()
                torch.cuda.synchronize()
                row["triton_max_err"] = _max_err(p["outputs"], want)
                times, host = _time_gpu(launch_triton, reps, warmup, flush)
                row["triton"] = _timing(times, host, e)
            except Exception as exc:  # noqa: BLE001
                row["triton"] = {"error": f"{type(exc).__name__}: {exc}"}
            for tool in ("eggpu", "triton"):
                r = row.get(tool, {})
                if "gbps" in r:
                    r["fraction_of_copy"] = r["gbps"] / out["copy"]["gbps"]
            if "median_ms" in row.get("eggpu", {}) and "median_ms" in row.get("triton", {}):
                row["eggpu_over_triton_time"] = row["eggpu"]["median_ms"] / row["triton"]["median_ms"]
            _variant_ratios(row)
            del p
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"{type(exc).__name__}: {exc}"
        results[e.key] = row
        progress(f"  gpu {e.key}: " + ", ".join(
            f"{t} {row[t]['median_ms']:.3f} ms" if "median_ms" in row.get(t, {}) else f"{t} ERROR"
            for t in ("eggpu", "triton")))
        torch.cuda.empty_cache()
    out["kernels"] = results
    if any(e.family == "matmul" for e in entries or SUITE):
        from . import gpu_wgmma

        try:
            out["wgmma"] = gpu_wgmma.run(torch, _time_gpu, flush, reps, warmup, progress)
        except Exception as exc:  # noqa: BLE001 - keep the suite's results
            out["wgmma"] = {"error": f"{type(exc).__name__}: {exc}"}
    if naive:
        from . import gpu_naive

        try:
            out["naive"] = gpu_naive.run(torch, _time_gpu, flush, reps, warmup, target, progress)
        except Exception as exc:  # noqa: BLE001 - keep the suite's results
            out["naive"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def variant_kernel(ck: Any, variant: str) -> Any:
    """The compiled kernel of ``variant`` made from ``ck`` (compiled with the variant's options):
    ``nounroll`` swaps in the same PTX with its loops marked ``nounroll`` (a new launch plan)."""
    if variant == "nounroll":
        from eggpu.codegen.ptx_loops import no_unroll

        return ck._replace(ptx=no_unroll(ck.ptx), _plan=None)
    return ck


def _variants(e: Entry, p: dict[str, Any], want: list[Any], target: str, reps: int, warmup: int,
              flush: Any) -> dict[str, Any]:
    """Each of :data:`VARIANTS` of entry ``e`` (a row kernel): max error and timing."""
    import torch

    import eggpu
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    out: dict[str, Any] = {}
    for v in VARIANTS:
        try:
            ck = eggpu.compile(get(e.kernel).kernel(parse_dtype(e.dtype), consts_for(e)), target=target,
                               **VARIANT_OPTIONS[v])
            ck = variant_kernel(ck, v)
            eargs = _eggpu_args(p)
            for o in p["outputs"]:
                o.zero_()

            def launch(ck=ck, eargs=eargs, grid=p["grid"]):
                ck.launch(grid, *eargs, synchronize=False)
            launch()
            torch.cuda.synchronize()
            times, host = _time_gpu(launch, reps, warmup, flush)
            out[v] = _timing(times, host, e) | {"max_err": _max_err(p["outputs"], want)}
        except Exception as exc:  # noqa: BLE001 - keep the other variants and the suite
            out[v] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def _variant_ratios(row: dict[str, Any]) -> None:
    """Each timed variant's median over the default build's and over Triton's."""
    for r in row.get("eggpu_variants", {}).values():
        for key, ref in (("over_default", row.get("eggpu", {})), ("over_triton", row.get("triton", {}))):
            if "median_ms" in r and "median_ms" in ref:
                r[key] = r["median_ms"] / ref["median_ms"]


def _timing(times: list[float], host_ms: float, e: Entry) -> dict[str, Any]:
    med = statistics.median(times)
    r = {"median_ms": med, "min_ms": min(times), "max_ms": max(times), "n": len(times), "host_ms_per_call": host_ms,
         "gbps": e.bytes_moved() / (med * 1e-3) / 1e9}
    if e.flops():
        r["tflops"] = e.flops() / (med * 1e-3) / 1e12
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepare", metavar="DIR", help="fill an eggpu cache in DIR for the suite and exit")
    ap.add_argument("--target", default=None, help="eggpu target (default: the device's, or sm_90 with --prepare)")
    ap.add_argument("--reps", type=int, default=100, help="timed launches per kernel (at least 50)")
    ap.add_argument("--kernels", nargs="*", help="suite keys (default: all)")
    ap.add_argument("--out", default=None, help="write the JSON here (default: stdout)")
    a = ap.parse_args(argv)
    from .suite import select

    entries = select(a.kernels)
    naive = not a.kernels  # the naive suite (bench.gpu_naive) runs with the whole suite only
    if a.prepare:
        prepare(a.prepare, a.target or "sm_90", entries, naive=naive)
        return 0
    t = time.perf_counter()
    res = run(entries, a.reps, target=a.target, progress=lambda s: print(s, file=sys.stderr, flush=True),
              naive=naive)
    res["seconds"] = time.perf_counter() - t
    text = json.dumps(res, indent=1, default=str)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
