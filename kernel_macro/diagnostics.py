"""Source handling and compile diagnostics for kernel bodies.

:class:`Source` reads and parses a function's source once (cached by file and code object) and maps AST
positions back to the file. :func:`Source.error` builds the :class:`KernelCompileError` every
unsupported construct raises::

    path/to/file.py:12:9: tl.load() got an unexpected keyword argument 'msk'
        x = tl.load(p, msk=m)
                       ^
    hint: did you mean mask=? tl.load(ptr, mask=None, other=None)

The column is 1-based in the header (like compilers print it); the caret sits under that column
of the verbatim source line.
"""

from __future__ import annotations

from collections.abc import Iterable

from eggpu.ir.errors import CompileError, KernelError
from eggpu.ir.record import Record

from . import source_index

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:  # eggpu.ir.graph (and numpy) load when a location is made, not on a cache hit
    import ast
    from typing import Any

    from eggpu.ir.graph import Loc


class KernelCompileError(CompileError):
    """A CompileError pointing into a kernel's source.

    Attributes: ``loc`` (file, 1-based line, 0-based column), ``problem``, ``hint``,
    ``source_line`` (verbatim) and ``notes`` (e.g. the call sites of inlined helpers).
    """

    def __init__(self, loc: Loc, problem: str, hint: str | None, source_line: str,
                 notes: Iterable[str] = ()):
        self.loc = loc
        self.problem = problem
        self.hint = hint
        self.source_line = source_line
        self.notes = list(notes)
        super().__init__(self.render())

    def __reduce__(self):
        return (type(self), (self.loc, self.problem, self.hint, self.source_line, tuple(self.notes)))

    def render(self) -> str:
        lines = [f"{self.loc.file}:{self.loc.line}:{self.loc.col + 1}: {self.problem}",
                 self.source_line, " " * self.loc.col + "^"]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def note(self, note: str) -> None:
        """Append a ``note:`` line (e.g. where an inlined helper was called)."""
        self.notes.append(note)
        self.args = (self.render(),)

    def __str__(self) -> str:
        return self.render()


class InternalCompilerError(KernelCompileError):
    """An unexpected exception inside the frontend: a bug in eggpu, not a mistake in the kernel.

    Raised in one place (:meth:`eggpu.kernel_macro.frontend.CodeGenerator.visit_body`, like
    Triton's ``visit()``) for any exception that is neither an :class:`eggpu.EggpuError` nor a
    located language error, at the innermost kernel statement being lowered. The message names
    the kernel and the exception, shows that statement with a caret, and asks for a report; the
    original exception is chained as ``__cause__`` (its traceback is the one to report).
    """

    @classmethod
    def wrap(cls, source: Source, node: ast.AST, kernel: str, exc: BaseException) -> InternalCompilerError:
        """The internal error for ``exc`` raised while lowering ``node`` of ``source``."""
        err = source.error(node, f"internal error in eggpu while compiling kernel {kernel!r}: "
                                 f"{type(exc).__name__}: {exc}", REPORT_HINT)
        return cls(err.loc, err.problem, err.hint, err.source_line)


#: the hint of every :class:`InternalCompilerError`
REPORT_HINT = ("this is a bug in eggpu, not in your kernel: please report it with this message, the kernel's "
               "source and the traceback chained below it")


def did_you_mean(word: str, choices: Iterable[str], prefix: str = "") -> str:
    """``" (did you mean tl.exp?)"``-style suffix text, or empty."""
    import difflib  # lazily: only error messages suggest names

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {prefix}{close[0]}?" if close else ""


class Source(Record):
    """The source of one Python function: ``first_line`` (1-based, decorators included),
    ``lines`` (verbatim), ``text`` (dedented), its AST ``tree`` and the ``names`` its body loads.

    A source found in the kernel-file index (:mod:`.source_index`, what a fresh-process cache hit
    reads) is parsed only when ``tree`` is first used; one read with :mod:`inspect` is parsed at
    once (a syntax error is a KernelError from :meth:`of`)."""

    _fields = ("fn", "file", "first_line", "lines", "text")
    _no_repr = ("text",)
    fn: Any
    file: str
    first_line: int
    lines: list[str]
    text: str

    def __init__(self, fn: Any, file: str, first_line: int, raw_lines: list[str], text: str,
                 names: tuple[tuple[str, ...], ...] | None = None):
        self._assign(fn, file, first_line, [ln.rstrip("\n") for ln in raw_lines], text)
        self._raw_lines, self._tree, self._names = raw_lines, None, names

    @classmethod
    def of(cls, fn: Any) -> Source:
        """``fn``'s source (cached per code object and file): from the kernel-file index, else
        read with :mod:`inspect` and parsed (and then indexed)."""
        code = fn.__code__
        # Code objects compare equal by content, not by file: the same function text in two
        # modules would share one entry (and blame the first module's file) without the name.
        key = (code.co_filename, code)
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        entry, data = source_index.lookup(fn)
        if entry is not None:
            src = cls(fn, code.co_filename, entry.first_line, entry.lines, entry.text, entry.names)
        else:
            src = cls._read(fn, data)
            if data is not None:
                source_index.store(fn, data, source_index.Entry(src.first_line, src._raw_lines,
                                                                src.text, src.names))
        _CACHE[key] = src
        return src

    @classmethod
    def _read(cls, fn: Any, data: bytes | None = None) -> Source:
        """Read ``fn``'s source with :mod:`inspect`, from ``linecache`` made current first:
        ``linecache`` re-reads a file only when its size or mtime changed, so a file rewritten
        with the same size within one mtime tick (a generated kernel file, an edit and reload in
        a few milliseconds) would give the old text. ``data``: the file's bytes, when the
        caller has read them (:func:`.source_index.lookup`)."""
        import inspect
        import textwrap

        code = fn.__code__
        source_index.refresh_linecache(code.co_filename, data)
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise KernelError(
                f"cannot read the source of {fn.__name__} ({code.co_filename}): {e}; kernels and "
                f"helpers must be defined in a Python file"
            ) from None
        text = "".join(lines)
        src = cls(fn, code.co_filename, first, lines, textwrap.dedent(text))
        src._tree = _parse(fn, text)
        return src

    @property
    def tree(self) -> ast.FunctionDef:
        """The function's ``def`` statement, line numbers relative to :attr:`first_line`."""
        if self._tree is None:
            self._tree = _parse(self.fn, "".join(self._raw_lines))
        return self._tree

    @property
    def names(self) -> tuple[tuple[str, ...], ...]:
        """The names and attribute chains (``("cfg", "SCALE")``) the body loads, sorted; the
        decorators and annotations are not part of the body."""
        if self._names is None:
            self._names = _loaded_names(self.tree)
        return self._names

    def line_text(self, lineno: int) -> str:
        """Verbatim text of the source's ``lineno``-th line (1-based within the source)."""
        i = lineno - 1
        return self.lines[i] if 0 <= i < len(self.lines) else ""

    def position(self, node: ast.AST) -> tuple[int, int]:
        """(1-based line within the source, 0-based character column) of ``node``."""
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        text = self.line_text(lineno)
        col = len(text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))  # bytes -> chars
        return lineno, col

    def loc(self, node: ast.AST) -> Loc:
        from eggpu.ir.graph import Loc

        lineno, col = self.position(node)
        return Loc(self.file, self.first_line + lineno - 1, col)

    def error(self, node: ast.AST, problem: str, hint: str | None = None,
              col: int | None = None) -> KernelCompileError:
        """A :class:`KernelCompileError` at ``node`` (or at character column ``col`` of its line)."""
        lineno, c = self.position(node)
        if col is not None:
            c = col
        from eggpu.ir.graph import Loc

        loc = Loc(self.file, self.first_line + lineno - 1, c)
        return KernelCompileError(loc, problem, hint, self.line_text(lineno))


_CACHE: dict[tuple[str, Any], Source] = {}


def _parse(fn: Any, text: str) -> ast.FunctionDef:
    """The ``def`` statement of ``text`` (``fn``'s source; an indented method or nested function
    is parsed inside ``if 1:`` so that its columns stay those of the file)."""
    import ast

    parse_text, offset = text, 0
    if text[:1] in (" ", "\t"):
        parse_text, offset = "if 1:\n" + text, 1  # keeps the original columns
    try:
        module = ast.parse(parse_text)
    except SyntaxError as e:
        raise KernelError(f"cannot parse the source of {fn.__name__}: {e}") from None
    stmt = module.body[0]
    if offset:
        stmt = stmt.body[0]  # type: ignore[attr-defined]
    if not isinstance(stmt, ast.FunctionDef):
        raise KernelError(f"{fn.__name__}: expected a def statement, got {type(stmt).__name__}")
    if offset:
        for node in ast.walk(stmt):
            if hasattr(node, "lineno"):
                node.lineno -= 1  # type: ignore[attr-defined]
                if getattr(node, "end_lineno", None) is not None:
                    node.end_lineno -= 1  # type: ignore[attr-defined]
    return stmt


def _chain(node: ast.expr) -> tuple[str, ...] | None:
    import ast

    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return (node.id, *reversed(attrs))
    return None


def _loaded_names(tree: ast.FunctionDef) -> tuple[tuple[str, ...], ...]:
    """The loaded names/attribute chains of ``tree``'s body, sorted (:attr:`Source.names`)."""
    import ast

    nodes = [n for stmt in tree.body for n in ast.walk(stmt)]
    inner = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    found: set[tuple[str, ...]] = set()
    for n in nodes:
        if isinstance(n, ast.Name | ast.Attribute) and id(n) not in inner and isinstance(n.ctx, ast.Load):
            c = _chain(n)
            if c is not None:
                found.add(c)
    return tuple(sorted(found))
