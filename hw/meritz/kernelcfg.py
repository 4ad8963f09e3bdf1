"""The kernel configuration of a TAU as Amaranth layouts, built from :mod:`merit.kernelcfg`.

:mod:`merit.kernelcfg` describes each configuration field once (name, bits, count, meaning, range).
:func:`layout` turns it into the Amaranth ``data.StructLayout`` of the TAU's ``config`` input,
:func:`pack` checks a dict of values (as produced by ``merit.compile``) against the field ranges
and turns it into the bits of that input, :func:`lut_layout` is the ISA's lookup tables that
travel with the configuration (the LUT window), :func:`table` lists the fields with their widths
(``python -m meritz.kernelcfg``).
"""

from amaranth import signed, unsigned
from amaranth.lib import data

from merit import kernelcfg as _cfg
from merit.isa import LUT_ENTRIES, N_LUTS
from merit.kernelcfg import (
    A_INDICES,
    AXES,
    BUDGET_BITS,
    FIELDS,
    INDICES,
    LANE_BITS,
    P_INDICES,
    Bits,
    Field,
    check_params,
)

__all__ = ["P_INDICES", "A_INDICES", "INDICES", "AXES", "LANE_BITS", "BUDGET_BITS",
           "Field", "FIELDS", "layout", "slot_layout", "pack", "flatten", "table", "total_bits",
           "check_params", "lut_layout"]


def _shape(shape):
    if isinstance(shape, Bits):
        return signed(shape.width) if shape.signed else unsigned(shape.width)
    return _struct(shape)


def _member(field):
    shape = _shape(field.shape)
    return shape if field.count is None else data.ArrayLayout(shape, field.count)


def _struct(fields):
    return data.StructLayout({f.name: _member(f) for f in fields})


def lut_layout():
    """The ISA's lookup tables (``merit.isa``: N_LUTS x LUT_ENTRIES int16), the registers' LUT
    window, a TAU's ``luts`` input and the SIMD array's ``config.luts``."""
    return data.ArrayLayout(data.ArrayLayout(signed(16), LUT_ENTRIES), N_LUTS)


def layout(*, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
    """The ``data.StructLayout`` of the configuration input."""
    return _struct(_cfg.fields(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                               instructions=instructions))


def slot_layout():
    """The layout of one input slot (a member of ``rp0`` / ``rp1``)."""
    return _struct(_cfg.slot_fields())


def _fields_of(lay):
    """The :mod:`merit.kernelcfg` fields that ``lay`` was built from."""
    if isinstance(lay, data.StructLayout):
        out = []
        for name, f in lay:
            shape, count = f.shape, None
            if isinstance(shape, data.ArrayLayout):
                shape, count = shape.elem_shape, shape.length
            if isinstance(shape, data.StructLayout):
                out.append(Field(name, _fields_of(shape), count, ""))
            else:
                shape = data.Layout.cast(shape) if isinstance(shape, data.Layout) else shape
                out.append(Field(name, Bits(shape.width, shape.signed), count, ""))
        return tuple(out)
    raise TypeError(f"expected a configuration StructLayout, not {lay!r}")


def pack(values, lay=None):
    """The integer holding ``values`` (nested dicts / lists; missing fields are 0) in ``lay``.

    Every value is checked against its field first (:func:`merit.kernelcfg.check_config`): a
    value that does not fit raises ValueError naming the field, never packed truncated."""
    lay = layout() if lay is None else lay
    _cfg.check_config(values, _fields_of(lay))
    return lay.const(values).as_bits()


def flatten(lay=None, prefix=""):
    """Yield ``(name, offset, width, signed)`` of every scalar field of ``lay``, in bit order."""
    lay = layout() if lay is None else lay
    if isinstance(lay, data.StructLayout):
        for name, f in lay:
            for sub, off, width, sgn in flatten(f.shape, f"{prefix}.{name}" if prefix else name):
                yield sub, off + f.offset, width, sgn
    elif isinstance(lay, data.ArrayLayout):
        elem = lay.elem_shape
        size = data.Layout.cast(elem).size if isinstance(elem, data.Layout) else elem.width
        for i in range(lay.length):
            for sub, off, width, sgn in flatten(elem, f"{prefix}[{i}]"):
                yield sub, off + i * size, width, sgn
    else:
        yield prefix, 0, lay.width, lay.signed


def total_bits(lay=None):
    lay = layout() if lay is None else lay
    return data.Layout.cast(lay).size


def table(fields=FIELDS):
    """Lines ``name  shape x count = bits  meaning`` and the total, for the docs."""
    lines = []
    for f in fields:
        size = _cfg.total_bits((Field(f.name, f.shape, None, ""),))
        count = 1 if f.count is None else f.count
        lines.append(f"{f.name:10} {size:4} x {count:2} = {size * count:5}  {f.doc}")
    total = total_bits()
    lines.append(f"total {total} bits = {total // 8} bytes (budget {BUDGET_BITS} bits)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    print()
    print(table(_cfg.slot_fields()))
