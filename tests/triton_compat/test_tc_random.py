"""``tl.randint/randint4x/rand/randn/philox``: Triton's Philox4x32-10 bit for bit.

The expected words come from a plain-Python Philox4x32 written from the Random123 paper (checked
here against Random123's published known-answer vectors), with Triton's conventions: key = the
seed as u64 (low word first), counter = (offset, 0, 0, 0); ``rand`` maps a word to
``float32(w as i32, negatives folded to -w - 1) * float32(4.656613e-10)``; ``randn`` is Box-Muller
on the first two words."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.validation_cost import uniform4
from eggpu.kernel_macro.diagnostics import KernelCompileError

M32 = 0xFFFFFFFF


def philox_ref(c, k, rounds=10):
    c, k = list(c), list(k)
    for _ in range(rounds):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
        k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
    return c


# Random123's kat_vectors for philox4x32_10: (counter, key) -> output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32,) * 4, (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def test_reference_matches_random123():
    for ctr, key, out in KAT:
        assert philox_ref(ctr, key) == list(out)


def words(seed, offsets):
    s = seed % 2**64
    return np.array([philox_ref((int(o) & M32, 0, 0, 0), (s & M32, s >> 32)) for o in offsets],
                    np.uint64).astype(np.uint32).T


def uniform(w):
    x = w.view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.656613e-10)


@eggpu.jit
def philox_kat(c_ptr, out_ptr, seed):
    i = tl.arange(0, 4)
    c0 = tl.load(c_ptr + i * 4)
    c1 = tl.load(c_ptr + i * 4 + 1)
    c2 = tl.load(c_ptr + i * 4 + 2)
    c3 = tl.load(c_ptr + i * 4 + 3)
    a, b, c, d = tl.philox(seed, c0, c1, c2, c3)
    tl.store(out_ptr + i * 4, a)
    tl.store(out_ptr + i * 4 + 1, b)
    tl.store(out_ptr + i * 4 + 2, c)
    tl.store(out_ptr + i * 4 + 3, d)


@pytest.mark.parametrize("ctr,key,want", KAT, ids=["zero", "ones", "pi"])
def test_philox_known_answers(run_both, ctr, key, want):
    seed = key[0] | (key[1] << 32)
    c = np.tile(np.array(ctr, np.uint32), 4)
    res = run_both(philox_kat, (1,), c, np.zeros(16, np.uint32), seed)
    for device, (_, out) in res.items():
        assert [hex(v) for v in out[:4]] == [hex(v) for v in want], device
        assert (out.reshape(4, 4) == np.array(want, np.uint32)).all(), device


@eggpu.jit
def random_streams(words_ptr, u_ptr, n_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(words_ptr + offs, a, mask=mask)
    tl.store(words_ptr + n + offs, b, mask=mask)
    tl.store(words_ptr + 2 * n + offs, c, mask=mask)
    tl.store(words_ptr + 3 * n + offs, d, mask=mask)
    tl.store(words_ptr + 4 * n + offs, tl.randint(seed, offs), mask=mask)
    tl.store(u_ptr + offs, tl.rand(seed, offs), mask=mask)
    tl.store(n_ptr + offs, tl.randn(seed, offs), mask=mask)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("seed", [0, 12345, -7, 2**40 + 3])
def test_rand_randint_randn_match_triton(run_both, n, seed):
    res = run_both(random_streams, (-(-n // 128),), np.zeros(5 * n, np.uint32), np.zeros(n, np.float32),
                   np.zeros(n, np.float32), seed, n, BLOCK=128)
    w = words(seed, range(n))
    u = uniform(w[0])
    u1, u2 = np.maximum(np.float32(1e-7), u).astype(np.float64), uniform(w[1]).astype(np.float64)
    normal = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    for device, (ws, us, ns) in res.items():
        np.testing.assert_array_equal(ws.reshape(5, n)[:4], w, err_msg=device)
        np.testing.assert_array_equal(ws.reshape(5, n)[4], w[0], err_msg=device)
        np.testing.assert_array_equal(us, u, err_msg=device)  # bit for bit
        assert ((us >= 0) & (us < 1)).all()
        np.testing.assert_allclose(ns, normal, rtol=2e-5, atol=2e-5, err_msg=device)


def test_rand4x_randn4x(run_both):
    res = run_both(uniform4, (1,), np.zeros(64, np.float32), 99, N=32)
    w = words(99, range(32))
    u = [uniform(x) for x in w]
    want_u = ((u[0] + u[1]) + u[2]) + u[3]
    ud = [np.maximum(np.float32(1e-7), x).astype(np.float64) if i % 2 == 0 else x.astype(np.float64)
          for i, x in enumerate(u)]
    r0, r1 = np.sqrt(-2 * np.log(ud[0])), np.sqrt(-2 * np.log(ud[2]))
    t0, t1 = 6.283185307179586 * ud[1], 6.283185307179586 * ud[3]
    want_n = r0 * np.cos(t0) * r0 * np.sin(t0) + r1 * np.cos(t1) * r1 * np.sin(t1)
    for device, (out,) in res.items():
        np.testing.assert_array_equal(out[:32], want_u, err_msg=device)
        np.testing.assert_allclose(out[32:], want_n, rtol=1e-4, atol=1e-4, err_msg=device)


@eggpu.jit
def mulhi_signed(a_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.umulhi(tl.load(a_ptr + offs), -766435501))  # 0xD2511F53 as i32


def test_umulhi_is_unsigned_like_triton(run_both):
    a = np.array([1, -1, -2**31, 2**31 - 1, 0x12345678, -5, 3, 0], np.int32)
    res = run_both(mulhi_signed, (1,), a, np.zeros(8, np.int32), N=8)
    want = np.array([(int(x) % 2**32 * 0xD2511F53) >> 32 for x in a], np.uint32).view(np.int32)
    for device, (_, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


@eggpu.jit
def wide_offsets(out_ptr):
    offs = tl.arange(0, 4).to(tl.int64)
    tl.store(out_ptr + offs, tl.rand(3, offs))


def test_64_bit_offsets_are_a_located_error():
    with pytest.raises(KernelCompileError) as ei:
        wide_offsets.specialize(np.zeros(4, np.float32)).ir()
    head = str(ei.value).splitlines()[0]
    assert "offset must be a 32-bit integer block or scalar, got i64[4]" in head


@eggpu.jit
def _uniform64(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(o_ptr + offs, tl.uint_to_uniform_float(x), mask=offs < n)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("np_dtype", [np.uint64, np.int64])
def test_uint_to_uniform_float_of_64_bit_words(run_both, as_bits, n, np_dtype):
    """Triton's 64-bit branch (FlagGems' exponential_ for f64): ~x for negatives, times
    1.0842020432385337e-19; an i64 times a float literal is f32 in Triton, so is the result."""
    rng = np.random.default_rng(n)
    words = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    words[:4] = [0, 2**63 - 1, 2**63, 2**64 - 1][:min(4, n)] if n >= 4 else words[:n]
    x = words.astype(np_dtype) if np_dtype == np.uint64 else words.view(np.int64)
    i = x.view(np.int64)
    want = np.where(i < 0, ~i, i).astype(np.float32) * np.float32(1.0842020432385337e-19)
    out = run_both(_uniform64, (eggpu.cdiv(n, 256),), x, np.zeros(n, np.float32), n, BLOCK=256)
    for dev in ("interpret", "cpu"):
        np.testing.assert_array_equal(as_bits(out[dev][1]), as_bits(want), err_msg=dev)
        assert (out[dev][1] >= 0).all() and (out[dev][1] <= 1).all()
