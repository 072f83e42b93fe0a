"""Triton's random numbers: Philox4x32 (Salmon et al., Random123) with Triton's seed and offset
conventions, so a kernel gets the same bits as under Triton for the same seed and offsets.

* ``philox_impl(c0, c1, c2, c3, k0, k1, n_rounds)``: ``n_rounds`` Philox4x32 rounds on the counter
  (c0..c3) and key (k0, k1), all 32-bit words, the key bumped by the Weyl constants after every round.
* ``philox(seed, c0, c1, c2, c3)``: the key is the seed converted to u64 (sign-extended when it
  is signed), low word first.
* ``randint4x(seed, offset)``: counter ``(offset, 0, 0, 0)``; ``randint`` is its first word.
* ``rand``: ``randint`` of the offset's bits (as u32) mapped to ``[0, 1)`` by
  ``uint_to_uniform_float`` (the word as i32, negatives folded to ``-x - 1``, times
  ``4.656613e-10`` in f32); ``randn``: Box-Muller on the first two words (``rand4x``/``randn4x``
  give four values per offset).

All arithmetic is done on u32 words (the bits do not depend on signedness); the integer results
are u32 blocks of the offset's shape. Offsets must be 32-bit integers (a 64-bit offset would need
a second counter word, which Triton's version of these functions does not define).
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import f32, i32, i64, u32, u64

from .frontend_ops import Semantic, SemanticError, Tensor, describe

ROUND_A = 0xD2511F53
ROUND_B = 0xCD9E8D57
KEY_A = 0x9E3779B9
KEY_B = 0xBB67AE85
N_ROUNDS_DEFAULT = 10
_MASK32 = 0xFFFFFFFF


def umulhi32(s: Semantic, x: Tensor, y: Tensor) -> Tensor:
    """High 32 bits of the unsigned 64-bit product of two u32 tensors (a u32 tensor)."""
    p = s.binary("mul", s.cast(x, u64), s.cast(y, u64))
    return s.cast(s.binary("rshift", p, 32), u32)


def as_word(s: Semantic, v: Any, what: str) -> Tensor:
    """``v`` (a 32-bit integer tensor or an int literal) as u32 bits."""
    if isinstance(v, Tensor):
        if v.is_pointer or not v.dtype.is_int or v.dtype.bits != 32:
            shown = v.type if isinstance(v, Tensor) else describe(v)
            raise SemanticError(f"{what} must be a 32-bit integer block or scalar, got {shown}",
                                "convert it with .to(tl.uint32) (or tl.int32) first", arg=what)
        return s.cast(v, u32, bitcast=True) if v.dtype != u32 else v
    if isinstance(v, int) and not isinstance(v, bool):
        return s.const(v & _MASK32, u32)
    raise SemanticError(f"{what} must be a 32-bit integer block or scalar, got {describe(v)}", arg=what)


def _rounds(s: Semantic, a: dict[str, Any]) -> int:
    n = a["n_rounds"]
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 64:
        raise SemanticError(f"n_rounds must be a compile-time int in 0..64, got {describe(n)}", arg="n_rounds")
    return n


def philox_rounds(s: Semantic, c: list[Tensor], k0: Tensor, k1: Tensor, n_rounds: int) -> list[Tensor]:
    """``n_rounds`` Philox4x32 rounds; every word broadcast to one shape first."""
    shape = ()
    for w in c:
        shape = s.broadcast_shapes(shape, w.shape)
    c0, c1, c2, c3 = (s.broadcast_to(w, shape) for w in c)
    ra, rb = s.const(ROUND_A, u32), s.const(ROUND_B, u32)
    for _ in range(n_rounds):
        hi_b, hi_a = umulhi32(s, rb, c2), umulhi32(s, ra, c0)
        lo_b, lo_a = s.binary("mul", rb, c2), s.binary("mul", ra, c0)
        c0 = s.binary("xor", s.binary("xor", hi_b, c1), k0)
        c2 = s.binary("xor", s.binary("xor", hi_a, c3), k1)
        c1, c3 = lo_b, lo_a
        k0 = s.binary("add", k0, s.const(KEY_A, u32))
        k1 = s.binary("add", k1, s.const(KEY_B, u32))
    return [s.broadcast_to(w, shape) for w in (c0, c1, c2, c3)]


def _key(s: Semantic, seed: Any) -> tuple[Tensor, Tensor]:
    if isinstance(seed, int) and not isinstance(seed, bool):
        seed = s.to_tensor(seed)
    if not isinstance(seed, Tensor) or seed.is_block or seed.is_pointer or not seed.dtype.is_int:
        shown = seed.type if isinstance(seed, Tensor) else describe(seed)
        raise SemanticError(f"seed must be an integer scalar, got {shown}", arg="seed")
    wide = s.cast(seed, u64)
    lo = s.cast(s.binary("and", wide, _MASK32), u32)
    hi = s.cast(s.binary("and", s.binary("rshift", wide, 32), _MASK32), u32)
    return lo, hi


def philox_impl(s: Semantic, a: dict[str, Any]) -> tuple[Tensor, ...]:
    c = [as_word(s, a[n], n) for n in ("c0", "c1", "c2", "c3")]
    k0, k1 = as_word(s, a["k0"], "k0"), as_word(s, a["k1"], "k1")
    return tuple(philox_rounds(s, c, k0, k1, _rounds(s, a)))


def philox(s: Semantic, a: dict[str, Any]) -> tuple[Tensor, ...]:
    k0, k1 = _key(s, a["seed"])
    c = [as_word(s, a[n], n) for n in ("c0", "c1", "c2", "c3")]
    return tuple(philox_rounds(s, c, k0, k1, _rounds(s, a)))


def _randint4x(s: Semantic, a: dict[str, Any]) -> list[Tensor]:
    k0, k1 = _key(s, a["seed"])
    c0 = as_word(s, a["offset"], "offset")
    zero = s.const(0, u32)
    return philox_rounds(s, [c0, zero, zero, zero], k0, k1, _rounds(s, a))


def randint4x(s: Semantic, a: dict[str, Any]) -> tuple[Tensor, ...]:
    return tuple(_randint4x(s, a))


def randint(s: Semantic, a: dict[str, Any]) -> Tensor:
    return _randint4x(s, a)[0]


def to_uniform(s: Semantic, x: Tensor) -> Tensor:
    """Triton's ``uint_to_uniform_float`` for 32-bit words: a f32 in ``[0, 1)``."""
    xi = s.cast(x, i32, bitcast=True) if x.dtype != i32 else x
    xi = s.where(s.binary("lt", xi, 0), s.binary("sub", s.unary("neg", xi), 1), xi)
    return s.binary("mul", s.cast(xi, f32), s.const(4.656613e-10, f32))


def to_uniform64(s: Semantic, x: Tensor) -> Tensor:
    """Triton's ``uint_to_uniform_float`` for 64-bit words: the word as i64, negatives folded
    (``~x``), times 1.0842020432385337e-19 as Triton computes it: an i64 times a float literal is
    f32, so the result is a f32 in ``[0, 1]`` (FlagGems' exponential_ pastes two words for f64)."""
    xi = s.cast(x, i64, bitcast=True) if x.dtype != i64 else x
    xi = s.where(s.binary("lt", xi, 0), s.binary("sub", s.unary("neg", xi), 1), xi)
    return s.binary("mul", s.cast(xi, f32), s.const(1.0842020432385337e-19, f32))


def uint_to_uniform_float(s: Semantic, a: dict[str, Any]) -> Tensor:
    x = a["x"]
    if not isinstance(x, Tensor) or x.is_pointer or not x.dtype.is_int or x.dtype.bits not in (32, 64):
        shown = x.type if isinstance(x, Tensor) else describe(x)
        raise SemanticError(f"tl.uint_to_uniform_float needs 32- or 64-bit integers, got {shown}", arg="x")
    return to_uniform(s, x) if x.dtype.bits == 32 else to_uniform64(s, x)


def rand(s: Semantic, a: dict[str, Any]) -> Tensor:
    return to_uniform(s, _randint4x(s, a)[0])


def rand4x(s: Semantic, a: dict[str, Any]) -> tuple[Tensor, ...]:
    return tuple(to_uniform(s, w) for w in _randint4x(s, a))


def _box_muller(s: Semantic, u1: Tensor, u2: Tensor) -> tuple[Tensor, Tensor]:
    u1 = s.binary("maximum", s.const(1.0e-7, f32), u1)
    th = s.binary("mul", s.const(6.283185307179586, f32), u2)
    r = s.float_unary("sqrt", s.binary("mul", s.const(-2.0, f32), s.float_unary("log", u1)))
    return s.binary("mul", r, s.float_unary("cos", th)), s.binary("mul", r, s.float_unary("sin", th))


def pair_uniform_to_normal(s: Semantic, a: dict[str, Any]) -> tuple[Tensor, Tensor]:
    u1, u2 = (s.convert(a[n], f32) for n in ("u1", "u2"))
    u1, u2 = s.broadcast_pair(u1, u2)
    return _box_muller(s, u1, u2)


def randn(s: Semantic, a: dict[str, Any]) -> Tensor:
    w = _randint4x(s, a)
    return _box_muller(s, to_uniform(s, w[0]), to_uniform(s, w[1]))[0]


def randn4x(s: Semantic, a: dict[str, Any]) -> tuple[Tensor, ...]:
    u = [to_uniform(s, w) for w in _randint4x(s, a)]
    return _box_muller(s, u[0], u[1]) + _box_muller(s, u[2], u[3])


IMPLS: dict[str, Any] = {
    "philox_impl": philox_impl, "philox": philox, "randint4x": randint4x, "randint": randint,
    "rand": rand, "rand4x": rand4x, "randn": randn, "randn4x": randn4x,
    "uint_to_uniform_float": uint_to_uniform_float, "pair_uniform_to_normal": pair_uniform_to_normal,
}
