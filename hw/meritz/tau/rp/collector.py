"""The collector of a Read Pipeline: one SRAM line from DRAM -> its N banks (§V-C, Fig. 8).

The words of line ``row`` arrive in address order (word ``i`` has tile address ``row * N + i``)
and must land in bank ``bank(row * N + i)`` of the bank function of
:class:`merit.mapping.BankFunction`: ``x = X a`` (XOR hash), then ``bank = R^rotate x``. The
collector realises exactly that function, derived from it rather than from per-stage swap rules:

1. for every hashed position ``x`` the line offset it needs is the inverse hash of ``(x, row)``;
2. a ``log2 N``-stage butterfly moves each word to ``x``, with the selects that self-routing by
   those offsets would find, in closed form (``X`` is upper triangular, so the pattern is always
   routable and each select is two gates from the configuration and the row);
3. ``ceil(log2 log2 N)`` omega stages rotate the position by 1, 2, 4, ... bank bits (``R``).

A configuration the bank function does not allow (an XOR source at or below its bank bit, a
rotation ``>= log2 N``) raises ``error`` on every line instead of writing wrong banks.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from merit.checks import check_lanes
from meritz.tau.rp.butterfly import _check_bool, _check_width, butterfly_stage

__all__ = ["Collector", "bank_config_layout"]


def bank_config_layout(lanes, row_bits):
    """Layout of a bank-function configuration (the register encoding of
    :meth:`merit.mapping.BankFunction.register_fields`): ``xor`` (per bank bit the address bit
    XORed into it, 0 = none) and ``rotate``."""
    m = lanes.bit_length() - 1
    return data.StructLayout({
        "xor": data.ArrayLayout(unsigned(ceil_log2(m + row_bits)), m),
        "rotate": unsigned(max(1, ceil_log2(m))),
    })


class Collector(wiring.Component):
    """Places the words of one SRAM line into the banks through the bank function.

    Parameters
    ----------
    lanes : int
        ``N`` banks, a power of two.
    row_bits : int
        Width of the row (line) address; the hash may use any of its bits.
    width : int
        Bits per word.
    signed : bool
        Words are ``signed(width)`` (default) or ``unsigned(width)``.

    Members
    -------
    config : In(bank_config_layout(lanes, row_bits))
        The bank function; hold it stable while lines flow.
    i : In(stream.Signature(...))
        ``data``: the ``N`` words of the line in address order; ``valid``: ``N`` bits, words to
        write (padding and words outside the footprint are 0); ``row``: the line.
    o : Out(stream.Signature(...))
        ``data``: word per bank; ``enable``: banks to write; ``row``: the row of every bank;
        ``error``: the configuration is not a bank function (nothing must be written).
    """

    def __init__(self, *, lanes, row_bits, width=16, signed=True):
        self._lanes = check_lanes(lanes)
        if not isinstance(row_bits, int) or isinstance(row_bits, bool):
            raise TypeError(f"row_bits must be an integer, not {row_bits!r}")
        if row_bits <= 0:
            raise ValueError(f"row_bits must be a positive integer, not {row_bits}")
        self._row_bits = row_bits
        self._width = _check_width(width)
        self._signed = _check_bool("signed", signed)
        word = self.word_shape
        super().__init__({
            "config": In(bank_config_layout(lanes, row_bits)),
            "i": In(stream.Signature(data.StructLayout({
                "data": data.ArrayLayout(word, lanes),
                "valid": unsigned(lanes),
                "row": unsigned(row_bits),
            }))),
            "o": Out(stream.Signature(data.StructLayout({
                "data": data.ArrayLayout(word, lanes),
                "enable": unsigned(lanes),
                "row": unsigned(row_bits),
                "error": unsigned(1),
            }))),
        })

    lanes = property(lambda self: self._lanes)
    width = property(lambda self: self._width)
    row_bits = property(lambda self: self._row_bits)

    @property
    def word_shape(self):
        return signed(self._width) if self._signed else unsigned(self._width)

    @property
    def rotation_stages(self):
        m = self._lanes.bit_length() - 1
        return ceil_log2(m) if m > 1 else 0

    def elaborate(self, platform):
        m = Module()
        n = self._lanes
        bits = n.bit_length() - 1
        row = self.i.payload.row
        xor = self.config.xor
        rotate = self.config.rotate

        # bad configurations: a source at or below its bank bit (0 = none) or beyond the address,
        # rotate >= m
        # (truth tables indexed by the field: no width-mismatched comparisons in the Verilog)
        def refused(field, allowed):
            return Array([Const(int(not allowed(c)), 1) for c in range(1 << len(field))])[field]

        bad = [refused(xor[j], lambda c, j=j: c == 0 or j < c < bits + self._row_bits)
               for j in range(bits)]
        bad.append(refused(rotate, lambda c: c < max(bits, 1)))
        error = Signal()
        m.d.comb += error.eq(Cat(*bad).any())

        # 1. the line offset whose hashed position is x, for every x (inverse of x = X a)
        #    (source code c selects address bit c; the row part is shared by every x)
        picks, row_terms = [], []
        for j in range(bits):
            pick = Signal(bits, name=f"xor{j}_low")       # one-hot: source is low bit k > j
            row_term = Signal(name=f"xor{j}_row")
            m.d.comb += [pick.eq(Cat(*[xor[j] == k if k > j else Const(0) for k in range(bits)])),
                         row_term.eq(Cat(*[(xor[j] == bits + k) & row[k]
                                           for k in range(self._row_bits)]).any())]
            picks.append(pick)
            row_terms.append(row_term)
        # 2. the butterfly that moves the word of offset a(x) to x, for every x. Self-routing
        #    (backward, from the last stage) finds the request for x at stage s's output at the
        #    position p whose bits above s are a(x)'s and whose other bits are x's; the stage
        #    crosses there when a(x)_s != x_s, and by the inverse hash above that is
        #    ``row_term_s ^ OR_{k>s} (pick_s[k] & p_k)``: the selects in closed form, two gates
        #    from the configuration and the row rather than a request propagated through the
        #    stages. (The picks make the inverse hash triangular, so every position holds
        #    exactly one request for any configuration: the pattern never conflicts.)
        selects = []
        for s in range(bits):
            sel = Signal(n, name=f"sel{s}")
            m.d.comb += sel.eq(Cat(*[
                row_terms[s] ^ Cat(*[picks[s][k] for k in range(s + 1, bits) if p >> k & 1],
                                   Const(0, 1)).any()
                for p in range(n)]))
            selects.append(sel)
        word_valid = self.i.payload.valid
        values = [Cat(self.i.payload.data[p], word_valid[p]) for p in range(n)]
        for s in range(bits):
            values = butterfly_stage(m, s, values, selects[s])

        # 3. omega stages: stage t moves position x to R^(2**t) x when bit t of rotate is set
        for t in range(self.rotation_stages):
            amount = 1 << t
            source = {((x >> amount) | (x << (bits - amount))) & (n - 1): x for x in range(n)}
            rotated = [Signal(self._width + 1, name=f"rot{t}_{q}") for q in range(n)]
            m.d.comb += [rotated[q].eq(Mux(rotate[t], values[source[q]], values[q]))
                         for q in range(n)]
            values = rotated

        m.d.comb += [self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready),
                     self.o.payload.row.eq(row),
                     self.o.payload.error.eq(error)]
        enable = []
        for q in range(n):
            m.d.comb += self.o.payload.data[q].eq(values[q][:self._width])
            enable.append(values[q][self._width])
        m.d.comb += self.o.payload.enable.eq(Mux(error, 0, Cat(*enable)))
        return m
