"""Verilator runs of the Compute Pipeline (sequencer + SIMD array) on whole programs."""

import pytest

from merit import workloads as W
from merit.isa import assemble, program_for
from meritz.sequencer import ComputePipeline, Sequencer
from test_simd import run_bench

pytestmark = pytest.mark.sim

NESTED = """
.levels 3
.const k0 = 0x5555
pre1:
    index r0, 0, p0
    add   r1, 0, 0, 0
pre2:
    index r2, r0, p1
pre3:
    xor   r3, r2, i1
loop:
    l1    r1, r1, i0, r3 >> 1
    or    r4, r1, k0
post3:
    sel   r5, r4, r1, r2
    out   r5, 0
post2:
    min   r6, r5, r1
    out   r6, i1 >> 3
post1:
    out   r1, r0 >> 2
    out   r4, 0 >> 31
"""


def _programs():
    return {
        "conv": (program_for(W.conv2d(1, 4, 6, 6, 2, 3), shift=3), (4, 3, 3)),
        "best_match": (program_for(W.motion_estimation(8, 8, block=2, search=1, best=True)),
                       (3, 3, 2, 2)),
        "bilateral": (program_for(W.bilateral(6, 6, sigma_s=1.0, sigma_r=300.0, radius=2)),
                      (5, 5)),
        "mean": (program_for(W.avg_pool2d(1, 1, 6, 6, 3)), (3, 3)),
        "nested": (assemble(NESTED), (2, 3, 4)),
    }


CASES = {
    # program, lanes, a_tiles (outermost extents), group_shape, lane_bits, parallel tiles
    "conv_n8": ("conv", 8, [2, 2], [2, 2], [1, 2], 2),
    "best_match_n8": ("best_match", 8, [1, 2], [2, 1], [1, 2], 1),
    "bilateral_n8": ("bilateral", 8, [2, 3], [1, 2], [2, 1], 1),
    "mean_n8": ("mean", 8, [3], [3], [3], 2),
    "nested_n8": ("nested", 8, [1, 1], [2, 2], [2, 1], 2),
    "conv_n32_smoke": ("conv", 32, [1, 3], [2, 1], [3, 2], 1),
}


def _config(case):
    name, lanes, a_tiles, group_shape, lane_bits, p_tiles = CASES[case]
    program, a_shape = _programs()[name]
    return lanes, {
        "lanes": lanes, "program_depth": 32, "a_shape": list(a_shape), "a_tiles": a_tiles,
        "group_shape": group_shape, "lane_bits": lane_bits, "p_tiles": p_tiles,
        "program": {"words": list(program.words), "begs": list(program.begs),
                    "ends": list(program.ends), "consts": list(program.consts),
                    "luts": [list(t) for t in program.luts]},
    }


@pytest.mark.parametrize("case", CASES)
def test_compute_pipeline_runs_programs(case):
    lanes, config = _config(case)
    metrics = run_bench(ComputePipeline(lanes=lanes), bench="bench_sequencer",
                        name=f"cp_n{lanes}", config=config)
    assert metrics["alu_utilization"] > 0.5


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lanes": 24}, ValueError, "lanes must be a power of two of at least 2, not 24"),
    ({"program_depth": 0}, ValueError, "program_depth must be between 1 and 64, not 0"),
    ({"program_depth": "32"}, TypeError, "program_depth must be an integer, not '32'"),
    ({"sram_depth": 4}, ValueError, "sram_depth must be at least 8, not 4"),
])
def test_sequencer_parameters_are_validated(kwargs, error, match):
    with pytest.raises(error, match=match):
        Sequencer(**kwargs)
