"""A catalogue of small kernels in the style of Triton's ``test_core.py``, as one dual source file.

Triton's ``python/test/unit/language/test_core.py`` tests the language one feature per kernel,
most of them templates patched per expression and dtype. These are not its text: each kernel
here is written anew to exercise the same feature the way that file does (the test it follows is
named in the comment above it), with an expression spelled out per kernel instead of patched in.
:mod:`bench.compat_core` launches each one on numpy arrays for every dtype the Triton test
covers and compares with numpy.

As for ``bench/compat_kernels.py``, this file is executed by :func:`bench.dual.load` with
``BACKEND`` set, and only the imports below differ between eggpu and Triton. This part holds the
elementwise, cast, memory and shape kernels; ``bench/compat_core_kernels2.py`` the rest.
"""

# ruff: noqa: F821, E741, B007 - BACKEND is injected by the loader; kernels keep test_core's names and loops

if BACKEND == "triton":  # pragma: no cover - depends on the loader
    import triton
    import triton.language as tl
else:
    import eggpu as triton
    import eggpu.language as tl


# ---------------------------------------------------------------- test_empty_kernel


@triton.jit
def empty_kernel(X, SIZE: tl.constexpr):
    pass


# ---------------------------------------------------------------- _test_unary / test_unary_op


@triton.jit
def neg_kernel(Z, X, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    tl.store(Z + off, -x)


@triton.jit
def invert_kernel(Z, X, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    tl.store(Z + off, ~x)


# ---------------------------------------------------------------- _test_binary / test_bin_op (one kernel per operator)


@triton.jit
def add_kernel(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z + off, x + y)


@triton.jit
def sub_kernel(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z + off, x - y)


@triton.jit
def mul_kernel(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z + off, x * y)


@triton.jit
def truediv_kernel(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z + off, x / y)


@triton.jit
def floordiv_kernel(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z + off, x // y)


@triton.jit
def mod_kernel(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z + off, x % y)


# test_bin_op's broadcast variants: one operand a scalar loaded from X, one a constexpr scalar


@triton.jit
def add_broadcast_lhs_kernel(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X)
    y = tl.load(Y + off)
    tl.store(Z + off, x + y)


@triton.jit
def mul_scalar_rhs_kernel(Z, X, y: tl.constexpr, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    tl.store(Z + off, x * y)


# ---------------------------------------------------------------- test_bitwise_op, test_shift_op


@triton.jit
def bitwise_kernel(Z_AND, Z_OR, Z_XOR, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z_AND + off, x & y)
    tl.store(Z_OR + off, x | y)
    tl.store(Z_XOR + off, x ^ y)


@triton.jit
def shift_kernel(Z_L, Z_R, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z_L + off, x << y)
    tl.store(Z_R + off, x >> y)


# ---------------------------------------------------------------- test_compare_op


@triton.jit
def compare_kernel(Z_LT, Z_LE, Z_EQ, Z_NE, Z_GT, Z_GE, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z_LT + off, x < y)
    tl.store(Z_LE + off, x <= y)
    tl.store(Z_EQ + off, x == y)
    tl.store(Z_NE + off, x != y)
    tl.store(Z_GT + off, x > y)
    tl.store(Z_GE + off, x >= y)


# ---------------------------------------------------------------- test_broadcast


@triton.jit
def broadcast_kernel(x_ptr, y_ptr, y_broadcasted_ptr, M: tl.constexpr, N: tl.constexpr):
    offset1 = tl.arange(0, M)
    offset2 = tl.arange(0, N)
    x = tl.load(x_ptr + N * offset1[:, None] + offset2[None, :])
    y = tl.load(y_ptr + offset2)
    _, y_broadcasted = tl.broadcast(x, y)
    tl.store(y_broadcasted_ptr + N * offset1[:, None] + offset2[None, :], y_broadcasted)


@triton.jit
def broadcast_to_kernel(Z, X, M: tl.constexpr, N: tl.constexpr):
    row = tl.load(X + tl.arange(0, N))
    tile = tl.broadcast_to(row[None, :], (M, N))
    tl.store(Z + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], tile)


# ---------------------------------------------------------------- test_where, test_where_broadcast


@triton.jit
def where_kernel(cond_ptr, a_ptr, b_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
                 TEST_POINTERS: tl.constexpr, TEST_SCALAR_POINTERS: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    decide = tl.load(cond_ptr + offsets, mask=mask)
    if TEST_SCALAR_POINTERS:
        ptr = tl.where(tl.load(cond_ptr), a_ptr, b_ptr)
        output = tl.load(ptr + offsets, mask=mask)
    else:
        if TEST_POINTERS:
            a = tl.load(a_ptr + offsets, mask=mask).to(tl.pi32_t)
            b = tl.load(b_ptr + offsets, mask=mask).to(tl.pi32_t)
        else:
            a = tl.load(a_ptr + offsets, mask=mask)
            b = tl.load(b_ptr + offsets, mask=mask)
        output = tl.where(decide, a, b)
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def where_scalar_condition_kernel(a_ptr, out_ptr, BLOCK_SIZE: tl.constexpr):
    xoffsets = tl.arange(0, BLOCK_SIZE)[:, None]
    yoffsets = tl.arange(0, BLOCK_SIZE)[None, :]
    mask = 0
    vals = tl.load(a_ptr + yoffsets + BLOCK_SIZE * xoffsets)
    res = tl.where(mask, vals, 0.)
    tl.store(out_ptr + yoffsets + BLOCK_SIZE * xoffsets, res)


# ---------------------------------------------------------------- test_math_op, test_abs, test_math_fma_op


@triton.jit
def math_kernel(Z_EXP, Z_LOG, Z_SIN, Z_COS, Z_SQRT, Z_RSQRT, Z_FLOOR, Z_CEIL, X, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    tl.store(Z_EXP + off, tl.exp(x))
    tl.store(Z_LOG + off, tl.log(x))
    tl.store(Z_SIN + off, tl.sin(x))
    tl.store(Z_COS + off, tl.cos(x))
    tl.store(Z_SQRT + off, tl.sqrt(x))
    tl.store(Z_RSQRT + off, tl.math.rsqrt(x))
    tl.store(Z_FLOOR + off, tl.floor(x))
    tl.store(Z_CEIL + off, tl.ceil(x))


@triton.jit
def abs_kernel(Z, X, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    tl.store(Z + off, tl.abs(x))


@triton.jit
def fma_kernel(Z, X, Y, W, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    w = tl.load(W + off)
    tl.store(Z + off, tl.math.fma(x, y, w))


# ---------------------------------------------------------------- test_maximum_minimum (propagate_nan), test_clamp


@triton.jit
def minmax_kernel(Z_MAX, Z_MIN, X, Y, SIZE: tl.constexpr, PROPAGATE_NAN: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z_MAX + off, tl.maximum(x, y, propagate_nan=PROPAGATE_NAN))
    tl.store(Z_MIN + off, tl.minimum(x, y, propagate_nan=PROPAGATE_NAN))


@triton.jit
def clamp_kernel(x_ptr, min_ptr, max_ptr, out_ptr, ref_ptr, N, BLOCK_SIZE: tl.constexpr):
    off = tl.arange(0, BLOCK_SIZE)
    mask = off < N
    x = tl.load(x_ptr + off, mask=mask)
    mini = tl.load(min_ptr + off, mask=mask)
    maxi = tl.load(max_ptr + off, mask=mask)
    out = tl.clamp(x, mini, maxi)
    ref = tl.minimum(tl.maximum(x, mini), maxi)
    tl.store(out_ptr + off, out, mask=mask)
    tl.store(ref_ptr + off, ref, mask=mask)


# ---------------------------------------------------------------- test_umulhi, test_math_divide_op, test_precise_math


@triton.jit
def umulhi_kernel(X, Y, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    z = tl.umulhi(x, y)
    tl.store(Z + tl.arange(0, N), z)


@triton.jit
def divide_kernel(Z_FDIV, Z_DIVRN, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z_FDIV + off, tl.math.fdiv(x, y))
    tl.store(Z_DIVRN + off, tl.math.div_rn(x, y))


@triton.jit
def precise_math_kernel(X, Y, OUT, OUT_REF, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    prec = tl.sqrt_rn(tl.div_rn(x, y))
    ref = tl.sqrt(x.to(tl.float64) / y.to(tl.float64)).to(tl.float32)
    tl.store(OUT + tl.arange(0, BLOCK), prec)
    tl.store(OUT_REF + tl.arange(0, BLOCK), ref)


# ---------------------------------------------------------------- test_cast, test_bitcast (x.to, tl.cast)


@triton.jit
def cast_kernel(X, Z, TO_TYPE: tl.constexpr, BITCAST: tl.constexpr, SIZE: tl.constexpr):
    x_ptr = X + tl.arange(0, SIZE)
    y_ptr = Z + tl.arange(0, SIZE)
    x = tl.load(x_ptr)
    z = x.to(Z.dtype.element_ty, bitcast=BITCAST)
    tl.store(y_ptr, z)


@triton.jit
def cast_fn_kernel(X, Z, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    tl.store(Z + off, tl.cast(x, tl.int16))


# ---------------------------------------------------------------- test_store_constant, test_zero_strided_tensors


@triton.jit
def store_constant_kernel(output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    output = tl.full([BLOCK_SIZE], 2, tl.int32)
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def zeros_like_kernel(Z, X, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    tl.store(Z + off, tl.zeros_like(x) + 7)


# ---------------------------------------------------------------- test_masked_load, test_load_cache_modifier


@triton.jit
def masked_load_kernel(in_ptr, out_ptr, in_size: tl.constexpr, out_size: tl.constexpr):
    in_offsets = tl.arange(0, out_size)
    x = tl.load(in_ptr + in_offsets, mask=in_offsets < in_size, other=1)
    output_offsets = tl.arange(0, out_size)
    tl.store(out_ptr + output_offsets, x)


@triton.jit
def cache_modifier_kernel(dst, src, CACHE: tl.constexpr):
    offsets = tl.arange(0, 128)
    x = tl.load(src + offsets, cache_modifier=CACHE)  # PTX refuses .ca with an eviction policy
    tl.store(dst + offsets, x, cache_modifier=".wb")


@triton.jit
def masked_store_2d_kernel(Z, X, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)[:, None]
    rn = tl.arange(0, BLOCK_N)[None, :]
    mask = (rm < M) & (rn < N)
    x = tl.load(X + rm * N + rn, mask=mask, other=0.0)
    tl.store(Z + rm * N + rn, x * 2.0, mask=mask)


# ---------------------------------------------------------------- test_index1d (x[:, None], x[None, :])


@triton.jit
def index1d_kernel(Z, X, SIZE: tl.constexpr):
    m = tl.arange(0, SIZE)
    n = tl.arange(0, SIZE)
    x = tl.load(X + m)
    z = x[None, :] + x[:, None]
    tl.store(Z + m[:, None] * SIZE + n[None, :], z)


# ---------------------------------------------------------------- test_trans / test_permute / test_reshape / expand_dims


@triton.jit
def trans_kernel(Z, X, M: tl.constexpr, N: tl.constexpr):
    off_m = tl.arange(0, M)
    off_n = tl.arange(0, N)
    x = tl.load(X + off_m[:, None] * N + off_n[None, :])
    tl.store(Z + off_n[:, None] * M + off_m[None, :], tl.trans(x))


@triton.jit
def permute_kernel(Z, X, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(X + a * B * C + b * C + c)
    y = tl.permute(x, (2, 0, 1))
    ca = tl.arange(0, C)[:, None, None]
    aa = tl.arange(0, A)[None, :, None]
    ba = tl.arange(0, B)[None, None, :]
    tl.store(Z + ca * A * B + aa * B + ba, y)


@triton.jit
def reshape_kernel(Z, X, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M * N))
    y = tl.reshape(x, (M, N))
    z = tl.sum(y, axis=1)
    tl.store(Z + tl.arange(0, M), z)


@triton.jit
def expand_dims_kernel(Z, X, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    t = tl.expand_dims(x, 0)
    t = tl.expand_dims(t, 2)
    t = tl.broadcast_to(t, (2, N, 4))
    tl.store(Z + tl.arange(0, 2)[:, None, None] * N * 4 + offs[None, :, None] * 4 + tl.arange(0, 4)[None, None, :],
             t)


# ---------------------------------------------------------------- test_map_elementwise


@triton.jit
def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@triton.jit
def map_elementwise_kernel(X, Z, alpha, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    tl.store(Z + off, tl.map_elementwise(selu_scalar, tl.load(X + off), alpha))


# ---------------------------------------------------------------- test_cast (fp_downcast_rounding="rtz")


@triton.jit
def downcast_rtz_kernel(X, Z, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    tl.store(Z + off, tl.load(X + off).to(Z.dtype.element_ty, fp_downcast_rounding="rtz"))


# ---------------------------------------------------------------- tl.load(volatile=True)


@triton.jit
def volatile_load_kernel(X, Z, n, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off, mask=off < n, other=0.5, volatile=True)
    tl.store(Z + off, x + tl.load(X + off, mask=off < n, other=0.5, volatile=True))


# ---------------------------------------------------------------- test_reduce (argmax/argmin tie_break_left=False)


@triton.jit
def argmax_tie_break_kernel(X, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(Z, tl.argmax(x, 0, tie_break_left=False))
    tl.store(Z + 1, tl.argmin(x, 0, tie_break_left=False))


# ---------------------------------------------------------------- test_tensor_descriptor_load / _store (device-side)


@triton.jit
def tensor_descriptor_kernel(X, Z, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(X, shape=[M, N], strides=[stride, 1], block_shape=[BM, BN])
    z_desc = tl.make_tensor_descriptor(Z, shape=[M, N], strides=[stride, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    z_desc.store([pm * BM, pn * BN], x_desc.load([pm * BM, pn * BN]) * 2)
