"""The large-kernel compile benchmark (``python -m bench.big``) cannot rot: every entry's eggpu
kernel builds its IR, and its Triton twin takes the same parameters."""

from __future__ import annotations

import inspect

import pytest

from bench import big


@pytest.mark.parametrize("key", sorted(big.ENTRIES))
def test_entry_builds_its_eggpu_ir(key):
    _kernel, sig, consts = big.ENTRIES[key]
    fn = big._eggpu_instance(key).ir()
    assert [p.name for p in fn.params] == list(sig)


@pytest.mark.parametrize("key", sorted(big.ENTRIES))
def test_triton_twin_has_the_same_parameters(key):
    pytest.importorskip("triton", reason="Triton is a benchmark-only dependency")
    from bench import triton_kernels

    kernel, sig, consts = big.ENTRIES[key]
    mod = triton_kernels if kernel == "cross_entropy_forward" else big.kernels("triton")
    params = list(inspect.signature(getattr(mod, kernel).fn).parameters)
    assert params == list(sig) + list(consts)
