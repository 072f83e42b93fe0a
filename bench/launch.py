"""``python -m bench launch``: host time per kernel launch, eggpu vs Triton, without a GPU.

Both launch paths run up to the driver's launch call, in one process, in interleaved batches:

* eggpu's ``ck.launch(grid, *args)`` of a compiled kernel and ``add_kernel[grid](...)`` of the
  same kernel under ``@eggpu.jit`` (second call onwards), with :class:`eggpu.testing.FakeCudaDriver`
  behind :class:`eggpu.runtime.CudaRuntime` (its ``cuLaunchKernel`` counts the launch and returns);
  device buffers are fake CUDA tensors (``data_ptr()``, as PyTorch's) and, for ``ck.launch``,
  also fake CuPy arrays (``__cuda_array_interface__``);
* Triton's ``add_kernel[grid](...)`` (its ``JITFunction.run``, its Python ``CudaLauncher`` and its
  C launcher ``cuda_utils.launch``, all unchanged) against a stub ``libcuda.so.1`` built here with
  gcc, whose ``cuLaunchKernelEx`` counts the launch and returns. Triton's launcher calls
  ``data_ptr()`` on each tensor and ``cuPointerGetAttribute`` (stubbed) as it does on a GPU.
  Without gcc the Triton figure is skipped with the reason.

Also measured: eggpu's general path (``ck._launch_checked``, what every launch did before the
launch plan) and ``@eggpu.jit`` without its launch cache (``JITFunction._launch_general``).
``ck.launch`` is timed asynchronous (``synchronize=False``; Triton never synchronizes);
``@eggpu.jit`` launches are asynchronous, as Triton's (their stream is looked up from the
arguments as on a GPU: no PyTorch here, so the legacy default stream). Results: CPU µs per launch (median and minimum over batches), written to
``bench/results/launch.json`` with the ratios to Triton's median.

    python -m bench launch [--batches 15] [--per-batch 2000] [--out bench/results/launch.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
KERNELS = Path(__file__).resolve().parent / "launch_kernels.py"
N, BLOCK = 1 << 20, 1024
GRID = (N // BLOCK,)

STUB_LIBCUDA = r"""
#include <stddef.h>
#include <stdint.h>
typedef int CUresult;
long long stub_launches = 0;
CUresult cuInit(unsigned f) { return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuCtxGetCurrent(void **c) { *c = (void *)0x10; return 0; }
CUresult cuCtxSetCurrent(void *c) { return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuCtxGetLimit(size_t *v, int l) { *v = 0; return 0; }
CUresult cuCtxSetLimit(int l, size_t v) { return 0; }
CUresult cuDeviceGet(int *d, int o) { *d = o; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  *v = attr == 75 ? 9 : attr == 76 ? 0 : 232448; /* compute capability 9.0 */
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)0x10; return 0; }
CUresult cuFuncGetAttribute(int *v, int a, void *f) { *v = a == 0 ? 1024 : 0; return 0; }
CUresult cuFuncSetAttribute(void *f, int a, int v) { return 0; }
CUresult cuFuncSetCacheConfig(void *f, int c) { return 0; }
CUresult cuGetErrorString(int e, const char **s) { *s = "stub libcuda"; return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *n) { *f = (void *)0x20; return 0; }
CUresult cuModuleLoadData(void **m, const void *img) { *m = (void *)0x30; return 0; }
CUresult cuModuleUnload(void *m) { return 0; }
CUresult cuPointerGetAttribute(void *data, int attr, uint64_t ptr) { *(uint64_t *)data = ptr; return 0; }
CUresult cuStreamIsCapturing(void *s, int *st) { *st = 0; return 0; }
CUresult cuOccupancyMaxActiveClusters(int *n, void *f, const void *cfg) { *n = 1; return 0; }
CUresult cuTensorMapEncodeTiled(void) { return 0; }
CUresult cuTensorMapEncodeIm2col(void) { return 0; }
CUresult cuLaunchKernelEx(const void *cfg, void *f, void **params, void **extra) { stub_launches++; return 0; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) { stub_launches++; return 0; }
"""


# ------------------------------------------------------------------ fake device buffers


class FakeDtype:
    """A dtype object whose ``str`` is PyTorch's spelling (``torch.float32``)."""

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"

    __repr__ = __str__


class FakeCudaTensor:
    """A contiguous 1-D CUDA tensor as PyTorch presents one: ``data_ptr()``, ``dtype``, ``is_cuda``,
    ``is_contiguous()``, ``shape``, ``stride()`` (no memory behind it)."""

    def __init__(self, address: int, n: int, dtype: str = "float32", itemsize: int = 4):
        self._address, self.shape, self.dtype = address, (n,), FakeDtype(dtype)
        self.is_cuda, self.device, self._itemsize = True, "cuda:0", itemsize

    def data_ptr(self) -> int:
        return self._address

    def is_contiguous(self) -> bool:
        return True

    def stride(self) -> tuple[int, ...]:
        return (1,)

    def element_size(self) -> int:
        return self._itemsize


class FakeCupyArray:
    """A contiguous 1-D device array exposing ``__cuda_array_interface__`` (CuPy's protocol)."""

    def __init__(self, address: int, n: int, typestr: str = "<f4"):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (address, False),
                                         "strides": None, "version": 3}


def _buffers(cls: type) -> list[Any]:
    return [cls(base, N) for base in (1 << 32, 2 << 32, 3 << 32)]


# ------------------------------------------------------------------ timing


def _batches(calls: dict[str, Any], batches: int, per_batch: int) -> dict[str, dict[str, float]]:
    """µs per call of each callable: ``batches`` interleaved batches of ``per_batch`` calls each,
    timed in process CPU time (``time.process_time``: every path here is single-threaded host
    work, and on a shared machine wall time would count other processes' turns)."""
    times: dict[str, list[float]] = {k: [] for k in calls}
    for fn in calls.values():  # warm up (first launch builds plans, loads the module)
        for _ in range(50):
            fn()
    for _ in range(batches):
        for key, fn in calls.items():
            t0 = time.process_time()
            for _ in range(per_batch):
                fn()
            times[key].append((time.process_time() - t0) / per_batch * 1e6)
    return {k: {"median_us": round(statistics.median(v), 3), "min_us": round(min(v), 3)} for k, v in times.items()}


def _eggpu_calls(cache_dir: str) -> dict[str, Any]:
    """The eggpu launches to time (a FakeCudaDriver must be installed)."""
    import eggpu
    from bench import dual

    mod = dual.load(KERNELS, "eggpu", "launch_kernels")
    jit = mod.add_kernel
    torch_args = _buffers(FakeCudaTensor)
    cupy_args = _buffers(FakeCupyArray)
    kernel = jit.specialize(*torch_args, N, BLOCK=BLOCK)
    ck = eggpu.compile(kernel, cache=cache_dir, specialize={"x_ptr": "align16", "y_ptr": "align16",
                                                            "out_ptr": "align16", "n": "div16"})
    os.environ["EGGPU_JIT_DEVICE"] = "gpu"
    jit[GRID](*torch_args, N, BLOCK=BLOCK)  # compiles (the disk cache) once
    return {
        "eggpu_ck_launch_torch": lambda: ck.launch(GRID, *torch_args, N, synchronize=False),
        "eggpu_ck_launch_cupy": lambda: ck.launch(GRID, *cupy_args, N, synchronize=False),
        "eggpu_ck_launch_general": lambda: ck._launch_checked(GRID, (*torch_args, N), False),
        "eggpu_jit": lambda: jit[GRID](*torch_args, N, BLOCK=BLOCK),
        "eggpu_jit_general": lambda: jit._launch_general(GRID, (*torch_args, N), {"BLOCK": BLOCK}),
    }


def _triton_calls() -> dict[str, Any]:
    """Triton's launch of the same kernel (the stub libcuda must be on LD_LIBRARY_PATH)."""
    import triton
    from triton.backends.nvidia.driver import CudaDriver

    from bench import dual

    triton.runtime.driver.set_active(CudaDriver())
    mod = dual.load(KERNELS, "triton", "launch_kernels")
    args = _buffers(FakeCudaTensor)
    mod.add_kernel[GRID](*args, N, BLOCK=BLOCK, num_warps=4)  # compiles once
    return {"triton_jit": lambda: mod.add_kernel[GRID](*args, N, BLOCK=BLOCK, num_warps=4)}


def _build_stub(directory: Path) -> str | None:
    """Build the stub libcuda.so.1 (and its libcuda.so link) in ``directory``; the reason when it cannot."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        return "no C compiler (gcc) to build the stub libcuda"
    src = directory / "stub_libcuda.c"
    src.write_text(STUB_LIBCUDA)
    lib = directory / "libcuda.so.1"
    r = subprocess.run([gcc, "-O2", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(lib), str(src)],
                       capture_output=True, text=True)
    if r.returncode:
        return f"building the stub libcuda failed: {r.stderr.strip()[:300]}"
    (directory / "libcuda.so").symlink_to(lib.name)
    return None


def worker(a: argparse.Namespace) -> int:
    """Runs in a child process whose loader sees the stub libcuda: times everything, prints JSON."""
    from eggpu.testing import FakeCudaDriver, fake_cuda

    out: dict[str, Any] = {}
    with fake_cuda(FakeCudaDriver(record=False)) as cu:
        calls = _eggpu_calls(a.cache_dir)
        if a.triton:
            try:
                calls.update(_triton_calls())
            except Exception as e:  # noqa: BLE001 - reported, not hidden
                out["triton_skipped"] = f"{type(e).__name__}: {e}"[:400]
        out["timings"] = _batches(calls, a.batches, a.per_batch)
        out["fake_driver_launches"] = cu.launch_count
        if "triton_jit" in calls:  # Triton's launches reached the (stub) driver's cuLaunchKernelEx
            import ctypes

            out["triton_stub_launches"] = ctypes.c_longlong.in_dll(ctypes.CDLL("libcuda.so.1"), "stub_launches").value
    print(json.dumps(out))
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench launch", description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--per-batch", type=int, default=2000)
    ap.add_argument("--out", default="bench/results/launch.json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    ap.add_argument("--triton", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a)
    with tempfile.TemporaryDirectory(prefix="eggpu-bench-launch-") as tmp:
        stub = Path(tmp) / "stub"
        stub.mkdir()
        reason = _build_stub(stub)
        env = dict(os.environ, EGGPU_CACHE_DIR=str(Path(tmp) / "eggpu"), TRITON_CACHE_DIR=str(Path(tmp) / "triton"),
                   TRITON_HOME=str(Path(tmp) / "triton-home"))
        if reason is None:
            env["LD_LIBRARY_PATH"] = f"{stub}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
            env["TRITON_LIBCUDA_PATH"] = str(stub)
        cmd = [sys.executable, "-m", "bench", "launch", "--worker", "--cache-dir", str(Path(tmp) / "eggpu"),
               "--batches", str(a.batches), "--per-batch", str(a.per_batch)] + (["--triton"] if reason is None else [])
        r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if r.returncode:
            print(r.stderr[-3000:], file=sys.stderr)
            return r.returncode
        res = json.loads(r.stdout.strip().splitlines()[-1])
    if reason is not None:
        res["triton_skipped"] = reason
    t = res["timings"]
    ratios = {}
    if "triton_jit" in t:
        tri = t["triton_jit"]["median_us"]
        ratios = {k: round(v["median_us"] / tri, 3) for k, v in t.items() if k != "triton_jit"}
        res["ratio_to_triton"] = ratios
    res["meta"] = {"command": " ".join(["python -m bench launch", *argv]), "python": platform.python_version(),
                   "machine": platform.machine(), "cpus": os.cpu_count(), "kernel": "add_kernel (bench/launch_kernels.py)",
                   "grid": list(GRID), "n": N, "BLOCK": BLOCK, "batches": a.batches, "per_batch": a.per_batch,
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = Path(a.out) if Path(a.out).is_absolute() else REPO / a.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    for k, v in t.items():
        extra = f"  ({ratios[k]:.2f}x Triton)" if k in ratios else ""
        print(f"{k:28s} {v['median_us']:8.2f} us/launch{extra}")
    if "triton_skipped" in res:
        print(f"triton: skipped ({res['triton_skipped']})")
    print(f"wrote {out}")
    return 0
