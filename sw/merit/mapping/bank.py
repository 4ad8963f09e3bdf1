"""The bank function: where a tile address lives in N single-port SRAM banks (§IV-B, §V-C).

Element at tile address ``A`` lives in row ``A >> m`` of bank ``bank(A)``, ``m = log2 N``. The bank
is the low ``m`` address bits, XOR-hashed and rotated (paper Eq. 16)::

    x_j     = a_j XOR a_{xor[j]}        (xor[j] > j, or None for no hash term)
    bank_j  = x_{(j + rotate) mod m}     (R of Eq. 16 applied ``rotate`` times)

``X`` is upper triangular with at most one off-diagonal term per row, as in the paper, so every row
of the SRAM holds a permutation of its N addresses and the write side (collector) can route each
line through one butterfly plus rotation stages. This one class is the bank function of the read
path, the collector, the GPU module and the RTL benches.

:class:`TileLayout` places a footprint box (Eq. 9) row-major into tile addresses with optional
padding (``pitch``) and pairs it with a bank function.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

__all__ = ["BankFunction", "TileLayout", "check_lanes"]


def check_lanes(lanes, what="lanes"):
    """Return ``lanes`` if it is an integer power of two >= 2; raise TypeError/ValueError."""
    if isinstance(lanes, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, not {lanes!r}")
    try:
        lanes = operator.index(lanes)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {lanes!r}") from None
    if lanes < 2 or lanes & (lanes - 1):
        raise ValueError(f"{what} must be a power of two, not {lanes}")
    return lanes


@dataclass(frozen=True)
class BankFunction:
    """Address -> (bank, row) for ``lanes`` banks.

    Parameters
    ----------
    lanes : int
        Number of banks ``N`` (= lanes), a power of two.
    xor : sequence of (int or None), optional
        One entry per bank bit ``j``: the address bit XORed into bit ``j`` (must be ``> j``), or
        ``None``. Default: no hash.
    rotate : int
        ``0 <= rotate < log2 N``: bank bit ``j`` takes hashed bit ``(j + rotate) mod log2 N``.

    Attributes
    ----------
    bits : int
        ``m = log2 N``.
    hash_bits : int
        Number of low address bits the bank depends on (``>= m``).
    """

    lanes: int
    xor: tuple = None
    rotate: int = 0

    def __post_init__(self):
        lanes = check_lanes(self.lanes)
        m = lanes.bit_length() - 1
        xor = (None,) * m if self.xor is None else self.xor
        try:
            xor = tuple(xor)
        except TypeError:
            raise TypeError(
                f"xor must be a sequence of address bits or None, not {xor!r}") from None
        if len(xor) != m:
            raise ValueError(f"xor must have one entry per bank bit ({m}), not {len(xor)}")
        for j, src in enumerate(xor):
            if src is None:
                continue
            if isinstance(src, bool) or not isinstance(src, (int, np.integer)):
                raise TypeError(f"xor[{j}] must be an address bit or None, not {src!r}")
            if src <= j:
                raise ValueError(f"xor[{j}] must name an address bit above {j}, not {src}")
        xor = tuple(None if s is None else int(s) for s in xor)
        if isinstance(self.rotate, bool) or not isinstance(self.rotate, (int, np.integer)):
            raise TypeError(f"rotate must be an integer, not {self.rotate!r}")
        if not 0 <= self.rotate < max(m, 1):
            raise ValueError(f"rotate must be in [0, {m}), not {self.rotate}")
        object.__setattr__(self, "lanes", lanes)
        object.__setattr__(self, "xor", xor)
        object.__setattr__(self, "rotate", int(self.rotate))

    @property
    def bits(self):
        return self.lanes.bit_length() - 1

    @property
    def hash_bits(self):
        return max([self.bits] + [s + 1 for s in self.xor if s is not None])

    @property
    def is_identity(self):
        return self.rotate == 0 and all(s is None for s in self.xor)

    def __repr__(self):
        if self.is_identity:
            return f"BankFunction({self.lanes})"
        return f"BankFunction({self.lanes}, xor={self.xor}, rotate={self.rotate})"

    # ---- the function -------------------------------------------------------------------------

    def hashed(self, address):
        """``x = X a``: the bank before rotation (what the collector's butterfly routes to)."""
        a = np.asarray(address, dtype=np.int64)
        low = a & (self.lanes - 1)
        for j, src in enumerate(self.xor):
            if src is not None:
                low = low ^ (((a >> src) & 1) << j)
        return low

    def rotate_bits(self, x):
        """``R^rotate x``: bank bit ``j`` = bit ``(j + rotate) mod m`` of ``x``."""
        x = np.asarray(x, dtype=np.int64)
        m, r = self.bits, self.rotate
        if r == 0:
            return x
        return ((x >> r) | (x << (m - r))) & (self.lanes - 1)

    def bank(self, address):
        """Bank of each tile address (array-like of non-negative ints)."""
        return self.rotate_bits(self.hashed(address))

    def row(self, address):
        """Row of each tile address: ``A >> m``."""
        return np.asarray(address, dtype=np.int64) >> self.bits

    def locate(self, address):
        """``(bank, row)`` of each tile address."""
        return self.bank(address), self.row(address)

    def address(self, bank, row):
        """Inverse of :meth:`locate`: the tile address stored at ``(bank, row)``."""
        bank = np.asarray(bank, dtype=np.int64)
        row = np.asarray(row, dtype=np.int64)
        m, r = self.bits, self.rotate
        x = ((bank << r) | (bank >> (m - r))) & (self.lanes - 1) if r else bank
        a = row << m
        for j in reversed(range(m)):
            bit = (x >> j) & 1
            src = self.xor[j]
            if src is not None:
                bit = bit ^ ((a >> src) & 1)
            a = a | (bit << j)
        return a

    # ---- as matrices (Eq. 16) -----------------------------------------------------------------

    def xor_matrix(self, address_bits=None):
        """``X`` of Eq. 16: ``m`` rows (bank bits) x ``address_bits`` columns of 0/1."""
        k = self.hash_bits if address_bits is None else address_bits
        if k < self.hash_bits:
            raise ValueError(f"address_bits must be at least {self.hash_bits}, not {k}")
        rows = []
        for j, src in enumerate(self.xor):
            row = [int(c == j or c == src) for c in range(k)]
            rows.append(row)
        return rows

    def rotation_matrix(self):
        """``R^rotate`` of Eq. 16 as an ``m x m`` 0/1 matrix."""
        m = self.bits
        return [[int(c == (j + self.rotate) % m) for c in range(m)] for j in range(m)]

    def register_fields(self):
        """The configuration-register encoding: ``(xor codes, rotate)``; code 0 = no XOR term
        (a source is always above its bank bit, so 0 is free)."""
        return tuple(0 if s is None else s for s in self.xor), self.rotate


@dataclass(frozen=True)
class TileLayout:
    """A footprint box placed row-major into tile addresses, and the bank function over them.

    Parameters
    ----------
    box : sequence of int
        Footprint size per source axis (Eq. 9), outermost first.
    bank : BankFunction
    pitch : sequence of int, optional
        Address step per source axis; the innermost must be 1 and each pitch must hold the axes
        inside it (``pitch[i] >= pitch[i+1] * box[i+1]``). Default: dense row-major. Larger
        pitches are padding (the paper's "padding 6 elements after every 6 elements").

    Attributes
    ----------
    words : int
        Tile addresses spanned, padding included (``box[0] * pitch[0]``).
    padding : int
        ``words - prod(box)``.
    """

    box: tuple
    bank: BankFunction
    pitch: tuple = None

    def __post_init__(self):
        box = tuple(int(b) for b in self.box)
        if not box or any(b <= 0 for b in box):
            raise ValueError(
                f"box must be a non-empty sequence of positive sizes, not {self.box!r}")
        if not isinstance(self.bank, BankFunction):
            raise TypeError(f"bank must be a BankFunction, not {self.bank!r}")
        if self.pitch is None:
            pitch = [1]
            for b in reversed(box[1:]):
                pitch.insert(0, pitch[0] * b)
            pitch = tuple(pitch)
        else:
            pitch = tuple(int(p) for p in self.pitch)
            if len(pitch) != len(box):
                raise ValueError(f"pitch must have one entry per axis ({len(box)}), not {pitch}")
            if pitch[-1] != 1:
                raise ValueError(f"the innermost pitch must be 1, not {pitch[-1]}")
            for i in range(len(box) - 1):
                if pitch[i] < pitch[i + 1] * box[i + 1]:
                    raise ValueError(
                        f"pitch[{i}] = {pitch[i]} overlaps axis {i + 1} "
                        f"(needs at least {pitch[i + 1] * box[i + 1]})")
        object.__setattr__(self, "box", box)
        object.__setattr__(self, "pitch", pitch)

    @property
    def words(self):
        return self.box[0] * self.pitch[0]

    @property
    def padding(self):
        return self.words - int(np.prod(self.box))

    def address(self, coords):
        """Tile address of box coordinates (a sequence of arrays, one per axis)."""
        return sum(np.asarray(c, dtype=np.int64) * p for c, p in zip(coords, self.pitch,
                                                                     strict=True))

    def locate(self, coords):
        """``(bank, row)`` of box coordinates."""
        return self.bank.locate(self.address(coords))
