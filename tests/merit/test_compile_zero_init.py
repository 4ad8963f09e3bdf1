"""An output's zero initialization left to the Compute Pipeline's clear
(``merit.compile.without_zero_init``): the leading instructions that only set a register to 0 are
left out, and every program computes the same outputs without them."""

import numpy as np
import pytest

from merit import perf
from merit import workloads as W
from merit.compile import compile_problem, without_zero_init
from merit.isa import Op, execute
from merit.isa.programs import program_for

LANES = 8

PROBLEMS = {
    "conv": W.conv2d(1, 3, 6, 6, 4, 3, padding=1),
    "conv_relu": W.conv_relu(1, 3, 6, 6, 4, 3, padding=1),
    "conv_pool": W.conv_pool2d(1, 2, 6, 6, 3, 3, padding=1, pool=2),
    "gemm": W.gemm(8, 8, 8),
    "max_pool": W.max_pool2d(1, 2, 8, 8, 2),
    "avg_pool": W.avg_pool2d(1, 2, 8, 8, 2),
    "alpha": W.alpha_blend(2, 4, 4),
    "deconv": W.deconv2d(1, 2, 4, 5, 3, 5, stride=3, padding=1, threshold=0, high=7),
}


def _outputs(program, shape, seed):
    rng = np.random.default_rng(seed)
    rp = [[rng.integers(-300, 300, size=tuple(shape) + (LANES,)).astype(np.int16)
           for _ in program.reads(port)] for port in (0, 1)]
    pindex = rng.integers(0, 16, size=(6, LANES))
    return execute(program, shape, rp0=rp[0], rp1=rp[1], pindex=pindex, lanes=LANES).outputs


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_a_program_without_its_zero_init_computes_the_same_outputs(name):
    problem = PROBLEMS[name]
    program = program_for(problem)
    shorter = without_zero_init(program)
    shape = tuple(problem.a_shape) or (1,)
    for seed in range(3):
        for a, b in zip(_outputs(program, shape, seed), _outputs(shorter, shape, seed),
                        strict=True):
            np.testing.assert_array_equal(a, b)
    dropped = len(program.words) - len(shorter.words)
    # the MAC programs lose their 'add r0, 0, 0, 0'; a max keeps its -32768
    if name in ("conv", "conv_relu", "gemm"):
        assert dropped == 1
        assert program.instructions[0].op == Op.ADD
    if name == "max_pool":
        assert dropped == 0 and shorter == program


def test_the_compiler_leaves_the_zero_init_out_and_the_model_counts_a_cycle_less_a_warp():
    problem = W.conv2d(1, 8, 16, 16, 8, 3, padding=1)
    kept = compile_problem(problem, lanes=LANES, clear_init=False, merge_rows=False)
    left = compile_problem(problem, lanes=LANES, merge_rows=False)
    assert kept.tiling == left.tiling
    assert len(left.program.words) == len(kept.program.words) - 1
    assert left.config["begs"][-1] == 0 and kept.config["begs"][-1] == 0
    assert left.config["program"][0] == kept.config["program"][1]
    # one instruction an output fewer executed, one issue cycle a warp and tile fewer
    outputs = int(np.prod(problem.p_shape))
    assert kept.useful_ops - left.useful_ops == outputs
    warps = sum(int(np.prod(kept.tiling.edge_warps(o, problem.p_shape))) for o in kept.tiles)
    a, b = perf.predict(kept), perf.predict(left)
    assert sum(t.compute_cycles for t in a.per_tile) \
        - sum(t.compute_cycles for t in b.per_tile) == warps
    assert b.cycles < a.cycles
