"""The parsed-source cache (kernel_macro.diagnostics.Source) keeps modules apart: two files with
identical kernel text (equal code objects: code equality ignores the file) each get their own
source, so errors name the right file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from eggpu.kernel_macro.diagnostics import KernelCompileError, Source

TWIN = '''import eggpu
import eggpu.language as tl


@eggpu.kernel
def twin(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    print(x)
'''


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_identical_kernels_in_two_files_blame_their_own_file(tmp_path):
    paths = []
    for sub in ("first", "second", "third"):
        (tmp_path / sub).mkdir()
        p = tmp_path / sub / "twin_kernel.py"
        p.write_text(TWIN)
        paths.append(p)
    modules = [_load(p, f"eggpu_test_twin_{i}") for i, p in enumerate(paths)]
    assert modules[0].twin.__code__ == modules[1].twin.__code__  # the trap: equal code objects
    for p, m in zip(paths, modules):
        with pytest.raises(KernelCompileError) as e:
            m.twin.Kernel(BLOCK=4).ir()
        assert str(e.value).splitlines()[0] == f"{p}:9:5: print() is not supported in a kernel"
        assert Source.of(m.twin).file == str(p)
