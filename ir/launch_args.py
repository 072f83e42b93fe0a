"""Launch-argument rules shared by every way of running a kernel.

The reference interpreter (:mod:`eggpu.ir.interp`), the CPU build of the lowering
(:mod:`eggpu.codegen.host`) and the CUDA launcher (:mod:`eggpu.runtime`) validate a launch the
same way and word their errors the same way; the rules live here once. Every check takes the
kernel name (the first word of each message) and ``error``, the :class:`EggpuError` subclass to
raise: the interpreter passes ``InterpreterError``, the compiled paths ``LaunchError``.

* :func:`normalize_grid`: an int or a tuple/list of 1 to 3 ints, each ``>= 0`` (a 0 runs
  nothing) and within CUDA's grid limits (:data:`GRID_MAX`: x at most ``2**31 - 1``, y and z
  at most 65535) — for every way of running, so that a grid the GPU would refuse (or a
  ``2**40`` grid the interpreter would run for good) fails at once; numpy integers count as
  ints, bools and floats do not. Returned padded to three axes with 1s, with the number of
  axes the caller gave. ``limit`` additionally bounds every axis (callers pass ``GRID_LIMIT``:
  the compiled code's program ids are i32).
* :func:`check_arg_count`: exactly one argument per parameter.
* :func:`check_host_array`: a pointer parameter given a host buffer needs a numpy array whose
  dtype is exactly the pointee dtype (no conversion), C-contiguous, and writable when the
  kernel may write through it (``writable=True``).
* :func:`convert_scalar`: a scalar parameter's value as a numpy scalar of the parameter dtype.
  A 0-d array counts as its element. ``bool`` parameters take bools or the ints 0 and 1.
  Integer parameters take ints and bools (never floats, even integral ones) within the dtype's
  range. Float parameters take bools, ints and floats (numpy's and ml_dtypes' float scalars such
  as ``ml_dtypes.bfloat16`` included), rounded once (round-to-nearest-even, as
  :func:`eggpu.ir.semantics.cast`); a finite value that rounds to an infinity is rejected,
  while inf and NaN pass through.

Messages name the kernel, the parameter (``parameter 'x' (ptr<f32>)``), what it expects and what
it got (:func:`describe`). A value a message quotes goes through :func:`short_repr`: at most
:data:`REPR_CHARS` characters (a 300-element list shows its first items, then ``...``; a long int
its first and last digits and how many digits it has), so an error never quotes a whole argument. :func:`pointer_dtype_message` and :func:`contiguity_message` give
the wording to launchers that check other kinds of buffers (device arrays) themselves;
:func:`device_tensor` reads a CUDA tensor through PyTorch's ``data_ptr()`` protocol.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .device_buffers import TORCH_DTYPES, device_tensor
from .dtypes import DType, from_numpy
from .errors import EggpuError
from .semantics import cast, round_f64
from .types import BlockType

__all__ = [
    "GRID_LIMIT", "GRID_MAX", "TORCH_DTYPES", "check_arg_count", "check_host_array", "contiguity_message", "convert_scalar",
    "describe", "device_tensor", "normalize_grid", "np_name", "param_names", "pointer_dtype_message", "short_repr",
]

GRID_LIMIT = 1 << 31
"""Exclusive bound on a grid axis for compiled code (program ids and grid sizes are i32)."""

GRID_MAX = ((1 << 31) - 1, 65535, 65535)
"""CUDA's largest grid (``maxGridSize`` of every GPU since compute capability 3.0): programs per
axis x, y, z. :func:`normalize_grid` enforces it everywhere."""

ErrorClass = type[EggpuError]

REPR_CHARS = 80
"""The most characters of a caller's value that a launch error quotes."""

class _ShortRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        text = repr(x)  # ValueError beyond sys.get_int_max_str_digits(): short_repr handles it
        if len(text) <= self.maxlong:
            return text
        digits = len(text) - (x < 0)
        return f"{text[:12]}...{text[-6:]} ({digits} digits)"


_REPR = _ShortRepr()
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = 6
_REPR.maxdict, _REPR.maxlevel = 4, 3
_REPR.maxstring, _REPR.maxlong, _REPR.maxother = 40, 40, 40


# ------------------------------------------------------------------ descriptions


def np_name(d: np.dtype) -> str:
    """``f64 (float64)``: the eggpu name of a numpy dtype, with numpy's name when they differ
    (``f32 (float32)``, but ``bool``); numpy's name alone for dtypes eggpu does not have."""
    try:
        name = str(from_numpy(d))
    except EggpuError:
        return str(d)
    return name if name == str(d) else f"{name} ({d})"


def short_repr(value: Any, limit: int = REPR_CHARS) -> str:
    """``repr(value)`` cut to at most ``limit`` characters (containers show their first items,
    long strings and ints their ends, then ``...``); never raises."""
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits()
        text = f"<an int of {value.bit_length()} bits>" if isinstance(value, int) else f"<{type(value).__name__}>"
    except Exception:  # a user object whose __repr__ fails
        text = f"<{type(value).__name__} object>"
    text = " ".join(text.split())  # a multi-line repr (numpy arrays) stays on the message's line
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(value: Any) -> str:
    """What a caller passed, for "got ..." in messages: ``an array of f32 (float32) with shape
    (4,)``, ``a numpy float32 scalar np.float32(3.0)``, ``float 2.5``, ``str '12'``."""
    if isinstance(value, np.ndarray):
        return f"an array of {np_name(value.dtype)} with shape {value.shape}"
    if isinstance(value, np.generic):
        return f"a numpy {value.dtype} scalar {short_repr(value)}"
    return f"{type(value).__name__} {short_repr(value)}"


def param_names(params: Sequence[Any]) -> list[str]:
    """The names of ``params`` (objects with a ``name``) for messages; unnamed ones are ``arg{i}``."""
    return [p.name or f"arg{i}" for i, p in enumerate(params)]


def pointer_dtype_message(kernel: str, name: str, ptr_type: BlockType, got: np.dtype, *,
                          what: str = "an array") -> str:
    """A pointer parameter given a buffer of the wrong element dtype (``what`` names the buffer
    kind: ``an array``, ``a device array``)."""
    return (f"{kernel}: parameter '{name}' ({ptr_type}) expects an array of {ptr_type.dtype}, "
            f"got {what} of {np_name(got)}")


def contiguity_message(kernel: str, name: str, strides: Sequence[int], shape: Sequence[int], *,
                       fix: str = "pass np.ascontiguousarray(...) and copy the result back") -> str:
    """A pointer parameter given a buffer that is not C-contiguous (``strides`` in bytes)."""
    return (f"{kernel}: parameter '{name}' needs a C-contiguous array (got strides {tuple(strides)} "
            f"for shape {tuple(shape)}); {fix}")


# ------------------------------------------------------------------ grid and count


def _is_int(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


def normalize_grid(kernel: str, grid: Any, error: ErrorClass, *,
                   limit: int | None = None) -> tuple[tuple[int, int, int], int]:
    """``(dims, rank)``: ``grid`` padded to three axes with 1s, and how many axes the caller gave.

    ``grid`` is an int or a tuple/list of 1 to 3 ints (numpy integers allowed; bools, floats and
    strings are not), each ``>= 0``, with ``limit`` ``< limit``, and at most :data:`GRID_MAX`
    (CUDA's limits). A 0 axis is valid: the launch runs no program. Entries past the third are
    accepted when they are 1 (Triton's launcher ignores them; FlagGems launches ``[(M, n, 1, 1)]``)
    and dropped; any other value there is an error.
    """
    if isinstance(grid, tuple | list) and len(grid) > 3 and all(_is_int(g) for g in grid):
        if any(int(g) != 1 for g in grid[3:]):
            raise error(f"{kernel}: grid {short_repr(grid)} has {len(grid)} axes; a grid has at most 3 (x, y, z) "
                        f"and entries past the third may only be 1")
        grid = tuple(grid[:3])
    if _is_int(grid):
        dims: tuple[int, ...] = (int(grid),)
    elif isinstance(grid, tuple | list) and 1 <= len(grid) <= 3 and all(_is_int(g) for g in grid):
        dims = tuple(int(g) for g in grid)
    else:
        raise error(f"{kernel}: grid must be an int or a tuple of 1 to 3 ints, got {short_repr(grid)}")
    if any(d < 0 for d in dims):
        raise error(f"{kernel}: grid dimensions must be >= 0, got {short_repr(dims)}")
    if limit is not None and any(d >= limit for d in dims):
        raise error(f"{kernel}: grid dimensions must be at most {limit - 1}, got {short_repr(dims)}")
    for axis, (d, most) in enumerate(zip(dims, GRID_MAX)):
        if d > most:
            raise error(f"{kernel}: grid {dims} exceeds CUDA's limits: axis {'xyz'[axis]} has {d} programs, at most "
                        f"{most} are allowed (x at most {GRID_MAX[0]}, y and z at most {GRID_MAX[1]})")
    return (dims + (1, 1, 1))[:3], len(dims)  # type: ignore[return-value]


def check_arg_count(kernel: str, names: Sequence[str], args: Sequence[Any], error: ErrorClass) -> None:
    """One argument per parameter (``names`` are the parameters' names, in order)."""
    if len(args) != len(names):
        raise error(f"{kernel} takes {len(names)} argument(s) ({', '.join(names)}), got {len(args)}")


# ------------------------------------------------------------------ pointers


def check_host_array(kernel: str, name: str, ptr_type: BlockType, value: Any, error: ErrorClass, *,
                     writable: bool = False) -> np.ndarray:
    """``value`` itself, once it is a numpy array of exactly the pointee dtype of ``ptr_type``,
    C-contiguous, and (with ``writable``) writable. Nothing is converted or copied."""
    pointee = ptr_type.dtype
    if not isinstance(value, np.ndarray):
        raise error(f"{kernel}: parameter '{name}' ({ptr_type}) expects a numpy array of {pointee}, "
                    f"got {describe(value)}")
    if value.dtype != pointee.np:
        raise error(pointer_dtype_message(kernel, name, ptr_type, value.dtype))
    if not value.flags.c_contiguous:
        raise error(contiguity_message(kernel, name, value.strides, value.shape))
    if writable and not value.flags.writeable:
        raise error(f"{kernel}: parameter '{name}' is a read-only array, but the kernel may write through it")
    return value


# ------------------------------------------------------------------ scalars


def _is_ml_float(v: Any) -> bool:
    """A scalar of one of ml_dtypes' floats (``ml_dtypes.bfloat16``, the FP8 formats): numpy
    scalars that are not ``np.floating``, yet specialize an unannotated parameter to their float
    dtype (so a launch must take them back)."""
    if not isinstance(v, np.generic) or isinstance(v, np.number | np.bool_):
        return False
    try:
        return from_numpy(v.dtype).is_float
    except EggpuError:
        return False


def convert_scalar(kernel: str, name: str, dt: DType, value: Any, error: ErrorClass) -> np.generic:
    """``value`` as a numpy scalar of ``dt`` (``np.bool_`` for bool); the rules are in the module
    docstring. Integers convert to floats exactly as the IR's ``cast`` (one rounding, also for
    64-bit values); integers beyond the 64-bit range go through a Python float."""
    what = f"{kernel}: parameter '{name}' ({dt})"
    v = value
    if isinstance(v, np.ndarray):
        if v.ndim != 0:
            raise error(f"{what} expects a scalar, got {describe(value)}")
        v = v[()]
    is_bool = isinstance(v, bool | np.bool_)
    is_int = isinstance(v, int | np.integer) and not is_bool
    is_float = isinstance(v, float | np.floating) or _is_ml_float(v)
    if dt.is_bool:
        if is_bool or (is_int and int(v) in (0, 1)):
            return np.bool_(bool(v))
        raise error(f"{what} expects a bool, got {describe(value)}")
    if dt.is_int:
        if not (is_int or is_bool):
            raise error(f"{what} expects an integer, got {describe(value)}")
        iv = int(v)
        if not dt.min <= iv <= dt.max:
            raise error(f"{what}: value {short_repr(iv)} is out of range [{dt.min}, {dt.max}]")
        return dt.np.type(iv)
    if not (is_int or is_bool or is_float):
        raise error(f"{what} expects a number, got {describe(value)}")
    if is_float:
        x = float(v)
    else:
        iv = int(v)
        if -(1 << 63) <= iv < (1 << 64):
            src = np.asarray(iv, dtype=np.int64 if iv < (1 << 63) else np.uint64)
            with np.errstate(all="ignore"):
                r = cast(src, from_numpy(src.dtype), dt)
            if not np.isfinite(r):
                raise error(f"{what}: value {short_repr(iv)} is out of range for {dt}")
            return np.asarray(r, dtype=dt.np)[()]
        try:
            x = float(iv)
        except OverflowError:
            raise error(f"{what}: value {short_repr(iv)} is out of range for {dt}") from None
    r = round_f64(np.asarray(x, dtype=np.float64), dt)
    if math.isfinite(x) and not np.isfinite(r):
        raise error(f"{what}: value {x!r} is out of range for {dt} (max {dt.max!r})")
    return np.asarray(r, dtype=dt.np)[()]
