"""Fixtures shared by the optimizer tests."""

from __future__ import annotations

import pytest

from bench.saturation_bound import BOOM


@pytest.fixture
def boom_rules(tmp_path):
    """A rule file whose comm + assoc pair over a sum never saturates within a few iterations
    (issue 9's explosion, the same rules ``python -m bench.saturation_bound`` times)."""
    p = tmp_path / "boom.egg"
    p.write_text(BOOM)
    return [p]


@pytest.fixture
def without_shipped_synthesized(monkeypatch):
    """Compiles load every shipped rule file but ``rules/synthesized.egg``: a test that compares a
    user rule file against the shipped rules, where that file states a family the synthesized
    rules ship (``0.5 * (1.0 + x) => fma(x, 0.5, 0.5)``, ``x % c + 2c * (x // c)``)."""
    import eggpu.rules as shipped
    from eggpu.optimizer import rules_loader

    files = [f for f in shipped.shipped_files() if f.name != "synthesized.egg"]
    assert len(files) == len(shipped.shipped_files()) - 1
    monkeypatch.setattr(shipped, "shipped_files", lambda: files)
    monkeypatch.setattr(rules_loader, "shipped_files", lambda: files)



def interpret_case(fn, case) -> list:
    """``fn`` interpreted on fresh copies of ``case``'s arguments (returned)."""
    import numpy as np

    from eggpu.ir.interp import interpret

    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    interpret(fn, case.grid, *args)
    return args


@pytest.fixture
def optimized_like_original():
    """``check(inst, case, options, what)``: ``inst`` compiled with and without the optimizer (sm_90,
    ``options``: e.g. the bench's launch facts) interprets to the same bits on ``case``'s arguments,
    and both match the case's expected values."""
    import numpy as np

    import eggpu

    def check(inst, case, options: dict, what: str) -> None:
        before = eggpu.compile(inst, target="sm_90", cache=False, optimize=False, **options).ir
        after = eggpu.compile(inst, target="sm_90", cache=False, **options).ir
        got, want = interpret_case(after, case), interpret_case(before, case)
        for i in case.expected:
            np.testing.assert_array_equal(got[i], want[i], err_msg=what)
            np.testing.assert_allclose(got[i], case.expected[i], rtol=case.rtol, atol=case.atol)

    return check
