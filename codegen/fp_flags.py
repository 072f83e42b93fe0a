"""Fast-math flags on float arithmetic, set through llvmlite's IRBuilder.

LLVM 22's NVPTX back end fuses ``fmul``+``fadd`` into ``fma.rn`` only when both instructions
carry the ``contract`` (or ``fast``) flag (see "Floating point" in :mod:`eggpu.codegen.ptx`).
Under ``fast_math`` the lowering builds every function of a PTX module with a
:class:`FlaggedBuilder`, which puts :data:`FAST_MATH_FLAGS` on each ``fadd``/``fsub``/``fmul``/
``fneg`` as it is created; without ``fast_math`` (and in host mode, whose CPU build is compared
bit for bit with the interpreter) it adds nothing, and NVPTX prints IEEE ``add.rn``/``mul.rn``.

Only ``contract``: ``afn``/``arcp`` would turn ``fdiv`` and ``llvm.sqrt`` into
``div.approx``/``sqrt.approx``; the fast division and exponential are chosen by the lowering
itself (``div.full.f32``, ``ex2.approx``).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

__all__ = ["FAST_MATH_FLAGS", "FlaggedBuilder", "fp_flags"]

FAST_MATH_FLAGS: tuple[str, ...] = ("contract",)


def fp_flags(fast_math: bool) -> tuple[str, ...]:
    """Fast-math flags the lowering puts on float arithmetic: ``("contract",)`` or ``()``."""
    return FAST_MATH_FLAGS if fast_math else ()


class FlaggedBuilder(ir.IRBuilder):
    """An ``IRBuilder`` that adds ``fp_flags`` to every ``fadd``/``fsub``/``fmul``/``fneg``.

    Flags a call passes itself come first and are kept; a default flag already present is not
    repeated, and none is added to an instruction that already says ``fast`` (which implies them
    all). With ``fp_flags=()`` it builds exactly what ``ir.IRBuilder`` builds.
    """

    def __init__(self, block: ir.Block | None = None, fp_flags: Sequence[str] = ()):
        super().__init__(block)
        self.fp_flags = tuple(fp_flags)

    def _with_defaults(self, flags: Sequence[str]) -> tuple[str, ...]:
        flags = tuple(flags)
        if "fast" in flags:
            return flags
        return flags + tuple(f for f in self.fp_flags if f not in flags)

    def fadd(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Instruction:
        return super().fadd(lhs, rhs, name, flags=self._with_defaults(flags))

    def fsub(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Instruction:
        return super().fsub(lhs, rhs, name, flags=self._with_defaults(flags))

    def fmul(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Instruction:
        return super().fmul(lhs, rhs, name, flags=self._with_defaults(flags))

    def fneg(self, arg: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Instruction:
        return super().fneg(arg, name, flags=self._with_defaults(flags))
