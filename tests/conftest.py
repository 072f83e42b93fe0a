"""Session-wide test isolation: compiled-kernel and proof caches live in temporary directories,
never in the user's cache. The proof cache is shared by the whole session (so each shipped rule
is proved for real once per run); tests that exercise the compile cache point EGGPU_CACHE_DIR at
their own directory. Two fixtures shared across folders: ``cli_run`` (the command line in-process)
and ``ptxas_registers`` (assemble PTX, or skip without ptxas).
"""

from __future__ import annotations

import os
import tempfile

import pytest

_session_dir = tempfile.mkdtemp(prefix="eggpu-tests-")
os.environ.setdefault("EGGPU_PROOF_CACHE_DIR", os.path.join(_session_dir, "proofs"))
os.environ.setdefault("EGGPU_CACHE_DIR", os.path.join(_session_dir, "cache"))


@pytest.fixture
def cli_run(capsys):
    """``cli_run(*argv) -> (exit code, stdout, stderr)``: ``eggpu.cli.main`` run in-process (an
    argparse usage error's ``SystemExit`` gives its code); a user mistake must never print a
    traceback, so stderr holding one fails the test."""
    from eggpu import cli

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = cli.main(list(argv))
        except SystemExit as e:  # argparse usage errors
            code = int(e.code)
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    return run


@pytest.fixture
def ptxas_registers():
    """``ptxas_registers(ptx, target)``: the registers ``ptxas`` gives the PTX's kernel (so the PTX
    must assemble for ``target``); the test is skipped where ptxas is not installed."""
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    def registers(ptx: str, target: str) -> int:
        try:
            find_ptxas()
        except ToolchainError:
            pytest.skip("ptxas not installed")
        return run_ptxas(ptx, target).registers

    return registers
