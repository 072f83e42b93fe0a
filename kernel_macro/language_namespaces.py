"""Triton's sub-namespaces of the language: ``tl.math`` and the libdevice namespace
(``tl.extra.libdevice``, ``tl.extra.cuda.libdevice``, importable as modules), built from the
language functions eggpu has (the very same function objects as ``tl.*``)."""

from __future__ import annotations

import sys
import types as _types

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

MATH_NAMES = ("abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2",
              "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi")
"""The functions of Triton's ``triton.language.math`` that eggpu has (the same functions as ``tl.*``)."""


LIBDEVICE_EXACT = ("trunc", "rint", "nearbyint", "round", "isnan", "isinf", "finitef", "isfinited", "signbit",
                   "fmod", "copysign", "fdim", "popc", "clz", "ffs", "brev", "mulhi")
"""libdevice's exact functions that eggpu has beyond tl.math's: the roundings to integral (the op
table's trunc, rint, round; nearbyint is rint), the classifications, and fmod (the float ``rem``),
copysign and fdim (kernel_macro/compat.py), and the integer bit functions (the op table's popc, clz,
ffs, brev, mulhi)."""


def libdevice_names(transcendental: list[str]) -> tuple[str, ...]:
    """The functions of Triton's libdevice namespace that eggpu has: tl.math's, the op table's
    TRANSCENDENTAL ops that tl.math lacks (tanh, asin, ..., atan2) and :data:`LIBDEVICE_EXACT`."""
    return MATH_NAMES + tuple(n for n in transcendental if n not in MATH_NAMES) + LIBDEVICE_EXACT


def build_namespaces(functions: dict[str, Any], language_name: str,
                     libdevice_fns: tuple[str, ...]) -> tuple[_types.ModuleType, _types.ModuleType]:
    """``(math, extra)`` modules over ``functions`` (the language module's globals); registers
    ``eggpu.language.extra``, ``.extra.cuda``, ``.extra.libdevice`` and ``.extra.cuda.libdevice``
    in ``sys.modules`` so that ``from eggpu.language.extra.cuda import libdevice`` works."""
    math = _types.ModuleType(f"{language_name}.math", "Triton's ``tl.math``: the same functions as ``tl.*``.")
    for n in MATH_NAMES:
        setattr(math, n, functions[n])
    math.__all__ = list(MATH_NAMES)  # type: ignore[attr-defined]
    # Triton's libdevice namespace (libdevice on the GPU, libm on the host), registered as modules
    libdevice = _types.ModuleType("eggpu.language.extra.libdevice",
                                  "Triton's ``libdevice``: the libdevice functions eggpu has.")
    for n in libdevice_fns:  # a missing stub fails tests/test_op_coverage.py by name, not here
        if n in functions:
            setattr(libdevice, n, functions[n])
    libdevice.__all__ = list(libdevice_fns)  # type: ignore[attr-defined]
    cuda = _types.ModuleType("eggpu.language.extra.cuda", "Triton's ``tl.extra.cuda``: ``libdevice``.")
    cuda.libdevice = libdevice  # type: ignore[attr-defined]
    extra = _types.ModuleType("eggpu.language.extra",
                              "Triton's ``tl.extra``: ``libdevice`` and ``cuda.libdevice``.")
    extra.__path__ = []  # type: ignore[attr-defined]  # a package: `from eggpu.language.extra import libdevice`
    extra.libdevice = libdevice  # type: ignore[attr-defined]
    extra.cuda = cuda  # type: ignore[attr-defined]
    for m, name in ((extra, "eggpu.language.extra"), (cuda, "eggpu.language.extra.cuda"),
                    (libdevice, "eggpu.language.extra.libdevice"),
                    (libdevice, "eggpu.language.extra.cuda.libdevice")):
        sys.modules.setdefault(name, m)
    return math, extra
