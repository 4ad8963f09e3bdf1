"""LOOKUP's three E1 cycles and out's saturation beside its shifter (Amaranth simulator, 8 lanes).

The first E1 cycle of a ``LOOKUP`` registers ``b - c`` shifted by ``s``'s two low bits and the
clamp's two cases, tested on ``b - c`` itself (negative; at or above ``8193 << s``, the sign of a
three-term sum); the second shifts by ``s``'s three high bits and registers the clamped index and
the one-hot table selections; the third reads the table. ``out`` tests int16's range on
``a + b`` before its shift, with a mask of bits ``15 + s`` and up. Both are checked bit-exact
against :class:`simd_model.SimdModel` (:func:`merit.isa.step`) with ``b``, ``c``, ``a + b`` built
over the whole 32-bit register range at every shift 0 .. 31, right at the edges where the
clamp or the saturation begins; with the stream's hazards (LOOKUPs back to back, a LOOKUP
feeding a MAC, a STORE and an ``out``, the partial store's stall, a stream ending with a LOOKUP)
under gaps and ``out`` backpressure; and the cycles, without gaps, are the commands plus
:func:`merit.perf.interlocked`'s waits.
"""

import numpy as np
import pytest
from simd_stream import LANES, run_stream, stream_vectors

from merit.isa import LUT_ENTRIES, Op, assemble, decode
from merit.perf import LOOKUP_E1_CYCLES, interlocked
from meritz.tau.cp.simd import Command
from simd_model import CLEAR, LOAD, STORE

WRAP = 1 << 32


def _exec(line, luts):
    return (Command.EXEC, assemble(f"loop:\n{line}", luts=luts).words[0], 0)


def _luts():
    rng = np.random.default_rng(17)
    return [[int(v) for v in rng.integers(-32768, 32768, LUT_ENTRIES)] for _ in range(2)]


def _split(value):
    """``(i0, i1)`` int16 with ``-65536 * i0 + i1 == value`` (mod 2**32): what :func:`_build`
    makes of them."""
    value = (value + (1 << 31)) % WRAP - (1 << 31)
    i0 = -((value + 32768) >> 16)
    i1 = value + 65536 * i0
    if i0 == 32768:                 # -65536 * 32768 is -65536 * -32768 modulo 2**32
        i0 = -32768
    assert -32768 <= i0 <= 32767 and -32768 <= i1 <= 32767, value
    return i0, i1


def _build(reg, luts):
    """Commands that set register ``reg`` of each lane to ``-65536 * i0 + i1`` (the lane's RP0
    and RP1 elements): ``i0 * sat16(k3)`` (-32768 * i0), doubled, plus ``i1``."""
    return [_exec(f"mac {reg}, 0, i0, k3", luts),
            _exec(f"add {reg}, {reg}, {reg}, 0", luts),
            _exec(f"add {reg}, {reg}, i1, 0", luts)]


def _clamp_diffs(s):
    """Values of b - c (33 bits) around the clamp's edges at shift ``s``: 0, 8192 << s and
    8193 << s, each +-1, where they fit; the extremes of b - c."""
    out = [0, 1, -1, WRAP - 1, -(WRAP - 1), 1 << 31, -(1 << 31)]
    for edge in (8192 << s, 8193 << s, (8193 << s) + (1 << s) - 1):
        for d in (-1, 0, 1):
            if abs(edge + d) < WRAP:
                out.append(edge + d)
    return out


def _lanes(values):
    """``values`` in vectors of LANES (the last one padded with its first value)."""
    return [(values[k:k + LANES] + values[:1] * LANES)[:LANES]
            for k in range(0, len(values), LANES)]


def _diff_operands(diff):
    """(b, c), 32-bit each, with b - c == ``diff`` (|diff| < 2**32)."""
    if diff >= 0:
        c = -(1 << 31)
        return diff + c, c
    b = -(1 << 31)
    return b, b - diff


def _clamp_stream(shifts, luts):
    cmds, rp0, rp1 = [], [], []
    for s in shifts:
        pairs = [_diff_operands(d) for d in _clamp_diffs(s)]
        for group in _lanes(pairs):
            bs = [b for b, _ in group]
            cs = [c for _, c in group]
            for reg, vals in (("r1", bs), ("r2", cs)):
                cmds += _build(reg, luts)
                pairs_ = [_split(v) for v in vals]
                rp0.append([p[0] for p in pairs_])
                rp1.append([p[1] for p in pairs_])
            t = s % 2
            cmds += [_exec(f"lut r3, 0, r1, r2, t{t} >> {s}", luts),   # b, c: the built ones
                     _exec(f"lut r4, r3, r1, r2, t{1 - t} >> {s}", luts),  # a: the lut before
                     _exec("out r3, 0", luts),
                     _exec("out r4, 0 >> 1", luts)]
    return cmds, (rp0, rp1)


@pytest.mark.parametrize("shifts", [range(0, 11), range(11, 22), range(22, 32)])
def test_lookup_clamp_over_the_register_range_at_every_shift(shifts):
    """b - c from -(2**32 - 1) to 2**32 - 1, right at 8192 << s and 8193 << s (where the clamp
    begins; above s = 18 no b - c reaches it): bit-exact, cycles = commands + interlocks."""
    luts = _luts()
    cmds, rp = _clamp_stream(shifts, luts)
    got, want, accepted, outs, _ = run_stream(cmds, luts, rp=rp)
    assert len(want) == 2 * sum(len(_lanes(_clamp_diffs(s))) for s in shifts)
    assert got == want
    ins = [decode(c[1]) for c in cmds]
    waits = sum(interlocked(x, y) for x, y in zip(ins, ins[1:], strict=False))
    # acceptance is a cycle ahead of issue; an out vector leaves two cycles after its issue
    assert (outs[-1] - 2) - (accepted[0] + 1) + 1 == len(cmds) + waits


def _sat_sums(s):
    """Values of a + b (33 bits) around sat16's edges after a shift by ``s``."""
    out = [WRAP - 2, -WRAP, 0, -1]
    for edge in (32767 << s, (32768 << s) - 1, -(32768 << s), -(32768 << s) - 1,
                 (32768 << s)):
        for d in (-1, 0, 1):
            if -WRAP <= edge + d <= WRAP - 2:
                out.append(edge + d)
    return out


def _sum_operands(total):
    """(a, b), 32-bit each, with a + b == ``total``."""
    a = max(-(1 << 31), min((1 << 31) - 1, total // 2))
    return a, total - a


@pytest.mark.parametrize("shifts", [range(0, 16), range(16, 32)])
def test_out_saturation_beside_the_shifter_at_every_shift(shifts):
    luts = _luts()
    cmds, rp0, rp1, count = [], [], [], 0
    for s in shifts:
        for group in _lanes([_sum_operands(t) for t in _sat_sums(s)]):
            for reg, vals in (("r5", [a for a, _ in group]), ("r6", [b for _, b in group])):
                cmds += _build(reg, luts)
                pairs = [_split(v) for v in vals]
                rp0.append([p[0] for p in pairs])
                rp1.append([p[1] for p in pairs])
            cmds += [_exec(f"out r5, r6 >> {s}", luts),
                     _exec("add r7, r6, 0, 0", luts),          # r7 = b, written in E2 ...
                     _exec(f"out r5, r7 >> {s}", luts)]         # ... and forwarded to out's b
            count += 2
    got, want, _, _, _ = run_stream(cmds, luts, rp=(rp0, rp1))
    assert len(want) == count
    assert got == want


def _random_stream(rng, count, luts):
    """LOOKUP-rich commands with the SRAM's (STORE right behind a LOOKUP, LOAD behind a
    STORE) and CLEAR, on few registers (many hazards)."""
    regs = [f"r{k}" for k in range(4)]
    srcs = regs + ["i0", "i1", "k0", "k1", "k3", "-3"]
    cmds, stored = [(CLEAR, 0, 0)], []
    for _ in range(count):
        x = rng.random()
        d, a, b, c = (str(rng.choice(regs)), str(rng.choice(srcs)), str(rng.choice(srcs)),
                      str(rng.choice(srcs)))
        s = int(rng.choice([0, 1, 2, 3, 7, 18, 19, 31]))
        if x < 0.4:
            cmds.append(_exec(f"lut {d}, {a}, {b}, {c}, t{int(rng.integers(2))} >> {s}", luts))
        elif x < 0.55:
            cmds.append(_exec(f"mac {d}, {a}, {b}, {c} >> {s}", luts))
        elif x < 0.7:
            cmds.append(_exec(f"out {a}, {b} >> {s}", luts))
        elif x < 0.8:
            row = int(rng.integers(8))
            cmds.append((STORE, int(rng.integers(4)) << 17, row))
            stored.append(row)
        elif x < 0.88 and stored:
            cmds.append((LOAD, int(rng.integers(4)) << 17, int(rng.choice(stored))))
        elif x < 0.9:
            cmds.append((CLEAR, 0, 0))
        else:
            cmds.append(_exec(f"sub {d}, {a}, {b}, {c} >> {s}", luts))
    cmds.append(_exec("lut r0, r1, r2, r3, t1 >> 2", luts))     # the stream ends with a lut
    cmds.append((STORE, 0, 7))
    cmds.append((LOAD, 1 << 17, 7))
    cmds.append(_exec("out r1, 0", luts))
    return cmds


def _waits(cmds):
    """Waits of a command stream: the interlocks between instructions, LOOKUP's E1 cycles in
    front of any command behind it, the partial store's turn-around (a LOAD behind a STORE)."""
    total = 0
    for x, y in zip(cmds, cmds[1:], strict=False):
        if x[0] == Command.EXEC and y[0] == Command.EXEC:
            total += interlocked(decode(x[1]), decode(y[1]))
        elif x[0] == Command.EXEC and decode(x[1]).op == Op.LOOKUP:
            total += LOOKUP_E1_CYCLES - 1
        elif x[0] == STORE and y[0] == LOAD:
            total += 1
    return total


@pytest.mark.parametrize("seed", [3, 4])
def test_random_lookup_streams_with_the_sram_cycles_and_backpressure(seed):
    luts = _luts()
    rng = np.random.default_rng(seed)
    cmds = _random_stream(rng, 70, luts)
    rp = stream_vectors(cmds, luts, rng)
    got, want, accepted, outs, _ = run_stream(cmds, luts, rp=rp)
    assert len(want) >= 8
    assert got == want
    # MOVEs (the legacy commands on set 0) add the mover's cycles to the interlocks
    assert (outs[-1] - 2) - (accepted[0] + 1) + 1 >= len(cmds) + _waits(cmds)
    got2, want2, _, _, _ = run_stream(cmds, luts, rp=rp, seed=seed, gap=0.3, out_gap=0.5)
    assert got2 == want2 == want
