"""A transposed convolution split into its phase groups (``merit.workloads.deconv2d_phases``)
on one 8-lane TAU under Verilator: each group writes its strided part of the one output through
the affine output map (``out_pitch`` / ``out_base``); the bench checks every element it writes,
bit for bit, and that no other DRAM byte (the other groups' elements included) changed."""

import numpy as np
import pytest

from merit import workloads as W
from merit.sim import simulate

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, instructions=24)


@pytest.mark.sim
def test_deconv_phase_groups_on_a_tau():
    problems = W.deconv2d_phases(1, 3, 4, 5, 2, 5, stride=3, padding=1, threshold=4, high=255)
    assert [p.a_shape for p in problems] == [(3, 2, 2), (3, 2, 1), (3, 1, 2), (3, 1, 1)]
    written = np.zeros(problems[0].outputs[0].shape, dtype=np.int64).reshape(-1)
    for problem in problems:
        metrics = simulate(problem, seed=5, **SMALL)
        assert 0 < metrics["utilization"] <= 1
        np.add.at(written, problem.outputs[0].indices(problem.p_shape).reshape(-1), 1)
    assert (written == 1).all()
