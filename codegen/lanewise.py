"""A scalar function applied lane by lane to vectors: the helper the lowering calls where a
libdevice/libm function (or a host reference) exists only for scalars.

The helper is an internal function of the module, made once per name: a loop over the lanes that
extracts each operand's lane, calls the scalar function and inserts the result. It does no float
arithmetic of its own, so no fast-math flags apply.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

I32 = ir.IntType(32)


def lanewise_function(module: ir.Module, helper_name: str, scalar_fn: ir.Function,
                      arg_types: Sequence[ir.VectorType], result_type: ir.VectorType) -> ir.Function:
    """The internal function ``helper_name`` of ``module`` (created on first use): ``scalar_fn``
    applied to each lane of vectors of ``arg_types`` (mixed element types allowed, one lane count)."""
    fn = module.globals.get(helper_name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(result_type, list(arg_types)), helper_name)
    fn.linkage = "internal"
    entry, head, body, done = (fn.append_basic_block(n) for n in ("entry", "head", "body", "done"))
    b = ir.IRBuilder(entry)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I32)
    acc = b.phi(result_type)
    i.add_incoming(I32(0), entry)
    acc.add_incoming(ir.Constant(result_type, ir.Undefined), entry)
    b.cbranch(b.icmp_unsigned("<", i, I32(result_type.count)), body, done)
    b.position_at_end(body)
    r = b.call(scalar_fn, [b.extract_element(a, i) for a in fn.args])
    nacc = b.insert_element(acc, r, i)
    ni = b.add(i, I32(1))
    b.branch(head)
    i.add_incoming(ni, body)
    acc.add_incoming(nacc, body)
    b.position_at_end(done)
    b.ret(acc)
    return fn
