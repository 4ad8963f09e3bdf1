"""LOOKUP's interpolation in the SIMD array's first execute stage (Amaranth simulator, 8 lanes).

The second E1 cycle of a ``LOOKUP`` weighs its two table entries by multipliers
(``256 * y(u) = y0 * (256 - f) + y1 * f``, the odd entry's product from the MAC multiplier) and
registers both products; E2 adds them to ``256 * a`` and keeps bits 8 and up. Checked against
:class:`simd_model.SimdModel` (:func:`merit.isa.step`, whose interpolation is
``y0 + (((y1 - y0) * f) >> 8)``): the clamp's edges and every fraction class (``u`` below 0, at
0, 255, 256, 257, 8191, 8192, above; even and odd segments, the last one), table entries at
int16's limits next to each other, an accumulator ``a`` at the 32-bit wrap; and the stage's
hazards: LOOKUPs back to back through ``a``, ``b`` and ``c``, a MAC right behind a LOOKUP (the
multiplier they share), a LOOKUP's result saved by the STORE right behind it and loaded back,
the partial store's stall around them, ``out`` backpressure while LOOKUPs sit in E1 / E2, gaps
on the command and RP streams, and a stream that ends with a LOOKUP. Without gaps the cycles
are the commands plus :func:`merit.perf.interlocked`'s waits.
"""

import numpy as np
import pytest
from simd_stream import LANES, run_stream, stream_vectors

from merit.isa import LUT_ENTRIES, Op, assemble, decode
from merit.perf import LOOKUP_E1_CYCLES, interlocked
from meritz.tau.cp.simd import Command
from simd_model import CLEAR, LOAD, STORE

# values of (b - c) >> s around every edge of the clamp and of the segments (u = x clamped to
# [0, 8192]; segment i = u >> 8, fraction f = u & 255)
EDGES = [-40000, -257, -1, 0, 1, 127, 255, 256, 257, 511, 512, 767, 1023, 4095, 4096, 4351,
         7679, 7680, 7935, 7936, 7937, 8191, 8192, 8193, 8448, 30000, 65535, -65536]


def _exec(line, luts):
    return (Command.EXEC, assemble(f"loop:\n{line}", luts=luts).words[0], 0)


def _tables():
    """Table 0: int16's limits alternating (the widest steps, both signs); table 1: random."""
    rng = np.random.default_rng(3)
    t0 = [32767 if k % 2 else -32768 for k in range(LUT_ENTRIES)]
    t0[-1] = 32767
    t1 = [int(v) for v in rng.integers(-32768, 32768, LUT_ENTRIES)]
    return [t0, t1]


def _waits(cmds):
    ins = [decode(c[1]) for c in cmds]
    return sum(interlocked(x, y) for x, y in zip(ins, ins[1:], strict=False))


def _issue_cycles(accepted, outs):
    """Issue cycles from the first command to the last (an out): acceptance is a cycle ahead of
    issue, and an out vector leaves two cycles after its issue."""
    return (outs[-1] - 2) - (accepted[0] + 1) + 1


def _edge_vectors(s):
    """RP0 / RP1 vectors whose (i0 - i1) >> s run over EDGES (8 lanes a pair)."""
    rp0, rp1 = [], []
    for k in range(0, len(EDGES), LANES):
        xs = (EDGES[k:k + LANES] * LANES)[:LANES]
        b, c = [], []
        for x in xs:
            diff = max(-65535, min(65535, x << s)) if s else x
            hi = max(-32768, min(32767, diff))
            b.append(hi)
            c.append(hi - diff)
        rp0.append(b)
        rp1.append(c)
    return rp0, rp1


@pytest.mark.parametrize("s", [0, 1, 3])
def test_lookup_values_at_every_edge_of_clamp_and_segments(s):
    """Every fraction class and clamp edge, both tables, ``a`` = 0 (the value itself), ``a`` at
    the 32-bit wrap (k3 = -2**31 and its wrap back above, read as two halves), LOOKUPs back to
    back through ``a``: bit-exact, one command a cycle plus the interlocks."""
    luts = _tables()
    rp0, rp1 = _edge_vectors(s)
    cmds, e0, e1 = [], [], []
    for t in (0, 1):
        for v0, v1 in zip(rp0, rp1, strict=True):
            cmds += [_exec(f"lut r1, 0, i0, i1, t{t} >> {s}", luts),
                     _exec("out r1, 0", luts),                        # the int16 value
                     _exec(f"lut r2, k3, i0, i1, t{1 - t} >> {s}", luts),
                     _exec("out r2, 0 >> 16", luts),                  # -2**31 + y: upper half
                     _exec("out r2, k3", luts),                       # and y back
                     _exec(f"lut r2, r2, i0, i1, t{t} >> {s}", luts),  # a = the wrapped sum
                     _exec("out r2, 0 >> 16", luts),
                     _exec("out r2, k3 >> 1", luts)]
            e0 += [v0, v0, v0]
            e1 += [v1, v1, v1]
    got, want, accepted, outs, _ = run_stream(cmds, luts, rp=(e0, e1))
    assert len(want) == 5 * len(rp0) * 2
    assert got == want
    assert _issue_cycles(accepted, outs) == len(cmds) + _waits(cmds)


def _hazard_program(luts):
    lines = [
        "add r1, 0, i0, k2",
        "lut r2, r1, r1, i1, t0 >> 2",     # b = r1 (previous): waits; a = r1 forwarded
        "lut r2, r2, i0, i1, t1 >> 1",     # a = r2 (the lut before): forwarded into E2
        "lut r2, r2, r2, k0, t0 >> 3",     # b = r2: waits twice behind a lut
        "lut r3, i0, k1, r2, t1 >> 9",     # c = r2: waits twice
        "mac r4, r0, i0, i1 >> 2",         # right behind a lut: the shared multiplier
        "mac r3, r3, i1, i0 >> 1",         # a = r3 (the lut two back)
        "mac r4, r4, r3, r3",              # b, c = r3 (previous): waits
        "lut r5, r4, r4, i1, t0 >> 13",    # b = r4 (the MAC right before): waits
        "mac r5, r5, r5, i0 >> 4",         # behind a lut, a and b = r5: waits twice
        "lut r6, r5, i0, i1, t1",
        "out r6, r5 >> 1",                 # behind a lut, a = r6: waits once
        "out i0, r6 >> 2",                 # b of out = r6 (two back)
        "lut r7, 0, i1, i0, t0 >> 1",
        "out i1, r7",                      # behind a lut, b of out = r7: waits once
        "out r2, r4 >> 3",
    ]
    return [_exec(line, luts) for line in lines]


def _stored_program(luts):
    """A LOOKUP's result saved by the STORE right behind it (forwarded into the SRAM write),
    a LOAD behind the STORE (the partial store's stall), the loaded register read by a LOOKUP
    right behind, and a stream that ends with a LOOKUP whose result only a STORE saves."""
    return [(CLEAR, 0, 0),
            _exec("lut r1, k1, i0, i1, t1 >> 2", luts),
            (STORE, 1 << 17, 4),                 # r1, right behind its lut
            (LOAD, 3 << 17, 4),                  # behind a STORE: waits one cycle
            _exec("lut r4, r3, r3, i0, t0 >> 5", luts),  # b = r3 (loaded right before)
            _exec("out r4, r3 >> 8", luts),
            _exec("lut r5, r4, i1, i0, t1 >> 1", luts),
            (STORE, 5 << 17, 9),
            (LOAD, 6 << 17, 9),
            _exec("out r6, 0 >> 16", luts),
            _exec("out r6, k3", luts),
            _exec("lut r7, r6, i0, r6, t0 >> 4", luts),  # the stream ends with a lut
            (STORE, 7 << 17, 11),
            (LOAD, 0, 11),
            _exec("out r0, 0 >> 16", luts),
            _exec("out r0, k3", luts)]


@pytest.mark.parametrize("program", [_hazard_program, _stored_program])
def test_lookup_hazards_and_cycles(program):
    luts = _tables()
    cmds = program(luts)
    rng = np.random.default_rng(8)
    rp = stream_vectors(cmds, luts, rng)
    got, want, accepted, outs, _ = run_stream(cmds, luts, rp=rp)
    assert len(want) >= 4
    assert got == want
    ins = [decode(c[1]) if c[0] == Command.EXEC else None for c in cmds]
    waits = sum(interlocked(x, y) if x is not None and y is not None else
                (LOOKUP_E1_CYCLES - 1) * int(x is not None and x.op == Op.LOOKUP)
                for x, y in zip(ins, ins[1:], strict=False))
    stalls = sum(1 for x, y in zip(cmds, cmds[1:], strict=False)
                 if x[0] == STORE and y[0] == LOAD)
    # MOVEs (the legacy commands on set 0) add the mover's cycles
    assert _issue_cycles(accepted, outs) >= len(cmds) + waits + stalls


@pytest.mark.parametrize("seed, gap, out_gap", [(61, 0.0, 0.6), (62, 0.35, 0.0),
                                                (63, 0.3, 0.5)])
def test_lookups_under_backpressure_and_gaps(seed, gap, out_gap):
    """The programs above and the edge values, with random gaps on cmd / rp0 / rp1 and on
    out.ready (E2 and the LOOKUP's second E1 cycle held while out waits): bit-exact."""
    luts = _tables()
    cmds = _hazard_program(luts) + _stored_program(luts) + _hazard_program(luts)
    rp = stream_vectors(cmds, luts, np.random.default_rng(seed))
    e0, e1 = _edge_vectors(2)
    for v0, v1 in zip(e0, e1, strict=True):
        cmds += [_exec("lut r1, r1, i0, i1, t0 >> 2", luts), _exec("out r1, i1", luts)]
        rp[0].append(v0)
        rp[1].append(v1)
        rp[1].append(v1)
    got, want, *_ = run_stream(cmds, luts, rp=rp, seed=seed, gap=gap, out_gap=out_gap)
    assert len(want) > 10
    assert got == want
