"""A Read Pipeline of a TAU (§V-A, Fig. 8-9; ``docs/tau.md`` §1): tiles in, lane vectors out.

Write side: the DMA's rows of a tile (or, on a TAU that shares an operand, the rows its group's
first TAU fetched) go through the collector (bank function, butterfly + omega) into the banks of
the :class:`~meritz.tau.rp.banks.TileBuffer`, at the base row of the tile being filled; the FIFO
commits the tile when its last word has arrived.

Read side: the :class:`~meritz.tau.rp.agu.LaneAddressGenerator` turns the StepLooper's beats into
``N`` tile addresses per read (taking the base rows of the committed tiles of each accumulation tile
and giving them back for freeing after its last read); each lane's (bank, row) comes from the bank
function, the router turns them into one row per bank (flagging conflicts), the banks are read and
the read butterfly delivers one word per lane (multicast allowed).
"""

from amaranth import Array, Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.arch import TILE_ADDRESS_BITS
from merit.checks import check_lanes
from meritz import kernelcfg
from meritz.tau.dma import row_layout
from meritz.tau.rp.agu import LaneAddressGenerator
from meritz.tau.rp.banks import TileBuffer, grant_layout
from meritz.tau.rp.butterfly import Butterfly, ButterflyRouter
from meritz.tau.rp.collector import Collector
from meritz.tau.step_looper import beat_layout

__all__ = ["ReadPipeline", "bank_of", "rp_error_layout", "hold_token_layout"]

#: One token of footprint reuse (``config.hold``), from the TileLooper to a held RP: per job,
#: ``held`` = the job reuses the previous job's tile (else a new tile was allocated for it);
#: ``end`` = no next job: the chain's last tile is freed after its reads.
hold_token_layout = data.StructLayout({"held": unsigned(1), "end": unsigned(1)})


#: Sticky error flags of a Read Pipeline.
rp_error_layout = data.StructLayout({
    "tiles": unsigned(4),         # TileBuffer errors: read, write, alloc, free
    "conflict": unsigned(1),      # a read needed two rows of one bank (not routable)
    "bank": unsigned(1),          # the slot's bank function is not one (collector)
})


def bank_of(m, address, xor, rotate, bits, name="bank"):
    """Bank of a tile address (the bank function of ``merit.mapping.BankFunction``):
    ``x_j = a_j ^ a_xor[j]`` (0 = no term), bank bit ``j`` = ``x_{(j + rotate) mod bits}``.
    Returns a signal of ``max(bits, 1)`` bits."""
    bank = Signal(max(bits, 1), name=name)
    if bits == 0:
        return bank
    x = Signal(bits, name=f"{name}_x")
    m.d.comb += x.eq(Cat(address[j] ^ Mux(xor[j] != 0, address.bit_select(xor[j], 1), 0)
                         for j in range(bits)))
    with m.Switch(rotate):
        for r in range(bits):
            with m.Case(r):
                m.d.comb += bank.eq(Cat(x[(j + r) % bits] for j in range(bits)))
    return bank


class ReadPipeline(wiring.Component):
    """One RP: TileBuffer + collector + address generator + router + read butterfly.

    Parameters
    ----------
    lanes : int
    port : int
        0 (RP0) or 1 (RP1): which slots of the configuration it serves.
    depth : int
        Rows of the SRAM (RP0: 16 KB = ``8192 / lanes`` rows, RP1: 8 KB).
    ports : int
        1 (single-port banks) or 2.
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout`.

    Members
    -------
    config : In(kernelcfg.layout(...))
    rows : In(stream.Signature(row_layout(lanes)))
        Rows of this RP's tiles from the DMA (``slot`` numbered over both RPs).
    alloc : In(stream.Signature(unsigned(16)))
        Tile allocations (rows), in the order of the tiles.
    grant : Out(stream.Signature(grant_layout(depth)))
    beats : In(stream.Signature(beat_layout(...)))
    data : Out(stream.Signature(data.ArrayLayout(signed(16), lanes)))
        One vector per instruction reading this RP, in the order of the rule.
    errors : Out(rp_error_layout)
    idle : Out(1)
        No tile live and no read in flight.
    held : In(stream.Signature(hold_token_layout))
        Footprint reuse (``config.hold`` names this RP; its one enabled slot): a token per job,
        in job order, and ``end`` where a chain ends. A held job takes the tile of the job
        before it (no new tile is committed for it); a tile's free, after its last read, waits
        for the next token: freed on "changed" or ``end``, kept on "held".
    hold_wait : Out(1)
        A tile's reads are done and its fate waits for a token that has not come.
    """

    def __init__(self, *, lanes, port, depth, ports=1, rp0_slots=2, rp1_slots=1, outputs=3,
                 instructions=16):
        self._lanes = check_lanes(lanes)
        self._port = port
        self._depth = depth
        self._ports = ports
        self._all = (rp0_slots, rp1_slots)
        self._slots = self._all[port]
        self._params = dict(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                            instructions=instructions)
        self._agu = LaneAddressGenerator(lanes=lanes, port=port, **self._params)
        pc_bits = max(instructions, 1).bit_length()
        super().__init__({
            "config": In(kernelcfg.layout(**self._params)),
            "rows": In(stream.Signature(row_layout(lanes))),
            "alloc": In(stream.Signature(unsigned(16))),
            "grant": Out(stream.Signature(grant_layout(depth))),
            "beats": In(stream.Signature(beat_layout(sum(self._all), pc_bits))),
            "data": Out(stream.Signature(data.ArrayLayout(signed(16), lanes))),
            "errors": Out(rp_error_layout),
            "idle": Out(1),
            "held": In(stream.Signature(hold_token_layout)),
            "hold_wait": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes, depth = self._lanes, self._depth
        bits = lanes.bit_length() - 1
        row_bits = (depth - 1).bit_length()
        cfg = self.config
        slots = [getattr(cfg, f"rp{self._port}")[k] for k in range(self._slots)]
        first_slot = 0 if self._port == 0 else self._all[0]

        m.submodules.tiles = tb = TileBuffer(lanes=lanes, depth=depth, ports=self._ports)
        m.submodules.collector = coll = Collector(lanes=lanes, row_bits=TILE_ADDRESS_BITS - bits)
        m.submodules.agu = agu = self._agu
        m.submodules.router = router = ButterflyRouter(lanes=lanes, row_bits=row_bits)
        m.submodules.butterfly = bfly = Butterfly(lanes=lanes, routing="select")
        m.d.comb += agu.config.eq(cfg)
        wiring.connect(m, wiring.flipped(self.alloc), tb.alloc)
        wiring.connect(m, tb.grant, wiring.flipped(self.grant))
        wiring.connect(m, wiring.flipped(self.beats), agu.beats)

        # ---- write side: DMA rows -> collector -> banks -------------------------------------
        # rows go into the tile being filled (the oldest allocated, uncommitted one), at its own
        # base row: a row is taken only while such a tile exists, so rows that another TAU's DMA
        # multicasts (operand sharing, ``meritz.top``) wait for this RP's allocation
        row = self.rows.payload
        filling = Signal()
        m.d.comb += filling.eq(tb.fill.rows != 0)
        padded = slots + [slots[-1]] * (4 - len(slots))
        wslot = Signal(kernelcfg.slot_layout())
        m.d.comb += wslot.eq(Array(s.as_value() for s in padded)[(row.slot - first_slot)[:2]])
        m.d.comb += [coll.config.xor[j].eq(wslot.xor[j]) for j in range(bits)]
        m.d.comb += [
            coll.config.rotate.eq(wslot.rotate),
            coll.i.valid.eq(self.rows.valid & filling),
            coll.i.payload.data.eq(row.data),
            coll.i.payload.valid.eq((1 << lanes) - 1),
            coll.i.payload.row.eq(row.row),
            self.rows.ready.eq(coll.i.ready & filling),
            tb.write.valid.eq(coll.o.valid),
            tb.write.payload.en.eq(Mux(coll.o.payload.error, 0, coll.o.payload.enable)),
            tb.write.payload.data.eq(coll.o.payload.data),
            coll.o.ready.eq(tb.write.ready),
        ]
        m.d.comb += [tb.write.payload.row[b].eq(tb.fill.base + coll.o.payload.row)
                     for b in range(lanes)]
        bank_error = Signal()
        with m.If(coll.o.valid & coll.o.payload.error):
            m.d.sync += bank_error.eq(1)

        # ---- base rows: committed tiles -> the AGU, one set per accumulation tile ----------
        enabled = Signal(range(self._slots + 1))
        m.d.comb += enabled.eq(sum(s.enable for s in slots))
        gathered = Signal(range(self._slots + 1))
        bases = Array(Signal(16, name=f"gbase{k}") for k in range(self._slots))
        hold = Signal()
        m.d.comb += hold.eq(cfg.hold[self._port])
        # footprint reuse (one enabled slot, a configuration check): ``open_`` = the fate of the
        # last gathered tile is not decided; ``fate`` = decided before the AGU gave the tile
        # back (``fate_free``: free it then, else keep it); ``owed`` = given back, its fate not
        # decided yet (``owed_base``). A token decides the open tile's fate first (a changed
        # job's new tile may need the room), then gives the job its tile.
        tok = self.held.payload
        open_, fate, fate_free, owed = (Signal(name=n) for n in ("hold_open", "hold_fate",
                                                                  "hold_fate_free", "hold_owed"))
        owed_base = Signal(16)
        m.d.comb += [
            tb.committed.ready.eq(Mux(hold, (gathered == 0) & self.held.valid & ~tok.end
                                      & ~tok.held & ~open_, gathered < enabled)),
            agu.bases.valid.eq(gathered == enabled),
        ]
        m.d.comb += [agu.bases.payload[k].eq(bases[k]) for k in range(self._slots)]
        with m.If(tb.committed.valid & tb.committed.ready):
            m.d.sync += [bases[gathered[:max(1, (self._slots - 1).bit_length())]]
                         .eq(tb.committed.payload.base), gathered.eq(gathered + 1)]
        with m.If(agu.bases.valid & agu.bases.ready):
            m.d.sync += gathered.eq(0)

        # ---- read side: lane addresses -> (bank, row) -> router -> banks -> butterfly ----------
        reads = agu.reads.payload
        rslot = Signal(kernelcfg.slot_layout())
        m.d.comb += rslot.eq(Array(s.as_value() for s in padded)[reads.slot])
        rxor = [rslot.xor[j] for j in range(max(bits, 1))]
        rrot = rslot.rotate
        r1_valid = Signal()
        r1_bank = [Signal(max(bits, 1), name=f"r1_bank{n}") for n in range(lanes)]
        r1_row = [Signal(row_bits, name=f"r1_row{n}") for n in range(lanes)]
        r1_take = ~r1_valid | tb.read.ready
        m.d.comb += agu.reads.ready.eq(r1_take)
        with m.If(r1_take):
            m.d.sync += r1_valid.eq(agu.reads.valid)
            for n in range(lanes):
                a = reads.addr[n]
                m.d.sync += [r1_bank[n].eq(bank_of(m, a, rxor, rrot, bits, name=f"bank{n}")),
                             r1_row[n].eq(reads.base + (a >> bits))]
        m.d.comb += [router.bank[n].eq(r1_bank[n]) for n in range(lanes)]
        m.d.comb += [router.row[n].eq(r1_row[n]) for n in range(lanes)]
        m.d.comb += [
            tb.read.valid.eq(r1_valid),
            tb.read.payload.en.eq(router.enable),
            tb.read.payload.row.eq(router.bank_row),
        ]
        conflict = Signal()
        select = Signal(data.ArrayLayout(unsigned(lanes), max(bits, 1)))
        with m.If(tb.read.valid & tb.read.ready):
            m.d.sync += select.eq(router.select)
            with m.If(router.conflict):
                m.d.sync += conflict.eq(1)
        m.d.comb += [
            bfly.i.valid.eq(tb.rdata.valid),
            bfly.i.payload.data.eq(tb.rdata.payload),
            bfly.i.payload.select.eq(select),
            tb.rdata.ready.eq(bfly.i.ready),
        ]
        wiring.connect(m, bfly.o, _data_only(m, self.data))

        # ---- free: after the accumulation tile's last read has reached the banks -----------
        freeing = Signal(range(self._slots + 1))
        with m.If(~hold):
            m.d.comb += [
                tb.free.valid.eq(agu.free.valid & ~r1_valid & (freeing < enabled)),
                tb.free.payload.eq(Array(agu.free.payload[k] for k in range(self._slots))
                                   [freeing[:max(1, (self._slots - 1).bit_length())]]),
                agu.free.ready.eq(~r1_valid & (freeing == enabled)),
            ]
        with m.If(~hold & tb.free.valid & tb.free.ready):
            m.d.sync += freeing.eq(freeing + 1)
        with m.If(agu.free.valid & agu.free.ready):
            m.d.sync += freeing.eq(0)

        # ---- footprint reuse: each token decides the open tile's fate, then gives its job a
        # tile (a new one, or the same one again); a tile given back waits for its fate
        decide = Signal()
        frees = Signal()
        m.d.comb += [decide.eq(hold & self.held.valid & open_ & ~fate),
                     frees.eq(tok.end | ~tok.held),
                     self.hold_wait.eq(hold & owed & ~self.held.valid)]
        with m.If(hold):
            with m.If(decide):
                with m.If(owed):
                    with m.If(frees):
                        m.d.comb += [tb.free.valid.eq(~r1_valid), tb.free.payload.eq(owed_base)]
                        with m.If(tb.free.valid & tb.free.ready):
                            m.d.comb += self.held.ready.eq(tok.end)
                            m.d.sync += [owed.eq(0), open_.eq(0)]
                    with m.Else():
                        m.d.sync += [owed.eq(0), open_.eq(0)]
                with m.Else():
                    m.d.comb += self.held.ready.eq(tok.end)
                    m.d.sync += [fate.eq(1), fate_free.eq(frees), open_.eq(0)]
            with m.Elif(self.held.valid & tok.end & ~open_):
                m.d.comb += self.held.ready.eq(1)       # no tile open: nothing to end
            with m.Elif(self.held.valid & ~open_ & (gathered == 0)):
                with m.If(~tok.held):
                    with m.If(tb.committed.valid):
                        m.d.comb += self.held.ready.eq(1)
                        m.d.sync += open_.eq(1)
                with m.Else():
                    m.d.comb += self.held.ready.eq(1)
                    m.d.sync += [open_.eq(1), gathered.eq(1)]
            # the AGU gives a tile back after its last read
            with m.If(fate):
                with m.If(fate_free):
                    m.d.comb += [tb.free.valid.eq(agu.free.valid & ~r1_valid),
                                 tb.free.payload.eq(agu.free.payload[0]),
                                 agu.free.ready.eq(~r1_valid & tb.free.ready)]
                with m.Else():
                    m.d.comb += agu.free.ready.eq(1)
                with m.If(agu.free.valid & agu.free.ready):
                    m.d.sync += fate.eq(0)
            with m.Else():
                m.d.comb += agu.free.ready.eq(~owed & ~decide)
                with m.If(agu.free.valid & agu.free.ready):
                    m.d.sync += [owed.eq(1), owed_base.eq(agu.free.payload[0])]

        m.d.comb += [
            self.errors.tiles.eq(tb.errors.as_value()),
            self.errors.conflict.eq(conflict),
            self.errors.bank.eq(bank_error),
            self.idle.eq(tb.empty & ~r1_valid & ~tb.rdata.valid),
        ]
        self._probe = {"tiles": tb, "agu": agu, "r1_valid": r1_valid}   # for simulation probes
        return m


def _data_only(m, out):
    """An adapter: the butterfly's ``o`` stream (``data`` field) onto a plain vector stream."""
    shim = stream.Signature(data.StructLayout({
        "data": data.ArrayLayout(signed(16), out.payload.shape().length)})).flip().create()
    m.d.comb += [
        out.valid.eq(shim.valid),
        out.payload.eq(shim.payload.data),
        shim.ready.eq(out.ready),
    ]
    return shim
