"""What the device probes of this folder share (not a test): a ``bench.gpu`` row set up for
``merit.gpu``, and one tile launched on NaN-poisoned outputs and checked against float64."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.gpu import _relerr, build  # noqa: E402


def setup(kind, params, rng, precision="fp32"):
    """``(problem, spec, inputs, outputs, peers, references)`` of a ``bench.gpu`` row."""
    import cupy as cp

    from merit.gpu.spec import spec_of

    prob, arrays, peers, refs, *_ = build(kind, dict(params, precision=precision), rng)
    by = dict(zip([t.name for t in prob.tensors], arrays, strict=True))
    inputs = [by[op.tensor] for op in prob.operands]
    spec = spec_of(prob, "float32", precision)
    res = (cp.empty(spec.pshape, dtype=cp.float32),)
    return prob, spec, inputs, res, peers, refs


def run_checked(prob, spec, tile, inputs, res, refs):
    """Launch ``tile`` once on NaN-poisoned outputs: ``(its launcher, relative error)``."""
    import cupy as cp

    from merit.gpu.runtime import launcher

    go = launcher(spec, tile, inputs, res)
    res[0].fill(cp.nan)
    go()
    cp.cuda.Device().synchronize()
    return go, _relerr(prob.outputs[0].finish(res[0]), refs[0])


def _layers():
    from merit import workloads as W

    return {
        "gemm": (lambda: W.gemm(4096, 4096, 4096), None),
        "vgg": (lambda: W.conv2d(16, 128, 56, 56, 256, 3, padding=1), dict(stride=1, padding=1)),
        "k9": (lambda: W.conv2d(16, 32, 128, 128, 32, 9, padding=4), dict(stride=1, padding=4)),
        "k9s2": (lambda: W.conv2d(16, 32, 128, 128, 32, 9, stride=2, padding=4),
                 dict(stride=2, padding=4)),
        "k3": (lambda: W.conv2d(16, 32, 128, 128, 32, 3, padding=1), dict(stride=1, padding=1)),
        # ragged: rows, columns and k that no tile divides
        "odd": (lambda: W.gemm(333, 200, 1000), None),
        "oddconv": (lambda: W.conv2d(3, 19, 23, 29, 40, 3, stride=2, padding=1),
                    dict(stride=2, padding=1)),
    }


#: the tensor-core probes' layers: name -> (problem maker, conv2d keywords or None for a GEMM)
LAYERS = _layers()
#: relative error against float64 (operands rounded to the precision) a tile must stay below
TC_TOL = {"tf32": 3e-3, "fp16": 3e-3, "bf16": 2e-2}


def tc_peers(prob, arrays, precision, conv):
    """``bench.gpu``'s library peers and float64 references of a ``LAYERS`` entry."""
    from bench.gpu import _tc_conv_peers, _tc_gemm_peers

    if conv is None:
        return _tc_gemm_peers(prob, arrays, precision)
    return _tc_conv_peers(prob, arrays, precision, conv["stride"], conv["padding"])


def measure(prob, spec, tile, inputs, ref, tol, peer_ms, **row):
    """One tile launched on NaN-poisoned outputs, checked against ``ref`` and timed: the probe's
    row (``rel_err``, ``ok``, ``ms``, ``vs_peer``, ``compile_s``, ``ptxas``, or ``error``)."""
    import time

    import cupy as cp

    from merit.gpu.runtime import launcher, ptxas_logs, time_launch

    row = dict(row, tile=tile.label(), peer_ms=peer_ms)
    out = (cp.full(spec.pshape, cp.nan, dtype=cp.float32),)
    try:
        t0 = time.time()
        go = launcher(spec, tile, inputs, out)
        row["compile_s"] = round(time.time() - t0, 2)
        go()
        cp.cuda.Device().synchronize()
        got = prob.outputs[0].finish(out[0]).astype(cp.float64)
        row["rel_err"] = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
        row["ok"] = bool(row["rel_err"] < tol)
        row["ms"] = time_launch(go)
        peer = min(peer_ms.values()) if isinstance(peer_ms, dict) else peer_ms
        row["vs_peer"] = peer / row["ms"]
        for name, log in ptxas_logs.items():
            if tile.label() in name:
                row["ptxas"] = " | ".join(ln.strip() for ln in log.splitlines()
                                          if "registers" in ln or "spill" in ln)
    except Exception as exc:   # noqa: BLE001 - reported in the row
        row["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
    return row


def tc_cases(only, precisions, seed):
    """For each ``LAYERS`` key of ``only`` and each precision (comma-separated strings):
    ``(key, precision, problem, spec, inputs, reference, peer_ms)`` on float32 arrays, the
    peers timed; the memory pool is freed after each case."""
    import cupy as cp
    import numpy as np

    from merit.gpu.runtime import time_launch
    from merit.gpu.spec import spec_of

    rng = np.random.default_rng(seed)
    for key in only.split(","):
        make, conv = LAYERS[key]
        prob = make()
        arrays = [cp.asarray(a) for a in prob.random_inputs(rng, np.float32)]
        by = dict(zip([t.name for t in prob.tensors], arrays, strict=True))
        inputs = [by[op.tensor] for op in prob.operands]
        for prec in precisions.split(","):
            peers, refs = tc_peers(prob, arrays, prec, conv)
            peer_ms = {n: time_launch(f) for n, f in peers.items()}
            yield key, prec, prob, spec_of(prob, "float32", prec), inputs, refs[0], peer_ms
            cp.get_default_memory_pool().free_all_blocks()


def bench_table(seed):
    """The bench's rows by key (its random rows of ``seed`` and its fixed rows): (kind, params)."""
    from bench.gpu import random_rows
    from bench.gpu import rows as bench_rows
    table = {key: p for key, _, _, p in random_rows(seed)}
    table.update({key: p for key, _, _, p in bench_rows()})
    return table


def time_rounds(launches, peers, rounds):
    """``rounds`` turns of timing every launch of ``launches`` (name -> launch) and every peer,
    in turn: ({name: [ms]}, {peer: [ms]})."""
    from merit.gpu.runtime import time_launch
    ms, peer_ms = {n: [] for n in launches}, {}
    for _ in range(rounds):
        for n, go in launches.items():
            ms[n].append(round(time_launch(go), 4))
        for n, fn in peers.items():
            peer_ms.setdefault(n, []).append(round(time_launch(fn), 4))
    return ms, peer_ms


def time_and_report(name, out, launches, peers, rounds):
    """:func:`time_rounds`, then the probe's record ``out`` and the times as ``NAME.json`` under
    ``$OUT`` (where set) and each launch's median (min) printed: ({name: [ms]}, {peer: [ms]})."""
    import json
    import os
    ms, peer_ms = time_rounds(launches, peers, rounds)
    o = os.environ.get("OUT")
    if o:
        Path(o, f"{name}.json").write_text(json.dumps(
            dict(rows=out, ms=ms, peers_ms=peer_ms), indent=1, default=str))
    print(f"\nlaunch: median ms (min)  [in turns, {rounds} rounds]")
    for n, v in {**ms, **peer_ms}.items():
        print(f"{sorted(v)[len(v) // 2]:.4f} ({min(v):.4f})  {n}")
    return ms, peer_ms


def compare_sides(key, made, sides, *, rounds, launch_only, **fields):
    """Tiles of one row side by side, on the row :func:`setup` ``made``: ``sides`` maps a
    side's name to its tile, or to a function ``make(check)`` returning ``(tile, launcher,
    relative error)`` with ``check(tile)`` (:func:`run_checked` on the row) called where the
    side's settings hold.  Each side launched once, checked, its outputs compared bit for bit
    with the first side's; unless ``launch_only``, the sides and the row's peers timed in
    ``rounds`` turns.  The probe's row: ``{"row": key, **fields, side: {"pads", "order",
    "err", "conflicts", "bit_equal", "ms"}, ..., "bit_equal" (every side), "peers_ms"}``."""
    import cupy as cp
    import numpy as np

    from merit.gpu import tiling

    prob, spec, inputs, res, peers, refs = made

    def check(t):
        return run_checked(prob, spec, t, inputs, res, refs)

    row, gos, first = {"row": key, **fields}, {}, None
    for side, tile in sides.items():
        t, gos[side], err = tile(check) if callable(tile) else (tile, *check(tile))
        got = cp.asnumpy(res[0]).copy()
        first = got if first is None else first
        row[side] = {"pads": t.pads, "order": t.order, "err": err, "ms": [],
                     "conflicts": [tiling.conflicts(spec, t, k)
                                   for k in range(len(spec.inputs)) if t.shared[k]],
                     "bit_equal": bool(np.array_equal(got, first))}
    row["bit_equal"] = all(row[side]["bit_equal"] for side in gos)
    print(key, {s: (row[s]["pads"], row[s]["order"], row[s]["err"]) for s in gos}, "bit equal",
          row["bit_equal"], flush=True)
    if not launch_only:
        ms, row["peers_ms"] = time_rounds(gos, peers, rounds)
        for side in gos:
            row[side]["ms"] = ms[side]
        print(key, {s: row[s]["ms"] for s in gos}, row["peers_ms"], flush=True)
    return row
