"""``@eggpu.autotune`` / ``eggpu.Config`` / ``@eggpu.heuristics`` with Triton's spelling: without a
GPU the first config runs; with ``do_bench=`` (or on a GPU) the fastest config per key is kept."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu as triton
import eggpu.language as tl


def _tuned(configs, key=("n_elements",), **kw):
    @triton.autotune(configs=configs, key=list(key), **kw)
    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
                 mask=mask)

    return add_kernel


CONFIGS = [triton.Config({"BLOCK_SIZE": 128}, num_warps=4), triton.Config({"BLOCK_SIZE": 64}, num_warps=2),
           triton.Config({"BLOCK_SIZE": 256}, num_warps=8, num_stages=2)]


def _add(kernel, n, dtype=np.float32):
    x = np.arange(n, dtype=dtype)
    y = np.full(n, 2, dtype=dtype)
    out = np.zeros(n, dtype=dtype)
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n)
    return x + y, out


@pytest.mark.parametrize("device", ["cpu", "interpret"])
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_without_gpu_the_first_config_is_used(monkeypatch, device, n):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    k = _tuned(CONFIGS)
    expect, out = _add(k, n)
    np.testing.assert_array_equal(out, expect)
    assert k.best_config is CONFIGS[0]
    assert list(k.cache.values()) == [CONFIGS[0]]
    assert k.nargs["n_elements"] == n


def test_do_bench_picks_the_fastest_per_key(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    seen = []
    configs = [triton.Config({"BLOCK_SIZE": b}, pre_hook=lambda nargs: seen.append(nargs["BLOCK_SIZE"]))
               for b in (128, 64, 256)]

    def do_bench(kernel_call):
        kernel_call()
        # "fastest": BLOCK_SIZE 64 for small inputs, 256 for large ones
        return (abs(seen[-1] - (64 if k.nargs["n_elements"] < 500 else 256)), 0.0, 0.0)

    k = _tuned(configs, do_bench=do_bench)
    for n, best in ((100, 64), (1001, 256), (101, 64)):
        expect, out = _add(k, n)
        np.testing.assert_array_equal(out, expect)
        assert k.best_config.kwargs["BLOCK_SIZE"] == best
    # keys 100, 1001, 101: each tuned once (three configs), then launched with the best
    assert seen == [128, 64, 256, 64, 128, 64, 256, 256, 128, 64, 256, 64]
    _add(k, 100)
    assert len(seen) == 13  # a cached key is not tuned again
    _add(k, 100, np.float64)
    assert len(seen) == 17  # the dtypes of the array arguments are part of the key


def test_tuning_runs_do_not_change_the_result(monkeypatch):
    """Benchmark launches write the arrays; they are restored, so an accumulating kernel adds once."""
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")

    @triton.autotune(configs=CONFIGS, key=["n"], do_bench=lambda call: (call(), call(), 1.0)[2])
    @triton.jit
    def accumulate(x_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    x = np.zeros(1001, np.int32)
    accumulate[lambda meta: (triton.cdiv(1001, meta["BLOCK_SIZE"]),)](x, 1001)
    np.testing.assert_array_equal(x, np.ones(1001, np.int32))


def test_config_options_and_pre_hook(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    calls = []
    cfg = triton.Config({"BLOCK_SIZE": 32}, num_warps=1, num_stages=5, maxnreg=128,
                        pre_hook=lambda nargs: calls.append((nargs["n_elements"], nargs["BLOCK_SIZE"])))
    assert repr(cfg) == "BLOCK_SIZE: 32, num_warps: 1, num_stages: 5, num_ctas: 1, maxnreg: 128"
    assert cfg.all_kwargs() == {"BLOCK_SIZE": 32, "num_warps": 1, "num_stages": 5, "num_ctas": 1, "maxnreg": 128}
    k = _tuned([cfg])
    expect, out = _add(k, 77)
    np.testing.assert_array_equal(out, expect)
    assert calls == [(77, 32)]


def test_num_warps_reaches_the_compile(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    k = _tuned([triton.Config({"BLOCK_SIZE": 128}, num_warps=2)])
    expect, out = _add(k, 300)
    np.testing.assert_array_equal(out, expect)
    (ck,) = k.base._compiled.values()
    assert ck.num_threads == 64 and ".reqntid 64" in ck.ptx


def test_early_config_prune_and_perf_model(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    k = _tuned(CONFIGS, prune_configs_by={"early_config_prune": lambda cs, nargs: [c for c in cs
                                                                                  if c.num_warps >= 4]})
    _add(k, 10)
    assert k.best_config is CONFIGS[0]
    k = _tuned(CONFIGS, prune_configs_by={"perf_model": lambda **kw: -kw["BLOCK_SIZE"], "top_k": 1})
    _add(k, 10)
    assert k.best_config is CONFIGS[2]
    k = _tuned(CONFIGS, prune_configs_by={"early_config_prune": lambda cs, nargs: []})
    with pytest.raises(eggpu.LaunchError, match="add_kernel: prune_configs_by\\['early_config_prune'\\] removed"):
        _add(k, 10)


def test_heuristics_compute_constexprs(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")

    @triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=["n"])
    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})  # below autotune, as in Triton
    @triton.jit
    def fill(out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(out_ptr + offs, tl.full((BLOCK,), 1, tl.int32))
        else:
            tl.store(out_ptr + offs, tl.full((BLOCK,), 2, tl.int32), mask=offs < n)

    for n, v in ((32, 1), (33, 2)):
        out = np.zeros(n, np.int32)
        fill[(triton.cdiv(n, 16),)](out, n)
        np.testing.assert_array_equal(out, np.full(n, v, np.int32))


@pytest.mark.parametrize("make,message", [
    (lambda: triton.autotune(configs=[], key=["n"]), "takes a non-empty list of eggpu.Config, got []"),
    (lambda: triton.autotune(configs=[{"BLOCK": 1}], key=["n"]), "takes a non-empty list of eggpu.Config"),
    (lambda: triton.autotune(configs=CONFIGS, key="n_elements"), "takes a list of parameter names, got 'n_elements'"),
    (lambda: _tuned(CONFIGS, key=["size"]), "key 'size' is not a parameter (parameters: x_ptr, y_ptr, output_ptr,"),
    (lambda: _tuned(CONFIGS, reset_to_zero=["out"]), "'out' in reset_to_zero/restore_value is not a parameter"),
    (lambda: _tuned(CONFIGS, prune_configs_by={"top": 1}), "prune_configs_by has unknown entries ['top']"),
    (lambda: triton.Config({"B": 1}, num_warps=3), "num_warps must be a power of two, got 3"),
    (lambda: triton.Config([("B", 1)]), "takes a dict of constexpr values"),
    (lambda: triton.autotune(configs=CONFIGS, key=["n"])(lambda x: x), "decorate an @eggpu.jit function"),
    (lambda: triton.heuristics({"B": 4}), "takes a dict of name -> function(args), got {'B': 4}"),
])
def test_decorator_misuse(make, message):
    with pytest.raises(eggpu.KernelError) as ei:
        make()
    assert message in str(ei.value)


def test_conflicting_meta_parameter(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    k = _tuned(CONFIGS)
    x = np.zeros(4, np.float32)
    with pytest.raises(eggpu.LaunchError, match="add_kernel: Conflicting meta-parameters: BLOCK_SIZE"):
        k[(1,)](x, x, x, 4, BLOCK_SIZE=16)


def test_failing_heuristic_names_itself(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    k = triton.heuristics({"BLOCK_SIZE": lambda args: args["missing"]})(triton.jit(_tuned(CONFIGS).base.fn))
    x = np.zeros(4, np.float32)
    with pytest.raises(eggpu.LaunchError, match="add_kernel: the heuristic for BLOCK_SIZE failed: KeyError"):
        k[(1,)](x, x, x, 4)


def test_tuning_restores_the_arrays_of_descriptor_arguments(monkeypatch):
    from eggpu.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")

    def block(nargs):  # as Triton's tutorial 06: the config sets the descriptor's block shape
        nargs["desc"].block_shape = [nargs["B"]]

    @triton.autotune(configs=[triton.Config({"B": 8}, pre_hook=block), triton.Config({"B": 16}, pre_hook=block)],
                     key=["n"], do_bench=lambda call: (call(), call(), 1.0)[2])
    @triton.jit
    def bump(desc, n, B: tl.constexpr):
        desc.store([tl.program_id(0) * B], desc.load([tl.program_id(0) * B]) + 1)

    x = np.zeros(37, np.float32)
    desc = TensorDescriptor(x, [37], [1], [1])
    bump[lambda meta: (triton.cdiv(37, meta["B"]),)](desc, 37)
    np.testing.assert_array_equal(x, np.ones(37, np.float32))
    assert desc.block_shape == [8]  # the first config, as all timings are equal


class _CudaTensor:
    """A CUDA tensor as PyTorch presents one (``is_cuda``, ``data_ptr()``; ``clone``/``copy_`` for
    the tuner's save and restore)."""

    is_cuda = True

    def __init__(self, address, n=1024):
        self.address, self.shape, self.dtype = address, (n,), type("Dtype", (), {"__str__": lambda s: "torch.float32",
                                                                                   "name": "float32"})()

    def data_ptr(self):
        return self.address

    def is_contiguous(self):
        return True

    def stride(self):
        return (1,)

    def dim(self):
        return 1

    def clone(self):
        return self

    def copy_(self, other):
        return self


def test_gpu_tuning_times_from_an_idle_gpu_to_the_end_of_the_last_launch(monkeypatch):
    """@eggpu.jit launches are asynchronous: the default benchmark waits for the GPU before its
    clock starts and before it stops, for each config (FakeCudaDriver counts each wait on the
    launch it follows)."""
    from eggpu.testing import fake_cuda

    monkeypatch.delenv("EGGPU_JIT_DEVICE", raising=False)
    k = _tuned(CONFIGS[:2], rep=3)
    x, y, out = _CudaTensor(0x100000), _CudaTensor(0x200000), _CudaTensor(0x300000)
    with fake_cuda() as cu:
        k[lambda meta: (triton.cdiv(1024, meta["BLOCK_SIZE"]),)](x, y, out, 1024)
    assert k.best_config in CONFIGS[:2]
    per_config = 1 + k.rep  # the warm-up launch, then the timed ones
    timed = cu.launches[:2 * per_config]
    for c in range(2):
        launches = timed[c * per_config:(c + 1) * per_config]
        assert [la.synchronized for la in launches] == [1] + [0] * (k.rep - 1) + [1]
    assert all(la.synchronized == 0 for la in cu.launches[2 * per_config:])  # the chosen config's launch
