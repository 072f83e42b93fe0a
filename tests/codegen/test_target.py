"""Targets: names, PTX ISA versions (checked against LLVM 22 itself), num_warps, host."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest

from eggpu.codegen.ptx import initialize_llvm
from eggpu.codegen.target import GPU_TARGETS, NVPTX_TRIPLE, Target, get_target, host_target
from eggpu.ir.errors import CodegenError

EXPECTED_ISA = {
    "sm_75": "6.3",
    "sm_80": "7.0",
    "sm_86": "7.1",
    "sm_89": "7.8",
    "sm_90": "7.8",
    "sm_90a": "8.0",
    "sm_100": "8.6",
    "sm_120": "8.7",
}

EMPTY_KERNEL = f'target triple = "{NVPTX_TRIPLE}"\ndefine ptx_kernel void @k() {{\n  ret void\n}}\n'


def _header(ptx: str) -> tuple[str, str]:
    version = re.search(r"^\.version (\S+)", ptx, re.M).group(1)
    target = re.search(r"^\.target (\S+)", ptx, re.M).group(1)
    return version, target


@pytest.mark.parametrize("name,isa", sorted(EXPECTED_ISA.items()))
def test_issue_targets_have_the_minimum_isa(name, isa):
    t = get_target(name)
    assert t.name == name and t.cpu == name and t.triple == NVPTX_TRIPLE
    assert t.ptx_version_str == isa
    assert t.features == "+ptx" + isa.replace(".", "")
    assert t.is_gpu and not t.is_host


@pytest.mark.parametrize("name", GPU_TARGETS)
def test_llvm_knows_the_cpu_and_picks_the_same_isa_on_its_own(name, capfd):
    """Our table == LLVM 22's default (minimum) PTX version, and the explicit feature is honoured."""
    initialize_llvm()
    nvptx = llvm.Target.from_triple(NVPTX_TRIPLE)
    t = get_target(name)
    default = nvptx.create_target_machine(cpu=t.cpu, opt=3).emit_assembly(llvm.parse_assembly(EMPTY_KERNEL))
    explicit = nvptx.create_target_machine(cpu=t.cpu, features=t.features, opt=3).emit_assembly(
        llvm.parse_assembly(EMPTY_KERNEL)
    )
    assert _header(default) == (t.ptx_version_str, name)
    assert _header(explicit) == (t.ptx_version_str, name)
    assert "not a recognized processor" not in capfd.readouterr().err


def test_min_cuda_is_monotonic_in_the_isa():
    pairs = sorted({(get_target(n).ptx_isa, get_target(n).min_cuda) for n in GPU_TARGETS})
    cudas = [cuda for _, cuda in pairs]
    assert cudas == sorted(cudas)


@pytest.mark.parametrize("spelling", ["sm_90", "SM_90", "sm90", "90", "compute_90", " sm_90 "])
def test_spellings(spelling):
    assert get_target(spelling).name == "sm_90"


def test_arch_specific_suffix_is_kept():
    assert get_target("SM90A").name == "sm_90a"
    assert get_target("sm_90a").sm == 90
    assert get_target("sm_120").sm == 120


def test_num_warps_default_and_override():
    t = get_target("sm_80")
    assert t.num_warps == 4 and t.threads_per_cta == 128 and t.warp_size == 32
    assert get_target("sm_80", num_warps=8).threads_per_cta == 256
    assert t.with_num_warps(1).threads_per_cta == 32
    assert get_target(t, num_warps=16).num_warps == 16
    assert get_target(t) is t


@pytest.mark.parametrize("bad", [0, 3, 6, 64, -4, True, 2.0, "4"])
def test_bad_num_warps(bad):
    with pytest.raises(CodegenError, match="num_warps must be a power of two between 1 and 32"):
        get_target("sm_80", num_warps=bad)


def test_unknown_target_lists_supported_and_suggests():
    with pytest.raises(CodegenError) as err:
        get_target("sm_91")
    msg = str(err.value)
    assert "unknown target 'sm_91'" in msg
    assert "Did you mean" in msg and "'sm_90'" in msg
    for name in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "host"):
        assert name in msg
    with pytest.raises(CodegenError, match="unknown target 'vulkan'"):
        get_target("vulkan")
    with pytest.raises(CodegenError, match="a target is a name"):
        get_target(90)


def test_host_target():
    h = host_target()
    assert isinstance(h, Target) and h.is_host and not h.is_gpu
    assert h.name == "host" and h.ptx_isa is None and h.min_cuda is None and h.sm is None
    assert h.triple == llvm.get_process_triple()
    assert h.cpu == llvm.get_host_cpu_name()
    assert get_target("host", num_warps=2).threads_per_cta == 64
