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
