"""Bad input a careless or hostile user tries (issue 9): each is one clear EggpuError naming the
kernel, the argument or the keyword, never a raw traceback. Grid functions that raise or
return junk, unknown keywords with a close-match hint, junk option values, compile_many with
junk instances, interpret on a non-kernel, and the command line's -o "", FILE that is a
directory, a device or a FIFO, and -c without a NAME."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import checked_call
from eggpu.ir.interp import interpret


@eggpu.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


@eggpu.kernel
def add_two(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 2, mask=m)


@pytest.fixture
def arrays():
    return np.arange(1001, dtype=np.float32), np.zeros(1001, np.float32)


@pytest.fixture(autouse=True)
def interpreted(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")


# ---------------------------------------------------------------------- @eggpu.jit grids


def _missing_key(meta):
    return (meta["BLOCK_SIZE"],)


def test_a_grid_function_raising_key_error_names_the_kernel_and_the_key(arrays):
    x, y = arrays
    with pytest.raises(eggpu.LaunchError, match=r"add_one: the grid function raised KeyError: 'BLOCK_SIZE' "
                       r"\(it reads meta\['BLOCK_SIZE'\]; the launch passed BLOCK, n, x_ptr, y_ptr\)"):
        add_one[_missing_key](x, y, 1001, BLOCK=128)


@pytest.mark.parametrize("grid, message", [
    (lambda meta: 1 // 0, "the grid function raised ZeroDivisionError: integer division or modulo by zero"),
    (lambda: (1,), r"the grid function raised TypeError: .*takes 0 positional arguments but 1 was given"),
    (lambda meta: "eight", r"grid must be an int or a tuple of 1 to 3 ints, got 'eight'"),
    (lambda meta: None, r"grid must be an int or a tuple of 1 to 3 ints, got None"),
    (lambda meta: (2.5,), r"grid must be an int or a tuple of 1 to 3 ints, got \(2.5,\)"),
    (None, r"grid must be an int or a tuple of 1 to 3 ints, got None"),
    (1.5, r"grid must be an int or a tuple of 1 to 3 ints, got 1.5"),
    ((-3,), r"grid dimensions must be >= 0, got \(-3,\)"),
    ((1, 1, 1, 2), r"grid \(1, 1, 1, 2\) has 4 axes; a grid has at most 3 \(x, y, z\) and entries past the third "
                   r"may only be 1"),
])
def test_bad_grids_are_launch_errors(arrays, grid, message):
    x, y = arrays
    with pytest.raises(eggpu.LaunchError, match="add_one: " + message):
        add_one[grid](x, y, 1001, BLOCK=128)
    assert not y.any()  # nothing ran


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_numpy_and_zero_grids_still_run(arrays, n):
    x, y = arrays
    add_one[(np.int64(0),)](x, y, n, BLOCK=128)  # a zero grid runs nothing
    assert not y.any()
    add_one[lambda meta: (np.int32(eggpu.cdiv(meta["n"], meta["BLOCK"])),)](x, y, np.int32(n), BLOCK=128)
    assert np.array_equal(y[:n], x[:n] + 1) and not y[n:].any()


# ---------------------------------------------------------------------- eggpu.compile and friends


def test_compile_names_an_unknown_keyword_with_a_close_match():
    k = add_two.Kernel(64)
    with pytest.raises(eggpu.CompileError, match=r"eggpu.compile: unknown keyword argument 'optimse'; "
                       r"did you mean 'optimize'\? \(known: kernel, target, optimize"):
        eggpu.compile(k, optimse=False)
    with pytest.raises(eggpu.CompileError, match=r"eggpu.compile: unknown keyword argument 'bogus' \(known: "):
        eggpu.compile(k, bogus=1)
    with pytest.raises(eggpu.CompileError, match=r"eggpu.compile takes at most 2 positional arguments "
                       r"\(kernel, target\), got 3"):
        eggpu.compile(k, "sm_90", False)


@pytest.mark.parametrize("kw, message", [
    ({"offsets_i32": "yes"}, "offsets_i32 must be True or False, got 'yes'"),
    ({"progress": 7}, "progress must be None or a function called with each stage's name, got 7"),
])
def test_compile_rejects_junk_option_values(kw, message):
    with pytest.raises(eggpu.CompileError, match=message):
        eggpu.compile(add_two.Kernel(64), cache=False, **kw)


def test_checked_call_passes_good_calls_through_and_keeps_the_signature():
    @checked_call("demo")
    def f(a, b=2, *, c=3):
        return a + b + c

    assert f(1) == 6 and f(1, 5, c=0) == 6 and f.__name__ == "f"
    with pytest.raises(eggpu.CompileError, match=r"demo: unknown keyword argument 'cc'; did you mean 'c'\?"):
        f(1, cc=1)
    import inspect

    assert list(inspect.signature(eggpu.compile).parameters)[:2] == ["kernel", "target"]


@pytest.mark.parametrize("instances, message", [
    (5, "got int 5"),
    ("add_two", "got str 'add_two'"),
    (add_two.Kernel(32), r"got one kernel instance \(add_two add_two__32\); pass a list"),
])
def test_compile_many_rejects_junk_instances(instances, message):
    with pytest.raises(eggpu.CompileError, match=r"compile_many: instances must be an iterable of kernel "
                       r"instances \(a list, a generator\), " + message):
        eggpu.compile_many(instances)


def test_compile_many_reports_a_generator_that_raises():
    def gen():
        yield add_two.Kernel(32)
        raise ValueError("ran dry at 2")

    with pytest.raises(eggpu.CompileError, match="compile_many: iterating over instances raised ValueError: ran dry at 2"):
        eggpu.compile_many(gen())


def test_compile_many_junk_elements_fail_one_by_one():
    res = eggpu.compile_many([1, None], workers=1)
    assert len(res.failures) == 2


def test_run_cpu_takes_no_keywords(arrays):
    x, y = arrays
    ck = eggpu.compile(add_two.Kernel(128), optimize=False, cache=False, target="sm_80")
    with pytest.raises(eggpu.LaunchError, match=r"add_two: run_cpu takes the launch arguments positionally "
                       r"\(x_ptr, y_ptr, n\), got keyword 'n'"):
        ck.run_cpu(8, x, y, n=1001)
    with pytest.raises(eggpu.LaunchError, match="add_two: launch takes the launch arguments positionally"):
        ck.launch(8, x, y, n=1000)
    ck.run_cpu(8, x, y, 1000)
    assert np.array_equal(y[:1000], x[:1000] + 2) and y[1000] == 0


# ---------------------------------------------------------------------- interpret


def test_interpret_on_something_that_is_not_an_ir_function(arrays):
    x, y = arrays
    with pytest.raises(eggpu.InterpreterError, match=r"interpret runs an IR Function \(a kernel instance's "
                       r"\.ir\(\)\), got a AddTwo; call add_two.interpret\(grid, \.\.\.\) on the kernel instance"):
        interpret(add_two.Kernel(64), 1, x, y, 10)
    with pytest.raises(eggpu.InterpreterError, match=r"got a int$"):
        interpret(17, 1, x, y, 10)


def test_kernel_interpret_called_on_the_class(arrays):
    x, y = arrays
    with pytest.raises(eggpu.LaunchError, match="interpret is called on a kernel instance: construct the Kernel "
                       "class with its constexpr values first .*called on the class with 3 in place of the instance"):
        add_two.Kernel.interpret(3, x, y, 10)


# ---------------------------------------------------------------------- the command line


@pytest.mark.parametrize("output", ["", "  "])
def test_cli_empty_output_name(cli_run, spec, output):
    code, out, err = cli_run("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "-o", output)
    assert (code, out) == (2, "")
    assert err == f"eggpu: error: -o needs a file name, got {output!r} (leave -o out, or write -o -, for stdout)\n"


def test_cli_output_dash_is_stdout(cli_run, spec):
    code, out, err = cli_run("compile", spec, "--dtype", "f32", "-c", "BLOCK_SIZE=64", "--no-opt",
                             "--emit", "ir", "-o", "-")
    assert code == 0 and out.startswith("kernel scale(") and not Path("-").exists()


def test_cli_file_that_is_a_directory_a_device_or_a_fifo(cli_run, tmp_path):
    code, out, err = cli_run("compile", f"{tmp_path}::k", "-c", "B=1")
    assert code == 2 and err == f"eggpu: error: {tmp_path} is a directory; name a Python file in it (FILE.py::NAME)\n"
    code, out, err = cli_run("explain", "/dev/null::k")
    assert code == 2 and err == ("eggpu: error: /dev/null is a character device, not a Python file "
                                 "(only regular files are read)\n")
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)  # never opened: reading it would block forever
    code, out, err = cli_run("compile", f"{fifo}::k")
    assert code == 2 and err == f"eggpu: error: {fifo} is a FIFO, not a Python file (only regular files are read)\n"
    code, out, err = cli_run("compile", f"{tmp_path / 'gone.py'}::k")
    assert code == 2 and err == f"eggpu: error: no such file: {tmp_path / 'gone.py'}\n"


@pytest.mark.parametrize("const", ["=64", " =8", "BLOCK_SIZE"])
def test_cli_constexpr_without_a_name_or_value(cli_run, spec, const):
    code, out, err = cli_run("compile", spec, "--dtype", "f32", "-c", const)
    assert code == 2 and err == f"eggpu: error: constexpr must be NAME=VALUE, got {const!r}\n"


def test_cli_junk_dtype(cli_run, spec):
    code, out, err = cli_run("compile", spec, "--dtype", "f33", "-c", "BLOCK_SIZE=64")
    assert code == 2 and err.startswith("eggpu: error: unknown dtype 'f33'")
