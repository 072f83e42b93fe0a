"""Translation-validation cost per kernel: z3 units, solver calls and CPU time.

For every library kernel (:data:`eggpu.kernels.LIBRARY`, each dtype, its first case size) and a
Philox kernel (``tl.rand4x`` + ``tl.randn4x`` over 32 lanes), runs :func:`eggpu.optimizer.optimize`
once to warm the rule caches, then once measured, and prints per kernel the validation's
resource units and solver calls (deterministic), the validate stage's CPU milliseconds and the
whole optimizer's CPU milliseconds (``time.process_time``: the machine may be shared), plus the
full ``eggpu.compile`` CPU time of the Philox kernel (``cache=False``)::

    python -m bench.validation_cost [--json out.json] [--rand-only]

Triton has no translation validation, so the table has no Triton column; the Philox kernel's
whole compile is timed beside Triton's (the same text, :mod:`bench.rand_kernels`, sm_90, no GPU needed).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import eggpu
from bench import dual
from eggpu.kernels import LIBRARY
from eggpu.optimizer import optimize

RAND_SOURCE = Path(__file__).with_name("rand_kernels.py")


def rand_kernel(backend: str = "eggpu") -> Any:
    """The Philox kernel ``uniform4`` of the dual file :mod:`bench.rand_kernels` for ``backend``."""
    return dual.load(RAND_SOURCE, backend, "rand_kernels").uniform4


uniform4 = rand_kernel()


def _functions():
    yield "rand4x_randn4x", uniform4.specialize(np.zeros(64, np.float32), 99, N=32).ir()
    for lk in LIBRARY:
        for dt in lk.dtypes:
            case = lk.make_case(lk.sizes[0], dt, np.random.default_rng(0))
            yield f"{lk.name}[{dt}]", lk.instance(case).ir()


def measure() -> dict[str, Any]:
    import eggpu.optimizer as opt

    stage = opt._validate_stage
    spent = [0.0]

    def timed_stage(*args: Any, **kw: Any) -> Any:  # the validate stage's CPU time
        t = time.process_time()
        try:
            return stage(*args, **kw)
        finally:
            spent[0] += time.process_time() - t

    opt._validate_stage = timed_stage
    rows = []
    for name, fn in _functions():
        optimize(fn)  # warm: rule caches, z3 import
        spent[0] = 0.0
        t = time.process_time()
        res = optimize(fn)
        cpu = (time.process_time() - t) * 1e3
        v = res.validation
        rows.append({"kernel": name, "verdict": v.verdict if v else None, "units": v.units if v else 0,
                     "solver_calls": v.solver_calls if v else 0, "validate_cpu_ms": spent[0] * 1e3,
                     "optimize_cpu_ms": cpu})
    opt._validate_stage = stage
    return {"rows": rows, **compile_rand4x()}


def compile_rand4x() -> dict[str, float]:
    """CPU ms of a whole compile of the Philox kernel to PTX + cubin, eggpu (``cache=False``) and
    Triton (sm_90, an empty cache directory), each the second compile in this process."""
    import tempfile

    out = {}
    for _ in range(2):
        t = time.process_time()
        eggpu.compile(uniform4.specialize(np.zeros(64, np.float32), 99, N=32), cache=False)
        out["rand4x_compile_cpu_ms"] = (time.process_time() - t) * 1e3
    try:
        import os

        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        tri = rand_kernel("triton")
    except ImportError:
        return out
    for _ in range(2):
        with tempfile.TemporaryDirectory() as d:
            os.environ["TRITON_CACHE_DIR"] = d
            os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")  # as bench.compile_time
            src = ASTSource(fn=tri, signature={"out_ptr": "*fp32", "seed": "i32", "N": "constexpr"},
                            constexprs={"N": 32})
            t = time.process_time()
            triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
            out["rand4x_triton_compile_cpu_ms"] = (time.process_time() - t) * 1e3
    return out


def main(argv: list[str]) -> int:
    if "--rand-only" in argv:
        print(compile_rand4x())
        return 0
    out = measure()
    print(f"{'kernel':34} {'verdict':8} {'units':>10} {'calls':>5} {'validate CPU ms':>15} {'optimize CPU ms':>15}")
    for r in out["rows"]:
        print(f"{r['kernel']:34} {r['verdict']!s:8} {r['units']:>10} {r['solver_calls']:>5} "
              f"{r['validate_cpu_ms']:>15.1f} {r['optimize_cpu_ms']:>15.1f}")
    tot = sum(r["optimize_cpu_ms"] for r in out["rows"][1:])
    print(f"library total optimize CPU ms: {tot:.0f}; rand4x compile CPU ms: eggpu "
          f"{out['rand4x_compile_cpu_ms']:.0f}, Triton {out.get('rand4x_triton_compile_cpu_ms', float('nan')):.0f}")
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
