"""StepLooper + LaneAddressGenerator (Amaranth simulation) against addresses computed from the
transform directly (Eq. 5 + the tile box), not from the incremental sums of the RTL."""

import itertools

import numpy as np
import pytest
from amaranth.sim import Simulator

from merit.compile import Tiling, lane_coords, slot_config
from merit.transform import Index, Transform
from meritz import kernelcfg
from meritz.tau.rp.agu import LaneAddressGenerator
from meritz.tau.step_looper import CONFIG_CYCLES, StepLooper

LANES = 8


def conv_case():
    """3x3 conv over C=3 channels, output 5x7, tiles (4, 8) x (2, 3, 3): odd sizes, trimmed."""
    C, H, W = 3, 5, 7
    image = Transform((C, H, W), p=[Index(1), Index(2)],
                      a=[Index(0), Index(1, offset=-1), Index(2, offset=-1)], name="img")
    weight = Transform((C, 3, 3), p=[None, None], a=[Index(0), Index(1), Index(2)], name="w")
    tiling = Tiling(p_tile=(4, 8), a_tile=(2, 3, 3), lane_index=(1, 1, 0))
    return (H, W), (C, 3, 3), image, weight, tiling


def _program_words():
    from merit.isa import Instruction, Op, encode
    from merit.isa.encoding import OPERAND_IMM, OPERAND_RP0, OPERAND_RP1
    words = [encode(Instruction(Op.ADD, d=0, a=OPERAND_IMM, b=OPERAND_IMM, c=OPERAND_IMM)),
             encode(Instruction(Op.MAC, d=0, a=0, b=OPERAND_RP0, c=OPERAND_RP1)),
             encode(Instruction(Op.OUT, a=0, b=OPERAND_IMM))]
    return words, (1, 1, 1, 0), (2, 2, 2, 3)


def _config(p_size, a_size, tiling, slots0, slots1):
    words, begs, ends = _program_words()
    pad_p = [1] * (6 - len(p_size))
    pad_a = [1] * (6 - len(a_size))
    extra = 7 - len(begs)
    return {
        "p_size": list(p_size) + pad_p, "a_size": list(a_size) + pad_a,
        "p_tile": list(tiling.p_tile) + pad_p, "a_tile": list(tiling.a_tile) + pad_a,
        "lane_index": list(tiling.lane_index) + [0] * 3,
        "program": words + [0] * (16 - len(words)),
        "begs": [begs[0]] * extra + list(begs),
        "ends": [ends[0]] * extra + list(ends),
        "rp0": slots0, "rp1": slots1,
        "out_pitch": [p_size[1], 1, 0, 0, 0, 0],
    }


def _expected(tr, tiling, p_size, a_size, p_org, a_org, base):
    """Lane addresses of every (step, warp) whose lane 0 lies in the parallel space, from
    x = sum k s + o and the tile box."""
    low, box = tr.box(p_org, a_org, tiling.p_tile, tiling.a_tile)
    lp = [1]
    for b in reversed(box[1:]):
        lp.insert(0, lp[0] * b)
    coords = lane_coords(tiling.lane_index, len(p_size))
    lanes_per = tiling.lanes_per_index()
    counts = [min(t, n - o) for t, n, o in zip(tiling.a_tile, a_size, a_org, strict=True)]
    out = []
    for w in itertools.product(*[range(n) for n in tiling.warps()]):
        p = [o + wi * lp_ for o, wi, lp_ in zip(p_org, w, lanes_per, strict=True)]
        if any(v >= n for v, n in zip(p, p_size, strict=True)):
            continue        # a warp wholly outside the parallel space is skipped
        for step in itertools.product(*[range(c) for c in counts]):
            a = [o + s for o, s in zip(a_org, step, strict=True)]
            k = [np.full(LANES, v) for v in p]
            k = [k[j] + coords[j] for j in range(len(p))] + [np.full(LANES, v) for v in a]
            x = [np.full(LANES, tr.offset[i]) for i in range(len(box))]
            for pos, idx in enumerate(tr.indices):
                if idx is not None:
                    x[idx.axis] = x[idx.axis] + k[pos] * idx.stride
            local = sum((x[i] - low[i]) * lp[i] for i in range(len(box)))
            out.append((base, list(local)))
    return out


@pytest.mark.parametrize("port", [0, 1])
def test_lane_addresses_match_transform(port):
    p_size, a_size, image, weight, tiling = conv_case()
    s0 = slot_config(image, tiling, LANES)
    s1 = slot_config(weight, tiling, LANES)
    cfg = _config(p_size, a_size, tiling, [s0, {}], [s1])
    looper = StepLooper(lanes=LANES)
    agu = LaneAddressGenerator(lanes=LANES, port=port)
    tiles = [((0, 0), (0, 0, 0)), ((0, 0), (2, 0, 0)), ((4, 0), (0, 0, 0)), ((4, 0), (2, 0, 0))]
    bases = [3, 40, 7, 11]
    tr = image if port == 0 else weight
    expected = []
    for (p_org, a_org), b in zip(tiles, bases, strict=True):
        expected += _expected(tr, tiling, p_size, a_size, p_org, a_org, b)

    from amaranth import Module
    from amaranth.lib import wiring
    m = Module()
    m.submodules.looper = looper
    m.submodules.agu = agu
    wiring.connect(m, looper.beats, agu.beats)
    bits = kernelcfg.pack(cfg)
    got = []

    async def bench(ctx):
        ctx.set(looper.config.as_value(), bits)
        ctx.set(agu.config.as_value(), bits)
        ctx.set(agu.reads.ready, 1)
        ctx.set(agu.free.ready, 1)
        await ctx.tick().repeat(CONFIG_CYCLES)
        pending = list(tiles)
        base_queue = list(bases)
        for _ in range(5000):
            ctx.set(looper.tiles.valid, bool(pending))
            if pending:
                p_org, a_org = pending[0]
                ctx.set(looper.tiles.payload, {"p_origin": list(p_org) + [0] * 4,
                                               "a_origin": list(a_org) + [0] * 3})
            ctx.set(agu.bases.valid, bool(base_queue))
            if base_queue:
                ctx.set(agu.bases.payload, [base_queue[0]] * (2 if port == 0 else 1))
            await ctx.delay(1e-9)
            if ctx.get(agu.reads.valid):
                got.append((ctx.get(agu.reads.payload.base),
                            [int(v) for v in ctx.get(agu.reads.payload.addr)]))
            took_tile = pending and ctx.get(looper.tiles.ready)
            took_base = base_queue and ctx.get(agu.bases.ready)
            await ctx.tick()
            if took_tile:
                pending.pop(0)
            if took_base:
                base_queue.pop(0)
            if len(got) >= len(expected) and not pending:
                break

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # 27 steps per warp over both accumulation tiles; the tile at row 0 has 2 x 2 warps, the
    # one at row 4 only 1 x 2 (its second row of warps, rows 6-7, lies outside the 5 rows)
    assert len(expected) == 27 * (4 + 2)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == (e[0], [v & 0xFFFF for v in e[1]]), f"read {i}: {g} != {e}"


def _legal_words(rng, count):
    """``count`` random legal instruction words of every opcode (and every LOGIC function)."""
    from merit.isa import encode, is_legal
    from merit.isa.encoding import Instruction, Op
    codes = list(range(14)) + list(range(16, 32))
    words = []
    while len(words) < count:
        op = Op(int(rng.integers(1, 9)))
        fn = int(rng.integers(0, 6)) if op == Op.LOGIC else 0
        a, b, c = (int(x) for x in rng.choice(codes, 3))
        if op == Op.INDEX:
            b = int(rng.integers(0, 2))
        ins = Instruction(op, fn=fn, s=int(rng.integers(0, 32)), d=int(rng.integers(0, 8)),
                          a=a, b=b, c=c)
        try:
            word = encode(ins)
        except ValueError:
            continue
        if is_legal(word):
            words.append(word)
    return words


def test_rp_reads_and_out_decode_as_the_isa_says():
    # the AGU's decode of which instructions read RP0 / RP1 and which are OUT, against
    # merit.isa's Instruction.reads_rp over random legal words of every opcode
    from amaranth import Module, Signal

    from merit.isa import Op, decode
    from meritz.tau.rp.agu import is_out, reads_rp

    words = _legal_words(np.random.default_rng(5), 600)
    m = Module()
    word = Signal(32)
    r0, r1, out = Signal(), Signal(), Signal()
    m.d.comb += [r0.eq(reads_rp(word, 0)), r1.eq(reads_rp(word, 1)), out.eq(is_out(word))]
    sim = Simulator(m)
    seen = []

    async def bench(ctx):
        for w in words:
            ctx.set(word, w)
            seen.append((ctx.get(r0), ctx.get(r1), ctx.get(out)))

    sim.add_testbench(bench)
    sim.run()
    for w, got in zip(words, seen, strict=True):
        ins = decode(w)
        assert got == (ins.reads_rp(0), ins.reads_rp(1), ins.op == Op.OUT), hex(w)
    assert {decode(w).op for w in words} == set(Op)


@pytest.mark.parametrize("port", [0, 1])
def test_reads_last_and_free_under_backpressure(port):
    # random ready on reads and free: the same reads in order, ``last`` on exactly the last read
    # of each accumulation tile, and each tile's bases freed once, in order, after its reads
    p_size, a_size, image, weight, tiling = conv_case()
    cfg = _config(p_size, a_size, tiling, [slot_config(image, tiling, LANES), {}],
                  [slot_config(weight, tiling, LANES)])
    looper = StepLooper(lanes=LANES)
    agu = LaneAddressGenerator(lanes=LANES, port=port)
    tiles = [((0, 0), (0, 0, 0)), ((0, 0), (2, 0, 0)), ((4, 0), (0, 0, 0)), ((4, 0), (2, 0, 0))]
    bases = [3, 40, 7, 11]
    tr = image if port == 0 else weight
    expected, ends = [], []
    for (p_org, a_org), b in zip(tiles, bases, strict=True):
        expected += _expected(tr, tiling, p_size, a_size, p_org, a_org, b)
        ends.append(len(expected))
    slots = 2 if port == 0 else 1

    from amaranth import Module
    from amaranth.lib import wiring
    m = Module()
    m.submodules.looper = looper
    m.submodules.agu = agu
    wiring.connect(m, looper.beats, agu.beats)
    bits = kernelcfg.pack(cfg)
    rng = np.random.default_rng(port + 7)
    got, freed, events = [], [], []

    async def bench(ctx):
        ctx.set(looper.config.as_value(), bits)
        ctx.set(agu.config.as_value(), bits)
        await ctx.tick().repeat(CONFIG_CYCLES)
        pending, base_queue = list(tiles), list(bases)
        for _ in range(20000):
            ctx.set(agu.reads.ready, bool(rng.random() < 0.6))
            ctx.set(agu.free.ready, bool(rng.random() < 0.4))
            ctx.set(looper.tiles.valid, bool(pending))
            if pending:
                p_org, a_org = pending[0]
                ctx.set(looper.tiles.payload, {"p_origin": list(p_org) + [0] * 4,
                                               "a_origin": list(a_org) + [0] * 3})
            ctx.set(agu.bases.valid, bool(base_queue))
            if base_queue:
                ctx.set(agu.bases.payload, [base_queue[0]] * slots)
            await ctx.delay(1e-9)
            if ctx.get(agu.reads.valid) and ctx.get(agu.reads.ready):
                got.append((ctx.get(agu.reads.payload.base),
                            [int(v) for v in ctx.get(agu.reads.payload.addr)]))
                events.append(("read", int(ctx.get(agu.reads.payload.last))))
            if ctx.get(agu.free.valid) and ctx.get(agu.free.ready):
                freed.append([int(v) for v in ctx.get(agu.free.payload)])
                events.append(("free", 0))
            took_tile = pending and ctx.get(looper.tiles.ready)
            took_base = base_queue and ctx.get(agu.bases.ready)
            if ctx.get(agu.bases.ready):        # bases are taken at a tile's first beat
                assert ctx.get(agu.beats.valid) and ctx.get(agu.beats.payload.first)
            await ctx.tick()
            if took_tile:
                pending.pop(0)
            if took_base:
                base_queue.pop(0)
            if len(freed) == len(tiles):
                break

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert [(g[0], g[1]) for g in got] == [(e[0], [v & 0xFFFF for v in e[1]]) for e in expected]
    lasts = [i for i, (kind, last) in enumerate([e for e in events if e[0] == "read"]) if last]
    assert lasts == [end - 1 for end in ends]
    assert freed == [[b] * slots for b in bases]
    # a tile's bases are freed after its last read, before the next tile's reads end
    order = [kind for kind, _ in events]
    for t in range(len(tiles)):
        reads_before = order[:[i for i, k in enumerate(order) if k == "free"][t]].count("read")
        assert ends[t] <= reads_before
