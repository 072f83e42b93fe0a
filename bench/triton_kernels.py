"""Triton versions of the benchmarked eggpu library kernels, written for a like-for-like comparison.

Each kernel mirrors its eggpu counterpart in :mod:`eggpu.kernels` line by line: the same
parameters (same names, same order), the same tiling and loop structure (1-D kernels: one
program per ``BLOCK_SIZE`` elements; row kernels: one program per row walking the row in tiles
of ``BLOCK_SIZE`` columns with masked lanes; matmul: ``BLOCK_M x BLOCK_N`` output tiles, a K loop
in steps of ``BLOCK_K``, f32 accumulation), the same masks and ``other=`` fill values and the same
arithmetic in the same order. Statistics are computed in f32 as eggpu does.

Differences that are Triton's own choices and are kept (they are what a Triton user gets):

- ``tl.dot`` on f16 uses tensor cores (``mma``/``wgmma``); eggpu's ``dot`` is a shared-memory
  FMA loop (no tensor cores yet). For f32, ``input_precision="ieee"`` is passed so Triton does
  not silently use TF32: eggpu's f32 ``dot`` is IEEE f32.
- Triton pipelines the matmul K loop (``num_stages``, default 3) and picks its own layouts.

:func:`ast_source` builds the ``triton.compiler.ASTSource`` for a kernel, dtype and constexpr
values; :data:`SPECS` lists the kernels with their parameter kinds. This module imports
``triton`` at import time: import it only where Triton is installed (``pip install eggpu[bench]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import triton
import triton.language as tl

# --------------------------------------------------------------------------- 1-D kernels


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def gelu_forward(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


# --------------------------------------------------------------------------- row kernels


@triton.jit
def _row_max_and_normalizer(x_row, n_cols, BLOCK_SIZE: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.full((), 0.0, tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    return m, s


@triton.jit
def softmax_forward(x_ptr, y_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    m, s = _row_max_and_normalizer(x_row, n_cols, BLOCK_SIZE)
    cols = tl.arange(0, BLOCK_SIZE)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_row + start + cols, (tl.exp(x - m) / s).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_forward(x_ptr, y_ptr, weight_ptr, bias_ptr, mean_ptr, rstd_ptr, n_cols, row_stride, eps,
                       BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc2 += d * d
    rstd = tl.math.rsqrt(tl.sum(acc2, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + start + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_forward(x_ptr, y_ptr, weight_ptr, n_cols, row_stride, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.math.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + start + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cross_entropy_forward(logits_ptr, targets_ptr, loss_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = logits_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.full((), 0.0, tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    target = tl.load(targets_ptr + row)
    valid = (target >= 0) & (target < n_cols)
    x_target = tl.load(x_row + tl.where(valid, target, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, m + tl.log(s) - x_target, 0.0))


@triton.jit
def row_argmax(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    best = tl.load(x_row)
    best_idx = tl.full((), 0, tl.int32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        tile_max = tl.max(x, axis=0)
        better = tile_max > best
        best_idx = tl.where(better, start + tl.argmax(x, axis=0), best_idx)
        best = tl.where(better, tile_max, best)
    tl.store(out_ptr + row, best_idx)


# --------------------------------------------------------------------------- matmul


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ka = k + rk
        a_mask = (rm[:, None] < M) & (ka[None, :] < K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + ka[None, :] * stride_ak, mask=a_mask, other=0.0)
        b_mask = (ka[:, None] < K) & (rn[None, :] < N)
        b = tl.load(b_ptr + ka[:, None] * stride_bk + rn[None, :] * stride_bn, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc=acc, input_precision=INPUT_PRECISION)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# --------------------------------------------------------------------------- specs

_TRITON_DTYPE = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "i32": "i32"}


@dataclass(frozen=True)
class TritonSpec:
    """How to build the Triton twin of an eggpu library kernel.

    ``params``: ``(name, kind)`` in order, kind ``"D*"`` (pointer to the kernel's dtype), ``"f32*"``,
    ``"i32*"`` (fixed pointee), ``"i32"``/``"f32"`` (scalars) or ``"constexpr"`` (the eggpu kernel's
    constexprs, in the same order). ``extra_constexprs``: Triton-only constexprs computed from the
    dtype (the matmul's input precision).
    """

    fn: Any
    params: tuple[tuple[str, str], ...]

    def signature(self, dtype: str) -> dict[str, str]:
        sig = {}
        for name, kind in self.params:
            if kind == "D*":
                sig[name] = "*" + _TRITON_DTYPE[dtype]
            elif kind.endswith("*"):
                sig[name] = "*" + _TRITON_DTYPE[kind[:-1]]
            elif kind == "constexpr":
                sig[name] = "constexpr"
            else:
                sig[name] = _TRITON_DTYPE[kind]
        return sig

    @property
    def constexpr_names(self) -> list[str]:
        return [n for n, k in self.params if k == "constexpr"]

    @property
    def runtime_params(self) -> list[tuple[str, str]]:
        return [(n, k) for n, k in self.params if k != "constexpr"]


def _row(fn, *ptrs: str, scalars: tuple[tuple[str, str], ...] = (("n_cols", "i32"), ("row_stride", "i32"))):
    return TritonSpec(fn, tuple((p, "D*") for p in ptrs) + scalars + (("BLOCK_SIZE", "constexpr"),))


SPECS: dict[str, TritonSpec] = {
    "vector_add": TritonSpec(vector_add, (("x_ptr", "D*"), ("y_ptr", "D*"), ("out_ptr", "D*"), ("n", "i32"),
                                          ("BLOCK_SIZE", "constexpr"))),
    "gelu_forward": TritonSpec(gelu_forward, (("x_ptr", "D*"), ("y_ptr", "D*"), ("n", "i32"),
                                              ("BLOCK_SIZE", "constexpr"))),
    "softmax_forward": _row(softmax_forward, "x_ptr", "y_ptr"),
    "layer_norm_forward": TritonSpec(layer_norm_forward, (
        ("x_ptr", "D*"), ("y_ptr", "D*"), ("weight_ptr", "D*"), ("bias_ptr", "D*"), ("mean_ptr", "f32*"),
        ("rstd_ptr", "f32*"), ("n_cols", "i32"), ("row_stride", "i32"), ("eps", "f32"), ("BLOCK_SIZE", "constexpr"))),
    "rms_norm_forward": TritonSpec(rms_norm_forward, (
        ("x_ptr", "D*"), ("y_ptr", "D*"), ("weight_ptr", "D*"), ("n_cols", "i32"), ("row_stride", "i32"),
        ("eps", "f32"), ("BLOCK_SIZE", "constexpr"))),
    "cross_entropy_forward": TritonSpec(cross_entropy_forward, (
        ("logits_ptr", "D*"), ("targets_ptr", "i32*"), ("loss_ptr", "f32*"), ("n_cols", "i32"),
        ("row_stride", "i32"), ("BLOCK_SIZE", "constexpr"))),
    "row_argmax": TritonSpec(row_argmax, (("x_ptr", "D*"), ("out_ptr", "i32*"), ("n_cols", "i32"),
                                          ("row_stride", "i32"), ("BLOCK_SIZE", "constexpr"))),
    "matmul": TritonSpec(matmul, (
        ("a_ptr", "D*"), ("b_ptr", "D*"), ("c_ptr", "D*"), ("M", "i32"), ("N", "i32"), ("K", "i32"),
        ("stride_am", "i32"), ("stride_ak", "i32"), ("stride_bk", "i32"), ("stride_bn", "i32"),
        ("stride_cm", "i32"), ("stride_cn", "i32"),
        ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_K", "constexpr"))),
}


def extra_constexprs(kernel: str, dtype: str) -> dict[str, Any]:
    """Triton-only constexprs: the matmul's ``input_precision`` (IEEE for f32, as eggpu computes)."""
    if kernel == "matmul":
        return {"INPUT_PRECISION": "ieee" if dtype in ("f32", "f64") else "tf32"}
    return {}


def launch_specialization(kernel: str, dtype: str, args: dict[str, Any]) -> tuple[dict, dict]:
    """``(attrs, constants)`` Triton's launcher would derive from concrete arguments.

    Mirrors ``triton.runtime.jit``'s default specialization: a pointer whose address is a
    multiple of 16 (every allocation from PyTorch/CuPy/numpy's large buffers) and an integer
    that is a multiple of 16 get ``tt.divisibility = 16``; an integer equal to 1 becomes a
    constant. Pointers are assumed 16-byte aligned (the harness cannot know device addresses).
    """
    spec = SPECS[kernel]
    names = [n for n, _ in spec.params] + list(extra_constexprs(kernel, dtype))
    attrs: dict[tuple[int, ...], list] = {}
    constants: dict[str, Any] = {}
    for name, kind in spec.runtime_params:
        idx = (names.index(name),)
        if kind.endswith("*"):
            attrs[idx] = [["tt.divisibility", 16]]
        elif kind == "i32":
            v = int(args[name])
            if v == 1:
                constants[name] = 1
            elif v % 16 == 0:
                attrs[idx] = [["tt.divisibility", 16]]
    return attrs, constants


def aligned_pointers(kernel: str, dtype: str) -> dict[tuple[int, ...], list]:
    """Triton ``attrs`` marking every pointer parameter 16-byte aligned (``tt.divisibility = 16``)
    and nothing else: the assumption eggpu's code generation makes for pointer parameters
    without being told (recorded in the module's assumptions and checked at every launch)."""
    spec = SPECS[kernel]
    names = [n for n, _ in spec.params] + list(extra_constexprs(kernel, dtype))
    return {(names.index(n),): [["tt.divisibility", 16]] for n, k in spec.runtime_params if k.endswith("*")}


def ast_source(kernel: str, dtype: str, consts: dict[str, Any] | list[Any] | tuple[Any, ...],
               launch_args: dict[str, Any] | None = None, aligned: bool = False):
    """The ``ASTSource`` of ``kernel`` for ``dtype`` (``"f32"``...) and the eggpu constexpr values.

    ``consts`` are the eggpu kernel's constexprs (a sequence in order, or a dict by name).
    With ``launch_args`` (argument values by name), the source carries the specialization
    Triton's launcher would give those arguments (:func:`launch_specialization`); without, it
    carries none (pointers not known aligned, integers unknown). ``aligned`` (without
    ``launch_args``) marks only the pointers 16-byte aligned (:func:`aligned_pointers`): the
    information an eggpu compile without ``specialize=`` has.
    """
    from triton.compiler import ASTSource

    spec = SPECS[kernel]
    if not isinstance(consts, dict):
        consts = dict(zip(spec.constexpr_names, consts, strict=True))
    constexprs = dict(consts) | extra_constexprs(kernel, dtype)
    signature = spec.signature(dtype) | {k: "constexpr" for k in extra_constexprs(kernel, dtype)}
    attrs = aligned_pointers(kernel, dtype) if aligned else None
    if launch_args is not None:
        attrs, constants = launch_specialization(kernel, dtype, launch_args)
        for name, value in constants.items():
            signature[name] = "constexpr"
            constexprs[name] = value
    return ASTSource(fn=spec.fn, signature=signature, constexprs=constexprs, attrs=attrs)


def compile_options(num_warps: int = 4) -> dict[str, Any]:
    """Options for ``triton.compile``: ``num_warps`` as eggpu's, FP contraction off (IEEE results,
    as eggpu's default ``fast_math=False``); everything else Triton's default."""
    return {"num_warps": num_warps, "enable_fp_fusion": False}


def gpu_target(sm: int) -> Any:
    """Triton's ``GPUTarget`` for compute capability ``sm`` (80, 90...)."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", sm, 32)


__all__ = ["SPECS", "TritonSpec", "aligned_pointers", "ast_source", "compile_options", "extra_constexprs", "gpu_target",
           "launch_specialization"]
