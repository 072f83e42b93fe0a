"""Helpers shared by the library's kernels (inlined into them by the frontend)."""

from __future__ import annotations

import eggpu
import eggpu.language as tl


@eggpu.jit
def compute_dtype(dtype):
    """The dtype a kernel computes in for data of ``dtype``: f64 for f64, else f32.

    Evaluated at compile time (``dtype`` is a dtype parameter such as ``D``): f16 and bf16 data
    are widened to f32 for arithmetic and accumulation and rounded once when stored, f64 keeps
    its precision.
    """
    return tl.f64 if dtype == tl.f64 else tl.f32
