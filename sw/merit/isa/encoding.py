"""Bit-level encoding of MERIT-z instructions: opcodes, fields, operand codes, encode and decode.

One instruction is a 32-bit word::

    31    28 27  25 24    20 19  17 16 15 14    10 9      5 4      0
    +-------+------+--------+------+--+--+--------+--------+--------+
    |  op   |  fn  |   s    |  d   |x |0 |   a    |   b    |   c    |
    +-------+------+--------+------+--+--+--------+--------+--------+

``x`` (bit 16) indexes the accumulator: the destination ``d`` and the operand ``a``, when ``a``
is a register, become ``d + x_step`` and ``a + x_step``, where ``x_step = sum_j a_j *
xstride_j`` is the step's register offset (:attr:`merit.isa.Program.xstride`); the sequencer
resolves it when it forms each command, so the SIMD array never sees bit 16 set.
``docs/isa.md`` is the prose version of this module; the two must agree.
"""

import enum
from dataclasses import dataclass, replace

__all__ = [
    "Op", "Logic", "IndexKind", "IsaError",
    "N_REGS", "N_CONSTS", "N_LUTS", "LUT_ENTRIES", "LUT_FRAC", "MAX_LEVELS",
    "OPERAND_RP0", "OPERAND_RP1", "OPERAND_CONST", "OPERAND_IMM", "IMM_MIN", "IMM_MAX",
    "Instruction", "encode", "decode", "is_legal",
]

N_REGS = 8           # r0..r7 per lane (and per lane group)
N_CONSTS = 4         # k0..k3, 32-bit program constants
N_LUTS = 2           # t0, t1 lookup tables
LUT_ENTRIES = 33     # 32 segments + end point, int16 each
LUT_FRAC = 8         # fraction bits of the lookup input (segment width 256)
MAX_LEVELS = 6       # accumulation levels (one per accumulation index)

OPERAND_RP0 = 8      # current element of RP0 (int16, sign-extended)
OPERAND_RP1 = 9      # current element of RP1
OPERAND_CONST = 10   # 10..13: k0..k3
OPERAND_IMM = 16     # 16..31: immediate, the low 4 bits sign-extended (-8..7)
IMM_MIN, IMM_MAX = -8, 7


class IsaError(ValueError):
    """An illegal instruction word, program or range table; the message says what was expected."""


class Op(enum.IntEnum):
    """Opcodes (field ``op``, bits 31..28). 0 and 9..15 are illegal, so an all-zero word traps."""
    ADD = 1      # d = a + ((b + c) >> s)
    SUB = 2      # d = a + ((b - c) >> s)
    L1 = 3       # d = a + (|b - c| >> s)
    MAC = 4      # d = a + ((sat16(b) * sat16(c)) >> s)
    LOGIC = 5    # d = f(a, b, c) >> s, f chosen by fn (Logic)
    INDEX = 6    # d = a + (index >> s), index a_fn (b field 0) or p_fn (b field 1)
    LOOKUP = 7   # d = a + interp_fn((b - c) >> s)
    OUT = 8      # send sat16((a + b) >> s) to the write pipeline


class Logic(enum.IntEnum):
    """``fn`` of ``Op.LOGIC``; 6 and 7 are illegal."""
    MAX = 0      # max(a, b)
    MIN = 1      # min(a, b)
    SEL = 2      # b if a != 0 else c
    AND = 3      # a & b
    OR = 4       # a | b
    XOR = 5      # a ^ b


class IndexKind(enum.IntEnum):
    """Raw value of the ``b`` field of ``Op.INDEX``."""
    ACC = 0      # accumulation index a_fn of the current step
    PAR = 1      # parallel index p_fn of the lane


@dataclass(frozen=True)
class Instruction:
    """One decoded instruction; every field is the raw field value of the word."""
    op: int
    fn: int = 0
    s: int = 0
    d: int = 0
    a: int = OPERAND_IMM
    b: int = OPERAND_IMM
    c: int = OPERAND_IMM
    x: int = 0

    def indexed(self, offset):
        """The instruction the sequencer issues at a step whose register offset is ``offset``:
        with ``x`` set, ``d`` and a register ``a`` moved up by ``offset`` and ``x`` cleared
        (itself when ``x`` is clear). IsaError when a register leaves r0..r7."""
        if not self.x:
            return self
        d = self.d + offset if self.writes_reg else self.d
        a = self.a + offset if self.a < N_REGS else self.a
        if d >= N_REGS or a >= N_REGS > self.a or offset < 0:
            raise IsaError(f"indexed register r{self.d if self.writes_reg else self.a}+x at "
                           f"offset {offset} leaves r0..r{N_REGS - 1}")
        return replace(self, d=d, a=a, x=0)

    def reads(self):
        """Operand codes this instruction reads (the raw ``b`` of INDEX is not an operand)."""
        if self.op == Op.INDEX:
            return (self.a,)
        if self.op == Op.OUT or (self.op == Op.LOGIC and self.fn != Logic.SEL):
            return (self.a, self.b)
        return (self.a, self.b, self.c)

    def reads_rp(self, port):
        """True when the instruction reads the current element of RP``port`` (0 or 1)."""
        return (OPERAND_RP0 + port) in self.reads()

    @property
    def writes_reg(self):
        return self.op != Op.OUT


_FIELDS = (("op", 28, 4), ("fn", 25, 3), ("s", 20, 5), ("d", 17, 3), ("x", 16, 1),
           ("a", 10, 5), ("b", 5, 5), ("c", 0, 5))


def encode(ins):
    """The 32-bit word of an :class:`Instruction` (fields range-checked, legality checked)."""
    word = 0
    for name, lo, width in _FIELDS:
        value = getattr(ins, name)
        if not 0 <= value < (1 << width):
            raise IsaError(f"field {name} must be in 0..{(1 << width) - 1}, not {value}")
        word |= value << lo
    why = _illegal(ins)
    if why:
        raise IsaError(f"illegal instruction: {why}")
    return word


def decode(word, *, check=True):
    """The :class:`Instruction` of a 32-bit word; with ``check`` an illegal word raises IsaError."""
    if not 0 <= word < (1 << 32):
        raise IsaError(f"instruction word must be a 32-bit unsigned integer, not {word}")
    ins = Instruction(**{name: (word >> lo) & ((1 << width) - 1) for name, lo, width in _FIELDS})
    if check:
        why = _illegal(ins, reserved=(word >> 15) & 1)
        if why:
            raise IsaError(f"illegal instruction word 0x{word:08x}: {why}")
    return ins


def is_legal(word, *, program=False):
    """Whether the SIMD array executes ``word`` as a command (otherwise it raises its error
    output). A command never has ``x`` (bit 16) set: the sequencer resolves it. With
    ``program=True``: whether ``word`` is a legal program word (``x`` allowed, as
    :func:`decode` checks)."""
    ins = decode(word, check=False)
    if ins.x and not program:
        return False
    return not _illegal(ins, reserved=(word >> 15) & 1)


def _illegal(ins, reserved=0):
    """Why the instruction is illegal, or '' (the rule the RTL decoder implements too)."""
    if ins.op not in list(Op):
        return f"unknown opcode {ins.op}"
    if reserved:
        return "bit 15 must be zero"
    for name in "abc":
        code = getattr(ins, name)
        if code in (14, 15):
            return f"operand {name} uses reserved code {code}"
    if ins.op == Op.LOGIC and ins.fn > max(Logic):
        return f"unknown logic function {ins.fn}"
    if ins.op == Op.INDEX:
        if ins.fn >= MAX_LEVELS:
            return f"index number must be below {MAX_LEVELS}, not {ins.fn}"
        if ins.b > max(IndexKind):
            return f"index kind must be 0 (acc) or 1 (par), not {ins.b}"
    if ins.op == Op.LOOKUP and ins.fn >= N_LUTS:
        return f"lookup table must be below {N_LUTS}, not {ins.fn}"
    if ins.op == Op.OUT and ins.d:
        return "out has no destination register (d must be 0)"
    if ins.op in (Op.ADD, Op.SUB, Op.L1, Op.MAC, Op.OUT) and ins.fn:
        return f"{Op(ins.op).name.lower()} has no function field (fn must be 0, not {ins.fn})"
    return ""
