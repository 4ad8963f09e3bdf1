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
