"""SIMT candidates for grids that fill the SMs (``tiling.fills``, ``FILL_TUNED``), split-K at a
smaller chunk (``SPLIT_CHUNKS``) and the ``lean`` + ``vread`` copies of the ``"sm"`` model's
extras (``HEDGE_VARIANTS``): CPU checks of the candidate lists and of the generated split, and a
device check of the new candidates against float64 (skipped without a GPU)."""

import itertools
import math
import re

import numpy as np
import pytest

from merit import workloads as W
from merit.gpu import TUNED, tiling
from merit.gpu.codegen import source
from merit.gpu.spec import spec_of
from merit.gpu.tiling import check_tile, fills, grid_blocks, rank

GEMV = (1, 4065, 5543)   # one output row: a matrix-vector product


def _without_additions(monkeypatch):
    monkeypatch.setattr(tiling, "FILL_TUNED", 0)
    monkeypatch.setattr(tiling, "SPLIT_CHUNKS", False)
    monkeypatch.setattr(tiling, "HEDGE_VARIANTS", ({"lean": True},))
    monkeypatch.setattr(tiling, "PTXAS_TUNED", False)
    monkeypatch.setattr(tiling, "WIDE_TUNED", False)
    monkeypatch.setattr(tiling, "GRID_TUNED", 0)


def _blocks_brute(spec, tile):
    """Distinct blocks that own an output, times the split: every output enumerated."""
    owners = {tuple(i // b for i, b in zip(p, tile.block, strict=True))
              for p in itertools.product(*(range(n) for n in spec.pshape))}
    return len(owners) * tile.split


def test_grid_blocks_and_fills_against_an_enumeration():
    cases = [(W.gemm(*GEMV), {"threads": (1, 128), "regs": (1, 1), "chunk": 32, "split": 16}),
             (W.gemm(*GEMV), {"threads": (1, 256), "regs": (1, 2), "chunk": 16, "split": 32}),
             (W.conv2d(1, 5, 20, 23, 9, 3, padding=1), {"threads": (1, 4, 4, 8),
                                                        "regs": (1, 2, 2, 1), "chunk": 5}),
             (W.gemm(100, 70, 64), {"threads": (8, 8), "regs": (4, 2), "chunk": 16, "split": 2})]
    for prob, fields in cases:
        spec = spec_of(prob, "float32")
        t = check_tile(spec, fields)
        nb = _blocks_brute(spec, t)
        assert grid_blocks(spec, t) == nb
        sms = tiling.H100.sms
        assert fills(spec, t) == (nb >= tiling.FILL * sms
                                  and nb * t.nthreads / 32 >= tiling.FILL_WARPS * sms)
    # 4065 columns in 128-column blocks split 16 ways: 512 blocks of 4 warps, 15.5 per SM
    spec = spec_of(W.gemm(*GEMV), "float32")
    t = check_tile(spec, cases[0][1])
    assert grid_blocks(spec, t) == 512 and fills(spec, t)
    assert not fills(spec, check_tile(spec, {"threads": (1, 256), "regs": (1, 1), "chunk": 32,
                                             "split": 4}))


def test_a_skinny_gemm_gets_tiles_that_fill_the_sms(monkeypatch):
    spec = spec_of(W.gemm(*GEMV), "float32")
    after = rank(spec, count=TUNED)
    with monkeypatch.context() as m:
        _without_additions(m)
        before = rank(spec, count=TUNED)
    # the model's first choice (256 blocks of 8 warps) does not fill the SMs
    assert not fills(spec, after[0])
    # the default list and every tile of before kept; the added ones all fill
    assert after[:TUNED] == before[:TUNED] and set(before) <= set(after)
    added = [t for t in after if t not in before]
    plain = [t for t in added if not t.lean]
    assert 1 <= len(plain) <= tiling.FILL_TUNED + tiling.HEDGE
    assert any(fills(spec, t) for t in plain)
    # each added plain tile that fills has its lean copy timed too
    for t in plain:
        if fills(spec, t):
            assert any(a.lean and tiling._replace(a, lean=False) == t for a in after)


def test_no_fill_tiles_where_the_first_choice_fills(monkeypatch):
    spec = spec_of(W.gemm(2048, 2048, 512), "float32")
    after = rank(spec, count=TUNED)
    assert fills(spec, after[0])
    monkeypatch.setattr(tiling, "FILL_TUNED", 0)
    assert rank(spec, count=TUNED) == after


def _split_ranges(src):
    """Each split block's accumulation tiles, from the generated source's ``at0`` / ``at1``."""
    m0 = re.search(r"const int at0 = \(blockIdx\.x % (\d+)\) \* (\d+);", src)
    m1 = re.search(r"const int at1 = min\((\d+), at0 \+ (\d+)\);", src)
    split, per = int(m0.group(1)), int(m0.group(2))
    ntiles, per1 = int(m1.group(1)), int(m1.group(2))
    assert per == per1
    return ntiles, [range(s * per, min(ntiles, s * per + per)) for s in range(split)]


def test_split_at_a_smaller_chunk_deals_every_block_tiles(monkeypatch):
    _, k = GEMV[1], GEMV[2]
    spec = spec_of(W.gemm(*GEMV), "float32")
    t = check_tile(spec, {"threads": (1, 128), "regs": (1, 1), "chunk": 32})
    # 174 tiles of 32 cannot go 32 ways (6 each: 29 blocks get tiles); 347 tiles of 16 can
    assert 32 not in [s.split for s in tiling._splits(spec, t)]
    ext = [s for s in tiling._splits(spec, t, extended=True) if s.split == 32]
    assert [(s.chunk, s.split) for s in ext] == [(16, 32)]
    monkeypatch.setattr(tiling, "SPLIT_CHUNKS", False)
    assert not [s for s in tiling._splits(spec, t, extended=True) if s.split == 32]
    monkeypatch.undo()
    # in the generated kernel every split block gets tiles, every k step is summed once
    for split in (32, 6):
        for chunk in (16, 8):
            tile = check_tile(spec, {"threads": (1, 128), "regs": (1, 1), "chunk": chunk,
                                     "split": split})
            ntiles, ranges = _split_ranges(source(spec, tile)[1])
            assert ntiles == math.ceil(k / chunk) and len(ranges) == split
            if (split, chunk) == (32, 16):   # the candidate: no block without tiles
                assert all(len(r) for r in ranges)
            steps = sorted(s for r in ranges for at in r
                           for s in range(at * chunk, min(k, at * chunk + chunk)))
            assert steps == list(range(k))


def test_the_sm_models_extras_get_lean_and_vread_copies(monkeypatch):
    monkeypatch.setattr(tiling, "GRID_TUNED", 0)   # the other grids' extras: test_grid_tuned.py
    spec = spec_of(W.gemm(827, 1615, 1509), "float32")
    after = rank(spec, count=TUNED)
    with monkeypatch.context() as m:
        _without_additions(m)
        before = rank(spec, count=TUNED)
    added = [t for t in after if t not in before and not t.ptxas]
    assert added and all(t.lean and t.vread for t in added)
    for t in added:   # the vread copy of a hedge extra whose lean copy was timed before
        assert tiling._replace(t, vread=False) in before


@pytest.mark.gpu
def test_added_candidates_match_float64_on_the_device(cupy):
    """Every tile the additions bring to a skinny GEMM, a ragged GEMM and a small batch-1
    convolution, run on NaN-poisoned outputs against float64."""
    from merit.gpu import run

    rng = np.random.default_rng(11)
    probs = [W.gemm(3, 1011, 1763), W.gemm(331, 283, 517),
             W.conv2d(1, 13, 41, 37, 53, 3, padding=1)]
    for prob in probs:
        spec = spec_of(prob, "float32")
        after = rank(spec, count=TUNED)
        saved = (tiling.FILL_TUNED, tiling.SPLIT_CHUNKS, tiling.HEDGE_VARIANTS,
                 tiling.PTXAS_TUNED, tiling.WIDE_TUNED, tiling.GRID_TUNED)
        try:
            tiling.FILL_TUNED, tiling.SPLIT_CHUNKS = 0, False
            tiling.HEDGE_VARIANTS = ({"lean": True},)
            tiling.PTXAS_TUNED = tiling.WIDE_TUNED = False
            tiling.GRID_TUNED = 0
            before = rank(spec, count=TUNED)
        finally:
            (tiling.FILL_TUNED, tiling.SPLIT_CHUNKS, tiling.HEDGE_VARIANTS,
             tiling.PTXAS_TUNED, tiling.WIDE_TUNED, tiling.GRID_TUNED) = saved
        added = [t for t in after if t not in before]
        arrays = prob.random_inputs(rng, np.float32)
        want = prob.run(*[a.astype(np.float64) for a in arrays])
        want = want[0] if isinstance(want, tuple) else want
        for t in added:
            out = (cupy.full(spec.pshape, np.nan, dtype=np.float32),)
            got = run(prob, *[cupy.asarray(a) for a in arrays], tile=t, out=out)
            got = cupy.asnumpy(got[0] if isinstance(got, tuple) else got).astype(np.float64)
            assert not np.isnan(cupy.asnumpy(out[0])).any(), t.label()
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            assert err < 1e-5, (t.label(), err)
