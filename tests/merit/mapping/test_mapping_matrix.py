"""The hash property matrix H (Eq. 12-16): the paper's worked cases, and references that do not
share the code under test (Eq. 12 by enumeration, the elimination by exhaustive search)."""

import itertools
import random

import pytest

from merit.mapping import (
    BankFunction,
    find_hash,
    hash_property_matrix,
    is_routable,
    property_matrix,
    reduce_property_matrix,
)

EQ13 = [["1", "0", "0"], ["x", "1", "0"], ["x", "x", "1"]]
EQ15 = [["1", "0", "x"], ["x", "1", "0"], ["0", "x", "1"]]
EQ16_H = [["0", "0", "1"], ["0", "0", "x"], ["1", "0", "x"], ["x", "1", "x"]]
EQ16_X = [[1, 0, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
EQ16_R = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
EQ16_H_PRIME = [["1", "0", "x"], ["x", "1", "x"], ["0", "0", "1"]]


def h_by_enumeration(coeffs, bits):
    """Eq. 12 read literally: over every A_0 and lane n, does flipping lane bit i flip bit j?"""
    lanes = 1 << len(coeffs)
    rows = []
    for j in range(bits):
        row = []
        for i in range(len(coeffs)):
            seen = set()
            for a0 in range(1 << bits):
                for n in range(lanes):
                    a = a0 + sum(c for k, c in enumerate(coeffs) if n >> k & 1)
                    b = a0 + sum(c for k, c in enumerate(coeffs) if (n ^ 1 << i) >> k & 1)
                    seen.add((a >> j & 1) != (b >> j & 1))
            row.append("1" if seen == {True} else "0" if seen == {False} else "x")
        rows.append(row)
    return rows


def test_eq13_matrix_of_1_6_12():
    assert property_matrix((1, 6, 12), 3) == EQ13


def test_eq16_matrix_of_4_8_3():
    assert property_matrix((4, 8, 3), 4) == EQ16_H


@pytest.mark.parametrize("coeffs,bits", [((1, 6, 12), 3), ((4, 8, 3), 4), ((1, 2, 6), 3),
                                         ((3, 5, 0), 4), ((8, 24, 7), 3), ((-6, 1, 12), 4)])
def test_property_matrix_matches_eq12_enumeration(coeffs, bits):
    assert property_matrix(coeffs, bits) == h_by_enumeration(coeffs, bits)


def test_eq13_and_eq14_are_routable_eq15_is_not():
    assert is_routable(EQ13)
    assert reduce_property_matrix(EQ13) == [["1", "0", "0"], ["0", "1", "0"], ["0", "0", "1"]]
    assert not is_routable(EQ15)
    assert reduce_property_matrix(EQ15) == EQ15      # no row without 'x' to start from


def test_eq16_x_and_r_square_h():
    assert hash_property_matrix(EQ16_H, EQ16_X, EQ16_R) == EQ16_H_PRIME
    assert is_routable(EQ16_H_PRIME)
    bank = BankFunction(8, xor=(None, 2, 3), rotate=1)
    assert bank.xor_matrix(4) == EQ16_X
    assert bank.rotation_matrix() == EQ16_R


def test_find_hash_recovers_the_papers_x_and_r():
    choice = find_hash(EQ16_H)
    assert choice.xor == EQ16_X and choice.rotation == EQ16_R
    assert choice.reduced == EQ16_H_PRIME
    assert choice.bank == BankFunction(8, xor=(None, 2, 3), rotate=1)
    assert is_routable(EQ16_H)                        # non-square: routable through find_hash


def test_find_hash_prefers_the_identity():
    choice = find_hash(property_matrix((1, 6, 12), 4))
    assert choice.bank.is_identity


def test_find_hash_reports_none_when_nothing_works():
    # every lane bit flips only address bit 3: no X of the paper's form separates three lanes
    assert find_hash(property_matrix((8, 8, 8), 4)) is None


def _exhaustive_reducible(rows):
    """Reference for Eq. 14-15: try every sequence of 'AND the NOT of an x-free row into another
    row' (any x-free row, not only unit rows) and report whether one reaches I."""
    n = len(rows)
    target = tuple(tuple("1" if i == j else "0" for i in range(n)) for j in range(n))
    start = tuple(tuple(r) for r in rows)
    seen, stack = {start}, [start]
    while stack:
        state = stack.pop()
        if state == target:
            return True
        for p, pivot in enumerate(state):
            if "x" in pivot:
                continue
            for q in range(n):
                if q == p:
                    continue
                row = tuple("0" if b == "1" else a for a, b in zip(state[q], pivot, strict=True))
                if row != state[q]:
                    new = state[:q] + (row,) + state[q + 1:]
                    if new not in seen:
                        seen.add(new)
                        stack.append(new)
    return False


def test_greedy_elimination_agrees_with_exhaustive_search():
    rand = random.Random(4)
    for _ in range(400):
        n = rand.choice([2, 3])
        rows = [[rand.choice("01x") if i != j else rand.choice("11x") for i in range(n)]
                for j in range(n)]
        assert is_routable(rows) == _exhaustive_reducible(rows), rows


def test_every_routable_3x3_matrix_is_found_by_the_greedy_elimination():
    for cells in itertools.product("01x", repeat=4):
        rows = [["1", cells[0], cells[1]], [cells[2], "1", "0"], [cells[3], "x", "1"]]
        assert is_routable(rows) == _exhaustive_reducible(rows)


@pytest.mark.parametrize("coeffs,bits,message", [
    ((), 3, r"coeffs must name at least one lane bit, not \(\)"),
    ((1, 2), 0, r"address_bits must be a positive integer, not 0"),
])
def test_property_matrix_rejects_bad_input(coeffs, bits, message):
    with pytest.raises(ValueError, match=message):
        property_matrix(coeffs, bits)


def test_property_matrix_rejects_non_integers():
    with pytest.raises(TypeError, match=r"coeffs\[1\] must be an integer, not 2.5"):
        property_matrix((1, 2.5), 3)


@pytest.mark.parametrize("H,message", [
    ([["1", "0"], ["0", "y"]], r"H\[1\] must hold only '0', '1', 'x', not 'y'"),
    ([["1", "0"], ["0"]], r"H rows must all have 2 entries; row 1 has 1"),
    ([], r"H must have at least one row and one column"),
    ([["1", "0", "0"], ["0", "1", "0"]], r"H must have at least as many rows \(address bits\) "
                                         r"as columns \(lane bits\), not 2x3"),
])
def test_is_routable_rejects_bad_matrices(H, message):
    with pytest.raises(ValueError, match=message):
        is_routable(H)


def test_find_hash_checks_lanes():
    with pytest.raises(ValueError, match="H has 3 lane bits, so lanes must be 8, not 16"):
        find_hash(EQ16_H, lanes=16)
    with pytest.raises(ValueError, match="lanes must be a power of two, not 24"):
        find_hash(EQ16_H, lanes=24)
