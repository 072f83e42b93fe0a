"""Every library kernel's PTX, written to a folder, to compare two versions of eggpu byte for byte.

    python -m bench.ptx_identity OUT_DIR [--targets sm_80 sm_90]

For each kernel of :data:`eggpu.kernels.LIBRARY`, each of its dtypes, its smallest and largest
size (the library's own case builder, seeded) and each target: one compile with the kernel cache off, its PTX written to
``OUT_DIR/<kernel>-<dtype>-<size>-<target>.ptx`` (a compile error as ``.err``). Run it once per
version (e.g. with ``PYTHONPATH`` pointing at an exported older tree) and ``diff -r`` the folders:
a change meant to affect only compile time must leave every file identical.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ptx_identity", description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--targets", nargs="+", default=["sm_80", "sm_90"])
    a = ap.parse_args(argv)
    import numpy as np

    import eggpu
    from eggpu.kernels import LIBRARY

    a.out.mkdir(parents=True, exist_ok=True)
    count = 0
    for lk in sorted(LIBRARY, key=lambda k: k.name):
        name = lk.name
        for dtype in lk.dtypes:
            for size in dict.fromkeys((lk.sizes[0], lk.sizes[-1])):
                case = lk.make_case(size, dtype, np.random.default_rng(0))
                stem = f"{name}-{dtype}-{'x'.join(map(str, size)) if isinstance(size, tuple) else size}"
                for target in a.targets:
                    path = a.out / f"{stem}-{target}"
                    try:
                        ck = eggpu.compile(lk.instance(case), target=target, cache=False)
                        path.with_suffix(".ptx").write_text(ck.ptx)
                    except Exception as e:  # recorded: both versions must fail alike
                        path.with_suffix(".err").write_text(f"{type(e).__name__}: {e}\n")
                    count += 1
    print(f"{count} PTX files in {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
