"""Every runnable ```python block of docs/language.md runs, and every ```output block is exact.

The blocks run in document order in one namespace, like one interactive session, so a later block
may use what an earlier one defined. Each block is written to its own file,
``<tmp>/block<N>/example.py`` — kernels need a real source file for ``inspect`` — and executed
with that file name, so a compile error inside a block reports ``example.py:<line in the
block>:<col>``, which is what the document shows.

Conventions of the document:

* a ```python block whose first line is ``# not run`` is not executed (it needs a GPU, the
  compile pipeline, or Python >= 3.12), only parsed;
* a ```output block is the expected stdout of the runnable python block just before it
  (trailing spaces and blank lines ignored; the block's directory is removed from paths).
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
MODULE_NAME = "eggpu_language_doc"
_FENCE = re.compile(r"^```(\S*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass
class Block:
    """A fenced code block of the document."""

    lang: str
    line: int  # 1-based line of the opening fence
    text: str
    output: str | None = None  # the expected stdout (the ```output block after it)

    @property
    def runnable(self) -> bool:
        return self.lang == "python" and not self.text.lstrip().startswith("# not run")


def parse_blocks(markdown: str) -> list[Block]:
    """The fenced blocks of ``markdown`` in order; an output block is attached to the python
    block right before it (and not listed itself)."""
    out: list[Block] = []
    for m in _FENCE.finditer(markdown):
        lang, text = m.group(1), m.group(2)
        line = markdown.count("\n", 0, m.start()) + 1
        if lang == "output":
            if not out or out[-1].lang != "python" or out[-1].output is not None:
                raise AssertionError(f"docs/language.md:{line}: an output block must follow a python block")
            out[-1].output = text
            continue
        out.append(Block(lang, line, text))
    return out


def _normalize(text: str) -> str:
    return "\n".join(ln.rstrip() for ln in text.strip("\n").splitlines())


BLOCKS = parse_blocks(DOC.read_text(encoding="utf-8"))
RUNNABLE = [b for b in BLOCKS if b.runnable]


class Session:
    """Runs the runnable blocks in order in one module namespace, each exactly once.

    A failing block does not stop the session: later blocks still run (and fail on their own
    if they needed something the failing block did not define; their error then says which
    earlier blocks failed)."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.module = types.ModuleType(MODULE_NAME)
        self.done = 0
        self.failed: list[Block] = []

    def run_through(self, block: Block) -> str:
        """Run the blocks before ``block`` that have not run yet, then ``block``; return its stdout."""
        index = RUNNABLE.index(block)
        while self.done < index:
            with contextlib.suppress(Exception):
                self._run(RUNNABLE[self.done])
        try:
            return self._run(block)
        except Exception as e:
            earlier = [b.line for b in self.failed if b is not block]
            if earlier:
                e.add_note(f"earlier blocks failed too: docs/language.md lines {earlier}")
            raise

    def _run(self, block: Block) -> str:
        assert RUNNABLE.index(block) == self.done, "blocks run in document order"
        self.done += 1
        folder = self.tmp / f"block{block.line}"
        folder.mkdir()
        path = folder / "example.py"
        path.write_text(block.text, encoding="utf-8")
        stdout = io.StringIO()
        try:
            with contextlib.redirect_stdout(stdout):
                exec(compile(block.text, str(path), "exec"), self.module.__dict__)  # noqa: S102
        except Exception:
            self.failed.append(block)
            raise
        return stdout.getvalue().replace(str(folder) + os.sep, "")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = Session(tmp_path_factory.mktemp("language_doc"))
    sys.modules[MODULE_NAME] = s.module
    yield s
    sys.modules.pop(MODULE_NAME, None)


def test_the_document_has_runnable_blocks_with_outputs():
    assert len(RUNNABLE) >= 20
    assert sum(b.output is not None for b in RUNNABLE) >= 5
    for b in BLOCKS:
        if b.lang == "python" and not b.runnable:
            assert b.output is None, f"docs/language.md:{b.line}: a block that is not run has no output"


def test_parse_blocks_attaches_outputs():
    md = "x\n```python\nprint(1)\n```\ntext\n```output\n1\n```\n```python\n# not run\nboom\n```\n"
    blocks = parse_blocks(md)
    assert [(b.lang, b.line, b.output, b.runnable) for b in blocks] == [
        ("python", 2, "1\n", True), ("python", 9, None, False)]
    with pytest.raises(AssertionError, match="must follow a python block"):
        parse_blocks("```output\n1\n```\n")


NOT_RUN = [b for b in BLOCKS if b.lang == "python" and not b.runnable]


@pytest.mark.parametrize("block", NOT_RUN, ids=[f"line{b.line}" for b in NOT_RUN])
def test_blocks_that_are_not_run_are_valid_python(block):
    try:
        ast.parse(block.text)
    except SyntaxError:
        if sys.version_info < (3, 12) and "def " in block.text and "[" in block.text.split("(")[0]:
            pytest.skip("PEP 695 syntax needs Python 3.12")
        raise


@pytest.mark.parametrize("block", RUNNABLE, ids=[f"line{b.line}" for b in RUNNABLE])
def test_block(block, session):
    got = session.run_through(block)
    if block.output is not None:
        assert _normalize(got) == _normalize(block.output), (
            f"docs/language.md:{block.line}: the output differs from the ```output block"
        )
