"""The Tile Accumulation Unit (§V-A, Fig. 7-10; ``docs/tau.md``): RP0 + RP1 + CP + WP + DMA.

Parallel tiles come in (from the dispatcher, or a bench acting as one); the TAU loads the
footprints of every (parallel tile, accumulation tile), computes, and writes the outputs through
one AXI4 manager port (reads: DMA, writes: WP). Inside, one loop nest decides every order
(``docs/tau.md`` §2):

- the **TileLooper** (here) walks the accumulation tiles of each parallel tile; for each it
  allocates one SRAM tile per enabled input slot in its RP, hands the DMA the granted base row,
  and sends the accumulation tile to the StepLooper and the CP (as a job). Allocation runs ahead
  of compute as far as the SRAM and the job FIFOs allow: the prefetch of Fig. 10;
- the **StepLooper** (``meritz.tau.step_looper``) turns each accumulation tile into beats (warp,
  step), which a broadcast hands to RP0, RP1 and the WP's address side through one FIFO each;
- the CP (``meritz.tau.cp.ComputePipeline``) walks the same order and consumes the RP vectors;
  its ``out`` vectors are paired with the WP events of the same beats.

``idle`` is true when no tile is in flight anywhere and every write has its response.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from merit.checks import check_lanes
from merit.isa import LUT_ENTRIES, N_LUTS
from meritz import kernelcfg
from meritz.tau.cp import ComputePipeline
from meritz.tau.dma import Dma, axi_read_signature
from meritz.tau.rp import ReadPipeline, rp_error_layout
from meritz.tau.rp.agu import is_out
from meritz.tau.step_looper import StepLooper, beat_layout, lane_map, tile_layout
from meritz.tau.wp import WritePipeline, axi_write_signature

__all__ = ["Tau", "axi_signature", "tau_error_layout", "tau_busy_layout", "luts_layout"]

P, A = kernelcfg.P_INDICES, kernelcfg.A_INDICES

#: Sticky error flags of a TAU (the status register reports them).
tau_error_layout = data.StructLayout({
    "rp0": rp_error_layout,
    "rp1": rp_error_layout,
    "dma": unsigned(1),       # AXI read error response
    "wp": unsigned(1),        # AXI write error response
    "cp": unsigned(2),        # illegal instruction, bad job
})

#: Which parts of a TAU hold work (the status register's busy bits).
tau_busy_layout = data.StructLayout({
    "looper": unsigned(1),    # tile looper, its FIFOs or the StepLooper
    "dma": unsigned(1),
    "rp0": unsigned(1),
    "rp1": unsigned(1),
    "cp": unsigned(1),
    "wp": unsigned(1),
})


def luts_layout():
    """The CP's lookup tables (a table memory next to the registers)."""
    return data.ArrayLayout(data.ArrayLayout(signed(16), LUT_ENTRIES), N_LUTS)


def axi_signature():
    """AXI4 manager: read channels of the DMA and write channels of the WP."""
    members = dict(axi_read_signature().members)
    members.update(axi_write_signature().members)
    return wiring.Signature(members)


def _fifo(m, name, layout, depth):
    fifo = SyncFIFOBuffered(width=data.Layout.cast(layout).size, depth=depth)
    m.submodules[name] = fifo
    return fifo


class Tau(wiring.Component):
    """One Tile Accumulation Unit.

    Parameters
    ----------
    lanes : int
        ``N``, a power of two.
    rp0_bytes, rp1_bytes, cp_bytes : int
        SRAM sizes (default 16 KB, 8 KB, 5 KB, §V-A of the MERIT paper).
    ports : int
        1 (single-port RP banks, the default) or 2.
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.

    Members
    -------
    config : In(kernelcfg.layout(...))
        The kernel configuration, held for the whole kernel.
    luts : In(luts_layout())
        The CP's lookup tables.
    tiles : In(stream.Signature(ArrayLayout(unsigned(16), 6)))
        Origins of the parallel tiles to compute.
    m_axi : Out(axi_signature())
    idle : Out(1)
        Nothing in flight: every accepted tile is computed and written (last write response
        received).
    busy : Out(tau_busy_layout)
        Which parts hold work.
    errors : Out(tau_error_layout)
    """

    def __init__(self, *, lanes, rp0_bytes=16384, rp1_bytes=8192, cp_bytes=5120, ports=1,
                 rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        for name, value in (("rp0_bytes", rp0_bytes), ("rp1_bytes", rp1_bytes)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            rows = value // (2 * lanes)
            if value % (2 * lanes) or rows < 2 or rows & (rows - 1):
                raise ValueError(f"{name} must be a power-of-two number of {lanes}-word rows, "
                                 f"not {value}")
        self._rows = (rp0_bytes // (2 * lanes), rp1_bytes // (2 * lanes))
        self._cp_bytes = cp_bytes
        self._ports = ports
        self._slots = (rp0_slots, rp1_slots)
        self._params = dict(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                            instructions=instructions)
        self._instructions = instructions
        super().__init__({
            "config": In(kernelcfg.layout(**self._params)),
            "luts": In(luts_layout()),
            "tiles": In(stream.Signature(data.ArrayLayout(unsigned(16), P))),
            "m_axi": Out(axi_signature()),
            "idle": Out(1),
            "busy": Out(tau_busy_layout),
            "errors": Out(tau_error_layout),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes
        cfg = self.config
        params = self._params
        n_slots = sum(self._slots)
        pc_bits = max(self._instructions, 1).bit_length()

        m.submodules.looper = looper = StepLooper(lanes=lanes, **params)
        m.submodules.dma = dma = Dma(lanes=lanes, **params)
        m.submodules.rp0 = rp0 = ReadPipeline(lanes=lanes, port=0, depth=self._rows[0],
                                              ports=self._ports, **params)
        m.submodules.rp1 = rp1 = ReadPipeline(lanes=lanes, port=1, depth=self._rows[1],
                                              ports=self._ports, **params)
        m.submodules.cp = cp = ComputePipeline(lanes=lanes, program_depth=self._instructions,
                                               sram_bytes=self._cp_bytes)
        m.submodules.wp = wp = WritePipeline(lanes=lanes, **params)
        rps = (rp0, rp1)
        for block in (looper, dma, rp0, rp1, wp):
            m.d.comb += block.config.eq(cfg)

        # ---- CP configuration, derived from the kernel configuration --------------------------
        _, rank, lanelog = lane_map(m, cfg, lanes)
        seq = cp.config.seq
        m.d.comb += [seq.program[i].eq(cfg.program[i]) for i in range(self._instructions)]
        m.d.comb += [seq.begs[k].eq(cfg.begs[k]) for k in range(A + 1)]
        m.d.comb += [seq.ends[k].eq(cfg.ends[k]) for k in range(A + 1)]
        m.d.comb += [seq.a_shape[j].eq(cfg.a_size[j]) for j in range(A)]
        bits = lanes.bit_length() - 1
        for j in range(P):
            first_bit = Signal(range(bits + 1), name=f"lane_shift{j}")
            for i in reversed(range(bits)):
                with m.If(cfg.lane_index[i] == j):
                    m.d.comb += first_bit.eq(i)
            m.d.comb += [
                seq.group_shape[j].eq(cfg.p_tile[j] >> lanelog[j]),
                seq.lane_bits[j].eq(lanelog[j]),
                seq.lane_shift[j].eq(Mux(lanelog[j] != 0, first_bit, 0)),
            ]
        m.d.comb += [seq.regs.eq(cfg.regs), cp.config.simd.luts.eq(self.luts)]
        m.d.comb += [cp.config.simd.consts[k].eq(cfg.consts[k]) for k in range(4)]

        # ---- TileLooper: accumulation tiles of each parallel tile -----------------------------
        slots = [cfg.rp0[k] for k in range(self._slots[0])] + \
                [cfg.rp1[k] for k in range(self._slots[1])]
        port_of = [0] * self._slots[0] + [1] * self._slots[1]
        p_origin = Array(Signal(16, name=f"tl_p{j}") for j in range(P))
        a_origin = Array(Signal(16, name=f"tl_a{j}") for j in range(A))
        slot_no = Signal(range(n_slots + 1))
        tile_fifo = _fifo(m, "tile_fifo", tile_layout(), 4)
        job_fifo = _fifo(m, "job_fifo", cp.job.payload.shape(), 4)

        extent = [Signal(16, name=f"tl_extent{j}") for j in range(A)]
        for j in range(A):
            rest = cfg.a_size[j] - a_origin[j]
            m.d.comb += extent[j].eq(Mux(rest < cfg.a_tile[j], rest, cfg.a_tile[j]))
        tile_value = Signal(tile_layout())
        m.d.comb += [tile_value.p_origin[j].eq(p_origin[j]) for j in range(P)]
        m.d.comb += [tile_value.a_origin[j].eq(a_origin[j]) for j in range(A)]
        job_value = Signal(cp.job.payload.shape())
        m.d.comb += [job_value.p_origin[j].eq(p_origin[j]) for j in range(P)]
        m.d.comb += [job_value.a_origin[j].eq(a_origin[j]) for j in range(A)]
        m.d.comb += [job_value.a_extent[j].eq(extent[j]) for j in range(A)]
        m.d.comb += [tile_fifo.w_data.eq(tile_value.as_value()),
                     job_fifo.w_data.eq(job_value.as_value())]
        a_wrap = [a_origin[j] + cfg.a_tile[j] >= cfg.a_size[j] for j in range(A)]

        enable = Array(s.enable for s in slots + [slots[-1]])
        rows_of = Array(s.rows for s in slots + [slots[-1]])
        port = Array(Const(p, 1) for p in port_of + [port_of[-1]])[slot_no]
        grant = [rp.grant for rp in rps]
        req = dma.requests.payload
        m.d.comb += [req.tile.eq(tile_value), req.slot.eq(slot_no)]
        for rp in rps:
            m.d.comb += rp.alloc.payload.eq(rows_of[slot_no])

        with m.FSM(name="tile_looper"):
            with m.State("IDLE"):
                m.d.comb += self.tiles.ready.eq(1)
                with m.If(self.tiles.valid):
                    m.d.sync += [p_origin[j].eq(self.tiles.payload[j]) for j in range(P)]
                    m.d.sync += [a_origin[j].eq(0) for j in range(A)]
                    m.d.sync += slot_no.eq(0)
                    m.next = "ALLOC"
            with m.State("ALLOC"):
                with m.If(slot_no == n_slots):
                    m.next = "JOB"
                with m.Elif(~enable[slot_no]):
                    m.d.sync += slot_no.eq(slot_no + 1)
                with m.Else():
                    for k, rp in enumerate(rps):
                        m.d.comb += rp.alloc.valid.eq(port == k)
                    with m.If(Mux(port, rp1.alloc.ready, rp0.alloc.ready)):
                        m.next = "GRANT"
            with m.State("GRANT"):
                g_valid = Mux(port, grant[1].valid, grant[0].valid)
                g_base = Mux(port, grant[1].payload.base, grant[0].payload.base)
                m.d.comb += [dma.requests.valid.eq(g_valid), req.base.eq(g_base)]
                with m.If(g_valid & dma.requests.ready):
                    m.d.comb += [grant[0].ready.eq(port == 0), grant[1].ready.eq(port == 1)]
                    m.d.sync += slot_no.eq(slot_no + 1)
                    m.next = "ALLOC"
            with m.State("JOB"):
                go = tile_fifo.w_rdy & job_fifo.w_rdy
                m.d.comb += [tile_fifo.w_en.eq(go), job_fifo.w_en.eq(go)]
                with m.If(go):
                    m.d.sync += slot_no.eq(0)
                    # next accumulation tile: last index fastest
                    for j in range(A):
                        inner = Cat(*a_wrap[j + 1:], Const(1, 1)).all()
                        with m.If(inner):
                            m.d.sync += a_origin[j].eq(Mux(a_wrap[j], 0,
                                                           a_origin[j] + cfg.a_tile[j]))
                    with m.If(Cat(*a_wrap).all()):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "ALLOC"

        # tile / job FIFOs -> StepLooper / CP
        m.d.comb += [
            looper.tiles.valid.eq(tile_fifo.r_rdy),
            looper.tiles.payload.eq(tile_fifo.r_data),
            tile_fifo.r_en.eq(looper.tiles.ready),
            cp.job.valid.eq(job_fifo.r_rdy),
            cp.job.payload.eq(job_fifo.r_data),
            job_fifo.r_en.eq(cp.job.ready),
        ]

        # ---- DMA rows -> the RP of their slot ------------------------------------------------
        row_port = dma.rows.payload.slot >= self._slots[0]
        for k, rp in enumerate(rps):
            m.d.comb += [rp.rows.valid.eq(dma.rows.valid & (row_port == k)),
                         rp.rows.payload.eq(dma.rows.payload)]
        m.d.comb += dma.rows.ready.eq(Mux(row_port, rp1.rows.ready, rp0.rows.ready))

        # ---- beats: broadcast to RP0, RP1 and the WP events ------------------------------------
        blayout = beat_layout(n_slots, pc_bits)
        bfifos = [_fifo(m, f"beats{k}", blayout, 4) for k in range(3)]
        all_ready = Cat(f.w_rdy for f in bfifos).all()
        m.d.comb += looper.beats.ready.eq(all_ready)
        for f in bfifos:
            m.d.comb += [f.w_en.eq(looper.beats.valid & all_ready),
                         f.w_data.eq(looper.beats.payload.as_value())]
        for k, rp in enumerate(rps):
            f = bfifos[k]
            m.d.comb += [rp.beats.valid.eq(f.r_rdy), rp.beats.payload.eq(f.r_data),
                         f.r_en.eq(rp.beats.ready)]
            m.d.comb += [getattr(cp, f"rp{k}").valid.eq(rp.data.valid),
                         getattr(cp, f"rp{k}").payload.eq(rp.data.payload),
                         rp.data.ready.eq(getattr(cp, f"rp{k}").ready)]

        # ---- WP events: one per out instruction of each beat, paired with the CP's vectors ----
        wf = bfifos[2]
        beat = Signal(blayout)
        m.d.comb += beat.eq(wf.r_data)
        n = self._instructions
        outs = Signal(n)
        m.d.comb += outs.eq(Cat(is_out(cfg.program[i]) for i in range(n)))

        def outs_below(pc):
            return sum(Mux(pc > i, outs[i], 0) for i in range(n))

        started = Signal()
        k_cur = Signal(range(n + 1))
        k_lo = Signal(range(n + 1))
        k_end = Signal(range(n + 1))
        m.d.comb += [k_lo.eq(outs_below(beat.beg)), k_end.eq(outs_below(beat.end))]
        cur = Mux(started, k_cur, k_lo)
        more = cur < k_end
        vec = wp.vectors.payload
        m.d.comb += [
            vec.data.eq(cp.out.payload),
            vec.offset.eq(beat.out),
            vec.p_warp.eq(beat.p_warp),
            vec.output.eq(cur),
            wp.vectors.valid.eq(wf.r_rdy & more & cp.out.valid),
            cp.out.ready.eq(wf.r_rdy & more & wp.vectors.ready),
        ]
        with m.If(wf.r_rdy):
            with m.If(~more):
                m.d.comb += wf.r_en.eq(1)
                m.d.sync += started.eq(0)
            with m.Elif(wp.vectors.valid & wp.vectors.ready):
                with m.If(cur + 1 >= k_end):
                    m.d.comb += wf.r_en.eq(1)
                    m.d.sync += started.eq(0)
                with m.Else():
                    m.d.sync += [started.eq(1), k_cur.eq(cur + 1)]

        # ---- AXI -----------------------------------------------------------------------------
        for name in axi_read_signature().members:
            src, dst = (dma.m_axi, self.m_axi)
            if axi_read_signature().members[name].flow == Out:
                m.d.comb += getattr(dst, name).eq(getattr(src, name))
            else:
                m.d.comb += getattr(src, name).eq(getattr(dst, name))
        for name in axi_write_signature().members:
            src, dst = (wp.m_axi, self.m_axi)
            if axi_write_signature().members[name].flow == Out:
                m.d.comb += getattr(dst, name).eq(getattr(src, name))
            else:
                m.d.comb += getattr(src, name).eq(getattr(dst, name))

        # ---- status --------------------------------------------------------------------------
        looper_idle = ~looper.beats.valid & looper.tiles.ready
        quiet = Cat(~tile_fifo.r_rdy, ~job_fifo.r_rdy, *[~f.r_rdy for f in bfifos]).all()
        fsm_idle = Signal()
        m.d.comb += fsm_idle.eq(self.tiles.ready & ~self.tiles.valid)
        m.d.comb += [
            self.busy.looper.eq(~(fsm_idle & quiet & looper_idle)),
            self.busy.dma.eq(~dma.idle),
            self.busy.rp0.eq(~rp0.idle),
            self.busy.rp1.eq(~rp1.idle),
            self.busy.cp.eq(~cp.idle | cp.out.valid),
            self.busy.wp.eq(~wp.idle),
            self.idle.eq(~self.busy.as_value().any()),
            self.errors.rp0.eq(rp0.errors),
            self.errors.rp1.eq(rp1.errors),
            self.errors.dma.eq(dma.error),
            self.errors.wp.eq(wp.error),
            self.errors.cp.eq(cp.error),
        ]
        self._probe = {"looper": looper, "dma": dma, "rp0": rp0, "rp1": rp1, "cp": cp, "wp": wp,
                       "beats": bfifos}                       # for simulation probes
        return m
