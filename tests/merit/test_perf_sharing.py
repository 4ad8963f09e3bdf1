"""Operand sharing between TAUs: the compiler's choice of slot and group, and the model's dispatch
units (void tiles), traffic and cycles."""

import dataclasses
import importlib

import numpy as np
import pytest

from merit import perf
from merit import workloads as W
from merit.compile import CompileError, compile_problem, share_choice

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


@pytest.fixture(autouse=True)
def _powers_of_two(monkeypatch):
    """Tiles of powers of two (the tile counts below assume them; an even split of the 14 or 24
    outputs would take fewer tiles), and none of the tiles ranked by estimated time (which
    depend on the TAU count: one and four TAUs would compile different tiles), nor those under
    half the CP's cap (weighed by the model, also per TAU count)."""
    monkeypatch.setattr(importlib.import_module("merit.mapping.search"), "SPLITS", 0)
    monkeypatch.setattr(importlib.import_module("merit.compile"), "RANKED", 0)
    monkeypatch.setattr(importlib.import_module("merit.compile"), "search_caps",
                        lambda cap, lanes: (cap,))


def _conv(taus):
    return compile_problem(W.conv2d(1, 8, 16, 16, 8, 3), taus=taus, share_dims=1, **SMALL)


def test_one_tau_shares_nothing():
    k = _conv(1)
    assert (k.config["share_slot"], k.config["share_log2"]) == (0, 0)


def test_conv_shares_its_weights_across_pixel_tiles():
    k = _conv(4)
    slots = k.config["rp0"] + k.config["rp1"]
    shared = slots[k.config["share_slot"]]
    assert k.config["share_log2"] == 2
    # the weights: no stride on the pixel indices, alone in RP1
    assert shared["stride"][2] == 0 and shared["stride"][3] == 0
    assert k.config["share_slot"] == len(k.config["rp0"])


def test_a_slot_next_to_another_in_its_rp_is_never_shared():
    config = {"rp0": [{"enable": 1, "box": [1, 1, 4, 4], "stride": [0, 1] + [0] * 10},
                      {"enable": 1, "box": [1, 1, 4, 4], "stride": [1, 0] + [0] * 10}],
              "rp1": [{}], "a_size": [1] * 6, "a_tile": [1] * 6,
              "p_size": [4, 4, 1, 1, 1, 1], "p_tile": [1, 1, 1, 1, 1, 1]}
    tiles = [(i, j) for i in range(4) for j in range(4)]
    assert share_choice(config, tiles, 4, compute_per_tile=1) == (0, 0)


def test_compile_checks_taus():
    with pytest.raises(TypeError, match="taus must be an integer, not '4'"):
        compile_problem(W.gemm(16, 16, 16), taus="4", **SMALL)
    with pytest.raises(ValueError, match="taus must be between 1 and 16, not 17"):
        compile_problem(W.gemm(16, 16, 16), taus=17, **SMALL)
    assert issubclass(CompileError, ValueError)


def test_sharing_reads_the_shared_slot_once_per_group():
    alone, shared = _conv(1), _conv(4)
    a = perf.job_costs(alone, taus=4)
    s = perf.job_costs(shared, taus=4)
    assert (s["tile"] >= 0).sum() == (a["tile"] >= 0).sum()       # every tile once
    # the weights (read once per group instead of once per tile) make up the difference
    weights = perf._numbered_slots(shared)[shared.config["share_slot"]][1]
    origins = np.asarray(shared.tiles, dtype=np.int64)
    per_tile = sum(int(perf._load_counts(shared, weights, origins[:1], a_origin)[0][0])
                   for a_origin, _ in perf._a_tiles(shared))
    groups = len(shared.tiles) // 4
    assert a["read"].sum() - s["read"].sum() == per_tile * (len(shared.tiles) - groups)
    p1 = perf.predict(alone, taus=4, rp_bytes=SMALL["rp_bytes"])
    p4 = perf.predict(shared, taus=4, rp_bytes=SMALL["rp_bytes"])
    assert p4.read_bytes < p1.read_bytes and p4.cycles < p1.cycles


def test_a_run_shorter_than_the_group_leaves_void_tiles():
    # 3 pixel tiles per output-channel block, groups of 4 sharing the weights: one void tile each
    k = compile_problem(W.conv2d(1, 8, 26, 10, 16, 3), taus=4, share_dims=1, **SMALL)
    weights = len(k.config["rp0"])
    k = dataclasses.replace(k, config=dict(k.config, share_slot=weights, share_log2=2))
    units = perf._units(k, 4, weights)
    assert [t for unit in units for t, _ in unit if t >= 0] == list(range(len(k.tiles)))
    assert [sum(t < 0 for t, _ in unit) for unit in units] == [1] * (len(k.tiles) // 3)
    voids = [o for unit in units for t, o in unit if t < 0]
    # a void tile keeps the leader's output channels, every other index at its extent
    assert all(o[2] == k.problem.p_shape[2] and o[3] == k.problem.p_shape[3] for o in voids)
    costs = perf.job_costs(k, taus=4)
    assert costs["write"][costs["tile"] < 0].sum() == 0
    assert (costs["tile"] < 0).sum() == len(voids) * len(perf._a_tiles(k))


def test_the_groups_lock_step_on_a_13x13_grid():
    """AlexNet CONV2+Pool2's pooled 13 x 13 grid, 32 channels a tile on the lanes, groups of 4
    sharing the weights: the sum over units of their largest tile (warps) in each order."""
    from merit.compile import lockstep_warps
    shape, lanes, dep = (1, 128, 13, 13), (1, 32, 1, 1), [1]
    # 1 x 5 tiles: 5, 5, 3 columns; the grid's order puts a 3 in every unit of 5s
    assert lockstep_warps(shape, (1, 32, 1, 5), lanes, dep, 4, False) == (4 * 50, 4 * 10)
    assert lockstep_warps(shape, (1, 32, 1, 5), lanes, dep, 4, True) == (4 * 44, 4 * 10)
    # 4 x 2 tiles: 46 either way, against 169 / 4 warps a member
    for whole in (True, False):
        assert lockstep_warps(shape, (1, 32, 4, 2), lanes, dep, 4, whole) == (4 * 46, 4 * 7)
    assert lockstep_warps(shape, (1, 32, 4, 2), lanes, dep, 1) == (4 * 169, 4 * 28)


@pytest.mark.parametrize("order", [0, 1])
def test_the_models_units_follow_the_share_order(order):
    """Each run's whole tiles first (``share_order`` 1) or the grid's order, and the model's
    units wait for the warps the compiler's estimate counts."""
    from merit.compile import lockstep_warps
    k = compile_problem(W.conv2d(1, 8, 15, 15, 16, 3), taus=4, share_dims=1, **SMALL)
    weights = len(k.config["rp0"])
    k = dataclasses.replace(k, config=dict(k.config, share_slot=weights, share_log2=2,
                                           share_order=order))
    units = perf._units(k, 4, weights)
    real = [t for unit in units for t, _ in unit if t >= 0]
    assert sorted(real) == list(range(len(k.tiles)))
    shape, tile = k.problem.p_shape, k.tiling.p_tile
    cut = [any(o + t > n for o, t, n in zip(k.tiles[i][2:], tile[2:], shape[2:], strict=True))
           for i in real]
    runs = [[c for i, c in zip(real, cut, strict=True) if k.tiles[i][1] == ch]
            for ch in sorted({o[1] for o in k.tiles})]
    assert any(cut)
    if order:
        assert all(r == sorted(r) for r in runs)        # whole (False) before cut (True)
    else:
        assert real == list(range(len(k.tiles)))
    warps = [[int(np.prod(k.tiling.edge_warps(o, shape))) for _, o in unit] for unit in units]
    assert lockstep_warps(shape, tile, k.tiling.lanes_per_index(), [1], 4, bool(order)) == (
        sum(max(w) for w in warps), len(units))


def test_the_compiler_takes_whole_tiles_first_where_the_groups_wait_less():
    from merit.compile import lockstep_warps
    k = compile_problem(W.conv2d(1, 8, 15, 15, 16, 3), taus=4, share_dims=1, **SMALL)
    n_p = len(k.problem.p_shape)
    assert k.config["share_log2"] == 2
    slot = (k.config["rp0"] + k.config["rp1"])[k.config["share_slot"]]
    dep = [j for j in range(n_p) if slot["stride"][j]]
    args = (k.problem.p_shape, k.tiling.p_tile, k.tiling.lanes_per_index(), dep, 4)
    assert k.config["share_order"] == int(lockstep_warps(*args, True)[0]
                                          < lockstep_warps(*args, False)[0])


def test_a_group_that_does_not_divide_the_taus_is_modelled_without_sharing():
    k = _conv(4)
    assert perf._group(k, 3) == (1, None)
    assert perf._group(k, 4) == (4, k.config["share_slot"])


# ---- two-dimensional sharing (merit.compile.share_plan, merit.perf's block walk) -----------

def _conv2d(taus, counts=(2,)):
    return compile_problem(W.conv2d(1, 8, 16, 16, 32, 3), taus=taus, share_dims=2,
                           share_counts=counts, **SMALL)


def test_share_walk_splits_the_indices_by_what_each_slot_moves_along():
    from merit.compile import share_walk
    weights, inputs = {1}, {0, 2, 3}            # a conv's (batch, channel, row, column)
    assert share_walk(4, [weights, inputs]) == ([0, 2, 3], [1], [])
    assert share_walk(4, [inputs, weights]) == ([1], [0, 2, 3], [])
    assert share_walk(4, [weights]) == ([0, 2, 3], [], [1])
    assert share_walk(3, [{0}, {0, 1}]) == ([1, 2], [], [0])


def test_share_dims_is_checked():
    with pytest.raises(ValueError, match="share_dims must be None, 1 or 2, not 3"):
        compile_problem(W.gemm(16, 16, 16), taus=4, share_dims=3, **SMALL)


def test_one_tau_or_1d_compile_has_no_2d_plan():
    assert _conv2d(1).sharing is None
    assert _conv(4).sharing is None                 # the processor's 1-D choice, in config


def test_2d_blocks_deal_every_tile_once_and_each_group_agrees_on_its_slot():
    k = _conv2d(4)
    assert len(k.sharing) == 2 and sum(v for _, v in k.sharing) == 2
    shares, walk = perf._shares(k, 4)
    assert walk == "block"
    units = perf._block_units(k, shares)
    real = sorted(t for unit in units for t, _ in unit if t >= 0)
    assert real == list(range(len(k.tiles)))
    slots = perf._numbered_slots(k)
    shape = k.problem.p_shape
    for unit in units:
        assert len(unit) == 4
        for slot, _, log2, shift in shares:
            dep = [j for j in range(len(shape)) if slots[slot][1]["stride"][j]]
            mask = ((1 << log2) - 1) << shift
            for a in range(4):
                b = a & ~mask                         # the group's leader
                assert all(unit[a][1][j] == unit[b][1][j] for j in dep), (unit, slot)
        for t, origin in unit:                        # a void tile lies outside the space
            assert (t < 0) == any(o >= n for o, n in zip(origin, shape, strict=True))


def test_2d_sharing_reads_each_shared_slot_once_per_group():
    k = _conv2d(4)
    shares, _ = perf._shares(k, 4)
    units = perf._block_units(k, shares)
    origins = np.asarray([o for unit in units for _, o in unit], dtype=np.int64)
    slots = perf._numbered_slots(k)
    shared = {slot: (log2, shift) for slot, _, log2, shift in shares}
    expected = 0
    for a_origin, _ in perf._a_tiles(k):
        for n, (_, slot) in enumerate(slots):
            if slot is None:
                continue
            beats = perf._load_counts(k, slot, origins, a_origin)[0]
            for i, b in enumerate(beats):
                member = i % 4
                if n in shared:                     # only the group's leader fetches
                    log2, shift = shared[n]
                    if member & (((1 << log2) - 1) << shift):
                        continue
                expected += int(b)
    costs = perf.job_costs(k, taus=4)
    assert costs["read"].sum() == expected
    alone = perf.job_costs(k, taus=3)               # 4-TAU blocks on 3 TAUs: no sharing
    assert (alone["tile"] < 0).sum() == 0
    assert costs["read"].sum() < alone["read"].sum()


def test_2d_sharing_is_predicted_faster_than_none_and_every_tile_runs():
    k = _conv2d(4)
    shared = perf.predict(k, taus=4, dram_bytes_per_cycle=2, rp_bytes=SMALL["rp_bytes"])
    plain = perf.predict(dataclasses.replace(k, sharing=(),
                                             config=dict(k.config, share_log2=0)),
                         taus=4, dram_bytes_per_cycle=2, rp_bytes=SMALL["rp_bytes"])
    assert shared.read_bytes < plain.read_bytes
    assert shared.cycles < plain.cycles
    assert all(0 <= t.tau < 4 for t in shared.per_tile)
    assert len(shared.per_tile) == len(k.tiles)


def test_share_plan_shares_both_gemm_operands_when_only_2d_is_allowed():
    k = compile_problem(W.gemm(64, 64, 32), taus=4, share_dims=2, share_counts=(2,), **SMALL)
    slots = perf._numbered_slots(k)
    assert len(k.sharing) == 2
    assert {slots[n][0] for n, _ in k.sharing} == {0, 1}       # one slot per RP
