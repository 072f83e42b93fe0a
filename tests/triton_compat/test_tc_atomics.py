"""Atomics' ``sem=`` (Triton's memory orderings): accepted, kept on the IR op, lowered on the GPU as
device-scope fences around the relaxed atomic (release before, acquire after), and the same
results as numpy in the interpreter and run_cpu (whose lanes run in order). Also the bitwise
atomics ``tl.atomic_and/or/xor`` (integer pointers; PTX ``atom.and/or/xor``)."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir import Builder, i32, pointer
from eggpu.ir.errors import IRError
from eggpu.ir.parser import parse_function

SEMS = ["relaxed", "acquire", "release", "acq_rel"]


@eggpu.jit
def spin_lock_count(Lock, Count, SEM: tl.constexpr):
    while tl.atomic_cas(Lock, 0, 1, SEM) == 1:
        pass
    tl.store(Count, tl.load(Count) + 1)
    tl.atomic_xchg(Lock, 0, sem=SEM)


@eggpu.jit
def add_max_min(X, Z, N, SEM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    tl.atomic_add(Z + offs % 3, x, mask=offs < N, sem=SEM)
    tl.atomic_max(Z + 3, x, mask=offs < N, sem=SEM, scope="gpu")
    tl.atomic_min(Z + 4, x, mask=offs < N, sem=SEM)


@pytest.mark.parametrize("sem", SEMS)
def test_a_spin_lock_counts_every_program(run_both, sem):
    got = run_both(spin_lock_count, (37,), np.zeros(1, np.int32), np.zeros(1, np.int32), SEM=sem)
    for lock, count in got.values():
        assert lock.tolist() == [0] and count.tolist() == [37]


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("sem", ["acquire", "acq_rel"])
def test_ordered_atomics_match_numpy(run_both, sem, n):
    x = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int32)
    z = np.array([0, 0, 0, -2**31, 2**31 - 1], np.int32)
    want = [x[i::3].sum() for i in range(3)] + [x.max(), x.min()]
    for (_, out) in run_both(add_max_min, ((n + 255) // 256,), x, z, n, SEM=sem, BLOCK=256).values():
        assert out.tolist() == want


@pytest.mark.parametrize("sem, before, after", [("relaxed", 0, 0), ("acquire", 0, 1), ("release", 1, 0),
                                                ("acq_rel", 1, 1)])
def test_the_ptx_fences_each_atomic_as_its_sem_says(sem, before, after, ptxas_registers):
    x = np.zeros(4, np.int32)
    ck = eggpu.compile(add_max_min.specialize(x, x.copy(), 4, SEM=sem, BLOCK=128), target="sm_90")
    # three atomics (one element per thread), each with its fences in the LLVM IR; LLVM may
    # duplicate a fence into both arms of the mask's branch in the PTX, so that is only checked
    # for presence
    llvm = ck.llvm_ir
    assert llvm.count('fence syncscope("device") release') == 3 * before
    assert llvm.count('fence syncscope("device") acquire') == 3 * after
    assert llvm.count("atomicrmw") == 3
    assert ("fence.acq_rel.gpu;" in ck.ptx) == bool(before or after)
    assert ck.report["optimizer"]["validation"] == "valid"
    assert ptxas_registers(ck.ptx, "sm_90") > 0


def test_sem_is_an_ir_attribute_that_round_trips_and_is_checked():
    b = Builder("sem_k", [("p", pointer(i32))])
    (p,) = b.params
    b.op("atomic_add", p, b.const(1, i32), sem="acq_rel")
    fn = b.finish()
    text = str(fn)
    assert 'atomic_add(%p, %0) {sem="acq_rel"}' in text
    assert str(parse_function(text)) == text
    b2 = Builder("bad_sem", [("p", pointer(i32))])
    with pytest.raises(IRError, match="atomic_cas: sem must be one of relaxed, acquire, release, acq_rel, got 'seq_cst'"):
        b2.op("atomic_cas", b2.params[0], b2.const(0, i32), b2.const(1, i32), sem="seq_cst")


# ---------------------------------------------------------------- bitwise atomics


@eggpu.jit
def bitwise_atomics(X, Z, OLD, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    tl.atomic_or(Z + offs % 2, x, mask=offs < N)
    tl.atomic_and(Z + 2, x, mask=offs < N, sem="acq_rel")
    old = tl.atomic_xor(Z + 3 + offs % 5, x, mask=offs < N)
    tl.store(OLD + offs, old, mask=offs < N)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int64, np.uint64])
def test_bitwise_atomics_match_numpy(run_both, dt, n):
    info = np.iinfo(dt)
    x = np.random.default_rng(n).integers(info.min, info.max, n, dtype=dt, endpoint=True)
    z = np.zeros(8, dt)
    z[2] = info.max if info.min == 0 else -1  # all ones
    want = [np.bitwise_or.reduce(x[i::2]) if x[i::2].size else 0 for i in range(2)]
    want += [np.bitwise_and.reduce(np.r_[z[2], x])]
    want += [np.bitwise_xor.reduce(x[i::5]) if x[i::5].size else 0 for i in range(5)]
    for (_, out, old) in run_both(bitwise_atomics, ((n + 255) // 256,), x, z, np.zeros(n, dt), n, BLOCK=256).values():
        assert out.astype(object).tolist() == np.array(want, dt).astype(object).tolist()
        # lanes update in row-major order (eggpu's documented order): each xor reads the prefix
        for i in range(5):
            chain = np.bitwise_xor.accumulate(np.r_[np.zeros(1, dt), x[i::5]])[:-1]
            assert old[i::5].tolist() == chain.tolist()


def test_bitwise_atomics_are_ptx_atom_instructions(ptxas_registers):
    x = np.zeros(4, np.uint32)
    ck = eggpu.compile(bitwise_atomics.specialize(x, x.copy(), x.copy(), 4, BLOCK=128), target="sm_90")
    for op in ("or", "and", "xor"):
        assert f"atom.global.{op}.b32" in ck.ptx
    assert ck.report["optimizer"]["validation"] == "valid"
    assert ptxas_registers(ck.ptx, "sm_90") > 0
