"""A rule over an op the rule encoding does not model is `unknown` with the reason (never a raw
traceback out of the verifier, never proved)."""

from __future__ import annotations

import pytest

from eggpu.ir.dtypes import BY_NAME
from eggpu.optimizer import rule_verifier as rv


@pytest.mark.parametrize(("text", "reason"), [
    ('(rewrite (Libdevice1 t "__nv_expf" x) (Libdevice1 t "__nv_expf" x) :when ((IsFloat t)) :name "ld")',
     "rules over libdevice are not supported (a libdevice call's dtypes come from its symbol's signature"),
    ('(rewrite (PtrToInt t (I64) p) (PtrToInt t (I64) p) :name "p2i")',
     "rules over ptr_to_int are not supported (its operand is a pointer"),
])
def test_rules_over_unmodelled_ops_are_unknown_with_the_reason(text: str, reason: str) -> None:
    v = rv.verify_rule(text, dtypes=[BY_NAME["f32"]])
    assert v.results, v.note
    for r in v.results:
        assert r.status == rv.UNKNOWN and r.strategy == "encoding", r
        assert reason in r.detail, r.detail
