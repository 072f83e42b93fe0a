"""Locating NVIDIA's external tools: ``ptxas`` and libdevice.

Nothing is vendored and nothing is downloaded. Each tool is looked up in this order, the
first hit wins:

1. an explicit override: ``EGGPU_PTXAS`` (path of the ``ptxas`` executable) or
   ``EGGPU_LIBDEVICE`` (path of ``libdevice.10.bc``). A set override that does not point
   at an existing file is an error, never silently skipped;
2. NVIDIA's wheels on ``sys.path`` (in ``sys.path`` order): ``nvidia-cuda-nvcc`` ships
   ``nvidia/cu13/bin/ptxas`` (CUDA 13; any ``nvidia/cuNN`` directory is accepted, newest
   first) or ``nvidia/cuda_nvcc/bin/ptxas`` (CUDA 12); ``nvidia-nvvm`` ships
   ``nvidia/cu13/nvvm/libdevice/libdevice.10.bc`` (CUDA 12:
   ``nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc``);
3. a CUDA toolkit named by ``CUDA_HOME`` then ``CUDA_PATH``: ``bin/ptxas`` and
   ``nvvm/libdevice/libdevice.10.bc``;
4. ``ptxas`` on ``PATH``; libdevice relative to it at ``../nvvm/libdevice/libdevice.10.bc``
   (both next to the name found on ``PATH`` and next to the file it resolves to).

A missing tool raises :class:`~eggpu.ir.errors.ToolchainError` naming the pip package to
install and every place that was searched. Lookups are cached per environment (override
variables, ``CUDA_HOME``/``CUDA_PATH``, ``PATH`` and ``sys.path``), so changing any of these
takes effect on the next call; :func:`clear_caches` forgets files found earlier.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from eggpu.ir.errors import ToolchainError

__all__ = [
    "LIBDEVICE_ENV",
    "PTXAS_ENV",
    "ToolLocation",
    "clear_caches",
    "find_libdevice",
    "find_ptxas",
    "locate_libdevice",
    "locate_ptxas",
    "ptxas_supported_gpus",
    "ptxas_version",
]

PTXAS_ENV = "EGGPU_PTXAS"
LIBDEVICE_ENV = "EGGPU_LIBDEVICE"
_CUDA_ENVS = ("CUDA_HOME", "CUDA_PATH")
_LIBDEVICE_NAME = "libdevice.10.bc"
_PTXAS_PACKAGE = "nvidia-cuda-nvcc"
_LIBDEVICE_PACKAGE = "nvidia-nvvm"


@dataclass(frozen=True)
class ToolLocation:
    """Where a tool was found: ``path`` and ``source`` (how it was found, for messages)."""

    path: Path
    source: str


def _exe_name(name: str) -> str:
    return name + ".exe" if os.name == "nt" else name


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _wheel_roots(sys_path: tuple[str, ...]) -> list[Path]:
    """Candidate wheel directories under each ``sys.path`` entry's ``nvidia/`` folder.

    CUDA 13+ wheels install into ``nvidia/cuNN`` (newest first); CUDA 12 wheels into
    ``nvidia/cuda_nvcc``.
    """
    roots: list[Path] = []
    for entry in sys_path:
        base = Path(entry or ".") / "nvidia"
        if not base.is_dir():
            continue
        versioned = []
        for child in base.iterdir():
            m = re.fullmatch(r"cu(\d+)", child.name)
            if m and child.is_dir():
                versioned.append((int(m.group(1)), child))
        roots.extend(path for _, path in sorted(versioned, key=lambda t: -t[0]))
        roots.append(base / "cuda_nvcc")
    return roots


def _env_key() -> tuple:
    env = os.environ
    return (
        env.get(PTXAS_ENV),
        env.get(LIBDEVICE_ENV),
        tuple(env.get(name) for name in _CUDA_ENVS),
        env.get("PATH"),
        tuple(sys.path),
    )


def _override(var: str, value: str | None, what: str, check) -> ToolLocation | None:
    if not value:
        return None
    path = Path(value).expanduser()
    if not check(path):
        raise ToolchainError(
            f"{var}={value!r} does not name {what}; fix or unset the variable "
            f"(eggpu then searches NVIDIA's wheels, CUDA_HOME/CUDA_PATH and PATH)"
        )
    return ToolLocation(path, var)


@functools.lru_cache(maxsize=16)
def _locate_ptxas(key: tuple) -> ToolLocation:
    ptxas_env, _libdevice_env, cuda_dirs, path_var, sys_path = key
    exe = _exe_name("ptxas")
    found = _override(PTXAS_ENV, ptxas_env, "an executable ptxas", _is_executable)
    if found is not None:
        return found
    looked: list[str] = []
    for root in _wheel_roots(sys_path):
        candidate = root / "bin" / exe
        looked.append(str(candidate))
        if _is_executable(candidate):
            return ToolLocation(candidate, f"wheel {_PTXAS_PACKAGE}")
    if not looked:
        looked.append("no nvidia/ wheel directory on sys.path")
    for name, value in zip(_CUDA_ENVS, cuda_dirs):
        if not value:
            looked.append(f"{name} (not set)")
            continue
        candidate = Path(value) / "bin" / exe
        looked.append(f"{name}: {candidate}")
        if _is_executable(candidate):
            return ToolLocation(candidate, name)
    on_path = shutil.which(exe, path=path_var) if path_var else None
    looked.append(f"PATH: {'found ' + on_path if on_path else 'no ptxas'}")
    if on_path:
        return ToolLocation(Path(on_path), "PATH")
    raise ToolchainError(
        "ptxas (NVIDIA's PTX assembler) was not found. Install it with "
        f"`pip install {_PTXAS_PACKAGE}`, or point CUDA_HOME at a CUDA toolkit, or set "
        f"{PTXAS_ENV} to the executable. Looked in:\n  - " + "\n  - ".join(looked)
    )


def _libdevice_next_to(ptxas: Path) -> list[Path]:
    out = [ptxas.parent.parent / "nvvm" / "libdevice" / _LIBDEVICE_NAME]
    try:
        resolved = ptxas.resolve()
    except OSError:
        resolved = ptxas
    extra = resolved.parent.parent / "nvvm" / "libdevice" / _LIBDEVICE_NAME
    if extra != out[0]:
        out.append(extra)
    return out


@functools.lru_cache(maxsize=16)
def _locate_libdevice(key: tuple) -> ToolLocation:
    _ptxas_env, libdevice_env, cuda_dirs, path_var, sys_path = key
    found = _override(LIBDEVICE_ENV, libdevice_env, f"a {_LIBDEVICE_NAME} file", Path.is_file)
    if found is not None:
        return found
    looked: list[str] = []
    for root in _wheel_roots(sys_path):
        candidate = root / "nvvm" / "libdevice" / _LIBDEVICE_NAME
        looked.append(str(candidate))
        if candidate.is_file():
            return ToolLocation(candidate, f"wheel {_LIBDEVICE_PACKAGE}")
    if not looked:
        looked.append("no nvidia/ wheel directory on sys.path")
    for name, value in zip(_CUDA_ENVS, cuda_dirs):
        if not value:
            looked.append(f"{name} (not set)")
            continue
        candidate = Path(value) / "nvvm" / "libdevice" / _LIBDEVICE_NAME
        looked.append(f"{name}: {candidate}")
        if candidate.is_file():
            return ToolLocation(candidate, name)
    on_path = shutil.which(_exe_name("ptxas"), path=path_var) if path_var else None
    if on_path:
        for candidate in _libdevice_next_to(Path(on_path)):
            looked.append(f"next to ptxas on PATH: {candidate}")
            if candidate.is_file():
                return ToolLocation(candidate, "PATH")
    else:
        looked.append("PATH: no ptxas to look next to")
    raise ToolchainError(
        f"libdevice ({_LIBDEVICE_NAME}, NVIDIA's math library) was not found. Install it with "
        f"`pip install {_LIBDEVICE_PACKAGE}`, or point CUDA_HOME at a CUDA toolkit, or set "
        f"{LIBDEVICE_ENV} to the file. Looked in:\n  - " + "\n  - ".join(looked)
    )


def locate_ptxas() -> ToolLocation:
    """Find ``ptxas``; returns its path and how it was found. Raises ToolchainError."""
    return _locate_ptxas(_env_key())


def locate_libdevice() -> ToolLocation:
    """Find ``libdevice.10.bc``; returns its path and how it was found. Raises ToolchainError."""
    return _locate_libdevice(_env_key())


def find_ptxas() -> Path:
    """Path of the ``ptxas`` executable (see the module docstring for the search order)."""
    return locate_ptxas().path


def find_libdevice() -> Path:
    """Path of ``libdevice.10.bc`` (see the module docstring for the search order)."""
    return locate_libdevice().path


def _run_ptxas_info(ptxas: Path, flag: str) -> str:
    try:
        proc = subprocess.run([str(ptxas), flag], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"could not run {ptxas} {flag}: {exc}") from exc
    if proc.returncode != 0:
        raise ToolchainError(
            f"{ptxas} {flag} failed with exit code {proc.returncode}: {(proc.stderr or proc.stdout).strip()}"
        )
    return proc.stdout


@functools.lru_cache(maxsize=8)
def _ptxas_version(ptxas: str, stamp: tuple[int, ...]) -> tuple[int, int]:
    key = _version_key(ptxas, stamp)
    known = _version_from_disk(key) if key is not None else None
    if known is not None:
        return known
    out = _run_ptxas_info(Path(ptxas), "--version")
    m = re.search(r"release (\d+)\.(\d+)", out) or re.search(r"\bV(\d+)\.(\d+)", out)
    if m is None:
        raise ToolchainError(f"cannot read a CUDA release from `{ptxas} --version`:\n{out.strip()}")
    version = int(m.group(1)), int(m.group(2))
    if key is not None:
        _version_to_disk(key, version)
    return version


def _stamp(path: Path) -> tuple[int, ...]:
    """What identifies the file's contents without reading it: device, inode, size, modification
    and status-change times of the file ``path`` resolves to (``()`` when it cannot be stat'ed).
    Replacing or rewriting the executable changes at least one of them (a write sets the
    status-change time, which ``touch`` cannot set back)."""
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def ptxas_version(ptxas: Path | str | None = None) -> tuple[int, int]:
    """CUDA release ``(major, minor)`` of ``ptxas`` (default: the one :func:`find_ptxas` finds).

    Read from ``ptxas --version`` ("Cuda compilation tools, release 13.0, V13.0.88"); cached
    per executable path and :func:`_stamp` in the process and on disk
    (``toolchain/<sha256>.version`` in ``$EGGPU_CACHE_DIR``, else the user cache dir), so a new
    process does not start ``ptxas --version`` again (15-40 ms). ``EGGPU_TOOLCHAIN_CACHE=0``
    turns the disk layer off.
    """
    path = Path(ptxas) if ptxas is not None else find_ptxas()
    return _ptxas_version(str(path), _stamp(path))


# ---------------------------------------------------------------- disk shortcuts (ptxas versions; libdevice.py: subsets)

_VERSION_FORMAT = 1
_VERSION_KEEP = 16


def disk_get(folder: str, switch: str, key: str, suffix: str) -> bytes | None:
    """The entry ``key + suffix`` of the disk shortcut ``folder`` (under ``$EGGPU_CACHE_DIR``, else the
    user cache dir), or None when there is none, it is not a trusted file, or the environment
    variable ``switch`` is ``"0"`` (the shortcut turned off). Shared with :mod:`.libdevice`."""
    from eggpu.ir.cachefs import CacheUnavailable, read_trusted

    where = _disk_folder(folder, switch)
    if where is None:
        return None
    try:
        return read_trusted(where[0] / f"{key}{suffix}")
    except (CacheUnavailable, OSError):
        return None


def disk_put(folder: str, switch: str, key: str, suffix: str, data: bytes, keep: int) -> None:
    """Store ``data`` as ``key + suffix`` in the disk shortcut ``folder`` and keep only the ``keep``
    newest entries of that name length; silently does nothing when the folder cannot be used or
    ``switch`` is ``"0"`` (the shortcut only saves time)."""
    from eggpu.ir.cachefs import CacheUnavailable, atomic_write, ensure_trusted_dir, prune_newest

    where = _disk_folder(folder, switch)
    if where is None:
        return
    entries, root = where
    try:
        ensure_trusted_dir(entries, under=root)
        atomic_write(entries / f"{key}{suffix}", data)
        prune_newest(entries, suffix, len(key) + len(suffix), keep)
    except (CacheUnavailable, OSError):
        pass


def _disk_folder(folder: str, switch: str) -> tuple[Path, Path] | None:
    """``(folder of the entries, cache root)``, or None when ``switch`` turns the shortcut off."""
    if os.environ.get(switch, "1") == "0":
        return None
    root = os.environ.get("EGGPU_CACHE_DIR")
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("eggpu")
    return Path(root) / folder, Path(root)


def _version_key(ptxas: str, stamp: tuple[int, ...]) -> str | None:
    """sha256 of the executable's path, the path it resolves to and its :func:`_stamp`; None
    when the file cannot be stat'ed (nothing is then read or stored)."""
    if not stamp:
        return None
    import hashlib

    text = "\0".join((f"ptxas-version-{_VERSION_FORMAT}", ptxas, os.path.realpath(ptxas), *map(str, stamp)))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _version_from_disk(key: str) -> tuple[int, int] | None:
    """The stored version (``"13.5"``), or None when there is none or it is unusable."""
    raw = disk_get("toolchain", "EGGPU_TOOLCHAIN_CACHE", key, ".version")
    m = re.fullmatch(rb"(\d{1,4})\.(\d{1,4})", raw or b"")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _version_to_disk(key: str, version: tuple[int, int]) -> None:
    disk_put("toolchain", "EGGPU_TOOLCHAIN_CACHE", key, ".version", f"{version[0]}.{version[1]}".encode(),
             _VERSION_KEEP)


@functools.lru_cache(maxsize=8)
def _ptxas_gpus(ptxas: str, _stamp_key: tuple[int, ...]) -> frozenset[str]:
    out = _run_ptxas_info(Path(ptxas), "--help")
    m = re.search(r"--gpu-name.*?Allowed values for this option:(.*?)(?:Default value|\n\s*\n)", out, re.S)
    if m is None:
        return frozenset()
    return frozenset(re.findall(r"'(sm_\w+)'", m.group(1)))


def ptxas_supported_gpus(ptxas: Path | str | None = None) -> frozenset[str]:
    """The ``sm_*`` names ``ptxas --help`` lists for ``--gpu-name`` (empty if it lists none)."""
    path = Path(ptxas) if ptxas is not None else find_ptxas()
    return _ptxas_gpus(str(path), _stamp(path))


def clear_caches() -> None:
    """Forget every cached lookup (tools found, versions, GPU lists)."""
    _locate_ptxas.cache_clear()
    _locate_libdevice.cache_clear()
    _ptxas_version.cache_clear()
    _ptxas_gpus.cache_clear()
