"""The hash property matrix H of a lane address pattern (paper §V-C, Eq. 10-16).

Lane ``n`` reads address ``A_n = A_0 + sum_i coeffs[i] * bit_i(n)`` (Eq. 10). ``H[j][i]`` says
whether flipping lane bit ``i`` flips address bit ``j`` always (``'1'``), never (``'0'``) or only
for some ``A_0`` and lanes (``'x'``) (Eq. 12). Matrices are lists of rows of ``'0'/'1'/'x'``;
rows are address (or bank) bits LSB first, columns lane bits LSB first.

The pattern maps onto the butterfly when H reduces to the identity by the elimination of
Eq. 14-15 (:func:`is_routable`). A non-square H (more address bits than lane bits) is first squared
by an XOR hash X and a rotation R (Eq. 16, :func:`find_hash`), which the collector implements.
"""

from __future__ import annotations

import functools
import itertools
import operator
from dataclasses import dataclass

from .bank import BankFunction, check_lanes

__all__ = ["property_matrix", "is_routable", "reduce_property_matrix", "hash_property_matrix",
           "find_hash", "HashChoice"]

_SYMBOLS = ("0", "1", "x")


def _check_coeffs(coeffs):
    try:
        coeffs = tuple(coeffs)
    except TypeError:
        raise TypeError(f"coeffs must be a sequence of integers, not {coeffs!r}") from None
    if not coeffs:
        raise ValueError("coeffs must name at least one lane bit, not ()")
    out = []
    for i, c in enumerate(coeffs):
        if isinstance(c, bool):
            raise TypeError(f"coeffs[{i}] must be an integer, not {c!r}")
        try:
            out.append(operator.index(c))
        except TypeError:
            raise TypeError(f"coeffs[{i}] must be an integer, not {c!r}") from None
    return tuple(out)


def _check_matrix(H, what="H"):
    try:
        rows = [list(r) for r in H]
    except TypeError:
        raise TypeError(f"{what} must be a sequence of rows of '0', '1', 'x', not {H!r}") from None
    if not rows or not rows[0]:
        raise ValueError(f"{what} must have at least one row and one column, not {H!r}")
    width = len(rows[0])
    out = []
    for j, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"{what} rows must all have {width} entries; row {j} has {len(row)}")
        cells = []
        for cell in row:
            cell = str(cell) if isinstance(cell, int) and not isinstance(cell, bool) else cell
            if cell not in _SYMBOLS:
                raise ValueError(f"{what}[{j}] must hold only '0', '1', 'x', not {cell!r}")
            cells.append(cell)
        out.append(cells)
    return out


def property_matrix(coeffs, address_bits):
    """H of Eq. 12 for lane addresses ``A_n = A_0 + sum_i coeffs[i] * bit_i(n)``, over every A_0.

    Parameters
    ----------
    coeffs : sequence of int
        The address step of each lane bit (``c_0:L-1`` of Eq. 10), LSB first.
    address_bits : int
        Number of low address bits (rows of H) to describe.

    Returns
    -------
    list of list of str
        ``address_bits`` rows x ``len(coeffs)`` columns.

    Flipping lane bit ``i`` adds ``+-c_i`` to the address: address bits below the lowest set bit
    ``k`` of ``c_i`` never change, bit ``k`` always does, higher bits depend on the carry. The
    result is the same for every ``A_0``, e.g. ``(1, 6, 12)`` with 3 bits gives Eq. 13.
    """
    coeffs = _check_coeffs(coeffs)
    if isinstance(address_bits, bool) or not isinstance(address_bits, int) or address_bits < 1:
        raise ValueError(f"address_bits must be a positive integer, not {address_bits!r}")
    mask = (1 << address_bits) - 1
    columns = []
    for c in coeffs:
        c &= mask
        low = (c & -c).bit_length() - 1 if c else address_bits
        columns.append(["0" if j < low else "1" if j == low else "x"
                        for j in range(address_bits)])
    return [[col[j] for col in columns] for j in range(address_bits)]


def _and_not(row, pivot):
    """``row AND NOT pivot`` in ternary logic (``pivot`` holds no 'x')."""
    return ["0" if p == "1" else r for r, p in zip(row, pivot, strict=True)]


def reduce_property_matrix(H):
    """The elimination of Eq. 14-15; return the identity if it can be reached, else the matrix the
    safe steps end with.

    One step takes a row without ``'x'`` and ANDs its NOT into another row (clearing there the
    columns of its ``'1'``s). Steps with a *unit* row (its only ``'1'`` on the diagonal) are always
    safe (the identity needs those columns clear anyway) and are applied to a fixpoint; a row with
    several ``'1'``s can still be needed, to clear an ``'x'`` that blocks every unit row (e.g.
    ``[[1,1,x],[x,1,0],[0,1,1]]``), so those steps are searched exhaustively (cells only go down
    to ``'0'``, so the search is finite and small).
    """
    return _reduce(_check_matrix(H))


def _unit_closure(rows):
    """Apply every unit pivot (x-free row whose only '1' is on its diagonal) to every other row,
    until nothing changes."""
    rows = [list(r) for r in rows]
    used = set()
    changed = True
    while changed:
        changed = False
        for j, row in enumerate(rows):
            if j in used or j >= len(row) or "x" in row:
                continue
            if row[j] != "1" or row.count("1") != 1:
                continue
            used.add(j)
            changed = True
            rows = [r if q == j else _and_not(r, row) for q, r in enumerate(rows)]
    return rows


def _reduce(rows):
    start = _unit_closure(rows)
    # cells never rise ('x' AND anything is never '1'), so a diagonal without '1' is final
    if _is_identity(start) or any(row[j] != "1" for j, row in enumerate(start)):
        return start
    seen = set()
    stack = [start]
    while stack:
        state = stack.pop()
        for p, pivot in enumerate(state):
            if "x" in pivot or pivot.count("1") < 2:
                continue
            for q in range(len(state)):
                if q == p:
                    continue
                row = _and_not(state[q], pivot)
                if row == state[q]:
                    continue
                new = _unit_closure(state[:q] + [row] + state[q + 1:])
                key = tuple(map(tuple, new))
                if key in seen:
                    continue
                if _is_identity(new):
                    return new
                seen.add(key)
                stack.append(new)
    return start


def is_routable(H):
    """True when the square H reduces to the identity (Eq. 14); False otherwise (Eq. 15).

    A non-square H (more address bits than lane bits) is routable when :func:`find_hash` finds an
    X and R squaring it; use that function to get them.
    """
    rows = _check_matrix(H)
    if len(rows) != len(rows[0]):
        if len(rows) < len(rows[0]):
            raise ValueError(f"H must have at least as many rows (address bits) as columns "
                             f"(lane bits), not {len(rows)}x{len(rows[0])}")
        return find_hash(rows) is not None
    return _is_identity(_reduce(rows))


def _is_identity(rows):
    return all(cell == ("1" if i == j else "0") for j, row in enumerate(rows)
               for i, cell in enumerate(row))


def _xor(a, b):
    if a == "x" or b == "x":
        return "x"
    return "1" if a != b else "0"


def hash_property_matrix(H, xor, rotation=None):
    """``R X H`` in ternary logic (Eq. 16): XOR is addition, AND multiplication.

    ``xor`` and ``rotation`` are 0/1 matrices (lists of rows), e.g. from
    :meth:`BankFunction.xor_matrix` and :meth:`BankFunction.rotation_matrix`.
    """
    rows = _check_matrix(H)
    out = []
    for j, xrow in enumerate(xor):
        if len(xrow) != len(rows):
            raise ValueError(f"X row {j} has {len(xrow)} columns but H has {len(rows)} rows")
        acc = ["0"] * len(rows[0])
        for t, bit in enumerate(xrow):
            if int(bit):
                acc = [_xor(a, b) for a, b in zip(acc, rows[t], strict=True)]
        out.append(acc)
    if rotation is not None:
        out = [next(out[t] for t, bit in enumerate(rrow) if int(bit)) for rrow in rotation]
    return out


@dataclass(frozen=True)
class HashChoice:
    """An X and R that square a property matrix (Eq. 16).

    Attributes
    ----------
    bank : BankFunction
        The bank function with that X and R (``bank.xor_matrix(...)``, ``bank.rotation_matrix()``).
    xor : list of list of int
        X, ``m`` rows x (rows of H) columns.
    rotation : list of list of int
        R^rotate, ``m x m``.
    reduced : list of list of str
        ``R X H``, which reduces to the identity.
    """

    bank: BankFunction
    xor: list
    rotation: list
    reduced: list


def _routable_on(reduced, keep):
    """``reduced`` restricted to rows and columns ``keep`` reduces to the identity."""
    if any(reduced[j][j] != "1" for j in keep):      # cells never rise to '1'
        return False
    if len(keep) != len(reduced):
        reduced = [[reduced[j][i] for i in keep] for j in keep]
    return not keep or _is_identity(_reduce(reduced))


def find_hash(H, lanes=None, broadcast=()):
    """Find an X (upper triangular, at most one off-diagonal term per row) and a rotation R such
    that ``R X H`` reduces to the identity (Eq. 16). Return a :class:`HashChoice`, or ``None``.

    ``H`` has ``K >= m`` rows (address bits) and ``m`` columns (lane bits); the bank function has
    ``2**m`` banks unless ``lanes`` says otherwise. Candidates are tried with the fewest XOR terms
    first, then the smallest rotation, so the identity is returned when it already works. Only
    address bits whose row of H holds a ``'1'`` are XOR sources (any other source only adds
    ``'x'``s or nothing).

    ``broadcast`` names lane bits whose coefficient is exactly 0 (all those lanes read one
    address, a free multicast): their column and the bank bit of the same index are left out of
    the identity check (the other bank bits then determine the lanes' banks, so the multicast
    routes; the bank bit at a broadcast position may be anything).
    """
    rows = _check_matrix(H)
    m = len(rows[0])
    lanes = 1 << m if lanes is None else check_lanes(lanes)
    if lanes != 1 << m:
        raise ValueError(f"H has {m} lane bits, so lanes must be {1 << m}, not {lanes}")
    k = len(rows)
    if k < m:
        raise ValueError(f"H must have at least as many rows (address bits) as columns "
                         f"(lane bits), not {k}x{m}")
    keep = tuple(i for i in range(m) if i not in set(broadcast))
    found = _search_hash(tuple(tuple(r) for r in rows), keep)
    if found is None:
        return None
    xor, rotate = found
    bank = BankFunction(lanes, xor=xor, rotate=rotate)
    x, r = bank.xor_matrix(k), bank.rotation_matrix()
    return HashChoice(bank=bank, xor=x, rotation=r, reduced=hash_property_matrix(rows, x, r))


@functools.lru_cache(maxsize=4096)
def _search_hash(rows, keep):
    """``(xor, rotate)`` of the first candidate (fewest XOR terms, then smallest rotation), or
    None. ``rows`` is a tuple of tuples of symbols."""
    k, m = len(rows), len(rows[0])
    # XORing in an address bit whose row holds no '1' cannot create a pivot: skip those sources
    useful = [t for t in range(k) if "1" in rows[t]]
    options = [[None] + [t for t in useful if t > j] for j in range(m)]
    for xor in sorted(itertools.product(*options), key=lambda x: sum(s is not None for s in x)):
        hashed = [rows[j] if s is None else tuple(_xor(a, b) for a, b in zip(rows[j], rows[s],
                                                                              strict=True))
                  for j, s in enumerate(xor)]
        for rotate in range(m):
            rotated = [hashed[(j + rotate) % m] for j in range(m)]
            if _routable_on(rotated, keep):
                return xor, rotate
    return None
