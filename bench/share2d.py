"""``python -m bench.top --share-dims {1,2}``: rows of the paper's tables on MERIT-z with 1-D or
2-D operand sharing between TAUs (``docs/tau.md`` §10).

Each row runs as :mod:`bench.top` runs it (the same slice or whole layer, the Verilator model of
``meritz.top.Top`` through its control port, bit-exact against the golden ISA model), compiled
with ``compile_problem(share_dims=D)``: 1 is the processor's 1-D sharing (the tables' runs), 2
its two-dimensional sharing where the compiler's plan shares two operands. ``merit.perf``
predicts the same kernel. Results accumulate in ``docs/results/share2d.json`` (keyed by row, TAU
count and ``D``; a run replaces only its own entries) and are rendered into
``docs/results/share2d.md``: per row and TAU count, the 1-D and 2-D runs side by side.
"""

import json
import time
from pathlib import Path

from bench import machine, now

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
OUT = RESULTS / "share2d"
#: rows run when no ``--only`` is given: GEMM and a convolution of Table VIII
ROWS = ("gemm", "alexnet_conv1")


def run_row(name, *, dims, lanes, taus, bandwidth, latency, seed, whole_under, command=""):
    """Simulate and predict row ``name`` with ``share_dims=dims``; return its entry."""
    from bench.top import simulated, standard_ops
    from merit.compile import compile_problem, program_slots
    from merit.perf import predict
    from merit.sim import simulate

    problems, part = simulated(name, whole_under=whole_under, lanes=lanes, taus=taus,
                               bandwidth=bandwidth, latency=latency)
    start = time.time()
    runs = []
    for p in problems:
        kernel = compile_problem(p, lanes=lanes, taus=taus, share_dims=dims,
                                 instructions=program_slots(p, 0))
        model = predict(kernel, taus=taus, dram_bytes_per_cycle=bandwidth, latency=latency)
        m = simulate(p, lanes=lanes, taus=taus, dram_bytes_per_cycle=bandwidth, latency=latency,
                     seed=seed, share_dims=dims, progress=lambda line: print(line, flush=True))
        assert m["tiling"] == f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}", m["tiling"]
        runs.append({"problem": p.name, "cycles": m["cycles"], "model_cycles": model.cycles,
                     "read_beats": m["read_beats"], "write_beats": m["write_beats"],
                     "tiling": m["tiling"], "sharing": m["sharing"],
                     "utilization": m["utilization"]})
    cycles = sum(r["cycles"] for r in runs)
    model = sum(r["model_cycles"] for r in runs)
    ops = standard_ops([(p, 1) for p in problems])
    return {"row": name, "dims": dims, "taus": taus, "lanes": lanes, "simulated": part,
            "cycles": cycles, "model_cycles": model,
            "model_error": round(model / cycles - 1, 4),
            "utilization_std": round(ops / (cycles * lanes * taus), 4),
            "read_beats": sum(r["read_beats"] for r in runs),
            "sharing": " + ".join(r["sharing"] for r in runs),
            "tiling": " + ".join(r["tiling"] for r in runs),
            "runs": runs, "wall_s": round(time.time() - start, 1), "command": command,
            "date": now()}


def render(results):
    setup = results["setup"]
    lines = [
        "# Two-dimensional operand sharing on the RTL",
        "",
        "Rows of the paper's tables on the Verilator model of MERIT-z (`meritz.top.Top`, "
        f"{setup['lanes']} lanes per TAU, DRAM {setup['dram_bytes_per_cycle']} bytes/cycle, "
        f"read latency {setup['latency']}), compiled with `compile_problem(share_dims=1)` (the "
        "processor's 1-D sharing: one operand per TAU group) and `share_dims=2` (two operands, "
        "each by its own groups: blocks of TAUs, `docs/tau.md` §10), bit-exact against the "
        "golden ISA model. Utilization is the standard one (`docs/perf.md`); *model* is "
        "`merit.perf.predict` for the same kernel, its error against the RTL in parentheses.",
        "",
        "Commands (one invocation per `--share-dims` and TAU count): " + ", ".join(
            f"`{c}`" for c in sorted({e.get("command", setup["command"])
                                      for e in results["runs"].values()})) + ". "
        f"Machine: {setup['machine']}.",
        "",
        "| row | TAUs | 1-D: shared | cycles | util. | model (error) | 2-D: shared | cycles | "
        "util. | model (error) | read beats 1-D -> 2-D | run (UTC) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(e["row"], e["taus"]) for e in results["runs"].values()})
    for name, taus in keys:
        one = results["runs"].get(f"{name}@{taus}@1")
        two = results["runs"].get(f"{name}@{taus}@2")

        def cell(e, *fields):
            return [str(e[f]) if e else "-" for f in fields]

        def model(e):
            return f"{e['model_cycles']} ({e['model_error']:+.1%})" if e else "-"

        beats = (f"{one['read_beats']} -> {two['read_beats']}" if one and two else "-")
        dates = ", ".join(sorted({e["date"] for e in (one, two) if e}))
        lines.append("| " + " | ".join([
            name, str(taus), *cell(one, "sharing", "cycles", "utilization_std"), model(one),
            *cell(two, "sharing", "cycles", "utilization_std"), model(two), beats,
            dates]) + " |")
    lines += ["", "Tilings: " + "; ".join(
        f"{e['row']} on {e['taus']} TAUs, {e['dims']}-D: {e['tiling']} ({e['simulated']})"
        for _, e in sorted(results["runs"].items())) + "."]
    return "\n".join(lines) + "\n"


def main(args, argv):
    """Run ``args.only`` (default :data:`ROWS`) with ``--share-dims``; write the page."""
    from merit.paper import row
    names = args.only or list(ROWS)
    for name in names:
        row(name)                                   # KeyError listing the rows
    out = Path(args.out) if args.out else OUT
    path = out.with_suffix(".json")
    results = json.loads(path.read_text()) if path.exists() else {"runs": {}}
    results["setup"] = {
        "lanes": args.lanes, "dram_bytes_per_cycle": args.dram_bytes_per_cycle,
        "latency": args.latency,
        "command": "python -m bench.top " + " ".join(argv),
        "machine": machine(),
    }
    for name in names:
        print(f"== {name} on {args.taus} TAUs, share_dims={args.share_dims}", flush=True)
        entry = run_row(name, dims=args.share_dims, lanes=args.lanes, taus=args.taus,
                        bandwidth=args.dram_bytes_per_cycle, latency=args.latency,
                        seed=args.seed, whole_under=args.whole_under,
                        command=results["setup"]["command"])
        print(f"{name}: {entry}", flush=True)
        results["runs"][f"{name}@{args.taus}@{args.share_dims}"] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        out.with_suffix(".md").write_text(render(results))
