"""run_cpu JIT time (``build_host``) of the library kernels whose host build calls math functions,
with libdevice's host build (codegen/libdevice_host.py) and without it (``HOST_SYMBOLS`` emptied:
the C library, as before), alternately in one process, best of 3 each.

    python -m bench.host_libdevice_jit

Prints per kernel: both times, their ratio, the first build with libdevice (the process's first
host build of those functions included) and the math functions the host build declares.
"""

from __future__ import annotations

import re
import time

import numpy as np

_MATH = re.compile(r'declare [^@]*@"?(__nv_\w+|(?:exp|exp2|log|log2|log10|log1p|expm1|sin|cos|tan|sinh|cosh|tanh|erf'
                   r'|atan|atan2|pow|hypot)f?)"?\(')


def main() -> None:
    import eggpu
    from eggpu.codegen import build_host
    from eggpu.codegen import libdevice_host as H
    from eggpu.codegen.target import get_target
    from eggpu.kernels import LIBRARY

    on = H.HOST_SYMBOLS
    try:
        for lk in LIBRARY:
            for dt in lk.dtypes:
                size = lk.sizes[0]
                ck = eggpu.compile(lk.instance(lk.make_case(size, dt, np.random.default_rng(0))), cache=False)
                times: dict[str, list[float]] = {"off": [], "on": []}
                ir = ""
                for mode in ("off", "on") * 3:
                    H.HOST_SYMBOLS = on if mode == "on" else frozenset()
                    t0 = time.perf_counter()
                    hk = build_host(ck.ir, num_warps=ck.options.num_warps, sm=get_target(ck.target).sm,
                                    num_stages=ck.options.num_stages, dot_strategy=ck.options.dot_strategy)
                    times[mode].append(time.perf_counter() - t0)
                    if mode == "on":
                        ir = hk.llvm_ir
                calls = sorted(set(_MATH.findall(ir)))
                if calls:
                    off, new = min(times["off"]), min(times["on"])
                    print(f"{lk.name}[{dt}] {size}: libm {off * 1e3:.1f} ms, libdevice {new * 1e3:.1f} ms, "
                          f"ratio {new / off:.2f}, first {times['on'][0] * 1e3:.1f} ms; {', '.join(calls)}", flush=True)
    finally:
        H.HOST_SYMBOLS = on


if __name__ == "__main__":
    main()
