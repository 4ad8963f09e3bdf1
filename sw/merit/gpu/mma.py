"""Tensor-core kernels (``mma.sync``) for Dot-like problems: TF32, FP16 or BF16 operands, fp32 sums.

A problem runs on the tensor cores when its strategy is the dot product (state ``T acc``, PreLoop
``acc = 0``, Loop ``acc += in0 * in1``, any PostLoop) in one level, and its two loop inputs split
the parallel indices: the *rows* move only one of them (A), the *columns* only the other (B).
Indices that move both (the group of a grouped convolution) or neither take one value per block.
That is an implicit GEMM, written from the same transforms as the SIMT kernel:

- the block's box over the parallel indices (``Tile.regs``) holds ``WM * FM * 16`` rows (the row
  indices' box, C order) and ``WN * FN * 8`` columns; warp (wm, wn) computes ``FM x FN`` fragments
  of 16 x 8 outputs with ``mma.sync.m16n8k8`` (TF32) or ``m16n8k16`` (FP16, BF16);
- the accumulation tile (``chunk`` values of a0, all of the others) is flattened in C order into
  k; a table in shared memory gives, per k, the offset of both inputs' elements in their
  footprints (``ktab``), so that a fragment element is ``footprint[row offset + ktab[k]]``;
- the footprints (Eq. 9) are the SIMT kernel's: the same cooperative ``cp.async`` copies, zero
  fill or clamped coordinates at the boundaries, double buffering, bank-conflict padding (chosen
  here for the fragment reads);
- operands stay fp32 in device and shared memory; each fragment element is rounded to the
  precision when it is read (TF32: to nearest, ties away, with integer operations on the bits;
  FP16 / BF16: ``cvt.rn.f16x2.f32``, ``cvt.rn.bf16x2.f32``),
  the products are summed in fp32; the PostLoop runs on each sum as in the SIMT kernel.
"""

import math
import re
from dataclasses import dataclass

from .tile import Tile, extents, geometry

__all__ = ["Roles", "roles", "KSTEP", "candidates", "estimate", "conflicts", "source",
           "ktab_words", "pad_step"]

#: k of one ``mma.sync`` per operand precision.
KSTEP = {"tf32": 8, "fp16": 16, "bf16": 16}
#: Dense multiply-adds per clock per SM the ``mma.sync`` path is modelled to sustain.
RATE = {"tf32": 256.0, "fp16": 512.0, "bf16": 512.0}
_WARPS = ((1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4), (4, 2), (2, 4))


@dataclass(frozen=True)
class Roles:
    """Which input gives the rows (``a``) and the columns (``b``) and the indices of each."""

    a: int
    b: int
    rows: tuple
    cols: tuple


def _norm(text):
    return re.sub(r"\s+", "", text)


def roles(spec):
    """The :class:`Roles` of a problem the tensor cores can run, or None."""
    if spec.dtype != "float32" or spec.out_dtype != "float32" or spec.na == 0:
        return None
    if len(spec.levels) != 1 or spec.outputs != 1:
        return None
    body = spec.body
    if (_norm(body.get("state", "")) != "Tacc;" or _norm(body["loop"]) != "acc+=in0*in1;"
            or [_norm(x) for x in body["pre"]] != ["acc=0;"]):
        return None
    if [k for k, op in enumerate(spec.inputs) if op.stage == "loop"] != [0, 1]:
        return None
    side = {0: [], 1: []}
    for j in range(spec.np):
        if spec.pshape[j] == 1:
            continue
        m0, m1 = spec.inputs[0].moves(j), spec.inputs[1].moves(j)
        if m0 != m1:
            side[0 if m0 else 1].append(j)
    ext = {k: math.prod(spec.pshape[j] for j in side[k]) for k in (0, 1)}
    a = 0 if ext[0] >= ext[1] else 1
    if ext[a] < 16 or ext[1 - a] < 8:
        return None
    return Roles(a, 1 - a, tuple(side[a]), tuple(side[1 - a]))


def _pow2ceil(n):
    return 1 << max(0, (n - 1).bit_length())


def box(spec, r, bm, bn):
    """Per parallel index, the block's extent: ``bm`` rows over ``r.rows`` and ``bn`` columns over
    ``r.cols`` (powers of two, innermost index first; the outermost takes the rest)."""
    ext = [1] * spec.np
    for idxs, total in ((r.rows, bm), (r.cols, bn)):
        rest = total
        for j in reversed(idxs):
            e = rest if j == idxs[0] else min(rest, _pow2ceil(spec.pshape[j]))
            ext[j] = e
            rest //= e
    return tuple(ext)


def _decompose(n, exts):
    """Digits of ``n`` in the mixed radix ``exts`` (C order)."""
    out = []
    for e in reversed(exts):
        out.append(n % e)
        n //= e
    return out[::-1]


def ktab_words(spec, tile):
    """Shared words of the k table (two ints per padded k)."""
    ks = KSTEP[tile.mma]
    return 2 * _kpad(spec, tile, ks)


def _kc(spec, tile):
    return min(tile.chunk, spec.ashape[0]) * math.prod(spec.ashape[1:])


def _kpad(spec, tile, ks):
    return -(-_kc(spec, tile) // ks) * ks


def _koff(spec, tile, k, g, kk):
    """Offset of input k's element for flattened accumulation position ``kk`` in its footprint."""
    ext = extents(spec, tile)[spec.np:]
    if kk >= math.prod(ext):
        return 0
    digits = _decompose(kk, ext)
    tr = spec.inputs[k].transform
    off = 0
    for ax, terms in enumerate(tr.terms):
        for pos, s in terms:
            if pos >= spec.np:
                off += digits[pos - spec.np] * g.coef(ax, s)
    return off


def _line_offset(spec, tile, k, g, idxs, n):
    """Offset of input k's element for row (or column) ``n`` of the block over ``idxs``."""
    rel = dict(zip(idxs, _decompose(n, [tile.regs[j] for j in idxs]), strict=True))
    tr = spec.inputs[k].transform
    off = sum(g.coef(ax, g.shift[ax]) for ax in range(len(g.sides)))
    for ax, terms in enumerate(tr.terms):
        for pos, s in terms:
            if pos < spec.np:
                off += rel.get(pos, 0) * g.coef(ax, s)
    return off


def _affine_k(spec, tile, k, g):
    """The stride s when input k's offset of every flattened accumulation position kk of a tile
    is ``kk * s``, else None."""
    kc = _kc(spec, tile)
    s = _koff(spec, tile, k, g, 1) if kc > 1 else 0
    return s if all(_koff(spec, tile, k, g, kk) == kk * s for kk in range(kc)) else None


def pad_step(spec, tile, k):
    """Padding step of input k's pitches: 2 words where FP16 / BF16 pairs can be read 8 bytes at a
    time (unit stride in k), which an odd pitch would misalign; else 1."""
    if tile.mma == "tf32" or _affine_k(spec, tile, k, geometry(spec, tile, k)) != 1:
        return 1
    return 2


def _even_lines(spec, tile, k, g, idxs):
    """Whether every row (or column) of the block starts at an even offset of input k's buffer
    (buffers start 16-byte aligned; a run-time misalignment makes it unknown)."""
    if g.vector and not g.aligned:
        return False
    n = math.prod(tile.regs[j] for j in idxs)
    return all(_line_offset(spec, tile, k, g, idxs, q) % 2 == 0 for q in range(n))


def conflicts(spec, tile, k):
    """Bank-conflict degree of input k's fragment reads (first k step, warp 0, first fragment)."""
    from merit.mapping.bank import BankFunction

    r = roles(spec)
    g = geometry(spec, tile, k)
    is_a = k == r.a
    addrs = []
    for lane in range(32):
        gq, tq = lane >> 2, lane & 3
        kk = tq if tile.mma == "tf32" else 2 * tq
        line = _line_offset(spec, tile, k, g, r.rows if is_a else r.cols, gq)
        addrs.append(line + _koff(spec, tile, k, g, kk))
    banks = BankFunction(32).bank(addrs)
    per_bank = {}
    for a, b in zip(addrs, banks.tolist(), strict=True):
        per_bank.setdefault(b, set()).add(a)
    return max(len(v) for v in per_bank.values())


def _chunks(spec, tile, cap):
    """Chunks of a0 whose two footprint buffers and k table fit ``cap`` bytes, k up to 256."""
    a0 = spec.ashape[0]
    rest = math.prod(spec.ashape[1:])
    opts = {c for c in (1, 2, 4, 8, 16, 32, 64, a0) if c <= a0}
    opts |= {d for d in range(1, min(a0, 64) + 1) if a0 % d == 0}
    out = []
    for c in sorted(opts):
        if c > 1 and c * rest > 512:
            continue
        t = Tile(tile.threads, tile.regs, c, mma=tile.mma, warps=tile.warps, frags=tile.frags)
        words = sum(geometry(spec, t, k).words + 8 for k in (0, 1))
        if (2 * words + ktab_words(spec, t)) * 4 <= cap:
            out.append(c)
    return out


def candidates(spec, precision, cap, big_cap=None):
    """Tensor-core tiles for ``spec`` (``threads`` all 1, ``regs`` the box), before padding.

    Chunks: the two largest whose buffers fit ``cap`` (two blocks per SM), and the two largest
    that fit ``big_cap`` (one block per SM, longer accumulation tiles)."""
    r = roles(spec)
    if r is None:
        return
    P = spec.np
    shapes = []
    for wm, wn in _WARPS:
        for fm in (1, 2, 4):
            for fn in (1, 2, 4, 8):
                if fm * fn > 32:
                    continue
                bm, bn = wm * fm * 16, wn * fn * 8
                if bm > 256 or bn > 256:
                    continue
                ext = box(spec, r, bm, bn)
                padded = math.prod(-(-n // b) * b for n, b in zip(spec.pshape, ext, strict=True))
                shapes.append((padded / math.prod(spec.pshape), ext, (wm, wn), (fm, fn)))
    # at most 35 % of the blocks' outputs wasted on ragged edges, or the least waste possible
    limit = max(1.35, 1.05 * min(s[0] for s in shapes))
    for waste, ext, warps, frags in shapes:
        if waste > limit:
            continue
        t = Tile((1,) * P, ext, 1, mma=precision, warps=warps, frags=frags)
        # the largest chunks that fit: fewer, longer accumulation tiles
        chunks = set(_chunks(spec, t, cap)[-2:])
        if big_cap:
            chunks |= set(_chunks(spec, t, big_cap)[-2:])
        for c in sorted(chunks):
            yield Tile((1,) * P, ext, c, mma=precision, warps=warps, frags=frags)


def estimate(spec, tile, device, smem_cap):
    """Cost-model time of a tensor-core tile in SM clocks, or None if it cannot run."""
    prec = tile.mma
    ks = KSTEP[prec]
    wm, wn = tile.warps
    fm, fn = tile.frags
    nt = tile.nthreads
    grid = [-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)]
    nb = math.prod(grid)
    chunk = min(tile.chunk, spec.ashape[0])
    ntiles = -(-spec.ashape[0] // chunk)
    ksteps = -(-_kc(spec, tile) // ks)
    per = 1 if prec == "tf32" else 2
    lds = (fm * 4 + fn * 2) * per + 2 * per
    cvt = fm * 4 + fn * 2
    mma = fm * fn
    issue_step = lds + cvt + mma + (fm * 4 + fn * 2) * per
    smem = 0
    copy_instr = 0.0
    gl_bytes = 0.0
    for k in (0, 1):
        g = geometry(spec, tile, k)
        smem += g.words * 4 * 2
        copy_instr += g.words / 4 * 20 if g.vector else g.elements * 25
        d = g.step[-1] if g.step else 1
        gl_bytes += g.elements * d * 4 * max(1.0, 16.0 / max(g.sides[-1] * d, 1)) if d > 1 else \
            g.elements * 4 * max(1.0, 16.0 / max(g.sides[-1], 1))
    smem += ktab_words(spec, tile) * 4
    if smem > smem_cap:
        return None
    regs = fm * fn * 4 + fm * 4 + fn * 2 + 2 * fm + fn + 40
    if regs > 255:
        return None
    regs = -(-regs // 8) * 8
    per_sm = min(device.regs_sm // (nt * regs), device.threads_sm // nt,
                 device.smem_sm // smem, 32)
    if per_sm < 1:
        return None
    warps = nb * wm * wn
    steps = warps * ntiles * ksteps
    mma_clk = steps * mma * 16 * 8 * ks / RATE[prec]
    lds_clk = steps * lds / device.lds_rate
    issue_clk = (steps * issue_step + nb * ntiles * copy_instr / 32) / device.fma_rate
    resident = per_sm * nt / 32
    eff = min(1.0, resident / 8.0) ** 0.5
    slots = device.sms * per_sm
    waves = nb / slots
    tail = math.ceil(waves) / waves if waves < 4 else 1.0
    sm_time = max(mma_clk, lds_clk, issue_clk) / device.sms / eff * tail
    out_bytes = math.prod(spec.pshape) * 4 * 2
    dram = (nb * ntiles * gl_bytes + out_bytes) / device.dram_bytes_clk
    return max(sm_time, dram) + 2000.0 + 200.0 * ntiles


_MMA_PRELUDE = {
    "tf32": r"""
__device__ __forceinline__ unsigned merit_cvt(float x) {
    // round to nearest, ties away (cvt.rna.tf32.f32 for finite values): add half a TF32 unit
    // to the magnitude bits, clear the 13 low mantissa bits (two integer instructions)
    return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}
__device__ __forceinline__ void merit_mma(float& d0, float& d1, float& d2, float& d3,
        unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
""",
}
#: FP16 and BF16 differ only in the conversion and the operand type (``TY``) of ``mma.sync``.
_HALF_PRELUDE = r"""
__device__ __forceinline__ unsigned merit_pack(float lo, float hi) {
    unsigned u; asm("cvt.rn.TYx2.f32 %0, %1, %2;\n" : "=r"(u) : "f"(hi), "f"(lo)); return u;
}
__device__ __forceinline__ unsigned merit_pack2(float2 v) { return merit_pack(v.x, v.y); }
__device__ __forceinline__ void merit_mma(float& d0, float& d1, float& d2, float& d3,
        unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.TY.TY.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
"""
_MMA_PRELUDE["fp16"] = _HALF_PRELUDE.replace("TY", "f16")
_MMA_PRELUDE["bf16"] = _HALF_PRELUDE.replace("TY", "bf16")


def header(spec, tile, name, what):
    """The opening lines of a tensor-core kernel's source, up to its MMA prelude: the comments
    (``what`` says how it runs), the fp32 element type, the strategy's parameters, the preludes."""
    from .codegen import header as kernel_header

    out = kernel_header(spec, tile, name, "float", "float32", what)
    out.append(_MMA_PRELUDE[tile.mma])
    return out


def _decompose_code(var, n_expr, idxs, exts, prefix):
    """C statements splitting ``n_expr`` into per-index coordinates ``<prefix><j>``."""
    lines = [f"int {var} = {n_expr};"]
    for j in reversed(idxs):
        if j == idxs[0]:
            lines.append(f"const int {prefix}{j} = {var};")
        else:
            lines.append(f"const int {prefix}{j} = {var} % {exts[j]}; {var} /= {exts[j]};")
    return lines


#: Persistent tiles store four outputs at a time along the rows too (a 4 x 4 lane transpose)
#: where the output's innermost index is a row index (a convolution's pixels).  Off: on the H100
#: (persist_probe, VGG conv3_1) it was slower than one output at a time (FP16 0.182 against
#: 0.178 ms, TF32 0.247 against 0.240).
VECTOR_ROWS = False


def vector_store_ok(spec, blk, r=None, rows_ok=None):
    """How the mma fragments' outputs can be stored four at a time (16 bytes): "cols" or
    "rows", where the one fp32 output's innermost index (unit stride) is the fastest of the
    column (row) indices, with the block's box and the problem a multiple of 4 along it (four
    adjacent columns / rows lie side by side in memory, 16-byte aligned, all inside the
    problem or all outside); else "".  ``r``: the roles the tile runs with (default
    :func:`roles`); ``rows_ok``: whether "rows" may be chosen (default :data:`VECTOR_ROWS`)."""
    r = r or roles(spec)
    rows_ok = VECTOR_ROWS if rows_ok is None else rows_ok
    inner = spec.np - 1
    if not (spec.outputs == 1 and spec.out_dtype == "float32" and blk[inner] % 4 == 0
            and spec.pshape[inner] % 4 == 0):
        return ""
    if r.cols and r.cols[-1] == inner:
        return "cols"
    if rows_ok and r.rows and r.rows[-1] == inner:
        return "rows"
    return ""


def post_args(pargs, loads):
    """The arguments of one output's PostLoop (``Strat::post0``): for each input ``k`` of
    ``loads`` (the PostLoop's inputs) its value at ``pargs`` (the output's parallel indices, then
    the PostLoop's accumulation arguments), then ``pargs``."""
    return ", ".join([f"merit_ld{k}(g_in{k}, {', '.join(pargs)})" for k in loads] + list(pargs))


def post_statement(acc, out, pargs, loads):
    """C statement of one output's PostLoop: ``Strat`` fed the sum ``acc`` and
    :func:`post_args`, its result into ``out``."""
    return f"Strat st; st.acc = {acc}; st.post0({post_args(pargs, loads)}); {out} = st.out0;"


def emit_epilogue(w, spec, r, blk, fm_n, fn_n, vector=False, rows=None, rows_ok=None):
    """The PostLoop of every sum ``c<fm>_<fn>_<e>`` and its store, guarded where the block's
    box overhangs the problem (warp ``wm, wn``, lane ``gq, tq`` of the mma fragments).

    ``vector`` (where :func:`vector_store_ok`): each lane stores four adjacent outputs with one
    16-byte store (a quarter of the store instructions, every 32-byte sector written whole)
    after exchanging sums with its neighbours.  Along the columns: lanes ``tq`` and ``tq ^ 1``
    swap a pair (the even lane gets its neighbour's two columns of row ``gq``, the odd one its
    neighbour's of row ``gq + 8``).  Along the rows: the four lanes ``gq = 4 a + i`` of one
    ``tq`` transpose the 4 x 4 matrix of their four sums (rows ``4 a + i``; columns ``2 tq``,
    ``2 tq + 1``; rows ``+ 8``) in two butterfly stages (lanes ``^ 8``, then ``^ 4``, two
    exchanges each): lane ``i`` gets rows ``4 a .. 4 a + 3`` (``+ 8`` if ``i & 2``) of column
    ``2 tq + (i & 1)``.

    ``rows``: where a sum's row is not the fragment's ``wm * 16 FM + 16 fm + 8 h + gq``, a
    function of ``(fm, h)`` giving its C expression (row of the block), and of ``(fm, "hi",
    True)`` the first of the four rows the "rows" exchange leaves a lane (lines ``gq & 3``
    consecutive); ``rows_ok``: as :func:`vector_store_ok`'s."""
    from .codegen import _global_index_type, _gstrides

    P, A = spec.np, spec.na
    ostr = _gstrides(spec.pshape)
    oidx = _global_index_type(spec.pshape)
    post_args_a = [str(spec.ashape[i] - 1) for i in range(A)]
    post = [k for k, op in enumerate(spec.inputs) if op.stage == "post"]
    how = vector_store_ok(spec, blk, r, rows_ok) if vector else ""
    if how == "cols" and rows is not None:
        how = ""
    if how:
        _emit_epilogue_v4(w, spec, r, blk, fm_n, fn_n, ostr, oidx, post_args_a, post, how,
                          rows)
        return
    for fm in range(fm_n):
        for fn in range(fn_n):
            for e in range(4):
                w.open("")
                rexp = (rows(fm, e >> 1) if rows is not None
                        else f"wm * {fm_n * 16} + {fm * 16 + (e >> 1) * 8} + gq")
                for line in _decompose_code("qr", rexp, r.rows, blk, "u"):
                    w(line)
                for line in _decompose_code("qc", f"wn * {fn_n * 8} + {fn * 8 + (e & 1)} + 2 * tq",
                                            r.cols, blk, "u"):
                    w(line)
                for j in range(P):
                    rel = f" + u{j}" if j in r.rows or j in r.cols else ""
                    w(f"const int p{j} = pb{j}{rel};")
                pargs = [f"p{j}" for j in range(P)] + post_args_a
                conds = [f"p{j} < {spec.pshape[j]}" for j in range(P)
                         if spec.pshape[j] % blk[j]]
                lin = " + ".join(f"({oidx})p{j} * {ostr[j]}" for j in range(P)) or "0"
                body = post_statement(f"c{fm}_{fn}_{e}", f"g_out0[{lin}]", pargs, post)
                w(f"if ({' && '.join(conds)}) {{ {body} }}" if conds else f"{{ {body} }}")
                w.close()


def _emit_epilogue_v4(w, spec, r, blk, fm_n, fn_n, ostr, oidx, post_args_a, post, how,
                      rows=None):
    """:func:`emit_epilogue` by 16-byte stores (``how``: along the "cols" or the "rows"): per
    fragment the exchanges of sums between lanes, the PostLoop of the four outputs, one
    ``float4`` store."""
    P = spec.np
    inner = P - 1
    if how == "cols":
        w("const int odd = tq & 1;")
    else:
        w("const int hi = (gq >> 1) & 1, lo = gq & 1;")
    for fm in range(fm_n):
        for fn in range(fn_n):
            c = f"c{fm}_{fn}_"
            w.open("")
            if how == "cols":
                # even lanes send row gq + 8's pair and keep row gq's; odd lanes the other way
                w(f"const float x0 = __shfl_xor_sync(0xffffffffu, odd ? {c}0 : {c}2, 1);")
                w(f"const float x1 = __shfl_xor_sync(0xffffffffu, odd ? {c}1 : {c}3, 1);")
                w(f"const float v0 = odd ? x0 : {c}0, v1 = odd ? x1 : {c}1, "
                  f"v2 = odd ? {c}2 : x0, v3 = odd ? {c}3 : x1;")
                row = f"wm * {fm_n * 16} + {fm * 16} + gq + 8 * odd"
                col = f"wn * {fn_n * 8} + {fn * 8} + 4 * (tq >> 1)"
            else:
                # stage 1 (lanes ^ 8): the off-diagonal 2 x 2 blocks swap
                w(f"const float y0 = __shfl_xor_sync(0xffffffffu, hi ? {c}0 : {c}2, 8);")
                w(f"const float y1 = __shfl_xor_sync(0xffffffffu, hi ? {c}1 : {c}3, 8);")
                w(f"const float n0 = hi ? y0 : {c}0, n1 = hi ? y1 : {c}1, "
                  f"n2 = hi ? {c}2 : y0, n3 = hi ? {c}3 : y1;")
                # stage 2 (lanes ^ 4): each 2 x 2 block transposed
                w("const float z0 = __shfl_xor_sync(0xffffffffu, lo ? n0 : n1, 4);")
                w("const float z1 = __shfl_xor_sync(0xffffffffu, lo ? n2 : n3, 4);")
                w("const float v0 = lo ? z0 : n0, v1 = lo ? n1 : z0, "
                  "v2 = lo ? z1 : n2, v3 = lo ? n3 : z1;")
                row = (rows(fm, "hi", True) if rows is not None
                       else f"wm * {fm_n * 16} + {fm * 16} + hi * 8 + (gq >> 2) * 4")
                col = f"wn * {fn_n * 8} + {fn * 8} + 2 * tq + lo"
            for line in _decompose_code("qr", row, r.rows, blk, "u"):
                w(line)
            for line in _decompose_code("qc", col, r.cols, blk, "u"):
                w(line)
            for j in range(P):
                rel = f" + u{j}" if j in r.rows or j in r.cols else ""
                w(f"const int p{j} = pb{j}{rel};")
            conds = [f"p{j} < {spec.pshape[j]}" for j in range(P) if spec.pshape[j] % blk[j]]
            lin = " + ".join(f"({oidx})p{j} * {ostr[j]}" for j in range(P)) or "0"
            body = []
            for e in range(4):
                pargs = [f"p{j}" + (f" + {e}" if j == inner and e else "") for j in range(P)]
                pargs += post_args_a
                body.append(f"Strat s{e}; s{e}.acc = v{e}; s{e}.post0({post_args(pargs, post)});")
            body.append(f"*reinterpret_cast<float4*>(g_out0 + {lin}) = "
                        f"make_float4(s0.out0, s1.out0, s2.out0, s3.out0);")
            if conds:
                w.open(f"if ({' && '.join(conds)})")
            for b in body:
                w(b)
            if conds:
                w.close()
            w.close()


def source(spec, tile):
    """CUDA source of the tensor-core kernel and its launch geometry (as ``codegen.source``)."""
    from .codegen import (
        _CTYPE,
        _emit_next,
        _emit_prologue,
        _load_function,
        _org_expr,
        _strategy_struct,
        _Writer,
        kernel_name,
    )

    r = roles(spec)
    if r is None:
        raise ValueError(f"problem {spec.name!r} is not a dot product the tensor cores can run")
    prec = tile.mma
    ks = KSTEP[prec]
    name = kernel_name(spec, tile)
    P, A = spec.np, spec.na
    blk = tile.block
    grid = [-(-n // b) for n, b in zip(spec.pshape, blk, strict=True)]
    nblocks = math.prod(grid)
    nt = tile.nthreads
    wm_n, wn_n = tile.warps
    fm_n, fn_n = tile.frags
    shared = [0, 1]
    geo = {k: geometry(spec, tile, k) for k in shared}
    chunk = min(tile.chunk, spec.ashape[0])
    ntiles = -(-spec.ashape[0] // chunk)
    nbuf = tile.buffers if ntiles > 1 else 1
    offs, total = {}, 0
    for k in shared:
        offs[k] = total
        total += -(-geo[k].words * nbuf // 4) * 4
    kt_off = total
    kpad = _kpad(spec, tile, ks)
    total += 2 * kpad
    smem_bytes = total * 4
    kc = _kc(spec, tile)
    rest = math.prod(spec.ashape[1:])
    full_chunks = spec.ashape[0] % chunk == 0
    aext = (chunk,) + tuple(spec.ashape[1:])

    out = header(spec, tile, name, f"tensor cores: {prec}")
    out.append(_strategy_struct(spec, "float"))
    for k in range(len(spec.inputs)):
        if k not in shared:
            out.append(_load_function(spec, k, "float"))
    params = [f"const T* __restrict__ g_in{k}" for k in range(len(spec.inputs))]
    params += [f"{_CTYPE[spec.out_dtype]}* __restrict__ g_out{o}" for o in range(spec.outputs)]
    out.append(f'extern "C" __global__ void __launch_bounds__({nt}) {name}({", ".join(params)}) {{')
    w = _Writer()
    w("extern __shared__ __align__(16) T smem[];")
    w("const int tid = threadIdx.x;")
    w("const int lane = tid & 31, warp = tid >> 5;")
    w(f"const int wm = warp % {wm_n}, wn = warp / {wm_n};")
    w("const int gq = lane >> 2, tq = lane & 3;")
    w("int bq = blockIdx.x;")
    for j in range(P - 1, -1, -1):
        w(f"const int pb{j} = (bq % {grid[j]}) * {blk[j]}; bq /= {grid[j]};")

    # k table: offsets of both inputs' elements per flattened accumulation position
    w(f"int2* ktab = reinterpret_cast<int2*>(smem + {kt_off});")
    w.open(f"for (int i = tid; i < {kpad}; i += {nt})")
    w("int q = i; int oa = 0, ob = 0;")
    w.open(f"if (i < {kc})")
    for i in range(A - 1, -1, -1):
        if i > 0:
            w(f"const int l{i} = q % {aext[i]}; q /= {aext[i]};")
        else:
            w("const int l0 = q;")
    for k, var in ((r.a, "oa"), (r.b, "ob")):
        tr, g = spec.inputs[k].transform, geo[k]
        parts = [f"l{pos - P} * {g.coef(ax, s)}" for ax, terms in enumerate(tr.terms)
                 for pos, s in terms if pos >= P]
        if parts:
            w(f"{var} = {' + '.join(parts)};")
    w.close()
    w("ktab[i] = make_int2(oa, ob);")
    w.close()

    # per-thread row offsets into A's footprint, column offsets into B's
    def line_code(k, idxs, n_expr, var):
        tr, g = spec.inputs[k].transform, geo[k]
        w.open("")
        for line in _decompose_code("q", n_expr, idxs, blk, "u"):
            w(line)
        parts = [str(sum(g.coef(ax, g.shift[ax]) for ax in range(len(g.sides))))]
        for ax, terms in enumerate(tr.terms):
            for pos, s in terms:
                if pos in idxs:
                    parts.append(f"u{pos} * {g.coef(ax, s)}")
        w(f"{var} = {' + '.join(parts)};")
        w.close()

    for fm in range(fm_n):
        for h in range(2):
            w(f"int ra{fm}_{h};")
            line_code(r.a, r.rows, f"wm * {fm_n * 16} + {fm * 16 + h * 8} + gq", f"ra{fm}_{h}")
    for fn in range(fn_n):
        w(f"int cb{fn};")
        line_code(r.b, r.cols, f"wn * {fn_n * 8} + {fn * 8} + gq", f"cb{fn}")
    for fm in range(fm_n):
        for fn in range(fn_n):
            w(f"float c{fm}_{fn}_0 = 0.f, c{fm}_{fn}_1 = 0.f, c{fm}_{fn}_2 = 0.f, "
              f"c{fm}_{fn}_3 = 0.f;")

    if nbuf > 1:
        _emit_prologue(w, spec, tile, shared, geo, offs, nbuf, nt, chunk, "0", str(ntiles))
    w("#pragma unroll 1")
    w.open(f"for (int at = 0; at < {ntiles}; ++at)")
    w(f"const int ab0 = at * {chunk};")
    _emit_next(w, spec, tile, shared, geo, offs, nbuf, nt, chunk, "0", str(ntiles))
    for k, nm in ((r.a, "As"), (r.b, "Bs")):
        g = geo[k]
        parts = [str(offs[k])]
        if nbuf > 1:
            parts.append(f"buf * {g.words}")
        if g.vector and not g.aligned:
            org = _org_expr(spec, k, g, len(g.sides) - 1, "ab0")
            parts.append(f"(({org}) & {g.align - 1})")
        w(f"const T* {nm} = smem + {' + '.join(parts)};")
    w("__syncthreads();")
    if full_chunks:
        w(f"const int kv = {kc};")
    else:
        w(f"const int kv = min({chunk}, {spec.ashape[0]} - ab0) * {rest};")

    # fragment (fm, h) rows lie a constant offset from fragment (0, 0)'s in every warp and lane
    # when the box's innermost extents allow it: then one pointer per k column and immediate
    # offsets (no address arithmetic per load)
    def deltas(k, idxs, lines, group, span):
        g = geo[k]
        out = {}
        for key, extra in lines.items():
            vals = {_line_offset(spec, tile, k, g, idxs, grp * span + extra + q)
                    - _line_offset(spec, tile, k, g, idxs, grp * span + q)
                    for grp in range(group) for q in range(8)}
            if len(vals) != 1:
                return None
            out[key] = vals.pop()
        return out

    da = deltas(r.a, r.rows, {(fm, h): fm * 16 + h * 8 for fm in range(fm_n) for h in range(2)},
                wm_n, fm_n * 16)
    db = deltas(r.b, r.cols, {fn: fn * 8 for fn in range(fn_n)}, wn_n, fn_n * 8)

    # an input whose offsets are k itself (k-neighbours adjacent) with even rows: FP16 / BF16
    # pairs are read 8 bytes at a time.  Offsets still come from the k table: computing affine
    # offsets instead cut registers and made the TF32 GEMM 12 % slower (H100)
    pairs = {f: prec != "tf32" and _affine_k(spec, tile, k, geo[k]) == 1
             and _even_lines(spec, tile, k, geo[k], idxs)
             for f, k, idxs in (("x", r.a, r.rows), ("y", r.b, r.cols))}

    def step(guard):
        w.open("")
        if prec == "tf32":
            w(f"const int kb = ks * {ks} + tq;")
            kcols = [("k0", "kb"), ("k1", "kb + 4")]
        else:
            w(f"const int kb = ks * {ks} + 2 * tq;")
            kcols = [("k0", "kb"), ("k1", "kb + 1"), ("k2", "kb + 8"), ("k3", "kb + 9")]
        for kvn, kex in kcols:
            w(f"const int2 {kvn} = ktab[{kex}];")

        def koff(kvn, field):
            return f"{kvn}.{field}"

        for kvn, _ in kcols:
            if da is not None:
                w(f"const T* pa_{kvn} = As + ra0_0 + {koff(kvn, 'x')};")
            if db is not None:
                w(f"const T* pb_{kvn} = Bs + cb0 + {koff(kvn, 'y')};")

        def ld(arr, base, kv_, field, kexpr):
            if arr == "As" and da is not None:
                fm, h = (int(x) for x in base[2:].split("_"))
                e = f"pa_{kv_}[{da[(fm, h)]}]"
            elif arr == "Bs" and db is not None:
                e = f"pb_{kv_}[{db[int(base[2:])]}]"
            else:
                e = f"{arr}[{base} + {koff(kv_, field)}]"
            return f"({kexpr} < kv ? {e} : 0.f)" if guard else e

        def packed(arr, base, lo, hi, field):
            if pairs[field] and not guard:   # hi is lo's neighbour: one 8-byte read
                v = f"*reinterpret_cast<const float2*>(&{ld(arr, base, lo[0], field, lo[1])})"
                return f"merit_pack2({v})"
            return (f"merit_pack({ld(arr, base, lo[0], field, lo[1])}, "
                    f"{ld(arr, base, hi[0], field, hi[1])})")

        if prec == "tf32":
            for fm in range(fm_n):
                for i, (h, kci) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
                    kvn, kex = kcols[kci]
                    w(f"const unsigned a{fm}_{i} = merit_cvt("
                      f"{ld('As', f'ra{fm}_{h}', kvn, 'x', kex)});")
            for fn in range(fn_n):
                for i in range(2):
                    kvn, kex = kcols[i]
                    b = ld("Bs", f"cb{fn}", kvn, "y", kex)
                    w(f"const unsigned b{fn}_{i} = merit_cvt({b});")
        else:
            for fm in range(fm_n):
                for i, (h, pair) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
                    lo, hi = kcols[2 * pair], kcols[2 * pair + 1]
                    w(f"const unsigned a{fm}_{i} = {packed('As', f'ra{fm}_{h}', lo, hi, 'x')};")
            for fn in range(fn_n):
                for i in range(2):
                    lo, hi = kcols[2 * i], kcols[2 * i + 1]
                    w(f"const unsigned b{fn}_{i} = {packed('Bs', f'cb{fn}', lo, hi, 'y')};")
        for fm in range(fm_n):
            for fn in range(fn_n):
                c = f"c{fm}_{fn}_"
                w(f"merit_mma({c}0, {c}1, {c}2, {c}3, a{fm}_0, a{fm}_1, a{fm}_2, a{fm}_3, "
                  f"b{fn}_0, b{fn}_1);")
        w.close()

    nsteps = f"kv / {ks}"
    w("#pragma unroll" if full_chunks and kc // ks <= 16 else "#pragma unroll 2")
    w.open(f"for (int ks = 0; ks < {nsteps}; ++ks)")
    step(False)
    w.close()
    if kc % ks or not full_chunks:
        w.open(f"if (kv % {ks})")
        w(f"const int ks = kv / {ks};")
        step(True)
        w.close()
    w("__syncthreads();")
    w.close()

    emit_epilogue(w, spec, r, blk, fm_n, fn_n)
    out.append("\n".join(w.lines))
    out.append("}")
    return name, "\n".join(out) + "\n", nblocks, nt, smem_bytes
