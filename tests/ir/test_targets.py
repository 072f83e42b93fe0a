"""The one list of targets (eggpu.ir.targets): every layer accepts the same names and agrees on
what each means — the compile API, the cost model and code generation."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eggpu.codegen.target import get_target
from eggpu.ir import targets, versions
from eggpu.ir.errors import CodegenError
from eggpu.ir.targets import GPU_TARGETS, canonical_target_name, resolve_gpu_target
from eggpu.optimizer.cost import CostModel


@pytest.mark.parametrize("spelling", ["sm_90", "SM90", "90", "compute_90", " sm90 "])
def test_every_spelling_means_the_same_target_everywhere(spelling):
    assert canonical_target_name(spelling) == "sm_90"
    assert get_target(spelling).name == "sm_90"
    assert CostModel.for_target(spelling) == CostModel.for_target("sm_90")


def test_arch_suffix_is_a_target_of_its_own():
    assert canonical_target_name("SM_90A") == "sm_90a"
    info = resolve_gpu_target("sm_90a")
    assert (info.sm, info.ptx_isa, info.max_shared_bytes) == (90, (8, 0), 227 * 1024)


@pytest.mark.parametrize("name", GPU_TARGETS)
def test_codegen_and_cost_model_accept_the_same_targets(name):
    info = resolve_gpu_target(name)
    tgt = get_target(name)
    assert (tgt.sm, tgt.ptx_isa, tgt.min_cuda, tgt.max_shared_bytes) == (
        info.sm, info.ptx_isa, info.min_cuda, info.max_shared_bytes)
    assert CostModel.for_target(name).target == name


@pytest.mark.parametrize("name", ["sm_70", "sm_999", "hopper", "sm_101"])
def test_an_unsupported_target_is_refused_by_every_layer_with_one_message(name):
    msgs = []
    for parse in (canonical_target_name, get_target, CostModel.for_target):
        with pytest.raises(CodegenError) as e:
            parse(name)
        msgs.append(str(e.value))
    assert len(set(msgs)) == 1 and f"unknown target {name!r}" in msgs[0] and "sm_90a" in msgs[0]


def test_close_spellings_get_a_hint():
    with pytest.raises(CodegenError, match="Did you mean 'sm_80'"):
        canonical_target_name("sm_800")


def test_host_is_not_a_gpu_target_for_the_cost_model():
    assert canonical_target_name("HOST") == "host"
    with pytest.raises(CodegenError, match="'host' is the CPU, not an NVIDIA GPU target"):
        CostModel.for_target("host")
    assert get_target("host").sm is None


def test_full_rate_f64_only_on_data_centre_parts():
    assert CostModel.for_target("sm_90").f64_factor < CostModel.for_target("sm_89").f64_factor
    assert resolve_gpu_target("sm_80").full_rate_f64 and not resolve_gpu_target("sm_86").full_rate_f64


@given(st.text(alphabet="smcomputeSMCOMPUTE_ -0123456789a٣x", max_size=14))
def test_target_spellings_normalize_as_the_pattern_did(name: str) -> None:
    """eggpu.ir.targets._normalize (string tests, no pattern compiled on a cache hit) agrees with
    the regular expression it replaces."""
    text = name.strip().lower()
    m = re.fullmatch(r"(?:sm_?|compute_?)?(\d+)([a-z]?)", text)
    assert targets._normalize(name) == (f"sm_{m.group(1)}{m.group(2)}" if m else text)


@given(st.text(alphabet="aZ-_.9", max_size=12))
def test_distribution_names_normalize_as_pep_503(name: str) -> None:
    assert versions._normalized(name) == re.sub(r"[-_.]+", "_", name).lower()
