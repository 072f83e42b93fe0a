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
    assert f["int_divrem"] == pytest.approx(40.0)  # rem costs 20 per lane
    assert f["memory"] == pytest.approx(40.0)  # a load and a store, 10 per lane


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
