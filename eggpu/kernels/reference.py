"""numpy references for the kernel library, computed in float64.

Each function takes numpy arrays (any float or int dtype; they are widened to float64 first) and
returns float64 arrays (indices as int64). They state the mathematics the kernels implement, so
the tests, ``eggpu demo``, the optimizer and the code generator all compare against one meaning.
Row-wise functions work on the last axis of a 2-D array ``[rows, cols]``.
"""

from __future__ import annotations

import math

from .lazy_numpy import np

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

SQRT1_2 = 0.7071067811865476  # 1/sqrt(2)
INV_SQRT_2PI = 0.3989422804014327  # 1/sqrt(2*pi)


def _f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


_erf: Any = None  # np.vectorize(math.erf), made on first use (numpy is imported lazily)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise (math.erf; empty arrays allowed)."""
    global _erf
    if _erf is None:
        _erf = np.vectorize(math.erf, otypes=[np.float64])
    x = _f64(x)
    return _erf(x) if x.size else x.copy()


# ---------------------------------------------------------------- elementwise


def vector_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x + y``."""
    return _f64(x) + _f64(y)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU: ``0.5 * x * (1 + erf(x / sqrt(2)))``."""
    x = _f64(x)
    return 0.5 * x * (1.0 + erf(x * SQRT1_2))


def gelu_backward(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """``dy * (Phi(x) + x * phi(x))`` with Phi the normal CDF and phi its density."""
    x, dy = _f64(x), _f64(dy)
    cdf = 0.5 * (1.0 + erf(x * SQRT1_2))
    pdf = INV_SQRT_2PI * np.exp(-0.5 * x * x)
    return dy * (cdf + x * pdf)


def relu(x: np.ndarray) -> np.ndarray:
    """``max(x, 0)``."""
    return np.maximum(_f64(x), 0.0)


def relu_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """``where(y > 0, dy, 0)``: the gradient is taken from the forward's output ``y``."""
    return np.where(_f64(y) > 0, _f64(dy), 0.0)


# ---------------------------------------------------------------- row-wise


def softmax(x: np.ndarray) -> np.ndarray:
    """Row softmax ``exp(x - max) / sum(exp(x - max))`` over the last axis."""
    x = _f64(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """``dx = y * (dy - sum(y * dy))`` per row, from the forward's output ``y``."""
    y, dy = _f64(y), _f64(dy)
    return y * (dy - (y * dy).sum(axis=-1, keepdims=True))


def logsumexp(x: np.ndarray) -> np.ndarray:
    """Row ``log(sum(exp(x)))``, computed stably (shape ``[rows]``)."""
    x = _f64(x)
    m = x.max(axis=-1)
    return m + np.log(np.exp(x - m[..., None]).sum(axis=-1))


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Row ``x - logsumexp(x)``."""
    return _f64(x) - logsumexp(x)[..., None]


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float):
    """Layer norm over the last axis: returns ``(y, mean, rstd)``.

    ``mean = sum(x)/N``, ``var = sum((x - mean)^2)/N`` (biased), ``rstd = 1/sqrt(var + eps)``,
    ``y = (x - mean) * rstd * weight + bias``.
    """
    x, w, b = _f64(x), _f64(weight), _f64(bias)
    mean = x.mean(axis=-1)
    var = ((x - mean[:, None]) ** 2).mean(axis=-1)
    rstd = 1.0 / np.sqrt(var + eps)
    y = (x - mean[:, None]) * rstd[:, None] * w + b
    return y, mean, rstd


def layer_norm_backward(x, dy, weight, mean, rstd):
    """Gradients of :func:`layer_norm` given the saved ``mean`` and ``rstd``: ``(dx, dw, db)``.

    ``xhat = (x - mean) * rstd``, ``g = dy * w``, ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``,
    ``dw = sum_rows(dy * xhat)``, ``db = sum_rows(dy)``.
    """
    x, dy, w, mean, rstd = map(_f64, (x, dy, weight, mean, rstd))
    xhat = (x - mean[:, None]) * rstd[:, None]
    g = dy * w
    c1 = g.mean(axis=-1, keepdims=True)
    c2 = (g * xhat).mean(axis=-1, keepdims=True)
    dx = rstd[:, None] * (g - c1 - xhat * c2)
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """``y = x / sqrt(mean(x^2) + eps) * weight`` over the last axis."""
    x, w = _f64(x), _f64(weight)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def row_sum(x: np.ndarray) -> np.ndarray:
    return _f64(x).sum(axis=-1)


def row_max(x: np.ndarray) -> np.ndarray:
    return _f64(x).max(axis=-1)


def row_argmax(x: np.ndarray) -> np.ndarray:
    """Index of the first maximum of each row (numpy's tie-breaking)."""
    return np.argmax(_f64(x), axis=-1).astype(np.int64)


def cross_entropy(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per-row loss ``logsumexp(x) - x[target]``."""
    x = _f64(logits)
    t = np.asarray(targets).astype(np.int64)
    return logsumexp(x) - x[np.arange(x.shape[0]), t]


# ---------------------------------------------------------------- matmul and optimizers


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _f64(a) @ _f64(b)


def adam_step(p, g, m, v, *, lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2):
    """One Adam step (L2 weight decay folded into the gradient); returns ``(p, m, v)``.

    ``g' = g + wd*p``; ``m = b1*m + (1-b1)*g'``; ``v = b2*v + (1-b2)*g'^2``;
    ``p = p - (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps)`` with ``bc_i = 1 - b_i^t``.
    """
    p, g, m, v = map(_f64, (p, g, m, v))
    g = g + weight_decay * p
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    denom = np.sqrt(v) / math.sqrt(bias_correction2) + eps
    return p - (lr / bias_correction1) * m / denom, m, v


# ---------------------------------------------------------------- finite differences


def central_difference(f, x: np.ndarray, dy: np.ndarray, *, h: float = 1e-6, independent: str = "all") -> np.ndarray:
    """Gradient of ``L(x) = sum(dy * f(x))`` with respect to ``x`` by central differences.

    ``independent`` says which entries of ``x`` may be perturbed together because their effects
    on ``f`` do not overlap: ``"all"`` (elementwise ``f``: one pair of evaluations in total),
    ``"rows"`` (``f`` acts on the rows of a 2-D ``x`` separately: one pair per column) or
    ``"none"`` (one pair per entry). Everything is computed in float64.
    """
    x = _f64(x).copy()
    dy = _f64(dy)

    def loss_terms(xx):
        return dy * f(xx)

    if independent == "all":
        return (loss_terms(x + h) - loss_terms(x - h)) / (2 * h)
    grad = np.zeros_like(x)
    if independent == "rows":
        for j in range(x.shape[1]):
            xp, xm = x.copy(), x.copy()
            xp[:, j] += h
            xm[:, j] -= h
            grad[:, j] = (loss_terms(xp) - loss_terms(xm)).reshape(x.shape[0], -1).sum(axis=1) / (2 * h)
        return grad
    if independent == "none":
        flat = grad.reshape(-1)
        for i in range(x.size):
            xp, xm = x.copy().reshape(-1), x.copy().reshape(-1)
            xp[i] += h
            xm[i] -= h
            flat[i] = (loss_terms(xp.reshape(x.shape)).sum() - loss_terms(xm.reshape(x.shape)).sum()) / (2 * h)
        return grad
    raise ValueError(f"independent must be 'all', 'rows' or 'none', got {independent!r}")
