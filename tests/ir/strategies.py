"""Hypothesis strategies for random, well-typed IR programs (reusable by every test suite).

``random_programs()`` draws straight-line kernels built with :class:`eggpu.ir.Builder` (so they
are verified). Each program has

* input pointer params ``in0..`` (1-3, random dtypes), scalar params ``s0..`` (0-2) and output
  pointer params ``out0..`` (1-2);
* one block shape (default ``(4,)`` or ``(2, 4)``); every input pointer is loaded at offsets
  ``[0, numel)`` in row-major order (sometimes masked with ``offset < k`` and an ``other``);
* up to ``max_ops`` random steps over the pool of values: unary / binary elementwise ops of the
  op table (each applied only to dtypes in its family), comparisons, ``fma``, ``where``,
  ``cast``, ``bitcast``, ``splat``, ``const`` (special floats included), reductions, and shape ops
  (``expand_dims`` + ``broadcast``, ``reshape``, ``trans``);
* a final ``store`` to every output pointer of one pool value (cast to the pointer's dtype) at
  offsets ``[0, numel)`` of that value's shape (scalars store through the pointer itself).

So for interpreting them: every pointer argument needs at least ``max_numel(shapes)`` elements
(the larger of 16 and the largest numel among ``shapes``; no value ever has more elements); all
memory accesses stay in ``[0, max_numel(shapes))``. Integer ``div``/``rem``/shifts may hit their undefined cases (the
reference semantics define a result for them).

Tests run with ``--import-mode=importlib`` (``tests/ir`` is not on ``sys.path``); import this
file by path under a unique module name, as ``tests/ir/test_text.py`` does::

    name = "eggpu_tests_ir_strategies"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "ir" / "strategies.py")
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    random_programs = sys.modules[name].random_programs
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st

from eggpu.ir import ALL_DTYPES, Builder, DType, Function, Value, bool_, i32, pointer, scalar
from eggpu.ir.ops import ELEMENTWISE, OPS_LIST, OpDef

DEFAULT_SHAPES: tuple[tuple[int, ...], ...] = ((4,), (2, 4))

_UNARY = [d for d in OPS_LIST if ELEMENTWISE in d.traits and d.arity == (1, 1) and not d.attrs]
_BINARY = [d for d in OPS_LIST if ELEMENTWISE in d.traits and d.arity == (2, 2) and d.name != "addptr"]
_REDUCTIONS = ["reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin"]


def family_accepts(d: OpDef, dt: DType) -> bool:
    """Whether op ``d`` accepts operands of element dtype ``dt`` (its dtype family)."""
    fam = d.family
    return (fam == "any" or (fam == "num" and (dt.is_int or dt.is_float)) or (fam == "int" and dt.is_int)
            or (fam == "int|bool" and (dt.is_int or dt.is_bool)) or (fam == "float" and dt.is_float))


def constant_values(dt: DType) -> st.SearchStrategy:
    """Python values exactly representable in ``dt`` (floats include ±0.0, ±inf, NaN, subnormals)."""
    if dt.is_bool:
        return st.booleans()
    if dt.is_int:
        return st.integers(int(dt.min), int(dt.max))
    specials = st.sampled_from([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan")])
    return st.one_of(specials, st.floats(width=64).map(lambda x: _round_to(x, dt)))


def _round_to(x: float, dt: DType) -> float:
    with np.errstate(all="ignore"):
        return float(np.asarray(x).astype(dt.np).astype(np.float64))


def max_numel(shapes: Sequence[tuple[int, ...]] | None = None) -> int:
    """Elements every pointer argument needs for programs drawn with ``shapes``."""
    return max([16] + [int(np.prod(s)) for s in (shapes or DEFAULT_SHAPES)])


def _offsets(b: Builder, shape: tuple[int, ...]) -> Value:
    """i32 block of row-major element offsets ``[0, numel)`` with ``shape`` (rank 1 or 2)."""
    if len(shape) == 1:
        return b.op("arange", start=0, end=shape[0])
    m, n = shape
    rows = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=m), axis=1), shape=shape)
    cols = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=n), axis=0), shape=shape)
    stride = b.op("splat", b.const(n, i32), shape=shape)
    return b.op("add", b.op("mul", rows, stride), cols)


def _pointer_block(b: Builder, ptr: Value, shape: tuple[int, ...]) -> Value:
    return b.op("addptr", b.op("splat", ptr, shape=shape), _offsets(b, shape))


@st.composite
def _programs(draw, max_ops: int, dtypes: Sequence[DType], shapes: Sequence[tuple[int, ...]]) -> Function:
    shape = draw(st.sampled_from(list(shapes)))
    dts = st.sampled_from(list(dtypes))
    in_dts = draw(st.lists(dts, min_size=1, max_size=3))
    sc_dts = draw(st.lists(dts, max_size=2))
    out_dts = draw(st.lists(dts, min_size=1, max_size=2))
    params = ([(f"in{i}", pointer(d)) for i, d in enumerate(in_dts)]
              + [(f"s{i}", scalar(d)) for i, d in enumerate(sc_dts)]
              + [(f"out{i}", pointer(d)) for i, d in enumerate(out_dts)])
    b = Builder("random_program", params)
    pool: list[Value] = []
    numel = int(np.prod(shape))
    max_elems = max_numel(shapes)

    def pick(pred=lambda v: True) -> Value | None:
        cands = [v for v in pool if pred(v)]
        return draw(st.sampled_from(cands)) if cands else None

    def const(dt: DType) -> Value:
        return b.const(draw(constant_values(dt)), dt)

    for i, dt in enumerate(in_dts):
        p = _pointer_block(b, b.param(f"in{i}"), shape)
        kind = draw(st.sampled_from(["plain", "mask", "mask_other"]))
        if kind == "plain":
            pool.append(b.op("load", p))
        else:
            limit = b.op("splat", b.const(draw(st.integers(0, numel)), i32), shape=shape)
            mask = b.op("lt", _offsets(b, shape), limit)
            if kind == "mask":
                pool.append(b.op("load", p, mask))
            else:
                pool.append(b.op("load", p, mask, b.op("splat", const(dt), shape=shape)))
    for i in range(len(sc_dts)):
        pool.append(b.param(f"s{i}"))

    for _ in range(draw(st.integers(0, max_ops))):
        step = draw(st.sampled_from(["unary", "binary", "binary", "compare", "fma", "where", "cast",
                                     "bitcast", "splat", "const", "reduce", "shape"]))
        if step in ("unary", "binary", "compare"):
            v = pick()
            if step == "unary":
                ops = [d for d in _UNARY if family_accepts(d, v.type.dtype)]
            else:
                comparison = step == "compare"
                ops = [d for d in _BINARY if ("comparison" in d.traits) == comparison
                       and family_accepts(d, v.type.dtype)]
            if not ops:
                continue
            d = draw(st.sampled_from(ops))
            if d.arity == (1, 1):
                pool.append(b.op(d.name, v))
            else:
                w = pick(lambda u, t=v.type: u.type == t)
                if draw(st.booleans()):
                    c = const(v.type.dtype)
                    w = c if v.type.is_scalar else b.op("splat", c, shape=v.type.shape)
                pool.append(b.op(d.name, v, w))
        elif step == "fma":
            v = pick(lambda u: u.type.dtype.is_float)
            if v is not None:
                same = lambda u, t=v.type: u.type == t  # noqa: E731
                pool.append(b.op("fma", v, pick(same), pick(same)))
        elif step == "where":
            v = pick()
            w = pick(lambda u, t=v.type: u.type == t)
            c = pick(lambda u, s=v.type.shape: u.type.dtype == bool_ and u.type.shape == s)
            if c is None:
                c = b.op("ne", v, w)
            pool.append(b.op("where", c, v, w))
        elif step == "cast":
            pool.append(b.op("cast", pick(), dtype=draw(dts)))
        elif step == "bitcast":
            v = pick()
            same_width = [d for d in ALL_DTYPES if d.bits == v.type.dtype.bits]
            pool.append(b.op("bitcast", v, dtype=draw(st.sampled_from(same_width))))
        elif step == "splat":
            v = pick(lambda u: u.type.is_scalar)
            if v is not None:
                target = draw(st.sampled_from(sorted({u.type.shape for u in pool if u.type.shape} | {shape})))
                pool.append(b.op("splat", v, shape=target))
        elif step == "const":
            pool.append(const(draw(dts)))
        elif step == "reduce":
            v = pick(lambda u: not u.type.is_scalar and (u.type.dtype.is_int or u.type.dtype.is_float))
            if v is not None:
                pool.append(b.op(draw(st.sampled_from(_REDUCTIONS)), v, axis=draw(st.integers(0, v.type.rank - 1))))
        elif step == "shape":
            v = pick(lambda u: not u.type.is_scalar)
            if v is None:
                continue
            if v.type.rank == 1:
                n = v.type.shape[0]
                if n * n <= max_elems:
                    e = b.op("expand_dims", v, axis=draw(st.integers(0, 1)))
                    pool.append(b.op("broadcast", e, shape=(n, n)))
            elif draw(st.booleans()):
                pool.append(b.op("reshape", v, shape=(v.type.numel,)))
            else:
                pool.append(b.op("trans", v, perm=(1, 0)))

    for i, dt in enumerate(out_dts):
        v = pick()
        if v.type.dtype != dt:
            v = b.op("cast", v, dtype=dt)
        out = b.param(f"out{i}")
        if v.type.is_scalar:
            b.effect("store", out, v)
        else:
            b.effect("store", _pointer_block(b, out, v.type.shape), v)
    return b.finish()


def random_programs(max_ops: int = 12, dtypes: Sequence[DType] = ALL_DTYPES,
                    shapes: Sequence[tuple[int, ...]] = DEFAULT_SHAPES) -> st.SearchStrategy[Function]:
    """Random well-typed straight-line kernels (see the module docstring).

    ``dtypes`` restricts the parameter, cast and constant dtypes; ``shapes`` are the candidate
    block shapes (rank 1 or 2, keep them small: a rank-1 ``(n,)`` value can become ``(n, n)``).
    """
    for s in shapes:
        if len(s) not in (1, 2) or any(d < 1 for d in s):
            raise ValueError(f"shapes must be rank 1 or 2 with positive sizes, got {s}")
    return _programs(max_ops, tuple(dtypes), tuple(shapes))
