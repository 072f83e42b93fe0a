"""Predicated global stores and loads on the GPU: one ``@p st.global``/``@p ld.global`` instead of a branch.

Why. A masked store written as ``if (mask) store v`` lets LLVM sink the computation of ``v``
into the conditional block; ptxas then keeps one branch per element around the whole
computation (it cannot if-convert a block holding the ``div.rn.f32`` slow-path call). In the
softmax output loop that was a ``BSSY``/``BRA``/``BSYNC`` region per element with the ``exp``
and the division inside. Emitted as a single inline-asm instruction, ``@p st.global.b32 [a], r;``
(as Triton does), the value is computed for every lane (computing it for a masked-off lane is
harmless: the IR's ops are total) and only the store is predicated; there is no branch.

Semantics are unchanged: the store happens exactly where the mask is true, with the same
address, width and alignment as the plain ``store`` (the caller's vector alignment is what it
proved for the unmasked form). The asm is ``sideeffect`` with a ``memory`` clobber, so LLVM
neither removes it nor moves other memory accesses across it. Element widths PTX stores from
registers directly (16, 32 and 64 bits; 8-bit values go through a 16-bit register with
``st.global.b8``, which stores its low byte) and vectors of 2 or 4 elements (2 for 64-bit) use
it; anything else keeps the branch.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

_REG = {8: "h", 16: "h", 32: "r", 64: "l"}  # inline-asm constraint of the register holding the value


def _as_int(b: ir.IRBuilder, v: ir.Value) -> tuple[ir.Value, int] | None:
    """``v`` as an integer register of its width (8-bit widened to 16) and the stored width."""
    t = v.type
    if isinstance(t, ir.IntType):
        if t.width == 8:
            return b.zext(v, ir.IntType(16)), 8
        return (v, t.width) if t.width in _REG else None
    bits = {"half": 16, "bfloat": 16, "float": 32, "double": 64}.get(str(t))
    if bits is None:
        return None
    return b.bitcast(v, ir.IntType(bits)), bits


def predicated_store(b: ir.IRBuilder, ptr: ir.Value, vals: Sequence[ir.Value], mask: ir.Value,
                     offset: int = 0) -> bool:
    """Emit ``@mask st.global[.vN].bW [ptr+offset], {vals}`` and return True, or return False
    (nothing emitted) when the element type or vector length has no such instruction; the caller
    then branches around an ordinary store. ``ptr`` is a global (``addrspace(1)``) pointer,
    ``offset`` a byte offset from it (an immediate: stores of consecutive elements share one
    address register, as ptxas folds them for plain stores); ``mask`` an ``i1``."""
    n = len(vals)
    regs = [_as_int(b, v) for v in vals]
    if any(r is None for r in regs) or len({r[1] for r in regs}) != 1:  # type: ignore[index]
        return False
    bits = regs[0][1]  # type: ignore[index]
    if n not in (1, 2, 4) or (bits == 64 and n == 4) or (bits == 8 and n != 1):
        return False
    ops = [r[0] for r in regs]  # type: ignore[index]
    vec = "" if n == 1 else f".v{n}"
    data = "$0" if n == 1 else "{" + ", ".join(f"${i}" for i in range(n)) + "}"
    addr = f"${n}+{offset}" if offset else f"${n}"
    text = f"@${n + 1} st.global{vec}.b{bits} [{addr}], {data};"
    constraints = ",".join([_REG[bits]] * n + ["l", "b", "~{memory}"])
    fnty = ir.FunctionType(ir.VoidType(), [o.type for o in ops] + [ptr.type, ir.IntType(1)])
    b.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), [*ops, ptr, mask])
    return True


def predicated_load(b: ir.IRBuilder, ptr: ir.Value, t: ir.Type, mask: ir.Value, other: ir.Value,
                    offset: int = 0) -> ir.Value | None:
    """Emit ``mov r, other; @mask ld.global.bW r, [ptr];`` and return ``r`` (type ``t``), or
    return None (nothing emitted) when ``t`` has no such register load (8-bit and non-scalar
    types); the caller then branches around an ordinary load.

    Why: a masked load as ``if (mask) v = load`` plus a phi is three basic blocks per element;
    a 256-element-per-thread block then has ~1000 blocks and LLVM's NVPTX back end spends seconds
    on them (compile time grows with block size). One predicated instruction, as Triton emits,
    keeps the function a single block. Semantics are the branch's: where ``mask`` is false the
    memory is not touched and the result is ``other``. The address is ``ptr`` plus ``offset``
    bytes (an immediate, as :func:`predicated_store`). The asm clobbers ``memory`` and is an
    ordinary (not ``readnone``) call, so LLVM keeps it ordered against stores."""
    bits = {"half": 16, "bfloat": 16, "float": 32, "double": 64}.get(str(t))
    if bits is None and isinstance(t, ir.IntType) and t.width in (16, 32, 64):
        bits = t.width
    if bits is None or not (isinstance(ptr.type, ir.PointerType) and ptr.type.addrspace == 1):
        return None
    it = ir.IntType(bits)
    dflt = other if isinstance(t, ir.IntType) else b.bitcast(other, it)
    reg = _REG[bits]
    addr = f"$2+{offset}" if offset else "$2"
    text = f"mov.b{bits} $0, $1;\n\t@$3 ld.global.b{bits} $0, [{addr}];"
    fnty = ir.FunctionType(it, [it, ptr.type, ir.IntType(1)])
    r = b.call(ir.InlineAsm(fnty, text, f"={reg},{reg},l,b,~{{memory}}", side_effect=False), [dflt, ptr, mask])
    return r if isinstance(t, ir.IntType) else b.bitcast(r, t)


def register_bits(t: ir.Type) -> int | None:
    """The width of ``t`` when a predicated load or store handles it as one register (16, 32, 64)."""
    if isinstance(t, ir.IntType):
        return t.width if t.width in (16, 32, 64) else None
    return {"half": 16, "bfloat": 16, "float": 32, "double": 64}.get(str(t))


def predicated_load_vector(b: ir.IRBuilder, ptr: ir.Value, t: ir.Type, mask: ir.Value,
                           others: Sequence[ir.Value]) -> list[ir.Value] | None:
    """``@mask ld.global.v{n}.bW {r..}, [ptr]`` with each ``r_i`` preset to ``others[i]``: the
    ``n`` consecutive elements at ``ptr`` where ``mask``, else ``others``; None (nothing emitted)
    for element types or lengths PTX has no such load for (as :func:`predicated_store`). The
    caller proved ``ptr`` aligned to the whole vector, as for the unmasked vector load."""
    n = len(others)
    bits = register_bits(t)
    if bits is None or n not in (2, 4) or (bits == 64 and n == 4) or getattr(ptr.type, "addrspace", 0) != 1:
        return None
    it = ir.IntType(bits)
    dflt = [o if isinstance(t, ir.IntType) else b.bitcast(o, it) for o in others]
    movs = "\n\t".join(f"mov.b{bits} ${i}, ${n + i};" for i in range(n))
    regs = "{" + ", ".join(f"${i}" for i in range(n)) + "}"
    text = f"{movs}\n\t@${2 * n + 1} ld.global.v{n}.b{bits} {regs}, [${2 * n}];"
    reg = _REG[bits]
    cons = ",".join([f"={reg}"] * n + [reg] * n + ["l", "b", "~{memory}"])
    st = ir.LiteralStructType([it] * n)
    fnty = ir.FunctionType(st, [it] * n + [ptr.type, ir.IntType(1)])
    r = b.call(ir.InlineAsm(fnty, text, cons, side_effect=False), [*dflt, ptr, mask])
    vals = [b.extract_value(r, i) for i in range(n)]
    return vals if isinstance(t, ir.IntType) else [b.bitcast(v, t) for v in vals]


def volatile_load(b: ir.IRBuilder, ptr: ir.Value, t: ir.Type, mask: ir.Value | None, other: ir.Value) -> ir.Value:
    """``mov r, other; @mask ld.volatile.global.bW r, [ptr];`` (``ld.volatile`` for a generic
    address): Triton's ``tl.load(..., volatile=True)``, one element, never merged with another
    load or cached in a register (the asm has a side effect). Every scalar type: an 8-bit value is
    loaded into a 16-bit register (PTX zero-extends it) and truncated. ``mask`` None: always."""
    bits = register_bits(t) or (8 if isinstance(t, ir.IntType) and t.width == 8 else None)
    if bits is None:
        raise ValueError(f"no volatile load of {t}")
    it = ir.IntType(max(bits, 16))
    if isinstance(t, ir.IntType):
        dflt = b.zext(other, it) if t.width < it.width else other
    else:
        dflt = b.bitcast(other, it)
    space = ".global" if getattr(ptr.type, "addrspace", 0) == 1 else ""
    text = f"mov.b{it.width} $0, $1;\n\t@$3 ld.volatile{space}.b{bits} $0, [$2];"
    fnty = ir.FunctionType(it, [it, ptr.type, ir.IntType(1)])
    cond = mask if mask is not None else ir.Constant(ir.IntType(1), 1)
    r = b.call(ir.InlineAsm(fnty, text, f"={_REG[it.width]},{_REG[it.width]},l,b,~{{memory}}", side_effect=True),
               [dflt, ptr, cond])
    if isinstance(t, ir.IntType):
        return b.trunc(r, t) if t.width < it.width else r
    return b.bitcast(r, t)
