"""Amaranth-level tests of ``meritz.tau.rp.banks``: parameter checks, the bank arbitration, the tile
FIFO life cycle and the bank module interface. The random Verilator bench is
``verif/test_banks.py``."""

import re

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from meritz.tau.rp.banks import BankedSram, SramBank, TileBuffer, TileFifo


@pytest.mark.parametrize("cls, params, error, message", [
    (TileBuffer, {"lanes": 24, "depth": 16}, ValueError,
     "lanes must be a power of two of at least 2, not 24"),
    (TileBuffer, {"lanes": "8", "depth": 16}, TypeError, "lanes must be an integer, not '8'"),
    (TileBuffer, {"lanes": 8, "depth": 200}, ValueError, "depth must be a power of two, not 200"),
    (TileBuffer, {"lanes": 8, "depth": 1}, ValueError, "depth must be between 2 and 32768, not 1"),
    (TileBuffer, {"lanes": 8, "depth": 2 ** 16}, ValueError,
     "depth must be between 2 and 32768, not 65536"),
    (TileBuffer, {"lanes": 8, "depth": 16.0}, TypeError, "depth must be an integer, not 16.0"),
    (TileBuffer, {"lanes": 8, "depth": 16, "width": 0}, ValueError,
     "width must be a positive integer, not 0"),
    (TileBuffer, {"lanes": 8, "depth": 16, "ports": 3}, ValueError,
     r"ports must be 1 \(single-port\) or 2 \(two-port\), not 3"),
    (TileBuffer, {"lanes": 8, "depth": 16, "max_tiles": 6}, ValueError,
     "max_tiles must be a power of two, not 6"),
    (TileBuffer, {"lanes": 8, "depth": 16, "bank_macro": "my sram"}, ValueError,
     "bank_macro must be None or a Verilog module name, not 'my sram'"),
    (TileFifo, {"lanes": 8, "depth": 48}, ValueError, "depth must be a power of two, not 48"),
    (BankedSram, {"lanes": 1, "depth": 16}, ValueError,
     "lanes must be a power of two of at least 2, not 1"),
    (BankedSram, {"lanes": 8, "depth": 16, "width": True}, TypeError,
     "width must be an integer, not True"),
    (SramBank, {"depth": 100}, ValueError, "depth must be a power of two, not 100"),
])
@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_bad_parameters_are_refused(cls, params, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        cls(**params)


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


async def _transfer(ctx, stream, payload):
    """Offer ``payload`` on ``stream`` and return after its transfer (cycles waited)."""
    ctx.set(stream.payload, payload)
    ctx.set(stream.valid, 1)
    waited = 0
    while True:
        _, _, ready = await ctx.tick().sample(stream.ready)
        if ready:
            break
        waited += 1
    ctx.set(stream.valid, 0)
    return waited


async def _receive(ctx, stream):
    ctx.set(stream.ready, 1)
    while True:
        _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
        if valid:
            ctx.set(stream.ready, 0)
            return payload


def _words(payload):
    return [int(word) for word in payload]


@pytest.mark.parametrize("ports", [1, 2])
def test_banked_sram_arbitration(ports):
    dut = BankedSram(lanes=4, depth=8, ports=ports)

    async def bench(ctx):
        ctx.set(dut.rdata.ready, 1)
        # one row, different row per bank
        assert await _transfer(ctx, dut.write, {"en": 0b1111, "row": [1, 2, 3, 4],
                                                "data": [10, -20, 30, -40]}) == 0
        # read two banks, the others disabled: they read as 0
        await _transfer(ctx, dut.read, {"en": 0b0101, "row": [1, 0, 3, 0]})
        assert ctx.get(dut.rdata.valid)
        assert _words(ctx.get(dut.rdata.payload)) == [10, 0, 30, 0]
        await ctx.tick()
        assert not ctx.get(dut.rdata.valid)

        # a read and a write on one bank in the same cycle: single-port banks let the write go
        # first and the read waits one cycle; two-port banks serve both (the read sees old data)
        ctx.set(dut.write.payload, {"en": 0b0001, "row": [1, 0, 0, 0], "data": [11, 0, 0, 0]})
        ctx.set(dut.write.valid, 1)
        ctx.set(dut.read.payload, {"en": 0b0011, "row": [1, 2, 0, 0]})
        ctx.set(dut.read.valid, 1)
        assert ctx.get(dut.write.ready)
        assert ctx.get(dut.read.ready) == (ports == 2)
        await ctx.tick()
        ctx.set(dut.write.valid, 0)
        if ports == 1:
            assert ctx.get(dut.read.ready)
            await ctx.tick()
        ctx.set(dut.read.valid, 0)
        assert _words(ctx.get(dut.rdata.payload)) == ([11, -20, 0, 0] if ports == 1
                                                      else [10, -20, 0, 0])

        # disjoint banks go together
        ctx.set(dut.write.payload, {"en": 0b1000, "row": [0, 0, 0, 4], "data": [0, 0, 0, 44]})
        ctx.set(dut.write.valid, 1)
        ctx.set(dut.read.payload, {"en": 0b0100, "row": [0, 0, 3, 0]})
        ctx.set(dut.read.valid, 1)
        assert ctx.get(dut.read.ready)
        await ctx.tick()
        ctx.set(dut.write.valid, 0)
        ctx.set(dut.read.valid, 0)
        assert _words(ctx.get(dut.rdata.payload)) == [0, 0, 30, 0]

        # backpressure: the words hold while a write hits the same bank, and no read is taken
        ctx.set(dut.rdata.ready, 0)
        await ctx.tick()
        ctx.set(dut.write.payload, {"en": 0b0100, "row": [0, 0, 3, 0], "data": [0, 0, 33, 0]})
        ctx.set(dut.write.valid, 1)
        ctx.set(dut.read.payload, {"en": 0b0001, "row": [1, 0, 0, 0]})
        ctx.set(dut.read.valid, 1)
        assert not ctx.get(dut.read.ready)
        await ctx.tick()
        ctx.set(dut.write.valid, 0)
        assert ctx.get(dut.rdata.valid)
        assert _words(ctx.get(dut.rdata.payload)) == [0, 0, 30, 0]
        ctx.set(dut.rdata.ready, 1)
        assert ctx.get(dut.read.ready)
        await ctx.tick()
        ctx.set(dut.read.valid, 0)
        assert _words(ctx.get(dut.rdata.payload)) == [11, 0, 0, 0]

    _run(dut, bench)


def test_tile_fifo_life_cycle():
    lanes, depth = 2, 8
    dut = TileFifo(lanes=lanes, depth=depth, max_tiles=2)

    async def bench(ctx):
        assert ctx.get(dut.empty) and not ctx.get(dut.full)
        ctx.set(dut.grant.ready, 1)
        await _transfer(ctx, dut.alloc, 5)
        assert ctx.get(dut.grant.payload) == {"base": 0, "rows": 5, "error": 0}
        # refused at once: larger than the SRAM, and empty
        for rows in (9, 0):
            await _transfer(ctx, dut.alloc, rows)
            assert ctx.get(dut.grant.payload) == {"base": 0, "rows": rows, "error": 1}
        assert ctx.get(dut.used) == 5 and not ctx.get(dut.empty)
        # 4 rows do not fit in the 3 free ones: the request waits
        ctx.set(dut.alloc.payload, 4)
        ctx.set(dut.alloc.valid, 1)
        await ctx.tick().repeat(3)
        assert not ctx.get(dut.alloc.ready)
        ctx.set(dut.alloc.valid, 0)
        assert ctx.get(dut.fill) == {"base": 0, "rows": 5}
        assert ctx.get(dut.readable) == {"base": 0, "rows": 0}

        # the tile commits on its 10th word, not before
        ctx.set(dut.filled, 2)
        await ctx.tick().repeat(4)
        assert not ctx.get(dut.committed.valid)
        ctx.set(dut.filled, 1)
        await ctx.tick()
        assert not ctx.get(dut.committed.valid)
        await ctx.tick()
        ctx.set(dut.filled, 0)
        assert ctx.get(dut.readable) == {"base": 0, "rows": 5}
        assert ctx.get(dut.fill)["rows"] == 0
        # free waits for the announcement
        assert not ctx.get(dut.free.ready)
        assert await _receive(ctx, dut.committed) == {"base": 0, "rows": 5}
        assert ctx.get(dut.free.ready)

        # a second tile of 3 rows fills the SRAM, a third waits (full)
        await _transfer(ctx, dut.alloc, 3)
        assert ctx.get(dut.grant.payload) == {"base": 5, "rows": 3, "error": 0}
        assert ctx.get(dut.full) and ctx.get(dut.used) == depth
        # freeing names the oldest tile; another row frees nothing
        ctx.set(dut.free.payload, 5)
        ctx.set(dut.free.valid, 1)
        assert ctx.get(dut.misfree)
        await ctx.tick()
        ctx.set(dut.free.valid, 0)
        assert ctx.get(dut.used) == depth
        await _transfer(ctx, dut.free, 0)
        assert ctx.get(dut.used) == 3 and not ctx.get(dut.full)
        # wrap-around: 4 rows from row 0 of the next lap... after the 3-row tile at rows 5-7
        await _transfer(ctx, dut.alloc, 4)
        assert ctx.get(dut.grant.payload) == {"base": 0, "rows": 4, "error": 0}
        # max_tiles = 2 live tiles: full although rows are free
        assert ctx.get(dut.full) and ctx.get(dut.used) == 7

    _run(dut, bench)


def test_tile_buffer_gates_reads_and_writes():
    dut = TileBuffer(lanes=2, depth=4)

    async def bench(ctx):
        ctx.set(dut.grant.ready, 1)
        ctx.set(dut.rdata.ready, 1)
        await _transfer(ctx, dut.alloc, 3)
        await _transfer(ctx, dut.alloc, 1)
        assert ctx.get(dut.grant.payload) == {"base": 3, "rows": 1, "error": 0}
        # a write into the second tile while the first is filling: dropped, flagged
        await _transfer(ctx, dut.write, {"en": 0b01, "row": [3, 0], "data": [99, 0]})
        assert ctx.get(dut.errors) == {"read": 0, "write": 1, "alloc": 0, "free": 0}
        ctx.set(dut.clear_errors, 1)
        await ctx.tick()
        ctx.set(dut.clear_errors, 0)
        assert ctx.get(dut.errors) == {"read": 0, "write": 0, "alloc": 0, "free": 0}
        # fill the first tile except one word; reading it is refused with zeros
        for row in range(3):
            await _transfer(ctx, dut.write, {"en": 0b11 if row else 0b10, "row": [row, row],
                                             "data": [row + 1, -row - 1]})
        await _transfer(ctx, dut.read, {"en": 0b10, "row": [0, 1]})
        assert _words(ctx.get(dut.rdata.payload)) == [0, 0]
        assert ctx.get(dut.errors.read)
        await _transfer(ctx, dut.write, {"en": 0b01, "row": [0, 0], "data": [1, 0]})
        await ctx.tick()
        # committed: reads see the words
        await _transfer(ctx, dut.read, {"en": 0b11, "row": [2, 1]})
        assert _words(ctx.get(dut.rdata.payload)) == [3, -2]

    _run(dut, bench)


def test_bank_module_ports():
    """The emitted bank model and the ``bank_macro`` instances agree on the port names."""
    model = verilog.convert(SramBank(depth=8), name="my_sram", emit_src=False)
    header = re.search(r"module my_sram\((.*?)\);", model).group(1)
    assert sorted(header.split(", ")) == sorted(["clk", "rst", "en", "we", "addr", "wdata",
                                                 "rdata"])
    text = verilog.convert(BankedSram(lanes=2, depth=8, bank_macro="my_sram"), name="top",
                           emit_src=False)
    instances = re.findall(r"my_sram bank\d+ \((.*?)\);", text, re.S)
    assert len(instances) == 2
    for body in instances:
        assert sorted(re.findall(r"\.(\w+)\(", body)) == sorted(header.split(", "))


def test_smallest_legal_parameters_are_accepted():
    TileBuffer(lanes=2, depth=2, max_tiles=1)
    TileFifo(lanes=2, depth=2, max_tiles=1)


def test_tiles_fill_in_allocation_order_on_one_port():
    # three tiles of 1, 2 and 1 rows, filled one after the other (each write names its tile's
    # rows), each read back after its commit; the default buffer is single-port: a read and a
    # write on one bank in one cycle take turns, the write first
    dut = TileBuffer(lanes=2, depth=4)

    async def bench(ctx):
        ctx.set(dut.grant.ready, 1)
        ctx.set(dut.rdata.ready, 1)
        bases = []
        for rows in (1, 2, 1):
            await _transfer(ctx, dut.alloc, rows)
            bases.append(ctx.get(dut.grant.payload.base))
        assert bases == [0, 1, 3]
        await _transfer(ctx, dut.write, {"en": 0b11, "row": [0, 0], "data": [1, -1]})
        await ctx.tick()
        # tile 1 fills while tile 0 is read: the banks take a write the cycle after its
        # transfer, and a read of the same bank in that cycle waits one cycle (writes first);
        # a read beside the transfer itself goes
        ctx.set(dut.write.payload, {"en": 0b01, "row": [1, 0], "data": [2, 0]})
        ctx.set(dut.write.valid, 1)
        ctx.set(dut.read.payload, {"en": 0b01, "row": [0, 0]})
        ctx.set(dut.read.valid, 1)
        assert ctx.get(dut.write.ready) and ctx.get(dut.read.ready)
        await ctx.tick()
        ctx.set(dut.write.valid, 0)
        assert _words(ctx.get(dut.rdata.payload)) == [1, 0]
        assert not ctx.get(dut.read.ready)
        await ctx.tick()
        assert ctx.get(dut.read.ready)
        await ctx.tick()
        ctx.set(dut.read.valid, 0)
        assert _words(ctx.get(dut.rdata.payload)) == [1, 0]
        for en, row, data in ((0b10, [0, 1], [0, -2]), (0b11, [2, 2], [3, -3]),
                              (0b11, [3, 3], [4, -4])):
            await _transfer(ctx, dut.write, {"en": en, "row": row, "data": data})
        await ctx.tick()
        for row, expect in ((0, [1, -1]), (1, [2, -2]), (2, [3, -3]), (3, [4, -4])):
            await _transfer(ctx, dut.read, {"en": 0b11, "row": [row, row]})
            assert _words(ctx.get(dut.rdata.payload)) == expect, row
        assert ctx.get(dut.errors) == {"read": 0, "write": 0, "alloc": 0, "free": 0}

    _run(dut, bench)


def test_inside_matches_the_modular_definition():
    """``_inside`` (two comparisons with the region's ends) against ``(row - base) mod depth <
    rows``, for every row, base and size of a depth-8 SRAM."""
    from amaranth import Module, Signal
    from amaranth.lib import data

    from meritz.tau.rp.banks import _inside, sram_tile_layout

    depth = 8
    m = Module()
    row, end = Signal(3), Signal(3)
    region = Signal(sram_tile_layout(depth))
    out = Signal()
    m.d.comb += out.eq(_inside(row, region, end))
    assert isinstance(region, data.View)

    async def bench(ctx):
        for base in range(depth):
            for rows in range(depth + 1):
                ctx.set(region, {"base": base, "rows": rows})
                ctx.set(end, (base + rows) % depth)
                for r in range(depth):
                    ctx.set(row, r)
                    assert ctx.get(out) == int((r - base) % depth < rows), (base, rows, r)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("max_tiles", [1, 2, 4])
def test_tile_fifo_region_ends_follow_the_regions(max_tiles):
    """Random allocations, fills and frees: ``fill_end`` / ``readable_end`` are ``base + rows``
    modulo the depth of their region whenever it is not empty."""
    import random

    lanes, depth = 2, 16
    dut = TileFifo(lanes=lanes, depth=depth, max_tiles=max_tiles)
    rng = random.Random(max_tiles)

    async def bench(ctx):
        ctx.set(dut.grant.ready, 1)
        ctx.set(dut.committed.ready, 1)
        announced, checked = [], 0
        for _ in range(1500):
            ctx.set(dut.alloc.valid, rng.random() < 0.3)
            ctx.set(dut.alloc.payload, rng.choice([1, 2, 3, 5, 7, 16, 0, 17]))
            ctx.set(dut.filled, rng.choice([0, 1, 2]))
            ctx.set(dut.free.valid, bool(announced) and rng.random() < 0.2)
            ctx.set(dut.free.payload, announced[0] if announced else 0)
            for region, end in ((dut.fill, dut.fill_end), (dut.readable, dut.readable_end)):
                r = ctx.get(region)
                if r["rows"]:
                    assert ctx.get(end) == (r["base"] + r["rows"]) % depth, (region, r)
                    checked += 1
            _, _, c_valid, c_payload, f_go = await ctx.tick().sample(
                dut.committed.valid, dut.committed.payload, dut.free.ready)
            if c_valid:
                announced.append(c_payload["base"])
            if ctx.get(dut.free.valid) and f_go:
                announced.pop(0)
        assert checked > 500

    _run(dut, bench)


def test_two_port_read_behind_a_write_sees_its_word():
    """Two-port banks take a write the cycle after its transfer; a read of that bank and row in
    that cycle returns the new word (the held word takes the bank's old one), another row or
    bank the bank's word, and a refused read zeros."""
    dut = TileBuffer(lanes=2, depth=4, ports=2)

    async def bench(ctx):
        ctx.set(dut.grant.ready, 1)
        ctx.set(dut.rdata.ready, 1)
        await _transfer(ctx, dut.alloc, 2)
        await _transfer(ctx, dut.alloc, 1)
        # tile 0 (rows 0-1) whole; its last row written back to back with reads of it
        await _transfer(ctx, dut.write, {"en": 0b11, "row": [0, 0], "data": [1, -1]})
        await _transfer(ctx, dut.write, {"en": 0b11, "row": [1, 1], "data": [2, -2]})
        # the cycle after the last word: committed, and its row is still in the held write
        ctx.set(dut.write.valid, 0)
        ctx.set(dut.read.payload, {"en": 0b11, "row": [1, 0]})
        ctx.set(dut.read.valid, 1)
        assert ctx.get(dut.read.ready)
        await ctx.tick()
        ctx.set(dut.read.valid, 0)
        assert _words(ctx.get(dut.rdata.payload)) == [2, -1]
        # a write into tile 1 (row 2) and, in the next cycle, a read of it (not committed:
        # refused, zeros) beside a read of row 1
        await _transfer(ctx, dut.write, {"en": 0b01, "row": [2, 0], "data": [3, 0]})
        ctx.set(dut.write.valid, 0)
        ctx.set(dut.read.payload, {"en": 0b01, "row": [2, 0]})
        ctx.set(dut.read.valid, 1)
        await ctx.tick()
        ctx.set(dut.read.valid, 0)
        assert _words(ctx.get(dut.rdata.payload)) == [0, 0]
        assert ctx.get(dut.errors.read)
        assert ctx.get(dut.errors.write) == 0

    _run(dut, bench)
