"""The time budget of one e-graph phase (saturation, copying the result back, extraction).

``Limits.seconds`` bounds the whole phase of :func:`eggpu.optimizer.optimize` that works on the
e-graph, not only the rule steps: loading the program into the e-graph, the in-process steps,
the forked child, copying its e-graph back (unpickling, rebuilding the view), restoring the base
e-graph and extracting the result. :class:`Budget` is created when the phase starts and passed
through its steps:

* ``soft_end`` (start + ``seconds``): no rule step is started that the previous one says would
  end more than 5 % past it (the stop reason is then ``TIME_LIMIT``);
* ``hard_end`` (start + ``seconds * (1 + SLACK)``): the phase is over by then. Work that cannot
  be interrupted after the steps — the *tail*: copying an e-graph of ``n`` e-nodes back and
  extracting from it — is priced by :meth:`Budget.tail` from what earlier tails in this process
  measured (:func:`observe_tail`), and every decision leaves that much time: a step is not started
  when it and the tail would end past ``hard_end``; the forked child is killed at ``hard_end``
  minus the tail of the e-graph the parent already holds; a child whose result arrives too late
  for its own tail sends none, and the parent's e-graph is used.

Times come from ``clock`` (default :data:`CLOCK`, ``time.monotonic``: one clock for the parent
and a forked child on POSIX), so tests drive a budget with a fake clock instead of asserting
wall-clock times.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: the phase may run this fraction past ``Limits.seconds`` (issue 9: at most 20 %)
SLACK = 0.2

#: the clock budgets read by default (a test may replace it)
CLOCK: Callable[[], float] = time.monotonic

#: the tail estimate before anything was measured: fixed part (seconds) and seconds per e-node.
#: Measured here (egglog 14, Python 3.12, 2 loaded cores): reading and extracting a 124-node
#: e-graph 3-7 ms; copying back and extracting 2,758 e-nodes 0.25 s, 32,837 e-nodes 4.8 s
#: (90-150 us per e-node).
_TAIL_FIXED = 0.01
_TAIL_PER_NODE = 1e-4

_lock = threading.Lock()
_rate = {"fixed": _TAIL_FIXED, "per_node": _TAIL_PER_NODE}


def observe_tail(nodes: int, seconds: float) -> None:
    """Record that the tail of an e-graph of ``nodes`` e-nodes took ``seconds``. The per-node
    rate follows the measurements (half old, half new) but never drops below half its
    default, so one lucky measurement cannot make the next reserve too small; a tail slower
    than the estimate raises the rate at once."""
    if nodes <= 0 or seconds < 0:
        return
    observed = max(0.0, seconds - _rate["fixed"]) / nodes
    with _lock:
        old = _rate["per_node"]
        new = observed if observed > old else (old + observed) / 2
        _rate["per_node"] = max(_TAIL_PER_NODE / 2, new)


def reset_tail_estimate() -> None:
    """Forget what :func:`observe_tail` measured (for tests)."""
    with _lock:
        _rate.update(fixed=_TAIL_FIXED, per_node=_TAIL_PER_NODE)


class Budget:
    """The time budget of one phase of ``seconds`` (see the module docstring)."""

    def __init__(self, seconds: float, clock: Callable[[], float] | None = None):
        self.clock = clock or CLOCK
        self.seconds = seconds
        self.start = self.clock()
        self.soft_end = self.start + seconds
        self.hard_end = self.start + seconds * (1 + SLACK)

    def now(self) -> float:
        return self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    @staticmethod
    def tail(nodes: int) -> float:
        """Estimated seconds to copy an e-graph of ``nodes`` e-nodes back and extract from it."""
        return _rate["fixed"] + _rate["per_node"] * max(0, nodes)

    def hard_left(self, nodes: int = 0) -> float:
        """Seconds left before ``hard_end`` once the tail of ``nodes`` e-nodes is reserved."""
        return self.hard_end - self.tail(nodes) - self.clock()

    def kill_at(self, nodes: int) -> float:
        """When a forked child must be killed so that the parent, falling back to its own
        e-graph of ``nodes`` e-nodes, still ends by ``hard_end``."""
        return self.hard_end - self.tail(nodes)


__all__ = ["CLOCK", "SLACK", "Budget", "observe_tail", "reset_tail_estimate"]
