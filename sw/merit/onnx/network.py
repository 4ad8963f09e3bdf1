"""A loaded ONNX graph as a list of layers, each one or more MERIT problems, and how to run it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Layer", "Network", "Part", "UnsupportedOp"]


class UnsupportedOp(ValueError):
    """An ONNX node that the front end cannot map onto MERIT problems (and no host fallback)."""


@dataclass
class Part:
    """One MERIT problem of a layer and where each of its tensors comes from.

    ``bind`` maps every tensor of ``problem.tensors`` to ``("value", onnx_name)`` (a tensor of the
    graph, reshaped to the problem's view when the sizes agree), ``("const", array)`` (a weight),
    ``("part", k)`` (the result of part ``k`` of the same layer) or ``("pad", onnx_name, pads,
    value)`` (a graph tensor padded with a constant on the host first).

    ``meritz``: how MERIT-z runs it, ``[(problem, repeat)]``, when that differs from ``problem``
    (a grouped convolution runs one kernel per group: its group index does not fit a TAU).
    """

    problem: object
    bind: dict
    meritz: list | None = None


@dataclass
class Layer:
    """One or more fused ONNX nodes.

    Attributes
    ----------
    name : str
        The first node's name (or ``op_index`` when the node has none).
    op : str
        The fused node types, e.g. ``"Conv+BatchNormalization+Relu"``.
    kind : str
        ``"merit"`` (MERIT problems), ``"view"`` (a reshape of the same data: nothing runs),
        or ``"host"`` (numpy on the host: an op that no problem expresses, allowed by the user).
    inputs, outputs : tuple of str
        ONNX tensor names read and written.
    parts : list of Part
        For ``"merit"``: the problems, run in order.
    combine : callable
        ``combine(results) -> tuple of outputs`` from the parts' results (default: the last).
    fn : callable
        For ``"view"`` / ``"host"``: ``fn(*arrays) -> tuple of outputs``.
    shapes, dtypes : tuple
        Of each output.
    nodes : tuple of str
        Names of the ONNX nodes the layer stands for.
    note : str
        What the mapping did (folded BatchNormalization, host padding...).
    """

    name: str
    op: str
    kind: str
    inputs: tuple
    outputs: tuple
    shapes: tuple
    dtypes: tuple
    parts: list = field(default_factory=list)
    combine: object = None
    fn: object = None
    nodes: tuple = ()
    note: str = ""

    @property
    def problems(self):
        """The layer's MERIT problems."""
        return [p.problem for p in self.parts]

    @property
    def macs(self):
        """Inner-product steps of the layer (MACs for dot products)."""
        return sum(p.problem.steps for p in self.parts)


def _view(array, shape):
    array = np.asarray(array)
    if array.shape == tuple(shape):
        return array
    return array.reshape(shape)


def tensor_array(part, tensor, env, results):
    """The array of one tensor (a ``merit.problem.Tensor``) of ``part.problem`` from the graph
    values ``env`` and the results of the layer's earlier parts."""
    if tensor.value is not None and tensor.name not in part.bind:
        return np.asarray(tensor.value)
    src = part.bind[tensor.name]
    if src[0] == "value":
        a = env[src[1]]
    elif src[0] == "const":
        a = src[1]
    elif src[0] == "part":
        a = results[src[1]]
    elif src[0] == "pad":
        x = np.asarray(env[src[1]])
        fill = src[3] if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        a = np.pad(x, src[2], constant_values=fill)
    else:
        raise ValueError(f"unknown binding {src[0]!r} of tensor {tensor.name!r}")
    return _view(a, tensor.shape)


def part_arrays(part, env, results):
    """The arrays of ``part.problem.tensors`` (see :func:`tensor_array`)."""
    return [tensor_array(part, t, env, results) for t in part.problem.tensors]


class Network:
    """A loaded ONNX model: layers in execution order (from :func:`merit.onnx.load`).

    Attributes
    ----------
    layers : list of Layer
    inputs : dict
        Graph input name -> (shape, dtype).
    outputs : tuple of str
        Graph output names.
    constants : dict
        Name -> array of the initializers and folded constants the layers may read.
    folded : list of str
        Nodes evaluated at load time (constant subgraphs, BatchNormalization folded into a
        convolution).
    """

    def __init__(self, layers, inputs, outputs, constants, folded, model=None):
        self.layers = list(layers)
        self.inputs = dict(inputs)
        self.outputs = tuple(outputs)
        self.constants = constants
        self.folded = list(folded)
        self.model = model

    @property
    def host_layers(self):
        """Layers run on the host (the report of an allowed fallback)."""
        return [ly for ly in self.layers if ly.kind == "host"]

    def layer(self, name):
        """The layer called ``name``; KeyError listing the names otherwise."""
        for ly in self.layers:
            if ly.name == name:
                return ly
        raise KeyError(f"no layer {name!r}; layers: {', '.join(ly.name for ly in self.layers)}")

    def _feeds(self, feeds):
        if not isinstance(feeds, dict):
            feeds = list(feeds) if isinstance(feeds, (list, tuple)) else [feeds]
            if len(feeds) != len(self.inputs):
                raise ValueError(f"the model takes {len(self.inputs)} inputs "
                                 f"({', '.join(self.inputs)}), got {len(feeds)}")
            feeds = dict(zip(self.inputs, feeds, strict=True))
        env = dict(self.constants)
        for name, (shape, dtype) in self.inputs.items():
            if name not in feeds:
                raise ValueError(f"missing input {name!r} (shape {shape}, {dtype})")
            a = np.asarray(feeds[name])
            if a.shape != tuple(shape):
                raise ValueError(f"input {name!r} has shape {a.shape}, the network was loaded "
                                 f"for {tuple(shape)}")
            env[name] = a.astype(dtype, copy=False)
        return env

    def run(self, feeds, *, runner=None, keep=False, on_layer=None):
        """Run the network; returns the graph outputs as a list (graph order).

        Parameters
        ----------
        feeds : dict or sequence of ndarray
            One array per graph input (by name, or in order).
        runner : callable, optional
            ``runner(problem, arrays) -> result`` executes one problem; default: the golden
            model (``problem.run``).
        keep : bool
            Return ``(outputs, values)`` with every intermediate tensor too.
        on_layer : callable, optional
            Called as ``on_layer(layer, outputs)`` after each layer.
        """
        runner = runner or (lambda problem, arrays: problem.run(*arrays))
        env = self._feeds(feeds)
        for ly in self.layers:
            outs = run_layer(ly, env, runner)
            for name, value in zip(ly.outputs, outs, strict=True):
                env[name] = value
            if on_layer is not None:
                on_layer(ly, outs)
        result = [env[name] for name in self.outputs]
        return (result, env) if keep else result


def run_layer(layer, env, runner):
    """The outputs of one layer (a tuple), cast to the layer's output dtypes."""
    if layer.kind == "merit":
        results = []
        for part in layer.parts:
            results.append(runner(part.problem, part_arrays(part, env, results)))
        outs = layer.combine(results) if layer.combine is not None else (results[-1],)
    else:
        outs = layer.fn(*[env[n] for n in layer.inputs])
    final = []
    for value, shape, dtype in zip(outs, layer.shapes, layer.dtypes, strict=True):
        value = np.asarray(value)
        if value.dtype != dtype:
            value = value.astype(dtype)
        final.append(_view(value, shape))
    return tuple(final)
