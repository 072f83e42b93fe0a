"""Fixtures of the lowering tests: cached host JIT builds and interpreter-vs-host comparison.

JIT compilation costs ~0.1-1 s per kernel, so :func:`host_kernel` caches HostKernels per
(IR text, num_warps) for the whole session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from eggpu.ir import i32

_HOST_CACHE: dict[tuple[str, int, bool], Any] = {}


def host_kernel(fn, *, num_warps: int = 4, assume_aligned: bool = True):
    """The JIT-compiled host kernel of ``fn`` (cached by printed IR and options)."""
    from eggpu.codegen import build_host
    from eggpu.ir.printer import print_function

    key = (print_function(fn), num_warps, assume_aligned)
    hk = _HOST_CACHE.get(key)
    if hk is None:
        hk = _HOST_CACHE[key] = build_host(fn, num_warps=num_warps, assume_aligned=assume_aligned)
    return hk


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def assert_same(want: np.ndarray, got: np.ndarray, *, rtol: float = 0.0, atol: float = 0.0, what: str = "") -> None:
    """Exact (bitwise, NaN == NaN) comparison, or a tolerance for floats when given."""
    assert want.dtype == got.dtype and want.shape == got.shape, what
    if want.dtype.kind in "biu" or (rtol == 0 and atol == 0 and want.dtype.kind != "f" and want.dtype.name != "bfloat16"):
        bad = want != got
    else:
        w = want.astype(np.float64)
        g = got.astype(np.float64)
        nan = np.isnan(w) & np.isnan(g)
        if rtol == 0 and atol == 0:
            wb = np.ascontiguousarray(want).view(f"u{want.dtype.itemsize}")
            gb = np.ascontiguousarray(got).view(f"u{got.dtype.itemsize}")
            bad = (wb != gb) & ~nan
        else:
            with np.errstate(invalid="ignore"):
                bad = ~(nan | (w == g) | (np.abs(w - g) <= atol + rtol * np.abs(w)))
    if np.any(bad):
        idx = np.argwhere(bad)[:6]
        rows = ", ".join(f"{tuple(int(x) for x in i)}: want {want[tuple(i)]!r} got {got[tuple(i)]!r}" for i in idx)
        raise AssertionError(f"{what}: {int(np.sum(bad))} of {bad.size} elements differ: {rows}")


def run_compare(fn, grid, args, *, rtol: float = 0.0, atol: float = 0.0, num_warps: int = 4,
                tols: dict[int, tuple[float, float]] | None = None) -> list[Any]:
    """Run ``fn`` in the interpreter and on the host on copies of ``args``; compare every array.

    ``tols`` maps an argument index to (rtol, atol). Returns the host's arguments.
    """
    from eggpu.ir.interp import interpret

    a1, a2 = _copy(args), _copy(args)
    interpret(fn, grid, *a1)
    host_kernel(fn, num_warps=num_warps).run(grid, *a2)
    for i, (x, y) in enumerate(zip(a1, a2)):
        if isinstance(x, np.ndarray):
            r, a = (tols or {}).get(i, (rtol, atol))
            name = fn.params[i].name
            assert_same(x, y, rtol=r, atol=a, what=f"{fn.name}: argument {i} ({name})")
    return a2


@pytest.fixture
def compare() -> Callable[..., list[Any]]:
    return run_compare


@pytest.fixture
def jit() -> Callable[..., Any]:
    return host_kernel


def load_tile(b, param: str, rows: int, cols: int):
    """``x[rows, cols]`` loaded row-major from the pointer parameter ``param`` (IR ``Builder`` ops)."""
    shape = (rows, cols)
    r = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=rows), axis=1), shape=shape)
    c = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=cols), axis=0), shape=shape)
    off = b.op("add", b.op("mul", r, b.op("splat", b.const(cols, i32), shape=shape)), c)
    return b.op("load", b.op("addptr", b.op("splat", b.param(param), shape=shape), off))


def masked_lanes(b, block: int, n: str = "n"):
    """``(mask, at)`` of the usual 1-D kernel (IR ``Builder`` ops): lanes ``pid * block + arange``,
    ``mask`` = lane < the scalar parameter ``n``, ``at(param)`` = the lanes' pointers into ``param``."""
    pid = b.op("program_id", axis=0)
    offs = b.op("add", b.op("splat", b.op("mul", pid, b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    mask = b.op("lt", offs, b.op("splat", b.param(n), shape=(block,)))

    def at(name: str):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    return mask, at


@pytest.fixture
def check_run_claims() -> Callable[..., int]:
    """Check every run ``codegen.analysis.run_of`` claims for an IR value on its computed values:
    ``check(fn, value, out, name)`` -> the number of run lengths (2, 4, 8, 16) claimed, each of
    which holds exactly on ``out`` (``start + i * step``, no wrap-around, ``start`` divisible by
    ``start_div``)."""
    from eggpu.codegen.analysis import AddressAnalysis, run_of

    def check(fn, value, out: np.ndarray, name: str) -> int:
        facts = AddressAnalysis(fn)
        claims = 0
        for length in (2, 4, 8, 16):
            r = run_of(value, length, facts)
            if r is None:
                continue
            claims += 1
            runs = out[: out.size - out.size % length].astype(np.int64).reshape(-1, length)
            starts = runs[:, 0]
            np.testing.assert_array_equal(runs, starts[:, None] + np.arange(length) * r.step,
                                          err_msg=f"{name} {length}")
            assert np.all(starts % min(r.start_div, 1 << 32) == 0), (name, length, r)
        return claims

    return check


def toolchain_problem(*, ptxas: bool = True) -> str | None:
    """Why the tests that need NVIDIA's tools cannot run here (no libdevice; no ptxas when
    ``ptxas``), or None."""
    from eggpu.codegen.toolchain import find_libdevice, find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        if ptxas:
            find_ptxas()
        find_libdevice()
    except ToolchainError as e:
        return str(e)
    return None


@pytest.fixture
def needs_ptxas() -> None:
    """Skips the test where ptxas or libdevice is missing."""
    problem = toolchain_problem()
    if problem is not None:
        pytest.skip(f"needs ptxas and libdevice: {problem}")


@pytest.fixture
def needs_libdevice() -> None:
    """Skips the test where libdevice is missing."""
    problem = toolchain_problem(ptxas=False)
    if problem is not None:
        pytest.skip(f"libdevice not found: {problem}")
