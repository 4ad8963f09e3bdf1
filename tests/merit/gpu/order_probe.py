"""Device probe of ``Tile.forder`` / ``Tile.ptxas`` (not a test): a GEMM's SIMT tile in each
product order, at ptxas's default level and at ``-O1``, checked against float64 and timed beside
cuBLAS on the same card; with ``--sass`` (nvcc, and nvdisasm on PATH or in ``$NVDISASM``; no GPU
needed) each variant's main loop from the SASS instead: its FFMAs, and how many of them read two
operands from one register bank (bank = register number mod 2, operands marked ``.reuse`` on the
previous FFMA in the same slot read from the reuse cache).

``PYTHONPATH=sw python tests/merit/gpu/order_probe.py [--n 4096] [--tile JSON] [--variants JSON]
[--sass]`` (``--variants``: a list of field dicts laid over ``--tile``, default ``VARIANTS``)
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

#: the bench's GEMM 4096^3 tile before the product orders (lean + vread, 128 x 128 of 8 x 8)
TILE = {"threads": [16, 16], "regs": [8, 8], "chunk": 32, "unroll": 1, "double": True,
        "strided": [4, 4], "lean": True, "vread": True}
VARIANTS = [{}, {"forder": 1}, {"forder": 2}, {"forder": 3}, {"ptxas": 1},
            {"forder": 1, "ptxas": 1}, {"forder": 3, "ptxas": 1}, {"forder": 1, "ptxas": 1,
                                                                   "vahead": True}]


def bank_conflicts(sass):
    """``(FFMAs, FFMAs reading two operands from one bank)`` in the loop with the most FFMAs."""
    ins, labels, pending = [], {}, []
    for line in sass.splitlines():
        lm = re.match(r"^(\.L_x_\d+):", line)
        if lm:
            pending.append(lm.group(1))
        m = re.match(r"\s+/\*([0-9a-f]+)\*/\s+(.*?);", line)
        if m:
            a = int(m.group(1), 16)
            labels.update({p: a for p in pending})
            pending = []
            ins.append((a, m.group(2).strip()))
    loops = []
    for a, t in ins:
        m = re.search(r"BRA\s.*?(\.L_x_\d+)", t)
        if m and labels.get(m.group(1), a + 1) < a:
            loops.append((labels[m.group(1)], a))
    if not loops:
        return 0, 0
    lo, hi = max(loops, key=lambda r: sum("FFMA" in t for a, t in ins if r[0] <= a <= r[1]))
    n = bad = 0
    prev = {}
    for a, t in ins:
        if not lo <= a <= hi:
            continue
        if not t.startswith("FFMA"):
            prev = {}
            continue
        n += 1
        srcs = re.findall(r"(R\d+)(\.reuse)?", t.split(None, 1)[1])[1:4]
        banks = collections.Counter(int(r[1:]) % 2 for s, (r, _) in enumerate(srcs)
                                    if prev.get(s) != r)
        bad += bool(banks) and max(banks.values()) >= 2
        prev = {s: r for s, (r, ru) in enumerate(srcs) if ru}
    return n, bad


def sass_report(spec, tile):
    from merit.gpu.codegen import source

    dis = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    with tempfile.TemporaryDirectory() as d:
        cu, cubin = Path(d) / "k.cu", Path(d) / "k.cubin"
        cu.write_text(source(spec, tile)[1])
        cmd = ["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v"]
        cmd += ["-Xptxas", f"-O{tile.ptxas}"] if tile.ptxas else []
        res = subprocess.run(cmd + ["-o", str(cubin), str(cu)], capture_output=True, text=True)
        regs = re.search(r"Used (\d+) registers", res.stderr)
        sass = subprocess.run([dis, "-c", str(cubin)], capture_output=True, text=True).stdout
    n, bad = bank_conflicts(sass)
    return f"{regs.group(1) if regs else '?'} registers, {n} FFMA in the loop, " \
           f"{bad / max(n, 1):.3f} of them two operands in one bank"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--tile", default=json.dumps(TILE))
    ap.add_argument("--variants", default=json.dumps(VARIANTS))
    ap.add_argument("--sass", action="store_true")
    args = ap.parse_args()
    from merit import workloads as W
    from merit.gpu.spec import spec_of
    from merit.gpu.tiling import check_tile

    n = args.n
    prob = W.gemm(n, n, n)
    spec = spec_of(prob, "float32")
    tiles = [check_tile(spec, dict(json.loads(args.tile), **v)) for v in json.loads(args.variants)]
    if args.sass:
        for t in tiles:
            print(f"{t.label():50s} {sass_report(spec, t)}", flush=True)
        return
    import cupy as cp

    from merit.gpu.runtime import launcher, time_launch

    rng = np.random.default_rng(7)
    a, b = (cp.asarray(rng.standard_normal((n, n), dtype=np.float32)) for _ in range(2))
    ref = a.astype(cp.float64) @ b.astype(cp.float64)

    c = cp.empty((n, n), cp.float32)
    rows = [("cuBLAS (cupy matmul)", time_launch(lambda: cp.matmul(a, b, out=c)), None)]
    for t in tiles:
        out = (cp.full((n, n), cp.nan, dtype=cp.float32),)
        go = launcher(spec, t, [a, b], out)
        go()
        err = float(cp.linalg.norm(out[0].astype(cp.float64) - ref) / cp.linalg.norm(ref))
        rows.append((t.label(), time_launch(go), err))
    rows.append(("cuBLAS again", time_launch(lambda: cp.matmul(a, b, out=c)), None))
    for name, ms, err in rows:
        tf = 2 * n ** 3 / (ms * 1e-3) / 1e12
        print(f"{name:50s} {ms:.4f} ms {tf:5.1f} TFLOP/s"
              + (f"  rel. err {err:.1e}" if err is not None else ""), flush=True)


if __name__ == "__main__":
    main()
