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


def _extern_stub(name: str, overloads: tuple, language_name: str) -> Any:
    """The stub of libdevice's ``name`` (a ``libdevice`` op), declared as the language's math rows
    are (language.py ``_math``: a generated def with Triton's parameters ``arg0, arg1, ...``, then
    ``@_builtin``); its docstring lists the overloads. The frontend dispatches on
    ``__eggpu_builtin__`` = ``"libdevice.<name>"`` (kernel_macro/libdevice_calls.py)."""
    from .language_base import _builtin

    params = ", ".join(f"arg{i}" for i in range(len(overloads[0][0])))
    ns: dict[str, Any] = {}
    exec(f"def {name}({params}):\n    pass\n", ns)  # noqa: S102 - a fixed template over the table's names
    fn = ns[name]
    sigs = "; ".join(f"({', '.join(a)}) -> {r} [{sym}]" for a, sym, r in overloads)
    fn.__doc__ = f"libdevice's ``{name}`` (Triton's extern_elementwise): {sigs}."
    fn.__module__ = f"{language_name}.extra.libdevice"
    declared = _builtin(fn, f"extra.cuda.libdevice.{name}")
    declared.__eggpu_builtin__ = f"libdevice.{name}"
    return declared


def extern_stubs(language_name: str) -> dict[str, Any]:
    """One stub per function of :data:`eggpu.ir.libdevice_table.FUNCTIONS`, by Triton name."""
    from eggpu.ir.libdevice_table import FUNCTIONS

    return {n: _extern_stub(n, ov, language_name) for n, ov in FUNCTIONS.items()}


class ExternStubs:
    """:func:`extern_stubs` as a read-only mapping made on first use: generating the ~140 stubs
    costs ~2 ms that a cache hit (which only imports the language) does not pay; the names come
    from the table without making them."""

    def __init__(self, language_name: str) -> None:
        self._language_name = language_name
        self._stubs: dict[str, Any] | None = None

    def _made(self) -> dict[str, Any]:
        if self._stubs is None:
            self._stubs = extern_stubs(self._language_name)
        return self._stubs

    def __getitem__(self, name: str) -> Any:
        return self._made()[name]

    def __contains__(self, name: object) -> bool:
        from eggpu.ir.libdevice_table import FUNCTIONS

        return name in FUNCTIONS

    def __iter__(self):  # noqa: ANN204 - an iterator of names
        from eggpu.ir.libdevice_table import FUNCTIONS

        return iter(FUNCTIONS)

    def __len__(self) -> int:
        from eggpu.ir.libdevice_table import FUNCTIONS

        return len(FUNCTIONS)

    def keys(self):  # noqa: ANN201 - the names, as a dict's keys
        from eggpu.ir.libdevice_table import FUNCTIONS

        return FUNCTIONS.keys()

    def values(self):  # noqa: ANN201 - the stubs (made now)
        return self._made().values()

    def items(self):  # noqa: ANN201 - (name, stub) pairs (made now)
        return self._made().items()


def build_namespaces(functions: dict[str, Any], language_name: str,
                     libdevice_fns: tuple[str, ...],
                     extern: ExternStubs | dict[str, Any] | None = None) -> tuple[_types.ModuleType, _types.ModuleType]:
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
    if extern is not None:  # the generic libdevice calls (ir/libdevice_table.py), made on first access

        def __getattr__(name: str) -> Any:
            if name in extern:
                return extern[name]
            raise AttributeError(f"module {libdevice.__name__!r} has no attribute {name!r}")

        libdevice.__getattr__ = __getattr__  # type: ignore[attr-defined]  # PEP 562
    libdevice.__all__ = [*libdevice_fns, *(extern or ())]  # type: ignore[attr-defined]
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


def get_int_dtype(bitwidth: int, signed: bool) -> Any:
    """Triton's ``tl.core.get_int_dtype``: the integer dtype of ``bitwidth`` bits (a compile-time
    call, e.g. to bitcast a float block to the same-width integer)."""
    from eggpu.ir.dtypes import BY_NAME

    name = f"{'i' if signed else 'u'}{bitwidth}" if bitwidth != 1 else "bool"
    if name not in BY_NAME:
        raise ValueError(f"there is no {'signed' if signed else 'unsigned'} integer dtype of {bitwidth} bits")
    return BY_NAME[name]


def _log2(i: int) -> int:
    """Triton's ``tl.standard._log2``: log2 of a power-of-two compile-time int (0 for 1)."""
    if not isinstance(i, int) or isinstance(i, bool) or i < 1 or i & (i - 1):
        raise ValueError(f"_log2 needs a positive power-of-two int, got {i!r}")
    return i.bit_length() - 1


get_int_dtype.__eggpu_fold__ = True  # type: ignore[attr-defined]  # called on compile-time values
_log2.__eggpu_fold__ = True  # type: ignore[attr-defined]


def internal_namespaces(functions: dict[str, Any], names: list[str],
                        language_name: str) -> tuple[_types.ModuleType, _types.ModuleType]:
    """``(core, standard)``: Triton's ``tl.core`` and ``tl.standard`` as kernels reach them (the
    bitonic argsort of Triton issue 3698, copied into many repositories, calls
    ``tl.core.get_int_dtype``, ``tl.core.CONSTEXPR_0`` and ``tl.standard._log2``): the language's
    names (the same objects as ``tl.*``) plus those internals."""
    out = []
    for sub, extra in (("core", {"get_int_dtype": get_int_dtype, "CONSTEXPR_0": 0}),
                       ("standard", {"_log2": _log2})):
        mod = _types.ModuleType(f"{language_name}.{sub}", f"Triton's ``tl.{sub}``: the language's names and "
                                f"{', '.join(extra)}.")
        for n in names:
            if n in functions:
                setattr(mod, n, functions[n])
        for n, v in extra.items():
            setattr(mod, n, v)
        mod.__all__ = [n for n in names if n in functions] + list(extra)  # type: ignore[attr-defined]
        out.append(mod)
    return out[0], out[1]
