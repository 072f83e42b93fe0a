"""pytest helpers for eggpu users.

Rule helpers (z3 is imported on first use, not by ``import eggpu``):

* :func:`assert_rule_sound` — the rule is proved for every dtype it can match.
* :func:`assert_rule_unsound` — the rule is refuted; returns the counterexample.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _verify(rule: Any, dtypes: Iterable[Any] | None, timeout_ms: int | None):
    from eggpu.optimizer.rule_verifier import DEFAULT_TIMEOUT_MS, verify_rule

    return verify_rule(rule, timeout_ms=timeout_ms or DEFAULT_TIMEOUT_MS, dtypes=dtypes)


def assert_rule_sound(rule: Any, *, dtypes: Iterable[Any] | None = None, timeout_ms: int | None = None):
    """Assert that ``rule`` (rule text such as ``'(rewrite (Neg t (Neg t x)) x :name "nn")'`` or a
    loaded :class:`~eggpu.optimizer.rules_loader.Rule`) is proved for every dtype it can match
    (``dtypes`` restricts the candidates). Returns the :class:`RuleVerdict`."""
    v = _verify(rule, dtypes, timeout_ms)
    if not v.usable:
        lines = [f"rule {v.rule!r} ({v.location}) is not proved: {v.summary()}"]
        for r in v.results:
            if r.status not in ("proved", "proved-reduced-width"):
                lines.append(f"  {r.key}: {r.status} {r.format_counterexample()} {r.detail}".rstrip())
        raise AssertionError("\n".join(lines))
    return v


def assert_rule_unsound(rule: Any, *, dtypes: Iterable[Any] | None = None, timeout_ms: int | None = None
                        ) -> dict[str, str]:
    """Assert that ``rule`` is refuted for some dtype; returns the counterexample of the first
    refuted dtype (variable -> value text, e.g. ``{"x": "-0.0 (f32)"}``)."""
    v = _verify(rule, dtypes, timeout_ms)
    r = v.first("refuted")
    if r is None:
        raise AssertionError(f"rule {v.rule!r} was expected to be refuted but is: {v.summary()}")
    return dict(r.counterexample or {})


# ---------------------------------------------------------------------- optimizer helpers
#
# * :func:`assert_rewrites` — the given rules turn one program into another.
# * :func:`assert_equivalent` — translation validation proves two programs equivalent.
#
# Programs may be given as ``eggpu.ir.Function`` objects, IR text (``eggpu.ir.parser`` syntax) or
# kernel instances (anything with an ``ir()`` method, e.g. ``VectorAdd[tl.f32](1024)``).


def _as_function(x: Any) -> Any:
    from eggpu.ir import Function

    if isinstance(x, Function):
        return x
    if isinstance(x, str):
        from eggpu.ir.parser import parse_function

        return parse_function(x)
    if hasattr(x, "ir"):
        return x.ir()
    raise TypeError(f"expected an IR Function, IR text or a kernel instance, got {type(x).__name__}")


def _rule_paths(rules: Any, tmpdir: str) -> list[str]:
    """Rule files from paths and/or rule text (text is written to a file in ``tmpdir``)."""
    import os

    if rules is None:
        return []
    items = [rules] if isinstance(rules, str | os.PathLike) else list(rules)
    out = []
    for i, r in enumerate(items):
        if isinstance(r, str) and "(" in r:
            path = os.path.join(tmpdir, f"rules_{i}.egg")
            with open(path, "w") as f:
                f.write(r)
            out.append(path)
        else:
            out.append(str(r))
    return out


def _normal_form(fn: Any) -> Any:
    """``fn`` re-emitted by the optimizer's decoder without any rule (dead pure ops dropped, pure
    ops in the decoder's canonical order), so two programs can be compared structurally."""
    from eggpu.optimizer import optimize

    res = optimize(fn, rules=[], shipped_rules=False, validate=False)
    if res.fell_back:
        raise AssertionError(f"could not normalize {fn.name}: {res.reason}")
    return res.function


def assert_rewrites(rules: Any, before: Any, after: Any, *, shipped: bool = False, fast_math: bool = False,
                    limits: Any = None) -> Any:
    """Assert that optimizing ``before`` with ``rules`` gives ``after`` (and validates).

    ``rules``: rule file paths and/or rule text (``'(rewrite ... :name "r")'``); only these rules
    run unless ``shipped=True``. Every rule must be proved (an unproved rule is reported, not
    silently skipped). The optimized program and ``after`` are compared after both are put in
    the decoder's normal form (so the order of independent pure ops and dead code do not matter;
    the effects must appear in the same order). Returns the :class:`OptimizeResult`."""
    import tempfile

    from eggpu.ir.printer import print_function
    from eggpu.ir.structural import first_difference
    from eggpu.optimizer import optimize

    before_fn, after_fn = _as_function(before), _as_function(after)
    with tempfile.TemporaryDirectory() as tmp:
        res = optimize(before_fn, rules=_rule_paths(rules, tmp), shipped_rules=shipped, fast_math=fast_math,
                       limits=limits)
    bad = {n: v for n, v in res.rules_rejected.items() if not (v == "fast_math" and not fast_math)}
    if bad:
        raise AssertionError("rules not proved, so they never fire: "
                             + ", ".join(f"{n} ({v})" for n, v in sorted(bad.items())))
    if res.fell_back:
        raise AssertionError(f"optimization fell back to the input: {res.reason}")
    got, want = _normal_form(res.function), _normal_form(after_fn)
    got.name = want.name
    diff = first_difference(got, want)
    if diff is not None:
        raise AssertionError(f"optimized program differs from the expected one: {diff}\n"
                             f"--- got\n{print_function(got)}\n--- expected\n{print_function(want)}\n"
                             f"rule hits: {res.rule_hits}")
    return res


def assert_equivalent(a: Any, b: Any, *, timeout_ms: int = 5000, fast_math: bool = False) -> Any:
    """Assert that programs ``a`` and ``b`` are equivalent by translation validation: they must
    perform the same loads, stores, atomics and control flow in the same order, and z3 must prove
    that, lane by lane, every one of them gets the same address, mask and value in ``b`` as in
    ``a`` wherever ``a`` is defined (see :mod:`eggpu.optimizer.validate`). Pure computations may
    differ arbitrarily. ``fast_math=True`` compares floats as real numbers. Returns the
    :class:`Validation`; raises AssertionError with the verdict's detail (the differing op and lane
    values) otherwise."""
    from eggpu.optimizer.validate import validate

    v = validate(_as_function(a), _as_function(b), timeout_ms=timeout_ms, fast_math=fast_math)
    if not v.ok:
        raise AssertionError(f"programs are not shown equivalent ({v.verdict}): {v.detail}")
    return v
