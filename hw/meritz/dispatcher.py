"""The dispatcher of MERIT-z: parallel tiles to TAUs, and the one "done" (§V-A of the MERIT paper).

On ``run`` it walks the tile grid of the parallel space (origins ``0, p_tile, 2 p_tile, ...``
below ``p_size`` per index, row-major, last index fastest) and hands each tile to a TAU: every
TAU has a one-tile slot, and the next tile goes to an empty slot, chosen round-robin from the
last one filled. A TAU therefore gets work as fast as it accepts it (dynamic, like MIMORI's
``ParallelBlockLooper_mc``); every accumulation tile of a parallel tile runs on the TAU that got
it (output stationary), so the TAU count changes speed, never results.

``finished`` pulses once every tile has been taken and every TAU is ``idle``. The TAU contract:
``idle`` is low from the cycle after a tile transfer until that tile's last write response has
arrived (so "finished" means the last write response, not the last instruction).
``stop`` (a flush) empties the slots and ends the walk; the TAUs are reset at the same time.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_taus
from meritz import kernelcfg
from meritz.arbiter import round_robin
from meritz.tau.tile_looper import tile_layout

__all__ = ["Dispatcher"]

P = kernelcfg.P_INDICES


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
        Tiles taken by TAUs since ``run``.
    """

    def __init__(self, *, taus, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
        self._taus = check_taus(taus)
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
        origin = [Signal(16, name=f"origin{j}") for j in range(P)]
        walking = Signal()          # origin holds a tile not yet placed in a slot
        m.d.comb += self.busy.eq(walking | Cat(self.tiles[i].valid for i in range(n)).any())

        # next origin: the innermost index that does not wrap steps, the inner ones restart
        wraps = [Signal(name=f"wrap{j}") for j in range(P)]
        for j in range(P):
            m.d.comb += wraps[j].eq(origin[j] + cfg.p_tile[j] >= cfg.p_size[j])
        last_tile = Cat(wraps).all()

        # place the tile into an empty slot, round-robin
        empty = Cat(~self.tiles[i].valid for i in range(n))
        last = Signal(range(max(n, 2)))
        free, pick = round_robin(m, empty, last, n, "pick")
        with m.If(walking & free):
            m.d.sync += last.eq(pick)
            for i in range(n):
                with m.If(pick == i):
                    m.d.sync += [self.tiles[i].valid.eq(1),
                                 *(self.tiles[i].payload[j].eq(origin[j])
                                   for j in range(P))]
            for j in range(P):
                inner_wrap = Cat(wraps[j + 1:]).all() if j + 1 < P else 1
                with m.If(inner_wrap):
                    m.d.sync += origin[j].eq(
                        ((origin[j] + cfg.p_tile[j]) & ~wraps[j].replicate(17))[:16])
            with m.If(last_tile):
                m.d.sync += walking.eq(0)
        taken = Signal(range(n + 1))
        m.d.comb += taken.eq(sum((self.tiles[i].valid & self.tiles[i].ready).as_unsigned()
                                 for i in range(n)))
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
                         *(origin[j].eq(0) for j in range(P))]
        with m.If(self.stop):
            m.d.sync += [walking.eq(0), armed.eq(0),
                         *(self.tiles[i].valid.eq(0) for i in range(n))]
        return m
