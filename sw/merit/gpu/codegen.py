"""CUDA source for one MERIT problem and one tile: the whole kernel assembled from snippets.

The kernel follows the paper's tiled execution (§IV-A, UMI Procedure 2):

- one thread block per tile of the parallel space (blocks numbered in C order of the tile grid);
- the strategy's functions become member functions of a ``Strat`` struct holding its state; each
  thread owns ``prod(regs)`` of them (register tiling) in an array indexed only by unrolled loops;
- for each accumulation tile, the footprint (Eq. 9) of every shared input is copied into shared
  memory by all threads with ``cp.async`` (zero-fill for ``zero`` boundaries, clamped source
  coordinates for ``clamp``), double-buffered when the tile asks, and the transform is unrolled on
  the fly: an element's shared address is an affine function of (thread, register copy, loop
  indices), so the compiler folds it into immediate offsets;
- other inputs (pre/post inputs, and loop inputs without reuse) are read through the read-only
  cache with the boundary mode applied per element;
- outputs (shape ``pshape``) are stored once, after the outermost PostLoop.
"""

import dataclasses
import itertools
import math
import re

from .tile import extents, geometry

__all__ = ["source", "kernel_name", "vector_reads"]

_CTYPE = {"float32": "float", "int32": "int"}

#: ``Tile.lean`` kernels: footprint copies of at most this many pieces per thread are written as
#: fully unrolled loops of a known trip count (the thread's piece coordinates, row pointers and
#: the boundary checks of axes the accumulation does not walk then stay out of the tile loop).
COPY_UNROLL = 8
#: A probe's generator switch: "" stores the outputs plainly; "cs", "cg" or "wt" stores them
#: with that cache hint (``__stcs`` evict-first streaming, ``__stcg`` L2 only, ``__stwt``
#: write-through).  Sums split across blocks keep their atomics.
STORE_HINT = ""
_LIMITS = {"float32": ("(-__int_as_float(0x7f800000))", "(__int_as_float(0x7f800000))"),
           "int32": ("(-2147483647 - 1)", "2147483647")}

_PRELUDE = r"""
__device__ __forceinline__ void merit_cp_async4(void* dst, const void* src, int bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void merit_cp_async16(void* dst, const void* src, int bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void merit_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void merit_cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
}
"""


def kernel_name(spec, tile):
    """``merit_<problem>_<tile>_<digest>``: the specialization, readable in profiles."""
    base = re.sub(r"[^0-9A-Za-z_]", "_", spec.name)[:40]
    return f"merit_{base}_{tile.label()}_{spec.digest()}"


def _stage_inputs(spec, stage):
    return [k for k, op in enumerate(spec.inputs) if op.stage == stage]


def _global_index_type(shape):
    return "int" if math.prod(shape) < 2**31 else "long long"


def _gstrides(shape):
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def _coord_code(mode, n, var, ok):
    """C statements applying a boundary mode to coordinate ``var`` of an axis of size ``n``."""
    if mode == "zero":
        return (f"{ok} = {ok} && ((unsigned){var} < {n}u); "
                f"{var} = min(max({var}, 0), {n - 1});")
    # clamp, and "error" (proved in range on the host; clamped so partial tiles stay in bounds)
    return f"{var} = min(max({var}, 0), {n - 1});"


def _load_function(spec, k, ctype):
    """``T merit_ld<k>(const T* g, int k0, ...)``: M(A_k) at k, read through the read-only cache."""
    tr = spec.inputs[k].transform
    npos = spec.np + spec.na
    idx = _global_index_type(tr.source_shape)
    args = ", ".join(f"int k{j}" for j in range(npos))
    lines = [f"__device__ __forceinline__ {ctype} merit_ld{k}(const {ctype}* __restrict__ g"
             f"{', ' + args if args else ''}) {{", "    bool ok = true;"]
    strides = _gstrides(tr.source_shape)
    lin = []
    for axis, terms in enumerate(tr.terms):
        expr = " + ".join([str(tr.offset[axis])] + [f"k{pos} * {s}" for pos, s in terms])
        lines.append(f"    int x{axis} = {expr};")
        lines.append("    " + _coord_code(tr.boundary[axis], tr.source_shape[axis],
                                          f"x{axis}", "ok"))
        lin.append(f"({idx})x{axis} * {strides[axis]}")
    lines.append(f"    {idx} at = {' + '.join(lin) if lin else '0'};")
    lines.append(f"    return ok ? __ldg(g + at) : ({ctype})0;")
    lines.append("}")
    return "\n".join(lines)


def _strategy_struct(spec, ctype):
    body = spec.body
    idx_args = [f"int p{j}" for j in range(spec.np)] + [f"int a{i}" for i in range(spec.na)]
    levels = len(spec.levels)

    def params(stage):
        return ", ".join([f"{ctype} in{k}" for k in _stage_inputs(spec, stage)] + idx_args)

    lines = ["struct Strat {", f"    {body.get('state', '')}"]
    lines += [f"    {_CTYPE[spec.out_dtype]} out{o};" for o in range(spec.outputs)]
    for lv in range(levels):
        lines.append(f"    __device__ __forceinline__ void pre{lv}({params('pre')}) "
                     f"{{ {body['pre'][lv]} }}")
    lines.append(f"    __device__ __forceinline__ void loop({params('loop')}) {{ {body['loop']} }}")
    for lv in range(levels):
        lines.append(f"    __device__ __forceinline__ void post{lv}({params('post')}) "
                     f"{{ {body['post'][lv]} }}")
    lines.append("};")
    return "\n".join(lines)


class _Writer:
    def __init__(self):
        self.lines = []
        self.depth = 1

    def __call__(self, text=""):
        for line in text.split("\n"):
            self.lines.append("    " * self.depth + line if line else "")

    def open(self, text):
        self(text + " {")
        self.depth += 1

    def close(self, text="}"):
        self.depth -= 1
        self(text)


def header(spec, tile, name, ctype, dtype, what=""):
    """The opening lines of a kernel's source: the comments (``what`` says how it runs), the
    element type ``ctype`` with the limits of ``dtype``, the strategy's parameters, the prelude."""
    note = f"  {what}" if what else ""
    out = [f"// MERIT kernel {name}", f"// problem: {spec.name}  p={spec.pshape}  a={spec.ashape}"
           f"  levels={spec.levels}{note}", f"// tile: {tile}", f"typedef {ctype} T;",
           f"#define T_LOWEST {_LIMITS[dtype][0]}",
           f"#define T_HIGHEST {_LIMITS[dtype][1]}",
           f"#define A_SIZE {math.prod(spec.ashape)}"]
    for pname, value in spec.params:
        cty = "int" if isinstance(value, int) else "float"
        lit = repr(value) if cty == "int" else f"{float(value)!r}f"
        out.append(f"constexpr {cty} {pname} = {lit};")
    out.append(_PRELUDE)
    return out


#: Marks a specialization rewritten by :func:`padded_layout` (its name ends so).
PAD_MARK = "~pad"
_PADDED = {}
#: The padded rows' multiple in words (:func:`padded_layout`): 4, one 16-byte piece.
PAD_WORDS = 4


def padded_layout(spec):
    """The form of a SIMT problem whose loop inputs have their innermost axis zero-padded to a
    multiple of :data:`PAD_WORDS` words (``Tile.padrows``): ``(spec2, moves)``, or None where no
    input needs it.
    An input qualifies where that axis is not a multiple of 4 and its boundary there is "zero"
    or "error" (the padding reads as the zero boundary does; under "error" the indices never
    reach it; a clamped axis would clamp to the padding).  ``moves``: per padded input ``(rows,
    C, Cp)``: its copy is the ``(rows, C)`` array as ``(rows, Cp)``, columns ``C .. Cp - 1``
    zero."""
    key = spec.key()
    if key not in _PADDED:
        _PADDED[key] = _padded_layout(spec)
    return _PADDED[key]


def _padded_layout(spec):
    from merit.transform import Index, Transform

    if spec.name.endswith(PAD_MARK) or spec.precision != "fp32":
        return None
    inputs, moves = [], {}
    for k, op in enumerate(spec.inputs):
        tr = op.transform
        shape = tr.source_shape
        if op.stage != "loop" or shape[-1] % 4 == 0 or tr.boundary[-1] == "clamp":
            inputs.append(op)
            continue
        cp = -(-shape[-1] // PAD_WORDS) * PAD_WORDS
        P = spec.np
        p, a = [None] * P, [None] * spec.na
        for ax, terms in enumerate(tr.terms):
            for n, (pos, s) in enumerate(terms):
                idx = Index(ax, s, tr.offset[ax] if n == 0 else 0)
                if pos < P:
                    p[pos] = idx
                else:
                    a[pos - P] = idx
        tr2 = Transform(shape[:-1] + (cp,), p, a, tr.boundary,
                        name=tr.name if tr.named else None)
        inputs.append(dataclasses.replace(op, transform=tr2))
        moves[k] = (math.prod(shape[:-1]), shape[-1], cp)
    if not moves:
        return None
    return dataclasses.replace(spec, name=spec.name + PAD_MARK, inputs=tuple(inputs)), moves


def pad_spec(spec, tile):
    """The specialization a ``Tile.padrows`` tile's kernel runs, ``spec`` itself for other tiles
    or one already rewritten; a ValueError where the form does not apply."""
    if not tile.padrows or spec.name.endswith(PAD_MARK):
        return spec
    got = padded_layout(spec)
    if got is None:
        raise ValueError(f"problem {spec.name!r}: no loop input to pad (Tile.padrows)")
    return got[0]


def ragged_inputs(spec, tile):
    """Per loop input a ``Tile.ragged`` tile reads from its unpadded array (the inputs
    :func:`padded_layout` pads), that array's transform; empty for other tiles.  ``spec`` is the
    problem before padding; a ValueError where the form does not apply."""
    if not tile.ragged:
        return {}
    got = None if spec.name.endswith(PAD_MARK) else padded_layout(spec)
    if got is None:
        raise ValueError(f"problem {spec.name!r}: no loop input with ragged rows (Tile.ragged)")
    return {k: spec.inputs[k].transform for k in got[1]}


#: ``Tile.ragged`` 2: the most 16-byte pieces of one footprint a thread may hold in registers
#: through the tile's steps (4 words each).
RAGGED_STAGE = 8


def ragged_staged(spec, tile, rag):
    """``{input: (pieces per thread, pieces)}`` of the footprints a ``Tile.ragged`` 2 tile holds
    in registers through the tile's steps (:func:`_emit_ragged_stores`): those of its ragged
    inputs ``rag`` (:func:`ragged_inputs`) copied in 16-byte pieces, where its accumulation tiles
    go through a pipeline; empty otherwise.  ``spec``: the problem the kernel runs (padded).  A
    ValueError where a thread would hold more than :data:`RAGGED_STAGE` pieces of one."""
    if tile.ragged != 2 or not spec.na or not tile.double or not any(tile.shared):
        return {}
    if -(-spec.ashape[0] // extents(spec, tile)[spec.np]) < 2:
        return {}
    out = {}
    for k in rag:
        if not tile.shared[k]:
            continue
        g = geometry(spec, tile, k)
        if not g.vector:
            continue
        total = math.prod(g.sides[:-1]) * (g.row // 4)
        per = -(-total // tile.nthreads)
        if per > RAGGED_STAGE:
            raise ValueError(f"tile.ragged 2: input {k}'s footprint is {per} 16-byte pieces a "
                             f"thread, more than {RAGGED_STAGE} held in registers")
        out[k] = (per, total)
    return out


def wino_spec(spec, tile):
    """The specialization a ``Tile.wino`` tile's kernel runs (the batched product of
    :func:`merit.gpu.wino.wino_spec`), ``spec`` itself for other tiles or one already rewritten;
    a ValueError where the form does not apply."""
    from .wino import WINO_MARK
    from .wino import wino_spec as _wino

    if not tile.wino or spec.name.endswith(f"{WINO_MARK}{tile.wino}"):
        return spec
    return _wino(spec, tile.wino)[0]


def flat_spec(spec, tile):
    """The specialization a ``Tile.flat`` tile's kernel runs (the matrix product of
    :func:`merit.gpu.flat.flat_spec`), ``spec`` itself for other tiles or one already rewritten;
    a ValueError where the form does not apply."""
    from .flat import FLAT_MARK
    from .flat import flat_spec as _flat

    if not tile.flat or spec.name.endswith(FLAT_MARK):
        return spec
    return _flat(spec)[0]


def source(spec, tile):
    """CUDA C++ source of the kernel and its launch geometry.

    Returns
    -------
    (name, code, nblocks, nthreads, smem_bytes)
    """
    spec0 = flat_spec(wino_spec(spec, tile), tile)
    spec = pad_spec(spec0, tile)
    rag = ragged_inputs(spec0, tile)
    if tile.mma and tile.ldsm:
        from .ldsm import source as ldsm_source

        return ldsm_source(spec, tile)
    if tile.gemv:
        from .gemv import source as gemv_source

        return gemv_source(spec, tile)
    if tile.mma:
        from .mma import source as mma_source

        return mma_source(spec, tile)
    ctype = _CTYPE[spec.dtype]
    name = kernel_name(spec, tile)
    P, A = spec.np, spec.na
    block = tile.block
    grid = [-(-n // b) for n, b in zip(spec.pshape, block, strict=True)]
    split = tile.split
    nblocks = math.prod(grid) * split
    nt = tile.nthreads
    R = tile.nregs
    ext = extents(spec, tile)
    shared = [k for k in range(len(spec.inputs)) if tile.shared and tile.shared[k]]
    geo = {k: geometry(spec, tile, k) for k in shared}
    chunk0 = ext[P] if A else 1
    nbuf = tile.buffers if A and -(-spec.ashape[0] // chunk0) > 1 else 1
    offs, total = {}, 0
    for k in shared:
        offs[k] = total
        total += -(-geo[k].words * nbuf // 4) * 4
    smem_bytes = total * 4
    order = tile.order or tuple(range(P - 1, -1, -1))
    chunk = ext[P] if A else 1
    ntiles = -(-spec.ashape[0] // chunk) if A else 1
    full_chunks = (not A) or spec.ashape[0] % chunk == 0
    levels = len(spec.levels)
    first = [0]
    for n in spec.levels:
        first.append(first[-1] + n)

    out = header(spec, tile, name, ctype, spec.dtype)
    if rag:   # the ragged copies' 16-byte pieces
        out.append(f"typedef {_VEC[ctype][1]} T4;")
        out.append(_RAGGED_PRELUDE)
    out.append(spec.body.get("defs", ""))
    out.append(_strategy_struct(spec, ctype))
    for k in range(len(spec.inputs)):
        if k not in shared:   # a ragged tile reads its unpadded inputs
            out.append(_load_function(spec0 if k in rag else spec, k, ctype))

    params = [f"const T* __restrict__ g_in{k}" for k in range(len(spec.inputs))]
    params += [f"{_CTYPE[spec.out_dtype]}* __restrict__ g_out{o}" for o in range(spec.outputs)]
    bounds = f"{nt}, {tile.minblocks}" if tile.minblocks > 1 else f"{nt}"
    out.append(f'extern "C" __global__ void __launch_bounds__({bounds}) {name}('
               f'{", ".join(params)}) {{')
    w = _Writer()
    if shared:
        w("extern __shared__ __align__(16) T smem[];")
    w("const int tid = threadIdx.x;")
    if split > 1:
        tps = -(-ntiles // split)
        w(f"const int at0 = (blockIdx.x % {split}) * {tps};")
        w(f"const int at1 = min({ntiles}, at0 + {tps});")
        w(f"int bq = blockIdx.x / {split};")
    else:
        w("int bq = blockIdx.x;")
    for j in range(P - 1, -1, -1):
        w(f"const int pb{j} = (bq % {grid[j]}) * {block[j]}; bq /= {grid[j]};")
    w("int tq = tid;")
    for j in order:
        w(f"const int t{j} = tq % {tile.threads[j]}; tq /= {tile.threads[j]};")
    for j in range(P):
        g = tile.run(j)
        w(f"const int tl{j} = t{j}{f' * {g}' if g > 1 else ''};")

    # register copy r -> per-index offsets (constants once loops are unrolled)
    rdiv = []
    d = 1
    for j in range(P - 1, -1, -1):
        rdiv.insert(0, d)
        d *= tile.regs[j]

    def rl(j):
        return _copy_offset(tile, j, f"((r / {rdiv[j]}) % {tile.regs[j]})")

    def pidx(j):
        return f"(pb{j} + tl{j} + {rl(j)})"

    w(f"Strat s[{R}];")

    # thread part of each shared input's address
    for k in shared:
        tr, g = spec.inputs[k].transform, geo[k]
        parts = [str(sum(g.coef(ax, g.shift[ax]) for ax in range(len(g.sides))))]
        for ax, terms in enumerate(tr.terms):
            for pos, s in terms:
                if pos < P:
                    parts.append(f"tl{pos} * {g.coef(ax, s)}")
        w(f"const int so{k} = {' + '.join(parts)};")

    def aval(i, mode):
        """C expression of accumulation index i: current loop value, first or last value."""
        if mode == "first":
            return "0"
        if mode == "last":
            return str(spec.ashape[i] - 1)
        return "(ab0 + l0)" if i == 0 else f"l{i}"

    def call(fn, stage, amodes):
        args = []
        for k in _stage_inputs(spec, stage):
            kargs = [pidx(j) for j in range(P)] + [aval(i, amodes[i]) for i in range(A)]
            if k in shared:
                args.append(_shared_read(spec, tile, k, geo[k], offs[k], nbuf))
            else:
                args.append(f"merit_ld{k}(g_in{k}{''.join(', ' + a for a in kargs)})")
        args += [pidx(j) for j in range(P)] + [aval(i, amodes[i]) for i in range(A)]
        w("#pragma unroll")
        w(f"for (int r = 0; r < {R}; ++r) s[r].{fn}({', '.join(args)});")

    def modes(level_from, value):
        """amodes: indices of levels >= level_from take ``value``; others the loop value."""
        return ["cur" if i < first[level_from] else value for i in range(A)]

    if A == 0:
        for lv in range(levels):
            call(f"pre{lv}", "pre", [])
        call("loop", "loop", [])
        for lv in range(levels - 1, -1, -1):
            call(f"post{lv}", "post", [])
    else:
        call("pre0", "pre", modes(0, "first"))
        first_at, end_at = ("at0", "at1") if split > 1 else ("0", str(ntiles))
        one_bar = tile.lean and bool(shared) and nbuf > 1
        cu = COPY_UNROLL if tile.lean else 0
        stage = ragged_staged(spec, tile, rag)
        if shared and nbuf > 1:
            _emit_prologue(w, spec, tile, shared, geo, offs, nbuf, nt, chunk, first_at, end_at,
                           cu, rag)
        w("#pragma unroll 1")
        w.open(f"for (int at = {first_at}; at < {end_at}; ++at)")
        w(f"const int ab0 = at * {chunk};")
        if shared:
            _emit_next(w, spec, tile, shared, geo, offs, nbuf, nt, chunk, first_at, end_at,
                       cu, one_bar, rag, stage)
            for k in shared:
                if geo[k].vector and not geo[k].aligned:
                    org = _org_expr(spec, k, geo[k], len(geo[k].sides) - 1, "ab0")
                    w(f"const int sh{k} = ({org}) & {geo[k].align - 1};")
            if not one_bar:
                w("__syncthreads();")
        inner_unrolled = set(range(A - tile.unroll, A)) if tile.unroll else set()
        vread = tile.vread and levels == 1 and bool(inner_unrolled) and all(
            k in shared for k in _stage_inputs(spec, "loop"))

        def nest(lv, whole):
            if vread and whole:
                for i in range(A - tile.unroll):
                    extent = str(chunk) if i == 0 else str(spec.ashape[i])
                    w("#pragma unroll 1")
                    w.open(f"for (int l{i} = 0; l{i} < {extent}; ++l{i})")
                _emit_vector_reads(w, spec, tile, geo, offs, nbuf, chunk, pidx)
                for _ in range(A - tile.unroll):
                    w.close()
                return
            for i in range(first[lv], first[lv + 1]):
                extent = (str(chunk) if whole else f"min({chunk}, {spec.ashape[0]} - ab0)") \
                    if i == 0 else str(spec.ashape[i])
                w("#pragma unroll" if i in inner_unrolled and (i != 0 or whole)
                  else "#pragma unroll 1")
                w.open(f"for (int l{i} = 0; l{i} < {extent}; ++l{i})")
            if lv + 1 < levels:
                call(f"pre{lv + 1}", "pre", modes(lv + 1, "first"))
                nest(lv + 1, whole)
                call(f"post{lv + 1}", "post", modes(lv + 1, "last"))
            else:
                call("loop", "loop", ["cur"] * A)
            for _ in range(first[lv], first[lv + 1]):
                w.close()

        if full_chunks:
            nest(0, True)
        elif 0 in inner_unrolled:
            # whole tiles run the unrolled loops; the last, partial tile a rolled copy
            w.open(f"if (ab0 + {chunk} <= {spec.ashape[0]})")
            nest(0, True)
            w.close("} else {")
            w.depth += 1
            nest(0, False)
            w.close()
        else:
            nest(0, False)
        if stage:   # the staged pieces of tile at + nbuf - 1, into the buffer read last
            _emit_ragged_stores(w, spec, stage, offs, geo, nbuf, nt, first_at, end_at)
        if shared and not one_bar:
            w("__syncthreads();")
        w.close()
        call("post0", "post", modes(0, "last"))

    # stores
    ostr = _gstrides(spec.pshape)
    oidx = _global_index_type(spec.pshape)
    w("#pragma unroll")
    w.open(f"for (int r = 0; r < {R}; ++r)")
    conds = [f"{pidx(j)} < {spec.pshape[j]}" for j in range(P) if spec.pshape[j] % block[j]]
    lin = " + ".join(f"({oidx}){pidx(j)} * {ostr[j]}" for j in range(P)) or "0"
    w(f"const {oidx} at = {lin};")
    if split > 1:   # partial sums of the blocks of one output tile, into zeroed outputs
        stores = " ".join(f"atomicAdd(g_out{o} + at, s[r].out{o});" for o in range(spec.outputs))
    else:
        stores = " ".join(f"__st{STORE_HINT}(g_out{o} + at, s[r].out{o});" if STORE_HINT
                          else f"g_out{o}[at] = s[r].out{o};" for o in range(spec.outputs))
    w(f"if ({' && '.join(conds)}) {{ {stores} }}" if conds else stores)
    w.close()
    out.append("\n".join(w.lines))
    out.append("}")
    return name, "\n".join(out) + "\n", nblocks, nt, smem_bytes


_VEC = {"float": ("float2", "float4"), "int": ("int2", "int4")}


def _read_base(spec, tile, k, g, nbuf):
    """(run-time part of input k's shared address as C terms, the constant part, the power of
    two (<= 4) every run-time part is a multiple of, word coefficient per position of k)."""
    tr = spec.inputs[k].transform
    P, A = spec.np, spec.na
    inner = set(range(A - tile.unroll, A))
    coef = {}
    for ax, terms in enumerate(tr.terms):
        for pos, s in terms:
            coef[pos] = coef.get(pos, 0) + g.coef(ax, s)
    const = sum(g.coef(ax, g.shift[ax]) for ax in range(len(g.sides)))
    known = 1 if g.vector and not g.aligned else 4
    parts = [f"so{k} - {const}"]
    if g.vector and not g.aligned:
        parts.append(f"sh{k}")
    if nbuf > 1:
        parts.append(f"buf * {g.words}")
    for pos, c in sorted(coef.items()):
        if pos < P:
            known = min(known, _pow2(c * tile.run(pos)))
        elif pos - P not in inner:
            known = min(known, _pow2(c))
            parts.append(f"l{pos - P} * {c}")
    return parts, const, known, coef


def _pow2(v, cap=4):
    v = abs(v)
    p = 1
    while p < cap and v % (2 * p) == 0:
        p *= 2
    return p


def vector_reads(spec, tile, geos, nbuf, chunk):
    """The explicit shared reads of a ``vread`` tile's unrolled accumulation steps.

    Returns ``(steps, plan)``: ``steps`` lists the unrolled steps (tuples of the unrolled
    indices' values, C order); ``plan[k]`` maps each word offset input k's reads use (constant
    part of the address) to ``(unit, component)``, where a unit ``(start, width)`` is one load of
    ``width`` words (4, 2 or 1) at constant offset ``start``: aligned groups of 4 (then 2) words
    that are all read become one 16-byte (8-byte) load when the run-time part of the address is
    a multiple of 4 (2) words, as :func:`merit.gpu.tiling.shared_loads` counts them.
    """
    import itertools

    P, A = spec.np, spec.na
    inner = list(range(A - tile.unroll, A))
    exts = [chunk if i == 0 else spec.ashape[i] for i in inner]
    steps = list(itertools.product(*[range(e) for e in exts]))
    plan = {}
    for k in _stage_inputs(spec, "loop"):
        _, const, known, coef = _read_base(spec, tile, k, geos[k], nbuf)
        need = set()
        for r in range(tile.nregs):
            cr = const
            q = r
            for j in range(P - 1, -1, -1):
                c = q % tile.regs[j]
                q //= tile.regs[j]
                cr += tile.copy_offset(j, c) * coef.get(j, 0)
            for st in steps:
                need.add(cr + sum(v * coef.get(P + i, 0) for i, v in zip(inner, st,
                                                                            strict=True)))
        units = {}
        left = set(need)
        for width in (4, 2):
            if known < width:
                continue
            for a in sorted(left):
                lo = a - a % width
                if all(lo + d in left for d in range(width)):
                    for d in range(width):
                        units[lo + d] = ((lo, width), d)
            left -= set(units)
        for a in left:
            units[a] = ((a, 1), 0)
        plan[k] = units
    return steps, plan


def _emit_vector_reads(w, spec, tile, geo, offs, nbuf, chunk, pidx):
    """The unrolled accumulation steps of a ``vread`` tile, written out: per group of 4 steps,
    the loads of the words the group reads first, then its calls of ``loop``."""
    P, A = spec.np, spec.na
    ctype = _CTYPE[spec.dtype]
    inner = list(range(A - tile.unroll, A))
    steps, plan = vector_reads(spec, tile, geo, nbuf, chunk)
    ks = _stage_inputs(spec, "loop")
    info = {}
    for k in ks:
        parts, const, _, coef = _read_base(spec, tile, k, geo[k], nbuf)
        base = f"smem + {offs[k]}" if offs[k] else "smem"
        w(f"const T* __restrict__ vb{k} = {base} + {' + '.join(parts)};")
        info[k] = coef
    copies = []
    for r in range(tile.nregs):
        q, cs = r, [0] * P
        for j in range(P - 1, -1, -1):
            cs[j] = q % tile.regs[j]
            q //= tile.regs[j]
        copies.append(cs)
    loaded = set()
    order = fma_order(tile)

    def group_calls(g0):
        calls = []
        for st in steps[g0:g0 + 4]:
            for r in order:
                cs = copies[r]
                args = []
                for k in ks:
                    coef = info[k]
                    a = sum(tile.copy_offset(j, cs[j]) * coef.get(j, 0) for j in range(P))
                    a += sum(v * coef.get(P + i, 0) for i, v in zip(inner, st, strict=True))
                    args.append((k, a))
                calls.append((r, cs, st, args))
        return calls

    def loads(calls):
        for _r, _cs, _st, args in calls:
            for k, a in args:
                (lo, width), _ = plan[k][a + _const(spec, tile, geo, k)]
                if (k, lo) in loaded:
                    continue
                loaded.add((k, lo))
                name = _unit(k, lo)
                if width == 1:
                    w(f"const T {name} = vb{k}[{lo}];")
                else:
                    vt = _VEC[ctype][width // 4]
                    w(f"const {vt} {name} = *reinterpret_cast<const {vt}*>(vb{k} + {lo});")

    groups = [group_calls(g0) for g0 in range(0, len(steps), 4)]
    if tile.vahead and groups:   # the next group's loads before this group's steps
        loads(groups[0])
    for n, calls in enumerate(groups):
        if not tile.vahead:
            loads(calls)
        elif n + 1 < len(groups):
            loads(groups[n + 1])
        for r, cs, st, args in calls:
            vals = []
            for k, a in args:
                (lo, width), d = plan[k][a + _const(spec, tile, geo, k)]
                vals.append(_unit(k, lo) + (f".{'xyzw'[d]}" if width > 1 else ""))
            idx = [f"(pb{j} + tl{j} + {tile.copy_offset(j, cs[j])})" for j in range(P)]
            lv = dict(zip(inner, st, strict=True))
            for i in range(A):
                if i in lv:
                    idx.append(f"(ab0 + {lv[i]})" if i == 0 else str(lv[i]))
                else:
                    idx.append("(ab0 + l0)" if i == 0 else f"l{i}")
            w(f"s[{r}].loop({', '.join(vals + idx)});")


def fma_order(tile):
    """The order of a ``vread`` tile's register copies within one accumulation step
    (:attr:`Tile.forder`): 0 C order (the last parallel index fastest), 1 a snake (C order with
    the last index reversed on every other value of the others, so that neighbouring steps share
    one operand at each turn), 2 the first parallel index fastest, 3 its snake."""
    regs = tile.regs
    P = len(regs)
    digits = [range(n) for n in regs]
    pos = {c: n for n, c in enumerate(itertools.product(*digits))}
    perm = list(range(P)) if tile.forder in (0, 1) else list(range(P - 1, -1, -1))
    out = []
    for m, c in enumerate(itertools.product(*[digits[j] for j in perm])):
        c = list(c)
        if tile.forder in (1, 3) and (m // regs[perm[-1]]) % 2:
            c[-1] = regs[perm[-1]] - 1 - c[-1]
        full = [0] * P
        for j, v in zip(perm, c, strict=True):
            full[j] = v
        out.append(pos[tuple(full)])
    return out


def _unit(k, lo):
    return f"v{k}_{lo}" if lo >= 0 else f"v{k}_m{-lo}"


def _const(spec, tile, geo, k):
    g = geo[k]
    return sum(g.coef(ax, g.shift[ax]) for ax in range(len(g.sides)))


def _copy_offset(tile, j, c):
    """C expression of :meth:`Tile.copy_offset` for the copy number expression ``c``."""
    g, regs = tile.run(j), tile.regs[j]
    if g == regs:
        return c
    if g == 1:
        return f"{c} * {tile.threads[j]}"
    return f"({c} / {g}) * {tile.threads[j] * g} + {c} % {g}"


def _shared_read(spec, tile, k, g, off, nbuf):
    """C expression reading input k's element for register copy ``r`` from shared memory."""
    tr = spec.inputs[k].transform
    P = spec.np
    rdiv = []
    d = 1
    for j in range(P - 1, -1, -1):
        rdiv.insert(0, d)
        d *= tile.regs[j]
    parts = [f"so{k}"]
    if g.vector and not g.aligned:
        parts.append(f"sh{k}")
    if nbuf > 1:
        parts.append(f"buf * {g.words}")
    for ax, terms in enumerate(tr.terms):
        for pos, s in terms:
            mult = g.coef(ax, s)
            if pos < P:
                if tile.regs[pos] > 1:
                    c = _copy_offset(tile, pos, f"((r / {rdiv[pos]}) % {tile.regs[pos]})")
                    parts.append(f"({c}) * {mult}")
            else:
                parts.append(f"l{pos - P} * {mult}")
    base = f"smem + {off}" if off else "smem"
    return f"({base})[{' + '.join(parts)}]"


def _org_expr(spec, k, g, ax, abase):
    """C expression of the box's low corner on axis ``ax`` for the tile starting at ``abase``."""
    tr = spec.inputs[k].transform
    parts = [str(tr.offset[ax] - g.shift[ax])]
    for pos, s in tr.terms[ax]:
        if pos < spec.np:
            parts.append(f"pb{pos} * {s}")
        elif pos == spec.np:
            parts.append(f"({abase}) * {s}")
    return " + ".join(parts)


def _emit_prologue(w, spec, tile, shared, geo, offs, nbuf, nt, chunk, first, end, unroll=0,
                   rag=None):
    """Start the copies of the first ``nbuf - 1`` accumulation tiles, one commit group each
    (``rag``: see :func:`_emit_load`)."""
    for i in range(nbuf - 1):
        w.open(f"if ({first} + {i} < {end})")
        _emit_load(w, spec, tile, shared, geo, offs, nbuf, nt, f"({first} + {i}) * {chunk}",
                   str(i), unroll, rag)
        w.close()
        w("merit_cp_commit();")


def _emit_next(w, spec, tile, shared, geo, offs, nbuf, nt, chunk, first, end, unroll=0,
               one_barrier=False, rag=None, stage=None):
    """At accumulation tile ``at``: start the copy of tile ``at + nbuf - 1`` into the buffer freed
    by the last tile, wait for tile ``at``'s copies, and name its buffer ``buf`` (an
    ``nbuf``-stage ``cp.async`` pipeline; one buffer: copy and wait).

    ``one_barrier`` (pipelines only): wait for tile ``at``, then the block's barrier, then start
    the copy into the buffer tile ``at - 1`` was read from (every thread has passed the barrier,
    so has finished reading it): the tile loop needs no barrier after its steps.

    ``rag``: see :func:`_emit_load`; ``stage`` (:func:`ragged_staged`): the ragged inputs whose
    pieces are loaded here into registers and stored after the tile's steps
    (:func:`_emit_ragged_stores`)."""
    if nbuf == 1:
        _emit_load(w, spec, tile, shared, geo, offs, nbuf, nt, "ab0", "0", unroll, rag)
        w("merit_cp_commit(); merit_cp_wait<0>();")
        return
    rel = "at" if first == "0" else f"(at - {first})"
    ahead = nbuf - 1
    if one_barrier:
        w(f"merit_cp_wait<{ahead - 1}>();")
        w("__syncthreads();")
    for k, (per, _) in (stage or {}).items():
        w(f"T4 rl{k}[{per}]{f', rh{k}[{per}]' if RAGGED_PAIRS else ''}; int rd{k}[{per}];")
    w.open(f"if (at + {ahead} < {end})")
    _emit_load(w, spec, tile, shared, geo, offs, nbuf, nt, f"ab0 + {ahead * chunk}",
               f"(({rel} + {ahead}) % {nbuf})", unroll, rag, stage)
    w.close()
    if one_barrier:
        w("merit_cp_commit();")
    else:
        w(f"merit_cp_commit(); merit_cp_wait<{ahead}>();")
    w(f"const int buf = {rel} % {nbuf};")


def _emit_load(w, spec, tile, shared, geo, offs, nbuf, nt, abase, bufexpr, unroll=0, rag=None,
               stage=None):
    """Cooperative copy of every shared footprint of the tile starting at a0 = ``abase``
    (``unroll``: see :data:`COPY_UNROLL`).  ``rag`` (:func:`ragged_inputs`): per input of a
    ``Tile.ragged`` tile read from its unpadded array, that array's transform: its footprint,
    laid out as the padded form's, is copied from there (:func:`_emit_ragged_rows` where the
    padded form copies 16-byte pieces, else word by word as the padded form would); ``stage``:
    the inputs whose pieces go to registers only (stored by :func:`_emit_ragged_stores`)."""
    rag = rag or {}
    for k in shared:
        tr, g = rag.get(k, spec.inputs[k].transform), geo[k]
        idx = _global_index_type(tr.source_shape)
        strides = _gstrides(tr.source_shape)
        nax = len(g.sides)
        w.open("")
        for ax in range(nax):
            w(f"const int org{ax} = {_org_expr(spec, k, g, ax, abase)};")
        dst = f"smem + {offs[k]}" + (f" + {bufexpr} * {g.words}" if nbuf > 1 else "")
        w(f"T* dst = {dst};")
        if g.vector and k in rag:
            _emit_ragged_rows(w, tr, g, nt, idx, strides, k, unroll, k in (stage or {}))
        elif g.vector:
            _emit_vector_rows(w, tr, g, nt, idx, strides, k, unroll)
        elif nax and tile.wrows and row_lanes(g, nt):
            _emit_row_lanes(w, tr, g, nt, idx, strides, k, unroll)
        elif nax and g.sides[-1] >= 4:
            _emit_word_quads(w, tr, g, nt, idx, strides, k, unroll)
        else:
            closes = _copy_loop(w, g.elements, nt, unroll, "4")
            w("int q = e; bool ok = true;")
            src = _emit_coords(w, tr, g, idx, strides, nax)
            sad = " + ".join(f"c{ax} * {g.pitches[ax]}" for ax in range(nax)) or "0"
            w(f"merit_cp_async4(dst + {sad}, g_in{k} + ({src}), ok ? 4 : 0);")
            for _ in range(closes):
                w.close()
        w.close()


def _emit_coords(w, tr, g, idx, strides, axes):
    """Decode the running index ``q`` into staged coordinates ``c0 .. c{axes-1}`` (``c0``
    outermost) and their source coordinates ``x0 ..`` with the boundary checks into ``ok``;
    return the C expression of the source offset of ``x0 .. x{axes-1}``."""
    for ax in range(axes - 1, -1, -1):
        if ax > 0:
            w(f"const int c{ax} = q % {g.sides[ax]}; q /= {g.sides[ax]};")
        else:
            w("const int c0 = q;")
    for ax in range(axes):
        w(f"int x{ax} = org{ax} + {_stepped(g, ax, f'c{ax}')};")
        w(_coord_code(tr.boundary[ax], tr.source_shape[ax], f"x{ax}", "ok"))
    return " + ".join(f"({idx})x{ax} * {strides[ax]}" for ax in range(axes)) or "0"


def _stepped(g, ax, c):
    """C expression of the source offset of staged element ``c`` along axis ``ax`` (``c`` times
    the axis's step, see :class:`merit.gpu.tile.Geometry`)."""
    d = g.step[ax] if g.step else 1
    return c if d == 1 else f"({c}) * {d}"


def row_lanes(g, nt):
    """Box ``g`` can be copied by :func:`_emit_row_lanes` with ``nt`` threads (a ``Tile.wrows``
    tile): words, rows of at least 4 words whose length divides ``nt``."""
    return not g.vector and g.sides[-1] >= 4 and nt % g.sides[-1] == 0


def _emit_row_lanes(w, tr, g, nt, idx, strides, k, unroll=0):
    """Copy the box word by word, one column per thread (``Tile.wrows``): thread ``tid`` copies
    column ``tid % side`` of rows ``tid / side``, ``+ nt / side``, ...; the column's coordinate
    and boundary check are computed once per copy, a row's per word (a warp's words lie in
    ``32 / side`` rows, or one)."""
    nax = len(g.sides)
    inner = nax - 1
    side = g.sides[-1]
    rows = math.prod(g.sides[:-1])
    step = nt // side
    per = -(-rows // step)
    w(f"const int cq = tid % {side};")
    w(f"bool okc = true; int xi = org{inner} + {_stepped(g, inner, 'cq')};")
    w(_coord_code(tr.boundary[inner], tr.source_shape[inner], "xi", "okc"))
    closes = 1
    if unroll and per <= 4 * unroll:
        w("#pragma unroll")
        w.open(f"for (int j = 0; j < {per}; ++j)")
        w(f"int q = tid / {side} + j * {step};")
        if rows % step:
            w.open(f"if (q < {rows})")
            closes = 2
    else:
        w("#pragma unroll 4")
        w.open(f"for (int q0 = tid / {side}; q0 < {rows}; q0 += {step})")
        w("int q = q0;")
    w("bool ok = okc;")
    rowp = _emit_coords(w, tr, g, idx, strides, nax - 1)
    sad = " + ".join([f"c{ax} * {g.pitches[ax]}" for ax in range(nax - 1)] + ["cq"])
    w(f"merit_cp_async4(dst + {sad}, g_in{k} + ({rowp}) + xi, ok ? 4 : 0);")
    for _ in range(closes):
        w.close()


def _emit_word_quads(w, tr, g, nt, idx, strides, k, unroll=0):
    """Copy the box word by word, four neighbours of a row per thread and step: the row's
    coordinates and boundary checks are computed once per four words."""
    nax = len(g.sides)
    inner = nax - 1
    side = g.sides[-1]
    nq = -(-side // 4)
    rows = math.prod(g.sides[:-1])
    closes = _copy_loop(w, rows * nq, nt, unroll)
    w(f"int q = e; bool ok = true; const int v = q % {nq}; q /= {nq};")
    rowp = _emit_coords(w, tr, g, idx, strides, nax - 1)
    sad = " + ".join([f"c{ax} * {g.pitches[ax]}" for ax in range(nax - 1)] + ["4 * v"])
    w(f"const T* src = g_in{k} + ({rowp});")
    w(f"T* d = dst + {sad};")
    w("#pragma unroll")
    w.open("for (int i = 0; i < 4; ++i)")
    w.open(f"if (4 * v + i < {side})" if side % 4 else "")
    w(f"bool oki = ok; int xi = org{inner} + {_stepped(g, inner, '4 * v + i')};")
    w(_coord_code(tr.boundary[inner], tr.source_shape[inner], "xi", "oki"))
    w("merit_cp_async4(d + i, src + xi, oki ? 4 : 0);")
    w.close()
    w.close()
    for _ in range(closes):
        w.close()


def _copy_loop(w, total, nt, unroll, rolled="2"):
    """Open the loop giving thread ``tid`` its pieces ``e`` of ``total``; returns how many blocks
    to close.  ``unroll``: fully unrolled over the pieces per thread (a known count), a guard
    only when ``nt`` does not divide ``total``; else a rolled loop unrolled ``rolled`` times."""
    per = -(-total // nt)
    if unroll and per <= unroll:
        w("#pragma unroll")
        w.open(f"for (int i = 0; i < {per}; ++i)")
        w(f"const int e = tid + i * {nt};")
        if total % nt:
            w.open(f"if (e < {total})")
            return 2
        return 1
    w(f"#pragma unroll {rolled}")
    w.open(f"for (int e = tid; e < {total}; e += {nt})")
    return 1


def _emit_vector_rows(w, tr, g, nt, idx, strides, k, unroll=0):
    """Copy the box row by row in aligned 16-byte pieces (see :class:`Geometry`)."""
    nax = len(g.sides)
    inner = nax - 1
    n_in = tr.source_shape[inner]
    nv = g.row // 4
    rows = math.prod(g.sides[:-1])
    w(f"const int a0c = org{inner} & ~{g.align - 1};")
    closes = _copy_loop(w, rows * nv, nt, unroll)
    w(f"int q = e; bool ok = true; const int v = q % {nv}; q /= {nv};")
    rowp = _emit_coords(w, tr, g, idx, strides, nax - 1)
    sad = " + ".join([f"c{ax} * {g.pitches[ax]}" for ax in range(nax - 1)] + ["4 * v"])
    w(f"const T* src = g_in{k} + ({rowp});")
    w(f"T* d = dst + {sad};")
    w("const int xi = a0c + 4 * v;")
    w(f"if ((unsigned)xi < {n_in}u) merit_cp_async16(d, src + xi, ok ? 16 : 0);")
    if tr.boundary[inner] == "zero":
        w("else merit_cp_async16(d, src, 0);")
    else:
        w.open("else")
        w(f"const T* e = src + (xi < 0 ? 0 : {n_in - 1});")
        w("merit_cp_async4(d, e, ok ? 4 : 0); merit_cp_async4(d + 1, e, ok ? 4 : 0);")
        w("merit_cp_async4(d + 2, e, ok ? 4 : 0); merit_cp_async4(d + 3, e, ok ? 4 : 0);")
        w.close()
    for _ in range(closes):
        w.close()


#: The ragged copies' device functions (``Tile.ragged``; ``T4`` the element type's 16-byte
#: vector): words ``s .. s + 3`` of the 8 words ``a, b``, and the words of ``p`` whose bit of
#: ``m`` is clear zeroed.
_RAGGED_PRELUDE = r"""
__device__ __forceinline__ T4 merit_row4(const T4& a, const T4& b, int s) {
    const bool s1 = s == 1, s2 = s == 2, s3 = s == 3;   // selects, no branches
    T4 p;
    p.x = s3 ? a.w : s2 ? a.z : s1 ? a.y : a.x;
    p.y = s3 ? b.x : s2 ? a.w : s1 ? a.z : a.y;
    p.z = s3 ? b.y : s2 ? b.x : s1 ? a.w : a.z;
    p.w = s3 ? b.z : s2 ? b.y : s1 ? b.x : a.w;
    return p;
}
__device__ __forceinline__ T4 merit_mask4(const T4& p, int m) {
    return T4{(m & 1) ? p.x : (T)0, (m & 2) ? p.y : (T)0, (m & 4) ? p.z : (T)0,
              (m & 8) ? p.w : (T)0};
}
"""


#: ``Tile.ragged`` copies: a piece's words taken from the two aligned 16-byte pieces around them
#: (True), or read one by one, each with its own bound check (False).  A generator switch, False
#: since it ran faster (H200, 2026-11-28, ``tests/merit/gpu/nocopy_probe.py``, in turns): the
#: 1x1 conv N4 C181 M229 61x77's product tile 0.0710 ms word by word, 0.0823 in pairs (the
#: padded form 0.0723), AlexNet CONV1's 0.319 / 0.305 (padded 0.267), the ragged GEMM's 0.449 /
#: 0.450 (padded 0.367).
RAGGED_PAIRS = False


def _emit_ragged_rows(w, tr, g, nt, idx, strides, k, unroll=0, staged=False):
    """Copy the box row by row as the padded form's aligned 16-byte pieces (see
    :class:`Geometry`) from the unpadded array (``Tile.ragged``), whose rows start at any word:
    a piece's 4 words are words ``s .. s + 3`` of the two aligned 16-byte pieces of the array
    around them (``s`` the row's misalignment; the second read only where ``s`` is not 0), those
    outside the row zeroed, as the padded copy's padding reads (:func:`padded_layout`: the inner
    boundary is "zero" or "error"), and written by one 16-byte shared store.  ``staged``: the
    two pieces into the registers ``rl<k>`` / ``rh<k>``, the shared offset with ``s`` and the
    words' mask into ``rd<k>`` (:func:`_emit_ragged_stores` writes them).  The array must start
    on 16 bytes (:func:`merit.gpu.runtime.launcher` checks); an aligned piece read around a
    row's last word ends at most 12 bytes past the array (in its allocation's last 16 bytes).
    Without :data:`RAGGED_PAIRS`, the 4 words are read one by one instead."""
    nax = len(g.sides)
    inner = nax - 1
    n_in = tr.source_shape[inner]
    nv = g.row // 4
    total = math.prod(g.sides[:-1]) * nv
    w(f"const int a0c = org{inner} & ~{g.align - 1};")
    if staged:
        per = -(-total // nt)
        w("#pragma unroll")
        w.open(f"for (int i = 0; i < {per}; ++i)")
        w(f"const int e = tid + i * {nt};")
        closes = 1
        if total % nt:
            w(f"rd{k}[i] = -1;")
            w.open(f"if (e < {total})")
            closes = 2
    else:
        closes = _copy_loop(w, total, nt, unroll)
    w(f"int q = e; bool ok = true; const int v = q % {nv}; q /= {nv};")
    rowp = _emit_coords(w, tr, g, idx, strides, nax - 1)
    sad = " + ".join([f"c{ax} * {g.pitches[ax]}" for ax in range(nax - 1)] + ["4 * v"])
    w("const int xi = a0c + 4 * v;")
    zero = "T4{(T)0, (T)0, (T)0, (T)0}"
    if not RAGGED_PAIRS:
        w(f"const T* src = g_in{k} + ({rowp});")
        vals = [f"(ok && (unsigned)(xi + {j}) < {n_in}u) ? __ldg(src + xi + {j}) : (T)0"
                for j in range(4)]
        if staged:
            w(f"rl{k}[i] = T4{{{', '.join(vals)}}};")
            w(f"rd{k}[i] = (({sad}) << 6) | 15;")
        else:
            w(f"*reinterpret_cast<T4*>(dst + {sad}) = T4{{{', '.join(vals)}}};")
        for _ in range(closes):
            w.close()
        return
    w(f"const {idx} ra = {rowp};")
    w("const int s = (int)(ra & 3);")
    w(f"const T4* pa = reinterpret_cast<const T4*>(g_in{k} + (ra - s)) + (xi >> 2);")
    w(f"const bool lo = ok && xi - s + 4 > 0 && xi - s < {n_in};")
    w(f"const bool hi = ok && s != 0 && xi - s + 8 > 0 && xi - s + 4 < {n_in};")
    w(f"const int m = ((unsigned)xi < {n_in}u ? 1 : 0) | ((unsigned)(xi + 1) < {n_in}u ? 2 : 0)"
      f" | ((unsigned)(xi + 2) < {n_in}u ? 4 : 0) | ((unsigned)(xi + 3) < {n_in}u ? 8 : 0);")
    if staged:
        w(f"rl{k}[i] = lo ? __ldg(pa) : {zero};")
        w(f"rh{k}[i] = hi ? __ldg(pa + 1) : {zero};")
        w(f"rd{k}[i] = (({sad}) << 6) | (s << 4) | m;")
    else:
        w(f"const T4 wa = lo ? __ldg(pa) : {zero};")
        w(f"const T4 wb = hi ? __ldg(pa + 1) : {zero};")
        w(f"*reinterpret_cast<T4*>(dst + {sad}) = merit_mask4(merit_row4(wa, wb, s), m);")
    for _ in range(closes):
        w.close()


def _emit_ragged_stores(w, spec, stage, offs, geo, nbuf, nt, first, end):
    """After tile ``at``'s steps: the shared stores of the pieces of tile ``at + nbuf - 1``
    that :func:`_emit_ragged_rows` loaded into registers before them (``stage``:
    :func:`ragged_staged`), into that tile's buffer (the one tile ``at - 1`` was read from)."""
    ahead = nbuf - 1
    rel = "at" if first == "0" else f"(at - {first})"
    w.open(f"if (at + {ahead} < {end})")
    for k, (per, total) in stage.items():
        w(f"T* dst{k} = smem + {offs[k]} + (({rel} + {ahead}) % {nbuf}) * {geo[k].words};")
        w("#pragma unroll")
        w.open(f"for (int i = 0; i < {per}; ++i)")
        st = (f"*reinterpret_cast<T4*>(dst{k} + (rd{k}[i] >> 6)) = merit_mask4(merit_row4("
              f"rl{k}[i], rh{k}[i], (rd{k}[i] >> 4) & 3), rd{k}[i] & 15);" if RAGGED_PAIRS
              else f"*reinterpret_cast<T4*>(dst{k} + (rd{k}[i] >> 6)) = rl{k}[i];")
        w(f"if (rd{k}[i] >= 0) {st}" if total % nt else st)
        w.close()
    w.close()
