"""cocotb bench of the read butterfly (:class:`meritz.tau.rp.butterfly.Butterfly`).

The reference is the mapper's network model (:mod:`merit.mapping.network`): ``route`` gives the
select bits and the conflict verdict of every request, ``butterfly`` the words each lane must see.
Random valid/ready backpressure on both streams, seeded from the bench seed.

The pytest side. The read butterfly and its request router: Verilator benches against the mapper's
models, Amaranth-level simulation of the router, and the parameter checks of the networks
(butterfly, router, collector).
"""

import gc
import warnings

import cocotb
import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator
from cocotb.triggers import ReadOnly, RisingEdge, Timer

import funcov
from harness import run_bench
from merit.mapping import BankFunction, butterfly, find_hash, property_matrix, route
from merit.sim.benchlib import (
    bench_config,
    pack_lanes,
    pause_generator,
    record_metric,
    rng,
    setup,
    unpack_lanes,
)
from meritz.tau.rp.butterfly import Butterfly, ButterflyRouter
from meritz.tau.rp.collector import Collector


class StreamTB:
    """Clock, reset, a driver of stream ``i`` and a monitor of stream ``o``, with random pauses
    on both (also used by ``test_collector``).

    The configuration names the payload field offsets (``in`` / ``out``) and whether the design
    is ``clocked``; a combinational one is stepped in 10 ns intervals.
    """

    def __init__(self, dut):
        self.dut = dut
        self.cfg = bench_config()
        self.lanes = self.cfg["lanes"]
        self.width = self.cfg["width"]
        self.bits = self.lanes.bit_length() - 1
        self.rand = rng()
        self.np_rand = np.random.default_rng(self.cfg["seed"])
        pause = self.cfg.get("pause", 0.3)
        self.in_pause = pause_generator(self.rand, pause)
        self.out_pause = pause_generator(self.rand, pause)
        self.clocked = self.cfg["clocked"]

    def edge(self):
        return RisingEdge(self.dut.clk) if self.clocked else Timer(10, unit="ns")

    def field(self, side, name, value, bits):
        """``value`` (``bits`` wide) placed at the offset of payload field ``name``."""
        offset = self.cfg[side][name]
        return (int(value) & ((1 << bits) - 1)) << offset

    def get(self, value, name, bits):
        """Field ``name`` (``bits`` wide) of an output payload."""
        return (int(value) >> self.cfg["out"][name]) & ((1 << bits) - 1)

    def words(self):
        low = -(1 << (self.width - 1)) if self.cfg["signed"] else 0
        return self.np_rand.integers(low, low + (1 << self.width), self.lanes).tolist()

    async def drive(self, payloads):
        dut = self.dut
        for payload in payloads:
            while next(self.in_pause):
                dut.i__valid.value = 0
                await self.edge()
            dut.i__valid.value = 1
            dut.i__payload.value = payload
            while True:
                await ReadOnly()
                fire = int(dut.i__ready.value)
                await self.edge()
                if fire:
                    break
        dut.i__valid.value = 0

    async def collect(self, count):
        dut = self.dut
        received = []
        while len(received) < count:
            dut.o__ready.value = 0 if next(self.out_pause) else 1
            await ReadOnly()
            if int(dut.o__valid.value) and int(dut.o__ready.value):
                received.append(int(dut.o__payload.value))
            await self.edge()
        return received

    async def transfer(self, payloads):
        """Reset, send every payload through the design, return the output payloads in order."""
        dut = self.dut
        dut.i__valid.value = 0
        dut.o__ready.value = 0
        if self.clocked:
            await setup(dut)
        cocotb.start_soon(self.drive(payloads))
        return await self.collect(len(payloads))


class TB(StreamTB):
    """The butterfly's stimulus, and the check of its outputs against the model."""

    def pack(self, words, select=None, banks=None, rows=None):
        payload = self.field("in", "data", pack_lanes(words, self.width), self.lanes * self.width)
        if select is not None:
            payload |= self.field("in", "select", pack_lanes(select, self.lanes),
                                  self.bits * self.lanes)
        if banks is not None:
            payload |= self.field("in", "bank", pack_lanes(banks, self.bits),
                                  self.bits * self.lanes)
        if rows is not None:
            row_bits = self.cfg["row_bits"]
            payload |= self.field("in", "row", pack_lanes(rows, row_bits), row_bits * self.lanes)
        return payload

    def unpack(self, value):
        words = unpack_lanes(self.get(value, "data", self.lanes * self.width), self.lanes,
                             self.width, signed=self.cfg["signed"])
        conflict = self.get(value, "conflict", 1) if "conflict" in self.cfg["out"] else 0
        return words, conflict

    async def run(self, vectors):
        """``vectors``: ``(payload, expected words or None, expected conflict)``; checks them all
        in order and returns the number of conflicts seen."""
        received = [self.unpack(v) for v in await self.transfer([v[0] for v in vectors])]
        conflicts = 0
        for k, ((words, conflict), (_, want, want_conflict)) in enumerate(
                zip(received, vectors, strict=True)):
            assert conflict == want_conflict, (
                f"vector {k}: conflict {conflict}, model says {want_conflict}")
            conflicts += conflict
            if want is not None and not want_conflict:
                assert words == want, f"vector {k}: lanes got {words}, model says {want}"
        return conflicts

    # ---- stimulus ----------------------------------------------------------------------------

    def random_bank_function(self):
        m = self.bits
        hashed = int(self.np_rand.integers(0, 2))
        xor = [int(self.np_rand.integers(j + 1, 2 * m + 1)) if hashed and self.np_rand.random()
               < 0.5 else None for j in range(m)]
        xor = [s if s is None or s < 2 * m else None for s in xor]
        return BankFunction(self.lanes, xor=xor, rotate=int(self.np_rand.integers(0, m)) * hashed)

    def affine_addresses(self):
        """Eq. 10: ``A_n = A_0 + sum_i c_i bit_i(n)`` with random small c_i (0 = broadcast)."""
        c = self.np_rand.integers(0, 3 * self.lanes, self.bits)
        c[self.np_rand.random(self.bits) < 0.15] = 0
        n = np.arange(self.lanes)
        a0 = int(self.np_rand.integers(0, 4 * self.lanes * self.lanes))
        return a0 + sum(int(ci) * ((n >> i) & 1) for i, ci in enumerate(c))

    def request(self, banks, rows=None, kind="paper"):
        """A self-routed vector for lanes reading ``banks`` (and ``rows``)."""
        row_bits = self.cfg.get("row_bits", 0)
        rows = rows if row_bits else None
        if rows is not None:
            rows = np.asarray(rows) & ((1 << row_bits) - 1)
        words = self.words()
        result = route(banks, rows)
        reads = list(zip(np.asarray(banks).tolist(),
                         np.zeros(self.lanes, int).tolist() if rows is None else rows.tolist(),
                         strict=True))
        self.cover(kind, result.conflict, len(set(reads)) < len(reads), result.select)
        want = None if result.conflict else butterfly(words, result.select).tolist()
        return self.pack(words, banks=banks, rows=rows), want, int(result.conflict)

    def random_vector(self):
        if self.cfg["routing"] == "select":
            select = self.np_rand.integers(0, 1 << self.lanes, self.bits).tolist()
            words = self.words()
            sel = [[(s >> p) & 1 for p in range(self.lanes)] for s in select]
            self.cover("select", False, False, sel)
            return self.pack(words, select=select), butterfly(words, sel).tolist(), 0
        kind = self.np_rand.integers(0, 3)
        if kind == 0:
            bank = self.random_bank_function()
            banks, rows = bank.locate(self.affine_addresses())
        elif kind == 1:
            banks = self.np_rand.integers(0, self.lanes, self.lanes)
            rows = self.np_rand.integers(0, 4, self.lanes)
        else:
            banks = np.arange(self.lanes) ^ int(self.np_rand.integers(0, self.lanes))
            rows = np.zeros(self.lanes, int)
        return self.request(banks, rows, ("affine", "random", "permutation")[kind])

    def cover(self, kind, conflict, multicast, select):
        """Functional coverage of one request (``funcov.route_case``)."""
        swaps = sum(bool(np.any(stage)) for stage in np.asarray(select))
        funcov.route_case(kind, bool(conflict), multicast, int(swaps), self.bits)


@cocotb.test()
async def random_requests(dut):
    """Random requests against the model, with backpressure on both streams."""
    tb = TB(dut)
    count = tb.cfg.get("vectors", 300)
    conflicts = await tb.run([tb.random_vector() for _ in range(count)])
    record_metric("vectors", count)
    record_metric("conflicts", conflicts)
    record_metric("coverage", funcov.export("butterfly"))


@cocotb.test(skip=bench_config().get("routing") != "self")
async def paper_cases(dut):
    """Fig. 6 / Eq. 10-16 patterns for every A_0 of a period, and one pattern that cannot be
    routed (its conflict flag must rise)."""
    tb = TB(dut)
    n = np.arange(tb.lanes)
    vectors = []
    cases = [((1, 2, 6), BankFunction(tb.lanes)), ((1, 2, 12), BankFunction(tb.lanes)),
             ((1, 6, 12), BankFunction(tb.lanes))]
    if tb.lanes == 8:
        cases.append(((4, 8, 3), BankFunction(8, xor=(None, 2, 3), rotate=1)))
    for coeffs, bank in cases:
        for a0 in range(2 * tb.lanes):
            addresses = a0 + sum(c * ((n >> i) & 1) for i, c in enumerate(coeffs))
            vectors.append(tb.request(*bank.locate(addresses)))
    # lane bits 0 and 1 swapped (banks 0, 2, 1, 3, ...): a permutation the butterfly blocks
    blocked = (n & ~3) | ((n & 1) << 1) | ((n >> 1) & 1)
    assert route(blocked).conflict
    vectors.append(tb.request(blocked, np.zeros(tb.lanes, int)))
    conflicts = await tb.run(vectors)
    assert conflicts >= 1
    record_metric("coverage", funcov.export("butterfly"))


# ---- pytest side: build the model and run the cocotb tests above ----


def field_offsets(layout):
    return {name: field.offset for name, field in layout}


def _butterfly_config(dut, **extra):
    return dict(lanes=dut.lanes, width=dut.width, signed=dut.word_shape.signed,
                routing=dut.routing, row_bits=dut.row_bits, clocked=dut.latency > 0,
                **{"in": field_offsets(dut.i.payload.shape()),
                   "out": field_offsets(dut.o.payload.shape())},
                **extra)


BUTTERFLIES = [
    pytest.param(dict(lanes=8, routing="select", pipelined=True), id="n8-select-pipelined"),
    pytest.param(dict(lanes=8, routing="self", pipelined=False, row_bits=3), id="n8-self-rows"),
    pytest.param(dict(lanes=8, routing="self", pipelined=True, signed=False, width=12),
                 id="n8-self-pipelined-u12"),
    # the 32-lane smoke of make test is the Compute Pipeline's (verif/test_sequencer.py); the
    # 32-lane router runs in test_router_matches_the_model
    pytest.param(dict(lanes=32, routing="self", pipelined=True), id="n32-self-pipelined",
                 marks=pytest.mark.slow),
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
    metrics = run_bench(dut, bench="test_butterfly", config=config)
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
