"""cocotb bench of :class:`meritz.tau.cp.ComputePipeline`: whole ranged-inner-product programs.

The pytest side passes a program (words, range table, constants, tables), the accumulation space
and its tiling (the outermost index split into accumulation tiles), the lane groups of a parallel
tile and the number of parallel tiles. The bench draws random RP data (with int16 corners) for
every lane and step, runs :func:`merit.isa.execute` on all lanes of all tiles at once, and checks
that the CP delivers exactly those ``out`` vectors, in the order jobs -> groups -> steps ->
addresses, with random valid gaps on the job / RP streams and random ready on ``out``. It also
checks that the CP consumed exactly the RP vectors the program reads, that it ends idle without
error, and records cycles and ALU utilization.
"""

from collections import deque

import cocotb
import numpy as np
from amaranth.hdl import Shape
from amaranth.lib import data
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from merit.isa import Program, execute, range_select
from merit.sim.benchlib import (
    bench_config,
    pack_lanes,
    pause_generator,
    record_metric,
    rng,
    setup,
    unpack_lanes,
)
from meritz.tau.cp import cp_config_layout
from meritz.tau.cp.sequencer import DIMS, job_layout, sequencer_config

CORNERS = [-32768, -32767, -1, 0, 1, 32766, 32767]


def pack(layout, value):
    """Pack nested dicts / lists of integers into the bits of an Amaranth layout."""
    if isinstance(layout, data.StructLayout):
        return sum(pack(f.shape, value[name]) << f.offset for name, f in layout
                   if name in value)
    if isinstance(layout, data.ArrayLayout):
        width = Shape.cast(layout.elem_shape).width
        return sum(pack(layout.elem_shape, v) << (k * width) for k, v in enumerate(value))
    width = Shape.cast(layout).width
    return int(value) & ((1 << width) - 1)


class Scenario:
    """Jobs, RP streams and expected outputs of one configuration, from the reference model."""

    def __init__(self, cfg, rand):
        self.cfg = cfg
        p = cfg["program"]
        self.program = Program(p["words"], p["begs"], p["ends"], p["consts"], p["luts"])
        self.a_shape = tuple(cfg["a_shape"])
        self.prog = self.program.with_levels(len(self.a_shape))
        self.lanes = cfg["lanes"]
        gshape, bits = cfg["group_shape"], cfg["lane_bits"]
        shifts = sequencer_config(self.program, self.a_shape, gshape, bits)["lane_shift"]
        groups = list(np.ndindex(*gshape))
        lane = np.arange(self.lanes)
        # every lane of every (parallel tile, group), in the order the hardware runs them
        self.p_origins = []                 # per parallel tile; tiles stacked along dim 0
        pidx = []
        for t in range(cfg["p_tiles"]):
            origin = [t * (gshape[0] << bits[0])] + [0] * (len(gshape) - 1)
            self.p_origins.append(origin + [0] * (DIMS - len(origin)))
            for g in groups:
                pidx.append(np.stack([origin[j] + (g[j] << bits[j])
                                      + ((lane >> shifts[j]) & ((1 << bits[j]) - 1))
                                      for j in range(len(gshape))]))
        self.pindex = np.concatenate(pidx, axis=1)
        self.groups = len(groups)
        total = self.pindex.shape[1]

        def draw():
            x = np.array([rand.randint(-32768, 32767) for _ in range(int(np.prod(self.a_shape))
                                                                      * total)])
            corner = np.array([rand.random() < 0.2 for _ in range(x.size)])
            x[corner] = [rand.choice(CORNERS) for _ in range(int(corner.sum()))]
            return x.reshape(self.a_shape + (total,)).astype(np.int16)

        self.rp = [[draw() for _ in self.prog.reads(k)] for k in (0, 1)]
        self.trace = execute(self.program, self.a_shape, rp0=self.rp[0], rp1=self.rp[1],
                             pindex=self.pindex, lanes=total)
        self.jobs, self.feeds, self.expected = [], ([], []), []
        self.execs = 0
        self._schedule()

    def _schedule(self):
        cfg, prog, n = self.cfg, self.prog, self.lanes
        slots = {(k, addr): i for k in (0, 1) for i, addr in enumerate(prog.reads(k))}
        outs = {addr: i for i, addr in enumerate(prog.out_addresses)}
        a_tiles = cfg["a_tiles"]               # extents of the outermost index per tile
        for t in range(cfg["p_tiles"]):
            start = 0
            runs = {}                          # (unit, out address) -> executions so far
            for ext in a_tiles:
                origin = [start] + [0] * (DIMS - 1)
                extent = [ext] + list(self.a_shape[1:]) + [1] * (DIMS - len(self.a_shape))
                self.jobs.append({"a_origin": origin, "a_extent": extent,
                                  "p_origin": self.p_origins[t]})
                for u in range(t * self.groups, (t + 1) * self.groups):
                    cols = slice(u * n, (u + 1) * n)
                    tile = [range(start, start + ext)] + [range(v) for v in self.a_shape[1:]]
                    for index in np.ndindex(*[len(r) for r in tile]):
                        index = (index[0] + start,) + index[1:]
                        kf, kl = range_select(index, self.a_shape)
                        for addr in range(prog.begs[kf], prog.ends[kl]):
                            self.execs += 1
                            for k in (0, 1):
                                if (k, addr) in slots:
                                    self.feeds[k].append(
                                        [int(v) for v in self.rp[k][slots[k, addr]][index][cols]])
                            if addr in outs:
                                e = runs.get((u, addr), 0)
                                runs[u, addr] = e + 1
                                # all lanes run the same steps: execution e is trace row e
                                vec = self.trace.outputs[outs[addr]][e][cols]
                                self.expected.append([int(v) for v in vec])
                start += ext


class Source:
    def __init__(self, dut, name, items, pause, pack_item):
        self.dut, self.name, self.items, self.pause = dut, name, deque(items), pause
        self.pack_item, self.offered = pack_item, None

    def drive(self):
        if self.offered is None and self.items and not next(self.pause):
            self.offered = self.items.popleft()
        getattr(self.dut, f"{self.name}__valid").value = self.offered is not None
        if self.offered is not None:
            getattr(self.dut, f"{self.name}__payload").value = self.pack_item(self.offered)

    def sample(self):
        fired = (self.offered is not None
                 and int(getattr(self.dut, f"{self.name}__ready").value) == 1)
        if fired:
            self.offered = None
        return fired


async def run_scenario(dut, cfg, pause_prob, first):
    """Run one scenario from reset; ``first`` starts the clock (later ones only reset)."""
    rand = rng()
    sc = Scenario(cfg, rand)
    seq = sequencer_config(sc.program, sc.a_shape, cfg["group_shape"], cfg["lane_bits"])
    seq["program"] += [0] * (cfg["program_depth"] - len(seq["program"]))
    luts = [list(t) for t in sc.program.luts] + [[0] * 33] * (2 - len(sc.program.luts))
    layout = cp_config_layout(cfg["program_depth"])
    dut.config.value = pack(layout, {"seq": seq, "simd": {"consts": list(sc.program.consts),
                                                          "luts": luts}})
    jl = job_layout()
    vec = lambda v: pack_lanes(v, 16)  # noqa: E731
    sources = [Source(dut, "job", sc.jobs, pause_generator(rand, pause_prob),
                      lambda j: pack(jl, j)),
               Source(dut, "rp0", sc.feeds[0], pause_generator(rand, pause_prob), vec),
               Source(dut, "rp1", sc.feeds[1], pause_generator(rand, pause_prob), vec)]
    out_pause = pause_generator(rand, pause_prob)
    for name in ("job", "rp0", "rp1"):
        getattr(dut, f"{name}__valid").value = 0
    dut.out__ready.value = 0
    if first:
        await setup(dut)
    else:
        dut.rst.value = 1
        await ClockCycles(dut.clk, 2)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
    expected = deque(sc.expected)
    lanes = cfg["lanes"]
    started = None
    for cycle in range(cfg.get("max_cycles", 200000)):
        for src in sources:
            src.drive()
        dut.out__ready.value = not next(out_pause)
        await ReadOnly()
        where = f"cycle {cycle}"
        assert int(dut.error.value) == 0, f"{where}: error {int(dut.error.value):02b}"
        if int(dut.out__valid.value) and int(dut.out__ready.value):
            got = unpack_lanes(dut.out__payload.value, lanes, 16)
            assert expected, f"{where}: unexpected out {got}"
            want = expected.popleft()
            assert got == want, f"{cfg['name']}, {where}: out {got} != reference {want} " \
                                f"({len(sc.expected) - len(expected)}-th)"
        for src in sources:
            if src.sample() and started is None:
                started = cycle
        await RisingEdge(dut.clk)
        if (not expected and all(not s.items and s.offered is None for s in sources)
                and int(dut.idle.value)):
            break
    else:
        raise AssertionError(f"timeout: {len(expected)} outs pending, "
                             f"{[len(s.items) for s in sources]} items queued")
    cycles = cycle - started + 1
    dut._log.info("%s: %d jobs, %d outs, %d instructions in %d cycles", cfg["name"],
                  len(sc.jobs), len(sc.expected), sc.execs, cycles)
    return sc, cycles


def _scenarios():
    cfg = bench_config()
    for scenario in cfg["scenarios"]:
        yield dict(scenario, lanes=cfg["lanes"], program_depth=cfg["program_depth"])


@cocotb.test()
async def programs_without_backpressure(dut):
    """Every stream always ready: cycles per instruction (1 plus save/restore per group)."""
    for k, cfg in enumerate(_scenarios()):
        sc, cycles = await run_scenario(dut, cfg, 0.0, k == 0)
        overhead = len(sc.jobs) * sc.groups * (2 * sc.program.regs + 3)
        assert cycles <= sc.execs + overhead + 10, \
            f"{cfg['name']}: {cycles} cycles for {sc.execs} instructions"
        record_metric(f"{cfg['name']}.cycles", cycles)
        record_metric(f"{cfg['name']}.instructions", sc.execs)
        record_metric(f"{cfg['name']}.alu_utilization", round(sc.execs / cycles, 4))


@cocotb.test()
async def programs_with_backpressure(dut):
    """Random gaps on job / rp0 / rp1 and random ready on out."""
    for k, cfg in enumerate(_scenarios()):
        await run_scenario(dut, cfg, 0.3, k == 0)
