"""``@eggpu.autotune`` / ``eggpu.Config`` and ``@eggpu.heuristics``, with Triton's spelling.

::

    @eggpu.autotune(configs=[eggpu.Config({"BLOCK": 128}, num_warps=4),
                             eggpu.Config({"BLOCK": 1024}, num_warps=8)], key=["n"])
    @eggpu.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    add[lambda meta: (eggpu.cdiv(n, meta["BLOCK"]),)](x, y, out, n)

A launch binds the arguments by name, computes the *tuning key* (the values of the ``key``
arguments, arrays standing for their dtype and shape, plus the dtype of every array argument, as
Triton) and picks a :class:`Config` for it, once per key:

* where the kernel runs on a GPU (``EGGPU_JIT_DEVICE`` unset or ``gpu`` on a machine with a CUDA
  GPU), every config (after ``prune_configs_by``) is benchmarked and the fastest is kept: each
  config is launched once to compile and warm up, then timed over ``rep`` launches (wall clock
  from an idle GPU until the last launch has finished), or by ``do_bench(kernel_call)`` when given (Triton's hook; it returns
  milliseconds, or a tuple whose first entry is). Benchmark launches write the arguments, so
  arrays (numpy, CuPy, torch; also those of tensor descriptor arguments) are restored after each
  (``reset_to_zero`` names are zeroed before each, as Triton);
* elsewhere (no GPU: ``run_cpu``, or the interpreter) **the first config is used** without
  benchmarking, unless ``do_bench=`` is given, in which case the configs are tuned with it on the
  device the launches run on (useful to test tuning, meaningless as a CPU timing).

The config's ``kwargs`` become constexpr arguments (passing one of them at the launch is an
error, as in Triton: "Conflicting meta-parameters"), ``num_warps`` the compile option of that
name, ``num_stages`` the compile option of that name (``cp.async`` stages of a tensor-core K
loop); ``num_ctas`` and ``maxnreg`` are accepted without effect. ``config.pre_hook(nargs)`` runs before each launch of the
config, with the arguments by name. After a launch, ``fn.best_config`` is the config used and
``fn.cache`` maps each key to its config.

``@eggpu.heuristics({"NAME": lambda args: ...})`` computes constexpr arguments from the others
(``args``: every argument by name), as ``triton.heuristics``; it stacks with ``autotune`` and
``jit`` in Triton's order.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any

from eggpu.ir.errors import LaunchError

from . import descriptors, hooks
from .errors import DecoratorArgumentError
from .jitfunction import JITFunction, _device, _Launcher

__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics"]


class Config:
    """One autotuning configuration (Triton's ``triton.Config``): constexpr values ``kwargs`` and
    launch options. ``num_ctas`` and ``maxnreg`` are accepted without effect."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: int | None = None, pre_hook: Callable[[dict[str, Any]], Any] | None = None):
        if not isinstance(kwargs, dict):
            raise DecoratorArgumentError(f"eggpu.Config(kwargs) takes a dict of constexpr values, got {kwargs!r}")
        if not isinstance(num_warps, int) or isinstance(num_warps, bool) or num_warps <= 0 or \
                num_warps & (num_warps - 1):
            raise DecoratorArgumentError(f"eggpu.Config: num_warps must be a power of two, got {num_warps!r}")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """The constexpr values and the launch options, as a launch passes them."""
        opts = {"num_warps": self.num_warps, "num_stages": self.num_stages, "num_ctas": self.num_ctas}
        if self.maxnreg is not None:
            opts["maxnreg"] = self.maxnreg
        return {**self.kwargs, **opts}

    def __repr__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}", f"num_ctas: {self.num_ctas}"]
        if self.maxnreg is not None:
            parts.append(f"maxnreg: {self.maxnreg}")
        return ", ".join(parts)


def _base(fn: Any) -> JITFunction:
    while not isinstance(fn, JITFunction):
        inner = getattr(fn, "fn", None)
        if inner is None or inner is fn:
            raise DecoratorArgumentError(
                f"@eggpu.autotune/@eggpu.heuristics decorate an @eggpu.jit function, got {fn!r}; "
                f"write them above @eggpu.jit")
        fn = inner
    return fn


class _Wrapper:
    """Common protocol of the decorators stacked on a JITFunction: ``fn[grid](...)`` launches."""

    fn: Any

    def _setup(self, fn: Any) -> None:
        self.fn = fn
        self.base = _base(fn)
        self.arg_names = list(inspect.signature(self.base.fn).parameters)
        self.__name__ = self.base.__name__
        self.__doc__ = self.base.__doc__
        self.__eggpu_jit_target__ = self.base.fn  # called from a kernel: inlined like the function

    def __getitem__(self, grid: Any) -> _Launcher:
        return _Launcher(self, grid)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.base.fn(*args, **kwargs)

    def _named(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The launch arguments by parameter name (positional ones named)."""
        if len(args) > len(self.arg_names):
            raise LaunchError(f"{self.__name__}[grid](...): {len(args)} positional arguments for "
                              f"{len(self.arg_names)} parameters ({', '.join(self.arg_names)})")
        return {**dict(zip(self.arg_names, args)), **kwargs}


class Heuristics(_Wrapper):
    """What ``@eggpu.heuristics(values)`` returns (module docstring)."""

    def __init__(self, fn: Any, values: dict[str, Callable[[dict[str, Any]], Any]]):
        self._setup(fn)
        self.values = values

    def _launch(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        named = self._named(args, kwargs)
        extra = {}
        for name, rule in self.values.items():
            try:
                extra[name] = rule({**named, **extra})
            except Exception as e:  # noqa: BLE001 - a user function: report which one failed
                raise LaunchError(f"{self.__name__}: the heuristic for {name} failed: {type(e).__name__}: {e}") from e
        return self.fn._launch(grid, args, {**kwargs, **extra})


def _key_value(v: Any) -> Any:
    """A hashable stand-in for an argument in the tuning key (arrays: dtype and shape)."""
    if hasattr(v, "dtype") and hasattr(v, "shape") and not isinstance(v, int | float):
        return ("array", str(v.dtype), tuple(v.shape))
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return v


def _buffers(named: dict[str, Any]) -> list[Any]:
    """The arrays a launch with these arguments may write: array arguments and the arrays of
    tensor descriptor arguments (each once)."""
    out: dict[int, Any] = {}
    for v in named.values():
        v = v.base if descriptors.is_host_descriptor(v) else v
        if hasattr(v, "shape") and (hasattr(v, "copy") or hasattr(v, "clone")) and not isinstance(v, int | float):
            out.setdefault(id(v), v)
    return list(out.values())


def _snapshot(v: Any) -> Any:
    return v.clone() if hasattr(v, "clone") else v.copy()  # torch tensors clone; numpy/CuPy arrays copy


def _restore(v: Any, saved: Any) -> None:
    if hasattr(v, "copy_"):
        v.copy_(saved)  # torch
    else:
        v[...] = saved


def _default_bench(kernel_call: Callable[[], Any], rep: int) -> float:
    """Milliseconds per launch of ``kernel_call`` (after one warm-up launch that compiles): wall
    clock from an idle GPU to the end of the last launch (launches are asynchronous, so the
    device is waited for before and after, :data:`hooks.GPU_SYNCHRONIZE_HOOK`)."""
    sync = hooks.GPU_SYNCHRONIZE_HOOK or (lambda: None)
    kernel_call()
    sync()
    t0 = time.perf_counter()
    for _ in range(rep):
        kernel_call()
    sync()
    return (time.perf_counter() - t0) * 1e3 / rep


class Autotuner(_Wrapper):
    """What ``@eggpu.autotune(configs=..., key=...)`` returns (module docstring)."""

    def __init__(self, fn: Any, configs: Sequence[Config], key: Sequence[str], prune_configs_by: dict | None,
                 reset_to_zero: Sequence[str] | None, restore_value: Sequence[str] | None,
                 do_bench: Callable[..., Any] | None, rep: int):
        self._setup(fn)
        self.configs = list(configs)
        self.keys = list(key)
        for k in self.keys:
            if k not in self.arg_names:
                raise DecoratorArgumentError(f"@eggpu.autotune on {self.__name__}: key {k!r} is not a parameter "
                                             f"(parameters: {', '.join(self.arg_names)})")
        for name in list(reset_to_zero or ()) + list(restore_value or ()):
            if name not in self.arg_names:
                raise DecoratorArgumentError(f"@eggpu.autotune on {self.__name__}: {name!r} in reset_to_zero/"
                                             f"restore_value is not a parameter")
        prune = dict(prune_configs_by or {})
        unknown = set(prune) - {"early_config_prune", "perf_model", "top_k"}
        if unknown:
            raise DecoratorArgumentError(f"@eggpu.autotune: prune_configs_by has unknown entries {sorted(unknown)} "
                                         f"(known: early_config_prune, perf_model, top_k)")
        self.early_config_prune = prune.get("early_config_prune")
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k", 1.0)
        self.reset_to_zero = list(reset_to_zero or ())
        self.do_bench = do_bench
        self.rep = rep
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.nargs: dict[str, Any] | None = None

    def prune_configs(self, named: dict[str, Any]) -> list[Config]:
        """Triton's pruning: ``early_config_prune(configs, named_args)``, then, with a
        ``perf_model``, the ``top_k`` configs it predicts fastest (an int, or a fraction)."""
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, named))
            if not configs:
                raise LaunchError(f"{self.__name__}: prune_configs_by['early_config_prune'] removed every config")
        if self.perf_model is not None:
            k = self.top_k if isinstance(self.top_k, int) else max(1, int(len(configs) * self.top_k))
            configs = sorted(configs, key=lambda c: self.perf_model(**named, **c.all_kwargs()))[:k]
        return configs

    def _launch(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        named = self._named(args, kwargs)
        for c in self.configs:
            clash = sorted(set(c.kwargs) & set(kwargs))
            if clash:
                raise LaunchError(f"{self.__name__}: Conflicting meta-parameters: {', '.join(clash)}. Make sure "
                                  f"that you don't re-define auto-tuned symbols.")
        self.nargs = named
        key = tuple(_key_value(named[k]) for k in self.keys if k in named)
        key += tuple(str(v.dtype) for v in named.values() if hasattr(v, "dtype") and hasattr(v, "shape"))
        config = self.cache.get(key)
        if config is None:
            configs = self.prune_configs(named)
            tune = len(configs) > 1 and (self.do_bench is not None or _device() == "gpu")
            config = self._tune(grid, args, kwargs, named, configs) if tune else configs[0]
            self.cache[key] = config
        self.best_config = config
        return self._run(config, grid, args, kwargs, named)

    def _run(self, config: Config, grid: Any, args: tuple, kwargs: dict[str, Any], named: dict[str, Any]) -> Any:
        if config.pre_hook is not None:
            config.pre_hook({**named, **config.all_kwargs()})
        return self.fn._launch(grid, args, {**kwargs, **config.all_kwargs()})

    def _tune(self, grid: Any, args: tuple, kwargs: dict[str, Any], named: dict[str, Any],
              configs: list[Config]) -> Config:
        """The fastest of ``configs`` for these arguments; arrays are restored after each run."""
        arrays = _buffers(named)
        saved = [_snapshot(v) for v in arrays]
        timings: list[float] = []
        for config in configs:
            def kernel_call(config: Config = config) -> None:
                for n in self.reset_to_zero:
                    named[n][...] = 0
                self._run(config, grid, args, kwargs, named)

            try:
                if self.do_bench is not None:
                    t = self.do_bench(kernel_call)
                    t = t[0] if isinstance(t, tuple | list) else t
                else:
                    t = _default_bench(kernel_call, self.rep)
            finally:
                for v, old in zip(arrays, saved):
                    _restore(v, old)
            timings.append(float(t))
        return configs[min(range(len(configs)), key=timings.__getitem__)]


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: dict | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Any = None, post_hook: Any = None, warmup: Any = None, rep: int | None = None,
             use_cuda_graph: bool = False, do_bench: Callable[..., Any] | None = None,
             cache_results: bool = False) -> Callable[[Any], Autotuner]:
    """Triton's ``triton.autotune``; see the module docstring. ``pre_hook``/``post_hook`` of the
    decorator, ``warmup``, ``use_cuda_graph`` and ``cache_results`` are accepted without effect
    (``restore_value`` arrays are restored, as every array is)."""
    configs = list(configs)
    if not configs or not all(isinstance(c, Config) for c in configs):
        raise DecoratorArgumentError(f"@eggpu.autotune(configs=...) takes a non-empty list of eggpu.Config, "
                                     f"got {configs!r}")
    if isinstance(key, str) or not all(isinstance(k, str) for k in key):
        raise DecoratorArgumentError(f"@eggpu.autotune(key=...) takes a list of parameter names, got {key!r}")
    reps = 20 if rep is None else rep

    def decorate(fn: Any) -> Autotuner:
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, do_bench, reps)

    return decorate


def heuristics(values: dict[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Heuristics]:
    """Triton's ``triton.heuristics``: constexpr arguments computed from the others."""
    if not isinstance(values, dict) or not all(callable(v) for v in values.values()):
        raise DecoratorArgumentError(f"@eggpu.heuristics takes a dict of name -> function(args), got {values!r}")

    def decorate(fn: Any) -> Heuristics:
        return Heuristics(fn, values)

    return decorate
