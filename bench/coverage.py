"""Functional coverage of the Verilator benches, written to ``docs/results/coverage.md`` and
``coverage.json``: the bins and crosses of ``verif/funcov.py`` (cocotb-coverage), merged over

* the fault and fuzz regression of the processor (``verif/test_top_fuzz.py``, 8 lanes, 2 TAUs,
  stand-in TAU): run states and transitions, scenario x error code, START checks, stops by the
  state they hit and their cycle relative to ``finished``;
* the read butterfly bench (``verif/test_butterfly.py``, the 8-lane configurations of
  ``make test``): routing cases;
* the compute pipeline: opcode x operand kind (and the LOGIC functions) of the random
  instruction streams of the SIMD array bench (``verif/test_simd.py``, 8 lanes, checked against
  ``merit.isa`` instruction by instruction) and of every program the TAU bench runs
  (``verif/test_tau.py``, ``make regress``; read from the compiled programs, each bit-exact
  there).

``python -m bench.coverage`` (``make coverage``) runs the fuzz, butterfly and SIMD benches (one
Verilator build each, cached); ``--fuzz-json`` takes the fuzz coverage from a longer run
instead (the ``coverage`` metric that :func:`test_top_fuzz.fuzz` returns). Bins that cannot be
hit by design are listed apart from the holes, each with its reason.
"""

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "verif"))        # the benches and funcov live in verif/

import funcov  # noqa: E402

#: Bins no bench can hit, by design: (item, bin) -> why.
BY_DESIGN = {}
for _a, _b, _why in (
        ("idle", "flushing", "a flush only follows a run (START goes to running or done)"),
        ("done", "flushing", "a flush only follows a run (START goes to running or done)"),
        ("flushing", "running", "a flush ends in done (quiet), or in reset"),
        ("flushing", "idle", "a flush ends in done (quiet), or in reset"),
        ("running", "idle", "a run ends in done or a flush, or in reset"),
        ("reset", "running", "after reset the processor is idle until START"),
        ("reset", "flushing", "after reset the processor is idle until START"),
        ("reset", "done", "after reset the processor is idle until START")):
    BY_DESIGN[("top.fsm.transition", f"{_a} -> {_b}")] = _why
for _e, _why in (("CONFLICT", "the stand-in TAU has no read network (the real TAU's benches, "
                  "verif/test_top_robust.py, raise it)"),
                 ("TAU", "the stand-in TAU raises no TAU error (verif/test_top_robust.py "
                  "runs an illegal instruction on the real TAU)")):
    BY_DESIGN[("top.run.error", _e)] = _why
BY_DESIGN[("top.run.scenario_x_error", "axi_errors_both x AXI_WRITE")] = (
    "the bench poisons the first read beat of every run with read errors, which comes before "
    "any write response")
BY_DESIGN[("top.stop.kind_x_state", "reset x finishing")] = (
    "'finishing' (the cycle finished is high) is measured for aborts; a reset is binned by the "
    "run state it hits")
for _why in ("select-driven vectors (no routing) have no conflict and no shared word",):
    BY_DESIGN[("butterfly.kind_x_conflict", "select x True")] = _why
    BY_DESIGN[("butterfly.kind_x_multicast", "select x True")] = _why
BY_DESIGN[("butterfly.kind_x_conflict", "permutation x True")] = (
    "an XOR-constant permutation always routes through the butterfly")
BY_DESIGN[("butterfly.kind_x_multicast", "permutation x True")] = (
    "a permutation reads every word once")


#: What the holes that remain come from: (item, bins) -> note.
HOLE_NOTES = {
    ("top.run.scenario_x_error", ("abort_in_flush x NONE",)): "the first abort of that scenario "
                                                             "came before the end in every run",
    ("top.run.scenario_x_error", ("abort_near_done x ABORTED",)): "every abort of that scenario "
                                                                 "came after the end",
}


def fuzz_coverage(seed, fuzz_runs, storm_runs, error_runs, exact_runs):
    from test_top_fuzz import fuzz
    metrics = fuzz(seed, fuzz_runs=fuzz_runs, storm_runs=storm_runs, error_runs=error_runs,
                   exact_runs=exact_runs)
    if "build" in metrics:
        metrics["build"]["dir"] = Path(metrics["build"]["dir"]).name   # the model, not this machine
    return metrics["coverage"], {k: v for k, v in metrics.items() if k != "coverage"}


def butterfly_coverage():
    from harness import run_bench
    from meritz.tau.rp.butterfly import Butterfly
    from test_butterfly import BUTTERFLIES, _butterfly_config
    out = []
    for param in BUTTERFLIES:
        params = param.values[0]
        if params["lanes"] != 8:
            continue
        dut = Butterfly(**params)
        metrics = run_bench(dut, bench="test_butterfly", config=_butterfly_config(dut,
                                                                                  vectors=300))
        out.append(metrics["coverage"])
    return funcov.merge(*out)


def simd_coverage():
    from harness import run_bench
    from meritz.tau.cp.simd import SimdArray
    from test_simd import CASES
    lanes, commands = CASES["n8"]
    top = SimdArray(lanes=lanes)
    metrics = run_bench(top, bench="test_simd", name="simd_n8",
                        config={"lanes": lanes, "depth": top.depth, "commands": commands})
    return metrics["coverage"]


def tau_coverage():
    from merit.compile import compile_problem
    from test_tau import SMALL, WORKLOADS
    for name in sorted(WORKLOADS):
        kernel = compile_problem(WORKLOADS[name](), **SMALL)
        for word in kernel.program.words:
            funcov.instruction(word)
    return funcov.export("tau")


def _table(merged, prefix):
    lines = ["| item | bins hit | holes | cannot be hit (by design) |", "|---|---|---|---|"]
    for name, item in merged.items():
        if not name.startswith(prefix):
            continue
        bins = item["bins"]
        design = [b for b in bins if (name, b) in BY_DESIGN]
        holes = [b for b, h in bins.items() if not h and (name, b) not in BY_DESIGN]
        reachable = len(bins) - len(design)
        hit = sum(1 for b, h in bins.items() if h and (name, b) not in BY_DESIGN)
        lines.append(f"| `{name}` | {hit} / {reachable} | {', '.join(holes) or '—'} | "
                     f"{len(design) or '—'} |")
    return lines


def write(merged, runs, command, seconds, metrics=None):
    results = REPO / "docs" / "results"
    (results / "coverage.json").write_text(json.dumps(
        {"command": command, "date": time.strftime("%Y-%m-%d"), "seconds": round(seconds),
         "runs": runs, "fuzz_metrics": metrics or {}, "coverage": merged}, indent=1) + "\n")
    reachable = [(n, b) for n, item in merged.items() for b in item["bins"]
                 if (n, b) not in BY_DESIGN]
    hit = [(n, b) for n, b in reachable if merged[n]["bins"][b]]
    lines = ["# Functional coverage", "",
             f"`{command}` ({time.strftime('%Y-%m-%d')}, {seconds / 60:.0f} min on a 2-core "
             "machine shared with other jobs). Bins and crosses of `verif/funcov.py` "
             "(cocotb-coverage); a hole is a bin no run hit; bins that cannot be hit by design "
             "are counted apart, with their reasons at the end.", "",
             f"**{len(hit)} of {len(reachable)} reachable bins hit "
             f"({len(hit) / max(len(reachable), 1):.1%}).**", "",
             "Runs: " + "; ".join(f"{k} {v}" for k, v in runs.items()), "",
             "## Processor (fault and fuzz regression)", ""]
    lines += _table(merged, "top.")
    lines += ["", "## Read butterfly: routing cases", ""] + _table(merged, "butterfly.")
    lines += ["", "## Compute pipeline: opcodes x operand kinds (SIMD array streams and the TAU "
              "bench's programs)", ""] + _table(merged, "tau.")
    notes = [(n, b, note) for (n, b), note in HOLE_NOTES.items()
             if n in merged and any(merged[n]["bins"].get(x, 1) == 0 for x in b)]
    if notes:
        lines += ["", "## Where the holes come from", ""]
        lines += [f"- `{n}`{' (' + ', '.join(b) + ')' if b else ''}: {note}."
                  for n, b, note in notes]
    lines += ["", "## Bins that cannot be hit, and why", "", "| item | bin | why |",
              "|---|---|---|"]
    lines += [f"| `{n}` | {b} | {why} |" for (n, b), why in BY_DESIGN.items()
              if n in merged and b in merged[n]["bins"]]
    (results / "coverage.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--fuzz-runs", type=int, default=1000)
    parser.add_argument("--storm-runs", type=int, default=40)
    parser.add_argument("--error-runs", type=int, default=10)
    parser.add_argument("--exact-runs", type=int, default=10)
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite coverage.md from docs/results/coverage.json (no run)")
    parser.add_argument("--fuzz-json", help="the fuzz coverage of an earlier run (JSON: the "
                        "metrics fuzz() returned) instead of a new fuzz run")
    args = parser.parse_args(argv)
    start = time.monotonic()
    if args.report_only:
        data = json.loads((REPO / "docs" / "results" / "coverage.json").read_text())
        write(data["coverage"], data["runs"], data["command"], data["seconds"],
              data["fuzz_metrics"])
        return
    if args.fuzz_json:
        metrics = json.loads(Path(args.fuzz_json).read_text())
        top = metrics.pop("coverage")
    else:
        top, metrics = fuzz_coverage(args.seed, args.fuzz_runs, args.storm_runs,
                                     args.error_runs, args.exact_runs)
    runs = {k: v for k, v in metrics.items() if k.endswith("_runs")}
    merged = funcov.merge(top, butterfly_coverage(), simd_coverage(), tau_coverage())
    command = "python -m bench.coverage " + " ".join(argv if argv is not None else sys.argv[1:])
    write(merged, runs, command.strip(), time.monotonic() - start, metrics)
    total = sum(1 for n, i in merged.items() for b, h in i["bins"].items()
                if h and (n, b) not in BY_DESIGN)
    print(f"coverage: {total} bins hit; docs/results/coverage.md")


if __name__ == "__main__":
    main()
