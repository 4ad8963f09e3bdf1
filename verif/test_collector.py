"""cocotb bench of the collector (:class:`meritz.tau.rp.collector.Collector`).

The reference is the mapper's collector model (:func:`merit.mapping.collector_network`), which is
itself checked against the bank function in ``tests/merit/mapping``: every word of a line must
land in ``bank(row * N + i)``. Random valid/ready backpressure on both streams.

The pytest side. The collector: Verilator bench against the mapper's collector model.
"""

import cocotb
import pytest

from harness import run_bench
from merit.mapping import BankFunction, collector_network
from merit.sim.benchlib import pack_lanes, record_metric, unpack_lanes
from meritz.tau.rp.collector import Collector
from test_butterfly import StreamTB, field_offsets


class TB(StreamTB):
    """Lines in, bank words out; configurations of the bank function set between batches."""

    def configure(self, bank):
        xor, rotate = bank.register_fields()
        self.set_config(xor, rotate)

    def set_config(self, xor, rotate):
        cfg = self.cfg["config"]
        value = pack_lanes(xor, cfg["xor_bits"]) << cfg["xor"]
        value |= rotate << cfg["rotate"]
        self.dut.config.value = value

    def line(self, bank, row):
        words = self.words()
        valid = self.np_rand.integers(0, 2, self.lanes)
        payload = (self.field("in", "data", pack_lanes(words, self.width), self.lanes * self.width)
                   | self.field("in", "valid", pack_lanes(valid, 1), self.lanes)
                   | self.field("in", "row", row, self.cfg["row_bits"]))
        want = (collector_network(words, row, bank).tolist(),
                collector_network(valid, row, bank).tolist(), row)
        return payload, want

    def unpack(self, value):
        words = unpack_lanes(self.get(value, "data", self.lanes * self.width), self.lanes,
                             self.width, signed=self.cfg["signed"])
        enable = unpack_lanes(self.get(value, "enable", self.lanes), self.lanes, 1, signed=False)
        return words, enable, self.get(value, "row", self.cfg["row_bits"]), \
            self.get(value, "error", 1)

    async def check(self, bank, rows):
        """Send one line per row through ``bank``; compare with the model."""
        self.configure(bank)
        vectors = [self.line(bank, row) for row in rows]
        received = await self.transfer([v[0] for v in vectors])
        for k, (got, (_, (words, enable, row))) in enumerate(zip(received, vectors, strict=True)):
            got_words, got_enable, got_row, error = self.unpack(got)
            assert not error, f"{bank!r} line {k}: error raised for a valid bank function"
            assert got_row == row, f"{bank!r} line {k}: row {got_row}, expected {row}"
            assert got_enable == enable, f"{bank!r} row {row}: enables {got_enable} != {enable}"
            assert got_words == words, f"{bank!r} row {row}: banks got {got_words} != {words}"
        return len(vectors)

    def random_bank(self):
        m = self.bits
        limit = m + self.cfg["row_bits"]
        xor = [int(self.np_rand.integers(j + 1, limit)) if self.np_rand.random() < 0.5 else None
               for j in range(m)]
        return BankFunction(self.lanes, xor=xor, rotate=int(self.np_rand.integers(0, m)))


@cocotb.test()
async def random_lines(dut):
    """Random bank functions (XOR sources in the line offset and in the row), random lines."""
    tb = TB(dut)
    lines = 0
    for _ in range(tb.cfg.get("functions", 8)):
        rows = tb.np_rand.integers(0, 1 << tb.cfg["row_bits"], tb.cfg.get("lines", 30)).tolist()
        lines += await tb.check(tb.random_bank(), rows)
    record_metric("lines", lines)


@cocotb.test()
async def paper_functions(dut):
    """Identity, the XOR hash of Fig. 6 (ii-c) (bank bit 2 ^= address bit 3), for N = 8 the X
    and R of Eq. 16, and a chain of XOR sources; every row of a period."""
    tb = TB(dut)
    banks = [BankFunction(tb.lanes)]
    xor = [None] * tb.bits
    xor[2] = tb.bits
    banks.append(BankFunction(tb.lanes, xor=xor))
    if tb.lanes == 8:
        banks.append(BankFunction(8, xor=(None, 2, 3), rotate=1))
    # chained sources (bit j <- bit j + 1): what the authors' write network got wrong
    banks.append(BankFunction(tb.lanes, xor=tuple(j + 1 for j in range(tb.bits)), rotate=1))
    for bank in banks:
        await tb.check(bank, list(range(min(16, 1 << tb.cfg["row_bits"]))))


@cocotb.test()
async def bad_configuration_is_flagged(dut):
    """An XOR source at its own bank bit is not a bank function: error, and no bank written."""
    tb = TB(dut)
    tb.set_config([0, 1] + [0] * (tb.bits - 2), 0)
    payload, _ = tb.line(BankFunction(tb.lanes), 3)
    (got,) = await tb.transfer([payload])
    _, enable, _, error = tb.unpack(got)
    assert error == 1 and not any(enable), f"error {error}, enables {enable}"


# ---- pytest side: build the model and run the cocotb tests above ----


@pytest.mark.sim
@pytest.mark.parametrize("lanes", [8, pytest.param(32, marks=pytest.mark.slow)], ids=["n8", "n32"])
def test_collector(lanes, record_property):
    dut = Collector(lanes=lanes, row_bits=6)
    config_layout = dut.config.shape()
    config = dict(lanes=lanes, width=dut.width, signed=True, row_bits=dut.row_bits, clocked=False,
                  functions=8 if lanes == 8 else 3,
                  config={"xor": config_layout["xor"].offset,
                          "xor_bits": config_layout["xor"].shape.elem_shape.width,
                          "rotate": config_layout["rotate"].offset},
                  **{"in": field_offsets(dut.i.payload.shape()),
                     "out": field_offsets(dut.o.payload.shape())})
    metrics = run_bench(dut, bench="test_collector", config=config)
    for key, value in metrics.items():
        record_property(key, value)
