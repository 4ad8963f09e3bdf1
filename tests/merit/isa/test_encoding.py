"""Instruction encoding: field layout, legality rule, errors."""

import numpy as np
import pytest

from merit.isa import (
    Instruction,
    IsaError,
    Op,
    assemble,
    decode,
    disassemble_word,
    encode,
    is_legal,
)


def _random_legal(rng):
    op = int(rng.choice([1, 2, 3, 4, 5, 6, 7, 8]))
    fn = {5: int(rng.integers(0, 6)), 6: int(rng.integers(0, 6)), 7: int(rng.integers(0, 2))}
    operand = lambda: int(rng.choice([*range(14), *range(16, 32)]))  # noqa: E731
    ins = Instruction(op=op, fn=fn.get(op, 0), s=int(rng.integers(0, 32)),
                      d=0 if op == Op.OUT else int(rng.integers(0, 8)),
                      a=operand(), b=int(rng.integers(0, 2)) if op == Op.INDEX else operand(),
                      c=operand())
    return ins


def test_field_layout_matches_the_documented_table():
    word = encode(Instruction(op=Op.MAC, fn=0, s=5, d=3, a=0, b=8, c=9))
    assert word == (4 << 28) | (5 << 20) | (3 << 17) | (0 << 10) | (8 << 5) | 9
    assert decode(word) == Instruction(op=4, fn=0, s=5, d=3, a=0, b=8, c=9)


def test_random_legal_words_round_trip():
    rng = np.random.default_rng(7)
    for _ in range(2000):
        ins = _random_legal(rng)
        word = encode(ins)
        assert decode(word) == ins
        assert is_legal(word)


def test_assembled_words_disassemble_and_reassemble():
    rng = np.random.default_rng(8)
    for _ in range(500):
        ins = _random_legal(rng)
        if ins.op == Op.LOGIC and ins.fn != 2 or ins.op == Op.OUT:
            ins = Instruction(**{**ins.__dict__, "c": 16})
        if ins.op == Op.INDEX:
            ins = Instruction(**{**ins.__dict__, "c": 16})
        word = encode(ins)
        text = disassemble_word(word)
        luts = ".lut t0 = " + " ".join(["0"] * 33) + "\n.lut t1 = " + " ".join(["0"] * 33)
        assert assemble(f"{luts}\nloop:\n{text}").words == (word,), text


@pytest.mark.parametrize("word, match", [
    (0x00000000, "unknown opcode 0"),
    (0x90000000 | (16 << 10), "unknown opcode 9"),
    (0xF0000000, "unknown opcode 15"),
    ((1 << 28) | (14 << 10), "operand a uses reserved code 14"),
    ((1 << 28) | (16 << 10) | (15 << 5) | 16, "operand b uses reserved code 15"),
    ((5 << 28) | (6 << 25) | (16 << 10) | (16 << 5) | 16, "unknown logic function 6"),
    ((6 << 28) | (6 << 25) | (16 << 10), "index number must be below 6, not 6"),
    ((6 << 28) | (16 << 10) | (2 << 5), "index kind must be 0"),
    ((7 << 28) | (2 << 25) | (16 << 10) | (16 << 5) | 16, "lookup table must be below 2, not 2"),
    ((8 << 28) | (1 << 17) | (16 << 10) | (16 << 5) | 16, "out has no destination register"),
    ((1 << 28) | (1 << 25) | (16 << 10) | (16 << 5) | 16, "add has no function field"),
    ((1 << 28) | (1 << 15) | (16 << 10) | (16 << 5) | 16, "bit 15 must be zero"),
])
def test_illegal_words_are_rejected_with_the_reason(word, match):
    assert not is_legal(word)
    with pytest.raises(IsaError, match=match):
        decode(word)


def test_encode_checks_field_widths():
    with pytest.raises(IsaError, match="field s must be in 0..31, not 32"):
        encode(Instruction(op=Op.ADD, s=32))
    with pytest.raises(IsaError, match="32-bit unsigned integer, not -1"):
        decode(-1)
