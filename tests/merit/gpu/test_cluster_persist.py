"""CPU tests of the persistent wgmma tiles in clusters of two (``Tile.cluster`` 2 with
``Tile.persist``) and of the staged epilogue's L2 cache hints (``Tile.evict``): the pair
schedule read back from the generated source against an enumeration of the output tiles (an odd
number of row blocks, ragged edges, pair counts no multiple of the clusters), the barriers'
arrival and byte counts, the multicast boxes and mask, where the clusters synchronize, the
cache-hinted copies, refusals, candidates, and an sm_90a compile of the device test's tiles."""

import re
import shutil

import pytest
from sm90 import assert_builds_without_spills

from merit import workloads as W
from merit.gpu import ldsm
from merit.gpu.ldsm import grid_blocks, pair_index, pair_schedule, source, wgmma_fits
from merit.gpu.spec import OPERAND_DTYPES, spec_of
from merit.gpu.tiling import H100, check_tile, rank

_B128 = {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}
_B256 = {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}
_B128W2 = {"regs": (128, 128), "warps": (8, 2), "frags": (1, 8)}

#: (problem, tile shape, grid): as the device test's cases
_CASES = [
    (W.gemm(333, 200, 1000), _B128, 4), (W.gemm(1000, 520, 200), _B128, 6),
    (W.gemm(300, 264, 520), _B256, 1000), (W.fc(520, 312, 200), _B128W2, 2),
    (W.gemm(4096, 4096, 4096), _B256, 132),
]


def _spec(problem, prec="fp16"):
    return spec_of(problem, "float32", prec, operands=OPERAND_DTYPES[prec])


def _tile(spec, shape, **kw):
    f = dict(shape, mma=spec.precision, ldsm=True, wgmma=True, chunk=64, stages=4, producer=True,
             tma=True, half=True, mn=spec.name == "gemm", persist=132, cluster=2)
    f.update(kw)
    return check_tile(spec, f)


def _eval(expr, env):
    """A C integer expression of the generated source evaluated in Python (non-negative values:
    the operators mean the same)."""
    expr = re.sub(r"\(int\)|\(unsigned\)", "", expr).replace("/", "//").replace("////", "//")
    return eval(expr, {"min": min}, dict(env))   # noqa: S307


def _tiles_of_source(code, block):
    """The output tiles block ``block`` of the generated kernel visits, in order: its consumers'
    ``for (t ...)`` loop and the block coordinates ``pb<j>`` evaluated from the source, with
    ``blockIdx.x = block`` and ``crank = block & 1``."""
    body = code[code.index("const unsigned long long da0"):]
    loop = re.search(r"for \(int t = (.*?); t < (\d+); t \+= (\d+)\) \{\n(.*?)\n\s*c0_0_0 = 0",
                     body, re.S)
    start, stop, step, decode = loop.groups()
    env = {"blockIdx": type("B", (), {"x": block})(), "crank": block & 1}
    out = []
    t = _eval(start.replace("blockIdx.x", str(block)), env)
    while t < int(stop):
        loc = dict(env, t=t)
        for stmt in decode.split(";"):
            stmt = stmt.strip()
            m = re.match(r"(?:const )?int (\w+) = (.*)", stmt) or re.match(r"(\w+) /= (.*)", stmt)
            if not m:
                continue
            if "/=" in stmt:
                loc[m.group(1)] = loc[m.group(1)] // _eval(m.group(2), loc)
            else:
                loc[m.group(1)] = _eval(m.group(2), loc)
        out.append(tuple(loc[f"pb{j}"] for j in range(2)))
        t += int(step)
    return out


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_pair_schedule_covers_every_tile_once(case):
    """Every output tile by exactly one block; the two blocks of a cluster visit the same number
    of tiles (their rings stay in step), side by side along the rows (the same columns: the
    shared B tile); the tiles past the output only as the second of the last pair of an odd
    number of row blocks; the generated loop visits what :func:`pair_schedule` says."""
    problem, shape, grid = _CASES[case]
    spec = _spec(problem)
    t = _tile(spec, shape, persist=grid)
    assert wgmma_fits(spec, t) == ""
    name, code, nblocks, nthreads, smem = source(spec, t)
    blk = t.block
    g = [-(-n // b) for n, b in zip(spec.pshape, blk, strict=True)]
    jc = pair_index(spec, t)
    assert jc == 0
    sched = pair_schedule(spec, t)
    assert nblocks == len(sched) == min(grid - grid % 2, grid_blocks(spec, t)[0]) and \
        nblocks % 2 == 0
    real = [c for s in sched for c in s if c is not None]
    want = [(i, j) for i in range(g[0]) for j in range(g[1])]
    assert sorted(real) == want
    ghosts = sum(c is None for s in sched for c in s)
    assert ghosts == (g[1] if g[0] % 2 else 0)
    for b in range(0, nblocks, 2):
        s0, s1 = sched[b], sched[b + 1]
        assert len(s0) == len(s1)
        for x, y in zip(s0, s1, strict=True):
            assert x is not None and x[0] % 2 == 0
            if y is None:
                assert x[0] == g[0] - 1
            else:
                assert (y[0], y[1]) == (x[0] + 1, x[1])
    for b in range(nblocks):   # the generated loop, evaluated
        got = _tiles_of_source(code, b)
        assert got == [(2 * (s[0] // 2) * blk[0] + (b & 1) * blk[0], s[1] * blk[1])
                       if s else got[i] for i, s in enumerate(sched[b])]
        for i, s in enumerate(sched[b]):
            if s is None:   # past the output: the epilogue is skipped
                assert got[i][0] >= spec.pshape[0]
                assert f"if (pb0 < {spec.pshape[0]})" in code


def test_barriers_multicast_and_cluster_syncs():
    """"full": one arrival (the expected bytes: A's box and both halves of B); "empty": one
    arrival per consumer warpgroup of both blocks; each producer multicasts (mask 3) every other
    box of B from its rank, A alone; every k tile and the tile's last released on this block's
    and the peer's "empty"; three cluster barriers: after the initialization, before the
    producer returns, after the consumers' last tile (none per output tile)."""
    spec = _spec(W.gemm(4096, 4096, 4096))
    t = _tile(spec, _B256)
    code = source(spec, t)[1]
    assert "__cluster_dims__(2, 1, 1)" in code
    assert re.search(r"merit_mb_init\(mbar \+ 8 \* s, 1\);", code)
    assert re.search(r"merit_mb_init\(mbar \+ 32 \+ 8 \* s, 4\);", code)
    assert "merit_mb_expect(mbar + 8 * s, 49152);" in code   # 128 x 64 + 256 x 64, 2 bytes
    assert '"h"((unsigned short)3)' in code
    mc = re.findall(r"merit_tma2mc\(sbase \+ s \* 49152 \+ 16384 \+ \((\d) \+ \(int\)crank\) "
                    r"\* 8192, &tm1, pb1 \+ \((\d) \+ \(int\)crank\) \* 64, kt \* 64", code)
    assert mc == [("0", "0"), ("2", "2")]
    boxes = sorted(int(g) + r for g, _ in mc for r in (0, 1))
    assert boxes == [0, 1, 2, 3]   # both ranks together: B's 4 boxes once
    assert code.count("merit_tma2(sbase") == 1 and "&tm0, kt * 64, pb0 + 0 * 128" in code
    rel = "mbar + 32 + 8 * ((g + 3) % 4)"
    assert f"if (kt > 0 && (tid & 127) == 0) merit_mb_arrive({rel});" in code
    assert f"if (kt > 0 && (tid & 127) == 32) merit_mb_arrive_peer({rel}, crank ^ 1u);" in code
    last = "mbar + 32 + 8 * ((g0 + 63) % 4)"
    assert f"if ((tid & 127) == 0) merit_mb_arrive({last});" in code
    assert f"if ((tid & 127) == 32) merit_mb_arrive_peer({last}, crank ^ 1u);" in code
    body = code[code.index("__global__"):]
    assert body.count("merit_cluster_sync();") == 3
    tail = body[body.rindex("g0 += 64;"):]
    assert "merit_cluster_sync();" in tail   # after the consumers' tile loop
    assert "if (pb0 <" not in code   # an even number of row blocks: no tile past the output


def test_odd_rows_copy_the_last_block():
    """With an odd number of row blocks the producer copies A's rows from ``pc0`` (the block
    coordinate clamped to the last block): a tile past the output reads valid rows."""
    spec = _spec(W.gemm(333, 200, 1000))
    t = _tile(spec, _B128, persist=4)
    code = source(spec, t)[1]
    assert "const int pc0 = min(pb0, 256);" in code
    assert "&tm0, kt * 64, pc0 + 0 * 128" in code
    assert "if (pb0 < 333)" in code


def test_l2_hints():
    """``Tile.evict`` 1: the staged epilogue's bulk store carries an evict-first policy, the
    operand copies none; 2: the copies (the multicast one too) an evict-last policy; 0: the
    source as before (no policy); refused without a staged epilogue or with another value."""
    spec = _spec(W.gemm(4096, 4096, 4096))
    base = _tile(spec, _B256, stages=3, epi=2, cluster=1)
    plain = source(spec, base)[1]
    assert "createpolicy" not in plain
    one = source(spec, _tile(spec, _B256, stages=3, epi=2, cluster=1, evict=1))[1]
    assert one.count("createpolicy.fractional.L2::evict_first") == 1 and "evict_last" not in one
    assert "bulk_group.L2::cache_hint [%0, {%2, %3}], [%1], pol;" in one
    two = source(spec, _tile(spec, _B256, stages=3, epi=2, evict=2))[1]
    assert two.count("createpolicy.fractional.L2::evict_last") == 2
    assert ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, pol;" in two
    assert "complete_tx::bytes.L2::cache_hint " in two
    lab = _tile(spec, _B256, stages=3, epi=2, evict=2).label()
    assert lab.endswith("_wgc2_h3_mn_ws_tma_g132_e2_ef2")
    with pytest.raises(ValueError, match="tile.evict"):
        _tile(spec, _B256, evict=1)
    with pytest.raises(ValueError, match="tile.evict"):
        _tile(spec, _B256, epi=2, stages=3, evict=3)


def test_refusals():
    """An odd persistent grid in clusters; clusters without bulk copies of both operands."""
    spec = _spec(W.gemm(4096, 4096, 4096))
    with pytest.raises(ValueError, match="even grid"):
        _tile(spec, _B256, persist=131)
    tf = spec_of(W.gemm(512, 512, 512), "float32", "tf32")
    with pytest.raises(ValueError):
        check_tile(tf, dict(_B128, mma="tf32", ldsm=True, wgmma=True, chunk=32, stages=3,
                            producer=True, tma=True, persist=132, cluster=2))


def test_candidates_add_hints_and_clusters_when_on(monkeypatch):
    """GEMM 4096^3 FP16 / BF16: the autotuner's list keeps every earlier form and adds each
    staged form with evict-first stores; the cluster forms only with ``CLUSTER_TUNED`` (off:
    measured slower), then per persistent tile its cluster form with its staged forms; every
    added tile builds."""
    from merit.gpu import tiling

    for prec in ("fp16", "bf16"):
        spec = _spec(W.gemm(4096, 4096, 4096), prec)
        off = rank(spec, count=24, device=H100)
        assert not any(t.cluster > 1 for t in off)
        monkeypatch.setattr(tiling, "CLUSTER_TUNED", True)
        tiles = rank(spec, count=24, device=H100)
        monkeypatch.setattr(tiling, "CLUSTER_TUNED", False)
        assert [t for t in tiles if t.cluster == 1] == off
        labels = [t.label() for t in tiles]
        assert len(set(labels)) == len(labels)
        pers = [t for t in tiles if t.persist and t.cluster == 1 and not t.epi]
        assert pers
        for p in pers:
            c = [t for t in tiles if t.cluster == 2 and t.persist and t.stages == p.stages
                 and t.regs == p.regs and t.chunk == p.chunk and t.warps == p.warps]
            assert any(not t.epi for t in c), p.label()
        staged = [t for t in tiles if t.epi and not t.evict]
        assert staged and all(
            any(u.evict == 1 and u.epi == s.epi and u.cluster == s.cluster and u.regs == s.regs
                and u.stages == s.stages for u in tiles) for s in staged)
        for t in tiles:
            if t.cluster == 2 or t.evict:
                assert t.persist % 2 == 0 or t.cluster == 1
                source(spec, t)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_device_test_tiles_compile_without_spills(tmp_path):
    """The device test's cluster tiles (direct and staged epilogue, both hints) build for
    sm_90a with no spill stores."""
    for problem, shape, grid in _CASES[:4]:
        spec = _spec(problem)
        for kw in (dict(stages=4), dict(stages=3, epi=2, evict=2)):
            t = _tile(spec, shape, persist=grid, **kw)
            assert_builds_without_spills(source(spec, t)[1], tmp_path, t.label())
    assert ldsm.EPI_COLS == 32
