"""Check and time every GPU workload against its peers in one run: ``python -m bench.gpu``.

For each row the generated kernel (autotuned, tiles cached in ``<out>/gpu-tiles.json``) is
checked against a float64 reference computed on the device by an implementation that does not use
MERIT (relative error < 1e-5, outputs poisoned with NaN first), then timed with CUDA events over
batches of back-to-back launches (median of 5 batches of >= 20 ms).  In the same process the peers
are timed the same way (cuDNN's the fastest of :data:`PEER_TRIES` algorithm choices, see
:func:`time_peer`): cuDNN fp32 through torch (TF32 off), im2col + cuBLAS through CuPy
(Caffe-style), cupyx.scipy.ndimage where it has the operation, and plain torch operations.  The
floor of a row is the larger of (bytes of its tensors read once and written once) / (measured copy
bandwidth) and (2 x inner-product steps) / (measured SGEMM rate).  Results go to
``<out>/gpu.json`` and ``<out>/gpu.md``, after every row.  Worker processes (``--jobs``) rank and
compile the autotuner's first candidates of the later rows while a row is timed; ``--stop-after``
and ``--resume`` split a run that does not fit one sitting into several processes.
"""

import argparse
import datetime
import json
import os
import platform
import re
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from merit import Index, Problem, Transform
from merit import strategies as S
from merit import workloads as W

TOL = 1e-5


def row_rng(key):
    """The random generator of a row's data, seeded by its key: a row draws the same data
    whichever rows run before it in the process (``--only``, ``--resume``)."""
    return np.random.default_rng(zlib.crc32(f"bench.gpu {key}".encode()))


# ---- workloads that need more than one problem or a batch axis --------------------------------

def correlation_batched(n, c, h, w, d):
    """FlowNet correlation with a batch axis: p = (n, y, x, dy, dx), a = (c,), zero outside I2."""
    i1 = Transform((n, c, h, w), p=[Index(0), Index(2), Index(3), None, None], a=[Index(1)],
                   name="I1")
    i2 = Transform((n, c, h, w), p=[Index(0), Index(2), Index(3), Index(2, 1, -d),
                                    Index(3, 1, -d)], a=[Index(1)], name="I2")
    return Problem("correlation", S.Dot(), (n, h, w, 2 * d + 1, 2 * d + 1), (c,), [i1, i2])


def integral_passes(h, w, block=32, block2=None):
    """Integral image as MERIT problems: per axis a blocked scan.

    On the image viewed as (h, w / B, B): block totals ``T[y, q] = sum_j I[y, q, j]``; carries
    ``C[y, q] = sum_{q' < q} T[y, q']`` (a backwards walk cut by the zero boundary); then
    ``R[y, q, r] = sum_{j <= r} I[y, q, r - j] + C[y, q]`` (DotResidual with a broadcast weight of
    one, the carry read in PostLoop).  The same three on the columns of ``R``: six problems.
    With ``block2`` (B2) the carries are themselves a blocked scan of the totals, viewed as
    (h, w / (B B2), B2): their totals, those totals' carries, and the totals' exclusive scan in
    their blocks plus that carry (``sum_{j < B2} T[y, Q, i - 1 - j] + C2[y, Q]``): ten problems,
    B multiply-adds an element in the scan instead of B, and w / (B B2) a carry instead of w / B.
    Returns ``(problems, (w / B, h / B))``, the problems in the order they run.
    """
    if w % block or h % block:
        raise ValueError(f"integral_passes needs sides divisible by {block}")
    nb_x, nb_y = w // block, h // block
    if block2 is not None and (nb_x % block2 or nb_y % block2):
        raise ValueError(f"integral_passes needs sides divisible by {block} x {block2}")
    # rows: view (h, nb_x, B)
    rows_t = Problem("integral_rows_totals", S.Sum(), (h, nb_x), (block,),
                     [Transform((h, nb_x, block), p=[Index(0), Index(1)], a=[Index(2)], name="I")])
    if block2 is None:
        rows_c = [Problem("integral_rows_carry", S.Sum(), (h, nb_x), (nb_x,),
                          [Transform((h, nb_x), p=[Index(0), Index(1, 1, -1)], a=[Index(1, -1)],
                                     name="T")])]
    else:   # the totals viewed as (h, nb2, B2)
        nb2 = nb_x // block2
        rows_c = [
            Problem("integral_rows_totals2", S.Sum(), (h, nb2), (block2,),
                    [Transform((h, nb2, block2), p=[Index(0), Index(1)], a=[Index(2)],
                               name="T")]),
            Problem("integral_rows_carry2", S.Sum(), (h, nb2), (nb2,),
                    [Transform((h, nb2), p=[Index(0), Index(1, 1, -1)], a=[Index(1, -1)],
                               name="T2")]),
            Problem("integral_rows_carry", S.DotResidual(), (h, nb2, block2), (block2,),
                    [Transform((h, nb2, block2), p=[Index(0), Index(1), Index(2, 1, -1)],
                               a=[Index(2, -1)], name="T"),
                     Transform((1,), p=[None, None, None], a=[None], name="one"),
                     Transform((h, nb2), p=[Index(0), Index(1), None], a=[None], name="C2")])]
    rows_r = Problem(
        "integral_rows_scan", S.DotResidual(), (h, nb_x, block), (block,),
        [Transform((h, nb_x, block), p=[Index(0), Index(1), Index(2)], a=[Index(2, -1)],
                   name="I"),
         Transform((1,), p=[None, None, None], a=[None], name="one"),
         Transform((h, nb_x), p=[Index(0), Index(1), None], a=[None], name="C")])
    # columns: view (nb_y, B, w)
    cols_t = Problem("integral_cols_totals", S.Sum(), (nb_y, w), (block,),
                     [Transform((nb_y, block, w), p=[Index(0), Index(2)], a=[Index(1)],
                                name="R")])
    if block2 is None:
        cols_c = [Problem("integral_cols_carry", S.Sum(), (nb_y, w), (nb_y,),
                          [Transform((nb_y, w), p=[Index(0, 1, -1), Index(1)], a=[Index(0, -1)],
                                     name="T")])]
    else:   # the totals viewed as (nb2, B2, w)
        nb2 = nb_y // block2
        cols_c = [
            Problem("integral_cols_totals2", S.Sum(), (nb2, w), (block2,),
                    [Transform((nb2, block2, w), p=[Index(0), Index(2)], a=[Index(1)],
                               name="T")]),
            Problem("integral_cols_carry2", S.Sum(), (nb2, w), (nb2,),
                    [Transform((nb2, w), p=[Index(0, 1, -1), Index(1)], a=[Index(0, -1)],
                               name="T2")]),
            Problem("integral_cols_carry", S.DotResidual(), (nb2, block2, w), (block2,),
                    [Transform((nb2, block2, w), p=[Index(0), Index(1, 1, -1), Index(2)],
                               a=[Index(1, -1)], name="T"),
                     Transform((1,), p=[None, None, None], a=[None], name="one"),
                     Transform((nb2, w), p=[Index(0), None, Index(1)], a=[None], name="C2")])]
    cols_r = Problem(
        "integral_cols_scan", S.DotResidual(), (nb_y, block, w), (block,),
        [Transform((nb_y, block, w), p=[Index(0), Index(1), Index(2)], a=[Index(1, -1)],
                   name="R"),
         Transform((1,), p=[None, None, None], a=[None], name="one"),
         Transform((nb_y, w), p=[Index(0), None, Index(1)], a=[None], name="C")])
    return [rows_t, *rows_c, rows_r, cols_t, *cols_c, cols_r], (nb_x, nb_y)


def integral_run(probs, block, block2, image, run):
    """The passes of :func:`integral_passes` on ``image`` (h, w): ``run(k, *inputs)`` runs
    problem ``k`` and returns its output; the last output, shaped (h, w)."""
    h, w = image.shape
    per = len(probs) // 2
    one = image.reshape(-1)[:1].copy()
    one[...] = 1

    def axis(k, x, cshape, tview):
        t = run(k, x)
        if per == 3:
            c = run(k + 1, t)
        else:   # the totals' own blocked scan, exclusive
            tv = tview(t)
            c = run(k + 3, tv, one, run(k + 2, run(k + 1, tv)))
        return run(k + per - 1, x, one, c.reshape(cshape))

    r = axis(0, image.reshape(h, w // block, block), (h, w // block),
             lambda t: t.reshape(h, -1, block2))
    out = axis(per, r.reshape(h // block, block, w), (h // block, w),
               lambda t: t.reshape(-1, block2, w))
    return out.reshape(h, w)


#: The integral image's scan blocks the bench times, (B, B2 or None): one level of blocked
#: scans, or two (the carries a blocked scan of the block totals).  On the H200 (2026-11-29,
#: ``tests/merit/gpu/scan_probe.py --levels``, in turns) 16: 0.1790 ms, 8 x 16: 0.1714, 8 x 32:
#: 0.1824, 4 x 32: 0.2425 (32 alone 0.214 on that day's page).
SCAN_BLOCKS = ((16, None), (32, None), (8, 16))


def integral_chain(h, w, image, cache, block=32, block2=None):
    """Prepare the launches of :func:`integral_passes` on ``image``; returns (go, result, the
    launches)."""
    from merit.gpu import prepare

    probs, _ = integral_passes(h, w, block, block2)
    gos = []

    def run(k, *arrays):
        _, go, (out,) = prepare(probs[k], *arrays, cache=cache)
        go()
        gos.append(go)
        return out

    out = integral_run(probs, block, block2, image, run)

    def go():
        for g in gos:
            g()

    return go, out, gos


def separable_passes(h, w, k):
    """A separable filter as two MERIT problems of k steps each (rows, then columns), the
    intermediate zero-padded like the image: the same result as the one two-level problem of
    ``merit.workloads.separable_filter`` with 2k instead of k^2 steps per pixel."""
    r = k // 2
    rows = Problem("separable_rows", S.Dot(), (h, w), (k,),
                   [Transform((h, w), p=[Index(0), Index(1)], a=[Index(1, 1, -r)], name="I"),
                    Transform((k,), p=[None, None], a=[Index(0)], name="hk")])
    cols = Problem("separable_cols", S.Dot(), (h, w), (k,),
                   [Transform((h, w), p=[Index(0), Index(1)], a=[Index(0, 1, -r)], name="T"),
                    Transform((k,), p=[None, None], a=[Index(0)], name="v")])
    return rows, cols


def separable_chain(h, w, k, image, hk, v, cache):
    """Prepare the two launches of :func:`separable_passes`; returns (go, result)."""
    from merit.gpu import prepare

    rows, cols = separable_passes(h, w, k)
    _, g1, (tmp,) = prepare(rows, image, hk, cache=cache)
    g1()
    _, g2, (out,) = prepare(cols, tmp, v, cache=cache)

    def go():
        g1(), g2()

    return go, out


# ---- peers and references ---------------------------------------------------------------------

def _torch():
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    return torch


#: cuDNN peers are timed this many times, each in a fresh thread, and the fastest kept: in
#: benchmark mode cuDNN picks a convolution's algorithm on the first call of a shape from a
#: short timing of its candidates, and torch keeps the plan in a cache of the calling thread
#: (its cuDNN v8 caches are thread-local), so the pick varies between processes (the 1x1
#: stride-2 conv N8 C155 M127 69x111: 0.026 ms in some, 0.033 in others, two algorithms); each
#: fresh thread picks anew, and a row's ratio is against the fastest pick.
PEER_TRIES = 3


def time_peer(name, fn, time_launch, tries=PEER_TRIES):
    """``(ms, per-try ms)`` of peer ``fn``: a cuDNN peer (``name`` starting with ``cuDNN``) timed
    ``tries`` times, each in a new thread whose first call makes cuDNN choose its algorithm
    again, the fastest kept; any other peer timed once (per-try ``None``)."""
    if not name.startswith("cuDNN"):
        return time_launch(fn), None
    import threading

    times, errors = [], []

    def one():
        try:
            times.append(time_launch(fn))
        except Exception as exc:  # re-raised in the calling thread
            errors.append(exc)

    for _ in range(tries):
        th = threading.Thread(target=one)
        th.start()
        th.join()
        if errors:
            raise errors[0]
    return min(times), times


def im2col_gemm(x, w, stride, padding):
    """Caffe-style convolution: unfold the padded image into columns, then one cuBLAS GEMM per
    batch (batched through cupy.matmul)."""
    import cupy as cp
    from cupy.lib.stride_tricks import as_strided

    n, c, h, wd = x.shape
    m, _, k, _ = w.shape
    xp = cp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding))) if padding else x
    ho = (h + 2 * padding - k) // stride + 1
    wo = (wd + 2 * padding - k) // stride + 1
    s = xp.strides
    cols = as_strided(xp, (n, c, k, k, ho, wo),
                      (s[0], s[1], s[2], s[3], s[2] * stride, s[3] * stride))
    cols = cp.ascontiguousarray(cols).reshape(n, c * k * k, ho * wo)
    return cp.matmul(w.reshape(m, c * k * k), cols).reshape(n, m, ho, wo)


def _conv_peers(prob, arrays, stride, padding, dilation=1, groups=1):
    torch = _torch()
    import cupy as cp

    x, w = arrays
    tx, tw = torch.as_tensor(x, device="cuda"), torch.as_tensor(w, device="cuda")
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    peers = {"cuDNN fp32 (torch)": lambda: torch.nn.functional.conv2d(tx, tw, **kw)}
    if dilation == 1 and groups == 1:
        peers["im2col + cuBLAS (cupy)"] = lambda: im2col_gemm(x, w, stride, padding)
    ref = torch.nn.functional.conv2d(tx.double(), tw.double(), **kw)
    return peers, (cp.asarray(ref),)


def _set_tf32(torch, on):
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = on


def _tc_peer(torch, prec, op, *tensors):
    """The library call ``op(*tensors)`` in the tensor-core precision ``prec``: TF32 math on
    float32 tensors, or the tensors cast to float16 / bfloat16 once, outside the timing."""
    if prec == "tf32":
        def call():
            _set_tf32(torch, True)
            try:
                return op(*tensors)
            finally:
                _set_tf32(torch, False)
        return call
    dt = torch.float16 if prec == "fp16" else torch.bfloat16
    cast = [t.to(dt) for t in tensors]
    return lambda: op(*cast)


def half_arrays(arrays, prec):
    """The float16 / bfloat16 tensors of ``arrays`` (torch, cast once, outside the timing, as
    for the peers): what merit.gpu gets on the FP16 / BF16 rows, so that its staged kernels may
    read 2-byte operands as the peers do."""
    torch = _torch()
    dt = torch.float16 if prec == "fp16" else torch.bfloat16
    return [torch.as_tensor(a, device="cuda").to(dt) for a in arrays]


def _tc_conv_peers(prob, arrays, prec, stride, padding, dilation=1, groups=1):
    torch = _torch()
    import cupy as cp

    x, w = arrays
    tx, tw = torch.as_tensor(x, device="cuda"), torch.as_tensor(w, device="cuda")
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    call = _tc_peer(torch, prec, lambda a, b: torch.nn.functional.conv2d(a, b, **kw), tx, tw)
    ref = torch.nn.functional.conv2d(tx.double(), tw.double(), **kw)
    return {f"cuDNN {prec} (torch)": call}, (cp.asarray(ref),)


def _tc_gemm_peers(prob, arrays, prec):
    torch = _torch()
    import cupy as cp

    a, b = arrays
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    call = _tc_peer(torch, prec, lambda x, y: x @ y, ta, tb)
    return {f"cuBLAS {prec} (torch)": call}, (cp.asarray(ta.double() @ tb.double()),)


def _gemm_peers(prob, arrays):
    torch = _torch()
    import cupy as cp

    a, b = arrays
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    peers = {"cuBLAS SGEMM (torch)": lambda: ta @ tb, "cuBLAS SGEMM (cupy)": lambda: a @ b}
    return peers, (cp.asarray(ta.double() @ tb.double()),)


def _filter3x3_peers(prob, arrays):
    torch = _torch()
    import cupy as cp
    from cupyx.scipy import ndimage

    img, wt = arrays
    ti, tw = torch.as_tensor(img, device="cuda"), torch.as_tensor(wt, device="cuda")
    peers = {
        "cupyx.scipy.ndimage.correlate": lambda: ndimage.correlate(img, wt, mode="constant"),
        "cuDNN fp32 (torch conv2d)": lambda: torch.nn.functional.conv2d(
            ti[None, None], tw[None, None], padding=1),
    }
    ref = torch.nn.functional.conv2d(ti.double()[None, None], tw.double()[None, None],
                                     padding=1)[0, 0]
    return peers, (cp.asarray(ref),)


def _separable_peers(prob, arrays, k):
    torch = _torch()
    import cupy as cp
    from cupyx.scipy import ndimage

    img, hk, v = arrays
    r = k // 2
    ti = torch.as_tensor(img, device="cuda")[None, None]
    th = torch.as_tensor(hk, device="cuda").reshape(1, 1, 1, k)
    tv = torch.as_tensor(v, device="cuda").reshape(1, 1, k, 1)

    def nd():
        tmp = ndimage.correlate1d(img, hk, axis=1, mode="constant")
        return ndimage.correlate1d(tmp, v, axis=0, mode="constant")

    def tconv(x, a, b):
        return torch.nn.functional.conv2d(torch.nn.functional.conv2d(x, a, padding=(0, r)), b,
                                          padding=(r, 0))

    peers = {"cupyx.scipy.ndimage.correlate1d x2": nd,
             "cuDNN fp32 (torch conv2d 1xk, kx1)": lambda: tconv(ti, th, tv)}
    ref = tconv(ti.double(), th.double(), tv.double())[0, 0]
    return peers, (cp.asarray(ref),)


def _integral_peers(image):
    torch = _torch()
    import cupy as cp

    ti = torch.as_tensor(image, device="cuda")
    peers = {"torch.cumsum x2": lambda: torch.cumsum(torch.cumsum(ti, 0), 1),
             "cupy.cumsum x2": lambda: cp.cumsum(cp.cumsum(image, 0), 1)}
    ref = torch.cumsum(torch.cumsum(ti.double(), 0), 1)
    return peers, (cp.asarray(ref),)


def _motion_peers(prob, arrays, block, search):
    torch = _torch()
    import cupy as cp

    cur, ref = arrays
    tc, tr = torch.as_tensor(cur, device="cuda"), torch.as_tensor(ref, device="cuda")
    h, w = cur.shape
    d = 2 * search + 1

    def sad(c, r):
        rp = torch.nn.functional.pad(r[None, None], (search,) * 4, mode="replicate")[0, 0]
        out = []
        for dy in range(d):
            rows = rp[dy:dy + h]
            win = rows.unfold(1, w, 1)                        # (h, d, w): dx windows
            diff = (c[:, None, :] - win).abs()                  # (h, d, w)
            s = diff.reshape(h // block, block, d, w // block, block).sum(dim=(1, 4))
            out.append(s)                                       # (by, d, bx)
        v = torch.stack(out, 0)                                 # (dy, by, dx, bx)
        return v.permute(1, 3, 0, 2)

    peers = {"torch ops (per dy, unfold + block sums)": lambda: sad(tc, tr)}
    return peers, (cp.asarray(sad(tc.double(), tr.double()).contiguous()),)


def _bilateral_peers(prob, arrays, sigma_r, radius):
    torch = _torch()
    import cupy as cp

    img, g = arrays
    ti, tg = torch.as_tensor(img, device="cuda"), torch.as_tensor(g, device="cuda")
    inv = 1.0 / (2 * sigma_r * sigma_r)
    k = 2 * radius + 1
    h, w = img.shape

    def bil(x, gg):
        xp = torch.nn.functional.pad(x[None, None], (radius,) * 4, mode="replicate")[0, 0]
        num = torch.zeros_like(x)
        den = torch.zeros_like(x)
        for i in range(k):
            for j in range(k):
                nb = xp[i:i + h, j:j + w]
                kk = gg[i, j] * torch.exp(-(nb - x) ** 2 * inv)
                num += kk * nb
                den += kk
        return num / den

    peers = {"torch ops (81 shifted taps)": lambda: bil(ti, tg)}
    return peers, (cp.asarray(bil(ti.double(), tg.double())),)


def _correlation_peers(prob, arrays, d):
    torch = _torch()
    import cupy as cp

    i1, i2 = arrays
    t1, t2 = torch.as_tensor(i1, device="cuda"), torch.as_tensor(i2, device="cuda")
    n, c, h, w = i1.shape
    D = 2 * d + 1

    def corr(a, b):
        bp = torch.nn.functional.pad(b, (d,) * 4)
        out = torch.empty((n, h, w, D, D), dtype=a.dtype, device=a.device)
        for dy in range(D):
            for dx in range(D):
                out[:, :, :, dy, dx] = (a * bp[:, :, dy:dy + h, dx:dx + w]).sum(1)
        return out

    peers = {"torch ops (121 shifted products)": lambda: corr(t1, t2)}
    return peers, (cp.asarray(corr(t1.double(), t2.double())),)


# ---- rows -------------------------------------------------------------------------------------

def rows(quick=False):
    """(key, label, kind, builder) for every benchmark row; kind selects the target."""
    out = []
    for k, s in ((3, 1), (9, 1), (3, 2), (9, 2)):
        out.append((f"conv_{k}+{s}", f"conv fprop N16 C32 M32 128x128, k{k} s{s} (Table V)",
                    "tableV", ("conv", dict(n=16, c=32, h=128, w=128, m=32, k=k, stride=s,
                                            padding=k // 2))))
    out.append(("ece408", "ECE408 layer B10000 C1 M50 28x28 K5", "ece408",
                ("conv", dict(n=10000, c=1, h=28, w=28, m=50, k=5, stride=1, padding=0))))
    out.append(("alexnet_conv1", "AlexNet CONV1 N32 (3->96, 227x227, k11 s4)", "conv",
                ("conv", dict(n=32, c=3, h=227, w=227, m=96, k=11, stride=4, padding=0))))
    out.append(("vgg_conv3_1", "VGG conv3_1 N16 (128->256, 56x56, k3)", "conv",
                ("conv", dict(n=16, c=128, h=56, w=56, m=256, k=3, stride=1, padding=1))))
    out.append(("gemm", "GEMM 4096^3", "gemm", ("gemm", dict(n=4096))))
    out.append(("filter3x3", "3x3 filter 2048^2", "vision", ("filter3x3", dict(n=2048))))
    out.append(("separable_3", "separable filter k=3, 4096^2 (faster of 1 and 2 problems)",
                "vision",
                ("separable", dict(n=4096, k=3))))
    out.append(("separable_31", "separable filter k=31 (k=30 is even; 'same' needs odd k), "
                "4096^2 (faster of 1 and 2 problems)", "vision",
                ("separable", dict(n=4096, k=31))))
    out.append(("integral", "integral image 4096^2 (blocked scans, 6 or 10 problems)", "vision",
                ("integral", dict(n=4096))))
    out.append(("motion", "motion estimation 720p, 8x8 blocks, +-16 (SAD volume)", "vision",
                ("motion", dict(h=720, w=1280, block=8, search=16))))
    out.append(("bilateral", "bilateral filter 2048^2, 9x9", "vision",
                ("bilateral", dict(n=2048, radius=4))))
    out.append(("correlation", "FlowNet correlation N8 C256 64x64 d=5 (11x11)", "vision",
                ("correlation", dict(n=8, c=256, h=64, w=64, d=5))))
    dense = [r for r in out if r[3][0] in ("conv", "gemm")]
    for prec in PRECISIONS_TC:
        for key, label, _, (kind, params) in dense:
            out.append((f"{key}@{prec}", f"{label} [{prec}]", "tc",
                        (kind, dict(params, precision=prec))))
    if quick:
        out = [r for r in out if r[0] in ("conv_3+1", "ece408", "filter3x3", "separable_31",
                                          "bilateral", "motion", "conv_3+1@fp16", "gemm@tf32")]
    return out


PRECISIONS_TC = ("tf32", "fp16", "bf16")
#: Relative error against float64 a tensor-core row must stay under (operands rounded).
TC_TOL = {"tf32": 3e-3, "fp16": 3e-3, "bf16": 2e-2}


def fixed_rows():
    """Quantized layers in MERIT-z fixed point (int16): (key, label, problem factory, shift)."""
    return [
        ("q_conv", "conv N1 C32 M32 96x96 k3 (int16, shift 8)",
         lambda: W.conv2d(1, 32, 96, 96, 32, 3, padding=1), 8),
        ("q_conv_relu", "conv + ReLU N2 C16 M32 48x48 k5 s2",
         lambda: W.conv_relu(2, 16, 48, 48, 32, 5, stride=2, padding=2), 10),
        ("q_residual", "residual conv N2 C16 M16 48x48 k3 + ReLU",
         lambda: W.residual(2, 16, 48, 48, 16, 3, padding=1), 9),
        ("q_depthwise", "depthwise N4 C64 56x56 k3 s2",
         lambda: W.depthwise(4, 64, 56, 56, 3, stride=2, padding=1), 6),
        ("q_gemm", "GEMM 384 x 256 x 512", lambda: W.gemm(384, 256, 512), 12),
        ("q_max_pool", "max pool N4 C64 56x56 k3 s2",
         lambda: W.max_pool2d(4, 64, 56, 56, 3, stride=2, padding=1), 0),
        ("q_avg_pool", "avg pool N4 C64 56x56 k2", lambda: W.avg_pool2d(4, 64, 56, 56, 2), 0),
        ("q_separable", "separable filter k=7 256^2", lambda: W.separable_filter(256, 256, 7), 6),
        ("q_motion", "motion estimation 128x128, 8x8 blocks +-4, best match",
         lambda: W.motion_estimation(128, 128, block=8, search=4, best=True), 0),
        ("q_bilateral", "bilateral 128^2 5x5 (lookup table)",
         lambda: W.bilateral(128, 128, sigma_s=1.0, sigma_r=0.25, radius=2), 0),
        ("q_correlation", "correlation C64 32x32 d=3", lambda: W.correlation(64, 32, 32, 3), 8),
    ]


def random_rows(seed, count=8):
    """Rows of shapes nobody tuned for, drawn from ``seed``: odd sizes, padding that is not a
    multiple of any tile, strides with dilations, 1x1 and depthwise convolutions, batch 1,
    square GEMMs of sizes that are not powers of two and skinny GEMMs (fp32, TF32 off)."""
    rng = np.random.default_rng(seed)

    def odd(lo, hi):
        return int(rng.integers(lo, hi)) | 1

    kinds = ("conv", "conv_s2_dil", "conv_1x1", "depthwise_s2", "gemm_odd", "gemm_skinny",
             "conv_batch1", "depthwise_s1")
    out = []
    for i in range(count):
        kind = kinds[i % len(kinds)]
        if kind.startswith("gemm"):
            if kind == "gemm_odd":
                m, n, k = (odd(700, 3000) for _ in range(3))
            else:
                m, n, k = int(rng.integers(1, 17)), odd(1000, 8000), odd(1000, 8000)
            params = dict(n=m, cols=n, k=k)
            label = f"random GEMM {m}x{n}x{k}"
            out.append((f"rand{i}_{kind}", label, "random", ("gemm", params)))
            continue
        n = 1 if kind == "conv_batch1" else int(rng.choice((2, 4, 8, 16)))
        h, w = odd(17, 120), odd(17, 120)
        k = 1 if kind == "conv_1x1" else int(rng.choice((3, 5, 7)))
        stride = {"conv_s2_dil": 2, "depthwise_s2": 2, "depthwise_s1": 1}.get(
            kind, int(rng.choice((1, 2))))
        dil = 2 if kind == "conv_s2_dil" else 1
        pad = int(rng.integers(0, (k // 2) * dil + 1))
        if kind.startswith("depthwise"):
            c = int(rng.integers(16, 257))
            m, groups = c, c
        else:
            c, m, groups = odd(3, 200), odd(8, 260), 1
        params = dict(n=n, c=c, h=h, w=w, m=m, k=k, stride=stride, padding=pad, dilation=dil,
                      groups=groups)
        label = (f"random {kind} N{n} C{c} M{m} {h}x{w} k{k} s{stride} p{pad} d{dil}"
                 + (f" g{groups}" if groups > 1 else ""))
        out.append((f"rand{i}_{kind}", label, "random", ("conv", params)))
    return out


def _conv_args(a):
    return dict(stride=a["stride"], padding=a["padding"], dilation=a.get("dilation", 1),
                groups=a.get("groups", 1))


def problem_of(kind, a):
    """The :class:`merit.Problem` of a row (kind and parameters as :func:`rows` gives them);
    None for the integral image (several problems)."""
    if kind == "conv":
        return W.conv2d(a["n"], a["c"], a["h"], a["w"], a["m"], a["k"], **_conv_args(a))
    if kind == "gemm":
        return W.gemm(a["n"], a.get("cols", a["n"]), a.get("k", a["n"]))
    if kind == "filter3x3":
        return W.filter3x3(a["n"], a["n"])
    if kind == "separable":
        return W.separable_filter(a["n"], a["n"], a["k"])
    if kind == "motion":
        return W.motion_estimation(a["h"], a["w"], block=a["block"], search=a["search"])
    if kind == "bilateral":
        return W.bilateral(a["n"], a["n"], sigma_s=a["radius"] / 2, sigma_r=0.5,
                           radius=a["radius"])
    if kind == "correlation":
        return correlation_batched(a["n"], a["c"], a["h"], a["w"], a["d"])
    if kind == "integral":
        return None
    raise ValueError(kind)


def build(kind, a, rng):
    """(problem or None, cupy arrays, peers, references, bytes, steps, ours-factory)."""
    import cupy as cp

    prec = a.get("precision", "fp32")
    prob = problem_of(kind, a)
    if prob is not None:
        arrays = [cp.asarray(x) for x in prob.random_inputs(rng)]
    if kind == "conv":
        if prec == "fp32":
            peers, refs = _conv_peers(prob, arrays, **_conv_args(a))
        else:
            peers, refs = _tc_conv_peers(prob, arrays, prec, **_conv_args(a))
    elif kind == "gemm":
        if prec == "fp32":
            peers, refs = _gemm_peers(prob, arrays)
        else:
            peers, refs = _tc_gemm_peers(prob, arrays, prec)
    elif kind == "filter3x3":
        peers, refs = _filter3x3_peers(prob, arrays)
    elif kind == "separable":
        peers, refs = _separable_peers(prob, arrays, a["k"])
    elif kind == "motion":
        peers, refs = _motion_peers(prob, arrays, a["block"], a["search"])
    elif kind == "bilateral":
        peers, refs = _bilateral_peers(prob, arrays, 0.5, a["radius"])
    elif kind == "correlation":
        peers, refs = _correlation_peers(prob, arrays, a["d"])
    elif kind == "integral":
        image = cp.asarray(rng.standard_normal((a["n"], a["n"])).astype(np.float32))
        peers, refs = _integral_peers(image)
        return None, [image], peers, refs, 2 * image.nbytes, None
    else:
        raise ValueError(kind)
    nbytes = sum(int(np.prod(t.shape)) * 4 for t in prob.tensors)
    nbytes += sum(int(np.prod(o.shape)) * 4 for o in prob.outputs)
    steps = prob.steps
    if kind == "separable":   # the filter's least work: two 1-D passes of k taps
        steps = 2 * a["k"] * a["n"] * a["n"]
    return prob, arrays, peers, refs, nbytes, steps


def _relerr(got, want):
    import cupy as cp

    got = cp.asarray(got, dtype=cp.float64)
    want = cp.asarray(want, dtype=cp.float64)
    if got.shape != want.shape:
        return float("inf")
    if bool(cp.isnan(got).any()):
        return float("nan")
    return float(cp.linalg.norm(got - want) / cp.maximum(cp.linalg.norm(want), 1e-30))


def ceilings(time_launch):
    """Measured copy bandwidth (bytes read + written per s) and SGEMM rate (flop/s, TF32 off)."""
    import cupy as cp

    torch = _torch()
    src = cp.ones(1 << 28, dtype=cp.float32)
    dst = cp.empty_like(src)
    ms = time_launch(lambda: cp.copyto(dst, src))
    bw = 2 * src.nbytes / (ms * 1e-3)
    n = 8192
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    ms = time_launch(lambda: a @ b)
    sgemm = 2 * n ** 3 / (ms * 1e-3)
    return bw, sgemm


def tc_ceilings(time_launch):
    """Measured cuBLAS rates (flop/s) of an 8192^3 matrix product per tensor-core precision."""
    torch = _torch()
    n = 8192
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    rates = {}
    for prec in PRECISIONS_TC:
        call = _tc_peer(torch, prec, lambda x, y: x @ y, a, b)
        rates[prec] = 2 * n ** 3 / (time_launch(call) * 1e-3)
    return rates


_SPECS = {}


def _spec_of_row(kind, params):
    """A row's specialization as ``merit.gpu.prepare`` makes it from the bench's arrays (half
    arrays for FP16 / BF16 rows), memoized in this process."""
    from merit.gpu.spec import OPERAND_DTYPES, spec_of

    key = (kind, json.dumps(params, sort_keys=True))
    if key not in _SPECS:
        prec = params.get("precision", "fp32")
        _SPECS[key] = spec_of(problem_of(kind, params), "float32", prec,
                              operands=OPERAND_DTYPES.get(prec, "float32"))
    return _SPECS[key]


def _rank_row(kind, params, device):
    """``(specialization key, tiles)``: a row's first candidates for the autotuner (a worker of
    :func:`_prefetch`)."""
    from merit.gpu import candidates

    spec = _spec_of_row(kind, params)
    return spec.key(), tuple(candidates(spec, device)[1])


def _compile_tile(kind, params, tile):
    """Compile one candidate of a row in this process (a worker of :func:`_prefetch`): its
    cubin lands in the shared folder or CuPy's kernel cache; a failure is left to the
    autotuner, which compiles it again and skips it."""
    from merit.gpu import runtime

    try:
        runtime.compiled(_spec_of_row(kind, params), tile)
    except Exception:  # noqa: BLE001 - reported by the autotuner
        pass


def _nice():
    os.nice(10)   # the timing process goes first


def _prefetch(todo, device, jobs):
    """Worker processes ranking the rows' first candidates, then compiling them one candidate a
    task, in row order, ahead of the timing loop: ``(pool, ready)``, ``ready(key)`` waiting for
    a row's list and compiles and returning the list (None: not prefetched).  The kernels reach
    the timing process through the shared cubin folder (``$MERIT_GPU_CUBINS``) and CuPy's kernel
    cache, the lists through :func:`merit.gpu.seed`; the timing is unchanged (what the
    autotuner would have ranked and compiled itself, sooner, by processes of lower priority)."""
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor, wait

    if jobs < 1:
        return None, lambda key: None
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_nice,
                               mp_context=multiprocessing.get_context("spawn"))
    todo = [(key, kind, params) for key, kind, params in todo if kind != "integral"]
    ranked = {key: pool.submit(_rank_row, kind, params, device) for key, kind, params in todo}
    compiles = {key: threading.Event() for key, _, _ in todo}
    futures = {}

    def feed():   # each row's compiles queued as its list comes, in row order
        for key, kind, params in todo:
            try:
                _, tiles = ranked[key].result()
                futures[key] = [pool.submit(_compile_tile, kind, params, t) for t in tiles]
            except Exception:  # noqa: BLE001 - pool shut down, or the ranking failed
                futures[key] = []
            compiles[key].set()

    threading.Thread(target=feed, daemon=True).start()

    def ready(key):
        if key not in ranked:
            return None
        result = ranked[key].result()
        compiles[key].wait()
        wait(futures[key])
        return result

    return pool, ready


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.gpu",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/results", help="folder for gpu.json and gpu.md")
    ap.add_argument("--only", default="", help="comma-separated row keys")
    ap.add_argument("--quick", action="store_true", help="a few representative rows")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed of the random shapes (default: drawn per run, printed)")
    ap.add_argument("--random", type=int, default=8, help="number of random shapes")
    ap.add_argument("--update", action="store_true",
                    help="re-measure only the --only rows and replace them in the --out folder's "
                         "gpu.json / gpu.md (the page names the rows and when they were re-run)")
    ap.add_argument("--stop-after", type=float, default=None, metavar="S",
                    help="start no row after S seconds: the files then hold the rows measured so "
                         "far and name the rest, which --resume measures in a later process")
    ap.add_argument("--resume", action="store_true",
                    help="measure the rows a run stopped by --stop-after left (the --out "
                         "folder's gpu.json) and add them to its files: one run in several calls")
    ap.add_argument("--jobs", type=int, default=max(0, min(12, (os.cpu_count() or 4) - 4)),
                    help="worker processes ranking and compiling later rows' candidates while "
                         "a row is timed (0: none; the numbers do not depend on it)")
    args = ap.parse_args(argv)
    if args.update and not args.only:
        ap.error("--update re-measures the rows named by --only")
    if args.resume and args.update:
        ap.error("--resume continues a run; --update re-measures rows of a finished one")
    started = time.time()
    outdir = Path(args.out)
    before = None
    if args.resume:
        before = json.loads((outdir / "gpu.json").read_text())
        if not before["meta"].get("pending"):
            ap.error(f"{outdir / 'gpu.json'} holds a finished run: nothing to resume")
        if args.seed is not None and args.seed != before["meta"]["seed"]:
            ap.error("--resume continues the run's own seed")
        args.seed = before["meta"]["seed"]
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 10**6)
    print(f"random shapes: seed {seed}", flush=True)

    import cupy as cp

    from merit.gpu import finals as tuned
    from merit.gpu import prepare
    from merit.gpu import seed as seed_tiles  # ``seed`` is the run's random seed here
    from merit.gpu.runtime import TileCache, device_key, time_launch

    outdir.mkdir(parents=True, exist_ok=True)
    cache = TileCache(os.environ.get("MERIT_GPU_CACHE") or outdir / "gpu-tiles.json")
    _, device = device_key()
    only = set(filter(None, args.only.split(",")))
    if before is not None:
        only = set(before["meta"]["pending"])
    table = [r for r in rows(args.quick) + random_rows(seed, args.random)
             if not only or r[0] in only]
    fixed = [r for r in fixed_rows() if not only or r[0] in only]
    pending = [r[0] for r in table + fixed]
    shown = [a for a in (argv if argv is not None else sys.argv[1:])]
    for flag, n in (("--out", 2), ("--stop-after", 2), ("--jobs", 2), ("--resume", 1)):
        if flag in shown:   # where the files go and how the run is split do not change numbers
            i = shown.index(flag)
            del shown[i:i + n]
    if "--seed" not in shown:
        shown += ["--seed", str(seed)]
    results = []

    def write(final):
        """The files, after every row: a run stopped or killed keeps the rows it measured."""
        call = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"),
                "device": device, "wall_s": round(time.time() - started, 1),
                "rows": len(results), "jobs": args.jobs, "copy_bandwidth_Bps": bw,
                "sgemm_flops": sgemm, "tc_flops": tc_rates}
        meta = {"command": " ".join(["python -m bench.gpu"] + shown),
                "seed": seed, "wall_s": call["wall_s"], "date": call["date"],
                "device": device, "copy_bandwidth_Bps": bw, "sgemm_flops": sgemm,
                "tc_flops": tc_rates,
                "cupy": cp.__version__, "torch": _torch().__version__,
                "python": platform.python_version(), "tolerance": TOL,
                "pending": pending, "calls": [call]}
        out = results
        if before is not None:   # the run's earlier calls: their rows, ceilings and date stay
            meta = dict(before["meta"], pending=pending,
                        calls=before["meta"].get("calls", []) + [call])
            meta["wall_s"] = round(sum(c["wall_s"] for c in meta["calls"]), 1)
            order = [r[0] for r in rows(args.quick) + random_rows(seed, args.random)
                     + fixed_rows()]
            new = {r["key"]: r for r in before["rows"] + results}
            out = [new[k] for k in order if k in new]
        if args.update:
            old = json.loads((outdir / "gpu.json").read_text())
            new = {r["key"]: r for r in results}
            out = [new.pop(r["key"], r) for r in old["rows"]] + list(new.values())
            upd = {k: meta[k] for k in ("command", "date", "device", "wall_s", "tc_flops")}
            upd["keys"] = sorted(only)
            meta = dict(old["meta"], updated=old["meta"].get("updated", []) + [upd])
            if not final:
                return
        if not meta.get("pending"):
            meta.pop("pending", None)
        (outdir / "gpu.json").write_text(json.dumps({"meta": meta, "rows": out}, indent=1))
        (outdir / "gpu.md").write_text(report(meta, out))
        return meta, out

    def stop():
        return args.stop_after is not None and time.time() - started > args.stop_after

    if args.jobs and not os.environ.get("MERIT_GPU_CUBINS"):
        import tempfile

        os.environ["MERIT_GPU_CUBINS"] = tempfile.mkdtemp(prefix="merit-cubins-")
    pool, ready = _prefetch([(key, kind, params) for key, _, _, (kind, params) in table],
                            device, args.jobs)
    bw, sgemm = ceilings(time_launch)
    tc_rates = tc_ceilings(time_launch)
    print(f"device {device}: copy {bw / 1e12:.2f} TB/s, SGEMM {sgemm / 1e12:.1f} TFLOP/s",
          flush=True)
    for key, label, target, (kind, params) in table:
        if stop():
            break
        rng = row_rng(key)
        t0 = time.time()
        row = {"key": key, "label": label, "target": target}
        f0 = len(tuned)
        try:
            made = ready(key)
            if made is not None:
                seed_tiles(made[0], device, made[1])   # (specialization key, tiles)
                row["precompiled_s"] = round(time.time() - t0, 1)   # waited for the workers
        except Exception as exc:  # noqa: BLE001 - the autotuner ranks and compiles itself
            row["precompile_error"] = f"{type(exc).__name__}: {exc}"[:300]
        try:
            prob, arrays, peers, refs, nbytes, steps = build(kind, params, rng)
            if prob is None:
                # the scan blocks B (and B2, the carries' own blocked scan) are tile sizes of
                # this formulation: time each, keep the best
                chains = {}
                for b, b2 in SCAN_BLOCKS:
                    go_b, res_b, gos = integral_chain(params["n"], params["n"], arrays[0], cache,
                                                      block=b, block2=b2)
                    name = f"{b}x{b2}" if b2 else f"{b}"
                    chains[name] = (time_launch(go_b), go_b, res_b, len(gos))
                row["block_ms"] = {b: c[0] for b, c in chains.items()}
                best_b = min(chains, key=lambda b: chains[b][0])
                _, go, result, nk = chains[best_b]

                def finish(result=result):
                    return (result,)

                row["tile"] = f"{nk} kernels, scan block {best_b} (autotuned each)"
                poison = [result]
            else:
                prec = params.get("precision", "fp32")
                row["precision"] = prec
                ours = arrays
                if prec in ("fp16", "bf16"):   # the peers' half tensors, cast outside the timing
                    ours = half_arrays(arrays, prec)
                    row["operands"] = "float16" if prec == "fp16" else "bfloat16"
                plan, go, outs = prepare(prob, *ours, cache=cache, precision=prec)
                row["tile"] = plan.tile.label()
                row["kernel"] = plan.name
                poison = list(outs)

                def finish(prob=prob, outs=outs):
                    return tuple(o.finish(r) for o, r in zip(prob.outputs, outs, strict=True))
            for o in poison:
                o.fill(cp.nan)
            go()
            cp.cuda.Device().synchronize()
            errs = [_relerr(g, r) for g, r in zip(finish(), refs, strict=True)]
            row["rel_err"] = max(errs)
            tol = TC_TOL.get(params.get("precision"), TOL)
            row["ok"] = all(e < tol for e in errs)
            row["ours_ms"] = time_launch(go)
            if target == "tc":   # the peer's own accuracy in the same precision
                (peer_fn,) = peers.values()
                row["peer_rel_err"] = _relerr(peer_fn().float(), refs[0])
            if kind == "separable":
                # the same filter as two 1-D problems; "ours" is the faster formulation
                n, k = params["n"], params["k"]
                go2, res2 = separable_chain(n, n, k, *arrays, cache)
                res2.fill(cp.nan)
                go2()
                row["two_pass_rel_err"] = _relerr(res2, refs[0])
                row["two_pass_ms"] = time_launch(go2)
                row["one_problem_ms"] = row["ours_ms"]
                if row["two_pass_ms"] < row["ours_ms"]:
                    row["ours_ms"] = row["two_pass_ms"]
                    row["rel_err"] = max(row["rel_err"], row["two_pass_rel_err"])
                    row["ok"] = row["ok"] and row["two_pass_rel_err"] < TOL
                    row["tile"] = f"two 1-D problems (faster than one problem, {row['tile']})"
            timed = {name: time_peer(name, fn, time_launch) for name, fn in peers.items()}
            row["peers_ms"] = {name: ms for name, (ms, _) in timed.items()}
            row["peer_tries_ms"] = {name: tries for name, (_, tries) in timed.items() if tries}
            flops = 2 * steps if steps else 0
            row["bytes"] = nbytes
            row["flops"] = flops
            rate = tc_rates.get(params.get("precision"), sgemm)
            row["floor_ms"] = max(nbytes / bw, flops / rate) * 1e3
        except Exception as exc:  # a failing row is reported, the others still run
            row["error"] = f"{type(exc).__name__}: {exc}"
        if len(tuned) > f0:   # the autotuner's finalists' rounds of this row's specializations
            row["finals"] = tuned[f0:]
        row["wall_s"] = round(time.time() - t0, 1)
        results.append(row)
        pending.remove(key)
        print(json.dumps(row), flush=True)
        write(False)
        cp.get_default_memory_pool().free_all_blocks()

    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    for key, label, make, shift in fixed:
        if stop():
            break
        f0 = len(tuned)
        results.append(_fixed_row(key, label, make, shift, row_rng(key), cache, time_launch))
        if len(tuned) > f0:
            results[-1]["finals"] = tuned[f0:]
        pending.remove(key)
        print(json.dumps(results[-1]), flush=True)
        write(False)
    meta, out = write(True)
    print(report(meta, out))
    if pending:
        print(f"stopped after {time.time() - started:.0f} s: {len(pending)} rows left for "
              f"--resume", flush=True)


def _fixed_row(key, label, make, shift, rng, cache, time_launch):
    """One fixed-point row: merit.gpu.run_fixed against the ISA interpreter, bit for bit."""
    import cupy as cp

    from merit.gpu import prepare
    from merit.gpu.fixed import random_inputs
    from merit.isa import programs

    t0 = time.time()
    row = {"key": key, "label": label, "target": "fixed", "shift": shift}
    try:
        prob = make()
        arrays = random_inputs(prob, rng)
        c0 = time.time()
        want = programs.run(prob, *arrays, shift=shift)
        row["isa_cpu_s"] = round(time.time() - c0, 2)
        want = want if isinstance(want, tuple) else (want,)
        plan, go, outs = prepare(prob, *arrays, cache=cache, fixed=shift)
        row["tile"] = plan.tile.label()
        for o in outs:
            o.fill(-(2**31) + 7)
        go()
        got = [o.finish(r).astype(cp.int16) for o, r in zip(prob.outputs, outs, strict=True)]
        row["mismatches"] = int(sum(int((cp.asnumpy(g) != w).sum())
                                    for g, w in zip(got, want, strict=True)))
        row["elements"] = int(sum(w.size for w in want))
        row["ok"] = row["mismatches"] == 0
        row["ours_ms"] = time_launch(go)
    except Exception as exc:  # a failing row is reported, the others still run
        row["error"] = f"{type(exc).__name__}: {exc}"
    row["wall_s"] = round(time.time() - t0, 1)
    return row


def _verdict(row):
    """Target check of one row: (met, text)."""
    ours = row["ours_ms"]
    peers = row["peers_ms"]
    t = row["target"]
    if t in ("tableV", "conv", "ece408", "gemm", "random"):
        need = [(">= 1.0x best peer (fp32, TF32 off)", ours <= min(peers.values()))]
    elif t == "tc":
        need = [(f">= 1.0x {next(iter(peers))}", ours <= min(peers.values()))]
    elif t == "vision":
        best = min(peers.values())
        need = [(">= 5x best peer", ours * 5 <= best),
                ("within 3x of floor", ours <= 3 * row["floor_ms"])]
    else:
        return True, "(no target)"
    return all(ok for _, ok in need), "; ".join(
        f"{n}: {'yes' if ok else 'NO'}{_unreachable(n, row)}" for n, ok in need)


def _unreachable(need, row):
    """Where a vision row's 5x asks for a time under its floor (every byte once at the copy
    rate, the flops at the SGEMM rate), the words saying so: no kernel reaches it from DRAM."""
    if not need.startswith(">= 5x"):
        return ""
    want = min(row["peers_ms"].values()) / 5
    if want >= row["floor_ms"]:
        return ""
    return f" (5x is {want:.4f} ms, under the floor {row['floor_ms']:.4f}: not reachable)"


_SECTIONS = (("fp32 (SIMT cores)", ("tableV", "conv", "ece408", "gemm", "vision")),
             ("Tensor cores: TF32, FP16, BF16 operands, fp32 sums, against cuDNN / cuBLAS in the "
              "same precision", ("tc",)),
             ("Shapes nobody tuned for (fp32, drawn from the seed)", ("random",)))


def _calls(meta):
    """The header lines of a run measured in several calls (``--stop-after``, ``--resume``), or
    stopped with rows left."""
    calls = meta.get("calls", [])
    out = []
    if len(calls) > 1:
        devices = sorted({c["device"] for c in calls})
        out.append(f"Measured in {len(calls)} calls of the command, one process each (the run "
                   f"does not fit one 10-minute call; the later calls with `--resume` measure "
                   f"the rows the earlier left, on a fresh {' / '.join(devices)}: autotuning "
                   f"included, each row's data seeded by its key): "
                   + "; ".join(f"{c['date']}, {c['rows']} rows, {c['wall_s']:.0f} s"
                               for c in calls)
                   + "; the ceilings above are the first call's, each row's floor is from "
                   "its own call's  ")
    if meta.get("pending"):
        out.append(f"Stopped with {len(meta['pending'])} rows not yet measured "
                   f"({', '.join(meta['pending'])}): `--resume` measures them  ")
    return out


def report(meta, results):
    lines = ["# merit.gpu benchmark", "",
             f"Command: `{meta['command']}` (run from the repository root with `PYTHONPATH=sw`)  ",
             f"Date: {meta['date']}  ",
             f"Device: {meta['device']}; measured copy bandwidth "
             f"{meta['copy_bandwidth_Bps'] / 1e12:.2f} TB/s (read + write), SGEMM "
             f"{meta['sgemm_flops'] / 1e12:.1f} TFLOP/s (fp32, TF32 off); cuBLAS 8192^3 "
             + ", ".join(f"{k} {v / 1e12:.0f}" for k, v in meta["tc_flops"].items())
             + " TFLOP/s  ",
             f"GPU time used: {meta['wall_s']:.0f} s of wall-clock time on the device for the "
             f"whole run (compiling, autotuning, checking, timing every peer"
             + (f"; {jobs} worker processes compiling the autotuner's first candidates ahead"
                if (jobs := max((c.get("jobs", 0) for c in meta.get("calls", [])), default=0))
                else "")
             + f"); random shapes drawn from seed {meta['seed']}  ",
             *_calls(meta),
             f"CuPy {meta['cupy']}, torch {meta['torch']}; every row checked against a float64 "
             f"reference (fp32 rows: relative error < {meta['tolerance']:g}; tensor-core rows: "
             f"< {', '.join(f'{k} {v:g}' for k, v in TC_TOL.items())}, the peer's error beside "
             f"ours), outputs poisoned with NaN.", "",
             "Times are milliseconds per call (median of 5 batches of back-to-back launches). "
             "Ratios > 1 mean merit.gpu is faster."]
    for u in meta.get("updated", []):
        lines += ["", f"Re-measured {u['date']} with `{u['command']}` "
                      f"({u['wall_s']:.0f} s on the device, {u['device']}): the "
                      f"{len(u['keys'])} rows its `--only` names; every other row is from the "
                      f"run above."]
    for title, targets in _SECTIONS:
        sect = [r for r in results if r["target"] in targets and r["target"] != "fixed"]
        if not sect:
            continue
        lines += ["", f"## {title}", "",
                  "| workload | ours ms | rel. err | peers (ms, peer / ours) | best peer / ours | "
                  "floor ms | ours / floor | target |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in sect:
            if "error" in r:
                lines.append(f"| {r['label']} | error: {r['error']} | | | | | | NO |")
                continue
            peers = r["peers_ms"]
            best = min(peers, key=peers.get)
            met, text = _verdict(r)
            if not r["ok"]:
                met, text = False, "WRONG RESULT; " + text
            ratios = ", ".join(f"{n} {v:.3f} ({v / r['ours_ms']:.2f}x)" for n, v in peers.items())
            err = f"{r['rel_err']:.1e}"
            if "peer_rel_err" in r:
                err += f" (peer {r['peer_rel_err']:.1e})"
            lines.append(
                f"| {r['label']} | {r['ours_ms']:.3f} | {err} | {ratios} | "
                f"{peers[best] / r['ours_ms']:.2f} | {r['floor_ms']:.3f} | "
                f"{r['ours_ms'] / r['floor_ms']:.1f} | {'met' if met else 'MISSED'}: {text} |")
        half = [r["key"] for r in sect if r.get("operands")]
        if half:
            lines += ["", f"Operands in half precision for merit.gpu too on {len(half)} rows "
                      f"({', '.join(half)}): it gets the float16 / bfloat16 tensors the peers "
                      f"get (cast once from the float32 inputs, outside the timing); the other "
                      f"rows of this section gave it float32 arrays (rounded inside its kernel)."]
    fixed = [r for r in results if r["target"] == "fixed"]
    if fixed:
        lines += ["", "## Fixed point: MERIT-z programs on the GPU, bit for bit against the "
                  "golden ISA model", "",
                  "int16 inputs drawn over the whole int16 range, the layer's MERIT-z program "
                  "(merit.isa.programs) translated into the kernel (merit.gpu.run_fixed); every "
                  "output compared with the ISA interpreter's.", "",
                  "| workload | shift | ours ms | outputs | mismatches | ISA interpreter (CPU) s "
                  "| target |", "|---|---|---|---|---|---|---|"]
        for r in fixed:
            if "error" in r:
                lines.append(f"| {r['label']} | {r['shift']} | error: {r['error']} | | | | NO |")
                continue
            lines.append(f"| {r['label']} | {r['shift']} | {r['ours_ms']:.3f} | "
                         f"{r['elements']} | {r['mismatches']} | {r['isa_cpu_s']} | "
                         f"{'met' if r['ok'] else 'MISSED'}: bit-identical |")
    cudnn = [r for r in results if any(n.startswith("cuDNN") for n in r.get("peers_ms", {}))]
    tried = [r["key"] for r in cudnn if r.get("peer_tries_ms")]
    if tried:
        rest = [r["key"] for r in cudnn if not r.get("peer_tries_ms")]
        lines += ["", f"cuDNN peers: the fastest of {PEER_TRIES} algorithm choices (benchmark "
                  f"mode, each choice made afresh in a new thread, whose first call times the "
                  f"candidates) on {len(tried)} rows ({', '.join(tried)})"
                  + (f"; on the other {len(rest)} rows ({', '.join(rest)}) the one choice "
                     f"cuDNN made in the bench's process (measured before this rule)."
                     if rest else ".")]
    done = [r for r in results if "error" not in r and r["target"] not in ("vision", "fixed")]
    met = sum(1 for r in done if r["ok"] and _verdict(r)[0])
    lines += ["", f"Convolution / GEMM rows at >= 1.0x their best peer: {met} of {len(done)}.",
              "", "Floors: bytes = every tensor read once + every output written once; "
              "flops = 2 per inner-product step at the measured cuBLAS rate of the row's precision "
              "(SGEMM for fp32) (for the separable filter, 2 x 2k per pixel: "
              "two 1-D passes; for the integral image only the bytes count).  A step of SAD "
              "or of the bilateral filter (exp, division) costs several instructions, so "
              "their floors are not reachable; see docs/gpu.md."] + _five_note(results) \
        + _wino_note(results) + [
              *_flat_note(results), "", "Tiles chosen by the autotuner:", ""]
    for r in results:
        if "tile" in r:
            lines.append(f"- {r['key']}: `{r['tile']}`")
    return "\n".join(lines + _finals_lines(results)) + "\n"


def _five_note(results):
    """The page's line on the vision rows whose 5x target lies under their floor."""
    rows = [r for r in results if r.get("target") == "vision" and "error" not in r
            and r.get("peers_ms") and _unreachable(">= 5x", r)]
    if not rows:
        return []

    def one(r):
        best = min(r["peers_ms"].values())
        return (f"{r['key']} (best peer {best:.4f} ms, 5x {best / 5:.4f}, floor "
                f"{r['floor_ms']:.4f}, ours {r['ours_ms']:.4f} = "
                f"{r['ours_ms'] / r['floor_ms']:.2f}x the floor)")

    return ["", "5x targets under the floor: " + "; ".join(one(r) for r in rows)
            + ": the target asks for less time than moving the row's bytes once at the "
            "measured copy rate takes, so no kernel meets it from DRAM (a launch repeated on "
            "an input that stays in the L2 cache can run under the floor)."]


def _wino_note(results):
    """The floors' caveat for rows whose tile runs Winograd's form (a label ending ``_wn<m>``,
    ``merit.gpu.wino``): its batched product does fewer multiply-adds than the direct sum the
    floor counts."""
    rows = [(r["key"], r["tile"]) for r in results if "_wn" in r.get("tile", "")]
    if not rows:
        return []
    many = "rows" if len(rows) > 1 else "row"
    run = "run" if len(rows) > 1 else "runs"
    return [f"Winograd: {len(rows)} {many} ({', '.join(k for k, _ in rows)}) {run} F(m x m, 3 x 3) "
            "(tile label ending `_wn<m>`, merit.gpu.wino): the weights' and the image tiles' "
            "transforms, a batched product of (m + 2)^2 / m^2 multiply-adds per output and "
            "channel (4 for m = 2) instead of the direct sum's 9, and the output transform, all "
            "in the timed launch, in fp32; their floors count the direct sum's steps, so their "
            "time can fall under it."]


def _flat_note(results):
    """The page's line on rows whose tile runs a 1 x 1 convolution as its matrix product (a
    label ending ``_fl``, ``merit.gpu.flat``)."""
    rows = [r["key"] for r in results if r.get("tile", "").endswith("_fl")]
    if not rows:
        return []
    many = "rows" if len(rows) > 1 else "row"
    run = "run" if len(rows) > 1 else "runs"
    padded = [r["key"] for r in results if r.get("tile", "").endswith("_pr_fl")]
    pads = (f"; {', '.join(padded)} with the product's operands copied first with their rows "
            "padded to a multiple of 4 words (`_pr_fl`, in the timed launch)") if padded else ""
    ragged = [r["key"] for r in results if re.search(r"_pr_rg\d_fl$", r.get("tile", ""))]
    pads += (f"; {', '.join(ragged)} with the padded form's kernel reading the operands' rows "
             "as they are, no copies (`_pr_rg<n>_fl`, merit.gpu.Tile.ragged)") if ragged else ""
    return [f"Product form: {len(rows)} {many} ({', '.join(rows)}) {run} a 1 x 1 convolution as "
            "the matrix product (M, C) @ (N, C, H W) it is (tile label ending `_fl`, "
            "merit.gpu.flat): the same multiply-adds, tiled as a GEMM over views of the same "
            f"arrays{pads}."]


def _finals_lines(results):
    """The page's lines on the autotuner's finalists' rounds (``merit.gpu.pick``): how many
    specializations had finalists, the time their turns took, and each pick they changed."""
    from merit.gpu import FINAL_MARGIN, FINAL_ROUNDS

    recs = [(r["key"], f) for r in results for f in r.get("finals", ())]
    if not recs:
        return []
    held = [(k, f) for k, f in recs if f["finalists"]]
    moved = [(k, f) for k, f in held if f["pick_rank"]]
    secs = sum(f.get("turns_s", 0) for _, f in held)
    lines = ["", f"Finalists' rounds (the tiles timed within {FINAL_MARGIN:.0%} of the fastest, "
             f"timed again in turns, {FINAL_ROUNDS} rounds, medians): {len(held)} of "
             f"{len(recs)} specializations tuned had finalists, {secs:.1f} s of turns in all; "
             f"the pick differs from the first rounds' fastest on {len(moved)}:", ""]
    for k, f in moved:
        a, b = f["finalists"][0], f["finalists"][f["pick_rank"]]
        lines.append(f"- {k}: `{a[0]}` {a[1]:.4f} ms once, {a[2]:.4f} in turns -> `{b[0]}` "
                     f"{b[1]:.4f} once, {b[2]:.4f} in turns")
    return lines


if __name__ == "__main__":
    main()
