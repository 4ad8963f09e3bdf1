"""merit.compile: kernel configuration values and the errors for problems a TAU cannot run."""

import numpy as np
import pytest

from merit import workloads as W
from merit.compile import CompileError, Tiling, compile_problem, lane_coords, slot_config
from merit.transform import Index, Transform
from meritz import kernelcfg


def test_conv_kernel_packs_and_covers_the_output():
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    k = compile_problem(problem, lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)
    kernelcfg.pack(k.config)                       # every value fits its field
    covered = np.zeros(problem.p_shape, dtype=int)
    for origin in k.tiles:
        sl = tuple(slice(o, o + t) for o, t in zip(origin, k.tiling.p_tile, strict=True))
        covered[sl] += 1
    assert (covered == 1).all()
    # 27 mac + post (1) per output: the pre's zero init is left to the CP's clear
    # (merit.compile.without_zero_init)
    assert k.useful_ops == (27 + 1) * int(np.prod(problem.p_shape))
    # the tensors and outputs do not overlap
    spans = sorted([(a, a + 2 * int(np.prod(t.shape))) for t in problem.tensors
                    for n, a in k.tensors.items() if n == t.name]
                   + [(a, a + 2 * int(np.prod(problem.p_shape))) for _, a in k.outputs])
    assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:], strict=False))


def test_lane_coords_follow_the_lane_map():
    c = lane_coords((1, 1, 0), 2)
    assert list(c[1]) == [0, 1, 2, 3, 0, 1, 2, 3]
    assert list(c[0]) == [0, 0, 0, 0, 1, 1, 1, 1]


def test_program_too_long():
    problem = W.bilateral(8, 10, sigma_s=1.5, sigma_r=20.0, radius=1)
    with pytest.raises(CompileError, match="the program has 22 instructions, the TAU holds 16"):
        compile_problem(problem, lanes=8)


def test_too_many_operands_on_one_rp():
    problem = W.residual(1, 2, 6, 6, 2, 3, padding=1)
    with pytest.raises(CompileError, match="2 operands on RP0, which has 1 slot"):
        compile_problem(problem, lanes=8, rp0_slots=1)


def test_slot_errors():
    tr = Transform((4, 400), p=[Index(1, stride=200)], a=[Index(0)], name="A")
    tiling = Tiling((8,), (4,), (0, 0, 0))
    with pytest.raises(CompileError, match="stride 200 does not fit the 8-bit stride field"):
        slot_config(tr, tiling, 8)
    with pytest.raises(CompileError, match="parallel tile size 4 of index p\\[0\\] must be a "
                                           "multiple of its 8 lanes"):
        slot_config(tr, Tiling((4,), (4,), (0, 0, 0)), 8)
    big = Transform((64, 64), p=[Index(1)], a=[Index(0)], name="B")
    with pytest.raises(CompileError, match="needs 64 SRAM rows, the RP has 16"):
        slot_config(big, Tiling((64,), (8,), (0, 0, 0)), 8, depth=16)


@pytest.mark.parametrize("problem", [W.gemm(16, 16, 8), W.max_pool2d(1, 2, 8, 8, 2),
                                     W.motion_estimation(16, 16, block=4, search=2, best=True)],
                         ids=["gemm", "max_pool", "best_match_3_outputs"])
def test_dram_layout_is_compact_and_disjoint(problem):
    # every tensor and output gets its own region, in order from dram_base, each starting on a
    # 64-byte boundary right after the one before (an input's region: its tensor and room to
    # move it within its first beat, ``merit.compile.beat_aligned``); dram_bytes: the end,
    # rounded up to 4 KiB
    from merit.compile import TENSOR_OFFSETS
    kernel = compile_problem(problem, lanes=8, dram_base=0x1000)
    room = max(TENSOR_OFFSETS)
    regions = [(kernel.tensors[t.name], 2 * int(np.prod(t.shape)), room)
               for t in problem.tensors]
    regions += [(address, 2 * int(np.prod(problem.p_shape)), 0) for _, address in kernel.outputs]
    assert len(kernel.outputs) == len(kernel.program.out_addresses)
    start = 0x1000
    for address, size, extra in regions:
        region = address - address % 64
        assert address - region <= extra and start <= region < start + 64
        start = region + size + extra
    assert start <= kernel.dram_bytes < start + 4096 and kernel.dram_bytes % 4096 == 0


@pytest.mark.parametrize("name", ["gemm", "max_pool2x2", "motion_sad"])
def test_one_enabled_slot_per_operand(name):
    from merit.suite import WORKLOADS
    problem = WORKLOADS[name][0]()
    kernel = compile_problem(problem, lanes=8)
    enabled = [s for r in ("rp0", "rp1") for s in kernel.config[r] if s.get("enable") == 1]
    assert len(enabled) == len(problem.operands)
    assert sorted(s["base"] for s in enabled) == sorted(kernel.tensors[op.tensor]
                                                        for op in problem.operands)


def _slots(problem):
    # the slots as slot_config makes them, in the source tensor's own rows (merged rows:
    # tests/merit/test_compile_merged_rows.py)
    kernel = compile_problem(problem, lanes=8, merge_rows=False)
    slots = [s for r in ("rp0", "rp1") for s in kernel.config[r] if s.get("enable") == 1]
    return [(op.transform, s) for op, s in zip(problem.operands, slots, strict=True)]


@pytest.mark.parametrize("problem", [W.conv2d(1, 3, 5, 7, 2, 3, padding=1), W.gemm(16, 24, 8)],
                         ids=["conv_4d", "gemm_2d"])
def test_slot_axes_and_dram_pitches_describe_the_source_tensor(problem):
    # each index moving through DRAM names the axis of its source tensor (the extent there is
    # that axis' size), and the DRAM pitches are the dense row-major strides of the tensor
    for transform, slot in _slots(problem):
        shape = transform.source_shape
        pad = len(slot["extent"]) - len(shape)
        moving = sorted(shape[i.axis] for i in transform.indices if i is not None and i.stride)
        named = sorted(slot["extent"][a] for a, s in zip(slot["axis"], slot["stride"],
                                                         strict=True) if s)
        assert named == moving, (transform.name, slot["axis"], slot["extent"])
        strides = [x // 8 for x in np.zeros(shape, np.int64).strides]
        assert slot["dpitch"][pad:] == strides[:len(slot["dpitch"]) - pad], transform.name


def test_whole_messages_of_the_layout_checks():
    with pytest.raises(ValueError, match=r"^rp_bytes\[0\] must be whole SRAM rows of 8 lanes x 2 "
                                         r"bytes \(16 bytes\), at least two \(double buffering\): "
                                         r"a multiple of 16 from 32, not 2$"):
        compile_problem(W.gemm(16, 16, 8), lanes=8, rp_bytes=(2, 2))
    t = Transform((16, 8), p=[Index(0)], a=[Index(1)], name="x")
    with pytest.raises(CompileError, match=r"^lane_index must name one parallel index per lane "
                                           r"bit \(3 for 8 lanes\), not 2$"):
        slot_config(t, Tiling((16,), (8,), (0, 0)), 8)


def test_edge_warps_count_the_warps_holding_an_output():
    # warp w along index j covers outputs origin + w * lanes_j ...; it runs when its first one
    # is inside p_shape (a tile wholly outside, a void tile, runs one)
    tiling = Tiling((16, 8), (1,), (0, 1, 1))          # 2 lanes along p0, 4 along p1
    p_shape = (21, 10)
    for origin in [(0, 0), (16, 0), (0, 8), (16, 8), (32, 16), (20, 9)]:
        want = tuple(max(1, sum(o + w * n < size for w in range(warps)))
                     for o, n, size, warps in zip(origin, tiling.lanes_per_index(), p_shape,
                                                  tiling.warps(), strict=True))
        assert tiling.edge_warps(origin, p_shape) == want, origin


@pytest.mark.parametrize("stride, fits", [(-128, True), (127, True), (-129, False), (128, False)])
def test_stride_field_ends(stride, fits):
    # the 8-bit signed stride field holds -128..127
    offset = 1100 if stride < 0 else 0
    tr = Transform((4, 1200), p=[Index(1, stride=stride, offset=offset)], a=[Index(0)], name="A")
    tiling = Tiling((8,), (4,), (0, 0, 0))
    if fits:
        assert slot_config(tr, tiling, 8)["stride"].count(stride) == 1
    else:
        with pytest.raises(CompileError, match=f"stride {stride} does not fit the 8-bit stride "
                                               f"field"):
            slot_config(tr, tiling, 8)


def test_origin_of_a_reversed_index_is_its_first_element_in_the_tile():
    # a negative stride walks the tile buffer backwards: the origin is the local address of the
    # element at index 0, from the tile's box (low corner, dense pitches)
    tr = Transform((40, 8), p=[Index(0, stride=-2, offset=30)], a=[Index(1)], name="R")
    tiling = Tiling((8,), (8,), (0, 0, 0))
    low, box = tr.box((0,), (0,), tiling.p_tile, tiling.a_tile)
    first = (30, 0)
    want = (first[0] - low[0]) * box[1] + (first[1] - low[1])
    assert want > 0
    assert slot_config(tr, tiling, 8)["origin"] == want


@pytest.mark.parametrize("make", [
    lambda: W.conv2d(1, 3, 9, 11, 4, 3, padding=1),
    lambda: W.conv_pool2d(1, 2, 10, 10, 3, 3, padding=1, pool=2),
    lambda: W.deconv2d(1, 2, 4, 5, 3, 5, stride=3, padding=1, threshold=0, high=7),
])
def test_swapped_operands_give_the_same_bits(make):
    """Exchanging the two commuting operands (the RP each is read from) changes no result bit:
    the ISA interpreter on the swapped problem against the golden model of the original."""
    from merit.compile import swapped_operands
    from merit.isa.programs import operand_ports, run
    problem = make()
    other = swapped_operands(problem)
    assert other is not None
    assert [t.name for t in other.tensors] == [t.name for t in problem.tensors]
    assert [o.tensor for o in other.operands[:2]] == [o.tensor for o in problem.operands[1::-1]]
    assert operand_ports(other)[:2] == operand_ports(problem)[:2]       # RP0 then RP1
    rng = np.random.default_rng(3)
    arrays = [rng.integers(-60, 60, size=t.shape).astype(np.int16) for t in problem.tensors]
    expected, got = problem.run(*arrays), run(other, *arrays)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for e, g in zip(expected, got, strict=True):
        assert np.asarray(e).any()
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def test_only_commuting_named_operands_swap():
    from merit.compile import swapped_operands
    assert swapped_operands(W.max_pool2d(1, 2, 8, 8, 2)) is None          # one operand
    assert swapped_operands(W.motion_estimation(16, 16, block=8, search=2)) is None  # L1 not marked
    assert swapped_operands(W.gemm(8, 8, 8)) is not None


def test_estimate_time_runs_end_only_where_a_shared_index_changes():
    # AlexNet CONV3's layout: tiles of 4 output channels x the whole 13 x 13 image, so the
    # inputs (moving along batch, rows, columns: one tile each) are the same for all 32 tiles,
    # a run of 32 that groups of 2 or 4 TAUs share (the dispatcher's count, share_choice's
    # _runs); counting the run from the last index the inputs move along gives runs of 1
    from merit.compile import estimate_time
    from merit.isa.programs import operand_ports, program_for
    problem = W.conv2d(1, 16, 15, 15, 128, 3)
    tile_p, tile_a = (1, 4, 13, 13), (16, 3, 3)
    warps = 32 * 4 * 13 * 13 // 32
    kw = dict(lanes=32, ports=operand_ports(problem), per_lane=16 * 9,
              regs=max(program_for(problem).regs, 1), bytes_per_cycle=0.25)   # DRAM-bound
    est = {taus: estimate_time(problem, tile_p, tile_a, warps, taus=taus, **kw)
           for taus in (1, 2, 4)}
    # the input's DRAM traffic: all of it on one TAU, half on pairs, a quarter on groups of 4
    assert est[1] - est[2] > 0
    assert est[1] - est[4] == pytest.approx(1.5 * (est[1] - est[2]))
