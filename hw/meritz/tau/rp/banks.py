"""SRAM banks of a Read Pipeline and the circular tile FIFO that lives in them (§V-A, Fig. 8-9).

Four components, from the bottom up:

- :class:`SramBank`: one bank, one :class:`~amaranth.lib.memory.Memory`, behind an SRAM-macro-like
  port (single- or two-port), emitted as its own Verilog module so that a macro can replace it.
- :class:`BankedSram`: ``lanes`` banks addressed per bank (one row address per bank and cycle), a
  read stream with one-cycle latency, a write stream, and the arbitration of single-port banks
  (**writes win**; a read that needs a bank being written waits one cycle).
- :class:`TileFifo`: the bookkeeping of the SRAM as one circular FIFO of tiles, in rows: allocate
  (in order, stalls until the space is free, a tile larger than the SRAM is refused with an error),
  commit (counts the written words), free (oldest first).
- :class:`TileBuffer`: the two together, as the Read Pipeline sees them. Writes outside the tile
  being filled and reads outside the committed tiles are dropped and flagged, so a live tile is
  never overwritten and a tile is never read before all of its words have arrived.

A *row* is ``lanes`` words, one per bank, at the same row address. The design decisions are in
``docs/banks.md``.
"""

from amaranth import (
    Array,
    Cat,
    ClockSignal,
    Const,
    Instance,
    Module,
    Mux,
    ResetSignal,
    Signal,
    signed,
    unsigned,
)
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from merit.checks import check_int, check_lanes, check_ports

__all__ = ["SramBank", "BankedSram", "TileFifo", "TileBuffer",
           "read_request_layout", "write_request_layout", "grant_layout", "sram_tile_layout",
           "error_layout", "REQUEST_BITS"]

#: Width of an allocation request (rows). Wider than any row address, so that a request for more
#: rows than the SRAM holds arrives intact and is refused with an error instead of wrapping.
REQUEST_BITS = 16


def _check_power_of_two(name, value, *, low, high):
    check_int(name, value)
    if value < 1 or value & (value - 1):
        raise ValueError(f"{name} must be a power of two, not {value}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")
    return value


def _check_width(width):
    check_int("width", width)
    if width <= 0:
        raise ValueError(f"width must be a positive integer, not {width}")
    return width


def _check_depth(depth):
    # a row count of ``depth`` must fit an allocation request
    return _check_power_of_two("depth", depth, low=2, high=2 ** (REQUEST_BITS - 1))


def _check_bank_macro(bank_macro):
    if bank_macro is not None and (not isinstance(bank_macro, str)
                                   or not bank_macro.isidentifier()):
        raise ValueError(f"bank_macro must be None or a Verilog module name, not {bank_macro!r}")
    return bank_macro


def read_request_layout(lanes, depth):
    """Payload of a read request: per-bank enable bits (bank ``i`` = bit ``i``) and rows."""
    return data.StructLayout({
        "en": unsigned(lanes),
        "row": data.ArrayLayout(unsigned((depth - 1).bit_length()), lanes),
    })


def write_request_layout(lanes, depth, width):
    """Payload of a write request: per-bank enable bits, row addresses and words."""
    return data.StructLayout({
        "en": unsigned(lanes),
        "row": data.ArrayLayout(unsigned((depth - 1).bit_length()), lanes),
        "data": data.ArrayLayout(signed(width), lanes),
    })


def grant_layout(depth):
    """Answer to an allocation: first row of the tile, its size in rows, and the error bit."""
    return data.StructLayout({
        "base": unsigned((depth - 1).bit_length()),
        "rows": unsigned(REQUEST_BITS),
        "error": unsigned(1),
    })


def sram_tile_layout(depth):
    """A committed tile: its first row and its size in rows."""
    return data.StructLayout({
        "base": unsigned((depth - 1).bit_length()),
        "rows": unsigned(depth.bit_length()),
    })


#: Sticky error flags of a :class:`TileBuffer`.
error_layout = data.StructLayout({
    "read": unsigned(1),       # a read touched a row outside the committed tiles
    "write": unsigned(1),      # a write touched a row outside the tile being filled
    "alloc": unsigned(1),      # an allocation asked for 0 rows or more rows than the SRAM has
    "free": unsigned(1),       # a free named a tile other than the oldest
})


class SramBank(wiring.Component):
    """One SRAM bank: ``depth`` words of ``width`` bits, read with one cycle of latency.

    The port is that of an SRAM macro, so that the :class:`~amaranth.lib.memory.Memory` inside can
    be replaced by one (see :class:`BankedSram`'s ``bank_macro``). ``rdata`` holds the word of the
    last read until the next read; writes never change it.

    Parameters
    ----------
    depth : int
        Number of words (rows), a power of two.
    width : int
        Bits per word.
    ports : int
        1: single-port (one access per cycle, read or write); 2: one read and one write port.

    Members (``ports=1``)
    ---------------------
    en : In(1)
        Access this cycle.
    we : In(1)
        The access is a write (of ``wdata`` to ``addr``); otherwise a read of ``addr``.
    addr : In(range(depth))
        Word address.
    wdata : In(width)
        Word to write.
    rdata : Out(width)
        Word read by the last read access (valid the cycle after it).

    Members (``ports=2``)
    ---------------------
    rd_en, rd_addr : In(1), In(range(depth))
        Read ``rd_addr`` this cycle; the word is on ``rd_data`` the next cycle, and stays.
    rd_data : Out(width)
        Word of the last read.
    wr_en, wr_addr, wr_data : In(1), In(range(depth)), In(width)
        Write ``wr_data`` to ``wr_addr`` this cycle. A read of the same address in the same cycle
        returns the old word.
    """

    def __init__(self, *, depth, width=16, ports=1):
        self._depth = _check_depth(depth)
        self._width = _check_width(width)
        self._ports = check_ports("ports", ports)
        addr = unsigned((depth - 1).bit_length())
        if ports == 1:
            members = {"en": In(1), "we": In(1), "addr": In(addr), "wdata": In(width),
                       "rdata": Out(width)}
        else:
            members = {"rd_en": In(1), "rd_addr": In(addr), "rd_data": Out(width),
                       "wr_en": In(1), "wr_addr": In(addr), "wr_data": In(width)}
        super().__init__(members)

    @property
    def depth(self):
        return self._depth

    @property
    def width(self):
        return self._width

    @property
    def ports(self):
        return self._ports

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=unsigned(self._width), depth=self._depth, init=[])
        rd = mem.read_port()
        wr = mem.write_port()
        if self._ports == 1:
            m.d.comb += [
                rd.en.eq(self.en & ~self.we), rd.addr.eq(self.addr), self.rdata.eq(rd.data),
                wr.en.eq(self.en & self.we), wr.addr.eq(self.addr), wr.data.eq(self.wdata),
            ]
        else:
            m.d.comb += [
                rd.en.eq(self.rd_en), rd.addr.eq(self.rd_addr), self.rd_data.eq(rd.data),
                wr.en.eq(self.wr_en), wr.addr.eq(self.wr_addr), wr.data.eq(self.wr_data),
            ]
        return m


class BankedSram(wiring.Component):
    """``lanes`` SRAM banks with per-bank row addresses, as the read and write networks see them.

    Bank ``i`` holds word ``i`` of every row. Each cycle one read request (per-bank enable and row,
    as routed by the read butterfly) and one write request (per-bank enable, row and word, from the
    collector) may be served.

    Arbitration (single-port banks): **writes win**. ``write.ready`` is always 1; a read whose
    enabled banks overlap the enabled banks of a valid write waits (``read.ready`` = 0) and goes
    the next cycle. A read and a write on disjoint banks go together. With two-port banks both go
    every cycle. Reads wait only as often as the collector writes, which the DRAM bandwidth bounds
    (one 32-word row per 8 cycles at 8 bytes per cycle), and the collector never waits, so the DRAM
    stream never backs up into the SRAM.

    Parameters
    ----------
    lanes : int
        Number of banks (= words per row), a power of two.
    depth : int
        Rows per bank, a power of two.
    width : int
        Bits per word.
    ports : int
        1 (single-port banks, the default as in the paper) or 2 (two-port banks).
    bank_macro : str or None
        When given, each bank is an instance of this Verilog module instead of an
        :class:`SramBank`: a vendor SRAM macro behind a thin wrapper with the ports of the
        emitted :class:`SramBank` (``clk``, ``rst`` (unused by the model), then ``en``, ``we``,
        ``addr``, ``wdata``, ``rdata``, or the two-port set).

    Members
    -------
    read : In(stream.Signature(read_request_layout(lanes, depth)))
        Read request: ``en`` (bank ``i`` = bit ``i``) and ``row[i]``.
    rdata : Out(stream.Signature(data.ArrayLayout(signed(width), lanes)))
        Words of a read, one per bank, one cycle after the request was accepted at the earliest;
        a bank that was not enabled reads as 0.
    write : In(stream.Signature(write_request_layout(lanes, depth, width)))
        Write request: ``en``, ``row[i]``, ``data[i]``. Always ready.
    read_ok : In(1, init=1)
        Whether the read request of this cycle is answered with its words: a read with
        ``read_ok`` = 0 still reads (and is arbitrated for) its banks, and its words come out 0.
        It only enters ``rdata``'s register, not the bank ports.
    """

    def __init__(self, *, lanes, depth, width=16, ports=1, bank_macro=None):
        self._lanes = check_lanes(lanes)
        self._depth = _check_depth(depth)
        self._width = _check_width(width)
        self._ports = check_ports("ports", ports)
        self._bank_macro = _check_bank_macro(bank_macro)
        super().__init__({
            "read": In(stream.Signature(read_request_layout(lanes, depth))),
            "rdata": Out(stream.Signature(data.ArrayLayout(signed(width), lanes))),
            "write": In(stream.Signature(write_request_layout(lanes, depth, width))),
            "read_ok": In(1, init=1),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def depth(self):
        return self._depth

    def _bank(self, m, index):
        """Add bank ``index``; return its port signals as a dict named like :class:`SramBank`'s."""
        if self._bank_macro is None:
            bank = SramBank(depth=self._depth, width=self._width, ports=self._ports)
            m.submodules[f"bank{index}"] = bank
            return {name: getattr(bank, name) for name in bank.signature.members}
        addr = (self._depth - 1).bit_length()
        if self._ports == 1:
            sigs = {"en": Signal(), "we": Signal(), "addr": Signal(addr),
                    "wdata": Signal(self._width), "rdata": Signal(self._width)}
        else:
            sigs = {"rd_en": Signal(), "rd_addr": Signal(addr), "rd_data": Signal(self._width),
                    "wr_en": Signal(), "wr_addr": Signal(addr), "wr_data": Signal(self._width)}
        ports = {("o_" if name in ("rdata", "rd_data") else "i_") + name: sig
                 for name, sig in sigs.items()}
        m.submodules[f"bank{index}"] = Instance(self._bank_macro, i_clk=ClockSignal("sync"),
                                                i_rst=ResetSignal("sync"), **ports)
        return sigs

    def elaborate(self, platform):
        m = Module()
        rd, wr = self.read.payload, self.write.payload
        out_free = ~self.rdata.valid | self.rdata.ready
        if self._ports == 1:
            conflict = self.write.valid & (rd.en & wr.en).any()
        else:
            conflict = Const(0)
        m.d.comb += [
            self.write.ready.eq(1),
            self.read.ready.eq(out_free & ~conflict),
        ]
        read_go = self.read.valid & self.read.ready
        write_go = self.write.valid

        enabled = Signal(self._lanes)       # banks of the read whose words are on rdata
        with m.If(read_go):
            m.d.sync += [self.rdata.valid.eq(1), enabled.eq(Mux(self.read_ok, rd.en, 0))]
        with m.Elif(self.rdata.ready):
            m.d.sync += self.rdata.valid.eq(0)

        for i in range(self._lanes):
            bank = self._bank(m, i)
            rd_en = read_go & rd.en[i]
            wr_en = write_go & wr.en[i]
            if self._ports == 1:
                m.d.comb += [
                    bank["en"].eq(rd_en | wr_en),
                    bank["we"].eq(wr_en),
                    bank["addr"].eq(Mux(wr_en, wr.row[i], rd.row[i])),
                    bank["wdata"].eq(wr.data[i]),
                    self.rdata.payload[i].eq(Mux(enabled[i], bank["rdata"], 0)),
                ]
            else:
                m.d.comb += [
                    bank["rd_en"].eq(rd_en), bank["rd_addr"].eq(rd.row[i]),
                    bank["wr_en"].eq(wr_en), bank["wr_addr"].eq(wr.row[i]),
                    bank["wr_data"].eq(wr.data[i]),
                    self.rdata.payload[i].eq(Mux(enabled[i], bank["rd_data"], 0)),
                ]
        return m


class TileFifo(wiring.Component):
    """The rows of a :class:`BankedSram` used as one circular FIFO of tiles (Fig. 9).

    A tile is a run of consecutive rows (modulo ``depth``: a tile may wrap around the last row).
    Its life is allocate -> fill -> commit -> (announce) -> free, strictly in allocation order:

    - **allocate**: a request for ``rows`` rows is granted at the row after the previous tile once
      that many rows are free and fewer than ``max_tiles`` tiles are live; until then ``alloc``
      waits. A request for 0 rows or for more rows than the SRAM holds is answered at once with
      ``error`` = 1 and allocates nothing (it could never be granted).
    - **fill / commit**: the oldest allocated, uncommitted tile is the one being filled
      (``fill``). ``filled`` counts the words written into it; when all ``rows * lanes`` words
      have arrived, the tile is committed (the next cycle it is readable).
    - **announce**: committed tiles come out of ``committed`` in order, for the reader.
    - **free**: a transfer on ``free`` names the oldest tile by its ``base`` and releases it; it
      waits until that tile has been announced. A transfer naming another row frees nothing and
      pulses ``misfree`` (tiles are freed oldest first).

    ``readable`` is the committed region, ``[base, base + rows)`` modulo ``depth``: the only rows
    a reader may read. ``fill`` is the only region a writer may write.

    Parameters
    ----------
    lanes : int
        Words per row.
    depth : int
        Rows of the SRAM, a power of two.
    max_tiles : int
        Live tiles at most (allocated and not yet freed), a power of two.

    Members
    -------
    alloc : In(stream.Signature(unsigned(REQUEST_BITS)))
        Allocation request, in rows.
    grant : Out(stream.Signature(grant_layout(depth)))
        One answer per request, in order: ``base`` (first row), ``rows`` (echo), ``error``.
    committed : Out(stream.Signature(sram_tile_layout(depth)))
        Committed tiles (``base``, ``rows``), in allocation order.
    free : In(stream.Signature(unsigned(log2(depth))))
        The ``base`` of the oldest tile, to free it.
    misfree : Out(1)
        A ``free`` transfer this cycle did not name the oldest tile (nothing was freed).
    filled : In(range(lanes + 1))
        Words written into the tile being filled this cycle, counted where ``filled_valid``.
    filled_valid : In(1, init=1)
        ``filled`` counts (0: no word was written, whatever ``filled`` says). The write checks
        decide it late in the cycle, so the commit is formed for both answers and it selects.
    fill : Out(sram_tile_layout(depth))
        The tile being filled (``rows`` = 0 when none).
    readable : Out(sram_tile_layout(depth))
        The committed region.
    fill_end, readable_end : Out(log2(depth))
        The row after each region (``base + rows`` modulo ``depth``), from registers: a check
        compares a row with both ends at once (:func:`_inside`) instead of subtracting first.
    used : Out(range(depth + 1))
        Rows allocated and not yet freed.
    full : Out(1)
        No allocation can be granted now (no free row, or ``max_tiles`` tiles live).
    empty : Out(1)
        No live tile.
    """

    def __init__(self, *, lanes, depth, max_tiles=8):
        self._lanes = check_lanes(lanes)
        self._depth = _check_depth(depth)
        self._max_tiles = _check_power_of_two("max_tiles", max_tiles, low=1, high=256)
        super().__init__({
            "alloc": In(stream.Signature(unsigned(REQUEST_BITS))),
            "grant": Out(stream.Signature(grant_layout(depth))),
            "committed": Out(stream.Signature(sram_tile_layout(depth))),
            "free": In(stream.Signature(unsigned((depth - 1).bit_length()))),
            "misfree": Out(1),
            "filled": In(range(lanes + 1)),
            "filled_valid": In(1, init=1),
            "fill": Out(sram_tile_layout(depth)),
            "readable": Out(sram_tile_layout(depth)),
            "fill_end": Out(unsigned((depth - 1).bit_length())),
            "readable_end": Out(unsigned((depth - 1).bit_length())),
            "used": Out(range(depth + 1)),
            "full": Out(1),
            "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth, tiles = self._depth, self._max_tiles
        row_bits = (depth - 1).bit_length()
        slot_bits = (tiles - 1).bit_length()

        # sizes of the live tiles, indexed by tile number modulo max_tiles
        sizes = Array(Signal(range(depth + 1), name=f"size{i}") for i in range(tiles))
        # tile numbers (one wrap bit more than a slot) of the next tile to allocate, to fill, to
        # announce and to free
        alloc_no, fill_no, announce_no, free_no = (
            Signal(slot_bits + 1, name=name) for name in ("alloc_no", "fill_no", "announce_no",
                                                          "free_no"))
        # first rows of the same four tiles
        head_row, fill_row, announce_row, tail_row = (
            Signal(row_bits, name=name) for name in ("head_row", "fill_row", "announce_row",
                                                     "tail_row"))
        committed_rows = Signal(range(depth + 1))

        def slot(number):
            return number[:slot_bits] if slot_bits else 0

        live = Signal(slot_bits + 1)
        m.d.comb += live.eq(alloc_no - free_no)

        # free (the handshake; its bookkeeping below)
        # the size of the oldest tile, a register (``sizes[free_no]`` while a tile is live),
        # loaded below from the next slot on a free and from the request on a grant into it
        free_size = Signal(range(depth + 1))
        m.d.comb += self.free.ready.eq(free_no != announce_no)
        free_go = Signal()
        misfree = self.free.valid & self.free.ready & (self.free.payload != tail_row)
        m.d.comb += [
            free_go.eq(self.free.valid & self.free.ready & (self.free.payload == tail_row)),
            self.misfree.eq(misfree),
        ]

        # allocate. The free rows (``depth - used``) are a register kept with ``used``, and the
        # request's high bits are tested apart: one short comparison from the request to ``fits``
        request = self.alloc.payload
        room = Signal(range(depth + 1), init=depth)
        room_bits = len(room)
        refused = (request == 0) | (request > depth)
        tiles_live = alloc_no == (free_no ^ (1 << slot_bits))   # live == max_tiles
        fits = ((request[room_bits:] == 0) & (request[:room_bits] <= room)) & ~tiles_live
        m.d.comb += self.alloc.ready.eq((~self.grant.valid | self.grant.ready) & (refused | fits))
        alloc_go = self.alloc.valid & self.alloc.ready
        granted = alloc_go & ~refused
        with m.If(alloc_go):
            m.d.sync += [
                self.grant.valid.eq(1),
                self.grant.payload.base.eq(Mux(refused, 0, head_row)),
                self.grant.payload.rows.eq(request),
                self.grant.payload.error.eq(refused),
            ]
        with m.Elif(self.grant.ready):
            m.d.sync += self.grant.valid.eq(0)
        next_free = (free_no + 1)[:slot_bits + 1]
        m.d.sync += free_size.eq(Mux(free_go,
                                     Mux(granted & (alloc_no == next_free), request,
                                         sizes[slot(next_free)]),
                                     Mux(granted & (alloc_no == free_no), request, free_size)))
        with m.If(granted):
            m.d.sync += [
                sizes[slot(alloc_no)].eq(request),
                alloc_no.eq(alloc_no + 1),
                head_row.eq(head_row + request),
            ]

        # fill and commit. The size of the tile being filled and ``fill.rows`` are registers,
        # loaded with their next value (the slot after a commit, or a grant into the slot being
        # filled), so that the write checks and the commit start from flip-flops. Everything
        # that follows the cycle's writes (the commit, and what follows a commit and a grant)
        # is formed from registers and the request for both answers of the write checks
        # (``filled_valid``: the words counted, or none), and the answer selects, last, in
        # front of each register: the checks reach the registers through one multiplexer
        fill_size = Signal(range(depth + 1))
        fill_rows = Signal(range(depth + 1))
        fill_end = Signal(row_bits)     # fill_row + fill_size (modulo depth), a register
        filling = fill_no != alloc_no
        # words of the tile being filled still missing, a register (its size times the lanes
        # on a commit or a grant into it, less the words counted): the commit compares the
        # cycle's count with a flip-flop, no subtraction in front
        need = Signal(range(depth * self._lanes + 1), name="need")
        m.d.comb += [
            self.fill.base.eq(fill_row),
            self.fill.rows.eq(fill_rows),
            self.fill_end.eq(fill_end),
        ]
        next_no = (fill_no + 1)[:slot_bits + 1]
        alloc_next = Mux(granted, alloc_no + 1, alloc_no)[:slot_bits + 1]
        size_after = sizes[slot(fill_no + 1)]

        committed_more = Signal.like(committed_rows)
        committed_less = Signal.like(committed_rows)
        committed_more_less = Signal.like(committed_rows)
        m.d.comb += [committed_more.eq(committed_rows + fill_size),
                     committed_less.eq(committed_rows - free_size),
                     committed_more_less.eq(committed_rows + fill_size - free_size)]

        def following(counted):
            """The next values of the fill registers and of ``committed_rows`` if the cycle's
            writes count (``counted``) or not."""
            commit = Signal(name=f"commit_{int(counted)}")
            m.d.comb += commit.eq(filling & ((self.filled == need) if counted else (need == 0)))

            def after(if_commit, if_not):
                return Mux(commit, if_commit, if_not)

            into_fill = (granted & after(slot(alloc_no) == slot(next_no),
                                         slot(alloc_no) == slot(fill_no))
                         if slot_bits else granted)
            size_next = Mux(into_fill, request, after(size_after, fill_size))
            added = self.filled if counted else 0
            return [
                (fill_size, size_next),
                (fill_rows, Mux(after(next_no != alloc_next, fill_no != alloc_next),
                                size_next, 0)),
                # fill_row moves to fill_end on a commit; a grant into the slot being filled
                # sets the end from the request
                (fill_end, Mux(commit,
                               Mux(into_fill, fill_end + request, fill_end + size_after),
                               Mux(into_fill, fill_row + request, fill_end))),
                (fill_no, after(fill_no + 1, fill_no)),
                (fill_row, after(fill_row + fill_size, fill_row)),
                (need, after(Mux(into_fill, request, size_after) * self._lanes,
                             Mux(into_fill, request * self._lanes,
                                 Mux(filling, need - added, need)))),
                # the four sums formed from registers, the commit and the free selecting
                (committed_rows, Mux(free_go, after(committed_more_less, committed_less),
                                     after(committed_more, committed_rows))),
            ]

        for (reg, if_counted), (_, if_not) in zip(following(True), following(False),
                                                  strict=True):
            value = Signal.like(reg, name=f"{reg.name}_next")
            # no ``keep`` on the two answers: Yosys' ABC9 then merges the last multiplexer
            # into the logic in front of it (rp0 faster alone, rp1 slower; docs/decisions.md)
            answers = [Signal.like(reg, name=f"{reg.name}_if_{k}") for k in ("counted", "not")]
            m.d.comb += [answers[0].eq(if_counted), answers[1].eq(if_not)]
            m.d.comb += value.eq(Mux(self.filled_valid, *answers))
            m.d.sync += reg.eq(value)

        # announce
        announce_size = sizes[slot(announce_no)]
        m.d.comb += [
            self.committed.valid.eq(announce_no != fill_no),
            self.committed.payload.base.eq(announce_row),
            self.committed.payload.rows.eq(announce_size),
        ]
        with m.If(self.committed.valid & self.committed.ready):
            m.d.sync += [announce_no.eq(announce_no + 1),
                         announce_row.eq(announce_row + announce_size)]

        # free
        with m.If(free_go):
            m.d.sync += [free_no.eq(free_no + 1), tail_row.eq(tail_row + free_size)]

        used = Signal(range(depth + 1))
        # the four answers of a grant and a free formed beside them, which select last
        for reg, freed, taken in ((used, used - free_size, used + request),
                                  (room, room + free_size, room - request)):
            both = freed + (request if reg is used else -request)
            m.d.sync += reg.eq(Mux(free_go, Mux(granted, both, freed), Mux(granted, taken, reg)))
        m.d.comb += [
            self.used.eq(used),
            self.readable.base.eq(tail_row),
            self.readable.rows.eq(committed_rows),
            # the committed tiles run from the oldest tile to the one being filled
            self.readable_end.eq(fill_row),
            self.full.eq((used == depth) | (live == tiles)),
            self.empty.eq(live == 0),
        ]
        return m


def _inside(row, region, end):
    """Whether ``row`` lies in ``[region.base, region.base + region.rows)`` modulo the depth,
    where ``end`` is ``region.base + region.rows`` modulo the depth.

    Two comparisons of ``row`` with registers, side by side, then one selection by facts of the
    registers alone (which run beside them): the same answer as ``(row - base) mod depth <
    rows`` without a subtraction before the comparison. A region of ``rows`` > 0 with ``base ==
    end`` is the whole SRAM."""
    base = region.base
    above, below = row >= base, row < end
    return (region.rows != 0) & Mux(base == end, 1, Mux(base < end, above & below,
                                                         above | below))


class TileBuffer(wiring.Component):
    """The SRAM of a Read Pipeline: a :class:`BankedSram` holding a :class:`TileFifo` of tiles.

    Reads and writes are checked against the FIFO, per enabled bank:

    - a write must fall entirely into the tile being filled; its words count towards that tile's
      commit. Any other write (into a committed or free tile, or when no tile is allocated) is
      dropped and sets ``errors.write``: a live tile is never overwritten.
    - a read must fall entirely into committed tiles. Any other read is still answered, with all
      words 0, and sets ``errors.read``: an uncommitted tile is never read.

    The check and the commit count are made in the cycle a write arrives; the banks take the
    write the cycle after, from a register (so that the bank ports see flip-flops, not the
    check). On single-port banks a read of one of its banks in that cycle waits one cycle (writes
    win, see :class:`BankedSram`); on two-port banks such a read of the row being written gets
    the new word. A dropped write never reaches the banks and holds up no read; a refused read
    reads its banks and comes out as zeros. The collector writes every word of a tile exactly
    once (pad words included), since commit counts words.

    Parameters
    ----------
    lanes, depth, width, ports, bank_macro
        As for :class:`BankedSram`.
    max_tiles
        As for :class:`TileFifo`.

    Members
    -------
    read, rdata, write
        As for :class:`BankedSram`.
    alloc, grant, committed, free, used, full, empty, fill
        As for :class:`TileFifo`.
    errors : Out(error_layout)
        Sticky error flags: ``read``, ``write``, ``alloc`` (a refused allocation), ``free`` (a
        free that did not name the oldest tile).
    clear_errors : In(1)
        Clears ``errors`` (a flag raised in the same cycle stays raised).
    """

    def __init__(self, *, lanes, depth, width=16, ports=1, max_tiles=8, bank_macro=None):
        self._lanes = check_lanes(lanes)
        self._depth = _check_depth(depth)
        self._width = _check_width(width)
        self._ports = check_ports("ports", ports)
        self._max_tiles = _check_power_of_two("max_tiles", max_tiles, low=1, high=256)
        self._bank_macro = _check_bank_macro(bank_macro)
        super().__init__({
            "read": In(stream.Signature(read_request_layout(lanes, depth))),
            "rdata": Out(stream.Signature(data.ArrayLayout(signed(width), lanes))),
            "write": In(stream.Signature(write_request_layout(lanes, depth, width))),
            "alloc": In(stream.Signature(unsigned(REQUEST_BITS))),
            "grant": Out(stream.Signature(grant_layout(depth))),
            "committed": Out(stream.Signature(sram_tile_layout(depth))),
            "free": In(stream.Signature(unsigned((depth - 1).bit_length()))),
            "used": Out(range(depth + 1)),
            "full": Out(1),
            "empty": Out(1),
            "fill": Out(sram_tile_layout(depth)),
            "errors": Out(error_layout),
            "clear_errors": In(1),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def depth(self):
        return self._depth

    def elaborate(self, platform):
        m = Module()
        m.submodules.sram = sram = BankedSram(lanes=self._lanes, depth=self._depth,
                                              width=self._width, ports=self._ports,
                                              bank_macro=self._bank_macro)
        m.submodules.fifo = fifo = TileFifo(lanes=self._lanes, depth=self._depth,
                                            max_tiles=self._max_tiles)
        lanes = range(self._lanes)

        wiring.connect(m, wiring.flipped(self.alloc), fifo.alloc)
        wiring.connect(m, fifo.grant, wiring.flipped(self.grant))
        wiring.connect(m, fifo.committed, wiring.flipped(self.committed))
        wiring.connect(m, wiring.flipped(self.free), fifo.free)
        m.d.comb += [self.used.eq(fifo.used), self.full.eq(fifo.full),
                     self.empty.eq(fifo.empty), self.fill.eq(fifo.fill)]

        rd, wr = self.read.payload, self.write.payload
        read_ok = Signal()
        write_ok = Signal()
        m.d.comb += [
            read_ok.eq(Cat(~rd.en[i] | _inside(rd.row[i], fifo.readable, fifo.readable_end)
                           for i in lanes).all()),
            write_ok.eq(Cat(~wr.en[i] | _inside(wr.row[i], fifo.fill, fifo.fill_end)
                            for i in lanes).all()),
            # a read reads its banks whatever its check says; a refused one's words come out 0
            sram.read.valid.eq(self.read.valid),
            sram.read.payload.eq(rd),
            sram.read_ok.eq(read_ok),
            self.read.ready.eq(sram.read.ready),
            self.write.ready.eq(1),
        ]
        write_go = self.write.valid & self.write.ready
        m.d.comb += [fifo.filled.eq(sum(wr.en[i] for i in lanes)),
                     fifo.filled_valid.eq(write_go & write_ok)]

        # the banks take a write the cycle after it arrives, from a register: the check and the
        # FIFO's count are made in the cycle it arrives, the bank ports see flip-flops only
        held = Signal(write_request_layout(self._lanes, self._depth, self._width))
        held_valid = Signal()
        m.d.sync += [held_valid.eq(write_go & write_ok & wr.en.any()), held.eq(wr)]
        m.d.comb += [sram.write.valid.eq(held_valid), sram.write.payload.eq(held)]
        if self._ports == 2:
            # a read in the cycle a held write goes reads the bank's old word: the held word
            # takes its place (per bank, where the rows are the same)
            hit = Signal(self._lanes)
            word = Signal.like(held.data)
            with m.If(sram.read.valid & sram.read.ready):
                m.d.sync += [hit.eq(Cat(held_valid & held.en[i] & rd.en[i] & read_ok
                                        & (held.row[i] == rd.row[i]) for i in lanes)),
                             word.eq(held.data)]
            m.d.comb += [self.rdata.payload[i].eq(Mux(hit[i], word[i], sram.rdata.payload[i]))
                         for i in lanes]
        else:
            m.d.comb += self.rdata.payload.eq(sram.rdata.payload)
        m.d.comb += [self.rdata.valid.eq(sram.rdata.valid), sram.rdata.ready.eq(self.rdata.ready)]

        read_error = self.read.valid & self.read.ready & ~read_ok
        write_error = write_go & ~write_ok
        alloc_error = fifo.grant.valid & fifo.grant.ready & fifo.grant.payload.error
        m.d.sync += [
            self.errors.read.eq(self.errors.read & ~self.clear_errors | read_error),
            self.errors.write.eq(self.errors.write & ~self.clear_errors | write_error),
            self.errors.alloc.eq(self.errors.alloc & ~self.clear_errors | alloc_error),
            self.errors.free.eq(self.errors.free & ~self.clear_errors | fifo.misfree),
        ]
        return m
