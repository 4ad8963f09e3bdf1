"""An analytical performance model of MERIT-z: cycles and utilization of a compiled kernel.

:func:`predict` takes a :class:`merit.compile.Kernel` and returns a :class:`Prediction` without
simulating the RTL. The model (``docs/perf.md``) works at the granularity of one **job** = one
(parallel tile, accumulation tile), the unit in which the TAU loads, computes and frees:

* **exact counts** from the kernel configuration, walking the same loops as the hardware:
  the Compute Pipeline's cycles per job (``meritz.tau.cp.sequencer``: per warp that the tile runs
  (an edge tile skips its warps wholly outside the parallel space) restore, every step's program
  range, save; one cycle between jobs), the DRAM read beats of every footprint row
  (``meritz.tau.dma``: 8-byte beats, partial first / last beats, rows outside a ``zero`` tensor not
  read), the DMA's data-path cycles (a beat per cycle, one more cycle per SRAM row it flushes at the
  end of a tile) and the WP's write beats (one beat per 8-byte line an ``out`` vector touches);
* a **fluid event simulation** of the pipelines of ``taus`` TAUs: per TAU the DMA loads jobs in
  order as far ahead as the RP tile FIFOs hold them (Fig. 9, 10), a job's compute starts when its
  tiles are committed and the previous job is done, its outputs stream to DRAM while it
  computes; the tiles are dealt dynamically to the TAU whose tile looper asks first (as
  ``meritz.dispatcher``); every transfer in flight shares the one DRAM port (at most one 8-byte
  beat per cycle, ``dram_bytes_per_cycle`` on average): the reads one half and the writes the
  other while both wait, as the bench DRAM alternates them, and within each by max-min fair
  sharing, like the round-robin arbiter;
* three calibrated constants (:data:`CONSTANTS`): the cycles from a load's last beat to the
  first instruction that reads it, the pipeline latency of a load that starts from an idle DMA,
  and the cycles from the last instruction to the last write response.

Pure numpy; it imports neither amaranth nor the simulator. ``python -m bench.perf`` prints the
model against every RTL measurement in ``docs/results/`` and writes ``docs/results/perf.md``.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np

from .arch import BEAT_BYTES, MAX_BURST, PLAIN_BURSTS, RP_BYTES, RP_PORTS, WORDS_PER_BEAT
from .checks import check_ports

__all__ = ["CONSTANTS", "LOOKUP_E1_CYCLES", "Prediction", "SPANS", "TileCost", "dispatch_tiles",
           "interlocked", "job_costs", "predict", "predict_cycles", "predict_problem",
           "slide_part", "slot_read_beats", "spans"]

#: Calibrated constants of the pipeline model (cycles); see ``docs/perf.md``.
CONSTANTS = {
    "commit": 8,        # last beat of a job's tiles -> first read of the job by the CP
    "restart": 14,      # a load that starts while the DMA is idle: AR path before latency
    "drain": 9,         # last CP instruction -> last write response (besides the write beats)
    "waste": 0.75,      # share of the DMA's RREADY-low slots lost when writes compete
}



@dataclass(frozen=True)
class TileCost:
    """Work of one parallel tile (summed over its accumulation tiles).

    Attributes
    ----------
    origin : tuple of int
        The tile's origin in the parallel space.
    jobs : int
        Accumulation tiles.
    compute_cycles : int
        Compute Pipeline cycles (every warp, step and instruction, restores and saves).
    read_bytes, write_bytes : int
        DRAM bytes the tile's footprints read and its outputs write (whole 8-byte beats).
    tau : int
        The TAU the dispatcher deals it to in the model (0 .. taus - 1).
    """

    origin: tuple
    jobs: int
    compute_cycles: int
    read_bytes: int
    write_bytes: int
    tau: int


@dataclass(frozen=True)
class Prediction:
    """Predicted performance of one kernel on MERIT-z.

    Attributes
    ----------
    cycles : int
        From the first DRAM request to the last write response (``docs/perf.md``).
    utilization : float
        ``useful_ops / (cycles * lanes * taus)``.
    compute_cycles : int
        Compute Pipeline cycles of the whole kernel divided by ``taus`` (ALU time, lanes lost to
        edge tiles and restore / save included).
    dram_cycles : int
        ``(read_bytes + write_bytes) / dram_bytes_per_cycle``: the DRAM's busy time.
    port_cycles : int
        The DRAM port's busy time when the DMA's data path is counted: a load holds the port
        for at least its data-path cycles (one per beat, one more per SRAM row handed to the
        collector, RREADY low meanwhile), so ``port_cycles >= dram_cycles``.
    bound : str
        What limits the kernel: ``"ALUs"`` (``compute_cycles``) or ``"DRAM"`` (``port_cycles``),
        whichever is larger, or ``"tile turnaround"`` when neither is within 85 % of ``cycles``
        (latency, pipeline fill and the last tiles dominate); ``" + tile quantization"`` is
        appended when edge tiles leave more than 20 % of the lanes idle.
    tiles : int
        Parallel tiles.
    jobs : int
        (parallel tile, accumulation tile) pairs.
    read_bytes, write_bytes : int
    useful_ops : int
    lane_occupancy : float
        Useful outputs / outputs the tiles compute.
    lanes, taus : int
    dram_bytes_per_cycle : float
    latency : int
    per_tile : tuple of TileCost
        In dispatch order.
    """

    cycles: int
    utilization: float
    compute_cycles: int
    dram_cycles: int
    port_cycles: int
    bound: str
    tiles: int
    jobs: int
    read_bytes: int
    write_bytes: int
    useful_ops: int
    lane_occupancy: float
    lanes: int
    taus: int
    dram_bytes_per_cycle: float
    latency: int
    per_tile: tuple

    def as_dict(self, *, per_tile=True):
        """Plain dict (JSON-serializable); ``per_tile=False`` leaves the breakdown out."""
        out = asdict(self)
        if per_tile:
            out["per_tile"] = [asdict(t) for t in self.per_tile]
        else:
            del out["per_tile"]
        return out


# ---- argument checks ------------------------------------------------------------------------

def _check_kernel(kernel):
    from .compile import Kernel
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a merit.compile.Kernel (from compile_problem), not "
                        f"{type(kernel).__name__}")


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, not {value}")
    return int(value)


def _check_bandwidth(value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"dram_bytes_per_cycle must be a number, not {value!r}")
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"dram_bytes_per_cycle must be positive, not {value}")
    return float(value)

def _checked(kernel, taus, dram_bytes_per_cycle, latency, rp_bytes, rp_ports):
    """The arguments :func:`predict`, :func:`predict_cycles` and :func:`spans` share, checked:
    ``(taus, bandwidth, beat_rate, latency, rp_bytes, rp_ports)``, the beat rate the DRAM
    port's beats a cycle."""
    _check_kernel(kernel)
    bandwidth = _check_bandwidth(dram_bytes_per_cycle)
    return (_check_int("taus", taus, 1), bandwidth, min(1.0, bandwidth / BEAT_BYTES),
            _check_int("latency", latency, 0), _check_rp_bytes(rp_bytes),
            check_ports("rp_ports", rp_ports))



def _check_rp_bytes(value):
    try:
        sizes = tuple(value)
    except TypeError:
        sizes = None
    if sizes is None or len(sizes) != 2:
        raise TypeError(f"rp_bytes must be a pair of SRAM sizes (RP0, RP1), not {value!r}")
    for size in sizes:
        _check_int("rp_bytes", size, 1)
    return tuple(int(v) for v in sizes)


# ---- exact counts: jobs ---------------------------------------------------------------------

def _a_tiles(kernel):
    """Accumulation tile origins and extents, in the tile looper's order (last index fastest)."""
    a_size = tuple(kernel.problem.a_shape) or (1,)
    a_tile = tuple(kernel.tiling.a_tile) or (1,)
    grid = [range(0, n, t) for n, t in zip(a_size, a_tile, strict=True)]
    out = []
    for origin in itertools.product(*grid):
        extent = tuple(min(t, n - o) for o, t, n in zip(origin, a_tile, a_size, strict=True))
        out.append((origin, extent))
    return out


def _step_ranges(program, a_size, origin, extent):
    """``(begs[kf], ends[kl])`` arrays over the steps of one accumulation tile: the program
    range of each step, chosen by how many innermost *global* accumulation indices are at their
    first / last value (``merit.isa.range_select``, vectorized)."""
    prog = program.with_levels(len(a_size)) if program.levels < len(a_size) else program
    axes = [np.arange(o, o + e) for o, e in zip(origin, extent, strict=True)]
    grids = np.meshgrid(*axes, indexing="ij")
    first = np.ones(grids[0].shape, dtype=bool)
    last = np.ones(grids[0].shape, dtype=bool)
    kf = np.zeros(grids[0].shape, dtype=np.int64)
    kl = np.zeros(grids[0].shape, dtype=np.int64)
    for g, n in zip(reversed(grids), reversed(a_size), strict=True):
        first &= g == 0
        last &= g == n - 1
        kf += first
        kl += last
    return np.asarray(prog.begs)[kf], np.asarray(prog.ends)[kl]


#: cycles a ``LOOKUP`` stays in the SIMD array's first execute stage (``meritz.tau.cp.simd``):
#: b - c with the clamp's cases, the shifted and clamped index, the table read and its products
LOOKUP_E1_CYCLES = 3


def interlocked(first, second):
    """Cycles instruction ``second`` (a :class:`merit.isa.Instruction`) issued right behind
    ``first`` waits in the SIMD array (``meritz.tau.cp.simd``): 0 .. ``LOOKUP_E1_CYCLES``.

    One cycle when it reads the register ``first`` writes as ``b`` or ``c`` (not ``b`` of
    ``out``, which is forwarded into the second execute stage like ``a``), unless ``a`` and ``b``
    commute (max, min, and, or, xor; add and sub at ``s = 0``) and only ``b`` is that register:
    the array swaps them. ``LOOKUP_E1_CYCLES - 1`` cycles more behind a ``LOOKUP``, which stays
    that many cycles in the first execute stage (b - c and the clamp's cases, then the shifted,
    clamped index, each registered before the table read)."""
    from .isa import Logic, Op

    lookup = (LOOKUP_E1_CYCLES - 1) * int(first.op == Op.LOOKUP)
    if first.op == Op.OUT or second.op in (Op.OUT, Op.INDEX):
        return lookup
    reads = second.reads()
    d = first.d
    b_hit = d == reads[1]
    c_hit = len(reads) == 3 and d == reads[2]
    commutes = ((second.op == Op.LOGIC and second.fn != Logic.SEL)
                or (second.op in (Op.ADD, Op.SUB) and second.s == 0))
    if b_hit and commutes and d != reads[0]:
        b_hit = False
    return lookup + int(b_hit or c_hit)


def _interlocks(program):
    """``(within, pair)``: ``within[k]`` is the cycles instruction ``k`` waits behind
    instruction ``k - 1`` (:func:`interlocked`); ``pair[i, j]`` the same for instruction ``j``
    right behind instruction ``i``."""
    from .isa import decode

    # an indexed register (``rN+x``) as at the last offset, where the steps before a Post end
    ins = [decode(w).indexed(program.xspan - 1) for w in program.words]
    n = len(ins)
    table = np.zeros((max(n, 1), max(n, 1)), dtype=np.int64)
    for i, first in enumerate(ins):
        for j, second in enumerate(ins):
            table[i, j] = interlocked(first, second)
    within = np.zeros(n + 1, dtype=np.int64)
    for k in range(1, n):
        within[k] = table[k - 1, k]
    return within, table


def _step_cycles(program, a_size, origin, extent, locks):
    """CP cycles of one warp's steps in one accumulation tile: the instructions of each step's
    range, at least one cycle (an empty range still takes the sequencer's cycle), and the
    interlocks' cycles (an instruction reading the previous one's result as ``b`` / ``c``, an
    instruction behind a ``LOOKUP``, inside a step's range or from the last instruction of a
    step to the first of the next; ``locks`` = :func:`_interlocks` of the program)."""
    beg, end = (r.ravel() for r in _step_ranges(program, a_size, origin, extent))
    cycles = int(np.maximum(end - beg, 1).sum())
    within, pair = locks
    if not within.any() and not pair.any():
        return cycles
    run = np.concatenate([[0], np.cumsum(within)])      # run[k] = sum(within[:k])
    full = end > beg
    inside = np.where(full, run[np.maximum(end, 1)] - run[np.minimum(beg + 1, end)], 0)
    both = full[:-1] & full[1:]
    across = pair[np.maximum(end[:-1] - 1, 0), np.minimum(beg[1:], len(program.words) - 1)]
    return cycles + int(inside.sum()) + int((across * both).sum())


#: cycles the SIMD array's mover spends on a MOVE besides its rows: the cycle it takes the
#: MOVE, the wait for the group before's last instructions to leave E1 and E2 (two), its last
#: cycle (``meritz.tau.cp.simd``)
MOVE_CYCLES = 4


def _mover_cycles(regs, save, load):
    """Cycles from a MOVE's issue to the next MOVE's: its rows saved, then loaded (one a cycle,
    and one more for the last row's write)."""
    return MOVE_CYCLES + (regs if save else 0) + (regs + 1 if load and regs else 0)


def _warp_cycles(kernel):
    """CP cycles of one warp in each accumulation tile: one MOVE (the other register set saved
    for the warp before and restored for the warp after, ``meritz.tau.cp.sequencer``) and the
    steps, or the mover's time for that MOVE where the steps are shorter (the next warp's
    MOVE waits for it)."""
    a_size = tuple(kernel.problem.a_shape) or (1,)
    regs = int(kernel.config["regs"])
    tiles = _a_tiles(kernel)
    locks = _interlocks(kernel.program)
    out = []
    for b, (origin, extent) in enumerate(tiles):
        first, last = b == 0, b == len(tiles) - 1
        steps = _step_cycles(kernel.program, a_size, origin, extent, locks)
        out.append(max(1 + steps, _mover_cycles(regs, not last, not first)))
    return np.asarray(out, dtype=np.int64)


def _job_cycles(kernel):
    """CP cycles of a job in each accumulation tile besides its warps': the sequencer's cycle
    between jobs, the first warp's own restore (a MOVE, and the wait for its rows before the
    warp's steps start), the last warp's save (a MOVE)."""
    regs = int(kernel.config["regs"])
    tiles = _a_tiles(kernel)
    out = []
    for b in range(len(tiles)):
        first, last = b == 0, b == len(tiles) - 1
        own = _mover_cycles(regs, False, not first) - 1
        out.append(1 + 1 + own + (0 if last else 1 + regs))
    return np.asarray(out, dtype=np.int64)


def _tile_warps(kernel, origins):
    """Warps each parallel tile runs (a tile at the edge of the parallel space skips the warps
    wholly outside it: ``Tiling.edge_warps``)."""
    shape = tuple(kernel.problem.p_shape)
    return np.asarray([int(np.prod(kernel.tiling.edge_warps(o, shape))) for o in origins],
                      dtype=np.int64)


def _slots(kernel):
    """Enabled input slots in DMA order: ``(port, slot config)``."""
    out = []
    for port in (0, 1):
        for s in kernel.config[f"rp{port}"]:
            if s and s.get("enable"):
                out.append((port, s))
    return out


def _load_counts(kernel, slot, p_origins, a_origin):
    """DRAM read beats and DMA data-path cycles of one slot's tile for every parallel tile
    (arrays over ``p_origins``), walking the footprint rows as ``meritz.tau.dma`` does."""
    from .compile import A_INDICES, P_INDICES
    origin = np.zeros((len(p_origins), P_INDICES + A_INDICES), dtype=np.int64)
    origin[:, :p_origins.shape[1]] = p_origins
    origin[:, P_INDICES:P_INDICES + len(a_origin)] = a_origin
    return _job_loads(kernel, slot, origin)


def slot_read_beats(kernel, slot, tiles=None):
    """DRAM read beats of ``slot`` (one of ``kernel.config``'s RP slots) over the jobs of
    ``tiles`` (parallel tile origins; default every tile of ``kernel``) and every accumulation
    tile, each job's footprint rows walked as ``meritz.tau.dma`` reads them, with no sharing
    between TAUs: what the slot's tensor costs the DRAM port wherever it lies."""
    tiles = kernel.tiles if tiles is None else tiles
    p_origins = np.asarray(tiles, dtype=np.int64).reshape(len(tiles), -1)
    return sum(int(_load_counts(kernel, slot, p_origins, a_origin)[0].sum())
               for a_origin, _ in _a_tiles(kernel))


def _job_loads(kernel, slot, origin):
    """:func:`_load_counts` of the jobs whose (parallel, accumulation) tile origins are the rows
    of ``origin`` (``P_INDICES + A_INDICES`` columns): every job of a kernel in one pass."""
    from .compile import AXES
    low = _lows(kernel, slot, origin)
    # the counts depend on the footprint's first element alone: each one walked once (the jobs
    # of a slot that does not move along some parallel index share theirs)
    low, again = np.unique(low, axis=0, return_inverse=True)
    again = again.reshape(-1)
    box = slot["box"]
    extent = slot["extent"]
    clamp = slot["clamp"]
    dpitch = list(slot["dpitch"]) + [1]
    k = np.stack(np.meshgrid(*[np.arange(box[i]) for i in range(AXES - 1)], indexing="ij"),
                 axis=-1).reshape(-1, AXES - 1)                      # rows x 3
    x = low[:, None, :AXES - 1] + k[None]                            # tiles x rows x 3
    ext = np.asarray(extent[:AXES - 1])
    outside = ((x < 0) | (x >= ext)) & ~np.asarray(clamp[:AXES - 1], dtype=bool)
    zero_row = outside.any(axis=-1)
    xc = np.clip(x, 0, ext - 1)
    elem = (xc * np.asarray(dpitch[:AXES - 1])).sum(axis=-1)
    c_lo = low[:, AXES - 1][:, None]
    box3, n3 = box[AXES - 1], extent[AXES - 1]
    left = np.clip(-c_lo, 0, box3)
    right = np.clip(c_lo + box3 - n3, 0, box3)
    inside = box3 - left - right
    c3 = bool(clamp[AXES - 1])
    edge_only = (inside == 0) & c3
    reads = ~zero_row & ((inside != 0) | c3)
    col = np.where(inside != 0, np.maximum(c_lo, 0), np.where(left != 0, 0, n3 - 1))
    nread = np.where(edge_only, 1, inside)
    byte = slot["base"] + 2 * (elem + col)
    skip = (byte >> 1) & 3
    beats = np.where(reads, (skip + nread + WORDS_PER_BEAT - 1) // WORDS_PER_BEAT, 0)
    fills = 0
    if c3:
        fills = np.where(reads, -(-left // WORDS_PER_BEAT) - (-right // WORDS_PER_BEAT), 0)
    row_cycles = np.maximum(beats + fills, 1)
    # a row leaves with the chunk that starts the next one; the rows from the one holding the
    # tile's last word to the end are flushed a cycle each (RREADY low) after its last chunk
    lpitch = list(slot["lpitch"])
    last_word = sum((box[i] - 1) * lpitch[i] for i in range(AXES - 1)) + box[AXES - 1] - 1
    flush = max(1, slot["rows"] - last_word // kernel.lanes)
    datapath = row_cycles.sum(axis=1) + flush
    total = beats.sum(axis=1)
    return total[again], datapath[again], (total + flush)[again]


def _lows(kernel, slot, origin):
    """``(jobs, AXES)``: the low corner of ``slot``'s footprint in its tensor for the jobs whose
    (parallel, accumulation) tile origins are the rows of ``origin`` (the DMA's ``offset + sum
    origin_j s_j``, negative strides included)."""
    from .compile import A_INDICES, P_INDICES
    tiles = list(kernel.config["p_tile"]) + list(kernel.config["a_tile"])
    low = np.tile(np.asarray(slot["offset"], dtype=np.int64), (len(origin), 1))
    for j in range(P_INDICES + A_INDICES):
        s = slot["stride"][j]
        if s:
            low[:, slot["axis"][j]] += origin[:, j] * s + ((tiles[j] - 1) * s if s < 0 else 0)
    return low


def slide_part(kernel):
    """``(port, slot config, axis, delta, rows)`` of ``kernel``'s sliding slot
    (``Kernel.slide``: its footprint moves forward by ``delta`` elements along ``axis``, the
    outermost of its SRAM layout, from one tile to the next along the slide index, and the tile's
    base by ``rows`` SRAM rows), or None when the kernel slides nothing."""
    slide = getattr(kernel, "slide", None)
    if not slide:
        return None
    number, j = slide
    port, slot = _numbered_slots(kernel)[number]
    axis = slot["axis"][j]
    delta = slot["stride"][j] * kernel.config["p_tile"][j]
    lpitch = list(slot["lpitch"]) + [1]
    return port, slot, axis, delta, delta * lpitch[axis] // kernel.lanes


def _new_part(slot, axis, delta, rows):
    """``slot`` cut to the part of its footprint that a slide by ``delta`` along ``axis`` adds:
    the last ``delta`` elements of the box along ``axis``, ``rows`` SRAM rows of them (the DMA
    loads them as a tile of their own, appended after the sliding tile)."""
    out = dict(slot, rows=rows)
    out["box"] = list(slot["box"])
    out["offset"] = list(slot["offset"])
    out["offset"][axis] += slot["box"][axis] - delta
    out["box"][axis] = delta
    return out


#: jobs whose footprint rows :func:`_jobs` walks at once (a few arrays of rows x jobs)
LOAD_CHUNK = 4096


def _write_beats(kernel, p_origins):
    """WP write beats of one ``out`` of every parallel tile: one beat per 8-byte line that the
    valid lanes of a vector touch, summed over the tile's warps."""
    from .compile import lane_coords
    shape = np.asarray(kernel.problem.p_shape)
    n_p = len(shape)
    tiling = kernel.tiling
    lanes = lane_coords(tiling.lane_index, n_p)                       # n_p x lanes
    warps = np.stack(np.meshgrid(*[np.arange(w) for w in tiling.warps()], indexing="ij"),
                     axis=-1).reshape(-1, n_p)                        # warps x n_p
    per_lane = np.asarray(tiling.lanes_per_index())
    # the WP's addresses: out_base + 2 x sum p_j out_pitch[j] (dense over p_shape, or an
    # affine output map); lines of the first output (every output has these pitches)
    pitch = np.asarray(kernel.config["out_pitch"][:n_p], dtype=np.int64)
    base = int(kernel.config["out_base"][0])
    out = np.zeros(len(p_origins), dtype=np.int64)
    for t, origin in enumerate(p_origins):
        coord = (origin[None, :, None] + (warps * per_lane)[:, :, None] + lanes[None])
        valid = (coord < shape[None, :, None]).all(axis=1)           # warps x lanes
        line = (base + 2 * (coord * pitch[None, :, None]).sum(axis=1)) // BEAT_BYTES
        line = np.where(valid, line, -1)
        line.sort(axis=1)
        distinct = (np.diff(line, axis=1) != 0) & (line[:, 1:] >= 0)
        out[t] = distinct.sum() + (line[:, 0] >= 0).sum()
    return out


@dataclass(frozen=True)
class _Jobs:
    tile: np.ndarray          # parallel tile of each job (-1: a void tile of a sharing group)
    compute: np.ndarray       # CP cycles
    read: np.ndarray          # read beats (the TAU's own DMA)
    datapath: np.ndarray      # DMA data-path cycles
    hold: np.ndarray          # ... of them on the R channel: beats + flushed rows
    write: np.ndarray         # write beats (last accumulation tile of a tile)
    tail: np.ndarray          # CP cycles of a job after its last write
    partner: np.ndarray       # (jobs, 2): per RP, the group leader's job whose fetch feeds
                              # this one's shared slot (-1: none)
    units: tuple              # dispatch units: per group (block) member, its jobs
    group: int                # TAUs per sharing group (block)
    rows: tuple               # SRAM rows of one job per RP
    ahead: int                # jobs whose tiles fit in the RP FIFOs at once
    port_read: np.ndarray     # (jobs, 2): read beats of the own slots of each RP
    port_datapath: np.ndarray  # (jobs, 2): their DMA data-path cycles
    port_hold: np.ndarray     # (jobs, 2): their R-channel cycles
    own: np.ndarray           # (jobs, 2): the job loads slots of this RP itself (not fed)
    shared_ports: tuple       # RPs of the shared slots
    density: tuple            # share of CP cycles that read RP0 / RP1
    key: np.ndarray = None    # (jobs, 2): per RP, the footprint of its held slot (-1: none;
                              # ``Kernel.hold``: a job whose key equals its TAU's previous
                              # job's keeps that tile instead of loading it)
    depth: tuple = ()         # SRAM rows of RP0 / RP1
    slide: dict = None        # the sliding slot (``Kernel.slide``, :func:`_slide_jobs`)


def job_costs(kernel, taus=1):
    """Exact per-job counts of ``kernel`` on ``taus`` TAUs (in dispatch order), as a dict of
    numpy arrays: ``tile`` (-1 for the void tiles of a sharing group), ``compute`` (CP cycles),
    ``read`` (read beats), ``datapath`` (DMA cycles), ``write`` (write beats)."""
    _check_kernel(kernel)
    jobs = _jobs(kernel, taus=_check_int("taus", taus, 1))
    return {name: getattr(jobs, name) for name in ("tile", "compute", "read", "datapath",
                                                    "write")}


#: Most (parallel tile, accumulation tile) jobs the model walks (a few int64 arrays of that size).
MAX_JOBS = 1 << 23


def _group(kernel, taus):
    """``(TAUs per sharing group, shared slot number)``: 1 when the kernel shares nothing or
    ``taus`` is not a multiple of its group (the model then assumes no sharing)."""
    log2 = int(kernel.config.get("share_log2", 0))
    g = min(1 << log2, 1 << (taus - 1).bit_length())
    if g <= 1 or taus % g:
        return 1, None
    return g, int(kernel.config.get("share_slot", 0))


def _units(kernel, group, shared):
    """Dispatch units of :mod:`meritz.dispatcher`: the next tile for a group's first TAU, then
    for each other TAU the next tile while its origin agrees with the first on the indices the
    shared slot moves along, else a void origin (outside the parallel space); the tiles in the
    dispatcher's order for groups (:func:`merit.compile.share_order_key`: with ``share_order``,
    each run's whole tiles first). Returns a list of lists of ``(tile index or -1, origin)``."""
    from .compile import share_order_key
    tiles = [tuple(t) for t in kernel.tiles]
    if group == 1:
        return [[(t, o)] for t, o in enumerate(tiles)]
    slot = _numbered_slots(kernel)[shared][1]
    n_p = len(kernel.problem.p_shape)
    dep = [j for j in range(n_p) if slot["stride"][j]]
    key = share_order_key(tuple(kernel.problem.p_shape), tuple(kernel.tiling.p_tile), dep,
                          bool(kernel.config.get("share_order", 0)))
    order = sorted(range(len(tiles)), key=lambda t: key(tiles[t]))
    units, k = [], 0
    while k < len(order):
        first = tiles[order[k]]
        unit = [(order[k], first)]
        k += 1
        for _ in range(group - 1):
            if k < len(order) and all(tiles[order[k]][j] == first[j] for j in dep):
                unit.append((order[k], tiles[order[k]]))
                k += 1
            else:
                void = tuple(first[j] if j in dep else kernel.problem.p_shape[j]
                             for j in range(n_p))
                unit.append((-1, void))
        units.append(unit)
    return units


def _shares(kernel, taus):
    """``(shares, walk)``: the shared slots as ``(slot, RP, log2 of its group, TAU-index bit of its
    group's low bit)``, and how the dispatcher deals (``"stream"``: the processor's 1-D groups of
    ``share_slot`` / ``share_log2``, :func:`_units`; ``"block"``: ``Kernel.sharing``, or
    the configuration's 2-D sharing or ``share_block``, :func:`_block_units`). No sharing when
    ``taus`` is not a multiple of the block."""
    sharing = getattr(kernel, "sharing", None)
    cfg = kernel.config
    if sharing is None and cfg.get("share_log2", 0) and cfg.get("share2_log2", 0):
        sharing = ((cfg["share_slot"], cfg["share_log2"]), (cfg["share2_slot"], cfg["share2_log2"]))
    elif sharing is None and cfg.get("share_log2", 0) and cfg.get("share_block", 0):
        sharing = ((cfg["share_slot"], cfg["share_log2"]),)
    numbered = _numbered_slots(kernel)
    if sharing is None:
        group, slot = _group(kernel, taus)
        if group == 1:
            return [], "stream"
        return [(slot, numbered[slot][0], group.bit_length() - 1, 0)], "stream"
    if not sharing or taus % (1 << sum(v for _, v in sharing)):
        return [], "block"
    out, shift = [], 0
    for slot, log2 in sharing:
        out.append((slot, numbered[slot][0], log2, shift))
        shift += log2
    return out, "block"


def _block_units(kernel, shares, slide=None, taus=1):
    """Dispatch units of the block walk (:func:`merit.compile.share_walk`): per block of
    ``g_1 x g_2`` TAUs (``x`` fastest), the tiles ``(x, y)``; a row or column past the end of its
    walk gets void origins (the walk's indices at their extent). ``slide`` (a parallel index,
    ``Kernel.slide``): the slide walk, the block walk with that index innermost, below the
    blocks, so each TAU keeps its place in the block and takes the tiles along ``slide`` one
    after the other; with no shared slot its blocks are of ``taus`` TAUs, ``x`` walking every
    other index. Returns a list of lists of ``(tile index or -1, origin)``."""
    from .compile import share_walk
    shape = tuple(kernel.problem.p_shape)
    p_tile = tuple(kernel.tiling.p_tile)
    n_p = len(shape)
    numbered = _numbered_slots(kernel)
    if shares:
        deps = [{j for j in range(n_p) if numbered[n][1]["stride"][j]} for n, *_ in shares]
        xs, ys, rs = share_walk(n_p, deps)
        g = [1 << v for _, _, v, _ in shares] + [1]
    else:
        xs, ys, rs = [j for j in range(n_p) if j != slide], [], [slide]
        g = [taus, 1]
    inner = [slide] if slide in rs else []
    rs = [j for j in rs if j not in inner]
    counts = [len(range(0, n, t)) for n, t in zip(shape, p_tile, strict=True)]
    index = {tuple(o): t for t, o in enumerate(kernel.tiles)}

    def walk(ix):
        return list(itertools.product(*[range(counts[j]) for j in ix]))

    wx, wy, wi = walk(xs), walk(ys), walk(inner)
    units = []
    for r in walk(rs):
        for y0 in range(0, len(wy), g[1]):
            for x0 in range(0, len(wx), g[0]):
                for i in wi:
                    unit = []
                    for y in range(y0, y0 + g[1]):
                        for x in range(x0, x0 + g[0]):
                            origin = [0] * n_p
                            for ix, c in ((rs, r), (inner, i)):
                                for j, v in zip(ix, c, strict=True):
                                    origin[j] = v * p_tile[j]
                            for ix, w, k in ((xs, wx, x), (ys, wy, y)):
                                for m, j in enumerate(ix):
                                    origin[j] = w[k][m] * p_tile[j] if k < len(w) else shape[j]
                            origin = tuple(origin)
                            unit.append((index.get(origin, -1), origin))
                    # a block none of whose tiles the kernel runs (a prefix of its tiles) is
                    # not dealt
                    if any(t >= 0 for t, _ in unit):
                        units.append(unit)
    return units


def _dealt(kernel, taus):
    """``(shares, units)``: :func:`_shares` and the dispatch units (lists of ``(tile index or
    -1, origin)``, one per TAU of a group or block) in the order they are dealt."""
    shares, walk = _shares(kernel, taus)
    slide = getattr(kernel, "slide", None)
    slide = slide[1] if slide else None
    if walk == "block" and shares:
        return shares, _block_units(kernel, shares, slide)
    if slide is not None and not shares:
        return shares, _block_units(kernel, [], slide, taus)
    return shares, _units(kernel, 1 << sum(v for _, _, v, _ in shares),
                          shares[0][0] if shares else None)


def dispatch_tiles(kernel, taus=1):
    """The indices of ``kernel.tiles`` in the order the dispatcher deals them on ``taus`` TAUs
    (a sharing group's or block's tiles together; void tiles left out)."""
    _, units = _dealt(kernel, taus)
    return [t for unit in units for t, _ in unit if t >= 0]


def _numbered_slots(kernel):
    """Every slot in the DMA's numbering (RP0 slots, then RP1): ``(port, config or None)``."""
    return [(port, s if s and s.get("enable") else None)
            for port in (0, 1) for s in kernel.config[f"rp{port}"]]


def _jobs(kernel, rp_bytes=RP_BYTES, taus=1):
    shares, units = _dealt(kernel, taus)
    group = len(units[0]) if units else 1
    members = [m for unit in units for m in unit]
    origins = np.asarray([o for _, o in members], dtype=np.int64).reshape(len(members), -1)
    tile_of = np.asarray([t for t, _ in members], dtype=np.int64)
    a_tiles = _a_tiles(kernel)
    per_warp = _warp_cycles(kernel)
    n_t, n_a = len(members), len(a_tiles)
    if n_t * n_a > MAX_JOBS:
        raise ValueError(f"problem {kernel.problem.name!r}: {n_t} parallel tiles x {n_a} "
                         f"accumulation tiles = {n_t * n_a} jobs; the performance model walks "
                         f"at most {MAX_JOBS}: predict a slice of the problem (fewer outputs)")
    # per member and RP, the member whose fetch of the RP's shared slot feeds it (-1: itself)
    lead_row = np.full((n_t, 2), -1, dtype=np.int64)
    row = 0
    for unit in units:
        for k in range(len(unit)):
            for _, port, log2, shift in shares:
                leader = k & ~(((1 << log2) - 1) << shift)
                if leader != k:
                    lead_row[row + k, port] = row + leader
        row += len(unit)
    shared_slots = {n for n, *_ in shares}
    read = np.zeros((n_t, n_a), dtype=np.int64)
    datapath = np.zeros((n_t, n_a), dtype=np.int64)
    hold = np.zeros((n_t, n_a), dtype=np.int64)
    port_read = np.zeros((n_t, n_a, 2), dtype=np.int64)
    port_datapath = np.zeros((n_t, n_a, 2), dtype=np.int64)
    port_hold = np.zeros((n_t, n_a, 2), dtype=np.int64)
    own_port = np.zeros((n_t, n_a, 2), dtype=bool)
    # every (parallel tile, accumulation tile) origin, accumulation tiles fastest
    from .compile import A_INDICES, P_INDICES
    both = np.zeros((n_t, n_a, P_INDICES + A_INDICES), dtype=np.int64)
    both[:, :, :origins.shape[1]] = origins[:, None, :]
    for b, (a_origin, _) in enumerate(a_tiles):
        both[:, b, P_INDICES:P_INDICES + len(a_origin)] = a_origin
    both = both.reshape(n_t * n_a, -1)
    for n, (port, slot) in enumerate(_numbered_slots(kernel)):
        if slot is None:
            continue
        counts = [_job_loads(kernel, slot, both[k:k + LOAD_CHUNK])
                  for k in range(0, len(both), LOAD_CHUNK)]
        r, d, h = (np.concatenate([c[m] for c in counts]).reshape(n_t, n_a) for m in range(3))
        own = lead_row[:, port] < 0 if n in shared_slots else np.ones(n_t, dtype=bool)
        own = own[:, None]
        read += np.where(own, r, 0)
        datapath += np.where(own, d, 0)
        hold += np.where(own, h, 0)
        port_read[:, :, port] += np.where(own, r, 0)
        port_datapath[:, :, port] += np.where(own, d, 0)
        port_hold[:, :, port] += np.where(own, h, 0)
        own_port[:, :, port] |= own
    slide = _slide_jobs(kernel, both, shared_slots)
    outs = max(len(kernel.outputs), 1)
    write = np.zeros((n_t, n_a), dtype=np.int64)
    beats = _write_beats(kernel, origins)
    write[:, -1] = beats * outs
    per_job = _job_cycles(kernel)
    compute = per_job[None, :] + _tile_warps(kernel, origins)[:, None] * per_warp[None, :]
    warps = int(np.prod(kernel.tiling.p_tile)) // kernel.lanes
    # CP cycles after a tile's last output: every warp a tile runs holds an output (the edge
    # warps are skipped), but the one warp of a void tile writes nothing
    tail = np.zeros((n_t, n_a), dtype=np.int64)
    tail[:, -1] = np.where(tile_of < 0, compute[:, -1] - 1, 0)
    index = np.arange(n_t * n_a).reshape(n_t, n_a)
    partner = np.full((n_t, n_a, 2), -1, dtype=np.int64)
    for port in (0, 1):
        fed = lead_row[:, port] >= 0
        partner[fed, :, port] = index[lead_row[fed, port]]
    flat_units, row = [], 0
    for unit in units:
        flat_units.append([list(index[row + k]) for k in range(len(unit))])
        row += len(unit)
    rows = [0, 0]
    for port, slot in _slots(kernel):
        rows[port] += slot["rows"]
    depth = [b // (2 * kernel.lanes) for b in rp_bytes]
    ahead = min([depth[r] // rows[r] for r in (0, 1) if rows[r]] or [n_a * n_t])
    prog = kernel.program
    a_size = tuple(kernel.problem.a_shape) or (1,)
    total = int(per_job.sum()) + warps * int(per_warp.sum())
    density = []
    for port in (0, 1):              # share of CP cycles whose instruction reads the RP
        readers = np.zeros(len(prog.words) + 1, dtype=np.int64)
        readers[1:][list(prog.reads(port))] = 1
        below = np.cumsum(readers)   # readers at addresses below each address
        count = 0
        for origin, extent in a_tiles:
            beg, end = _step_ranges(prog, a_size, origin, extent)
            count += int((below[end] - below[beg]).sum())
        density.append(min(1.0, count * warps / total) if total else 0.0)
    key = _hold_keys(kernel, origins, a_tiles, shared_slots)
    return _Jobs(np.repeat(tile_of, n_a), compute.reshape(-1),
                 read.reshape(-1), datapath.reshape(-1), hold.reshape(-1), write.reshape(-1),
                 tail.reshape(-1), partner.reshape(-1, 2),
                 tuple(flat_units), group, tuple(rows),
                 max(ahead, 1), port_read.reshape(-1, 2),
                 port_datapath.reshape(-1, 2), port_hold.reshape(-1, 2),
                 own_port.reshape(-1, 2), tuple(sorted({p for _, p, _, _ in shares})),
                 tuple(density), key, tuple(depth), slide)


def _slide_jobs(kernel, both, shared_slots):
    """The sliding slot's part of :class:`_Jobs` (``Kernel.slide``), or None: its RP, the SRAM
    rows a slide adds, per job the footprint's low corner along the slide axis and a number
    naming the rest of its footprint (the other axes' corners: a job slides from its TAU's
    previous one when that number is equal and its corner is ``delta`` further, or holds it
    when the corner is equal), and the read beats, data-path and R-channel cycles of the new
    part alone (:func:`_job_loads` of the footprint cut to it)."""
    part = slide_part(kernel)
    if part is None:
        return None
    port, slot, axis, delta, rows = part
    if kernel.slide[0] in shared_slots:
        return None
    low = np.concatenate([_lows(kernel, slot, both[k:k + LOAD_CHUNK])
                          for k in range(0, len(both), LOAD_CHUNK)])
    rest = np.delete(low, axis, axis=1)
    _, rest = np.unique(rest, axis=0, return_inverse=True)
    new = _new_part(slot, axis, delta, rows)
    counts = [_job_loads(kernel, new, both[k:k + LOAD_CHUNK])
              for k in range(0, len(both), LOAD_CHUNK)]
    read, datapath, hold = (np.concatenate([c[m] for c in counts]) for m in range(3))
    return {"port": port, "rows": rows, "delta": delta, "low": low[:, axis].tolist(),
            "rest": rest.reshape(-1).tolist(), "read": read.tolist(),
            "datapath": datapath.tolist(), "hold": hold.tolist()}


def _hold_keys(kernel, origins, a_tiles, shared_slots):
    """``(jobs, 2)``: per job and RP, a number naming the footprint of the RP's held slot
    (``Kernel.hold``: the enabled slot alone in its RP and not shared between TAUs), equal for
    two jobs exactly when their origins agree on every index the slot moves along; -1 where
    the RP has no such slot or the kernel holds nothing."""
    from .compile import P_INDICES
    n_t, n_a = len(origins), len(a_tiles)
    key = np.full((n_t, n_a, 2), -1, dtype=np.int64)
    if not kernel.hold:
        return key.reshape(-1, 2)
    numbered = _numbered_slots(kernel)
    n_p = origins.shape[1]
    held = kernel.config.get("hold", 3)     # the RPs the processor holds (``config["hold"]``)
    for port in (0, 1):
        mine = [(n, s) for n, (q, s) in enumerate(numbered) if q == port and s is not None]
        if len(mine) != 1 or mine[0][0] in shared_slots or not held >> port & 1:
            continue
        slot = mine[0][1]
        names = {}
        for b, (a_origin, _) in enumerate(a_tiles):
            a_dep = tuple(int(v) for j, v in enumerate(a_origin) if slot["stride"][P_INDICES + j])
            for t in range(n_t):
                p_dep = tuple(int(origins[t, j]) for j in range(n_p) if slot["stride"][j])
                key[t, b, port] = names.setdefault((p_dep, a_dep), len(names))
    return key.reshape(-1, 2)


# ---- the pipeline simulation ------------------------------------------------------------------

class _Dram:
    """One DRAM port shared by transfers (fluid): the reads' channel and the writes' channel
    each half of its beat slots while both have transfers (the DRAM alternates them; what one
    channel's capped transfers leave goes to the other), and within a channel weighted max-min
    fair shares. DRAM answers bursts in the order it accepts them, so a transfer's share
    follows its bursts in flight: equal shares, except while a read is urgent (``urgent``, the
    arbiter's ``urgent``): then each other read keeps ``PLAIN_BURSTS`` bursts outstanding
    against the ``MAX_BURST`` rows the urgent load's DMA runs ahead (its command FIFO).

    A transfer is ``[beats left, beat-rate cap, slots per beat when alone, slots per beat when
    sharing]``.
    """

    def __init__(self, rate):
        self.rate = rate
        self.active = {}
        self.urgent = set()      # the active reads the arbiter serves first
        self.known = None        # the rates, until a transfer starts, ends or turns urgent

    def rates(self):
        """Beat rate of every active transfer (they do not change with the beats left)."""
        if self.known is None:
            self.known = self._rates()
        return self.known

    def _rates(self):
        if len(self.active) == 1:
            (key, (_, cap, alone, _)), = self.active.items()
            return {key: min(cap, self.rate / alone)}
        plain = PLAIN_BURSTS / MAX_BURST if self.urgent else 1.0

        def weight(key):
            return 1.0 if key in self.urgent or key[0] == "w" else plain

        def fill(items, left):
            # water-filling: transfers capped below their weighted share take their cap, the
            # rest share what is left by weight
            items = sorted(items, key=lambda kv: kv[1][1] * kv[1][3] / weight(kv[0]))
            out = {}
            weights = sum(weight(key) for key, _ in items)
            for key, (_, cap, _, cost) in items:
                w = weight(key)
                slots = min(cap * cost, left * w / weights)
                out[key] = slots / cost
                left -= slots
                weights -= w
            return out

        reads = [kv for kv in self.active.items() if kv[0][0] != "w"]
        writes = [kv for kv in self.active.items() if kv[0][0] == "w"]
        if not reads or not writes:
            return fill(reads or writes, self.rate)
        # the DRAM alternates between a read beat and a write beat while both wait: the reads
        # of every TAU share one half of the slots and the writes the other, and what one
        # channel leaves (its transfers capped below it) the other takes
        wanted = {name: sum(cap * cost for _, (_, cap, _, cost) in group)
                  for name, group in (("r", reads), ("w", writes))}
        to_writes = min(wanted["w"], max(self.rate / 2, self.rate - wanted["r"]))
        return {**fill(reads, self.rate - to_writes), **fill(writes, to_writes)}

    def advance(self, dt, rates):
        for key, r in rates.items():
            self.active[key][0] -= r * dt


class _TauState:
    """Where one TAU's pipelines stand in :func:`_simulate`."""

    def __init__(self):
        self.queue = collections.deque()     # jobs of the tiles handed to this TAU, not loading
        self.loading = None      # the job the DMA loads
        self.dma_idle_since = None
        self.loaded = collections.deque()    # (job, cycle its tiles are readable), for the CP
        self.job = None          # the job the CP computes
        self.computed = False    # ... its instructions have issued
        self.writing = False     # ... its output beats are not all written
        self.compute_end = 0.0
        self.inflight = [0, 0]   # SRAM rows of RP0 / RP1 that its jobs' tiles hold
        self.head = set()        # RPs in which the tile looper has allocated the queue's head
        self.requests = collections.deque()  # (job, RP): the DMA's loads, in order
        self.wants_tile = True   # the tile looper has handed out every job of its tiles
        self.slot = None         # the dispatcher's tile waiting for this TAU
        self.last_key = [-1, -1]  # footprint of each RP's held slot in the TAU's last job
        self.keyed = None        # the job last compared with it
        self.live = [None, None]  # per RP: the TAU's last allocated job, while its tile is live
        self.passed = {}         # (job, RP) -> rows: the job's tile is kept for the TAU's next
                                 # job, but for its first rows (a slide), freed at its end
        self.last_low = [None, None]  # the sliding slot's footprint in the TAU's last job


def _simulate(jobs, taus, beat_rate, latency, spans=None, rp_ports=RP_PORTS, stop=None):
    """Event simulation of ``taus`` TAUs sharing one DRAM port; returns the cycle of the last
    write response, counted from the first read request, and the TAU of each parallel tile.
    ``spans``: a list of ``taus`` Counters that receive each TAU's cycles by what its Compute
    Pipeline does or waits for (:data:`SPANS`). ``rp_ports``: ports of the RP SRAM banks.
    ``stop``: return None as soon as the cycle returned is certain to be at least ``stop`` (a
    job that writes a real tile's outputs is not done at a cycle ``now`` with ``now`` plus the
    drain at least ``stop``: the last write response comes after it)."""
    c = CONSTANTS
    # jobs that write a real tile's outputs, not done yet: the last write response is not
    # earlier than the cycle at which one of them is still running
    writers = [int(((jobs.write > 0) & (jobs.tile >= 0)).sum())]
    # the per-job counts as lists: the loop reads them one value at a time
    tile_, compute_, write_, tail_ = (a.tolist() for a in (jobs.tile, jobs.compute, jobs.write,
                                                            jobs.tail))
    own_, port_read_, port_datapath_, port_hold_, partner_ = (
        a.tolist() for a in (jobs.own, jobs.port_read, jobs.port_datapath, jobs.port_hold,
                             jobs.partner))
    units = collections.deque(jobs.units)
    group = jobs.group
    fetched = {}                 # (a group leader's job, RP) -> cycle its shared slot loaded
    followers = collections.defaultdict(list)  # (leader's job, RP) -> its followers' jobs
    for j, r in zip(*np.nonzero(jobs.partner >= 0), strict=True):
        followers[(int(partner_[j][r]), int(r))].append(int(j))
    waiting = collections.defaultdict(list)    # (leader's job, RP) -> followers' loaded entries
    dram = _Dram(beat_rate)
    # the collector's writes win over the RP's reads of single-port banks: every SRAM row a
    # load writes into an RP the CP reads stops the read pipeline, a CP cycle (docs/perf.md);
    # two-port banks take the write beside the read
    stall = (jobs.rows[0] * (jobs.density[0] > 0) + jobs.rows[1] * (jobs.density[1] > 0)
             if rp_ports == 1 else 0)
    stalled = [0.0] * taus      # each TAU's CP cycles lost to bank writes
    state = [_TauState() for _ in range(taus)]
    timers = []                  # (cycle, sequence, kind, tau, job)
    seq = itertools.count()
    now, end, done = 0.0, 0.0, 0

    last = [-group]
    dealt = {}

    def deal():
        # the dispatcher: one tile slot per TAU, refilled as soon as the TAU takes its tile
        # (when its tile looper is idle); a group of TAUs (``group`` of them, sharing an
        # operand) is refilled at once when all its slots are empty, round-robin over groups
        for s in state:
            if s.wants_tile and s.slot is not None:
                if tile_[s.slot[0]] >= 0:
                    dealt[int(tile_[s.slot[0]])] = state.index(s)
                s.queue.extend(s.slot)
                s.slot, s.wants_tile = None, False
        for k in range(1, taus // group + 1):
            first = (last[0] + k * group) % taus
            members = state[first:first + group]
            if units and all(s.slot is None for s in members):
                for s, member in zip(members, units.popleft(), strict=True):
                    s.slot = member
                last[0] = first
                deal()
                return

    holds = [r for r in (0, 1) if jobs.rows[r]]     # RPs that a job takes rows of
    parts = collections.Counter()       # loads of a job still to come
    placed = set()                      # (job, RP) whose SRAM tile is allocated
    held = set()        # (job, RP): the job keeps its TAU's previous tile of the RP's held slot
    keys = (jobs.key if jobs.key is not None else np.full((len(jobs.tile), 2), -1)).tolist()
    sl = jobs.slide
    slid = set()        # (job, RP): the job slides its TAU's previous tile (``Kernel.slide``)

    def need(j, r):
        """SRAM rows a job's tiles take in RP ``r`` (a slide: the rows it adds)."""
        return sl["rows"] if (j, r) in slid else jobs.rows[r]

    def counts(j, r):
        """Read beats, DMA data-path and R-channel cycles of a job's load into RP ``r``."""
        if (j, r) in slid:
            return sl["read"][j], sl["datapath"][j], sl["hold"][j]
        return port_read_[j][r], port_datapath_[j][r], port_hold_[j][r]

    def own(j, r):
        return own_[j][r] and (j, r) not in held

    def allocate():
        """The tile loopers: the queue's head job allocates its tiles RP by RP (RP0's slots,
        then RP1's) as each RP's FIFO has room, and hands the DMA a load per RP whose slots it
        fetches itself (a follower's shared slot is its leader's load, a credit)."""
        for s in state:
            while s.queue:
                j = s.queue[0]
                if s.keyed != j:        # once per job: compare with the TAU's last job
                    s.keyed = j
                    for r in holds:
                        if sl is not None and r == sl["port"]:
                            # the sliding slot: the same footprint (held) or moved forward by
                            # ``delta`` along its outermost axis, the rest equal (slid)
                            low = (sl["rest"][j], sl["low"][j])
                            last = s.last_low[r]
                            if last is not None and s.live[r] is not None \
                                    and last[0] == low[0] and low[1] - last[1] in (0, sl["delta"]):
                                if low[1] == last[1]:
                                    held.add((j, r))
                                    s.passed[(s.live[r], r)] = 0
                                else:
                                    slid.add((j, r))
                                    s.passed[(s.live[r], r)] = sl["rows"]
                                s.live[r] = j
                            s.last_low[r] = low
                            continue
                        # the last job's tile is kept only while it is live (not freed yet)
                        if keys[j][r] >= 0 and keys[j][r] == s.last_key[r] \
                                and s.live[r] is not None:
                            held.add((j, r))
                            s.passed[(s.live[r], r)] = 0
                            s.live[r] = j
                        s.last_key[r] = keys[j][r]
                if not s.head:
                    parts[j] = sum(1 for r in holds if own(j, r))
                for r in holds:
                    if r in s.head:
                        continue
                    if (j, r) not in held:  # a held tile takes no new place in the FIFO
                        # an empty FIFO takes a job whatever its size (a tile larger than
                        # the RP predicted, ``rp_bytes``, runs one at a time)
                        if s.inflight[r] and s.inflight[r] + need(j, r) > jobs.depth[r]:
                            break
                        s.inflight[r] += need(j, r)
                        s.live[r] = j
                    s.head.add(r)
                    placed.add((j, r))
                    if own(j, r):
                        s.requests.append((j, r))
                else:
                    s.queue.popleft()
                    s.head = set()
                    s.wants_tile = not s.queue
                    if not any(own(j, r) for r in holds):
                        s.requests.append((j, None))   # nothing to load: committed at once
                    continue
                break

    def start_loads():
        allocate()
        for i, s in enumerate(state):
            if s.loading is None and s.requests:
                j, r = s.requests[0]
                if r is not None and any((f, r) not in placed
                                         for f in followers.get((j, r), ())):
                    continue     # a leader fetches the shared tile once its group allocated it
                s.requests.popleft()
                s.loading = (j, r)
                if r is None:
                    heapq.heappush(timers, (now, next(seq), "loaded", i, j))
                elif s.dma_idle_since is None or s.dma_idle_since < now:
                    # nothing in flight: the request, address walk and AR, then the latency
                    heapq.heappush(timers, (now + c["restart"] + latency, next(seq), "read", i, j))
                else:    # back to back: the ARs ran ahead of the previous load's data
                    begin_read(i)

    def begin_read(i):
        j, r = state[i].loading
        read, datapath, hold = counts(j, r)
        beats = float(read)
        if beats:
            # the DMA data path takes at most a beat per cycle and keeps RREADY low while it
            # flushes a tile's last rows to the collector: a load alone holds the DRAM for
            # those cycles too; next to writes, part of those slots go to the writes instead
            # (rows of zeros and clamp fills take data-path cycles but leave the R channel to
            # the other TAUs: they cap the load's rate, not the port slots it holds)
            cap = min(1.0, beats / float(datapath))
            alone = max(1.0, beat_rate * float(hold) / beats)
            dram.active[("r", i)] = [beats, cap, alone, 1.0 + c["waste"] * (alone - 1.0)]
            dram.known = None
            # a leader's load of a shared slot that followers wait for: urgent (``Top``'s
            # arbiter, ``Tau.ar_urgent``)
            if followers.get((j, r)):
                dram.urgent.add(("r", i))
            else:
                dram.urgent.discard(("r", i))
        else:
            heapq.heappush(timers, (now + float(datapath), next(seq), "loaded", i, j))

    def loaded(i):
        """The DMA has loaded one RP's slots of a job (its tiles are committed with the last)."""
        s = state[i]
        j, r = s.loading
        s.loading = None
        s.dma_idle_since = now
        if r is not None:
            parts[j] -= 1
            if r in jobs.shared_ports and int(partner_[j][r]) < 0:
                multicast((j, r))
        if parts[j] > 0:
            return
        leads = [(int(partner_[j][q]), q) for q in jobs.shared_ports
                 if partner_[j][q] >= 0]
        pending = [k for k in leads if k not in fetched]
        entry = [j, now + c["commit"], len(pending), leads]
        s.loaded.append(entry)
        if pending:                 # a leader's multicast is still to come
            entry[1] = math.inf
            for k in pending:
                waiting[k].append((entry, i))
        else:
            entry[1] = max([now] + [fetched[k] for k in leads]) + c["commit"]
            heapq.heappush(timers, (entry[1], next(seq), "ready", i, j))

    def multicast(key):
        """The leader's job has fetched its RP's shared slot: followers' jobs waiting for
        nothing else may run."""
        fetched[key] = now
        for other, k in waiting.pop(key, ()):
            other[2] -= 1
            if other[2] == 0:
                other[1] = max([now] + [fetched[q] for q in other[3]]) + c["commit"]
                heapq.heappush(timers, (other[1], next(seq), "ready", k, other[0]))

    def start_compute():
        for i, s in enumerate(state):
            if s.job is None and s.loaded and s.loaded[0][1] <= now:
                j = s.job = s.loaded.popleft()[0]
                started[i] = True
                lost = float(stall) if s.queue or s.requests or s.loading is not None else 0.0
                stalled[i] += lost
                cycles = float(compute_[j]) + lost
                s.computed, s.compute_end = False, now + cycles
                heapq.heappush(timers, (s.compute_end, next(seq), "computed", i, j))
                s.writing = bool(write_[j])
                if s.writing:    # the outputs stream out while the job computes
                    cap = min(1.0, write_[j] / max(cycles - tail_[j], 1.0))
                    dram.active[("w", i)] = [float(write_[j]), cap, 1.0, 1.0]
                    dram.known = None

    def finish(s):
        nonlocal end, done
        j = s.job
        # the last write of the job: after its last written warp
        if write_[j] and tile_[j] >= 0:
            end = max(end, now if now > s.compute_end else s.compute_end - tail_[j])
            writers[0] -= 1
        s.job = None
        for r in holds:
            if (j, r) in s.passed:      # its tile stays, the next job's (``Kernel.hold``), but
                s.inflight[r] -= s.passed.pop((j, r))   # for the rows a slide leaves behind
                continue
            s.inflight[r] -= jobs.rows[r]
            if s.live[r] == j:
                s.live[r] = None
        done += 1

    started = [False] * taus

    def why(i):
        """What TAU ``i``'s Compute Pipeline does or waits for now (:data:`SPANS`)."""
        s = state[i]
        if s.job is not None:
            if not s.computed:
                return "compute"
            return "writes"
        if s.loaded:
            return "leader" if s.loaded[0][1] == math.inf else "commit"
        if not started[i]:
            return "fill"
        if s.loading is not None:
            if any(t[3] == i and t[2] == "read" for t in timers):
                return "latency"
            return "load"
        if s.requests:
            return "credit"
        if s.queue:
            return "fifo"
        if s.slot is not None or units or any(t.slot is not None for t in state):
            return "dispatch"
        return "drain"

    deal()
    start_loads()
    while done < len(jobs.tile):
        if stop is not None and writers[0] and now + c["drain"] >= stop:
            return None
        rates = dram.rates()
        t_next = timers[0][0] if timers else math.inf
        for key, (left, *_) in dram.active.items():
            if rates[key] > 0:
                t_next = min(t_next, now + left / rates[key])
        if spans is not None:
            for i in range(taus):
                spans[i][why(i)] += t_next - now
        dram.advance(t_next - now, rates)
        now = t_next
        # a transfer is over when under a millionth of a beat is left: a tighter bound can
        # never be met once ``now`` is large (millions of cycles: the step that would finish it
        # is below the float resolution of ``now``, and the loop would spin)
        for key in [k for k, (left, *_) in dram.active.items() if left <= 1e-6]:
            del dram.active[key]
            dram.urgent.discard(key)
            dram.known = None
            kind, i = key
            if kind == "r":
                loaded(i)
            else:
                s = state[i]
                s.writing = False
                if s.computed:
                    finish(s)
        while timers and timers[0][0] <= now + 1e-9:
            _, _, kind, i, j = heapq.heappop(timers)
            s = state[i]
            if kind == "read":
                begin_read(i)
            elif kind == "loaded":
                loaded(i)
            elif kind == "computed":
                s.computed = True
                if not s.writing:
                    finish(s)
        deal()
        start_loads()
        start_compute()
    if spans is not None:
        for i in range(taus):
            spans[i]["drain"] += max(end + c["drain"] - now, 0.0)
            spans[i]["compute"] -= stalled[i]
            spans[i]["banks"] += stalled[i]
    return end + c["drain"], dealt, (held, slid)


def _without_held(jobs, held):
    """``jobs`` with the read beats and DMA cycles of the held tiles taken out, and of the
    slid tiles but for their new part (``held``: :func:`_simulate`'s held and slid jobs)."""
    import dataclasses
    read, datapath = jobs.read.copy(), jobs.datapath.copy()
    held, slid = held
    for j, r in held:
        read[j] -= jobs.port_read[j, r]
        datapath[j] -= jobs.port_datapath[j, r]
    for j, r in slid:
        read[j] -= jobs.port_read[j, r] - jobs.slide["read"][j]
        datapath[j] -= jobs.port_datapath[j, r] - jobs.slide["datapath"][j]
    return dataclasses.replace(jobs, read=read, datapath=datapath)


# ---- public entry points ----------------------------------------------------------------------

#: What a TAU's Compute Pipeline does or waits for, as :func:`spans` counts it.
SPANS = {
    "fill": "before its first job: the first loads (latency, data)",
    "compute": "a job's instructions",
    "banks": "a job's RP reads wait for the rows a load writes into the banks (single-port "
             "banks only: one CP cycle a row)",
    "writes": "a job's instructions done, its write beats not yet (the WP's FIFO)",
    "commit": "the next job's tiles loaded, not yet readable (commit latency)",
    "leader": "a follower's next job loaded but for the shared slot, which its leader fetches",
    "latency": "the DMA waits for the first data of the next job's load (restart + latency)",
    "load": "the DMA moves the next job's tiles (DRAM or its data path)",
    "credit": "a leader's DMA waits for every follower's credit before the shared load",
    "fifo": "the next job waits for room in an RP tile FIFO",
    "dispatch": "no job: the TAU's next tile not yet dealt (its group's slots not all empty)",
    "drain": "no tile left for this TAU; the others' last jobs and the last write response",
}

def predict(kernel, *, taus=1, dram_bytes_per_cycle=8, latency=20, rp_bytes=RP_BYTES,
            rp_ports=RP_PORTS):
    """Predict cycles and utilization of ``kernel`` on ``taus`` TAUs sharing one DRAM port.

    Parameters
    ----------
    kernel : merit.compile.Kernel
        From :func:`merit.compile.compile_problem`.
    taus : int
        TAUs (each ``kernel.lanes`` lanes); parallel tiles are dealt dynamically.
    dram_bytes_per_cycle : float
        Average DRAM bandwidth shared by every TAU's reads and writes; the 64-bit port moves at
        most one 8-byte beat per cycle, so values above 8 change nothing.
    latency : int
        DRAM read latency in cycles (burst acceptance to first data beat).
    rp_bytes : (int, int)
        SRAM bytes of RP0 and RP1 (default 16 KB, 8 KB), as given to ``compile_problem``: how
        many jobs' tiles the RP tile FIFOs hold at once.
    rp_ports : int
        Ports of the RP SRAM banks (default :data:`merit.arch.RP_PORTS`, as built): 2 (a read
        and a write port) or 1 (single-port banks, where every row a load writes costs the CP a
        read cycle).

    Returns
    -------
    Prediction
    """
    taus, bandwidth, beat_rate, latency, rp_bytes, rp_ports = _checked(
        kernel, taus, dram_bytes_per_cycle, latency, rp_bytes, rp_ports)
    jobs = _jobs(kernel, rp_bytes, taus)
    end, dealt, held = _simulate(jobs, taus, beat_rate, latency, rp_ports=rp_ports)
    if any(held):   # the loads that a held or slid tile saved (``Kernel.hold``, ``.slide``)
        jobs = _without_held(jobs, held)
    cycles = int(math.ceil(end))
    lanes = kernel.lanes
    n_t = len(kernel.tiles)
    per_tile = []
    for t, origin in enumerate(kernel.tiles):
        sel = jobs.tile == t
        per_tile.append(TileCost(tuple(int(v) for v in origin), int(sel.sum()),
                                 int(jobs.compute[sel].sum()),
                                 int(jobs.read[sel].sum()) * BEAT_BYTES,
                                 int(jobs.write[sel].sum()) * BEAT_BYTES, dealt[t]))
    read_bytes = int(jobs.read.sum()) * BEAT_BYTES
    write_bytes = int(jobs.write.sum()) * BEAT_BYTES
    compute_cycles = int(math.ceil(jobs.compute.sum() / taus))
    dram_cycles = int(math.ceil((read_bytes + write_bytes) / min(bandwidth, BEAT_BYTES)))
    port_cycles = int(math.ceil((np.maximum(jobs.read, beat_rate * jobs.datapath).sum()
                                 + jobs.write.sum()) / beat_rate))
    outputs = int(np.prod(kernel.problem.p_shape))
    occupancy = outputs / (n_t * int(np.prod(kernel.tiling.p_tile)))
    if max(compute_cycles, port_cycles) < 0.85 * cycles:
        bound = "tile turnaround"
    elif port_cycles >= compute_cycles:
        bound = "DRAM"
    else:
        bound = "ALUs"
    if occupancy < 0.8:
        bound += " + tile quantization"
    return Prediction(
        cycles=cycles,
        utilization=kernel.useful_ops / (cycles * lanes * taus),
        compute_cycles=compute_cycles,
        dram_cycles=dram_cycles,
        port_cycles=port_cycles,
        bound=bound,
        tiles=n_t,
        jobs=len(jobs.tile),
        read_bytes=read_bytes,
        write_bytes=write_bytes,
        useful_ops=int(kernel.useful_ops),
        lane_occupancy=occupancy,
        lanes=lanes,
        taus=taus,
        dram_bytes_per_cycle=bandwidth,
        latency=latency,
        per_tile=tuple(per_tile),
    )


def predict_cycles(kernel, *, taus=1, dram_bytes_per_cycle=8, latency=20, rp_bytes=RP_BYTES,
                   rp_ports=RP_PORTS, stop=None):
    """:func:`predict`'s ``cycles`` alone (same arguments), or None as soon as they are certain
    to be at least ``stop``: where the Compute Pipeline's cycles of the real tiles' jobs,
    spread evenly over the TAUs, already reach it (each TAU runs its jobs one after the other
    and its last real tile writes after them), or where the simulation passes it with a tile's
    outputs still to write. For choosing among kernels: a candidate that cannot beat the best
    one so far is not simulated to its end, and every other gets the cycles :func:`predict`
    gives."""
    taus, _, beat_rate, latency, rp_bytes, rp_ports = _checked(
        kernel, taus, dram_bytes_per_cycle, latency, rp_bytes, rp_ports)
    if stop is not None:
        n_a = len(_a_tiles(kernel))
        warps = int(_tile_warps(kernel, np.asarray(kernel.tiles, dtype=np.int64).reshape(
            len(kernel.tiles), -1)).sum())
        compute = len(kernel.tiles) * int(_job_cycles(kernel).sum()) \
            + warps * int(_warp_cycles(kernel).sum())
        if n_a and compute / taus + CONSTANTS["drain"] >= stop:
            return None
    jobs = _jobs(kernel, rp_bytes, taus)
    out = _simulate(jobs, taus, beat_rate, latency, rp_ports=rp_ports,
                    stop=stop)
    return None if out is None else int(math.ceil(out[0]))


def spans(kernel, *, taus=1, dram_bytes_per_cycle=8, latency=20, rp_bytes=RP_BYTES,
          rp_ports=RP_PORTS):
    """Where each TAU's cycles go: a list of ``taus`` dicts ``{span: cycles}`` over
    :data:`SPANS`, each summing to the predicted cycles (:func:`predict`, same arguments). A
    span is charged to what the Compute Pipeline waits for; the cause of a ``load`` may be the
    DRAM port shared with the other TAUs."""
    taus, _, beat_rate, latency, rp_bytes, rp_ports = _checked(
        kernel, taus, dram_bytes_per_cycle, latency, rp_bytes, rp_ports)
    jobs = _jobs(kernel, rp_bytes, taus)
    out = [collections.Counter({k: 0.0 for k in SPANS}) for _ in range(taus)]
    _simulate(jobs, taus, beat_rate, latency, spans=out, rp_ports=rp_ports)
    return [dict(c) for c in out]


def predict_problem(problem, *, lanes=32, taus=4, dram_bytes_per_cycle=8, latency=20,
                    **compile_kwargs):
    """Compile ``problem`` (:func:`merit.compile.compile_problem`) and :func:`predict` it.

    For layers too large to simulate; ``compile_kwargs`` go to ``compile_problem`` (by default
    24 instruction slots, the TAU of the measurements).
    """
    from .compile import compile_problem
    compile_kwargs.setdefault("instructions", 24)
    kernel = compile_problem(problem, lanes=lanes, taus=taus, **compile_kwargs)
    return predict(kernel, taus=taus, dram_bytes_per_cycle=dram_bytes_per_cycle,
                   latency=latency, rp_bytes=compile_kwargs.get("rp_bytes", RP_BYTES))
