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
        "rows": unsigned(16),           # rows of the tile
        "base": unsigned(16),
        "slot": unsigned(slot_bits),
        "last": unsigned(1),            # last row command of the tile
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
        k = [Signal(16, name=f"k{i}") for i in range(3)]
        taddr = [Signal(16, name=f"taddr{i}") for i in range(3)]
        m.d.comb += self.requests.ready.eq(~busy)
        with m.If(self.requests.valid & ~busy):
            m.d.sync += [busy.eq(1), slot_no.eq(req.slot), base_row.eq(req.base)]
            m.d.sync += [k[i].eq(0) for i in range(3)] + [taddr[i].eq(0) for i in range(3)]
            for i in range(AXES):
                terms = []
                for j in range(P + A):
                    s = rslot.stride[j]
                    move = (rslot.axis[j] == i) & (s != 0)
                    here = origin[j] * s + Mux(s < 0, (tiles[j] - 1) * s, 0)
                    terms.append(Mux(move, here, 0))
                m.d.sync += low[i].eq(rslot.offset[i] + sum(terms))

        # ---- 2. the row walker: one row command per cycle ------------------------------------
        cmd_layout = _command_layout(2)
        m.submodules.cmds = cmds = SyncFIFOBuffered(width=cmd_layout.size, depth=MAX_BURST)
        cmd = Signal(cmd_layout)
        x = [Signal(signed(20), name=f"x{i}") for i in range(3)]
        xc = [Signal(16, name=f"xc{i}") for i in range(3)]
        outside = []
        for i in range(3):
            n = slot.extent[i]
            m.d.comb += [x[i].eq(low[i] + k[i]),
                         xc[i].eq(_clip(x[i], 0, n - 1))]
            outside.append(((x[i] < 0) | (x[i] >= n)) & ~slot.clamp[i])
        zero_row = Signal()
        m.d.comb += zero_row.eq(Cat(outside).any())
        elem = Signal(32)
        m.d.comb += elem.eq(sum(xc[i] * slot.dpitch[i] for i in range(3)))
        c_lo = low[3]
        box3 = slot.box[3]
        n3 = slot.extent[3]
        left = Signal(16)
        right = Signal(16)
        inside = Signal(16)
        m.d.comb += [
            left.eq(_clip(-c_lo, 0, box3)),
            right.eq(_clip(c_lo + box3 - n3, 0, box3)),
            inside.eq(box3 - left - right),
        ]
        edge_only = (inside == 0) & slot.clamp[3]
        reads = ~zero_row & ((inside != 0) | slot.clamp[3])
        col = Signal(16)
        m.d.comb += col.eq(Mux(inside != 0, Mux(c_lo < 0, 0, c_lo),
                               Mux(left != 0, 0, n3 - 1)))
        nread = Mux(edge_only, 1, inside)
        byte = Signal(32)
        m.d.comb += byte.eq(slot.base + ((elem + col) << 1))
        skip = byte[1:3]
        last_row = Cat([k[i] + 1 >= slot.box[i] for i in range(3)]).all()
        m.d.comb += [
            cmd.read.eq(reads),
            cmd.addr.eq(Cat(Const(0, 3), byte[3:])),
            cmd.beats.eq((skip + nread + WORDS_PER_BEAT - 1) >> 2),
            cmd.skip.eq(skip),
            cmd.left.eq(left),
            cmd.inside.eq(inside),
            cmd.right.eq(right),
            cmd.clamp.eq(slot.clamp[3]),
            cmd.taddr.eq(taddr[2]),
            cmd.rows.eq(slot.rows),
            cmd.base.eq(base_row),
            cmd.slot.eq(slot_no),
            cmd.last.eq(last_row),
        ]
        # the walker feeds the AR issuer through a one-entry register
        walk_valid = Signal()
        walk_cmd = Signal(cmd_layout)
        walk_take = Signal()
        can_load = ~walk_valid | walk_take
        with m.If(busy & can_load):
            m.d.sync += [walk_valid.eq(1), walk_cmd.eq(cmd)]
            with m.If(last_row):
                m.d.sync += busy.eq(0)
            # advance (axis 2 innermost); tile addresses as per-level running sums
            with m.If(k[2] + 1 < slot.box[2]):
                m.d.sync += [k[2].eq(k[2] + 1), taddr[2].eq(taddr[2] + slot.lpitch[2])]
            with m.Elif(k[1] + 1 < slot.box[1]):
                new = taddr[1] + slot.lpitch[1]
                m.d.sync += [k[2].eq(0), k[1].eq(k[1] + 1), taddr[1].eq(new), taddr[2].eq(new)]
            with m.Else():
                new = taddr[0] + slot.lpitch[0]
                m.d.sync += [k[2].eq(0), k[1].eq(0), k[0].eq(k[0] + 1), taddr[0].eq(new),
                             taddr[1].eq(new), taddr[2].eq(new)]
        with m.Elif(walk_take):
            m.d.sync += walk_valid.eq(0)

        # ---- 3. AR issuer ---------------------------------------------------------------------
        axi = self.m_axi
        issued = Signal(16)              # beats of the current command already requested
        ar_addr = Signal(32)
        remaining = Signal(16)
        m.d.comb += [remaining.eq(walk_cmd.beats - issued),
                     ar_addr.eq(walk_cmd.addr + (issued << 3))]
        to_4k = Signal(10)
        m.d.comb += to_4k.eq(512 - ar_addr[3:12])
        burst = Signal(16)
        m.d.comb += burst.eq(Mux(remaining < MAX_BURST, remaining, MAX_BURST))
        burst_len = Signal(16)
        m.d.comb += burst_len.eq(Mux(to_4k < burst, to_4k, burst))
        first_ar = issued == 0
        need_ar = walk_valid & walk_cmd.read
        # the command goes to the data path with the first AR of its row (or alone)
        push_ok = cmds.w_rdy
        m.d.comb += [
            axi.arvalid.eq(need_ar & (~first_ar | push_ok)),
            axi.araddr.eq(ar_addr),
            axi.arlen.eq(burst_len - 1),
            axi.arsize.eq(3),
            axi.arburst.eq(1),
            cmds.w_data.eq(walk_cmd.as_value()),
        ]
        ar_go = axi.arvalid & axi.arready
        with m.If(ar_go):
            with m.If(issued + burst_len >= walk_cmd.beats):
                m.d.sync += issued.eq(0)
                m.d.comb += walk_take.eq(1)
            with m.Else():
                m.d.sync += issued.eq(issued + burst_len)
        with m.If(walk_valid & ~walk_cmd.read & push_ok):
            m.d.comb += walk_take.eq(1)
        m.d.comb += cmds.w_en.eq((ar_go & first_ar) | (walk_valid & ~walk_cmd.read & push_ok))

        # ---- 4. data path: chunks of up to 4 words at tile addresses ------------------------
        cur = Signal(cmd_layout)
        m.d.comb += cur.eq(cmds.r_data)
        phase = Signal(2)                # 0 left, 1 inside, 2 right
        done_words = Signal(16)          # words of the current phase already placed
        beats_seen = Signal(16)
        edge = Signal(16)                # last word read (right fill of clamp rows)
        chunk_valid = Signal()
        chunk_addr = Signal(16)
        chunk_count = Signal(3)
        chunk_words = [Signal(16, name=f"chunk_word{q}") for q in range(WORDS_PER_BEAT)]
        chunk_ready = Signal()
        beat = [axi.rdata[16 * q:16 * q + 16] for q in range(WORDS_PER_BEAT)]

        have = cmds.r_rdy
        # phases: 0 left fill, 1 inside, 2 right fill; a phase with nothing to do falls through
        # to the next one in the same cycle, and a row ends with its last chunk
        left_fill = cur.clamp & cur.read & (cur.left != 0)
        right_fill = cur.clamp & cur.read & (cur.right != 0)
        ld = Mux(phase == 0, done_words, 0)
        idn = Mux(phase == 1, done_words, 0)
        rdn = Mux(phase == 2, done_words, 0)
        in_left = (phase == 0) & left_fill & (ld != cur.left)
        in_inside = ~in_left & (phase <= 1) & cur.read & (beats_seen != cur.beats)
        in_right = ~in_left & ~in_inside & right_fill & (rdn != cur.right)
        left_left = cur.left - ld
        left_n = Mux(left_left < WORDS_PER_BEAT, left_left, WORDS_PER_BEAT)
        first_word = Array(beat)[cur.skip]
        # inside: words of this beat that land in the tile
        beat_first = Mux(beats_seen == 0, cur.skip, 0)
        avail = WORDS_PER_BEAT - beat_first
        in_left_words = cur.inside - idn
        in_n = Mux(in_left_words < avail, in_left_words, avail)
        right_left = cur.right - rdn
        right_n = Mux(right_left < WORDS_PER_BEAT, right_left, WORDS_PER_BEAT)
        shifted = Signal(64)
        m.d.comb += shifted.eq(axi.rdata >> (beat_first << 4))
        last_beat = beats_seen + 1 >= cur.beats
        row_done = Signal()
        m.d.comb += axi.rready.eq(0)
        with m.If(have):
            with m.If(in_left):
                with m.If(axi.rvalid):
                    m.d.comb += [chunk_valid.eq(1), chunk_addr.eq(cur.taddr + ld),
                                 chunk_count.eq(left_n)]
                    m.d.comb += [w.eq(first_word) for w in chunk_words]
                    with m.If(chunk_ready):
                        m.d.sync += done_words.eq(ld + left_n)
            with m.Elif(in_inside):
                with m.If(axi.rvalid):
                    m.d.comb += [chunk_valid.eq(in_n != 0),
                                 chunk_addr.eq(cur.taddr + cur.left + idn),
                                 chunk_count.eq(in_n)]
                    m.d.comb += [chunk_words[q].eq(shifted[16 * q:16 * q + 16])
                                 for q in range(WORDS_PER_BEAT)]
                    with m.If(chunk_ready | (in_n == 0)):
                        m.d.comb += axi.rready.eq(1)
                        m.d.sync += [phase.eq(1), beats_seen.eq(beats_seen + 1),
                                     done_words.eq(idn + in_n)]
                        # remember the last word read for a replicated right edge
                        last_pos = Mux(in_n == 0, beat_first, beat_first + in_n - 1)
                        with m.If(last_beat):
                            m.d.sync += [edge.eq(Array(beat)[last_pos[:2]]), phase.eq(2),
                                         done_words.eq(0)]
                            m.d.comb += row_done.eq(~right_fill)
            with m.Elif(in_right):
                m.d.comb += [chunk_valid.eq(1),
                             chunk_addr.eq(cur.taddr + cur.left + cur.inside + rdn),
                             chunk_count.eq(right_n)]
                m.d.comb += [w.eq(edge) for w in chunk_words]
                with m.If(chunk_ready):
                    m.d.sync += [phase.eq(2), done_words.eq(rdn + right_n)]
                    m.d.comb += row_done.eq(rdn + right_n == cur.right)
            with m.Else():
                m.d.comb += row_done.eq(1)
        # a row is finished: pop it; the tile's last row also flushes the row buffer
        flush_pending = Signal()
        flush_rows = Signal(16)
        flush_base = Signal(16)
        flush_slot = Signal(2)
        m.d.comb += cmds.r_en.eq(row_done & ~(cur.last & flush_pending))
        with m.If(cmds.r_en):
            m.d.sync += [phase.eq(0), done_words.eq(0), beats_seen.eq(0)]
            with m.If(cur.last):
                m.d.sync += [flush_pending.eq(1), flush_rows.eq(cur.rows),
                             flush_base.eq(cur.base), flush_slot.eq(cur.slot)]

        # ---- 5. row assembler: two rows of N words -----------------------------------------
        row_bits = lanes.bit_length() - 1
        buf = [Signal(16, name=f"buf{p}") for p in range(2 * lanes)]
        row_out = Signal(16)              # next tile row to send
        chunk_end = chunk_addr + chunk_count - 1
        start_row = chunk_addr >> row_bits
        end_row = chunk_end >> row_bits
        out = self.rows.payload
        emit_for_chunk = chunk_valid & (start_row > row_out)
        emit_for_flush = flush_pending & (row_out < flush_rows)
        # a tile's rows carry the tile info of the rows being flushed or of the current command
        emitting = emit_for_chunk | emit_for_flush
        half = row_out[0]
        m.d.comb += [
            self.rows.valid.eq(emitting),
            out.row.eq(row_out),
            out.base.eq(Mux(flush_pending, flush_base, cur.base)),
            out.slot.eq(Mux(flush_pending, flush_slot, cur.slot)),
            out.last.eq(flush_pending & (row_out + 1 == flush_rows)),
        ]
        for p in range(lanes):
            m.d.comb += out.data[p].eq(Mux(half, buf[lanes + p], buf[p]))
        sent = self.rows.valid & self.rows.ready
        with m.If(sent):
            m.d.sync += row_out.eq(row_out + 1)
            for p in range(lanes):
                with m.If(half):
                    m.d.sync += buf[lanes + p].eq(0)
                with m.Else():
                    m.d.sync += buf[p].eq(0)
            with m.If(out.last):
                m.d.sync += [flush_pending.eq(0), row_out.eq(0)]
        # a chunk is placed in the cycle a row leaves: the buffer then holds rows row_out + 1
        # and row_out + 2 (the half being sent is cleared and refilled at once), so R stays
        # accepted while rows are handed on (no cycle lost per SRAM row)
        room = Signal(16)
        m.d.comb += room.eq(row_out + 1 + (emit_for_chunk & self.rows.ready))
        m.d.comb += chunk_ready.eq(~flush_pending & (end_row <= room))
        write = chunk_valid & chunk_ready
        pos0 = chunk_addr[:row_bits + 1]
        for p in range(2 * lanes):
            rel = Signal(row_bits + 1, name=f"rel{p}")
            m.d.comb += rel.eq(p - pos0)
            with m.If(write & (rel < chunk_count)):
                m.d.sync += buf[p].eq(Array(chunk_words)[rel[:2]])

        # ---- status --------------------------------------------------------------------------
        outstanding = Signal(16)
        ar_beats = Mux(ar_go, burst_len, 0)
        r_beat = axi.rvalid & axi.rready
        m.d.sync += outstanding.eq(outstanding + ar_beats - r_beat)
        with m.If(r_beat & (axi.rresp != 0)):
            m.d.sync += self.error.eq(1)
        m.d.comb += [
            self.loading.eq(busy | (walk_valid & walk_cmd.read)),
            self.loading_slot.eq(Mux(walk_valid & walk_cmd.read, walk_cmd.slot, slot_no)),
        ]
        m.d.comb += [
            axi.arid.eq(0),
            self.idle.eq(~busy & ~walk_valid & ~cmds.r_rdy & ~flush_pending
                         & (outstanding == 0)),
        ]
        return m
