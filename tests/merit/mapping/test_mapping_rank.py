"""The search ranked by estimated time (``search(..., rank=...)``): warps of edge tiles counted
against a walk over every tile, the contiguous lane groupings, and the order in which ranked
tiles come back; the compiler's estimate (``merit.compile.estimate_time``)."""

import itertools

import numpy as np
import pytest

from merit import workloads as W
from merit.compile import Tiling, compile_problem, estimate_time
from merit.mapping import search
from merit.mapping.analysis import LaneGrouping
from merit.mapping.search import computed_warps, lane_splits, vector_lines


def _walk_warps(tile_p, p_shape, per_index):
    """Warps that hold an output, by walking every tile and every warp (no formula)."""
    total = 0
    starts = [range(0, n, t) for n, t in zip(p_shape, tile_p, strict=True)]
    for origin in itertools.product(*starts):
        counts = []
        for o, t, n, k in zip(origin, tile_p, p_shape, per_index, strict=True):
            counts.append(sum(1 for w in range(t // k) if o + w * k < n))
        total += max(1, int(np.prod(counts))) if all(counts) else 1
    return total


@pytest.mark.parametrize("tile_p, p_shape, per_index", [
    ((1, 2, 9, 3, 16, 1), (1, 64, 9, 3, 13, 3), (1, 2, 1, 1, 16, 1)),
    ((4, 8), (9, 13), (2, 4)),
    ((16, 3), (13, 3), (8, 1)),
    ((5, 8), (27, 13), (1, 8)),
])
def test_computed_warps_counts_the_warps_every_tile_runs(tile_p, p_shape, per_index):
    per_index = per_index[:len(tile_p)]
    if any(t % k for t, k in zip(tile_p, per_index, strict=False)):
        pytest.skip("lanes do not divide the tile")
    assert computed_warps(tile_p, p_shape, per_index) == _walk_warps(tile_p, p_shape, per_index)


def test_computed_warps_agrees_with_the_tilings_edge_warps():
    tiling = Tiling((4, 16), (1,), (1, 1, 1, 0))            # 8 lanes on p1, 2 on p0
    shape = (9, 13)
    origins = itertools.product(range(0, 9, 4), range(0, 13, 16))
    expected = sum(int(np.prod(tiling.edge_warps(o, shape))) for o in origins)
    assert computed_warps((4, 16), shape, tiling.lanes_per_index()) == expected


def test_lane_splits_are_every_contiguous_grouping():
    splits = list(lane_splits((4, 6, 8), 16))
    # bits per index (b0, b1, b2) with 2**b | tile and b0 + b1 + b2 = 4: b0 <= 2, b1 <= 1, b2 <= 3
    expected = {(b0, b1, 4 - b0 - b1) for b0 in range(3) for b1 in range(2)
                if 0 <= 4 - b0 - b1 <= 3}
    assert {tuple(int(k).bit_length() - 1 for k in per) for _, per in splits} == expected
    for grouping, per in splits:
        grouping.check((4, 6, 8), 16)
        index = [j for j, _ in grouping.bits]
        assert index == sorted(index, reverse=True)          # inner indices take the low bits
        assert tuple(1 << index.count(j) for j in range(3)) == per


def test_ranked_search_returns_the_lowest_key_first():
    problem = W.conv2d(1, 8, 13, 13, 16, 3, padding=1)
    seen = {}

    def rank(tile_p, tile_a, warps, lines):
        key = warps * 10_000 + lines * 100 + int(np.prod(tile_p)) % 100
        seen[(tile_p, tile_a)] = min(key, seen.get((tile_p, tile_a), key))
        return key

    found = search(problem, 8, 2048, alternatives=3, rank=rank)
    keys = [seen[(m.tile_p, m.tile_a)] for m in found]
    assert keys == sorted(keys)
    assert keys[0] == min(seen.values())
    # the grouping that comes back is the tile's lowest key
    best = found[0]
    per = [1 << sum(1 for j, _ in best.grouping.bits if j == i) for i in range(4)]
    key = (computed_warps(best.tile_p, problem.p_shape, per) * 10_000
           + vector_lines(best.grouping, problem.p_shape) * 100 + int(np.prod(best.tile_p)) % 100)
    assert key == keys[0]


def test_vector_lines_counts_the_lines_of_the_valid_lanes():
    # 8 lanes along x of a 3 x 10 output: words 0..7, two 4-word lines
    assert vector_lines(LaneGrouping(((1, 0), (1, 1), (1, 2))), (3, 10)) == 2
    # 2 x 4 lanes: rows 0 and 1 (10 words apart): words 0-3 and 10-13, lines 0, 2, 3
    assert vector_lines(LaneGrouping(((1, 0), (1, 1), (0, 0))), (3, 10)) == 3
    # lanes beyond the output (x = 4..7 of a 3 x 4 output) write nothing
    assert vector_lines(LaneGrouping(((1, 0), (1, 1), (1, 2))), (3, 4)) == 1


def test_estimate_counts_idle_lanes_and_sharing():
    problem = W.conv2d(1, 8, 16, 16, 16, 3, padding=1)
    kw = dict(lanes=8, ports=[(0, 0), (1, 0)], per_lane=72, regs=1)
    dense = estimate_time(problem, (1, 16, 4, 8), (8, 3, 3), 128, taus=1, **kw)
    idle = estimate_time(problem, (1, 16, 4, 8), (8, 3, 3), 192, taus=1, **kw)
    assert idle > dense                               # more warps, more compute
    alone = estimate_time(problem, (1, 16, 4, 8), (8, 3, 3), 128, taus=4, **kw)
    assert alone <= dense                             # four TAUs, sharing the weights at best


def test_compiler_takes_a_ranked_tile_only_when_predicted_faster():
    from merit import perf
    problem = W.deconv2d(1, 16, 8, 12, 16, 5, stride=3, padding=1)
    ranked = compile_problem(problem, lanes=8, taus=2)
    import merit.compile as C
    old, C.RANKED = C.RANKED, 0
    try:
        plain = compile_problem(problem, lanes=8, taus=2)
    finally:
        C.RANKED = old
    assert perf.predict(ranked, taus=2).cycles <= perf.predict(plain, taus=2).cycles
