"""Size limits of issue #13, checked mechanically on the source tree.

* No Python module in the repository (packages, tests, benchmarks, examples) is over
  :data:`MAX_MODULE_LINES` lines.
* No function or method of the shipped packages (``ir``, ``optimizer``, ``codegen``,
  ``kernel_macro``, ``eggpu``) is over :data:`MAX_FUNCTION_LINES` lines (decorators excluded,
  docstring included). Benchmark report generators are exempt: they are not part of the package.
* No function of the optimizer nests control flow deeper than :data:`MAX_OPTIMIZER_NESTING`
  (``if``/``for``/``while``/``with``/``try``/``match``; an ``elif`` chain counts once, nested
  functions start again at 0).

A failure names the file, the function and its size, so the fix (split it) is obvious.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ir", "optimizer", "codegen", "kernel_macro", "eggpu")
ALL_FOLDERS = PACKAGES + ("tests", "bench", "examples")
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80
MAX_OPTIMIZER_NESTING = 4

_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def python_files(folders: tuple[str, ...]) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py") if "__pycache__" not in p.parts)


def functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def nesting(node: ast.AST, depth: int = 0) -> int:
    """The deepest control-flow nesting under ``node`` (not counting nested scopes)."""
    deepest = depth
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _SCOPES):
            continue
        is_elif = isinstance(child, ast.If) and isinstance(node, ast.If) and node.orelse == [child]
        step = 1 if isinstance(child, _BLOCKS) and not is_elif else 0
        deepest = max(deepest, nesting(child, depth + step))
    return deepest


def test_no_module_is_over_the_line_limit():
    over = [f"{p.relative_to(ROOT)}: {n} lines" for p in python_files(ALL_FOLDERS)
            if (n := p.read_text().count("\n")) > MAX_MODULE_LINES]
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them): {over}"


def test_no_package_function_is_over_the_line_limit():
    over = []
    for p in python_files(PACKAGES):
        for fn in functions(ast.parse(p.read_text())):
            if (n := fn.end_lineno - fn.lineno + 1) > MAX_FUNCTION_LINES:
                over.append(f"{p.relative_to(ROOT)}:{fn.lineno} {fn.name}: {n} lines")
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines (split them): {over}"


def test_optimizer_nesting_is_bounded():
    deep = []
    for p in python_files(("optimizer",)):
        for fn in functions(ast.parse(p.read_text())):
            if (d := nesting(fn)) > MAX_OPTIMIZER_NESTING:
                deep.append(f"{p.relative_to(ROOT)}:{fn.lineno} {fn.name}: depth {d}")
    assert not deep, f"optimizer functions nested deeper than {MAX_OPTIMIZER_NESTING}: {deep}"


@pytest.mark.parametrize(("source", "depth"), [
    ("def f():\n    return 1\n", 0),
    ("def f(x):\n    if x:\n        for i in x:\n            pass\n", 2),
    ("def f(x):\n    if x:\n        pass\n    elif x:\n        if x:\n            pass\n", 2),
    ("def f(x):\n    with x:\n        def g():\n            if x:\n                pass\n", 1),
])
def test_nesting_measure(source, depth):
    assert nesting(functions(ast.parse(source))[0]) == depth
