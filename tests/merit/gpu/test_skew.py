"""CPU tests of skewed persistent wgmma tiles (``Tile.skew``): the second consumer warpgroup
starts each output tile's k loop once the first has issued its first ``skew`` k tiles.  The
barrier's place in the generated source, a step-by-step simulation of the ring and the named
barrier under random interleavings (no deadlock, no aliased "full" wait, no barrier completed
by one warpgroup alone) that fails where the rule on the k tiles is broken, refusals, and the
candidates with :data:`merit.gpu.tiling.SKEW_TUNED`."""

import dataclasses
import random
import re

import pytest
from wgmma_tiles import half_spec, persistent_tile

from merit import workloads as W
from merit.gpu import TUNED, ldsm, tiling
from merit.gpu.ldsm import SKEW_BARRIER, k_tiles, skew_fits, source
from merit.gpu.tiling import H100, WG_TUNED, rank


def _tile(spec, **kw):
    return persistent_tile(spec, **{"skew": 2, **kw})


def test_barrier_in_the_consumer_loop():
    """The second warpgroup waits at the skew barrier after the sums are zeroed and before the
    tile's k loop; the first arrives in the k loop, after committing k tile ``skew - 1``'s
    products and before waiting for them; nothing else of the source changes, and the
    producer's branch has neither."""
    spec = half_spec(W.gemm(4096, 4096, 4096))
    for skew in (1, 2, 3):
        t = _tile(spec, skew=skew)
        assert t.label().endswith(f"_g132_e2_sk{skew}")
        src = source(spec, t)[1]
        plain = source(spec, dataclasses.replace(t, skew=0))[1]
        body = src[src.index('extern "C"'):]
        prod, cons = body[:body.index("return;")], body[body.index("return;"):]
        wait = f"if (warp >= 4) merit_bar_sync({SKEW_BARRIER}, 256);"
        arrive = f"if (kt == {skew - 1} && warp < 4) merit_bar_arrive({SKEW_BARRIER}, 256);"
        assert "merit_bar" not in prod and cons.count(wait) == 1 and cons.count(arrive) == 1
        zero = cons.index("c0_31_3 = 0.f;")
        loop = cons.index("for (int kt = 0; kt < 64; ++kt)")
        assert cons.index("for (int t = blockIdx.x; t < 512; t += 132)") < zero < \
            cons.index(wait) < loop
        commit = cons.index("merit_wg_commit();", loop)
        assert commit < cons.index(arrive) < cons.index("merit_wg_wait1();", loop)
        # the rest as without the skew, but for the kernel's name, the barrier's two functions
        # and the two lines
        kept = [ln for ln in src.replace(ldsm._PRELUDE_PINGPONG, "").splitlines()
                if ln.strip() not in (wait, arrive)]
        assert [ln.replace(f"_sk{skew}", "") for ln in kept if ln] == [
            ln for ln in plain.splitlines() if ln]
    assert "merit_bar_sync" not in plain.split('extern "C"')[1]


def _simulate(ntiles, kt, stages, skew, seed):
    """One block of a skewed tile run step by step as its generated code drives the ring and the
    named barrier, agents picked at random among those that can move (``seed`` a tuple: the
    first of that order that can, e.g. the producer, then warpgroup 0): the producer fills k tile
    g (block order) into buffer g % S once both warpgroups have released k tile g - S; each
    warpgroup, per output tile of ``kt`` k tiles, waits for the "full" phase of parity (g // S)
    & 1 (an mbarrier reports it complete as soon as the buffer's fill count has that parity,
    even two phases on: recorded as an error), issues, releases k tile g - 1, and its tile's
    last after its products.  Warpgroup 1 waits at the skew barrier before each tile's k loop;
    warpgroup 0 arrives after issuing k tile ``skew - 1`` of each tile.  The barrier counts 256
    threads: an arrival of warpgroup 0 while its last one still waits for warpgroup 1 completes
    the barrier without it (an error).  Returns (errors, the k tiles each read, stuck)."""
    rnd = random.Random(str(seed))
    fills = [0] * stages   # fills per buffer
    filled = 0
    released = [set() for _ in range(ntiles * kt)]
    pending = 0   # warpgroup 0's arrivals not yet met by warpgroup 1
    wgs = [dict(i=0, k=0, state="bar" if w else "loop", read=[]) for w in (0, 1)]
    errors = []
    for _ in range(200000):
        moves = []
        if filled < ntiles * kt and (filled < stages or len(released[filled - stages]) == 2):
            moves.append("p")
        for w, st in enumerate(wgs):
            if st["i"] >= ntiles:
                continue
            if st["state"] == "bar":
                if pending:
                    moves.append(w)
                continue
            g = st["i"] * kt + st["k"]
            if (fills[g % stages] & 1) != ((g // stages) & 1):
                moves.append(w)
        if not moves:
            break
        m = (next(a for a in seed if a in moves) if isinstance(seed, tuple)
             else rnd.choice(moves))
        if m == "p":
            fills[filled % stages] += 1
            filled += 1
            continue
        st = wgs[m]
        if st["state"] == "bar":
            pending -= 1
            st["state"] = "loop"
            continue
        g = st["i"] * kt + st["k"]
        if fills[g % stages] != g // stages + 1:
            errors.append(("aliased full wait", m, g, fills[g % stages]))
        st["read"].append(g)
        if m == 0 and st["k"] == skew - 1:
            if pending:
                errors.append(("barrier completed by warpgroup 0 alone", g))
            pending += 1
        if st["k"] > 0:
            released[g - 1].add(m)
        st["k"] += 1
        if st["k"] == kt:
            released[g].add(m)
            st["k"], st["i"] = 0, st["i"] + 1
            st["state"] = "bar" if m == 1 else "loop"
    stuck = filled < ntiles * kt or any(st["i"] < ntiles for st in wgs)
    return errors, [st["read"] for st in wgs], stuck


def test_simulated_ring_and_barrier():
    """Over 1 to 8 k tiles per output tile, 3 and 4 buffers, skews 1 .. stages - 1, 1 to 4
    output tiles and random interleavings: wherever :func:`skew_fits` allows the k tile count,
    no deadlock, no aliased wait, no barrier met by one warpgroup, and each warpgroup reads
    every k tile in order; where it refuses it, some interleaving breaks (the rule is tight,
    and the check can fail)."""
    broke = set()
    for stages in (3, 4):
        for skew in range(1, stages):
            for kt in range(1, 9):
                ok = kt >= max(skew, stages - skew + 1)
                for ntl in (1, 2, 3, 4):
                    for seed in [*range(12), ("p", 0, 1), (0, "p", 1), ("p", 1, 0)]:
                        errs, read, stuck = _simulate(ntl, kt, stages, skew, seed)
                        if ok:
                            assert not errs and not stuck, (stages, skew, kt, ntl, errs)
                            assert read == [list(range(ntl * kt))] * 2
                        elif errs or stuck:
                            broke.add((stages, skew, kt))
                if not ok:   # the rule is tight: each refused count can break
                    assert (stages, skew, kt) in broke, (stages, skew, kt)


def test_k_tiles_and_refusals():
    """``k_tiles`` counts a tile's ring buffers; the skew is refused without a persistent
    producer tile, with four consumer warpgroups, ping-pong or clusters, a skew of the buffers'
    count or more, or too few k tiles per output tile."""
    spec = half_spec(W.gemm(1000, 520, 300))
    t = _tile(spec, skew=1)
    assert k_tiles(spec, t) == 5 and k_tiles(spec, dataclasses.replace(t, chunk=32)) == 10
    assert skew_fits(spec, t) == ""
    for kw in (dict(persist=0, epi=0), dict(stages=4, skew=4), dict(stages=3, skew=3, epi=4),
               dict(warps=(8, 2), frags=(1, 16))):
        with pytest.raises(ValueError, match="tile.skew"):
            _tile(spec, **kw)
    # 2 k tiles of BK 64 (K 128) and 4 buffers: skew 1 needs 4 k tiles, skew 2 3, skew 3 3
    short = half_spec(W.gemm(1000, 520, 128))
    for skew in (1, 2, 3):
        with pytest.raises(ValueError, match="tile.skew"):
            _tile(short, skew=skew)
    assert k_tiles(short, _tile(short, skew=2, chunk=32)) == 4   # BK 32: 4 k tiles
    c = dataclasses.replace(_tile(spec, skew=0, epi=0), cluster=2, skew=1)
    assert "tile.skew" in skew_fits(spec, c)


def test_candidates(monkeypatch):
    """Off by default (:data:`merit.gpu.tiling.SKEW_TUNED` empty: measured no faster); with it,
    each persistent two-warpgroup tile of the GEMM and each of its staged forms gets its skewed
    forms beside it, and no tile of four consumer warpgroups does."""
    spec = half_spec(W.gemm(4096, 4096, 4096))
    assert tiling.SKEW_TUNED == () and not any(
        t.skew for t in rank(spec, count=TUNED + WG_TUNED, device=H100))
    monkeypatch.setattr(tiling, "SKEW_TUNED", (1, 2))
    tiles = rank(spec, count=TUNED + WG_TUNED, device=H100)
    skewed = [t for t in tiles if t.skew]
    base = [t for t in tiles if t.persist and t.producer and not t.skew and t.cluster == 1
            and t.warps == (8, 1)]
    assert skewed and len(skewed) == 2 * len(base)
    for t in skewed:
        assert dataclasses.replace(t, skew=0) in base and re.search(r"_sk[12]$", t.label())
        assert t.warps == (8, 1) and not ldsm.wgmma_fits(spec, t)
