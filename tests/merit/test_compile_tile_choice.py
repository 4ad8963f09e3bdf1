"""The compiler's tile choice (``merit.compile``): kernels of any size are chosen by the
performance model (those of many jobs on a prefix of their tiles), and a larger partial-result
store does not make the chosen kernel slower."""

import importlib
import itertools

import pytest

from merit import perf
from merit import workloads as W
from merit.compile import MARGIN, compile_problem

C = importlib.import_module("merit.compile")

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def _grid(problem, p_tile):
    """Tile origins of ``p_tile`` over ``problem``, row-major (the last index innermost)."""
    return list(itertools.product(*[range(0, n, t) for n, t in zip(problem.p_shape, p_tile,
                                                                   strict=True)]))


def test_a_prefix_prediction_scales_to_the_whole_kernel(monkeypatch):
    """A kernel of more jobs than RANKED_JOBS is predicted on its first tiles in dispatch order
    (PREFIX_JOBS jobs) and the cycles scaled by its tiles; on a layer of like tiles that is
    within a few percent of the prediction of the whole kernel."""
    problem = W.conv2d(1, 8, 64, 64, 16, 3, padding=1)
    kernel = compile_problem(problem, **SMALL, taus=2)
    assert list(kernel.tiles) == _grid(problem, kernel.tiling.p_tile)
    whole = perf.predict(kernel, taus=2, rp_bytes=SMALL["rp_bytes"]).cycles
    assert C._predicted(kernel, 2, SMALL["rp_bytes"]) == whole        # few jobs: the whole
    jobs = C._jobs(kernel)
    monkeypatch.setattr(C, "RANKED_JOBS", jobs // 4)
    monkeypatch.setattr(C, "PREFIX_JOBS", jobs // 4)
    part = C._predicted(kernel, 2, SMALL["rp_bytes"])
    assert part != whole                                # a prefix was predicted ...
    assert abs(part - whole) / whole < 0.05             # ... and scaled


def test_a_block_walk_prefix_is_its_first_blocks(monkeypatch):
    """A kernel dealt on the block walk (2-D sharing) is predicted on its first tiles in the
    walk's order, not the grid's (whose first tiles would leave most of each block void): the
    prefix scales to within a few percent of the whole kernel."""
    problem = W.conv2d(1, 8, 64, 64, 16, 3, padding=1)
    kernel = compile_problem(problem, **SMALL, taus=4, share_dims=2, share_counts=(2,))
    assert kernel.sharing and len(kernel.sharing) == 2
    order = perf.dispatch_tiles(kernel, 4)
    assert sorted(order) == list(range(len(kernel.tiles)))
    assert order != list(range(len(kernel.tiles)))      # the walk is not the grid's order
    whole = perf.predict(kernel, taus=4, rp_bytes=SMALL["rp_bytes"]).cycles
    jobs = C._jobs(kernel)
    monkeypatch.setattr(C, "RANKED_JOBS", jobs // 4)
    monkeypatch.setattr(C, "PREFIX_JOBS", jobs // 4)
    part = C._predicted(kernel, 4, SMALL["rp_bytes"])
    assert part != whole
    assert abs(part - whole) / whole < 0.05


@pytest.mark.parametrize("make", [
    lambda: W.conv2d(1, 16, 13, 13, 96, 3, padding=1),
    lambda: W.correlation(16, 8, 16, 2),
], ids=["conv", "correlation"])
def test_the_prefix_choice_is_as_fast_as_the_whole_one(monkeypatch, make):
    """The kernel chosen on prefixes (a quarter of the jobs) is, predicted whole,
    within a few percent of the one chosen on whole predictions, and never slower than the
    cheapest power-of-two tile that was taken unweighed above RANKED_JOBS."""
    problem = make()
    rp = SMALL["rp_bytes"]
    exact = compile_problem(problem, **SMALL, taus=2)
    monkeypatch.setattr(C, "RANKED_JOBS", C._jobs(exact) // 4)
    monkeypatch.setattr(C, "PREFIX_JOBS", C._jobs(exact) // 4)
    prefix = compile_problem(problem, **SMALL, taus=2)
    # the cheapest power-of-two tile in DRAM traffic: what is kept when no candidate is
    # predicted faster
    monkeypatch.setattr(C, "_predicted",
                        lambda kernel, taus, rp_bytes, rp_ports=None, stop=None: 1.0)
    first = compile_problem(problem, **SMALL, taus=2)
    cycles = {name: perf.predict(k, taus=2, rp_bytes=rp).cycles
              for name, k in (("exact", exact), ("prefix", prefix), ("first", first))}
    assert C._jobs(prefix) > C.RANKED_JOBS and C._jobs(first) > C.RANKED_JOBS
    assert cycles["prefix"] <= cycles["exact"] * 1.05, cycles
    assert cycles["prefix"] <= cycles["first"] * (1 + MARGIN), cycles


@pytest.mark.parametrize("make", [
    lambda: W.conv2d(1, 16, 13, 13, 128, 3, padding=1),
    lambda: W.conv_pool2d(1, 16, 27, 27, 64, 5, padding=2, pool=2),
    lambda: W.gemm(64, 64, 128),
], ids=["conv", "conv_pool", "gemm"])
def test_a_larger_partial_result_store_is_not_slower(make):
    """The chosen kernel's predicted cycles do not rise with the CP's size beyond the margin
    within which the compiler keeps the cheapest power-of-two tile: the tiles under half the
    cap are among a larger CP's candidates too."""
    problem = make()
    cycles = []
    for cp in (2048, 4096, 5120, 8192):
        # the tile search's property: the window-inside alternatives of a fused pooling
        # (``window``) hold fewer outputs per register and are not monotone in the CP's size
        # (docs/decisions.md, Compiler)
        kernel = compile_problem(problem, lanes=32, taus=4, cp_bytes=cp, instructions=24,
                                 window=False)
        cycles.append(perf.predict(kernel, taus=4).cycles)
    for small, large in zip(cycles, cycles[1:], strict=False):
        assert large <= small * (1 + MARGIN), cycles
