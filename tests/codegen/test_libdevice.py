"""Linking only the libdevice functions a kernel calls (eggpu.codegen.libdevice).

The subset must not change the PTX: every library kernel that calls libdevice is compiled with
the subset and with the whole of libdevice linked (the path before the subset existed), in both
floating-point modes, and the PTX compared byte for byte.
"""

from __future__ import annotations

import functools
import re
import shutil

import numpy as np
import pytest

from eggpu.codegen import compile_ptx_module, libdevice, ptx, toolchain
from eggpu.codegen.libdevice import LibdeviceMissing, libdevice_subset
from eggpu.codegen.ptx import emit_ptx, target_machine
from eggpu.ir.errors import CodegenError
from eggpu.kernels import LIBRARY

pytestmark = pytest.mark.usefixtures("needs_libdevice")


def _args():
    tm = target_machine("sm_90")
    return ("nvptx64-nvidia-cuda", str(tm.target_data),
            lambda: ptx._pass_builder(tm, ptx.DEFAULT_PTX_OPTIONS, 0))


def _defined(mod) -> list[str]:
    return [f.name for f in mod.functions if not f.is_declaration]


@pytest.fixture(autouse=True)
def _fresh_cache():
    libdevice.clear_cache()
    yield
    libdevice.clear_cache()


def _whole_libdevice(names, triple, data_layout, new_pass_builder, *, context=None):
    """The link input before subsets: all of libdevice, names checked after parsing."""
    import llvmlite.binding as llvm

    mod = llvm.parse_bitcode(toolchain.find_libdevice().read_bytes(), context=context)
    missing = [n for n in names if n not in {f.name for f in mod.functions if not f.is_declaration}]
    if missing:
        raise LibdeviceMissing(missing)
    mod.triple, mod.data_layout = triple, data_layout
    return mod


@functools.cache
def _libdevice_cases() -> tuple:
    """(kernel name, dtype, IR) of every library kernel whose PTX module calls libdevice."""
    out = []
    for lk in LIBRARY:
        for dt in lk.dtypes:
            case = lk.make_case(lk.sizes[-1], dt, np.random.default_rng(0))
            fn = lk.instance(case).ir()
            if "__nv_" in compile_ptx_module(fn, "sm_90").llvm_ir:
                out.append((lk.name, str(dt), fn))
    return tuple(out)


@pytest.mark.parametrize("target", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow)])
def test_subset_ptx_is_byte_identical_to_linking_all_of_libdevice(monkeypatch, target):
    cases = _libdevice_cases()
    assert len(cases) >= 5, [c[:2] for c in cases]  # gelu, softmax, norms, losses call libdevice
    for fast_math in (False, True):
        subset = [compile_ptx_module(fn, target, fast_math=fast_math) for _, _, fn in cases]
        with monkeypatch.context() as m:
            m.setattr(ptx, "libdevice_subset", _whole_libdevice)
            whole = [compile_ptx_module(fn, target, fast_math=fast_math) for _, _, fn in cases]
        for (name, dt, _), a, b in zip(cases, subset, whole):
            assert a.ptx == b.ptx, f"{name}[{dt}] fast_math={fast_math} {target}"
            # the same functions survive; only the order of intrinsic declarations may differ
            assert sorted(a.llvm_ir_optimized.splitlines()) == sorted(b.llvm_ir_optimized.splitlines())


def test_subset_holds_the_names_and_what_they_reach_only():
    triple, dl, pb = _args()
    mod = libdevice_subset(("__nv_expf",), triple, dl, pb)
    assert "__nv_expf" in _defined(mod)
    assert "__nv_sinf" not in _defined(mod) and "__nv_logf" not in _defined(mod)
    assert mod.triple == triple and mod.data_layout == dl
    sin = libdevice_subset(("__nv_sinf",), triple, dl, pb)
    names = _defined(sin)
    assert "__nv_sinf" in names and "__nv_expf" not in names
    # sinf's argument reduction reads a constant table: globals it reaches are kept
    assert any(not g.is_declaration for g in sin.global_variables)
    assert len(names) < 20  # libdevice defines hundreds


def test_subset_is_kept_per_name_set_and_each_call_gets_a_new_module():
    triple, dl, pb = _args()
    a = libdevice_subset(("__nv_expf", "__nv_logf"), triple, dl, pb)
    assert len(libdevice._subsets) == 1
    b = libdevice_subset(("__nv_expf", "__nv_logf"), triple, dl, pb)
    assert len(libdevice._subsets) == 1 and a is not b
    assert _defined(a) == _defined(b)
    libdevice_subset(("__nv_expf",), triple, dl, pb)
    assert len(libdevice._subsets) == 2


def test_missing_names_are_all_named_in_order():
    triple, dl, pb = _args()
    with pytest.raises(LibdeviceMissing, match=r"no function\(s\) __nv_zzz, __nv_aaa$") as info:
        libdevice_subset(("__nv_expf", "__nv_zzz", "__nv_aaa"), triple, dl, pb)
    assert info.value.missing == ("__nv_zzz", "__nv_aaa")
    assert isinstance(info.value, CodegenError)
    assert not libdevice._subsets  # a failed subset is not kept


def test_emit_ptx_names_the_kernel_and_the_missing_function():
    from tests.codegen.test_ptx_emit import ENTRY, kernel_text

    with pytest.raises(CodegenError, match=rf"kernel '{ENTRY}' for sm_80: libdevice has no function\(s\) __nv_nope1"):
        emit_ptx(kernel_text(libdevice=("__nv_expf", "__nv_nope1")), "sm_80", entry=ENTRY)


def test_a_replaced_file_is_read_again_and_a_corrupt_one_is_a_clear_error(monkeypatch, tmp_path):
    triple, dl, pb = _args()
    copy = tmp_path / "libdevice.10.bc"
    shutil.copyfile(toolchain.find_libdevice(), copy)
    monkeypatch.setenv("EGGPU_LIBDEVICE", str(copy))
    toolchain.clear_caches()
    assert "__nv_expf" in _defined(libdevice_subset(("__nv_expf",), triple, dl, pb))
    copy.write_bytes(b"not bitcode at all, and longer than the magic")
    with pytest.raises(CodegenError, match=re.escape(f"cannot read libdevice bitcode {copy}")):
        libdevice_subset(("__nv_expf",), triple, dl, pb)
    toolchain.clear_caches()


# ---------------------------------------------------------------- the disk layer


def _entries(root) -> list:
    folder = root / "libdevice"
    return sorted(folder.iterdir()) if folder.exists() else []


def _count_libdevice_parses(monkeypatch) -> list[str]:
    """Record what each bitcode parse reads: libdevice's path, or a disk entry's key."""
    seen: list[str] = []
    real = libdevice._parse_bitcode

    def counting(data, what, context=None):
        seen.append(what)
        return real(data, what, context)

    monkeypatch.setattr(libdevice, "_parse_bitcode", counting)
    return seen


def test_a_new_process_reads_the_subset_from_disk_without_parsing_libdevice(monkeypatch, tmp_path):
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    triple, dl, pb = _args()
    seen = _count_libdevice_parses(monkeypatch)
    first = _defined(libdevice_subset(("__nv_expf", "__nv_logf"), triple, dl, pb))
    (entry,) = _entries(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{64}\.bc", entry.name) and entry.stat().st_mode & 0o077 == 0
    (math,) = _math_cuts(tmp_path)
    # libdevice parsed and cut to the lowering's functions, that cut stored and parsed back
    assert seen == [str(toolchain.find_libdevice()), math.name.removesuffix(".bc")]
    libdevice.clear_cache()  # what a new process starts with
    again = libdevice_subset(("__nv_expf", "__nv_logf"), triple, dl, pb)
    assert seen[2:] == [entry.name.removesuffix(".bc")]  # only the entry was parsed
    assert _defined(again) == first and again.triple == triple and again.data_layout == dl
    # another target's data layout or name set is another entry
    libdevice_subset(("__nv_expf",), triple, dl, pb)
    assert len(_entries(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["garbage", "wrong_functions", "symlink"])
def test_an_unusable_entry_is_ignored_and_rewritten(monkeypatch, tmp_path, damage):
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    triple, dl, pb = _args()
    libdevice_subset(("__nv_sinf",), triple, dl, pb)
    (sin_entry,) = _entries(tmp_path)
    libdevice_subset(("__nv_expf",), triple, dl, pb)
    (exp_entry,) = [e for e in _entries(tmp_path) if e != sin_entry]
    if damage == "garbage":
        exp_entry.write_bytes(b"BC\xc0\xde but nothing after the magic")
    elif damage == "wrong_functions":
        exp_entry.write_bytes(sin_entry.read_bytes())  # parses, but defines __nv_sinf only
    else:
        exp_entry.unlink()
        exp_entry.symlink_to(sin_entry)
    libdevice.clear_cache()
    seen = _count_libdevice_parses(monkeypatch)
    mod = libdevice_subset(("__nv_expf",), triple, dl, pb)
    assert "__nv_expf" in _defined(mod) and "__nv_sinf" not in _defined(mod)
    (math,) = _math_cuts(tmp_path)
    # cut again, from the math cut (after trying the damaged entry, unless it was not even read)
    assert seen[-1] == math.name.removesuffix(".bc") and str(toolchain.find_libdevice()) not in seen
    assert not exp_entry.is_symlink()  # replaced, never followed
    assert "__nv_sinf" in _defined(libdevice._parse_bitcode(sin_entry.read_bytes(), "sin"))
    libdevice.clear_cache()
    seen.clear()
    assert "__nv_expf" in _defined(libdevice_subset(("__nv_expf",), triple, dl, pb))
    assert seen == [exp_entry.name.removesuffix(".bc")]  # the rewritten entry is good


def _math_cuts(root) -> list:
    folder = root / "toolchain"
    return sorted(folder.glob("*.bc")) if folder.exists() else []


def test_a_new_set_of_functions_is_cut_from_the_math_cut_without_parsing_libdevice(monkeypatch, tmp_path):
    """The math cut (libdevice reduced to the functions the lowering calls) is made once per
    installation, in toolchain/; a later new set of names is cut from it, to the same functions
    as from the whole of libdevice, and the same PTX for every library kernel that calls it."""
    from eggpu.codegen.emitter import LIBDEVICE_FUNCTIONS

    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    triple, dl, pb = _args()
    seen = _count_libdevice_parses(monkeypatch)
    libdevice_subset(("__nv_expf",), triple, dl, pb)
    (math,) = _math_cuts(tmp_path)
    assert math.stat().st_mode & 0o077 == 0
    cut = libdevice._parse_bitcode(math.read_bytes(), "math")
    assert set(_defined(cut)) >= {n for n in LIBDEVICE_FUNCTIONS if n in _whole_defined()}
    assert len(math.read_bytes()) < toolchain.find_libdevice().stat().st_size / 3
    libdevice.clear_cache()
    seen.clear()
    from_math = libdevice_subset(("__nv_erff", "__nv_sinf"), triple, dl, pb)
    assert seen == [math.name.removesuffix(".bc")]  # libdevice itself not parsed
    whole = _whole_libdevice(("__nv_erff", "__nv_sinf"), triple, dl, pb)
    libdevice.strip_to(whole, ("__nv_erff", "__nv_sinf"), pb())
    assert _defined(from_math) == _defined(whole)  # the PTX: the test above, and docs/codegen.md
    # names outside the lowering's (a hand-written module's) are cut from all of libdevice
    seen.clear()
    assert "__nv_frexpf" in _defined(libdevice_subset(("__nv_frexpf",), triple, dl, pb))
    assert seen == [str(toolchain.find_libdevice())]


def test_a_damaged_math_cut_is_replaced(monkeypatch, tmp_path):
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    triple, dl, pb = _args()
    libdevice_subset(("__nv_expf",), triple, dl, pb)
    (math,) = _math_cuts(tmp_path)
    math.write_bytes(b"BC\xc0\xde and nothing else")
    libdevice.clear_cache()
    seen = _count_libdevice_parses(monkeypatch)
    assert "__nv_logf" in _defined(libdevice_subset(("__nv_logf",), triple, dl, pb))
    assert str(toolchain.find_libdevice()) in seen and math.read_bytes() != b"BC\xc0\xde and nothing else"
    assert "__nv_logf" in _defined(libdevice._parse_bitcode(math.read_bytes(), "math"))


@functools.cache
def _whole_defined() -> frozenset:
    import llvmlite.binding as llvm

    return frozenset(_defined(llvm.parse_bitcode(toolchain.find_libdevice().read_bytes())))


def test_the_disk_layer_can_be_turned_off_and_is_pruned(monkeypatch, tmp_path):
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    triple, dl, pb = _args()
    monkeypatch.setenv("EGGPU_LIBDEVICE_CACHE", "0")
    libdevice_subset(("__nv_expf",), triple, dl, pb)
    assert not (tmp_path / "libdevice").exists() and not _math_cuts(tmp_path)
    monkeypatch.delenv("EGGPU_LIBDEVICE_CACHE")
    monkeypatch.setattr(libdevice, "KEEP", 2)
    for name in ("__nv_expf", "__nv_logf", "__nv_sinf"):
        libdevice_subset((name,), triple, dl, pb)
    assert len(_entries(tmp_path)) == 2


def test_an_untrusted_cache_directory_is_not_used(monkeypatch, tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)  # world-writable: someone else could plant bitcode there
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(root))
    triple, dl, pb = _args()
    assert "__nv_expf" in _defined(libdevice_subset(("__nv_expf",), triple, dl, pb))
    assert not (root / "libdevice").exists()
