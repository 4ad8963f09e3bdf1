"""The Compute Pipeline hides a lane group's restore and save behind its neighbour's steps
(Amaranth simulator, 8 lanes): the SIMD array's mover saves and restores one register set
while the other runs (``meritz.tau.cp.simd``, ``docs/decisions.md``, Compute Pipeline).

Jobs of several lane groups, with a middle accumulation tile (each group loads and saves its
registers), run in the cycles ``merit.perf`` gives the hidden form: one cycle a group for its
MOVE besides its steps, plus the job's own restore and save. The earlier form (``regs`` LOADs,
a turn-around cycle and ``regs`` STOREs a group, in the issue slots) would take ``2 regs + 1``
cycles a group more: the bound below fails by far if the overlap stopped working. A group
whose steps are shorter than the mover's time waits for it (``merit.perf._mover_cycles``).
"""

import pytest
from amaranth.sim import Simulator

from merit.isa import assemble
from merit.perf import _mover_cycles
from meritz.tau.cp import ComputePipeline
from meritz.tau.cp.sequencer import job_layout, sequencer_config

REGS = 4
PROGRAM = assemble(".levels 2\nloop:\n" + "".join(
    f"    add r{r}, r{r}, {r + 1}, 0\n" for r in range(REGS)))


def _run(groups, extent, tiles, a_shape):
    """Cycles from the first job taken to the Compute Pipeline's idle, and its error."""
    dut = ComputePipeline(lanes=8, program_depth=16)
    cfg = sequencer_config(PROGRAM, a_shape, group_shape=[groups], lane_bits=[3])
    cfg["program"] += [0] * (16 - len(cfg["program"]))
    jobs = [{"a_origin": [t * extent, 0] + [0] * 4, "a_extent": [extent, a_shape[1]] + [1] * 4,
             "p_origin": [0] * 6, "p_groups": [groups] + [1] * 5} for t in range(tiles)]
    result = {}

    async def bench(ctx):
        ctx.set(dut.config.seq, cfg)
        ctx.set(dut.out.ready, 1)
        start = None
        for cycle in range(20000):
            if jobs:
                ctx.set(dut.job.payload, job_layout().const(jobs[0]))
            ctx.set(dut.job.valid, bool(jobs))
            if jobs and ctx.get(dut.job.ready):
                jobs.pop(0)
                start = cycle if start is None else start
            if not jobs and ctx.get(dut.idle) and cycle > start + 2:
                result["cycles"] = cycle - start
                break
            await ctx.tick()
        result["error"] = ctx.get(dut.error)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return result["cycles"], result["error"]


@pytest.mark.parametrize("groups, steps", [(4, 24), (3, 12), (2, 3)])
def test_restore_and_save_overlap_the_neighbouring_groups_steps(groups, steps):
    extent, tiles = 1, 3                # three accumulation tiles: clear, load + save, load
    a_shape = (tiles * extent, steps)
    cycles, error = _run(groups, extent, tiles, a_shape)
    assert not error
    per_step = len(PROGRAM.words)
    work = steps * per_step
    hidden = 0
    for t in range(tiles):
        first, last = t == 0, t == tiles - 1
        group = max(1 + work, _mover_cycles(REGS, not last, not first))
        hidden += groups * group + 2 + _mover_cycles(REGS, False, not first) - 1 \
            + (0 if last else 1 + REGS)
    earlier = sum(1 + groups * ((1 if t == 0 else REGS + 1) + work
                                + (0 if t == tiles - 1 else REGS)) for t in range(tiles))
    # the model's hidden form within a few cycles a job (the pipeline's fill and drain), far
    # less than what a restore and save in the issue slots would add to the middle tile's
    # groups alone
    assert abs(cycles - hidden) <= 4 * tiles < groups * (2 * REGS + 1), (cycles, hidden)
    if work >= _mover_cycles(REGS, True, True):     # steps longer than the mover's MOVE
        assert cycles < earlier, (cycles, earlier)
    else:       # short steps wait for the mover: the earlier form was faster here
        assert cycles > earlier - 4 * tiles, (cycles, earlier)
