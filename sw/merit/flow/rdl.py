"""The MERIT-z control port as SystemRDL, and what the PeakRDL tools make of it.

:func:`systemrdl` writes the register map of :mod:`merit.regmap` (the one source of truth) as a
SystemRDL 2.0 ``addrmap``; :func:`export` compiles it with ``systemrdl-compiler`` and runs the
PeakRDL exporters: a C header (``peakrdl-cheader``), IP-XACT (``peakrdl-ipxact``) and HTML
documentation (``peakrdl-html``). ``make verilog`` writes all of them into ``rtl_out/``
(:func:`main`); two runs give the same bytes.

Register fields are named as in :mod:`merit.regmap` with every character outside ``[A-Za-z0-9_]``
turned into ``_`` (``rp0[1].stride[3]`` is ``rp0_1_stride_3``); the original name is the field's
``name`` property. SystemRDL has no signed fields: a signed field says so in its description.
"""

import hashlib
import re
import sys
import tempfile
from pathlib import Path

from merit.regmap import BUDGET_BYTES, ID_MAGIC, Access, Error, register_map

__all__ = ["ADDRMAP", "field_identifier", "systemrdl", "compile_rdl", "write_header", "export",
           "main"]

#: Name of the SystemRDL addrmap (and the prefix of the C header's macros).
ADDRMAP = "meritz"

#: SystemRDL properties of each software access (hardware side: the register bank).
_ACCESS = {
    Access.RO: "sw = r; hw = w;",
    Access.RW: "sw = rw; hw = r;",
    Access.W1: "sw = rw; hw = r; singlepulse = true;",
    Access.W1C: "sw = rw; hw = w; onwrite = woclr;",
}


def field_identifier(name):
    """The SystemRDL identifier of a :mod:`merit.regmap` field name: ``rp0[1].base`` ->
    ``rp0_1_base``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a field name must be a non-empty string, not {name!r}")
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", name)).strip("_")


def _string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemrdl(rmap=None):
    """SystemRDL text of ``rmap`` (default: :func:`merit.regmap.register_map`)."""
    rmap = register_map() if rmap is None else rmap
    errors = ", ".join(f"{e.value} {e.name}" for e in Error)
    out = [
        "// MERIT-z control port: generated from merit.regmap by merit.flow.rdl (do not edit).",
        f"addrmap {ADDRMAP} {{",
        '    name = "MERIT-z control port";',
        "    desc = " + _string(
            "AXI4-Lite slave, 32-bit data, byte addresses. An address that holds no register "
            "answers SLVERR; so does a write to a configuration register or the LUT window "
            f"while STATUS.busy. {rmap.size_bytes} bytes of registers (budget {BUDGET_BYTES}); "
            f"STATUS.error codes: {errors}.") + ";",
        "    default regwidth = 32;",
        "    default accesswidth = 32;",
        "    addressing = regalign;",
    ]
    for reg in rmap.registers:
        out.append("    reg {")
        out.append(f"        name = {_string(reg.name)};")
        if reg.doc:
            out.append(f"        desc = {_string(reg.doc)};")
        seen = set()
        for f in reg.fields:
            ident = field_identifier(f.name)
            if ident in seen:
                raise ValueError(f"register {reg.name}: two fields map to the SystemRDL name "
                                 f"{ident!r}")
            seen.add(ident)
            doc = f.doc or (f"kernel configuration field {f.name} (configuration bits "
                            f"{f.config + f.width - 1}:{f.config})" if f.config is not None
                            else f.name)
            if f.signed:
                doc += "; signed (two's complement)"
            reset = ""
            if (reg.name, f.name) == ("ID", "magic"):
                reset = f" = {ID_MAGIC:#x}"
            elif f.access in (Access.W1, Access.W1C):
                reset = " = 0"
            out.append(f"        field {{ name = {_string(f.name)}; desc = {_string(doc)}; "
                       f"{_ACCESS[f.access or reg.access]} }} "
                       f"{ident}[{f.lsb + f.width - 1}:{f.lsb}]{reset};")
        out.append(f"    }} {reg.name} @ {reg.offset:#05x};")
    per_table = rmap.lut_words_per_table
    out += [
        "    reg {",
        '        name = "LUT";',
        "        desc = " + _string(
            f"lookup-table window: word t*{per_table} + e/2 holds entry e of table t "
            "(even e in lo, odd e in hi), int16") + ";",
        '        field { name = "lo"; desc = "entry 2k (int16)"; sw = rw; hw = r; } lo[15:0];',
        '        field { name = "hi"; desc = "entry 2k+1 (int16)"; sw = rw; hw = r; } hi[31:16];',
        f"    }} LUT[{rmap.lut_words}] @ {rmap.lut_base:#05x} += 4;",
        "};",
        "",
    ]
    return "\n".join(out)


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("merit")
    except PackageNotFoundError:
        return "0"


def compile_rdl(path):
    """Compile and elaborate the SystemRDL file ``path``; return the root node."""
    from systemrdl import RDLCompiler

    compiler = RDLCompiler()
    compiler.compile_file(str(path))
    return compiler.elaborate(top_def_name=ADDRMAP)


def write_header(out_dir, rmap=None):
    """Write ``meritz.h`` alone (the C header of :func:`export`) into ``out_dir``; return it."""
    from peakrdl_cheader.exporter import CHeaderExporter

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    header = out / f"{ADDRMAP}.h"
    with tempfile.TemporaryDirectory() as folder:
        rdl = Path(folder) / f"{ADDRMAP}.rdl"
        rdl.write_text(systemrdl(rmap))
        CHeaderExporter().export(compile_rdl(rdl), str(header))
    return header


def export(out_dir, rmap=None):
    """Write ``meritz.rdl``, ``meritz.h``, ``meritz.xml`` (IP-XACT) and ``meritz_regs_html/``
    into ``out_dir``; return the paths written."""
    from peakrdl_cheader.exporter import CHeaderExporter
    from peakrdl_html import HTMLExporter
    from peakrdl_ipxact import IPXACTExporter

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rdl = out / f"{ADDRMAP}.rdl"
    text = systemrdl(rmap)
    rdl.write_text(text)
    root = compile_rdl(rdl)
    header, xml, html = out / f"{ADDRMAP}.h", out / f"{ADDRMAP}.xml", out / f"{ADDRMAP}_regs_html"
    CHeaderExporter().export(root, str(header))
    IPXACTExporter(vendor="merit", library="meritz", version=_version()).export(root, str(xml))
    # the index page stamps the build time into its URLs (browser cache busting); a digest of
    # the description keeps that purpose and makes two runs byte-identical
    stamp = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
    HTMLExporter(user_context={"build_ts": stamp}).export(root, str(html))
    return [rdl, header, xml, html]


def main(argv=None):
    """``python -m merit.flow.rdl [OUT_DIR]``: export into OUT_DIR (default ``rtl_out``)."""
    argv = sys.argv[1:] if argv is None else argv
    for path in export(argv[0] if argv else "rtl_out"):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
