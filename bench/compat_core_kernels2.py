"""The test_core catalogue, part 2 (reductions, scans, atomics, control flow, helpers, join/split,
dot, inline asm), a dual source file like part 1 (``bench/compat_core_kernels.py``), which says
what the catalogue is."""

# ruff: noqa: F821, E741, B007 - BACKEND is injected by the loader; kernels keep test_core's names and loops

if BACKEND == "triton":  # pragma: no cover - depends on the loader
    import triton
    import triton.language as tl
else:
    import eggpu as triton
    import eggpu.language as tl


# ---------------------------------------------------------------- test_reduce1d, test_reduce2d, test_reduce (axis=None)


@triton.jit
def reduce1d_kernel(Z_SUM, Z_MAX, Z_MIN, Z_ARGMAX, Z_ARGMIN, X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Z_SUM, tl.sum(x, axis=0))
    tl.store(Z_MAX, tl.max(x, axis=0))
    tl.store(Z_MIN, tl.min(x, axis=0))
    tl.store(Z_ARGMAX, tl.argmax(x, axis=0))
    tl.store(Z_ARGMIN, tl.argmin(x, axis=0))


@triton.jit
def reduce2d_kernel(X, Z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr, KEEP_DIMS: tl.constexpr):
    range_m = tl.arange(0, BLOCK_M)
    range_n = tl.arange(0, BLOCK_N)
    x = tl.load(X + range_m[:, None] * BLOCK_N + range_n[None, :])
    z = tl.sum(x, axis=AXIS, keep_dims=KEEP_DIMS)
    if KEEP_DIMS:
        if AXIS == 1:
            z = tl.reshape(z, (BLOCK_M, ))
        else:
            z = tl.reshape(z, (BLOCK_N, ))
    if AXIS == 1:
        tl.store(Z + range_m, z)
    else:
        tl.store(Z + range_n, z)


@triton.jit
def reduce_all_kernel(X, Z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    range_m = tl.arange(0, BLOCK_M)
    range_n = tl.arange(0, BLOCK_N)
    x = tl.load(X + range_m[:, None] * BLOCK_N + range_n[None, :])
    tl.store(Z, tl.max(x))


@triton.jit
def max_with_indices_kernel(X, Z_VAL, Z_IDX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    range_m = tl.arange(0, BLOCK_M)
    range_n = tl.arange(0, BLOCK_N)
    x = tl.load(X + range_m[:, None] * BLOCK_N + range_n[None, :])
    val, idx = tl.max(x, axis=1, return_indices=True)
    tl.store(Z_VAL + range_m, val)
    tl.store(Z_IDX + range_m, idx)


@triton.jit
def sum_dtype_kernel(Z, BLOCK: tl.constexpr):
    x = tl.full((BLOCK, ), 1, tl.int8)
    tl.store(Z, x.sum(0, dtype=tl.int32))


@triton.jit
def _combine_add_mul(a, b):
    return a * 2 + b


@triton.jit
def generic_reduce_kernel(X, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Z, tl.reduce(x, 0, _combine_add_mul))


@triton.jit
def chained_reductions_kernel(In, Out, dim_0: tl.constexpr, dim_1: tl.constexpr, dim_2: tl.constexpr):
    idx = tl.arange(0, dim_0 * dim_1 * dim_2)
    In = tl.load(In + idx)
    In = tl.reshape(In, (dim_0, dim_1, dim_2))
    val = tl.sum(In, axis=2)
    val = tl.sum(val, axis=1)
    tl.store(Out + tl.arange(0, dim_0), val)


# ---------------------------------------------------------------- test_scan2d, test_scan_1d, associative_scan


@triton.jit
def cumsum_kernel(X, Z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr):
    range_m = tl.arange(0, BLOCK_M)
    range_n = tl.arange(0, BLOCK_N)
    x = tl.load(X + range_m[:, None] * BLOCK_N + range_n[None, :])
    z = tl.cumsum(x, axis=AXIS)
    tl.store(Z + range_m[:, None] * BLOCK_N + range_n[None, :], z)


@triton.jit
def cumprod_kernel(X, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Z + tl.arange(0, BLOCK), tl.cumprod(x, 0, reverse=True))


@triton.jit
def _linear_recurrence(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@triton.jit
def associative_scan_kernel(A, B, Z, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    _, z = tl.associative_scan((a, b), axis=0, combine_fn=_linear_recurrence)
    tl.store(Z + tl.arange(0, BLOCK), z)


# ---------------------------------------------------------------- test_atomic_rmw, test_tensor_atomic_rmw, test_atomic_cas


@triton.jit
def atomic_rmw_kernel(Z_ADD, Z_MAX, Z_MIN, OLD, X, SEM: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(X + pid)
    old = tl.atomic_add(Z_ADD, x, sem=SEM)
    tl.atomic_max(Z_MAX, x, sem=SEM)
    tl.atomic_min(Z_MIN, x, sem=SEM)
    tl.store(OLD + pid, old)


@triton.jit
def tensor_atomic_kernel(Z, X, M, N: tl.constexpr, BLOCK_M: tl.constexpr):
    off0 = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off1 = tl.arange(0, N)
    x = tl.load(X + off0[:, None] * N + off1[None, :], mask=off0[:, None] < M, other=0)
    tl.atomic_add(Z + off1, tl.sum(x, axis=0))


@triton.jit
def masked_atomic_kernel(Z, X, N, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + off, mask=off < N)
    tl.atomic_add(Z + off % 4, x, mask=off < N, sem="relaxed")


@triton.jit
def atomic_cas_kernel(Lock, X, SEM: tl.constexpr):
    while tl.atomic_cas(Lock, 0, 1, SEM) == 1:
        pass
    tl.store(X, tl.load(X) + 1)
    tl.atomic_xchg(Lock, 0)


@triton.jit
def bitwise_atomic_kernel(Z_OR, Z_AND, Z_XOR, OLD, X):
    pid = tl.program_id(0)
    x = tl.load(X + pid)
    tl.atomic_or(Z_OR, x)
    tl.atomic_and(Z_AND, ~x, sem="acq_rel")
    old = tl.atomic_xor(Z_XOR + tl.arange(0, 4), tl.full((4, ), 1, tl.int32) * x)
    tl.store(OLD + pid * 4 + tl.arange(0, 4), old)


# ---------------------------------------------------------------- test_if, test_if_else, test_if_return, constexpr if


@triton.jit
def if_else_kernel(Cond, TrueVal, FalseVal, Out):
    if tl.load(Cond):
        val = tl.load(TrueVal)
    else:
        val = tl.load(FalseVal)
    tl.store(Out, val)


@triton.jit
def if_return_kernel(ExitEarly, Out, cond: tl.constexpr, mode: tl.constexpr):
    if mode == "dynamic":
        if tl.load(ExitEarly):
            tl.store(Out, 0)
            return
    else:
        if cond:
            tl.store(Out, 0)
            return
    tl.store(Out, 1)


@triton.jit
def constexpr_if_kernel(Out, FLAG: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    if FLAG:
        v = offs * 2
    elif N > 4:
        v = offs + 100
    else:
        v = offs - 1
    tl.store(Out + offs, v)


@triton.jit
def nested_if_kernel(X, Out, N: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(X + pid)
    if x > 0:
        if x > 10:
            y = x * 3
        else:
            y = x * 2
    else:
        y = -x
    tl.store(Out + pid, y)


# ---------------------------------------------------------------- test_while, test_for_iv, test_nested_for, static_range


@triton.jit
def while_kernel(InitI, Bound, CutOff, OutI, OutInitI, OutJ):
    init_i = tl.load(InitI)
    curr_i = init_i
    j = 0
    while j < tl.load(Bound):
        curr_i = curr_i + (j == tl.load(CutOff))
        j += 1
        tl.store(OutInitI, init_i)
    tl.store(OutI, curr_i)
    tl.store(OutJ, j)


@triton.jit
def for_iv_kernel(Out, lo, hi, step):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi, step):
        acc += i
    tl.store(Out, acc)


@triton.jit
def nested_for_kernel(Out, A: tl.constexpr, B: tl.constexpr):
    off = tl.arange(0, B)
    acc = tl.zeros((B, ), dtype=tl.float32)
    for i in range(0, A):
        for j in range(0, i + 1):
            acc += j
    tl.store(Out + off, acc)


@triton.jit
def static_range_kernel(Out, X, N: tl.constexpr, K: tl.constexpr):
    off = tl.arange(0, N)
    acc = tl.load(X + off)
    for i in tl.static_range(K):
        acc = acc * 2 + i
    tl.store(Out + off, acc)


@triton.jit
def tl_range_kernel(Out, X, n, N: tl.constexpr):
    off = tl.arange(0, N)
    acc = tl.zeros((N, ), tl.float32)
    for i in tl.range(0, n, 1, num_stages=2, loop_unroll_factor=2):
        acc += tl.load(X + i * N + off)
    tl.store(Out + off, acc)


# ---------------------------------------------------------------- test_noinline, test_call (helpers), default args


@triton.jit
def _helper_scale(x, factor=2):
    return x * factor


@triton.jit(noinline=True)
def _helper_noinline(x, y):
    return x + y  # Triton's noinline functions take scalars


@triton.jit
def call_kernel(Out, X, N: tl.constexpr):
    off = tl.arange(0, N)
    x = tl.load(X + off)
    y = _helper_scale(x)
    z = y + _helper_scale(x, 3) + _helper_noinline(tl.load(X), 1.0)
    tl.store(Out + off, z)


# ---------------------------------------------------------------- test_num_programs / program_id in a 3-D grid


@triton.jit
def program_ids_kernel(Out):
    p0 = tl.program_id(0)
    p1 = tl.program_id(1)
    p2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(1)
    n2 = tl.num_programs(2)
    flat = (p2 * n1 + p1) * n0 + p0
    tl.store(Out + flat, p0 * 100 + p1 * 10 + p2 + n0 * n1 * n2 * 1000)


# ---------------------------------------------------------------- test_join / test_split / test_interleave / test_cat


@triton.jit
def join_split_kernel(X, Y, Z, A, B, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    z = tl.join(x, y)
    tl.store(Z + tl.arange(0, N)[:, None] * 2 + tl.arange(0, 2)[None, :], z)
    a, b = tl.split(z)
    tl.store(A + offs, a)
    tl.store(B + offs, b)


@triton.jit
def interleave_kernel(X, Y, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    z = tl.interleave(tl.load(X + offs), tl.load(Y + offs))
    tl.store(Z + tl.arange(0, 2 * N), z)


@triton.jit
def cat_kernel(X, Y, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    z = tl.cat(tl.load(X + offs), tl.load(Y + offs), can_reorder=True)
    tl.store(Z + tl.arange(0, 2 * N), z)


# ---------------------------------------------------------------- test_histogram, test_gather, test_flip


@triton.jit
def histogram_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    offset1 = tl.arange(0, M)
    offset2 = tl.arange(0, N)
    x = tl.load(x_ptr + offset1)
    z = tl.histogram(x, N)
    tl.store(z_ptr + offset2, z)


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, N: tl.constexpr, K: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, N))
    idx = tl.load(idx_ptr + tl.arange(0, K))
    tl.store(out_ptr + tl.arange(0, K), tl.gather(src, idx, 0))


@triton.jit
def flip_kernel(X, Z, N: tl.constexpr, M: tl.constexpr):
    offx = tl.arange(0, M)
    offy = tl.arange(0, N) * M
    off2d = offx[None, :] + offy[:, None]
    x = tl.load(X + off2d)
    x = tl.flip(x)
    tl.store(Z + off2d, x)


# ---------------------------------------------------------------- test_dot (small tiles), with acc, transposed operand


@triton.jit
def dot_kernel(X, Y, Z, W, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, ADD_ACC: tl.constexpr,
               TRANS_Y: tl.constexpr):
    off_m = tl.arange(0, M)
    off_n = tl.arange(0, N)
    off_k = tl.arange(0, K)
    x = tl.load(X + off_m[:, None] * K + off_k[None, :])
    if TRANS_Y:
        y = tl.trans(tl.load(Y + off_n[:, None] * K + off_k[None, :]))
    else:
        y = tl.load(Y + off_k[:, None] * N + off_n[None, :])
    z_ptrs = Z + off_m[:, None] * N + off_n[None, :]
    if ADD_ACC:
        w = tl.load(W + off_m[:, None] * N + off_n[None, :])
        z = tl.dot(x, y, acc=w)
    else:
        z = tl.dot(x, y)
    tl.store(z_ptrs, z)


@triton.jit
def dot_out_dtype_kernel(X, Y, Z, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    off_m = tl.arange(0, M)
    off_n = tl.arange(0, N)
    off_k = tl.arange(0, K)
    x = tl.load(X + off_m[:, None] * K + off_k[None, :])
    y = tl.load(Y + off_k[:, None] * N + off_n[None, :])
    z = tl.dot(x, y, out_dtype=tl.int32)
    tl.store(Z + off_m[:, None] * N + off_n[None, :], z)


# ---------------------------------------------------------------- test_value_specialization, test_pointer_arguments


@triton.jit
def scalar_args_kernel(Out, a, b, c, flag):
    if flag:
        tl.store(Out, a * 2 + b)
    else:
        tl.store(Out, c)


# ---------------------------------------------------------------- test_side_effectful_reduction / temp var in loop


@triton.jit
def side_effect_sum_kernel(Z, X, N: tl.constexpr):
    vals = tl.load(X + tl.arange(0, N))
    tl.store(Z, tl.sum(vals * 1.5, axis=0))
    tl.store(Z + 1, tl.max(vals - 1.0, axis=0))


@triton.jit
def temp_var_in_loop_kernel(Z, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.full((BLOCK, ), 0, dtype=tl.int32)
    tmp = tl.full((BLOCK, ), 1, dtype=tl.int32)
    for i in range(N):
        tmp2 = tl.full((BLOCK, ), 1, dtype=tl.int32)
        tmp = tmp * 2 + tmp2
        acc += tmp
    tl.store(Z + offs, acc)


# ---------------------------------------------------------------- test_static_assert / static_print / constexpr math


@triton.jit
def static_kernel(Z, N: tl.constexpr):
    tl.static_assert(N % 4 == 0, "N must be a multiple of 4")
    M: tl.constexpr = N * 2
    tl.store(Z + tl.arange(0, M), tl.arange(0, M) + N)


# ---------------------------------------------------------------- test_inline_asm (GPU only in eggpu)


@triton.jit
def inline_asm_kernel(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, BLOCK), z)


# ---------------------------------------------------------------- more of test_core: dot3d, defaults, short circuits


@triton.jit
def dot3d_kernel(X, Y, Z, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    b = tl.arange(0, B)[:, None, None]
    x = tl.load(X + b * M * K + tl.arange(0, M)[None, :, None] * K + tl.arange(0, K)[None, None, :])
    y = tl.load(Y + b * K * N + tl.arange(0, K)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    z = tl.dot(x, y)
    tl.store(Z + b * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :], z)


@triton.jit
def default_args_kernel(ret0, ret1, value=3):
    tl.store(ret0, _default_helper())
    tl.store(ret1, _default_helper(value))


@triton.jit
def _default_helper(value=7):
    return value


@triton.jit
def short_circuit_kernel(X, Out, FLAG: tl.constexpr):
    x = tl.load(X)
    if x > 0 and x < 10:
        tl.store(Out, 1)
    elif x == 0 or x == 100:
        tl.store(Out, 2)
    else:
        tl.store(Out, 3)
    if not FLAG:
        tl.store(Out + 1, 4)
    else:
        tl.store(Out + 1, 5)


@triton.jit
def unsigned_abs_kernel(O1, O2, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(O1 + off, tl.abs(x))
    tl.store(O2 + off, tl.abs(-y))


@triton.jit
def tensor_atomic_cas_kernel(X, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    t0 = tl.zeros([SIZE], dtype=tl.int64)
    t1 = tl.full([SIZE], 2, dtype=tl.int64)
    tl.atomic_cas(X + off, t0, t1)


@triton.jit
def ravel_view_kernel(X, Z1, Z2, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Z1 + tl.arange(0, M * N), tl.ravel(x))
    tl.store(Z2 + tl.arange(0, M * N), x.reshape(M * N))


@triton.jit
def argmax_keep_dims_kernel(X, Z, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    z = tl.argmax(x, axis=1, keep_dims=True)
    tl.store(Z + tl.arange(0, M)[:, None], z)


@triton.jit
def zero_strided_kernel(X, Z, N: tl.constexpr, STRIDE: tl.constexpr):
    off = tl.arange(0, N)
    x = tl.load(X + off * STRIDE)
    tl.store(Z + off, x + off)


@triton.jit
def scalar_masked_load_kernel(X, Z, n):
    x = tl.load(X, mask=n > 0, other=-1.0)
    tl.store(Z, x)


# ---------------------------------------------------------------- test_subprocess: device_print, device_assert


@triton.jit
def device_print_kernel(X, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("x: ", x)
    tl.store(Z + tl.arange(0, BLOCK), x * 2)


@triton.jit
def device_assert_kernel(X, Z, LIMIT, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_assert(x < LIMIT, "x >= LIMIT")
    tl.store(Z + tl.arange(0, BLOCK), x + 1)


# ---------------------------------------------------------------- test_topk, test_bitonic_merge, squeeze/unsqueeze


@triton.jit
def topk_kernel(X, Z, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    offs_m = tl.arange(0, M)
    x = tl.load(X + offs_m[:, None] * N + tl.arange(0, N)[None, :])
    z = tl.topk(x, K)
    tl.store(Z + offs_m[:, None] * K + tl.arange(0, K)[None, :], z)


@triton.jit
def bitonic_merge_kernel(X, Z, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Z + offs, tl.bitonic_merge(tl.load(X + offs), descending=DESCENDING))


@triton.jit
def squeeze_kernel(X, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)[None, :])
    y = tl.unsqueeze(tl.squeeze(x, 0), 1)
    tl.store(Z + tl.arange(0, N)[:, None], y + 1)


# ---------------------------------------------------------------- test_fp8_fpN_roundtrip


@triton.jit
def fp8_copy_kernel(input_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    input = tl.load(input_ptr + offsets, mask=mask)
    output = input
    tl.store(output_ptr + offsets, output, mask=mask)
