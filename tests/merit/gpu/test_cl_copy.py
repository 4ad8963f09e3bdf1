"""Channels-last tiles (``Tile.cl``) on the CPU: the rewritten problem, the image's bulk-copy box
per tap and channel block, evaluated from the generated source, against a brute-force model.

The model reads the original arrays through the problem's own definition (a coordinate per
source axis: offset + stride x index, zero outside the tensor) and builds the implicit GEMM's A
tile for a block and k tile; the tile under test is what the bulk copy engine would write,
simulated from the tensor map's dimensions, strides, box and traversal strides (``box / stride``
elements per dimension, each ``stride`` apart, zero fill outside the tensor) at the coordinates
the generated producer computes, reading the channels-last copy (``(outer, C, inner)`` as
``(outer, inner, Cp)``).
"""

import math
import re
import shutil

import numpy as np
import pytest
from clref import relaid, spec_at, value
from sm90 import assert_builds_without_spills

from merit import workloads as W
from merit.gpu.ldsm import cl_layout, source, tma_ops
from merit.gpu.mma import roles
from merit.gpu.spec import spec_of
from merit.gpu.tiling import H100, check_tile, rank

# (problem, precision, tile box over (n, m, ho, wo), warps, frags, k tile)
CASES = [
    (W.conv2d(2, 24, 13, 16, 72, 3, padding=1), "fp16", (1, 64, 2, 64), (8, 1), (1, 8), 32),
    (W.conv2d(2, 24, 13, 16, 72, 3, padding=1), "tf32", (1, 64, 2, 64), (8, 1), (1, 8), 32),
    (W.conv2d(3, 19, 23, 29, 40, 3, stride=2, padding=1), "fp16", (1, 64, 4, 32), (8, 1),
     (1, 8), 64),
    (W.conv2d(2, 40, 17, 21, 64, 3, padding=3, dilation=3), "bf16", (1, 64, 8, 16), (8, 1),
     (1, 8), 32),
    (W.conv2d(2, 32, 30, 30, 32, 9, padding=4), "tf32", (2, 32, 2, 32), (8, 1), (1, 4), 16),
    (W.conv2d(2, 32, 40, 36, 32, 9, stride=2, padding=4), "fp16", (1, 32, 4, 32), (8, 1),
     (1, 4), 32),
    (W.conv2d(3, 16, 9, 11, 24, 1, stride=2), "fp16", (2, 32, 8, 8), (8, 1), (1, 4), 32),
    # a GEMM whose A rows are no 16-byte multiple (37 k): copied padded to the k tile
    (W.gemm(50, 40, 37), "fp16", (64, 64), (4, 1), (1, 8), 64),
]


def _tile(spec, prec, regs, warps, frags, bk):
    return check_tile(spec, dict(regs=regs, warps=warps, frags=frags, mma=prec, ldsm=True,
                                 wgmma=True, chunk=bk, stages=3, producer=True, tma=True,
                                 half=prec != "tf32", cl=True))


def _tma_calls(src):
    """The producer's channels-last box: (digit lines, coordinate expressions)."""
    m = re.search(r"\{\s*\n((?:\s*(?:const )?int [^\n]*\n)*)\s*merit_tmac(\d)\("
                  r"[^,]+, &tm0, (.*), mbar \+ 8 \* s\);", src)
    assert m, "no channels-last bulk copy in the producer"
    return m.group(1).strip().splitlines(), m.group(3).split(", ")


def _eval_coords(lines, coords, kt, pb):
    env = dict(kt=kt, **{f"pb{j}": v for j, v in enumerate(pb)})
    for ln in lines:
        ln = ln.strip().removeprefix("const ").removeprefix("int ").rstrip(";")
        for part in ln.split(";"):
            part = part.strip().replace("/=", "//=").replace(" / ", " // ")
            exec(part, {}, env)   # noqa: S102 - integer arithmetic of the generated source
    return [eval(c.replace(" / ", " // "), {}, env) for c in coords]   # noqa: S307


def _box(flat, plan, start):
    """What the copy engine writes for a box at ``start``: per element of the box (dimensions
    outermost first in the array's axes), zero outside the tensor."""
    es = plan["esize"]
    dims, box, est = plan["dims"], plan["box"], plan["estrides"]
    strides = (1,) + tuple(s // es for s in plan["strides"])
    counts = [b // e for b, e in zip(box, est, strict=True)]
    out = np.zeros(counts[::-1], dtype=flat.dtype)
    for ix in np.ndindex(*counts[::-1]):
        co = [start[d] + ix[::-1][d] * est[d] for d in range(len(dims))]
        if all(0 <= c < n for c, n in zip(co, dims, strict=True)):
            out[ix] = flat[sum(c * s for c, s in zip(co, strides, strict=True))]
    return out.reshape(-1, counts[0])


@pytest.mark.parametrize("case", range(len(CASES)))
def test_cl_box_matches_brute_force_im2col(case):
    """For every k tile of a few blocks (the first, one past the padding's far edge, the last)
    the box the generated producer copies equals the brute-force A tile: the block's pixels in
    C order over its rows, k in the reordered accumulation order (channel innermost, zero past
    the real channels), zero where the window leaves the image (stride 2, dilation 3, k 1/3/9,
    ragged channels and pixels)."""
    problem, prec, regs, warps, frags, bk = CASES[case]
    spec = spec_at(problem, prec)
    tile = _tile(spec, prec, regs, warps, frags, bk)
    spec2, moves = cl_layout(spec, bk)
    r = roles(spec)
    plan = tma_ops(spec, tile)[0]
    assert plan and plan["cl"] and plan["bytes"] == math.prod(regs[j] for j in r.rows) * bk * (
        4 if prec == "tf32" else 2)
    assert plan["swizzle"] == bk * (4 if prec == "tf32" else 2)   # the K-major layout's
    assert tma_ops(spec, tile)[1] and not tma_ops(spec, tile)[1]["mn"]
    lines, coords = _tma_calls(source(spec, tile)[1])
    rng = np.random.default_rng(case)
    arrays = problem.random_inputs(rng, np.float32)
    by = dict(zip([t.name for t in problem.tensors], arrays, strict=True))
    img = by[problem.operands[r.a].tensor]
    flat = relaid(img, moves[r.a])
    tr = spec.inputs[r.a].transform
    P, A = spec.np, spec.na
    ac = 0   # conv2d's accumulation indices: (c, ky, kx); GEMM's: (k,)
    order = [i for i in range(A) if i != ac] + [ac]
    grid = [-(-n // b) for n, b in zip(spec.pshape, tile.block, strict=True)]
    blocks = [(0,) * P, tuple(g - 1 for g in grid), tuple(g // 2 for g in grid)]
    ntiles = math.prod(spec2.ashape) // bk
    for gb in blocks:
        pb = [g * b for g, b in zip(gb, tile.block, strict=True)]
        for kt in range(ntiles):
            got = _box(flat, plan, _eval_coords(lines, coords, kt, pb))
            assert got.shape == (math.prod(tile.block[j] for j in r.rows), bk)
            for ln in range(got.shape[0]):
                rest, pos = ln, list(pb)
                for j in reversed(r.rows):
                    pos[j] += rest % tile.block[j]
                    rest //= tile.block[j]
                for kk in range(bk):
                    rest, a2 = kt * bk + kk, [0] * A
                    for n in range(A - 1, -1, -1):
                        a2[n], rest = rest % spec2.ashape[n], rest // spec2.ashape[n]
                    a = [0] * A
                    for n, i in enumerate(order):
                        a[i] = a2[n]
                    want = 0.0 if a[ac] >= spec.ashape[ac] else value(tr, img, pos + a)
                    assert got[ln, kk] == want, (gb, kt, ln, kk)


def test_cl_weights_are_a_plain_matrix_in_the_new_order():
    """The weights' copy is the plain K-major matrix of the reordered k (taps, then channels
    padded to the k tile): every element against the original weights."""
    problem = W.conv2d(2, 40, 17, 21, 64, 3, padding=3, dilation=3)
    spec = spec_at(problem, "fp16")
    spec2, moves = cl_layout(spec, 32)
    r = roles(spec)
    wts = problem.random_inputs(np.random.default_rng(5), np.float32)[1]
    flat = relaid(wts, moves[r.b]).reshape(64, -1)
    assert spec2.ashape == (3, 3, 64) and flat.shape == (64, 9 * 64)
    for m, ky, kx, c in np.ndindex(64, 3, 3, 64):
        want = wts[m, c, ky, kx] if c < 40 else 0.0
        assert flat[m, (ky * 3 + kx) * 64 + c] == want
    t = tma_ops(spec, _tile(spec, "fp16", (1, 64, 8, 16), (8, 1), (1, 8), 32))[1]
    assert t["dims"] == (9 * 64, 64) and t["box"] == (32, 64) and t["strides"] == (9 * 64 * 2,)


def test_cl_refusals_and_candidates():
    """The form is refused where it does not apply (a GEMM whose A is a plain K-major matrix
    already; FP16 on float32 arrays, which a copy cannot convert; a stride over 8) and offered
    beside the producer tiles of a padded convolution in FP16 / BF16 / TF32, persistent forms
    too."""
    gemm = spec_at(W.gemm(300, 260, 520), "fp16")
    t = dict(regs=(128, 128), warps=(8, 1), frags=(1, 16), mma="fp16", ldsm=True, wgmma=True,
             chunk=64, stages=3, producer=True, tma=True, half=True, cl=True)
    with pytest.raises(ValueError):
        check_tile(gemm, t)
    conv = W.conv2d(2, 24, 13, 16, 72, 3, padding=1)
    with pytest.raises(ValueError):
        check_tile(spec_of(conv, "float32", "fp16"), dict(t, regs=(1, 64, 2, 64), warps=(4, 1),
                                                           frags=(1, 8), half=False))
    assert cl_layout(spec_at(W.conv2d(1, 8, 64, 64, 16, 3, stride=9), "fp16"), 32) is None
    for prec in ("fp16", "bf16", "tf32"):
        spec = spec_at(W.conv2d(16, 128, 56, 56, 256, 3, padding=1), prec)
        tiles = rank(spec, count=8, device=H100)
        cl = [x for x in tiles if x.cl]
        assert cl and all(x.producer and x.tma and not x.mn and not x.areg for x in cl)
        assert any(x.persist for x in cl) and any(not x.persist for x in cl)
        assert all("_cl" in x.label() for x in cl)


def test_cl_sources_of_other_tiles_unchanged():
    """Tiles without the field generate no channels-last copy (the form is opt-in)."""
    spec = spec_at(W.conv2d(16, 128, 56, 56, 256, 3, padding=1), "fp16")
    for t in rank(spec, count=8, device=H100):
        if t.ldsm and not t.cl:
            assert "merit_tmac" not in source(spec, t)[1]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("prec", ["fp16", "tf32"])
def test_cl_source_compiles_for_sm90a(prec, tmp_path):
    """The channels-last producer tile (one-tile and persistent, and a GEMM's 2-D box beside
    the weights') compiles for sm_90a without spills."""
    vgg = spec_at(W.conv2d(16, 128, 56, 56, 256, 3, padding=1), prec)
    cl = [x for x in rank(vgg, count=8, device=H100) if x.cl]
    gemm = spec_at(W.gemm(50, 40, 37), prec)   # a 2-D box beside the weights' 2-D box
    odd = _tile(gemm, prec, (64, 64), (4, 1), (1, 8), 64 if prec != "tf32" else 32)
    for spec, t in ((vgg, cl[0]), (vgg, next(x for x in cl if x.persist)), (gemm, odd)):
        assert_builds_without_spills("typedef float T;\n" + source(spec, t)[1], tmp_path,
                                     t.label())

