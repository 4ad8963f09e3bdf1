"""Fixed point: the kernel bodies translated from MERIT-z programs, emulated on the CPU.

The translated statements (``merit.gpu.fixed.isa_body``) are run as Python on numpy arrays, with
helpers written here from docs/isa.md (not from ``merit.isa``), over the golden model's level
semantics; the result must equal the ISA interpreter's bit for bit.  On a GPU,
``tests/merit/gpu/test_device.py`` runs the same bodies compiled.
"""

import numpy as np
import pytest
from gpu_cases import CASES, FIXED_CASES, fixed_inputs

from merit.gpu.fixed import isa_body
from merit.gpu.spec import spec_of
from merit.isa import programs


def _wrap(x):
    return ((np.asarray(x, np.int64) + 2**31) % 2**32) - 2**31


def _sat(x):
    return np.clip(np.asarray(x, np.int64), -32768, 32767)


HELPERS = {
    "merit_add": lambda a, b, c, s: _wrap(a + ((b + c) >> s)),
    "merit_sub": lambda a, b, c, s: _wrap(a + ((b - c) >> s)),
    "merit_l1": lambda a, b, c, s: _wrap(a + (np.abs(b - c) >> s)),
    "merit_mac": lambda a, b, c, s: _wrap(a + ((_sat(b) * _sat(c)) >> s)),
    "merit_max": lambda a, b, s: _wrap(np.maximum(a, b) >> s),
    "merit_min": lambda a, b, s: _wrap(np.minimum(a, b) >> s),
    "merit_sel": lambda a, b, c, s: _wrap(np.where(np.asarray(a) != 0, b, c) >> s),
    "merit_and": lambda a, b, s: _wrap(np.bitwise_and(a, b) >> s),
    "merit_or": lambda a, b, s: _wrap(np.bitwise_or(a, b) >> s),
    "merit_xor": lambda a, b, s: _wrap(np.bitwise_xor(a, b) >> s),
    "merit_index": lambda a, i, s: _wrap(a + (np.asarray(i, np.int64) >> s)),
    "merit_out": lambda a, b, s: _sat((np.asarray(a, np.int64) + b) >> s),
}


def _lookup(table):
    t = np.asarray(table, np.int64)

    def f(a, b, c, s):
        u = np.clip((np.asarray(b, np.int64) - c) >> s, 0, 8192)
        i, fr = u >> 8, u & 255
        y0, y1 = t[i], t[np.minimum(i + 1, 32)]
        return _wrap(a + y0 + (((y1 - y0) * fr) >> 8))
    return f


def emulate(problem, body, arrays, luts=()):
    """Run the translated bodies over the golden model's level semantics, all lanes at once."""
    pshape, ashape = tuple(problem.p_shape), tuple(problem.a_shape)
    lanes = int(np.prod(pshape, dtype=np.int64))
    by_name = dict(zip((t.name for t in problem.tensors), arrays, strict=True))
    m = [op.transform.apply(by_name[op.tensor].astype(np.int64), pshape, ashape)
         .reshape(lanes, -1) for op in problem.operands]
    env = dict(HELPERS)
    env.update({f"merit_lookup{n}": _lookup(t) for n, t in enumerate(luts)})
    env.update({f"r{i}": np.zeros(lanes, np.int64) for i in range(8)})
    env.update({f"p{j}": v for j, v in enumerate(np.indices(pshape).reshape(len(pshape), -1))})

    def run(text, flat, index):
        env.update({f"in{k}": mk[:, flat] for k, mk in enumerate(m)})
        env.update({f"a{i}": v for i, v in enumerate(index)})
        for stmt in filter(None, (s.strip() for s in text.split(";"))):
            exec(stmt, env)  # noqa: S102 - the statements under test

    first = np.cumsum((0,) + tuple(problem.levels))
    na = len(ashape)
    steps = list(np.ndindex(*ashape)) if na else [()]
    for flat, index in enumerate(steps):
        for lv in range(len(problem.levels)):
            if all(i == 0 for i in index[first[lv]:]):
                run(body["pre"][lv], flat, index)
        run(body["loop"], flat, index)
        for lv in reversed(range(len(problem.levels))):
            if all(i == n - 1 for i, n in zip(index[first[lv]:], ashape[first[lv]:],
                                               strict=True)):
                run(body["post"][lv], flat, index)
    outs = tuple(o.finish(np.asarray(env[f"out{k}"]).reshape(pshape)).astype(np.int16)
                 for k, o in enumerate(problem.outputs))
    return outs[0] if len(outs) == 1 else outs


@pytest.mark.parametrize("shift", [0, 7])
@pytest.mark.parametrize("name", sorted(FIXED_CASES))
def test_translated_program_is_bit_exact_with_the_isa(name, shift):
    problem = FIXED_CASES[name]()
    rng = np.random.default_rng(len(name) * 31 + shift)
    for lo, hi in ((-8, 8), (-32768, 32768)):     # small values, and saturation / wrapping
        arrays = fixed_inputs(problem, rng, lo, hi)
        want = programs.run(problem, *arrays, shift=shift)
        body = isa_body(problem, shift)
        luts = programs.program_for(problem, shift=shift).luts
        got = emulate(problem, body, arrays, luts)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,), strict=True):
            np.testing.assert_array_equal(g, w)


def test_fixed_spec_and_errors():
    spec = spec_of(CASES["conv"](), "int32", fixed=3)
    assert spec.out_dtype == "int32" and "merit_mac(r0, in0, in1, 0)" in spec.body["loop"]
    assert "merit_out(r0, 4, 3)" in spec.body["post"][0]     # round half up: + 2^(shift-1)
    assert spec.key() != spec_of(CASES["conv"](), "int32", fixed=4).key()
    with pytest.raises(ValueError, match="fixed point runs in int32, not float32"):
        spec_of(CASES["conv"](), "float32", fixed=0)
    with pytest.raises(ValueError, match=r"no fixed-point kernel for problem 'conv2d': shift "
                                         r"must be .*0..31, not 40"):
        isa_body(CASES["conv"](), 40)


def test_emulation_catches_a_wrong_semantics():
    """The check can fail: a product rounded up instead of shifted down differs from the ISA."""
    problem = CASES["gemm"]()
    arrays = fixed_inputs(problem, np.random.default_rng(1), -8, 8)
    want = programs.run(problem, *arrays, shift=0)
    saved = HELPERS["merit_mac"]
    HELPERS["merit_mac"] = lambda a, b, c, s: _wrap(a + ((_sat(b) * _sat(c) + 1) >> s))
    try:
        got = emulate(problem, isa_body(problem, 0), arrays)
    finally:
        HELPERS["merit_mac"] = saved
    assert not np.array_equal(got, want)
