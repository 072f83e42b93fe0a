"""The kernel of ``python -m bench launch``, one text compiled by both eggpu and Triton (:mod:`bench.dual`)."""

# ruff: noqa: F821 - BACKEND is injected by bench.dual.load before this file runs

if BACKEND == "triton":  # pragma: no cover - depends on the loader
    import triton as jitlib
    import triton.language as tl
else:
    import eggpu as jitlib
    import eggpu.language as tl


@jitlib.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
