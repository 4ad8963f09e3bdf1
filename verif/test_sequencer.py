"""cocotb bench of :class:`meritz.tau.cp.ComputePipeline`: whole ranged-inner-product programs.

The pytest side passes a program (words, range table, constants, tables), the accumulation space
and its tiling (the outermost index split into accumulation tiles), the lane groups of a parallel
tile and the number of parallel tiles. The bench draws random RP data (with int16 corners) for
every lane and step, runs :func:`merit.isa.execute` on all lanes of all tiles at once, and checks
that the CP delivers exactly those ``out`` vectors, in the order jobs -> groups -> steps ->
addresses, with random valid gaps on the job / RP streams and random ready on ``out``. It also
checks that the CP consumed exactly the RP vectors the program reads, that it ends idle without
error, and records cycles and ALU utilization.

The pytest side. Verilator runs of the Compute Pipeline (sequencer + SIMD array) on whole programs.
"""

import itertools
import random
from collections import deque

import cocotb
import numpy as np
import pytest
from amaranth.hdl import Shape
from amaranth.lib import data
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from harness import run_bench
from merit import perf
from merit import workloads as W
from merit.isa import Instruction, Op, Program, assemble, encode, execute, program_for, range_select
from merit.sim.benchlib import (
    bench_config,
    pack_lanes,
    pause_generator,
    record_metric,
    rng,
    setup,
    unpack_lanes,
)
from meritz.tau.cp import ComputePipeline, cp_config_layout
from meritz.tau.cp.sequencer import DIMS, Sequencer, job_layout, sequencer_config
from meritz.tau.cp.simd import Command

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
        self.program = Program(p["words"], p["begs"], p["ends"], p["consts"], p["luts"],
                               xstride=p.get("xstride", ()), xspan=p.get("xspan", 1))
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
        self.interlocks = 0       # cycles instructions wait for the previous one (interlocks)
        self._schedule()

    def _waits(self, first, second):
        """Cycles instruction ``second`` right behind ``first`` waits
        (:func:`merit.perf.interlocked`, the SIMD array's interlock)."""
        return perf.interlocked(*(self.program.instructions[a] for a in (first, second)))

    def _schedule(self):
        cfg, prog, n = self.cfg, self.prog, self.lanes
        gshape = cfg["group_shape"]
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
                                  "p_origin": self.p_origins[t],
                                  "p_groups": list(gshape) + [1] * (DIMS - len(gshape))})
                for u in range(t * self.groups, (t + 1) * self.groups):
                    cols = slice(u * n, (u + 1) * n)
                    tile = [range(start, start + ext)] + [range(v) for v in self.a_shape[1:]]
                    prev = None
                    for index in np.ndindex(*[len(r) for r in tile]):
                        index = (index[0] + start,) + index[1:]
                        kf, kl = range_select(index, self.a_shape)
                        if prog.begs[kf] >= prog.ends[kl]:
                            prev = None            # an empty step: a cycle without a command
                        for addr in range(prog.begs[kf], prog.ends[kl]):
                            self.execs += 1
                            if prev is not None:
                                self.interlocks += self._waits(prev, addr)
                            prev = addr
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
        assert cycles <= sc.execs + sc.interlocks + overhead + 10, \
            f"{cfg['name']}: {cycles} cycles for {sc.execs} instructions " \
            f"({sc.interlocks} interlocks)"
        record_metric(f"{cfg['name']}.interlocks", sc.interlocks)
        record_metric(f"{cfg['name']}.cycles", cycles)
        record_metric(f"{cfg['name']}.instructions", sc.execs)
        record_metric(f"{cfg['name']}.alu_utilization", round(sc.execs / cycles, 4))


@cocotb.test()
async def programs_with_backpressure(dut):
    """Random gaps on job / rp0 / rp1 and random ready on out."""
    for k, cfg in enumerate(_scenarios()):
        await run_scenario(dut, cfg, 0.3, k == 0)


# ---- pytest side: build the model and run the cocotb tests above ----


NESTED = """
.levels 3
.const k0 = 0x5555
pre1:
    index r0, 0, p0
    add   r1, 0, 0, 0
pre2:
    index r2, r0, p1
pre3:
    xor   r3, r2, i1
loop:
    l1    r1, r1, i0, r3 >> 1
    or    r4, r1, k0
post3:
    sel   r5, r4, r1, r2
    out   r5, 0
post2:
    min   r6, r5, r1
    out   r6, i1 >> 3
post1:
    out   r1, r0 >> 2
    out   r4, 0 >> 31
"""


def _random_program(seed, levels=3, pdims=2):
    """A random legal program: every opcode, random sections, random constants and tables."""
    rand = random.Random(seed)
    ops = {Op.LOGIC: 6, Op.INDEX: None, Op.LOOKUP: 2}

    def operand():
        return rand.choice([*range(8), 8, 9, *range(10, 14), *range(16, 32)])

    def instruction():
        op = rand.choice(list(Op))
        fn = rand.randrange(ops[op]) if ops.get(op) else 0
        b = operand()
        if op == Op.INDEX:
            b = rand.randrange(2)
            fn = rand.randrange(levels if b == 0 else pdims)
        return encode(Instruction(op=op, fn=fn, s=rand.choice([0, 1, 5, 16, 31]),
                                  d=0 if op == Op.OUT else rand.randrange(8),
                                  a=operand(), b=b, c=operand()))

    def out():
        return encode(Instruction(op=Op.OUT, s=rand.choice([0, 3, 31]), a=rand.randrange(8),
                                  b=operand()))

    sizes = [rand.randrange(0, 3) for _ in range(2 * levels)] + [rand.randrange(2, 5)]
    sizes[-2] = max(sizes[-2], 1)                            # Post_1
    pre, loop, post = sizes[:levels], sizes[-1], sizes[levels:-1]
    words = [instruction() for _ in range(sum(sizes))]
    words[sum(pre) + loop - 1] = out()                       # every step sends one vector
    words[-1] = out()
    starts = list(itertools.accumulate([0] + pre))          # Pre_1 .. Pre_D, then Loop
    loop_end = starts[-1] + loop
    ends = list(itertools.accumulate([loop_end] + post))    # Post_D .. Post_1
    begs = [starts[levels - k] for k in range(levels + 1)]
    consts = [rand.randrange(-2**31, 2**31) for _ in range(4)]
    luts = [[rand.randrange(-32768, 32768) for _ in range(33)] for _ in range(2)]
    return Program(words, begs, ends, consts, luts)


def _window_program(problem, inside, shift=0):
    """(program, accumulation space) of ``problem`` with ``inside`` window indices inside its
    channel passes (:func:`merit.compile.window_inside`)."""
    from merit.compile import window_inside
    q = window_inside(problem, inside)
    return program_for(q, shift=shift), tuple(q.a_shape)


def _programs():
    return {
        "random": (_random_program(5), (2, 2, 3)),
        "conv": (program_for(W.conv2d(1, 4, 6, 6, 2, 3), shift=3), (4, 3, 3)),
        "best_match": (program_for(W.motion_estimation(8, 8, block=2, search=1, best=True)),
                       (3, 3, 2, 2)),
        "bilateral": (program_for(W.bilateral(6, 6, sigma_s=1.0, sigma_r=300.0, radius=2)),
                      (5, 5)),
        "mean": (program_for(W.avg_pool2d(1, 1, 6, 6, 3)), (3, 3)),
        # the pooling window inside the channel passes (the indexed register r0+x / r1+x)
        "pool_inside": _window_program(W.conv_pool2d(1, 4, 7, 7, 2, 3, pool=2), 2),
        "pool3_inside": _window_program(W.conv_pool2d(1, 3, 9, 9, 2, 2, pool=3, pool_stride=2,
                                                      relu=True), 1),
        "avg_inside": _window_program(W.conv_pool2d(1, 3, 6, 6, 2, 3, pool=2, pool_kind="avg",
                                                    relu=True), 2, shift=2),
        "nested": (assemble(NESTED), (2, 3, 4)),
    }


CASES = {
    # program, lanes, a_tiles (outermost extents), group_shape, lane_bits, parallel tiles
    "conv_n8": ("conv", 8, [2, 2], [2, 2], [1, 2], 2),
    "best_match_n8": ("best_match", 8, [1, 2], [2, 1], [1, 2], 1),
    "bilateral_n8": ("bilateral", 8, [2, 3], [1, 2], [2, 1], 1),
    "mean_n8": ("mean", 8, [3], [3], [3], 2),
    "nested_n8": ("nested", 8, [1, 1], [2, 2], [2, 1], 2),
    "random_n8": ("random", 8, [1, 1], [1, 2], [2, 1], 1),
    "conv_n32_smoke": ("conv", 32, [1, 3], [2, 1], [3, 2], 1),
    # channels (the outermost index) in two accumulation tiles, window sums kept across them
    "pool_inside_n8": ("pool_inside", 8, [1, 3], [2, 1], [2, 1], 2),
    # the window row outside (three tiles), its column inside, one running sum per column
    "pool3_inside_n8": ("pool3_inside", 8, [1, 1, 1], [1, 2], [2, 1], 1),
    "avg_inside_n8": ("avg_inside", 8, [2, 1], [1], [3], 2),
}


def _scenario(case):
    name, lanes, a_tiles, group_shape, lane_bits, p_tiles = CASES[case]
    program, a_shape = _programs()[name]
    return {
        "name": case, "a_shape": list(a_shape), "a_tiles": a_tiles,
        "group_shape": group_shape, "lane_bits": lane_bits, "p_tiles": p_tiles,
        "program": {"words": list(program.words), "begs": list(program.begs),
                    "ends": list(program.ends), "consts": list(program.consts),
                    "luts": [list(t) for t in program.luts],
                    "xstride": list(program.xstride), "xspan": program.xspan},
    }


@pytest.mark.sim
@pytest.mark.parametrize("lanes", [8, 32])
def test_compute_pipeline_runs_programs(lanes):
    """Every scenario of one lane count in one simulator run (one Verilog emission)."""
    cases = [c for c in CASES if CASES[c][1] == lanes]
    config = {"lanes": lanes, "program_depth": 32, "scenarios": [_scenario(c) for c in cases]}
    metrics = run_bench(ComputePipeline(lanes=lanes), bench="test_sequencer",
                        name=f"cp_n{lanes}", config=config)
    for case in cases:
        assert metrics[f"{case}.alu_utilization"] > 0.5, metrics


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lanes": 24}, ValueError, "lanes must be a power of two of at least 2, not 24"),
    ({"program_depth": 0}, ValueError, "program_depth must be between 1 and 64, not 0"),
    ({"program_depth": "32"}, TypeError, "program_depth must be an integer, not '32'"),
    ({"lanes": 32, "sram_bytes": 512}, ValueError,
     r"sram_bytes must hold at least one group of 8 registers \(1024 bytes for 32 lanes\)"),
])
def test_sequencer_parameters_are_validated(kwargs, error, match):
    with pytest.raises(error, match=match):
        Sequencer(**kwargs)



def _simulate_sequencer(config, job, *, max_cycles=400, with_indices=False):
    """Amaranth-level run of a lone Sequencer on one job, ``cmd`` ready every other cycle.

    Returns the commands issued, as ``(kind, word, set)`` for an EXEC and ``(kind, 0,
    (set, save, save_row, clear, load, load_row, regs))`` for a MOVE, and the error flag at the
    end (and each command's ``(index, lane_shift, lane_bits)`` with ``with_indices``).
    """
    from amaranth.sim import Simulator

    from meritz.tau.cp.sequencer import job_layout, sequencer_config_layout

    dut = Sequencer(lanes=8, program_depth=32)
    issued, indices = [], []
    result = {"indices": indices}

    async def bench(ctx):
        ctx.set(dut.config, sequencer_config_layout(32).const(config))
        ctx.set(dut.job.payload, job_layout().const(job))
        ctx.set(dut.job.valid, 1)
        await ctx.tick().until(dut.job.ready)
        ctx.set(dut.job.valid, 0)
        for cycle in range(max_cycles):
            ctx.set(dut.cmd.ready, cycle % 2)
            valid, payload = ctx.get(dut.cmd.valid), ctx.get(dut.cmd.payload)
            if valid and cycle % 2:
                kind = Command(payload.kind)
                mv = payload.move
                issued.append((kind, payload.word.as_value().value, int(payload.set))
                              if kind == Command.EXEC else
                              (kind, 0, (int(payload.set), int(mv.save), int(mv.save_row),
                                         int(mv.clear), int(mv.load), int(mv.load_row),
                                         int(mv.regs))))
                indices.append((int(payload.index), int(payload.lane_shift),
                                int(payload.lane_bits)))
            if ctx.get(dut.idle) and cycle > 1:
                break
            await ctx.tick()
        result["error"] = ctx.get(dut.error)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    if with_indices:
        return issued, result["error"], indices
    return issued, result["error"]


def _expected_commands(program, a_shape, a_origin, a_extent, groups, regs, first_set=0):
    """The command order of docs/isa.md: per group a MOVE of the other register set (the save
    of the group before, the restore of the group after), the job's first group's own restore
    before it, the steps' ranges on the group's set, the job's last group's save after it."""
    first = not any(a_origin)
    last = all(o + e == n for o, e, n in zip(a_origin, a_extent, a_shape, strict=True))
    cmds = []
    for g in range(groups):
        own = (first_set + g) % 2
        if g == 0:
            cmds.append((Command.MOVE, 0, (own, 0, 0, int(first), int(not first), 0, regs)))
        after = g + 1 < groups
        cmds.append((Command.MOVE, 0, (1 - own, int(g > 0 and not last), (g - 1) * regs
                                       if g > 0 else 0, int(after and first),
                                       int(after and not first), (g + 1) * regs, regs)))
        tile = [range(o, o + e) for o, e in zip(a_origin, a_extent, strict=True)]
        for index in itertools.product(*tile):
            kf, kl = range_select(index, a_shape)
            cmds += [(Command.EXEC, program.words[a], own)
                     for a in range(program.begs[kf], program.ends[kl])]
        if g == groups - 1 and not last:
            cmds.append((Command.MOVE, 0, (own, 1, g * regs, 0, 0, 0, regs)))
    return cmds


def _rows_used(cmds):
    """The SRAM rows the MOVEs save and restore, in order: ``("save" or "load", row)``."""
    out = []
    for k, _, mv in cmds:
        if k == Command.MOVE:
            out += [("save", mv[2])] if mv[1] else []
            out += [("load", mv[5])] if mv[4] else []
    return out


def _two_level_job(a_origin, a_extent, groups, **simulate):
    """NESTED cut to two levels over a 2 x 3 accumulation space, one job of ``groups`` groups:
    ``(program, a_shape, issued, error)``."""
    program = assemble(NESTED.replace(".levels 3", ".levels 2").replace("pre3:", "")
                       .replace("post3:", ""))
    a_shape = (2, 3)
    cfg = sequencer_config(program, a_shape, group_shape=[2], lane_bits=[3])
    cfg["program"] += [0] * (32 - len(cfg["program"]))
    job = {"a_origin": list(a_origin) + [0] * 4, "a_extent": list(a_extent) + [1] * 4,
           "p_origin": [0] * 6, "p_groups": [groups] + [1] * 5}
    return (program, a_shape, *_simulate_sequencer(cfg, job, **simulate))


@pytest.mark.parametrize("a_origin, a_extent, groups", [
    ((0, 0), (2, 3), 2), ((1, 0), (1, 3), 2), ((0, 0), (1, 3), 2),
    ((1, 0), (1, 3), 1),        # an edge tile: one of the kernel's two groups holds outputs
])
def test_sequencer_command_order(a_origin, a_extent, groups):
    program, a_shape, issued, error = _two_level_job(a_origin, a_extent, groups)
    want = _expected_commands(program.with_levels(2), a_shape, a_origin, a_extent, groups,
                              program.regs)
    assert _rows_used(issued) == _rows_used(want)
    assert issued == want and not error


@pytest.mark.parametrize("a_origin, a_extent", [
    ((0, 0), (2, 3)), ((1, 1), (1, 2)), ((0, 1), (2, 1)), ((1, 0), (1, 2)), ((0, 2), (1, 1)),
    # origin + extent past 2**16: its low 16 bits equal the shape, the sum does not (no save
    # skipped for a carry out of the end)
    ((65535, 0), (3, 3)), ((0, 65534), (2, 5)),
])
def test_sequencer_saves_unless_the_tile_ends_the_space(a_origin, a_extent):
    """A group ends without STOREs exactly where the job's tile reaches the end of the
    accumulation space in every dimension (``a_origin + a_extent == a_shape``), a check the
    sequencer makes from the waiting job's registers after it starts."""
    program, a_shape, issued, error = _two_level_job(a_origin, a_extent, 2, max_cycles=1500)
    last = all(o + e == n for o, e, n in zip(a_origin, a_extent, a_shape, strict=True))
    saves = [mv[2] for k, _, mv in issued if k == Command.MOVE and mv[1]]
    assert not error and issued
    assert saves == ([] if last else [0, program.regs])
    if all(o + e <= n for o, e, n in zip(a_origin, a_extent, a_shape, strict=True)):
        want = _expected_commands(program.with_levels(2), a_shape, a_origin, a_extent, 2,
                                  program.regs)
        assert issued == want


def test_sequencer_index_commands_carry_their_steps_indices():
    """The index an ``index`` instruction reads (a_j of its step, or the group's p_j base) and
    the lane fields of p_j, selected a cycle after the program word is read: each command keeps
    the indices of the step it was formed in, also where the step advances right behind it."""
    program = assemble(".levels 2\nloop:\n    index r0, 0, a1\n    index r1, 0, p0\n"
                       "    index r2, 0, a0\n    index r3, 0, p1\n    out r0, 0\n")
    a_shape = (3, 4)
    cfg = sequencer_config(program, a_shape, group_shape=[3, 2], lane_bits=[2, 1])
    cfg["program"] += [0] * (32 - len(cfg["program"]))
    job = {"a_origin": [1, 1, 0, 0, 0, 0], "a_extent": [2, 3, 1, 1, 1, 1],
           "p_origin": [40, 7, 0, 0, 0, 0], "p_groups": [3, 2, 1, 1, 1, 1]}
    issued, error, indices = _simulate_sequencer(cfg, job, max_cycles=1000, with_indices=True)
    want = []
    for g0, g1 in itertools.product(range(3), range(2)):
        for a0, a1 in itertools.product(range(1, 3), range(1, 4)):
            # p0 = 40 + (g0 << 2): lanes along p0 are lane bits 1..2 (p1 takes bit 0); the
            # fields follow the word's j (out: j = 0, a0) whatever the instruction
            want += [(a1, 0, 1), (40 + (g0 << 2), 1, 2), (a0, 1, 2), (7 + (g1 << 1), 0, 1),
                     (a0, 1, 2)]
    got = [ix for (k, _, _), ix in zip(issued, indices, strict=True) if k == Command.EXEC]
    assert got == want and not error


@pytest.mark.parametrize("change, job_change", [
    ({}, {"a_extent": [0, 3, 1, 1, 1, 1]}),                 # empty accumulation tile
    ({"group_shape": [0, 1, 1, 1, 1, 1]}, {}),              # more groups than the tile has
    ({}, {"p_groups": [0, 1, 1, 1, 1, 1]}),                 # no lane group
    ({"begs": [2, 3, 0, 0, 0, 0, 0]}, {}),                  # begs not non-increasing
    ({"ends": [9, 40, 40, 40, 40, 40, 40]}, {}),            # range past the program
])
def test_sequencer_drops_bad_jobs_with_error(change, job_change):
    program = assemble(NESTED.replace(".levels 3", ".levels 2").replace("pre3:", "")
                       .replace("post3:", ""))
    cfg = sequencer_config(program, (2, 3), group_shape=[2], lane_bits=[3])
    cfg["program"] += [0] * (32 - len(cfg["program"]))
    cfg.update(change)
    job = {"a_origin": [0] * 6, "a_extent": [2, 3, 1, 1, 1, 1], "p_origin": [0] * 6,
           "p_groups": [2, 1, 1, 1, 1, 1]}
    job.update(job_change)
    issued, error = _simulate_sequencer(cfg, job)
    assert issued == [] and error == 1


def test_sequencer_resolves_indexed_registers():
    """An instruction with ``x`` leaves with ``d`` and a register ``a`` moved up by its step's
    offset ``sum_j a_j xstride_j`` and ``x`` clear (the words of merit.isa's
    ``Instruction.indexed``), also in a tile that starts inside the space; plain words pass
    unchanged."""
    from merit.isa import decode
    program = assemble(".levels 3\n.xstride 0 2 1\n.xspan 6\nloop:\n"
                       "    mac r1+x, r1+x, i0, i1\n    add r0+x, 3, 0, 0\n"
                       "    out r2+x, r0\npost1:\n    max r0, r0, r1\n")
    a_shape = (2, 3, 2)
    cfg = sequencer_config(program, a_shape, group_shape=[1], lane_bits=[3])
    cfg["program"] += [0] * (32 - len(cfg["program"]))
    job = {"a_origin": [1, 0, 0, 0, 0, 0], "a_extent": [1, 3, 2, 1, 1, 1],
           "p_origin": [0] * 6, "p_groups": [1] + [1] * 5}
    issued, error = _simulate_sequencer(cfg, job, max_cycles=400)
    prog = program.with_levels(3)
    want = []
    for index in itertools.product(range(1, 2), range(3), range(2)):
        kf, kl = range_select(index, a_shape)
        x = prog.xoffset(index)
        want += [encode(decode(prog.words[a]).indexed(x))
                 for a in range(prog.begs[kf], prog.ends[kl])]
    got = [w for k, w, _ in issued if k == Command.EXEC]
    assert got == want and not error
    assert any(w >> 17 & 7 == 6 for w in got)      # r1 + 5: the last step's offset reached


def test_sequencer_flags_an_indexed_register_past_r7():
    program = assemble(".levels 1\n.xstride 1\n.xspan 4\nloop:\n    mac r4+x, r4+x, i0, i1\n")
    cfg = sequencer_config(program, (5,), group_shape=[1], lane_bits=[3])
    cfg["program"] += [0] * (32 - len(cfg["program"]))
    job = {"a_origin": [0] * 6, "a_extent": [5, 1, 1, 1, 1, 1], "p_origin": [0] * 6,
           "p_groups": [1] * 6}
    _, error = _simulate_sequencer(cfg, job)
    assert error == 1
