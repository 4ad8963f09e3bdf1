"""Device probe of the GEMM-shaped fp32 rows (not a test): every ranked SIMT tile of the row, each
also with ``minblocks=2`` (``__launch_bounds__(threads, 2)``), plus named extra tiles, checked
against float64 and timed beside the peers, with each kernel's registers and local memory.

``PYTHONPATH=sw python tests/merit/gpu/gemm_probe.py [--only gemm,gemm_odd,conv1x1] [--out DIR]``

``--launch ROW:LABEL ...`` instead runs the named tiles (and ``ROW:peer`` the row's peers) once
each, for a profiler such as ncu.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from probelib import run_checked, setup

ROWS = {
    "gemm": ("gemm", dict(n=4096)),
    "gemm_odd": ("gemm", dict(n=827, cols=1615, k=1509)),
    "conv1x1": ("conv", dict(n=16, c=159, h=55, w=111, m=165, k=1, stride=2, padding=0)),
}
#: tiles besides the ranked ones (fields of check_tile), per row
EXTRA = {
    "gemm": [dict(threads=(16, 16), regs=(r0, r1), chunk=c, strided=(4, 4))
             for r0, r1 in ((16, 8), (8, 16)) for c in (8, 16)],
    "gemm_odd": [dict(threads=(8, 16), regs=(8, 8), chunk=c, strided=(4, 4), split=k,
                      double=True, stages=st)
                 for c in (32, 16) for k in (2, 3, 6) for st in (2, 3, 4)],
    "conv1x1": [dict(threads=(4, 4, 1, 14), regs=(1, 15, 1, 4), chunk=16, double=True,
                     stages=st) for st in (2, 3)]
    + [dict(threads=(1, 8, 1, 14), regs=(1, 4, 1, 4), chunk=16, double=True, stages=st)
       for st in (2, 3, 4)],
}


def _setup(key, rng):
    return setup(*ROWS[key], rng)


#: also time every tile with ``minblocks=2``
M2 = False


def _tiles(key, spec):
    from merit.gpu.tiling import _replace, check_tile, complete, rank

    tiles = list(rank(spec, count=6))
    for d in EXTRA.get(key, []):
        try:
            t = check_tile(spec, d)
        except Exception as exc:
            print(key, d, "rejected:", exc, flush=True)
            continue
        for f in ({}, {"lean": True}, {"lean": True, "vread": True}):
            v = complete(spec, _replace(t, **f)) if f else t
            if v not in tiles:
                tiles.append(v)
    out = []
    for t in tiles:
        out.append(t)
        m2 = _replace(t, minblocks=2)
        if M2 and m2 not in tiles:
            out.append(m2)
    return out


def _attrs(kern):
    """(registers per thread, local memory bytes per thread) of a compiled kernel."""
    import cupy as cp

    try:
        return kern.num_regs, kern.local_size_bytes
    except AttributeError:
        drv = cp.cuda.driver
        ptr = getattr(kern, "ptr", None) or kern.kernel.ptr
        return (drv.funcGetAttribute(drv.CU_FUNC_ATTRIBUTE_NUM_REGS, ptr),
                drv.funcGetAttribute(drv.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, ptr))


def launch(args, out):
    import cupy as cp

    from merit.gpu.runtime import launcher

    def profiled(fn):
        """One warm-up call, then one call inside the profiler's range."""
        fn()
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.start()
        fn()
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.stop()

    rng = np.random.default_rng(1)
    for arg in args:
        key, label = arg.split(":", 1)
        prob, spec, inputs, res, peers, _ = _setup(key, rng)
        if label == "peer":
            for name, fn in peers.items():
                profiled(fn)
                print(arg, name, "ran", flush=True)
            continue
        tiles = {t.label(): t for t in _tiles(key, spec)}
        if label.startswith("best"):   # the n-th fastest of the probe's table (best, best2, ...)
            rows = json.loads(Path(out, "gemm_probe.json").read_text())
            recs = [r for row in rows if row["row"] == key for r in row["tiles"] if "ms" in r]
            label = sorted(recs, key=lambda r: r["ms"])[int(label[4:] or 1) - 1]["tile"]
            print(arg, "=", label, flush=True)
        profiled(launcher(spec, tiles[label], inputs, res))
        print(arg, "ran", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(ROWS))
    ap.add_argument("--out", default=".")
    ap.add_argument("--launch", nargs="*")
    ap.add_argument("--m2", action="store_true", help="also every tile with minblocks=2")
    ap.add_argument("--show", type=int, default=14, help="fastest tiles printed per row")
    args = ap.parse_args()
    global M2
    M2 = args.m2
    if args.launch:
        return launch(args.launch, args.out)
    import cupy as cp

    from merit.gpu import _compile_all
    from merit.gpu.runtime import compiled, time_launch

    rng = np.random.default_rng(5)
    out = []
    for key in args.only.split(","):
        prob, spec, inputs, res, peers, refs = _setup(key, rng)
        row = {"row": key, "tiles": []}
        tiles = _tiles(key, spec)
        t0 = time.time()
        _compile_all(spec, tiles)
        row["compile_s"] = round(time.time() - t0, 1)
        for t in tiles:
            rec = {"tile": t.label()}
            try:
                kern = compiled(spec, t)[0]
                rec["regs"], rec["local"] = _attrs(kern)
                go, rec["err"] = run_checked(prob, spec, t, inputs, res, refs)
                rec["ms"] = round(time_launch(go), 4)
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            row["tiles"].append(rec)
        row["peers_ms"] = {n: round(time_launch(fn), 4) for n, fn in peers.items()}
        out.append(row)
        Path(args.out, "gemm_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()
        print(f"== {key}: peers {row['peers_ms']} (compile {row['compile_s']} s)")
        for rec in sorted(row["tiles"], key=lambda r: r.get("ms", 1e9))[:args.show]:
            print(f"  {rec.get('ms', '-'):>8} ms  regs {rec.get('regs', '-'):>3} local "
                  f"{rec.get('local', '-'):>4} err {rec.get('err', 0):.1e}  {rec['tile']} "
                  f"{rec.get('error', '')}", flush=True)


if __name__ == "__main__":
    main()
