"""Simulation speed: the Python DRAM path against the fast path, and each Verilator option.

Runs the slice of the paper's GEMM row (``paper:gemm``) on one 8-lane TAU and on MERIT-z with
4 TAUs of 32 lanes, each once with the Python DRAM (cocotbext-axi behind coroutines, awaited every
cycle) and once with the fast DRAM inside the Verilator model, both bit-exact against the golden
model; then the fast path once per Verilator option it chose, with that option undone (and with
``--threads 2``), to measure what each option gives. Writes ``docs/results/simspeed.md`` and
``docs/results/simspeed.json``: simulated cycles per second of wall time and per second of the
simulator's CPU time (the steadier number on a shared machine), the speed-ups, and the build time
of every model::

    .venv/bin/python -m bench.simspeed [--only tau8|top32x4] [--no-options] [--cached] [--seed 1]

By default every model is built afresh in a temporary build folder, so that its build time is
measured in the same run (the 32-lane 4-TAU models take a few minutes each on two cores);
``--cached`` takes the models from the build cache (``MERIT_SIM_BUILD``) and reports the build
times recorded there.
"""

import argparse
import json
import os
import platform
import subprocess
import tempfile
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


def _options():
    """name -> (what, build options of :func:`merit.sim.simulate`): the fast path's build as
    chosen, then with one choice undone each (or ``--threads 2`` added)."""
    from merit.sim.fast import FAST_ARGS, OPT_FAST
    unique = [a if a != "fast" else "unique" for a in FAST_ARGS]
    return {
        "chosen": (f"as chosen: {OPT_FAST}, --x-assign/--x-initial fast, wrapper ports public",
                   {}),
        "Os": ("C++ -Os (Verilator's default)", {"opt_fast": "-Os"}),
        "O3": ("C++ -O3", {"opt_fast": "-O3"}),
        "x-unique": ("--x-assign/--x-initial unique", {"args": unique}),
        "public": ("every signal public (--public-flat-rw, as cocotb builds)", {"public": True}),
        "threads2": ("--threads 2", {"args": [*FAST_ARGS, "--threads", "2"]}),
    }


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


def _run(name, *, seed, dram, build_options=None):
    from merit.paper import ROWS as PAPER
    from merit.sim import simulate
    lanes, taus, _ = ROWS[name]
    problem = {r.name: r for r in PAPER}["gemm"].slice()
    load = os.getloadavg()[0]
    start = time.monotonic()
    metrics = simulate(problem, lanes=lanes, taus=taus, seed=seed, dram=dram,
                       build_options=build_options,
                       progress=lambda line: print(f"  {line}", flush=True))
    metrics["wall_s"] = round(time.monotonic() - start, 1)
    metrics["load_before"] = round(load, 1)
    metrics["load_after"] = round(os.getloadavg()[0], 1)
    metrics["cycles_per_s"] = round(metrics["sim_cycles"] / metrics["sim_seconds"])
    metrics["cycles_per_cpu_s"] = round(metrics["sim_cycles"] / metrics["sim_cpu_seconds"])
    built = metrics["build"]["time"]
    metrics["build_s"] = built["seconds"] if built else None
    metrics["build"]["dir"] = Path(metrics["build"]["dir"]).name   # the model, not this machine
    print(f"{name} {dram} {build_options or ''}: {metrics['sim_cycles']} cycles, "
          f"{metrics['cycles_per_s']} cycles/s, {metrics['cycles_per_cpu_s']} cycles per CPU "
          f"second, build {metrics['build_s']} s", flush=True)
    return metrics


def measure(name, *, seed=1, options=True):
    """Both paths on one row, then each option: ``{"paths": {path: metrics}, "options":
    {option: metrics}}``."""
    out = {"paths": {path: _run(name, seed=seed, dram=path) for path in ("python", "fast")},
           "options": {}}
    if options:
        for option, (_, build_options) in _options().items():
            if option == "chosen":
                out["options"][option] = out["paths"]["fast"]
                continue
            out["options"][option] = _run(name, seed=seed, dram="fast",
                                          build_options=build_options)
    return out


def _build(m):
    return "" if m.get("build_s") is None else f"{m['build_s']:.0f}"


def _paths_table(results):
    lines = ["| configuration | DRAM model | cycles | simulation wall s | cycles/s (wall) | "
             "CPU s | cycles/s (CPU) | speed-up (wall / CPU) | target | build s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for name, result in results.items():
        paths = result["paths"]
        old = paths["python"]
        for path in ("python", "fast"):    # the file keeps keys sorted: the order is ours
            m = paths[path]
            speedup = "" if path == "python" else (
                f"{m['cycles_per_s'] / old['cycles_per_s']:.1f}x / "
                f"{m['cycles_per_cpu_s'] / old['cycles_per_cpu_s']:.1f}x")
            rate, factor = TARGETS[name]
            target = "" if path == "python" else (
                f">= {rate:,} cycles/s" + (f", >= {factor}x" if factor else ""))
            lines.append(f"| {ROWS[name][2]} | {path} | {m['sim_cycles']:,} | "
                         f"{m['sim_seconds']} | {m['cycles_per_s']:,} | {m['sim_cpu_seconds']} | "
                         f"{m['cycles_per_cpu_s']:,} | {speedup} | {target} | {_build(m)} |")
    return "\n".join(lines)


def _options_table(results):
    options = _options()
    lines = ["| configuration | fast path built with | cycles | same result | cycles/s (CPU) | "
             "relative to as chosen (CPU) | build s |", "|---|---|---:|---|---:|---:|---:|"]
    for name, result in results.items():
        chosen = result["options"].get("chosen")
        if chosen is None:
            continue
        for option in [o for o in options if o in result["options"]]:
            m = result["options"][option]
            same = "yes" if (m["cycles"], m["dram_sha1"]) == (
                chosen["cycles"], chosen["dram_sha1"]) else "**no**"
            ratio = m["cycles_per_cpu_s"] / chosen["cycles_per_cpu_s"]
            lines.append(f"| {ROWS[name][2]} | {options[option][0]} | {m['cycles']:,} | {same} | "
                         f"{m['cycles_per_cpu_s']:,} | {ratio:.2f} | {_build(m)} |")
    return "\n".join(lines)


def _commit():
    """The checkout's commit (short), or ``"unknown"`` outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS.parent.parent,
                             capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def write(results):
    """Add ``results`` (rows of this run, each with its ``run``) to ``simspeed.json``, keeping
    the rows of earlier runs that this one did not measure, and render ``simspeed.md``."""
    path = RESULTS / "simspeed.json"
    rows = {}
    if path.is_file():
        old = json.loads(path.read_text())
        rows = {name: r for name, r in old.get("results", {}).items() if "run" in r}
    rows.update(results)
    rows = {name: rows[name] for name in ROWS if name in rows}
    machine = _machine()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine, "results": rows}, indent=2, sort_keys=True)
                    + "\n")
    runs = []
    for name, r in rows.items():
        run = r["run"]
        loads = [m[k] for group in ("paths", "options") for m in r[group].values()
                 for k in ("load_before", "load_after")]
        builds = ("every model built afresh in the run (build s: wall time of the Verilator "
                  "build, C++ compilation included, on both cores)" if run["fresh"] else
                  "models from the build cache; build s as recorded there when each was built, "
                  "empty where the model predates the record")
        runs.append(f"- {ROWS[name][2]}: `{run['command']}` at commit {run['commit']}, "
                    f"{run['date']}; load average {min(loads)}-{max(loads)} during the runs; "
                    f"{builds}.")
    options = ""
    if any(r["options"] for r in rows.values()):
        options = f"""
## What each Verilator option gives

The fast path built as chosen (`merit.sim.fast.FAST_ARGS`, `OPT_FAST`), then with one choice
undone each, and with `--threads 2`; the same row, seed and DRAM settings. *Same result*: the
same cycle count and the same DRAM image after the run (SHA-1) as the build as chosen.

{_options_table(rows)}
"""
    run_lines = "\n".join(runs)
    text = f"""# Simulation speed: Python DRAM path vs fast path

Machine: {machine['cpu']}, {machine['cores']} cores, shared with other jobs. Runs:

{run_lines}

The slice of the paper's GEMM row (`paper:gemm`) simulated with the Python DRAM model
(cocotbext-axi's RAM behind coroutines awaited every cycle, `--dram python`) and with the fast
DRAM inside the Verilator model (`--dram fast`, the default); both runs bit-exact against the
golden model and the whole DRAM image checked. *Wall* is simulated cycles per second of wall time
of the simulation (configuration, START to done); *CPU* per second of the simulator process's
CPU time, which the other jobs on a shared machine disturb far less. See `docs/simulation.md`.

{_paths_table(rows)}
{options}"""
    (RESULTS / "simspeed.md").write_text(text)
    print(f"wrote {RESULTS / 'simspeed.md'} and simspeed.json")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(ROWS), action="append",
                        help="measure only this configuration (repeatable)")
    parser.add_argument("--no-options", action="store_true",
                        help="skip the builds with one Verilator option undone each")
    parser.add_argument("--cached", action="store_true",
                        help="use the build cache instead of fresh builds (build times as "
                             "recorded in the cache)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    names = args.only or list(ROWS)
    with tempfile.TemporaryDirectory(prefix="merit-simspeed-") as scratch:
        if not args.cached:
            os.environ["MERIT_SIM_BUILD"] = scratch
        results = {name: measure(name, seed=args.seed, options=not args.no_options)
                   for name in names}
    command = "python -m bench.simspeed" + "".join(f" --only {n}" for n in args.only or ()) + \
        (" --no-options" if args.no_options else "") + (" --cached" if args.cached else "")
    run = {"command": command, "commit": _commit(), "fresh": not args.cached,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for result in results.values():
        result["run"] = run
    write(results)

if __name__ == "__main__":
    main()
