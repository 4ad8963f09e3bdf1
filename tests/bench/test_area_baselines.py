# amaranth: UnusedElaboratable=no
"""The reference crossbar and MAC array do what they claim (numpy reference)."""

import numpy as np
import pytest

amaranth = pytest.importorskip("amaranth")

from amaranth.sim import Simulator  # noqa: E402

from bench.area_baselines import Crossbar, MacArray  # noqa: E402


def _run(dut, bench, clocked=True):
    sim = Simulator(dut)
    if clocked:
        sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("lanes", [2, 8])
def test_crossbar_routes_any_pattern(lanes):
    rng = np.random.default_rng(lanes)
    dut = Crossbar(lanes=lanes)
    cases = [(rng.integers(-2**15, 2**15, lanes), rng.integers(0, lanes, lanes))
             for _ in range(20)]

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        for words, select in cases:
            ctx.set(dut.i.payload, {"data": [int(w) for w in words],
                                    "select": [int(s) for s in select]})
            ctx.set(dut.i.valid, 1)
            await ctx.delay(1e-9)
            assert ctx.get(dut.o.valid) == 1 and ctx.get(dut.i.ready) == 1
            out = [ctx.get(dut.o.payload.data[p]) for p in range(lanes)]
            assert out == list(words[select])

    _run(dut, bench, clocked=False)


def test_mac_array_accumulates():
    rng = np.random.default_rng(0)
    lanes = 4
    dut = MacArray(lanes=lanes)
    steps = [(rng.integers(-2**15, 2**15, lanes), rng.integers(-2**15, 2**15, lanes),
              rng.integers(0, 2), rng.integers(0, 2)) for _ in range(30)]

    async def bench(ctx):
        acc = np.zeros(lanes, dtype=np.int64)
        for a, b, en, clear in steps:
            ctx.set(dut.a, [int(x) for x in a])
            ctx.set(dut.b, [int(x) for x in b])
            ctx.set(dut.en, int(en))
            ctx.set(dut.clear, int(clear))
            await ctx.tick()
            base = np.zeros(lanes, dtype=np.int64) if clear else acc
            acc = base + a.astype(np.int64) * b if en else base
            acc = (acc + 2**31) % 2**32 - 2**31
            assert [ctx.get(dut.acc[p]) for p in range(lanes)] == list(acc)

    _run(dut, bench)


@pytest.mark.parametrize(("cls", "kwargs", "error", "match"), [
    (Crossbar, {"lanes": 6}, ValueError, "lanes must be a power of two of at least 2, not 6"),
    (Crossbar, {"lanes": 8, "width": 0}, ValueError, "width must be between 1 and 64, not 0"),
    (Crossbar, {"lanes": 8, "width": 8.0}, TypeError, "width must be an integer, not 8.0"),
    (MacArray, {"lanes": 4, "acc_width": 16}, ValueError,
     "acc_width must be between 32 and 128, not 16"),
])
def test_bad_parameters(cls, kwargs, error, match):
    with pytest.raises(error, match=match):
        cls(**kwargs)
