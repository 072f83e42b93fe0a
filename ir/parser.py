"""Parse the textual IR (the form :mod:`eggpu.ir.printer` writes) back into a :class:`Function`.

The parser builds :class:`~eggpu.ir.graph.Operation` objects directly (no interning/CSE), so
``parse_function(print_function(fn))`` is structurally equal to ``fn`` and prints identically.
Every op is checked against the op table while parsing (arity, attributes, dtype family, result
types; ``for``/``if`` structure; regions ending in ``yield``) and the finished function is run
through :func:`~eggpu.ir.verifier.verify`. Every problem raises :class:`IRParseError` whose
message is ``line:col: problem`` followed by the offending source line and a caret, e.g.::

    3:8: unknown op 'ad' (did you mean add?)
      %2 = ad(%0, %1) : i32
           ^

Values printed as numbers (``%0``) parse to unnamed values; other names are kept as
``Value.name``. ``//`` starts a comment that runs to the end of the line.
"""

from __future__ import annotations

import bisect
import difflib
import json
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

from .dtypes import BY_NAME, DType
from .errors import IRError, IRParseError
from .facts import Facts, parse_fact
from .graph import Block, Function, Loc, Operation, Value
from .ops import get, result_types
from .structure import CONTROL_OPS, RegionShape, StructureError, control_regions
from .types import BlockType, PointerType
from .verifier import verify

__all__ = ["parse_function", "parse_type"]

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*)
  | (?P<value>%\w*)
  | (?P<number>0[xX][0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?(?:[pP][-+]?[0-9]+)?
              |[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)
  | (?P<ident>[^\W\d]\w*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>[(){}\[\]<>,:=^\-])
    """,
    re.VERBOSE,
)

_NUMBERED = re.compile(r"[0-9]+\Z")


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # value, number, ident, string, punct, eof
    text: str
    pos: int


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.toks = self._tokenize()
        self.i = 0
        # name -> Value, one dict per open region; plus every name defined anywhere so far
        self.scopes: list[dict[str, Value]] = []
        self.defined: set[str] = set()

    # ------------------------------------------------------------ lexing and errors

    def _tokenize(self) -> list[_Tok]:
        toks: list[_Tok] = []
        pos, n = 0, len(self.text)
        while pos < n:
            m = _TOKEN_RE.match(self.text, pos)
            if m is None:
                raise self.error_at(pos, f"unexpected character {self.text[pos]!r}")
            kind = m.lastgroup
            assert kind is not None
            if kind == "value" and len(m.group()) == 1:
                raise self.error_at(pos, "expected a value name after '%'")
            if kind != "ws":
                toks.append(_Tok(kind, m.group(), pos))
            pos = m.end()
        toks.append(_Tok("eof", "", n))
        return toks

    def error_at(self, pos: int, msg: str) -> IRParseError:
        line = bisect.bisect_right(self.line_starts, pos) - 1
        start = self.line_starts[line]
        end = self.text.find("\n", start)
        src = self.text[start : end if end >= 0 else len(self.text)]
        col = pos - start
        caret = "".join(c if c == "\t" else " " for c in src[:col]) + "^"
        return IRParseError(f"{line + 1}:{col + 1}: {msg}\n  {src}\n  {caret}")

    def error(self, tok: _Tok, msg: str) -> IRParseError:
        return self.error_at(tok.pos, msg)

    # ------------------------------------------------------------ token helpers

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind in ("punct", "ident") and tok.text == text

    def expect(self, text: str, what: str | None = None) -> _Tok:
        tok = self.peek()
        if not self.at(text):
            raise self.error(tok, f"expected {what or repr(text)}, got {_describe(tok)}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> _Tok:
        tok = self.peek()
        if tok.kind != kind:
            raise self.error(tok, f"expected {what}, got {_describe(tok)}")
        return self.next()

    def expect_int(self, what: str) -> int:
        tok = self.expect_kind("number", what)
        value = _number(tok.text)
        if not isinstance(value, int):
            raise self.error(tok, f"expected {what}, got {tok.text}")
        return value

    # ------------------------------------------------------------ types

    def parse_type(self) -> BlockType:
        tok = self.peek()
        if tok.kind != "ident":
            raise self.error(tok, f"expected a type, got {_describe(tok)}")
        self.next()
        if tok.text == "ptr":
            self.expect("<", "'<' after ptr")
            pointee = self.parse_dtype(self.peek())
            self.next()
            const = self.at(",")
            if const:
                self.next()
                word = self.peek()
                if word.kind != "ident" or word.text != "const":
                    raise self.error(word, f"expected 'const' after ',' in ptr<...>, got {_describe(word)}")
                self.next()
            elem: DType | PointerType = PointerType(pointee, const)
            self.expect(">", "'>' closing ptr<...>")
        else:
            elem = self.parse_dtype(tok)
        shape: list[int] = []
        if self.at("["):
            self.next()
            while True:
                dim_tok = self.peek()
                dim = self.expect_int("a dimension size")
                if dim < 1:
                    raise self.error(dim_tok, f"dimension sizes must be positive, got {dim}")
                shape.append(dim)
                if not self.at(","):
                    break
                self.next()
            self.expect("]", "',' or ']' in a block shape")
        return BlockType(elem, tuple(shape))

    def parse_dtype(self, tok: _Tok) -> DType:
        if tok.kind == "ident" and tok.text in BY_NAME:
            return BY_NAME[tok.text]
        if tok.kind != "ident":
            raise self.error(tok, f"expected a dtype, got {_describe(tok)}")
        raise self.error(tok, f"unknown type {tok.text!r}{_did_you_mean(tok.text, [*BY_NAME, 'ptr'])}")

    # ------------------------------------------------------------ values and scopes

    def declare(self, tok: _Tok) -> str:
        """Check a definition's name is new in the function; return it."""
        name = tok.text[1:]
        if name in self.defined:
            raise self.error(tok, f"redefinition of value %{name}")
        self.defined.add(name)
        return name

    def bind(self, name: str, v: Value) -> None:
        v.name = None if _NUMBERED.match(name) else name
        self.scopes[-1][name] = v

    def lookup(self, tok: _Tok) -> Value:
        name = tok.text[1:]
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.defined:
            raise self.error(tok, f"value %{name} is not visible here (it is defined later or inside another region)")
        raise self.error(tok, f"undefined value %{name}")

    # ------------------------------------------------------------ attributes

    def parse_attrs(self) -> dict[str, Any]:
        self.expect("{")
        attrs: dict[str, Any] = {}
        while True:
            key_tok = self.peek()
            if key_tok.kind == "ident":
                key = key_tok.text
            elif key_tok.kind == "string":
                key = json.loads(key_tok.text)
            else:
                raise self.error(key_tok, f"expected an attribute name, got {_describe(key_tok)}")
            self.next()
            if key in attrs:
                raise self.error(key_tok, f"duplicate attribute {key!r}")
            self.expect("=", "'=' after the attribute name")
            attrs[key] = self.parse_attr_value()
            if not self.at(","):
                break
            self.next()
        self.expect("}", "',' or '}' in attributes")
        return attrs

    def parse_attr_value(self) -> Any:
        tok = self.peek()
        if self.at("-"):
            self.next()
            inner = self.peek()
            value = self.parse_attr_value()
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self.error(inner, f"'-' must precede a number, got {_describe(inner)}")
            return -value
        if tok.kind == "number":
            self.next()
            try:
                return _number(tok.text)
            except ValueError:
                raise self.error(tok, f"malformed number {tok.text!r}") from None
        if tok.kind == "string":
            self.next()
            return json.loads(tok.text)
        if self.at("("):
            self.next()
            items = []
            while not self.at(")"):
                items.append(self.parse_attr_value())
                if not self.at(","):
                    break
                self.next()
            self.expect(")", "',' or ')' in a tuple")
            return tuple(items)
        if tok.kind == "ident":
            self.next()
            if tok.text in ("true", "false"):
                return tok.text == "true"
            if tok.text == "inf":
                return math.inf
            if tok.text == "nan":
                if not self.at("("):
                    return math.nan
                self.next()
                bits_tok = self.peek()
                bits = self.expect_int("NaN bits (0x...)")
                self.expect(")", "')' after the NaN bits")
                if not (0 <= bits < 1 << 64) or (bits >> 52) & 0x7FF != 0x7FF or bits & ((1 << 52) - 1) == 0:
                    raise self.error(bits_tok, f"0x{bits:x} is not the bit pattern of a binary64 NaN")
                return struct.unpack("<d", struct.pack("<Q", bits))[0]
            if tok.text in BY_NAME:
                return BY_NAME[tok.text]
            raise self.error(tok, f"unknown attribute value {tok.text!r}"
                                  f"{_did_you_mean(tok.text, [*BY_NAME, 'true', 'false', 'inf', 'nan'])}")
        raise self.error(tok, f"expected an attribute value, got {_describe(tok)}")

    # ------------------------------------------------------------ function, blocks, ops

    def parse_function(self) -> Function:
        head = self.expect("kernel", "'kernel'")
        name_tok = self.peek()
        if name_tok.kind == "ident":
            name = name_tok.text
        elif name_tok.kind == "string":
            name = json.loads(name_tok.text)
        else:
            raise self.error(name_tok, f"expected the kernel name, got {_describe(name_tok)}")
        self.next()
        self.expect("(", "'(' after the kernel name")
        self.scopes.append({})
        params: list[Value] = []
        while not self.at(")"):
            tok = self.expect_kind("value", "a parameter (%name: type)")
            pname = self.declare(tok)
            self.expect(":", "':' after the parameter name")
            v = Value(self.parse_type(), None, len(params))
            self.bind(pname, v)
            params.append(v)
            if not self.at(","):
                break
            self.next()
        self.expect(")", "',' or ')' in the parameter list")
        grid_rank = 1
        if self.at("grid"):
            self.next()
            self.expect("=", "'=' after grid")
            grid_tok = self.peek()
            grid_rank = self.expect_int("the grid rank")
            if grid_rank not in (1, 2, 3):
                raise self.error(grid_tok, f"grid rank must be 1, 2 or 3, got {grid_rank}")
        fn = Function(name, params, Block(), grid_rank, self.parse_facts(params))
        for p in params:
            p.owner = fn
        self.expect("{", "'{' opening the kernel body")
        self.parse_ops(fn.body, None)
        self.expect("}", "'}' closing the kernel body")
        self.scopes.pop()
        tail = self.peek()
        if tail.kind != "eof":
            raise self.error(tail, f"unexpected {_describe(tail)} after the end of the kernel")
        try:
            verify(fn)
        except IRError as e:
            raise self.error(head, str(e)) from None
        return fn

    def parse_facts(self, params: list[Value]) -> Facts:
        """``facts(%n: div16 eq1, %x: align16, offsets_i32=1024)`` after the grid, if present."""
        if not self.at("facts"):
            return Facts()
        self.next()
        self.expect("(", "'(' after facts")
        names = {p.name for p in params}
        by: dict[str, list[str]] = {}
        block = 0
        while not self.at(")"):
            tok = self.peek()
            if tok.kind == "ident" and tok.text == "offsets_i32":
                self.next()
                self.expect("=", "'=' after offsets_i32")
                block = self.expect_int("the block extent of offsets_i32")
            else:
                tok = self.expect_kind("value", "a parameter (%name: facts) or offsets_i32=N")
                pname = tok.text[1:]
                if pname not in names:
                    raise self.error(tok, f"facts name an unknown parameter %{pname}")
                self.expect(":", "':' after the parameter name")
                while self.peek().kind == "ident":
                    ftok = self.next()
                    try:
                        parse_fact(ftok.text)
                    except IRError as e:
                        raise self.error(ftok, str(e)) from None
                    by.setdefault(pname, []).append(ftok.text)
            if not self.at(","):
                break
            self.next()
        self.expect(")", "',' or ')' in the facts")
        try:
            return Facts.make(by, block)
        except IRError as e:
            raise self.error(self.peek(), str(e)) from None

    def parse_ops(self, blk: Block, region_of: tuple[str, tuple[BlockType, ...]] | None) -> None:
        """Ops up to the closing '}' (not consumed). ``region_of``: (op name, yield types) or None at top."""
        while not self.at("}"):
            tok = self.peek()
            if tok.kind == "eof":
                raise self.error(tok, "unexpected end of text: missing '}'")
            if blk.ops and blk.ops[-1].op == "yield":
                raise self.error(tok, "yield must be the last operation of its region")
            blk.ops.append(self.parse_op(region_of))
        close = self.peek()
        if region_of is not None:
            if not blk.ops or blk.ops[-1].op != "yield":
                raise self.error(close, f"region of '{region_of[0]}' must end with yield")

    def parse_op(self, region_of: tuple[str, tuple[BlockType, ...]] | None) -> Operation:
        """``%r, ... = name(%a, ...) {attrs} : types {regions} loc(...)``, checked as it is read."""
        result_toks = self.parse_result_names()
        result_names = [self.declare(t) for t in result_toks]
        name_tok = self.expect_kind("ident", "an operation name")
        try:
            opdef = get(name_tok.text)
        except IRError as e:
            raise self.error(name_tok, str(e)) from None
        operand_toks, operands = self.parse_operands(name_tok.text)
        attrs: dict[str, Any] = {}
        if self.at("{") and (opdef.num_regions == 0 or (self.peek(1).kind in ("ident", "string") and self.at("=", 2))):
            attrs = self.parse_attrs()
        types_tok, types = self.parse_result_types()
        if len(types) != len(result_toks):
            where = result_toks[0] if result_toks else types_tok
            raise self.error(where, f"{len(result_toks)} result name(s) but {len(types)} result type(s)")
        expected = self.expected_types(opdef.name, name_tok, operands, attrs)
        shapes: tuple[RegionShape, ...] = ()
        if opdef.name == "yield":
            self.check_yield(region_of, name_tok, types_tok, operands, types)
        elif opdef.name in CONTROL_OPS:
            shapes = self.control_shapes(opdef.name, operand_toks, operands, types_tok, types)
        elif tuple(types) != expected:
            if len(types) != len(expected):
                raise self.error(types_tok, f"{opdef.name} has {len(expected)} result(s), the text gives {len(types)}")
            raise self.error(types_tok, f"type mismatch: {opdef.name} gives {_types(expected)}, "
                                        f"the text says {_types(types)}")
        regions = self.parse_regions(opdef.name, shapes)
        loc = self.parse_loc() if self.at("loc") and self.at("(", 1) else None
        op = Operation(opdef.name, tuple(operands), attrs, tuple(types), tuple(regions), loc)
        for rname, r in zip(result_names, op.results):
            self.bind(rname, r)
        return op

    def parse_result_names(self) -> list[_Tok]:
        """``%a, %b =`` before an op (none for an op without results)."""
        toks: list[_Tok] = []
        if self.peek().kind == "value":
            while True:
                toks.append(self.expect_kind("value", "a result name"))
                if not self.at(","):
                    break
                self.next()
            self.expect("=", "'=' after the result names")
        return toks

    def parse_operands(self, opname: str) -> tuple[list[_Tok], list[Value]]:
        self.expect("(", f"'(' after {opname}")
        toks: list[_Tok] = []
        values: list[Value] = []
        while not self.at(")"):
            tok = self.expect_kind("value", "an operand (%name)")
            toks.append(tok)
            values.append(self.lookup(tok))
            if not self.at(","):
                break
            self.next()
        self.expect(")", "',' or ')' in the operand list")
        return toks, values

    def parse_result_types(self) -> tuple[_Tok, list[BlockType]]:
        """``: t1, t2`` (none when there is no ':'); the token where the types start, for errors."""
        types: list[BlockType] = []
        types_tok = self.peek()
        if self.at(":"):
            self.next()
            types_tok = self.peek()
            types.append(self.parse_type())
            while self.at(","):
                self.next()
                types.append(self.parse_type())
        return types_tok, types

    def expected_types(self, opname: str, name_tok: _Tok, operands: list[Value],
                       attrs: dict[str, Any]) -> tuple[BlockType, ...]:
        try:
            return result_types(opname, [v.type for v in operands], attrs)
        except IRError as e:
            raise self.error(name_tok, str(e)) from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            # a type rule tripped over an attribute of the wrong kind (e.g. axis=1.5)
            raise self.error(name_tok, f"{opname}: invalid attributes {_attrs_text(attrs)} ({e})") from None

    def check_yield(self, region_of: tuple[str, tuple[BlockType, ...]] | None, name_tok: _Tok, types_tok: _Tok,
                    operands: list[Value], types: list[BlockType]) -> None:
        if region_of is None:
            raise self.error(name_tok, "yield outside a for/while/if region")
        if types:
            raise self.error(types_tok, "yield has no results")
        got = tuple(v.type for v in operands)
        if got != region_of[1]:
            raise self.error(name_tok, f"yield of {_types(got)} in a region of '{region_of[0]}' "
                                       f"that must yield {_types(region_of[1])}")

    def control_shapes(self, opname: str, operand_toks: list[_Tok], operands: list[Value], types_tok: _Tok,
                       types: list[BlockType]) -> tuple[RegionShape, ...]:
        """The regions of a for/while/if by the one structure rule; errors point at the operand
        or the result types at fault."""
        try:
            return control_regions(opname, [v.type for v in operands], types)
        except StructureError as e:
            at = operand_toks[e.operand] if e.operand is not None else types_tok
            raise self.error(at, str(e)) from None

    def parse_regions(self, opname: str, shapes: tuple[RegionShape, ...]) -> list[Block]:
        regions: list[Block] = []
        for k, shape in enumerate(shapes):
            if k:
                if not self.at("else"):
                    raise self.error(self.peek(), f"{opname} needs {len(shapes)} regions: "
                                                  f"expected 'else', got {_describe(self.peek())}")
                self.next()
            regions.append(self.parse_region(opname, shape.args, shape.yields))
        return regions

    def parse_region(self, opname: str, want_args: tuple[BlockType, ...] | None,
                     yield_types: tuple[BlockType, ...]) -> Block:
        open_tok = self.peek()
        self.expect("{", f"'{{' opening a region of {opname}")
        self.scopes.append({})
        blk = Block()
        header = self.peek()
        if self.at("^"):
            self.next()
            self.expect("(", "'(' after '^'")
            while not self.at(")"):
                tok = self.expect_kind("value", "a region argument (%name: type)")
                aname = self.declare(tok)
                self.expect(":", "':' after the argument name")
                a = Value(self.parse_type(), blk, len(blk.args))
                self.bind(aname, a)
                blk.args.append(a)
                if not self.at(","):
                    break
                self.next()
            self.expect(")", "',' or ')' in the region arguments")
            self.expect(":", "':' after the region arguments")
        got = tuple(a.type for a in blk.args)
        if want_args is not None and got != want_args:
            where = header if header.text == "^" else open_tok
            raise self.error(where, f"region of '{opname}' must take arguments {_types(want_args)}, got {_types(got)}")
        self.parse_ops(blk, (opname, yield_types))
        self.expect("}")
        self.scopes.pop()
        return blk

    def parse_loc(self) -> Loc:
        self.expect("loc")
        self.expect("(")
        file_tok = self.expect_kind("string", "a file name string")
        self.expect(":", "':' after the file name")
        line = self.expect_int("a line number")
        self.expect(":", "':' after the line number")
        col = self.expect_int("a column number")
        self.expect(")", "')' closing loc(...)")
        return Loc(json.loads(file_tok.text), line, col - 1)


def _number(text: str) -> int | float:
    low = text.lower()
    if low.startswith("0x"):
        if "." in low or "p" in low:
            return float.fromhex(text)
        return int(text, 16)
    if "." in low or "e" in low:
        return float(text)
    return int(text)


def _describe(tok: _Tok) -> str:
    if tok.kind == "eof":
        return "end of text"
    return repr(tok.text)


def _attrs_text(attrs: dict[str, Any]) -> str:
    from .printer import format_attr

    return "{" + ", ".join(f"{k}={format_attr(v)}" for k, v in sorted(attrs.items())) + "}"


def _types(ts) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def parse_function(text: str) -> Function:
    """Parse one kernel in the text form; verify it; raise IRParseError (``line:col: ...``)."""
    return _Parser(text).parse_function()


def parse_type(text: str) -> BlockType:
    """Parse a type such as ``f32``, ``i32[128]``, ``ptr<f16>`` or ``ptr<f32>[16,32]``."""
    p = _Parser(text)
    t = p.parse_type()
    tail = p.peek()
    if tail.kind != "eof":
        raise p.error(tail, f"unexpected {_describe(tail)} after the type")
    return t
