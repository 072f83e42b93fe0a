"""NVIDIA binary tools for the static measurements: locating ``nvdisasm``/``cuobjdump``, counting
SASS instructions in a cubin, reading its resource usage, and the versions of everything.

Tool lookup order (first hit wins): NVIDIA's wheels in ``site-packages/nvidia/cu*/bin``
(``nvidia-cuda-nvdisasm``, ``nvidia-cuda-cuobjdump``), ``$CUDA_HOME/bin``, ``PATH``, then the
copies Triton ships in ``triton/backends/nvidia/bin``. What was used is recorded in the results.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _candidates(name: str) -> list[Path]:
    out: list[Path] = []
    for entry in sys.path:
        base = Path(entry or ".") / "nvidia"
        if base.is_dir():
            for child in sorted(base.glob("cu[0-9]*"), key=lambda p: -int(p.name[2:] or 0)):
                out.append(child / "bin" / name)
            out.append(base / "cuda_nvcc" / "bin" / name)
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            out.append(Path(os.environ[env]) / "bin" / name)
    which = shutil.which(name)
    if which:
        out.append(Path(which))
    try:
        import importlib.util

        spec = importlib.util.find_spec("triton")
        if spec and spec.origin:
            out.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin" / name)
    except (ImportError, ValueError):
        pass
    return out


def find_tool(name: str) -> Path | None:
    """The first executable ``name`` in the lookup order, or None."""
    for p in _candidates(name):
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def tool_version(path: Path | None) -> str | None:
    """The ``release X.Y`` line of ``path --version`` (None when absent or failing)."""
    if path is None:
        return None
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else None


_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")
_FUNC = re.compile(r"^\s*\.section\s+\.text\.(\S+?),")
# the subroutines ptxas calls for the rare operands of an IEEE operation (``div.rn.f32``'s
# ``$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath``: denormal, huge or tiny operands)
_SLOWPATH = re.compile(r"^\s*\$?__internal\S*slowpath\S*:")


@dataclass
class Sass:
    """SASS statistics of one cubin: ``instructions`` (all kernels; NOPs and the trailing
    self-branch after the last ``EXIT`` not counted), an ``opcodes`` histogram (base mnemonic),
    and counts of global loads/stores by width. ``slow_path_instructions``: how many of the
    counted instructions are in ptxas's slow-path subroutines (the IEEE division's
    ``..._div_rn_..._slowpath``: static code, run only for denormal, huge or tiny operands)."""

    instructions: int
    opcodes: dict[str, int]
    global_loads: dict[str, int]
    global_stores: dict[str, int]
    tool: str
    slow_path_instructions: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"instructions": self.instructions, "opcodes": self.opcodes, "global_loads": self.global_loads,
                "global_stores": self.global_stores, "tool": self.tool,
                "slow_path_instructions": self.slow_path_instructions}


def _width(mods: str) -> str:
    for w in ("128", "64", "U16", "S16", "U8", "S8"):
        if "." + w in mods:
            return w.lower()
    return "32"


def parse_sass(text: str, tool: str = "") -> Sass:
    """Count the instructions in ``nvdisasm -c`` (or ``cuobjdump -sass``) output."""
    funcs: list[list[tuple[str, str, bool]]] = [[]]
    slow = False
    for line in text.splitlines():
        if _FUNC.match(line):
            funcs.append([])
            slow = False
            continue
        if _SLOWPATH.match(line):
            slow = True
            continue
        m = _INSTR.match(line)
        if m:
            funcs[-1].append((m.group(1), m.group(2), slow))
    counted: list[tuple[str, str, bool]] = []
    for f in funcs:
        body = [i for i in f if i[0] != "NOP"]
        if len(body) >= 2 and body[-1][0] == "BRA" and body[-2][0] == "EXIT":
            body = body[:-1]  # the self-loop padding after the final EXIT
        counted += body
    ops = Counter(op for op, _, _ in counted)
    loads = Counter(_width(m) for op, m, _ in counted if op in ("LDG", "LD", "LDGSTS"))
    stores = Counter(_width(m) for op, m, _ in counted if op in ("STG", "ST"))
    return Sass(len(counted), dict(ops.most_common()), dict(loads), dict(stores), tool,
                sum(1 for *_, s in counted if s))


def sass_of_cubin(cubin: bytes) -> Sass | None:
    """Disassemble ``cubin`` with nvdisasm (or cuobjdump -sass); None when neither exists."""
    nvdisasm, cuobjdump = find_tool("nvdisasm"), find_tool("cuobjdump")
    if nvdisasm is None and cuobjdump is None:
        return None
    with tempfile.TemporaryDirectory(prefix="eggpu-bench-") as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        cmd = [str(nvdisasm), "-c", str(path)] if nvdisasm else [str(cuobjdump), "-sass", str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {proc.stderr.strip()}")
    return parse_sass(proc.stdout, tool=Path(cmd[0]).name)


_RES = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def resource_usage(cubin: bytes) -> dict[str, int] | None:
    """Registers, stack, static shared and local memory from ``cuobjdump --dump-resource-usage``."""
    cuobjdump = find_tool("cuobjdump")
    if cuobjdump is None:
        return None
    with tempfile.TemporaryDirectory(prefix="eggpu-bench-") as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        out = subprocess.run([str(cuobjdump), "--dump-resource-usage", str(path)], capture_output=True, text=True,
                             timeout=120).stdout
    m = _RES.search(out)
    if not m:
        return None
    return {"registers": int(m.group(1)), "stack_bytes": int(m.group(2)), "shared_bytes": int(m.group(3)),
            "local_bytes": int(m.group(4))}


def ptx_target(ptx: str) -> str:
    """The ``.target`` of a PTX module (``sm_90a``)."""
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)
    if not m:
        raise ValueError("PTX has no .target directive")
    return m.group(1)


_MATH = re.compile(r"^\s*(?:@!?%p\d+\s+)?((?:ex2|lg2|div|rcp|sqrt|rsqrt|max|min|sin|cos|tanh)\.[\w.]+)", re.M)


def ptx_math_ops(ptx: str) -> dict[str, int]:
    """Counts of PTX math instructions by full opcode (``ex2.approx.f32``, ``div.rn.f32``, ...):
    shows which are approximate (``.approx``, ``div.full``) and which IEEE (``.rn``)."""
    return dict(Counter(_MATH.findall(ptx)).most_common())


def ptx_lines(ptx: str) -> int:
    """Lines of PTX that are not blank and not comments."""
    return sum(1 for ln in ptx.splitlines() if ln.strip() and not ln.strip().startswith("//"))


def _pkg_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, Any]:
    """Versions of eggpu, its dependencies, Triton and the NVIDIA tools."""
    out: dict[str, Any] = {}
    for pkg in ("eggpu", "triton", "llvmlite", "z3-solver", "egglog", "numpy", "matplotlib", "nvidia-cuda-nvcc",
                "nvidia-nvvm", "nvidia-cuda-nvdisasm", "nvidia-cuda-cuobjdump"):
        out[pkg] = _pkg_version(pkg)
    try:
        from eggpu.codegen.toolchain import find_ptxas

        ptxas = find_ptxas()
        out["ptxas"] = {"path": str(ptxas), "version": tool_version(Path(ptxas))}
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        out["ptxas"] = {"error": str(e)}
    for name in ("nvdisasm", "cuobjdump"):
        p = find_tool(name)
        out[name] = {"path": str(p) if p else None, "version": tool_version(p)}
    try:
        import triton.backends.nvidia.compiler as tc

        tp = tc.get_ptxas(90)
        out["triton_ptxas"] = {"path": tp.path, "version": tp.version}
    except Exception as e:  # noqa: BLE001
        out["triton_ptxas"] = {"error": str(e)}
    try:
        import llvmlite.binding as llvm

        out["llvm"] = ".".join(map(str, llvm.llvm_version_info))
    except Exception:  # noqa: BLE001
        pass
    return out


SOURCE_DIRS = ("eggpu", "ir", "kernel_macro", "optimizer", "codegen", "rules")


def source_digest(repo: Path) -> str:
    """sha256 over eggpu's source and rule files (to detect sources edited during a run)."""
    import hashlib

    h = hashlib.sha256()
    for d in SOURCE_DIRS:
        for p in sorted((repo / d).rglob("*")):
            if p.suffix in (".py", ".egg") and p.is_file():
                h.update(str(p.relative_to(repo)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


def machine() -> dict[str, Any]:
    """CPU model, core count, memory, OS and Python."""
    import platform

    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                            "cpu_count": os.cpu_count()}
    try:
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]  # other work sharing the CPUs
    except OSError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass
    return info
