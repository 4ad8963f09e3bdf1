"""The performance model against the RTL measurements: ``python -m bench.perf``.

Predicts (:func:`merit.perf.predict`) every RTL measurement in ``docs/results/`` and writes the
table with the errors to ``docs/results/perf.md``.
"""

import json
from pathlib import Path

from merit.perf import RP_BYTES, predict
from merit.suite import WORKLOADS

__all__ = ["calibration_table", "main"]

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def _workloads():
    """name -> problem factory of :data:`merit.suite.WORKLOADS`."""
    return {name: factory for name, (factory, _) in WORKLOADS.items()}


#: Row files that :func:`calibration_table` reads besides ``tau.json``, when they exist.
ROW_FILES = ("perf_n8.json", "utilization.json", "utilization_one_tau.json")


def recorded_ports(record):
    """The ports of the RP banks a stored run had: its ``rp_ports``, or 1 for a run from
    before the field was recorded (the banks were single-port then)."""
    return int(record.get("rp_ports", 1))


def recorded_merge(record):
    """Whether a stored run's kernels read merged DRAM rows (``merit.compile.merged_rows``):
    its ``merge_rows``, or False for a run from before the compiler merged them (its kernels
    read the source tensors' own rows)."""
    return bool(record.get("merge_rows", False))


def recorded_clear(record):
    """Whether a stored run's programs left an output's zero init to the CP's clear
    (``merit.compile.without_zero_init``): its ``clear_init``, or False for a run from before."""
    return bool(record.get("clear_init", False))


def recorded_align(record):
    """Whether a stored run's kernels placed each input tensor at the offset within its first
    beat that the DMA reads in the fewest beats (``merit.compile.beat_aligned``): its
    ``align_tensors``, or False for a run from before (every tensor on a 64-byte boundary)."""
    return bool(record.get("align_tensors", False))


def recorded_hold(record):
    """Whether a stored run's kernels held a slot's tile across a TAU's jobs with the same
    footprint (``compile_problem(hold=True)``, ``bench.top --hold``): its ``hold``, or False
    for a run without the field (the compiler's default)."""
    return bool(record.get("hold", False))


def recorded_clip(record):
    """Whether a stored run's kernels loaded footprints cut to the parallel space along the
    indices of one tile (``merit.compile.clipped_box``): its ``clip_box``, or False for a run
    from before (the whole tile's footprint)."""
    return bool(record.get("clip_box", False))


def recorded_compiler(record):
    """The compiler's choices a stored run's kernels were compiled with, as the keyword
    arguments of ``merit.compile.compile_problem``: :func:`recorded_merge`,
    :func:`recorded_clear`, :func:`recorded_align`, :func:`recorded_hold` and
    :func:`recorded_clip`."""
    return dict(merge_rows=recorded_merge(record), clear_init=recorded_clear(record),
                align_tensors=recorded_align(record), hold=recorded_hold(record),
                clip_box=recorded_clip(record))


def calibration_table(results=RESULTS):
    """Predicted vs measured cycles of every RTL measurement in ``results``.

    Reads ``tau.json`` (one 32-lane TAU, ``bench/tau.py``) and each of
    :data:`ROW_FILES` that exists: ``perf_n8.json`` (one 8-lane TAU) and ``utilization.json``
    (the processor), both ``{"rows": {name: {"problem", "cycles", "taus", "lanes", ...}}}`` where
    ``problem`` names a workload of ``bench/tau.py``, or ``function``, ``args`` and
    ``kwargs`` call a :mod:`merit.workloads` function (other rows, and rows without a number of
    cycles, are skipped);
    ``dram_bytes_per_cycle``, ``latency``, ``rp_bytes``, ``cp_bytes``, ``instructions`` and
    ``rp_ports`` are optional (a run that does not record ``rp_ports``, in its row or in
    ``tau.json``'s setup, had single-port RP banks: it predates the two-port banks of
    ``merit.arch.RP_PORTS``, and is predicted with single-port banks).
    A row's optional ``bench`` (``"tau"``: one TAU driven by the bench, ``"top"``: the processor
    through its control port) is appended to its source. Returns a list of dicts ``source, name,
    lanes, taus, bandwidth, measured, predicted, error`` (relative, signed) and ``bound``.
    """
    results = Path(results)
    factories = _workloads()
    rows = []
    tau = json.loads((results / "tau.json").read_text())
    setup = tau["setup"]
    from merit.compile import compile_problem
    for name, r in sorted(tau["workloads"].items()):
        ports = recorded_ports(setup)
        kernel = compile_problem(factories[name](), lanes=setup["lanes"], instructions=24,
                                 rp_ports=ports, **recorded_compiler(setup))
        p = predict(kernel, taus=1, dram_bytes_per_cycle=setup["dram_bytes_per_cycle"],
                    latency=setup["latency"], rp_ports=ports)
        rows.append(_row("tau.json", name, r["cycles"], p))
    for source in ROW_FILES:
        path = results / source
        if not path.exists():
            continue
        for name, r in sorted(json.loads(path.read_text()).get("rows", {}).items()):
            if not isinstance(r.get("cycles"), (int, float)):
                continue
            if source.startswith("utilization") and "problem" not in r and "function" not in r:
                r = dict(r, table=r.get("table", "paper"))     # a row of merit.paper (a slice)
            problem = _row_problem(r, name, factories)
            if problem is None or not isinstance(r.get("cycles"), (int, float)):
                continue
            rp_bytes = tuple(r.get("rp_bytes", RP_BYTES))
            kernel = compile_problem(problem, lanes=int(r.get("lanes", 32)),
                                     instructions=int(r.get("instructions",
                                                            _instruction_slots(problem))),
                                     rp_bytes=rp_bytes, cp_bytes=int(r.get("cp_bytes", 5120)),
                                     taus=int(r.get("taus", 1)), rp_ports=recorded_ports(r),
                                     **recorded_compiler(r))
            p = predict(kernel, taus=int(r.get("taus", 1)),
                        dram_bytes_per_cycle=r.get("dram_bytes_per_cycle", 8),
                        latency=int(r.get("latency", 20)), rp_bytes=rp_bytes,
                        rp_ports=recorded_ports(r))
            label = f"{source} ({r['bench']})" if "bench" in r else source
            rows.append(_row(label, name, r["cycles"], p))
    return rows


def _row_problem(row, name, factories):
    """The problem of a measurement row: ``function`` + ``args`` / ``kwargs`` call a
    :mod:`merit.workloads` function; a row of ``utilization.json`` (``table`` VIII / IX) is the
    slice of that row of :mod:`merit.paper`; else ``problem`` (default: the row's name) names a
    workload of ``bench/tau.py``. None when neither is known."""
    from merit import workloads as W
    if row.get("table") in ("VIII", "IX", "paper"):     # utilization*.json: merit.paper rows
        from merit.paper import row as paper_row
        # the whole layer, one layer of the row, or the slice
        ran = paper_row(name).ran(row.get("simulated"))
        # a row of several problems run one after the other (a transposed convolution's phase
        # groups) has no single kernel: bench.top gives the model's error on their sum
        return ran[0] if len(ran) == 1 else None
    function = row.get("function")
    if function is not None:
        if function not in W.__all__:
            return None
        return getattr(W, function)(*row.get("args", ()), **row.get("kwargs", {}))
    factory = factories.get(row.get("problem", name))
    return factory() if factory is not None else None


def _instruction_slots(problem):
    """Program slots of the TAU that ran ``problem`` (:func:`merit.compile.program_slots`)."""
    from merit.compile import program_slots
    return program_slots(problem)


def _row(source, name, measured, p):
    return {"source": source, "name": name, "lanes": p.lanes, "taus": p.taus,
            "bandwidth": p.dram_bytes_per_cycle, "measured": int(measured), "predicted": p.cycles,
            "error": (p.cycles - measured) / measured, "bound": p.bound}


def _markdown(rows, command):
    import datetime
    import platform
    worst = max((abs(r["error"]) for r in rows), default=0.0)
    lines = [
        "# Performance model vs RTL measurements",
        "",
        f"Command: `{command}` ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
        f"UTC, {platform.node() or 'unknown host'}, {platform.machine()}, Python "
        f"{platform.python_version()}). Model: `merit.perf` (`docs/perf.md`); measurements: "
        "`docs/results/tau.json` (one 32-lane TAU, `bench/tau.py`), "
        "`docs/results/perf_n8.json` (8 lanes: one TAU driven by the bench, `(tau)`, and the "
        "processor with 1, 2 or 4 TAUs through its control port, `(top)`; `python -m bench.perf "
        "--remeasure` runs them again) and, when present, "
        "`docs/results/utilization.json` (the processor). "
        "Error = (predicted - measured) / measured.",
        "",
        "| source | workload | lanes | TAUs | B/cycle | measured cycles | predicted | error "
        "| bound (model) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['source']} | {r['name']} | {r['lanes']} | {r['taus']} | "
                     f"{r['bandwidth']:g} | {r['measured']} | {r['predicted']} | "
                     f"{100 * r['error']:+.1f} % | {r['bound']} |")
    lines += ["", f"Max |error|: {100 * worst:.1f} % over {len(rows)} rows (target: 10 %)."]
    for source in sorted({r["source"] for r in rows}):
        mine = [abs(r["error"]) for r in rows if r["source"] == source]
        lines.append(f"* `{source}`: {len(mine)} rows, max |error| {100 * max(mine):.1f} %, "
                     f"mean |error| {100 * sum(mine) / len(mine):.1f} %.")
    return "\n".join(lines) + "\n"


def as_built(hold=False):
    """The compiler's choices and the RP ports of the processor as built (the defaults of
    ``merit.compile.compile_problem`` and ``merit.sim.simulate``; ``hold`` as given), as a run
    records them beside its cycles (``bench.top``, :func:`remeasure`), so that
    :func:`recorded_compiler` and :func:`recorded_ports` compile its kernels again."""
    from merit.arch import RP_PORTS
    return {"rp_ports": RP_PORTS, "cp_sets": 2, "merge_rows": True, "clear_init": True,
            "align_tensors": True, "clip_box": True, "hold": hold}


def remeasure(results=RESULTS, *, names=None, seed=1, progress=print):
    """Run the rows of ``perf_n8.json`` again on the RTL as it is now and store them there.

    Each row runs as its ``about`` says: bench ``"tau"`` one 8-lane TAU driven by the bench (24
    instruction slots, the default SRAMs), bench ``"top"`` the processor with its ``taus``
    through its control port (its ``rp_bytes``, ``cp_bytes`` and ``instructions``), seed
    ``seed``, at its bandwidth and latency, compiled with the compiler's defaults (recorded with
    the row, :func:`as_built`). ``names``: only these rows (a ValueError names those it does not
    hold). Returns the rows run."""
    from bench import now
    from merit.sim import simulate
    path = Path(results) / "perf_n8.json"
    data = json.loads(path.read_text())
    unknown = sorted(set(names or ()) - set(data["rows"]))
    if unknown:
        raise ValueError(f"perf_n8.json has no rows {unknown} (its rows: "
                         f"{', '.join(sorted(data['rows']))})")
    factories = _workloads()
    date = now()
    done = {}
    for name, r in sorted(data["rows"].items()):
        if names and name not in names:
            continue
        problem = _row_problem(r, name, factories)
        if problem is None:
            raise ValueError(f"perf_n8.json row {name!r}: no problem (expected 'problem' naming "
                             f"a workload of bench/tau.py, or 'function' and 'args')")
        options = dict(lanes=int(r["lanes"]), seed=seed, latency=int(r.get("latency", 20)),
                       dram_bytes_per_cycle=r.get("dram_bytes_per_cycle", 8))
        if r.get("bench") == "top":
            options.update(taus=int(r["taus"]), rp_bytes=tuple(r["rp_bytes"]),
                           cp_bytes=int(r["cp_bytes"]), instructions=int(r["instructions"]))
        else:
            options.update(instructions=int(r.get("instructions", 24)))
        m = simulate(problem, **options)
        entry = {k: v for k, v in r.items() if k not in ("remeasured", "cycles_register")}
        entry.update(cycles=m["cycles"], read_beats=m["read_beats"],
                     write_beats=m["write_beats"], utilization=m["utilization"],
                     tiling=m["tiling"], rtl_date=date, **as_built())
        if r["cycles"] != m["cycles"]:
            entry["before"] = r["cycles"]
        done[name] = entry
        progress(f"{name:24} {r['cycles']:7} -> {m['cycles']:7} cycles ({m['tiling']})")
    data["rows"].update(done)
    data.pop("superseded", None)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return done


def main(argv=None):
    """``python -m bench.perf [--out FILE] [--remeasure [ROW ...]]``: print the calibration
    table and write it as Markdown (default ``docs/results/perf.md``); with ``--remeasure``, run
    the 8-lane rows again on the RTL first (:func:`remeasure`)."""
    import argparse
    parser = argparse.ArgumentParser(description="merit.perf against the RTL measurements")
    parser.add_argument("--out", default=str(RESULTS / "perf.md"))
    parser.add_argument("--remeasure", nargs="*", metavar="ROW",
                        help="first run these rows of perf_n8.json (none named: all of them) "
                             "again on the RTL as it is now, and store them there")
    args = parser.parse_args(argv)
    if args.remeasure is not None:
        remeasure(names=set(args.remeasure) or None)
    rows = calibration_table()
    for r in rows:
        print(f"{r['source']:17} {r['name']:18} lanes={r['lanes']:2} taus={r['taus']} "
              f"B/cycle={r['bandwidth']:g} measured={r['measured']:8} "
              f"predicted={r['predicted']:8} error={100 * r['error']:+6.1f} %  {r['bound']}")
    Path(args.out).write_text(_markdown(rows, "python -m bench.perf"))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
