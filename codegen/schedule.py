"""Operands on demand: the order of each basic block before LLVM sees it.

The lowering emits an IR op over all of a thread's element slots before the next op (``x * c``
for the 8 elements, then ``erf`` of the 8 products, then ``1 + erf`` ...). Within one basic
block that order is harmless, since LLVM and ptxas schedule a block freely, but a libdevice call
such as ``__nv_erff`` becomes branches once it is inlined, and neither LLVM nor ptxas moves an
instruction into an earlier block. So gelu's tail ``0.5 * x * (1 + erf)`` ran after the last
``erf`` and all 8 ``erf`` results were live at once beside the 8 inputs (36 registers on sm_90,
Triton 31).

:func:`order_on_demand` reorders every block: instructions with an effect (loads, stores,
inline asm, barriers, shuffles, calls that are not pure math) keep their relative order, and a
pure instruction (arithmetic, comparison, select, cast, GEP, aggregate access, a call to a
libdevice ``__nv_*`` function or a pure LLVM math intrinsic) is placed when the first
instruction that needs it is placed, right before it, after its own operands (depth first, in
operand order). So each element's chain (``0.5 * x``, ``x * c``, ``erf``, ``1 + erf``, the
product) is computed just before the store that writes it, one element after the other, and
only the finished values stay live. Pure values used only in other blocks (or not at all) are
placed at the end of their block, before its terminator, in their original order; phis stay
first.

The block computes exactly the same values: every instruction keeps its operands (nothing is
reassociated or merged), only where it runs changes, and pure instructions have no effect that
could be reordered. ``ENABLED`` turns the pass off (benchmarks measure with and without).

This pairs with ``-instcombine-code-sinking=false`` (:class:`eggpu.codegen.ptx.PtxOptions`):
instcombine would otherwise sink every value used only by the final stores into the block that
returns, after the last ``erf``, which is the order this pass undoes.
"""

from __future__ import annotations

from llvmlite import ir

__all__ = ["ENABLED", "order_on_demand"]

ENABLED = True

# opnames of llvmlite instructions with no side effect and no undefined behaviour beyond poison
_PURE_OPS = frozenset({
    "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor",
    "fadd", "fsub", "fmul", "fdiv", "frem", "fneg",
    "icmp", "fcmp", "select", "getelementptr",
    "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
    "ptrtoint", "inttoptr", "bitcast", "addrspacecast",
    "extractvalue", "insertvalue", "extractelement", "insertelement", "shufflevector",
})
# LLVM intrinsics that only compute (no memory, no convergence): safe to move within a block
_PURE_INTRINSICS = ("llvm.fma.", "llvm.fmuladd.", "llvm.fabs.", "llvm.copysign.", "llvm.minnum.",
                    "llvm.maxnum.", "llvm.minimum.", "llvm.maximum.", "llvm.sqrt.", "llvm.floor.",
                    "llvm.ceil.", "llvm.trunc.", "llvm.rint.", "llvm.smin.", "llvm.smax.", "llvm.umin.",
                    "llvm.umax.", "llvm.abs.", "llvm.ctpop.", "llvm.ctlz.", "llvm.cttz.")


def _is_pure(ins: ir.Instruction) -> bool:
    if isinstance(ins, ir.CallInstr):
        callee = ins.callee
        if not isinstance(callee, ir.Function):  # inline asm: loads, stores, predicated moves
            return False
        name = callee.name
        return name.startswith("__nv_") or name.startswith(_PURE_INTRINSICS)
    if isinstance(ins, ir.PhiInstr):
        return False
    return ins.opname in _PURE_OPS


def order_on_demand(func: ir.Function) -> None:
    """Reorder every basic block of ``func`` in place (see the module docs)."""
    for block in func.blocks:
        _order_block(block)


def _operands(ins: ir.Instruction) -> list:
    if isinstance(ins, ir.PhiInstr):
        return [v for v, _ in ins.incomings]
    return list(ins.operands)


def _order_block(block: ir.Block) -> None:
    instrs = block.instructions
    if len(instrs) < 3:
        return
    local = {id(i): i for i in instrs}
    placed: set[int] = set()
    order: list[ir.Instruction] = []

    def place(root: ir.Instruction) -> None:
        """``root`` after its unplaced in-block operands (depth first, operands in order)."""
        stack: list[tuple[ir.Instruction, int]] = [(root, 0)]
        while stack:
            ins, k = stack.pop()
            if id(ins) in placed:
                continue
            ops = _operands(ins)
            while k < len(ops) and (id(ops[k]) not in local or id(ops[k]) in placed):
                k += 1
            if k < len(ops):
                stack.append((ins, k + 1))
                stack.append((local[id(ops[k])], 0))
                continue
            placed.add(id(ins))
            order.append(ins)

    term = instrs[-1] if block.is_terminated else None
    rest = instrs
    while rest and isinstance(rest[0], ir.PhiInstr):  # phis stay first, in order
        placed.add(id(rest[0]))
        order.append(rest[0])
        rest = rest[1:]
    for ins in rest:
        if ins is not term and not _is_pure(ins):
            place(ins)
    # what no side effect needed: values used in other blocks (and dead ones), in original order
    for ins in rest:
        if ins is not term:
            place(ins)
    if term is not None:
        place(term)
    assert len(order) == len(instrs)
    block.instructions[:] = order
