"""Choose tile shape, lane grouping, padding and XOR hash for a problem (paper §IV-B, §V-C).

:func:`search` walks tile shapes from the cheapest in DRAM traffic, and for each tries lane
groupings (re-tilings) and, per operand, paddings from none upwards with the identity bank function
and the X/R hashes that :func:`~merit.mapping.matrix.find_hash` derives from the property matrix of
the lane coefficients. Every candidate is verified step by step with
:func:`~merit.mapping.analysis.analyze_operand`; the first tile with a conflict-free mapping is
returned with its least-padding choice, or :class:`NoMapping` says why there is none.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .analysis import (
    LaneGrouping,
    MappingReport,
    analyze_operand,
    default_grouping,
    lane_coefficients,
)
from .bank import BankFunction, TileLayout, check_lanes
from .matrix import find_hash, property_matrix

__all__ = ["NoMapping", "search", "hash_candidates", "tile_candidates", "tile_sizes",
           "computed_warps", "lane_splits", "vector_lines"]


class NoMapping(ValueError):
    """No tile, grouping and layout within the limits is conflict-free."""


def hash_candidates(coeffs, lanes, max_bits=16):
    """Bank functions to try for lane coefficients ``coeffs``: the identity, then the X/R of
    Eq. 16 found for property matrices over ``m`` up to the address bits that the coefficients
    flip (at most ``max_bits``)."""
    lanes = check_lanes(lanes)
    m = lanes.bit_length() - 1
    out = [BankFunction(lanes)]
    broadcast = [i for i, c in enumerate(coeffs) if c == 0]
    top = max([m] + [(abs(c) & -abs(c)).bit_length() for c in coeffs if c])
    for k in range(m, min(top, max_bits) + 1):
        choice = find_hash(property_matrix(coeffs, k), lanes, broadcast=broadcast)
        if choice is not None and choice.bank not in out:
            out.append(choice.bank)
    return out


def _pitches(box, max_pad):
    """Row-major pitches with ``0 .. max_pad`` unused words after every innermost row."""
    if len(box) == 1:
        yield (1,)
        return
    for pad in range(max_pad + 1):
        pitch = [box[-1] + pad, 1]
        for b in reversed(box[1:-1]):
            pitch.insert(0, pitch[0] * b)
        yield tuple(pitch)


def _best_layout(transform, tile_p, tile_a, grouping, budget, max_pad, cache, accept=None):
    """Least-padding conflict-free layout of one operand (padding at most ``max_pad`` words per
    row, and ``accept(tile_p, tile_a, layout)`` where given), or ``(None, reason)``."""
    key = (id(transform), tile_p, tile_a, grouping.bits, max_pad, accept)
    if key in cache:
        return cache[key]
    box = transform.footprint(tile_p, tile_a)
    lanes = grouping.lanes
    result, reason = None, None
    for pitch in _pitches(box, max_pad):
        layout = TileLayout(box, BankFunction(lanes), pitch=pitch)
        if layout.words > budget:
            reason = reason or (f"tensor {transform.name!r}: box {box} needs {layout.words} "
                                f"words with pitch {pitch}, the SRAM has {budget}")
            break
        coeffs = lane_coefficients(transform, tile_p, tile_a, grouping, layout)
        for bank in hash_candidates(coeffs, lanes):
            if accept is not None and not accept(tile_p, tile_a, TileLayout(box, bank,
                                                                             pitch=pitch)):
                reason = reason or (f"tensor {transform.name!r}: layout with pitch {pitch}, "
                                    f"{bank} refused by the caller")
                continue
            report = analyze_operand(transform, tile_p, tile_a, grouping,
                                     TileLayout(box, bank, pitch=pitch))
            if report.ok:
                result = report
                break
            reason = str(report)
        if result is not None:
            break
    cache[key] = (result, reason)
    return result, reason


def _is_contiguous(grouping):
    """Each index's lane bits are its low tile-coordinate bits in order, and inner indices take
    the low lane bits (the lane fields of the TAU and the CP)."""
    index = [j for j, _ in grouping.bits]
    if index != sorted(index, reverse=True):
        return False
    return all([b for jj, b in grouping.bits if jj == j] == list(range(index.count(j)))
               for j in set(index))


def _groupings(tile_p, lanes, contiguous):
    """Lane groupings of ``tile_p``: the native one first, then every other choice of lane bits
    (low bits and inner indices first), each in canonical order; only lane fields when
    ``contiguous``."""
    m = lanes.bit_length() - 1
    available = [(j, b) for j in reversed(range(len(tile_p)))
                 for b in range(int(tile_p[j]).bit_length() - 1)]
    native = default_grouping(tile_p, lanes)
    yield native
    for combo in itertools.combinations(sorted(available, key=lambda jb: (jb[1], -jb[0])), m):
        bits = tuple(sorted(combo, key=lambda jb: (-jb[0], jb[1])))
        grouping = LaneGrouping(bits)
        if contiguous and not _is_contiguous(grouping):
            continue
        if bits != native.bits:
            try:
                grouping.check(tile_p, lanes)
            except ValueError:
                continue
            yield grouping


def computed_warps(tile_p, p_shape, per_index):
    """Warps that the tiles of ``tile_p`` run over the parallel space ``p_shape`` with
    ``per_index`` lanes along each index: an edge tile skips its warps wholly outside the space
    (``Tiling.edge_warps``), so along an index of ``n`` the tiles run
    ``sum over origins o of min(t / lanes_j, ceil((n - o) / lanes_j))`` warps, and the counts of
    the indices multiply."""
    total = 1
    for t, n, k in zip(tile_p, p_shape, per_index, strict=True):
        total *= sum(warps_along(t, n, k))
    return total


@functools.lru_cache(maxsize=4096)
def warps_along(t, n, k):
    """The warps of each tile along one index of ``n`` cut in tiles of ``t`` with ``k`` lanes
    along it, in origin order (a tuple): ``min(t / k, ceil((n - o) / k))`` at origin ``o``, at
    least 1. Cached: the compiler's ranking asks for the same few indices many times."""
    return tuple(max(1, min(t // k, -(-(n - o) // k))) for o in range(0, n, t))


def vector_lines(grouping, p_shape, words_per_line=4, pitch=None, offset=0):
    """8-byte lines that one output vector at the origin of the parallel space writes (the
    output dense row-major over ``p_shape``, 16-bit words, or at element ``offset + sum p_j
    pitch[j]``: an affine output map): the WP writes a beat per line that a vector's valid
    lanes touch."""
    return _vector_lines(grouping.bits, tuple(int(n) for n in p_shape), words_per_line,
                         None if pitch is None else tuple(int(q) for q in pitch), int(offset))


@functools.lru_cache(maxsize=4096)
def _vector_lines(bits, p_shape, words_per_line, pitch, offset):
    """:func:`vector_lines` of hashable arguments, cached (the compiler's ranking asks for the
    same lane groupings of one problem many times)."""
    n_p, lanes = len(p_shape), 1 << len(bits)
    coord = np.zeros((n_p, lanes), dtype=np.int64)
    lane = np.arange(lanes)
    rank = [0] * n_p
    for i, (j, _) in enumerate(bits):
        coord[j] += ((lane >> i) & 1) << rank[j]
        rank[j] += 1
    if pitch is None:
        pitch = np.ones(n_p, dtype=np.int64)
        for j in range(n_p - 2, -1, -1):
            pitch[j] = pitch[j + 1] * p_shape[j + 1]
    pitch = np.asarray(pitch, dtype=np.int64)
    valid = (coord < np.asarray(p_shape)[:, None]).all(axis=0)
    address = offset + (coord * pitch[:, None]).sum(axis=0)[valid]
    return len(set((address // words_per_line).tolist()))


def lane_splits(tile_p, lanes):
    """Every contiguous lane grouping of ``tile_p`` (each index takes its low tile-coordinate
    bits, inner indices the low lane bits): ``(grouping, lanes per index)`` pairs."""
    return iter(_lane_splits(tuple(int(t) for t in tile_p), int(lanes)))


@functools.lru_cache(maxsize=4096)
def _lane_splits(tile_p, lanes):
    """:func:`lane_splits` as a tuple, cached (the compiler's searches ask for the same tiles
    again, one search per tile cap and sharing choice)."""
    return tuple(_lane_splits_of(tile_p, lanes))


def _lane_splits_of(tile_p, lanes):
    m = lanes.bit_length() - 1
    room = [(int(t) & -int(t)).bit_length() - 1 for t in tile_p]

    def splits(j, left):
        if j < 0:
            if left == 0:
                yield ()
            return
        for b in range(min(room[j], left) + 1):
            for rest in splits(j - 1, left - b):
                yield rest + (b,)

    for counts in splits(len(tile_p) - 1, m):
        bits = tuple((j, b) for j in reversed(range(len(tile_p))) for b in range(counts[j]))
        yield LaneGrouping(bits), tuple(1 << c for c in counts)


def _shrink(a_shape):
    """Accumulation tiles from ``a_shape`` downwards: halve the outermost index above 1."""
    t = list(a_shape)
    yield tuple(t)
    while any(v > 1 for v in t):
        j = next(i for i, v in enumerate(t) if v > 1)
        t[j] = (t[j] + 1) // 2
        yield tuple(t)


#: Even splits tried per parallel index besides the powers of two: an index of size ``p`` is cut
#: into ``k`` tiles of ``ceil(p / k)`` for ``k`` up to this many.
SPLITS = 8


def tile_sizes(size, splits=SPLITS):
    """Tile sizes tried along a parallel index of ``size``: the powers of two up to the first
    that covers it, and the even splits ``ceil(size / k)`` (``k <= splits``), so that 13, 27 or
    55 outputs are covered by one or a few tiles without outputs beyond the edge (13, 14 and 7,
    28 and 19); the lane grouping then puts the lanes on indices whose tile size has the factors
    of two (:func:`~merit.mapping.analysis.default_grouping`)."""
    powers = {1 << e for e in range(max(0, math.ceil(math.log2(size))) + 1)}
    return sorted(powers | {-(-size // k) for k in range(1, min(splits, size) + 1)})


def tile_candidates(problem, lanes, budgets, max_outputs, *, powers_only=False):
    """``(cost, tile_p, tile_a)`` for parallel tiles of ``lanes .. max_outputs`` outputs
    (:func:`tile_sizes` along each index), each with the largest accumulation tile whose dense
    footprints fit ``budgets``; ``cost`` = DRAM words loaded per output (lower first; at equal
    cost, more outputs first), the outputs of a tile counted as the mean share per tile along
    each index (``size / tiles``), so a tile past the edge costs what it loads for nothing;
    ``powers_only``: powers of two only."""
    transforms = [op.transform for op in problem.operands]
    sizes = [tile_sizes(p, splits=0 if powers_only else SPLITS) for p in problem.p_shape]
    bits = lanes.bit_length() - 1
    out = []
    for tile_p in itertools.product(*sizes):
        count = math.prod(tile_p)
        if count < lanes or count > max_outputs:
            continue
        if sum((t & -t).bit_length() - 1 for t in tile_p) < bits:
            continue            # the lanes need log2(lanes) factors of two among the sizes
        for tile_a in _shrink(problem.a_shape):
            words = [math.prod(tr.footprint(tile_p, tile_a)) for tr in transforms]
            if all(w <= b for w, b in zip(words, budgets, strict=True)):
                break
        else:
            continue
        useful = float(np.prod([p / math.ceil(p / t)
                                for t, p in zip(tile_p, problem.p_shape, strict=True)]))
        a_tiles = math.prod(math.ceil(a / t) for a, t in zip(problem.a_shape, tile_a,
                                                             strict=True))
        cost = sum(words) * a_tiles / useful
        out.append((cost, -count, tile_p, tile_a))
    out.sort()
    return [(cost, tile_p, tile_a) for cost, _, tile_p, tile_a in out]


def search(problem, lanes, sram_words=8192, *, max_outputs=None, max_pad=None, max_tiles=30,
           contiguous=True, alternatives=1, powers_only=False, rank=None, accept=None):
    """Pick tile shape, lane grouping and per-operand layout (padding, XOR hash) so that every
    SIMD step of a tile is conflict-free and routable through the butterfly.

    Parameters
    ----------
    problem : merit.Problem
    lanes : int
        ``N``, a power of two.
    sram_words : int or sequence of int
        Words of SRAM per operand (one Read Pipeline each): one value for all, or one per operand.
    max_outputs : int, optional
        Largest parallel tile (default ``16 * lanes``).
    max_pad : int, optional
        Most unused words after each innermost box row (default ``lanes``).
    max_tiles : int
        Tile shapes tried, cheapest first.
    contiguous : bool
        Only lane groupings that MERIT-z's lane fields can express: each parallel index takes its
        low tile-coordinate bits, inner indices the low lane bits (``merit.compile`` needs this).
        ``False`` also tries the paper's other re-tilings (e.g. Fig. 6 (iii): rows 0 and 2).
    alternatives : int
        How many mapped tiles to return (``merit.compile`` weighs a few with ``merit.perf``).
    powers_only : bool
        Tile sizes that are powers of two only (:func:`tile_candidates`).
    rank : callable, optional
        ``rank(tile_p, tile_a, warps, lines) -> key`` of a tile under one contiguous lane
        grouping that runs ``warps`` warps over the parallel space (:func:`computed_warps`: the
        idle lanes of edge tiles) and whose output vectors write ``lines`` 8-byte lines each
        (:func:`vector_lines`). Tiles are tried from the lowest key of any of their groupings
        (then the cheapest in DRAM traffic), a tile's groupings from their lowest key up
        (contiguous ones only), and the first that maps wins, then the least padding among
        equal keys: the compiler ranks by estimated time, compute and writes included
        (``merit.compile``).
    accept : dict, optional
        Operand position -> ``accept(tile_p, tile_a, layout) -> bool``: only the layouts it
        accepts are tried for that operand (``merit.compile``: a sliding operand's move must
        keep its rows whole and its words in their banks).

    Returns
    -------
    MappingReport, or a list of them when ``alternatives`` > 1
        The chosen tile (cheapest DRAM traffic per output that maps), its grouping and layouts
        (least total padding among that tile's groupings); with ``alternatives``, that many
        such tiles, cheapest first, and more (up to twice as many) until one whose sizes are all
        powers of two is among them.

    Raises
    ------
    NoMapping
        With the reason: nothing fits the SRAM, or the best tiles all conflict (an example).
    """
    lanes = check_lanes(lanes)
    transforms = [op.transform for op in problem.operands]
    budgets = _budgets(sram_words, len(transforms))
    max_outputs = 16 * lanes if max_outputs is None else max_outputs
    max_pad = lanes if max_pad is None else max_pad
    candidates = tile_candidates(problem, lanes, budgets, max_outputs, powers_only=powers_only)
    if not candidates:
        total = int(np.prod(problem.p_shape))
        if total < lanes:
            raise NoMapping(f"problem {problem.name!r} has {total} parallel outputs, fewer than "
                            f"the {lanes} lanes of one step")
        raise NoMapping(f"problem {problem.name!r}: no tile of {lanes}..{max_outputs} outputs "
                        f"fits SRAMs of {budgets} words")
    occupancy = {}
    if rank is not None:
        for _cost, tile_p, tile_a in candidates:
            occupancy[tile_p, tile_a] = sorted(
                ((rank(tile_p, tile_a, computed_warps(tile_p, problem.p_shape, per),
                       vector_lines(g, problem.p_shape, pitch=problem.out_pitch,
                                    offset=problem.out_offset())), g)
                 for g, per in lane_splits(tile_p, lanes)), key=lambda kg: kg[0])
        candidates = sorted(candidates, key=lambda c: (occupancy[c[1], c[2]][0][0], c[0]))
    cache = {}
    reason = None
    found = []
    for _cost, tile_p, tile_a in candidates[:max_tiles]:
        best, best_warps = None, None
        if rank is None:
            ordered = ((None, g) for g in _groupings(tile_p, lanes, contiguous))
        else:
            ordered = occupancy[tile_p, tile_a]
        for warps, grouping in ordered:
            if best is not None and warps is not None and warps > best_warps:
                break           # sorted by key: no later grouping can win
            reports = []
            for tr in transforms:
                # a grouping needing more padding per row than the best so far cannot win
                limit = max_pad if best is None else min(max_pad, best.padding)
                report, why = _best_layout(tr, tile_p, tile_a, grouping, budgets[len(reports)],
                                           limit, cache, (accept or {}).get(len(reports)))
                if report is None:
                    reason = reason or (f"tile p={tile_p} a={tile_a}, lane bits "
                                        f"{grouping.bits}: {why}")
                    break
                reports.append(report)
            else:
                mapping = MappingReport(tile_p=tile_p, tile_a=tile_a, lanes=lanes,
                                        grouping=grouping, operands=tuple(reports))
                if best is None or mapping.padding < best.padding:
                    best, best_warps = mapping, warps
                if best.padding == 0:
                    break
        if best is not None:
            if alternatives == 1:
                return best
            found.append(best)
            # the cheapest power-of-two tile stays among the alternatives
            if len(found) >= alternatives and (any(_powers_of_two(f.tile_p) for f in found)
                                               or len(found) >= 2 * alternatives):
                break
    if found:
        return found
    raise NoMapping(f"problem {problem.name!r} on {lanes} lanes: none of the "
                    f"{min(len(candidates), max_tiles)} cheapest tiles maps without conflicts; "
                    f"first failure: {reason}")


def _powers_of_two(tile_p):
    return all(t & (t - 1) == 0 for t in tile_p)


def _budgets(sram_words, count):
    if isinstance(sram_words, (int, np.integer)) and not isinstance(sram_words, bool):
        budgets = [int(sram_words)] * count
    else:
        try:
            budgets = [int(b) for b in sram_words]
        except TypeError:
            raise TypeError(f"sram_words must be an integer or one per operand, "
                            f"not {sram_words!r}") from None
        if len(budgets) != count:
            raise ValueError(f"sram_words must have one entry per operand ({count}), "
                             f"not {len(budgets)}")
    if any(b <= 0 for b in budgets):
        raise ValueError(f"sram_words must be positive, not {sram_words!r}")
    return budgets
