"""Winograd's minimal filtering for 2-D convolutions of stride 1 (``Tile.wino``).

A convolution whose strategy is a plain sum (:func:`merit.gpu.tiling.splittable`) over a window
of ``r x r`` taps with stride and dilation 1 (:func:`fits`) is computed as F(m x m, r x r)
(Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): the output in tiles
of ``m x m``, each from an ``n x n`` patch of the image (``n = m + r - 1``):

    Y = A^T [ (G g G^T) . (B^T d B) ] A

summed over the input channels.  The sum over the channels of the ``n^2`` elementwise products
is a batched matrix product, ``M[t] = U[t] @ V[t]`` for ``t < n^2`` (``U``: the weights'
transforms, ``(n^2, M, C)``; ``V``: the patches' transforms, ``(n^2, C, P)``, ``P`` the tiles
of every image), and that product is a MERIT problem like any other
(:func:`merit.workloads.matmul`): the tile's other fields are its tile, chosen by the same
cost model and autotuner (:func:`merit.gpu.tiling.wino_variants`).  Three small kernels made
here around it, all in the timed launch: the weights' transform, the patches' transform and the
output transform (``Y`` from ``M``, clipped to the output).  The multiplications per output go
from ``r^2`` to ``n^2 / m^2`` (F(2x2, 3x3): 9 -> 4), paid for by the transforms' bytes.

The arithmetic is fp32 throughout, but it is not the direct sum's: the transforms add and scale
(by 1/2 in F(2, 3), down to 1/24 in F(4, 3)), so the rounding differs; the device test checks
each against float64.
"""

import dataclasses
from fractions import Fraction as Fr

__all__ = ["MATRICES", "fits", "wino_spec", "WINO_MARK", "sources", "launch_parts"]

#: ``(A^T, G, B^T)`` of F(m, r) by ``(m, r)``, from Lavin and Gray (interpolation points 0, 1,
#: -1 for F(2, 3); 0, 1, -1, 2, -2 for F(4, 3); and infinity): ``A^T`` (m x n), ``G`` (n x r),
#: ``B^T`` (n x n).  One dimension: ``y = A^T [(G g) . (B^T d)]`` is the correlation of ``d``
#: (n values) with ``g`` (r taps), m outputs.
MATRICES = {
    (2, 3): (
        ((1, 1, 1, 0), (0, 1, -1, -1)),
        ((1, 0, 0), (Fr(1, 2), Fr(1, 2), Fr(1, 2)), (Fr(1, 2), Fr(-1, 2), Fr(1, 2)), (0, 0, 1)),
        ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
    ),
    (4, 3): (
        ((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1)),
        ((Fr(1, 4), 0, 0), (Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)), (Fr(-1, 6), Fr(1, 6), Fr(-1, 6)),
         (Fr(1, 24), Fr(1, 12), Fr(1, 6)), (Fr(1, 24), Fr(-1, 12), Fr(1, 6)), (0, 0, 1)),
        ((4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0), (0, -2, -1, 2, 1, 0),
         (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1)),
    ),
}

#: Marks the batched product's specialization (its name ends so, with ``m``).
WINO_MARK = "~wino"


def fits(spec, m):
    """The convolution's sizes as a dict, or a string saying why F(m x m, r x r) does not apply:
    a float32 fp32 specialization of a plain sum (one level, loop inputs) of two inputs with
    p = (batch, filters, rows, columns) and a = (channels, tap rows, tap columns), the image
    ``(N, C, H, W)`` moved by (batch; channels; row + tap row; column + tap column), all with
    stride 1 and offsets only on the window axes (the padding), the weights ``(M, C, r, r)``
    moved by (filter; channel; tap row; tap column), zero (or error) boundary on the window
    axes."""
    from .tiling import conv_inputs

    if spec.name.endswith(f"{WINO_MARK}{m}"):
        return "the specialization is already the Winograd form's product"
    roles = conv_inputs(
        spec, "the Winograd form",
        lambda tr: tr.offset[:2] == (0, 0) and all(b in ("zero", "error") for b in tr.boundary[2:]),
        lambda tr: not any(tr.offset))
    if isinstance(roles, str):
        return roles
    r = spec.ashape[1]
    if (m, r) not in MATRICES or spec.ashape[2] != r:
        return (f"no F({m}, {r}) matrices for a {spec.ashape[1]} x {spec.ashape[2]} window "
                f"(have {sorted(MATRICES)})")
    if set(roles) != {"img", "wt"}:
        return ("the Winograd form needs an image (N, C, H, W) moved by (batch; channels; "
                "row + tap row; column + tap column) with stride 1 and zero padding, and "
                "weights (M, C, r, r)")
    N, C, H, W = spec.inputs[roles["img"]].shape
    Mf = spec.inputs[roles["wt"]].shape[0]
    _, _, Ho, Wo = spec.pshape
    n = m + r - 1
    th, tw = -(-Ho // m), -(-Wo // m)
    off = spec.inputs[roles["img"]].transform.offset
    return dict(img=roles["img"], wt=roles["wt"], N=N, C=C, H=H, W=W, M=Mf, Ho=Ho, Wo=Wo,
                py=-off[2], px=-off[3], r=r, m=m, n=n, th=th, tw=tw, P=N * th * tw, T=n * n)


_SPECS = {}


def wino_spec(spec, m):
    """``(spec2, dims)``: the batched product ``(n^2, M, C) @ (n^2, C, P)`` of F(m, r) for a
    convolution :func:`fits` takes (``dims``: its dict), as a float32 specialization named
    ``<name>~wino<m>``; a ValueError saying why where the form does not apply."""
    key = (spec.key(), m)
    if key not in _SPECS:
        from merit import workloads as W

        from .spec import spec_of

        d = fits(spec, m)
        if isinstance(d, str):
            raise ValueError(f"problem {spec.name!r}: {d} (Tile.wino {m})")
        s2 = spec_of(W.matmul((d["T"], d["M"], d["C"]), (d["T"], d["C"], d["P"])), "float32")
        _SPECS[key] = dataclasses.replace(s2, name=f"{spec.name}{WINO_MARK}{m}"), d
    return _SPECS[key]


def _lit(c):
    """A float literal of the exact rational ``c`` (rounded to float32 by the compiler)."""
    c = Fr(c)
    if c.denominator == 1:
        return f"{int(c)}.0f"
    return f"({c.numerator}.0f / {c.denominator}.0f)"


def _combine(coefs, names):
    """C text of ``sum(coefs[i] * names[i])`` without the zero terms (0.0f if all are)."""
    parts = []
    for c, v in zip(coefs, names, strict=True):
        c = Fr(c)
        if c == 0:
            continue
        if c == 1:
            parts.append(f"+ {v}")
        elif c == -1:
            parts.append(f"- {v}")
        else:
            parts.append(f"+ {_lit(c)} * {v}")
    if not parts:
        return "0.0f"
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def sandwich(L, R, src, dst, decl="float"):
    """C lines computing ``dst = L src R^T`` (``src[u][v]`` names a k x k array, ``dst`` an
    ``len(L) x len(R)`` one), through a temporary ``dst_t``; zero coefficients skipped."""
    k = len(L[0])
    lines = []
    for i, row in enumerate(L):
        for v in range(k):
            lines.append(f"const {decl} {dst}_t{i}_{v} = "
                         f"{_combine(row, [f'{src}[{u}][{v}]' for u in range(k)])};")
    for i in range(len(L)):
        for j, col in enumerate(R):
            lines.append(f"const {decl} {dst}{i}_{j} = "
                         f"{_combine(col, [f'{dst}_t{i}_{v}' for v in range(k)])};")
    return lines


def sources(d):
    """CUDA source of the three transforms of F(m, r) for the sizes ``d`` (:func:`fits`):
    ``merit_wino_w`` (weights (M, C, r, r) -> U (n^2, M, C), a thread per filter and channel),
    ``merit_wino_in`` (image -> V (n^2, C, P), a thread per channel and tile, tiles innermost
    so that the stores of a warp are contiguous; zero outside the image) and ``merit_wino_out``
    (M (n^2, M, P) -> output (N, M, Ho, Wo), a thread per filter and tile, clipped)."""
    AT, G, BT = MATRICES[d["m"], d["r"]]
    m, r, n = d["m"], d["r"], d["n"]
    head = "\n".join(f"#define {k} {d[k]}LL" for k in
                     ("N", "C", "H", "W", "M", "Ho", "Wo", "py", "px", "th", "tw", "P"))
    body_w = [f"float g[{r}][{r}];"]
    body_w += [f"g[{u}][{v}] = w[q * {r * r} + {u * r + v}];"
               for u in range(r) for v in range(r)]
    body_w += sandwich(G, G, "g", "u")
    body_w += [f"U[{i * n + j}LL * M * C + q] = u{i}_{j};" for i in range(n) for j in range(n)]
    body_in = [f"float dd[{n}][{n}];"]
    for a in range(n):
        for b in range(n):
            body_in.append(f"{{ const long long y = y0 + {a}, x = x0 + {b}; "
                           f"dd[{a}][{b}] = (y >= 0 && y < H && x >= 0 && x < W) ? "
                           f"src[y * W + x] : 0.0f; }}")
    body_in += sandwich(BT, BT, "dd", "v")
    body_in += [f"V[({i * n + j}LL * C + c) * P + p] = v{i}_{j};"
                for i in range(n) for j in range(n)]
    body_out = [f"float mm[{n}][{n}];"]
    body_out += [f"mm[{i}][{j}] = Mo[({i * n + j}LL * M + f) * P + p];"
                 for i in range(n) for j in range(n)]
    body_out += sandwich(AT, AT, "mm", "y")
    for i in range(m):
        for j in range(m):
            body_out.append(f"if (y0 + {i} < Ho && x0 + {j} < Wo) "
                            f"dst[(y0 + {i}) * Wo + x0 + {j}] = y{i}_{j};")

    def ind(lines):
        return "\n".join("        " + x for x in lines)

    return f"""{head}
extern "C" __global__ void merit_wino_w(const float* __restrict__ w, float* __restrict__ U) {{
    // U[t][f][c] = (G g G^T)[t], g = w[f][c] ({r} x {r})
    for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < M * C;
         q += (long long)gridDim.x * blockDim.x) {{
{ind(body_w)}
    }}
}}

extern "C" __global__ void merit_wino_in(const float* __restrict__ x, float* __restrict__ V) {{
    // V[t][c][p] = (B^T d B)[t], d the {n} x {n} patch of tile p = (image, tile row, tile
    // column) of channel c, its corner at ({m} ty - py, {m} tx - px)
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < C * P;
         i += (long long)gridDim.x * blockDim.x) {{
        const long long c = i / P, p = i - c * P;
        const long long tx = p % tw, q = p / tw, ty = q % th, b = q / th;
        const float* src = x + (b * C + c) * H * W;
        const long long y0 = ty * {m} - py, x0 = tx * {m} - px;
{ind(body_in)}
    }}
}}

extern "C" __global__ void merit_wino_out(const float* __restrict__ Mo, float* __restrict__ out) {{
    // out[b][f][{m} ty + i][{m} tx + j] = (A^T M A)[i][j], M[t] = Mo[t][f][p] of tile p
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < M * P;
         i += (long long)gridDim.x * blockDim.x) {{
        const long long f = i / P, p = i - f * P;
        const long long tx = p % tw, q = p / tw, ty = q % th, b = q / th;
        float* dst = out + (b * M + f) * Ho * Wo;
        const long long y0 = ty * {m}, x0 = tx * {m};
{ind(body_out)}
    }}
}}
"""


#: Threads of a transform's block, and its most blocks (the rest by the grid-stride loops).
THREADS, BLOCKS = 256, 4096

_KERNELS = {}


def _grid(n):
    return (max(1, min(-(-n // THREADS), BLOCKS)),)


def launch_parts(spec, tile, inputs, outputs):
    """A ``Tile.wino`` tile's launch around its batched product: ``(inputs2, outputs2, before,
    after)``: the product's operands ``U``, ``V`` and its output ``M`` (allocated here),
    ``before()`` launching the weights' and the patches' transforms, ``after()`` the output
    transform into ``outputs[0]``."""
    from .runtime import cupy

    cp = cupy()
    _, d = wino_spec(spec, tile.wino)
    key = (spec.key(), tile.wino)
    mod = _KERNELS.get(key)
    if mod is None:
        mod = _KERNELS[key] = cp.RawModule(code=sources(d))
    kw, ki, ko = (mod.get_function(f"merit_wino_{s}") for s in ("w", "in", "out"))
    T, C, P, Mf = d["T"], d["C"], d["P"], d["M"]
    U = cp.empty((T, Mf, C), dtype=cp.float32)
    V = cp.empty((T, C, P), dtype=cp.float32)
    Mo = cp.empty((T, Mf, P), dtype=cp.float32)
    img, wt = inputs[d["img"]], inputs[d["wt"]]
    out = outputs[0]
    for a, what in ((img, "image"), (wt, "weights"), (out, "output")):
        if not a.flags.c_contiguous:
            raise ValueError(f"the Winograd form needs a C-contiguous {what} array")

    def before():
        kw(_grid(Mf * C), (THREADS,), (wt, U))
        ki(_grid(C * P), (THREADS,), (img, V))

    def after():
        ko(_grid(Mf * P), (THREADS,), (Mo, out))

    return (U, V), (Mo,), before, after


def bytes_moved(d):
    """Bytes the transforms and the product's operands move through memory, each array read
    and written once (for notes and tests, not the cost model)."""
    T, C, P, Mf = d["T"], d["C"], d["P"], d["M"]
    img = d["N"] * C * d["H"] * d["W"]
    out = d["N"] * Mf * d["Ho"] * d["Wo"]
    return 4 * (img + 2 * T * C * P + Mf * C * d["r"] ** 2 + 2 * T * Mf * C
                + 2 * T * Mf * P + out)


def macs(d):
    """Multiply-adds of the batched product (the transforms' are not counted)."""
    return d["T"] * d["M"] * d["C"] * d["P"]


def direct_macs(d):
    """Multiply-adds of the direct sum, for comparison."""
    return d["N"] * d["M"] * d["Ho"] * d["Wo"] * d["C"] * d["r"] ** 2

