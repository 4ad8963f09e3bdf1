"""Estimated arrival time of every register input of an ECP5 netlist, grouped by structure.

nextpnr reports the critical path and a slack histogram, not which registers the slow endpoints
are. This walks the netlist that ``synth_ecp5`` wrote (``netlist.json`` of a block's work folder
in ``build/fpga/``) in topological order with a simple delay model of a speed-6 LFE5U: clock to
Q, a LUT4 level, a carry chain (per CCU2C), an unregistered MULT18X18D, and a fixed routing
delay in front of every cell input but a carry input. The model is calibrated on the block's
routed critical path (its logic and routing time), so its numbers are estimates, good for
ranking register groups and finding what a path cut must cover, not for an Fmax.

Each endpoint (a flip-flop's D / CE / LSR, a LUT RAM's write port, a block RAM's inputs) is
named by its register and by the named signals its latest path passes through; ``classify``
sorts it into one of the structures the caller lists (``(name, predicate)`` pairs, the first
that matches).

``python -m merit.flow.endpoints WORKDIR [--over NS]`` prints the table for the SIMD array's
structures.
"""

import argparse
import collections
import json
import re
from pathlib import Path

__all__ = ["DELAYS", "arrivals", "classify", "SIMD_GROUPS", "main"]

#: ns; a speed-6 LFE5U (nextpnr-ecp5's timing database, rounded), ``route`` the mean routed
#: delay of one net hop on the SIMD array's routed critical path (14.5 ns over 13 hops)
DELAYS = {"clk_q": 0.52, "lut": 0.45, "mux": 0.25, "carry_in": 0.45, "carry_bit": 0.07,
          "carry_out": 0.45, "mult": 3.9, "ram_read": 0.9, "bram_q": 4.5, "route": 1.1,
          "setup": 0.1}

def _bits_of(cell, port):
    return [b for b in cell["connections"].get(port, []) if isinstance(b, int)]


def arrivals(netlist, top="fpga_wrap", delays=DELAYS):
    """``(endpoints, names)``: ``endpoints`` a list of ``(arrival ns, cell, port, path)``,
    ``path`` the net bits of the latest path into it (last first); ``names`` a bit -> name map
    (a name without ``$`` where the bit has one)."""
    mod = netlist["modules"][top]
    cells = mod["cells"]
    names = {}
    for name, info in mod["netnames"].items():
        for b in info["bits"]:
            if not isinstance(b, int):
                continue
            old = names.get(b)
            if old is None or ("$" in old and "$" not in name) or (
                    ("$" in old) == ("$" in name) and len(name) < len(old)):
                names[b] = name
    d = delays
    arrival = {}                # bit -> (ns, previous bit)
    # combinational arcs: out bit <- [(in bit, delay incl. routing)]
    arcs = collections.defaultdict(list)
    endpoints = []              # (cell, port, bit, extra)
    for cname, cell in cells.items():
        t = cell["type"]
        conn = cell["connections"]
        if t == "TRELLIS_FF":
            for b in _bits_of(cell, "Q"):
                arrival[b] = (d["clk_q"], None)
            for p in ("DI", "M", "CE", "LSR"):
                for b in _bits_of(cell, p):
                    endpoints.append((cname, p, b))
        elif t in ("DP16KD", "PDPW16KD"):
            for p, bits in conn.items():
                if cell["port_directions"][p] == "output":
                    for b in bits:
                        if isinstance(b, int):
                            arrival[b] = (d["bram_q"], None)
                elif not p.startswith("CLK"):
                    for b in bits:
                        if isinstance(b, int):
                            endpoints.append((cname, p, b))
        elif t == "TRELLIS_DPR16X4":
            for b in _bits_of(cell, "DO"):
                arrival.setdefault(b, (d["clk_q"] + d["ram_read"], None))
                for i in _bits_of(cell, "RAD"):
                    arcs[b].append((i, d["route"] + d["ram_read"]))
            for p in ("DI", "WAD", "WRE"):
                for b in _bits_of(cell, p):
                    endpoints.append((cname, p, b))
        elif t in ("LUT4", "LUT2", "TRELLIS_COMB"):
            for z in _bits_of(cell, "Z"):
                for p in ("A", "B", "C", "D"):
                    for i in _bits_of(cell, p):
                        arcs[z].append((i, d["route"] + d["lut"]))
        elif t in ("PFUMX", "L6MUX21"):
            for z in _bits_of(cell, "Z"):
                for p in ("ALUT", "BLUT", "D0", "D1"):
                    for i in _bits_of(cell, p):
                        arcs[z].append((i, d["mux"]))
                for i in _bits_of(cell, "C0") + _bits_of(cell, "SD"):
                    arcs[z].append((i, d["route"] + d["mux"]))
        elif t == "CCU2C":
            ins = [i for p in ("A0", "B0", "C0", "D0", "A1", "B1", "C1", "D1")
                   for i in _bits_of(cell, p)]
            cin = _bits_of(cell, "CIN")
            for o in _bits_of(cell, "COUT"):
                arcs[o] += [(i, d["route"] + d["carry_in"]) for i in ins]
                arcs[o] += [(i, 2 * d["carry_bit"]) for i in cin]
            for o in _bits_of(cell, "S0") + _bits_of(cell, "S1"):
                arcs[o] += [(i, d["route"] + d["carry_out"]) for i in ins]
                arcs[o] += [(i, d["carry_bit"] + d["carry_out"]) for i in cin]
        elif t == "MULT18X18D":
            ins = [i for p, bits in conn.items() if cell["port_directions"][p] == "input"
                   for i in bits if isinstance(i, int)]
            for p, bits in conn.items():
                if cell["port_directions"][p] == "output":
                    for o in bits:
                        if isinstance(o, int):
                            arcs[o] += [(i, d["route"] + d["mult"]) for i in ins]
        elif t == "$scopeinfo":
            continue
    # constants and primary inputs start at 0; a walk with its own stack (carry chains are
    # long)
    done = dict(arrival)
    on_stack = set()

    def at(b):
        if b in done:
            return done[b][0]
        if b not in arcs:
            done[b] = (0.0, None)
            return 0.0
        stack = [b]
        while stack:
            x = stack[-1]
            if x in done:
                stack.pop()
                continue
            pending = [i for i, _ in arcs.get(x, []) if i not in done and i not in on_stack]
            if pending:
                on_stack.add(x)
                stack.extend(pending)
                continue
            best = (0.0, None)
            for i, dl in arcs.get(x, []):
                t_i = done[i][0] if i in done else 0.0
                if t_i + dl > best[0]:
                    best = (t_i + dl, i)
            done[x] = best
            on_stack.discard(x)
            stack.pop()
        return done[b][0]

    result = []
    for cname, port, b in endpoints:
        t = at(b) + d["route"] + d["setup"]
        path, x = [], b
        while x is not None:
            path.append(x)
            x = done.get(x, (0, None))[1]
        result.append((t, cname, port, path))
    return result, names


def _register(cell):
    """The RTL register (or memory) an endpoint cell belongs to."""
    name = re.sub(r"_TRELLIS_FF_Q(_\d+)?$", "", cell)
    name = re.sub(r"\.\d+\.\d+$", "", name)        # LUT RAM / block RAM tiles
    return name


def classify(endpoints, names, groups):
    """``{group: [(ns, register, port, named path)]}`` by the first predicate of ``groups``
    (``(name, f(register, port, path_names))``) that holds, else ``"other"``."""
    out = collections.defaultdict(list)
    for t, cell, port, path in endpoints:
        reg = _register(cell)
        through = [names.get(b, "") for b in path]
        for g, pred in groups:
            if pred(reg, port, through):
                out[g].append((t, reg, port, through))
                break
        else:
            out["other"].append((t, reg, port, through))
    return out


def _any(through, pattern):
    return any(re.search(pattern, n) for n in through if n)


#: the SIMD array's structures (``meritz.tau.cp.simd``'s signal names)
SIMD_GROUPS = [
    ("register enables (E1 / E2 / decode handshake)",
     lambda r, p, th: p in ("CE", "LSR", "WRE")),
    ("LOOKUP index: b - c, shift, clamp, one-hot select",
     lambda r, p, th: re.search(r"\.(lu2|lut_even2|lut_odd2|lutx2|lut_table\d*)$", r) is not None),
    ("LOOKUP table read (AND-OR) + its multipliers",
     lambda r, p, th: _any(th, r"\.lut(ye|yo|w)\d")),
    ("MAC multiplier (operand saturation, product)",
     lambda r, p, th: _any(th, r"\.(mul[xy]|prod)\d")),
    ("E2 adders: sum / LOOKUP carry-save, LOGIC, result mux -> forwarding into E1 / register file",
     lambda r, p, th: _any(th, r"\.(sum|lks|lkc|logic|lsh|vsh)\d") or _any(th, r"\.result$")),
    ("out: sat16((a + b) >> s)",
     lambda r, p, th: _any(th, r"\.osum\d")),
    ("core outputs (rp0 / rp1 ready, out, busy) to the wrapper's registers",
     lambda r, p, th: r.startswith("outs_r")),
    ("partial-result SRAM write / LOAD read",
     lambda r, p, th: "sram" in r or _any(th, r"\.sram")),
    ("E1 ALU (b + c, b - c, |b - c|) into v3",
     lambda r, p, th: _any(th, r"\.(diff|pre_other)\d")),
    ("issue: operand select / forwarding into E1",
     lambda r, p, th: re.search(r"\.[abc]2$", r) is not None or _any(th, r"\.(op[abc]|fwd_)")),
    ("decode stage",
     lambda r, p, th: re.search(r"\.(dec|skid)", r) is not None),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workdir", help="a block's folder in build/fpga (holds netlist.json)")
    ap.add_argument("--over", type=float, default=10.0, help="endpoints slower than this (ns)")
    ap.add_argument("--worst", type=float, default=None,
                    help="the routed critical path (ns): scales the estimates to it")
    ap.add_argument("--scale", type=float, default=None,
                    help="scale the estimates by this (another netlist's --worst calibration)")
    args = ap.parse_args(argv)
    netlist = json.loads((Path(args.workdir) / "netlist.json").read_text())
    eps, names = arrivals(netlist)
    # the core's registers and the wrapper's output registers (not its input shift register)
    eps = [e for e in eps if not e[1].startswith("chain")]
    scale = args.scale or 1.0
    if args.worst:
        scale = args.worst / max(e[0] for e in eps)
    eps = [(e[0] * scale,) + tuple(e[1:]) for e in eps]
    groups = classify(eps, names, SIMD_GROUPS)
    total = len(eps)
    slow = sum(1 for e in eps if e[0] > args.over)
    print(f"{total} endpoints, {slow} over {args.over} ns (estimate, scale {scale:.3f})")
    print("| structure | endpoints over | worst ns | registers (endpoints over) |")
    print("|---|---|---|---|")
    rows = []
    for g, items in groups.items():
        over = [x for x in items if x[0] > args.over]
        if not over:
            continue
        regs = collections.Counter(x[1].removeprefix("dut.") for x in over)
        top = ", ".join(f"`{r}` {k}" for r, k in regs.most_common(6))
        rows.append((len(over), g, max(x[0] for x in over), top))
    for k, g, w, top in sorted(rows, reverse=True):
        print(f"| {g} | {k} | {w:.1f} | {top} |")


if __name__ == "__main__":
    main()
