"""Routing and bit-exact models of the butterfly and collector networks (paper §V-C, Fig. 8).

Both networks are the same log2 N-stage butterfly of 2:1 multiplexers: data stage ``s`` (``s = 0``
first) lets output ``p`` take input ``p`` (select 0) or ``p ^ 2**s`` (select 1). Every output picks
independently, so one input can reach several outputs (multicast).

* Read path: inputs are bank outputs, outputs are lanes; lane ``n`` needs bank ``bank(A_n)``.
* Collector: inputs are the N words of one SRAM line in address order, outputs are the hashed bank
  positions ``x = X a``; then ``ceil(log2 m)`` rotation stages (rotate by 1, 2, 4, ... bank bits)
  apply R. Both sides are derived from one :class:`~merit.mapping.bank.BankFunction`.

:func:`route` is the self-routing algorithm of the RTL: requests travel backwards from the outputs
and merge where two paths share a node; a merge of different requests is a conflict (the pattern
is not routable, or two lanes need different rows of one bank), reported, never silently routed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .bank import BankFunction, check_lanes

__all__ = ["Route", "RoutingConflict", "route", "route_many", "butterfly", "route_read",
           "rotation_stages", "rotate_positions", "route_collector",
           "collector_network"]


class RoutingConflict(ValueError):
    """A request pattern that the butterfly cannot deliver in one pass."""


class Route(NamedTuple):
    """Result of :func:`route`.

    Attributes
    ----------
    select : ndarray of uint8, shape (m, N)
        ``select[s, p]``: output ``p`` of data stage ``s`` takes input ``p ^ 2**s``.
    conflict : bool
        Two requests met in one node (then ``select`` is not a valid routing).
    used : ndarray of bool, shape (N,)
        Inputs that some output needs (e.g. bank read enables).
    tag : ndarray of int64, shape (N,)
        The tag (e.g. row) requested from each used input, -1 elsewhere.
    """

    select: np.ndarray
    conflict: bool
    used: np.ndarray
    tag: np.ndarray


def _bits(n):
    return int(n).bit_length() - 1


def route(sources, tags=None):
    """Self-route a butterfly: output ``d`` receives input ``sources[d]`` (``-1``: unused).

    Parameters
    ----------
    sources : sequence of int
        One entry per output, ``len(sources)`` a power of two.
    tags : sequence of int, optional
        A value per output that must agree wherever two outputs share a path, e.g. the SRAM row of
        each lane (two lanes on one bank with different rows are a bank conflict).

    Returns
    -------
    Route
        Never raises on a conflict; see :func:`route_read` for the raising form.
    """
    src = np.asarray(sources, dtype=np.int64)
    if src.ndim != 1:
        raise ValueError(f"sources must be one-dimensional, not of shape {src.shape}")
    n = check_lanes(len(src), "the number of outputs")
    if src.min() < -1 or src.max() >= n:
        raise ValueError(f"sources must be in [-1, {n}), not {sorted(set(src.tolist()))}")
    tag = np.zeros(n, np.int64) if tags is None else np.asarray(tags, dtype=np.int64)
    if tag.shape != src.shape:
        raise ValueError(f"tags must have one entry per output ({n}), not shape {tag.shape}")
    select, conflict, used, tag = route_many(src, tag)
    return Route(select=select, conflict=bool(conflict), used=used, tag=tag)


def route_many(sources, tags):
    """:func:`route` of many requests at once, without argument checks: ``sources`` and ``tags``
    of shape ``(..., N)``. Returns ``(select (..., m, N), conflict (...), used, tag)``."""
    src, tag = sources, tags
    n = src.shape[-1]
    m = _bits(n)
    pos = np.arange(n)
    valid = src >= 0
    select = np.zeros(src.shape[:-1] + (m, n), np.uint8)
    conflict = np.zeros(src.shape[:-1], bool)
    for s in reversed(range(m)):
        bit = 1 << s
        select[..., s, :] = valid & (((src ^ pos) & bit) != 0)
        # the input of stage s that each output takes; the other node of the pair is its partner
        target = (pos & ~bit) | (src & bit)
        stay = valid & (target == pos)        # output p takes node p
        cross = valid & (target != pos)       # output p takes node p ^ bit
        partner = pos ^ bit
        # node q receives from output q (stay) and from output q ^ bit (that one crossing)
        from_self = stay
        from_partner = cross[..., partner]
        both = from_self & from_partner
        clash = both & ((src != src[..., partner]) | (tag != tag[..., partner]))
        conflict |= clash.any(axis=-1)
        new_valid = from_self | from_partner
        src = np.where(from_self, src, np.where(from_partner, src[..., partner], -1))
        tag = np.where(from_self, tag, np.where(from_partner, tag[..., partner], 0))
        valid = new_valid
    return select, conflict, valid, np.where(valid, tag, -1)


def butterfly(inputs, select):
    """The network itself: apply ``select`` (shape ``(m, N)``) to the ``N`` inputs.

    Bit-level model of the RTL: stage ``s`` output ``p`` = input ``p ^ (select[s, p] << s)``.
    Works for any array whose first axis has the ``N`` inputs.
    """
    data = np.asarray(inputs)
    sel = np.asarray(select, dtype=np.int64)
    n = data.shape[0]
    if sel.shape != (_bits(n), n):
        raise ValueError(f"select must have shape {(_bits(n), n)} for {n} inputs, not {sel.shape}")
    pos = np.arange(n)
    for s in range(sel.shape[0]):
        data = data[pos ^ (sel[s] << s)]
    return data


def route_read(addresses, bank):
    """Select bits of the read butterfly for one SIMD step: lane ``n`` reads tile address
    ``addresses[n]`` through the bank function ``bank``.

    Raises :class:`RoutingConflict` when two lanes need different rows of one bank or the banks
    cannot be delivered in one pass.
    """
    addresses = np.asarray(addresses, dtype=np.int64)
    if not isinstance(bank, BankFunction):
        raise TypeError(f"bank must be a BankFunction, not {bank!r}")
    if addresses.shape != (bank.lanes,):
        raise ValueError(f"addresses must hold one address per lane ({bank.lanes}), "
                         f"not shape {addresses.shape}")
    banks, rows = bank.locate(addresses)
    result = route(banks, rows)
    if result.conflict:
        same = [(a, b) for a in range(bank.lanes) for b in range(a)
                if banks[a] == banks[b] and rows[a] != rows[b]]
        what = (f"lanes {same[0][1]} and {same[0][0]} need rows {rows[same[0][1]]} and "
                f"{rows[same[0][0]]} of bank {banks[same[0][0]]}" if same
                else f"banks {banks.tolist()} are not routable through the butterfly")
        raise RoutingConflict(f"addresses {addresses.tolist()}: {what}")
    return result.select


def rotate_positions(positions, amount, m):
    """Position ``x`` moves to ``R^amount x`` (bit ``j`` of the result = bit ``j + amount``)."""
    x = np.asarray(positions, dtype=np.int64)
    amount %= max(m, 1)
    if amount == 0:
        return x
    return ((x >> amount) | (x << (m - amount))) & ((1 << m) - 1)


def rotation_stages(data, rotate, m):
    """The collector's omega stages: stage ``t`` rotates positions by ``2**t`` bank bits when bit
    ``t`` of ``rotate`` is set; ``ceil(log2 m)`` stages. Each output is one 2:1 multiplexer."""
    data = np.asarray(data)
    stages = (m - 1).bit_length()
    n = 1 << m
    for t in range(stages):
        if (rotate >> t) & 1:
            moved = np.empty_like(data)
            moved[rotate_positions(np.arange(n), 1 << t, m)] = data
            data = moved
    return data


def route_collector(bank, row):
    """Select bits of the collector butterfly for SRAM row ``row``: output ``x`` (the hashed bank
    before rotation) takes the word at line offset ``i`` with ``X(row * N + i) = x``."""
    if not isinstance(bank, BankFunction):
        raise TypeError(f"bank must be a BankFunction, not {bank!r}")
    unrotated = BankFunction(bank.lanes, xor=bank.xor)
    offsets = unrotated.address(np.arange(bank.lanes), row) & (bank.lanes - 1)
    result = route(offsets)
    if result.conflict:
        raise RoutingConflict(f"{bank!r} row {row}: line offsets {offsets.tolist()} are not "
                              f"routable through the collector butterfly")
    return result.select


def collector_network(words, row, bank):
    """Model of the collector: the N words of line ``row`` (address order) -> bank order.

    Returns an array whose element ``b`` is the word stored in bank ``b`` (row ``row``).
    """
    select = route_collector(bank, row)
    return rotation_stages(butterfly(words, select), bank.rotate, bank.bits)
