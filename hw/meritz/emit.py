"""Verilog emission of MERIT-z components, with their port metadata.

One function turns an elaborated :class:`amaranth.lib.wiring.Component` into Verilog text
(``emit_src=False``, so files diff cleanly and two runs are byte-identical) and a JSON-able
description of its ports: the flattened Verilog name, direction, width and signedness of every
member, plus Amaranth's own component metadata.
"""

import contextvars
import json
import re
from pathlib import Path

from amaranth import ClockSignal, Instance, Module, ResetSignal
from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.lib import data, wiring

__all__ = ["to_verilog", "port_table", "write_component", "Shared"]

#: The shared modules instanced by the design being converted (module name -> component).
_SHARED = contextvars.ContextVar("meritz_shared_modules", default=None)


class Shared(wiring.Component):
    """An instance, by name, of a component emitted once as its own Verilog module.

    Amaranth elaborates every instance of a component separately, so a processor of four TAUs
    would carry four copies of the TAU's Verilog (and build four times the simulator code).
    ``Shared(inner, name)`` has ``inner``'s signature; it elaborates into ``Instance(name)`` of
    ``inner``'s ports (``clk`` / ``rst`` of its ``sync`` domain), and :func:`to_verilog` appends
    the Verilog of ``inner`` as module ``name`` once, however many ``Shared`` use it. Several
    ``Shared`` may wrap the same ``inner``; a name must always stand for the same component.

    Only for Verilog: the Amaranth simulator cannot run an ``Instance`` (simulate ``inner``).
    """

    def __init__(self, inner, name):
        if not isinstance(inner, wiring.Component):
            raise TypeError(f"inner must be an amaranth.lib.wiring.Component, not {inner!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"module name must be a Verilog identifier, not {name!r}")
        self.inner = inner
        self.module_name = name
        super().__init__(dict(inner.signature.members))

    def elaborate(self, platform):
        used = _SHARED.get()
        if used is not None:
            if used.setdefault(self.module_name, self.inner) is not self.inner:
                raise ValueError(f"two different components share the module name "
                                 f"{self.module_name!r}")
        ports = {"i_clk": ClockSignal("sync"), "i_rst": ResetSignal("sync")}
        for path, member, value in self.signature.flatten(self):
            name = "__".join(str(part) for part in path)
            if isinstance(value, data.View):
                value = value.as_value()
            ports[("i_" if member.flow == wiring.In else "o_") + name] = value
        m = Module()
        m.submodules.inst = Instance(self.module_name, **ports)
        return m


def _check_component(top):
    if not isinstance(top, wiring.Component):
        raise TypeError(f"top must be an amaranth.lib.wiring.Component, not {top!r}")


def port_table(top, clocked=True):
    """The flattened ports of ``top``: a list of dicts (name, dir, width, signed), in order.

    ``clocked`` adds the ``clk`` / ``rst`` inputs of the ``sync`` domain (absent from the Verilog
    of a purely combinational component).
    """
    _check_component(top)
    ports = []
    if clocked:
        ports += [{"name": "clk", "dir": "in", "width": 1, "signed": False},
                  {"name": "rst", "dir": "in", "width": 1, "signed": False}]
    for path, member, _value in top.signature.flatten(top):
        shape = Shape.cast(member.shape)
        ports.append({
            "name": "__".join(str(part) for part in path),
            "dir": "in" if member.flow == wiring.In else "out",
            "width": shape.width,
            "signed": shape.signed,
        })
    return ports


def to_verilog(top, name):
    """Return ``(verilog_text, metadata)`` for the component ``top`` as Verilog module ``name``."""
    _check_component(top)
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"module name must be a Verilog identifier, not {name!r}")
    token = _SHARED.set({})
    try:
        text = verilog.convert(top, name=name, emit_src=False)
        shared = dict(_SHARED.get())
    finally:
        _SHARED.reset(token)
    for module_name, inner in sorted(shared.items()):
        inner_text, _ = to_verilog(inner, module_name)
        text += "\n" + re.sub(r"^\(\* top = +1 +\*\)\n", "", inner_text, flags=re.M)
    metadata = {
        "module": name,
        "component": f"{type(top).__module__}.{type(top).__qualname__}",
        "ports": port_table(top, clocked=re.search(r"^\s*input clk;", text, re.M) is not None),
        "amaranth": top.metadata.as_json(),
    }
    return text, metadata


def write_component(top, name, out_dir):
    """Write ``<name>.v`` and ``<name>.json`` into ``out_dir``; return the path of the ``.v``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    text, metadata = to_verilog(top, name)
    v_path = out_dir / f"{name}.v"
    v_path.write_text(text)
    (out_dir / f"{name}.json").write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
    return v_path
