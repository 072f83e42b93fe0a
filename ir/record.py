"""Value records without :mod:`dataclasses`: ``==``, ``hash``, ``repr`` and immutability derived
from a class's list of fields.

Why not ``@dataclass``: a dataclass is made by generating its methods as source text and
compiling it, 0.4-0.6 ms a class. The classes a fresh-process cache hit touches (dtypes, IR
types, facts, kernel signatures, the compiled kernel: 16 of them) cost ~8 ms that way, a quarter
of the hit (issue 12: a 30 ms cache hit). A record class writes its own ``__init__`` (plain
Python, as fast as a dataclass's) and names its fields in ``_fields``; this module derives the
rest with :func:`operator.attrgetter`, without generating code.

Semantics, as ``@dataclass`` (``eq=True``) gives them:

* ``a == b`` compares the fields of two instances of the very same class (``NotImplemented``
  for any other class, so a subclass instance is never equal to a base instance);
* ``repr`` is ``Name(field=value, ...)`` over the fields not listed in ``_no_repr``;
* ``_no_compare`` fields take no part in ``==`` and ``hash``;
* :class:`Record` instances are mutable and unhashable (``__hash__ = None``);
* :class:`Frozen` instances hash by their compared fields and refuse assignment and deletion
  (AttributeError, as ``FrozenInstanceError`` is); they pickle and copy through their
  constructor (called with the fields in ``_fields`` order), so ``__slots__`` classes work too.
"""

from __future__ import annotations

from operator import attrgetter

__all__ = ["Frozen", "Record"]


class Record:
    """A mutable record; subclasses set ``_fields`` (constructor order) and write ``__init__``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _no_repr: tuple[str, ...] = ()
    _no_compare: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as a non-frozen dataclass

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        compared = tuple(f for f in cls._fields if f not in cls._no_compare)
        cls._key = staticmethod(attrgetter(*compared) if compared else (lambda obj: ()))  # type: ignore[attr-defined]
        cls._shown = tuple(f for f in cls._fields if f not in cls._no_repr)  # type: ignore[attr-defined]
        cls.__match_args__ = cls._fields  # type: ignore[attr-defined]

    def _assign(self, *values: object) -> None:
        """Set the fields to ``values``, in ``_fields`` order (a frozen record's ``__init__`` too)."""
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, name, value)

    def _replace(self, **changes: object) -> Record:
        """A new record of this class with ``changes`` (field name: value) made, through the
        constructor (what :func:`dataclasses.replace` does); an unknown field is a TypeError."""
        unknown = sorted(set(changes) - set(self._fields))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(map(repr, unknown))}")
        return type(self)(*(changes.get(f, getattr(self, f)) for f in self._fields))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key(self) == self._key(other)  # type: ignore[attr-defined]
        return NotImplemented

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._shown)  # type: ignore[attr-defined]
        return f"{type(self).__qualname__}({shown})"


class Frozen(Record):
    """An immutable, hashable record; ``__init__`` sets its fields with ``object.__setattr__``."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._key(self))  # type: ignore[attr-defined]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __reduce__(self) -> tuple:
        return (type(self), tuple(getattr(self, f) for f in self._fields))
