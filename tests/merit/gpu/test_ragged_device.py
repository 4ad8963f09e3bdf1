"""The padded-row form read from the unpadded rows inside the kernel (``Tile.ragged`` 1 and 2,
each with its pieces read word by word and from aligned pairs, ``codegen.RAGGED_PAIRS``) on a
CUDA device: the same outputs, bit for bit (split-K tiles: to rounding, their atomic adds having
no fixed order), as the padded form with its copies, on NaN-poisoned outputs, and against a
float64 reference from the golden model; ragged GEMMs, convolutions whose padding reads before
a row's start and past its end, a 1 x 1 convolution's product form, split-K; an array not on 16
bytes, read by the word form and refused by the pairs' launcher.  Skipped without CuPy or a GPU."""

import dataclasses

import numpy as np
import pytest
from gpu_cases import device_module

from merit import workloads as W
from merit.gpu import _compile_all, codegen, run, runtime, tiling
from merit.gpu.spec import spec_of

cp, pytestmark = device_module()

CASES = [
    (W.gemm(139, 75, 211), {"threads": (16, 8), "regs": (7, 8), "chunk": 32, "double": True,
                            "strided": (0, 4), "lean": True, "vread": True, "forder": 1,
                            "ptxas": 1}),
    (W.gemm(139, 75, 211), {"threads": (8, 8), "regs": (4, 4), "chunk": 16}),
    (W.gemm(139, 75, 211), {"threads": (8, 8), "regs": (4, 4), "chunk": 16, "split": 3}),
    (W.gemm(333, 201, 999), {"threads": (16, 16), "regs": (8, 8), "chunk": 32, "double": True,
                             "lean": True, "vread": True}),
    (W.conv2d(3, 21, 23, 29, 17, 3, padding=1),
     {"threads": (1, 4, 4, 8), "regs": (1, 4, 2, 2), "chunk": 4, "double": True}),
    (W.conv2d(2, 9, 13, 41, 11, 7, padding=1),
     {"threads": (2, 16, 2, 5), "regs": (1, 1, 4, 8), "chunk": 4, "double": True,
      "lean": True, "vread": True}),
    (W.conv2d(2, 5, 19, 27, 8, 5, stride=2, padding=2),
     {"threads": (1, 8, 4, 4), "regs": (1, 1, 2, 4), "chunk": 1, "double": True,
      "lean": True}),
    (W.conv2d(4, 37, 9, 17, 70, 1),
     {"threads": (2, 16, 8), "regs": (1, 4, 4), "chunk": 32, "unroll": 1, "lean": True,
      "vread": True, "flat": True}),
]


def _launch(prob, spec, tile, arrays):
    out = (cp.full(spec.pshape, np.nan, dtype=np.float32),)
    got = cp.asnumpy(run(prob, *arrays, tile=tile, out=out))
    assert not np.isnan(cp.asnumpy(out[0])).any(), f"unwritten outputs with {tile.label()}"
    return got


@pytest.mark.parametrize("case", range(len(CASES)))
def test_ragged_forms_equal_the_padded_form(case):
    prob, fields = CASES[case]
    spec = spec_of(prob, "float32")
    rng = np.random.default_rng(100 + case)
    arrays = prob.random_inputs(rng, np.float32)
    ref = prob.run(*[a.astype(np.float64) for a in arrays])
    padded = tiling.check_tile(spec, dict(fields, padrows=True))
    forms = []
    for form in (1, 2):
        try:
            forms.append(tiling.check_tile(spec, dict(fields, padrows=True, ragged=form)))
        except ValueError as exc:   # the staged form's registers: refused, not run
            assert form == 2 and "registers" in str(exc)
    assert forms
    _compile_all(spec, [padded])
    want = _launch(prob, spec, padded, arrays)
    err = np.linalg.norm(want - ref) / np.linalg.norm(ref)
    assert err < 1e-5, f"relative error {err:.2e} with {padded.label()}"
    same = np.testing.assert_array_equal if padded.split == 1 else (
        lambda a, b, err_msg: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5,
                                                         err_msg=err_msg))
    old = codegen.RAGGED_PAIRS
    try:
        for pairs in (False, True):
            codegen.RAGGED_PAIRS = pairs
            runtime.forget()
            for t in forms:
                got = _launch(prob, spec, t, arrays)
                same(got, want, err_msg=f"{t.label()} pairs={pairs}")
    finally:
        codegen.RAGGED_PAIRS = old
        runtime.forget()


def test_array_off_16_bytes_read_by_words_refused_by_pairs():
    """An array starting 4 bytes past an aligned address: the word form reads it (the same sums
    as the padded form's copies of it); the pairs' launcher refuses it."""
    prob, fields = CASES[1]
    spec = spec_of(prob, "float32")
    t = tiling.check_tile(spec, dict(fields, padrows=True, ragged=1))
    a, b = prob.random_inputs(np.random.default_rng(3), np.float32)
    whole = cp.asarray(np.concatenate([[0.0], a.ravel()]).astype(np.float32))
    off = whole[1:].reshape(a.shape)   # C-contiguous, 4 bytes past an aligned start
    assert off.data.ptr % 16 and off.flags.c_contiguous
    bb = cp.asarray(b)
    want = _launch(prob, spec, dataclasses.replace(t, ragged=0), (off, bb))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(want - ref) / np.linalg.norm(ref) < 1e-5
    old = codegen.RAGGED_PAIRS
    try:
        codegen.RAGGED_PAIRS = False
        runtime.forget()
        np.testing.assert_array_equal(_launch(prob, spec, t, (off, bb)), want)
        codegen.RAGGED_PAIRS = True
        runtime.forget()
        out = (cp.empty(spec.pshape, dtype=np.float32),)
        with pytest.raises(ValueError, match="16 bytes"):
            runtime.launcher(spec, t, [off, bb], out)
    finally:
        codegen.RAGGED_PAIRS = old
        runtime.forget()
