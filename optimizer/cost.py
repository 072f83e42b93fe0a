"""Per-target cost model: what an IR operation costs on a GPU, in "scalar add" units.

The unit is one per-program (scalar) 32-bit integer or float add. An op on a block-wide value
costs ``numel`` times its per-lane cost (a block op runs once per lane), so ``add`` on an
``f32[128]`` costs 128 while the same add on two scalars costs 1: folding ``splat(a) + splat(b)``
into ``splat(a + b)`` is a win. Relative per-lane costs (sm_90 defaults):

* integer ``add``/``sub``/logic/shifts/compares/``select``: 1; integer ``mul``: 2 (so
  ``x * 8 -> x << 3`` is a strict win); signed ``div``/``rem``: 20 (a multi-instruction
  sequence), unsigned ones ``unsigned_divrem`` times that (16: no sign fix-up, so rewriting a
  signed division of non-negative operands to the unsigned one is a strict win); 64-bit integer
  arithmetic costs twice its 32-bit counterpart (emulated with pairs of 32-bit instructions).
* ``cast``: ``cast_lane``, except between integers of the same width (``i32 <-> u32``), which
  is a rename of the same bits and costs ``shape_lane`` (nearly free, strictly positive).
* float ``add``/``mul``/``fma``/``min``/``max``: 1 (f64: ``f64_factor`` times); IEEE ``div`` and
  ``sqrt``: 8; transcendentals (``exp``, ``log``, ``rsqrt``, ``sin``, ``tanh``, ``erf``...): 4-16,
  times ``f64_transcendental_factor`` for f64 (software sequences).
* shape ops (``splat``, ``broadcast``, ``expand_dims``, ``reshape``, ``bitcast``) are nearly free:
  ``shape_lane`` per lane; ``trans`` moves data across lanes and costs more.
* constants are almost free (``const_cost``); ``program_id``/``num_programs`` read a special
  register; opaque leaves (parameters, loads, loop values — computed elsewhere) cost 0.
* reductions cost their operand's lane count times the combining op plus a log-depth shuffle
  overhead; ``dot`` costs M*N*K multiply-adds at ``dot_mac`` each (tensor cores).
* memory ops (``load``/``store``/atomics) cost ``memory_lane`` per lane; they are never changed
  by the optimizer but are counted so a program's total cost is meaningful.

Every non-leaf op has a strictly positive cost: extraction relies on it (a chosen term is always
strictly more expensive than each of its children, so following choices never cycles).

Two views. The lane view above (:meth:`CostModel.op_cost`, :meth:`CostModel.function_cost`) is
what extraction minimizes: it orders the alternatives of one program. It does not rank programs
against each other (its Spearman correlation with SASS counts over the benchmark kernels is
about 0.1): a reduction's shuffle tree is priced per lane, a loop body once, a memory access as
bandwidth (10), a division by a constant as a division loop. The thread view
(:meth:`CostModel.thread_cost`, :mod:`eggpu.optimizer.thread_cost`) estimates the SASS one GPU
thread runs and prices those; it reuses the per-lane costs and adds the knobs below the
``thread view`` comment (about 0.75 Spearman with the defaults, 0.85 calibrated; held-out
numbers in docs/performance.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from eggpu.ir import BlockType, DType, Function
from eggpu.ir.errors import EggpuError
from eggpu.ir.ops import transcendental_ops
from eggpu.ir.targets import resolve_gpu_target

_INT_ARITH = {
    "add": 1.0, "sub": 1.0, "mul": 2.0, "div": 20.0, "rem": 20.0, "minimum": 1.0, "maximum": 1.0,
    "and": 1.0, "or": 1.0, "xor": 1.0, "shl": 1.0, "shr": 1.0, "neg": 1.0, "not": 1.0, "abs": 1.5,
    "eq": 1.0, "ne": 1.0, "lt": 1.0, "le": 1.0, "gt": 1.0, "ge": 1.0,
    "popc": 2.0, "clz": 2.0, "ffs": 3.0, "brev": 2.0, "mulhi": 4.0,
}
_FLOAT_ARITH = {
    "add": 1.0, "sub": 1.0, "mul": 1.0, "fma": 1.0, "div": 8.0, "rem": 24.0, "minimum": 1.0,
    "maximum": 1.0, "neg": 0.5, "abs": 0.5, "floor": 1.0, "ceil": 1.0, "trunc": 1.0,
    "rint": 1.0, "round": 2.0, "sqrt": 8.0,
    "eq": 1.0, "ne": 1.0, "lt": 1.0, "le": 1.0, "gt": 1.0, "ge": 1.0,
}
# Per-lane costs of the transcendental ops that differ from the default below. The set of ops
# priced comes from the op table (``TRANSCENDENTAL`` trait), so a new op needs no entry here;
# tests/test_op_coverage.py checks that every key names a transcendental op.
_TRANSCENDENTAL_COSTS = {
    "exp2": 4.0, "log2": 4.0, "rsqrt": 4.0, "exp": 5.0, "log": 5.0, "sin": 8.0, "cos": 8.0,
    "tanh": 10.0, "erf": 16.0, "sinh": 10.0, "cosh": 10.0, "asinh": 14.0, "acosh": 14.0,
    "atan2": 16.0, "log10": 5.0, "exp10": 5.0, "erfc": 16.0, "lgamma": 24.0, "tgamma": 24.0,
    "pow": 16.0, "hypot": 8.0,
}
#: a libdevice inverse or hyperbolic function: a polynomial plus a sqrt/log/exp (atan, asin, ...)
_TRANSCENDENTAL_DEFAULT = 12.0
_TRANSCENDENTAL = {name: _TRANSCENDENTAL_COSTS.get(name, _TRANSCENDENTAL_DEFAULT) for name in transcendental_ops()}
_REDUCE_COMBINE = {"reduce_sum": "add", "reduce_max": "maximum", "reduce_min": "minimum",
                   "reduce_argmax": "maximum", "reduce_argmin": "minimum"}
_SHAPE_OPS = {"splat", "broadcast", "expand_dims", "reshape"}
_MEMORY = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "atomic_and",
           "atomic_or", "atomic_xor"}

# Multipliers of the default costs of each group (eggpu.optimizer.thread_cost.GROUPS), per target,
# fitted to ptxas + nvdisasm SASS counts of the benchmark kernels' per-thread estimates by
# ``python -m bench cost-fit --write`` (bench/cost_fit.py: method, clamping to [0.25, 4], held-out
# check). Used by ``CostModel.for_target(target, calibrated=True)``; the optimizer's default
# model stays the hand-set one (several groups are collinear on ~30 kernels and sit at the clamp).
# BEGIN CALIBRATION (generated: python -m bench cost-fit --write)
CALIBRATION: dict[str, dict[str, float]] = {
    "sm_80": {
        "address": 2.292,
        "cast": 0.25,
        "control": 4.0,
        "float_div": 2.366,
        "float_simple": 1.185,
        "int_divrem_const": 0.25,
        "int_mul": 1.765,
        "masked": 0.25,
        "memory": 0.25,
        "reduce": 0.25,
        "reduce_tree": 1.137,
        "select": 0.25,
        "transcendental": 1.012
    },
    "sm_90": {
        "address": 2.208,
        "cast": 0.25,
        "control": 4.0,
        "float_div": 2.36,
        "float_simple": 1.313,
        "int_divrem_const": 0.25,
        "int_mul": 2.499,
        "masked": 0.25,
        "memory": 0.25,
        "reduce": 0.25,
        "reduce_tree": 1.253,
        "select": 0.25,
        "transcendental": 0.991
    }
}
# END CALIBRATION
_GROUP_OPS = {
    "int_mul": ("int", ("mul",)),
    "int_divrem": ("int", ("div", "rem")),
    "float_simple": ("float", ("add", "sub", "mul", "fma", "minimum", "maximum", "neg", "abs", "floor", "ceil", "trunc", "rint", "round",
                               "eq", "ne", "lt", "le", "gt", "ge")),
    "float_div": ("float", ("div", "rem", "sqrt")),
}
# groups priced by scalar knobs: a multiplier scales each knob of its group (lane and thread views)
_GROUP_KNOBS = {
    "select": ("select_lane",), "cast": ("cast_lane",), "address": ("addptr_lane", "addptr_thread"),
    "memory": ("memory_lane", "memory_thread"), "masked": ("masked_thread",), "reduce": ("reduce_factor",),
    "reduce_tree": ("reduce_step", "reduce_sync"), "int_divrem_const": ("divrem_const_thread",),
    "dot": ("dot_mac", "dot_thread"), "control": ("control_thread",),
}


@dataclass(frozen=True)
class CostModel:
    """Costs of IR operations for one target (see the module docstring for the units).

    Build with :meth:`for_target`; fields can be overridden with :func:`dataclasses.replace`.
    """

    target: str = "sm_90"
    f64_factor: float = 2.0
    f64_transcendental_factor: float = 8.0
    int64_factor: float = 2.0
    shape_lane: float = 0.05
    trans_lane: float = 0.5
    const_cost: float = 0.01
    special_register: float = 0.5
    arange_lane: float = 0.05
    reduce_overhead: float = 5.0
    dot_mac: float = 0.25
    memory_lane: float = 10.0
    cast_lane: float = 1.0
    unsigned_divrem: float = 0.8
    select_lane: float = 1.0
    addptr_lane: float = 2.0
    reduce_factor: float = 1.0
    # thread view: the per-thread (SASS) estimate only (optimizer/thread_cost.py says what each prices)
    loop_unroll: float = 4.0
    divrem_const_thread: float = 4.0
    memory_thread: float = 1.0
    masked_thread: float = 2.0
    addptr_thread: float = 1.0
    reduce_step: float = 2.0
    reduce_sync: float = 20.0
    dot_thread: float = 1.0
    control_thread: float = 2.0
    int_arith: dict[str, float] = field(default_factory=lambda: dict(_INT_ARITH))
    float_arith: dict[str, float] = field(default_factory=lambda: dict(_FLOAT_ARITH))
    transcendental: dict[str, float] = field(default_factory=lambda: dict(_TRANSCENDENTAL))

    @classmethod
    def for_target(cls, target: str = "sm_90", calibrated: bool = False) -> CostModel:
        """The cost model of an NVIDIA target (any name :mod:`eggpu.ir.targets` accepts:
        ``"sm_90"``, ``"SM90"``, ``"90"``; unknown names and ``"host"`` raise CodegenError).

        Data-centre parts (sm_80, sm_90, sm_100) run f64 at half the f32 rate; consumer parts
        (sm_86, sm_89, sm_120...) at 1/32 or 1/64, which the model reflects in ``f64_factor``.
        ``calibrated``: scale the per-lane costs by the SASS-fitted :data:`CALIBRATION` table of
        ``target`` (unchanged when the table has no entry for it).
        """
        info = resolve_gpu_target(target)
        target = info.name
        model = cls(target=target)
        if not info.full_rate_f64:
            model = replace(model, f64_factor=32.0, f64_transcendental_factor=64.0)
        if calibrated and target in CALIBRATION:
            model = model.scaled(CALIBRATION[target])
        return model

    def scaled(self, table: dict[str, float]) -> CostModel:
        """This model with its per-lane costs multiplied by ``table`` (group -> multiplier;
        groups as in bench/cost_fit.py: int_mul, int_divrem, float_simple, float_div,
        transcendental, select, cast, address, memory, reduce). Unknown groups raise."""
        int_arith, float_arith = dict(self.int_arith), dict(self.float_arith)
        transcendental = dict(self.transcendental)
        changes: dict[str, Any] = {}
        for group, m in table.items():
            if group in _GROUP_OPS:
                kind, ops = _GROUP_OPS[group]
                tbl = int_arith if kind == "int" else float_arith
                for op in ops:
                    tbl[op] = tbl[op] * m
            elif group == "transcendental":
                transcendental = {k: v * m for k, v in transcendental.items()}
            elif group in _GROUP_KNOBS:
                for name in _GROUP_KNOBS[group]:
                    changes[name] = getattr(self, name) * m
            else:
                raise EggpuError(f"cost model: unknown calibration group {group!r}")
        return replace(self, int_arith=int_arith, float_arith=float_arith, transcendental=transcendental, **changes)

    # ------------------------------------------------------------------ per-lane costs

    def lane_cost(self, op: str, dtype: DType) -> float:
        """Per-lane cost of an elementwise op whose operands have element dtype ``dtype``."""
        if op in self.transcendental:
            f = self.f64_transcendental_factor if dtype.bits == 64 else 1.0
            return self.transcendental[op] * f
        if op == "where":
            return self.select_lane * (self.int64_factor if dtype.bits == 64 else 1.0)
        if op in ("cast",):
            return self.cast_lane
        if op == "libdevice":  # an opaque call: priced as a transcendental function
            return _TRANSCENDENTAL_DEFAULT * (self.f64_transcendental_factor if dtype.bits == 64 else 1.0)
        if op in ("bitcast", "int_to_ptr", "ptr_to_int"):  # a register move: same 64 bits
            return self.shape_lane
        if op == "addptr":
            return self.addptr_lane
        if dtype.is_float:
            base = self.float_arith.get(op)
            if base is None:
                raise EggpuError(f"cost model: no float cost for op {op!r}")
            return base * (self.f64_factor if dtype.bits == 64 else 1.0)
        base = self.int_arith.get(op)
        if base is None:
            raise EggpuError(f"cost model: no integer cost for op {op!r}")
        if op in ("div", "rem") and dtype.is_unsigned:
            base *= self.unsigned_divrem
        return base * (self.int64_factor if dtype.bits == 64 else 1.0)

    def op_cost(self, op: str, operand_types: Sequence[BlockType], result_types: Sequence[BlockType],
                attrs: dict[str, Any] | None = None) -> float:
        """Cost of one operation with the given operand and result types (control ops: 1)."""
        attrs = attrs or {}
        if op == "const":
            return self.const_cost
        if op in ("program_id", "num_programs"):
            return self.special_register
        if op == "arange":
            return self.arange_lane * result_types[0].numel
        if op in _SHAPE_OPS:
            return self.shape_lane * result_types[0].numel
        if op == "cast" and _same_width_ints(operand_types[0].dtype, result_types[0].dtype):
            return self.shape_lane * result_types[0].numel
        if op in ("trans", "gather"):
            return self.trans_lane * result_types[0].numel
        if op in _REDUCE_COMBINE:
            t = operand_types[0]
            per = self.lane_cost(_REDUCE_COMBINE[op], t.dtype)
            if op in ("reduce_argmax", "reduce_argmin"):
                per *= 3.0
            overhead = self.reduce_overhead * max(1.0, math.log2(max(t.shape[attrs.get("axis", 0)], 1)))
            return (per * t.numel + overhead) * self.reduce_factor
        if op == "dot":
            a, b = operand_types[0], operand_types[1]
            mac = a.shape[0] * a.shape[1] * b.shape[1]
            acc = result_types[0].numel if len(operand_types) == 3 else 0
            return self.dot_mac * mac + acc
        if op in _MEMORY:
            return self.memory_lane * operand_types[0].numel
        if op == "inline_asm":  # opaque user PTX, never rewritten: priced like a memory op per lane
            return self.memory_lane * result_types[0].numel
        if op in ("for", "while", "if", "yield"):
            return 1.0
        if op in ("device_print", "device_assert"):  # debug effects: kept as they are, priced per lane
            return self.memory_lane * max([1, *(t.numel for t in operand_types)])
        t = operand_types[0]
        return self.lane_cost(op, t.dtype) * result_types[0].numel

    def function_cost(self, fn: Function) -> float:
        """Total cost of every operation of ``fn`` (nested regions counted once)."""
        total = 0.0
        for op in fn.walk():
            total += self.op_cost(op.op, [v.type for v in op.operands], [r.type for r in op.results], op.attrs)
        return total

    def thread_cost(self, fn: Function, threads: int) -> float:
        """Estimated SASS instructions per GPU thread when ``threads`` threads run one program of
        ``fn``: the sum of :func:`eggpu.optimizer.thread_cost.thread_terms` (lanes per thread,
        loop unrolling, reduction trees, masked accesses, constant divisors).

        This is the model in SASS terms (the benchmark compares it with instruction counts and
        ``python -m bench cost-fit`` calibrates it); :meth:`function_cost` (lanes, not threads)
        is what extraction minimizes: within one program both order the alternatives of a block
        op the same way."""
        from .thread_cost import thread_terms

        return sum(thread_terms(self, fn, threads).values())


def _same_width_ints(a: DType, b: DType) -> bool:
    """Whether a cast from ``a`` to ``b`` only renames bits: two integer dtypes of one width."""
    return isinstance(a, DType) and isinstance(b, DType) and a.is_int and b.is_int and a.bits == b.bits


__all__ = ["CostModel"]
