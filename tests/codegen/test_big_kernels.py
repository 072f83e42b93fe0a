"""Big kernels: run_cpu's stack use, shared memory beyond 48 KiB, compile cost at large blocks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.errors import CodegenError

HERE = Path(__file__).parent


def big_kernels():
    """tests/codegen/big_kernels.py (pytest runs with --import-mode=importlib: no sys.path entry)."""
    import importlib.util

    mod = sys.modules.get("big_kernels")
    if mod is None:
        spec = importlib.util.spec_from_file_location("big_kernels", HERE / "big_kernels.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["big_kernels"] = mod
        spec.loader.exec_module(mod)
    return mod


def _small_stack() -> None:  # runs in the child before exec: a 1 MiB main-thread stack
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    limit = 1 << 20
    resource.setrlimit(resource.RLIMIT_STACK, (limit, hard if hard == resource.RLIM_INFINITY or hard > limit
                                                 else limit))


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_STACK is POSIX")
def test_attention_backward_runs_on_cpu_with_a_small_stack():
    """The CTA frame of this kernel is about 1.1 MiB (every spilled lane vector has its own slot;
    2.7 MiB before the lane buffers were pooled): more than the child's 1 MiB main-thread stack,
    so run_cpu must run it on a thread of its own instead of crashing the process with SIGSEGV
    (which it did, checked by forcing the inline call); the results match numpy."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from big_kernels import run_attn_bwd_on_cpu
        print(run_attn_bwd_on_cpu(64, 64))
    """)
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          preexec_fn=_small_stack, env=env)
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("ok stack_bytes=")
    assert int(line.split("=")[1]) > 1 << 20  # the bound says it does not fit the main thread


def _loads_kernel(n_loads: int):
    """``y = x[0:128] + x[128:256] + ...`` with ``n_loads`` masked block loads."""
    b = Builder("many_loads", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    offs = b.op("arange", start=0, end=128)
    acc = None
    for j in range(n_loads):
        o = b.op("add", offs, b.op("splat", b.const(128 * j, i32), shape=(128,)))
        mask = b.op("lt", o, b.op("splat", b.param("n"), shape=(128,)))
        v = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(128,)), o), mask)
        acc = v if acc is None else b.op("add", acc, v)
    b.effect("store", b.op("addptr", b.op("splat", b.param("y"), shape=(128,)), offs), acc)
    return b.finish()


def test_lane_buffers_are_reused_across_accesses():
    """The stack buffers of the lane loops come from a pool: the frame does not grow with the
    number of memory accesses (it did: two fresh buffers per access)."""
    from eggpu.codegen.lowering import lower_function

    counts = []
    for n in (1, 8):
        _m, lm = lower_function(_loads_kernel(n), "host", 4, verify_llvm=False)
        counts.append(lm.llvm_ir.count(" alloca "))
    assert counts[0] == counts[1]


def test_many_loads_run_on_cpu():
    import numpy as np

    from eggpu.codegen import build_host

    hk = build_host(_loads_kernel(8))
    for n in (1, 1000, 1001):
        x = np.arange(1024, dtype=np.float32)
        y = np.zeros(128, np.float32)
        hk.run(1, x, y, n)
        xm = np.where(np.arange(1024) < n, x, 0).reshape(8, 128)
        np.testing.assert_array_equal(y, xm.sum(0, dtype=np.float32))


def test_host_stack_budget_is_checked_before_running(monkeypatch):
    from eggpu.codegen import build_host
    from eggpu.codegen import host as host_mod

    monkeypatch.setattr(host_mod, "HOST_STACK_LIMIT", 1000)
    with pytest.raises(CodegenError, match=r"many_loads: the CPU build of this kernel may need \d+ bytes of "
                                           r"stack, more than the 1000 bytes run_cpu allows"):
        build_host(_loads_kernel(1))


def test_shared_memory_is_not_on_the_stack():
    """The host's shared-memory buffer is allocated by the caller (it used to be an alloca of
    the grid function, so stack use grew with the kernel's shared memory)."""
    from eggpu.codegen.lowering import lower_function
    bk = big_kernels()
    args = bk.attn_bwd_inputs(64, 16)
    fn = bk.attn_bwd.specialize(*args, BLOCK=32, HEAD=16).ir()
    _m, lm = lower_function(fn, "host", 4, verify_llvm=False)
    assert lm.shared_bytes > 0
    assert f"alloca [{lm.shared_bytes} x i8]" not in lm.llvm_ir
