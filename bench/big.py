"""``python -m bench.big``: cold compile time of large kernels, eggpu per stage vs Triton.

    python -m bench.big                 # every entry, 1 repetition; JSON to bench/results/big.json
    python -m bench.big --reps 3 --entries tutorial_matmul_32 masked_131072

Each measurement runs in a fresh process (``python -m bench.big worker TOOL KEY``): eggpu with
``cache=False`` (the rule-proof cache is used as it is; proving rules is a one-time cost measured
by ``python -m bench``), Triton with an empty ``TRITON_CACHE_DIR``. Both compile for sm_90 with
``num_warps=4`` and run ptxas (Triton to make its cubin; eggpu to check the PTX and report
registers). Reported: the in-process compile time (``compile_ms``, imports excluded), eggpu's
per-stage times (``ck.report["times_ms"]``) and optimizer stages (validation verdict, fallback),
or the compile error when eggpu refuses a kernel. Numbers are measured and printed, never asserted.
The kernels are in :mod:`bench.big_kernels`, one text compiled by both (Triton tutorial 03's
matmul, the library's cross-entropy at BLOCK 32768, a masked elementwise kernel at 32768 and
131072 lanes, the fused-attention forward and backward shapes at 64x64).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MARK = "BIG_RESULT "
TARGET_SM = 90
NUM_WARPS = 4

# key -> (kernel, {param: value or triton signature}, constexprs)
_MATMUL = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
           "stride_cm": "i32", "stride_cn": "i32"}
_MASKED = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
_ATTN = {**{p: "*fp32" for p in ("Q", "K", "V", "DO", "M", "D", "DK", "DV")}, "N_CTX": "i32"}
_ATTN_FWD = {**{p: "*fp32" for p in ("Q", "K", "V", "Out")}, "N_CTX": "i32", "sm_scale": "fp32"}
_XENT = {"logits_ptr": "*fp32", "targets_ptr": "*i32", "loss_ptr": "*fp32", "n_cols": "i32", "row_stride": "i32"}
ENTRIES: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {
    "tutorial_matmul_32": ("tutorial_matmul", _MATMUL,
                           {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}),
    "tutorial_matmul_64": ("tutorial_matmul", _MATMUL,
                           {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}),
    "cross_entropy_32768": ("cross_entropy_forward", _XENT, {"BLOCK_SIZE": 32768}),
    "masked_32768": ("masked_scale", _MASKED, {"BLOCK": 32768}),
    "masked_131072": ("masked_scale", _MASKED, {"BLOCK": 131072}),
    "attn_fwd_64": ("attn_fwd", _ATTN_FWD, {"BLOCK": 64, "HEAD": 64}),
    "attn_bwd_64": ("attn_bwd", _ATTN, {"BLOCK": 64, "HEAD": 64}),
}

_NP = {"*fp16": "float16", "*fp32": "float32", "*i32": "int32"}


def _eggpu_instance(key: str):
    import numpy as np

    kernel, sig, consts = ENTRIES[key]
    if kernel == "cross_entropy_forward":
        from eggpu.ir.dtypes import f32
        from eggpu.kernels import get

        return get(kernel).kernel(f32, (consts["BLOCK_SIZE"],))
    args = [np.zeros(16, _NP[t]) if t.startswith("*") else 1024 if t == "i32" else 0.125 for t in sig.values()]
    return getattr(kernels("eggpu"), kernel).specialize(*args, **consts)


def kernels(backend: str):
    """:mod:`bench.big_kernels` executed for ``backend`` (``"eggpu"`` or ``"triton"``)."""
    from . import dual

    return dual.load(Path(__file__).with_name("big_kernels.py"), backend, "_big")


def worker(tool: str, key: str) -> dict[str, Any]:
    """One cold compile of ``key`` by ``tool`` in this (fresh) process."""
    if tool == "eggpu":
        import eggpu
        from eggpu.ir.errors import EggpuError

        inst = _eggpu_instance(key)
        t = time.perf_counter()
        try:
            ck = eggpu.compile(inst, target=f"sm_{TARGET_SM}", num_warps=NUM_WARPS, cache=False)
        except EggpuError as e:
            return {"error": f"{type(e).__name__}: {e}", "compile_ms": (time.perf_counter() - t) * 1e3}
        dt = (time.perf_counter() - t) * 1e3
        opt = ck.report.get("optimizer") or {}
        return {"compile_ms": dt, "stages_ms": ck.report.get("times_ms", {}),
                "optimizer_ms": opt.get("times_ms", {}), "validation": opt.get("validation"),
                "fell_back": opt.get("fell_back"), "fallback_reason": opt.get("fallback_reason"),
                "registers": (ck.report.get("ptxas") or {}).get("registers"),
                "shared_bytes": ck.shared_bytes}
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel, sig, consts = ENTRIES[key]
    if kernel == "cross_entropy_forward":
        from . import triton_kernels as mod
    else:
        mod = kernels("triton")
    src = ASTSource(fn=getattr(mod, kernel), signature={**sig, **{k: "constexpr" for k in consts}},
                    constexprs=consts)
    t = time.perf_counter()
    triton.compile(src, target=GPUTarget("cuda", TARGET_SM, 32), options={"num_warps": NUM_WARPS})
    return {"compile_ms": (time.perf_counter() - t) * 1e3}


def _run(tool: str, key: str) -> dict[str, Any]:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="bench-big-") as tmp:
        env["TRITON_CACHE_DIR"] = tmp
        proc = subprocess.run([sys.executable, "-m", "bench.big", "worker", tool, key], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        return {"error": f"worker exit {proc.returncode}: " + " | ".join(proc.stderr.strip().splitlines()[-3:])}
    return json.loads(lines[-1][len(MARK):])


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main(argv: list[str]) -> int:
    if argv[:1] == ["worker"]:
        sys.stdout.write(MARK + json.dumps(worker(argv[1], argv[2]), default=str) + "\n")
        return 0
    ap = argparse.ArgumentParser(prog="python -m bench.big", description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--entries", nargs="*", choices=sorted(ENTRIES), default=list(ENTRIES))
    ap.add_argument("--tools", nargs="*", choices=("eggpu", "triton"), default=["eggpu", "triton"])
    ap.add_argument("--out", default=str(REPO / "bench/results/big.json"))
    a = ap.parse_args(argv)
    results: dict[str, Any] = {}
    for key in a.entries:
        row: dict[str, Any] = {}
        for tool in a.tools:
            runs = [_run(tool, key) for _ in range(a.reps)]
            ok = [r for r in runs if "error" not in r]
            best = dict(ok[len(ok) // 2] if ok else runs[0])
            if ok:
                best["compile_ms"] = _median([r["compile_ms"] for r in ok])
            row[tool] = best
        results[key] = row
        e, t = row.get("eggpu", {}), row.get("triton", {})
        ratio = (f"{e['compile_ms'] / t['compile_ms']:.1f}x" if "error" not in e and "error" not in t
                 and "compile_ms" in e and "compile_ms" in t else "-")
        stages = " ".join(f"{k}={v:.0f}" for k, v in e.get("stages_ms", {}).items())
        print(f"{key:22s} eggpu {e.get('compile_ms', 0):8.0f} ms [{stages}] {e.get('validation')}"
              f"{' FELL BACK' if e.get('fell_back') else ''}{' ' + e['error'][:100] if 'error' in e else ''}"
              f" | triton {t.get('compile_ms', 0):7.0f} ms | ratio {ratio}", flush=True)
    meta = {"reps": a.reps, "target": f"sm_{TARGET_SM}", "num_warps": NUM_WARPS,
            "cpu_count": os.cpu_count(), "load_avg": os.getloadavg()}
    Path(a.out).write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
