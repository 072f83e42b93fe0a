"""A PTX pass: ``.pragma "nounroll"`` at the head of every loop without tensor-core instructions.

ptxas unrolls a small loop with a runtime trip count 4x (a remainder loop beside it) when its
body is short enough. eggpu's row loops are shorter than Triton's (2-element vector loads, one
address add per iteration: :mod:`eggpu.codegen.loop_form`), so ptxas unrolled all three loops of
layer norm where it unrolls two of Triton's (sm_90 SASS loops 49+74+118 instructions against
Triton's 61+87+39) and the static count came out at 1.62x Triton's. Without unrolling the same
loops are 15+21+31 and the kernel 294 instructions (Triton 418), registers 32 -> 30.

Not the default (``PtxOptions(ptxas_unroll=False)`` turns it on) because of what it may cost: an unrolled reduction loop has 4 iterations' loads in flight per warp instead of
1, which can matter for a memory-bound loop at low occupancy; the row kernels' other loops
(softmax, cross-entropy, row argmax: shuffles and barriers in the body) were never unrolled. A
loop with ``mma``/``wgmma``/``ldmatrix``/``cp.async`` (the tensor-core K loops, whose
pipelining the unrolling serves) is left to ptxas. Which is faster needs a GPU to measure; the
static counts are in docs/codegen.md.

A loop is found the way LLVM's NVPTX printer writes them: a ``$L__BB<f>_<n>:`` label that a
later ``bra`` (predicated or not) jumps back to; the pragma goes right after the label, where
LLVM itself puts the ``nounroll`` of ``llvm.loop.unroll.disable``. A loop already marked gets
no second pragma.
"""

from __future__ import annotations

import re

__all__ = ["no_unroll"]

_LABEL = re.compile(r"^(\$L__BB\d+_\d+):[^\n]*\n(\t\.pragma \"nounroll\";)?", re.MULTILINE)
_TENSOR_CORE = re.compile(r"\b(?:w?gmma|mma|ldmatrix|cp\.async)\b")
_BRANCH = re.compile(r"^\s*(?:@!?%p\d+\s+)?bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", re.MULTILINE)


def no_unroll(ptx: str) -> str:
    """``ptx`` with ``.pragma "nounroll";`` at the head of each loop (see the module docs)."""
    labels = {m.group(1): m.start() for m in _LABEL.finditer(ptx)}
    heads = set()
    for m in _BRANCH.finditer(ptx):
        pos = labels.get(m.group(1))
        if pos is not None and pos < m.start() and not _TENSOR_CORE.search(ptx, pos, m.start()):
            heads.add(m.group(1))
    if not heads:
        return ptx

    def mark(m: re.Match) -> str:
        if m.group(1) not in heads or m.group(2):
            return m.group(0)
        return m.group(0) + '\t.pragma "nounroll";\n'

    return _LABEL.sub(mark, ptx)
