"""The search: every workload of the library maps conflict-free at N = 8 and N = 32, checked
again step by step by the brute-force walk of ``test_mapping_analysis``; clear errors otherwise."""

import math

import pytest
from test_mapping_analysis import brute_force

from merit import workloads as W
from merit.mapping import NoMapping, analyze, search
from merit.mapping.search import hash_candidates, tile_candidates, tile_sizes

#: One modest instance of every workload of the library.
WORKLOADS = {
    "gemm": lambda: W.gemm(64, 64, 64),
    "fc": lambda: W.fc(16, 256, 128),
    "conv2d": lambda: W.conv2d(1, 16, 32, 32, 16, 3),
    "conv2d_stride2": lambda: W.conv2d(1, 8, 32, 32, 16, 3, stride=2, padding=1),
    "conv2d_dilated": lambda: W.conv2d(1, 8, 32, 32, 8, 3, dilation=2),
    "conv2d_groups": lambda: W.conv2d(1, 8, 16, 16, 8, 3, groups=2, padding=1),
    "conv_relu": lambda: W.conv_relu(1, 8, 16, 16, 8, 3),
    "residual": lambda: W.residual(1, 8, 16, 16, 8, 3, padding=1),
    "depthwise": lambda: W.depthwise(1, 16, 32, 32, 3, padding=1),
    "deconv2d": lambda: W.deconv2d(1, 8, 16, 16, 8, 4, stride=2, padding=1),
    "max_pool2d": lambda: W.max_pool2d(1, 8, 32, 32, 2),
    "avg_pool2d": lambda: W.avg_pool2d(1, 8, 32, 32, 3, stride=2, padding=1),
    "pixel_shuffle": lambda: W.pixel_shuffle(1, 4, 16, 16, 2),
    "correlation": lambda: W.correlation(16, 16, 16, 3),
    "motion_estimation": lambda: W.motion_estimation(32, 32, block=8, search=4),
    "bilateral": lambda: W.bilateral(32, 32, sigma_s=1.0, sigma_r=0.2),
    "integral_image": lambda: W.integral_image(16, 16),
    "separable_filter": lambda: W.separable_filter(32, 32, 5),
    "filter3x3": lambda: W.filter3x3(64, 64),
    "ece408": lambda: W.ece408(b=16),
}


@pytest.mark.parametrize("lanes", [8, 32])
@pytest.mark.parametrize("name", WORKLOADS)
def test_every_workload_maps_without_conflicts(name, lanes, record_property):
    problem = WORKLOADS[name]()
    mapping = search(problem, lanes, 8192)
    assert mapping.ok, str(mapping)
    assert all(w <= 8192 for w in mapping.words)
    # an independent re-check of the chosen layouts (the analysis is itself tested against
    # brute force; re-walking the biggest tiles step by step is too slow for CI)
    again = analyze(problem, mapping.tile_p, mapping.tile_a, lanes, grouping=mapping.grouping,
                    layouts=mapping.layouts())
    assert again.ok
    # the lane fields MERIT-z can express: low bits of each index, inner indices on low lanes
    index = [j for j, _ in mapping.grouping.bits]
    assert index == sorted(index, reverse=True)
    for j in set(index):
        assert [b for jj, b in mapping.grouping.bits if jj == j] == list(range(index.count(j)))
    record_property("padding", mapping.padding)


@pytest.mark.parametrize("name", ["filter3x3", "correlation", "integral_image"])
def test_free_retiling_never_needs_more_padding(name):
    problem = WORKLOADS[name]()
    fields = search(problem, 8, 8192)
    free = search(problem, 8, 8192, contiguous=False)
    assert free.ok and free.tile_p == fields.tile_p
    assert free.padding <= fields.padding


@pytest.mark.parametrize("name", ["filter3x3", "conv2d_stride2", "pixel_shuffle"])
def test_chosen_mapping_survives_brute_force(name):
    problem = WORKLOADS[name]()
    mapping = search(problem, 8, 8192, max_outputs=32)
    for op, report in zip(problem.operands, mapping.operands, strict=True):
        conflicts, blocked, steps = brute_force(op.transform, mapping.tile_p, mapping.tile_a,
                                                mapping.grouping, report.layout)
        assert (conflicts, blocked) == (0, 0) and steps == report.steps


def test_search_pads_or_hashes_a_strided_convolution_without_waste():
    mapping = search(WORKLOADS["conv2d_stride2"](), 8, 8192)
    assert mapping.padding == 0


def test_too_few_outputs_for_the_lanes():
    with pytest.raises(NoMapping, match=r"problem 'gemm' has 4 parallel outputs, fewer than the "
                                        r"8 lanes of one step"):
        search(W.gemm(2, 2, 8), 8)


def test_sram_too_small():
    with pytest.raises(NoMapping, match=r"problem 'conv2d': no tile of 8\.\.128 outputs fits "
                                        r"SRAMs of \[2, 2\] words"):
        search(WORKLOADS["conv2d"](), 8, 2)


def test_search_rejects_bad_arguments():
    problem = WORKLOADS["gemm"]()
    with pytest.raises(ValueError, match="lanes must be a power of two, not 24"):
        search(problem, 24)
    with pytest.raises(ValueError, match=r"sram_words must have one entry per operand \(2\), "
                                         r"not 3"):
        search(problem, 8, [100, 100, 100])
    with pytest.raises(ValueError, match="sram_words must be positive, not 0"):
        search(problem, 8, 0)


def test_negative_sram_budgets_are_refused():
    with pytest.raises(ValueError, match=r"sram_words must be positive, not \[100, -1\]"):
        search(WORKLOADS["gemm"](), 8, [100, -1])


@pytest.mark.parametrize("coeffs", [(0, 8, 16), (0, 16, 32), (8, 0, 16)])
def test_a_broadcast_lane_bit_still_gets_a_conflict_free_hash(coeffs):
    # lanes that differ only in a bit of coefficient 0 read one word (multicast); the others
    # read distinct words, which must land in distinct banks from every start address
    def conflict_free(bank):
        for a0 in range(64):
            words = {a0 + sum(c for i, c in enumerate(coeffs) if n >> i & 1) for n in range(8)}
            if len({int(bank.bank(w)) for w in words}) != len(words):
                return False
        return True
    candidates = hash_candidates(coeffs, 8)
    assert not conflict_free(candidates[0])          # the identity alone does not do
    assert any(conflict_free(bank) for bank in candidates[1:])


def test_equal_cost_prefers_more_outputs_per_tile():
    # max pooling loads 4 words per output whatever the tile: the larger tiles come first
    # (the tiles of 3 rows or columns cover 9 of the 8 and cost 4 x 9 / 8 per row and column)
    ranked = tile_candidates(W.max_pool2d(1, 2, 16, 16, 2), 8, [4096], 256)
    dividing = [(cost, tile_p) for cost, tile_p, _ in ranked if 3 not in tile_p]
    assert {cost for cost, _ in dividing} == {4.0}
    assert all(cost in (4.5, 5.0625) for cost, tile_p, _ in ranked if 3 in tile_p)
    counts = [math.prod(tile_p) for _, tile_p in dividing]
    assert counts == sorted(counts, reverse=True) and counts[0] == 128


def test_odd_sizes_get_even_splits():
    # 13, 27 and 55 outputs: one or a few tiles of ceil(size / k) beside the powers of two
    assert tile_sizes(13) == [1, 2, 3, 4, 5, 7, 8, 13, 16]
    assert tile_sizes(27) == [1, 2, 4, 5, 6, 7, 8, 9, 14, 16, 27, 32]
    assert tile_sizes(55) == [1, 2, 4, 7, 8, 10, 11, 14, 16, 19, 28, 32, 55, 64]


def test_an_odd_output_maps_without_idle_lanes():
    # 13 x 13 outputs of 16 channels on 8 lanes: the lanes go to the channels, the tile covers
    # the 13 columns exactly (powers of two would leave 3 of 16 lanes idle in every row)
    mapping = search(W.conv2d(1, 4, 13, 13, 16, 3, padding=1), 8, 8192)
    assert 13 in mapping.tile_p
    lanes_per = [1] * 4
    for j, _ in mapping.grouping.bits:
        lanes_per[j] *= 2
    assert all(t % n == 0 for t, n in zip(mapping.tile_p, lanes_per, strict=True))
    assert lanes_per[3] == 1
