"""Write a kernel, look at its IR and run it with the numpy interpreter.

    python examples/vector_add.py

A kernel is a plain Python function in the Triton-style language. ``@eggpu.kernel`` turns it
into a Kernel class (``VectorAddExample``, also ``vector_add_example.Kernel``): subscript it
with the dtype, construct it with the compile-time constants, then ``.ir()`` gives the tensor IR
and ``.interpret(grid, *args)`` runs every program of the grid on numpy arrays, in place.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

import eggpu
import eggpu.language as tl

D = TypeVar("D", bound=tl.Float)  # the kernel is generic over the float dtypes


@eggpu.kernel
def vector_add_example(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], out_ptr: tl.Pointer[D], n: tl.i32,
                       BLOCK_SIZE: tl.constexpr):
    # Program i handles elements [i*BLOCK_SIZE, (i+1)*BLOCK_SIZE); lanes past n are masked off,
    # so n need not be a multiple of BLOCK_SIZE.
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y, mask=mask)


def main() -> None:
    kernel = vector_add_example.Kernel[tl.f16](256)
    print(kernel.id)  # vector_add_example__f16__256
    print("launch arguments:", kernel.arg_types)
    print(kernel.ir())  # the tensor IR, before optimization

    n = 1001  # deliberately not a multiple of the block
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    out = np.zeros(n, np.float16)
    grid = (-(-n // kernel.block_size),)  # cdiv(n, BLOCK_SIZE) programs
    kernel.interpret(grid, x, y, out, n)

    np.testing.assert_array_equal(out, x + y)  # f16 addition is correctly rounded: exact match
    print(f"{n} elements in {grid[0]} programs: ok")


if __name__ == "__main__":
    main()
