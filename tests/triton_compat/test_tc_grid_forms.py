"""Grids as Triton's launcher takes them: entries past the third are ignored by Triton (FlagGems'
cumsum launches ``kernel[(M, num_ctas, 1, 1)]``); eggpu accepts them when they are 1 and refuses
any other value with a LaunchError naming the grid."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def _tile_ids(o_ptr, n_cols):
    r = tl.program_id(0)
    c = tl.program_id(1)
    tl.store(o_ptr + r * n_cols + c, r * 1000 + c + tl.num_programs(2) * 100000)


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 7), (2, 1001)])
def test_trailing_ones_are_ignored(run_both, rows, cols):
    out = run_both(_tile_ids, (rows, cols, 1, 1), np.full((rows, cols), -1, np.int32), cols)
    want = np.arange(rows)[:, None] * 1000 + np.arange(cols)[None, :] + 100000
    for dev in ("interpret", "cpu"):
        np.testing.assert_array_equal(out[dev][0], want, err_msg=dev)


@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_other_trailing_values_are_refused(monkeypatch, device):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    out = np.zeros((2, 3), np.int32)
    with pytest.raises(eggpu.LaunchError, match=r"^_tile_ids: grid \(2, 3, 1, 2\) has 4 axes; a grid has at most 3 "
                       r"\(x, y, z\) and entries past the third may only be 1$"):
        _tile_ids[(2, 3, 1, 2)](out, 3)
    assert not out.any()
