"""Footprint rows from the 32-byte sector below a box misaligned at run time (``Tile.sector``,
``tiling.sector_variants``), without a GPU: the layout the geometry gives, the kernel's copy and
read offsets, the filter computed in float64 from boxes laid out so against the golden model,
which tiles get the form, the refusals, and the autotuner's third round timing it on a fake
runtime."""

import re

import numpy as np
import pytest
from gpu_cases import fake_runtime

import merit.gpu as gpu
from merit import workloads as W
from merit.gpu import Tile, codegen, runtime, tiling
from merit.gpu.spec import spec_of
from merit.gpu.tile import geometry
from merit.gpu.tiling import _replace


def _filter(sector=0):
    spec = spec_of(W.filter3x3(48, 96), "float32")
    t = tiling.complete(spec, Tile((4, 32), (4, 1), 3, sector=sector))
    return spec, t


@pytest.mark.parametrize("sector", [8, 16, 32])
def test_rows_start_at_the_aligned_column_below_the_box(sector):
    spec, t0 = _filter()
    _, t = _filter(sector)
    g0, g = geometry(spec, t0, 0), geometry(spec, t, 0)
    assert g0.vector and not g0.aligned and g0.align == 4 and g0.row == 40   # 34 words + 3
    assert g.align == sector and g.row % sector == 0
    assert g.row >= g.sides[-1] + sector - 1 > g0.row - 4     # room for any misalignment
    assert g.sides == g0.sides and g.pitches[-1] == 1
    # the weights' box (3 x 3, not a vector copy) is laid out as before
    assert geometry(spec, t, 1) == geometry(spec, t0, 1)
    assert "_sc" not in t0.label() and t.label().endswith(f"_sc{sector}")


def test_an_aligned_box_is_laid_out_as_before():
    spec = spec_of(W.gemm(64, 48, 40), "float32")
    t = tiling.rank(spec, count=1)[0]
    for k in range(2):
        g = geometry(spec, t, k)
        assert g == geometry(spec, _replace(t, sector=8), k) or not g.vector or g.aligned
    assert not tiling._sector_moves(spec, t)


def _offsets(src, k):
    """The kernel's copy origin mask and misalignment mask of input ``k``'s rows."""
    a0c = re.search(r"const int a0c = org\d+ & ~(\d+);", src)
    sh = re.search(rf"const int sh{k} = \(.*\) & (\d+);", src)
    return int(a0c[1]), int(sh[1])


@pytest.mark.parametrize("sector", [0, 8, 32])
def test_the_kernel_copies_and_reads_the_box_at_the_geometry_offsets(sector):
    spec, t = _filter(sector)
    g = geometry(spec, t, 0)
    name, src, nblocks, nt, smem = codegen.source(spec, t)
    lo, sh = _offsets(src, 0)
    assert lo == sh == (sector or 4) - 1
    rows = g.sides[0]
    assert f"e < {rows * g.row // 4};" in src                   # 16-byte pieces of whole rows
    assert smem == 4 * (-(-g.words // 4) * 4 + geometry(spec, t, 1).words)
    # every box column read stays in its row, whatever the box's first column
    for org in range(-40, 40):
        a0c, shift = org & ~lo, org & sh
        assert a0c % (sector or 4) == 0 and a0c + shift == org
        assert 0 <= shift and shift + g.sides[-1] <= g.row


def test_the_filter_from_boxes_so_laid_out_equals_the_golden_model():
    """The 3 x 3 filter computed in float64 as the kernel reads it: each block's box copied
    into rows of ``row`` words from the ``align``-aligned column below it (zero outside the
    image), each output from the words at the misalignment's offset; against the golden
    model's filter in float64."""
    prob = W.filter3x3(48, 96)
    spec, t = _filter(8)
    g = geometry(spec, t, 0)
    rng = np.random.default_rng(11)
    img, w = (a.astype(np.float64) for a in prob.random_inputs(rng, np.float32))
    h, wd = img.shape
    pad = np.zeros((h + 2, wd + 2 * g.row))
    pad[1:h + 1, g.row:g.row + wd] = img              # zero outside the image
    out = np.full((h, wd), np.nan)
    bh, bw = t.block
    for pb0 in range(0, h, bh):
        for pb1 in range(0, wd, bw):
            org0, org1 = pb0 - 1, pb1 - 1
            a0c, sh = org1 & ~(g.align - 1), org1 & (g.align - 1)
            box = pad[org0 + 1:org0 + 1 + g.sides[0], g.row + a0c:g.row + a0c + g.row]
            assert box.shape == (g.sides[0], g.row)
            for y in range(bh):
                for x in range(bw):
                    out[pb0 + y, pb1 + x] = sum(w[i, j] * box[y + i, sh + x + j]
                                                for i in range(3) for j in range(3))
    np.testing.assert_allclose(out, prob.run(img, w), rtol=1e-12, atol=1e-12)


def _timed(spec):
    ranked = tiling.rank(spec, count=gpu.TUNED)
    return ranked, [(1.0 + 0.01 * (len(ranked) - j), t) for j, t in enumerate(ranked)]


def test_sector_forms_of_the_fastest_tiles_they_change():
    spec = spec_of(W.separable_filter(64, 128, 3), "float32")
    ranked, times = _timed(spec)
    got = tiling.sector_variants(spec, times)
    assert 0 < len(got) <= tiling.SECTOR_TUNED
    fastest = [t for _, t in sorted(times, key=lambda mt: mt[0])
               if tiling._sector_moves(spec, t)][:tiling.SECTOR_TUNED]
    assert [(v.threads, v.regs, v.chunk) for v in got] == [(b.threads, b.regs, b.chunk)
                                                          for b in fastest]
    for v in got:
        assert v.sector == tiling.SECTOR_WORDS and v == tiling.complete(spec, v)
        assert codegen.source(spec, v)[1] != codegen.source(spec, _replace(v, sector=0))[1]
    # timed already: not again; a sector tile gives nothing; switched off: nothing
    assert tiling.sector_variants(spec, times + [(2.0, v) for v in got]) == []
    assert tiling.sector_variants(spec, [(1.0, got[0])]) == []


def test_no_sector_forms_where_no_box_is_misaligned_or_switched_off(monkeypatch):
    gemm = spec_of(W.gemm(64, 48, 40), "float32")
    _, times = _timed(gemm)
    assert not any(tiling._sector_moves(gemm, t) for _, t in times)
    assert tiling.sector_variants(gemm, times) == []
    spec = spec_of(W.separable_filter(64, 128, 3), "float32")
    _, times = _timed(spec)
    monkeypatch.setattr(tiling, "SECTOR_TUNED", 0)
    assert tiling.sector_variants(spec, times) == []


@pytest.mark.parametrize("bad", [4, 3, 64, True])
def test_check_tile_refuses_other_alignments(bad):
    spec, t = _filter()
    with pytest.raises(ValueError, match="tile.sector"):
        tiling.check_tile(spec, _replace(t, sector=bad))


def test_check_tile_refuses_sector_on_tensor_core_and_ragged_tiles():
    spec = spec_of(W.gemm(64, 64, 64), "float32", "tf32")
    tc = tiling.rank(spec, count=1)[0]
    assert tc.mma
    with pytest.raises(ValueError, match="tile.sector"):
        tiling.check_tile(spec, _replace(tc, sector=8))
    conv = spec_of(W.conv2d(2, 3, 17, 19, 5, 3, padding=1), "float32")
    t = tiling.rank(conv, count=1)[0]
    with pytest.raises(ValueError, match="tile.sector"):
        tiling.check_tile(conv, _replace(t, padrows=True, ragged=1, sector=8))
    assert tiling.check_tile(conv, _replace(t, sector=8)).sector == 8


def test_the_third_round_times_the_sector_forms_and_can_pick_one(monkeypatch, tmp_path):
    """``_choose`` on a fake runtime: the sector forms are timed after the first rounds, and the
    fastest of all is the pick."""
    spec = spec_of(W.separable_filter(64, 128, 3), "float32")
    ranked, times = _timed(spec)
    forms = tiling.sector_variants(spec, times)
    device = "Fake GPU sm_80"
    clock = {t: ms for ms, t in times}
    fast = forms[-1]
    timed = fake_runtime(monkeypatch, runtime,
                         lambda tile: 0.5 if tile == fast else clock.get(tile, 3.0), device)
    gpu.seed(spec.key(), device, ranked)
    cache = runtime.TileCache(tmp_path / "tiles.json")
    assert gpu._choose(spec, [], (), None, True, cache) == fast
    assert set(forms) <= set(timed)
    assert timed.index(forms[0]) > max(timed.index(t) for t in ranked)
    assert runtime.TileCache(tmp_path / "tiles.json").get(device, spec) == fast


def test_the_store_hint_switch_changes_only_the_stores(monkeypatch):
    """``codegen.STORE_HINT`` (a probe's switch, measured no faster on the k=3 filter): the
    outputs stored through ``__stcs``; off, the plain stores as before."""
    spec, t = _filter(8)
    plain = codegen.source(spec, t)[1]
    monkeypatch.setattr(codegen, "STORE_HINT", "cs")
    hinted = codegen.source(spec, t)[1]
    assert "g_out0[at] = s[r].out0;" in plain and "__stcs" not in plain
    assert "__stcs(g_out0 + at, s[r].out0);" in hinted and "g_out0[at] =" not in hinted
    assert hinted.replace("__stcs(g_out0 + at, s[r].out0);", "g_out0[at] = s[r].out0;") == plain
