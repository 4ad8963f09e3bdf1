"""cocotb bench of the register bank (meritz.regs.Regs) through cocotbext-axi's AXI4-Lite master.

It runs on a bare ``Regs`` (all tests, driving its run-control pins) and on ``meritz.top.Top``
(the register tests, through the top's control port; ``run_control`` needs the pins).

Every channel of the control port gets random backpressure. The register map is
``merit.regmap``; the bench checks that the hardware implements it: every register reads back what
was written (field bits only), the ``config`` port holds the written fields at their
``meritz.kernelcfg`` offsets, unmapped addresses answer SLVERR, each configuration check refuses a
kernel with its number, and run control follows finished / abort / errors / quiet.
"""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from benchlib import bench_config, pause_generator, rng, setup
from merit.regmap import Error, register_map

OKAY, SLVERR = 0, 2


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = bench_config()
        self.rand = rng()
        self.map = register_map()
        self.bus = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
        p = self.cfg.get("backpressure", 0.3)
        for channel in (self.bus.write_if.aw_channel, self.bus.write_if.w_channel,
                        self.bus.write_if.b_channel, self.bus.read_if.ar_channel,
                        self.bus.read_if.r_channel):
            channel.set_pause_generator(pause_generator(self.rand, p))
        self.runs = 0
        self.pins = hasattr(dut, "finished")    # a bare Regs, not a Top
        if self.pins:
            dut.finished.value = 0
            dut.quiet.value = 0
            dut.tiles.value = 0
            dut.errors.value = 0

    async def start(self):
        await setup(self.dut)
        if self.pins:
            cocotb.start_soon(self._count_runs())

    async def _count_runs(self):
        while True:
            await RisingEdge(self.dut.clk)
            if int(self.dut.run.value):
                self.runs += 1

    async def write(self, offset, word):
        resp = await self.bus.write(offset, int(word).to_bytes(4, "little"))
        return resp.resp

    async def read(self, offset):
        resp = await self.bus.read(offset, 4)
        return int.from_bytes(resp.data, "little"), resp.resp

    async def write_ok(self, offset, word):
        resp = await self.write(offset, word)
        assert resp == OKAY, f"write {offset:#x} answered {resp}"

    async def status(self):
        word, resp = await self.read(self.map["STATUS"].offset)
        assert resp == OKAY
        return {"busy": word & 1, "done": word >> 1 & 1, "error": word >> 4 & 15,
                "info": word >> 8 & 255}

    async def configure(self, values):
        for offset, word in self.map.config_words(values):
            await self.write_ok(offset, word)

    async def ctrl(self, start=0, abort=0, irq_enable=0):
        await self.write_ok(self.map["CTRL"].offset, start | abort << 1 | irq_enable << 2)


def good_config(lanes, instructions=16):
    """A configuration that passes every check: 8 outputs along p5 per lane group."""
    return {
        "p_size": [1, 1, 1, 1, 3, 2 * lanes], "a_size": [1, 1, 1, 1, 1, 5],
        "p_tile": [1, 1, 1, 1, 1, lanes], "a_tile": [1, 1, 1, 1, 1, 5],
        "lane_index": [5] * 6, "begs": [0] * 7, "ends": [instructions] * 7,
        "rp0": [{"enable": 1, "base": 0x100, "extent": [1, 1, 3, 9], "box": [1, 1, 1, 9],
                 "rows": 2}, {"enable": 0}],
        "rp1": [{"enable": 1, "base": 0x800, "extent": [1, 1, 1, 5], "box": [1, 1, 1, 5],
                 "rows": 1, "rotate": 0}],
        "out_base": [0x1000, 0, 0],
    }


def bad_configs(lanes, rp0_rows):
    """(check number, description, change) for each configuration check."""
    return [
        (1, "p_size 0", {"p_size": [1, 1, 0, 1, 3, 2 * lanes]}),
        (1, "a_size 0", {"a_size": [1, 1, 1, 1, 1, 0]}),
        (2, "a_tile 0", {"a_tile": [1, 1, 1, 0, 1, 5]}),
        (2, "p_tile 0", {"p_tile": [0, 1, 1, 1, 1, lanes]}),
        (3, "lane bit on index 6", {"lane_index": [6, 5, 5, 5, 5, 5]}),
        (3, "p_tile not a multiple of its lanes", {"p_tile": [1, 1, 1, 1, 1, lanes // 2]}),
        (4, "end past the program", {"ends": [0, 16, 16, 16, 16, 16, 17]}),
        (4, "begs increasing", {"begs": [0, 2, 2, 2, 2, 2, 2]}),
        (4, "ends decreasing", {"ends": [16, 15, 15, 15, 15, 15, 15]}),
        (5, "tile larger than RP0", {"rp0": [{"enable": 1, "base": 0, "extent": [1, 1, 1, 1],
                                             "box": [1, 1, 1, 1], "rows": rp0_rows + 1}]}),
        (5, "odd slot base", {"rp1": [{"enable": 1, "base": 0x801, "extent": [1, 1, 1, 5],
                                       "box": [1, 1, 1, 5], "rows": 1}]}),
        (5, "box 0", {"rp1": [{"enable": 1, "base": 0x800, "extent": [1, 1, 1, 5],
                               "box": [1, 1, 0, 5], "rows": 1}]}),
        (6, "odd output base", {"out_base": [0x1000, 0x23, 0]}),
    ]


@cocotb.test()
async def registers_read_back(dut):
    """Every register and LUT word: write random bits, read back the field bits; the config
    port holds them at their kernelcfg offsets."""
    tb = TB(dut)
    await tb.start()
    words = {}
    for reg in tb.map.config_registers:
        words[reg] = tb.rand.getrandbits(32)
        await tb.write_ok(reg.offset, words[reg])
    expected_bits = 0
    for reg, word in words.items():
        mask = sum(f.mask for f in reg.fields)
        got, resp = await tb.read(reg.offset)
        assert resp == OKAY
        assert got == word & mask, f"{reg.name} at {reg.offset:#x}: {got:#x} != {word & mask:#x}"
        for f in reg.fields:
            expected_bits |= ((word >> f.lsb) & ((1 << f.width) - 1)) << f.config
    if tb.pins:
        assert int(dut.config.value) == expected_bits
    luts = [[tb.rand.randrange(-2**15, 2**15) for _ in range(33)] for _ in range(2)]
    for offset, word in tb.map.lut_words_for(luts):
        await tb.write_ok(offset, word)
    for offset, word in tb.map.lut_words_for(luts):
        got, resp = await tb.read(offset)
        assert (got, resp) == (word, OKAY), f"LUT word {offset:#x}"
    flat = 0
    for t, table in enumerate(luts):
        for e, v in enumerate(table):
            flat |= (v & 0xFFFF) << (16 * (t * 33 + e))
    if tb.pins:
        assert int(dut.luts.value) == flat
    ident, resp = await tb.read(tb.map["ID"].offset)
    assert resp == OKAY
    assert ident == 0x4D5A | tb.cfg["lanes"] << 16 | tb.cfg["taus"] << 24
    # byte strobes: one byte of the last configuration register
    reg = tb.map.config_registers[0]
    await tb.bus.write(reg.offset + 1, b"\xa5")
    got, _ = await tb.read(reg.offset)
    mask = sum(f.mask for f in reg.fields)
    assert got == ((words[reg] & ~0xFF00) | 0xA500) & mask
    # read-only registers ignore writes
    await tb.write_ok(tb.map["ID"].offset, 0)
    assert (await tb.read(tb.map["ID"].offset))[0] == ident


@cocotb.test()
async def unmapped_addresses_answer_slverr(dut):
    tb = TB(dut)
    await tb.start()
    end = tb.map.size_bytes
    lut_end = tb.map.lut_base + 4 * tb.map.lut_words
    holes = [end, end + 4, tb.map.lut_base - 4, lut_end, 0x3FC]
    holes += [tb.rand.randrange(lut_end, 0x400) & ~3 for _ in range(4)]
    for offset in holes:
        assert await tb.write(offset, 0xFFFFFFFF) == SLVERR, f"write {offset:#x}"
        word, resp = await tb.read(offset)
        assert resp == SLVERR, f"read {offset:#x}"
    assert (await tb.status())["error"] == Error.NONE
    assert tb.runs == 0


@cocotb.test()
async def bad_configuration_is_refused(dut):
    """Each check refuses the kernel with its number; ``run`` never pulses."""
    tb = TB(dut)
    await tb.start()
    lanes = tb.cfg["lanes"]
    for number, what, change in bad_configs(lanes, tb.cfg["rp0_rows"]):
        await tb.configure({**good_config(lanes), **change})
        await tb.ctrl(start=1)
        st = await tb.status()
        assert st == {"busy": 0, "done": 1, "error": Error.CONFIG, "info": number}, \
            f"{what}: {st}"
        assert tb.runs == 0, what       # (counted on a bare Regs only)
    await tb.configure(good_config(lanes))
    await tb.ctrl(start=1)
    st = await tb.status()
    assert st["error"] == Error.NONE and st["info"] == 0
    if tb.pins:
        assert st["busy"] == 1 and tb.runs == 1


@cocotb.test()
async def run_control(dut):
    """finished -> done + irq; config writes refused while busy; abort and errors flush until
    quiet; done cleared by W1C."""
    tb = TB(dut)
    await tb.start()
    lanes, taus = tb.cfg["lanes"], tb.cfg["taus"]
    cfg = good_config(lanes)
    await tb.configure(cfg)
    await tb.ctrl(start=1, irq_enable=1)
    assert tb.runs == 1 and int(dut.busy.value) == 1
    first = tb.map.config_registers[0].offset
    assert await tb.write(first, 0) == SLVERR
    assert await tb.write(tb.map.lut_base, 0) == SLVERR
    await tb.ctrl(start=1, irq_enable=1)          # ignored while busy
    assert tb.runs == 1
    dut.tiles.value = 7
    await ClockCycles(dut.clk, 5)
    dut.finished.value = 1
    await RisingEdge(dut.clk)
    dut.finished.value = 0
    await RisingEdge(dut.clk)
    assert int(dut.irq.value) == 1
    st = await tb.status()
    assert st == {"busy": 0, "done": 1, "error": Error.NONE, "info": 0}
    assert (await tb.read(tb.map["TILES"].offset))[0] == 7
    assert (await tb.read(tb.map["CYCLES"].offset))[0] > 5
    assert await tb.write(first, 0) == OKAY
    await tb.write_ok(tb.map["STATUS"].offset, 2)
    await RisingEdge(dut.clk)
    assert int(dut.irq.value) == 0 and (await tb.status())["done"] == 0

    await tb.configure(cfg)
    errors = [(Error.ABORTED, None, 0), (Error.AXI_READ, 1, 0), (Error.AXI_WRITE, 2, 0),
              (Error.CONFLICT, 1 << (2 + taus - 1), taus - 1),
              (Error.TAU, 1 << (2 + taus), 0)]
    for code, bits, info in errors:
        await tb.ctrl(start=1, irq_enable=1)
        assert int(dut.busy.value) == 1 and int(dut.flush.value) == 0
        if bits is None:
            await tb.ctrl(abort=1, irq_enable=1)
        else:
            dut.errors.value = bits
            await RisingEdge(dut.clk)
            dut.errors.value = 0
        await ClockCycles(dut.clk, 3)
        assert int(dut.flush.value) == 1 and int(dut.busy.value) == 1
        dut.finished.value = 1                  # ignored while flushing
        await ClockCycles(dut.clk, 2)
        dut.finished.value = 0
        assert int(dut.busy.value) == 1
        dut.quiet.value = 1
        await ClockCycles(dut.clk, 2)
        dut.quiet.value = 0
        assert int(dut.flush.value) == 0
        st = await tb.status()
        assert st == {"busy": 0, "done": 1, "error": code, "info": info}, f"{code!r}: {st}"
    assert tb.runs == 1 + len(errors)
