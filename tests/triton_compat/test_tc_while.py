"""``while cond:`` loops with runtime conditions and loop-carried values (scalars and blocks), in
the interpreter and the compiled CPU lowering, against numpy; the IR ``while`` round-trips its
text form; compile-time conditions fold; misuse is one located error."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir import parse_function, print_function
from eggpu.kernel_macro.diagnostics import KernelCompileError


@eggpu.jit
def collatz_steps(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=1)
    steps = tl.zeros([BLOCK], dtype=tl.int32)
    while tl.max(v, axis=0) > 1:  # runs until every lane of the block reached 1
        done = v == 1
        v = tl.where(done, v, tl.where(v % 2 == 0, v // 2, 3 * v + 1))
        steps += tl.where(done, 0, 1)
    tl.store(out_ptr + offs, steps, mask=mask)


def _collatz(x):
    out = []
    for v in x.tolist():
        k = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        out.append(k)
    return np.array(out, np.int32)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_while_block_carried(run_both, n):
    x = np.random.default_rng(n).integers(1, 300, n).astype(np.int32)
    res = run_both(collatz_steps, (triton_cdiv(n, 128),), x, np.zeros(n, np.int32), n, BLOCK=128)
    for device, (_, out) in res.items():
        np.testing.assert_array_equal(out, _collatz(x), err_msg=device)


def triton_cdiv(a, b):
    return -(-a // b)


@eggpu.jit
def scalar_search(x_ptr, out_ptr, n, target):
    """Index of the first element >= target in a sorted array (linear scan with a scalar while)."""
    i = 0
    while (i < n) & (tl.load(x_ptr + tl.minimum(i, n - 1)) < target):
        i += 1
    tl.store(out_ptr, i)


@pytest.mark.parametrize("target", [-5, 0, 17, 999, 5000])
def test_while_scalar_condition_with_load(run_both, target):
    x = np.sort(np.random.default_rng(3).integers(0, 1000, 1001)).astype(np.int32)
    res = run_both(scalar_search, (1,), x, np.zeros(1, np.int32), x.size, target)
    want = int(np.searchsorted(x, target))
    for device, (_, out) in res.items():
        assert int(out[0]) == want, device


@eggpu.jit
def halving(out_ptr, start):
    """A float carried value that starts as a literal; the loop variable is only read after."""
    x = 1.0
    k = start
    while k > 0:
        x = x * 0.5
        k = k - 1
    tl.store(out_ptr, x)


def test_while_literal_initial_values(run_both):
    for start in (0, 1, 10):
        res = run_both(halving, (1,), np.zeros(1, np.float32), start)
        for device, (out,) in res.items():
            assert out[0] == np.float32(0.5 ** start), (device, start)


@eggpu.jit
def static_false(out_ptr, N: tl.constexpr):
    v = 3
    while N > 10:  # a constexpr condition that is false: the loop is not emitted
        v = v + 1
    tl.store(out_ptr, v)


def test_while_compile_time_false_is_skipped(run_both):
    res = run_both(static_false, (1,), np.zeros(1, np.int32), N=4)
    for _, (out,) in res.items():
        assert out[0] == 3


def test_while_ir_round_trips():
    k = scalar_search.specialize(np.zeros(4, np.int32), np.zeros(1, np.int32), 4, 2)
    fn = k.ir()
    assert "while(" in print_function(fn)
    text = print_function(fn)
    assert print_function(parse_function(text)) == text


@eggpu.jit
def wide_for(out_ptr, lo, hi, step):
    n = 0
    last = lo
    for i in range(lo, hi, step):
        n += 1
        last = i
    tl.store(out_ptr, n.to(tl.int64))
    tl.store(out_ptr + 1, last)


def test_i64_for_is_a_while_over_an_i64_counter(run_both):
    """A loop whose bounds are i64 counts its trips in u64 (no i32 counter, no 2**31 cap)."""
    k = wide_for.specialize(np.zeros(2, np.int64), 2**40, 2**41, 2**38)
    text = print_function(k.ir())
    assert "while(" in text and not re.search(r"\bfor\(", text) and "minimum" not in text
    for lo, hi, step in [(2**40, 2**41, 2**38), (5, -2**62, -2**61), (2**63 - 3, 2**63 - 1, 1), (0, 9, 0)]:
        res = run_both(wide_for, (1,), np.zeros(2, np.int64), np.int64(lo), np.int64(hi), np.int64(step))
        r = range(lo, hi, step) if step else range(0)
        for device, (out,) in res.items():
            assert out.tolist() == [len(r), r[-1] if len(r) else lo], (device, lo, hi, step)


@eggpu.jit
def forever(out_ptr):
    v = 0
    while True:
        v += 1
    tl.store(out_ptr, v)


@eggpu.jit
def block_cond(x_ptr):
    v = tl.load(x_ptr + tl.arange(0, 4))
    while v > 0:
        v -= 1
    tl.store(x_ptr + tl.arange(0, 4), v)


@eggpu.jit
def while_else(x_ptr):
    v = tl.load(x_ptr)
    while v > 0:
        v -= 1
    else:
        v = 5
    tl.store(x_ptr, v)


@eggpu.jit
def inner_only(x_ptr):
    v = tl.load(x_ptr)
    while v > 0:
        w = v * 2
        v -= 1
    tl.store(x_ptr, w)


def _error(fn, *args):
    with pytest.raises(KernelCompileError) as ei:
        fn.specialize(*args).ir()
    return ei.value


def _line_of(fn, marker):
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, ln in enumerate(lines) if marker in ln)


@pytest.mark.parametrize("fn,marker,problem", [
    (forever, "while True", "the condition of this while loop is always true at compile time "
                            "(the compile-time bool True), so the loop would never end"),
    (block_cond, "while v > 0", "the condition of a while loop must be a scalar, got a block (bool[4])"),
    (while_else, "v = 5", "while ... else is not supported in a kernel"),
    (inner_only, "tl.store(x_ptr, w)", "w is assigned inside the while loop at line"),
], ids=["always-true", "block", "else", "inner-variable"])
def test_while_errors(fn, marker, problem):
    err = _error(fn, np.zeros(4, np.int32))
    head, source, caret = str(err).splitlines()[:3]
    assert problem in head
    assert f":{_line_of(fn, marker)}:" in head
    assert marker.strip() in source and caret.strip() == "^"
