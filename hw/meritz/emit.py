"""Verilog emission of MERIT-z components, with their port metadata.

One function turns an elaborated :class:`amaranth.lib.wiring.Component` into Verilog text
(``emit_src=False``, so files diff cleanly and two runs are byte-identical) and a JSON-able
description of its ports: the flattened Verilog name, direction, width and signedness of every
member, plus Amaranth's own component metadata.
"""

import json
import re
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.lib import wiring

__all__ = ["to_verilog", "port_table", "write_component"]


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
    text = verilog.convert(top, name=name, emit_src=False)
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
