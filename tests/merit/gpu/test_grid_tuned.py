"""The autotuner's other-grid extras (``tiling.GRID_TUNED``: the model's best tiles on grid sizes
its list lacks) and its second round (``tiling.timed_variants``: the ``lean`` / ``vread`` /
``-O1`` forms of the fastest plain tiles by the clock): CPU checks of the lists, and a device
check of a tuned sum against float64 (skipped without a GPU)."""

import dataclasses

import numpy as np
import pytest

from merit import workloads as W
from merit.gpu import TUNED, tiling
from merit.gpu.spec import spec_of
from merit.gpu.tiling import grid_blocks, rank, timed_variants

#: bench seed 90417's 1x1 stride-2 convolution (its list ran grids of 112 and 140 blocks only)
CONV_1X1 = (8, 155, 69, 111, 127, 1)


def _plain(t):
    return dataclasses.replace(t, lean=False, vread=False, forder=0, ptxas=0, vahead=False)


def test_other_grids_are_added_after_the_list_whole(monkeypatch):
    spec = spec_of(W.conv2d(*CONV_1X1, stride=2), "float32")
    after = rank(spec, count=TUNED)
    with monkeypatch.context() as m:
        m.setattr(tiling, "GRID_TUNED", 0)
        before = rank(spec, count=TUNED)
    # the default list and every tile of before kept, in their order
    assert after[:TUNED] == before[:TUNED] and [t for t in after if t in before] == before
    added = [t for t in after if t not in before]
    plain = [t for t in added if not t.lean]
    grids = {grid_blocks(spec, t) for t in plain}
    # grid sizes no tile of before runs, at most GRID_TUNED of them, GRID_PER tiles each
    assert grids and not grids & {grid_blocks(spec, t) for t in before}
    assert len(grids) <= tiling.GRID_TUNED
    assert all(sum(grid_blocks(spec, t) == g for t in plain) <= tiling.GRID_PER for g in grids)
    # each with its lean copy; every added tile is one of those or a copy of one
    assert all(dataclasses.replace(t, lean=True) in added for t in plain)
    assert all(_plain(t) in plain for t in added)
    # the shape the sweep found: 126 blocks of 256 threads, all 8 images in a block
    assert 126 in grids
    assert any(t.threads == (1, 8, 4, 8) and t.regs == (8, 8, 1, 1) for t in plain)


def test_no_other_grids_for_other_strategies(monkeypatch):
    spec = spec_of(W.conv_relu(2, 3, 12, 12, 4, 3), "float32")
    tiles = rank(spec, count=TUNED)
    monkeypatch.setattr(tiling, "GRID_TUNED", 0)
    assert rank(spec, count=TUNED) == tiles
    assert timed_variants(spec, [(1.0, t) for t in tiles]) == []


def test_second_round_takes_the_fastest_plain_tiles_forms():
    spec = spec_of(W.gemm(2387, 1123, 2841), "float32")
    tiles = rank(spec, count=TUNED)
    plain = [t for t in tiles if not (t.lean or t.vread or t.ptxas)]
    # the model's list order reversed as the clock's: its last plain tile is the fastest
    times = [(1.0 + i, t) for i, t in enumerate(reversed(tiles))]
    more = timed_variants(spec, times)
    assert more and not set(more) & set(tiles) and len(set(more)) == len(more)
    assert all(t.lean for t in more)
    bases = list(dict.fromkeys(_plain(t) for t in more))
    assert len(bases) <= tiling.TIMED_VARIANTS and set(bases) <= set(plain)
    # the fastest plain tile that lacks a form comes first
    ms = {t: m for m, t in times}
    lacking = [t for t in sorted(plain, key=ms.get)
               if any(_plain(v) == t for _, v in tiling._lean_variants(
                   spec, [(0, t)], tiling.H100,
                   tiling.LEAN_VARIANTS + tiling._ptxas_forms()) if v not in tiles)]
    assert bases == lacking[:len(bases)]
    assert _plain(more[0]) == lacking[0]
    # the loads-ahead snake form is among the forms of the second round
    assert any(t.vahead and t.forder == 1 and t.ptxas == 1 for t in more)
    # forms already timed are not timed again
    again = timed_variants(spec, times + [(9.0, t) for t in more])
    assert not set(again) & set(more)


def test_second_round_off_and_tensor_cores(monkeypatch):
    spec = spec_of(W.gemm(96, 80, 64), "float32", "tf32")
    tiles = rank(spec, count=4)
    assert timed_variants(spec, [(1.0, t) for t in tiles]) == []
    fp32 = spec_of(W.gemm(96, 80, 64), "float32")
    tiles = rank(fp32, count=TUNED)
    monkeypatch.setattr(tiling, "TIMED_VARIANTS", 0)
    assert timed_variants(fp32, [(1.0, t) for t in tiles]) == []


@pytest.mark.gpu
def test_tuned_sums_match_float64_on_the_device(tmp_path, cupy):
    """The autotuner, both extras on, from an empty tile cache: its choice on a ragged GEMM and
    a 1x1 stride-2 convolution, on NaN-poisoned outputs against float64."""
    from merit.gpu import prepare
    from merit.gpu.runtime import TileCache

    rng = np.random.default_rng(7)
    for prob in (W.gemm(331, 283, 517), W.conv2d(2, 37, 29, 41, 45, 1, stride=2)):
        arrays = prob.random_inputs(rng, np.float32)
        want = prob.run(*[a.astype(np.float64) for a in arrays])
        want = want[0] if isinstance(want, tuple) else want
        cache = TileCache(tmp_path / "tiles.json")
        _, go, out = prepare(prob, *[cupy.asarray(a) for a in arrays], cache=cache)
        for o in out:
            o.fill(cupy.nan)
        go()
        got = prob.outputs[0].finish(out[0])
        got = cupy.asnumpy(got).astype(np.float64)
        assert not np.isnan(got).any()
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert err < 1e-5
