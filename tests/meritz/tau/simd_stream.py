"""A stream of commands through the SIMD array (Amaranth simulator), checked against
:class:`simd_model.SimdModel`: the driver of the SIMD array's pipeline tests.

Commands are ``(kind, word, move, index, lane_shift, lane_bits, set)`` (``simd_model``); a
shorter tuple is padded with zeros, and the older benches' ``LOAD`` / ``STORE`` / ``CLEAR``
become MOVEs (:func:`simd_model.legacy`). RP vectors are consumed in order as the array takes
them; every element taken is matched to the command it belongs to, and the golden model's
output of each command is what the array must send on ``out``.
"""

from collections import deque

import numpy as np
from amaranth.sim import Simulator

from meritz.tau.cp.simd import SimdArray, sram_depth
from simd_model import SimdModel, legacy

LANES = 8
CONSTS = (-7, 1 << 20, 300, -(1 << 31))


def random_vectors(rng, count, lanes=LANES):
    """``count`` RP vectors of int16, each with int16's limits in its first two lanes."""
    out = []
    for _ in range(count):
        v = rng.integers(-32768, 32768, lanes)
        v[:2] = (-32768, 32767)
        out.append([int(x) for x in v])
    return out


def stream_vectors(commands, luts, rng):
    """The RP vectors ``commands`` take (two lists, RP0 and RP1, as many as the golden model says
    each command reads), drawn with ``random_vectors`` from ``rng``."""
    golden = SimdModel(LANES, CONSTS, luts)
    need = [golden.needs(_padded(c)) for c in commands]
    return tuple(random_vectors(rng, sum(n[k] for n in need)) for k in (0, 1))


def _padded(command):
    return legacy(command, sram_depth(LANES, 5120))


def run_stream(commands, luts, *, rp=None, seed=0, gap=0.0, out_gap=0.0, probe_ready=False):
    """Run ``commands`` with the RP vectors ``rp`` (two lists; drawn at random with ``seed``
    when None). ``gap`` / ``out_gap``: the probabilities of a cycle without a command or RP
    element offered / without ``out.ready``. ``probe_ready``: check every cycle that
    ``cmd.ready`` does not follow the RP and ``out`` handshakes (a flip-flop).

    Returns (outs, golden outs, the cycles a command was accepted, the cycles an out vector
    left, the cycle busy fell)."""
    commands = [_padded(c) for c in commands]
    rng = np.random.default_rng(seed)
    golden = SimdModel(LANES, CONSTS, luts)
    if rp is None:
        rp = stream_vectors(commands, luts, rng)
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
                kind, word, mv, index, lane_shift, lane_bits, set_ = pending[0]
                p = dut.cmd.payload
                ctx.set(p.kind, kind)
                ctx.set(p.set, set_)
                ctx.set(p.word.as_value(), word)
                if mv:
                    for name, v in zip(("save", "save_row", "clear", "load", "load_row",
                                        "regs"), mv, strict=True):
                        ctx.set(getattr(p.move, name), v)
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
