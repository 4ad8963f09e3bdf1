"""The kernel every bench runs (``merit.sim.run.bench_kernel``): the problem simulate() hands over,
compiled for the hardware the bench drives, so that the fast and the Python DRAM paths, and the
TAU and processor benches, run the same kernel."""

from merit import workloads as W
from merit.compile import compile_problem
from merit.sim.run import _problem_file, bench_kernel

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def _cfg(problem, **extra):
    return {"problem": str(_problem_file(problem)), "lanes": SMALL["lanes"],
            "rp_bytes": list(SMALL["rp_bytes"]), "cp_bytes": SMALL["cp_bytes"], **extra}


def test_the_processor_bench_compiles_for_its_taus_and_shares():
    problem = W.conv2d(1, 8, 16, 16, 8, 3)
    ran, kernel = bench_kernel(_cfg(problem, taus=4))
    assert ran.name == problem.name
    expected = compile_problem(problem, taus=4, instructions=16, **SMALL)
    assert kernel.config == expected.config and kernel.sharing == expected.sharing
    assert kernel.config["share_log2"] >= 1      # the compiler's default shares
    # an explicit share_dims reaches the compiler: 1-D, the weights once per group of 4
    _, one = bench_kernel(_cfg(problem, taus=4, share_dims=1))
    assert one.sharing is None and one.config["share_log2"] == 2


def test_a_tau_bench_never_shares():
    problem = W.conv2d(1, 8, 16, 16, 8, 3)
    for cfg in (_cfg(problem), _cfg(problem, taus=None), _cfg(problem, taus=1)):
        assert bench_kernel(cfg)[1].config["share_log2"] == 0


def test_the_bench_configuration_reaches_the_compiler():
    problem = W.gemm(24, 16, 12)
    _, kernel = bench_kernel(_cfg(problem, shift=3, instructions=24, max_outputs=64))
    expected = compile_problem(problem, shift=3, instructions=24, max_outputs=64, **SMALL)
    assert kernel.config == expected.config
    assert kernel.tiling == expected.tiling
