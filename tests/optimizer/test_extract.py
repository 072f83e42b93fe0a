"""Typed, DAG-aware extraction on small hand-built e-graphs, and the cost model."""

from __future__ import annotations

import pytest

from eggpu.ir import BlockType, Builder, f32, f64, i8, i32, i64, pointer
from eggpu.ir.errors import EggpuError
from eggpu.optimizer.cost import CostModel
from eggpu.optimizer.extract import (
    EGraphView,
    ENode,
    ExtractionError,
    TNode,
    TypedGraph,
    _topo,
    dag_cost,
    extract,
    greedy_dag_extract,
    tree_extract,
)
from eggpu.optimizer.schema import CONSTRUCTORS

BLK = BlockType(f32, (128,))
SCALAR = BlockType(f32, ())
MODEL = CostModel.for_target("sm_90")


def node(ctor, cls, children=(), dts=(f32,), attrs=None, leaf=None) -> ENode:
    return ENode(ctor, CONSTRUCTORS[ctor], tuple(dts), dict(attrs or {}), tuple(children), cls, leaf)


def graph(nodes, seeds, leaf_types) -> TypedGraph:
    class_nodes: dict[int, list[ENode]] = {}
    for n in nodes:
        class_nodes.setdefault(n.eclass, []).append(n)
    view = EGraphView(list(nodes), class_nodes, {}, 1 + max(n.eclass for n in nodes))
    return TypedGraph(view, seeds, leaf_types, MODEL)


def leaf(cls, lid, dt=f32):
    return node("Opaque", cls, dts=(dt,), leaf=lid)


def test_dag_extraction_pays_a_shared_subterm_once():
    # R = {X * X, Y * Z}; X = erf(A) (expensive, 2048); Y = tanh(A), Z = tanh(B) (1280 each).
    # Tree cost prefers Y * Z (2688 < 4224); counting X once, X * X costs 2176 and wins.
    nodes = [leaf(0, 0), leaf(1, 1), node("Erf", 2, [0]), node("Tanh", 3, [0]), node("Tanh", 4, [1]),
             node("Mul", 5, [2, 2]), node("Mul", 5, [3, 4])]
    tg = graph(nodes, {5: [BLK]}, {0: BLK, 1: BLK})
    root = tg.slot_id(5, BLK)
    tree = tree_extract(tg, [root], lambda _i: True)
    assert tree[root].node.children == (3, 4)
    dag = greedy_dag_extract(tg, [root], lambda _i: True)
    assert dag[root].node.children == (2, 2)
    ex = extract(tg, [root])
    assert ex.method == "greedy-dag"
    assert ex.cost == pytest.approx(MODEL.op_cost("mul", [BLK, BLK], [BLK]) + MODEL.op_cost("erf", [BLK], [BLK]),
                                    rel=1e-5)
    assert ex.cost < dag_cost(tree, [root])


def test_extraction_never_chooses_a_cycle():
    # class 1 = {neg(class 2), abs(A)}, class 2 = {neg(class 1)}: neg(neg(...)) loops forever.
    nodes = [leaf(0, 0), node("Neg", 1, [2]), node("Abs", 1, [0]), node("Neg", 2, [1])]
    tg = graph(nodes, {1: [BLK], 2: [BLK]}, {0: BLK})
    ex = extract(tg, [(2, BLK)])
    order = ex.dag_nodes()
    assert [tn.node.ctor for tn in order] == ["Opaque", "Abs", "Neg"]
    # a cyclic choice is refused, never returned
    by_ctor = {(tn.node.ctor, tn.node.eclass): tn for tns in tg.tnodes.values() for tn in tns}
    s1, s2 = tg.slot_id(1, BLK), tg.slot_id(2, BLK)
    cyclic = {s1: by_ctor[("Neg", 1)], s2: by_ctor[("Neg", 2)]}
    with pytest.raises(ExtractionError, match="cycle"):
        _topo(cyclic, [s2])
    assert dag_cost(cyclic, [s2]) == float("inf")


def test_a_class_holding_a_scalar_and_a_block_is_extracted_per_type():
    # x - x (a block) and the scalar constant 0 are lane-wise equal: one e-class, two slots.
    nodes = [leaf(0, 0, i32), node("Sub", 1, [0, 0], dts=(i32,)), node("Const", 1, dts=(i32,), attrs={"value": 0, "dtype": i32})]
    iblk, iscalar = BlockType(i32, (128,)), BlockType(i32, ())
    tg = graph(nodes, {1: [iblk, iscalar]}, {0: iblk})
    assert extract(tg, [(1, iblk)]).choice[tg.slot_id(1, iblk)].node.ctor == "Sub"
    assert extract(tg, [(1, iscalar)]).choice[tg.slot_id(1, iscalar)].node.ctor == "Const"


def test_ill_typed_nodes_are_not_extractable():
    a = leaf(0, 0, f32)
    wrong_dt = node("Add", 1, [0, 0], dts=(f64,))  # DT argument disagrees with the operands
    tg = graph([a, wrong_dt], {1: [BLK]}, {0: BLK})
    assert tg.tnodes.get(tg.slot_id(1, BLK)) is None and tg.untypable >= 1
    with pytest.raises(ExtractionError):
        extract(tg, [(1, BLK)])
    # an integer constant outside its dtype's range (e.g. from a careless folding rule)
    big = node("Const", 2, dts=(i8,), attrs={"value": 300, "dtype": i8})
    tg = graph([big], {2: [BlockType(i8, ())]}, {})
    with pytest.raises(ExtractionError):
        extract(tg, [(2, BlockType(i8, ()))])


def test_leaf_filter_excludes_unavailable_values():
    # class 2 = {A + A, B + B}; with B filtered out only A + A is possible
    nodes = [leaf(0, 0), leaf(1, 1), node("Add", 2, [0, 0]), node("Add", 2, [1, 1]), node("Exp", 0, [1])]
    tg = graph(nodes, {2: [BLK]}, {0: BLK, 1: BLK})
    ex = extract(tg, [(2, BLK)], lambda lid: lid != 1)
    assert all(tn.node.leaf != 1 for tn in ex.dag_nodes())
    with pytest.raises(ExtractionError):
        extract(tg, [(2, BLK)], lambda lid: False)


def test_original_nodes_win_cost_ties():
    nodes = [leaf(0, 0), leaf(1, 1), node("Mul", 2, [0, 1]), node("Mul", 2, [1, 0])]
    nodes[3].original = True
    tg = graph(nodes, {2: [BLK]}, {0: BLK, 1: BLK})
    assert extract(tg, [(2, BLK)]).choice[tg.slot_id(2, BLK)].node is nodes[3]


def test_extraction_result_lists_children_before_parents():
    nodes = [leaf(0, 0), node("Exp", 1, [0]), node("Log", 2, [1]), node("Add", 3, [2, 1])]
    tg = graph(nodes, {3: [BLK]}, {0: BLK})
    order = extract(tg, [(3, BLK)]).dag_nodes()
    pos = {tn.node.eclass: i for i, tn in enumerate(order)}
    assert pos[0] < pos[1] < pos[2] < pos[3]
    assert all(isinstance(tn, TNode) for tn in order)


# ---------------------------------------------------------------------- cost model


def test_cost_model_orders_the_usual_suspects():
    m = CostModel.for_target("sm_90")
    s = [BlockType(i32, ())] * 2
    assert m.op_cost("div", s, s[:1]) > 10 * m.op_cost("shl", s, s[:1])
    assert m.op_cost("rem", s, s[:1]) > 10 * m.op_cost("and", s, s[:1])
    assert m.op_cost("mul", s, s[:1]) > m.op_cost("shl", s, s[:1])
    fs = [SCALAR]
    assert m.op_cost("exp", fs, fs) > 3 * m.op_cost("add", fs * 2, fs)
    assert m.op_cost("erf", fs, fs) > m.op_cost("exp", fs, fs)
    # a block op costs numel times the scalar op
    assert m.op_cost("add", [BLK, BLK], [BLK]) == pytest.approx(128 * m.op_cost("add", fs * 2, fs))
    # shape ops and constants are cheap
    assert m.op_cost("splat", fs, [BLK]) < m.op_cost("add", [BLK, BLK], [BLK]) / 10
    assert m.op_cost("const", [], [SCALAR], {"value": 1.0, "dtype": f32}) < 0.1
    # 64-bit integer arithmetic is emulated
    l2 = [BlockType(i64, ())] * 2
    assert m.op_cost("add", l2, l2[:1]) > m.op_cost("add", s, s[:1])


def test_cost_model_targets():
    assert CostModel.for_target("sm_80").f64_factor < CostModel.for_target("sm_89").f64_factor
    for bad in ("sm_50", "gfx90a", "sm_91"):
        with pytest.raises(EggpuError, match="target"):
            CostModel.for_target(bad)
    # every spelling of a target (eggpu.ir.targets) prices programs the same way
    for alias in ("90", "SM90", "compute_90"):
        assert CostModel.for_target(alias) == CostModel.for_target("sm_90")


def test_function_cost_counts_every_op():
    b = Builder("k", [("x", pointer(f32))])
    p = b.op("addptr", b.op("splat", b.param("x"), shape=(128,)), b.op("arange", start=0, end=128))
    v = b.op("load", p)
    b.effect("store", p, b.op("exp", v))
    fn = b.finish()
    m = CostModel.for_target("sm_90")
    total = sum(m.op_cost(op.op, [o.type for o in op.operands], [r.type for r in op.results], op.attrs)
                for op in fn.walk())
    assert m.function_cost(fn) == pytest.approx(total)
    assert m.function_cost(fn) > m.op_cost("exp", [BLK], [BLK])
