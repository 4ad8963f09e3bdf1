"""The TileLooper of a TAU: each parallel tile becomes its accumulation tiles, with their SRAM.

For each parallel tile (origin ``p``) it walks the accumulation tiles in order (last index
fastest); for each one it allocates one SRAM tile per enabled input slot in the slot's Read
Pipeline, hands the DMA a load request with the granted base row, and then sends the accumulation
tile to the StepLooper and, as a job, to the Compute Pipeline (one FIFO each). Allocation runs ahead
of compute as far as the SRAM and the two FIFOs allow: the prefetch of Fig. 10 of the MERIT paper.

**Footprint reuse** (``config.hold``, bit ``r``: RP ``r``'s one enabled slot is held). Before it
allocates such a slot, the looper decides at once whether the job reuses the tile of this TAU's
previous job: the origins agree on every index the slot moves along (its stride is not 0), and
the chain is live. The decision goes to the RP as a token (``held0`` / ``held1``, a short FIFO
beside the allocations, one token per job, in job order); a held job allocates nothing and
requests nothing for that slot. When the looper has no next job (its parallel tile done, none
dealt) while the RP waits for the fate of its last tile (``hold_wait``), it sends an ``end``
token and the next job loads again: the RP frees a kept tile only on a "changed" or ``end``
token, so whether a tile is reused or freed is decided here alone.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from merit.arch import MAX_SLOTS, RP_BYTES
from merit.checks import check_lanes, check_range
from meritz import kernelcfg
from meritz.tau.cp.sequencer import job_layout
from meritz.tau.dma import request_layout
from meritz.tau.rp import hold_token_layout
from meritz.tau.rp.banks import grant_layout
from meritz.tau.step_looper import acc_tile_layout, lane_map

__all__ = ["TileLooper", "tile_layout"]

P, A = kernelcfg.P_INDICES, kernelcfg.A_INDICES


def tile_layout():
    """One parallel tile: its origin per parallel index (from the Dispatcher to a TAU)."""
    return data.ArrayLayout(unsigned(16), P)


#: Depth of the held tokens' FIFO of each RP (a token per job: the job FIFO's depth).
HOLD_TOKENS = 4


def _edge_groups_registered(m, config, p_origin, lanelog, lanes):
    """:func:`meritz.tau.step_looper.edge_groups` in two register stages (the origin's
    difference to the last index, then the groups), the configuration's values registered
    first: ``min(ceil(rest / lanes_j), full)`` is ``(d >> lanelog) + 1`` or ``full`` for
    ``d = p_size - 1 - origin >= 0``, one group for a tile wholly outside."""
    bits = lanes.bit_length() - 1
    out = []
    for j in range(P):
        log = Signal(range(bits + 1), name=f"tl_lanelog{j}")
        full = Signal(16, name=f"tl_full{j}")
        full_m1 = Signal(signed(17), name=f"tl_full_m1_{j}")
        last = Signal(signed(18), name=f"tl_p_last{j}")
        d = Signal(signed(18), name=f"tl_rest_m1_{j}")
        outside = Signal(name=f"tl_outside{j}")
        groups = Signal(16, name=f"tl_groups{j}")
        need_m1 = Signal(16, name=f"tl_need_m1_{j}")
        m.d.sync += [log.eq(lanelog[j]), full.eq(config.p_tile[j] >> log),
                     full_m1.eq(full - 1), last.eq(config.p_size[j] - 1),
                     d.eq(last - p_origin[j]), outside.eq(p_origin[j] > last)]
        m.d.comb += need_m1.eq(d.as_unsigned() >> log)
        m.d.sync += groups.eq(Mux(outside, 1, Mux(need_m1 < full_m1, need_m1 + 1, full)))
        out.append(groups)
    return out


def _fifo(m, name, layout, depth):
    fifo = SyncFIFOBuffered(width=data.Layout.cast(layout).size, depth=depth)
    m.submodules[name] = fifo
    return fifo


class TileLooper(wiring.Component):
    """Parallel tiles in; SRAM allocations, DMA requests, accumulation tiles and jobs out.

    Parameters
    ----------
    lanes : int
        Lanes of the TAU (a job names the lane groups of its tile that hold an output).
    rows : (int, int) or None
        SRAM rows of RP0 and RP1 (the width of their grants' base rows); None: those of the
        TAU's default SRAM sizes (:data:`merit.arch.RP_BYTES`) at ``lanes``.
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.

    Members
    -------
    config : In(kernelcfg.layout(...))
    tiles : In(stream.Signature(tile_layout()))
        Parallel tiles to compute.
    alloc0, alloc1 : Out(stream.Signature(unsigned(16)))
        SRAM tile allocations (rows) in RP0 / RP1.
    grant0, grant1 : In(stream.Signature(grant_layout(rows)))
        The RPs' answers: the base row of each allocated tile.
    requests : Out(stream.Signature(request_layout()))
        One footprint load per enabled slot and accumulation tile, to the DMA.
    acc_tiles : Out(stream.Signature(acc_tile_layout()))
        Accumulation tiles, to the StepLooper (a 4-deep FIFO).
    jobs : Out(stream.Signature(job_layout()))
        The same accumulation tiles with their extents and lane groups, to the Compute Pipeline
        (4-deep).
    idle : Out(1)
        No parallel tile in progress and both FIFOs empty.
    held0, held1 : Out(stream.Signature(hold_token_layout))
        Footprint reuse: a token per job for RP0 / RP1 where ``config.hold`` holds its slot,
        and an ``end`` token where the chain ends.
    hold_wait0, hold_wait1 : In(1)
        The RP keeps a tile whose fate waits for the next token.
    share_lead, share_follow, share_ready, share_taken : In(1)
    share_credit, share_take : Out(1)
        Operand sharing (:class:`meritz.tau.Tau`): a follower allocates the shared slot's tile but
        requests nothing (a credit for its leader); a leader requests it once every follower
        holds a credit (``share_ready``) and pulses ``share_take`` when it does.
    share2_lead, share2_follow, share2_ready, share2_taken : In(1)
    share2_credit, share2_take : Out(1)
        The same for the second shared slot (``config.share2_slot``, 2-D sharing), with its own
        credits.
    """

    def __init__(self, *, lanes, rows=None, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        if rows is None:
            rows = tuple(size // (2 * lanes) for size in RP_BYTES)
        self._slots = (check_range("rp0_slots", rp0_slots, 1, MAX_SLOTS),
                       check_range("rp1_slots", rp1_slots, 1, MAX_SLOTS))
        self._params = dict(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                            instructions=instructions)
        super().__init__({
            "config": In(kernelcfg.layout(**self._params)),
            "tiles": In(stream.Signature(tile_layout())),
            "alloc0": Out(stream.Signature(unsigned(16))),
            "alloc1": Out(stream.Signature(unsigned(16))),
            "grant0": In(stream.Signature(grant_layout(rows[0]))),
            "grant1": In(stream.Signature(grant_layout(rows[1]))),
            "requests": Out(stream.Signature(request_layout())),
            "acc_tiles": Out(stream.Signature(acc_tile_layout())),
            "jobs": Out(stream.Signature(job_layout())),
            "idle": Out(1),
            "held0": Out(stream.Signature(hold_token_layout)),
            "held1": Out(stream.Signature(hold_token_layout)),
            "hold_wait0": In(1),
            "hold_wait1": In(1),
            "share_lead": In(1),
            "share_follow": In(1),
            "share_ready": In(1),
            "share_taken": In(1),
            "share_credit": Out(1),
            "share_take": Out(1),
            "share2_lead": In(1),
            "share2_follow": In(1),
            "share2_ready": In(1),
            "share2_taken": In(1),
            "share2_credit": Out(1),
            "share2_take": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        n_slots = sum(self._slots)
        alloc, grant = (self.alloc0, self.alloc1), (self.grant0, self.grant1)

        slots = [cfg.rp0[k] for k in range(self._slots[0])] + \
                [cfg.rp1[k] for k in range(self._slots[1])]
        port_of = [0] * self._slots[0] + [1] * self._slots[1]
        p_origin = Array(Signal(16, name=f"tl_p{j}") for j in range(P))
        a_origin = Array(Signal(16, name=f"tl_a{j}") for j in range(A))
        slot_no = Signal(range(n_slots + 1))
        tile_fifo = _fifo(m, "tile_fifo", acc_tile_layout(), 4)
        job_fifo = _fifo(m, "job_fifo", job_layout(), 4)

        # a job's extents, lane groups and wraps, registered from the origins: an origin is set
        # in IDLE or JOB, and the next JOB comes three cycles or more later (ALLOC visits every
        # slot and the end), so they are the new origin's by then
        extent = [Signal(16, name=f"tl_extent{j}") for j in range(A)]
        for j in range(A):
            rest = cfg.a_size[j] - a_origin[j]
            m.d.sync += extent[j].eq(Mux(rest < cfg.a_tile[j], rest, cfg.a_tile[j]))
        tile_value = Signal(acc_tile_layout())
        m.d.comb += [tile_value.p_origin[j].eq(p_origin[j]) for j in range(P)]
        m.d.comb += [tile_value.a_origin[j].eq(a_origin[j]) for j in range(A)]
        job_value = Signal(job_layout())
        m.d.comb += [job_value.p_origin[j].eq(p_origin[j]) for j in range(P)]
        m.d.comb += [job_value.a_origin[j].eq(a_origin[j]) for j in range(A)]
        m.d.comb += [job_value.a_extent[j].eq(extent[j]) for j in range(A)]
        _, _, lanelog = lane_map(m, cfg, self._lanes)
        groups = _edge_groups_registered(m, cfg, p_origin, lanelog, self._lanes)
        m.d.comb += [job_value.p_groups[j].eq(groups[j]) for j in range(P)]
        m.d.comb += [tile_fifo.w_data.eq(tile_value.as_value()),
                     job_fifo.w_data.eq(job_value.as_value())]
        # per index: it wraps, and every index after it wraps (it steps or wraps in JOB)
        wraps = [a_origin[j] + cfg.a_tile[j] >= cfg.a_size[j] for j in range(A)]
        a_wrap = [Signal(name=f"tl_a_wrap{j}") for j in range(A)]
        a_inner = [Signal(name=f"tl_a_inner{j}") for j in range(A + 1)]
        m.d.sync += [a_wrap[j].eq(wraps[j]) for j in range(A)]
        m.d.sync += [a_inner[j].eq(Cat(*wraps[j:], Const(1, 1)).all()) for j in range(A + 1)]

        enable = Array(s.enable for s in slots + [slots[-1]])
        rows_of = Array(s.rows for s in slots + [slots[-1]])
        port = Array(Const(p, 1) for p in port_of + [port_of[-1]])[slot_no]
        req = self.requests.payload
        m.d.comb += [req.tile.eq(tile_value), req.slot.eq(slot_no)]
        for a in alloc:
            m.d.comb += a.payload.eq(rows_of[slot_no])

        # per shared slot: credits (tiles allocated that its leader has not requested yet)
        credits = [Signal(16, name="credits"), Signal(16, name="credits2")]
        credit_up = [Signal(name="credit_up"), Signal(name="credit2_up")]
        roles = [(self.share_lead, self.share_follow, self.share_ready, self.share_taken,
                  self.share_credit, self.share_take, cfg.share_slot),
                 (self.share2_lead, self.share2_follow, self.share2_ready, self.share2_taken,
                  self.share2_credit, self.share2_take, cfg.share2_slot)]
        for d, (_, _, _, taken, credit, _, _) in enumerate(roles):
            m.d.sync += credits[d].eq(credits[d] + credit_up[d] - taken)
            m.d.comb += credit.eq(credits[d] != 0)

        # footprint reuse: per RP a FIFO of tokens, whether its chain is live, and the origins
        # of the previous job (the same for both RPs)
        tokens = [_fifo(m, f"held{r}_fifo", hold_token_layout, HOLD_TOKENS) for r in (0, 1)]
        token = [Signal(hold_token_layout, name=f"held{r}_token") for r in (0, 1)]
        live = [Signal(name=f"hold_live{r}") for r in (0, 1)]
        waits = (self.hold_wait0, self.hold_wait1)
        prev = [Signal(16, name=f"tl_prev{j}") for j in range(P + A)]
        origins = [p_origin[j] for j in range(P)] + [a_origin[j] for j in range(A)]
        token_done = Signal()           # this slot's token is in its FIFO (it allocates next)
        stride = Array(s.stride for s in slots + [slots[-1]])[slot_no]
        same = Cat(*((stride[j] == 0) | (prev[j] == origins[j]) for j in range(P + A))).all()
        holds = Array([cfg.hold[port_of[k]] for k in range(n_slots)] + [Const(0, 1)])[slot_no]
        held_now = Mux(port, live[1], live[0]) & same
        for r, out in enumerate((self.held0, self.held1)):
            m.d.comb += [tokens[r].w_data.eq(token[r].as_value()),
                         out.valid.eq(tokens[r].r_rdy), out.payload.eq(tokens[r].r_data),
                         tokens[r].r_en.eq(out.ready)]

        with m.FSM(name="tile_looper"):
            with m.State("IDLE"):
                m.d.comb += self.tiles.ready.eq(1)
                # no next job: end each live chain whose RP waits for it
                with m.If(~self.tiles.valid):
                    for r in (0, 1):
                        end = live[r] & waits[r]
                        m.d.comb += [token[r].end.eq(1), tokens[r].w_en.eq(end)]
                        with m.If(end & tokens[r].w_rdy):
                            m.d.sync += live[r].eq(0)
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
                with m.Elif(holds & ~token_done):
                    # a held slot: decide and hand the RP the token before allocating
                    for r in (0, 1):
                        m.d.comb += [token[r].held.eq(held_now),
                                     tokens[r].w_en.eq(port == r)]
                    with m.If(Mux(port, tokens[1].w_rdy, tokens[0].w_rdy)):
                        with m.If(port):
                            m.d.sync += live[1].eq(1)
                        with m.Else():
                            m.d.sync += live[0].eq(1)
                        with m.If(held_now):
                            m.d.sync += slot_no.eq(slot_no + 1)
                        with m.Else():
                            m.d.sync += token_done.eq(1)
                with m.Else():
                    for k, a in enumerate(alloc):
                        m.d.comb += a.valid.eq(port == k)
                    with m.If(Mux(port, alloc[1].ready, alloc[0].ready)):
                        m.next = "GRANT"
            with m.State("GRANT"):
                g_valid = Mux(port, grant[1].valid, grant[0].valid)
                g_base = Mux(port, grant[1].payload.base, grant[0].payload.base)
                # a follower's shared slot is fetched by its group's leader: no request, a
                # credit for the leader; the leader requests it once every follower has one
                # (2-D sharing: the same for each of the two shared slots, in different RPs)
                fed = Cat(follow & (slot_no == slot)
                          for _, follow, _, _, _, _, slot in roles).any()
                wait = Cat(lead & (slot_no == slot) & ~ready
                           for lead, _, ready, _, _, _, slot in roles).any()
                m.d.comb += [self.requests.valid.eq(g_valid & ~fed & ~wait), req.base.eq(g_base)]
                for d, (lead, follow, _, _, _, take, slot) in enumerate(roles):
                    m.d.comb += [credit_up[d].eq(g_valid & follow & (slot_no == slot)),
                                 take.eq(lead & (slot_no == slot) & self.requests.valid
                                         & self.requests.ready)]
                with m.If(g_valid & (self.requests.ready & ~wait | fed)):
                    m.d.comb += [grant[0].ready.eq(port == 0), grant[1].ready.eq(port == 1)]
                    m.d.sync += [slot_no.eq(slot_no + 1), token_done.eq(0)]
                    m.next = "ALLOC"
            with m.State("JOB"):
                go = tile_fifo.w_rdy & job_fifo.w_rdy
                m.d.comb += [tile_fifo.w_en.eq(go), job_fifo.w_en.eq(go)]
                with m.If(go):
                    m.d.sync += slot_no.eq(0)
                    m.d.sync += [prev[j].eq(origins[j]) for j in range(P + A)]
                    # next accumulation tile: last index fastest
                    for j in range(A):
                        inner = a_inner[j + 1]
                        with m.If(inner):
                            m.d.sync += a_origin[j].eq(Mux(a_wrap[j], 0,
                                                           a_origin[j] + cfg.a_tile[j]))
                    with m.If(a_inner[0]):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "ALLOC"

        m.d.comb += [
            self.acc_tiles.valid.eq(tile_fifo.r_rdy),
            self.acc_tiles.payload.eq(tile_fifo.r_data),
            tile_fifo.r_en.eq(self.acc_tiles.ready),
            self.jobs.valid.eq(job_fifo.r_rdy),
            self.jobs.payload.eq(job_fifo.r_data),
            job_fifo.r_en.eq(self.jobs.ready),
            self.idle.eq(self.tiles.ready & ~self.tiles.valid & ~tile_fifo.r_rdy
                         & ~job_fifo.r_rdy),
        ]
        return m
