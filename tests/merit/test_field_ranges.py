"""Every value that reaches a configuration field is checked against the field's range where it
is made (compiler, register map, LUT window, meritz.kernelcfg.pack): refused, never truncated."""

import re

import pytest

from merit import kernelcfg
from merit import workloads as w
from merit.compile import CompileError, compile_problem
from merit.mapping.analysis import default_grouping
from merit.mapping.bank import BankFunction, TileLayout
from merit.mapping.search import _best_layout
from merit.regmap import register_map


@pytest.mark.parametrize("width, signed, lo, hi", [
    (1, False, 0, 1), (16, False, 0, 65535), (8, True, -128, 127), (32, True, -2**31, 2**31 - 1),
])
def test_field_range(width, signed, lo, hi):
    assert kernelcfg.field_range(width, signed) == (lo, hi)


def test_every_scalar_field_has_its_range_checked_at_both_ends():
    flat = list(kernelcfg.flatten())
    assert len(flat) == 294
    for name, _, width, signed in flat[::7]:
        lo, hi = kernelcfg.field_range(width, signed)
        path = name.replace("]", "").replace(".", "[").split("[")
        for v, ok in ((lo, True), (hi, True), (lo - 1, False), (hi + 1, False)):
            values = cur = {}
            for i, part in enumerate(path):
                last = i == len(path) - 1
                nxt = v if last else ({} if not path[i + 1].isdigit() else [])
                if part.isdigit():
                    cur.extend([{} if isinstance(nxt, dict) else 0] * (int(part) + 1 - len(cur)))
                    cur[int(part)] = nxt
                else:
                    cur[part] = nxt
                cur = nxt
            if ok:
                kernelcfg.check_config(values)
            else:
                pattern = re.escape(f"{name} = {v} does not fit its {width}-bit")
                with pytest.raises(ValueError, match=pattern):
                    kernelcfg.check_config(values)


def test_config_words_equal_the_packed_bits():
    from meritz import kernelcfg as zcfg
    k = compile_problem(w.conv2d(1, 4, 8, 8, 4, 3, residual=True), lanes=8)
    rmap = register_map()
    bits = zcfg.pack(k.config, zcfg.layout())
    assert rmap.config_words(k.config) == [(r.offset, rmap.word_from_config(r, bits))
                                           for r in rmap.config_registers]


def test_pack_refuses_what_config_words_refuses():
    from meritz import kernelcfg as zcfg
    with pytest.raises(ValueError, match=r"rp1\[0\]\.lstep\[11\] = 40000 does not fit its "
                                         r"16-bit signed field \(-32768..32767\)"):
        zcfg.pack({"rp1": [{"lstep": [0] * 11 + [40000]}]})
    assert zcfg.pack({"rp1": [{"lstep": [0] * 11 + [-32768]}]}) != 0


def test_a_tile_one_word_over_the_sram_is_refused():
    # the search must refuse a layout of budget + 1 words, and take one of exactly budget words
    p = w.gemm(8, 8, 8)
    tr = p.operands[0].transform
    grouping = default_grouping((8, 8), 8)
    words = TileLayout(tr.footprint((8, 8), (8,)), BankFunction(8)).words
    report, why = _best_layout(tr, (8, 8), (8,), grouping, words - 1, 0, {})
    assert report is None
    assert f"needs {words} words with pitch" in why and f"the SRAM has {words - 1}" in why
    report, _ = _best_layout(tr, (8, 8), (8,), grouping, words, 0, {})
    assert report is not None and report.layout.words == words


def test_max_outputs_above_the_collector_capacity_is_refused():
    # 8 lanes, 5120 bytes of CP SRAM = 160 rows; Dot keeps 1 register: 1280 partial results
    p = w.gemm(64, 64, 8)
    assert compile_problem(p, lanes=8, max_outputs=1280).tiling is not None
    with pytest.raises(CompileError, match=r"max_outputs must be between the 8 lanes and the "
                                           r"1280 partial results the CP holds \(160 rows // 1 "
                                           r"register\(s\) x 8 lanes\), not 1288"):
        compile_problem(p, lanes=8, max_outputs=1288)
    with pytest.raises(CompileError, match=r"the 640 partial results the CP holds \(80 rows"):
        compile_problem(p, lanes=8, cp_bytes=2560, max_outputs=648)


def test_compiled_tiles_respect_the_collector_capacity():
    # a small CP: 8 lanes x 4 rows = 32 partial results; the tile must not exceed them
    k = compile_problem(w.gemm(64, 64, 8), lanes=8, cp_bytes=128)
    assert k.tiling.p_tile[0] * k.tiling.p_tile[1] <= 32


@pytest.mark.parametrize("values, where", [
    ({"rp0": [{"enable": 2}]}, "rp0[0].enable"),
    ({"rp1": [{"enable": 3}]}, "rp1[0].enable"),
    ({"rp0": [{}, {"clamp": [0, 2]}]}, "rp0[1].clamp[1]"),
])
def test_flags_are_single_bits(values, where):
    # a slot is used or not, an axis clamps or not: 2 is no flag value
    with pytest.raises(ValueError, match=re.escape(
            f"RegisterMap.config_words: {where} = {max(_leaves(values))} does not fit its "
            f"1-bit unsigned field (0..1)")):
        register_map().config_words(values)


def _leaves(value):
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]
