"""The optimizer and ``libdevice`` calls (uninterpreted functions keyed by symbol): two equal calls
are one after optimization, calls of different symbols or operands stay apart, rules around a call
still fire, translation validation proves the result, and the optimized kernel computes what the
source does."""

from __future__ import annotations

import numpy as np

from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.interp import interpret
from eggpu.optimizer import optimize


def _kernel():
    block = 64
    b = Builder("calls", [("x", pointer(f32)), ("y", pointer(f32)), ("o", pointer(f32)), ("n", scalar(i32))])
    offs = b.op("add", b.op("splat", b.op("mul", b.op("program_id", axis=0), b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    m = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    x, y = b.op("load", at("x"), m), b.op("load", at("y"), m)
    up1 = b.op("libdevice", x, y, symbol="__nv_fadd_ru")
    up2 = b.op("libdevice", x, y, symbol="__nv_fadd_ru")  # the same call again
    down = b.op("libdevice", x, y, symbol="__nv_fadd_rd")  # another symbol: not the same value
    swapped = b.op("libdevice", y, x, symbol="__nv_fadd_ru")  # other operand order: z3 knows no commutativity
    one = b.op("splat", b.const(1.0, f32), shape=(block,))
    total = b.op("mul", b.op("add", b.op("add", up1, up2), b.op("add", down, swapped)), one)  # * 1.0: a rule fires
    b.effect("store", at("o"), total, m)
    return b.finish()


def test_equal_calls_merge_others_stay_and_validation_proves_it():
    fn = _kernel()
    res = optimize(fn)
    assert res.validation is not None and res.validation.verdict == "valid", res.validation
    calls = [op for op in res.function.walk() if op.op == "libdevice"]
    assert sorted(op.attrs["symbol"] for op in calls) == ["__nv_fadd_rd", "__nv_fadd_ru", "__nv_fadd_ru"]
    assert not any(op.op == "mul" for op in res.function.walk()), "x * 1.0 -> x around the calls"
    n = 100
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    want, got = np.zeros(n, np.float32), np.zeros(n, np.float32)
    interpret(fn, (2,), x, y, want, n)
    interpret(res.function, (2,), x, y, got, n)
    np.testing.assert_array_equal(got, want)
