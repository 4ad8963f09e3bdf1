"""The control port of MERIT-z: AXI4-Lite slave, register file, run control (paper §V-A).

The register map is :mod:`merit.regmap`, itself generated from :mod:`meritz.kernelcfg`; this block
only implements it. Run control:

* ``CTRL.start`` (while not busy) checks the configuration (:data:`merit.regmap.CHECKS`). A failed
  check refuses the kernel at once: ``STATUS`` shows done, error CONFIG and the check's number;
  ``run`` never pulses, so nothing is read or written. Otherwise ``run`` pulses and the run is busy.
* The run ends when ``finished`` pulses (every tile handed out and every TAU idle, i.e. every write
  response received): done.
* ``CTRL.abort`` or an error input stops it: ``flush`` is held (the dispatcher stops, the TAUs are
  held in reset, the DRAM port drains what DRAM already accepted) until ``quiet``; then done with
  the error code. A stopped run therefore never hangs the bus.
* ``irq`` = ``STATUS.done`` and ``CTRL.irq_enable``; writing 1 to ``STATUS.done`` or starting
  clears it.
"""

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from merit.arch import RP_BYTES
from merit.checks import check_lanes, check_range, check_taus
from merit.isa import LUT_ENTRIES, N_LUTS
from merit.regmap import CHECKS, ID_MAGIC, Error, register_map
from meritz import kernelcfg
from meritz.bus import AXI4LiteSignature

__all__ = ["Regs", "error_layout", "ADDR_WIDTH"]

#: Byte-address bits of the control port (1 KB: registers, then the LUT window).
ADDR_WIDTH = 10
OKAY, SLVERR = 0b00, 0b10


def error_layout(taus):
    """Error inputs: AXI error responses (pulses) and per-TAU error flags."""
    return data.StructLayout({
        "axi_read": unsigned(1),
        "axi_write": unsigned(1),
        "conflict": unsigned(taus),
        "tau": unsigned(taus),
    })


def _checks(cfg, *, lanes, instructions, rp0_rows, rp1_rows, stage=None):
    """One Value per entry of :data:`merit.regmap.CHECKS`: 1 when the check passes.
    ``stage(value, name)``: where the footprint's products go through a register (``Regs``);
    None: combinational."""
    P, A = kernelcfg.P_INDICES, kernelcfg.A_INDICES
    bits = lanes.bit_length() - 1
    sizes = Cat(*(cfg.p_size[j] != 0 for j in range(P)),
                *(cfg.a_size[j] != 0 for j in range(A))).all()
    tiles = Cat(*(cfg.p_tile[j] != 0 for j in range(P)),
                *(cfg.a_tile[j] != 0 for j in range(A))).all()
    lane_terms = [cfg.lane_index[i] < P for i in range(bits)]
    for j in range(P):
        count = sum((cfg.lane_index[i] == j).as_unsigned() for i in range(bits))
        lane_terms.append((cfg.p_tile[j] & ((Const(1, 17) << count) - 1)) == 0)
    lanes_ok = Cat(*lane_terms).all()
    range_terms = [cfg.ends[k] <= instructions for k in range(A + 1)]
    range_terms += [cfg.begs[k] <= cfg.begs[k - 1] for k in range(1, A + 1)]
    range_terms += [cfg.ends[k] >= cfg.ends[k - 1] for k in range(1, A + 1)]
    range_terms.append(cfg.begs[0] <= cfg.ends[0])
    range_ok = Cat(*range_terms).all()
    slot_terms = []
    for port, cap in (("rp0", rp0_rows), ("rp1", rp1_rows)):
        slots = getattr(cfg, port)
        for k in range(len(slots)):
            s = slots[k]
            ok = Cat(*(s.extent[a] != 0 for a in range(kernelcfg.AXES)),
                     *(s.box[a] != 0 for a in range(kernelcfg.AXES)),
                     s.rows != 0, s.rows <= cap, s.rotate < bits, ~s.base[0]).all()
            slot_terms.append(~s.enable | ok)
    slots_ok = Cat(*slot_terms).all()
    # the tile rows hold the footprint: its last tile address + 1 (the DMA's row walker reaches
    # (box[i] - 1) * lpitch[i] on axes 0..2, then box[3] words) within rows * lanes
    foot_terms = []
    for port in ("rp0", "rp1"):
        slots = getattr(cfg, port)
        for k in range(len(slots)):
            s = slots[k]
            products = [(s.box[i] - 1)[:16] * s.lpitch[i] for i in range(kernelcfg.AXES - 1)]
            if stage is not None:
                products = [stage(v, f"foot_{port}_{k}_{i}") for i, v in enumerate(products)]
            span = sum(products) + s.box[kernelcfg.AXES - 1]
            foot_terms.append(~s.enable | (span <= (s.rows << bits)))
    footprint_ok = Cat(*foot_terms).all()
    # the enabled slots of an RP hold their tiles together: a job allocates one tile per slot
    # before any of its tiles is freed, so tiles that together exceed the SRAM wait for good
    rows_terms = []
    for port, cap in (("rp0", rp0_rows), ("rp1", rp1_rows)):
        slots = getattr(cfg, port)
        total = sum(Mux(slots[k].enable, slots[k].rows, 0) for k in range(len(slots)))
        rows_terms.append(total <= cap)
    rows_ok = Cat(*rows_terms).all()
    outputs_ok = Cat(~cfg.out_base[k][0] for k in range(len(cfg.out_base))).all()
    # operand sharing: the shared slot is enabled and alone in its RP
    numbered = [(0, k) for k in range(len(cfg.rp0))] + [(1, k) for k in range(len(cfg.rp1))]
    share_terms = []
    for n, (port, k) in enumerate(numbered):
        ports = (cfg.rp0, cfg.rp1)
        alone = Cat(~ports[port][q].enable for q in range(len(ports[port])) if q != k).all() \
            if len(ports[port]) > 1 else Const(1, 1)
        share_terms.append((cfg.share_slot == n) & ports[port][k].enable & alone)
    share_ok = (cfg.share_log2 == 0) | Cat(*share_terms).any()
    # 2-D sharing: the second shared slot likewise, in the RP other than the first's
    share2_terms = []
    first_port = Cat(*(cfg.share_slot == n for n, (port, _) in enumerate(numbered)
                       if port == 1)).any()
    for n, (port, k) in enumerate(numbered):
        ports = (cfg.rp0, cfg.rp1)
        alone = Cat(~ports[port][q].enable for q in range(len(ports[port])) if q != k).all() \
            if len(ports[port]) > 1 else Const(1, 1)
        share2_terms.append((cfg.share2_slot == n) & ports[port][k].enable & alone
                            & (first_port != port) & (cfg.share_slot < len(numbered)))
    share2_ok = (cfg.share2_log2 == 0) | ((cfg.share_log2 != 0) & Cat(*share2_terms).any())
    # footprint reuse: a held RP has one enabled slot, and no TAU group shares it
    hold_terms = []
    for port in (0, 1):
        ports = (cfg.rp0, cfg.rp1)
        count = sum(ports[port][q].enable for q in range(len(ports[port])))
        shared = Cat(*((cfg.share_log2 != 0) & (cfg.share_slot == n)
                       | (cfg.share2_log2 != 0) & (cfg.share2_slot == n)
                       for n, (p, _) in enumerate(numbered) if p == port)).any()
        hold_terms.append(~cfg.hold[port] | ((count == 1) & ~shared))
    hold_ok = Cat(*hold_terms).all()
    # the block walk with one shared slot: a shared slot, and no second one
    block_ok = ~cfg.share_block | ((cfg.share_log2 != 0) & (cfg.share2_log2 == 0))
    checks = {"sizes": sizes, "tiles": tiles, "lanes": lanes_ok, "range": range_ok,
              "slots": slots_ok, "outputs": outputs_ok, "share": share_ok,
              "footprint": footprint_ok, "rows": rows_ok,
              "share2": share2_ok, "block": block_ok, "hold": hold_ok}
    return [checks[name] for name, _ in CHECKS]


def _write_bytes(m, target, data, strb, lsb):
    """``target`` (bits ``lsb..`` of the written word) takes the bytes of ``data`` whose strobe
    is set, each byte under its own enable: flip-flops with a clock enable, no logic per bit."""
    for lo in range(lsb, lsb + len(target)):
        if lo != lsb and lo % 8:
            continue
        hi = min(lsb + len(target), (lo // 8 + 1) * 8)
        with m.If(strb[lo // 8]):
            m.d.sync += target[lo - lsb:hi - lsb].eq(data[lo:hi])


class Regs(wiring.Component):
    """AXI4-Lite register bank and run control of MERIT-z.

    Parameters
    ----------
    lanes, taus : int
        Reported in ``ID``; ``lanes`` also bounds the lane map and the bank rotation checks.
    rp0_rows, rp1_rows : int or None
        SRAM rows of RP0 / RP1 (a tile with more ``rows`` is refused); None: those of the TAU's
        default SRAMs at ``lanes`` (``merit.arch.RP_BYTES``).
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.

    Members
    -------
    s_axil : In(AXI4LiteSignature(addr_width=ADDR_WIDTH))
        The control port.
    config : Out(kernelcfg.layout(...))
        The configuration registers (held stable while busy: writes are refused).
    luts : Out(kernelcfg.lut_layout())
        The LUT window.
    run : Out(1)
        Pulse: a checked kernel starts.
    flush : Out(1)
        The run is being stopped (abort or error): stop dispatching, reset the TAUs, drain DRAM.
    finished : In(1)
        Pulse: every tile of the run is handed out and every TAU is idle.
    quiet : In(1)
        The DRAM port has nothing outstanding.
    tiles : In(32)
        Tiles handed out in this run (``TILES``).
    errors : In(error_layout(taus))
    busy, irq : Out(1)
    """

    def __init__(self, *, lanes, taus, rp0_rows=None, rp1_rows=None, rp0_slots=2, rp1_slots=1,
                 outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        self._taus = check_taus(taus)
        if rp0_rows is None:
            rp0_rows = RP_BYTES[0] // (2 * lanes)
        if rp1_rows is None:
            rp1_rows = RP_BYTES[1] // (2 * lanes)
        self._rp0_rows = check_range("rp0_rows", rp0_rows, 1, 65535)
        self._rp1_rows = check_range("rp1_rows", rp1_rows, 1, 65535)
        self._instructions = instructions
        self.map = register_map(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                                instructions=instructions)
        super().__init__({
            "s_axil": In(AXI4LiteSignature(addr_width=ADDR_WIDTH)),
            "config": Out(kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots,
                                           outputs=outputs, instructions=instructions)),
            "luts": Out(kernelcfg.lut_layout()),
            "run": Out(1),
            "flush": Out(1),
            "finished": In(1),
            "quiet": In(1),
            "tiles": In(32),
            "errors": In(error_layout(taus)),
            "busy": Out(1),
            "irq": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.s_axil
        rmap = self.map
        cfg_bits = Signal(rmap.config_bits)
        lut_bits = Signal(N_LUTS * LUT_ENTRIES * 16)
        m.d.comb += [self.config.as_value().eq(cfg_bits), self.luts.as_value().eq(lut_bits)]

        # ---- run state -------------------------------------------------------------------------
        busy = Signal()
        done = Signal()
        flushing = Signal()
        irq_enable = Signal()
        error = Signal(4)
        info = Signal(8)
        cycles = Signal(32)
        m.d.comb += [self.busy.eq(busy), self.flush.eq(flushing), self.irq.eq(done & irq_enable)]

        def stage(value, name):
            reg = Signal(len(value), name=name)
            m.d.sync += reg.eq(value)
            return reg

        # the footprint's products (multipliers) in registers, then every check registered:
        # two cycles behind the registers, which is safe because a CTRL write waits until two
        # cycles have passed since the last write of a configuration register (``settled``)
        checks = _checks(self.config, lanes=self._lanes, instructions=self._instructions,
                         rp0_rows=self._rp0_rows, rp1_rows=self._rp1_rows, stage=stage)
        passed = Signal(len(checks))
        m.d.sync += passed.eq(Cat(checks))
        failed = Signal(range(len(checks) + 1))     # number of the first failed check, 0 = none
        for n in reversed(range(len(checks))):
            with m.If(~passed[n]):
                m.d.comb += failed.eq(n + 1)

        # ---- AXI4-Lite write side: AW and W held until both are there ---------------------------
        aw_full, w_full = Signal(), Signal()
        aw_addr = Signal(ADDR_WIDTH)
        w_data, w_strb = Signal(32), Signal(4)
        m.d.comb += [bus.awready.eq(~aw_full), bus.wready.eq(~w_full)]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(bus.awaddr)]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        write = Signal()
        word = aw_addr[2:]
        since_cfg = Signal(range(3), init=2)     # cycles since a configuration write, up to 2
        settled = since_cfg == 2
        cfg_write = Signal()
        with m.If(cfg_write):
            m.d.sync += since_cfg.eq(0)
        with m.Elif(~settled):
            m.d.sync += since_cfg.eq(since_cfg + 1)
        m.d.comb += write.eq(aw_full & w_full & (~bus.bvalid | bus.bready)
                             & ((word != rmap["CTRL"].offset // 4) | settled))
        start = Signal()
        abort = Signal()
        clear_done = Signal()
        write_ok = Signal()
        with m.If(write):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bus.bvalid.eq(1),
                         bus.bresp.eq(Mux(write_ok, OKAY, SLVERR))]
        with m.Switch(word):
            with m.Case(rmap["CTRL"].offset // 4):
                m.d.comb += write_ok.eq(1)
                with m.If(write & w_strb[0]):
                    m.d.comb += [start.eq(w_data[0]), abort.eq(w_data[1])]
                    m.d.sync += irq_enable.eq(w_data[2])
            with m.Case(rmap["STATUS"].offset // 4):
                m.d.comb += write_ok.eq(1)
                with m.If(write & w_strb[0]):
                    m.d.comb += clear_done.eq(w_data[1])
            for name in ("ID", "TILES", "CYCLES"):
                with m.Case(rmap[name].offset // 4):
                    m.d.comb += write_ok.eq(1)      # read-only: writes are ignored
            for reg in rmap.config_registers:
                with m.Case(reg.offset // 4):
                    m.d.comb += [write_ok.eq(~busy), cfg_write.eq(write & ~busy)]
                    with m.If(write & ~busy):
                        for f in reg.fields:
                            _write_bytes(m, cfg_bits[f.config:f.config + f.width], w_data, w_strb,
                                         f.lsb)
            for w in range(rmap.lut_words):
                t, half = divmod(w, rmap.lut_words_per_table)
                with m.Case((rmap.lut_base + 4 * w) // 4):
                    m.d.comb += write_ok.eq(~busy)
                    for h in range(2):
                        e = 2 * half + h
                        if e >= LUT_ENTRIES:
                            continue
                        entry = lut_bits[16 * (t * LUT_ENTRIES + e):16 * (t * LUT_ENTRIES + e + 1)]
                        with m.If(write & ~busy):
                            _write_bytes(m, entry, w_data, w_strb, 16 * h)

        # ---- AXI4-Lite read side -------------------------------------------------------------
        m.d.comb += bus.arready.eq(~bus.rvalid)
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        rdata = Signal(32)
        read_ok = Signal()
        with m.Switch(bus.araddr[2:]):
            with m.Case(rmap["ID"].offset // 4):
                m.d.comb += [read_ok.eq(1),
                             rdata.eq(ID_MAGIC | self._lanes << 16 | self._taus << 24)]
            with m.Case(rmap["CTRL"].offset // 4):
                m.d.comb += [read_ok.eq(1), rdata.eq(irq_enable << 2)]
            with m.Case(rmap["STATUS"].offset // 4):
                m.d.comb += [read_ok.eq(1), rdata.eq(Cat(busy, done, Const(0, 2), error, info))]
            with m.Case(rmap["TILES"].offset // 4):
                m.d.comb += [read_ok.eq(1), rdata.eq(self.tiles)]
            with m.Case(rmap["CYCLES"].offset // 4):
                m.d.comb += [read_ok.eq(1), rdata.eq(cycles)]
            for reg in rmap.config_registers:
                with m.Case(reg.offset // 4):
                    m.d.comb += [read_ok.eq(1), rdata.eq(Cat(
                        *(cfg_bits[f.config:f.config + f.width] for f in reg.fields)))]
            for w in range(rmap.lut_words):
                t, half = divmod(w, rmap.lut_words_per_table)
                lo = 16 * (t * LUT_ENTRIES + 2 * half)
                width = 16 * min(2, LUT_ENTRIES - 2 * half)
                with m.Case((rmap.lut_base + 4 * w) // 4):
                    m.d.comb += [read_ok.eq(1), rdata.eq(lut_bits[lo:lo + width])]
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += [bus.rvalid.eq(1), bus.rdata.eq(rdata),
                         bus.rresp.eq(Mux(read_ok, OKAY, SLVERR))]

        # ---- run control ---------------------------------------------------------------------
        errs = self.errors
        code = Signal(4)
        which = Signal(8)
        for flags, value in ((errs.tau, Error.TAU), (errs.conflict, Error.CONFLICT)):
            with m.If(flags.any()):
                m.d.comb += code.eq(value)
                for n in reversed(range(self._taus)):
                    with m.If(flags[n]):
                        m.d.comb += which.eq(n)
        with m.If(errs.axi_write):
            m.d.comb += [code.eq(Error.AXI_WRITE), which.eq(0)]
        with m.If(errs.axi_read):
            m.d.comb += [code.eq(Error.AXI_READ), which.eq(0)]

        with m.If(busy & (cycles != 0xFFFF_FFFF)):
            m.d.sync += cycles.eq(cycles + 1)
        with m.If(clear_done):
            m.d.sync += done.eq(0)
        with m.If(~busy):
            with m.If(start):
                m.d.sync += [done.eq(0), error.eq(Error.NONE), info.eq(0), cycles.eq(0)]
                with m.If(failed != 0):
                    m.d.sync += [done.eq(1), error.eq(Error.CONFIG), info.eq(failed)]
                with m.Else():
                    m.d.sync += busy.eq(1)
                    m.d.comb += self.run.eq(1)
        with m.Elif(~flushing):
            with m.If(abort):
                m.d.sync += [flushing.eq(1), error.eq(Error.ABORTED)]
            with m.Elif(code != 0):
                m.d.sync += [flushing.eq(1), error.eq(code), info.eq(which)]
            with m.Elif(self.finished):
                m.d.sync += [busy.eq(0), done.eq(1)]
        with m.Elif(self.quiet):
            m.d.sync += [flushing.eq(0), busy.eq(0), done.eq(1)]
        return m

