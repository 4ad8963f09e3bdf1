"""The dispatcher of MERIT-z: parallel tiles to TAUs, and the one "done" (§V-A of the MERIT paper).

On ``run`` it walks the tile grid of the parallel space (origins ``0, p_tile, 2 p_tile, ...``
below ``p_size`` per index, row-major, last index fastest) and hands each tile to a TAU: every
TAU has a one-tile slot, and the next tile goes to an empty slot, chosen round-robin from the
last one filled. A TAU therefore gets work as fast as it accepts it (dynamic, like MIMORI's
``ParallelBlockLooper_mc``); every accumulation tile of a parallel tile runs on the TAU that got
it (output stationary), so the TAU count changes speed, never results.

**Operand sharing** (``share_log2`` > 0): the TAUs form groups of ``2**share_log2`` (TAUs ``i``
with the same ``i >> share_log2``), and a group is dealt at once, when all its slots are empty:
its first TAU (the leader, which fetches the shared slot ``share_slot`` for the group, see
:mod:`meritz.top`) takes the next tile, each other TAU the next tile of the walk if its origin
agrees with the leader's on every parallel index the shared slot moves along (a non-zero
stride), so the shared footprints are identical; a TAU left without such a tile gets a **void
tile** (those indices of the leader's origin, every other index at ``p_size``: it loads and
computes in step with its group and writes nothing, since the WP masks outputs outside the
parallel space). ``share_log2`` = 0 is the plain dealing above (groups of one).

**Whole tiles first** (1-D groups, ``share_order`` = 1): the members of a group take its tiles
in lock step (each job's shared rows arrive once every member has room for them, and the RP
tile FIFOs hold a few jobs of a tile's dozens), so a group takes as long as its largest tile, and
a unit mixing whole tiles with edge tiles (which skip their warps outside the space) leaves the
edge tiles' TAUs waiting. The walk therefore splits each *run* (the tiles at one point of the
indices up to the innermost one the shared slot moves along with more than one tile, which a
group may take together) in two: first its tiles whole along every inner index, then its edge
tiles, each row-major; the walk steps over a tile of the other half in a cycle
(:func:`merit.compile.share_order_key` is the order; the compiler sets the bit where it shortens
the groups' waits, :func:`merit.compile.share_order`). Which TAU computes which tile changes,
never a result (output stationary).

**Two-dimensional sharing** (``share_log2`` and ``share2_log2`` > 0, :func:`share_shape`): two
slots are shared, each by its own groups: a **block** of ``g_1 x g_2`` TAUs (``g_1 =
2**share_log2`` on the low TAU-index bits, ``x``; ``g_2 = 2**share2_log2`` on the next, ``y``) is
dealt at once, when all its slots are empty, in the block walk of
:func:`merit.compile.share_walk`: the parallel indices split into ``X`` (those ``share_slot``
does not move along), ``Y`` (those ``share2_slot`` does not move along, less ``X``) and ``R``
(the rest). A block takes the tiles ``(x, y)`` of ``g_1`` consecutive steps of the row-major walk
over ``X`` and ``g_2`` of the walk over ``Y``, at one point of ``R``: the TAUs of a block's row
(same ``y``) agree on every index ``share_slot`` moves along, those of a column on
``share2_slot``'s. Blocks follow each other ``X`` fastest, then ``Y``, then ``R``. A row or column
past the end of its walk gets **void tiles** (that walk's indices at ``p_size``). Only whole
blocks take tiles (``share_log2 + share2_log2`` is cut to ``log2 taus``, the second first).

**The block walk with one shared slot** (``share_block`` = 1, ``share_log2`` > 0,
``share2_log2`` = 0): the same walk with ``g_2 = 1``: ``X`` the indices ``share_slot`` does not
move along, ``Y`` empty, ``R`` the rest, so a group of ``g_1`` TAUs takes ``g_1`` consecutive
tiles of the walk over ``X`` at one point of ``R``, and TAU ``x`` of every group always gets the
``x``-th of them (each TAU keeps its place in the walk: an operand that moves only along ``R``
is the same on each TAU job after job). Groups are dealt whole, as 2-D blocks.

``finished`` pulses once every tile has been taken and every TAU is ``idle``. The TAU contract:
``idle`` is low from the cycle after a tile transfer until that tile's last write response has
arrived (so "finished" means the last write response, not the last instruction).
``stop`` (a flush) empties the slots and ends the walk; the TAUs are reset at the same time.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_taus
from meritz import kernelcfg
from meritz.arbiter import round_robin
from meritz.tau.tile_looper import tile_layout

__all__ = ["Dispatcher", "share_shape"]

P = kernelcfg.P_INDICES


def share_shape(m, cfg, taus):
    """``(two, (log2_1, log2_2))``: whether the tiles are dealt on the block walk (2-D sharing,
    or one slot with ``share_block``), and the group sizes as the processor deals them (4-bit
    signals). 1-D: ``share_log2`` cut to ``ceil(log2 taus)`` (the last group may be partial).
    Block walk: ``share_log2`` cut to ``floor(log2 taus)``, then ``share2_log2`` (0 with one
    slot) to what is left (a block is whole)."""
    whole, top = taus.bit_length() - 1, (taus - 1).bit_length()
    two = Signal(name="share_2d")
    first, second = Signal(4, name="share_log2_1"), Signal(4, name="share_log2_2")
    m.d.comb += two.eq((cfg.share_log2 != 0) & ((cfg.share2_log2 != 0) | cfg.share_block))
    with m.If(two):
        m.d.comb += first.eq(Mux(cfg.share_log2 > whole, whole, cfg.share_log2))
        m.d.comb += second.eq(Mux(cfg.share2_log2 > whole - first, whole - first,
                                  cfg.share2_log2))
    with m.Else():
        m.d.comb += first.eq(Mux(cfg.share_log2 > top, top, cfg.share_log2))
    return two, (first, second)


class Dispatcher(wiring.Component):
    """Walks the parallel tile grid and deals the tiles to ``taus`` TAUs.

    Parameters
    ----------
    taus : int
    rp0_slots, rp1_slots, outputs, instructions : int
        As for :func:`meritz.kernelcfg.layout` (the dispatcher reads ``p_size`` and ``p_tile``).

    Members
    -------
    config : In(kernelcfg.layout(...))
    run : In(1)
        Pulse: start walking (ignored while busy).
    stop : In(1)
        Drop the slots and stop.
    tiles : Out(stream.Signature(tile_layout())).array(taus)
        One stream per TAU.
    idle : In(taus)
        Per TAU: nothing in flight (see the module docstring).
    busy : Out(1)
    finished : Out(1)
        Pulse: every tile taken and every TAU idle.
    count : Out(32)
        Tiles of the grid taken by TAUs since ``run`` (void tiles not counted).
    """

    def __init__(self, *, taus, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._taus = check_taus(taus)
        self._slots = (rp0_slots, rp1_slots)
        self._max_log2 = (taus - 1).bit_length()
        self._layout = kernelcfg.layout(rp0_slots=rp0_slots, rp1_slots=rp1_slots,
                                        outputs=outputs, instructions=instructions)
        super().__init__({
            "config": In(self._layout),
            "run": In(1),
            "stop": In(1),
            "tiles": Out(stream.Signature(tile_layout())).array(taus),
            "idle": In(taus),
            "busy": Out(1),
            "finished": Out(1),
            "count": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, n = self.config, self._taus
        # a position of the walk on each index, with its next step's wrap flags held beside it
        # (``_Pos``); ``zero`` (registered: the configuration alone, used from the cycle after
        # ``run``, which loads ``start`` from the configuration itself) and ``stepped`` the
        # candidates, formed from registers. The walk's multiplexers carry the step as a mark
        # (``stepped``): its value and flags (``step_fields``: an adder and two comparisons of
        # ``origin``) are picked behind them, in front of each position register
        # (``_Pos.load``), so that the carry chains run beside the walk's choices
        origin = [_Pos.register(m, f"origin{j}") for j in range(P)]
        start = [_Pos.of(Const(0, 16), cfg.p_tile[j], cfg.p_size[j]) for j in range(P)]
        zero = [_Pos(f"zero{j}") for j in range(P)]
        m.d.sync += [zero[j].eq(start[j]) for j in range(P)]
        # the next tile's flags: value + 2 p_tile against p_size, as value against p_size -
        # 2 p_tile (registered from the configuration): one comparison, no adder before it
        past2 = [Signal(signed(18), name=f"past2_{j}") for j in range(P)]
        m.d.sync += [past2[j].eq(cfg.p_size[j] - (cfg.p_tile[j] << 1)) for j in range(P)]
        step_fields = [((origin[j].value + cfg.p_tile[j])[:16], origin[j].value >= past2[j],
                        origin[j].value > past2[j]) for j in range(P)]
        stepped = [_Pos.step() for _ in range(P)]
        walking = Signal()          # origin holds a tile not yet placed in a slot
        filling = Signal()          # the followers of a group are being dealt
        m.d.comb += self.busy.eq(walking | filling
                                 | Cat(self.tiles[i].valid for i in range(n)).any())

        # next origin: the innermost index that does not wrap steps, the inner ones restart
        wraps = [origin[j].wrap for j in range(P)]
        # the position after a step on index j: the next tile, or 0 where the index wraps
        nexts = [_Pos.mux(wraps[j], zero[j], stepped[j]) for j in range(P)]
        last_tile = Cat(wraps).all()

        # 1-D groups: whole tiles first (module docstring). ``inner``: the indices after the
        # innermost one that the shared slot moves along and that has more than one tile (a
        # run: the tiles a group may take together); ``second``: the walk of a run's edge tiles
        inner = [Signal(name=f"inner{j}") for j in range(P)]
        ordered = Signal()
        second = Signal()
        run_end = Signal()
        skip = Signal()

        def advance():
            with m.If(ordered & run_end & ~second):
                # the run's whole tiles done: its edge tiles, from the run's first position
                m.d.sync += second.eq(1)
                m.d.comb += [origin[j].d.eq(_Pos.mux(inner[j], zero[j], origin[j]))
                             for j in range(P)]
            with m.Else():
                with m.If(run_end):
                    m.d.sync += second.eq(0)
                for j in range(P):
                    inner_wrap = Cat(wraps[j + 1:]).all() if j + 1 < P else 1
                    with m.If(inner_wrap):
                        m.d.comb += origin[j].d.eq(nexts[j])
                with m.If(last_tile):
                    m.d.sync += walking.eq(0)

        # groups: TAUs i with the same i >> share_log2; the parallel indices the shared slot
        # depends on (a stride on them) must agree across the tiles of a group
        slots = [cfg.rp0[k] for k in range(self._slots[0])] + \
                [cfg.rp1[k] for k in range(self._slots[1])]
        shared = Signal(kernelcfg.slot_layout())
        shared2 = Signal(kernelcfg.slot_layout())
        padded = Array(s.as_value() for s in slots + [slots[-1]] * (4 - len(slots)))
        m.d.comb += [shared.eq(padded[cfg.share_slot]), shared2.eq(padded[cfg.share2_slot])]
        # what depends on the configuration alone is registered (one cycle behind it: the
        # configuration is written at least two cycles before ``run``), so the walk's choices
        # start at flip-flops
        two_c, log2s_c = share_shape(m, cfg, n)
        two = Signal(name="two_r")
        log2s = [Signal(4, name=f"share_log2_{k + 1}_r") for k in range(2)]
        m.d.sync += [two.eq(two_c), log2s[0].eq(log2s_c[0]), log2s[1].eq(log2s_c[1])]
        log2 = Signal(range(8))
        m.d.sync += log2.eq(log2s_c[0] + log2s_c[1])
        dep = [Signal(name=f"dep{j}") for j in range(P)]
        m.d.sync += [dep[j].eq((cfg.share_log2 != 0) & (shared.stride[j] != 0))
                     for j in range(P)]
        moving = [(cfg.share_log2 != 0) & (shared.stride[j] != 0)
                  & (cfg.p_tile[j] < cfg.p_size[j]) for j in range(P)]
        m.d.sync += [inner[j].eq(~Cat(moving[j:]).any()) for j in range(P)]
        m.d.sync += ordered.eq(~two_c & (log2s_c[0] != 0) & cfg.share_order)
        m.d.comb += run_end.eq(Cat(wraps[j] | ~inner[j] for j in range(P)).all())
        edge = Cat(inner[j] & origin[j].over for j in range(P)).any()
        m.d.comb += skip.eq(ordered & walking & (edge != second))
        lead = [Signal(name=f"lead{i}") for i in range(n)]
        ends = [Signal(range(n + 1), name=f"group_end{i}") for i in range(n)]
        for i in range(n):
            with m.Switch(log2):
                for k in range(self._max_log2 + 1):
                    with m.Case(k):
                        size = 1 << k
                        # 2-D: only whole blocks take tiles
                        whole = i - i % size + size <= n
                        m.d.comb += [lead[i].eq((i % size == 0) & (Const(whole) | ~two)),
                                     ends[i].eq(min(i - i % size + size, n))]

        # a group whose every slot is empty takes the next tile (its first TAU), round-robin
        ready = Cat(lead[i] & Cat(~self.tiles[k].valid | (k >= ends[i])
                                  for k in range(i, n)).all() for i in range(n))
        last = Signal(range(max(n, 2)))
        free, pick = round_robin(m, ready, last, n, "pick")
        group = [_Pos.register(m, f"group_origin{j}") for j in range(P)]
        member = Signal(range(n + 1))
        member_end = Signal(range(n + 1))
        real = Signal(n)            # the slot holds a tile of the grid (not a void one)

        def place(i, values, is_real):
            m.d.sync += [self.tiles[i].valid.eq(1), real[i].eq(is_real),
                         *(self.tiles[i].payload[j].eq(values[j]) for j in range(P))]

        # 2-D: the block walk. ``origin`` holds the walk's position: on X the row's cursor, on
        # Y the column's, on R the block's point; ``group`` the block's X and Y corner, ``after``
        # the X position after its first row (the next block's corner); ``x_end`` / ``y_end``:
        # the cursor ran past the end of its walk (void tiles)
        on_x = [Signal(name=f"on_x{j}") for j in range(P)]
        on_y = [Signal(name=f"on_y{j}") for j in range(P)]
        on_r = [Signal(name=f"on_r{j}") for j in range(P)]
        # one shared slot (``share2_log2`` 0): no Y, every index the slot moves along is R
        one = cfg.share2_log2 == 0
        for j in range(P):
            m.d.sync += [on_x[j].eq(shared.stride[j] == 0),
                         on_y[j].eq((shared.stride[j] != 0) & (shared2.stride[j] == 0) & ~one),
                         on_r[j].eq((shared.stride[j] != 0) & ((shared2.stride[j] != 0) | one))]
        after = [_Pos.register(m, f"after{j}") for j in range(P)]
        after_end = Signal()
        x_end, y_end = Signal(), Signal()
        xk = Signal(8)
        yk = Signal(8)
        # the block's last column / row: flip-flops, set as xk / yk step (against the last
        # counts, registered from the configuration) or restart
        row_last, col_last = Signal(8), Signal(8)
        m.d.sync += [row_last.eq((Const(1, 9) << log2s_c[0]) - 1),
                     col_last.eq((Const(1, 9) << log2s_c[1]) - 1)]
        row_end, col_end = Signal(), Signal()

        def step(on):
            """The next position of ``origin`` on the indices ``on`` (row-major), and whether
            the walk wraps (past its end)."""
            out = [_Pos(f"step_{on[0].name}_{j}", comb=True) for j in range(P)]
            wrap = [wraps[j] | ~on[j] for j in range(P)]
            for j in range(P):
                inner = Cat(wrap[j + 1:]).all() if j + 1 < P else 1
                m.d.comb += out[j].eq(_Pos.mux(on[j] & inner, nexts[j], origin[j]))
            return out, Cat(wrap).all()

        step_x, wrap_x = step(on_x)
        step_y, wrap_y = step(on_y)
        step_r, wrap_r = step(on_r)
        block_origin = [Mux(on_x[j] & x_end | on_y[j] & y_end, cfg.p_size[j], origin[j].value)
                        for j in range(P)]
        block_real = ~x_end & ~y_end

        def deal_2d():
            """``origin`` after the member just placed (``xk``, ``yk``)."""
            with m.If(~row_end):
                m.d.sync += [xk.eq(xk + 1), row_end.eq(xk + 1 == row_last),
                             x_end.eq(x_end | wrap_x)]
                m.d.comb += [origin[j].d.eq(_Pos.mux(on_x[j], step_x[j], origin[j]))
                             for j in range(P)]
            with m.Else():
                m.d.sync += [xk.eq(0), row_end.eq(log2s[0] == 0), x_end.eq(0)]
                next_x = [_Pos.mux(yk == 0, step_x[j], after[j]) for j in range(P)]
                x_done = Mux(yk == 0, x_end | wrap_x, after_end)
                with m.If(yk == 0):
                    m.d.comb += [after[j].d.eq(step_x[j]) for j in range(P)]
                    m.d.sync += after_end.eq(x_end | wrap_x)
                with m.If(~col_end):
                    # the next row of the block: X back to the block's corner, Y one step
                    m.d.sync += [yk.eq(yk + 1), col_end.eq(yk + 1 == col_last),
                                 y_end.eq(y_end | wrap_y)]
                    m.d.comb += [origin[j].d.eq(_Pos.mux(on_x[j], group[j],
                                                       _Pos.mux(on_y[j], step_y[j], origin[j])))
                                 for j in range(P)]
                with m.Else():
                    # the next block: X on, else X from 0 and Y on, else both from 0 and R on
                    m.d.sync += [yk.eq(0), col_end.eq(log2s[1] == 0), y_end.eq(0),
                                 filling.eq(0)]
                    with m.If(~x_done):
                        m.d.comb += [origin[j].d.eq(_Pos.mux(on_x[j], next_x[j],
                                                           _Pos.mux(on_y[j], group[j],
                                                                    origin[j])))
                                     for j in range(P)]
                        m.d.comb += [group[j].d.eq(_Pos.mux(on_x[j], next_x[j], group[j]))
                                     for j in range(P)]
                    with m.Elif(~(y_end | wrap_y)):
                        m.d.comb += [origin[j].d.eq(_Pos.mux(on_x[j], zero[j],
                                                           _Pos.mux(on_y[j], step_y[j],
                                                                    origin[j])))
                                     for j in range(P)]
                        m.d.comb += [group[j].d.eq(_Pos.mux(on_x[j], zero[j],
                                                          _Pos.mux(on_y[j], step_y[j],
                                                                   group[j])))
                                     for j in range(P)]
                    with m.Else():
                        m.d.comb += [origin[j].d.eq(_Pos.mux(on_r[j], step_r[j], zero[j]))
                                     for j in range(P)]
                        m.d.comb += [group[j].d.eq(zero[j]) for j in range(P)]
                        with m.If(wrap_r):
                            m.d.sync += walking.eq(0)

        with m.If(skip):
            advance()       # a tile of the run's other walk (whole / edge): passed over
        with m.Elif(two & walking & ~filling & free):
            m.d.sync += [last.eq(pick), member.eq(pick + 1), member_end.eq(Array(ends)[pick]),
                         filling.eq(1)]
            for i in range(n):
                with m.If(pick == i):
                    place(i, block_origin, block_real)
            with m.If(Array(ends)[pick] == pick + 1):
                m.d.sync += filling.eq(0)       # a block of one TAU
            deal_2d()
        with m.Elif(two & filling):
            for i in range(n):
                with m.If(member == i):
                    place(i, block_origin, block_real)
            m.d.sync += member.eq(member + 1)
            deal_2d()
        with m.Elif(walking & ~filling & free):
            m.d.sync += [last.eq(pick), member.eq(pick + 1),
                         member_end.eq(Array(ends)[pick]),
                         filling.eq(pick + 1 < Array(ends)[pick])]
            m.d.comb += [group[j].d.eq(origin[j]) for j in range(P)]
            for i in range(n):
                with m.If(pick == i):
                    place(i, [o.value for o in origin], 1)
            advance()
        with m.Elif(filling):
            # the followers: the next tile of the walk while it shares the group's operand,
            # else a void tile (origin outside the parallel space: computes, writes nothing)
            same = walking & Cat((origin[j].value == group[j].value) | ~dep[j]
                                 for j in range(P)).all()
            void = [Mux(dep[j], group[j].value, cfg.p_size[j]) for j in range(P)]
            for i in range(n):
                with m.If(member == i):
                    with m.If(same):
                        place(i, [o.value for o in origin], 1)
                    with m.Else():
                        place(i, void, 0)
            with m.If(same):
                advance()
            m.d.sync += member.eq(member + 1)
            with m.If(member + 1 >= member_end):
                m.d.sync += filling.eq(0)
        taken = Signal(range(n + 1))
        m.d.comb += taken.eq(sum((self.tiles[i].valid & self.tiles[i].ready & real[i])
                                 .as_unsigned() for i in range(n)))
        for i in range(n):
            with m.If(self.tiles[i].valid & self.tiles[i].ready):
                m.d.sync += self.tiles[i].valid.eq(0)
        m.d.sync += self.count.eq(self.count + taken)

        # finished: nothing left to place, every slot taken, every TAU idle
        armed = Signal()
        with m.If(armed & ~self.busy & self.idle.all()):
            m.d.comb += self.finished.eq(1)
            m.d.sync += armed.eq(0)
        with m.If(self.run & ~self.busy & ~armed):
            m.d.sync += [walking.eq(1), armed.eq(1), self.count.eq(0), last.eq(n - 1),
                         xk.eq(0), yk.eq(0), x_end.eq(0), y_end.eq(0), second.eq(0),
                         row_end.eq(log2s_c[0] == 0), col_end.eq(log2s_c[1] == 0)]
            m.d.comb += [*(origin[j].d.eq(start[j]) for j in range(P)),
                         *(group[j].d.eq(start[j]) for j in range(P))]
        # the positions load their candidates, the step's fields where a candidate is the step
        m.d.sync += [x[j].load(step_fields[j]) for x in (origin, group, after) for j in range(P)]
        with m.If(self.stop):
            m.d.sync += [walking.eq(0), armed.eq(0), filling.eq(0), xk.eq(0), yk.eq(0),
                         row_end.eq(log2s_c[0] == 0), col_end.eq(log2s_c[1] == 0),
                         x_end.eq(0), y_end.eq(0), second.eq(0),
                         *(self.tiles[i].valid.eq(0) for i in range(n))]
        return m


class _Pos:
    """A position of the walk on one index (16 bits) with its next step's flags, kept beside
    it so that no step adds and compares in series with the walk's choices: ``wrap`` = value +
    ``p_tile >= p_size`` (the step wraps), ``over`` = value + ``p_tile > p_size`` (an edge
    tile). Registers (``_Pos(name)``) and candidates (:meth:`of`, :meth:`mux`, ``_Pos(name,
    comb=True)``) alike; ``eq`` assigns the fields.

    A candidate also carries ``st``: it is the index's step (:meth:`step`), whose value and
    flags (an adder, two comparisons) are not carried through the walk's multiplexers: they
    carry the mark, and a register picks the step's fields behind them (:meth:`register`,
    :meth:`load`), so that the carry chains feed one LUT in front of the flip-flops, not the
    multiplexers' levels."""

    def __init__(self, name=None, fields=None, comb=False):
        if fields is None:
            fields = (Signal(16, name=name), Signal(name=f"{name}_wrap"),
                      Signal(name=f"{name}_over"),
                      Signal(name=f"{name}_st") if comb else Const(0, 1))
        self.value, self.wrap, self.over, self.st = fields

    @classmethod
    def of(cls, value, p_tile, p_size):
        """The candidate ``value`` with its flags formed here."""
        plus = value + p_tile
        return cls(fields=(value, plus >= p_size, plus > p_size, Const(0, 1)))

    @classmethod
    def step(cls):
        """The mark of the index's step (its fields are the register's, :meth:`load`)."""
        return cls(fields=(Const(0, 16), Const(0, 1), Const(0, 1), Const(1, 1)))

    @classmethod
    def mux(cls, sel, a, b):
        return cls(fields=tuple(Mux(sel, x, y) for x, y in zip(a.fields, b.fields,
                                                                 strict=True)))

    @classmethod
    def register(cls, m, name):
        """A register and ``d``, the candidate it loads (assigned in the domain ``comb``:
        itself unless a branch assigns another; :meth:`load` loads it)."""
        reg = cls(name)
        reg.d = cls(f"{name}_d", comb=True)
        m.d.comb += reg.d.eq(reg)
        return reg

    def load(self, fields):
        """The register's load of ``d``, the step's ``fields`` (value, wrap, over) where ``d``
        is the step."""
        d = self.d
        return Cat(self.value, self.wrap, self.over).eq(Cat(
            *(Mux(d.st, f, x) for f, x in zip(fields, (d.value, d.wrap, d.over), strict=True))))

    @property
    def fields(self):
        return self.value, self.wrap, self.over, self.st

    def eq(self, other):
        mine, theirs = list(self.fields), list(other.fields)
        if isinstance(self.st, Const):
            assert isinstance(other.st, Const) and other.st.value == 0
            mine, theirs = mine[:3], theirs[:3]
        return Cat(*mine).eq(Cat(*theirs))
