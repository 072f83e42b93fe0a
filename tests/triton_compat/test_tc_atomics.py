"""Atomics' ``sem=``/``scope=`` (Triton's memory orderings, default acq_rel/gpu as in Triton): kept on
the IR op, lowered on the GPU to the ``atom`` instruction Triton emits for them, and the same
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


def _atom_lines(ptx: str) -> list[str]:
    return [ln.strip().lstrip("@%p0123456789 ").split()[0] for ln in ptx.splitlines()
            if "atom." in ln or "fence." in ln or "membar" in ln]


@pytest.mark.parametrize("sem", [None, *SEMS])
@pytest.mark.parametrize("scope", [None, "cta", "gpu", "sys"])
def test_each_atomic_is_the_atom_instruction_triton_emits_for_its_sem_and_scope(sem, scope):
    # Triton 3.x (triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))) emits
    # atom.global.gpu.acq_rel.add.f32 for a default atomic_add, atom.global.cta.acquire.max.s32 for
    # sem="acquire", scope="cta", and atom.global.acq_rel.gpu.cas.b32 for a default atomic_cas
    x = np.zeros(4, np.int32)
    ck = eggpu.compile(add_max_min.specialize(x, x.copy(), 4, SEM=sem, BLOCK=128), target="sm_90")
    want_sem, want_scope = sem or "acq_rel", "gpu"
    assert sorted(set(_atom_lines(ck.ptx))) == sorted(
        f"atom.global.{want_scope}.{want_sem}.{op}" for op in ("add.u32", "max.s32", "min.s32"))
    assert "fence" not in ck.llvm_ir  # the ordering is the instruction's, not fences around it
    lock = np.zeros(1, np.int32)
    ck = eggpu.compile(scoped_lock.specialize(lock, lock.copy(), SEM=sem, SCOPE=scope), target="sm_90")
    want_scope = scope or "gpu"
    assert _atom_lines(ck.ptx) == [f"atom.{want_sem}.{want_scope}.global.cas.b32",
                                   f"atom.global.{want_scope}.{want_sem}.exch.b32"]


@eggpu.jit
def scoped_lock(Lock, Count, SEM: tl.constexpr, SCOPE: tl.constexpr):
    while tl.atomic_cas(Lock, 0, 1, sem=SEM, scope=SCOPE) == 1:
        pass
    tl.store(Count, tl.load(Count) + 1)
    tl.atomic_xchg(Lock, 0, sem=SEM, scope=SCOPE)


@eggpu.jit
def every_atomic(X, Z, N, SEM: tl.constexpr, SCOPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    tl.atomic_add(Z + offs % 3, x, mask=offs < N, sem=SEM, scope=SCOPE)
    tl.atomic_max(Z + 3, x, mask=offs < N, sem=SEM, scope=SCOPE)
    tl.atomic_min(Z + 4, x, mask=offs < N, sem=SEM, scope=SCOPE)
    tl.atomic_xchg(Z + 5, x, mask=offs < N, sem=SEM, scope=SCOPE)


_NATIVE = {np.int32: ["add.u32", "exch.b32", "max.s32", "min.s32"],
           np.uint64: ["add.u64", "exch.b64", "max.u64", "min.u64"],
           np.float32: ["add.f32", "exch.b32"], np.float64: ["add.f64", "exch.b64"],
           np.float16: ["add.noftz.f16"], np.int8: []}


@pytest.mark.parametrize("dt", list(_NATIVE))
def test_native_atomics_carry_the_ordering_and_the_others_are_ordered_cas_loops(dt):
    x = np.zeros(4, dt)
    ck = eggpu.compile(every_atomic.specialize(x, x.copy(), 4, SEM="release", SCOPE="sys", BLOCK=128),
                       target="sm_90")
    lines = _atom_lines(ck.ptx)
    native = sorted({ln.removeprefix("atom.global.sys.release.") for ln in lines if ln.startswith("atom.global.")})
    assert native == _NATIVE[dt]
    # the rest (float max/min, 8/16-bit) are cmpxchg loops: release on the cas, or LLVM's fences
    # around a relaxed one for 8/16-bit words
    others = [ln for ln in lines if not ln.startswith("atom.global.")]
    assert all(ln in ("atom.release.sys.global.cas.b32", "atom.release.sys.global.cas.b64",
                      "atom.relaxed.sys.global.cas.b32", "fence.acq_rel.sys;", "fence.sc.sys;") for ln in others), others
    assert bool(others) == (len(_NATIVE[dt]) < 4)


@pytest.mark.parametrize("target", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"])
def test_ptxas_accepts_every_sem_and_scope_on_every_target(target, ptxas_registers):
    for dt in (np.int32, np.int64, np.float32, np.float16, np.uint8):
        for sem, scope in [(None, None), ("relaxed", "cta"), ("acquire", "sys"), ("release", "gpu")]:
            x = np.zeros(4, dt)
            ck = eggpu.compile(every_atomic.specialize(x, x.copy(), 4, SEM=sem, SCOPE=scope, BLOCK=128),
                               target=target)
            assert ptxas_registers(ck.ptx, target) > 0
    lock = np.zeros(1, np.int32)
    ck = eggpu.compile(scoped_lock.specialize(lock, lock.copy(), SEM=None, SCOPE=None), target=target)
    assert ptxas_registers(ck.ptx, target) > 0


@pytest.mark.parametrize("sem", [None, *SEMS])
@pytest.mark.parametrize("scope", [None, "cta", "sys"])
def test_every_sem_and_scope_gives_numpy_results(run_both, sem, scope):
    n = 1001
    x = np.random.default_rng(7).integers(-1000, 1000, n).astype(np.int32)
    z = np.array([0, 0, 0, -2**31, 2**31 - 1, 0], np.int32)
    want = [x[i::3].sum() for i in range(3)] + [x.max(), x.min(), x[-1]]
    for (_, out) in run_both(every_atomic, ((n + 255) // 256,), x, z, n, SEM=sem, SCOPE=scope, BLOCK=256).values():
        assert out.tolist() == want
    for lock, count in run_both(scoped_lock, (19,), np.zeros(1, np.int32), np.zeros(1, np.int32),
                                SEM=sem, SCOPE=scope).values():
        assert lock.tolist() == [0] and count.tolist() == [19]


def test_triton_defaults_are_the_ir_defaults():
    # sem=None and sem="acq_rel" (scope None and "gpu") are one IR: no attribute
    x = np.zeros(4, np.int32)
    texts = {str(add_max_min.specialize(x, x.copy(), 4, SEM=s, BLOCK=128).ir()) for s in (None, "acq_rel")}
    assert len(texts) == 1 and "sem=" not in texts.pop()
    relaxed = str(add_max_min.specialize(x, x.copy(), 4, SEM="relaxed", BLOCK=128).ir())
    assert relaxed.count('{sem="relaxed"}') == 3
    lock = np.zeros(1, np.int32)
    cta = str(scoped_lock.specialize(lock, lock.copy(), SEM="acquire", SCOPE="cta").ir())
    assert cta.count('sem="acquire"') == 2 and cta.count('scope="cta"') == 2


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
    with pytest.raises(IRError, match="atomic_xor: scope must be one of cta, gpu, sys, got 'block'"):
        b2.op("atomic_xor", b2.params[0], b2.const(0, i32), scope="block")


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
        assert f"atom.global.gpu.acq_rel.{op}.b32" in ck.ptx  # Triton's default ordering
    assert ck.report["optimizer"]["validation"] == "valid"
    assert ptxas_registers(ck.ptx, "sm_90") > 0
