"""Stand-ins for benches: :class:`StubTau`, a TAU with the TAU's interface but no compute path,
so that the benches and tests of :class:`meritz.top.Top` run without building real TAUs."""

from amaranth import Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_lanes
from meritz import kernelcfg
from meritz.bus import AXI4Signature
from meritz.tau.tile_looper import tile_layout

__all__ = ["StubTau"]


class StubTau(wiring.Component):
    """A stand-in TAU with the TAU's interface, for benches of Top without the compute path.

    For each parallel tile with origin ``p``: ``off = sum_j p_j * out_pitch[j]``; it reads the
    16-bit element at ``rp0[0].base + 2 off`` and, after a delay that depends on ``p`` (0..31
    cycles, so TAUs finish out of order), writes that element + 1 to ``out_base[0] + 2 off``.
    ``idle`` follows the TAU contract; ``errors.other`` is set by a tile with ``p_origin[0] ==
    0x7FFF`` (an injected error for the benches).
    """

    def __init__(self, *, lanes, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16, **_sizes):
        self._lanes = check_lanes(lanes)
        super().__init__({
            "config": In(kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots,
                                          outputs=outputs, instructions=instructions)),
            "luts": In(kernelcfg.lut_layout()),
            "tiles": In(stream.Signature(tile_layout())),
            "m_axi": Out(AXI4Signature()),
            "idle": Out(1),
            "errors": Out(data.StructLayout({"conflict": 1, "other": 1})),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, bus = self.config, self.m_axi
        p = [Signal(16, name=f"p{j}") for j in range(kernelcfg.P_INDICES)]
        off = Signal(32)
        m.d.comb += off.eq(sum(p[j] * cfg.out_pitch[j] for j in range(kernelcfg.P_INDICES)))
        src = Signal(32)
        dst = Signal(32)
        m.d.comb += [src.eq(cfg.rp0[0].base + 2 * off), dst.eq(cfg.out_base[0] + 2 * off)]
        value = Signal(16)
        delay = Signal(5)
        m.d.comb += [bus.arlen.eq(0), bus.arsize.eq(3), bus.arburst.eq(1), bus.arid.eq(p[-1]),
                     bus.awlen.eq(0), bus.awsize.eq(3), bus.awburst.eq(1), bus.awid.eq(p[-1]),
                     bus.araddr.eq(src & ~7), bus.awaddr.eq(dst & ~7), bus.wlast.eq(1),
                     bus.wdata.eq((value + 1)[:16] << (dst[1:3] * 16)),
                     bus.wstrb.eq(Const(0b11, 8) << (dst[1:3] * 2))]
        aw_done, w_done = Signal(), Signal()
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.tiles.ready.eq(1),
                             self.idle.eq(~self.tiles.valid)]
                with m.If(self.tiles.valid):
                    m.d.sync += [p[j].eq(self.tiles.payload[j]) for j in range(len(p))]
                    m.d.sync += delay.eq(self.tiles.payload[-1] * 7 + self.tiles.payload[-2] * 3)
                    with m.If(self.tiles.payload[0] == 0x7FFF):
                        m.d.sync += self.errors.other.eq(1)
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += bus.arvalid.eq(1)
                with m.If(bus.arready):
                    m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += bus.rready.eq(1)
                with m.If(bus.rvalid):
                    m.d.sync += value.eq(bus.rdata.word_select(src[1:3], 16))
                    with m.If(bus.rlast):
                        m.next = "WAIT"
            with m.State("WAIT"):
                m.d.sync += delay.eq(delay - 1)
                with m.If(delay == 0):
                    m.d.sync += [aw_done.eq(0), w_done.eq(0)]
                    m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += [bus.awvalid.eq(~aw_done), bus.wvalid.eq(~w_done)]
                with m.If(bus.awvalid & bus.awready):
                    m.d.sync += aw_done.eq(1)
                with m.If(bus.wvalid & bus.wready):
                    m.d.sync += w_done.eq(1)
                with m.If((aw_done | (bus.awvalid & bus.awready)) &
                          (w_done | (bus.wvalid & bus.wready))):
                    m.next = "RESPONSE"
            with m.State("RESPONSE"):
                m.d.comb += bus.bready.eq(1)
                with m.If(bus.bvalid):
                    m.next = "IDLE"
        return m
