"""Conflict analysis of a tiled MERIT problem on N banks (paper §IV-B, Fig. 6; UMI §4.2).

A tile of the parallel space is executed in SIMD steps of N lanes. The *lane grouping* (re-tiling)
says which parallel indices share one step: lane bit ``i`` is bit ``b`` of the tile coordinate of
parallel index ``j``. The other bits of the parallel coordinates and every accumulation index are
walked step by step. In the footprint box of an operand (Eq. 9), placed by a
:class:`~merit.mapping.bank.TileLayout`, lane ``n`` then reads ``A_n = A_0 + sum_i c_i bit_i(n)``
(Eq. 10) with ``c_i = 2**b * s_j * pitch[d_j]``.

Every step of a tile is checked: a **conflict** is two lanes needing different rows of one bank;
a **blocked** step is conflict-free but not deliverable by the butterfly in one pass. Broadcasts
(lanes reading one address) are free. Steps are reduced to their base address modulo the period of
the bank function, so whole layers are checked in milliseconds.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..transform import Transform
from .bank import BankFunction, TileLayout, check_lanes
from .network import route_many

__all__ = ["LaneGrouping", "default_grouping", "lane_coefficients", "step_bases",
           "OperandReport", "analyze_operand", "MappingReport", "analyze"]


@dataclass(frozen=True)
class LaneGrouping:
    """Which parallel index supplies each lane bit.

    Parameters
    ----------
    bits : sequence of (int, int)
        Lane bit ``i`` (LSB first) is bit ``bits[i][1]`` of the tile coordinate of parallel
        index ``bits[i][0]``. ``len(bits) = log2 N``.

    Fig. 6 with p = (y, x): native 2x4 groups ``((1, 0), (1, 1), (0, 0))`` give c = (1, 2, 6);
    the re-tilings (iii) ``((1, 0), (1, 1), (0, 1))`` and (iv) ``((1, 0), (0, 0), (0, 1))`` give
    (1, 2, 12) and (1, 6, 12).
    """

    bits: tuple

    def __post_init__(self):
        try:
            bits = tuple((operator.index(j), operator.index(b)) for j, b in self.bits)
        except (TypeError, ValueError):
            raise TypeError(f"bits must be a sequence of (parallel index, bit) pairs, "
                            f"not {self.bits!r}") from None
        if len(set(bits)) != len(bits):
            raise ValueError(f"bits must not repeat a (parallel index, bit) pair: {bits}")
        if any(j < 0 or b < 0 for j, b in bits):
            raise ValueError(f"bits must hold non-negative indices and bits, not {bits}")
        object.__setattr__(self, "bits", bits)

    @property
    def lanes(self):
        return 1 << len(self.bits)

    def mask(self, j):
        """Bits of parallel index ``j``'s tile coordinate taken by the lanes."""
        return sum(1 << b for jj, b in self.bits if jj == j)

    def check(self, tile_p, lanes):
        """Raise ValueError unless this grouping fits ``tile_p`` and ``lanes``."""
        if self.lanes != lanes:
            raise ValueError(f"grouping has {len(self.bits)} lane bits but lanes = {lanes} "
                             f"needs {lanes.bit_length() - 1}")
        for j, b in self.bits:
            if j >= len(tile_p):
                raise ValueError(f"grouping names parallel index {j}, but there are "
                                 f"{len(tile_p)}")
            top = max(bb for jj, bb in self.bits if jj == j)
            if tile_p[j] % (2 << top):
                raise ValueError(f"tile_p[{j}] = {tile_p[j]} must be a multiple of {2 << top} "
                                 f"for lane bit {b} of parallel index {j}")


def default_grouping(tile_p, lanes):
    """Lane bits from the innermost parallel index outwards, low bits first (the native tiling:
    a 4x4 tile on 8 lanes gives 2x4 groups)."""
    lanes = check_lanes(lanes)
    need = lanes.bit_length() - 1
    bits = []
    for j in reversed(range(len(tile_p))):
        b = 0
        while len(bits) < need and tile_p[j] % (2 << b) == 0:
            bits.append((j, b))
            b += 1
    if len(bits) < need:
        raise ValueError(f"tile_p {tuple(tile_p)} has {int(np.prod(tile_p))} outputs; "
                         f"{lanes} lanes need a power-of-two split of at least {lanes}")
    return LaneGrouping(tuple(bits))


def _weights(transform, layout):
    """Address step of every index position of ``transform`` in ``layout`` (0 = broadcast)."""
    w = [0] * len(transform.indices)
    for axis, terms in enumerate(transform.terms):
        for pos, s in terms:
            w[pos] += s * layout.pitch[axis]
    return w


def _tile(transform, tile_p, tile_a):
    tp, ta = transform.check_shapes(tile_p, tile_a)
    return tp + ta


def lane_coefficients(transform, tile_p, tile_a, grouping, layout):
    """``c_i`` of Eq. 10 for ``transform`` under ``grouping`` and ``layout``."""
    _tile(transform, tile_p, tile_a)
    w = _weights(transform, layout)
    return tuple(w[j] << b for j, b in grouping.bits)


def _base(transform, t, layout):
    """Address of element ``k = 0`` inside the box (non-zero on axes walked backwards)."""
    base = 0
    for axis, terms in enumerate(transform.terms):
        base += sum(-(t[pos] - 1) * s for pos, s in terms if s < 0) * layout.pitch[axis]
    return base


def step_bases(transform, tile_p, tile_a, grouping, layout, period=None):
    """``A_0`` of every SIMD step of one tile, as a histogram.

    Returns ``counts`` of length ``period`` (default: the whole address range): ``counts[r]``
    steps have ``A_0 = r`` (mod ``period``).
    """
    t = _tile(transform, tile_p, tile_a)
    w = _weights(transform, layout)
    span = layout.words
    period = span if period is None else period
    counts = np.zeros(period, np.int64)
    counts[_base(transform, t, layout) % period] = 1
    n_p = len(transform.p)
    for pos, (size, weight) in enumerate(zip(t, w, strict=True)):
        mask = grouping.mask(pos) if pos < n_p else 0
        values = np.arange(size)
        values = values[(values & mask) == 0]
        if weight == 0:
            counts *= len(values)
            continue
        present = np.flatnonzero(counts)
        moved = (present[:, None] + values[None, :] * weight) % period
        acc = np.zeros_like(counts)
        np.add.at(acc, moved.ravel(), np.repeat(counts[present], len(values)))
        counts = acc
    return counts


@dataclass(frozen=True)
class OperandReport:
    """The SIMD steps of one operand in one layout.

    Attributes
    ----------
    name : str
        The tensor.
    coeffs : tuple
        ``c_i`` of Eq. 10.
    layout : TileLayout
    steps : int
        SIMD steps of one tile.
    conflict_steps : int
        Steps where two lanes need different rows of one bank.
    blocked_steps : int
        Conflict-free steps the butterfly cannot deliver in one pass.
    example : tuple or None
        Lane addresses of a bad step (one with a conflict if any).
    """

    name: str
    coeffs: tuple
    layout: TileLayout
    steps: int
    conflict_steps: int
    blocked_steps: int
    example: tuple | None

    @property
    def ok(self):
        return self.conflict_steps == 0 and self.blocked_steps == 0

    def __str__(self):
        state = "ok" if self.ok else (f"{self.conflict_steps} conflicting, {self.blocked_steps} "
                                      f"blocked of {self.steps} steps, e.g. lane addresses "
                                      f"{list(self.example)}")
        return (f"{self.name}: c = {self.coeffs}, box {self.layout.box} pitch "
                f"{self.layout.pitch}, {self.layout.bank!r}: {state}")


def _offsets(coeffs, lanes):
    n = np.arange(lanes)
    return sum(np.int64(c) * ((n >> i) & 1) for i, c in enumerate(coeffs))


def _check_steps(bases, coeffs, bank):
    """``(conflict, blocked)`` boolean arrays for lane addresses ``bases[:, None] + offsets``."""
    addresses = np.asarray(bases, np.int64)[:, None] + _offsets(coeffs, bank.lanes)[None, :]
    banks, rows = bank.locate(addresses)
    same_bank = banks[:, :, None] == banks[:, None, :]
    conflict = (same_bank & (rows[:, :, None] != rows[:, None, :])).any(axis=(1, 2))
    _select, unroutable, _used, _tag = route_many(banks, rows)
    return conflict, unroutable & ~conflict, addresses


def analyze_operand(transform, tile_p, tile_a, grouping, layout):
    """Check every SIMD step of one operand; return an :class:`OperandReport`."""
    if not isinstance(transform, Transform):
        raise TypeError(f"transform must be a Transform, not {transform!r}")
    if not isinstance(layout, TileLayout):
        raise TypeError(f"layout must be a TileLayout, not {layout!r}")
    t = _tile(transform, tile_p, tile_a)
    grouping.check(t[:len(transform.p)], layout.bank.lanes)
    box = transform.footprint(tile_p, tile_a)
    if tuple(layout.box) != tuple(box):
        raise ValueError(f"tensor {transform.name!r}: layout box {layout.box} is not the "
                         f"footprint {box} of tile {tuple(tile_p)}, {tuple(tile_a)}")
    coeffs = lane_coefficients(transform, tile_p, tile_a, grouping, layout)
    bank = layout.bank
    period = 1 << bank.hash_bits
    counts = step_bases(transform, tile_p, tile_a, grouping, layout, period)
    residues = np.flatnonzero(counts)
    # shift the residues so that every lane address is non-negative (rows move together)
    low = min(0, int(_offsets(coeffs, bank.lanes).min()))
    shift = -(low // period) * period if low < 0 else 0
    conflict, blocked, addresses = _check_steps(residues + shift, coeffs, bank)
    bad = np.flatnonzero(conflict) if conflict.any() else np.flatnonzero(blocked)
    example = tuple(int(a) for a in addresses[bad[0]]) if len(bad) else None
    return OperandReport(name=transform.name, coeffs=coeffs, layout=layout,
                         steps=int(counts.sum()), conflict_steps=int(counts[residues][conflict]
                                                                      .sum()),
                         blocked_steps=int(counts[residues][blocked].sum()), example=example)


@dataclass(frozen=True)
class MappingReport:
    """The mapping of a whole problem: tile, lane grouping and one report per operand.

    Attributes
    ----------
    tile_p, tile_a : tuple
    lanes : int
    grouping : LaneGrouping
    operands : tuple of OperandReport
    """

    tile_p: tuple
    tile_a: tuple
    lanes: int
    grouping: LaneGrouping
    operands: tuple

    @property
    def ok(self):
        return all(op.ok for op in self.operands)

    @property
    def padding(self):
        return sum(op.layout.padding for op in self.operands)

    @property
    def words(self):
        return tuple(op.layout.words for op in self.operands)

    def layouts(self):
        """The ``TileLayout`` of every operand, in the problem's operand order."""
        return [op.layout for op in self.operands]

    def __str__(self):
        lines = [f"tile p={self.tile_p} a={self.tile_a}, {self.lanes} lanes, lane bits "
                 f"{self.grouping.bits}: {'conflict-free' if self.ok else 'CONFLICTS'}"]
        lines += [f"  {op}" for op in self.operands]
        return "\n".join(lines)


def analyze(problem, tile_p, tile_a, lanes, *, grouping=None, layouts=None):
    """Check every SIMD step of every operand of ``problem`` for one tile.

    Parameters
    ----------
    problem : merit.Problem
    tile_p, tile_a : sequence of int
        Tile sizes (Eq. 9).
    lanes : int
        ``N``, a power of two.
    grouping : LaneGrouping, optional
        Default :func:`default_grouping`.
    layouts : sequence of TileLayout, optional
        One per operand; default dense row-major boxes with the identity bank function.
    """
    lanes = check_lanes(lanes)
    tile_p, tile_a = tuple(tile_p), tuple(tile_a)
    grouping = default_grouping(tile_p, lanes) if grouping is None else grouping
    transforms = [op.transform for op in problem.operands]
    if layouts is None:
        layouts = [TileLayout(tr.footprint(tile_p, tile_a), BankFunction(lanes))
                   for tr in transforms]
    layouts = list(layouts)
    if len(layouts) != len(transforms):
        raise ValueError(f"layouts must have one TileLayout per operand ({len(transforms)}), "
                         f"not {len(layouts)}")
    reports = tuple(analyze_operand(tr, tile_p, tile_a, grouping, lay)
                    for tr, lay in zip(transforms, layouts, strict=True))
    return MappingReport(tile_p=tile_p, tile_a=tile_a, lanes=lanes, grouping=grouping,
                         operands=reports)
