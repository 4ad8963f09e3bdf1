"""CPU tests of staged-epilogue tiles holding sums past the epilogue (``Tile.hold``): the held
stores read back from the generated source cover exactly the chunks the staging leaves out,
each once per output tile and once more after the last, spread over the next tile's k tiles;
the registers moved by ``setmaxnreg`` on both sides; refusals; candidates; an sm_90a build."""

import dataclasses
import itertools
import re
import shutil

import pytest
from sm90 import assert_builds_without_spills
from wgmma_tiles import half_spec, persistent_tile

from merit import workloads as W
from merit.gpu import TUNED, ldsm, tiling
from merit.gpu.ldsm import EPI_COLS, HOLD_REGS, held, hold_fits, k_tiles, source
from merit.gpu.tiling import H100, WG_TUNED, rank


def _tile(spec, **kw):
    return persistent_tile(spec, **{"hold": 4, **kw})


_STORE = re.compile(r"\*reinterpret_cast<float2\*>\(g_out0 \+ \(long long\)\((.*?)\) \* (\d+) "
                    r"\+ \((.*?)\)\) = make_float2\(hv(\d+), hv(\d+)\);")


def _cells(stmts, ncols):
    """The (row, column) cells of a warpgroup's box that the store statements ``stmts`` write,
    evaluated for its 128 threads (``he0`` = ``he1`` = 0), with multiplicity, and the held
    registers each reads (in the order of its pair)."""
    cells, regs = [], []
    for row, n, col, r0, r1 in stmts:
        assert int(n) == ncols and int(r1) == int(r0) + 1
        regs.append(int(r0))
        for wm, gq, tq in itertools.product(range(4), range(8), range(4)):
            env = dict(he0=0, he1=0, wm=wm, gq=gq, tq=tq)
            r, c = eval(row, {}, env), eval(col, {}, env)   # noqa: S307 - generated arithmetic
            cells += [(r, c), (r, c + 1)]
    return cells, regs


def test_held_stores_cover_the_chunks_left_out():
    """For 1 to 7 of a 128 x 256 tile's 8 chunks (and 1 to 3 of a 128 x 128 tile's 4): the
    tile's staging writes ``chunks - hold`` bulk stores; the switch in the k loop stores every
    held pair once, at k tiles below the tile's count, in order, and the flush after the loop
    stores the same pairs; together they write each cell of the warpgroup's last ``hold``
    chunks (64 rows x 32 hold columns) exactly once and nothing else."""
    spec = half_spec(W.gemm(4096, 4096, 4096))
    for regs, fn, chunks in (((128, 256), 32, 8), ((128, 128), 16, 4)):
        for hold in range(1, chunks):
            t = _tile(spec, regs=regs, frags=(1, fn), hold=hold)
            assert t.label().endswith(f"_e2_hd{hold}") and t.nthreads == 384
            src = source(spec, t)[1]
            body = src[src.index("return;"):]
            loop = body[body.index("for (int kt = 0"):body.index("merit_wg_wait();")]
            switch = loop[loop.index("switch (kt)"):]
            flush = body[body.index("if (hon)", body.index("g0 += ")):]
            cases = [int(k) for k in re.findall(r"case (\d+):", switch)]
            kt = k_tiles(spec, t)
            assert cases == sorted(set(cases)) and cases[-1] < kt == 64
            assert src.count("merit_tma_store2(eb") == chunks - hold
            want = sorted((r, c) for r in range(64) for c in range(8 * fn - EPI_COLS * hold,
                                                                       8 * fn))
            for part in (switch, flush):
                cells, regs_read = _cells(_STORE.findall(part), 4096)
                assert sorted(cells) == want, (hold, len(cells), len(want))
                assert regs_read == list(range(0, 2 * len(held(spec, t)), 2))
            # the schedule: pair j of n in k tile j * kt // n, every pair once
            sched = held(spec, t)
            assert [k for _, _, k in sched] == [j * kt // len(sched) for j in range(len(sched))]
            assert len(sched) == 8 * hold and len({(f, h) for f, h, _ in sched}) == len(sched)


def test_registers_and_order():
    """The producer lowers its registers first thing in its branch, the consumers raise theirs
    before declaring the held sums; the held sums are taken after the staged chunks' bulk
    stores and before the next tile's sums are zeroed; the ragged problem's stores are guarded,
    the even one's not; fewer k tiles than pairs put several pairs in one k tile."""
    assert 2 * HOLD_REGS[0] + HOLD_REGS[1] <= 512 and all(r % 8 == 0 for r in HOLD_REGS)
    spec = half_spec(W.gemm(4096, 4096, 4096))
    src = source(spec, _tile(spec))[1]
    prod = src[src.index("if (warp >= 8) {"):src.index("return;")]
    cons = src[src.index("return;"):]
    assert prod.split("\n")[1].strip() == f"merit_maxnreg_dec<{HOLD_REGS[1]}>();"
    assert cons.index(f"merit_maxnreg_inc<{HOLD_REGS[0]}>();") < cons.index("float hv0 = 0.f")
    assert cons.index("float hv0 = 0.f") < cons.index("for (int t = blockIdx.x")
    last = cons.rindex("merit_tma_store2(eb")
    assert last < cons.index("hv0 = st.out0;") < cons.index("he0 = e0; he1 = e1; hon = true;")
    assert "if (he0" not in src
    rag = half_spec(W.gemm(1000, 520, 200))
    t = _tile(rag, regs=(128, 128), frags=(1, 16), hold=2, persist=7)
    rs = source(rag, t)[1]
    assert "if (he0 + (wm & 3) * 16 + gq + 0 < 1000 && he1 + 96 + 2 * tq < 520)" in rs
    assert k_tiles(rag, t) == 4 and sorted(k for _, _, k in held(rag, t)) == [
        k for k in range(4) for _ in range(4)]


def test_refusals():
    """No hold without a staged epilogue, with four consumer warpgroups, with an operand not
    copied by the bulk copy engine (GEMM's B of 260 columns: rows 520 bytes apart; A of 300
    k: 600 bytes), in clusters, or holding every chunk."""
    spec = half_spec(W.gemm(1000, 520, 320))
    assert hold_fits(spec, _tile(spec, hold=2)) == ""
    for kw in (dict(epi=0), dict(hold=8), dict(warps=(8, 2), frags=(1, 16))):
        with pytest.raises(ValueError, match="tile.hold"):
            _tile(spec, **kw)
    for odd in (half_spec(W.gemm(300, 260, 520)), half_spec(W.gemm(1000, 520, 300))):
        with pytest.raises(ValueError, match="tile.hold"):
            _tile(odd, persist=5)
    c = dataclasses.replace(_tile(spec, hold=0), cluster=2, hold=2)
    assert "tile.hold" in hold_fits(spec, c)


def test_candidates(monkeypatch):
    """Off by default (:data:`merit.gpu.tiling.HOLD_TUNED` empty: measured no faster); with it,
    each staged form of the GEMM's two-warpgroup persistent tiles with bulk copies of both
    operands gets its holding forms."""
    spec = half_spec(W.gemm(4096, 4096, 4096))
    assert tiling.HOLD_TUNED == () and not any(
        t.hold for t in rank(spec, count=TUNED + WG_TUNED, device=H100))
    monkeypatch.setattr(tiling, "HOLD_TUNED", (2, 4))
    tiles = rank(spec, count=TUNED + WG_TUNED, device=H100)
    hold = [t for t in tiles if t.hold]
    base = [t for t in tiles if t.epi and not t.hold and t.warps == (8, 1)
            and all(ldsm.tma_ops(spec, t))]   # (K-major B: gathered, not a bulk copy)
    assert base and len(hold) == 2 * len(base)
    for t in hold:
        assert dataclasses.replace(t, hold=0) in base and not ldsm.wgmma_fits(spec, t)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_builds_without_spills(tmp_path):
    """The 4096^3 tile holding 4 of 8 chunks (128 sums and 64 held a consumer thread) builds
    for sm_90a with no spill stores."""
    spec = half_spec(W.gemm(4096, 4096, 4096))
    t = _tile(spec, hold=4)
    assert_builds_without_spills(source(spec, t)[1], tmp_path, t.label())
