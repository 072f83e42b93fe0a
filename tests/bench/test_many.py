"""bench.many picks 64 distinct library specializations, every kernel represented."""

from __future__ import annotations

from bench.many import COUNT, instances
from eggpu.kernels import LIBRARY


def test_sixty_four_distinct_specializations_of_every_kernel():
    insts = instances()
    assert len(insts) == COUNT == 64
    assert len({repr(i) for i in insts}) == COUNT
    names = {type(i).__name__ for i in insts}
    assert len(names) == len(LIBRARY), names
