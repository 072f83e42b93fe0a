"""The naive (Inductor-style) benchmark kernels compute what numpy computes, on ragged sizes.

Each kernel of ``bench/naive_kernels.py`` runs under ``@eggpu.jit`` as written for Triton,
through the numpy interpreter and through the compiled (optimized, translation-validated)
lowering on the CPU. Also: the cost-fit helpers of ``bench/cost_fit.py`` (rank correlation,
per-thread features, the calibration table writer).
"""

from __future__ import annotations

import numpy as np
import pytest

from bench import cost_fit
from bench.naive import BY_NAME, NAIVE, load

CASES = [(k.name, size) for k in NAIVE for size in k.sizes]


def _run(name: str, size: int) -> None:
    k = BY_NAME[name]
    case = k.make(size, np.random.default_rng(size))
    getattr(load("eggpu"), name)[case.grid](*case.args, **k.consts)
    for i, ref in case.expected.items():
        np.testing.assert_allclose(case.args[i], ref, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{name} size {size}: argument {i}")


def test_the_suite_has_at_least_ten_kernels_with_ragged_sizes():
    assert len(NAIVE) >= 10
    assert all(len(k.sizes) >= 2 and 1 in k.sizes for k in NAIVE)


@pytest.mark.parametrize(("name", "size"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_interpreted(name, size, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    _run(name, size)


@pytest.mark.parametrize(("name", "size"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_compiled_on_cpu(name, size, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    _run(name, size)


def test_load_rejects_an_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        load("cuda")


def test_triton_compiles_the_same_source():
    pytest.importorskip("triton", reason="Triton is a benchmark-only dependency")
    import inspect

    egg, tri = load("eggpu"), load("triton")
    for k in NAIVE:
        assert inspect.getsource(getattr(egg, k.name).fn) == inspect.getsource(getattr(tri, k.name).fn)


def test_spearman():
    assert cost_fit.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert cost_fit.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert cost_fit.spearman([1, 1, 2], [5, 5, 9]) == pytest.approx(1.0)  # ties get average ranks
    with pytest.raises(ValueError, match="same length"):
        cost_fit.spearman([1, 2], [1])


def test_features_count_per_thread_instructions():
    from eggpu.ir.parser import parse_function

    fn = parse_function("""kernel k(%x: ptr<i32>) grid=1 {
  %0 = arange() {end=256, start=0} : i32[256]
  %1 = splat(%x) {shape=(256)} : ptr<i32>[256]
  %2 = addptr(%1, %0) : ptr<i32>[256]
  %3 = load(%2) : i32[256]
  %4 = const() {dtype=i32, value=3} : i32
  %5 = splat(%4) {shape=(256)} : i32[256]
  %6 = add(%3, %5) : i32[256]
  %7 = rem(%6, %5) : i32[256]
  store(%2, %7)
}""")
    f = cost_fit.features(fn, "sm_90", 128)
    assert f["int_simple"] == pytest.approx(2.0)  # 256 lanes / 128 threads, cost 1 each
    assert f["int_divrem_const"] == pytest.approx(8.0)  # rem by a constant: multiply-high and shifts, 4 a lane
    assert f["memory"] == pytest.approx(4.0)  # a load and a store, one instruction a lane, unmasked
    assert f["address"] == pytest.approx(2.0) and "masked" not in f and "int_divrem" not in f


def _pts(n_kernels: int) -> list[tuple[str, dict[str, float], int]]:
    """Programs whose SASS is exactly 10 + int_simple + 3 * memory (two variants per kernel)."""
    out = []
    for i in range(n_kernels):
        for variant, extra in (("eggpu_noopt", 5.0), ("eggpu", 0.0)):
            f = {"int_simple": 7.0 * i + extra, "memory": float((5 * i) % 11 + 1)}
            out.append((f"k{i}/{variant}", f, int(10 + f["int_simple"] + 3 * f["memory"])))
    return out


def test_fit_recovers_a_known_weight_and_holdout_keeps_kernels_whole():
    pts = _pts(12)
    f = cost_fit.fit(pts)
    assert f["weights"]["memory"] == pytest.approx(3.0, rel=0.1) and f["r2"] > 0.99
    train, held = cost_fit.split(pts)
    names = lambda ps: {p[0].split("/")[0] for p in ps}  # noqa: E731
    assert names(train).isdisjoint(names(held)) and len(names(held)) == 4 and len(train) + len(held) == len(pts)
    h = cost_fit.holdout(pts)
    assert h["held_out_points"] == 8 and h["spearman_held_out_calibrated"] > 0.95
    assert h["calibration"]["memory"] == pytest.approx(3.0, rel=0.1)
    assert len(h["folds"]) == 3 and all(f["spearman_held_out_calibrated"] > 0.9 for f in h["folds"])
    held = [names(cost_fit.split(pts, k)[1]) for k in range(3)]  # the folds partition the kernels
    assert set().union(*held) == names(pts) and sum(len(x) for x in held) == 12


def test_write_table_replaces_only_the_marked_block(tmp_path):
    p = tmp_path / "cost.py"
    p.write_text("A = 1\n# BEGIN CALIBRATION (generated)\nCALIBRATION = {}\n# END CALIBRATION\nB = 2\n")
    cost_fit.write_table({"sm_90": {"memory": 0.5}}, p)
    text = p.read_text()
    assert text.startswith("A = 1\n# BEGIN CALIBRATION (generated)\nCALIBRATION: dict[str, dict[str, float]] = {")
    assert '"memory": 0.5' in text and text.endswith("# END CALIBRATION\nB = 2\n")
    p.write_text("nothing marked\n")
    with pytest.raises(SystemExit, match="no '# BEGIN CALIBRATION'"):
        cost_fit.write_table({}, p)


def _fake_results() -> dict:
    def v(sass, before=None, after=None, fired=None):
        return {"sass_instructions": sass, "ptx_lines": 10, "model_cost": float(sass), "thread_cost": float(sass),
                "thread_cost_calibrated": float(sass), "cost_before": before, "cost_after": after,
                "rules_fired": fired or {}}

    naive = {"k1": {"sm_90": {"eggpu_noopt": v(100), "eggpu": v(70, 10.0, 8.0, {"and-self": 2, "add-comm": 5}),
                              "triton": v(60)}},
             "k2": {"sm_90": {"eggpu_noopt": v(200), "eggpu": v(190, 10.0, 10.0), "triton": v(150)}}}
    lib = {"l1": {"sm_90": {"eggpu_noopt": v(50), "eggpu": v(50, 5.0, 4.0)}}}
    return {"meta": {"targets": ["sm_90"], "command": "python -m bench naive", "date": "today"},
            "naive": naive, "library": lib}


def test_summary_and_docs_section(tmp_path):
    from bench import naive_bench

    res = _fake_results()
    s = naive_bench.summarize(res)["sm_90"]
    assert (s["naive_sass_noopt"], s["naive_sass_opt"], s["naive_sass_triton"]) == (300, 260, 210)
    assert s["naive_sass_reduction"] == pytest.approx(40 / 300, abs=1e-4)
    assert s["library_cost_lowered_count"] == "1/1" and s["naive_cost_lowered_count"] == "1/2"
    assert s["library_cost_lowered_by_1_count"] == "1/1"
    assert s["cost_model_spearman"] == pytest.approx(1.0)
    assert s["rules_fired_total"] == {"add-comm": 5, "and-self": 2}
    res["summary"] = {"sm_90": s}
    md = tmp_path / "performance.md"
    md.write_text("# Performance\n\nkept\n")
    naive_bench.write_docs(res, md)
    naive_bench.write_docs(res, md)  # replaced in place, not appended twice
    text = md.read_text()
    assert text.startswith("# Performance\n\nkept\n") and text.count(naive_bench.BEGIN) == 1
    assert "300 → 260 (210): 13.3 % fewer" in text and "**missed**" in text
    assert "| k1 | 10 → 8 | 10 / 10 / 10 | 100 / 70 / 60 | and-self×2 |" in text


def test_library_beside_triton_counts_the_division_slow_path(tmp_path):
    from bench import naive_bench

    res = _fake_results()
    res["library"] = {
        "div_kernel": {"sm_90": {"eggpu": {"sass_instructions": 300, "sass_slow_path": 120},
                                 "triton_aligned": {"sass_instructions": 200}, "triton": {"sass_instructions": 210}}},
        "plain": {"sm_90": {"eggpu": {"sass_instructions": 90, "sass_slow_path": 0},
                            "triton_aligned": {"sass_instructions": 100}, "triton": {"sass_instructions": 110}}},
        "slow": {"sm_90": {"eggpu": {"sass_instructions": 150, "sass_slow_path": 0},
                           "triton_aligned": {"sass_instructions": 100}}},
        "no_twin": {"sm_90": {"eggpu": {"sass_instructions": 50}}},
    }
    lib = naive_bench.summarize(res)["sm_90"]["library_vs_triton"]
    assert set(lib) == {"div_kernel", "plain", "slow"}  # only kernels with a Triton twin
    assert lib["div_kernel"]["ratio"] == 1.5 and lib["div_kernel"]["ratio_without_slow_path"] == 0.9
    assert lib["plain"]["ratio"] == 0.9 and lib["slow"]["triton"] is None
    text = "\n".join(naive_bench._library_vs_triton_section({"sm_90": {"library_vs_triton": lib}}))
    assert "| div_kernel | sm_90 | 300 (120) | 200 | 210 | 1.50 | 0.90 | precision only |" in text
    assert "| plain | sm_90 | 90 (0) | 100 | 110 | 0.90 | 0.90 | met |" in text
    assert "| slow | sm_90 | 150 (0) | 100 | – | 1.50 | 1.50 | **missed** |" in text


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_red_row_sum_ptx_vector_condition_and_one_barrier(target):
    """The looped row sum's GPU code (bench facts): each piece's vector load runs under one
    comparison of its last column AND the row mask (``rmask & xmask`` is true on a prefix of
    every piece: codegen.analysis.down_closed), not the conjunction of all four columns; and
    the loop, which touches no shared memory, leaves no barrier before the reduction's first
    shared-memory write (one ``bar.sync`` in all, between the partials' stores and loads)."""
    import re

    import eggpu
    from bench.naive import launch_facts, param_names
    from bench.suite import NUM_WARPS

    k = BY_NAME["red_row_sum"]
    case = k.make(k.bench_size, np.random.default_rng(0))
    fn = getattr(load("eggpu"), k.name)
    options, _, _ = launch_facts(case, param_names(fn), k.consts)
    ck = eggpu.compile(fn.specialize(*case.args, **k.consts), target=target, cache=False,
                       num_warps=NUM_WARPS, **options)
    ptx = ck.ptx
    assert ptx.count("bar.sync") == 1
    preds = re.findall(r"@(%p\d+) ld\.global\.v4\.b32", ptx)
    assert len(preds) == 2  # two rows of 4 columns per thread
    for p in preds:
        (rhs,) = re.findall(rf"and\.pred \s*{re.escape(p)}, (%p\d+), (%p\d+);", ptx)
        for q in rhs:  # each side a single comparison, not a further conjunction
            assert re.search(rf"setp\.lt\.s32 \s*{re.escape(q)},", ptx), (p, q)


def test_fast_math_variant_is_measured_beside_the_default():
    """``python -m bench naive --fast-math``: one more variant, ``eggpu_fast`` (fast_math=True),
    whose PTX differs from the default's where the kernel has an ``exp`` (approximate ``ex2``)."""
    pytest.importorskip("triton")
    from bench import naive_bench

    res = naive_bench.measure_naive(("sm_90",), ["poi_silu_mul"], progress=lambda _m: None, fast_math=True)
    row = res["poi_silu_mul"]["sm_90"]
    assert set(row) == {"eggpu_noopt", "eggpu", "eggpu_fast", "triton"}
    assert all("error" not in v for v in row.values())
    assert row["eggpu_fast"]["ptx_lines"] != row["eggpu"]["ptx_lines"]
    plain = naive_bench.measure_naive(("sm_90",), ["poi_silu_mul"], progress=lambda _m: None)
    assert "eggpu_fast" not in plain["poi_silu_mul"]["sm_90"]
