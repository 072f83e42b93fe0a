"""Locating ptxas and libdevice: every lookup branch with fake files, the errors, the real lookup."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from eggpu.codegen import toolchain
from eggpu.ir.errors import ToolchainError

posix_only = pytest.mark.skipif(os.name == "nt", reason="fake ptxas executables are shell scripts")

HELP_TEXT = """\
--gpu-name <gpu name>                               (-arch)
        Specify name of NVIDIA GPU to generate code for.
        Allowed values for this option:  'compute_75','compute_80','sm_75','sm_80',
        'sm_90','sm_90a'.
        Default value:  'sm_75'.
"""


def fake_ptxas(path: Path, release: str = "13.1") -> Path:
    """An executable shell script that answers ``--version`` and ``--help`` like ptxas."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # shell builtins only: the tests run it with an empty PATH
    help_lines = "".join(f'  echo "{line}"\n' for line in HELP_TEXT.splitlines())
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--help" ]; then\n{help_lines}  exit 0\nfi\n'
        f'echo "Cuda compilation tools, release {release}, V{release}.99"\n'
    )
    path.chmod(0o755)
    return path


def fake_libdevice(root: Path) -> Path:
    path = root / "nvvm" / "libdevice" / "libdevice.10.bc"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"BC\xc0\xde")
    return path


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No overrides, no CUDA_HOME/CUDA_PATH, an empty PATH, and no real nvidia wheels on sys.path."""
    for var in (toolchain.PTXAS_ENV, toolchain.LIBDEVICE_ENV, "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    base = [p for p in sys.path if not (Path(p or ".") / "nvidia").is_dir()]
    monkeypatch.setattr(sys, "path", list(base))

    def prepend_sys_path(*dirs: Path) -> None:
        # replaces the list instead of mutating it so that monkeypatch restores the original
        monkeypatch.setattr(sys, "path", [*map(str, dirs), *sys.path])

    monkeypatch.prepend_sys_path = prepend_sys_path
    toolchain.clear_caches()
    yield monkeypatch
    toolchain.clear_caches()


@posix_only
def test_cuda13_wheel_layout(clean_env, tmp_path):
    site = tmp_path / "site"
    ptxas = fake_ptxas(site / "nvidia" / "cu13" / "bin" / "ptxas")
    lib = fake_libdevice(site / "nvidia" / "cu13")
    clean_env.prepend_sys_path(site)
    assert toolchain.locate_ptxas() == toolchain.ToolLocation(ptxas, "wheel nvidia-cuda-nvcc")
    assert toolchain.locate_libdevice() == toolchain.ToolLocation(lib, "wheel nvidia-nvvm")
    assert toolchain.ptxas_version() == (13, 1)
    assert toolchain.ptxas_supported_gpus() == {"sm_75", "sm_80", "sm_90", "sm_90a"}


@posix_only
def test_cuda12_wheel_layout(clean_env, tmp_path):
    site = tmp_path / "site"
    ptxas = fake_ptxas(site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas", release="12.4")
    lib = fake_libdevice(site / "nvidia" / "cuda_nvcc")
    clean_env.prepend_sys_path(site)
    assert toolchain.find_ptxas() == ptxas
    assert toolchain.find_libdevice() == lib
    assert toolchain.ptxas_version() == (12, 4)


@posix_only
def test_newest_versioned_wheel_dir_wins_and_sys_path_order_counts(clean_env, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    fake_ptxas(first / "nvidia" / "cuda_nvcc" / "bin" / "ptxas")
    want = fake_ptxas(first / "nvidia" / "cu14" / "bin" / "ptxas")
    fake_ptxas(first / "nvidia" / "cu13" / "bin" / "ptxas")
    fake_ptxas(second / "nvidia" / "cu15" / "bin" / "ptxas")
    clean_env.prepend_sys_path(first, second)
    assert toolchain.find_ptxas() == want


@posix_only
def test_non_executable_file_is_skipped(clean_env, tmp_path):
    site = tmp_path / "site"
    fake_ptxas(site / "nvidia" / "cu13" / "bin" / "ptxas").chmod(0o644)
    clean_env.prepend_sys_path(site)
    with pytest.raises(ToolchainError, match="pip install nvidia-cuda-nvcc"):
        toolchain.find_ptxas()


@posix_only
def test_override_env_wins_over_wheels(clean_env, tmp_path):
    site = tmp_path / "site"
    fake_ptxas(site / "nvidia" / "cu13" / "bin" / "ptxas")
    fake_libdevice(site / "nvidia" / "cu13")
    clean_env.prepend_sys_path(site)
    mine = fake_ptxas(tmp_path / "custom" / "my-ptxas")
    lib = tmp_path / "custom" / "ld.bc"
    lib.write_bytes(b"x")
    clean_env.setenv("EGGPU_PTXAS", str(mine))
    clean_env.setenv("EGGPU_LIBDEVICE", str(lib))
    assert toolchain.locate_ptxas() == toolchain.ToolLocation(mine, "EGGPU_PTXAS")
    assert toolchain.locate_libdevice() == toolchain.ToolLocation(lib, "EGGPU_LIBDEVICE")


def test_bad_override_is_an_error_not_a_fallback(clean_env, tmp_path):
    clean_env.setenv("EGGPU_PTXAS", str(tmp_path / "nope"))
    with pytest.raises(ToolchainError, match="EGGPU_PTXAS=.*does not name an executable ptxas"):
        toolchain.find_ptxas()
    clean_env.setenv("EGGPU_LIBDEVICE", str(tmp_path))  # a directory, not a file
    with pytest.raises(ToolchainError, match="EGGPU_LIBDEVICE=.*libdevice.10.bc"):
        toolchain.find_libdevice()


@posix_only
@pytest.mark.parametrize("var", ["CUDA_HOME", "CUDA_PATH"])
def test_cuda_toolkit_env(clean_env, tmp_path, var):
    cuda = tmp_path / "cuda"
    ptxas = fake_ptxas(cuda / "bin" / "ptxas")
    lib = fake_libdevice(cuda)
    clean_env.setenv(var, str(cuda))
    assert toolchain.locate_ptxas() == toolchain.ToolLocation(ptxas, var)
    assert toolchain.locate_libdevice() == toolchain.ToolLocation(lib, var)


@posix_only
def test_cuda_home_before_cuda_path_and_wheels_before_both(clean_env, tmp_path):
    home, path = tmp_path / "home", tmp_path / "path"
    want = fake_ptxas(home / "bin" / "ptxas")
    fake_ptxas(path / "bin" / "ptxas")
    clean_env.setenv("CUDA_HOME", str(home))
    clean_env.setenv("CUDA_PATH", str(path))
    assert toolchain.find_ptxas() == want
    site = tmp_path / "site"
    wheel = fake_ptxas(site / "nvidia" / "cu13" / "bin" / "ptxas")
    clean_env.prepend_sys_path(site)
    assert toolchain.find_ptxas() == wheel  # the cache key follows sys.path: no clear needed


@posix_only
def test_path_lookup_and_libdevice_next_to_it(clean_env, tmp_path):
    cuda = tmp_path / "toolkit"
    ptxas = fake_ptxas(cuda / "bin" / "ptxas")
    lib = fake_libdevice(cuda)
    clean_env.setenv("PATH", str(cuda / "bin"))
    assert toolchain.locate_ptxas() == toolchain.ToolLocation(ptxas, "PATH")
    assert toolchain.locate_libdevice() == toolchain.ToolLocation(lib, "PATH")


@posix_only
def test_path_symlink_resolves_to_the_toolkit_for_libdevice(clean_env, tmp_path):
    cuda = tmp_path / "toolkit"
    real = fake_ptxas(cuda / "bin" / "ptxas")
    lib = fake_libdevice(cuda)
    bindir = tmp_path / "usr-bin"
    bindir.mkdir()
    (bindir / "ptxas").symlink_to(real)
    clean_env.setenv("PATH", str(bindir))
    assert toolchain.find_ptxas() == bindir / "ptxas"
    assert toolchain.find_libdevice() == lib


def test_missing_tools_name_the_package_and_the_places_searched(clean_env, tmp_path):
    clean_env.setenv("CUDA_HOME", str(tmp_path / "no-cuda"))
    with pytest.raises(ToolchainError) as err:
        toolchain.find_ptxas()
    msg = str(err.value)
    assert "pip install nvidia-cuda-nvcc" in msg
    assert f"CUDA_HOME: {tmp_path / 'no-cuda' / 'bin' / 'ptxas'}" in msg
    assert "CUDA_PATH (not set)" in msg
    assert "PATH: no ptxas" in msg
    with pytest.raises(ToolchainError) as err:
        toolchain.find_libdevice()
    msg = str(err.value)
    assert "pip install nvidia-nvvm" in msg
    assert "libdevice.10.bc" in msg
    assert "PATH: no ptxas to look next to" in msg


@posix_only
def test_bad_version_output_is_a_toolchain_error(clean_env, tmp_path):
    weird = tmp_path / "ptxas"
    weird.write_text("#!/bin/sh\necho hello\n")
    weird.chmod(0o755)
    with pytest.raises(ToolchainError, match="cannot read a CUDA release"):
        toolchain.ptxas_version(weird)
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho oops >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(ToolchainError, match="exit code 3: oops"):
        toolchain.ptxas_version(broken)


def test_real_toolchain_on_this_machine():
    toolchain.clear_caches()
    try:
        ptxas = toolchain.locate_ptxas()
        libdevice = toolchain.locate_libdevice()
    except ToolchainError as exc:
        pytest.skip(f"no CUDA toolchain installed here: {exc}")
    assert os.access(ptxas.path, os.X_OK)
    assert libdevice.path.read_bytes()[:4] == b"BC\xc0\xde"  # LLVM bitcode magic
    assert toolchain.ptxas_version() >= (11, 0)
    assert {"sm_80", "sm_90"} <= toolchain.ptxas_supported_gpus()
    hits = toolchain._locate_ptxas.cache_info().hits
    assert toolchain.find_ptxas() == ptxas.path
    assert toolchain._locate_ptxas.cache_info().hits == hits + 1  # lookups are cached


# ---------------------------------------------------------------- ptxas --version on disk


def _counting_ptxas(path: Path, release: str) -> Path:
    """A fake ptxas that appends a line to ``runs.log`` beside it each time it runs (shell builtins only)."""
    log = path.with_name("runs.log")
    path.write_text(f'#!/bin/sh\necho run >> "{log}"\necho "Cuda compilation tools, release {release}, V{release}.1"\n')
    path.chmod(0o755)
    return path


def _runs(folder: Path) -> int:
    """How many times the fake ptxas of ``folder`` ran."""
    log = folder / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.fixture
def version_cache(clean_env, tmp_path):
    """A fresh cache directory for the disk layer (``clean_env`` empties the in-process memo
    before and after the test)."""
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    clean_env.setenv("EGGPU_CACHE_DIR", str(root))
    clean_env.delenv("EGGPU_TOOLCHAIN_CACHE", raising=False)
    return root


@posix_only
def test_ptxas_version_is_remembered_on_disk_across_processes(version_cache, tmp_path):
    exe = _counting_ptxas(tmp_path / "ptxas", "12.7")
    assert toolchain.ptxas_version(exe) == (12, 7)
    assert _runs(tmp_path) == 1
    assert len(list((version_cache / "toolchain").glob("*.version"))) == 1
    toolchain.clear_caches()  # a new process: only the disk layer remembers
    assert toolchain.ptxas_version(exe) == (12, 7)
    assert _runs(tmp_path) == 1


@posix_only
def test_a_replaced_or_rewritten_ptxas_is_asked_again(version_cache, tmp_path):
    exe = _counting_ptxas(tmp_path / "ptxas", "12.7")
    st = exe.stat()
    assert toolchain.ptxas_version(exe) == (12, 7)
    # same size, same modification time, rewritten in place: the status-change time still moves
    _counting_ptxas(exe, "12.8")
    os.utime(exe, ns=(st.st_atime_ns, st.st_mtime_ns))
    toolchain.clear_caches()
    assert toolchain.ptxas_version(exe) == (12, 8)
    assert _runs(tmp_path) == 2
    # another file renamed over it (new inode)
    other = _counting_ptxas(tmp_path / "ptxas-new", "13.1")
    os.replace(other, exe)
    toolchain.clear_caches()
    assert toolchain.ptxas_version(exe) == (13, 1)
    assert _runs(tmp_path) == 3


@posix_only
def test_a_malformed_or_planted_version_entry_is_ignored(version_cache, tmp_path):
    exe = _counting_ptxas(tmp_path / "ptxas", "12.4")
    assert toolchain.ptxas_version(exe) == (12, 4)
    (entry,) = (version_cache / "toolchain").glob("*.version")
    entry.write_bytes(b"99.9 and more")
    toolchain.clear_caches()
    assert toolchain.ptxas_version(exe) == (12, 4)
    assert _runs(tmp_path) == 2
    assert entry.read_bytes() == b"12.4"  # rewritten
    entry.unlink()
    planted = tmp_path / "planted"
    planted.write_bytes(b"99.9")
    entry.symlink_to(planted)
    toolchain.clear_caches()
    assert toolchain.ptxas_version(exe) == (12, 4)  # a symlink is never followed
    assert _runs(tmp_path) == 3


@posix_only
def test_the_disk_layer_can_be_turned_off(clean_env, version_cache, tmp_path):
    exe = _counting_ptxas(tmp_path / "ptxas", "12.4")
    clean_env.setenv("EGGPU_TOOLCHAIN_CACHE", "0")
    assert toolchain.ptxas_version(exe) == (12, 4)
    toolchain.clear_caches()
    assert toolchain.ptxas_version(exe) == (12, 4)
    assert _runs(tmp_path) == 2
    assert not (version_cache / "toolchain").exists()
