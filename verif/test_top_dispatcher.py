"""cocotb bench of the dispatcher (meritz.dispatcher.Dispatcher) with model TAUs.

Each model TAU accepts tiles at random (random ``ready``), queues up to ``depth`` of them and
spends a random latency on each; its ``idle`` obeys the TAU contract (low from the cycle after a
transfer until its last tile is done). Checks, for each tile grid: every tile of the grid (computed
here with ``range``, independently of the RTL walk) is handed out exactly once, ``finished``
pulses once, only when every model TAU is idle, ``count`` equals the number of tiles, and a stop
in the middle empties every slot.

The pytest side. The dispatcher on the Verilator model: every tile exactly once for 1, 2 and 4 TAUs.
"""

import itertools

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from harness import run_bench
from merit.sim.benchlib import bench_config, rng, setup
from meritz import kernelcfg
from meritz.dispatcher import Dispatcher

P = kernelcfg.P_INDICES

GRIDS = [
    # (p_size, p_tile): edge tiles, several indices, one tile, many small tiles
    ([1, 1, 1, 1, 5, 13], [1, 1, 1, 1, 2, 4]),
    ([2, 1, 3, 1, 4, 8], [1, 1, 2, 1, 4, 8]),
    ([1, 1, 1, 1, 1, 8], [1, 1, 1, 1, 1, 8]),
    ([3, 2, 1, 2, 1, 3], [1, 1, 1, 1, 1, 1]),
    ([1, 1, 1, 1, 7, 40], [1, 1, 1, 1, 8, 16]),
]


def grid_tiles(size, tile):
    return list(itertools.product(*(range(0, s, t) for s, t in zip(size, tile, strict=True))))


class ModelTau:
    def __init__(self, tb, i):
        self.tb, self.i = tb, i
        self.queue = []
        self.busy_until = 0
        self.depth = tb.rand.randint(1, 3)
        self.ready_p = tb.rand.choice([0.3, 0.7, 1.0])
        self.latency = tb.rand.choice([(1, 5), (5, 40), (20, 120)])
        self.stream = (getattr(tb.dut, f"tiles__{i}__valid"), getattr(tb.dut, f"tiles__{i}__ready"),
                       getattr(tb.dut, f"tiles__{i}__payload"))

    @property
    def idle(self):
        return not self.queue


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = bench_config()
        self.rand = rng()
        self.n = self.cfg["taus"]
        self.taus = [ModelTau(self, i) for i in range(self.n)]
        self.handed = []
        self.finished = 0
        self.cycle = 0
        dut.run.value = 0
        dut.stop.value = 0
        dut.idle.value = (1 << self.n) - 1
        for tau in self.taus:
            tau.stream[1].value = 0

    async def start(self):
        await setup(self.dut)
        cocotb.start_soon(self._taus())

    async def _taus(self):
        """Drive ready / idle of every model TAU, one clock at a time."""
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1
            if int(self.dut.finished.value):
                self.finished += 1
                assert all(t.idle for t in self.taus), "finished while a TAU is busy"
            for tau in self.taus:
                valid, ready, payload = tau.stream
                if int(valid.value) and int(ready.value):
                    word = int(payload.value)
                    origin = tuple((word >> (16 * j)) & 0xFFFF for j in range(P))
                    self.handed.append((origin, tau.i))
                    tau.queue.append(origin)
                    if len(tau.queue) == 1:
                        tau.busy_until = self.cycle + self.rand.randint(*tau.latency)
                if tau.queue and self.cycle >= tau.busy_until:
                    tau.queue.pop(0)
                    if tau.queue:
                        tau.busy_until = self.cycle + self.rand.randint(*tau.latency)
                ready.value = int(len(tau.queue) < tau.depth and self.rand.random() < tau.ready_p)
            self.dut.idle.value = sum(int(t.idle) << t.i for t in self.taus)

    async def run(self, size, tile, **fields):
        """One run of the grid ``size`` in tiles ``tile`` (other configuration ``fields`` as
        given), to its ``finished``."""
        self.dut.config.value = kernelcfg.pack({"p_size": size, "p_tile": tile, **fields})
        self.handed.clear()
        self.finished = 0
        await RisingEdge(self.dut.clk)
        self.dut.run.value = 1
        await RisingEdge(self.dut.clk)
        self.dut.run.value = 0
        for _ in range(200000):
            await RisingEdge(self.dut.clk)
            if self.finished:
                break
        assert self.finished == 1, f"no finish for {size} / {tile} / {fields}"

    def per_tau(self):
        """The origins each TAU was handed, in order."""
        return [[o for o, i in self.handed if i == t] for t in range(self.n)]


@cocotb.test()
async def every_tile_exactly_once(dut):
    tb = TB(dut)
    await tb.start()
    per_tau = [0] * tb.n
    for size, tile in GRIDS:
        await tb.run(size, tile)
        expected = grid_tiles(size, tile)
        origins = [o for o, _ in tb.handed]
        assert sorted(origins) == sorted(expected), f"{size} / {tile}"
        assert len(set(origins)) == len(origins)
        assert int(dut.count.value) == len(expected)
        await ClockCycles(dut.clk, 3)
        assert tb.finished == 1 and not int(dut.busy.value)
        for _, i in tb.handed:
            per_tau[i] += 1
    dut._log.info("tiles per TAU: %s", per_tau)
    if tb.n > 1:
        assert min(per_tau) > 0, f"a TAU got no tile: {per_tau}"


@cocotb.test()
async def stop_empties_the_slots(dut):
    tb = TB(dut)
    await tb.start()
    dut.config.value = kernelcfg.pack({"p_size": [1, 1, 1, 1, 30, 30],
                                       "p_tile": [1, 1, 1, 1, 1, 1]})
    dut.run.value = 1
    await RisingEdge(dut.clk)
    dut.run.value = 0
    await ClockCycles(dut.clk, tb.rand.randrange(20, 200))
    dut.stop.value = 1
    await RisingEdge(dut.clk)
    dut.stop.value = 0
    await RisingEdge(dut.clk)
    handed = len(tb.handed)
    assert 0 < handed < 900
    for _ in range(300):
        await RisingEdge(dut.clk)
        assert not int(dut.busy.value)
        assert not any(int(t.stream[0].value) for t in tb.taus)
    assert len(tb.handed) == handed and tb.finished == 0
    await tb.run([1, 1, 1, 1, 2, 3], [1, 1, 1, 1, 1, 1])       # usable again
    assert sorted(o for o, _ in tb.handed) == grid_tiles([1, 1, 1, 1, 2, 3], [1] * 6)


#: (p_size, p_tile, indices the shared slot moves along): edge tiles on one or both inner
#: indices, a run shorter than a group, a shared index of one tile, an inner shared index
SHARED_GRIDS = [
    ([1, 1, 1, 3, 13, 13], [1, 1, 1, 1, 4, 2], (3,)),
    ([1, 1, 2, 1, 5, 7], [1, 1, 1, 1, 2, 3], (2,)),
    ([1, 1, 1, 1, 13, 5], [1, 1, 1, 1, 5, 1], (0,)),
    ([1, 2, 2, 1, 3, 5], [1, 1, 2, 1, 2, 2], (2, 5)),
]


def shared_units(size, tile, dep, group, order):
    """The units a group of ``group`` TAUs is dealt, computed here from the order's one home
    (``merit.compile.share_order_key``, ``share_order`` = ``order``) and the dispatcher's rule:
    the next tile for the first TAU, the next while it agrees on ``dep`` for each other, else a
    void tile."""
    from merit.compile import share_order_key
    tiles = sorted(grid_tiles(size, tile), key=share_order_key(size, tile, dep, bool(order)))
    units, k = [], 0
    while k < len(tiles):
        unit = [tiles[k]]
        k += 1
        for _ in range(group - 1):
            if k < len(tiles) and all(tiles[k][j] == unit[0][j] for j in dep):
                unit.append(tiles[k])
                k += 1
            else:
                unit.append(tuple(unit[0][j] if j in dep else size[j] for j in range(P)))
        units.append(unit)
    return units


@cocotb.test()
async def groups_take_whole_tiles_first(dut):
    """1-D sharing: each group's k-th unit is the next unit of the order (``share_order`` 1:
    whole tiles of a run first, then its edge tiles; 0: the grid's), each member its tile of the
    unit; every tile exactly once."""
    tb = TB(dut)
    await tb.start()
    for log2, order in itertools.product(range(1, tb.n.bit_length()), (1, 0)):
        g = 1 << log2
        for size, tile, dep in SHARED_GRIDS:
            stride = [int(j in dep) for j in range(P)] + [0] * (kernelcfg.INDICES - P)
            await tb.run(size, tile, share_slot=0, share_log2=log2, share_order=order,
                         rp0=[{"enable": 1, "stride": stride}])
            got = tb.per_tau()
            dealt = []
            for first in range(0, tb.n, g):
                members = got[first:first + g]
                assert len({len(m) for m in members}) == 1, f"uneven group {members}"
                dealt += [[m[k] for m in members] for k in range(len(members[0]))]
            expected = shared_units(size, tile, dep, g, order)
            assert sorted(dealt) == sorted(expected), f"{size} / {tile} / {dep} / {g}"
            for first in range(0, tb.n, g):     # each group in the order's sequence
                mine = [[m[k] for m in got[first:first + g]] for k in range(len(got[first]))]
                at = [expected.index(u) for u in mine]
                assert at == sorted(at), f"{size} / {tile} / {dep}: group {first} out of order"
            assert int(dut.count.value) == len(grid_tiles(size, tile))


def block_units(size, tile, dep, group):
    """The units a group of ``group`` TAUs is dealt on the block walk with one shared slot
    (``share_block``), computed here from the walk's one home (``merit.compile.share_walk``:
    ``X`` the indices the slot does not move along, ``R`` the rest): at each point of ``R``
    (row-major), ``group`` consecutive tiles of the row-major walk over ``X``, member ``x`` the
    ``x``-th; past the end of the walk a void tile (``X`` at ``p_size``)."""
    from merit.compile import share_walk
    xs, ys, rs = share_walk(P, [set(dep)])
    assert not ys
    steps = [range(0, size[j], tile[j]) for j in range(P)]
    units = []
    for r in itertools.product(*(steps[j] for j in rs)):
        walk = list(itertools.product(*(steps[j] for j in xs)))
        for x0 in range(0, len(walk), group):
            unit = []
            for x in range(x0, x0 + group):
                origin = [0] * P
                for j, v in zip(rs, r, strict=True):
                    origin[j] = v
                for m, j in enumerate(xs):
                    origin[j] = walk[x][m] if x < len(walk) else size[j]
                unit.append(tuple(origin))
            units.append(unit)
    return units


@cocotb.test()
async def block_walk_with_one_shared_slot(dut):
    """``share_block``: each group's k-th unit is the next unit of the block walk
    (:func:`block_units`), member ``x`` of every group its ``x``-th tile (void tiles past the
    end of the walk over ``X``); every tile of the grid exactly once; groups only whole."""
    tb = TB(dut)
    await tb.start()
    for log2 in range(1, tb.n.bit_length()):
        g = 1 << log2
        for size, tile, dep in SHARED_GRIDS:
            stride = [int(j in dep) for j in range(P)] + [0] * (kernelcfg.INDICES - P)
            await tb.run(size, tile, share_slot=0, share_log2=log2, share_block=1,
                         share_order=1, rp0=[{"enable": 1, "stride": stride}])
            got = tb.per_tau()
            whole = tb.n - tb.n % g
            assert not any(got[whole:]), f"a TAU outside the whole groups got tiles: {got}"
            expected = block_units(size, tile, dep, g)
            dealt = []
            for first in range(0, whole, g):
                members = got[first:first + g]
                assert len({len(m) for m in members}) == 1, f"uneven group {members}"
                mine = [[m[k] for m in members] for k in range(len(members[0]))]
                at = [expected.index(u) for u in mine]
                assert at == sorted(at), f"{size} / {tile} / {dep}: group {first} out of order"
                dealt += mine
            assert sorted(dealt) == sorted(expected), f"{size} / {tile} / {dep} / {g}"
            assert int(dut.count.value) == len(grid_tiles(size, tile))


# ---- pytest side: build the model and run the cocotb tests above ----


@pytest.mark.sim
@pytest.mark.parametrize("taus", [1, 2, 4, pytest.param(8, marks=pytest.mark.slow)])
def test_dispatcher(taus):
    """8 TAUs (the model takes three times as long to build as 4) run in ``make regress``, with
    the 8-TAU top of ``test_top_kernel``."""
    run_bench(Dispatcher(taus=taus), bench="test_top_dispatcher", config={"taus": taus})
