"""The indexed register ``rN+x``: encoding (bit 16), assembler, Program's ``xstride`` /
``xspan`` and register count, and the interpreter against a plain numpy reference."""

import numpy as np
import pytest

from merit.isa import (
    AsmError,
    Instruction,
    IsaError,
    Op,
    assemble,
    decode,
    disassemble,
    encode,
    execute,
    is_legal,
)

WINDOW = """
.levels 3
.xstride 0 2 1
.xspan 4
loop:
    mac   r0+x, r0+x, i0, i1
post1:
    max   r0, r0, r1
    max   r0, r0, r2
    max   r0, r0, r3
    out   r0, 0
"""


def test_x_is_bit_16_and_moves_d_and_a_register_a():
    word = encode(Instruction(op=Op.MAC, d=1, a=1, b=8, c=9, x=1))
    assert word >> 16 & 1 == 1 and word >> 15 & 1 == 0
    ins = decode(word)
    assert ins.x == 1
    assert ins.indexed(3) == Instruction(op=Op.MAC, d=4, a=4, b=8, c=9)
    # an immediate a stays; out has no destination: only a register a moves
    add = Instruction(op=Op.ADD, d=2, a=16 + 3, b=16, c=16, x=1)
    assert add.indexed(2) == Instruction(op=Op.ADD, d=4, a=19, b=16, c=16)
    out = Instruction(op=Op.OUT, a=2, b=0, x=1)
    assert out.indexed(5) == Instruction(op=Op.OUT, a=7, b=0)
    with pytest.raises(IsaError, match=r"r4\+x at offset 4 leaves r0..r7"):
        Instruction(op=Op.MAC, d=4, a=4, b=8, c=9, x=1).indexed(4)


def test_a_program_word_with_x_is_legal_but_not_a_command():
    word = encode(Instruction(op=Op.MAC, d=1, a=1, b=8, c=9, x=1))
    assert is_legal(word, program=True)
    assert not is_legal(word)                       # the SIMD array never sees bit 16 set
    assert is_legal(word & ~(1 << 16))
    with pytest.raises(IsaError, match="bit 15 must be zero"):
        decode(word | 1 << 15)


def test_assembler_round_trip_and_register_count():
    prog = assemble(WINDOW)
    assert prog.xstride == (0, 2, 1) and prog.xspan == 4
    assert prog.regs == 4                           # r0+x over offsets 0..3
    assert assemble(disassemble(prog)) == prog
    assert "mac   r0+x, r0+x, i0, i1" in disassemble(prog)
    # padded levels get stride 0
    assert prog.with_levels(5).xstride == (0, 2, 1, 0, 0)


@pytest.mark.parametrize("text, match", [
    ("mac r1, r1+x, i0, i1", r"line 1: with an indexed register every register among the "
                             r"destination and a is indexed: write r1\+x"),
    ("mac r1+x, r1+x, i0+x, i1", r"line 1: an indexed register 'i0\+x' is the destination or "
                                 r"the operand a only"),
    (".xstride 0 8\nloop:\n mac r0+x, r0+x, i0, i1", r"xstride must give at most one register "
                                                      r"stride 0..7 per level"),
    (".xspan 9\nloop:\n mac r0+x, r0+x, i0, i1", "xspan must be 1..8, not 9"),
])
def test_assembler_errors(text, match):
    with pytest.raises(AsmError, match=match):
        assemble(text)


def test_interpreter_keeps_one_sum_per_offset():
    """max over the window (a1, a2) of sum over a0, a3 of x * w: the window's four sums live
    in r0..r3 across the outer index, as a plain numpy reduction says."""
    rng = np.random.default_rng(3)
    prog = assemble(WINDOW.replace(".levels 3", ".levels 4").replace(".xstride 0 2 1",
                                                                       ".xstride 0 2 1 0"))
    shape, lanes = (3, 2, 2, 5), 16
    x = rng.integers(-300, 300, shape + (lanes,)).astype(np.int16)
    w = rng.integers(-300, 300, shape + (lanes,)).astype(np.int16)
    trace = execute(prog, shape, rp0=[x], rp1=[w])
    sums = (x.astype(np.int64) * w).sum(axis=(0, 3))          # (2, 2, lanes)
    want = np.clip(sums.reshape(4, lanes).max(axis=0), -32768, 32767)
    assert np.array_equal(trace.outputs[0][-1], want)
    # r1..r3 keep their sums; r0 (offset 0) ends as the maximum
    assert np.array_equal(trace.regs[1:4].astype(np.int64), sums.reshape(4, lanes)[1:])


def test_interpreter_refuses_an_offset_past_xspan():
    prog = assemble(".levels 1\n.xstride 1\n.xspan 2\nloop:\n    mac r0+x, r0+x, i0, i1\n")
    data = np.ones((3, 4), dtype=np.int16)
    with pytest.raises(IsaError, match=r"register offset x = 2 at accumulation index \(2,\): "
                                       r"the program's xspan is 2"):
        execute(prog, (3,), rp0=[data], rp1=[data])
