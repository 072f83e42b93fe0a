"""The eggpu command line end to end (subprocesses), including its error paths."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "scale_kernel.py"


def eggpu(*args: str, cwd: Path | None = None, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "eggpu", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600)


@pytest.fixture
def kernel_file(tmp_path: Path) -> Path:
    p = tmp_path / "scale_kernel.py"
    shutil.copy(FIXTURE, p)
    return p


def assert_one_line_error(r: subprocess.CompletedProcess, code: int, pattern: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("eggpu: error: "), r.stderr
    import re

    assert re.search(pattern, lines[-1]), lines[-1]


def test_compile_emits_ptx_ir_and_llvm(kernel_file: Path, tmp_path: Path) -> None:
    spec = f"{kernel_file}::scale"
    r = eggpu("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=256", "--target", "sm_80")
    assert r.returncode == 0, r.stderr
    assert ".visible .entry scale_entry_point(" in r.stdout and ".target sm_80" in r.stdout
    r = eggpu("compile", spec, "--dtype", "f16", "-c", "BLOCK_SIZE=128", "--emit", "ir")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("kernel scale(") and "ptr<f16>" in r.stdout
    out = tmp_path / "k.ll"
    r = eggpu("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "--emit", "llvm", "-o", str(out), "--no-opt")
    assert r.returncode == 0, r.stderr
    assert "scale_entry_point" in out.read_text()
    assert f"wrote llvm of scale__f32__64 for sm_90 to {out}" in r.stderr


@pytest.mark.parametrize(
    "args,code,pattern",
    [
        (["compile", "nope.py::k", "--dtype", "f32"], 2, r"no such file: nope\.py"),
        (["compile", "{file}", "--dtype", "f32"], 2, r"expected FILE\.py::NAME"),
        (["compile", "{file}::scal", "--dtype", "f32"], 2, r"has no kernel named 'scal' \(kernels: scale\)"),
        (["compile", "{file}::scale", "--dtype", "f32", "-c", "BLOCK_SIZE"], 2, r"constexpr must be NAME=VALUE"),
        (["compile", "{file}::scale", "--dtype", "f32", "-c", "BLOCK_SIZE=abc"], 2, r"cannot parse value 'abc'"),
        (["compile", "{file}::scale", "--dtype", "f99", "-c", "BLOCK_SIZE=64"], 2, r"unknown dtype 'f99'"),
        (["compile", "{file}::scale", "--dtype", "i32", "-c", "BLOCK_SIZE=64"], 1, r"i32"),
        (["compile", "{file}::scale", "--dtype", "f32", "-c", "BLOCK_SIZE=64", "--target", "sm_91"], 1, r"sm_91"),
        (["compile", "{file}::scale", "--dtype", "f32", "-c", "BLOCKSIZE=64"], 1, r"BLOCKSIZE|blocksize"),
    ],
)
def test_compile_errors_are_one_line(kernel_file: Path, args: list[str], code: int, pattern: str) -> None:
    r = eggpu(*[a.format(file=kernel_file) for a in args])
    assert_one_line_error(r, code, pattern)


def test_compile_error_in_kernel_body_points_at_source(tmp_path: Path) -> None:
    bad = tmp_path / "bad_kernel.py"
    bad.write_text(FIXTURE.read_text().replace("x * 3.0", "print(x)"))
    r = eggpu("compile", f"{bad}::scale", "--dtype", "f32", "-c", "BLOCK_SIZE=64")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "bad_kernel.py:16" in r.stderr and "^" in r.stderr


def test_broken_user_module_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("import does_not_exist_anywhere\n")
    assert_one_line_error(eggpu("compile", f"{bad}::k"), 2, r"importing .*broken\.py failed: ModuleNotFoundError")


def test_explain_shows_before_after_and_rules(kernel_file: Path) -> None:
    r = eggpu("explain", f"{kernel_file}::scale", "--dtype", "f32", "-c", "BLOCK_SIZE=64")
    assert r.returncode == 0, r.stderr
    for part in ("## IR before optimization", "## IR after optimization", "## Rules fired", "validation: valid"):
        assert part in r.stdout


def test_rules_check_good_and_refuted(tmp_path: Path) -> None:
    good = tmp_path / "good.egg"
    good.write_text('(rewrite (Mul t x (Const t 1)) x :when ((IsInt t)) :ruleset exact :name "mul-one-mine")\n')
    r = eggpu("rules", "check", str(good))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mul-one-mine" in r.stdout and "proved" in r.stdout
    bad = tmp_path / "bad.egg"
    bad.write_text('(rewrite (Add t x (ConstF t 0.0)) x :when ((IsFloat t)) :ruleset exact :name "add-zero-wrong")\n')
    r = eggpu("rules", "check", str(bad))
    assert r.returncode == 1
    assert "add-zero-wrong" in r.stdout and "refuted" in r.stdout and "-0.0" in r.stdout


def test_rules_check_malformed_file(tmp_path: Path) -> None:
    bad = tmp_path / "typo.egg"
    bad.write_text('(rewrite (Mull t x (Const t 1)) x :ruleset exact :name "typo")\n')
    r = eggpu("rules", "check", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "typo.egg:1: rule 'typo'" in (r.stdout + r.stderr) and "Mul" in (r.stdout + r.stderr)


def test_demo_on_one_kernel() -> None:
    r = eggpu("demo", "--kernels", "vector_add")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vector_add" in r.stdout and "1 passed, 0 failed" in r.stdout


def test_demo_unknown_kernel() -> None:
    assert_one_line_error(eggpu("demo", "--kernels", "vectr_add"), 1, r"unknown library kernel\(s\) vectr_add")


def test_no_command_prints_help() -> None:
    r = eggpu()
    assert r.returncode == 2 and "demo" in r.stdout
