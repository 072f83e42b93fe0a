"""(flash-linear-attention's pattern; the general cases are in test_tc_ifexp.py) ``a if c else b`` on a runtime scalar condition runs only the taken side when a side has an
effect, as Triton's ``scf.if``: a guarded ``tl.load(p - 1) if i > 0 else 0.`` (the pattern of
flash-linear-attention's parallel simple-GLA kernel) must not read before the buffer in the
program where ``i == 0``. Before, both sides were evaluated and selected, so the interpreter and
``run_cpu`` refused the launch with an out-of-bounds read (and the GPU read out of bounds).
Checked in the interpreter and in the compiled CPU lowering against numpy on ragged sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def previous_or_fill(x_ptr, out_ptr, fill):
    """out[i] = x[i - 1] (a scalar load guarded by the ternary), or ``fill`` for i == 0."""
    i = tl.program_id(0)
    prev = tl.load(x_ptr + i - 1) if i > 0 else fill
    tl.store(out_ptr + i, prev)


@eggpu.jit
def shifted_rows(x_ptr, out_ptr, n_rows, D: tl.constexpr):
    """Row r of out = row r + 1 of x (a block load rounded through f16), or 0 for the last row,
    where the load would read past the end. Both sides f32: with an effect on a side, the sides
    must have one type, as Triton's scf.if requires."""
    r = tl.program_id(0)
    cols = tl.arange(0, D)
    v = tl.load(x_ptr + (r + 1) * D + cols).to(tl.float16).to(tl.float32) if r + 1 < n_rows else tl.zeros([D], tl.float32)
    tl.store(out_ptr + r * D + cols, v)


@eggpu.jit
def pure_select(x_ptr, out_ptr, k):
    """A ternary without effects on a runtime scalar: both sides are plain arithmetic."""
    i = tl.program_id(0)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, x * 2.0 if i < k else x - 1.0)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_guarded_scalar_load_runs_only_when_taken(run_both, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    expected = np.concatenate([[-7.5], x[:-1]]).astype(np.float32)
    for device, (_, out) in run_both(previous_or_fill, (n,), x, np.zeros(n, np.float32), -7.5).items():
        np.testing.assert_array_equal(out, expected, err_msg=device)


@pytest.mark.parametrize("rows,D", [(1, 4), (7, 16), (33, 8)])
def test_guarded_block_load(run_both, rows, D):
    x = np.random.default_rng(rows).standard_normal((rows, D)).astype(np.float32)
    expected = np.zeros((rows, D), np.float32)
    expected[:-1] = x[1:].astype(np.float16).astype(np.float32)
    for device, (_, out) in run_both(shifted_rows, (rows,), x, np.zeros((rows, D), np.float32), rows, D=D).items():
        np.testing.assert_array_equal(out, expected, err_msg=device)


@pytest.mark.parametrize("n,k", [(1, 0), (1000, 300), (1001, 1001)])
def test_pure_ternary_selects(run_both, n, k):
    x = np.random.default_rng(k).standard_normal(n).astype(np.float32)
    expected = np.where(np.arange(n) < k, x * 2.0, x - 1.0).astype(np.float32)
    for device, (_, out) in run_both(pure_select, (n,), x, np.zeros(n, np.float32), k).items():
        np.testing.assert_array_equal(out, expected, err_msg=device)


def test_guarded_load_is_an_if_and_pure_ternary_a_where():
    guarded = previous_or_fill.specialize(np.zeros(4, np.float32), np.zeros(4, np.float32), 0.0).ir()
    ops = [op.op for op in guarded.body.ops]
    assert "if" in ops and "load" not in ops  # the load lives in the if's then-region
    pure = pure_select.specialize(np.zeros(4, np.float32), np.zeros(4, np.float32), 3).ir()
    assert "if" not in [op.op for op in pure.body.ops]


def test_ternary_with_a_tuple_side_is_a_located_error():
    @eggpu.jit
    def bad(x_ptr, out_ptr):
        i = tl.program_id(0)
        v = tl.load(x_ptr + i) if i > 0 else (1.0, 2.0)
        tl.store(out_ptr + i, v)

    with pytest.raises(eggpu.CompileError, match="only a block or a number can be chosen at run time"):
        bad.specialize(np.zeros(4, np.float32), np.zeros(4, np.float32)).ir()
