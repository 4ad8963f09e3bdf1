"""The Write Pipeline of a TAU (§V-A, ``docs/tau.md`` §7): CP vectors -> AXI4 write bursts.

The WP stores no tile. For each output vector it computes the byte address of every lane (Eq. 10
with the output pitches: constant lane offsets plus the running offset of the warp, no per-lane
multiplier), masks the lanes outside the output tensor, then serves the lanes line by line: the
lowest unserved lane picks an 8-byte line and every lane of that line goes into one beat with its
byte strobes. Beats of consecutive lines form one INCR burst (at most 16 beats, never across a
4 KB boundary, never across vectors). Write data may lead the burst's address (AXI4 allows it); the
address is issued when the burst's last beat is known. The WP stalls only when AW, W or the
32-beat data buffer back up, and ``idle`` means every burst has its write response.

Four register stages, each loading while it is empty or its contents move on: A the lanes'
addresses, B which pairs of lanes share a line, S the vector's lines as groups (each named by its
lowest lane, its leader) served one a cycle in the order of their leaders (the same beats as
serving the lowest pending lane's line), H the beat served until the next one says whether the
burst closes with it. A vector's first beat reaches the data buffer three cycles after it would
with the serving done in one stage, and the WP takes a vector a cycle as before.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from merit.arch import MAX_BURST
from merit.checks import check_lanes
from meritz import kernelcfg
from meritz.bus import AXI4Signature
from meritz.tau.rp.agu import lane_offsets
from meritz.tau.step_looper import lane_map

__all__ = ["WritePipeline", "vector_layout"]

P = kernelcfg.P_INDICES
DATA_BYTES = 8            # 64-bit DRAM bus (docs/architecture.md §4)
WORD_BYTES = 2


def vector_layout(lanes, output_bits=2):
    """One CP result vector with where it goes."""
    return data.StructLayout({
        "data": data.ArrayLayout(signed(16), lanes),
        "offset": unsigned(32),            # output element offset of lane 0 (tile origin included)
        "p_warp": data.ArrayLayout(unsigned(16), P),   # parallel coordinates of lane 0
        "output": unsigned(output_bits),   # which output tensor
    })


def _registered(m, values, name):
    """``values`` through flip-flops (one cycle later; not reset: they follow the
    configuration through a reset too)."""
    regs = [Signal(len(v), name=f"{name}{n}", reset_less=True) for n, v in enumerate(values)]
    m.d.sync += [r.eq(v) for r, v in zip(regs, values, strict=True)]
    return regs


def _first(bits):
    """The lowest set bit of ``bits``, one-hot (0 when none is set)."""
    return Cat(bits[n] & ~bits[:n].any() if n else bits[0] for n in range(len(bits)))


class WritePipeline(wiring.Component):
    """CP vectors in, AXI4 write bursts out.

    Parameters
    ----------
    lanes : int
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout` (the WP reads ``p_size``, ``lane_index``,
        ``out_base``, ``out_pitch``).

    Members
    -------
    config : In(kernelcfg.layout(...))
    vectors : In(stream.Signature(vector_layout(lanes)))
    m_axi : Out(AXI4Signature(read=False))
    idle : Out(1)
        No vector in the WP and every burst answered.
    error : Out(1)
        Sticky: a write response other than OKAY.
    """

    def __init__(self, *, lanes, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        self._layout = kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                                        instructions=instructions)
        self._outputs = outputs
        super().__init__({
            "config": In(self._layout),
            "vectors": In(stream.Signature(vector_layout(lanes))),
            "m_axi": Out(AXI4Signature(read=False)),
            "idle": Out(1),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        lanes = self._lanes
        index, rank, _ = lane_map(m, cfg, lanes)
        # the lanes' element offsets and coordinates depend on the configuration alone: formed
        # into registers (the configuration holds through a run, and its first vector comes
        # tens of cycles after the run starts), so a vector's addresses start at flip-flops;
        # the offsets over two stages (the pitches' terms by the lane map, then their sums)
        elem_off = _registered(m, lane_offsets(m, [cfg.out_pitch[j] for j in range(P)], index,
                                               rank, lanes, 32, name="wp_off", domain="sync"),
                               "wp_off_r")
        coords = [_registered(m, [c[:lanes.bit_length()] for c in lane_offsets(
                      m, [Const(int(jj == j), 16) for jj in range(P)], index, rank, lanes, 16,
                      name=f"wp_coord{j}_")], f"wp_coord{j}_r") for j in range(P)]

        # stage A: the vector's lane addresses and words (taken while A is free or moves on)
        addr = [Signal(32, name=f"addr{n}") for n in range(lanes)]
        word = [Signal(16, name=f"word{n}") for n in range(lanes)]
        a_valid = Signal()
        vec = self.vectors.payload
        base = Array(cfg.out_base[k] for k in range(self._outputs))[vec.output]
        remaining = [Signal(signed(18), name=f"remaining{j}") for j in range(P)]  # p_size - p_warp

        # stage B: which lanes share a line, every pair (a lane's lines are 29 bits; the pairs'
        # equalities registered here keep them off the lines' serving below)
        b_valid = Signal()
        b_line = [Signal(29, name=f"b_line{n}") for n in range(lanes)]
        b_quarter = [Signal(2, name=f"b_quarter{n}") for n in range(lanes)]
        b_word = [Signal(16, name=f"b_word{n}") for n in range(lanes)]
        b_inside = Signal(lanes)
        b_same = {(k, n): Signal(name=f"b_same{k}_{n}") for n in range(lanes) for k in range(n)}

        # stage S: the vector's lines as groups, one per line, each named by its lowest lane (its
        # leader), served in the order of their leaders one a cycle: ``cur`` (one-hot) is the
        # group served, ``s_next[l]`` the group after leader ``l``'s (one-hot), ``s_member[l]``
        # its lanes; the lowest pending lane of the serving by lines is always a leader, so the
        # order and the beats are those of serving the lowest pending lane's line
        busy = Signal()
        cur = Signal(lanes)
        s_line = [Signal(29, name=f"s_line{n}") for n in range(lanes)]
        s_line_m1 = [Signal(29, name=f"s_line_m1_{n}") for n in range(lanes)]    # line - 1
        s_page = Signal(lanes)               # the lane's line starts a 4 KB page
        s_quarter = [Signal(2, name=f"s_quarter{n}") for n in range(lanes)]
        s_word = [Signal(16, name=f"s_word{n}") for n in range(lanes)]
        s_member = [Signal(lanes, name=f"s_member{n}") for n in range(lanes)]
        s_next = [Signal(lanes, name=f"s_next{n}") for n in range(lanes)]
        s_last = Signal(lanes)

        # the group served: its beat and line
        served = Signal(lanes)
        m.d.comb += served.eq(_or_tree([Mux(cur[k], s_member[k], 0) for k in range(lanes)]))
        beat_data = Signal(64)
        beat_strb = Signal(8)
        for q in range(DATA_BYTES // WORD_BYTES):
            hit = [served[n] & (s_quarter[n] == q) for n in range(lanes)]
            m.d.comb += [
                beat_data[16 * q:16 * q + 16].eq(
                    _or_tree([Mux(hit[n], s_word[n], 0) for n in range(lanes)])),
                beat_strb[2 * q:2 * q + 2].eq(Mux(Cat(hit).any(), 0b11, 0)),
            ]
        beat_line = Signal(29)
        m.d.comb += beat_line.eq(_or_tree([Mux(cur[k], s_line[k], 0) for k in range(lanes)]))
        beat_last = (cur & s_last).any()

        # stage H: the beat served, held a cycle, until the next beat's group says whether the
        # burst closes with it: which lanes' lines follow the held beat's (``h_follows``) is
        # formed as the beat enters H, the group served next picks its bit
        h_valid = Signal()
        h_data = Signal(64)
        h_strb = Signal(8)
        h_line = Signal(29)
        h_follows = Signal(lanes)
        h_last = Signal()                    # the vector's last beat
        count = Signal(range(MAX_BURST + 1))    # beats of the open burst so far
        first_line = Signal(29)
        closes = h_last | ~(cur & h_follows & ~s_page).any() | (count == MAX_BURST - 1)

        m.submodules.wfifo = wfifo = SyncFIFOBuffered(width=64 + 8 + 1, depth=2 * MAX_BURST)
        m.submodules.awfifo = awfifo = SyncFIFOBuffered(width=32 + 8, depth=4)
        emit = h_valid & wfifo.w_rdy & awfifo.w_rdy
        m.d.comb += [
            wfifo.w_data.eq(Cat(h_data, h_strb, closes)),
            wfifo.w_en.eq(emit),
            awfifo.w_data.eq(Cat(Mux(count == 0, h_line, first_line) << 3,
                                 (count).as_unsigned()[:8])),
            awfifo.w_en.eq(emit & closes),
        ]
        with m.If(emit):
            with m.If(closes):
                m.d.sync += count.eq(0)
            with m.Else():
                m.d.sync += count.eq(count + 1)
                with m.If(count == 0):
                    m.d.sync += first_line.eq(h_line)

        serve = busy & (~h_valid | emit)
        with m.If(serve):
            m.d.sync += [
                h_valid.eq(1),
                h_data.eq(beat_data),
                h_strb.eq(beat_strb),
                h_line.eq(beat_line),
                h_follows.eq(Cat(s_line_m1[n] == beat_line for n in range(lanes))),
                h_last.eq(beat_last),
                cur.eq(_or_tree([Mux(cur[k], s_next[k], 0) for k in range(lanes)])),
            ]
        with m.Elif(emit):
            m.d.sync += h_valid.eq(0)

        # each stage loads while it is empty or its contents move on (its enable an OR of the
        # stages' valid flags after it and S's end, no chain of handshakes)
        s_load = ~busy | (serve & beat_last)
        b_load = ~b_valid | s_load
        a_load = ~a_valid | b_load
        m.d.comb += self.vectors.ready.eq(a_load)

        with m.If(a_load):
            m.d.sync += [
                a_valid.eq(self.vectors.valid),
                *(remaining[j].eq(cfg.p_size[j] - vec.p_warp[j]) for j in range(P)),
            ]
            for n in range(lanes):
                m.d.sync += [
                    addr[n].eq(base + ((vec.offset + elem_off[n]) << 1)),
                    word[n].eq(vec.data[n]),
                ]

        with m.If(b_load):
            m.d.sync += [b_valid.eq(a_valid),
                         b_inside.eq(Cat(Cat(coords[j][n] < remaining[j] for j in range(P)).all()
                                         for n in range(lanes)))]
            m.d.sync += [b_same[k, n].eq(addr[k][3:] == addr[n][3:]) for k, n in b_same]
            for n in range(lanes):
                m.d.sync += [
                    b_line[n].eq(addr[n][3:]),
                    b_quarter[n].eq(addr[n][1:3]),
                    b_word[n].eq(word[n]),
                ]

        # a lane's leader: the lowest lane inside with its line (one-hot); the leaders
        lead = [_first(Cat(b_inside[k] & (b_same[k, n] if k < n else 1) for k in range(n + 1)))
                for n in range(lanes)]
        leader = Signal(lanes)
        m.d.comb += leader.eq(Cat(b_inside[n] & lead[n][n] for n in range(lanes)))
        with m.If(s_load):
            m.d.sync += [
                busy.eq(b_valid & b_inside.any()),
                cur.eq(_first(leader)),
                s_page.eq(Cat(b_line[n][:9] == 0 for n in range(lanes))),
                s_last.eq(Cat(~leader[n + 1:].any() for n in range(lanes))),
            ]
            for n in range(lanes):
                m.d.sync += [
                    s_line[n].eq(b_line[n]),
                    s_line_m1[n].eq(b_line[n] - 1),
                    s_quarter[n].eq(b_quarter[n]),
                    s_word[n].eq(b_word[n]),
                    s_member[n].eq(Cat(b_inside[k] & (lead[k][n] if n <= k else 0)
                                       for k in range(lanes))),
                    s_next[n].eq(Cat(Const(0, n + 1), _first(leader[n + 1:]))[:lanes]),
                ]

        # AXI
        axi = self.m_axi
        m.d.comb += [
            axi.awvalid.eq(awfifo.r_rdy),
            axi.awaddr.eq(awfifo.r_data[:32]),
            axi.awlen.eq(awfifo.r_data[32:40]),
            axi.awsize.eq(3),
            axi.awburst.eq(1),
            awfifo.r_en.eq(axi.awready),
            axi.wvalid.eq(wfifo.r_rdy),
            axi.wdata.eq(wfifo.r_data[:64]),
            axi.wstrb.eq(wfifo.r_data[64:72]),
            axi.wlast.eq(wfifo.r_data[72]),
            wfifo.r_en.eq(axi.wready),
            axi.bready.eq(1),
        ]
        outstanding = Signal(16)
        issued = emit & closes
        answered = axi.bvalid
        m.d.sync += outstanding.eq(outstanding + issued - answered)
        with m.If(axi.bvalid & (axi.bresp != 0)):
            m.d.sync += self.error.eq(1)
        m.d.comb += self.idle.eq(~a_valid & ~b_valid & ~busy & ~h_valid & (outstanding == 0)
                                 & ~wfifo.r_rdy & ~awfifo.r_rdy)
        return m


def _or_tree(values):
    values = list(values)
    while len(values) > 1:
        values = [values[i] | values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]
