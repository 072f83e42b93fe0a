"""The layering of DESIGN.md §1, checked mechanically on the source tree.

eggpu (facade) -> kernel_macro -> ir; -> optimizer -> ir; -> codegen -> ir.
optimizer and codegen never import each other; ir imports only stdlib, numpy (and ml_dtypes).
`import eggpu` must not import z3, egglog or llvmlite.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDER_TO_PACKAGE = {
    "ir": "eggpu.ir",
    "kernel_macro": "eggpu.kernel_macro",
    "optimizer": "eggpu.optimizer",
    "codegen": "eggpu.codegen",
}
HEAVY = {"egglog", "z3", "llvmlite"}

# package -> eggpu subpackages it may import
ALLOWED_INTERNAL = {
    "eggpu.ir": {"eggpu.ir"},
    "eggpu.kernel_macro": {"eggpu.kernel_macro", "eggpu.ir"},
    "eggpu.optimizer": {"eggpu.optimizer", "eggpu.ir", "eggpu.rules"},
    "eggpu.codegen": {"eggpu.codegen", "eggpu.ir"},
}
ALLOWED_EXTERNAL = {
    "eggpu.ir": {"numpy", "ml_dtypes"},
    "eggpu.kernel_macro": {"numpy", "ml_dtypes"},
    "eggpu.optimizer": {"numpy", "ml_dtypes", "egglog", "z3", "platformdirs", "filelock"},
    "eggpu.codegen": {"numpy", "ml_dtypes", "llvmlite", "platformdirs", "filelock"},
}


def _imports(path: Path, package: str) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    rel_pkg = package + ("" if path.name == "__init__.py" else "")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = rel_pkg.split(".")
                sub = path.relative_to(ROOT).parts[1:-1]
                base = base + list(sub)
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, node.lineno))
    return out


def _stdlib(name: str) -> bool:
    # the interpreter's SHA-2 module is _sha2 on 3.12+ and _sha256 on 3.11 (eggpu.ir.hashing tries both)
    return name.split(".")[0] in sys.stdlib_module_names | {"_sha2", "_sha256"}


@pytest.mark.parametrize("folder", sorted(FOLDER_TO_PACKAGE))
def test_layering(folder: str) -> None:
    package = FOLDER_TO_PACKAGE[folder]
    problems = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for mod, line in _imports(path, package):
            top = mod.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{line}: imports {mod}"
            if top == "eggpu":
                sub = ".".join(mod.split(".")[:2])
                if sub not in ALLOWED_INTERNAL[package]:
                    problems.append(where)
            elif not _stdlib(mod) and top not in ALLOWED_EXTERNAL[package]:
                problems.append(where)
    assert not problems, "layering violations (DESIGN.md §1):\n" + "\n".join(problems)


def test_layering_checker_catches_a_violation(tmp_path: Path) -> None:
    bad = ROOT / "codegen" / "_layering_probe.py"
    bad.write_text("from eggpu.optimizer import optimize\n")
    try:
        with pytest.raises(AssertionError, match="imports eggpu.optimizer"):
            test_layering("codegen")
    finally:
        bad.unlink()


@pytest.mark.parametrize("module", ["eggpu", "eggpu.ir", "eggpu.language"])
def test_import_is_light(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'z3', 'egglog', 'llvmlite'})\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import {module} pulled in heavy modules: {out.stdout.strip()}"
