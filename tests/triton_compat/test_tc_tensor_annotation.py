"""``tl.tensor`` as Triton code uses it: an annotation only (``def helper(axis: int) -> tl.tensor``,
``x: tl.tensor`` on a kernel's or helper's parameter, ``acc: tl.tensor = ...``), as FlagGems'
``triton_lang_extension.program_id`` does. Importing such a module and running its kernels works; a
call ``tl.tensor(...)`` is a located error."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def _pid64(axis: int) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)


@eggpu.jit
def _scaled(x: tl.tensor, s) -> tl.tensor:
    y: tl.tensor = x * s
    return y


@eggpu.jit
def _scale_rows(x_ptr: tl.tensor, o_ptr, n_cols: tl.tensor, s, BLOCK: tl.constexpr):
    row = _pid64(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
    tl.store(o_ptr + row * n_cols + cols, _scaled(x, s), mask=cols < n_cols)


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 1000), (2, 1001)])
def test_tensor_annotations_change_nothing(run_both, rows, cols):
    x = np.random.default_rng(cols).standard_normal((rows, cols)).astype(np.float32)
    out = run_both(_scale_rows, (rows,), x, np.zeros_like(x), cols, 2.5, BLOCK=eggpu.next_power_of_2(cols))
    for dev in ("interpret", "cpu"):
        np.testing.assert_array_equal(out[dev][1], x * np.float32(2.5), err_msg=dev)


def test_tensor_is_exported_and_not_constructible():
    from eggpu.language import tensor

    assert tensor is tl.tensor and "tensor" in tl.__all__
    with pytest.raises(TypeError, match=r"^tl\.tensor is a type for annotations"):
        tl.tensor(1)


@eggpu.jit
def _misuse(x_ptr, WHICH: tl.constexpr):
    if WHICH == 0:
        tl.store(x_ptr, tl.tensor(1.0))


def test_calling_tensor_in_a_kernel_is_a_located_error(located_which):
    located_which(_misuse, 0, "tl.tensor(1.0)", "tl.tensor(...) cannot be called: it is a type for annotations",
                  np.zeros(1, np.float32))
