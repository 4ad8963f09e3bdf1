"""The DMA of a TAU: footprints (Eq. 9) from DRAM into SRAM rows (``docs/tau.md`` §1, §4).

One DMA per TAU serves both Read Pipelines (one AXI4 read port). For each request (one input slot
of one (parallel tile, accumulation tile), with the base row its tile FIFO granted) it

1. computes the footprint's low corner in the tensor (``offset + sum origin_j * s_j``, negative
   strides included; one small product per index and tile, never per lane or word);
2. walks the box rows (axes 0..2, axis 3 innermost) and turns each into a *row command*: the part
   inside the tensor is read, the parts left / right of it are filled (``zero``: 0; ``clamp``: the
   edge word), a row outside the tensor on an outer axis is all zero (``zero``) or the clamped row
   (``clamp``);
3. issues the reads as AXI4 INCR bursts (at most 16 beats of 8 bytes, never across 4 KB), running
   ahead of the data by a 16-row command FIFO;
4. places the returned words, up to 4 per cycle, at their tile addresses (row-major box with the
   local pitches ``lpitch``) in a two-row buffer and sends out complete SRAM rows of ``N`` words in
   order: rows ``0 .. rows-1`` of the tile, padding (never written) as zeros. A row leaves in the
   same cycle as the chunk that starts the row after it arrives (the half being sent is refilled
   at once), so the read channel stays accepted while rows are handed on; only the rows left at
   the end of a tile (its last one or two) take cycles of their own.

The rows go to the collector of the slot's RP, which places them into banks
(:class:`meritz.tau.rp.collector.Collector`); their number is the tile size the FIFO allocated, so
the tile commits exactly when its last row is written.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from merit.arch import MAX_BURST, WORDS_PER_BEAT
from merit.checks import check_lanes
from meritz import kernelcfg
from meritz.bus import AXI4Signature
from meritz.tau.step_looper import acc_tile_layout

__all__ = ["Dma", "check_dma_lanes", "request_layout", "row_layout"]

P, A, AXES = kernelcfg.P_INDICES, kernelcfg.A_INDICES, kernelcfg.AXES


def request_layout(slot_bits=2):
    """One tile to load: which slot (RP0 slots first, then RP1), where, into which rows."""
    return data.StructLayout({
        "slot": unsigned(slot_bits),
        "tile": acc_tile_layout(),
        "base": unsigned(16),
    })


def row_layout(lanes, slot_bits=2):
    """One SRAM row of a tile, ``N`` words in tile-address order."""
    return data.StructLayout({
        "data": data.ArrayLayout(signed(16), lanes),
        "row": unsigned(16),            # tile-local row
        "base": unsigned(16),           # the tile's base row
        "slot": unsigned(slot_bits),
        "last": unsigned(1),            # last row of the tile
    })


def _command_layout(slot_bits):
    return data.StructLayout({
        "read": unsigned(1),            # this row reads DRAM
        "addr": unsigned(32),           # byte address of the first beat
        "beats": unsigned(16),
        "skip": unsigned(2),            # words of the first beat before the first element
        "left": unsigned(16),           # fill words before the inside part
        "inside": unsigned(16),         # words of the read placed into the tile
        "right": unsigned(16),          # fill words after it
        "clamp": unsigned(1),           # fills replicate the edge word (else 0)
        "taddr": unsigned(16),          # tile address of the row's first word
        "t_inside": unsigned(16),       # ... of its first word read (taddr + left)
        "t_right": unsigned(16),        # ... of its right fill (taddr + left + inside)
        "rows": unsigned(16),           # rows of the tile
        "base": unsigned(16),
        "slot": unsigned(slot_bits),
        "last": unsigned(1),            # last row command of the tile
        # flags the data path reads in a row's first cycle, formed as the command is queued
        "lf": unsigned(1),              # clamp & read & left != 0: a left fill to write
        "rf": unsigned(1),              # ... a right fill
        "bnz": unsigned(1),             # beats != 0
        "ble1": unsigned(1),            # beats <= 1
        "rle4": unsigned(1),            # right <= WORDS_PER_BEAT: the right fill's last chunk
        "t_first": unsigned(16),        # tile address of the row's first chunk (its first part's)
    })


def check_dma_lanes(lanes):
    """``lanes`` (a power of two) of at least :data:`WORDS_PER_BEAT`: the row assembler places a
    beat's words (up to 4, at any tile address) into a buffer of two SRAM rows, so a row must hold
    4 words; with 2 lanes a chunk can span 3 rows and the DMA stalls for good."""
    check_lanes(lanes)
    if lanes < WORDS_PER_BEAT:
        raise ValueError(f"the TAU's DMA needs at least {WORDS_PER_BEAT} lanes (the words of one "
                         f"{2 * WORDS_PER_BEAT}-byte beat in one SRAM row), not {lanes}")
    return lanes


def _clip(value, low, high):
    return Mux(value < low, low, Mux(value > high, high, value))


class Dma(wiring.Component):
    """Footprint loader: requests in, AXI4 reads out, SRAM rows back.

    Parameters
    ----------
    lanes : int
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.

    Members
    -------
    config : In(kernelcfg.layout(...))
    requests : In(stream.Signature(request_layout()))
    m_axi : Out(AXI4Signature(write=False))
    rows : Out(stream.Signature(row_layout(lanes)))
    idle : Out(1)
        No request in progress and no read outstanding.
    error : Out(1)
        Sticky: a read response other than OKAY.
    loading, loading_slot : Out(1), Out(2)
        A load's reads are still to be requested (its row walk, or a row command whose ARs
        are not all issued), and its slot: that of the row command waiting for its ARs, else
        that of the request being walked.
    """

    def __init__(self, *, lanes, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_dma_lanes(lanes)
        self._slots = (rp0_slots, rp1_slots)
        self._layout = kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                                        instructions=instructions)
        super().__init__({
            "config": In(self._layout),
            "requests": In(stream.Signature(request_layout())),
            "m_axi": Out(AXI4Signature(write=False)),
            "rows": Out(stream.Signature(row_layout(lanes))),
            "idle": Out(1),
            "error": Out(1),
            "loading": Out(1),
            "loading_slot": Out(2),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        lanes = self._lanes
        slots = [cfg.rp0[k] for k in range(self._slots[0])] + \
                [cfg.rp1[k] for k in range(self._slots[1])]
        slots = slots + [slots[-1]] * (4 - len(slots))
        req = self.requests.payload

        # ---- 1. accept a request: low corner of the footprint --------------------------------
        # in three register stages, one request at a time, while the walker may still walk the
        # one before: Q the origins moved by the slot's negative strides (origin + tile - 1),
        # M their products with the strides (one per index), S per axis the sums of the
        # products of indices 0-5 and 6-11 (and the offset); the walker takes the corner from S
        busy = Signal()
        slot_no = Signal(2)
        base_row = Signal(16)
        low = [Signal(signed(20), name=f"low{i}") for i in range(AXES)]
        # one multiplexer per selected slot (not one per use of a field)
        slot = Signal(kernelcfg.slot_layout())
        rslot = Signal(kernelcfg.slot_layout())
        m.d.comb += [slot.eq(Array(s.as_value() for s in slots)[slot_no]),
                     rslot.eq(Array(s.as_value() for s in slots)[req.slot])]
        origin = [req.tile.p_origin[j] for j in range(P)] + [req.tile.a_origin[j] for j in range(A)]
        tiles = [cfg.p_tile[j] for j in range(P)] + [cfg.a_tile[j] for j in range(A)]
        tile_m1 = [Signal(signed(17), name=f"tile_m1_{j}") for j in range(P + A)]
        m.d.sync += [tile_m1[j].eq(tiles[j] - 1) for j in range(P + A)]
        q_valid, m_valid, s_valid = Signal(), Signal(), Signal()
        q_slot, m_slot, s_slot = Signal(2), Signal(2), Signal(2)
        q_base, m_base, s_base = Signal(16), Signal(16), Signal(16)
        q_org = [Signal(signed(18), name=f"q_org{j}") for j in range(P + A)]
        q_stride = [Signal(signed(8), name=f"q_stride{j}") for j in range(P + A)]
        q_axis = [Signal(2, name=f"q_axis{j}") for j in range(P + A)]
        m_prod = [Signal(signed(20), name=f"m_prod{j}") for j in range(P + A)]
        # which axis each product goes to, one-hot (flip-flops: S's terms are ANDs, no
        # comparison in front of its sums)
        m_on = [[Signal(name=f"m_on{i}_{j}") for j in range(P + A)] for i in range(AXES)]
        s_half = [[Signal(signed(20), name=f"s_half{i}_{h}") for h in range(2)]
                  for i in range(AXES)]
        m.d.comb += self.requests.ready.eq(~q_valid & ~m_valid & ~s_valid)
        m.d.sync += [q_valid.eq(self.requests.valid & self.requests.ready), m_valid.eq(q_valid)]
        with m.If(self.requests.valid & self.requests.ready):
            m.d.sync += [q_slot.eq(req.slot), q_base.eq(req.base)]
            for j in range(P + A):
                s = rslot.stride[j]
                m.d.sync += [q_org[j].eq(origin[j] + Mux(s < 0, tile_m1[j], 0)),
                             q_stride[j].eq(s), q_axis[j].eq(rslot.axis[j])]
        with m.If(q_valid):
            m.d.sync += [m_slot.eq(q_slot), m_base.eq(q_base)]
            m.d.sync += [m_prod[j].eq(q_org[j] * q_stride[j]) for j in range(P + A)]
            m.d.sync += [m_on[i][j].eq(q_axis[j] == i) for i in range(AXES) for j in range(P + A)]
        with m.If(m_valid):
            m.d.sync += [s_valid.eq(1), s_slot.eq(m_slot), s_base.eq(m_base)]
            mslot = Array(s.as_value() for s in slots)[m_slot]
            mslot = kernelcfg.slot_layout()(mslot)
            for i in range(AXES):
                for h, js in enumerate((range(P), range(P, P + A))):
                    terms = [Mux(m_on[i][j], m_prod[j], 0) for j in js]
                    if h == 0:
                        terms.append(mslot.offset[i])
                    m.d.sync += s_half[i][h].eq(sum(terms))

        # ---- 2. the row walker: one row command per cycle ------------------------------------
        # four stages, all held while the AR issuer's spare holds a command (``advance``): the
        # counters (box coordinates k, tensor coordinates x = low + k), then R1 the coordinates
        # clipped into the tensor, R2 their products with the slot's pitches and the row's fill
        # and read words, R3 the element's address and the read's first column, then the command
        cmd_layout = _command_layout(2)
        m.submodules.cmds = cmds = SyncFIFOBuffered(width=cmd_layout.size, depth=MAX_BURST)
        k = [Signal(16, name=f"k{i}") for i in range(3)]
        x = [Signal(signed(20), name=f"x{i}") for i in range(3)]
        box_m1 = [Signal(16, name=f"box_m1_{i}") for i in range(3)]
        # per counter, flip-flops: at its last count (``k == box_m1``), one before it, and
        # whether its box has one or two counts (what a restart from 0 sets the first two to),
        # so which axis steps is decided from flip-flops, with no 16-bit equality in series
        at_last = [Signal(name=f"at_last{i}") for i in range(3)]
        near = [Signal(name=f"near{i}") for i in range(3)]
        box_one = [Signal(name=f"box_one{i}") for i in range(3)]
        box_two = [Signal(name=f"box_two{i}") for i in range(3)]
        n_m1 = [Signal(signed(17), name=f"n_m1_{i}") for i in range(3)]
        taddr = [Signal(16, name=f"taddr{i}") for i in range(3)]
        dpitch = [Signal(32, name=f"dpitch{i}") for i in range(3)]
        walk_valid = Signal()
        walk_cmd = Signal(cmd_layout)
        walk_take = Signal()
        advance = Signal()
        r_valid = [Signal(name=f"r{n}_valid") for n in (1, 2, 3)]
        # the row in R1 .. R3: its command fields so far, and what the next stage needs
        r_cmd = [Signal(cmd_layout, name=f"r{n}_cmd") for n in (1, 2, 3)]
        r_lo3 = [Signal(signed(20), name=f"r{n}_lo3") for n in (1, 2)]
        r1_xc = [Signal(16, name=f"r1_xc{i}") for i in range(3)]
        r1_dpitch = [Signal(32, name=f"r1_dpitch{i}") for i in range(3)]
        r2_lo = [Signal(32, name=f"r2_lo{i}") for i in range(3)]
        r2_hi = [Signal(16, name=f"r2_hi{i}") for i in range(3)]
        r2_box3 = Signal(16)             # the row's slot's box[3] (not multiplexed again in R2)
        r1_box3 = Signal(16)             # ... and its box[3] and extent[3] in R1
        r1_n3 = Signal(16)
        r3_elem = Signal(32)
        r3_col = Signal(16)
        r3_nread = Signal(17)

        # the counters' row
        xc = [Signal(16, name=f"xc{i}") for i in range(3)]
        outside = []
        for i in range(3):
            m.d.comb += xc[i].eq(Mux(x[i] < 0, 0, Mux(x[i] > n_m1[i], n_m1[i], x[i])))
            outside.append(((x[i] < 0) | (x[i] > n_m1[i])) & ~slot.clamp[i])
        last_row = Cat(at_last).all()
        row0 = Signal(cmd_layout)
        m.d.comb += [row0.taddr.eq(taddr[2]), row0.rows.eq(slot.rows), row0.base.eq(base_row),
                     row0.slot.eq(slot_no), row0.last.eq(last_row), row0.clamp.eq(slot.clamp[3]),
                     row0.read.eq(~Cat(outside).any())]     # R2 adds the fills' condition
        with m.If(~busy & s_valid):
            # take the next request: its corner, its box and the slot's sizes
            sslot = kernelcfg.slot_layout()(Array(s.as_value() for s in slots)[s_slot])
            m.d.sync += [busy.eq(1), s_valid.eq(0), slot_no.eq(s_slot), base_row.eq(s_base)]
            for i in range(AXES):
                m.d.sync += low[i].eq(s_half[i][0] + s_half[i][1])
            for i in range(3):
                m.d.sync += [k[i].eq(0), taddr[i].eq(0), x[i].eq(s_half[i][0] + s_half[i][1]),
                             box_m1[i].eq(Mux(sslot.box[i] == 0, 0, sslot.box[i] - 1)),
                             at_last[i].eq(sslot.box[i] <= 1), near[i].eq(sslot.box[i] == 2),
                             box_one[i].eq(sslot.box[i] <= 1), box_two[i].eq(sslot.box[i] == 2),
                             n_m1[i].eq(sslot.extent[i] - 1), dpitch[i].eq(sslot.dpitch[i])]
        with m.If(advance):
            m.d.sync += [r_valid[0].eq(busy), r_valid[1].eq(r_valid[0]),
                         r_valid[2].eq(r_valid[1])]
            m.d.sync += [r_cmd[0].eq(row0), r_lo3[0].eq(low[3]), r1_box3.eq(slot.box[3]),
                         r1_n3.eq(slot.extent[3])]
            m.d.sync += [r1_xc[i].eq(xc[i]) for i in range(3)]
            m.d.sync += [r1_dpitch[i].eq(dpitch[i]) for i in range(3)]
            with m.If(busy):
                with m.If(last_row):
                    m.d.sync += busy.eq(0)
                # advance (axis 2 innermost); tile addresses as per-level running sums
                def step(i):
                    return [k[i].eq(k[i] + 1), x[i].eq(x[i] + 1), at_last[i].eq(near[i]),
                            near[i].eq(k[i] + 2 == box_m1[i])]

                def restart(i):
                    return [k[i].eq(0), x[i].eq(low[i]), at_last[i].eq(box_one[i]),
                            near[i].eq(box_two[i])]

                with m.If(~at_last[2]):
                    m.d.sync += [*step(2), taddr[2].eq(taddr[2] + slot.lpitch[2])]
                with m.Elif(~at_last[1]):
                    new = taddr[1] + slot.lpitch[1]
                    m.d.sync += [*restart(2), *step(1), taddr[1].eq(new), taddr[2].eq(new)]
                with m.Else():
                    new = taddr[0] + slot.lpitch[0]
                    m.d.sync += [*restart(2), *restart(1), *step(0), taddr[0].eq(new),
                                 taddr[1].eq(new), taddr[2].eq(new)]

        # R1 -> R2: the products (low and high halves of each pitch), the fills of the row
        c_lo = r_lo3[0]
        box3 = r1_box3
        n3 = r1_n3
        left = Signal(16)
        right = Signal(16)
        m.d.comb += [
            left.eq(_clip(-c_lo, 0, box3)),
            right.eq(_clip(c_lo + box3 - n3, 0, box3)),
        ]
        with m.If(advance):
            m.d.sync += [r2_lo[i].eq(r1_xc[i] * r1_dpitch[i][:16]) for i in range(3)]
            m.d.sync += [r2_hi[i].eq(r1_xc[i] * r1_dpitch[i][16:]) for i in range(3)]
            m.d.sync += [r_cmd[1].eq(r_cmd[0]), r_lo3[1].eq(c_lo),
                         r_cmd[1].left.eq(left), r_cmd[1].right.eq(right), r2_box3.eq(box3)]

        # R2 -> R3: the element's offset, the words read and placed, the first column read
        r2 = r_cmd[1]
        r2slot = kernelcfg.slot_layout()(Array(s.as_value() for s in slots)[r2.slot])
        inside = Signal(16)
        m.d.comb += inside.eq(r2_box3 - r2.left - r2.right)
        # beside it: whether nothing is inside (the fills cover the box: ``left + right`` is at
        # most the box), and the words read plus a beat's words less one, so that the beats'
        # count takes no adder behind the multiplexer
        none_in = Signal()
        in_more = Signal(17)
        m.d.comb += [none_in.eq((r2.left + r2.right) == r2_box3),
                     in_more.eq(r2_box3 + (WORDS_PER_BEAT - 1) - r2.left - r2.right)]
        edge_only = none_in & r2.clamp
        with m.If(advance):
            m.d.sync += [r_cmd[2].eq(r2), r_cmd[2].inside.eq(inside),
                         r_cmd[2].t_inside.eq(r2.taddr + r2.left),
                         r_cmd[2].t_right.eq(r2.taddr + r2_box3 - r2.right),
                         r_cmd[2].read.eq(r2.read & (~none_in | r2.clamp)),
                         r3_elem.eq(sum(r2_lo) + (sum(r2_hi) << 16)),
                         r3_col.eq(Mux(~none_in, Mux(r_lo3[1] < 0, 0, r_lo3[1]),
                                       Mux(r2.left != 0, 0, r2slot.extent[3] - 1))),
                         r3_nread.eq(Mux(edge_only, WORDS_PER_BEAT, in_more))]

        # R3 -> the command: byte address, first-beat skip and beats
        r3 = r_cmd[2]
        r3slot = kernelcfg.slot_layout()(Array(s.as_value() for s in slots)[r3.slot])
        byte = Signal(32)
        m.d.comb += byte.eq(r3slot.base + ((r3_elem + r3_col) << 1))
        skip = byte[1:3]
        cmd = Signal(cmd_layout)
        m.d.comb += [
            cmd.eq(r3),
            cmd.addr.eq(Cat(Const(0, 3), byte[3:])),
            cmd.beats.eq((skip + r3_nread) >> 2),
            cmd.skip.eq(skip),
        ]
        # ---- 3. AR issuer ---------------------------------------------------------------------
        # the command being issued (``walk_cmd``) and a spare behind it: the walker's stages
        # move while the spare is empty, a registered condition, and the issuer counts down
        # the beats left from a running address, so no path runs from the AR handshake
        # through the burst arithmetic into every register of the walker
        axi = self.m_axi
        spare_valid = Signal()
        spare_cmd = Signal(cmd_layout)
        ar_addr = Signal(32)
        remaining = Signal(16)           # beats of the current command still to request
        first_ar = Signal()
        # the burst: min(remaining, MAX_BURST, beats to the 4 KB boundary); the boundary is
        # nearer than a burst only in a page's last 16 beats (then 16 - the beat's position)
        assert MAX_BURST == 16
        # ``to_4k``, min(beats to the 4 KB boundary, MAX_BURST), is a register kept with the
        # address (set from the command's address as it is taken; after a burst that is not
        # the last it is 16 unless the address moved into a page's last 16 beats), so the
        # last burst's test starts at flip-flops
        def beats_to_4k(addr):
            return Mux(addr[7:12].all(), MAX_BURST - addr[3:7], MAX_BURST)
        to_4k = Signal(5, init=MAX_BURST)
        # the command's last AR takes the beats left, every other one ``to_4k`` (the beats left
        # are more), so the running address and count step by ``to_4k``, formed from the
        # address alone
        last_ar = (remaining[5:] == 0) & (remaining[:5] <= to_4k)
        burst_len = Signal(5)
        m.d.comb += burst_len.eq(Mux(last_ar, remaining[:5], to_4k))
        need_ar = walk_valid & walk_cmd.read
        queued = Signal(cmd_layout)
        m.d.comb += [queued.eq(walk_cmd),
                     queued.lf.eq(walk_cmd.clamp & walk_cmd.read & (walk_cmd.left != 0)),
                     queued.rf.eq(walk_cmd.clamp & walk_cmd.read & (walk_cmd.right != 0)),
                     queued.bnz.eq(walk_cmd.beats != 0),
                     queued.ble1.eq(walk_cmd.beats[1:] == 0),
                     queued.rle4.eq(walk_cmd.right <= WORDS_PER_BEAT),
                     queued.t_first.eq(Mux(walk_cmd.clamp & walk_cmd.read & (walk_cmd.left != 0),
                                           walk_cmd.taddr,
                                           Mux(walk_cmd.read & (walk_cmd.beats != 0),
                                               walk_cmd.t_inside, walk_cmd.t_right)))]
        # the command goes to the data path with the first AR of its row (or alone)
        push_ok = cmds.w_rdy
        m.d.comb += [
            axi.arvalid.eq(need_ar & (~first_ar | push_ok)),
            axi.araddr.eq(ar_addr),
            axi.arlen.eq(burst_len - 1),
            axi.arsize.eq(3),
            axi.arburst.eq(1),
            cmds.w_data.eq(queued.as_value()),
        ]
        ar_go = axi.arvalid & axi.arready
        with m.If(ar_go):
            with m.If(last_ar):
                m.d.comb += walk_take.eq(1)
            with m.Else():
                m.d.sync += [first_ar.eq(0), remaining.eq(remaining - to_4k),
                             ar_addr.eq(ar_addr + (to_4k << 3)),
                             to_4k.eq(Mux((to_4k == MAX_BURST) & (ar_addr[7:12] == 0b11110),
                                          MAX_BURST - ar_addr[3:7], MAX_BURST))]
        with m.If(walk_valid & ~walk_cmd.read & push_ok):
            m.d.comb += walk_take.eq(1)
        m.d.comb += cmds.w_en.eq((ar_go & first_ar) | (walk_valid & ~walk_cmd.read & push_ok))
        # the walker's last stage: into the issuer when it is free, else into the spare
        m.d.comb += advance.eq(~spare_valid)
        push = r_valid[2] & advance
        head = Signal(cmd_layout)
        m.d.comb += head.eq(Mux(spare_valid, spare_cmd, cmd))
        with m.If(~walk_valid | walk_take):
            m.d.sync += [walk_valid.eq(spare_valid | push), walk_cmd.eq(head),
                         remaining.eq(head.beats), ar_addr.eq(head.addr),
                         to_4k.eq(beats_to_4k(head.addr)), first_ar.eq(1), spare_valid.eq(0)]
        with m.Elif(push):
            m.d.sync += spare_valid.eq(1)
        # the empty spare takes the walker's command every cycle (its flag says whether it
        # holds one), so its enable is a flip-flop, not the AR handshake and the burst's end
        with m.If(~spare_valid):
            m.d.sync += spare_cmd.eq(cmd)

        # ---- 4. data path: chunks of up to 4 words at tile addresses ------------------------
        # two stages: D decides each chunk (its part, words, tile address) from the command and
        # the R beat and pushes it into a queue of two entries; W, the row assembler, writes the
        # head into the row buffer when its rows are in it. D moves on a registered condition
        # (the queue's second entry empty), so the decision, the R handshake and the command's
        # pop never wait for the assembler's row comparisons in the same cycle
        cur = Signal(cmd_layout)
        m.d.comb += cur.eq(cmds.r_data)
        phase = Signal(2)                # 0 left, 1 inside, 2 right
        edge = Signal(16)                # last word read (right fill of clamp rows)
        row_bits = lanes.bit_length() - 1
        entry_layout = data.StructLayout({
            "has": unsigned(1),                         # a chunk (else a flush alone)
            "row": unsigned(16 - row_bits),             # the row of its first word
            "pos": unsigned(row_bits + 1),              # its first word in the row pair
            "cross": unsigned(1),                       # its last word in the next row (W)
            "count": unsigned(3),
            "words": data.ArrayLayout(unsigned(16), WORDS_PER_BEAT),
            "base": unsigned(16),
            "slot": unsigned(2),
            "flush": unsigned(1),                       # the tile's last row ends with it
            "rows": unsigned(16),
        })
        d_ent = Signal(entry_layout)
        d_push = Signal()
        q_ent = [Signal(entry_layout, name=f"q_ent{n}") for n in range(2)]
        q_full = [Signal(name=f"q_full{n}") for n in range(2)]
        d_go = ~q_full[1]                # D moves: the queue has room (a register)
        chunk_valid = Signal()
        chunk_addr = Signal(16)
        chunk_count = Signal(3)
        chunk_words = [Signal(16, name=f"chunk_word{q}") for q in range(WORDS_PER_BEAT)]
        beat = [axi.rdata[16 * q:16 * q + 16] for q in range(WORDS_PER_BEAT)]

        have = cmds.r_rdy
        # the row's first cycle (``fresh``) reads its counts from the command; then registers
        # hold the words left of each part (left fill, read, right fill) and the beats left,
        # so no subtraction lies between them and the chunk's handshake
        wa_ok = Signal()
        fresh = ~wa_ok
        left_rem_r = Signal(16)
        in_rem_r = Signal(16)
        right_rem_r = Signal(16)
        beats_rem_r = Signal(16)
        first_beat_r = Signal()
        # and whether they are nonzero (beats: at most 1), so that no test of 16 bits lies
        # in the decision
        left_nz_r = Signal()
        right_nz_r = Signal()
        beats_nz_r = Signal()
        beats_le1_r = Signal()
        right_le4_r = Signal()
        left_rem = Mux(fresh, cur.left, left_rem_r)
        in_rem = Mux(fresh, cur.inside, in_rem_r)
        right_rem = Mux(fresh, cur.right, right_rem_r)
        beats_rem = Mux(fresh, cur.beats, beats_rem_r)
        first_beat = fresh | first_beat_r
        # phases: 0 left fill, 1 inside, 2 right fill; a phase with nothing to do falls through
        # to the next one in the same cycle, and a row ends with its last chunk
        left_fill = cur.lf
        right_fill = cur.rf
        left_nz = fresh | left_nz_r      # (a fill's words are nonzero in its row's first cycle)
        right_nz = fresh | right_nz_r
        beats_nz = Mux(fresh, cur.bnz, beats_nz_r)
        in_left = (phase == 0) & left_fill & left_nz
        in_inside = ~in_left & (phase <= 1) & cur.read & beats_nz
        in_right = ~in_left & ~in_inside & right_fill & right_nz
        # the counts' comparisons with at most a beat's words as tests of bits (no carry chain)
        wb = WORDS_PER_BEAT.bit_length() - 1
        assert WORDS_PER_BEAT == 1 << wb
        left_n = Mux(left_rem[wb:] == 0, left_rem[:wb], WORDS_PER_BEAT)
        first_word = Array(beat)[cur.skip]
        # inside: words of this beat that land in the tile
        beat_first = Mux(first_beat, cur.skip, 0)
        # the beat's words from its first one (4 - beat_first) and whether the words left are
        # fewer, as tables of a few bits (LUTs, not a subtraction and a carry chain)
        avail = Array(Const(WORDS_PER_BEAT - f, wb + 1) for f in range(WORDS_PER_BEAT))[beat_first]
        fewer = Const(sum(1 << (f | (r << wb)) for f in range(WORDS_PER_BEAT)
                          for r in range(1 << (wb + 1)) if r < WORDS_PER_BEAT - f),
                      WORDS_PER_BEAT << (wb + 1)).bit_select(Cat(beat_first, in_rem[:wb + 1]), 1)
        in_n = Mux((in_rem[wb + 1:] == 0) & fewer, in_rem[:wb + 1], avail)
        right_n = Mux(right_rem[wb:] == 0, right_rem[:wb], WORDS_PER_BEAT)
        shifted = Signal(64)
        m.d.comb += shifted.eq(axi.rdata >> (beat_first << 4))
        last_beat = Mux(fresh, cur.ble1, beats_le1_r)
        right_last = Mux(fresh, cur.rle4, right_le4_r)

        def over_beat(n):                # n > WORDS_PER_BEAT, by bits
            return (n[wb + 1:] != 0) | (n[wb] & (n[:wb] != 0))
        row_done = Signal()
        m.d.comb += axi.rready.eq(0)
        # the address of the row's next word: the left fill, the words read and the right fill
        # follow each other, so after the row's first cycle it is a register (``wa``) that the
        # words placed advance; in that first cycle it is the start of the row's first part,
        # chosen as the command was queued (``t_first``: in its first cycle a row is in the
        # left fill if it has one, else in the read if it reads, else in the right fill)
        wa = Signal(16)
        addr_now = Signal(16)
        m.d.comb += addr_now.eq(Mux(wa_ok, wa, cur.t_first))
        # the address advanced by each count a chunk can have, formed from registers beside
        # the decision, which selects last
        wa_by = Array([addr_now] + [Signal(16, name=f"wa_by{c}")
                                    for c in range(1, WORDS_PER_BEAT + 1)])
        m.d.comb += [wa_by[c].eq(addr_now + c) for c in range(1, WORDS_PER_BEAT + 1)]
        left_took = Signal()
        in_took = Signal()
        right_took = Signal()
        step = Signal()                  # D decides this cycle
        m.d.comb += step.eq(have & d_go)
        with m.If(step):
            with m.If(in_left):
                with m.If(axi.rvalid):
                    m.d.comb += [chunk_valid.eq(1), chunk_addr.eq(addr_now),
                                 chunk_count.eq(left_n), left_took.eq(1)]
                    m.d.comb += [w.eq(first_word) for w in chunk_words]
            with m.Elif(in_inside):
                with m.If(axi.rvalid):
                    m.d.comb += [chunk_valid.eq(in_n != 0),
                                 chunk_addr.eq(addr_now),
                                 chunk_count.eq(in_n)]
                    m.d.comb += [chunk_words[q].eq(shifted[16 * q:16 * q + 16])
                                 for q in range(WORDS_PER_BEAT)]
                    m.d.comb += [axi.rready.eq(1), in_took.eq(1)]
                    m.d.sync += phase.eq(1)
                    # remember the last word read for a replicated right edge
                    last_pos = Mux(in_n == 0, beat_first, beat_first + in_n - 1)
                    with m.If(last_beat):
                        m.d.sync += [edge.eq(Array(beat)[last_pos[:2]]), phase.eq(2)]
                        m.d.comb += row_done.eq(~right_fill)
            with m.Elif(in_right):
                m.d.comb += [chunk_valid.eq(1),
                             chunk_addr.eq(addr_now),
                             chunk_count.eq(right_n)]
                m.d.comb += [w.eq(edge) for w in chunk_words]
                m.d.sync += phase.eq(2)
                m.d.comb += [right_took.eq(1),
                             row_done.eq(right_last)]
            with m.Else():
                m.d.comb += row_done.eq(1)
            # the counts less each part's words beside the decision, which selects last
            m.d.sync += [left_rem_r.eq(Mux(left_took, left_rem - left_n, left_rem)),
                         in_rem_r.eq(Mux(in_took, in_rem - in_n, in_rem)),
                         right_rem_r.eq(Mux(right_took, right_rem - right_n, right_rem)),
                         beats_rem_r.eq(Mux(in_took, beats_rem - 1, beats_rem)),
                         first_beat_r.eq(first_beat & ~in_took),
                         left_nz_r.eq(Mux(left_took, over_beat(left_rem), left_nz)),
                         right_nz_r.eq(Mux(right_took, over_beat(right_rem), right_nz)),
                         right_le4_r.eq(Mux(right_took, right_rem <= 2 * WORDS_PER_BEAT,
                                            right_last)),
                         beats_nz_r.eq(Mux(in_took, beats_rem[1:] != 0, beats_nz)),
                         beats_le1_r.eq(Mux(in_took, (beats_rem[2:] == 0) & ~beats_rem[:2].all(),
                                            last_beat)),
                         wa_ok.eq(~row_done),
                         wa.eq(Mux(chunk_valid, wa_by[chunk_count], addr_now))]
        # a row is finished: pop it; the tile's last row also flushes the row buffer (W does,
        # when it takes the entry that says so)
        m.d.comb += cmds.r_en.eq(row_done)
        with m.If(cmds.r_en):
            m.d.sync += phase.eq(0)
        m.d.comb += [
            d_push.eq(chunk_valid | (row_done & cur.last)),
            d_ent.has.eq(chunk_valid),
            d_ent.row.eq(chunk_addr[row_bits:]),
            d_ent.pos.eq(chunk_addr[:row_bits + 1]),
            d_ent.count.eq(chunk_count),
            d_ent.base.eq(cur.base),
            d_ent.slot.eq(cur.slot),
            d_ent.flush.eq(row_done & cur.last),
            d_ent.rows.eq(cur.rows),
        ]
        m.d.comb += [d_ent.words[q].eq(chunk_words[q]) for q in range(WORDS_PER_BEAT)]

        # ---- 5. row assembler: two rows of N words -----------------------------------------
        # the queue's head moves into the assembler's entry register (``wq``), which carries
        # whether its row is row_out, row_out + 1 or row_out + 2 (``w_at``) as flip-flops,
        # formed from registers as the entry moves in and kept in step as rows leave, so the
        # chunk's handshake starts at registers
        wq = Signal(entry_layout)
        w_full = Signal()
        w_at = [Signal(name=f"w_at{k}") for k in range(3)]
        pop = Signal()                   # the entry is written (or flushes) this cycle
        w_take = ~w_full | pop
        f_pop = q_full[0] & w_take
        # the queue: D pushes behind the head (or into it, when it is empty or leaves now).
        # A free entry takes D's entry every cycle, pushed or not (its flag says which), so
        # the entries' enables do not wait for D's decision
        with m.If(f_pop):
            m.d.sync += [q_full[0].eq(q_full[1] | d_push), q_full[1].eq(0)]
        with m.Elif(d_push):
            with m.If(q_full[0]):
                m.d.sync += q_full[1].eq(1)
            with m.Else():
                m.d.sync += q_full[0].eq(1)
        with m.If(f_pop | ~q_full[0]):
            m.d.sync += q_ent[0].eq(Mux(q_full[1], q_ent[1], d_ent))
        with m.If(~q_full[1]):
            m.d.sync += q_ent[1].eq(d_ent)
        flush_pending = Signal()
        flush_rows = Signal(16)
        flush_base = Signal(16)
        flush_slot = Signal(2)
        buf = [Signal(16, name=f"buf{p}") for p in range(2 * lanes)]
        row_out = Signal(16)              # next tile row to send
        row_out1 = Signal(16, init=1)     # row_out + 1 .. + 3
        row_out2 = Signal(16, init=2)
        row_out3 = Signal(16, init=3)
        # chunks come in address order and rows leave only up to the chunk's, so a chunk's row
        # is never below row_out: it is row_out, row_out + 1, row_out + 2 or further
        at = w_at
        cross = wq.cross
        out = self.rows.payload
        has = w_full & wq.has
        emit_for_chunk = has & ~at[0]
        emit_for_flush = flush_pending & (row_out < flush_rows)
        # a tile's rows carry the tile info of the rows being flushed or of the entry's chunk
        emitting = emit_for_chunk | emit_for_flush
        half = row_out[0]
        m.d.comb += [
            self.rows.valid.eq(emitting),
            out.row.eq(row_out),
            out.base.eq(Mux(flush_pending, flush_base, wq.base)),
            out.slot.eq(Mux(flush_pending, flush_slot, wq.slot)),
            out.last.eq(flush_pending & (row_out1 == flush_rows)),
        ]
        for p in range(lanes):
            m.d.comb += out.data[p].eq(Mux(half, buf[lanes + p], buf[p]))
        sent = self.rows.valid & self.rows.ready
        with m.If(sent):
            m.d.sync += [row_out.eq(row_out1), row_out1.eq(row_out2), row_out2.eq(row_out3),
                         row_out3.eq(row_out3 + 1)]
            for p in range(lanes):
                with m.If(half):
                    m.d.sync += buf[lanes + p].eq(0)
                with m.Else():
                    m.d.sync += buf[p].eq(0)
            with m.If(out.last):
                m.d.sync += [flush_pending.eq(0), row_out.eq(0), row_out1.eq(1), row_out2.eq(2),
                             row_out3.eq(3)]
        # the entry's row against the next cycle's row_out + k: the entry moving in (the
        # queue's head) or the one held, as rows leave (a tile's last row: row_out is 0 then)
        ahead = [row_out, row_out1, row_out2, row_out3]

        def at_next(row, now):
            return [Mux(sent, Mux(out.last, row == k, now[k + 1]), now[k]) for k in range(3)]
        held_at = at_next(wq.row, [*w_at, wq.row == row_out3])
        new_at = at_next(q_ent[0].row, [q_ent[0].row == r for r in ahead])
        with m.If(w_take):
            # the chunk's last word in the row after its first (a chunk spans two rows at most)
            m.d.sync += [w_full.eq(q_full[0]), wq.eq(q_ent[0]),
                         wq.cross.eq((q_ent[0].pos[:row_bits] + q_ent[0].count - 1) >> row_bits)]
            m.d.sync += [a.eq(n) for a, n in zip(w_at, new_at, strict=True)]
        with m.Else():
            m.d.sync += [a.eq(h) for a, h in zip(w_at, held_at, strict=True)]
        # a chunk is placed in the cycle a row leaves: the buffer then holds rows row_out + 1
        # and row_out + 2 (the half being sent is cleared and refilled at once), so R stays
        # accepted while rows are handed on (no cycle lost per SRAM row)
        # the chunk's last row at most row_out + 1, + 2 while a row leaves
        e = emit_for_chunk & self.rows.ready
        chunk_ready = Signal()
        m.d.comb += chunk_ready.eq(~flush_pending & (~wq.has | at[0] | at[1] & (~cross | e)
                                                     | at[2] & ~cross & e))
        m.d.comb += pop.eq(w_full & chunk_ready)
        with m.If(pop & wq.flush):
            m.d.sync += [flush_pending.eq(1), flush_rows.eq(wq.rows),
                         flush_base.eq(wq.base), flush_slot.eq(wq.slot)]
        write = pop & wq.has
        for p in range(2 * lanes):
            rel = Signal(row_bits + 1, name=f"rel{p}")
            m.d.comb += rel.eq(p - wq.pos)
            with m.If(write & (rel < wq.count)):
                m.d.sync += buf[p].eq(wq.words[rel[:2]])

        # ---- status --------------------------------------------------------------------------
        # bursts requested and not yet answered in full (their last beat): counted by ones, so
        # no path runs from the burst's length into the count
        outstanding = Signal(16)
        r_beat = axi.rvalid & axi.rready
        m.d.sync += outstanding.eq(outstanding + ar_go - (r_beat & axi.rlast))
        with m.If(r_beat & (axi.rresp != 0)):
            m.d.sync += self.error.eq(1)
        # the oldest load whose reads are still to be requested: the command waiting for its
        # ARs, the rows in the walker's stages, the walk, the request being set up
        setup = q_valid | m_valid | s_valid
        rows_in = Cat(*r_valid, spare_valid).any()
        m.d.comb += [
            self.loading.eq(busy | setup | rows_in | (walk_valid & walk_cmd.read)),
            self.loading_slot.eq(Mux(walk_valid & walk_cmd.read, walk_cmd.slot,
                                     Mux(spare_valid, spare_cmd.slot,
                                     Mux(r_valid[2], r_cmd[2].slot,
                                         Mux(r_valid[1], r_cmd[1].slot,
                                             Mux(r_valid[0], r_cmd[0].slot,
                                                 Mux(busy, slot_no,
                                                     Mux(s_valid, s_slot,
                                                         Mux(m_valid, m_slot, q_slot))))))))),
        ]
        m.d.comb += [
            axi.arid.eq(0),
            self.idle.eq(~busy & ~setup & ~rows_in & ~walk_valid & ~cmds.r_rdy & ~q_full[0]
                         & ~w_full & ~flush_pending & (outstanding == 0)),
        ]
        return m
