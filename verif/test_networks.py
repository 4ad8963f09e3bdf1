"""The read butterfly, its request router and the collector: Verilator benches against the
mapper's models, Amaranth-level simulation of the router, and parameter checks."""

import gc
import warnings

import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from harness import run_bench
from merit.mapping import BankFunction, find_hash, property_matrix, route
from meritz.tau.rp.butterfly import Butterfly, ButterflyRouter
from meritz.tau.rp.collector import Collector


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
    pytest.param(dict(lanes=16, routing="self", pipelined=True, row_bits=4),
                 id="n16-self-rows-pipelined", marks=pytest.mark.slow),
    pytest.param(dict(lanes=32, routing="select", pipelined=False),
                 id="n32-select", marks=pytest.mark.slow),
    pytest.param(dict(lanes=4, routing="self", pipelined=True, signed=False, width=8),
                 id="n4-self-pipelined-u8", marks=pytest.mark.slow),
]


@pytest.mark.sim
@pytest.mark.parametrize("params", BUTTERFLIES)
def test_butterfly(params, record_property, request):
    dut = Butterfly(**params)
    vectors = 100 if params["lanes"] > 8 else 300
    if request.node.get_closest_marker("slow"):
        vectors = 2000
    config = _butterfly_config(dut, vectors=vectors)
    metrics = run_bench(dut, bench="bench_butterfly", config=config)
    for key, value in metrics.items():
        record_property(key, value)


@pytest.mark.sim
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


@pytest.mark.parametrize("lanes", [8, 32])
def test_router_matches_the_model(lanes):
    """Per-bank enables and rows, select bits and the conflict flag equal ``route(banks, rows)``
    for affine requests on hashed bank functions and for random ones."""
    dut = ButterflyRouter(lanes=lanes, row_bits=4)
    rand = np.random.default_rng(lanes)
    m = lanes.bit_length() - 1
    n = np.arange(lanes)

    async def bench(ctx):
        seen = {False: 0, True: 0}
        for k in range(150):
            if k % 2:
                banks, rows = rand.integers(0, lanes, lanes), rand.integers(0, 3, lanes)
            else:
                coeffs = rand.integers(0, 2 * lanes, m)
                coeffs[rand.random(m) < 0.2] = 0
                choice = find_hash(property_matrix(coeffs, m + 2), lanes,
                                   broadcast=np.flatnonzero(coeffs == 0).tolist())
                bank = BankFunction(lanes) if choice is None else choice.bank
                addresses = int(rand.integers(0, 64)) + sum(
                    int(c) * ((n >> i) & 1) for i, c in enumerate(coeffs))
                banks, rows = bank.locate(addresses)
                rows = rows % 16
            ctx.set(dut.bank, [int(b) for b in banks])
            ctx.set(dut.row, [int(r) for r in rows])
            await ctx.delay(1e-9)
            want = route(banks, rows)
            assert ctx.get(dut.conflict) == want.conflict
            seen[want.conflict] += 1
            if want.conflict:
                continue
            enable = ctx.get(dut.enable)
            assert [(enable >> b) & 1 for b in range(lanes)] == want.used.astype(int).tolist()
            for b in np.flatnonzero(want.used):
                assert ctx.get(dut.bank_row[int(b)]) == want.tag[b]
            for s in range(m):
                sel = ctx.get(dut.select[s])
                assert [(sel >> p) & 1 for p in range(lanes)] == want.select[s].tolist()
        assert seen[False] >= 5 and seen[True] >= 5

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("cls,kwargs,error,message", [
    (Butterfly, dict(lanes=24), ValueError, "lanes must be a power of two of at least 2, not 24"),
    (Butterfly, dict(lanes=8, width=0), ValueError, "width must be a positive integer, not 0"),
    (Butterfly, dict(lanes=8, width=16.0), TypeError, "width must be an integer, not 16.0"),
    (Butterfly, dict(lanes=8, routing="crossbar"), ValueError,
     "routing must be one of 'select', 'self', not 'crossbar'"),
    (Butterfly, dict(lanes=8, pipelined=1), TypeError, "pipelined must be a bool, not 1"),
    (Butterfly, dict(lanes=8, row_bits=4), ValueError,
     "row_bits = 4 needs routing='self', not 'select'"),
    (ButterflyRouter, dict(lanes=8, row_bits=0), ValueError,
     "row_bits must be a positive integer, not 0"),
    (Collector, dict(lanes=12, row_bits=4), ValueError,
     "lanes must be a power of two of at least 2, not 12"),
    (Collector, dict(lanes=8, row_bits="4"), TypeError, "row_bits must be an integer, not '4'"),
])
def test_parameters_are_validated(cls, kwargs, error, message):
    with warnings.catch_warnings():
        # the half-built component is reported as unused when it is collected
        warnings.filterwarnings("ignore", message=".*created but never used")
        with pytest.raises(error, match=message):
            cls(**kwargs)
        gc.collect()


def test_latency_and_layouts():
    duts = [Butterfly(lanes=8, pipelined=True), Butterfly(lanes=8),
            Butterfly(lanes=8, routing="self", row_bits=5), Collector(lanes=32, row_bits=2)]
    assert [d.latency for d in duts[:2]] == [3, 0]
    assert [name for name, _ in duts[2].i.payload.shape()] == ["data", "bank", "row"]
    assert [name for name, _ in duts[2].o.payload.shape()] == ["data", "conflict"]
    assert duts[3].rotation_stages == 3     # log2 5 -> 3 omega stages for 32 lanes (§V-C)
    for dut in duts:
        Fragment.get(dut, None)
