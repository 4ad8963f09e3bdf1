"""Amaranth-simulator harness of the whole TAU (no Verilator build): a plain AXI memory model,
for quick debugging and a small end-to-end test."""

import numpy as np
from amaranth.sim import Simulator

from merit.compile import compile_problem
from merit.isa.programs import run as isa_run
from meritz import kernelcfg
from meritz.tau import Tau


def run_tau(problem, *, lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, latency=4,
            max_cycles=20000, seed=1, trace=None, instructions=16, backpressure=0.0, ports=None):
    """Run ``problem`` on the TAU in Amaranth's simulator with a plain AXI memory (``latency``
    cycles, one read beat per cycle; ``backpressure``: probability of a stall on every channel
    and cycle; ``ports``: of the RP banks, None for the TAU's default). Returns ``(state,
    kernel, outputs, expected, memory, initial memory)``."""
    kernel = compile_problem(problem, lanes=lanes, rp_bytes=rp_bytes, cp_bytes=cp_bytes,
                             instructions=instructions)
    dut = Tau(lanes=lanes, rp0_bytes=rp_bytes[0], rp1_bytes=rp_bytes[1], cp_bytes=cp_bytes,
              instructions=instructions, **({} if ports is None else {"ports": ports}))
    rng = np.random.default_rng(seed)
    mem = rng.integers(0, 256, size=kernel.dram_bytes, dtype=np.uint8)
    arrays = []
    for t in problem.tensors:
        a = rng.integers(-64, 64, size=t.shape).astype(np.int16)
        arrays.append(a)
        s = kernel.tensors[t.name]
        mem[s:s + a.nbytes] = np.frombuffer(a.astype("<i2").tobytes(), np.uint8)
    initial = mem.copy()
    state = {"cycles": 0, "done": False}

    async def bench(ctx):
        ctx.set(dut.config.as_value(),
                kernelcfg.pack(kernel.config, kernelcfg.layout(instructions=instructions)))
        luts = list(kernel.program.luts) + [[0] * 33] * (2 - len(kernel.program.luts))
        lut_bits = kernelcfg.lut_layout().const([list(t) for t in luts]).as_bits()
        ctx.set(dut.luts.as_value(), lut_bits)
        axi = dut.m_axi
        stall = np.random.default_rng(seed + 1)

        def go():
            return not backpressure or stall.random() >= backpressure
        reads = []          # (ready cycle, address, beats)
        writes = []         # (address, beats)
        wbeats = []
        b_pending = 0
        r_offered = False
        b_offered = False
        pending = list(kernel.tiles)
        for cycle in range(max_cycles):
            ctx.set(dut.tiles.valid, bool(pending))
            if pending:
                ctx.set(dut.tiles.payload, list(pending[0]) + [0] * (6 - len(pending[0])))
            ctx.set(axi.arready, go())
            ctx.set(axi.awready, go())
            ctx.set(axi.wready, go())
            # R channel
            # a beat once offered stays offered until taken (AXI valid rule)
            if reads and reads[0][0] <= cycle and (r_offered or go()):
                head = reads[0]
            else:
                head = None
            r_offered = head is not None
            ctx.set(axi.rvalid, head is not None)
            if head is not None:
                addr = head[1]
                ctx.set(axi.rdata, int.from_bytes(mem[addr:addr + 8].tobytes(), "little"))
                ctx.set(axi.rlast, head[2] == 1)
                ctx.set(axi.rresp, 0)
            b_now = b_pending > 0 and (b_offered or go())
            b_offered = b_now
            ctx.set(axi.bvalid, b_now)
            ctx.set(axi.bresp, 0)
            await ctx.delay(1e-9)
            if pending and ctx.get(dut.tiles.ready):
                pending.pop(0)
            if ctx.get(axi.arvalid) and ctx.get(axi.arready):
                a, n = ctx.get(axi.araddr), ctx.get(axi.arlen) + 1
                for k in range(n):
                    reads.append((cycle + latency + k, a + 8 * k, n - k))
            if head is not None and ctx.get(axi.rready):
                reads.pop(0)
                r_offered = False
            if ctx.get(axi.awvalid) and ctx.get(axi.awready):
                writes.append([ctx.get(axi.awaddr), ctx.get(axi.awlen) + 1])
            if ctx.get(axi.wvalid) and ctx.get(axi.wready):
                wbeats.append((ctx.get(axi.wdata), ctx.get(axi.wstrb), ctx.get(axi.wlast)))
            if b_now and ctx.get(axi.bready):
                b_pending -= 1
                b_offered = False
            while writes and len(wbeats) >= writes[0][1]:
                a, n = writes.pop(0)
                for k in range(n):
                    d, strb, _ = wbeats.pop(0)
                    for byte in range(8):
                        if strb >> byte & 1:
                            mem[a + 8 * k + byte] = (d >> (8 * byte)) & 0xFF
                b_pending += 1
            if trace is not None:
                trace(ctx, cycle)
            idle = ctx.get(dut.idle)
            state["errors"] = ctx.get(dut.errors.as_value())
            await ctx.tick()
            state["cycles"] = cycle
            if not pending and idle and not writes and not b_pending and cycle > 10:
                state["done"] = True
                break

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    expected = isa_run(problem, *arrays)
    expected = expected if isinstance(expected, tuple) else (expected,)
    n_out = int(np.prod(problem.p_shape))
    outs = []
    for (_, address), out in zip(kernel.outputs, problem.outputs, strict=True):
        raw = mem[address:address + 2 * n_out].view("<i2").reshape(problem.p_shape)
        outs.append(out.finish(raw))
    return state, kernel, outs, expected, mem, initial
