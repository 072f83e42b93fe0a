"""``run_cpu`` checks every active lane of every load, store and atomic against its buffer.

Regression (issue 9, item 6): a 128-lane unmasked store into a 10-element array wrote past its
end silently on the host, while the interpreter raised. The host build now checks, before the
access, every lane that is active under the mask against the array of the pointer parameter
the address derives from, and raises the interpreter's OutOfBoundsError with the same words.
Each test runs the interpreter and the host on the same call and compares the messages (and the
arrays, which must be left exactly as the interpreter leaves them). The PTX has no checks.
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.codegen import lower
from eggpu.ir import Builder, f32, i32, i64, pointer, scalar
from eggpu.ir.errors import InterpreterError, LaunchError, OutOfBoundsError
from eggpu.ir.interp import interpret

from .conftest import host_kernel

BLOCK = 128


def splat(b: Builder, v, shape=(BLOCK,)):
    return b.op("splat", v, shape=shape)


def lanes(b: Builder, block: int = BLOCK, axis: int = 0):
    """``program_id(axis) * block + arange(block)``."""
    pid = b.op("program_id", axis=axis)
    return b.op("add", splat(b, b.op("mul", pid, b.const(block, i32)), (block,)), b.op("arange", start=0, end=block))


def at(b: Builder, name: str, offs):
    return b.op("addptr", splat(b, b.param(name), offs.type.shape), offs)


def both_raise(fn, grid, *args) -> str:
    """Run ``fn`` in the interpreter and on the host on copies of ``args``; both must raise
    OutOfBoundsError with one message and leave every array alike; returns the message."""
    a1 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    a2 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(OutOfBoundsError) as e1:
        interpret(fn, grid, *a1)
    with pytest.raises(OutOfBoundsError) as e2:
        host_kernel(fn).run(grid, *a2)
    assert str(e2.value) == str(e1.value)
    for x, y in zip(a1, a2):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    return str(e2.value)


def store_kernel(masked: bool):
    """``out[pid * 128 + i] = i`` (under ``i < n`` when masked)."""
    b = Builder("fill" + ("_masked" if masked else ""), [("out", pointer(f32)), ("n", scalar(i32))])
    offs = lanes(b)
    vals = b.op("cast", offs, dtype=f32)
    mask = (b.op("lt", offs, splat(b, b.param("n"))),) if masked else ()
    b.effect("store", at(b, "out", offs), vals, *mask)
    return b.finish()


def test_unmasked_store_into_a_too_small_array_raises_before_writing():
    fn = store_kernel(False)
    msg = both_raise(fn, 1, np.zeros(10, np.float32), 10)
    assert msg == "fill: store in program 0: out-of-bounds access: lane (10,) writes offset 10 of buffer 'out' " \
                  "which has 10 element(s)"
    # nothing past the end of the array was written: the array is a view into a larger buffer
    big = np.full(64, -1.0, np.float32)
    with pytest.raises(OutOfBoundsError):
        host_kernel(fn).run(1, big[:10], 10)
    assert (big == -1.0).all()  # not even the in-bounds lanes: the whole store is checked first
    with pytest.raises(InterpreterError, match="lane \\(17,\\) writes offset 17 of buffer 'out' which has 17 "):
        host_kernel(fn).run(1, np.zeros(17, np.float32), 17)


def test_masked_off_lanes_are_not_checked():
    fn = store_kernel(True)
    out = np.zeros(10, np.float32)
    host_kernel(fn).run(1, out, 10)
    assert out.tolist() == list(range(10))
    msg = both_raise(fn, 1, np.zeros(10, np.float32), 11)  # n one too large: lane 10 is active
    assert msg.endswith("lane (10,) writes offset 10 of buffer 'out' which has 10 element(s)")


def test_later_program_out_of_bounds_stops_the_grid():
    fn = store_kernel(False)
    msg = both_raise(fn, 4, np.zeros(300, np.float32), 300)  # programs 0 and 1 write, 2 fails, 3 never runs
    assert msg == "fill: store in program 2: out-of-bounds access: lane (44,) writes offset 300 of buffer 'out' " \
                  "which has 300 element(s)"


def load_kernel(shift: int, masked: bool):
    """``out[i] = x[pid * 128 + i + shift]`` (load under ``i < n`` when masked)."""
    b = Builder("shifted", [("x", pointer(f32)), ("out", pointer(f32)), ("n", scalar(i32))])
    offs = lanes(b)
    src = b.op("add", offs, splat(b, b.const(shift, i32)))
    mask = (b.op("lt", offs, splat(b, b.param("n"))),) if masked else ()
    v = b.op("load", at(b, "x", src), *mask)
    b.effect("store", at(b, "out", offs), v)
    return b.finish()


def test_out_of_bounds_load():
    msg = both_raise(load_kernel(0, False), 1, np.ones(100, np.float32), np.zeros(128, np.float32), 100)
    assert msg == "shifted: load in program 0: out-of-bounds access: lane (100,) reads offset 100 of buffer 'x' " \
                  "which has 100 element(s)"


def test_negative_offset_load():
    msg = both_raise(load_kernel(-3, True), 1, np.ones(200, np.float32), np.zeros(128, np.float32), 50)
    assert msg == "shifted: load in program 0: out-of-bounds access: lane (0,) reads offset -3 of buffer 'x' " \
                  "which has 200 element(s)"


def test_masked_out_of_range_load_does_not_raise():
    x = np.arange(64, dtype=np.float32)
    out = np.full(128, 7.0, np.float32)
    host_kernel(load_kernel(5, True)).run(1, x, out, 59)
    assert out[:59].tolist() == list(range(5, 64)) and (out[59:] == 0).all()


def test_2d_grid_and_2d_block_lane_coordinates():
    b = Builder("tile", [("out", pointer(i32))], grid_rank=2)
    r = b.op("expand_dims", b.op("arange", start=0, end=8), axis=1)
    c = b.op("expand_dims", b.op("arange", start=0, end=32), axis=0)
    pid = b.op("add", b.op("mul", b.op("program_id", axis=0), b.const(3, i32)), b.op("program_id", axis=1))
    flat = b.op("add", b.op("broadcast", b.op("mul", r, splat(b, b.const(32, i32), (8, 1))), shape=(8, 32)),
                b.op("broadcast", c, shape=(8, 32)))
    offs = b.op("add", flat, splat(b, b.op("mul", pid, b.const(256, i32)), (8, 32)))
    b.effect("store", at(b, "out", offs), offs)
    fn = b.finish()
    msg = both_raise(fn, (2, 3), np.zeros(5 * 256 + 100, np.int32))
    assert msg == "tile: store in program (1, 2): out-of-bounds access: lane (3, 4) writes offset 1380 of buffer " \
                  "'out' which has 1380 element(s)"


def atomic_kernel(masked: bool):
    """``old[i] = atomic_add(acc + pid * 128 + i, 1)`` (under ``i < n`` when masked)."""
    b = Builder("count", [("acc", pointer(i32)), ("old", pointer(i32)), ("n", scalar(i32))])
    offs = lanes(b)
    mask = (b.op("lt", offs, splat(b, b.param("n"))),) if masked else ()
    old = b.op("atomic_add", at(b, "acc", offs), splat(b, b.const(1, i32)), *mask)
    b.effect("store", at(b, "old", b.op("arange", start=0, end=BLOCK)), old)
    return b.finish()


def test_atomics_are_checked():
    msg = both_raise(atomic_kernel(False), 1, np.zeros(10, np.int32), np.zeros(128, np.int32), 10)
    assert msg == "count: atomic_add in program 0: out-of-bounds access: lane (10,) updates offset 10 of buffer " \
                  "'acc' which has 10 element(s)"
    acc = np.zeros(10, np.int32)
    host_kernel(atomic_kernel(True)).run(1, acc, np.zeros(128, np.int32), 10)
    assert acc.tolist() == [1] * 10


def test_scalar_accesses_are_checked():
    """Scalar (one element per program) load and atomic: no lane in the message."""
    b = Builder("scalar_k", [("x", pointer(i32)), ("k", scalar(i32)), ("on", scalar(i32))])
    p = b.op("addptr", b.param("x"), b.param("k"))
    v = b.op("load", p, b.op("ne", b.param("on"), b.const(0, i32)))
    b.op("atomic_add", b.op("addptr", b.param("x"), b.const(0, i32)), v)
    fn = b.finish()
    assert both_raise(fn, 1, np.ones(3, np.int32), 5, 1) == \
        "scalar_k: load in program 0: out-of-bounds access: reads offset 5 of buffer 'x' which has 3 element(s)"
    x = np.ones(3, np.int32)
    host_kernel(fn).run(1, x, 5, 0)  # the load is masked off: no error, adds 0
    assert x.tolist() == [1, 1, 1]
    assert both_raise(fn, 2, np.ones(4, np.int32), -1, 1).endswith("reads offset -1 of buffer 'x' which has 4 element(s)")
    assert both_raise(fn, 1, np.ones(0, np.int32), 0, 0) == \
        "scalar_k: atomic_add in program 0: out-of-bounds access: updates offset 0 of buffer 'x' which has 0 element(s)"


def test_pointer_into_another_array_is_checked_against_its_base():
    """``a + (b - a)`` points into ``b``'s memory but derives from ``a``: out of bounds (as in the
    interpreter, whose pointers stay in their parameter's buffer)."""
    b = Builder("stray", [("a", pointer(f32)), ("b", pointer(f32)), ("delta", scalar(i64))])
    v = b.op("load", b.op("addptr", b.param("a"), b.param("delta")))
    b.effect("store", b.param("b"), v)
    fn = b.finish()
    big = np.zeros(100, np.float32)
    a, bb = big[:8], big[40:48]
    with pytest.raises(OutOfBoundsError) as e:
        host_kernel(fn).run(1, a, bb, 40)
    assert str(e.value) == "stray: load in program 0: out-of-bounds access: reads offset 40 of buffer 'a' which has " \
                           "8 element(s)"


def test_merged_pointer_provenance_checks_against_any_candidate():
    """A pointer chosen by an ``if`` may derive from either parameter: it must lie in one of them."""
    b = Builder("pick", [("a", pointer(f32)), ("b", pointer(f32)), ("c", scalar(i32))])
    ptr_t = pointer(f32)
    with b.region() as then_:
        b.yield_(b.param("a"))
    with b.region() as else_:
        b.yield_(b.param("b"))
    p = b.if_(b.op("ne", b.param("c"), b.const(0, i32)), then_, else_, [ptr_t]).results[0]
    offs = b.op("arange", start=0, end=BLOCK)
    b.effect("store", b.op("addptr", splat(b, p), offs), b.op("cast", offs, dtype=f32))
    fn = b.finish()
    big = np.zeros(1000, np.float32)
    a, bb = big[0:10], big[500:640]
    host_kernel(fn).run(1, a, bb, 0)  # b is large enough
    assert bb[:128].tolist() == list(range(128))
    before = big.copy()
    with pytest.raises(OutOfBoundsError) as e:
        host_kernel(fn).run(1, a, bb[:10], 0)
    assert str(e.value) == ("pick: store in program 0: out-of-bounds access: lane (10,) writes outside every buffer "
                            "it may point into, 'a' (10 element(s)) or 'b' (10 element(s)): offset 10 from 'b'")
    np.testing.assert_array_equal(big, before)
    with pytest.raises(OutOfBoundsError, match="lane \\(10,\\) writes offset 10 of buffer 'a' which has 10 "):
        interpret(fn, 1, a, bb[:10], 1)  # the interpreter knows the runtime choice


def test_the_ptx_has_no_bounds_checks():
    lm = lower(store_kernel(False), "sm_90")
    assert lm.bounds_checks == () and "oob" not in lm.llvm_ir
    host = lower(store_kernel(False), "host")
    assert len(host.bounds_checks) == 1 and "oob" in host.llvm_ir


# ---------------------------------------------------------------- through eggpu.compile


@eggpu.kernel
def fill_all(y_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    """The issue's example: a 128-lane unmasked store."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.full([BLOCK], 1.0, tl.f32))


def test_compiled_kernel_run_cpu_raises_like_interpret(tmp_path, monkeypatch):
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    kern = fill_all.Kernel(128)
    ck = eggpu.compile(kern, optimize=False)
    big = np.zeros(64, np.float32)
    with pytest.raises(OutOfBoundsError) as e1:
        kern.interpret(1, big[:10].copy())
    with pytest.raises(OutOfBoundsError) as e2:
        ck.run_cpu(1, big[:10])
    assert str(e2.value) == str(e1.value)
    assert str(e2.value).startswith("fill_all: store at ") and str(e2.value).endswith(
        " in program 0: out-of-bounds access: lane (10,) writes offset 10 of buffer 'y_ptr' which has 10 element(s)")
    assert not big.any()
    for run in (ck.run_cpu, ck.launch):  # the grid is checked before anything runs (no GPU needed)
        with pytest.raises(LaunchError, match=r"^fill_all: grid \(1, 65536\) exceeds CUDA's limits: axis y has 65536"):
            run((1, 65536), big)
