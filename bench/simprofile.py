"""Where a simulated cycle's time goes on the Python DRAM path: Verilator's evaluation of the
model, the Python DRAM coroutines, the bench's own per-cycle coroutine and cocotb's scheduling.

For one configuration, three runs of the same problem and seed::

    .venv/bin/python -m bench.simprofile [--only tau8|top8x4]

1. the Python DRAM path as ``merit sim --dram python`` runs it: CPU seconds per cycle;
2. the same run under cProfile (cocotb's ``COCOTB_ENABLE_PROFILING``): how the Python time
   splits between the DRAM model (``merit.sim.dram.Dram`` and cocotbext-axi's channel
   coroutines), the bench's coroutines and the rest (cocotb's scheduler and triggers);
3. the fast DRAM in a model built with the Python path's Verilator options (only the top's
   ports public, ``--x-assign unique``, ``-Os``): the same evaluation work with no Python in the
   cycle loop, i.e. what Verilator's ``eval`` and the clock cost.

The Python share (1 minus 3) is split in the proportions of 2. Writes
``docs/results/simprofile.md`` and ``.json``.
"""

import argparse
import json
import os
import pstats
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
#: name -> (lanes, taus, problem factory, what)
CONFIGS = {
    "tau8": (8, None, "gemm(64, 128, 64)", "one TAU of 8 lanes"),
    "top8x4": (8, 4, "gemm(64, 128, 64)", "MERIT-z, 4 TAUs x 8 lanes"),
}
#: The Python path's Verilator options, for run 3 (the fast DRAM, the same evaluation work).
#: (Only the top's ports public, as there: ``merit.sim.build.ports_public``.)
PYTHON_PATH_ARGS = ["-Wall", "--x-assign", "unique", "--x-initial", "unique", "-Wno-fatal"]
PYTHON_PATH_OPT = "-Os"


def _split(pstat_file):
    """Seconds of Python time: ``{"dram", "bench", "other", "total"}`` from a cProfile dump."""
    stats = pstats.Stats(str(pstat_file)).stats
    total = sum(tt for (_, _, tt, _, _) in stats.values())
    dram = bench = 0.0
    for (path, _line, _func), (_cc, _nc, tt, _ct, _callers) in stats.items():
        file = Path(path).name
        if "cocotbext" in path and file.startswith("axil_") or file.startswith("cocotb_") \
                or file == "run.py":
            bench += tt         # the bench, its control-port master, the progress line
        elif "cocotbext" in path or file == "dram.py":
            dram += tt
    return {"dram": dram, "bench": bench, "other": total - dram - bench, "total": total}


def profile(name, seed=1):
    from merit import workloads as W
    from merit.sim import fast
    from merit.sim import run as S

    lanes, taus, factory, what = CONFIGS[name]
    problem = eval(f"W.{factory}", {"W": W})
    # 1: the Python path, CPU per cycle
    plain = S.simulate(problem, lanes=lanes, taus=taus, seed=seed, dram="python")
    # 2: under cProfile
    os.environ["COCOTB_ENABLE_PROFILING"] = "1"
    try:
        S.simulate(problem, lanes=lanes, taus=taus, seed=seed, dram="python")
    finally:
        del os.environ["COCOTB_ENABLE_PROFILING"]
    from merit.sim.build import sim_build_root
    builds = sim_build_root()
    module = f"tau_n{lanes}" if taus is None else f"top_n{lanes}_t{taus}"
    dumps = sorted(builds.glob(f"{module}-*/run-*/cocotb.pstat"), key=lambda p: p.stat().st_mtime)
    split = _split(dumps[-1])
    # 3: the same evaluation work without Python in the loop
    config = {"problem": str(S._problem_file(problem)), "lanes": lanes, "bytes_per_cycle": 8,
              "latency": 20, "shift": 0, "rp_bytes": list(S.RP_BYTES), "cp_bytes": 5120,
              "max_outputs": None, "instructions": S.program_slots(problem, 0)}
    if taus is not None:
        config["taus"] = taus
        top = S.top_for(lanes, taus, instructions=config["instructions"])
    else:
        top = S.tau_for(lanes, instructions=config["instructions"])
    evaluation = fast.run(top, config=config, name=module, seed=seed,
                          args=PYTHON_PATH_ARGS, opt_fast=PYTHON_PATH_OPT)
    per_cycle = plain["sim_cpu_seconds"] / plain["sim_cycles"]
    eval_per_cycle = min(per_cycle, evaluation["sim_cpu_seconds"] / evaluation["sim_cycles"])
    python = per_cycle - eval_per_cycle
    shares = {part: python * split[part] / split["total"] for part in ("dram", "bench", "other")}
    row = {"what": what, "problem": factory, "cycles": plain["sim_cycles"],
           "cpu_us_per_cycle": round(1e6 * per_cycle, 2),
           "wall_us_per_cycle": round(1e6 * plain["sim_seconds"] / plain["sim_cycles"], 2),
           "verilator_eval_us": round(1e6 * eval_per_cycle, 2),
           "dram_coroutines_us": round(1e6 * shares["dram"], 2),
           "bench_coroutines_us": round(1e6 * shares["bench"], 2),
           "cocotb_scheduling_us": round(1e6 * shares["other"], 2),
           "profiled_python_s": {k: round(v, 2) for k, v in split.items()},
           "same_cycles": evaluation["cycles"], "python_cycles": plain["cycles"],
           "load": round(os.getloadavg()[0], 1)}
    print(name, json.dumps(row), flush=True)
    return row


def write(rows, command):
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    from bench.simspeed import _machine
    machine = _machine()
    record = {"command": command, "date": date, "machine": machine, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "simprofile.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    lines = ["| configuration | CPU us / cycle | Verilator eval + clock | Python DRAM coroutines | "
             "bench coroutine | cocotb scheduling |", "|---|---:|---:|---:|---:|---:|"]
    for _name, r in rows.items():
        total = r["cpu_us_per_cycle"]

        def cell(key, r=r, total=total):
            return f"{r[key]} ({100 * r[key] / total:.0f} %)"
        lines.append(f"| {r['what']} (`{r['problem']}`, {r['cycles']:,} cycles) | {total} | "
                     f"{cell('verilator_eval_us')} | {cell('dram_coroutines_us')} | "
                     f"{cell('bench_coroutines_us')} | {cell('cocotb_scheduling_us')} |")
    table = "\n".join(lines)
    text = f"""# Where a cycle's time goes on the Python DRAM path

`{command}` ({date}; {machine['cpu']}, {machine['cores']} cores, shared with other jobs).

Microseconds of the simulator's CPU time per simulated cycle with the Python DRAM model
(cocotbext-axi's RAM behind coroutines awaited every cycle). *Verilator eval + clock* is the
same model's CPU time per cycle with the DRAM inside the model (same Verilator options: only
the top's ports public, `--x-assign unique`, `-Os`), so no Python runs per cycle; the rest is
Python and cocotb, split in the proportions cProfile measures: the DRAM model
(`merit.sim.dram.Dram`'s throttle and cocotbext-axi's five channel coroutines), the bench's
coroutine (the TAU bench feeds tiles every cycle; the processor's bench sleeps on the
interrupt) and cocotb's scheduler / triggers. How the fast path removes each part:
`docs/simulation.md`.

{table}
"""
    (RESULTS / "simprofile.md").write_text(text)
    print(f"wrote {RESULTS / 'simprofile.md'} and simprofile.json")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CONFIGS), action="append")
    args = parser.parse_args(argv)
    names = args.only or list(CONFIGS)
    rows = {name: profile(name) for name in names}
    write(rows, "python -m bench.simprofile" + "".join(f" --only {n}" for n in args.only or ()))


if __name__ == "__main__":
    main()
