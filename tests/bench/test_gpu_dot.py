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
