"""Differential fuzzing: random well-typed kernels (``fuzzgen``) run through the reference
interpreter, ``eggpu.compile(..., optimize=False).run_cpu`` and ``eggpu.compile(...,
optimize=True).run_cpu``, compared bit-exactly (NaN == NaN) except where the op table allows a
tolerance (``fuzzrun``'s docstring has the rules).

* the default suite runs a bounded, seeded campaign (:data:`CI_PROGRAMS` programs);
* ``-m slow`` runs ``EGGPU_FUZZ_PROGRAMS`` programs (default 10,000) from seed
  ``EGGPU_FUZZ_SEED`` (default 100,000) in chunks of :data:`CHUNK` (one test per chunk, so
  progress shows), and a quarter as many in the generator's focused mode (ops with attributes,
  FP8, composites four times as often);
* a seed reproduces a program and its inputs: ``python tests/fuzz/fuzzrun.py SEED 1``.
"""

from __future__ import annotations

import collections
import os

import fuzzgen
import fuzzrun
import numpy as np
import pytest

CI_PROGRAMS = 30
CHUNK = 250
SLOW_PROGRAMS = int(os.environ.get("EGGPU_FUZZ_PROGRAMS", "10000"))
SLOW_SEED = int(os.environ.get("EGGPU_FUZZ_SEED", "100000"))


def test_bounded_campaign():
    failed, stats = fuzzrun.campaign(range(CI_PROGRAMS))
    fuzzrun.assert_no_mismatch(failed, stats, "mismatching")
    assert stats["programs"] == CI_PROGRAMS
    # the optimized kernel is compared on every program, those reaching the total semantics'
    # edge cases (division by zero, out-of-range shifts, ...) included
    assert stats["optimized_compared"] == CI_PROGRAMS, stats
    assert stats["edge_case_runs"] > 0, stats


@pytest.mark.slow
@pytest.mark.parametrize("start", range(SLOW_SEED, SLOW_SEED + SLOW_PROGRAMS, CHUNK))
def test_long_campaign(start):
    failed, stats = fuzzrun.campaign(range(start, min(start + CHUNK, SLOW_SEED + SLOW_PROGRAMS)))
    fuzzrun.assert_no_mismatch(failed, stats, "mismatching")


@pytest.mark.slow
@pytest.mark.parametrize("start", range(SLOW_SEED, SLOW_SEED + SLOW_PROGRAMS // 4, CHUNK))
def test_long_focused_campaign(start):
    """A quarter as many programs again, focused on the ops with attributes, FP8 and the composites."""
    failed, stats = fuzzrun.campaign(range(start, min(start + CHUNK, SLOW_SEED + SLOW_PROGRAMS // 4)), focus=True)
    fuzzrun.assert_no_mismatch(failed, stats, "mismatching")


def test_generation_is_deterministic_and_covers_the_op_families():
    from eggpu.ir.printer import print_function

    assert print_function(fuzzgen.generate(7).fn) == print_function(fuzzgen.generate(7).fn)
    a1, a2 = (fuzzgen.make_args(fuzzgen.generate(7), 7) for _ in range(2))
    assert [np.asarray(x).tobytes() for x in a1] == [np.asarray(x).tobytes() for x in a2]
    ops: collections.Counter = collections.Counter()
    dtypes, tolerant, ragged = set(), 0, 0
    for seed in range(CI_PROGRAMS):
        prog = fuzzgen.generate(seed)
        ops.update(op.op for op in prog.fn.walk())
        dtypes.update(str(p.type.dtype) for p in prog.fn.params)
        tolerant += bool(prog.tolerances)
        ragged += fuzzgen.make_args(prog, seed)[len(prog.in_dtypes) + len(prog.scalar_dtypes)] < prog.total
    must = {"add", "mul", "div", "rem", "shl", "shr", "and", "where", "cast", "bitcast", "load", "store",
            "program_id", "reduce_max", "reduce_argmin", "broadcast", "lt", "fma"}
    assert must <= set(ops), must - set(ops)
    assert {"i8", "u64", "f16", "bf16", "f64", "bool"} <= dtypes
    assert tolerant >= 3 and ragged >= CI_PROGRAMS // 4


def test_every_op_is_drawn_or_excluded_with_a_reason():
    """A new op of the table must be drawn by the generator or excluded here with a reason."""
    from eggpu.ir.ops import OPS

    assert not fuzzgen.DRAWN_OPS & set(fuzzgen.EXCLUDED_OPS), fuzzgen.DRAWN_OPS & set(fuzzgen.EXCLUDED_OPS)
    missing = set(OPS) - fuzzgen.DRAWN_OPS - set(fuzzgen.EXCLUDED_OPS)
    assert not missing, f"ops neither drawn by tests/fuzz/fuzzgen.py nor in its EXCLUDED_OPS: {sorted(missing)}"
    assert not (fuzzgen.DRAWN_OPS | set(fuzzgen.EXCLUDED_OPS)) - set(OPS)  # no stale names
    assert all(len(why) > 20 for why in fuzzgen.EXCLUDED_OPS.values())


def _features(prog) -> set[str]:
    """What a program exercises beyond the plain elementwise ops: ops with attributes, each
    libdevice symbol, FP8 dtypes, composites, volatile loads, dot precisions."""
    feats: set[str] = {f"composite:{c}" for c in prog.composites}
    for op in prog.fn.walk():
        feats.add(op.op)
        if op.op == "libdevice":
            feats.add(f"symbol:{op.attrs['symbol']}")
        if op.op == "load" and op.attrs.get("volatile"):
            feats.add("volatile")
        if op.op == "dot":
            feats.add(f"dot:{op.attrs.get('precision', 'ieee')}:{op.operands[0].type.dtype}")
        for v in (*op.operands, *op.results):
            if v.type.dtype.is_fp8:
                feats.add(f"fp8:{v.type.dtype}")
    return feats


def _seen(seeds) -> collections.Counter:
    seen: collections.Counter = collections.Counter()
    for seed in seeds:
        seen.update(_features(fuzzgen.generate(seed)))
    return seen


def test_the_generator_draws_every_drawn_op_and_the_new_features():
    from eggpu.ir.dtypes import FP8_DTYPES
    from eggpu.ir.ops import transcendental_ops

    seen = _seen(range(500))  # generation only (no compile): a few seconds
    # transcendental ops are drawn by name only as tolerant outputs (rarer): checked as a list
    assert set(fuzzgen._TRANSCENDENTAL) == set(transcendental_ops())
    assert any(op in seen for op in fuzzgen._TRANSCENDENTAL)
    unseen = fuzzgen.DRAWN_OPS - set(seen) - set(fuzzgen._TRANSCENDENTAL)
    assert not unseen, sorted(unseen)
    assert {f"composite:{c}" for c in fuzzgen.COMPOSITES} <= set(seen)
    assert {f"fp8:{d}" for d in FP8_DTYPES} | {"volatile", "dot:tf32:f32", "dot:ieee:i8"} <= set(seen)
    symbols = {f[len("symbol:"):] for f in seen if f.startswith("symbol:")}
    assert symbols <= set(fuzzgen.LIBDEVICE_SYMBOLS)
    # about 400 libdevice draws over ~190 symbols: most symbols occur (the campaigns draw them all)
    assert len(symbols) >= 0.6 * len(fuzzgen.LIBDEVICE_SYMBOLS), sorted(set(fuzzgen.LIBDEVICE_SYMBOLS) - symbols)


def covering_seeds(start: int, features: set[str]) -> list[int]:
    """Seeds from ``start`` on, greedily, until every feature of ``features`` occurs in one."""
    todo, seeds, seed = set(features), [], start
    while todo:
        hit = _features(fuzzgen.generate(seed)) & todo
        if hit:
            seeds.append(seed)
            todo -= hit
        seed += 1
        assert seed < start + 5000, f"no seed draws {sorted(todo)}"
    return seeds


NEW_DRAWS = ({"libdevice", "gather", "dot", "num_programs", "volatile", "atomic_add", "atomic_cas", "atomic_max"}
             | {f"fp8:{d}" for d in ("fp8e4nv", "fp8e5", "fp8e4b15")}
             | {f"composite:{c}" for c in fuzzgen.COMPOSITES})


def test_bounded_campaign_of_the_new_draws():
    """The ops with attributes, FP8 storage and the composite functions, each in at least one
    program (about 20 programs: a few seconds)."""
    seeds = covering_seeds(5000, NEW_DRAWS)
    assert len(seeds) <= 25, seeds
    failed, stats = fuzzrun.campaign(seeds)
    fuzzrun.assert_no_mismatch(failed, stats, "mismatching")


def test_edge_values_are_drawn():
    from eggpu.ir import f32, i32, u8

    rng = np.random.default_rng(0)
    ints = fuzzgen.values(i32, 2000, rng)
    assert {0, -1, int(i32.min), int(i32.max), 32, 33} <= set(ints.tolist())
    assert (ints < 0).any() and (fuzzgen.values(u8, 500, rng) == 255).any()
    fl = fuzzgen.values(f32, 2000, rng)
    assert np.isnan(fl).any() and np.isposinf(fl).any() and np.isneginf(fl).any()
    assert ((fl == 0) & np.signbit(fl)).any() and ((fl == 0) & ~np.signbit(fl)).any()


def test_comparison_rules():
    nan, inf = float("nan"), float("inf")
    w = np.array([nan, 0.0, 1.0, inf, 1.0], np.float32)
    assert fuzzrun.same(w, np.array([-nan, 0.0, 1.0, inf, 1.0], np.float32)).all()  # any NaN == any NaN
    assert fuzzrun.same(w, np.array([nan, -0.0, 1.0, inf, np.nextafter(np.float32(1), np.float32(2))],
                                    np.float32)).tolist() == [True, False, True, True, False]
    tol = fuzzrun.same(w, np.array([nan, 0.0, 1.000001, -inf, 1.1], np.float32), (4e-6, 0.0))
    assert tol.tolist() == [True, True, True, False, False]
    assert fuzzrun.same(np.array([1, 2], np.int8), np.array([1, 3], np.int8)).tolist() == [True, False]


def test_a_wrong_result_is_reported_with_program_inputs_and_results(monkeypatch):
    """The campaign can fail: sabotage the interpreter's ``add`` and the runner must notice."""
    import dataclasses

    from eggpu.ir import ops as ir_ops

    real = ir_ops.OPS["add"]

    def off_by_one(attrs, a, b, *, dtype):
        r = real.reference(attrs, a, b, dtype=dtype)
        return r ^ np.ones_like(r) if dtype.is_int else r

    monkeypatch.setitem(ir_ops.OPS, "add", dataclasses.replace(real, reference=off_by_one))
    failed: list = []
    for seed in range(12):  # the first program whose result the sabotage changes is enough
        failed, _ = fuzzrun.campaign([seed])
        if failed:
            break
    assert failed, "a sabotaged interpreter went unnoticed"
    seed = failed[0].program.seed
    text = failed[0].report()
    assert text.startswith(f"seed {seed}: grid ") and f"kernel fuzz_{seed}(" in text
    assert "interpreter: [" in text and "compiled: [" in text and "compiled: out" in text


def test_undefined_lanes_are_detected():
    from eggpu.ir import Builder, i32, pointer, u8
    from eggpu.ir.interp import interpret

    def kernel(op, dt):
        b = Builder("ub", [("x", pointer(dt)), ("y", pointer(dt))])
        offs = b.op("arange", start=0, end=4)
        x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(4,)), offs))
        b.effect("store", b.op("addptr", b.op("splat", b.param("y"), shape=(4,)), offs), b.op(op, x, x))
        return b.finish()

    for op, dt, vals, hit in [("div", i32, [1, 2, 0, 4], True), ("div", i32, [1, 2, 3, -1], False),
                              ("shl", u8, [1, 2, 3, 7], False), ("shl", u8, [1, 2, 8, 7], True),
                              ("shr", i32, [-1, 2, 3, 4], True), ("rem", u8, [0, 1, 1, 1], True)]:
        with fuzzrun.undefined_lanes() as hits:
            interpret(kernel(op, dt), 1, np.array(vals, dt.np), np.zeros(4, dt.np))
        assert (hits == [op]) is hit, (op, dt, vals, hits)


def test_transcendental_ops_are_only_compared_with_a_tolerance():
    # libm's atan2f and the f64-rounded reference may differ by an ulp (fuzz seed 701212):
    # transcendental ops are approximate, so the generator uses them only as tolerant outputs
    from eggpu.ir.ops import OPS, Trait

    for name in fuzzgen._BINARY + fuzzgen._UNARY:
        assert not OPS[name].has(Trait.TRANSCENDENTAL), name
    assert "atan2" in fuzzgen._TRANSCENDENTAL
