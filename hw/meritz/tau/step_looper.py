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
           "ADDRESS_BITS", "CONFIG_CYCLES"]

P, A = kernelcfg.P_INDICES, kernelcfg.A_INDICES
#: Width of tile addresses (SRAM word addresses of one RP; wraps).
ADDRESS_BITS = 16
#: Cycles the configuration is held before the first tile reaches the StepLooper: it registers
#: the values it forms from the configuration (in the TAU the TileLooper alone takes more).
CONFIG_CYCLES = 4


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
        The kernel configuration (held for the whole kernel, from :data:`CONFIG_CYCLES` cycles
        before the first tile).
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
        bits = self._lanes.bit_length() - 1
        levels = P + A                       # warp indices outer, accumulation indices inner
        # level lv < P: warp index lv; level P + j: accumulation index j

        # ---- values of the configuration (held for the whole kernel), registered: no path
        # runs from the configuration's decode into the loop -----------------------------------
        _, _, lanelog_now = lane_map(m, cfg, self._lanes)
        lanelog = [Signal(range(bits + 1), name=f"lanelog{j}_r") for j in range(P)]
        m.d.sync += [lanelog[j].eq(lanelog_now[j]) for j in range(P)]
        chan_steps = []                      # [channel][level]
        for k, slot in enumerate(slots):
            steps = []
            for lv in range(levels):
                s = Signal(ADDRESS_BITS, name=f"wstep{k}_{lv}")
                m.d.sync += s.eq(slot.lstep[lv] << lanelog[lv] if lv < P else slot.lstep[lv])
                steps.append(s)
            chan_steps.append(steps)
        out_steps = []
        for lv in range(levels):
            if lv >= P:
                out_steps.append(Const(0, 32))
            else:
                s = Signal(32, name=f"ostep{lv}")
                m.d.sync += s.eq(cfg.out_pitch[lv] << lanelog[lv])
                out_steps.append(s)
        p_last = [Signal(signed(18), name=f"p_size_m1_{j}") for j in range(P)]
        full_m1 = [Signal(16, name=f"full_m1_{j}") for j in range(P)]
        a_last = [Signal(16, name=f"a_size_m1_{j}") for j in range(A)]
        a_tile_m1 = [Signal(16, name=f"a_tile_m1_{j}") for j in range(A)]
        for j in range(P):
            full = cfg.p_tile[j] >> lanelog[j]
            m.d.sync += [p_last[j].eq(cfg.p_size[j] - 1),
                         full_m1[j].eq(Mux(full == 0, 0, full - 1))]
        for j in range(A):
            m.d.sync += [a_last[j].eq(cfg.a_size[j] - 1),
                         a_tile_m1[j].eq(Mux(cfg.a_tile[j] == 0, 0, cfg.a_tile[j] - 1))]

        # ---- the next tile's values, computed while it waits in front of the looper ----------
        # a stream's payload holds while it is valid and not taken, so a value registered from
        # it is the waiting tile's from the cycle after it arrived (``held``); the values of
        # its parallel origin take two cycles and carry that origin (``pre_p``), which the
        # accumulation tiles of one parallel tile share
        tile = self.tiles.payload
        held = Signal()
        m.d.sync += held.eq(self.tiles.valid & ~self.tiles.ready)
        # per accumulation index: the last step of the tile, min(a_size - origin, a_tile) - 1
        pre_a_last = [Signal(16, name=f"pre_a_last{j}") for j in range(A)]
        for j in range(A):
            rest = Signal(16, name=f"pre_a_rest{j}")
            m.d.comb += rest.eq(a_last[j] - tile.a_origin[j])
            m.d.sync += pre_a_last[j].eq(Mux(rest < a_tile_m1[j], rest, a_tile_m1[j]))
        # per parallel index: the last warp of the tile (the tile's groups, ``edge_groups``,
        # minus one) and the output offset of its origin, sum origin * out_pitch
        pre_p1 = [Signal(16, name=f"pre_p1_{j}") for j in range(P)]
        pre_p = [Signal(16, name=f"pre_p{j}") for j in range(P)]
        pre_rest = [Signal(signed(18), name=f"pre_rest{j}") for j in range(P)]
        pre_outside = [Signal(name=f"pre_outside{j}") for j in range(P)]
        # origin * out_pitch in two halves (origin * the pitch's low 16 bits, and the low 16
        # bits of origin * its high 16 bits: a DSP each, into registers), summed apart; the
        # halves are joined where the tile starts (``pre_base``)
        pre_lo = [Signal(32, name=f"pre_lo{j}") for j in range(P)]
        pre_hi = [Signal(16, name=f"pre_hi{j}") for j in range(P)]
        pre_p_last = [Signal(16, name=f"pre_p_last{j}") for j in range(P)]
        pre_sum_lo = Signal(32)
        pre_sum_hi = Signal(16)
        for j in range(P):
            # groups - 1 = min(ceil(rest / lanes_j), full) - 1 = min((rest - 1) >> lanelog,
            # full - 1) for rest = p_size - origin > 0; one group when the tile lies outside
            m.d.sync += [pre_p1[j].eq(tile.p_origin[j]), pre_p[j].eq(pre_p1[j]),
                         pre_rest[j].eq(p_last[j] - tile.p_origin[j]),
                         pre_outside[j].eq(tile.p_origin[j] > p_last[j]),
                         pre_lo[j].eq(tile.p_origin[j] * cfg.out_pitch[j][:16]),
                         pre_hi[j].eq(tile.p_origin[j] * cfg.out_pitch[j][16:])]
            need_m1 = Signal(16, name=f"pre_need_m1_{j}")
            m.d.comb += need_m1.eq(pre_rest[j].as_unsigned() >> lanelog[j])
            m.d.sync += pre_p_last[j].eq(Mux(pre_outside[j], 0,
                                             Mux(need_m1 < full_m1[j], need_m1, full_m1[j])))
        m.d.sync += [pre_sum_lo.eq(sum(pre_lo)), pre_sum_hi.eq(sum(pre_hi))]
        pre_base = Signal(32)
        m.d.comb += pre_base.eq(pre_sum_lo + (pre_sum_hi << 16))
        # the waiting tile's origin is that of the values formed (``pre_p``) when it held last
        # cycle and the origin one stage in equalled it then: compared into a register
        p_same = Signal()
        m.d.sync += p_same.eq(Cat(pre_p1[j] == tile.p_origin[j] for j in range(P)).all())
        p_ready = p_same

        # per level: whether the last count is 0 and the last count less two (registered at
        # tile start), and whether the level is at its last count (``wrap``, a register: no
        # comparison lies between the counts and the enables of every sum)
        last_zero = [Signal(name=f"last_zero{lv}") for lv in range(levels)]
        # and whether it is at its last less one (``near``: the level wraps when it
        # steps), a flip-flop set from ``count == last - 2`` as the level steps and from ``last
        # == 1`` (``last - 2`` all ones) as it restarts (a separate flag for it made ABC9's
        # reintegration assert), so no comparison of counts lies before the flags
        last_m2 = [Signal(16, name=f"last_m2_{lv}") for lv in range(levels)]
        near = [Signal(name=f"near{lv}") for lv in range(levels)]
        wrap = [Signal(name=f"wrap{lv}") for lv in range(levels)]
        a_origin = Array(Signal(16, name=f"a_origin{j}") for j in range(A))
        p_origin = Array(Signal(16, name=f"p_origin{j}") for j in range(P))
        count = [Signal(16, name=f"k{lv}") for lv in range(levels)]
        g = [Signal(16, name=f"g{j}") for j in range(A)]     # global accumulation index
        sums = [[Signal(ADDRESS_BITS, name=f"sum{k}_{lv}") for lv in range(levels)]
                for k in range(len(slots))]
        osums = [Signal(32, name=f"osum{lv}") for lv in range(levels)]
        busy = Signal()
        first = Signal()
        warp = Signal(8)

        # accept a tile (ready while idle with no tile waiting, as the TAU's idle reads it).
        # While idle, the loop's registers load the waiting tile's start every cycle (the
        # last such load is the accept's), so their enable is ``busy``, a flip-flop, not the
        # accept: no logic lies between the accept's inputs and the ~1,400 registers it starts
        m.d.comb += self.tiles.ready.eq(~busy & (~self.tiles.valid | held & p_ready))
        with m.If(self.tiles.valid & self.tiles.ready):
            m.d.sync += busy.eq(1)
        with m.If(~busy):
            m.d.sync += [first.eq(1), warp.eq(0)]
            for j in range(A):
                m.d.sync += [a_origin[j].eq(tile.a_origin[j]), g[j].eq(tile.a_origin[j])]
            for j in range(P):
                m.d.sync += p_origin[j].eq(tile.p_origin[j])
            for lv, pre in enumerate(pre_p_last + pre_a_last):
                m.d.sync += [last_zero[lv].eq(pre == 0), last_m2[lv].eq(pre - 2),
                             near[lv].eq(pre == 1)]
            for lv in range(levels):
                m.d.sync += [count[lv].eq(0), osums[lv].eq(pre_base)]
                for k in range(len(slots)):
                    m.d.sync += sums[k][lv].eq(0)

        # the beat
        beat = self.beats.payload
        done = Cat(wrap).all()
        is_first = [g[j] == 0 for j in range(A)]
        is_last = [g[j] == a_last[j] for j in range(A)]
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

        # advance: the innermost level that does not wrap steps, the levels inside restart;
        # each sum takes the stepped sum of that level through one AND-OR selection. Which level
        # steps is kept in flip-flops beside the wrap flags it follows from (formed from their
        # next values), so the enables of the sums start at registers
        transfer = self.beats.valid & self.beats.ready
        steps_here = [Signal(name=f"steps{lv}") for lv in range(levels)]
        outer = [Signal(name=f"outer{lv}") for lv in range(levels)]     # a level above steps
        upto = [Signal(name=f"upto{lv}") for lv in range(levels)]       # this one or one above

        def flags(w):
            here = [~w[lv] & (Cat(w[lv + 1:]).all() if lv + 1 < levels else Const(1))
                    for lv in range(levels)]
            return (here, [Cat(here[:lv]).any() if lv else Const(0) for lv in range(levels)],
                    [Cat(here[:lv + 1]).any() for lv in range(levels)])

        # the flags for both answers of the accept, the last multiplexer
        wrap_next = [Signal(name=f"wrap{lv}_next") for lv in range(levels)]
        wrap_new = [Signal(name=f"wrap{lv}_new") for lv in range(levels)]    # a tile taken
        for lv in range(levels):
            m.d.comb += [wrap_next[lv].eq(wrap[lv]),
                         wrap_new[lv].eq((pre_p_last + pre_a_last)[lv] == 0)]
            with m.If(transfer):
                with m.If(steps_here[lv]):
                    m.d.comb += wrap_next[lv].eq(near[lv])
                with m.Elif(outer[lv]):
                    m.d.comb += wrap_next[lv].eq(last_zero[lv])
        accept = ~busy                   # as above: the waiting tile's flags while idle
        kept = flags(wrap_next)
        new = flags(wrap_new)
        m.d.sync += [w.eq(Mux(accept, n, k)) for w, k, n in zip(wrap, wrap_next, wrap_new,
                                                                  strict=True)]
        m.d.sync += [f.eq(Mux(accept, n, k))
                     for f, k, n in zip(steps_here + outer + upto, sum(kept, []), sum(new, []),
                                        strict=True)]

        def pick(values, upto):
            """The value of the level that steps, among levels 0 .. upto (an OR tree)."""
            terms = [Mux(steps_here[lv], values[lv], 0) for lv in range(upto + 1)]
            while len(terms) > 1:
                terms = [terms[i] | terms[i + 1] if i + 1 < len(terms) else terms[i]
                         for i in range(0, len(terms), 2)]
            return terms[0]

        with m.If(transfer):
            m.d.sync += first.eq(0)
            with m.If(done):
                m.d.sync += busy.eq(0)
            with m.If(Cat(wrap[P:]).all()):
                m.d.sync += warp.eq(warp + 1)
            for lv in range(levels):
                with m.If(steps_here[lv]):
                    m.d.sync += [count[lv].eq(count[lv] + 1), near[lv].eq(count[lv] == last_m2[lv])]
                    if lv >= P:
                        m.d.sync += g[lv - P].eq(g[lv - P] + 1)
                with m.Elif(outer[lv]):
                    m.d.sync += [count[lv].eq(0), near[lv].eq(last_m2[lv] == 0xFFFF)]
                    if lv >= P:
                        m.d.sync += g[lv - P].eq(a_origin[lv - P])
            # one selection over every level serves each level at or inside the one that steps
            # (no level above it steps), so no selection is a prefix of another
            picked = [pick([sums[k][lv] + chan_steps[k][lv] for lv in range(levels)],
                           levels - 1) for k in range(len(slots))]
            opicked = pick([osums[lv] + out_steps[lv] for lv in range(levels)], levels - 1)
            for inner in range(levels):
                with m.If(upto[inner]):
                    m.d.sync += [sums[k][inner].eq(picked[k]) for k in range(len(slots))]
                    m.d.sync += osums[inner].eq(opicked)
        return m


def _trailing(flags):
    """Number of trailing (innermost, last in the list) true flags, as a priority chain."""
    n = len(flags)
    out = Const(0, range(n + 1))
    for k in range(1, n + 1):
        out = Mux(Cat(flags[n - k:]).all(), k, out)
    return out
