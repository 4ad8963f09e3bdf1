"""CPU tests of clustered placement (``Tile.place`` 2): a persistent wgmma tile launched in
clusters of two with nothing else changed.  The kernel carries the cluster shape
(``__cluster_dims__(2, 1, 1)``, the launch as any other's), its source is the plain tile's but
for that and its name (no cluster code: no rank, peer addresses or cluster barriers), the grid
is even; refusals (an odd grid, no persistent grid, clusters of their own, SIMT tiles); the
autotuner's candidates add the placed twin of each persistent form, and only those; an sm_90a
compile of the device test's tiles."""

import dataclasses
import re
import shutil

import pytest
from sm90 import assert_builds_without_spills

from merit import workloads as W
from merit.gpu import ldsm
from merit.gpu.ldsm import cluster_dims, grid_blocks, source
from merit.gpu.spec import OPERAND_DTYPES, spec_of
from merit.gpu.tiling import H100, check_tile, rank

_B128 = {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}
_B256 = {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}

#: (problem, tile shape, grid): ragged GEMMs as in the device test, and GEMM 4096^3
_CASES = [
    (W.gemm(333, 200, 1000), _B128, 4), (W.gemm(1000, 520, 200), _B128, 6),
    (W.gemm(4096, 4096, 4096), _B256, 132),
]
_DECL = re.compile(r'extern "C" __global__ void __launch_bounds__\([^)]*\) ?(.*?)(merit_\w+)\(')


def _spec(problem, prec="fp16"):
    return spec_of(problem, "float32", prec, operands=OPERAND_DTYPES[prec])


def _tile(spec, shape, **kw):
    f = dict(shape, mma=spec.precision, ldsm=True, wgmma=True, chunk=64, stages=4, producer=True,
             tma=True, half=True, mn=spec.name == "gemm", persist=132)
    f.update(kw)
    return check_tile(spec, f)


@pytest.mark.parametrize("case", range(len(_CASES)))
@pytest.mark.parametrize("epi", [0, 2])
def test_placed_kernel_is_the_plain_one_in_clusters(case, epi):
    """The kernel declares clusters of two, launches an even grid of ``persist`` blocks, and is
    otherwise the plain tile's source line for line (its name aside)."""
    problem, shape, grid = _CASES[case]
    spec = _spec(problem)
    plain = _tile(spec, shape, persist=grid, epi=epi)
    placed = _tile(spec, shape, persist=grid, epi=epi, place=2)
    assert placed.place == 2 and placed.label() == plain.label() + "_pl2"
    assert (cluster_dims(plain), cluster_dims(placed)) == (1, 2)
    n0, code0, nb0, nt0, sm0 = source(spec, plain)
    n1, code1, nb1, nt1, sm1 = source(spec, placed)
    assert (nt1, sm1, nb1) == (nt0, sm0, nb0)
    assert nb1 % 2 == 0 and nb1 == min(grid, grid_blocks(spec, placed)[0])
    d0, d1 = _DECL.search(code0), _DECL.search(code1)
    assert d0.group(1) == "" and d1.group(1) == "__cluster_dims__(2, 1, 1) "
    assert (d0.group(2), d1.group(2)) == (n0, n1) and n0 != n1
    assert code1.count("__cluster_dims__") == 1
    body = code1[d1.end():]   # the kernel (the preludes define helpers it does not call)
    for word in ("crank", "merit_mapa", "cluster", "merit_tma2mc"):
        assert word not in body, word
    assert code1.replace(n1, "K").replace("__cluster_dims__(2, 1, 1) ", "") \
        == code0.replace(n0, "K")


def test_refusals():
    """An odd launched grid; a tile without a persistent grid; a tile in clusters of its own
    (``Tile.cluster`` 2); a place other than 1 or 2; a SIMT tile."""
    spec = _spec(W.gemm(4096, 4096, 4096))
    with pytest.raises(ValueError, match="even grid"):
        _tile(spec, _B256, persist=131, place=2)
    with pytest.raises(ValueError, match="tile.place"):
        _tile(spec, _B256, persist=0, place=2)
    with pytest.raises(ValueError, match="tile.place"):
        _tile(spec, _B256, persist=132, cluster=2, place=2)
    with pytest.raises(ValueError, match="tile.place"):
        _tile(spec, _B256, persist=132, place=4)
    small = _spec(W.gemm(333, 200, 1000))   # 3 x 2 output tiles: a grid of 8 launches 6
    assert grid_blocks(small, _tile(small, _B128, persist=8, place=2))[1] == 6
    with pytest.raises(ValueError, match="even grid"):   # 3 x 1 tiles: 3 blocks launched
        _tile(_spec(W.gemm(333, 100, 1000)), _B128, persist=8, place=2)
    fp32 = spec_of(W.gemm(512, 512, 512), "float32", "fp32")
    with pytest.raises(ValueError, match="tile.place"):
        check_tile(fp32, dict(threads=(16, 16), regs=(4, 4), chunk=16, place=2))


def test_candidates_add_the_placed_forms(monkeypatch):
    """GEMM 4096^3 FP16 / BF16: with ``PLACE_TUNED`` the list is the list without it plus, for
    each persistent form of cluster 1 (direct and staged stores, with hints), its placed twin
    (an even grid); each builds."""
    from merit.gpu import tiling

    for prec in ("fp16", "bf16"):
        spec = _spec(W.gemm(4096, 4096, 4096), prec)
        monkeypatch.setattr(tiling, "PLACE_TUNED", False)
        off = rank(spec, count=24, device=H100)
        monkeypatch.setattr(tiling, "PLACE_TUNED", True)
        on = rank(spec, count=24, device=H100)
        assert not any(t.place > 1 for t in off)
        assert [t for t in on if t.place == 1] == off
        added = [t for t in on if t.place == 2]
        pers = [t for t in off if t.persist and t.cluster == 1]
        assert pers and len(added) == len(pers)
        for p in pers:
            q = dataclasses.replace(p, place=2, persist=p.persist - p.persist % 2)
            twin = [t for t in added if t == q]
            assert len(twin) == 1, p.label()
        labels = [t.label() for t in on]
        assert len(set(labels)) == len(labels)
        for t in added:
            assert t.persist % 2 == 0 and t.cluster == 1
            assert source(spec, t)[2] % 2 == 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_device_test_tiles_compile(tmp_path):
    """The device test's placed tiles build for sm_90a (the cluster shape accepted) with no
    spill stores."""
    for problem, shape, grid in _CASES[:2]:
        spec = _spec(problem, "bf16")
        for kw in (dict(stages=4), dict(stages=3, epi=2, evict=1)):
            t = _tile(spec, shape, persist=grid, place=2, **kw)
            assert_builds_without_spills(source(spec, t)[1], tmp_path, t.label())
    assert ldsm.EPI_COLS == 32


@pytest.mark.parametrize("cluster", [1, 2])
def test_elected_producer_is_the_plain_one_but_for_the_early_exit(cluster):
    """``Tile.elect``: the source is the plain tile's with one line added at the head of the
    producer's branch (its warps other than the first leave; in clusters after the last
    cluster barrier, which every thread of the cluster meets, whole warps at a time: the
    barrier is ``.aligned``), nothing else."""
    spec = _spec(W.gemm(4096, 4096, 4096))
    plain = _tile(spec, _B256, cluster=cluster, epi=2)
    el = dataclasses.replace(plain, elect=True)
    assert el.label() == plain.label() + "_el"
    a = source(spec, plain)[1].replace(plain.label(), "K").splitlines()
    b = source(spec, el)[1].replace(el.label(), "K").splitlines()
    assert len(b) == len(a) + 1
    i = next(i for i, (x, y) in enumerate(zip(a, b[:len(a)], strict=True)) if x != y)
    assert a[i - 1].strip().startswith("const int tid = threadIdx.x - 256;")
    exit_line = ("if (tid >= 32) { merit_cluster_sync(); return; }" if cluster > 1
                 else "if (tid >= 32) { return; }")
    assert b[i].strip() == exit_line and b[i + 1:] == a[i:]
    # the producer's branch then holds no work for another thread: every copy under tid == 0
    end = next(j for j, ln in enumerate(b) if "const unsigned long long da0" in ln)
    branch = "\n".join(b[i:end])
    assert "merit_tma2" in branch and "cp.async" not in branch
    if cluster > 1:   # one cluster barrier on every producer thread's way out
        assert branch.count("merit_cluster_sync();") == 2


def test_elect_refusals_and_candidates(monkeypatch):
    """A producer tile copying an operand by ``cp.async`` (its threads all copy) refuses
    ``elect``; with ``ELECT_TUNED`` each persistent form whose operands both go by bulk copies
    gets its elected twin (those copying B by ``cp.async``, K-major, none), off none."""
    from merit.gpu import tiling

    spec = _spec(W.gemm(4096, 4096, 4096))
    with pytest.raises(ValueError, match="tile.elect"):
        _tile(spec, _B256, tma=False, persist=0, elect=True)
    off = rank(spec, count=24, device=H100)
    assert not any(t.elect for t in off)
    monkeypatch.setattr(tiling, "ELECT_TUNED", True)
    on = rank(spec, count=24, device=H100)
    assert [t for t in on if not t.elect] == off
    pers = [t for t in off if t.persist and t.cluster == 1 and all(ldsm.tma_ops(spec, t))]
    assert pers and len(pers) < len([t for t in off if t.persist])   # the cp.async B: none
    assert sorted(t.label() for t in on if t.elect) == sorted(t.label() + "_el" for t in pers)
