"""The generic ``libdevice`` op (Triton's extern_elementwise; ir/libdevice_table.py): every symbol
compiles to PTX that ptxas accepts (sm_80, sm_90); every symbol the host can run gives the same
bits in the interpreter and run_cpu (sinpi/cospi: within 1-2 ulp, :data:`HOST_ULPS`); the GPU-only
ones are a located error in both.

The numbers themselves are checked against independent references in
tests/triton_compat/test_tc_libdevice_calls.py (numpy, libm, exact Fractions)."""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir import BY_NAME, Builder, i32, pointer, scalar
from eggpu.ir.libdevice_table import FUNCTIONS, SYMBOLS, host_kind

from .conftest import masked_lanes, run_compare

BLOCK = 128


def call_kernel(symbol: str):
    """``o[i] = symbol(a0[i], a1[i], ...)`` for i < n."""
    name, args, res = SYMBOLS[symbol]
    params = [(f"a{i}", pointer(BY_NAME[a])) for i, a in enumerate(args)]
    b = Builder(f"ld_{name}", [*params, ("o", pointer(BY_NAME[res])), ("n", scalar(i32))])
    mask, at = masked_lanes(b, BLOCK)
    vals = [b.op("load", at(f"a{i}"), mask) for i in range(len(args))]
    b.effect("store", at("o"), b.op("libdevice", *vals, symbol=symbol), mask)
    return b.finish()


def edge_values(dt: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random values of ``dt`` led by its special values (NaN, +-0, +-inf, denormals, extremes)."""
    d = BY_NAME[dt]
    if d.is_float:
        fi = np.finfo(d.np)
        edge = [np.nan, 0.0, -0.0, np.inf, -np.inf, fi.tiny / 4, -fi.tiny / 8, fi.smallest_subnormal, fi.max,
                -fi.max, 1.0, -1.0, 0.5, 2.5, -3.5, 1e6, 0.1, 123.456]
        v = (rng.standard_normal(n) * rng.choice([1.0, 10.0, 1e4], n)).astype(d.np)
    else:
        info = np.iinfo(d.np)
        edge = [0, 1, info.max, info.min, info.max - 1, 2, 3, 255, 1 << 20]
        v = rng.integers(info.min, info.max, n, endpoint=True, dtype=d.np)
    k = min(len(edge), n)
    v[:k] = np.array(edge[:k], dtype=d.np)
    return v


HOST_SYMBOLS = sorted(s for s, (name, _, _) in SYMBOLS.items() if host_kind(name) != "gpu")
GPU_SYMBOLS = sorted(s for s, (name, _, _) in SYMBOLS.items() if host_kind(name) == "gpu")
# run_cpu runs libdevice's own code for these (codegen/libdevice_host.py: the GPU's bits), which is
# not correctly rounded; the interpreter runs eggpu's reference (libdevice_refs). They differ by at
# most this many ulp (test_libdevice_host.py::test_sinpi_cospi_disagreement: which is closer).
HOST_ULPS = {"__nv_sinpi": 2, "__nv_cospi": 2, "__nv_sinpif": 1, "__nv_cospif": 1}


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Steps between floats of one dtype (-0 and +0 one value; NaN against NaN 0, else huge)."""
    ints = np.int32 if a.dtype == np.float32 else np.int64

    def ordered(v):
        i = v.view(ints).astype(object)
        return np.where(i < 0, -(1 << (8 * v.itemsize - 1)) - i, i)

    d = np.abs(ordered(a) - ordered(b))
    return np.where(np.isnan(a) & np.isnan(b), 0, np.where(np.isnan(a) | np.isnan(b), 1 << 64, d))


@pytest.mark.parametrize("n", (1, 1001))
@pytest.mark.parametrize("symbol", HOST_SYMBOLS)
def test_interpreter_and_run_cpu_agree_bit_for_bit(symbol, n):
    name, args, res = SYMBOLS[symbol]
    rng = np.random.default_rng(len(symbol) * 7 + n)
    ins = [edge_values(a, n, rng) for a in args]
    if name in ("jn", "yn"):  # the order: small integers
        ins[0] = rng.integers(-3, 6, n).astype(np.int32)
    for i in range(1, len(ins)):  # vary the pairing of special values
        ins[i] = np.roll(ins[i], i * 3)
    out = np.zeros(n, BY_NAME[res].np)
    if symbol in HOST_ULPS:
        from eggpu.codegen import build_host
        from eggpu.ir.interp import interpret

        want, got = out.copy(), out.copy()
        grid = ((n + BLOCK - 1) // BLOCK,)
        interpret(call_kernel(symbol), grid, *ins, want, n)
        build_host(call_kernel(symbol)).run(grid, *ins, got, n)
        assert (np.signbit(want) == np.signbit(got))[want == 0].all(), symbol
        assert ulp_distance(want, got).max() <= HOST_ULPS[symbol], symbol
        return
    run_compare(call_kernel(symbol), ((n + BLOCK - 1) // BLOCK,), [*ins, out, n])


@pytest.mark.parametrize("symbol", GPU_SYMBOLS)
def test_gpu_only_symbols_are_refused_by_interpreter_and_run_cpu(symbol):
    from eggpu.codegen import build_host
    from eggpu.ir.errors import CodegenError, InterpreterError
    from eggpu.ir.interp import interpret

    name = SYMBOLS[symbol][0]
    fn = call_kernel(symbol)
    args = [np.zeros(1, BY_NAME[a].np) for a in SYMBOLS[symbol][1]] + [np.zeros(1, BY_NAME[SYMBOLS[symbol][2]].np), 1]
    with pytest.raises(InterpreterError, match=rf"libdevice\.{name} \({symbol}\) is GPU-only: the numpy interpreter"):
        interpret(fn, (1,), *args)
    with pytest.raises(CodegenError, match=rf"libdevice\.{name} \({symbol}\) is GPU-only: run_cpu"):
        build_host(fn)


@pytest.mark.parametrize("sm", ("sm_80", "sm_90"))
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_libdevice_function_compiles_and_ptxas_accepts_it(name, sm, needs_ptxas):
    """Each overload of ``name`` is linked from libdevice and inlined (no ``__nv_`` call left)."""
    from eggpu.codegen import compile_ptx
    from eggpu.codegen.ptxas import run_ptxas

    for _, symbol, _ in FUNCTIONS[name]:
        ptx, _ = compile_ptx(call_kernel(symbol), sm)
        assert "__nv_" not in ptx, f"{symbol}: a libdevice call left in the PTX"
        assert run_ptxas(ptx, sm).cubin, symbol


def test_unknown_symbol_and_wrong_dtypes_are_ir_errors():
    from eggpu.ir import f32, f64
    from eggpu.ir.errors import IRError
    from eggpu.ir.ops import result_types
    from eggpu.ir.types import BlockType

    with pytest.raises(IRError, match=r"libdevice: unknown libdevice symbol '__nv_frexpf'"):
        result_types("libdevice", [BlockType(f32, (4,))], {"symbol": "__nv_frexpf"})
    with pytest.raises(IRError, match=r"__nv_ldexpf \(ldexp\) takes \(f32, i32\), got \(f64, i32\)"):
        result_types("libdevice", [BlockType(f64, (4,)), BlockType(i32, (4,))], {"symbol": "__nv_ldexpf"})
    with pytest.raises(IRError, match=r"operands must have one shape"):
        result_types("libdevice", [BlockType(f32, (4,)), BlockType(i32, (8,))], {"symbol": "__nv_ldexpf"})


def test_docs_list_every_function_and_where_it_runs():
    """docs/language.md, "The rest of libdevice": each name once in the table row of its host kind."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    start = doc.index("#### The rest of libdevice")
    rows = [ln for ln in doc[start:doc.index("\n\n", doc.index("| functions |", start))].splitlines()
            if ln.startswith("| `")]
    listed = {n: i for i, row in enumerate(rows) for n in row.split(" | ")[0].strip("| ").replace("`", "").split()}
    assert sorted(listed) == sorted(FUNCTIONS), sorted(set(FUNCTIONS) ^ set(listed))
    gpu_row = next(i for i, row in enumerate(rows) if "**GPU only**" in row)
    assert {n for n, i in listed.items() if i == gpu_row} == {n for n in FUNCTIONS if host_kind(n) == "gpu"}
