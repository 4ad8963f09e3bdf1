"""ONNX front end: load a model as MERIT problems and run it on the golden model, MERIT-z or a GPU.

``load(model)`` maps every node onto :mod:`merit.workloads` problems (``docs/onnx.md``);
``merit.onnx.backend`` is an ONNX backend (``onnx.backend.base.Backend``) on the golden model.
Needs the ``onnx`` package (``make setup`` installs it); imported on first use only.
"""

from .loader import load
from .network import Layer, Network, Part, UnsupportedOp

__all__ = ["Layer", "Network", "Part", "UnsupportedOp", "load"]
