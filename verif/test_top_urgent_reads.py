"""Urgent reads first (``meritz.arbiter.Arbiter``'s ``urgent``, ``meritz.tau.Tau``'s
``ar_urgent``): a leader's load of a shared slot, which its whole group waits for, is served
before the other TAUs' own loads.

The cocotb side drives the arbiter alone: managers with random reads and writes (the bench of
``verif/test_top_arbiter.py``), random backpressure on every channel, and the ``urgent`` flags
toggled at random. A monitor counts each manager's read bursts from its own port (AR
handshakes, R beats with ``rlast``), independently of the arbiter's counters, and checks every
AR grant: while any manager raises ``urgent``, no manager without the flag is granted while an
urgent AR waits, nor while it has ``plain_bursts`` bursts outstanding; every read returns what
was written, and ``drain`` still empties the port.

The pytest side also runs the processor (``meritz.top.Top``, 8-lane TAUs) on kernels that share
an operand: bit-exact against the golden model with and without backpressure, on 4 TAUs (1-D
and 2-D sharing) and on 1, and ``merit.perf`` (which serves urgent loads first) within 5 % of
the RTL's cycles.
"""

import cocotb
import pytest
from cocotb.triggers import ClockCycles, Combine, RisingEdge

from harness import run_bench
from merit.sim.benchlib import record_metric, setup

PLAIN_BURSTS = 1


def _bit(signal):
    return signal.value.is_resolvable and int(signal.value)


async def _toggle_urgent(dut, tb):
    """Raise and drop each manager's ``urgent`` flag at random (stretches of 1-80 cycles)."""
    flags = 0
    while True:
        await RisingEdge(dut.clk)
        if tb.rand.random() < 0.05:
            flags ^= 1 << tb.rand.randrange(tb.n)
            dut.urgent.value = flags
        if tb.rand.random() < 0.01:
            flags = 0
            dut.urgent.value = 0


async def _monitor(dut, tb, seen):
    """Check every AR grant against the rule, with burst counts of the managers' own ports."""
    n = tb.n
    owed = [0] * n
    ports = [{name: getattr(dut, f"s_axi__{i}__{name}") for name in
              ("arvalid", "arready", "rvalid", "rready", "rlast")} for i in range(n)]
    while True:
        await RisingEdge(dut.clk)
        urgent = int(dut.urgent.value) if dut.urgent.value.is_resolvable else 0
        valid = [_bit(p["arvalid"]) for p in ports]
        grant = [valid[i] and _bit(p["arready"]) for i, p in enumerate(ports)]
        for i in range(n):
            if not grant[i]:
                continue
            if urgent and not urgent >> i & 1:
                waiting = [k for k in range(n) if valid[k] and urgent >> k & 1]
                assert not waiting, f"manager {i} granted while urgent {waiting} waited"
                assert owed[i] < PLAIN_BURSTS, \
                    f"manager {i} granted with {owed[i]} bursts out while urgent {urgent:b}"
                seen["limited"] += 1
            elif urgent >> i & 1:
                seen["urgent"] += 1
        for i, p in enumerate(ports):
            owed[i] += grant[i]
            owed[i] -= bool(_bit(p["rvalid"]) and _bit(p["rready"]) and _bit(p["rlast"]))
            assert owed[i] >= 0


@cocotb.test()
async def urgent_reads_first(dut):
    from test_top_arbiter import TB
    tb = TB(dut)
    dut.urgent.value = 0
    await setup(dut)        # not tb.start(): its round-robin fairness check does not hold here
    seen = {"limited": 0, "urgent": 0}
    cocotb.start_soon(_monitor(dut, tb, seen))
    cocotb.start_soon(_toggle_urgent(dut, tb))
    ops = tb.cfg.get("ops", 25)
    await Combine(*(cocotb.start_soon(tb.worker(i, w, ops))
                    for i in range(tb.n) for w in range(tb.workers)))
    await ClockCycles(dut.clk, 5)
    assert int(dut.quiet.value) == 1
    assert tb.dram.read(0, tb.size) == bytes(tb.model)
    record_metric("urgent_grants", seen["urgent"])
    record_metric("limited_grants", seen["limited"])


@cocotb.test()
async def drain_with_urgent_reads(dut):
    """A stop while a manager holds ``urgent``: the port still drains."""
    from test_top_arbiter import REGION, TB
    tb = TB(dut)
    dut.urgent.value = 0
    await setup(dut)        # not tb.start(): its round-robin fairness check does not hold here
    for i in range(tb.n):
        for w in range(tb.workers):
            cocotb.start_soon(tb.worker(i, w, 1000))
    dut.urgent.value = 1
    await ClockCycles(dut.clk, tb.rand.randrange(100, 400))
    dut.drain.value = 1
    for _ in range(3000):
        await RisingEdge(dut.clk)
        for i in range(tb.n):
            assert not int(getattr(dut, f"s_axi__{i}__arready").value)
        if int(dut.quiet.value):
            break
    assert int(dut.quiet.value) == 1, "the port did not drain"
    assert tb.dram.read(REGION * tb.n * tb.workers, 4096) == bytes(4096)


# ---- pytest side ----------------------------------------------------------------------------


@pytest.mark.sim
@pytest.mark.parametrize("managers", [2, 4])
def test_arbiter_urgent_reads_first(managers):
    from meritz.arbiter import Arbiter
    metrics = run_bench(Arbiter(managers=managers, plain_bursts=PLAIN_BURSTS),
                        bench="test_top_urgent_reads",
                        config={"managers": managers, "backpressure": 0.3, "ops": 30})
    # the rule was exercised both ways
    assert metrics["urgent_grants"] > 0
    assert metrics["limited_grants"] > 0


SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def _problems():
    from merit import workloads as W
    return {
        # 1-D: the weights (RP1) fetched by a leader for its group of 4
        "dilated": (lambda: W.conv2d(1, 8, 16, 16, 8, 3, dilation=2, padding=2), 1),
        # 2-D: one slot per RP, each by its own groups
        "gemm": (lambda: W.gemm(24, 40, 16), 2),
        # edge tiles: a 13 x 13 image in 8 x 8 tiles
        "edges": (lambda: W.conv2d(1, 8, 13, 13, 8, 3, padding=1), 1),
    }


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("name,taus,backpressure", [("dilated", 4, 0.0), ("dilated", 4, 0.3),
                                                    ("gemm", 4, 0.0), ("edges", 4, 0.3),
                                                    ("dilated", 1, 0.0)])
def test_top_urgent_reads_exact(name, taus, backpressure):
    """The processor with urgent multicast loads: bit-exact (``simulate`` checks every output
    and every other DRAM byte), the kernel really shares on 4 TAUs, and without backpressure
    ``merit.perf`` within 5 % of the RTL."""
    from merit import perf
    from merit.compile import compile_problem
    from merit.sim import simulate
    make, dims = _problems()[name]
    kw = dict(share_dims=dims, share_counts=(2,)) if dims == 2 else dict(share_dims=dims)
    kernel = compile_problem(make(), taus=taus, **kw, **SMALL)
    if taus > 1:
        assert kernel.config["share_log2"] > 0
    metrics = simulate(make(), taus=taus, seed=11, backpressure=backpressure, **kw, **SMALL)
    assert metrics["tiles"] == len(kernel.tiles)
    if not backpressure:
        predicted = perf.predict(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"]).cycles
        assert abs(predicted / metrics["cycles"] - 1) <= 0.05, (predicted, metrics["cycles"])
