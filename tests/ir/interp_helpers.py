"""Small IR builders shared by the interpreter tests (test_interp*.py), and ``interp_error``."""

from __future__ import annotations

import pytest

from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.errors import InterpreterError
from eggpu.ir.interp import interpret

# ------------------------------------------------------------------ small IR helpers


def splat(b: Builder, v, shape):
    return b.op("splat", v, shape=tuple(shape))


def offsets_1d(b: Builder, block_size: int):
    """pid * BLOCK + arange(0, BLOCK)."""
    pid = b.op("program_id", axis=0)
    start = b.op("mul", pid, b.const(block_size, i32))
    return b.op("add", splat(b, start, (block_size,)), b.op("arange", start=0, end=block_size))


def ptr_at(b: Builder, p, offs):
    """Pointer block ``p + offs`` (offs has the block's shape)."""
    return b.op("addptr", splat(b, p, offs.type.shape), offs)


def vadd_kernel(block_size: int, dt=f32):
    b = Builder("vadd", [("x", pointer(dt)), ("y", pointer(dt)), ("out", pointer(dt)), ("n", scalar(i32))])
    x, y, out, n = b.params
    offs = offsets_1d(b, block_size)
    mask = b.op("lt", offs, splat(b, n, (block_size,)))
    vx = b.op("load", ptr_at(b, x, offs), mask)
    vy = b.op("load", ptr_at(b, y, offs), mask)
    b.effect("store", ptr_at(b, out, offs), b.op("add", vx, vy), mask)
    return b.finish()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def message(excinfo) -> str:
    return str(excinfo.value)


def interp_error(fn, grid, *args) -> str:
    """The message of the InterpreterError that interpreting ``fn`` over ``grid`` with ``args``
    raises (the test fails if it raises nothing)."""
    with pytest.raises(InterpreterError) as e:
        interpret(fn, grid, *args)
    return str(e.value)


def tile_reduce_kernel(BR: int, BC: int):
    """Per (row block, column block) tile of an R x C row-major matrix (masked at the edges):

    rowsum[cb, r]  = sum over the tile's columns of a[r, c]            (reduce_sum axis 1)
    colmax[rb, c]  = max over the tile's rows of a[r, c]               (reduce_max axis 0)
    colarg[rb, c]  = row index (within the tile) of the column maximum (reduce_argmax axis 0)
    """
    params = [("a", pointer(f32)), ("rowsum", pointer(f32)), ("colmax", pointer(f32)),
              ("colarg", pointer(i32)), ("R", scalar(i32)), ("C", scalar(i32))]
    b = Builder("tile_reduce", params, grid_rank=2)
    a, rowsum, colmax, colarg, R, C = b.params
    rb, cb = b.op("program_id", axis=0), b.op("program_id", axis=1)
    rows = b.op("add", splat(b, b.op("mul", rb, b.const(BR, i32)), (BR,)), b.op("arange", start=0, end=BR))
    cols = b.op("add", splat(b, b.op("mul", cb, b.const(BC, i32)), (BC,)), b.op("arange", start=0, end=BC))
    rows2 = b.op("broadcast", b.op("expand_dims", rows, axis=1), shape=(BR, BC))
    cols2 = b.op("broadcast", b.op("expand_dims", cols, axis=0), shape=(BR, BC))
    offs = b.op("add", b.op("mul", rows2, splat(b, C, (BR, BC))), cols2)
    mask = b.op("and", b.op("lt", rows2, splat(b, R, (BR, BC))), b.op("lt", cols2, splat(b, C, (BR, BC))))
    ninf = splat(b, b.const(float("-inf"), f32), (BR, BC))
    zero = splat(b, b.const(0.0, f32), (BR, BC))
    tile_for_max = b.op("load", ptr_at(b, a, offs), mask, ninf)
    tile_for_sum = b.op("where", mask, tile_for_max, zero)
    rs = b.op("reduce_sum", tile_for_sum, axis=1)  # [BR]
    rmask = b.op("lt", rows, splat(b, R, (BR,)))
    rs_offs = b.op("add", splat(b, b.op("mul", cb, R), (BR,)), rows)
    b.effect("store", ptr_at(b, rowsum, rs_offs), rs, rmask)
    cm = b.op("reduce_max", tile_for_max, axis=0)  # [BC]
    ca = b.op("reduce_argmax", tile_for_max, axis=0)
    cmask = b.op("lt", cols, splat(b, C, (BC,)))
    cm_offs = b.op("add", splat(b, b.op("mul", rb, C), (BC,)), cols)
    b.effect("store", ptr_at(b, colmax, cm_offs), cm, cmask)
    b.effect("store", ptr_at(b, colarg, cm_offs), ca, cmask)
    return b.finish()


def scatter_kernel(n_block: int, dt=i32):
    """out[idx[i]] = val[i] for unmasked i (mask: i < n)."""
    b = Builder("scatter", [("idx", pointer(i32)), ("val", pointer(dt)), ("out", pointer(dt)), ("n", scalar(i32))])
    idx, val, out, n = b.params
    offs = b.op("arange", start=0, end=n_block)
    mask = b.op("lt", offs, splat(b, n, (n_block,)))
    where = b.op("load", ptr_at(b, idx, offs), mask)
    v = b.op("load", ptr_at(b, val, offs), mask)
    b.effect("store", ptr_at(b, out, where), v, mask)
    return b.finish()


def atomic_kernel(op: str, n_block: int, dt=i32, masked=True):
    """old[i] = op(out + idx[i], val[i]) for i < n (masked) — returns the old values."""
    params = [("idx", pointer(i32)), ("val", pointer(dt)), ("out", pointer(dt)), ("old", pointer(dt)),
              ("n", scalar(i32))]
    b = Builder("atomics", params)
    idx, val, out, old, n = b.params
    offs = b.op("arange", start=0, end=n_block)
    mask = b.op("lt", offs, splat(b, n, (n_block,)))
    where = b.op("load", ptr_at(b, idx, offs), mask)
    v = b.op("load", ptr_at(b, val, offs), mask)
    args = (ptr_at(b, out, where), v) + ((mask,) if masked else ())
    r = b.op(op, *args)
    b.effect("store", ptr_at(b, old, offs), r)
    return b.finish()
