"""The SIMD array's decode register in front of the issue stage (Amaranth simulator, 8 lanes).

A command is accepted into the decode register (``cmd.ready`` is a flip-flop: the skid register
behind it is empty) and issues a cycle or more later, when it takes its RP elements. Checked
against :func:`merit.isa.step` plus the bookkeeping of the registers and the partial-result SRAM:
mixed streams of instructions, ``LOAD`` / ``STORE`` / ``CLEAR`` and ``INDEX`` under random gaps
on the command and RP streams and random ``out.ready``; the partial store's stall (a ``LOAD``
right behind a ``STORE``) and what follows it; the commands still in the pipeline when the
stream ends; and that ``cmd.ready`` does not follow the issue stage's inputs within a cycle.
"""

from collections import deque

import numpy as np
import pytest
from amaranth.sim import Simulator

from merit.isa import LUT_ENTRIES, assemble, decode
from meritz.tau.cp.simd import Command, SimdArray, sram_depth
from simd_model import SimdModel

LANES = 8
CONSTS = (-7, 1 << 20, 300, -(1 << 31))


def _exec(line, luts):
    return (Command.EXEC, assemble(f"loop:\n{line}", luts=luts).words[0], 0, 0, 0, 0)


def _word_d(d):
    return d << 17          # field d of an instruction word (LOAD / STORE name the register)


def _stream(commands, luts, *, seed=0, gap=0.0, out_gap=0.0, probe_ready=False):
    """Run ``commands``; returns (outs, golden outs, the cycles at which a command was accepted,
    the cycles an out vector left, the cycle busy fell)."""
    rng = np.random.default_rng(seed)
    golden = SimdModel(LANES, CONSTS, luts)
    rp = ([], [])
    for cmd in commands:
        for k, need in enumerate(golden.needs(cmd)):
            if need:
                v = rng.integers(-32768, 32768, LANES)
                v[:2] = (-32768, 32767)
                rp[k].append([int(x) for x in v])
    dut = SimdArray(lanes=LANES)
    got, want, accepted, outs, end = [], [], [], [], []

    async def bench(ctx):
        ctx.set(dut.config.consts, list(CONSTS))
        ctx.set(dut.config.luts, luts)
        pending = deque(commands)
        queues = (deque(rp[0]), deque(rp[1]))
        in_flight, taken = deque(), (deque(), deque())
        for cycle in range(40 * len(commands) + 40):
            offer = bool(pending) and rng.random() >= gap
            ctx.set(dut.cmd.valid, offer)
            if offer:
                kind, word, row, index, lane_shift, lane_bits = pending[0]
                p = dut.cmd.payload
                ctx.set(p.kind, kind)
                ctx.set(p.word.as_value(), word)
                ctx.set(p.row, row)
                ctx.set(p.index, index)
                ctx.set(p.lane_shift, lane_shift)
                ctx.set(p.lane_bits, lane_bits)
            offered = []
            for k in (0, 1):
                on = bool(queues[k]) and rng.random() >= gap
                offered.append(on)
                port = getattr(dut, f"rp{k}")
                ctx.set(port.valid, on)
                if on:
                    ctx.set(port.payload, queues[k][0])
            ctx.set(dut.out.ready, int(rng.random() >= out_gap))
            await ctx.delay(1e-9)
            if probe_ready:     # cmd.ready is a flip-flop: the other inputs do not move it
                ready = ctx.get(dut.cmd.ready)
                for k in (0, 1):
                    ctx.set(getattr(dut, f"rp{k}").valid, not offered[k])
                ctx.set(dut.out.ready, 1 - ctx.get(dut.out.ready))
                await ctx.delay(1e-9)
                assert ctx.get(dut.cmd.ready) == ready, f"cycle {cycle}"
                for k in (0, 1):
                    ctx.set(getattr(dut, f"rp{k}").valid, offered[k])
                ctx.set(dut.out.ready, 1 - ctx.get(dut.out.ready))
                await ctx.delay(1e-9)
            if ctx.get(dut.out.valid) and ctx.get(dut.out.ready):
                got.append([int(x) for x in ctx.get(dut.out.payload)])
                outs.append(cycle)
            if offer and ctx.get(dut.cmd.ready):
                cmd = pending.popleft()
                in_flight.append((cmd, golden.needs(cmd)))
                accepted.append(cycle)
            for k in (0, 1):
                if ctx.get(getattr(dut, f"rp{k}").ready):
                    assert offered[k], f"cycle {cycle}: rp{k} taken while not offered"
                    taken[k].append(queues[k].popleft())
            while in_flight and all(taken[k] or not in_flight[0][1][k] for k in (0, 1)):
                cmd, need = in_flight.popleft()
                out = golden.apply(cmd, *[np.array(taken[k].popleft()) if need[k] else None
                                          for k in (0, 1)])
                if out is not None:
                    want.append(out)
            assert not taken[0] and not taken[1], f"cycle {cycle}: an RP element taken early"
            busy = ctx.get(dut.busy)
            await ctx.tick()
            if not pending and not in_flight and not busy:
                end.append(cycle)
                break
        assert not pending and not in_flight, "the stream did not drain"
        assert not ctx.get(dut.error)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got, want, accepted, outs, end[0]


def _tables(rng):
    return [[int(v) for v in rng.integers(-32768, 32768, LUT_ENTRIES)] for _ in range(2)]


def test_the_partial_store_stall_and_the_commands_around_it():
    """A LOAD right behind a STORE waits one cycle (single-port SRAM), and nothing else does:
    the register a STORE saves is the result of the instruction right before it (forwarded), a
    LOAD's register is read right behind it, CLEAR empties every register."""
    luts = _tables(np.random.default_rng(7))
    ex = [_exec(line, luts) for line in (
        "add r1, 0, i0, k1 >> 3", "mac r2, r1, i0, i1 >> 2", "out r2, r1 >> 1")]
    cmds = [(Command.CLEAR, 0, 0, 0, 0, 0), *ex,
            (Command.STORE, _word_d(2), 5, 0, 0, 0),        # r2: the MAC's result, forwarded
            (Command.LOAD, _word_d(3), 5, 0, 0, 0),         # behind a STORE: waits one cycle
            _exec("add r4, r3, r3, i0", luts),              # r3 loaded right before
            _exec("out r4, r3", luts),
            (Command.STORE, _word_d(4), 9, 0, 0, 0),
            (Command.CLEAR, 0, 0, 0, 0, 0),
            _exec("out r4, r2", luts),                      # 0 + 0 after CLEAR
            (Command.LOAD, _word_d(6), 9, 0, 0, 0),
            (Command.LOAD, _word_d(7), 5, 0, 0, 0),
            _exec("mac r6, r6, r7, r7 >> 4", luts),        # b, c = r7 (the LOAD right before)
            _exec("out r6, r7", luts)]
    got, want, accepted, outs, end = _stream(cmds, luts)
    assert got == want and len(want) == 4
    # one cycle for the stall; the issue cycles are the commands plus it
    first_issue, last_issue = accepted[0] + 1, outs[-1] - 2
    assert last_issue - first_issue + 1 == len(cmds) + 1
    assert end == outs[-1] + 1          # busy until the last out vector has left


@pytest.mark.parametrize("seed", [41, 42, 43])
def test_back_to_back_dependent_lookups_and_index(seed):
    """Chains of LOOKUPs, each reading the one before, and INDEX (ACC and PAR) mixed with
    dependent instructions: bit-exact, and with no gaps one command issues per cycle plus the
    waits of :func:`merit.perf.interlocked` (so the skid register adds no bubble)."""
    from merit.perf import interlocked

    rng = np.random.default_rng(seed)
    luts = _tables(rng)
    lines = ["add r1, 0, i0, k2"]
    for k in range(6):
        lines += [f"lut r{2 + k % 3}, r1, r{1 + k % 3}, i1, t{k % 2} >> {k * 3}",
                  f"lut r1, r{2 + k % 3}, r{2 + k % 3}, k0, t{(k + 1) % 2} >> 1",
                  f"out r1, r{2 + k % 3} >> {k}"]
    cmds = [_exec(line, luts) for line in lines]
    for j, par in ((2, 0), (0, 1)):
        word = assemble(f"loop:\nindex r5, r6, {'p' if par else 'a'}{j}", luts=luts).words[0]
        cmds += [(Command.EXEC, word, 0, 1000 + 77 * j, 1, 2),
                 _exec("mac r6, r5, r5, i0 >> 1", luts), _exec("out r6, r5", luts)]
    got, want, accepted, outs, _ = _stream(cmds, luts, seed=seed)
    assert got == want
    ins = [decode(c[1]) for c in cmds]
    waits = sum(interlocked(x, y) for x, y in zip(ins, ins[1:], strict=False))
    assert waits >= 10
    assert (outs[-1] - 2) - (accepted[0] + 1) + 1 == len(cmds) + waits


def _random_commands(rng, luts, count, depth):
    ops = ["add", "sub", "l1", "mac", "max", "min", "sel", "and", "or", "xor", "lut"] + ["out"] * 3
    regs = [f"r{k}" for k in range(4)]
    srcs = regs + ["i0", "i1", "k0", "k3", "3", "-5"]
    cmds, stored = [], []
    for _ in range(count):
        pick = rng.random()
        if pick < 0.08:
            row = int(rng.integers(depth))
            cmds.append((Command.STORE, _word_d(int(rng.integers(8))), row, 0, 0, 0))
            stored.append(row)
            continue
        if pick < 0.16 and stored:
            row = int(rng.choice(stored))
            cmds.append((Command.LOAD, _word_d(int(rng.integers(4))), row, 0, 0, 0))
            continue
        if pick < 0.18:
            cmds.append((Command.CLEAR, 0, 0, 0, 0, 0))
            continue
        if pick < 0.22:
            word = assemble(f"loop:\nindex {rng.choice(regs)}, {rng.choice(srcs)}, "
                            f"{rng.choice(['a', 'p'])}"
                            f"{rng.integers(6)}", luts=luts).words[0]
            cmds.append((Command.EXEC, word, 0, int(rng.integers(1 << 16)),
                         int(rng.integers(4)), int(rng.integers(4))))
            continue
        op = rng.choice(ops)
        d, a, b, c = (rng.choice(regs), rng.choice(srcs), rng.choice(srcs), rng.choice(srcs))
        s = int(rng.choice([0, 1, 3, 16, 31]))
        line = {"out": f"out {a}, {b} >> {s}",
                "lut": f"lut {d}, {a}, {b}, {c}, t{rng.integers(2)} >> {s}"}.get(
            op, f"{op} {d}, {a}, {b} >> {s}" if op in ("max", "min", "and", "or", "xor")
            else f"{op} {d}, {a}, {b}, {c} >> {s}")
        cmds.append(_exec(line, luts))
    return cmds


@pytest.mark.parametrize("seed, gap, out_gap", [(51, 0.0, 0.0), (52, 0.3, 0.0),
                                                (53, 0.0, 0.5), (54, 0.4, 0.4)])
def test_random_streams_with_gaps_and_backpressure(seed, gap, out_gap):
    """Instructions, LOAD / STORE / CLEAR and INDEX in random order with gaps on cmd / rp0 /
    rp1 and on out.ready: bit-exact, every RP element taken by the instruction that reads it
    (in order), and ``cmd.ready`` never follows rp*.valid / out.ready within a cycle."""
    rng = np.random.default_rng(seed)
    luts = _tables(rng)
    depth = sram_depth(LANES, 5120)
    cmds = _random_commands(rng, luts, 120, depth)
    got, want, *_ = _stream(cmds, luts, seed=seed, gap=gap, out_gap=out_gap, probe_ready=True)
    assert len(want) > 5
    assert got == want
