"""Amaranth-level test of ``meritz.tau.rp.collector.Collector``: every bank function of 8 lanes
(3-bit rows) and every row against the mapper's model (:func:`merit.mapping.collector_network`),
and every configuration that is not one flagged with no bank written. The random Verilator bench
is ``verif/test_collector.py``."""

import itertools

from amaranth.sim import Simulator

from merit.mapping import BankFunction, collector_network
from meritz.tau.rp.collector import Collector


def test_every_bank_function_and_row_of_8_lanes():
    lanes, row_bits, bits = 8, 3, 3
    dut = Collector(lanes=lanes, row_bits=row_bits)
    words = [11 * (p + 1) for p in range(lanes)]
    valid = [1, 0, 1, 1, 0, 1, 1, 0]
    limit = bits + row_bits
    sources = [[None, *range(j + 1, limit)] for j in range(bits)]

    async def bench(ctx):
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.o.ready, 1)
        for p in range(lanes):
            ctx.set(dut.i.payload.data[p], words[p])
        ctx.set(dut.i.payload.valid, sum(v << p for p, v in enumerate(valid)))
        checked = 0
        for xor in itertools.product(*sources):
            for rotate in range(bits):
                bank = BankFunction(lanes, xor=xor, rotate=rotate)
                codes, rot = bank.register_fields()
                for j in range(bits):
                    ctx.set(dut.config.xor[j], codes[j])
                ctx.set(dut.config.rotate, rot)
                for row in range(1 << row_bits):
                    ctx.set(dut.i.payload.row, row)
                    want = collector_network(words, row, bank).tolist()
                    want_en = collector_network(valid, row, bank).tolist()
                    out = ctx.get(dut.o.payload)
                    assert not out["error"], (xor, rotate, row)
                    assert [int(w) for w in out["data"]] == want, (xor, rotate, row)
                    assert [out["enable"] >> q & 1 for q in range(lanes)] == want_en
                    checked += 1
        assert checked == 6 * 5 * 4 * 3 * 8
        # not bank functions: a source at or below its own bank bit, beyond the address, or a
        # rotation of log2 N or more
        for codes, rot in (([0, 1, 0], 0), ([0, 0, 2], 0), ([0, 0, 7], 0), ([0, 0, 0], 3)):
            for j in range(bits):
                ctx.set(dut.config.xor[j], codes[j])
            ctx.set(dut.config.rotate, rot)
            out = ctx.get(dut.o.payload)
            assert out["error"] and out["enable"] == 0, (codes, rot)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
