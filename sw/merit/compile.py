"""Problem + hardware parameters -> the kernel configuration of a MERIT-z TAU (``docs/tau.md``).

The values are plain nested dicts and lists shaped like ``meritz.kernelcfg.layout()`` (this module
does not import amaranth; ``meritz.kernelcfg.pack`` turns the dict into register bits).

Placement rules (``docs/tau.md`` §3-5):

* a problem's P parallel indices are the hardware indices ``6 - P .. 5`` (innermost last), its A
  accumulation indices ``6 - A .. 5``; unused outer indices have extent 1;
* a tensor of D axes uses hardware axes ``4 - D .. 3``; unused outer axes have extent 1;
* a slot's tile is the full footprint box (Eq. 9) of one (parallel tile, accumulation tile), laid
  out row-major with local pitches ``lpitch`` and hashed into banks by a ``BankFunction``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mapping.bank import BankFunction
from .transform import Transform

__all__ = ["P_INDICES", "A_INDICES", "AXES", "CompileError", "Tiling", "lane_coords",
           "slot_config", "tile_words", "hw_index"]

P_INDICES = 6
A_INDICES = 6
AXES = 4
TILE_ADDRESS_BITS = 16


class CompileError(ValueError):
    """A problem that cannot be mapped onto the TAU; the message says which limit and why."""


@dataclass(frozen=True)
class Tiling:
    """How a problem is cut for one TAU.

    Attributes
    ----------
    p_tile : tuple of int
        Parallel tile size per problem parallel index.
    a_tile : tuple of int
        Accumulation tile size per problem accumulation index.
    lane_index : tuple of int
        Per lane bit (low first), the problem parallel index it moves.
    """

    p_tile: tuple
    a_tile: tuple
    lane_index: tuple

    def lanes_per_index(self):
        """``lanes_j``: lanes along each problem parallel index."""
        out = [1] * len(self.p_tile)
        for j in self.lane_index:
            out[j] *= 2
        return tuple(out)

    def warps(self):
        """Warps along each parallel index (``p_tile[j] / lanes_j``)."""
        return tuple(t // n for t, n in zip(self.p_tile, self.lanes_per_index(), strict=True))


def hw_index(count, limit, j):
    """Hardware position of problem index ``j`` of ``count`` (innermost last)."""
    return limit - count + j


def lane_coords(lane_index, n_par):
    """Array (n_par, lanes): the coordinate of each lane along each problem parallel index."""
    lanes = 1 << len(lane_index)
    out = np.zeros((n_par, lanes), dtype=np.int64)
    rank = [0] * n_par
    for i, j in enumerate(lane_index):
        out[j] += ((np.arange(lanes) >> i) & 1) << rank[j]
        rank[j] += 1
    return out


def _check_tiling(transform: Transform, tiling: Tiling, lanes):
    if len(tiling.p_tile) != len(transform.p) or len(tiling.a_tile) != len(transform.a):
        raise CompileError(
            f"tensor {transform.name!r}: tiling has {len(tiling.p_tile)} parallel and "
            f"{len(tiling.a_tile)} accumulation sizes, the transform {len(transform.p)} and "
            f"{len(transform.a)}")
    if 1 << len(tiling.lane_index) != lanes:
        raise CompileError(f"lane_index must name one parallel index per lane bit "
                           f"({lanes.bit_length() - 1} for {lanes} lanes), not "
                           f"{len(tiling.lane_index)}")
    for j, (t, n) in enumerate(zip(tiling.p_tile, tiling.lanes_per_index(), strict=True)):
        if t % n:
            raise CompileError(f"parallel tile size {t} of index p[{j}] must be a multiple of its "
                               f"{n} lanes")
    if len(transform.source_shape) > AXES:
        raise CompileError(f"tensor {transform.name!r} has {len(transform.source_shape)} axes; "
                           f"the TAU reads tensors of at most {AXES}")


def tile_words(transform, tiling, lpitch=None):
    """``(box, lpitch, words)`` of a slot's tile: footprint, local pitches, addresses spanned."""
    box = transform.footprint(tiling.p_tile, tiling.a_tile)
    if lpitch is None:
        lpitch = [1]
        for b in reversed(box[1:]):
            lpitch.insert(0, lpitch[0] * b)
    lpitch = tuple(int(p) for p in lpitch)
    return box, lpitch, box[0] * lpitch[0]


def slot_config(transform: Transform, tiling: Tiling, lanes, *, base=0, bank=None, lpitch=None,
                depth=None):
    """The configuration values of one input slot reading ``transform``.

    Parameters
    ----------
    transform : Transform
    tiling : Tiling
    lanes : int
    base : int
        DRAM byte address of the tensor's element 0.
    bank : BankFunction, optional
        Default: identity hash.
    lpitch : sequence of int, optional
        Local pitch per tensor axis (padding); default dense.
    depth : int, optional
        Rows of the RP's SRAM; a tile larger than it is refused.
    """
    _check_tiling(transform, tiling, lanes)
    bank = BankFunction(lanes) if bank is None else bank
    if bank.lanes != lanes:
        raise CompileError(f"bank function has {bank.lanes} banks, the TAU {lanes} lanes")
    nd = len(transform.source_shape)
    shift = AXES - nd
    box, lp, words = tile_words(transform, tiling, lpitch)
    rows = -(-words // lanes)
    if depth is not None and rows > depth:
        raise CompileError(f"tensor {transform.name!r}: a tile of footprint {box} needs {rows} "
                           f"SRAM rows, the RP has {depth}; use smaller tiles")
    if words >= 1 << (TILE_ADDRESS_BITS - 1):
        raise CompileError(f"tensor {transform.name!r}: a tile spans {words} addresses; tile "
                           f"addresses have {TILE_ADDRESS_BITS - 1} bits")
    n_p, n_a = len(transform.p), len(transform.a)
    axis = [0] * (P_INDICES + A_INDICES)
    stride = [0] * (P_INDICES + A_INDICES)
    lstep = [0] * (P_INDICES + A_INDICES)
    origin = 0
    for pos, idx in enumerate(transform.indices):
        if idx is None:
            continue
        hw = (hw_index(n_p, P_INDICES, pos) if pos < n_p
              else P_INDICES + hw_index(n_a, A_INDICES, pos - n_p))
        if not -128 <= idx.stride < 128:
            raise CompileError(f"tensor {transform.name!r}: stride {idx.stride} does not fit the "
                               f"8-bit stride field")
        axis[hw] = idx.axis + shift
        stride[hw] = idx.stride
        lstep[hw] = idx.stride * lp[idx.axis]
        if idx.stride < 0:
            t = (tiling.p_tile + tiling.a_tile)[pos]
            origin += (t - 1) * -idx.stride * lp[idx.axis]
    pad = [1] * shift

    def padded(values, fill):
        return [fill] * shift + [int(v) for v in values]

    dense = [1]
    for n in reversed(transform.source_shape[1:]):
        dense.insert(0, dense[0] * n)
    xor, rotate = bank.register_fields()
    return {
        "enable": 1,
        "base": int(base),
        "axis": axis,
        "stride": stride,
        "lstep": lstep,
        "offset": padded(transform.offset, 0),
        "extent": pad + list(transform.source_shape),
        "box": pad + list(box),
        "clamp": padded([m == "clamp" for m in transform.boundary], 0),
        "lpitch": (padded(lp, lp[0] if lp else 1))[:AXES - 1],
        "dpitch": padded(dense, dense[0])[:AXES - 1],
        "origin": origin,
        "rows": rows,
        "xor": list(xor) + [0] * (6 - len(xor)),
        "rotate": rotate,
    }
