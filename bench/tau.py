"""``make bench`` part of the TAU: cycles and utilization per workload on one TAU.

Runs every workload of :data:`merit.suite.WORKLOADS` through :func:`merit.sim.simulate`
(Verilator model of one TAU, AXI RAM at ``--dram-bytes-per-cycle`` bytes per cycle, bit-exact
against the golden ISA model) and writes ``docs/results/tau.md`` and ``docs/results/tau.json``.
Sizes are moderate slices of the paper's layers (``docs/perf.md``: at least 8 full tile rows
each); the table says which.

    python -m bench.tau [--lanes 32] [--dram-bytes-per-cycle 8] [--only NAME]
"""

import argparse
import json
import sys
import time
from pathlib import Path

from bench import machine, now
from merit.sim import simulate
from merit.suite import WORKLOADS

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=32)
    parser.add_argument("--dram-bytes-per-cycle", type=int, default=8)
    parser.add_argument("--latency", type=int, default=20)
    parser.add_argument("--only", action="append")
    parser.add_argument("--out", default=str(RESULTS / "tau"))
    args = parser.parse_args(argv)
    rows = {}
    for name, (factory, what) in WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        problem = factory()
        start = time.time()
        metrics = simulate(problem, lanes=args.lanes,
                           dram_bytes_per_cycle=args.dram_bytes_per_cycle, latency=args.latency,
                           seed=1, instructions=24)
        metrics.get("build", {}).pop("dir", None)      # this machine's build folder
        metrics["what"] = what
        metrics["wall_s"] = round(time.time() - start, 1)
        rows[name] = metrics
        print(f"{name}: {metrics}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"lanes": args.lanes, "dram_bytes_per_cycle": args.dram_bytes_per_cycle,
            "latency": args.latency,
            "command": "python -m bench.tau " + " ".join(sys.argv[1:] if argv is None else argv),
            "date": now(), "machine": machine()}
    out.with_suffix(".json").write_text(json.dumps({"setup": meta, "workloads": rows},
                                                   indent=2, sort_keys=True) + "\n")
    lines = [f"# One TAU: cycles and utilization ({args.lanes} lanes, "
             f"{args.dram_bytes_per_cycle} B/cycle, read latency {args.latency})", "",
             f"Command: `{meta['command']}`  ", f"Date: {meta['date']}  ",
             f"Machine: {meta['machine']}", "",
             "Measured on the Verilator model of one TAU; cycles from the first "
             "DRAM request to the last write response; utilization = useful ALU operations / "
             "(cycles x lanes). Every run is bit-exact against the golden ISA model.", "",
             "`DRAM busy` = (read + write beats) / (cycles x beats per cycle): near 1 the layer is "
             "bound by DRAM bandwidth. `ALU-bound cycles` = useful operations / lanes.", "",
             "| workload | what | tiling | cycles | ALU-bound cycles | utilization | DRAM busy "
             "| read / write beats |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['what']} | {r['tiling']} | {r['cycles']} | "
                     f"{r.get('compute_bound_cycles', '')} | {r['utilization']:.3f} | "
                     f"{r.get('dram_busy', '')} | {r['read_beats']} / {r['write_beats']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
