"""Fault and fuzz regression of meritz.top.Top on the stand-in TAU, in the manner of NVDLA's test
levels: many short randomized runs in one simulation, each checked against a reference model,
with an AXI protocol checker on both ports (``axi_checker.AxiChecker``) failing the bench on any
violation.

* ``configuration_fuzz``: random configurations over every register field (values within each
  field, biased to the edges 0, 1, the largest value and the SRAM sizes) and random LUT windows;
  the expected STATUS comes from :func:`expected_status`, a reference model of the START checks
  written from ``merit.regmap.CHECKS`` (not from the RTL): a refused kernel must end with error
  CONFIG and the number of the first failing check, without one DRAM request; an accepted one
  (its run-affecting fields put back) must complete exactly. Unmapped addresses answer SLVERR;
  the LUT window reads back what was written.
* ``stop_storm``: random scenarios on a long kernel: abort at a random point, around the end of
  the run, START and abort in one write (busy, and idle: the run starts), aborts while idle
  and right after a reset, reset in the middle of an AXI-Lite access, reset at the cycle done
  rises and while an abort drains, a second abort while the first drains, storms of resets and
  aborts, START while busy, clearing done, a refused START right after a reset. Each ends in
  the documented STATUS (done, not busy, NONE with an exact output or ABORTED with nothing
  written but output elements), the DRAM port quiet, nothing written outside the output, and the
  next run exact.
* ``abort_at_done``: the abort performed exactly ``delta`` cycles from the cycle ``finished``
  is (or would be) high, for ``delta`` in -2..2: the last write response of the run is held,
  the abort's AW accepted with its W held back; both are let go so that the register block
  sees the abort at the chosen cycle, and the monitor (internal signals, sampled every cycle)
  confirms the cycles. Before or in the cycle ``finished`` is high the abort wins (ABORTED,
  nothing written but output elements); after it the run completes exactly.
* ``several_errors_in_one_run``: SLVERR / DECERR on several read beats and write responses of one
  run (both channels at once, on the first and last beat): the run stops with the error of the
  first, and the next run is exact.

The number of runs comes from the configuration (``fuzz_runs``, ``storm_runs``, ``error_runs``,
``exact_runs``), and each test records the runs it made under the same names. Functional
coverage (``funcov``: run states and transitions, scenario x error, START checks, stops by the
state they hit and their cycle relative to ``finished``) is recorded as the metric ``coverage``.

The pytest side. Fault and fuzz regression of meritz.top.Top (``test_top_fuzz``) on the stand-in
TAU, 8 lanes, 2 TAUs, the robustness DRAM (stalls, random latency, reordered reads and write
responses), an AXI protocol checker on both ports. Every run starts from random initial values
(``--x-initial unique`` with ``+verilator+rand+reset+2`` and a per-run seed, printed).

The default test runs a few hundred randomized runs with one random seed; the slow one
(``make regress``) several seeds of thousands of runs each, over the same Verilator build.
"""

import copy
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge

import funcov
from axi_checker import AxiChecker
from harness import run_bench
from merit import kernelcfg
from merit.regmap import CHECKS, Error
from merit.sim.benchlib import record_metric
from meritz.top import Top
from stubs import StubTau
from test_top_robust import LONG, STRESS, check_no_wild_writes, stub_good
from test_top_top import DRAM_BYTES, OUT, TB, StubJob

SLVERR, DECERR = 2, 3

#: Fields the stand-in's run depends on: put back to the good kernel's values before an
#: accepted configuration runs (so that its output can be checked exactly).
RUN_FIELDS = ("p_size", "p_tile", "lane_index", "out_pitch", "out_base", "rp0")
#: Fields the START checks read (drawn more often: most fuzz runs are refusals, which are short).
CHECKED = ("p_size", "a_size", "p_tile", "a_tile", "lane_index", "begs", "ends", "enable",
           "extent", "box", "rows", "rotate", "base", "out_base", "lpitch")
#: The kernel of the stop scenarios: 48 tiles.
STORM = ([1, 1, 1, 1, 6, 64], [1, 1, 1, 1, 1, 8])


def _get(values, path, default=0):
    node = values
    for key in path:
        if isinstance(key, int):
            if not isinstance(node, list) or key >= len(node):
                return default
        elif not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _set(values, path, value):
    node = values
    for i, key in enumerate(path[:-1]):
        nxt = {} if isinstance(path[i + 1], str) else []
        if isinstance(key, int):
            while len(node) <= key:
                node.append({} if isinstance(nxt, dict) else [])
            node = node[key]
        else:
            node = node.setdefault(key, nxt)
    key = path[-1]
    if isinstance(key, int):
        while len(node) <= key:
            node.append(0)
    node[key] = value


def _path(name):
    """``rp0[1].extent[2]`` -> ``("rp0", 1, "extent", 2)``."""
    out = []
    for part in name.replace("]", "").split("."):
        head, *idx = part.split("[")
        out.append(head)
        out += [int(i) for i in idx]
    return tuple(out)


def expected_status(values, *, lanes, rows, instructions=16):
    """The number (1-based, ``merit.regmap.CHECKS`` order) of the first START check that
    ``values`` fails, or 0 when every check passes. A reference model written from the checks'
    documentation (``docs/registers.md``)."""
    P, A, AXES = kernelcfg.P_INDICES, kernelcfg.A_INDICES, kernelcfg.AXES
    bits = lanes.bit_length() - 1

    def g(*path):
        return _get(values, path)

    def sizes():
        return all(g("p_size", j) >= 1 for j in range(P)) and \
            all(g("a_size", j) >= 1 for j in range(A))

    def tiles():
        return all(g("p_tile", j) >= 1 for j in range(P)) and \
            all(g("a_tile", j) >= 1 for j in range(A))

    def lanes_ok():
        index = [g("lane_index", i) for i in range(bits)]
        if any(j >= P for j in index):
            return False
        return all(g("p_tile", j) % (1 << index.count(j)) == 0 for j in range(P))

    def range_ok():
        begs = [g("begs", k) for k in range(A + 1)]
        ends = [g("ends", k) for k in range(A + 1)]
        return (all(e <= instructions for e in ends)
                and all(begs[k] <= begs[k - 1] for k in range(1, A + 1))
                and all(ends[k] >= ends[k - 1] for k in range(1, A + 1))
                and begs[0] <= ends[0])

    def slots():
        for port, cap in (("rp0", rows[0]), ("rp1", rows[1])):
            for k in range(len(_get(values, (port,), []))):
                if not g(port, k, "enable"):
                    continue
                if any(g(port, k, f, a) < 1 for f in ("extent", "box") for a in range(AXES)):
                    return False
                rows_k = g(port, k, "rows")
                if not 1 <= rows_k <= cap or g(port, k, "rotate") >= bits \
                        or g(port, k, "base") % 2:
                    return False
        return True

    def outputs():
        return all(g("out_base", k) % 2 == 0 for k in range(3))

    def share():
        if g("share_log2") == 0:
            return True
        enabled = [(port, bool(g(port, k, "enable")))
                   for port in ("rp0", "rp1") for k in range(len(_get(values, (port,), [])))]
        slot = g("share_slot")
        if slot >= len(enabled) or not enabled[slot][1]:
            return False
        port = enabled[slot][0]
        return sum(on for p, on in enabled if p == port) == 1

    def share2():
        if g("share2_log2") == 0:
            return True
        if g("share_log2") == 0:
            return False
        enabled = [(port, bool(g(port, k, "enable")))
                   for port in ("rp0", "rp1") for k in range(len(_get(values, (port,), [])))]
        slot, first = g("share2_slot"), g("share_slot")
        if slot >= len(enabled) or not enabled[slot][1] or first >= len(enabled):
            return False
        port = enabled[slot][0]
        return port != enabled[first][0] and sum(on for p, on in enabled if p == port) == 1

    def block():
        return g("share_block") == 0 or (g("share_log2") != 0 and g("share2_log2") == 0)

    def footprint():
        # a tile's words lie at tile addresses sum_i k_i * lpitch[i] + k_3 (k_i < box[i], axis 3
        # innermost with pitch 1): the last is reached at k_i = box[i] - 1 on every axis
        for port in ("rp0", "rp1"):
            for k in range(len(_get(values, (port,), []))):
                if not g(port, k, "enable"):
                    continue
                last = sum((g(port, k, "box", a) - 1) * g(port, k, "lpitch", a)
                           for a in range(AXES - 1)) + g(port, k, "box", AXES - 1) - 1
                if last >= g(port, k, "rows") * lanes:
                    return False
        return True

    def rp_rows():
        # every job allocates one tile per enabled slot in its RP before freeing any
        for port, cap in (("rp0", rows[0]), ("rp1", rows[1])):
            count = len(_get(values, (port,), []))
            if sum(g(port, k, "rows") for k in range(count) if g(port, k, "enable")) > cap:
                return False
        return True

    def hold():
        # a held RP has one enabled slot, which no TAU group shares
        enabled = [(port, bool(g(port, k, "enable")))
                   for port in ("rp0", "rp1") for k in range(len(_get(values, (port,), [])))]
        shared = {g("share_slot")} if g("share_log2") else set()
        shared |= {g("share2_slot")} if g("share2_log2") else set()
        for r, port in enumerate(("rp0", "rp1")):
            if not g("hold") >> r & 1:
                continue
            mine = [n for n, (p, on) in enumerate(enabled) if p == port and on]
            if len(mine) != 1 or mine[0] in shared:
                return False
        return True

    checks = {"sizes": sizes, "tiles": tiles, "lanes": lanes_ok, "range": range_ok,
              "slots": slots, "outputs": outputs, "share": share, "footprint": footprint,
              "rows": rp_rows, "share2": share2, "block": block, "hold": hold}
    for number, (name, _) in enumerate(CHECKS, 1):
        if not checks[name]():
            return number
    return 0


def _random_value(rand, width, signed, rows):
    lo, hi = kernelcfg.field_range(width, signed)
    pick = rand.random()
    if pick < 0.2:
        return 0
    if pick < 0.35:
        return 1
    if pick < 0.45:
        return hi
    if pick < 0.5 and signed:
        return lo
    if pick < 0.6:
        return min(hi, rand.choice(rows) + rand.choice((0, 1)))
    return rand.randint(lo, hi)


async def _fuzz_tb(dut, *, fine=False):
    tb = TB(dut, dram_bytes=DRAM_BYTES)
    await tb.start()
    checkers = [AxiChecker(dut, "m_axi__", dut.clk, dut.rst, name="m_axi"),
                AxiChecker(dut, "s_axil__", dut.clk, dut.rst, lite=True, name="s_axil")]
    tb.monitor = funcov.RunMonitor(dut)
    tb.monitor.fine = fine
    cocotb.start_soon(tb.monitor.watch())
    return tb, checkers


def _check_protocol(checkers):
    for c in checkers:
        c.check()
    record_metric("coverage", funcov.export("top"))


@cocotb.test()
async def configuration_fuzz(dut):
    tb, checkers = await _fuzz_tb(dut)
    lanes = tb.cfg["lanes"]
    rows = (tb.cfg["rp0_rows"], tb.cfg["rp1_rows"])
    job = StubJob(tb, [1, 1, 1, 1, 2, 16], [1, 1, 1, 1, 1, lanes])
    good = stub_good(tb, job)
    flat = list(kernelcfg.flatten())
    checked = [f for f in flat if f[0].split("[")[0] in CHECKED
               or f[0].split(".")[-1].split("[")[0] in CHECKED]
    refused, accepted, runs = [0] * (len(CHECKS) + 1), 0, 0
    unmapped = [tb.map.size_bytes, tb.map.lut_base + 4 * tb.map.lut_words]
    for n in range(tb.cfg.get("fuzz_runs", 100)):
        values = copy.deepcopy(good)
        pool = checked if tb.rand.random() < 0.7 else flat
        for name, _, width, signed in tb.rand.sample(pool, tb.rand.randint(1, 6)):
            _set(values, _path(name), _random_value(tb.rand, width, signed, rows))
        number = expected_status(values, lanes=lanes, rows=rows)
        if number == 0 or tb.rand.random() < 0.1:
            for key in RUN_FIELDS:
                values[key] = copy.deepcopy(good[key])
            number = expected_status(values, lanes=lanes, rows=rows)
        what = f"fuzz run {n}"
        if tb.rand.random() < 0.2:                      # the LUT window reads back
            luts = [[tb.rand.randint(-32768, 32767) for _ in range(33)] for _ in range(2)]
            await tb.configure(values, luts)
            for offset, word in tb.map.lut_words_for(luts)[::7]:
                assert await tb.read(offset) == word, f"{what}: LUT word {offset:#x}"
        if tb.rand.random() < 0.1:                      # an address without a register
            address = tb.rand.choice(unmapped)
            resp = await tb.access(what, tb.bus.write(address, bytes(4)))
            assert resp.resp == SLVERR, f"{what}: write to {address:#x} answered {resp.resp}"
            resp = await tb.access(what, tb.bus.read(address, 4))
            assert resp.resp == SLVERR, f"{what}: read of {address:#x} answered {resp.resp}"
        if number:
            requests = tb.dram.request_cycles
            await tb.launch(values)
            await tb.wait_done(2000, what)
            st = await tb.status()
            assert st == {"busy": 0, "done": 1, "error": Error.CONFIG, "info": number}, \
                f"{what}: expected check {number} ({CHECKS[number - 1][0]}), got {st}"
            assert tb.dram.request_cycles == requests, f"{what}: a refused kernel used DRAM"
            refused[number] += 1
            funcov.run_end("config_refused", Error(st["error"]).name, st["info"])
        else:
            job.values = values
            await tb.run(job, what=f"{what} (accepted)")
            check_no_wild_writes(tb, what)
            accepted += 1
            funcov.run_end("config_accepted", "NONE", 0)
        runs += 1
        if runs % 250 == 0:
            _check_protocol(checkers)
            dut._log.info("configuration fuzz: %d runs so far, accepted %d, refused per check "
                          "%s, no failure, no protocol violation", runs, accepted, refused[1:])
    _check_protocol(checkers)
    dut._log.info("configuration fuzz: %d runs, accepted %d, refused per check %s", runs,
                  accepted, refused[1:])
    record_metric("fuzz_runs", runs)
    record_metric("accepted", accepted)
    record_metric("refused", refused[1:])


async def _settle(tb, job, what):
    """After a stop: done (or reset), quiet, nothing written outside, the output either exact
    or holding only final values; returns the error code seen."""
    st = await tb.status()
    if st["busy"]:
        await tb.wait_done(100_000, what)
        st = await tb.status()
    assert st["busy"] == 0, f"{what}: {st}"
    await tb.wait_quiet()
    if st["done"] and st["error"] == Error.NONE:
        job.check()
    else:
        assert st["error"] in (Error.NONE, Error.ABORTED), f"{what}: {st}"
        job.check_untouched()
    check_no_wild_writes(tb, what)
    return st["error"]


async def _reset(tb, cycles):
    tb.dut.rst.value = 1
    await ClockCycles(tb.dut.clk, cycles)
    tb.dut.rst.value = 0
    await RisingEdge(tb.dut.clk)
    tb.shadow.clear()


async def _idle_scenario(tb, job, kind, what):
    """The scenarios that act on an idle processor; returns the error code seen at the end.

    * ``clear_done``: after a run, writing STATUS.done = 1 clears done (busy stays 0, the error
      stays).
    * ``after_reset``: after a reset (idle, not done) an abort changes nothing, a second reset
      neither, and a START of a kernel that fails a check goes straight to done with CONFIG.
    * ``start_abort_idle``: START and abort in one write to an idle processor: the run starts
      (an abort only stops a busy processor) and completes exactly.
    """
    ctrl, status = tb.map["CTRL"].offset, tb.map["STATUS"].offset
    if kind == "clear_done":
        await tb.run(job, what=what)
        await tb.write(status, 0b10)
        st = await tb.status()
        assert st == {"busy": 0, "done": 0, "error": Error.NONE, "info": 0}, f"{what}: {st}"
        return Error.NONE
    if kind == "after_reset":
        await _reset(tb, tb.rand.randrange(1, 4))
        idle = {"busy": 0, "done": 0, "error": Error.NONE, "info": 0}
        assert await tb.status() == idle, f"{what}: {await tb.status()}"
        await tb.write(ctrl, 0b110)
        await _reset(tb, 1)
        assert await tb.status() == idle, f"{what}: {await tb.status()} after abort and reset"
        bad = copy.deepcopy(job.values)
        bad["p_size"][0] = 0
        requests = tb.dram.request_cycles
        await tb.launch(bad, job.luts)
        await tb.wait_done(2000, what)
        st = await tb.status()
        assert st == {"busy": 0, "done": 1, "error": Error.CONFIG, "info": 1}, f"{what}: {st}"
        assert tb.dram.request_cycles == requests, f"{what}: a refused kernel used DRAM"
        return Error.CONFIG
    await tb.configure(job.values, job.luts)
    await tb.write(ctrl, 0b111)
    await tb.wait_done(200_000, what)
    st = await tb.status()
    assert st["busy"] == 0 and st["error"] == Error.NONE, f"{what}: {st}"
    await tb.wait_quiet()
    job.check()
    check_no_wild_writes(tb, what)
    return Error.NONE


@cocotb.test()
async def stop_storm(dut):
    tb, checkers = await _fuzz_tb(dut, fine=True)
    ctrl = tb.map["CTRL"].offset
    job = StubJob(tb, *STORM)
    cycles = await tb.run(job, what="the first run")
    outcomes = {}
    runs = 0
    for n in range(tb.cfg.get("storm_runs", 20)):
        kind = tb.rand.choice(["abort", "abort_near_done", "start_abort", "abort_idle",
                               "reset_lite", "reset_at_done", "reset_storm", "abort_storm",
                               "start_busy", "clear_done", "after_reset", "reset_in_flush",
                               "abort_in_flush", "start_abort_idle"])
        what = f"storm {n} ({kind})"
        job.fill()
        if kind in ("clear_done", "after_reset", "start_abort_idle"):
            error = await _idle_scenario(tb, job, kind, what)
            outcomes[f"{kind}:{error.name}"] = outcomes.get(f"{kind}:{error.name}", 0) + 1
            funcov.run_end(kind, error.name, 0)
            await tb.run(job, what=f"the run after {what}")
            runs += 1
            continue
        if kind == "abort_idle":                    # no effect: STATUS keeps the last run's
            before = await tb.status()
            await tb.write(ctrl, 0b110)
            assert await tb.status() == before, f"{what}: {await tb.status()} after {before}"
            funcov.run_end(kind, Error(before["error"]).name, before["info"])
            await tb.run(job, what=f"the run after {what}")
            runs += 1
            continue
        if kind == "reset_lite":                    # reset while a register access is pending
            await tb.configure(job.values, job.luts)
            task = cocotb.start_soon(tb.bus.read(tb.map["STATUS"].offset, 4))
            await ClockCycles(dut.clk, tb.rand.randrange(3))
            await _reset(tb, tb.rand.randrange(1, 4))
            task.cancel()
            await ClockCycles(dut.clk, 5)
        else:
            await tb.launch(job.values, job.luts)
            if kind == "abort":
                await ClockCycles(dut.clk, tb.rand.randrange(cycles))
                await tb.write(ctrl, 0b110)
            elif kind == "abort_near_done":     # the last tenth of the run: either outcome
                await ClockCycles(dut.clk, max(0, cycles - tb.rand.randrange(max(12,
                                                                               cycles // 10))))
                await tb.write(ctrl, 0b110)
            elif kind == "start_abort":
                await tb.write(ctrl, 0b111)             # START and abort in one write
            elif kind == "reset_at_done":
                await tb.wait_done(20 * cycles, what)
                await _reset(tb, tb.rand.randrange(1, 4))
            elif kind == "reset_storm":
                for _ in range(tb.rand.randrange(2, 8)):
                    await ClockCycles(dut.clk, tb.rand.randrange(1, max(2, cycles // 4)))
                    await _reset(tb, tb.rand.randrange(1, 4))
                    await tb.launch(job.values, job.luts)
            elif kind == "abort_storm":
                for _ in range(tb.rand.randrange(2, 8)):
                    await ClockCycles(dut.clk, tb.rand.randrange(cycles // 4))
                    await tb.write(ctrl, 0b110)
                    await tb.wait_done(20 * cycles, what)
                    job.fill()
                    await tb.launch(job.values, job.luts)
            elif kind == "abort_in_flush":          # a second abort while the first drains
                # one in two from the last eighth of the run on (its length varies with the
                # DRAM's latency): the first abort may then land in its last cycles (both
                # abort, or the second finds the processor done) or, mostly, after done
                # (neither has an effect: NONE, exact output)
                late = tb.rand.random() < 0.5
                await ClockCycles(dut.clk, tb.rand.randrange(cycles * 7 // 8, cycles * 2)
                                  if late else tb.rand.randrange(cycles // 2))
                await tb.write(ctrl, 0b110)
                await tb.write(ctrl, 0b110)
            elif kind == "reset_in_flush":          # reset while the abort drains
                await ClockCycles(dut.clk, tb.rand.randrange(cycles // 2))
                await tb.write(ctrl, 0b110)
                await ClockCycles(dut.clk, tb.rand.randrange(3))
                await _reset(tb, tb.rand.randrange(1, 4))
            elif kind == "start_busy":
                await ClockCycles(dut.clk, tb.rand.randrange(cycles // 2))
                await tb.write(ctrl, 0b101)             # ignored while busy
        code = await _settle(tb, job, what)
        outcomes[f"{kind}:{Error(code).name}"] = outcomes.get(f"{kind}:{Error(code).name}", 0) + 1
        funcov.run_end(kind, Error(code).name, 0)
        await tb.run(job, what=f"the run after {what}")
        runs += 1
    _check_protocol(checkers)
    dut._log.info("stop storm: %d scenarios, %s", runs, outcomes)
    record_metric("storm_runs", runs)
    record_metric("outcomes", outcomes)


@cocotb.test()
async def several_errors_in_one_run(dut):
    """Several SLVERR / DECERR in one run, on both channels, including the first and last beat:
    the run stops with the error of the first one the processor sees; the next run is exact."""
    tb, checkers = await _fuzz_tb(dut)
    job = StubJob(tb, *LONG)
    sent = {"r": 0, "b": 0}
    poison = {"r": set(), "b": set()}
    for key, channel in (("r", tb.dram.reader.r_channel), ("b", tb.dram.writer.b_channel)):
        send = channel.send

        async def poisoned(beat, key=key, send=send):
            sent[key] += 1
            if sent[key] in poison[key]:
                setattr(beat, f"{key}resp", tb.rand.choice((SLVERR, DECERR)))
            await send(beat)
        channel.send = poisoned
    before = dict(sent)
    await tb.run(job, what="the clean run")
    counts = {key: sent[key] - before[key] for key in sent}
    runs = 0
    for n in range(tb.cfg.get("error_runs", 6)):
        which = tb.rand.choice(("r", "b", "both"))
        for key in ("r", "b"):
            if which in (key, "both"):
                picks = {1, counts[key], *(tb.rand.randrange(1, counts[key] + 1)
                                           for _ in range(3))}
                poison[key] = {sent[key] + p for p in picks}
        job.fill()
        await tb.launch(job.values, job.luts)
        what = f"errors run {n} on {which}"
        await tb.wait_done(100_000, what)
        st = await tb.status()
        codes = {"r": {Error.AXI_READ}, "b": {Error.AXI_WRITE},
                 "both": {Error.AXI_READ, Error.AXI_WRITE}}[which]
        assert st["busy"] == 0 and st["done"] == 1 and st["error"] in codes, f"{what}: {st}"
        funcov.run_end(f"axi_errors_{which}", Error(st["error"]).name, st["info"])
        await tb.wait_quiet()
        job.check_untouched()
        check_no_wild_writes(tb, what)
        poison = {"r": set(), "b": set()}
        await tb.run(job, what=f"the run after {what}")
        runs += 1
    _check_protocol(checkers)
    record_metric("error_runs", runs)


@cocotb.test()
async def abort_at_done(dut):
    tb, checkers = await _fuzz_tb(dut, fine=True)
    mon = tb.monitor
    ctrl = tb.map["CTRL"].offset
    lanes = tb.cfg["lanes"]
    job = StubJob(tb, [1, 1, 1, 1, 2, 16], [1, 1, 1, 1, 1, lanes])
    tb.dram.write_latency = (0, 0)          # a released response goes at once,
    tb.dram.backpressure = 0                # and no random stall delays it
    channel = tb.dram.writer.b_channel
    send = channel.send
    hold = {"sent": 0, "last": None, "beat": None}

    async def held(beat):
        hold["sent"] += 1
        if hold["sent"] == hold["last"]:
            hold["beat"] = beat
        else:
            await send(beat)
    channel.send = held
    before = hold["sent"]
    await tb.run(job, what="the clean run")
    responses = hold["sent"] - before
    # the register port without random pauses: the abort's W goes when it is let go, its
    # response is taken at once
    for ch in (tb.bus.write_if.aw_channel, tb.bus.write_if.w_channel, tb.bus.write_if.b_channel,
               tb.bus.read_if.ar_channel, tb.bus.read_if.r_channel):
        ch.clear_pause_generator()
        ch.pause = False
    w_channel = tb.bus.write_if.w_channel

    async def attempt(gap, what):
        """Hold the run's last write response and the abort's W; release the response, then
        the W ``gap`` falling edges later (the W first for a negative ``gap``). Returns (abort
        cycle - finished cycle, or None when finished was not seen; STATUS)."""
        job.fill()
        hold["last"], hold["beat"] = hold["sent"] + responses, None
        await tb.launch(job.values, job.luts)
        for _ in range(100_000):
            await RisingEdge(dut.clk)
            if hold["beat"] is not None and tb.dram.writes_owed == 1:
                break
        else:
            raise AssertionError(f"{what}: the last write response never came")
        w_channel.pause = True
        task = cocotb.start_soon(tb.write(ctrl, 0b110))
        await ClockCycles(dut.clk, 8)
        mon.aborts.clear()
        mon.finished.clear()
        await FallingEdge(dut.clk)
        first, second = ((lambda: cocotb.start_soon(send(hold["beat"])),
                          lambda: setattr(w_channel, "pause", False)))
        if gap < 0:
            first, second = second, first
        first()
        for _ in range(abs(gap)):
            await FallingEdge(dut.clk)
        second()
        await task
        await tb.wait_done(10_000, what)
        st = await tb.status()
        assert len(mon.aborts) == 1, f"{what}: abort strobes at {mon.aborts}"
        abort = mon.aborts[0][0]
        finished = mon.finished[0] if mon.finished else None
        return (None if finished is None else abort - finished), st

    # calibration: the abort well after the end measures the cycles between the two releases
    gap0 = 40
    rel, st = await attempt(gap0, "calibration")
    assert rel is not None and rel > 2 and st["error"] == Error.NONE, (rel, st)
    job.check()
    offset = rel - gap0              # abort - finished = gap + offset
    runs = 0
    for n in range(tb.cfg.get("exact_runs", 5)):
        delta = (-2, -1, 0, 1, 2)[n % 5]
        what = f"abort {delta:+d} cycles from finished"
        rel, st = await attempt(delta - offset, what)
        if delta <= 0:
            # finished is never seen before the abort; in its cycle the abort wins
            assert rel == (0 if delta == 0 else None), f"{what}: measured {rel}"
            assert st["busy"] == 0 and st["done"] == 1 and st["error"] == Error.ABORTED, \
                f"{what}: {st}"
            await tb.wait_quiet()
            job.check_untouched()
        else:
            assert rel == delta, f"{what}: measured {rel}"
            assert st["error"] == Error.NONE, f"{what}: {st}"
            job.check()
        check_no_wild_writes(tb, what)
        if delta < 0:                   # the monitor saw no finished: the timing is by design
            funcov.abort_vs_finished(delta)
        funcov.run_end("abort_at_done", Error(st["error"]).name, 0)
        await tb.run(job, what=f"the run after {what}")
        runs += 1
    channel.send = send
    _check_protocol(checkers)
    record_metric("exact_runs", runs)


__all__ = ["expected_status", "OUT"]


# ---- pytest side: build the model and run the cocotb tests above ----


LANES, TAUS = 8, 2


def fuzz(seed, *, fuzz_runs, storm_runs, error_runs, exact_runs=5):
    top = Top(lanes=LANES, taus=TAUS, tau=StubTau)
    config = {"lanes": LANES, "taus": TAUS, "rp0_rows": 16384 // (2 * LANES),
              "rp1_rows": 8192 // (2 * LANES), "fuzz_runs": fuzz_runs, "storm_runs": storm_runs,
              "error_runs": error_runs, "exact_runs": exact_runs, **STRESS}
    print(f"[merit] fuzz seed {seed} (replay with seed={seed})")
    # public: the coverage monitor (funcov.RunMonitor) samples the register block inside
    return run_bench(top, bench="test_top_fuzz", config=config, seed=seed, public=True,
                     plusargs=["+verilator+rand+reset+2", f"+verilator+seed+{seed % 2**31 + 1}"])


@pytest.mark.sim
@pytest.mark.xdist_group("top_n8_t2_stub")      # one model with test_top_robust, test_top_top
def test_top_fuzz():
    metrics = fuzz(random.randrange(2**31), fuzz_runs=150, storm_runs=6, error_runs=2)
    assert metrics["fuzz_runs"] == 150 and metrics["storm_runs"] == 6
    assert metrics["error_runs"] == 2 and metrics["exact_runs"] == 5


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 22, 33, 44, 55])
def test_top_fuzz_regression(seed):
    metrics = fuzz(seed, fuzz_runs=2000, storm_runs=30, error_runs=8)
    print(f"[merit] fuzz regression seed {seed}: {metrics}")
