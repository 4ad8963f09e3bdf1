"""An ONNX backend (``onnx.backend.base.Backend``) that runs models on MERIT's golden model.

The usual module-level entry points::

    rep = merit.onnx.backend.prepare(model, device="CPU")
    outputs = rep.run([x])
    outputs = merit.onnx.backend.run_model(model, [x])

``prepare`` maps the graph onto MERIT problems once (:func:`merit.onnx.load`); a run with inputs
of other shapes maps it again for those shapes. ``fallback=True`` runs unmappable ops on the host.
"""

from __future__ import annotations

import numpy as np
from onnx.backend.base import Backend, BackendRep

from .loader import load
from .ops import STATIC_INPUTS

__all__ = ["MeritBackend", "MeritRep", "prepare", "run_model", "run_node", "supports_device"]


class MeritRep(BackendRep):
    """A prepared model: :attr:`network` (the MERIT layers) and :meth:`run`."""

    def __init__(self, model, *, fallback=False, runner=None):
        self.model, self.fallback, self.runner = model, fallback, runner
        inits = {i.name for i in model.graph.initializer}
        self.graph_inputs = [vi.name for vi in model.graph.input if vi.name not in inits]
        self.static = set()
        for node in model.graph.node:
            for pos in STATIC_INPUTS.get(node.op_type, ()):
                if pos < len(node.input) and node.input[pos] in self.graph_inputs:
                    self.static.add(node.input[pos])
        self.network = None if self.static else load(model, fallback=fallback)
        self._key = None

    def run(self, inputs, **kwargs):
        """Outputs (a tuple, graph order) for ``inputs`` (a list in graph order, a dict, or one
        array). Inputs that give a shape, axes or bounds are bound at load time: new values
        map the graph again, as do new input shapes."""
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            seq = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            feeds = dict(zip(self.graph_inputs, seq, strict=False))
        fixed = {n: np.asarray(feeds.pop(n)) for n in self.static if n in feeds}
        shapes = {n: np.shape(v) for n, v in feeds.items()}
        key = (tuple(sorted(shapes.items())),
               tuple(sorted((n, v.tobytes(), v.shape) for n, v in fixed.items())))
        net = self.network
        if net is None or key != self._key and (
                fixed or any(tuple(shapes.get(n, s)) != tuple(s)
                             for n, (s, _) in net.inputs.items())):
            net = self.network = load(self.model, input_shapes=shapes, constants=fixed,
                                      fallback=self.fallback)
        self._key = key
        return tuple(net.run(feeds, runner=self.runner))


class MeritBackend(Backend):
    """The ONNX backend of the golden model (device ``"CPU"``)."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)
        return MeritRep(model, fallback=kwargs.get("fallback", False),
                        runner=kwargs.get("runner"))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        from onnx import helper
        graph_inputs = [helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), np.shape(v))
            for name, v in zip(node.input, inputs, strict=False) if name]
        outputs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        model = helper.make_model(helper.make_graph([node], "node", graph_inputs, outputs))
        return cls.run_model(model, [v for n, v in zip(node.input, inputs, strict=False) if n],
                             device, **kwargs)

    @classmethod
    def supports_device(cls, device):
        return str(device).upper() == "CPU"


prepare = MeritBackend.prepare
run_model = MeritBackend.run_model
run_node = MeritBackend.run_node
supports_device = MeritBackend.supports_device
