"""The ``tl.rand4x`` + ``tl.randn4x`` kernel as one dual source file (:mod:`bench.dual`).

Executed with ``BACKEND = "eggpu"`` it is the kernel whose translation validation
:mod:`bench.validation_cost` times (and the tests in ``tests/optimizer/test_validate_canon.py``
and ``tests/triton_compat/test_tc_random.py`` use); with ``BACKEND = "triton"`` the same text is
Triton's twin, compiled beside it. Load it with :func:`load`.
"""

# ruff: noqa: F821 - BACKEND is injected by bench.dual.load

if BACKEND == "triton":  # pragma: no cover - depends on the loader
    import triton as jitlib
    import triton.language as tl
else:
    import eggpu as jitlib
    import eggpu.language as tl


@jitlib.jit
def uniform4(out_ptr, seed, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b, c, d = tl.rand4x(seed, offs)
    e, f, g, h = tl.randn4x(seed, offs)
    tl.store(out_ptr + offs, a + b + c + d)
    tl.store(out_ptr + N + offs, e * f + g * h)
