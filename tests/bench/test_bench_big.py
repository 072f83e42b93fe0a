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


def test_attention_forward_computes_softmax_attention_on_cpu():
    """bench.big's fused-attention forward (online softmax over two key tiles) equals
    softmax(q k^T * scale) v computed in float64, through the optimizer and run_cpu."""
    import numpy as np

    import eggpu

    n, h, scale = 128, 64, 0.125
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, h)).astype(np.float32) for _ in range(3))
    out = np.zeros((n, h), np.float32)
    inst = big.kernels("eggpu").attn_fwd.specialize(q, k, v, out, n, scale, BLOCK=64, HEAD=64)
    ck = eggpu.compile(inst, target="sm_90", cache=False)
    assert not ck.report["optimizer"]["fell_back"]
    ck.run_cpu((n // 64,), q, k, v, out, n, scale)
    s = q.astype(np.float64) @ k.T.astype(np.float64) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ v
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
