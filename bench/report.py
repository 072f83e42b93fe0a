"""Render benchmark JSON as ``docs/performance.md`` plus PNG plots in ``docs/img/``.

Everything in the report is computed from the JSON; the goals are fixed here (from issues 2, 4,
5 and 6) and each is reported as measured value, ratio and met / NOT MET. Nothing is tuned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .markdown import fmt as _f
from .markdown import table as _table
from .report_gpu import gpu_naive as _gpu_naive
from .report_gpu import gpu_variants as _gpu_variants
from .report_gpu import launch_goal as _launch_goal
from .stats import ratio
from .suite import BY_KEY, COLD_COMPILE_GOAL_KERNELS

REPO_RESULTS = Path(__file__).resolve().parent / "results"

GOAL_COLD_RATIO = 0.5
GOAL_HIT_MS = 30.0
GOAL_FRONTEND_MS = 50.0
GOAL_IMPORT_MS = 300.0
GOAL_MATMUL_REG_RATIO = 1.5
GOAL_COPY_FRACTION = 0.9


def _med(d: dict | None, *path: str) -> float | None:
    cur: Any = d
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    if isinstance(cur, dict):
        return cur.get("median")
    return cur


def _status(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**NOT MET**")


def _memory_bound(key: str) -> bool:
    e = BY_KEY.get(key)
    return bool(e and e.memory_bound)


# --------------------------------------------------------------------------- goals


def goals(res: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (goal, kernel[, target]): measured, reference, ratio, ok (None = not measured)."""
    rows: list[dict[str, Any]] = []
    comp = res.get("compile", {})
    for key, r in comp.items():
        if key not in COLD_COMPILE_GOAL_KERNELS:
            continue
        for variant, label in (("cold", "cold compile (kernel cache empty, rule proofs cached)"),
                               ("cold_empty", "cold compile (everything empty, rule proofs included)")):
            e, t = _med(r, "eggpu", variant, "total"), _med(r, "triton", "cold", "total")
            if e is None and variant == "cold_empty":
                continue  # measured for the first suite kernel only
            q = ratio(e, t)
            rows.append({"goal": f"{label} ≤ {GOAL_COLD_RATIO}× Triton", "kernel": key,
                         "measured": f"{_f(e)} ms vs {_f(t)} ms", "ratio": q,
                         "ok": None if q is None else q <= GOAL_COLD_RATIO})
    for key, r in comp.items():
        e = _med(r, "eggpu", "hit", "total")
        rows.append({"goal": f"fresh-process cache hit ≤ {GOAL_HIT_MS:.0f} ms (import to result)", "kernel": key,
                     "measured": f"{_f(e, '{:.1f}')} ms (process wall {_f(_med(r, 'eggpu', 'hit', 'wall'))} ms; "
                                 f"Triton {_f(_med(r, 'triton', 'hit', 'total'))} ms)",
                     "ratio": ratio(e, GOAL_HIT_MS), "ok": None if e is None else e <= GOAL_HIT_MS})
    for key, per_target in res.get("quality", {}).items():
        for target, q in per_target.items():
            # without the optimizer (python -m bench --no-optimize) only the -O0 variant exists
            eg, tr = q.get("eggpu") or q.get("eggpu_noopt", {}), q.get("triton", {})
            if "eggpu" not in q:
                target = f"{target} (optimize=False)"
            er, trr = eg.get("registers"), tr.get("registers")
            spills = (eg.get("spill_stores") or 0) + (eg.get("spill_loads") or 0) if "registers" in eg else None
            if _memory_bound(key):
                ok = None if er is None or trr is None else (er <= trr and spills == 0)
                rows.append({"goal": "registers ≤ Triton, no spills (memory-bound)", "kernel": f"{key} {target}",
                             "measured": f"{_f(er)} vs {_f(trr)}, spills {_f(spills)}", "ratio": ratio(er, trr),
                             "ok": ok})
                es, ts = eg.get("sass_instructions"), tr.get("sass_instructions")
                rows.append({"goal": "SASS instructions ≤ Triton (memory-bound)", "kernel": f"{key} {target}",
                             "measured": f"{_f(es)} vs {_f(ts)}", "ratio": ratio(es, ts),
                             "ok": None if es is None or ts is None else es <= ts})
            elif BY_KEY.get(key) and BY_KEY[key].kernel == "matmul":
                q_ = ratio(er, trr)
                rows.append({"goal": f"matmul registers ≤ {GOAL_MATMUL_REG_RATIO}× Triton, no spills",
                             "kernel": f"{key} {target}", "measured": f"{_f(er)} vs {_f(trr)}, spills {_f(spills)}",
                             "ratio": q_, "ok": None if q_ is None else (q_ <= GOAL_MATMUL_REG_RATIO and spills == 0)})
    fe = res.get("frontend", {})
    if fe:
        worst_key = max(fe, key=lambda k: fe[k]["warm"]["median"] or 0)
        worst = fe[worst_key]["warm"]["median"]
        rows.append({"goal": f"frontend + IR ≤ {GOAL_FRONTEND_MS:.0f} ms per library kernel (warm median, worst)",
                     "kernel": worst_key, "measured": f"{_f(worst, '{:.1f}')} ms",
                     "ratio": ratio(worst, GOAL_FRONTEND_MS), "ok": worst <= GOAL_FRONTEND_MS})
        worst_first_key = max(fe, key=lambda k: fe[k]["first_ms"] or 0)
        wf = fe[worst_first_key]["first_ms"]
        rows.append({"goal": f"frontend + IR ≤ {GOAL_FRONTEND_MS:.0f} ms per library kernel (first call, worst)",
                     "kernel": worst_first_key, "measured": f"{_f(wf, '{:.1f}')} ms",
                     "ratio": ratio(wf, GOAL_FRONTEND_MS), "ok": wf <= GOAL_FRONTEND_MS})
    imp = _med(res.get("import"), "eggpu")
    if imp is not None:
        rows.append({"goal": f"`import eggpu` ≤ {GOAL_IMPORT_MS / 1e3:.1f} s", "kernel": "–",
                     "measured": f"{_f(imp)} ms", "ratio": ratio(imp, GOAL_IMPORT_MS), "ok": imp <= GOAL_IMPORT_MS})
    gpu = res.get("gpu", {})
    kern = gpu.get("kernels", {}) if isinstance(gpu, dict) else {}
    if kern:
        va = kern.get("vector_add", {}).get("eggpu", {})
        frac = va.get("fraction_of_copy")
        rows.append({"goal": f"GPU: vector add ≥ {GOAL_COPY_FRACTION:.0%} of copy bandwidth", "kernel": "vector_add",
                     "measured": f"{_f(va.get('gbps'))} GB/s of {_f(gpu.get('copy', {}).get('gbps'))} GB/s",
                     "ratio": frac, "ok": None if frac is None else frac >= GOAL_COPY_FRACTION})
        for key in ("softmax_forward", "layer_norm_forward", "cross_entropy_forward", "row_argmax"):
            k = kern.get(key, {})
            q = k.get("eggpu_over_triton_time")
            rows.append({"goal": "GPU: time ≤ Triton", "kernel": key,
                         "measured": f"{_f(_med(k, 'eggpu', 'median_ms'), '{:.3f}')} ms vs "
                                     f"{_f(_med(k, 'triton', 'median_ms'), '{:.3f}')} ms",
                         "ratio": q, "ok": None if q is None else q <= 1.0})
    rows += _launch_goal(res.get("launch") or _stored("launch.json"))
    return rows


def _stored(name: str) -> dict[str, Any] | None:
    """A result file another command keeps in bench/results (None when absent or unreadable)."""
    path = REPO_RESULTS / name
    try:
        return json.loads(path.read_text()) if path.exists() else None
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- breakdown


def eggpu_breakdown(cold: dict[str, Any]) -> list[tuple[str, float]]:
    """eggpu's cold compile split into parts (ms, medians over the repetitions), summing to the
    median total: interpreter-level imports, the pipeline's stages, the optimizer's set-up and
    stages (what ``optimize`` spends outside them is "optimizer: other"), and the rest."""
    if not cold or not cold.get("total"):
        return []
    total = _med(cold, "total") or 0.0
    imp = _med(cold, "import") or 0.0
    lib = max(0.0, (_med(cold, "import_kernels") or 0.0) - imp)
    st = dict(cold.get("stages_ms") or {})
    setup = dict(cold.get("optimizer_setup_ms") or {})
    ost = dict(cold.get("optimizer_stages_ms") or {})
    parts: list[tuple[str, float]] = [("import eggpu", imp), ("import kernel library", lib)]
    opt_import = _med(cold, "optimizer_import") or 0.0
    if opt_import:
        parts.append(("import optimizer (z3, egglog)", opt_import))
    parts.append(("frontend", st.pop("frontend", 0.0)))
    optimize = st.pop("optimize", None)
    if optimize is not None:
        verify = setup.get("verify_rules", 0.0)
        prep = setup.get("prepare_rules", 0.0)
        inner = [("optimizer: verify rules (proof cache, z3)", verify),
                 ("optimizer: load rules (incl. first import of egglog)", max(0.0, prep - verify)),
                 ("optimizer: e-graph set-up", setup.get("_base_egraph", 0.0))]
        inner += [(f"optimizer: {k}", v) for k, v in ost.items()]
        parts += inner
        parts.append(("optimizer: other", max(0.0, optimize - sum(v for _, v in inner))))
    parts += [(k, v) for k, v in st.items()]
    parts.append(("other (cache, hashing, process)", max(0.0, total - sum(v for _, v in parts))))
    return [(k, v) for k, v in parts if v > 0.05]


# --------------------------------------------------------------------------- plots


def plots(res: dict[str, Any], img: Path) -> list[str]:
    """Write the PNGs; return their file names (relative to ``img``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    made: list[str] = []
    comp = res.get("compile", {})
    if comp:
        keys = list(comp)
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
        w = 0.27
        xs = range(len(keys))
        series = [("eggpu cold (proofs cached)", "eggpu", "cold", "#1f77b4"),
                  ("eggpu cold (all empty)", "eggpu", "cold_empty", "#aec7e8"),
                  ("Triton cold", "triton", "cold", "#ff7f0e")]
        for i, (label, tool, var, color) in enumerate(series):
            vals = [(_med(comp[k], tool, var, "total") or 0) / 1e3 for k in keys]
            lo = [(v - (comp[k].get(tool, {}).get(var, {}).get("total", {}).get("min") or 0) / 1e3) for k, v in
                  zip(keys, vals)]
            hi = [((comp[k].get(tool, {}).get(var, {}).get("total", {}).get("max") or 0) / 1e3 - v) for k, v in
                  zip(keys, vals)]
            axes[0].bar([x + (i - 1) * w for x in xs], vals, w, label=label, color=color,
                        yerr=[[max(0, v) for v in lo], [max(0, v) for v in hi]], capsize=2)
        axes[0].set_xticks(list(xs), keys, rotation=35, ha="right")
        axes[0].set_yscale("log")
        axes[0].set_ylabel("seconds, log scale (fresh process, import to cubin)")
        axes[0].set_title("Cold compile (median, min–max)")
        axes[0].legend(fontsize=8)
        for i, (label, tool, color) in enumerate((("eggpu", "eggpu", "#1f77b4"), ("Triton", "triton", "#ff7f0e"))):
            vals = [_med(comp[k], tool, "hit", "total") or 0 for k in keys]
            axes[1].bar([x + (i - 0.5) * w for x in xs], vals, w, label=label, color=color)
        axes[1].axhline(GOAL_HIT_MS, color="k", ls="--", lw=1, label=f"goal {GOAL_HIT_MS:.0f} ms")
        axes[1].set_xticks(list(xs), keys, rotation=35, ha="right")
        axes[1].set_ylabel("ms (fresh process, import to result)")
        axes[1].set_title("Cache hit in a fresh process (median)")
        axes[1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(img / "compile_time.png", dpi=110)
        plt.close(fig)
        made.append("compile_time.png")

        breakdowns = {k: eggpu_breakdown(comp[k].get("eggpu", {}).get("cold", {})) for k in keys}
        labels = list(dict.fromkeys(lbl for b in breakdowns.values() for lbl, _ in b))
        if labels:
            fig, ax = plt.subplots(figsize=(11, 5))
            bottom = [0.0] * len(keys)
            cmap = plt.get_cmap("tab20")
            for i, label in enumerate(labels):
                vals = [dict(breakdowns[k]).get(label, 0.0) / 1e3 for k in keys]
                ax.bar(list(xs), vals, 0.6, bottom=bottom, label=label, color=cmap(i % 20))
                bottom = [b + v for b, v in zip(bottom, vals)]
            ax.set_xticks(list(xs), keys, rotation=35, ha="right")
            ax.set_ylabel("seconds")
            ax.set_title("Where eggpu's cold compile goes (medians, fresh process, proof cache filled)")
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            fig.tight_layout()
            fig.savefig(img / "compile_stages.png", dpi=110)
            plt.close(fig)
            made.append("compile_stages.png")
    qual = res.get("quality", {})
    if qual:
        keys = list(qual)
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
        variants = [("eggpu", "#1f77b4"), ("eggpu_noopt", "#aec7e8"), ("triton", "#ff7f0e"),
                    ("triton_launch", "#ffbb78")]
        w = 0.2
        xs = range(len(keys))
        for ax, metric, title in ((axes[0], "registers", "Registers per thread (sm_90, same ptxas)"),
                                  (axes[1], "sass_instructions", "SASS instructions (sm_90)")):
            for i, (v, color) in enumerate(variants):
                vals = [(qual[k].get("sm_90", {}).get(v, {}) or {}).get(metric) or 0 for k in keys]
                ax.bar([x + (i - 1.5) * w for x in xs], vals, w, label=v, color=color)
            ax.set_xticks(list(xs), keys, rotation=35, ha="right")
            ax.set_title(title)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(img / "code_quality.png", dpi=110)
        plt.close(fig)
        made.append("code_quality.png")
    gpu = res.get("gpu", {})
    if isinstance(gpu, dict) and gpu.get("kernels"):
        kern = gpu["kernels"]
        keys = [k for k in kern if _memory_bound(k)]
        fig, ax = plt.subplots(figsize=(10, 4.5))
        w = 0.35
        for i, (tool, color) in enumerate((("eggpu", "#1f77b4"), ("triton", "#ff7f0e"))):
            vals = [kern[k].get(tool, {}).get("gbps") or 0 for k in keys]
            ax.bar([x + (i - 0.5) * w for x in range(len(keys))], vals, w, label=tool, color=color)
        ax.axhline(gpu["copy"]["gbps"], color="k", ls="--", lw=1, label="device copy bandwidth")
        ax.set_xticks(range(len(keys)), keys, rotation=35, ha="right")
        ax.set_ylabel("GB/s (compulsory bytes / median time)")
        ax.set_title(f"Achieved bandwidth on {gpu.get('device')}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(img / "gpu_bandwidth.png", dpi=110)
        plt.close(fig)
        made.append("gpu_bandwidth.png")
    return made


# --------------------------------------------------------------------------- markdown


def _versions(meta: dict[str, Any]) -> str:
    v = meta.get("versions", {})
    tool = lambda name: (v.get(name) or {}).get("version") if isinstance(v.get(name), dict) else v.get(name)  # noqa: E731
    parts = [f"eggpu {v.get('eggpu')}", f"Triton {v.get('triton')}", f"llvmlite {v.get('llvmlite')} (LLVM {v.get('llvm')})",
             f"z3 {v.get('z3-solver')}", f"egglog {v.get('egglog')}", f"numpy {v.get('numpy')}",
             f"ptxas {tool('ptxas')} (`{(v.get('ptxas') or {}).get('path')}`)",
             f"Triton's own ptxas {tool('triton_ptxas')}",
             f"nvdisasm {tool('nvdisasm')} (`{(v.get('nvdisasm') or {}).get('path')}`)",
             f"cuobjdump {tool('cuobjdump')}"]
    m = meta.get("machine", {})
    return ("- Versions: " + ", ".join(parts) + ".\n"
            f"- Machine: {m.get('cpu')}, {m.get('cpu_count')} cores, {m.get('memory_gib')} GiB, "
            f"Python {m.get('python')}, {m.get('platform')}; load average (1, 5, 15 min) at the start "
            f"{m.get('load_average')}, at the end {meta.get('load_average_end')} (anything above 0 is other "
            "work sharing the CPUs during the run).\n")


def markdown(res: dict[str, Any], images: list[str]) -> str:
    meta = res.get("meta", {})
    L: list[str] = []
    L.append("# Performance: eggpu vs Triton\n")
    L.append("_Generated by `python -m bench` from `bench/results/latest.json`; do not edit by hand "
             "(regenerate with `python -m bench report`)._\n")
    L.append(f"- Run: {meta.get('date')}, `{meta.get('command')}`, {meta.get('seconds')} s; "
             f"{meta.get('reps')} repetitions per measurement (fully-empty-cache compiles: "
             f"{meta.get('reps_empty')}, cold rule proofs: {meta.get('reps_proofs')}).")
    L.append(f"- Compile times target `{meta.get('timing_target')}`; static code quality `"
             + "`, `".join(meta.get("targets", [])) + f"`; `num_warps = {meta.get('num_warps')}` on both sides.")
    L.append("- Triton options: " + ", ".join(f"{k}={v}" for k, v in meta.get("triton_options", {}).items())
             + "; eggpu options: " + ", ".join(f"{k}={v}" for k, v in meta.get("eggpu_options", {}).items()) + ".")
    L.append(_versions(meta))
    if meta.get("source_digest") and meta.get("source_digest_end") and \
            meta["source_digest"] != meta["source_digest_end"]:
        L.append("- **Warning: eggpu's source or rule files changed during this run** (digest "
                 f"{meta['source_digest']} → {meta['source_digest_end']}); its numbers mix versions. Re-run.")
    for n in meta.get("notes", []):
        L.append(f"- Note: {n}")
    L.append("")
    # ---- goals
    rows = goals(res)
    L.append("## Goals\n")
    L.append("Each goal from the issues, as measured in this run. A ratio is eggpu / reference "
             "(for the cache hit: measured / 30 ms); below 1 is better except for bandwidth.\n")
    L.append(_table(["goal", "kernel", "measured (eggpu vs Triton)", "ratio", "status"],
                    [[r["goal"], r["kernel"], r["measured"], _f(r["ratio"], "{:.2f}"), _status(r["ok"])] for r in rows]))
    short = [r for r in rows if r["ok"] is False]
    L.append("")
    if short:
        L.append(f"**eggpu falls short of {len(short)} of {sum(1 for r in rows if r['ok'] is not None)} "
                 "measured goal rows.** " + _shortfall_summary(res, short) + "\n")
    else:
        L.append("Every measured goal is met in this run.\n")
    if not (isinstance(res.get("gpu"), dict) and res["gpu"].get("kernels")):
        reason = (res.get("gpu") or {}).get("skipped", "the GPU section was not run")
        L.append(f"GPU goals (≥ 90 % of copy bandwidth on vector add, time ≤ Triton on softmax, layer norm, cross-entropy and row argmax) "
                 f"were **not measured**: {reason}. Run `bench/gpu_run.sh` on a GPU machine and merge with "
                 "`python -m bench report --gpu FILE`.\n")
    for name in images:
        L.append(f"![{name}](img/{name})\n")
    # ---- compile time
    comp = res.get("compile", {})
    if comp:
        L.append("## Compile time\n")
        L.append("Fresh process per measurement; times are taken inside the process from before `import eggpu` / "
                 "`import triton` to the compiled result (package and kernel-library imports included), so "
                 "they include what a user waits for in a new process except the interpreter start-up, which "
                 "the `wall` columns add. \"to PTX\" subtracts the time spent in `ptxas` (both pipelines run it "
                 "to produce the cubin). eggpu's `cold` has its per-installation caches filled (rule proofs and "
                 "parsed rules, done once per rule set, and the `ptxas --version` answer, once per ptxas; the "
                 "kernel cache and the libdevice subsets are empty); `all empty` starts from an empty `EGGPU_CACHE_DIR`, so the compile "
                 "also proves the shipped rules. Medians [min–max].\n")
        hdr = ["kernel", "eggpu cold → cubin", "eggpu cold → PTX", "eggpu all empty", "Triton cold → cubin",
               "Triton cold → PTX", "ratio cold", "ratio → PTX", "eggpu hit", "Triton hit", "eggpu hit wall",
               "Triton hit wall"]
        rows_ = []
        for key, r in comp.items():
            def mm(tool, var, what="total", r=r):
                s = r.get(tool, {}).get(var, {}).get(what)
                if not s or s.get("median") is None:
                    return "–"
                return f"{s['median']:.0f} [{s['min']:.0f}–{s['max']:.0f}]"
            rows_.append([key, mm("eggpu", "cold"), mm("eggpu", "cold", "ptx"), mm("eggpu", "cold_empty"),
                          mm("triton", "cold"), mm("triton", "cold", "ptx"),
                          _f(ratio(_med(r, "eggpu", "cold", "total"), _med(r, "triton", "cold", "total")), "{:.2f}"),
                          _f(ratio(_med(r, "eggpu", "cold", "ptx"), _med(r, "triton", "cold", "ptx")), "{:.2f}"),
                          _f(_med(r, "eggpu", "hit", "total"), "{:.1f}"), _f(_med(r, "triton", "hit", "total"), "{:.1f}"),
                          _f(_med(r, "eggpu", "hit", "wall")), _f(_med(r, "triton", "hit", "wall"))])
        L.append(_table(hdr, rows_) + "\n")
        L.append("All times in ms. The import parts of a cold compile (medians over kernels): eggpu "
                 f"`import eggpu` {_f(_median_of(comp, 'eggpu', 'cold', 'import'))} ms, + library "
                 f"{_f(_median_of(comp, 'eggpu', 'cold', 'import_kernels'))} ms cumulative; Triton `import triton` "
                 f"{_f(_median_of(comp, 'triton', 'cold', 'import'))} ms, + kernels "
                 f"{_f(_median_of(comp, 'triton', 'cold', 'import_kernels'))} ms cumulative.\n")
        L.append("### Where a cold compile goes (medians, ms)\n")
        bd = {k: eggpu_breakdown(r.get("eggpu", {}).get("cold", {})) for k, r in comp.items()}
        labels = list(dict.fromkeys(lbl for b in bd.values() for lbl, _ in b))
        L.append("eggpu (proof cache filled), summing to the cold total; the optimizer's set-up is timed by "
                 "wrapping its functions in the measuring process:\n")
        L.append(_table(["kernel"] + labels + ["total"],
                        [[k] + [_f(dict(b).get(lbl)) for lbl in labels] + [_f(_med(comp[k], "eggpu", "cold", "total"))]
                         for k, b in bd.items()]) + "\n")
        order = ["ttir", "ttgir", "llir", "ptx", "cubin"]
        st_t = sorted({s for r in comp.values() for s in (r.get("triton", {}).get("cold", {}).get("stages_ms") or {})},
                      key=lambda x: (order.index(x) if x in order else len(order), x))
        rows_ = []
        for key, r in comp.items():
            c = r.get("triton", {}).get("cold", {})
            ts = c.get("stages_ms") or {}
            imp = _med(c, "import") or 0.0
            rest = (_med(c, "total") or 0.0) - (_med(c, "import_kernels") or 0.0) - sum(ts.values())
            rows_.append([key, _f(imp), _f((_med(c, "import_kernels") or 0.0) - imp), _f(rest)]
                         + [_f(ts.get(s)) for s in st_t] + [_f(_med(c, "total"))])
        L.append("Triton: `import triton`, the kernel module, then everything outside its stages (AST → TTIR "
                 "frontend, cache-key hashing of its own libraries, cache writes), then its stages (`cubin` "
                 "= ptxas):\n")
        L.append(_table(["kernel", "import triton", "import kernels", "frontend, hashing, cache"] + st_t + ["total"],
                        rows_) + "\n")
        outcomes = [(k, o) for k, r in comp.items() for o in (r.get("eggpu", {}).get("cold", {}).get("optimizer_outcome")
                                                              or []) if o]
        fell = sorted({k for k, o in outcomes if o.get("fell_back")})
        if outcomes and any(o.get("validation") is not None for _, o in outcomes):
            verdicts = sorted({str(o.get("validation")) for _, o in outcomes})
            L.append(f"Translation-validation verdicts in these compiles: {', '.join(verdicts)}; the optimizer fell "
                     f"back to the unoptimized IR in {len(fell)} of {len(comp)} kernels"
                     + (f" ({', '.join(fell)})" if fell else "") + ".\n")
    warm = res.get("warm", {})
    if warm:
        L.append("### Warm recompile in the same process (cache disabled, new kernel instance)\n")
        rows_ = []
        for key, r in warm.items():
            rows_.append([key, _f(_med(r, "eggpu", "total"), "{:.1f}"), _f(_med(r, "eggpu", "ptx"), "{:.1f}"),
                          _f(_med(r, "triton", "total"), "{:.1f}"), _f(_med(r, "triton", "ptx"), "{:.1f}"),
                          _f(ratio(_med(r, "eggpu", "total"), _med(r, "triton", "total")), "{:.2f}"),
                          ", ".join(f"{k} {v:.0f}" for k, v in (r.get("eggpu", {}).get("stages_ms") or {}).items())])
        L.append(_table(["kernel", "eggpu → cubin", "eggpu → PTX", "Triton → cubin", "Triton → PTX", "ratio",
                         "eggpu stages (ms)"], rows_) + "\n")
    # ---- frontend/import/proofs
    imp = res.get("import")
    if imp:
        L.append("## Import and frontend\n")
        L.append(f"`import eggpu` in a fresh process: median {_f(_med(imp, 'eggpu'))} ms "
                 f"[{_f(imp['eggpu']['min'])}–{_f(imp['eggpu']['max'])}] (goal ≤ 300 ms); `import eggpu.kernels` "
                 f"(decorating the whole library) adds {_f(_med(imp, 'kernels'))} ms; process wall "
                 f"{_f(_med(imp, 'wall'))} ms. Heavy modules loaded by these imports: "
                 f"{', '.join(imp.get('heavy_modules_loaded') or []) or 'none'}.\n")
    fe = res.get("frontend", {})
    if fe:
        if not imp:
            L.append("## Frontend\n")
        L.append("Frontend + IR construction (`Kernel(...).ir()`, Python AST → tensor IR, verified) per library "
                 "kernel; first call in the process and warm median over new instances. Goal ≤ 50 ms.\n")
        L.append(_table(["kernel", "dtype", "constexprs", "IR ops", "first call ms", "warm median ms", "goal"],
                        [[k, v["dtype"], str(v["consts"]), _f(v.get("ir_ops")), _f(v["first_ms"], "{:.1f}"),
                          _f(v["warm"]["median"], "{:.1f}"), _status(v["warm"]["median"] <= GOAL_FRONTEND_MS)]
                         for k, v in fe.items()]) + "\n")
    pr = res.get("proofs")
    if pr:
        L.append("## Rule proofs\n")
        L.append(f"`verify_rules` over the {pr['rules']} shipped rules (verdicts: "
                 + ", ".join(f"{k} {v}" for k, v in pr.get("statuses", {}).items())
                 + f"): cold (empty proof cache) {_f(_med(pr, 'cold_verify'))} ms "
                 f"[{_f(pr['cold_verify']['min'])}–{_f(pr['cold_verify']['max'])}]; from the proof cache "
                 f"{_f(_med(pr, 'cached_verify'), '{:.1f}')} ms (loading and checking the rule files: "
                 f"{_f(_med(pr, 'load_ms'), '{:.1f}')} ms; whole fresh process {_f(_med(pr, 'cached_wall'))} ms).\n")
    opt = res.get("optimizer", {})
    if opt:
        L.append("## Optimizer\n")
        L.append("`eggpu.optimizer.optimize` per kernel after a warm-up in the same process (saturation, "
                 "extraction and translation validation), median ms; cost is the optimizer's per-target cost model."
                 " The row kernels' validation needs no solver call: the loop-mask rewrite `lt-offset-bound` is "
                 "accepted by a guarded lemma whose guards the validator re-establishes from the loop facts (before: "
                 "2-6 z3 calls, most of softmax's and layer_norm's optimizer time); in-process saturation steps no "
                 "longer push the e-graph (docs/pipeline.md, \"What translation validation costs\").\n")
        rows_ = []
        for k, v in opt.items():
            fired = v.get("rules_fired") or {}
            top = ", ".join(f"{n}×{c}" for n, c in sorted(fired.items(), key=lambda t: -t[1])[:6])
            rows_.append([k, _f(v["time"]["median"], "{:.0f}"),
                          ", ".join(f"{s} {t:.0f}" for s, t in (v.get("stages_ms") or {}).items()),
                          _f(v.get("cost_before")), _f(v.get("cost_after")),
                          f"{_f(v.get('ir_ops_before'))} → {_f(v.get('ir_ops_after'))}", str(v.get("stop_reason")),
                          str(v.get("validation")), (top + (" …" if len(fired) > 6 else "")) or "none"])
        L.append(_table(["kernel", "time ms", "stages ms", "cost before", "cost after", "IR ops", "stop",
                         "validation", "rules fired"], rows_) + "\n")
    # ---- quality
    qual = res.get("quality", {})
    if qual:
        L.append("## Static code quality\n")
        L.append("Registers, spills and static shared memory from `ptxas -v`; SASS instructions counted in the "
                 "`nvdisasm` listing of the cubin (NOPs and the trailing self-branch not counted); PTX lines "
                 "without blanks and comments. `eggpu` / `eggpu -O0`: `optimize=True` / `False`. `Triton`: "
                 "Triton's PTX from `ASTSource` with only the constexprs (the same information eggpu gets), "
                 "assembled by the same ptxas with the same flags as eggpu's. `Triton launch`: Triton's PTX "
                 "specialized as its launcher would for the benchmark's arguments (16-byte aligned pointers, "
                 "integers divisible by 16, integers equal to 1 as constants). `Triton own`: Triton's own cubin "
                 "(its bundled ptxas and flags). Triton's shared memory is dynamic (`shared` column in "
                 "parentheses).\n")
        for target in sorted({t for v in qual.values() for t in v}):
            L.append(f"### {target}\n")
            rows_ = []
            for key, per in qual.items():
                q = per.get(target, {})
                cell = {}
                for var in ("eggpu", "eggpu_noopt", "triton", "triton_launch"):
                    d = q.get(var, {})
                    cell[var] = d
                def regs(d):
                    if "error" in d:
                        return "ERROR"
                    sp = (d.get("spill_stores") or 0) + (d.get("spill_loads") or 0)
                    return f"{_f(d.get('registers'))}" + (f" (spill {sp} B)" if sp else "")
                own = (cell["triton"].get("own_cubin") or {})
                rows_.append([key, regs(cell["eggpu"]), regs(cell["eggpu_noopt"]), regs(cell["triton"]),
                              regs(cell["triton_launch"]), _f((own.get("resources") or {}).get("registers")),
                              _f(cell["eggpu"].get("sass_instructions")), _f(cell["eggpu_noopt"].get("sass_instructions")),
                              _f(cell["triton"].get("sass_instructions")),
                              _f(cell["triton_launch"].get("sass_instructions")), _f(own.get("sass_instructions")),
                              _f(cell["eggpu"].get("ptx_lines")), _f(cell["triton"].get("ptx_lines")),
                              f"{_f(cell['eggpu'].get('shared_bytes'))} / "
                              f"{_f(cell['triton'].get('shared_bytes'))} ({_f(cell['triton'].get('dynamic_shared_bytes'))})",
                              _ldst(cell["eggpu"]), _ldst(cell["triton"]), _ldst(cell["triton_launch"])])
            L.append(_table(["kernel", "regs eggpu", "regs eggpu -O0", "regs Triton", "regs Triton launch",
                             "regs Triton own", "SASS eggpu", "SASS eggpu -O0", "SASS Triton", "SASS Triton launch",
                             "SASS Triton own", "PTX lines eggpu", "PTX lines Triton", "smem B eggpu / Triton",
                             "global ld/st widths eggpu", "… Triton", "… Triton launch"], rows_) + "\n")
        excess = _sass_excess(qual, "sm_90")
        if excess:
            L.append("### Where eggpu's extra SASS instructions are (sm_90, memory-bound kernels)\n")
            L.append("Opcodes with the largest count difference eggpu − Triton (same ptxas), for kernels where "
                     "eggpu has more instructions:\n")
            L.append(_table(["kernel", "eggpu", "Triton", "largest differences (opcode: eggpu − Triton)",
                             "PTX math eggpu", "PTX math Triton"],
                            [[k, str(e), str(t), d] + [_math(qual[k]["sm_90"].get(v) or {})
                                                       for v in ("eggpu", "triton")]
                             for k, e, t, d in excess]) + "\n")
            L.append("PTX math instructions show accuracy choices: `ex2.approx` after a multiply is an approximate "
                     "exponential and `div.full.f32` an approximate division (Triton's defaults), `div.rn.f32` is "
                     "IEEE division and libdevice's `expf` adds range reduction (`fma.rm`, `ex2.approx.ftz` on a "
                     "reduced argument); `max.f32` is one instruction, a NaN-aware max written with "
                     "`setp`/`selp` is several.\n")
            L.append(REGISTER_NOTES)
        errs = [(k, t, v, d["error"]) for k, per in qual.items() for t, q in per.items() for v, d in q.items()
                if isinstance(d, dict) and "error" in d]
        if errs:
            L.append("Failures:\n")
            L += [f"- {k} {t} {v}: `{e[:300]}`" for k, t, v, e in errs]
            L.append("")
    # ---- cpu
    cpu = res.get("cpu", {})
    if cpu:
        L.append("## CPU execution of the lowering (reference only, not a goal)\n")
        L.append("`ck.run_cpu` (the same lowering as the PTX, JIT-compiled for the host, CTAs in lock-step) vs "
                 "numpy in f32, median ms per call; output checked against the float64 reference first.\n")
        rows_ = []
        for k, v in cpu.items():
            if "error" in v:
                rows_.append([k, "–", "ERROR: " + v["error"][:120], "–", "–", "–", "–"])
                continue
            rows_.append([k, "×".join(map(str, v["shape"])), _f(v["eggpu"]["median"], "{:.1f}"),
                          _f(v.get("eggpu_gbps"), "{:.2f}"), _f(_med(v, "numpy"), "{:.2f}"),
                          _f(v.get("numpy_gbps"), "{:.2f}"), _f(v.get("eggpu_over_numpy"), "{:.1f}")])
        L.append(_table(["kernel", "shape", "eggpu ms", "eggpu GB/s", "numpy ms", "numpy GB/s", "eggpu/numpy time"],
                        rows_) + "\n")
    # ---- gpu
    gpu = res.get("gpu")
    L.append("## GPU run time\n")
    if isinstance(gpu, dict) and gpu.get("kernels"):
        L.append(f"Device: {gpu.get('device')} (sm_{''.join(map(str, gpu.get('capability', [])))}, {gpu.get('sms')} SMs), "
                 f"torch {gpu.get('torch')}, Triton {gpu.get('triton')}; measured copy bandwidth "
                 f"{_f(gpu['copy']['gbps'])} GB/s. Median of {gpu.get('reps')} launches (CUDA events, L2 flushed, "
                 "queue pre-loaded so host overhead is hidden); bandwidth = compulsory bytes / median time.\n")
        rows_ = []
        for k, v in gpu["kernels"].items():
            e, t = v.get("eggpu", {}), v.get("triton", {})
            rows_.append([k, _f(e.get("median_ms"), "{:.3f}") if "error" not in e else "ERROR",
                          _f(t.get("median_ms"), "{:.3f}") if "error" not in t else "ERROR",
                          _f(v.get("eggpu_over_triton_time"), "{:.2f}"), _f(e.get("gbps")), _f(t.get("gbps")),
                          _f(e.get("fraction_of_copy"), "{:.0%}"), _f(e.get("tflops"), "{:.1f}"),
                          _f(t.get("tflops"), "{:.1f}"), _f(e.get("host_ms_per_call"), "{:.3f}"),
                          _f(v.get("eggpu_max_err"), "{:.2g}"), _f(v.get("triton_max_err"), "{:.2g}")])
        L.append(_table(["kernel", "eggpu ms", "Triton ms", "eggpu/Triton", "eggpu GB/s", "Triton GB/s",
                         "eggpu % of copy", "eggpu TFLOP/s", "Triton TFLOP/s", "eggpu host ms/launch",
                         "eggpu max err", "Triton max err"], rows_) + "\n")
        errs = [(k, t, v[t]["error"]) for k, v in gpu["kernels"].items() for t in ("eggpu", "triton")
                if "error" in v.get(t, {})]
        L += [f"- {k} {t}: `{e[:300]}`" for k, t, e in errs]
        L += _gpu_variants(gpu["kernels"])
        L += _gpu_naive(gpu.get("naive"))
    else:
        reason = gpu.get("skipped") if isinstance(gpu, dict) else "the GPU section was not run"
        L.append(f"Not measured in this run: {reason}. `bench/gpu_run.sh` runs this part alone (< 8 minutes).\n")
    naive = REPO_RESULTS / "naive.json"
    if naive.exists():  # the section `python -m bench naive` maintains, kept when the report is regenerated
        from .naive_bench import markdown as naive_markdown

        L.append(naive_markdown(json.loads(naive.read_text())) + "\n")
    rowq = REPO_RESULTS / "row_quality.json"
    if rowq.exists():  # the section `python -m bench.row_quality --docs` maintains, kept likewise
        from .row_quality import markdown as rowq_markdown

        doc = json.loads(rowq.read_text())
        L.append(rowq_markdown(doc["results"], doc["command"]) + "\n")
    L.append(METHOD)
    return "\n".join(L) + "\n"


def _ldst(d: dict[str, Any]) -> str:
    s = d.get("sass") or {}
    if not s:
        return "–"
    ld = "+".join(f"{n}×{w}" for w, n in sorted((s.get("global_loads") or {}).items()))
    st = "+".join(f"{n}×{w}" for w, n in sorted((s.get("global_stores") or {}).items()))
    return f"ld {ld or 0} / st {st or 0}"


def _sass_excess(qual: dict[str, Any], target: str, top: int = 6) -> list[tuple[str, int, int, str]]:
    """Per memory-bound kernel where eggpu has more SASS than Triton: the opcodes that differ most."""
    out = []
    for key, per in qual.items():
        if not _memory_bound(key):
            continue
        q = per.get(target, {})
        e, t = (q.get("eggpu") or q.get("eggpu_noopt") or {}).get("sass"), (q.get("triton") or {}).get("sass")
        if not e or not t or e["instructions"] <= t["instructions"]:
            continue
        ops = set(e["opcodes"]) | set(t["opcodes"])
        # ties by opcode name: the same JSON always renders the same text (a set's order is per process)
        diff = sorted(((e["opcodes"].get(o, 0) - t["opcodes"].get(o, 0), o) for o in ops),
                      key=lambda x: (-abs(x[0]), x[1]))
        out.append((key, e["instructions"], t["instructions"],
                    ", ".join(f"{o} {d:+d}" for d, o in diff[:top] if d)))
    return out


def _math(d: dict[str, Any]) -> str:
    m = d.get("ptx_math") or {}
    return ", ".join(f"{k}×{v}" for k, v in m.items()) or "–"


def _median_of(comp: dict[str, Any], tool: str, var: str, what: str) -> float | None:
    import statistics

    vals = [_med(r, tool, var, what) for r in comp.values()]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _shortfall_summary(res: dict[str, Any], short: list[dict[str, Any]]) -> str:
    """One paragraph naming what dominates the misses, computed from the data."""
    parts: list[str] = []
    comp = res.get("compile", {})
    if any("cold compile" in r["goal"] for r in short) and comp:
        shares: dict[str, float] = {}
        total = 0.0
        for r in comp.values():
            cold = r.get("eggpu", {}).get("cold", {})
            total += _med(cold, "total") or 0.0
            for k, v in eggpu_breakdown(cold):
                shares[k] = shares.get(k, 0.0) + v
        if total:
            top = sorted(shares.items(), key=lambda kv: -kv[1])[:4]
            parts.append("eggpu's cold compile time over the suite goes mostly to " + ", ".join(
                f"{k}: {v / total:.0%}" for k, v in top) + ".")
        empty = [r["eggpu"]["cold_empty"] for r in comp.values() if r.get("eggpu", {}).get("cold_empty")]
        if empty:
            parts.append(f"From a completely empty cache the first compile also proves the rule set: "
                         f"{_f(_med(empty[0], 'total'))} ms.")
    if any("cache hit" in r["goal"] for r in short) and comp:
        imp = _median_of(comp, "eggpu", "hit", "import")
        tot = _median_of(comp, "eggpu", "hit", "total")
        if imp is not None and tot:
            parts.append(f"A fresh-process cache hit takes {tot:.0f} ms median, of which `import eggpu` is "
                         f"{imp:.0f} ms and importing the kernel library {(_median_of(comp, 'eggpu', 'hit', 'import_kernels') or 0) - imp:.0f} ms.")
    if any("registers" in r["goal"] or "SASS" in r["goal"] for r in short):
        parts.append("See the static code-quality tables for the per-kernel register and instruction counts and the "
                     "global load/store widths (vectorization) that explain them.")
    return " ".join(parts)


# why the memory-bound kernels' registers and SASS differ from Triton's (docs/codegen.md has the passes)
REGISTER_NOTES = (
    'Registers and instructions against Triton (issue 10; the passes are described in docs/codegen.md, '
    '"Block order and libdevice\'s constants"): gelu\'s registers come from its 8 unrolled `erff` calls. '
    "Pure instructions are placed on demand (`codegen/schedule.py`), so each element's chain ends in its "
    'store instead of all `erf` results staying live to the end (sm_90 36 -> 32), and the pipeline splits'
    " `erff`'s recurring `selp.f32` of two immediates into `selp.b32` + `add.s32` where ptxas then needs "
    'fewer registers (`codegen/ptx_selects.py`: 32 -> 30, Triton 31, at +48 SASS instructions, still '
    "fewer than Triton's). cross-entropy's target load `x_row + tl.where(valid, target, 0)` selects in 32 "
    "bits and then widens (`codegen/scalar_ops.offset_i64` freezes the select: instcombine made it a "
    "64-bit select, two `SEL` and a sign shift), 148 / 156 -> 146 / 154 SASS instructions (Triton 151 / "
    "155). The cross-warp step of every whole-block reduction is Triton's butterfly (each thread reads "
    "the partial of warp `tid % nwarps` and shuffles; docs/codegen.md, \"Cross-warp combine and ptxas "
    "unrolling\"): after it ptxas leaves sm_80's row loops rolled, as it does Triton's (rms_norm 441 -> 309 "
    "SASS and 30 -> 26 registers, layer_norm 661 -> 493, cross-entropy 21 registers, Triton 21), where "
    "every thread reading all four partials (one `LDS.128`) made it unroll them 4x. On sm_90 the butterfly "
    "costs one instruction per reduction (cross-entropy 159 SASS, Triton 155; 25 registers, Triton 23); "
    "the rest is libdevice `expf` (the documented accurate `exp`, ~8 instructions where Triton's bare "
    "`ex2.approx` takes 5, three per tile), whose two constants ptxas rematerializes in the loop. Forms "
    "that read several partials at once save instructions but add registers (three measured in "
    "docs/codegen.md), and putting `expf`'s constants in `.const` memory cost softmax two registers; not "
    "adopted. softmax's 23 registers on sm_90 (Triton 20) come with the documented accurate `/` and "
    "`exp` (with `fast_math=True`: 21). row argmax "
    "keeps the op table's NaN rule (first index of the maximum, NaN ignored, all NaN -> 0; Triton's "
    "`_argmax_combine` has none: `value1 > value2 or (value1 == value2 and index1 < index2)`), 3 SASS "
    "instructions per tile (`FSETP.NAN` + `SEL`: a NaN element's index becomes `0xFFFFFFFF`, its value stays "
    "NaN and the combine's unordered tie `setp.equ` lets every real element beat it; `VIMNMX`: all NaN -> 0), "
    "and is below Triton because `tl.argmax(x)` beside `tl.max(x)` carries only its index and compares the "
    "values the max carries (docs/codegen.md, \"An arg-reduction beside its max / min shares the value\"): "
    "one shuffle and one select fewer per butterfly level. "
    "RMS norm and layer norm on sm_80 are above Triton by the IEEE division's slow-path subroutine "
    "(~105 instructions outside the loops): the same PTX with `div.full` instead of `div.rn` gives 198 and "
    "378 (Triton 212 and 405). On sm_90 ptxas unrolls any loop whose body is below a size threshold, "
    "whatever precedes it (Triton's RMS-norm store loop too; layer norm's is just above it in Triton's code): "
    "`PtxOptions(ptxas_unroll=False)` (`codegen/ptx_loops.py`, not the default until a GPU has timed it) "
    "gives layer norm 308 instructions (Triton 418), `div.full` alone RMS norm 346 (Triton 396).\n"
)


METHOD = """## Method

- **Suite** (`bench/suite.py`): vector add, GELU (erf), fused softmax, layer norm forward, RMS norm forward,
  cross-entropy forward and row argmax in f32; matmul in f16, bf16 and f32 (f32 accumulation). Constexprs are the
  ones eggpu's library case builder picks: `BLOCK_SIZE = 1024` (1-D), 256 (rows of 4096 columns), matmul tiles
  32×32×16. The Triton kernels (`bench/triton_kernels.py`) mirror eggpu's library kernels line by line: same
  parameters, tiling, loops, masks and f32 statistics. Both use tensor cores for f16/bf16 `tl.dot` on sm_80+
  (eggpu: `mma.sync` m16n8k16 + `ldmatrix`; Triton may use `wgmma` on sm_90). Differences that are Triton's own
  choices are kept: software pipelining of the K loop (`num_stages=3`), Triton's layouts (eggpu moves each dot's
  f32 result to its blocked layout through shared memory). f32 matmul uses `input_precision="ieee"` so Triton
  does not use TF32.
- **Fairness**: FP contraction is off on both sides (eggpu `fast_math=False`; Triton `enable_fp_fusion=False`,
  `TRITON_DEFAULT_FP_FUSION=0`). Static code quality assembles both compilers' PTX with the same ptxas and flags.
  The "Triton launch" variant shows what Triton's runtime specialization adds (alignment and value
  knowledge eggpu does not take).
- **Compile time**: one fresh `python -m bench.worker` process per measurement with a new temporary cache
  directory (`EGGPU_CACHE_DIR`, `TRITON_CACHE_DIR`); eggpu and Triton interleaved rep by rep; one untimed
  warm-up process per tool first so Python bytecode and the OS file cache are warm. A cache hit is a new
  process compiling the same kernel against the cache a cold run filled; its clock starts before `import eggpu`
  (`import triton`) and stops at the compiled kernel, and the worker imports nothing of the harness in between
  (the parent sends the kernel name, dtype and constexprs). Warm recompiles run in one process
  per tool (eggpu: `cache=False`, a new kernel instance, ptxas's in-memory memo cleared; Triton:
  `knobs.compilation.always_compile`).
- **Optimizer**: `eggpu.optimizer.optimize` timed in-process after a warm-up. **Rule proofs**:
  `eggpu.optimizer.rule_verifier.verify_rules` over `load_rules()` in a fresh process, with an empty and with a
  filled proof cache.
- **CPU execution**: `ck.run_cpu` on 2^22 elements / 1024×4096 rows (16 MiB per f32 array, past the CPU caches) vs numpy f32
  (reference only).
- **GPU** (`bench/gpu.py`, `bench/gpu_run.sh`): CUDA-event median of ≥ 50 launches after warm-up, L2 flushed
  before each, compulsory bytes / time vs a measured 1 GiB device copy; TFLOP/s for matmul.
- Numbers are medians; spreads are [min–max] over the repetitions. Timings on a 2-core machine are noisy;
  compare ratios measured in the same run, not across runs.
"""


def write(res: dict[str, Any], docs: Path) -> Path:
    """Write ``docs/performance.md`` and ``docs/img/*.png``; return the markdown path."""
    docs.mkdir(parents=True, exist_ok=True)
    images = plots(res, docs / "img")
    md = docs / "performance.md"
    md.write_text(markdown(res, images))
    return md
