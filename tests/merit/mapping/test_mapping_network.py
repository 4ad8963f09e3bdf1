"""Bank function, butterfly routing and the network models.

References that do not share the code under test: lane ``n`` must receive ``bank_words[bank(A_n)]``
(the definition of a read), a pattern is routable iff no two paths share a node with different
requests (checked position by position, not by the backward propagation), and a collector line
must put word ``i`` into bank ``bank(row * N + i)``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from merit.mapping import (
    BankFunction,
    RoutingConflict,
    butterfly,
    collector_network,
    find_hash,
    property_matrix,
    rotation_stages,
    route,
    route_collector,
    route_read,
)


@st.composite
def bank_functions(draw, lanes=None):
    lanes = draw(st.sampled_from([2, 4, 8, 16, 32])) if lanes is None else lanes
    m = lanes.bit_length() - 1
    xor = [draw(st.one_of(st.none(), st.integers(j + 1, m + 6))) for j in range(m)]
    return BankFunction(lanes, xor=xor, rotate=draw(st.integers(0, m - 1)))


def routable_by_definition(banks, rows):
    """A node after data stage s is shared by lanes that agree on lane bits 0..s and on the
    bank bits above s; all of them must want the same word."""
    n = len(banks)
    m = n.bit_length() - 1
    for s in range(-1, m):
        low = (1 << (s + 1)) - 1
        nodes = {}
        for lane in range(n):
            node = (lane & low) | (int(banks[lane]) & ~low)
            want = (int(banks[lane]), int(rows[lane]))
            if nodes.setdefault(node, want) != want:
                return False
    return True


# ---- bank function ---------------------------------------------------------------------------

@given(bank_functions(), st.integers(0, 1 << 12))
def test_locate_and_address_are_inverse(bank, start):
    a = np.arange(start, start + 4 * bank.lanes)
    b, r = bank.locate(a)
    assert (bank.address(b, r) == a).all()
    # every row holds each bank once: the function is a permutation of the row's addresses
    for row in np.unique(r):
        assert sorted(b[r == row].tolist()) == list(range(bank.lanes)) or (r == row).sum() < \
            bank.lanes


def test_fig6_xor_hash_swaps_halves_of_every_other_row():
    bank = BankFunction(8, xor=(None, None, 3))
    assert bank.bank(np.arange(16)).tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 0, 1, 2, 3]
    assert bank.register_fields() == ((0, 0, 3), 0)


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(lanes=24), ValueError, "lanes must be a power of two, not 24"),
    (dict(lanes=1), ValueError, "lanes must be a power of two, not 1"),
    (dict(lanes=8.0), TypeError, "lanes must be an integer, not 8.0"),
    (dict(lanes=8, xor=(None, 1, None)), ValueError, r"xor\[1\] must name an address bit above 1, "
                                                     r"not 1"),
    (dict(lanes=8, xor=(None, None)), ValueError, r"xor must have one entry per bank bit \(3\), "
                                                  r"not 2"),
    (dict(lanes=8, rotate=3), ValueError, r"rotate must be in \[0, 3\), not 3"),
])
def test_bank_function_rejects_bad_parameters(kwargs, error, message):
    with pytest.raises(error, match=message):
        BankFunction(**kwargs)


# ---- read butterfly --------------------------------------------------------------------------

@st.composite
def affine_requests(draw):
    """Eq. 10 lane addresses on a bank function chosen so that H is routable (often)."""
    lanes = draw(st.sampled_from([2, 4, 8, 16, 32]))
    m = lanes.bit_length() - 1
    coeffs = draw(st.lists(st.integers(0, 4 * lanes), min_size=m, max_size=m))
    a0 = draw(st.integers(0, 1 << 14))
    choice = find_hash(property_matrix(coeffs, m + 3), lanes,
                       broadcast=[i for i, c in enumerate(coeffs) if c == 0])
    bank = choice.bank if choice is not None else BankFunction(lanes)
    n = np.arange(lanes)
    addresses = a0 + sum(c * ((n >> i) & 1) for i, c in enumerate(coeffs))
    return bank, coeffs, addresses, choice is not None


@settings(max_examples=300, deadline=None)
@given(affine_requests(), st.randoms())
def test_routed_butterfly_delivers_exactly_the_requested_words(request, rand):
    bank, _coeffs, addresses, _ = request
    banks, rows = bank.locate(addresses)
    words = np.array([rand.randrange(-32768, 32768) for _ in range(bank.lanes)])
    result = route(banks, rows)
    assert result.conflict == (not routable_by_definition(banks, rows))
    if not result.conflict:
        assert (butterfly(words, result.select) == words[banks]).all()
        assert sorted(np.flatnonzero(result.used).tolist()) == sorted(set(banks.tolist()))
        assert (result.tag[banks] == rows).all()


@settings(max_examples=200, deadline=None)
@given(affine_requests())
def test_a_routable_property_matrix_routes_every_base_address(request):
    """The paper's sufficient condition: H (after X and R) reduces to I => every A_0 routes."""
    bank, coeffs, _addresses, found = request
    if not found:
        return
    n = np.arange(bank.lanes)
    offsets = sum(c * ((n >> i) & 1) for i, c in enumerate(coeffs))
    for a0 in range(1 << (bank.hash_bits + 1)):
        route_read(a0 + offsets, bank)


@given(st.sampled_from([2, 4, 8, 16, 32]).flatmap(
    lambda n: st.lists(st.integers(0, n - 1), min_size=n, max_size=n)))
def test_self_routing_agrees_with_the_definition_on_random_requests(banks):
    rows = np.zeros(len(banks), int)
    assert route(banks).conflict == (not routable_by_definition(banks, rows))


def test_paper_patterns_route_for_every_base_address():
    n = np.arange(8)
    for coeffs, bank in [((1, 2, 12), BankFunction(8)), ((1, 6, 12), BankFunction(8)),
                         ((4, 8, 3), BankFunction(8, xor=(None, 2, 3), rotate=1)),
                         ((1, 2, 8), BankFunction(8, xor=(None, None, 3)))]:
        for a0 in range(64):
            route_read(a0 + sum(c * ((n >> i) & 1) for i, c in enumerate(coeffs)), bank)


def test_fig6_native_pattern_conflicts_for_some_base_addresses():
    n = np.arange(8)
    offsets = sum(c * ((n >> i) & 1) for i, c in enumerate((1, 2, 6)))
    bad = 0
    for a0 in range(64):
        try:
            route_read(a0 + offsets, BankFunction(8))
        except RoutingConflict:
            bad += 1
    assert bad > 0


def test_conflicting_lanes_are_named():
    with pytest.raises(RoutingConflict, match=r"lanes 0 and 6 need rows 0 and 1 of bank 0"):
        route_read([0, 1, 2, 3, 6, 7, 8, 9], BankFunction(8))


def test_unroutable_permutation_is_reported():
    with pytest.raises(RoutingConflict, match="not routable through the butterfly"):
        route_read([0, 2, 1, 3, 4, 6, 5, 7], BankFunction(8))


def test_route_rejects_bad_input():
    with pytest.raises(ValueError, match="the number of outputs must be a power of two, not 6"):
        route([0, 1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match=r"sources must be in \[-1, 4\), not \[0, 1, 2, 7\]"):
        route([0, 1, 2, 7])
    with pytest.raises(ValueError, match=r"select must have shape \(3, 8\) for 8 inputs"):
        butterfly(np.arange(8), np.zeros((2, 8), int))


# ---- collector -------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(bank_functions(), st.integers(0, 255))
def test_collector_places_every_word_in_its_bank(bank, row):
    words = np.arange(bank.lanes) + 1000 * row
    placed = collector_network(words, row, bank)
    banks = bank.bank(row * bank.lanes + np.arange(bank.lanes))
    assert (placed[banks] == words).all()
    assert route_collector(bank, row).shape == (bank.bits, bank.lanes)


@pytest.mark.parametrize("lanes", [8, 32])
def test_collector_handles_chained_xor_sources(lanes):
    """Sources that are themselves XOR-modified (bit 1 <- 2 <- 3 ...): the case where the authors'
    write network disagreed with their read-side bank function (MIMORI)."""
    m = lanes.bit_length() - 1
    bank = BankFunction(lanes, xor=tuple(j + 1 for j in range(m)), rotate=m - 1)
    for row in range(8):
        placed = collector_network(np.arange(lanes) + row * lanes, row, bank)
        assert (bank.locate(placed)[0] == np.arange(lanes)).all()
        assert (bank.locate(placed)[1] == row).all()


def test_collector_eq16_row_0():
    bank = BankFunction(8, xor=(None, 2, 3), rotate=1)
    placed = collector_network(np.arange(8), 0, bank)
    assert (bank.bank(placed) == np.arange(8)).all()


@pytest.mark.parametrize("m", [2, 3, 4, 5])
def test_rotation_stages_compose_to_the_rotation(m):
    bank_of = {r: BankFunction(1 << m, rotate=r) for r in range(m)}
    x = np.arange(1 << m)
    for r, bank in bank_of.items():
        moved = rotation_stages(x, r, m)
        assert (moved[bank.rotate_bits(x)] == x).all()
