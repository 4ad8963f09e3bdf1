"""``make bench-hw``: the paper's utilization tables (VIII, IX) and scaling (Fig. 15) on MERIT-z.

Every row of :data:`merit.paper.ROWS` runs on the Verilator model of the processor
(``meritz.top.Top``, 4 TAUs x 32 lanes by default, DRAM 8 bytes/cycle, read latency 20),
driven through its control port like software and checked bit for bit against the golden ISA
model; layers too large to simulate run as the row's slice (``docs/perf.md``). ``merit.perf``
predicts the same slice (its error against the RTL is in the table) and the full layer.
``--scaling`` adds Fig. 15: utilization against the number of ALUs, in RTL for the TAU counts
given by ``--scaling-taus`` and with the model from 32 to 1024 ALUs.

Results accumulate in ``docs/results/utilization.json`` (a run with ``--only`` updates those rows
and keeps the others) and are rendered into ``docs/results/utilization.md``::

    python -m bench.top [--only NAME ...] [--scaling] [--taus 4] [--lanes 32]

``--cp-bytes N`` compiles, simulates and predicts every row with the CP's partial-result SRAM at
``N`` bytes per TAU instead of ``merit.arch.CP_BYTES`` (the processor's parameter ``cp_bytes``);
such a run keeps its own results (``docs/results/partial_store.json`` and ``.md`` by default),
whose table adds each row's run at the default size from ``docs/results/utilization.json``.
"""

import argparse
import dataclasses
import hashlib
import inspect
import json
import sys
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np

from bench import machine, now
from merit.arch import CP_BYTES, RP_PORTS
from merit.paper import ROWS, row

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
#: the results of the default CP size, and those of another (``--cp-bytes``) unless ``--out``
DEFAULT_OUT = RESULTS / "utilization"
CP_OUT = RESULTS / "partial_store"
#: ALU counts of Fig. 15 (lanes x TAUs with 32 lanes per TAU)
SCALING_ALUS = (32, 64, 128, 256, 512, 1024)
#: rows drawn in the scaling figure
SCALING_ROWS = ("alexnet_conv3", "vgg16_conv1", "dilated", "depthwise", "gemm",
                "motion_estimation")


def standard_ops(problems):
    """The standard arithmetic count (``problem.ops``) over ``(problem, repeat)``s."""
    return sum(repeat * problem.ops.count for problem, repeat in problems)


#: kernels compiled by :func:`compile_row` in this process, by the problem's canonical
#: description and the setting: a deep layer's compile predicts each of its candidates (minutes
#: for the fused VGG layers), and one run asks for the same layer up to three times (the
#: ``--whole-under`` test, the model on what ran, the model on the full layer)
_COMPILED = {}


def compile_row(problem, *, lanes, taus, cp_bytes=CP_BYTES, rp_ports=RP_PORTS, **compiler):
    """``problem`` compiled as the bench's model columns compile it: 24 program slots (the TAU
    of the measurements), ``cp_bytes`` of CP per TAU, the tiles chosen for ``rp_ports``-port
    RP banks, and ``compiler``: the compiler's choices a run was made with (:func:`run_compiler`:
    ``merge_rows``, :func:`merit.compile.merged_rows`; ``clear_init``,
    :func:`merit.compile.without_zero_init`; ``align_tensors``, :func:`merit.compile.beat_aligned`;
    each the compiler's default where not given); compiled once per process."""
    from merit.compile import compile_problem
    # a choice equal to the compiler's default keys as left out: one kernel either way
    defaults = inspect.signature(compile_problem).parameters
    key = (json.dumps(describe_problem(problem), sort_keys=True), lanes, taus, cp_bytes,
           rp_ports, tuple(sorted((k, v) for k, v in compiler.items()
                                  if v != defaults[k].default)))
    if key not in _COMPILED:
        _COMPILED[key] = compile_problem(problem, lanes=lanes, taus=taus, instructions=24,
                                         cp_bytes=cp_bytes, rp_ports=rp_ports, **compiler)
    return _COMPILED[key]


def _model(problems, *, lanes, taus, bandwidth, latency, cp_bytes=CP_BYTES, rp_ports=RP_PORTS,
           **compiler):
    """``(ALU-busy utilization, cycles, bound, standard-count utilization)`` of the performance
    model over ``(problem, repeat)``s, or ``None`` when ``merit.perf`` is missing. Beyond the
    ``merit.arch.MAX_TAUS`` (16) TAUs that MERIT-z addresses (Fig. 15 goes to 1024 ALUs) the
    kernel is compiled for 16: its sharing groups are those of 16 TAUs. ``cp_bytes``: the CP's
    SRAM per TAU that the kernel is compiled for; ``rp_ports``: the ports of the RP banks
    predicted; ``compiler``: the compiler's choices of the run (:func:`compile_row`)."""
    try:
        from merit.perf import predict
    except ImportError:
        return None
    from merit.arch import MAX_TAUS
    useful = cycles = 0
    bounds = []
    compiled = min(taus, MAX_TAUS)
    for problem, repeat in problems:
        kernel = compile_row(problem, lanes=lanes, taus=compiled, cp_bytes=cp_bytes,
                             rp_ports=rp_ports, **compiler)
        pred = predict(kernel, taus=taus, dram_bytes_per_cycle=bandwidth, latency=latency,
                       rp_ports=rp_ports)
        useful += repeat * pred.utilization * pred.cycles * lanes * taus
        cycles += repeat * pred.cycles
        bounds.append(pred.bound)
    alus = lanes * taus
    return (useful / (cycles * alus), int(cycles), "/".join(dict.fromkeys(bounds)),
            standard_ops(problems) / (cycles * alus))


def roofline(problems, *, alus, bandwidth):
    """Utilization bound (standard count) from compulsory DRAM traffic: every input read once,
    every output written once (16-bit words), at ``bandwidth`` bytes per cycle, over
    ``(problem, repeat)``s."""
    words = 0
    for problem, repeat in problems:
        words += repeat * (sum(int(np.prod(t.shape)) for t in problem.tensors)
                           + sum(int(np.prod(o.shape)) for o in problem.outputs))
    cycles = 2 * words / bandwidth
    return min(1.0, standard_ops(problems) / (cycles * alus))


def _load(path):
    if path.is_file():
        return json.loads(path.read_text())
    return {"rows": {}, "scaling": {}}


def _describe(value):
    """A canonical, JSON-able description of what a problem runs: a dataclass by its type and
    the fields that differ from their defaults (a field added later with a default leaves the
    description as it was), sequences item by item, an array by its shape, type and a hash of
    its bytes, and any other object (a strategy, a transform) by its ``repr``, which names its
    parameters."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"type": type(value).__name__}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.default is not dataclasses.MISSING and (
                    v is f.default or not isinstance(v, np.ndarray) and v == f.default):
                continue
            out[f.name] = _describe(v)
        return out
    if isinstance(value, (tuple, list)):
        return [_describe(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"array": list(value.shape), "dtype": str(value.dtype),
                "sha1": hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def describe_problem(problem):
    """What of ``problem`` a run depends on, canonically (:func:`_describe`): its name, strategy,
    shapes, operands, tensors and outputs; not the standard count (``problem.ops``)."""
    return {"name": problem.name, "strategy": _describe(problem.strategy),
            "p_shape": _describe(problem.p_shape), "a_shape": _describe(problem.a_shape),
            "levels": _describe(problem.levels), "operands": _describe(problem.operands),
            "tensors": _describe(problem.tensors), "outputs": _describe(problem.outputs)}


def slice_key(problem, lanes, taus, bandwidth, latency, cp_bytes=CP_BYTES):
    """Identifies one simulation: rows with the same slice share one run (the standard count,
    ``problem.ops``, is not part of what runs). ``problem``: one problem, or the tuple of
    problems a row runs one after the other. A hash of the problems' canonical description
    (:func:`describe_problem`) and the setting, so a stored run stays matched to its slice when
    a class gains a field that leaves the slice as it was."""
    problems = tuple(problem) if isinstance(problem, (tuple, list)) else (problem,)
    setting = {"problems": [describe_problem(p) for p in problems], "lanes": lanes,
               "taus": taus, "bandwidth": bandwidth, "latency": latency, "cp_bytes": cp_bytes}
    blob = json.dumps(setting, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha1(blob).hexdigest()[:16]


#: program slots of the one-TAU runs: the 32-lane TAU model that :mod:`bench.tau` builds
ONE_TAU_SLOTS = 24


def simulated(name, *, whole_under=0, lanes=32, taus=4, bandwidth=8, latency=20):
    """``(problems, part)``: the tuple of problems row ``name`` simulates, one after the other,
    and what they are (:meth:`merit.paper.Row.whole`): ``"full"``, the whole layer when the
    row is one layer (one problem, or ``Row.split``: one layer run as several problems),
    ``"layer"``, one whole layer of a row of several (``Row.layer``), when ``merit.perf``
    predicts fewer than ``whole_under`` cycles for all of it, else ``"slice"``, the row's slice
    (:meth:`merit.paper.Row.slice_problems`). A layer of ``k`` groups (one problem repeated
    ``k`` times: the same kernel on each group's data, one group after the other) runs one
    group: the others take the same cycles. The prediction is that of the default CP size
    (``merit.arch.CP_BYTES``), so that a run with another (``--cp-bytes``) simulates the same
    problems as the tables it is compared with."""
    r = row(name)
    whole, part = r.whole()
    if whole_under and whole is not None:
        from merit.perf import predict
        cycles = sum(repeat * predict(compile_row(p, lanes=lanes, taus=max(taus or 1, 1)),
                                      taus=max(taus or 1, 1), dram_bytes_per_cycle=bandwidth,
                                      latency=latency).cycles
                     for p, repeat in whole)
        if cycles < whole_under:
            return r.ran(part), part
    return r.slice_problems(), "slice"


def ran_problems(name, part):
    """The tuple of problems that row ``name`` runs for ``part`` ("full": the whole layer,
    "layer": the row's one whole layer, their problems once each; else the slice)."""
    return row(name).ran(part)


def run_slice(name, *, lanes, taus, bandwidth, latency, seed, done, whole_under=0,
              cp_bytes=CP_BYTES, hold=False):
    """Simulate the slice (or the whole layer, :func:`simulated`) of row ``name`` on ``taus``
    TAUs (``None``: one TAU driven by the bench) with ``cp_bytes`` of CP per TAU (the slice or
    whole layer is chosen as for the default size), or reuse the run of a row in ``done`` with
    the same problem; return the run's entry. ``hold``: the kernels compiled with footprint
    reuse (``compile_problem(hold=True)``), recorded in the entry with the compiler's other
    choices (:func:`bench.perf.as_built`)."""
    from bench.perf import as_built
    from merit.sim import simulate

    problems, part = simulated(name, whole_under=whole_under, lanes=lanes, taus=taus,
                               bandwidth=bandwidth, latency=latency)
    key = slice_key(problems, lanes, taus or 0, bandwidth, latency, cp_bytes)
    for other, entry in done.items():
        if other != name and entry.get("slice_key") == key:
            print(f"{name}: same slice as {other}, its run is reused", flush=True)
            return dict(entry, same_run_as=other)
    start = time.time()
    extra = {"instructions": ONE_TAU_SLOTS} if taus is None else {}
    runs = []
    for p in problems:          # one run after the other, each bit-exact on its own outputs
        runs.append(simulate(p, lanes=lanes, taus=taus, dram_bytes_per_cycle=bandwidth,
                             latency=latency, seed=seed, cp_bytes=cp_bytes, hold=hold,
                             progress=lambda line: print(line, flush=True), **extra))
    cycles = sum(m["cycles"] for m in runs)
    ops = sum(p.ops.count for p in problems)
    # the kernels' operand sharing, as the runs compiled them
    sharing = None if taus is None else " + ".join(m["sharing"] for m in runs)
    std = ops / (cycles * lanes * (taus or 1))

    def total(key):
        values = [m.get(key) for m in runs]
        return None if any(v is None for v in values) else sum(values)

    busy = [m.get("dram_busy") for m in runs]
    entry = {"slice_key": key, "simulated": part,
             "utilization": round(sum(m["utilization"] * m["cycles"] for m in runs) / cycles, 4)
             if len(runs) > 1 else runs[0]["utilization"],
             "cycles": cycles, "standard_ops": ops,
             "ops_unit": problems[0].ops.unit,
             "utilization_std": round(std, 4),
             "tiles": total("tiles"),
             "tiling": " + ".join(str(m.get("tiling")) for m in runs),
             "sharing": sharing,
             "dram_busy": (round(sum(b * m["cycles"] for b, m in zip(busy, runs, strict=True))
                                 / cycles, 4)
                           if None not in busy else None),
             "useful_ops": total("useful_ops"),
             "read_beats": total("read_beats"), "write_beats": total("write_beats"),
             "lanes": lanes, "taus": taus or 1, "cp_bytes": cp_bytes, **as_built(hold),
             "bench": "tau" if taus is None else "top",
             "rtl_date": now(), "wall_s": round(time.time() - start, 1)}
    if len(runs) > 1:
        entry["runs"] = [{"problem": p.name, "cycles": m["cycles"],
                          "standard_ops": p.ops.count, "tiling": m.get("tiling"),
                          "dram_busy": m.get("dram_busy"), "read_beats": m.get("read_beats"),
                          "write_beats": m.get("write_beats")}
                         for p, m in zip(problems, runs, strict=True)]
    return entry


def measure_row(name, *, lanes, taus, bandwidth, latency, seed, done, whole_under=0,
                cp_bytes=CP_BYTES, hold=False):
    """The table entry of row ``name``: its run on ``taus`` TAUs and the row's labels."""
    r = row(name)
    entry = run_slice(name, lanes=lanes, taus=taus, bandwidth=bandwidth, latency=latency,
                      seed=seed, done=done, whole_under=whole_under, cp_bytes=cp_bytes,
                      hold=hold)
    whole = entry["simulated"] == "full" or r.slice_what == "whole layer"
    part = ("whole layer" if whole
            else f"{r.layer_what}: whole layer" if entry["simulated"] == "layer"
            else r.slice_what)
    groups = r.full()[0][1] if len(r.full()) == 1 else 1
    if entry["simulated"] == "full" and groups > 1:
        part += f" (one of its {groups} groups, the same kernel on each group's data)"
    if entry.get("runs"):
        part += f" ({len(entry['runs'])} problems, one run after the other)"
    return dict(entry, table=r.table, label=r.label, paper=r.paper, what=r.what,
                slice=part, whole=whole)


def run_ports(entry):
    """The ports of the RP banks of a row's RTL run: recorded since the banks became two-port
    (``merit.arch.RP_PORTS``); a run without the field had single-port banks; a row not run
    is the processor as built."""
    from bench.perf import recorded_ports
    return recorded_ports(entry) if entry.get("cycles") else RP_PORTS


def run_compiler(entry):
    """The compiler's choices of a row's RTL run, as keyword arguments of
    :func:`merit.compile.compile_problem` (:func:`bench.perf.recorded_compiler`: whether its
    kernels read merged DRAM rows, left the zero init to the CP's clear and placed the input
    tensors within their first beat, each recorded since the compiler does it; a run without
    a field did not); a row not run is the compiler as it is."""
    from bench.perf import recorded_compiler
    if not entry.get("cycles"):
        return {}
    return recorded_compiler(entry)


#: The full-layer model columns of a row's entry (:func:`add_model`)
FULL_MODEL_KEYS = ("model_full", "model_full_std", "model_full_cycles", "bound")


def keep_full_model(entry, stored):
    """Carry ``stored``'s full-layer model columns, with their date, into ``entry``, a new run
    of the same row (``--no-full-model``: what ran changed, the full layer did not)."""
    if stored.get("model_full") is None:
        return entry
    entry.update({k: stored.get(k) for k in FULL_MODEL_KEYS})
    entry["model_full_date"] = stored.get("model_full_date", stored.get("model_date"))
    return entry


def add_model(entry, name, *, lanes, taus, bandwidth, latency, cp_bytes=CP_BYTES, full=True):
    """Add the model's predictions (slice and full layer, ``cp_bytes`` of CP per TAU) to a row's
    entry, with the RP banks of the row's RTL run (:func:`run_ports`), so that the model's
    error is that of the same hardware. ``full=False``: the model on what ran only; the
    full-layer columns stay as the entry has them, with their date (``model_full_date``; a
    row of several deep layers takes tens of minutes to compile whole)."""
    r = row(name)
    ports, compiler = run_ports(entry), run_compiler(entry)
    entry["roofline_full"] = round(roofline(r.full(), alus=lanes * taus, bandwidth=bandwidth), 4)
    entry["roofline_full_one_tau"] = round(roofline(r.full(), alus=lanes, bandwidth=bandwidth), 4)
    ran = ran_problems(name, entry.get("simulated"))
    sliced = _model([(p, 1) for p in ran], lanes=lanes, taus=taus, bandwidth=bandwidth,
                    latency=latency, cp_bytes=cp_bytes, rp_ports=ports, **compiler)
    if sliced is None:
        entry.update(model_slice=None, model_error=None, model_full=None, bound=None)
        return entry
    entry["model_slice"] = round(sliced[0], 4)
    entry["model_slice_std"] = round(sliced[3], 4)
    entry["model_slice_cycles"] = sliced[1]
    if entry.get("cycles"):
        entry["model_error"] = round(sliced[1] / entry["cycles"] - 1, 4)
    entry["ops_unit"] = ran[0].ops.unit
    if not full:
        if entry.get("model_full") is not None and "model_full_date" not in entry:
            entry["model_full_date"] = entry.get("model_date")
        entry["model_date"] = now()
        return entry
    full = _model(r.full(), lanes=lanes, taus=taus, bandwidth=bandwidth, latency=latency,
                  cp_bytes=cp_bytes, rp_ports=ports, **compiler)
    entry["model_full"] = round(full[0], 4)
    entry["model_full_std"] = round(full[3], 4)
    entry["model_full_cycles"] = full[1]
    entry["bound"] = full[2]
    entry["model_date"] = now()
    entry.pop("model_full_date", None)
    return entry


def scaling(results, *, lanes, bandwidth, latency, rtl_taus, seed, one_tau, only=None,
            whole_under=0, save=None):
    """Fig. 15: utilization (standard count) vs ALUs of each row's whole layer (``Row.full``,
    as the tables' full-layer columns): the model for every count (``model``, with its bound,
    ``bound``), the DRAM roofline (``roofline``), and the model of the row's slice beside it
    (``model_slice``). RTL for ``rtl_taus`` (0: one TAU alone, from ``one_tau`` rows when
    measured) on the rows ``only`` (None: every row; the others keep their points, model and
    RTL): the whole layer where the model predicts it under ``whole_under`` cycles on that
    count (``rtl``), else no point (``whole_under`` 0: the row's slice, ``rtl_slice``); the
    tables' own run where it has the count. ``save``: called after each point simulated."""
    alus = list(SCALING_ALUS)
    out = results.setdefault("scaling", {})
    out["alus"] = alus
    command = ("python -m bench.top --no-rows --scaling --scaling-taus "
               + " ".join(str(t) for t in rtl_taus)
               + (f" --whole-under {whole_under}" if whole_under else "")
               + "".join(f" --only {n}" for n in only or ()))
    for name in SCALING_ROWS if only is None else [n for n in SCALING_ROWS if n in only]:
        r = row(name)
        points = [_model(r.full(), lanes=lanes, taus=a // lanes, bandwidth=bandwidth,
                         latency=latency) for a in alus]
        out.setdefault("model", {})[name] = [None if p is None else round(p[3], 4)
                                             for p in points]
        out.setdefault("bound", {})[name] = [None if p is None else p[2] for p in points]
        out.setdefault("roofline", {})[name] = [round(roofline(r.full(), alus=a,
                                                               bandwidth=bandwidth), 4)
                                                for a in alus]
        sliced = [_model([(p, 1) for p in r.slice_problems()], lanes=lanes, taus=a // lanes,
                         bandwidth=bandwidth, latency=latency) for a in alus]
        out.setdefault("model_slice", {})[name] = [None if p is None else round(p[3], 4)
                                                   for p in sliced]
        for taus in rtl_taus:
            a = max(taus, 1) * lanes
            if a not in alus:
                continue
            table = results["rows"].get(name, {})
            run = {"date": now(), "command": command}
            if taus == results.get("setup", {}).get("taus") and table.get("cycles"):
                entry = table           # the tables ran this count: their run
                run = {"date": table.get("rtl_date"), "command": TABLES_RUN}
            elif taus == 0:         # one TAU driven by the bench (no dispatcher, no arbiter)
                if name not in one_tau:
                    one_tau[name] = run_slice(name, lanes=lanes, taus=None, bandwidth=bandwidth,
                                              latency=latency, seed=seed, done=one_tau)
                entry = one_tau[name]
            elif whole_under and simulated(name, whole_under=whole_under, lanes=lanes,
                                           taus=taus, bandwidth=bandwidth,
                                           latency=latency)[1] != "full":
                print(f"scaling {name} at {a} ALUs: the whole layer is predicted over "
                      f"{whole_under} cycles, not simulated", flush=True)
                continue
            else:
                entry = run_slice(name, lanes=lanes, taus=taus, bandwidth=bandwidth,
                                  latency=latency, seed=seed, done={}, whole_under=whole_under)
            whole = entry.get("simulated") == "full"
            value = _std(entry, name)
            run["cycles"] = entry.get("cycles")
            suffix = "" if whole else "_slice"
            out.setdefault("runs" + suffix, {}).setdefault(name, {})[str(a)] = run
            out.setdefault("rtl" + suffix, {}).setdefault(name, [None] * len(alus))[
                alus.index(a)] = value
            print(f"scaling {name} at {a} ALUs ({'whole layer' if whole else 'slice'}): "
                  f"{value}", flush=True)
            if save is not None:
                save()
    out["note"] = ("utilization (standard count) of each row's whole layer (as the tables' "
                   "full-layer columns); RTL: Verilator model of Top with "
                   f"{lanes}-lane TAUs ({lanes} ALUs: one TAU driven by the bench); model: "
                   "merit.perf")


#: the command of a Fig. 15 point that is the tables' own run
TABLES_RUN = "the tables' run"


def _scaling_runs(sc, suffix=""):
    """The dates and commands of Fig. 15's RTL points, by ALU count (``scaling["runs"]``, the
    whole layers', or with ``suffix`` "_slice" ``scaling["runs_slice"]``, the slices'), as a
    sentence."""
    runs = sc.get("runs" + suffix, {})
    parts = []
    for a in sc.get("alus", []):
        measured = sorted(name for name, values in sc.get("rtl" + suffix, {}).items()
                          if values[sc["alus"].index(a)] is not None)
        if not measured:
            continue
        by = {}         # command -> (dates, rows)
        for name in measured:
            run = runs.get(name, {}).get(str(a))
            key = run["command"] if run and run.get("date") else None
            dates, names = by.setdefault(key, ([], []))
            dates += [run["date"]] if key else []
            names.append(name)
        cells = []
        for key, (dates, names) in by.items():
            rows = "" if len(names) == len(measured) else f" ({', '.join(names)})"
            if key is None:
                cells.append(f"earlier runs, dates not recorded by the bench{rows}")
                continue
            low, high = min(dates)[:16], max(dates)[:16]
            span = low if low == high else f"{low}-{high[11:]}"
            what = key if key == TABLES_RUN else f"`{key}`"
            cells.append(f"{span} UTC, {what}{rows}")
        parts.append(f"{a} ALUs: " + "; ".join(cells))
    return ("RTL points: " + "; ".join(parts)) if parts else ""


#: the sharing variants of the two-dimensional sharing prediction (``--share-prediction``):
#: label, ``compile_problem`` arguments
SHARE_VARIANTS = (
    ("1-D, as built", dict(share_dims=1)),
    ("1-D, block walk", dict(share_dims=2, share_counts=(1,))),
    ("2-D", dict(share_dims=2, share_counts=(2,))),
)


def share_prediction(results, *, lanes, taus_list, bandwidth, latency):
    """Model-only: each Fig. 15 row's slice compiled with the processor's 1-D sharing, with one
    shared operand dealt by the block walk, and with two shared operands
    (``merit.compile.share_plan``), predicted by ``merit.perf`` on ``taus_list`` TAUs."""
    from merit.compile import compile_problem
    from merit.perf import predict
    out = results["share_prediction"] = {"taus": list(taus_list), "rows": {},
                                         "dram_bytes_per_cycle": bandwidth}
    for name in SCALING_ROWS:
        problem = row(name).slice()
        cells = out["rows"][name] = []
        for taus in taus_list:
            point = []
            for label, kw in SHARE_VARIANTS:
                kernel = compile_problem(problem, lanes=lanes, taus=taus, instructions=24, **kw)
                pred = predict(kernel, taus=taus, dram_bytes_per_cycle=bandwidth,
                               latency=latency)
                sharing = (kernel.sharing if kernel.sharing is not None else
                           ((kernel.config["share_slot"], kernel.config["share_log2"]),)
                           if kernel.config["share_log2"] else ())
                point.append({"variant": label, "cycles": pred.cycles,
                              "std": round(problem.ops.count / (pred.cycles * lanes * taus), 4),
                              "tile": list(kernel.tiling.p_tile),
                              "groups": [[int(n), 1 << int(v)] for n, v in sharing],
                              "read_bytes": pred.read_bytes, "write_bytes": pred.write_bytes,
                              "compute_cycles": pred.compute_cycles})
                print(f"share prediction {name} on {taus} TAUs, {label}: {point[-1]}",
                      flush=True)
            cells.append(point)
    out["date"] = now()


def _render_share_prediction(sp, lanes):
    lines = ["### Two-dimensional operand sharing: the model's prediction", "",
             f"Model only (`merit.perf`, {sp.get('date', '')}; `python -m bench.top --no-rows "
             f"--share-prediction {' '.join(str(t) for t in sp['taus'])}`): each row's slice "
             "compiled three ways on the same TAUs. *1-D, as built*: the processor's groups "
             "(`share_slot`, `share_log2`, dealt in the grid's order). *1-D, block walk*: one "
             "shared operand, its groups dealt along the indices it does not move along "
             "(`merit.compile.share_walk`). *2-D*: two shared operands, each by its own groups "
             "of one block of TAUs (`merit.compile.share_plan`). Cells: standard-count "
             "utilization (cycles; tile; groups as slot x TAUs). The last two columns bound "
             "the 2-D kernel: its ALU cycles alone, and its output writes alone at "
             f"{sp.get('dram_bytes_per_cycle', 8)} bytes per cycle (no reads).", "",
             "| row | ALUs | " + " | ".join(label for label, _ in SHARE_VARIANTS)
             + " | bound: ALUs | bound: writes |",
             "|---|---|" + "---|" * (len(SHARE_VARIANTS) + 2)]
    for name, points in sorted(sp["rows"].items()):
        for taus, point in zip(sp["taus"], points, strict=True):
            cells = []
            for v in point:
                groups = ", ".join(f"{n} x {g}" for n, g in v["groups"]) or "none"
                tile = "x".join(str(t) for t in v["tile"])
                cells.append(f"{v['std']:.2f} ({v['cycles']}; {tile}; {groups})")
            v = point[-1]
            work = v["std"] * v["cycles"]                 # standard ops / ALUs
            writes = v["write_bytes"] / sp.get("dram_bytes_per_cycle", 8)
            cells += [_num(min(1.0, work / v["compute_cycles"])),
                      _num(min(1.0, work / writes)) if writes else ""]
            lines.append(f"| {name} | {taus * lanes} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _std(entry, name):
    """The standard-count utilization of a run entry (older entries: from their cycles)."""
    if entry.get("utilization_std") is not None:
        return entry["utilization_std"]
    ops = sum(p.ops.count for p in row(name).slice_problems())
    return round(ops / (entry["cycles"] * entry.get("lanes", 32) * entry.get("taus", 1)), 4)


def _pct(value):
    return "" if value is None else f"{value:+.1%}"


def _num(value, digits=2):
    """``value`` to ``digits`` places, halves up (as the verdict's ``paper - 0.005``): a stored
    0.945 prints 0.95, where a float's ``:.2f`` gives 0.94."""
    if value is None:
        return ""
    return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _kb(cp_bytes):
    return f"{cp_bytes / 1024:g} KB"


def cp_default(entry, name, base, *, lanes, taus, bandwidth, latency):
    """The run of row ``name`` at the default CP size in ``base`` (the results of
    ``docs/results/utilization.json``) that ``entry``, a run with another CP size, is compared
    with: ``{"cp_bytes", "cycles", "utilization_std", "rtl_date"}``, or None where ``base`` ran
    other problems or another setup."""
    setup = base.get("setup", {})
    other = base.get("rows", {}).get(name)
    if (other is None or other.get("cycles") is None
            or (setup.get("lanes"), setup.get("taus"), setup.get("dram_bytes_per_cycle"),
                setup.get("latency")) != (lanes, taus, bandwidth, latency)
            or other.get("slice_key") != slice_key(ran_problems(name, entry.get("simulated")),
                                                   lanes, taus, bandwidth, latency)):
        return None
    return {"cp_bytes": setup.get("cp_bytes", CP_BYTES), "cycles": other["cycles"],
            "utilization_std": _std(other, name),
            "rtl_date": setup.get("rtl_date") or setup.get("date")}


def _reading(results, one_tau):
    """The paragraph that explains the gaps, from the numbers."""
    setup, rows = results["setup"], results["rows"]
    alus = setup["taus"] * setup["lanes"]
    measured = [r for r in ROWS if rows.get(r.name, {}).get("cycles") is not None]
    if not measured:
        return []
    over_roof = [r.label for r in ROWS
                 if rows.get(r.name, {}).get("roofline_full") is not None
                 and r.paper > rows[r.name]["roofline_full"] + 0.005]
    dram = [r.label for r in measured if (rows[r.name].get("dram_busy") or 0) >= 0.8]
    alone_all = [r for r in measured if r.name in one_tau]
    alone_ok = [r.label for r in alone_all if _std(one_tau[r.name], r.name) >= r.paper - 0.02]
    out = ["## Reading the numbers", ""]
    out.append(
        f"* **{len(dram)} of {len(measured)} measured rows keep the DRAM port busy 80 % of the "
        f"cycles or more** on {alus} ALUs: " + (", ".join(dram) or "none") + ".")
    out.append(
        "* **The DRAM roofline** bounds any machine with 16-bit data at this bandwidth: every "
        "input read once, every output written once, nothing else. "
        + (f"The paper's figure is above that bound for {alus} ALUs on: "
           + ", ".join(over_roof) + ". No design with this DRAM reaches those figures with "
           f"{alus} ALUs; the target there is 0.95 x the roofline."
           if over_roof else "Every paper figure is below it."))
    if alone_all:
        out.append(
            f"* **One TAU alone** (32 ALUs with the whole 8 bytes per cycle) comes within 0.02 "
            f"of the paper's figure, or above it, on {len(alone_ok)} of {len(alone_all)} rows"
            + (": " + ", ".join(alone_ok) if alone_ok else "") + ".")
    out.append("")
    return out


def _verdict(r, e, alone):
    """How a row compares with the paper, on the standard count. The paper measured full layers:
    where the RTL ran a slice, the model's full layer is judged too, and the verdict says which
    of the two reaches the paper's figure when only one does."""
    ours, full = e.get("utilization_std"), e.get("model_full_std")
    sliced = not e.get("whole") and full is not None

    def reaches(value):
        return value is not None and value >= r.paper - 0.005

    if reaches(ours) and (not sliced or reaches(full)):
        verdict = "at or above"
        if ours < r.paper:      # equal to the paper's figure at its two digits, under it at three
            verdict = f"at the paper's two digits ({ours:.3f})"
    elif reaches(ours):
        verdict = f"at or above on the slice; full layer {full:.2f} (model)"
    elif sliced and reaches(full):
        verdict = f"below on the slice; full layer {full:.2f} (model)"
    else:
        verdict = "below"
    best = max(v for v in (ours, full if sliced else None, 0.0) if v is not None)
    roof = e.get("roofline_full")
    if roof is not None and r.paper > roof + 0.005:
        verdict += "; paper above the roofline"
        if best >= 0.95 * roof:
            verdict += " (ours >= 0.95 x roofline)"
    if alone is not None and alone >= r.paper - 0.02:
        verdict += "; 1 TAU within 0.02 or above"
    return verdict


def _labels(results, names):
    labels = [results["rows"][n].get("label", n) for n in names]
    return ", ".join(labels)


def _run_dates(results):
    """When each row's RTL run and model columns were made (each entry's ``rtl_date`` and
    ``model_date``; an entry from before those fields takes the page's ``rtl_date``), and the
    RP banks of the runs (:func:`run_ports`)."""
    setup, rows = results["setup"], results["rows"]
    order = [r.name for r in ROWS if r.name in rows]
    by_run, by_model, single = {}, {}, []
    for name in order:
        entry = rows[name]
        if entry.get("cycles"):
            by_run.setdefault(entry.get("rtl_date") or setup.get("rtl_date", "?"), []).append(name)
            if run_ports(entry) == 1:
                single.append(name)
        if entry.get("model_slice") is not None:
            by_model.setdefault(entry.get("model_date") or setup["date"], []).append(name)
    text = "RTL runs: " + "; ".join(f"{date}: {_labels(results, names)}"
                                     for date, names in sorted(by_run.items()))
    double = [n for n in order if rows[n].get("cycles") and n not in single]
    if not single:
        text += (". Every run has the two-port RP banks of the processor as built "
                 "(`merit.arch.RP_PORTS`: a load's rows never take a read cycle from the CP)")
    elif not double:
        text += (". Every run had the earlier single-port RP banks (each row a load writes cost "
                 "the CP a read cycle), and the model columns model those; the processor as "
                 "built has two-port banks (`merit.arch.RP_PORTS`)")
    else:
        text += (". RP banks: two-port, as built (`merit.arch.RP_PORTS`: a load's rows never "
                 "take a read cycle from the CP), in the runs of "
                 f"{_labels(results, double)}; the other runs had the earlier "
                 "single-port banks (each row a load writes cost the CP a read cycle), and "
                 "their model columns model those")
    sets = sorted(n for n, e in results["rows"].items()
                  if e.get("cycles") and e.get("cp_sets") == 2)
    if sets:        # recorded since the CP's restore and save are hidden (two register sets)
        text += (". The CP's two register sets (a lane group's restore and save hidden behind "
                 "its neighbour's steps, `docs/decisions.md`, Compute Pipeline) in the runs of "
                 f"{_labels(results, sets)}; the other runs had one set (the restore and save "
                 "in the issue slots), and their model columns are the model of that day")
    merged = sorted(n for n, e in results["rows"].items()
                    if e.get("cycles") and e.get("merge_rows") and e.get("clear_init"))
    if merged:      # recorded since the compiler merges DRAM rows and drops the zero init
        text += (". The compiler's merged DRAM rows and the zero init left to the CP's clear "
                 "(`merit.compile.merged_rows`, `without_zero_init`; `docs/decisions.md`, "
                 "Results: \"Pixel Shuffle's overhead\") in the runs of "
                 f"{_labels(results, merged)}; the other runs' kernels read the tensors' own "
                 "rows and cleared their accumulators with an instruction, and their model "
                 "columns compile them so")
    aligned = sorted(n for n, e in results["rows"].items()
                     if e.get("cycles") and e.get("align_tensors"))
    if aligned:     # recorded since the compiler places the input tensors within a beat
        text += (". The input tensors placed at the offset within their first beat that the "
                 "DMA reads in the fewest beats (`merit.compile.beat_aligned`; "
                 "`docs/decisions.md`, Results: \"GEMM, Saliency DECONV4 and VGG-16D CONV1 "
                 "against their targets\") in the runs of "
                 f"{_labels(results, aligned)}; the other runs' tensors start on 64-byte "
                 "boundaries, and their model columns compile them so")
    clipped = sorted(n for n, e in results["rows"].items()
                     if e.get("cycles") and e.get("clip_box"))
    if clipped:     # recorded since the compiler cuts the footprints to the parallel space
        text += (". The footprints cut to the parallel space along the indices of one tile "
                 "(`merit.compile.clipped_box`: the words only void lanes read not loaded; "
                 "`docs/decisions.md`, Results: \"Saliency alpha blending's DRAM port\") in "
                 f"the runs of {_labels(results, clipped)}; the other runs loaded the whole "
                 "tile's footprint, and their model columns compile them so")
    held = sorted(n for n, e in results["rows"].items() if e.get("cycles") and e.get("hold"))
    if held:        # ``--hold``: the kernels compiled with footprint reuse
        text += (". Footprint reuse (`compile_problem(hold=True)`, `--hold`: a slot alone in its "
                 "RP keeps its tile across a TAU's jobs of the same footprint; "
                 "`docs/decisions.md`, Results: \"Footprint reuse built\") in the runs of "
                 f"{_labels(results, held)}, and their model columns compile them so")
    text += ". Model columns: " + "; ".join(f"{date}: {_labels(results, names)}"
                                           for date, names in sorted(by_model.items()))
    older = [n for n in order if rows[n].get("model_full_date")]
    if older:       # full-layer columns kept from an earlier model (add_model(full=False))
        text += "; the full-layer columns of " + "; ".join(
            f"{_labels(results, [n])}: {rows[n]['model_full_date']}" for n in older)
    missing = [n for n in order if rows[n].get("model_slice") is not None
               and rows[n].get("model_full") is None]
    if missing:
        text += "; no full-layer prediction yet for " + _labels(results, missing)
    return text + "."


def render(results, one_tau=None):
    """``docs/results/utilization.md`` from the results dict (and the one-TAU rows); with a CP
    size other than ``merit.arch.CP_BYTES`` (``--cp-bytes``), the page of that size: only its
    rows, each beside its run at the default size (``cp_default`` of the entry)."""
    one_tau = one_tau or {}
    setup = results["setup"]
    cp = setup.get("cp_bytes", CP_BYTES)
    other = cp != CP_BYTES
    lines = [
        f"# MERIT-z utilization with the CP's partial-result store at {_kb(cp)}: the paper's "
        "Tables VIII and IX" if other else
        "# MERIT-z utilization: the paper's Tables VIII and IX, and Fig. 15",
        "",
        f"Command: `{setup['command']}  ",
        f"Date: {setup['date']} (this page); {_run_dates(results)}  ",
        f"Machine: {setup['machine']}",
        "",
        f"MERIT-z as built here: {setup['taus']} TAUs x {setup['lanes']} lanes "
        f"({setup['taus'] * setup['lanes']} ALUs), DRAM {setup['dram_bytes_per_cycle']} bytes "
        f"per cycle (the paper's 3.2 GB/s at 400 MHz), read latency {setup['latency']} cycles, "
        f"CP (the partial-result SRAM) {_kb(cp)} per TAU: {cp // 4:,} 32-bit partials. "
        "Cycles run from the first DRAM request to the last write response, measured on the "
        "Verilator model of `meritz.top.Top` driven through its control port; every run is "
        "bit-exact against the golden ISA model.",
        "",
        "**Two utilizations.** *std* = the layer's standard arithmetic count / (cycles x ALUs): "
        "MACs as frameworks count them (every kernel tap, padded taps included), one compare "
        "per pooled element, one add per summed term, two MACs per alpha-blended element "
        "(`problem.ops`, computed from the layer's shape, independently of the MERIT program). "
        "*busy* = ALU operations MERIT-z executes (each output's init and output "
        "instructions, steps over padding) / (cycles x ALUs). **The paper's figure is compared "
        "with std**, and the verdict is judged on it.",
        "",
        "Layers too large to simulate run as a **slice** (column *slice*; definitions in "
        "`sw/merit/paper.py`); *model* is `merit.perf`, whose cycle error against the RTL on "
        "the same slice is given, and which predicts the full layer. The roofline is the "
        "standard count over the compulsory DRAM traffic of the full layer (every input read "
        "once, every output written once). The CONV+Pool rows are one fused kernel (pooling "
        "window outer, MACs inner): where a layer's input channels do not fit one accumulation "
        "tile, every window position re-reads its inputs (`docs/decisions.md`), so the deep "
        "full layers fall below their 16-channel slices. The Saliency rows' shapes are "
        "assumptions (`sw/merit/paper.py`).",
        "",
    ]
    if other:
        lines += [
            f"Every row here is compiled, simulated and predicted with the CP at {_kb(cp)} "
            f"(`compile_problem(cp_bytes={cp})`, `Top(cp_bytes={cp})`) instead of the default "
            f"{_kb(CP_BYTES)} (`merit.arch.CP_BYTES`, the paper's size). Column *ours std, CP "
            f"{_kb(CP_BYTES)}*: the row's run in `utilization.md` (standard count; cycles), read "
            "from `utilization.json` where it ran the same problems on the same setup. Rows "
            "not listed were not run at this size.",
            ""]
    else:
        lines += [
            "**The CP's size** is a parameter of the bench (`--cp-bytes N`, default "
            f"`merit.arch.CP_BYTES`, {_kb(CP_BYTES)}): a run with another size compiles, "
            "simulates and predicts its rows with that CP and writes its own page, "
            "`partial_store.md` next to this one (its command there), with each row's result "
            "from this page beside it; this page is not changed by such a run.",
            ""]
    for table, title in (("VIII", "Table VIII: DNN layers"),
                         ("IX", "Table IX: layers from vision papers")):
        rows = [r for r in ROWS if r.table == table and (not other or r.name in results["rows"])]
        if not rows:
            continue
        ours_head = (f"ours std (RTL, {setup['taus']} TAUs, CP {_kb(cp)}) | ours std, CP "
                     f"{_kb(CP_BYTES)} (RTL; cycles)" if other
                     else f"ours std (RTL, {setup['taus']} TAUs)")
        lines += [f"## {title}", "",
                  f"| row | paper | {ours_head} | ours busy (RTL) | "
                  "slice | model std on the slice (cycle error) | model std, full layer | "
                  "model busy, full layer | bound (model) | DRAM roofline std, full layer | "
                  "DRAM busy | cycles | ours std, 1 TAU alone (RTL) | vs paper (std) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
                  + ("---|" if other else "")]
        for r in rows:
            e = results["rows"].get(r.name)
            if e is None:
                lines.append(f"| {r.label} | {r.paper:.2f} | not measured | | {r.slice_what} "
                             "| | | | | | | | | |")
                continue
            alone = one_tau.get(r.name)
            alone = None if alone is None else _std(alone, r.name)
            measured = e.get("cycles") is not None
            ours = _std(e, r.name) if measured else None
            e = dict(e, utilization_std=ours)
            base = ""
            if other:
                d = e.get("cp_default")
                base = " | " + (f"{_num(d['utilization_std'])} ({d['cycles']})" if d else "")
            lines.append(
                f"| {r.label} | {r.paper:.2f} | {_num(ours) or 'not measured'}{base} | "
                f"{_num(e.get('utilization'))} | {e.get('slice') or r.slice_what} | "
                + (f"{_num(e.get('model_slice_std'))} ({_pct(e.get('model_error'))}) | "
                   if e.get("model_slice_std") is not None else " | ") +
                f"{_num(e.get('model_full_std'))} | {_num(e.get('model_full'))} | "
                f"{e.get('bound') or ''} | {_num(e.get('roofline_full'))} | "
                f"{_num(e.get('dram_busy'))} | {e.get('cycles') or ''} | {_num(alone)} | "
                f"{_verdict(r, e, alone)} |")
        lines.append("")
    lines += _reading(results, one_tau)
    errors = [abs(e["model_error"]) for e in results["rows"].values()
              if e.get("model_error") is not None]
    if errors:
        lines += [f"Model error on the slices: max {max(errors):.1%}, mean "
                  f"{sum(errors) / len(errors):.1%} over {len(errors)} rows.", ""]
    sc = results.get("scaling") or {}
    if sc.get("alus"):
        lines += _render_scaling(sc, setup)
    if results.get("share_prediction"):
        lines += _render_share_prediction(results["share_prediction"], setup["lanes"])
    lines += ["<!-- plots:begin -->", "<!-- plots:end -->", ""]
    return "\n".join(lines)


#: Fig. 15's claim that the page checks: utilization at least this up to this many ALUs
SCALING_FLOOR, SCALING_UP_TO = 0.80, 256


def _point(sc, what, name, k):
    """Fig. 15's ``what`` ("bound", "roofline") of row ``name`` at the ``k``-th ALU count; None
    where not recorded."""
    return (sc.get(what, {}).get(name) or [None] * len(sc["alus"]))[k]


def _scaling_reading(sc):
    """Which whole layers keep :data:`SCALING_FLOOR` at every count up to
    :data:`SCALING_UP_TO` ALUs (the RTL where measured, else the model), and where the others
    first fall below it, with the model's bound and the DRAM roofline there."""
    alus = sc["alus"]
    keep, fall = [], []
    for name, values in sorted(sc.get("model", {}).items()):
        measured = sc.get("rtl", {}).get(name) or [None] * len(alus)
        for k, a in enumerate(alus):
            value = measured[k] if measured[k] is not None else values[k]
            if a > SCALING_UP_TO or value is None or value >= SCALING_FLOOR:
                continue
            b, roof = _point(sc, "bound", name, k), _point(sc, "roofline", name, k)
            fall.append(f"{name} ({value:.3f} at {a} ALUs, "
                        f"{'RTL' if measured[k] is not None else 'model'}"
                        + (f"; bound {b}" if b else "")
                        + (f"; roofline {roof:.2f}" if roof is not None else "") + ")")
            break
        else:
            keep.append(name)
    return [f"Whole layers at {SCALING_FLOOR:.2f} or more at every count up to {SCALING_UP_TO} "
            "ALUs (the RTL where measured, else the model): "
            + (", ".join(keep) or "none") + "; first below it: "
            + (", ".join(fall) or "none") + ".", ""]


def _render_scaling(sc, setup):
    """Fig. 15's section: the whole layers (RTL and model, the model's bound, the DRAM
    roofline), then the slices (RTL and model)."""
    alus = sc["alus"]
    head = ["| row | " + " | ".join(f"{a} ALUs" for a in alus) + " |",
            "|---|" + "---|" * len(alus)]

    def table(model, rtl, extra=None):
        out = list(head)
        for name, values in sorted(model.items()):
            measured = rtl.get(name, [None] * len(values))
            cells = []
            for k, (m, v) in enumerate(zip(values, measured, strict=True)):
                cell = _num(m)
                if v is not None:
                    cell = f"{v:.2f} RTL / {cell} model"
                if extra:
                    cell += extra(name, k)
                cells.append(cell)
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        return out + [""]

    def bound(name, k):
        b, roof = _point(sc, "bound", name, k), _point(sc, "roofline", name, k)
        return (f" ({b}" if b else " (") + (f"; roofline {roof:.2f})" if roof is not None
                                            else ")")

    runs = _scaling_runs(sc)
    lines = ["## Fig. 15: utilization vs ALUs", "",
             f"{sc.get('note', '')}" + (f"; {runs}" if runs else "")
             + f". DRAM stays at {setup['dram_bytes_per_cycle']} bytes per cycle, so the "
             "DRAM-bound rows fall as ALUs are added. In brackets: the model's bound and the "
             "DRAM roofline of the whole layer at that count (standard count over the "
             "compulsory traffic). From 512 ALUs (16 TAUs) the kernels are compiled for the 16 "
             "TAUs that MERIT-z addresses (`merit.arch.MAX_TAUS`).", ""]
    lines += table(sc.get("model", {}), sc.get("rtl", {}), bound)
    lines += _scaling_reading(sc)
    if sc.get("model_slice"):
        runs = _scaling_runs(sc, "_slice")
        lines += ["### The slices", "",
                  "The same rows' slices (`merit.paper`, column *slice* of the tables), as the "
                  "figure was first drawn; RTL and model on the slice (the RTL points are the "
                  "runs of their day: the kernels the compiler took then, on the processor "
                  "of then; the model is today's kernel)"
                  + (f"; {runs}" if runs else "") + ".", ""]
        lines += table(sc["model_slice"], sc.get("rtl_slice", {}))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=32)
    parser.add_argument("--taus", type=int, default=4)
    parser.add_argument("--dram-bytes-per-cycle", type=int, default=8)
    parser.add_argument("--latency", type=int, default=20)
    parser.add_argument("--only", action="append",
                        help="row name (repeatable); with --scaling also the rows of Fig. 15 "
                             "simulated")
    parser.add_argument("--model-only", action="store_true",
                        help="recompute the model columns of the stored rows, simulate nothing")
    parser.add_argument("--no-full-model", action="store_true",
                        help="the model on what each row ran only: the full-layer columns stay "
                             "as stored, with their date (the deep VGG rows' full layers take "
                             "tens of minutes to compile)")
    parser.add_argument("--no-model", action="store_true",
                        help="simulate only (add the model columns later with --model-only)")
    parser.add_argument("--one-tau", action="store_true",
                        help="run the slices on one TAU alone instead (its own JSON file, "
                             "the tables' '1 TAU' column)")
    parser.add_argument("--scaling", action="store_true", help="also Fig. 15")
    parser.add_argument("--no-rows", action="store_true",
                        help="keep the table's rows as they are (only --scaling or --one-tau)")
    parser.add_argument("--scaling-taus", type=int, nargs="*", default=[0, 4],
                        help="TAU counts simulated for Fig. 15 (0: one TAU alone, driven by "
                             "the bench; the TAU count of the tables reuses their runs)")
    parser.add_argument("--whole-under", type=int, default=0, metavar="CYCLES",
                        help="simulate a row's whole layer (one layer: one problem, its groups, "
                             "or a split layer) when the model predicts fewer cycles than this "
                             "for all of it (default 0: slices; a layer of groups runs one group)")
    parser.add_argument("--share-prediction", type=int, nargs="+", metavar="TAUS",
                        help="also predict (model only) the Fig. 15 rows with 1-D and 2-D "
                             "operand sharing on these TAU counts")
    parser.add_argument("--cp-bytes", type=int, default=CP_BYTES, metavar="N",
                        help="the CP's partial-result SRAM per TAU, in bytes, that every row is "
                             "compiled, simulated and predicted with (default: "
                             f"merit.arch.CP_BYTES, {CP_BYTES}); another size writes its own "
                             "results (see --out), beside each row's run from "
                             f"{DEFAULT_OUT.name}.json")
    parser.add_argument("--share-dims", type=int, choices=(1, 2), default=None,
                        help="run the rows (--only; default GEMM and AlexNet CONV1) compiled "
                             "with 1-D or 2-D operand sharing into their own page "
                             "(docs/results/share2d, bench/share2d.py)")
    parser.add_argument("--hold", action="store_true",
                        help="compile the rows run with footprint reuse "
                             "(compile_problem(hold=True)), recorded with each row's run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=None,
                        help="results path without suffix (.json and .md are written; default: "
                             f"docs/results/{DEFAULT_OUT.name}, or docs/results/{CP_OUT.name} "
                             "with another --cp-bytes)")
    args = parser.parse_args(argv)
    if args.share_dims is not None:
        from bench import share2d
        return share2d.main(args, sys.argv[1:] if argv is None else argv)
    other_cp = args.cp_bytes != CP_BYTES
    if other_cp and (args.one_tau or args.scaling or args.share_prediction or args.no_rows):
        parser.error("--cp-bytes other than the default runs the tables' rows only "
                     "(not --one-tau, --scaling, --share-prediction or --no-rows)")
    names = [r.name for r in ROWS]
    for name in args.only or []:
        row(name)                                   # KeyError listing the rows
    out = Path(args.out) if args.out else CP_OUT if other_cp else DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    results = _load(out.with_suffix(".json"))
    previous = results.get("setup", {})
    results["setup"] = {
        "lanes": args.lanes, "taus": args.taus, "dram_bytes_per_cycle": args.dram_bytes_per_cycle,
        "latency": args.latency, "cp_bytes": args.cp_bytes,
        "command": ("python -m bench.top " + " ".join(sys.argv[1:] if argv is None else argv)
                    + "`" + ("" if other_cp else
                             " (one row: `--only NAME`; the one-TAU column: `--one-tau`)")),
        "date": now(),
        "machine": machine(),
    }
    if previous and args.no_rows and not args.scaling and not args.one_tau:
        results["setup"] = previous     # nothing in the tables changes (--share-prediction)
    model_kw = dict(lanes=args.lanes, taus=args.taus, bandwidth=args.dram_bytes_per_cycle,
                    latency=args.latency, cp_bytes=args.cp_bytes)
    full_kw = dict(full=not args.no_full_model)
    base_kw = dict(lanes=args.lanes, taus=args.taus, bandwidth=args.dram_bytes_per_cycle,
                   latency=args.latency)

    tau_path = out.with_name(out.name + "_one_tau.json")
    one_tau = _load(tau_path)
    for store, taus, cp in ((results["rows"], args.taus, args.cp_bytes),
                            (one_tau["rows"], 0, CP_BYTES)):
        for name in list(store):
            key = store[name].get("slice_key")
            ran = ran_problems(name, store[name].get("simulated")) if name in names else None
            if name not in names or key is not None and key != slice_key(
                    ran, args.lanes, taus, args.dram_bytes_per_cycle, args.latency, cp):
                del store[name]                     # a run of a slice that has changed since

    if args.one_tau:
        alone = {}      # this run's one-TAU rows (a row with the same slice reuses a run)
        for name in args.only or names:
            print(f"== {name} on one TAU: {row(name).slice_what}", flush=True)
            one_tau["rows"][name] = alone[name] = run_slice(
                name, lanes=args.lanes, taus=None, bandwidth=args.dram_bytes_per_cycle,
                latency=args.latency, seed=args.seed, done=alone)
            print(f"{name}: {one_tau['rows'][name]}", flush=True)
            tau_path.write_text(json.dumps(one_tau, indent=2, sort_keys=True) + "\n")
        return

    base = _load(DEFAULT_OUT.with_suffix(".json")) if other_cp else None

    def save():
        for name, entry in results["rows"].items():     # the one-TAU column, for the plots
            if entry.get("cycles") is not None:
                entry["utilization_std"] = _std(entry, name)
            if name in one_tau["rows"]:
                entry["one_tau"] = _std(one_tau["rows"][name], name)
            if base is not None:                        # the default CP's run, to compare
                entry["cp_default"] = cp_default(entry, name, base, **base_kw)
        out.with_suffix(".json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        out.with_suffix(".md").write_text(render(results, one_tau["rows"]))

    measured = {}       # this run's rows: a row with the same slice as one of them reuses its run
    for name in [] if args.no_rows else args.only or names:
        if args.model_only:
            r = row(name)
            entry = results["rows"].setdefault(name, {"table": r.table, "label": r.label,
                                                      "paper": r.paper, "what": r.what,
                                                      "slice": r.slice_what})
            add_model(entry, name, **model_kw, **full_kw)
            continue
        print(f"== {name}: {row(name).slice_what}", flush=True)
        entry = measure_row(name, seed=args.seed, done=measured,
                            whole_under=args.whole_under, hold=args.hold, **model_kw)
        if args.no_full_model:
            keep_full_model(entry, results["rows"].get(name, {}))
        results["rows"][name] = measured[name] = (entry if args.no_model
                                                  else add_model(entry, name, **model_kw,
                                                                 **full_kw))
        print(f"{name}: {entry}", flush=True)
        save()
    if args.scaling:
        scaling(results, lanes=args.lanes, bandwidth=args.dram_bytes_per_cycle,
                latency=args.latency, rtl_taus=args.scaling_taus, seed=args.seed,
                one_tau=one_tau["rows"], only=args.only, whole_under=args.whole_under,
                save=save)
        tau_path.write_text(json.dumps(one_tau, indent=2, sort_keys=True) + "\n")
    if args.share_prediction:
        share_prediction(results, lanes=args.lanes, taus_list=args.share_prediction,
                         bandwidth=args.dram_bytes_per_cycle, latency=args.latency)
    save()


if __name__ == "__main__":
    main()
