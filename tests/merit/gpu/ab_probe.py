"""Device probe (not a test): GEMM 4096^3 in FP16 / BF16 on half arrays, a few tiles named by
their labels' endings timed in turns with cuBLAS, ``--rounds`` times each, so that a difference
smaller than one run's spread can still be told apart from it: per tile the median and the
range of its rounds, and how often it beat the first tile named in the same round.  Labels of
the forms built but not timed by default (``Tile.skew``, ``Tile.hold``, clusters) are found
too.  ``--smi``: the card's SM clock, power draw and clock-limit reasons sampled every 50 ms
while the tiles run (``nvidia-smi``), summarized over the busy samples (the GEMMs run at the
board's power limit: the clock the timings saw).

``PYTHONPATH=sw python tests/merit/gpu/ab_probe.py [--prec fp16,bf16] [--rounds 9] [--smi]
--tiles _g132_e2,_g132_e2_hd4 [--out DIR]``"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import LAYERS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prec", default="fp16,bf16")
    ap.add_argument("--tiles", required=True, help="label endings, comma-separated; the first "
                    "is the one the others are compared with")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--smi", action="store_true")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    smi = _sample_smi(Path(args.out) / "smi.csv") if args.smi else None
    import cupy as cp
    import torch

    from merit.gpu import TUNED, _compile_all, tiling
    from merit.gpu.runtime import launcher, time_launch, to_device
    from merit.gpu.spec import OPERAND_DTYPES, spec_of
    from merit.gpu.tiling import H100, WG_TUNED, rank

    rng = np.random.default_rng(29)
    make, _ = LAYERS["gemm"]
    prob = make()
    names = [t.name for t in prob.tensors]
    arrays = [torch.as_tensor(a, device="cuda") for a in prob.random_inputs(rng, np.float32)]
    ends = args.tiles.split(",")
    report = {}
    for prec in args.prec.split(","):
        dt = torch.float16 if prec == "fp16" else torch.bfloat16
        ours = [a.to(dt) for a in arrays]
        ref = cp.asarray(ours[0].double() @ ours[1].double())
        spec = spec_of(prob, "float32", prec, operands=OPERAND_DTYPES[prec])
        by = dict(zip(names, [to_device(h, n) for h, n in zip(ours, names, strict=True)],
                      strict=True))
        inputs = [by[op.tensor] for op in prob.operands]
        ranked = rank(spec, count=TUNED + WG_TUNED, device=H100)
        if not all(any(t.label().endswith(e) for t in ranked) for e in ends):
            tiling.SKEW_TUNED, tiling.HOLD_TUNED = (1, 2, 3), (1, 2, 3, 4)
            tiling.CLUSTER_TUNED = True
            ranked = rank(spec, count=TUNED + WG_TUNED, device=H100)
        tiles = [next(t for t in ranked if t.label().endswith(e)) for e in ends]
        _compile_all(spec, tiles)
        gos = {}
        for e, t in zip(ends, tiles, strict=True):
            out = (cp.full(spec.pshape, cp.nan, dtype=cp.float32),)
            go = launcher(spec, t, inputs, out)
            go()
            cp.cuda.Device().synchronize()
            err = float(cp.linalg.norm(out[0].astype(cp.float64) - ref) / cp.linalg.norm(ref))
            assert err < 1e-4, (t.label(), err)
            gos[e] = go
        gos["cuBLAS"] = lambda h=ours: h[0] @ h[1]
        times = {k: [] for k in gos}
        for _ in range(args.rounds):
            for k, go in gos.items():
                times[k].append(time_launch(go))
        base = times[ends[0]]
        rows = {}
        for k, ts in times.items():
            wins = sum(a < b for a, b in zip(ts, base, strict=True))
            rows[k] = dict(median=float(np.median(ts)), lo=min(ts), hi=max(ts), wins=wins)
            print(f"{prec:5} {k:28} median {np.median(ts):.4f} ms  range {min(ts):.4f}-"
                  f"{max(ts):.4f}  faster than {ends[0]} in {wins} of {args.rounds}", flush=True)
        report[prec] = rows
        cp.get_default_memory_pool().free_all_blocks()
    if smi:
        smi.terminate()
        smi.wait()
        report["smi"] = _smi_summary(Path(args.out) / "smi.csv")
        print(report["smi"])
    (Path(args.out) / "ab_probe.json").write_text(json.dumps(report, indent=1))


_SMI = ("timestamp,clocks.sm,clocks.max.sm,power.draw,power.limit,clocks_throttle_reasons.active,"
        "temperature.gpu")


def _sample_smi(path):
    """``nvidia-smi`` sampling the card every 50 ms into ``path`` (CSV), in the background."""
    import subprocess

    return subprocess.Popen(["nvidia-smi", f"--query-gpu={_SMI}", "--format=csv,noheader",
                             "-lms", "50"], stdout=path.open("w"), stderr=subprocess.STDOUT)


def _smi_summary(path):
    """SM clock, power and clock-limit reasons (a bit mask: 0x4 the power cap) over the samples
    drawing more than 200 W (the GEMMs running)."""
    import collections

    rows = [ln.strip().split(", ") for ln in path.read_text().splitlines() if ln.count(",") >= 6]
    busy = [r for r in rows if float(r[3].split()[0]) > 200]
    if not busy:
        return dict(samples=len(rows), busy=0)
    clk = sorted(int(r[1].split()[0]) for r in busy)
    pw = sorted(float(r[3].split()[0]) for r in busy)
    return dict(samples=len(rows), busy=len(busy), sm_mhz=(clk[0], clk[len(clk) // 2], clk[-1]),
                max_mhz=busy[0][2], power_w=(pw[0], pw[len(pw) // 2], pw[-1]),
                limit=busy[0][4], reasons=collections.Counter(r[5] for r in busy).most_common(4))


if __name__ == "__main__":
    main()
