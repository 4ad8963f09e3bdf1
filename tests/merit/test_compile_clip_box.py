"""The footprint box cut to the parallel space along the indices of one tile
(``merit.compile.clipped_box``), against the source coordinates that the valid outputs of every
tile read, enumerated here element by element from the problem's transforms."""

import itertools

import pytest

from merit import perf
from merit import workloads as W
from merit.compile import compile_problem

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def valid_spans(problem, kernel):
    """Per operand, the largest side per source axis of the box that the valid elements of a
    job read (parallel coordinates inside ``p_shape``, accumulation coordinates inside
    ``a_shape``), over every job of the kernel: what the DMA must load."""
    tp, ta = kernel.tiling.p_tile, kernel.tiling.a_tile
    a_origins = list(itertools.product(*(range(0, n, t) for n, t in zip(problem.a_shape, ta,
                                                                   strict=True))))
    spans = []
    for op in problem.operands:
        tr = op.transform
        best = [0] * len(tr.source_shape)
        for p0, a0 in itertools.product(kernel.tiles, a_origins):
            ps = [range(o, min(o + t, n)) for o, t, n in zip(p0, tp, problem.p_shape,
                                                         strict=True)]
            as_ = [range(o, min(o + t, n)) for o, t, n in zip(a0, ta, problem.a_shape,
                                                          strict=True)]
            coords = [tr.origin(p, a) for p in itertools.product(*ps)
                      for a in itertools.product(*as_)]
            for axis in range(len(best)):
                side = max(c[axis] for c in coords) - min(c[axis] for c in coords) + 1
                best[axis] = max(best[axis], side)
        spans.append(tuple(best))
    return spans


def boxes(kernel):
    """The configured box of each enabled slot, in operand order, without the padding axes."""
    slots = [s for r in ("rp0", "rp1") for s in kernel.config[r] if s]
    by_base = {s["base"]: s for s in slots}
    return [tuple(by_base[kernel.tensors[op.tensor]]["box"][-len(op.transform.source_shape):])
            for op in kernel.problem.operands]


def test_alpha_blend_loads_only_what_its_valid_lanes_read():
    # 3 x 3 matte pixels: the lanes along the 3 columns of a pixel are 4, the fourth void in
    # every tile; its words (one per image row of a tile) are left out of the footprint
    problem = W.alpha_blend(2, 12, 48, scale=3)
    kernel = compile_problem(problem, merge_rows=False, **SMALL)
    whole = compile_problem(problem, merge_rows=False, clip_box=False, **SMALL)
    assert kernel.tiling == whole.tiling
    assert kernel.tiling.p_tile[4] == 4 > problem.p_shape[4]      # the count's premise
    assert boxes(kernel) == valid_spans(kernel.problem, kernel)
    assert any(b > s for b, s in zip(boxes(whole)[0], boxes(kernel)[0], strict=True))
    # fewer read beats, the tile's layout (SRAM rows, pitches) unchanged
    assert perf.predict(kernel).read_bytes < perf.predict(whole).read_bytes
    for r in ("rp0", "rp1"):
        for cut, full in zip(kernel.config[r], whole.config[r], strict=True):
            assert {k: v for k, v in cut.items() if k != "box"} == \
                {k: v for k, v in full.items() if k != "box"}


def beyond(kernel):
    """Whether a tile of ``kernel`` is larger than its index along some index."""
    return any(t > n for t, n in zip(kernel.tiling.p_tile + kernel.tiling.a_tile,
                                     kernel.problem.p_shape + kernel.problem.a_shape,
                                     strict=True))


@pytest.mark.parametrize("shape", [(3, 9, 13, 4), (4, 13, 13, 16)], ids=["9x13", "13x13"])
def test_tiles_inside_the_space_keep_their_box(shape):
    c, h, w, m = shape
    problem = W.conv2d(1, c, h, w, m, 3, padding=1)
    kernel = compile_problem(problem, **SMALL)
    whole = compile_problem(problem, clip_box=False, **SMALL)
    assert not beyond(kernel) and not beyond(whole)     # the premise
    assert kernel.config == whole.config


def test_clip_box_must_be_a_bool():
    with pytest.raises(TypeError, match="clip_box must be True or False"):
        compile_problem(W.gemm(8, 8, 8), clip_box=1, **SMALL)
