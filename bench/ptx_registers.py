"""ptxas register counts of PTX under LLVM/llvmlite options and IR styles (no GPU, no Triton).

Why did Triton's PTX use 1.3-1.6x fewer registers than llvmlite's defaults on the same IR?
This benchmark measures how ``ptxas -v`` register and spill counts (and the PTX instruction
count) move with

* pipeline options (``eggpu.codegen.ptx.PtxOptions``): the LLVM IR pipeline (the LICM-free
  ``light`` default, ``default<O1/O3>``, none), the target machine's codegen level,
  ``-nvptx-sched4reg``, ``-nvptx-short-ptr``, ``-nvptx-mad-wide-opt`` — on the real lowering
  of library kernels (``eggpu.codegen.lower``, when importable) and on four proxy kernels;
* IR style (what a lowering emits), on the proxies: 64- vs 32-bit index arithmetic,
  ``addrspace(1)`` pointer parameters vs generic ones, ``noalias``, ``nounwind``, ``align 16``
  parameters, ``contract`` fast-math flags, and a fast path for masked chunks.

Proxy kernels (hand-built LLVM IR, f32, 4 warps):

* ``vector_add``  BLOCK=1024, 8 elements/thread, masked ``llvm.masked.load/store`` in chunks of 4;
* ``softmax``     one row of <=1024 columns per program: max and sum reductions (per thread,
  ``shfl.sync.bfly``, shared memory across warps), ``__nv_expf``, division;
* ``layer_norm``  one row: mean and variance reductions, ``__nv_rsqrtf``, weight and bias;
* ``matmul``      64x64 C tile, K loop of 32 through shared memory, 4x8 accumulators/thread.

Usage: ``python bench/ptx_registers.py [--target sm_90] [--library issue|all|none]
[--ll FILE.ll:ENTRY ...] [--llvm-option=-disable-cgp ...] [--quick]``. Extra ``--ll`` modules
are measured under the pipeline options; ``--llvm-option`` sets any LLVM command-line switch
for the whole run. Prints Markdown tables; see docs/codegen.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

import llvmlite.binding as llvm
from llvmlite import ir

from eggpu.codegen.ptx import PtxOptions, emit_ptx, entry_point_name, initialize_llvm, mark_kernel
from eggpu.codegen.ptxas import run_ptxas
from eggpu.codegen.target import get_target
from eggpu.ir.errors import EggpuError

F32 = ir.FloatType()
I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()
NUM_WARPS = 4
THREADS = NUM_WARPS * 32


@dataclass(frozen=True)
class Style:
    """How the lowering writes the IR (each field is one measured choice)."""

    index64: bool = False  # element offsets computed in i64 (else i32, widened once per address)
    global_params: bool = True  # pointer params are ``ptr addrspace(1)`` (else generic ``ptr``)
    noalias: bool = False  # ``noalias`` on pointer params
    nounwind: bool = True  # ``nounwind`` on the kernel
    align16: bool = False  # pointer params ``align 16`` (vector loads may use it)
    fast_math: bool = False  # ``contract`` on fadd/fmul (passed to emit_ptx as fast_math)
    chunk_fast_path: bool = False  # masked chunk: plain vector access when all 4 lanes are in bounds


class KB:
    """A tiny kernel builder over llvmlite.ir with the lowering's idioms."""

    def __init__(self, name: str, params: list[str], style: Style):
        self.style = style
        self.m = ir.Module(name)
        self.ptr = ir.PointerType(addrspace=1) if style.global_params else ir.PointerType()
        types = [self.ptr if p.startswith("*") else I32 for p in params]
        self.fn = ir.Function(self.m, ir.FunctionType(VOID, types), entry_point_name(name))
        for arg, p in zip(self.fn.args, params):
            arg.name = p.lstrip("*")
            if p.startswith("*"):
                if style.noalias:
                    arg.add_attribute("noalias")
                if style.align16:
                    arg.attributes.align = 16
        if style.nounwind:
            self.fn.attributes.add("nounwind")
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.it = I64 if style.index64 else I32
        self.flags = ("contract",) if style.fast_math else ()
        self._decls: dict[str, ir.Function] = {}

    # -- declarations
    def decl(self, name: str, ret, args) -> ir.Function:
        if name not in self._decls:
            self._decls[name] = ir.Function(self.m, ir.FunctionType(ret, args), name)
        return self._decls[name]

    def sreg(self, which: str) -> ir.Value:
        return self.b.call(self.decl(f"llvm.nvvm.read.ptx.sreg.{which}", I32, []), [])

    def arg(self, name: str) -> ir.Value:
        return next(a for a in self.fn.args if a.name == name)

    # -- index arithmetic in the style's index type
    def idx(self, v: ir.Value | int) -> ir.Value:
        if isinstance(v, int):
            return ir.Constant(self.it, v)
        if v.type == self.it:
            return v
        return self.b.sext(v, self.it)

    def addr(self, ptr: ir.Value, off: ir.Value, ty=F32) -> ir.Value:
        return self.b.gep(ptr, [off], source_etype=ty, inbounds=True)

    # -- float arithmetic with the style's flags
    def fadd(self, a, b):
        return self.b.fadd(a, b, flags=self.flags)

    def fsub(self, a, b):
        return self.b.fsub(a, b, flags=self.flags)

    def fmul(self, a, b):
        return self.b.fmul(a, b, flags=self.flags)

    def fmax(self, a, b):
        return self.b.call(self.decl(f"llvm.maxnum.{_tname(a.type)}", a.type, [a.type, a.type]), [a, b])

    def libdevice(self, name: str, x: ir.Value) -> ir.Value:
        return self.b.call(self.decl(name, F32, [F32]), [x])

    # -- masked vector access, chunks of 4 contiguous elements
    def _chunk_mask(self, off, n):
        mask = ir.Constant(ir.VectorType(I1, 4), None)
        for j in range(4):
            ok = self.b.icmp_signed("<", self.b.add(off, self.idx(j)), n)
            mask = self.b.insert_element(mask, ok, ir.Constant(I32, j))
        return mask

    def masked_load(self, ptr, off, n, other: float) -> list[ir.Value]:
        vt = ir.VectorType(F32, 4)
        align = 16 if self.style.align16 else 4
        addr = self.addr(ptr, off)
        fn = self.decl(
            f"llvm.masked.load.v4f32.p{self.ptr.addrspace}", vt, [self.ptr, I32, ir.VectorType(I1, 4), vt]
        )
        fill = ir.Constant(vt, [other] * 4)
        if not self.style.chunk_fast_path:
            v = self.b.call(fn, [addr, ir.Constant(I32, align), self._chunk_mask(off, n), fill])
        else:
            full = self.b.icmp_signed("<", self.b.add(off, self.idx(3)), n)
            with self.b.if_else(full) as (then, otherwise):
                with then:
                    v_fast = self.b.load(addr, typ=vt, align=align)
                    b_fast = self.b.block
                with otherwise:
                    v_slow = self.b.call(fn, [addr, ir.Constant(I32, align), self._chunk_mask(off, n), fill])
                    b_slow = self.b.block
            v = self.b.phi(vt)
            v.add_incoming(v_fast, b_fast)
            v.add_incoming(v_slow, b_slow)
        return [self.b.extract_element(v, ir.Constant(I32, j)) for j in range(4)]

    def masked_store(self, ptr, off, n, vals: list[ir.Value]) -> None:
        vt = ir.VectorType(F32, 4)
        vec = ir.Constant(vt, None)
        for j in range(4):
            vec = self.b.insert_element(vec, vals[j], ir.Constant(I32, j))
        fn = self.decl(
            f"llvm.masked.store.v4f32.p{self.ptr.addrspace}", VOID, [vt, self.ptr, I32, ir.VectorType(I1, 4)]
        )
        align = 16 if self.style.align16 else 4
        addr = self.addr(ptr, off)
        if not self.style.chunk_fast_path:
            self.b.call(fn, [vec, addr, ir.Constant(I32, align), self._chunk_mask(off, n)])
            return
        full = self.b.icmp_signed("<", self.b.add(off, self.idx(3)), n)
        with self.b.if_else(full) as (then, otherwise):
            with then:
                self.b.store(vec, addr, align=align)
            with otherwise:
                self.b.call(fn, [vec, addr, ir.Constant(I32, align), self._chunk_mask(off, n)])

    # -- CTA reductions: per thread, warp butterfly shuffles, shared memory across warps
    def cta_reduce(self, vals: list[ir.Value], op: Callable, smem: ir.GlobalVariable) -> ir.Value:
        acc = vals[0]
        for v in vals[1:]:
            acc = op(acc, v)
        shfl = self.decl("llvm.nvvm.shfl.sync.bfly.f32", F32, [I32, F32, I32, I32])
        full = ir.Constant(I32, 0xFFFFFFFF)
        for k in (16, 8, 4, 2, 1):
            acc = op(acc, self.b.call(shfl, [full, acc, ir.Constant(I32, k), ir.Constant(I32, 31)]))
        tid = self.sreg("tid.x")
        warp = self.b.lshr(tid, ir.Constant(I32, 5))
        lane = self.b.and_(tid, ir.Constant(I32, 31))
        zero = ir.Constant(I32, 0)
        barrier = self.decl("llvm.nvvm.barrier0", VOID, [])
        self.b.call(barrier, [])  # the buffer may still be read by a previous reduction
        is_lane0 = self.b.icmp_unsigned("==", lane, zero)
        with self.b.if_then(is_lane0):
            self.b.store(acc, self.b.gep(smem, [zero, warp], inbounds=True))
        self.b.call(barrier, [])
        total = self.b.load(self.b.gep(smem, [zero, zero], inbounds=True), typ=F32)
        for w in range(1, NUM_WARPS):
            total = op(
                total, self.b.load(self.b.gep(smem, [zero, ir.Constant(I32, w)], inbounds=True), typ=F32)
            )
        return total

    def shared(self, name: str, n: int) -> ir.GlobalVariable:
        g = ir.GlobalVariable(self.m, ir.ArrayType(F32, n), name, addrspace=3)
        g.linkage = "internal"
        g.align = 16
        g.initializer = ir.Constant(ir.ArrayType(F32, n), None)
        return g

    def finish(self) -> str:
        self.b.ret_void()
        mark_kernel(self.m, self.fn.name, THREADS)
        return str(self.m)


def _tname(t) -> str:
    return "f32" if t == F32 else str(t)


def vector_add(style: Style) -> str:
    k = KB("vector_add", ["*x", "*y", "*out", "n"], style)
    ept, block = 8, 1024
    pid, tid = k.sreg("ctaid.x"), k.sreg("tid.x")
    base = k.b.add(k.b.mul(k.idx(pid), k.idx(block)), k.b.mul(k.idx(tid), k.idx(ept)))
    n = k.idx(k.arg("n"))
    for c in range(0, ept, 4):
        off = k.b.add(base, k.idx(c))
        xs = k.masked_load(k.arg("x"), off, n, 0.0)
        ys = k.masked_load(k.arg("y"), off, n, 0.0)
        k.masked_store(k.arg("out"), off, n, [k.fadd(a, b) for a, b in zip(xs, ys)])
    return k.finish()


def _row_setup(k: KB, ept: int):
    pid, tid = k.sreg("ctaid.x"), k.sreg("tid.x")
    ncols = k.idx(k.arg("n_cols"))
    row = k.b.mul(k.idx(pid), k.idx(k.arg("row_stride")))
    col0 = k.b.mul(k.idx(tid), k.idx(ept))
    return ncols, row, col0


def _load_row(k: KB, ptr, row, col0, ncols, ept, other):
    vals = []
    for c in range(0, ept, 4):
        col = k.b.add(col0, k.idx(c))
        vals += k.masked_load(k.b.gep(ptr, [row], source_etype=F32, inbounds=True), col, ncols, other)
    return vals


def _store_row(k: KB, ptr, row, col0, ncols, ept, vals):
    for c in range(0, ept, 4):
        col = k.b.add(col0, k.idx(c))
        k.masked_store(k.b.gep(ptr, [row], source_etype=F32, inbounds=True), col, ncols, vals[c : c + 4])


def softmax(style: Style) -> str:
    k = KB("softmax", ["*x", "*out", "n_cols", "row_stride"], style)
    ept = 8
    ncols, row, col0 = _row_setup(k, ept)
    smem = k.shared("red", NUM_WARPS)
    xs = _load_row(k, k.arg("x"), row, col0, ncols, ept, float("-inf"))
    mx = k.cta_reduce(xs, k.fmax, smem)
    es = [k.libdevice("__nv_expf", k.fsub(x, mx)) for x in xs]
    total = k.cta_reduce(es, k.fadd, smem)
    ys = [k.b.fdiv(e, total) for e in es]
    _store_row(k, k.arg("out"), row, col0, ncols, ept, ys)
    return k.finish()


def layer_norm(style: Style) -> str:
    k = KB("layer_norm", ["*x", "*w", "*b", "*out", "n_cols", "row_stride"], style)
    ept = 8
    ncols, row, col0 = _row_setup(k, ept)
    smem = k.shared("red", NUM_WARPS)
    xs = _load_row(k, k.arg("x"), row, col0, ncols, ept, 0.0)
    nf = k.b.sitofp(k.arg("n_cols"), F32)
    mean = k.b.fdiv(k.cta_reduce(xs, k.fadd, smem), nf)
    diffs = []
    for c, x in enumerate(xs):
        inb = k.b.icmp_signed("<", k.b.add(col0, k.idx(c)), ncols)
        diffs.append(k.b.select(inb, k.fsub(x, mean), ir.Constant(F32, 0.0)))
    var = k.b.fdiv(k.cta_reduce([k.fmul(d, d) for d in diffs], k.fadd, smem), nf)
    rstd = k.libdevice("__nv_rsqrtf", k.fadd(var, ir.Constant(F32, 1e-5)))
    zero = k.idx(0)
    ws = _load_row(k, k.arg("w"), zero, col0, ncols, ept, 0.0)
    bs = _load_row(k, k.arg("b"), zero, col0, ncols, ept, 0.0)
    ys = [k.fadd(k.fmul(k.fmul(d, rstd), w), bb) for d, w, bb in zip(diffs, ws, bs)]
    _store_row(k, k.arg("out"), row, col0, ncols, ept, ys)
    return k.finish()


def matmul(style: Style) -> str:
    """C[64x64 tile] = A[M,K] @ B[K,N], row-major, K loop of 32 via shared memory."""
    k = KB("matmul", ["*a", "*b", "*c", "M", "N", "K"], style)
    bm, bn, bk = 64, 64, 32
    tm_, tn = 4, 8  # per-thread accumulator tile: 16 x 8 threads cover 64 x 64
    b = k.b
    sa = k.shared("sa", bm * bk)
    sb = k.shared("sb", bk * bn)
    tid = k.sreg("tid.x")
    pm, pn = k.sreg("ctaid.x"), k.sreg("ctaid.y")
    M, N, K = (k.idx(k.arg(x)) for x in "MNK")
    row0 = b.mul(k.idx(pm), k.idx(bm))
    col0 = b.mul(k.idx(pn), k.idx(bn))
    ty = b.udiv(tid, ir.Constant(I32, bn // tn))  # 0..15
    tx = b.urem(tid, ir.Constant(I32, bn // tn))  # 0..7
    barrier = k.decl("llvm.nvvm.barrier0", VOID, [])
    zero32 = ir.Constant(I32, 0)

    pre = b.block
    loop = k.fn.append_basic_block("kloop")
    done = k.fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    kk = b.phi(k.it, "k0")
    kk.add_incoming(k.idx(0), pre)
    accs = []
    for i in range(tm_ * tn):
        p = b.phi(F32, f"acc{i}")
        p.add_incoming(ir.Constant(F32, 0.0), pre)
        accs.append(p)
    # cooperative tile loads: each thread moves 16 elements of A and 16 of B
    for e in range(bm * bk // THREADS):
        flat = b.add(b.mul(tid, ir.Constant(I32, bm * bk // THREADS)), ir.Constant(I32, e))
        r, c = b.udiv(flat, ir.Constant(I32, bk)), b.urem(flat, ir.Constant(I32, bk))
        gr, gc = b.add(row0, k.idx(r)), b.add(kk, k.idx(c))
        ok = b.and_(b.icmp_signed("<", gr, M), b.icmp_signed("<", gc, K))
        val = _guarded_load(k, k.addr(k.arg("a"), b.add(b.mul(gr, K), gc)), ok)
        b.store(val, b.gep(sa, [zero32, flat], inbounds=True))
    for e in range(bk * bn // THREADS):
        flat = b.add(b.mul(tid, ir.Constant(I32, bk * bn // THREADS)), ir.Constant(I32, e))
        r, c = b.udiv(flat, ir.Constant(I32, bn)), b.urem(flat, ir.Constant(I32, bn))
        gr, gc = b.add(kk, k.idx(r)), b.add(col0, k.idx(c))
        ok = b.and_(b.icmp_signed("<", gr, K), b.icmp_signed("<", gc, N))
        val = _guarded_load(k, k.addr(k.arg("b"), b.add(b.mul(gr, N), gc)), ok)
        b.store(val, b.gep(sb, [zero32, flat], inbounds=True))
    b.call(barrier, [])
    new = list(accs)
    for q in range(bk):
        av = [
            b.load(
                b.gep(
                    sa,
                    [
                        zero32,
                        b.add(
                            b.mul(
                                b.add(b.mul(ty, ir.Constant(I32, tm_)), ir.Constant(I32, i)),
                                ir.Constant(I32, bk),
                            ),
                            ir.Constant(I32, q),
                        ),
                    ],
                    inbounds=True,
                ),
                typ=F32,
            )
            for i in range(tm_)
        ]
        bv = [
            b.load(
                b.gep(
                    sb,
                    [
                        zero32,
                        b.add(
                            ir.Constant(I32, q * bn),
                            b.add(b.mul(tx, ir.Constant(I32, tn)), ir.Constant(I32, j)),
                        ),
                    ],
                    inbounds=True,
                ),
                typ=F32,
            )
            for j in range(tn)
        ]
        for i in range(tm_):
            for j in range(tn):
                new[i * tn + j] = k.fadd(new[i * tn + j], k.fmul(av[i], bv[j]))
    b.call(barrier, [])
    nk = b.add(kk, k.idx(bk))
    cont = b.icmp_signed("<", nk, K)
    latch = b.block
    kk.add_incoming(nk, latch)
    for p, v in zip(accs, new):
        p.add_incoming(v, latch)
    b.cbranch(cont, loop, done)
    b.position_at_end(done)
    for i in range(tm_):
        for j in range(tn):
            r = b.add(row0, k.idx(b.add(b.mul(ty, ir.Constant(I32, tm_)), ir.Constant(I32, i))))
            c = b.add(col0, k.idx(b.add(b.mul(tx, ir.Constant(I32, tn)), ir.Constant(I32, j))))
            ok = b.and_(b.icmp_signed("<", r, M), b.icmp_signed("<", c, N))
            with b.if_then(ok):
                b.store(new[i * tn + j], k.addr(k.arg("c"), b.add(b.mul(r, N), c)))
    return k.finish()


def _guarded_load(k: KB, ptr, ok) -> ir.Value:
    """``ok ? *ptr : 0.0`` with the load under a branch (a masked scalar load)."""
    b = k.b
    before = b.block
    with b.if_then(ok):
        then_block = b.block
        v = b.load(ptr, typ=F32)
    phi = b.phi(F32)
    phi.add_incoming(v, then_block)
    phi.add_incoming(ir.Constant(F32, 0.0), before)
    return phi


KERNELS: dict[str, Callable[[Style], str]] = {
    "vector_add": vector_add,
    "softmax": softmax,
    "layer_norm": layer_norm,
    "matmul": matmul,
}


def measure(text: str, entry: str, target, options: PtxOptions, fast_math: bool) -> tuple[int, int, int]:
    """(registers, spill bytes, PTX instruction count) of one module."""
    res = emit_ptx(text, target, entry=entry, fast_math=fast_math, options=options)
    rep = run_ptxas(res.ptx, target)
    n_instr = sum(
        1
        for ln in res.ptx.splitlines()
        if ln.startswith("\t") and ln.strip() and not ln.strip().startswith(("//", "."))
    )
    return rep.registers, rep.spills, n_instr


def _cell(regs: int, spills: int, n_instr: int) -> str:
    return f"{regs}" + (f"+{spills}s" if spills else "") + f" ({n_instr})"


Module = tuple[str, str, str, bool]  # (column name, LLVM IR text, entry, fast_math)


def table(title: str, target, columns: list[str], rows: list[tuple[str, PtxOptions, list[Module]]]) -> None:
    """One Markdown table: a row per variant, a column per module."""
    print(f"\n## {title} ({target.name}; registers per thread [+spill bytes] (PTX instructions))\n")
    print("| variant | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for label, options, modules in rows:
        cells = []
        for _, text, entry, fast_math in modules:
            try:
                cells.append(_cell(*measure(text, entry, target, options, fast_math)))
            except EggpuError as exc:
                cells.append(f"error: {str(exc).splitlines()[0][:40]}")
        print(f"| {label} | " + " | ".join(cells) + " |")
        sys.stdout.flush()


def proxy_modules(style: Style) -> list[Module]:
    return [(name, build(style), entry_point_name(name), style.fast_math) for name, build in KERNELS.items()]


LIBRARY_DEFAULT = ("vector_add", "softmax_forward", "layer_norm_forward", "matmul")


def library_modules(target, names: tuple[str, ...] | None) -> list[Module]:
    """The real lowering (``eggpu.codegen.lower``) of f32 library kernels at their first test size.

    Returns [] when the lowering or the library is not available (the proxies still run).
    """
    try:
        import numpy as np

        from eggpu.codegen import lower
        from eggpu.ir.dtypes import f32
        from eggpu.kernels import LIBRARY
    except ImportError as exc:  # pragma: no cover - depends on what is installed
        print(f"(library kernels skipped: {exc})")
        return []
    out: list[Module] = []
    for lk in LIBRARY:
        if (names is not None and lk.name not in names) or f32 not in lk.dtypes:
            continue
        try:
            case = lk.make_case(lk.sizes[-1], f32, np.random.default_rng(0))
            lowered = lower(lk.instance(case).ir(), target)
        except EggpuError as exc:
            print(f"(library kernel {lk.name} skipped: {str(exc).splitlines()[0]})")
            continue
        out.append((lk.name, lowered.llvm_ir, lowered.entry, False))
    return out


def _diff_label(base, other) -> str:
    changed = [
        f"{f.name}={getattr(other, f.name)}"
        for f in fields(base)
        if getattr(base, f.name) != getattr(other, f.name)
    ]
    return ", ".join(changed) or "defaults"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--ll", action="append", default=[], metavar="FILE:ENTRY", help="extra LLVM IR module")
    ap.add_argument("--quick", action="store_true", help="only the defaults, O3 and the recommended style")
    ap.add_argument(
        "--library",
        choices=("issue", "all", "none"),
        default="issue",
        help="library kernels lowered by eggpu.codegen: the issue's four (default), all, or none",
    )
    ap.add_argument(
        "--llvm-option",
        action="append",
        default=[],
        metavar="OPT",
        help="extra LLVM command-line option for the whole run, e.g. -disable-cgp",
    )
    args = ap.parse_args(argv)
    if args.llvm_option:
        initialize_llvm()
        for opt in args.llvm_option:
            llvm.set_option("ptx_registers", opt)
        print(f"LLVM options: {' '.join(args.llvm_option)}")
    target = get_target(args.target, num_warps=NUM_WARPS)
    extra: list[Module] = []
    for spec in args.ll:
        path, _, entry = spec.rpartition(":")
        extra.append((Path(path).stem, Path(path).read_text(), entry, False))

    base_opts = PtxOptions()
    base_style = Style()
    pipeline = [
        replace(base_opts, pipeline="none"),
        replace(base_opts, pipeline="O1"),
        replace(base_opts, pipeline="O3"),
        replace(base_opts, pipeline="O3", sched4reg=True, short_pointers=True, mad_wide=True),
        replace(base_opts, codegen_opt_level=2),
        replace(base_opts, sched4reg=True),
        replace(base_opts, short_pointers=True),
        replace(base_opts, mad_wide=False),
    ]
    styles = [
        replace(base_style, index64=True),
        replace(base_style, global_params=False),
        replace(base_style, noalias=True),
        replace(base_style, nounwind=False),
        replace(base_style, align16=True),
        replace(base_style, fast_math=True),
        replace(base_style, chunk_fast_path=True),
        replace(base_style, chunk_fast_path=True, align16=True),
        replace(base_style, chunk_fast_path=True, align16=True, noalias=True),
    ]
    if args.quick:
        pipeline, styles = (
            [replace(base_opts, pipeline="O3")],
            [replace(base_style, chunk_fast_path=True, align16=True)],
        )
    option_rows = [("defaults", base_opts)] + [
        (f"PtxOptions({_diff_label(base_opts, o)})", o) for o in pipeline
    ]

    names = None if args.library == "all" else (() if args.library == "none" else LIBRARY_DEFAULT)
    library = library_modules(target, names) if names != () else []
    if library:
        fast = [(name, text, entry, True) for name, text, entry, _ in library]
        rows = [(label, o, library) for label, o in option_rows]
        rows += [
            ("defaults, fast_math", base_opts, fast),
            ("PtxOptions(pipeline=O3), fast_math", replace(base_opts, pipeline="O3"), fast),
        ]
        table("Library kernels (real lowering, f32), pipeline options", target, [m[0] for m in library], rows)

    modules = proxy_modules(base_style) + extra
    columns = [m[0] for m in modules]
    table(
        "Proxy kernels, pipeline options", target, columns, [(label, o, modules) for label, o in option_rows]
    )
    rows = [("defaults", base_opts, proxy_modules(base_style))]
    rows += [(f"Style({_diff_label(base_style, st)})", base_opts, proxy_modules(st)) for st in styles]
    table("Proxy kernels, IR style (default pipeline)", target, list(KERNELS), rows)

    t0 = time.perf_counter()
    for name, build in KERNELS.items():
        emit_ptx(build(base_style), target, entry=entry_point_name(name))
    print(f"\nemit_ptx time for the four kernels: {(time.perf_counter() - t0) * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
