"""The PTX of every library kernel variant, hashed, to show a code-generation change leaves it alone.

    python -m bench.ptx_identity OUT.json [--targets sm_80 sm_90] [--save-dir DIR]
    python -m bench.ptx_identity OUT.json --compare BEFORE.json

Compiles (``eggpu.compile``, kernel cache off, optimizer on) every kernel of
:data:`eggpu.kernels.LIBRARY` for every dtype it lists and each of its ``sizes`` (the constexpr
values differ per size), for each target, and writes ``{"kernel[dtype] size target": sha256 of
ck.ptx}`` to ``OUT.json`` (``--save-dir`` also keeps each PTX text, for a diff). Each compile
starts with libdevice's in-process subsets forgotten (:func:`eggpu.codegen.libdevice.clear_cache`),
so every variant that calls libdevice takes the path of a process's first compile (prefetch,
math cut, cut) rather than an in-process hit. ``--compare`` prints the variants whose PTX differs
from (or is missing in) an earlier run's file and exits 1 when there is any.

Run it once on the code before a change and once after; the variant set is the library's, so
both runs must use the same library.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_TARGETS = ("sm_80", "sm_90")


def variants(targets: tuple[str, ...]):
    """``(label, kernel instance, target)`` of every library kernel, dtype, size and target."""
    from eggpu.kernels import LIBRARY

    for lk in LIBRARY:
        for dt in lk.dtypes:
            for size in lk.sizes:
                case = lk.make_case(size, dt, np.random.default_rng(0))
                for target in targets:
                    yield f"{lk.name}[{dt}] {size} {target}", lk.instance(case), target


def hashes(targets: tuple[str, ...], save_dir: Path | None) -> dict[str, str]:
    import eggpu
    from eggpu.codegen import libdevice

    out: dict[str, str] = {}
    for label, inst, target in variants(targets):
        libdevice.clear_cache()
        ptx = eggpu.compile(inst, target=target, cache=False).ptx
        out[label] = hashlib.sha256(ptx.encode()).hexdigest()
        if save_dir is not None:
            save_dir.mkdir(parents=True, exist_ok=True)
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
            (save_dir / f"{name}.ptx").write_text(ptx)
    return out


def compare(now: dict[str, str], before: dict[str, str]) -> list[str]:
    """Labels whose hash differs between the runs or that only one run has."""
    return sorted(k for k in now.keys() | before.keys() if now.get(k) != before.get(k))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ptx_identity", description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--targets", nargs="+", default=list(DEFAULT_TARGETS))
    ap.add_argument("--save-dir", type=Path)
    ap.add_argument("--compare", type=Path, help="an earlier run's OUT.json")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    now = hashes(tuple(a.targets), a.save_dir)
    a.out.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    print(f"{len(now)} variants hashed in {time.perf_counter() - t:.0f} s -> {a.out}")
    if a.compare is None:
        return 0
    diff = compare(now, json.loads(a.compare.read_text()))
    for label in diff:
        print(f"DIFFERS: {label}")
    print(f"{len(now) - len(diff)} of {len(now)} identical to {a.compare}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
