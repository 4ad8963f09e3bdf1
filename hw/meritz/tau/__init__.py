"""The Tile Accumulation Unit (§V-A, Fig. 7-10; ``docs/tau.md``): RP0 + RP1 + CP + WP + DMA.

Parallel tiles come in (from the dispatcher, or a bench acting as one); the TAU loads the
footprints of every (parallel tile, accumulation tile), computes, and writes the outputs through
one AXI4 manager port (reads: DMA, writes: WP). Inside, one loop nest decides every order
(``docs/tau.md`` §2):

- the **TileLooper** (``meritz.tau.tile_looper``) walks the accumulation tiles of each parallel
  tile; for each it allocates one SRAM tile per enabled input slot in its RP, hands the DMA the
  granted base row, and sends the accumulation tile to the StepLooper and the CP (as a job).
  Allocation runs ahead of compute as far as the SRAM and the job FIFOs allow: the prefetch of
  Fig. 10;
- the **StepLooper** (``meritz.tau.step_looper``) turns each accumulation tile into beats (warp,
  step), which a broadcast hands to RP0, RP1 and the WP's address side through one FIFO each;
- the CP (``meritz.tau.cp.ComputePipeline``) walks the same order and consumes the RP vectors;
  its ``out`` vectors are paired with the WP events of the same beats.

``idle`` is true when no tile is in flight anywhere and every write has its response.
"""

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from merit.arch import CP_BYTES, RP_BYTES, RP_PORTS
from meritz import kernelcfg
from meritz.bus import AXI4Signature
from meritz.tau.cp import ComputePipeline
from meritz.tau.dma import Dma, check_dma_lanes, row_layout
from meritz.tau.rp import ReadPipeline, rp_error_layout
from meritz.tau.rp.agu import is_out
from meritz.tau.step_looper import StepLooper, beat_layout, lane_map
from meritz.tau.tile_looper import TileLooper, tile_layout
from meritz.tau.wp import WritePipeline

__all__ = ["Tau", "tau_error_layout", "tau_busy_layout", "share_layout", "share_members"]

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


#: A TAU's part in operand sharing (``meritz.top``): ``lead`` = it fetches the shared slot for
#: its group and multicasts the rows (``mc``); ``follow`` = it fetches every slot but the shared
#: one, whose rows arrive on ``shared_rows``.
share_layout = data.StructLayout({"lead": unsigned(1), "follow": unsigned(1)})


def share_members(lanes, n=""):
    """The members of one shared slot's multicast, by name: ``n`` = "" for the first shared slot,
    "2" for the second (two-dimensional sharing)."""
    row = stream.Signature(row_layout(lanes))
    return {f"share{n}": In(share_layout), f"share{n}_ready": In(1), f"share{n}_taken": In(1),
            f"share{n}_credit": Out(1), f"share{n}_take": Out(1), f"mc{n}": Out(row),
            f"shared_rows{n}": In(row)}


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
        Ports of the RP SRAM banks: 2 (one read and one write port, the default,
        :data:`merit.arch.RP_PORTS`: a load's rows never take a read cycle from the CP) or 1
        (single-port banks: writes win, a read waits a cycle per row written).
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.

    Members
    -------
    config : In(kernelcfg.layout(...))
        The kernel configuration, held for the whole kernel.
    luts : In(kernelcfg.lut_layout())
        The CP's lookup tables.
    tiles : In(stream.Signature(tile_layout()))
        Origins of the parallel tiles to compute.
    m_axi : Out(AXI4Signature())
        The DMA's read channels and the WP's write channels.
    idle : Out(1)
        Nothing in flight: every accepted tile is computed and written (last write response
        received).
    busy : Out(tau_busy_layout)
        Which parts hold work.
    errors : Out(tau_error_layout)
    ar_urgent : Out(1)
        The DMA is requesting the reads of a shared slot that this TAU fetches for its group
        (a leader's multicast load): the arbiter (:class:`meritz.arbiter.Arbiter`) serves such
        reads before the other TAUs' own loads.
    share : In(share_layout)
        Operand sharing (``lead`` and ``follow`` 0: the TAU fetches every slot itself). The
        shared slot is ``config.share_slot``; it must be the only enabled slot of its RP. The
        leader requests a shared tile only when every follower has allocated it
        (``share_ready``), so its rows never wait for a follower and never hold up the shared
        AXI R channel.
    share_ready : In(1)
        Leader: every follower has allocated a shared tile that the leader has not requested
        yet (each follower's ``share_credit``).
    share_taken : In(1)
        Follower: its leader requested a shared tile (its ``share_take``).
    share_credit : Out(1)
        Follower: it has allocated a shared tile that its leader has not requested yet.
    share_take : Out(1)
        Leader: it requests a shared tile this cycle (one credit of every follower).
    mc : Out(stream.Signature(row_layout(lanes)))
        Leader: the rows of the shared slot, to the group's followers (a row leaves when the
        leader's RP and every follower take it).
    shared_rows : In(stream.Signature(row_layout(lanes)))
        Follower: the leader's rows of the shared slot; taken only while the RP has a tile
        allocated for them.
    share2, share2_ready, share2_taken, share2_credit, share2_take, mc2, shared_rows2
        The same for the second shared slot ``config.share2_slot`` (2-D sharing: it lies in the
        other RP, and its group is another set of TAUs, so a TAU may lead one slot's group and
        follow in the other's); ``share2`` 0 when sharing is 1-D or off.
    """

    def __init__(self, *, lanes, rp0_bytes=RP_BYTES[0], rp1_bytes=RP_BYTES[1], cp_bytes=CP_BYTES,
                 ports=RP_PORTS, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_dma_lanes(lanes)
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
            "luts": In(kernelcfg.lut_layout()),
            "tiles": In(stream.Signature(tile_layout())),
            "m_axi": Out(AXI4Signature()),
            "idle": Out(1),
            "busy": Out(tau_busy_layout),
            "errors": Out(tau_error_layout),
            "ar_urgent": Out(1),
            **share_members(lanes),
            **share_members(lanes, "2"),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes
        cfg = self.config
        params = self._params
        n_slots = sum(self._slots)
        pc_bits = max(self._instructions, 1).bit_length()

        m.submodules.tiles = tiles = TileLooper(lanes=lanes, rows=self._rows, **params)
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
        for block in (tiles, looper, dma, rp0, rp1, wp):
            m.d.comb += block.config.eq(cfg)

        # ---- CP configuration, derived from the kernel configuration --------------------------
        _, rank, lanelog = lane_map(m, cfg, lanes)
        seq = cp.config.seq
        m.d.comb += [seq.program[i].eq(cfg.program[i]) for i in range(self._instructions)]
        m.d.comb += [seq.begs[k].eq(cfg.begs[k]) for k in range(A + 1)]
        m.d.comb += [seq.ends[k].eq(cfg.ends[k]) for k in range(A + 1)]
        m.d.comb += [seq.a_shape[j].eq(cfg.a_size[j]) for j in range(A)]
        m.d.comb += [seq.xstride[j].eq(cfg.xstride[j]) for j in range(A)]
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

        # ---- TileLooper: accumulation tiles of each parallel tile ----------------------------
        wiring.connect(m, wiring.flipped(self.tiles), tiles.tiles)
        wiring.connect(m, tiles.alloc0, rp0.alloc)
        wiring.connect(m, tiles.alloc1, rp1.alloc)
        wiring.connect(m, rp0.grant, tiles.grant0)
        wiring.connect(m, rp1.grant, tiles.grant1)
        wiring.connect(m, tiles.requests, dma.requests)
        wiring.connect(m, tiles.acc_tiles, looper.tiles)
        wiring.connect(m, tiles.jobs, cp.job)
        # footprint reuse: the looper's decisions to the RPs, their waits back
        wiring.connect(m, tiles.held0, rp0.held)
        wiring.connect(m, tiles.held1, rp1.held)
        m.d.comb += [tiles.hold_wait0.eq(rp0.hold_wait), tiles.hold_wait1.eq(rp1.hold_wait)]
        m.d.comb += [tiles.share_lead.eq(self.share.lead), tiles.share_follow.eq(self.share.follow),
                     tiles.share_ready.eq(self.share_ready), tiles.share_taken.eq(self.share_taken),
                     self.share_credit.eq(tiles.share_credit), self.share_take.eq(tiles.share_take)]
        m.d.comb += [tiles.share2_lead.eq(self.share2.lead),
                     tiles.share2_follow.eq(self.share2.follow),
                     tiles.share2_ready.eq(self.share2_ready),
                     tiles.share2_taken.eq(self.share2_taken),
                     self.share2_credit.eq(tiles.share2_credit),
                     self.share2_take.eq(tiles.share2_take)]

        # ---- DMA rows -> the RP of their slot; the shared slots' rows to / from the groups ----
        # (2-D sharing: the second shared slot lies in the other RP, with its own group)
        row_port = dma.rows.payload.slot >= self._slots[0]
        own_ready = Mux(row_port, rp1.rows.ready, rp0.rows.ready)
        dims = [(self.share, cfg.share_slot, self.mc, self.shared_rows),
                (self.share2, cfg.share2_slot, self.mc2, self.shared_rows2)]
        lead_rows = [role.lead & (dma.rows.payload.slot == slot) for role, slot, _, _ in dims]
        # a load the group waits for: the DMA requests a slot it fetches for its followers
        m.d.comb += self.ar_urgent.eq(dma.loading & Cat(
            role.lead & (dma.loading_slot == slot) for role, slot, _, _ in dims).any())
        # a led slot's row leaves when its own RP and every follower of its group take it
        mc_ok = Cat(~lead | mc.ready
                    for lead, (_, _, mc, _) in zip(lead_rows, dims, strict=True)).all()
        ports = [slot >= self._slots[0] for _, slot, _, _ in dims]
        for k, rp in enumerate(rps):
            fed = [role.follow & (ports[d] == k) for d, (role, _, _, _) in enumerate(dims)]
            m.d.comb += [
                rp.rows.valid.eq(Mux(fed[0], self.shared_rows.valid,
                                     Mux(fed[1], self.shared_rows2.valid,
                                         dma.rows.valid & (row_port == k) & mc_ok))),
                rp.rows.payload.eq(Mux(fed[0], self.shared_rows.payload,
                                       Mux(fed[1], self.shared_rows2.payload,
                                           dma.rows.payload))),
            ]
        m.d.comb += dma.rows.ready.eq(own_ready & mc_ok)
        for d, (role, _, mc, shared_rows) in enumerate(dims):
            m.d.comb += [
                mc.valid.eq(dma.rows.valid & lead_rows[d] & own_ready),
                mc.payload.eq(dma.rows.payload),
                shared_rows.ready.eq(role.follow
                                     & Mux(ports[d], rp1.rows.ready, rp0.rows.ready)),
            ]

        # ---- beats: broadcast to RP0, RP1 and the WP events ------------------------------------
        blayout = beat_layout(n_slots, pc_bits)
        # the WP's events wait for the CP's out vectors, which leave the SIMD array's second
        # execute stage: one entry more than the RPs' so that the looper does not wait on them
        bfifos = [_fifo(m, f"beats{k}", blayout, 5 if k == 2 else 4) for k in range(3)]
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
        # one AXI4 port: the DMA's read channels and the WP's write channels, member by member
        for sub in (dma.m_axi, wp.m_axi):
            for name, member in sub.signature.members.items():
                if member.flow == Out:
                    m.d.comb += getattr(self.m_axi, name).eq(getattr(sub, name))
                else:
                    m.d.comb += getattr(sub, name).eq(getattr(self.m_axi, name))

        # ---- status --------------------------------------------------------------------------
        looper_idle = ~looper.beats.valid & looper.tiles.ready
        quiet = Cat(*[~f.r_rdy for f in bfifos]).all()
        m.d.comb += [
            self.busy.looper.eq(~(tiles.idle & quiet & looper_idle)),
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
        self._probe = {"tiles": tiles, "looper": looper, "dma": dma, "rp0": rp0, "rp1": rp1,
                       "cp": cp, "wp": wp, "beats": bfifos}   # for simulation probes
        return m
