"""Control flow of the AST frontend: ``if`` (compile-time folded or an IR ``if`` with merged
variables), ``for`` over ``range``/``tl.range`` (an IR ``for`` with loop-carried values) or
``tl.static_range`` (unrolled), and ``while`` (delegated to
:mod:`~eggpu.kernel_macro.while_loops`). The semantics are described in
:mod:`~eggpu.kernel_macro.frontend`; :class:`ControlFlow` is a mixin of its ``CodeGenerator``."""

from __future__ import annotations

import ast
import builtins as _py
from collections.abc import Callable, Sequence
from typing import Any

from eggpu.ir.dtypes import bool_, i32, promote
from eggpu.ir.graph import Operation, Value
from eggpu.ir.ops import EFFECT
from eggpu.ir.ops import get as get_op
from eggpu.ir.types import BlockType, PointerType

from .block_pointers import BlockPointer, hidden_offset
from .builtins import SIGNATURES
from .diagnostics import did_you_mean
from .frontend_common import (
    _MAX_UNROLL,
    _MISSING,
    _RET,
    Undefined,
    _contains_return,
    _has_tensor,
    _literal_join_dtype,
    _same,
)
from .frontend_ops import SemanticError, Tensor, describe, is_number


def _first_effect(ops: Sequence[Operation]) -> str | None:
    """The name of the first op with an effect among ``ops`` (and their regions), or None."""
    for op in ops:
        if EFFECT in get_op(op.op).traits:
            return op.op
        for region in op.regions:
            found = _first_effect(region.ops)
            if found:
                return found
    return None


_LOOP_ATTEMPTS = 6  # rounds of carried-type refinement before giving up (a literal widening per round)


class ControlFlow:
    """if/for/while lowering; mixed into :class:`~eggpu.kernel_macro.frontend.CodeGenerator`."""

    # ------------------------------------------------------------ if

    def _if(self, node: ast.If, rest: Sequence[ast.stmt]) -> tuple[bool, bool]:
        """Lower an if statement; returns (terminated, consumed the rest of the block)."""
        cond = self.expr(node.test)
        has_return = _contains_return(node.body) or _contains_return(node.orelse)
        if not isinstance(cond, Tensor):
            if _has_tensor(cond):
                raise self.error(node.test, f"cannot use {describe(cond)} as a condition")
            branch = node.body if cond else node.orelse
            if has_return:  # the continuation depends on whether the taken branch returns
                return self.visit_body(list(branch) + list(rest)), True
            return self.visit_body(branch), False
        if self.frame.lanewise and cond.is_block and not cond.is_pointer:
            return self._select_if(node, cond, rest, has_return)
        try:
            c = self.sem.condition(cond)
        except SemanticError as e:
            raise self.error(node.test, e.problem, e.hint) from None
        if has_return:
            if self.frame.loop_depth:
                ret = next(n for s in list(node.body) + list(node.orelse) for n in ast.walk(s)
                           if isinstance(n, ast.Return))
                self._return(ret)  # raises: return in a loop
            then = list(node.body) + ([] if node.body and isinstance(node.body[-1], ast.Return) else list(rest))
            orelse = list(node.orelse) + ([] if node.orelse and isinstance(node.orelse[-1], ast.Return) else list(rest))
            self._runtime_if(node, c, then, orelse, terminal=True)
            return True, True
        self._runtime_if(node, c, node.body, node.orelse, terminal=False)
        return False, False

    def _runtime_if(self, node: ast.If, cond: Tensor, then: Sequence[ast.stmt], orelse: Sequence[ast.stmt],
                    terminal: bool) -> None:
        f = self.frame
        before = f.scope
        loc = self.b.loc
        with self.b.region() as then_blk:
            f.scope = dict(before)
            self.visit_body(then)
            then_scope = f.scope
        with self.b.region() as else_blk:
            f.scope = dict(before)
            self.b.loc = loc
            self.visit_body(orelse)
            else_scope = f.scope
        f.scope = before
        self.b.loc = loc
        if terminal:
            names = [_RET] if not f.is_kernel else []
        else:
            names = list(dict.fromkeys(list(then_scope) + list(else_scope)))
        merged: list[tuple[str, list[tuple[Any, Any, BlockType]], Callable[[Any], Any]]] = []
        line = f.source.loc(node).line
        for n in names:
            a, c = then_scope.get(n, _MISSING), else_scope.get(n, _MISSING)
            if n == _RET:
                if not terminal:
                    continue
                a = None if a is _MISSING else a
                c = None if c is _MISSING else c
                if (a is None) != (c is None):
                    before[n] = Undefined("not every path returns a value", "")
                    continue
            if a is not _MISSING and c is not _MISSING and _same(a, c):
                before[n] = a
                continue
            if a is _MISSING or c is _MISSING or isinstance(a, Undefined) or isinstance(c, Undefined):
                where = "then" if c is _MISSING or isinstance(c, Undefined) else "else"
                before[n] = Undefined(
                    f"{n} is not defined on every path: it is assigned only in the {where} branch of the "
                    f"if at line {line}",
                    f"assign {n} before the if (or in both branches)")
                continue
            leaves, rebuild = self._plan_merge(node, n, a, c)
            merged.append((n, leaves, rebuild))
        flat = [leaf for _, leaves, _ in merged for leaf in leaves]
        try:
            then_vals = [self._materialize(a, t) for a, _, t in flat]
            else_vals = [self._materialize(c, t) for _, c, t in flat]
        except SemanticError as e:
            raise self.error(node, e.problem, e.hint) from None
        then_blk.ops.append(Operation("yield", tuple(then_vals), {}, (), (), loc))
        else_blk.ops.append(Operation("yield", tuple(else_vals), {}, (), (), loc))
        op = self.b.if_(cond.value, then_blk, else_blk, [t for _, _, t in flat])
        results = iter(op.results)
        for n, _, rebuild in merged:
            before[n] = rebuild(results)

    def _runtime_ifexp(self, node: ast.IfExp, cond: Tensor) -> Any:
        """``a if c else b`` on a runtime ``c``. Each side is lowered into a block of its own.
        Without an effect on either side (load, store, atomic, print, assert) both blocks join the
        current one and the value is ``tl.where(c, a, b)``. With one, only the taken side may run,
        as in Triton (an ``scf.if``): a scalar ``c`` becomes an IR ``if`` yielding the value (both
        sides of one type, a literal adapting to the other side); a per-element ``c`` is refused."""
        sides = []
        for expr in (node.body, node.orelse):
            with self.b.region() as blk:
                value = self.expr(expr)
            sides.append((value, blk, _first_effect(blk.ops)))
        (a, then_blk, _), (b, else_blk, _) = sides
        effect = next((eff for _, _, eff in sides if eff is not None), None)
        if effect is None:
            self.b.block.ops.extend(then_blk.ops + else_blk.ops)  # pure ops: computed unconditionally
            try:
                return self.sem.where(cond, a, b)
            except SemanticError as e:
                raise self.error(node, e.problem, e.hint) from None
        if cond.is_block or self.frame.lanewise:
            raise self.error(
                node, f"{effect} in a conditional expression on a per-element condition: both sides would "
                      "run for every element",
                "use tl.where(cond, a, b) on values loaded with mask=, or a scalar condition")
        try:
            c = self.sem.condition(cond, "conditional expression")
        except SemanticError as e:
            raise self.error(node.test, e.problem, e.hint) from None
        for side, v in (("then", a), ("else", b)):
            if not isinstance(v, Tensor) and not is_number(v):
                raise self.error(node, f"the {side} side of a conditional expression with {effect} is "
                                       f"{describe(v)}: only a block or a number can be chosen at run time")
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.type != b.type:
            raise self.error(node, f"a conditional expression with {effect} on a runtime condition gives {a.type} "
                                   f"on one side and {b.type} on the other (only the taken side runs, as in an if)",
                             f"convert one side (e.g. .to(tl.{promote(a.dtype, b.dtype).name})) so both have one type"
                             if a.type.shape == b.type.shape else "give both sides one shape (tl.broadcast_to)")
        t = self._merge_type(node, "the value", a, b)
        try:
            then_val, else_val = self._materialize(a, t), self._materialize(b, t)
        except SemanticError as e:
            raise self.error(node, e.problem, e.hint) from None
        loc = self.b.loc
        then_blk.ops.append(Operation("yield", (then_val,), {}, (), (), loc))
        else_blk.ops.append(Operation("yield", (else_val,), {}, (), (), loc))
        return Tensor(self.b.if_(c.value, then_blk, else_blk, [t]).results[0])

    def _select_if(self, node: ast.If, cond: Tensor, rest: Sequence[ast.stmt], has_return: bool) -> tuple[bool, bool]:
        """An ``if`` on a per-element condition in a function applied per element
        (kernel_macro/lanewise.py): both branches are computed in the current block and every
        variable they change (and the return value) becomes ``where(cond, then, else)``. A branch
        with an effect (load, store, atomic, print, assert) is refused: it would act on every element."""
        f = self.frame
        before = f.scope
        then, orelse = list(node.body), list(node.orelse)
        if has_return:  # as _if: the rest of the block follows each branch that does not return
            then += [] if then and isinstance(then[-1], ast.Return) else list(rest)
            orelse += [] if orelse and isinstance(orelse[-1], ast.Return) else list(rest)
        try:
            c = self.sem.cast(cond, bool_)
        except SemanticError as e:
            raise self.error(node.test, e.problem, e.hint) from None
        scopes = []
        for branch in (then, orelse):
            f.scope = dict(before)
            start = len(self.b.block.ops)
            self.visit_body(branch)
            effect = _first_effect(self.b.block.ops[start:])
            if effect is not None:
                f.scope = before
                raise self.error(node, f"{effect} in a branch on a per-element condition of a function applied per "
                                 f"element (tl.map_elementwise): both branches run for every element",
                                 "compute the value in the branch and do the memory access after the if "
                                 "(with mask= for the elements that need it)")
            scopes.append(f.scope)
        f.scope = before
        names = [_RET] if has_return else list(dict.fromkeys(list(scopes[0]) + list(scopes[1])))
        line = f.source.loc(node).line
        for n in names:
            a, b = scopes[0].get(n, _MISSING), scopes[1].get(n, _MISSING)
            if has_return and n == _RET and (a is _MISSING or b is _MISSING):
                before[n] = Undefined("not every path returns a value", "")
            elif a is not _MISSING and b is not _MISSING and _same(a, b):
                before[n] = a
            elif a is _MISSING or b is _MISSING or isinstance(a, Undefined) or isinstance(b, Undefined):
                where = "then" if b is _MISSING or isinstance(b, Undefined) else "else"
                before[n] = Undefined(
                    f"{n} is not defined on every path: it is assigned only in the {where} branch of the "
                    f"if at line {line}", f"assign {n} before the if (or in both branches)")
            else:
                before[n] = self._select(node, n, c, a, b)
        return has_return, has_return

    def _select(self, node: ast.If, n: str, c: Tensor, a: Any, b: Any) -> Any:
        """``where(c, a, b)`` for one variable (tuples element by element) of two branches."""
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(self._select(node, n, c, x, y) for x, y in zip(a, b))
        if _same(a, b):
            return a
        t = self._merge_type(node, n, a, b)
        try:
            x, y = Tensor(self._materialize(a, t)), Tensor(self._materialize(b, t))
            return self.sem.where(c, x, y)
        except SemanticError as e:
            raise self.error(node, e.problem, e.hint) from None

    def _plan_merge(self, node: ast.AST, n: str, a: Any, c: Any):
        """The leaves (then value, else value, type) to yield for a variable, and a function that
        rebuilds the variable's value from the if's results (tuples merge element by element)."""
        if isinstance(a, BlockPointer) and a.same_layout(c, _same):  # branches advanced it differently
            leaves, rebuild = self._plan_merge(node, n, a.offsets, c.offsets)
            return leaves, lambda it: a.with_offsets(rebuild(it))
        if isinstance(a, tuple) and isinstance(c, tuple) and len(a) == len(c):
            parts = [self._plan_merge(node, n, x, y) for x, y in zip(a, c)]
            leaves = [leaf for p in parts for leaf in p[0]]
            return leaves, lambda it: tuple(p[1](it) for p in parts)
        if _same(a, c):
            return [], lambda it: a
        t = self._merge_type(node, n, a, c)
        return [(a, c, t)], lambda it: Tensor(next(it))

    def _merge_type(self, node: ast.AST, n: str, a: Any, c: Any) -> BlockType:
        what = "the return value" if n == _RET else n
        if isinstance(a, Tensor) and isinstance(c, Tensor):
            if a.type != c.type:
                v = n if n != _RET else 'x'
                if a.type.shape != c.type.shape:  # a .to() cannot help: broadcast the other side
                    shape = a.type.shape or c.type.shape
                    hint = (f"give both branches one shape (e.g. {v} = tl.broadcast_to({v}, {list(shape)}) "
                            f"in the branch where it is {'a scalar' if not (a.type.shape and c.type.shape) else 'smaller'})")
                else:
                    hint = f"convert one side (e.g. {v}.to(tl.{promote(a.dtype, c.dtype)})) so both branches produce one type"
                raise self.error(
                    node, f"{what} has type {a.type} in the then branch but {c.type} in the else branch", hint)
            return a.type
        if isinstance(a, Tensor) and is_number(c):
            return a.type
        if isinstance(c, Tensor) and is_number(a):
            return c.type
        if is_number(a) and is_number(c):
            return BlockType(_literal_join_dtype(a, c), ())
        raise self.error(
            node, f"{what} is {describe(a)} in the then branch but {describe(c)} in the else branch",
            "a compile-time value cannot depend on a runtime condition; make the condition a "
            "tl.constexpr, or use blocks/numbers in both branches")

    def _materialize(self, v: Any, t: BlockType) -> Value:
        if isinstance(v, Tensor):
            assert v.type == t, (v.type, t)
            return v.value
        if isinstance(t.elem, PointerType):
            raise SemanticError(f"a variable holds a pointer ({t}) on one path and the number {v!r} on another",
                                "keep pointer variables pointers on every path")
        return self.sem.literal(v, t.dtype, t.shape).value

    # ------------------------------------------------------------ for

    def _for(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node.orelse[0], "for ... else is not supported in a kernel",
                             "move the else body after the loop")
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(it, f"cannot loop over {ast.unparse(it)}",
                             "loops are `for i in range(lo, hi, step)` (runtime bounds) or "
                             "`for i in tl.static_range(...)` (unrolled)")
        fobj = self.expr(it.func)
        builtin = getattr(fobj, "__eggpu_builtin__", None)
        is_static = builtin == "static_range"
        if fobj is not _py.range and builtin not in ("static_range", "range"):
            raise self.error(it, f"cannot loop over {ast.unparse(it)}",
                             "loops are `for i in range(lo, hi, step)` (runtime bounds) or "
                             "`for i in tl.static_range(...)` (unrolled)")
        if builtin == "range":
            self._range_hints(it)
        elif it.keywords:
            raise self.error(it.keywords[0], f"{ast.unparse(it.func)}() takes no keyword arguments",
                             "write range(lo, hi, step)")
        args = [self.expr(a) for a in it.args]
        if not 1 <= len(args) <= 3:
            raise self.error(it, f"{ast.unparse(it.func)}() takes 1 to 3 arguments, got {len(args)}")
        lo, hi, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name", "write `for i in range(...)`")
        if is_static:
            self._static_for(node, it, lo, hi, step)
        else:
            self._runtime_for(node, it, lo, hi, step)

    def _while(self, node: ast.While) -> None:
        from .while_loops import lower_while

        lower_while(self, node)

    def _range_hints(self, it: ast.Call) -> None:
        """Check the keywords of ``tl.range(...)``: Triton's pipelining hints, accepted without effect."""
        bs = SIGNATURES["range"]
        hints = bs.params[3:]
        for kw in it.keywords:
            if kw.arg not in hints:
                dym = did_you_mean(kw.arg or "", hints)
                raise self.error(kw, f"tl.range() got an unexpected keyword argument {kw.arg!r}",
                                 (f"{dym[:-1]}=? " if dym else "") + f"the signature is {bs.text}")
            v = self.expr(kw.value)
            if _has_tensor(v):
                raise self.error(kw, f"tl.range({kw.arg}=...) needs a compile-time value, got {describe(v)}")

    def _static_for(self, node: ast.For, it: ast.Call, lo: Any, hi: Any, step: Any) -> None:
        for v, what in ((lo, "start"), (hi, "end"), (step, "step")):
            if not isinstance(v, int) or isinstance(v, bool):
                raise self.error(it, f"tl.static_range bounds must be compile-time ints; {what} is {describe(v)}",
                                 "use range(...) for a loop with runtime bounds")
        if step == 0:
            raise self.error(it, "tl.static_range step must not be zero")
        r = range(lo, hi, step)
        if len(r) > _MAX_UNROLL:
            raise self.error(it, f"tl.static_range would unroll {len(r)} iterations (limit {_MAX_UNROLL})",
                             "use range(...) for long loops")
        f = self.frame
        name = node.target.id  # type: ignore[attr-defined]
        f.loop_depth += 1
        try:
            for i in r:
                f.scope[name] = i
                self.visit_body(node.body)
        finally:
            f.loop_depth -= 1

    def _assigned_names(self, node: ast.For) -> list[str]:
        key = id(node)
        hit = self.frame.assigned_cache.get(key)
        if hit is None:
            found: dict[str, tuple[int, int]] = {}
            for s in node.body:
                for n in ast.walk(s):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in found:
                        found[n.id] = (n.lineno, n.col_offset)
            hit = sorted(found, key=found.__getitem__)
            self.frame.assigned_cache[key] = hit
        return hit

    def _runtime_for(self, node: ast.For, it: ast.Call, lo: Any, hi: Any, step: Any) -> None:
        if isinstance(step, int) and not isinstance(step, bool) and step == 0:
            raise self.error(it, "range() step must not be zero")
        try:
            lo_t, hi_t, step_t, variable, wide_trips = self.sem.loop_bounds(lo, hi, step)
        except SemanticError as e:
            raise self.error(it, e.problem, e.hint) from None
        f = self.frame
        target = node.target.id  # type: ignore[attr-defined]
        before = f.scope
        loc = self.b.loc
        line = f.source.loc(node).line
        assigned = [n for n in self._assigned_names(node) if n != target]
        packed, assigned, plan = self._carry_plan(before, assigned)
        counter = BlockType(i32, ()) if wide_trips is None else wide_trips.type
        plan, (blk, next_k), end_scope = self._settle(
            node, plan, lambda p: self._loop_body(node, target, p, before, variable, counter, packed))
        f.scope = before
        self.b.loc = loc
        carried = [n for n, st in plan.items() if st[0] == "tensor"]
        try:
            inits = [self._materialize(before[n], plan[n][1]) for n in carried]
            yields = [self._materialize(end_scope[n], plan[n][1]) for n in carried]
        except SemanticError as e:
            raise self.error(node, e.problem, e.hint) from None
        if wide_trips is None:
            blk.ops.append(Operation("yield", tuple(yields), {}, (), (), loc))
            results = self.b.for_(lo_t.value, hi_t.value, step_t.value, inits, blk).results
        else:  # a wide loop: while k < trips over a counter of the loop's unsigned dtype
            blk.ops.append(Operation("yield", (next_k, *yields), {}, (), (), loc))
            with self.b.region([a.type for a in blk.args]) as cond_blk:
                self.b.yield_(self.b.op("lt", cond_blk.args[0], wide_trips.value))
            zero = self.b.const(0, counter.dtype)
            results = self.b.while_([zero, *inits], cond_blk, blk).results[1:]
        for n, r in zip(carried, results):
            before[n] = Tensor(r)
        for n in assigned:
            if n not in plan:
                before[n] = Undefined(
                    f"{n} is assigned inside the for loop at line {line} and is not available after it",
                    f"assign {n} before the loop so that it becomes a loop-carried value")
        self._rebuild_block_pointers(before, packed)
        before[target] = Undefined(
            f"{target} is the variable of the for loop at line {line} and is not available after it",
            "keep the value you need in a variable assigned before the loop")

    def _settle(self, node: ast.For | ast.While, plan: dict[str, tuple],
                build: Callable[[dict[str, tuple]], tuple[Any, dict[str, Any]]]) -> tuple[dict[str, tuple], Any, Any]:
        """Build a loop's regions (``build(plan) -> (regions, scope at the end of the body)``) until
        the carried types are the same before and after an iteration; returns (plan, regions, scope)."""
        for _attempt in range(_LOOP_ATTEMPTS):
            regions, end_scope = build(plan)
            new_plan = self._join_loop(node, plan, end_scope)  # type: ignore[arg-type]
            if new_plan == plan:
                return plan, regions, end_scope
            plan = new_plan
        raise self.error(node, "cannot determine the types of the loop-carried variables",  # pragma: no cover
                         "give every variable assigned in the loop its final type before the loop")

    def _loop_body(self, node: ast.For, target: str, plan: dict[str, tuple], before: dict[str, Any],
                   variable: Callable[[Tensor], Tensor], counter: BlockType, packed: dict[str, BlockPointer]):
        """((the loop body region (args: the counter, then the carried values), for a wide loop (a
        counter wider than i32, lowered as a ``while``) the next counter), the scope at its end)."""
        f = self.frame
        carried = [n for n, st in plan.items() if st[0] == "tensor"]
        arg_types = [counter] + [plan[n][1] for n in carried]
        with self.b.region(arg_types) as blk:
            scope = dict(before)
            scope[target] = variable(Tensor(blk.args[0]))  # the i32 iv, or lo + k * step (wide loops)
            for n, a in zip(carried, blk.args[1:]):
                scope[n] = Tensor(a)
            end_scope = self._loop_iteration(node, scope, packed)
            next_k = None
            if counter.dtype != i32:
                next_k = self.b.op("add", blk.args[0], self.b.const(1, counter.dtype))
        f.scope = before
        return (blk, next_k), end_scope

    def _loop_iteration(self, node: ast.For | ast.While, scope: dict[str, Any],
                        packed: dict[str, BlockPointer]) -> dict[str, Any]:
        """Lower the body of loop ``node`` once in ``scope`` (the carried values bound) and return the
        scope at its end; block pointers are rebuilt from their carried offsets before and taken
        apart into them after (:meth:`_unpack_block_pointers`)."""
        f = self.frame
        self._rebuild_block_pointers(scope, packed)
        f.scope = scope
        f.loop_depth += 1
        try:
            self.visit_body(node.body)
        finally:
            f.loop_depth -= 1
        end_scope = f.scope
        for n, bp in packed.items():
            self._repack_block_pointer(node, n, bp, end_scope)  # type: ignore[arg-type]
        return end_scope

    @staticmethod
    def _rebuild_block_pointers(scope: dict[str, Any], packed: dict[str, BlockPointer]) -> None:
        """Block pointer variables of ``scope`` from their carried offsets."""
        for n, bp in packed.items():
            scope[n] = bp.with_offsets(tuple(scope[hidden_offset(n, d)] for d in range(len(bp.offsets))))

    def _carry_plan(self, before: dict[str, Any], assigned: list[str]
                    ) -> tuple[dict[str, BlockPointer], list[str], dict[str, tuple]]:
        """The first guess at a loop's carried variables (for and while loops): the block pointers
        among ``assigned`` (carried by their offsets, which replace them in the returned list of
        assigned names), and per variable that exists before the loop ``("tensor", type,
        flexible)``, ``("tuple", value)`` or ``("const", value)``, refined by :meth:`_join_loop`."""
        packed = self._unpack_block_pointers(before, assigned)
        assigned = [n for n in assigned if n not in packed] + [
            hidden_offset(n, d) for n, bp in packed.items() for d in range(len(bp.offsets))]
        plan: dict[str, tuple] = {}
        for n in assigned:
            v = before.get(n, _MISSING)
            if v is _MISSING or isinstance(v, Undefined):
                continue
            if isinstance(v, Tensor):
                plan[n] = ("tensor", v.type, False)
            elif _has_tensor(v):
                plan[n] = ("tuple", v)
            else:
                plan[n] = ("const", v)
        return packed, assigned, plan

    @staticmethod
    def _unpack_block_pointers(scope: dict[str, Any], assigned: list[str]) -> dict[str, BlockPointer]:
        """Block pointers among the loop's ``assigned`` variables: their offsets go into hidden
        variables of ``scope`` so that they are carried like scalars (block_pointers.py)."""
        packed = {n: v for n in assigned if isinstance(v := scope.get(n), BlockPointer)}
        for n, bp in packed.items():
            for d, o in enumerate(bp.offsets):
                scope[hidden_offset(n, d)] = o
        return packed

    def _repack_block_pointer(self, node: ast.For, n: str, bp: BlockPointer, end_scope: dict[str, Any]) -> None:
        """Move the offsets of block pointer ``n`` at the end of the body into its hidden variables."""
        end = end_scope.get(n)
        if isinstance(end, Undefined):
            raise self.error(node, f"{n} may be undefined after an iteration of this loop: {end.problem}", end.hint)
        if not bp.same_layout(end, _same):
            raise self.error(self._last_assignment(node, n),
                             f"the block pointer {n} is {describe(end)} after an iteration of the loop, not the "
                             f"same block pointer moved by tl.advance",
                             "in a runtime loop only tl.advance may change a block pointer; make a new variable "
                             "for a different one")
        for d, o in enumerate(end.offsets):
            end_scope[hidden_offset(n, d)] = o

    def _join_loop(self, node: ast.For, plan: dict[str, tuple], end_scope: dict[str, Any]) -> dict[str, tuple]:
        new: dict[str, tuple] = {}
        for n, st in plan.items():
            end = end_scope.get(n, _MISSING)
            if isinstance(end, Undefined):
                raise self.error(node, f"{n} may be undefined after an iteration of this loop: {end.problem}", end.hint)
            kind = st[0]
            if kind == "tuple":
                if not _same(st[1], end):
                    raise self.error(node, f"the tuple {n} cannot be reassigned in a runtime loop",
                                     "unpack it into separate variables before the loop")
                new[n] = st
            elif kind == "const":
                v0 = st[1]
                if _same(v0, end):
                    new[n] = st
                elif is_number(v0) and is_number(end):
                    new[n] = ("tensor", BlockType(_literal_join_dtype(v0, end), ()), True)
                elif is_number(v0) and isinstance(end, Tensor) and not end.is_pointer:
                    if isinstance(v0, float) and not end.dtype.is_float:
                        raise self.error(
                            node, f"{n} starts as the float literal {v0!r} before the loop but becomes "
                            f"{end.type} in it",
                            f"start it with an integer literal, or convert inside the loop: {n} = (...).to(tl.f32)")
                    new[n] = ("tensor", end.type, True)
                else:
                    raise self.error(
                        node, f"{n} is {describe(v0)} before the loop but {describe(end)} after an iteration",
                        "a compile-time value cannot change in a runtime loop; use tl.static_range to unroll, "
                        "or make it a block/scalar before the loop")
            else:
                _, t, flexible = st
                if isinstance(end, Tensor):
                    if end.type == t:
                        new[n] = st
                    elif flexible and not end.is_pointer:
                        new[n] = ("tensor", end.type, True)
                    else:
                        raise self.error(
                            self._last_assignment(node, n),
                            f"loop-carried variable {n} has type {t} before the loop but {end.type} "
                            f"after an iteration",
                            self._type_change_hint(n, end.type, t))
                elif is_number(end):
                    new[n] = st
                else:
                    raise self.error(node, f"loop-carried variable {n} has type {t} before the loop but is "
                                     f"{describe(end)} after an iteration",
                                     "keep one type for a variable assigned in a loop")
        return new

    @staticmethod
    def _last_assignment(node: ast.For, n: str) -> ast.AST:
        """The statement of the loop body that assigns ``n`` last (for diagnostics)."""
        best: ast.AST = node
        for s in ast.walk(node):
            if isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign) and s is not node:
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                if any(isinstance(x, ast.Name) and x.id == n for t in targets for x in ast.walk(t)):
                    if (s.lineno, s.col_offset) >= (getattr(best, "lineno", 0), getattr(best, "col_offset", 0)):
                        best = s
        return best

    @staticmethod
    def _type_change_hint(n: str, new: BlockType, old: BlockType) -> str:
        if isinstance(new.elem, PointerType) or isinstance(old.elem, PointerType):
            return f"keep {n} the same pointer type and shape in every iteration"
        shape = "[" + ", ".join(map(str, new.shape)) + "]"
        return (f"give {n} the loop's type before the loop, e.g. {n} = tl.zeros({shape}, dtype=tl.{new.dtype}), "
                f"or convert inside the loop with .to(tl.{old.dtype})")
