"""Choosing a :class:`Tile`: candidates, a cost model, bank-conflict padding and argument checks.

The tile space is searched in two passes.  A cheap model ranks every candidate (register tile on
up to two parallel indices, threads per block, accumulation chunk) by its estimated time on the
device: fused multiply-adds, shared-memory loads (counted with Eq. 9 applied to the register tile
and the unrolled accumulation loops, whose overlapping windows the compiler loads once), footprint
copies, global bytes, and occupancy.  The best few then get their shared-memory padding and thread
order chosen to remove bank conflicts, measured with :class:`merit.mapping.BankFunction` on the
lanes of a warp.  :func:`rank` returns them best first; the autotuner times the top ones.

Rule for shared memory: a loop input goes through shared memory when each footprint element is
read at least twice per tile (``reuse >= 2``) and the footprints fit; otherwise (no reuse, or a
footprint too large for the smallest tile) it is read through the read-only data cache.  Pre and
post inputs are read once per output and always go through the cache.
"""

import dataclasses
import functools
import itertools
import math
import operator
import re

import numpy as np

from . import codegen, gemv, ldsm, mma
from .tile import Tile, extents, geometry

__all__ = ["Device", "H100", "rank", "complete", "check_tile", "shared_inputs", "conflicts",
           "vread_ok", "staged_variants",
           "shared_loads", "wavefronts"]


class Device:
    """The limits and rates the cost model needs (per SM, per clock)."""

    def __init__(self, name="NVIDIA H100 80GB HBM3", sms=132, smem_block=232448, smem_sm=233472,
                 regs_sm=65536, threads_sm=2048, fma_rate=4.0, lds_rate=1.0, dram_bytes_clk=1700.0,
                 atomics_clk=64.0, wgmma=True):
        self.name = name
        self.wgmma = wgmma                # sm_90a: the wgmma tensor-core tiles are candidates
        self.sms = sms
        self.smem_block = smem_block
        self.smem_sm = smem_sm
        self.regs_sm = regs_sm
        self.threads_sm = threads_sm
        self.fma_rate = fma_rate          # warp instructions per clock per SM (128 FP32 lanes)
        self.lds_rate = lds_rate          # warp shared loads per clock per SM (128 B/clk)
        self.dram_bytes_clk = dram_bytes_clk  # whole chip, bytes per SM clock (~3 TB/s at 1.75 GHz)
        self.atomics_clk = atomics_clk    # whole chip, fp32 atomic adds per SM clock (split-K)


H100 = Device()

#: Shared memory a tile may use: leaves room for two blocks per SM.
SMEM_CAP = 100 * 1024
#: Candidates the detailed cost model re-ranks after the first pass.
PREFILTER = 300
#: Innermost accumulation steps unrolled at most (with the register tile: code size).
UNROLL_CAP = 64


def _state_words(spec):
    decls = re.sub(r"\[[^\]]*\]", "", spec.body.get("state", ""))
    n = 0
    for stmt in decls.split(";"):
        stmt = stmt.strip()
        if stmt:
            n += stmt.count(",") + 1
    return n + spec.outputs


def shared_inputs(spec, tile, device=H100):
    """Per input, whether the rule in the module docstring sends it through shared memory."""
    return _shared_rule(spec, tile.nthreads * tile.nregs, tuple(tile.block), tile.chunk)


@functools.lru_cache(maxsize=1 << 14)
def _shared_rule(spec, lanes, block, chunk):
    ext = extents(spec, Tile((1,) * len(block), block, chunk))
    steps = math.prod(ext[spec.np:])
    out = []
    for k, op in enumerate(spec.inputs):
        if op.stage != "loop" or spec.na == 0:
            out.append(False)
            continue
        g = geometry(spec, Tile((1,) * len(block), block, chunk), k)
        out.append(lanes * steps >= 2 * g.elements and g.elements * 4 <= SMEM_CAP)
    return tuple(out)


def _unroll(spec, chunk, limit=None):
    """How many innermost accumulation indices to unroll fully (at most ``limit``), and their
    steps.  When ``chunk`` does not divide a_0, the kernel runs a rolled copy of the loops for
    the last, partial accumulation tile."""
    if spec.na == 0:
        return 0, 1
    ext = (chunk,) + tuple(spec.ashape[1:])
    u, steps = 0, 1
    for i in range(spec.na - 1, -1, -1):
        if steps * ext[i] > UNROLL_CAP or (limit is not None and u == limit):
            break
        steps *= ext[i]
        u += 1
    return u, steps


def _reg_footprint(spec, tile, k, unroll):
    """Distinct elements of input k one thread touches per unrolled region (Eq. 9 on registers)."""
    return _reg_elems(spec, k, tuple(tile.regs), tuple(tile.run(j) for j in range(spec.np)),
                      extents(spec, tile)[spec.np:], unroll)


@functools.lru_cache(maxsize=1 << 14)
def _reg_elems(spec, k, regs, runs, aext, unroll):
    tr = spec.inputs[k].transform
    P = spec.np
    n = {}
    for j in range(P):
        n[j] = regs[j]
    for i in range(spec.na - unroll, spec.na):
        n[P + i] = aext[i]
    total = 1
    for terms in tr.terms:
        side, copies = 1, 1
        for pos, s in terms:
            if pos in n and n[pos] > 1:
                if pos < P:
                    g = runs[pos]
                    copies *= n[pos] // g
                    side += (g - 1) * abs(s)
                else:
                    side += (n[pos] - 1) * abs(s)
        total *= side * copies
    return total


def _pow2(v, cap=4):
    """The largest power of two up to ``cap`` dividing ``v`` (``cap`` for 0)."""
    v = abs(v)
    p = 1
    while p < cap and v % (2 * p) == 0:
        p *= 2
    return p


def shared_loads(spec, tile, k, unroll=None):
    """Shared-memory load instructions ``{width: count}`` one thread issues for input k per
    unrolled region (register copies x unrolled accumulation steps), widths 1, 2 and 4 words.

    Equal words are loaded once; words that are adjacent and aligned are merged into 2- and
    4-word loads, as the compiler does when it can prove the alignment: the thread's base address
    is known modulo 4 when every run-time term of it (thread coordinates, rolled loop indices,
    a box misalignment) moves in multiples of 4 words, modulo 2 likewise, else not at all.
    """
    if unroll is None:
        unroll = tile.unroll
    g = geometry(spec, tile, k)
    tr = spec.inputs[k].transform
    P = spec.np
    ext = extents(spec, tile)
    coef = {}
    for ax, terms in enumerate(tr.terms):
        for pos, s in terms:
            coef[pos] = coef.get(pos, 0) + g.coef(ax, s)
    known = 1 if g.vector and not g.aligned else 4
    offs = np.zeros(1, dtype=np.int64)
    for pos, c in sorted(coef.items()):
        if pos < P:
            known = min(known, _pow2(c * tile.run(pos)))
            vals = [tile.copy_offset(pos, i) for i in range(tile.regs[pos])]
        elif pos - P >= spec.na - unroll:
            vals = range(ext[pos])
        else:
            known = min(known, _pow2(c))
            continue
        if len(vals) > 1:
            offs = (offs[:, None] + np.asarray(vals, dtype=np.int64) * c).ravel()
    base = sum(g.coef(ax, g.shift[ax]) for ax in range(len(g.sides)))
    u = np.unique(offs) + base + (4 * (1 << 20))   # non-negative, same residues
    n4 = n2 = 0
    if known >= 4:
        quads, cnt = np.unique(u // 4, return_counts=True)
        full = quads[cnt == 4]
        n4 = len(full)
        u = u[~np.isin(u // 4, full)]
    if known >= 2:
        _, cnt = np.unique(u // 2, return_counts=True)
        n2 = int((cnt == 2).sum())
    return {1: len(u) - 2 * n2, 2: n2, 4: n4}


def wavefronts(spec, tile, k, width=1):
    """Shared-memory cycles of one warp-wide load of ``width`` words of input k: the larger of
    its bank conflicts (distinct ``width``-word pieces one bank group serves) and its bytes."""
    addrs = _lane_addresses(spec, tile, k)
    pieces = {a // width for a in addrs}
    groups = {}
    for q in pieces:
        groups.setdefault(q % (32 // width), set()).add(q)
    return max(max(len(v) for v in groups.values()), -(-len(pieces) * 4 * width // 128))


def _read_cost(spec, tile, k):
    """Issue slots plus shared-memory cycles per thread per step of input k's shared reads."""
    loads = shared_loads(spec, tile, k)
    usteps = _unroll(spec, extents(spec, tile)[spec.np], tile.unroll or None)[1]
    return sum(n * (1 + wavefronts(spec, tile, k, w)) for w, n in loads.items() if n) / usteps


def estimate(spec, tile, device=H100, detail=True, tail="wave"):
    """Cost-model time of ``tile`` in SM clocks (lower is better), or None if it cannot run.

    ``detail``: count shared loads by width and their bank conflicts (:func:`shared_loads`,
    :func:`wavefronts`); otherwise one load per distinct word (a cheaper first pass).

    ``tail``: how the last, partial round of blocks costs.  ``"wave"``: a round is ``sms *
    blocks per SM`` blocks, and a partial one (under 4 rounds) costs a whole one; split-K partial
    sums cost their bytes twice at DRAM rate.  ``"sm"``: blocks are dealt to SMs, whose resident
    blocks share its issue slots, so only the SM holding the most blocks counts
    (``ceil(blocks / sms)``), and each split-K partial sum costs one atomic add at
    ``device.atomics_clk``.  The second ranks several-blocks-per-SM and split tiles of ragged
    sizes better (H100, GEMM 827 x 1615 x 1509: 64 x 128 blocks of 128 threads split 3 ways,
    0.137 ms, ranked 19th of 30 timed tiles by ``"wave"`` and 1st by ``"sm"``; the ``"wave"``
    pick, 128 x 128 split 16 ways, 0.316 ms); the first is what the other rows were tuned with,
    so :func:`rank` times the best of both.  ``"both"``: the pair ``(wave, sm)``."""
    P = spec.np
    nt, R = tile.nthreads, tile.nregs
    if nt > 1024:
        return None
    grid = [-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)]
    nb = math.prod(grid)
    ext = extents(spec, tile)
    chunk = ext[P] if spec.na else 1
    ntiles = -(-spec.ashape[0] // chunk) if spec.na else 1
    split = tile.split
    if split > 1:   # each of `split` blocks takes a share of the tiles, sums added atomically
        nb *= split
        ntiles = -(-ntiles // split)
    tile_steps = math.prod(ext[P:])
    terms = _block_terms(spec, tile, device, detail)
    if terms is None:
        return None
    lds, lds_cycles, ldg, copy_instr, gl_bytes, per_sm = terms
    warps = nb * nt / 32
    steps = tile_steps * ntiles
    # a sum of products is one fused multiply-add per step; other bodies cost more
    body = 1.0 if splittable(spec) else 1.0 + 0.5 * sum(1 for op in spec.inputs
                                                        if op.stage == "loop")
    issue = warps * (steps * (R * body + lds + 10 * ldg) + ntiles * copy_instr / nt)
    lsu = warps * steps * (lds_cycles + 2 * ldg)
    run = tile.block[-1] if tile.block else 1
    out_bytes = math.prod(spec.pshape) * 4 * spec.outputs * _coalescing(run)
    resident = per_sm * nt / 32
    eff = min(1.0, resident * min(R, 4) / 16.0) ** 0.5
    busy = sorted((issue / device.fma_rate, lsu / device.lds_rate))
    sm_time = (busy[1] + 0.25 * busy[0]) / device.sms / eff   # imperfect overlap
    costs = []
    for how in ("wave", "sm") if tail == "both" else (tail,):
        if how == "sm":
            per = nb / device.sms
            quant = math.ceil(per) / per
            atomics = split * math.prod(spec.pshape) * spec.outputs if split > 1 else 0
            dram = (nb * ntiles * gl_bytes + out_bytes) / device.dram_bytes_clk \
                + atomics / device.atomics_clk
        else:
            waves = nb / (device.sms * per_sm)
            quant = math.ceil(waves) / waves if waves < 4 else 1.0
            dram = (nb * ntiles * gl_bytes + out_bytes * (2 * split if split > 1 else 1)) \
                / device.dram_bytes_clk
        costs.append(max(sm_time * quant, dram) + 2000.0 + 200.0 * ntiles)
    return tuple(costs) if tail == "both" else costs[0]


_BLOCK_TERMS = {}
_BUT_SPLIT = operator.attrgetter(*(f for f in Tile.__dataclass_fields__ if f != "split"))


def _block_terms(spec, tile, device, detail):
    """The part of :func:`estimate` that a split-K copy of a tile shares with the tile (loads,
    copies and bytes per thread, step and accumulation tile; blocks per SM), or None where the
    tile does not fit: memoized on every field but ``split``."""
    key = (spec, _BUT_SPLIT(tile), device, detail)
    if key not in _BLOCK_TERMS:
        if len(_BLOCK_TERMS) >= 1 << 15:
            _BLOCK_TERMS.clear()
        _BLOCK_TERMS[key] = _block_terms_of(spec, tile, device, detail)
    return _BLOCK_TERMS[key]


def _block_terms_of(spec, tile, device, detail):
    nt, R = tile.nthreads, tile.nregs
    chunk = extents(spec, tile)[spec.np] if spec.na else 1
    u, usteps = _unroll(spec, chunk, tile.unroll or None)
    shared = tile.shared or shared_inputs(spec, tile, device)
    nbuf = tile.buffers
    smem = 0
    lds = 0.0          # shared load instructions per thread per step
    lds_cycles = 0.0   # their shared-memory cycles (bank conflicts, bytes)
    ldg = 0.0          # cached global loads per thread per step
    copy_instr = 0.0
    gl_bytes = 0
    # a sum keeps one register per output, and the compiler streams its operands
    sums = splittable(spec)
    regs = R * (1 if sums else _state_words(spec)) + 24
    for k, op in enumerate(spec.inputs):
        if op.stage != "loop":
            continue
        rf = _reg_footprint(spec, tile, k, u)
        regs += min(rf, 32 if sums else 64)
        if shared[k]:
            probe = tile if tile.pads or not (detail and sums) else \
                _with_pad(tile, k, _align_pads(spec, tile, k))
            g = geometry(spec, probe, k)
            smem += g.words * 4 * nbuf
            if not (detail and sums):
                lds += rf / usteps
                lds_cycles += rf / usteps
            else:
                probe = _replace(probe, unroll=u)
                for w, n in shared_loads(spec, probe, k, u).items():
                    if n:
                        lds += n / usteps
                        lds_cycles += n * wavefronts(spec, probe, k, w) / usteps
            copy_instr += g.words / 4 * 20 if g.vector else g.elements * 25
            gl_bytes += _gl_bytes(g)
        else:
            ldg += rf / usteps
            gl_bytes += g_bytes_global(spec, tile, k)
    if smem > min(SMEM_CAP, device.smem_block) or regs > 255:
        return None
    regs = -(-regs // 8) * 8
    per_sm = min(device.regs_sm // (nt * regs), device.threads_sm // nt, 32,
                 device.smem_sm // smem if smem else 32)
    if per_sm < 1:
        return None
    return lds, lds_cycles, ldg, copy_instr, gl_bytes, per_sm


def _coalescing(run):
    """DRAM traffic factor of rows of ``run`` contiguous words (short rows waste bursts)."""
    return max(1.0, 16.0 / max(run, 1))


def _gl_bytes(g):
    """DRAM bytes of copying footprint ``g``: a row read with a stride (``Geometry.step``) still
    moves the words between, in the same sectors."""
    d = g.step[-1] if g.step else 1
    if d == 1:
        return g.elements * 4 * _coalescing(g.sides[-1] if g.sides else 1)
    return g.elements * d * 4 * _coalescing(g.sides[-1] * d)


def g_bytes_global(spec, tile, k):
    """Bytes a block pulls from L2 for a cached input per accumulation tile (its footprint)."""
    g = geometry(spec, Tile(tile.threads, tile.regs, tile.chunk), k)
    return g.elements * 4 * (g.step[-1] if g.step else 1)


def _options(n, cap=16):
    opts = {1, 2, 4, 8}
    opts |= {d for d in range(1, min(n, cap) + 1) if n % d == 0}
    return sorted(e for e in opts if e <= max(n, 1))


def _thread_layouts(spec, regs, totals=(32, 64, 128, 256)):
    """Thread counts per index (powers of two, or the exact need when small) with the given
    products; at most the block needs along each index."""
    P = spec.np
    opts = []
    for j in range(P):
        need = -(-spec.pshape[j] // regs[j])
        o = {t for t in (1, 2, 4, 8, 16, 32, 64, 128, 256) if t < 2 * need}
        if need <= 32:
            o.add(need)
        opts.append(sorted(o))
    whole = math.prod(-(-n // e) for n, e in zip(spec.pshape, regs, strict=True))

    def rec(j, prod):
        if j == P:
            if prod in totals or (64 <= prod <= 384 and prod % 16 == 0) or prod == whole:
                yield ()
            return
        for t in opts[j]:
            if prod * t <= 384:
                for rest in rec(j + 1, prod * t):
                    yield (t,) + rest

    yield from rec(0, 1)


def _footprint_elems(spec, k, ext):
    n = 1
    for terms in spec.inputs[k].transform.terms:
        n *= 1 + sum((ext[pos] - 1) * abs(s) for pos, s in terms)
    return n


def _chunk(spec, tile):
    """Largest power-of-two chunk (or all of a_0) whose loop footprints fit half the shared
    budget (so that two buffers fit)."""
    return _block_chunk(spec, tuple(tile.block))


@functools.lru_cache(maxsize=1 << 14)
def _block_chunk(spec, block):
    """:func:`_chunk` of a tile of this block (it depends on nothing else; memoized, since the
    candidates repeat few blocks over many thread layouts, splits and strides)."""
    if spec.na == 0:
        return 1
    a0 = spec.ashape[0]
    if spec.levels[0] == 0:
        return a0
    loop = [k for k, op in enumerate(spec.inputs) if op.stage == "loop"]
    best = 1
    for c in sorted({c for c in (2, 4, 8, 16, 32, a0) if c <= a0}):
        ext = tuple(block) + (c,) + tuple(spec.ashape[1:])
        words = sum(_footprint_elems(spec, k, ext) for k in loop)
        if words * 4 * 1.1 <= SMEM_CAP // 2:
            best = c
    return best


def _waste(spec, tile):
    padded = math.prod(-(-n // b) * b for n, b in zip(spec.pshape, tile.block, strict=True))
    return padded / math.prod(spec.pshape)


def _candidates(spec, extended=False, tagged=False):
    """Tiles the cost model ranks.  ``extended``: also split-K variants of the strided tiles
    and 3- and 6-way splits (:func:`_hedged` ranks those; the default list stays the one the
    bench rows were tuned with).  ``tagged``: the extended list in one pass as pairs (tile,
    whether the default list has it); the default list is its tagged tiles, in order."""
    P = spec.np
    ext = extended or tagged

    def out(t, default):
        return (t, default) if tagged else t

    idx = [j for j in range(P) if spec.pshape[j] > 1]
    regsets = [tuple([1] * P)]
    for j in idx:
        for e in _options(spec.pshape[j]):
            if e > 1:
                r = [1] * P
                r[j] = e
                regsets.append(tuple(r))
    for j1, j2 in itertools.combinations(idx, 2):
        for e1 in _options(spec.pshape[j1]):
            for e2 in _options(spec.pshape[j2]):
                if e1 > 1 and e2 > 1 and e1 * e2 <= 64:
                    r = [1] * P
                    r[j1], r[j2] = e1, e2
                    regsets.append(tuple(r))
    sums = splittable(spec)
    if sums:   # deeper register tiles: three indices, each window reused along all of them
        for js in itertools.combinations(idx, 3):
            for es in itertools.product((2, 4, 8), repeat=3):
                if 16 <= math.prod(es) <= 64 and all(e <= spec.pshape[j]
                                                     for j, e in zip(js, es, strict=True)):
                    r = [1] * P
                    for j, e in zip(js, es, strict=True):
                        r[j] = e
                    regsets.append(tuple(r))
    for regs in regsets:
        for threads in _thread_layouts(spec, regs):
            t = Tile(threads, regs, 1)
            if _waste(spec, t) <= 1.3:
                t = Tile(threads, regs, _chunk(spec, t))
                yield out(t, True)
                if sums:
                    for s, default in _splits(spec, t, extended=ext, tagged=True):
                        yield out(s, default)
                # runs of 4 copies, threads * 4 apart: 16-byte reads of neighbouring lanes
                runs = tuple(4 if r >= 8 and r % 4 == 0 and n > 1 else 0
                             for r, n in zip(regs, threads, strict=True))
                if any(runs):
                    yield out(_replace(t, strided=runs), True)
                    if sums and ext:
                        for s in _splits(spec, _replace(t, strided=runs), extended=True):
                            yield out(s, False)


@functools.lru_cache(maxsize=256)
def splittable(spec):
    """Whether split-K applies: one level summing ``in0 * in1`` or ``in0`` into ``acc`` from
    zero, whose PostLoop only stores the sum (partial sums then add up to the result)."""
    b = spec.body
    return (spec.na > 0 and len(spec.levels) == 1 and spec.outputs == 1
            and spec.out_dtype == spec.dtype and "defs" not in b
            and mma._norm(b.get("state", "")) == "Tacc;"
            and [mma._norm(x) for x in b["pre"]] == ["acc=0;"]
            and [mma._norm(x) for x in b["post"]] == ["out0=acc;"]
            and mma._norm(b["loop"]) in ("acc+=in0*in1;", "acc+=in0;")
            and all(op.stage == "loop" for op in spec.inputs))


#: The terms of a 2-D convolution's two inputs over p = (batch, filters, rows, columns) and
#: a = (channels, tap rows, tap columns) (:func:`conv_inputs`): the image ``(N, C, H, W)`` moved by
#: (batch; channel; row + tap row; column + tap column), the weights ``(M, C, r, s)`` by (filter;
#: channel; tap row; tap column); stride and dilation 1.
CONV_IMAGE_TERMS = (((0, 1),), ((4, 1),), ((2, 1), (5, 1)), ((3, 1), (6, 1)))
CONV_WEIGHT_TERMS = (((1, 1),), ((4, 1),), ((5, 1),), ((6, 1),))


def conv_inputs(spec, form, image_ok, weights_ok, strided=False):
    """The rewritten forms' common check (``merit.gpu.wino``, ``merit.gpu.flat``): a string saying
    why ``form`` does not apply to ``spec``, unless it is a float32 fp32 specialization of a plain
    sum (:func:`splittable`) of two inputs with p = (batch, filters, rows, columns) and a =
    (channels, tap rows, tap columns); otherwise ``{"img": k, "wt": k}``, the loop inputs whose
    terms are :data:`CONV_IMAGE_TERMS` (and whose transform passes ``image_ok``) and
    :data:`CONV_WEIGHT_TERMS` (``weights_ok``), as many of the two as there are.  ``strided``:
    the image's row and column terms (and its taps') may move by any positive stride."""
    if spec.dtype != "float32" or spec.precision != "fp32" or spec.operands != "float32":
        return (f"{form} runs fp32 float32 convolutions, not {spec.dtype} "
                f"{spec.precision} on {spec.operands} arrays")
    if not splittable(spec) or len(spec.inputs) != 2 or spec.np != 4 or spec.na != 3:
        return (f"{form} needs a plain sum of two inputs over (channels, tap rows, "
                "tap columns) into (batch, filters, rows, columns)")
    roles = {}
    for k, op in enumerate(spec.inputs):
        tr = op.transform
        terms = tuple(tuple(sorted(x)) for x in tr.terms)
        if op.stage != "loop":
            continue
        if _image_terms(terms, strided) and image_ok(tr):
            roles["img"] = k
        elif terms == CONV_WEIGHT_TERMS and weights_ok(tr):
            roles["wt"] = k
    return roles


def _image_terms(terms, strided):
    """Whether ``terms`` are :data:`CONV_IMAGE_TERMS` (``strided``: up to the strides of the row
    and column terms, positive)."""
    if not strided:
        return terms == CONV_IMAGE_TERMS
    if len(terms) != len(CONV_IMAGE_TERMS) or terms[:2] != CONV_IMAGE_TERMS[:2]:
        return False
    return all(tuple(pos for pos, _ in t) == tuple(pos for pos, _ in want)
               and all(st > 0 for _, st in t)
               for t, want in zip(terms[2:], CONV_IMAGE_TERMS[2:], strict=True))


def vread_ok(spec, tile):
    """Whether ``tile.vread`` applies: a SIMT sum whose loop inputs all go through shared memory
    and whose innermost accumulation steps are unrolled (at most :data:`UNROLL_CAP` of them)."""
    return (not tile.mma and splittable(spec) and tile.unroll >= 1
            and bool(tile.shared) and all(tile.shared[k] for k, op in enumerate(spec.inputs)
                                          if op.stage == "loop"))


#: Extended split-K candidates (:func:`_splits`) also at a smaller chunk where the tile's own
#: cannot deal the split out evenly.
SPLIT_CHUNKS = True


def _splits(spec, tile, device=H100, extended=False, tagged=False):
    """Split-K variants of ``tile`` when its blocks fill less than two waves of the SMs
    (``extended``: 3 and 6 ways besides the powers of two, and a split that the tile's chunk
    cannot deal out evenly at a smaller chunk that can: a one-row GEMM's 32-way split).
    ``tagged``: pairs (tile, whether the list without ``extended`` has it)."""
    nb = math.prod(-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True))
    ntiles = -(-spec.ashape[0] // min(tile.chunk, spec.ashape[0]))
    if nb >= 2 * device.sms:
        return
    for split in (2, 3, 4, 6, 8, 16, 32) if extended else (2, 4, 8, 16, 32):
        if nb * split > 16 * device.sms:
            continue
        per = -(-ntiles // split)
        if -(-ntiles // per) == split:   # every split must get tiles
            s = _replace(tile, split=split)
            yield (s, split not in (3, 6)) if tagged else s
        elif extended and SPLIT_CHUNKS:   # else a smaller chunk (down to 8) that deals evenly
            chunk = tile.chunk // 2
            while chunk >= 8:
                n = -(-spec.ashape[0] // chunk)
                if -(-n // -(-n // split)) == split:
                    s = _replace(tile, chunk=chunk, split=split)
                    yield (s, False) if tagged else s
                    break
                chunk //= 2


def complete(spec, tile, device=H100):
    """Fill the fields a caller left out of ``tile`` (shared, pads, order, double, unroll); a
    ``padrows`` tile's for the padded specialization its kernel runs."""
    if tile.wino and not tile.mma and not tile.gemv:
        spec = codegen.wino_spec(spec, tile)
    if tile.flat and not tile.mma and not tile.gemv:
        spec = codegen.flat_spec(spec, tile)
    P = spec.np
    if tile.padrows and not tile.mma and not tile.gemv:
        spec = codegen.pad_spec(spec, tile)
    if tile.mma:
        return _complete_mma(spec, tile, device)
    if tile.gemv:   # the streaming form stages nothing: its fields are all given
        return _replace(tile, shared=tile.shared or (False,) * len(spec.inputs))
    chunk = min(tile.chunk, spec.ashape[0]) if spec.na else 1
    if spec.na and spec.levels[0] == 0:
        # a0 belongs to an inner level whose PreLoop runs inside the tile loop: one tile only
        chunk = spec.ashape[0]
    t = Tile(tuple(tile.threads), tuple(tile.regs), chunk, tile.shared, tile.pads,
             tuple(tile.order) or tuple(range(P - 1, -1, -1)),
             tuple(tile.strided) or (False,) * P, tile.double, tile.unroll, tuple(tile.vector),
             split=tile.split, vread=tile.vread, lean=tile.lean,
             minblocks=tile.minblocks, stages=tile.stages, forder=tile.forder,
             vahead=tile.vahead, ptxas=tile.ptxas, wrows=tile.wrows, padrows=tile.padrows,
             ragged=tile.ragged, wino=tile.wino, flat=tile.flat, sector=tile.sector)
    if not t.shared:
        t = _replace(t, shared=shared_inputs(spec, t, device))
    if not tile.unroll:
        t = _replace(t, unroll=_unroll(spec, chunk)[0])
    else:
        t = _replace(t, unroll=_unroll(spec, chunk, tile.unroll)[0])
    ntiles = -(-spec.ashape[0] // chunk) if spec.na else 1
    if t.vread and not vread_ok(spec, t):
        t = _replace(t, vread=False)
    if not t.vread:
        t = _replace(t, forder=0, vahead=False)
    if not t.pads:
        t = _tune_banks(spec, t)
    if ntiles == 1 or not any(t.shared):
        t = _replace(t, double=False)   # nothing to overlap
    elif not tile.double:
        dbl = _replace(t, double=True)
        if _smem_bytes(spec, dbl) <= min(SMEM_CAP, device.smem_block):
            t = dbl
    return t


def _complete_mma(spec, tile, device):
    """Fill a tensor-core tile: both loop inputs shared, fragment-read padding, double buffers."""
    P = spec.np
    shared = tuple(op.stage == "loop" for op in spec.inputs)
    if tile.ldsm:   # gathered operand tiles: no footprints to pad, two buffers (half: stages)
        return Tile((1,) * P, tuple(tile.regs), tile.chunk, shared, (), tuple(range(P - 1, -1, -1)),
                    (False,) * P, False, 0, (), tile.mma, tuple(tile.warps), tuple(tile.frags),
                    ldsm=True, wgmma=tile.wgmma, cluster=tile.cluster, minblocks=tile.minblocks,
                    stages=tile.stages if tile.half or tile.producer else 2, half=tile.half,
                    mn=tile.mn, producer=tile.producer, tma=tile.tma, persist=tile.persist,
                    areg=tile.areg, pingpong=tile.pingpong, cl=tile.cl, halo=tile.halo,
                    epi=tile.epi, evict=tile.evict, place=tile.place,
                    elect=tile.elect, skew=tile.skew,
                    hold=tile.hold)
    chunk = min(tile.chunk, spec.ashape[0])
    t = Tile((1,) * P, tuple(tile.regs), chunk, shared, tile.pads, tuple(range(P - 1, -1, -1)),
             (False,) * P, tile.double, 0, tuple(tile.vector), tile.mma, tuple(tile.warps),
             tuple(tile.frags))
    if not t.pads:
        t = _tune_banks(spec, t)
    ntiles = -(-spec.ashape[0] // chunk)
    if ntiles == 1:
        t = _replace(t, double=False)
    elif not tile.double:
        dbl = _replace(t, double=True)
        if _smem_bytes(spec, dbl) <= device.smem_block - 1024:
            t = dbl
    return t


_FIELDS = tuple(Tile.__dataclass_fields__)
_ALL_FIELDS = operator.attrgetter(*_FIELDS)


def _replace(tile, **kw):
    fields = dict(zip(_FIELDS, _ALL_FIELDS(tile), strict=True))
    fields.update(kw)
    return Tile(**fields)


def _smem_bytes(spec, tile):
    if tile.ldsm:
        return ldsm.smem_bytes(spec, tile)
    nbuf = tile.buffers
    total = 0
    for k in range(len(spec.inputs)):
        if tile.shared and tile.shared[k]:
            total += -(-geometry(spec, tile, k).words * nbuf // 4) * 4
    if tile.mma:
        total += mma.ktab_words(spec, tile)
    return total * 4


@functools.lru_cache(maxsize=4096)
def _lane_coords(threads, order):
    """Thread coordinates (t_j) of the 32 lanes of warp 0, one row per lane."""
    lanes = []
    for tid in range(min(32, math.prod(threads))):
        q, t = tid, [0] * len(threads)
        for j in order:
            t[j] = q % threads[j]
            q //= threads[j]
        lanes.append(t)
    return np.asarray(lanes, dtype=np.int64)


def conflicts(spec, tile, k):
    """Bank-conflict degree of input k's shared reads: the most distinct words one bank serves
    to warp 0 in one step (1 = conflict-free; equal words are broadcast)."""
    if tile.ldsm:
        return 1    # XOR-swizzled pieces: conflict-free ldmatrix phases by construction
    if tile.mma:
        return mma.conflicts(spec, tile, k)
    return _conflict_degree(spec, k, *_lane_key(spec, tile, k))


def _lane_key(spec, tile, k):
    """What warp 0's addresses of input k depend on: the footprint's geometry, the threads,
    their order and the register copies' runs."""
    return (geometry(spec, tile, k), tuple(tile.threads),
            tuple(tile.order) or tuple(range(spec.np - 1, -1, -1)),
            tuple(tile.run(j) for j in range(spec.np)))


@functools.lru_cache(maxsize=1 << 16)
def _conflict_degree(spec, k, g, threads, order, runs):
    """:func:`conflicts` of the lanes :func:`_lane_key` describes (memoized: the padding search
    and the thread orders revisit the same layouts), counted on the distinct words."""
    words = np.unique(_addresses(spec, k, g, threads, order, runs))
    return int(np.bincount(_bank_function().bank(words), minlength=32).max())


@functools.cache
def _bank_function():
    from merit.mapping.bank import BankFunction

    return BankFunction(32)


def _lane_addresses(spec, tile, k):
    """Shared word address (offset and box shift included) input k's first register copy reads
    for each of the 32 lanes of warp 0 in the first step."""
    return _addresses(spec, k, *_lane_key(spec, tile, k)).tolist()


def _addresses(spec, k, g, threads, order, runs):
    tr = spec.inputs[k].transform
    base = sum(g.coef(ax, g.shift[ax]) for ax in range(len(g.sides)))
    coef = np.zeros(spec.np, dtype=np.int64)
    for ax, terms in enumerate(tr.terms):
        for pos, s in terms:
            if pos < spec.np:
                coef[pos] += runs[pos] * g.coef(ax, s)
    return base + _lane_coords(threads, order) @ coef


def _align_pads(spec, tile, k):
    """Per-axis padding that makes every outer pitch of input k's buffer a multiple of 4 words
    (so that adjacent words of a thread can be read 16 bytes at a time)."""
    nax = len(spec.inputs[k].transform.source_shape)
    pads = [0] * nax
    for ax in range(nax - 2, -1, -1):
        g = geometry(spec, _with_pad(tile, k, pads), k)
        pads[ax] = -g.pitches[ax] % 4
    return tuple(pads)


@functools.lru_cache(maxsize=1 << 12)
def _tune_banks(spec, tile):
    """Pick the thread order (re-tiling) and per-axis padding that minimize bank conflicts
    (memoized: the list, the ``"sm"`` model's extras and the grid-filling ones complete many
    of the same tiles)."""
    shared = [k for k in range(len(spec.inputs)) if tile.shared and tile.shared[k]]
    if not shared:
        return tile
    default = tile.order
    steps = math.prod(extents(spec, tile)[spec.np:])
    sums = splittable(spec)
    active = [j for j in default if tile.threads[j] > 1]
    rest = [j for j in default if tile.threads[j] == 1]
    best = None
    for perm in itertools.permutations(active):
        order = tuple(perm) + tuple(rest)
        t = _replace(tile, order=order, pads=tuple(() for _ in spec.inputs),
                     vector=(True,) * len(spec.inputs))
        pads, vec = [], []
        total_pad = 0
        score = 0
        for k in range(len(spec.inputs)):
            if k not in shared:
                pads.append(())
                vec.append(False)
                continue
            options = []
            for v in (True, False):
                tv = _with_vector(t, k, v)
                g = geometry(spec, tv, k)
                if v and not g.vector:
                    continue
                if tile.mma or not sums:
                    cur, deg = _pad_search(spec, tv, k)
                    # 16-byte rows cost a quarter of the copy instructions: worth a 2-way
                    # conflict
                    options.append((deg / 2 if v else deg, not v, sum(cur), cur, v))
                    continue
                # reads (issue and shared cycles) plus the copy's instructions, per step
                copy = (g.words / 4 * 20 if v else g.elements * 25) / tile.nthreads / steps
                for cur in {tuple(_pad_search(spec, tv, k)[0]),
                            tuple(_pad_search(spec, tv, k, _align_pads(spec, tv, k))[0])}:
                    cost = _read_cost(spec, _with_pad(tv, k, cur), k) + copy
                    options.append((cost, not v, sum(cur), cur, v))
            cost, _, _, cur, v = min(options)
            t = _with_vector(_with_pad(t, k, cur), k, v)
            pads.append(tuple(cur))
            vec.append(v)
            total_pad += sum(cur)
            score += cost
        key = (score, order != default, total_pad)
        if best is None or key < best[0]:
            best = (key, _replace(tile, order=order, pads=tuple(pads), vector=tuple(vec)))
    return best[1]


def _pad_search(spec, t, k, start=None):
    """Greedy per-axis padding (outer axes, innermost last) minimizing input k's conflicts;
    steps of 4 words when rows are copied in 16-byte pieces or when starting from ``start``
    (:func:`_align_pads`: keep the pitches multiples of 4)."""
    nax = len(spec.inputs[k].transform.source_shape)
    base = list(start) if start else [0] * nax
    cur = list(base)
    deg = conflicts(spec, _with_pad(t, k, cur), k)
    step = 4 if start or geometry(spec, t, k).vector else mma.pad_step(spec, t, k) if t.mma else 1
    fast = not t.ldsm and not t.mma
    for ax in range(nax - 2, -1, -1):
        if deg == 1:
            break
        trials = []
        for pad in range(step, 33, step):
            trial = list(cur)
            trial[ax] = base[ax] + pad
            trials.append(trial)
        # the degrees of all trials at once (the SIMT tiles' count, vectorized), then the same
        # greedy scan: the first pad that lowers the degree most so far, until conflict-free
        degs = (_pad_degrees(spec, t, k, trials) if fast else
                [conflicts(spec, _with_pad(t, k, trial), k) for trial in trials])
        for trial, d in zip(trials, degs, strict=True):
            if d < deg:
                deg, cur = int(d), trial
                if d == 1:
                    break
    return cur, deg


def _pad_degrees(spec, tile, k, trials):
    """:func:`conflicts` of SIMT tile ``tile``'s input ``k`` with each padding of ``trials``, in
    one pass: a lane's word address is linear in the buffer's pitches (:meth:`Geometry.coef`),
    and the pitches follow from the padding and the row widths, which the padding leaves as
    they are."""
    g, threads, order, runs = _lane_key(spec, tile, k)
    n = len(g.sides)
    widths = g.sides[:-1] + (g.row,)
    # the lanes' multiples of each pitch: their addresses with one pitch 1 and the others 0
    unit = np.eye(n, dtype=np.int64)
    mult = np.stack([_addresses(spec, k, dataclasses.replace(g, pitches=tuple(int(v) for v in e)),
                                threads, order, runs) for e in unit], axis=1)
    pads = np.asarray(trials, dtype=np.int64)
    pitches = np.ones((len(trials), n), dtype=np.int64)
    for ax in range(n - 2, -1, -1):
        pitches[:, ax] = pitches[:, ax + 1] * widths[ax + 1] + pads[:, ax]
    return _degrees(pitches @ mult.T)


def _degrees(addrs):
    """Per row of lane addresses, the most distinct words one bank serves (:func:`conflicts`)."""
    a = np.sort(addrs, axis=1)
    new = np.ones(a.shape, dtype=bool)
    new[:, 1:] = a[:, 1:] != a[:, :-1]
    banks = np.asarray(_bank_function().bank(a.ravel())).reshape(a.shape)
    rows = np.broadcast_to(np.arange(len(a))[:, None], a.shape)
    counts = np.zeros((len(a), 32), dtype=np.int64)
    np.add.at(counts, (rows[new], banks[new]), 1)
    return counts.max(axis=1).tolist()


def _with_vector(tile, k, v):
    vec = list(tile.vector) if tile.vector else [True] * (k + 1)
    while len(vec) <= k:
        vec.append(True)
    vec[k] = v
    return _replace(tile, vector=tuple(vec))


def _with_pad(tile, k, pad):
    pads = list(tile.pads) if tile.pads else [()] * (k + 1)
    while len(pads) <= k:
        pads.append(())
    pads[k] = tuple(pad)
    return _replace(tile, pads=tuple(pads))


def rank(spec, count=6, device=H100):
    """The ``count`` best complete tiles by the cost model, best first (distinct shapes).

    A problem specialized for a tensor-core precision gets tensor-core tiles only (ValueError when
    it is not a dot product they can run, see :func:`merit.gpu.mma.roles`)."""
    scored = []
    sums = splittable(spec)
    if spec.precision != "fp32":
        if mma.roles(spec) is None:
            raise ValueError(f"problem {spec.name!r}: precision {spec.precision!r} runs on the "
                             f"tensor cores, which need a dot product (Dot, DotReLU, "
                             f"DotResidual) whose inputs split the parallel indices into rows "
                             f"(>= 16) and columns (>= 8)")
        cap = min(SMEM_CAP, device.smem_block)
        big = device.smem_block - 1024
        for t in mma.candidates(spec, spec.precision, cap, big):
            cost = mma.estimate(spec, t, device, big)
            if cost is not None:
                scored.append((cost, t))
        for t in ldsm.candidates(spec, spec.precision, big):
            cost = ldsm.estimate(spec, t, device, big)
            if cost is not None:
                scored.append((cost, t))
        wg = []
        if device.wgmma:
            for t in ldsm.candidates(spec, spec.precision, big, wgmma=True):
                cost = ldsm.estimate(spec, t, device, big)
                if cost is not None:
                    wg.append((cost, complete(spec, t, device)))
            # at equal cost, MN-major operands first: their slots are copies of lines, not
            # gathers of k (measured faster on every GEMM and convolution that has them)
            wg.sort(key=lambda ct: (ct[0], not ct[1].mn, -ct[1].nthreads))
    else:
        hedge = sums and count > 1
        alt = []
        # the default list and, for the hedge, the extended one's further tiles, in one pass
        tagged = list(_candidates(spec, tagged=True)) if hedge else []
        base = [t for t, default in tagged if default] if hedge else list(_candidates(spec))
        for t in base:
            cost = estimate(spec, t, device, detail=False, tail="both" if hedge else "wave")
            if cost is not None:
                scored.append((cost[0], t) if hedge else (cost, t))
                if hedge:
                    alt.append((cost[1], t))
        if hedge:
            known = set(base)
            for t, _ in tagged:
                if t not in known:
                    cost = estimate(spec, t, device, detail=False, tail="sm")
                    if cost is not None:
                        alt.append((cost, t))
            filled = _filled(spec, alt, device)
            hedge = _hedged(spec, alt, device)
        # the loads' widths and bank conflicts for the most promising few hundred
        scored.sort(key=lambda ct: (ct[0], -ct[1].nthreads))
        scored = [(estimate(spec, t, device), t) for _, t in scored[:PREFILTER]]
        scored = [(c, t) for c, t in scored if c is not None]
    scored.sort(key=lambda ct: (ct[0], -ct[1].nthreads))
    out = []
    pool = count * 4
    if spec.precision != "fp32":    # keep candidates of both tensor-core kernels
        scored = ([ct for ct in scored if ct[1].ldsm][:pool]
                  + [ct for ct in scored if not ct[1].ldsm][:pool])
        pool *= 2
    for cost, t in scored[:pool]:
        full = complete(spec, t, device)
        cap = device.smem_block - 1024 if t.mma else min(SMEM_CAP, device.smem_block)
        if _smem_bytes(spec, full) > cap:
            continue
        if t.mma or not sums:
            # bank conflicts slow the shared reads: re-rank with the layout's worst degree
            degree = max([conflicts(spec, full, k) for k in range(len(spec.inputs))
                          if full.shared[k]] + [1])
            out.append((cost * (1 + 0.25 * (degree - 1)), full))
        else:   # re-rank with the tuned layout's loads (widths, bank conflicts)
            out.append((estimate(spec, full, device) or cost, full))
    out = sorted(out, key=lambda ct: ct[0])
    if spec.precision != "fp32":
        # the two tensor-core kernels' models are calibrated apart: the autotuner times the best
        # of each, alternating (staged first)
        staged = _diverse([ct for ct in out if ct[1].ldsm], count)
        plain = _diverse([ct for ct in out if not ct[1].ldsm], count)
        out = [ct for pair in itertools.zip_longest(staged, plain) for ct in pair if ct]
        # the wgmma tiles' model is calibrated apart too: its best few follow the first
        # (the cost model's choice without timing stays a tile for any sm_80 device)
        out = (out[:1] + wg[:WG_TUNED] + out[1:])[:count]
    else:
        ranked = out
        out = _diverse(out, count) if sums else out[:count]
    out = _deeper(spec, out, count, device)
    if spec.operands != "float32" and count > 1:
        out = out + _half_variants(spec, out, wg, device)
    elif spec.precision == "tf32" and count > 1 and TF32_PRODUCER_TUNED:
        out = out + _producer_variants(spec, out, wg, device)
    if spec.precision != "fp32" and count > 1:
        out = out + _cl_variants(spec, out, device)
    if sums and spec.precision == "fp32" and count > 1:
        have = {t for _, t in out}
        extra = [ct for ct in hedge if ct[1] not in have][:HEDGE]
        have |= {t for _, t in extra}
        fill = [] if fills(spec, out[0][1], device) else \
            [ct for ct in filled if ct[1] not in have][:FILL_TUNED]
        have |= {t for _, t in fill}
        grids = _other_grids(spec, ranked, have)
        order = PTXAS_VARIANTS if PTXAS_TUNED else ()
        wide = _wide_variants(spec, out[:VARIANTS_OF] + extra, device) if WIDE_TUNED else []
        out = (out + extra + fill + grids
               + _lean_variants(spec, out[:VARIANTS_OF], device, LEAN_VARIANTS + _ptxas_forms())
               + _lean_variants(spec, extra, device, HEDGE_VARIANTS + order[1:])
               + _lean_variants(spec, fill + grids, device, ({"lean": True},) + order[1:])
               + wide)
        if GEMV_TUNED:
            have = {t for _, t in out}
            out += [(0.0, t) for t in gemv.candidates(spec, device) if t not in have]
    if not out:
        raise ValueError(f"problem {spec.name!r}: no tile fits the device "
                         f"(shared memory or registers)")
    return [t for _, t in out]


#: SIMT sums that reuse one operand too little to tile it (:func:`merit.gpu.gemv.roles`: a
#: matrix read with unit stride along one output index, at most :data:`merit.gpu.gemv.ROWS`
#: outputs per column besides): the autotuner also times the streaming form's tiles
#: (:data:`merit.gpu.gemv.TUNED`), which read the matrix in aligned 16-byte pieces.  No other
#: problem's list changes.
GEMV_TUNED = True


#: Tensor-core problems: wgmma tiles the autotuner times (the model's best first).
WG_TUNED = 4

#: FP16 / BF16 problems given half-precision arrays: the best staged tiles of each kind
#: (``ldmatrix``, ``wgmma``) whose ``half`` copies the autotuner times, each with two and with
#: the most buffers (up to 4) that fit (wgmma: 2, 3 and 4).
HALF_TUNED = 3
#: The half wgmma tiles' warp-specialized copies with bulk tensor copies (``Tile.producer`` and
#: ``Tile.tma``, 3 and 4 buffers) are timed too, where an operand qualifies.
PRODUCER_TUNED = True


def _half_variants(spec, ranked, wg, device):
    """``half`` copies (operands read as 2-byte elements, ``cp.async`` where four lie contiguous,
    a pipeline of ``stages`` k tiles) of the best :data:`HALF_TUNED` staged tiles of each kind
    among ``ranked`` and ``wg`` (the cost model does not rank them apart: the autotuner times
    them)."""
    cap = device.smem_block - 1024
    seen = {t for _, t in ranked}
    out = []
    for wgk in (False, True):
        pool = [ct for ct in ranked if ct[1].ldsm and ct[1].wgmma == wgk and ct[1].cluster == 1]
        if wgk:
            pool += [ct for ct in wg if ct not in pool]
        for cost, t in pool[:HALF_TUNED]:
            fits = [n for n in (2, 3, 4)
                    if _smem_bytes(spec, _replace(t, half=True, stages=n)) <= cap]
            # wgmma: 3 and 4 buffers keep a group of products in flight (a different loop)
            for n in (fits if wgk else sorted({fits[0], fits[-1]}) if fits else ()):
                h = _replace(t, half=True, stages=n)
                if h not in seen:
                    seen.add(h)
                    out.append((cost, h))
            # wgmma, 3 and 4 buffers: the warp-specialized form too (a producer warpgroup)
            # where the bulk tensor copy engine takes an operand (the form copying by cp.async
            # alone measured no faster: not a candidate)
            for n in (fits if wgk and PRODUCER_TUNED else ()):
                h = _replace(t, half=True, stages=n, producer=True)
                for f in ([_replace(h, tma=True)] if any(ldsm.tma_ops(spec, h)) else []):
                    if n >= 3 and f not in seen and _smem_bytes(spec, f) <= cap:
                        seen.add(f)
                        out.append((cost, f))
                        out += [(cost, p) for p in _persistent(spec, f, device)]
                        out += [(cost, p) for p in _pingpong(spec, f, device, cap)]
    return out


#: FP16 / BF16 producer tiles of two consumer warpgroups along the rows: their ping-pong form
#: (``Tile.pingpong``: one warpgroup's box of 64 rows per output tile, two groups taking the
#: block's output tiles in turn, persistent; never with :data:`PERSIST_TUNED` off) would be timed
#: beside them.  Off: on GEMM 4096^3 (H100, ``persist_probe.py --only gemm --prec fp16,bf16
#: --match _h4_mn_ws_tma_g132 --pingpong --pp-plain``, two runs) the ping-pong tiles took
#: 0.331-0.355 ms against 0.197-0.223 for the persistent 128 x 256 tiles, and no less than the
#: same 64-row box run by one consumer group (0.341-0.345): the halved box doubles B's reads
#: from L2, and the overlap of stores with products bought nothing measurable at that box.
PINGPONG_TUNED = False


def _pingpong(spec, tile, device, cap):
    """The ping-pong form of a producer tile with bulk copies whose two consumer warpgroups
    split 128 rows along one row index (warps (8, 1)): the box halved along that index (one
    warpgroup's 64 rows), two such groups per block, a persistent grid; none where the problem
    has no more output tiles than the grid or the form does not fit."""
    if not (PINGPONG_TUNED and PERSIST_TUNED and tile.producer and tile.tma and tile.cluster == 1
            and not tile.areg and tile.warps == (8, 1)):
        return []
    rows = ldsm.tile_roles(spec, tile).rows
    if len(rows) != 1 or tile.regs[rows[0]] != 128:
        return []
    regs = tuple(64 if j == rows[0] else r for j, r in enumerate(tile.regs))
    p = _replace(tile, regs=regs, warps=(4, 1), pingpong=True, persist=1)
    p = _replace(p, persist=persist_blocks(spec, p, device))
    if (ldsm.grid_blocks(spec, p)[0] <= p.persist or ldsm.wgmma_fits(spec, p)
            or not any(ldsm.tma_ops(spec, p)) or _smem_bytes(spec, p) > cap):
        return []
    return [p]


#: Warp-specialized tiles: their persistent form (``Tile.persist``, a grid of SMs x blocks per
#: SM looping over output tiles, 16-byte output stores) is timed beside each.
PERSIST_TUNED = True


def persist_blocks(spec, tile, device=H100):
    """The persistent grid of ``tile`` on ``device``: its SMs times the blocks per SM that
    shared memory (and 2048 threads per SM) leave room for."""
    per = max(1, min(device.smem_sm // (_smem_bytes(spec, tile) + 1024), 2048 // tile.nthreads))
    return device.sms * per


def _persistent(spec, tile, device):
    """The persistent form of a producer tile, where it has fewer blocks than output tiles
    (else it would be the same kernel), its staged-epilogue forms, and its form in clusters of
    two (:func:`_clustered`)."""
    if not PERSIST_TUNED or not tile.producer or tile.cluster != 1:
        return []
    g = persist_blocks(spec, tile, device)
    p = _replace(tile, persist=g)
    if ldsm.grid_blocks(spec, p)[0] <= g or ldsm.wgmma_fits(spec, p):
        return []
    forms = [p] + _staged(spec, p, device)
    forms += _held(spec, forms)
    forms += _skewed(spec, forms)
    forms += _placed(spec, forms)
    return forms + _elected(spec, forms) + _clustered(spec, p, device)


#: Staged-epilogue tiles of two consumer warpgroups whose operands all go by bulk copies: each
#: also with these chunks of each warpgroup's sums held in registers and stored during the next
#: output tile's k loop (``Tile.hold``; ``setmaxnreg`` moves the producer's registers to the
#: consumers) would be timed.  Off: on GEMM 4096^3 (H100, ``hold_probe.sh`` and ``ab_probe.py``,
#: 15 rounds in turns) holding 2 or 4 of 8 chunks ran within the spread of the same tiles
#: holding none (FP16 medians 0.2187-0.2252 ms against 0.2210-0.2227, BF16 0.2149-0.2161
#: against 0.2132-0.2138; see ``docs/gpu.md``); built and tested.
HOLD_TUNED = ()


def _held(spec, forms):
    """The ``Tile.hold`` forms (:data:`HOLD_TUNED`) of each staged tile of ``forms`` where they
    apply (:func:`merit.gpu.ldsm.hold_fits`)."""
    return [q for t in forms if t.epi for q in (_replace(t, hold=n) for n in HOLD_TUNED)
            if not ldsm.wgmma_fits(spec, q)]


#: Persistent producer tiles of two consumer warpgroups (plain and staged-epilogue forms): each
#: also with its second warpgroup trailing the first by these k tiles (``Tile.skew``: one
#: warpgroup's products run beside the other's epilogue) would be timed beside it.  Off: on
#: GEMM 4096^3 (H100, ``skew_probe.sh``, two runs) the best skewed tile was no faster than the
#: best tile without (FP16 0.2110 / 0.2147 ms against 0.2168 / 0.2148, BF16 0.2064 / 0.2062
#: against 0.2012 / 0.2012), and a skew of 1 or 2 slowed the direct-store tiles by 6-27 %;
#: built and tested.
SKEW_TUNED = ()


def _skewed(spec, forms):
    """The ``Tile.skew`` forms (:data:`SKEW_TUNED`) of each persistent tile of ``forms`` where
    they apply (:func:`merit.gpu.ldsm.skew_fits`)."""
    return [q for t in forms for q in (_replace(t, skew=n) for n in SKEW_TUNED)
            if not ldsm.wgmma_fits(spec, q)]


#: Persistent producer tiles (plain and staged-epilogue forms): each also launched in clusters of
#: two with nothing else changed (``Tile.place`` 2: the blocks' placement on the GPCs alone), an
#: even grid, would be timed beside it.  Off: on GEMM 4096^3 (H100, two runs) the placed tiles
#: ran -1 to +11 % against the same tiles unplaced on FP16, -7 to +6 % on BF16, and the best
#: placed tile beat the best unplaced one in 1 of 4 comparisons (see ``docs/gpu.md``); built
#: and tested.
PLACE_TUNED = False


def _placed(spec, forms):
    """The ``Tile.place`` 2 form of each persistent tile of ``forms`` (its grid rounded down to
    an even one); none where that leaves no grid or the form does not apply."""
    if not PLACE_TUNED:
        return []
    out = []
    for t in forms:
        q = _replace(t, place=2, persist=t.persist - t.persist % 2)
        if (t.cluster == 1 and q.persist >= 2 and ldsm.grid_blocks(spec, q)[0] > q.persist
                and not ldsm.wgmma_fits(spec, q)):
            out.append(q)
    return out


#: Persistent producer tiles with bulk copies of both operands (plain, staged, placed forms):
#: each also with its producer's first warp alone polling the "empty" barriers, its first
#: thread issuing the copies (``Tile.elect``), would be timed beside it.  Off: no faster on
#: GEMM 4096^3 (H100, one run: -6 to +27 %, see ``docs/gpu.md``); built and tested.
ELECT_TUNED = False


def _elected(spec, forms):
    """The ``Tile.elect`` form of each tile of ``forms`` where it applies."""
    if not ELECT_TUNED:
        return []
    return [e for e in (_replace(t, elect=True) for t in forms) if not ldsm.wgmma_fits(spec, e)]


#: Persistent producer tiles with bulk copies of both operands: their forms in clusters of two
#: (``Tile.cluster`` 2: pairs of output tiles along the row index, the B tile multicast, half
#: by each block's producer), with their staged-epilogue forms, would be timed too.  Off: on
#: GEMM 4096^3 they measured 25-40 % slower than the same tiles without clusters (see
#: ``docs/gpu.md``); built and tested.
CLUSTER_TUNED = False


def _clustered(spec, tile, device):
    """The persistent cluster form of persistent tile ``tile`` (an even grid: whole clusters)
    and its :func:`_staged` forms; none where the form does not apply."""
    if not CLUSTER_TUNED:
        return []
    c = _replace(tile, cluster=2, persist=tile.persist - tile.persist % 2)
    if (c.persist < 2 or ldsm.wgmma_fits(spec, c)
            or ldsm.grid_blocks(spec, c)[0] <= c.persist):
        return []
    return [c] + _staged(spec, c, device)


#: Persistent producer tiles whose output is a plain fp32 matrix: their staged-epilogue forms
#: (``Tile.epi``: the sums through shared memory, stored by the bulk copy engine while the next
#: output tile's products run) with these staging buffers per consumer warpgroup are timed too,
#: where shared memory holds them beside the ring.
EPI_TUNED = True
EPI_BUFFERS = (2, 4)
#: ... each also with these L2 cache hints (``Tile.evict``: 1 the bulk stores evict-first).
EVICT_TUNED = (1,)
#: ... and the form staging the whole output tile (``epi`` = a warpgroup's chunks: no consumer
#: waits for the copy engine to read a staging buffer before the next output tile's products,
#: the stores drain while they run), with the k tile halved where only that leaves room for
#: the staging beside the ring (a 128 x 256 fp32 tile is 128 KB), would be timed too.  Off: on
#: GEMM 4096^3 (H100, ``whole_probe.sh``, two runs) the BK 32 form took 0.230-0.233 ms FP16 and
#: 0.224-0.225 BF16 against 0.2135-0.2156 / 0.203-0.205 for the BK 64 tiles with 2 staging
#: buffers: BK 32's k loop costs more than the staging hides (see ``docs/gpu.md``).
EPI_WHOLE = False


def _staged(spec, tile, device):
    """The ``Tile.epi`` forms of persistent tile ``tile`` (:func:`merit.gpu.ldsm.epi_plan`),
    each with the persistent grid its shared memory leaves; none where the form does not apply
    or fit, or the grid would hold every output tile."""
    if not EPI_TUNED:
        return []
    cap = device.smem_block - 1024
    out = []
    forms = [_replace(tile, epi=n) for n in EPI_BUFFERS]
    whole = 8 * tile.frags[1] // ldsm.EPI_COLS
    if EPI_WHOLE and whole not in EPI_BUFFERS:
        for chunk in (tile.chunk, tile.chunk // 2):
            e = _replace(tile, epi=whole, chunk=chunk)
            if (not ldsm.wgmma_fits(spec, e) and ldsm.epi_plan(spec, e) is not None
                    and _smem_bytes(spec, e) <= cap):
                forms.append(e)
                break
    for e in forms:
        if ldsm.epi_plan(spec, e) is None or _smem_bytes(spec, e) > cap:
            continue
        g = persist_blocks(spec, e, device)
        e = _replace(e, persist=g - g % tile.cluster)
        if ldsm.grid_blocks(spec, e)[0] > e.persist and not ldsm.wgmma_fits(spec, e):
            out += [e] + [_replace(e, evict=x) for x in EVICT_TUNED]
    return out

#: TF32 problems: the warp-specialized TMA copies of the best wgmma tiles are timed too (see
#: :func:`_producer_variants`).
TF32_PRODUCER_TUNED = True
#: ... and their forms taking wgmma's A from registers (``Tile.areg``) where they exist.
TF32_AREG_TUNED = True


def _producer_variants(spec, ranked, wg, device):
    """TF32 problems (float32 arrays, which the bulk tensor copy engine copies as they are):
    the warp-specialized copies (``Tile.producer`` with ``Tile.tma``, 3 and 4 buffers) of the
    best :data:`HALF_TUNED` wgmma tiles where an operand qualifies for bulk copies; the other
    operand is copied word by word by the producer warpgroup's ``cp.async`` into the K-major
    layout (wgmma reads TF32 only so; :func:`merit.gpu.ldsm.word_ops`)."""
    cap = device.smem_block - 1024
    seen = {t for _, t in ranked}
    pool = [ct for ct in ranked if ct[1].wgmma and ct[1].cluster == 1]
    pool += [ct for ct in wg if ct not in pool and ct[1].cluster == 1]
    out = []
    for cost, t in pool[:HALF_TUNED]:
        for n in (3, 4) if PRODUCER_TUNED else ():
            f = _replace(t, stages=n, producer=True, tma=True, minblocks=1)
            if (f not in seen and any(ldsm.tma_ops(spec, f)) and not ldsm.wgmma_fits(spec, f)
                    and _smem_bytes(spec, f) <= cap):
                seen.add(f)
                out.append((cost, f))
                out += [(cost, p) for p in _persistent(spec, f, device)]
            # wgmma's A from registers, where an operand with contiguous lines can be copied
            # MN-major by the copy engine (the roles exchanged where it is B)
            a = ldsm.areg_variant(spec, f) if TF32_AREG_TUNED else None
            if a is not None and a not in seen and _smem_bytes(spec, a) <= cap:
                seen.add(a)
                out.append((cost, a))
                out += [(cost, p) for p in _persistent(spec, a, device)]
    return out


#: FP16 / BF16 (half arrays) and TF32 problems: the channels-last form (``Tile.cl``) of each
#: producer tile with bulk copies, where the problem is convolution-like
#: (:func:`merit.gpu.ldsm.cl_layout`), is timed beside it, the copies included.
CL_TUNED = True


def _cl_variants(spec, tiles, device):
    """The ``Tile.cl`` forms (both operands K-major by bulk copies, the image one box per tap
    and channel block from a channels-last copy) of the one-tile-per-block producer tiles with
    bulk copies among ``tiles``, and their persistent forms."""
    if not CL_TUNED or not (spec.operands != "float32" or spec.precision == "tf32"):
        return []
    cap = device.smem_block - 1024
    seen = {t for _, t in tiles}
    out = []
    for cost, t in tiles:
        if not (t.producer and t.tma) or t.persist or t.areg or t.pingpong or t.cluster != 1:
            continue
        f = _replace(t, cl=True, mn=False)
        if f in seen or ldsm.cl_layout(spec, f.chunk) is None or ldsm.wgmma_fits(spec, f) \
                or _smem_bytes(spec, f) > cap:
            continue
        seen.add(f)
        out.append((cost, f))
        out += [(cost, p) for p in _persistent(spec, f, device)]
        if not HALO_TUNED:
            continue
        h = _trim_columns(spec, _replace(f, halo=True))
        if h not in seen and not ldsm.wgmma_fits(spec, h) and _smem_bytes(spec, h) <= cap:
            seen.add(h)
            out.append((cost, h))
            out += [(cost, p) for p in _persistent(spec, h, device)]
    return out


def _trim_columns(spec, tile):
    """``tile`` with its box of columns cut to the problem's extent along its one column index
    (rounded up to wgmma's 8 per warp), where it is wider: a ``Tile.halo`` buffer holds the
    weights of a whole row of taps, whose lines past the extent would be copied as zeros."""
    r = ldsm.tile_roles(spec, tile)
    if r is None or len(r.cols) != 1:
        return tile
    j = r.cols[0]
    wn = tile.warps[1]
    fn = -(-spec.pshape[j] // (8 * wn))
    if fn >= tile.frags[1]:
        return tile
    regs = tuple(8 * wn * fn if i == j else n for i, n in enumerate(tile.regs))
    return _replace(tile, regs=regs, frags=(tile.frags[0], fn))


#: ... and their row-of-taps forms (``Tile.halo``: one widened image box per row of taps and
#: tap phase, the taps read at shifted descriptor starts) where they apply.
HALO_TUNED = True


#: SIMT sums: the autotuner also times the best tiles of the cost model with ``tail="sm"`` (see
#: :func:`estimate`) that the default model's list lacks, with their ``HEDGE_VARIANTS`` (``lean``,
#: and ``lean`` + ``vread``: the GEMM 4096^3's winner form, whose 128 x 128 blocks of 8 x 8 sums
#: the ``"sm"`` model often picks for ragged GEMMs too, split K ways).
HEDGE = 2
HEDGE_VARIANTS = ({"lean": True}, {"lean": True, "vread": True})


def _hedged(spec, first, device):
    """The best few of ``first`` (first-pass costs with ``tail="sm"``, and tiles) by the
    detailed :func:`estimate` with ``tail="sm"``, completed, that fit (best first, at most
    ``2 * HEDGE``: the caller drops those it already has)."""
    first.sort(key=lambda ct: (ct[0], -ct[1].nthreads))
    out = []
    for _, t in first[:PREFILTER // 10]:
        full = complete(spec, t, device)
        if _smem_bytes(spec, full) > min(SMEM_CAP, device.smem_block):
            continue
        cost = estimate(spec, full, device, tail="sm")
        if cost is not None and full not in [f for _, f in out]:
            out.append((cost, full))
    out.sort(key=lambda ct: (ct[0], -ct[1].nthreads))
    return out[:2 * HEDGE]


#: SIMT sums whose model's first choice does not fill the SMs (:func:`fills`): the autotuner
#: also times the best ``FILL_TUNED`` tiles (``tail="sm"`` model) whose grid, split-K blocks
#: included, has ``FILL`` blocks for every SM and ``FILL_WARPS`` warps per SM in all, with their
#: ``lean`` copies.  Both models take the chip's DRAM bandwidth and the warps an SM could hold
#: as given, so on a small or skinny problem grids of about one block per SM (a few large
#: register tiles) rank first while they leave SMs idle and too few loads in flight to draw
#: that bandwidth (bench seed 90417, the winners timed from the lists without these: 1x1 conv
#: stride 2, 112 blocks of 10 warps; batch-1 conv, 130 of 10; strided dilated conv, 126 of
#: 9.5; one-row GEMM, 256 of 8).
FILL = 2
FILL_WARPS = 12
FILL_TUNED = 2


def grid_blocks(spec, tile):
    """Blocks of ``tile``'s grid, the split-K copies of each output block included."""
    return math.prod(-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)) \
        * max(tile.split, 1)


def fills(spec, tile, device=H100):
    """Whether ``tile``'s grid has ``FILL`` blocks and ``FILL_WARPS`` warps per SM."""
    nb = grid_blocks(spec, tile)
    return nb >= FILL * device.sms and nb * tile.nthreads >= FILL_WARPS * 32 * device.sms


def _filled(spec, first, device):
    """The best few of ``first`` (as :func:`_hedged` takes it) among the tiles that
    :func:`fills`."""
    return _hedged(spec, [ct for ct in first if fills(spec, ct[1], device)], device)


#: SIMT sums: the autotuner also times the model's best ``GRID_PER`` tiles of each of the
#: ``GRID_TUNED`` best-ranked grid sizes (blocks, split-K copies included) that no tile of its
#: list has, with their ``lean`` and snake ``-O1`` copies.  The model's costs tie over whole
#: families of block shapes (its DRAM term counts every block's footprint at DRAM rate, though
#: the blocks' re-reads of a tensor hit L2), so its first 12 can all share one or two grids:
#: bench seed 90417's 1x1 stride-2 conv listed grids of 112 and 140 blocks only, while 126
#: blocks of 256 threads (0.955 of a wave on 132 SMs, the model's next tie) ran 0.0314-0.0343 ms
#: in the `lean` form against the list's best 0.0401 (H100, ``sweep_probe.py``).
GRID_TUNED = 2
GRID_PER = 2


def _other_grids(spec, ranked, have):
    """The best tiles of ``ranked`` (cost, tile), best first, on the best ``GRID_TUNED`` grid
    sizes that no tile of ``have`` runs, ``GRID_PER`` of each."""
    listed = {grid_blocks(spec, t) for t in have}
    out, per = [], {}
    for cost, t in ranked:
        g = grid_blocks(spec, t)
        if g in listed or t in have or per.get(g, 0) >= GRID_PER:
            continue
        if g not in per and len(per) >= GRID_TUNED:
            continue
        per[g] = per.get(g, 0) + 1
        out.append((cost, t))
    return out


#: SIMT sums: after timing its list, the autotuner times the ``LEAN_VARIANTS`` and
#: ``PTXAS_VARIANTS`` forms (and ``VAHEAD_VARIANT``) of the ``TIMED_VARIANTS`` fastest plain
#: tiles that lack some of them
#: (:func:`timed_variants`).  The list gives those forms to the model's best 3 and its extras
#: only, but the forms move a tile by -15 to +30 % (the model cannot tell them apart), so the
#: fastest plain tiles by the clock are where they pay: bench seed 90417's GEMM 2387 x 1123 x
#: 2841, 112 x 64 blocks of 128 threads (396 blocks: 3 a SM, one full wave, no split) 0.511 ms
#: plain (12th of the model's list), 0.435 in the snake ``-O1`` form, against the list's best
#: 0.469 (128 x 128 split 3 ways; H100, ``sweep_probe.py``).
TIMED_VARIANTS = 3


def timed_variants(spec, times, device=H100):
    """The autotuner's second round: ``(ms, tile)`` pairs it has timed in, the forms (see
    :data:`TIMED_VARIANTS`) of the fastest plain tiles not yet timed, fastest tile first."""
    if spec.precision != "fp32" or not splittable(spec) or not TIMED_VARIANTS:
        return []
    timed = {t for _, t in times}
    plain = sorted((mt for mt in times if not (mt[1].lean or mt[1].vread or mt[1].ptxas)
                    and not mt[1].mma and any(mt[1].shared)), key=lambda mt: mt[0])
    out, bases = [], 0
    forms = LEAN_VARIANTS + _ptxas_forms()
    for ms, t in plain:
        if bases >= TIMED_VARIANTS:
            break
        new = [v for _, v in _lean_variants(spec, [(ms, t)], device, forms)
               if v not in timed and v not in out]
        if new:
            out += new
            bases += 1
    return out


#: SIMT tiles: after the second round the autotuner also times the fastest tile it has timed
#: with its word copies by rows (:attr:`Tile.wrows`), where it has a word copy they apply to
#: (:func:`row_variants`).  A third round and not a form of the list, because the form went
#: both ways (H200, 2026-11-28): the 1x1 stride-2 conv's tile 0.0317 -> 0.0286 ms, its LDGSTS
#: bank conflicts 0.68 M -> 0.40 M; the ragged GEMM's ``-O1`` tile 0.440 -> 0.567 ms although
#: its LDGSTS conflicts fell from 15.9 M to 0.07 M.
WROWS_TUNED = True


def row_variants(spec, times, device=H100):
    """The autotuner's third round: the :attr:`Tile.wrows` copy of the fastest SIMT tile of
    ``times`` (``(ms, tile)`` pairs) where one of its shared footprints is copied word by word
    in rows whose length divides the thread count; empty otherwise."""
    if not WROWS_TUNED:
        return []
    simt = [mt for mt in times if not mt[1].mma and not mt[1].gemv and any(mt[1].shared)]
    if not simt:
        return []
    t = min(simt, key=lambda mt: mt[0])[1]
    if t.wrows or t.padrows or not any(
            t.shared[k] and codegen.row_lanes(geometry(spec, t, k), t.nthreads)
            for k in range(len(spec.inputs))):
        return []
    v = _replace(t, wrows=True)
    return [] if v in {u for _, u in times} else [v]


#: SIMT sums: with the third round the autotuner also times the ``STAGED_TUNED`` fastest tiles
#: it has timed that read some loop input through the read-only cache (no reuse in the tile, so
#: the rule of the module docstring leaves it out of shared memory), with every loop input staged
#: through shared memory instead, and that form's ``vread`` copy where it applies
#: (:func:`staged_variants`).  Staged, a footprint's rows are copied in coalesced 16-byte pieces
#: and read back across the bank-conflict padding; through the cache, a thread reads its own
#: run of the row, and the lanes of a warp touch words 64 bytes or more apart where the summed
#: axis is the contiguous one.  On the H200 (2026-11-29, ``tests/merit/gpu/scan_probe.py``, in
#: turns) the integral image's row totals (4096 x 256 sums of 16 contiguous words) ran 0.0383 ms
#: on the page's cached tile and 0.0227-0.0229 on staged forms of the model's tiles, its column
#: totals (summed along the rows) 0.0196 either way: timed beside them, not a rule.
STAGED_TUNED = 2


def staged_variants(spec, times, device=H100):
    """The staged forms (see :data:`STAGED_TUNED`) of the fastest plain SIMT tiles of ``times``
    (``(ms, tile)`` pairs) that read a loop input through the read-only cache, completed (pads
    and pipeline chosen again), those whose footprints fit in shared memory and that were not
    timed yet, fastest base first; empty where no such tile was timed."""
    if not STAGED_TUNED or spec.precision != "fp32" or spec.na == 0:
        return []
    loop = tuple(op.stage == "loop" for op in spec.inputs)
    if not any(loop):
        return []
    timed = {t for _, t in times}
    bases = sorted((mt for mt in times
                    if not (mt[1].mma or mt[1].gemv or mt[1].wrows or mt[1].padrows
                            or mt[1].wino or mt[1].flat or mt[1].vread)
                    and mt[1].shared
                    and any(lp and not sh for lp, sh in zip(loop, mt[1].shared, strict=True))),
                   key=lambda mt: mt[0])
    out = []
    cap = min(SMEM_CAP, device.smem_block)
    for _, t in bases[:STAGED_TUNED]:
        shared = tuple(lp or sh for lp, sh in zip(loop, t.shared, strict=True))
        v = complete(spec, _replace(t, shared=shared, pads=(), double=False, vector=()), device)
        if _smem_bytes(spec, v) > cap:
            continue
        forms = [v]
        if vread_ok(spec, v):
            forms.append(complete(spec, _replace(v, vread=True), device))
        out += [f for f in forms if f not in timed and f not in out]
    return out


#: SIMT tiles: with the third round the autotuner also times the ``SECTOR_TUNED`` fastest tiles
#: it has timed that copy a footprint in 16-byte pieces from a box whose misalignment is known
#: only at run time, with their rows from the 32-byte sector below the box instead of the
#: 16-byte piece (:attr:`Tile.sector` 8, :func:`sector_variants`).  A box that starts a word
#: before a block's first column (a filter's or a padded convolution's halo) puts each piece in
#: a sector of its own, two neighbouring lanes' pieces in different ones: on the H200
#: (2026-11-29, ``tests/merit/gpu/sep_probe.py``, Nsight Compute) the k=3 separable filter
#: 4096^2 read 4.84 M L2 sectors where a copy of its image reads 2.10 M, and ran 0.0417 ms
#: against 0.0383 with its rows from the sector (0.0383 from 64 bytes, 0.0380 from 128), bit
#: for bit.  More words staged a row (up to 7): timed, not a rule.
SECTOR_TUNED = 2
#: the words :func:`sector_variants` aligns the rows to
SECTOR_WORDS = 8


def _sector_moves(spec, tile):
    """Whether :attr:`Tile.sector` changes ``tile``'s kernel: a footprint it stages is copied
    in 16-byte pieces from a box not aligned at compile time."""
    return any(tile.shared[k] and (g := geometry(spec, tile, k)).vector and not g.aligned
               for k in range(len(spec.inputs)))


def sector_variants(spec, times, device=H100):
    """The :attr:`Tile.sector` forms (see :data:`SECTOR_TUNED`) of the fastest SIMT tiles of
    ``times`` (``(ms, tile)`` pairs) whose kernel they change, completed (pads chosen again),
    those that fit in shared memory and were not timed yet, fastest base first; empty where no
    such tile was timed."""
    if not SECTOR_TUNED:
        return []
    timed = {t for _, t in times}
    bases = sorted((mt for mt in times
                    if not (mt[1].mma or mt[1].gemv or mt[1].ragged or mt[1].sector)
                    and mt[1].shared and any(mt[1].shared)),
                   key=lambda mt: mt[0])
    def kernel_spec(t):
        return codegen.pad_spec(codegen.flat_spec(codegen.wino_spec(spec, t), t), t)

    bases = [t for _, t in bases if _sector_moves(kernel_spec(t), t)][:SECTOR_TUNED]
    out = []
    cap = min(SMEM_CAP, device.smem_block)
    for t in bases:
        v = complete(spec, _replace(t, sector=SECTOR_WORDS, pads=()), device)
        if (_sector_moves(kernel_spec(v), v) and _smem_bytes(kernel_spec(v), v) <= cap
                and v not in timed and v not in out):
            out.append(v)
    return out


#: SIMT tiles: with the third round the autotuner also times the fastest tile it has timed on
#: copies of the loop inputs whose innermost axis is not a multiple of 4 words, that axis
#: zero-padded to one (:attr:`Tile.padrows`, :func:`pad_variants`), so that their footprints go
#: in 16-byte pieces instead of word by word.  The copies are made in the timed launch.  On the
#: H200 the ragged GEMM 2387 x 1123 x 2841's tile ran 0.440 -> 0.393 ms (bit-identical); the 1x1
#: stride-2 conv's 0.0316 -> 0.083 (its whole image copied for every other pixel read) and a
#: batch-1 conv's 0.031 -> 0.038: timed beside the others, not a default.
PAD_TUNED = True


def pad_variants(spec, times, device=H100):
    """The :attr:`Tile.padrows` form of the fastest SIMT tile of ``times`` (``(ms, tile)``
    pairs), completed for the padded specialization, where some loop input it stages in shared
    memory is padded and then copied in 16-byte pieces, and that form reading the unpadded rows
    itself (:attr:`Tile.ragged` 1, :data:`RAGGED_TUNED`); the latter alone where the fastest is
    a padded tile; empty otherwise, and where those forms were timed already.  A
    :attr:`Tile.flat` tile's form pads the operands of its matrix product (the views of
    :func:`merit.gpu.flat.views`); a Winograd tile's transforms write its operands, so it has
    none."""
    if not PAD_TUNED or spec.precision != "fp32":
        return []
    simt = [mt for mt in times if not mt[1].mma and not mt[1].gemv and any(mt[1].shared)]
    if not simt:
        return []
    t = min(simt, key=lambda mt: mt[0])[1]
    timed = {u for _, u in times}
    if t.padrows:
        v = _replace(t, ragged=RAGGED_TUNED)
        return [v] if RAGGED_TUNED and not t.ragged and v not in timed else []
    if t.wrows or t.wino:
        return []
    spec1 = codegen.flat_spec(spec, t)
    if codegen.padded_layout(spec1) is None:
        return []
    spec2, moves = codegen.padded_layout(spec1)
    v = complete(spec, _replace(t, padrows=True, pads=(), vector=()), device)
    if not any(v.shared[k] and geometry(spec2, v, k).vector for k in moves):
        return []
    if _smem_bytes(spec2, v) > device.smem_block or v in timed:
        return []
    return [v] + ([_replace(v, ragged=RAGGED_TUNED)] if RAGGED_TUNED else [])


#: The :attr:`Tile.ragged` form the autotuner times beside each padded tile :func:`pad_variants`
#: gives (0: none): 1, the kernel reading the unpadded rows word by word where the padded form's
#: copies went, no copies in the launch.  On the H200 (2026-11-28,
#: ``tests/merit/gpu/nocopy_probe.py``, in turns) it ran the 1x1 conv N4 C181 M229 61x77's
#: product tile 0.0710 ms against the padded form's 0.0723 (copies and kernel; cuDNN 0.0699),
#: and lost on AlexNet CONV1 (0.319 against 0.267) and the ragged GEMM (0.449 against 0.367):
#: timed beside it, not a default.  The form 2 (loads held in registers through the tile's
#: steps) lost on all three (0.0769, 0.314, 0.397): a tile field, not a candidate.
RAGGED_TUNED = 1


#: SIMT sums: with the third round the autotuner also times the Winograd form F(m x m, r x r)
#: of a stride-1 convolution (:attr:`Tile.wino`, :mod:`merit.gpu.wino`) for each ``m`` here: the
#: cost model's best ``WINO_BASES`` plain tiles of its batched product, each with the forms the
#: second round gives (``lean``, ``vread``, ptxas ``-O1``).  Timed, not ranked: the model does not
#: price the transforms' launches, and the product's time against the direct sum's is the
#: question.  F(2, 3) only, because its rounding error is no larger than the direct sum's: on
#: the H200 (2026-11-28, ``wino_probe.py``) VGG conv3_1 N16 ran 0.557 ms in F(2, 3) at a relative
#: error of 3.6e-7 against float64, 0.350 ms in F(4, 3) at 2.3e-6 (its transforms scale by down
#: to 1/24), and 0.840 ms direct at 6.0e-7 (cuDNN 0.711); F(4, 3) stays a tile field.
WINO_TUNED = (2,)
WINO_BASES = 2


def wino_variants(spec, device=H100):
    """The :attr:`Tile.wino` tiles the autotuner times for ``spec`` (:data:`WINO_TUNED`), or an
    empty list where the form does not apply."""
    from . import wino

    out = []
    for m in WINO_TUNED:
        if isinstance(wino.fits(spec, m), str):
            continue
        spec2 = wino.wino_spec(spec, m)[0]
        plain = [t for t in rank(spec2, count=TUNED_PRODUCT, device=device)
                 if not (t.lean or t.vread or t.ptxas) and t.split == 1][:WINO_BASES]
        out += [w for w in _product_forms(spec2, plain, device, wino=m) if w not in out]
    return out


#: Candidates ranked for a rewritten form's product (:func:`wino_variants` and
#: :func:`flat_variants` take their plain tiles from them).
TUNED_PRODUCT = 12


def _product_forms(spec2, plain, device, **mark):
    """The ``plain`` tiles of a rewritten form's product ``spec2`` and the forms the second round
    gives each (``lean``, ``vread``, ptxas ``-O1``), every one with the form's ``mark`` fields
    (``wino=m``, ``flat=True``), without repeats."""
    forms = LEAN_VARIANTS + _ptxas_forms()
    out = []
    for t in plain:
        for v in [t] + [v for _, v in _lean_variants(spec2, [(0, t)], device, forms)]:
            w = _replace(v, **mark)
            if w not in out:
                out.append(w)
    return out


#: SIMT sums: with the third round the autotuner also times the product form of a convolution
#: of a 1 x 1 window (:attr:`Tile.flat`, :mod:`merit.gpu.flat`; a strided or padded one with its
#: image gathered in the launch): the cost model's best ``FLAT_BASES`` plain tiles of the
#: product ``(M, C) @ (N, C, Ho Wo)``, each
#: with the forms the second round gives (``lean``, ``vread``, ptxas ``-O1``), and the
#: padded-row form (:attr:`Tile.padrows`) of each plain one where an operand's rows are not a
#: multiple of 4 words.  Timed, not ranked: the model prices the convolution's tiles and the
#: product's on footprints of different shapes, and which runs faster is the question.
FLAT_TUNED = True
FLAT_BASES = 3


def flat_variants(spec, device=H100):
    """The :attr:`Tile.flat` tiles the autotuner times for ``spec`` (:data:`FLAT_TUNED`), or an
    empty list where the form does not apply."""
    from . import flat

    if not FLAT_TUNED or isinstance(flat.fits(spec), str):
        return []
    spec2 = flat.flat_spec(spec)[0]
    plain = [t for t in rank(spec2, count=TUNED_PRODUCT, device=device)
             if not (t.lean or t.vread or t.ptxas or t.padrows)][:FLAT_BASES]
    out = _product_forms(spec2, plain, device, flat=True)
    if PAD_TUNED and codegen.padded_layout(spec2) is not None:
        for t in plain:
            v = _replace(complete(spec2, _replace(t, padrows=True, pads=(), vector=()), device),
                         flat=True)
            if v not in out and _smem_bytes(codegen.pad_spec(spec2, v), v) <= device.smem_block:
                out.append(v)
    return out


def _diverse(ranked, count):
    """The ``count`` first of ``ranked``, at most two per register tile and split (tensor-core
    tiles: per box, warps and chunk), so that the autotuner times different shapes rather than
    variants of one (sums and tensor-core tiles, whose lists hold such variants)."""
    out, per = [], {}
    for cost, t in ranked:
        key = (t.regs, t.split, t.chunk if t.mma else 0, t.warps, t.frags, t.ldsm, t.wgmma,
               t.cluster)
        if per.get(key, 0) < 2:
            out.append((cost, t))
            per[key] = per.get(key, 0) + 1
    rest = [ct for ct in ranked if ct not in out]
    return (out + rest)[:count]


def _deeper(spec, ranked, count, device):
    """Give the best pipelined tensor-core tile deeper copy pipelines where shared memory allows
    (the cost model does not see copy latency; the autotuner times them).  SIMT tiles keep two
    buffers: a third one measured slower on every GEMM and convolution tried (H100)."""
    if spec.precision == "fp32":
        return ranked
    out, seen = [], set()
    for i, (cost, t) in enumerate(ranked):
        out.append((cost, t))
        if i >= 1 or not t.double:
            continue
        cap = device.smem_block - 1024
        for stages in (3, 4):
            deep = _replace(t, stages=stages)
            if _smem_bytes(spec, deep) <= cap and deep not in seen:
                out.append((cost, deep))
                seen.add(deep)
    return out[:count]


#: SIMT sums: the best tiles of the model that also get their ``lean`` and ``lean`` + ``vread``
#: variants timed by the autotuner (the model does not tell them apart from the plain tile).
VARIANTS_OF = 3
LEAN_VARIANTS = ({"lean": True}, {"lean": True, "vread": True})

#: SIMT sums: the autotuner also times the ``PTXAS_VARIANTS`` of those tiles (the last one for
#: the ``"sm"`` model's extras and the grid-filling tiles too): compiled by ptxas at ``-O1``
#: (:attr:`Tile.ptxas`), and so with the written-out steps' products in a snake order
#: (:attr:`Tile.forder`), which ptxas then keeps.  On the H100 the GEMM 4096^3's 128 x 128 tile
#: of 8 x 8 sums ran 3.23 -> 2.92 ms (its SASS: FFMAs whose two operands not taken from the
#: reuse cache share a register bank, 0.33 -> 0.15 per FFMA), a k3 convolution 0.138 -> 0.133
#: ms; AlexNet CONV1's tile lost (0.279 -> 0.30), so the autotuner times them beside the others
#: (the model cannot tell them apart).
PTXAS_TUNED = True
PTXAS_VARIANTS = ({"lean": True, "ptxas": 1},
                  {"lean": True, "vread": True, "forder": 1, "ptxas": 1})

#: SIMT sums, with :data:`PTXAS_TUNED`: the snake ``-O1`` form with the shared loads of each
#: group of steps written a group ahead (:attr:`Tile.vahead`) is timed too, for the model's best
#: ``VARIANTS_OF`` tiles and in the second round (:func:`timed_variants`).  At ``-O1`` ptxas
#: keeps that order, so the loads are in flight over the previous group's products: VGG conv3_1
#: (H100) ran its list's best-ranked tiles (255 registers, one block a SM) 0.886 -> 0.841 ms
#: and 0.873 -> 0.848 ms with it (the list's best form 0.869), 0.896 -> 0.884 another; the
#: sweep's three fastest tiles (125-233 registers, not in the list) did not gain (0.810 -> 0.813,
#: 0.858 -> 0.861, 0.842 -> 0.868), nor did the GEMM 4096^3 (2.914 against 2.919 ms), so the
#: autotuner times it beside the others.
VAHEAD_TUNED = True
VAHEAD_VARIANT = {"lean": True, "vread": True, "forder": 1, "ptxas": 1, "vahead": True}


def _ptxas_forms():
    """The ``-O1`` forms the autotuner times (:data:`PTXAS_VARIANTS`, :data:`VAHEAD_VARIANT`)."""
    if not PTXAS_TUNED:
        return ()
    return PTXAS_VARIANTS + ((VAHEAD_VARIANT,) if VAHEAD_TUNED else ())


#: SIMT sums: the autotuner also times, for each of those tiles (and the ``"sm"`` model's
#: extras) whose register tile is 64 sums on two indices, the ``PTXAS_VARIANTS`` snake form with
#: the register tile doubled along its first index (128 sums a thread, the shape of cuBLAS's
#: SGEMM threads; the candidates stop at 64, which at ptxas's default level gained 1 % at best):
#: on the H100 the GEMM 4096^3's 8 x 8 tile at -O1 in the snake order ran 2.916 ms, its 16 x 8
#: form 2.820 (cuBLAS 2.661-2.687).  The block may then take more than ``SMEM_CAP`` (one block
#: a SM: the registers allow no second).
WIDE_TUNED = True


def _wide_variants(spec, ranked, device):
    """The doubled register tiles of ``ranked`` (see :data:`WIDE_TUNED`), completed, that fit."""
    out, seen = [], {t for _, t in ranked}
    for cost, t in ranked:
        if t.mma or not any(t.shared) or t.nregs != 64 or sum(r > 1 for r in t.regs) != 2:
            continue
        j = next(j for j, r in enumerate(t.regs) if r > 1)
        regs = tuple(2 * r if i == j else r for i, r in enumerate(t.regs))
        w = _replace(t, regs=regs, pads=(), **PTXAS_VARIANTS[-1])
        if _waste(spec, w) > 1.3:
            continue
        w = complete(spec, w, device)
        if w.vread and w not in seen and _smem_bytes(spec, w) <= device.smem_block:
            seen.add(w)
            out.append((cost, w))
    return out


def _lean_variants(spec, ranked, device, variants=LEAN_VARIANTS):
    """``lean`` and ``lean`` + ``vread`` copies of the tiles ``ranked`` (H100, fp32:
    GEMM 4096^3 3.61 -> 3.23 ms with both, VGG conv3_1 1.00 -> 0.92 ms with ``lean``; AlexNet CONV1
    and a ragged GEMM ran slower with ``lean``, a 1x1 convolution with ``vread``: the autotuner
    times all three)."""
    seen = {t for _, t in ranked}
    out = []
    for cost, t in ranked:
        if t.mma or not any(t.shared):
            continue
        for fields in variants:
            v = complete(spec, _replace(t, **fields), device)
            if v not in seen and (v.vread or "vread" not in fields) and \
                    (v.forder or "forder" not in fields) and (v.vahead or "vahead" not in fields):
                seen.add(v)
                out.append((cost, v))
    return out


def check_tile(spec, tile, device=H100):
    """Validate a caller's tile (a Tile or a dict of its fields); return it completed."""
    if isinstance(tile, dict):
        unknown = set(tile) - set(Tile.__dataclass_fields__)
        if unknown:
            raise TypeError(f"tile has unknown fields {sorted(unknown)}; expected some of "
                            f"{list(Tile.__dataclass_fields__)}")
        fields = dict(tile)
        P = spec.np
        fields.setdefault("regs", (1,) * P)
        if fields.get("mma"):
            fields.setdefault("threads", (1,) * P)
        if "threads" not in fields:
            raise TypeError("tile must give 'threads' (one count per parallel index)")
        tile = Tile(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
    if not isinstance(tile, Tile):
        raise TypeError(f"tile must be a merit.gpu.Tile or a dict, not {tile!r}")
    if tile.wino:   # the fields below are the batched product's tile
        if not isinstance(tile.wino, int) or isinstance(tile.wino, bool) or tile.mma \
                or tile.gemv or tile.padrows:
            raise ValueError(f"tile.wino {tile.wino!r}: the Winograd form (m of F(m, r)) is "
                             f"for SIMT tiles without gemv or padrows")
        spec = codegen.wino_spec(spec, tile)
    if tile.flat:   # likewise the matrix product's tile
        if tile.flat is not True or tile.mma or tile.gemv or tile.wino:
            raise ValueError(f"tile.flat {tile.flat!r}: the product form of a 1 x 1 convolution "
                             f"is a flag for SIMT tiles without gemv or wino")
        spec = codegen.flat_spec(spec, tile)
    P = spec.np
    for what in ("threads", "regs"):
        v = getattr(tile, what)
        if len(v) != P:
            raise ValueError(f"tile.{what} must have one entry per parallel index ({P}), "
                             f"not {len(v)}")
        for j, n in enumerate(v):
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"tile.{what}[{j}] must be a positive integer, not {n!r}")
    want = "" if spec.precision == "fp32" else spec.precision
    if tile.mma != want:
        raise ValueError(f"tile.mma is {tile.mma!r} but the problem is specialized for precision "
                         f"{spec.precision!r} (expected tile.mma={want!r})")
    if tile.mma:
        if mma.roles(spec) is None:
            raise ValueError(f"problem {spec.name!r} is not a dot product the tensor cores run")
        if len(tile.warps) != 2 or len(tile.frags) != 2 or min(tile.warps + tile.frags) < 1:
            raise ValueError(f"a tensor-core tile needs warps=(WM, WN) and frags=(FM, FN), "
                             f"not warps={tile.warps!r}, frags={tile.frags!r}")
        r = ldsm.tile_roles(spec, tile)   # (exchanged for some tiles taking A from registers)
        rows = math.prod(tile.regs[j] for j in r.rows)
        cols = math.prod(tile.regs[j] for j in r.cols)
        others = [j for j in range(P) if j not in r.rows + r.cols and tile.regs[j] != 1]
        if (rows != 16 * tile.warps[0] * tile.frags[0] or cols != 8 * tile.warps[1]
                * tile.frags[1] or others or any(n != 1 for n in tile.threads)):
            raise ValueError(f"tensor-core tile box {tile.regs} must hold 16*WM*FM = "
                             f"{16 * tile.warps[0] * tile.frags[0]} rows over indices {r.rows}, "
                             f"8*WN*FN = {8 * tile.warps[1] * tile.frags[1]} columns over "
                             f"{r.cols} and 1 elsewhere, with threads all 1")
    if tile.ldsm:
        from .mma import KSTEP

        if not tile.mma:
            raise ValueError("tile.ldsm stages tensor-core operands: it needs tile.mma")
        if not isinstance(tile.chunk, int) or tile.chunk % max(KSTEP[tile.mma], 8) \
                or tile.chunk * ldsm.ESIZE[tile.mma] < 32:
            raise ValueError(f"tile.chunk {tile.chunk!r} (k per staged tile) must be a multiple "
                             f"of {max(KSTEP[tile.mma], 8)} and span at least 32 bytes "
                             f"({32 // ldsm.ESIZE[tile.mma]} elements) for {tile.mma}")
    if tile.half:
        why = ldsm.half_fits(spec, tile) if tile.mma else (
            "tile.half reads FP16 / BF16 operand arrays into the staged kernel: it needs "
            "tile.ldsm and tile.mma 'fp16' or 'bf16'")
        if why:
            raise ValueError(why)
    if tile.cluster != 1 and not tile.wgmma and not tile.gemv:
        raise ValueError(f"tile.cluster {tile.cluster!r}: clusters are for wgmma tiles only")
    if tile.place != 1 and not tile.wgmma:
        raise ValueError(f"tile.place {tile.place!r}: clustered placement is for persistent "
                         f"wgmma tiles only")
    if tile.wgmma:
        why = ldsm.wgmma_fits(spec, tile) if tile.mma else "wgmma needs tile.mma and tile.ldsm"
        if why:
            raise ValueError(why)
    if tile.gemv:
        why = gemv.fits(spec, tile)
        if why:
            raise ValueError(why)
    if tile.nthreads > 1024:
        raise ValueError(f"tile uses {tile.nthreads} threads per block; the limit is 1024")
    if tile.nregs > 256 and not tile.mma:
        raise ValueError(f"tile gives each thread {tile.nregs} outputs; the limit is 256")
    if not isinstance(tile.chunk, int) or tile.chunk < 1:
        raise ValueError(f"tile.chunk must be a positive integer, not {tile.chunk!r}")
    if not isinstance(tile.stages, int) or not 2 <= tile.stages <= 4:
        raise ValueError(f"tile.stages must be 2, 3 or 4 (buffers of the copy pipeline), "
                         f"not {tile.stages!r}")
    if not isinstance(tile.minblocks, int) or tile.minblocks < 1 or (
            tile.mma and not tile.wgmma and tile.minblocks > 1):
        raise ValueError(f"tile.minblocks must be a positive integer (1 for tensor-core tiles "
                         f"other than wgmma), not {tile.minblocks!r}")
    if not isinstance(tile.split, int) or tile.split < 1:
        raise ValueError(f"tile.split must be a positive integer, not {tile.split!r}")
    if tile.split > 1:
        if tile.mma or not splittable(spec):
            raise ValueError(f"tile.split={tile.split}: split-K needs a SIMT tile of a sum "
                             f"(Dot or Sum into 'acc', PostLoop 'out0 = acc;')")
        ntiles = -(-spec.ashape[0] // min(tile.chunk, spec.ashape[0]))
        per = -(-ntiles // tile.split)
        if -(-ntiles // per) != tile.split:
            raise ValueError(f"tile.split={tile.split} leaves a block without accumulation "
                             f"tiles ({ntiles} tiles of chunk {tile.chunk})")
    if tile.shared:
        if len(tile.shared) != len(spec.inputs):
            raise ValueError(f"tile.shared must have one entry per input ({len(spec.inputs)}), "
                             f"not {len(tile.shared)}")
        for k, s in enumerate(tile.shared):
            if s and spec.inputs[k].stage != "loop":
                raise ValueError(f"tile.shared[{k}]: input {k} is read in the "
                                 f"{spec.inputs[k].stage} stage; only loop inputs can be shared")
    if tile.ragged and (tile.ragged not in (1, 2) or isinstance(tile.ragged, bool)
                        or not tile.padrows):
        raise ValueError(f"tile.ragged {tile.ragged!r}: 1 or 2, the padded form (padrows) "
                         f"reading the unpadded inputs, for padrows tiles only")
    if tile.sector and (tile.sector not in (8, 16, 32) or isinstance(tile.sector, bool)
                        or tile.mma or tile.gemv or tile.ragged):
        raise ValueError(f"tile.sector {tile.sector!r}: 0, or 8, 16 or 32 (the words a "
                         f"footprint's rows start at a multiple of), for SIMT tiles without "
                         f"gemv or ragged")
    full = complete(spec, tile, device)
    if full.ragged:   # its inputs and what a thread holds, or a ValueError
        codegen.ragged_staged(codegen.pad_spec(spec, full), full,
                              codegen.ragged_inputs(spec, full))
    need = _smem_bytes(spec, full)
    if need > device.smem_block:
        raise ValueError(f"tile needs {need} bytes of shared memory; the device allows "
                         f"{device.smem_block} per block")
    return full
