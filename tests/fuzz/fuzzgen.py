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
  specified), ``splat``, ``const`` (edge values), reductions, ``program_id``/``num_programs`` and
  shape ops;
* the ops with attributes or dtypes of their own: ``libdevice`` (every symbol the host runs, with
  operands of its dtypes: converted pool values or edge constants), ``gather`` (raw indices, which
  clamp), ``dot`` (ints wrap; float operands are small integers so f32 accumulation is exact; an
  accumulator and ``precision="tf32"`` sometimes), volatile loads, and FP8 storage: FP8 pointer
  inputs and outputs (every byte code drawn: NaN, inf, subnormals), conversions to and from FP8,
  FP8 ``where``/``bitcast``/shape ops/``gather``; loads through integer addresses
  (``int_to_ptr(ptr_to_int(p) + offset * size)``: the addresses themselves never reach an output,
  they differ between the interpreter and run_cpu); atomics (every ``atomic_*``, ``sem``/``scope``
  sometimes) on an output filled with edge values, each lane of each program updating only its
  own element, once (race-free: the result does not depend on the grid's order), old values to the pool;
* the language's composite functions (:mod:`fuzzcomposites`: scans, sort/topk, flip,
  join/split/interleave, cat, histogram, ``fp_downcast_rounding="rtz"``) through the frontend's
  own expansion into IR ops;
* per output a final ``store`` of one pool value (cast to the pointer's dtype) at that value's
  own element offsets (block-shaped values masked with ``offset < n``); an output may instead
  store a transcendental of a float value or a float ``reduce_sum`` (the order of a float sum is
  unspecified): such outputs are compared with a tolerance (:attr:`FuzzProgram.tolerances`).

:data:`DRAWN_OPS` and :data:`EXCLUDED_OPS` (with the reason) partition the op table; a test fails
on an op in neither.

Inputs are drawn from edge-value pools (0, ±1, INT_MIN, INT_MAX, shift amounts around the width,
NaN, ±0.0, ±inf, subnormals, the largest finite value) mixed with random values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from fuzzcomposites import COMPOSITES

from eggpu.ir import ALL_DTYPES, Builder, DType, Function, Value, bool_, f32, i8, i32, pointer, scalar
from eggpu.ir.dtypes import BY_NAME, FP8_DTYPES, i64, u8, u64
from eggpu.ir.libdevice_table import SYMBOLS, gpu_only_reason
from eggpu.ir.op_types import ATOMIC_SCOPES, ATOMIC_SEMS
from eggpu.ir.ops import DOT_PRECISIONS, ELEMENTWISE, OPS, OPS_LIST, TRANSCENDENTAL

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
#: the generator's step kinds, by weight (a kind listed twice is drawn twice as often)
_BASE_KINDS = ["unary", "binary", "binary", "binary", "ub", "ub", "compare", "fma", "where", "cast", "cast",
               "bitcast", "splat", "const", "reduce", "shape", "pid"]
_NEW_KINDS = ["libdevice", "libdevice", "gather", "dot", "fp8", "composite", "composite"]
FLOATS = [d for d in ALL_DTYPES if d.is_float]
#: the libdevice symbols the interpreter and run_cpu can run (the GPU-only ones are refused there)
LIBDEVICE_SYMBOLS = sorted(s for s in SYMBOLS if gpu_only_reason(s) is None)
#: values an FP8 constant is drawn from (f32 constants converted once: rounding, saturation, NaN)
FP8_CONSTS = (0.0, -0.0, 1.0, -1.5, 0.1, 448.0, 464.0, 500.0, -57344.0, 1e5, 2.0 ** -9, 2.0 ** -16, 1.875,
              float("nan"), float("inf"), float("-inf"))
#: ops the generator draws besides the elementwise lists above (every op of the table is drawn or
#: in :data:`EXCLUDED_OPS`; tests/fuzz/test_fuzz.py checks both and that each drawn op does occur)
_DRAWN_OTHERS = ("const", "program_id", "num_programs", "arange", "splat", "broadcast", "expand_dims",
                 "reshape", "trans", "addptr", "where", "fma", "cast", "bitcast", "libdevice", "load", "store",
                 "reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin", "gather", "dot",
                 "ptr_to_int", "int_to_ptr")
#: every atomic, race-free: each lane of each program updates its own element once (``_Gen.atomic``)
ATOMICS = tuple(name for name in OPS if name.startswith("atomic_"))
DRAWN_OPS = frozenset(_UNARY + _BINARY + _COMPARE + _TRANSCENDENTAL + list(_DRAWN_OTHERS) + list(ATOMICS))
EXCLUDED_OPS: dict[str, str] = {
    "inline_asm": "GPU only: the interpreter and the host lowering refuse it",
    "device_print": "prints instead of computing a value (no output to compare)",
    "device_assert": "removed before optimization unless debug=True; it computes no value",
    "for": "the generator is straight-line; loops are fuzzed by test_fuzz_stripmine (strip-mined programs)",
    "while": "the generator is straight-line (no loops)",
    "if": "the generator is straight-line (no branches)",
    "yield": "ends a for/while/if region, which the generator does not build",
}
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
    undefined, so only a full ``n`` makes the program fully defined); ``composites`` names the
    language functions drawn (:mod:`fuzzcomposites`).
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
    composites: list[str] = field(default_factory=list)
    focus: bool = False
    atomic_outputs: list[int] = field(default_factory=list)

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
    if dt.is_fp8:  # every code is a value: NaN, +-inf (e5), +-0, subnormals, the extremes
        return rng.integers(0, 256, n, dtype=np.uint8).view(dt.np)
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
    def __init__(self, seed: int, max_ops: int, focus: bool = False):
        self.seed = seed
        self.focus = focus
        self.rng = np.random.default_rng(seed)
        self.max_ops = max_ops

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def const(self, dt: DType) -> Value:
        if dt.is_fp8:  # an f32 constant converted (the IR has no FP8 constants)
            return self.b.const(self.choice(FP8_CONSTS), dt)
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
        io_dt = lambda: g.choice(FP8_DTYPES) if g.coin(0.1) else g.choice(dts)  # noqa: E731 (FP8: storage)
        in_dts = [io_dt() for _ in range(int(g.rng.integers(1, 4)))]
        sc_dts = [g.choice(dts) for _ in range(int(g.rng.integers(0, 3)))]
        out_dts = [io_dt() for _ in range(int(g.rng.integers(1, 4)))]
        params = ([(f"in{i}", pointer(d)) for i, d in enumerate(in_dts)]
                  + [(f"s{i}", scalar(d)) for i, d in enumerate(sc_dts)] + [("n", scalar(i32))]
                  + [(f"out{i}", pointer(d)) for i, d in enumerate(out_dts)])
        self.b = b = Builder(f"fuzz_{self.seed}", params)
        self.pool: list[Value] = []
        self.composites: list[str] = []  # the composite functions drawn (fuzzcomposites), in order
        self.fp8: list[Value] = []  # FP8 values: storage only (cast, where, bitcast, shape ops, gather)
        gofs = g.global_offsets(shape)
        mask = b.op("lt", gofs, b.op("splat", b.param("n"), shape=shape))
        no_other = False
        for i, dt in enumerate(in_dts):
            p = g.at(f"in{i}", gofs) if g.coin(0.9) else g.through_address(f"in{i}", dt, gofs)
            extra = {"volatile": True} if g.coin(0.1) else {}
            if g.coin(0.9):
                v = b.op("load", p, mask, b.op("splat", g.const(dt), shape=shape), **extra)
            else:
                no_other = True
                v = b.op("load", p, mask, **extra)
            (self.fp8 if dt.is_fp8 else self.pool).append(v)
        for i in range(len(sc_dts)):
            self.pool.append(b.param(f"s{i}"))
        if not self.pool:  # only FP8 inputs: compute on one of them widened
            self.pool.append(b.op("cast", self.fp8[0], dtype=g.choice(FLOATS)))
        # an output updated by an atomic instead of stored: each lane its own element, once, so the
        # result is race-free; the old values join the pool (make_args fills the output with edge values)
        atomic_outs = [i for i, dt in enumerate(out_dts) if not dt.is_fp8 and g.coin(0.15 * (1 + 2 * self.focus))]
        steps = int(g.rng.integers(1, self.max_ops + 1))
        for k in range(steps):
            g.step(shape)
            if atomic_outs and k == steps // 2:
                for i in atomic_outs:
                    g.atomic(f"out{i}", out_dts[i], gofs, mask)
        tolerances: dict[int, tuple[float, float]] = {}
        sizes = []
        for i, dt in enumerate(out_dts):
            if i in atomic_outs:
                sizes.append(grid * numel)
                continue
            # mostly one of the newest values: the deepest computations
            v = g.choice(self.pool[-4:]) if g.coin(0.7) else g.pick()
            if (dt.is_fp8 or g.coin(0.1)) and self.fp8 and g.coin(0.6):
                v = g.choice(self.fp8)
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
            v = g.convert(v, dt)
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
        return FuzzProgram(self.seed, fn, grid, numel, in_dts, sc_dts, out_dts, sizes, tolerances, no_other,
                           self.composites, self.focus, atomic_outs)

    def step(self, shape: tuple[int, ...]) -> None:
        g, b = self, self.b
        kind = g.choice(_BASE_KINDS + _NEW_KINDS * (4 if self.focus else 1))
        if kind in ("libdevice", "gather", "dot", "fp8"):
            getattr(g, f"step_{kind}")()
            return
        if kind == "composite":  # a language function the frontend expands into IR ops
            self.composites.append(name := g.choice(sorted(COMPOSITES)))
            self.pool.extend(COMPOSITES[name](g))
            return
        if kind == "pid":
            pid = b.op("program_id" if g.coin(0.7) else "num_programs", axis=0)
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


    # ------------------------------------------------ the ops with attributes or dtypes of their own

    def through_address(self, ptr: str, dt: DType, offs: Value) -> Value:
        """``ptr + offs`` computed on its integer address: ``int_to_ptr(ptr_to_int(ptr) + offs *
        sizeof(dt))`` (i64 or u64 addresses, a const pointer sometimes)."""
        b = self.b
        adt = self.choice([i64, u64])
        base = b.op("ptr_to_int", b.param(ptr), dtype=adt)
        step = b.op("mul", b.op("cast", offs, dtype=adt), self.like(offs, b.const(dt.bits // 8, adt)))
        addr = b.op("add", self.like(offs, base), step)
        return b.op("int_to_ptr", addr, dtype=dt, **({"const": 1} if self.coin() else {}))

    def atomic(self, out: str, dt: DType, gofs: Value, mask: Value) -> None:
        """An atomic read-modify-write of ``out`` at this program's own elements (``gofs``), masked
        with ``offset < n`` or not (``atomic_cas`` has no mask); its old values join the pool."""
        shape = gofs.type.shape
        ops = [a for a in ATOMICS if accepts(a, dt)]
        name = self.choice(ops)
        extra = {}
        if self.coin(0.3):
            extra["sem"] = self.choice(ATOMIC_SEMS)
        if self.coin(0.3):
            extra["scope"] = self.choice(ATOMIC_SCOPES)
        ptr = self.at(out, gofs)
        if name == "atomic_cas":
            old = self.b.op(name, ptr, self.operand(dt, shape), self.operand(dt, shape), **extra)
        else:
            args = [ptr, self.operand(dt, shape)] + ([mask] if self.coin(0.7) else [])
            old = self.b.op(name, *args, **extra)
        self.pool.append(old)

    def convert(self, v: Value, dt: DType) -> Value:
        """``v`` converted to ``dt`` by ``cast`` (through f32 where the IR has no direct conversion:
        int/bool <-> FP8)."""
        src = v.type.dtype
        if src == dt:
            return v
        if (src.is_fp8 and not (dt.is_float or dt.is_fp8)) or (dt.is_fp8 and not (src.is_float or src.is_fp8)):
            v = self.b.op("cast", v, dtype=f32)
        return self.b.op("cast", v, dtype=dt)

    def operand(self, dt: DType, shape: tuple[int, ...]) -> Value:
        """A value of element dtype ``dt`` and ``shape``: from the pool, converted from a pool value of
        that shape, or a splatted constant."""
        same = self.pick(lambda u: u.type.dtype == dt and u.type.shape == shape)
        if same is not None and self.coin(0.6):
            return same
        other = self.pick(lambda u: u.type.shape == shape)
        if other is not None and self.coin(0.7):
            return self.convert(other, dt)
        c = self.const(dt)
        return c if not shape else self.b.op("splat", c, shape=shape)

    def step_libdevice(self) -> None:
        """A ``libdevice`` call of a host-runnable symbol with operands of its dtypes."""
        sym = self.choice(LIBDEVICE_SYMBOLS)
        name, args, _res = SYMBOLS[sym]
        shape = self.pick().type.shape
        ops = [self.operand(BY_NAME[a], shape) for a in args]
        if name in ("jn", "yn"):  # libm's Bessel recurrence runs |order| steps: keep the order small
            order = self.b.const(int(self.rng.integers(-40, 41)), i32)
            ops[0] = order if not shape else self.b.op("splat", order, shape=shape)
        self.pool.append(self.b.op("libdevice", *ops, symbol=sym))

    def step_gather(self) -> None:
        """``gather`` of a block (FP8 too) along an axis with an integer index (clamped when out of range)."""
        blocks8 = [u for u in self.fp8 if not u.type.is_scalar]
        fp8 = bool(blocks8) and self.coin(0.2)
        src = self.choice(blocks8) if fp8 else self.pick(lambda u: not u.type.is_scalar)
        if src is None:
            return
        axis = int(self.rng.integers(0, src.type.rank))
        fits = lambda u: (u.type.dtype.is_int and u.type.rank == src.type.rank  # noqa: E731
                          and all(d == axis or a == c for d, (a, c) in enumerate(zip(u.type.shape, src.type.shape))))
        idx = self.pick(fits) if self.coin(0.7) else None
        if idx is None:  # the source's own values as indices, or lane numbers reversed
            if src.type.dtype.is_fp8 or self.coin(0.5):
                n = src.type.shape[axis]
                lanes = self.b.op("arange", start=0, end=n)
                if src.type.rank == 2:
                    lanes = self.b.op("broadcast", self.b.op("expand_dims", lanes, axis=1 - axis), shape=src.type.shape)
                idx = self.b.op("sub", self.like(lanes, self.b.const(n - 1, i32)), lanes)
            else:
                idx = self.convert(src, self.choice([i8, i32, u8]))
        out = self.b.op("gather", src, idx, axis=axis)
        (self.fp8 if fp8 else self.pool).append(out)

    def step_dot(self) -> None:
        """``dot`` of 2-D blocks ``[M,K] x [K,N]`` (optional accumulator). Integers wrap exactly; float
        operands are small integers (via i8), so every product and sum is exact in f32 and the op
        table's f32 accumulation is compared bit-exactly (the reference sums in f64)."""
        a = self.pick(lambda u: u.type.rank == 2 and not u.type.dtype.is_bool)
        if a is None:
            return
        dt = a.type.dtype
        m, k = a.type.shape
        rhs = self.pick(lambda u: u.type.dtype == dt and u.type.rank == 2 and u.type.shape[0] == k)
        if rhs is None:
            rhs = self.b.op("trans", self.pick(lambda u: u.type == a.type), perm=(1, 0))
        if dt.is_float:
            a, rhs = (self.convert(self.convert(x, i8), dt) for x in (a, rhs))
        ops = [a, rhs]
        out_dt = f32 if dt.is_float else i32
        acc = self.pick(lambda u: u.type.dtype == out_dt and u.type.shape == (m, rhs.type.shape[1]))
        if acc is not None and self.coin(0.5):
            ops.append(acc)
        extra = {"precision": self.choice(DOT_PRECISIONS)} if dt == f32 and self.coin(0.6) else {}
        self.pool.append(self.b.op("dot", *ops, **extra))

    def step_fp8(self) -> None:
        """FP8 storage: a float (or FP8) value converted to an FP8 dtype, an FP8 value converted to a
        float, or FP8 ``where`` / ``bitcast`` (to and from 8-bit integers) / shape ops."""
        b = self.b
        what = self.choice(["to", "to", "from", "from", "where", "bitcast", "shape"])
        if what == "to" or not self.fp8:
            v = self.pick(lambda u: u.type.dtype.is_float) if self.coin(0.7) or not self.fp8 else self.choice(self.fp8)
            if v is None:
                v = self.b.op("splat", self.const(self.choice(FP8_DTYPES)), shape=self.pick().type.shape or (4,)) \
                    if self.coin(0.3) else None
                if v is None:
                    return
                self.fp8.append(v)
                return
            self.fp8.append(b.op("cast", v, dtype=self.choice(FP8_DTYPES)))
            return
        x = self.choice(self.fp8)
        if what == "from":
            self.pool.append(b.op("cast", x, dtype=self.choice(FLOATS)))
        elif what == "where":
            c = self.pick(lambda u, s=x.type.shape: u.type.dtype == bool_ and u.type.shape == s)
            y = self.choice([u for u in self.fp8 if u.type == x.type])
            if c is not None:
                self.fp8.append(b.op("where", c, x, y))
        elif what == "bitcast":
            self.pool.append(b.op("bitcast", x, dtype=self.choice([i8, u8])))
            i = self.pick(lambda u: u.type.dtype in (i8, u8))
            if i is not None:
                self.fp8.append(b.op("bitcast", i, dtype=self.choice(FP8_DTYPES)))
        elif x.type.rank == 2:
            self.fp8.append(b.op("trans", x, perm=(1, 0)) if self.coin() else b.op("reshape", x, shape=(x.type.numel,)))
        elif x.type.rank == 1:
            self.fp8.append(b.op("broadcast", b.op("expand_dims", x, axis=0), shape=(2, x.type.shape[0])))


def generate(seed: int, max_ops: int = 16, focus: bool = False) -> FuzzProgram:
    """The program of ``seed`` (deterministic); ``focus`` draws the ops with attributes, FP8 and the
    composites four times as often (a campaign aimed at them: ``fuzzrun.py START COUNT focus``)."""
    return _Gen(seed, max_ops, focus).build()


def make_args(prog: FuzzProgram, seed: int) -> list:
    """Arguments for ``prog`` (deterministic in ``seed``): inputs, scalars, ``n``, outputs.

    ``n`` is the full size half of the time (every lane defined), else ragged in ``[0, total)``.
    Outputs start filled with a sentinel so lanes a kernel does not write are compared too."""
    rng = np.random.default_rng([seed, 1])
    args: list = [values(dt, prog.total, rng) for dt in prog.in_dtypes]
    args += [scalar_value(dt, rng) for dt in prog.scalar_dtypes]
    args.append(prog.total if rng.random() < 0.5 else int(rng.integers(0, prog.total)))
    for k, (dt, size) in enumerate(zip(prog.out_dtypes, prog.out_sizes)):
        args.append(values(dt, size, rng) if k in prog.atomic_outputs else np.full(size, 1 if dt.is_bool else 7, dt.np))
    return args
