"""cocotb bench of :class:`meritz.tau.cp.simd.SimdArray`: random instruction streams against
``merit.isa``.

The bench runs cycle by cycle: it drives the command, RP0 and RP1 sources (random valid gaps,
payload held until the transfer) and the ``out`` sink (random ready), then, in the read-only
phase, applies the cycle's transfers to the reference and checks the outputs. The reference is
:func:`merit.isa.step` (the interpreter's per-instruction model) plus the bookkeeping of the
registers and the partial-result SRAM; every ``out`` vector is compared in order.

Proved: every opcode and logic function, both lookup tables with interpolation, ``out`` with
shift and saturation, operand corners (-32768, 32767, 32-bit extremes, shifts 0 and 31),
back-to-back read-after-write (forwarding, no ``nop``), LOAD / STORE / CLEAR of the SRAM rows,
RP elements consumed exactly by the instructions that read them, and illegal words raising
``error`` without consuming anything.

The pytest side. Verilator runs of the SIMD array bench (``test_simd``): 8 lanes in CI, 32 lanes in
regress.
"""

from collections import Counter, deque

import cocotb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

import funcov
from harness import run_bench
from merit import perf
from merit.isa import (
    LUT_ENTRIES,
    N_REGS,
    Instruction,
    Op,
    decode,
    encode,
    is_legal,
)
from merit.sim.benchlib import (
    bench_config,
    pack_lanes,
    pause_generator,
    record_metric,
    rng,
    setup,
    unpack_lanes,
)
from meritz.tau.cp.simd import Command, SimdArray, cmd_layout
from simd_model import CLEAR, LOAD, STORE, SimdModel, legacy

CORNERS16 = [-32768, -32767, -1, 0, 1, 32766, 32767]
CORNERS32 = [-(1 << 31), -(1 << 31) + 1, -32769, 32768, (1 << 31) - 1]


class Stimulus:
    """Random commands, RP vectors and kernel constants from the bench seed."""

    def __init__(self, rand, lanes, depth):
        self.rand, self.lanes, self.depth = rand, lanes, depth
        self.stored = set()

    def consts(self):
        r = self.rand
        return [r.choice(CORNERS32 + [r.randint(-(1 << 31), (1 << 31) - 1), 3, 255])
                for _ in range(4)]

    def luts(self):
        r = self.rand
        return [[r.choice(CORNERS16 + [r.randint(-32768, 32767)] * 3)
                 for _ in range(LUT_ENTRIES)] for _ in range(2)]

    def vector(self):
        r = self.rand
        mode = r.random()
        if mode < 0.3:
            return [r.choice(CORNERS16) for _ in range(self.lanes)]
        if mode < 0.5:
            return [r.randint(-600, 9000) for _ in range(self.lanes)]   # lookup domain
        return [r.randint(-32768, 32767) for _ in range(self.lanes)]

    def operand(self):
        r = self.rand
        kind = r.random()
        if kind < 0.45:
            return r.randrange(N_REGS)
        if kind < 0.7:
            return r.choice([8, 9])
        if kind < 0.8:
            return r.randrange(10, 14)
        return r.randrange(16, 32)

    def instruction(self):
        r = self.rand
        op = r.choice(list(Op))
        fn = {Op.LOGIC: r.randrange(6), Op.INDEX: r.randrange(6), Op.LOOKUP: r.randrange(2)}
        s = r.choice([0, 0, 31, r.randrange(32), r.randrange(9)])
        ins = Instruction(op=op, fn=fn.get(op, 0), s=s,
                          d=0 if op == Op.OUT else r.randrange(N_REGS),
                          a=self.operand(), b=r.randrange(2) if op == Op.INDEX else self.operand(),
                          c=self.operand())
        return encode(ins)

    def illegal(self):
        r = self.rand
        while True:
            word = r.choice([0, r.randrange(9, 16) << 28, r.getrandbits(32),
                             (5 << 28) | (r.choice([6, 7]) << 25) | (16 << 10),
                             (1 << 28) | (r.choice([14, 15]) << 5)])
            if not is_legal(word):
                return word

    def command(self, illegal_rate):
        """(kind, word, move, index, lane_shift, lane_bits, set) (``simd_model``): the older
        single-register LOAD / STORE / CLEAR become MOVEs on set 0 (``simd_model.legacy``)."""
        return legacy(self._command(illegal_rate), self.depth)

    def _command(self, illegal_rate):
        r = self.rand
        x = r.random()
        row = r.randrange(self.depth)
        if x < 0.06:
            self.stored.add(row)
            return (STORE, encode(Instruction(op=Op.ADD, d=r.randrange(8))), row, 0, 0, 0)
        if x < 0.11 and self.stored:
            row = r.choice(sorted(self.stored))
            return (LOAD, encode(Instruction(op=Op.ADD, d=r.randrange(8))), row, 0, 0, 0)
        if x < 0.12:
            return (CLEAR, 0, 0, 0, 0, 0)
        if x < 0.12 + illegal_rate:
            return (Command.EXEC, self.illegal(), 0, 0, 0, 0)
        shift_max = self.lanes.bit_length() - 1
        return (Command.EXEC, self.instruction(), 0, r.randrange(1 << 16),
                r.randrange(shift_max + 1), r.randrange(shift_max + 1))


def interlocked(first, second):
    """Cycles command ``second`` waits behind ``first``: :func:`merit.perf.interlocked` of two
    legal instructions; behind a legal ``LOOKUP`` (``perf.LOOKUP_E1_CYCLES`` cycles in the first
    execute stage) any other command waits all but one of them."""
    if first[0] != Command.EXEC or not is_legal(first[1]):
        return 0
    if second[0] != Command.EXEC or not is_legal(second[1]):
        return (perf.LOOKUP_E1_CYCLES - 1) * int(decode(first[1]).op == Op.LOOKUP)
    return perf.interlocked(decode(first[1]), decode(second[1]))


class Source:
    """A valid/ready source: offers the head of ``items`` (with random gaps) until its transfer."""

    def __init__(self, dut, name, pause):
        self.dut, self.name, self.pause = dut, name, pause
        self.items = deque()
        self.offered = None

    def drive(self, pack):
        if self.offered is None and self.items and not next(self.pause):
            self.offered = self.items.popleft()
        getattr(self.dut, f"{self.name}__valid").value = self.offered is not None
        if self.offered is not None:
            getattr(self.dut, f"{self.name}__payload").value = pack(self.offered)

    def fired(self):
        return (self.offered is not None
                and int(getattr(self.dut, f"{self.name}__ready").value) == 1)


class TB:
    def __init__(self, dut, cfg, *, pause_prob):
        self.dut, self.cfg = dut, cfg
        self.lanes, self.depth = cfg["lanes"], cfg["depth"]
        self.rand = rng()
        self.stim = Stimulus(self.rand, self.lanes, self.depth)
        self.consts, self.luts = self.stim.consts(), self.stim.luts()
        self.model = SimdModel(self.lanes, self.consts, self.luts)
        layout = cmd_layout(self.lanes, self.depth)
        self.offsets = {name: layout[name].offset for name in
                        ("kind", "set", "word", "move", "index", "lane_shift", "lane_bits")}
        self.move_offsets = [layout["move"].shape[name].offset for name in
                             ("save", "save_row", "clear", "load", "load_row", "regs")]
        self.cmd = Source(dut, "cmd", pause_generator(self.rand, pause_prob))
        self.rp = [Source(dut, f"rp{k}", pause_generator(self.rand, pause_prob))
                   for k in (0, 1)]
        self.out_pause = pause_generator(self.rand, pause_prob)
        self.expected = deque()
        self.count = Counter()

    def pack_cmd(self, cmd):
        kind, word, mv, index, lane_shift, lane_bits, set_ = cmd
        o = self.offsets
        move = sum(v << off for v, off in zip(mv or (), self.move_offsets, strict=False))
        return ((kind.value << o["kind"]) | (set_ << o["set"]) | (word << o["word"])
                | (move << o["move"])
                | (index << o["index"]) | (lane_shift << o["lane_shift"])
                | (lane_bits << o["lane_bits"]))

    def config_word(self):
        value = pack_lanes(self.consts, 32)
        for t, table in enumerate(self.luts):
            value |= pack_lanes(table, 16) << (128 + 16 * LUT_ENTRIES * t)
        return value

    def feed(self, commands):
        """Queue commands, and the RP vectors they consume, in order."""
        for cmd in commands:
            self.cmd.items.append(cmd)
            n0, n1 = self.model.needs(cmd)
            if n0:
                self.rp[0].items.append(self.stim.vector())
            if n1:
                self.rp[1].items.append(self.stim.vector())

    def cover(self, cmd):
        kind, word = cmd[0], cmd[1]
        if kind != Command.EXEC:
            for name, on in zip(("STORE", "LOAD", "CLEAR"), (cmd[2][0], cmd[2][3], cmd[2][2]),
                                strict=True):
                self.count[name] += on
        elif not is_legal(word):
            self.count["illegal"] += 1
        else:
            ins = decode(word)
            name = Op(ins.op).name + (f".{ins.fn}" if ins.op in (Op.LOGIC, Op.LOOKUP) else "")
            self.count[name] += 1
            funcov.instruction(word)
            if ins.s in (0, 31):
                self.count[f"s{ins.s}"] += 1

    async def run(self, max_cycles):
        dut = self.dut
        prev_dst = last = None
        accepted, taken = deque(), (deque(), deque())
        for cycle in range(max_cycles):
            self.cmd.drive(self.pack_cmd)
            for src in self.rp:
                src.drive(lambda v: pack_lanes(v, 16))
            dut.out__ready.value = not next(self.out_pause)
            await ReadOnly()
            where = f"cycle {cycle}"
            # the error flag rises when the illegal word issues, after its acceptance
            assert int(dut.error.value) <= self.model.error, f"{where}: error flag"
            if int(dut.out__valid.value) and int(dut.out__ready.value):
                got = unpack_lanes(dut.out__payload.value, self.lanes, 16)
                assert self.expected, f"{where}: unexpected out {got}"
                want = self.expected.popleft()
                assert got == want, f"{where}: out {got} != model {want}"
                self.count["outs"] += 1
            fired = self.cmd.fired()
            # a command is accepted into the decode register; it takes its RP elements when it
            # issues, a cycle or more later: the model applies the accepted commands in order,
            # each once the elements it reads have been taken
            for k in (0, 1):
                if self.rp[k].fired():
                    taken[k].append(self.rp[k].offered)
                    self.rp[k].offered = None
            if fired:
                cmd = self.cmd.offered
                accepted.append((cmd, self.model.needs(cmd)))
                self.cover(cmd)
                reads = decode(cmd[1], check=False).reads() if cmd[0] == Command.EXEC else ()
                if prev_dst is not None and prev_dst in reads:
                    self.count["raw_back_to_back"] += 1
                # the previous command's result read by this one (through a stall or not)
                if last is not None and last.d in reads and is_legal(cmd[1]):
                    ins = decode(cmd[1])
                    if perf.interlocked(last, ins):
                        self.count["interlocked"] += 1
                    elif reads[0] == last.d:
                        self.count["a_forwarded"] += 1
                    elif reads[1] == last.d and ins.op != Op.OUT:
                        self.count["swapped"] += 1
                prev_dst = last = None
                if cmd[0] == Command.EXEC and is_legal(cmd[1]) and cmd[1] >> 28 != Op.OUT:
                    prev_dst = (cmd[1] >> 17) & 7
                    last = decode(cmd[1])
                self.cmd.offered = None
            else:
                prev_dst = None
            while accepted and all(taken[k] or not accepted[0][1][k] for k in (0, 1)):
                cmd, need = accepted.popleft()
                out = self.model.apply(cmd, *[taken[k].popleft() if need[k] else None
                                              for k in (0, 1)])
                if out is not None:
                    self.expected.append(out)
            for k in (0, 1):    # every element taken belongs to the oldest command not applied
                assert not taken[k], f"{where}: rp{k} taken by no instruction"
            await RisingEdge(dut.clk)
            if not self.cmd.items and self.cmd.offered is None and not self.expected \
                    and not int(dut.busy.value):
                assert not accepted and int(dut.error.value) == self.model.error
                return cycle
        raise AssertionError(f"not done after {max_cycles} cycles: {len(self.expected)} outs "
                             f"pending, {len(self.cmd.items)} commands queued")


async def _start(dut, pause_prob):
    cfg = bench_config()
    tb = TB(dut, cfg, pause_prob=pause_prob)
    for name in ("cmd", "rp0", "rp1"):
        getattr(dut, f"{name}__valid").value = 0
    dut.out__ready.value = 0
    dut.config.value = tb.config_word()
    await setup(dut)
    dut._log.info("config %s consts %s", cfg, tb.consts)
    return tb, cfg


@cocotb.test()
async def random_program_no_backpressure(dut):
    """Back-to-back commands: every read-after-write goes through the forwarding path."""
    tb, cfg = await _start(dut, 0.0)
    commands = [tb.stim.command(0.0) for _ in range(cfg["commands"])]
    tb.feed(commands)
    # the stalls without backpressure: the mover's cycles of each MOVE (on set 0, the set the
    # instructions run on, so they wait for it; at most ``perf._mover_cycles`` and the drain
    # of E1 and E2, three), and the interlock (an instruction whose b / c is the previous
    # instruction's result)
    stalls = sum(perf._mover_cycles(c[2][5], c[2][0], c[2][3]) + 3
                 for c in commands if c[0] == Command.MOVE)
    interlocks = sum(interlocked(a, b) for a, b in zip(commands, commands[1:], strict=False))
    # a LOOKUP at the end drains its E1 cycles beyond the two the margin below allows
    last = commands[-1]
    tail = (max(0, perf.LOOKUP_E1_CYCLES - 2)
            if last[0] == Command.EXEC and is_legal(last[1]) and decode(last[1]).op == Op.LOOKUP
            else 0)
    cycles = await tb.run(20 * cfg["commands"])
    dut._log.info("coverage %s", dict(tb.count))
    for op in Op:
        assert any(k.startswith(op.name) for k in tb.count), f"no {op.name}: {tb.count}"
    assert tb.count["raw_back_to_back"] > 0 and tb.count["STORE"] and tb.count["LOAD"]
    assert tb.count["interlocked"] and tb.count["a_forwarded"] and tb.count["swapped"], tb.count
    assert cycles <= cfg["commands"] + stalls + interlocks + 4 + tail, \
        f"{cycles} cycles for {cfg['commands']} commands ({stalls} SRAM stalls, " \
        f"{interlocks} interlocks)"
    record_metric("commands_per_cycle",
                  round(cfg["commands"] / max(cycles - interlocks - stalls, 1), 4))
    record_metric("interlocks", interlocks)
    record_metric("coverage", funcov.export("tau"))


@cocotb.test()
async def random_program_backpressure(dut):
    """Random gaps on cmd / rp0 / rp1 and random ready on out, with illegal words mixed in."""
    tb, cfg = await _start(dut, 0.3)
    tb.feed(tb.stim.command(0.03) for _ in range(cfg["commands"]))
    await tb.run(40 * cfg["commands"])
    dut._log.info("coverage %s", dict(tb.count))
    assert tb.count["illegal"] > 0 and tb.model.error == 1
    for name in [f"LOGIC.{f}" for f in range(6)] + ["LOOKUP.0", "LOOKUP.1", "OUT", "s31"]:
        assert tb.count[name] > 0, f"no {name}: {tb.count}"
    record_metric("coverage", funcov.export("tau"))


# ---- pytest side: build the model and run the cocotb tests above ----


pytestmark = pytest.mark.sim

CASES = {
    # lanes, commands per test
    "n8": (8, 1500),
    "n32": (32, 900),
}


# the 32-lane smoke of CI is the Compute Pipeline's (verif/test_sequencer.py), which contains
# this array; the lone 32-lane array is one more 32-lane build, so it runs in `make regress`
@pytest.mark.parametrize("case", ["n8", pytest.param("n32", marks=pytest.mark.slow)])
def test_simd_random_programs(case):
    lanes, commands = CASES[case]
    top = SimdArray(lanes=lanes)
    metrics = run_bench(top, bench="test_simd", name=f"simd_{case}",
                        config={"lanes": lanes, "depth": top.depth, "commands": commands})
    # recorded at the end of the bench: proves that the cocotb tests ran at all; what remains
    # besides the commands is the pipeline's fill and drain (up to 4 cycles; 900 commands at 32
    # lanes)
    assert metrics["commands_per_cycle"] > 0.98, metrics


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lanes": 24}, ValueError, "lanes must be a power of two of at least 2, not 24"),
    ({"lanes": 8.0}, TypeError, "lanes must be an integer, not 8.0"),
    ({"lanes": 8, "sram_bytes": 100}, ValueError,
     r"sram_bytes must hold at least one group of 8 registers \(256 bytes for 8 lanes\), not 100"),
    ({"lanes": 8, "sram_bytes": "5K"}, TypeError, "sram_bytes must be an integer, not '5K'"),
])
def test_simd_parameters_are_validated(kwargs, error, match):
    with pytest.raises(error, match=match):
        SimdArray(**kwargs)


def test_simd_depth_is_5kb_of_32_bit_lane_registers():
    assert SimdArray(lanes=32).depth == 40
    assert SimdArray(lanes=8).depth == 160
