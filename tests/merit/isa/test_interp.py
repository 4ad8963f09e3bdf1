"""Ranged-inner-product execution: the linearized range walk equals nested loops (Fig. 4)."""

import itertools

import numpy as np
import pytest

from merit.isa import IsaError, assemble, execute, step_ranges


def _program(d, sizes):
    """Sections of the given sizes: pre1..preD, loop, postD..post1 (sizes in that order)."""
    names = ([f"pre{lv}" for lv in range(1, d + 1)] + ["loop"]
             + [f"post{lv}" for lv in range(d, 0, -1)])
    text = [f".levels {d}"]
    for name, n in zip(names, sizes, strict=True):
        text += [f"{name}:"] + ["add r0, r0, 1, 0"] * n
    return assemble("\n".join(text)), names


def _nested(shape, spans, names):
    """Addresses executed by the nested loops of Fig. 4a (independent of the range table)."""
    seq = []
    d = len(shape)

    def level(lv):
        seq.extend(range(*spans[f"pre{lv + 1}"]))
        for _ in range(shape[lv]):
            if lv + 1 == d:
                seq.extend(range(*spans["loop"]))
            else:
                level(lv + 1)
        seq.extend(range(*spans[f"post{lv + 1}"]))

    level(0)
    return seq


@pytest.mark.parametrize("seed", range(40))
def test_linearized_ranges_equal_nested_loops(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    sizes = [int(v) for v in rng.integers(0, 3, 2 * d + 1)]
    prog, names = _program(d, sizes)
    spans, pos = {}, 0
    for name, n in zip(names, sizes, strict=True):
        spans[name] = (pos, pos + n)
        pos += n
    shape = tuple(int(v) for v in rng.integers(1, 4, d))
    linear = list(itertools.chain.from_iterable(
        range(s, e) for _, s, e in step_ranges(prog, shape)))
    assert linear == _nested(shape, spans, names)
    trace = execute(prog, shape, lanes=3)
    assert trace.regs[0].tolist() == [len(linear)] * 3
    assert trace.ops == 3 * len(linear)


def test_rp_slots_index_and_outputs():
    prog = assemble("""
    .levels 2
    pre1:
        add r0, 0, 0, 0
    pre2:
        index r1, 0, a0         ; r1 = outer index
    loop:
        mac r0, r0, i0, i1
        l1  r2, r2, i0, r1
    post2:
        out r1, 0
        index r3, 0, p1 >> 1
    post1:
        out r0, 0
        out r3, i1 >> 0
    """)
    assert prog.reads(0) == (2, 3) and prog.reads(1) == (2, 7)
    rng = np.random.default_rng(0)
    shape, lanes = (3, 4), 6
    x = rng.integers(-100, 100, shape + (lanes,)).astype(np.int16)
    w = rng.integers(-100, 100, shape + (lanes,)).astype(np.int16)
    y = rng.integers(-100, 100, shape + (lanes,)).astype(np.int16)
    z = rng.integers(-100, 100, shape + (lanes,)).astype(np.int16)
    pidx = np.stack([np.arange(lanes), 10 * np.arange(lanes)])
    t = execute(prog, shape, rp0=[x, y], rp1=[w, z], pindex=pidx)
    assert t.outputs[0].tolist() == [[0] * lanes, [1] * lanes, [2] * lanes]
    assert t.outputs[1][0].tolist() == (x.astype(int) * w).sum((0, 1)).tolist()
    assert t.outputs[2][0].tolist() == (5 * np.arange(lanes) + z[2, 3]).tolist()
    want_l1 = sum(np.abs(y[i, j].astype(int) - i) for i in range(3) for j in range(4))
    assert t.regs[2].tolist() == want_l1.tolist()


def test_program_with_fewer_levels_runs_on_deeper_spaces():
    prog = assemble("pre1:\nadd r0, 0, 0, 0\nloop:\nadd r0, r0, i0, 0\npost1:\nout r0, 0")
    x = np.ones((2, 3, 4, 5), np.int16)
    t = execute(prog, (2, 3, 4), rp0=[x])
    assert t.outputs[0].tolist() == [[24] * 5]


@pytest.mark.parametrize("kwargs, match", [
    ({"rp0": []}, r"reads i0 in 1 instruction\(s\) \(addresses \[1\]\), but 0 RP0 array"),
    ({"rp0": [np.zeros((3, 5), np.int16)]}, r"RP0 array 0 must have shape accumulation \+ "
                                            r"\(lanes,\) = \(3, 4\), not \(3, 5\)"),
    ({"rp0": [np.zeros((3, 4), np.int32)]}, "RP0 array 0 must be int16, not int32"),
])
def test_execute_errors(kwargs, match):
    prog = assemble("pre1:\nadd r0, 0, 0, 0\nloop:\nadd r0, r0, i0, 0\npost1:\nout r0, 0")
    with pytest.raises(IsaError, match=match):
        execute(prog, (3,), lanes=4, **kwargs)


def test_index_errors_and_bad_shapes():
    prog = assemble("index r0, 0, p2\nindex r1, 0, a1")
    with pytest.raises(IsaError, match=r"index p2 needs pindex with at least 3"):
        execute(prog, (2,), pindex=np.zeros((1, 4), int))
    with pytest.raises(IsaError, match=r"accumulation extents must be at least 1"):
        execute(prog, (0,), lanes=2)
    with pytest.raises(IsaError, match=r"the program has 1 levels; cannot run it with 0"):
        prog.with_levels(0)
