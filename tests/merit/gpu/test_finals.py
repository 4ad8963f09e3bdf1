"""The autotuner's finalists' round (``merit.gpu.pick``): the tiles timed within a margin of the
fastest are timed again in turns and the least median wins.  CPU checks with a fake clock: no
GPU, and no real time measured."""

import random

import merit.gpu as gpu
from merit import workloads as W
from merit.gpu import Tile, finalists, in_turns, pick, runtime
from merit.gpu.spec import spec_of


def _tile(stages, warps=(2, 2)):
    return Tile(threads=(1, 1), regs=(128, 128), chunk=64, mma="fp16", warps=warps,
                frags=(4, 8), double=True, stages=stages, ldsm=True, half=True)


P3, P4, W4 = _tile(3), _tile(4), _tile(4, warps=(4, 1))
#: what each tile takes per call in turns (ms): GEMM 4096^3 FP16's 3- and 4-stage tiles
TRUE = {P3: 0.2430, P4: 0.2249, W4: 0.2600}


class Clock:
    """A fake batch timer: each batch reads a tile's true time times noise drawn from a seeded
    generator (a power-capped card's spread); it counts the batches each tile ran."""

    def __init__(self, spread=0.04, seed=5):
        self.rng = random.Random(seed)
        self.spread = spread
        self.batches = {}

    def turns(self, tiles):
        def time_batch(k):
            t = tiles[k]
            self.batches[t] = self.batches.get(t, 0) + 1
            return TRUE[t] * (1 + self.rng.uniform(-self.spread, self.spread))
        return time_batch


def test_finalists_are_those_within_the_margin_fastest_first_at_most_count():
    times = [(0.30, W4), (0.2410, P3), (0.2535, P4)]
    assert finalists(times, margin=0.10) == [P3, P4]
    assert finalists(times, margin=0.05) == [P3]           # 0.2535 is 5.2 % over 0.2410
    assert finalists(times, margin=0.30) == [P3, P4, W4]
    assert finalists(times, margin=0.30, count=2) == [P3, P4]
    assert finalists([], margin=0.1) == []
    # equal times: the one timed first leads
    assert finalists([(0.25, P4), (0.25, P3)], margin=0.0) == [P4, P3]


def test_turns_alternate_the_order_and_take_the_median():
    seen = []
    ms = {0: [1.0, 9.0, 1.2, 1.1, 1.3], 1: [2.0, 2.2, 0.1, 2.1, 2.3]}

    def time_batch(k):
        seen.append(k)
        return ms[k][sum(1 for s in seen if s == k) - 1]

    assert in_turns(2, time_batch, rounds=5) == [1.2, 2.1]   # one outlier each: not the median
    assert seen == [0, 1, 1, 0, 0, 1, 1, 0, 0, 1]


def test_a_noisy_first_round_is_corrected_by_the_turns():
    # the first rounds' one timing each put the 3-stage tile first (as on the H200 at 12:39)
    times = [(0.2410, P3), (0.2470, P4), (0.2950, W4)]
    assert min(times, key=lambda mt: mt[0])[1] == P3
    clock = Clock()
    best, rec = pick(times, clock.turns, margin=0.10, count=4, rounds=7)
    assert best == P4
    # only the two within 10 % ran again, each once a round
    assert clock.batches == {P3: 7, P4: 7}
    assert rec["first_pick"] == P3.label() and rec["pick"] == P4.label()
    assert P3.label() != P4.label() and rec["pick_rank"] == 1
    assert [f[0] for f in rec["finalists"]] == [P3.label(), P4.label()]
    assert [f[1] for f in rec["finalists"]] == [0.2410, 0.2470]
    assert rec["finalists"][1][2] < rec["finalists"][0][2]
    # every seed of the fake clock's 4 % noise gives the same pick
    for seed in range(20):
        assert pick(times, Clock(seed=seed).turns, rounds=7)[0] == P4


def test_one_finalist_runs_no_turns():
    clock = Clock()
    times = [(0.2249, P4), (0.2600, P3)]
    best, rec = pick(times, clock.turns, margin=0.10)
    assert best == P4 and clock.batches == {} and rec["finalists"] == [] and not rec["pick_rank"]
    assert rec["pick"] == rec["first_pick"] == P4.label()


def test_choose_picks_by_the_turns_and_caches_that(monkeypatch, tmp_path):
    """``_choose`` end to end on a fake runtime: one timing each in the first round, the
    finalists' round by batch timers, the pick put in the tile cache."""
    spec = spec_of(W.gemm(64, 64, 64), "float32", "fp16")
    device = "Fake GPU sm_80"
    first = {P3: 0.2410, P4: 0.2470, W4: 0.2950}
    clock = Clock()
    runs = {t: 0 for t in first}
    monkeypatch.setattr(runtime, "device_key", lambda: (0, device))
    monkeypatch.setattr(runtime, "compiled", lambda spec, tile: None)
    monkeypatch.setattr(runtime, "launcher", lambda spec, tile, inputs, out: tile)
    monkeypatch.setattr(runtime, "time_launch", lambda tile, **kw: first[tile])

    def batch_timer(tile, min_ms):
        def one():
            runs[tile] += 1
            return TRUE[tile] * (1 + clock.rng.uniform(-0.04, 0.04))
        return one

    monkeypatch.setattr(runtime, "batch_timer", batch_timer)
    gpu.seed(spec.key(), device, [P3, P4, W4])
    cache = runtime.TileCache(tmp_path / "tiles.json")
    n0 = len(gpu.finals)
    assert gpu._choose(spec, [], (), None, True, cache) == P4
    assert runs == {P3: gpu.FINAL_ROUNDS, P4: gpu.FINAL_ROUNDS, W4: 0}
    assert runtime.TileCache(tmp_path / "tiles.json").get(device, spec) == P4
    (rec,) = gpu.finals[n0:]
    assert rec["pick"] == P4.label() and rec["first_pick"] == P3.label()
    assert spec.digest() in rec["spec"]


def test_the_round_is_bounded():
    # a few tiles, a few rounds, short batches: at most FINALISTS x FINAL_ROUNDS x FINAL_MS of
    # launches a specialization, half a second
    assert 0 < gpu.FINAL_MARGIN <= 0.2 and 2 <= gpu.FINALISTS <= 4
    assert gpu.FINALISTS * gpu.FINAL_ROUNDS * gpu.FINAL_MS <= 500


def test_the_page_names_the_picks_the_turns_changed():
    from bench.gpu import _finals_lines

    moved = {"first_pick": P3.label(), "pick": P4.label(), "pick_rank": 1, "turns_s": 0.3,
             "finalists": [(P3.label(), 0.241, 0.243), (P4.label(), 0.247, 0.2249)]}
    held = dict(moved, pick=P3.label(), pick_rank=0)
    alone = {"first_pick": W4.label(), "pick": W4.label(), "pick_rank": 0, "finalists": []}
    lines = _finals_lines([{"key": "gemm@fp16", "finals": [moved]},
                           {"key": "gemm@bf16", "finals": [held, alone]}, {"key": "x"}])
    text = "\n".join(lines)
    assert "2 of 3 specializations" in text and "0.6 s" in text and "on 1:" in text
    assert f"gemm@fp16: `{P3.label()}` 0.2410 ms once, 0.2430 in turns -> `{P4.label()}`" in text
    assert "gemm@bf16:" not in text
    assert _finals_lines([{"key": "x"}]) == []
