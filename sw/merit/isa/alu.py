"""Bit-exact semantics of one MERIT-z instruction over all lanes at once (numpy int64 arrays).

Every function takes and returns int64 arrays holding 32-bit two's complement values; arithmetic is
done exactly in int64 and wrapped to 32 bits at the end (internal values wrap, only ``out``
saturates). Shifts are arithmetic (floor), never rounding.
"""

import numpy as np

from .encoding import LUT_ENTRIES, LUT_FRAC, Instruction, IsaError, Logic, Op

__all__ = ["wrap32", "sat16", "lut_interp", "alu", "out_value"]

_LUT_MAX = (LUT_ENTRIES - 1) << LUT_FRAC     # 8192: the input that selects the last entry


def wrap32(x):
    """Wrap integers to signed 32 bits (two's complement)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def sat16(x):
    """Saturate integers to signed 16 bits."""
    return np.clip(np.asarray(x, dtype=np.int64), -32768, 32767)


def lut_interp(table, x):
    """Linear interpolation in a 33-entry int16 table of the fixed-point input ``x``.

    ``u = clamp(x, 0, 8192)``, ``i = u >> 8``, ``f = u & 255``,
    ``y = T[i] + (((T[min(i+1, 32)] - T[i]) * f) >> 8)``: the result always lies between two
    neighbouring entries, so it is an int16.
    """
    t = np.asarray(table, dtype=np.int64)
    u = np.clip(np.asarray(x, dtype=np.int64), 0, _LUT_MAX)
    i = u >> LUT_FRAC
    f = u & ((1 << LUT_FRAC) - 1)
    y0 = t[i]
    y1 = t[np.minimum(i + 1, LUT_ENTRIES - 1)]
    return y0 + (((y1 - y0) * f) >> LUT_FRAC)


def alu(ins: Instruction, a, b, c, *, index=None, luts=()):
    """The register result of a non-``out`` instruction.

    ``a``, ``b``, ``c`` are the operand values (int64 arrays of 32-bit values); ``index`` is the
    selected loop index for ``Op.INDEX`` (scalar or per-lane array); ``luts`` the program's tables.
    """
    s = ins.s
    op = ins.op
    if op == Op.ADD:
        return wrap32(a + ((b + c) >> s))
    if op == Op.SUB:
        return wrap32(a + ((b - c) >> s))
    if op == Op.L1:
        return wrap32(a + (np.abs(b - c) >> s))
    if op == Op.MAC:
        return wrap32(a + ((sat16(b) * sat16(c)) >> s))
    if op == Op.LOGIC:
        fn = ins.fn
        if fn == Logic.MAX:
            r = np.maximum(a, b)
        elif fn == Logic.MIN:
            r = np.minimum(a, b)
        elif fn == Logic.SEL:
            r = np.where(a != 0, b, c)
        elif fn == Logic.AND:
            r = a & b
        elif fn == Logic.OR:
            r = a | b
        elif fn == Logic.XOR:
            r = a ^ b
        else:
            raise IsaError(f"unknown logic function {fn}")
        return wrap32(r >> s)
    if op == Op.INDEX:
        return wrap32(a + (np.asarray(index, dtype=np.int64) >> s))
    if op == Op.LOOKUP:
        if ins.fn >= len(luts):
            raise IsaError(f"lookup table t{ins.fn} is not defined (the program has {len(luts)})")
        return wrap32(a + lut_interp(luts[ins.fn], (b - c) >> s))
    raise IsaError(f"opcode {op} has no register result")


def out_value(ins: Instruction, a, b):
    """The int16 value an ``out`` instruction sends: ``sat16((a + b) >> s)``."""
    return sat16((a + b) >> ins.s)
