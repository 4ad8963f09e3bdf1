"""cocotb bench of meritz.top.Top: control through AXI4-Lite, DRAM through the throttled AXI RAM.

Runs with the stand-in TAU (``meritz.top.StubTau``: out[p] = in[p] + 1 at the origin ``p`` of each
parallel tile; the real TAUs run in ``bench_top_kernel``). The bench writes the registers with
``merit.regmap``, starts, waits for the interrupt and checks STATUS, TILES and the whole DRAM image
(every tile's element written once, nothing else touched), with random backpressure on every AXI
channel. Also: a refused configuration makes no DRAM request, an abort in the middle of a run
drains and the next run is correct, an error inside a TAU or an AXI error response stops the run.
"""

import itertools

import cocotb
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from axi import Dram
from benchlib import bench_config, pause_generator, record_metric, rng, setup
from merit.regmap import Error, register_map

IN, OUT, DRAM_BYTES = 0x0000, 0x8000, 0x10000


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = bench_config()
        self.rand = rng()
        self.map = register_map()
        p = self.cfg.get("backpressure", 0.3)
        self.bus = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
        for ch in (self.bus.write_if.aw_channel, self.bus.write_if.w_channel,
                   self.bus.write_if.b_channel, self.bus.read_if.ar_channel,
                   self.bus.read_if.r_channel):
            ch.set_pause_generator(pause_generator(self.rand, p))
        self.dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=DRAM_BYTES, latency=20,
                         rand=self.rand, backpressure=p)

    async def start(self):
        await setup(self.dut)

    async def write(self, offset, word):
        resp = await self.bus.write(offset, int(word).to_bytes(4, "little"))
        assert resp.resp == 0, f"write {offset:#x}: {resp.resp}"

    async def read(self, offset):
        resp = await self.bus.read(offset, 4)
        assert resp.resp == 0
        return int.from_bytes(resp.data, "little")

    async def status(self):
        word = await self.read(self.map["STATUS"].offset)
        return {"busy": word & 1, "done": word >> 1 & 1, "error": word >> 4 & 15,
                "info": word >> 8 & 255}

    async def launch(self, values):
        for offset, word in self.map.config_words(values):
            await self.write(offset, word)
        await self.write(self.map["CTRL"].offset, 0b101)      # start, irq enable

    async def wait_irq(self, limit=200000):
        for _ in range(limit):
            await RisingEdge(self.dut.clk)
            if int(self.dut.irq.value):
                return
        raise AssertionError("no interrupt")

    def fill_input(self):
        data = bytes(self.rand.getrandbits(8) for _ in range(OUT - IN))
        self.dram.write(IN, data)
        self.dram.write(OUT, bytes(DRAM_BYTES - OUT))
        return data

    async def clean_run(self, size, tile):
        """A run after an error: fresh input, no error, and the exact expected output image."""
        values, pitch = stub_kernel(size, tile)
        inp = self.fill_input()
        await self.launch(values)
        await self.wait_irq()
        assert (await self.status())["error"] == Error.NONE
        image, _ = expected_image(inp, size, tile, pitch)
        assert self.dram.read(OUT, DRAM_BYTES - OUT) == image


def stub_kernel(size, tile):
    """Configuration of the stand-in TAU: a row-major output of shape ``size`` at OUT."""
    pitch = [1] * 6
    for j in reversed(range(5)):
        pitch[j] = pitch[j + 1] * size[j + 1]
    return {"p_size": size, "p_tile": tile, "a_size": [1] * 6, "a_tile": [1] * 6,
            "lane_index": [5] * 6, "begs": [0] * 7, "ends": [16] * 7,
            "rp0": [{"base": IN}], "out_base": [OUT], "out_pitch": pitch}, pitch


def expected_image(inp, size, tile, pitch):
    out = bytearray(DRAM_BYTES - OUT)
    origins = list(itertools.product(*(range(0, s, t) for s, t in zip(size, tile, strict=True))))
    for p in origins:
        off = 2 * sum(a * b for a, b in zip(p, pitch, strict=True))
        value = (int.from_bytes(inp[off:off + 2], "little") + 1) & 0xFFFF
        out[off:off + 2] = value.to_bytes(2, "little")
    return bytes(out), len(origins)


GRIDS = [
    ([1, 1, 1, 1, 9, 24], [1, 1, 1, 1, 2, 8]),
    ([1, 1, 2, 3, 4, 8], [1, 1, 1, 2, 3, 8]),
]


@cocotb.test()
async def kernels_complete(dut):
    tb = TB(dut)
    await tb.start()
    ident = await tb.read(tb.map["ID"].offset)
    assert ident >> 16 == tb.cfg["lanes"] | tb.cfg["taus"] << 8
    for size, tile in GRIDS:
        inp = tb.fill_input()
        values, pitch = stub_kernel(size, tile)
        await tb.launch(values)
        await tb.wait_irq()
        st = await tb.status()
        assert st == {"busy": 0, "done": 1, "error": Error.NONE, "info": 0}, st
        image, tiles = expected_image(inp, size, tile, pitch)
        assert await tb.read(tb.map["TILES"].offset) == tiles
        assert tb.dram.read(OUT, DRAM_BYTES - OUT) == image, f"{size} / {tile}"
        cycles = await tb.read(tb.map["CYCLES"].offset)
        record_metric(f"top_cycles_{tiles}_tiles", cycles)
        await tb.write(tb.map["STATUS"].offset, 2)
        await RisingEdge(dut.clk)
        assert not int(dut.irq.value)


@cocotb.test()
async def bad_configuration_makes_no_request(dut):
    tb = TB(dut)
    await tb.start()
    values, _ = stub_kernel([1, 1, 1, 1, 4, 8], [1, 1, 1, 1, 1, 3])    # 3 not a multiple of 8
    await tb.launch(values)
    await tb.wait_irq(1000)
    st = await tb.status()
    assert st["error"] == Error.CONFIG and st["info"] == 3, st
    await ClockCycles(dut.clk, 50)
    assert tb.dram.first_request is None


@cocotb.test()
async def abort_drains_then_runs_again(dut):
    tb = TB(dut)
    await tb.start()
    tb.fill_input()
    size, tile = [1, 1, 1, 1, 30, 64], [1, 1, 1, 1, 1, 8]
    values, _ = stub_kernel(size, tile)
    await tb.launch(values)
    await First(Timer(tb.rand.randrange(500, 3000), unit="ns"))
    assert (await tb.status())["busy"] == 1
    first = tb.map.config_registers[0].offset
    assert (await tb.bus.write(first, bytes(4))).resp == 2, "config written while busy"
    await tb.write(tb.map["CTRL"].offset, 0b110)
    await tb.wait_irq(20000)
    st = await tb.status()
    assert st["error"] == Error.ABORTED and st["busy"] == 0, st
    await tb.clean_run(size, tile)


@cocotb.test()
async def tau_error_stops_the_run(dut):
    tb = TB(dut)
    await tb.start()
    tb.fill_input()
    values, _ = stub_kernel([0x8000, 1, 1, 1, 1, 8], [0x7FFF, 1, 1, 1, 1, 8])
    values["out_pitch"] = [0, 0, 0, 0, 0, 1]
    await tb.launch(values)
    await tb.wait_irq(20000)
    st = await tb.status()
    assert st["error"] == Error.TAU and st["busy"] == 0, st


@cocotb.test()
async def axi_error_responses_stop_the_run(dut):
    """SLVERR on a read, then on a write response: error AXI_READ / AXI_WRITE, done, and the
    next run is clean."""
    tb = TB(dut)
    await tb.start()
    poison = {"r": False, "b": False}
    for key, channel in (("r", tb.dram.reader.r_channel), ("b", tb.dram.writer.b_channel)):
        send = channel.send

        async def poisoned(beat, key=key, send=send):
            if poison[key]:
                setattr(beat, f"{key}resp", 2)
            await send(beat)
        channel.send = poisoned
    size, tile = [1, 1, 1, 1, 4, 16], [1, 1, 1, 1, 1, 8]
    values, _ = stub_kernel(size, tile)
    for key, code in (("r", Error.AXI_READ), ("b", Error.AXI_WRITE)):
        tb.fill_input()
        poison[key] = True
        await tb.launch(values)
        await tb.wait_irq(20000)
        poison[key] = False
        st = await tb.status()
        assert st["error"] == code and st["busy"] == 0, st
    await tb.clean_run(size, tile)
