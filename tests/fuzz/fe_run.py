"""Frontend differential runs: one generated Triton-language source (``fe_gen``) under

* Triton's own interpreter (the reference; ``TRITON_INTERPRET=1``'s ``InterpretedFunction``,
  fed numpy arrays through :class:`_NumpyTensor`, a minimal stand-in for the torch tensor it
  expects, and typed scalars as 0-d interpreter tensors of the numpy scalar's dtype, a Python
  float as f32 as compiled Triton takes it);
* ``@eggpu.jit`` launched ``kernel[grid](...)`` with ``EGGPU_JIT_DEVICE=cpu`` (the compiled
  lowering on the CPU, ``run_cpu``) and ``EGGPU_JIT_DEVICE=interpret`` (eggpu's interpreter).

Comparison (``fuzzrun.same``): integers exactly, floats bit-exactly with any NaN equal to any
NaN, except outputs the generator marks approximate (transcendentals, float sums), compared
with a tolerance; in programs using the reductions ``tl.max``/``tl.min`` a zero's sign is not
compared (the interpreter's ``np.nanmax`` returns either zero; ``tl.maximum``/``tl.minimum`` are
patched below to order -0.0 < +0.0 as eggpu and PTX do).
A program Triton refuses (a TypeError in its frontend: our promotion model is deliberately
loose) is counted as ``triton_refused`` and not run further; eggpu refusing a program Triton
accepts is a mismatch.

``python tests/fuzz/fe_run.py SEED [COUNT [DEVICES [CPU_EVERY]]]`` runs seeds (``DEVICES``:
``cpu,interpret``; ``run_cpu`` on every ``CPU_EVERY``-th seed) and prints each failure with its
source, and the counters every 50 programs on stderr; ``fe_run.py --min SEED [DEVICES]`` prints
a minimized version of a failing seed's program (:func:`minimize`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np
from fe_gen import NP, TL, FeProgram, generate
from fuzzrun import same

_DIR = Path(tempfile.gettempdir()) / f"eggpu-fefuzz-{os.getuid()}"
_TORCH_NAMES = {"i16": "int16", "i32": "int32", "i64": "int64", "u32": "uint32",
                "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}
_NP_OF = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "int16": np.int16,
          "int32": np.int32, "int64": np.int64, "uint32": np.uint32, "int1": np.bool_}
TOL = {"f16": (2e-2, 1e-2), "bf16": (6e-2, 5e-2), "f32": (1e-4, 1e-5), "f64": (1e-4, 1e-5)}


class _Storage:
    def __init__(self, a: np.ndarray):
        self.a = a

    def data_ptr(self) -> int:
        return self.a.ctypes.data

    def cpu(self) -> _Storage:
        return self

    def copy_(self, other) -> None:  # the interpreter worked in place
        pass


class _DType:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return "torch." + self.name


# one object per dtype: Triton's argument specializer caches on the dtype object's identity, so
# a fresh (then freed) object per argument let a later one reuse a stale entry (its address) and
# the interpreter read an i64 array as f64 (a nondeterministic reference)
_DTYPES = {dt: _DType(name) for dt, name in _TORCH_NAMES.items()}


class _NumpyTensor:
    """What Triton's interpreter reads from a torch tensor, over a numpy array (in place)."""

    def __init__(self, a: np.ndarray, dt: str):
        self.a = a
        self.dtype = _DTYPES[dt]

    def data_ptr(self) -> int:
        return self.a.ctypes.data

    def untyped_storage(self) -> _Storage:
        return _Storage(self.a)

    def new_empty(self, *args, **kwargs) -> _NumpyTensor:
        return self

    def set_(self, *args) -> _NumpyTensor:
        return self

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple:
        return self.a.shape

    def stride(self) -> tuple:
        return (1,)

    def copy_(self, other) -> None:
        pass


def _module(prog: FeProgram, flavour: str):
    header = {"triton": "import triton.language as tl\n"
                        "from triton.runtime.interpreter import InterpretedFunction as jit\n",
              "eggpu": "import eggpu.language as tl\nfrom eggpu import jit\n"}[flavour]
    source = prog.source
    if flavour == "triton" and prog.loop_dt is not None:
        # Triton's interpreter iterates ``range(lo, hi)`` over Python ints, so the loop variable
        # would be a weakly typed Python number (``%`` with Python's floor semantics, literal
        # promotion); compiled Triton's is a tensor of the bounds' dtype: make it one
        source = re.sub(r"^( *)for (\w+) in range\((.*)\):\n",
                        lambda m: f"{m[0]}{m[1]}    {m[2]} = tl.full((), {m[2]}, {TL[prog.loop_dt]})\n",
                        source, flags=re.M)
    text = header + "\n\n" + source
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    _DIR.mkdir(exist_ok=True)
    path = _DIR / f"fe_{flavour}_{prog.seed}_{digest}.py"
    if not path.exists():
        path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, prog.name)


@contextlib.contextmanager
def _env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


class TritonRefused(Exception):
    """Triton's frontend rejects the program: not a test case."""


def _interpreter_ready() -> bool:
    """Whether this process can run Triton's interpreter: ``triton.language``'s own ``@jit``
    functions (``tl.sum``, ``tl.argmax``, ...) are interpreter functions only when
    ``TRITON_INTERPRET=1`` was set before it was imported."""
    if "triton.language" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
    import triton.language.standard as std
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(std.sum, InterpretedFunction)


_POOL = None


def _ref_worker(prog: FeProgram, args: list) -> list[np.ndarray]:
    # the program itself travels (generate(seed, n=n) draws another program than generate(seed):
    # n given changes the random stream)
    return _run_triton_here(prog, args)


def run_triton(prog: FeProgram, args: list) -> list[np.ndarray]:
    """The reference outputs (written into ``args`` too): in this process when Triton's
    interpreter can run here, else in a spawned worker process started with
    ``TRITON_INTERPRET=1``."""
    global _POOL
    if _interpreter_ready():
        return _run_triton_here(prog, args)
    if _POOL is None:
        import concurrent.futures
        import multiprocessing

        with _env("TRITON_INTERPRET", "1"):
            _POOL = concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"))
            _POOL.submit(int).result()  # start it while the variable is set
        import atexit

        atexit.register(_POOL.shutdown)  # before interpreter teardown (else a noisy weakref callback)
    outs = _POOL.submit(_ref_worker, prog, args).result()
    it = iter(outs)
    for (k, _), a in zip(prog.arg_kinds, args):
        if k == "out":
            a[...] = next(it)
    return outs


_PATCHED = False


def _patch_interpreter() -> None:
    """Work around a Triton 3.9 interpreter bug: its ``create_ashr`` (``x >> s`` for a signed
    ``x`` whose promotion with ``s`` is unsigned) returns the signed numpy array under the
    unsigned Triton dtype, so a later ``.to(tl.float32)`` converts -8 instead of 0xFFFFFFF8
    (compiled Triton's ``uitofp`` gives 4294967288.0). The result is viewed back as the
    operand's unsigned numpy dtype."""
    global _PATCHED
    if _PATCHED:
        return
    import triton.language as tl
    from triton._C.libtriton import ir as _ir
    from triton.runtime.interpreter import InterpreterBuilder, ReduceOps, TensorHandle

    orig = InterpreterBuilder.create_ashr

    def create_ashr(self, lhs, rhs):
        out = orig(self, lhs, rhs)
        if out.data.dtype != lhs.data.dtype and out.data.dtype.itemsize == lhs.data.dtype.itemsize:
            return TensorHandle(out.data.view(lhs.data.dtype), out.dtype)
        return out

    InterpreterBuilder.create_ashr = create_ashr

    # bf16: the interpreter stores it as uint16 bits and converts only to/from f32, truncating
    # (``_convert_float`` with no rounding mode); compiled Triton rounds to nearest even
    # (``cvt.rn.bf16.f32``) and converts from every type. Conversions touching bf16 go through
    # ml_dtypes (one rounding, also from f64 and the integers).
    orig_cast, orig_fp_to_fp = InterpreterBuilder.cast_impl, InterpreterBuilder.create_fp_to_fp

    def cast_impl(self, src, dst_type):
        s, d = src.dtype.scalar, dst_type.scalar
        if s != tl.bfloat16 and d != tl.bfloat16:
            return orig_cast(self, src, dst_type)
        data = src.data.view(ml_dtypes.bfloat16) if s == tl.bfloat16 else src.data
        if d == tl.bfloat16:
            return TensorHandle(data.astype(ml_dtypes.bfloat16).view(np.uint16), d)
        return TensorHandle(data.astype(_NP_OF[d.name]), d)

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        if rounding_mode in (None, _ir.ROUNDING_MODE.RTNE) and tl.bfloat16 in (src.dtype.scalar, dst_type.scalar):
            return cast_impl(self, src, dst_type)
        return orig_fp_to_fp(self, src, dst_type, rounding_mode)

    InterpreterBuilder.cast_impl = cast_impl
    for name in ("create_si_to_fp", "create_ui_to_fp", "create_fp_to_si", "create_fp_to_ui",
                 "create_fp_ext", "create_fp_trunc"):
        setattr(InterpreterBuilder, name, lambda self, src, dst_type: self.cast_impl(src, dst_type))
    InterpreterBuilder.create_fp_to_fp = create_fp_to_fp

    # tl.maximum/tl.minimum (propagate_nan=NONE): np.fmax/np.fmin return either zero of
    # max(-0.0, +0.0); eggpu (docs/language.md) and PTX's max.f32/min.f32 order -0.0 < +0.0
    def zero_aware(np_op, neg_if_any: bool):
        def op(a, b):
            a, b = _quiet_nans(a), _quiet_nans(b)
            r = np_op(a, b)
            if r.dtype.kind != "f":
                return r
            z = (a == 0) & (b == 0)
            sa, sb = np.signbit(a), np.signbit(b)
            neg = (sa | sb) if neg_if_any else (sa & sb)
            return np.where(z, np.where(neg, -0.0, 0.0).astype(r.dtype), r)
        return op

    fmax, fmin = zero_aware(np.fmax, False), zero_aware(np.fmin, True)
    InterpreterBuilder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, fmax)
    InterpreterBuilder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, fmin)
    pmax, pmin = zero_aware(np.maximum, False), zero_aware(np.minimum, True)  # PropagateNan.ALL
    InterpreterBuilder.create_maximumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, pmax)
    InterpreterBuilder.create_minimumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, pmin)

    # tl.max/tl.min/tl.argmax/tl.argmin values: np.nanmax/np.nanmin reduce through
    # np.fmax/np.fmin.reduce, which (numpy 2.5, x86 SIMD) do not ignore a *signaling* NaN: 64
    # f32 lanes with 1.0 at 61 and 0x7FA00000 at 62 reduce to 0.0 (seed 731657: an f16 bitcast
    # of 0x7CA8); compiled Triton's max.f32 ignores every NaN (eggpu: ir/semantics.quiet_nans)
    orig_min_max = ReduceOps.min_max

    def min_max(self, input, val_reduce_op, idx_reduce_op=None):
        quiet = None if val_reduce_op is None else (lambda x, **kw: val_reduce_op(_quiet_nans(x), **kw))
        return orig_min_max(self, input, quiet, idx_reduce_op)

    ReduceOps.min_max = min_max
    _PATCHED = True


def _quiet_nans(x):
    """``x`` with every NaN the quiet NaN of its dtype (numpy's fmax/fmin mishandle signaling ones)."""
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        return x
    nan = np.isnan(x)
    return np.where(nan, x.dtype.type(np.nan), x) if nan.any() else x


def _run_triton_here(prog: FeProgram, args: list) -> list[np.ndarray]:
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterError, TensorHandle

    _patch_interpreter()
    kern = _module(prog, "triton")
    targs = []
    for (k, dt), a in zip(prog.arg_kinds, args):
        if k in ("in", "out"):
            targs.append(_NumpyTensor(a, dt))
        elif isinstance(a, np.generic) or isinstance(a, float):
            # a Python float is an f32 runtime scalar in compiled Triton (and eggpu); the
            # interpreter would leave it a weakly typed Python number
            tdt = getattr(tl, _TORCH_NAMES[dt])
            bits = np.array([a]).view(np.uint16) if dt == "bf16" else np.array([a], NP[dt])
            targs.append(tl.tensor(TensorHandle(bits, tdt), tdt))
        else:
            targs.append(a)
    with _env("TRITON_INTERPRET", "1"), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            kern[prog.grid()](*targs, **prog.constexprs)
        except InterpreterError as e:
            msg = str(e)
            if any(w in msg for w in ("TypeError", "ValueError", "CompilationError",
                                      "AssertionError", "must have the same type")):
                raise TritonRefused(msg) from e
            raise
    return [a for (k, _), a in zip(prog.arg_kinds, args) if k == "out"]


def run_eggpu(prog: FeProgram, args: list, device: str) -> list[np.ndarray]:
    kern = _module(prog, "eggpu")
    with _env("EGGPU_JIT_DEVICE", device), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kern[prog.grid()](*args, **prog.constexprs)
    return [a for (k, _), a in zip(prog.arg_kinds, args) if k == "out"]


@dataclass
class Outcome:
    prog: FeProgram
    status: str  # "ok", "triton_refused", "triton_error", "mismatch", "eggpu_error", "model_error"
    details: list[str] = field(default_factory=list)

    def report(self) -> str:
        head = f"seed {self.prog.seed} (n={self.prog.n}): {self.status}"
        return "\n".join([head, *self.details, self.prog.source])


def compare(prog: FeProgram, want: list[np.ndarray], got: list[np.ndarray], label: str) -> list[str]:
    bad = []
    for i, (w, g) in enumerate(zip(want, got)):
        dt = [d for k, d in prog.arg_kinds if k == "out"][i]
        ok = same(w, g)
        if prog.approx_out[i]:
            # relative to the output's scale too: a sum or scan in another order may cancel
            rtol = TOL.get(dt, TOL["f32"])[0] if "bf16" not in prog.source else TOL["bf16"][0]
            wf = w.astype(np.float64)
            finite = np.isfinite(wf)
            scale = np.abs(wf[finite]).max() if finite.any() else 0.0
            ok |= same(w, g, (rtol, rtol * scale))
        if prog.features & {"max", "min"} and w.dtype.kind in "fV":
            ok |= (w == 0) & (g == 0)
        if not ok.all():
            lanes = np.flatnonzero(~ok)
            j = lanes[0]
            bad.append(f"  {label}: out{i} ({dt}) differs on {lanes.size} lane(s), first {j}: "
                       f"want {w[j]!r} got {g[j]!r}")
    return bad


def run_program(prog: FeProgram, devices=("cpu", "interpret")) -> Outcome:
    ref_args = prog.make_args()
    try:
        want = run_triton(prog, ref_args)
    except TritonRefused as e:
        # the generator's dtype model disagreeing with Triton is the generator's bug: reported
        status = "model_error" if "dtype model" in str(e) else "triton_refused"
        return Outcome(prog, status, [str(e)[:300]])
    except Exception as e:  # noqa: BLE001 - Triton's interpreter failing is not eggpu's finding
        return Outcome(prog, "triton_error", [repr(e)[:300]])
    details = []
    status = "ok"
    for dev in devices:
        args = prog.make_args()
        try:
            got = run_eggpu(prog, args, dev)
        except Exception:  # noqa: BLE001 - a refusal of a valid Triton program is a finding
            status = "eggpu_error"
            details.append(f"  {dev}: " + traceback.format_exc(limit=2).strip().splitlines()[-1][:400])
            continue
        bad = compare(prog, want, got, dev)
        if bad:
            status = "mismatch" if status == "ok" else status
            details += bad
    return Outcome(prog, status, details)


def campaign(seeds, devices=("cpu", "interpret"), *, cpu_every: int = 1) -> tuple[list[Outcome], dict[str, int]]:
    """Run each seed's program; ``cpu`` (compiling, the slow part) only for every
    ``cpu_every``-th seed. Returns the failing outcomes and counters."""
    failed, stats = [], {"programs": 0, "ok": 0, "triton_refused": 0, "triton_error": 0,
                         "mismatch": 0, "eggpu_error": 0, "model_error": 0, "cpu_runs": 0}
    for seed in seeds:
        devs = tuple(d for d in devices if d != "cpu" or seed % cpu_every == 0)
        out = run_program(generate(seed), devs)
        stats["cpu_runs"] += "cpu" in devs and out.status != "triton_refused"
        stats["programs"] += 1
        stats[out.status] += 1
        if out.status in ("mismatch", "eggpu_error", "model_error"):
            failed.append(out)
    return failed, stats


def minimize(prog: FeProgram, devices=("interpret",)) -> FeProgram:
    """A smaller program failing the same way (greedy: drop one statement, with the
    ``static_assert`` under it, or a whole ``if``/loop, while the status stays the same). The
    stores stay; the inputs are the seed's."""
    import dataclasses

    want = run_program(prog, devices).status
    if want not in ("mismatch", "eggpu_error"):
        return prog
    lines = prog.source.splitlines()
    header, body = lines[:2], lines[2:]
    changed = True
    while changed:
        changed = False
        i = len(body) - 1
        while i >= 0:
            line = body[i]
            indent = len(line) - len(line.lstrip())
            end = i + 1
            while end < len(body) and (len(body[end]) - len(body[end].lstrip()) > indent
                                       or body[end].lstrip().startswith(("tl.static_assert", "else:"))):
                end += 1
            keep = line.lstrip().startswith(("tl.store", "pid =", "offs =", "mask =", "rows =", "cols =",
                                             "else:", "j += 1"))
            if not keep:
                trial = body[:i] + body[end:]
                cand = dataclasses.replace(prog, source="\n".join(header + trial) + "\n")
                if run_program(cand, devices).status == want:
                    body, changed = trial, True
            i -= 1
    return dataclasses.replace(prog, source="\n".join(header + body) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--min":  # fe_run.py --min SEED [DEVICES]: the smallest failing program
        devs = tuple(argv[2].split(",")) if len(argv) > 2 else ("interpret",)
        print(minimize(generate(int(argv[1])), devs).source)
        return 0
    start, count = int(argv[0]), int(argv[1]) if len(argv) > 1 else 1
    devices = tuple(argv[2].split(",")) if len(argv) > 2 else ("cpu", "interpret")
    cpu_every = int(argv[3]) if len(argv) > 3 else 1
    failed, stats = [], {}
    for seed in range(start, start + count):
        f, s = campaign([seed], devices, cpu_every=cpu_every)
        for k, v in s.items():
            stats[k] = stats.get(k, 0) + v
        for o in f:
            print(o.report(), flush=True)
            failed.append(o)
        if stats["programs"] % 50 == 0:
            print("progress", seed, stats, file=sys.stderr, flush=True)
    print(stats, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
