"""The MERIT-z processor (paper §V-A, Fig. 7): control port, dispatcher, TAUs, DRAM port.

```
 s_axil (AXI4-Lite) --> Regs --config/luts--> every TAU, Dispatcher
                          | run / flush          |
                          v                      v tiles (one slot per TAU)
                      Dispatcher ----------> TAU 0 .. TAU T-1 --m_axi--> Arbiter --> m_axi (AXI4)
                          ^ finished             | idle, errors             | quiet, AXI errors
                          +----------------------+--------------------------+--> Regs (status, irq)
```

* ``Regs`` (:mod:`meritz.regs`) holds the configuration, checks it at START and runs the status
  register and the ``irq`` line.
* The ``Dispatcher`` (:mod:`meritz.dispatcher`) deals the parallel tiles; a run is done when every
  tile is taken and every TAU is idle (its last write response arrived).
* The ``Arbiter`` (:mod:`meritz.arbiter`) merges the TAUs' AXI4 ports (the TAU number goes above
  the 4 ID bits of each TAU) and reports AXI error responses.
* The TAUs are held in reset between runs (each run starts from a clean TAU, whatever happened
  while the registers were written) and while a stopped run (abort or error) drains the DRAM port.
* The TAUs are identical: in Verilog they are one module (``meritz_tau_...``) instanced ``taus``
  times (:class:`meritz.emit.Shared`), so the Verilog and the simulator model of a 4-TAU
  processor are about the size of one TAU's (``share=False`` elaborates every TAU in place, for
  the Amaranth simulator).

The TAU is a parameter: ``tau`` is a class (or any callable) taking ``lanes`` and the kernel
layout parameters, returning a component with the members of :func:`check_tau` (by default
:class:`meritz.tau.Tau`; ``verif/stubs.py``: ``StubTau`` is a small stand-in that exercises the rest
of Top).
"""

import hashlib

from amaranth import (
    Array,
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    DomainRenamer,
    Module,
    ResetSignal,
    Signal,
)
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from merit.arch import CP_BYTES, RP_BYTES
from merit.checks import check_lanes, check_taus
from meritz import kernelcfg
from meritz.arbiter import Arbiter
from meritz.bus import ID_WIDTH, AXI4LiteSignature, AXI4Signature
from meritz.dispatcher import Dispatcher, share_shape
from meritz.emit import Shared
from meritz.regs import ADDR_WIDTH, Regs
from meritz.tau import share_members

__all__ = ["Top", "check_tau"]

#: Members every TAU must have (name -> flow); ``luts`` is optional.
TAU_MEMBERS = {"config": In, "tiles": In, "m_axi": Out, "idle": Out, "errors": Out}
#: Members of a TAU that shares operands with its group (:class:`meritz.tau.Tau`); optional.
SHARE_MEMBERS = tuple(share_members(1))
#: ... and of one that shares a second operand with another group (2-D sharing); optional.
SHARE2_MEMBERS = tuple(share_members(1, "2"))


def check_tau(tau):
    """Raise TypeError unless ``tau`` has the TAU's interface."""
    if not isinstance(tau, wiring.Component):
        raise TypeError(f"tau must build an amaranth.lib.wiring.Component, not {tau!r}")
    members = tau.signature.members
    for name, flow in TAU_MEMBERS.items():
        member = members[name] if name in members else None
        if member is None or member.flow != flow:
            raise TypeError(f"tau must have a member {name!r} of flow {flow.name}, "
                            f"not {member!r}")
    return tau


def _error_bits(view):
    """``(conflict, other)`` bits of a TAU's ``errors``: fields named ``conflict``, and every
    other flag except ``dma`` / ``wp`` (AXI error responses, which the arbiter reports)."""
    if not isinstance(view, data.View) or not isinstance(view.shape(), data.StructLayout):
        return [], [view.as_value() if isinstance(view, data.View) else view]
    conflict, other = [], []
    for name, _ in view.shape():
        field = getattr(view, name)
        if name == "conflict":
            conflict.append(field.as_value() if isinstance(field, data.View) else field)
        elif name not in ("dma", "wp"):
            c, o = _error_bits(field)
            conflict += c
            other += o
    return conflict, other


def _any(values):
    return Cat(*values).any() if values else 0


class Top(wiring.Component):
    """MERIT-z: ``taus`` TAUs of ``lanes`` lanes behind one control port and one DRAM port.

    Parameters
    ----------
    lanes : int
        Lanes per TAU (power of two).
    taus : int
        Number of TAUs (1..16).
    rp0_bytes, rp1_bytes, cp_bytes : int
        SRAM per TAU (defaults 16 KB, 8 KB, 5 KB, §V-A of the MERIT paper).
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.
    tau : callable, optional
        Builds one TAU (keyword arguments: ``lanes``, the SRAM sizes that it accepts, the layout
        parameters). Default :class:`meritz.tau.Tau`.
    share : bool
        Emit the TAU once as its own Verilog module, instanced ``taus`` times (default); False
        builds ``taus`` separate TAUs (needed to run Top in the Amaranth simulator).

    Members
    -------
    s_axil : In(AXI4LiteSignature(addr_width=ADDR_WIDTH))
        Control port (``docs/registers.md``).
    m_axi : Out(AXI4Signature(id_width=4 + ceil(log2 taus)))
        DRAM port, 64-bit data.
    irq : Out(1)
        ``STATUS.done`` when ``CTRL.irq_enable``.
    """

    def __init__(self, *, lanes=32, taus=4, rp0_bytes=RP_BYTES[0], rp1_bytes=RP_BYTES[1],
                 cp_bytes=CP_BYTES, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16, tau=None,
                 share=True):
        self._lanes = check_lanes(lanes)
        self._taus = check_taus(taus)
        for name, value in (("rp0_bytes", rp0_bytes), ("rp1_bytes", rp1_bytes),
                            ("cp_bytes", cp_bytes)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if value < 2 * lanes:
                raise ValueError(f"{name} must hold at least one row of {lanes} words, "
                                 f"not {value}")
        self._params = dict(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                            instructions=instructions)
        kernelcfg.check_params(**self._params)
        self._rows = (rp0_bytes // (2 * lanes), rp1_bytes // (2 * lanes))
        if tau is None:
            from meritz.tau import Tau as tau
        if not callable(tau):
            raise TypeError(f"tau must be a callable building a TAU, not {tau!r}")
        sizes = dict(rp0_bytes=rp0_bytes, rp1_bytes=rp1_bytes, cp_bytes=cp_bytes)
        if share:
            inner = check_tau(tau(lanes=lanes, **sizes, **self._params))
            key = repr((getattr(tau, "__qualname__", repr(tau)), lanes, sorted(sizes.items()),
                        sorted(self._params.items())))
            name = f"meritz_tau_n{lanes}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"
            self.tau_units = [Shared(inner, name) for _ in range(taus)]
        else:
            self.tau_units = [check_tau(tau(lanes=lanes, **sizes, **self._params))
                              for _ in range(taus)]
        self._sel = (taus - 1).bit_length()
        super().__init__({
            "s_axil": In(AXI4LiteSignature(addr_width=ADDR_WIDTH)),
            "m_axi": Out(AXI4Signature(id_width=ID_WIDTH + self._sel)),
            "irq": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._taus
        m.submodules.regs = regs = Regs(lanes=self._lanes, taus=n, rp0_rows=self._rows[0],
                                        rp1_rows=self._rows[1], **self._params)
        m.submodules.dispatcher = disp = Dispatcher(taus=n, **self._params)
        m.submodules.arbiter = arb = Arbiter(managers=n)
        wiring.connect(m, wiring.flipped(self.s_axil), regs.s_axil)
        wiring.connect(m, arb.m_axi, wiring.flipped(self.m_axi))
        m.d.comb += [
            disp.config.eq(regs.config),
            disp.run.eq(regs.run),
            disp.stop.eq(regs.flush),
            arb.drain.eq(regs.flush),
            regs.finished.eq(disp.finished),
            regs.quiet.eq(arb.quiet),
            regs.tiles.eq(disp.count),
            regs.errors.axi_read.eq(arb.read_error),
            regs.errors.axi_write.eq(arb.write_error),
            self.irq.eq(regs.irq),
        ]
        hold = Signal()         # TAUs in reset: between runs (each run starts clean) and flushing
        m.d.comb += hold.eq(~regs.busy | regs.flush)
        m.domains.tau = tau_domain = ClockDomain("tau", local=True)
        m.d.comb += [tau_domain.clk.eq(ClockSignal("sync")),
                     tau_domain.rst.eq(ResetSignal("sync") | hold)]
        for i, tau in enumerate(self.tau_units):
            m.submodules[f"tau{i}"] = DomainRenamer({"sync": "tau"})(tau)
            m.d.comb += tau.config.eq(regs.config)
            if "luts" in tau.signature.members:
                m.d.comb += tau.luts.eq(regs.luts)
            wiring.connect(m, disp.tiles[i], tau.tiles)
            m.d.comb += disp.idle[i].eq(tau.idle)
            wiring.connect(m, tau.m_axi, arb.s_axi[i])
            if "ar_urgent" in tau.signature.members:
                m.d.comb += arb.urgent[i].eq(tau.ar_urgent)
            conflict, other = _error_bits(tau.errors)
            m.d.comb += [regs.errors.conflict[i].eq(_any(conflict)),
                         regs.errors.tau[i].eq(_any(other))]
        if all(name in tau.signature.members for tau in self.tau_units
               for name in SHARE_MEMBERS):
            two = all(name in tau.signature.members for tau in self.tau_units
                      for name in SHARE2_MEMBERS)
            self._share(m, regs.config, two)
        return m

    def _share(self, m, cfg, two):
        """Operand sharing (``docs/tau.md`` §10). 1-D: TAUs ``i`` with the same
        ``i >> share_log2`` form a group; its first TAU fetches the shared slot and multicasts
        each row to the others. 2-D (``share2_log2`` > 0, :func:`meritz.dispatcher.share_shape`):
        the second shared slot's groups lie on the next ``share2_log2`` TAU-index bits (TAUs equal
        but on those bits), each with its first TAU as leader, so a TAU may lead one slot's group
        and follow in the other's. Per slot, the leader requests a shared tile when every follower
        holds a credit (has allocated it), and each request takes one credit from every
        follower."""
        n = self._taus
        units = self.tau_units
        two_d, log2s = share_shape(m, cfg, n)
        dims = [(SHARE_MEMBERS, cfg.share_log2 != 0, log2s[0], Const(0, 4))]
        if two:
            # the block walk with one shared slot (``share_block``) shares no second slot
            dims.append((SHARE2_MEMBERS, two_d & (cfg.share2_log2 != 0), log2s[1], log2s[0]))
        for d, (names, on, log2, shift) in enumerate(dims):
            share, ready, taken, credit, take, mc, rows = names
            self._groups(m, units, f"d{d}_", on, log2, shift,
                         [getattr(u, share) for u in units], [getattr(u, ready) for u in units],
                         [getattr(u, taken) for u in units], [getattr(u, credit) for u in units],
                         [getattr(u, take) for u in units], [getattr(u, mc) for u in units],
                         [getattr(u, rows) for u in units])

    def _groups(self, m, units, prefix, on, log2, shift, share, ready, taken, credit, take, mc,
                rows):
        """One shared slot's groups: the TAUs equal but on the ``log2`` TAU-index bits from bit
        ``shift``; the leader of each is the one with those bits 0."""
        n = self._taus
        top = (n - 1).bit_length()
        # per TAU: the leader of its group, whether every follower of its group takes the row,
        # and whether every follower has allocated the next shared tile (a credit)
        leader = [Signal(range(max(n, 2)), name=f"{prefix}leader{i}") for i in range(n)]
        takes = [Signal(name=f"{prefix}takes{i}") for i in range(n)]
        credits = [Signal(name=f"{prefix}credits{i}") for i in range(n)]
        key = Signal(8, name=f"{prefix}group")
        m.d.comb += key.eq(Cat(log2[:4], shift[:4]))
        for i in range(n):
            with m.Switch(key):
                for k in range(top + 1):
                    for sh in range(top + 1 - k):
                        with m.Case(k | sh << 4):
                            mask = ((1 << k) - 1) << sh
                            first = i & ~mask
                            group = [f for f in range(n) if f & ~mask == first and f != first]
                            m.d.comb += [
                                leader[i].eq(first),
                                takes[i].eq(Cat(Const(1, 1), *(rows[f].ready
                                                              for f in group)).all()),
                                credits[i].eq(Cat(Const(1, 1), *(credit[f]
                                                                for f in group)).all()),
                            ]
        for i in range(n):
            follow = on & (leader[i] != i)
            m.d.comb += [
                share[i].lead.eq(on & (leader[i] == i)),
                share[i].follow.eq(follow),
                ready[i].eq(credits[i]),
                taken[i].eq(follow & Array(take)[leader[i]]),
                mc[i].ready.eq(takes[i]),
                rows[i].valid.eq(follow & Array(u.valid for u in mc)[leader[i]]
                                 & Array(takes)[leader[i]]),
                rows[i].payload.eq(Array(u.payload.as_value() for u in mc)[leader[i]]),
            ]
