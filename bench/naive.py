"""The naive-kernel suite: Inductor-style Triton source compiled unchanged by eggpu and Triton.

:func:`load` builds the kernels of :mod:`bench.naive_kernels` for one backend (``"eggpu"``:
``@eggpu.jit`` JITFunctions; ``"triton"``: ``@triton.jit`` ones, which needs Triton installed).
:data:`NAIVE` describes each kernel: its constexprs, how to build a launch of a given size (numpy
arrays, scalar arguments, grid) and the numpy reference of its output. The same cases serve the
correctness tests (``tests/bench/test_naive_kernels.py``, interpreted and run through the
compiled lowering on the CPU) and the static measurements of ``python -m bench naive``
(:mod:`bench.naive_bench`), which compile the kernel for the types of a small case.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from . import dual

SOURCE = Path(__file__).with_name("naive_kernels.py")


def load(backend: str) -> ModuleType:
    """The kernels module executed for ``backend`` (``"eggpu"`` or ``"triton"``), loaded once."""
    return dual.load(SOURCE, backend, "_naive")


@dataclass
class Case:
    """One launch: ``args`` in parameter order (numpy arrays and Python ints), the ``grid``, and
    ``expected`` outputs by argument index (float outputs compared with ``rtol``/``atol``)."""

    args: list[Any]
    grid: tuple[int, ...]
    expected: dict[int, np.ndarray]
    rtol: float = 1e-5
    atol: float = 1e-6


@dataclass(frozen=True)
class NaiveKernel:
    """A naive kernel: ``name`` (the function in naive_kernels.py), its ``consts`` (constexprs by
    name), ``make(size, rng) -> Case`` and the ``sizes`` the tests run (ragged on purpose).
    ``bench_size`` is the size whose argument types the static measurements compile for."""

    name: str
    consts: dict[str, int]
    make: Callable[[int, np.random.Generator], Case]
    sizes: tuple[int, ...]
    bench_size: int = 1000
    tags: tuple[str, ...] = field(default=())


def _grid(numel: int, block: int) -> tuple[int]:
    return (max(1, math.ceil(numel / block)),)


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- cases

XBLOCK = 1024


def _bias_relu(rows: int, rng) -> Case:
    x, b = _f32(rng, rows, 768), _f32(rng, 768)
    out = np.zeros_like(x)
    return Case([x, b, out, x.size], _grid(x.size, XBLOCK), {2: np.maximum(x + b, 0.0)})


def _gelu(n: int, rng) -> Case:
    from math import erf

    x = _f32(rng, n)
    x64 = x.astype(np.float64)
    ref = (0.5 * x64 * (1.0 + np.vectorize(erf)(x64 * 0.7071067811865476))).astype(np.float32)
    return Case([x, np.zeros_like(x), n], _grid(n, XBLOCK), {1: ref}, rtol=1e-5, atol=1e-6)


def _row_col_affine(rows: int, rng) -> Case:
    x, s, t = _f32(rng, rows, 768), _f32(rng, rows), _f32(rng, 768)
    return Case([x, s, t, np.zeros_like(x), x.size], _grid(x.size, XBLOCK), {3: x * s[:, None] + t[None, :]})


def _permute(n: int, rng) -> Case:
    x = _f32(rng, 32, 16, 64)
    out = np.zeros((16, 32, 64), np.float32)
    return Case([x, out, n], _grid(n, XBLOCK), {1: _first(x.transpose(1, 0, 2), out, n)})


def _first(full: np.ndarray, out: np.ndarray, n: int) -> np.ndarray:
    """``out`` with its first ``n`` flat elements taken from ``full`` (a launch over a prefix)."""
    ref = out.copy().reshape(-1)
    ref[:n] = np.ascontiguousarray(full).reshape(-1)[:n]
    return ref.reshape(out.shape)


def _masked_fill(rows: int, rng) -> Case:
    keep = (rng.random(768) < 0.5).astype(np.int8)
    x = _f32(rng, rows, 768)
    return Case([keep, x, np.zeros_like(x), x.size], _grid(x.size, XBLOCK), {2: np.where(keep != 0, x, 0.0) * 2})


def _cast_chain(n: int, rng) -> Case:
    a, b = rng.standard_normal(n).astype(np.float16), rng.standard_normal(n).astype(np.float16)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    ref = ((a32 * b32).astype(np.float16).astype(np.float32) + a32).astype(np.float16)
    return Case([a, b, np.zeros_like(a), n], _grid(n, XBLOCK), {2: ref}, rtol=0, atol=0)


def _cat(rows: int, rng) -> Case:
    a, b = _f32(rng, rows, 256), _f32(rng, rows, 256)
    out = np.zeros((rows, 512), np.float32)
    return Case([a, b, out, out.size], _grid(out.size, XBLOCK), {2: np.concatenate([a, b], axis=1)}, rtol=0, atol=0)


def _embedding(tokens: int, rng) -> Case:
    idx = rng.integers(-1000, 1000, tokens).astype(np.int32)
    table = _f32(rng, 1000, 128)
    out = np.zeros((tokens, 128), np.float32)
    return Case([idx, table, out, out.size], _grid(out.size, XBLOCK), {2: table[idx % 1000]}, rtol=0, atol=0)


def _silu_mul(rows: int, rng) -> Case:
    x = _f32(rng, rows, 1024)
    out = np.zeros((rows, 512), np.float32)
    g, u = x[:, :512].astype(np.float64), x[:, 512:].astype(np.float64)
    ref = (g / (1.0 + np.exp(-g)) * u).astype(np.float32)
    return Case([x, out, out.size], _grid(out.size, XBLOCK), {1: ref}, rtol=1e-5, atol=1e-6)


def _softmax(rows: int, rng) -> Case:
    x = _f32(rng, rows, 768)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    return Case([x, np.zeros_like(x), rows, 768], (rows,), {1: ref}, rtol=1e-5, atol=1e-7)


def _layernorm(rows: int, rng) -> Case:
    x, w, b = _f32(rng, rows, 768), _f32(rng, 768), _f32(rng, 768)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    ref = ((x64 - mean) / np.sqrt(var + 1e-5) * w + b).astype(np.float32)
    return Case([x, w, b, np.zeros_like(x), rows, 768], (rows,), {3: ref}, rtol=1e-4, atol=1e-4)


def _row_sum(rows: int, rng) -> Case:
    x = _f32(rng, rows, 3000)
    out = np.zeros((rows, 1), np.float32)
    ref = x.astype(np.float64).sum(axis=1, keepdims=True).astype(np.float32)
    return Case([x, out, rows, 3000], _grid(rows, 2), {1: ref}, rtol=1e-4, atol=1e-4)


NAIVE: tuple[NaiveKernel, ...] = (
    NaiveKernel("poi_bias_relu", {"XBLOCK": XBLOCK}, _bias_relu, (1, 10, 13), 10),
    NaiveKernel("poi_gelu", {"XBLOCK": XBLOCK}, _gelu, (1, 1000, 1001)),
    NaiveKernel("poi_row_col_affine", {"XBLOCK": XBLOCK}, _row_col_affine, (1, 10, 13), 10),
    NaiveKernel("poi_permute", {"XBLOCK": XBLOCK}, _permute, (1, 1000, 32768)),
    NaiveKernel("poi_masked_fill", {"XBLOCK": XBLOCK}, _masked_fill, (1, 10, 13), 10),
    NaiveKernel("poi_cast_chain", {"XBLOCK": XBLOCK}, _cast_chain, (1, 1000, 1001)),
    NaiveKernel("poi_cat", {"XBLOCK": XBLOCK}, _cat, (1, 10, 13), 10),
    NaiveKernel("poi_embedding", {"XBLOCK": XBLOCK}, _embedding, (1, 10, 13), 10),
    NaiveKernel("poi_silu_mul", {"XBLOCK": XBLOCK}, _silu_mul, (1, 10, 13), 10),
    NaiveKernel("per_softmax", {"XBLOCK": 1, "RBLOCK": 1024}, _softmax, (1, 10, 13), 10),
    NaiveKernel("per_layernorm", {"XBLOCK": 1, "RBLOCK": 1024}, _layernorm, (1, 10, 13), 10),
    NaiveKernel("red_row_sum", {"XBLOCK": 2, "RBLOCK": 512}, _row_sum, (1, 10, 13), 10),
)

BY_NAME = {k.name: k for k in NAIVE}


def triton_signature(case: Case, fn: Any, consts: dict[str, int]) -> dict[str, str]:
    """Triton's ``ASTSource`` signature of a launch: pointers typed by their arrays' dtypes,
    Python ints as ``i32`` (as eggpu's launcher types them), constexprs as ``constexpr``."""
    names = list(fn.arg_names)
    tname = {"float16": "fp16", "float32": "fp32", "float64": "fp64", "int8": "i8", "int32": "i32",
             "int64": "i64", "bool": "i1"}
    sig: dict[str, str] = {}
    runtime = [n for n in names if n not in consts]
    for n, a in zip(runtime, case.args, strict=True):
        sig[n] = "*" + tname[a.dtype.name] if isinstance(a, np.ndarray) else "i32"
    for n in consts:
        sig[n] = "constexpr"
    return {n: sig[n] for n in names}


def launch_facts(case: Case, names: list[str], consts: dict[str, int]) -> tuple[dict[str, Any], dict, dict[str, int]]:
    """The launch-time specialization of ``case``, as both compilers' launchers make it on a GPU:
    ``(eggpu compile options, Triton attrs, Triton constants)``.

    Every buffer is taken as 16-byte aligned (device allocations are; the harness has no device
    addresses): eggpu ``align16``, Triton ``tt.divisibility = 16``. An integer argument divisible
    by 16 gets ``div16`` / ``tt.divisibility = 16``; one equal to 1 gets ``eq1`` / becomes a Triton
    constexpr. eggpu also gets ``offsets_i32`` when the grid allows it (the check its launcher
    makes; Triton assumes i32 offsets unconditionally). ``names``: the kernel's parameter names
    in order (:func:`param_names`).
    """
    from eggpu.ir.facts import facts_for_args, grid_fits_i32

    runtime = [n for n in names if n not in consts]
    specialize: dict[str, tuple[str, ...]] = {}
    attrs: dict[tuple[int, ...], list] = {}
    constants: dict[str, int] = {}
    for n, a in zip(runtime, case.args, strict=True):
        if isinstance(a, np.ndarray):
            specialize[n] = ("align16",)
            attrs[(names.index(n),)] = [["tt.divisibility", 16]]
            continue
        fact = facts_for_args([n], ["int"], [a]).get(n, ())
        if fact:
            specialize[n] = fact
        if fact == ("eq1",):
            constants[n] = 1
        elif fact == ("div16",):
            attrs[(names.index(n),)] = [["tt.divisibility", 16]]
    options: dict[str, Any] = {"specialize": specialize}
    if grid_fits_i32(case.grid, max(consts.values()) if consts else 1):
        options["offsets_i32"] = True
    return options, attrs, constants


def param_names(jit_fn: Any) -> list[str]:
    """The parameter names of a kernel of either backend, in order."""
    import inspect

    return list(inspect.signature(jit_fn.fn).parameters)


__all__ = ["BY_NAME", "NAIVE", "Case", "NaiveKernel", "launch_facts", "load", "param_names", "triton_signature"]
