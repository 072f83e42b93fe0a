"""Triton's twin of :func:`bench.validation_cost.uniform4` (``tl.rand4x`` + ``tl.randn4x``)."""

import triton
import triton.language as tl


@triton.jit
def uniform4(out_ptr, seed, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b, c, d = tl.rand4x(seed, offs)
    e, f, g, h = tl.randn4x(seed, offs)
    tl.store(out_ptr + offs, a + b + c + d)
    tl.store(out_ptr + N + offs, e * f + g * h)
