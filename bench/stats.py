"""Summary statistics of repeated measurements."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """``median``, ``min``, ``max``, quartiles (``p25``/``p75``, equal to min/max below 4 values),
    ``n`` and the raw ``values`` (rounded to 0.001)."""
    v = sorted(float(x) for x in values)
    if not v:
        return {"n": 0, "median": None, "min": None, "max": None, "p25": None, "p75": None, "values": []}
    if len(v) >= 4:
        q = statistics.quantiles(v, n=4, method="inclusive")
        p25, p75 = q[0], q[2]
    else:
        p25, p75 = v[0], v[-1]
    return {"n": len(v), "median": statistics.median(v), "min": v[0], "max": v[-1], "p25": p25, "p75": p75,
            "values": [round(x, 3) for x in values]}


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, None when either is missing or ``b`` is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b
