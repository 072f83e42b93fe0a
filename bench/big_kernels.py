"""The large kernels of ``python -m bench.big``, compiled by BOTH eggpu and Triton.

Never imported as a normal module: :func:`bench.big.kernels` executes this file once per backend
with ``BACKEND`` set first (:mod:`bench.dual`): ``"eggpu"`` (``@eggpu.jit``, ``tl`` is
``eggpu.language``) or ``"triton"`` (``@triton.jit``, ``tl`` is ``triton.language``), so both
compile the same kernel text. The cross-entropy kernel is the library's
(:mod:`eggpu.kernels.losses`; Triton twin in :mod:`bench.triton_kernels`).
"""

# ruff: noqa: F821 - BACKEND is injected by bench.dual.load before this file runs

if BACKEND == "triton":  # pragma: no cover - depends on the loader
    import triton as jitlib
    import triton.language as tl
else:
    import eggpu as jitlib
    import eggpu.language as tl


@jitlib.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                    stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                    BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    """Triton tutorial 03's matmul kernel (grouped program order), without the activation."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@jitlib.jit
def masked_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """``y = 2x + 1`` on a masked 1-D block."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x * 2.0 + 1.0, mask=mask)


@jitlib.jit
def attn_bwd(Q, K, V, DO, M, D, DK, DV, N_CTX, BLOCK: tl.constexpr, HEAD: tl.constexpr):
    """The fused-attention backward shape (dk/dv part); tests/codegen/big_kernels.py runs this one on the CPU."""
    offs_n = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, HEAD)
    kv_offs = offs_n[:, None] * HEAD + offs_d[None, :]
    k = tl.load(K + kv_offs)
    v = tl.load(V + kv_offs)
    dk = tl.zeros((BLOCK, HEAD), dtype=tl.float32)
    dv = tl.zeros((BLOCK, HEAD), dtype=tl.float32)
    psum = tl.zeros((BLOCK,), dtype=tl.float32)
    for start_m in range(0, N_CTX, BLOCK):
        offs_m = start_m + tl.arange(0, BLOCK)
        q_offs = offs_m[:, None] * HEAD + offs_d[None, :]
        q = tl.load(Q + q_offs)
        do = tl.load(DO + q_offs)
        m = tl.load(M + offs_m)
        p_t = tl.exp(tl.dot(k, tl.trans(q)) - m[None, :])
        dv += tl.dot(p_t, do)
        di = tl.load(D + offs_m)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - di[None, :])
        dk += tl.dot(ds_t, q)
        psum += tl.sum(p_t, axis=1)
    tl.store(DK + kv_offs, dk)
    tl.store(DV + kv_offs, dv * (1.0 / (1.0 + psum[:, None])))


@jitlib.jit
def attn_fwd(Q, K, V, Out, N_CTX, sm_scale, BLOCK: tl.constexpr, HEAD: tl.constexpr):
    """The fused-attention forward pass (Triton tutorial 06's inner loop, one head, no causal
    mask): online softmax over key tiles with two ``tl.dot`` per tile."""
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(Q + offs_m[:, None] * HEAD + offs_d[None, :])
    m_i = tl.zeros((BLOCK,), dtype=tl.float32) - 1.0e30
    l_i = tl.zeros((BLOCK,), dtype=tl.float32)
    acc = tl.zeros((BLOCK, HEAD), dtype=tl.float32)
    for start_n in range(0, N_CTX, BLOCK):
        offs_n = start_n + tl.arange(0, BLOCK)
        k = tl.load(K + offs_n[:, None] * HEAD + offs_d[None, :])
        v = tl.load(V + offs_n[:, None] * HEAD + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_ij
    tl.store(Out + offs_m[:, None] * HEAD + offs_d[None, :], acc / l_i[:, None])
