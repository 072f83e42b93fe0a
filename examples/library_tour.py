"""Run every kernel of the bundled library once with the interpreter and check it against numpy.

    python examples/library_tour.py [dtype]

``eggpu.kernels.LIBRARY`` is the fixture the test suites share: each entry builds a test case
(arguments, grid, constants), runs it, and compares with a float64 numpy reference at the
tolerance stated for the dtype.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from eggpu.ir.dtypes import parse_dtype
from eggpu.kernels import LIBRARY


def main(dtype_name: str = "f32") -> None:
    dtype = parse_dtype(dtype_name)
    print(f"{'kernel':24} {'dtype':5} {'size':>14} {'grid':>8}  {'ms':>6}  tolerance")
    for lk in LIBRARY:
        dt = dtype if dtype in lk.dtypes else lk.dtypes[-1]
        size = lk.sizes[0]
        case = lk.make_case(size, dt, np.random.default_rng(0))
        t0 = time.perf_counter()
        got = lk.interpret(case)
        ms = (time.perf_counter() - t0) * 1e3
        lk.check(case, got)  # raises AssertionError with the worst elements on a mismatch
        print(f"{lk.name:24} {str(dt):5} {str(size):>14} {str(case.grid):>8}  {ms:6.1f}  {lk.tolerance(dt)}")
    print(f"{len(LIBRARY)} kernels: ok")


if __name__ == "__main__":
    main(*sys.argv[1:2])
