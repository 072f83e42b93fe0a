"""``tl.load(..., volatile=True)``: the IR load carries ``volatile=True``; on a GPU each element is
one ``ld.volatile`` (two volatile loads of one address stay two loads), checked by ptxas; the
interpreter and run_cpu read as any load, against numpy on ragged sizes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def volatile_sum(x_ptr, f_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + offs, mask=m, other=2.0, volatile=True)
    b = tl.load(x_ptr + offs, mask=m, other=2.0, volatile=True)
    f = tl.load(f_ptr + offs, mask=m, volatile=True)
    s = tl.load(f_ptr, volatile=True)
    tl.store(y_ptr + offs, a + b + f.to(tl.float32) + s.to(tl.float32), mask=m)


def _args(n):
    return (np.arange(n, dtype=np.float32), (np.arange(n) % 3 + 1).astype(np.int8), np.zeros(n, np.float32))


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_volatile_loads_read_memory(run_both, n):
    x, f, y = _args(n)
    for dev, (_, _, got) in run_both(volatile_sum, (-(-n // 256),), x, f, y, n, BLOCK=256).items():
        np.testing.assert_array_equal(got, 2 * x + f + f[0], err_msg=dev)


def test_volatile_loads_stay_separate_ld_volatile_in_ptx():
    from eggpu.ir import parse_function as parse

    k = volatile_sum.specialize(*_args(1001)[:3], 1001, BLOCK=256)
    text = str(k.ir())
    assert text.count("{volatile=true}") == 4
    assert str(parse(text)) == text  # the attribute survives printing and parsing
    ck = eggpu.compile(k, target="sm_90")
    assert str(ck.ir).count("volatile=true") == 4  # the optimizer keeps both loads of x
    ptx = ck.ptx
    per_thread = 256 // 128  # elements of a [256] block per thread (4 warps)
    assert len(re.findall(r"ld\.volatile\.global\.b32", ptx)) == 2 * per_thread
    assert len(re.findall(r"ld\.volatile\.global\.b8", ptx)) == per_thread + 1
    assert not re.search(r"ld\.global(\.v\d)?\.(b|f)32", ptx)
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import ToolchainError, find_ptxas

    try:
        find_ptxas()
    except ToolchainError:
        pytest.skip("ptxas not installed")
    assert run_ptxas(ptx, "sm_90").registers > 0


@eggpu.jit
def volatile_misuse(x_ptr, V: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr, volatile=V))


def test_volatile_must_be_a_compile_time_bool():
    with pytest.raises(eggpu.CompileError, match=r"tl\.load: volatile must be a compile-time bool, got 1"):
        volatile_misuse.specialize(np.zeros(1, np.float32), V=1).ir()
