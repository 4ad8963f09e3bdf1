"""Robustness benches of meritz.top.Top: every scenario ends in the documented STATUS,
never in a hang, and the next run is exact.

The DRAM answers with random backpressure on every AXI channel, a random latency per read burst,
a random delay before each write response, and read bursts of different IDs out of order and
interleaved (``latency`` / ``write_latency`` ranges and ``reorder`` in the bench configuration,
see ``merit.sim.dram.Dram``). Every wait is bounded by a watchdog (``test_top_top.TB``) whose
message names STATUS and the state of the DRAM port.

* ``kernels_complete_under_random_latency``: the runs are exact.
* ``abort_at_a_random_point``: CTRL.abort 0..3 cycles after START, then at random points in the
  middle of a run: error ABORTED, the DRAM port quiet, nothing written outside the output; the
  next run is exact.
* ``reset_in_the_middle_of_a_kernel``: ``rst`` for a few cycles at the same stop points: every
  register back to its reset value, the port quiet, nothing written outside the output (the DRAM
  model's AXI ports reset with the processor's, its memory stays); the next run is exact.
* ``axi_error_responses_stop_the_run``: SLVERR or DECERR on one random read data beat of a run,
  then on one random write response: error AXI_READ / AXI_WRITE, quiet, nothing outside the
  output; the next run is exact.
* ``illegal_instruction_stops_the_run`` (real TAU only): a program of all-zero words (illegal,
  ``docs/isa.md``), which no configuration check refuses, traps in the CP: error TAU naming a
  TAU, quiet, nothing outside the output; the next run is exact.
* ``unchecked_fields_never_hang`` (real TAU only): each field that no check covers set to a
  value the compiler never produces (``UNCHECKED``): the run ends, with whatever error code, and
  writes nothing outside the output tensor (a hang is aborted and reported). Where the reference
  model of the START checks (``test_top_fuzz.expected_status``) refuses the values (rows below
  the footprint: check 8, which this case led to), STATUS must show that check and the DRAM no
  request.
* ``every_configuration_check_refuses``: each field out of range for every check of
  :data:`merit.regmap.CHECKS` (``test_top_regs.bad_configs``): error CONFIG with the check's number,
  no DRAM request; after each, a run at the edge of the checks (``test_top_regs.edge_configs``) is
  exact.

The kernel is the stand-in TAU's (``test_top_top.StubJob``), or, when the configuration names a
pickled ``problem``, that problem compiled for the real TAU and checked against the golden ISA
model (``KernelJob``).

The pytest side. Robustness of meritz.top.Top on the Verilator model: random backpressure,
latency and read reordering, abort, reset in the middle of a kernel, AXI error responses, every
configuration check (``test_top_robust``). CI runs them on the stand-in TAU (the model of
``test_top_top``); the slow test runs the stopping scenarios, an illegal program and the fields that
no check covers on two real 8-lane TAUs with a compiled convolution.
"""

import copy
import pickle
from pathlib import Path

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from harness import run_bench
from merit import workloads as W
from merit.compile import compile_problem
from merit.isa.programs import run as isa_run
from merit.regmap import Error
from merit.sim.benchlib import bench_config, record_metric
from merit.sim.dram import check_outputs, check_untouched, fill_dram
from meritz.top import Top
from stubs import StubTau
from test_top_regs import bad_configs, changed, edge_configs, good_config
from test_top_top import DRAM_BYTES, GRIDS, IN, TB, StubJob

SLVERR, DECERR = 2, 3

#: The stand-in's long kernel (240 tiles): the one interrupted by abort, reset and AXI errors.
LONG = ([1, 1, 1, 1, 30, 64], [1, 1, 1, 1, 1, 8])


class KernelJob:
    """A problem compiled for the real TAU: DRAM filled at random, outputs checked against the
    golden ISA model, every other byte unchanged."""

    def __init__(self, tb, problem, kernel):
        self.tb, self.problem, self.kernel = tb, problem, kernel
        self.values, self.luts = kernel.config, kernel.program.luts
        self.tiles = len(kernel.tiles)
        self.nrng = np.random.default_rng(tb.rand.randrange(1 << 30))

    def fill(self):
        self.image, arrays = fill_dram(self.tb.dram, self.kernel, self.problem, self.nrng)
        self.expected = isa_run(self.problem, *arrays)

    def check(self):
        check_outputs(self.tb.dram, self.kernel, self.problem, self.image, self.expected)

    def check_untouched(self):
        check_untouched(self.tb.dram, self.kernel, self.problem, self.image)


async def robust_tb(dut):
    """The TB and its jobs: ``(tb, jobs, long)``, the jobs to complete and the one to stop."""
    cfg = bench_config()
    if "problem" in cfg:
        problem = pickle.loads(Path(cfg["problem"]).read_bytes())
        counts = tuple(cfg.get("share_counts", (2,)))
        kernel = compile_problem(problem, lanes=cfg["lanes"], rp_bytes=tuple(cfg["rp_bytes"]),
                                 cp_bytes=cfg["cp_bytes"],
                                 taus=cfg.get("compile_taus", cfg["taus"]),
                                 share_dims=cfg.get("share_dims", 1), share_counts=counts,
                                 max_outputs=cfg.get("max_outputs"),
                                 hold=bool(cfg.get("hold", False)))
        if cfg.get("hold"):
            assert kernel.config["hold"], kernel.config
        if cfg.get("whole_rp"):
            # each held slot given its whole RP: a job whose footprint changes waits for the
            # held tile to be freed before its own is allocated
            for r, size in enumerate(cfg["rp_bytes"]):
                for s in kernel.config[f"rp{r}"]:
                    if kernel.config.get("hold", 0) >> r & 1 and s and s.get("enable"):
                        s["rows"] = size // (2 * cfg["lanes"])
        if cfg.get("share_dims", 1) == 2:
            assert kernel.sharing and len(kernel.sharing) in counts, kernel.sharing
            assert kernel.config["share_block"] == (len(kernel.sharing) == 1), kernel.config
        if "share_order" in cfg:
            assert kernel.config["share_order"] == cfg["share_order"], kernel.config
        tb = TB(dut, dram_bytes=kernel.dram_bytes)
        jobs = [KernelJob(tb, problem, kernel)]
        long = jobs[0]
    else:
        tb = TB(dut, dram_bytes=DRAM_BYTES)
        jobs = [StubJob(tb, size, tile) for size, tile in GRIDS]
        long = StubJob(tb, *LONG)
        jobs.append(long)
    await tb.start()
    return tb, jobs, long


async def stop_point(tb, job, cycles, first):
    """Launch ``job`` and wait a random part (10..70 %) of a run of ``cycles`` cycles; the
    ``first`` stop comes 0..3 cycles after START."""
    job.fill()
    await tb.launch(job.values, job.luts)
    delay = tb.rand.randrange(4) if first else tb.rand.randrange(cycles // 10, cycles * 7 // 10)
    await ClockCycles(tb.dut.clk, delay)
    assert not int(tb.dut.irq.value), f"the run ended before its stop point ({delay} cycles)"
    return delay


def check_no_wild_writes(tb, what):
    writes = [address for kind, address in tb.dram.outside if kind == "write"]
    assert not writes, f"{what}: writes outside the DRAM at {writes}"


async def stopped(tb, job, code, what):
    """After a stopped run: done with ``code``, quiet, nothing written outside the output."""
    await tb.wait_done(50_000, what)
    st = await tb.status()
    assert st == {"busy": 0, "done": 1, "error": code, "info": 0}, f"{what}: {st}"
    await tb.wait_quiet()
    job.check_untouched()
    check_no_wild_writes(tb, what)


@cocotb.test()
async def kernels_complete_under_random_latency(dut):
    tb, jobs, _ = await robust_tb(dut)
    for job in jobs:
        await tb.run(job)
    record_metric("overtakes", tb.dram.overtakes)
    if tb.cfg.get("reorder") and tb.cfg["taus"] > 1:
        assert tb.dram.overtakes > 0, "reorder on, but no read beat overtook an older burst"


@cocotb.test()
async def abort_at_a_random_point(dut):
    tb, _, job = await robust_tb(dut)
    cycles = await tb.run(job, what="the run before the aborts")
    first = tb.map.config_registers[0].offset
    for k in range(tb.cfg.get("stops", 3)):
        delay = await stop_point(tb, job, cycles, first=k == 0)
        resp = await tb.access("config write while busy", tb.bus.write(first, bytes(4)))
        assert resp.resp == SLVERR, "config written while busy"
        await tb.write(tb.map["CTRL"].offset, 0b110)     # abort, irq enable
        await stopped(tb, job, Error.ABORTED, f"abort {k} at cycle {delay}")
    await tb.run(job, what="the run after the aborts")


async def check_reset_values(tb):
    """Every register reads its reset value, the LUT window 0, irq low."""
    assert not int(tb.dut.irq.value), "irq after reset"
    for name in ("CTRL", "STATUS", "TILES", "CYCLES"):
        value = await tb.read(tb.map[name].offset)
        assert value == 0, f"{name} = {value:#x} after reset"
    for reg in tb.map.config_registers:
        value = await tb.read(reg.offset)
        assert value == 0, f"{reg.name} = {value:#x} after reset"
    for offset, _ in tb.map.lut_words_for([[0], [0]]):
        value = await tb.read(offset)
        assert value == 0, f"LUT word {offset:#x} = {value:#x} after reset"


@cocotb.test()
async def reset_in_the_middle_of_a_kernel(dut):
    tb, _, job = await robust_tb(dut)
    cycles = await tb.run(job, what="the run before the resets")
    ident = await tb.read(tb.map["ID"].offset)
    for k in range(tb.cfg.get("stops", 3)):
        delay = await stop_point(tb, job, cycles, first=k == 0)
        dut.rst.value = 1
        await ClockCycles(dut.clk, tb.rand.randrange(1, 6))
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        tb.shadow.clear()
        what = f"reset {k} at cycle {delay}"
        await tb.wait_quiet()
        await check_reset_values(tb)
        assert await tb.read(tb.map["ID"].offset) == ident, what
        job.check_untouched()
        check_no_wild_writes(tb, what)
        await tb.run(job, what=f"the run after {what}")


@cocotb.test()
async def axi_error_responses_stop_the_run(dut):
    """One SLVERR or DECERR on a random read data beat, then on a random write response of a
    run."""
    tb, _, job = await robust_tb(dut)
    sent = {"r": 0, "b": 0}         # beats / responses the DRAM queued
    poison = {"r": None, "b": None}     # which one to poison, counted from the run's start
    for key, channel in (("r", tb.dram.reader.r_channel), ("b", tb.dram.writer.b_channel)):
        send = channel.send

        async def poisoned(beat, key=key, send=send):
            sent[key] += 1
            if sent[key] == poison[key]:
                setattr(beat, f"{key}resp", tb.rand.choice((SLVERR, DECERR)))
            await send(beat)
        channel.send = poisoned
    before = dict(sent)
    await tb.run(job, what="the run before the errors")
    counts = {key: sent[key] - before[key] for key in sent}
    for key, code in (("r", Error.AXI_READ), ("b", Error.AXI_WRITE)):
        nth = tb.rand.randrange(1, counts[key] + 1)
        poison[key] = sent[key] + nth
        job.fill()
        await tb.launch(job.values, job.luts)
        what = f"SLVERR on {key.upper()} {nth} of {counts[key]}"
        await stopped(tb, job, code, what)
        assert sent[key] >= poison[key], f"{what}: never sent"
        poison[key] = None
    await tb.run(job, what="the run after the AXI errors")


@cocotb.test(skip="problem" not in bench_config())
async def illegal_instruction_stops_the_run(dut):
    tb, _, job = await robust_tb(dut)
    good = job.values
    job.values = dict(good, program=[0] * len(good["program"]))
    job.fill()
    await tb.launch(job.values, job.luts)
    await tb.wait_done(50_000, "a run of illegal instructions")
    st = await tb.status()
    assert st["error"] == Error.TAU and st["busy"] == 0, st
    assert st["info"] < tb.cfg["taus"], st
    await tb.wait_quiet()
    job.check_untouched()
    check_no_wild_writes(tb, "illegal instructions")
    job.values = good
    await tb.run(job, what="the run after the illegal instructions")


#: Fields that no configuration check covers (``merit.regmap.CHECKS``), set to values that
#: ``merit.compile`` would never produce: ``(what, [(path, value)])`` on the compiled kernel; a
#: value is a number, the name of a bench setting, or a function of the kernel's configuration
#: and the bench's settings.
UNCHECKED = [
    ("rp0[0].rows 1 (below the footprint)", [(("rp0", 0, "rows"), 1)]),
    ("rp0[0].rows = the whole SRAM", [(("rp0", 0, "rows"), "rp0_rows")]),
    ("rp0[0].box far above the rows", [(("rp0", 0, "box"), [1, 3, 10, 65535])]),
    ("rp0[0].extent 1", [(("rp0", 0, "extent"), [1, 1, 1, 1])]),
    ("rp0[0].origin 0xFFFF", [(("rp0", 0, "origin"), 0xFFFF)]),
    ("rp0[0].xor not a bank function", [(("rp0", 0, "xor"), [7] * 6)]),
    ("rp0[0].rotate 2", [(("rp0", 0, "rotate"), 2)]),
    ("rp0[0].lpitch 0", [(("rp0", 0, "lpitch"), [0, 0, 0])]),
    ("rp0[0].lstep 0x7FFF", [(("rp0", 0, "lstep"), [0x7FFF] * 12)]),
    ("rp0[0].stride -1", [(("rp0", 0, "stride"), [-1] * 12)]),
    ("rp0[0].offset -100", [(("rp0", 0, "offset"), [-100] * 4)]),
    ("rp0[0].clamp", [(("rp0", 0, "clamp"), [1] * 4)]),
    ("rp0[0].dpitch past the DRAM", [(("rp0", 0, "dpitch"), [0x7FFFFFF0] * 3)]),
    ("rp0[0].base past the DRAM", [(("rp0", 0, "base"), 0xFFFF0000)]),
    ("rp1[0].rows 1", [(("rp1", 0, "rows"), 1)]),
    ("regs 15", [(("regs",), 15)]),
    ("p_tile 8x larger", [(("p_tile",), [1, 4, 64, 64, 1, 1])]),
    ("a_tile above a_size", [(("a_tile",), [3, 3, 3, 5, 1, 1])]),
    ("a_tile 1", [(("a_tile",), [1] * 6)]),
    ("lanes on another index", [(("lane_index",), [2, 2, 2, 0, 0, 0])]),
    ("every instruction at every level", [(("begs",), [0] * 7), (("ends",), [3] * 7)]),
    ("empty range table", [(("begs",), [0] * 7), (("ends",), [0] * 7)]),
    ("regs 0", [(("regs",), 0)]),
    ("share_log2 7: groups larger than the processor", [(("share_log2",), 7)]),
    ("the input slot shared instead of the weights", [(("share_slot",), 0)]),
    ("share_block 1: the groups dealt on the block walk", [(("share_block",), 1),
                                                            (("share_log2",), 1)]),
    ("share_block 1, the input slot shared, groups of 128",
     [(("share_block",), 1), (("share_slot",), 0), (("share_log2",), 7)]),
    # a second RP0 slot (the program never reads it) beside the first
    ("rp0[1] beside rp0[0], their rows filling the SRAM",
     [(("rp0", 1), lambda good, cfg: dict(good["rp0"][0],
                                          rows=cfg["rp0_rows"] - good["rp0"][0]["rows"]))]),
    ("rp0[1] beside rp0[0], their rows one over the SRAM",
     [(("rp0", 1), lambda good, cfg: dict(good["rp0"][0],
                                          rows=cfg["rp0_rows"] - good["rp0"][0]["rows"] + 1))]),
]


@cocotb.test(skip="problem" not in bench_config())
async def unchecked_fields_never_hang(dut):
    """Each field that no check covers, out of what the compiler produces: the run ends (done,
    any error code; reads outside the DRAM answer SLVERR) and nothing outside the outputs is
    written."""
    # (test_top_fuzz imports this module)
    from test_top_fuzz import expected_status

    tb, _, job = await robust_tb(dut)
    cycles = await tb.run(job, what="the run before the unchecked fields")
    good = job.values
    lanes = tb.cfg["lanes"]
    rows = tuple(b // (2 * lanes) for b in tb.cfg["rp_bytes"])
    hangs, outcomes = [], []
    only = tb.cfg.get("unchecked")      # a list of case names: run only those
    for what, changes in UNCHECKED:
        if only is not None and what not in only:
            continue
        changes = [(path, tb.cfg[value] if isinstance(value, str)
                    else value(good, tb.cfg) if callable(value) else value)
                   for path, value in changes]
        job.values = changed(good, *changes)
        refused = expected_status(job.values, lanes=tb.cfg["lanes"], rows=rows,
                                  instructions=len(good["program"]))
        job.fill()
        requests = tb.dram.request_cycles
        await tb.launch(job.values, job.luts)
        if refused:
            await tb.wait_done(2000, what)
            st = await tb.status()
            assert st == {"busy": 0, "done": 1, "error": Error.CONFIG, "info": refused}, \
                f"{what}: expected check {refused}, got {st}"
            assert tb.dram.request_cycles == requests, f"{what}: the refused kernel used DRAM"
            outcomes.append(f"{what}: CONFIG {refused}")
            continue
        try:
            await tb.wait_done(20 * cycles, what)
        except AssertionError as exc:
            hangs.append(str(exc))
            await tb.write(tb.map["CTRL"].offset, 0b110)
            await stopped(tb, job, Error.ABORTED, f"abort after {what}")
            continue
        st = await tb.status()
        outcomes.append(f"{what}: {Error(st['error']).name} {st['info']}")
        await tb.wait_quiet()
        job.check_untouched()
        check_no_wild_writes(tb, what)
    dut._log.info("unchecked fields: %s", "; ".join(outcomes))
    job.values = good
    await tb.run(job, what="the run after the unchecked fields")
    assert not hangs, "\n".join(hangs)


def stub_good(tb, job):
    """The stand-in's configuration with every slot enabled and valid (it passes every check)."""
    good = copy.deepcopy(job.values)
    slots = good_config(tb.cfg["lanes"])
    good["rp0"], good["rp1"] = slots["rp0"], slots["rp1"]
    good["rp0"][0]["base"] = IN                 # the stand-in reads rp0[0]
    good["out_base"] = good["out_base"] + [0] * (3 - len(good["out_base"]))
    return good


@cocotb.test()
async def every_configuration_check_refuses(dut):
    tb, _, _ = await robust_tb(dut)
    lanes = tb.cfg["lanes"]
    rows = (tb.cfg["rp0_rows"], tb.cfg["rp1_rows"])
    job = StubJob(tb, [1, 1, 1, 1, 2, 16], [1, 1, 1, 1, 1, lanes])
    good = stub_good(tb, job)
    edges = edge_configs(good, lanes, rows)
    cases = bad_configs(good, lanes, rows)
    for n, (number, what, values) in enumerate(cases):
        requests = tb.dram.request_cycles
        await tb.launch(values)
        await tb.wait_done(2000, what)
        st = await tb.status()
        assert st == {"busy": 0, "done": 1, "error": Error.CONFIG, "info": number}, \
            f"{what}: {st}"
        await ClockCycles(dut.clk, 20)
        assert tb.dram.request_cycles == requests, f"{what}: the refused kernel used DRAM"
        edge, job.values = edges[n % len(edges)]
        await tb.run(job, what=f"{edge} (after {what})")


# ---- pytest side: build the model and run the cocotb tests above ----


#: The DRAM of the robustness runs: 30 % stalls on every channel, 1..60 cycles of read latency
#: per burst, 0..40 cycles before each write response, read bursts of different IDs reordered
#: and interleaved.
STRESS = {"backpressure": 0.3, "latency": [1, 60], "write_latency": [0, 40], "reorder": True}
#: The scenarios that stop a real kernel (the configuration checks are the top's, not the TAU's).
KERNEL_TESTS = ["kernels_complete_under_random_latency", "abort_at_a_random_point",
                "reset_in_the_middle_of_a_kernel", "axi_error_responses_stop_the_run",
                "illegal_instruction_stops_the_run", "unchecked_fields_never_hang"]


@pytest.mark.sim
@pytest.mark.xdist_group("top_n8_t2_stub")      # one model with test_top_top, test_top_fuzz
def test_top_robust_stub():
    lanes, taus = 8, 2
    top = Top(lanes=lanes, taus=taus, tau=StubTau)
    config = {"lanes": lanes, "taus": taus, "rp0_rows": 16384 // (2 * lanes),
              "rp1_rows": 8192 // (2 * lanes), **STRESS}
    run_bench(top, bench="test_top_robust", config=config, public=True)   # the fuzz's model


def _run_on_real_taus(tmp_path, problem, taus, testcase, **fields):
    """``problem`` compiled for ``taus`` real 8-lane TAUs with small SRAMs (RP 2 KB / 1 KB, CP
    2 KB), run by the scenarios ``testcase`` under the stress DRAM; ``fields``: more of the
    bench's configuration (the compiler's sharing choices)."""
    lanes, rp_bytes, cp_bytes = 8, (2048, 1024), 2048
    path = tmp_path / "problem.pkl"
    path.write_bytes(pickle.dumps(problem))
    top = Top(lanes=lanes, taus=taus, rp0_bytes=rp_bytes[0], rp1_bytes=rp_bytes[1],
              cp_bytes=cp_bytes)
    config = {"problem": str(path), "lanes": lanes, "taus": taus, "rp_bytes": list(rp_bytes),
              "cp_bytes": cp_bytes, "rp0_rows": rp_bytes[0] // (2 * lanes), "stops": 2,
              **fields, **STRESS}
    run_bench(top, bench="test_top_robust", config=config, name=f"top_n{lanes}_t{taus}",
              testcase=testcase)


@pytest.mark.sim
@pytest.mark.slow
def test_top_robust_real_tau(tmp_path):
    _run_on_real_taus(tmp_path, W.conv2d(1, 3, 9, 13, 4, 3, padding=1), 2, KERNEL_TESTS)


@pytest.mark.sim
@pytest.mark.slow
def test_top_robust_share2d(tmp_path):
    """Two-dimensional sharing (2 x 2 blocks of 4 TAUs, both GEMM operands shared) under the
    stress DRAM: exact, and the stopping scenarios end as documented (a leader slowed by its
    R channel, a follower by its RP: the credits hold every group together)."""
    _run_on_real_taus(tmp_path, W.gemm(24, 40, 16), 4,
                      ["kernels_complete_under_random_latency", "abort_at_a_random_point",
                       "reset_in_the_middle_of_a_kernel"], share_dims=2)


@pytest.mark.sim
@pytest.mark.slow
def test_top_robust_share_block(tmp_path):
    """One shared slot on the block walk (``share_block``: groups of 4 TAUs, a GEMM whose walk
    ends in partial groups with void tiles, ``test_top_share_block``) under the stress DRAM:
    exact, and abort and reset in the middle end as documented."""
    _run_on_real_taus(tmp_path, W.gemm(36, 40, 16), 4,
                      ["kernels_complete_under_random_latency", "abort_at_a_random_point",
                       "reset_in_the_middle_of_a_kernel"], share_dims=2, share_counts=[1],
                      max_outputs=64)


@pytest.mark.sim
@pytest.mark.slow
def test_top_robust_whole_tiles_first(tmp_path):
    """1-D sharing dealt each run's whole tiles first (``share_order`` 1: a 13 x 13 output in
    tiles with edges on both inner indices) under the stress DRAM (random latency, reordered
    responses): exact, and abort, reset, SLVERR and an illegal instruction end as documented.
    (The unchecked fields run on the smaller convolution of ``test_top_robust_real_tau``: on
    this one "every instruction at every level" outlasts its limit of 20 good runs under the
    stress DRAM, every tile taken and the port still moving write bursts at the limit.)"""
    _run_on_real_taus(tmp_path, W.conv2d(1, 8, 15, 15, 16, 3), 4,
                      [t for t in KERNEL_TESTS if t != "unchecked_fields_never_hang"],
                      share_order=1)


@pytest.mark.sim
@pytest.mark.slow
def test_top_robust_hold(tmp_path):
    """Footprint reuse (``config["hold"]``: the weights, one tile for every job, and the input
    held, each given its whole RP, so that every job whose input changes waits for the held
    input tile's free; compiled for one TAU, dealt dynamically to 2) under the stress DRAM:
    exact, and abort, reset and SLVERR in the middle of a chain of held jobs end as documented,
    the next run exact (the held tiles and their tokens go with the TAUs' reset)."""
    _run_on_real_taus(tmp_path, W.conv2d(1, 3, 32, 48, 4, 3, padding=1), 2,
                      ["kernels_complete_under_random_latency", "abort_at_a_random_point",
                       "reset_in_the_middle_of_a_kernel", "axi_error_responses_stop_the_run"],
                      hold=True, compile_taus=1, whole_rp=True)
