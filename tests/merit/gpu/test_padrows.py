"""Loop inputs read from copies with their rows padded to 4 words (``Tile.padrows``), without a
GPU: which inputs the padded specialization pads, the kernel it generates (16-byte copies where
the plain tile copies words), and where the autotuner times the form."""

import dataclasses

import pytest

from merit import workloads as W
from merit.gpu import Tile, codegen, tiling
from merit.gpu.spec import spec_of
from merit.gpu.tile import geometry

RAGGED = {"threads": (16, 8), "regs": (7, 8), "chunk": 32, "double": True, "strided": (0, 4),
          "lean": True, "vread": True, "forder": 1, "ptxas": 1}


def test_padded_layout_pads_odd_rows_under_zero_or_error_boundaries():
    spec = spec_of(W.gemm(139, 75, 211), "float32")
    spec2, moves = codegen.padded_layout(spec)
    assert moves == {0: (139, 211, 212), 1: (211, 75, 76)}
    assert [op.shape for op in spec2.inputs] == [(139, 212), (211, 76)]
    assert spec2.name.endswith(codegen.PAD_MARK) and spec2.key() != spec.key()
    assert (spec2.pshape, spec2.ashape) == (spec.pshape, spec.ashape)   # same sums
    assert [op.transform.terms for op in spec2.inputs] == [op.transform.terms
                                                           for op in spec.inputs]
    assert codegen.padded_layout(spec2) is None                         # once
    assert codegen.padded_layout(spec_of(W.gemm(128, 64, 256), "float32")) is None
    # a clamped axis would clamp to the padding: not padded
    assert codegen.padded_layout(spec_of(W.max_pool2d(2, 3, 15, 17, 3, stride=2),
                                         "float32")) is None
    assert codegen.padded_layout(spec_of(W.gemm(139, 75, 211), "float32", "tf32")) is None


def test_padded_tile_copies_in_16_byte_pieces():
    spec = spec_of(W.gemm(139, 75, 211), "float32")
    t = tiling.complete(spec, Tile(**RAGGED))
    p, r = tiling.pad_variants(spec, [(1.0, t)])
    assert p == tiling.complete(spec, p) and p.padrows and p.label() == t.label() + "_pr"
    assert r == dataclasses.replace(p, ragged=1)   # the same, reading the unpadded rows
    assert dataclasses.replace(p, padrows=False, pads=t.pads, vector=t.vector) == t
    spec2, moves = codegen.padded_layout(spec)
    assert [geometry(spec, t, k).vector for k in moves] == [False, False]
    assert [geometry(spec2, p, k).vector for k in moves] == [True, True]
    name, code, nb, nt, smem = codegen.source(spec, p)
    plain = codegen.source(spec, t)
    assert name != plain[0] and (nb, nt) == plain[2:4]
    assert code.count("merit_cp_async16(") > plain[1].count("merit_cp_async16(")
    assert "212" in code and "212" not in plain[1]


def test_autotuner_times_the_form_for_the_fastest_tile_only_where_it_applies():
    spec = spec_of(W.gemm(139, 75, 211), "float32")
    t = tiling.complete(spec, Tile(**RAGGED))
    other = tiling.complete(spec, Tile((8, 8), (4, 4), 16))
    assert tiling.pad_variants(spec, [(2.0, other), (1.0, t)])[0].label() == t.label() + "_pr"
    p, r = tiling.pad_variants(spec, [(1.0, t)])
    # the fastest is padded: its ragged form alone, once
    assert tiling.pad_variants(spec, [(1.0, t), (0.5, p)]) == [r]
    assert tiling.pad_variants(spec, [(1.0, t), (0.5, p), (0.6, r)]) == []
    assert tiling.pad_variants(spec, [(1.0, t), (0.5, r)]) == []
    assert not any(x.padrows for x in tiling.rank(spec, count=12))  # not in the list
    aligned = spec_of(W.gemm(128, 64, 256), "float32")
    t2 = tiling.complete(aligned, Tile((8, 8), (4, 4), 16))
    assert tiling.pad_variants(aligned, [(1.0, t2)]) == []
    assert tiling.row_variants(spec, [(1.0, p)]) == []              # no word copies left


def test_pad_copy_launch_counts_16_byte_pieces():
    """The padded copies' launch (``runtime.pad_rows``): one 16-byte piece of a padded row a
    thread (the padding written too), blocks enough for every piece up to a cap (the rest by the
    kernel's grid-stride loop); refused where the rows are not 4-word pieces or the pieces
    overflow the kernel's 32-bit index (no GPU needed)."""
    from merit.gpu import runtime

    assert runtime.pad_grid(2387, 2841, 2844) == (2387 * 711, runtime.PAD_BLOCKS)
    assert runtime.pad_grid(7, 9, 12) == (21, 1)
    assert runtime.pad_grid(1000, 1023, 1024) == (256000, 1000)
    for bad in ((4, 9, 10), (4, 9, 8), (4, 0, 4), (2**30, 17, 20)):
        with pytest.raises(ValueError):
            runtime.pad_grid(*bad)


def test_pad_copies_two_to_a_launch():
    """The padded copies of one launch (``runtime.pad_rows_all``): two to a launch, in order, an
    odd last one alone (no GPU needed)."""
    from merit.gpu import runtime

    assert runtime.pad_launches([]) == []
    assert runtime.pad_launches([(3, 5, 8)]) == [[0]]
    assert runtime.pad_launches([(3, 5, 8), (7, 9, 12)]) == [[0, 1]]
    assert runtime.pad_launches([(3, 5, 8)] * 3) == [[0, 1], [2]]
