"""The kernel configuration description: budget, packing, parameter checks."""

import pytest

from meritz import kernelcfg


def test_default_configuration_fits_the_register_budget():
    assert kernelcfg.total_bits() < kernelcfg.BUDGET_BITS


def test_flatten_covers_every_bit_once():
    fields = list(kernelcfg.flatten())
    covered = sorted((off, off + width) for _, off, width, _ in fields)
    assert covered[0][0] == 0
    for (_, end), (start, _) in zip(covered, covered[1:], strict=False):
        assert start == end
    assert covered[-1][1] == kernelcfg.total_bits()
    names = {name for name, *_ in fields}
    assert "rp0[1].lstep[11]" in names and "program[15]" in names


def test_pack_places_signed_fields():
    lay = kernelcfg.layout()
    bits = kernelcfg.pack({"rp1": [{"lstep": [0] * 11 + [-2]}]}, lay)
    offsets = {name: (off, width) for name, off, width, _ in kernelcfg.flatten(lay)}
    off, width = offsets["rp1[0].lstep[11]"]
    assert (bits >> off) & ((1 << width) - 1) == (1 << width) - 2


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="outputs must be between 1 and 4, not 5"):
        kernelcfg.layout(outputs=5)
    with pytest.raises(TypeError, match="instructions must be an integer, not 2.0"):
        kernelcfg.layout(instructions=2.0)


def test_default_layout_is_the_register_maps():
    # the processor's configuration input and its default register map describe the same bits
    from merit import regmap
    rmap = regmap.register_map()
    assert kernelcfg.total_bits() == rmap.config_bits
    fields = {f.name for reg in rmap.config_registers for f in reg.fields}
    assert {name for name, *_ in kernelcfg.flatten()} == fields


def test_lut_entries_are_int16():
    # N_LUTS tables of LUT_ENTRIES int16 entries (merit.isa), one after the other
    from amaranth.lib import data

    from merit.isa import LUT_ENTRIES, N_LUTS
    lay = kernelcfg.lut_layout()
    assert data.Layout.cast(lay).size == N_LUTS * LUT_ENTRIES * 16
    bits = lay.const([[-32768] + [0] * (LUT_ENTRIES - 2) + [32767]] * N_LUTS).as_bits()
    assert bits & 0xFFFF == 0x8000 and (bits >> (16 * (LUT_ENTRIES - 1))) & 0xFFFF == 0x7FFF


def test_the_field_table_adds_up(capsys):
    # python -m meritz.kernelcfg prints the field table of the docs: every line's
    # "size x count = bits" holds, the bits add up to the total, and the total is in bytes too
    import runpy
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # already imported: runpy warns
        runpy.run_module("meritz.kernelcfg", run_name="__main__")
    top = capsys.readouterr().out.split("\n\n")[0].splitlines()
    total = kernelcfg.total_bits()
    assert top[-1].startswith(f"total {total} bits = {total // 8} bytes")
    bits = 0
    for line in top[:-1]:
        size, count, product = (int(x) for x in line.split()[1:6:2])
        assert size * count == product
        bits += product
    assert bits == total
    names = [line.split()[0] for line in top[:-1]]
    assert names == [f.name for f in kernelcfg.FIELDS]
