"""The DRAM port of MERIT-z: several AXI4 managers (the TAUs) onto one AXI4 port (paper §V-A).

* AR and AW each go through a one-entry register slice fed by a **round-robin** arbiter (a
  manager that keeps its request up waits at most ``managers - 1`` grants, one per cycle at full
  rate). The manager's number is appended above its ID bits, so the DRAM port's IDs are
  ``id_width + ceil(log2 managers)`` wide and responses (R, B) are routed back by their ID alone:
  any order DRAM answers in is delivered correctly.
* **Urgent reads first** (``urgent``): a manager flags the reads that other managers wait for (a
  TAU's load of a shared slot that it multicasts to its group, :class:`meritz.tau.Tau`'s
  ``ar_urgent``). While any manager raises ``urgent``, its ARs are granted before every other
  AR, and a manager without the flag gets an AR only while fewer than ``plain_bursts`` of its
  read bursts are outstanding (accepted, last beat not yet delivered). DRAM answers bursts in
  the order it accepts them, so what a manager gets of the R channel follows its share of the
  bursts in flight; without the limit the other TAUs' loads, queued ahead, would keep the
  shared load to a quarter of the port while the whole group waits for it. The flag orders
  requests only: a plain manager's outstanding bursts are answered whatever is granted, so
  it is never held for good.
* AXI4 has no WID, so W beats follow the order of the AW grants: each grant queues
  ``(manager, awlen)``; the head of the queue selects whose beats pass, and the arbiter counts the
  beats itself (``wlast`` comes from the count). A manager may present W before its AW.
* ``drain`` (a stopped run, the TAUs held in reset): no new request is accepted from the managers;
  what DRAM already accepted is completed: owed W beats are sent with empty strobes (nothing is
  written; a beat already presented and waiting for WREADY keeps its payload, as AXI requires),
  R and B are accepted and dropped. ``quiet`` = nothing accepted and not answered.
* ``read_error`` / ``write_error`` pulse on an R beat / B response other than OKAY.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from merit.arch import PLAIN_BURSTS
from merit.checks import check_range
from meritz.bus import ID_WIDTH, AXI4Signature

__all__ = ["Arbiter", "round_robin"]

def round_robin(m, requests, last, n, name):
    """``(any, grant)``: the first requesting manager after ``last``, cyclically."""
    grant = Signal(range(max(n, 2)), name=name)
    with m.Switch(last):
        for start in range(n):
            with m.Case(start):
                for k in reversed(range(n)):
                    i = (start + 1 + k) % n
                    with m.If(requests[i]):
                        m.d.comb += grant.eq(i)
    return requests.any(), grant


class Arbiter(wiring.Component):
    """``managers`` AXI4 managers onto one AXI4 port.

    Parameters
    ----------
    managers : int
        Number of upstream managers (1..16).
    id_width : int
        ID bits of each manager.
    write_queue : int
        AW grants whose W beats may be pending (depth of the W order queue).
    plain_bursts : int
        While a manager raises ``urgent``: read bursts the others may each have outstanding
        (``merit.arch.PLAIN_BURSTS``, which ``merit.perf`` models).

    Members
    -------
    s_axi : In(AXI4Signature(id_width=id_width)).array(managers)
        The managers' ports (this block is their subordinate).
    m_axi : Out(AXI4Signature(id_width=id_width + log2 managers))
        The DRAM port.
    drain : In(1)
        Accept nothing new; finish what DRAM accepted (empty-strobe W beats), drop responses.
    urgent : In(managers)
        Per manager: the ARs it requests now are urgent (0: the plain round robin).
    quiet : Out(1)
        Nothing accepted from a manager is still waiting for DRAM or its answer.
    read_error, write_error : Out(1)
        Pulse: an R beat / a B response with RRESP / BRESP other than OKAY.
    """

    def __init__(self, *, managers, id_width=ID_WIDTH, write_queue=8,
                 plain_bursts=PLAIN_BURSTS):
        self._n = check_range("managers", managers, 1, 16)
        self._id = check_range("id_width", id_width, 1, 16)
        self._queue = check_range("write_queue", write_queue, 1, 256)
        self._plain = check_range("plain_bursts", plain_bursts, 1, 255)
        self._sel = (managers - 1).bit_length()
        super().__init__({
            "s_axi": In(AXI4Signature(id_width=id_width)).array(managers),
            "m_axi": Out(AXI4Signature(id_width=id_width + self._sel)),
            "drain": In(1),
            "urgent": In(managers),
            "quiet": Out(1),
            "read_error": Out(1),
            "write_error": Out(1),
        })

    def _tag(self, up_id, index):
        return Cat(up_id, index[:self._sel]) if self._sel else up_id

    def _owner(self, down_id):
        return down_id[self._id:] if self._sel else Const(0, 1)

    def elaborate(self, platform):
        m = Module()
        n, s, d = self._n, self.s_axi, self.m_axi
        drain = self.drain

        # ---- AR: round-robin into a register slice ---------------------------------------------
        ar_last = Signal(range(max(n, 2)))
        # read bursts of each manager accepted and not yet answered (its last beat delivered)
        owed = [Signal(16, name=f"ar_owed{i}") for i in range(n)]
        granted = [Signal(name=f"ar_granted{i}") for i in range(n)]
        r_owner = self._owner(d.rid)
        for i in range(n):
            answered = d.rvalid & d.rready & d.rlast & (r_owner == i)
            m.d.sync += owed[i].eq(owed[i] + granted[i] - answered)
        urgent = self.urgent
        ar_valid = Cat(s[i].arvalid for i in range(n)) & ~drain.replicate(n)
        first = ar_valid & urgent
        # a manager without the flag waits while another one's urgent load is in progress and
        # it already has ``plain_bursts`` bursts in flight
        room = Cat(owed[i] < self._plain for i in range(n))
        plain = ar_valid & ~urgent & Mux(urgent.any(), room, Const((1 << n) - 1, n))
        ar_req = Mux(first.any(), first, plain)
        ar_any, ar_grant = round_robin(m, ar_req, ar_last, n, "ar_grant")
        ar_load = Signal()
        m.d.comb += ar_load.eq(~d.arvalid | d.arready)
        with m.If(ar_load):
            m.d.sync += d.arvalid.eq(ar_any)
            with m.If(ar_any):
                m.d.sync += ar_last.eq(ar_grant)
                for i in range(n):
                    with m.If(ar_grant == i):
                        m.d.comb += [s[i].arready.eq(1), granted[i].eq(1)]
                        m.d.sync += [d.arid.eq(self._tag(s[i].arid, Const(i, 4))),
                                     d.araddr.eq(s[i].araddr), d.arlen.eq(s[i].arlen),
                                     d.arsize.eq(s[i].arsize), d.arburst.eq(s[i].arburst)]

        # ---- R: routed by ID ---------------------------------------------------------------------
        for i in range(n):
            m.d.comb += [s[i].rvalid.eq(d.rvalid & (r_owner == i) & ~drain),
                         s[i].rid.eq(d.rid[:self._id]), s[i].rdata.eq(d.rdata),
                         s[i].rresp.eq(d.rresp), s[i].rlast.eq(d.rlast)]
        m.d.comb += d.rready.eq(drain | Array(s[i].rready for i in range(n))[r_owner])

        # ---- AW: round-robin into a register slice, W order queued ----------------------------
        order = SyncFIFO(width=max(self._sel, 1) + 8, depth=self._queue)
        m.submodules.w_order = order
        aw_last = Signal(range(max(n, 2)))
        aw_req = Cat(s[i].awvalid for i in range(n)) & (~drain & order.w_rdy).replicate(n)
        aw_any, aw_grant = round_robin(m, aw_req, aw_last, n, "aw_grant")
        aw_load = Signal()
        m.d.comb += aw_load.eq(~d.awvalid | d.awready)
        with m.If(aw_load):
            m.d.sync += d.awvalid.eq(aw_any)
            with m.If(aw_any):
                m.d.sync += aw_last.eq(aw_grant)
                m.d.comb += order.w_en.eq(1)
                for i in range(n):
                    with m.If(aw_grant == i):
                        m.d.comb += [s[i].awready.eq(1),
                                     order.w_data.eq(Cat(s[i].awlen, Const(i, max(self._sel, 1))))]
                        m.d.sync += [d.awid.eq(self._tag(s[i].awid, Const(i, 4))),
                                     d.awaddr.eq(s[i].awaddr), d.awlen.eq(s[i].awlen),
                                     d.awsize.eq(s[i].awsize), d.awburst.eq(s[i].awburst)]

        # ---- W: beats of the queue's head --------------------------------------------------------
        w_len = order.r_data[:8]
        w_owner = order.r_data[8:]
        beat = Signal(8)
        up_valid = Array(s[i].wvalid for i in range(n))[w_owner]
        # a beat presented and not yet accepted is held as it is (AXI: VALID's payload stays
        # stable until READY), also when a stop starts draining meanwhile
        held = Signal()
        held_data = Signal.like(d.wdata)
        held_strb = Signal.like(d.wstrb)
        m.d.sync += held.eq(d.wvalid & ~d.wready)
        with m.If(d.wvalid & ~d.wready):
            m.d.sync += [held_data.eq(d.wdata), held_strb.eq(d.wstrb)]
        up_data = Mux(drain, 0, Array(s[i].wdata for i in range(n))[w_owner])
        up_strb = Mux(drain, 0, Array(s[i].wstrb for i in range(n))[w_owner])
        m.d.comb += [
            d.wvalid.eq(order.r_rdy & (drain | up_valid | held)),
            d.wdata.eq(Mux(held, held_data, up_data)),
            d.wstrb.eq(Mux(held, held_strb, up_strb)),
            d.wlast.eq(beat == w_len),
        ]
        for i in range(n):
            m.d.comb += s[i].wready.eq(order.r_rdy & (w_owner == i) & d.wready & ~drain)
        with m.If(d.wvalid & d.wready):
            m.d.sync += beat.eq(beat + 1)
            with m.If(d.wlast):
                m.d.sync += beat.eq(0)
                m.d.comb += order.r_en.eq(1)

        # ---- B: routed by ID ---------------------------------------------------------------------
        b_owner = self._owner(d.bid)
        for i in range(n):
            m.d.comb += [s[i].bvalid.eq(d.bvalid & (b_owner == i) & ~drain),
                         s[i].bid.eq(d.bid[:self._id]), s[i].bresp.eq(d.bresp)]
        m.d.comb += d.bready.eq(drain | Array(s[i].bready for i in range(n))[b_owner])

        # ---- outstanding bursts, errors ----------------------------------------------------------
        reads, writes = Signal(16), Signal(16)
        m.d.sync += [
            reads.eq(reads + (d.arvalid & d.arready) - (d.rvalid & d.rready & d.rlast)),
            writes.eq(writes + (d.awvalid & d.awready) - (d.bvalid & d.bready)),
        ]
        m.d.comb += [
            self.quiet.eq(~d.arvalid & ~d.awvalid & ~order.r_rdy & (reads == 0) & (writes == 0)),
            self.read_error.eq(d.rvalid & d.rready & (d.rresp != 0)),
            self.write_error.eq(d.bvalid & d.bready & (d.bresp != 0)),
        ]
        return m
