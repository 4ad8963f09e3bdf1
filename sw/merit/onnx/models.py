"""The whole networks that the ``onnx`` wheel ships (``onnx/backend/test/data/light``), with
seeded random weights.

The wheel's "light" models keep the graph of each network but replace every weight by a
placeholder (``ConstantOfShape`` of its shape, or a constant initializer). :func:`light_model`
puts seeded random values in every one of them (He initialization, so that activations keep
their scale through the ReLUs), so that two runtimes can be compared on real arithmetic.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["LIGHT", "light_model", "light_path"]

#: The networks of the wheel's ``light`` folder.
LIGHT = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
         "squeezenet", "vgg19", "zfnet512")


def light_path(name):
    """Path of ``light_<name>.onnx`` in the installed onnx package."""
    import onnx
    if name not in LIGHT:
        raise ValueError(f"unknown light model {name!r}; expected one of {', '.join(LIGHT)}")
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / \
        f"light_{name}.onnx"


def _random(rng, shape, dtype):
    shape = tuple(int(v) for v in shape)
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:]))
        scale = np.sqrt(2.0 / fan_in)
    else:
        scale = 0.1
    return (rng.standard_normal(shape) * scale).astype(dtype)


def light_model(name, seed=0, batch=1):
    """The light model ``name`` with every placeholder weight set to seeded random values.

    ``batch`` sets the batch size of the input (and of the constant target shapes of the
    ``Reshape`` nodes that flatten a batch-1 tensor). Returns an ``onnx.ModelProto`` whose
    weights are initializers (not graph inputs); the same seed gives the same weights whatever
    the batch.
    """
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.load(str(light_path(name)))
    graph = model.graph
    rng = np.random.default_rng(seed)
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    weights = {}
    keep_nodes = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            value = next((helper.get_attribute_value(a) for a in node.attribute
                          if a.name == "value"), None)
            dtype = numpy_helper.to_array(value).dtype if value is not None else np.float32
            if dtype.kind == "f":
                weights[node.output[0]] = _random(rng, inits[node.input[0]], dtype)
                continue
        keep_nodes.append(node)
    used = {n for node in keep_nodes for n in node.input}
    new_inits = []
    for name_, value in inits.items():
        if name_ not in used:
            continue
        if value.dtype.kind == "f":
            value = _random(rng, value.shape, value.dtype)
        elif batch != 1 and any(n.op_type == "Reshape" and n.input[1] == name_
                                for n in keep_nodes) and value.ndim == 1 and value[0] == 1:
            value = value.copy()
            value[0] = batch
        new_inits.append(numpy_helper.from_array(value, name_))
    new_inits += [numpy_helper.from_array(v, k) for k, v in weights.items()]
    init_names = {i.name for i in new_inits}
    inputs = [vi for vi in graph.input if vi.name not in init_names and vi.name in used]
    if batch != 1:
        for vi in inputs:
            vi.type.tensor_type.shape.dim[0].dim_value = batch
    new_graph = helper.make_graph(keep_nodes, graph.name, inputs, list(graph.output),
                                  initializer=new_inits)
    out = helper.make_model(new_graph, opset_imports=list(model.opset_import))
    out.ir_version = model.ir_version
    return out
