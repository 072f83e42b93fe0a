"""Static code quality of the tensor-core matmul, eggpu beside Triton (no GPU needed).

For f16 ``C = A @ B`` with f32 accumulation over a K loop (``acc = tl.dot(a, b, acc)``), tiles
64x64x32 and 128x128x32, ``num_warps=4``, on sm_80 and sm_90, both compilers get the same
source text (:func:`matmul_source`) and the same constexprs; this script records per
configuration:

- ``registers``, ``spill_stores``, ``spill_loads`` (bytes): ``ptxas -v``;
- ``sass_total``: SASS instructions of the cubin (nvdisasm, NVIDIA's wheel);
- ``sass_k_loop``: SASS instructions of the K loop (the innermost loop containing ``HMMA``:
  from the target label of its backward branch to that branch), with its opcode histogram;
- on sm_90 also ``eggpu_wgmma`` and ``eggpu_wgmma_stages3``: the opt-in ``dot_strategy="wgmma"``
  compiled for ``sm_90a`` with ``num_stages=1`` (operands staged through registers, one
  ``wgmma.wait_group 0`` per step) and ``num_stages=3`` (``cp.async`` stages in the descriptors'
  swizzled layout, one wgmma group in flight, when the loads are proven 16-byte contiguous: with
  the launch facts), beside Triton's sm_90a builds with the same ``num_stages``;
- the counts of ``HMMA``/``HGMMA``, shared loads/stores (``LDS``/``LDSM``/``STS``) and barriers
  (``BAR``) in the K loop: the shared-memory traffic per iteration.

Both compilers run with ``num_stages=1`` (no software pipelining) and with Triton's default
``num_stages=3`` (eggpu: ``cp.async`` stages, :mod:`eggpu.codegen.mma_pipeline`, when the
loads are proven 16-byte contiguous); the ratios compare like with like. Every configuration runs
twice: without launch facts (what ``.specialize(...).ir()`` gives eggpu; Triton gets no
``attrs``), and with the facts Triton's launcher derives for 16-byte-aligned pointers and sizes
that are multiples of 16 (eggpu: ``align16``/``div16`` facts; Triton: ``tt.divisibility``),
where loads vectorize and both compilers' ``num_stages=3`` pipeline with ``cp.async``. Results go to
``bench/results/mma_static.json``. Usage: ``python -m bench.mma_static [--quick] [--no-write]``
(``--quick``: 64x64x32 on sm_80 only).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "mma_static.json"
TILES = ((64, 64, 32), (128, 128, 32))
TARGETS = ("sm_80", "sm_90")
NUM_WARPS = 4
SHAPE = (1000, 1000, 1000)  # M, N, K of the specialization (runtime scalars: only their types matter)
FACTS = {"a_ptr": ["align16"], "b_ptr": ["align16"], "c_ptr": ["align16"], "M": ["div16"], "N": ["div16"],
         "K": ["div16"]}

MATMUL_SOURCE = '''
@jit
def matmul_kloop(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
'''


def matmul_source(tool: str):
    """The matmul kernel compiled by ``tool`` (``"eggpu"`` or ``"triton"``) from the one source text.

    Triton's ``@jit`` needs its source in a real file (it reads it with ``inspect``), so the text
    is written to a temporary module and imported."""
    import importlib.util

    if tool == "eggpu":
        header = "import eggpu\nimport eggpu.language as tl\njit = eggpu.jit\n"
    else:
        header = "import triton\nimport triton.language as tl\njit = triton.jit\n"
    tmp = Path(tempfile.mkdtemp(prefix="eggpu-mma-static-"))
    path = tmp / f"mma_static_{tool}.py"
    path.write_text(header + MATMUL_SOURCE)
    spec = importlib.util.spec_from_file_location(f"mma_static_{tool}", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = mod  # type: ignore[union-attr]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.matmul_kloop


# ------------------------------------------------------------------ SASS


_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)(.*)$")
_LABEL = re.compile(r"^\s*(\.L_\w+):")
_TARGET = re.compile(r"`\((\.L_\w+)\)")


def disassemble(cubin: bytes) -> str | None:
    """``nvdisasm -c`` text of ``cubin`` (None when nvdisasm is not installed)."""
    from bench.tools import find_tool

    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is None:
        return None
    with tempfile.TemporaryDirectory(prefix="eggpu-mma-static-") as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        proc = subprocess.run([str(nvdisasm), "-c", str(path)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {proc.stderr.strip()}")
    return proc.stdout


def parse_instructions(text: str) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """``([(opcode, operands)...], {label: index of the next instruction})`` of nvdisasm text (NOPs and
    never-executed ``@!PT`` instructions dropped: ptxas pads ``LDGSTS`` with ``@!PT LDS RZ, [RZ]``)."""
    instrs: list[tuple[str, str]] = []
    labels: dict[str, int] = {}
    for line in text.splitlines():
        if m := _LABEL.match(line):
            labels[m.group(1)] = len(instrs)
            continue
        if m := _LINE.match(line):
            if m.group(3) != "NOP" and (m.group(2) or "").strip() != "@!PT":
                instrs.append((m.group(3), m.group(5)))
    return instrs, labels


def _innermost(spans: list[tuple[int, int]], contains) -> tuple[int, int] | None:
    """The smallest loop extent among ``spans`` (``(header, backward branch)`` index pairs) for
    which ``contains(start, end)`` holds; a header's extent ends at its LAST backward branch
    (a rotated loop branches back to its header from more than one place)."""
    last: dict[int, int] = {}
    for start, end in spans:
        last[start] = max(end, last.get(start, end))
    loops = [(s, e) for s, e in last.items() if contains(s, e)]
    return min(loops, key=lambda se: se[1] - se[0]) if loops else None


def k_loop(text: str, markers: tuple[str, ...] = ("HMMA", "HGMMA")) -> list[str]:
    """Opcodes of the innermost loop containing a tensor-core instruction (``markers``): from the
    label backward ``BRA``s target up to the last of them ([] when no loop contains a marker)."""
    instrs, labels = parse_instructions(text)
    spans = []
    for i, (op, rest) in enumerate(instrs):
        m = _TARGET.search(rest) if op == "BRA" else None
        if m and m.group(1) in labels and labels[m.group(1)] <= i:
            spans.append((labels[m.group(1)], i))
    best = _innermost(spans, lambda s, e: any(o in markers for o, _ in instrs[s:e + 1]))
    return [] if best is None else [op for op, _ in instrs[best[0]:best[1] + 1]]


SHARED_OPS = ("LDS", "LDSM", "STS", "LDGSTS", "LDGDEPBAR", "DEPBAR")


def sass_summary(cubin: bytes) -> dict[str, Any]:
    """SASS totals and the K loop's instruction count and shared-memory traffic."""
    text = disassemble(cubin)
    if text is None:
        return {"sass": "nvdisasm not installed (pip install nvidia-cuda-nvdisasm)"}
    instrs, _ = parse_instructions(text)
    body = k_loop(text)
    hist = Counter(body)
    return {"sass_total": len(instrs), "sass_k_loop": len(body),
            "k_loop_hmma": hist.get("HMMA", 0) + hist.get("HGMMA", 0), "k_loop_shared": {op: hist[op] for op in SHARED_OPS if hist.get(op)},
            "k_loop_bar": hist.get("BAR", 0), "k_loop_opcodes": dict(hist.most_common())}


# ------------------------------------------------------------------ compilers


def _ptxas_fields(ptx: str, target: str) -> tuple[dict[str, Any], bytes]:
    from eggpu.codegen.ptxas import run_ptxas

    rep = run_ptxas(ptx, target)
    return {"registers": rep.registers, "spill_stores": rep.spills_stores, "spill_loads": rep.spills_loads,
            "shared_bytes": rep.shared_bytes}, rep.cubin


def eggpu_case(tile: tuple[int, int, int], target: str, facts: bool = False, num_stages: int = 1,
               dot_strategy: str | None = None) -> dict[str, Any]:
    """Compile the matmul with eggpu's codegen (unoptimized IR: the dot lowering is what is measured).

    ``facts``: the launch facts Triton's launcher derives for 16-aligned pointers and sizes that
    are multiples of 16 (``align16`` on the pointers, ``div16`` on M, N, K). ``dot_strategy``:
    the compile option (``"wgmma"``: compiled for ``sm_90a``, as Triton compiles for sm_90)."""
    from eggpu.codegen import compile_ptx_module
    from eggpu.ir.facts import Facts

    bm, bn, bk = tile
    M, N, K = SHAPE
    kern = matmul_source("eggpu")
    a = np.zeros((M, K), np.float16)
    b = np.zeros((K, N), np.float16)
    c = np.zeros((M, N), np.float32)
    fn = kern.specialize(a, b, c, M, N, K, BM=bm, BN=bn, BK=bk).ir()
    if facts:
        fn.facts = fn.facts.merged(Facts.make(FACTS))
    cp = compile_ptx_module(fn, target, num_warps=NUM_WARPS, num_stages=num_stages, dot_strategy=dot_strategy)
    out, cubin = _ptxas_fields(cp.ptx, target)
    out["dot"] = [d["strategy"] for d in cp.lowered.dots]
    out["pipelined"] = [bool(d.get("pipelined")) for d in cp.lowered.dots]
    out["ptx_smem_traffic_in_loop"] = ptx_loop_shared_ops(cp.ptx)
    return out | sass_summary(cubin)


def triton_case(tile: tuple[int, int, int], target: str, num_stages: int, facts: bool = False) -> dict[str, Any]:
    """Compile the same source with Triton for ``target`` (PTX without a GPU), then ptxas it like
    eggpu's; ``facts``: ``tt.divisibility = 16`` on the pointers and M, N, K (:func:`eggpu_case`)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bm, bn, bk = tile
    kern = matmul_source("triton")
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)} if facts else None
    src = ASTSource(fn=kern, signature=sig, constexprs={"BM": bm, "BN": bn, "BK": bk}, attrs=attrs)
    sm = int(target[3:])
    ck = triton.compile(src, target=GPUTarget("cuda", sm, 32),
                        options={"num_warps": NUM_WARPS, "num_stages": num_stages, "enable_fp_fusion": False})
    ptx = ck.asm["ptx"]
    from bench.tools import ptx_target

    out, cubin = _ptxas_fields(ptx, ptx_target(ptx))  # sm_90 -> Triton's sm_90a (wgmma)
    out["ptx_target"] = ptx_target(ptx)
    out["ptx_smem_traffic_in_loop"] = ptx_loop_shared_ops(ptx)
    return out | sass_summary(cubin)


_PTX_LABEL = re.compile(r"^\s*(\$?\w+):")
_PTX_BRA = re.compile(r"^\s*(?:@%p\d+\s+)?bra(?:\.uni)?\s+(\$?\w+);")


def ptx_k_loop(ptx: str) -> list[str]:
    """The PTX lines of the innermost loop containing ``mma.sync`` or ``wgmma.mma_async`` (as
    :func:`k_loop`; [] when none)."""
    lines = ptx.splitlines()
    labels = {m.group(1): i for i, ln in enumerate(lines) if (m := _PTX_LABEL.match(ln))}
    spans = [(labels[m.group(1)], i) for i, ln in enumerate(lines)
             if (m := _PTX_BRA.match(ln)) and m.group(1) in labels and labels[m.group(1)] < i]
    best = _innermost(spans, lambda s, e: any("mma.sync" in x or "wgmma.mma_async" in x for x in lines[s:e]))
    return [] if best is None else lines[best[0]:best[1] + 1]


def ptx_loop_shared_ops(ptx: str) -> dict[str, int]:
    """Shared-memory instructions (``st.shared``, ``ld.shared``, ``ldmatrix``, ``cp.async``),
    ``bar.sync`` and ``mma.sync`` in :func:`ptx_k_loop` (empty when there is no such loop)."""
    count: Counter = Counter()
    for ln in ptx_k_loop(ptx):
        for key in ("st.shared", "ld.shared", "ldmatrix", "cp.async", "bar.sync", "mma.sync", "wgmma.mma_async"):
            if key in ln:
                count[key] += 1
    return dict(count)


# ------------------------------------------------------------------ driver


def run(quick: bool = False) -> dict[str, Any]:
    tiles = TILES[:1] if quick else TILES
    targets = TARGETS[:1] if quick else TARGETS
    rows = []
    for facts in (False, True):
        for tile in tiles:
            for target in targets:
                rows.append(_row(tile, target, facts))
    from bench.tools import versions

    return {"command": "python -m bench.mma_static" + (" --quick" if quick else ""), "dtype": "f16 -> f32",
            "versions": versions(), "rows": rows}


def _row(tile: tuple[int, int, int], target: str, facts: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"tile": list(tile), "target": target, "num_warps": NUM_WARPS,
                           "facts": "align16 pointers, div16 M/N/K" if facts else "none"}
    row["eggpu"] = eggpu_case(tile, target, facts)
    row["eggpu_stages3"] = eggpu_case(tile, target, facts, num_stages=3)
    if target == "sm_90":  # the opt-in wgmma strategy, for sm_90a as Triton's sm_90 build
        row["eggpu_wgmma"] = eggpu_case(tile, "sm_90a", facts, dot_strategy="wgmma")
        row["eggpu_wgmma_stages3"] = eggpu_case(tile, "sm_90a", facts, num_stages=3, dot_strategy="wgmma")
    for stages in (1, 3):
        try:
            row[f"triton_stages{stages}"] = triton_case(tile, target, stages, facts)
        except Exception as e:  # noqa: BLE001 - Triton's own failure is a result to record
            row[f"triton_stages{stages}"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    t = row["triton_stages1"]
    e = row["eggpu"]
    if "registers" in t:
        row["ratio_registers_vs_triton1"] = round(e["registers"] / t["registers"], 3)
    if "sass_k_loop" in t and "sass_k_loop" in e and t["sass_k_loop"]:
        row["ratio_k_loop_sass_vs_triton1"] = round(e["sass_k_loop"] / t["sass_k_loop"], 3)
    w = row.get("eggpu_wgmma", {})
    if "registers" in t and "registers" in w:
        row["ratio_registers_wgmma_vs_triton1"] = round(w["registers"] / t["registers"], 3)
    if t.get("sass_k_loop") and w.get("sass_k_loop"):
        row["ratio_k_loop_sass_wgmma_vs_triton1"] = round(w["sass_k_loop"] / t["sass_k_loop"], 3)
    t3, e3 = row["triton_stages3"], row["eggpu_stages3"]
    w3 = row.get("eggpu_wgmma_stages3", {})
    if "registers" in t3 and "registers" in w3:
        row["ratio_registers_wgmma_stages3_vs_triton3"] = round(w3["registers"] / t3["registers"], 3)
    if t3.get("sass_k_loop") and w3.get("sass_k_loop"):
        row["ratio_k_loop_sass_wgmma_stages3_vs_triton3"] = round(w3["sass_k_loop"] / t3["sass_k_loop"], 3)
    if "registers" in t3:
        row["ratio_registers_stages3_vs_triton3"] = round(e3["registers"] / t3["registers"], 3)
    if t3.get("sass_k_loop") and "sass_k_loop" in e3:
        row["ratio_k_loop_sass_stages3_vs_triton3"] = round(e3["sass_k_loop"] / t3["sass_k_loop"], 3)
    return row


def table(res: dict[str, Any]) -> str:
    """A Markdown table of the results."""
    cols = ("registers", "spill_stores", "sass_total", "sass_k_loop", "k_loop_hmma", "k_loop_bar")
    out = ["| tile | target | facts | compiler | " + " | ".join(cols) + " | K-loop shared ops |",
           "|---" * (len(cols) + 5) + "|"]
    for row in res["rows"]:
        for who in ("eggpu", "eggpu_wgmma", "triton_stages1", "eggpu_stages3", "eggpu_wgmma_stages3", "triton_stages3"):
            if who not in row:
                continue
            r = row[who]
            vals = [str(r.get(c, r.get("error", "-"))) for c in cols]
            out.append(f"| {'x'.join(map(str, row['tile']))} | {row['target']} | {'div16' if row['facts'] != 'none' else 'none'} | {who} | "
                       + " | ".join(vals)
                       + f" | {r.get('k_loop_shared', {})} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="64x64x32 on sm_80 only")
    ap.add_argument("--no-write", action="store_true", help=f"do not write {RESULTS.relative_to(REPO)}")
    args = ap.parse_args(argv)
    res = run(args.quick)
    print(table(res))
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
        print(f"wrote {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
