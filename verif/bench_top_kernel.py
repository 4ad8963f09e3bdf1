"""cocotb bench of meritz.top.Top with the real TAUs: one MERIT problem end to end, the way
software runs it.

The bench compiles the problem (``merit.compile``), writes the configuration registers and the LUT
window through the AXI4-Lite port (``merit.regmap``), fills DRAM with random bytes and the inputs
with random int16, writes CTRL.start and waits for the interrupt. Then STATUS must say done
without error, every output must equal the golden ISA model (``merit.isa.programs.run``) bit for
bit, and every other DRAM byte must be unchanged, whatever the number of TAUs. Records the run's
cycles (first DRAM request to last write response) and utilization over all TAUs' ALUs.
"""

import pickle

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from axi import Dram, check_outputs, fill_dram
from benchlib import bench_config, pause_generator, record_metric, rng, setup
from merit.compile import compile_problem
from merit.isa.programs import run as isa_run
from merit.regmap import Error, register_map


@cocotb.test()
async def kernel_matches_the_isa_model(dut):
    cfg = bench_config()
    rand = rng()
    lanes, taus = cfg["lanes"], cfg["taus"]
    problem = pickle.loads(open(cfg["problem"], "rb").read())
    kernel = compile_problem(problem, lanes=lanes, rp_bytes=tuple(cfg["rp_bytes"]),
                             cp_bytes=cfg["cp_bytes"])
    rmap = register_map()
    bus = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
    p = cfg.get("backpressure", 0.0)
    for ch in (bus.write_if.aw_channel, bus.write_if.w_channel, bus.write_if.b_channel,
               bus.read_if.ar_channel, bus.read_if.r_channel):
        ch.set_pause_generator(pause_generator(rand, p))
    await setup(dut)
    dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=kernel.dram_bytes, latency=20,
                bytes_per_cycle=8, rand=rand, backpressure=p)
    nrng = np.random.default_rng(rand.randrange(1 << 30))
    image, arrays = fill_dram(dram, kernel, problem, nrng)

    writes = rmap.config_words(kernel.config) + rmap.lut_words_for(kernel.program.luts)
    for offset, word in writes:
        resp = await bus.write(offset, word.to_bytes(4, "little"))
        assert resp.resp == 0, f"register {offset:#x} refused"
    await bus.write(rmap["CTRL"].offset, (0b101).to_bytes(4, "little"))
    for _ in range(cfg.get("max_cycles", 2_000_000)):
        await RisingEdge(dut.clk)
        if int(dut.irq.value):
            break
    status = int.from_bytes((await bus.read(rmap["STATUS"].offset, 4)).data, "little")
    assert status & 2, "no interrupt"
    assert status >> 4 & 15 == Error.NONE, f"STATUS {status:#x}"
    tiles = int.from_bytes((await bus.read(rmap["TILES"].offset, 4)).data, "little")
    assert tiles == len(kernel.tiles)

    check_outputs(dram, kernel, problem, image, isa_run(problem, *arrays))
    record_metric("cycles", dram.cycles)
    record_metric("utilization", round(kernel.useful_ops / (dram.cycles * lanes * taus), 4))
    record_metric("tiles", tiles)
