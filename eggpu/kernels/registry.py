"""The library registry: what each bundled kernel is, how to launch it and how to check it.

Every bundled kernel has one :class:`LibraryKernel` entry in :data:`eggpu.kernels.LIBRARY`. The
test suites of the interpreter, the optimizer and the code generator, and ``eggpu demo``, iterate
over it the same way::

    for lk in LIBRARY:
        for dtype in lk.dtypes:
            for size in lk.sizes:
                case = lk.make_case(size, dtype, np.random.default_rng(0))
                got = case.run(lk.instance(case).interpret)   # or ck.run_cpu, ck.launch
                lk.check(case, got)                            # AssertionError on mismatch

A :class:`Case` is one concrete launch: the argument values in kernel order (numpy arrays for
pointers, numpy scalars for scalar parameters), the grid, the constexpr values and which pointer
arguments the kernel writes. :meth:`Case.run` hands *copies* of the arrays to an executor, so one
case can be run by several executors and compared. :meth:`LibraryKernel.expected` computes the
outputs with the numpy reference (float64); :meth:`LibraryKernel.check` compares with the
entry's per-dtype :class:`Tol`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from eggpu.ir.dtypes import DType
from eggpu.ir.errors import KernelError
from eggpu.ir.record import Frozen, Record

from .lazy_numpy import np

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

Size = int | tuple[int, ...]
"""A case size: ``n`` for 1-D kernels, ``(rows, cols)`` for row kernels, ``(M, N, K)`` for matmul."""


class Tol(Frozen):
    """Elementwise tolerance: ``|got - want| <= atol + rtol * |want|`` (NaN must match NaN)."""

    _fields = ("rtol", "atol")
    rtol: float
    atol: float

    def __init__(self, rtol: float, atol: float):
        self._assign(rtol, atol)

    def __str__(self) -> str:
        return f"rtol={self.rtol:g}, atol={self.atol:g}"


EXACT = Tol(0.0, 0.0)


class Case(Record):
    """One launch of a library kernel.

    ``args`` are in the kernel's parameter order without the constexprs; ``arg_names`` name them.
    ``outputs`` names the pointer arguments the kernel writes (their initial contents are part of
    the case: zeros for accumulated outputs, a NaN sentinel where nothing may be written).
    ``meta`` holds what the reference needs that is not an argument (e.g. the logical views of
    padded buffers).
    """

    _fields = ("kernel", "dtype", "size", "arg_names", "args", "grid", "consts", "outputs", "meta")
    kernel: str
    dtype: DType
    size: Size
    arg_names: tuple[str, ...]
    args: tuple[Any, ...]
    grid: tuple[int, ...]
    consts: tuple[Any, ...]
    outputs: tuple[str, ...]
    meta: dict[str, Any]

    def __init__(self, kernel: str, dtype: DType, size: Size, arg_names: tuple[str, ...], args: tuple[Any, ...],
                 grid: tuple[int, ...], consts: tuple[Any, ...], outputs: tuple[str, ...],
                 meta: dict[str, Any] | None = None):
        self._assign(kernel, dtype, size, arg_names, args, grid, consts, outputs, {} if meta is None else meta)
        if len(self.arg_names) != len(self.args):
            raise KernelError(f"{self.kernel}: {len(self.arg_names)} names for {len(self.args)} args")
        missing = [o for o in self.outputs if o not in self.arg_names]
        if missing:
            raise KernelError(f"{self.kernel}: outputs {missing} are not arguments")

    def arg(self, name: str) -> Any:
        """The (original, never written) value of argument ``name``."""
        return self.args[self.arg_names.index(name)]

    def fresh_args(self) -> list[Any]:
        """The arguments with every array copied, ready to be written by one execution."""
        return [a.copy() if isinstance(a, np.ndarray) else a for a in self.args]

    def run(self, executor: Callable[..., Any]) -> dict[str, np.ndarray]:
        """Call ``executor(grid, *args)`` on fresh copies; return the output arrays by name."""
        args = self.fresh_args()
        executor(self.grid, *args)
        return {name: args[self.arg_names.index(name)] for name in self.outputs}

    def __str__(self) -> str:
        return f"{self.kernel}[{self.dtype}] size={self.size} grid={self.grid} consts={self.consts}"


class LibraryKernel(Frozen):
    """A bundled kernel together with its test fixture.

    - ``name``: the kernel's name (``"softmax_forward"``); ``fn``: the ``@eggpu.kernel`` function
      (its Kernel class is ``fn.Kernel``).
    - ``dtypes``: the dtypes to test (the kernel's dtype parameter); ``generic`` is False for a
      kernel without a dtype parameter (``AdamStep(1024)``), whose ``dtypes`` then says the
      dtype of its data.
    - ``make_case(size, dtype, rng) -> Case``; ``sizes``: the sizes every suite runs (ragged ones:
      n = 1, 1000, 1001, 4097; rows of 10 and 781 columns); ``extra_sizes``: edge and larger
      shapes (one column, exact block multiples, thousands of columns) for suites where a run
      is cheap or for their slow sweeps.
    - ``reference(case) -> {output name: float64 array}``: the numpy reference of every output,
      with the buffers' full shapes (untouched padding included).
    - ``tolerances``: per dtype; ``output_tolerances`` overrides them for named outputs (e.g.
      statistics saved in f32 whatever the dtype). Integer outputs (indices) are always compared
      exactly.
    - ``backward``/``forward``: the library names of the paired kernel, if any.
    """

    _fields = ("name", "fn", "dtypes", "make_case", "reference", "tolerances", "sizes", "extra_sizes", "generic",
               "backward", "forward", "output_tolerances", "description")
    name: str
    fn: Any
    dtypes: tuple[DType, ...]
    make_case: Callable[[Size, DType, np.random.Generator], Case]
    reference: Callable[[Case], dict[str, np.ndarray]]
    tolerances: Mapping[DType, Tol]
    sizes: tuple[Size, ...]
    extra_sizes: tuple[Size, ...]
    generic: bool
    backward: str | None
    forward: str | None
    output_tolerances: Mapping[str, Mapping[DType, Tol]]
    description: str

    def __init__(self, name: str, fn: Any, dtypes: tuple[DType, ...],
                 make_case: Callable[[Size, DType, np.random.Generator], Case],
                 reference: Callable[[Case], dict[str, np.ndarray]], tolerances: Mapping[DType, Tol],
                 sizes: tuple[Size, ...], extra_sizes: tuple[Size, ...] = (), generic: bool = True,
                 backward: str | None = None, forward: str | None = None,
                 output_tolerances: Mapping[str, Mapping[DType, Tol]] | None = None, description: str = ""):
        self._assign(name, fn, dtypes, make_case, reference, tolerances, sizes, extra_sizes, generic, backward,
                     forward, {} if output_tolerances is None else output_tolerances, description)

    def __post_init__(self) -> None:
        for where, table in [("tolerances", self.tolerances), *self.output_tolerances.items()]:
            missing = [d for d in self.dtypes if d not in table]
            if missing:
                raise KernelError(f"{self.name}: no tolerance for dtypes {missing} in {where}")

    @property
    def kernel_class(self) -> Any:
        """The generated Kernel class (``SoftmaxForward``)."""
        return self.fn.Kernel

    def kernel(self, dtype: DType, consts: Sequence[Any]) -> Any:
        """The Kernel instance for ``dtype`` and the constexpr values ``consts``."""
        cls = self.kernel_class[dtype] if self.generic else self.kernel_class
        return cls(*consts)

    def instance(self, case: Case) -> Any:
        """The Kernel instance that runs ``case``."""
        return self.kernel(case.dtype, case.consts)

    def interpret(self, case: Case) -> dict[str, np.ndarray]:
        """Run ``case`` with the numpy interpreter; return the outputs."""
        return case.run(self.instance(case).interpret)

    def expected(self, case: Case) -> dict[str, np.ndarray]:
        return self.reference(case)

    def tolerance(self, dtype: DType, output: str | None = None) -> Tol:
        """The tolerance for ``output`` (any output when None) of a case of ``dtype``."""
        table = self.output_tolerances.get(output, self.tolerances) if output else self.tolerances
        try:
            return table[dtype]
        except KeyError:
            known = ", ".join(map(str, table))
            raise KernelError(f"{self.name}: no tolerance stated for dtype {dtype} (stated: {known})") from None

    def check(self, case: Case, got: Mapping[str, np.ndarray]) -> None:
        """Assert that ``got`` (outputs by name) matches the reference within tolerance."""
        want = self.expected(case)
        for name in case.outputs:
            assert_close(got[name], want[name], self.tolerance(case.dtype, name), what=f"{case}: output {name}")


def assert_close(got: np.ndarray, want: np.ndarray, tol: Tol, *, what: str = "") -> None:
    """Compare ``got`` (any dtype) with ``want`` in float64; raise AssertionError with the worst lanes.

    Integer-valued ``got`` (indices) must match exactly. NaN must be where ``want`` has NaN and
    infinities must match exactly.
    """
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape} != expected {want.shape}")
    if got.dtype.kind in "iub":
        tol = EXACT
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    bad = nan_g != nan_w
    both = ~(nan_g | nan_w)
    inf = both & (np.isinf(g) | np.isinf(w))
    bad |= inf & (g != w)
    fin = both & ~inf
    with np.errstate(all="ignore"):
        err = np.where(fin, np.abs(g - w), 0.0)
        bad |= fin & (err > tol.atol + tol.rtol * np.abs(w))
    if bad.any():
        idx = np.argwhere(bad)
        score = np.where(bad, np.where(fin, err, np.inf), -1.0)
        worst = np.unravel_index(np.argmax(score), g.shape)
        lines = [
            f"{what}: {int(bad.sum())} of {g.size} elements differ ({tol})",
            f"  worst at {tuple(int(i) for i in worst)}: got {float(g[worst])!r}, want {float(w[worst])!r}",
            "  first: " + ", ".join(
                f"{tuple(int(i) for i in ix)}: {float(g[tuple(ix)])!r} vs {float(w[tuple(ix)])!r}" for ix in idx[:5]
            ),
        ]
        raise AssertionError("\n".join(lines))
