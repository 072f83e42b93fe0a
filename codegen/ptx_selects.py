"""A PTX peephole: a select between two float constants that recur, as integer arithmetic.

libdevice's ``erff`` (CUDA 12 and later) picks each polynomial coefficient with
``selp.f32 %r, 0fA, 0fB, %p``. SASS's ``FSEL`` encodes one immediate, so ptxas keeps the other
constant in a register, and when the same pair recurs (gelu unrolls 8 ``erf`` calls per thread)
it keeps each such constant in a register for the whole kernel: 7 registers of gelu's 32
(Triton's older branchy ``erff`` moves its constants inside the branches: 31).

:func:`split_constant_selects` rewrites every ``selp.f32`` of two immediates whose pair occurs
at least :data:`MIN_REPEATS` times in the PTX into ``selp.b32 %r, A-B, 0, %p`` (``SEL`` with an
immediate and the zero register) and ``add.s32 %r, %r, B`` (``IADD3`` with an immediate): the
same 32 bits in every case (``B + (A - B) = A`` modulo 2**32, ``B + 0 = B``), one more
instruction per select, and no register held for a constant (gelu f32: 32 -> 30 registers on
sm_90, SASS 255 -> 303 instructions, Triton 31 and 320). A pair that occurs once is left alone
(there ptxas materializes the constant next to its use anyway), and so is a pair with a zero
(``FSEL`` takes ``RZ``). The PTX stays valid: the destination register is written twice, which
PTX's virtual registers allow.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["MIN_REPEATS", "split_constant_selects"]

MIN_REPEATS = 2

_SELP = re.compile(r"^(\s*)selp\.f32\s+(%r\d+),\s*0f([0-9A-Fa-f]{8}),\s*0f([0-9A-Fa-f]{8}),\s*(!?%p\d+);\s*$",
                   re.MULTILINE)


def split_constant_selects(ptx: str) -> str:
    """``ptx`` with its recurring ``selp.f32`` of two nonzero immediates split (see module docs)."""
    pairs = Counter((a.upper(), b.upper()) for _, _, a, b, _ in _SELP.findall(ptx))
    if not pairs or max(pairs.values()) < MIN_REPEATS:
        return ptx

    def rewrite(m: re.Match) -> str:
        indent, dst, a, b, pred = m.groups()
        av, bv = int(a, 16), int(b, 16)
        if pairs[(a.upper(), b.upper())] < MIN_REPEATS or av == 0 or bv == 0:
            return m.group(0)
        diff = (av - bv) & 0xFFFFFFFF
        return (f"{indent}selp.b32 \t{dst}, 0x{diff:08X}, 0x00000000, {pred};\n"
                f"{indent}add.s32 \t{dst}, {dst}, 0x{bv:08X};")

    return _SELP.sub(rewrite, ptx)
