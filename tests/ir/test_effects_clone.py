"""Function.clone (the one IR cloner) and ir.effects.written_params."""

from __future__ import annotations

from eggpu.ir.effects import written_params
from eggpu.ir.parser import parse_function
from eggpu.ir.printer import print_function

TEXT = """kernel k(%x: ptr<f32>, %y: ptr<f32>, %z: ptr<f32>, %n: i32) {
  %0 = arange() {end=4, start=0} : i32[4]
  %1 = splat(%x) {shape=(4)} : ptr<f32>[4]
  %2 = addptr(%1, %0) : ptr<f32>[4]
  %3 = load(%2) : f32[4]
  %4 = for(%n, %n, %n, %y) : ptr<f32> {
  ^(%i: i32, %p: ptr<f32>):
    %5 = addptr(%p, %i) : ptr<f32>
    yield(%5)
  }
  %6 = splat(%4) {shape=(4)} : ptr<f32>[4]
  %7 = addptr(%6, %0) : ptr<f32>[4]
  store(%7, %3)
}"""


def test_written_params_follow_loop_carried_pointers() -> None:
    fn = parse_function(TEXT)
    assert written_params(fn) == frozenset({"y"})  # x is only read, z never used


def test_clone_is_identical_and_independent() -> None:
    fn = parse_function(TEXT)
    copy = fn.clone()
    assert print_function(copy) == print_function(fn) and copy.facts == fn.facts
    old_ops, new_ops = list(fn.walk()), list(copy.walk())
    assert all(a is not b for a, b in zip(old_ops, new_ops))
    new_ops[0].attrs["end"] = 8  # mutating the copy leaves the original alone
    assert old_ops[0].attrs["end"] == 4
    assert {id(v) for op in new_ops for v in op.operands}.isdisjoint({id(v) for op in old_ops for v in op.results})


def test_pointer_origins_name_the_parameters_behind_each_access() -> None:
    from eggpu.ir.effects import pointer_origins

    fn = parse_function(TEXT)
    accesses = {op.op: op.operands[0] for op in fn.walk() if op.op in ("load", "store")}
    origins = pointer_origins(fn)
    assert origins[id(accesses["load"])] == ("x",) and origins[id(accesses["store"])] == ("y",)
