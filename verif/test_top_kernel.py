"""meritz.top.Top with real TAUs, one problem end to end through the control port
(``simulate(..., taus=T)``; slow: the model of two 8-lane TAUs is large to build)."""

import pytest

from merit import workloads as W
from merit.sim import simulate

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2, 4, 8])
def test_top_conv3x3(taus):
    """On 2, 4 and 8 TAUs the compiler shares the weights (one fetch per group, multicast); the
    bench checks the whole output against the ISA model and every other DRAM byte."""
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    metrics = simulate(problem, taus=taus, backpressure=0.2, **SMALL)
    assert 0 < metrics["utilization"] <= 1
    assert metrics["tiles"] > 0
    # the CYCLES register counts from START to done and the DRAM span lies inside it; outside
    # it are only the START check, the first dispatch and the DMA's first address, and the
    # last idle reaching done (about 10 cycles): no tile computes after its last write, since
    # edge tiles skip their warps outside the output (once 207 cycles here on 2 TAUs)
    assert metrics["cycles"] <= metrics["cycles_register"] <= metrics["cycles"] + 32


#: Outputs whose sizes are not powers of two; the compiler covers them with tiles of other sizes
#: (13 in tiles of 7, 27 in tiles of 7 and 9, 55 in tiles of 14, 24 x 40 in tiles of 24 x 10).
ODD = {
    "conv_13x13": lambda: W.conv2d(1, 4, 13, 13, 16, 3, padding=1),
    "conv_27x27": lambda: W.conv2d(1, 2, 27, 27, 8, 3, padding=1),
    "conv_55x55": lambda: W.conv2d(1, 2, 55, 55, 4, 3, padding=1),
    "gemm_24x40": lambda: W.gemm(24, 40, 16),
}


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ODD))
def test_top_odd_tiles(name):
    """Tiles whose sizes are not powers of two, on 2 TAUs sharing an operand: bit-exact (the
    bench checks every output and every other DRAM byte)."""
    from merit.compile import compile_problem
    problem = ODD[name]()
    kernel = compile_problem(problem, lanes=8, rp_bytes=SMALL["rp_bytes"],
                             cp_bytes=SMALL["cp_bytes"], taus=2)
    assert any(t & (t - 1) for t in kernel.tiling.p_tile), kernel.tiling
    metrics = simulate(problem, taus=2, backpressure=0.2, **SMALL)
    assert metrics["tiling"] == f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}"
    assert metrics["cycles"] <= metrics["cycles_register"] <= metrics["cycles"] + 32


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2, 4, 8])
def test_top_whole_tiles_first(taus):
    """A 13 x 13 output in tiles of 5 x 7 (edge tiles on both inner indices), the weights
    shared by groups dealt each run's whole tiles first (``share_order`` 1): the kernel compiled
    for 4 TAUs runs bit-exact on 1 (no groups), 2 (groups cut to 2), 4 and 8 TAUs."""
    from merit.compile import compile_problem
    problem = W.conv2d(1, 8, 15, 15, 16, 3)
    kernel = compile_problem(problem, lanes=8, rp_bytes=SMALL["rp_bytes"],
                             cp_bytes=SMALL["cp_bytes"], taus=4)
    assert kernel.config["share_log2"] and kernel.config["share_order"] == 1, kernel.config
    metrics = simulate(problem, taus=taus, compile_taus=4, backpressure=0.2, seed=1, **SMALL)
    assert metrics["tiling"] == f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}"
    assert metrics["tiles"] == len(kernel.tiles)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2])
def test_top_clipped_footprint(taus):
    """Alpha blending of 3 x 3 matte pixels: the lanes along a pixel's 3 columns are 4, the
    fourth void in every tile, and the compiler leaves the word only it reads out of the
    footprint (``merit.compile.clipped_box``); the void lane reads a word of its tile that no
    load wrote. Bit-exact (the bench checks every output and every other DRAM byte), and the
    DMA reads the beats the model counts for the cut footprint, fewer than for the whole."""
    from merit import perf
    from merit.compile import compile_problem
    problem = W.alpha_blend(2, 12, 48, scale=3)
    kernel = compile_problem(problem, lanes=8, rp_bytes=SMALL["rp_bytes"],
                             cp_bytes=SMALL["cp_bytes"], taus=taus)
    whole = compile_problem(problem, lanes=8, rp_bytes=SMALL["rp_bytes"],
                            cp_bytes=SMALL["cp_bytes"], taus=taus, clip_box=False)
    assert kernel.tiling.p_tile[4] == 4 and kernel.tiling == whole.tiling, kernel.tiling
    metrics = simulate(problem, taus=taus, backpressure=0.2, seed=1, **SMALL)
    assert metrics["tiling"] == f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}"
    beats = perf.predict(kernel, taus=taus).read_bytes // 8
    assert metrics["read_beats"] == beats < perf.predict(whole, taus=taus).read_bytes // 8
