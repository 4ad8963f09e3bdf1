"""cocotb bench of meritz.top.Top: control through AXI4-Lite, DRAM through the throttled AXI RAM.

Runs with the stand-in TAU (``verif/stubs.py``, ``StubTau``: out[p] = in[p] + 1 at the origin ``p``
of each parallel tile; the real TAUs run in :mod:`merit.sim.cocotb_top`). The bench writes the
registers with ``merit.regmap``, starts, waits for the interrupt and checks STATUS, TILES and the
whole DRAM image (every tile's element written once, nothing else touched), with random backpressure
on every AXI channel; an error inside a TAU stops the run.

:class:`TB` and :class:`StubJob` are shared with ``test_top_robust`` (the robustness scenarios:
random latency, abort, reset, AXI errors, every configuration check). Every wait is bounded by a
watchdog whose message names the state of STATUS and of the DRAM port.

The pytest side. meritz.top.Top on the Verilator model with the stand-in TAU: control port,
dispatcher, arbiter, done / irq, a TAU error (the robustness scenarios are in test_top_robust, the
real TAU's end-to-end kernels in test_top_kernel).
"""

import itertools
import logging

import cocotb
import numpy as np
import pytest
from cocotb.triggers import First, RisingEdge, SimTimeoutError, Timer, with_timeout
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from harness import run_bench
from merit.regmap import Error, register_map
from merit.sim.benchlib import bench_config, pause_generator, record_metric, rng, setup
from merit.sim.dram import Dram
from meritz.top import Top
from stubs import StubTau

IN, OUT, DRAM_BYTES = 0x0000, 0x8000, 0x10000
PERIOD_NS = 10              # benchlib.setup's clock


class TB:
    """Clock, reset, the control port (AXI4-Lite master) and the DRAM of one Top.

    The configuration registers are written only where they differ from what the bench last
    wrote (``shadow``, every word written with OKAY; every register is 0 after reset), so
    scenarios that change one field stay short.
    """

    def __init__(self, dut, dram_bytes=DRAM_BYTES):
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
        for port in (self.bus.write_if, self.bus.read_if):    # no INFO line per access
            port.log.setLevel(logging.WARNING)
        self.dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=dram_bytes,
                         latency=self.cfg.get("latency", 20),
                         write_latency=self.cfg.get("write_latency", 0),
                         reorder=self.cfg.get("reorder", False), rand=self.rand, backpressure=p)
        self.shadow = {}

    async def start(self):
        await setup(self.dut)

    async def access(self, what, operation, limit=2000):
        """``operation`` (a control-port access), failing after ``limit`` cycles without an
        answer."""
        try:
            return await with_timeout(operation, limit * PERIOD_NS, "ns")
        except SimTimeoutError:
            raise AssertionError(f"{what}: the control port did not answer within {limit} "
                                 f"cycles; {self.dram.describe()}") from None

    async def write(self, offset, word):
        resp = await self.access(f"write {offset:#x}",
                                 self.bus.write(offset, int(word).to_bytes(4, "little")))
        assert resp.resp == 0, f"write {offset:#x}: {resp.resp}"
        self.shadow[offset] = word

    async def read(self, offset):
        resp = await self.access(f"read {offset:#x}", self.bus.read(offset, 4))
        assert resp.resp == 0, f"read {offset:#x}: {resp.resp}"
        return int.from_bytes(resp.data, "little")

    async def status(self):
        word = await self.read(self.map["STATUS"].offset)
        return {"busy": word & 1, "done": word >> 1 & 1, "error": word >> 4 & 15,
                "info": word >> 8 & 255}

    async def configure(self, values, luts=None):
        """Write the configuration (and LUT) words that differ from the shadow."""
        words = self.map.config_words(values)
        if luts is not None:
            words += self.map.lut_words_for(luts)
        for offset, word in words:
            if self.shadow.get(offset, 0) != word:
                await self.write(offset, word)

    async def launch(self, values, luts=None):
        await self.configure(values, luts)
        await self.write(self.map["CTRL"].offset, 0b101)      # start, irq enable

    async def state(self):
        """STATUS, TILES, CYCLES and the DRAM port in words (the watchdogs' message)."""
        try:
            st = await self.status()
            regs = f"STATUS {st}, TILES {await self.read(self.map['TILES'].offset)}"
        except AssertionError as exc:       # the control port itself does not answer
            return str(exc)
        return f"{regs}; {self.dram.describe()}"

    async def wait_done(self, limit=200_000, what="the run"):
        """Wait for the interrupt (STATUS.done with irq enabled), at most ``limit`` cycles."""
        if not int(self.dut.irq.value):
            timeout = Timer(limit * PERIOD_NS, unit="ns")
            if await First(RisingEdge(self.dut.irq), timeout) is timeout:
                raise AssertionError(f"{what}: no interrupt within {limit} cycles; "
                                     f"{await self.state()}")
        await RisingEdge(self.dut.clk)

    async def wait_quiet(self, limit=1000):
        """After done: the DRAM port owes nothing and requests nothing."""
        for _ in range(limit):
            if (self.dram.reads_owed == 0 and self.dram.writes_owed == 0
                    and not int(self.dut.m_axi__arvalid.value)
                    and not int(self.dut.m_axi__awvalid.value)):
                return
            await RisingEdge(self.dut.clk)
        raise AssertionError(f"the DRAM port is not quiet {limit} cycles after done; "
                             f"{await self.state()}")

    async def run(self, job, limit=200_000, what="the run"):
        """Fill DRAM, run ``job`` to completion and check it exactly; returns CYCLES."""
        job.fill()
        outside = len(self.dram.outside)
        await self.launch(job.values, job.luts)
        await self.wait_done(limit, what)
        st = await self.status()
        assert st == {"busy": 0, "done": 1, "error": Error.NONE, "info": 0}, f"{what}: {st}"
        assert len(self.dram.outside) == outside, \
            f"{what}: accesses outside the DRAM {self.dram.outside[outside:]}"
        assert await self.read(self.map["TILES"].offset) == job.tiles, what
        job.check()
        await self.wait_quiet()
        return await self.read(self.map["CYCLES"].offset)


class StubJob:
    """A kernel of the stand-in TAU: a row-major output of shape ``size`` at OUT, tiles ``tile``;
    the output element at each tile origin is ``in + 1``, every other byte keeps its value."""

    dram_bytes = DRAM_BYTES

    def __init__(self, tb, size, tile):
        self.tb = tb
        self.values, self.pitch = stub_kernel(size, tile)
        self.luts = None
        self.size, self.tile = size, tile
        self.tiles = len(origins(size, tile))

    def fill(self):
        self.input = self.tb.rand.randbytes(OUT - IN)
        self.tb.dram.write(IN, self.input)
        self.tb.dram.write(OUT, bytes(DRAM_BYTES - OUT))
        self.image, _ = expected_image(self.input, self.size, self.tile, self.pitch)

    def check(self):
        assert self.tb.dram.read(OUT, DRAM_BYTES - OUT) == self.image, \
            f"output of {self.size} / {self.tile}"

    def check_untouched(self):
        """After a stopped run: the input intact, each output element either still 0 or its
        final value, nothing else written."""
        assert self.tb.dram.read(IN, OUT - IN) == self.input, "input changed"
        got = np.frombuffer(self.tb.dram.read(OUT, DRAM_BYTES - OUT), "<u2")
        want = np.frombuffer(self.image, "<u2")
        bad = np.flatnonzero((got != 0) & (got != want))
        assert bad.size == 0, (f"{bad.size} output elements hold neither 0 nor their value, "
                               f"first at {OUT + 2 * bad[0]:#x}: {got[bad[0]]:#x}")


def stub_kernel(size, tile):
    """Configuration of the stand-in TAU: a row-major output of shape ``size`` at OUT."""
    pitch = [1] * 6
    for j in reversed(range(5)):
        pitch[j] = pitch[j + 1] * size[j + 1]
    return {"p_size": size, "p_tile": tile, "a_size": [1] * 6, "a_tile": [1] * 6,
            "lane_index": [5] * 6, "begs": [0] * 7, "ends": [16] * 7,
            "rp0": [{"base": IN}], "out_base": [OUT], "out_pitch": pitch}, pitch


def origins(size, tile):
    return list(itertools.product(*(range(0, s, t) for s, t in zip(size, tile, strict=True))))


def expected_image(inp, size, tile, pitch):
    out = bytearray(DRAM_BYTES - OUT)
    tiles = origins(size, tile)
    for p in tiles:
        off = 2 * sum(a * b for a, b in zip(p, pitch, strict=True))
        value = (int.from_bytes(inp[off:off + 2], "little") + 1) & 0xFFFF
        out[off:off + 2] = value.to_bytes(2, "little")
    return bytes(out), len(tiles)


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
        job = StubJob(tb, size, tile)
        cycles = await tb.run(job, what=f"{size} / {tile}")
        record_metric(f"top_cycles_{job.tiles}_tiles", cycles)
        await tb.write(tb.map["STATUS"].offset, 2)
        await RisingEdge(dut.clk)
        assert not int(dut.irq.value)
        assert (await tb.status())["done"] == 0


@cocotb.test()
async def tau_error_stops_the_run(dut):
    tb = TB(dut)
    await tb.start()
    job = StubJob(tb, [0x8000, 1, 1, 1, 1, 8], [0x7FFF, 1, 1, 1, 1, 8])
    job.values["out_pitch"] = [0, 0, 0, 0, 0, 1]
    job.fill()
    await tb.launch(job.values)
    await tb.wait_done(20000, "a run with a TAU error")
    st = await tb.status()
    assert st["error"] == Error.TAU and st["busy"] == 0, st
    await tb.wait_quiet()


# ---- pytest side: build the model and run the cocotb tests above ----


# bad_configuration_is_refused runs on the top in test_top_robust (with DRAM checks)
REGISTER_TESTS = ["registers_read_back", "unmapped_addresses_answer_slverr"]


def _run(taus):
    lanes = 8
    top = Top(lanes=lanes, taus=taus, tau=StubTau)
    config = {"lanes": lanes, "taus": taus, "backpressure": 0.3}
    metrics = run_bench(top, bench="test_top_top", config=config, public=True)  # the fuzz's model
    # the register bench through the top's control port (same model, no second build)
    run_bench(top, bench="test_top_regs", config=config, testcase=REGISTER_TESTS, public=True)
    return metrics


@pytest.mark.sim
@pytest.mark.xdist_group("top_n8_t2_stub")      # one model with test_top_robust, test_top_fuzz
def test_top_two_taus():
    metrics = _run(2)
    assert metrics


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 4, 8])
def test_top_taus(taus):
    _run(taus)
