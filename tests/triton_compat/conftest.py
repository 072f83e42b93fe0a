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
