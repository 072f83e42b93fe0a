"""One measurement in a fresh process: ``python -m bench.worker MODE JSON-ARGS``.

The parent (:mod:`bench.compile_time`) starts one process per measurement with the cache
directories it wants (``EGGPU_CACHE_DIR``, ``TRITON_CACHE_DIR``) and reads the last stdout line,
``BENCH_RESULT {json}``. Times are taken with ``time.perf_counter`` from the top of this module,
before ``eggpu`` or ``triton`` is imported, so they include the package imports; the parent adds
the process's wall time (interpreter start-up included).

Modes:

- ``compile``: compile one suite entry with ``tool`` = ``eggpu`` or ``triton`` for ``target``
  (``optimize`` for eggpu). Reports the in-process total, the import time, the per-stage times
  and the time spent in ``ptxas`` (so "to PTX" = total - ptxas).
- ``warm``: in-process warm recompiles of several entries (one warm-up compile each, then
  ``reps`` compiles with the cache disabled and a new kernel instance): medians per entry.
- ``import``: time of ``import eggpu`` and of ``import eggpu.kernels``.
- ``frontend``: frontend + IR construction of every library kernel (first call and warm median).
- ``optimizer``: optimizer time per suite entry after a warm-up (median), cost before/after,
  rules fired, the optimizer's own stage times.
- ``proofs``: time of ``verify_rules`` over the shipped rule set with the proof cache in
  ``EGGPU_CACHE_DIR`` (empty for a cold proof run, filled for a cached one).
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

# Only what every mode needs is imported before the measured imports: statistics (fractions,
# decimal, random) and typing would add ~10 ms of the harness's own CPU to a cache hit's
# import-to-result time, of eggpu and Triton alike.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MARK = "BENCH_RESULT "


def _emit(result: dict[str, Any]) -> None:
    sys.stdout.write(MARK + json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------- eggpu


def _kernel_and_dtype(entry_key: str, args: dict[str, Any] | None = None) -> tuple[str, str]:
    """The library kernel name and dtype of a suite entry: from ``args`` when the parent sent
    them (:func:`bench.suite.worker_args`; importing bench.suite in a timed process would add
    its ``dataclasses``/``inspect`` imports to the measurement), else from the suite."""
    if args is not None and "kernel" in args and "dtype" in args:
        return args["kernel"], args["dtype"]
    from .suite import BY_KEY

    e = BY_KEY[entry_key]
    return e.kernel, e.dtype


def _eggpu_kernel(entry_key: str, consts: list, args: dict[str, Any] | None = None) -> Any:
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    kernel, dtype = _kernel_and_dtype(entry_key, args)
    return get(kernel).kernel(parse_dtype(dtype), consts)


_SETUP_HOOKS = (
    ("eggpu.optimizer", "prepare_rules"),  # load + verify + select the rules (memoized per process)
    ("eggpu.optimizer.rule_verifier", "verify_rules"),  # proof-cache lookups and z3 proofs
    ("eggpu.optimizer", "_base_egraph"),  # egglog e-graph with the schema and rules loaded
)


def _instrument_optimizer_setup() -> dict[str, float]:
    """Time the optimizer's one-time set-up functions by wrapping them (measurement only: the
    wrapped functions run unchanged). Functions that do not exist are skipped."""
    import importlib

    spent: dict[str, float] = {}
    for mod_name, fn_name in _SETUP_HOOKS:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        fn = getattr(mod, fn_name, None)
        if fn is None:
            continue

        def timed(*a, _fn=fn, _name=fn_name, **kw):
            t = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                spent[_name] = spent.get(_name, 0.0) + (time.perf_counter() - t) * 1e3

        setattr(mod, fn_name, timed)
    return spent


def eggpu_compile(args: dict[str, Any]) -> dict[str, Any]:
    import eggpu

    t_import = time.perf_counter() - T0
    import eggpu.kernels  # noqa: F401  (the library: decorating its kernels is part of the cost)

    t_lib = time.perf_counter() - T0
    # instrumenting imports the optimizer (z3, egglog) before the clock reads below; a hit never
    # needs it, so hits are measured without the instrumentation
    t = time.perf_counter()
    instrument = args.get("instrument", True) and args.get("optimize", True)
    setup = _instrument_optimizer_setup() if instrument else {}
    instrument_import_ms = (time.perf_counter() - t) * 1e3
    inst = _eggpu_kernel(args["key"], args["consts"], args)
    ck = eggpu.compile(inst, target=args["target"], optimize=args.get("optimize", True),
                       num_warps=args.get("num_warps", 4), cache=True)
    total = time.perf_counter() - T0
    rep = ck.report
    hit = rep.get("cache") == "hit"
    # a hit carries the report of the compile that filled the cache: its stage times are not this run's
    stages = {} if hit else dict(rep.get("times_ms", {}))
    ptxas_ms = float(stages.get("ptxas", 0.0))
    return {
        "total_ms": total * 1e3,
        "ptx_ms": total * 1e3 - ptxas_ms,
        "ptxas_ms": ptxas_ms,
        "import_ms": t_import * 1e3,
        "import_kernels_ms": t_lib * 1e3,
        "stages_ms": stages,
        "optimizer_ms": {} if hit else (rep.get("optimizer") or {}).get("times_ms", {}),
        "optimizer_setup_ms": setup,
        "optimizer_import_ms": instrument_import_ms,
        "optimizer": None if hit else {k: (rep.get("optimizer") or {}).get(k)
                                       for k in ("validation", "fell_back", "stop_reason")},
        "cache": rep.get("cache"),
        "cache_lookup_ms": rep.get("cache_lookup_ms"),
        "ptx_sha": _sha(ck.ptx),
    }


def eggpu_warm(args: dict[str, Any]) -> dict[str, Any]:
    import eggpu
    import eggpu.kernels  # noqa: F401
    from eggpu.codegen import ptxas as ptxas_mod

    out = {}
    for key, consts in args["entries"]:
        kw = dict(target=args["target"], optimize=args.get("optimize", True), num_warps=args.get("num_warps", 4))
        eggpu.compile(_eggpu_kernel(key, consts), cache=False, **kw)  # warm-up
        totals, ptx, stages = [], [], []
        for _ in range(args["reps"]):
            ptxas_mod.clear_cache()  # ptxas results are memoized by PTX text: a recompile must re-run it
            _forget_ir()  # and the frontend lowers again, as Triton's recompile re-runs its frontend
            inst = _eggpu_kernel(key, consts)
            t = time.perf_counter()
            ck = eggpu.compile(inst, cache=False, **kw)
            dt = (time.perf_counter() - t) * 1e3
            st = ck.report.get("times_ms", {})
            totals.append(dt)
            ptx.append(dt - float(st.get("ptxas", 0.0)))
            stages.append(st)
        out[key] = {"total_ms": totals, "ptx_ms": ptx, "stages_ms": _median_dicts(stages)}
    return out


# --------------------------------------------------------------------------- triton


def _triton_setup() -> dict[str, float]:
    """Per-stage timers through Triton's stage inspection hook."""
    import triton

    stage_ms: dict[str, float] = {}

    def hook(backend=None, stages=None, options=None, language=None, capability=None):
        if stages is None:  # asked for its contribution to the cache key: none (hits stay hits)
            return "", ""
        for name in list(stages):
            fn = stages[name]

            def timed(src, metadata, _fn=fn, _name=name):
                t = time.perf_counter()
                try:
                    return _fn(src, metadata)
                finally:
                    stage_ms[_name] = stage_ms.get(_name, 0.0) + (time.perf_counter() - t) * 1e3

            stages[name] = timed

    triton.knobs.runtime.add_stages_inspection_hook = hook
    return stage_ms


def _triton_compile(key: str, consts: list, target: str, num_warps: int, launch_args: dict | None = None,
                    args: dict[str, Any] | None = None):
    import triton

    from . import triton_kernels as tk

    kernel, dtype = _kernel_and_dtype(key, args)
    src = tk.ast_source(kernel, dtype, consts, launch_args)
    return triton.compile(src, target=tk.gpu_target(int(target.removeprefix("sm_").rstrip("a"))),
                          options=tk.compile_options(num_warps))


def triton_compile(args: dict[str, Any]) -> dict[str, Any]:
    import triton

    t_import = time.perf_counter() - T0
    from . import triton_kernels  # noqa: F401

    t_lib = time.perf_counter() - T0
    stage_ms = _triton_setup()
    k = _triton_compile(args["key"], args["consts"], args["target"], args.get("num_warps", 4), args=args)
    total = time.perf_counter() - T0
    ptxas_ms = stage_ms.get("cubin", 0.0)
    del triton
    return {
        "total_ms": total * 1e3,
        "ptx_ms": total * 1e3 - ptxas_ms,
        "ptxas_ms": ptxas_ms,
        "import_ms": t_import * 1e3,
        "import_kernels_ms": t_lib * 1e3,
        "stages_ms": stage_ms,
        "cache": "miss" if stage_ms else "hit",
        "ptx_sha": _sha(k.asm["ptx"]),
    }


def triton_warm(args: dict[str, Any]) -> dict[str, Any]:
    import triton

    triton.knobs.compilation.always_compile = True  # in-process recompile, cache not consulted
    stage_ms = _triton_setup()
    out = {}
    for key, consts in args["entries"]:
        _triton_compile(key, consts, args["target"], args.get("num_warps", 4))  # warm-up
        totals, ptx, stages = [], [], []
        for _ in range(args["reps"]):
            stage_ms.clear()
            t = time.perf_counter()
            _triton_compile(key, consts, args["target"], args.get("num_warps", 4))
            dt = (time.perf_counter() - t) * 1e3
            totals.append(dt)
            ptx.append(dt - stage_ms.get("cubin", 0.0))
            stages.append(dict(stage_ms))
        out[key] = {"total_ms": totals, "ptx_ms": ptx, "stages_ms": _median_dicts(stages)}
    return out


# --------------------------------------------------------------------------- eggpu pieces


def import_time(args: dict[str, Any]) -> dict[str, Any]:
    import eggpu  # noqa: F401

    t1 = time.perf_counter()
    import eggpu.kernels  # noqa: F401

    t2 = time.perf_counter()
    heavy = sorted(m for m in ("z3", "egglog", "llvmlite", "triton") if m in sys.modules)
    return {"import_eggpu_ms": (t1 - T0) * 1e3, "import_kernels_ms": (t2 - t1) * 1e3, "heavy_modules_loaded": heavy}


def _forget_ir() -> None:
    """Drop the frontend's per-specialization IR memo, so the next ``ir()`` lowers again (the
    parsed Python source stays cached, as it does for any new specialization of a kernel)."""
    from eggpu.kernel_macro import kernel as kmod

    memo = getattr(kmod, "_IR_CACHE", None)
    if memo is not None:
        memo.clear()


def frontend(args: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from eggpu.kernels import LIBRARY

    out = {}
    for lk in LIBRARY:
        dtype = lk.dtypes[0] if not lk.generic else next((d for d in lk.dtypes if d.name == "f32"), lk.dtypes[0])
        case = lk.make_case(lk.sizes[-1], dtype, np.random.default_rng(0))
        t = time.perf_counter()
        fn = lk.kernel(dtype, case.consts).ir()
        first = (time.perf_counter() - t) * 1e3
        warm, memo = [], []
        for _ in range(args["reps"]):
            _forget_ir()
            inst = lk.kernel(dtype, case.consts)
            t = time.perf_counter()
            inst.ir()
            warm.append((time.perf_counter() - t) * 1e3)
            t = time.perf_counter()
            lk.kernel(dtype, case.consts).ir()
            memo.append((time.perf_counter() - t) * 1e3)
        out[lk.name] = {"dtype": dtype.name, "consts": list(case.consts), "first_ms": first, "warm_ms": warm,
                        "memo_ms": memo, "ir_ops": fn.op_count()}
    return out


def optimizer_bench(args: dict[str, Any]) -> dict[str, Any]:
    from eggpu.optimizer import optimize

    out = {}
    for key, consts in args["entries"]:
        fn = _eggpu_kernel(key, consts).ir()
        res = optimize(fn, target=args["target"])  # warm-up (rule proofs, egglog start-up)
        times, inner = [], []
        for _ in range(args["reps"]):
            fn = _eggpu_kernel(key, consts).ir()
            t = time.perf_counter()
            res = optimize(fn, target=args["target"])
            times.append((time.perf_counter() - t) * 1e3)
            inner.append({k: v * 1e3 for k, v in dict(getattr(res, "times", {}) or {}).items()})
        v = getattr(res, "validation", None)
        out[key] = {
            "time_ms": times,
            "stages_ms": _median_dicts(inner),
            "cost_before": getattr(res, "cost_before", None),
            "cost_after": getattr(res, "cost_after", None),
            "rules_fired": dict(getattr(res, "rule_hits", {}) or {}),
            "egraph_nodes": getattr(res, "egraph_nodes", None),
            "stop_reason": str(getattr(getattr(res, "stop_reason", None), "name", getattr(res, "stop_reason", None))),
            "validation": getattr(v, "verdict", str(v)) if v is not None else None,
            "fell_back": bool(getattr(res, "fell_back", False)),
            "ir_ops_before": fn.op_count(),
            "ir_ops_after": res.function.op_count(),
        }
    return out


def proofs(args: dict[str, Any]) -> dict[str, Any]:
    from eggpu.optimizer.proof_cache import ProofCache
    from eggpu.optimizer.rule_verifier import verify_rules
    from eggpu.optimizer.rules_loader import load_rules

    t_import = time.perf_counter() - T0
    t = time.perf_counter()
    loaded = load_rules(env=False)
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    verdicts = verify_rules(loaded.rules, cache=ProofCache(), workers=args.get("workers"))
    t_verify = time.perf_counter() - t
    statuses: dict[str, int] = {}
    for v in verdicts.values():
        statuses[v.status] = statuses.get(v.status, 0) + 1
    cached = sum(1 for v in verdicts.values() if getattr(v, "cached", False))
    return {"rules": len(loaded.rules), "load_ms": t_load * 1e3, "verify_ms": t_verify * 1e3,
            "import_ms": t_import * 1e3, "total_ms": (time.perf_counter() - T0) * 1e3,
            "statuses": statuses, "cached": cached}


# --------------------------------------------------------------------------- helpers


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _median_dicts(ds: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for d in ds for k in d}
    import statistics

    return {k: statistics.median(d.get(k, 0.0) for d in ds) for k in sorted(keys)}


MODES = {
    "compile": lambda a: eggpu_compile(a) if a["tool"] == "eggpu" else triton_compile(a),
    "warm": lambda a: eggpu_warm(a) if a["tool"] == "eggpu" else triton_warm(a),
    "import": import_time,
    "frontend": frontend,
    "optimizer": optimizer_bench,
    "proofs": proofs,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in MODES:
        sys.stderr.write(f"usage: python -m bench.worker {{{','.join(MODES)}}} JSON\n")
        return 2
    args = json.loads(argv[1])
    # IEEE-comparable code (no FP contraction), as eggpu's default; must precede `import triton`.
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")
    _emit(MODES[argv[0]](args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
