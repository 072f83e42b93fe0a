"""The language's composite functions, drawn into generated programs (``fuzzgen``'s ``composite`` step).

``tl.cumsum``/``tl.cumprod`` (scans), ``tl.sort``/``tl.topk`` (bitonic networks of gathers),
``tl.flip``, ``tl.join``/``tl.split``/``tl.interleave``, ``tl.cat``, ``tl.histogram``,
``x.to(dtype, fp_downcast_rounding="rtz")``, ``tl.clamp`` (both ``propagate_nan``), ``tl.umulhi``
and libdevice's ``copysign``, ``fdim``, ``isnan``/``isinf``/``finitef``/``signbit`` have no IR op: the frontend expands them into IR ops
(gather, where, reductions, bitcasts, ...). The generator calls those same expansions
(:class:`eggpu.kernel_macro.frontend_ops.Semantic` over its builder), so the differential run
checks the expanded IR three ways, edge values included (NaN and -0.0 through the sorting
network, INT_MIN through the scans, out-of-range histogram values, overflow and subnormals
rounded toward zero).

Each drawer takes the generator (``fuzzgen._Gen``) and returns the new values (blocks of rank <= 2
or scalars, never FP8), or ``[]`` when the pool holds no suitable operand.
"""

from __future__ import annotations

from collections.abc import Callable

from eggpu.ir import Value, bool_
from eggpu.kernel_macro import compat, scans, shuffles, sorting
from eggpu.kernel_macro.frontend_ops import Semantic
from eggpu.kernel_macro.frontend_values import Tensor


def _blocks(g, pred=lambda u: True) -> list[Value]:
    return [u for u in g.pool if not u.type.is_scalar and pred(u)]


def _pow2(n: int) -> bool:
    return n & (n - 1) == 0


def _scan(name: str) -> Callable:
    def draw(g) -> list[Value]:
        cands = _blocks(g, lambda u: name == "cumsum" or not u.type.dtype.is_bool)
        if not cands:
            return []
        x = g.choice(cands)
        a = {"input": Tensor(x), "axis": int(g.rng.integers(0, x.type.rank)), "reverse": g.coin(), "dtype": None}
        return [scans.IMPLS[name](Semantic(g.b), a).value]
    return draw


def _sort(g) -> list[Value]:
    cands = [(u, d) for u in _blocks(g) for d in range(u.type.rank) if _pow2(u.type.shape[d])]
    if not cands:
        return []
    x, dim = g.choice(cands)
    a = {"x": Tensor(x), "dim": dim if g.coin() else (None if dim == x.type.rank - 1 else dim),
         "descending": g.coin()}
    return [sorting.IMPLS["sort"](Semantic(g.b), a).value]


def _topk(g) -> list[Value]:
    cands = _blocks(g, lambda u: _pow2(u.type.shape[-1]))
    if not cands:
        return []
    x = g.choice(cands)
    n = x.type.shape[-1]
    k = g.choice([1 << i for i in range(n.bit_length())])
    a = {"x": Tensor(x), "k": k, "dim": None, "descending": g.coin()}
    return [sorting.IMPLS["topk"](Semantic(g.b), a).value]


def _flip(g) -> list[Value]:
    cands = _blocks(g)
    if not cands:
        return []
    x = g.choice(cands)
    a = {"x": Tensor(x), "dim": None if g.coin() else int(g.rng.integers(0, x.type.rank))}
    return [shuffles.IMPLS["flip"](Semantic(g.b), a).value]


def _pair(g, rank1: bool) -> tuple[Value, Value] | None:
    cands = _blocks(g, lambda u: u.type.rank == 1) if rank1 else _blocks(g)
    if not cands:
        return None
    x = g.choice(cands)
    y = g.pick(lambda u, t=x.type: u.type == t)
    return x, y


def _join_split(g) -> list[Value]:
    """``join`` of two 1-D blocks (a ``[n, 2]`` block), then, half of the time, ``split`` of it."""
    pair = _pair(g, rank1=True)
    if pair is None:
        return []
    s = Semantic(g.b)
    j = shuffles.IMPLS["join"](s, {"a": Tensor(pair[0]), "b": Tensor(pair[1])})
    if g.coin():
        return [j.value]
    return [t.value for t in shuffles.IMPLS["split"](s, {"a": j})]


def _interleave(g) -> list[Value]:
    pair = _pair(g, rank1=False)
    if pair is None:
        return []
    return [shuffles.IMPLS["interleave"](Semantic(g.b), {"a": Tensor(pair[0]), "b": Tensor(pair[1])}).value]


def _cat(g) -> list[Value]:
    x = g.pick(lambda u: u.type.rank == 1)
    y = g.pick(lambda u: u.type.rank == 1 and u.type.dtype == x.type.dtype) if x is not None else None
    if y is None:
        return []
    a = {"input": Tensor(x), "other": Tensor(y), "can_reorder": g.coin()}
    return [shuffles.IMPLS["cat"](Semantic(g.b), a).value]


def _histogram(g) -> list[Value]:
    x = g.pick(lambda u: u.type.rank == 1 and u.type.dtype.is_int)
    if x is None:
        return []
    mask = g.pick(lambda u: u.type.dtype == bool_ and u.type.shape in ((), x.type.shape)) if g.coin() else None
    a = {"input": Tensor(x), "num_bins": int(g.rng.integers(1, 12)), "mask": None if mask is None else Tensor(mask)}
    return [shuffles.IMPLS["histogram"](Semantic(g.b), a).value]


def _to_rtz(g) -> list[Value]:
    x = g.pick(lambda u: u.type.dtype.is_float and u.type.dtype.bits > 16)
    if x is None:
        return []
    from eggpu.ir import bf16, f16, f32

    narrower = [d for d in (f16, bf16, f32) if d.bits < x.type.dtype.bits]
    dt = g.choice(narrower)
    rounding = "rtz" if g.coin(0.8) else "rtne"
    return [compat.converted(Semantic(g.b), Tensor(x), dt, rounding, False, "x.to").value]


def _no_nan(g, y: Value) -> Value:
    """``y`` with NaN lanes replaced by 1.0: a NaN's sign bit is not specified (fuzzrun compares any
    NaN equal), so a function that reads it (copysign's sign source, signbit) gets none."""
    b = g.b
    return b.op("where", b.op("ne", y, y), g.like(y, b.const(1.0, y.type.dtype)), y)


def _float_pair(g) -> tuple[Value, Value] | None:
    x = g.pick(lambda u: u.type.dtype.is_float)
    if x is None:
        return None
    return x, g.pick(lambda u, t=x.type: u.type == t)


def _float_binary(name: str) -> Callable:
    """libdevice's ``copysign``/``fdim`` (``tl.math``), expanded from exact ops by the frontend."""
    def draw(g) -> list[Value]:
        pair = _float_pair(g)
        if pair is None:
            return []
        x, y = pair
        if name == "copysign":
            y = _no_nan(g, y)
        return [compat.IMPLS[name](Semantic(g.b), {"x": Tensor(x), "y": Tensor(y)}).value]
    return draw


def _classify(g) -> list[Value]:
    x = g.pick(lambda u: u.type.dtype.is_float)
    if x is None:
        return []
    name = g.choice(["isnan", "isinf", "finitef" if x.type.dtype.bits < 64 else "isfinited", "signbit"])
    if name == "signbit":
        x = _no_nan(g, x)
    return [compat.IMPLS[name](Semantic(g.b), {"x": Tensor(x)}).value]


def _umulhi(g) -> list[Value]:
    from eggpu.ir import i32, u32

    x = g.pick(lambda u: u.type.dtype in (i32, u32))
    if x is None:
        return []
    y = g.pick(lambda u, t=x.type: u.type == t)
    return [compat.IMPLS["umulhi"](Semantic(g.b), {"x": Tensor(x), "y": Tensor(y)}).value]


def _clamp(g) -> list[Value]:
    """``tl.clamp(x, lo, hi, propagate_nan)`` on numbers (lo > hi and NaN bounds included)."""
    from eggpu.kernel_macro import language as tl

    x = g.pick(lambda u: not u.type.dtype.is_bool)
    if x is None:
        return []
    lo, hi = (g.pick(lambda u, t=x.type: u.type == t) for _ in range(2))
    nan = tl.PropagateNan.ALL if x.type.dtype.is_float and g.coin() else tl.PropagateNan.NONE
    a = {"x": Tensor(x), "min": Tensor(lo), "max": Tensor(hi), "propagate_nan": nan}
    return [compat.IMPLS["clamp"](Semantic(g.b), a).value]


COMPOSITES: dict[str, Callable] = {
    "copysign": _float_binary("copysign"), "fdim": _float_binary("fdim"), "classify": _classify,
    "umulhi": _umulhi, "clamp": _clamp,
    "cumsum": _scan("cumsum"), "cumprod": _scan("cumprod"), "sort": _sort, "topk": _topk, "flip": _flip,
    "join_split": _join_split, "interleave": _interleave, "cat": _cat, "histogram": _histogram, "to_rtz": _to_rtz,
}
"""Name -> drawer (see the module docstring)."""
