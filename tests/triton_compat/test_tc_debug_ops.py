"""``tl.device_print`` and ``tl.device_assert``: Triton's run-time debugging ops.

The expected lines are built here from numpy values with Triton's format (``pid (x, y, z) idx
(i) prefix: value``, ``%f`` floats, index width ``ceil(log10(dim))``), independently of
``eggpu.ir.debug_ops``; the interpreter and ``run_cpu`` must print exactly them. An assertion
only checks under ``debug=True`` (or ``TRITON_DEBUG=1``), and then names the kernel, the source
line, the message and the first failing program and lane. The PTX calls ``vprintf`` and
``__assertfail`` and ptxas accepts it."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import CompileError, DeviceAssertionError
from eggpu.ir.parser import parse_function


@eggpu.jit
def print_ints(X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=-7)
    tl.device_print("x", x)


@eggpu.jit
def print_many(X, Y, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, 2)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    y = tl.load(Y + rows * BLOCK + cols)
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("two", x > 0.5, pid)
    tl.device_print("y = ", y)
    tl.device_print("bits", x, hex=True)
    tl.device_print(" only the prefix")


@eggpu.jit
def check_values(X, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0)
    tl.device_assert(x < limit, "x must stay below the limit", mask=offs < n)
    tl.store(X + offs, x + 1, mask=offs < n)


@eggpu.jit
def check_scalar(X, n):
    total = tl.load(X) + n
    tl.device_assert(total != 12, "the total is twelve")
    tl.store(X, total)


_ASSERT_LINE = inspect.getsourcelines(check_values.fn)[1] + 4
_SCALAR_LINE = inspect.getsourcelines(check_scalar.fn)[1] + 3


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def _expected_ints(x: np.ndarray, n: int, block: int) -> list[str]:
    w = math.ceil(math.log10(block))
    out = []
    for p in range(-(-n // block)):
        for i in range(block):
            k = p * block + i
            v = int(x[k]) if k < n else -7
            out.append(f"pid ({p}, 0, 0) idx ({i:>{w}}) x: {v}")
    return out


@pytest.mark.parametrize("n, block", [(1, 16), (1000, 256), (1001, 128)])
@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_device_print_prints_every_lane_in_tritons_format(n, block, device, monkeypatch, capsys):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x = (np.arange(n, dtype=np.int32) * 7 - 500).astype(np.int32)
    print_ints[(-(-n // block),)](x, n, BLOCK=block)
    assert _lines(capsys) == _expected_ints(x, n, block)


@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_device_print_operands_floats_bools_hex_and_2d_indices(device, monkeypatch, capsys):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x = np.array([0.25, 1.5, -2.0, 0.75], np.float32)
    y = np.arange(8, dtype=np.float64) / 8 - 0.3
    print_many[(2,)](x, y, BLOCK=4)
    lines = _lines(capsys)
    want = []
    for p in range(2):
        want += [f"pid ({p}, 0, 0) idx ({i}) two: (operand 0) {int(v > 0.5)}" for i, v in enumerate(x)]
        want.append(f"pid ({p}, 0, 0) idx () two: (operand 1) {p}")
        want += [f"pid ({p}, 0, 0) idx ({r}, {c}) y =: {y[r * 4 + c]:f}" for r in range(2) for c in range(4)]
        want += [f"pid ({p}, 0, 0) idx ({i}) bits: 0x{int(v.view(np.uint32)):08x}" for i, v in enumerate(x)]
        want.append(f"pid ({p}, 0, 0) only the prefix")
    assert lines == want


def test_the_prefix_is_normalized_as_triton_does():
    from eggpu.ir.debug_ops import normalize_prefix

    assert normalize_prefix("x", 1) == " x: "
    assert normalize_prefix("", 2) == ": "
    assert normalize_prefix("val: ", 1) == " val: "
    assert normalize_prefix("no values", 0) == "no values"


@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_device_assert_compiles_to_nothing_without_debug(device, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    monkeypatch.delenv("TRITON_DEBUG", raising=False)
    x = np.arange(1001, dtype=np.int32)
    check_values[(8,)](x, 1001, 5, BLOCK=128)
    np.testing.assert_array_equal(x, np.arange(1001) + 1)


@pytest.mark.parametrize("device", ["interpret", "cpu"])
@pytest.mark.parametrize("n, bad, block", [(1000, 517, 128), (1001, 3, 256)])
def test_a_failing_assert_names_kernel_line_message_program_and_lane(device, n, bad, block, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x = np.zeros(n, dtype=np.int32)
    x[bad] = 9
    x[bad + 2] = 11  # a later failing lane: the first one is reported
    with pytest.raises(DeviceAssertionError) as e:
        check_values[(-(-n // block),)](x, n, 9, BLOCK=block, debug=True)
    first, line, caret = str(e.value).splitlines()
    pid, lane = divmod(bad, block)
    assert first == (f"{check_values.fn.__code__.co_filename}:{_ASSERT_LINE}:5: check_values: device_assert "
                     f"failed in program {pid}, lane ({lane},): x must stay below the limit")
    assert "tl.device_assert(x < limit" in line and caret.strip() == "^"
    # the programs before the failing one ran; the failing program stopped at the assert
    assert (x[:pid * block] == 1).all() and x[bad] == 9


@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_a_scalar_assert_and_triton_debug_from_the_environment(device, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    monkeypatch.setenv("TRITON_DEBUG", "1")
    x = np.array([5], np.int32)
    check_scalar[(1,)](x, 6)  # 11: holds
    assert x[0] == 11
    with pytest.raises(DeviceAssertionError, match=f":{_SCALAR_LINE}:5: check_scalar: device_assert failed in "
                                                   "program 0: the total is twelve"):
        check_scalar[(3,)](np.array([6], np.int32), 6)
    check_scalar[(1,)](np.array([6], np.int32), 6, debug=False)  # the launch option wins


def test_debug_is_a_compile_option_and_part_of_the_cache_key(tmp_path):
    x = np.zeros(16, np.int32)
    kern = check_values.specialize(x, 16, 3, BLOCK=16)
    plain = eggpu.compile(kern, cache=str(tmp_path))
    checked = eggpu.compile(kern, cache=str(tmp_path), debug=True)
    assert plain.report["options"]["debug"] is False and checked.report["options"]["debug"] is True
    assert "__assertfail" not in plain.ptx and "__assertfail" in checked.ptx
    again = eggpu.compile(kern, cache=str(tmp_path), debug=True)
    assert again.report["cache"] == "hit"
    x[4] = 3
    with pytest.raises(DeviceAssertionError, match=r"check_values: device_assert failed in program 0, lane \(4,\)"):
        again.run_cpu((1,), x, 16, 3)  # from the cache: the message and the line come from the IR text
    with pytest.raises(CompileError, match="debug must be True, False or None"):
        eggpu.compile(kern, cache=False, debug="yes")


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_the_ptx_calls_vprintf_and_assertfail_and_ptxas_accepts_it(target, ptxas_registers):
    x = np.zeros(1000, np.int32)
    ck = eggpu.compile(print_ints.specialize(x, 1000, BLOCK=256), target=target, cache=False)
    assert "call.uni (retval0), vprintf" in ck.ptx and "pid (%u, %u, %u) idx (%3u) x: %i" in ck.llvm_ir
    assert ptxas_registers(ck.ptx, target) > 0
    ck = eggpu.compile(check_values.specialize(x, 1000, 3, BLOCK=256), target=target, cache=False, debug=True)
    assert "__assertfail" in ck.ptx and "x must stay below the limit" in ck.llvm_ir
    assert ptxas_registers(ck.ptx, target) > 0
    y = np.zeros(8, np.float64)
    ck = eggpu.compile(print_many.specialize(x[:4].astype(np.float32), y, BLOCK=4), target=target, cache=False)
    assert "bits: 0x%08x" in ck.llvm_ir and "y =: %f" in ck.llvm_ir and ptxas_registers(ck.ptx, target) > 0


def test_the_ir_of_debug_ops_prints_and_parses_back():
    x = np.zeros(16, np.int32)
    fn = check_values.specialize(x, 16, 3, BLOCK=16).ir()
    text = str(fn)
    assert 'device_assert(' in text and 'msg="x must stay below the limit"' in text
    assert str(parse_function(text)) == text
    fn = print_many.specialize(x[:4].astype(np.float32), np.zeros(8), BLOCK=4).ir()
    assert str(parse_function(str(fn))) == str(fn) and 'prefix=" y =: "' in str(fn)


@pytest.mark.parametrize("body, message", [
    ("tl.device_print(n, n)", "tl.device_print: prefix must be a compile-time string"),
    ("tl.device_print('p', X)", "tl.device_print: value 0 is a pointer"),
    ("tl.device_print('caf\\u00e9', n)", "is not printable ASCII"),
    ("tl.device_assert(n > 0, n)", "tl.device_assert: msg must be a compile-time string"),
])
def test_misuse_is_a_located_compile_error(body, message, tmp_path, monkeypatch):
    src = tmp_path / "bad_debug.py"
    src.write_text("import eggpu\nimport eggpu.language as tl\n\n\n@eggpu.jit\ndef bad(X, n):\n"
                   f"    {body}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = __import__("bad_debug")
    try:
        with pytest.raises(CompileError) as e:
            mod.bad.specialize(np.zeros(4, np.int32), 3).ir()
    finally:
        import sys

        sys.modules.pop("bad_debug", None)
    assert message in str(e.value) and "bad_debug.py:7:" in str(e.value) and "^" in str(e.value)


def test_the_command_line_compiles_with_debug(tmp_path):
    import os
    import subprocess
    import sys

    src = tmp_path / "checked.py"
    src.write_text("import eggpu\nimport eggpu.language as tl\n\n\n@eggpu.kernel\n"
                   "def checked(x_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr):\n"
                   "    offs = tl.arange(0, BLOCK)\n"
                   "    tl.device_assert(tl.load(x_ptr + offs) < n, \"too big\")\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_DEBUG"}
    env["EGGPU_CACHE_DIR"] = str(tmp_path / "cache")

    def ptx(*extra: str) -> str:
        r = subprocess.run([sys.executable, "-m", "eggpu", "compile", f"{src}::checked", "-c", "BLOCK=16", *extra],
                           capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert "__assertfail" in ptx("--debug") and "__assertfail" not in ptx()


@eggpu.jit
def print_pair(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("h", x, hex=True)
    tl.device_print("v", x, tl.load(Y + tl.arange(0, BLOCK)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "uint64", "int64", "bool", "float64"])
def test_interpret_and_run_cpu_print_the_same_bits_for_every_dtype(dtype, monkeypatch, capsys):
    import ml_dtypes

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**63, 8).astype(dt) if dtype == "uint64" else (rng.standard_normal(8) * 100).astype(dt)
    if dtype == "float16":
        x[:3] = [np.nan, -np.inf, -0.0]
    out = {}
    for device in ("interpret", "cpu"):
        monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
        print_pair[(1,)](x, np.arange(8, dtype=np.int64) - 4, BLOCK=8)
        out[device] = _lines(capsys)
    assert out["interpret"] == out["cpu"] and len(out["cpu"]) == 24
    bits = x.view(f"u{dt.itemsize}") if dtype != "bool" else x.astype(np.uint8)
    width = {"bool": 1}.get(dtype, 2 * dt.itemsize)
    assert out["cpu"][:8] == [f"pid (0, 0, 0) idx ({i}) h: 0x{int(b):0{width}x}" for i, b in enumerate(bits)]
    assert out["cpu"][8 + 3] == "pid (0, 0, 0) idx (3) v: (operand 0) " + (
        f"{float(x[3]):f}" if dt.kind == "f" or dtype == "bfloat16" else str(int(x[3])))
    assert out["cpu"][16 + 3] == "pid (0, 0, 0) idx (3) v: (operand 1) -1"


@eggpu.jit
def python_assert(t_ptr, o_ptr, n, C, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    t = tl.load(t_ptr + offs, mask=offs < n, other=0)
    assert t >= 0 and t < C, "target out of range"
    tl.store(o_ptr + offs, t * 2, mask=offs < n)


_PY_ASSERT_LINE = python_assert.fn.__code__.co_firstlineno + 4


@pytest.mark.parametrize("device", ["interpret", "cpu"])
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_python_assert_on_runtime_values_is_a_device_assert(device, n, monkeypatch):
    """Triton compiles `assert cond, msg` on a runtime value as tl.device_assert(cond, msg) (FlagGems'
    nll_loss checks its targets so): nothing without debug, the located failure with it."""
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    monkeypatch.delenv("TRITON_DEBUG", raising=False)
    t = np.arange(n, dtype=np.int64) % 7
    out = np.zeros(n, np.int64)
    grid = (-(-n // 256),)
    python_assert[grid](t, out, n, 7, BLOCK=256)
    np.testing.assert_array_equal(out, t * 2)
    python_assert[grid](t, out, n, 7, BLOCK=256, debug=True)  # every target holds
    t[n - 1] = 7
    python_assert[grid](t, out, n, 7, BLOCK=256)  # not checked without debug
    with pytest.raises(DeviceAssertionError) as e:
        python_assert[grid](t, out, n, 7, BLOCK=256, debug=True)
    pid, lane = divmod(n - 1, 256)
    assert str(e.value).splitlines()[0] == (f"{python_assert.fn.__code__.co_filename}:{_PY_ASSERT_LINE}:5: "
                                            f"python_assert: device_assert failed in program {pid}, lane ({lane},): "
                                            f"target out of range")


@eggpu.jit
def python_assert_bad_message(x_ptr):
    x = tl.load(x_ptr)
    assert x > 0, x


def test_python_assert_message_must_be_a_string():
    with pytest.raises(eggpu.CompileError, match=r":\d+:19: the message of an assert on a runtime value must be a "
                       r"compile-time string, got a scalar of type f32"):
        python_assert_bad_message.specialize(np.zeros(1, np.float32)).ir()
