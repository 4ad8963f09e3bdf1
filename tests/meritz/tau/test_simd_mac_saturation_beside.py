"""MAC's ``sat16(b) * sat16(c)`` with the range tests beside the multiplier (Amaranth simulator).

The SIMD array's E1 multiplies the low 16 bits of ``b`` and ``c`` and, beside the multiplier,
tests whether each is an int16 and forms the product of a saturated operand by shift and
subtract (``meritz.tau.cp.simd._mac_saturated``). The lane's product, as E1 selects it, is
checked against :func:`merit.isa.alu.sat16` (numpy's clip, no shared code) over every pair of
values at and around int16's limits, the 32-bit register's limits and zero, and random pairs
over the whole register range; an operand's range test off by one bit, or a limit's product off
by one, fails it. The array as a whole is checked by ``test_simd_mac_operand_edges.py``.
"""

import numpy as np
from amaranth import Module, Mux, Signal, signed
from amaranth.sim import Simulator

from merit.isa.alu import sat16
from meritz.tau.cp.simd import _mac_saturated

EDGES = [-(1 << 31), -(1 << 31) + 1, -(1 << 16) - 1, -(1 << 16), -32769, -32768, -32767, -16384,
         -1, 0, 1, 16383, 32766, 32767, 32768, 32769, 1 << 16, (1 << 31) - 1]


def _products(pairs):
    """The lane's product for each ``(b, c)``: the multiplier's where both are int16, else the
    one formed beside it."""
    m = Module()
    b, c = Signal(signed(32)), Signal(signed(32))
    out = Signal(signed(32))
    inside, limit = _mac_saturated(b, c)
    m.d.comb += out.eq(Mux(inside, b[:16].as_signed() * c[:16].as_signed(), limit))
    got = []

    async def bench(ctx):
        for x, y in pairs:
            ctx.set(b, x)
            ctx.set(c, y)
            got.append(ctx.get(out))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return got


def test_mac_saturation_at_the_edges_and_random():
    rng = np.random.default_rng(5)
    pairs = [(x, y) for x in EDGES for y in EDGES]
    pairs += [(int(x), int(y)) for x, y in rng.integers(-(1 << 31), 1 << 31, (400, 2))]
    # one operand in int16, the other anywhere: the shift-and-subtract products
    pairs += [(int(x), int(y)) for x, y in zip(rng.integers(-32768, 32768, 200),
                                               rng.integers(-(1 << 31), 1 << 31, 200),
                                               strict=True)]
    pairs += [(y, x) for x, y in pairs[-200:]]
    want = [int(sat16(x) * sat16(y)) for x, y in pairs]
    got = _products(pairs)
    bad = [(p, g, w) for p, g, w in zip(pairs, got, want, strict=True) if g != w]
    assert not bad, bad[:5]
    # the stimulus reaches every case: both in range, each one saturated high and low, both
    assert {(int(sat16(x)) != x, int(sat16(y)) != y) for x, y in pairs} == {
        (False, False), (False, True), (True, False), (True, True)}
