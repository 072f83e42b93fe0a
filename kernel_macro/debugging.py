"""Meanings of ``tl.device_print`` and ``tl.device_assert`` (Triton's run-time debugging ops).

* ``tl.device_print(prefix, *args, hex=False)``: one ``device_print`` op over the values (scalars
  or blocks, each printed with its own shape); the prefix must be a compile-time printable ASCII
  string and is normalized as Triton does (:func:`eggpu.ir.debug_ops.normalize_prefix`).
* ``tl.device_assert(cond, msg="", mask=None)``: one ``device_assert`` op on ``cond != 0``
  (Triton's truthiness: bools as they are, numbers compared with 0), lanes where ``mask`` is
  false never fail. The op records the message and the call's ``file:line:col``; it stays in the
  source IR and is removed before optimization unless the kernel is compiled with
  ``debug=True`` (Triton's ``debug`` option; ``TRITON_DEBUG=1`` sets the default).
"""

from __future__ import annotations

import string
from typing import Any

from eggpu.ir.debug_ops import normalize_prefix
from eggpu.ir.dtypes import bool_

from .frontend_ops import Semantic, SemanticError, Tensor, describe, is_number


def device_print(s: Semantic, a: dict[str, Any]) -> None:
    prefix = a["prefix"]
    if not isinstance(prefix, str):
        raise SemanticError(f"tl.device_print: prefix must be a compile-time string, got {describe(prefix)}",
                            "pass the text first: tl.device_print(\"x\", x)", arg="prefix")
    bad = next((c for c in prefix if c not in string.printable), None)
    if bad is not None:
        raise SemanticError(f"tl.device_print: prefix {prefix!r} is not printable ASCII (character {bad!r})",
                            arg="prefix")
    if not isinstance(a["hex"], bool):
        raise SemanticError(f"tl.device_print: hex must be True or False, got {describe(a['hex'])}", arg="hex")
    values = []
    for k, v in enumerate(a["args"]):
        if not isinstance(v, Tensor) and not is_number(v):
            raise SemanticError(f"tl.device_print: value {k} must be a block, a scalar or a number, "
                                f"got {describe(v)}", arg="args")
        t = s.to_tensor(v)
        if t.is_pointer:
            raise SemanticError(f"tl.device_print: value {k} is a pointer ({t.type}); eggpu prints numbers only",
                                "print the offsets you add to the pointer instead", arg="args")
        values.append(t.value)
    s.b.effect("device_print", *values, prefix=normalize_prefix(prefix, len(values)), hex=a["hex"])


def _truth(s: Semantic, v: Any, name: str) -> Tensor:
    if not isinstance(v, Tensor) and not is_number(v):
        raise SemanticError(f"tl.device_assert: {name} must be a block, a scalar or a number, got {describe(v)}",
                            arg=name)
    t = s.to_tensor(v)
    if t.is_pointer:
        raise SemanticError(f"tl.device_assert: {name} is a pointer ({t.type}); compare it first", arg=name)
    if t.dtype == bool_:
        return t
    return s.binary("ne", t, 0)


def device_assert(s: Semantic, a: dict[str, Any]) -> None:
    msg = a["msg"]
    if not isinstance(msg, str):
        raise SemanticError(f"tl.device_assert: msg must be a compile-time string, got {describe(msg)}", arg="msg")
    cond = _truth(s, a["cond"], "cond")
    operands = [cond]
    if a["mask"] is not None:
        cond, mask = s.broadcast_pair(cond, _truth(s, a["mask"], "mask"))
        operands = [cond, mask]
    src = str(s.b.loc) if s.b.loc is not None else ""
    s.b.effect("device_assert", *(t.value for t in operands), msg=msg, src=src)


IMPLS: dict[str, Any] = {"device_print": device_print, "device_assert": device_assert}
