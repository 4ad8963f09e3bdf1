"""The product form of 1 x 1 convolutions (``Tile.flat``, merit.gpu.flat) without a GPU: the
product's operands as views of the convolution's arrays, computed in float64 against a direct
sum; which convolutions qualify; the tiles the autotuner times and that it times them."""

import dataclasses

import numpy as np
import pytest
from gpu_cases import fake_runtime

import merit.gpu as gpu
from merit import workloads as W
from merit.gpu import codegen, runtime
from merit.gpu.flat import fits, flat_spec, macs, views
from merit.gpu.spec import spec_of
from merit.gpu.tiling import check_tile, flat_variants, rank

PAGE = W.conv2d(4, 181, 61, 77, 229, 1)


def _direct(x, w):
    """float64 1 x 1 convolution, pixel by pixel (NCHW, MC11)."""
    N, C, H, Wd = x.shape
    out = np.zeros((N, w.shape[0], H, Wd))
    for y in range(H):
        for xx in range(Wd):
            out[:, :, y, xx] = x[:, :, y, xx] @ w[:, :, 0, 0].T
    return out


@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 4), (1, 9, 4, 3, 11), (3, 1, 2, 6, 2)])
def test_views_compute_the_convolution(shape):
    """The product's operands laid out as :func:`views` makes them, multiplied by the golden
    model's matrix product (the problem the product's specialization is made of), written
    through the output view: the direct sum in float64."""
    N, C, H, Wd, M = shape
    spec = spec_of(W.conv2d(N, C, H, Wd, M, 1), "float32")
    spec2, d = flat_spec(spec)
    rng = np.random.default_rng(sum(shape))
    x, w = rng.standard_normal((N, C, H, Wd)), rng.standard_normal((M, C, 1, 1))
    inputs = [None, None]
    inputs[d["img"]], inputs[d["wt"]] = x, w
    out = np.full((N, M, H, Wd), np.nan)
    (a, b), (o,) = views(d, inputs, (out,))
    # the specialization's operands are these views, in this order
    assert [op.transform.source_shape for op in spec2.inputs] == [a.shape, b.shape]
    assert tuple(spec2.pshape) == o.shape and tuple(spec2.ashape) == (C,)
    o[...] = W.matmul((M, C), (N, C, H * Wd)).run(a, b)
    np.testing.assert_allclose(out, _direct(x, w), rtol=1e-12, atol=1e-12)
    assert np.shares_memory(o, out) and np.shares_memory(b, x)


def test_views_refuse_other_layouts():
    spec = spec_of(W.conv2d(2, 3, 5, 7, 4, 1), "float32")
    _, d = flat_spec(spec)
    x = np.zeros((2, 3, 7, 5)).transpose(0, 1, 3, 2)
    with pytest.raises(ValueError, match="C-contiguous image"):
        views(d, [x, np.zeros((4, 3, 1, 1))], (np.zeros((2, 4, 5, 7)),))


def test_fits_takes_the_page_row():
    d = fits(spec_of(PAGE, "float32"))
    assert (d["N"], d["C"], d["M"], d["H"], d["W"], d["Q"]) == (4, 181, 229, 61, 77, 61 * 77)
    assert macs(d) == 4 * 181 * 229 * 61 * 77
    spec2, _ = flat_spec(spec_of(PAGE, "float32"))
    assert tuple(spec2.pshape) == (4, 229, 4697) and spec2.name.endswith("~flat")


#: (N, C, H, W, M, stride, padding): strided, padded, both, ragged
GATHERED = [(2, 3, 9, 9, 4, 2, 0), (1, 5, 7, 6, 3, 1, 1), (2, 4, 11, 13, 5, 2, 1),
            (3, 2, 10, 7, 6, 3, 2), (1, 6, 8, 9, 2, 2, 3)]


@pytest.mark.parametrize("shape", GATHERED)
def test_gathered_image_computes_the_strided_or_padded_convolution(shape):
    """A strided or padded 1 x 1 convolution: the product's image is gathered
    (:func:`merit.gpu.flat.gather_index`, the rule the gather kernel follows), the weights and
    the output are views; the golden model's matrix product on them is the golden model's own
    convolution in float64."""
    from merit.gpu.flat import gather_index

    N, C, H, Wd, M, s, p = shape
    prob = W.conv2d(N, C, H, Wd, M, 1, stride=s, padding=p)
    spec = spec_of(prob, "float32")
    spec2, d = flat_spec(spec)
    assert d["gather"] and (d["sy"], d["sx"], d["oy"], d["ox"]) == (s, s, -p, -p)
    Ho, Wo = spec.pshape[2:]
    assert (d["Ho"], d["Wo"], d["Q"]) == (Ho, Wo, Ho * Wo)
    rng = np.random.default_rng(sum(shape))
    x, w = rng.standard_normal((N, C, H, Wd)), rng.standard_normal((M, C, 1, 1))
    inputs = [None, None]
    inputs[d["img"]], inputs[d["wt"]] = x, w
    out = np.full((N, M, Ho, Wo), np.nan)
    (a, b), (o,) = views(d, inputs, (out,))
    assert b is None and np.shares_memory(o, out)
    idx = gather_index(d)
    g = np.where(idx >= 0, x.reshape(-1)[np.maximum(idx, 0)], 0.0).reshape(N, C, Ho * Wo)
    assert [op.transform.source_shape for op in spec2.inputs] == [a.shape, g.shape]
    o[...] = W.matmul((M, C), (N, C, Ho * Wo)).run(a, g)
    np.testing.assert_allclose(out, prob.run(x, w), rtol=1e-12, atol=1e-12)
    assert not fits(spec_of(W.conv2d(N, C, H, Wd, M, 1), "float32"))["gather"]


@pytest.mark.parametrize("problem, precision, want", [
    (W.conv2d(2, 3, 9, 9, 4, 3, padding=1), "fp32", "1 x 1 window"),
    (W.conv2d(2, 4, 9, 9, 4, 1, groups=2), "fp32", "plain sum"),
    (W.conv2d(2, 3, 9, 9, 4, 1, relu=True), "fp32", "plain sum"),
    (W.conv2d(2, 3, 9, 9, 4, 1), "tf32", "fp32 float32"),
    (W.gemm(5, 6, 7), "fp32", "plain sum"),
])
def test_fits_refuses(problem, precision, want):
    why = fits(spec_of(problem, "float32", precision))
    assert isinstance(why, str) and want in why


def test_variants_are_product_tiles():
    """The autotuner's product tiles: the model's best plain tiles of the product with their
    forms and padded rows, each a complete tile of the product (three parallel indices)."""
    spec = spec_of(PAGE, "float32")
    spec2, _ = flat_spec(spec)
    tiles = flat_variants(spec)
    assert tiles and all(t.flat and len(t.threads) == 3 for t in tiles)
    assert all(t.label().endswith("_fl") for t in tiles)
    assert len(set(tiles)) == len(tiles)
    bases = {t for t in tiles if not (t.lean or t.vread or t.ptxas or t.padrows)}
    plain = [t for t in rank(spec2, count=12) if not (t.lean or t.vread or t.ptxas or t.padrows)]
    assert {dataclasses.replace(t, flat=False) for t in bases} == set(plain[:3])
    # the image's rows (61 x 77 = 4697 words) are not a multiple of 4: padded forms too
    assert any(t.padrows for t in tiles)
    for t in tiles:
        assert check_tile(spec, t) == t
    # the kernel is the product's, named apart from the plain tile's
    t = tiles[0]
    name, _, nb, nt, smem = codegen.source(spec, t)
    name2, _, nb2, nt2, smem2 = codegen.source(spec2, dataclasses.replace(t, flat=False))
    assert (nb, nt, smem) == (nb2, nt2, smem2) and name != name2 and "flat" in name


@pytest.mark.parametrize("problem", [W.gemm(64, 64, 64), W.conv2d(2, 3, 9, 9, 4, 3, padding=1)])
def test_no_variants_elsewhere(problem):
    assert flat_variants(spec_of(problem, "float32")) == []


def test_check_tile_names_the_refusal():
    spec = spec_of(W.gemm(64, 64, 64), "float32")
    with pytest.raises(ValueError, match="plain sum of two inputs"):
        check_tile(spec, {"threads": (16, 16), "regs": (4, 4), "flat": True})
    k3 = spec_of(W.conv2d(2, 3, 9, 9, 4, 3, padding=1), "float32")
    with pytest.raises(ValueError, match="1 x 1 window"):
        check_tile(k3, {"threads": (1, 16, 16), "regs": (1, 4, 4), "flat": True})
    conv = spec_of(W.conv2d(2, 3, 9, 9, 4, 3, padding=1), "float32")
    with pytest.raises(ValueError, match="SIMT tiles without gemv or wino"):
        check_tile(conv, {"threads": (1, 16, 16), "regs": (1, 4, 4), "wino": 2, "flat": True})


def test_the_autotuner_times_the_form(monkeypatch, tmp_path):
    """``_choose`` end to end on a fake runtime whose product tiles run faster: its list holds
    the form's tiles, and it picks one of them."""
    spec = spec_of(W.conv2d(2, 45, 21, 19, 67, 1), "float32")
    timed = fake_runtime(monkeypatch, runtime, lambda tile: 0.05 if tile.flat else 0.09)
    best = gpu._choose(spec, [], (), None, True, runtime.TileCache(tmp_path / "tiles.json"))
    assert best.flat and best in flat_variants(spec)
    assert set(flat_variants(spec)) <= set(timed)
    assert any(not t.flat for t in timed)


def test_the_page_names_the_rows_in_the_form():
    from bench.gpu import _flat_note

    rows = [{"key": "rand2_conv_1x1", "tile": "t2x16x8_r1x4x4_c32_u1_ss_db_l_v_fl"},
            {"key": "gemm", "tile": "t16x16_r16x8_c32_u1_ss_db_s44_l_v_o1_x1"}, {"key": "x"}]
    (line,) = _flat_note(rows)
    assert "1 row (rand2_conv_1x1) runs" in line and "gemm" not in line
    assert "padded" not in line
    assert _flat_note(rows[1:]) == []
    (line,) = _flat_note([{"key": "c", "tile": "t2x16x8_r1x4x4_c32_u1_ss_db_l_v_pr_fl"}] + rows)
    assert "2 rows (c, rand2_conv_1x1) run" in line and "; c with the product's operands" in line
    assert "no copies" not in line
    (line,) = _flat_note([{"key": "r", "tile": "t2x16x8_r1x4x4_c32_u1_ss_db_l_v_pr_rg1_fl"}] + rows)
    assert "2 rows (r, rand2_conv_1x1) run" in line and "; r with the padded form's kernel" in line
    assert "copied first" not in line


def test_the_fastest_product_tile_gets_its_padded_rows(monkeypatch, tmp_path):
    """After the third round the product form's fastest tile, a lean / vread form (whose padded
    rows the third round does not time), is timed with its padded-row copies, and picked where
    they run faster; a padded tile, or one timed already, gets none."""
    from merit.gpu.tiling import pad_variants

    spec = spec_of(PAGE, "float32")
    fast = next(t for t in flat_variants(spec) if t.lean and t.vread and not t.padrows)
    padded, ragged = pad_variants(spec, [(0.09, flat_variants(spec)[0]), (0.05, fast)])
    assert ragged == dataclasses.replace(padded, ragged=1)
    assert padded.flat and padded.padrows and padded.label() == fast.label()[:-3] + "_pr_fl"
    assert padded not in flat_variants(spec) and check_tile(spec, padded) == padded
    assert dataclasses.replace(padded, padrows=False, pads=(), vector=()) == \
        dataclasses.replace(fast, pads=(), vector=())
    assert pad_variants(spec, [(0.05, fast), (0.04, padded)]) == [ragged]
    assert pad_variants(spec, [(0.05, fast), (0.04, padded), (0.06, ragged)]) == []
    assert pad_variants(spec, [(0.04, fast), (0.05, padded)]) == []

    def ms(tile):
        return 0.04 if tile == padded else 0.05 if tile == fast else 0.09

    timed = fake_runtime(monkeypatch, runtime, ms)
    best = gpu._choose(spec, [], (), None, True, runtime.TileCache(tmp_path / "tiles.json"))
    assert best == padded
    assert timed.count(padded) == 1
    assert timed.index(padded) > max(timed.index(t) for t in flat_variants(spec))
