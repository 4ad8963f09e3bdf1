"""ALU semantics against an independent scalar reference written with Python integers."""

import numpy as np
import pytest

from merit.isa import Instruction, Logic, Op, alu, lut_interp, out_value

CORNERS = [-(1 << 31), -(1 << 31) + 1, -65536, -32769, -32768, -32767, -1, 0, 1, 7, 32766,
           32767, 32768, 65535, (1 << 31) - 1]


def _w(x):  # wrap to int32
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def _s16(x):
    return max(-32768, min(32767, x))


def _ref(op, fn, s, a, b, c, table):
    if op == Op.ADD:
        return _w(a + ((b + c) >> s))
    if op == Op.SUB:
        return _w(a + ((b - c) >> s))
    if op == Op.L1:
        return _w(a + (abs(b - c) >> s))
    if op == Op.MAC:
        return _w(a + ((_s16(b) * _s16(c)) >> s))
    if op == Op.LOGIC:
        r = [max(a, b), min(a, b), b if a else c, a & b, a | b, a ^ b][fn]
        return _w(r >> s)
    if op == Op.LOOKUP:
        u = max(0, min(8192, (b - c) >> s))
        i, f = divmod(u, 256)
        y0, y1 = table[i], table[min(i + 1, 32)]
        return _w(a + y0 + (((y1 - y0) * f) >> 8))
    raise AssertionError(op)


@pytest.mark.parametrize("op, fn", [(Op.ADD, 0), (Op.SUB, 0), (Op.L1, 0), (Op.MAC, 0),
                                    *[(Op.LOGIC, f) for f in Logic], (Op.LOOKUP, 0)])
def test_alu_matches_scalar_reference(op, fn):
    rng = np.random.default_rng(int(op) * 10 + fn)
    table = [int(v) for v in rng.integers(-32768, 32768, 33)]
    table[0], table[1] = -32768, 32767
    vals = CORNERS + [int(v) for v in rng.integers(-(1 << 31), 1 << 31, 40)]
    if op == Op.LOOKUP:
        vals += [int(v) for v in rng.integers(-500, 9000, 60)]
    a = np.array([vals[i % len(vals)] for i in range(4000)], dtype=np.int64)
    b = rng.permutation(np.resize(np.array(vals, dtype=np.int64), 4000))
    c = rng.permutation(np.resize(np.array(vals, dtype=np.int64), 4000))
    for s in (0, 1, 7, 15, 16, 31):
        ins = Instruction(op=op, fn=fn, s=s)
        got = alu(ins, a, b, c, luts=[table])
        want = [_ref(op, fn, s, int(x), int(y), int(z), table)
                for x, y, z in zip(a, b, c, strict=True)]
        assert got.tolist() == want, (op, fn, s)


def test_index_and_out():
    a = np.array([0, 5, -(1 << 31), (1 << 31) - 1], dtype=np.int64)
    ins = Instruction(op=Op.INDEX, fn=1, s=1, b=1)
    assert alu(ins, a, None, None, index=np.array([7, 7, -1, 2])).tolist() == [3, 8, 2**31 - 1,
                                                                                 -(2**31)]
    o = Instruction(op=Op.OUT, s=0)
    assert out_value(o, np.array([40000, -40000, 32767, -32768]), 0).tolist() == [
        32767, -32768, 32767, -32768]
    o31 = Instruction(op=Op.OUT, s=31)
    assert out_value(o31, np.array([(1 << 31) - 1, -(1 << 31), -1]),
                     np.array([(1 << 31) - 1, -(1 << 31), 0])).tolist() == [1, -2, -1]


def test_lookup_hits_entries_and_interpolates_with_floor():
    table = list(range(0, 33 * 100, 100))
    assert lut_interp(table, np.array([0, 256, 8192, 9000, -5])).tolist() == [0, 100, 3200,
                                                                              3200, 0]
    assert lut_interp(table, np.array([128, 383])).tolist() == [50, 100 + (100 * 127 >> 8)]
    down = [0, -3] + [0] * 31
    assert lut_interp(down, np.array([256 + 128 - 256])).tolist() == [-2]  # floor(-1.5) = -2
