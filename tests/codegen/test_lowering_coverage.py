"""Coverage of the lowering: every IR op has a lowering (or a stated reason), and every library
kernel, for every dtype it supports, runs on the host exactly like the interpreter and numpy and
assembles with ptxas for sm_80 and sm_90."""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.codegen import lower_ops
from eggpu.codegen.lower_ops import STRUCTURAL, TABLE, UNSUPPORTED
from eggpu.ir.ops import OPS


def test_every_op_is_lowered_or_listed_with_a_reason():
    covered = set(TABLE) | set(STRUCTURAL) | set(UNSUPPORTED)
    missing = sorted(set(OPS) - covered)
    assert not missing, f"ops without a lowering and without a reason: {missing}"
    unknown = sorted(covered - set(OPS))
    assert not unknown, f"lowerings for ops the op table does not have: {unknown}"
    assert not (set(TABLE) & set(UNSUPPORTED)), "an op is both lowered and unsupported"
    for name, reason in UNSUPPORTED.items():
        assert isinstance(reason, str) and len(reason) > 10, f"{name}: give a real reason"


def test_unsupported_op_raises_codegen_error(monkeypatch):
    from eggpu.codegen import lower, lower_ops
    from eggpu.ir import Builder, f32, pointer
    from eggpu.ir.errors import CodegenError

    b = Builder("uses_exp", [("x", pointer(f32))])
    b.effect("store", b.param("x"), b.op("exp", b.op("load", b.param("x"))))
    fn = b.finish()
    monkeypatch.delitem(lower_ops.TABLE, "exp")
    monkeypatch.setitem(lower_ops.UNSUPPORTED, "exp", "not available in this test")
    with pytest.raises(CodegenError, match=r"uses_exp in exp: op 'exp' cannot be lowered: not available in this test"):
        lower(fn, "host")


# ---------------------------------------------------------------- the kernel library


def _library():
    try:
        from eggpu.kernels import LIBRARY
    except ImportError:  # pragma: no cover - the library is part of the repository
        return []
    return LIBRARY


_PARAMS = [pytest.param(lk, dt, id=f"{lk.name}-{dt}") for lk in _library() for dt in lk.dtypes]


@pytest.fixture(scope="module")
def ptxas_available():
    """None when ptxas and libdevice are found, else why not."""
    from eggpu.codegen.toolchain import find_libdevice, find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
        find_libdevice()
    except ToolchainError as e:
        return str(e)
    return None


@pytest.mark.parametrize("lk,dt", _PARAMS)
def test_library_kernel_host_equals_interpreter_and_numpy(lk, dt, jit, ptxas_available):
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.kernels import assert_close

    compiled: set = set()
    for size in lk.sizes:
        case = lk.make_case(size, dt, np.random.default_rng(0))
        fn = lk.instance(case).ir()
        hk = jit(fn)
        got = case.run(hk.run)
        lk.check(case, got)  # host == numpy (float64 reference) within the kernel's tolerances
        want = lk.interpret(case)
        for name in case.outputs:
            assert_close(got[name], want[name], lk.tolerance(dt, name), what=f"{case}: host vs interpreter, {name}")
        if case.consts in compiled:
            continue
        compiled.add(case.consts)
        if ptxas_available is not None:
            continue
        for target in ("sm_80", "sm_90"):
            c = compile_ptx_module(fn, target)
            assert f".visible .entry {fn.name}_entry_point(" in c.ptx
            rep = run_ptxas(c.ptx, target)
            assert rep.spills_stores == 0 and rep.spills_loads == 0, f"{fn.name} spills on {target}: {rep}"
    if ptxas_available is not None:
        pytest.skip(f"host checked; PTX not built or assembled: {ptxas_available}")


def test_the_debug_handlers_are_the_debug_modules_and_load_on_first_use():
    """lower_ops lists every debug op lower_debug lowers; lower_debug (and host_debug) are imported
    by the first debug op, not by loading the op table (a fresh interpreter, so nothing else has
    imported them)."""
    import subprocess
    import sys

    from eggpu.codegen import lower_debug

    assert set(lower_ops.DEBUG_OPS) == set(lower_debug.HANDLERS)
    code = ("import sys\nfrom eggpu.codegen import lowering, lower_ops\n"
            "print(sorted(m for m in ('eggpu.codegen.lower_debug', 'eggpu.codegen.host_debug') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("module", ["lower_libdevice", "lower_debug", "lower_ops"])
def test_a_handler_module_imports_first_in_a_fresh_interpreter(module):
    """lower_ops builds its table from the handler modules when it loads: importing one of them
    before lower_ops must not meet a half-initialized module (a circular import)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", f"import eggpu.codegen.{module}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
