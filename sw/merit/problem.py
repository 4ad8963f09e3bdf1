"""``Problem``: the portable description of one MERIT kernel that every back end consumes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .execute import execute, split_levels
from .strategies import Strategy
from .transform import Transform, _as_shape

__all__ = ["Operand", "Ops", "Output", "Problem", "Tensor"]


@dataclass(frozen=True)
class Tensor:
    """A source tensor in DRAM.

    ``value`` is set for a tensor that is part of the workload's definition (e.g. the spatial
    weights of a bilateral filter): ``random_inputs`` returns it instead of random data.
    """

    name: str
    shape: tuple
    value: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Operand:
    """One input of the strategy: the tensor it reads, through which transform, in which stage."""

    tensor: str
    transform: Transform
    stage: str


@dataclass(frozen=True)
class Output:
    """One output.  The back end computes an array of ``p_shape``; the user sees
    ``result.reshape(reshape)[crop]`` of shape ``shape`` (``reshape``/``crop`` may be ``None``).
    """

    name: str
    shape: tuple
    reshape: tuple | None = None
    crop: tuple | None = None

    def finish(self, result):
        """The user-visible view of a ``p_shape`` result."""
        if self.reshape is not None:
            result = result.reshape(self.reshape)
        if self.crop is not None:
            result = result[self.crop]
        return result


@dataclass(frozen=True)
class Ops:
    """A layer's standard arithmetic count, as the field counts it, independent of any program.

    ``count`` operations of kind ``unit``: MACs of a convolution / GEMM as frameworks define them
    (every tap of the kernel, padded taps included), one compare per pooled element, one add per
    summed term. Utilization is ``count / (cycles x ALUs)``.
    """

    count: int
    unit: str

    def __post_init__(self):
        if isinstance(self.count, bool) or not isinstance(self.count, (int, np.integer)):
            raise TypeError(f"Ops count must be an integer, not {self.count!r}")
        if self.count < 0:
            raise ValueError(f"Ops count must be >= 0, not {self.count}")
        object.__setattr__(self, "count", int(self.count))


class Problem:
    """One kernel: parallel/accumulation space, strategy, operands, outputs.

    Parameters
    ----------
    name : str
    strategy : Strategy
    p_shape, a_shape : sequence of int
    operands : sequence of Transform
        One per strategy input, in the strategy's order; the transform's ``name`` is the tensor it
        reads (two operands may read one tensor, e.g. the bilateral centre pixel and neighbours).
        An unnamed transform reads a tensor of its own, called ``in<position>``.
    levels : sequence of int, optional
        Accumulation indices per level, outermost first (required when ``strategy.levels > 1``).
    outputs : sequence of Output, optional
        Default: one per strategy output, of shape ``p_shape``.
    values : dict, optional
        Fixed contents of tensors that belong to the definition (name -> array).
    ops : Ops, optional
        The standard arithmetic count of the layer (set by :mod:`merit.workloads`).

    Attributes
    ----------
    name, strategy, p_shape, a_shape, levels, operands (tuple of Operand),
    tensors (tuple of Tensor, in order of first use), outputs (tuple of Output), ops (Ops or None).
    """

    def __init__(self, name, strategy, p_shape, a_shape, operands, *, levels=None, outputs=None,
                 values=None, ops=None):
        if ops is not None and not isinstance(ops, Ops):
            raise TypeError(f"problem {name!r}: ops must be an Ops, not {ops!r}")
        self.ops = ops
        if not isinstance(strategy, Strategy):
            raise TypeError(f"problem {name!r}: strategy must be a Strategy, not {strategy!r}")
        self.name = name
        self.strategy = strategy
        self.p_shape = _as_shape(p_shape, "p_shape")
        self.a_shape = _as_shape(a_shape, "a_shape")
        self.levels = split_levels(levels, self.a_shape, strategy.levels)
        operands = tuple(operands)
        if len(operands) != len(strategy.inputs):
            raise ValueError(
                f"problem {name!r}: {strategy!r} reads {len(strategy.inputs)} inputs "
                f"({', '.join(i.name for i in strategy.inputs)}), got {len(operands)} transforms")
        values = dict(values or {})
        shapes = {}
        tensor_names = []
        for pos, tr in enumerate(operands):
            if not isinstance(tr, Transform):
                raise TypeError(f"problem {name!r}: operands must be Transforms, not {tr!r}")
            tr.check_shapes(self.p_shape, self.a_shape)
            tname = tr.name if tr.named else f"in{pos}"
            if shapes.setdefault(tname, tr.source_shape) != tr.source_shape:
                raise ValueError(
                    f"problem {name!r}: tensor {tname!r} is read with shapes "
                    f"{shapes[tname]} and {tr.source_shape}")
            tensor_names.append(tname)
        self.operands = tuple(Operand(t, tr, inp.stage) for t, tr, inp
                              in zip(tensor_names, operands, strategy.inputs, strict=True))
        for key, v in values.items():
            if key not in shapes:
                raise ValueError(f"problem {name!r}: value given for unknown tensor {key!r}")
            if np.shape(v) != shapes[key]:
                raise ValueError(f"problem {name!r}: value of tensor {key!r} has shape "
                                 f"{np.shape(v)}, expected {shapes[key]}")
        self.tensors = tuple(Tensor(n, s, values.get(n)) for n, s in shapes.items())
        if outputs is None:
            outputs = [Output(n, self.p_shape) for n in strategy.outputs]
        self.outputs = tuple(outputs)
        if len(self.outputs) != len(strategy.outputs):
            raise ValueError(f"problem {name!r}: {len(self.outputs)} outputs given, "
                             f"{strategy!r} has {len(strategy.outputs)}")
        lanes = math.prod(self.p_shape)
        for o in self.outputs:
            if o.reshape is not None and math.prod(o.reshape) != lanes:
                raise ValueError(f"problem {name!r}: output {o.name!r} reshapes p_shape "
                                 f"{self.p_shape} to {o.reshape}, which has a different size")

    def notation(self):
        """One line per operand in the paper's notation, e.g. ``M(I) = I[a0, p1 + a1]``."""
        return "\n".join(f"M({op.tensor}) = {op.transform.notation()}  ({op.stage})"
                          for op in self.operands)

    def __repr__(self):
        return (f"Problem({self.name!r}, {self.strategy!r}, p_shape={self.p_shape}, "
                f"a_shape={self.a_shape}, tensors={[t.name for t in self.tensors]})")

    @property
    def steps(self):
        """Inner-product steps: lanes x accumulation steps (MACs for a dot product)."""
        return math.prod(self.p_shape) * math.prod(self.a_shape)

    def run(self, *arrays):
        """Execute on the golden model; one array per tensor (``self.tensors`` order).

        Returns one array per output (a tuple when there are several), in the outputs' shapes.
        """
        if len(arrays) != len(self.tensors):
            raise ValueError(
                f"problem {self.name!r} takes {len(self.tensors)} arrays "
                f"({', '.join(t.name for t in self.tensors)}), got {len(arrays)}")
        by_name = {t.name: a for t, a in zip(self.tensors, arrays, strict=True)}
        res = execute(self.strategy, self.p_shape, self.a_shape,
                      [(by_name[op.tensor], op.transform) for op in self.operands],
                      levels=self.levels)
        res = res if isinstance(res, tuple) else (res,)
        out = tuple(o.finish(r) for o, r in zip(self.outputs, res, strict=True))
        return out[0] if len(out) == 1 else out

    def random_inputs(self, rng, dtype=np.float32, low=-8, high=8):
        """Test data: one array per tensor; normal floats, or integers in ``[low, high)``.

        Tensors with a fixed value get it (cast to ``dtype``).
        """
        dtype = np.dtype(dtype)
        out = []
        for t in self.tensors:
            if t.value is not None:
                out.append(np.asarray(t.value).astype(dtype))
            elif dtype.kind == "f":
                out.append(rng.standard_normal(t.shape).astype(dtype))
            elif dtype.kind in "iu":
                out.append(rng.integers(low, high, size=t.shape).astype(dtype))
            else:
                raise TypeError(f"random_inputs: dtype must be integer or floating, not {dtype}")
        return out
