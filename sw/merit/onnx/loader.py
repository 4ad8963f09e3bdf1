"""Load an ONNX model into a :class:`~merit.onnx.network.Network` of MERIT problems.

Constant subgraphs (every input a constant, ``Shape`` of a tensor of known shape) are evaluated
at load time by ONNX's reference implementation; BatchNormalization after a convolution is folded
into its weights and bias; a ReLU after a convolution or GEMM is fused into its PostLoop.
"""

from __future__ import annotations

import numpy as np

from .network import Layer, Network, UnsupportedOp
from .ops import OPS, Context

__all__ = ["load"]


def _onnx():
    try:
        import onnx
    except ImportError as exc:       # pragma: no cover - installed by make setup
        raise ImportError(f"merit.onnx needs the onnx package ({exc}); run 'make setup'") \
            from None
    return onnx


def _attrs(node):
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _np_dtype(elem_type):
    from onnx import helper
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def _static_shape(value_info, overrides, name):
    if name in overrides:
        return tuple(int(v) for v in overrides[name])
    dims = value_info.type.tensor_type.shape.dim
    shape = []
    for d in dims:
        if d.HasField("dim_value") and d.dim_value > 0:
            shape.append(int(d.dim_value))
        else:
            shape.append(1)         # a symbolic (batch) dimension: 1 unless the caller says
    return tuple(shape)


def _evaluate(node, inputs, opset):
    """Run one node on the host with ONNX's reference implementation."""
    onnx = _onnx()
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    graph_inputs = []
    feeds = {}
    for name, value in zip(node.input, inputs, strict=True):
        if not name:
            continue
        value = np.asarray(value)
        graph_inputs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape))
        feeds[name] = value
    outputs = [helper.make_value_info(n, onnx.TypeProto()) for n in node.output if n]
    graph = helper.make_graph([node], "node", graph_inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    del numpy_helper
    result = ReferenceEvaluator(model).run(None, feeds)
    return [np.asarray(r) for r in result]


def load(model, *, input_shapes=None, fallback=False, fuse=True, constants=None):
    """Map an ONNX model onto MERIT problems.

    Parameters
    ----------
    model : str, path or onnx.ModelProto
    input_shapes : dict, optional
        Graph input name -> shape, for inputs with symbolic dimensions (default: 1 for every
        symbolic dimension).
    fallback : bool
        Run ops that no MERIT problem expresses on the host (ONNX's numpy reference) instead of
        raising :class:`UnsupportedOp`; ``Network.host_layers`` lists them.
    fuse : bool
        Fold BatchNormalization into a preceding convolution and fuse a following ReLU.
    constants : dict, optional
        Graph input name -> value: inputs fixed at load time (a target shape, clip bounds).

    Returns
    -------
    Network
    """
    onnx = _onnx()
    from onnx import numpy_helper
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    overrides = dict(input_shapes or {})
    consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    names = {vi.name for vi in graph.input}
    for name, value in (constants or {}).items():
        if name not in names:
            raise ValueError(f"constants names {name!r}, which is not a graph input "
                             f"({', '.join(sorted(names))})")
        consts[name] = np.asarray(value)
    shapes, dtypes = {}, {}
    for name, value in consts.items():
        shapes[name], dtypes[name] = value.shape, value.dtype
    inputs = {}
    for vi in graph.input:
        if vi.name in consts:
            continue
        shape = _static_shape(vi, overrides, vi.name)
        dtype = _np_dtype(vi.type.tensor_type.elem_type)
        inputs[vi.name] = (shape, dtype)
        shapes[vi.name], dtypes[vi.name] = shape, dtype
    unknown = set(overrides) - set(inputs)
    if unknown:
        raise ValueError(f"input_shapes names {sorted(unknown)}, which are not graph inputs "
                         f"({', '.join(inputs)})")
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    graph_outputs = [o.name for o in graph.output]
    ctx = Context(consts=consts, shapes=shapes, dtypes=dtypes, opset=opset,
                  consumers=consumers, graph_outputs=set(graph_outputs), fuse=fuse)
    layers, folded = [], []
    skip = set()
    for index, node in enumerate(graph.node):
        if id(node) in skip:
            continue
        attrs = _attrs(node)
        name = node.name or f"{node.op_type}_{index}"
        live = [n for n in node.input if n]
        if node.op_type == "Constant":
            (value,) = _evaluate(node, [], opset)
            ctx.set_const(node.output[0], value)
            folded.append(name)
            continue
        if node.op_type in ("Shape", "Size") and all(n in shapes for n in live):
            ctx.set_const(node.output[0], _evaluate(
                node, [np.zeros(shapes[n], dtypes[n]) for n in node.input if n], opset)[0])
            folded.append(name)
            continue
        if (live and all(n in ctx.consts for n in live) and node.op_type not in _RANDOM):
            values = _evaluate(node, [ctx.consts.get(n) if n else None for n in node.input],
                               opset)
            for out, value in zip(node.output, values, strict=False):
                if out:
                    ctx.set_const(out, value)
            folded.append(name)
            continue
        mapper = OPS.get(node.op_type)
        made = None
        if mapper is not None:
            made = mapper(ctx, node, attrs, name)
        if made is None:
            if not fallback:
                described = ", ".join(f"{k}={v!r}" for k, v in sorted(attrs.items())) or "none"
                why = ctx.why or ("the op has no MERIT mapping" if mapper is None else "")
                raise UnsupportedOp(
                    f"node {name!r}: op {node.op_type} (attributes: {described}; inputs "
                    f"{[shapes.get(n) for n in live]}) cannot be mapped onto MERIT problems: "
                    f"{why}; load(..., fallback=True) runs it on the host")
            made = _host_layer(ctx, node, name, opset, graph)
        ctx.why = None
        for node_done in made.pop("absorbed", []):
            skip.add(id(node_done))
        folded.extend(made.get("folded", []))
        layer = made["layer"]
        for out, shape, dtype in zip(layer.outputs, layer.shapes, layer.dtypes, strict=True):
            shapes[out], dtypes[out] = tuple(shape), np.dtype(dtype)
        layers.append(layer)
    for out in graph_outputs:
        if out in ctx.consts and out not in shapes:
            shapes[out] = ctx.consts[out].shape
    return Network(layers, inputs, graph_outputs, dict(ctx.consts), folded, model=model)


#: Ops never folded at load time (their result is random or depends on a seed).
_RANDOM = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
           "Multinomial", "Bernoulli", "Dropout"}


def _host_layer(ctx, node, name, opset, graph):
    """A layer running ``node`` through ONNX's reference implementation on the host."""
    live = [n for n in node.input]
    samples = [np.zeros(ctx.shapes[n], ctx.dtypes[n]) if n in ctx.shapes and n not in ctx.consts
               else ctx.consts.get(n) for n in live]
    missing = [n for n in live if n and n not in ctx.shapes]
    if missing:
        raise UnsupportedOp(f"node {name!r}: op {node.op_type} reads {missing}, whose shapes "
                            f"are unknown")
    sample_out = _evaluate(node, samples, opset)
    outs = [n for n in node.output if n]
    consts = ctx.consts

    def fn(*arrays):
        it = iter(arrays)
        values = [consts[n] if n in consts else (next(it) if n else None) for n in live]
        return tuple(_evaluate(node, values, opset)[:len(outs)])

    runtime_inputs = tuple(n for n in live if n and n not in consts)
    layer = Layer(name, node.op_type, "host", runtime_inputs, tuple(outs),
                  tuple(v.shape for v in sample_out[:len(outs)]),
                  tuple(v.dtype for v in sample_out[:len(outs)]), fn=fn, nodes=(name,),
                  note="host fallback (ONNX reference implementation)")
    return {"layer": layer}
