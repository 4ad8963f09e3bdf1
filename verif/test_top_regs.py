"""cocotb bench of the register bank (meritz.regs.Regs) through cocotbext-axi's AXI4-Lite master.

It runs on a bare ``Regs`` (all tests, driving its run-control pins) and on ``meritz.top.Top``
(the register tests, through the top's control port; ``run_control`` needs the pins).

Every channel of the control port gets random backpressure. The register map is
``merit.regmap``; the bench checks that the hardware implements it: every register reads back what
was written (field bits only), the ``config`` port holds the written fields at their
``meritz.kernelcfg`` offsets, unmapped addresses answer SLVERR, each configuration check refuses a
kernel with its number, and run control follows finished / abort / errors / quiet.

The bad configurations are a table generated from :data:`merit.regmap.CHECKS` (``BREAKERS``: for
each check, every field it covers out of range in turn; a new check without a breaker fails the
bench), shared with ``test_top_robust``, which also runs them on the top with DRAM.

The pytest side. The bare register bank on the Verilator model, through an AXI4-Lite master with
backpressure, its run-control pins driven by the bench (slow: CI runs the register tests on the top
instead, ``test_top_top``).
"""

import copy

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge, SimTimeoutError, with_timeout
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from harness import run_bench
from merit.regmap import CHECKS, Error, register_map
from merit.sim.benchlib import bench_config, pause_generator, rng, setup
from meritz.regs import Regs

OKAY, SLVERR = 0, 2


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = bench_config()
        self.rand = rng()
        self.map = register_map()
        self.bus = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
        p = self.cfg.get("backpressure", 0.3)
        for channel in (self.bus.write_if.aw_channel, self.bus.write_if.w_channel,
                        self.bus.write_if.b_channel, self.bus.read_if.ar_channel,
                        self.bus.read_if.r_channel):
            channel.set_pause_generator(pause_generator(self.rand, p))
        self.runs = 0
        self.shadow = {}                        # words written with OKAY (0 after reset)
        self.pins = hasattr(dut, "finished")    # a bare Regs, not a Top
        if self.pins:
            dut.finished.value = 0
            dut.quiet.value = 0
            dut.tiles.value = 0
            dut.errors.value = 0

    async def start(self):
        await setup(self.dut)
        if self.pins:
            cocotb.start_soon(self._count_runs())

    async def _count_runs(self):
        while True:
            await RisingEdge(self.dut.clk)
            if int(self.dut.run.value):
                self.runs += 1

    async def answer(self, what, operation, limit=2000):
        try:
            return await with_timeout(operation, limit * 10, "ns")
        except SimTimeoutError:
            raise AssertionError(f"{what}: no answer within {limit} cycles") from None

    async def write(self, offset, word):
        resp = await self.answer(f"write {offset:#x}",
                                 self.bus.write(offset, int(word).to_bytes(4, "little")))
        if resp.resp == OKAY:
            self.shadow[offset] = word
        return resp.resp

    async def read(self, offset):
        resp = await self.answer(f"read {offset:#x}", self.bus.read(offset, 4))
        return int.from_bytes(resp.data, "little"), resp.resp

    async def write_ok(self, offset, word):
        resp = await self.write(offset, word)
        assert resp == OKAY, f"write {offset:#x} answered {resp}"

    async def status(self):
        word, resp = await self.read(self.map["STATUS"].offset)
        assert resp == OKAY
        return {"busy": word & 1, "done": word >> 1 & 1, "error": word >> 4 & 15,
                "info": word >> 8 & 255}

    async def configure(self, values):
        """Write the configuration words that differ from the shadow."""
        for offset, word in self.map.config_words(values):
            if self.shadow.get(offset, 0) != word:
                await self.write_ok(offset, word)

    async def ctrl(self, start=0, abort=0, irq_enable=0):
        await self.write_ok(self.map["CTRL"].offset, start | abort << 1 | irq_enable << 2)


def good_config(lanes, instructions=16):
    """A configuration that passes every check: 8 outputs along p5 per lane group, every slot
    enabled, its rows holding its footprint."""
    return {
        "p_size": [1, 1, 1, 1, 3, 2 * lanes], "a_size": [1, 1, 1, 1, 1, 5],
        "p_tile": [1, 1, 1, 1, 1, lanes], "a_tile": [1, 1, 1, 1, 1, 5],
        "lane_index": [5] * 6, "begs": [0] * 7, "ends": [instructions] * 7,
        "rp0": [{"enable": 1, "base": 0x100, "extent": [1, 1, 3, 9], "box": [1, 1, 1, 9],
                 "rows": max(2, -(-9 // lanes))},
                {"enable": 1, "base": 0x400, "extent": [1, 1, 1, 9], "box": [1, 1, 1, 9],
                 "rows": max(2, -(-9 // lanes))}],
        "rp1": [{"enable": 1, "base": 0x800, "extent": [1, 1, 1, 5], "box": [1, 1, 1, 5],
                 "rows": -(-5 // lanes), "rotate": 0}],
        "out_base": [0x1000, 0, 0],
    }


def changed(good, *changes):
    """A copy of ``good`` with ``(path, value)`` changes; a path is a tuple of keys / indices."""
    values = copy.deepcopy(good)
    for path, value in changes:
        node = values
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return values


def _slots(good):
    return [(port, k) for port in ("rp0", "rp1") for k, slot in enumerate(good[port])
            if slot.get("enable")]


def _break_sizes(good, lanes, rows):
    for name in ("p_size", "a_size"):
        for j in range(len(good[name])):
            yield f"{name}[{j}] = 0", changed(good, ((name, j), 0))


def _break_tiles(good, lanes, rows):
    for name in ("p_tile", "a_tile"):
        for j in range(len(good[name])):
            yield f"{name}[{j}] = 0", changed(good, ((name, j), 0))


def _break_lanes(good, lanes, rows):
    bits = lanes.bit_length() - 1
    for i in range(bits):
        for index in (6, 7):
            yield f"lane_index[{i}] = {index}", changed(good, (("lane_index", i), index))
    moved = good["lane_index"][0]           # the index that lane bit 0 moves in good
    for j in range(6):
        if j != moved and good["p_tile"][j] % 2:
            yield (f"lane bit 0 on index {j} whose tile is {good['p_tile'][j]}",
                   changed(good, (("lane_index", 0), j)))
    tile = good["p_tile"][moved]
    for bad in (tile - 1, tile + 1, tile + lanes // 2):
        yield f"p_tile[{moved}] = {bad}, not a multiple of its lanes", \
            changed(good, (("p_tile", moved), bad))


def _break_range(good, lanes, rows):
    end = max(good["ends"])
    count = len(good["ends"])
    for k in range(count):
        yield f"ends[{k}] = {end + 1} past the program", changed(good, (("ends", k), end + 1))
    for k in range(1, count):
        begs, ends = good["begs"][k - 1] + 1, good["ends"][k - 1] - 1
        yield f"begs[{k}] above begs[{k - 1}]", changed(good, (("begs", k), begs))
        yield f"ends[{k}] below ends[{k - 1}]", changed(good, (("ends", k), ends))
    yield "begs[0] after ends[0]", changed(good, (("begs", 0), 5), (("ends", 0), 4))


def _break_slots(good, lanes, rows):
    bits = lanes.bit_length() - 1
    for port, k in _slots(good):
        slot = f"{port}[{k}]"
        cap = rows[0] if port == "rp0" else rows[1]
        for field in ("extent", "box"):
            for a in range(4):
                yield f"{slot}.{field}[{a}] = 0", changed(good, ((port, k, field, a), 0))
        for value in (0, cap + 1, 0xFFFF):
            yield f"{slot}.rows = {value} (SRAM {cap})", changed(good, ((port, k, "rows"), value))
        for value in (bits, 7):
            yield f"{slot}.rotate = {value}", changed(good, ((port, k, "rotate"), value))
        yield f"{slot}.base odd", changed(good, ((port, k, "base"), good[port][k]["base"] | 1))


def _break_outputs(good, lanes, rows):
    for k in range(len(good["out_base"])):
        yield f"out_base[{k}] odd", changed(good, (("out_base", k), good["out_base"][k] | 1))


#: For each check of merit.regmap.CHECKS (by name): a generator of ``(what, configuration)``
#: with one field out of range.
def _break_share(good, lanes, rows):
    slots = len(good["rp0"]) + len(good["rp1"])
    yield ("share_slot names no slot",
           changed(good, (("share_log2",), 1), (("share_slot",), slots)))
    for port in ("rp0", "rp1"):
        enabled = [k for k, s in enumerate(good[port]) if s and s.get("enable")]
        if len(enabled) > 1:
            number = enabled[0] + (0 if port == "rp0" else len(good["rp0"]))
            yield (f"share_slot {number} next to another enabled slot of {port}",
                   changed(good, (("share_log2",), 1), (("share_slot",), number)))


def _break_share2(good, lanes, rows):
    """2-D sharing: the first shared slot is RP1's (alone there), the second must be alone in
    RP0; ``good`` enables two RP0 slots."""
    slots = len(good["rp0"]) + len(good["rp1"])
    rp1_slot = len(good["rp0"])
    first = ((("share_log2",), 1), (("share_slot",), rp1_slot))
    yield ("share2_log2 1 with share_log2 0",
           changed(good, (("share2_log2",), 1), (("share2_slot",), rp1_slot)))
    yield ("share2_slot in share_slot's RP",
           changed(good, *first, (("share2_log2",), 1), (("share2_slot",), rp1_slot)))
    yield ("share2_slot names no slot",
           changed(good, *first, (("share2_log2",), 1), (("share2_slot",), slots)))
    yield ("share2_slot 0 next to another enabled slot of rp0",
           changed(good, *first, (("share2_log2",), 1), (("share2_slot",), 0)))


def _break_block(good, lanes, rows):
    """The block walk with one shared slot (``share_block``): no shared slot, or two."""
    rp1_slot = len(good["rp0"])
    yield ("share_block 1 with share_log2 0", changed(good, (("share_block",), 1)))
    yield ("share_block 1 with a second shared slot (share2_log2 1)",
           changed(good, (("share_block",), 1), (("share_log2",), 1),
                   (("share_slot",), rp1_slot), (("share2_log2",), 1),
                   (("share2_slot",), 0), (("rp0", 1, "enable"), 0)))


def _span(slot):
    """Tile addresses a slot's footprint spans (written from ``docs/tau.md`` §4: row-major box
    with pitches ``lpitch`` on axes 0..2, 1 on axis 3)."""
    box, lpitch = slot["box"], slot.get("lpitch", [0, 0, 0])
    return sum((box[a] - 1) * lpitch[a] for a in range(3)) + box[3]


def _break_footprint(good, lanes, rows):
    for port, k in _slots(good):
        slot = f"{port}[{k}]"
        s = good[port][k]
        words = s["rows"] * lanes
        short = -(-_span(s) // lanes) - 1
        if short >= 1:
            yield (f"{slot}.rows = {short}: one row short of its footprint",
                   changed(good, ((port, k, "rows"), short)))
        yield (f"{slot}.box[3] one word past its rows",
               changed(good, ((port, k, "box", 3), words - _span(s) + s["box"][3] + 1)))
        # axes 0..2: a second line, one word past the rows through its pitch
        for a in range(3):
            yield (f"{slot}.box[{a}] = 2 with lpitch[{a}] one word past the rows",
                   changed(good, ((port, k, "box", a), 2),
                           ((port, k, "lpitch"), [words - s["box"][3] + 1 if b == a else 0
                                                  for b in range(3)]),
                           *[((port, k, "box", b), 1) for b in range(3) if b != a]))
        yield (f"{slot}.lpitch[0] = 0xFFFF x box[0] = 0xFFFF",
               changed(good, ((port, k, "box", 0), 0xFFFF), ((port, k, "lpitch"), [0xFFFF, 0, 0])))


def _break_rows(good, lanes, rows):
    for r, port in enumerate(("rp0", "rp1")):
        slots = [k for k, s in enumerate(good[port]) if s and s.get("enable")]
        others = sum(good[port][k]["rows"] for k in slots[1:])
        k = slots[0]
        if others:
            yield (f"{port} slots together one row over the SRAM ({rows[r]})",
                   changed(good, ((port, k, "rows"), rows[r] - others + 1)))
        else:       # one slot: a second one beside it, a copy, the two one row over the SRAM
            k2 = next((q for q in range(len(good[port])) if q != k), None)
            if k2 is not None:
                half = rows[r] // 2
                yield (f"{port}[{k2}] beside {port}[{k}], together one row over the SRAM",
                       changed(good, ((port, k, "rows"), half),
                               ((port, k2), dict(good[port][k], rows=rows[r] - half + 1))))
    port = "rp0"
    slots = [k for k, s in enumerate(good[port]) if s and s.get("enable")]
    if len(slots) > 1:
        yield (f"{port}: every slot's rows the whole SRAM",
               changed(good, *[((port, k, "rows"), rows[0]) for k in slots]))


def _break_hold(good, lanes, rows):
    """Footprint reuse: ``good`` enables two RP0 slots and one RP1 slot."""
    rp1_slot = len(good["rp0"])
    yield "hold on RP0, two of its slots enabled", changed(good, (("hold",), 1))
    yield ("hold on RP1, its slot shared by a TAU group",
           changed(good, (("hold",), 2), (("share_log2",), 1), (("share_slot",), rp1_slot)))


BREAKERS = {"sizes": _break_sizes, "tiles": _break_tiles, "lanes": _break_lanes,
            "range": _break_range, "slots": _break_slots, "outputs": _break_outputs,
            "share": _break_share, "footprint": _break_footprint, "rows": _break_rows,
            "share2": _break_share2, "block": _break_block, "hold": _break_hold}


def bad_configs(good, lanes, rows):
    """``(check number, what, configuration)`` for every configuration check of
    :data:`merit.regmap.CHECKS`, each field out of range in turn; ``good`` passes every check
    and enables every slot, ``rows`` = SRAM rows of (RP0, RP1). A check without a breaker is a
    failure of the bench, not a silent gap."""
    missing = [name for name, _ in CHECKS if name not in BREAKERS]
    assert not missing, f"no bad configuration for check(s) {missing}: add them to BREAKERS"
    cases = []
    for number, (name, _) in enumerate(CHECKS, 1):
        found = list(BREAKERS[name](good, lanes, rows))
        assert found, f"check {name}: no field of the configuration to break"
        cases += [(number, what, values) for what, values in found]
    return cases


def edge_configs(good, lanes, rows):
    """``(what, configuration)`` at the edge of every check, which must be accepted (the first
    slot and output of ``good`` are left as they are)."""
    bits = lanes.bit_length() - 1
    port, k = _slots(good)[0]
    last_port, last = _slots(good)[-1]
    out = len(good["out_base"]) - 1
    others = sum(good[port][q]["rows"] for q in range(len(good[port]))
                 if q != k and good[port][q].get("enable"))
    cases = [
        (f"{port}[{k}].rows = SRAM rows less the other slots' (together the whole SRAM)",
         changed(good, ((port, k, "rows"), rows[0] - others))),
        (f"{port}[{k}].rows = SRAM rows, the other slots of its RP disabled (rows kept)",
         changed(good, ((port, k, "rows"), rows[0]),
                 *[((port, q, "enable"), 0) for q in range(len(good[port])) if q != k])),
        (f"{port}[{k}].rotate = {bits - 1}", changed(good, ((port, k, "rotate"), bits - 1))),
        (f"out_base[{out}] 2-byte aligned only", changed(good, (("out_base", out),
                                                              good["out_base"][out] | 2))),
        (f"{last_port}[{last}] disabled, holding zeros", changed(good, ((last_port, last),
                                                                      {"enable": 0}))),
        ("begs[0] = ends[0]", changed(good, (("begs", 0), good["ends"][0]))),
    ]
    cases += [(f"lane_index[{i}] = 7 on a bit above the lanes",
               changed(good, (("lane_index", i), 7))) for i in range(bits, 6)]
    # footprints that fill their rows to the last word
    s = good[last_port][last]
    words = s["rows"] * lanes
    cases += [
        (f"{last_port}[{last}].box[3] = rows x lanes", changed(good, (
            (last_port, last, "box"), [1, 1, 1, words]))),
        (f"{last_port}[{last}] two lines, the second ending on the last word", changed(good, (
            (last_port, last, "box"), [1, 2, 1, s["box"][3]]),
            ((last_port, last, "lpitch"), [0, words - s["box"][3], 0]))),
    ]
    return cases


@cocotb.test()
async def registers_read_back(dut):
    """Every register and LUT word: write random bits, read back the field bits; the config
    port holds them at their kernelcfg offsets."""
    tb = TB(dut)
    await tb.start()
    words = {}
    for reg in tb.map.config_registers:
        words[reg] = tb.rand.getrandbits(32)
        await tb.write_ok(reg.offset, words[reg])
    expected_bits = 0
    for reg, word in words.items():
        mask = sum(f.mask for f in reg.fields)
        got, resp = await tb.read(reg.offset)
        assert resp == OKAY
        assert got == word & mask, f"{reg.name} at {reg.offset:#x}: {got:#x} != {word & mask:#x}"
        for f in reg.fields:
            expected_bits |= ((word >> f.lsb) & ((1 << f.width) - 1)) << f.config
    if tb.pins:
        assert int(dut.config.value) == expected_bits
    luts = [[tb.rand.randrange(-2**15, 2**15) for _ in range(33)] for _ in range(2)]
    for offset, word in tb.map.lut_words_for(luts):
        await tb.write_ok(offset, word)
    for offset, word in tb.map.lut_words_for(luts):
        got, resp = await tb.read(offset)
        assert (got, resp) == (word, OKAY), f"LUT word {offset:#x}"
    flat = 0
    for t, table in enumerate(luts):
        for e, v in enumerate(table):
            flat |= (v & 0xFFFF) << (16 * (t * 33 + e))
    if tb.pins:
        assert int(dut.luts.value) == flat
    ident, resp = await tb.read(tb.map["ID"].offset)
    assert resp == OKAY
    assert ident == 0x4D5A | tb.cfg["lanes"] << 16 | tb.cfg["taus"] << 24
    # byte strobes: one byte of the last configuration register
    reg = tb.map.config_registers[0]
    await tb.answer("byte write", tb.bus.write(reg.offset + 1, b"\xa5"))
    tb.shadow[reg.offset] = None                # not a whole word: unknown to configure()
    got, _ = await tb.read(reg.offset)
    mask = sum(f.mask for f in reg.fields)
    assert got == ((words[reg] & ~0xFF00) | 0xA500) & mask
    # read-only registers ignore writes
    await tb.write_ok(tb.map["ID"].offset, 0)
    assert (await tb.read(tb.map["ID"].offset))[0] == ident


@cocotb.test()
async def unmapped_addresses_answer_slverr(dut):
    tb = TB(dut)
    await tb.start()
    end = tb.map.size_bytes
    lut_end = tb.map.lut_base + 4 * tb.map.lut_words
    holes = [end, end + 4, tb.map.lut_base - 4, lut_end, 0x3FC]
    holes += [tb.rand.randrange(lut_end, 0x400) & ~3 for _ in range(4)]
    for offset in holes:
        assert await tb.write(offset, 0xFFFFFFFF) == SLVERR, f"write {offset:#x}"
        word, resp = await tb.read(offset)
        assert resp == SLVERR, f"read {offset:#x}"
    assert (await tb.status())["error"] == Error.NONE
    assert tb.runs == 0


@cocotb.test()
async def bad_configuration_is_refused(dut):
    """Each check refuses the kernel with its number; ``run`` never pulses."""
    tb = TB(dut)
    await tb.start()
    lanes = tb.cfg["lanes"]
    rows = (tb.cfg["rp0_rows"], tb.cfg["rp1_rows"])
    for number, what, values in bad_configs(good_config(lanes), lanes, rows):
        await tb.configure(values)
        await tb.ctrl(start=1)
        st = await tb.status()
        assert st == {"busy": 0, "done": 1, "error": Error.CONFIG, "info": number}, \
            f"{what}: {st}"
        assert tb.runs == 0, what       # (counted on a bare Regs only)
    await tb.configure(good_config(lanes))
    await tb.ctrl(start=1)
    st = await tb.status()
    assert st["error"] == Error.NONE and st["info"] == 0
    if tb.pins:
        assert st["busy"] == 1 and tb.runs == 1


@cocotb.test()
async def run_control(dut):
    """finished -> done + irq; config writes refused while busy; abort and errors flush until
    quiet; done cleared by W1C."""
    tb = TB(dut)
    await tb.start()
    lanes, taus = tb.cfg["lanes"], tb.cfg["taus"]
    cfg = good_config(lanes)
    await tb.configure(cfg)
    await tb.ctrl(start=1, irq_enable=1)
    assert tb.runs == 1 and int(dut.busy.value) == 1
    first = tb.map.config_registers[0].offset
    assert await tb.write(first, 0) == SLVERR
    assert await tb.write(tb.map.lut_base, 0) == SLVERR
    await tb.ctrl(start=1, irq_enable=1)          # ignored while busy
    assert tb.runs == 1
    dut.tiles.value = 7
    await ClockCycles(dut.clk, 5)
    dut.finished.value = 1
    await RisingEdge(dut.clk)
    dut.finished.value = 0
    await RisingEdge(dut.clk)
    assert int(dut.irq.value) == 1
    st = await tb.status()
    assert st == {"busy": 0, "done": 1, "error": Error.NONE, "info": 0}
    assert (await tb.read(tb.map["TILES"].offset))[0] == 7
    assert (await tb.read(tb.map["CYCLES"].offset))[0] > 5
    assert await tb.write(first, 0) == OKAY
    await tb.write_ok(tb.map["STATUS"].offset, 2)
    await RisingEdge(dut.clk)
    assert int(dut.irq.value) == 0 and (await tb.status())["done"] == 0

    await tb.configure(cfg)
    errors = [(Error.ABORTED, None, 0), (Error.AXI_READ, 1, 0), (Error.AXI_WRITE, 2, 0),
              (Error.CONFLICT, 1 << (2 + taus - 1), taus - 1),
              (Error.TAU, 1 << (2 + taus), 0)]
    for code, bits, info in errors:
        await tb.ctrl(start=1, irq_enable=1)
        assert int(dut.busy.value) == 1 and int(dut.flush.value) == 0
        if bits is None:
            await tb.ctrl(abort=1, irq_enable=1)
        else:
            dut.errors.value = bits
            await RisingEdge(dut.clk)
            dut.errors.value = 0
        await ClockCycles(dut.clk, 3)
        assert int(dut.flush.value) == 1 and int(dut.busy.value) == 1
        dut.finished.value = 1                  # ignored while flushing
        await ClockCycles(dut.clk, 2)
        dut.finished.value = 0
        assert int(dut.busy.value) == 1
        dut.quiet.value = 1
        await ClockCycles(dut.clk, 2)
        dut.quiet.value = 0
        assert int(dut.flush.value) == 0
        st = await tb.status()
        assert st == {"busy": 0, "done": 1, "error": code, "info": info}, f"{code!r}: {st}"
    assert tb.runs == 1 + len(errors)


# ---- pytest side: build the model and run the cocotb tests above ----


@pytest.mark.sim
@pytest.mark.slow
def test_regs():
    lanes, taus, rp0_rows = 8, 2, 1024
    run_bench(Regs(lanes=lanes, taus=taus, rp0_rows=rp0_rows, rp1_rows=512), bench="test_top_regs",
              config={"lanes": lanes, "taus": taus, "rp0_rows": rp0_rows, "rp1_rows": 512,
                      "backpressure": 0.3})
