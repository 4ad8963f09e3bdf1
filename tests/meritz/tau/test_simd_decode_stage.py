"""The SIMD array's decode register in front of the issue stage (Amaranth simulator, 8 lanes).

A command is accepted into the decode register (``cmd.ready`` is a flip-flop: the skid register
behind it is empty) and issues a cycle or more later, when it takes its RP elements. Checked
against :func:`merit.isa.step` plus the bookkeeping of the registers and the partial-result SRAM:
mixed streams of instructions, ``LOAD`` / ``STORE`` / ``CLEAR`` and ``INDEX`` under random gaps
on the command and RP streams and random ``out.ready``; the partial store's stall (a ``LOAD``
right behind a ``STORE``) and what follows it; the commands still in the pipeline when the
stream ends; and that ``cmd.ready`` does not follow the issue stage's inputs within a cycle.
"""

import numpy as np
import pytest
from simd_stream import LANES, run_stream

from merit.isa import LUT_ENTRIES, assemble, decode
from meritz.tau.cp.simd import Command, sram_depth
from simd_model import CLEAR, LOAD, STORE


def _exec(line, luts):
    return (Command.EXEC, assemble(f"loop:\n{line}", luts=luts).words[0], 0, 0, 0, 0)


def _word_d(d):
    return d << 17          # field d of an instruction word (LOAD / STORE name the register)


def _tables(rng):
    return [[int(v) for v in rng.integers(-32768, 32768, LUT_ENTRIES)] for _ in range(2)]


def test_the_partial_store_stall_and_the_commands_around_it():
    """A LOAD right behind a STORE waits one cycle (single-port SRAM), and nothing else does:
    the register a STORE saves is the result of the instruction right before it (forwarded), a
    LOAD's register is read right behind it, CLEAR empties every register."""
    luts = _tables(np.random.default_rng(7))
    ex = [_exec(line, luts) for line in (
        "add r1, 0, i0, k1 >> 3", "mac r2, r1, i0, i1 >> 2", "out r2, r1 >> 1")]
    cmds = [(CLEAR, 0, 0, 0, 0, 0), *ex,
            (STORE, _word_d(2), 5, 0, 0, 0),        # r2: the MAC's result, forwarded
            (LOAD, _word_d(3), 5, 0, 0, 0),         # behind a STORE: waits one cycle
            _exec("add r4, r3, r3, i0", luts),              # r3 loaded right before
            _exec("out r4, r3", luts),
            (STORE, _word_d(4), 9, 0, 0, 0),
            (CLEAR, 0, 0, 0, 0, 0),
            _exec("out r4, r2", luts),                      # 0 + 0 after CLEAR
            (LOAD, _word_d(6), 9, 0, 0, 0),
            (LOAD, _word_d(7), 5, 0, 0, 0),
            _exec("mac r6, r6, r7, r7 >> 4", luts),        # b, c = r7 (the LOAD right before)
            _exec("out r6, r7", luts)]
    got, want, accepted, outs, end = run_stream(cmds, luts)
    assert got == want and len(want) == 4
    # one cycle for the stall; the issue cycles are the commands plus it
    first_issue, last_issue = accepted[0] + 1, outs[-1] - 2
    # the MOVEs (the legacy LOAD / STORE / CLEAR on set 0) make the instructions on that set
    # behind them wait for the mover: at least one cycle a command and the stall
    assert last_issue - first_issue + 1 >= len(cmds) + 1
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
    got, want, accepted, outs, _ = run_stream(cmds, luts, seed=seed)
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
            cmds.append((STORE, _word_d(int(rng.integers(8))), row, 0, 0, 0))
            stored.append(row)
            continue
        if pick < 0.16 and stored:
            row = int(rng.choice(stored))
            cmds.append((LOAD, _word_d(int(rng.integers(4))), row, 0, 0, 0))
            continue
        if pick < 0.18:
            cmds.append((CLEAR, 0, 0, 0, 0, 0))
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
    got, want, *_ = run_stream(cmds, luts, seed=seed, gap=gap, out_gap=out_gap, probe_ready=True)
    assert len(want) > 5
    assert got == want
