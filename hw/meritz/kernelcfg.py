"""The kernel configuration of a TAU: one Python description, every use generated from it.

:data:`FIELDS` describes each configuration field once (name, element shape, count, meaning).
:func:`layout` turns it into the Amaranth ``data.StructLayout`` of the TAU's ``config`` input,
:func:`pack` turns a dict of values (as produced by ``merit.compile``) into the bits of that
input, :func:`table` lists the fields with their widths (``python -m meritz.kernelcfg``), and the
register map of issue 7 walks :func:`flatten` to place them into 32-bit registers.

Sizes are those of SPEC §5: 6 parallel and 6 accumulation indices, tensors of 4 axes, up to
64 lanes; the slot counts per RP, the outputs and the program length are parameters.
The whole configuration must stay under :data:`BUDGET_BITS` (0.5 KB, SPEC §5).
"""

from dataclasses import dataclass

from amaranth import signed, unsigned
from amaranth.lib import data

__all__ = ["P_INDICES", "A_INDICES", "INDICES", "AXES", "LANE_BITS", "BUDGET_BITS",
           "Field", "FIELDS", "layout", "slot_layout", "pack", "flatten", "table", "total_bits",
           "check_params"]

P_INDICES = 6           # parallel indices
A_INDICES = 6           # accumulation indices
INDICES = P_INDICES + A_INDICES
AXES = 4                # axes of a source tensor (outermost first; unused outer axes have size 1)
LANE_BITS = 6           # log2 of the largest lane count (64)
BUDGET_BITS = 4096      # SPEC §5: under 0.5 KB of registers


@dataclass(frozen=True)
class Field:
    """One configuration field: ``count`` elements of ``shape`` (``count`` None = a scalar)."""
    name: str
    shape: object
    count: object
    doc: str


def _slot_fields():
    return (
        Field("enable", unsigned(1), None, "the slot is used"),
        Field("base", unsigned(32), None, "DRAM byte address of element 0 of the tensor"),
        Field("axis", unsigned(2), INDICES, "tensor axis d_j moved by index j (p then a)"),
        Field("stride", signed(8), INDICES, "s_j in tensor elements; 0 = index does not move"),
        Field("lstep", signed(16), INDICES, "tile-address step of index j: s_j * lpitch[d_j]"),
        Field("offset", signed(16), AXES, "sum of the offsets o_j moving along each axis"),
        Field("extent", unsigned(16), AXES, "tensor extent per axis"),
        Field("box", unsigned(16), AXES, "footprint side per axis (Eq. 9)"),
        Field("clamp", unsigned(1), AXES, "boundary per axis: 1 = replicate edge, 0 = zero"),
        Field("lpitch", unsigned(16), AXES - 1, "tile-address pitch of axes 0..2 (axis 3: 1)"),
        Field("dpitch", unsigned(32), AXES - 1, "DRAM element pitch of axes 0..2 (axis 3: 1)"),
        Field("origin", unsigned(16), None, "tile address of the tile's first element"),
        Field("rows", unsigned(16), None, "SRAM rows per tile (padding included)"),
        Field("xor", unsigned(4), LANE_BITS, "bank function: address bit XORed into bank bit j"),
        Field("rotate", unsigned(3), None, "bank function: rotation"),
    )


def _fields(rp0_slots, rp1_slots, outputs, instructions):
    pc = unsigned(max(instructions, 1).bit_length())
    return (
        Field("p_size", unsigned(16), P_INDICES, "extent of each parallel index"),
        Field("a_size", unsigned(16), A_INDICES, "extent of each accumulation index"),
        Field("p_tile", unsigned(16), P_INDICES, "parallel tile size per index"),
        Field("a_tile", unsigned(16), A_INDICES, "accumulation tile size per index"),
        Field("lane_index", unsigned(3), LANE_BITS, "parallel index moved by each lane bit"),
        Field("program", unsigned(32), instructions, "instruction words (merit.isa)"),
        Field("begs", pc, A_INDICES + 1, "range table: first address by innermost-first count"),
        Field("ends", pc, A_INDICES + 1, "range table: end address by innermost-last count"),
        Field("consts", signed(32), 4, "program constants k0..k3"),
        Field("regs", unsigned(4), None, "registers saved per warp (Program.regs)"),
        Field("rp0", _struct(_slot_fields()), rp0_slots, "input slots of RP0"),
        Field("rp1", _struct(_slot_fields()), rp1_slots, "input slots of RP1"),
        Field("out_base", unsigned(32), outputs, "DRAM byte address of each output tensor"),
        Field("out_pitch", unsigned(32), P_INDICES, "DRAM element pitch of each parallel index"),
    )


def _member(field):
    return field.shape if field.count is None else data.ArrayLayout(field.shape, field.count)


def _struct(fields):
    return data.StructLayout({f.name: _member(f) for f in fields})


def check_params(*, rp0_slots, rp1_slots, outputs, instructions):
    for name, value, low, high in (("rp0_slots", rp0_slots, 1, 4), ("rp1_slots", rp1_slots, 1, 4),
                                   ("outputs", outputs, 1, 4),
                                   ("instructions", instructions, 1, 64)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an integer, not {value!r}")
        if not low <= value <= high:
            raise ValueError(f"{name} must be between {low} and {high}, not {value}")


#: The default description (RP0: 2 slots, RP1: 1 slot, 3 outputs, 16 instructions).
FIELDS = _fields(2, 1, 3, 16)


def layout(*, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
    """The ``data.StructLayout`` of the configuration input."""
    check_params(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                 instructions=instructions)
    return _struct(_fields(rp0_slots, rp1_slots, outputs, instructions))


def slot_layout():
    """The layout of one input slot (a member of ``rp0`` / ``rp1``)."""
    return _struct(_slot_fields())


def pack(values, lay=None):
    """The integer holding ``values`` (nested dicts / lists; missing fields are 0) in ``lay``."""
    lay = layout() if lay is None else lay
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
        size = data.Layout.cast(f.shape).size if isinstance(f.shape, data.Layout) else f.shape.width
        count = 1 if f.count is None else f.count
        lines.append(f"{f.name:10} {size:4} x {count:2} = {size * count:5}  {f.doc}")
    total = total_bits()
    lines.append(f"total {total} bits = {total // 8} bytes (budget {BUDGET_BITS} bits)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    print()
    print(table(_slot_fields()))
