"""codegen.analysis.run_of on a value DAG whose operands are shared: a chain of selects whose
conditions compare the previous value (Liger-Kernel's MoE scatter kernel has such chains) is
analysed once per value, not once per path (the walk was exponential: the compile never ended);
and the lowering emits each shared lazy value once per element, not once per path (8 levels took
32 s to lower, 9 minutes; now both are linear in the depth)."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.codegen import analysis
from eggpu.codegen.analysis import AddressAnalysis, run_of

# the analysis memo's effect shows in the number of analysis calls; the lowering's (lazy values
# re-emitted per use before Lowerer.at remembered them) in the size of the lowered module
LEVELS = 6
LIMIT = 2_000  # memoized: 114 calls; once per path: 23,469


@eggpu.jit
def select_chain(x_ptr, out_ptr, n, LEVELS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = offs
    for _ in tl.static_range(LEVELS):  # each level reads v three times: in the compare and both arms
        v = tl.where(v < n, v + 1, v - 1)
    tl.store(out_ptr + offs, tl.load(x_ptr + v, mask=(v >= 0) & (v < n), other=-1.0), mask=offs < n)


def _reference(x: np.ndarray, levels: int) -> np.ndarray:
    n = x.size
    v = np.arange(n)
    for _ in range(levels):
        v = np.where(v < n, v + 1, v - 1)
    return np.where((v >= 0) & (v < n), x[np.clip(v, 0, n - 1)], -1.0).astype(np.float32)


def test_analysis_of_a_select_chain_is_linear(monkeypatch):
    x = np.zeros(64, np.float32)
    ck = eggpu.compile(select_chain.specialize(x, x, 64, LEVELS=LEVELS, BLOCK=64), target="sm_90", optimize=False)
    facts = AddressAnalysis(ck.ir)
    calls = {"n": 0}
    inner = analysis._run_of

    def counted(*args):
        calls["n"] += 1
        if calls["n"] > LIMIT:  # walked once per path: ~3**LEVELS calls per length
            raise AssertionError("run_of walks the DAG once per path")
        return inner(*args)

    monkeypatch.setattr(analysis, "_run_of", counted)
    load = next(op for op in ck.ir.walk() if op.op == "load")
    for length in (1, 4, 16):
        run_of(load.operands[0], length, facts)
    assert 0 < calls["n"] <= LIMIT


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_select_chain_runs(n, device, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    select_chain[(-(-n // 256),)](x, out, n, LEVELS=LEVELS, BLOCK=256)
    np.testing.assert_array_equal(out, _reference(x, LEVELS))


def _lowered_lines(levels: int) -> int:
    from eggpu.codegen import lower

    x = np.zeros(64, np.float32)
    fn = select_chain.specialize(x, x, 64, LEVELS=levels, BLOCK=256).ir()
    return len(lower(fn, "sm_90").llvm_ir.splitlines())


def test_the_lowering_of_a_select_chain_is_linear():
    """Each level adds the same few instructions per element: 3 levels -> 6 at most doubles the
    lowered module (re-emitting shared operands per path made it ~3**3 times larger), and 24 levels
    lower at all."""
    three, six = _lowered_lines(3), _lowered_lines(6)
    assert six < 2 * three, (three, six)
    many = _lowered_lines(24)
    assert many < 8 * three, (three, many)
