"""Pivot an ``ncu --csv`` metrics dump into one line per kernel (not a test):
``python tests/merit/gpu/ncu_table.py ncu.csv``."""

import csv
import sys

SHORT = {"launch__registers_per_thread": "regs", "launch__grid_size": "grid",
         "launch__block_size": "block", "launch__shared_mem_per_block_dynamic": "dsmem",
         "launch__shared_mem_per_block_static": "ssmem",
         "launch__occupancy_limit_registers": "occ_regs",
         "sm__warps_active.avg.pct_of_peak_sustained_active": "warps%",
         "gpu__time_duration.sum": "ns", "smsp__issue_active.avg.pct_of_peak_sustained_active":
         "issue%", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "fma%",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": "bankconf",
         "smsp__inst_executed.sum": "inst"}


def main(path):
    rows = {}
    with open(path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        key = (r["ID"], r["Kernel Name"][:60])
        name = r["Metric Name"]
        short = SHORT.get(name) or name.replace("smsp__average_warps_issue_stalled_", "st_") \
            .replace("_per_issue_active.ratio", "")
        rows.setdefault(key, {})[short] = r["Metric Value"]
    for (i, kname), m in rows.items():
        print(f"[{i}] {kname}")
        print("    " + "  ".join(f"{k}={v}" for k, v in sorted(m.items())))


if __name__ == "__main__":
    main(sys.argv[1])
