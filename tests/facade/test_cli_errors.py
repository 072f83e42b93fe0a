"""The eggpu command line's error paths: output files, closed pipes, rules check errors, targets,
option values. Most run ``eggpu.cli.main`` in-process (fast); the closed pipe needs a process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eggpu import cli


def test_output_into_a_missing_folder_is_one_error_line(cli_run, spec, tmp_path):
    for missing in (tmp_path / "nope" / "out.ptx", tmp_path / "gone" / "k.ll"):
        code, out, err = cli_run("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "--no-opt",
                                 "--emit", "llvm", "-o", str(missing))
        assert (code, out) == (1, "")
        assert err == f"eggpu: error: cannot write {missing}: No such file or directory\n"


def test_a_closed_stdout_pipe_ends_quietly_with_141(spec):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before eggpu writes a byte (like `| head -0`)
    try:
        r = subprocess.run([sys.executable, "-m", "eggpu", "compile", spec, "--dtype", "f32", "-c",
                            "BLOCK_SIZE=64", "--no-opt", "--emit", "ir"],
                           stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=600)
    finally:
        os.close(write_end)
    assert r.returncode == cli.EXIT_BROKEN_PIPE == 141
    assert r.stderr == ""


def test_rules_check_load_errors_go_to_stderr_with_the_prefix(cli_run, tmp_path):
    bad = tmp_path / "typo.egg"
    bad.write_text('(rewrite (Mull t x (Const t 1)) x :name "typo")\n\n(run 3)\n')
    code, out, err = cli_run("rules", "check", str(bad))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"eggpu: error: {bad}:1: rule 'typo': unknown constructor Mull (did you mean Mul?)",
        f"eggpu: error: {bad}:3: command 'run' is not allowed in rule files (only ruleset, rewrite, birewrite, rule)",
    ]
    code, out, err = cli_run("rules", "check", str(tmp_path / "absent.egg"))
    assert (code, out, err) == (2, "", f"eggpu: error: {tmp_path / 'absent.egg'}: rule file not found\n")


@pytest.mark.parametrize("target", ["sm_999", "sm_12"])
def test_explain_refuses_an_unknown_target_like_compile(cli_run, spec, target):
    code, out, err = cli_run("explain", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "--target", target)
    assert (code, out) == (1, "") and err.startswith(f"eggpu: error: unknown target '{target}'.")
    code2, out2, err2 = cli_run("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "--target", target)
    assert (code2, out2, err2) == (code, out, err)
    # and demo: one error line before any kernel is compiled, not a FAIL row per kernel
    code3, out3, err3 = cli_run("demo", "--kernels", "vector_add", "--target", target)
    assert (code3, out3, err3) == (code, out, err)


@pytest.mark.parametrize("value", ["-5", "0"])
def test_rules_check_refuses_a_non_positive_timeout(cli_run, value):
    code, out, err = cli_run("rules", "check", "--timeout-ms", value)
    assert code == 2 and out == ""
    assert f"argument --timeout-ms: must be a positive integer, got {int(value)}" in err
    code, _, err = cli_run("rules", "check", "--timeout-ms", "ten")
    assert code == 2 and "argument --timeout-ms: expected a positive integer, got 'ten'" in err


def test_a_constexpr_given_twice_is_an_error_naming_it(cli_run, spec):
    code, out, err = cli_run("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "-c", "BLOCK_SIZE=128")
    assert (code, out) == (2, "")
    assert err == "eggpu: error: constexpr BLOCK_SIZE is given twice (-c BLOCK_SIZE=64 and -c BLOCK_SIZE=128)\n"
    with pytest.raises(cli.UsageError, match=r"^constexpr n is given twice \(-c N=1 and -c n=2\)$"):
        cli.parse_consts(["N=1", "M=3", "n=2"])
    assert cli.parse_consts(["N=1", "M=true"]) == {"N": 1, "M": True}


@pytest.mark.parametrize("body, message", [
    ("import sys\nsys.exit(3)\n", "importing {file} failed: it called sys.exit(3)"),
    ("raise SystemExit('bye')\n", "importing {file} failed: it called sys.exit('bye')"),
    ("import eggpu\nimport eggpu.language as tl\n@eggpu.jit\ndef j(x_ptr, BLOCK: tl.constexpr):\n"
     "    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n",
     "{file}::j is an @eggpu.jit function: its parameter types come from the arguments of a launch "
     "(j[grid](*args) in Python); the command line compiles @eggpu.kernel functions, whose parameters are typed"),
], ids=["sys-exit", "raise-systemexit", "jit-function"])
def test_modules_that_exit_and_jit_functions_are_one_error_line(cli_run, tmp_path, body, message):
    f = tmp_path / "mod.py"
    f.write_text(body)
    code, out, err = cli_run("compile", f"{f}::j")
    assert (code, out) == (2, "")
    assert err == f"eggpu: error: {message.format(file=f)}\n"


@pytest.mark.parametrize("spec", ["::", "k.py::", "::add", "k.py"])
def test_a_malformed_kernel_spec_says_what_is_expected(cli_run, spec):
    code, out, err = cli_run("compile", spec)
    assert (code, out) == (2, "")
    assert err == f"eggpu: error: expected FILE.py::NAME, got {spec!r}\n"


@pytest.mark.parametrize("stages", ["0", "9"])
def test_an_out_of_range_num_stages_is_one_error_line(cli_run, spec, stages):
    code, out, err = cli_run("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "--no-opt",
                             "--num-stages", stages)
    assert code != 0 and out == ""
    assert err.startswith("eggpu: error: ") and f"num_stages must be None (automatic) or an int from 1 (no software pipelining) to 8, " \
        f"got {stages}" in err and err.count("\n") == 1, err
