"""Conflict analysis of tiled problems: Fig. 6 of the paper (Fig. 4 of UMI), and a brute-force
reference that walks every step and lane through the transform's own definition."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from merit import Index, Transform
from merit import workloads as W
from merit.mapping import (
    BankFunction,
    LaneGrouping,
    TileLayout,
    analyze,
    analyze_operand,
    default_grouping,
    lane_coefficients,
    route,
)

# Fig. 6: 3x3 filter, 4x4 output tile, 8 lanes; p = (y, x)
FIG6 = W.filter3x3(16, 16)
IMAGE = FIG6.operands[0].transform
NATIVE = LaneGrouping(((1, 0), (1, 1), (0, 0)))      # (ii) 2x4 groups
RETILE_III = LaneGrouping(((1, 0), (1, 1), (0, 1)))  # (iii) rows 0 and 2 together
RETILE_IV = LaneGrouping(((1, 0), (0, 0), (0, 1)))   # (iv) 4 rows x 2 columns


def layout(pitch=(6, 1), bank=None):
    return TileLayout((6, 6), bank or BankFunction(8), pitch=pitch)


def brute_force(transform, tile_p, tile_a, grouping, lay):
    """(conflicting steps, blocked steps, steps): every step, every lane, from Eq. 5 directly."""
    t = tuple(tile_p) + tuple(tile_a)
    n_p = len(tile_p)
    m = len(grouping.bits)
    ranges = []
    for pos, size in enumerate(t):
        mask = grouping.mask(pos) if pos < n_p else 0
        ranges.append([v for v in range(size) if v & mask == 0])
    low = [sum((t[pos] - 1) * s for pos, s in terms if s < 0) for terms in transform.terms]
    conflicts = blocked = steps = 0
    for step in itertools.product(*ranges):
        addresses = []
        for lane in range(1 << m):
            k = list(step)
            for i, (j, b) in enumerate(grouping.bits):
                k[j] += ((lane >> i) & 1) << b
            x = [sum(k[pos] * s for pos, s in terms) - lo
                 for terms, lo in zip(transform.terms, low, strict=True)]
            addresses.append(sum(xi * p for xi, p in zip(x, lay.pitch, strict=True)))
        banks, rows = lay.bank.locate(np.array(addresses))
        steps += 1
        where = {}
        bad = any(where.setdefault(b, r) != r for b, r in zip(banks.tolist(), rows.tolist(),
                                                               strict=True))
        conflicts += bad
        blocked += (not bad) and route(banks, rows).conflict
    return conflicts, blocked, steps


def test_fig6_coefficients():
    tile = ((4, 4), (3, 3))
    assert lane_coefficients(IMAGE, *tile, NATIVE, layout()) == (1, 2, 6)
    assert lane_coefficients(IMAGE, *tile, NATIVE, layout((12, 1))) == (1, 2, 12)
    assert lane_coefficients(IMAGE, *tile, RETILE_III, layout()) == (1, 2, 12)
    assert lane_coefficients(IMAGE, *tile, RETILE_IV, layout()) == (1, 6, 12)
    assert default_grouping((4, 4), 8) == NATIVE


def test_fig6_native_tiling_conflicts():
    report = analyze(FIG6, (4, 4), (3, 3), 8, grouping=NATIVE)
    image = report.operands[0]
    assert not report.ok and image.conflict_steps == image.steps == 18
    assert image.example == (0, 1, 2, 3, 6, 7, 8, 9)   # A_0:7 of Fig. 6 (ii-a)
    assert report.operands[1].ok                         # the weights are a broadcast


@pytest.mark.parametrize("grouping,pitch,bank,padding", [
    (NATIVE, (12, 1), BankFunction(8), 36),                        # (ii-b) 6 after every 6
    (NATIVE, (8, 1), BankFunction(8, xor=(None, None, 3)), 12),    # (ii-c) XOR hash, 2 per row
    (RETILE_III, (6, 1), BankFunction(8), 0),                      # (iii) re-tiling
    (RETILE_IV, (6, 1), BankFunction(8), 0),                       # (iv) re-tiling
])
def test_fig6_remedies_are_conflict_free(grouping, pitch, bank, padding):
    lay = layout(pitch, bank)
    report = analyze_operand(IMAGE, (4, 4), (3, 3), grouping, lay)
    assert report.ok and report.steps == 18
    assert lay.padding == padding


def test_fig6_xor_hash_is_needed_with_two_padding_words():
    report = analyze_operand(IMAGE, (4, 4), (3, 3), NATIVE, layout((8, 1)))
    assert report.conflict_steps == 18


CASES = [
    (W.filter3x3(16, 16), (4, 4), (3, 3)),
    (W.conv2d(1, 4, 12, 12, 4, 3, stride=2, padding=1), (1, 2, 2, 4), (2, 3, 3)),
    (W.deconv2d(1, 2, 6, 6, 2, 4, stride=2, padding=1), (1, 2, 2, 2, 2, 1), (2, 2, 2)),
    (W.integral_image(8, 8), (2, 4), (8, 8)),
    (W.correlation(2, 8, 8, 1), (2, 2, 2, 1), (2,)),
]


@pytest.mark.parametrize("problem,tile_p,tile_a", CASES, ids=[c[0].name for c in CASES])
@pytest.mark.parametrize("pad,bank", [(0, BankFunction(8)),
                                      (1, BankFunction(8, xor=(None, 4, 3), rotate=2))])
def test_analysis_matches_brute_force(problem, tile_p, tile_a, pad, bank):
    for grouping in [default_grouping(tile_p, 8), LaneGrouping(tuple(reversed(
            default_grouping(tile_p, 8).bits)))]:
        for op in problem.operands:
            tr = op.transform
            box = tr.footprint(tile_p, tile_a)
            pitch = [1] if len(box) == 1 else [box[-1] + pad, 1]
            for b in reversed(box[1:-1]):
                pitch.insert(0, pitch[0] * b)
            lay = TileLayout(box, bank, pitch=pitch)
            report = analyze_operand(tr, tile_p, tile_a, grouping, lay)
            want = brute_force(tr, tile_p, tile_a, grouping, lay)
            assert (report.conflict_steps, report.blocked_steps, report.steps) == want, \
                (tr, grouping)


def test_analysis_rejects_bad_groupings_and_layouts():
    with pytest.raises(ValueError, match=r"tile_p\[0\] = 4 must be a multiple of 8 for lane bit "
                                         r"2 of parallel index 0"):
        analyze(FIG6, (4, 4), (3, 3), 8, grouping=LaneGrouping(((1, 0), (1, 1), (0, 2))))
    with pytest.raises(ValueError, match="grouping has 3 lane bits but lanes = 16 needs 4"):
        analyze(FIG6, (4, 4), (3, 3), 16, grouping=NATIVE)
    with pytest.raises(ValueError, match=r"layout box \(6, 8\) is not the footprint \(6, 6\)"):
        analyze_operand(IMAGE, (4, 4), (3, 3), NATIVE,
                        TileLayout((6, 8), BankFunction(8)))
    with pytest.raises(ValueError, match=r"bits must not repeat a \(parallel index, bit\) pair"):
        LaneGrouping(((1, 0), (1, 0), (0, 0)))
    with pytest.raises(ValueError, match=r"tile_p \(2, 2\) has 4 outputs; 8 lanes need"):
        default_grouping((2, 2), 8)


def test_layout_rejects_bad_pitches():
    with pytest.raises(ValueError, match=r"pitch\[0\] = 5 overlaps axis 1 \(needs at least 6\)"):
        TileLayout((6, 6), BankFunction(8), pitch=(5, 1))
    with pytest.raises(ValueError, match="the innermost pitch must be 1, not 2"):
        TileLayout((6, 6), BankFunction(8), pitch=(12, 2))


def test_broadcast_only_operand_is_free():
    weights = Transform((3, 3), p=[None, None], a=[Index(0), Index(1)], name="W")
    report = analyze_operand(weights, (4, 4), (3, 3), NATIVE, TileLayout((3, 3), BankFunction(8)))
    assert report.ok and report.coeffs == (0, 0, 0)


@st.composite
def tiled_transforms(draw):
    """A random 2-D transform (strides of both signs, several indices per axis, broadcasts), a
    power-of-two parallel tile, a lane grouping of it, and a padded, hashed layout."""
    n_p = draw(st.integers(1, 3))
    n_a = draw(st.integers(0, 2))

    def index():
        return draw(st.one_of(st.none(), st.builds(
            Index, st.integers(0, 1), st.sampled_from([-2, -1, 1, 2, 3]), st.integers(-2, 2))))

    transform = Transform((64, 64), p=[index() for _ in range(n_p)],
                          a=[index() for _ in range(n_a)], name="T")
    tile_p = tuple(draw(st.sampled_from([1, 2, 4])) for _ in range(n_p))
    tile_a = tuple(draw(st.integers(1, 3)) for _ in range(n_a))
    available = [(j, b) for j in range(n_p) for b in range(tile_p[j].bit_length() - 1)]
    lanes = draw(st.sampled_from([lane for lane in (2, 4, 8) if lane.bit_length() - 1
                                  <= len(available)] or [0]))
    if lanes == 0:
        return None
    bits = draw(st.permutations(available))[:lanes.bit_length() - 1]
    grouping = LaneGrouping(tuple(bits))
    try:
        grouping.check(tile_p, lanes)
    except ValueError:
        return None
    box = transform.footprint(tile_p, tile_a)
    pitch = (box[1] + draw(st.integers(0, 3)), 1)
    m = lanes.bit_length() - 1
    bank = BankFunction(lanes, xor=[draw(st.one_of(st.none(), st.integers(j + 1, m + 3)))
                                    for j in range(m)], rotate=draw(st.integers(0, m - 1)))
    return transform, tile_p, tile_a, grouping, TileLayout(box, bank, pitch=pitch)


@settings(max_examples=150, deadline=None)
@given(tiled_transforms())
def test_analysis_matches_brute_force_on_random_transforms(case):
    if case is None:
        return
    transform, tile_p, tile_a, grouping, lay = case
    report = analyze_operand(transform, tile_p, tile_a, grouping, lay)
    assert (report.conflict_steps, report.blocked_steps, report.steps) == brute_force(
        transform, tile_p, tile_a, grouping, lay)
