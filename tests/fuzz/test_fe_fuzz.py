"""Frontend differential fuzzing: generated Triton-language kernels (``fe_gen``) run by Triton's
own interpreter and by ``@eggpu.jit`` (``run_cpu`` and ``interpret``), compared as ``fe_run``'s
docstring says.

* the default suite runs :data:`CI_PROGRAMS` seeds (one test; ``run_cpu`` on every third);
* ``-m slow`` runs ``EGGPU_FE_FUZZ_PROGRAMS`` programs (default 3,000) from seed
  ``EGGPU_FE_FUZZ_SEED`` (default 200,000) in chunks of :data:`CHUNK`;
* a seed reproduces a program and its inputs: ``python tests/fuzz/fe_run.py SEED 1``.
"""

from __future__ import annotations

import collections
import os

import numpy as np
import pytest

# Triton's interpreter is the reference: triton is in the `test` extra on Python >= 3.12 (CI's main
# run), not on 3.11 (CI's fast subset runs none of these tests)
pytest.importorskip("triton", reason="the frontend fuzzer's reference is Triton's interpreter (pip install .[test] "
                    "on Python >= 3.12)")

import fe_gen  # noqa: E402
import fe_run  # noqa: E402
import fuzzrun  # noqa: E402

CI_PROGRAMS = 24
CHUNK = 100
SLOW_PROGRAMS = int(os.environ.get("EGGPU_FE_FUZZ_PROGRAMS", "3000"))
SLOW_SEED = int(os.environ.get("EGGPU_FE_FUZZ_SEED", "200000"))


def test_bounded_campaign():
    # eggpu's interpreter on every program, the compiled CPU lowering on every third
    failed, stats = fe_run.campaign(range(CI_PROGRAMS), cpu_every=3)
    fuzzrun.assert_no_mismatch(failed, stats, "failing")
    assert stats["programs"] == CI_PROGRAMS
    assert stats["cpu_runs"] >= 4, stats
    # most programs are valid Triton and are compared (the generator's promotion model keeps
    # Triton's refusals rare)
    assert stats["ok"] >= CI_PROGRAMS * 2 // 3, stats


@pytest.mark.slow
@pytest.mark.parametrize("start", range(SLOW_SEED, SLOW_SEED + SLOW_PROGRAMS, CHUNK))
def test_long_campaign(start):
    failed, stats = fe_run.campaign(range(start, min(start + CHUNK, SLOW_SEED + SLOW_PROGRAMS)))
    fuzzrun.assert_no_mismatch(failed, stats, "failing")


def test_generation_is_deterministic_and_covers_the_features():
    assert fe_gen.generate(5).source == fe_gen.generate(5).source
    a1, a2 = fe_gen.generate(5).make_args(), fe_gen.generate(5).make_args()
    assert [np.asarray(x).tobytes() for x in a1] == [np.asarray(x).tobytes() for x in a2]
    feats: collections.Counter = collections.Counter()
    sizes, scalar_dtypes = set(), set()
    for seed in range(200):
        p = fe_gen.generate(seed)
        feats.update(p.features)
        sizes.add(p.n)
        scalar_dtypes.update(dt for k, dt in p.arg_kinds if k == "scalar")
        compile(p.source, f"fe_{seed}", "exec")  # valid Python
    for f in ("divmod", "shift", "where", "cast", "bitcast", "f2i", "exp", "log", "sqrt", "minmax",
              "for", "while", "if", "other", "sum", "max", "min", "argmax", "argmin", "cumsum",
              "bf16", "fmod", "unary", "compare", "propagate_nan",
              "reverse", "axis_none", "keep_dims", "i64_offsets"):
        assert feats[f] > 0, (f, feats)
    assert sizes == set(fe_gen.RAGGED)
    assert scalar_dtypes >= {"i32", "i64", "u32", "f16", "bf16", "f32", "f64"}


def test_the_comparison_can_fail():
    """A wrong eggpu result is reported: the reference of one program against a corrupted run."""
    prog = next(p for p in map(fe_gen.generate, range(100)) if fe_run.run_program(p).status == "ok")
    want = fe_run.run_triton(prog, prog.make_args())
    got = [w.copy() for w in want]
    got[0][...] = got[0] + np.ones((), got[0].dtype)
    assert fe_run.compare(prog, want, got, "corrupted")


def test_triton_interpreter_workarounds():
    """The reference's patches of Triton's interpreter (``fe_run._patch_interpreter``): bf16
    conversions round to nearest even; a signed ``>>`` promoted to unsigned keeps unsigned bits;
    ``tl.maximum`` orders -0.0 < +0.0."""
    src = '''@jit
def probe(x_ptr, s_ptr, b_ptr, f_ptr, m_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(b_ptr + offs, x.to(tl.bfloat16))
    tl.store(f_ptr + offs, ((offs - 8) >> tl.load(s_ptr + offs)).to(tl.float32))
    tl.store(m_ptr + offs, tl.maximum(x * 0.0, -(x * 0.0)))
'''
    kinds = [("in", "f32"), ("in", "u32"), ("out", "bf16"), ("out", "f32"), ("out", "f32")]
    prog = fe_gen.FeProgram(0, src, "probe", ["x_ptr", "s_ptr", "b_ptr", "f_ptr", "m_ptr"], kinds, {},
                            {"BLOCK": 4}, 4, False, [False, False, False])
    x = np.array([1 + 2**-8 + 2**-20, 1 + 2**-8, 3.0, -1 - 2**-7 - 2**-9], np.float32)
    args = [x, np.ones(4, np.uint32), np.zeros(4, fe_gen.NP["bf16"]), np.zeros(4, np.float32),
            np.ones(4, np.float32)]
    b, f, m = fe_run.run_triton(prog, args)
    np.testing.assert_array_equal(b, x.astype(fe_gen.NP["bf16"]))
    np.testing.assert_array_equal(f, (np.arange(4, dtype=np.int64) - 8 >> 1 & 0xFFFFFFFF).astype(np.float32))
    assert not np.signbit(m).any() and not m.any()  # max(+-0.0, -+0.0) is +0.0


def test_minimize_keeps_the_failure(monkeypatch):
    """A fake eggpu bug (outputs off by one whenever the program loads ``x0_ptr`` into ``v0``
    and computes ``t1``): the minimized program still fails and is smaller."""
    prog = next(p for p in map(fe_gen.generate, range(100))
                if " t1 = " in p.source and p.source.count("\n") > 14 and not p.tiled
                and fe_run.run_program(p, ("interpret",)).status == "ok")
    real = fe_run.run_eggpu

    def buggy(p, args, device):
        outs = real(p, args, device)
        if " t1 = " in p.source:
            outs[0][...] = outs[0] + np.ones((), outs[0].dtype)
        return outs

    monkeypatch.setattr(fe_run, "run_eggpu", buggy)
    small = fe_run.minimize(prog)
    assert fe_run.run_program(small, ("interpret",)).status == "mismatch"
    assert " t1 = " in small.source
    assert small.source.count("\n") < prog.source.count("\n")


def test_float_sums_add_bounded_values(monkeypatch):
    """Seed 731117: an f16 ``tl.cumsum`` of 5.9e4, 1.3e4, -3.3e4... is inf in Triton's interpreter
    (a sequential sum) and 3.9e4 in eggpu (a Hillis-Steele tree): a float sum's order is
    unspecified, so the generator clamps its summands to ``SUM_BOUND`` (no partial sum of a
    16x16 tile can overflow); unclamped, the program is a mismatch."""
    prog = fe_gen.generate(731117)
    assert "tl.cumsum(tl.minimum(tl.maximum(" in prog.source and ", 128.0, propagate_nan" in prog.source
    assert fe_run.run_program(prog, ("interpret",)).status == "ok"
    with monkeypatch.context() as m:
        m.setattr(fe_gen, "_bounded_summand", lambda v: v)
        raw = fe_gen.generate(731117)
    assert "tl.cumsum(tl.where(" in raw.source
    assert fe_run.run_program(raw, ("interpret",)).status == "mismatch"
    for seed in range(200):  # every float sum of the generator's programs is clamped
        src = fe_gen.generate(seed).source
        for call in ("tl.sum(", "tl.cumsum("):
            for part in src.split(call)[1:]:
                line = part.split("\n")[0]
                assert line.startswith("tl.minimum(tl.maximum(") or not _float_sum(src, line), (seed, line)


def _float_sum(src: str, line: str) -> bool:
    """Whether the reduction on ``line`` (the text after ``tl.sum(``) is of a float (its result's
    static_assert on the next source line names the dtype)."""
    after = src[src.index(line) + len(line):].split("\n")[1]
    return any(f"tl.{t}" in after for t in ("float16", "bfloat16", "float32", "float64"))


def test_triton_interpreter_reductions_ignore_signaling_nans():
    """Seed 731657: ``tl.max`` over a tile holding a signaling NaN (an f16 bitcast of 0x7CA8) was
    1.6e-5 in Triton's interpreter (numpy's ``fmax.reduce`` mishandles signaling NaNs) where
    compiled Triton and eggpu give 0.593; ``fe_run`` quiets NaNs before the interpreter's
    ``nanmax``/``nanmin``."""
    src = '''@jit
def probe(x_ptr, mx_ptr, mn_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(mx_ptr + offs, tl.max(x, axis=0) + offs * 0.0)
    tl.store(mn_ptr + offs, tl.min(-x, axis=0) + offs * 0.0)
'''
    kinds = [("in", "f32"), ("out", "f32"), ("out", "f32")]
    prog = fe_gen.FeProgram(0, src, "probe", ["x_ptr", "mx_ptr", "mn_ptr"], kinds, {}, {"BLOCK": 64}, 64,
                            False, [False, False])
    x = np.zeros(64, np.float32)
    x[61] = 0.5
    x.view(np.uint32)[62] = 0x7FA00000  # a signaling NaN
    mx, mn = fe_run.run_triton(prog, [x, np.zeros(64, np.float32), np.zeros(64, np.float32)])
    assert (mx == 0.5).all() and (mn == -0.5).all(), (mx[:2], mn[:2])
    got = fe_run.run_eggpu(prog, [x, np.zeros(64, np.float32), np.zeros(64, np.float32)], "interpret")
    assert (got[0] == 0.5).all() and (got[1] == -0.5).all()
