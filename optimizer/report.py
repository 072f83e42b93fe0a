"""Human-readable summary of an :class:`~eggpu.optimizer.OptimizeResult`."""

from __future__ import annotations

from typing import Any


def format_result(r: Any, *, top: int = 8) -> str:
    """A few lines: stop reason, costs, e-graph size, stage times, validation, busiest rules."""
    lines = []
    stop = str(r.stop_reason) if r.stop_reason is not None else "not run"
    ratio = f" ({r.cost_before / r.cost_after:.2f}x)" if r.cost_after > 0 else ""
    lines.append(f"{r.function.name}: cost {r.cost_before:.1f} -> {r.cost_after:.1f}{ratio}; "
                 f"stopped: {stop} after {r.iterations} iterations; {r.egraph_nodes} e-nodes")
    if getattr(r, "stop_detail", ""):
        lines.append(f"  stop: {r.stop_detail}")
    times = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in r.times.items())
    lines.append(f"  times: {times}")
    if r.validation is not None:
        lines.append(f"  validation: {r.validation}")
    if r.fell_back:
        lines.append(f"  FELL BACK to the unoptimized function: {r.reason}")
    hits = sorted(r.rule_hits.items(), key=lambda kv: (-kv[1], kv[0]))
    if hits:
        shown = ", ".join(f"{k} x{v}" for k, v in hits[:top])
        more = f" (+{len(hits) - top} more)" if len(hits) > top else ""
        lines.append(f"  rule hits: {shown}{more}")
    lines.append(f"  rules: {len(r.rules_used)} used, {len(r.rules_rejected)} not used")
    return "\n".join(lines)


__all__ = ["format_result"]
