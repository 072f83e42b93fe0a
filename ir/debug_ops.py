"""Run-time debugging ops on the host: what ``device_print`` prints and what a failed
``device_assert`` says, shared by the interpreter and ``run_cpu`` so both use the same words.

``device_print`` follows the format of Triton's GPU lowering, one line per element of each
operand::

    pid (0, 0, 0) idx ( 3) x: 42

* ``pid (x, y, z)``: the program id on all three axes;
* ``idx (i, j)``: the element's index, each coordinate right-aligned to ``ceil(log10(dim))``
  characters (``idx ()`` for a scalar);
* then the prefix, normalized as Triton does (:func:`normalize_prefix`: ``"x"`` becomes
  ``" x: "``), ``(operand k) `` when the call prints several values, and the value: C's ``%f``
  for floats (6 decimals), ``%i``/``%u`` for signed/unsigned integers, ``0``/``1`` for bools, or
  with ``hex=True`` ``0x`` and the bits of the element's own dtype, zero-padded (Triton pads to
  the dtype's width too, but passes narrow integers sign-extended and floats as f64; eggpu
  prints exactly the element's bits).

Order: programs in row-major order (the grid loop's), operands in call order, elements in
row-major order. On the GPU (``vprintf``) lines of different threads interleave arbitrarily.
A call without values prints ``pid (x, y, z)`` followed by the prefix as given.

numpy is imported where it is used: compiling with the ``debug`` option (a cache hit) needs none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .envvars import getenv
from .errors import DeviceAssertionError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit

if TYPE_CHECKING:
    import numpy as np

    from .dtypes import DType
    from .graph import Function, Loc


def normalize_prefix(prefix: str, nargs: int) -> str:
    """Triton's prefix rule: with values, the prefix ends in ``": "`` and, when longer than two
    characters, starts with a space (``"x"`` -> ``" x: "``, ``""`` -> ``": "``, ``"v = "`` ->
    ``" v =: "``); without values it is printed as given."""
    if not nargs:
        return prefix
    if not prefix.endswith(" "):
        prefix += " "
    if not prefix.endswith(": "):
        prefix = prefix[:-1] + ": "
    if len(prefix) > 2 and not prefix.startswith(" "):
        prefix = " " + prefix
    return prefix


def format_value(x: np.generic, dt: DType, hex: bool) -> str:  # noqa: A002 - Triton's name
    """One element as C's ``printf`` prints it in Triton's lowering (module docstring)."""
    import numpy as np

    if hex:
        if dt.is_bool:
            return f"0x{int(bool(x))}"
        bits = np.asarray(x, dtype=dt.np).reshape(1).view(f"u{dt.itemsize}")[0]
        return f"0x{int(bits):0{dt.bits // 4}x}"
    if dt.is_bool:
        return "1" if bool(x) else "0"
    if dt.is_float:
        v = float(x)
        if math.isnan(v):
            return "-nan" if math.copysign(1.0, v) < 0 else "nan"
        return f"{v:f}"
    return str(int(x))


def index_widths(shape: Sequence[int]) -> tuple[int, ...]:
    """Triton's width of each index coordinate: ``ceil(log10(dim))`` (0 for a size-1 dim)."""
    return tuple(math.ceil(math.log10(d)) if d > 0 else 0 for d in shape)


def print_lines(prefix: str, pid: Sequence[int], values: Sequence[tuple[np.ndarray, DType]],
                hex: bool) -> list[str]:  # noqa: A002
    """The lines one program's ``device_print(prefix, *values)`` prints (``prefix`` normalized)."""
    import numpy as np

    head = f"pid ({pid[0]}, {pid[1]}, {pid[2]})"
    if not values:
        return [head + prefix]
    lines = []
    for k, (arr, dt) in enumerate(values):
        operand = f"(operand {k}) " if len(values) > 1 else ""
        arr = np.asarray(arr)
        widths = index_widths(arr.shape)
        for idx in np.ndindex(*arr.shape):
            coords = ", ".join(f"{i:>{w}}" if w else str(i) for i, w in zip(idx, widths))
            lines.append(f"{head} idx ({coords}){prefix}{operand}{format_value(arr[idx], dt, hex)}")
    return lines


def source_loc(src: str) -> Loc | None:
    """The :class:`Loc` of a ``device_assert``'s ``src`` attribute (``file:line:col``, col 1-based)."""
    from .graph import Loc

    file, _, rest = src.rpartition(":")
    file, _, line = file.rpartition(":")
    try:
        return Loc(file, int(line), int(rest) - 1)
    except ValueError:
        return None


def assertion_error(kernel: str, msg: str, src: str, pid: Sequence[int], rank: int,
                    lane: tuple[int, ...] | None) -> DeviceAssertionError:
    """The error of a failed ``device_assert``: ``file:line:col: kernel: device_assert failed in
    program P, lane (i,): msg`` and the source line with a caret (when the file is readable)."""
    p = tuple(pid[:rank])
    where = f"program {p[0] if len(p) == 1 else p}" + (f", lane {lane}" if lane is not None else "")
    text = f"{src + ': ' if src else ''}{kernel}: device_assert failed in {where}: {msg or '(no message)'}"
    loc = source_loc(src) if src else None
    excerpt = loc.excerpt() if loc is not None else ""
    return DeviceAssertionError(f"{text}\n{excerpt}" if excerpt else text)


def first_failing_lane(cond: np.ndarray, mask: np.ndarray | None) -> tuple[int, ...] | None | bool:
    """``False`` when every lane (under ``mask``) holds, else the index of the first failing lane
    in row-major order (``None`` for a scalar condition)."""
    import numpy as np

    bad = ~np.asarray(cond, dtype=bool)
    if mask is not None:
        bad &= np.asarray(mask, dtype=bool)
    if not bad.any():
        return False
    if bad.ndim == 0:
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), bad.shape))


def debug_default() -> bool:
    """The default of the ``debug`` option: Triton's ``TRITON_DEBUG`` environment variable (set and
    not ``0``)."""
    return getenv("TRITON_DEBUG", "0").strip() not in ("", "0")


def resolve_debug(debug: object, what: str, error: type[Exception]) -> bool:
    """``debug`` as a bool: None means :func:`debug_default`; anything but None/True/False raises
    ``error`` naming ``what`` (the function it was passed to)."""
    if debug is None:
        return debug_default()
    if not isinstance(debug, bool):
        raise error(f"{what}: debug must be True, False or None (TRITON_DEBUG), got {debug!r}")
    return debug


def strip_device_asserts(fn: Function) -> int:
    """Remove every ``device_assert`` of ``fn`` in place (a kernel compiled without ``debug=True``,
    Triton's rule); returns how many were removed."""
    removed = 0
    stack = [fn.body]
    while stack:
        blk = stack.pop()
        kept = [op for op in blk.ops if op.op != "device_assert"]
        removed += len(blk.ops) - len(kept)
        blk.ops[:] = kept
        for op in kept:
            stack.extend(op.regions)
    return removed
