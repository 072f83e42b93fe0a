"""``tie_break_left=False`` (argmax/argmin) and ``return_indices_tie_break_left=False`` (max/min):
Triton then returns the index of *some* tied extremum; eggpu returns the first, one of Triton's
answers. Checked on blocks with many ties, ragged sizes, interpret and run_cpu."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def tie_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-100)
    y = tl.load(x_ptr + offs, mask=offs < n, other=100)
    tl.store(out_ptr + 0, tl.argmax(x, 0, tie_break_left=False))
    tl.store(out_ptr + 1, y.argmin(0, tie_break_left=False))
    v, i = tl.max(x, 0, return_indices=True, return_indices_tie_break_left=False)
    tl.store(out_ptr + 2, i)
    tl.store(out_ptr + 3, v)
    w, j = tl.min(y, axis=0, return_indices=True, return_indices_tie_break_left=False)
    tl.store(out_ptr + 4, j)
    tl.store(out_ptr + 5, w)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_tie_break_right_gives_an_index_of_a_tied_extremum(run_both, n):
    x = np.random.default_rng(n).integers(-3, 4, n).astype(np.int32)  # many ties
    out = np.zeros(6, np.int32)
    for dev, (_, o) in run_both(tie_kernel, (1,), x, out, n, BLOCK=1024).items():
        assert x[o[0]] == x.max() and x[o[2]] == x.max() and o[3] == x.max(), dev
        assert x[o[1]] == x.min() and x[o[4]] == x.min() and o[5] == x.min(), dev
        # eggpu's choice among the tied ones: the first
        assert [o[0], o[2]] == [int(np.argmax(x))] * 2 and [o[1], o[4]] == [int(np.argmin(x))] * 2, dev
