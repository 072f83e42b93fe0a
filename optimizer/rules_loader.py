"""Load rule files: egglog programs restricted to ``ruleset``, ``rewrite``, ``birewrite``, ``rule``.

Rule files are read with our own s-expression reader (so every problem is reported as
``file:line: rule 'name': problem``) and checked against the generated schema
(:mod:`eggpu.optimizer.schema`) before egglog ever sees them:

* only the four commands above; every ``rewrite``/``birewrite``/``rule`` has ``:name "..."``
  (unique across every loaded file) and at most the options ``:when``, ``:ruleset``, ``:name``;
* constructors, relations and functions exist (unknown names get a did-you-mean) and are applied
  to the right number of arguments of the right sorts (``DT``, ``Term``, ``i64``, ``String``);
* every variable of a right-hand side (or of a ``rule``'s actions) is bound by the left-hand side
  or the guards (``rule`` facts);
* a ``:ruleset`` is a built-in one (``exact``, ``ranges``, ``fast_math``) or declared with
  ``(ruleset name)`` in some loaded file; without ``:ruleset`` a rule goes to ``exact``.

Float literals are only allowed as the value of ``ConstF`` and are rewritten to the i64 bit
pattern of the binary64 value (``(ConstF t 1.0)`` -> ``(ConstF t 4607182418800017408)``).

Guards (``:when`` items and ``rule`` facts) may be: a family relation ``(IsInt t)``,
``(Width t w)``; a comparison ``(< a b)``, ``(<= a b)``, ``(>= a b)``, ``(> a b)``, ``(!= a b)``
over i64 expressions (literals, variables, ``(LowerBound x)``, ``(UpperBound x)``, primitives
``+ - * / % & | ^ << >> min max not-i64 log2``;
``log2`` of a non-positive value PANICS egglog, so write ``(log2 (max c 1))``); an equation ``(= a b)`` (binds a fresh variable);
in ``rule`` facts also a bare term pattern. ``rule`` actions may be ``(set (LowerBound e) k)``,
``(set (UpperBound e) k)`` and ``(union a b)``.

Sources: the shipped ``rules/*.egg`` (package ``eggpu.rules``), explicit ``rules=[paths]``
(files or directories of ``*.egg``) and ``EGGPU_RULES_PATH`` (``os.pathsep``-separated).

Limits (each a RuleError naming the file, never a hang or a raw traceback): only regular files of
at most ``MAX_RULE_FILE_BYTES`` (4 MiB) are read (:func:`eggpu.rules.read_rule_file`); the text
must be UTF-8 (the error gives the byte offset and line of the first bad byte); lists nest at most
:data:`MAX_NESTING` deep; error messages quote source text only as a short escaped excerpt
(:data:`EXCERPT_CHARS` characters), and at most :data:`MAX_ERRORS` problems are listed per load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from eggpu.ir.errors import RuleError
from eggpu.rules import env_entries, expand, read_rule_file, shipped_files

from .analyses import ANALYSES
from .schema import CONSTRUCTORS, DTYPE_CONSTRUCTORS, FAMILY_RELATIONS, RULESETS, float_bits, float_literal


@dataclass(frozen=True)
class Atom:
    text: str
    line: int

    @property
    def is_string(self) -> bool:
        return self.text.startswith('"')

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class SList:
    items: tuple[Sx, ...]
    line: int
    end: int = -1  # offset just after the closing paren (top-level forms)
    start: int = -1

    @property
    def head(self) -> str | None:
        return self.items[0].text if self.items and isinstance(self.items[0], Atom) else None

    def __str__(self) -> str:
        return "(" + " ".join(str(i) for i in self.items) + ")"


Sx = Atom | SList

#: deepest list nesting a rule file may use (the shipped rules use under 10; the checker recurses)
MAX_NESTING = 100
#: characters of source text an error message quotes (escaped, with "..." when cut)
EXCERPT_CHARS = 40
#: problems listed in one RuleError (the rest are counted)
MAX_ERRORS = 20


def excerpt(text: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr`` of the first ``limit`` characters of ``str(text)`` (control characters escaped),
    with ``...`` appended when it was cut: what error messages quote of a file's content."""
    s = str(text)
    return repr(s[:limit]) + ("..." if len(s) > limit else "")


def decode_rule_text(data: bytes, file: str) -> str:
    """UTF-8 text of a rule file; RuleError ``file:line: not UTF-8 text (byte 0x.. at byte offset
    N)`` otherwise (a leading UTF-8 byte-order mark is dropped)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise RuleError(f"{file}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at byte offset {e.start}); "
                        f"rule files must be UTF-8") from None


#: one token of a rule file; every character belongs to exactly one (``bad``: a '"' that opens
#: no complete string literal)
_TOKEN = re.compile(r'(?P<nl>\n)|(?P<ws>[^\S\n]+)|(?P<comment>;[^\n]*)|(?P<open>\()|(?P<close>\))'
                    r'|(?P<string>"(?:\\.|[^"\\])*")|(?P<atom>[^\s();"][^\s();]*)|(?P<bad>")', re.DOTALL)


def read_all(text: str, file: str = "<string>") -> list[SList]:
    """Read every top-level form of ``text``; RuleError ``file:line: problem`` on bad syntax
    (also for lists nested deeper than :data:`MAX_NESTING`)."""
    reader = _FormReader(file)
    for m in _TOKEN.finditer(text):
        reader.token(m.lastgroup or "", m.group(), m.start())
    return reader.finish()


class _FormReader:
    """The state of :func:`read_all`: the forms read so far and the open lists."""

    def __init__(self, file: str):
        self.file, self.line = file, 1
        self.forms: list[SList] = []
        self.stack: list[tuple[list[Sx], int, int]] = []  # (items, line, offset) of each open list

    def error(self, line: int, problem: str) -> RuleError:
        return RuleError(f"{self.file}:{line}: {problem}")

    def token(self, kind: str, text: str, at: int) -> None:
        if kind == "open":
            if len(self.stack) >= MAX_NESTING:
                raise self.error(self.line, f"lists nested deeper than {MAX_NESTING} levels")
            self.stack.append(([], self.line, at))
        elif kind == "close":
            self.close(at)
        elif kind in ("string", "atom"):
            self.atom(Atom(text, self.line))
        elif kind == "bad":
            raise self.error(self.line, "unterminated string literal")
        self.line += text.count("\n")  # newlines, and those inside string literals

    def close(self, at: int) -> None:
        if not self.stack:
            raise self.error(self.line, "unbalanced ')'")
        items, l0, s0 = self.stack.pop()
        node = SList(tuple(items), l0, at + 1, s0)
        (self.stack[-1][0] if self.stack else self.forms).append(node)

    def atom(self, atom: Atom) -> None:
        if not self.stack:
            raise self.error(atom.line, f"unexpected text {excerpt(atom.text)} outside a command "
                                        f"(a rule file holds (rewrite ...), (birewrite ...), (rule ...) and (ruleset ...))")
        self.stack[-1][0].append(atom)

    def finish(self) -> list[SList]:
        if self.stack:
            raise self.error(self.stack[-1][1], "unbalanced '(' (not closed)")
        return self.forms


# ------------------------------------------------------------------ vocabulary

ALLOWED_COMMANDS = ("ruleset", "rewrite", "birewrite", "rule")
RULE_OPTIONS = (":when", ":ruleset", ":name")
#: egglog i64 primitives a rule may use, with their arity (checked arithmetic: an overflow, a
#: division by zero or a shift outside [0, 64) makes a guard fail and a right-hand side panic)
I64_PRIMITIVES: dict[str, int] = {
    "+": 2, "-": 2, "*": 2, "/": 2, "%": 2, "&": 2, "|": 2, "^": 2, "<<": 2, ">>": 2,
    "min": 2, "max": 2, "not-i64": 1, "log2": 1,
}
COMPARISONS = ("<", "<=", ">", ">=", "!=")
RELATIONS: dict[str, tuple[str, ...]] = {**{r: ("DT",) for r in FAMILY_RELATIONS}, "Width": ("DT", "i64"), **ANALYSES}
RANGE_FUNCTIONS = ("LowerBound", "UpperBound")
_INT_RE = re.compile(r"[+-]?\d+$")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*$")
_DT_NAMES = set(DTYPE_CONSTRUCTORS.values())
_ALL_NAMES = sorted(set(CONSTRUCTORS) | _DT_NAMES | set(RELATIONS) | set(RANGE_FUNCTIONS) | set(I64_PRIMITIVES))


@dataclass(frozen=True)
class Rule:
    """One named rule of a rule file.

    ``kind`` is ``rewrite``, ``birewrite`` or ``rule``. For rewrites ``lhs``/``rhs`` are the
    pattern trees and ``guards`` the ``:when`` items; for ``rule`` commands ``guards`` are the
    facts and ``actions`` the actions (``lhs``/``rhs`` None). Float literals are already rewritten
    to bit patterns in every tree and in ``egglog`` (the command egglog runs); ``text`` is the
    original source. ``var_sorts`` maps each variable to ``DT``, ``Term``, ``i64`` or ``String``.
    """

    name: str
    file: str
    line: int
    ruleset: str
    kind: str
    lhs: Sx | None
    rhs: Sx | None
    guards: tuple[Sx, ...]
    actions: tuple[Sx, ...]
    text: str
    egglog: str
    var_sorts: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def fast_math(self) -> bool:
        return self.ruleset == "fast_math"


@dataclass
class LoadedRules:
    """Every rule of a set of files, plus the rulesets they use (built-in and declared)."""

    rules: list[Rule]
    rulesets: tuple[str, ...] = RULESETS
    files: tuple[str, ...] = ()

    def by_name(self) -> dict[str, Rule]:
        return {r.name: r for r in self.rules}

    def user_rulesets(self) -> tuple[str, ...]:
        return tuple(r for r in self.rulesets if r not in RULESETS)

    def program(self, rules: Iterable[Rule] | None = None) -> str:
        """egglog text declaring the user rulesets and the given rules (default: all). Run it
        after :func:`eggpu.optimizer.schema.schema_text`."""
        chosen = self.rules if rules is None else list(rules)
        decls = [f"(ruleset {r})" for r in self.user_rulesets()]
        return "\n".join(decls + [r.egglog for r in chosen]) + "\n"

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self):
        return iter(self.rules)


# ------------------------------------------------------------------ checking one rule


class _Fail(Exception):
    def __init__(self, line: int, msg: str):
        super().__init__(msg)
        self.line = line
        self.msg = msg


def _did_you_mean(name: str) -> str:
    import difflib  # lazily: only error messages need it

    close = difflib.get_close_matches(name, _ALL_NAMES, n=5, cutoff=0.6)
    if close:  # among equally close names prefer one that extends what was typed
        best = difflib.SequenceMatcher(None, name, close[0]).ratio()
        tied = [c for c in close if difflib.SequenceMatcher(None, name, c).ratio() == best]
        close = sorted(tied, key=lambda c: (not c.lower().startswith(name.lower()), c))[:1]
    else:
        close = [n for n in _ALL_NAMES if n.lower() == name.lower()]
    return f" (did you mean {close[0]}?)" if close else ""


class _RuleChecker:
    """Sort-checks one rule's trees and rewrites ConstF float literals."""

    def __init__(self) -> None:
        self.sorts: dict[str, str] = {}

    def _var(self, atom: Atom, expected: str | None) -> None:
        name = atom.text
        if name in CONSTRUCTORS or name in _DT_NAMES:
            form = f"({name})" if name in _DT_NAMES else f"({name} ...)"
            raise _Fail(atom.line, f"constructor {name} needs parentheses: write {form}")
        if not _IDENT_RE.match(name):
            raise _Fail(atom.line, f"cannot read {excerpt(name)} (not a number, string or variable name)")
        have = self.sorts.get(name)
        if expected is None:
            return
        if have is None:
            self.sorts[name] = expected
        elif have != expected:
            raise _Fail(atom.line, f"variable {name} is used as a {have} and as a {expected}")

    def expr(self, node: Sx, expected: str | None, *, allow_functions: bool = False) -> tuple[Sx, str | None]:
        """Check ``node`` against ``expected`` (None = infer); returns (rewritten node, sort)."""
        if isinstance(node, Atom):
            return node, self._atom_sort(node, expected)
        if not node.items:
            raise _Fail(node.line, "empty list ()")
        head = node.items[0]
        if not isinstance(head, Atom):
            raise _Fail(node.line, f"cannot apply a list: {excerpt(node)}")
        h = head.text
        args = node.items[1:]
        if h in _DT_NAMES:
            if args:
                raise _Fail(node.line, f"{h} takes no arguments, got {len(args)}")
            sort = "DT"
            new: Sx = node
        elif h in CONSTRUCTORS:
            new, sort = self._constructor(node, head, args, allow_functions), "Term"
        elif h in RANGE_FUNCTIONS:
            if not allow_functions:
                raise _Fail(node.line, f"{h} may only appear in guards and rule actions")
            if len(args) != 1:
                raise _Fail(node.line, f"{h} takes 1 argument (Term), got {len(args)}")
            new, sort = SList((head, self.expr(args[0], "Term", allow_functions=True)[0]), node.line), "i64"
        elif h in I64_PRIMITIVES:
            if len(args) != I64_PRIMITIVES[h]:
                raise _Fail(node.line, f"primitive {h} takes {I64_PRIMITIVES[h]} i64 arguments, got {len(args)}")
            new = SList((head, *(self.expr(a, "i64", allow_functions=allow_functions)[0] for a in args)), node.line)
            sort = "i64"
        elif h in RELATIONS or h in COMPARISONS or h in ("=", "set", "union"):
            raise _Fail(node.line, f"({h} ...) is a guard or action, not a value")
        else:
            raise _Fail(node.line, f"unknown constructor {h if len(h) <= EXCERPT_CHARS else excerpt(h)}{_did_you_mean(h)}")
        if expected is not None and sort != expected:
            raise _Fail(node.line, f"expected a {expected}, got a {sort}: {excerpt(node)}")
        return new, sort

    def _atom_sort(self, node: Atom, expected: str | None) -> str | None:
        """The sort of a literal or variable (a variable's is inferred or recorded here)."""
        t = node.text
        if node.is_string:
            sort: str | None = "String"
        elif _INT_RE.match(t):
            sort = "i64"
        elif float_literal(t) is not None:
            raise _Fail(node.line, f"float literal {t} is only allowed as the value of ConstF")
        else:
            self._var(node, expected)
            return self.sorts.get(t, expected)
        if expected is not None and sort != expected:
            raise _Fail(node.line, f"expected a {expected}, got the {sort} literal {t}")
        return sort

    def _constructor(self, node: SList, head: Atom, args: tuple[Sx, ...], allow_functions: bool) -> SList:
        """A constructor application with each argument checked against its sort (ConstF's
        value is a float literal)."""
        h, want = head.text, CONSTRUCTORS[head.text].arg_sorts
        if len(args) != len(want):
            raise _Fail(node.line, f"{h} takes {len(want)} arguments ({' '.join(want)}), got {len(args)}")
        out: list[Sx] = [head]
        for k, (a, s) in enumerate(zip(args, want)):
            is_float_value = h == "ConstF" and k == 1
            out.append(self._constf_value(a) if is_float_value else self.expr(a, s, allow_functions=allow_functions)[0])
        return SList(tuple(out), node.line)

    def _constf_value(self, a: Sx) -> Sx:
        if isinstance(a, Atom) and not a.is_string:
            v = float_literal(a.text)
            if v is not None:
                return Atom(str(float_bits(v)), a.line)
            if _INT_RE.match(a.text):
                raise _Fail(a.line, f"ConstF takes a float literal (1.0, -0.0, inf, nan), got the integer {a.text}")
        return self.expr(a, "i64")[0]

    def guard(self, node: Sx, *, facts: bool) -> Sx:
        """Check one ``:when`` item (or ``rule`` fact)."""
        if not isinstance(node, SList) or not node.items or not isinstance(node.items[0], Atom):
            raise _Fail(node.line, f"a guard must be a list like (IsInt t) or (>= (LowerBound x) 0), got {excerpt(node)}")
        h = node.items[0].text
        args = node.items[1:]
        if h in RELATIONS:
            want = RELATIONS[h]
            if len(args) != len(want):
                raise _Fail(node.line, f"relation {h} takes {len(want)} arguments ({' '.join(want)}), got {len(args)}")
            return SList((node.items[0], *(self.expr(a, s)[0] for a, s in zip(args, want))), node.line)
        if h in COMPARISONS:
            if len(args) != 2:
                raise _Fail(node.line, f"comparison {h} takes 2 arguments, got {len(args)}")
            return SList((node.items[0], *(self.expr(a, "i64", allow_functions=True)[0] for a in args)), node.line)
        if h == "=":
            if len(args) != 2:
                raise _Fail(node.line, f"= takes 2 arguments, got {len(args)}")
            a, b = args
            # infer from the side that is not a fresh variable
            fresh = [isinstance(x, Atom) and not x.is_string and not _INT_RE.match(x.text)
                     and x.text not in self.sorts for x in (a, b)]
            if fresh[0] and not fresh[1]:
                nb, sb = self.expr(b, None, allow_functions=True)
                na, _ = self.expr(a, sb, allow_functions=True)
            else:
                na, sa = self.expr(a, None, allow_functions=True)
                nb, _ = self.expr(b, sa, allow_functions=True)
            return SList((node.items[0], na, nb), node.line)
        if facts and h in CONSTRUCTORS:
            return self.expr(node, "Term")[0]
        if h in CONSTRUCTORS:
            raise _Fail(node.line, f"a bare pattern {excerpt(node)} is not a guard (bind it with (= v ...) or match it in the lhs)")
        raise _Fail(node.line, f"unknown guard {h if len(h) <= EXCERPT_CHARS else excerpt(h)}{_did_you_mean(h)}")

    def action(self, node: Sx) -> Sx:
        if not isinstance(node, SList) or not node.items or not isinstance(node.items[0], Atom):
            raise _Fail(node.line, f"an action must be (set (LowerBound e) k), (set (UpperBound e) k) or (union a b), got {excerpt(node)}")
        h = node.items[0].text
        args = node.items[1:]
        if h == "set":
            if len(args) != 2 or not (isinstance(args[0], SList) and args[0].head in RANGE_FUNCTIONS):
                raise _Fail(node.line, "set takes (LowerBound e) or (UpperBound e) and an i64 value")
            target = self.expr(args[0], "i64", allow_functions=True)[0]
            return SList((node.items[0], target, self.expr(args[1], "i64")[0]), node.line)
        if h == "union":
            if len(args) != 2:
                raise _Fail(node.line, f"union takes 2 terms, got {len(args)}")
            return SList((node.items[0], *(self.expr(a, "Term")[0] for a in args)), node.line)
        if h in ANALYSES:
            want = ANALYSES[h]
            if len(args) != len(want):
                raise _Fail(node.line, f"analysis {h} takes {len(want)} arguments ({' '.join(want)}), got {len(args)}")
            return SList((node.items[0], *(self.expr(a, s)[0] for a, s in zip(args, want))), node.line)
        raise _Fail(node.line, f"action {h!r} is not allowed in rule files (use set LowerBound/UpperBound, union, "
                               f"or an analysis: {', '.join(ANALYSES)})")


def _variables(node: Sx, binding: bool, bound: set[str], used: dict[str, int]) -> None:
    """Collect variables; ``bound`` gets those in binding positions (constructor, relation and
    function arguments, bare sides of =), ``used`` every variable with its first line."""
    if isinstance(node, Atom):
        t = node.text
        if node.is_string or _INT_RE.match(t) or not _IDENT_RE.match(t):
            return
        used.setdefault(t, node.line)
        if binding:
            bound.add(t)
        return
    h = node.head
    args = node.items[1:]
    if h in I64_PRIMITIVES or h in COMPARISONS:
        for a in args:
            _variables(a, False, bound, used)
    elif h == "=":
        for a in args:
            _variables(a, True, bound, used)
    else:
        for a in args:
            _variables(a, True, bound, used)


def _unbound_in_guards(guards: Sequence[Sx], bound: set[str]) -> None:
    used: dict[str, int] = {}
    b2: set[str] = set()
    for g in guards:
        _variables(g, True, b2, used)
    for v, line in used.items():
        if v not in bound and v not in b2:
            raise _Fail(line, f"variable {v} in a guard is not bound by the pattern or by (= {v} ...)")


def _check_rhs_bound(rhs_nodes: Sequence[Sx], bound: set[str], what: str) -> None:
    used: dict[str, int] = {}
    for n in rhs_nodes:
        _variables(n, True, set(), used)
    for v, line in used.items():
        if v not in bound:
            raise _Fail(line, f"unbound variable {v} in the {what} (bind it in the {'facts' if what == 'actions' else 'left-hand side or :when'})")


def _options(items: Sequence[Sx], line: int) -> dict[str, Sx]:
    opts: dict[str, Sx] = {}
    i = 0
    while i < len(items):
        k = items[i]
        if not (isinstance(k, Atom) and k.text.startswith(":")):
            raise _Fail(k.line, f"unexpected {excerpt(k)} (expected an option like :when, :ruleset, :name)")
        if k.text not in RULE_OPTIONS:
            raise _Fail(k.line, f"option {k.text} is not allowed (allowed: {', '.join(RULE_OPTIONS)})")
        if i + 1 >= len(items):
            raise _Fail(k.line, f"option {k.text} needs a value")
        if k.text in opts:
            raise _Fail(k.line, f"option {k.text} given twice")
        opts[k.text] = items[i + 1]
        i += 2
    return opts


def _name_of(form: SList) -> str | None:
    items = form.items
    for k, v in zip(items, items[1:]):
        if isinstance(k, Atom) and k.text == ":name" and isinstance(v, Atom) and v.is_string:
            return v.text[1:-1]
    return None


def _parse_rule(form: SList, text: str, file: str) -> tuple[Rule, str | None]:
    """One rewrite/birewrite/rule command -> Rule (ruleset checked later)."""
    kind = form.head
    name = _name_of(form)
    if name is None:
        raise _Fail(form.line, f"{kind} without :name (every rule needs :name \"...\")")
    items = form.items
    if len(items) < 3:
        raise _Fail(form.line, f"{kind} needs two parts, got {len(items) - 1}")
    opts = _options(items[3:], form.line)
    nm = opts[":name"]
    if not (isinstance(nm, Atom) and nm.is_string and len(nm.text) > 2):
        raise _Fail(form.line, ":name must be a non-empty string")
    rs_node = opts.get(":ruleset")
    if rs_node is not None and not (isinstance(rs_node, Atom) and _IDENT_RE.match(rs_node.text)):
        raise _Fail(form.line, f":ruleset must be a name, got {excerpt(rs_node)}")
    ruleset = rs_node.text if rs_node is not None else "exact"
    ck = _RuleChecker()
    when = opts.get(":when")
    if kind == "rule":
        if when is not None:
            raise _Fail(form.line, "a rule takes its guards in its facts list, not :when")
        facts_n, acts_n = items[1], items[2]
        if not isinstance(facts_n, SList) or not isinstance(acts_n, SList):
            raise _Fail(form.line, "rule needs a list of facts and a list of actions: (rule (facts...) (actions...) ...)")
        if not facts_n.items:
            raise _Fail(form.line, "a rule needs at least one fact")
        facts = tuple(ck.guard(f, facts=True) for f in facts_n.items)
        bound: set[str] = set()
        _variables(SList(facts, form.line), True, bound, {})
        # variables only in primitive/comparison positions are unbound
        b2: set[str] = set()
        for f in facts:
            _binding_vars(f, b2)
        _unbound_in_guards(facts, b2)
        actions = tuple(ck.action(a) for a in acts_n.items)
        _check_rhs_bound(actions, b2, "actions")
        body = f"({' '.join(map(str, facts))}) ({' '.join(map(str, actions))})"
        lhs = rhs = None
        guards = facts
    else:
        lhs, sl = ck.expr(items[1], "Term")
        if not (isinstance(lhs, SList) and lhs.head in CONSTRUCTORS):
            raise _Fail(form.line, "the left-hand side must be a constructor pattern like (Add t x y)")
        guards = ()
        if when is not None:
            if not isinstance(when, SList):
                raise _Fail(form.line, ":when takes a list of guards")
            guards = tuple(ck.guard(g, facts=False) for g in when.items)
        rhs, _ = ck.expr(items[2], "Term")
        b2 = set()
        _binding_vars(lhs, b2)
        for g in guards:
            _binding_vars(g, b2)
        _unbound_in_guards(guards, b2)
        _check_rhs_bound([rhs], b2, "right-hand side")
        if kind == "birewrite":
            rb: set[str] = set()
            _binding_vars(rhs, rb)
            for g in guards:
                _binding_vars(g, rb)
            missing = sorted(b2 - rb)
            if missing:
                raise _Fail(form.line, f"birewrite: variable {missing[0]} of the left-hand side is not bound by the right-hand side")
        when_txt = f" :when ({' '.join(map(str, guards))})" if guards else ""
        body = f"{lhs} {rhs}{when_txt}"
        actions = ()
    egg = f'({kind} {body} :ruleset {ruleset} :name "{name}")'
    src = text[form.start:form.end] if form.start >= 0 else str(form)
    rule = Rule(name, file, form.line, ruleset, kind, lhs, rhs, tuple(guards), actions, src, egg, dict(ck.sorts))
    return rule, rs_node.text if rs_node is not None else None


def _binding_vars(node: Sx, out: set[str]) -> None:
    """Variables in binding positions of a pattern/guard (see :func:`_variables`)."""
    used: dict[str, int] = {}
    _variables(node, True, out, used)


# ------------------------------------------------------------------ files


def parse_rules(text: str, file: str = "<string>") -> tuple[list[Rule], list[str]]:
    """Parse and check one rule file's text; returns (rules, declared rulesets).

    Raises RuleError listing every problem as ``file:line: rule 'name': problem`` (rulesets and
    duplicate names across files are checked by :func:`load_rule_files`)."""
    forms = read_all(text, file)
    rules: list[Rule] = []
    declared: list[str] = []
    errors: list[str] = []
    names: dict[str, int] = {}
    for form in forms:
        head = form.head
        try:
            if head is None:
                raise _Fail(form.line, f"a command must start with a name, got {excerpt(form)}")
            if head not in ALLOWED_COMMANDS:
                raise _Fail(form.line, f"command {excerpt(head)} is not allowed in rule files (only {', '.join(ALLOWED_COMMANDS)})")
            if head == "ruleset":
                if len(form.items) != 2 or not (isinstance(form.items[1], Atom) and _IDENT_RE.match(form.items[1].text)):
                    raise _Fail(form.line, "ruleset takes one name: (ruleset mine)")
                declared.append(form.items[1].text)
                continue
            rule, _ = _parse_rule(form, text, file)
            if rule.name in names:
                raise _Fail(form.line, f"duplicate rule name (first defined at {file}:{names[rule.name]})")
            names[rule.name] = form.line
            rules.append(rule)
        except _Fail as e:
            name = _name_of(form) if head in ("rewrite", "birewrite", "rule") else None
            who = f"rule {name!r}: " if name else ""
            errors.append(f"{file}:{e.line}: {who}{e.msg}")
    if errors:
        raise RuleError(_join_errors(errors))
    return rules, declared


def _join_errors(errors: Sequence[str]) -> str:
    """At most :data:`MAX_ERRORS` problems, then a count of the rest (counts of an already
    shortened message are carried over)."""
    lines, more = [], 0
    for line in "\n".join(errors).splitlines():
        m = _MORE_RE.match(line)
        if m:
            more += int(m.group(1))
        else:
            lines.append(line)
    more += max(0, len(lines) - MAX_ERRORS)
    return "\n".join(lines[:MAX_ERRORS] + ([f"... and {more} more problems"] if more else []))


_MORE_RE = re.compile(r"\.\.\. and (\d+) more problems$")


def read_rule_text(path: str | os.PathLike, label: str | None = None) -> str:
    """The text of one rule file: bounded, regular files only, UTF-8 (see the module docstring)."""
    return decode_rule_text(read_rule_file(path), label or str(path))


def _read_source(src: str | os.PathLike) -> list[tuple[str, str]]:
    return [(str(f), read_rule_text(f)) for f in expand(src)]


def shipped_sources() -> list[tuple[str, str]]:
    """(label, text) of the shipped rule files, in name order (label ``rules/<file>``)."""
    return [(f"rules/{f.name}", read_rule_text(f, f"rules/{f.name}")) for f in shipped_files()]


def env_paths() -> list[str]:
    """Entries of ``EGGPU_RULES_PATH`` (``os.pathsep``-separated; empty entries ignored)."""
    return env_entries()


def load_sources(sources: Sequence[tuple[str, str]], *, validate_egglog: bool = True) -> LoadedRules:
    """Parse (label, text) sources together: names unique across all, rulesets declared somewhere.
    The same sources parsed by an earlier process are read back from :mod:`.parsed_rules`."""
    from . import parsed_rules

    all_rules: list[Rule] = []
    declared: list[str] = []
    errors: list[str] = []
    seen: dict[str, Rule] = {}
    cached = parsed_rules.get(sources)
    parsed: list[tuple[list[Rule], list[str]]] = []
    for i, (label, text) in enumerate(sources):
        try:
            rules, decl = cached[i] if cached is not None else parse_rules(text, label)
        except RuleError as e:
            errors.append(str(e))
            continue
        parsed.append((rules, decl))
        declared += decl
        for r in rules:
            if r.name in seen:
                first = seen[r.name]
                errors.append(f"{r.file}:{r.line}: rule {r.name!r}: duplicate rule name (first defined at {first.location})")
                continue
            seen[r.name] = r
            all_rules.append(r)
    rulesets = tuple(dict.fromkeys([*RULESETS, *declared]))
    for r in all_rules:
        if r.ruleset not in rulesets:
            import difflib  # lazily: only error messages need it

            close = difflib.get_close_matches(r.ruleset, rulesets, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            errors.append(f"{r.file}:{r.line}: rule {r.name!r}: unknown ruleset {r.ruleset}{hint} "
                          f"(declare it with (ruleset {r.ruleset}))")
    if errors:
        raise RuleError(_join_errors(errors))
    if cached is None and sources:
        parsed_rules.put(sources, parsed)
    loaded = LoadedRules(all_rules, rulesets, tuple(label for label, _ in sources))
    if validate_egglog and all_rules:
        _validate_with_egglog(loaded)
    return loaded


def _egglog_run(text: str, label: str) -> str | None:
    from .egglog_bindings import bindings

    EGraph = bindings().EGraph

    from .schema import schema_text

    eg = EGraph()
    try:
        eg.run_program(*eg.parse_program(schema_text() + text, filename=label))
    except BaseException as e:  # egglog panics derive from BaseException
        if isinstance(e, KeyboardInterrupt | SystemExit):
            raise
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return None


def _validate_with_egglog(loaded: LoadedRules) -> None:
    """Declare every rule in a fresh e-graph; on failure, find the rule egglog rejects.

    A program egglog accepted once is remembered on disk (an empty marker named by the sha256 of
    the schema, the program and egglog's version, in the proof cache's ``egglog-accepted/``
    folder, read and written only through :mod:`eggpu.ir.cachefs`), so a new process does not
    pay for building a throw-away e-graph again; the shipped rule program's digest comes with
    the package (``rules/proofs.json``, :mod:`.shipped_proofs`), so a fresh install does not either.
    """
    from . import shipped_proofs
    from .proof_cache import ProofCache

    digest = _accepted_digest(loaded.program())
    if digest is not None and shipped_proofs.egglog_accepted(digest):  # the shipped rules, checked at build time
        return
    cache = ProofCache() if digest is not None else None
    if cache is not None and cache.has_marker(digest):
        return
    if _egglog_run(loaded.program(), "<rules>") is None:
        if cache is not None:
            cache.put_marker(digest)
        return
    errors = []
    for r in loaded.rules:
        msg = _egglog_run(loaded.program([r]), r.file)
        if msg is not None:
            errors.append(f"{r.file}:{r.line}: rule {r.name!r}: egglog rejects it: {msg}")
    if errors:
        raise RuleError(_join_errors(errors))


def _accepted_digest(program: str) -> str | None:
    import hashlib

    from eggpu.ir.versions import version_of

    from .schema import schema_text

    egglog_version = version_of("egglog")  # (importlib.metadata would cost ~45 ms to import)
    if egglog_version is None:
        return None
    return hashlib.sha256("\0".join((schema_text(), program, egglog_version)).encode()).hexdigest()


def load_rules(
    rules: Sequence[str | os.PathLike] | None = None,
    *,
    shipped: bool = True,
    env: bool = True,
    validate_egglog: bool = True,
) -> LoadedRules:
    """Load the shipped rules (``shipped``), then ``rules`` (files or directories of ``*.egg``),
    then ``EGGPU_RULES_PATH`` (``env``). Raises RuleError on any problem."""
    sources: list[tuple[str, str]] = []
    if shipped:
        sources += shipped_sources()
    for src in list(rules or []) + (env_paths() if env else []):
        sources += _read_source(src)
    return load_sources(sources, validate_egglog=validate_egglog)


def load_rule_files(paths: Sequence[str | os.PathLike], *, validate_egglog: bool = True) -> LoadedRules:
    """Load only the given files/directories (no shipped rules, no environment)."""
    return load_rules(paths, shipped=False, env=False, validate_egglog=validate_egglog)


def parse_rule(text: str, file: str = "<rule>") -> Rule:
    """Parse a single rule command (for tests and ``assert_rule_sound``)."""
    loaded = load_sources([(file, text)])
    if len(loaded.rules) != 1:
        raise RuleError(f"{file}: expected exactly one rule, got {len(loaded.rules)}")
    return loaded.rules[0]


__all__ = [
    "ALLOWED_COMMANDS", "I64_PRIMITIVES", "RELATIONS", "Atom", "LoadedRules", "Rule", "SList", "env_paths",
    "load_rule_files", "load_rules", "load_sources", "parse_rule", "parse_rules", "read_all", "shipped_sources",
]
