"""Sliding-window reuse across a TAU's consecutive jobs (``compile_problem(slide=...)``,
``Kernel.slide``): the slide walk deals each TAU its tiles along the slide index one after the
other, a job whose footprint is its previous job's moved forward loads only the new rows, and
the view that lays the sliding axis outermost reads the tensor's own elements. The references
here are counted from the problem's transforms (``Transform.box``) and the tile grid, not from
the slot configuration that ``merit.perf`` walks."""

import itertools

import numpy as np
import pytest

from merit import perf
from merit import workloads as W
from merit.compile import CompileError, _slide_ok, compile_problem, outermost, slide_choices

# each footprint row read as the tensor's own row (the reference counts them so)
SMALL = dict(lanes=8, instructions=24, swap=False, merge_rows=False)


def _walk(kernel, taus):
    """Each TAU's tiles in order on the slide walk, built from the grid: the lines (tiles that
    agree on every index but the slide index), row-major, dealt in blocks of ``taus`` lines,
    TAU ``x`` the ``x``-th line of each block, walked along the slide index."""
    j = kernel.slide[1]
    shape, tile = kernel.problem.p_shape, kernel.tiling.p_tile
    grid = [list(range(0, n, t)) for n, t in zip(shape, tile, strict=True)]
    others = [i for i in range(len(shape)) if i != j]
    lines = list(itertools.product(*[grid[i] for i in others]))
    per_tau = [[] for _ in range(taus)]
    for x, line in enumerate(lines):
        for y in grid[j]:
            origin = [0] * len(shape)
            for i, v in zip(others, line, strict=True):
                origin[i] = v
            origin[j] = y
            per_tau[x % taus].append(tuple(origin))
    return per_tau


def _row_beats(transform, base, low, box, outer):
    """8-byte beats of one footprint row (outer coordinates ``outer``, the innermost axis from
    ``low[-1]`` for ``box[-1]`` elements) of a dense int16 tensor at byte ``base``; rows outside
    it (zero boundary) are not read."""
    shape = transform.source_shape
    if any(not 0 <= c < n for c, n in zip(outer, shape[:-1], strict=True)):
        return 0
    lo, hi = max(low[-1], 0), min(low[-1] + box[-1], shape[-1])
    if lo >= hi:
        return 0
    pitch = [int(np.prod(shape[d + 1:])) for d in range(len(shape) - 1)]
    first = base + 2 * (sum(c * p for c, p in zip(outer, pitch, strict=True)) + lo)
    last = first + 2 * (hi - lo) - 1
    return last // 8 - first // 8 + 1


def _cut(tile, shape):
    """A tile's sides as its footprint counts them: an index of one tile (the tile at least its
    size) at its size, its void lanes reading nothing the DMA loads
    (``merit.compile.clipped_box``)."""
    return tuple(min(t, n) for t, n in zip(tile, shape, strict=True))


def _footprint_rows(transform, p_start, a_start, tile_p, tile_a):
    low, box = transform.box(p_start, a_start, tile_p, tile_a)
    rows = set(itertools.product(*[range(lo, lo + b) for lo, b in zip(low[:-1], box[:-1],
                                                                     strict=True)]))
    return low, box, rows


def _reference_beats(kernel, taus):
    """Read beats of every operand over each TAU's jobs: the sliding operand's rows that its
    TAU's previous job did not have (all of them where the footprint jumps), every other
    operand's whole footprint every job."""
    problem = kernel.problem
    tile_p, tile_a = kernel.tiling.p_tile, kernel.tiling.a_tile
    a_grid = list(itertools.product(*[range(0, n, t) for n, t in zip(problem.a_shape, tile_a,
                                                                      strict=True)]))
    total = 0
    for k, op in enumerate(problem.operands):
        tr = op.transform
        base = kernel.tensors[op.tensor]
        sliding = _is_sliding(kernel, k)
        for tiles in _walk(kernel, taus):
            last = None
            for p_start in tiles:
                for a_start in a_grid:
                    low, box, rows = _footprint_rows(tr, p_start, a_start,
                                                     _cut(tile_p, problem.p_shape),
                                                     _cut(tile_a, problem.a_shape))
                    new = rows - last if sliding and last is not None else rows
                    total += sum(_row_beats(tr, base, low, box, row) for row in new)
                    last = rows
    return total


def _is_sliding(kernel, k):
    """Whether operand ``k`` is the kernel's sliding slot (its tensor's base is the slot's)."""
    number = kernel.slide[0]
    slots = [s for r in ("rp0", "rp1") for s in kernel.config[r]]
    return slots[number]["base"] == kernel.tensors[kernel.problem.operands[k].tensor]


CASES = {
    # the second image's window slides along y (its rows): 2 x 2 displacements' halo
    "correlation": (lambda: W.correlation(4, 16, 16, 2), (1, 0), {}),
    # a 3 x 3 convolution's input, the whole reduction in one accumulation tile: the halo rows
    # (tiles of at most 64 outputs: several along y)
    "conv": (lambda: W.conv2d(1, 2, 48, 16, 4, 3, padding=1), (0, 2), {"max_outputs": 64}),
}


@pytest.mark.parametrize("taus", [1, 2, 4])
@pytest.mark.parametrize("case", sorted(CASES))
def test_slid_loads_are_the_new_rows_counted_from_the_footprints(case, taus):
    make, choice, options = CASES[case]
    problem = make()
    assert choice in slide_choices(problem)
    kernel = compile_problem(problem, taus=taus, slide=choice, **SMALL, **options)
    assert kernel.slide is not None and kernel.slide[1] == choice[1]
    pred = perf.predict(kernel, taus=taus)
    # the model deals the slide walk: TAU x the x-th line of each block of lines
    where = {o: t.tau for o, t in zip(kernel.tiles, pred.per_tile, strict=True)}
    for tau, tiles in enumerate(_walk(kernel, taus)):
        assert all(where[o] == tau for o in tiles)
    assert pred.read_bytes // 8 == _reference_beats(kernel, taus)
    # the slide saves loads: fewer beats than its own tiles loaded whole every job
    whole = sum(perf.slot_read_beats(kernel, s) for r in ("rp0", "rp1")
                for s in kernel.config[r] if s)
    assert pred.read_bytes // 8 < whole


def test_the_view_reads_the_tensor_own_elements():
    # the transform read through the view (its axis 1 outermost) on the tensor's axes in the
    # view's order gives the original transform's elements
    problem = W.correlation(3, 6, 7, 1)
    tr = problem.operands[1].transform
    view, dpitch = outermost(tr, 1)
    assert view.source_shape == (6, 3, 7)
    assert dpitch == [7, 42, 1]
    rng = np.random.default_rng(1)
    a = rng.integers(-100, 100, size=tr.source_shape)
    p_shape, a_shape = problem.p_shape, problem.a_shape
    assert np.array_equal(view.apply(a.transpose(1, 0, 2), p_shape, a_shape),
                          tr.apply(a, p_shape, a_shape))
    with pytest.raises(CompileError, match="innermost"):
        outermost(tr, 2)


def test_a_slide_that_is_not_offered_is_refused():
    problem = W.correlation(4, 16, 16, 2)
    # I1 moves along its rows with y alone: its next tile's footprint does not overlap
    assert (0, 0) not in slide_choices(problem)
    with pytest.raises(CompileError, match="slide"):
        compile_problem(problem, slide=(0, 0), **SMALL)
    with pytest.raises(TypeError, match="slide"):
        compile_problem(problem, slide="y", **SMALL)


@pytest.mark.parametrize(("lanes", "tile", "box", "xor", "slides"), [
    (8, 1, 3, 0, True),     # a move of one row of 3 x 16 words: 48 words, 6 SRAM rows of 8
    (32, 1, 3, 0, False),   # 1 1/2 rows of 32: the base cannot move by rows
    (32, 2, 4, 0, True),    # 96 words: 3 rows of 32, the tile 6 rows
    (32, 2, 3, 0, False),   # the tile 4 1/2 rows: the new rows would not follow it
    (8, 1, 4, 5, False),    # a bank bit hashes address bit 5: a move of 48 changes it
    (8, 4, 8, 5, True),     # moves of 192 words, a tile of 384: multiples of 64
    (8, 4, 6, 5, False),    # a tile of 288: the new rows' banks would differ
    (8, 6, 6, 0, False),    # a move of 6 is not less than the box (6 rows of y)
])
def test_a_slide_keeps_rows_whole_and_words_in_their_banks(lanes, tile, box, xor, slides):
    # a slot of an (h, c = 3, w = 16) view, h outermost: y moves along h with dy (``box`` rows
    # of h), lpitch[h] = 3 x 16
    slot = {"axis": [1, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            "stride": [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            "box": [1, box, 3, 16], "lpitch": [48, 48, 16], "xor": [0, xor, 0, 0, 0, 0]}
    p_tile = [tile, 1, 3, 1, 1, 1]
    assert _slide_ok(slot, 0, p_tile, lanes) is slides


def test_a_split_reduction_does_not_slide():
    # 32 channels in an RP of 256 words: the accumulation tiles split the channels, so the
    # input's footprint changes with every job and nothing slides
    problem = W.conv2d(1, 32, 24, 16, 4, 3, padding=1)
    kernel = compile_problem(problem, slide=(0, 2), rp_bytes=(512, 1024), **SMALL)
    assert kernel.tiling.a_tile[0] < 32
    assert kernel.slide is None
    whole = compile_problem(W.conv2d(1, 2, 24, 16, 4, 3, padding=1), slide=(0, 2),
                            max_outputs=64, **SMALL)
    assert whole.slide == (0, 2)


def test_a_slide_beside_a_slot_shared_on_the_block_walk():
    # correlation on 4 TAUs, I1 shared on the block walk (it does not move along dy, dx) and
    # I2 sliding along y: a block of 4 TAUs takes 4 (dy, dx) tiles at one (x, y), then the next
    # y; I1 is fetched once a block (by its leader), I2's new rows by each TAU; a TAU past the
    # end of the (dy, dx) walk runs a void tile (dy, dx at their extents), which loads too
    problem = W.correlation(4, 16, 16, 2)
    kernel = compile_problem(problem, taus=4, slide=(1, 0), share_dims=2, share_counts=(1,),
                             max_outputs=32, **SMALL)
    assert kernel.slide is not None and kernel.sharing is not None
    (shared, log2), = kernel.sharing
    assert 1 << log2 == 4
    shape, tile = problem.p_shape, kernel.tiling.p_tile
    grid = [list(range(0, n, t)) for n, t in zip(shape, tile, strict=True)]
    xs = [(a, b) for a in grid[2] for b in grid[3]]            # the (dy, dx) walk
    tile_a = kernel.tiling.a_tile
    a_grid = list(range(0, problem.a_shape[0], tile_a[0]))
    i1, i2 = (op.transform for op in problem.operands)
    beats = 0
    last = [None] * 4
    for x in grid[1]:
        for x0 in range(0, len(xs), 4):
            for y in grid[0]:
                block = [(y, x) + (xs[k] if k < len(xs) else shape[2:])
                         for k in range(x0, x0 + 4)]
                for a in a_grid:
                    low, box, rows = _footprint_rows(i1, block[0], (a,), _cut(tile, shape),
                                                     _cut(tile_a, problem.a_shape))
                    beats += sum(_row_beats(i1, kernel.tensors["I1"], low, box, r)
                                 for r in rows)
                for k, origin in enumerate(block):
                    for a in a_grid:
                        low, box, rows = _footprint_rows(i2, origin, (a,), _cut(tile, shape),
                                                         _cut(tile_a, problem.a_shape))
                        new = rows - last[k] if last[k] is not None and origin[0] else rows
                        beats += sum(_row_beats(i2, kernel.tensors["I2"], low, box, r)
                                     for r in new)
                        last[k] = rows
    assert perf.predict(kernel, taus=4).read_bytes // 8 == beats


def test_a_tile_larger_than_the_predicted_rp_runs_one_at_a_time():
    # the FIFOs counted in rows: an empty FIFO still takes a job whose tiles exceed the RP the
    # model is given (the processor's START check refuses such a tile; the model runs it one at
    # a time instead of waiting for room that never comes)
    k = compile_problem(W.gemm(64, 64, 64), lanes=8)
    small = (256, 256)
    assert perf._jobs(k, small).rows[0] > perf._jobs(k, small).depth[0]
    assert perf.predict(k, rp_bytes=small).cycles > perf.predict(k).cycles
