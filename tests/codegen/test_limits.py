"""Limits of the compiled paths: block sizes the lowering accepts, and CUDA's grid limits.

Regression (issue 9, item 10): a constexpr block of 2**20 compiled for hours without an error
(the lowering unrolls each thread's elements: LLVM time grows faster than linearly with their
number), and a grid beyond CUDA's limits was accepted.
"""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.codegen import build_host, lower
from eggpu.codegen.lowering import MAX_BLOCK_NUMEL, MAX_ELEMENTS_PER_THREAD, check_block_sizes
from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.errors import CodegenError, LaunchError


def fill_kernel(block: int, name: str = "fill"):
    """``out[pid * block + i] = 1.0`` for ``i < n``."""
    b = Builder(name, [("out", pointer(f32)), ("n", scalar(i32))])
    pid = b.op("program_id", axis=0)
    offs = b.op("add", b.op("splat", b.op("mul", pid, b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    mask = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))
    ptrs = b.op("addptr", b.op("splat", b.param("out"), shape=(block,)), offs)
    b.effect("store", ptrs, b.op("splat", b.const(1.0, f32), shape=(block,)), mask)
    return b.finish()


def shift_kernel(block: int, name: str = "shift"):
    """``y[pid * block + i] = x[pid * block + i + 1]`` for ``i < n``: the load and the store use
    different offsets, so the kernel is not strip-mined and keeps the per-thread limit."""
    b = Builder(name, [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    pid = b.op("program_id", axis=0)
    offs = b.op("add", b.op("splat", b.op("mul", pid, b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    mask = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))
    src = b.op("addptr", b.op("splat", b.param("x"), shape=(block,)),
               b.op("add", offs, b.op("splat", b.const(1, i32), shape=(block,))))
    v = b.op("load", src, mask, b.op("splat", b.const(0.0, f32), shape=(block,)))
    b.effect("store", b.op("addptr", b.op("splat", b.param("y"), shape=(block,)), offs), v, mask)
    return b.finish()


def test_limits_are_documented_values():
    assert MAX_BLOCK_NUMEL == 2**20
    assert MAX_ELEMENTS_PER_THREAD == 1024


def test_block_larger_than_triton_limit_is_a_compile_error():
    with pytest.raises(CodegenError) as e:
        lower(fill_kernel(2**21, "huge"), "sm_90")
    assert str(e.value) == ("huge: a block of 2097152 elements (2097152) is larger than the largest supported block, "
                            "1048576 elements (2**20, Triton's limit); use a smaller block")
    with pytest.raises(CodegenError, match=r"^big: a block of 4194304 elements \(4194304\) is larger"):
        build_host(fill_kernel(2**22, "big"))


@pytest.mark.parametrize("block,warps,fix", [
    (2**18, 4, "compile with num_warps=8 or use a smaller block"),
    (2**18, 1, "compile with num_warps=8 or use a smaller block"),
    (2**20, 4, "compile with num_warps=32 or use a smaller block"),
])
def test_too_many_elements_per_thread_is_a_compile_error(block, warps, fix):
    with pytest.raises(CodegenError) as e:
        lower(shift_kernel(block), "sm_90", num_warps=warps)
    per = block // (32 * warps)
    assert str(e.value) == (
        f"shift: a block of {block} elements ({block}) puts {per} elements on each of the {32 * warps} threads "
        f"(num_warps={warps}); the lowering unrolls each thread's elements and supports at most 1024 per thread "
        f"(compile time grows faster than linearly; only a kernel that works lane by lane, its loads and stores "
        f"at one offset vector, is looped instead); {fix}")


def test_block_sizes_at_the_limits_pass_the_check():
    check_block_sizes(shift_kernel(2**17), 4)  # 1024 per thread
    check_block_sizes(shift_kernel(2**20), 32)  # 1024 per thread
    with pytest.raises(CodegenError, match="puts 2048 elements on each of the 512 threads"):
        check_block_sizes(shift_kernel(2**20), 16)
    check_block_sizes(shift_kernel(2**20), 16, per_thread=False)  # a strip-mined kernel: numel only


def test_a_lane_wise_block_of_2_20_compiles_by_strip_mining():
    """fill at 2**20 and num_warps=4 (8192 per thread) is lane-wise: one loop over chunks."""
    lm = lower(fill_kernel(2**20), "sm_90", num_warps=4)
    # plain LLVM stores, or predicated st.global inline asm (masked vector groups)
    stores = sum(1 for ln in lm.llvm_ir.splitlines() if ln.lstrip().startswith("store ") or "st.global" in ln)
    assert 0 < stores <= 64  # one chunk's 32 slots (2048 four-wide stores when unrolled)


@pytest.mark.parametrize("grid,axis,size,most", [(2**31, "x", 2**31, 2**31 - 1), ((1, 65536), "y", 65536, 65535),
                                                  ((2, 3, 100000), "z", 100000, 65535)])
def test_run_cpu_refuses_grids_beyond_cuda_limits(grid, axis, size, most):
    hk = build_host(fill_kernel(128))
    out = np.zeros(4, np.float32)
    with pytest.raises(LaunchError) as e:
        hk.run(grid, out, 4)
    dims = grid if isinstance(grid, tuple) else (grid,)
    if axis == "x":
        assert str(e.value) == f"fill: grid dimensions must be at most {most}, got {dims}"
    else:
        assert str(e.value) == (f"fill: grid {dims} exceeds CUDA's limits: axis {axis} has {size} programs, at most "
                                f"{most} are allowed (x at most 2147483647, y and z at most 65535)")
    assert not out.any()
    hk.run((1, 65535, 1), out, 4)  # the limit itself runs (65535 programs writing the same 4 elements)
    assert out.tolist() == [1.0] * 4
