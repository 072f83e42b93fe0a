"""libdevice's integer bit functions: ``popc``, ``clz``, ``ffs`` (i32 results, as Triton's),
``brev`` and ``mulhi`` (the operands' dtype; signed dtypes multiply signed, as ``__nv_mulhi``/
``__nv_mul64hi``, unsigned ones as ``__nv_umulhi``/``__nv_umul64hi``), in interpret and run_cpu,
exactly against Python integers on i32/i64/u32/u64 (and i8/u16): 0, -1, the extremes, powers of two."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.language.extra import libdevice


@eggpu.jit
def _bits(x_ptr, y_ptr, c_ptr, r_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x, y = tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m)
    counts = (libdevice.popc(x), libdevice.clz(x), tl.extra.cuda.libdevice.ffs(x))
    for i in tl.static_range(3):
        tl.static_assert(counts[i].dtype == tl.int32, "popc/clz/ffs are int32, as in Triton")
        tl.store(c_ptr + i * n + offs, counts[i], mask=m)
    rs = (libdevice.brev(x), libdevice.mulhi(x, y))
    for i in tl.static_range(2):
        tl.static_assert(rs[i].dtype == x.dtype, "brev/mulhi keep the dtype")
        tl.store(r_ptr + i * n + offs, rs[i], mask=m)


def _inputs(n: int, npdt) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(npdt)
    bits = info.bits
    edges = [0, 1, info.max, info.min, 2, 3, 1 << (bits - 2), (1 << (bits - 1)) - 1, 0x55 % (info.max + 1)]
    if info.min < 0:
        edges += [-1, -2, info.min + 1]
    rng = np.random.default_rng(n)
    rand = rng.integers(info.min, info.max, size=2 * n, endpoint=True, dtype=npdt)
    x = np.concatenate([np.array(edges, dtype=npdt), rand[:n]])[:n]
    y = np.concatenate([np.array(edges[::-1], dtype=npdt), rand[n:]])[:n]
    return x, y


def _want(x: np.ndarray, y: np.ndarray, npdt):
    bits = np.iinfo(npdt).bits
    mask = (1 << bits) - 1
    counts, revs, highs = [[], [], []], [], []
    for a, b in zip(x.tolist(), y.tolist()):
        p = a & mask  # the two's-complement pattern
        counts[0].append(bin(p).count("1"))
        counts[1].append(bits - p.bit_length())
        counts[2].append(0 if p == 0 else (p & -p).bit_length())
        revs.append(int(f"{p:0{bits}b}"[::-1], 2))
        highs.append(((a * b) >> bits) & mask)
    unsigned = f"u{bits // 8}"
    as_dt = [np.array(v, dtype=np.uint64).astype(unsigned).view(npdt) for v in (revs, highs)]
    return [np.array(c, np.int32) for c in counts], as_dt


@pytest.mark.parametrize("npdt", [np.int32, np.int64, np.uint32, np.uint64, np.int8, np.uint16], ids=str)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_bit_functions_match_python_integers(run_both, npdt, n):
    x, y = _inputs(n, npdt)
    counts, rs = _want(x, y, npdt)
    args = (x, y, np.zeros(3 * n, np.int32), np.zeros(2 * n, npdt), n)
    for device, (_, _, c, r) in run_both(_bits, (eggpu.cdiv(n, 128),), *args, BLOCK=128).items():
        for i, name in enumerate(("popc", "clz", "ffs")):
            np.testing.assert_array_equal(c[i * n:(i + 1) * n], counts[i], err_msg=f"{name}[{npdt}] on {device}")
        for i, name in enumerate(("brev", "mulhi")):
            np.testing.assert_array_equal(r[i * n:(i + 1) * n], rs[i], err_msg=f"{name}[{npdt}] on {device}")


def test_documented_values_i32(run_both):
    x = np.array([0, -1, 1, -2147483648, 12], np.int32)
    y = np.array([5, -1, 2147483647, -2147483648, 1 << 30], np.int32)
    args = (x, y, np.zeros(15, np.int32), np.zeros(10, np.int32), 5)
    for device, (_, _, c, r) in run_both(_bits, (1,), *args, BLOCK=8).items():
        assert list(c[:5]) == [0, 32, 1, 1, 2], f"popc on {device}"
        assert list(c[5:10]) == [32, 0, 31, 0, 28], f"clz on {device}"
        assert list(c[10:]) == [0, 1, 1, 32, 3], f"ffs on {device}"
        assert list(r[:5]) == [0, -1, -2147483648, 1, 805306368], f"brev on {device}"
        assert list(r[5:]) == [0, 0, 0, 1 << 30, 3], f"mulhi on {device}"  # (-1)(-1) = 1: high word 0


@eggpu.jit
def _float_popc(x_ptr):
    tl.store(x_ptr, libdevice.popc(tl.load(x_ptr)).to(tl.float32))


def test_float_operand_is_a_located_error():
    with pytest.raises(eggpu.CompileError) as ei:
        _float_popc[(1,)](np.ones(1, np.float32))
    text = str(ei.value)
    assert "libdevice.popc needs an integer block operand, got f32" in text and "^" in text


@pytest.mark.parametrize("name", ["popc", "clz", "ffs", "brev"])
def test_a_scalar_operand_gives_a_scalar(name):
    # np.ascontiguousarray makes a 0-d array 1-d: the interpreter refused popc on a scalar i8
    # ("the reference returned int8[1], expected i8"; found by the optimizer's random programs)
    from eggpu.ir import dtypes, semantics

    for dt, value, want in [(dtypes.i8, -1, {"popc": 8, "clz": 0, "ffs": 1, "brev": -1}),
                            (dtypes.u32, 6, {"popc": 2, "clz": 29, "ffs": 2, "brev": 0x60000000})]:
        got = getattr(semantics, name)(np.array(value, dt.np), dt)
        assert got.shape == () and int(got) == want[name], (name, dt, got)
