"""The GPU back end's view of a MERIT problem: transforms, extents and strategy text.

A :class:`Spec` is what the code generator specializes a kernel on: the extents of the parallel and
accumulation indices, how the accumulation indices group into levels, every operand's
:class:`merit.Transform` with the stage it is read in, the number of outputs, the element
type and the strategy's C bodies.  Array contents are not part of it.
"""

import hashlib
from dataclasses import dataclass, field

__all__ = ["Operand", "Spec", "DTYPES", "PRECISIONS", "OPERAND_DTYPES", "STAGES", "spec_of"]

DTYPES = ("float32", "int32")
#: Arithmetic of a float32 problem: exact fp32 on the SIMT cores, or tensor cores whose operands
#: are rounded to TF32, FP16 or BF16 (fp32 accumulation).
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
#: Element types the loop operands may have in memory: float32, or the tensor-core precision's
#: half type (read by the staged kernels as 2-byte elements, :attr:`merit.gpu.Tile.half`).
OPERAND_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
STAGES = ("pre", "loop", "post")


@dataclass(frozen=True)
class Operand:
    """One input tensor seen through its transform, read by the strategy in ``stage``.

    As in the golden model, a "pre" input is read with every index of the level being entered (and
    of the levels inside it) at its first value, a "post" input with them at their last value.
    """

    transform: object
    stage: str = "loop"

    @property
    def shape(self):
        return self.transform.source_shape

    @property
    def name(self):
        return self.transform.name

    def moves(self, pos):
        """Whether index ``pos`` of k = (p, a) moves this operand."""
        return any(p == pos for terms in self.transform.terms for p, _ in terms)

    def signature(self):
        t = self.transform
        return (t.source_shape, t.terms, t.offset, t.boundary, self.stage)


@dataclass(frozen=True)
class Spec:
    """A problem as the generator sees it.

    ``pshape`` / ``ashape``: extents of p and a (position ``len(pshape) + i`` of k is ``a[i]``).
    ``levels``: how many consecutive accumulation indices each level holds, outermost first.
    ``outputs``: the number of outputs; each has the shape ``pshape`` (C order).
    ``body``: the strategy's ``c_body`` (keys "state", "pre", "loop", "post").
    ``params``: ``(name, value)`` constants the bodies use.
    ``precision``: one of :data:`PRECISIONS` ("fp32" for int32 problems).
    ``operands``: the element type the caller's arrays have in memory: "float32", or for
    precision "fp16" / "bf16" "float16" / "bfloat16" (:data:`OPERAND_DTYPES`), which the staged
    tensor-core tiles with ``half`` read as they are (the other tiles get float32 copies).
    """

    name: str
    pshape: tuple
    ashape: tuple
    levels: tuple
    inputs: tuple
    outputs: int
    body: dict = field(hash=False, compare=False)
    dtype: str = "float32"
    out_dtype: str = "float32"
    params: tuple = ()
    precision: str = "fp32"
    operands: str = "float32"

    @property
    def np(self):
        return len(self.pshape)

    @property
    def na(self):
        return len(self.ashape)

    def key(self):
        """A string identifying the specialization (kernel names, the tile cache)."""
        cached = self.__dict__.get("_key")
        if cached is not None:
            return cached
        parts = [self.name, self.dtype, self.out_dtype, repr(self.pshape), repr(self.ashape),
                 repr(self.levels),
                 repr([op.signature() for op in self.inputs]),
                 repr(self.outputs),
                 repr(sorted((k, repr(v)) for k, v in self.body.items())), repr(self.params),
                 self.precision] + ([self.operands] if self.operands != "float32" else [])
        key = "|".join(parts)
        object.__setattr__(self, "_key", key)
        return key

    def digest(self):
        return hashlib.sha1(self.key().encode()).hexdigest()[:10]


def spec_of(problem, dtype, precision="fp32", fixed=None, operands="float32"):
    """The :class:`Spec` of a :class:`merit.Problem` computed in ``dtype`` ("float32"/"int32")
    with the arithmetic ``precision`` (one of :data:`PRECISIONS`; tensor cores need float32).

    ``fixed``: an output shift (0..31) to run the problem's MERIT-z program instead of the
    strategy's bodies, bit-exact with the ISA (:mod:`merit.gpu.fixed`; int32 only).
    """
    import numpy as np

    if dtype not in DTYPES:
        raise TypeError(f"merit.gpu computes in {' or '.join(DTYPES)}, not {dtype}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, "
                         f"not {precision!r}")
    if precision != "fp32" and dtype != "float32":
        raise ValueError(f"precision {precision!r} needs float32 arrays, not {dtype}")
    if operands != "float32" and operands != OPERAND_DTYPES.get(precision):
        want = OPERAND_DTYPES.get(precision)
        raise ValueError(f"{operands} operand arrays need precision "
                         f"{'fp16' if operands == 'float16' else 'bf16'!r}, not {precision!r}"
                         + (f" (precision {precision!r} takes float32 or {want} arrays)" if want
                            else f" (precision {precision!r} takes float32 arrays)"))
    strategy = problem.strategy
    odt = np.dtype(strategy.output_dtype(np.dtype(dtype)))
    out_dtype = "float32" if odt.kind == "f" else "int32"
    body = dict(strategy.c_body)
    if fixed is not None:
        from .fixed import isa_body

        if dtype != "int32":
            raise ValueError(f"fixed point runs in int32, not {dtype}")
        body, out_dtype = isa_body(problem, fixed), "int32"
    for key in ("state", "loop"):
        body.setdefault(key, "")
    for key in ("pre", "post"):
        value = body.get(key, [""] * len(problem.levels))
        body[key] = [value] if isinstance(value, str) else list(value)
        if len(body[key]) != len(problem.levels):
            raise ValueError(
                f"problem {problem.name!r}: c_body[{key!r}] has {len(body[key])} entries but the "
                f"strategy has {len(problem.levels)} accumulation levels")
    return Spec(name=problem.name, pshape=tuple(problem.p_shape), ashape=tuple(problem.a_shape),
                levels=tuple(problem.levels),
                inputs=tuple(Operand(op.transform, op.stage) for op in problem.operands),
                outputs=len(strategy.outputs), body=body, dtype=dtype, out_dtype=out_dtype,
                precision=precision, operands=operands)
