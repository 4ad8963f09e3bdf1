"""The register map: budget, placement of every configuration bit, docs in sync."""

from pathlib import Path

import pytest

from merit import regmap
from meritz import kernelcfg

DOCS = Path(__file__).resolve().parents[2] / "docs" / "registers.md"


def test_default_map_is_under_half_a_kilobyte():
    rmap = regmap.register_map()
    assert rmap.size_bytes < regmap.BUDGET_BYTES
    assert rmap.size_bytes == 4 * len(rmap.registers)


def test_every_configuration_bit_is_in_exactly_one_register_field():
    rmap = regmap.register_map()
    seen = []
    for reg in rmap.config_registers:
        end = 0
        for f in reg.fields:
            assert f.lsb == end and f.lsb + f.width <= 32, f"{reg.name}.{f.name} straddles"
            end = f.lsb + f.width
            seen += range(f.config, f.config + f.width)
    assert sorted(seen) == list(range(kernelcfg.total_bits()))


def test_offsets_are_unique_words_below_the_lut_window():
    rmap = regmap.register_map()
    offsets = [r.offset for r in rmap.registers]
    assert offsets == sorted(set(offsets)) and all(o % 4 == 0 for o in offsets)
    assert offsets[-1] < rmap.lut_base


def test_config_words_round_trip_through_kernelcfg():
    rmap = regmap.register_map()
    values = {"p_size": [1, 2, 3, 4, 5, 6], "consts": [-1, 2, -3, 4],
              "rp1": [{"lstep": [-2] * 12, "base": 0xDEADBEEE}], "out_base": [2, 4, 6]}
    bits = 0
    for offset, word in rmap.config_words(values):
        reg = next(r for r in rmap.config_registers if r.offset == offset)
        for f in reg.fields:
            bits |= ((word >> f.lsb) & ((1 << f.width) - 1)) << f.config
    assert bits == kernelcfg.pack(values)


def test_lut_words_pack_two_entries_per_word():
    rmap = regmap.register_map()
    words = dict(rmap.lut_words_for([list(range(33)), [-1] * 33]))
    assert words[rmap.lut_base] == 0 | 1 << 16
    assert words[rmap.lut_base + 4 * 16] == 32                 # last entry alone
    assert words[rmap.lut_base + 4 * 17] == 0xFFFF_FFFF        # table 1, entries 0 and 1
    assert len(words) == rmap.lut_words == 34


def test_a_configuration_too_big_for_the_window_is_refused():
    with pytest.raises(ValueError, match=r"needs \d+ bytes of registers, more than the 512"):
        regmap.register_map(instructions=64, rp0_slots=4)


def test_docs_are_generated_from_the_map():
    assert DOCS.read_text() == regmap.markdown(), "run: python -m merit.regmap"


def test_field_masks_hold_exactly_their_bits():
    rmap = regmap.register_map()
    for reg in rmap.registers:
        taken = 0
        for f in reg.fields:
            assert [b for b in range(32) if f.mask >> b & 1] == list(range(f.lsb, f.lsb + f.width))
            assert not taken & f.mask, f"{reg.name}.{f.name} overlaps another field"
            taken |= f.mask
