"""Markdown helpers of the benchmark reports: a number formatted or a dash, a pipe table."""

from __future__ import annotations

from typing import Any


def fmt(x: Any, fmt: str = "{:.0f}", none: str = "–") -> str:
    """``x`` formatted with ``fmt``; ``none`` for None; ``str(x)`` when the format does not apply."""
    if x is None:
        return none
    try:
        return fmt.format(x)
    except (TypeError, ValueError):
        return str(x)


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown pipe table of ``rows`` (strings) under ``header``."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
