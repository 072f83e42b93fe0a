"""A row softmax with a loop over column tiles, its backward, and dispatch by dtype.

    python examples/softmax.py

The kernels are the library's (``eggpu/kernels/softmax.py``): one program per row, the row is
walked in tiles of ``BLOCK_SIZE`` columns with an online max, so rows of any length work. The
forward is declared with ``@eggpu.kernel(backward="softmax_backward")``, which also generates a
Dispatch class: ``dispatch(dtype, *constants)`` picks the specialization and pairs it with the
backward kernel built with the same constants.
"""

from __future__ import annotations

import numpy as np

from eggpu.kernels import reference as ref
from eggpu.kernels import softmax_forward


def main() -> None:
    rows, cols, block = 4, 781, 256  # 781 columns: three full tiles and a masked one
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    dy = rng.standard_normal((rows, cols)).astype(np.float32)

    inst = softmax_forward.Dispatch.dispatch("f32", block)
    print(inst.name, "->", inst.backward.name)

    y = np.empty_like(x)
    inst.kernel.interpret((rows,), x, y, cols, cols)  # grid: one program per row; row_stride = cols
    dx = np.empty_like(x)
    inst.backward.kernel.interpret((rows,), y, dy, dx, cols, cols)

    np.testing.assert_allclose(y, ref.softmax(x), rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(dx, ref.softmax_backward(ref.softmax(x), dy), rtol=1e-4, atol=1e-6)
    print(f"softmax of {rows}x{cols} with BLOCK_SIZE={block}: rows sum to {y.sum(axis=1).round(6)}")
    print("forward and backward match numpy: ok")


if __name__ == "__main__":
    main()
