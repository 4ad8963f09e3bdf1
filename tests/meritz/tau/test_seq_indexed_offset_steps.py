"""The sequencer's indexed register ``rN+x`` over the steps of whole job streams (Amaranth
simulator).

The register offset ``x = sum_j a_j * xstride_j`` is kept per accumulation index, stepped by
``xstride_j`` as ``a_j`` steps and loaded with the origin's term when ``a_j`` goes back to its
origin (an inner index wrapping, the next lane group, the next job). Every EXEC command of
several jobs in a row (accumulation tiles that start inside the space, two and three lane groups,
inner indices wrapping, strides up to 7) must be the word :meth:`merit.isa.Instruction.indexed`
gives at :meth:`merit.isa.Program.xoffset` of its step, under random ``cmd`` back-pressure, with
no error; an offset past r7 sets ``error``.
"""

import itertools
import random

import pytest
from amaranth.sim import Simulator

from merit.isa import assemble, decode, encode, range_select
from meritz.tau.cp.sequencer import (
    DIMS,
    Sequencer,
    job_layout,
    sequencer_config,
    sequencer_config_layout,
)
from meritz.tau.cp.simd import Command

DEPTH = 32


def _program(levels, xstride, xspan):
    top = 7 - (xspan - 1)           # the highest base register rN+x may use
    return assemble(
        f".levels {levels}\n.xstride {' '.join(map(str, xstride))}\n.xspan {xspan}\n"
        f"pre1:\n    add r{top}+x, 0, 0, 0\n"
        f"loop:\n    mac r0+x, r0+x, i0, i1\n    add r7, r7, i0, 0\n"
        f"    mac r{top}+x, r{top}+x, r0, i1 >> 1\n    out r0+x, r{top}\n"
        f"post1:\n    max r0+x, r0+x, r{top}\n")


def _run(cfg, jobs, seed, max_cycles=6000):
    """Every command of ``jobs`` (sent back to back) with ``cmd.ready`` random; returns the
    commands (kind, word) and the error flag."""
    dut = Sequencer(lanes=8, program_depth=DEPTH)
    rng = random.Random(seed)
    issued, result = [], {}

    async def bench(ctx):
        ctx.set(dut.config, sequencer_config_layout(DEPTH).const(cfg))
        pending = list(jobs)
        idle_run = 0
        for _ in range(max_cycles):
            if pending:
                ctx.set(dut.job.payload, job_layout().const(pending[0]))
            ctx.set(dut.job.valid, bool(pending))
            ready = rng.random() < 0.6
            ctx.set(dut.cmd.ready, ready)
            await ctx.delay(1e-9)
            if ctx.get(dut.cmd.valid) and ready:
                p = ctx.get(dut.cmd.payload)
                issued.append((Command(p.kind), p.word.as_value().value))
            if pending and ctx.get(dut.job.ready):
                pending.pop(0)
            idle_run = idle_run + 1 if not pending and ctx.get(dut.idle) else 0
            if idle_run > 3:
                break
            await ctx.tick()
        result["error"] = ctx.get(dut.error)
        result["drained"] = not pending and idle_run > 3

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert result["drained"]
    return issued, result["error"]


@pytest.mark.parametrize("a_shape, xstride, groups, seed", [
    ((3, 2, 2), (0, 2, 1), 2, 1),       # the outer index steps no offset
    ((3, 2, 2), (2, 1, 1), 3, 2),
    ((2, 4), (4, 1), 2, 3),             # offsets up to 7: rN+x reaches r7
    ((4, 2), (1, 3), 2, 4),
    ((2, 2), (7, 0), 2, 5),             # a stride of 7 (3 bits)
    ((3, 3), (2, 3), 1, 6),             # x = 10 at the last step: outside r0..r7, below
])
def test_indexed_register_offsets_over_steps_groups_and_jobs(a_shape, xstride, groups, seed):
    levels = len(a_shape)
    xmax = sum((n - 1) * s for n, s in zip(a_shape, xstride, strict=True))
    if xmax > 7:        # the last case: a program for a smaller space, past r7 in this one
        _past_r7(a_shape, xstride, groups, seed)
        return
    program = _program(levels, xstride, xmax + 1)
    prog = program.with_levels(levels)
    cfg = sequencer_config(program, a_shape, group_shape=[groups], lane_bits=[3])
    cfg["program"] += [0] * (DEPTH - len(cfg["program"]))
    # accumulation tiles of one element of the outermost index (origins 0, 1, ...: the tiles
    # after the first start inside the space), then the whole space again as one tile
    tiles = [(o, 1) for o in range(a_shape[0])] + [(0, a_shape[0])]
    jobs = [{"a_origin": [o] + [0] * (DIMS - 1),
             "a_extent": [e] + list(a_shape[1:]) + [1] * (DIMS - levels),
             "p_origin": [0] * DIMS, "p_groups": [groups] + [1] * (DIMS - 1)}
            for o, e in tiles]
    want = []
    for o, e in tiles:
        for _ in range(groups):
            for index in itertools.product(range(o, o + e), *map(range, a_shape[1:])):
                kf, kl = range_select(index, a_shape)
                x = prog.xoffset(index)
                want += [encode(decode(prog.words[a]).indexed(x))
                         for a in range(prog.begs[kf], prog.ends[kl])]
    issued, error = _run(cfg, jobs, seed)
    got = [w for k, w in issued if k == Command.EXEC]
    assert got == want and not error
    assert len({w >> 17 & 7 for w in got}) >= 2     # more than one offset reached


def _past_r7(a_shape, xstride, groups, seed):
    program = _program(len(a_shape), (1,) + (0,) * (len(a_shape) - 1), 3)
    program = type(program)(program.words, program.begs, program.ends, program.consts,
                            program.luts, xstride=xstride, xspan=3)
    cfg = sequencer_config(program, a_shape, group_shape=[groups], lane_bits=[3])
    cfg["program"] += [0] * (DEPTH - len(cfg["program"]))
    job = {"a_origin": [0] * DIMS, "a_extent": list(a_shape) + [1] * (DIMS - len(a_shape)),
           "p_origin": [0] * DIMS, "p_groups": [groups] + [1] * (DIMS - 1)}
    _, error = _run(cfg, [job], seed)
    assert error == 1
