"""The DMA on the Verilator model: footprint tiles against numpy, zero and clamp boundaries."""

import pytest

from harness import run_bench
from meritz.tau.dma import Dma

CONV = dict(shape=[3, 7, 11],
            transform={"p": [[1, 1, 0], [2, 1, 0]], "a": [[0, 1, 0], [1, 1, -1], [2, 1, -1]],
                       "boundary": "zero"},
            tiling={"p_tile": [4, 8], "a_tile": [2, 3, 3], "lane_index": [1, 1, 0]},
            tiles=[[[0, 0], [0, 0, 0]], [[4, 8], [2, 0, 0]], [[4, 0], [0, 0, 0]]])
STRIDED_CLAMP = dict(shape=[9, 13],
                     transform={"p": [[0, 2, -1], [1, 2, -1]], "a": [[0, 1, 0], [1, 1, 0]],
                                "boundary": "clamp"},
                     tiling={"p_tile": [2, 4], "a_tile": [3, 3], "lane_index": [1, 1, 0]},
                     lpitch=[12, 1],
                     tiles=[[[0, 0], [0, 0]], [[2, 4], [0, 0]], [[4, 4], [0, 0]]])
WEIGHTS = dict(shape=[3, 3, 3],
               transform={"p": [None, None], "a": [[0, 1, 0], [1, 1, 0], [2, 1, 0]],
                          "boundary": "zero"},
               tiling={"p_tile": [4, 8], "a_tile": [2, 3, 3], "lane_index": [1, 1, 0]},
               tiles=[[[0, 0], [0, 0, 0]], [[0, 0], [2, 0, 0]]])
CASES = {"conv": CONV, "strided_clamp": STRIDED_CLAMP, "weights": WEIGHTS}


def _cases():
    for case in sorted(CASES):
        for bp in (0.0, 0.3):
            quick = (bp > 0) == (case == "conv")
            yield pytest.param(case, bp, marks=() if quick else pytest.mark.slow,
                               id=f"{case}-bp{bp}")


@pytest.mark.sim
@pytest.mark.parametrize("case, backpressure", list(_cases()))
def test_dma(case, backpressure):
    cfg = dict(CASES[case], lanes=8, backpressure=backpressure, latency=20)
    metrics = run_bench(Dma(lanes=8), bench="bench_dma", config=cfg)
    assert metrics["dma_read_beats"] > 0
