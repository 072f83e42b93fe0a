"""Python's scalar types as parameter annotations of an ``@eggpu.jit`` kernel, as Triton reads them:
``n: int`` is an ``int32`` parameter, ``x: float`` a ``float32`` one and ``flag: bool`` an ``int1`` one,
whatever the launch's argument (Liger-Kernel's JSD kernel declares ``n_non_ignore: int``)."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def scaled_rows(x_ptr, out_ptr, n: int, scale: float, negate: bool, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs, mask=offs < n, other=0.0) * scale
    if negate:
        y = -y
    tl.store(out_ptr + offs, y, mask=offs < n)


def test_python_types_are_tritons_dtypes():
    x = np.zeros(4, np.float32)
    # an int that would be i64 unannotated, an int for a float, 0 for a bool: the annotations decide
    k = scaled_rows.specialize(x, x, 1, 3, 0, BLOCK=4)
    assert k.arg_types[2:] == (tl.int32, tl.float32, tl.int1)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_annotated_scalars_run(n, device, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x = np.random.default_rng(n).standard_normal(n + 7).astype(np.float32)
    out = np.full_like(x, 7.0)
    scaled_rows[(-(-n // 256),)](x, out, n, 2, True, BLOCK=256)
    np.testing.assert_array_equal(out[:n], -2 * x[:n])
    np.testing.assert_array_equal(out[n:], 7.0)  # lanes past n are masked off


def test_int_annotation_range_is_checked():
    x = np.zeros(4, np.float32)
    with pytest.raises(eggpu.EggpuError, match=r"scaled_rows: parameter 'n' \(i32\): value 1099511627776 is out of "
                                               r"range \[-2147483648, 2147483647\]"):
        scaled_rows.specialize(x, x, 2**40, 1.0, True, BLOCK=4).interpret(1, x, x, 2**40, 1.0, True)


def test_other_python_types_still_refused():
    @eggpu.jit
    def listed(x_ptr, n: list):
        tl.store(x_ptr, n)

    with pytest.raises(eggpu.KernelError, match=r"listed: parameter n has annotation list; a kernel launched as "
                                                r"listed\[grid\]\(\.\.\.\) takes unannotated parameters"):
        listed[(1,)](np.zeros(1, np.float32), 3)
