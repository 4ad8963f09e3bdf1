"""The Winograd form (``Tile.wino``, merit.gpu.wino) without a GPU: the matrices against direct
correlation, the generated transforms' arithmetic against the matrices, which convolutions
qualify, and the tiles the autotuner times."""

import dataclasses
import re
from fractions import Fraction

import numpy as np
import pytest

from merit import workloads as W
from merit.gpu import codegen
from merit.gpu.spec import spec_of
from merit.gpu.tiling import check_tile, rank, wino_variants
from merit.gpu.wino import (
    MATRICES,
    bytes_moved,
    direct_macs,
    fits,
    macs,
    sandwich,
    sources,
    wino_spec,
)

VGG = W.conv2d(16, 128, 56, 56, 256, 3, padding=1)


@pytest.mark.parametrize("m", [2, 4])
def test_matrices_correlate_exactly(m):
    """y = A^T [(G g) . (B^T d)] is the correlation of d with g, in exact rationals."""
    AT, G, BT = MATRICES[m, 3]
    rng = np.random.default_rng(m)
    for _ in range(20):
        d = [Fraction(int(v)) for v in rng.integers(-50, 50, m + 2)]
        g = [Fraction(int(v)) for v in rng.integers(-50, 50, 3)]
        gg = [sum(Fraction(G[i][k]) * g[k] for k in range(3)) for i in range(m + 2)]
        dd = [sum(Fraction(BT[i][k]) * d[k] for k in range(m + 2)) for i in range(m + 2)]
        y = [sum(Fraction(AT[i][k]) * gg[k] * dd[k] for k in range(m + 2)) for i in range(m)]
        assert y == [sum(d[i + k] * g[k] for k in range(3)) for i in range(m)]


def _run_lines(lines, env):
    """Evaluate the generated C lines ``const float x = expr;`` in Python (float64)."""
    for line in lines:
        name, expr = re.fullmatch(r"const float (\w+) = (.*);", line).groups()
        expr = re.sub(r"(\d+)\.0f", r"\1.0", expr)
        env[name] = eval(expr, {}, env)
    return env


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("which", ["G", "BT", "AT"])
def test_sandwich_lines_compute_the_product(m, which):
    """The emitted ``dst = L src L^T`` lines give what NumPy's products of the matrices give."""
    AT, G, BT = MATRICES[m, 3]
    L = {"G": G, "BT": BT, "AT": AT}[which]
    k = len(L[0])
    src = np.random.default_rng(7).standard_normal((k, k))
    env = _run_lines(sandwich(L, L, "s", "z"), {"s": src.tolist()})
    Lf = np.array([[float(c) for c in row] for row in L])
    want = Lf @ src @ Lf.T
    got = np.array([[env[f"z{i}_{j}"] for j in range(len(L))] for i in range(len(L))])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _direct(x, w, pad):
    """float64 cross-correlation (NCHW, MCKK), zero padding, stride 1."""
    N, C, H, Wd = x.shape
    M, _, r, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    Ho, Wo = H + 2 * pad - r + 1, Wd + 2 * pad - r + 1
    out = np.zeros((N, M, Ho, Wo))
    for ky in range(r):
        for kx in range(r):
            out += np.einsum("nchw,mc->nmhw", xp[:, :, ky:ky + Ho, kx:kx + Wo], w[:, :, ky, kx])
    return out


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape", [(2, 3, 9, 7, 4, 1), (1, 5, 6, 11, 3, 0), (2, 2, 5, 5, 2, 2)])
def test_tiles_compose_the_convolution(m, shape):
    """The form's data flow in float64: U and V laid out as the transforms write them, the
    batched product, the output transform clipped, against the direct sum."""
    N, C, H, Wd, M, pad = shape
    spec = spec_of(W.conv2d(N, C, H, Wd, M, 3, padding=pad), "float32")
    d = fits(spec, m)
    rng = np.random.default_rng(sum(shape))
    x, w = rng.standard_normal((N, C, H, Wd)), rng.standard_normal((M, C, 3, 3))
    AT, G, BT = (np.array([[float(c) for c in row] for row in A]) for A in MATRICES[m, 3])
    n, th, tw = d["n"], d["th"], d["tw"]
    U = np.einsum("ia,fcab,jb->ijfc", G, w, G).reshape(d["T"], M, C)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad + th * m), (pad, pad + tw * m)))
    V = np.zeros((d["T"], C, d["P"]))
    for b in range(N):
        for ty in range(th):
            for tx in range(tw):
                patch = xp[b, :, ty * m:ty * m + n, tx * m:tx * m + n]
                V[:, :, (b * th + ty) * tw + tx] = np.einsum(
                    "ia,cab,jb->ijc", BT, patch, BT).reshape(d["T"], C)
    Mo = U @ V
    Y = np.zeros((N, M, th * m, tw * m))
    for b in range(N):
        for ty in range(th):
            for tx in range(tw):
                mm = Mo[:, :, (b * th + ty) * tw + tx].reshape(n, n, M)
                Y[b, :, ty * m:ty * m + m, tx * m:tx * m + m] = np.einsum(
                    "ia,abf,jb->fij", AT, mm, AT)
    np.testing.assert_allclose(Y[:, :, :d["Ho"], :d["Wo"]], _direct(x, w, pad), atol=1e-9)


def test_fits_takes_stride1_3x3_convolutions():
    d = fits(spec_of(VGG, "float32"), 2)
    assert (d["N"], d["C"], d["M"], d["Ho"], d["Wo"], d["py"], d["px"]) == (16, 128, 256, 56,
                                                                            56, 1, 1)
    assert (d["n"], d["T"], d["th"], d["P"]) == (4, 16, 28, 16 * 28 * 28)
    assert direct_macs(d) / macs(d) == pytest.approx(9 / 4)
    # V and M each written and read once: 16 and 32 words per 2 x 2 output tile and channel
    assert bytes_moved(d) > 4 * 2 * d["T"] * d["P"] * (d["C"] + d["M"])
    d4 = fits(spec_of(W.conv2d(1, 4, 7, 7, 2, 3, padding=0), "float32"), 4)
    assert (d4["Ho"], d4["th"], d4["T"]) == (5, 2, 36)


@pytest.mark.parametrize("problem, precision, want", [
    (W.conv2d(2, 3, 9, 9, 4, 3, stride=2), "fp32", "image"),
    (W.conv2d(2, 3, 9, 9, 4, 3, dilation=2), "fp32", "image"),
    (W.conv2d(2, 4, 9, 9, 4, 3, groups=2), "fp32", "plain sum"),
    (W.conv2d(2, 3, 9, 9, 4, 5, padding=2), "fp32", "no F(2, 5)"),
    (W.conv2d(2, 3, 9, 9, 4, 3, relu=True), "fp32", "plain sum"),
    (W.conv2d(2, 3, 9, 9, 4, 3), "tf32", "fp32 float32"),
    (W.gemm(5, 6, 7), "fp32", "plain sum"),
])
def test_fits_refuses(problem, precision, want):
    why = fits(spec_of(problem, "float32", precision), 2)
    assert isinstance(why, str) and want in why


def test_variants_are_product_tiles():
    """The autotuner's Winograd tiles: the model's best plain tiles of the product with their
    forms, each a complete tile of the product (three parallel indices), labelled ``_wn2``."""
    spec = spec_of(VGG, "float32")
    spec2, _ = wino_spec(spec, 2)
    tiles = wino_variants(spec)
    assert tiles and all(t.wino == 2 and len(t.threads) == 3 for t in tiles)
    assert all(t.label().endswith("_wn2") for t in tiles)
    assert len(set(tiles)) == len(tiles)
    bases = {t for t in tiles if not (t.lean or t.vread or t.ptxas)}
    plain = [t for t in rank(spec2, count=12) if not (t.lean or t.vread or t.ptxas)]
    assert {dataclasses.replace(t, wino=0) for t in bases} == set(plain[:2])
    for t in tiles:
        assert check_tile(spec, t) == t
    # the kernel is the product's, named apart from the plain tile's
    t = tiles[0]
    name, _, nb, nt, smem = codegen.source(spec, t)
    plain0 = dataclasses.replace(t, wino=0)
    name2, _, nb2, nt2, smem2 = codegen.source(spec2, plain0)
    assert (nb, nt, smem) == (nb2, nt2, smem2) and name != name2 and "wino2" in name


@pytest.mark.parametrize("problem", [W.conv2d(2, 3, 9, 9, 4, 3, stride=2), W.gemm(64, 64, 64),
                                     W.conv2d(2, 3, 9, 9, 4, 5, padding=2)])
def test_no_variants_elsewhere(problem):
    assert wino_variants(spec_of(problem, "float32")) == []


def test_no_padded_rows():
    """A Winograd tile has no padded-row form (its transforms write the product's operands):
    ``pad_variants`` gives none where it is the fastest, though the product's rows are ragged."""
    from merit.gpu.tiling import pad_variants

    spec = spec_of(W.conv2d(2, 45, 21, 19, 67, 3, padding=1), "float32")
    t = wino_variants(spec)[0]
    assert codegen.padded_layout(wino_spec(spec, 2)[0]) is not None
    assert pad_variants(spec, [(0.01, t)]) == []


def test_check_tile_names_the_refusal():
    spec = spec_of(W.gemm(64, 64, 64), "float32")
    with pytest.raises(ValueError, match="plain sum of two inputs"):
        check_tile(spec, {"threads": (1, 16, 16), "regs": (1, 4, 4), "wino": 2})
    conv = spec_of(W.conv2d(2, 3, 9, 9, 4, 3, padding=1), "float32")
    with pytest.raises(ValueError, match="SIMT tiles without gemv or padrows"):
        check_tile(conv, {"threads": (1, 16, 16), "regs": (1, 4, 4), "wino": 2,
                          "padrows": True})


def test_transform_source_bakes_the_sizes():
    d = fits(spec_of(W.conv2d(3, 5, 10, 7, 6, 3, padding=1), "float32"), 2)
    src = sources(d)
    for k in ("N 3LL", "C 5LL", "H 10LL", "W 7LL", "M 6LL", "th 5LL", "tw 4LL", "P 60LL"):
        assert f"#define {k}" in src
    assert src.count("__global__") == 3
    # the output transform writes m x m values a thread, each clipped to the output
    assert src.count("dst[(y0 + ") == 4 and src.count("< Ho && x0") == 4
