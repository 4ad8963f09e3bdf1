"""Footprint reuse across a TAU's consecutive jobs (``compile_problem(hold=True)``,
``config["hold"]``): which slots are held, the loads it saves, that it never costs cycles, that a
held tile keeps its place in the RP's FIFO (no new one), and the held slot budgeted at its whole
RP."""

import dataclasses
import importlib

import numpy as np
import pytest

from merit import perf
from merit import workloads as W
from merit.compile import compile_problem

# the weights in their own rows of k words (counted by hand below), not merged
SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, merge_rows=False)


@pytest.fixture(autouse=True)
def _powers_of_two(monkeypatch):
    """Tiles of powers of two and none ranked by estimated time (the tile below is fixed)."""
    monkeypatch.setattr(importlib.import_module("merit.mapping.search"), "SPLITS", 0)
    monkeypatch.setattr(importlib.import_module("merit.compile"), "RANKED", 0)


def _weight_beats(kernel, slot):
    """8-byte beats of one footprint of a dense ``(m, c, k, k)`` weight tensor that the slot's box
    covers whole, counted by hand: one read per row of ``k`` words, a partial first beat where
    the row starts inside one."""
    m, c, k, _ = slot["box"]
    base = slot["base"]
    beats = 0
    for row in range(m * c * k):
        word = base // 2 + row * k
        beats += -(-(word % 4 + k) // 4)
    return beats


@pytest.mark.parametrize("size", [16, 48])
def test_a_held_weight_tile_is_loaded_once_per_tau(size):
    # 48 x 48: more tiles than the RP FIFOs hold, so the tile looper waits for room
    problem = W.conv2d(1, 4, size, size, 4, 3)
    plain = compile_problem(problem, **SMALL)
    held = compile_problem(problem, hold=True, **SMALL)
    assert held.hold and not plain.hold
    assert plain.tiling == held.tiling
    weights = held.config["rp1"][0]
    # the tile covers every output channel and the whole accumulation: every job (one per
    # parallel tile) reads the same weights, the whole tensor
    assert weights["box"] == [4, 4, 3, 3]
    assert all(a == t for a, t in zip(held.config["a_size"], held.config["a_tile"], strict=True))
    tiles = len(held.tiles)
    assert tiles > 1
    saved = (tiles - 1) * _weight_beats(held, weights) * 8
    a, b = perf.predict(plain), perf.predict(held)
    assert a.read_bytes - b.read_bytes == saved
    assert b.cycles <= a.cycles


def test_only_a_slot_alone_in_its_rp_and_not_shared_is_held():
    # 4 TAUs share the weights (RP1), so only the image slot (alone in RP0) may be held
    k = compile_problem(W.conv2d(1, 8, 16, 16, 8, 3), taus=4, hold=True, **SMALL)
    assert k.config["share_log2"] == 2
    shared_port = 0 if k.config["share_slot"] < len(k.config["rp0"]) else 1
    jobs = perf._jobs(k, taus=4)
    assert (jobs.key[:, shared_port] == -1).all()
    assert (jobs.key[:, 1 - shared_port] >= 0).all()
    # without hold no RP has a key
    plain = dataclasses.replace(k, hold=False)
    assert (perf._jobs(plain, taus=4).key == -1).all()


@pytest.mark.parametrize("taus", [1, 2, 4])
@pytest.mark.parametrize("make", [lambda: W.gemm(64, 64, 32), lambda: W.conv2d(1, 4, 16, 16, 8, 3),
                                  lambda: W.alpha_blend(3, 16, 24, scale=2)],
                         ids=["gemm", "conv", "alpha"])
def test_holding_the_same_kernel_never_reads_more_nor_takes_longer(taus, make):
    k = compile_problem(make(), taus=taus, **SMALL)
    a = perf.predict(k, taus=taus)
    b = perf.predict(dataclasses.replace(k, hold=True), taus=taus)
    assert b.read_bytes <= a.read_bytes
    # never below reading every input once
    problem = k.problem
    assert b.read_bytes >= sum(2 * int(np.prod(t.shape)) for t in problem.tensors)
    assert b.write_bytes == a.write_bytes
    assert b.cycles <= a.cycles * 1.01
    assert np.isclose(b.utilization * b.cycles, a.utilization * a.cycles)


def test_the_held_rps_are_in_the_configuration():
    # 4 TAUs share the weights (RP1): only RP0's slot is held, and the model keys only it
    k = compile_problem(W.conv2d(1, 8, 16, 16, 8, 3), taus=4, hold=True, **SMALL)
    shared_port = 0 if k.config["share_slot"] < len(k.config["rp0"]) else 1
    assert k.config["hold"] == 1 << (1 - shared_port)
    one = compile_problem(W.conv2d(1, 8, 16, 16, 8, 3), taus=1, hold=True, **SMALL)
    assert one.config["share_log2"] == 0 and one.config["hold"] == 0b11
    assert "hold" not in compile_problem(W.conv2d(1, 8, 16, 16, 8, 3), **SMALL).config
    # a configuration without RP1's bit keys only RP0, whatever the kernel may hold
    cfg = dict(one.config, hold=0b01)
    keys = perf._jobs(dataclasses.replace(one, config=cfg)).key
    assert (keys[:, 1] == -1).all() and (keys[:, 0] >= 0).all()
    from merit.regmap import register_map
    register_map().config_words(one.config)         # the field fits its register


def test_held_rps_leaves_out_shared_and_crowded_rps():
    from merit.compile import held_rps
    slot = {"enable": 1}
    config = {"rp0": [slot, slot], "rp1": [slot], "share_slot": 0, "share_log2": 0}
    assert held_rps(config) == 0b10                 # RP0 has two enabled slots
    config["rp0"] = [slot, {"enable": 0}]
    assert held_rps(config) == 0b11
    assert held_rps(dict(config, share_slot=2, share_log2=1)) == 0b01
    assert held_rps(dict(config, share2_slot=0, share2_log2=1)) == 0b10
    assert held_rps(dict(config, share_slot=0, share_log2=1, share_block=1)) == 0b10


def test_hold_is_checked():
    with pytest.raises(TypeError, match="hold must be True or False, not 'yes'"):
        compile_problem(W.gemm(16, 16, 16), hold="yes", **SMALL)


def _fifo_jobs(jobs):
    """Jobs whose RP1 tiles fit in its FIFO at once."""
    return jobs.depth[1] // jobs.rows[1]


def test_a_held_tile_takes_no_new_place_in_the_rp_fifo():
    # the weights held for every job after the first: with RP1's FIFO one tile deep the held
    # jobs run as they do with room for two (the held tile is the previous job's), while the
    # kernel that loads every job's weights waits for each job's tile to be freed
    k = compile_problem(W.conv2d(1, 4, 48, 48, 4, 3), hold=True, **SMALL)
    rows = k.config["rp1"][0]["rows"]
    deep, shallow = (SMALL["rp_bytes"][0], 2 * 8 * 2 * rows), (SMALL["rp_bytes"][0], 2 * 8 * rows)
    assert _fifo_jobs(perf._jobs(k, shallow)) == 1
    assert _fifo_jobs(perf._jobs(k, deep)) == 2
    held = [perf.predict(k, rp_bytes=rp) for rp in (deep, shallow)]
    assert held[1].read_bytes == held[0].read_bytes
    assert held[1].cycles <= held[0].cycles * 1.01
    plain = [perf.predict(dataclasses.replace(k, hold=False), rp_bytes=rp)
             for rp in (deep, shallow)]
    assert plain[1].cycles > plain[0].cycles * 1.02


def test_a_held_slot_may_take_its_whole_rp():
    # 8 x 5 x 3 x 3 = 360 weight words: more than the double-buffered half of RP1 (256 words),
    # within the whole of it (512). With hold the weights of the whole reduction are held (one
    # accumulation tile, loaded once); without, the reduction is split and every job loads
    problem = W.conv2d(1, 5, 32, 32, 8, 3)
    depth = SMALL["rp_bytes"][1] // (2 * SMALL["lanes"])
    plain = compile_problem(problem, **SMALL)
    held = compile_problem(problem, hold=True, **SMALL)
    assert plain.config["rp1"][0]["rows"] <= depth // 2
    weights = held.config["rp1"][0]
    assert depth // 2 < weights["rows"] <= depth
    assert weights["box"] == [8, 5, 3, 3]
    rp = SMALL["rp_bytes"]
    assert _fifo_jobs(perf._jobs(held, rp)) == 1
    jobs = len(held.tiles)
    assert jobs > 1
    loads = perf.predict(dataclasses.replace(held, hold=False), rp_bytes=rp)
    a, b = perf.predict(plain, rp_bytes=rp), perf.predict(held, rp_bytes=rp)
    assert loads.read_bytes - b.read_bytes == (jobs - 1) * _weight_beats(held, weights) * 8
    assert b.cycles < a.cycles
