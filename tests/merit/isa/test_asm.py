"""Assembler syntax, errors naming the line, range tables, disassembler round trip."""

import numpy as np
import pytest

from merit.isa import AsmError, IsaError, Program, assemble, disassemble

CONV = """
; 3x3 convolution, result scaled by 1/256 with rounding
.const k0 = 128
pre1:
    add  r0, 0, 0, 0
loop:
    mac  r0, r0, i0, i1
post1:
    out  r0, k0 >> 8
"""


def test_sections_give_the_range_table():
    p = assemble(CONV)
    assert p.levels == 1 and p.begs == (1, 0) and p.ends == (2, 3)
    assert p.consts == (128, 0, 0, 0)
    two = assemble("""
    pre1:
        add r0, 0, 0, 0
        add r2, 0, 0, 0
    pre2:
        add r1, 0, 0, 0
    loop:
        mac r1, r1, i0, i1
    post2:
        add r0, r0, r1, 0
    post1:
        out r0, 0
    """)
    assert two.begs == (3, 2, 0) and two.ends == (4, 5, 6) and two.regs == 3


def test_instructions_without_label_are_the_loop_and_missing_sections_are_empty():
    p = assemble("max r0, r0, i0\n.levels 3\npost2:\nout r0, 0")
    assert p.begs == (0, 0, 0, 0) and p.ends == (1, 1, 2, 2)


def test_round_trip_of_random_programs():
    rng = np.random.default_rng(3)
    ops = ["add r1, r0, i0, i1 >> 3", "sub r7, k3, -8, 7", "l1 r2, r2, i0, r5 >> 31",
           "mac r0, r0, i0, i1", "max r3, r3, i1", "min r3, 0, r4 >> 2", "sel r1, r2, r3, r4",
           "and r1, r1, k0", "or r2, r2, 1", "xor r3, r3, -1", "index r4, r4, a5 >> 1",
           "index r5, 0, p0", "lut r6, 0, r6, k1, t1 >> 4", "out r0, k0 >> 8", "out i1, 0"]
    tables = ".lut t0 = " + " ".join(str(v) for v in range(33)) + "\n.lut t1 = " + " ".join(
        str(-v) for v in range(33))
    for _ in range(50):
        d = int(rng.integers(1, 7))
        names = ([f"pre{lv}" for lv in range(1, d + 1)] + ["loop"]
                 + [f"post{lv}" for lv in range(d, 0, -1)])
        text = [f".levels {d}", ".const k0 = -5", ".const k3 = 2147483647", tables]
        for name in names:
            text.append(f"{name}:")
            text += list(rng.choice(ops, size=int(rng.integers(0, 3))))
        p = assemble("\n".join(text))
        again = assemble(disassemble(p))
        assert again == p
        assert disassemble(again) == disassemble(p)


@pytest.mark.parametrize("text, match", [
    ("mul r0, r0, i0, i1", r"line 1: unknown mnemonic 'mul' \(expected one of add, sub"),
    ("add r0, r0, 8, 0", r"line 1: immediate 8 out of range -8..7 \(put larger values in a "
                         r"constant"),
    ("\nadd r0, r0, -9, 0", r"line 2: immediate -9 out of range"),
    ("add r8, r0, i0, 0", r"line 1: bad register 'r8' \(expected r0..r7\)"),
    ("add r0, r9, i0, 0", r"line 1: bad register 'r9'"),
    ("add i0, r0, i0, 0", r"line 1: bad register 'i0' as destination"),
    ("add r0, k4, 0, 0", r"line 1: bad constant 'k4' \(expected k0..k3\)"),
    ("add r0, r0, i0", r"line 1: add expects 4 operands \(rd, a, b, c\), got 3"),
    ("max r0, r0, i0, i1", r"line 1: max expects 3 operands"),
    ("add r0, r0, i0, 0 >> 32", r"line 1: shift 32 out of range 0..31"),
    ("add r0, r0, i0, 0 >> x", r"line 1: expected a shift amount after '>>', got 'x'"),
    ("add r0, r0, foo, 0", r"line 1: expected an operand \(r0..r7, i0, i1, k0..k3"),
    ("index r0, 0, q1", r"line 1: expected an index a0..a5 or p0..p5, got 'q1'"),
    ("lut r0, 0, r1, 0, t2", r"line 1: expected a lookup table t0..t1, got 't2'"),
    ("lut r0, 0, r1, 0, t0", r"lookup uses table t0, but the program defines 0 table"),
    ("loop:\nadd r0, 0, 0, 0\npre1:", r"line 3: section 'pre1' after 'loop'; the order is"),
    ("loop:\nloop:", r"line 2: section 'loop' appears twice"),
    ("middle:", r"line 1: unknown section 'middle'"),
    (".levels 7", r"line 1: levels must be in 1..6, not 7"),
    (".levels 1\npost2:", r"section of level 2 but .levels is 1"),
    (".const k0 = 4294967296", r"line 1: constant 4294967296 is not a signed 32-bit value"),
    (".lut t0 = 1 2 3", r"line 1: a lookup table needs 33 int16 entries, got 3"),
    (".bogus", r"line 1: unknown directive '.bogus'"),
])
def test_errors_name_the_line_and_what_was_expected(text, match):
    with pytest.raises(AsmError if "defines" not in match else IsaError, match=match):
        assemble(text)


@pytest.mark.parametrize("begs, ends, match", [
    ((0, 1), (2,), "begs has 2 entries but ends has 1"),
    ((1, 0), (1, 3, 2), "begs has 2 entries but ends has 3"),
    ((0, 1), (2, 3), r"begs must be non-increasing, but begs\[1\]=1 > begs\[0\]=0"),
    ((1, 0), (3, 2), r"ends must be non-decreasing, but ends\[1\]=2 < ends\[0\]=3"),
    ((2, 1), (3, 3), r"Pre_1 must start at 0"),
    ((1, 0), (2, 2), r"Post_1 end at the program length 3"),
    ((2, 0), (1, 3), r"begs\[0\] must not exceed ends\[0\]"),
    ((0,) * 8, (3,) * 8, r"must have 1..7 entries per side"),
])
def test_bad_range_tables_are_rejected(begs, ends, match):
    words = assemble(CONV).words
    with pytest.raises(IsaError, match=match):
        Program(words, begs, ends)


def test_program_checks_words_constants_and_bindings():
    p = assemble(CONV)
    with pytest.raises(IsaError, match=r"address 1: illegal instruction word 0x00000000"):
        Program((p.words[0], 0, p.words[2]), p.begs, p.ends)
    with pytest.raises(IsaError, match="1 instruction\\(s\\) read i0 but 2 name"):
        Program(p.words, p.begs, p.ends, rp0=("x", "y"))
    with pytest.raises(IsaError, match="a program has 4 constants, not 2"):
        Program(p.words, p.begs, p.ends, consts=(1, 2))
