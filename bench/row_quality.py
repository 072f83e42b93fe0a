"""SASS quality of the row kernels beside Triton's: instructions, registers, and what runs per tile.

``python -m bench.row_quality [--kernels K ...] [--targets sm_80 sm_90] [--out bench/results]``
compiles each row kernel of the suite (softmax, layer norm, RMS norm, cross-entropy, row argmax;
f32, the GPU benchmark's constexprs) for every target in four variants, assembles every PTX with
the SAME ptxas and flags (:func:`eggpu.codegen.ptxas.run_ptxas`), disassembles it with nvdisasm
and reports:

- ``sass``: static SASS instructions of the cubin (NOPs and the final self-branch not counted,
  as in :mod:`bench.quality`); ``registers``; spills;
- ``loops``: the static instruction count of every SASS loop (a backward branch and the
  instructions from its target up to it: the code that runs once per ``BLOCK_SIZE`` tile of
  the row), in address order, and ``loop_sass``, their sum;
- ``ptx_math``: the PTX math opcodes (shows ``div.rn`` vs ``div.full``, ``ex2.approx``).

Variants: ``eggpu`` (default, IEEE ``div.rn``/libdevice ``expf``), ``eggpu_fast_math``
(``fast_math=True``), ``triton`` (``ASTSource`` with only the constexprs: the information eggpu
gets) and ``triton_launch`` (as Triton's launcher specializes the benchmark's arguments);
``--variants`` picks some, and adds ``eggpu_nounroll`` (the default PTX with ``.pragma
"nounroll"`` on its loops: ``PtxOptions(ptxas_unroll=False)``, :mod:`eggpu.codegen.ptx_loops`);
``eggpu_launch`` and ``eggpu_fast_math_launch`` are eggpu with the same launch facts (aligned
pointers, ``div16`` integers, i32 offsets), the twins of ``triton_launch``. No GPU
is needed. Results go to ``row_quality.json`` and ``row_quality.md`` in ``--out``; ``--docs
docs/performance.md`` also replaces that report's row-quality section.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .suite import SUITE, Entry, consts_for
from .tools import find_tool, parse_sass, ptx_math_ops, ptx_target, versions

ROW_KERNELS = tuple(e.key for e in SUITE if e.family == "rows")
TARGETS = ("sm_80", "sm_90")
VARIANTS = ("eggpu", "eggpu_fast_math", "eggpu_launch", "eggpu_fast_math_launch", "triton", "triton_launch")
EXTRA_VARIANTS = ("eggpu_nounroll",)  # measured only when asked (--variants)

_ADDR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*)$")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_BRA = re.compile(r"^(?:@!?U?P[T\d]+\s+)?BRA\b.*`\((\.L_x_\d+)\)")


def sass_loops(text: str) -> list[int]:
    """Static instruction counts of the loops in ``nvdisasm -c`` output, in address order.

    A loop is a ``BRA`` (predicated or not) whose target label lies at or before it; its size
    is the number of non-NOP instructions from the target through the branch. Nested loops
    are reported separately (the outer count includes the inner). The one-instruction
    self-branch padding after the final ``EXIT`` is not a loop.
    """
    labels: dict[str, int] = {}
    instrs: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in text.splitlines():
        m = _LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = _ADDR.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        for name in pending:
            labels[name] = addr
        pending = []
        instrs.append((addr, m.group(2).strip()))
    loops = []
    for addr, ins in instrs:
        m = _BRA.match(ins)
        if m and m.group(1) in labels and labels[m.group(1)] < addr:
            start = labels[m.group(1)]
            loops.append(sum(1 for a, i in instrs if start <= a <= addr and not i.startswith("NOP")))
    return loops


def disassemble(cubin: bytes) -> str:
    """``nvdisasm -c`` of ``cubin``; RuntimeError when nvdisasm is missing or fails."""
    tool = find_tool("nvdisasm")
    if tool is None:
        raise RuntimeError("nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
    with tempfile.TemporaryDirectory(prefix="eggpu-rowq-") as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        proc = subprocess.run([str(tool), "-c", str(path)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {proc.stderr.strip()}")
    return proc.stdout


def measure_ptx(ptx: str, target: str) -> dict[str, Any]:
    """Assemble ``ptx`` for ``target`` with eggpu's ptxas and measure it (see module docs)."""
    from eggpu.codegen.ptxas import run_ptxas

    r = run_ptxas(ptx, target)
    text = disassemble(r.cubin)
    loops = sass_loops(text)
    sass = parse_sass(text, "nvdisasm")
    return {"sass": sass.instructions, "registers": r.registers, "spills": r.spills_stores + r.spills_loads,
            "loops": loops, "loop_sass": sum(loops), "ptx_math": ptx_math_ops(ptx),
            "opcodes": sass.opcodes}


def eggpu_ptx(entry: Entry, target: str, fast_math: bool, launch: bool = False) -> str:
    """eggpu's PTX; ``launch``: with the specialization facts its launcher makes for the
    benchmark's arguments (:func:`bench.quality.eggpu_launch_facts`, the twin of ``triton_launch``)."""
    import eggpu
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    from .quality import eggpu_launch_facts

    inst = get(entry.kernel).kernel(parse_dtype(entry.dtype), consts_for(entry))
    spec = eggpu_launch_facts(inst, entry) if launch else None
    return eggpu.compile(inst, target=target, fast_math=fast_math, cache=False, specialize=spec,
                         offsets_i32=launch).ptx


def triton_ptx(entry: Entry, target: str, launch: bool) -> str:
    import triton

    from .quality import _launch_args
    from .triton_kernels import ast_source, compile_options, gpu_target

    sm = int(target.removeprefix("sm_").rstrip("a"))
    src = ast_source(entry.kernel, entry.dtype, consts_for(entry), _launch_args(entry) if launch else None)
    with tempfile.TemporaryDirectory(prefix="eggpu-rowq-triton-") as tmp:
        old = triton.knobs.cache.dir
        triton.knobs.cache.dir = tmp
        try:
            k = triton.compile(src, target=gpu_target(sm), options=compile_options(4))
        finally:
            triton.knobs.cache.dir = old
    return k.asm["ptx"]


def variant_ptx(entry: Entry, target: str, variant: str) -> str:
    if variant == "eggpu":
        return eggpu_ptx(entry, target, False)
    if variant == "eggpu_fast_math":
        return eggpu_ptx(entry, target, True)
    if variant == "eggpu_launch":
        return eggpu_ptx(entry, target, False, launch=True)
    if variant == "eggpu_fast_math_launch":
        return eggpu_ptx(entry, target, True, launch=True)
    if variant in ("triton", "triton_launch"):
        return triton_ptx(entry, target, variant == "triton_launch")
    if variant == "eggpu_nounroll":  # opt-in: .pragma "nounroll" on the loops (codegen/ptx_loops.py)
        from eggpu.codegen.ptx_loops import no_unroll

        return no_unroll(eggpu_ptx(entry, target, False))
    raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS + EXTRA_VARIANTS)}")


def measure(keys: list[str], targets: list[str], variants: tuple[str, ...] = VARIANTS,
            progress=print) -> dict[str, Any]:
    """``{kernel: {target: {variant: metrics}}}``; a failing variant records its error."""
    import os

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")
    from .suite import BY_KEY

    out: dict[str, Any] = {}
    for key in keys:
        out[key] = {}
        for target in targets:
            row: dict[str, Any] = {}
            for v in variants:
                try:
                    ptx = variant_ptx(BY_KEY[key], target, v)
                    row[v] = measure_ptx(ptx, ptx_target(ptx))  # Triton targets sm_90a
                except Exception as exc:  # noqa: BLE001 - a failure is a result to report
                    row[v] = {"error": f"{type(exc).__name__}: {exc}"}
            out[key][target] = row
            progress(f"{key} {target}: " + ", ".join(
                f"{v}={m.get('sass', 'ERR')}i/{m.get('loop_sass', '?')}loop/{m.get('registers', '?')}r"
                for v, m in row.items()))
    return out


def _ratio(a: Any, b: Any) -> str:
    return f"{a / b:.2f}" if isinstance(a, int) and isinstance(b, int) and b else "-"


BEGIN, END = "<!-- BEGIN ROW QUALITY (python -m bench.row_quality) -->", "<!-- END ROW QUALITY -->"

NOTES = """\
What the variants mean: `eggpu` is the default (IEEE `div.rn.f32`, libdevice's accurate `expf`);
`eggpu_fast_math` is `fast_math=True` (`div.full.f32`, `exp` = `ex2.approx(x * log2 e)`, FP
contraction); `triton` gets only the constexprs (what eggpu gets), `triton_launch` the launcher's
specialization, and `eggpu*_launch` the same launch facts for eggpu. Triton's defaults are approximate: `div.full.f32` and a bare `ex2.approx`, so the
like-for-like comparison with `triton` is `eggpu_fast_math`. In the default column the IEEE
division's slow path (a called subroutine of ~100 SASS instructions, outside the loops) and
libdevice's range reduction are the difference. ptxas unrolls some loops 4x, which inflates the
static count, not the work per element: on sm_80 the sum loops in both codes and no store loop
(it unrolled eggpu's store loops while eggpu's cross-warp combine was uniform loads rather than
Triton's shuffle butterfly); on sm_90 it unrolls loops below a size threshold, which eggpu's
leaner layer-norm store loop is and Triton's is not (docs/codegen.md, "Cross-warp combine and
ptxas unrolling")."""


def markdown(results: dict[str, Any], command: str) -> str:
    """The docs section (between :data:`BEGIN` and :data:`END`): a table per target with SASS,
    loop SASS and registers per variant and the ratios to ``triton``."""
    lines = [BEGIN, "## Row kernels: SASS beside Triton (`python -m bench.row_quality`)", "",
             f"Command: `{command}` (no GPU needed; results in `bench/results/row_quality.json`). "
             "`sass`: static SASS instructions (same ptxas and flags for all variants); `loops`: "
             "instructions inside each SASS loop (the code run per `BLOCK_SIZE` tile); `reg`: registers. "
             "Ratios are to `triton` (same information: constexprs only).", "", NOTES, ""]
    targets = sorted({t for per in results.values() for t in per})
    for target in targets:
        lines += [f"### {target}", "",
                  "| kernel | variant | sass | loops | reg | PTX math | sass / triton | loop / triton |",
                  "|---|---|---|---|---|---|---|---|"]
        for key, per in results.items():
            row = per.get(target, {})
            tri = row.get("triton", {})
            for v, m in row.items():
                if "error" in m:
                    lines.append(f"| {key} | {v} | error: {m['error'][:80]} | | | | | |")
                    continue
                math = ", ".join(f"{k}x{n}" for k, n in m["ptx_math"].items())
                lines.append(f"| {key} | {v} | {m['sass']} | {'+'.join(map(str, m['loops'])) or '-'} | "
                             f"{m['registers']} | {math} | {_ratio(m['sass'], tri.get('sass'))} | "
                             f"{_ratio(m['loop_sass'], tri.get('loop_sass'))} |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def write_docs(results: dict[str, Any], command: str, md: Path) -> None:
    """Put :func:`markdown` into ``md`` in place of its previous row-quality section (appended
    if none); ``python -m bench report`` keeps it from ``row_quality.json``."""
    text = md.read_text() if md.exists() else ""
    section = markdown(results, command)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    md.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.row_quality", description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="*", default=list(ROW_KERNELS), choices=ROW_KERNELS)
    ap.add_argument("--targets", nargs="*", default=list(TARGETS))
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS + EXTRA_VARIANTS)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--docs", default=None, help="also update this report's section (docs/performance.md)")
    a = ap.parse_args(argv)
    command = "python -m bench.row_quality " + " ".join(argv if argv is not None else sys.argv[1:])
    results = measure(a.kernels, a.targets, tuple(a.variants))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"command": command.strip(), "versions": versions(), "results": results}
    (out / "row_quality.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    (out / "row_quality.md").write_text(markdown(results, command.strip()) + "\n")
    print(f"wrote {out / 'row_quality.json'} and {out / 'row_quality.md'}")
    if a.docs:
        write_docs(results, command.strip(), Path(a.docs))
        print(f"updated {a.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
