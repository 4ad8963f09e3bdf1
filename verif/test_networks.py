"""Verilator benches of the read butterfly and the collector, against the mapper's models."""

import pytest

from harness import run_bench
from meritz.butterfly import Butterfly
from meritz.collector import Collector

pytestmark = pytest.mark.sim


def _offsets(layout):
    return {name: field.offset for name, field in layout}


def _butterfly_config(dut, **extra):
    return dict(lanes=dut.lanes, width=dut.width, signed=dut.word_shape.signed,
                routing=dut.routing, row_bits=dut.row_bits, clocked=dut.latency > 0,
                **{"in": _offsets(dut.i.payload.shape()), "out": _offsets(dut.o.payload.shape())},
                **extra)


BUTTERFLIES = [
    pytest.param(dict(lanes=8, routing="select", pipelined=True), id="n8-select-pipelined"),
    pytest.param(dict(lanes=8, routing="self", pipelined=False, row_bits=3), id="n8-self-rows"),
    pytest.param(dict(lanes=8, routing="self", pipelined=True, signed=False, width=12),
                 id="n8-self-pipelined-u12"),
    pytest.param(dict(lanes=32, routing="self", pipelined=True), id="n32-self-pipelined"),
]


@pytest.mark.parametrize("params", BUTTERFLIES)
def test_butterfly(params, record_property):
    dut = Butterfly(**params)
    vectors = 100 if params["lanes"] > 8 else 300
    config = _butterfly_config(dut, vectors=vectors)
    metrics = run_bench(dut, bench="bench_butterfly", config=config)
    for key, value in metrics.items():
        record_property(key, value)


@pytest.mark.parametrize("lanes", [8, pytest.param(32, marks=pytest.mark.slow)], ids=["n8", "n32"])
def test_collector(lanes, record_property):
    dut = Collector(lanes=lanes, row_bits=6)
    config_layout = dut.config.shape()
    config = dict(lanes=lanes, width=dut.width, signed=True, row_bits=dut.row_bits, clocked=False,
                  functions=8 if lanes == 8 else 3,
                  config={"xor": config_layout["xor"].offset,
                          "xor_bits": config_layout["xor"].shape.elem_shape.width,
                          "rotate": config_layout["rotate"].offset},
                  **{"in": _offsets(dut.i.payload.shape()), "out": _offsets(dut.o.payload.shape())})
    metrics = run_bench(dut, bench="bench_collector", config=config)
    for key, value in metrics.items():
        record_property(key, value)
