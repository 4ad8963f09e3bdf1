"""Two TAUs sharing an operand in Amaranth's simulator: the leader fetches the weights of a
convolution and multicasts them, the follower fetches only its inputs; the output is exact against
the ISA model, with and without random stalls on every AXI channel (slow: minutes)."""

import numpy as np
import pytest
from amaranth import Elaboratable, Module
from amaranth.sim import Simulator

from merit import workloads as W
from merit.compile import compile_problem
from merit.isa.programs import run as isa_run
from meritz import kernelcfg
from meritz.tau import Tau

LANES, RP_BYTES, CP_BYTES, INSTRUCTIONS = 8, (2048, 1024), 2048, 16


class _Pair(Elaboratable):
    """A group of two TAUs wired as ``meritz.top.Top`` wires a sharing group."""

    def __init__(self):
        self.taus = [Tau(lanes=LANES, rp0_bytes=RP_BYTES[0], rp1_bytes=RP_BYTES[1],
                         cp_bytes=CP_BYTES, instructions=INSTRUCTIONS) for _ in range(2)]

    def elaborate(self, platform):
        m = Module()
        lead, follow = self.taus
        m.submodules.lead, m.submodules.follow = lead, follow
        m.d.comb += [lead.share.lead.eq(1), follow.share.follow.eq(1),
                     lead.share_ready.eq(follow.share_credit),
                     follow.share_taken.eq(lead.share_take),
                     lead.mc.ready.eq(follow.shared_rows.ready),
                     follow.shared_rows.valid.eq(lead.mc.valid & follow.shared_rows.ready),
                     follow.shared_rows.payload.eq(lead.mc.payload),
                     follow.config.eq(lead.config), follow.luts.eq(lead.luts)]
        return m


def _run(problem, kernel, backpressure, seed=1):
    dut = _Pair()
    rng = np.random.default_rng(seed)
    mem = rng.integers(0, 256, size=kernel.dram_bytes, dtype=np.uint8)
    arrays = []
    for t in problem.tensors:
        a = rng.integers(-64, 64, size=t.shape).astype(np.int16)
        arrays.append(a)
        start = kernel.tensors[t.name]
        mem[start:start + a.nbytes] = np.frombuffer(a.astype("<i2").tobytes(), np.uint8)
    # the dispatcher's groups: tiles 0, 2, ... to the leader, 1, 3, ... to the follower
    pending = [list(kernel.tiles[0::2]), list(kernel.tiles[1::2])]
    state = {"done": False}

    async def bench(ctx):
        lead = dut.taus[0]
        ctx.set(lead.config.as_value(), kernelcfg.pack(
            kernel.config, kernelcfg.layout(instructions=INSTRUCTIONS)))
        luts = list(kernel.program.luts) + [[0] * 33] * (2 - len(kernel.program.luts))
        lut_bits = kernelcfg.lut_layout().const([list(t) for t in luts]).as_bits()
        ctx.set(lead.luts.as_value(), lut_bits)
        stall = np.random.default_rng(seed + 1)

        def go():
            return not backpressure or stall.random() >= backpressure
        ports = [dict(reads=[], writes=[], wbeats=[], b=0, ro=False, bo=False) for _ in range(2)]
        for cycle in range(60000):
            offered = []
            for k, tau in enumerate(dut.taus):
                p, axi = ports[k], tau.m_axi
                ctx.set(tau.tiles.valid, bool(pending[k]))
                if pending[k]:
                    ctx.set(tau.tiles.payload, list(pending[k][0]) + [0] * (6 - len(pending[k][0])))
                ctx.set(axi.arready, go())
                ctx.set(axi.awready, go())
                ctx.set(axi.wready, go())
                head = (p["reads"][0] if p["reads"] and p["reads"][0][0] <= cycle
                        and (p["ro"] or go()) else None)
                p["ro"] = head is not None
                ctx.set(axi.rvalid, head is not None)
                if head is not None:
                    ctx.set(axi.rdata, int.from_bytes(mem[head[1]:head[1] + 8].tobytes(), "little"))
                    ctx.set(axi.rlast, head[2] == 1)
                    ctx.set(axi.rresp, 0)
                b_now = p["b"] > 0 and (p["bo"] or go())
                p["bo"] = b_now
                ctx.set(axi.bvalid, b_now)
                ctx.set(axi.bresp, 0)
                offered.append((head, b_now))
            await ctx.delay(1e-9)
            for k, tau in enumerate(dut.taus):
                p, axi = ports[k], tau.m_axi
                head, b_now = offered[k]
                if pending[k] and ctx.get(tau.tiles.ready):
                    pending[k].pop(0)
                if ctx.get(axi.arvalid) and ctx.get(axi.arready):
                    address, n = ctx.get(axi.araddr), ctx.get(axi.arlen) + 1
                    p["reads"] += [(cycle + 6 + q, address + 8 * q, n - q) for q in range(n)]
                if head is not None and ctx.get(axi.rready):
                    p["reads"].pop(0)
                    p["ro"] = False
                if ctx.get(axi.awvalid) and ctx.get(axi.awready):
                    p["writes"].append([ctx.get(axi.awaddr), ctx.get(axi.awlen) + 1])
                if ctx.get(axi.wvalid) and ctx.get(axi.wready):
                    p["wbeats"].append((ctx.get(axi.wdata), ctx.get(axi.wstrb)))
                if b_now and ctx.get(axi.bready):
                    p["b"] -= 1
                    p["bo"] = False
                while p["writes"] and len(p["wbeats"]) >= p["writes"][0][1]:
                    address, n = p["writes"].pop(0)
                    for q in range(n):
                        data, strobes = p["wbeats"].pop(0)
                        for byte in range(8):
                            if strobes >> byte & 1:
                                mem[address + 8 * q + byte] = (data >> (8 * byte)) & 0xFF
                    p["b"] += 1
            idle = all(ctx.get(t.idle) for t in dut.taus)
            state["errors"] = [ctx.get(t.errors.as_value()) for t in dut.taus]
            await ctx.tick()
            if (not any(pending) and idle and cycle > 10
                    and not any(p["writes"] or p["b"] for p in ports)):
                state["done"] = True
                break

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    n_out = int(np.prod(problem.p_shape))
    (_, address), = kernel.outputs
    raw = mem[address:address + 2 * n_out].view("<i2").reshape(problem.p_shape)
    return state, problem.outputs[0].finish(raw), isa_run(problem, *arrays)


@pytest.mark.slow
@pytest.mark.parametrize("backpressure", [0.0, 0.3])
def test_two_taus_share_the_weights_exactly(backpressure):
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    kernel = compile_problem(problem, lanes=LANES, rp_bytes=RP_BYTES, cp_bytes=CP_BYTES,
                             instructions=INSTRUCTIONS, taus=2)
    # the weights are the shared slot (slots numbered RP0's first), in groups of two
    slot = kernel.config["share_slot"]
    assert kernel.config["share_log2"] == 1
    rp0 = len(kernel.config["rp0"])
    shared = kernel.config["rp0"][slot] if slot < rp0 else kernel.config["rp1"][slot - rp0]
    assert shared["base"] == kernel.tensors["W"]
    assert len(kernel.tiles) % 2 == 0      # every group of two real tiles (no void tile)
    state, got, expected = _run(problem, kernel, backpressure)
    assert state["done"], "the pair never finished (a deadlock)"
    assert state["errors"] == [0, 0]
    np.testing.assert_array_equal(got, expected)
