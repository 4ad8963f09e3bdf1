"""Footprint reuse (``compile_problem(hold=True)``, ``config["hold"]``) on meritz.top.Top with
real 8-lane TAUs, dealt dynamically: bit-exact against the golden ISA model (the bench checks
every output and every other DRAM byte), and the DMA's read beats those of
:func:`merit.perf.predict`, which counts a held slot's loads by its own rule
(``merit.perf._hold_keys``), not from the RTL.

On 2 TAUs the read beats of a kernel whose footprints change depend on which tiles each TAU
takes (the deal follows the timing), so that test bounds them instead. The kernels are compiled
for one TAU (no operand sharing: a held slot belongs to one TAU) and run
on 1 and 2 TAUs. The robustness scenarios with hold on (random latency, reordered reads, abort,
reset, SLVERR in the middle of a chain) are ``test_top_robust.py::test_top_robust_hold``.
"""

import pytest

from merit import workloads as W
from merit.compile import _held_loads, compile_problem
from merit.perf import predict
from merit.sim import simulate

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)

#: (i) 4 output channels, the whole reduction (3 x 3 x 3) in one accumulation tile: the weights'
#: footprint is one tile, the same for every job, loaded once per TAU.
SAME = dict(n=1, c=3, h=32, w=48, m=4, k=3)
#: (ii) 16 output channels in tiles of 4, two spatial tiles each: the weights' footprint changes
#: every second tile in the grid's order (a stale held tile gives wrong outputs); the input's
#: (held in RP0) stays while a TAU keeps its rows.
CHANGING = dict(n=1, c=4, h=10, w=10, m=16, k=3)


def _check(metrics, model):
    """The DMA's read beats are the model's; the cycles within 5 % of it."""
    print(f"cycles RTL {metrics['cycles']} model {model.cycles}; read beats RTL "
          f"{metrics['read_beats']} model {model.read_bytes // 8}")
    assert metrics["read_beats"] == model.read_bytes // 8, (metrics["read_beats"],
                                                            model.read_bytes // 8)
    assert abs(metrics["cycles"] - model.cycles) <= 0.05 * metrics["cycles"], \
        (metrics["cycles"], model.cycles)


def _kernel(shape, hold):
    problem = W.conv2d(*shape.values(), padding=1)
    return problem, compile_problem(problem, taus=1, share_dims=1, hold=hold, **SMALL)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2])
def test_hold_same_footprint(taus):
    problem, kernel = _kernel(SAME, True)
    _, plain = _kernel(SAME, False)
    assert kernel.config["hold"] == 0b11, kernel.config["hold"]
    assert (kernel.tiling, kernel.config["rp1"]) == (plain.tiling, plain.config["rp1"])
    a_tiles = 1
    for size, tile in zip(problem.a_shape, kernel.tiling.a_tile, strict=True):
        a_tiles *= -(-size // tile)
    assert a_tiles == 1, kernel.tiling
    jobs = len(kernel.tiles)
    counts = [len(range(0, n, t)) for n, t in zip(problem.p_shape, kernel.tiling.p_tile,
                                                  strict=True)]
    loads = _held_loads(problem.operands[1].transform, counts, a_tiles, taus)
    assert loads == taus < jobs
    model = predict(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"])
    unheld = predict(plain, taus=taus, rp_bytes=SMALL["rp_bytes"])
    metrics = simulate(problem, taus=taus, compile_taus=1, share_dims=1, hold=True, seed=1,
                       **SMALL)
    # the weights (RP1) are read ``loads`` times instead of once a job
    weights = (unheld.read_bytes - model.read_bytes) // 8
    assert weights > 0 and weights % (jobs - loads) == 0, (weights, jobs, loads)
    _check(metrics, model)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2])
def test_hold_changing_footprint(taus):
    problem, kernel = _kernel(CHANGING, True)
    assert kernel.config["hold"] == 0b11, kernel.config["hold"]
    keys = [t[1] for t in kernel.tiles]
    changes = sum(a != b for a, b in zip(keys, keys[1:], strict=False))
    assert 2 <= changes < len(keys) - 1, keys
    model = predict(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"])
    metrics = simulate(problem, taus=taus, compile_taus=1, share_dims=1, hold=True, seed=2,
                       **SMALL)
    if taus == 1:
        _check(metrics, model)
        return
    # on 2 TAUs which loads a TAU keeps depends on which tiles it takes, which the dynamic
    # deal decides by the timing (here: the TAUs' and the model's differ): fewer reads than
    # loading every job's tiles, the cycles within 5 %
    _, plain = _kernel(CHANGING, False)
    unheld = predict(plain, taus=taus, rp_bytes=SMALL["rp_bytes"]).read_bytes // 8
    print(f"cycles RTL {metrics['cycles']} model {model.cycles}; read beats RTL "
          f"{metrics['read_beats']} model {model.read_bytes // 8}, every job's loads {unheld}")
    assert metrics["read_beats"] < unheld, (metrics["read_beats"], unheld)
    assert abs(metrics["cycles"] - model.cycles) <= 0.05 * metrics["cycles"], \
        (metrics["cycles"], model.cycles)
