"""``make bench`` part of the TAU: cycles and utilization per workload on one TAU.

Runs every workload of :data:`WORKLOADS` through :func:`simulate.simulate` (Verilator model of one
TAU, AXI RAM at ``--dram-bytes-per-cycle`` bytes per cycle, bit-exact against the golden ISA
model) and writes ``docs/results/tau.md`` and ``docs/results/tau.json``. Sizes are moderate
slices of the paper's layers (SPEC §5: at least 8 full tile rows each); the table says which.

    .venv/bin/python verif/measure_tau.py [--lanes 32] [--dram-bytes-per-cycle 8] [--only NAME]
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from merit import workloads as W  # noqa: E402
from simulate import simulate  # noqa: E402

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"

#: name -> (problem factory, what it is)
WORKLOADS = {
    "conv3x3_c16": (lambda: W.conv2d(1, 16, 16, 32, 16, 3, padding=1),
                    "conv 3x3, 16 -> 16 channels, 16x32, pad 1"),
    "conv3x3_stride2": (lambda: W.conv2d(1, 16, 33, 33, 16, 3, stride=2, padding=1),
                        "conv 3x3 stride 2, 16 -> 16 channels, 33x33 -> 17x17"),
    "conv3x3_dilated": (lambda: W.conv2d(1, 16, 20, 36, 16, 3, dilation=2, padding=2),
                        "dilated conv 3x3 (dilation 2), 16 -> 16 channels, 20x36"),
    "depthwise3x3": (lambda: W.depthwise(1, 32, 16, 32, 3, padding=1),
                     "depthwise 3x3, 32 channels, 16x32"),
    "gemm": (lambda: W.gemm(64, 128, 64), "GEMM 64x128, k = 64"),
    "max_pool2x2": (lambda: W.max_pool2d(1, 16, 32, 32, 2), "max pool 2x2, 16 channels, 32x32"),
    "motion_sad": (lambda: W.motion_estimation(32, 32, block=8, search=4),
                   "full-search SAD, 8x8 blocks, +-4, 32x32 frame"),
    "bilateral": (lambda: W.bilateral(24, 32, sigma_s=2.0, sigma_r=20.0, radius=2),
                  "bilateral 5x5 (lookup), 24x32"),
    "correlation": (lambda: W.correlation(16, 16, 32, 3),
                    "FlowNet correlation, 16 channels, 16x32, displacements 7x7"),
}


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
        metrics["what"] = what
        metrics["wall_s"] = round(time.time() - start, 1)
        rows[name] = metrics
        print(f"{name}: {metrics}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"lanes": args.lanes, "dram_bytes_per_cycle": args.dram_bytes_per_cycle,
            "latency": args.latency}
    out.with_suffix(".json").write_text(json.dumps({"setup": meta, "workloads": rows},
                                                   indent=2, sort_keys=True) + "\n")
    lines = [f"# One TAU: cycles and utilization ({args.lanes} lanes, "
             f"{args.dram_bytes_per_cycle} B/cycle, read latency {args.latency})", "",
             "Measured on the Verilator model by `verif/measure_tau.py`; cycles from the first "
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
