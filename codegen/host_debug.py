"""The host side of ``device_print`` and ``device_assert`` in ``run_cpu``.

**Printing.** The host lowering (:mod:`.lower_debug`) calls the external function
``eggpu_host_print(record, print id, operand, flat index, bits, pid x, pid y, pid z)`` once per
element owned by a lane, then once with operand ``-1`` when the op is done. The symbol is a
ctypes callback registered with LLVM once per process; ``record`` (the run's error-record
address) names the :class:`PrintRun` collecting the elements of the current run. At the end of
each op the run rebuilds the operands' blocks from the bits and prints them with the
interpreter's formatter (:func:`eggpu.ir.debug_ops.print_lines`), so ``run_cpu`` and
``interpret`` print the same lines in the same order (row-major, whatever the layout).

**Asserting.** A failed ``device_assert`` fills the error record like a failed bounds check
(:meth:`eggpu.codegen.bounds.BoundsChecker.report`) with an :class:`AssertCheck`; the runner
raises :func:`eggpu.ir.debug_ops.assertion_error` for it.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any

from eggpu.ir.dtypes import DType

PRINT_SYMBOL = "eggpu_host_print"

_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64,
                                  ctypes.c_uint64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
_LOCK = threading.Lock()
_RUNS: dict[int, PrintRun] = {}
_state: dict[str, Any] = {}


@dataclass(frozen=True)
class PrintSpec:
    """One ``device_print`` op of a host module: its normalized prefix, ``hex`` flag and the dtype
    and shape of each operand."""

    prefix: str
    hex: bool
    dtypes: tuple[DType, ...]
    shapes: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class AssertCheck:
    """One ``device_assert`` of a host module (an entry of ``LoweredModule.bounds_checks``)."""

    msg: str
    src: str
    shape: tuple[int, ...]


class PrintRun:
    """The prints of one ``run_cpu`` call, registered under its error record's address while it runs."""

    def __init__(self, record_address: int, specs: tuple[PrintSpec, ...]):
        self.address = record_address
        self.specs = specs
        self.pending: dict[int, dict[int, int]] = {}
        self.error: BaseException | None = None

    def __enter__(self) -> PrintRun:
        with _LOCK:
            _RUNS[self.address] = self
        return self

    def __exit__(self, *exc: Any) -> None:
        with _LOCK:
            _RUNS.pop(self.address, None)
        if self.error is not None and exc[0] is None:
            raise self.error

    def element(self, pid: int, operand: int, flat: int, bits: int, program: tuple[int, int, int]) -> None:
        if operand >= 0:
            self.pending.setdefault(operand, {})[flat] = bits
            return
        self._flush(self.specs[pid], program)

    def _flush(self, spec: PrintSpec, program: tuple[int, int, int]) -> None:
        import numpy as np

        from eggpu.ir.debug_ops import print_lines

        values = []
        for k, (dt, shape) in enumerate(zip(spec.dtypes, spec.shapes)):
            got = self.pending.get(k, {})
            n = int(np.prod(shape, dtype=np.int64))
            raw = np.zeros(max(n, 1), dtype=np.uint64)
            for flat, bits in got.items():
                raw[0 if flat < 0 else flat] = bits
            values.append((_from_bits(raw[:max(n, 1)], dt).reshape(shape), dt))
        self.pending.clear()
        for line in print_lines(spec.prefix, program, values, spec.hex):
            print(line)


def _from_bits(raw: Any, dt: DType) -> Any:
    """Elements of ``dt`` from their bits, zero-extended to u64."""

    if dt.is_bool:
        return raw != 0
    return raw.astype(f"u{dt.itemsize}").view(dt.np)


def _on_print(record: int | None, pid: int, operand: int, flat: int, bits: int, x: int, y: int, z: int) -> None:
    run = _RUNS.get(record or 0)
    if run is None or run.error is not None:
        return
    try:
        run.element(pid, operand, flat, bits, (x, y, z))
    except BaseException as exc:  # noqa: BLE001 - a callback must not raise into the JIT code
        run.error = exc


def register_print_symbol() -> None:
    """Make ``eggpu_host_print`` resolvable by the JIT (once per process; call before JIT-compiling)."""
    import llvmlite.binding as llvm

    with _LOCK:
        if "callback" not in _state:
            cb = _CALLBACK_TYPE(_on_print)
            _state["callback"] = cb  # kept alive for the process
            llvm.add_symbol(PRINT_SYMBOL, ctypes.cast(cb, ctypes.c_void_p).value)
