"""The Write Pipeline of a TAU (§V-A, ``docs/tau.md`` §7): CP vectors -> AXI4 write bursts.

The WP stores no tile. For each output vector it computes the byte address of every lane (Eq. 10
with the output pitches: constant lane offsets plus the running offset of the warp, no per-lane
multiplier), masks the lanes outside the output tensor, then serves the lanes line by line: the
lowest unserved lane picks an 8-byte line and every lane of that line goes into one beat with its
byte strobes. Beats of consecutive lines form one INCR burst (at most 16 beats, never across a
4 KB boundary, never across vectors). Write data may lead the burst's address (AXI4 allows it); the
address is issued when the burst's last beat is known. The WP stalls only when AW, W or the
32-beat data buffer back up, and ``idle`` means every burst has its write response.
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


def _lowest(m, mask, width, name):
    """(any, index of the lowest set bit) of ``mask``."""
    idx = Signal(range(max(width, 2)), name=name)
    for n in reversed(range(width)):
        with m.If(mask[n]):
            m.d.comb += idx.eq(n)
    return mask.any(), idx


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
        elem_off = lane_offsets(m, [cfg.out_pitch[j] for j in range(P)], index, rank, lanes, 32,
                                name="wp_off")
        coords = [lane_offsets(m, [Const(int(jj == j), 16) for jj in range(P)], index, rank,
                               lanes, 16, name=f"wp_coord{j}_") for j in range(P)]

        # stage A -> B: one vector being served
        addr = [Signal(32, name=f"addr{n}") for n in range(lanes)]
        word = [Signal(16, name=f"word{n}") for n in range(lanes)]
        pending = Signal(lanes)
        vec = self.vectors.payload
        base = Array(cfg.out_base[k] for k in range(self._outputs))[vec.output]
        remaining = [Signal(signed(18), name=f"remaining{j}") for j in range(P)]
        m.d.comb += [remaining[j].eq(cfg.p_size[j] - vec.p_warp[j]) for j in range(P)]
        inside = Cat(Cat(coords[j][n] < remaining[j] for j in range(P)).all()
                     for n in range(lanes))

        # stage B: serve the lowest pending lane's line
        any_pending, low = _lowest(m, pending, lanes, "low")
        line = Signal(29)
        m.d.comb += line.eq(Array(addr)[low][3:])
        served = Signal(lanes)
        m.d.comb += served.eq(Cat(pending[n] & (addr[n][3:] == line) for n in range(lanes)))
        rest = Signal(lanes)
        m.d.comb += rest.eq(pending & ~served)
        more, nxt = _lowest(m, rest, lanes, "next")
        next_line = Signal(29)
        m.d.comb += next_line.eq(Array(addr)[nxt][3:])
        beat_data = Signal(64)
        beat_strb = Signal(8)
        for q in range(DATA_BYTES // WORD_BYTES):
            hit = [served[n] & (addr[n][1:3] == q) for n in range(lanes)]
            m.d.comb += [
                beat_data[16 * q:16 * q + 16].eq(
                    _or_tree([Mux(hit[n], word[n], 0) for n in range(lanes)])),
                beat_strb[2 * q:2 * q + 2].eq(Mux(Cat(hit).any(), 0b11, 0)),
            ]
        count = Signal(range(MAX_BURST + 1))    # beats of the open burst so far
        first_line = Signal(29)
        closes = ~more | (next_line != line + 1) | (count + 1 == MAX_BURST) | \
            (next_line[:9] == 0)

        m.submodules.wfifo = wfifo = SyncFIFOBuffered(width=64 + 8 + 1, depth=2 * MAX_BURST)
        m.submodules.awfifo = awfifo = SyncFIFOBuffered(width=32 + 8, depth=4)
        can_emit = wfifo.w_rdy & awfifo.w_rdy
        emit = any_pending & can_emit
        m.d.comb += [
            wfifo.w_data.eq(Cat(beat_data, beat_strb, closes)),
            wfifo.w_en.eq(emit),
            awfifo.w_data.eq(Cat(Mux(count == 0, line, first_line) << 3,
                                 (count).as_unsigned()[:8])),
            awfifo.w_en.eq(emit & closes),
        ]
        with m.If(emit):
            m.d.sync += pending.eq(rest)
            with m.If(closes):
                m.d.sync += count.eq(0)
            with m.Else():
                m.d.sync += count.eq(count + 1)
                with m.If(count == 0):
                    m.d.sync += first_line.eq(line)

        # stage A: take a vector when B is free or finishing
        free = ~any_pending | (emit & ~more)
        m.d.comb += self.vectors.ready.eq(free)
        with m.If(self.vectors.valid & free):
            m.d.sync += pending.eq(inside)
            for n in range(lanes):
                m.d.sync += [
                    addr[n].eq(base + ((vec.offset + elem_off[n]) << 1)),
                    word[n].eq(vec.data[n]),
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
        m.d.comb += self.idle.eq(~any_pending & (outstanding == 0)
                                 & ~wfifo.r_rdy & ~awfifo.r_rdy)
        return m


def _or_tree(values):
    values = list(values)
    while len(values) > 1:
        values = [values[i] | values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]
