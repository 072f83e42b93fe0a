"""A corpus of real peephole rules written in eggpu's rule language, with the verdict expected
per dtype — the measurement of issue #14's goal "on peephole rules (integer and float, widths
8-64): >= 98 % decided, 0 false proofs, 0 false refutations" (`python -m bench.peephole`).

The entries are data, in ``bench/peephole_corpus.toml`` (one ``[[rule]]`` table each, grouped by
kind under comment headers); this module loads them. Each entry: a name, its source (the Alive test file and rule name, the Alive paper, Alive2's
floating-point tests, Herbie's rule set), the rule text (without ``:name``), the dtypes it is
checked at, and which of them are expected UNSOUND under eggpu's semantics (docs/ir.md op table:
wrapping integers, total division `x/0 = x%0 = 0`, `INT_MIN/-1 = INT_MIN`, shifts by amounts
outside [0, bits) give 0 or the sign fill, IEEE floats with structural equality: NaN == NaN,
+0.0 != -0.0). The expectations were decided by hand from those semantics, not from the tool;
where the semantics differ from LLVM's (LLVM's UB/poison makes some unsound-looking rules valid
there and vice versa) the comment says so. A rule written from its source without the source's
precondition is marked "(precondition dropped)": a deliberate unsound variant.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

INT = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
SINT = ("i8", "i16", "i32", "i64")
UINT = ("u8", "u16", "u32", "u64")
SINT_U64 = SINT + ("u64",)  # a (Const t -1) pattern is canonical all-ones only for signed and u64
FL = ("f16", "f32", "f64")
ALL = "all"
GROUPS = {"INT": INT, "SINT": SINT, "UINT": UINT, "SINT_U64": SINT_U64, "FL": FL}
DATA = Path(__file__).with_name("peephole_corpus.toml")


@dataclass(frozen=True)
class Entry:
    name: str
    source: str
    rule: str
    dtypes: tuple[str, ...]
    unsound: tuple[str, ...] | str = ()
    why: str = ""

    def expected(self, dtype: str) -> str:
        """``sound`` or ``unsound`` at ``dtype``."""
        bad = self.dtypes if self.unsound == ALL else self.unsound
        return "unsound" if dtype in bad else "sound"

    def text(self) -> str:
        return f'{self.rule[:-1]} :name "{self.name}")'


def E(name: str, source: str, rule: str, dtypes: tuple[str, ...], unsound: tuple[str, ...] | str = (),
      why: str = "") -> Entry:
    return Entry(name, source, " ".join(rule.split()), dtypes, unsound, why)


def _dtypes(value: str | list[str]) -> tuple[str, ...] | str:
    """A dtype field of the data file: a group name (``INT``, ``SINT``, ``UINT``, ``SINT_U64``,
    ``FL``), ``"all"`` or a list of dtype names."""
    if isinstance(value, list):
        return tuple(value)
    return ALL if value == ALL else GROUPS[value]


def load(path: Path = DATA) -> list[Entry]:
    """The corpus entries of ``path`` (``bench/peephole_corpus.toml``), in file order."""
    with path.open("rb") as f:
        rows = tomllib.load(f)["rule"]
    return [E(r["name"], r["source"], r["rule"], _dtypes(r["dtypes"]), _dtypes(r.get("unsound", [])),
              r.get("why", "")) for r in rows]


CORPUS: list[Entry] = load()
