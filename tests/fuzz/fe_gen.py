"""Random Triton-language kernels as SOURCE TEXT, for the frontend differential fuzzer.

``generate(seed)`` writes one ``@jit`` kernel the way a Triton user writes it (unannotated
parameters, ``tl.`` calls, Python literals) plus the host-side facts needed to launch it: the
argument list (numpy arrays and numpy/Python scalars), the grid and which outputs are compared
with a tolerance. The same text runs under Triton's interpreter (the reference) and under
``eggpu.jit`` (``fe_run``), so the generator never has to compute expected values itself.

The generator tracks each value's Triton dtype (``semantic.py``'s promotion: a Python literal
of a lower or equal kind does not take part, ``/`` of integers is f32, ``//``/``%`` of floats
below 32 bits is f32, ...) only to stay inside what Triton defines:

* integer ``//`` and ``%`` only between operands of one signedness, divisors never 0
  (``(b & 7) + 1``, or ``((b & 7) - 4) | 1`` for signed ones; never INT_MIN // -1 because the
  dividend is masked when the divisor can be -1);
* shift amounts masked below the width (``b & 15``);
* a float converted to an integer only when ``|x| < 1000`` (unsigned: ``0 <= x < 1000``;
  otherwise 0), so never out of range;
* the documented eggpu differences (docs/language.md "What differs") are not generated:
  ``/`` and ``%`` whose computation type is f16/bf16, ``//`` on floats, integer ``//``/``%`` of
  mixed signedness, ``minimum``/``maximum`` on bf16;
* values derived from transcendentals (``exp``, ``log``) or float sums/cumsums are *approximate*:
  no discontinuous operation (comparison, conversion to an integer, ``//``, ``%``, bitcast)
  consumes them, and an output computed from one is compared with a tolerance;
* a float ``sum``/``cumsum`` adds values clamped to ``SUM_BOUND`` (its order is unspecified,
  and so is whether a partial sum beyond that bound overflows);
* bf16 is a storage dtype here: Triton 3.9's interpreter keeps bf16 as uint16 bits and runs
  its arithmetic on those integers (``fe_run`` patches its conversions only), so a bf16 value
  (a loaded array, a scalar argument, ``x.to(tl.bfloat16)``) is converted to f32 at once, and
  bf16 outputs are stored from f32 values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

NP = {"i16": np.int16, "i32": np.int32, "i64": np.int64, "u32": np.uint32, "f16": np.float16,
      "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64, "bool": np.bool_}
TL = {"i16": "tl.int16", "i32": "tl.int32", "i64": "tl.int64", "u32": "tl.uint32",
      "f16": "tl.float16", "bf16": "tl.bfloat16", "f32": "tl.float32", "f64": "tl.float64",
      "bool": "tl.int1"}
BITS = {"bool": 1, "i16": 16, "i32": 32, "i64": 64, "u32": 32, "f16": 16, "bf16": 16, "f32": 32,
        "f64": 64}
SCALAR_DTYPES = ["i32", "i64", "u32", "f16", "bf16", "f32", "f64"]
# what values are converted to: no bf16 (below)
CONV_DTYPES = ["i32", "i64", "u32", "f16", "f32", "f64"]
ARRAY_DTYPES = ["i32", "i64", "u32", "f16", "bf16", "f32", "f64"]
RAGGED = (1, 1000, 1001)


def is_float(dt: str) -> bool:
    return dt in ("f16", "bf16", "f32", "f64")


def is_int(dt: str) -> bool:
    return dt in ("i16", "i32", "i64", "u32")


def kind(dt: str) -> int:
    """Triton's ``dtype.kind()`` order: bool < unsigned < signed < float."""
    return 0 if dt == "bool" else 1 if dt == "u32" else 2 if is_int(dt) else 3


def int_promote(a: str, b: str) -> str:
    """C's usual arithmetic conversions (semantic.integer_promote_impl)."""
    if a == "bool":
        a = "i1"
    if b == "bool":
        b = "i1"
    bits = {"i1": 1, **BITS}
    sa, sb = a != "u32", b != "u32"
    if sa == sb:
        r = a if bits[a] > bits[b] else b
    elif not sa:
        r = a if bits[a] >= bits[b] else b
    else:
        r = b if bits[b] >= bits[a] else a
    return "bool" if r == "i1" else r


def computation_type(a: str, a_lit: bool, b: str, b_lit: bool, div_or_mod: bool) -> str | None:
    """semantic.computation_type_impl; None where Triton raises."""
    if a_lit != b_lit:
        s, t = (a, b) if a_lit else (b, a)
        if kind(s) <= kind(t):
            a = b = t
    if "f64" in (a, b):
        return "f64"
    if div_or_mod and (is_float(a) or is_float(b)):
        return "f32"
    if "f32" in (a, b):
        return "f32"
    if "f16" in (a, b):
        return "f16"
    if a == b == "bf16":
        return "bf16"
    if "bf16" in (a, b):
        return "f32"
    if div_or_mod and ((a == "u32") != (b == "u32")) and "bool" not in (a, b):
        return None
    return int_promote(a, b)


@dataclass
class Val:
    text: str
    dt: str
    block: bool = True
    lit: bool = False
    approx: bool = False


@dataclass
class FeProgram:
    seed: int
    source: str                      # the kernel body, with ``@jit`` and ``tl`` unbound
    name: str
    params: list[str]
    arg_kinds: list[tuple[str, str]]  # (kind, dtype): ("in"|"out", dt) arrays, ("scalar", dt), ...
    scalar_values: dict[int, object]  # argument index -> the host scalar (numpy or Python)
    constexprs: dict[str, int]
    n: int
    tiled: bool                       # a 2-D tile program (reductions); grid over rows
    approx_out: list[bool]            # per output: compared with a tolerance
    features: set[str] = field(default_factory=set)
    out_sizes: dict[int, int] = field(default_factory=dict)  # output index -> its length
    loop_dt: str | None = None        # the ``for`` variable's dtype (the bounds' promotion)

    def grid(self) -> tuple[int]:
        step = self.constexprs["ROWS"] if self.tiled else self.constexprs["BLOCK"]
        return (-(-self.n // step),)

    def make_args(self) -> list:
        """Fresh arguments: inputs random (finite, a few special values), outputs zeroed."""
        rng = np.random.default_rng(self.seed)
        size = self.n * (self.constexprs["COLS"] if self.tiled else 1)
        args: list = []
        for i, (k, dt) in enumerate(self.arg_kinds):
            if k == "in":
                args.append(_random_array(rng, dt, size))
            elif k == "out":
                args.append(np.zeros(self.out_sizes.get(i, size), NP[dt]))
            elif k == "n":
                args.append(self.n)
            else:
                args.append(self.scalar_values[i])
        return args


def _random_array(rng: np.random.Generator, dt: str, size: int) -> np.ndarray:
    if is_int(dt):
        lo, hi = (0, 3000) if dt == "u32" else (-3000, 3000)
        a = rng.integers(lo, hi, size)
        big = rng.random(size) < 0.05
        info = np.iinfo(NP[dt])
        a = np.where(big, rng.integers(int(info.min), int(info.max), size, dtype=np.int64)
                     if dt != "u32" else rng.integers(0, 2**32, size), a)
        return a.astype(NP[dt])
    a = (rng.standard_normal(size) * 8).astype(np.float64)
    special = rng.random(size)
    a = np.where(special < 0.02, 0.0, a)
    a = np.where((special >= 0.02) & (special < 0.03), -0.0, a)
    if dt in ("f32", "f64"):
        a = np.where((special >= 0.03) & (special < 0.035), np.nan, a)
        a = np.where((special >= 0.035) & (special < 0.04), np.inf, a)
    return a.astype(NP[dt])


def _scalar(rng: random.Random, dt: str):
    if dt == "i32":
        return np.int32(rng.choice([rng.randint(-50, 50), rng.randint(-2**31, 2**31 - 1)]))
    if dt == "i64":
        return np.int64(rng.choice([rng.randint(-50, 50), rng.randint(-2**63, 2**63 - 1),
                                    2**33 + rng.randint(-3, 3)]))
    if dt == "u32":
        return np.uint32(rng.choice([rng.randint(0, 50), rng.randint(0, 2**32 - 1)]))
    v = rng.choice([rng.uniform(-10, 10), 0.5, -0.0, 3.0])
    return NP[dt](v)


def _in_range(x: str, to: str) -> str:
    """``x`` where converting it to the integer ``to`` is defined (C, LLVM: out-of-range and
    NaN conversions are undefined; negative values for an unsigned type too), else 0."""
    if to == "u32":
        return f"tl.where(({x} >= 0.0) & ({x} < 1000.0), {x}, 0.0)"
    return f"tl.where(tl.abs({x}) < 1000.0, {x}, 0.0)"


class Gen:
    """Builds one kernel's statements; ``vals`` are the variables in scope."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.seed = seed
        self.lines: list[str] = []
        self.vals: list[Val] = []
        self.tmp = 0
        self.features: set[str] = set()
        self.loop_dt: str | None = None
        self.indent = "    "

    # -- helpers ---------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def bind(self, v: Val, prefix: str = "t", scope: bool = True) -> Val:
        name = f"{prefix}{self.tmp}"
        self.tmp += 1
        self.emit(f"{name} = {v.text}")
        if not v.lit:  # the dtype model checked by both frontends (a literal stays a Python number)
            self.emit(f"tl.static_assert({name}.dtype == {TL[v.dt]}, \"dtype model\")")
        nv = Val(name, v.dt, v.block, v.lit, v.approx)
        if scope:
            self.vals.append(nv)
        return nv

    def pick(self, pred=lambda v: True, exact: bool = False) -> Val | None:
        """A variable in scope, the later ones likelier (so the statements build on each other)."""
        cands = [v for v in self.vals if pred(v) and not (exact and v.approx)]
        if not cands:
            return None
        return self.r.choices(cands, weights=[(i + 1) ** 2 for i in range(len(cands))])[0]

    def literal(self, dt_hint: str) -> Val:
        r = self.r
        if is_float(dt_hint) and r.random() < 0.7:
            return Val(repr(r.choice([0.5, 2.0, -1.5, 3.0, 0.0, 1e-3, 100.0])), "f32", False, True)
        v = r.choice([0, 1, 2, 3, 7, 100, -1, -5]) if dt_hint != "u32" else r.choice([0, 1, 3, 9])
        return Val(str(v), "i32", False, True)

    # -- expressions -----------------------------------------------------------------------
    def expr(self, depth: int) -> Val:
        r = self.r
        if depth <= 0 or r.random() < 0.2:
            v = self.pick()
            assert v is not None
            return v
        choice = r.choice(["arith", "arith", "arith", "divmod", "shift", "bit", "where", "cast",
                           "cast", "math", "minmax", "truediv", "unary", "compare"])
        v = getattr(self, "e_" + choice)(depth - 1)
        if v.dt == "bf16":  # see the module docstring
            return Val(f"{v.text}.to(tl.float32)", "f32", v.block, False, v.approx)
        return v

    def operand(self, depth: int, pred, exact: bool = False) -> Val | None:
        for _ in range(6):
            v = self.expr(depth)
            if pred(v) and not (exact and v.approx):
                return v
        return self.pick(pred, exact)

    def binop(self, op: str, a: Val, b: Val, div_or_mod: bool = False) -> Val | None:
        ct = computation_type(a.dt, a.lit, b.dt, b.lit, div_or_mod)
        if ct is None:
            return None
        if ct == "u32" and ((a.lit and a.text.startswith("-")) or (b.lit and b.text.startswith("-"))):
            return None
        return Val(f"({a.text} {op} {b.text})", ct, a.block or b.block, a.lit and b.lit,
                   a.approx or b.approx)

    def e_arith(self, d: int) -> Val:
        a = self.expr(d)
        b = self.literal(a.dt) if self.r.random() < 0.3 else self.expr(d)
        if a.dt == "bool" and b.dt == "bool":
            b = self.literal("i32")
        op = self.r.choice(["+", "-", "*"])
        if self.r.random() < 0.5:
            a, b = b, a
        return self.binop(op, a, b) or a

    def e_truediv(self, d: int) -> Val:
        """``a / b`` (or float ``a % b``, C's fmod) computed in f32/f64 by both: an f16/bf16
        operand without an f32/f64 block beside it is the documented difference (Triton f32,
        eggpu the operands' dtype), so it is not generated."""
        a, b = self.expr(d), self.expr(d)
        ct = computation_type(a.dt, a.lit, b.dt, b.lit, True)
        wide = any(v.dt in ("f32", "f64") and not v.lit for v in (a, b))
        if ct is None or (a.lit and b.lit) or (a.dt in ("f16", "bf16") or b.dt in ("f16", "bf16")) and not wide:
            return a
        if self.r.random() < 0.3 and ct in ("f32", "f64") and wide and not (a.approx or b.approx):
            self.features.add("fmod")
            return Val(f"({a.text} % {b.text})", ct, a.block or b.block)
        v = self.binop("/", a, b, True)
        if v is not None and not is_float(v.dt):
            v.dt = "f32"  # integers are divided in f32 (semantic.truediv)
        return v or a

    def e_divmod(self, d: int) -> Val:
        a = self.operand(d, lambda v: is_int(v.dt), exact=True)
        b = self.operand(d, lambda v: is_int(v.dt) and v.dt != "i16", exact=True)
        if a is None or b is None:
            return self.expr(d)
        ct = computation_type(a.dt, False, b.dt, False, True)
        if ct is None:
            return a
        if ct == "u32":
            div = f"(({b.text} & 7) + 1)"
        elif self.r.random() < 0.5:
            div = f"((({b.text} & 7) - 4) | 1)"  # odd, negative or positive: never 0
            mask = "0x7FFF" if a.dt == "i16" else "0xFFFF"  # a literal must fit the dtype
            a = Val(f"({a.text} & {mask})", a.dt, a.block)  # no INT_MIN // -1
        else:
            div = f"(({b.text} & 7) + 1)"
        op = self.r.choice(["//", "%"])
        self.features.add("divmod")
        return Val(f"({a.text} {op} {div})", ct, a.block or b.block)

    def e_shift(self, d: int) -> Val:
        a = self.operand(d, lambda v: is_int(v.dt), exact=True)
        b = self.operand(d, lambda v: is_int(v.dt), exact=True)
        if a is None or b is None:
            return self.expr(d)
        op = self.r.choice(["<<", ">>", ">>"])
        self.features.add("shift")
        amt = Val(f"({b.text} & 15)", b.dt, b.block)
        return self.binop(op, a, amt) or a

    def e_bit(self, d: int) -> Val:
        a = self.operand(d, lambda v: is_int(v.dt), exact=True)
        b = self.operand(d, lambda v: is_int(v.dt), exact=True)
        if a is None or b is None:
            return self.expr(d)
        return self.binop(self.r.choice(["&", "|", "^"]), a, b) or a

    def cond(self, d: int) -> Val:
        a = self.operand(d, lambda v: v.dt != "bool", exact=True)
        if a is None:
            return Val("(offs < n)", "bool")
        b = self.literal(a.dt) if self.r.random() < 0.4 else self.operand(
            d, lambda v: v.dt != "bool", exact=True)
        if b is None or (a.dt == "u32" and b.lit and b.text.startswith("-")):
            b = Val("0", "i32", False, True)
        op = self.r.choice(["<", "<=", ">", ">=", "==", "!="])
        ct = computation_type(a.dt, a.lit, b.dt, b.lit, False)
        if ct is None or (ct == "u32" and b.lit and b.text.startswith("-")):
            return Val("(offs < n)", "bool")
        return Val(f"({a.text} {op} {b.text})", "bool", a.block or b.block)

    def e_where(self, d: int) -> Val:
        c = self.cond(d)
        a, b = self.expr(d), self.expr(d)
        if a.lit and b.lit:
            b = self.pick()
        ct = computation_type(a.dt, a.lit, b.dt, b.lit, False)
        if ct is None or (ct == "u32" and (a.text.startswith("-") and a.lit or b.lit and b.text.startswith("-"))):
            return a
        self.features.add("where")
        return Val(f"tl.where({c.text}, {a.text}, {b.text})", ct, a.block or b.block or c.block, False,
                   a.approx or b.approx)

    def e_cast(self, d: int) -> Val:
        a = self.expr(d)
        if a.lit:
            return a
        r = self.r
        if r.random() < 0.25 and not a.approx and a.dt != "bool":
            pairs = {"i32": ["f32", "u32"], "u32": ["f32", "i32"], "f32": ["i32", "u32"],
                     "i64": ["f64"], "f64": ["i64"], "f16": ["i16", "bf16"], "bf16": ["i16", "f16"],
                     "i16": ["f16", "bf16"]}
            to = r.choice(pairs[a.dt])
            if to == "bf16":
                self.features.add("bf16")
            self.features.add("bitcast")
            return Val(f"{a.text}.to({TL[to]}, bitcast=True)", to, a.block)
        to = r.choice(SCALAR_DTYPES + ["i16"])
        if to == "bf16":  # a round trip through bf16 (expr() converts it to f32 at once)
            self.features.add("bf16")
            return Val(f"{a.text}.to(tl.bfloat16)", "bf16", a.block, False, a.approx)
        if is_float(a.dt) and not is_float(to):
            if a.approx:
                return a
            self.features.add("f2i")
            return Val(f"{_in_range(a.text, to)}.to({TL[to]})", to, a.block)
        self.features.add("cast")
        return Val(f"{a.text}.to({TL[to]})", to, a.block, False, a.approx)

    def e_math(self, d: int) -> Val:
        a = self.operand(d, lambda v: is_float(v.dt))
        if a is None:
            return self.expr(d)
        fn = self.r.choice(["exp", "log", "sqrt", "abs", "abs"])
        self.features.add(fn)
        if fn in ("exp", "log") and a.dt in ("f16", "bf16"):
            a = Val(f"{a.text}.to(tl.float32)", "f32", a.block, False, a.approx)
        if fn == "exp":
            # keep it finite-ish and away from the overflow edge, where ulps matter less
            a = Val(f"tl.minimum({a.text}, 10.0)", a.dt, a.block, False, a.approx)
        approx = a.approx or fn in ("exp", "log")
        return Val(f"tl.{fn}({a.text})", a.dt, a.block, False, approx)

    def e_unary(self, d: int) -> Val:
        a = self.expr(d)
        if a.lit or a.dt == "bool":
            return a
        op = self.r.choice(["-", "~", "abs"]) if is_int(a.dt) else self.r.choice(["-", "abs"])
        self.features.add("unary")
        text = f"tl.abs({a.text})" if op == "abs" else f"({op}{a.text})"
        return Val(text, a.dt, a.block, False, a.approx)

    def e_compare(self, d: int) -> Val:
        """A comparison used as a number: ``(a < b) + k`` is i32 (Triton: an int literal takes
        part in the promotion with a bool), ``.to(dt)`` any dtype."""
        c = self.cond(d)
        self.features.add("compare")
        if self.r.random() < 0.5:
            return Val(f"({c.text} + {self.r.choice([0, 1, 5])})", "i32", c.block)
        to = self.r.choice(CONV_DTYPES)
        return Val(f"{c.text}.to({TL[to]})", to, c.block)

    def e_minmax(self, d: int) -> Val:
        a, b = self.expr(d), self.expr(d)
        if a.lit and b.lit:
            return a
        ct = computation_type(a.dt, a.lit, b.dt, b.lit, False)
        if ct in (None, "bf16", "bool") or (ct == "u32" and (a.lit or b.lit)):
            return a
        fn = self.r.choice(["maximum", "minimum"])
        self.features.add("minmax")
        if is_float(ct) and self.r.random() < 0.3:
            self.features.add("propagate_nan")
            return Val(f"tl.{fn}({a.text}, {b.text}, propagate_nan=tl.PropagateNan.ALL)", ct,
                       a.block or b.block, False, a.approx or b.approx)
        return Val(f"tl.{fn}({a.text}, {b.text})", ct, a.block or b.block, False, a.approx or b.approx)

    # -- conversions and statements ----------------------------------------------------------
    def convert(self, v: Val, to: str) -> Val:
        """``v.to(to)``, guarded where a float would be converted to an integer."""
        if v.dt == to:
            return v
        if is_float(v.dt) and not is_float(to):
            if v.approx:
                to = "f64"
            else:
                return Val(f"{_in_range(v.text, to)}.to({TL[to]})", to, v.block)
        return Val(f"{v.text}.to({TL[to]})", to, v.block, False, v.approx)

    def block_expr(self, depth: int) -> Val:
        """An expression with the kernel's block shape (a scalar one is broadcast by ``+ 0``)."""
        v = self.expr(depth)
        if not v.block:
            base = self.pick(lambda u: u.block and u.dt == "i32" and not u.approx)
            v = self.binop("+", v, base) or v
            if not v.block:
                v = Val(f"tl.full(offs.shape, 0, {TL[v.dt]}) + {v.text}", v.dt)
        return v

    def loop(self, lo: Val, hi: Val, depth: int) -> None:
        acc_dt = self.r.choice(CONV_DTYPES)
        acc = self.bind(self.convert(self.block_expr(depth), acc_dt), "acc")
        iv_dt = int_promote(lo.dt, hi.dt)
        self.loop_dt = iv_dt
        if self.r.random() < 0.5:
            step_txt = self.r.choice(["", "", ", 2", ", 3"])
            self.emit(f"for i in range({lo.text}, {hi.text}{step_txt}):")
            self.features.add("for")
            step = None
        else:
            self.emit(f"j = {lo.text}")
            self.emit(f"while j < {hi.text}:")
            self.features.add("while")
            step = "j += 1"
        # for: the bounds' promotion; while: j = lo keeps lo's dtype (j += 1 too)
        iv = Val("i", iv_dt, False) if step is None else Val("j", lo.dt, False)
        self.vals.append(iv)
        outer, self.indent = self.indent, self.indent + "    "
        body = self.operand(depth, lambda v: True, exact=not is_float(acc_dt))
        upd = self.binop(self.r.choice(["+", "-", "*"]) if not is_float(acc_dt) else "+", acc, body)
        if upd is None:
            upd = acc
        self.emit(f"{acc.text} = {self.convert(upd, acc_dt).text}")
        if step:
            self.emit(step)
        self.indent = outer
        self.vals.remove(iv)
        acc.approx = acc.approx or upd.approx

    def branch(self, depth: int) -> None:
        a = self.pick(lambda v: not v.block and not v.lit)
        b = self.pick(lambda v: not v.block and not v.lit)
        if a is None or b is None:
            return
        c = self.binop(self.r.choice(["<", ">", "==", ">="]), a, b)
        if c is None:
            return
        dt = self.r.choice(CONV_DTYPES)
        name = f"br{self.tmp}"
        self.tmp += 1
        self.features.add("if")
        e1, e2 = self.block_expr(depth), self.block_expr(depth)
        if (e1.approx or e2.approx) and not is_float(dt):
            dt = "f64"  # an approximate value is never converted to an integer
        e1, e2 = self.convert(e1, dt), self.convert(e2, dt)
        self.emit(f"if {c.text}:")
        self.emit(f"    {name} = {e1.text}")
        self.emit("else:")
        self.emit(f"    {name} = {e2.text}")
        self.vals.append(Val(name, dt, True, False, e1.approx or e2.approx))


def generate(seed: int, *, n: int | None = None) -> FeProgram:
    """The program for ``seed`` (``n`` overrides its ragged size)."""
    g = Gen(seed)
    r = g.r
    tiled = r.random() < 0.3
    n = n if n is not None else r.choice(RAGGED)
    params: list[str] = []
    kinds: list[tuple[str, str]] = []
    scalars: dict[int, object] = {}

    def param(name: str, k: str, dt: str, value=None) -> str:
        if k == "scalar":
            scalars[len(params)] = value
        params.append(name)
        kinds.append((k, dt))
        return name

    n_in = r.choice([1, 2, 2])
    ins = [param(f"x{i}_ptr", "in", r.choice(ARRAY_DTYPES)) for i in range(n_in)]
    n_out = r.choice([1, 2])
    outs_at = [len(params) + i for i in range(n_out)]
    for i in range(n_out):
        param(f"out{i}_ptr", "out", "f32")  # dtype fixed below, once the value is known
    param("n", "n", "i32")
    scal = []
    for i in range(r.randint(1, 3)):
        dt = r.choice(SCALAR_DTYPES + ["int", "float"])
        if dt == "int":
            v: object = r.choice([2, 3, -7, 1000, 2**40])
            dt = "i32" if -2**31 <= v < 2**31 else "i64"
        elif dt == "float":
            v, dt = r.choice([0.25, -3.5, 1e10]), "f32"
        else:
            v = _scalar(r, dt)
        name = param(f"s{i}", "scalar", dt, v)
        scal.append(Val(f"{name}.to(tl.float32)", "f32", False) if dt == "bf16" else Val(name, dt, False))
    # runtime loop bounds: i32, i64 (beyond 2**32) or Python ints
    lo_dt = r.choice(["i32", "i64", "int"])
    base = r.choice([0, -3, 2**33 + 5, -(2**33)]) if lo_dt == "i64" else r.randint(-3, 3)
    trip = r.randint(-1, 4)
    hi_dt = r.choice([lo_dt, "i64"]) if lo_dt != "int" else "int"
    lo_v = base if lo_dt == "int" else NP[lo_dt](base)
    hi_v = base + trip if hi_dt == "int" else NP[hi_dt](base + trip)
    lo = Val(param("lo", "scalar", "i32" if lo_dt == "int" else lo_dt, lo_v), "i32", False)
    hi = Val(param("hi", "scalar", "i32" if hi_dt == "int" else hi_dt, hi_v), "i32", False)
    lo.dt, hi.dt = kinds[-2][1], kinds[-1][1]

    consts = {"ROWS": r.choice([4, 8, 16]), "COLS": r.choice([4, 8, 16])} if tiled else \
        {"BLOCK": r.choice([64, 128, 256])}
    g.emit("pid = tl.program_id(0)")
    if tiled:
        g.emit("rows = pid * ROWS + tl.arange(0, ROWS)")
        g.emit("cols = tl.arange(0, COLS)")
        g.emit("offs = rows[:, None] * COLS + cols[None, :]")
        g.emit("mask = (rows[:, None] < n) & (cols[None, :] < COLS)")
    else:
        g.emit("offs = pid * BLOCK + tl.arange(0, BLOCK)")
        g.emit("mask = offs < n")
    g.vals += [Val("offs", "i32"), Val("pid", "i32", False)] + scal
    for i, p in enumerate(ins):
        dt = kinds[params.index(p)][1]
        at = "offs.to(tl.int64)" if r.random() < 0.2 else "offs"  # 64-bit offsets too
        if at != "offs":
            g.features.add("i64_offsets")
        if tiled or r.random() < 0.6:
            other = "0" if is_int(dt) else r.choice(["0.0", "-1.5", "float('nan')" if dt in ("f32", "f64") else "2.0"])
            if is_int(dt) and dt != "u32" and r.random() < 0.4:
                other = "-3"
            g.emit(f"v{i} = tl.load({p} + {at}, mask=mask, other={other})")
            g.features.add("other")
        else:
            g.emit(f"v{i} = tl.load({p} + {at}, mask=mask)")
        if dt == "bf16":
            g.emit(f"v{i} = v{i}.to(tl.float32)")
            dt = "f32"
        g.vals.append(Val(f"v{i}", dt))
    for _ in range(r.randint(1, 4)):
        g.bind(g.expr(r.randint(1, 3)))
    if r.random() < 0.5:
        g.loop(lo, hi, 2)
    if r.random() < 0.4:
        g.branch(2)
    for _ in range(r.randint(0, 2)):
        g.bind(g.expr(r.randint(1, 3)))

    approx_out = []
    out_sizes = {}
    for at in outs_at:
        v = g.block_expr(2)
        if v.dt == "bool":
            v = g.convert(v, "i32")
        store_at, store_mask = "offs", "mask"
        if tiled and r.random() < 0.75:
            v, store_at, store_mask, size = _reduce(g, v, consts, n)
            out_sizes[at] = size
        if v.dt == "f32" and r.random() < 0.25:
            v = Val(f"{v.text}.to(tl.bfloat16)", "bf16", v.block, False, v.approx)
        out = g.bind(v, "o", scope=False)
        g.emit(f"tl.store({params[at]} + {store_at}, {out.text}, mask={store_mask})")
        kinds[at] = ("out", out.dt)
        approx_out.append(out.approx)
    sig = ", ".join(params + [f"{c}: tl.constexpr" for c in consts])
    src = f"@jit\ndef fe_kernel_{seed}({sig}):\n" + "\n".join(g.lines) + "\n"
    return FeProgram(seed, src, f"fe_kernel_{seed}", params, kinds, scalars, consts, n, tiled,
                     approx_out, g.features, out_sizes, g.loop_dt)


SUM_BOUND = {"f16": "128.0", "f32": "8.307674973655724e+34", "f64": "1.0715086071862673e+301"}
"""Per float dtype, 2**7 / 2**116 / 2**1000: at most 256 summands (a 16x16 tile) of at most this
magnitude never overflow, whatever the order. A float sum's order is unspecified (eggpu's scans
are Hillis-Steele trees, its reductions pairwise trees, Triton's interpreter sums in sequence;
docs/language.md), and so is, beyond that bound, whether a partial sum overflows: f16 values of
5.9e4, 1.3e4 and -3.3e4 give inf in sequence and 3.9e4 in a tree (seed 731117)."""


def _bounded_summand(v: Val) -> Val:
    """``v`` clamped into [-SUM_BOUND, SUM_BOUND] (continuous, so an approximate ``v`` may be
    clamped too; a NaN stays NaN; an infinity becomes the bound)."""
    b, nan = SUM_BOUND[v.dt], "propagate_nan=tl.PropagateNan.ALL"
    return Val(f"tl.minimum(tl.maximum({v.text}, -{b}, {nan}), {b}, {nan})", v.dt, v.block, False, v.approx)


def _reduce(g: Gen, v: Val, consts: dict, n: int):
    """A reduction or scan of the 2-D value ``v``: (value, store offsets, store mask, out size)."""
    r = g.r
    rows, cols = consts["ROWS"], consts["COLS"]
    grid = -(-n // rows)
    axis = r.choice([0, 1])
    fn = r.choice(["sum", "max", "min", "argmax", "argmin", "cumsum"])
    g.features.add(fn)
    if fn in ("sum", "cumsum") and v.dt in SUM_BOUND:
        v = _bounded_summand(v)
    if fn == "cumsum":
        dt = "i32" if v.dt in ("i16", "bool") else v.dt
        approx = v.approx or is_float(dt)
        rev = ", reverse=True" if r.random() < 0.3 else ""
        if rev:
            g.features.add("reverse")
        out = Val(f"tl.cumsum({v.text}, axis={axis}{rev})", dt, True, False, approx)
        return out, "offs", "mask", n * cols
    if fn == "sum":
        dt = "i32" if v.dt in ("i16", "bool") else v.dt
        approx = v.approx or is_float(dt)
    elif fn in ("max", "min"):
        dt = ("f32" if is_float(v.dt) else "i32") if BITS[v.dt] < 32 else v.dt
        approx = v.approx
    else:
        dt, approx = "i32", False
        if v.approx:
            fn = "max"
            dt = ("f32" if is_float(v.dt) else "i32") if BITS[v.dt] < 32 else v.dt
            approx = True
    shape = r.choice(["axis", "axis", "keep_dims", "none"])
    if shape == "none":  # every axis: one value per program (masked rows take part via other=)
        g.features.add("axis_none")
        return Val(f"tl.{fn}({v.text})", dt, False, False, approx), "pid", "pid < n", grid
    keep = ", keep_dims=True" if shape == "keep_dims" else ""
    if keep:
        g.features.add("keep_dims")
    out = Val(f"tl.{fn}({v.text}, axis={axis}{keep})", dt, True, False, approx)
    if axis == 1:
        return out, "rows[:, None]" if keep else "rows", "rows[:, None] < n" if keep else "rows < n", n
    return out, "pid * COLS + cols[None, :]" if keep else "pid * COLS + cols", "cols[None, :] < COLS" if keep else "cols < COLS", grid * cols
