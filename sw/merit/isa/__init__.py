"""The MERIT-z instruction set: encoding, assembler, bit-exact interpreter, programs per workload.

Pure numpy (no amaranth). ``docs/isa.md`` documents the encoding and the semantics; the RTL in
``hw/meritz/tau/cp/simd.py`` and ``hw/meritz/tau/cp/sequencer.py`` is checked against
:func:`execute`.
"""

from .alu import alu, lut_interp, out_value, sat16, wrap32
from .asm import AsmError, assemble, disassemble, disassemble_word
from .encoding import (
    IMM_MAX,
    IMM_MIN,
    LUT_ENTRIES,
    LUT_FRAC,
    MAX_LEVELS,
    N_CONSTS,
    N_LUTS,
    N_REGS,
    OPERAND_CONST,
    OPERAND_IMM,
    OPERAND_RP0,
    OPERAND_RP1,
    IndexKind,
    Instruction,
    IsaError,
    Logic,
    Op,
    decode,
    encode,
    is_legal,
)
from .interp import Trace, execute, operand_value, step
from .program import Program, check_range_table, range_select, step_ranges
from .programs import (
    ProgramParts,
    bilateral_tables,
    operand_ports,
    program_for,
    register_program,
    run,
    supported,
)

__all__ = [
    "IMM_MAX", "IMM_MIN", "LUT_ENTRIES", "LUT_FRAC", "MAX_LEVELS", "N_CONSTS", "N_LUTS", "N_REGS",
    "OPERAND_CONST", "OPERAND_IMM", "OPERAND_RP0", "OPERAND_RP1",
    "AsmError", "IndexKind", "Instruction", "IsaError", "Logic", "Op", "Program", "Trace",
    "alu", "assemble", "check_range_table", "decode", "disassemble", "disassemble_word",
    "encode", "execute", "is_legal", "lut_interp", "out_value", "range_select", "sat16",
    "step_ranges", "wrap32", "operand_value", "step", "program_for", "run", "supported",
    "bilateral_tables", "operand_ports", "ProgramParts", "register_program",
]
