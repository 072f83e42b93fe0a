"""``run_both``: launch an ``@eggpu.jit`` kernel as Triton code does (``fn[grid](*args, **consts)``)
once in the numpy interpreter and once through the compiled CPU lowering, on fresh copies of the
arrays, and return both sets of arrays so a test compares each with numpy."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def run_both(monkeypatch):
    def run(fn, grid, *args, **consts):
        results = {}
        for device in ("interpret", "cpu"):
            monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
            copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            fn[grid](*copies, **consts)
            results[device] = [a for a in copies if isinstance(a, np.ndarray)]
        return results

    return run


@pytest.fixture
def located_which():
    """:func:`assert_located_which` as a fixture (the test modules are imported by path)."""
    return assert_located_which


def assert_located_which(kernel, which: int, marker: str, message: str, *args, **consts) -> None:
    """Specializing ``kernel`` with ``WHICH=which`` is a CompileError located at the line after
    ``if WHICH == which:`` in its source, at the column of ``marker``, with ``message``, the line
    and a caret under ``marker`` (the misuse kernels' shared check)."""
    import inspect

    import eggpu

    with pytest.raises(eggpu.CompileError) as ei:
        kernel.specialize(*args, WHICH=which, **consts).ir()
    lines, first = inspect.getsourcelines(kernel)
    idx = next(i for i, ln in enumerate(lines) if f"WHICH == {which}:" in ln) + 1
    text = lines[idx].rstrip("\n")
    msg = str(ei.value).splitlines()
    col = text.index(marker)
    assert msg[0].endswith(f":{first + idx}:{col + 1}: {message}"), msg[0]
    assert msg[1] == text and msg[2] == " " * col + "^", msg


@pytest.fixture
def as_bits():
    """``as_bits(a)``: the float array ``a`` as unsigned integers of its width (bit-exact compares)."""
    def bits(a: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(a)
        return a.view(f"u{a.dtype.itemsize}")

    return bits
