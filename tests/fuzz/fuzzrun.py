"""Differential runs of generated kernels: the reference interpreter, ``eggpu.compile(...,
optimize=False).run_cpu`` and ``eggpu.compile(..., optimize=True).run_cpu``.

Comparison rules (the op table's, docs/ir.md):

* every output is compared bit-exactly, except that any NaN equals any NaN (a NaN's payload and
  sign are not specified) and outputs the generator marks tolerant (transcendentals, float sums)
  are compared with ``|got - want| <= atol + rtol * |want|`` (infinities and NaN must match);
* the unoptimized lowering must match the interpreter on every lane, undefined cases included
  (the CPU lowering defines them exactly as the reference: ``x / 0 == 0``, out-of-range shifts 0
  or the sign fill, masked loads without ``other`` read 0);
* the optimized kernel is compared on every run too, edge cases included: the IR's semantics are
  total (``x / 0 == 0``, out-of-range shifts, masked loads without ``other`` read 0) and every
  rewrite is proved under exactly those semantics, so no rewrite may change such a lane.
  :func:`undefined_lanes` still detects the runs that reach such cases (the ``edge_case_runs``
  counter), so a campaign shows how often the total semantics were exercised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from fuzzgen import FuzzProgram, generate, make_args

import eggpu
from eggpu.ir import Function
from eggpu.ir import ops as ir_ops
from eggpu.ir.interp import interpret
from eggpu.ir.printer import print_function


class FunctionKernel:
    """The smallest kernel object ``eggpu.compile`` takes: an IR function and an id."""

    def __init__(self, fn: Function):
        self._fn = fn
        self.name = fn.name
        self.id = fn.name
        self.source = print_function(fn)

    def ir(self) -> Function:
        return self._fn


@contextmanager
def undefined_lanes() -> Iterator[list[str]]:
    """While active, the interpreter's integer ``div``/``rem``/``shl``/``shr`` references append
    the op name to the yielded list whenever a lane hits an undefined case."""
    hits: list[str] = []
    saved = {name: ir_ops.OPS[name] for name in ("div", "rem", "shl", "shr")}

    def watch(name, ref):
        def run(attrs, a, b, *, dtype):
            if dtype is not None and dtype.is_int:
                bb = np.asarray(b).astype(np.int64) if dtype.is_signed else np.asarray(b).astype(np.uint64)
                bad = (bb == 0) if name in ("div", "rem") else ((bb < 0) | (bb >= dtype.bits))
                if np.any(bad):
                    hits.append(name)
            return ref(attrs, a, b, dtype=dtype)
        return run

    try:
        for name, d in saved.items():
            ir_ops.OPS[name] = dataclasses.replace(d, reference=watch(name, d.reference))
        yield hits
    finally:
        ir_ops.OPS.update(saved)


def same(want: np.ndarray, got: np.ndarray, tol: tuple[float, float] | None = None) -> np.ndarray:
    """Per-lane agreement (see the module docstring)."""
    if want.dtype.kind in "biu":
        return want == got
    w, g = want.astype(np.float64), got.astype(np.float64)
    nan = np.isnan(w) & np.isnan(g)
    bits = w.view(np.int64) == g.view(np.int64)
    if tol is None:
        return nan | bits
    rtol, atol = tol
    with np.errstate(all="ignore"):
        close = np.isfinite(w) & np.isfinite(g) & (np.abs(w - g) <= atol + rtol * np.abs(w))
    return nan | bits | close


@dataclass
class Outcome:
    """The result of one program: ``mismatches`` lists human-readable problems (empty: agreed)."""

    program: FuzzProgram
    args: list
    results: dict[str, list[np.ndarray]] = field(default_factory=dict)
    undefined: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)

    def report(self) -> str:
        fn = print_function(self.program.fn)
        focus = " (focus)" if self.program.focus else ""
        lines = [f"seed {self.program.seed}{focus}: grid {self.program.grid}", fn, "inputs:"]
        lines += [f"  {p.name} = {a!r}" for p, a in zip(self.program.fn.params, self.args)]
        for k, outs in self.results.items():
            lines.append(f"{k}: {outs!r}")
        return "\n".join(lines + self.mismatches)


def _outputs(args: list) -> list[np.ndarray]:
    return [a for a in args if isinstance(a, np.ndarray)]


def _fresh(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def run_program(prog: FuzzProgram, args: list, *, optimize_too: bool = True) -> Outcome:
    """Run ``prog`` three ways and compare (see the module docstring)."""
    res = Outcome(prog, args)
    n_in = len(prog.in_dtypes)
    out_index = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)][n_in:]
    ref = _fresh(args)
    with undefined_lanes() as hits:
        try:
            interpret(prog.fn, prog.grid, *ref)
        except eggpu.EggpuError as e:  # a well-typed program the reference refuses: a bug too
            res.mismatches.append(f"interpreter: {type(e).__name__}: {e}")
            return res
    res.undefined = sorted(set(hits))
    n = args[len(prog.in_dtypes) + len(prog.scalar_dtypes)]
    if prog.load_without_other and n < prog.total:
        res.undefined.append("load without other")
    res.results["interpreter"] = [ref[i] for i in out_index]
    modes = [("compiled", False)] + ([("optimized", True)] if optimize_too else [])
    for label, opt in modes:
        try:
            ck = eggpu.compile(FunctionKernel(prog.fn), optimize=opt, cache=False)
            got = _fresh(args)
            ck.run_cpu(prog.grid, *got)
        except eggpu.EggpuError as e:
            res.mismatches.append(f"{label}: {type(e).__name__}: {e}")
            continue
        res.results[label] = [got[i] for i in out_index]
        for k, (w, g) in enumerate(zip(res.results["interpreter"], res.results[label])):
            ok = same(w, g, prog.tolerances.get(k))
            if not ok.all():
                lanes = np.flatnonzero(~ok)[:6]
                res.mismatches.append(f"{label}: out{k} differs at {lanes.tolist()}: "
                                      f"interpreter {w[lanes]!r} vs {g[lanes]!r}")
    return res


def campaign(seeds, *, max_ops: int = 16, optimize_too: bool = True,
             focus: bool = False) -> tuple[list[Outcome], dict[str, int]]:
    """Run every seed (``focus``: see :func:`fuzzgen.generate`); returns (failed outcomes, counters)."""
    failed: list[Outcome] = []
    stats = {"programs": 0, "optimized_compared": 0, "edge_case_runs": 0}
    for seed in seeds:
        prog = generate(seed, max_ops, focus)
        out = run_program(prog, make_args(prog, seed), optimize_too=optimize_too)
        stats["programs"] += 1
        if "optimized" in out.results:
            stats["optimized_compared"] += 1
        if out.undefined:
            stats["edge_case_runs"] += 1
        if out.mismatches:
            failed.append(out)
    return failed, stats


def main(argv: list[str] | None = None) -> int:
    """``python tests/fuzz/fuzzrun.py START COUNT [focus]``: run seeds ``[START, START + COUNT)``
    (``focus``: the generator's focused mode), print a progress line every 100 programs and every
    mismatch in full; exit 1 on any mismatch."""
    import sys
    import time

    args = sys.argv[1:] if argv is None else argv
    start, count = (int(args[0]), int(args[1])) if len(args) >= 2 else (0, 1000)
    focus = len(args) >= 3 and args[2] == "focus"
    t0, bad, totals = time.time(), 0, {}
    for lo in range(start, start + count, 100):
        failed, stats = campaign(range(lo, min(lo + 100, start + count)), focus=focus)
        totals = {k: totals.get(k, 0) + v for k, v in stats.items()}
        for f in failed:
            bad += 1
            print(f"MISMATCH\n{f.report()}\n", flush=True)
        print(f"[{time.time() - t0:7.1f}s] seeds {start}..{lo + stats['programs'] - 1}: {totals}, "
              f"{bad} mismatching", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    import sys

    sys.path.insert(0, __import__("os").path.dirname(__file__))
    raise SystemExit(main())


def assert_no_mismatch(failed: list, stats: dict, what: str = "mismatching") -> None:
    """Fail a campaign test with the count and the first three programs' reports."""
    assert not failed, f"{len(failed)} {what} program(s) of {stats['programs']}:\n\n" + \
        "\n\n".join(f.report() for f in failed[:3])
