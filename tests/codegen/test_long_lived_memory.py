"""What keeps a long-lived process's memory bounded (docs/codegen.md, "Memory of a long-lived
process"): each llvmlite pass builder runs once (a second run would call the first run's freed
instrumentation), the host build runs an explicit pass list rather than LLVM's default<O1>
(whose pipeline leaks ~95 KiB per build in llvmlite), and the ptxas result cache is an LRU."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.codegen import build_host, compile_ptx_module, host, ptxas
from eggpu.codegen.ptx import DEFAULT_PTX_OPTIONS, PtxOptions

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"


@pytest.fixture
def builder_log(monkeypatch):
    """Every pass builder made, with how many runs and default pipelines each one had."""
    made: list[dict] = []
    real_create = llvm.create_pass_builder
    real_run = llvm.ModulePassManager.run

    def create(tm, pto):
        pb = real_create(tm, pto)
        made.append({"pb": pb, "runs": 0, "default_pipelines": 0})
        real_get = pb.getModulePassManager

        def get():
            made[-1]["default_pipelines"] += 1
            return real_get()

        pb.getModulePassManager = get
        return pb

    def run(self, module, pb):
        for entry in made:
            if entry["pb"] is pb:
                entry["runs"] += 1
        return real_run(self, module, pb)

    monkeypatch.setattr(llvm, "create_pass_builder", create)
    monkeypatch.setattr(llvm.ModulePassManager, "run", run)
    return made


@eggpu.jit
def _exp_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=m)) * 0.5, mask=m)


def _exp_ir_with(block: int):
    x = np.zeros(4, np.float32)
    return _exp_rows.specialize(x, x, 4, BLOCK=block).ir()


def _ir():
    return _exp_ir_with(128)


@pytest.mark.parametrize("pipeline", ["light", "O2", "none"])
def test_every_pass_builder_of_a_ptx_compile_runs_once(builder_log, pipeline):
    import dataclasses

    from eggpu.codegen.lowering import lower_function
    from eggpu.codegen.ptx import emit_ptx

    options: PtxOptions = dataclasses.replace(DEFAULT_PTX_OPTIONS, pipeline=pipeline)
    _, lowered = lower_function(_ir(), "ptx", 4, verify_llvm=False)
    ptx = emit_ptx(lowered.llvm_ir, "sm_90", entry=lowered.entry, options=options).ptx
    assert "ex2.approx" in ptx or "__nv_expf" not in ptx  # libdevice was linked and inlined
    runs = [e["runs"] for e in builder_log]
    assert all(r <= 1 for r in runs) and sum(runs) >= 1, runs  # the libdevice subset is cut only on a cache miss
    # default pipelines: light builds LLVM's default<O0> once, On its default<On>, none no default
    assert sum(e["default_pipelines"] for e in builder_log) == {"light": 1, "O2": 1, "none": 0}[pipeline]


def test_the_host_build_runs_one_explicit_pass_list(builder_log):
    hk = build_host(_ir())
    assert [(e["runs"], e["default_pipelines"]) for e in builder_log] == [(1, 0)]
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    y = np.zeros_like(x)
    hk.run((8,), x, y, np.int32(1001))
    np.testing.assert_allclose(y, np.exp(x) * 0.5, rtol=2e-6)


def test_ptx_is_the_same_with_every_pass_builder_used_once():
    a = compile_ptx_module(_ir(), "sm_80").ptx
    b = compile_ptx_module(_ir(), "sm_80").ptx
    assert a == b and ".visible .entry" in a


def test_the_ptxas_result_cache_keeps_the_most_recently_used(monkeypatch):
    monkeypatch.setattr(ptxas, "CACHE_SIZE", 2)
    ptxas.clear_cache()
    texts = [compile_ptx_module(_exp_ir_with(block), "sm_80").ptx for block in (32, 64, 128)]
    first = ptxas.run_ptxas(texts[0], "sm_80")
    ptxas.run_ptxas(texts[1], "sm_80")
    assert ptxas.run_ptxas(texts[0], "sm_80") is first  # a hit, and now the most recent
    ptxas.run_ptxas(texts[2], "sm_80")  # drops texts[1], the least recently used
    assert len(ptxas._cache) == 2
    assert ptxas.run_ptxas(texts[0], "sm_80") is first
    ptxas.clear_cache()



def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc (Linux)")
def test_compiling_many_programs_grows_the_process_by_little():
    """300 generated programs compiled (PTX + ptxas) and run on the CPU in one process: the
    resident size grows by less than 128 KiB a program (it was ~190 KiB before the pass-builder
    changes, ~400 KiB with the optimizer on; what is left is llvmlite's per-run instrumentation)."""
    sys.path.insert(0, str(FUZZ))
    try:
        from fuzzgen import generate, make_args
        from fuzzrun import FunctionKernel
    finally:
        sys.path.remove(str(FUZZ))

    def one(seed: int) -> None:
        prog = generate(seed)
        ck = eggpu.compile(FunctionKernel(prog.fn), optimize=False, cache=False)
        ck.run_cpu(prog.grid, *make_args(prog, seed))

    for seed in range(40):
        one(50_000 + seed)
    gc.collect()
    before = _rss_mib()
    n = 300
    for seed in range(n):
        one(60_000 + seed)
    gc.collect()
    grown_kib = (_rss_mib() - before) * 1024 / n
    assert grown_kib < 128, f"{grown_kib:.0f} KiB per program"


def test_host_pipeline_names_are_llvmlite_passes():
    mpm = llvm.create_new_module_pass_manager()
    for name in host.HOST_PIPELINE:
        assert hasattr(mpm, f"add_{name}_pass"), name
