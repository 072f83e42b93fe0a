"""f64 ``fma`` with infinite, NaN and overflowing operands: interpreter == run_cpu == IEEE 754.

Regression (issue 9, item 9): the interpreter computed ``x * y + z`` in floats as soon as one
operand was not finite, so ``fma(1e300, 1.7e308, -inf)`` gave NaN; IEEE (and ``llvm.fma`` on
the host and the GPU) gives -inf: the exact product is finite.
"""

from __future__ import annotations

import itertools

import numpy as np

from eggpu.ir import Builder, f64, i32, pointer, scalar

from .conftest import masked_lanes, run_compare

inf, nan = float("inf"), float("nan")
EDGES = (0.0, -0.0, 1.0, -2.0, 1e300, -1e300, 1.7e308, 5e-324, inf, -inf, nan)


def fma_kernel(block: int):
    b = Builder("fma64", [("a", pointer(f64)), ("b", pointer(f64)), ("c", pointer(f64)), ("out", pointer(f64)),
                          ("n", scalar(i32))])
    mask, at = masked_lanes(b, block)

    x, y, z = (b.op("load", at(nm), mask) for nm in "abc")
    b.effect("store", at("out"), b.op("fma", x, y, z), mask)
    return b.finish()


def test_f64_fma_special_operands_interpreter_equals_run_cpu():
    a, b, c = (np.array(v, np.float64) for v in zip(*itertools.product(EDGES, repeat=3)))
    n = a.size
    out = run_compare(fma_kernel(256), (n + 255) // 256, [a, b, c, np.zeros(n), n])[3]  # bitwise, NaN == NaN
    want = {(1e300, 1.7e308, -inf): -inf, (-1e300, 1.7e308, inf): inf, (1e300, 1.7e308, inf): inf,
            (1.7e308, 1.7e308, -1e300): inf, (inf, 0.0, 1.0): nan, (inf, -2.0, inf): nan, (inf, -2.0, -inf): -inf,
            (5e-324, 5e-324, 1.0): 1.0, (1e300, -1e300, 1.0): -inf}
    for (x, y, z), w in want.items():
        k = int(np.flatnonzero((a == x) & (b == y) & (c == z))[0])
        assert (np.isnan(out[k]) and np.isnan(w)) or out[k] == w, (x, y, z, out[k])
