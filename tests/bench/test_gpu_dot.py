"""``bench.gpu_dot`` (the GPU checks of the dot paths and of min/max) runs its own checks on the CPU.

No GPU here: ``run_cpu`` stands in for the device launch, so the cases, their inputs and their
check functions cannot rot before a GPU is lent.
"""

from __future__ import annotations

import eggpu


def test_gpu_dot_checks_run_on_the_cpu():
    from bench import gpu_dot

    cases = list(gpu_dot.cases())
    assert {c.label.split("[")[0] for c in cases} == {"dot", "minmax pairs", "minmax rows"}
    picked = [c for c in cases if c.label.startswith(("dot[bf16] 32x32x16", "minmax pairs[f16]"))]
    assert len(picked) == 2
    for c in picked:
        ck = eggpu.compile(c.instance, target="sm_90", optimize=False, cache=False)
        args = [a.copy() if hasattr(a, "copy") else a for a in c.args]
        ck.run_cpu(c.grid, *args)
        details = c.check(args, ck)
        if c.label.startswith("dot"):
            assert details["dot"][0]["strategy"] == "mma_sync" and details["max_err"] < 1e-3


def test_gpu_scripts_import():
    import bench.gpu
    import bench.gpu_check

    assert callable(bench.gpu_check.main) and callable(bench.gpu.main)


def test_gpu_dot_wgmma_case_runs_on_the_cpu():
    """The opt-in wgmma cases compile for sm_90a with their own options and pass their check on run_cpu."""
    from bench import gpu_check, gpu_dot

    cases = [c for c in gpu_dot.cases() if c.options.get("dot_strategy") == "wgmma"]
    assert len(cases) == 4 * len(gpu_dot.WGMMA_TILES)  # each tile without and with the cp.async stages
    assert all(gpu_check.runs_on(c, "sm_90") and not gpu_check.runs_on(c, "sm_80") for c in cases)
    for label, pipelined in (("dot[bf16] 64x64x32 wgmma num_warps=4 on", False),
                             ("dot[f16] 64x64x32 wgmma num_warps=4 pipelined on", True)):
        c = next(c for c in cases if c.label.startswith(label))
        ck = eggpu.compile(c.instance, **c.options, optimize=False, cache=False)
        args = [a.copy() if hasattr(a, "copy") else a for a in c.args]
        ck.run_cpu(c.grid, *args)
        details = c.check(args, ck)
        (d,) = details["dot"]
        assert d["strategy"] == "wgmma" and d["pipelined"] == pipelined and details["max_err"] < 1e-3, d


def test_gpu_wgmma_bench_compiles_its_variants():
    """bench.gpu_wgmma's kernels: the library matmul, mma_sync on sm_90 and wgmma on sm_90a."""
    from bench import gpu_wgmma

    for name, opts in gpu_wgmma.VARIANTS.items():
        ck = eggpu.compile(gpu_wgmma.instance("f16", gpu_wgmma.TILES[0]), optimize=False, cache=False,
                           num_warps=4, **opts)
        assert [d["strategy"] for d in ck.report["dot"]] == [name]


def test_gpu_row_variants_build_and_rate(tmp_path):
    """bench.gpu's row-kernel variants (issue #10's GPU decisions): ``nounroll`` is the default
    build's PTX with every loop marked (ptxas accepts it and unrolls less), a new launch plan, the
    rest of the kernel unchanged; ratios are over the default build and over Triton."""
    from bench import gpu
    from bench.suite import SUITE, consts_for
    from eggpu.codegen.ptx_loops import no_unroll
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    e = next(e for e in SUITE if e.kernel == "layer_norm_forward")
    ck = eggpu.compile(get(e.kernel).kernel(parse_dtype(e.dtype), consts_for(e)), target="sm_90", cache=False)
    v = gpu.variant_kernel(ck, "nounroll")
    assert v is not ck and v.ptx == no_unroll(ck.ptx) != ck.ptx and v._plan is None
    assert v.ptx.count('.pragma "nounroll"') >= 3 and v.params == ck.params and v.entry_point == ck.entry_point
    assert gpu.variant_kernel(ck, "fast_math") is ck  # compiled with the option itself
    assert run_ptxas(v.ptx, "sm_90").cubin
    row = {"eggpu": {"median_ms": 0.05}, "triton": {"median_ms": 0.04},
           "eggpu_variants": {"nounroll": {"median_ms": 0.045}, "fast_math": {"error": "x"}}}
    gpu._variant_ratios(row)
    nu = row["eggpu_variants"]["nounroll"]
    assert abs(nu["over_default"] - 0.9) < 1e-12 and abs(nu["over_triton"] - 1.125) < 1e-12
    assert row["eggpu_variants"]["fast_math"] == {"error": "x"}
    assert set(gpu.VARIANTS) == set(gpu.VARIANT_OPTIONS)


def test_gpu_naive_suite_is_ready_for_a_gpu():
    """bench.gpu_naive (the naive suite on a GPU): every naive kernel has a GPU size, its eggpu
    variants compile at that size with the launch facts, and the output check and ratios work."""
    import numpy as np

    from bench import gpu_naive
    from bench.naive import NAIVE, Case

    assert set(gpu_naive.GPU_SIZES) == {k.name for k in NAIVE}
    for name in ("poi_bias_relu", "per_softmax"):
        case = gpu_naive._case(name)
        for optimize in (False, True):
            ck = gpu_naive.compile_variant(name, case, optimize, "sm_90", cache=False)
            assert ck.report["specialization"] and ck.options.optimize == optimize
    c = Case([], (1,), {}, rtol=1e-5, atol=0.0)
    want = np.array([1.0, 2.0, np.nan], np.float32)
    assert gpu_naive._close(want.copy(), want, c) is None
    got = want.copy()
    got[1] = 2.001
    assert gpu_naive._close(got, want, c) == "1 elements off, first at 1: 2.000999927520752 vs 2.0"
    assert gpu_naive._close(np.array([1, 3]), np.array([1, 2]), c) == "1 elements differ"
    row = {"eggpu_noopt": {"median_ms": 2.0}, "eggpu": {"median_ms": 1.0}, "triton": {"error": "x"}}
    gpu_naive.ratios(row)
    assert row["eggpu_over_noopt_time"] == 0.5 and "eggpu_over_triton_time" not in row


def test_gpu_stream_checks_are_ready_for_a_gpu(tmp_path):
    """bench.gpu_streams: no rows without PyTorch/CUDA (here), its kernel compiles into a prepared
    cache, and computes what its check expects (2 * 3.0) on run_cpu."""
    import numpy as np

    from bench import gpu_streams

    assert gpu_streams.checks("sm_90") == []
    assert gpu_streams.prepare(str(tmp_path), "sm_90") == 1
    ck = eggpu.compile(gpu_streams.kernel_instance(), target="sm_90", cache=str(tmp_path))
    assert ck.report["cache"] == "hit"
    x = np.full(4099, 3.0, np.float32)
    y = np.zeros_like(x)
    ck.run_cpu((-(-x.size // gpu_streams.BLOCK),), x, y, x.size)
    assert (y == 6.0).all()


def test_gpu_session_script_parses_and_names_what_exists():
    """bench/gpu_session.sh (one call for a lent GPU) is valid bash and runs modules that exist."""
    import re
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = root / "bench" / "gpu_session.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    text = script.read_text()
    for module in re.findall(r"-m (bench\.\w+)", text):
        assert (root / (module.replace(".", "/") + ".py")).exists(), module
    assert (root / "bench" / "gpu_run.sh").exists() and "bench/gpu_run.sh" in text
