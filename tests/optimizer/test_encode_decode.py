"""IR <-> egglog: encoding covers every pure op, decoding rebuilds well-formed, equivalent IR.

Decoding is exercised through ``optimize(..., shipped_rules=False)`` with no rules (the e-graph
then holds exactly the input's terms) and with small test rules; the decoder's leaf scoping is
tested with an extractor that deliberately prefers a value that is not available yet.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from eggpu.ir import (
    OPS,
    Builder,
    Function,
    bf16,
    bool_,
    f16,
    f32,
    i32,
    i64,
    pointer,
    scalar,
    u64,
    verify,
)
from eggpu.ir.interp import interpret
from eggpu.ir.ops import ELEMENTWISE, FLOAT, NUM
from eggpu.ir.structural import first_difference
from eggpu.optimizer import optimize
from eggpu.optimizer.decode import Decoder, clone
from eggpu.optimizer.encode import encode
from eggpu.optimizer.extract import Extraction, TypedGraph, extract, mark_original, read_egraph
from eggpu.optimizer.schema import CONSTRUCTORS, schema_text

PTR_DTYPES = (bool_, i32, i64, u64, f32, f16, bf16)


def _builder(name: str, extra=()) -> Builder:
    return Builder(name, [(f"p_{d.name}", pointer(d)) for d in PTR_DTYPES] + list(extra))


def _offsets(b: Builder, shape):
    if len(shape) == 1:
        return b.op("arange", start=0, end=shape[0])
    m, n = shape
    rows = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=m), axis=1), shape=shape)
    cols = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=n), axis=0), shape=shape)
    return b.op("add", b.op("mul", rows, b.op("splat", b.const(n, i32), shape=shape)), cols)


def _ptr(b: Builder, dt, shape):
    p = b.param(f"p_{dt.name}")
    if not shape:
        return p
    return b.op("addptr", b.op("splat", p, shape=shape), _offsets(b, shape))


def _store(b: Builder, v):
    b.effect("store", _ptr(b, v.type.dtype, v.type.shape), v)


def all_pure_ops_program() -> Function:
    """A kernel that uses every pure op of the op table (and stores every result)."""
    b = _builder("every_op")
    s4 = (4,)
    xi = b.op("load", _ptr(b, i32, s4))
    yi = b.op("load", _ptr(b, i32, s4))
    xf = b.op("load", _ptr(b, f32, s4))
    yf = b.op("load", _ptr(b, f32, s4))
    outs = [b.op("program_id", axis=0), b.op("num_programs", axis=0)]
    for name in ("add", "sub", "mul", "div", "rem", "minimum", "maximum", "and", "or", "xor", "shl", "shr", "mulhi"):
        outs.append(b.op(name, xi, yi))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        outs.append(b.op(name, xi, yi))
    for name in ("neg", "not", "abs", "popc", "clz", "ffs", "brev"):
        outs.append(b.op(name, xi))
    for name in ("add", "sub", "mul", "div", "rem", "minimum", "maximum", "atan2", "pow", "hypot"):
        outs.append(b.op(name, xf, yf))
    for name in (n for n, d in OPS.items()  # every unary float op of the op table
                 if ELEMENTWISE in d.traits and d.arity == (1, 1) and not d.attrs and d.family in (FLOAT, NUM)):
        outs.append(b.op(name, xf))
    outs.append(b.op("fma", xf, yf, xf))
    outs.append(b.op("where", b.op("lt", xf, yf), xf, yf))
    outs.append(b.op("cast", xi, dtype=f32))
    outs.append(b.op("cast", xf, dtype=f16))
    outs.append(b.op("bitcast", xf, dtype=i32))
    outs.append(b.op("libdevice", xf, xi, symbol="__nv_ldexpf"))  # a generic libdevice call (symbol kept)
    outs.append(b.op("libdevice", xf, symbol="__nv_float2int_rd"))
    sq = b.op("broadcast", b.op("expand_dims", xf, axis=0), shape=(4, 4))
    outs += [sq, b.op("reshape", sq, shape=(16,)), b.op("trans", sq, perm=(1, 0))]
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin"):
        outs.append(b.op(name, sq, axis=1))
    outs.append(b.op("dot", sq, sq))
    outs.append(b.op("dot", sq, sq, b.op("trans", sq, perm=(1, 0))))
    outs.append(b.op("dot", sq, sq, precision="tf32"))  # must not merge with the exact dot above
    outs.append(b.op("splat", b.const(-0.0, f32), shape=s4))
    # a pointer's address and back (int_to_ptr/ptr_to_int); only the loaded values are stored, as
    # the addresses differ from run to run
    addresses = b.op("ptr_to_int", _ptr(b, f32, s4), dtype=u64)
    outs.append(b.op("load", b.op("int_to_ptr", addresses, dtype=f32)))
    outs.append(b.op("gather", sq, b.op("trans", b.op("cast", sq, dtype=i32), perm=(1, 0)), axis=1))
    outs += [b.const(float("nan"), f32), b.const(2**64 - 1, u64), b.const(-(2**63), i64), b.const(True, bool_),
             b.const(0.1, f16), b.const(-1.5, bf16)]
    for v in outs:
        _store(b, v)
    return b.finish()


def _args(fn: Function, rng: np.random.Generator, n: int = 64):
    out = []
    for p in fn.params:
        dt = p.type.dtype
        if not p.type.is_pointer:
            out.append(True if dt.is_bool else (1.5 if dt.is_float else 3))
        elif dt.is_float:
            out.append(rng.standard_normal(n).astype(dt.np))
        elif dt.is_bool:
            out.append(rng.integers(0, 2, n).astype(bool))
        else:
            out.append(rng.integers(1, 9, n).astype(dt.np))
    return out


def _run(fn: Function, grid=2, seed=0):
    args = _args(fn, np.random.default_rng(seed))
    interpret(fn, grid, *args)
    return [a for a in args if isinstance(a, np.ndarray)]


def _same_outputs(a, b) -> bool:
    for x, y in zip(a, b):
        if x.dtype.kind in "iub":
            if not np.array_equal(x, y):
                return False
        elif not np.array_equal(x.astype(np.float64), y.astype(np.float64), equal_nan=True):
            return False
    return True


def test_every_pure_op_has_a_constructor_in_the_encoding():
    fn = all_pure_ops_program()
    enc = encode(fn)
    used = {line.split(" ", 3)[2].lstrip("(") for line in enc.commands.splitlines()}
    pure = {o for o, d in OPS.items() if d.is_pure}
    covered = {CONSTRUCTORS[c].op for c in used if c in CONSTRUCTORS}
    assert pure <= covered, sorted(pure - covered)
    # the schema accepts every command
    from egglog.bindings import EGraph

    eg = EGraph()
    eg.run_program(*eg.parse_program(schema_text() + enc.commands))


def test_roundtrip_without_rules_is_identity_up_to_order():
    fn = all_pure_ops_program()
    before_text = str(fn)
    res = optimize(fn, rules=[], shipped_rules=False)
    assert not res.fell_back, res.reason
    assert res.validation is not None and res.validation.ok
    assert str(fn) == before_text, "the input was mutated"
    assert res.function is not fn
    verify(res.function)
    assert res.function.op_count() == fn.op_count()
    assert _same_outputs(_run(fn), _run(res.function))
    # normalizing twice is stable: same ops in the same order
    again = optimize(res.function, rules=[], shipped_rules=False)
    assert first_difference(again.function, res.function) is None


def test_tf32_and_exact_dots_of_the_same_blocks_stay_distinct():
    b = _builder("dots")
    sq = b.op("load", _ptr(b, f32, (4, 4)))
    exact, tf32 = b.op("dot", sq, sq), b.op("dot", sq, sq, precision="tf32")
    _store(b, b.op("sub", exact, tf32))
    fn = b.finish()
    assert '"ieee"' in encode(fn).commands and '"tf32"' in encode(fn).commands
    res = optimize(fn, shipped_rules=True)
    assert not res.fell_back, res.reason
    dots = [op for op in res.function.walk() if op.op == "dot"]
    assert sorted(op.attrs.get("precision", "-") for op in dots) == ["-", "tf32"]  # the default stays implicit


def test_constants_decode_with_their_dtype_and_exact_value():
    b = _builder("consts")
    vals = [(float("nan"), f32), (-0.0, f32), (0.1, f16), (-1.5, bf16), (2**64 - 1, u64), (-(2**63), i64),
            (True, bool_), (7, i32)]
    for v, dt in vals:
        _store(b, b.const(v, dt))
    fn = b.finish()
    res = optimize(fn, rules=[], shipped_rules=False)
    got = [op.attrs for op in res.function.walk() if op.op == "const"]
    assert len(got) == len(vals)
    for (v, dt), attrs in zip(vals, got):
        assert attrs["dtype"] == dt
        if dt.is_float:
            want = float(np.asarray(v).astype(dt.np).astype(np.float64))
            g = attrs["value"]
            assert (math.isnan(g) and math.isnan(want)) or struct.pack("<d", g) == struct.pack("<d", want)
        else:
            assert attrs["value"] == v and type(attrs["value"]) is type(v if not dt.is_bool else True)


def test_rule_created_constant_decodes_as_typed_const(tmp_path):
    rules = tmp_path / "r.egg"
    rules.write_text('(rewrite (Mul t x (Splat t s (Const t 8))) (Shl t x (Splat t s (Const t 3))) '
                     ':when ((IsInt t)) :name "t-mul8")\n')
    b = _builder("mul8")
    x = b.op("load", _ptr(b, i64, (4,)))
    _store(b, b.op("mul", x, b.op("splat", b.const(8, i64), shape=(4,))))
    fn = b.finish()
    res = optimize(fn, rules=[rules], shipped_rules=False)
    assert res.rule_hits == {"t-mul8": 1}
    consts = [op.attrs for op in res.function.walk() if op.op == "const"]
    assert {"value": 3, "dtype": i64} in consts
    assert any(op.op == "shl" for op in res.function.walk())


def _loop_program() -> Function:
    """Outer values used inside a loop body and inside both branches of an if."""
    b = _builder("loops", [("n", scalar(i32))])
    n = b.param("n")
    xp = _ptr(b, f32, (4,))
    x = b.op("load", xp)
    scale = b.op("mul", b.op("splat", b.const(2.0, f32), shape=(4,)), x)  # used inside the loop
    zero, one = b.const(0, i32), b.const(1, i32)
    with b.region([scalar(i32), x.type]) as body:
        i, acc = body.args
        inner = b.op("add", acc, scale)
        cond = b.op("lt", i, b.const(2, i32))
        with b.region([]) as then:
            b.yield_(b.op("mul", inner, b.op("splat", b.const(1.0, f32), shape=(4,))))
        with b.region([]) as els:
            b.yield_(b.op("sub", inner, scale))
        r = b.if_(cond, then, els, [x.type]).results[0]
        b.yield_(r)
    loop = b.for_(zero, n, one, [x], body)
    b.effect("store", xp, loop.results[0])
    return b.finish()


def test_regions_decode_with_outer_values_materialized_first(tmp_path):
    fn = _loop_program()
    enc = encode(fn)
    assert len(enc.regions) == 4  # body, loop body, then, else
    res = optimize(fn, rules=[], shipped_rules=False)
    assert not res.fell_back, res.reason
    verify(res.function)
    outer = res.function.body.ops
    loop_index = next(i for i, op in enumerate(outer) if op.op == "for")
    assert any(op.op == "mul" for op in outer[:loop_index]), "the loop-invariant product stays outside"
    for grid, seed in ((1, 0), (3, 1)):
        args_a = _args(fn, np.random.default_rng(seed))
        args_b = [a.copy() if isinstance(a, np.ndarray) else a for a in args_a]
        args_a[-1] = args_b[-1] = 3
        interpret(fn, grid, *args_a)
        interpret(res.function, grid, *args_b)
        assert _same_outputs([a for a in args_a if isinstance(a, np.ndarray)],
                             [a for a in args_b if isinstance(a, np.ndarray)])


def test_clone_is_structurally_equal_and_independent():
    fn = _loop_program()
    c = clone(fn)
    assert first_difference(c, fn) is None
    assert c is not fn and c.body is not fn.body


def test_decoder_never_uses_a_load_before_it_happens(tmp_path):
    """Two classes merged by a rule (x ^ x == y ^ y, both 0): the root stored first must not be
    rebuilt from the load that happens after that store, even if extraction prefers it."""
    from egglog.bindings import EGraph

    rules = tmp_path / "r.egg"
    rules.write_text('(rewrite (Xor t x x) (Const t 0) :when ((IsInt t)) :name "t-xor-self")\n')
    b = _builder("scoping")
    a = b.op("load", b.param("p_i32"))
    b.effect("store", b.param("p_i64"), b.op("cast", b.op("xor", a, a), dtype=i64))
    later = b.op("load", b.param("p_i32"))
    b.effect("store", b.param("p_u64"), b.op("cast", b.op("xor", later, later), dtype=u64))
    fn = b.finish()

    from eggpu.optimizer import prepare_rules
    from eggpu.optimizer.cost import CostModel
    from eggpu.optimizer.saturate import Limits, saturate

    prepared = prepare_rules([rules], shipped_rules=False)
    enc = encode(fn)
    eg = EGraph()
    eg.run_program(*eg.parse_program(schema_text() + prepared.program + enc.commands))
    saturate(eg, prepared.rulesets, Limits())
    view = read_egraph(eg, enc.let_types)
    mark_original(view, enc.structure)
    seeds: dict[int, list] = {}
    for name, c in view.lets.items():
        seeds.setdefault(c, []).append(enc.let_types[name])
    # make the constant expensive so the xor nodes are the candidates
    from dataclasses import replace

    model = replace(CostModel.for_target("sm_90"), const_cost=100.0)
    tg = TypedGraph(view, seeds, {i: lf.type for i, lf in enc.leaves.items()}, model)
    later_leaf = enc.leaf_of[id(later)]
    calls = []

    def greedy_for_later(tg_, roots, leaf_ok) -> Extraction:
        ex = extract(tg_, roots, leaf_ok)
        calls.append(leaf_ok(later_leaf))
        if leaf_ok(later_leaf):  # prefer the xor of the later load wherever allowed
            for slot, tns in tg_.tnodes.items():
                for tn in tns:
                    if tn.node.ctor == "Xor" and any(
                            t.node.leaf == later_leaf for c in tn.children for t in tg_.tnodes.get(c, ())):
                        ex.choice[slot] = tn
        return ex

    dec = Decoder(enc, tg, view.lets, extractor=greedy_for_later)
    dec.prepare()
    out = dec.run()
    verify(out)
    assert calls[0] is True and False in calls, "a restricted re-extraction must have happened"
    assert _same_outputs(_run(fn), _run(out))


def test_unknown_op_counts_are_rejected_by_the_encoder():
    from eggpu.ir.errors import EggpuError
    from eggpu.optimizer.encode import op_term

    b = _builder("bad")
    x = b.op("load", _ptr(b, f32, (4,)))
    op = b.op("neg", x).owner
    op.op = "load"  # not a pure op: no constructor
    with pytest.raises(EggpuError, match="encode"):
        op_term(op, ["$v0"])
