"""The pooling window inside the channel passes (``merit.compile.window_inside``): the same
results as the fused kernel with the window outside, on the golden model and bit-exact on the
ISA; the compiler takes it where the model predicts it faster."""

import json
from pathlib import Path

import numpy as np
import pytest

from bench.perf import recorded_compiler, recorded_ports
from merit import isa
from merit import workloads as W
from merit.compile import compile_problem, window_inside
from merit.isa.programs import check_golden
from merit.perf import predict

CASES = {
    "max_2x2": lambda: W.conv_pool2d(1, 5, 11, 13, 3, 3, padding=1, pool=2),
    "max_3x3_s2_relu": lambda: W.conv_pool2d(1, 4, 13, 12, 2, 3, stride=2, pool=3,
                                             pool_stride=2, relu=True),
    "avg_2x2_relu": lambda: W.conv_pool2d(1, 3, 10, 9, 2, 2, pool=2, pool_kind="avg",
                                          relu=True),
    "avg_2x2": lambda: W.conv_pool2d(1, 3, 9, 9, 2, 3, padding=1, pool=2, pool_kind="avg"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("inside", [1, 2])
def test_window_inside_gives_the_same_results(name, inside):
    problem = CASES[name]()
    other = window_inside(problem, inside)
    nw = problem.levels[0]
    assert other.levels == (nw - inside, 1, inside, problem.levels[1] - 1)
    rng = np.random.default_rng(7)
    data = [rng.integers(-200, 200, t.shape).astype(np.int16) for t in problem.tensors]
    # the golden model (int64: exact) and a plain numpy reference of convolution then pooling
    assert np.array_equal(other.run(*data), problem.run(*data))
    try:
        prog = isa.program_for(other)
    except isa.IsaError as e:
        # 3 x 3 wholly inside: nine sums, more than the eight registers
        assert name.startswith("max_3x3") and inside == 2
        assert "needs 9 registers" in str(e)
        return
    window = int(np.prod(problem.a_shape[:nw]))
    n = int(np.prod(other.a_shape[1 + nw - inside:1 + nw]))
    assert prog.regs == n + (inside < nw)
    assert np.array_equal(isa.run(other, *data), isa.run(problem, *data))
    assert all(c.held and c.max_error == 0 for c in check_golden(other, shift=2)), window


def test_window_inside_refuses_other_kernels():
    assert window_inside(W.conv2d(1, 3, 8, 8, 4, 3), 1) is None
    problem = CASES["max_2x2"]()
    assert window_inside(problem, 3) is None
    assert window_inside(window_inside(problem, 2), 1) is None


def test_compiler_takes_the_window_inside_where_channels_split():
    """64 channels do not fit one accumulation tile of the small TAU: with the window outside
    every window position re-reads every channel tile; inside, each tile is read once."""
    from merit.compile import MARGIN
    problem = W.conv_pool2d(1, 64, 12, 12, 8, 3, padding=1, pool=2)
    args = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, instructions=24)
    # single-port RP banks (every loaded row also costs a read cycle): both window indices
    # inside, 16 % faster
    before = compile_problem(problem, window=False, rp_ports=1, **args)
    after = compile_problem(problem, rp_ports=1, **args)
    assert before.problem.strategy.inside == 0
    assert after.problem.strategy.inside == 2
    assert after.config["xstride"] == [0, 2, 1, 0, 0, 0]
    assert after.config["regs"] == 4
    assert predict(after, rp_ports=1).cycles < 0.9 * predict(before, rp_ports=1).cycles
    # the two-port banks as built: the window still goes inside, by the margin at least
    before = compile_problem(problem, window=False, **args)
    after = compile_problem(problem, **args)
    assert after.problem.strategy.inside > 0
    assert predict(after).cycles < (1 - MARGIN) * predict(before).cycles


@pytest.mark.parametrize("problem", [
    W.conv_pool2d(1, 2, 9, 9, 4, 3, padding=1, pool=2),
    W.conv_pool2d(1, 16, 13, 13, 4, 3, stride=2, pool=3, pool_stride=2),
], ids=["one_tile", "pool3"])
def test_compiler_takes_the_window_inside_only_when_predicted_faster(problem):
    from merit.compile import MARGIN
    args = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, instructions=24)
    before = compile_problem(problem, window=False, **args)
    kernel = compile_problem(problem, **args)
    assert before.problem.strategy.inside == 0
    if kernel.problem.strategy.inside:
        assert predict(kernel).cycles < (1 - MARGIN) * predict(before).cycles
    else:
        assert kernel.config == before.config


POOL_WINDOW = json.loads((Path(__file__).resolve().parents[2] / "docs" / "results"
                          / "pool_window.json").read_text())
#: rows whose measured run is a whole layer (compiling it takes tens of seconds)
WHOLE = {n for n, r in POOL_WINDOW["rows"].items() if r.get("simulated") == "full"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow if n in WHOLE else ())
                                  for n in sorted(POOL_WINDOW["rows"])])
def test_model_within_five_percent_of_the_window_inside_rtl(name):
    """The CONV+Pool rows measured on the 4 x 32-lane RTL with the compiler's choice
    (``docs/results/pool_window.json``): compiled as ``bench.top`` does, the window inside, the
    measured tiling, and ``merit.perf`` within 5 % of the cycles and exact on the DRAM beats."""
    from merit.paper import row
    r, setup = POOL_WINDOW["rows"][name], POOL_WINDOW["setup"]
    problems = ([p for p, _ in row(name).full()] if r["simulated"] == "full"
                else row(name).slice_problems())
    # the RP banks of the run: single-port where the row does not record them
    ports = recorded_ports(r)
    kernels = [compile_problem(p, lanes=setup["lanes"], taus=setup["taus"], instructions=24,
                               rp_ports=ports, **recorded_compiler(r)) for p in problems]
    assert all(k.problem.strategy.inside for k in kernels)
    assert " + ".join(f"p={k.tiling.p_tile} a={k.tiling.a_tile}" for k in kernels) == r["tiling"]
    preds = [predict(k, taus=setup["taus"], dram_bytes_per_cycle=setup["dram_bytes_per_cycle"],
                     latency=setup["latency"], rp_ports=ports) for k in kernels]
    cycles = sum(p.cycles for p in preds)
    assert abs(cycles - r["cycles"]) <= 0.05 * r["cycles"], (cycles, r["cycles"])
    assert (sum(p.read_bytes for p in preds), sum(p.write_bytes for p in preds)) == (
        8 * r["read_beats"], 8 * r["write_beats"])
