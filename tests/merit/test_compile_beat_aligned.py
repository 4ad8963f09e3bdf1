"""The compiler's placement of input tensors within their first 8-byte beat
(``merit.compile.beat_aligned``), against a count of the DRAM beats of every footprint row made
here from the convolution's geometry alone."""

import itertools

import numpy as np
import pytest

from merit import workloads as W
from merit.compile import TENSOR_OFFSETS, beat_aligned, compile_problem
from merit.perf import slot_read_beats

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def conv_input_beats(problem, kernel, base):
    """Beats the DMA reads of a 3 x 3, padding 1 convolution's input ``I`` (c, h, w) at byte
    ``base``: every job (parallel tile x accumulation tile) reads, per input channel of its
    accumulation tile and per input row of its output rows' window inside the image, the
    columns of the window inside the image, one beat per 8 bytes the row touches."""
    _, c, h, w = problem.tensors[0].shape
    _, _, th, tw = kernel.tiling.p_tile
    tc = kernel.tiling.a_tile[0]
    beats = 0
    for (_, _, r0, c0), a0 in itertools.product(kernel.tiles, range(0, c, tc)):
        lo, hi = max(c0 - 1, 0), min(c0 + tw, w - 1)
        for ch, r in itertools.product(range(a0, min(a0 + tc, c)),
                                       range(max(r0 - 1, 0), min(r0 + th, h - 1) + 1)):
            first = base + 2 * ((ch * h + r) * w + lo)
            last = base + 2 * ((ch * h + r) * w + hi) + 1
            beats += last // 8 - first // 8 + 1
    return beats


@pytest.mark.parametrize("shape", [(3, 16, 32, 8), (3, 9, 13, 4), (2, 27, 27, 8)],
                         ids=["16x32", "9x13", "27x27"])
def test_input_offset_is_the_fewest_beats(shape):
    c, h, w, m = shape
    problem = W.conv2d(1, c, h, w, m, 3, padding=1)
    kernel = compile_problem(problem, **SMALL)
    assert tuple(kernel.tiling.a_tile[1:]) == (3, 3), kernel.tiling    # the count's premise
    address = kernel.tensors["I"]
    start = address - address % 64
    counts = {o: conv_input_beats(problem, kernel, start + o) for o in TENSOR_OFFSETS}
    best = min(counts.values())
    assert address - start == min(o for o, n in counts.items() if n == best), counts
    # the model's count of the slot that reads I, where the compiler put it, is the same
    slot = next(s for r in ("rp0", "rp1") for s in kernel.config[r] if s and s["base"] == address)
    assert slot_read_beats(kernel, slot) == counts[address - start]


def test_a_move_that_pays_and_one_that_does_not():
    # 8-column tiles of a 3 x 3 window read rows of 10 words from one word before the tile:
    # at a 64-byte boundary they start 6 bytes into a beat and touch 4 beats, 2 bytes on 3;
    # the weights' rows gain nothing and stay on their boundary
    problem = W.conv2d(1, 3, 16, 32, 8, 3, padding=1)
    kernel = compile_problem(problem, **SMALL)
    assert kernel.tiling.p_tile[-1] == 8
    address = kernel.tensors["I"]
    start = address - address % 64
    assert address % 64 == 2
    assert conv_input_beats(problem, kernel, address) < conv_input_beats(problem, kernel, start)
    assert kernel.tensors["W"] % 64 == 0
    plain = compile_problem(problem, align_tensors=False, **SMALL)
    assert all(a % 64 == 0 for a in plain.tensors.values())
    # the regions stay disjoint: each tensor ends before the next begins
    regions = sorted((kernel.tensors[t.name], 2 * int(np.prod(t.shape)))
                     for t in problem.tensors)
    regions += [(a, 0) for _, a in kernel.outputs]
    for (a, size), (b, _) in itertools.pairwise(sorted(regions)):
        assert a + size <= b


def test_aligned_kernel_is_unchanged_where_nothing_pays():
    # a GEMM's rows start on beats already: the kernel comes back as it was
    kernel = compile_problem(W.gemm(32, 16, 16), align_tensors=False, **SMALL)
    assert beat_aligned(kernel) is kernel
