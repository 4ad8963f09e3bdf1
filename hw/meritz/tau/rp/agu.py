"""The lane address generator of a Read Pipeline (Eq. 10).

- :func:`lane_offsets` builds the ``N`` constant lane offsets ``sum_i b_{n,i} c_i`` of Eq. 10 with
  ``N - 1`` adders, from the per-index steps and the lane map of the configuration.
- :class:`LaneAddressGenerator` is the address generator of one Read Pipeline: it expands each beat
  of the :class:`~meritz.tau.step_looper.StepLooper` into one read per instruction of the range
  that reads this RP and adds the lane offsets, giving ``N`` tile addresses (and the tile's base
  row) per read.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.arch import MAX_SLOTS
from merit.checks import check_lanes, check_range
from meritz import kernelcfg
from meritz.tau.step_looper import ADDRESS_BITS, beat_layout, lane_map

__all__ = ["LaneAddressGenerator", "lane_offsets", "reads_rp", "is_out", "read_layout"]

P, A = kernelcfg.P_INDICES, kernelcfg.A_INDICES
#: Opcodes and operand codes of merit.isa that decide which instructions read an RP.
_OP_LOGIC, _OP_INDEX, _OP_OUT, _LOGIC_SEL = 5, 6, 8, 2
_OPERAND_RP0 = 8

def reads_rp(word, port):
    """1 when the instruction ``word`` reads RP``port`` (merit.isa ``Instruction.reads_rp``)."""
    op, fn = word[28:32], word[25:28]
    a, b, c = word[10:15], word[5:10], word[0:5]
    code = _OPERAND_RP0 + port
    two = (op == _OP_OUT) | ((op == _OP_LOGIC) & (fn != _LOGIC_SEL))
    return ((a == code) | ((op != _OP_INDEX) & (b == code))
            | ((op != _OP_INDEX) & ~two & (c == code)))


def is_out(word):
    return word[28:32] == _OP_OUT

def lane_offsets(m, steps, index, rank, lanes, width, name="off", domain="comb"):
    """The ``lanes`` offsets ``sum_i b_{n,i} c_i``, ``c_i = steps[index[i]] << rank[i]``.

    ``steps`` is a list of ``P`` signals (one per parallel index). ``N - 1`` adders, no multiplier.
    ``domain``: where the terms ``c_i`` are formed (``"sync"``: into registers, so the offsets
    follow ``steps`` a cycle later, through a reset too, and the adders start at flip-flops).
    """
    bits = lanes.bit_length() - 1
    table = Array(steps)
    c = []
    for i in range(bits):
        ci = Signal(width, name=f"{name}_c{i}", reset_less=True)
        m.d[domain] += ci.eq(table[index[i]] << rank[i])
        c.append(ci)
    offs = [Const(0, width)]
    for n in range(1, lanes):
        top = n.bit_length() - 1
        o = Signal(width, name=f"{name}{n}")
        m.d.comb += o.eq(offs[n & ~(1 << top)] + c[top])
        offs.append(o)
    return offs

def read_layout(lanes, slot_bits):
    """One read of an RP: the tile address of every lane, and the tile's base row."""
    return data.StructLayout({
        "addr": data.ArrayLayout(unsigned(ADDRESS_BITS), lanes),
        "base": unsigned(16),
        "slot": unsigned(slot_bits),
        "last": unsigned(1),                  # last read of the accumulation tile
    })


class LaneAddressGenerator(wiring.Component):
    """The address generator of one Read Pipeline (Eq. 10).

    For each beat, one read per instruction of ``[beg, end)`` that reads this RP, in address
    order; the k-th reader of the program reads slot k. Lane ``n`` of slot ``k`` reads tile
    address ``origin[k] + beat.addr[k] + offset_k(n)`` of the tile at row ``base[k]``.

    Parameters
    ----------
    lanes : int
    port : int
        0 (RP0) or 1 (RP1).
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :class:`StepLooper`.

    Members
    -------
    config : In(kernelcfg.layout(...))
    beats : In(stream.Signature(beat_layout(...)))
        From the StepLooper (through this RP's FIFO).
    bases : In(stream.Signature(data.ArrayLayout(unsigned(16), slots)))
        Base rows of this RP's slot tiles for the next accumulation tile (taken at its first beat).
    reads : Out(stream.Signature(read_layout(lanes, ...)))
    free : Out(stream.Signature(data.ArrayLayout(unsigned(16), slots)))
        The base rows of a finished accumulation tile (after its last beat).
    """

    def __init__(self, *, lanes, port, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._lanes = check_lanes(lanes)
        if port not in (0, 1):
            raise ValueError(f"port must be 0 or 1, not {port!r}")
        self._port = port
        self._all = (check_range("rp0_slots", rp0_slots, 1, MAX_SLOTS),
                     check_range("rp1_slots", rp1_slots, 1, MAX_SLOTS))
        self._slots = self._all[port]
        self._instructions = instructions
        self._layout = kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                                        instructions=instructions)
        pc_bits = max(instructions, 1).bit_length()
        slot_bits = max(self._slots - 1, 1).bit_length()
        bases = data.ArrayLayout(unsigned(16), self._slots)
        super().__init__({
            "config": In(self._layout),
            "beats": In(stream.Signature(beat_layout(sum(self._all), pc_bits))),
            "bases": In(stream.Signature(bases)),
            "reads": Out(stream.Signature(read_layout(lanes, slot_bits))),
            "free": Out(stream.Signature(bases)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        lanes = self._lanes
        slots = [getattr(cfg, f"rp{self._port}")[k] for k in range(self._slots)]
        first_channel = 0 if self._port == 0 else self._all[0]
        index, rank, _ = lane_map(m, cfg, lanes)
        offs = [lane_offsets(m, [s.lstep[j] for j in range(P)], index, rank, lanes,
                             ADDRESS_BITS, name=f"off{k}_") for k, s in enumerate(slots)]

        n = self._instructions
        mask = Signal(n)
        m.d.comb += mask.eq(Cat(reads_rp(cfg.program[i], self._port) for i in range(n)))

        def readers_below(pc):
            """Readers of this RP at addresses below ``pc``."""
            return sum(Mux(pc > i, mask[i], 0) for i in range(n))

        beat = self.beats.payload
        have_bases = Signal()
        base = Array(Signal(16, name=f"base{k}") for k in range(self._slots))
        started = Signal()                   # the current beat's reads have begun
        k = Signal(range(n + 1))
        k_end = Signal(range(n + 1))
        k_lo = Signal(range(n + 1))
        m.d.comb += [k_lo.eq(readers_below(beat.beg)), k_end.eq(readers_below(beat.end))]
        cur = Signal(range(n + 1))
        m.d.comb += cur.eq(Mux(started, k, k_lo))

        # take the bases at the first beat of an accumulation tile (not while the previous
        # tile's bases wait to be freed)
        free_pending = Signal()
        need_bases = self.beats.valid & beat.first & ~have_bases & ~free_pending
        m.d.comb += self.bases.ready.eq(need_bases)
        with m.If(self.bases.valid & self.bases.ready):
            m.d.sync += have_bases.eq(1)
            m.d.sync += [base[i].eq(self.bases.payload[i]) for i in range(self._slots)]

        # free after the last beat (one entry buffer)
        m.d.comb += [self.free.valid.eq(free_pending)]
        m.d.comb += [self.free.payload[i].eq(base[i]) for i in range(self._slots)]
        with m.If(self.free.valid & self.free.ready):
            m.d.sync += free_pending.eq(0)

        ready_to_run = self.beats.valid & have_bases & ~free_pending
        more = cur < k_end
        read = self.reads.payload
        slot = Signal(range(max(self._slots, 2)))
        m.d.comb += slot.eq(cur)
        chan_addr = Array(beat.addr[first_channel + i] for i in range(self._slots))
        origin = Array(s.origin for s in slots)
        lane_base = Signal(ADDRESS_BITS)
        m.d.comb += lane_base.eq(origin[slot] + chan_addr[slot])
        table = [Array(offs[s][lane] for s in range(self._slots)) for lane in range(lanes)]
        m.d.comb += [read.addr[lane].eq(lane_base + table[lane][slot]) for lane in range(lanes)]
        m.d.comb += [
            read.slot.eq(slot),
            read.base.eq(base[slot]),
            read.last.eq(beat.last & (cur + 1 >= k_end)),
            self.reads.valid.eq(ready_to_run & more),
        ]
        finish = Signal()
        with m.If(ready_to_run):
            with m.If(more):
                with m.If(self.reads.ready):
                    m.d.sync += [started.eq(1), k.eq(cur + 1)]
                    m.d.comb += finish.eq(cur + 1 >= k_end)
            with m.Else():
                m.d.comb += finish.eq(1)
        m.d.comb += self.beats.ready.eq(finish)
        with m.If(finish):
            m.d.sync += started.eq(0)
            with m.If(beat.last):
                m.d.sync += [have_bases.eq(0), free_pending.eq(1)]
        return m
