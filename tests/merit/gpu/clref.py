"""Brute-force references shared by the channels-last tests (``Tile.cl``, ``Tile.halo``): the
problem's spec at a precision, the channels-last copy of an array, and the element a transform
reads, computed from the problem's own definition (not from the generator's code)."""

import numpy as np

from merit.gpu.spec import spec_of


def spec_at(problem, prec):
    """The problem's spec with the operand dtype that precision ``prec`` reads."""
    return spec_of(problem, "float32", prec,
                   operands={"fp16": "float16", "bf16": "bfloat16"}.get(prec, "float32"))


def relaid(array, move):
    """``array`` as ``(outer, C, inner)`` copied to ``(outer, inner, Cp)``, channels zero-padded
    to ``Cp``, flattened: the channels-last copy the generated kernel reads."""
    outer, C, inner, Cp = move
    a = array.reshape(outer, C, inner).transpose(0, 2, 1)
    out = np.zeros((outer, inner, Cp), dtype=array.dtype)
    out[:, :, :C] = a
    return out.reshape(-1)


def value(tr, array, pos):
    """The element of ``array`` that transform ``tr`` reads at positions ``pos`` (p then a),
    zero outside the tensor (the problems' boundary is zero)."""
    idx = []
    for ax, n in enumerate(tr.source_shape):
        x = tr.offset[ax] + sum(s * pos[q] for q, s in tr.terms[ax])
        if not 0 <= x < n:
            return 0.0
        idx.append(x)
    return array[tuple(idx)]
