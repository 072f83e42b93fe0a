"""Names of Triton's language that eggpu does not have, each with the reason (and what to write).

The frontend turns a use of one of these — ``tl.map_elementwise(...)``, ``tl.math.pow``,
``tl.float8e5`` — into one compile error naming the feature, at the source line with a caret;
outside a kernel ``tl.<name>`` raises an ``AttributeError`` with the same text. Keyword arguments
Triton accepts with values eggpu cannot honour (``tie_break_left=False``, ``volatile=True``, ...)
are refused by the language functions themselves (:mod:`eggpu.kernel_macro.compat`).
"""

from __future__ import annotations

from .language import LIBDEVICE_NAMES, MATH_NAMES

UNSUPPORTED: dict[str, str] = {
    # debugging and escape hatches
    # types as values
    "block_type": "eggpu block types are not values in a kernel",
    "TRITON_MAX_TENSOR_NUMEL": "eggpu has no fixed limit constant",
}

LIBDEVICE_UNSUPPORTED_HINT = (f"eggpu's libdevice has every function of Triton's libdevice ({len(LIBDEVICE_NAMES)}: "
                              "tl.extra.cuda.libdevice.__all__) and no other")

MATH_UNSUPPORTED_HINT = ("tl.math has " + ", ".join(MATH_NAMES) + " in eggpu (Triton's tl.math); the other libdevice "
                         "functions eggpu has are in tl.extra.cuda.libdevice")

TENSOR_METHODS: frozenset[str] = frozenset({
    "abs", "argmax", "argmin", "broadcast_to", "cast", "ceil", "cos", "div_rn", "erf", "exp", "exp2",
    "expand_dims", "fdiv", "floor", "fma", "log", "log2", "max", "min", "permute", "ravel", "reshape",
    "rsqrt", "sigmoid", "sin", "softmax", "sqrt", "sqrt_rn", "sum", "trans", "umulhi", "view",
    "tanh", "associative_scan", "reduce", "cumsum", "cumprod", "xor_sum", "histogram", "flip", "split",
    "sort", "reduce_or",
})
"""Tensor methods: ``x.sum(axis)`` is ``tl.sum(x, axis)`` (Triton's ``_tensor_member_fn`` names that
eggpu has, plus ``x.to(...)``, handled on its own)."""


def unsupported_reason(name: str) -> str | None:
    """Why ``tl.<name>`` (a Triton name) is not available in eggpu, or None when it is not one."""
    from .language import UNSUPPORTED_DTYPES

    return UNSUPPORTED.get(name) or UNSUPPORTED_DTYPES.get(name)
