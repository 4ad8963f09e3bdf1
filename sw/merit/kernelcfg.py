"""The kernel configuration of a TAU: the one description of every field and of its range.

:func:`fields` describes each configuration field once (name, bits, count, meaning), without
Amaranth: ``meritz.kernelcfg`` builds the TAU's ``config`` layout from it, :mod:`merit.regmap`
places its scalars into 32-bit registers, and :func:`check_config` refuses a value that does not
fit its field (the compiler, ``RegisterMap.config_words`` and ``meritz.kernelcfg.pack`` call it),
naming the field, the value and the range. Nothing is ever truncated into a field.

Sizes are those of ``docs/architecture.md`` §4: 6 parallel and 6 accumulation indices, tensors of
4 axes, up to 64 lanes; the slot counts per RP, the outputs and the program length are parameters.
The whole configuration must stay under :data:`BUDGET_BITS` (0.5 KB).
"""

from collections import namedtuple
from dataclasses import dataclass

from merit.arch import MAX_INSTRUCTIONS, MAX_OUTPUTS, MAX_SLOTS
from merit.checks import check_range

__all__ = ["P_INDICES", "A_INDICES", "INDICES", "AXES", "LANE_BITS", "BUDGET_BITS", "Bits",
           "Field", "FIELDS", "fields", "slot_fields", "check_params", "flatten", "field_range",
           "check_config", "total_bits", "MAX_LANES", "check_lanes"]

P_INDICES = 6           # parallel indices
A_INDICES = 6           # accumulation indices
INDICES = P_INDICES + A_INDICES
AXES = 4                # axes of a source tensor (outermost first; unused outer axes have size 1)
LANE_BITS = 6           # log2 of the largest lane count (64)
BUDGET_BITS = 4096      # §V of the MERIT paper: under 0.5 KB of registers
MAX_LANES = 1 << LANE_BITS

#: A scalar field's bits: ``width`` bits, two's complement when ``signed``.
Bits = namedtuple("Bits", "width signed")


def _u(width):
    return Bits(width, False)


def _s(width):
    return Bits(width, True)


@dataclass(frozen=True)
class Field:
    """One configuration field: ``count`` elements (``None``: a scalar) of ``shape``, which is
    :class:`Bits` or a tuple of Fields (a struct, e.g. an input slot)."""
    name: str
    shape: object
    count: object
    doc: str


def slot_fields():
    """The fields of one input slot (a member of ``rp0`` / ``rp1``)."""
    return (
        Field("enable", _u(1), None, "the slot is used"),
        Field("base", _u(32), None, "DRAM byte address of element 0 of the tensor"),
        Field("axis", _u(2), INDICES, "tensor axis d_j moved by index j (p then a)"),
        Field("stride", _s(8), INDICES, "s_j in tensor elements; 0 = index does not move"),
        Field("lstep", _s(16), INDICES, "tile-address step of index j: s_j * lpitch[d_j]"),
        Field("offset", _s(16), AXES, "sum of the offsets o_j moving along each axis"),
        Field("extent", _u(16), AXES, "tensor extent per axis"),
        Field("box", _u(16), AXES, "footprint side per axis (Eq. 9)"),
        Field("clamp", _u(1), AXES, "boundary per axis: 1 = replicate edge, 0 = zero"),
        Field("lpitch", _u(16), AXES - 1, "tile-address pitch of axes 0..2 (axis 3: 1)"),
        Field("dpitch", _u(32), AXES - 1, "DRAM element pitch of axes 0..2 (axis 3: 1)"),
        Field("origin", _u(16), None, "tile address of the tile's first element"),
        Field("rows", _u(16), None, "SRAM rows per tile (padding included)"),
        Field("xor", _u(4), LANE_BITS, "bank function: address bit XORed into bank bit j"),
        Field("rotate", _u(3), None, "bank function: rotation"),
    )


def check_lanes(lanes):
    """``lanes``: a power of two from 2 to :data:`MAX_LANES` (the lane fields' range)."""
    if not isinstance(lanes, int) or isinstance(lanes, bool):
        raise TypeError(f"lanes must be an integer, not {lanes!r}")
    if lanes < 2 or lanes & (lanes - 1) or lanes > MAX_LANES:
        raise ValueError(f"lanes must be a power of two from 2 to {MAX_LANES} (the lane fields "
                         f"have {LANE_BITS} bits), not {lanes}")
    return lanes


def check_params(*, rp0_slots, rp1_slots, outputs, instructions):
    """The layout parameters: slots per RP 1..4, outputs 1..4, instructions 1..64."""
    check_range("rp0_slots", rp0_slots, 1, MAX_SLOTS)
    check_range("rp1_slots", rp1_slots, 1, MAX_SLOTS)
    check_range("outputs", outputs, 1, MAX_OUTPUTS)
    check_range("instructions", instructions, 1, MAX_INSTRUCTIONS)


def fields(*, rp0_slots=2, rp1_slots=1, outputs=3, instructions=16):
    """The fields of the configuration, in bit order (lowest first)."""
    check_params(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                 instructions=instructions)
    pc = _u(max(instructions, 1).bit_length())
    slot = slot_fields()
    return (
        Field("p_size", _u(16), P_INDICES, "extent of each parallel index"),
        Field("a_size", _u(16), A_INDICES, "extent of each accumulation index"),
        Field("p_tile", _u(16), P_INDICES, "parallel tile size per index"),
        Field("a_tile", _u(16), A_INDICES, "accumulation tile size per index"),
        Field("lane_index", _u(3), LANE_BITS, "parallel index moved by each lane bit"),
        Field("program", _u(32), instructions, "instruction words (merit.isa)"),
        Field("begs", pc, A_INDICES + 1, "range table: first address by innermost-first count"),
        Field("ends", pc, A_INDICES + 1, "range table: end address by innermost-last count"),
        Field("consts", _s(32), 4, "program constants k0..k3"),
        Field("regs", _u(4), None, "registers saved per warp (Program.regs)"),
        Field("rp0", slot, rp0_slots, "input slots of RP0"),
        Field("rp1", slot, rp1_slots, "input slots of RP1"),
        Field("out_base", _u(32), outputs, "DRAM byte address of each output tensor"),
        Field("out_pitch", _u(32), P_INDICES, "DRAM element pitch of each parallel index"),
        Field("share_slot", _u(2), None, "the input slot shared by a TAU group (RP0 first)"),
        Field("share_log2", _u(3), None, "log2 of the TAUs sharing one fetch (0 = none)"),
        Field("share2_slot", _u(2), None, "the second shared slot (2-D sharing, other RP)"),
        Field("share2_log2", _u(3), None, "log2 of its group, on the TAU-index bits above "
                                          "share_log2's (0 = 1-D sharing)"),
        Field("xstride", _u(3), A_INDICES, "register stride of each accumulation index for "
                                           "the indexed register rN+x (Program.xstride)"),
        Field("share_order", _u(1), None, "1-D groups: 1 = each run's whole tiles before its "
                                          "edge tiles, 0 = the grid's order"),
        Field("share_block", _u(1), None, "1 = share_slot's groups dealt on the block walk "
                                          "(one shared slot, share2_log2 0)"),
        Field("hold", _u(2), None, "footprint reuse, bit r: RP r's one enabled slot keeps its "
                                   "tile while the TAU's next job has the same footprint"),
    )


#: The default description (RP0: 2 slots, RP1: 1 slot, 3 outputs, 16 instructions).
FIELDS = fields()


def _size(shape):
    return shape.width if isinstance(shape, Bits) else sum(
        _size(f.shape) * (1 if f.count is None else f.count) for f in shape)


def total_bits(fields_=FIELDS):
    """Bits of a configuration of ``fields_``."""
    return _size(tuple(fields_))


def flatten(fields_=FIELDS, prefix=""):
    """Yield ``(name, offset, width, signed)`` of every scalar field, in bit order; names as
    ``p_size[0]``, ``rp0[1].base``."""
    offset = 0
    for f in fields_:
        name = f"{prefix}.{f.name}" if prefix else f.name
        size = _size(f.shape)
        for i in range(1 if f.count is None else f.count):
            sub = name if f.count is None else f"{name}[{i}]"
            if isinstance(f.shape, Bits):
                yield sub, offset, f.shape.width, f.shape.signed
            else:
                for n, off, width, sgn in flatten(f.shape, sub):
                    yield n, offset + off, width, sgn
            offset += size


def field_range(width, signed):
    """``(lowest, highest)`` value of a field of ``width`` bits."""
    return (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)


def _check(value, shape, count, name, where):
    if count is not None:
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
            raise TypeError(f"{where}: configuration field {name} holds {count} elements; give a "
                            f"list, not {value!r}")
        if len(value) > count:
            raise ValueError(f"{where}: configuration field {name} holds {count} elements, got "
                             f"{len(value)}")
        for i, v in enumerate(value):
            _check(v, shape, None, f"{name}[{i}]", where)
        return
    if isinstance(shape, Bits):
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"{where}: configuration field {name} must be an integer, not "
                            f"{value!r}")
        lo, hi = field_range(*shape)
        if not lo <= int(value) <= hi:
            raise ValueError(f"{where}: {name} = {int(value)} does not fit its "
                             f"{shape.width}-bit {'signed' if shape.signed else 'unsigned'} "
                             f"field ({lo}..{hi})")
        return
    if not isinstance(value, dict):
        raise TypeError(f"{where}: configuration field {name} is a struct; give a dict, not "
                        f"{value!r}")
    _check_dict(value, shape, f"{name}.", where)


def _check_dict(values, fields_, prefix, where):
    by_name = {f.name: f for f in fields_}
    for key, value in values.items():
        if key not in by_name:
            raise ValueError(f"{where}: no configuration field {prefix}{key!s}; the fields are "
                             + ", ".join(f"{prefix}{n}" for n in by_name))
        f = by_name[key]
        _check(value, f.shape, f.count, prefix + key, where)


def check_config(values, fields_=FIELDS, *, where="kernel configuration"):
    """Refuse ``values`` (nested dicts / lists, as ``merit.compile`` makes; missing fields are 0)
    unless every value fits its field.

    Raises ValueError naming the field, the value and the range (``p_size[0] = 70000 does not
    fit its 16-bit unsigned field (0..65535)``), or an unknown field with the valid names; a
    TypeError for a value of the wrong kind. ``where`` starts the message. Returns ``values``.
    """
    if not isinstance(values, dict):
        raise TypeError(f"{where}: the configuration must be a dict, not {values!r}")
    _check_dict(values, tuple(fields_), "", where)
    return values
