"""Tensor-core kernels with operands staged in their own precision, read with ``ldmatrix``.

The second tensor-core kernel of :mod:`merit.gpu` (``Tile.ldsm``), for the same problems as
:mod:`merit.gpu.mma` (a dot product whose two loop inputs split the parallel indices into rows and
columns, :func:`merit.gpu.mma.roles`).  Where the first kernel copies the Eq. 9 footprints as fp32
words and rounds every fragment element as it reads it, this one gathers the implicit GEMM's
operand tiles themselves:

- the accumulation indices are flattened in C order into k; an accumulation tile holds ``chunk``
  consecutive k (``BK``: 32 or 64 for FP16 / BF16, 16 or 32 for TF32), the last one zero-filled
  past the end;
- each operand tile is a ``lines x BK`` matrix in shared memory (lines: the block's rows for A,
  its columns for B), k innermost, stored in the operand precision: 2 bytes per element for FP16
  / BF16, 4 for TF32 (rounded once, when stored);
- 16-byte pieces of a line are XOR-swizzled (piece ``c`` of line ``r`` goes to piece
  ``c ^ (r / max(1, 8 / C)) % min(C, 8)`` of C pieces per line), so that the 8 lines an
  ``ldmatrix`` phase reads, and the 16 lines a half-warp stores, fall in different banks;
- fragments come from ``ldmatrix.sync.aligned.m8n8.x4`` (A: one per 16 x k-step fragment; B: one
  per two 8-column fragments, ``.x2`` for a last odd one), no conversion in the inner loop;
- every element of a tile is loaded from global memory through the operand's transform (the
  boundary modes applied per axis where the coordinates can leave the tensor), four k per thread
  and slot: one 16-byte load where the flattened k is contiguous and aligned in memory (GEMM's A,
  a convolution's weights), else four loads whose lanes walk the line index (coalesced along the
  image rows, or along B's columns);
- the next tile's loads are issued into registers before the current tile's ``mma.sync`` and
  stored (converted) into the other of two shared buffers after it: one barrier per tile.

Hopper's ``wgmma`` (``Tile.wgmma``) reads both operand tiles from shared memory through matrix
descriptors: K-major (lines of k, the 128- or 64-byte swizzle) or, for FP16 / BF16 operands whose
lines lie contiguous in memory while their k do not (``Tile.mn``, :func:`mn_ops`), MN-major
(rows of k holding 64 lines, :func:`mn_offset`, the instruction's transpose flag); a TF32
tile with ``Tile.areg`` takes A from registers instead, loaded from an MN-major tile that the
bulk copy engine writes (:func:`areg_offset`, :func:`areg_line`, :func:`tile_roles`).  Operands
already in half precision (``Tile.half``) go from global to shared memory by ``cp.async``, 16
bytes a copy where eight elements lie contiguous and aligned (:func:`widths`), else 8.

The PostLoop epilogue is :mod:`merit.gpu.mma`'s.
"""

import dataclasses
import math

from .mma import KSTEP, Roles, _pow2ceil, box, post_statement, roles
from .tile import Tile

__all__ = ["ESIZE", "eligible", "candidates", "estimate", "source", "smem_bytes", "operand_plan",
           "swizzle", "BKS", "mn_ops", "widths", "descriptor", "mn_offset", "tile_roles",
           "areg_line", "areg_offset", "areg_variant", "cluster_dims"]

#: Bytes per staged element.
ESIZE = {"tf32": 4, "fp16": 2, "bf16": 2}
#: k per accumulation tile the candidates try, per precision (rows of 64 or 128 bytes).
BKS = {"tf32": (16, 32), "fp16": (32, 64), "bf16": (32, 64)}
#: Dense multiply-adds per clock per SM modelled for ``mma.sync`` fed by ``ldmatrix``.
RATE = {"tf32": 512.0, "fp16": 1024.0, "bf16": 1024.0}
#: The same for ``wgmma`` (sm_90a: twice ``mma.sync``'s rate).
RATE_WG = {"tf32": 1024.0, "fp16": 2048.0, "bf16": 2048.0}
_WARPS = ((2, 2), (2, 4), (4, 2), (1, 4), (4, 1), (2, 1), (1, 2), (1, 1), (4, 4), (2, 8), (8, 2))


def eligible(spec):
    return roles(spec) is not None


def _lines_contiguous(spec, k, idxs):
    """Whether input k's lines (parallel indices ``idxs``) lie side by side in memory (its
    innermost line index walks it with unit stride) while its flattened k does not."""
    p = operand_plan(spec, k, idxs)
    return bool(idxs) and p["coef"][idxs[-1]] == 1 and not p["vector"]


def tile_roles(spec, tile):
    """The :class:`Roles` a tile runs with: :func:`merit.gpu.mma.roles`, or for a tile taking
    wgmma's A from registers (``Tile.areg``) with the inputs exchanged where the operand whose
    lines are contiguous in memory is B (GEMM's B then gives the wgmma rows: the kernel computes
    the transposed product and stores each sum at its place in the output)."""
    r = roles(spec)
    if (r is not None and getattr(tile, "areg", False)
            and not _lines_contiguous(spec, r.a, r.rows)
            and _lines_contiguous(spec, r.b, r.cols)):
        return Roles(r.b, r.a, r.cols, r.rows)
    return r


def _group(chunks):
    """Pieces XOR-permuted together: the largest power of two dividing ``chunks``, at most 8."""
    return min(8, chunks & -chunks)


def swizzle(row, chunks):
    """The XOR mask of line ``row``'s 16-byte pieces (of ``chunks``): logical piece c lies at
    ``c ^ swizzle(row, chunks)``, so that 8 consecutive lines at one piece, which an ``ldmatrix``
    phase reads, fall in different bank groups (for ``chunks`` a multiple of 8, 4 or 2: 8, 4 or 2
    groups; the permutation stays within aligned groups of pieces, inside the line)."""
    m = _group(chunks)
    return (row // max(1, 8 // m)) % m


def _gstrides(shape):
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def operand_plan(spec, k, idxs):
    """How input ``k`` (lines over parallel indices ``idxs``) is gathered.

    Returns a dict: ``coef`` (per position of k = (p, a), elements of the linear offset),
    ``const`` (the constant part), ``checked`` (axes whose coordinate can leave the tensor),
    ``vector`` (four consecutive k are one aligned 16-byte piece in memory), ``klanes``
    (neighbouring lanes take neighbouring k, else neighbouring lines)."""
    tr = spec.inputs[k].transform
    shape = tr.source_shape
    st = _gstrides(shape)
    npos = spec.np + spec.na
    ext = tuple(spec.pshape) + tuple(spec.ashape)
    coef = [0] * npos
    for ax, terms in enumerate(tr.terms):
        for pos, s in terms:
            coef[pos] += s * st[ax]
    const = sum(o * st[ax] for ax, o in enumerate(tr.offset))
    checked = []
    for ax, terms in enumerate(tr.terms):
        lo = tr.offset[ax] + sum(min(0, s * (ext[pos] - 1)) for pos, s in terms)
        hi = tr.offset[ax] + sum(max(0, s * (ext[pos] - 1)) for pos, s in terms)
        if lo < 0 or hi >= shape[ax]:
            checked.append(ax)
    kpos = range(spec.np, npos)
    # the linear offset walks the flattened k with unit stride, on axes never checked
    flat = all(coef[spec.np + i] == math.prod(spec.ashape[i + 1:]) for i in range(spec.na))
    k_axes = {ax for ax, terms in enumerate(tr.terms) for pos, _ in terms if pos in kpos}
    vector = (flat and not (k_axes & set(checked)) and math.prod(spec.ashape) % 4 == 0
              and const % 4 == 0 and all(coef[j] % 4 == 0 for j in range(spec.np)))
    inner_line = coef[idxs[-1]] if idxs else 0
    klanes = vector or (abs(inner_line) != 1 and coef[npos - 1] == 1)
    return {"coef": coef, "const": const, "checked": tuple(checked), "vector": vector,
            "klanes": klanes}


def layout(spec, tile, k, idxs):
    """Input k's shared layout: ``("lk", False)``, lines of k (``ldmatrix``, K-major wgmma), or
    for FP16 / BF16 operands whose innermost line index walks memory with unit stride and whose k
    are not contiguous, ``("kl", vector)``: rows of k holding lines (``ldmatrix.trans``; wgmma
    tiles with ``Tile.mn``: the MN-major atoms of :func:`mn_offset`), loaded four lines at a
    time (``vector``: four contiguous and aligned in memory)."""
    p = operand_plan(spec, k, idxs)
    if (tile.mma == "tf32" or (tile.wgmma and not tile.mn) or p["vector"] or not idxs):
        return "lk", False
    inner = idxs[-1]
    if (p["coef"][inner] != 1 or tile.block[inner] % 4 or spec.pshape[inner] % 4):
        return "lk", False
    tr = spec.inputs[k].transform
    moving = [ax for ax in p["checked"] if any(pos == inner for pos, _ in tr.terms[ax])]
    vec = (not moving and p["const"] % 4 == 0
           and all(c % 4 == 0 for j, c in _moving_coefs(spec, p) if j != inner))
    return "kl", vec


def _moving_coefs(spec, p):
    """(position, coefficient) of the positions of k = (p, a) that take more than one value."""
    ext = tuple(spec.pshape) + tuple(spec.ashape)
    return [(j, c) for j, c in enumerate(p["coef"]) if ext[j] > 1]


def mn_ops(spec, tile):
    """Per operand (A, B): whether ``tile`` stages it MN-major (a wgmma tile with ``Tile.mn``
    and an operand :func:`layout` puts in rows of k holding lines)."""
    if not (tile.wgmma and tile.mn):
        return (False, False)
    if tile.areg:   # TF32, A from registers: A MN-major (copied by the copy engine)
        return (True, False)
    r = tile_roles(spec, tile)
    return tuple(layout(spec, tile, k, idxs)[0] == "kl" for k, idxs in ((r.a, r.rows),
                                                                         (r.b, r.cols)))


def widths(spec, tile):
    """Per operand (A, B): elements per gather slot, 8 where a ``half`` tile copies the slot as
    one 16-byte ``cp.async`` (eight k of a line, or eight lines at one k, contiguous and 16-byte
    aligned in memory), else 4."""
    r = tile_roles(spec, tile)
    out = []
    asy = async_ops(spec, tile)
    for (k, idxs), a in zip(((r.a, r.rows), (r.b, r.cols)), asy, strict=True):
        if not a:
            out.append(4)
            continue
        p = operand_plan(spec, k, idxs)
        const = p["const"]
        if layout(spec, tile, k, idxs)[0] == "kl":
            inner = idxs[-1]
            ok = (tile.block[inner] % 8 == 0 and spec.pshape[inner] % 8 == 0
                  and all(c % 8 == 0 for j, c in _moving_coefs(spec, p) if j != inner))
        else:
            ok = (math.prod(spec.ashape) % 8 == 0
                  and all(c % 8 == 0 for j, c in _moving_coefs(spec, p) if j < spec.np))
        out.append(8 if ok and const % 8 == 0 else 4)
    return tuple(out)


#: wgmma's 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits
#: 0-13 start address >> 4, 16-29 leading dimension byte offset >> 4, 32-45 stride dimension
#: byte offset >> 4, 49-51 base offset (0: the buffers start at a multiple of the swizzle's
#: period), 62-63 the swizzle (1: 128 bytes, 2: 64 bytes, 3: 32 bytes, 0: none).
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3, 0: 0}


def descriptor(addr, lbo, sbo, swizzle):
    """The descriptor of a matrix at shared byte address ``addr`` with leading and stride byte
    offsets ``lbo``, ``sbo`` (multiples of 16) and a ``swizzle``-byte swizzle (128, 64, 32, 0)."""
    if addr % 16 or lbo % 16 or sbo % 16:
        raise ValueError("wgmma descriptor addresses and offsets are multiples of 16 bytes")
    return (((addr & 0x3FFFF) >> 4) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32
            | SWIZZLE_MODE[swizzle] << 62)


def mn_offset(ln, kq, bk):
    """Byte offset of line ``ln`` at k ``kq`` in an MN-major tile of ``bk`` k of 2-byte elements
    (wgmma's canonical MN-major layout with the 128-byte swizzle): atoms of 8 k x 64 lines (1024
    bytes, one 128-byte row of 64 lines per k), the ``bk / 8`` atoms of 64 lines consecutive
    (the stride byte offset, between groups of 8 k: 1024), groups of 64 lines ``bk * 128`` bytes
    apart (the leading byte offset); 16-byte piece ``c`` of row ``r`` lies at piece ``c ^ r``."""
    r = kq % 8
    return ((ln // 64) * bk * 128 + (kq // 8) * 1024 + r * 128
            + (((ln % 64) // 8) ^ r) * 16 + (ln % 8) * 2)


def areg_line(wm, gq, h):
    """Row of the block (line of operand A) whose fragment rows ``gq + 8 h`` warp ``wm`` holds in
    a tile taking wgmma's A from registers (``Tile.areg``): in each 32-line box of the MN-major
    tile, warps ``2 v`` and ``2 v + 1`` take lines ``16 u + 8 h + 4 (wm & 1) + i`` (``gq = 4 u +
    i``), so that for each of a thread's four k rows the 32 lanes read 32 different banks (the
    eight lines of a lane group lie in two 16-byte pieces whose swizzle indices differ in bit
    2).  Every row of a warpgroup's 64 appears once; the epilogue stores the sums there."""
    return (wm >> 2) * 64 + ((wm & 3) >> 1) * 32 + (gq >> 2) * 16 + 8 * h + (wm & 1) * 4 + (gq & 3)


def _areg_rows(fm, h, quad=False):
    """:func:`areg_line` as the epilogue's C expression of a sum's row (``fm`` is 0); ``quad``:
    the first of the four consecutive lines of lanes ``gq & 3`` = 0 .. 3, ``h`` an expression."""
    hh = f"{h} * 8" if quad else f"{8 * h}"
    return (f"(wm >> 2) * 64 + ((wm & 3) >> 1) * 32 + (gq >> 2) * 16 + {hh} + (wm & 1) * 4"
            + ("" if quad else " + (gq & 3)"))


#: Producer tiles: the consumers' proxy fence after each wait for a buffer (``fence.proxy.async``,
#: in SASS a ``MEMBAR.ALL.CTA`` that also waits for the thread's outstanding stores, the last
#: output tile's among them) is needed only where an operand is written by the generic proxy
#: (``cp.async`` slots, word copies; register slots fence in the producer).  ``False`` drops it
#: where the bulk copy engine writes both operands; kept (``True``): on the H100 that measured
#: no faster for GEMM 4096^3 FP16 / BF16 (0.215-0.221 / 0.207-0.210 ms without, 0.216-0.229 /
#: 0.210-0.211 with) and slower for the TF32 ``Tile.areg`` tile (0.427-0.431 against
#: 0.392-0.394 ms; ``persist_probe.py --match ... [--fence]``, two runs each, alternating).
TMA_FENCE = True


#: Persistent tiles taking wgmma's A from registers whose output's innermost index is a row
#: index (GEMM with the roles exchanged) may store four rows at a time after a 4 x 4 exchange
#: between lanes (``mma.emit_epilogue``'s "rows", as :data:`merit.gpu.mma.VECTOR_ROWS` for
#: every tile).  Off: on the H100 GEMM 4096^3 TF32 ran 0.454-0.471 ms with it against
#: 0.394-0.406 with one output at a time (``tf32_probe.py --areg-scalar``).
AREG_VECTOR_ROWS = False


def areg_offset(ln, kq, bk):
    """Byte offset of line ``ln`` at k ``kq`` in an MN-major tile of ``bk`` k of 4-byte elements
    as the bulk copy engine writes it with the 128-byte swizzle: boxes of 32 lines x ``bk`` k
    (``bk * 128`` bytes, one after the other), one 128-byte row per k, 16-byte piece ``c`` of row
    ``r`` at piece ``c ^ r % 8``."""
    return ((ln // 32) * bk * 128 + kq * 128 + ((((ln % 32) >> 2) ^ (kq % 8)) << 4)
            + (ln % 4) * 4)


def areg_variant(spec, tile):
    """The form of TF32 producer tile ``tile`` that takes wgmma's A from registers
    (``Tile.areg``), with the same warps and fragments over the exchanged roles where
    :func:`tile_roles` exchanges them (the box recomputed), or None where it does not fit."""
    t = dataclasses.replace(tile, areg=True, mn=True)
    r0, r = roles(spec), tile_roles(spec, t)
    if r is None or tile.mma != "tf32":
        return None
    if r != r0:
        bm, bn = _geo(spec, tile)[:2]
        t = dataclasses.replace(t, regs=box(spec, r, bm, bn))
    return None if wgmma_fits(spec, t) else t


def _geo(spec, tile):
    """(BM, BN, BK, bytes per line, 16-byte pieces per line)."""
    r = tile_roles(spec, tile)
    bm = math.prod(tile.regs[j] for j in r.rows)
    bn = math.prod(tile.regs[j] for j in r.cols)
    bk = tile.chunk
    rb = bk * ESIZE[tile.mma]
    return bm, bn, bk, rb, rb // 16


def smem_bytes(spec, tile):
    bm, bn, _, rb, _ = _geo(spec, tile)
    # wgmma: the buffers start at a 1024-byte boundary (the 128-byte swizzle's period); a
    # producer tile adds a "full" and an "empty" mbarrier (8 bytes each) per buffer
    hp = halo_plan(spec, tile) if getattr(tile, "halo", False) else None
    per = hp["stage"] if hp else (bm + bn) * rb
    ep = epi_plan(spec, tile) if getattr(tile, "epi", 0) else None
    if ep:   # the staged epilogue's buffers after the mbarriers, at a 1024-byte boundary
        return WG_ALIGN + ep["top"] + ep["bytes"]
    return (_buffers(tile) * per + (WG_ALIGN if tile.wgmma else 0)
            + (16 * _buffers(tile) if tile.producer else 0))


def _buffers(tile):
    """Operand-tile buffers: ``stages`` for tiles reading half-precision arrays and for
    warp-specialized tiles, else two."""
    return tile.stages if tile.half or tile.producer else 2


def half_fits(spec, tile):
    """Why ``tile`` cannot read half-precision operand arrays, or "" when it can."""
    if not tile.ldsm or tile.mma not in ("fp16", "bf16"):
        return (f"tile.half reads FP16 / BF16 operand arrays into the staged kernel: it needs "
                f"tile.ldsm and tile.mma 'fp16' or 'bf16', not ldsm={tile.ldsm}, "
                f"mma={tile.mma!r}")
    if tile.cluster != 1 and not tile.tma:
        return ("tile.half is built for cluster tiles only with bulk tensor copies (tile.cluster "
                "must be 1, or tile.tma set)")
    if spec.operands == "float32":
        return (f"tile.half reads {'float16' if tile.mma == 'fp16' else 'bfloat16'} operand "
                f"arrays, but problem {spec.name!r} was given float32 arrays")
    return ""


def async_ops(spec, tile):
    """Per operand (A, B) of a ``half`` tile: whether its slots go by ``cp.async`` (four or eight
    elements contiguous and aligned in memory: "lk" tiles of a flat k, or "kl" vectors of lines,
    see :func:`widths`)."""
    r = tile_roles(spec, tile)
    out = []
    for k, idxs in ((r.a, r.rows), (r.b, r.cols)):
        mode, lvec = layout(spec, tile, k, idxs)
        p = operand_plan(spec, k, idxs)
        out.append(bool(tile.half) and (lvec if mode == "kl" else p["vector"]))
    return tuple(out)


def word_ops(spec, tile):
    """Per operand (A, B) of a TF32 producer tile on float32 arrays: whether its slots go by
    ``cp.async`` of single words (4 bytes, zero-filled outside a zero boundary or past K) into
    the K-major layout, transposing on the way where its lines are contiguous (GEMM's B): every
    operand the bulk copy engine does not take.  The words reach the tensor cores as fp32 bits
    (truncated to TF32), and the ring of ``stages`` buffers keeps that many k tiles in flight
    without registers."""
    if not (tile.producer and tile.mma == "tf32" and not tile.half):
        return (False, False)
    tmas = tma_ops(spec, tile) if tile.tma else (None, None)
    return tuple(not t for t in tmas)


_PRELUDE_WORD = r"""
__device__ __forceinline__ void merit_acp4(unsigned addr, const void* src, bool ok) {
    // one 4-byte element into its place in the layout; zero-filled when !ok
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(addr), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
"""


#: Threads of a producer tile's copying warpgroup (``Tile.producer``).
PRODUCER = 128
#: Alignment of the wgmma kernel's buffers (8 lines of 128 bytes: one swizzle period).
WG_ALIGN = 1024
#: wgmma tiles: (warps along rows, along columns) and 8-column fragments per warp (the
#: warpgroup's N = 8 * FN columns, FN * 4 fp32 sums per thread).
WG_WARPS = ((4, 1), (8, 1), (4, 2), (8, 2))
WG_FRAGS = (8, 16, 32)


def wgmma_fits(spec, tile):
    """Why ``tile`` cannot run as a wgmma tile, or "" when it can: 128- or 64-byte lines of k
    (BK 64 or 32 for FP16 / BF16, 32 or 16 for TF32: the 128- or 64-byte swizzle, which the
    gather's XOR pattern is), one 16-row fragment per warp (a warpgroup's 4 warps cover 64
    rows), whole warpgroups along the rows, N = 8 * FN of 8..256 columns."""
    wm, _ = tile.warps
    fm, fn = tile.frags
    if not tile.ldsm:
        return "wgmma stages the operand tiles: it needs tile.ldsm"
    if tile.chunk * ESIZE[tile.mma] not in (64, 128):
        return (f"tile.chunk {tile.chunk} must make 128- or 64-byte lines of k "
                f"({128 // ESIZE[tile.mma]} or {64 // ESIZE[tile.mma]} elements for {tile.mma})")
    if fm != 1 or wm % 4:
        return (f"wgmma tiles need FM = 1 and WM a multiple of 4 (a warpgroup covers 64 rows), "
                f"not frags {tile.frags}, warps {tile.warps}")
    if not 1 <= fn <= 32:
        return f"wgmma N = 8 * FN must be 8..256 columns, not FN = {fn}"
    if tile.cluster not in (1, 2):
        return f"tile.cluster must be 1 or 2, not {tile.cluster!r}"
    if tile.areg:
        t = tma_ops(spec, tile) if tile.tma else (None, None)
        if not (tile.mma == "tf32" and tile.mn and tile.producer and tile.tma
                and tile.cluster == 1 and not tile.half and t[0] and t[0]["mn"]):
            return ("tile.areg (wgmma's A from registers) is built for TF32 producer tiles with "
                    "bulk tensor copies, tile.mn and cluster 1, whose operand with contiguous "
                    "lines the copy engine takes MN-major (ldsm.tma_ops)")
    elif tile.mn and (tile.mma == "tf32" or (tile.cluster != 1 and not tile.tma)):
        return (f"tile.mn (MN-major operands) needs FP16 / BF16 (wgmma transposes 16-bit "
                f"operands only) and tile.cluster 1, not {tile.mma!r}, cluster {tile.cluster}")
    if tile.producer and not (tile.stages >= 3 and (tile.cluster == 1
                                                    or (tile.tma and tile.half))):
        return (f"tile.producer (a copying warpgroup) needs 3 or 4 stages and tile.cluster 1 "
                f"(or tile.tma with tile.half), not stages {tile.stages}, cluster "
                f"{tile.cluster}, half={tile.half}")
    if tile.producer and tile.cluster == 2 and not all(tma_ops(spec, tile)):
        return ("a producer tile in clusters of two multicasts B by bulk tensor copies: both "
                "operands must qualify for them (ldsm.tma_ops), B in an even number of boxes")
    if tile.persist and not (tile.producer and tile.persist > 0
                             and (tile.cluster == 1 or tile.persist % 2 == 0)):
        return (f"tile.persist (a persistent grid of {tile.persist} blocks) needs tile.producer "
                f"(in clusters of two: an even grid)")
    if tile.pingpong and not (tile.persist and tile.warps == (4, 1) and not tile.areg):
        return (f"tile.pingpong (two consumer warpgroups taking output tiles in turn) needs a "
                f"persistent producer tile of one warpgroup's box (warps (4, 1)) without "
                f"tile.areg, not warps {tile.warps}, persist {tile.persist}")
    if tile.cl:
        t = tma_ops(spec, tile) if tile.tma else (None, None)
        if not (tile.producer and tile.tma and tile.cluster == 1 and not tile.areg
                and not tile.mn and not tile.pingpong and (tile.half or tile.mma == "tf32")
                and t[0] and t[1]):
            return ("tile.cl (channels-last copies, the image by one bulk copy per tap and "
                    "channel block) is built for FP16 / BF16 (half) and TF32 producer tiles with "
                    "bulk tensor copies of both operands, K-major, cluster 1, no areg / "
                    "pingpong, on a problem ldsm.cl_layout rewrites")
    if tile.halo and not (tile.cl and halo_plan(spec, tile) and tile.split == 1):
        return ("tile.halo (one box per row of taps) needs a tile.cl tile whose image's "
                "innermost pixel axis is moved by the innermost row index and one tap index "
                "alone, a block extent along it that is a multiple of 64, and a box of at most "
                "256 elements (ldsm.halo_plan)")
    if getattr(tile, "epi", 0) and epi_plan(spec, tile) is None:
        return (f"tile.epi (a staged epilogue by bulk tensor stores, {tile.epi} buffers per "
                f"consumer warpgroup) needs a persistent producer tile with bulk copies (no "
                f"areg / pingpong / cl), an fp32 output matrix of rows along parallel index 0 and "
                f"unit-stride columns along index 1 (a multiple of 4), and warpgroup columns in "
                f"chunks of {EPI_COLS} that tile.epi divides (ldsm.epi_plan)")
    if tile.tma and not (tile.producer and any(tma_ops(spec, tile))):
        return ("tile.tma (bulk tensor copies) needs tile.producer and an operand that is a "
                "plain matrix in memory (see ldsm.tma_ops)")
    if getattr(tile, "evict", 0) and not (tile.epi and tile.evict in (1, 2)):
        return (f"tile.evict {tile.evict} (L2 cache hints: 1 the bulk stores evict-first, 2 also "
                f"the operands' bulk copies evict-last) needs a staged epilogue (tile.epi)")
    if getattr(tile, "elect", False) and not (tile.producer and tile.tma
                                              and all(tma_ops(spec, tile))):
        return ("tile.elect (one producer warp polls the \"empty\" barriers, its first thread "
                "issues the copies) needs a producer tile whose operands are all bulk tensor "
                "copies")
    if getattr(tile, "hold", 0):
        why = hold_fits(spec, tile)
        if why:
            return why
    if getattr(tile, "skew", 0):
        why = skew_fits(spec, tile)
        if why:
            return why
    place = getattr(tile, "place", 1)
    if place != 1 and not (place == 2 and tile.persist and tile.producer and tile.cluster == 1
                           and grid_blocks(spec, tile)[1] % 2 == 0):
        return (f"tile.place {place!r} (the grid launched in clusters of two) needs 1 or 2, and "
                f"2 a persistent producer tile of cluster 1 launching an even grid, not persist "
                f"{tile.persist}, cluster {tile.cluster}, blocks {grid_blocks(spec, tile)[1]}")
    if tile.cluster == 2:
        bn = _geo(spec, tile)[1]
        jc = pair_index(spec, tile) if tile.persist else cluster_index(spec, tile)
        if jc is None or bn % 16:
            return (f"tile.cluster 2 needs an even number of blocks along a row index and a "
                    f"B tile of a multiple of 16 lines (box {tile.regs})")
    return ""


#: The named barrier of a skewed tile (``Tile.skew``): the first consumer warpgroup arrives once
#: per output tile, the second waits there before the tile's k loop (0 is the block's barrier,
#: 1 and 2 the ping-pong groups', :data:`EPI_BARRIER` + g the staged epilogue's).
SKEW_BARRIER = 3


def k_tiles(spec, tile):
    """The k tiles of one output tile of ``tile`` (a ring buffer each: a row of taps for
    ``Tile.halo``, on the channels-last problem for ``Tile.cl``); 0 where the form does not
    apply."""
    s2 = cl_spec(spec, tile)
    if s2 is None:
        return 0
    K = math.prod(s2.ashape)
    if getattr(tile, "halo", False):
        hp = halo_plan(spec, tile)
        return K // (tile.chunk * hp["kw"]) if hp else 0
    return -(-K // tile.chunk)


def skew_fits(spec, tile):
    """Why ``tile``'s ``Tile.skew`` cannot be built, or "".  The second consumer warpgroup waits
    at :data:`SKEW_BARRIER` (256 threads) before each output tile's k loop, the first arrives
    there once per tile, after issuing its k tile ``skew - 1``.  That needs a persistent producer
    tile of exactly two consumer warpgroups, cluster 1, no ping-pong, and ``1 <= skew <
    stages``: the first warpgroup's first ``skew`` k tiles of a tile lie in buffers the second
    released in the tile before (the ring holds ``stages``), so it never waits for the second
    there (no deadlock).  And ``k_tiles >= stages - skew + 1`` (and ``>= skew``): the first
    warpgroup cannot reach its next arrival, k tile ``skew - 1`` of the block's next tile,
    before the second has released a k tile of this one, hence passed its wait (two arrivals
    never meet one wait: the barrier's count would complete without the second warpgroup)."""
    sk = getattr(tile, "skew", 0)
    nbuf = _buffers(tile)
    if not (tile.persist and tile.producer and tile.cluster == 1 and not tile.pingpong
            and math.prod(tile.warps) == 8):
        return (f"tile.skew (the second consumer warpgroup trailing the first by {sk} k tiles) "
                f"needs a persistent producer tile of two consumer warpgroups (8 warps), "
                f"cluster 1, no pingpong, not warps {tile.warps}, persist {tile.persist}, "
                f"cluster {tile.cluster}")
    kt = k_tiles(spec, tile)
    if not (isinstance(sk, int) and 1 <= sk < nbuf and kt >= max(sk, nbuf - sk + 1)):
        return (f"tile.skew {sk!r} must be 1 .. stages - 1 ({nbuf - 1}) with at least "
                f"max(skew, stages - skew + 1) k tiles per output tile, not {kt}")
    return ""


def hold_fits(spec, tile):
    """Why ``tile``'s ``Tile.hold`` cannot be built, or "": a staged-epilogue tile
    (:func:`epi_plan`) of two consumer warpgroups whose operands all go by bulk tensor copies
    (the producer's registers: :data:`HOLD_REGS`), holding 1 .. chunks - 1 of each
    warpgroup's chunks."""
    hd = getattr(tile, "hold", 0)
    ep = epi_plan(spec, tile) if getattr(tile, "epi", 0) else None
    if (ep is None or not all(tma_ops(spec, tile)) or tile.cluster != 1
            or math.prod(tile.warps) != 8):
        return ("tile.hold (chunks of sums stored from registers during the next output "
                "tile's k loop) needs a staged epilogue (tile.epi, ldsm.epi_plan) of a tile of "
                "two consumer warpgroups whose operands are all bulk tensor copies, cluster 1")
    if not (isinstance(hd, int) and 1 <= hd < ep["chunks"]):
        return f"tile.hold {hd!r} must be 1 .. {ep['chunks'] - 1} (chunks per warpgroup - 1)"
    return ""


def held(spec, tile):
    """The held sums of a ``Tile.hold`` tile, per thread: a list of ``(fragment, h)`` pairs (two
    adjacent sums each: fragment ``f``'s values ``2 h``, ``2 h + 1``, row ``gq + 8 h`` of the
    warp's 16, columns ``8 f + 2 tq``, ``+ 1``), the last ``hold`` chunks' fragments, and the
    k tile of the next output tile in whose loop each pair is stored: pair ``j`` of ``n`` at k
    tile ``j * kt // n`` (``kt`` k tiles per output tile)."""
    fn = tile.frags[1]
    f0 = fn - tile.hold * EPI_COLS // 8
    pairs = [(f, h) for f in range(f0, fn) for h in (0, 1)]
    kt = k_tiles(spec, tile)
    return [(f, h, j * kt // len(pairs)) for j, (f, h) in enumerate(pairs)]


def candidates(spec, precision, cap, wgmma=False):
    """Staged tensor-core tiles: warp layouts, fragments per warp (at most 32: 128 fp32 sums per
    thread), k per tile, boxes wasting at most 35 % (or the least possible).  ``wgmma``: the
    wgmma tiles instead (:data:`WG_WARPS`, one 16-row fragment per warp, :data:`WG_FRAGS`,
    128-byte lines of k)."""
    r = roles(spec)
    if r is None:
        return
    P = spec.np
    K = math.prod(spec.ashape)
    shapes = []
    for wm, wn in WG_WARPS if wgmma else _WARPS:
        for fm in (1,) if wgmma else (1, 2, 4):
            for fn in WG_FRAGS if wgmma else (1, 2, 4, 8):
                if fm * fn > 32:
                    continue
                bm, bn = wm * fm * 16, wn * fn * 8
                if bm > 256 or bn > 256 or bm * bn < 1024:
                    continue
                ext = box(spec, r, bm, bn)
                padded = math.prod(-(-n // b) * b for n, b in zip(spec.pshape, ext, strict=True))
                shapes.append((padded / math.prod(spec.pshape), ext, (wm, wn), (fm, fn)))
    if not shapes:
        return
    limit = max(1.35, 1.05 * min(s[0] for s in shapes))
    for waste, ext, warps, frags in shapes:
        if waste > limit:
            continue
        if wgmma:
            # (cluster tiles, Tile.cluster 2, measured slower on the H100: not candidates)
            for rb in (128, 64):
                t = Tile((1,) * P, ext, rb // ESIZE[precision], mma=precision, warps=warps,
                         frags=frags, ldsm=True, wgmma=True)
                # (two blocks per SM, minblocks 2, measured no faster: not candidates)
                if smem_bytes(spec, t) <= cap:
                    yield t
                    # FP16 / BF16: the same tile with MN-major operands where the strides call
                    # for them (the model weighs their gathers)
                    m = dataclasses.replace(t, mn=True)
                    if precision != "tf32" and any(mn_ops(spec, m)):
                        yield m
            continue
        for bk in BKS[precision]:
            if bk > 2 * _pow2ceil(K) and bk != BKS[precision][0]:
                continue
            t = Tile((1,) * P, ext, bk, mma=precision, warps=warps, frags=frags, ldsm=True)
            if smem_bytes(spec, t) <= cap:
                yield t


def _slots(lines, bk, nt, vw=4):
    """Gather slots per thread of ``lines`` lines of ``bk`` k, ``vw`` elements per slot."""
    return -(-lines * (bk // vw) // nt)


def estimate(spec, tile, device, smem_cap):
    """Cost-model time of a staged tensor-core tile in SM clocks, or None if it cannot run."""
    prec = tile.mma
    ks = KSTEP[prec]
    r = tile_roles(spec, tile)
    wm, wn = tile.warps
    fm, fn = tile.frags
    nt = tile.nthreads
    bm, bn, bk, rb, _ = _geo(spec, tile)
    smem = smem_bytes(spec, tile)
    if smem > smem_cap:
        return None
    grid = [-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)]
    nb = math.prod(grid)
    K = math.prod(spec.ashape)
    ntiles = -(-K // bk)
    # a cluster tile gathers half of the B lines (the peer the other half)
    plans = [(operand_plan(spec, r.a, r.rows), bm),
             (operand_plan(spec, r.b, r.cols), bn // tile.cluster)]
    asy = async_ops(spec, tile) if tile.half else (False, False)
    vws = widths(spec, tile)
    modes = [layout(spec, tile, k, idxs) for k, idxs in ((r.a, r.rows), (r.b, r.cols))]
    # cp.async slots hold no registers
    slots = sum(_slots(lines, bk, nt) for (_, lines), a in zip(plans, asy, strict=True) if not a)
    # sums, staged loads, fragments and addresses (239 measured for 128 sums and 12 slots)
    wg = tile.wgmma
    regs = fm * fn * 4 + slots * 4 + (0 if wg else fm * 4 + fn * 2) + 24
    if regs > 255:
        return None
    regs = -(-regs // 8) * 8
    if tile.minblocks > 1:
        regs = min(regs, device.regs_sm // (nt * tile.minblocks))
    # 16 warps: __launch_bounds__ caps a thread at 128 registers, which the compiler meets
    # without spilling a few over the estimate (sums, slots and fragments stay)
    if nt * regs > device.regs_sm >= nt * regs / 1.15:
        regs = device.regs_sm // nt
    per_sm = min(device.regs_sm // (nt * regs), device.threads_sm // nt, device.smem_sm // smem,
                 32)
    if per_sm < 1:
        return None
    kst = bk // ks
    # per warp and tile: mma, ldmatrix (x4: 4 shared wavefronts), gather instructions
    mma_n = fm * fn * kst
    ldsm_n = (fm + -(-fn // 2)) * kst
    gather = 0.0
    for (p, lines), a, vw, (mode, lvec) in zip(plans, asy, vws, modes, strict=True):
        digits = 6 + 2 * (spec.na - 1) + 4 * len(p["checked"])
        if p["vector"] or a or lvec:
            per = 6.0
        elif mode == "kl":   # k digits once, four lines along the innermost index
            per = digits + 4 * (2 + 4 * len(p["checked"]))
        else:
            per = 4 * digits
        gather += _slots(lines, bk, nt, vw) * (per + (1 if a else 4))
    steps = nb * ntiles
    warps = wm * wn
    if wg:   # one wgmma per warpgroup and k step, operands read from shared memory
        mma_clk = steps * warps * mma_n * 16 * 8 * ks / RATE_WG[prec]
        groups = warps // 4
        smem_clk = steps * (groups * (64 + fn * 8) * rb + (bm + bn) * rb) / 128 / device.lds_rate
        issue_clk = steps * warps * (kst + gather) / device.fma_rate
    else:
        mma_clk = steps * warps * mma_n * 16 * 8 * ks / RATE[prec]
        smem_clk = steps * (warps * ldsm_n * 4 + 2 * (bm + bn) * rb / 128) / device.lds_rate
        issue_clk = steps * warps * (mma_n + ldsm_n * 2 + gather) / device.fma_rate
    resident = per_sm * nt / 32
    eff = min(1.0, resident / 8.0) ** 0.5
    # capped registers: the compiler may spill a few (16 warps measured slower on GEMM 4096^3)
    capped = 1.05 if nt * regs == device.regs_sm and nt > 256 else 1.0
    waves = nb / (device.sms * per_sm)
    tail = math.ceil(waves) / waves if waves < 4 else 1.0
    sm_time = max(mma_clk, smem_clk, issue_clk) / device.sms / eff * tail
    # operand tiles come from L2 (fp32, every block reads its own); DRAM sees each tensor once
    eb = ESIZE[prec] if tile.half else 4
    l2 = steps * (bm + bn // tile.cluster) * bk * eb / (2.0 * device.dram_bytes_clk)
    once = sum(math.prod(op.shape) for op in spec.inputs) * eb + math.prod(spec.pshape) * 8
    dram = once / device.dram_bytes_clk
    return max(sm_time, l2, dram) * capped + 2000.0 + 60.0 * ntiles


_PRELUDE_LDSM = r"""
__device__ __forceinline__ void merit_ldsm4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                            unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void merit_ldsm2(unsigned& r0, unsigned& r1, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void merit_ldsm4t(unsigned& r0, unsigned& r1, unsigned& r2,
                                             unsigned& r3, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void merit_ldsm2t(unsigned& r0, unsigned& r1, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r0), "=r"(r1) : "r"(addr));
}
"""
_STORE = {
    "tf32": r"""
__device__ __forceinline__ void merit_st4(unsigned addr, float a, float b, float c, float d) {
    // TF32: round to nearest, ties away, once, when the element is staged
    unsigned x = (__float_as_uint(a) + 0x1000u) & 0xffffe000u;
    unsigned y = (__float_as_uint(b) + 0x1000u) & 0xffffe000u;
    unsigned z = (__float_as_uint(c) + 0x1000u) & 0xffffe000u;
    unsigned w = (__float_as_uint(d) + 0x1000u) & 0xffffe000u;
    asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" :: "r"(addr), "r"(x), "r"(y), "r"(z),
                 "r"(w));
}
""",
    "half": r"""
__device__ __forceinline__ void merit_st4(unsigned addr, float a, float b, float c, float d) {
    unsigned x, y;
    asm("cvt.rn.TYx2.f32 %0, %1, %2;\n" : "=r"(x) : "f"(b), "f"(a));
    asm("cvt.rn.TYx2.f32 %0, %1, %2;\n" : "=r"(y) : "f"(d), "f"(c));
    asm volatile("st.shared.v2.b32 [%0], {%1,%2};\n" :: "r"(addr), "r"(x), "r"(y));
}
""",
}


_PRELUDE_WGMMA = r"""
__device__ __forceinline__ unsigned long long merit_desc(unsigned addr) {
    // shared-memory matrix descriptor: start address, leading byte offset 16 (unused by the
    // swizzled K-major layout), stride byte offset 8 lines (SBO), the RB-byte swizzle (MODE)
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (SBOull << 32)
           | (MODEull << 62);
}
__device__ __forceinline__ void merit_wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void merit_wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void merit_wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void merit_wg_wait1() {
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
}
__device__ __forceinline__ void merit_proxy_fence() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void merit_keep(float& x) {
    asm volatile("" : "+f"(x) :: "memory");
}
"""
_PRELUDE_MN = r"""
__device__ __forceinline__ unsigned long long merit_desc_mn(unsigned addr) {
    // MN-major operand, 128-byte swizzle: leading byte offset BK128 (groups of 64 lines),
    // stride byte offset 1024 (groups of 8 k)
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | HIull;
}
"""
_PRELUDE_AREG = r"""
__device__ __forceinline__ unsigned merit_ldtf(unsigned addr) {
    // one fp32 word of the MN-major A tile, rounded to TF32 (to nearest, ties away): an element
    // of wgmma's A fragment
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
    unsigned x;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(x) : "f"(v));
    return x;
}
"""
_PRELUDE_MBAR = r"""
__device__ __forceinline__ void merit_mb_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void merit_mb_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void merit_mb_arrive(unsigned bar) {
    // one arrival (release: this thread's shared stores before it are seen by the waiters)
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n"
                 :: "r"(bar) : "memory");
}
__device__ __forceinline__ void merit_mb_cp_arrive(unsigned bar) {
    // one arrival, made when every cp.async this thread issued before it has landed
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void merit_mb_wait(unsigned bar, unsigned parity) {
    // until the phase of the given parity has completed
    asm volatile("{\n.reg .pred p;\nMERIT_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@p bra MERIT_DONE;\nbra MERIT_WAIT;\nMERIT_DONE:\n}\n"
                 :: "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void merit_await_all() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
"""
_PRELUDE_PINGPONG = r"""
__device__ __forceinline__ void merit_bar_sync(int id, int n) {
    // named barrier id of n threads: wait (ping-pong tiles: the other group's k loop is done)
    asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void merit_bar_arrive(int id, int n) {
    // named barrier id of n threads: arrive without waiting
    asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(n) : "memory");
}
"""
_PRELUDE_MAXNREG = r"""
template <int N> __device__ __forceinline__ void merit_maxnreg_inc() {
    // this warpgroup's registers a thread raised to N (taken from those another released)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(N));
}
template <int N> __device__ __forceinline__ void merit_maxnreg_dec() {
    // this warpgroup's registers a thread lowered to N (released to the block's others)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(N));
}
"""
#: ``Tile.hold``: the registers a thread of the consumer warpgroups and of the producer
#: warpgroup after ``setmaxnreg`` (two consumers' and one producer's within the 512 a thread
#: slot of each SM quarter holds: 2 x 232 + 40).
HOLD_REGS = (232, 40)
_PRELUDE_TMA = r"""
struct __align__(64) MeritTmap { unsigned long long v[16]; };   // a CUtensorMap, by value
__device__ __forceinline__ void merit_mb_expect(unsigned bar, unsigned bytes) {
    // one arrival that also expects ``bytes`` of bulk copies to complete on the barrier
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void merit_tma2mc(unsigned dst, const MeritTmap* map, int c0, int c1,
                                             unsigned bar) {
    // the same box into both blocks of the cluster (same offsets), completing on each one's bar
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1),
                    "r"(bar), "h"((unsigned short)3) : "memory");
}
__device__ __forceinline__ void merit_mb_arrive_peer(unsigned bar, unsigned rank) {
    // one arrival on the barrier at the same offset in block ``rank`` of the cluster
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n"
                 :: "r"(bar), "r"(rank) : "memory");
}
__device__ __forceinline__ void merit_tma2(unsigned dst, const MeritTmap* map, int c0, int c1,
                                           unsigned bar) {
    // one box of a 2-D tensor map (zero-filled outside the tensor) into shared memory
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1),
                    "r"(bar) : "memory");
}
"""
def _tma_nd(n):
    """The device function copying one box of an ``n``-D tensor map (coordinates innermost
    first; zero fill outside the tensor) into shared memory, completing on an mbarrier: the
    channels-last image's box (``merit_tmac<n>``, beside the 2-D boxes' ``merit_tma2``)."""
    cs = ", ".join(f"int c{i}" for i in range(n))
    regs = ", ".join(f"%{i + 2}" for i in range(n))
    ins = ", ".join(f'"r"(c{i})' for i in range(n))
    return (f"__device__ __forceinline__ void merit_tmac{n}(unsigned dst, const MeritTmap* map, "
            f"{cs}, unsigned bar) {{\n"
            f'    asm volatile("cp.async.bulk.tensor.{n}d.shared::cluster.global.'
            f'mbarrier::complete_tx::bytes [%0], [%1, {{{regs}}}], [%{n + 2}];\\n"\n'
            f'                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), {ins}, '
            f'"r"(bar) : "memory");\n}}\n')


_PRELUDE_CLUSTER = r"""
__device__ __forceinline__ unsigned merit_mapa(unsigned addr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}
__device__ __forceinline__ void merit_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void merit_proxy_fence_cluster() {
    asm volatile("fence.proxy.async.shared::cluster;\n" ::: "memory");
}
MERIT_ST4X
"""


def _store_x(prec):
    """``merit_st4x``: ``merit_st4`` into this block's buffer and the cluster peer's."""
    if prec == "tf32":
        return r"""
__device__ __forceinline__ void merit_st4x(unsigned addr, unsigned raddr, float a, float b,
                                           float c, float d) {
    unsigned x = (__float_as_uint(a) + 0x1000u) & 0xffffe000u;
    unsigned y = (__float_as_uint(b) + 0x1000u) & 0xffffe000u;
    unsigned z = (__float_as_uint(c) + 0x1000u) & 0xffffe000u;
    unsigned w = (__float_as_uint(d) + 0x1000u) & 0xffffe000u;
    asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" :: "r"(addr), "r"(x), "r"(y), "r"(z),
                 "r"(w));
    asm volatile("st.shared::cluster.v4.b32 [%0], {%1,%2,%3,%4};\n" :: "r"(raddr), "r"(x),
                 "r"(y), "r"(z), "r"(w));
}
"""
    ty = "f16" if prec == "fp16" else "bf16"
    return r"""
__device__ __forceinline__ void merit_st4x(unsigned addr, unsigned raddr, float a, float b,
                                           float c, float d) {
    unsigned x, y;
    asm("cvt.rn.TYx2.f32 %0, %1, %2;\n" : "=r"(x) : "f"(b), "f"(a));
    asm("cvt.rn.TYx2.f32 %0, %1, %2;\n" : "=r"(y) : "f"(d), "f"(c));
    asm volatile("st.shared.v2.b32 [%0], {%1,%2};\n" :: "r"(addr), "r"(x), "r"(y));
    asm volatile("st.shared::cluster.v2.b32 [%0], {%1,%2};\n" :: "r"(raddr), "r"(x), "r"(y));
}
""".replace("TY", ty)


def cluster_index(spec, tile):
    """The row index along which a cluster's two blocks lie (the first of the rows whose block
    count is even), or None."""
    r = tile_roles(spec, tile)
    grid = [-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)]
    for j in r.rows:
        if grid[j] % 2 == 0:
            return j
    return None


def pair_index(spec, tile):
    """A persistent cluster tile's pair axis: the first row index with two blocks or more (the
    cluster's two blocks take neighbouring blocks along it and share the B tile), or None."""
    r = tile_roles(spec, tile)
    grid = [-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)]
    return next((j for j in r.rows if grid[j] >= 2), None)


def pair_schedule(spec, tile):
    """The output tiles of a persistent cluster tile (``Tile.cluster`` 2 with ``Tile.persist``)
    per block, in its order: block ``b`` (cluster ``b // 2``, rank ``b % 2``) walks the pair
    slots ``b // 2, b // 2 + C, ...`` (``C`` clusters); slot ``q``'s digits are the blocks'
    along each parallel index (the last fastest) with the pair axis (:func:`pair_index`) counted
    in pairs, and rank ``c`` takes block ``2 p + c`` of the pair ``p``.  A tile is a tuple of
    block coordinates, or None where block ``2 p + 1`` lies past the output (an odd number of
    blocks along the pair axis): as the generated ``open_tiles`` loop computes them."""
    grid = [-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)]
    jc = pair_index(spec, tile)
    slots, nblocks = grid_blocks(spec, tile)
    per = [-(-g // 2) if j == jc else g for j, g in enumerate(grid)]
    out = []
    for b in range(nblocks):
        mine = []
        for q in range(b // 2, slots // 2, nblocks // 2):
            c = [0] * len(grid)
            for j in range(len(grid) - 1, -1, -1):
                c[j] = q % per[j]
                q //= per[j]
            c[jc] = 2 * c[jc] + b % 2
            mine.append(tuple(c) if c[jc] < grid[jc] else None)
        out.append(mine)
    return out


_WG_TYPE = {"tf32": ("k8", "tf32", False), "fp16": ("k16", "f16", True),
            "bf16": ("k16", "bf16", True)}


def wgmma_asm(prec, n, accs, da, db, ta=False, tb=False):
    """The ``wgmma.mma_async`` statement of an m64 x ``n`` x k-step product adding into the
    fp32 sums ``accs`` (4 n / 8 names, in the fragment order of ``mma.sync``'s m16n8 sums per
    8 columns), with descriptor expressions ``da`` (A) and ``db`` (B), K-major, or MN-major
    where ``ta`` / ``tb`` (the instruction's transpose flags, FP16 / BF16 only)."""
    kshape, ty, trans = _WG_TYPE[prec]
    if (ta or tb) and not trans:
        raise ValueError(f"wgmma transposes 16-bit operands only, not {prec}")
    nacc = len(accs)
    regs = ", ".join(f"%{i}" for i in range(nacc))
    tail = f"p, 1, 1, {int(ta)}, {int(tb)}" if trans else "p, 1, 1"
    ins = (f"wgmma.mma_async.sync.aligned.m64n{n}{kshape}.f32.{ty}.{ty} "
           f"{{{regs}}}, %{nacc}, %{nacc + 1}, {tail};")
    outs = ", ".join(f'"+f"({a})' for a in accs)
    return (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nacc + 2}, 0;\\n{ins}\\n}}\\n" '
            f': {outs} : "l"({da}), "l"({db}), "r"(1));')


def wgmma_asm_ra(n, accs, aregs, db):
    """The ``wgmma.mma_async`` statement of an m64 x ``n`` x 8 TF32 product whose A fragment is
    in the four registers ``aregs`` (rows ``gq``, ``gq + 8`` at k ``tq``, then at ``tq + 4``)
    and whose B is read through the K-major descriptor expression ``db``."""
    nacc = len(accs)
    regs = ", ".join(f"%{i}" for i in range(nacc))
    ar = ", ".join(f"%{nacc + i}" for i in range(4))
    ins = (f"wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 "
           f"{{{regs}}}, {{{ar}}}, %{nacc + 4}, p, 1, 1;")
    outs = ", ".join(f'"+f"({a})' for a in accs)
    ins_a = ", ".join(f'"r"({a})' for a in aregs)
    return (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nacc + 5}, 0;\\n{ins}\\n}}\\n" '
            f': {outs} : {ins_a}, "l"({db}), "r"(1));')


def _store_prelude(prec):
    if prec == "tf32":
        return _STORE["tf32"]
    return _STORE["half"].replace("TY", "f16" if prec == "fp16" else "bf16")


_PRELUDE_HALF = r"""
__device__ __forceinline__ void merit_st4h(unsigned addr, const unsigned short* h) {
    // four 2-byte elements already in the operand precision: stored as they are
    const unsigned x = (unsigned)h[0] | ((unsigned)h[1] << 16);
    const unsigned y = (unsigned)h[2] | ((unsigned)h[3] << 16);
    asm volatile("st.shared.v2.b32 [%0], {%1,%2};\n" :: "r"(addr), "r"(x), "r"(y));
}
__device__ __forceinline__ void merit_acp8(unsigned addr, const void* src, bool ok) {
    // four 2-byte elements straight into the swizzled layout; zero-filled when !ok
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n"
                 :: "r"(addr), "l"(src), "r"(ok ? 8 : 0) : "memory");
}
__device__ __forceinline__ void merit_acommit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void merit_acp16(unsigned addr, const void* src, bool ok) {
    // eight 2-byte elements (16 bytes, L2 only) straight into the layout; zero-filled when !ok
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(addr), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
template <int N> __device__ __forceinline__ void merit_await() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
"""


def source(spec, tile):
    """CUDA source of the staged tensor-core kernel and its launch geometry."""
    from .codegen import (
        _CTYPE,
        _load_function,
        _strategy_struct,
        _Writer,
        kernel_name,
    )
    from .mma import _decompose_code, emit_epilogue, header

    if tile.cl:   # the kernel of the channels-last copies
        spec2 = cl_spec(spec, tile)
        if spec2 is None:
            raise ValueError(wgmma_fits(spec, tile) or "tile.cl does not apply")
        spec = spec2
    r = tile_roles(spec, tile)
    if r is None:
        raise ValueError(f"problem {spec.name!r} is not a dot product the tensor cores can run")
    prec = tile.mma
    ks = KSTEP[prec]
    es = ESIZE[prec]
    name = kernel_name(spec, tile)
    P, A = spec.np, spec.na
    blk = tile.block
    grid = [-(-n // b) for n, b in zip(spec.pshape, blk, strict=True)]
    nblocks = math.prod(grid)
    nt = tile.nthreads
    wm_n, wn_n = tile.warps
    fm_n, fn_n = tile.frags
    bm, bn, bk, rb, chunks = _geo(spec, tile)
    pers = None
    if tile.persist:   # (output tiles, blocks launched): each block loops over output tiles
        pers = grid_blocks(spec, tile)
        nblocks = pers[1]
    wg = tile.wgmma
    if wg and wgmma_fits(spec, tile):
        raise ValueError(wgmma_fits(spec, tile))
    cl = tile.cluster
    jc = (pair_index(spec, tile) if pers else cluster_index(spec, tile)) if cl > 1 else None
    # a persistent cluster tile whose pair axis has an odd number of blocks: the last pair's
    # second tile lies past the output (its block copies A's last rows instead, stores nothing)
    odd = bool(pers and cl > 1 and grid[jc] % 2)
    if bk % ks or bk % 8 or chunks < 2:
        raise ValueError(f"tile.chunk {bk} must be a multiple of {max(ks, 8)} for {prec} "
                         f"staging (32 bytes per line at least)")
    K = math.prod(spec.ashape)
    ntiles = -(-K // bk)
    stage_bytes = (bm + bn) * rb
    b_off = bm * rb
    hp = halo_plan(spec, tile) if tile.halo else None
    if tile.halo:   # a buffer per row of taps: its phase boxes, then the kw taps' weights
        if hp is None:
            raise ValueError(wgmma_fits(spec, tile) or "tile.halo does not apply")
        ntiles = K // (bk * hp["kw"])
        stage_bytes = hp["stage"]
        b_off = len(hp["phases"]) * hp["astep"]
    smem = smem_bytes(spec, tile)

    how = "wgmma (sm_90a)" if wg else "ldmatrix"
    out = header(spec, tile, name, f"tensor cores: {prec}, operands staged at {es} bytes, {how}")
    if wg:   # 128-byte lines: swizzle mode 1, 8 lines = 1024 bytes; 64-byte: mode 2, 512
        out.append(_PRELUDE_WGMMA.replace("SBO", str(8 * rb // 16)).replace("RB", str(rb))
                   .replace("MODE", "1" if rb == 128 else "2"))
        if tile.areg:
            out.append(_PRELUDE_AREG)
        elif any(mn_ops(spec, tile)):
            out.append(_PRELUDE_MN.replace("BK128", str(bk * 128))
                       .replace("HI", f"0x{descriptor(0, bk * 128, 1024, 128):016x}"))
    else:
        out.append(_PRELUDE_LDSM)
    out.append(_store_prelude(prec))
    hv = tile.half
    if hv:
        why = half_fits(spec, tile)
        if why:
            raise ValueError(why)
        out.append(_PRELUDE_HALF)
    if tile.producer:
        out.append(_PRELUDE_MBAR)
    if tile.pingpong or tile.skew:
        out.append(_PRELUDE_PINGPONG)
    if tile.hold:
        out.append(_PRELUDE_MAXNREG)
    if tile.tma:
        out.append(evict_loads(_PRELUDE_TMA) if tile.evict == 2 else _PRELUDE_TMA)
        out += [_tma_nd(len(t["dims"])) for t in tma_ops(spec, tile) if t and t.get("cl")]
    ep = epi_plan(spec, tile) if tile.epi else None
    if ep:
        out.append(evict_stores(_PRELUDE_EPI) if tile.evict else _PRELUDE_EPI)
    asy = async_ops(spec, tile) if hv else (False, False)
    a4s = word_ops(spec, tile)
    if any(a4s):   # TF32 producer tiles: word copies, counted with the other cp.async slots
        out.append(_PRELUDE_WORD)
        asy = tuple(a or b for a, b in zip(asy, a4s, strict=True))
    nbuf = _buffers(tile)
    out.append(_strategy_struct(spec, "float"))
    for k in range(len(spec.inputs)):
        if spec.inputs[k].stage != "loop":
            out.append(_load_function(spec, k, "float"))
    params = [f"const {'unsigned short' if hv and k in (r.a, r.b) else 'T'}* __restrict__ g_in{k}"
              for k in range(len(spec.inputs))]
    params += [f"{_CTYPE[spec.out_dtype]}* __restrict__ g_out{o}" for o in range(spec.outputs)]
    if tile.tma:   # after the arrays: the tensor maps of the operands the copy engine takes
        params += [f"const __grid_constant__ MeritTmap tm{oi}"
                   for oi, t in enumerate(tma_ops(spec, tile)) if t]
    if ep:   # the output's tensor map (bulk stores of the staged epilogue), last
        params.append("const __grid_constant__ MeritTmap tmo")
    if cl > 1:
        out.append(_PRELUDE_CLUSTER.replace("MERIT_ST4X", _store_x(prec)))
    cd = cluster_dims(tile)   # the launch's clusters (Tile.cluster, or Tile.place alone)
    cdims = f"__cluster_dims__({cd}, 1, 1) " if cd > 1 else ""
    lb = f"{nt}, {tile.minblocks}" if tile.minblocks > 1 else f"{nt}"
    out.append(f'extern "C" __global__ void __launch_bounds__({lb}) {cdims}{name}('
               f'{", ".join(params)}) {{')
    w = _Writer()
    w("extern __shared__ __align__(128) unsigned char smem_raw[];")
    if wg:   # the swizzle acts on address bits: buffers start at a multiple of its period
        w(f"const unsigned sbase = ((unsigned)__cvta_generic_to_shared(smem_raw) + "
          f"{WG_ALIGN - 1}u) & ~{WG_ALIGN - 1}u;")
    else:
        w("const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem_raw);")
    w("const int tid = threadIdx.x;")
    w("const int lane = tid & 31, warp = tid >> 5;")
    if tile.pingpong:   # two consumer groups of one warpgroup each: pp, the group
        w("const int wm = warp & 3, wn = 0, pp = (warp >> 2) & 1;")
    else:
        w(f"const int wm = warp % {wm_n}, wn = warp / {wm_n};")
    w("const int gq = lane >> 2, tq = lane & 3;")
    if cl > 1 and pers:   # the cluster's rank; its pairs of output tiles: open_tiles
        w("const unsigned crank = blockIdx.x & 1;")
    elif cl > 1:
        # a cluster's two blocks take neighbouring blocks along row index jc (same columns):
        # each gathers half of the B tile's lines into both blocks' shared memory
        w("const unsigned crank = blockIdx.x & 1;")
        w("int bq = blockIdx.x >> 1;")
        for j in range(P - 1, -1, -1):
            if j == jc:
                w(f"const int pb{j} = ((bq % {grid[j] // 2}) * 2 + (int)crank) * {blk[j]}; "
                  f"bq /= {grid[j] // 2};")
            else:
                w(f"const int pb{j} = (bq % {grid[j]}) * {blk[j]}; bq /= {grid[j]};")
        w("const unsigned speer = merit_mapa(sbase, crank ^ 1u);")
    elif not pers:
        w("int bq = blockIdx.x;")
        for j in range(P - 1, -1, -1):
            w(f"const int pb{j} = (bq % {grid[j]}) * {blk[j]}; bq /= {grid[j]};")

    def open_tiles(group=False):
        """A persistent tile's loop over its block's output tiles (:func:`schedule`), with their
        block coordinates ``pb<j>``; ``g0`` counts the k tiles of the tiles before.  ``group``
        (a ping-pong tile's consumers): group ``pp`` takes every other of them, from its
        ``pp``-th."""
        if group:
            w.open(f"for (int t = blockIdx.x + pp * {pers[1]}; t < {pers[0]}; "
                   f"t += {2 * pers[1]})")
        elif cl > 1:   # clusters: pair slots (pair_schedule), rank crank of each pair
            w.open(f"for (int t = blockIdx.x >> 1; t < {pers[0] // 2}; t += {pers[1] // 2})")
            w("int bq = t;")
            for j in range(P - 1, -1, -1):
                if j == jc:
                    n2 = -(-grid[j] // 2)
                    w(f"const int pb{j} = ((bq % {n2}) * 2 + (int)crank) * {blk[j]}; "
                      f"bq /= {n2};")
                else:
                    w(f"const int pb{j} = (bq % {grid[j]}) * {blk[j]}; bq /= {grid[j]};")
            if odd:   # the copies' rows of a tile past the output: the last block's
                w(f"const int pc{jc} = min(pb{jc}, {(grid[jc] - 1) * blk[jc]});")
            return
        else:
            w.open(f"for (int t = blockIdx.x; t < {pers[0]}; t += {pers[1]})")
        w("int bq = t;")
        for j in range(P - 1, -1, -1):
            w(f"const int pb{j} = (bq % {grid[j]}) * {blk[j]}; bq /= {grid[j]};")

    # a producer tile: the consumers' sums and the mbarriers first, then the producer
    # warpgroup's branch (the gather below, its copy loop, return); the consumers follow
    ng = PRODUCER if tile.producer else nt
    tmas = tma_ops(spec, tile) if tile.tma else (None, None)
    if tile.producer:
        nreg = sum(1 for a, t in zip(asy, tmas, strict=True) if not a and not t)
        _emit_producer_head(w, tile, stage_bytes, nt - ng, nreg, tmas, asy)
        if pers:
            w("int g0 = 0;   // k tiles of this block's earlier output tiles")
            open_tiles()

    # ---- the gather: per operand and slot, four consecutive k of a line ("lk" layout) or
    # four consecutive lines at one k ("kl" layout, read with ldmatrix.trans) ----
    ops = []
    vws = widths(spec, tile)
    mns = mn_ops(spec, tile)
    for k, idxs, lines, base in ((r.a, r.rows, bm, 0), (r.b, r.cols, bn, b_off)):
        p = operand_plan(spec, k, idxs)
        mode, lvec = layout(spec, tile, k, idxs)
        share = cl > 1 and k == r.b
        own = lines // cl if share else lines      # lines this block gathers
        vw = vws[len(ops)]
        nsl = 0 if tmas[len(ops)] else _slots(own, bk, ng, vw)
        exact = own * (bk // vw) % ng == 0
        ops.append(dict(k=k, idxs=idxs, lines=lines, base=base, p=p, nsl=nsl, exact=exact,
                        asy=asy[len(ops)], vw=vw, mn=mns[len(ops)], a4=a4s[len(ops)],
                        mode=mode, lvec=lvec, own=own, share=share,
                        loff=f" + (int)crank * {own}" if share else ""))
    tr_of = {k: spec.inputs[k].transform for k in (r.a, r.b)}
    idx_t = "int" if all(math.prod(tr_of[k].source_shape) < 2**31 for k in tr_of) else "long long"

    def line_terms(k, ax):
        return [(pos, s) for pos, s in tr_of[k].terms[ax] if pos < P]

    def k_terms(k, ax):
        return [(pos - P, s) for pos, s in tr_of[k].terms[ax] if pos >= P]

    def swz(row_expr, pieces):   # as swizzle()
        m = _group(pieces)
        return f"(({row_expr}) / {max(1, 8 // m)}) % {m}"

    decls = []
    for oi, op in enumerate(ops):
        k, idxs, lines, base, p = op["k"], op["idxs"], op["lines"], op["base"], op["p"]
        nsl, exact, kl = op["nsl"], op["exact"], op["mode"] == "kl"
        own, loff, vw = op["own"], op["loff"], op["vw"]
        tr = tr_of[k]
        vk = bk // vw
        inner = idxs[-1] if idxs else None
        for i in range(nsl):
            decls.append(f"{idx_t} lb{oi}_{i};")
            decls += [f"int lx{oi}_{i}_{ax};" for ax in p["checked"]]
            if not op["asy"]:
                decls.append(f"{'unsigned short' if hv else 'float'} f{oi}_{i}[4];")
            w(f"// operand {k} slot {i} ({op['mode']})")
            w(f"const int v{oi}_{i} = tid + {i * ng};")
            if kl:
                w(f"const int ln{oi}_{i} = {vw} * (v{oi}_{i} % {lines // vw}), "
                  f"kq{oi}_{i} = v{oi}_{i} / {lines // vw};")
            elif p["klanes"]:
                w(f"const int kq{oi}_{i} = {vw} * (v{oi}_{i} % {vk}), "
                  f"ln{oi}_{i} = v{oi}_{i} / {vk}{loff};")
            else:
                w(f"const int ln{oi}_{i} = v{oi}_{i} % {own}{loff}, "
                  f"kq{oi}_{i} = {vw} * (v{oi}_{i} / {own});")
            valid = "true" if exact or (i + 1) * ng <= own * vk else f"v{oi}_{i} < {own * vk}"
            w(f"const bool in{oi}_{i} = {valid};")
            # the line's parallel coordinates, clamped into the problem (overhanging lines read
            # valid memory; their outputs are not stored); a "kl" vector of four lines starts at
            # most four before the end of its (4-aligned) innermost index
            w.open("")
            for line in _decompose_code("q", f"min(ln{oi}_{i}, {lines - 1})", idxs, blk, "u"):
                w(line)
            for j in range(P):
                rel = f" + u{j}" if j in idxs else ""
                last = spec.pshape[j] - (vw if kl and j == inner else 1)
                w(f"const int p{j} = min(pb{j}{rel}, {last});")
            lin = [str(p["const"])] + [f"({idx_t})p{j} * {p['coef'][j]}" for j in range(P)
                                       if p["coef"][j]]
            w(f"lb{oi}_{i} = {' + '.join(lin)};")
            for ax in p["checked"]:
                parts = [str(tr.offset[ax])] + [f"p{pos} * {s}" for pos, s in line_terms(k, ax)]
                w(f"lx{oi}_{i}_{ax} = {' + '.join(parts)};")
            w.close()
            # the shared address of the slot's four (eight) elements (k-tile independent)
            if op["mn"]:   # as mn_offset()
                q = f"kq{oi}_{i}"
                w(f"const unsigned sa{oi}_{i} = {base} + (ln{oi}_{i} >> 6) * {bk * 128} + "
                  f"({q} >> 3) * 1024 + ({q} & 7) * 128 + "
                  f"((((ln{oi}_{i} & 63) >> 3) ^ ({q} & 7)) << 4) + (ln{oi}_{i} & 7) * 2;")
            elif kl:
                pieces = lines * es // 16
                w(f"const unsigned sa{oi}_{i} = {base} + kq{oi}_{i} * {lines * es} + "
                  f"((((ln{oi}_{i} * {es}) >> 4) ^ ({swz(f'kq{oi}_{i}', pieces)})) << 4) + "
                  f"((ln{oi}_{i} * {es}) & 15);")
            else:
                w(f"const unsigned sa{oi}_{i} = {base} + ln{oi}_{i} * {rb} + "
                  f"((((kq{oi}_{i} * {es}) >> 4) ^ ({swz(f'ln{oi}_{i}', chunks)})) << 4) + "
                  f"((kq{oi}_{i} * {es}) & 15);")
    # declarations precede the slots' blocks
    first = next((n for n, ln in enumerate(w.lines) if "// operand" in ln), None)
    if first is not None:   # (none where the copy engine takes both operands)
        w.lines[first:first] = ["    " + d for d in decls]

    def emit_checks(k, p, oi, i, axes, elem):
        """Boundary checks and address clamps of ``axes`` (element offset ``elem`` along the
        innermost line index, or None)."""
        tr = tr_of[k]
        st = _gstrides(tr.source_shape)
        for ax in axes:
            parts = [f"lx{oi}_{i}_{ax}"] + [f"a{a} * {s}" for a, s in k_terms(k, ax)]
            if elem is not None:
                parts += [f"{elem} * {s}" for pos, s in line_terms(k, ax)
                          if pos == ops[oi]["idxs"][-1]]
            w(f"const int x{ax} = {' + '.join(parts)};")
            n = tr.source_shape[ax]
            if tr.boundary[ax] == "zero":
                w(f"ok = ok && ((unsigned)x{ax} < {n}u);")
            # clamp (and "error", proved in range on the host); a zero-filled element's address
            # is clamped too, so no load leaves the tensor
            w(f"at += ({idx_t})(min(max(x{ax}, 0), {n - 1}) - x{ax}) * {st[ax]};")

    def emit_kdigits(expr):
        w(f"int q = {expr};")
        w(f"bool ok = q < {K};" if K % bk else "bool ok = true;")
        if K % bk:
            w(f"q = min(q, {K - 1});")
        for a in range(A - 1, -1, -1):
            if a > 0:
                w(f"const int a{a} = q % {spec.ashape[a]}; q /= {spec.ashape[a]};")
            else:
                w("const int a0 = q;")

    def klin(p):
        kl = [f"({idx_t})a{a} * {p['coef'][P + a]}" for a in range(A) if p["coef"][P + a]]
        return " + " + " + ".join(kl) if kl else ""

    zero = "(unsigned short)0" if hv else "0.f"

    def emit_loads(kt_expr, buf_expr=None, part="all"):
        """Global loads of k-tile ``kt_expr`` into the slots' registers; with ``buf_expr`` (a
        ``half`` tile) also the ``cp.async`` slots' copies into that buffer; ``part`` "reg" or
        "asy": only those of register slots, or of ``cp.async`` slots."""
        for oi, op in enumerate(ops):
            k, p, nsl, exact = op["k"], op["p"], op["nsl"], op["exact"]
            inner = op["idxs"][-1] if op["idxs"] else None
            if (op["asy"] and buf_expr is None) or part == ("asy", "reg")[op["asy"]]:
                continue
            for i in range(nsl):
                f = f"f{oi}_{i}"
                w.open(f"if (in{oi}_{i})" if not exact else "")
                if op["a4"]:   # four words of a line (K-major piece); lane groups of 8 take
                    # the k in rotated order, so a warp's copies hit 32 banks and 4 full sectors
                    w("#pragma unroll")
                    w.open("for (int e = 0; e < 4; ++e)")
                    w("const int ee = (e + (lane >> 3)) & 3;")
                    emit_kdigits(f"{kt_expr} * {bk} + kq{oi}_{i} + ee")
                    w(f"{idx_t} at = lb{oi}_{i}{klin(p)};")
                    emit_checks(k, p, oi, i, p["checked"], None)
                    w(f"merit_acp4(sbase + {buf_expr} * {stage_bytes} + sa{oi}_{i} + ee * 4, "
                      f"g_in{k} + at, ok);")
                    w.close()
                    w.close()
                    continue
                if op["asy"]:
                    dst = f"sbase + {buf_expr} * {stage_bytes} + sa{oi}_{i}"
                    cpy = f"merit_acp{2 * op['vw']}"
                    if op["mode"] == "kl":   # 4 (8) lines at one k, all inside or all outside
                        emit_kdigits(f"{kt_expr} * {bk} + kq{oi}_{i}")
                        w(f"{idx_t} at = lb{oi}_{i}{klin(p)};")
                        emit_checks(k, p, oi, i, p["checked"], None)
                        w(f"{cpy}({dst}, g_in{k} + at, ok);")
                    else:                    # 4 (8) consecutive k of a line
                        w(f"const int k0 = {kt_expr} * {bk} + kq{oi}_{i};")
                        kk = f"min(k0, {K - op['vw']})" if K % bk else "k0"
                        w(f"{cpy}({dst}, g_in{k} + lb{oi}_{i} + ({idx_t}){kk}, "
                          f"{f'k0 < {K}' if K % bk else 'true'});")
                    w.close()
                    continue
                if op["mode"] == "kl":
                    emit_kdigits(f"{kt_expr} * {bk} + kq{oi}_{i}")
                    w(f"{idx_t} at = lb{oi}_{i}{klin(p)};")
                    moving = [ax for ax in p["checked"]
                              if any(pos == inner for pos, _ in line_terms(k, ax))]
                    emit_checks(k, p, oi, i, [ax for ax in p["checked"] if ax not in moving],
                                None)
                    if op["lvec"]:
                        w(f"float4 v = ok ? __ldg(reinterpret_cast<const float4*>(g_in{k} + at))"
                          f" : make_float4(0.f, 0.f, 0.f, 0.f);")
                        w(f"{f}[0] = v.x; {f}[1] = v.y; {f}[2] = v.z; {f}[3] = v.w;")
                    else:
                        w("const bool ok0 = ok;")
                        w(f"const {idx_t} at0 = at;")
                        w("#pragma unroll")
                        w.open("for (int e = 0; e < 4; ++e)")
                        w(f"bool ok = ok0; {idx_t} at = at0 + e;")
                        emit_checks(k, p, oi, i, moving, "e")
                        w(f"{f}[e] = ok ? __ldg(g_in{k} + at) : {zero};")
                        w.close()
                elif p["vector"]:
                    w(f"const int k0 = {kt_expr} * {bk} + kq{oi}_{i};")
                    src = f"g_in{k} + lb{oi}_{i} + ({idx_t})k0"
                    if K % bk:
                        w(f"float4 v = k0 < {K} ? __ldg(reinterpret_cast<const float4*>({src})) "
                          f": make_float4(0.f, 0.f, 0.f, 0.f);")
                    else:
                        w(f"const float4 v = __ldg(reinterpret_cast<const float4*>({src}));")
                    w(f"{f}[0] = v.x; {f}[1] = v.y; {f}[2] = v.z; {f}[3] = v.w;")
                else:
                    w("#pragma unroll")
                    w.open("for (int e = 0; e < 4; ++e)")
                    emit_kdigits(f"{kt_expr} * {bk} + kq{oi}_{i} + e")
                    w(f"{idx_t} at = lb{oi}_{i}{klin(p)};")
                    emit_checks(k, p, oi, i, p["checked"], None)
                    w(f"{f}[e] = ok ? __ldg(g_in{k} + at) : {zero};")
                    w.close()
                w.close()

    def emit_stores(buf_expr):
        for oi, op in enumerate(ops):
            if op["asy"]:
                continue
            for i in range(op["nsl"]):
                f = f"f{oi}_{i}"
                at = f"{buf_expr} * {stage_bytes} + sa{oi}_{i}"
                if hv:
                    st = f"merit_st4h(sbase + {at}, {f});"
                elif op["share"]:   # into this block's buffer and the cluster peer's
                    st = (f"merit_st4x(sbase + {at}, speer + {at}, {f}[0], {f}[1], {f}[2], "
                          f"{f}[3]);")
                else:
                    st = f"merit_st4(sbase + {at}, {f}[0], {f}[1], {f}[2], {f}[3]);"
                w(st if op["exact"] else f"if (in{oi}_{i}) {st}")

    # ldmatrix addresses per lane.  "lk": the lane's line (16-row A fragments: rows by lane
    # bits 0-3, k piece by bit 4; 8-column B fragment pairs: columns by bits 0-2 and 4, k piece
    # by bit 3).  "kl" (.trans): the lane's k row (A: bits 0-2 and 4, B: bits 0-3) and line piece
    # (A: bit 3, B: bit 4)
    oa, ob = ops
    if wg:
        if tile.producer:
            reg = any(not a and not t for a, t in zip(asy, tmas, strict=True))
            _emit_producer_loop(w, tile, emit_loads, emit_stores, ntiles, stage_bytes, reg,
                                tmas, (0, b_off), spec, jc if odd else None)
        _emit_wgmma_loop(w, spec, tile, emit_loads, emit_stores, ntiles, stage_bytes, b_off,
                         open_tiles if pers else None)
        if odd:   # a tile past the output stores nothing
            w.open(f"if (pb{jc} < {spec.pshape[jc]})")
        if ep:
            _emit_epilogue_staged(w, spec, tile, r, blk, ep)
        else:
            emit_epilogue(w, spec, r, blk, fm_n, fn_n, vector=bool(pers),
                          rows=_areg_rows if tile.areg else None,
                          rows_ok=AREG_VECTOR_ROWS if tile.areg else None)
        if odd:
            w.close()
        if pers:
            w(f"g0 += {2 * ntiles if tile.pingpong else ntiles};")
            w.close()
        if tile.hold:   # the block's last output tile's held sums
            w.open("if (hon)")
            for j, (f, h, _) in enumerate(held(spec, tile)):
                _emit_held_store(w, spec, tile, j, f, h)
            w.close()
        if ep:   # the last bulk stores complete before the block leaves
            w("if ((tid & 127) == 0) merit_bulk_wait_all();")
        if pers and cl > 1:   # no block leaves while its peer may still signal it
            w("merit_cluster_sync();")
        out.append("\n".join(w.lines))
        out.append("}")
        return name, "\n".join(out) + "\n", nblocks, nt, smem
    if oa["mode"] == "lk":
        w(f"const int rowa = wm * {fm_n * 16} + ((lane >> 3) & 1) * 8 + (lane & 7);")
        w(f"const unsigned xa = (lane >> 4) ^ ({swz('rowa', chunks)});")
        w(f"const unsigned la = rowa * {rb};")
    else:
        pa_n = bm * es // 16
        w("const int rowa = (lane & 7) + ((lane >> 4) & 1) * 8;")
        w(f"const unsigned xa = {swz('rowa', pa_n)};")
        w(f"const unsigned ca = wm * {fm_n * 16 * es // 16} + ((lane >> 3) & 1);")
        w(f"const unsigned la = rowa * {bm * es};")
    if ob["mode"] == "lk":
        w(f"const int rowb = wn * {fn_n * 8} + (lane >> 4) * 8 + (lane & 7);")
        w(f"const unsigned xb = ((lane >> 3) & 1) ^ ({swz('rowb', chunks)});")
        w(f"const unsigned lbb = {b_off} + rowb * {rb};")
    else:
        pb_n = bn * es // 16
        w("const int rowb = (lane & 7) + ((lane >> 3) & 1) * 8;")
        w(f"const unsigned xb = {swz('rowb', pb_n)};")
        w(f"const unsigned cb = wn * {fn_n * 8 * es // 16} + (lane >> 4);")
        w(f"const unsigned lbb = {b_off} + rowb * {bn * es};")
    for fm in range(fm_n):
        for fn in range(fn_n):
            w(f"float c{fm}_{fn}_0 = 0.f, c{fm}_{fn}_1 = 0.f, c{fm}_{fn}_2 = 0.f, "
              f"c{fm}_{fn}_3 = 0.f;")

    if hv:
        _emit_half_head(w, ntiles, nbuf, emit_loads, emit_stores, False)
        w(f"const unsigned stg = sbase + (kt % {nbuf}) * {stage_bytes};")
    else:
        emit_loads("0")
        emit_stores("0")
        w("__syncthreads();")
        w("#pragma unroll 1")
        w.open(f"for (int kt = 0; kt < {ntiles}; ++kt)")
        w(f"const unsigned stg = sbase + (kt & 1) * {stage_bytes};")
        if ntiles > 1:
            w.open(f"if (kt + 1 < {ntiles})")
            emit_loads("(kt + 1)")
            w.close()
    w("#pragma unroll")
    w.open(f"for (int ks = 0; ks < {bk // ks}; ++ks)")
    if oa["mode"] == "lk":
        w("const unsigned pa = stg + la + (((unsigned)(2 * ks) ^ xa) << 4);")
    else:
        w(f"const unsigned pa = stg + la + ks * {16 * bm * es};")
    if ob["mode"] == "lk":
        w("const unsigned pb = stg + lbb + (((unsigned)(2 * ks) ^ xb) << 4);")
    else:
        w(f"const unsigned pb = stg + lbb + ks * {16 * bn * es};")
    for fm in range(fm_n):
        w(f"unsigned a{fm}_0, a{fm}_1, a{fm}_2, a{fm}_3;")
        if oa["mode"] == "lk":
            w(f"merit_ldsm4(a{fm}_0, a{fm}_1, a{fm}_2, a{fm}_3, pa + {fm * 16 * rb});")
        else:
            w(f"merit_ldsm4t(a{fm}_0, a{fm}_1, a{fm}_2, a{fm}_3, "
              f"pa + (((ca + {fm * 16 * es // 16}) ^ xa) << 4));")
    for fn in range(0, fn_n, 2):
        pair = fn + 1 < fn_n
        if ob["mode"] == "lk":
            addr = f"pb + {fn * 8 * rb}"
        else:
            addr = f"pb + (((cb + {fn * 8 * es // 16}) ^ xb) << 4)"
        t = "" if ob["mode"] == "lk" else "t"
        if pair:
            w(f"unsigned b{fn}_0, b{fn}_1, b{fn + 1}_0, b{fn + 1}_1;")
            w(f"merit_ldsm4{t}(b{fn}_0, b{fn}_1, b{fn + 1}_0, b{fn + 1}_1, {addr});")
        else:
            # x2: lanes 0..15 give the addresses
            w(f"unsigned b{fn}_0, b{fn}_1;")
            w(f"merit_ldsm2{t}(b{fn}_0, b{fn}_1, {addr});")
    for fm in range(fm_n):
        for fn in range(fn_n):
            c = f"c{fm}_{fn}_"
            w(f"merit_mma({c}0, {c}1, {c}2, {c}3, a{fm}_0, a{fm}_1, a{fm}_2, a{fm}_3, "
              f"b{fn}_0, b{fn}_1);")
    w.close()
    if hv:
        _emit_half_tail(w, ntiles, nbuf, emit_stores, False)
    else:
        if ntiles > 1:
            w.open(f"if (kt + 1 < {ntiles})")
            emit_stores("((kt + 1) & 1)")
            w.close()
        w("__syncthreads();")
    w.close()

    emit_epilogue(w, spec, r, blk, fm_n, fn_n)
    out.append("\n".join(w.lines))
    out.append("}")
    return name, "\n".join(out) + "\n", nblocks, nt, smem


def _emit_half_head(w, ntiles, nbuf, emit_loads, emit_stores, wg):
    """Prologue and loop head of a ``half`` tile's pipeline of ``nbuf`` buffers: tiles 0 ..
    nbuf - 2 issued (``cp.async`` slots copied, register slots loaded and stored), one copy
    group each; per k tile: wait until tile kt's group has landed, (wgmma: a proxy fence, the
    tensor cores read what the copies and stores wrote), one barrier (tile kt is complete and
    every thread is done with the buffer of tile kt - 1), then tile kt + nbuf - 1 issued into that
    buffer.  Leaves the loop open with ``kt`` and ``nx`` (the tile being issued) defined."""
    for t in range(nbuf - 1):
        if t < ntiles:
            emit_loads(str(t), str(t))
            emit_stores(str(t))
        w("merit_acommit();")
    w("#pragma unroll 1")
    w.open(f"for (int kt = 0; kt < {ntiles}; ++kt)")
    w(f"merit_await<{nbuf - 2}>();")
    if wg:
        w("merit_proxy_fence();")
    w("__syncthreads();")
    w(f"const int nx = kt + {nbuf - 1};")
    if ntiles > nbuf - 1:
        w.open(f"if (nx < {ntiles})")
        emit_loads("nx", f"(nx % {nbuf})")
        w.close()
    w("merit_acommit();")


def _emit_half_tail(w, ntiles, nbuf, emit_stores, wg):
    """After tile kt's products were issued: the register slots of tile ``nx`` stored (converted
    nothing: they are 2-byte elements already); wgmma: a proxy fence after them."""
    if ntiles > nbuf - 1:
        w.open(f"if (nx < {ntiles})")
        emit_stores(f"(nx % {nbuf})")
        if wg:
            w("merit_proxy_fence();")
        w.close()


def _emit_half_wgmma_deep(w, tile, emit_loads, emit_stores, ntiles, stage_bytes, accs,
                          product):
    """The k-tile loop of a ``half`` wgmma tile of 3 or 4 buffers: copies run ``stages`` - 2 k
    tiles ahead and the tensor cores keep one group of wgmma in flight across the barrier
    (``wgmma.wait_group 1``).  Tile kt + S - 2 goes into the buffer of tile kt - 2, whose
    wgmma every warpgroup has waited for before the barrier of tile kt: one barrier per k
    tile, and the tensor cores need not drain between tiles."""
    nbuf = _buffers(tile)
    prec, bk = tile.mma, tile.chunk
    ks = KSTEP[prec]
    ahead = nbuf - 2
    for t in range(ahead):
        if t < ntiles:
            emit_loads(str(t), str(t))
            emit_stores(str(t))
        w("merit_acommit();")
    w("#pragma unroll 1")
    w.open(f"for (int kt = 0; kt < {ntiles}; ++kt)")
    w(f"merit_await<{ahead - 1}>();")
    w("merit_proxy_fence();")
    w("__syncthreads();")
    w(f"const unsigned long long so = (unsigned long long)((kt % {nbuf}) * "
      f"{stage_bytes // 16});")
    w("merit_wg_fence();")
    for k in range(bk // ks):
        w(product(k))
    w("merit_wg_commit();")
    w(f"const int nx = kt + {ahead};")
    if ntiles > ahead:
        w.open(f"if (nx < {ntiles})")
        emit_loads("nx", f"(nx % {nbuf})")
        emit_stores(f"(nx % {nbuf})")
        w("merit_proxy_fence();")
        w.close()
    w("merit_acommit();")
    w("merit_wg_wait1();")
    w.close()
    w("merit_wg_wait();")
    for a in accs:
        w(f"merit_keep({a});")


def _emit_wgmma_loop(w, spec, tile, emit_loads, emit_stores, ntiles, stage_bytes, b_off,
                     open_tiles=None):
    """The k-tile loop of a wgmma tile: the next tile's loads into registers, this tile's
    wgmma's issued asynchronously (one per k step), the next tile stored (converted) into the
    other buffer while they run, a proxy fence (the tensor cores read what ordinary stores
    wrote), the wait, one barrier.  A cluster tile (``tile.cluster`` 2) fences both blocks'
    buffers and synchronizes the cluster where a plain tile synchronizes the block."""
    cl = tile.cluster > 1
    fence = "merit_proxy_fence_cluster();" if cl else "merit_proxy_fence();"
    sync = "merit_cluster_sync();" if cl else "__syncthreads();"
    prec = tile.mma
    ks = KSTEP[prec]
    _, fn_n = tile.frags
    bk = tile.chunk
    n = 8 * fn_n
    accs = [f"c0_{f}_{e}" for f in range(fn_n) for e in range(4)]
    if not tile.producer:   # (a producer tile declared them before its branches)
        for f in range(fn_n):
            w(f"float c0_{f}_0 = 0.f, c0_{f}_1 = 0.f, c0_{f}_2 = 0.f, c0_{f}_3 = 0.f;")
    # the warpgroup's 64 rows of A and 8 * FN lines of B (rb bytes per line; an MN-major tile
    # holds the same bytes per line, in atoms of 64 lines)
    rb = bk * (4 if prec == "tf32" else 2)
    ta, tb = mn_ops(spec, tile)
    if tile.areg:   # the byte offsets of this thread's A elements at k tq and tq + 4 of a k step
        # (as areg_offset(areg_line(wm, gq, h), tq + 4 kb, bk)); each k step adds 8 rows
        for h in (0, 1):
            for kb in (0, 1):
                w(f"const unsigned ao{h}{kb} = ((wm >> 2) * 2 + ((wm & 3) >> 1)) * {bk * 128} + "
                  f"(tq + {4 * kb}) * 128 + ((((gq >> 2) * 4 + {2 * h} + (wm & 1)) ^ "
                  f"(tq + {4 * kb})) << 4) + (gq & 3) * 4;")
        w("unsigned ra0_0, ra0_1, ra0_2, ra0_3, ra1_0, ra1_1, ra1_2, ra1_3;")
    elif tile.halo:   # warpgroup g's 64 rows: pixels 64 g .. 64 g + 63 of the box's rows
        hp = halo_plan(spec, tile)
        w(f"const unsigned long long da0 = merit_desc(sbase + (((wm >> 2) * 64) / {hp['bw']} * "
          f"{hp['width']} + ((wm >> 2) * 64) % {hp['bw']}) * {rb});")
    else:
        w(f"const unsigned long long da0 = merit_desc{'_mn' if ta else ''}(sbase + (wm >> 2) * "
          f"{64 * rb});")
    w(f"const unsigned long long db0 = merit_desc{'_mn' if tb else ''}(sbase + {b_off} + wn * "
      f"{n * rb});")

    def product(k):
        """k step ``k``: 32 bytes along a K-major line, two groups of 8 k (2048 bytes) of an
        MN-major tile (descriptor units of 16 bytes)."""
        if tile.halo:   # step k: tap kx's box moved by its line shift, its weights
            kx, kk = divmod(k, bk // ks)
            ph, sh = hp["tap"][kx]
            oa = (ph * hp["astep"] + sh * rb) // 16 + 2 * kk
            return wgmma_asm(prec, n, accs, f"da0 + so + {oa}",
                             f"db0 + so + {kx * hp['bstep'] // 16 + 2 * kk}", ta, tb)
        return wgmma_asm(prec, n, accs, f"da0 + so + {128 * k if ta else 2 * k}",
                         f"db0 + so + {128 * k if tb else 2 * k}", ta, tb)

    if tile.producer:
        areg = None
        if tile.areg:
            def areg(k):
                """k step ``k`` from registers: the fragment loaded into register set k % 2 (the
                other set may still feed k step k - 1), fenced, the product issued."""
                q = k % 2
                for i, (h, kb) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
                    w(f"ra{q}_{i} = merit_ldtf(sa + ao{h}{kb} + {1024 * k});")
                w("merit_wg_fence();")
                w(wgmma_asm_ra(n, accs, [f"ra{q}_{i}" for i in range(4)],
                               f"db0 + so + {2 * k}"))
        tmas = tma_ops(spec, tile) if tile.tma else (None, None)
        fence = TMA_FENCE or not all(tmas)
        _emit_consumer_loop(w, tile, ntiles, stage_bytes, accs, product, open_tiles, areg,
                            fence, grid_blocks(spec, tile) if tile.persist else None,
                            steps=bk // ks * hp["kw"] if tile.halo else None, spec=spec)
        return
    if tile.half and _buffers(tile) >= 3:
        _emit_half_wgmma_deep(w, tile, emit_loads, emit_stores, ntiles, stage_bytes, accs,
                              product)
        return
    if tile.half:
        nbuf = _buffers(tile)
        _emit_half_head(w, ntiles, nbuf, emit_loads, emit_stores, True)
        w(f"const unsigned long long so = (unsigned long long)((kt % {nbuf}) * "
          f"{stage_bytes // 16});")
        for a in accs:
            w(f"merit_keep({a});")
        w("merit_wg_fence();")
        for k in range(bk // ks):
            w(product(k))
        w("merit_wg_commit();")
        _emit_half_tail(w, ntiles, nbuf, emit_stores, True)
        w("merit_wg_wait();")
        for a in accs:
            w(f"merit_keep({a});")
        w.close()
        return
    if cl:   # the peer block runs before its shared memory is written
        w("merit_cluster_sync();")
    emit_loads("0")
    emit_stores("0")
    w(fence)
    w(sync)
    w("#pragma unroll 1")
    w.open(f"for (int kt = 0; kt < {ntiles}; ++kt)")
    w(f"const unsigned long long so = (unsigned long long)((kt & 1) * {stage_bytes // 16});")
    if ntiles > 1:
        w.open(f"if (kt + 1 < {ntiles})")
        emit_loads("(kt + 1)")
        w.close()
    for a in accs:
        w(f"merit_keep({a});")
    w("merit_wg_fence();")
    for k in range(bk // ks):   # 32 bytes of each line per k step
        w(product(k))
    w("merit_wg_commit();")
    if ntiles > 1:
        w.open(f"if (kt + 1 < {ntiles})")
        emit_stores("((kt + 1) & 1)")
        w(fence)
        w.close()
    w("merit_wg_wait();")
    for a in accs:
        w(f"merit_keep({a});")
    w(sync)
    w.close()


def mbarriers(tile, stage_bytes):
    """Byte offsets (from the aligned buffer base) of a producer tile's "full" and "empty"
    mbarriers, one of each per buffer, after the buffers."""
    nbuf = _buffers(tile)
    top = nbuf * stage_bytes
    return [top + 8 * s for s in range(nbuf)], [top + 8 * (nbuf + s) for s in range(nbuf)]


def full_count(nreg, ntma=0):
    """Arrivals that complete a phase of a "full" mbarrier: one per producer thread from
    ``cp.async.mbarrier.arrive.noinc`` (made when the thread's copies have landed) unless both
    operands go by bulk tensor copies (``ntma`` 2), one more per thread, after its stores and a
    proxy fence, when ``nreg`` operands go through registers, and one (with the expected byte
    count) from the thread that issues the bulk tensor copies (``ntma`` > 0)."""
    return PRODUCER * ((1 if ntma < 2 else 0) + (1 if nreg else 0)) + (1 if ntma else 0)


def phases(kt, stages):
    """``(s, full parity, empty parity)`` of k tile ``kt`` in a ring of ``stages`` buffers: its
    buffer, the parity of the "full" phase the consumers wait for (the buffer's ``kt // stages``-th
    filling), and that of the "empty" phase the producer waits for before filling it (the
    consumers' release of tile ``kt - stages``; none for the first ``stages`` tiles: None)."""
    s, n = kt % stages, kt // stages
    return s, n & 1, (None if n == 0 else (n - 1) & 1)


def cluster_dims(tile):
    """Blocks per cluster of the kernel's launch (its ``__cluster_dims__``; the kernel carries
    it, launched as any other): ``Tile.cluster``, or ``Tile.place`` for a tile placed in
    clusters with no cluster code; 1 = no clusters."""
    return max(tile.cluster, getattr(tile, "place", 1))


def grid_blocks(spec, tile):
    """``(output tiles, blocks launched)``: a persistent tile (``Tile.persist``) launches at
    most ``persist`` blocks, each looping over output tiles (:func:`schedule`).  A persistent
    cluster tile counts tile slots, two per pair (:func:`pair_schedule`: the last pair of an
    odd number of blocks along the pair axis has one slot outside the output)."""
    grid = [-(-e // b) for e, b in zip(spec.pshape, tile.block, strict=True)]
    n = math.prod(grid)
    if tile.persist and tile.cluster > 1:
        jc = pair_index(spec, tile)
        if jc is not None:
            n = n // grid[jc] * 2 * (-(-grid[jc] // 2))
    return n, (min(n, tile.persist) if tile.persist else n)


def schedule(ntiles, nblocks):
    """The output tiles each block of a persistent grid takes, in its order: block ``b`` takes
    ``b, b + nblocks, b + 2 nblocks, ...`` (the generated loop ``for (t = blockIdx.x; t <
    ntiles; t += nblocks)``); consecutive tiles share a row block of the output (the columns'
    blocks vary fastest), so the tiles in flight at once read few rows of A and B from L2."""
    return [list(range(b, ntiles, nblocks)) for b in range(nblocks)]


#: Channels-last tiles (``Tile.cl``): the rewritten specializations, by (problem key, k tile).
_CL = {}
#: Marks a specialization rewritten by :func:`cl_layout` (its name ends so).
CL_MARK = "~cl"


def _cl_channel(tr, pos):
    """The axis of transform ``tr`` that position ``pos`` moves alone, with unit stride and no
    offset, or None."""
    axes = [ax for ax, t in enumerate(tr.terms) if any(q == pos for q, _ in t)]
    if len(axes) != 1 or tr.terms[axes[0]] != ((pos, 1),) or tr.offset[axes[0]]:
        return None
    return axes[0]


def _cl_transform(tr, ax, cpad, newpos, P, A):
    """``tr`` over a copy of its tensor with axis ``ax`` moved innermost (padded to ``cpad``, or
    kept where ``ax`` is None) and positions renumbered by ``newpos``."""
    from merit.transform import Index, Transform

    nax = len(tr.source_shape)
    axes = list(range(nax)) if ax is None else [a for a in range(nax) if a != ax] + [ax]
    shape = tuple(tr.source_shape[a] for a in axes)
    if ax is not None:
        shape = shape[:-1] + (cpad,)
    p, a = [None] * P, [None] * A
    for nx, ox in enumerate(axes):
        for n, (pos, s) in enumerate(tr.terms[ox]):
            idx = Index(nx, s, tr.offset[ox] if n == 0 else 0)
            q = newpos[pos]
            if q < P:
                p[q] = idx
            else:
                a[q - P] = idx
    return Transform(shape, p, a, tuple(tr.boundary[x] for x in axes),
                     name=tr.name if tr.named else None)


def cl_layout(spec, bk):
    """The channels-last form of a problem for k tiles of ``bk`` (``Tile.cl``): ``(spec2,
    moves)``, or None where it does not apply.  It applies where the row operand (the image,
    :func:`merit.gpu.mma.roles`' A) is no plain K-major matrix already (GEMM's A) and shares
    with the column operand (the weights) a "channel" accumulation index ``c``, which moves each
    of them alone on one axis with unit stride and no offset; where every other axis of the
    image is moved by at most one row index (stride 1 to 8, the rows' axes in the rows' order)
    besides any accumulation indices, and may leave the tensor only under a zero boundary; and
    where the image has at most 5 axes.  ``spec2`` reads copies of both loop operands whose
    channel axis is innermost and zero-padded to a multiple of ``bk``; its accumulation indices
    are the problem's with ``c`` moved innermost (extent padded likewise).  ``moves``: per
    loop input, ``(outer, C, inner, Cp)``: its copy is the ``(outer, C, inner)`` array as
    ``(outer, inner, Cp)``, channels ``C .. Cp - 1`` zero."""
    key = (spec.key(), bk)
    if key in _CL:
        return _CL[key]
    _CL[key] = out = _cl_layout(spec, bk)
    return out


def _cl_layout(spec, bk):
    r = roles(spec)
    if r is None or spec.name.endswith(CL_MARK):
        return None
    P, A = spec.np, spec.na
    img, wts = spec.inputs[r.a].transform, spec.inputs[r.b].transform
    if len(img.source_shape) > 5:
        return None
    chan = None
    for ac in range(A - 1, -1, -1):
        ai, aw = _cl_channel(img, P + ac), _cl_channel(wts, P + ac)
        if ai is not None and aw is not None:
            chan = (ac, ai, aw)
            break
    if chan is None:
        return None
    ac, ai, aw = chan
    plan = operand_plan(spec, r.a, r.rows)
    checked = plan["checked"]
    if len(r.rows) == 1 and not checked and not plan["const"] and plan["vector"]:
        return None   # a plain K-major matrix already (GEMM's A): no copy needed
    row_axes = []
    for ax, terms in enumerate(img.terms):
        rows = [(pos, s) for pos, s in terms if pos < P]
        if ax == ai:
            continue
        if len(rows) > 1 or any(pos not in r.rows or not 1 <= s <= 8 for pos, s in rows):
            return None
        row_axes += [pos for pos, _ in rows]
        if ax in checked and img.boundary[ax] != "zero":
            return None
    if row_axes != list(r.rows):
        return None
    order = [i for i in range(A) if i != ac] + [ac]
    newpos = {j: j for j in range(P)}
    newpos.update({P + i: P + n for n, i in enumerate(order)})
    C = spec.ashape[ac]
    cpad = -(-C // bk) * bk
    inputs, moves = [], {}
    for k, op in enumerate(spec.inputs):
        ax = {r.a: ai, r.b: aw}.get(k)
        tr = op.transform
        inputs.append(dataclasses.replace(op, transform=_cl_transform(tr, ax, cpad, newpos, P, A)))
        if ax is not None:
            sh = tr.source_shape
            moves[k] = (math.prod(sh[:ax]), sh[ax], math.prod(sh[ax + 1:]), cpad)
    ashape = tuple(spec.ashape[i] for i in order[:-1]) + (cpad,)
    spec2 = dataclasses.replace(spec, name=spec.name + CL_MARK, ashape=ashape,
                                inputs=tuple(inputs))
    return spec2, moves


def cl_spec(spec, tile):
    """The specialization a ``Tile.cl`` tile's kernel runs (:func:`cl_layout`), ``spec`` itself
    for other tiles or one already rewritten; None where the form does not apply."""
    if not getattr(tile, "cl", False) or spec.name.endswith(CL_MARK):
        return spec
    got = cl_layout(spec, tile.chunk)
    return got[0] if got else None


def _cl_box(spec, r, tile):
    """The bulk copy of a channels-last image's k tile (``Tile.cl``, ``spec`` rewritten): one
    box of ``chunk`` channels by the block's pixels, its dimensions innermost first: the
    channels, then per image axis (innermost first) the block's extent of the row index moving
    it times that index's stride (the box's traversal stride, so that ``block`` pixels are
    copied), or 1.  ``coords``: per dimension ``(offset, row terms, accumulation terms)`` of its
    start: ``offset + sum pb_j * s + sum a_i * d``, the accumulation digits of the k tile's tap
    (the channel dimension starts at the k tile's channel block)."""
    tr = spec.inputs[r.a].transform
    P, A = spec.np, spec.na
    es = ESIZE[tile.mma]
    bk, blk = tile.chunk, tile.block
    nax = len(tr.source_shape)
    st = _gstrides(tr.source_shape)
    if tr.terms[nax - 1] != ((P + A - 1, 1),) or tr.offset[nax - 1] or spec.ashape[-1] % bk:
        return None
    dims, box, est, coords = [], [], [], []
    for ax in range(nax - 1, -1, -1):
        rows = [(pos, s) for pos, s in tr.terms[ax] if pos < P]
        accs = [(pos - P, s) for pos, s in tr.terms[ax] if pos >= P]
        dims.append(tr.source_shape[ax])
        if ax == nax - 1:
            box.append(bk)
            est.append(1)
            coords.append((0, [], []))
            continue
        if rows:
            (j, s), = rows
            box.append(blk[j] * s)
            est.append(s)
        else:
            box.append(1)
            est.append(1)
        coords.append((tr.offset[ax], rows, accs))
    if max(box) > 256 or any(b < 1 for b in box):
        return None
    strides = tuple(st[ax] * es for ax in range(nax - 2, -1, -1))
    return dict(dims=tuple(dims), strides=strides, box=tuple(box), estrides=tuple(est),
                coords=coords, ncb=spec.ashape[-1] // bk, swizzle=bk * es, boxes=1)


def cl_coords(spec, tile, t):
    """C lines computing the start of a channels-last box (:func:`_cl_box` plan ``t``) for k
    tile ``kt`` of the block at ``pb<j>``, and the list of its coordinates, innermost first."""
    A = spec.na
    lines = [f"int q = kt / {t['ncb']};"] if A > 1 else []
    for i in range(A - 2, -1, -1):
        lines.append(f"const int a{i} = q % {spec.ashape[i]}; q /= {spec.ashape[i]};"
                     if i > 0 else "const int a0 = q;")
    out = []
    for d, (off, rows, accs) in enumerate(t["coords"]):
        if d == 0:
            out.append(f"(kt % {t['ncb']}) * {t['box'][0]}")
            continue
        parts = [f"pb{j} * {s}" for j, s in rows] + [f"a{i} * {s}" for i, s in accs]
        parts += [f"({off})"] if off or not parts else []
        out.append(" + ".join(parts))
    return lines, out


#: Alignment of each box of a ``Tile.halo`` ring buffer (the 128-byte swizzle's period): the
#: swizzle pattern starts at every box, so the consumers' shifted descriptor starts keep base
#: offset 0 (PTX ISA, "Matrix Descriptor Format": the base offset says where the pattern starts).
HALO_ALIGN = 1024


def _up(n, a):
    return -(-n // a) * a


def halo_plan(spec, tile):
    """The row-of-taps form of a ``Tile.cl`` tile (``Tile.halo``), or None where it does not
    apply.  It applies where the channels-last image's innermost pixel axis (the box's second
    dimension) is moved by exactly the innermost row index ``j`` (stride ``s``) and one tap
    index ``x`` (extent ``kw`` > 1, dilation ``d``) that moves no other axis, and the block's
    extent ``bw`` along ``j`` is a multiple of 64 (a consumer warpgroup's 64 rows lie in one row
    of the box).  A ring buffer then holds one row of taps (the digits of the other taps and a
    channel block): per phase ``p`` of ``{(kx d) % s}`` one box like ``_cl_box``'s but
    ``width = bw + ((kw - 1) d) // s`` elements wide along that axis, starting at ``offset + pb_j
    s + p`` (traversal stride ``s``), each at a multiple of :data:`HALO_ALIGN`, then the ``kw``
    taps' weights (one 2-D box each, ``bn`` lines).  Tap ``kx`` reads phase ``(kx d) % s``'s box
    ``(kx d) // s`` lines on.  The dict: ``x``, ``kw``, ``j``, ``s``, ``d``, ``bw``, ``width``,
    ``phases``, ``abox`` (bytes of one phase box), ``astep`` (its aligned size), ``bstep``
    (bytes of one tap's weights), ``stage`` (bytes per buffer), ``kst`` (the k stride of each
    accumulation index in the reordered k), ``tap`` (kx -> (phase number, line shift)),
    ``box`` / ``coords`` (the phase box, as ``_cl_box``'s)."""
    if not getattr(tile, "cl", False):
        return None
    spec = cl_spec(spec, tile)
    if spec is None:
        return None
    r = tile_roles(spec, tile)
    if r is None or not r.rows:
        return None
    t = _cl_box(spec, r, tile)
    if t is None or len(t["dims"]) < 2:
        return None
    P, A = spec.np, spec.na
    _, rows, accs = t["coords"][1]
    if len(rows) != 1 or len(accs) != 1 or rows[0][0] != r.rows[-1]:
        return None
    (j, s), (x, d) = rows[0], accs[0]
    kw = spec.ashape[x]
    if x == A - 1 or kw < 2 or any(i == x for c in t["coords"][2:] for i, _ in c[2]):
        return None
    bw = tile.block[j]
    if bw % 64:
        return None
    hmax = (kw - 1) * d // s
    width = bw + hmax
    if width * s > 256:
        return None
    phases = sorted({kx * d % s for kx in range(kw)})
    bm, bn, bk, rb, _ = _geo(spec, tile)
    outer = math.prod(b // e for b, e in zip(t["box"][2:], t["estrides"][2:], strict=True))
    abox = outer * width * rb
    astep = _up(abox, HALO_ALIGN)
    bstep = bn * rb
    kst = tuple(math.prod(spec.ashape[i + 1:]) for i in range(A))
    box = (t["box"][0], width * s) + tuple(t["box"][2:])
    return dict(x=x, kw=kw, j=j, s=s, d=d, bw=bw, width=width, phases=tuple(phases),
                abox=abox, astep=astep, bstep=bstep,
                stage=_up(len(phases) * astep + kw * bstep, HALO_ALIGN), kst=kst,
                tap=tuple((phases.index(kx * d % s), kx * d // s) for kx in range(kw)),
                box=box, coords=t["coords"], ncb=t["ncb"], P=P)


def halo_digits(spec, tile, hp):
    """C lines computing a ``Tile.halo`` buffer's digits from its number ``kt``: ``cb`` (the
    channel block) and ``a<i>`` for every tap index but ``x``; and the expression of the k
    offset of its taps' first element (add ``kx * kst[x]`` for tap ``kx``)."""
    spec = cl_spec(spec, tile)
    A = spec.na
    ncb, x = hp["ncb"], hp["x"]
    others = [i for i in range(A - 1) if i != x]
    lines = [f"const int cb = kt % {ncb};"]
    if others:
        lines.append(f"int q = kt / {ncb};")
        for n, i in enumerate(reversed(others)):
            lines.append(f"const int a{i} = q;" if n == len(others) - 1 else
                         f"const int a{i} = q % {spec.ashape[i]}; q /= {spec.ashape[i]};")
    k0 = " + ".join([f"a{i} * {hp['kst'][i]}" for i in others] + [f"cb * {tile.chunk}"])
    return lines, k0


def halo_coords(spec, tile, hp, p):
    """The start of phase ``p``'s box of a ``Tile.halo`` buffer (after :func:`halo_digits`'s
    lines), its coordinates innermost first."""
    out = []
    for dim, (off, rows, accs) in enumerate(hp["coords"]):
        if dim == 0:
            out.append(f"cb * {tile.chunk}")
            continue
        if dim == 1:
            (j, s), = rows
            out.append(f"pb{j} * {s} + ({off + p})")
            continue
        parts = [f"pb{j} * {s}" for j, s in rows] + [f"a{i} * {s}" for i, s in accs]
        parts += [f"({off})"] if off or not parts else []
        out.append(" + ".join(parts))
    return out


def stage_bytes(spec, tile):
    """Bytes of one operand-tile buffer: A's and B's tiles, or a ``Tile.halo`` tile's row of
    taps (:func:`halo_plan`)."""
    if getattr(tile, "halo", False):
        hp = halo_plan(spec, tile)
        if hp is None:
            raise ValueError("tile.halo does not apply (ldsm.halo_plan)")
        return hp["stage"]
    bm, bn, _, rb, _ = _geo(spec, tile)
    return (bm + bn) * rb


#: A staged epilogue's chunk (``Tile.epi``): 64 rows (a consumer warpgroup's) x 32 fp32 columns,
#: 128-byte lines in the output tensor map's 128-byte swizzle: 8 KB per staging buffer.
EPI_COLS = 32
EPI_BYTES = 64 * EPI_COLS * 4


def epi_plan(spec, tile):
    """The staged epilogue of a persistent producer tile (``Tile.epi`` staging buffers per
    consumer warpgroup), or None where it does not apply: the output must be a plain fp32 matrix
    whose rows are the tile's one row index (parallel index 0) and whose columns, innermost with
    unit stride, its one column index (index 1), rows a multiple of 16 bytes apart (GEMM, FC);
    the tile a persistent producer tile with bulk copies, not ``areg`` / ``pingpong`` / ``cl``,
    each warpgroup's columns a multiple of :data:`EPI_COLS` whose chunks ``epi`` divides.
    The dict: the output's 2-D tensor map (``dims`` (columns, rows), ``strides``, ``box`` (32,
    64), ``swizzle`` 128, ``esize`` 4), ``top`` (byte offset of the staging buffers from the
    aligned base: after the ring and its mbarriers, at a 1024-byte boundary), ``nwg`` (consumer
    warpgroups), ``chunks`` (per warpgroup and output tile), ``bytes`` (all staging buffers)."""
    epi = getattr(tile, "epi", 0)
    if not epi or not (tile.persist and tile.producer and tile.tma and tile.wgmma
                       and not tile.areg and not tile.pingpong
                       and not tile.cl and tile.split == 1):
        return None
    r = tile_roles(spec, tile)
    if (r is None or spec.np != 2 or tuple(r.rows) != (0,) or tuple(r.cols) != (1,)
            or spec.outputs != 1 or spec.out_dtype != "float32"):
        return None
    fn = tile.frags[1]
    chunks = 8 * fn // EPI_COLS
    M, N = spec.pshape
    if (8 * fn) % EPI_COLS or chunks % epi or N * 4 % 16:
        return None
    nbuf = _buffers(tile)
    top = -(-(nbuf * stage_bytes(spec, tile) + 16 * nbuf) // 1024) * 1024
    nwg = math.prod(tile.warps) // 4
    return dict(dims=(N, M), strides=(N * 4,), box=(EPI_COLS, 64), swizzle=128, esize=4,
                top=top, nwg=nwg, chunks=chunks, bytes=nwg * epi * EPI_BYTES)


def epi_offset(row, col):
    """Byte offset of element (``row``, ``col``) of a staging buffer (64 rows x 32 fp32
    columns) as the bulk copy engine reads the output's box with the 128-byte swizzle: rows of
    128 bytes, 16-byte piece ``c`` of row ``r`` at piece ``c ^ r % 8``."""
    return row * 128 + ((((col >> 2) ^ (row % 8))) << 4) + (col & 3) * 4


def tma_ops(spec, tile):
    """Per operand (A, B) of a ``half`` or TF32 wgmma tile: how the bulk tensor copy engine
    copies it, or None where it cannot (a TF32 operand goes as fp32 bits, which wgmma reads
    as TF32 by dropping the 13 low mantissa bits: toward zero, where a gather rounds to
    nearest; FP16 / BF16 tiles on float32 arrays convert in registers and never qualify).  An
    operand qualifies when its lines run along one parallel index ``j`` (no other position moves
    its address), nothing is boundary-checked, its offset is 0,
    and either (K-major) its flattened k is contiguous with lines ``coef[j]`` elements apart, a
    multiple of 16 bytes (GEMM's A, a convolution's weights), or (MN-major, ``Tile.mn``) its lines
    are contiguous and one accumulation index walks rows a multiple of 16 bytes apart (GEMM's B).
    The dict: ``k`` (input), ``j``, ``dims`` and ``strides`` (bytes) of the 2-D tensor map, inner
    dimension first, ``box``, ``swizzle`` (bytes), ``boxes`` (copies per k tile: one, or one per
    64 lines MN-major, :func:`mn_offset`'s groups), ``bytes`` (per k tile), ``esize`` (bytes
    per element)."""
    if not (tile.wgmma and (tile.half or tile.mma == "tf32")):
        return (None, None)
    spec = cl_spec(spec, tile)
    if spec is None:
        return (None, None)
    r = tile_roles(spec, tile)
    bm, bn, bk, rb, _ = _geo(spec, tile)
    es = ESIZE[tile.mma]
    P = spec.np
    K = math.prod(spec.ashape)
    ext = tuple(spec.pshape) + tuple(spec.ashape)
    mns = mn_ops(spec, tile)
    out = []
    hp = halo_plan(spec, tile) if tile.halo else None
    for (k, idxs), lines, mn in zip(((r.a, r.rows), (r.b, r.cols)), (bm, bn), mns, strict=True):
        if tile.cl and k == r.a and hp:   # a row of taps: one widened box per tap phase
            t = _cl_box(spec, r, tile)
            out.append(dict(t, box=hp["box"], k=k, j=None, mn=False, cl=True, halo=True,
                            bytes=len(hp["phases"]) * hp["abox"], esize=es, dstep=0, cstep=0))
            continue
        if tile.cl and k == r.a:   # the channels-last image: one box per tap and channels
            t = _cl_box(spec, r, tile)
            out.append(t and dict(t, k=k, j=None, mn=False, cl=True, bytes=lines * rb,
                                  esize=es, dstep=0, cstep=0))
            continue
        p = operand_plan(spec, k, idxs)
        coef = p["coef"]
        moving = [j for j in range(P) if coef[j] and ext[j] > 1]
        if len(idxs) != 1 or moving != list(idxs) or p["checked"] or p["const"]:
            out.append(None)
            continue
        j = idxs[0]
        # clusters of two (B shared): B in two halves at least, one multicast by each block
        split = tile.cluster if k == r.b else 1
        if mn:   # boxes of one 128-byte row of lines per k (64 of 2 bytes, 32 of 4)
            lpr = 128 // es
            ok = (coef[j] == 1 and spec.na == 1 and coef[P] * es % 16 == 0
                  and lines % lpr == 0 and lines // lpr % split == 0)
            plan = dict(dims=(spec.pshape[j], K), strides=(coef[P] * es,), box=(lpr, bk),
                        swizzle=128, boxes=lines // lpr, dstep=bk * 128, cstep=lpr)
        else:
            part = lines // split
            ok = p["vector"] and coef[j] * es % 16 == 0 and rb in (64, 128) and part % 8 == 0
            plan = dict(dims=(K, spec.pshape[j]), strides=(coef[j] * es,), box=(bk, part),
                        swizzle=rb, boxes=split, dstep=part * rb, cstep=part)
        got = dict(plan, k=k, j=j, mn=mn, bytes=lines * rb, esize=es) if ok else None
        if hp and got:   # the weights of a row's kw taps, one box each
            got.update(bytes=hp["kw"] * lines * rb, halo=True)
        out.append(got)
    return tuple(out)


_PRELUDE_EPI = r"""
__device__ __forceinline__ void merit_sts2(unsigned addr, float a, float b) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" :: "r"(addr), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void merit_epi_sync(int id) {
    // named barrier ``id`` of one consumer warpgroup (128 threads)
    asm volatile("bar.sync %0, 128;\n" :: "r"(id) : "memory");
}
__device__ __forceinline__ void merit_tma_store2(unsigned src, const MeritTmap* map, int c0,
                                                 int c1) {
    // one box of shared memory to the output's 2-D tensor map (clipped at its edges), in the
    // thread's current bulk group
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void merit_bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void merit_bulk_wait_read() {
    // until at most N of this thread's bulk groups still read their shared memory
    asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void merit_bulk_wait_all() {
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
"""

#: ``Tile.evict``: the staged epilogue's bulk store, and the operands' bulk copies, as
#: :data:`_PRELUDE_EPI` and :data:`_PRELUDE_TMA` write them, and with an L2 cache policy.
_STORE_PLAIN = '"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\\n"'
_STORE_HINT = ('"{\\n.reg .b64 pol;\\ncreatepolicy.fractional.L2::evict_first.b64 pol, 1.0;\\n"'
               '"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint '
               '[%0, {%2, %3}], [%1], pol;\\n}\\n"')
_POLICY_LAST = r'"{\n.reg .b64 pol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"'
_LOADS = (  # (as _PRELUDE_TMA writes them, with the evict-last policy)
    (r'("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"'
     '\n' r'                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"',
     r'(' + _POLICY_LAST + r' "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::'
     r'complete_tx::bytes"' '\n' r'                 ".multicast::cluster.L2::cache_hint [%0], '
     r'[%1, {%2, %3}], [%4], %5, pol;\n}\n"'),
    (r'("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "'
     '\n' r'                 "[%0], [%1, {%2, %3}], [%4];\n"',
     r'(' + _POLICY_LAST + r' "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::'
     r'complete_tx::bytes.L2::cache_hint "' '\n' r'                 "[%0], [%1, {%2, %3}], [%4], '
     r'pol;\n}\n"'),
)


def evict_stores(prelude):
    """``prelude`` (:data:`_PRELUDE_EPI`) with its bulk tensor store marked L2 evict-first
    (``Tile.evict``)."""
    assert prelude.count(_STORE_PLAIN) == 1
    return prelude.replace(_STORE_PLAIN, _STORE_HINT)


def evict_loads(prelude):
    """``prelude`` (:data:`_PRELUDE_TMA`) with its 2-D bulk tensor copies, the multicast one
    too, marked L2 evict-last (``Tile.evict`` 2)."""
    for plain, hint in _LOADS:
        assert prelude.count(plain) == 1
        prelude = prelude.replace(plain, hint)
    return prelude


#: Named barriers of the staged epilogue: ``EPI_BARRIER + g`` for consumer warpgroup ``g`` (0 is
#: the block's, 1 and 2 the ping-pong groups').
EPI_BARRIER = 8


def _emit_epilogue_staged(w, spec, tile, r, blk, ep):
    """The staged epilogue (``Tile.epi``, :func:`epi_plan`) of a persistent producer tile's
    consumers, per output tile: each consumer warpgroup ``eg`` (``warp >> 2``: rows ``(wm >> 2)
    * 64`` of the block, columns ``wn * 8 FN``) goes over its columns in chunks of
    :data:`EPI_COLS`; chunk ``c`` goes to staging buffer ``c % epi``: the warpgroup's first
    thread waits until at most ``epi - 1`` of its bulk stores still read their buffers (so chunk
    ``c - epi``'s, this tile's or the last one's, is read), the warpgroup meets at its named
    barrier, every thread writes its sums of the chunk (after the PostLoop) as pairs
    (``st.shared.v2``, at :func:`epi_offset`; lane ``(gq, tq)`` takes the chunk's fragments in
    the order ``k ^ 2 (gq & 1)``, so that no two lanes of a half-warp hit one bank), a proxy
    fence (the copy engine reads what the threads wrote), the barrier again, then the first
    thread issues the chunk's bulk tensor store (columns ``pb1 + wn 8 FN + 32 c``, rows ``pb0 +
    (wm >> 2) 64``; the engine clips what lies outside the output) and commits it as one bulk
    group."""
    A = spec.na
    epi = tile.epi
    fn_n = tile.frags[1]
    M, N = spec.pshape
    post = [k for k, op in enumerate(spec.inputs) if op.stage == "post"]
    post_args_a = [str(spec.ashape[i] - 1) for i in range(A)]
    ragged = bool(M % blk[0] or N % blk[1])
    w.open("")
    w("const int eg = warp >> 2;   // this consumer warpgroup")
    w(f"const unsigned eb = sbase + {ep['top']} + eg * {epi * EPI_BYTES};")
    w("const int er = (wm & 3) * 16 + gq;   // the thread's first row of the warpgroup's 64")
    w("const int e0 = pb0 + (wm >> 2) * 64, e1 = pb1 + wn * " + str(8 * fn_n) + ";")
    hold = getattr(tile, "hold", 0)
    for c in range(ep["chunks"] - hold):
        b = c % epi
        w(f"if ((tid & 127) == 0) merit_bulk_wait_read<{epi - 1}>();")
        w(f"merit_epi_sync({EPI_BARRIER} + eg);")
        for h in (0, 1):
            for k in range(EPI_COLS // 8):
                # lane (gq, tq) writes fragment k ^ 2 (gq & 1) of the chunk: in each half-warp's
                # phase of 8-byte stores the 16 lanes then hit 8 different 16-byte pieces
                # (pieces (2 fl + tq / 2) ^ gq), both halves of each: no bank conflicts
                f0, f1 = c * (EPI_COLS // 8) + k, c * (EPI_COLS // 8) + (k ^ 2)
                w.open("")
                w(f"const int fl = {k} ^ ((gq & 1) << 1);")
                for e in (0, 1):
                    w(f"const float a{e} = (gq & 1) ? c0_{f1}_{2 * h + e} : c0_{f0}_{2 * h + e};")
                p0 = f"e0 + er + {8 * h}"
                for e in (0, 1):
                    p1 = f"e1 + {EPI_COLS * c + e} + 8 * fl + 2 * tq"
                    body = post_statement(f"a{e}", f"v{e}", [p0, p1] + post_args_a, post)
                    if post and ragged:   # no reads outside the inputs
                        w(f"float v{e} = 0.f;")
                        w(f"if ({p0} < {M} && {p1} < {N}) {{ {body} }}")
                    else:
                        w(f"float v{e}; {{ {body} }}")
                # row er + 8 h (its swizzle index is gq), columns 8 fl + 2 tq, + 1
                w(f"merit_sts2(eb + {b * EPI_BYTES} + (er + {8 * h}) * 128 + "
                  f"(((2 * fl + (tq >> 1)) ^ gq) << 4) + (tq & 1) * 8, v0, v1);")
                w.close()
        w("merit_proxy_fence();")
        w(f"merit_epi_sync({EPI_BARRIER} + eg);")
        w(f"if ((tid & 127) == 0) {{ merit_tma_store2(eb + {b * EPI_BYTES}, &tmo, "
          f"e1 + {EPI_COLS * c}, e0); merit_bulk_commit(); }}")
    if hold:   # the last chunks' sums (after the PostLoop) kept for the next tile's k loop
        for j, (f, h, _) in enumerate(held(spec, tile)):
            for e in (0, 1):
                p0 = f"e0 + er + {8 * h}"
                p1 = f"e1 + {8 * f + e} + 2 * tq"
                body = post_statement(f"c0_{f}_{2 * h + e}", f"hv{2 * j + e}",
                                      [p0, p1] + post_args_a, post)
                if post and ragged:   # no reads outside the inputs
                    w(f"if ({p0} < {M} && {p1} < {N}) {{ {body} }}")
                else:
                    w(f"{{ {body} }}")
        w("he0 = e0; he1 = e1; hon = true;")
    w.close()


def _emit_producer_head(w, tile, stage_bytes, ncons, nreg, tmas=(None, None), asy=()):
    cl = tile.cluster > 1
    """The sums (declared for the consumers' epilogue), the mbarriers initialized by thread 0,
    one block barrier (the only one), then the producer warpgroup's branch opened, with
    ``tid`` its own thread index (0 .. PRODUCER - 1)."""
    fn_n = tile.frags[1]
    for f in range(fn_n):
        w(f"float c0_{f}_0 = 0.f, c0_{f}_1 = 0.f, c0_{f}_2 = 0.f, c0_{f}_3 = 0.f;")
    full, empty = mbarriers(tile, stage_bytes)
    w(f"const unsigned mbar = sbase + {full[0]};   // full[s] at + 8 s, empty[s] at + "
      f"{empty[0] - full[0]} + 8 s")
    w.open("if (tid == 0)")
    w.open(f"for (int s = 0; s < {_buffers(tile)}; ++s)")
    ntma = sum(1 for t in tmas if t)
    w(f"merit_mb_init(mbar + 8 * s, {full_count(nreg, ntma)});")
    # clusters: the first thread of each consumer warpgroup of both blocks releases a buffer
    # ping-pong tiles: each k tile is read by one group of the two (one warpgroup)
    w(f"merit_mb_init(mbar + {empty[0] - full[0]} + 8 * s, "
      f"{ncons // 64 if cl else ncons // 2 if tile.pingpong else ncons});")
    w.close()
    w("merit_mb_init_fence();")
    w.close()
    w("merit_cluster_sync();" if cl else "__syncthreads();")
    w.open(f"if (warp >= {ncons // 32})")
    if getattr(tile, "hold", 0):   # the consumers take the registers the producer leaves
        w(f"merit_maxnreg_dec<{HOLD_REGS[1]}>();")
    w(f"const int tid = threadIdx.x - {ncons};   // the producer's own thread index")
    if getattr(tile, "elect", False):   # the first warp alone polls "empty" (its thread 0 copies)
        w(f"if (tid >= 32) {{ {'merit_cluster_sync(); ' if cl else ''}return; }}")


def _emit_producer_loop(w, tile, emit_loads, emit_stores, ntiles, stage_bytes, reg,
                        tmas=(None, None), bases=(0, 0), spec=None, clamp=None):
    """The producer's loop: per k tile, wait until the consumers have released its buffer (the
    ``kt // S - 1``-th phase of "empty"), issue its copies (``reg``: store its register slots,
    loaded one k tile earlier, a proxy fence, one plain arrival, then the next k tile's loads
    into the registers, in flight while the producer waits for the next buffer), one ``noinc``
    arrival that the copies make when they land; then the branch ends (the producer stores no
    outputs).  ``clamp``: the parallel index whose block coordinate the copies take from
    ``pc<j>`` (a persistent cluster tile's odd pair axis: clamped into the output)."""
    nbuf = _buffers(tile)
    full, empty = mbarriers(tile, stage_bytes)
    g = "g" if tile.persist else "kt"   # the block's k tiles so far: the ring's phases
    if reg:   # the register slots run one k tile ahead of their stores
        emit_loads("0", part="reg")
    w("#pragma unroll 1")
    w.open(f"for (int kt = 0; kt < {ntiles}; ++kt)")
    if tile.persist:
        w("const int g = g0 + kt;")
    w(f"const int s = {g} % {nbuf};")
    w(f"if ({g} >= {nbuf}) merit_mb_wait(mbar + {empty[0] - full[0]} + 8 * s, "
      f"(({g} / {nbuf}) + 1) & 1);")
    if any(tmas):   # one thread: the expected bytes, then one bulk copy per box
        bk = tile.chunk
        w.open("if (tid == 0)")
        w(f"merit_mb_expect(mbar + 8 * s, {sum(t['bytes'] for t in tmas if t)});")
        if tile.halo:   # a row of taps: per phase one widened box, per tap its weights
            _emit_halo_copies(w, spec, tile, tmas, stage_bytes, bases)
        for oi, t in enumerate(tmas):
            if not t or tile.halo:
                continue
            if t.get("cl"):   # the channels-last image: the tap's digits, one N-D box
                w.open("")
                lines, coords = cl_coords(spec, tile, t)
                for ln in lines:
                    w(ln)
                w(f"merit_tmac{len(coords)}(sbase + s * {stage_bytes} + {bases[oi]}, &tm{oi}, "
                  f"{', '.join(coords)}, mbar + 8 * s);")
                w.close()
                continue
            for g in range(t["boxes"]):
                mc = tile.cluster > 1 and oi == 1   # B: half the boxes each, multicast
                if mc and g % 2:
                    continue
                gx = f"({g} + (int)crank)" if mc else str(g)
                dst = f"sbase + s * {stage_bytes} + {bases[oi]} + {gx} * {t['dstep']}"
                pb = "pc" if t["j"] == clamp else "pb"
                at = f"{pb}{t['j']} + {gx} * {t['cstep']}"
                c0, c1 = (at, f"kt * {bk}") if t["mn"] else (f"kt * {bk}", at)
                if mc:
                    w(f"merit_tma2mc({dst}, &tm{oi}, {c0}, {c1}, mbar + 8 * s);")
                else:
                    w(f"merit_tma2({dst}, &tm{oi}, {c0}, {c1}, mbar + 8 * s);")
        w.close()
    emit_loads("kt", "s", part="asy")
    if reg:
        emit_stores("s")
        w("merit_proxy_fence();")
        w("merit_mb_arrive(mbar + 8 * s);")
    if not all(tmas):
        w("merit_mb_cp_arrive(mbar + 8 * s);")
    if reg and ntiles > 1:
        w.open(f"if (kt + 1 < {ntiles})")
        emit_loads("(kt + 1)", part="reg")
        w.close()
    w.close()
    if tile.persist:   # the next output tile's k tiles go on into the ring
        w(f"g0 += {ntiles};")
        w.close()
    w("merit_await_all();")
    if tile.cluster > 1:   # no block leaves while its peer may still signal it
        w("merit_cluster_sync();")
    w("return;")
    w.close()


def _emit_halo_copies(w, spec, tile, tmas, stage_bytes, bases):
    """The bulk copies of buffer ``kt`` of a ``Tile.halo`` tile (:func:`halo_plan`): the image's
    box of each tap phase at ``bases[0] + phase * astep``, then tap ``kx``'s weights (k offset
    ``k0 + kx * kst[x]``) at ``bases[1] + kx * bstep``."""
    hp = halo_plan(spec, tile)
    ta, tb = tmas
    w.open("")
    lines, k0 = halo_digits(spec, tile, hp)
    for ln in lines:
        w(ln)
    dst = f"sbase + s * {stage_bytes}"
    for n, p in enumerate(hp["phases"]):
        coords = halo_coords(spec, tile, hp, p)
        w(f"merit_tmac{len(coords)}({dst} + {bases[0] + n * hp['astep']}, &tm0, "
          f"{', '.join(coords)}, mbar + 8 * s);")
    w(f"const int k0 = {k0};")
    for kx in range(hp["kw"]):
        w(f"merit_tma2({dst} + {bases[1] + kx * hp['bstep']}, &tm1, "
          f"k0 + {kx * hp['kst'][hp['x']]}, pb{tb['j']}, mbar + 8 * s);")
    w.close()


def _emit_held_store(w, spec, tile, j, f, h):
    """Store held pair ``j`` (fragment ``f``, row half ``h``; :func:`held`) of the last output
    tile, at rows ``he0``, columns ``he1`` of its warpgroup's box (8 bytes; guarded where the
    output is ragged)."""
    M, N = spec.pshape
    blk = tile.block
    row = f"he0 + (wm & 3) * 16 + gq + {8 * h}"
    col = f"he1 + {8 * f} + 2 * tq"
    st = (f"*reinterpret_cast<float2*>(g_out0 + (long long)({row}) * {N} + ({col})) = "
          f"make_float2(hv{2 * j}, hv{2 * j + 1});")
    if M % blk[0] or N % blk[1]:
        w(f"if ({row} < {M} && {col} < {N}) {st}")
    else:
        w(st)


def _emit_consumer_loop(w, tile, ntiles, stage_bytes, accs, product, open_tiles=None,
                        areg=None, fence=True, pers=None, steps=None, spec=None):
    """The consumers' loop: per k tile, wait for its buffer's "full" phase, a proxy fence (the
    tensor cores read what the copies wrote), its wgmma issued and committed, then
    ``wgmma.wait_group 1`` (tile kt - 1's products are done) and one arrival on the "empty"
    mbarrier of tile kt - 1's buffer.  A persistent tile (``open_tiles``): the loop over the
    block's output tiles opened (left open for the epilogue), the sums zeroed per output tile,
    phases counted by ``g = g0 + kt``, and the tile's last buffer released once its products
    are done (so the producer fills the next tile's first buffers during the epilogue).
    A ping-pong tile (``tile.pingpong``): group ``pp`` takes every other output tile of the
    block (``g0`` starts at ``pp`` tiles' k tiles and steps by two tiles'); before its k loop
    it waits at named barrier ``1 + pp`` (group 0 not before its first tile) for the other
    group's arrival, which that group makes on barrier ``2 - pp`` when it has issued its k
    loop's last products and the block has a next output tile (so every "full" wait is for
    the next phase of its buffer: no parity aliasing across the groups).
    ``areg`` (A from registers): per k step its fragment's loads, a fence and the product,
    each committed and followed by ``wgmma.wait_group 1`` (the step before is done, its register
    set free); tile kt - 1's buffer is released after the first k step's wait.  ``fence``: the
    proxy fence after the wait (not needed where the copy engine writes both operands, see
    :data:`TMA_FENCE`)."""
    nbuf = _buffers(tile)
    prec, bk = tile.mma, tile.chunk
    ks = KSTEP[prec]
    full, empty = mbarriers(tile, stage_bytes)
    pp = tile.pingpong
    hd = held(spec, tile) if getattr(tile, "hold", 0) else None
    if hd:   # the held sums of the block's last output tile, where they go, whether any
        w(f"merit_maxnreg_inc<{HOLD_REGS[0]}>();")
        w(f"float {', '.join(f'hv{i} = 0.f' for i in range(2 * len(hd)))};")
        w("int he0 = 0, he1 = 0;")
        w("bool hon = false;")
    if open_tiles and pp:
        w(f"int g0 = pp * {ntiles};   // k tiles of this block's earlier output tiles")
        open_tiles(group=True)
        for a in accs:
            w(f"{a} = 0.f;")
        # the other group has waited for every k tile of its last output tile: the "full"
        # phases this group waits for are the next ones of their buffers (no parity aliasing)
        w("if (pp == 1 || g0 > 0) merit_bar_sync(1 + pp, 256);")
    elif open_tiles:
        w("int g0 = 0;   // k tiles of this block's earlier output tiles")
        open_tiles()
        for a in accs:
            w(f"{a} = 0.f;")
    sk = getattr(tile, "skew", 0)
    if open_tiles and sk:   # the second warpgroup trails the first by sk k tiles
        w(f"if (warp >= 4) merit_bar_sync({SKEW_BARRIER}, 256);")
    w("#pragma unroll 1")
    w.open(f"for (int kt = 0; kt < {ntiles}; ++kt)")
    g = "g" if open_tiles else "kt"
    if open_tiles:
        w("const int g = g0 + kt;")
    w(f"const int s = {g} % {nbuf};")
    w(f"merit_mb_wait(mbar + 8 * s, ({g} / {nbuf}) & 1);")
    if fence:
        w("merit_proxy_fence();")
    w(f"const unsigned long long so = (unsigned long long)(s * {stage_bytes // 16});")
    rel = f"mbar + {empty[0] - full[0]} + 8 * (({g} + {nbuf - 1}) % {nbuf})"
    if areg:
        w(f"const unsigned sa = sbase + s * {stage_bytes};")
        for k in range(bk // ks):
            areg(k)
            w("merit_wg_commit();")
            w("merit_wg_wait1();")
            if k == 0:
                w(f"if (kt > 0) merit_mb_arrive({rel});")
        if open_tiles and sk:   # the first warpgroup has issued k tiles 0 .. sk - 1
            w(f"if (kt == {sk - 1} && warp < 4) merit_bar_arrive({SKEW_BARRIER}, 256);")
    else:
        w("merit_wg_fence();")
        for k in range(steps or bk // ks):
            w(product(k))
        w("merit_wg_commit();")
        if open_tiles and sk:   # the first warpgroup has issued k tiles 0 .. sk - 1
            w(f"if (kt == {sk - 1} && warp < 4) merit_bar_arrive({SKEW_BARRIER}, 256);")
        if hd:   # the last output tile's held sums, a few per k tile, while the products run
            w.open("if (hon)")
            w.open("switch (kt)")
            for k in sorted({k for _, _, k in hd}):
                w(f"case {k}:")
                for j, (f, h, kk) in enumerate(hd):
                    if kk == k:
                        _emit_held_store(w, spec, tile, j, f, h)
                w("break;")
            w("default: break;")
            w.close()
            w.close()
        w("merit_wg_wait1();")
        if tile.cluster > 1:   # one thread per warpgroup for this block, one for the peer
            w(f"if (kt > 0 && (tid & 127) == 0) merit_mb_arrive({rel});")
            w(f"if (kt > 0 && (tid & 127) == 32) merit_mb_arrive_peer({rel}, crank ^ 1u);")
        else:
            w(f"if (kt > 0) merit_mb_arrive({rel});")
    w.close()
    if open_tiles and pp:   # the block's next output tile (the other group's) may start
        nx, step = pers   # (output tiles, blocks launched): the block's next tile is t + step
        w(f"if (t + {step} < {nx}) merit_bar_arrive(2 - pp, 256);")
    w("merit_wg_wait();")
    last = f"mbar + {empty[0] - full[0]} + 8 * ((g0 + {ntiles - 1}) % {nbuf})"
    if open_tiles and tile.cluster > 1:   # this block's and the peer's "empty", as above
        w(f"if ((tid & 127) == 0) merit_mb_arrive({last});")
        w(f"if ((tid & 127) == 32) merit_mb_arrive_peer({last}, crank ^ 1u);")
    elif open_tiles:   # the tile's last buffer is read: the producer may refill it
        w(f"merit_mb_arrive({last});")
    if tile.cluster > 1 and not open_tiles:
        w("merit_cluster_sync();")
    for a in accs:
        w(f"merit_keep({a});")
