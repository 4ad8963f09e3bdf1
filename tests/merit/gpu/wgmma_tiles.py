"""Persistent wgmma tiles of the CPU tests of the staged epilogue, the held sums and the skewed
warpgroups: their box shapes, the half-precision specs and one tile builder."""

from merit.gpu.spec import OPERAND_DTYPES, spec_of
from merit.gpu.tiling import check_tile

#: Box shapes by name: the tile's registers, its warps and their fragments.
SHAPES = {
    "b128x256": {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)},
    "b128x128": {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)},
    "b64x64": {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)},
    "b128x128w2": {"regs": (128, 128), "warps": (8, 2), "frags": (1, 8)},
}


def half_spec(problem, prec="fp16"):
    """``problem`` with fp32 results and ``prec`` operands."""
    return spec_of(problem, "float32", prec, operands=OPERAND_DTYPES[prec])


def persistent_tile(spec, shape="b128x256", **kw):
    """A checked persistent wgmma tile of ``shape`` (132 blocks, a TMA producer, BK 64 and 4
    buffers, 2 staging buffers; half precision: ``half`` and ``mn``, TF32: BK 32), with ``kw``
    over those fields."""
    f = dict(SHAPES[shape], mma=spec.precision, ldsm=True, wgmma=True, chunk=64, stages=4,
             producer=True, tma=True, persist=132, epi=2)
    if spec.precision != "tf32":
        f.update(half=True, mn=True)
    else:
        f.update(chunk=32)
    f.update(kw)
    return check_tile(spec, f)
