"""MERIT: tensor transform + ranged inner products.

The core (``Index``, ``Transform``, ``execute``, ``Problem``, ``strategies``) needs only numpy.
``workloads`` and the subpackages (``isa``, ``mapping``, ``gpu``, ``sim``, ``flow``, ``cli``) are
imported on first use.
"""

import importlib

from . import strategies
from .execute import execute
from .problem import Output, Problem
from .transform import Index, Transform

__all__ = ["Index", "Output", "Problem", "Transform", "execute", "strategies", "workloads"]

_LAZY = ("workloads", "isa", "mapping", "gpu", "sim", "flow", "cli")


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'merit' has no attribute {name!r}")
