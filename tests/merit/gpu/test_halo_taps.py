"""Row-of-taps tiles (``Tile.halo``) on the CPU: the bulk copies the generated producer issues
for each ring buffer (one widened image box per tap phase, one weight box per tap), simulated on
the channels-last copies, and the rows the consumers' wgmma descriptors read for every tap,
evaluated from the generated source, against a brute-force im2col of the original problem.

Shared memory is modelled unswizzled (element ``e`` of line ``L`` of a box at byte ``dst`` lies
at ``dst + L * line + e * size``): the copy engine and wgmma apply the same swizzle to the same
address bits, and every box starts at a multiple of its period (checked), so a descriptor whose
start moves by whole lines reads the lines it names.  The model of a wgmma operand: row ``m``
(0..63 of a warpgroup's A, 0..N-1 of B), element ``e`` of the k step at ``start + m * line + e *
size``, ``start`` the descriptor's address.
"""

import math
import re
import shutil

import numpy as np
import pytest
from clref import relaid, spec_at, value
from sm90 import assert_builds_without_spills

from merit import workloads as W
from merit.gpu import ldsm
from merit.gpu.ldsm import cl_layout, halo_plan, source, tma_ops
from merit.gpu.mma import KSTEP, roles
from merit.gpu.tiling import H100, check_tile, rank

# (problem, precision, tile box over (n, m, ho, wo), warps, frags, k tile)
CASES = [
    # k9 s1, ragged channels (24 of 32) and pixels (the last column block past the edge)
    (W.conv2d(2, 24, 6, 100, 16, 9, padding=4), "fp16", (1, 16, 2, 64), (8, 1), (1, 2), 32),
    # k5, dilation 2, two channel blocks (40 of 64), TF32 (64-byte lines of 16)
    (W.conv2d(2, 40, 5, 70, 8, 5, padding=4, dilation=2), "tf32", (1, 8, 1, 64), (4, 1),
     (1, 1), 16),
    # k3, BF16, 128-byte lines, a block of two rows of 64
    (W.conv2d(2, 64, 7, 64, 24, 3, padding=1), "bf16", (1, 24, 2, 64), (8, 1), (1, 3), 64),
    # k9 s2: two tap phases, each box 64 + 4 pixels wide, traversal stride 2
    (W.conv2d(2, 32, 20, 140, 32, 9, stride=2, padding=4), "fp16", (1, 32, 1, 64), (4, 1),
     (1, 4), 32),
    # k3 s2 dilation 3: phases {0, 1} (taps 0 and 2 share phase 0 at shifts 0 and 3)
    (W.conv2d(2, 16, 9, 150, 16, 3, stride=2, padding=3, dilation=3), "fp16", (1, 16, 1, 64),
     (4, 1), (1, 2), 32),
]


def _tile(spec, prec, regs, warps, frags, bk, **kw):
    return check_tile(spec, dict(dict(regs=regs, warps=warps, frags=frags, mma=prec, ldsm=True,
                                      wgmma=True, chunk=bk, stages=3, producer=True, tma=True,
                                      half=prec != "tf32", cl=True, halo=True), **kw))


def _simulate(flat, dims, strides, box, est, start):
    """What the copy engine writes for a box at ``start`` (dimensions innermost first): lines of
    ``box[0]`` elements, zero outside the tensor."""
    el = (1,) + tuple(strides)
    counts = [-(-b // e) for b, e in zip(box, est, strict=True)]
    out = np.zeros(counts[::-1], dtype=flat.dtype)
    for ix in np.ndindex(*counts[::-1]):
        co = [start[d] + ix[::-1][d] * est[d] for d in range(len(dims))]
        if all(0 <= c < n for c, n in zip(co, dims, strict=True)):
            out[ix] = flat[sum(c * s for c, s in zip(co, el, strict=True))]
    return out.reshape(-1, counts[0])


def _producer(src):
    """The producer's statements for one buffer: (C lines to run, A copies (dst, coords), B
    copies (dst, coords)), destinations relative to the buffer."""
    i = src.index("merit_mb_expect(mbar")
    body = src[i:src.index("merit_await_all();", i)]
    lines, a, b = [], [], []
    for ln in body.splitlines()[1:]:
        ln = ln.strip()
        m = re.match(r"merit_tma(c\d|2)\(sbase \+ s \* \d+ \+ (\d+), &tm(\d), (.*), mbar", ln)
        if m:
            (a if m.group(3) == "0" else b).append((int(m.group(2)), m.group(4).split(", ")))
        elif ln.startswith(("const int", "int q")):
            lines.append(ln)
    return lines, a, b


def _run(lines, kt, pb):
    env = dict(kt=kt, **{f"pb{j}": v for j, v in enumerate(pb)})
    for ln in lines:
        ln = ln.removeprefix("const ").removeprefix("int ").rstrip(";")
        for part in ln.split(";"):
            part = part.strip().removeprefix("int ").replace("/=", "//=").replace(" / ", " // ")
            exec(part, {}, env)   # noqa: S102 - the source's integer code
    return env


def _ev(expr, env):
    return eval(expr.replace(" / ", " // "), {}, env)   # noqa: S307


def _descs(src):
    """The consumers' descriptor bases (C expressions of wm / wn) and, per wgmma, the A and B
    offsets (16-byte units) added to them."""
    da = re.search(r"da0 = merit_desc\(sbase \+ (.*)\);", src).group(1)
    db = re.search(r"db0 = merit_desc\(sbase \+ (.*)\);", src).group(1)
    steps = [(int(x), int(y)) for x, y in
             re.findall(r'"l"\(da0 \+ so \+ (\d+)\), "l"\(db0 \+ so \+ (\d+)\)', src)]
    return da, db, steps


@pytest.mark.parametrize("case", range(len(CASES)))
def test_halo_rows_match_brute_force_im2col(case):
    """For every ring buffer of three blocks (the first, the last past the image's edge, one in
    the middle): the boxes the generated producer copies (phase boxes from the channels-last
    image, per tap the weights), laid out at their destinations, read through each wgmma's
    descriptors, equal the brute-force A rows (each warpgroup's 64 pixels at the tap, the k
    step's channels, zero in the padding and past the real channels) and B lines (the filters'
    weights at that tap); every k index of the problem is read exactly once."""
    problem, prec, regs, warps, frags, bk = CASES[case]
    spec = spec_at(problem, prec)
    tile = _tile(spec, prec, regs, warps, frags, bk)
    hp = halo_plan(spec, tile)
    assert hp is not None and tile.label().endswith("_cl_halo")
    spec2, moves = cl_layout(spec, bk)
    r = roles(spec)
    es = 4 if prec == "tf32" else 2
    rb = bk * es
    ta, tb = tma_ops(spec, tile)
    assert ta["halo"] and tb["halo"]
    assert ta["bytes"] == len(hp["phases"]) * hp["abox"] and tb["bytes"] == hp["kw"] * hp["bstep"]
    src = source(spec, tile)[1]
    lines, acopies, bcopies = _producer(src)
    assert len(acopies) == len(hp["phases"]) and len(bcopies) == hp["kw"]
    # every box starts at a multiple of the 128-byte swizzle's period (so of any swizzle's)
    assert all(d % 1024 == 0 for d, _ in acopies) and all(d % (8 * rb) == 0 for d, _ in bcopies)
    assert f"merit_mb_expect(mbar + 8 * s, {ta['bytes'] + tb['bytes']});" in src
    da, db, steps = _descs(src)
    nks = bk // KSTEP[prec]
    assert len(steps) == hp["kw"] * nks
    rng = np.random.default_rng(case)
    arrays = problem.random_inputs(rng, np.float32)
    by = dict(zip([t.name for t in problem.tensors], arrays, strict=True))
    img, wts = by[problem.operands[r.a].tensor], by[problem.operands[r.b].tensor]
    iflat, wflat = relaid(img, moves[r.a]), relaid(wts, moves[r.b])
    tr_a, tr_b = spec.inputs[r.a].transform, spec.inputs[r.b].transform
    P, A = spec.np, spec.na
    order = [i for i in range(A) if i != 0] + [0]   # conv2d's (c, ky, kx): channels innermost
    K = math.prod(spec2.ashape)
    ntiles = K // (bk * hp["kw"])
    assert f"for (int kt = 0; kt < {ntiles}; ++kt)" in src
    bm = math.prod(tile.block[j] for j in r.rows)
    n = 8 * tile.frags[1]
    grid = [-(-e // b) for e, b in zip(spec.pshape, tile.block, strict=True)]
    blocks = [(0,) * P, tuple(g - 1 for g in grid), tuple(g // 2 for g in grid)]
    ew = 8 * hp["stage"] // es   # elements of the buffer model, with room past its end

    def a_row(pb, line, k):
        rest, pos = line, list(pb)
        for j in reversed(r.rows):
            pos[j] += rest % tile.block[j]
            rest //= tile.block[j]
        rest, a2 = k, [0] * A
        for q in range(A - 1, -1, -1):
            a2[q], rest = rest % spec2.ashape[q], rest // spec2.ashape[q]
        a = [0] * A
        for q, i in enumerate(order):
            a[i] = a2[q]
        return pos, a

    for gb in blocks:
        pb = [g * b for g, b in zip(gb, tile.block, strict=True)]
        seen = np.zeros(K, dtype=int)
        for kt in range(ntiles):
            env = _run(lines, kt, pb)
            buf = np.full(ew, np.nan, dtype=np.float64)
            for dst, co in acopies:
                box = _simulate(iflat, ta["dims"], [s // es for s in ta["strides"]], ta["box"],
                                ta["estrides"], [_ev(c, env) for c in co])
                buf[dst // es:dst // es + box.size] = box.reshape(-1)
            for dst, co in bcopies:
                box = _simulate(wflat, tb["dims"], [s // es for s in tb["strides"]], tb["box"],
                                (1, 1), [_ev(c, env) for c in co])
                buf[dst // es:dst // es + box.size] = box.reshape(-1)
            ks = KSTEP[prec]
            for step, (oa, ob) in enumerate(steps):
                kx, kk = divmod(step, nks)
                for wm in range(0, tile.warps[0], 4):
                    a0 = _ev(da, dict(wm=wm)) + 16 * oa - 32 * kk   # the line's start
                    for m in range(64):
                        line = (wm // 4) * 64 + m
                        for e in range(ks):
                            got = buf[(a0 + m * rb + kk * 32) // es + e]
                            # the k index this tap and step stand for, from the producer's k0
                            k = env["k0"] + kx * hp["kst"][hp["x"]] + kk * ks + e
                            pos, a = a_row(pb, line, k)
                            want = 0.0 if a[0] >= spec.ashape[0] else value(tr_a, img, pos + a)
                            assert got == want, (gb, kt, kx, kk, wm, m, e)
                            if wm == 0 and m == 0:
                                seen[k] += 1
                for wn in range(tile.warps[1]):
                    b0 = _ev(db, dict(wn=wn)) + 16 * ob - 32 * kk
                    for c in range(n):
                        col = wn * n + c
                        for e in range(ks):
                            got = buf[(b0 + c * rb + kk * 32) // es + e]
                            k = env["k0"] + kx * hp["kst"][hp["x"]] + kk * ks + e
                            _, a = a_row([0] * P, 0, k)
                            pos = [0] * P
                            pos[r.cols[0]] = pb[r.cols[0]] + col
                            want = 0.0 if a[0] >= spec.ashape[0] else value(tr_b, wts, pos + a)
                            assert got == want, (gb, kt, kx, kk, wn, c, e)
        assert (seen == 1).all()
        assert bm == 64 * (tile.warps[0] // 4)


def test_halo_refusals_and_candidates():
    """The form is refused where the image's innermost pixel axis has no tap index (k 1), where
    a warpgroup's 64 rows would cross a row of the box (block extent 32 along it) and without
    ``cl``; it is offered beside the ``cl`` tiles of the Table V k9 convolutions (stride 1 and
    2, FP16 / BF16 / TF32), persistent forms too, and not for a 1x1 convolution."""
    k1 = spec_at(W.conv2d(2, 32, 16, 128, 32, 1), "fp16")
    with pytest.raises(ValueError):
        _tile(k1, "fp16", (1, 32, 1, 64), (4, 1), (1, 4), 32)
    k3 = spec_at(W.conv2d(2, 32, 16, 128, 32, 3, padding=1), "fp16")
    with pytest.raises(ValueError):
        _tile(k3, "fp16", (1, 32, 2, 32), (4, 1), (1, 4), 32)
    with pytest.raises(ValueError):
        _tile(k3, "fp16", (1, 32, 1, 64), (4, 1), (1, 4), 32, cl=False)
    assert halo_plan(k3, _tile(k3, "fp16", (1, 32, 1, 64), (4, 1), (1, 4), 32, halo=False))
    for stride in (1, 2):
        for prec in ("fp16", "bf16", "tf32"):
            spec = spec_at(W.conv2d(16, 32, 128, 128, 32, 9, stride=stride, padding=4), prec)
            tiles = rank(spec, count=8, device=H100)
            halo = [x for x in tiles if x.halo]
            assert halo and all(x.cl and x.producer and x.tma for x in halo), (stride, prec)
            assert any(x.persist for x in halo) and any(not x.persist for x in halo)
            assert all(x.label().endswith(("_cl_halo",)) or "_cl_halo" in x.label()
                       for x in halo)
            assert all(ldsm.smem_bytes(spec, x) <= H100.smem_block for x in halo)
    spec = spec_at(W.conv2d(16, 32, 128, 128, 32, 1), "fp16")
    assert not any(x.halo for x in rank(spec, count=8, device=H100))


def test_halo_off_leaves_cl_sources_unchanged():
    """Tiles without the field generate the per-tap ``cl`` source (one box per k tile)."""
    spec = spec_at(W.conv2d(16, 32, 128, 128, 32, 9, padding=4), "fp16")
    for t in rank(spec, count=8, device=H100):
        if t.cl and not t.halo:
            src = source(spec, t)[1]
            assert src.count("&tm0,") == 1 and "const int k0" not in src


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("prec", ["fp16", "tf32"])
def test_halo_source_compiles_for_sm90a(prec, tmp_path):
    """The row-of-taps tiles of the k9 convolutions (stride 1 and 2, one tile per block and
    persistent) compile for sm_90a without spills."""
    for stride in (1, 2):
        spec = spec_at(W.conv2d(16, 32, 128, 128, 32, 9, stride=stride, padding=4), prec)
        halo = [x for x in rank(spec, count=8, device=H100) if x.halo]
        for t in (halo[0], next(x for x in halo if x.persist)):
            assert_builds_without_spills("typedef float T;\n" + source(spec, t)[1], tmp_path,
                                         t.label())
