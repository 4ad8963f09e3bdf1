"""The MAC multiplier's operands, ``sat16(b)`` and ``sat16(c)``, over their hazards (Amaranth
simulator, 8 lanes).

Every source of ``b`` / ``c`` (the register file, E2's result forwarded, a LOAD's SRAM row, RP,
constants, zero behind a CLEAR) at and beyond int16's limits, where ``sat16`` decides, checked
against the golden model (``simd_model``, :func:`merit.isa.step`): back-to-back MACs into one
accumulator, a MAC whose ``b`` / ``c`` is a result two instructions back (forwarded from E2) or
right behind (the interlock), a MAC behind a LOAD of the register it reads and behind a CLEAR,
MACs around LOOKUP (which shares the multiplier), a stream ending with a MAC, back-pressure on
``out`` and gaps on the command and RP streams; the cycles are the commands plus
:func:`merit.perf.interlocked`'s waits. Written for a cut of the multiplier's operand path (its
operands registered at issue); it must hold for any such cut.
"""

import numpy as np
import pytest
from simd_stream import run_stream

from merit.isa import LUT_ENTRIES, assemble, decode
from merit.perf import interlocked
from meritz.tau.cp.simd import Command
from simd_model import CLEAR, LOAD, STORE


def _tables(rng):
    return [[int(v) for v in rng.integers(-32768, 32768, LUT_ENTRIES)] for _ in range(2)]


def _exec(line, luts):
    return (Command.EXEC, assemble(f"loop:\n{line}", luts=luts).words[0], 0, 0, 0, 0)


def _word_d(d):
    return d << 17          # field d: the register a LOAD / STORE names


# k1 = 2**20, k3 = -2**31 (simd_stream.CONSTS): sat16 clamps them; r1 / r2 hold values at and
# beyond int16's edges, written right before the MACs that read them (forwarded from E2); RP
# vectors hold -32768 and 32767 in lanes 0 and 1 (simd_stream.random_vectors)
LINES = [
    "add r1, 0, k1, k0",                # 2**20 - 7: saturates to 32767
    "add r2, 0, k3, 0",                 # -2**31: saturates to -32768
    "add r0, 0, 0, 0",
    "mac r0, r0, r1, r2",               # b = r1 two back (E2's result forwarded), c = r2 (waits)
    "mac r0, r0, r2, r2 >> 1",          # -32768 * -32768
    "mac r0, r0, i0, i1",
    "mac r0, r0, i0, i0 >> 3",
    "mac r0, r0, r1, i1",
    "add r3, 0, i0, 1",                 # lane 1: 32767 + 1, one past int16
    "add r4, 0, i1, -1",                # lane 0: -32768 - 1
    "mac r0, r0, r3, r4 >> 2",          # b two back, c right behind (waits)
    "mac r5, 0, r0, r0 >> 30",          # b, c = the chain's accumulator (waits)
    "out r0, r5 >> 16",
    "lut r6, r5, i0, i1, t0 >> 2",      # the multiplier weighs the odd entry
    "mac r6, r6, r6, i0 >> 1",          # b = LOOKUP's result right behind (waits)
    "mac r7, r6, i1, i1",
    "lut r7, r7, r7, k2, t1 >> 5",
    "out r7, r6 >> 3",
]


def _cycles(cmds, accepted, outs):
    first_issue, last_issue = accepted[0] + 1, outs[-1] - 2
    return last_issue - first_issue + 1


@pytest.mark.parametrize("seed", [51, 52])
def test_mac_operands_at_int16_edges_forwarded_and_interlocked(seed):
    rng = np.random.default_rng(seed)
    luts = _tables(rng)
    cmds = [_exec(line, luts) for line in LINES]
    got, want, accepted, outs, _ = run_stream(cmds, luts, seed=seed)
    assert got == want and len(want) == 2
    ins = [decode(c[1]) for c in cmds]
    waits = sum(interlocked(x, y) for x, y in zip(ins, ins[1:], strict=False))
    assert waits >= 4
    assert _cycles(cmds, accepted, outs) == len(cmds) + waits


def test_mac_after_load_and_clear_and_at_the_stream_end():
    """A MAC whose b / c is a register a LOAD writes right before it (the SRAM row forwarded
    into the operand registers), one behind a CLEAR (zero operands), and a stream that ends
    with a MAC whose result a STORE saves and a LOAD brings back."""
    luts = _tables(np.random.default_rng(9))
    cmds = [(CLEAR, 0, 0, 0, 0, 0),
            _exec("add r1, 0, k1, i0", luts),             # beyond int16
            _exec("add r2, 0, k3, i1 >> 1", luts),
            (STORE, _word_d(1), 3, 0, 0, 0),
            (STORE, _word_d(2), 4, 0, 0, 0),
            (CLEAR, 0, 0, 0, 0, 0),
            _exec("mac r0, 0, r1, r2", luts),             # zeros after CLEAR
            _exec("out r0, 0", luts),
            (LOAD, _word_d(5), 3, 0, 0, 0),
            (LOAD, _word_d(6), 4, 0, 0, 0),
            _exec("mac r0, r0, r5, r6", luts),            # b: two back, c: the LOAD before
            _exec("mac r0, r0, r6, r6 >> 1", luts),
            _exec("out r0, r5 >> 8", luts),
            _exec("mac r7, r0, i0, r0", luts),            # c = r0 two back
            (STORE, _word_d(7), 8, 0, 0, 0),      # the last MAC's result
            (LOAD, _word_d(4), 8, 0, 0, 0),       # behind a STORE: waits one cycle
            _exec("mac r3, 0, r4, r4", luts),             # the stream's last instruction
            _exec("out r3, r4", luts)]
    got, want, accepted, outs, end = run_stream(cmds, luts, seed=9)
    assert got == want and len(want) == 3
    # one wait: the LOAD behind a STORE (the LOAD's register read right behind it does not)
    # MOVEs (the legacy commands on set 0) add the mover's cycles
    assert _cycles(cmds, accepted, outs) >= len(cmds) + 1
    assert end == outs[-1] + 1


@pytest.mark.parametrize("seed", [61, 62, 63])
def test_random_mac_streams_with_backpressure(seed):
    """Random MAC-heavy streams (one accumulator, operands from the last results, RP and
    constants, LOOKUPs between them) with gaps on every input and random ``out.ready``."""
    rng = np.random.default_rng(seed)
    luts = _tables(rng)
    srcs = ["r0", "r1", "r2", "r3", "i0", "i1", "k1", "k3", "7", "-8"]
    lines = ["add r1, 0, k1, i0", "add r2, 0, k3, i1", "add r3, 0, i0, i1 >> 1"]
    for _ in range(120):
        roll = rng.random()
        b, c = rng.choice(srcs, 2)
        s = int(rng.integers(0, 32))
        if roll < 0.6:
            lines.append(f"mac r0, r0, {b}, {c} >> {s}")
        elif roll < 0.75:
            d = int(rng.integers(1, 4))
            lines.append(f"mac r{d}, r0, {b}, {c} >> {s % 4}")
        elif roll < 0.85:
            lines.append(f"lut r{int(rng.integers(1, 4))}, r0, {b}, {c}, t{s % 2} >> {s % 8}")
        else:
            lines.append(f"out r0, {b} >> {s % 17}")
    lines.append("out r0, r1")
    cmds = [_exec(line, luts) for line in lines]
    got, want, *_ = run_stream(cmds, luts, seed=seed, gap=0.2, out_gap=0.3)
    assert got == want and len(want) >= 10
