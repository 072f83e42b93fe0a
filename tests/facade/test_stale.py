"""The caches (on disk and the in-process IR cache) never serve a compile of other inputs: module
globals a kernel reads (by value), helpers it inlines wherever they are defined, across processes."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir import cachefs
from eggpu.kernel_macro.diagnostics import KernelCompileError


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # rewritten modules must not reload a stale .pyc
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cachefs, "_WARNED", set())
    return tmp_path


def _write(path: Path, text: str) -> None:
    path.write_text(textwrap.dedent(text))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # linecache/inspect see a change


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


SCALED = """
import sys
import eggpu
import eggpu.language as tl

SCALE = {scale}

@eggpu.kernel
def scaled(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x * SCALE, mask=offs < n)
"""


def _run(ck, n: int = 37) -> np.ndarray:
    x = np.arange(n, dtype=np.float32) - 5
    y = np.zeros(n, np.float32)
    ck.run_cpu((n + 31) // 32, x, y, n)
    return y


def _interp(k, n: int = 37) -> np.ndarray:
    x = np.arange(n, dtype=np.float32) - 5
    y = np.zeros(n, np.float32)
    k.interpret((n + 31) // 32, x, y, n)
    return y


def test_rebinding_a_module_constant_recompiles_in_process(tmp_path: Path) -> None:
    (tmp_path / "stale_scale_a.py").write_text(SCALED.format(scale="2.0"))
    mod = _load(tmp_path / "stale_scale_a.py", "stale_scale_a")
    k = mod.Scaled(32)
    x = np.arange(37, dtype=np.float32) - 5
    first = eggpu.compile(k, optimize=False)
    np.testing.assert_array_equal(_run(first), x * 2.0)
    assert eggpu.compile(k, optimize=False).report["cache"] == "hit"
    mod.SCALE = 7.0  # e.g. SCALE = float(sys.argv[1]) in another run
    again = eggpu.compile(k, optimize=False)
    assert again.report["cache"] == "miss"
    np.testing.assert_array_equal(_run(again), x * 7.0)
    # the in-process IR cache follows too (interpret and ir() lower again)
    np.testing.assert_array_equal(_interp(k), x * 7.0)
    mod.SCALE = 2.0  # back to the first value: the first entry is served again
    back = eggpu.compile(k, optimize=False)
    assert back.report["cache"] == "hit" and back.ptx == first.ptx
    np.testing.assert_array_equal(_interp(k), x * 2.0)


def test_ir_cache_is_keyed_on_what_the_kernel_reads(tmp_path: Path) -> None:
    (tmp_path / "stale_ir_mod.py").write_text(SCALED.format(scale="3"))
    mod = _load(tmp_path / "stale_ir_mod.py", "stale_ir_mod")
    k = mod.Scaled(16)
    a = str(k.ir())
    assert str(k.ir()) == a  # cached: same snapshot
    mod.SCALE = 4
    b = str(k.ir())
    assert b != a and "4" in b
    mod.SCALE = -0.0  # a float, by value (not equal-as-number to an int 0 entry)
    assert str(k.ir()) != b


SUBPROCESS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import eggpu
import argv_scale
ck = eggpu.compile(argv_scale.Scaled(32), optimize=False)
x = np.arange(37, dtype=np.float32) - 5
y = np.zeros(37, np.float32)
ck.run_cpu(2, x, y, 37)
argv_scale.SCALE = 2.0  # what the first process computed: its entry must be found
other = eggpu.compile(argv_scale.Scaled(32), optimize=False).report["cache"]
print(json.dumps({"cache": ck.report["cache"], "y": y.tolist(), "other": other}))
"""


def test_constant_computed_from_argv_across_fresh_processes(tmp_path: Path) -> None:
    (tmp_path / "argv_scale.py").write_text(SCALED.format(scale="float(sys.argv[2])"))
    env = dict(os.environ, EGGPU_CACHE_DIR=str(tmp_path / "cache"))

    def run(scale: str) -> dict:
        out = subprocess.run([sys.executable, "-c", SUBPROCESS, str(tmp_path), scale], env=env,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    x = np.arange(37, dtype=np.float32) - 5
    two = run("2")  # python prog.py 2
    seven = run("7")  # python prog.py 7: must not reuse the kernel compiled for 2
    assert two["cache"] == "miss" and seven["cache"] == "miss"
    np.testing.assert_array_equal(np.array(two["y"], np.float32), x * 2)
    np.testing.assert_array_equal(np.array(seven["y"], np.float32), x * 7)
    assert seven["other"] == "hit"  # the key is stable across processes


HELPER = """
import eggpu

@eggpu.jit
def twist(x):
    return x * {factor}
"""

USER = """
import eggpu
import eggpu.language as tl
import stale_helpers

@eggpu.kernel
def twisted(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, stale_helpers.twist(x), mask=offs < n)
"""


def test_helper_in_another_module_edited_and_reloaded(tmp_path: Path) -> None:
    helpers = tmp_path / "stale_helpers.py"
    _write(helpers, HELPER.format(factor="2.0"))
    (tmp_path / "stale_user.py").write_text(textwrap.dedent(USER))
    helper_mod = importlib.import_module("stale_helpers")
    user = _load(tmp_path / "stale_user.py", "stale_user")
    k = user.Twisted(32)
    x = np.arange(37, dtype=np.float32) - 5
    np.testing.assert_array_equal(_run(eggpu.compile(k, optimize=False)), x * 2.0)
    np.testing.assert_array_equal(_interp(k), x * 2.0)
    _write(helpers, HELPER.format(factor="5.25"))
    importlib.reload(helper_mod)
    ck = eggpu.compile(k, optimize=False)
    assert ck.report["cache"] == "miss"
    np.testing.assert_array_equal(_run(ck), x * 5.25)
    np.testing.assert_array_equal(_interp(k), x * 5.25)
    assert eggpu.compile(k, optimize=False).report["cache"] == "hit"


@pytest.mark.parametrize("value, shown", [("[2.0, 3.0]", "(2.0, 3.0)"), ("[1, 2, 3, 4, 5]", "(1, 2, 3, ...)")])
def test_module_level_list_is_a_clear_compile_error(tmp_path: Path, value: str, shown: str) -> None:
    name = f"stale_list_{len(value)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(f"""
        import eggpu
        import eggpu.language as tl

        FACTORS = {value}

        @eggpu.kernel
        def listy(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * FACTORS[0])
    """))
    mod = _load(tmp_path / f"{name}.py", name)
    with pytest.raises(KernelCompileError) as e:
        mod.Listy(16).ir()
    msg = str(e.value)
    assert "FACTORS is a list" in msg and f"FACTORS = {shown}" in msg


def test_a_module_passed_as_a_value_is_compiled_without_the_cache(tmp_path: Path) -> None:
    (tmp_path / "stale_cfg.py").write_text("FACTOR = 3.0\n")
    (tmp_path / "stale_opaque.py").write_text(textwrap.dedent("""
        import eggpu
        import eggpu.language as tl
        import stale_cfg

        def times(x, cfg):
            return x * cfg.FACTOR

        @eggpu.kernel
        def opaque(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
            tl.store(y_ptr + offs, times(x, stale_cfg), mask=offs < n)
    """))
    cfg = importlib.import_module("stale_cfg")
    mod = _load(tmp_path / "stale_opaque.py", "stale_opaque")
    k = mod.Opaque(32)
    x = np.arange(37, dtype=np.float32) - 5
    with pytest.warns(cachefs.CacheWarning, match=r"opaque is compiled without the cache: .*module stale_cfg"):
        ck = eggpu.compile(k, optimize=False)
    assert ck.report["cache"] == "bypass"
    np.testing.assert_array_equal(_run(ck), x * 3.0)
    cfg.FACTOR = 4.5  # read through a parameter: not trackable, so never cached, never stale
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is given once
        ck = eggpu.compile(k, optimize=False)
    np.testing.assert_array_equal(_run(ck), x * 4.5)
    np.testing.assert_array_equal(_interp(k), x * 4.5)


def test_dependencies_of_a_library_kernel_are_its_helpers() -> None:
    from eggpu.kernels import get

    deps = get("softmax_forward").fn.Kernel[tl.f32](128).dependencies()
    assert deps.opaque is None
    names = [f["fn"] for f in deps.description]
    assert names[0].endswith("softmax.softmax_forward")
    assert any(n.endswith("common.compute_dtype") for n in names)
    assert all("source" in f for f in deps.description)
