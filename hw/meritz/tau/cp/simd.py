"""The SIMD compute array of the Compute Pipeline: N lanes executing the MERIT-z ISA (§V, Table I).

Bit-exact with :mod:`merit.isa` (``docs/isa.md``). Five pipeline stages:

0. **decode** takes a command into a register with what the issue stage needs from the command
   alone (legality, the RP elements it consumes, which operands are registers, the operands
   that every lane shares: constants and immediates, the lane's index of ``INDEX``); behind it a
   skid register, so that ``cmd.ready`` is a flip-flop and a command that arrives while the
   decode register waits follows without a bubble;
1. **issue** takes the decoded command when E1 is free and no interlock holds it, fetches the
   operands of every lane (registers with forwarding, the RP0 / RP1 element, which it consumes
   now) and, for ``LOAD``, reads the partial-result SRAM;
2. **E1** computes everything that does not need the accumulator operand ``a``: ``b + c``,
   ``b - c``, ``|b - c|``, the MAC product (not shifted yet), the LOOKUP clamp and table read;
   ``STORE`` writes the SRAM here. ``LOOKUP`` stays three cycles in E1
   (``merit.perf.LOOKUP_E1_CYCLES``): the first registers ``b - c`` shifted by ``s``'s two low
   bits and the clamp's two cases, tested on ``b - c`` itself (negative; at or above
   ``8193 << s``), the second shifts by ``s``'s three high bits and registers the clamped index
   ``u = clamp((b - c) >> s)`` and, one-hot, the table entries it reads (and the table), the
   third reads the two table entries ``y0``, ``y1`` and weighs each by a multiplier of its own
   (not the MAC multiplier): ``y0 * (256 - f)`` and ``y1 * f``, ``f`` the fraction;
3. **E2** shifts E1's value right by ``s`` (the product, the sum, the difference; ``b`` of
   LOGIC), adds ``a`` (or applies the LOGIC function to ``a``; for LOOKUP, adds the two
   products to ``256 * a`` and drops the low 8 bits, which is ``a + y0 + ((y1 - y0) * f >> 8)``
   exactly), writes the lane register, or sends the ``out`` vector ``sat16((a + b) >> s)``
   (its range test on ``a + b`` beside the shifter, with a mask of bits ``15 + s`` and up
   registered from ``s``);
4. **W** (write-back) holds E2's result and its register number in flip-flops and writes them
   into the register set a cycle later, so that the sets' LUT RAM writes (each result bit into
   every read port's copy of both sets) do not hang behind E2's shifter and adder.

A register written by one instruction is forwarded to the next ones, so programs need no ``nop``:
an instruction two or more behind reads the result from E2 or W (or the register file), and an
instruction right behind that reads it as ``a`` (a MAC chain, a running max; also ``b`` of ``out``
and the register a ``STORE`` saves) gets it in E2's short loop (adder, mux). Only an instruction
that reads the result of the instruction right before it as ``b`` or ``c`` waits one cycle
(interlock: the decode register holds it, then ``cmd.ready`` falls), unless ``a`` and ``b``
commute (max, min, and, or, xor; add and sub at ``s = 0``) and only ``b`` is that result: then
they are swapped. The command behind a
``LOOKUP`` waits two cycles more (``merit.perf.interlocked`` counts both). The partial-result SRAM
(5 KB by default) keeps the registers of lane groups that are not running (output stationary across
accumulation tiles); it is never read and written in the same cycle (a ``LOAD`` behind a ``STORE``
waits one cycle), so it maps onto a single-port macro.

The decode stage adds one cycle of latency and no cycles between commands: the interlocks
are the issue stage's, as before. For timing, the issue stage starts from the decode register's
flip-flops (not from the sequencer's logic); its decisions (where each operand comes from: E2's
result, W's, a register set's word or 0; the interlock; the swap of ``a`` and ``b``; the
forwarding into E2) are formed a cycle ahead, for the instruction that will be in the decode
register against what E1, E2 and W will hold, and registered (the operands' selections once per
lane), so the issue stage only multiplexes; E1's registers are enabled whenever E1 is free
(their ``valid`` alone waits for the handshake), E2's result is selected by the last
multiplexer in front of the E1 registers (the other sources of an operand are selected before
it), the MAC product by the last one in front of E2's register (E1 ends at the multiplier; the
shift is E2's first step, in front of its adder),
and the sum ``a + (v >> s)`` by the last one in front of the result (max / min's
comparison, one carry chain, by the one before it; out's ``b`` forwarded from E2 goes into
``u3``, not through ``v3``'s multiplexers); ``sat16`` tests the bits above bit 15 instead of
comparing with the limits. E2's controls (``s``, the result's selections, LOGIC's
function) are decoded as an instruction enters E2 and registered once per lane, in forms that
Yosys does not merge (:func:`_lane_copy`), so that no flip-flop drives every lane's shifters.
MAC's ``sat16(b) * sat16(c)``: the multiplier takes ``b`` and
``c``'s low 16 bits straight from their registers, the range tests run beside it, and where an
operand is outside int16 the product is a shift and subtract by the other (or a constant), so no
logic sits in front of the multiplier; LOOKUP's two products have multipliers of their own. E2
has no multiplier: LOOKUP's products are registered at the end of E1 and E2 reduces ``256 * a``
and them to two terms (carry-save, one LUT level) in front of one carry chain.
"""

from amaranth import Array, Cat, Const, Module, Mux, Shape, Signal, Value, signed, unsigned
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_lanes
from merit.isa import (
    LUT_ENTRIES,
    MAX_LEVELS,
    N_CONSTS,
    N_LUTS,
    N_REGS,
    OPERAND_CONST,
    OPERAND_RP0,
    OPERAND_RP1,
    IndexKind,
    Logic,
    Op,
)
from meritz import kernelcfg

__all__ = ["Opcode", "LogicFn", "Command", "SimdArray", "cmd_layout", "simd_config_layout",
           "sram_depth"]


class Opcode(enum.Enum, shape=4):
    """Field ``op`` of an instruction (values of :class:`merit.isa.Op`)."""
    ADD = Op.ADD.value
    SUB = Op.SUB.value
    L1 = Op.L1.value
    MAC = Op.MAC.value
    LOGIC = Op.LOGIC.value
    INDEX = Op.INDEX.value
    LOOKUP = Op.LOOKUP.value
    OUT = Op.OUT.value


class LogicFn(enum.Enum, shape=3):
    """Field ``fn`` of ``LOGIC`` (values of :class:`merit.isa.Logic`)."""
    MAX = Logic.MAX.value
    MIN = Logic.MIN.value
    SEL = Logic.SEL.value
    AND = Logic.AND.value
    OR = Logic.OR.value
    XOR = Logic.XOR.value


class Command(enum.Enum, shape=1):
    """What a command asks of the SIMD array."""
    EXEC = 0    # execute ``word`` on the register set ``set``
    MOVE = 1    # the mover: register set ``set`` saved to and / or restored from the SRAM


instruction_layout = data.StructLayout({
    "c": 5, "b": 5, "a": 5, "zero": 2, "d": 3, "s": 5, "fn": 3, "op": Opcode,
})


def move_layout(depth):
    """What a ``MOVE`` command asks of the mover, on its register set (in this order): ``save``
    registers 0 .. regs-1 to the SRAM rows from ``save_row``, then ``load`` them from the rows
    from ``load_row``, or ``clear`` every register of the set (it reads 0 until written)."""
    return data.StructLayout({
        "save": 1, "load": 1, "clear": 1, "regs": range(N_REGS + 1),
        "save_row": range(depth), "load_row": range(depth),
    })


def cmd_layout(lanes, depth):
    """Payload of the command stream for ``lanes`` lanes and an SRAM of ``depth`` rows."""
    return data.StructLayout({
        "kind": Command,
        "set": 1,                   # the register set an EXEC runs on, or a MOVE moves
        "word": instruction_layout,
        "move": move_layout(depth),
        "index": unsigned(16),      # a_fn of the step, or the group's base of p_fn
        "lane_shift": range(8),     # PAR: the lane adds (lane >> lane_shift) & (2**lane_bits - 1)
        "lane_bits": range(8),
    })


def simd_config_layout():
    """Per-kernel constants of the SIMD array: k0..k3 and the lookup tables."""
    return data.StructLayout({
        "consts": data.ArrayLayout(signed(32), N_CONSTS),
        "luts": kernelcfg.lut_layout(),
    })


def sram_depth(lanes, sram_bytes):
    """Rows of N 32-bit registers in a partial-result SRAM of ``sram_bytes`` (validated)."""
    if not isinstance(sram_bytes, int) or isinstance(sram_bytes, bool):
        raise TypeError(f"sram_bytes must be an integer, not {sram_bytes!r}")
    if sram_bytes < lanes * 4 * N_REGS:
        raise ValueError(f"sram_bytes must hold at least one group of {N_REGS} registers "
                         f"({lanes * 4 * N_REGS} bytes for {lanes} lanes), not {sram_bytes}")
    return sram_bytes * 8 // (lanes * 32)


#: bits of a LOOKUP product, an int16 entry times a weight of 0 .. 256 (signed)
_LUT_PRODUCT = 25
#: LOOKUP's clamp: (b - c) >> s > 8192 is b - c >= 8193 << s; b - c has 33 bits, so for
#: s > _LUT_MAX_S the bound is out of its reach. ``_LUT_BOUND`` bits hold b + ~c + 1 - bound.
_LUT_MAX_S = 18
_LUT_BOUND = 36


def _lut_bound(s):
    """1 - (8193 << s) for a 5-bit value ``s`` <= ``_LUT_MAX_S`` (a table of constants)."""
    return Array([Const(1 - (8193 << k), signed(_LUT_BOUND))
                  for k in range(_LUT_MAX_S + 1)] + [Const(0, signed(_LUT_BOUND))]
                 * (31 - _LUT_MAX_S))[s]


def _sat16_shifted(x, s, mask):
    """``sat16(x >> s)`` with the range test on ``x`` itself, beside the shifter rather than
    behind it: ``x >> s`` is an int16 where ``x``'s bits ``15 + s`` and up all equal its sign;
    ``mask`` has those bits set (:func:`_sat16_mask` of ``s``, registered). Returns ``(over,
    under, low)``: above int16, below it, and the low 16 bits of ``x >> s``."""
    bits = x.as_unsigned()
    sign = x[-1]
    over = ~sign & (bits & mask).any()
    under = sign & (~bits & mask).any()
    return over, under, (x >> s)[:16].as_signed()


def _sat16_mask(s, width):
    """Bits ``15 + s`` and up of a ``width``-bit value (``s``: a 5-bit value)."""
    return (Const(((1 << width) - 1) & ~((1 << 15) - 1), width) << s)[:width]


#: E2's controls, registered once per lane (:func:`_lane_copy`): the shift ``s``, the result's
#: multiplexers' selections and LOGIC's function
_e2_ctl_layout = data.StructLayout({
    "s": 5, "total": 1, "minmax": 1, "lookup": 1, "max": 1, "sel": 1, "fn": LogicFn,
})


def _e2_controls(word):
    """What E2 needs of instruction ``word`` (an ``instruction_layout`` value) besides its
    operands, decoded as it enters E2 (the field values of ``_e2_ctl_layout``)."""
    op, fn = word.op, word.fn
    return Cat(word.s, (op != Opcode.LOGIC) & (op != Opcode.LOOKUP),
               (op == Opcode.LOGIC) & ((fn == LogicFn.MAX) | (fn == LogicFn.MIN)),
               op == Opcode.LOOKUP, fn == LogicFn.MAX, fn == LogicFn.SEL, fn)


#: distinct forms of a copy :func:`_lane_copy` builds (stored inverted or not, reset to ones or
#: zeros, loaded by one of two equivalent enables)
_COPY_FORMS = 8


def _lane_copy(m, shape, value, loads, k, name):
    """Copy ``k`` of a register loaded with ``value`` where ``loads[(k >> 2) & 1]`` (two
    conditions that load the same value wherever it is used); returns its value.

    Yosys merges flip-flops with the same inputs (``opt_merge``, also bit by bit after they
    are split), so the copies of one register, each to drive a share of its loads, are built
    in :data:`_COPY_FORMS` forms that are not the same cells: copy ``k`` stores the value
    inverted where bit 0 of ``k`` is set (the inversion undone behind it, which the LUTs it
    drives absorb), resets to ones where bit 1 is set (its value is not used until it is
    loaded) and is loaded by ``loads[1]`` where bit 2 is set."""
    width = Shape.cast(shape).width
    flip = Const((1 << width) - 1 if k & 1 else 0, width)
    reg = Signal(width, name=name, init=(1 << width) - 1 if k & 2 else 0)
    with m.If(loads[(k >> 2) & 1]):
        m.d.sync += reg.eq(Value.cast(value) ^ flip)
    return data.View(shape, reg ^ flip) if isinstance(shape, data.Layout) else reg ^ flip


def _one_hot_read(m, select, values, name):
    """The value ``values[k]`` where bit ``k`` of ``select`` is set (one-hot; 0 where none is),
    as AND-OR in three LUT4 levels for up to 32 values: two entries (a selection bit and a
    value bit each) per LUT, then ORs of up to four; a last value left over from the pairs
    enters the final OR. The first two levels are wires with Yosys' ``keep`` attribute, which
    the LUT mapper (ABC) keeps as cut points: mapping for area, it would otherwise trade depth
    for LUTs up to the depth of the design's longest logic (five levels here)."""
    width = Shape.cast(values[0].shape()).width
    terms = [Mux(select[k], v, 0) for k, v in enumerate(values)]
    last = [terms.pop()] if len(terms) % 2 else []
    level = []
    for j in range(0, len(terms), 2):
        pair = Signal(width, name=f"{name}_a{j // 2}", attrs={"keep": 1})
        m.d.comb += pair.eq(terms[j] | terms[j + 1])
        level.append(pair)
    groups = []
    for j in range(0, len(level), 4):
        four = level[j:j + 4]
        if len(four) > 1:
            group = Signal(width, name=f"{name}_b{j // 4}", attrs={"keep": 1})
            m.d.comb += group.eq(_or(four))
            four = [group]
        groups += four
    return _or(groups + last)


def _or(values):
    """The OR of ``values``."""
    out = values[0]
    for v in values[1:]:
        out = out | v
    return out


#: the issue stage's selection of an operand (registered a cycle ahead, per lane): ``sel`` (0 a
#: register, 1 the RP0 element, 2 the RP1 element, 3 ``k``), and for a register whether it is
#: E2's result (``hit``), W's (``w``) or the word of register set 0 / 1 (``on``; else 0)
_operand_ctl_layout = data.StructLayout({"sel": 2, "hit": 1, "w": 1, "on": 2})
#: the issue stage's per-lane controls: operands ``a``, ``b`` (``a``'s where they swap), ``c``,
#: and ``index`` (``b`` is the lane's index of INDEX)
_issue_ctl_layout = data.StructLayout({
    "a": _operand_ctl_layout, "b": _operand_ctl_layout, "c": _operand_ctl_layout, "index": 1,
})
#: the issue stage's other decisions, registered a cycle ahead: the interlock, the forwarding
#: of E2's result into ``a`` / out's ``b``, ``b``'s register and constant (``a``'s where they swap)
_issue_dec_layout = data.StructLayout({
    "hazard": 1, "a_fwd": 1, "b_fwd": 1, "b_addr": 3, "b_k": signed(32),
})


def _int16_inside(v):
    """Whether ``v`` (signed, 16 bits or more) is an int16, so that ``sat16(v)`` is its low 16
    bits: bits 15 and up all equal to its sign (a wide AND / OR, not a comparison with the
    limits). Outside, ``sat16(v)`` is 32767, or -32768 for a negative ``v``."""
    upper = v[15:]
    return ~upper.any() | upper.all()


def _times_limit(negative, y):
    """``y`` (int16) times the int16 limit of a saturated operand: ``-32768 * y`` where
    ``negative``, else ``32767 * y``, by shift and subtract (one carry chain, no multiplier)."""
    shifted = y.as_signed() << 15
    return Mux(negative, 0, shifted) - Mux(negative, shifted, y)


def _limits_product(x_negative, y_negative):
    """The product of two saturated operands' limits (32767 or -32768 by their signs), a
    constant picked by the two signs."""
    top, bottom = 32767, -32768
    return Mux(x_negative, Mux(y_negative, bottom * bottom, bottom * top),
               Mux(y_negative, top * bottom, top * top))


def _mac_saturated(b, c):
    """``(inside, product)`` for MAC's ``sat16(b) * sat16(c)`` beside the multiplier:
    ``inside``, both operands are int16 (the product is the multiplier's, of their low 16
    bits); ``product``, the product where one or both are not."""
    b_in, c_in = _int16_inside(b), _int16_inside(c)
    return b_in & c_in, Mux(b_in, _times_limit(c[-1], b[:16].as_signed()),
                            Mux(c_in, _times_limit(b[-1], c[:16].as_signed()),
                                _limits_product(b[-1], c[-1])))


def is_legal(m, word):
    """A 1-bit value: the rule of :func:`merit.isa.is_legal` in logic."""
    legal = Signal(name="legal")
    reserved = Cat(*[(getattr(word, f) == 14) | (getattr(word, f) == 15) for f in "abc"]).any()
    with m.Switch(word.op):
        with m.Case(Opcode.ADD, Opcode.SUB, Opcode.L1, Opcode.MAC):
            m.d.comb += legal.eq(word.fn == 0)
        with m.Case(Opcode.LOGIC):
            m.d.comb += legal.eq(word.fn <= max(f.value for f in LogicFn))
        with m.Case(Opcode.INDEX):
            m.d.comb += legal.eq((word.fn < MAX_LEVELS) & (word.b <= max(IndexKind)))
        with m.Case(Opcode.LOOKUP):
            m.d.comb += legal.eq(word.fn < N_LUTS)
        with m.Case(Opcode.OUT):
            m.d.comb += legal.eq((word.fn == 0) & (word.d == 0))
    return legal & ~reserved & ~word.zero.any()


class SimdArray(wiring.Component):
    """N ALU lanes in lock-step with per-lane registers and the partial-result SRAM.

    Parameters
    ----------
    lanes : int
        N, a power of two.
    sram_bytes : int
        Capacity of the partial-result SRAM (default 5120 = 5 KB): ``8 * sram_bytes / (32 N)``
        rows of N 32-bit registers.

    Members
    -------
    cmd : In(stream.Signature(cmd_layout))
        Commands from the sequencer (:class:`Command`); one per cycle at best. ``ready`` is a
        flip-flop (the skid register behind the decode register is empty).
    rp0, rp1 : In(stream.Signature(ArrayLayout(signed(16), lanes)))
        The current RP elements; one vector is consumed by each executed instruction that reads
        ``i0`` / ``i1``, when it issues (a cycle or more after its command was accepted).
    out : Out(stream.Signature(ArrayLayout(signed(16), lanes)))
        Results of ``out`` instructions, to the write pipeline.
    config : In(simd_config_layout())
        Constants and lookup tables, held stable while commands run.
    error : Out(1)
        Sticky until reset: an illegal instruction was received. It executed nothing, consumed
        no RP element and produced no output.
    busy : Out(1)
        An accepted command has not completed yet.
    """

    def __init__(self, *, lanes=32, sram_bytes=5120):
        self.lanes = check_lanes(lanes)
        self.sram_bytes = sram_bytes
        self.depth = sram_depth(lanes, sram_bytes)
        vec16 = data.ArrayLayout(signed(16), lanes)
        super().__init__({
            "cmd": In(stream.Signature(cmd_layout(lanes, self.depth))),
            "rp0": In(stream.Signature(vec16)),
            "rp1": In(stream.Signature(vec16)),
            "out": Out(stream.Signature(vec16)),
            "config": In(simd_config_layout()),
            "error": Out(1),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.lanes
        vec32 = data.ArrayLayout(signed(32), n)
        # the lane registers: two sets, each a memory of N_REGS rows (row i = register i of
        # every lane) with four asynchronous read ports (a, b, c; the mover's save) and one
        # write port (E2's, or the mover's restore on the set no instruction runs on), which an
        # FPGA builds from LUT RAM; a clear empties the set's ``written`` in one cycle, and a
        # register not written since reads 0
        sets = [memory.Memory(shape=vec32, depth=N_REGS, init=[]) for _ in range(2)]
        m.submodules.regs0, m.submodules.regs1 = sets
        reg_wr = [x.write_port() for x in sets]
        written = [Signal(N_REGS, name=f"written{k}") for k in range(2)]
        m.submodules.sram = sram = memory.Memory(shape=vec32, depth=self.depth, init=[])
        rd = sram.read_port()
        wr = sram.write_port()
        stage = data.StructLayout({
            "valid": 1, "set": 1, "word": instruction_layout,
        })

        # ---- stage 3 (E2: the accumulator add, LOGIC, out; writes the register) ------------
        s3 = Signal(stage, name="s3")
        a3, u3 = (Signal(vec32, name=f"{x}3") for x in "au")
        # ``v`` unshifted: 34 bits (b + c, |b - c|); E2 shifts it
        v3 = Signal(data.ArrayLayout(signed(34), n), name="v3")
        # LOOKUP: the two weighted table entries, 256 * y(u) = y0 * (256 - f) + y1 * f, the
        # even entry's product in ``lp3``, the odd one's in ``lq3`` (each from a multiplier of
        # its own); E2 adds them to 256 * a
        lp3 = Signal(data.ArrayLayout(signed(_LUT_PRODUCT), n), name="lp3")
        lq3 = Signal(data.ArrayLayout(signed(_LUT_PRODUCT), n), name="lq3")
        # out: which bits of a + b must equal its sign for sat16((a + b) >> s) to pass it
        # through (bits 15 + s and up), registered from s as the instruction enters E2
        omask3 = Signal(33, name="omask3")
        w3 = s3.word
        # out's valid, and E2's own test of it (an out waits for ``out.ready``), each a flip-flop
        # of its own, set as the instruction enters E2 (``s3_vout``: an out in E2; ``s3_pass``:
        # anything else, or nothing, stored the other way round so that the two are not merged):
        # the handshake into E1 and the issue stage does not start at the output's logic
        s3_vout = Signal(name="s3_vout")
        s3_pass = Signal(name="s3_pass", init=1)
        s3_fire = s3.valid & (s3_pass | self.out.ready)
        s3_writes = s3.valid & (w3.op != Opcode.OUT)
        # the sum a + (v >> s) (the slowest value: the shifter and a carry chain) enters the
        # result's last multiplexer, max / min's pick (their comparison's answer) the one
        # before it, LOOKUP's sum (a carry-save step and a carry chain) the one before that
        result = Signal(vec32)       # the value written to register w3.d
        outv = Signal(self.out.payload.shape())
        # E2's controls (the shift ``s``, the result's selections, LOGIC's function) decoded
        # from the instruction as it enters E2 and registered once per lane, so that each
        # lane's shifters and multiplexers have flip-flops of their own (``s`` alone drives
        # every lane's three shifters, 32 bits each): ``e2_next`` and ``e2_loads`` are set in
        # E1's section (the instruction in E1; it enters E2, or E2 is free)
        e2_next = Signal(_e2_ctl_layout, name="e2_next")
        e2_loads = (Signal(name="e2_load_move"), Signal(name="e2_load_free"))
        for lane in range(n):
            a, u = a3[lane], u3[lane]
            ctl = _lane_copy(m, _e2_ctl_layout, e2_next, e2_loads, lane % _COPY_FORMS,
                             f"e2ctl{lane}")
            # ``v3``: what E1 computed from b and c, not shifted yet (the MAC product, b + c,
            # b - c, |b - c|; b for LOGIC and INDEX); ``v``: it shifted right by s, the value
            # added to ``a`` (b >> s for LOGIC); ``u``: b (MAX, MIN) or c (SEL) unshifted, and
            # b of out (E2's result where it is the instruction's right before). The shift is
            # E2's first step, in front of the adder: E1 ends at the multiplier, and a MAC
            # chain through ``a`` still runs back to back.
            v = Signal(signed(32), name=f"vsh{lane}")
            m.d.comb += v.eq(v3[lane] >> ctl.s)
            # LOOKUP: a + y(u) = (256 * a + p0 + p1) >> 8 (256 * a is a multiple of 256, so
            # the floor of the interpolation is exact), the two products registered in E1; the
            # three terms are reduced to two by a carry-save step (one LUT level), then one
            # carry chain, no multiplier in E2. out has its own adder: its shift and saturation
            # do not follow the other sums (a path no instruction uses but timing sees)
            # The products enter the step without their sign extension: each is read unsigned
            # with its sign bit inverted (its value plus 2^24), and the 2 * 2^24 this adds is
            # taken off by the constant -2^25, which modulo 2^40 is bits 25 and up, where the
            # products' terms are empty (it fills one of them): the same sum, bit for bit, but
            # a product's sign bit feeds one position of the step, not sixteen
            lk = [Signal(40, name=f"lk{x}{lane}") for x in "xyz"]
            biased = [Cat(t.as_unsigned()[:_LUT_PRODUCT - 1], ~t[_LUT_PRODUCT - 1])
                      for t in (lq3[lane], lp3[lane])]
            fill = 40 - _LUT_PRODUCT
            m.d.comb += [lk[0].eq(Cat(Const(0, 8), a)),
                         lk[1].eq(Cat(biased[0], Const((1 << fill) - 1, fill))),
                         lk[2].eq(biased[1])]
            x_, y_, z_ = lk
            carries = Signal(40, name=f"lkc{lane}")
            m.d.comb += carries.eq((x_ & y_) | (x_ & z_) | (y_ & z_))
            lsum = Signal(40, name=f"lks{lane}")
            m.d.comb += lsum.eq((x_ ^ y_ ^ z_) + Cat(Const(0, 1), carries[:39]))
            total = Signal(signed(33), name=f"sum{lane}")
            m.d.comb += total.eq(a + v)
            # out: a + b, b in ``u`` (E1 puts out's b there, or E2's result forwarded)
            osum = Signal(signed(33), name=f"osum{lane}")
            m.d.comb += osum.eq(a + u)
            o_over, o_under, o_low = _sat16_shifted(osum, ctl.s, omask3)
            sh = Signal(signed(32), name=f"lsh{lane}")      # a >> s, or c >> s for SEL
            m.d.comb += sh.eq(Mux(ctl.sel, u, a) >> ctl.s)
            # max and min: one comparison (a carry chain), whose answer picks a >> s or
            # b >> s in the multiplexer right in front of the sum's (where a == b, both are
            # the same: max takes a >> s where a >= b, min where a < b)
            lt = Signal(name=f"lt{lane}")
            m.d.comb += lt.eq(a < u)
            pick = Signal(signed(32), name=f"minmax{lane}")
            m.d.comb += pick.eq(Mux(lt ^ ctl.max, sh, v))
            f = Signal(signed(32), name=f"logic{lane}")
            with m.Switch(ctl.fn):
                with m.Case(LogicFn.SEL):
                    m.d.comb += f.eq(Mux(a != 0, v, sh))
                with m.Case(LogicFn.AND):
                    m.d.comb += f.eq(sh & v)
                with m.Case(LogicFn.OR):
                    m.d.comb += f.eq(sh | v)
                with m.Case(LogicFn.XOR):
                    m.d.comb += f.eq(sh ^ v)
            m.d.comb += [
                result[lane].eq(Mux(ctl.total, total[:32],
                                    Mux(ctl.minmax, pick,
                                        Mux(ctl.lookup, lsum[8:40], f)))),
                outv[lane].eq(Mux(o_over, Const(32767, signed(16)),
                                  Mux(o_under, Const(-32768, signed(16)), o_low))),
            ]
        m.d.comb += [
            self.out.valid.eq(s3_vout),
            self.out.payload.eq(outv),
        ]
        # ---- stage 4 (W, write-back): E2's result written into its register set ------------
        # E2's result and its register go into flip-flops and are written into the set a cycle
        # later, so that the set's LUT RAM writes (each result bit into every read port's copy
        # of both sets) start at flip-flops, not behind E2's shifter and adder. An instruction
        # issued meanwhile reads the register from W, in front of the set's word (``register``
        # below); the mover needs no wait for W: W's write lands at the end of the cycle the
        # mover leaves its drain in, before its first save reads the set or its first restore
        # writes it. ``written`` is set as the result enters W.
        s4_valid = Signal(name="s4_valid")
        s4_set = Signal(name="s4_set")
        s4_d = Signal(range(N_REGS), name="s4_d")
        s4_data = Signal(vec32, name="s4_data")
        m.d.sync += s4_valid.eq(s3_fire & s3_writes)
        with m.If(s3_fire & s3_writes):
            m.d.sync += [s4_set.eq(s3.set), s4_d.eq(w3.d), s4_data.eq(result)]
        # each set's write port: W's result, or the mover's restore of a register (the mover
        # restores a set only when no instruction on it is in E1, E2 or W)
        mv_wr = Signal(2)            # the mover writes register ``mv_wreg`` of set k
        mv_wreg = Signal(range(N_REGS))
        for k in range(2):
            w_writes = s4_valid & (s4_set == k)
            m.d.comb += [
                reg_wr[k].addr.eq(Mux(mv_wr[k], mv_wreg, s4_d)),
                reg_wr[k].data.eq(Mux(mv_wr[k], rd.data, s4_data)),
                reg_wr[k].en.eq(Mux(w_writes | mv_wr[k], (1 << len(reg_wr[k].en)) - 1, 0)),
            ]
            with m.If(s3_fire & s3_writes & (s3.set == k)):
                m.d.sync += written[k].bit_select(w3.d, 1).eq(1)

        # ---- stage 2 (E1: everything that does not need ``a``) -----------------------------
        s2 = Signal(stage, name="s2")
        a_fwd = Signal()             # ``a`` is the result of the instruction in E2 (forwarded)
        b_fwd = Signal()             # the same for ``b`` of out
        a2, b2, c2 = (Signal(vec32, name=f"{x}2") for x in "abc")
        w2 = s2.word
        s3_free = s3_pass | self.out.ready     # ~s3.valid | s3_fire
        # LOOKUP stays three cycles in E1: the first registers b - c shifted right by s's two
        # low bits (``lsx2``) and whether (b - c) >> s is negative or above 8192 (the clamp's
        # two cases, ``lneg2`` / ``lover2``: tested on b - c itself, so no shifter in front of
        # them); the second shifts ``lsx2`` by s's three high bits and registers the clamped
        # index of every lane (``lu2``) and which table entries it reads (one-hot); the third
        # reads the table with them (``lut_second`` / ``lut_third`` mark the cycles)
        lut_second = Signal()
        lut_third = Signal()
        lsx2 = Signal(data.ArrayLayout(signed(33), n), name="lsx2")
        lneg2 = Signal(n, name="lneg2")
        lover2 = Signal(n, name="lover2")
        # the clamp's bound, 1 - (8193 << s) (0 where s > 18: no b - c reaches 8193 << s), and
        # whether it applies: registered from s when the instruction enters E1
        lut_k2 = Signal(signed(_LUT_BOUND), name="lut_k2")
        lut_kon2 = Signal(name="lut_kon2")
        lu2 = Signal(data.ArrayLayout(unsigned(14), n), name="lu2")
        n_even, n_odd = len(range(0, LUT_ENTRIES, 2)), len(range(1, LUT_ENTRIES, 2))
        even2 = Signal(data.ArrayLayout(n_even, n), name="lut_even2")
        odd2 = Signal(data.ArrayLayout(n_odd, n), name="lut_odd2")
        # a LOOKUP in its first two E1 cycles (``s2.valid``, a LOOKUP, not ``lut_third``), a
        # flip-flop: set as a LOOKUP issues, cleared as ``lut_third`` is set, so that E1's move
        # and the issue stage's handshake start at flip-flops, not at ``s2``'s opcode
        s2_hold = Signal(name="s2_hold")
        s2_move = s2.valid & s3_free & ~s2_hold
        s2_writer = s2.valid & (w2.op != Opcode.OUT)
        a_in = Signal(vec32)
        m.d.comb += a_in.eq(Mux(a_fwd, result, a2))
        # LOOKUP's table (``fn``), registered in its first E1 cycles: the third cycle's table
        # read is a multiplexer over one table's entries, not over both tables'. One copy per
        # lane (:func:`_lane_copy`; loaded in both cycles or in the first, the same table), so
        # that each lane's read starts at flip-flops of its own, beside it
        luts = self.config.luts
        table_shape = data.ArrayLayout(signed(16), LUT_ENTRIES)
        table_next = Signal(table_shape, name="lut_table_next")
        m.d.comb += table_next.eq(Mux(w2.fn[0], luts[1], luts[0]))
        table_loads = (s2_hold, s2_hold & ~lut_second)
        v_next = Signal.like(v3)
        # MAC's product enters the last multiplexer in front of v3
        s2_mac = w2.op == Opcode.MAC
        u_next = Signal(vec32)
        lp_next = Signal.like(lp3)
        lq_next = Signal.like(lq3)
        for lane in range(n):
            b, c = b2[lane], c2[lane]
            # every operation but LOGIC and out adds ``a`` to a value shifted right by ``s``:
            # one subtractor per lane here, shared by the opcodes, and one shifter in E2 (the
            # MAC product, the slowest value, enters the last multiplexer in front of ``v3``)
            diff = Signal(signed(33), name=f"diff{lane}")
            pre_other = Signal(signed(34), name=f"pre_other{lane}")
            prod = Signal(signed(32), name=f"prod{lane}")
            # MAC's product sat16(b) * sat16(c) with the saturation beside the multiplier, not
            # in front of it: the multiplier takes the low 16 bits of b and c (their value
            # where they are in range) straight from their registers, the range tests run
            # beside it, and the product of a saturated operand, K * y with K = 32767 or
            # -32768 by the operand's sign, is formed by shift and subtract ((y << 15) - y or
            # -(y << 15)); both saturated, a constant by the two signs. The multiplier's product
            # enters the last multiplexer in front of v3, selected where both are in range
            m.d.comb += [diff.eq(b - c), prod.eq(b[:16].as_signed() * c[:16].as_signed())]
            mac_inside, mac_limit = _mac_saturated(b, c)
            mac_fix = Signal(signed(32), name=f"macfix{lane}")
            m.d.comb += mac_fix.eq(mac_limit)
            with m.Switch(w2.op):
                with m.Case(Opcode.ADD):
                    m.d.comb += pre_other.eq(b + c)
                with m.Case(Opcode.SUB):
                    m.d.comb += pre_other.eq(diff)
                with m.Case(Opcode.L1):
                    m.d.comb += pre_other.eq(abs(diff))
                with m.Default():                           # LOGIC, INDEX (b: the index)
                    m.d.comb += pre_other.eq(b)
            # LOOKUP: its own shifter of b - c (E2's shifter, which the MAC product feeds, comes
            # a cycle too late), the clamp and the table read, over three E1 cycles.
            # First cycle: b - c (``diff``, shared) shifted by s's two low bits; the clamp's
            # cases from b - c: (b - c) >> s < 0 is b - c < 0, and (b - c) >> s > 8192 is
            # b - c >= 8193 << s, the sign of b + ~c + (1 - (8193 << s)) (three terms, reduced
            # to two by a carry-save step, then one carry chain beside the subtractor's)
            m.d.sync += lsx2[lane].eq(diff >> w2.s[:2])
            kx = Cat(b, b[-1].replicate(_LUT_BOUND - 32))
            ky = Cat(~c, (~c[-1]).replicate(_LUT_BOUND - 32))
            kz = lut_k2.as_unsigned()
            k_carry = Signal(_LUT_BOUND, name=f"lutkc{lane}")
            k_sum = Signal(_LUT_BOUND, name=f"lutks{lane}")
            m.d.comb += [
                k_carry.eq((kx & ky) | (kx & kz) | (ky & kz)),
                k_sum.eq((kx ^ ky ^ kz) + Cat(Const(0, 1), k_carry[:-1])),
            ]
            m.d.sync += [lneg2[lane].eq(diff[-1]),
                         lover2[lane].eq(lut_kon2 & ~k_sum[-1])]
            # second cycle: the shift by s's three high bits and the clamp to [0, 8192]
            x = Signal(signed(33), name=f"lutx{lane}")
            lu = Signal(unsigned(14), name=f"lutu{lane}")
            neg = lneg2[lane]
            over = lover2[lane]
            m.d.comb += [
                x.eq(lsx2[lane] >> Cat(Const(0, 2), w2.s[2:])),
                lu.eq(Mux(neg, 0, Mux(over, 8192, x[:14]))),
            ]
            # entries i and i + 1 (y0, y1; i = u >> 8) are one even and one odd entry: the even
            # one is E[(i + 1) >> 1], the odd one O[i >> 1]. Which, one-hot, decoded from x's
            # bits beside the clamp (a clamped u reads E[0] or E[16] alone, its fraction 0)
            raw = x[8:14]
            inside = ~neg & ~over
            with m.If(s2_hold):
                m.d.sync += lu2[lane].eq(lu)
                for k in range(n_even):
                    m.d.sync += even2[lane][k].eq(
                        (inside & ((raw == 2 * k) | (raw == 2 * k - 1)))
                        | (neg if k == 0 else 0) | (~neg & over if k == n_even - 1 else 0))
                for k in range(n_odd):
                    m.d.sync += odd2[lane][k].eq(inside & ((raw == 2 * k) | (raw == 2 * k + 1)))
            # third cycle: y0 and y1 are weighed by a multiplier each, 256 * y(u) = y0 * (256 -
            # f) + y1 * f: the odd entry by f for even i, by 256 - f for odd i, the even one by
            # the other weight. The entries are read as AND-OR over the one-hot selections (no
            # index decoded in this cycle). At u = 8192 (i = 32) f is 0 and no odd entry is
            # selected. Both products are registered (``lp3``, ``lq3``; the odd entry has a
            # multiplier of its own, so that its table read reaches a multiplier through no
            # multiplexer and the product a register through none), and E2 adds them to
            # 256 * a: no subtraction or multiplication in E2.
            # The read is a tree of three LUT levels (:func:`_one_hot_read`: two entries per
            # LUT, then ORs of four), its inner levels kept as wires, so that the LUT mapper's
            # area recovery does not stretch it to the depth of the array's longest logic.
            i = lu2[lane][8:14]
            f = lu2[lane][:8]
            y_even = Signal(signed(16), name=f"lutye{lane}")
            y_odd = Signal(signed(16), name=f"lutyo{lane}")

            table = _lane_copy(m, table_shape, table_next, table_loads, lane % _COPY_FORMS,
                               f"lut_table{lane}")
            entries = [table[k] for k in range(LUT_ENTRIES)]
            m.d.comb += [
                y_even.eq(_one_hot_read(m, even2[lane], entries[0::2], f"lutre{lane}")),
                y_odd.eq(_one_hot_read(m, odd2[lane], entries[1::2], f"lutro{lane}")),
            ]
            w_f = Cat(f, Const(0, 1))
            w_rest = Signal(9, name=f"lutw{lane}")          # 256 - f: 1 .. 256
            m.d.comb += w_rest.eq(256 - f)
            m.d.comb += [
                lp_next[lane].eq(y_even * Mux(i[0], w_f, w_rest)),
                lq_next[lane].eq(y_odd * Mux(i[0], w_rest, w_f)),
                v_next[lane].eq(Mux(s2_mac & mac_inside, prod,
                                    Mux(s2_mac, mac_fix,
                                        Mux(w2.op != Opcode.OUT, pre_other, b)))),
                # out's b: b, or E2's result forwarded (one multiplexer, not through v3's)
                u_next[lane].eq(Mux(b_fwd, result[lane], Mux(w2.fn == LogicFn.SEL, c, b))),
            ]
        m.d.comb += [e2_next.eq(_e2_controls(w2)), e2_loads[0].eq(s2_move),
                     e2_loads[1].eq(s3_free)]
        with m.If(s2_move):
            m.d.sync += [s3.eq(s2), a3.eq(a_in), v3.eq(v_next), u3.eq(u_next), lp3.eq(lp_next),
                         lq3.eq(lq_next),
                         omask3.eq(_sat16_mask(w2.s, 33)),
                         s3_vout.eq(w2.op == Opcode.OUT), s3_pass.eq(w2.op != Opcode.OUT)]
        with m.Elif(s3_fire):
            m.d.sync += [s3.valid.eq(0), s3_vout.eq(0), s3_pass.eq(1)]
        # LOOKUP's first two cycles: E2 may finish meanwhile, so a forwarded ``a`` is taken now
        with m.If(s2_hold):
            m.d.sync += [lut_second.eq(1), lut_third.eq(lut_second), a2.eq(a_in), a_fwd.eq(0),
                         s2_hold.eq(~lut_second)]

        # ---- stage 0 (decode): the command register, behind a skid register ---------------
        # A command from the sequencer is decoded into ``d`` (what the issue stage needs from
        # the command alone: legality, the RP elements it consumes, which operands are
        # registers, the operands that are the same in every lane, the lane's index of INDEX)
        # one cycle before it issues. ``cmd.ready`` is a flip-flop (the skid register is
        # empty), so the issue stage's handshake does not reach back into the sequencer; a
        # command that arrives while ``d`` waits is kept in the skid register and follows
        # without a bubble.
        cmd_shape = self.cmd.payload.shape()
        lane_idx = data.ArrayLayout(unsigned(17), n)
        decoded = data.StructLayout({
            "valid": 1, "kind": Command, "set": 1, "word": instruction_layout,
            "move": move_layout(self.depth),
            "exec": 1, "legal": 1, "run": 1, "need0": 1, "need1": 1, "index": 1,
            "out": 1, "a_code": 5,
            # per operand (a: a_code, b, c): a register (its number is the code), and
            # ``sel``: 0 a register, 1 the RP0 element, 2 the RP1 element, 3 ``k`` (a constant
            # or an immediate, the same in every lane)
            "a_reg": 1, "b_reg": 1, "c_reg": 1,
            "a_sel": 2, "b_sel": 2, "c_sel": 2,
            "a_k": signed(32), "b_k": signed(32), "c_k": signed(32),
            # an interlock on b / c if the instruction in E1 writes it; a and b may swap
            "b_haz": 1, "c_haz": 1, "swap_ok": 1,
            "idx": lane_idx,
        })
        d = Signal(decoded, name="dec")
        skid = Signal(cmd_shape, name="skid")
        skid_valid = Signal()
        src = Signal(cmd_shape)
        m.d.comb += src.eq(Mux(skid_valid, skid, self.cmd.payload))
        nxt = Signal(decoded)
        sw_ = src.word
        exec0 = src.kind == Command.EXEC
        legal0 = is_legal(m, sw_)
        run0 = exec0 & legal0
        used_b = sw_.op != Opcode.INDEX
        used_c = ((sw_.op != Opcode.INDEX) & (sw_.op != Opcode.OUT)
                  & ~((sw_.op == Opcode.LOGIC) & (sw_.fn != LogicFn.SEL)))
        a_code0 = sw_.a
        codes = [(a_code0, Const(1, 1)), (sw_.b, used_b), (sw_.c, used_c)]

        def sel_of(code):
            return Mux(code < N_REGS, 0, Mux(code == OPERAND_RP0, 1,
                                             Mux(code == OPERAND_RP1, 2, 3)))

        def k_of(code):
            return Mux((code >= OPERAND_CONST) & (code < OPERAND_CONST + N_CONSTS),
                       Array(self.config.consts)[(code - OPERAND_CONST)[:2]],
                       code[:4].as_signed())

        lane_mask = Signal(unsigned(8))
        m.d.comb += lane_mask.eq((1 << src.lane_bits) - 1)
        commutes = (((sw_.op == Opcode.LOGIC) & (sw_.fn != LogicFn.SEL))
                    | (((sw_.op == Opcode.ADD) | (sw_.op == Opcode.SUB)) & (sw_.s == 0)))
        m.d.comb += [
            nxt.kind.eq(src.kind), nxt.set.eq(src.set), nxt.word.eq(sw_),
            nxt.move.eq(src.move),
            nxt.exec.eq(exec0), nxt.legal.eq(legal0), nxt.run.eq(run0),
            nxt.need0.eq(run0 & Cat(*[(c == OPERAND_RP0) & u for c, u in codes]).any()),
            nxt.need1.eq(run0 & Cat(*[(c == OPERAND_RP1) & u for c, u in codes]).any()),
            nxt.index.eq(sw_.op == Opcode.INDEX),
            nxt.out.eq(sw_.op == Opcode.OUT),
            nxt.a_code.eq(a_code0),
            nxt.b_haz.eq(run0 & used_b & (sw_.op != Opcode.OUT) & (sw_.b < N_REGS)),
            nxt.c_haz.eq(run0 & used_c & (sw_.c < N_REGS)),
            nxt.swap_ok.eq(run0 & commutes & (sw_.b < N_REGS)),
        ]
        for x, (code, _) in zip("abc", codes, strict=True):
            m.d.comb += [getattr(nxt, f"{x}_reg").eq(code < N_REGS),
                         getattr(nxt, f"{x}_sel").eq(sel_of(code)),
                         getattr(nxt, f"{x}_k").eq(k_of(code))]
        for lane in range(n):
            m.d.comb += nxt.idx[lane].eq(Mux(
                sw_.b == IndexKind.PAR,
                src.index + ((Const(lane, range(n)) >> src.lane_shift) & lane_mask),
                src.index))
        issue = Signal()            # ``d`` leaves for E1 this cycle
        d_take = ~d.valid | issue
        m.d.comb += self.cmd.ready.eq(~skid_valid)
        with m.If(d_take):
            m.d.sync += [d.eq(nxt), d.valid.eq(skid_valid | self.cmd.valid),
                         skid_valid.eq(0)]
        with m.Elif(self.cmd.valid & ~skid_valid):
            m.d.sync += [skid.eq(self.cmd.payload), skid_valid.eq(1)]

        # ---- stage 1 (issue) ---------------------------------------------------------------
        w = d.word
        exec1 = d.exec
        run = d.run
        need0, need1 = d.need0, d.need1

        # The issue stage's decisions are registers: whether an operand is E2's result
        # (``hit``), W's (``w``) or a set's word (``on``), the interlock, the swap and the
        # forwarding into E2 are formed a cycle ahead, for the instruction that will be in ``d``
        # against the instructions that will be in E1, E2 and W (formed below, after the
        # mover), and the operands' selections are registered once per lane (:func:`_lane_copy`),
        # so the issue stage only multiplexes. ``ictl``: per lane; ``idec``: the rest.
        idec = Signal(_issue_dec_layout, name="idec")
        ictl_next = Signal(_issue_ctl_layout, name="ictl_next")
        d_next_valid = Signal(name="d_next_valid")

        # interlock: E1 reads ``b`` and ``c`` at its start, so an instruction whose ``b`` / ``c``
        # is the result of the instruction right before it (in E1, not done) waits one cycle;
        # ``a`` (and ``b`` of out, which E1 does not use) is forwarded into E2 instead. Where
        # ``a`` and ``b`` commute (max, min, and, or, xor; add and sub at s = 0), an instruction
        # whose ``b`` is that result and ``a`` is not swaps them and does not wait (a pooling
        # max behind the convolution's last MAC, an accumulating add): ``b2`` takes ``a``'s
        # value, ``a2`` is not used (``a`` comes from E2)
        s2_free = ~s2.valid | s2_move
        # an instruction waits while the mover has its register set (``set_ready``); a MOVE
        # waits for the mover to finish the one before
        set_ready = Signal(2, init=0b11)
        mv_idle = Signal()           # the mover is idle (a comb signal: 0 unless IDLE)
        ready = (s2_free & ~idec.hazard & set_ready.bit_select(d.set, 1)
                 & (~need0 | self.rp0.valid) & (~need1 | self.rp1.valid))
        m.d.comb += [
            issue.eq(d.valid & Mux(exec1, ready, mv_idle)),
            self.rp0.ready.eq(d.valid & ready & need0),
            self.rp1.ready.eq(d.valid & ready & need1),
            self.busy.eq(d.valid | skid_valid | s2.valid | s3.valid | ~mv_idle),
        ]

        # each operand's register read: a read port of each set, at the operand's register
        # (``b``'s is ``a``'s where they swap)
        ports = {x: [s.read_port(domain="comb") for s in sets] for x in "abc"}
        addrs = {"a": d.a_code[:3], "b": idec.b_addr, "c": w.c[:3]}
        consts = {"a": d.a_k, "b": idec.b_k, "c": d.c_k}
        for x in "abc":
            m.d.comb += [port.addr.eq(addrs[x]) for port in ports[x]]
        ops = []
        for lane in range(n):
            ctl = _lane_copy(m, _issue_ctl_layout, ictl_next, (Const(1, 1), d_next_valid),
                             lane % _COPY_FORMS, f"ictl{lane}")
            lane_ops = {}
            for x in "abc":
                f = getattr(ctl, x)
                # the register: W's result (flip-flops, not written into the set yet) in front
                # of the set's word, which reads 0 where not written since the set's clear
                other = Mux(f.w, s4_data[lane],
                            Mux(f.on[0], ports[x][0].data[lane], 0)
                            | Mux(f.on[1], ports[x][1].data[lane], 0))
                v = Signal(signed(32), name=f"op{x}{lane}")
                with m.Switch(f.sel):
                    with m.Case(0):
                        m.d.comb += v.eq(other)
                    with m.Case(1):
                        m.d.comb += v.eq(self.rp0.payload[lane])
                    with m.Case(2):
                        m.d.comb += v.eq(self.rp1.payload[lane])
                    with m.Default():
                        m.d.comb += v.eq(consts[x])
                lane_ops[x] = (v, f.hit)
            ops.append((lane_ops, ctl.index))
        # E1's registers take the issue stage's values whenever E1 is free (they matter only
        # where ``s2.valid`` is set): their enable does not wait for the handshake. E2's result
        # is selected by the last multiplexer in front of them, so that it passes one
        # multiplexer, not the whole chain
        with m.If(issue & exec1):
            m.d.sync += s2.valid.eq(run)
            with m.If(exec1 & ~d.legal):
                m.d.sync += self.error.eq(1)
        with m.Elif(s2_move):
            m.d.sync += s2.valid.eq(0)
        with m.If(s2_free):
            m.d.sync += [
                s2.set.eq(d.set),
                s2.word.eq(w),
                a_fwd.eq(idec.a_fwd),
                b_fwd.eq(idec.b_fwd),
                lut_second.eq(0),
                lut_third.eq(0),
                s2_hold.eq(issue & exec1 & run & (w.op == Opcode.LOOKUP)),
                lut_k2.eq(Mux(w.s <= _LUT_MAX_S, _lut_bound(w.s), 0)),
                lut_kon2.eq(w.s <= _LUT_MAX_S),
            ]
            for lane, (lane_ops, index) in enumerate(ops):
                (op_a, hit_a), (op_b, hit_b), (op_c, hit_c) = (lane_ops[x] for x in "abc")
                r = result[lane]
                m.d.sync += [
                    a2[lane].eq(Mux(hit_a, r, op_a)),
                    b2[lane].eq(Mux(hit_b, r, Mux(index, d.idx[lane], op_b))),
                    c2[lane].eq(Mux(hit_c, r, op_c)),
                ]

        # ---- the mover: a MOVE's save and restore of a register set ------------------------
        # A MOVE leaves the issue stage when the mover is idle; the mover takes it, clears its
        # set's ``set_ready`` (the set's instructions behind it wait), waits until no instruction
        # on that set is left in E1 or E2 (those of the lane group that ran on it), then saves
        # registers 0 .. regs-1 to the SRAM (one a cycle, from the set's fourth read port),
        # loads them (one SRAM read a cycle, each written into the set a cycle later) or clears
        # the set, and marks the set ready. It is the only user of the SRAM, which is read or
        # written, never both, in a cycle (one single-port macro).
        mv = Signal(move_layout(self.depth), name="mv")
        mv_set = Signal(name="mv_set")
        mv_i = Signal(range(N_REGS + 1), name="mv_i")
        mv_wpend = Signal(name="mv_wpend")      # the SRAM row read last cycle is to be written
        mv_done = Signal()                      # the mover is in DONE (a comb signal)
        save_ports = [x.read_port(domain="comb") for x in sets]
        m.d.comb += [port.addr.eq(mv_i[:3]) for port in save_ports]
        e_on_set = ((s2.valid & (s2.set == mv_set)) | (s3.valid & (s3.set == mv_set)))
        m.d.comb += [
            wr.addr.eq(mv.save_row + mv_i),
            # a register not written since its set's clear saves 0 (it reads 0)
            wr.data.eq(Mux(mv_set, Mux(written[1].bit_select(mv_i[:3], 1), save_ports[1].data, 0),
                           Mux(written[0].bit_select(mv_i[:3], 1), save_ports[0].data, 0))),
            rd.addr.eq(mv.load_row + mv_i),
            mv_wr.eq(Mux(mv_wpend, Mux(mv_set, 0b10, 0b01), 0)),
        ]
        m.d.sync += mv_wpend.eq(0)
        with m.If(mv_wpend):
            m.d.sync += mv_wreg.eq(mv_wreg + 1)
            for k in range(2):
                with m.If(mv_set == k):
                    m.d.sync += written[k].bit_select(mv_wreg, 1).eq(1)
        with m.FSM(name="mover"):
            with m.State("IDLE"):
                m.d.comb += mv_idle.eq(1)
                with m.If(issue & ~exec1):
                    m.d.sync += [mv.eq(d.move), mv_set.eq(d.set), mv_i.eq(0),
                                 set_ready.bit_select(d.set, 1).eq(0)]
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                with m.If(~e_on_set):
                    with m.If(mv.save & (mv.regs != 0)):
                        m.next = "SAVE"
                    with m.Elif(mv.load & (mv.regs != 0)):
                        m.d.sync += mv_wreg.eq(0)
                        m.next = "LOAD"
                    with m.Else():
                        m.next = "DONE"
            with m.State("SAVE"):
                m.d.comb += wr.en.eq((1 << len(wr.en)) - 1)
                m.d.sync += mv_i.eq(mv_i + 1)
                with m.If(mv_i + 1 == mv.regs):
                    m.d.sync += mv_i.eq(0)
                    with m.If(mv.load):
                        m.d.sync += mv_wreg.eq(0)
                        m.next = "LOAD"
                    with m.Else():
                        m.next = "DONE"
            with m.State("LOAD"):
                m.d.comb += rd.en.eq(1)
                m.d.sync += [mv_i.eq(mv_i + 1), mv_wpend.eq(1)]
                with m.If(mv_i + 1 == mv.regs):
                    m.next = "LAST"
            with m.State("LAST"):       # the last row read is written into the set
                m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += mv_done.eq(1)
                for k in range(2):
                    with m.If((mv_set == k) & mv.clear):
                        m.d.sync += written[k].eq(0)
                m.d.sync += set_ready.bit_select(mv_set, 1).eq(1)
                m.next = "IDLE"

        # ---- the issue stage's decisions, a cycle ahead ------------------------------------
        # Formed for the instruction in ``d`` next cycle (``nxt`` where ``d`` takes it, else
        # ``d``) against E1, E2 and W next cycle, from what each holds now and this cycle's
        # handshakes (the same updates as their registers'), each candidate in parallel and the
        # handshakes last: E1 next is ``d`` where it issues, else E1 unless it moves; E2 is E1
        # where it moves, else E2 unless it fires; W is E2 where it fires; a set's ``written``
        # is cleared by the mover's ``clear`` or set by its restores (a result entering W sets
        # its bit too, but W's result is selected in front of the set's word then)
        e1_issue = issue & exec1
        d_writer = d.run & (w.op != Opcode.OUT)
        cleared = [mv_done & mv.clear & (mv_set == k) for k in range(2)]

        def ahead(dd):
            """The decisions (``ictl``, ``idec``) for ``dd`` in ``d`` next cycle."""
            codes = {"a": dd.a_code, "b": dd.word.b, "c": dd.word.c}
            is_reg = {"a": dd.a_reg, "b": dd.b_reg, "c": dd.c_reg}
            sels = {"a": dd.a_sel, "b": dd.b_sel, "c": dd.c_sel}
            e1, fwd = {}, {}
            for x in "abc":
                r = codes[x][:3]
                in_e1 = s2_writer & (s2.set == dd.set) & (w2.d == r)
                in_e2 = s3_writes & (s3.set == dd.set) & (w3.d == r)
                e1[x] = is_reg[x] & Mux(e1_issue, d_writer & (d.set == dd.set) & (w.d == r),
                                        ~s2_move & in_e1)
                on = Cat(*[(dd.set == k) & ~cleared[k]
                           & (written[k].bit_select(r, 1)
                              | (mv_wpend & (mv_set == k) & (mv_wreg == r)))
                           for k in range(2)])
                fwd[x] = Cat(sels[x], is_reg[x] & Mux(s2_move, in_e1, ~s3_fire & in_e2),
                             s3_fire & in_e2, on)
            swap = dd.swap_ok & e1["b"] & ~e1["a"]
            b_fwd_ = Mux(swap, fwd["a"], fwd["b"])
            b_fwd_ = Cat(b_fwd_[:2], b_fwd_[2] & ~dd.index, b_fwd_[3:])
            ctl = Cat(fwd["a"], b_fwd_, fwd["c"], dd.index)
            dec_ = Cat((dd.b_haz & e1["b"] & ~swap) | (dd.c_haz & e1["c"]),
                       e1["a"] | swap, e1["b"] & dd.out,
                       Mux(swap, dd.a_code, dd.word.b)[:3], Mux(swap, dd.a_k, dd.b_k))
            return ctl, dec_

        ctl_nxt, dec_nxt = ahead(nxt)
        ctl_d, dec_d = ahead(d)
        m.d.comb += [
            ictl_next.eq(Mux(d_take, ctl_nxt, ctl_d)),
            d_next_valid.eq(Mux(d_take, skid_valid | self.cmd.valid, d.valid)),
        ]
        m.d.sync += idec.eq(Mux(d_take, dec_nxt, dec_d))
        return m
