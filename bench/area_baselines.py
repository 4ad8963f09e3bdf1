"""Reference components built only for the area comparison of ``make synth`` (§V-B, §V-C).

They are not part of MERIT-z. The paper measures its butterfly networks against two yardsticks,
and these are ours:

- :class:`Crossbar`: a full ``lanes`` x ``lanes`` crossbar of ``width``-bit words (every output
  picks any input, Θ(N²) multiplexers), with the stream handshake of the combinational butterfly,
  the alternative that §V-C says a butterfly network replaces at "30% of the area".
- :class:`MacArray`: ``lanes`` multiply-accumulate units (``width`` x ``width`` signed multiply,
  ``acc_width``-bit accumulator register), the yardstick of Fig. 12 ("the two butterfly networks
  cost 40% of the 32 MAC units area").
"""

from amaranth import Array, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_lanes

__all__ = ["Crossbar", "MacArray", "crossbar_request_layout"]


def _check_width(name, value, *, low=1, high=64):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")
    return value


def crossbar_request_layout(lanes, width):
    """Payload of a crossbar transfer: ``lanes`` words and, per output, the input it takes."""
    return data.StructLayout({
        "data": data.ArrayLayout(signed(width), lanes),
        "select": data.ArrayLayout(unsigned((lanes - 1).bit_length()), lanes),
    })


class Crossbar(wiring.Component):
    """A full ``lanes`` x ``lanes`` crossbar: output ``p`` takes the word of input ``select[p]``.

    Any permutation, multicast or broadcast passes in one transfer. Like the combinational
    :class:`meritz.tau.rp.butterfly.Butterfly` it is a stream pass-through (``o.valid = i.valid``,
    ``i.ready = o.ready``) and carries as many select bits (``lanes * log2 lanes``).

    Parameters
    ----------
    lanes : int
        Inputs and outputs, a power of two.
    width : int
        Bits per word.

    Members
    -------
    i : In(stream.Signature(crossbar_request_layout(lanes, width)))
        Words (``data``) and the input chosen by each output (``select``).
    o : Out(stream.Signature(data.StructLayout({"data": data.ArrayLayout(signed(width), lanes)})))
        The routed words.
    """

    def __init__(self, *, lanes, width=16):
        self._lanes = check_lanes(lanes)
        self._width = _check_width("width", width)
        super().__init__({
            "i": In(stream.Signature(crossbar_request_layout(lanes, width))),
            "o": Out(stream.Signature(data.StructLayout({
                "data": data.ArrayLayout(signed(width), lanes)}))),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def width(self):
        return self._width

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready)]
        words = Array(self.i.payload.data[p] for p in range(self._lanes))
        for p in range(self._lanes):
            m.d.comb += self.o.payload.data[p].eq(words[self.i.payload.select[p]])
        return m


class MacArray(wiring.Component):
    """``lanes`` multiply-accumulate units: ``acc[i] <= acc[i] + a[i] * b[i]`` while ``en``.

    Each unit is a ``width`` x ``width`` signed multiplier, an ``acc_width``-bit adder and an
    ``acc_width``-bit accumulator register (wrapping). ``clear`` restarts the sums (``acc[i] <=
    a[i] * b[i]`` when ``en``, 0 otherwise).

    Parameters
    ----------
    lanes : int
        Number of units, a power of two.
    width : int
        Bits of each operand.
    acc_width : int
        Bits of each accumulator, at least ``2 * width``.

    Members
    -------
    a, b : In(data.ArrayLayout(signed(width), lanes))
        Operands, one pair per unit.
    en : In(1)
        Accumulate this cycle.
    clear : In(1)
        Start new sums this cycle.
    acc : Out(data.ArrayLayout(signed(acc_width), lanes))
        The accumulators.
    """

    def __init__(self, *, lanes, width=16, acc_width=32):
        self._lanes = check_lanes(lanes)
        self._width = _check_width("width", width, high=32)
        self._acc_width = _check_width("acc_width", acc_width, low=2 * self._width, high=128)
        super().__init__({
            "a": In(data.ArrayLayout(signed(width), lanes)),
            "b": In(data.ArrayLayout(signed(width), lanes)),
            "en": In(1),
            "clear": In(1),
            "acc": Out(data.ArrayLayout(signed(acc_width), lanes)),
        })

    @property
    def lanes(self):
        return self._lanes

    def elaborate(self, platform):
        m = Module()
        for i in range(self._lanes):
            acc = Signal(signed(self._acc_width), name=f"acc{i}")
            base = Mux(self.clear, 0, acc)
            with m.If(self.en):
                m.d.sync += acc.eq(base + self.a[i] * self.b[i])
            with m.Elif(self.clear):
                m.d.sync += acc.eq(0)
            m.d.comb += self.acc[i].eq(acc)
        return m
