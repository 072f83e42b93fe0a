"""The SASS-calibrated cost table (optimizer/cost.py CALIBRATION) and the per-thread cost."""

from __future__ import annotations

from dataclasses import replace

import pytest

from eggpu.ir import BlockType, Builder, bool_, f32, i32, parse_function, pointer
from eggpu.ir.errors import EggpuError
from eggpu.optimizer import cost
from eggpu.optimizer.cost import CostModel
from eggpu.optimizer.thread_cost import GROUPS, thread_terms

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
        assert set(table) <= set(GROUPS) - {"int_simple"}


def test_thread_cost_counts_lanes_per_thread():
    b = Builder("k", [("x", pointer(f32))])
    p = b.op("addptr", b.op("splat", b.param("x"), shape=(1024,)), b.op("arange", start=0, end=1024))
    v = b.op("load", p)
    b.effect("store", p, b.op("exp", v))
    fn = b.finish()
    m = CostModel.for_target("sm_90")
    # 1024 lanes on 128 threads: every block op runs 8 lanes per thread, not 1024
    terms = thread_terms(m, fn, 128)
    assert terms["transcendental"] == pytest.approx(8 * m.transcendental["exp"])
    assert terms["memory"] == pytest.approx(2 * 8 * m.memory_thread)  # one instruction a lane, not memory_lane
    assert terms["address"] == pytest.approx(8 * m.addptr_thread) and "masked" not in terms
    assert terms["control"] == pytest.approx(m.control_thread)  # the arange: from the thread index
    assert m.thread_cost(fn, 128) == pytest.approx(sum(terms.values()))
    assert thread_terms(m, fn, 2048)["transcendental"] == pytest.approx(m.transcendental["exp"])  # >= 1 lane each


def _loop(body_op: str) -> str:
    return f"""kernel k(%x: ptr<f32>, %n: i32, %d: i32) grid=1 {{
  %0 = const() {{dtype=i32, value=0}} : i32
  %1 = const() {{dtype=i32, value=128}} : i32
  %2 = const() {{dtype=f32, value=0.0}} : f32
  %3 = splat(%2) {{shape=(128)}} : f32[128]
  %4 = arange() {{end=128, start=0}} : i32[128]
  %5 = for(%0, %n, %1, %3) : f32[128] {{
  ^(%6: i32, %7: f32[128]):
    %8 = splat(%6) {{shape=(128)}} : i32[128]
    %9 = add(%8, %4) : i32[128]
    %10 = splat(%n) {{shape=(128)}} : i32[128]
    %11 = lt(%9, %10) : bool[128]
    %12 = splat(%x) {{shape=(128)}} : ptr<f32>[128]
    %13 = addptr(%12, %9) : ptr<f32>[128]
    %14 = load(%13, %11, %3) : f32[128]
    {body_op}
  }}
  %20 = reduce_sum(%5) {{axis=0}} : f32
  %21 = addptr(%x, %0) : ptr<f32>
  store(%21, %20)
}}"""


def test_thread_cost_unrolls_loops_but_not_around_convergent_ops():
    m = CostModel.for_target("sm_90")
    plain = parse_function(_loop("%15 = add(%7, %14) : f32[128]\n    yield(%15)"))
    t = thread_terms(m, plain, 128)
    # the loop body counts loop_unroll times: one add, one compare, one masked load a lane
    assert t["float_simple"] == pytest.approx(m.loop_unroll) and t["int_simple"] == pytest.approx(2 * m.loop_unroll)
    assert t["masked"] == pytest.approx(m.masked_thread * m.loop_unroll)
    # the reduction after the loop: one combine a lane, a warp's shuffle tree and the cross-warp exchange
    assert t["reduce"] == pytest.approx(1.0) and t["reduce_tree"] == pytest.approx(5 * m.reduce_step + m.reduce_sync)
    assert thread_terms(m, plain, 32)["reduce_tree"] == pytest.approx(5 * m.reduce_step)  # one warp: no exchange
    assert thread_terms(replace(m, loop_unroll=1.0), plain, 128)["float_simple"] == pytest.approx(1.0)
    # a reduction inside the body makes the loop convergent: LLVM does not unroll it
    conv = parse_function(_loop("%15 = reduce_sum(%14) {axis=0} : f32\n    %16 = splat(%15) {shape=(128)} : f32[128]"
                                "\n    %17 = add(%7, %16) : f32[128]\n    yield(%17)"))
    assert thread_terms(m, conv, 128)["float_simple"] == pytest.approx(1.0)


def test_thread_cost_prices_divisions_by_constants_as_multiplies():
    def fn(divisor: str) -> str:
        return f"""kernel k(%x: ptr<i32>, %d: i32) grid=1 {{
  %0 = arange() {{end=256, start=0}} : i32[256]
  %1 = const() {{dtype=i32, value=768}} : i32
  %2 = cast(%1) {{dtype=u32}} : u32
  %3 = cast(%0) {{dtype=u32}} : u32[256]
  %4 = cast(%d) {{dtype=u32}} : u32
  %5 = splat({divisor}) {{shape=(256)}} : u32[256]
  %6 = div(%3, %5) : u32[256]
  %7 = cast(%6) {{dtype=i32}} : i32[256]
  %8 = splat(%x) {{shape=(256)}} : ptr<i32>[256]
  %9 = addptr(%8, %0) : ptr<i32>[256]
  store(%9, %7)
}}"""
    m = CostModel.for_target("sm_90")
    const = thread_terms(m, parse_function(fn("%2")), 128)
    runtime = thread_terms(m, parse_function(fn("%4")), 128)
    assert const["int_divrem_const"] == pytest.approx(2 * m.divrem_const_thread) and "int_divrem" not in const
    assert runtime["int_divrem"] == pytest.approx(2 * m.int_arith["div"] * m.unsigned_divrem)
    assert "cast" not in const  # i32 <-> u32 renames registers


def test_calibrated_thread_cost_is_the_weighted_sum_of_default_terms():
    fn = parse_function(_loop("%15 = add(%7, %14) : f32[128]\n    yield(%15)"))
    m = CostModel.for_target("sm_90")
    table = {g: 1.5 + 0.25 * i for i, g in enumerate(GROUPS) if g != "int_simple"}
    terms = thread_terms(m, fn, 128)
    assert m.scaled(table).thread_cost(fn, 128) == pytest.approx(
        sum(v * table.get(g, 1.0) for g, v in terms.items()))
