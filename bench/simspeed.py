"""Simulation speed: the Python DRAM path against the fast path, in one run.

Runs the slice of the paper's GEMM row (``paper:gemm``) on one 8-lane TAU and on MERIT-z with
4 TAUs of 32 lanes, each once with the Python DRAM (cocotbext-axi behind coroutines, awaited every
cycle) and once with the fast DRAM inside the Verilator model, both bit-exact against the golden
model, and writes ``docs/results/simspeed.md`` and ``docs/results/simspeed.json``: simulated
cycles per second of wall time and per second of the simulator's CPU time (the steadier number
on a shared machine), and the speed-up::

    .venv/bin/python -m bench.simspeed [--only tau8|top32x4] [--seed 1]

The models are built (or taken from the build cache, ``MERIT_SIM_BUILD``) before timing; a
model's first build takes minutes (the 32-lane 4-TAU ones 10-30 minutes each).
"""

import argparse
import json
import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
#: name -> (lanes, taus, what)
ROWS = {
    "tau8": (8, None, "one TAU of 8 lanes, driven by the bench"),
    "top32x4": (32, 4, "MERIT-z: 4 TAUs x 32 lanes, driven through its control port"),
}
#: Targets of the fast path: cycles/s, and speed-up over the Python path.
TARGETS = {"tau8": (100_000, None), "top32x4": (10_000, 20)}


def _machine():
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "system": platform.platform()}


def measure(name, *, seed=1, paths=("python", "fast")):
    """Both paths on one row: ``{path: metrics + rates}``."""
    from merit.paper import ROWS as PAPER
    from merit.sim import simulate
    lanes, taus, _ = ROWS[name]
    problem = {r.name: r for r in PAPER}["gemm"].slice()
    out = {}
    for path in paths:
        load = os.getloadavg()[0]
        start = time.monotonic()
        metrics = simulate(problem, lanes=lanes, taus=taus, seed=seed, dram=path,
                           progress=lambda line: print(f"  {line}", flush=True))
        metrics["wall_s"] = round(time.monotonic() - start, 1)
        metrics["load_before"] = round(load, 1)
        metrics["load_after"] = round(os.getloadavg()[0], 1)
        metrics["cycles_per_s"] = round(metrics["sim_cycles"] / metrics["sim_seconds"])
        metrics["cycles_per_cpu_s"] = round(metrics["sim_cycles"] / metrics["sim_cpu_seconds"])
        print(f"{name} {path}: {metrics['sim_cycles']} cycles, {metrics['cycles_per_s']} "
              f"cycles/s, {metrics['cycles_per_cpu_s']} cycles per CPU second", flush=True)
        out[path] = metrics
    return out


def _table(results):
    lines = ["| configuration | DRAM model | cycles | simulation wall s | cycles/s (wall) | "
             "CPU s | cycles/s (CPU) | speed-up (wall / CPU) | target |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, paths in results.items():
        old = paths.get("python")
        for path, m in paths.items():
            speedup = "" if path == "python" or old is None else (
                f"{m['cycles_per_s'] / old['cycles_per_s']:.1f}x / "
                f"{m['cycles_per_cpu_s'] / old['cycles_per_cpu_s']:.1f}x")
            rate, factor = TARGETS[name]
            target = "" if path == "python" else (
                f">= {rate:,} cycles/s" + (f", >= {factor}x" if factor else ""))
            lines.append(f"| {ROWS[name][2]} | {path} | {m['sim_cycles']:,} | "
                         f"{m['sim_seconds']} | {m['cycles_per_s']:,} | {m['sim_cpu_seconds']} | "
                         f"{m['cycles_per_cpu_s']:,} | {speedup} | {target} |")
    return "\n".join(lines)


def write(results, command):
    machine = _machine()
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    record = {"command": command, "date": date, "machine": machine, "results": results}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "simspeed.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    loads = sorted({m["load_before"] for paths in results.values() for m in paths.values()}
                   | {m["load_after"] for paths in results.values() for m in paths.values()})
    text = f"""# Simulation speed: Python DRAM path vs fast path

`{command}` ({date}; {machine['cpu']}, {machine['cores']} cores, shared: load average
{loads[0]}-{loads[-1]} during the runs).

The slice of the paper's GEMM row (`paper:gemm`) simulated with the Python DRAM model
(cocotbext-axi's RAM behind coroutines awaited every cycle, `--dram python`) and with the fast
DRAM inside the Verilator model (`--dram fast`, the default); both runs bit-exact against the
golden model and the whole DRAM image checked. *Wall* is simulated cycles per second of wall time
of the simulation (configuration, START to done); *CPU* per second of the simulator process's
CPU time, which the other jobs on a shared machine disturb far less. See `docs/simulation.md`.

{_table(results)}
"""
    (RESULTS / "simspeed.md").write_text(text)
    print(f"wrote {RESULTS / 'simspeed.md'} and simspeed.json")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(ROWS), action="append",
                        help="measure only this configuration (repeatable)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    names = args.only or list(ROWS)
    results = {name: measure(name, seed=args.seed) for name in names}
    command = "python -m bench.simspeed" + "".join(f" --only {n}" for n in args.only or ())
    write(results, command)


if __name__ == "__main__":
    main()
