"""Merged DRAM rows (``merit.compile.merged_rows``): a slot's contiguous footprint rows read as
fewer, longer rows. The merged slot must put the same DRAM element (or the same zero) at the same
tile address in every job, and read fewer beats."""

import itertools

import pytest

from merit import perf
from merit import workloads as W
from merit.compile import AXES, P_INDICES, compile_problem, merged_rows

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def _origins(kernel):
    """Every job's (parallel, accumulation) origin on the hardware indices."""
    cfg = kernel.config
    a_grid = [range(0, n, t) for n, t in zip(cfg["a_size"], cfg["a_tile"], strict=True)]
    for p in kernel.tiles:
        for a in itertools.product(*a_grid):
            yield list(p) + [0] * (P_INDICES - len(p)) + list(a)


def _tile(slot, origin, tiles):
    """``{tile address: DRAM element or None (outside: zero)}`` of one job, as the DMA reads the
    slot's rows (``docs/perf.md`` §2), walked element by element."""
    low = list(slot["offset"])
    for j, s in enumerate(slot["stride"]):
        if s:
            low[slot["axis"][j]] += origin[j] * s + ((tiles[j] - 1) * s if s < 0 else 0)
    dpitch, lpitch = list(slot["dpitch"]) + [1], list(slot["lpitch"]) + [1]
    out = {}
    for k in itertools.product(*[range(b) for b in slot["box"]]):
        x = [lo + i for lo, i in zip(low, k, strict=True)]
        inside = all(0 <= v < e for v, e in zip(x, slot["extent"], strict=True))
        address = sum(i * p for i, p in zip(k, lpitch, strict=True))
        assert address not in out
        out[address] = sum(v * p for v, p in zip(x, dpitch, strict=True)) if inside else None
    return out


def _sides(kernel):
    cfg = kernel.config
    return (list(cfg["p_size"]) + list(cfg["a_size"]), list(cfg["p_tile"]) + list(cfg["a_tile"]))


def _slots(kernel):
    return [s for r in ("rp0", "rp1") for s in kernel.config[r] if s and s.get("enable")]


CASES = {
    # a 3 x 3 kernel's weights: rows of 3 words merge over the kernel and the input channels
    "conv3x3": W.conv2d(1, 8, 12, 12, 8, 3, padding=1),
    # input channels not a multiple of the accumulation tile: the last tile's channels lie
    # outside the tensor, zeros on the merged row as on the rows before
    "conv_c5": W.conv2d(1, 5, 10, 10, 4, 3),
    # a 1 x 1 convolution and a GEMM: long rows already, the image rows merge where a tile
    # covers a whole row
    "conv1x1": W.conv2d(1, 16, 8, 8, 8, 1),
    "gemm": W.gemm(16, 24, 8),
    "subpixel": W.subpixel_conv(1, 8, 8, 8, 2, 3, 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_merged_rows_read_the_same_elements_into_the_same_tile_addresses(name):
    kernel = compile_problem(CASES[name], merge_rows=False, **SMALL)
    sizes, tiles = _sides(kernel)
    origins = list(_origins(kernel))
    changed = 0
    for slot in _slots(kernel):
        merged = merged_rows(slot, sizes, tiles)
        changed += merged != slot
        for origin in origins:
            assert _tile(merged, origin, tiles) == _tile(slot, origin, tiles), (name, origin)
    # the weights of the 3 x 3 kernels merge
    assert changed or name not in ("conv3x3", "conv_c5", "subpixel")


def test_the_weights_of_a_3x3_convolution_merge_into_rows_of_channels_x_9_words():
    kernel = compile_problem(CASES["conv3x3"], **SMALL)
    plain = compile_problem(CASES["conv3x3"], merge_rows=False, **SMALL)
    assert kernel.tiling == plain.tiling
    weights = kernel.config["rp1"][0]
    m, c, k, _ = plain.config["rp1"][0]["box"]
    assert k == 3 and m < 8
    assert weights["box"] == [1, 1, m, c * k * k]
    assert weights["extent"] == [1, 1, 8, 8 * 9]
    # the image slot (padded: offset -1 on both spatial axes) keeps its rows
    assert kernel.config["rp0"][0] == plain.config["rp0"][0]
    a, b = perf.predict(plain), perf.predict(kernel)
    assert b.read_bytes < a.read_bytes
    assert b.cycles <= a.cycles


def test_rows_that_do_not_cover_their_axis_from_zero_do_not_merge():
    slot = {"axis": [0, 1, 0, 0] + [2, 3] + [0] * 6, "stride": [0, 1, 0, 0, 1, 1] + [0] * 6,
            "offset": [0, 0, -1, -1], "extent": [1, 4, 6, 6], "box": [1, 2, 3, 3],
            "clamp": [0, 0, 0, 0], "lpitch": [18, 9, 3], "dpitch": [144, 36, 6]}
    sizes = [1, 4, 1, 1, 3, 3] + [1] * 6
    tiles = [1, 2, 1, 1, 3, 3] + [1] * 6
    # the padding (offset -1) leaves every row partly outside: nothing merges
    assert merged_rows(slot, sizes, tiles) == slot
    inner = dict(slot, offset=[0, 0, 0, 0], extent=[1, 4, 3, 3], dpitch=[36, 9, 3])
    # covering from 0, dense: axes 1 .. 3 merge into one of 36 elements
    merged = merged_rows(inner, sizes, tiles)
    assert merged["extent"] == [1, 1, 1, 36] and merged["box"] == [1, 1, 1, 18]
    assert merged["stride"][1] == 9 and merged["axis"][1] == 3
    # a clamped row axis, or a tile smaller than its index, keeps its rows (the axes above may
    # still merge among themselves)
    clamped = merged_rows(dict(inner, clamp=[0, 0, 0, 1]), sizes, tiles)
    assert clamped["extent"] == [1, 1, 12, 3] and clamped["box"] == [1, 1, 6, 3]
    small = list(tiles)
    small[5] = 2
    assert merged_rows(dict(inner, box=[1, 2, 3, 2]), sizes, small)["box"][AXES - 1] == 2
