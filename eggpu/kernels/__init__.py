"""eggpu's library of real kernels, written in the kernel language, with their test fixtures.

Kernel families (each kernel is a module-level ``@eggpu.kernel`` function; its Kernel class is
bound next to it, e.g. ``eggpu.kernels.softmax.SoftmaxForward``):

- :mod:`.elementwise`: ``vector_add``, ``gelu_forward``/``gelu_backward`` (erf form),
  ``relu_forward``/``relu_backward`` (any numeric dtype)
- :mod:`.softmax`: ``softmax_forward``/``softmax_backward``, ``log_softmax_forward``
- :mod:`.norms`: ``layer_norm_forward``/``layer_norm_backward``, ``rms_norm_forward``
- :mod:`.reductions`: ``row_sum``, ``row_max``, ``row_argmax``
- :mod:`.matmul`: ``matmul`` (tiled, ``tl.dot``, f32 accumulation)
- :mod:`.losses`: ``cross_entropy_forward``
- :mod:`.optim`: ``adam_step`` (f32, no dtype parameter)
- :mod:`.common`: ``compute_dtype(D)``, the arithmetic dtype (f32, f64 for f64 data)

:data:`LIBRARY` lists one :class:`~eggpu.kernels.registry.LibraryKernel` per kernel: dtypes to
test, a case builder, the float64 numpy reference (:mod:`.reference`) and tolerances per dtype.
It is the shared fixture of the test suites and ``eggpu demo``.
"""

from .elementwise import gelu_backward, gelu_forward, relu_backward, relu_forward, vector_add
from .library import BY_NAME, LIBRARY, get
from .losses import cross_entropy_forward
from .matmul import matmul
from .norms import layer_norm_backward, layer_norm_forward, rms_norm_forward
from .optim import adam_step
from .reductions import row_argmax, row_max, row_sum
from .registry import Case, LibraryKernel, Tol, assert_close
from .softmax import log_softmax_forward, softmax_backward, softmax_forward

__all__ = [
    "BY_NAME", "LIBRARY", "Case", "LibraryKernel", "Tol", "adam_step", "assert_close", "cross_entropy_forward",
    "gelu_backward", "gelu_forward", "get", "layer_norm_backward", "layer_norm_forward", "log_softmax_forward",
    "matmul", "relu_backward", "relu_forward", "rms_norm_forward", "row_argmax", "row_max", "row_sum",
    "softmax_backward", "softmax_forward", "vector_add",
]
