"""Only the rules that can match: the subset of rules worth giving egglog for one program.

A rule can only ever fire on an e-graph that holds an e-node of every ``Term`` constructor its
query joins over: the left-hand side of a ``rewrite``, either side of a ``birewrite`` (it runs
both ways), every fact of a ``rule`` (analysis rules included). A program starts with the
constructors of its encoding; a rule that fires adds the constructors of what it builds (its
right-hand side, the terms of its ``union`` actions; a ``birewrite`` both sides). So the rules
that can fire during saturation are found by a fixpoint: start from the program's constructors,
add every rule whose needs are present, add what it introduces, repeat.

Every other rule can never match, so leaving it out changes nothing egglog does: the same
matches, the same e-graph, the same extraction — only less work per iteration and a smaller
program to load. The needs are an under-approximation on purpose (``:when`` guards are not
counted, although their patterns are joins too): a rule is only left out when it certainly
cannot match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .rules_loader import Atom, Rule, SList, Sx
from .schema import CONSTRUCTORS

_HEAD_RE = re.compile(r"\(([A-Za-z_][A-Za-z0-9_\-]*)")


def constructors_in(node: Sx | None) -> frozenset[str]:
    """The ``Term`` constructors applied anywhere in the pattern/action ``node``."""
    out: set[str] = set()
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if isinstance(n, SList):
            h = n.head
            if h in CONSTRUCTORS:
                out.add(h)
            stack.extend(i for i in n.items if isinstance(i, SList))
        elif not isinstance(n, Atom):  # pragma: no cover - trees hold only Atoms and SLists
            raise TypeError(f"not an s-expression: {n!r}")
    return frozenset(out)


def program_constructors(commands: str) -> frozenset[str]:
    """The ``Term`` constructors applied in egglog command text (an encoded program)."""
    return frozenset(h for h in _HEAD_RE.findall(commands) if h in CONSTRUCTORS)


@dataclass(frozen=True)
class RuleNeeds:
    """What a rule's query joins over (``needs``: alternatives, one per direction it runs) and
    which constructors its actions may add (``gives``)."""

    needs: tuple[frozenset[str], ...]
    gives: frozenset[str]


def rule_needs(rule: Rule) -> RuleNeeds:
    """The :class:`RuleNeeds` of one loaded rule (see the module docstring)."""
    if rule.kind == "rule":
        needs = frozenset().union(*(constructors_in(f) for f in rule.guards))
        return RuleNeeds((needs,), frozenset().union(*(constructors_in(a) for a in rule.actions)))
    lhs, rhs = constructors_in(rule.lhs), constructors_in(rule.rhs)
    if rule.kind == "birewrite":
        return RuleNeeds((lhs, rhs), lhs | rhs)
    return RuleNeeds((lhs,), rhs)


@dataclass(frozen=True)
class Selection:
    """The outcome of :func:`select_rules`: the rules that can match (in their original order),
    the constructors present once they all fired, and per left-out rule the constructors that
    are missing (of its first alternative)."""

    rules: tuple[Rule, ...]
    constructors: frozenset[str]
    skipped: dict[str, tuple[str, ...]]

    def why(self, total: int) -> str:
        """One line for reports: how many rules were loaded and why."""
        return (f"{len(self.rules)} of {total} rules can match: their left-hand sides use only the "
                f"program's {len(self.constructors)} constructors (closed under what right-hand sides "
                f"build); {len(self.skipped)} need a constructor the program never holds")


def select_rules(rules: Sequence[Rule], present: Iterable[str]) -> Selection:
    """The rules of ``rules`` that can fire on a program whose encoding applies the constructors
    ``present`` (a fixpoint; see the module docstring)."""
    have = set(present)
    needs = [rule_needs(r) for r in rules]
    chosen = [False] * len(rules)
    changed = True
    while changed:
        changed = False
        for i, nd in enumerate(needs):
            if not chosen[i] and any(alt <= have for alt in nd.needs):
                chosen[i] = True
                if not nd.gives <= have:
                    have |= nd.gives
                    changed = True
    skipped = {r.name: tuple(sorted(nd.needs[0] - have)) for r, nd, c in zip(rules, needs, chosen) if not c}
    return Selection(tuple(r for r, c in zip(rules, chosen) if c), frozenset(have), skipped)


__all__ = ["RuleNeeds", "Selection", "constructors_in", "program_constructors", "rule_needs", "select_rules"]
