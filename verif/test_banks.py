"""cocotb bench of :class:`meritz.tau.rp.banks.TileBuffer`: the banked SRAM used as a circular tile
FIFO.

One coroutine runs the bench cycle by cycle: it drives every input stream (random valid gaps on
the sources, random ready on the sinks, payloads held until their transfer), then, in the
read-only phase, checks every output against :class:`TileFifoModel` and applies the cycle's
transfers to the model. The golden model has no SRAM, so the reference is the small model below:
allocate / commit / free bookkeeping plus the memory contents. Stimulus and backpressure come from
the bench seed, which the harness logs.

Proved on every cycle: grants at the expected rows (wrap-around included) and only when the space
is free, refusal of a tile larger than the SRAM, commit exactly when the last word of a tile has
arrived, reads of anything but committed tiles answered with zeros and flagged, writes outside the
tile being filled dropped and flagged (so data of live tiles survive, checked by every later read),
full / empty / used, the single-port arbitration (a write reaches the banks the cycle after its
transfer and wins them then), and the stream rules of the outputs.

The pytest side. Verilator runs of the tile buffer bench (``test_banks``).

CI (``make test``): 8 lanes with single-port banks, and a 32-lane RP1-sized smoke run. The
regression (``make regress``) adds two-port banks, the RP0 size and longer runs.
"""

import os
import subprocess
from collections import deque
from dataclasses import dataclass

import cocotb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from harness import VERILATOR_ARGS, run_bench
from merit.sim.benchlib import (
    bench_config,
    pack_lanes,
    pause_generator,
    record_metric,
    rng,
    setup,
    unpack_lanes,
)
from merit.sim.toolchain import verilator_env
from meritz.emit import to_verilog
from meritz.tau.rp.banks import SramBank, TileBuffer

REQUEST_BITS = 16


@dataclass
class Tile:
    base: int
    rows: int
    words: int = 0
    committed: bool = False
    announced: bool = False

    def row_set(self, depth):
        return {(self.base + k) % depth for k in range(self.rows)}


class TileFifoModel:
    """The tile FIFO at the level of one clock cycle: state at the start of the cycle, and the
    update by the transfers of that cycle."""

    def __init__(self, *, lanes, depth, width, ports, max_tiles):
        self.lanes, self.depth, self.width = lanes, depth, width
        self.ports, self.max_tiles = ports, max_tiles
        self.tiles = deque()          # live tiles, oldest first
        self.head = 0                 # row of the next allocation
        self.used = 0
        self.grant = None             # (base, rows, error) waiting on the grant stream
        self.rdata = None             # words waiting on the rdata stream
        self.errors = {"read": 0, "write": 0, "alloc": 0, "free": 0}
        self.memory = {}              # (bank, row) -> word
        self.held = 0                 # banks of the legal write of the previous cycle

    # what the outputs must be this cycle
    def full(self):
        return self.used == self.depth or len(self.tiles) == self.max_tiles

    def fill_tile(self):
        return next((t for t in self.tiles if not t.committed), None)

    def announce_tile(self):
        tile = next((t for t in self.tiles if not t.announced), None)
        return tile if tile is not None and tile.committed else None

    def readable_rows(self):
        rows = set()
        for tile in self.tiles:
            if tile.committed:
                rows |= tile.row_set(self.depth)
        return rows

    def refused(self, rows):
        return rows == 0 or rows > self.depth

    def alloc_ready(self, rows, grant_ready):
        slot = self.grant is None or grant_ready
        fits = rows <= self.depth - self.used and len(self.tiles) < self.max_tiles
        return slot and (self.refused(rows) or fits)

    def read_legal(self, en, rows):
        readable = self.readable_rows()
        return all(rows[i] in readable for i in range(self.lanes) if en >> i & 1)

    def write_legal(self, en, rows):
        tile = self.fill_tile()
        inside = tile.row_set(self.depth) if tile is not None else set()
        return all(rows[i] in inside for i in range(self.lanes) if en >> i & 1)

    def read_ready(self, rdata_ready, read):
        # the banks take a write the cycle after its transfer (``held``); a read waits for a
        # single-port bank being written then, whether or not the read is legal
        if self.rdata is not None and not rdata_ready:
            return False
        if self.ports == 2 or read is None:
            return True
        return not read[0] & self.held

    # the transfers of this cycle
    def step(self, *, alloc=None, grant=False, write=None, read=None, rdata=False,
             announce=False, free=None, clear=False):
        # every check below sees the state at the start of the cycle: reads before writes (a write
        # may commit a tile), allocations after frees only for the bookkeeping
        new = {"read": 0, "write": 0, "alloc": 0, "free": 0}
        events = {}
        if grant:
            new["alloc"] = self.grant[2]
            events["granted"] = self.grant
            self.grant = None
        if rdata:
            events["rdata"] = self.rdata
            self.rdata = None
        if read is not None:
            en, rows = read
            if self.read_legal(en, rows):
                self.rdata = [self.memory[i, rows[i]] if en >> i & 1 else 0
                              for i in range(self.lanes)]
            else:
                self.rdata = [0] * self.lanes
                new["read"] = 1
            events["read_legal"] = not new["read"]
        self.held = 0
        if write is not None:
            en, rows, words = write
            if self.write_legal(en, rows):
                self.held = en
                tile = self.fill_tile()
                for i in range(self.lanes):
                    if en >> i & 1:
                        self.memory[i, rows[i]] = words[i]
                        tile.words += 1
                if tile is not None and tile.words == tile.rows * self.lanes:
                    tile.committed = True
                    events["committed"] = tile
            else:
                new["write"] = 1
        if announce:
            self.announce_tile().announced = True
        freed = None
        if free is not None:
            if free == self.tiles[0].base:
                freed = self.tiles.popleft()
                events["freed"] = freed
            else:
                new["free"] = 1
        if alloc is not None:
            if self.refused(alloc):
                self.grant = (0, alloc, 1)
            else:
                tile = Tile(self.head, alloc)
                overlap = tile.row_set(self.depth) & set().union(
                    *(t.row_set(self.depth) for t in self.tiles))
                # the tile freed this cycle still counted as live when the request was checked
                assert freed is None or not tile.row_set(self.depth) & freed.row_set(self.depth)
                assert not overlap, f"model: tile {tile} overlaps live tiles"
                self.tiles.append(tile)
                self.grant = (tile.base, alloc, 0)
                self.head = (self.head + alloc) % self.depth
                self.used += alloc
        if freed is not None:
            self.used -= freed.rows
        for key in self.errors:
            self.errors[key] = (self.errors[key] and not clear) or new[key]
        return events


class Source:
    """A valid/ready source: holds ``payload`` from the cycle it offers it until the transfer."""

    def __init__(self, pause):
        self.pause = pause
        self.item = None

    def offer(self, make):
        """Offer a new item made by ``make()`` (None: nothing to send) unless one is pending."""
        if self.item is None and not next(self.pause):
            self.item = make()
        return self.item


class TB:
    def __init__(self, dut, cfg):
        self.dut = dut
        self.cfg = cfg
        self.lanes, self.depth, self.width = cfg["lanes"], cfg["depth"], cfg["width"]
        self.row_bits = (self.depth - 1).bit_length()
        self.rand = rng()
        self.model = TileFifoModel(lanes=self.lanes, depth=self.depth, width=self.width,
                                   ports=cfg["ports"], max_tiles=cfg["max_tiles"])
        pause = cfg.get("pause", 0.3)
        self.sources = {name: Source(pause_generator(self.rand, pause))
                        for name in ("alloc", "write", "read", "free")}
        self.sink_pause = {name: pause_generator(self.rand, pause)
                           for name in ("grant", "committed", "rdata")}
        self.to_write = deque()       # granted tiles, in order
        self.writing = None           # (tile base, rows, per-bank remaining rows)
        self.open = deque()           # announced tiles not yet freed: [base, rows, reads left]
        self.count = dict.fromkeys(
            ("grants", "refusals", "whole", "wraps", "full", "full_tiles", "empty", "conflicts",
             "bad_reads", "bad_writes", "misfrees", "reads", "frees"), 0)

    # stimulus
    def make_alloc(self):
        if not self.count["grants"] and "whole" in self.cfg.get("cover", ["whole"]):
            # a run that must cover whole-SRAM tiles starts with one, granted on the empty SRAM:
            # later ones wait for every tile to be freed, which a random run may never see
            return self.depth
        r = self.rand.random()
        if r < 0.03:
            return 0
        if r < 0.06:
            return self.rand.randrange(self.depth + 1, 2 ** REQUEST_BITS)
        if r < 0.08 and "whole" in self.cfg.get("cover", ["whole"]):
            # whole-SRAM tiles only where the run must cover them: a short run (the smoke
            # case) that draws a few in a row spends its cycles on them and never wraps
            return self.depth
        return self.rand.randint(1, self.cfg.get("max_rows", self.depth // 2))

    def make_write(self):
        if self.writing is None and self.to_write:
            base, rows = self.to_write.popleft()
            remaining = []
            for _ in range(self.lanes):
                bank_rows = [(base + k) % self.depth for k in range(rows)]
                self.rand.shuffle(bank_rows)
                remaining.append(bank_rows)
            self.writing = (base, rows, remaining)
        if self.writing is None:
            return None
        base, rows, remaining = self.writing
        words = [self.rand.randrange(-(1 << self.width - 1), 1 << self.width - 1)
                 for _ in range(self.lanes)]
        if rows < self.depth and self.rand.random() < 0.05:
            # a write outside the tile being filled: into a live tile or free rows
            row = (base + rows + self.rand.randrange(self.depth - rows)) % self.depth
            en = self.rand.randrange(1, 1 << self.lanes)
            return en, [row] * self.lanes, words, False
        en, rows_out = 0, [0] * self.lanes
        for i in range(self.lanes):
            if remaining[i] and self.rand.random() < 0.7:
                en |= 1 << i
                rows_out[i] = remaining[i][-1]
        if en == 0:
            i = next(i for i in range(self.lanes) if remaining[i])
            en, rows_out[i] = 1 << i, remaining[i][-1]
        return en, rows_out, words, True

    def wrote(self, item):
        en, _, _, legit = item
        if not legit:
            self.count["bad_writes"] += 1
            return
        base, rows, remaining = self.writing
        for i in range(self.lanes):
            if en >> i & 1:
                remaining[i].pop()
        if not any(remaining):
            self.writing = None

    def make_read(self):
        if self.rand.random() < 0.05:
            # anywhere: legal only if it happens to fall into committed tiles
            en = self.rand.randrange(1, 1 << self.lanes)
            return en, [self.rand.randrange(self.depth) for _ in range(self.lanes)]
        if not self.open:
            return None
        tile = self.rand.choice(self.open)
        base, rows = tile[0], tile[1]
        en, rows_out = 0, [0] * self.lanes
        for i in range(self.lanes):
            rows_out[i] = (base + self.rand.randrange(rows)) % self.depth
            if self.rand.random() < 0.8:
                en |= 1 << i
        tile[2] -= 1
        return en, rows_out

    def make_free(self):
        if not self.open or self.open[0][2] > 0:
            return None
        if self.rand.random() < 0.05:
            return (self.open[0][0] + 1) % self.depth, False
        return self.open[0][0], True

    # pins
    def drive(self):
        dut = self.dut
        item = self.sources["alloc"].offer(self.make_alloc)
        dut.alloc__valid.value = item is not None
        if item is not None:
            dut.alloc__payload.value = item
        item = self.sources["write"].offer(self.make_write)
        dut.write__valid.value = item is not None
        if item is not None:
            en, rows, words, _ = item
            rb, w = self.row_bits, self.width
            dut.write__payload.value = (en | pack_lanes(rows, rb) << self.lanes
                                        | pack_lanes(words, w) << self.lanes * (1 + rb))
        item = self.sources["read"].offer(self.make_read)
        dut.read__valid.value = item is not None
        if item is not None:
            dut.read__payload.value = item[0] | pack_lanes(item[1], self.row_bits) << self.lanes
        item = self.sources["free"].offer(self.make_free)
        dut.free__valid.value = item is not None
        if item is not None:
            dut.free__payload.value = item[0]
        for name, pause in self.sink_pause.items():
            getattr(dut, f"{name}__ready").value = not next(pause)
        dut.clear_errors.value = self.rand.random() < 0.02

    def sample(self, name):
        return int(getattr(self.dut, name).value)

    def check_cycle(self, cycle):
        m, s = self.model, self.sample
        rb, lanes = self.row_bits, self.lanes
        where = f"cycle {cycle}"
        assert s("used") == m.used, f"{where}: used {s('used')} != {m.used}"
        assert s("full") == m.full(), f"{where}: full {s('full')}, model {m.full()}"
        assert s("empty") == (not m.tiles), f"{where}: empty {s('empty')}"
        self.count["full"] += m.full()
        self.count["full_tiles"] += m.used < self.depth and len(m.tiles) == m.max_tiles
        self.count["empty"] += not m.tiles
        got_errors = s("errors")
        want = sum(m.errors[k] << b for b, k in enumerate(("read", "write", "alloc", "free")))
        assert got_errors == want, f"{where}: errors {got_errors:04b} != {want:04b}"

        # grant
        grant_ready = s("grant__ready")
        assert s("grant__valid") == (m.grant is not None), f"{where}: grant valid"
        if m.grant is not None:
            payload = s("grant__payload")
            got = (payload & (1 << rb) - 1, payload >> rb & 0xFFFF, payload >> rb + 16)
            assert got == m.grant, f"{where}: grant {got} != {m.grant}"
        alloc = self.sources["alloc"].item if s("alloc__valid") else None
        if alloc is not None:
            want = m.alloc_ready(alloc, grant_ready)
            assert s("alloc__ready") == want, f"{where}: alloc({alloc}) ready != {want}"
        alloc_go = alloc if alloc is not None and s("alloc__ready") else None

        # committed
        tile = m.announce_tile()
        assert s("committed__valid") == (tile is not None), f"{where}: committed valid"
        if tile is not None:
            payload = s("committed__payload")
            got = (payload & (1 << rb) - 1, payload >> rb)
            assert got == (tile.base, tile.rows), f"{where}: committed {got} != {tile}"
        announce = tile is not None and s("committed__ready")

        # free
        free_ready = bool(m.tiles) and m.tiles[0].announced
        assert s("free__ready") == free_ready, f"{where}: free ready != {free_ready}"
        free_item = self.sources["free"].item if s("free__valid") else None
        free_go = free_item if free_item is not None and free_ready else None

        # write (always ready) and read
        assert s("write__ready") == 1, f"{where}: write not ready"
        write = self.sources["write"].item if s("write__valid") else None
        read = self.sources["read"].item if s("read__valid") else None
        rdata_ready = s("rdata__ready")
        want = m.read_ready(rdata_ready, read)
        if read is not None:
            assert s("read__ready") == want, f"{where}: read ready != {want}"
            if want is False and (m.rdata is None or rdata_ready):
                self.count["conflicts"] += 1
        read_go = read if read is not None and want else None

        # rdata
        assert s("rdata__valid") == (m.rdata is not None), f"{where}: rdata valid"
        if m.rdata is not None:
            got = unpack_lanes(s("rdata__payload"), lanes, self.width)
            assert got == m.rdata, f"{where}: rdata {got} != {m.rdata}"

        clear = s("clear_errors")
        events = m.step(alloc=alloc_go, grant=m.grant is not None and grant_ready,
                        write=write and write[:3], read=read_go,
                        rdata=m.rdata is not None and rdata_ready, announce=announce,
                        free=free_go and free_go[0], clear=clear)

        # the sources' side of the transfers
        if alloc_go is not None:
            self.sources["alloc"].item = None
        if "granted" in events:
            base, rows, error = events["granted"]
            if error:
                self.count["refusals"] += 1
            else:
                self.count["grants"] += 1
                self.count["whole"] += rows == self.depth
                self.count["wraps"] += base + rows > self.depth
                self.to_write.append((base, rows))
        if write is not None:
            self.sources["write"].item = None
            self.wrote(write)
        if read_go is not None:
            self.sources["read"].item = None
            self.count["reads"] += 1
            self.count["bad_reads"] += not events["read_legal"]
        if announce:
            self.open.append([tile.base, tile.rows, self.rand.randint(1, 2 * tile.rows)])
        if free_go is not None:
            self.sources["free"].item = None
            if free_go[1]:
                self.open.popleft()
                self.count["frees"] += 1
            else:
                self.count["misfrees"] += 1


@cocotb.test()
async def random_traffic(dut):
    """Random allocation sizes, fills, reads and frees with backpressure on every stream."""
    cfg = bench_config()
    tb = TB(dut, cfg)
    for name in ("alloc", "write", "read", "free"):
        getattr(dut, f"{name}__valid").value = 0
    dut.clear_errors.value = 0
    await setup(dut)
    dut._log.info("config %s", cfg)
    for cycle in range(cfg["cycles"]):
        tb.drive()
        await ReadOnly()
        tb.check_cycle(cycle)
        await RisingEdge(dut.clk)
    dut._log.info("coverage %s", tb.count)
    for name in ("grants", "reads", "frees"):
        record_metric(name, tb.count[name])
    for name in cfg.get("cover", []):
        assert tb.count[name] > 0, f"no {name} in {cfg['cycles']} cycles: {tb.count}"


async def _offer(dut, name, payload):
    """Offer ``payload`` on stream ``name`` from this cycle until its transfer."""
    getattr(dut, f"{name}__payload").value = payload
    getattr(dut, f"{name}__valid").value = 1
    while True:
        await ReadOnly()
        done = int(getattr(dut, f"{name}__ready").value)
        await RisingEdge(dut.clk)
        if done:
            break
    getattr(dut, f"{name}__valid").value = 0


@cocotb.test()
async def write_costs_one_read_per_row(dut):
    """Reads of a committed tile every cycle while the next tile streams in at the DRAM rate
    (8 bytes per cycle: one row every lanes * width / 64 cycles): on single-port banks each row
    write costs exactly one read cycle, on two-port banks none."""
    cfg = bench_config()
    lanes, depth, width, ports = cfg["lanes"], cfg["depth"], cfg["width"], cfg["ports"]
    row_bits = (depth - 1).bit_length()
    rand = rng()
    for name in ("alloc", "write", "read", "free"):
        getattr(dut, f"{name}__valid").value = 0
    dut.clear_errors.value = 0
    dut.grant__ready.value = 1
    dut.committed__ready.value = 1
    dut.rdata__ready.value = 1
    await setup(dut)
    rows = depth // 2
    period = max(1, lanes * width // 64)
    await _offer(dut, "alloc", rows)
    await _offer(dut, "alloc", rows)
    words = {}
    for row in range(rows):
        line = [rand.randrange(-(1 << width - 1), 1 << width - 1) for _ in range(lanes)]
        words.update({(i, row): w for i, w in enumerate(line)})
        await _offer(dut, "write", ((1 << lanes) - 1 | pack_lanes([row] * lanes, row_bits) << lanes
                                    | pack_lanes(line, width) << lanes * (1 + row_bits)))
    await ClockCycles(dut.clk, 2)

    reads, expected, written, cycles = 0, deque(), 0, rows * period
    request = None
    for cycle in range(cycles):
        if request is None:
            request = [rand.randrange(rows) for _ in range(lanes)]
        dut.read__payload.value = (1 << lanes) - 1 | pack_lanes(request, row_bits) << lanes
        dut.read__valid.value = 1
        dut.write__valid.value = cycle % period == 0
        dut.write__payload.value = ((1 << lanes) - 1
                                    | pack_lanes([rows + written] * lanes, row_bits) << lanes)
        await ReadOnly()
        if int(dut.rdata__valid.value):
            got = unpack_lanes(dut.rdata__payload.value, lanes, width)
            assert got == expected.popleft(), f"cycle {cycle}: wrong words"
        if int(dut.read__ready.value):
            reads += 1
            expected.append([words[i, row] for i, row in enumerate(request)])
            request = None
        written += cycle % period == 0
        await RisingEdge(dut.clk)
    dut.read__valid.value = 0
    dut.write__valid.value = 0
    lost = cycles - reads
    dut._log.info("%d-lane %d-port banks: %d reads in %d cycles while %d rows were written "
                  "(%.1f%% of the read bandwidth)", lanes, ports, reads, cycles, written,
                  100 * reads / cycles)
    record_metric("read_bw_filling_pct", round(100 * reads / cycles, 1))
    assert lost == (written if ports == 1 else 0), f"{lost} read cycles lost, {written} rows"
    assert int(dut.errors.value) == 0


# ---- pytest side: build the model and run the cocotb tests above ----


pytestmark = pytest.mark.sim

#: everything the random bench must have seen at least once in a run of CI length
COVER = ["grants", "refusals", "whole", "wraps", "full", "full_tiles", "empty", "conflicts",
         "bad_reads", "bad_writes", "misfrees", "frees"]
COVER_TP = [name for name in COVER if name != "conflicts"]
SMOKE = ["grants", "wraps", "conflicts", "bad_reads", "bad_writes", "frees"]

slow = pytest.mark.slow
CASES = [
    # name, lanes, depth, ports, max_tiles, cycles, cover
    pytest.param("n8_sp", 8, 32, 1, 4, 6000, COVER, id="n8_sp"),
    # the 32-lane smoke of make test is the Compute Pipeline's (verif/test_sequencer.py)
    pytest.param("n32_rp1", 32, 128, 1, 8, 1500, SMOKE, id="n32_rp1_smoke", marks=slow),
    pytest.param("n8_tp", 8, 16, 2, 4, 3000, COVER_TP, id="n8_tp", marks=slow),
    pytest.param("n8_sp_long", 8, 32, 1, 8, 100_000, COVER, id="n8_sp_long", marks=slow),
    pytest.param("n32_rp0", 32, 256, 1, 16, 20_000, COVER, id="n32_rp0", marks=slow),
]


@pytest.mark.parametrize("name, lanes, depth, ports, max_tiles, cycles, cover", CASES)
def test_tile_buffer(name, lanes, depth, ports, max_tiles, cycles, cover, record_property):
    top = TileBuffer(lanes=lanes, depth=depth, ports=ports, max_tiles=max_tiles)
    config = {"lanes": lanes, "depth": depth, "width": 16, "ports": ports,
              "max_tiles": max_tiles, "cycles": cycles, "cover": cover,
              # tiles of up to half the SRAM, or 16 rows on the big ones (more tiles per run)
              "max_rows": min(depth // 2, 16 if lanes == 32 else depth)}
    metrics = run_bench(top, bench="test_banks", config=config)
    for key, value in metrics.items():
        record_property(key, value)


@pytest.mark.parametrize("ports", [1, 2])
def test_bank_macro_links_with_the_bank_model(tmp_path, ports):
    """Banks built as ``bank_macro`` instances link with the emitted bank model of that name."""
    (tmp_path / "top.v").write_text(to_verilog(
        TileBuffer(lanes=4, depth=16, ports=ports, bank_macro="my_sram"), "top")[0])
    (tmp_path / "my_sram.v").write_text(to_verilog(
        SramBank(depth=16, ports=ports), "my_sram")[0])
    result = subprocess.run(
        ["verilator", "--lint-only", *VERILATOR_ARGS, "--top-module", "top",
         str(tmp_path / "top.v"), str(tmp_path / "my_sram.v")],
        env={**os.environ, **verilator_env()}, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
