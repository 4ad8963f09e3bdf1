"""The streaming form of sums that reuse their matrix operand too little to tile it (``Tile.gemv``).

A sum ``acc += in0 * in1`` whose output has one large parallel index ``j`` along which one
operand (the *matrix*) walks memory with unit stride, and whose other parallel indices span at
most :data:`ROWS` values (the *rows*: every matrix word is used that many times), is a
matrix-vector product: its whole cost is reading the matrix once.  The tiled SIMT kernel reads it
4 bytes at a time (rows of an odd number of words defeat its 16-byte copies) and stages the
vector through shared memory; this form reads it in aligned 16-byte pieces instead.

Each matrix row (one value of the accumulation index ``a``) starts at word ``base + a * L``; a
thread reads, per row, the aligned 4-word piece ``q`` counted from the aligned word at or below
the row's start, so its 4 words are columns ``4q - s .. 4q - s + 3`` where ``s`` (0..3) is the
row's misalignment.  ``s`` repeats every 4 rows, so in a step of ``gemv`` rows (a multiple of 4,
starting at a multiple of 4) every row's misalignment is a compile-time constant: the thread keeps
7 sums per row of the output (columns ``4q - 3 .. 4q + 3``) and adds each word to the one of its
column.  Words outside the row land in sums of columns outside ``[0, n)``, which are dropped.  A
step issues its ``gemv`` 16-byte loads before their products.  ``kgroups`` groups of a block's
threads take turns over its steps, and ``split`` blocks share the steps of a column block.

Column ``x`` is the sum of slot ``x / 4``'s sum ``x % 4 + 3`` and (``x % 4 > 0``) the next slot's
``x % 4 - 1``: a block of ``C`` columns of threads covers ``C`` slots and gives the columns of its
first ``C - 1`` (neighbouring column blocks overlap by one slot, 1/C more reads), after adding
its groups' sums in shared memory.  The split blocks then add their columns atomically into the
output, which block 0 zeroes first and flags with the launch's own number (an argument every
launch changes; the blocks wait for it before adding: no zeroing launch), or, as clusters
(``Tile.cluster``), the first block of each cluster adds the others' through distributed
shared memory and stores them.
"""

import math
import re

from .tile import Tile

__all__ = ["ROWS", "TUNED", "roles", "source", "candidates", "fits", "tile_for"]

#: At most this many rows (values of the other parallel indices): each matrix word is used that
#: many times, each thread keeps ``7 * rows`` sums.
ROWS = 4


def _coefs(spec, k):
    """``(coef per position of k = (p, a), base word)`` of input ``k``'s linear address, or None
    where some index can leave the source (a boundary the form does not check)."""
    tr = spec.inputs[k].transform
    ext = tuple(spec.pshape) + tuple(spec.ashape)
    shape = tr.source_shape
    pitch = [1] * len(shape)
    for ax in range(len(shape) - 2, -1, -1):
        pitch[ax] = pitch[ax + 1] * shape[ax + 1]
    coef = [0] * len(ext)
    base = 0
    for ax, terms in enumerate(tr.terms):
        lo = hi = tr.offset[ax]
        for pos, s in terms:
            span = (ext[pos] - 1) * s
            lo, hi = lo + min(span, 0), hi + max(span, 0)
            coef[pos] += s * pitch[ax]
        if lo < 0 or hi >= shape[ax]:
            return None
        base += tr.offset[ax] * pitch[ax]
    return coef, base


def roles(spec):
    """The form's view of ``spec``, or None where it does not apply: a dict with ``m`` / ``v``
    (the matrix and vector inputs), ``j`` (the column position), ``a`` (the accumulation
    position), ``n`` / ``K`` (their extents), ``L`` (matrix words per row), ``mbase``,
    ``vcoef`` / ``vbase`` (the vector's address), ``rows`` (per row of the output: the vector's
    and the output's word offsets) and ``ocol`` (output words per column)."""
    from .tiling import splittable

    if (spec.precision != "fp32" or spec.dtype != "float32" or len(spec.inputs) != 2
            or not splittable(spec) or spec.body["loop"].replace(" ", "") != "acc+=in0*in1;"):
        return None
    P = spec.np
    ext = tuple(spec.pshape) + tuple(spec.ashape)
    acts = [pos for pos in range(P, len(ext)) if ext[pos] > 1]
    if len(acts) != 1:
        return None
    a = acts[0]
    coefs = [_coefs(spec, k) for k in range(2)]
    if None in coefs:
        return None
    for m in range(2):
        mc, mbase = coefs[m]
        vc, vbase = coefs[1 - m]
        cols = [p for p in range(P) if ext[p] > 1 and mc[p] == 1 and vc[p] == 0]
        if not cols or mc[a] <= 0:
            continue
        j = cols[0]
        others = [p for p in range(P) if p != j and ext[p] > 1]
        if any(mc[p] for p in others):
            continue
        nrows = math.prod(ext[p] for p in others)
        if nrows > ROWS:
            return None
        opitch = [math.prod(spec.pshape[p + 1:]) for p in range(P)]
        rows = []
        for idx in range(nrows):
            voff = ooff = 0
            for p in reversed(others):
                i, idx = idx % ext[p], idx // ext[p]
                voff += vc[p] * i
                ooff += opitch[p] * i
            rows.append((voff, ooff))
        return dict(m=m, v=1 - m, j=j, a=a, n=ext[j], K=ext[a], L=mc[a], mbase=mbase,
                    vcoef=vc[a], vbase=vbase, rows=tuple(rows), ocol=opitch[j])
    return None


def slots(r):
    """Aligned 4-word pieces per row a grid covers: columns ``-3 .. n + 2`` at any misalignment."""
    return -(-(r["n"] + 3) // 4)


def fits(spec, tile):
    """Why ``tile`` (with ``gemv``) cannot run ``spec``, or "" when it can."""
    r = roles(spec)
    if r is None:
        return ("tile.gemv streams a matrix read with unit stride along one output index, "
                f"summed over one accumulation index, with at most {ROWS} other outputs per "
                "column: this problem is not one")
    if tile.gemv % 4 or tile.gemv < 4 or tile.gemv > 16:
        return f"tile.gemv must be 4, 8, 12 or 16 (matrix rows per step), not {tile.gemv!r}"
    T = tile.threads[r["j"]]
    G = tile.kgroups
    if tile.nthreads != T or any(x != 1 for x in tile.regs) or not isinstance(G, int) \
            or G < 1 or T % (32 * G):
        return ("a tile.gemv tile has threads along the column index only, a multiple of 32 "
                "per group (tile.kgroups), and regs all 1")
    if 4 * G * len(r["rows"]) * 7 * (T // G) > 48 * 1024:
        return "tile.kgroups: the groups' sums exceed 48 KB of shared memory"
    if tile.cluster != 1 and not (tile.cluster == tile.split and 2 <= tile.split <= 8):
        return (f"tile.cluster {tile.cluster!r}: a tile.gemv tile's split blocks form one "
                f"cluster (cluster == split, 2 to 8) or none (1)")
    if T // G < 2:
        return "a tile.gemv tile needs 2 columns of threads at least"
    if tile.chunk != tile.gemv:
        return f"tile.chunk must equal tile.gemv ({tile.gemv}): a step is an accumulation tile"
    return ""


def geometry(spec, tile):
    """``(blocks along the columns, steps, steps per split block)``."""
    r = roles(spec)
    C = tile.threads[r["j"]] // tile.kgroups
    # clustered: blocks overlap by one slot, each writes the columns of its first C - 1 slots
    # blocks overlap by one slot, each gives the columns of its first C - 1 slots
    nbx = -(-((r["n"] - 1) // 4 + 1) // (C - 1))
    steps = -(-r["K"] // tile.gemv)
    per = -(-steps // tile.split)
    return nbx, steps, per


def source(spec, tile):
    """``(name, code, nblocks, nthreads, smem_bytes)`` of the streaming kernel."""
    from .codegen import kernel_name

    why = fits(spec, tile)
    if why:
        raise ValueError(why)
    r = roles(spec)
    name = kernel_name(spec, tile)
    T, U, G = tile.threads[r["j"]], tile.gemv, tile.kgroups
    C = T // G
    n, K, L = r["n"], r["K"], r["L"]
    nbx, steps, per = geometry(spec, tile)
    R = len(r["rows"])
    big = max(r["mbase"] + (K - 1) * L + n, r["vbase"] + K * abs(r["vcoef"]) + 1) >= 2**31
    ix = "long long" if big else "int"
    mis = [(r["mbase"] + i * L) % 4 for i in range(4)]   # misalignment of row a0 + i (a0 % 4 == 0)
    ins = [f"const float* __restrict__ in{k}" for k in range(2)]
    S = tile.cluster
    pre = []
    if S > 1:
        pre = ["__device__ __forceinline__ float merit_ldc(const float* p, unsigned rank) {",
               "  unsigned a = (unsigned)__cvta_generic_to_shared(p), b;",
               '  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(b) : "r"(a), '
               '"r"(rank));',
               "  float v;",
               '  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(b) : '
               '"memory");',
               "  return v;",
               "}",
               "__device__ __forceinline__ void merit_cluster_sync() {",
               '  asm volatile("barrier.cluster.arrive.release.aligned;\\n"',
               '               "barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");',
               "}"]
    lines = pre + [
             f'extern "C" __global__ void __launch_bounds__({T})'
             + (f" __cluster_dims__({S}, 1, 1)" if S > 1 else ""),
             f"{name}({', '.join(ins)}, float* __restrict__ out0"
             + (", int* __restrict__ flag, const int epoch) {" if S == 1 and tile.split > 1
                else ") {"),
             f"  const float* __restrict__ M = in{r['m']};",
             f"  const float* __restrict__ V = in{r['v']};",
             f"  const int bx = blockIdx.x % {nbx}, kb = blockIdx.x / {nbx};" if S == 1 else
             f"  const int bx = blockIdx.x / {S}, kb = blockIdx.x % {S};",
             f"  const int c = threadIdx.x % {C}, kg = threadIdx.x / {C};" if G > 1 else
             "  const int c = threadIdx.x, kg = 0;",
             f"  const int q = bx * {C - 1} + c;",
             f"  const int g0 = kb * {per}, g1 = min(g0 + {per}, {steps});",
             f"  float acc[{R}][7];",
             f"  #pragma unroll\n  for (int i = 0; i < {R}; ++i)",
             "    #pragma unroll\n    for (int d = 0; d < 7; ++d) acc[i][d] = 0.f;"]
    lines += _epoch_head(spec, T, S == 1 and tile.split > 1)
    # a piece that lies wholly past the row's last column is not read (past the matrix's end
    # on its last row)
    for i in range(4):
        lines.append(f"  const bool ok{i} = 4 * q - {mis[i]} < {n};")
    lines.append(f"  for (int g = g0 + kg; g < g1; g += {G}) {{")
    lines.append(f"    const {ix} a0 = ({ix})g * {U};")
    lines.append(f"    const float* mp = M + ({r['mbase'] - mis[0]} + a0 * {L} + 4 * q);")
    lines.append(f"    const float* vp = V + ({r['vbase']} + a0 * {r['vcoef']});")

    def step(guard):
        body = []
        for i in range(U):
            off = i * L - (mis[i % 4] - mis[0])
            cond = f"ok{i % 4}" + (f" && a0 + {i} < {K}" if guard else "")
            body.append(f"      float4 m{i} = make_float4(0.f, 0.f, 0.f, 0.f);")
            body.append(f"      if ({cond}) m{i} = __ldg(reinterpret_cast<const float4*>"
                        f"(mp + {off}));")
        for i in range(U):
            for ri, (voff, _) in enumerate(r["rows"]):
                vi = f"{voff} + {i * r['vcoef']}"
                cond = f"a0 + {i} < {K} ? __ldg(vp + {vi}) : 0.f" if guard else \
                    f"__ldg(vp + {vi})"
                body.append(f"      const float v{i}_{ri} = {cond};")
        for i in range(U):
            s = mis[i % 4]
            for ri in range(R):
                for e, ch in enumerate("xyzw"):
                    body.append(f"      acc[{ri}][{e - s + 3}] = fmaf(m{i}.{ch}, v{i}_{ri}, "
                                f"acc[{ri}][{e - s + 3}]);")
        return body

    lines.append(f"    if (a0 + {U} <= {K}) {{")
    lines += step(False)
    lines.append("    } else {")
    lines += step(True)
    lines.append("    }")
    lines.append("  }")
    lines += _gather(C, G, R)
    lines += (_cluster_tail if S > 1 else _fixup_tail)(r, C, G, R, n, ix, S if S > 1
                                                       else tile.split)
    code = f"// {spec.name}: {tile!r}\n" + "\n".join(lines) + "\n"
    return name, re.sub(r"\+ -", "- ", code), nbx * tile.split, T, 0


def _gather(C, G, R):
    """The groups' sums added in shared memory (``part[0]``)."""
    out = [f"  __shared__ float part[{G}][{R}][7][{C}];",
           f"  #pragma unroll\n  for (int i = 0; i < {R}; ++i)",
           "    #pragma unroll\n    for (int d = 0; d < 7; ++d) part[kg][i][d][c] = acc[i][d];",
           "  __syncthreads();"]
    if G > 1:
        out += ["  if (kg == 0) {",
                f"    #pragma unroll\n    for (int h = 1; h < {G}; ++h)",
                f"      #pragma unroll\n      for (int i = 0; i < {R}; ++i)",
                "        #pragma unroll\n        for (int d = 0; d < 7; ++d) "
                "acc[i][d] += part[h][i][d][c];",
                f"    #pragma unroll\n    for (int i = 0; i < {R}; ++i)",
                "      #pragma unroll\n      for (int d = 0; d < 7; ++d) "
                "part[0][i][d][c] = acc[i][d];",
                "  }"]
    return out


def _epoch_head(spec, T, epoch):
    """An unclustered split tile's start: block 0 zeroes the output and then sets the flag to
    this launch's number (``epoch``, an argument that every launch changes), which the blocks
    wait for before their atomic adds, at their end."""
    if not epoch:
        return []
    return ["  if (blockIdx.x == 0) {",
            f"    for (int x = threadIdx.x; x < {math.prod(spec.pshape)}; x += {T}) out0[x] = 0.f;",
            "    __threadfence();",
            "    __syncthreads();",
            "    if (threadIdx.x == 0) atomicExch(flag, epoch);",
            "  }"]


def _fixup_tail(r, C, G, R, n, ix, S):
    """An unclustered tile's end: the block's column sums (its first ``C - 1`` slots, as
    :func:`_cluster_tail` takes them) added atomically into the output once the flag says
    block 0 has zeroed it (one block a column block: stored directly)."""
    cols = ["    #pragma unroll\n    for (int e = 0; e < 4; ++e) {",
            "      const float v = part[0][i][e + 3][c] + (e ? part[0][i][e - 1][c + 1] : 0.f);"]
    idx = f"ooff[i] + ({ix})(4 * q + e) * {r['ocol']}"
    out = [f"  const int ooff[{R}] = {{{', '.join(str(o) for _, o in r['rows'])}}};"]
    if S == 1:
        return ["  __syncthreads();"] + out + [
            f"  if (kg == 0 && c < {C - 1}) {{",
            f"    #pragma unroll\n    for (int i = 0; i < {R}; ++i)"] + cols + [
            f"      if (4 * q + e < {n}) out0[{idx}] = v;",
            "    }", "  }", "}"]
    return ["  if (threadIdx.x == 0)",
            "    while (*(volatile int*)flag != epoch) __nanosleep(64);",
            "  __syncthreads();"] + out + [
            f"  if (kg == 0 && c < {C - 1}) {{",
            f"    #pragma unroll\n    for (int i = 0; i < {R}; ++i)"] + cols + [
            f"      if (4 * q + e < {n}) atomicAdd(out0 + {idx}, v);",
            "    }", "  }", "}"]


def _cluster_tail(r, C, G, R, n, ix, S):
    """A clustered tile's end: each block adds its groups' sums in shared memory, the first
    block of the cluster adds the others' through distributed shared memory and stores the
    columns of its first ``C - 1`` slots (column ``x``: slot ``x / 4``'s sum ``x % 4 + 3`` and,
    where ``x % 4 > 0``, the next slot's ``x % 4 - 1``)."""
    out = ["  merit_cluster_sync();",
            f"  if (kb == 0 && kg == 0 && c < {C - 1}) {{",
            "    unsigned rank;",
            '    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));',
            f"    const int ooff[{R}] = {{{', '.join(str(o) for _, o in r['rows'])}}};",
            f"    #pragma unroll\n    for (int i = 0; i < {R}; ++i) {{",
            "      float col[4];",
            "      #pragma unroll\n      for (int e = 0; e < 4; ++e) "
            "col[e] = part[0][i][e + 3][c] + (e ? part[0][i][e - 1][c + 1] : 0.f);",
            f"      #pragma unroll\n      for (unsigned o = 1; o < {S}; ++o) {{",
            "        const unsigned peer = rank + o;",
            "        #pragma unroll\n        for (int e = 0; e < 4; ++e)",
            "          col[e] += merit_ldc(&part[0][i][e + 3][c], peer)"
            " + (e ? merit_ldc(&part[0][i][e - 1][c + 1], peer) : 0.f);",
            "      }",
            "      #pragma unroll\n      for (int e = 0; e < 4; ++e)",
            f"        if (4 * q + e < {n}) out0[ooff[i] + ({ix})(4 * q + e) * {r['ocol']}] "
            "= col[e];",
            "    }",
            "  }",
            "  merit_cluster_sync();",
            "}"]
    return out


def workspace(spec, tile):
    """Whether a launch of ``tile`` takes a flag (one int, zeroed once) and its own number
    after the arrays: unclustered split tiles."""
    return tile.cluster == 1 and tile.split > 1


def tile_for(spec, threads, rows, split, groups=1, cluster=False):
    """The tile of ``threads`` threads a block in ``groups`` groups, ``rows`` matrix rows a
    step, ``split`` blocks along the accumulation index (lowered to the count the steps deal
    out evenly; ``cluster``: those blocks form one cluster, at most 8)."""
    r = roles(spec)
    steps = -(-r["K"] // rows)
    split = max(1, min(split, steps, 8 if cluster else steps))
    split = -(-steps // -(-steps // split))
    th = tuple(threads if p == r["j"] else 1 for p in range(spec.np))
    return Tile(th, (1,) * spec.np, chunk=rows, shared=(False, False), split=split,
                gemv=rows, kgroups=groups, cluster=split if cluster and split > 1 else 1)


#: The candidates the autotuner times: (threads, groups, rows per step, threads per SM, or
#: minus the blocks of a cluster along the accumulation index).  On the H100, 1 x 4065 x 5543
#: (``tests/merit/gpu/gemv_probe.py``): these three 0.0347 / 0.0349 / 0.0356 ms in turns over 9
#: rounds (cuBLAS 0.0348): 8 groups of 128 / 64 / 32 columns of threads, 29 blocks a column
#: block, 1792 threads a SM; timed once, 16 or 32 groups ran 0.0355-0.0359, 4 groups 0.0364,
#: 16 rows a step 0.0352 (8: 0.0352), 896 or 3584 threads a SM 0.0359 / 0.0368, clusters of 4
#: or 8 blocks 0.0364-0.0367: built and tested, not timed by the autotuner.
TUNED = ((1024, 8, 8, 1792), (512, 8, 8, 1792), (256, 8, 8, 1792))


def candidates(spec, device, tuned=TUNED):
    """The form's tiles for ``spec`` (none where it does not apply), one per entry of
    ``tuned`` that fits: the split that gives the grid about that many threads per SM, or
    that many blocks in a cluster (fewer where the steps are fewer)."""
    r = roles(spec)
    if r is None:
        return []
    out = []
    for threads, groups, rows, per_sm in tuned:
        nbx = -(-slots(r) // (threads // groups))
        split = max(1, round(per_sm * device.sms / threads / nbx)) if per_sm > 0 else -per_sm
        t = tile_for(spec, threads, rows, split, groups, cluster=per_sm < 0)
        if t not in out and not fits(spec, t):
            out.append(t)
    return out
