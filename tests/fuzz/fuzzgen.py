"""Random well-typed kernels for the differential fuzzer (seeded, no hypothesis).

``generate(seed)`` builds one straight-line kernel with :class:`eggpu.ir.Builder` and
``make_args(program, seed)`` the arguments it runs on. The same seed always gives the same
program and the same arguments, so a mismatch is reproduced by its seed alone.

Every program has

* pointer inputs ``in0..`` (1-3), scalar inputs ``s0..`` (0-2, edge values), an ``n`` (i32 scalar:
  the ragged number of valid elements over the whole grid) and pointer outputs ``out0..`` (1-3);
* one block shape (rank 1 or 2, some not a power of two) and a grid of 1-3 programs; program
  ``p`` owns elements ``[p * numel, (p + 1) * numel)``; every load is masked with
  ``offset < n`` (with an ``other`` value, or without: then masked-off lanes are undefined);
* up to ``max_ops`` random steps over a pool of values: unary / binary elementwise ops of the op
  table (integer ``div``/``rem``/``shl``/``shr`` raw, so they meet 0 divisors, ``INT_MIN / -1``
  and out-of-range shift amounts, or guarded into their defined range), comparisons, ``fma``,
  ``where``, ``cast``, ``bitcast`` (from integer or bool sources only: a NaN's payload is not
  specified), ``splat``, ``const`` (edge values), reductions, ``program_id`` and shape ops;
* per output a final ``store`` of one pool value (cast to the pointer's dtype) at that value's
  own element offsets (block-shaped values masked with ``offset < n``); an output may instead
  store a transcendental of a float value or a float ``reduce_sum`` (the order of a float sum is
  unspecified): such outputs are compared with a tolerance (:attr:`FuzzProgram.tolerances`).

Inputs are drawn from edge-value pools (0, ±1, INT_MIN, INT_MAX, shift amounts around the width,
NaN, ±0.0, ±inf, subnormals, the largest finite value) mixed with random values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eggpu.ir import ALL_DTYPES, Builder, DType, Function, Value, bool_, i32, pointer, scalar
from eggpu.ir.ops import ELEMENTWISE, OPS_LIST, TRANSCENDENTAL

SHAPES: tuple[tuple[int, ...], ...] = ((4,), (8,), (3,), (5,), (16,), (2, 4), (3, 2), (4, 4), (1, 3))
NUMERIC = [d for d in ALL_DTYPES if d != bool_]
_UNARY = [d.name for d in OPS_LIST if ELEMENTWISE in d.traits and d.arity == (1, 1) and not d.attrs
          and TRANSCENDENTAL not in d.traits]
_TRANSCENDENTAL = [d.name for d in OPS_LIST if TRANSCENDENTAL in d.traits]
_BINARY = [d.name for d in OPS_LIST if ELEMENTWISE in d.traits and d.arity == (2, 2)
           and d.name != "addptr" and "comparison" not in d.traits
           and TRANSCENDENTAL not in d.traits]  # (approximate: only as tolerant outputs, below)
_COMPARE = [d.name for d in OPS_LIST if "comparison" in d.traits]
_FAMILY = {d.name: d.family for d in OPS_LIST}
_ARITY = {d.name: d.arity[0] for d in OPS_LIST}
_UB_OPS = ("div", "rem", "shl", "shr")
#: relative tolerance of a transcendental output per dtype (libm vs the f64 reference: a few ulp)
TRANS_RTOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 4e-6, "f64": 1e-13}


def accepts(op: str, dt: DType) -> bool:
    """Whether ``op`` takes operands of element dtype ``dt`` (its dtype family)."""
    fam = _FAMILY[op]
    return (fam == "any" or (fam == "num" and not dt.is_bool) or (fam == "int" and dt.is_int)
            or (fam == "int|bool" and (dt.is_int or dt.is_bool)) or (fam == "float" and dt.is_float))


@dataclass
class FuzzProgram:
    """One generated kernel and what running it needs.

    ``grid`` programs of ``numel`` elements each; ``out_sizes[k]`` elements of ``out<k>``;
    ``tolerances`` maps an output index to ``(rtol, atol)`` (absent: bit-exact, NaN == NaN);
    ``load_without_other`` says a masked load has no ``other`` (its masked-off lanes are
    undefined, so only a full ``n`` makes the program fully defined).
    """

    seed: int
    fn: Function
    grid: int
    numel: int
    in_dtypes: list[DType]
    scalar_dtypes: list[DType]
    out_dtypes: list[DType]
    out_sizes: list[int]
    tolerances: dict[int, tuple[float, float]] = field(default_factory=dict)
    load_without_other: bool = False

    @property
    def total(self) -> int:
        return self.grid * self.numel


def int_edges(dt: DType) -> list[int]:
    lo, hi = int(dt.min), int(dt.max)
    vals = [0, 1, 2, 3, hi, hi - 1, dt.bits - 1, dt.bits, dt.bits + 1, 7]
    if dt.is_signed:
        vals += [-1, -2, lo, lo + 1, -dt.bits]
    return [v for v in vals if lo <= v <= hi]


def float_edges(dt: DType) -> list[float]:
    info = np.finfo(np.float16 if dt.name == "f16" else np.float32 if dt.name in ("f32", "bf16") else np.float64)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, float("inf"), float("-inf"), float("nan"), 1e-3, 7.0,
            float(info.tiny), -float(info.tiny), float(info.max), -float(info.max), float(info.smallest_subnormal)]
    return [_round(v, dt) for v in vals]


def _round(x: float, dt: DType) -> float:
    with np.errstate(all="ignore"):
        return float(np.asarray(x, np.float64).astype(dt.np).astype(np.float64))


def values(dt: DType, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` values of ``dt``: about half edge values, half random."""
    if dt.is_bool:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt.is_int:
        edges = np.array(int_edges(dt), dtype=object)
        rand = rng.integers(int(dt.min), int(dt.max), n, endpoint=True, dtype=np.int64 if dt.bits < 64 or dt.is_signed else np.uint64)
        small = rng.integers(-3 if dt.is_signed else 0, dt.bits + 3, n)
        pick = rng.integers(0, 3, n)
        out = [edges[rng.integers(0, len(edges))] if k == 0 else (int(rand[i]) if k == 1 else int(small[i]))
               for i, k in enumerate(pick)]
        return np.array(out, dtype=object).astype(dt.np)
    edges = float_edges(dt)
    with np.errstate(all="ignore"):
        rand = rng.standard_normal(n) * (10.0 ** rng.integers(-3, 4, n))
        out = np.where(rng.integers(0, 2, n) == 0, np.array(edges)[rng.integers(0, len(edges), n)], rand)
        return out.astype(dt.np)


def scalar_value(dt: DType, rng: np.random.Generator):
    return values(dt, 1, rng)[0].item() if not dt.is_bool else bool(rng.integers(0, 2))


class _Gen:
    def __init__(self, seed: int, max_ops: int):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.max_ops = max_ops

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def const(self, dt: DType) -> Value:
        if dt.is_bool:
            v: object = self.coin()
        elif dt.is_int:
            v = self.choice(int_edges(dt)) if self.coin(0.7) else int(self.rng.integers(-100, 100)) % (int(dt.max) + 1) \
                if not dt.is_signed else int(self.rng.integers(-100, 100))
        else:
            v = self.choice(float_edges(dt)) if self.coin(0.7) else _round(float(self.rng.standard_normal() * 8), dt)
        return self.b.const(v, dt)

    def like(self, v: Value, c: Value) -> Value:
        """``c`` (a scalar) splatted to ``v``'s shape."""
        return c if v.type.is_scalar else self.b.op("splat", c, shape=v.type.shape)

    def offsets(self, shape: tuple[int, ...]) -> Value:
        """Row-major element offsets ``[0, numel)`` of ``shape`` (i32)."""
        b = self.b
        if len(shape) == 1:
            return b.op("arange", start=0, end=shape[0])
        m, n = shape
        rows = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=m), axis=1), shape=shape)
        cols = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=n), axis=0), shape=shape)
        return b.op("add", b.op("mul", rows, b.op("splat", b.const(n, i32), shape=shape)), cols)

    def global_offsets(self, shape: tuple[int, ...]) -> Value:
        """``program_id * numel(shape) + offsets(shape)``."""
        b = self.b
        numel = int(np.prod(shape))
        base = b.op("mul", b.op("program_id", axis=0), b.const(numel, i32))
        return b.op("add", b.op("splat", base, shape=shape), self.offsets(shape))

    def at(self, ptr: str, offs: Value) -> Value:
        return self.b.op("addptr", self.b.op("splat", self.b.param(ptr), shape=offs.type.shape), offs)

    def pick(self, pred=lambda v: True) -> Value | None:
        cands = [v for v in self.pool if pred(v)]
        return self.choice(cands) if cands else None

    def build(self) -> FuzzProgram:
        g = self
        shape = g.choice(SHAPES)
        numel = int(np.prod(shape))
        grid = int(g.rng.integers(1, 4))
        dts = list(ALL_DTYPES)
        in_dts = [g.choice(dts) for _ in range(int(g.rng.integers(1, 4)))]
        sc_dts = [g.choice(dts) for _ in range(int(g.rng.integers(0, 3)))]
        out_dts = [g.choice(dts) for _ in range(int(g.rng.integers(1, 4)))]
        params = ([(f"in{i}", pointer(d)) for i, d in enumerate(in_dts)]
                  + [(f"s{i}", scalar(d)) for i, d in enumerate(sc_dts)] + [("n", scalar(i32))]
                  + [(f"out{i}", pointer(d)) for i, d in enumerate(out_dts)])
        self.b = b = Builder(f"fuzz_{self.seed}", params)
        self.pool: list[Value] = []
        gofs = g.global_offsets(shape)
        mask = b.op("lt", gofs, b.op("splat", b.param("n"), shape=shape))
        no_other = False
        for i, dt in enumerate(in_dts):
            p = g.at(f"in{i}", gofs)
            if g.coin(0.9):
                self.pool.append(b.op("load", p, mask, b.op("splat", g.const(dt), shape=shape)))
            else:
                no_other = True
                self.pool.append(b.op("load", p, mask))
        for i in range(len(sc_dts)):
            self.pool.append(b.param(f"s{i}"))
        for _ in range(int(g.rng.integers(1, self.max_ops + 1))):
            g.step(shape)
        tolerances: dict[int, tuple[float, float]] = {}
        sizes = []
        for i, dt in enumerate(out_dts):
            # mostly one of the newest values: the deepest computations
            v = g.choice(self.pool[-4:]) if g.coin(0.7) else g.pick()
            if dt.is_float and g.coin(0.25):  # a tolerant output: computed in its own dtype
                src = g.pick(lambda u: not u.type.is_scalar) if g.coin(0.3) else None
                if src is not None:
                    v = b.op("reduce_sum", b.op("cast", src, dtype=dt), axis=int(g.rng.integers(0, src.type.rank)))
                    tolerances[i] = (TRANS_RTOL[dt.name] * 4, 0.0)
                else:
                    name = g.choice(_TRANSCENDENTAL)
                    args = [b.op("cast", v, dtype=dt)]
                    if _ARITY[name] == 2:  # atan2: a second operand of the same shape
                        u = g.pick(lambda u, shape=v.type.shape: u.type.shape == shape) or v
                        args.append(b.op("cast", u, dtype=dt))
                    v = b.op(name, *args)
                    tiny = float(np.finfo(np.float16 if dt.name == "f16" else np.float32
                                          if dt.name in ("f32", "bf16") else np.float64).tiny)
                    tolerances[i] = (TRANS_RTOL[dt.name], tiny)
            if v.type.dtype != dt:
                v = b.op("cast", v, dtype=dt)
            n_el = v.type.numel
            sizes.append(grid * max(n_el, 1))
            out = f"out{i}"
            if v.type.is_scalar:
                b.effect("store", b.op("addptr", b.param(out), b.op("program_id", axis=0)), v)
            elif v.type.shape == shape:
                b.effect("store", g.at(out, gofs), v, mask)
            else:
                b.effect("store", g.at(out, g.global_offsets(v.type.shape)), v)
        fn = b.finish()
        return FuzzProgram(self.seed, fn, grid, numel, in_dts, sc_dts, out_dts, sizes, tolerances, no_other)

    def step(self, shape: tuple[int, ...]) -> None:
        g, b = self, self.b
        kind = g.choice(["unary", "binary", "binary", "binary", "ub", "ub", "compare", "fma", "where", "cast",
                         "cast", "bitcast", "splat", "const", "reduce", "shape", "pid"])
        if kind == "pid":
            pid = b.op("program_id", axis=0)
            dt = g.choice(NUMERIC)
            self.pool.append(pid if dt == i32 else b.op("cast", pid, dtype=dt))
            return
        if kind == "const":
            self.pool.append(g.const(g.choice(list(ALL_DTYPES))))
            return
        v = g.pick()
        dt = v.type.dtype
        if kind == "unary":
            ops = [o for o in _UNARY if accepts(o, dt)]
            if ops:
                self.pool.append(b.op(g.choice(ops), v))
        elif kind in ("binary", "compare", "ub"):
            names = _COMPARE if kind == "compare" else _UB_OPS if kind == "ub" else _BINARY
            ops = [o for o in names if accepts(o, dt)]
            if not ops:
                return
            op = g.choice(ops)
            w = g.pick(lambda u, t=v.type: u.type == t)
            if g.coin(0.4):
                w = g.like(v, g.const(dt))
            if op in _UB_OPS and dt.is_int and g.coin(0.7):  # guard into the defined range
                if op in ("div", "rem"):
                    zero = g.like(w, b.const(0, dt))
                    w = b.op("where", b.op("eq", w, zero), g.like(w, b.const(1, dt)), w)
                else:
                    w = b.op("and", w, g.like(w, b.const(dt.bits - 1, dt)))
            if g.coin(0.3):
                v, w = w, v
            self.pool.append(b.op(op, v, w))
        elif kind == "fma":
            v = g.pick(lambda u: u.type.dtype.is_float)
            if v is not None:
                same = lambda u, t=v.type: u.type == t  # noqa: E731
                self.pool.append(b.op("fma", v, g.pick(same), g.pick(same)))
        elif kind == "where":
            w = g.pick(lambda u, t=v.type: u.type == t)
            c = g.pick(lambda u, s=v.type.shape: u.type.dtype == bool_ and u.type.shape == s)
            if c is None:
                c = b.op(g.choice(["ne", "eq"]), v, w) if dt.is_bool else b.op(g.choice(_COMPARE), v, w)
            self.pool.append(b.op("where", c, v, w))
        elif kind == "cast":
            self.pool.append(b.op("cast", v, dtype=g.choice(list(ALL_DTYPES))))
        elif kind == "bitcast":
            v = g.pick(lambda u: not u.type.dtype.is_float)
            if v is None:
                return
            same_width = [d for d in ALL_DTYPES if d.bits == v.type.dtype.bits]
            self.pool.append(b.op("bitcast", v, dtype=g.choice(same_width)))
        elif kind == "splat":
            v = g.pick(lambda u: u.type.is_scalar)
            if v is not None:
                shapes = sorted({u.type.shape for u in self.pool if u.type.shape} | {shape})
                self.pool.append(b.op("splat", v, shape=g.choice(shapes)))
        elif kind == "reduce":
            v = g.pick(lambda u: not u.type.is_scalar and not u.type.dtype.is_bool)
            if v is None:
                return
            ops = ["reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin"]
            if not v.type.dtype.is_float:
                ops.append("reduce_sum")
            self.pool.append(b.op(g.choice(ops), v, axis=int(g.rng.integers(0, v.type.rank))))
        elif kind == "shape":
            v = g.pick(lambda u: not u.type.is_scalar)
            if v is None:
                return
            if v.type.rank == 1:
                n = v.type.shape[0]
                if n <= 8:
                    axis = int(g.rng.integers(0, 2))
                    e = b.op("expand_dims", v, axis=axis)
                    m = int(g.choice([1, 2, 3, 4]))
                    self.pool.append(b.op("broadcast", e, shape=(m, n) if axis == 0 else (n, m)))
            elif g.coin():
                self.pool.append(b.op("reshape", v, shape=(v.type.numel,)))
            else:
                self.pool.append(b.op("trans", v, perm=(1, 0)))


def generate(seed: int, max_ops: int = 16) -> FuzzProgram:
    """The program of ``seed`` (deterministic)."""
    return _Gen(seed, max_ops).build()


def make_args(prog: FuzzProgram, seed: int) -> list:
    """Arguments for ``prog`` (deterministic in ``seed``): inputs, scalars, ``n``, outputs.

    ``n`` is the full size half of the time (every lane defined), else ragged in ``[0, total)``.
    Outputs start filled with a sentinel so lanes a kernel does not write are compared too."""
    rng = np.random.default_rng([seed, 1])
    args: list = [values(dt, prog.total, rng) for dt in prog.in_dtypes]
    args += [scalar_value(dt, rng) for dt in prog.scalar_dtypes]
    args.append(prog.total if rng.random() < 0.5 else int(rng.integers(0, prog.total)))
    for dt, size in zip(prog.out_dtypes, prog.out_sizes):
        args.append(np.full(size, 1 if dt.is_bool else 7, dt.np))
    return args
