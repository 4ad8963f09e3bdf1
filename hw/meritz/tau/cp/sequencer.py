"""The ranged-inner-product sequencer of the Compute Pipeline.

For each job (one parallel tile x one accumulation tile) the sequencer walks the lane groups that
the job names (``p_groups`` per parallel index, at most the kernel's ``group_shape``: a tile at the
edge of the parallel space runs only its groups that hold an output, see
:func:`meritz.tau.step_looper.edge_groups`); for each group it restores the group's registers
(``CLEAR`` on the first accumulation tile, ``LOAD`` from the partial-result SRAM otherwise), runs
every accumulation step of the tile, and saves the registers (``STORE``) unless this was the last
accumulation tile (output stationary, §V-B). At each step it issues the program range
``[begs[kf], ends[kl])`` chosen from the range table by how many innermost accumulation indices are
at their first / last value (§III-B, ``docs/isa.md``). The next step's range is selected when the
step before it issues its last instruction, so consecutive steps follow each other without a
bubble.

For timing, the next command is computed from flip-flops only: the first / last / wrap flags of
every accumulation index, the flags its next value will have, the step's range and the parallel
indices are registers kept with the counters; the range table's empty / one-instruction flags
are registers formed from the configuration; a job waits in an input register where its checks
are made; commands leave through two registers (one per cycle, two cycles after they are
formed): the first takes the command formed from the program word with a copy of the indices,
the second selects the index that an ``index`` instruction reads by the word's ``j``, so that
the program memory's read and that selection are in different cycles.

An instruction with ``x`` set (the indexed register ``rN+x``, ``docs/isa.md``) leaves with its
``d`` and its register ``a`` moved up by the step's register offset ``x = sum_j a_j * xstride_j``
(a configuration value per accumulation index) and ``x`` cleared: each term
``(a_j * xstride_j) mod 8`` is a register kept with ``a_j`` (stepped by ``xstride_j`` with it,
loaded with the origin's term formed on the job's way in), their sum is taken into ``form`` with
the command and added in the output register.

Accumulation tiles of one parallel tile must come in order and may split only the outermost
accumulation index (inner indices whole), so that every group sees its steps in the order of the
nested loops. A job with an empty extent or a range past the program is dropped with ``error``.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_lanes, check_range
from merit.isa import MAX_LEVELS, N_REGS
from meritz.tau.cp.simd import Command, Opcode, cmd_layout, instruction_layout, sram_depth

__all__ = ["Sequencer", "job_layout", "sequencer_config_layout",
           "sequencer_config"]

DIMS = MAX_LEVELS      # accumulation levels and parallel dimensions
INDEX = unsigned(16)


def job_layout():
    """One job: a parallel tile (its origin and the lane groups it runs per parallel index) and
    an accumulation tile (origin and extents)."""
    return data.StructLayout({
        "a_origin": data.ArrayLayout(INDEX, DIMS),
        "a_extent": data.ArrayLayout(INDEX, DIMS),
        "p_origin": data.ArrayLayout(INDEX, DIMS),
        "p_groups": data.ArrayLayout(INDEX, DIMS),
    })


def sequencer_config_layout(program_depth):
    """Per-kernel configuration of the sequencer."""
    addr = range(program_depth + 1)
    return data.StructLayout({
        "program": data.ArrayLayout(unsigned(32), program_depth),
        "begs": data.ArrayLayout(addr, DIMS + 1),
        "ends": data.ArrayLayout(addr, DIMS + 1),
        "a_shape": data.ArrayLayout(INDEX, DIMS),       # whole accumulation space (first/last)
        "group_shape": data.ArrayLayout(INDEX, DIMS),   # lane groups of a whole parallel tile
        "lane_bits": data.ArrayLayout(range(8), DIMS),  # log2 lanes along each parallel dim
        "lane_shift": data.ArrayLayout(range(8), DIMS),  # lane-number bit of each dim's lanes
        "regs": range(N_REGS + 1),                      # registers saved per group
        "xstride": data.ArrayLayout(range(N_REGS), DIMS),  # register stride of each a_j (x)
    })


def sequencer_config(program, a_shape, group_shape, lane_bits):
    """The configuration values of a :class:`merit.isa.Program` (a dict for ``.eq``/packing).

    ``a_shape`` has one extent per level of the program (it is extended with inner levels of
    extent 1 up to 6); ``group_shape`` / ``lane_bits`` have one entry per parallel dimension,
    outermost first (the innermost dimension takes the low lane-number bits).
    """
    prog = program.with_levels(DIMS)
    a_shape = tuple(a_shape) + (1,) * (DIMS - len(a_shape))
    pdims = len(group_shape)
    shifts, acc = [], 0
    for bits in reversed(lane_bits):
        shifts.insert(0, acc)
        acc += bits
    pad = DIMS - pdims
    return {
        "program": list(prog.words),
        "begs": list(prog.begs),
        "ends": list(prog.ends),
        "a_shape": list(a_shape),
        "group_shape": list(group_shape) + [1] * pad,
        "lane_bits": list(lane_bits) + [0] * pad,
        "lane_shift": shifts + [0] * pad,
        "regs": prog.regs,
        "xstride": list(prog.xstride),
    }


def _times_mod8(a, s):
    """(a * s) mod 8 of two 3-bit values by shift-add (three LUT levels, no multiplier)."""
    return sum(Mux(s[k], a << k, 0) for k in range(3))[:3]


def _is_successor(x, y):
    """``x + 1 == y`` for two unsigned values of one width, without a carry chain: from the
    low end, ``x + 1`` flips a run of ones of ``x`` to zeros and the zero above them to a one,
    so the bit pairs ``(x_i, y_i)`` read (1, 0) ... (1, 0), then one (0, 1), then equal bits.
    Each condition looks at two neighbouring bit pairs (one LUT each), then an AND of them."""
    width = len(x)
    ones = [x[i] & ~y[i] for i in range(width)]      # inside the run: (1, 0)
    flip = [~x[i] & y[i] for i in range(width)]      # its end: (0, 1)
    same = [~(x[i] ^ y[i]) for i in range(width)]
    terms = [ones[0] | flip[0], ~ones[width - 1]]    # the run ends inside the width
    for i in range(1, width):
        terms.append(Mux(ones[i - 1], ones[i] | flip[i], same[i]))
    return Cat(*terms).all()


def _sum_less_one(x, y):
    """``x + y - 1`` (one bit wider than the operands, modulo that width) with one carry chain:
    a carry-save step adds the -1 (all ones) to ``x`` and ``y`` bit by bit (sum ``~(x ^ y)``,
    carry ``x | y``), then one addition."""
    width = max(len(x), len(y)) + 1
    xs, ys = x.as_unsigned(), y.as_unsigned()
    low = len(xs ^ ys)
    return (Cat(~(xs ^ ys), Const((1 << (width - low)) - 1, width - low))
            + Cat(Const(0, 1), xs | ys))[:width]


class Sequencer(wiring.Component):
    """Issues the commands of the SIMD array for each job.

    Parameters
    ----------
    lanes : int
        N, a power of two.
    program_depth : int
        Instruction words the program memory holds (default 32).
    sram_bytes : int
        Capacity of the SIMD array's partial-result SRAM (default 5 KB); the sequencer addresses
        its ``sram_depth = 8 * sram_bytes / (32 N)`` rows.

    Members
    -------
    job : In(stream.Signature(job_layout()))
        Jobs, taken into the input register while it is empty or its job is starting; a job
        starts when the previous one has formed its last command.
    cmd : Out(stream.Signature(cmd_layout(lanes, sram_depth)))
        Commands to the SIMD array, from a register (behind a second one).
    config : In(sequencer_config_layout(program_depth))
        Held stable while jobs run.
    error : Out(1)
        Sticky: a job had an empty extent, no lane group or more groups than ``group_shape``,
        the range table is not monotone or points past the program (such jobs are dropped), or
        the groups' registers overflow the partial-result SRAM.
    idle : Out(1)
        No job in progress, waiting or in the output registers.
    """

    def __init__(self, *, lanes=32, program_depth=32, sram_bytes=5120):
        self.lanes = check_lanes(lanes)
        self.program_depth = check_range("program_depth", program_depth, 1, 64)
        self.sram_depth = sram_depth(lanes, sram_bytes)
        super().__init__({
            "job": In(stream.Signature(job_layout())),
            "cmd": Out(stream.Signature(cmd_layout(lanes, self.sram_depth))),
            "config": In(sequencer_config_layout(program_depth)),
            "error": Out(1),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        job = Signal(job_layout())
        a_cur = Array(Signal(INDEX, name=f"a{j}") for j in range(DIMS))     # global a_j
        g_cur = Array(Signal(INDEX, name=f"g{j}") for j in range(DIMS))     # group coordinate
        # Timing: the register offset's terms (a_j * xstride_j) mod 8 are registers kept with
        # a_j, stepped by xstride_j as a_j steps and loaded with the origin's term (formed on the
        # job's way in) when a_j goes back to its origin: no multiplier in front of ``form``
        x_cur = Array(Signal(range(N_REGS), name=f"x{j}") for j in range(DIMS))
        x_org = Array(Signal(range(N_REGS), name=f"x_org{j}") for j in range(DIMS))
        row_base = Signal(range(self.sram_depth + N_REGS * 2))
        # the SRAM rows of the group before (its save) and after (its restore ahead)
        prev_row = Signal(range(self.sram_depth + N_REGS * 2))
        next_row = Signal(range(self.sram_depth + N_REGS * 3))
        # the register set of the group (the groups of the stream alternate between the SIMD
        # array's two sets), and whether the group's set was restored by the group before's
        # MOVE (``restored``: every group of a job but the first)
        cur_set = Signal()
        restored = Signal()
        first_tile = Signal()
        # the job's last accumulation tile, or no registers: the group ends without saving (a
        # register set with the job; ``cfg.regs`` is held while jobs run)
        no_save = Signal()

        # Timing: everything the next command needs comes from flip-flops. Per accumulation
        # index, ``a_next`` = a_j + 1 and the flags ``first`` (a_j == 0), ``last`` (a_j + 1 ==
        # a_shape_j) and ``wrap`` (a_j + 1 == end of the tile) are registers updated with a_j; the
        # range of the current step (``addr`` at its ``beg``, ``end``) is loaded from the flags'
        # next values;
        # ``par`` holds p_origin_j + (g_j << lane_bits_j). The command goes out through two
        # registers (``form``, then ``cmd``'s: one command per cycle, two cycles later).
        a_next = Array(Signal(INDEX.width + 1, name=f"a_next{j}") for j in range(DIMS))
        par = Array(Signal(INDEX, name=f"par{j}") for j in range(DIMS))
        flags = data.StructLayout({"first": DIMS, "last": DIMS, "wrap": DIMS})
        now = Signal(flags)              # the flags of a_cur
        origin = Signal(flags)           # the flags of the job's a_origin
        o_next = Array(Signal(INDEX.width + 1, name=f"o_next{j}") for j in range(DIMS))
        # a_shape_j - 1 and a_end_j - 1 (valid where nonzero), held for the job
        s_less = Array(Signal(INDEX.width + 1, name=f"s_less{j}") for j in range(DIMS))
        e_less = Array(Signal(INDEX.width + 1, name=f"e_less{j}") for j in range(DIMS))
        # the same limits less one more (a_shape_j - 2, a_end_j - 2, modulo 2**16; none where
        # a_shape_j / a_end_j is 0): a step's ``ahead`` flags compare a_next_j itself with them
        # rather than a_next_j + 1 with the limits (no adder in front of the comparisons).
        # Formed from ``s_less`` / ``e_less`` in the cycle after a start (the FSM is in RESTORE
        # then: no step reads them before the cycle after), not on the job's way in
        s_less2 = Array(Signal(INDEX.width + 1, name=f"s_less2_{j}") for j in range(DIMS))
        e_less2 = Array(Signal(INDEX.width + 1, name=f"e_less2_{j}") for j in range(DIMS))

        def select(f):
            """(kf, kl): how many innermost indices are at their first / last value."""
            kf = Signal(range(DIMS + 1))
            kl = Signal(range(DIMS + 1))
            for k in range(DIMS + 1):               # the largest k wins (assigned last)
                with m.If(Cat(*[f.first[j] for j in range(DIMS - k, DIMS)], Const(1, 1)).all()):
                    m.d.comb += kf.eq(k)
                with m.If(Cat(*[f.last[j] for j in range(DIMS - k, DIMS)], Const(1, 1)).all()):
                    m.d.comb += kl.eq(k)
            return kf, kl

        end = Signal(range(self.program_depth + 1))
        # the program address, a register: the new range's ``beg`` when a step starts (start,
        # restart, advance), ``addr + 1`` within a step (assigned below, with the range)
        addr = Signal(range(self.program_depth + 1))
        word = Signal(unsigned(32))
        m.d.comb += word.eq(Array(cfg.program)[addr[:max(1, (self.program_depth - 1)
                                                         .bit_length())]])

        # next values of the flags and of the step's range: the FSM below raises ``advance``
        # (next step), ``restart`` (the group's first step) or ``start`` (a new job's first
        # step); each candidate comes from flip-flops, the FSM only selects
        advance, restart, start = Signal(), Signal(), Signal()
        stepped = Signal(flags)          # the flags after ``advance``
        # ``ahead``: the flags a_j would have at a_next_j (a_next_j == 0, == a_shape_j - 1,
        # == a_end_j - 1), registers loaded with a_next_j, so that the flags after a step are a
        # selection among registers, not a comparison
        ahead = Signal(flags)

        def ahead_of(x, s_lim, e_lim):
            """The flags of a_j = ``x`` (a_next_j's width) against the limits given."""
            low = x[:INDEX.width]
            return {"first": low == 0, "last": low == s_lim, "wrap": low == e_lim}

        def set_next(jj, value, s_lim=None, e_lim=None):
            """a_next_j <= ``value``, with its ``ahead`` flags."""
            flags_of = ahead_of(value, s_less[jj] if s_lim is None else s_lim,
                                e_less[jj] if e_lim is None else e_lim)
            m.d.sync += a_next[jj].eq(value)
            m.d.sync += [getattr(ahead, name)[jj].eq(v) for name, v in flags_of.items()]

        def inner_of(wrap):
            """Per index j: every index inside j wraps (``wrap[k]`` for all k > j)."""
            return Cat(*[Cat(*[wrap[k] for k in range(jj + 1, DIMS)], Const(1, 1)).all()
                         for jj in range(DIMS)])

        # ``inner``: the inner indices' wrap flags of ``now`` (as ``inner_of(now.wrap)``), a
        # register kept with ``now``, so that a step's enables are the FSM's ``advance`` and
        # one flip-flop, not an AND of the flags behind it
        # (reset: ``now`` all 0, only the innermost index has no inner indices)
        inner = Signal(DIMS, init=1 << (DIMS - 1))
        for jj in range(DIMS):
            for name in ("first", "last", "wrap"):
                m.d.comb += getattr(stepped, name)[jj].eq(
                    Mux(inner[jj], Mux(now.wrap[jj], getattr(origin, name)[jj],
                                        getattr(ahead, name)[jj]),
                        getattr(now, name)[jj]))

        # whether the range (begs[kf], ends[kl]) is empty / one instruction long, for every
        # (kf, kl): from the configuration alone, so that a new range's flags are a selection
        # by (kf, kl) rather than a comparison after the selection. The two tables are
        # registers, formed from the configuration every cycle: it is held while jobs run, and
        # a job starts at least one cycle after it is taken
        pairs = range(DIMS + 1)
        tables = []
        for name, test in (("empty", lambda b, e: b >= e), ("single", lambda b, e: b + 1 == e)):
            bits = Signal(len(pairs) ** 2, name=f"range_{name}")
            m.d.sync += bits.eq(Cat(*[test(cfg.begs[f], cfg.ends[k])
                                      for f in pairs for k in pairs]))
            tables.append(Array(Array(bits[f * len(pairs) + k] for k in pairs) for f in pairs))

        def step_range(f):
            """(beg, end, empty, last) of the step whose flags are ``f``."""
            kf, kl = select(f)
            return cfg.begs[kf], cfg.ends[kl], tables[0][kf][kl], tables[1][kf][kl]

        def to_origin(jj, o_a, o_a_next, s_lim=None, e_lim=None, o_x=None):
            m.d.sync += [a_cur[jj].eq(o_a), x_cur[jj].eq(x_org[jj] if o_x is None else o_x)]
            set_next(jj, o_a_next, s_lim, e_lim)

        # step advance: innermost index fastest, inside the tile
        steps_done = now.wrap.all()

        def advance_step():
            m.d.comb += advance.eq(1)
            for jj in range(DIMS):
                with m.If(inner[jj]):
                    with m.If(now.wrap[jj]):
                        to_origin(jj, job.a_origin[jj], o_next[jj])
                    with m.Else():
                        new = a_next[jj][:INDEX.width]
                        m.d.sync += [a_cur[jj].eq(new),
                                     x_cur[jj].eq((x_cur[jj] + cfg.xstride[jj])[:3])]
                        # a_next_j <= new + 1, its flags from ``new`` (see ``s_less2``)
                        m.d.sync += [a_next[jj].eq(new + 1),
                                     ahead.first[jj].eq(new == (1 << INDEX.width) - 1),
                                     ahead.last[jj].eq(new == s_less2[jj]),
                                     ahead.wrap[jj].eq(new == e_less2[jj])]

        # the same for the lane groups: gwrap_j (g_j + 1 == p_groups_j) and g_j + 1 are
        # registers, p_groups_j - 1 and the step of ``par`` (1 << lane_bits_j) are held
        gwrap = Signal(DIMS)
        # ``ginner[j]``: every group index inside j wraps (gwrap_k for all k > j), a register
        # kept with gwrap, so that each counter's enable is the group's end and one flip-flop
        # (formed from gwrap, the enables chained through the dimensions)
        ginner = Signal(DIMS, init=1 << (DIMS - 1))
        g_next = Array(Signal(INDEX.width + 1, name=f"g_next{j}") for j in range(DIMS))
        gs_less = Array(Signal(INDEX.width + 1, name=f"gs_less{j}") for j in range(DIMS))
        par_step = Array(Signal(INDEX, name=f"par_step{j}") for j in range(DIMS))
        out = self.cmd
        # the command formed from the program word goes into ``form`` (with a copy of the
        # indices it may read, taken with it), and from there into the output register, where
        # the index that an INDEX instruction reads is selected by the word's j: the program
        # word is read a cycle before its command leaves, and the program memory's read and the
        # index selection are in different cycles
        formed = data.StructLayout({"kind": Command, "set": 1, "word": instruction_layout,
                                    "move": out.payload.shape()["move"].shape})
        form = Signal(formed, name="form")
        form_valid = Signal()
        form_a = Array(Signal(INDEX, name=f"form_a{j}") for j in range(DIMS))
        form_par = Array(Signal(INDEX, name=f"form_par{j}") for j in range(DIMS))
        # the step's register offset x = sum_j a_j * xstride_j (mod 8: a program whose offsets
        # leave r0..r7 is refused by merit.isa; here the overflow sets ``error``), taken into
        # ``form`` with the command, added to ``d`` and a register ``a`` of an instruction with
        # ``x`` set in the output register, which clears ``x``: the SIMD array sees plain words
        form_x = Signal(range(N_REGS), name="form_x")
        x_now = Signal(range(N_REGS))
        m.d.comb += x_now.eq(sum(x_cur[jj] for jj in range(DIMS))[:3])
        take_out = ~out.valid | out.ready
        take = ~form_valid | take_out    # ``form`` takes a command this cycle
        emit = Signal()
        cmd = Signal(formed)
        with m.If(take):
            m.d.sync += [form_valid.eq(emit), form.eq(cmd)]
            m.d.sync += [form_a[jj].eq(a_cur[jj]) for jj in range(DIMS)]
            m.d.sync += [form_par[jj].eq(par[jj]) for jj in range(DIMS)]
            m.d.sync += form_x.eq(x_now)
        f_exec = form.kind == Command.EXEC
        f_word = form.word
        f_indexed = f_exec & f_word.zero[1]
        f_areg = f_word.a < N_REGS
        f_d = f_word.d + form_x
        f_a = f_word.a[:3] + form_x
        issued = Signal(instruction_layout, name="issued")
        m.d.comb += issued.eq(f_word)
        with m.If(f_indexed):
            m.d.comb += issued.zero.eq(f_word.zero[0])
            with m.If(f_word.op != Opcode.OUT):
                m.d.comb += issued.d.eq(f_d[:3])
            with m.If(f_areg):
                m.d.comb += issued.a.eq(f_a[:3])
        f_j = form.word.as_value()[25:28]
        f_par = form.word.as_value()[5]
        with m.If(take_out):
            m.d.sync += [
                out.valid.eq(form_valid),
                out.payload.kind.eq(form.kind),
                out.payload.set.eq(form.set),
                out.payload.word.eq(issued),
                out.payload.move.eq(form.move),
                out.payload.index.eq(Mux(f_exec, Mux(f_par, form_par[f_j], form_a[f_j]), 0)),
                out.payload.lane_shift.eq(Mux(f_exec, cfg.lane_shift[f_j], 0)),
                out.payload.lane_bits.eq(Mux(f_exec, cfg.lane_bits[f_j], 0)),
            ]
            with m.If(form_valid & f_indexed & ((f_d[3] & (f_word.op != Opcode.OUT))
                                                | (f_a[3] & f_areg))):
                m.d.sync += self.error.eq(1)    # an indexed register past r7
        m.d.comb += [
            cmd.set.eq(cur_set),
            cmd.move.regs.eq(cfg.regs),
            next_row.eq(row_base + cfg.regs),
        ]
        bad_job = Signal()
        p = self.job.payload
        m.d.comb += bad_job.eq(
            Cat(*[p.a_extent[jj] == 0 for jj in range(DIMS)],
                *[(p.p_groups[jj] == 0) | (p.p_groups[jj] > cfg.group_shape[jj])
                  for jj in range(DIMS)],
                *[cfg.ends[k] > self.program_depth for k in range(DIMS + 1)],
                *[cfg.begs[k] > cfg.begs[k - 1] for k in range(1, DIMS + 1)],
                *[cfg.ends[k] < cfg.ends[k - 1] for k in range(1, DIMS + 1)],
                cfg.begs[0] > cfg.ends[0]).any())

        def finish_group():
            """The group's last command issued: on to the next group, or to the next job."""
            m.d.sync += [row_base.eq(next_row), prev_row.eq(row_base), cur_set.eq(~cur_set),
                         restored.eq(~gwrap.all())]
            m.d.comb += restart.eq(1)
            for jj in range(DIMS):
                to_origin(jj, job.a_origin[jj], o_next[jj])
            m.d.sync += group_step.eq(1)
            with m.If(gwrap.all()):
                m.next = "IDLE"
            with m.Else():
                m.next = "AHEAD"

        # the next lane group's coordinates, a cycle after the group's end (``group_step``, a
        # register): their enables are that flip-flop and ``ginner``, not the FSM's decision.
        # Nothing reads ``par`` before then (the group's restore commands come first, and an
        # EXEC takes ``par`` into ``form`` at least two cycles after the end); a job that
        # starts in that cycle sets them again (its assignments come later and win)
        group_step = Signal()
        m.d.sync += group_step.eq(0)
        with m.If(group_step):
            for jj in range(DIMS):
                with m.If(ginner[jj]):
                    with m.If(gwrap[jj]):
                        m.d.sync += [g_cur[jj].eq(0), g_next[jj].eq(1),
                                     gwrap[jj].eq(gs_less[jj] == 0),
                                     par[jj].eq(job.p_origin[jj])]
                    with m.Else():
                        new = g_next[jj][:INDEX.width]
                        m.d.sync += [g_cur[jj].eq(new), g_next[jj].eq(new + 1),
                                     gwrap[jj].eq(new == gs_less[jj]),
                                     par[jj].eq(par[jj] + par_step[jj])]
            # gwrap after this group's end, from registers
            wrapped = [Mux(ginner[jj], Mux(gwrap[jj], gs_less[jj] == 0,
                                           g_next[jj][:INDEX.width] == gs_less[jj]), gwrap[jj])
                       for jj in range(DIMS)]
            m.d.sync += [ginner[jj].eq(Cat(*wrapped[jj + 1:], Const(1, 1)).all())
                         for jj in range(DIMS)]

        def end_steps():
            """The group's steps issued: the job's last group saves its set now (a MOVE; the
            others' sets are saved by the next group's MOVE)."""
            with m.If(no_save | ~gwrap.all()):
                finish_group()
            with m.Else():
                m.next = "SAVE"

        # the job input register: a job is taken while the register is empty or being accepted,
        # with what the FSM needs from it (the bad-job check, the flags of its origin, the held
        # limits) computed on the way in
        wide = unsigned(INDEX.width + 1)
        program_addr = range(self.program_depth + 1)
        range_layout = data.StructLayout({"beg": program_addr, "end": program_addr,
                                          "empty": 1, "single": 1})
        prep_layout = data.StructLayout({
            "job": job_layout(), "bad": 1, "origin": flags, "first_tile": 1, "end_carry": DIMS,
            "o_next": data.ArrayLayout(wide, DIMS), "s_less": data.ArrayLayout(wide, DIMS),
            "e_less": data.ArrayLayout(wide, DIMS), "gs_less": data.ArrayLayout(wide, DIMS),
            "par_step": data.ArrayLayout(INDEX, DIMS), "gwrap": DIMS,
            "x_org": data.ArrayLayout(range(N_REGS), DIMS),
        })
        prep = Signal(prep_layout)
        # the range of the job's first step (its origin's), selected when the job starts and
        # kept for the restarts of its groups
        origin_range = Signal(range_layout)
        pend = Signal(prep_layout)
        pend_valid = Signal()
        none = 1 << INDEX.width     # never equal to a value of a_j + 1 (at most 2**16)
        m.d.comb += [prep.job.eq(p), prep.bad.eq(bad_job),
                     prep.first_tile.eq(Cat(*[p.a_origin[jj] == 0 for jj in range(DIMS)]).all())]
        for jj in range(DIMS):
            o, e = p.a_origin[jj], p.a_extent[jj]
            end_less = _sum_less_one(o, e)
            shape = cfg.a_shape[jj]
            gshape = p.p_groups[jj]
            m.d.comb += [
                prep.end_carry[jj].eq((o + e)[INDEX.width]),
                prep.origin.first[jj].eq(o == 0),
                # ``o + 1 == shape`` and ``o + 1 == a_end`` without an adder in front of the
                # comparison (the second is ``e == 1`` unless ``o + 1`` leaves 16 bits)
                prep.origin.last[jj].eq(_is_successor(o, shape)),
                prep.origin.wrap[jj].eq((e == 1) & ~o.all()),
                prep.o_next[jj].eq(o + 1),
                prep.s_less[jj].eq(Mux(shape == 0, none, shape - 1)),
                # ``a_end - 1`` is ``o + e - 1`` modulo 2**16 (one carry chain), ``a_end == 0``
                # that it is all ones
                prep.e_less[jj].eq(Mux(end_less[:INDEX.width].all(), none,
                                       end_less[:INDEX.width])),
                prep.gs_less[jj].eq(Mux(gshape == 0, none, gshape - 1)),
                prep.par_step[jj].eq(Const(1, 1) << cfg.lane_bits[jj]),
                prep.gwrap[jj].eq(gshape == 1),
                prep.x_org[jj].eq(_times_mod8(o[:3], cfg.xstride[jj])),
            ]

        # restart after advance: the group's last step ends the steps
        m.d.sync += inner.eq(Mux(start, inner_of(pend.origin.wrap),
                                 Mux(restart, inner_of(origin.wrap),
                                     Mux(advance, inner_of(stepped.wrap), inner))))
        m.d.sync += now.eq(Mux(start, pend.origin, Mux(restart, origin,
                                                         Mux(advance, stepped, now))))
        # the group's first range: start and restart go to RESTORE, which issues no EXEC, so
        # the range is loaded a cycle later (``reload``, a register) from ``origin_range``, a
        # register loaded at the job's start: the range selected after a start or restart is
        # a register's, and only the range after a step is selected in front of ``addr``
        reload = Signal()
        started = Signal()          # the reload after a start (not a restart)
        m.d.sync += [reload.eq(start | restart), started.eq(start)]
        # the range of the waiting job's origin, formed every cycle (registered without an
        # enable); the reload after a start takes it and keeps it in ``origin_range``
        pend_range = Signal(range_layout)
        fields = ("beg", "end", "empty", "single")
        m.d.sync += [pend_range[x].eq(v)
                     for x, v in zip(fields, step_range(pend.origin), strict=True)]
        # the job's last tile (``a_origin + a_extent == a_shape`` in every dimension: then the
        # group ends without a save), formed every cycle from the waiting job's registers
        # (``e_less == s_less``, the end and the shape less one, and no carry out of the end)
        # rather than on the job's way in; the reload after a start sets ``no_save`` from it,
        # before the group's steps can end (RESTORE comes first)
        pend_last = Signal()
        m.d.sync += pend_last.eq(Cat(*[~pend.end_carry[jj] & (pend.e_less[jj] == pend.s_less[jj])
                                       for jj in range(DIMS)]).all())
        with m.If(started):
            m.d.sync += [origin_range.eq(pend_range),
                         no_save.eq(pend_last | (cfg.regs == 0))]
            for jj in range(DIMS):
                m.d.sync += [
                    limit.eq(Mux(less[INDEX.width], less, (less - 1)[:INDEX.width]))
                    for limit, less in ((s_less2[jj], s_less[jj]), (e_less2[jj], e_less[jj]))]
        ranges = [tuple(Mux(started, pend_range[x], origin_range[x]) for x in fields),
                  step_range(stepped)]
        # the step's range: its end held, its beg loaded into ``addr``
        m.d.sync += end.eq(Mux(reload, ranges[0][1], Mux(advance, ranges[1][1], end)))
        # ``addr >= end`` (an empty range) and ``addr + 1 == end`` (the step's last instruction)
        # as registers: a new range (start, restart, advance: ``addr`` = its ``beg``) brings the
        # comparison of its own ``beg`` and ``end`` (from ``tables``, by the same selection as
        # the range); a step within the range (``addr`` + 1) brings ``addr + 2 == end``;
        # anything else keeps them
        step_in = Signal()
        m.d.sync += addr.eq(Mux(reload, ranges[0][0],
                                Mux(advance, ranges[1][0], Mux(step_in, addr + 1, addr))))
        at_empty = Signal(init=1)       # reset: addr = end = 0
        at_last = Signal()
        candidates = [r[2:] for r in ranges]
        for k, flag in enumerate((at_empty, at_last)):
            m.d.sync += flag.eq(Mux(reload, candidates[0][k],
                                Mux(advance, candidates[1][k],
                                    Mux(step_in, Const(0) if k == 0 else addr + 2 == end,
                                        flag))))
        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(~out.valid & ~form_valid & ~pend_valid)
                with m.If(pend_valid):
                    m.d.sync += pend_valid.eq(0)
                    with m.If(pend.bad):
                        m.d.sync += self.error.eq(1)
                    with m.Else():
                        q = pend.job
                        for jj in range(DIMS):
                            m.d.sync += [
                                o_next[jj].eq(pend.o_next[jj]),
                                s_less[jj].eq(pend.s_less[jj]),
                                e_less[jj].eq(pend.e_less[jj]),
                                par[jj].eq(q.p_origin[jj]),
                                par_step[jj].eq(pend.par_step[jj]),
                                g_next[jj].eq(1),
                                gs_less[jj].eq(pend.gs_less[jj]),
                                x_org[jj].eq(pend.x_org[jj]),
                            ]
                            to_origin(jj, q.a_origin[jj], pend.o_next[jj], pend.s_less[jj],
                                      pend.e_less[jj], pend.x_org[jj])
                        m.d.comb += start.eq(1)
                        m.d.sync += [
                            job.eq(q),
                            origin.eq(pend.origin),
                            gwrap.eq(pend.gwrap),
                            *[ginner[jj].eq(Cat(pend.gwrap[jj + 1:], Const(1, 1)).all())
                              for jj in range(DIMS)],
                            first_tile.eq(pend.first_tile),
                            row_base.eq(0),
                            restored.eq(0),
                        ]
                        m.d.sync += [g_cur[jj].eq(0) for jj in range(DIMS)]
                        m.next = "RESTORE"
            with m.State("RESTORE"):
                # the job's first group: its own set restored (cleared on the first
                # accumulation tile, else loaded from its rows), its instructions wait for it
                m.d.comb += [emit.eq(1), cmd.kind.eq(Command.MOVE),
                             cmd.move.clear.eq(first_tile), cmd.move.load.eq(~first_tile),
                             cmd.move.load_row.eq(row_base)]
                with m.If(take):
                    m.next = "AHEAD"
            with m.State("AHEAD"):
                # every group: the other set (that of the groups before and after it) saved
                # for the group before, unless it is the job's first or the job its last
                # accumulation tile, and restored for the group after, if the job has one
                # (the group's wrap flags are stepped in this cycle after a group's end:
                # ``wrapped``, their next value, then)
                last_group = Mux(group_step, Cat(*wrapped).all(), gwrap.all())
                with m.If(next_row > self.sram_depth):
                    m.d.sync += self.error.eq(1)   # more groups x registers than SRAM rows
                m.d.comb += [emit.eq(1), cmd.kind.eq(Command.MOVE), cmd.set.eq(~cur_set),
                             cmd.move.save.eq(restored & ~no_save), cmd.move.save_row.eq(prev_row),
                             cmd.move.clear.eq(~last_group & first_tile),
                             cmd.move.load.eq(~last_group & ~first_tile),
                             cmd.move.load_row.eq(next_row)]
                with m.If(take):
                    m.next = "STEPS"
            with m.State("STEPS"):
                with m.If(at_empty):               # empty range: next step, no command
                    advance_step()
                    with m.If(steps_done):
                        end_steps()
                with m.Else():
                    m.d.comb += [
                        emit.eq(1),
                        cmd.kind.eq(Command.EXEC),
                        cmd.word.eq(word),
                    ]
                    with m.If(take):
                        with m.If(at_last):
                            advance_step()
                            with m.If(steps_done):
                                end_steps()
                        with m.Else():
                            m.d.comb += step_in.eq(1)
            with m.State("SAVE"):
                m.d.comb += [emit.eq(1), cmd.kind.eq(Command.MOVE),
                             cmd.move.save.eq(1), cmd.move.save_row.eq(row_base)]
                with m.If(take):
                    finish_group()
        m.d.comb += self.job.ready.eq(~pend_valid | fsm.ongoing("IDLE"))
        with m.If(self.job.valid & self.job.ready):
            m.d.sync += [pend_valid.eq(1), pend.eq(prep)]
        return m
