"""The registry entries: how to build a test case for each bundled kernel and what it must produce.

See :mod:`eggpu.kernels.registry` for the data model. Conventions of the cases built here:

* Inputs are standard-normal values rounded to the dtype (integers for integer dtypes); the
  reference is computed in float64 from those rounded inputs, so input rounding never counts
  against a kernel.
* Row kernels get a ``[rows, n_cols + 3]`` buffer: rows are padded (``row_stride = n_cols + 3``)
  and the padding holds NaN in inputs and outputs. A kernel that reads past a row picks up NaN;
  one that writes past it overwrites the NaN the reference expects there.
* Outputs start as NaN (float) or -1 (integer), so an element a kernel fails to write is caught;
  accumulated outputs (``dweight``/``dbias``) start at zero.
* Block sizes: 1024 for 1-D kernels; for rows ``min(256, next_pow2(n_cols))`` but at least 16,
  so 781 columns are walked in four tiles of 256 and 10 columns in one masked tile of 16.
"""

from __future__ import annotations

from eggpu.ir.dtypes import DType, bf16, f16, f32, f64, i8, i32
from eggpu.ir.errors import KernelError

from . import reference as ref
from .elementwise import gelu_backward, gelu_forward, relu_backward, relu_forward, vector_add
from .lazy_numpy import np
from .losses import cross_entropy_forward
from .matmul import matmul
from .norms import layer_norm_backward, layer_norm_forward, rms_norm_forward
from .optim import adam_step
from .reductions import row_argmax, row_max, row_sum
from .registry import Case, LibraryKernel, Tol
from .softmax import log_softmax_forward, softmax_backward, softmax_forward

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

BLOCK_1D = 1024
ROW_PAD = 3
LAYER_NORM_EPS = 1e-5

FLOAT_DTYPES = (f16, bf16, f32, f64)
MATMUL_DTYPES = (f16, bf16, f32)
RELU_DTYPES = (i8, i32, f16, bf16, f32, f64)

SIZES_1D = (1, 1000, 1001, 4097)
EXTRA_SIZES_1D = (1024, 65537)
SIZES_ROWS = ((3, 10), (5, 781))
EXTRA_SIZES_ROWS = ((1, 1), (2, 256), (4, 257), (7, 4097), (33, 65))
SIZES_MATMUL = ((100, 70, 50), (32, 32, 32))
EXTRA_SIZES_MATMUL = ((1, 1, 1), (129, 65, 97), (17, 300, 3))


# ---------------------------------------------------------------- tolerances
# Per dtype, for what the kernel computes. The interpreter rounds transcendental results once
# from f64; compiled code (libdevice, other summation orders) needs the margin stated here.

def _tols(f16_: tuple[float, float], bf16_: tuple[float, float], f32_: tuple[float, float],
          f64_: tuple[float, float]) -> dict[DType, Tol]:
    return {f16: Tol(*f16_), bf16: Tol(*bf16_), f32: Tol(*f32_), f64: Tol(*f64_)}


# Exact or correctly rounded results (add, max, relu): half an ulp of the dtype plus a margin.
TOL_ROUNDED = _tols((1e-3, 1e-5), (8e-3, 1e-4), (1e-6, 1e-7), (1e-14, 1e-15))
# Elementwise math computed in f32/f64 and rounded once (GELU): libdevice ulps on top of rounding.
TOL_MATH = _tols((2e-3, 1e-4), (1.6e-2, 1e-3), (1e-5, 1e-6), (1e-12, 1e-13))
# Row statistics accumulated in f32/f64, results rounded to the dtype (values of order 1; the
# absolute part covers cancellation in sums of hundreds of terms, in any summation order).
TOL_ROW = _tols((2e-3, 1e-3), (1.6e-2, 8e-3), (2e-5, 2e-6), (1e-12, 1e-12))
# Outputs stored as f32 whatever the dtype (loss, mean, rstd): the dtype only rounds the inputs.
TOL_F32_STAT = _tols((2e-5, 2e-5), (2e-5, 2e-5), (2e-5, 2e-5), (2e-5, 2e-5))
# f32 outputs accumulated across programs by atomic_add (dweight, dbias): order is unspecified.
TOL_F32_ACCUMULATED = _tols((5e-5, 5e-5), (5e-5, 5e-5), (5e-5, 5e-5), (5e-5, 5e-5))
TOL_RELU = {i8: Tol(0, 0), i32: Tol(0, 0), **TOL_ROUNDED}
TOL_MATMUL = {f16: Tol(2e-3, 1e-3), bf16: Tol(1.6e-2, 8e-3), f32: Tol(1e-5, 1e-5)}
TOL_ADAM = {f32: Tol(1e-5, 1e-6)}


# ---------------------------------------------------------------- helpers


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def row_block(n_cols: int) -> int:
    """The BLOCK_SIZE used for rows of ``n_cols`` columns: a power of two in [16, 256]."""
    return max(16, min(256, next_pow2(n_cols)))


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def random_values(rng: np.random.Generator, shape: Any, dtype: DType) -> np.ndarray:
    """Standard-normal values rounded to ``dtype``; integers in a range that cannot overflow."""
    if dtype.is_int:
        lo, hi = max(int(dtype.min), -1000), min(int(dtype.max), 1000)
        return rng.integers(lo, hi + 1, size=shape).astype(dtype.np)
    return rng.standard_normal(shape).astype(dtype.np)


def sentinel(shape: Any, dtype: DType) -> np.ndarray:
    """An output buffer whose untouched elements are recognisable: NaN, or -1 for integers."""
    return np.full(shape, -1 if dtype.is_int else np.nan, dtype=dtype.np)


def padded_rows(values: np.ndarray) -> np.ndarray:
    """``values`` [rows, cols] placed in a [rows, cols + ROW_PAD] buffer whose padding is NaN."""
    rows, cols = values.shape
    buf = np.full((rows, cols + ROW_PAD), np.nan, dtype=values.dtype)
    buf[:, :cols] = values
    return buf


def rows_of(buf: np.ndarray, n_cols: int) -> np.ndarray:
    """The logical [rows, n_cols] view of a padded buffer."""
    return buf[:, :n_cols]


def expect_rows(initial: np.ndarray, n_cols: int, values: np.ndarray) -> np.ndarray:
    """The expected float64 contents of a padded output: ``values`` in the rows, padding untouched."""
    out = initial.astype(np.float64)
    out[:, :n_cols] = values
    return out


def _case(kernel: str, dtype: DType, size: Any, named_args: list[tuple[str, Any]], grid: tuple[int, ...],
          consts: tuple[Any, ...], outputs: tuple[str, ...], **meta: Any) -> Case:
    names = tuple(n for n, _ in named_args)
    return Case(kernel, dtype, size, names, tuple(v for _, v in named_args), grid, consts, outputs, dict(meta))


def _i32(v: int) -> np.int32:
    return np.int32(v)


# ---------------------------------------------------------------- 1-D kernels


def _unary_case(name: str, in_name: str, out_name: str):
    def make(n: int, dtype: DType, rng: np.random.Generator) -> Case:
        x = random_values(rng, n, dtype)
        return _case(name, dtype, n, [(in_name, x), (out_name, sentinel(n, dtype)), ("n", _i32(n))],
                     (cdiv(n, BLOCK_1D),), (BLOCK_1D,), (out_name,))

    return make


def _make_vector_add(n: int, dtype: DType, rng: np.random.Generator) -> Case:
    x, y = random_values(rng, n, dtype), random_values(rng, n, dtype)
    return _case("vector_add", dtype, n, [("x_ptr", x), ("y_ptr", y), ("out_ptr", sentinel(n, dtype)), ("n", _i32(n))],
                 (cdiv(n, BLOCK_1D),), (BLOCK_1D,), ("out_ptr",))


def _make_gelu_backward(n: int, dtype: DType, rng: np.random.Generator) -> Case:
    x, dy = random_values(rng, n, dtype), random_values(rng, n, dtype)
    return _case("gelu_backward", dtype, n,
                 [("x_ptr", x), ("dy_ptr", dy), ("dx_ptr", sentinel(n, dtype)), ("n", _i32(n))],
                 (cdiv(n, BLOCK_1D),), (BLOCK_1D,), ("dx_ptr",))


def _make_relu_backward(n: int, dtype: DType, rng: np.random.Generator) -> Case:
    x = random_values(rng, n, dtype)
    y = np.maximum(x, np.zeros_like(x))  # the forward's output: about half the lanes are 0
    dy = random_values(rng, n, dtype)
    return _case("relu_backward", dtype, n,
                 [("y_ptr", y), ("dy_ptr", dy), ("dx_ptr", sentinel(n, dtype)), ("n", _i32(n))],
                 (cdiv(n, BLOCK_1D),), (BLOCK_1D,), ("dx_ptr",))


ADAM_HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2, step=3)


def _make_adam(n: int, dtype: DType, rng: np.random.Generator) -> Case:
    h = ADAM_HYPER
    p = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    m = (0.1 * rng.standard_normal(n)).astype(np.float32)
    v = (0.01 * rng.random(n)).astype(np.float32)
    scalars = [("lr", h["lr"]), ("beta1", h["beta1"]), ("beta2", h["beta2"]), ("eps", h["eps"]),
               ("weight_decay", h["weight_decay"]), ("bias_correction1", 1.0 - h["beta1"] ** h["step"]),
               ("bias_correction2", 1.0 - h["beta2"] ** h["step"])]
    return _case("adam_step", f32, n,
                 [("param_ptr", p), ("grad_ptr", g), ("m_ptr", m), ("v_ptr", v), ("n", _i32(n)),
                  *[(k, np.float32(val)) for k, val in scalars]],
                 (cdiv(n, BLOCK_1D),), (BLOCK_1D,), ("param_ptr", "m_ptr", "v_ptr"))


def _ref_adam(case: Case) -> dict[str, np.ndarray]:
    kw = {k: float(case.arg(k)) for k in ("lr", "beta1", "beta2", "eps", "weight_decay", "bias_correction1",
                                          "bias_correction2")}
    p, m, v = ref.adam_step(case.arg("param_ptr"), case.arg("grad_ptr"), case.arg("m_ptr"), case.arg("v_ptr"), **kw)
    return {"param_ptr": p, "m_ptr": m, "v_ptr": v}


# ---------------------------------------------------------------- row kernels


def _row_inputs(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> np.ndarray:
    return padded_rows(random_values(rng, shape, dtype))


def _row_elementwise_case(name: str):
    """A row kernel ``(x_ptr, y_ptr, n_cols, row_stride, BLOCK_SIZE)`` writing a [rows, cols] output."""

    def make(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> Case:
        rows, cols = shape
        x = _row_inputs(shape, dtype, rng)
        return _case(name, dtype, shape,
                     [("x_ptr", x), ("y_ptr", sentinel(x.shape, dtype)), ("n_cols", _i32(cols)),
                      ("row_stride", _i32(x.shape[1]))],
                     (rows,), (row_block(cols),), ("y_ptr",))

    return make


def _row_reduce_case(name: str, out_dtype: DType | None = None, quantize: bool = False):
    """A row reduction ``(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE)`` writing ``out[rows]``.

    ``quantize`` rounds the inputs to a few integer levels so that ties (within and across
    tiles) are common: argmax must then return the first index.
    """

    def make(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> Case:
        rows, cols = shape
        vals = random_values(rng, shape, dtype)
        if quantize:
            vals = np.round(vals.astype(np.float64) * 1.5).astype(dtype.np)
        x = padded_rows(vals)
        out = sentinel(rows, out_dtype or dtype)
        return _case(name, dtype, shape,
                     [("x_ptr", x), ("out_ptr", out), ("n_cols", _i32(cols)), ("row_stride", _i32(x.shape[1]))],
                     (rows,), (row_block(cols),), ("out_ptr",))

    return make


def _ref_rows(fn):
    def reference(case: Case) -> dict[str, np.ndarray]:
        cols = int(case.arg("n_cols"))
        y = case.arg("y_ptr")
        return {"y_ptr": expect_rows(y, cols, fn(rows_of(case.arg("x_ptr"), cols)))}

    return reference


def _ref_reduce(fn):
    def reference(case: Case) -> dict[str, np.ndarray]:
        cols = int(case.arg("n_cols"))
        return {"out_ptr": fn(rows_of(case.arg("x_ptr"), cols))}

    return reference


def _make_softmax_backward(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> Case:
    rows, cols = shape
    y = ref.softmax(random_values(rng, shape, dtype)).astype(dtype.np)
    dy = random_values(rng, shape, dtype)
    yb, dyb = padded_rows(y), padded_rows(dy)
    return _case("softmax_backward", dtype, shape,
                 [("y_ptr", yb), ("dy_ptr", dyb), ("dx_ptr", sentinel(yb.shape, dtype)), ("n_cols", _i32(cols)),
                  ("row_stride", _i32(yb.shape[1]))],
                 (rows,), (row_block(cols),), ("dx_ptr",))


def _ref_softmax_backward(case: Case) -> dict[str, np.ndarray]:
    cols = int(case.arg("n_cols"))
    dx = ref.softmax_backward(rows_of(case.arg("y_ptr"), cols), rows_of(case.arg("dy_ptr"), cols))
    return {"dx_ptr": expect_rows(case.arg("dx_ptr"), cols, dx)}


def _norm_params(cols: int, dtype: DType, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    w = (1.0 + 0.5 * rng.standard_normal(cols)).astype(dtype.np)
    b = (0.5 * rng.standard_normal(cols)).astype(dtype.np)
    return w, b


def _make_layer_norm(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> Case:
    rows, cols = shape
    x = _row_inputs(shape, dtype, rng)
    w, b = _norm_params(cols, dtype, rng)
    return _case("layer_norm_forward", dtype, shape,
                 [("x_ptr", x), ("y_ptr", sentinel(x.shape, dtype)), ("weight_ptr", w), ("bias_ptr", b),
                  ("mean_ptr", sentinel(rows, f32)), ("rstd_ptr", sentinel(rows, f32)), ("n_cols", _i32(cols)),
                  ("row_stride", _i32(x.shape[1])), ("eps", np.float32(LAYER_NORM_EPS))],
                 (rows,), (row_block(cols),), ("y_ptr", "mean_ptr", "rstd_ptr"))


def _ref_layer_norm(case: Case) -> dict[str, np.ndarray]:
    cols = int(case.arg("n_cols"))
    y, mean, rstd = ref.layer_norm(rows_of(case.arg("x_ptr"), cols), case.arg("weight_ptr"), case.arg("bias_ptr"),
                                   float(case.arg("eps")))
    return {"y_ptr": expect_rows(case.arg("y_ptr"), cols, y), "mean_ptr": mean, "rstd_ptr": rstd}


def _make_layer_norm_backward(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> Case:
    rows, cols = shape
    x = _row_inputs(shape, dtype, rng)
    dy = _row_inputs(shape, dtype, rng)
    w, b = _norm_params(cols, dtype, rng)
    _, mean, rstd = ref.layer_norm(rows_of(x, cols), w, b, LAYER_NORM_EPS)
    return _case("layer_norm_backward", dtype, shape,
                 [("x_ptr", x), ("dy_ptr", dy), ("weight_ptr", w), ("mean_ptr", mean.astype(np.float32)),
                  ("rstd_ptr", rstd.astype(np.float32)), ("dx_ptr", sentinel(x.shape, dtype)),
                  ("dweight_ptr", np.zeros(cols, np.float32)), ("dbias_ptr", np.zeros(cols, np.float32)),
                  ("n_cols", _i32(cols)), ("row_stride", _i32(x.shape[1]))],
                 (rows,), (row_block(cols),), ("dx_ptr", "dweight_ptr", "dbias_ptr"))


def _ref_layer_norm_backward(case: Case) -> dict[str, np.ndarray]:
    cols = int(case.arg("n_cols"))
    dx, dw, db = ref.layer_norm_backward(rows_of(case.arg("x_ptr"), cols), rows_of(case.arg("dy_ptr"), cols),
                                         case.arg("weight_ptr"), case.arg("mean_ptr"), case.arg("rstd_ptr"))
    return {"dx_ptr": expect_rows(case.arg("dx_ptr"), cols, dx), "dweight_ptr": dw, "dbias_ptr": db}


def _make_rms_norm(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> Case:
    rows, cols = shape
    x = _row_inputs(shape, dtype, rng)
    w, _ = _norm_params(cols, dtype, rng)
    return _case("rms_norm_forward", dtype, shape,
                 [("x_ptr", x), ("y_ptr", sentinel(x.shape, dtype)), ("weight_ptr", w), ("n_cols", _i32(cols)),
                  ("row_stride", _i32(x.shape[1])), ("eps", np.float32(LAYER_NORM_EPS))],
                 (rows,), (row_block(cols),), ("y_ptr",))


def _ref_rms_norm(case: Case) -> dict[str, np.ndarray]:
    cols = int(case.arg("n_cols"))
    y = ref.rms_norm(rows_of(case.arg("x_ptr"), cols), case.arg("weight_ptr"), float(case.arg("eps")))
    return {"y_ptr": expect_rows(case.arg("y_ptr"), cols, y)}


IGNORE_INDEX = -100


def _make_cross_entropy(shape: tuple[int, int], dtype: DType, rng: np.random.Generator) -> Case:
    rows, cols = shape
    x = _row_inputs(shape, dtype, rng)
    targets = rng.integers(0, cols, size=rows).astype(np.int32)
    if rows > 1:
        targets[-1] = cols - 1  # the last column: the last, partial tile
    if rows > 2:
        targets[1] = IGNORE_INDEX
    return _case("cross_entropy_forward", dtype, shape,
                 [("logits_ptr", x), ("targets_ptr", targets), ("loss_ptr", sentinel(rows, f32)),
                  ("n_cols", _i32(cols)), ("row_stride", _i32(x.shape[1]))],
                 (rows,), (row_block(cols),), ("loss_ptr",))


def _ref_cross_entropy(case: Case) -> dict[str, np.ndarray]:
    cols = int(case.arg("n_cols"))
    t = case.arg("targets_ptr").astype(np.int64)
    valid = (t >= 0) & (t < cols)
    loss = ref.cross_entropy(rows_of(case.arg("logits_ptr"), cols), np.where(valid, t, 0))
    return {"loss_ptr": np.where(valid, loss, 0.0)}


# ---------------------------------------------------------------- matmul


def _make_matmul(shape: tuple[int, int, int], dtype: DType, rng: np.random.Generator) -> Case:
    """A row-major, B stored column-major (as B^T), C row-major with NaN-padded rows."""
    M, N, K = shape
    a = random_values(rng, (M, K), dtype)
    bt = random_values(rng, (N, K), dtype)  # B = bt.T, so stride_bk = 1 and stride_bn = K
    c = sentinel((M, N + ROW_PAD), dtype)
    bm, bn, bk = 32, 32, 16
    return _case("matmul", dtype, shape,
                 [("a_ptr", a), ("b_ptr", bt), ("c_ptr", c), ("M", _i32(M)), ("N", _i32(N)), ("K", _i32(K)),
                  ("stride_am", _i32(K)), ("stride_ak", _i32(1)), ("stride_bk", _i32(1)), ("stride_bn", _i32(K)),
                  ("stride_cm", _i32(N + ROW_PAD)), ("stride_cn", _i32(1))],
                 (cdiv(M, bm), cdiv(N, bn)), (bm, bn, bk), ("c_ptr",))


def _ref_matmul(case: Case) -> dict[str, np.ndarray]:
    n = int(case.arg("N"))
    c = ref.matmul(case.arg("a_ptr"), case.arg("b_ptr").T)
    return {"c_ptr": expect_rows(case.arg("c_ptr"), n, c)}


# ---------------------------------------------------------------- the library


def _ref_1d(fn, out: str, *ins: str):
    def reference(case: Case) -> dict[str, np.ndarray]:
        return {out: fn(*(case.arg(i) for i in ins))}

    return reference


LIBRARY: list[LibraryKernel] = [
    LibraryKernel("vector_add", vector_add, FLOAT_DTYPES, _make_vector_add,
                  _ref_1d(ref.vector_add, "out_ptr", "x_ptr", "y_ptr"), TOL_ROUNDED, SIZES_1D, EXTRA_SIZES_1D,
                  description="out = x + y"),
    LibraryKernel("gelu_forward", gelu_forward, FLOAT_DTYPES, _unary_case("gelu_forward", "x_ptr", "y_ptr"),
                  _ref_1d(ref.gelu, "y_ptr", "x_ptr"), TOL_MATH, SIZES_1D, EXTRA_SIZES_1D,
                  backward="gelu_backward", description="exact (erf) GELU"),
    LibraryKernel("gelu_backward", gelu_backward, FLOAT_DTYPES, _make_gelu_backward,
                  _ref_1d(ref.gelu_backward, "dx_ptr", "x_ptr", "dy_ptr"), TOL_MATH, SIZES_1D, EXTRA_SIZES_1D,
                  forward="gelu_forward", description="GELU gradient"),
    LibraryKernel("relu_forward", relu_forward, RELU_DTYPES, _unary_case("relu_forward", "x_ptr", "y_ptr"),
                  _ref_1d(ref.relu, "y_ptr", "x_ptr"), TOL_RELU, SIZES_1D, EXTRA_SIZES_1D,
                  backward="relu_backward", description="max(x, 0) on ints and floats"),
    LibraryKernel("relu_backward", relu_backward, RELU_DTYPES, _make_relu_backward,
                  _ref_1d(ref.relu_backward, "dx_ptr", "y_ptr", "dy_ptr"), TOL_RELU, SIZES_1D, EXTRA_SIZES_1D,
                  forward="relu_forward", description="where(y > 0, dy, 0)"),
    LibraryKernel("softmax_forward", softmax_forward, FLOAT_DTYPES, _row_elementwise_case("softmax_forward"),
                  _ref_rows(ref.softmax), TOL_ROW, SIZES_ROWS, EXTRA_SIZES_ROWS,
                  backward="softmax_backward", description="row softmax, any row length"),
    LibraryKernel("softmax_backward", softmax_backward, FLOAT_DTYPES, _make_softmax_backward,
                  _ref_softmax_backward, TOL_ROW, SIZES_ROWS, EXTRA_SIZES_ROWS,
                  forward="softmax_forward", description="y * (dy - sum(y * dy))"),
    LibraryKernel("log_softmax_forward", log_softmax_forward, FLOAT_DTYPES,
                  _row_elementwise_case("log_softmax_forward"), _ref_rows(ref.log_softmax), TOL_ROW, SIZES_ROWS,
                  EXTRA_SIZES_ROWS, description="row log-softmax"),
    LibraryKernel("layer_norm_forward", layer_norm_forward, FLOAT_DTYPES, _make_layer_norm, _ref_layer_norm,
                  TOL_ROW, SIZES_ROWS, EXTRA_SIZES_ROWS, backward="layer_norm_backward",
                  output_tolerances={"mean_ptr": TOL_F32_STAT, "rstd_ptr": TOL_F32_STAT},
                  description="layer norm; saves mean and rstd"),
    LibraryKernel("layer_norm_backward", layer_norm_backward, FLOAT_DTYPES, _make_layer_norm_backward,
                  _ref_layer_norm_backward, TOL_ROW, SIZES_ROWS, EXTRA_SIZES_ROWS, forward="layer_norm_forward",
                  output_tolerances={"dweight_ptr": TOL_F32_ACCUMULATED, "dbias_ptr": TOL_F32_ACCUMULATED},
                  description="layer norm dx; dweight/dbias by atomic_add"),
    LibraryKernel("rms_norm_forward", rms_norm_forward, FLOAT_DTYPES, _make_rms_norm, _ref_rms_norm, TOL_ROW,
                  SIZES_ROWS, EXTRA_SIZES_ROWS, description="RMS norm"),
    LibraryKernel("row_sum", row_sum, FLOAT_DTYPES, _row_reduce_case("row_sum"), _ref_reduce(ref.row_sum),
                  TOL_ROW, SIZES_ROWS, EXTRA_SIZES_ROWS, description="sum of each row (f32 accumulation)"),
    LibraryKernel("row_max", row_max, FLOAT_DTYPES, _row_reduce_case("row_max"), _ref_reduce(ref.row_max),
                  TOL_ROUNDED, SIZES_ROWS, EXTRA_SIZES_ROWS, description="max of each row"),
    LibraryKernel("row_argmax", row_argmax, FLOAT_DTYPES, _row_reduce_case("row_argmax", i32, quantize=True),
                  _ref_reduce(ref.row_argmax), TOL_ROUNDED, SIZES_ROWS, EXTRA_SIZES_ROWS,
                  description="first index of each row's max"),
    LibraryKernel("matmul", matmul, MATMUL_DTYPES, _make_matmul, _ref_matmul, TOL_MATMUL, SIZES_MATMUL,
                  EXTRA_SIZES_MATMUL, description="tiled C = A @ B, f32 accumulation"),
    LibraryKernel("cross_entropy_forward", cross_entropy_forward, FLOAT_DTYPES, _make_cross_entropy,
                  _ref_cross_entropy, TOL_F32_STAT, SIZES_ROWS, EXTRA_SIZES_ROWS,
                  description="per-row logsumexp(x) - x[target]"),
    LibraryKernel("adam_step", adam_step, (f32,), _make_adam, _ref_adam, TOL_ADAM, SIZES_1D, EXTRA_SIZES_1D,
                  generic=False, description="one Adam step (f32)"),
]

BY_NAME: dict[str, LibraryKernel] = {lk.name: lk for lk in LIBRARY}


def get(name: str) -> LibraryKernel:
    """The library entry named ``name``; KernelError naming the known kernels otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KernelError(f"no library kernel named {name!r} (known: {', '.join(BY_NAME)})") from None

