"""The streaming form (``Tile.gemv``) without a GPU: which problems it takes, which tiles it
refuses, and the generated kernel's reads and sums played through in NumPy (the load offsets,
the pieces' guards and the sums' indices parsed from the source) against the product."""

import dataclasses
import re

import numpy as np
import pytest

from merit import workloads as W
from merit.gpu import gemv, kernel_source
from merit.gpu.spec import spec_of
from merit.gpu.tiling import GEMV_TUNED, H100, check_tile, rank


def _spec(m, n, k):
    return spec_of(W.gemm(m, n, k), "float32")


def test_roles_take_few_row_products_only():
    r = gemv.roles(_spec(1, 4065, 5543))
    assert (r["m"], r["v"], r["n"], r["K"], r["L"], r["rows"]) == (1, 0, 4065, 5543, 4065,
                                                                   ((0, 0),))
    assert len(gemv.roles(_spec(4, 100, 30))["rows"]) == 4
    assert gemv.roles(_spec(gemv.ROWS + 1, 100, 30)) is None     # reuse enough to tile
    assert gemv.roles(spec_of(W.conv2d(2, 8, 9, 9, 4, 3, stride=1, padding=1), "float32")) is None
    assert gemv.roles(spec_of(W.gemm(1, 40, 30), "int32")) is None


def test_candidates_only_where_the_form_applies():
    assert GEMV_TUNED
    skinny = rank(_spec(1, 4065, 5543), count=12)
    assert [t for t in skinny if t.gemv] == gemv.candidates(_spec(1, 4065, 5543), H100)
    assert not any(t.gemv for t in rank(_spec(64, 96, 80), count=12))
    assert rank(_spec(1, 4065, 5543), count=1)[0].gemv == 0   # the model's choice stays


@pytest.mark.parametrize("fields, why", [
    ({"gemv": 6}, "4, 8, 12 or 16"),
    ({"threads": (1, 96), "kgroups": 2}, "multiple of 32"),
    ({"regs": (1, 2)}, "regs all 1"),
    ({"chunk": 4}, "chunk must equal"),
    ({"cluster": 3}, "cluster"),
])
def test_refused_tiles(fields, why):
    spec = _spec(1, 4065, 5543)
    good = gemv.tile_for(spec, 256, 8, 8)
    bad = dataclasses.replace(good, **fields)
    assert why in gemv.fits(spec, bad)
    with pytest.raises(ValueError):
        check_tile(spec, bad)


def _play(spec, tile, A, B):
    """The product as the kernel of ``tile`` computes it, played from its source: each slot's 7
    sums over every step (its 16-byte loads' offsets and guards, its products' sums and vector
    reads parsed from the first branch of a step), then column ``x`` = slot ``x / 4``'s sum
    ``x % 4 + 3`` + slot ``x / 4 + 1``'s sum ``x % 4 - 1`` (``x % 4 > 0``)."""
    code = gemv.source(spec, tile)[1]
    r = gemv.roles(spec)
    U, K, L, n = tile.gemv, r["K"], r["L"], r["n"]
    C = tile.threads[r["j"]] // tile.kgroups
    nbx, steps, _ = gemv.geometry(spec, tile)
    assert re.search(rf"const int q = bx \* {C - 1} \+ c;", code)
    assert "part[0][i][e + 3][c] + (e ? part[0][i][e - 1][c + 1] : 0.f)" in code
    assert nbx * (C - 1) >= (n - 1) // 4 + 1            # every column has its block
    step = code.split(f"if (a0 + {U} <= {K}) {{")[1].split("} else {")[0]
    loads = {int(i): (int(ok), int(off)) for ok, i, off in re.findall(
        r"if \(ok(\d)\) m(\d+) = __ldg\(reinterpret_cast<const float4\*>\(mp \+ (\d+)\)\);",
        step)}
    assert sorted(loads) == list(range(U))
    vecs = {(int(i), int(ri)): int(o) + int(o2) for i, ri, o, o2 in re.findall(
        r"const float v(\d+)_(\d+) = __ldg\(vp \+ (-?\d+) \+ (\d+)\);", step)}
    fmas = [(int(ri), int(d), int(i), "xyzw".index(ch), int(vi), int(vr)) for ri, d, i, ch, vi, vr
            in re.findall(r"acc\[(\d+)\]\[(\d)\] = fmaf\(m(\d+)\.([xyzw]), v(\d+)_(\d+), "
                          r"acc\[\1\]\[\2\]\);", step)]
    R = len(r["rows"])
    assert len(fmas) == 4 * U * R and all(i == vi and ri == vr for ri, _, i, _, vi, vr in fmas)
    oks = {int(i): int(s) for i, s in re.findall(r"const bool ok(\d) = 4 \* q - (\d) < \d+;",
                                                  code)}
    mb = int(re.search(r"const float\* mp = M \+ \((-?\d+) \+ a0", code).group(1))
    vb, vc = map(int, re.search(r"const float\* vp = V \+ \((-?\d+) \+ a0 \* (-?\d+)\);",
                                code).groups())
    mat, vec = B.reshape(-1), A.reshape(-1)
    nslots = (n - 1) // 4 + 2
    acc = np.zeros((nslots, R, 7))
    for q in range(nslots):
        for g in range(steps):
            a0 = g * U
            for ri, d, i, e, _, _ in fmas:
                ok, off = loads[i]
                if a0 + i >= K or not 4 * q - oks[ok] < n:
                    continue
                at = mb + a0 * L + 4 * q + off
                assert at >= 0 and at % 4 == 0 and at < mat.size    # aligned, inside the matrix
                w = mat[at + e] if at + e < mat.size else np.nan
                acc[q, ri, d] += w * vec[vb + a0 * vc + vecs[(i, ri)]]
    out = np.zeros((R, n))
    for x in range(n):
        q, e = divmod(x, 4)
        out[:, x] = acc[q, :, e + 3] + (acc[q + 1, :, e - 1] if e else 0)
    return out


@pytest.mark.parametrize("shape, cfg", [
    ((1, 4065, 40), (256, 8, 2, 4)), ((1, 37, 29), (64, 4, 3, 2)), ((2, 10, 21), (64, 12, 1, 1)),
    ((3, 67, 16), (128, 16, 2, 4)), ((1, 5, 8), (64, 4, 2, 1)), ((4, 33, 9), (64, 8, 1, 2))])
def test_generated_reads_and_sums_give_the_product(shape, cfg):
    """Rows of every misalignment, pieces past the rows' ends and past the matrix's last word
    (never read), a last partial step, 1-4 rows of the output."""
    m, n, k = shape
    spec = _spec(m, n, k)
    tile = gemv.tile_for(spec, *cfg)
    assert not gemv.fits(spec, tile)
    assert kernel_source(W.gemm(m, n, k), tile=tile) == gemv.source(spec, tile)[1]
    rng = np.random.default_rng(sum(shape))
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    np.testing.assert_allclose(_play(spec, tile, A, B), A @ B, rtol=1e-9, atol=1e-9)
