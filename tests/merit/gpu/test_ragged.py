"""The padded-row form read from the unpadded rows inside the kernel (``Tile.ragged``), without
a GPU: which inputs it reads so, the kernel it generates (no 16-byte ``cp.async`` copies of those
inputs; their rows' own lengths; the padded form's shared layout and geometry), the tile
checks' refusals, and the candidate the autotuner times.  Its sums are checked on the device
(``test_ragged_device.py``)."""

import dataclasses
import re

import pytest

from merit import workloads as W
from merit.gpu import Tile, codegen, tiling
from merit.gpu.spec import spec_of

TILE = {"threads": (16, 8), "regs": (7, 8), "chunk": 32, "double": True, "strided": (0, 4),
        "lean": True, "vread": True, "forder": 1, "ptxas": 1, "padrows": True}


def _spec():
    return spec_of(W.gemm(139, 75, 211), "float32")


def test_ragged_inputs_are_the_padded_ones_with_their_own_rows():
    spec = _spec()
    t = tiling.check_tile(spec, dict(TILE, ragged=1))
    rag = codegen.ragged_inputs(spec, t)
    assert sorted(rag) == [0, 1]
    assert [rag[k].source_shape for k in rag] == [(139, 211), (211, 75)]
    assert codegen.ragged_inputs(spec, dataclasses.replace(t, ragged=0)) == {}
    with pytest.raises(ValueError, match="ragged rows"):   # nothing to read so
        codegen.ragged_inputs(spec_of(W.gemm(128, 64, 256), "float32"), t)
    with pytest.raises(ValueError, match="ragged rows"):   # a padded problem given
        codegen.ragged_inputs(codegen.padded_layout(spec)[0], t)


@pytest.mark.parametrize("form", [1, 2])
def test_the_kernel_reads_the_rows_as_they_are(form):
    spec = _spec()
    p = tiling.check_tile(spec, TILE)
    r = tiling.check_tile(spec, dict(TILE, ragged=form))
    assert r.label() == p.label() + f"_rg{form}"
    assert dataclasses.replace(r, ragged=0) == p       # completed alike: the same layout
    name, code, nb, nt, smem = codegen.source(spec, r)
    pname, pcode, *pgeo = codegen.source(spec, p)
    assert name != pname and [nb, nt, smem] == pgeo
    # the padded form copies both operands' pieces with cp.async from rows of 212 and 76 words
    assert re.search(r"\* 212\b", pcode) and re.search(r"\* 76\b", pcode)
    assert pcode.count("merit_cp_async16(") > 1
    # the ragged form: rows of 211 and 75 words, bounded by their own lengths, 16-byte stores
    assert re.search(r"\* 211\b", code) and re.search(r"\* 75\b", code)
    assert not re.search(r"\* 212\b", code) and not re.search(r"\* 76\b", code)
    assert "< 211u" in code and "< 75u" in code
    assert code.count("merit_cp_async16(") == 1          # the prelude's definition only
    assert "typedef float4 T4;" in code and "reinterpret_cast<T4*>" in code
    # the kernel's steps are the padded form's: the same code after the copies
    assert code.split("merit_cp_commit();")[-1].count("s[") >= \
        pcode.split("merit_cp_commit();")[-1].count("s[")
    if form == 2:   # loads into registers, stored after the tile's steps
        assert "T4 rl0[" in code and "T4 rl1[" in code and "rd0[i] >> 6" in code
    else:
        assert "rl0[" not in code


def test_pairs_switch_reads_aligned_pieces():
    spec = _spec()
    r = tiling.check_tile(spec, dict(TILE, ragged=1))
    old = codegen.RAGGED_PAIRS
    try:
        codegen.RAGGED_PAIRS = True
        code = codegen.source(spec, r)[1]
        codegen.RAGGED_PAIRS = False
        words = codegen.source(spec, r)[1]
    finally:
        codegen.RAGGED_PAIRS = old
    assert "merit_row4(wa, wb, s)" in code and "__ldg(pa + 1)" in code
    assert "merit_row4(wa" not in words and words.count("__ldg(src + xi + 3)") == 4


def test_check_tile_refuses_a_ragged_tile_without_its_padded_form():
    spec = _spec()
    with pytest.raises(ValueError, match="padrows"):
        tiling.check_tile(spec, dict(TILE, padrows=False, ragged=1))
    for bad in (3, True, -1):
        with pytest.raises(ValueError, match="ragged"):
            tiling.check_tile(spec, dict(TILE, ragged=bad))
    with pytest.raises(ValueError, match="no loop input to pad"):   # nothing ragged
        tiling.check_tile(spec_of(W.gemm(128, 64, 256), "float32"),
                          dict(TILE, ragged=1))


def test_the_staged_form_holds_a_bounded_number_of_pieces():
    spec = _spec()
    r = tiling.check_tile(spec, dict(TILE, ragged=2))
    stage = codegen.ragged_staged(codegen.pad_spec(spec, r), r, codegen.ragged_inputs(spec, r))
    assert set(stage) == {0, 1}
    for per, total in stage.values():
        assert per == -(-total // r.nthreads) and 1 <= per <= codegen.RAGGED_STAGE
    # few threads for large footprints: too many pieces a thread, refused
    with pytest.raises(ValueError, match="registers"):
        tiling.check_tile(spec, dict(TILE, threads=(4, 4), regs=(8, 8), ragged=2))
    # the form 1 holds nothing
    r1 = dataclasses.replace(r, ragged=1)
    assert codegen.ragged_staged(codegen.pad_spec(spec, r1), r1,
                                 codegen.ragged_inputs(spec, r1)) == {}


def test_the_autotuner_times_it_beside_the_padded_form_only():
    spec = _spec()
    t = tiling.complete(spec, Tile(**dict(TILE, padrows=False)))
    p, r = tiling.pad_variants(spec, [(1.0, t)])
    assert r == dataclasses.replace(p, ragged=tiling.RAGGED_TUNED) and r.ragged == 1
    assert not any(x.ragged for x in tiling.rank(spec, count=12))
    assert tiling.pad_variants(spec, [(1.0, t), (0.5, r)]) == []    # the fastest reads so
    conv = spec_of(W.conv2d(2, 9, 13, 41, 11, 7, padding=1), "float32")
    assert [x.ragged for x in tiling.pad_variants(
        conv, [(1.0, tiling.rank(conv, count=1)[0])])] in ([], [0, 1])
