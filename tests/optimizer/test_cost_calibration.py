"""The SASS-calibrated cost table (optimizer/cost.py CALIBRATION) and the per-thread cost."""

from __future__ import annotations

import pytest

from eggpu.ir import BlockType, Builder, bool_, f32, i32, pointer
from eggpu.ir.errors import EggpuError
from eggpu.optimizer import cost
from eggpu.optimizer.cost import CostModel

BLK = BlockType(f32, (1024,))
IBLK = BlockType(i32, (1024,))
S = BlockType(i32, ())


def test_scaled_multiplies_each_group():
    m = CostModel.for_target("sm_90")
    k = m.scaled({"int_divrem": 0.5, "float_simple": 2.0, "transcendental": 0.5, "select": 3.0, "memory": 0.1,
                  "address": 0.5, "cast": 2.0, "reduce": 2.0, "int_mul": 1.5, "float_div": 1.0})
    assert k.op_cost("div", [S, S], [S]) == pytest.approx(0.5 * m.op_cost("div", [S, S], [S]))
    assert k.op_cost("rem", [S, S], [S]) == pytest.approx(0.5 * m.op_cost("rem", [S, S], [S]))
    assert k.op_cost("mul", [S, S], [S]) == pytest.approx(1.5 * m.op_cost("mul", [S, S], [S]))
    assert k.op_cost("add", [S, S], [S]) == m.op_cost("add", [S, S], [S])  # the unit never moves
    assert k.op_cost("add", [BLK, BLK], [BLK]) == pytest.approx(2 * m.op_cost("add", [BLK, BLK], [BLK]))
    assert k.op_cost("exp", [BLK], [BLK]) == pytest.approx(0.5 * m.op_cost("exp", [BLK], [BLK]))
    assert k.op_cost("where", [BlockType(bool_, (1024,)), BLK, BLK], [BLK]) == pytest.approx(
        3 * m.op_cost("where", [BlockType(bool_, (1024,)), BLK, BLK], [BLK]))
    # a reduction: its combining op's group times the reduce multiplier
    r = ([BLK], [BlockType(f32, ())], {"axis": 0})
    assert k.op_cost("reduce_sum", *r) == pytest.approx((2.0 * 1024 + m.reduce_overhead * 10) * 2.0)
    assert m.scaled({"reduce": 2.0}).op_cost("reduce_sum", *r) == pytest.approx(2 * m.op_cost("reduce_sum", *r))
    assert k.memory_lane == pytest.approx(1.0) and k.addptr_lane == pytest.approx(1.0) and k.cast_lane == 2.0
    assert m.int_arith["div"] == 20.0  # the original model is not mutated
    with pytest.raises(EggpuError, match="unknown calibration group 'bogus'"):
        m.scaled({"bogus": 2.0})


def test_calibrated_uses_the_table_of_its_target(monkeypatch):
    monkeypatch.setattr(cost, "CALIBRATION", {"sm_90": {"int_divrem": 0.5}})
    assert CostModel.for_target("sm_90", calibrated=True).int_arith["div"] == 10.0
    assert CostModel.for_target("sm_90").int_arith["div"] == 20.0
    assert CostModel.for_target("sm_80", calibrated=True) == CostModel.for_target("sm_80")  # no entry: unchanged


def test_every_shipped_calibration_keeps_costs_positive():
    for target, table in cost.CALIBRATION.items():
        m = CostModel.for_target(target, calibrated=True)
        assert all(v > 0 for v in [*m.int_arith.values(), *m.float_arith.values(), *m.transcendental.values()])
        assert m.memory_lane > 0 and m.select_lane > 0 and m.cast_lane > 0 and m.reduce_factor > 0, target
        assert set(table) <= {"int_mul", "int_divrem", "float_simple", "float_div", "transcendental", "select",
                              "cast", "address", "memory", "reduce"}


def test_thread_cost_counts_lanes_per_thread():
    b = Builder("k", [("x", pointer(f32))])
    p = b.op("addptr", b.op("splat", b.param("x"), shape=(1024,)), b.op("arange", start=0, end=1024))
    v = b.op("load", p)
    b.effect("store", p, b.op("exp", v))
    fn = b.finish()
    m = CostModel.for_target("sm_90")
    # 1024 lanes on 128 threads: every block op costs 8 lanes' worth, not 1024
    assert m.thread_cost(fn, 128) == pytest.approx(m.function_cost(fn) * 8 / 1024)
    assert m.thread_cost(fn, 2048) == pytest.approx(m.function_cost(fn) / 1024)  # at least one lane each
