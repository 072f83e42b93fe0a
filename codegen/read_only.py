"""Loads through const pointers on the GPU: the read-only data path (``ld.global.nc``).

A pointer of type ``ptr<T, const>`` (Triton's ``tl.pointer_type(T, const=True)`` or a parameter
annotated ``tl.const``) is only read through, so its loads may use the non-coherent read-only
cache, as Triton's const pointers do. The load lowering has several paths (LLVM loads, predicated
inline-asm loads, vector loads); rather than thread a flag through each, :func:`read_only` wraps
the whole lowering and marks what it emitted: LLVM loads from global memory get
``!invariant.load`` (NVPTX then selects ``ld.global.nc``) and the inline-asm loads get ``.nc``.
Host code (run_cpu) is unchanged: a plain load means the same there. As in Triton, the memory must
not be written while the kernel runs (the read-only cache is not kept coherent with stores).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir


def read_only(lower: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``lower`` (the ``load`` lowering) with its GPU loads through a const pointer made read-only."""

    def lower_load(lw, op):
        if lw.em.is_host or not op.operands[0].type.elem.const:
            return lower(lw, op)
        fn = lw.em.b.function
        before = {id(i) for blk in fn.blocks for i in blk.instructions}
        out = lower(lw, op)
        invariant = lw.em.module.add_metadata([])
        for blk in fn.blocks:
            for ins in blk.instructions:
                if id(ins) not in before:
                    _mark(ins, invariant)
        return out

    return lower_load


def _mark(ins: ir.Instruction, invariant: ir.MDValue) -> None:
    if isinstance(ins, ir.LoadInstr) and getattr(ins.operands[0].type, "addrspace", 0) == 1:
        ins.set_metadata("invariant.load", invariant)
    elif isinstance(ins, ir.CallInstr) and isinstance(ins.callee, ir.InlineAsm) and "ld.global." in ins.callee.asm:
        ins.callee.asm = ins.callee.asm.replace("ld.global.", "ld.global.nc.")  # this call's own InlineAsm


__all__ = ["read_only"]
