"""The textual form of the IR: printing (and the generated op table of ``docs/ir.md``).

The text form is MLIR-like, deterministic and round-trips through :mod:`eggpu.ir.parser`
(``print_function(parse_function(print_function(fn))) == print_function(fn)``)::

    kernel vector_add(%x_ptr: ptr<f32>, %n: i32) grid=1 {
      %0 = program_id() {axis=0} : i32
      %1 = arange() {end=128, start=0} : i32[128]
      store(%2, %3, %4)
      %5, %6 = for(%lo, %hi, %step, %a0, %b0) : f32[128], i32 {
      ^(%i: i32, %a: f32[128], %b: i32):
        yield(%a, %b)
      }
    }

Rules (the grammar is in ``docs/ir.md``):

* Value names. Parameters keep their names; any other value with a ``name`` keeps it too; values
  without one are numbered ``%0, %1, ...`` in textual order (results of an op before the
  arguments of its regions). Names must be identifiers; an invalid name is sanitized (bad
  characters become ``_``, a leading digit gets a ``_`` prefix) and a name already used in the
  function gets a ``_1``, ``_2``... suffix, so every printed name is unique in the function.
* Operation lines: ``results = op(operands) {attrs} : result types`` then the regions (separated
  by ``else``) and an optional trailing ``loc("file":line:col)``. Ops without results omit
  ``results =`` and ``: types``; ops without attributes omit ``{attrs}``. Result types are always
  printed; operand types are not (they follow from the definitions).
* Attributes are sorted by name. Ints print in decimal, bools as ``true``/``false``, dtypes by
  name (``f32``), tuples as ``(16,32)``, strings as JSON strings, floats with ``repr`` (which
  round-trips every finite double exactly, subnormals and ``-0.0`` included) or ``inf``,
  ``-inf``, ``nan`` (the canonical quiet NaN ``0x7ff8000000000000``) and
  ``nan(0x<16 hex digits>)`` for any other NaN bit pattern (sign and payload kept).
* Locations are printed only with ``with_locs=True``.
"""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

from .dtypes import DType, is_numpy_scalar
from .errors import IRError
from .graph import Block, Function, Operation, Value
from .ops import OPS_LIST, OpDef
from .types import BlockType, PointerType

__all__ = ["format_attr", "op_table_markdown", "print_function", "print_type", "splice_op_table"]

INDENT = "  "
CANONICAL_NAN_BITS = 0x7FF8000000000000

_NAME_RE = re.compile(r"[^\W\d]\w*\Z")


def is_identifier(name: str) -> bool:
    """True when ``name`` prints bare (a letter or ``_`` followed by letters, digits, ``_``)."""
    return bool(_NAME_RE.match(name))


def print_type(t: BlockType | DType | PointerType) -> str:
    """Text of a type: ``f32``, ``i32[128]``, ``ptr<f16>``, ``ptr<f32>[16,32]``."""
    if isinstance(t, BlockType):
        if not isinstance(t.elem, DType | PointerType):
            raise IRError(f"cannot print a block type with element {t.elem!r}")
        return str(t)
    if isinstance(t, DType | PointerType):
        return str(t)
    raise IRError(f"cannot print {t!r} as a type (expected BlockType, DType or PointerType)")


def float_bits(x: float) -> int:
    """The IEEE-754 binary64 bit pattern of ``x``."""
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def format_float(x: float) -> str:
    """A float literal that parses back to exactly the same bits (see the module docstring)."""
    if math.isnan(x):
        bits = float_bits(x)
        return "nan" if bits == CANONICAL_NAN_BITS else f"nan(0x{bits:016x})"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def format_attr(v: Any) -> str:
    """Text of an attribute value; raises IRError for kinds the text form cannot express."""
    if isinstance(v, bool) or is_numpy_scalar(v, "bool"):
        return "true" if v else "false"
    if isinstance(v, int) or is_numpy_scalar(v, "int"):
        return str(int(v))
    if isinstance(v, float) or is_numpy_scalar(v, "float"):
        return format_float(float(v))
    if isinstance(v, DType):
        return v.name
    if isinstance(v, tuple | list):
        return "(" + ",".join(format_attr(x) for x in v) + ")"
    if isinstance(v, str):
        return json.dumps(v)
    raise IRError(f"cannot print attribute value {v!r} of type {type(v).__name__}")


def _format_key(name: str) -> str:
    return name if is_identifier(name) else json.dumps(name)


class _Namer:
    """Assigns every defined value a unique printed name (see the module docstring)."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def define(self, v: Value) -> None:
        if id(v) in self.names:
            return
        if v.name is None or re.fullmatch(r"[0-9]+", v.name):
            name = str(self.counter)
            self.counter += 1
        else:
            name = v.name if is_identifier(v.name) else _sanitize(v.name)
            if name in self.taken:
                k = 1
                while f"{name}_{k}" in self.taken:
                    k += 1
                name = f"{name}_{k}"
        self.taken.add(name)
        self.names[id(v)] = name

    def define_block(self, blk: Block) -> None:
        for a in blk.args:
            self.define(a)
        for op in blk.ops:
            for r in op.results:
                self.define(r)
            for region in op.regions:
                self.define_block(region)

    def ref(self, v: Value) -> str:
        name = self.names.get(id(v))
        # An operand defined nowhere in the function (malformed IR) prints as an unparseable
        # reference so that the problem is visible instead of silently renamed.
        return f"%{name}" if name is not None else f"%<undefined {v!r}>"


def _sanitize(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    if not s or not is_identifier(s):
        s = "_" + s
    return s


def _format_loc(op: Operation) -> str:
    loc = op.loc
    if loc is None:
        return ""
    return f" loc({json.dumps(loc.file)}:{loc.line}:{loc.col + 1})"


def _op_head(op: Operation, namer: _Namer) -> str:
    text = ""
    if op.results:
        text = ", ".join(namer.ref(r) for r in op.results) + " = "
    text += f"{op.op}({', '.join(namer.ref(v) for v in op.operands)})"
    if op.attrs:
        text += " {" + ", ".join(f"{_format_key(k)}={format_attr(op.attrs[k])}" for k in sorted(op.attrs)) + "}"
    if op.results:
        text += " : " + ", ".join(print_type(r.type) for r in op.results)
    return text


def _print_block(blk: Block, namer: _Namer, depth: int, lines: list[str], with_locs: bool) -> None:
    pad = INDENT * depth
    for op in blk.ops:
        head = pad + _op_head(op, namer)
        loc = _format_loc(op) if with_locs else ""
        if not op.regions:
            lines.append(head + loc)
            continue
        lines.append(head + " {")
        for i, region in enumerate(op.regions):
            if i:
                lines.append(pad + "} else {")
            if region.args:
                args = ", ".join(f"{namer.ref(a)}: {print_type(a.type)}" for a in region.args)
                lines.append(f"{pad}^({args}):")
            _print_block(region, namer, depth + 1, lines, with_locs)
        lines.append(pad + "}" + loc)


def print_function(fn: Function, *, with_locs: bool = False) -> str:
    """The text form of ``fn`` (no trailing newline). Deterministic: equal programs print equally.

    ``with_locs=True`` appends ``loc("file":line:col)`` (1-based column) to ops that have a
    :class:`~eggpu.ir.graph.Loc`; the parser accepts and restores it.
    """
    namer = _Namer()
    for p in fn.params:
        namer.define(p)
    namer.define_block(fn.body)
    params = ", ".join(f"{namer.ref(p)}: {print_type(p.type)}" for p in fn.params)
    name = fn.name if is_identifier(fn.name) else json.dumps(fn.name)
    facts = f" facts({fn.facts.text()})" if fn.facts else ""
    lines = [f"kernel {name}({params}) grid={fn.grid_rank}{facts} {{"]
    _print_block(fn.body, namer, 1, lines, with_locs)
    lines.append("}")
    return "\n".join(lines)


# ---------------------------------------------------------------- the op table in markdown


def _arity_text(d: OpDef) -> str:
    lo, hi = d.arity
    text = str(lo) if lo == hi else f"{lo}..{'n' if hi is None else hi}"
    if d.num_regions:
        text += f"; {d.num_regions} region{'s' if d.num_regions > 1 else ''}"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*").replace("\n", " ")


def op_table_markdown() -> str:
    """The markdown table of every op in the op table (embedded verbatim in ``docs/ir.md``).

    Columns: op, operand count (``lo..hi``; ``n`` = variadic; regions owned), traits, the dtype
    family of the first operand, attributes (``?`` = optional), meaning, edge cases.
    """
    rows = [
        "| op | operands | traits | dtypes | attrs | meaning | edge cases |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in OPS_LIST:
        attrs = ", ".join([f"`{a}`" for a in d.attrs] + [f"`{a}`?" for a in d.optional_attrs])
        rows.append(
            "| "
            + " | ".join(
                [
                    f"`{d.name}`",
                    _arity_text(d),
                    ", ".join(sorted(d.traits)),
                    _cell(d.family),
                    attrs or "-",
                    _cell(d.doc) or "-",
                    _cell(d.edge_cases) or "-",
                ]
            )
            + " |"
        )
    return "\n".join(rows) + "\n"


OPS_BEGIN = "<!-- ops:begin -->"
OPS_END = "<!-- ops:end -->"


def splice_op_table(markdown: str) -> str:
    """``markdown`` with the text between the ``<!-- ops:begin -->``/``<!-- ops:end -->`` lines
    replaced by :func:`op_table_markdown` (IRError when the markers are missing)."""
    start = markdown.find(OPS_BEGIN + "\n")
    end = markdown.find(OPS_END, start + 1)
    if start < 0 or end < 0:
        raise IRError(f"the document lacks the {OPS_BEGIN} / {OPS_END} markers")
    return markdown[: start + len(OPS_BEGIN) + 1] + op_table_markdown() + markdown[end:]


if __name__ == "__main__":  # python -m eggpu.ir.printer docs/ir.md: refresh the op table in place
    import sys
    from pathlib import Path

    for path in sys.argv[1:]:
        doc = Path(path)
        doc.write_text(splice_op_table(doc.read_text()))
