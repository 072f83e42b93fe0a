"""How close the e-graph phase stays to ``Limits.seconds`` on issue 9's exploding kernels.

``python -m bench.saturation_bound [--runs N]`` optimizes ``tl.store(y_ptr, s * 0)`` on an i32
scalar and a block ``load(...) * 0`` with the shipped rules at limits of 0.5 s and 2 s, plus a
comm + assoc rule pair over a 30-operand sum whose 5th iteration explodes (6.5 s, 900,000
e-nodes), and prints per case the median and the worst of the phase's wall time (saturate +
extract: loading, steps, the forked child, copy-back, extraction) as a fraction of the limit.
The goal (issue 9) is a worst case of at most 1.2x the limit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import eggpu
import eggpu.language as tl
from eggpu.ir import Builder, Function, i32, pointer, scalar
from eggpu.optimizer import Limits, optimize

BOOM = """
(rewrite (Add t a b) (Add t b a) :name "boom-comm")
(rewrite (Add t (Add t a b) c) (Add t a (Add t b c)) :when ((IsInt t)) :name "boom-assoc")
"""


@eggpu.kernel
def scalar_times_zero(y_ptr: tl.Pointer[tl.i32], s: tl.i32):
    tl.store(y_ptr, s * 0)


@eggpu.kernel
def block_times_zero(x_ptr: tl.Pointer[tl.i32], y_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) * 0, mask=mask)


def sum_of(n: int) -> Function:
    b = Builder(f"sum{n}", [("out", pointer(i32))] + [(f"s{i}", scalar(i32)) for i in range(n)])
    acc = b.param("s0")
    for i in range(1, n):
        acc = b.op("add", acc, b.param(f"s{i}"))
    b.effect("store", b.param("out"), acc)
    return b.finish()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    boom = Path(tempfile.mkdtemp()) / "boom.egg"
    boom.write_text(BOOM)
    cases = [("s*0 scalar i32", scalar_times_zero.__eggpu_kernel__().ir(), {}),
             ("block load*0", block_times_zero.__eggpu_kernel__(BLOCK=128).ir(), {}),
             ("sum30 comm+assoc", sum_of(30), {"rules": [boom], "shipped_rules": False})]
    optimize(sum_of(2))  # prove and load the shipped rules once: the phase is what is timed
    print(f"{'case':<18} {'limit':>5}  {'median':>7} {'worst':>7}  worst/limit  stop reasons")
    worst_ratio = 0.0
    for name, fn, kw in cases:
        for seconds in (0.5, 2.0):
            limits = Limits(seconds=seconds, iterations=100 if "rules" in kw else 16,
                            match_limit=10**9 if "rules" in kw else None)
            phases, reasons = [], set()
            for _ in range(args.runs):
                res = optimize(fn, limits=limits, validate=False, **kw)
                phases.append(res.times["saturate"] + res.times["extract"])
                reasons.add(str(res.stop_reason))
            worst = max(phases)
            worst_ratio = max(worst_ratio, worst / seconds)
            print(f"{name:<18} {seconds:>5g}  {statistics.median(phases):7.3f} {worst:7.3f}  "
                  f"{worst / seconds:11.2f}  {','.join(sorted(reasons))}")
    print(f"worst phase / limit over all cases: {worst_ratio:.2f} (goal <= 1.20)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
