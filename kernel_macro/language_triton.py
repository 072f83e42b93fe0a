"""Triton's scans, combine-function reductions, element shuffles and random numbers as
language functions (declarations only, like :mod:`eggpu.kernel_macro.language`, which re-exports
them; their meanings are in :mod:`.scans`, :mod:`.shuffles` and :mod:`.philox`)."""

from __future__ import annotations

import builtins

from .language_base import _builtin

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

_builtin_bool = builtins.bool

@_builtin
def associative_scan(input: Any, axis: int, combine_fn: Any, reverse: _builtin_bool = False) -> Any:
    """Inclusive scan of a block (or a tuple of blocks) along ``axis`` with an ``@eggpu.jit`` combine function."""


@_builtin
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: _builtin_bool = False) -> Any:
    """Reduce a block (or a tuple of blocks) along ``axis`` (None: all) with an ``@eggpu.jit`` combine function."""


@_builtin
def map_elementwise(scalar_fn: Any, *args: Any, pack: int = 1) -> Any:
    """Apply the ``@eggpu.jit`` function ``scalar_fn`` to each element of ``args`` (broadcast to one
    shape): its body is inlined over the blocks, and an ``if`` on a per-element condition computes
    both branches and selects per element. One result or a tuple of results, each of the
    arguments' shape. ``pack=k`` passes ``k`` consecutive elements of each argument per call
    (``fn(x0..x{k-1}, y0..y{k-1}, ...)``, returning ``k`` values per result, as in Triton)."""


@_builtin
def cumsum(input: Any, axis: int = 0, reverse: _builtin_bool = False, dtype: Any = None) -> Any:
    """Inclusive prefix sum along ``axis`` (narrow integers sum in 32 bits, as tl.sum)."""


@_builtin
def cumprod(input: Any, axis: int = 0, reverse: _builtin_bool = False) -> Any:
    """Inclusive prefix product along ``axis``."""


@_builtin
def xor_sum(input: Any, axis: Any = None, keep_dims: _builtin_bool = False) -> Any:
    """Bitwise xor of an integer block along ``axis`` (None: all)."""


@_builtin
def reduce_or(input: Any, axis: Any, keep_dims: _builtin_bool = False) -> Any:
    """Bitwise or of an integer block along ``axis`` (None: all)."""


@_builtin
def sort(x: Any, dim: Any = None, descending: Any = False) -> Any:
    """``x`` sorted along ``dim`` (default: the last axis; a power-of-2 length), ascending unless ``descending``."""


@_builtin
def squeeze(x: Any, dim: Any) -> Any:
    """Triton's ``tl.squeeze``: ``x`` without its length-1 dimension ``dim`` (negative counts from the end)."""


@_builtin
def unsqueeze(x: Any, dim: Any) -> Any:
    """Triton's ``tl.unsqueeze``: ``x`` with a length-1 dimension inserted at ``dim`` (``tl.expand_dims``)."""


@_builtin
def topk(x: Any, k: Any, dim: Any = None, descending: Any = True) -> Any:
    """The ``k`` largest elements of ``x`` along the last axis, largest first (``descending=False``:
    the ``k`` smallest, smallest first); ``k`` and the axis length are powers of 2. The result has
    ``k`` lanes along that axis."""


@_builtin
def bitonic_merge(x: Any, dim: Any = None, descending: Any = False) -> Any:
    """Triton's final bitonic merge along the last axis (a power-of-2 length): a bitonic block
    (ascending then descending, or the reverse) comes out sorted, ascending unless ``descending``."""


@_builtin
def swizzle2d(i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> Any:
    """``(i, j)`` of a row-major ``size_i x size_j`` grid renumbered column-major in groups of ``size_g`` rows."""


@_builtin
def gather(src: Any, index: Any, axis: int) -> Any:
    """``src`` read along ``axis`` at ``index`` (same rank; other dims equal). Indices are clamped into the axis."""


@_builtin
def join(a: Any, b: Any) -> Any:
    """Stack two blocks along a new minor axis of size 2."""


@_builtin
def split(a: Any) -> Any:
    """The two halves of a block whose last dimension is 2 (inverse of join)."""


@_builtin
def interleave(a: Any, b: Any) -> Any:
    """Interleave two blocks along their last dimension."""


@_builtin
def cat(input: Any, other: Any, can_reorder: _builtin_bool = False) -> Any:
    """Concatenate along the first dimension (eggpu keeps the order)."""


@_builtin
def flip(x: Any, dim: Any = None) -> Any:
    """Reverse a block along ``dim`` (default: the last dimension)."""


@_builtin
def histogram(input: Any, num_bins: int, mask: Any = None) -> Any:
    """i32 counts of the values 0..num_bins-1 in a 1-D integer block (others and masked lanes are not counted)."""


@_builtin
def philox_impl(c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any, n_rounds: int = 10) -> Any:
    """Philox4x32 rounds on a counter and key of 32-bit words."""


@_builtin
def philox(seed: Any, c0: Any, c1: Any, c2: Any, c3: Any, n_rounds: int = 10) -> Any:
    """Philox4x32 keyed by ``seed`` (as u64, low word first)."""


@_builtin
def randint4x(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Four blocks of random u32 words for ``offset`` (Triton's Philox, bit for bit)."""


@_builtin
def randint(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Random u32 words for ``offset`` (the first of randint4x)."""


@_builtin
def rand(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Uniform f32 in [0, 1) for ``offset``."""


@_builtin
def rand4x(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Four blocks of uniform f32 in [0, 1)."""


@_builtin
def randn(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Standard normal f32 for ``offset`` (Box-Muller)."""


@_builtin
def randn4x(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Four blocks of standard normal f32."""


@_builtin
def uint_to_uniform_float(x: Any) -> Any:
    """A random 32-bit word as a f32 in [0, 1)."""


@_builtin
def pair_uniform_to_normal(u1: Any, u2: Any) -> Any:
    """Box-Muller: two uniforms to two standard normals."""


# ---------------------------------------------------------------- block pointers


@_builtin
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any, order: Any) -> Any:
    """A block pointer (Triton's): the ``block_shape`` tile at ``offsets`` of the row-major or
    strided tensor of ``shape`` and ``strides`` (in elements) starting at the scalar pointer
    ``base``. ``tl.load``/``tl.store`` of it read/write the tile, checking the dimensions listed in
    ``boundary_check`` against ``0 <= index < shape``; ``order`` is a layout hint (a permutation
    of the dimensions) without effect on the result. Lowered to a block of pointers and a mask."""


@_builtin
def advance(base: Any, offsets: Any) -> Any:
    """The block pointer ``base`` moved by ``offsets`` (one per dimension, in elements)."""


@_builtin
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any, padding_option: str = "zero") -> Any:
    """A device-side tensor descriptor (Triton's): ``desc.load(offsets)`` reads the ``block_shape``
    tile at ``offsets`` of the tensor of ``shape`` and ``strides`` (the last one 1) at ``base``,
    filling out-of-bounds elements with 0 (``padding_option="nan"``: NaN); ``desc.store(offsets,
    value)`` writes its in-bounds elements."""


@_builtin
def load_tensor_descriptor(desc: Any, offsets: Any) -> Any:
    """``desc.load(offsets)``."""


@_builtin
def store_tensor_descriptor(desc: Any, offsets: Any, value: Any) -> Any:
    """``desc.store(offsets, value)``."""
