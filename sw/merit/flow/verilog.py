"""Verilog of the MERIT-z configurations (``merit verilog``, ``make verilog``).

:func:`write_verilog` emits every row of :data:`meritz.blocks.BLOCKS` (with the user's ``lanes`` /
``taus``) as ``<name>.v`` with its port metadata ``<name>.json`` and a file list ``<name>.f``, and
``meritz.f``, the file list of all modules.
"""

from pathlib import Path

from merit.checks import check_lanes, check_taus

__all__ = ["write_verilog"]


def write_verilog(out, *, lanes=None, taus=None, log=print):
    """Emit the default configurations into the folder ``out``; return the ``.v`` paths.

    ``lanes`` / ``taus`` override the defaults of the components that take them. Raises
    ``ImportError`` when amaranth is missing.
    """
    if lanes is not None:
        check_lanes(lanes)
    if taus is not None:
        check_taus(taus)
    from meritz.blocks import build
    from meritz.emit import write_component

    out = Path(out)
    written = []
    for name, component in build(lanes=lanes, taus=taus):
        v_path = write_component(component, name, out)
        (out / f"{name}.f").write_text(f"{v_path.name}\n")
        written.append(v_path)
        log(f"wrote {v_path} (+ {name}.json, {name}.f)")
    if written:
        (out / "meritz.f").write_text("".join(f"{path.name}\n" for path in written))
        log(f"wrote {out / 'meritz.f'}: file list of all {len(written)} modules")
    return written
