"""``Problem``: the portable description of one MERIT kernel that every back end consumes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .execute import execute, split_levels
from .strategies import Strategy
from .transform import Transform, _as_shape

__all__ = ["Operand", "Ops", "Output", "Problem", "Tensor", "run_problems"]


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

    **Affine output map** (``pitch``, ``offset``): the result element at parallel coordinate
    ``p`` is element ``offset + sum_j p_j * pitch[j]`` of the dense row-major tensor ``shape``,
    which several problems may write in disjoint parts (the phases of a transposed convolution,
    :func:`merit.workloads.deconv2d_phases`). The problem's result is then its ``p_shape``
    array; :meth:`place` writes it into the whole tensor. On MERIT-z it is the WP's address
    (``out_base`` + 2 x ``offset``, ``out_pitch`` = ``pitch``), so every output of a problem has
    the same ``pitch``. Pitches are >= 0 and the map must not send two coordinates to one
    element (checked by :class:`Problem`).
    """

    name: str
    shape: tuple
    reshape: tuple | None = None
    crop: tuple | None = None
    pitch: tuple | None = None
    offset: int = 0

    def __post_init__(self):
        if self.pitch is None:
            if self.offset != 0:
                raise ValueError(f"output {self.name!r}: offset {self.offset} needs a pitch "
                                 f"(the affine output map)")
            return
        if self.reshape is not None or self.crop is not None:
            raise ValueError(f"output {self.name!r}: an affine output map (pitch) takes no "
                             f"reshape or crop")
        pitch = tuple(self.pitch)
        for j, v in enumerate(pitch):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"output {self.name!r}: pitch[{j}] must be an integer >= 0, "
                                 f"not {v!r}")
        off = self.offset
        if isinstance(off, bool) or not isinstance(off, (int, np.integer)) or off < 0:
            raise ValueError(f"output {self.name!r}: offset must be an integer >= 0, not {off!r}")
        object.__setattr__(self, "pitch", tuple(int(v) for v in pitch))
        object.__setattr__(self, "offset", int(off))
        object.__setattr__(self, "shape", tuple(int(v) for v in self.shape))

    def __getstate__(self):
        # an output without an affine map pickles as it did before the map existed (the
        # benches identify a run by its problem's pickle): pitch / offset only when set
        state = dict(self.__dict__)
        if self.pitch is None:
            state.pop("pitch", None)
            state.pop("offset", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update({"pitch": None, "offset": 0, **state})

    @property
    def affine(self):
        """Whether this output is an affine map into a larger tensor (``pitch`` given)."""
        return self.pitch is not None

    def check_map(self, p_shape, where=""):
        """ValueError unless the affine map of ``p_shape`` stays inside ``shape`` and sends no
        two coordinates to one element (sufficient test: the pitches of the indices that move,
        sorted, each exceed the span of the ones below)."""
        if len(self.pitch) != len(p_shape):
            raise ValueError(f"{where}output {self.name!r}: pitch has {len(self.pitch)} entries, "
                             f"the parallel space {len(p_shape)} ({tuple(p_shape)})")
        size = math.prod(self.shape)
        last = self.offset + sum((n - 1) * v for n, v in zip(p_shape, self.pitch, strict=True))
        if last >= size:
            raise ValueError(f"{where}output {self.name!r}: the map reaches element {last} of "
                             f"tensor {self.shape} ({size} elements); expected below {size}")
        span = 0
        for v, n in sorted((v, n) for v, n in zip(self.pitch, p_shape, strict=True) if n > 1):
            if v <= span:
                raise ValueError(f"{where}output {self.name!r}: pitches {self.pitch} over "
                                 f"p_shape {tuple(p_shape)} overlap: pitch {v} must exceed "
                                 f"{span}, the span of the smaller pitches")
            span += (n - 1) * v

    def indices(self, p_shape):
        """Flat element of ``shape`` of every parallel coordinate (an array of ``p_shape``)."""
        if not self.affine:
            return np.arange(math.prod(p_shape)).reshape(p_shape)
        grid = np.indices(tuple(p_shape), dtype=np.int64)
        return self.offset + np.tensordot(np.asarray(self.pitch, dtype=np.int64), grid, axes=1)

    def finish(self, result):
        """The user-visible view of a ``p_shape`` result (an affine output: the result)."""
        if self.reshape is not None:
            result = result.reshape(self.reshape)
        if self.crop is not None:
            result = result[self.crop]
        return result

    def place(self, result, into):
        """Write a ``p_shape`` result of an affine output into ``into`` (the whole tensor,
        ``shape``) at its elements; returns ``into``."""
        if not self.affine:
            raise ValueError(f"output {self.name!r} has no affine map (pitch)")
        if tuple(into.shape) != self.shape:
            raise ValueError(f"output {self.name!r}: tensor of shape {tuple(into.shape)}, "
                             f"expected {self.shape}")
        into.reshape(-1)[self.indices(np.shape(result)).reshape(-1)] = np.asarray(
            result).reshape(-1)
        return into


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
            if not isinstance(o, Output):
                raise TypeError(f"problem {name!r}: outputs must be Outputs, not {o!r}")
            if o.reshape is not None and math.prod(o.reshape) != lanes:
                raise ValueError(f"problem {name!r}: output {o.name!r} reshapes p_shape "
                                 f"{self.p_shape} to {o.reshape}, which has a different size")
            if o.affine:
                o.check_map(self.p_shape, where=f"problem {name!r}: ")
        pitches = {o.pitch for o in self.outputs if o.affine}
        if pitches and (len(pitches) > 1 or len(pitches) != len(
                {o.affine for o in self.outputs})):
            raise ValueError(f"problem {name!r}: every output must have the same pitch (the "
                             f"processor has one out_pitch), got "
                             f"{[o.pitch for o in self.outputs]}")

    def notation(self):
        """One line per operand in the paper's notation, e.g. ``M(I) = I[a0, p1 + a1]``."""
        return "\n".join(f"M({op.tensor}) = {op.transform.notation()}  ({op.stage})"
                          for op in self.operands)

    def __repr__(self):
        return (f"Problem({self.name!r}, {self.strategy!r}, p_shape={self.p_shape}, "
                f"a_shape={self.a_shape}, tensors={[t.name for t in self.tensors]})")

    @property
    def out_pitch(self):
        """Element pitch of each parallel index in the output tensors: the outputs' affine
        map, or dense row-major over ``p_shape``."""
        for o in self.outputs:
            if o.affine:
                return o.pitch
        pitch = [1]
        for n in reversed(self.p_shape[1:]):
            pitch.insert(0, pitch[0] * n)
        return tuple(pitch)

    def out_elements(self, k=0):
        """Elements of the DRAM tensor of output ``k``: its ``shape`` for an affine map, else
        ``p_shape``'s (the back end writes the dense result)."""
        o = self.outputs[k]
        return math.prod(o.shape) if o.affine else math.prod(self.p_shape)

    def out_offset(self, k=0):
        """Element offset of output ``k``'s parallel origin in its DRAM tensor."""
        return self.outputs[k].offset

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


def run_problems(problems, tensors, dtype=None):
    """Run a sequence of problems on the golden model and assemble their outputs.

    ``tensors``: name -> array of every tensor the problems read. Returns name -> array of every
    output: an affine output (:class:`Output` ``pitch``) is placed into a tensor of its
    ``shape`` shared by the problems that write it (zeros where none does; each element
    written at most once, else ValueError); any other output is the problem's finished result.
    """
    out, written = {}, {}
    for problem in problems:
        missing = [t.name for t in problem.tensors if t.name not in tensors]
        if missing:
            raise ValueError(f"problem {problem.name!r} reads {missing}, not among the tensors "
                             f"given ({sorted(tensors)})")
        res = problem.run(*(tensors[t.name] for t in problem.tensors))
        res = res if isinstance(res, tuple) else (res,)
        for o, r in zip(problem.outputs, res, strict=True):
            if not o.affine:
                out[o.name] = r
                continue
            whole = out.setdefault(o.name, np.zeros(o.shape, dtype=dtype or r.dtype))
            count = written.setdefault(o.name, np.zeros(o.shape, dtype=np.int64))
            if whole.shape != o.shape:
                raise ValueError(f"output {o.name!r} is written with shapes {whole.shape} and "
                                 f"{o.shape}")
            o.place(r, whole)
            count.reshape(-1)[o.indices(problem.p_shape).reshape(-1)] += 1
            if count.max() > 1:
                raise ValueError(f"output {o.name!r}: problem {problem.name!r} writes elements "
                                 f"another problem wrote")
    return out
