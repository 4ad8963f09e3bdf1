"""cocotb bench of the DRAM-port arbiter (meritz.arbiter.Arbiter).

Each upstream port is driven by a cocotbext-axi ``AxiMaster`` running several concurrent workers
(random unaligned writes and read-backs on a private region, so many IDs are in flight), the
DRAM port is the throttled AXI RAM of ``sw/merit/sim/dram.py``, and every channel of both sides gets
random backpressure. Checks: every read returns what the model of that region holds, the whole
memory matches at the end, round-robin fairness on AR and AW (a waiting manager sees at most
``managers - 1`` grants to others), and ``drain`` completes everything DRAM accepted.

The pytest side. The DRAM-port arbiter on the Verilator model: random managers, backpressure, drain.
"""

import cocotb
import pytest
from cocotb.triggers import ClockCycles, Combine, RisingEdge
from cocotbext.axi import AxiBus, AxiMaster

from harness import run_bench
from merit.sim.benchlib import bench_config, pause_generator, record_metric, rng, setup
from merit.sim.dram import Dram
from meritz.arbiter import Arbiter

REGION = 4096           # bytes per worker


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = bench_config()
        self.rand = rng()
        self.n = self.cfg["managers"]
        self.workers = self.cfg.get("workers", 2)
        p = self.cfg.get("backpressure", 0.3)
        self.masters = []
        for i in range(self.n):
            master = AxiMaster(AxiBus.from_prefix(dut, f"s_axi__{i}_"), dut.clk, dut.rst)
            if p:
                for ch in (master.write_if.aw_channel, master.write_if.w_channel,
                           master.write_if.b_channel, master.read_if.ar_channel,
                           master.read_if.r_channel):
                    ch.set_pause_generator(pause_generator(self.rand, p))
            self.masters.append(master)
        self.size = REGION * self.n * self.workers + 4096
        self.dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=self.size, latency=10,
                         bytes_per_cycle=8, rand=self.rand, backpressure=p)
        self.model = bytearray(self.size)
        self.waits = {"ar": 0, "aw": 0}
        dut.drain.value = 0

    async def start(self):
        await setup(self.dut)
        cocotb.start_soon(self._fairness("ar"))
        cocotb.start_soon(self._fairness("aw"))

    async def _fairness(self, ch):
        """Per manager: grants to others while it waits with valid up; at most n - 1."""
        waited = [0] * self.n
        ports = [(getattr(self.dut, f"s_axi__{i}__{ch}valid"),
                  getattr(self.dut, f"s_axi__{i}__{ch}ready")) for i in range(self.n)]
        while True:
            await RisingEdge(self.dut.clk)
            valid = [v.value.is_resolvable and int(v.value) for v, _ in ports]
            ready = [r.value.is_resolvable and int(r.value) for _, r in ports]
            granted = [i for i in range(self.n) if valid[i] and ready[i]]
            assert len(granted) <= 1, f"{ch}: two grants in one cycle {granted}"
            for i in range(self.n):
                if not valid[i] or ready[i]:
                    waited[i] = 0
                elif granted:
                    waited[i] += 1
                    self.waits[ch] = max(self.waits[ch], waited[i])
                    assert waited[i] <= self.n - 1, f"{ch}: manager {i} passed over {waited[i]}x"

    async def worker(self, i, w, ops):
        master = self.masters[i]
        base = REGION * (i * self.workers + w)
        for _ in range(ops):
            length = self.rand.choice([1, 2, 8, 13, 64, 200, 300])
            offset = base + self.rand.randrange(REGION - length)
            if self.rand.random() < 0.5:
                data = bytes(self.rand.getrandbits(8) for _ in range(length))
                await master.write(offset, data)
                self.model[offset:offset + length] = data
            else:
                got = await master.read(offset, length)
                assert got.data == bytes(self.model[offset:offset + length]), \
                    f"manager {i} read {length} bytes at {offset:#x}"


@cocotb.test()
async def random_traffic(dut):
    tb = TB(dut)
    await tb.start()
    ops = tb.cfg.get("ops", 25)
    start = tb.dram.cycle
    await Combine(*(cocotb.start_soon(tb.worker(i, w, ops))
                    for i in range(tb.n) for w in range(tb.workers)))
    await ClockCycles(dut.clk, 5)
    assert int(dut.quiet.value) == 1
    assert tb.dram.read(0, tb.size) == bytes(tb.model)
    cycles = tb.dram.cycle - start
    record_metric("arbiter_cycles", cycles)
    record_metric("arbiter_beats", tb.dram.read_beats + tb.dram.write_beats)
    record_metric("arbiter_max_wait_ar", tb.waits["ar"])
    record_metric("arbiter_max_wait_aw", tb.waits["aw"])


@cocotb.test()
async def drain_completes_accepted_bursts(dut):
    """Stop in the middle of traffic: the port goes quiet, no manager sees a response, and
    memory outside the managers' regions is untouched."""
    tb = TB(dut)
    await tb.start()
    for i in range(tb.n):
        for w in range(tb.workers):
            cocotb.start_soon(tb.worker(i, w, 1000))
    await ClockCycles(dut.clk, tb.rand.randrange(100, 400))
    dut.drain.value = 1
    for _ in range(3000):
        await RisingEdge(dut.clk)
        for i in range(tb.n):
            assert not int(getattr(dut, f"s_axi__{i}__rvalid").value)
            assert not int(getattr(dut, f"s_axi__{i}__bvalid").value)
            assert not int(getattr(dut, f"s_axi__{i}__awready").value)
            assert not int(getattr(dut, f"s_axi__{i}__arready").value)
        if int(dut.quiet.value):
            break
    assert int(dut.quiet.value) == 1, "the port did not drain"
    top = REGION * tb.n * tb.workers
    assert tb.dram.read(top, 4096) == bytes(4096)


# ---- pytest side: build the model and run the cocotb tests above ----


@pytest.mark.sim
@pytest.mark.parametrize("managers", [1, 3])
def test_arbiter(managers):
    metrics = run_bench(Arbiter(managers=managers), bench="test_top_arbiter",
                        config={"managers": managers, "backpressure": 0.3})
    assert metrics["arbiter_max_wait_ar"] <= managers - 1
