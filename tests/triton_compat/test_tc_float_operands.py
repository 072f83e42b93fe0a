"""Every language function whose docstring says "Needs a float operand" refuses an integer block
with one located error, in each of its spellings (``tl.<name>`` where ``tl`` has it,
``libdevice.<name>`` where libdevice has it): the message names the function and the operand's
dtype, points at the call with a caret, and shows the conversion that fixes it. The functions come
from the language's math-function table, so a function added there is checked here without an edit.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import eggpu
from eggpu.kernel_macro import language

FLOAT_ONLY = [n for n, f in language.BUILTIN_FUNCTIONS.items() if (f.__doc__ or "").endswith(language._FLOAT[0])]
CASES = [("tl", n, np.int32) for n in FLOAT_ONLY if n in language.__all__] + [
    ("libdevice", n, np.int64) for n in FLOAT_ONLY if n in language.LIBDEVICE_NAMES]
#: known wrong messages (a strict xfail: fixing one fails the test until it leaves this set)
WRONG = {("libdevice", "nearbyint"): "the message and hint say tl.nearbyint, which tl does not have"}

KERNEL = """import eggpu
import eggpu.language as tl
from eggpu.language.extra import libdevice


@eggpu.jit
def kernel(x_ptr):
    tl.store(x_ptr, {call}(tl.load(x_ptr)))
"""


def _kernel(tmp_path: Path, call: str):
    """The one-line kernel ``tl.store(x_ptr, <call>(tl.load(x_ptr)))``, from a real file (the frontend
    reads a kernel's source)."""
    path = tmp_path / "float_operand_kernel.py"
    path.write_text(KERNEL.format(call=call))
    spec = importlib.util.spec_from_file_location(f"float_operand_{call.replace('.', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


def test_the_table_has_float_only_functions_in_both_spellings():
    assert {"exp", "asin", "lgamma", "rint", "isnan", "sqrt_rn"} <= set(FLOAT_ONLY)
    assert {"popc", "atan2", "fma"}.isdisjoint(FLOAT_ONLY)  # integer or several operands: other messages
    assert ("libdevice", "isnan", np.int64) in CASES and ("tl", "tan", np.int32) in CASES


@pytest.mark.parametrize(("spelling", "name", "dt"), [
    pytest.param(s, n, dt, id=f"{s}.{n}", marks=[pytest.mark.xfail(strict=True, reason=WRONG[s, n])] if (s, n) in WRONG
                 else []) for s, n, dt in CASES])
def test_integer_operand_is_one_located_error(tmp_path, spelling, name, dt):
    kernel = _kernel(tmp_path, f"{spelling}.{name}")
    with pytest.raises(eggpu.CompileError) as ei:
        kernel[(1,)](np.ones(1, dt))
    text = str(ei.value)
    dtype = "i32" if dt == np.int32 else "i64"
    prefix = "tl" if name in language.__all__ else spelling  # libdevice.rint is named tl.rint, as it is one
    assert f"{prefix}.{name} needs a float operand, got {dtype}" in text, text
    assert "^" in text and f"{prefix}.{name}(x.to(tl.f32))" in text
    assert "float_operand_kernel.py:8:" in text  # the kernel's line of the call
