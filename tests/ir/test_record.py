"""eggpu.ir.record behaves as @dataclass (eq=True, frozen or not) for what eggpu uses of it:
==, hash, repr, immutability, pickling and copying, match patterns."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError, dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eggpu.ir.dtypes import f32, i32
from eggpu.ir.record import Frozen, Record
from eggpu.ir.types import BlockType, PointerType


class Point(Frozen):
    _fields = ("x", "y", "tag")
    _no_repr = ("tag",)
    _no_compare = ("tag",)

    def __init__(self, x: int, y: int, tag: str = ""):
        self._assign(x, y, tag)


@dataclass(frozen=True)
class PointDC:
    x: int
    y: int
    tag: str = field(default="", repr=False, compare=False)


class Box(Record):
    _fields = ("items", "label")

    def __init__(self, items: list[int], label: str):
        self._assign(items, label)


class Slotted(Frozen):
    __slots__ = _fields = ("a", "b")

    def __init__(self, a: int, b: tuple[int, ...]):
        self._assign(a, b)


small = st.integers(-3, 3)


@given(small, small, st.text(max_size=2), small, small, st.text(max_size=2))
def test_eq_hash_repr_match_a_dataclass(x1: int, y1: int, t1: str, x2: int, y2: int, t2: str) -> None:
    a, b = Point(x1, y1, t1), Point(x2, y2, t2)
    da, db = PointDC(x1, y1, t1), PointDC(x2, y2, t2)
    assert (a == b) == (da == db)
    assert (hash(a) == hash(Point(x1, y1, t2)))  # the uncompared field takes no part in the hash
    assert repr(a).replace("Point(", "PointDC(") == repr(da)
    assert a != da and (a == (x1, y1)) is False  # another class is never equal


def test_frozen_records_refuse_assignment_and_deletion() -> None:
    p = Point(1, 2)
    with pytest.raises(AttributeError, match="cannot assign to field 'x' of a frozen Point"):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError, match="cannot delete field 'y' of a frozen Point"):
        del p.y
    with pytest.raises(FrozenInstanceError):  # what the dataclass raised: an AttributeError too
        PointDC(1, 2).x = 3  # type: ignore[misc]
    assert issubclass(FrozenInstanceError, AttributeError)


def test_mutable_records_compare_but_do_not_hash() -> None:
    a, b = Box([1], "a"), Box([1], "a")
    assert a == b and a != Box([2], "a")
    b.items.append(2)
    assert a != b
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    a.label = "z"  # assignable
    assert repr(a) == "Box(items=[1], label='z')"


@pytest.mark.parametrize("value", [Point(1, 2, "t"), Slotted(7, (1, 2)), f32, BlockType(PointerType(i32), (4, 8))])
def test_frozen_records_pickle_and_copy_through_their_constructor(value: object) -> None:
    for other in (pickle.loads(pickle.dumps(value)), copy.copy(value), copy.deepcopy(value)):
        assert other == value and hash(other) == hash(value) and type(other) is type(value)
    assert not hasattr(Slotted(1, ()), "__dict__")


def test_match_args_and_wrong_arity() -> None:
    match Point(3, 4):
        case Point(x, y):
            assert (x, y) == (3, 4)
    with pytest.raises(ValueError):
        Slotted._assign(object.__new__(Slotted), 1)  # fields and values must pair up


def test_replace_goes_through_the_constructor() -> None:
    p = Point(1, 2, "t")
    q = p._replace(y=5)
    assert (q.x, q.y, q.tag) == (1, 5, "t") and (p.x, p.y) == (1, 2)
    with pytest.raises(TypeError, match="Point has no field 'z', 'zz'"):
        p._replace(zz=1, z=2)
    box = Box([1], "a")._replace(label="b")
    assert box == Box([1], "b")
