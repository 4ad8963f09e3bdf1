"""The StepLooper of a TAU: the one loop nest of the ordering rule.

:class:`StepLooper` walks the ordering rule of ``docs/tau.md`` §2 for each accumulation tile it is
given: warps of the parallel tile (outer; at the edge of the parallel space only the warps that
hold an output, :func:`edge_groups`), steps of the tile (inner). For every (warp, step) it
emits one *beat*: the instruction range of the step, the global accumulation index, the warp's
parallel coordinates and, per input slot, the tile address of the warp's lane 0 (and the output
element offset for the WP). Those addresses are kept as one running sum per loop level, so no
multiplier is needed (entering a level copies the sum above; stepping adds the level's step).
:func:`lane_map` decodes the configuration's lane map for the StepLooper, the Read Pipelines'
address generators and the Write Pipeline.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.arch import MAX_SLOTS
from merit.checks import check_lanes, check_range
from meritz import kernelcfg

__all__ = ["StepLooper", "lane_map", "edge_groups", "beat_layout", "acc_tile_layout",
           "ADDRESS_BITS"]

P, A = kernelcfg.P_INDICES, kernelcfg.A_INDICES
#: Width of tile addresses (SRAM word addresses of one RP; wraps).
ADDRESS_BITS = 16


def lane_map(m, config, lanes):
    """Per lane bit: the parallel index it moves and its rank among that index's lane bits;
    per parallel index: log2 of its lanes. Returns ``(index, rank, lanelog)`` lists of signals."""
    bits = lanes.bit_length() - 1
    index = [config.lane_index[i] for i in range(bits)]
    rank, lanelog = [], []
    for i in range(bits):
        r = Signal(range(bits + 1), name=f"lane_rank{i}")
        m.d.comb += r.eq(sum((index[k] == index[i]).as_unsigned() for k in range(i)) if i else 0)
        rank.append(r)
    for j in range(P):
        n = Signal(range(bits + 1), name=f"lanelog{j}")
        m.d.comb += n.eq(sum((index[i] == j).as_unsigned() for i in range(bits)) if bits else 0)
        lanelog.append(n)
    return index, rank, lanelog

def edge_groups(m, config, p_origin, lanelog, name):
    """Per parallel index: the lane groups (warps) of the parallel tile at ``p_origin`` that hold
    an output, ``ceil(min(p_tile, p_size - origin) / lanes)``, at least one (a void tile of a
    sharing group, wholly outside, still runs one group, so its SRAM tiles are read and freed).
    A tile at the edge of the parallel space skips its groups that lie wholly outside (they
    would compute, write nothing and hold the TAU). Returns a list of signals."""
    out = []
    for j in range(P):
        full = Signal(16, name=f"{name}_full{j}")
        rest = Signal(signed(18), name=f"{name}_rest{j}")
        need = Signal(18, name=f"{name}_need{j}")
        groups = Signal(16, name=f"{name}{j}")
        m.d.comb += [
            full.eq(config.p_tile[j] >> lanelog[j]),
            rest.eq(config.p_size[j] - p_origin[j]),
            need.eq((rest + (Const(1, 9) << lanelog[j]) - 1).as_unsigned() >> lanelog[j]),
            groups.eq(Mux(rest <= 0, 1, Mux(need < full, need, full))),
        ]
        out.append(groups)
    return out


def acc_tile_layout():
    """An accumulation tile for the StepLooper: origins of the parallel and accumulation tiles."""
    return data.StructLayout({
        "p_origin": data.ArrayLayout(unsigned(16), P),
        "a_origin": data.ArrayLayout(unsigned(16), A),
    })


def beat_layout(channels, pc_bits):
    """One (warp, step) of the ordering rule."""
    return data.StructLayout({
        "beg": unsigned(pc_bits),              # instruction range of the step
        "end": unsigned(pc_bits),
        "a_index": data.ArrayLayout(unsigned(16), A),   # global accumulation index
        "p_warp": data.ArrayLayout(unsigned(16), P),    # parallel coordinates of lane 0
        "warp": unsigned(8),                   # warp number within the parallel tile
        "addr": data.ArrayLayout(unsigned(ADDRESS_BITS), channels),  # per slot, lane 0
        "out": unsigned(32),                   # output element offset of lane 0
        "first": unsigned(1),                  # first beat of the accumulation tile
        "last": unsigned(1),                   # last beat of the accumulation tile
    })


class StepLooper(wiring.Component):
    """The loop nest of the ordering rule, for one accumulation tile at a time.

    Parameters
    ----------
    lanes : int
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.

    Members
    -------
    config : In(kernelcfg.layout(...))
        The kernel configuration (held for the whole kernel).
    tiles : In(stream.Signature(acc_tile_layout()))
        Accumulation tiles, in the order of the rule.
    beats : Out(stream.Signature(beat_layout(...)))
        One per (warp, step); channels: RP0 slots, then RP1 slots.
    """

    def __init__(self, *, lanes, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        self._slots = (check_range("rp0_slots", rp0_slots, 1, MAX_SLOTS),
                       check_range("rp1_slots", rp1_slots, 1, MAX_SLOTS))
        self._layout = kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                                        instructions=instructions)
        self._pc_bits = max(instructions, 1).bit_length()
        super().__init__({
            "config": In(self._layout),
            "tiles": In(stream.Signature(acc_tile_layout())),
            "beats": Out(stream.Signature(beat_layout(sum(self._slots), self._pc_bits))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        slots = [cfg.rp0[k] for k in range(self._slots[0])] + \
                [cfg.rp1[k] for k in range(self._slots[1])]
        _, _, lanelog = lane_map(m, cfg, self._lanes)
        levels = P + A                       # warp indices outer, accumulation indices inner
        # level lv < P: warp index lv; level P + j: accumulation index j

        # per level: size (registered at tile start), step per channel
        size = [Signal(16, name=f"size{lv}") for lv in range(levels)]
        a_origin = Array(Signal(16, name=f"a_origin{j}") for j in range(A))
        p_origin = Array(Signal(16, name=f"p_origin{j}") for j in range(P))
        chan_steps = []                      # [channel][level]
        for k, slot in enumerate(slots):
            steps = []
            for lv in range(levels):
                if lv >= P:
                    steps.append(slot.lstep[lv])
                else:
                    s = Signal(ADDRESS_BITS, name=f"wstep{k}_{lv}")
                    m.d.comb += s.eq(slot.lstep[lv] << lanelog[lv])
                    steps.append(s)
            chan_steps.append(steps)
        out_steps = []
        for lv in range(levels):
            if lv >= P:
                out_steps.append(Const(0, 32))
            else:
                s = Signal(32, name=f"ostep{lv}")
                m.d.comb += s.eq(cfg.out_pitch[lv] << lanelog[lv])
                out_steps.append(s)

        count = [Signal(16, name=f"k{lv}") for lv in range(levels)]
        sums = [[Signal(ADDRESS_BITS, name=f"sum{k}_{lv}") for lv in range(levels)]
                for k in range(len(slots))]
        osums = [Signal(32, name=f"osum{lv}") for lv in range(levels)]
        busy = Signal()
        first = Signal()
        warp = Signal(8)

        # accept a tile
        tile = self.tiles.payload
        groups = edge_groups(m, cfg, tile.p_origin, lanelog, "sl_groups")
        m.d.comb += self.tiles.ready.eq(~busy)
        with m.If(self.tiles.valid & ~busy):
            base = sum(tile.p_origin[j] * cfg.out_pitch[j] for j in range(P))
            m.d.sync += [busy.eq(1), first.eq(1), warp.eq(0)]
            for j in range(A):
                rest = cfg.a_size[j] - tile.a_origin[j]
                m.d.sync += [
                    size[P + j].eq(Mux(rest < cfg.a_tile[j], rest, cfg.a_tile[j])),
                    a_origin[j].eq(tile.a_origin[j]),
                ]
            for j in range(P):
                m.d.sync += [size[j].eq(groups[j]),
                             p_origin[j].eq(tile.p_origin[j])]
            for lv in range(levels):
                m.d.sync += [count[lv].eq(0), osums[lv].eq(base)]
                for k in range(len(slots)):
                    m.d.sync += sums[k][lv].eq(0)

        # the beat
        beat = self.beats.payload
        bumped = [Signal(16, name=f"k{lv}_next") for lv in range(levels)]
        m.d.comb += [bumped[lv].eq(count[lv] + 1) for lv in range(levels)]
        wrap = [Signal(name=f"wrap{lv}") for lv in range(levels)]
        m.d.comb += [wrap[lv].eq(bumped[lv] >= size[lv]) for lv in range(levels)]
        done = Cat(wrap).all()
        g = [Signal(16, name=f"g{j}") for j in range(A)]
        m.d.comb += [g[j].eq(a_origin[j] + count[P + j]) for j in range(A)]
        is_first = [g[j] == 0 for j in range(A)]
        is_last = [g[j] + 1 == cfg.a_size[j] for j in range(A)]
        kf = Signal(range(A + 1))
        kl = Signal(range(A + 1))
        m.d.comb += [
            kf.eq(_trailing(is_first)),
            kl.eq(_trailing(is_last)),
            beat.beg.eq(Array(cfg.begs)[kf]),
            beat.end.eq(Array(cfg.ends)[kl]),
            beat.warp.eq(warp),
            beat.out.eq(osums[-1]),
            beat.first.eq(first),
            beat.last.eq(done),
            self.beats.valid.eq(busy),
        ]
        m.d.comb += [beat.a_index[j].eq(g[j]) for j in range(A)]
        m.d.comb += [beat.p_warp[j].eq(p_origin[j] + (count[j] << lanelog[j]))
                     for j in range(P)]
        m.d.comb += [beat.addr[k].eq(sums[k][-1]) for k in range(len(slots))]

        # advance: the innermost level that does not wrap steps, the levels inside restart
        stepped = [[Signal(ADDRESS_BITS, name=f"sum{k}_{lv}_next") for lv in range(levels)]
                   for k in range(len(slots))]
        ostepped = [Signal(32, name=f"osum{lv}_next") for lv in range(levels)]
        for lv in range(levels):
            m.d.comb += [stepped[k][lv].eq(sums[k][lv] + chan_steps[k][lv])
                         for k in range(len(slots))]
            m.d.comb += ostepped[lv].eq(osums[lv] + out_steps[lv])
        with m.If(self.beats.valid & self.beats.ready):
            m.d.sync += first.eq(0)
            with m.If(done):
                m.d.sync += busy.eq(0)
            steps_here = [None] * levels
            for lv in range(levels):
                inner_wrap = Cat(wrap[lv + 1:]).all() if lv + 1 < levels else Const(1)
                steps_here[lv] = ~wrap[lv] & inner_wrap
            with m.If(Cat(wrap[P:]).all()):
                m.d.sync += warp.eq(warp + 1)
            for lv in range(levels):
                with m.If(steps_here[lv]):
                    m.d.sync += count[lv].eq(bumped[lv])
                    for inner in range(lv + 1, levels):
                        m.d.sync += count[inner].eq(0)
                    for k in range(len(slots)):
                        for inner in range(lv, levels):
                            m.d.sync += sums[k][inner].eq(stepped[k][lv])
                    for inner in range(lv, levels):
                        m.d.sync += osums[inner].eq(ostepped[lv])
        return m


def _trailing(flags):
    """Number of trailing (innermost, last in the list) true flags, as a priority chain."""
    n = len(flags)
    out = Const(0, range(n + 1))
    for k in range(1, n + 1):
        out = Mux(Cat(flags[n - k:]).all(), k, out)
    return out
