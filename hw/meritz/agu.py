"""Address generation of a TAU: the one loop nest (``StepLooper``) and the lane addresses (Eq. 10).

- :class:`StepLooper` walks the ordering rule of ``docs/tau.md`` §2 for each accumulation tile it
  is given: warps of the parallel tile (outer), steps of the tile (inner). For every (warp, step) it
  emits one *beat*: the instruction range of the step, the global accumulation index, the warp's
  parallel coordinates and, per input slot, the tile address of the warp's lane 0 (and the output
  element offset for the WP). Those addresses are kept as one running sum per loop level, so no
  multiplier is needed (entering a level copies the sum above; stepping adds the level's step).
- :func:`lane_offsets` builds the ``N`` constant lane offsets ``sum_i b_{n,i} c_i`` of Eq. 10 with
  ``N - 1`` adders, from the per-index steps and the lane map of the configuration.
- :class:`LaneAddressGenerator` is the address generator of one Read Pipeline: it expands each beat
  into one read per instruction of the range that reads this RP and adds the lane offsets, giving
  ``N`` tile addresses (and the tile's base row) per read.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from meritz import kernelcfg
from meritz.configs import check_lanes

__all__ = ["StepLooper", "LaneAddressGenerator", "lane_offsets", "lane_map", "reads_rp",
           "beat_layout", "tile_layout", "read_layout", "ADDRESS_BITS"]

P, A = kernelcfg.P_INDICES, kernelcfg.A_INDICES
#: Width of tile addresses (SRAM word addresses of one RP; wraps).
ADDRESS_BITS = 16
#: Opcodes and operand codes of merit.isa that decide which instructions read an RP.
_OP_LOGIC, _OP_INDEX, _OP_OUT, _LOGIC_SEL = 5, 6, 8, 2
_OPERAND_RP0 = 8


def _check_slots(name, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not 1 <= value <= 4:
        raise ValueError(f"{name} must be between 1 and 4, not {value}")
    return value


def reads_rp(word, port):
    """1 when the instruction ``word`` reads RP``port`` (merit.isa ``Instruction.reads_rp``)."""
    op, fn = word[28:32], word[25:28]
    a, b, c = word[10:15], word[5:10], word[0:5]
    code = _OPERAND_RP0 + port
    two = (op == _OP_OUT) | ((op == _OP_LOGIC) & (fn != _LOGIC_SEL))
    return ((a == code) | ((op != _OP_INDEX) & (b == code))
            | ((op != _OP_INDEX) & ~two & (c == code)))


def is_out(word):
    return word[28:32] == _OP_OUT


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


def lane_offsets(m, steps, index, rank, lanes, width, name="off"):
    """The ``lanes`` offsets ``sum_i b_{n,i} c_i``, ``c_i = steps[index[i]] << rank[i]``.

    ``steps`` is a list of ``P`` signals (one per parallel index). ``N - 1`` adders, no multiplier.
    """
    bits = lanes.bit_length() - 1
    table = Array(steps)
    c = []
    for i in range(bits):
        ci = Signal(width, name=f"{name}_c{i}")
        m.d.comb += ci.eq(table[index[i]] << rank[i])
        c.append(ci)
    offs = [Const(0, width)]
    for n in range(1, lanes):
        top = n.bit_length() - 1
        o = Signal(width, name=f"{name}{n}")
        m.d.comb += o.eq(offs[n & ~(1 << top)] + c[top])
        offs.append(o)
    return offs


def tile_layout():
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
    tiles : In(stream.Signature(tile_layout()))
        Accumulation tiles, in the order of the rule.
    beats : Out(stream.Signature(beat_layout(...)))
        One per (warp, step); channels: RP0 slots, then RP1 slots.
    """

    def __init__(self, *, lanes, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        self._slots = (_check_slots("rp0_slots", rp0_slots), _check_slots("rp1_slots", rp1_slots))
        self._layout = kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                                        instructions=instructions)
        self._pc_bits = max(instructions, 1).bit_length()
        super().__init__({
            "config": In(self._layout),
            "tiles": In(stream.Signature(tile_layout())),
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
                m.d.sync += [size[j].eq(cfg.p_tile[j] >> lanelog[j]),
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


def read_layout(lanes, slot_bits):
    """One read of an RP: the tile address of every lane, and the tile's base row."""
    return data.StructLayout({
        "addr": data.ArrayLayout(unsigned(ADDRESS_BITS), lanes),
        "base": unsigned(16),
        "slot": unsigned(slot_bits),
        "last": unsigned(1),                  # last read of the accumulation tile
    })


class LaneAddressGenerator(wiring.Component):
    """The address generator of one Read Pipeline (Eq. 10).

    For each beat, one read per instruction of ``[beg, end)`` that reads this RP, in address
    order; the k-th reader of the program reads slot k. Lane ``n`` of slot ``k`` reads tile
    address ``origin[k] + beat.addr[k] + offset_k(n)`` of the tile at row ``base[k]``.

    Parameters
    ----------
    lanes : int
    port : int
        0 (RP0) or 1 (RP1).
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :class:`StepLooper`.

    Members
    -------
    config : In(kernelcfg.layout(...))
    beats : In(stream.Signature(beat_layout(...)))
        From the StepLooper (through this RP's FIFO).
    bases : In(stream.Signature(data.ArrayLayout(unsigned(16), slots)))
        Base rows of this RP's slot tiles for the next accumulation tile (taken at its first beat).
    reads : Out(stream.Signature(read_layout(lanes, ...)))
    free : Out(stream.Signature(data.ArrayLayout(unsigned(16), slots)))
        The base rows of a finished accumulation tile (after its last beat).
    """

    def __init__(self, *, lanes, port, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        if port not in (0, 1):
            raise ValueError(f"port must be 0 or 1, not {port!r}")
        self._port = port
        self._all = (_check_slots("rp0_slots", rp0_slots), _check_slots("rp1_slots", rp1_slots))
        self._slots = self._all[port]
        self._instructions = instructions
        self._layout = kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                                        instructions=instructions)
        pc_bits = max(instructions, 1).bit_length()
        slot_bits = max(self._slots - 1, 1).bit_length()
        bases = data.ArrayLayout(unsigned(16), self._slots)
        super().__init__({
            "config": In(self._layout),
            "beats": In(stream.Signature(beat_layout(sum(self._all), pc_bits))),
            "bases": In(stream.Signature(bases)),
            "reads": Out(stream.Signature(read_layout(lanes, slot_bits))),
            "free": Out(stream.Signature(bases)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        lanes = self._lanes
        slots = [getattr(cfg, f"rp{self._port}")[k] for k in range(self._slots)]
        first_channel = 0 if self._port == 0 else self._all[0]
        index, rank, _ = lane_map(m, cfg, lanes)
        offs = [lane_offsets(m, [s.lstep[j] for j in range(P)], index, rank, lanes,
                             ADDRESS_BITS, name=f"off{k}_") for k, s in enumerate(slots)]

        n = self._instructions
        mask = Signal(n)
        m.d.comb += mask.eq(Cat(reads_rp(cfg.program[i], self._port) for i in range(n)))

        def readers_below(pc):
            """Readers of this RP at addresses below ``pc``."""
            return sum(Mux(pc > i, mask[i], 0) for i in range(n))

        beat = self.beats.payload
        have_bases = Signal()
        base = Array(Signal(16, name=f"base{k}") for k in range(self._slots))
        started = Signal()                   # the current beat's reads have begun
        k = Signal(range(n + 1))
        k_end = Signal(range(n + 1))
        k_lo = Signal(range(n + 1))
        m.d.comb += [k_lo.eq(readers_below(beat.beg)), k_end.eq(readers_below(beat.end))]
        cur = Signal(range(n + 1))
        m.d.comb += cur.eq(Mux(started, k, k_lo))

        # take the bases at the first beat of an accumulation tile (not while the previous
        # tile's bases wait to be freed)
        free_pending = Signal()
        need_bases = self.beats.valid & beat.first & ~have_bases & ~free_pending
        m.d.comb += self.bases.ready.eq(need_bases)
        with m.If(self.bases.valid & self.bases.ready):
            m.d.sync += have_bases.eq(1)
            m.d.sync += [base[i].eq(self.bases.payload[i]) for i in range(self._slots)]

        # free after the last beat (one entry buffer)
        m.d.comb += [self.free.valid.eq(free_pending)]
        m.d.comb += [self.free.payload[i].eq(base[i]) for i in range(self._slots)]
        with m.If(self.free.valid & self.free.ready):
            m.d.sync += free_pending.eq(0)

        ready_to_run = self.beats.valid & have_bases & ~free_pending
        more = cur < k_end
        read = self.reads.payload
        slot = Signal(range(max(self._slots, 2)))
        m.d.comb += slot.eq(cur)
        chan_addr = Array(beat.addr[first_channel + i] for i in range(self._slots))
        origin = Array(s.origin for s in slots)
        lane_base = Signal(ADDRESS_BITS)
        m.d.comb += lane_base.eq(origin[slot] + chan_addr[slot])
        table = [Array(offs[s][lane] for s in range(self._slots)) for lane in range(lanes)]
        m.d.comb += [read.addr[lane].eq(lane_base + table[lane][slot]) for lane in range(lanes)]
        m.d.comb += [
            read.slot.eq(slot),
            read.base.eq(base[slot]),
            read.last.eq(beat.last & (cur + 1 >= k_end)),
            self.reads.valid.eq(ready_to_run & more),
        ]
        finish = Signal()
        with m.If(ready_to_run):
            with m.If(more):
                with m.If(self.reads.ready):
                    m.d.sync += [started.eq(1), k.eq(cur + 1)]
                    m.d.comb += finish.eq(cur + 1 >= k_end)
            with m.Else():
                m.d.comb += finish.eq(1)
        m.d.comb += self.beats.ready.eq(finish)
        with m.If(finish):
            m.d.sync += started.eq(0)
            with m.If(beat.last):
                m.d.sync += [have_bases.eq(0), free_pending.eq(1)]
        return m
