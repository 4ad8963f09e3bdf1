"""The read butterfly of a Read Pipeline: N bank outputs -> N lanes (§V-C, Fig. 8).

``log2 N`` stages of 2:1 multiplexers (``N log2 N`` in all): output ``p`` of stage ``s`` (``s = 0``
first) takes input ``p`` or ``p ^ 2**s``. Every output chooses on its own, so one bank word can
reach many lanes (multicast). The select bits come from the mapper (``routing="select"``) or are
computed from each lane's requested bank (``routing="self"``): requests travel backwards from the
lanes and merge where two paths meet; a merge of different requests raises ``conflict`` (the
pattern is not routable in one pass), so wrong data is never delivered silently. The model of both
is :mod:`merit.mapping.network`.
"""

from amaranth import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_lanes

__all__ = ["Butterfly", "ButterflyRouter", "butterfly_stage", "self_route", "ROUTINGS"]

#: How a :class:`Butterfly` gets its select bits.
ROUTINGS = ("select", "self")


def _check_width(width):
    if not isinstance(width, int) or isinstance(width, bool):
        raise TypeError(f"width must be an integer, not {width!r}")
    if width <= 0:
        raise ValueError(f"width must be a positive integer, not {width}")
    return width


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {value!r}")
    return value


def _check_routing(routing):
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {', '.join(map(repr, ROUTINGS))}, "
                         f"not {routing!r}")
    return routing


def butterfly_stage(m, stage, values, select, name="bf"):
    """Stage ``stage`` of the network: a list of ``len(values)`` multiplexer outputs (signals, so
    that the next stage does not duplicate the expressions).

    ``select`` is a ``len(values)``-bit value; bit ``p`` makes output ``p`` take ``p ^ 2**stage``.
    """
    bit = 1 << stage
    outputs = []
    for p in range(len(values)):
        out = Signal(len(values[p]), name=f"{name}{stage}_{p}")
        m.d.comb += out.eq(Mux(select[p], values[p ^ bit], values[p]))
        outputs.append(out)
    return outputs


def self_route(m, lanes, sources, tags=None, valid=None):
    """Backward request propagation (the RTL form of :func:`merit.mapping.network.route`).

    Parameters
    ----------
    m : Module
    lanes : int
    sources : list of Value
        Per output, the input it needs (``log2 lanes`` bits).
    tags : list of Value, optional
        Per output, a tag that must agree where two paths meet (e.g. the SRAM row).
    valid : list of Value, optional
        Per output, whether it needs an input at all (default: all do).

    Returns
    -------
    (selects, used, in_tags, conflict)
        ``selects[s]`` is the ``lanes``-bit select of stage ``s``; ``used`` the ``lanes``-bit mask
        of inputs that are needed; ``in_tags`` the tag requested from each input; ``conflict`` 1
        when two different requests met.
    """
    stages = lanes.bit_length() - 1
    valid = [1] * lanes if valid is None else list(valid)
    src = list(sources)
    tag = list(tags) if tags is not None else None
    selects = [None] * stages
    clashes = []
    for s in reversed(range(stages)):
        bit = 1 << s
        sel = Signal(lanes, name=f"sel{s}")
        stay, cross = [], []
        for p in range(lanes):
            want = src[p][s]
            here = (p >> s) & 1
            stay.append(valid[p] & (want == here))
            cross.append(valid[p] & (want != here))
        m.d.comb += sel.eq(Cat(*cross))
        selects[s] = sel
        new_valid, new_src, new_tag = [], [], []
        for q in range(lanes):
            partner = q ^ bit
            from_self, from_partner = stay[q], cross[partner]
            v = Signal(name=f"req{s}_{q}_valid")
            d = Signal(stages, name=f"req{s}_{q}_src")
            m.d.comb += [v.eq(from_self | from_partner),
                         d.eq(Mux(from_self, src[q], src[partner]))]
            differ = src[q] != src[partner]
            if tag is not None:
                t = Signal(len(tag[q]), name=f"req{s}_{q}_tag")
                m.d.comb += t.eq(Mux(from_self, tag[q], tag[partner]))
                differ = differ | (tag[q] != tag[partner])
                new_tag.append(t)
            clashes.append(from_self & from_partner & differ)
            new_valid.append(v)
            new_src.append(d)
        valid, src = new_valid, new_src
        tag = new_tag if tag is not None else None
    used = Signal(lanes)
    conflict = Signal()
    m.d.comb += [used.eq(Cat(*valid)), conflict.eq(Cat(*clashes).any())]
    return selects, used, tag, conflict


class Butterfly(wiring.Component):
    """Butterfly network from ``lanes`` bank outputs to ``lanes`` lanes.

    Parameters
    ----------
    lanes : int
        ``N``, a power of two; ``log2 N`` stages of ``N`` 2:1 multiplexers.
    width : int
        Bits per word.
    signed : bool
        Words are ``signed(width)`` (default) or ``unsigned(width)``.
    routing : str
        ``"select"``: the payload carries the select bits of every stage (from the mapper,
        :func:`merit.mapping.network.route_read`). ``"self"``: the payload carries the bank each
        lane needs and the network routes itself, flagging patterns it cannot deliver.
    pipelined : bool
        Register the payload after every stage (latency ``log2 N``) instead of a combinational
        path (latency 0).
    row_bits : int
        ``routing="self"`` only: when non-zero the payload also carries the row each lane reads,
        and two lanes needing different rows of one bank raise ``conflict`` too. With 0 that check
        belongs upstream (:class:`ButterflyRouter`).

    Members
    -------
    i : In(stream.Signature(...))
        ``data``: the ``N`` bank outputs (``ArrayLayout``); ``select`` (``routing="select"``):
        ``ArrayLayout(unsigned(N), log2 N)``, bit ``p`` of stage ``s`` makes output ``p`` take
        input ``p ^ 2**s``; ``bank`` (``routing="self"``): ``ArrayLayout(unsigned(log2 N), N)``,
        the bank each lane reads; ``row`` (``row_bits > 0``): the row each lane reads.
    o : Out(stream.Signature(...))
        ``data``: the ``N`` lane words; ``conflict`` (``routing="self"`` only): the requested
        pattern is not routable, ``data`` is not valid lane data.
    """

    def __init__(self, *, lanes, width=16, signed=True, routing="select", pipelined=False,
                 row_bits=0):
        self._lanes = check_lanes(lanes)
        self._width = _check_width(width)
        self._signed = _check_bool("signed", signed)
        self._routing = _check_routing(routing)
        self._pipelined = _check_bool("pipelined", pipelined)
        if not isinstance(row_bits, int) or isinstance(row_bits, bool):
            raise TypeError(f"row_bits must be an integer, not {row_bits!r}")
        if row_bits < 0:
            raise ValueError(f"row_bits must be >= 0, not {row_bits}")
        if row_bits and routing != "self":
            raise ValueError(f"row_bits = {row_bits} needs routing='self', not {routing!r}")
        self._row_bits = row_bits
        self._stages = lanes.bit_length() - 1
        word = self.word_shape
        in_fields = {"data": data.ArrayLayout(word, lanes)}
        out_fields = {"data": data.ArrayLayout(word, lanes)}
        if routing == "select":
            in_fields["select"] = data.ArrayLayout(unsigned(lanes), self._stages)
        else:
            in_fields["bank"] = data.ArrayLayout(unsigned(self._stages), lanes)
            if row_bits:
                in_fields["row"] = data.ArrayLayout(unsigned(row_bits), lanes)
            out_fields["conflict"] = unsigned(1)
        super().__init__({
            "i": In(stream.Signature(data.StructLayout(in_fields))),
            "o": Out(stream.Signature(data.StructLayout(out_fields))),
        })

    lanes = property(lambda self: self._lanes)
    width = property(lambda self: self._width)
    routing = property(lambda self: self._routing)
    pipelined = property(lambda self: self._pipelined)
    row_bits = property(lambda self: self._row_bits)

    @property
    def word_shape(self):
        return signed(self._width) if self._signed else unsigned(self._width)

    @property
    def latency(self):
        """Cycles from an input transfer to its output, without backpressure."""
        return self._stages if self._pipelined else 0

    def elaborate(self, platform):
        m = Module()
        n, stages = self._lanes, self._stages
        values = [self.i.payload.data[p] for p in range(n)]
        if self._routing == "select":
            selects = [self.i.payload.select[s] for s in range(stages)]
            conflict = None
        else:
            bank = [self.i.payload.bank[p] for p in range(n)]
            rows = [self.i.payload.row[p] for p in range(n)] if self._row_bits else None
            selects, _used, _tags, conflict = self_route(m, n, bank, rows)

        if not self._pipelined:
            for s in range(stages):
                values = butterfly_stage(m, s, values, selects[s])
            m.d.comb += [self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready)]
            for p in range(n):
                m.d.comb += self.o.payload.data[p].eq(values[p])
            if conflict is not None:
                m.d.comb += self.o.payload.conflict.eq(conflict)
            return m

        # one register stage per network stage; each carries the select bits still to be used
        valid, ready = self.i.valid, Signal(name="ready0")
        m.d.comb += self.i.ready.eq(ready)
        pending = list(selects)
        flag = conflict
        for s in range(stages):
            out_values = butterfly_stage(m, s, values, pending[0])
            reg_values = [Signal(self.word_shape, name=f"st{s}_d{p}") for p in range(n)]
            reg_selects = [Signal(n, name=f"st{s}_sel{t}") for t in range(s + 1, stages)]
            reg_valid = Signal(name=f"st{s}_valid")
            reg_flag = Signal(name=f"st{s}_conflict") if flag is not None else None
            next_ready = Signal(name=f"ready{s + 1}")
            m.d.comb += ready.eq(~reg_valid | next_ready)
            with m.If(ready):
                m.d.sync += reg_valid.eq(valid)
                m.d.sync += [r.eq(v) for r, v in zip(reg_values, out_values, strict=True)]
                m.d.sync += [r.eq(v) for r, v in zip(reg_selects, pending[1:], strict=True)]
                if flag is not None:
                    m.d.sync += reg_flag.eq(flag)
            values, pending, valid, ready, flag = (reg_values, reg_selects, reg_valid,
                                                   next_ready, reg_flag)
        m.d.comb += [self.o.valid.eq(valid), ready.eq(self.o.ready)]
        for p in range(n):
            m.d.comb += self.o.payload.data[p].eq(values[p])
        if flag is not None:
            m.d.comb += self.o.payload.conflict.eq(flag)
        return m


class ButterflyRouter(wiring.Component):
    """The request side of a self-routed read: per-lane (bank, row) -> per-bank read enables and
    rows, the select bits of every stage, and a conflict flag (combinational).

    Parameters
    ----------
    lanes : int
        ``N``, a power of two.
    row_bits : int
        Width of a row address.

    Members
    -------
    bank : In(ArrayLayout(unsigned(log2 N), N))
        Bank each lane reads.
    row : In(ArrayLayout(unsigned(row_bits), N))
        Row each lane reads.
    select : Out(ArrayLayout(unsigned(N), log2 N))
        Select bits for :class:`Butterfly` (``routing="select"``), to be delayed with the reads.
    enable : Out(unsigned(N))
        Banks that must be read.
    bank_row : Out(ArrayLayout(unsigned(row_bits), N))
        Row to read in each enabled bank.
    conflict : Out(1)
        Two lanes need different rows of one bank, or the banks are not routable in one pass.
    """

    def __init__(self, *, lanes, row_bits):
        self._lanes = check_lanes(lanes)
        if not isinstance(row_bits, int) or isinstance(row_bits, bool):
            raise TypeError(f"row_bits must be an integer, not {row_bits!r}")
        if row_bits <= 0:
            raise ValueError(f"row_bits must be a positive integer, not {row_bits}")
        self._row_bits = row_bits
        stages = lanes.bit_length() - 1
        super().__init__({
            "bank": In(data.ArrayLayout(unsigned(stages), lanes)),
            "row": In(data.ArrayLayout(unsigned(row_bits), lanes)),
            "select": Out(data.ArrayLayout(unsigned(lanes), stages)),
            "enable": Out(unsigned(lanes)),
            "bank_row": Out(data.ArrayLayout(unsigned(row_bits), lanes)),
            "conflict": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._lanes
        selects, used, tags, conflict = self_route(
            m, n, [self.bank[p] for p in range(n)], [self.row[p] for p in range(n)])
        m.d.comb += [self.enable.eq(used), self.conflict.eq(conflict)]
        for s, sel in enumerate(selects):
            m.d.comb += self.select[s].eq(sel)
        for b in range(n):
            m.d.comb += self.bank_row[b].eq(Mux(used[b], tags[b], 0))
        return m
