"""Optimizer steps over flat f32 parameter buffers."""

from __future__ import annotations

import eggpu
import eggpu.language as tl


@eggpu.kernel
def adam_step(param_ptr: tl.Pointer[tl.f32], grad_ptr: tl.Pointer[tl.f32], m_ptr: tl.Pointer[tl.f32],
              v_ptr: tl.Pointer[tl.f32], n: tl.i32, lr: tl.f32, beta1: tl.f32, beta2: tl.f32, eps: tl.f32,
              weight_decay: tl.f32, bias_correction1: tl.f32, bias_correction2: tl.f32,
              BLOCK_SIZE: tl.constexpr):
    """One Adam step, in place on ``param``, ``m`` and ``v`` (``grad`` is only read).

    ``g = grad + weight_decay * param`` (L2 decay folded into the gradient);
    ``m = beta1*m + (1-beta1)*g``; ``v = beta2*v + (1-beta2)*g*g``;
    ``param -= (lr / bias_correction1) * m / (sqrt(v) / sqrt(bias_correction2) + eps)``.
    The host precomputes ``bias_correction1 = 1 - beta1**t`` and ``bias_correction2 = 1 - beta2**t``.
    """
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    p = tl.load(param_ptr + offs, mask=mask, other=0.0)
    g = tl.load(grad_ptr + offs, mask=mask, other=0.0) + weight_decay * p
    m = beta1 * tl.load(m_ptr + offs, mask=mask, other=0.0) + (1.0 - beta1) * g
    v = beta2 * tl.load(v_ptr + offs, mask=mask, other=0.0) + (1.0 - beta2) * g * g
    denom = tl.sqrt(v) / tl.sqrt(bias_correction2) + eps
    tl.store(param_ptr + offs, p - (lr / bias_correction1) * m / denom, mask=mask)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)
