"""Type rules of the op table (:mod:`eggpu.ir.ops`): each takes the operand types and the
attributes and returns the result types, or raises IRError naming the op and what is wrong.
Dtype families are checked by :func:`eggpu.ir.ops.check_family` before a rule runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .dtypes import DType, bool_, f32, i32
from .errors import IRError
from .types import BlockType, PointerType


def fail(op: str, msg: str) -> IRError:
    """The IRError of op ``op``: ``"op: msg"``."""
    return IRError(f"{op}: {msg}")


def same_type(name: str):
    def rule(ts: Sequence[BlockType], attrs: dict[str, Any]) -> tuple[BlockType, ...]:
        for t in ts[1:]:
            if t != ts[0]:
                raise fail(name, f"operands must have one type, got {', '.join(map(str, ts))}")
        return (ts[0],)

    return rule


def compare_type(name: str):
    def rule(ts, attrs):
        same_type(name)(ts, attrs)
        return (BlockType(bool_, ts[0].shape),)

    return rule


def where_type(ts, attrs):
    c, a, b = ts
    if c.elem != bool_:
        raise fail("where", f"condition must be bool, got {c}")
    if a != b:
        raise fail("where", f"branches must have one type, got {a} and {b}")
    if c.shape != a.shape:
        raise fail("where", f"condition shape {c.shape} differs from value shape {a.shape}")
    return (a,)


def const_type(ts, attrs):
    dt = attrs["dtype"]
    if not isinstance(dt, DType):
        raise fail("const", f"dtype attribute must be a DType, got {dt!r}")
    v = attrs["value"]
    if isinstance(v, bool):
        ok = dt.is_bool or dt.is_int
    elif isinstance(v, int):
        ok = (dt.is_int and dt.min <= v <= dt.max) or dt.is_float or (dt.is_bool and v in (0, 1))
    elif isinstance(v, float):
        ok = dt.is_float
    else:
        ok = False
    if not ok:
        raise fail("const", f"value {v!r} is not a {dt} constant")
    return (BlockType(dt, ()),)


def index_type(name):
    def rule(ts, attrs):
        if attrs["axis"] not in (0, 1, 2):
            raise fail(name, f"axis must be 0, 1 or 2, got {attrs['axis']}")
        return (BlockType(i32, ()),)

    return rule


def arange_type(ts, attrs):
    start, end = attrs["start"], attrs["end"]
    if not (isinstance(start, int) and isinstance(end, int)) or end <= start:
        raise fail("arange", f"needs integer start < end, got start={start} end={end}")
    return (BlockType(i32, (end - start,)),)


def splat_type(ts, attrs):
    (t,) = ts
    if not t.is_scalar:
        raise fail("splat", f"operand must be a scalar, got {t}")
    shape = tuple(attrs["shape"])
    if not shape or any((not isinstance(s, int)) or s < 1 for s in shape):
        raise fail("splat", f"shape must be non-empty positive integers, got {shape}")
    return (BlockType(t.elem, shape),)


def broadcast_type(ts, attrs):
    (t,) = ts
    shape = tuple(attrs["shape"])
    if len(shape) != t.rank:
        raise fail("broadcast", f"rank mismatch: {t} to shape {shape}")
    for s, d in zip(t.shape, shape):
        if s != d and s != 1:
            raise fail("broadcast", f"cannot broadcast {t} to shape {shape}")
    return (BlockType(t.elem, shape),)


def expand_dims_type(ts, attrs):
    (t,) = ts
    axis = attrs["axis"]
    if not 0 <= axis <= t.rank:
        raise fail("expand_dims", f"axis {axis} out of range for {t}")
    s = list(t.shape)
    s.insert(axis, 1)
    return (BlockType(t.elem, tuple(s)),)


def reshape_type(ts, attrs):
    (t,) = ts
    shape = tuple(attrs["shape"])
    n = 1
    for s in shape:
        n *= s
    if n != t.numel or not shape:
        raise fail("reshape", f"cannot reshape {t} to shape {shape}")
    return (BlockType(t.elem, shape),)


def trans_type(ts, attrs):
    (t,) = ts
    perm = tuple(attrs["perm"])
    if sorted(perm) != list(range(t.rank)) or t.rank < 2:
        raise fail("trans", f"perm {perm} is not a permutation of the axes of {t}")
    return (BlockType(t.elem, tuple(t.shape[p] for p in perm)),)


def cast_type(ts, attrs):
    (t,) = ts
    dt = attrs["dtype"]
    if t.is_pointer:
        raise fail("cast", "cannot cast a pointer")
    if (t.dtype.is_fp8 or dt.is_fp8) and not all(d.is_float or d.is_fp8 for d in (t.dtype, dt)):
        raise fail("cast", f"no conversion between {t.dtype} and {dt}: FP8 converts only to and from the "
                           f"float dtypes (f16, bf16, f32, f64); go through f32")
    return (BlockType(dt, t.shape),)


def bitcast_type(ts, attrs):
    (t,) = ts
    dt = attrs["dtype"]
    if t.is_pointer or t.dtype.bits != dt.bits:
        raise fail("bitcast", f"bitcast needs equal widths, got {t.elem} to {dt}")
    return (BlockType(dt, t.shape),)


def addptr_type(ts, attrs):
    p, o = ts
    if not p.is_pointer:
        raise fail("addptr", f"first operand must be a pointer, got {p}")
    if not (isinstance(o.elem, DType) and o.elem.is_int):
        raise fail("addptr", f"offset must be an integer, got {o}")
    if p.shape != o.shape:
        raise fail("addptr", f"pointer shape {p.shape} differs from offset shape {o.shape}")
    return (p,)


def int_to_ptr_type(ts, attrs):
    """``int_to_ptr``: a 64-bit integer block (i64 or u64: a global address in bytes) -> pointers to
    ``attrs["dtype"]`` of the same shape (const pointers with ``const=True``)."""
    (t,) = ts
    dt = attrs["dtype"]
    if t.is_pointer or not t.dtype.is_int or t.dtype.bits != 64:
        raise fail("int_to_ptr", f"needs a 64-bit integer (i64 or u64: an address), got {t.elem}")
    if not isinstance(dt, DType):
        raise fail("int_to_ptr", f"the pointee must be a dtype, got {dt!r}")
    return (BlockType(PointerType(dt, bool(attrs.get("const", 0))), t.shape),)


def ptr_to_int_type(ts, attrs):
    """``ptr_to_int``: pointers -> their addresses in bytes as ``attrs["dtype"]`` (i64 or u64)."""
    (t,) = ts
    dt = attrs["dtype"]
    if not t.is_pointer:
        raise fail("ptr_to_int", f"needs a pointer, got {t.elem}")
    if not (isinstance(dt, DType) and dt.is_int and dt.bits == 64):
        raise fail("ptr_to_int", f"converts to a 64-bit integer (i64 or u64), got {dt}")
    return (BlockType(dt, t.shape),)


def gather_type(ts, attrs):
    src, idx = ts
    axis = attrs["axis"]
    if src.is_pointer:
        raise fail("gather", f"cannot gather pointers, got {src}")
    if not (isinstance(idx.elem, DType) and idx.elem.is_int):
        raise fail("gather", f"index must be an integer block, got {idx}")
    if src.rank == 0 or idx.rank != src.rank or not (isinstance(axis, int) and 0 <= axis < src.rank):
        raise fail("gather", f"needs a source and an index of one rank and an axis in range, got {src}, {idx}, "
                              f"axis={axis}")
    for d, (s, i) in enumerate(zip(src.shape, idx.shape)):
        if d != axis and s != i:
            raise fail("gather", f"index shape {idx.shape} must equal the source shape {src.shape} except "
                                  f"along axis {axis}")
    return (BlockType(src.elem, idx.shape),)


def reduce_type(name, index_result=False):
    def rule(ts, attrs):
        (t,) = ts
        axis = attrs["axis"]
        if t.is_scalar or not 0 <= axis < t.rank:
            raise fail(name, f"axis {axis} out of range for {t}")
        shape = t.shape[:axis] + t.shape[axis + 1 :]
        return (BlockType(i32 if index_result else t.elem, shape),)

    return rule


#: ``dot``'s ``precision`` values; the first is the default (an absent attribute).
DOT_PRECISIONS = ("ieee", "tf32")


def dot_type(ts, attrs):
    a, b = ts[0], ts[1]
    prec = attrs.get("precision", DOT_PRECISIONS[0])
    if prec not in DOT_PRECISIONS:
        raise fail("dot", f"precision must be one of {', '.join(map(repr, DOT_PRECISIONS))}, got {prec!r}")
    if prec == "tf32" and a.elem != f32:
        raise fail("dot", f"precision 'tf32' needs f32 operands, got {a.elem}")
    if a.rank != 2 or b.rank != 2 or a.shape[1] != b.shape[0]:
        raise fail("dot", f"needs [M,K] x [K,N] blocks, got {a} and {b}")
    if a.elem != b.elem:
        raise fail("dot", f"operands must share a dtype, got {a.elem} and {b.elem}")
    acc_dt = f32 if a.dtype.is_float else i32
    out = BlockType(acc_dt, (a.shape[0], b.shape[1]))
    if len(ts) == 3 and ts[2] != out:
        raise fail("dot", f"accumulator must be {out}, got {ts[2]}")
    return (out,)


def _check_mask(name, p, m):
    if m.elem != bool_ or m.shape != p.shape:
        raise fail(name, f"mask must be bool with the pointer's shape {p.shape}, got {m}")


def load_type(ts, attrs):
    p = ts[0]
    if not p.is_pointer:
        raise fail("load", f"operand must be a pointer, got {p}")
    out = BlockType(p.dtype, p.shape)
    if len(ts) >= 2:
        _check_mask("load", p, ts[1])
    if len(ts) == 3 and ts[2] != out:
        raise fail("load", f"other must be {out}, got {ts[2]}")
    return (out,)


def _not_const(name: str, p) -> None:
    """Stores and atomics write: a const pointer refuses them (Triton's 'Cannot store to a
    constant pointer')."""
    if p.elem.const:
        raise fail(name, f"cannot store through a const pointer ({p})")


def store_type(ts, attrs):
    p, v = ts[0], ts[1]
    if not p.is_pointer:
        raise fail("store", f"first operand must be a pointer, got {p}")
    _not_const("store", p)
    if v != BlockType(p.dtype, p.shape):
        raise fail("store", f"value must be {BlockType(p.dtype, p.shape)}, got {v}")
    if len(ts) == 3:
        _check_mask("store", p, ts[2])
    return ()


ATOMIC_SEMS = ("relaxed", "acquire", "release", "acq_rel")
"""Memory orderings of an atomic's optional ``sem`` attribute, Triton's names. Absent means
``"acq_rel"``, Triton's default for every read-modify-write atomic."""
ATOMIC_SCOPES = ("cta", "gpu", "sys")
"""Scopes of an atomic's optional ``scope`` attribute, Triton's names; absent means ``"gpu"``."""


def _check_sem(name: str, attrs: dict[str, Any]) -> None:
    sem = attrs.get("sem", "acq_rel")
    if sem not in ATOMIC_SEMS:
        raise fail(name, f"sem must be one of {', '.join(ATOMIC_SEMS)}, got {sem!r}")
    scope = attrs.get("scope", "gpu")
    if scope not in ATOMIC_SCOPES:
        raise fail(name, f"scope must be one of {', '.join(ATOMIC_SCOPES)}, got {scope!r}")


def atomic_type(name):
    def rule(ts, attrs):
        _check_sem(name, attrs)
        p, v = ts[0], ts[1]
        if not p.is_pointer:
            raise fail(name, f"first operand must be a pointer, got {p}")
        _not_const(name, p)
        if v != BlockType(p.dtype, p.shape):
            raise fail(name, f"value must be {BlockType(p.dtype, p.shape)}, got {v}")
        if len(ts) == 3:
            _check_mask(name, p, ts[2])
        return (v,)

    return rule


def cas_type(ts, attrs):
    _check_sem("atomic_cas", attrs)
    p, c, v = ts
    out = BlockType(p.dtype, p.shape) if p.is_pointer else None
    if out is None or c != out or v != out:
        raise fail("atomic_cas", f"needs pointer, compare and value of one element type, got {ts}")
    _not_const("atomic_cas", p)
    return (out,)


def no_check(ts, attrs):  # for/if/yield: checked structurally by the verifier
    return ()


def asm_elements_per_register(dt: DType | None, pack: int) -> int:
    """How many elements of ``dt`` (None: a pointer) one register of a ``pack``-element inline-asm
    call holds, as Triton packs them: ``min(32 // bits, pack)`` for elements narrower than 32
    bits, else 1 (e.g. four i8/fp8 in one b32 with pack=4, two f16 in one b32)."""
    bits = 64 if dt is None else dt.bits
    return min(32 // bits, pack) if bits < 32 else 1


def asm_registers(dt: DType | None, pack: int) -> int:
    """The number of asm operands (registers) that carry ``pack`` elements of ``dt``."""
    return pack // asm_elements_per_register(dt, pack)


def inline_asm_type(ts, attrs):
    """``inline_asm``: operands (values or pointers) of one shape (the frontend broadcasts them);
    one result of that shape per dtype of the ``dtype`` attribute (a dtype or a tuple of them).
    The optional ``pack`` (an int >= 1, default 1) is how many elements one asm call handles; with
    ``pack > 1`` no operand or result is bool, and the elements of one register divide ``pack``."""
    for t in ts:
        if t.shape != ts[0].shape:
            raise fail("inline_asm", f"operands must have one shape, got {', '.join(map(str, ts))}")
    dts = attrs["dtype"] if isinstance(attrs["dtype"], tuple) else (attrs["dtype"],)
    if not dts or not all(isinstance(d, DType) for d in dts):
        raise fail("inline_asm", f"dtype must be a dtype or a tuple of dtypes, got {attrs['dtype']!r}")
    pack = attrs.get("pack", 1)
    if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
        raise fail("inline_asm", f"pack must be an int >= 1, got {pack!r}")
    if pack > 1:
        if any(d.is_bool for d in dts) or any(not t.is_pointer and t.dtype.is_bool for t in ts):
            raise fail("inline_asm", f"bool values cannot be packed (pack={pack})")
        for d in list(dts) + [None if t.is_pointer else t.dtype for t in ts]:
            per_reg = asm_elements_per_register(d, pack)
            if pack % per_reg or (per_reg > 1 and per_reg * d.bits not in (16, 32)):
                raise fail("inline_asm", f"pack={pack} does not fill whole 16- or 32-bit registers with {d} "
                                         f"elements")
    return tuple(BlockType(d, ts[0].shape) for d in dts)


def libdevice_type(ts, attrs):
    """``libdevice``: a call of the libdevice function ``symbol`` (an ``__nv_*`` name of
    :data:`eggpu.ir.libdevice_table.SYMBOLS`) on operands of one shape whose element dtypes are the
    symbol's; one result of the symbol's result dtype and that shape."""
    from .dtypes import BY_NAME
    from .libdevice_table import SYMBOLS

    sym = attrs["symbol"]
    if sym not in SYMBOLS:
        raise fail("libdevice", f"unknown libdevice symbol {sym!r}")
    name, args, res = SYMBOLS[sym]
    got = [str(t.elem) for t in ts]
    if len(ts) != len(args) or any(t.is_pointer for t in ts) or tuple(got) != args:
        raise fail("libdevice", f"{sym} ({name}) takes ({', '.join(args)}), got ({', '.join(got)})")
    for t in ts:
        if t.shape != ts[0].shape:
            raise fail("libdevice", f"operands must have one shape, got {', '.join(map(str, ts))}")
    return (BlockType(BY_NAME[res], ts[0].shape),)


def device_print_type(ts, attrs):
    """``device_print(values...)``: values (scalars or blocks, not pointers) printed lane by lane;
    ``prefix`` a str, ``hex`` a bool; no result."""
    if not isinstance(attrs.get("prefix"), str) or not isinstance(attrs.get("hex"), bool):
        raise fail("device_print", f"prefix must be a str and hex a bool, got {attrs.get('prefix')!r}, "
                                   f"{attrs.get('hex')!r}")
    for t in ts:
        if t.is_pointer:
            raise fail("device_print", f"cannot print a pointer value ({t})")
    return ()


def device_assert_type(ts, attrs):
    """``device_assert(cond, mask?)``: a bool condition (scalar or block), an optional bool mask of
    its shape; ``msg`` and ``src`` (the ``file:line:col`` of the call) are strs; no result."""
    if ts[0].elem != bool_:
        raise fail("device_assert", f"condition must be bool, got {ts[0]}")
    if len(ts) == 2 and (ts[1].elem != bool_ or ts[1].shape != ts[0].shape):
        raise fail("device_assert", f"mask must be bool with the condition's shape {ts[0].shape}, got {ts[1]}")
    if not isinstance(attrs.get("msg"), str) or not isinstance(attrs.get("src"), str):
        raise fail("device_assert", "msg and src must be strs")
    return ()
