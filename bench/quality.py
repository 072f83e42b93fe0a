"""Static code quality: registers, spills, shared memory, PTX lines and SASS instructions.

For each suite entry and target (sm_80, sm_90) five variants are measured:

- ``eggpu`` (``optimize=True``) and ``eggpu_noopt`` (``optimize=False``): eggpu's PTX, assembled
  by :func:`eggpu.codegen.ptxas.run_ptxas` (``ptxas -v --gpu-name sm_XX``);
- ``eggpu_launch``: ``optimize=True`` with the specialization facts eggpu's launcher makes for
  the benchmark's arguments (:func:`eggpu_launch_facts`; the twin of ``triton_launch``);
- ``triton``: Triton's PTX from ``ASTSource`` with only the constexprs (the same information
  eggpu gets: no alignment or value specialization), assembled by the SAME ptxas with the SAME
  flags, so the comparison isolates the PTX each compiler produces;
- ``triton_launch``: Triton's PTX as its launcher would specialize it for the benchmark's
  arguments (pointers 16-byte aligned, integers that are multiples of 16 marked so, integers
  equal to 1 made constants), also assembled by the same ptxas: what a Triton user gets.

Triton's own cubin (its bundled ptxas, its flags, e.g. ``--fmad=false``) is recorded too for the
``triton`` variant (``own_cubin``), from ``cuobjdump --dump-resource-usage`` and nvdisasm.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from .suite import Entry, consts_for
from .tools import ptx_lines, ptx_math_ops, ptx_target, resource_usage, sass_of_cubin


def _assemble(ptx: str, target: str) -> dict[str, Any]:
    from eggpu.codegen.ptxas import run_ptxas

    r = run_ptxas(ptx, target)
    sass = sass_of_cubin(r.cubin)
    return {
        "registers": r.registers,
        "spill_stores": r.spills_stores,
        "spill_loads": r.spills_loads,
        "shared_bytes": r.shared_bytes,
        "stack_bytes": r.stack_bytes,
        "ptx_lines": ptx_lines(ptx),
        "ptx_math": ptx_math_ops(ptx),
        "sass": sass.to_json() if sass else None,
        "sass_instructions": sass.instructions if sass else None,
    }


def eggpu_launch_facts(inst: Any, entry: Entry) -> dict[str, list[str]]:
    """The specialization facts eggpu's launcher (``@eggpu.jit``, :func:`eggpu.ir.facts.facts_for_args`)
    makes for the benchmark's arguments: the same information ``triton_launch`` gets (pointers
    16-byte aligned, multiples of 16 and ones marked)."""
    from eggpu.ir.facts import facts_for_args

    args = _launch_args(entry)
    params = inst.ir().params
    names = [p.name for p in params]
    kinds = ["pointer" if p.type.is_pointer else "int" if p.type.dtype.is_int else "" for p in params]
    values = [0 if p.type.is_pointer else args.get(p.name, 0) for p in params]  # device buffers: aligned
    values = [v if v is not None else 0 for v in values]
    facts = facts_for_args(names, kinds, values, skip=[n for n, p in zip(names, params)
                                                      if not p.type.is_pointer and p.name not in args])
    return {n: list(f) for n, f in facts.items()}


def eggpu_quality(entry: Entry, target: str, optimize: bool, consts: list | None = None,
                  launch: bool = False) -> dict[str, Any]:
    import eggpu
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    consts = consts if consts is not None else consts_for(entry)
    inst = get(entry.kernel).kernel(parse_dtype(entry.dtype), consts)
    spec = eggpu_launch_facts(inst, entry) if launch else None
    ck = eggpu.compile(inst, target=target, optimize=optimize, cache=False, specialize=spec, offsets_i32=launch)
    out = _assemble(ck.ptx, target)
    rep = ck.report
    out["ir_ops_before"] = rep.get("ir_ops_before")
    out["ir_ops_after"] = rep.get("ir_ops_after")
    if optimize and rep.get("optimizer"):
        opt = rep["optimizer"]
        out["optimizer"] = {k: opt.get(k) for k in ("rules_fired", "cost_before", "cost_after", "validation",
                                                   "stop_reason", "egraph_nodes", "fell_back")}
    return out


def _launch_args(entry: Entry) -> dict[str, Any]:
    """The scalar arguments of the GPU benchmark launch (for Triton's value specialization)."""
    if entry.family == "1d":
        return {"n": entry.shape[0]}
    if entry.family == "rows":
        return {"n_cols": entry.shape[1], "row_stride": entry.shape[1]}
    m, n, k = entry.shape
    # A row-major, B row-major, C row-major (as the GPU benchmark launches it)
    return {"M": m, "N": n, "K": k, "stride_am": k, "stride_ak": 1, "stride_bk": n, "stride_bn": 1,
            "stride_cm": n, "stride_cn": 1}


def triton_quality(entry: Entry, target: str, launch: bool, consts: list | None = None) -> dict[str, Any]:
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")
    import triton

    from . import triton_kernels as tk

    consts = consts if consts is not None else consts_for(entry)
    sm = int(target.removeprefix("sm_").rstrip("a"))
    src = tk.ast_source(entry.kernel, entry.dtype, consts, _launch_args(entry) if launch else None)
    with tempfile.TemporaryDirectory(prefix="eggpu-bench-triton-") as tmp:
        old = triton.knobs.cache.dir
        triton.knobs.cache.dir = tmp
        try:
            k = triton.compile(src, target=tk.gpu_target(sm), options=tk.compile_options(4))
        finally:
            triton.knobs.cache.dir = old
    ptx = k.asm["ptx"]
    out = _assemble(ptx, ptx_target(ptx))
    out["dynamic_shared_bytes"] = getattr(k.metadata, "shared", None)  # Triton's shared memory is dynamic
    if not launch:
        own = k.asm["cubin"]
        sass = sass_of_cubin(own)
        out["own_cubin"] = {"resources": resource_usage(own),
                            "sass_instructions": sass.instructions if sass else None}
    return out


def measure(entries: list[Entry], targets: tuple[str, ...], progress=print, optimize: bool = True) -> dict[str, Any]:
    """``{entry key: {target: {variant: metrics}}}``; a failing variant records its error."""
    out: dict[str, Any] = {}
    for e in entries:
        consts = consts_for(e)
        out[e.key] = {}
        for target in targets:
            row: dict[str, Any] = {}
            variants = {
                "eggpu": (eggpu_quality, True),
                "eggpu_launch": (lambda e_, t_, f_, c_: eggpu_quality(e_, t_, f_, c_, launch=True), True),
                "eggpu_noopt": (eggpu_quality, False),
                "triton": (triton_quality, False),
                "triton_launch": (triton_quality, True),
            }
            if not optimize:
                del variants["eggpu"], variants["eggpu_launch"]
            for name, (fn, flag) in variants.items():
                try:
                    row[name] = fn(e, target, flag, consts)
                except Exception as exc:  # noqa: BLE001 - a failure is a result to report
                    row[name] = {"error": f"{type(exc).__name__}: {exc}"}
            out[e.key][target] = row
            progress(f"  quality {e.key} {target}: " + ", ".join(
                f"{k}={v.get('registers', 'ERR')}r/{v.get('sass_instructions', '?')}i" for k, v in row.items()))
    return out
