"""The sequencer's checks on a job's way in without an adder in front of a comparison
(``meritz.tau.cp.sequencer._is_successor`` / ``_sum_less_one``), against Python integers: every
pair of 6-bit values, and the 16-bit corners."""

import itertools

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from meritz.tau.cp.sequencer import _is_successor, _sum_less_one


def _table(width, pairs):
    x, y = Signal(width), Signal(width)
    succ = Signal()
    less = Signal(width + 1)
    m = Module()
    m.d.comb += [succ.eq(_is_successor(x, y)), less.eq(_sum_less_one(x, y))]
    got = {}

    async def bench(ctx):
        for a, b in pairs:
            ctx.set(x, a)
            ctx.set(y, b)
            got[a, b] = (ctx.get(succ), ctx.get(less))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("width, pairs", [
    (6, list(itertools.product(range(64), repeat=2))),
    (16, [(a, b) for a in (0, 1, 2, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF)
          for b in (0, 1, 2, 3, 0x8000, 0x8001, 0xFFFE, 0xFFFF)]),
])
def test_carryless_checks_match_the_arithmetic(width, pairs):
    got = _table(width, pairs)
    for (a, b), (succ, less) in got.items():
        assert succ == int(a + 1 == b), (a, b)
        assert less == (a + b - 1) % (1 << (width + 1)), (a, b)
