"""Static code of the FP8 ``tl.dot`` matmul, eggpu beside Triton (no GPU needed).

The K-loop matmul of :mod:`bench.mma_static` (one source text for both compilers) on e4m3 x e4m3
operands with f32 accumulation, 64x64x64 tiles, ``num_warps=4``, ``num_stages=1``: ptxas registers
and spills, SASS instruction counts and the MMA opcodes (``QMMA.16832`` for Triton's native FP8
``mma.sync`` on sm_89, ``QGMMA`` for its FP8 wgmma on sm_90a; eggpu converts the
operands to f16 and uses ``HMMA.16816.F32`` — docs/codegen.md, "FP8 operands"). Usage:
``python -m bench.fp8_static`` (prints JSON; writes nothing).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import ml_dtypes
import numpy as np

from bench.mma_static import (
    NUM_WARPS,
    SHAPE,
    _ptxas_fields,
    disassemble,
    k_loop,
    matmul_source,
    parse_instructions,
)

TILE = (64, 64, 64)
TARGETS = ("sm_89", "sm_90")


def _sass(cubin: bytes) -> dict[str, Any]:
    text = disassemble(cubin)
    if text is None:
        return {"sass": "nvdisasm not installed"}
    instrs, _ = parse_instructions(text)
    body = k_loop(text, ("HMMA", "HGMMA", "QMMA", "QGMMA"))
    mma = sorted(set(re.findall(r"\b([HQ]G?MMA[.\w]*)", text)))
    return {"sass_total": len(instrs), "sass_k_loop": len(body), "mma_opcodes": mma,
            "k_loop_top": dict(Counter(body).most_common(6))}


def eggpu_case(target: str) -> dict[str, Any]:
    from eggpu.codegen import compile_ptx_module

    bm, bn, bk = TILE
    M, N, K = SHAPE
    a = np.zeros((M, K), ml_dtypes.float8_e4m3fn)
    b = np.zeros((K, N), ml_dtypes.float8_e4m3fn)
    fn = matmul_source("eggpu").specialize(a, b, np.zeros((M, N), np.float32), M, N, K, BM=bm, BN=bn, BK=bk).ir()
    cp = compile_ptx_module(fn, target, num_warps=NUM_WARPS, num_stages=1)
    out, cubin = _ptxas_fields(cp.ptx, target)
    return out | {"dot": [d["strategy"] for d in cp.lowered.dots]} | _sass(cubin)


def triton_case(target: str) -> dict[str, Any]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from bench.tools import ptx_target

    bm, bn, bk = TILE
    sig = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    src = ASTSource(fn=matmul_source("triton"), signature=sig, constexprs={"BM": bm, "BN": bn, "BK": bk})
    ck = triton.compile(src, target=GPUTarget("cuda", int(target[3:]), 32),
                        options={"num_warps": NUM_WARPS, "num_stages": 1, "enable_fp_fusion": False})
    ptx = ck.asm["ptx"]
    out, cubin = _ptxas_fields(ptx, ptx_target(ptx))
    return out | {"ptx_target": ptx_target(ptx)} | _sass(cubin)


def main() -> int:
    res = {t: {"eggpu": eggpu_case(t), "triton": triton_case(t)} for t in TARGETS}
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
