"""pytest helpers for eggpu users.

Rule helpers (z3 is imported on first use, not by ``import eggpu``):

* :func:`assert_rule_sound` — the rule is proved for every dtype it can match.
* :func:`assert_rule_unsound` — the rule is refuted; returns the counterexample.
* :func:`assert_rule_fires` / :func:`assert_rule_does_not_fire` — one rule, run alone on an
  e-graph term (egg's ``test_fn!``), does / does not rewrite it.

Launch helpers (no GPU needed): :class:`FakeCudaDriver`, a stand-in for cuda-python's driver
API that records each kernel launch with its decoded arguments, and :func:`fake_cuda`, which
routes ``ck.launch`` and ``@eggpu.jit`` launches to one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _verify(rule: Any, dtypes: Iterable[Any] | None, timeout_ms: int | None):
    from eggpu.optimizer.rule_verifier import DEFAULT_TIMEOUT_MS, verify_rule

    return verify_rule(rule, timeout_ms=timeout_ms or DEFAULT_TIMEOUT_MS, dtypes=dtypes)


def assert_rule_sound(rule: Any, *, dtypes: Iterable[Any] | None = None, timeout_ms: int | None = None):
    """Assert that ``rule`` (rule text such as ``'(rewrite (Neg t (Neg t x)) x :name "nn")'`` or a
    loaded :class:`~eggpu.optimizer.rules_loader.Rule`) is proved for every dtype it can match
    (``dtypes`` restricts the candidates). Returns the :class:`RuleVerdict`."""
    v = _verify(rule, dtypes, timeout_ms)
    if not v.usable:
        lines = [f"rule {v.rule!r} ({v.location}) is not proved: {v.summary()}"]
        for r in v.results:
            if r.status not in ("proved", "proved-reduced-width"):
                lines.append(f"  {r.key}: {r.status} {r.format_counterexample()} {r.detail}".rstrip())
        raise AssertionError("\n".join(lines))
    return v


def assert_rule_unsound(rule: Any, *, dtypes: Iterable[Any] | None = None, timeout_ms: int | None = None
                        ) -> dict[str, str]:
    """Assert that ``rule`` is refuted for some dtype; returns the counterexample of the first
    refuted dtype (variable -> value text, e.g. ``{"x": "-0.0 (f32)"}``)."""
    v = _verify(rule, dtypes, timeout_ms)
    r = v.first("refuted")
    if r is None:
        raise AssertionError(f"rule {v.rule!r} was expected to be refuted but is: {v.summary()}")
    return dict(r.counterexample or {})


# ---------------------------------------------------------------------- optimizer helpers
#
# * :func:`assert_rewrites` — the given rules turn one program into another.
# * :func:`assert_equivalent` — translation validation proves two programs equivalent.
#
# Programs may be given as ``eggpu.ir.Function`` objects, IR text (``eggpu.ir.parser`` syntax) or
# kernel instances (anything with an ``ir()`` method, e.g. ``VectorAdd[tl.f32](1024)``).


def _as_function(x: Any) -> Any:
    from eggpu.ir import Function

    if isinstance(x, Function):
        return x
    if isinstance(x, str):
        from eggpu.ir.parser import parse_function

        return parse_function(x)
    if hasattr(x, "ir"):
        return x.ir()
    raise TypeError(f"expected an IR Function, IR text or a kernel instance, got {type(x).__name__}")


def _rule_paths(rules: Any, tmpdir: str) -> list[str]:
    """Rule files from paths and/or rule text (text is written to a file in ``tmpdir``)."""
    import os

    if rules is None:
        return []
    items = [rules] if isinstance(rules, str | os.PathLike) else list(rules)
    out = []
    for i, r in enumerate(items):
        if isinstance(r, str) and "(" in r:
            path = os.path.join(tmpdir, f"rules_{i}.egg")
            with open(path, "w") as f:
                f.write(r)
            out.append(path)
        else:
            out.append(str(r))
    return out


def _normal_form(fn: Any) -> Any:
    """``fn`` re-emitted by the optimizer's decoder without any rule (dead pure ops dropped, pure
    ops in the decoder's canonical order), so two programs can be compared structurally."""
    from eggpu.optimizer import optimize

    res = optimize(fn, rules=[], shipped_rules=False, validate=False)
    if res.fell_back:
        raise AssertionError(f"could not normalize {fn.name}: {res.reason}")
    return res.function


def assert_rewrites(rules: Any, before: Any, after: Any, *, shipped: bool = False, fast_math: bool = False,
                    limits: Any = None) -> Any:
    """Assert that optimizing ``before`` with ``rules`` gives ``after`` (and validates).

    ``rules``: rule file paths and/or rule text (``'(rewrite ... :name "r")'``); only these rules
    run unless ``shipped=True``. Every rule must be proved (an unproved rule is reported, not
    silently skipped). The optimized program and ``after`` are compared after both are put in
    the decoder's normal form (so the order of independent pure ops and dead code do not matter;
    the effects must appear in the same order). Returns the :class:`OptimizeResult`."""
    import tempfile

    from eggpu.ir.printer import print_function
    from eggpu.ir.structural import first_difference
    from eggpu.optimizer import optimize

    before_fn, after_fn = _as_function(before), _as_function(after)
    with tempfile.TemporaryDirectory() as tmp:
        res = optimize(before_fn, rules=_rule_paths(rules, tmp), shipped_rules=shipped, fast_math=fast_math,
                       limits=limits)
    bad = {n: v for n, v in res.rules_rejected.items() if not (v == "fast_math" and not fast_math)}
    if bad:
        raise AssertionError("rules not proved, so they never fire: "
                             + ", ".join(f"{n} ({v})" for n, v in sorted(bad.items())))
    if res.fell_back:
        raise AssertionError(f"optimization fell back to the input: {res.reason}")
    got, want = _normal_form(res.function), _normal_form(after_fn)
    got.name = want.name
    diff = first_difference(got, want)
    if diff is not None:
        raise AssertionError(f"optimized program differs from the expected one: {diff}\n"
                             f"--- got\n{print_function(got)}\n--- expected\n{print_function(want)}\n"
                             f"rule hits: {res.rule_hits}")
    return res


def assert_equivalent(a: Any, b: Any, *, timeout_ms: int = 5000, fast_math: bool = False) -> Any:
    """Assert that programs ``a`` and ``b`` are equivalent by translation validation: they must
    perform the same loads, stores, atomics and control flow in the same order, and z3 must prove
    that, lane by lane, every one of them gets the same address, mask and value in ``b`` as in
    ``a`` wherever ``a`` is defined (see :mod:`eggpu.optimizer.validate`). Pure computations may
    differ arbitrarily. ``fast_math=True`` compares floats as real numbers. Returns the
    :class:`Validation`; raises AssertionError with the verdict's detail (the differing op and lane
    values) otherwise."""
    from eggpu.optimizer.validate import validate

    v = validate(_as_function(a), _as_function(b), timeout_ms=timeout_ms, fast_math=fast_math)
    if not v.ok:
        raise AssertionError(f"programs are not shown equivalent ({v.verdict}): {v.detail}")
    return v


# ---------------------------------------------------------------------- one rule on one term
#
# * :func:`assert_rule_fires` — running one rule on an e-graph term matches it and puts the
#   expected result in the term's e-class (egg's ``test_fn!``).
# * :func:`assert_rule_does_not_fire` — the rule does not match the term (a guard test).
#
# Terms are egglog text over the schema of ``docs/rules.md``: ``(Add (I32) (Opaque (I32) 1)
# (Splat (I32) "16" (Const (I32) 0)))``.

_BENCHES: dict[tuple, Any] = {}


def _bench_and_rule(rule: Any, rules: Any) -> tuple[Any, Any]:
    """The :class:`~eggpu.optimizer.rule_examples.FireBench` holding ``rule`` (a rule name of
    ``rules``, default the shipped rules; a loaded Rule; or the text of one rule command).
    Benches are cached per rule text (building one loads and checks every rule)."""
    import os

    from eggpu.optimizer.rule_examples import FireBench
    from eggpu.optimizer.rules_loader import Rule, _read_source, load_sources, parse_rule, shipped_sources

    if isinstance(rule, str) and "(" in rule:
        rule = parse_rule(rule)
    if isinstance(rule, Rule):
        key: tuple = (("<rule>", rule.egglog),)
    else:
        paths = [] if rules is None else [rules] if isinstance(rules, str | os.PathLike) else list(rules)
        key = tuple(shipped_sources() if rules is None else [s for p in paths for s in _read_source(p)])
    bench = _BENCHES.get(key)
    if bench is None:
        pool = [rule] if isinstance(rule, Rule) else load_sources(list(key)).rules
        bench = _BENCHES[key] = FireBench(pool)
        while len(_BENCHES) > 4:
            _BENCHES.pop(next(iter(_BENCHES)))
    name = rule.name if isinstance(rule, Rule) else rule
    if name not in bench.rules:
        raise AssertionError(f"no rule named {name!r} in the given rules")
    return bench, bench.rules[name]


def _example(rule: Any, before: Any, after: Any, facts: Any, bounds: Any) -> Any:
    from eggpu.optimizer.rule_examples import RuleExample

    if isinstance(before, RuleExample):
        return before
    return RuleExample(rule.name, {}, before, after, tuple(facts), dict(bounds or {}))


def assert_rule_fires(rule: Any, before: Any = None, after: str | None = None, *, facts: Any = (),
                      bounds: dict[str, int] | None = None, support: Any = (), rules: Any = None) -> Any:
    """Assert that ``rule``, run alone for one iteration on a fresh e-graph holding ``before``,
    matches it and puts ``after`` in its e-class (egg's ``test_fn!``).

    ``rule``: a rule name (of ``rules``: files/dirs, default the shipped rules), a loaded Rule or
    rule text. ``before``: an egglog term, a :class:`RuleExample`, or None for a generated
    example (:func:`eggpu.optimizer.rule_examples.generate`). ``facts``: egglog commands run
    first, e.g. ``"(set (LowerBound (Opaque (I32) 1)) 0)"``; ``support``: names of rules
    saturated before the rule runs (e.g. the range analysis); ``bounds``: for an analysis rule,
    the values it must set (``{"UpperBound": 15}``). Returns the :class:`FireResult`."""
    from eggpu.optimizer.rule_examples import generate

    bench, r = _bench_and_rule(rule, rules)
    if before is None:
        before = generate(r)
        if before is None:
            raise AssertionError(f"{r.location}: no example could be generated for rule {r.name!r}: "
                                 "give one (before, after, facts)")
    ex = _example(r, before, after, facts, bounds)
    res = bench.run(ex, support)
    what = f"{r.location}: rule {r.name!r} on {ex.before}"
    if not res.fired:
        raise AssertionError(f"{what}: the rule did not match")
    if ex.after is not None and not res.merged:
        raise AssertionError(f"{what}: it matched but {ex.after} is not in the term's e-class")
    wrong = {fn: (want, res.bounds.get(fn)) for fn, want in ex.bounds.items() if res.bounds.get(fn) != want}
    if wrong:
        raise AssertionError(f"{what}: bounds differ (expected, got): {wrong}")
    return res


def assert_rule_does_not_fire(rule: Any, before: Any, after: str | None = None, *, facts: Any = (),
                              support: Any = (), rules: Any = None) -> Any:
    """Assert that ``rule`` (as in :func:`assert_rule_fires`) does not match ``before`` (a term
    or a :class:`RuleExample`, e.g. :func:`eggpu.optimizer.rule_examples.negative`) and, when
    ``after`` is given, that ``after`` did not join its e-class. Returns the FireResult."""
    bench, r = _bench_and_rule(rule, rules)
    ex = _example(r, before, after, facts, None)
    res = bench.run(ex, support)
    if res.fired or res.merged:
        raise AssertionError(f"{r.location}: rule {r.name!r} fired on {ex.before} ({res.hits} matches"
                             f"{', merged with ' + ex.after if res.merged else ''}) but must not")
    return res


# ---------------------------------------------------------------------- a CUDA driver without a GPU
#
# * :class:`FakeCudaDriver` — the part of cuda-python's driver API that eggpu's launcher uses,
#   backed by host memory, recording every kernel launch with its decoded arguments.
# * :func:`fake_cuda` — a context manager that makes ``ck.launch`` and ``@eggpu.jit`` launches
#   use one (tests of the launch path, and ``python -m bench launch``).

_CU_ERRORS = {1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY", 3: "CUDA_ERROR_NOT_INITIALIZED",
              35: "CUDA_ERROR_INSUFFICIENT_DRIVER", 100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
              201: "CUDA_ERROR_INVALID_CONTEXT", 218: "CUDA_ERROR_INVALID_PTX", 400: "CUDA_ERROR_INVALID_HANDLE",
              500: "CUDA_ERROR_NOT_FOUND", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 999: "CUDA_ERROR_UNKNOWN"}


class FakeLaunch:
    """One recorded ``cuLaunchKernel``: ``entry`` (the PTX symbol), ``grid`` and ``block`` (3-tuples),
    ``shared`` (dynamic shared memory bytes), ``args``: each kernel parameter decoded by its
    PTX type (``.u64`` pointers and unsigned integers as ints, ``.sNN`` as signed ints, ``.f32`` /
    ``.f64`` as floats, ``.b16`` (f16/bf16) and ``.b8``/``.u8`` as unsigned ints), ``stream`` (the
    raw stream handle, 0 the legacy default stream), ``device`` (the ordinal of the context that was
    current), ``synchronized``: the number of ``cuCtxSynchronize`` calls made after it
    (``FakeCudaDriver`` counts them per launch), and ``waits``: the streams whose recorded
    events its stream was made to wait for (``cuStreamWaitEvent``) since the previous launch on it."""

    __slots__ = ("entry", "grid", "block", "shared", "args", "stream", "device", "synchronized", "waits")

    def __init__(self, entry: str, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int,
                 args: tuple[Any, ...], stream: int = 0, device: int = 0, waits: tuple[int, ...] = ()):
        self.entry, self.grid, self.block, self.shared, self.args = entry, grid, block, shared, args
        self.stream, self.device, self.synchronized, self.waits = stream, device, 0, waits

    def __repr__(self) -> str:
        return (f"FakeLaunch({self.entry}, grid={self.grid}, block={self.block}, shared={self.shared}, "
                f"args={self.args}, stream={self.stream}, device={self.device}, waits={self.waits})")


class FakeCudaDriver:
    """A stand-in for ``cuda.bindings.driver`` with no GPU: ``cuInit`` .. ``cuLaunchKernel``.

    Calls return cuda-python's ``(status, value...)`` tuples. Device memory (``cuMemAlloc``) is
    host memory, 256-byte aligned, so copies in and out round-trip. Modules are PTX text; a
    function's parameter types are read from its ``.entry`` so each launch's packed arguments
    are decoded into :attr:`launches` (``record=False`` only counts them in :attr:`launch_count`,
    for benchmarks). ``on_launch(launch, driver)`` runs at each launch (e.g. to emulate the
    kernel's effect on device memory, see :meth:`memory`).

    ``fail`` maps a call name (``"cuInit"``, ``"cuLaunchKernel"``, ...) to the CUDA error code it
    returns (100 is ``CUDA_ERROR_NO_DEVICE``); ``devices`` is what ``cuDeviceGetCount`` reports;
    ``shared_optin`` the ``MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`` attribute, ``compute_capability``
    the ``COMPUTE_CAPABILITY_MAJOR``/``MINOR`` ones of every device.

    Contexts are as the driver's: device ``d``'s primary context is the handle ``0xC000 + d``, the
    current context is per thread (none at first; :meth:`set_current` is what another library,
    e.g. ``torch.cuda.set_device``, would do), a module belongs to the context current when it was
    loaded, and launching a function of another context's module fails with
    ``CUDA_ERROR_INVALID_HANDLE`` (400), as on a GPU.

    Memory from ``cuMemAlloc`` (or :meth:`alloc`) belongs to the device current when it was
    allocated, which ``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)`` answers for
    any address inside it (``CUDA_ERROR_INVALID_VALUE``, 1, for any other address). Events
    (``cuEventCreate/Record/Destroy``) remember the stream they were recorded on, and
    ``cuStreamWaitEvent`` files that stream under the next launch on the waiting stream
    (:attr:`FakeLaunch.waits`); using a destroyed or unrecorded event fails with 400.
    """

    class CUdevice_attribute:  # noqa: N801 - cuda-python's names
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = "max_shared_memory_per_block_optin"
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = "compute_capability_major"
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = "compute_capability_minor"

    class CUfunction_attribute:  # noqa: N801
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = "max_dynamic_shared_size_bytes"

    class CUpointer_attribute:  # noqa: N801
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = "device_ordinal"

    def __init__(self, *, record: bool = True, fail: dict[str, int] | None = None, devices: int = 1,
                 shared_optin: int = 232448, on_launch: Any = None, compute_capability: tuple[int, int] = (9, 0)):
        self.record = record
        self.compute_capability = compute_capability
        self.fail = dict(fail or {})
        self.devices = devices
        self.shared_optin = shared_optin
        self.on_launch = on_launch
        self.launches: list[FakeLaunch] = []
        self.launch_count = 0
        self.calls: list[str] = []  # every call but cuLaunchKernel, by name (with ``record``)
        self.modules: list[str] = []  # PTX texts loaded
        self.module_devices: list[int | None] = []  # the device of the context each was loaded in
        self._current: dict[int, int] = {}  # thread id -> current context handle
        self._buffers: dict[int, Any] = {}
        self._allocations: dict[int, tuple[int, int]] = {}  # address -> (size, device)
        self._events: dict[int, int | None] = {}  # live event -> the stream it was recorded on
        self._next_event = 0xE000
        self._pending_waits: dict[tuple[int | None, int], list[int]] = {}  # (device, stream) -> producers

    def _status(self, name: str, *values: Any) -> tuple[Any, ...]:
        if self.record:
            self.calls.append(name)
        return (self.fail.get(name, 0), *values)

    # context and device
    def cuInit(self, flags: int) -> tuple[Any, ...]:  # noqa: N802
        return self._status("cuInit")

    def cuDeviceGetCount(self) -> tuple[Any, ...]:  # noqa: N802
        return self._status("cuDeviceGetCount", self.devices)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, ...]:  # noqa: N802
        if not 0 <= ordinal < self.devices:
            return (101, None)  # CUDA_ERROR_INVALID_DEVICE
        return self._status("cuDeviceGet", ordinal)

    def cuDevicePrimaryCtxRetain(self, device: Any) -> tuple[Any, ...]:  # noqa: N802
        return self._status("cuDevicePrimaryCtxRetain", 0xC000 + int(device))

    def cuCtxSetCurrent(self, context: Any) -> tuple[Any, ...]:  # noqa: N802
        self.set_current(int(context))
        return self._status("cuCtxSetCurrent")

    def cuCtxGetCurrent(self) -> tuple[Any, ...]:  # noqa: N802
        from threading import get_ident  # (a C function: this call costs about what cuda-python's does)

        if self.record:
            self.calls.append("cuCtxGetCurrent")
        return self.fail.get("cuCtxGetCurrent", 0), self._current.get(get_ident(), 0)

    def set_current(self, context: int) -> None:
        """Make ``context`` current in the calling thread (what ``cuCtxSetCurrent`` does)."""
        import threading

        self._current[threading.get_ident()] = context

    def current_device(self) -> int | None:
        """The ordinal of the calling thread's current context (None: no context)."""
        import threading

        c = self._current.get(threading.get_ident(), 0)
        return c - 0xC000 if c else None

    def cuCtxSynchronize(self) -> tuple[Any, ...]:  # noqa: N802
        if self.launches:
            self.launches[-1].synchronized += 1
        return self._status("cuCtxSynchronize")

    def cuDeviceGetAttribute(self, attr: Any, device: Any) -> tuple[Any, ...]:  # noqa: N802
        a = self.CUdevice_attribute
        value = {a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: self.compute_capability[0],
                 a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: self.compute_capability[1]}.get(attr, self.shared_optin)
        return self._status("cuDeviceGetAttribute", value)

    def cuGetErrorString(self, err: Any) -> tuple[Any, ...]:  # noqa: N802
        return 0, _CU_ERRORS.get(int(err), f"CUDA error {int(err)}").encode()

    # modules and functions
    def cuModuleLoadData(self, image: int) -> tuple[Any, ...]:  # noqa: N802
        import ctypes

        if self.current_device() is None:
            return (201, None)  # CUDA_ERROR_INVALID_CONTEXT
        self.modules.append(ctypes.string_at(image).decode())
        self.module_devices.append(self.current_device())
        return self._status("cuModuleLoadData", len(self.modules) - 1)

    def cuModuleGetFunction(self, module: int, name: bytes) -> tuple[Any, ...]:  # noqa: N802
        entry = name.decode()
        params = _ptx_params(self.modules[module], entry)
        if params is None:
            self.calls.append("cuModuleGetFunction")
            return 500, None  # CUDA_ERROR_NOT_FOUND
        return self._status("cuModuleGetFunction", (entry, params, self.module_devices[module]))

    def cuFuncSetAttribute(self, fn: Any, attr: Any, value: int) -> tuple[Any, ...]:  # noqa: N802
        return self._status("cuFuncSetAttribute")

    def cuLaunchKernel(self, fn: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,  # noqa: N802
                       stream: Any, params: int, extra: Any) -> tuple[Any, ...]:
        code = self.fail.get("cuLaunchKernel", 0)
        if code:
            return (code,)
        if fn[2] != self.current_device():
            return (400,)  # CUDA_ERROR_INVALID_HANDLE: the function's module is another context's
        self.launch_count += 1
        if self.record or self.on_launch is not None:
            waits = tuple(self._pending_waits.pop((fn[2], int(stream)), ()))
            launch = FakeLaunch(fn[0], (gx, gy, gz), (bx, by, bz), shared, _decode_params(fn[1], params), int(stream),
                                fn[2], waits)
            if self.record:
                self.launches.append(launch)
            if self.on_launch is not None:
                self.on_launch(launch, self)
        return (0,)

    # events and stream order
    def cuEventCreate(self, flags: int) -> tuple[Any, ...]:  # noqa: N802
        self._next_event += 1
        self._events[self._next_event] = None
        return self._status("cuEventCreate", self._next_event)

    def cuEventRecord(self, event: Any, stream: Any) -> tuple[Any, ...]:  # noqa: N802
        if int(event) not in self._events:
            return (400,)
        self._events[int(event)] = int(stream)
        return self._status("cuEventRecord")

    def cuStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> tuple[Any, ...]:  # noqa: N802
        producer = self._events.get(int(event))
        if producer is None:
            return (400,)
        self._pending_waits.setdefault((self.current_device(), int(stream)), []).append(producer)
        return self._status("cuStreamWaitEvent")

    def cuEventDestroy(self, event: Any) -> tuple[Any, ...]:  # noqa: N802
        if self._events.pop(int(event), 0) == 0:
            return (400,)
        return self._status("cuEventDestroy")

    def cuPointerGetAttribute(self, attr: Any, address: int) -> tuple[Any, ...]:  # noqa: N802
        address = int(address)
        for start, (size, device) in self._allocations.items():
            if start <= address < start + max(size, 1):
                return self._status("cuPointerGetAttribute", device)
        return (1, None)  # CUDA_ERROR_INVALID_VALUE: not memory the driver allocated

    # memory
    def cuMemAlloc(self, nbytes: int) -> tuple[Any, ...]:  # noqa: N802
        import ctypes

        if self.current_device() is None:
            return (201, None)  # CUDA_ERROR_INVALID_CONTEXT
        buf = ctypes.create_string_buffer(nbytes + 256)
        addr = (ctypes.addressof(buf) + 255) & ~255
        self._buffers[addr] = buf
        self._allocations[addr] = (nbytes, self.current_device())
        return self._status("cuMemAlloc", addr)

    def alloc(self, nbytes: int, device: int = 0) -> int:
        """Device memory on ``device`` (what a framework's allocator would hand out), without
        changing the calling thread's current context: its address."""
        import threading

        tid = threading.get_ident()
        before = self._current.get(tid)
        self.set_current(0xC000 + device)
        try:
            return self.cuMemAlloc(nbytes)[1]
        finally:
            if before is None:
                del self._current[tid]
            else:
                self._current[tid] = before

    def cuMemFree(self, dptr: int) -> tuple[Any, ...]:  # noqa: N802
        self._buffers.pop(int(dptr), None)
        self._allocations.pop(int(dptr), None)
        return self._status("cuMemFree")

    def cuMemcpyHtoD(self, dst: int, src: int, nbytes: int) -> tuple[Any, ...]:  # noqa: N802
        import ctypes

        ctypes.memmove(int(dst), int(src), nbytes)
        return self._status("cuMemcpyHtoD")

    def cuMemcpyDtoH(self, dst: int, src: int, nbytes: int) -> tuple[Any, ...]:  # noqa: N802
        import ctypes

        ctypes.memmove(int(dst), int(src), nbytes)
        return self._status("cuMemcpyDtoH")

    def memory(self, address: int, dtype: Any, count: int) -> Any:
        """A numpy view of ``count`` elements of ``dtype`` at a device ``address`` from ``cuMemAlloc``."""
        import ctypes

        import numpy as np

        dt = np.dtype(dtype)
        return np.frombuffer((ctypes.c_char * (count * dt.itemsize)).from_address(address), dtype=dt)


def _ptx_params(ptx: str, entry: str) -> list[tuple[str, int]] | None:
    """``(kind, bytes)`` of each ``.param`` of ``.entry entry`` (kind ``u``, ``s``, ``f`` or ``b``), or
    None when the PTX has no such entry."""
    import re

    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(([^)]*)\)", ptx)
    if m is None:
        return [] if re.search(r"\.entry\s+" + re.escape(entry) + r"\b", ptx) else None
    out = []
    for piece in m.group(1).split(","):
        t = re.search(r"\.param\s+(?:\.align\s+\d+\s+)?\.([usfb]|pred)(\d*)", piece.strip())
        if t is None:
            continue
        kind, bits = t.group(1), t.group(2)
        if kind == "pred":
            kind, bits = "u", "8"
        size = int(bits) // 8
        arr = re.search(r"\[(\d+)\]", piece)
        out.append((kind if arr is None else "b", size * int(arr.group(1)) if arr else size))
    return out


def _decode_params(kinds: list[tuple[str, int]], params: int) -> tuple[Any, ...]:
    """The values behind a ``void**`` kernel-parameter array, by PTX parameter kind."""
    import ctypes
    import struct

    if not kinds:
        return ()
    ptrs = (ctypes.c_void_p * len(kinds)).from_address(params)
    out: list[Any] = []
    for (kind, size), p in zip(kinds, ptrs):
        raw = ctypes.string_at(p, size)
        if kind == "f" and size in (4, 8):
            out.append(struct.unpack("<f" if size == 4 else "<d", raw)[0])
        else:
            out.append(int.from_bytes(raw, "little", signed=kind == "s"))
    return tuple(out)


def fake_cuda(driver: FakeCudaDriver | None = None) -> Any:
    """A context manager that routes every GPU launch (``ck.launch``, ``@eggpu.jit`` launches, which
    then see a GPU) to ``driver`` (a fresh :class:`FakeCudaDriver` when None) and yields it::

        with eggpu.testing.fake_cuda() as cu:
            ck.launch(4, x_dev, y_dev, out_dev, n)
        assert cu.launches[0].args == (...)

    The runtime it installs starts with ``cuInit`` etc. as a real one does, so a driver with
    ``fail={"cuInit": 100}`` raises the LaunchError a machine without a GPU gives.
    """
    from contextlib import contextmanager

    @contextmanager
    def installed():
        from eggpu.kernel_macro import jitfunction
        from eggpu.runtime import CudaRuntime

        cu = driver if driver is not None else FakeCudaDriver()
        saved = CudaRuntime._instance, jitfunction._gpu
        CudaRuntime._instance = CudaRuntime(cu)
        jitfunction._gpu = None
        try:
            yield cu
        finally:
            CudaRuntime._instance, jitfunction._gpu = saved

    return installed()
