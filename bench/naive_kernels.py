"""Naive kernels: Triton code in the style PyTorch Inductor generates, compiled by BOTH compilers.

This file is never imported as a normal module. :func:`bench.naive.load` executes it twice
under different module names with ``BACKEND`` set first: ``"eggpu"`` (``@eggpu.jit``, ``tl`` is
``eggpu.language``) or ``"triton"`` (``@triton.jit``, ``tl`` is ``triton.language``). The kernel
source text is the same for both: it is what is being compared.

The kernels keep Inductor's habits on purpose, because they are what an optimizer meets in
practice: flattened index math (``x0 = xindex % 768``, ``x1 = xindex // 768``), loads through
computed (broadcast) indices, ``tl.where(mask, x, 0.0)`` around values that are masked anyway,
masks combined with themselves (``rmask & xmask`` where ``xmask`` is all-true), casts to the
dtype a value already has, constants materialized as ``tmpN`` temporaries, and persistent
reductions over a 2-D ``[XBLOCK, RBLOCK]`` block. Sizes are baked in as Inductor does
(``xnumel = ...`` reassigned in the body); see :data:`bench.naive.NAIVE` for each kernel's
shapes, arguments and numpy reference.
"""

# ruff: noqa: F821 - BACKEND is injected by bench.naive.load before this file runs

if BACKEND == "triton":  # pragma: no cover - depends on the loader
    import triton as jitlib
    import triton.language as tl
else:
    import eggpu as jitlib
    import eggpu.language as tl


# ---------------------------------------------------------------- pointwise (triton_poi_*)


@jitlib.jit
def poi_bias_relu(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # out[r, c] = relu(x[r, c] + bias[c]), 768 columns, flattened
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x0 = xindex % 768
    tmp0 = tl.load(in_ptr0 + (x2), xmask)
    tmp1 = tl.load(in_ptr1 + (x0), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0, tl.float32)
    tmp4 = tl.maximum(tmp3, tmp2)
    tl.store(out_ptr0 + (x2), tmp4, xmask)


@jitlib.jit
def poi_gelu(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # exact (erf) GELU as Inductor spells it: every constant a temporary
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
    tmp1 = 0.5
    tmp2 = tmp0 * tmp1
    tmp3 = 0.7071067811865476
    tmp4 = tmp0 * tmp3
    tmp5 = tl.math.erf(tmp4)
    tmp6 = 1.0
    tmp7 = tmp5 + tmp6
    tmp8 = tmp2 * tmp7
    tl.store(out_ptr0 + (x0), tmp8, xmask)


@jitlib.jit
def poi_row_col_affine(in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # out[r, c] = x[r, c] * scale[r] + shift[c]: one row index, one column index, both broadcast
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x1 = (xindex // 768)
    x0 = xindex % 768
    tmp0 = tl.load(in_ptr0 + (x2), xmask)
    tmp1 = tl.load(in_ptr1 + (x1), xmask, eviction_policy='evict_last')
    tmp3 = tl.load(in_ptr2 + (x0), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 * tmp1
    tmp4 = tmp2 + tmp3
    tl.store(out_ptr0 + (x2), tmp4, xmask)


@jitlib.jit
def poi_permute(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # out[a, b, c] = x[b, a, c] for x of shape (32, 16, 64): a permute(1, 0, 2).contiguous()
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex % 64
    x1 = (xindex // 64) % 32
    x2 = (xindex // 2048)
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + (64 * x2) + (1024 * x1)), xmask)
    tl.store(out_ptr0 + (x3), tmp0, xmask)


@jitlib.jit
def poi_masked_fill(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # out = where(keep[c] != 0, x, 0.0) * 2.0 with an i8 keep mask per column (768 columns)
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x0 = xindex % 768
    tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last').to(tl.int1)
    tmp1 = tl.load(in_ptr1 + (x2), xmask)
    tmp2 = 0.0
    tmp3 = tl.where(tmp0, tmp1, tmp2)
    tmp4 = 2.0
    tmp5 = tmp3 * tmp4
    tl.store(out_ptr0 + (x2), tmp5, xmask)


@jitlib.jit
def poi_cast_chain(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # f16 inputs computed in f32 and stored back as f16, with the upcasts Inductor emits
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
    tmp1 = tmp0.to(tl.float32)
    tmp2 = tl.load(in_ptr1 + (x0), xmask).to(tl.float32)
    tmp3 = tmp2.to(tl.float32)
    tmp4 = tmp1 * tmp3
    tmp5 = tmp4.to(tl.float16)
    tmp6 = tmp5.to(tl.float32)
    tmp7 = tmp6 + tmp1
    tmp8 = tmp7.to(tl.float16)
    tl.store(out_ptr0 + (x0), tmp8, xmask)


@jitlib.jit
def poi_cat(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # torch.cat([a, b], dim=1) of two (rows, 256) arrays into (rows, 512)
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex % 512
    x1 = (xindex // 512)
    x2 = xindex
    tmp0 = x0
    tmp1 = tl.full([1], 0, tl.int64)
    tmp2 = tmp0 >= tmp1
    tmp3 = tl.full([1], 256, tl.int64)
    tmp4 = tmp0 < tmp3
    tmp5 = tl.load(in_ptr0 + ((256 * x1) + (x0)), tmp4 & xmask, other=0.0)
    tmp6 = tl.where(tmp4, tmp5, 0.0)
    tmp7 = tmp0 >= tmp3
    tmp8 = tl.full([1], 512, tl.int64)
    tmp9 = tmp0 < tmp8
    tmp10 = tmp7 & tmp9
    tmp11 = tl.load(in_ptr1 + ((256 * x1) + ((-256) + x0)), tmp10 & xmask, other=0.0)
    tmp12 = tl.where(tmp10, tmp11, 0.0)
    tmp13 = tl.where(tmp4, tmp6, tmp12)
    tmp14 = tl.where(tmp2, tmp13, 0.0)
    tl.store(out_ptr0 + (x2), tmp14, xmask)


@jitlib.jit
def poi_embedding(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # out[t, c] = table[idx[t], c] with negative indices wrapped (vocab 1000, 128 columns)
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x1 = (xindex // 128)
    x0 = xindex % 128
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (x1), xmask, eviction_policy='evict_last')
    tmp1 = tl.full([XBLOCK], 1000, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tmp5 = tl.load(in_ptr1 + (x0 + (128 * tmp4)), xmask)
    tl.store(out_ptr0 + (x2), tmp5, xmask)


@jitlib.jit
def poi_silu_mul(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # SwiGLU: out[r, c] = silu(x[r, c]) * x[r, 512 + c] for x of shape (rows, 1024)
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex % 512
    x1 = (xindex // 512)
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + (1024 * x1)), xmask)
    tmp5 = tl.load(in_ptr0 + (512 + x0 + (1024 * x1)), xmask)
    tmp1 = tmp0.to(tl.float32)
    tmp2 = tl.sigmoid(tmp1)
    tmp3 = tmp1 * tmp2
    tmp4 = tmp3.to(tl.float32)
    tmp6 = tmp4 * tmp5
    tl.store(out_ptr0 + (x2), tmp6, xmask)


# ---------------------------------------------------------------- reductions (triton_per_*, triton_red_*)


@jitlib.jit
def per_softmax(in_ptr0, out_ptr2, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    # softmax over rows of 768 as a persistent reduction: the whole row in one [XBLOCK, RBLOCK] block
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rindex = tl.arange(0, RBLOCK)[None, :]
    rmask = rindex < rnumel
    r1 = rindex
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r1 + (768 * x0)), rmask & xmask, other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])
    tmp3 = tl.where(rmask & xmask, tmp1, float("-inf"))
    tmp4 = tl.max(tmp3, 1)[:, None]
    tmp5 = tmp0 - tmp4
    tmp6 = tl.exp(tmp5)
    tmp7 = tl.broadcast_to(tmp6, [XBLOCK, RBLOCK])
    tmp9 = tl.where(rmask & xmask, tmp7, 0)
    tmp10 = tl.sum(tmp9, 1)[:, None]
    tmp11 = tmp6 / tmp10
    tl.store(out_ptr2 + (r1 + (768 * x0)), tmp11, rmask & xmask)


@jitlib.jit
def per_layernorm(in_ptr0, in_ptr1, in_ptr2, out_ptr2, xnumel, rnumel, XBLOCK: tl.constexpr,
                  RBLOCK: tl.constexpr):
    # layer norm over rows of 768 (eps 1e-5), persistent, with Inductor's Welford-free two-pass form
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rindex = tl.arange(0, RBLOCK)[None, :]
    rmask = rindex < rnumel
    r1 = rindex
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r1 + (768 * x0)), rmask & xmask, other=0.0)
    tmp21 = tl.load(in_ptr1 + (r1), rmask, eviction_policy='evict_last', other=0.0)
    tmp23 = tl.load(in_ptr2 + (r1), rmask, eviction_policy='evict_last', other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])
    tmp3 = tl.where(rmask & xmask, tmp1, 0)
    tmp4 = tl.sum(tmp3, 1)[:, None]
    tmp5 = tl.full([XBLOCK, 1], 768, tl.int32)
    tmp6 = tmp5.to(tl.float32)
    tmp7 = tmp4 / tmp6
    tmp8 = tmp0 - tmp7
    tmp9 = tmp8 * tmp8
    tmp10 = tl.broadcast_to(tmp9, [XBLOCK, RBLOCK])
    tmp12 = tl.where(rmask & xmask, tmp10, 0)
    tmp13 = tl.sum(tmp12, 1)[:, None]
    tmp14 = 768.0
    tmp15 = tmp13 / tmp14
    tmp16 = 1e-05
    tmp17 = tmp15 + tmp16
    tmp18 = tl.math.rsqrt(tmp17)
    tmp19 = tmp8 * tmp18
    tmp22 = tmp19 * tmp21
    tmp24 = tmp22 + tmp23
    tl.store(out_ptr2 + (r1 + (768 * x0)), tmp24, rmask & xmask)


@jitlib.jit
def red_row_sum(in_ptr0, out_ptr0, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    # sum over rows of 3000 with a looped reduction and Inductor's where-guarded accumulator
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        r1 = rindex
        tmp0 = tl.load(in_ptr0 + (r1 + (3000 * x0)), rmask & xmask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])
        tmp3 = _tmp2 + tmp1
        _tmp2 = tl.where(rmask & xmask, tmp3, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
