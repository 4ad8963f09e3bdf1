"""Device probe of the persistent wgmma tiles' epilogue (not a test): GEMM 4096^3 in FP16 / BF16
on half arrays, the producer tiles whose label contains one of ``--match`` (the staged-epilogue
forms ``_e<n>``, ``Tile.epi``, among them) checked against float64 and timed beside cuBLAS on the
same tensors (the candidates include the persistent cluster forms ``_wgc2_..._g<n>`` and the
staged forms with L2 hints ``_ef1``; ``--hints``: the staged forms also with ``Tile.evict`` 2,
evict-first stores and evict-last operand copies; ``--evict``: the staged forms without hints
also with their bulk stores patched to L2 evict-first, the probe's form before the generator
had it); with ``--nostore`` the tiles with direct stores are also timed with their output
stores switched off at run time (each store under a condition the compiler cannot decide,
``blockIdx.y == 7``, false on the launched grid: the same registers and code, no stores): the
difference is the share of the time the epilogue's stores cost.

``PYTHONPATH=sw python tests/merit/gpu/epi_probe.py [--prec fp16,bf16] [--match LABEL,...]
[--nostore] [--hints] [--evict] [--also 'FIELD=V,FIELD=V;...'] [--out DIR]``: one line per
tile and form, a JSON file under ``--out``."""

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import LAYERS  # noqa: E402

#: the stores of the outputs in the generated epilogues (16-byte, scalar, staged bulk stores,
#: and the 8-byte stores of sums held past the epilogue, ``Tile.hold``)
_STORE = re.compile(r"(\*reinterpret_cast<float[24]\*>\(g_out0 \+[^;]*;|g_out0\[[^;]*;"
                    r"|merit_tma_store[^;]*;)")


def no_stores(code):
    """``code`` with every output store under a run-time condition that is false."""
    return _STORE.sub(lambda m: f"if (blockIdx.y == 7) {{ {m.group(0)} }}", code)


def some_stores(n):
    """A patch: the output stores of blocks ``blockIdx.x % n == 0`` only (``n`` 0: none), the
    others' under a run-time condition that is false (``no_stores``'s); the staging writes,
    barriers and bulk-group commits of a staged epilogue stay."""
    keep = "false" if not n else f"blockIdx.x % {n} == 0"

    def patch(code):
        head, body = code.split('extern "C"', 1)   # the kernel's body (not the prelude's functions)
        return head + 'extern "C"' + _STORE.sub(
            lambda m: f"if (({keep}) || blockIdx.y == 7) {{ {m.group(0)} }}", body)

    return patch


_STORE_ASM = ('"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\\n"')
_STORE_EVICT = ('"{\\n.reg .b64 pol;\\ncreatepolicy.fractional.L2::evict_first.b64 pol, 1.0;\\n"'
                '"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint '
                '[%0, {%2, %3}], [%1], pol;\\n}\\n"')


def evict_first(code):
    """``code`` with the staged epilogue's bulk stores marked L2 evict-first (the output's lines
    leave the L2 before the operands' do)."""
    assert _STORE_ASM in code
    return code.replace(_STORE_ASM, _STORE_EVICT)


_MC = re.compile(r"merit_tma2mc\(([^;]*?)\(int\)crank([^;]*?)\(int\)crank([^;]*?)\);")


def own_b(code):
    """A cluster tile's ``code`` with each block copying all of B's boxes itself (no multicast):
    the blocks still release each buffer together (the cluster-wide "empty" barrier)."""
    assert _MC.search(code)
    return _MC.sub(lambda m: " ".join(f"merit_tma2({m.group(1)}{r}{m.group(2)}{r}{m.group(3)});"
                                      for r in (0, 1)), code)


def cluster_launch(code):
    """A one-block tile's ``code`` launched in clusters of two (``__cluster_dims__``), nothing
    else changed: the blocks' placement on the GPCs alone."""
    assert "__cluster_dims__" not in code
    return re.sub(r"(__launch_bounds__\(\d+\) )", r"\1__cluster_dims__(2, 1, 1) ", code,
                  count=1)


def launcher_patched(spec, tile, inputs, outputs, patch):
    """As ``runtime.launcher`` (producer TMA tiles, no layout copies), the source patched."""
    from merit.gpu import runtime
    from merit.gpu.ldsm import epi_plan, source, tma_ops

    name, code, nblocks, nthreads, smem = source(spec, tile)
    code = patch(code).replace(name, name + "_x")
    kernel = runtime._module_sm90a(name + "_x", code).get_function(name + "_x")
    if smem > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    args = tuple(inputs) + tuple(outputs)
    args += tuple(runtime.tensor_map(inputs[t["k"]], t["dims"], t["strides"], t["box"],
                                     t["swizzle"], t["esize"], t.get("estrides"))
                  for t in tma_ops(spec, tile) if t)
    if tile.epi:   # the output's map, as runtime.launcher
        e = epi_plan(spec, tile)
        args += (runtime.tensor_map(outputs[0], e["dims"], e["strides"], e["box"], e["swizzle"],
                                    e["esize"]),)

    def go():
        kernel((nblocks,), (nthreads,), args, shared_mem=smem)

    return go


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prec", default="fp16,bf16")
    ap.add_argument("--match", default="_h4_mn_ws_tma_g132",
                    help="labels containing one of these (comma-separated; 'a+b': both)")
    ap.add_argument("--nostore", action="store_true")
    ap.add_argument("--evict", action="store_true",
                    help="time the staged forms with L2 evict-first bulk stores too")
    ap.add_argument("--hints", action="store_true",
                    help="time the staged forms with Tile.evict 2 too")
    ap.add_argument("--clusters", action="store_true",
                    help="add the cluster forms (Tile.cluster 2) of the persistent tiles")
    ap.add_argument("--decompose", action="store_true",
                    help="cluster tiles also with each block copying all of B (no multicast), "
                         "one-block persistent tiles also launched in clusters of two")
    ap.add_argument("--grids", default="",
                    help="cluster tiles: also with these persistent grids, e.g. '128,120'")
    ap.add_argument("--extra", default="", help="Tile field overrides, e.g. 'epi=2;epi=4'")
    ap.add_argument("--also", default="",
                    help="sets of Tile field overrides applied together to each matched tile, "
                         "each set a further tile, e.g. 'chunk=32,epi=8;chunk=32'")
    ap.add_argument("--partial", default="",
                    help="each tile also with the stores of every n-th block only, e.g. '0,2,4' "
                         "(0: no block stores; staged forms too)")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import cupy as cp
    import torch

    from merit.gpu import TUNED, _compile_all
    from merit.gpu.ldsm import wgmma_fits
    from merit.gpu.runtime import launcher, ptxas_logs, time_launch, to_device
    from merit.gpu.spec import OPERAND_DTYPES, spec_of
    from merit.gpu.tiling import H100, WG_TUNED, rank

    rng = np.random.default_rng(23)
    make, _ = LAYERS["gemm"]
    prob = make()
    names = [t.name for t in prob.tensors]
    arrays = [torch.as_tensor(a, device="cuda") for a in prob.random_inputs(rng, np.float32)]
    rows = []
    for prec in args.prec.split(","):
        dt = torch.float16 if prec == "fp16" else torch.bfloat16
        ours = [a.to(dt) for a in arrays]
        ref = cp.asarray(ours[0].double() @ ours[1].double())
        peer = time_launch(lambda h=ours: h[0] @ h[1])
        spec = spec_of(prob, "float32", prec, operands=OPERAND_DTYPES[prec])
        by = dict(zip(names, [to_device(h, n) for h, n in zip(ours, names, strict=True)],
                      strict=True))
        inputs = [by[op.tensor] for op in prob.operands]
        tiles = [t for t in rank(spec, count=TUNED + WG_TUNED, device=H100) if t.producer
                 and any(all(p in t.label() for p in m.split("+"))
                         for m in args.match.split(","))]
        for ov in filter(None, args.extra.split(";")):
            k, v = ov.split("=")
            tiles += [dataclasses.replace(t, **{k: int(v)}) for t in list(tiles)]
        base = list(tiles)
        for ov in filter(None, args.also.split(";")):
            kw = {k: int(v) for k, v in (f.split("=") for f in ov.split(","))}
            tiles += [u for u in (dataclasses.replace(t, **kw) for t in base)
                      if u not in tiles and not wgmma_fits(spec, u)]
        if args.clusters:
            tiles += [dataclasses.replace(t, cluster=2, persist=t.persist - t.persist % 2)
                      for t in list(tiles) if t.persist and t.cluster == 1]
        tiles += [dataclasses.replace(t, persist=int(g)) for g in filter(None,
                  args.grids.split(",")) for t in list(tiles) if t.cluster > 1]
        if args.hints:
            tiles += [dataclasses.replace(t, evict=2) for t in list(tiles)
                      if t.epi and not t.evict]
        _compile_all(spec, tiles)
        for t in tiles:
            forms = [("as generated", None)] + ([("no stores", no_stores)]
                                                if args.nostore and not t.epi else [])
            forms += [(f"stores 1/{n}" if n else "stores off", some_stores(n))
                      for n in map(int, filter(None, args.partial.split(",")))]
            forms += ([("evict first", evict_first)] if args.evict and t.epi and not t.evict
                      else [])
            if args.decompose and t.persist and not t.evict:
                forms += [("own B copies", own_b)] if t.cluster > 1 else [
                    ("cluster launch", cluster_launch)]
            for form, patch in forms:
                row = dict(prec=prec, tile=t.label(), form=form, peer_ms=peer,
                           cluster=t.cluster, evict=t.evict, epi=t.epi, place=t.place,
                           elect=bool(t.elect), skew=t.skew, hold=t.hold)
                out = (cp.full(spec.pshape, cp.nan, dtype=cp.float32),)
                try:
                    go = (launcher(spec, t, inputs, out) if patch is None
                          else launcher_patched(spec, t, inputs, out, patch))
                    go()
                    cp.cuda.Device().synchronize()
                    if patch is not no_stores and not form.startswith("stores"):
                        got = out[0].astype(cp.float64)
                        row["rel_err"] = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
                    row["ms"] = time_launch(go)
                    row["vs_peer"] = peer / row["ms"]
                    row["ptxas"] = " | ".join(
                        ln.strip() for n, log in ptxas_logs.items() if t.label() in n
                        for ln in log.splitlines() if "registers" in ln or "spill" in ln)[-160:]
                except Exception as exc:   # noqa: BLE001 - reported in the row
                    row["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
                rows.append(row)
                print(json.dumps(row), flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "epi_probe.json").write_text(json.dumps(rows, indent=1))
    for r in rows:
        print(f"{r['prec']:5} {r['tile']:52} {r['form']:13} "
              f"{r.get('ms', float('nan')):.4f} ms  cuBLAS {r['peer_ms']:.4f}  "
              f"err {r.get('rel_err', float('nan')):.1e} {r.get('error', '')[:200]}")


def _holds(row, condition):
    """``row`` meets ``condition``, a field compared with a whole number: ``place>1``, ``epi=8``."""
    field, op, value = re.fullmatch(r"(\w+)([>=])(\d+)", condition).groups()
    have = row.get(field, 0)
    return have > int(value) if op == ">" else have == int(value)


def verdict(out, new, each=False):
    """The bench rows (``gemm@fp16,gemm@bf16``) where a tile meeting any of the ``new``
    conditions beats every other correct tile in both runs (``OUT/run1``, ``OUT/run2``) of its
    precision; unless ``each``, both precisions must win or neither row is named. The best tiles
    go to stderr."""
    best = {}
    for run in (1, 2):
        path = Path(out) / f"run{run}" / "epi_probe.json"
        if not path.is_file():
            continue
        for r in json.loads(path.read_text()):
            if "ms" in r and r.get("rel_err", 1) < 1e-4:
                k = (run, r["prec"], any(_holds(r, c) for c in new))
                if r["ms"] < best.get(k, (9e9,))[0]:
                    best[k] = (r["ms"], r["tile"], r["peer_ms"])
    for k in sorted(best):
        print(k, best[k], file=sys.stderr)
    wins = [p for p in ("fp16", "bf16")
            if all(best.get((r, p, True), (9e9,))[0] < best.get((r, p, False), (0,))[0]
                   for r in (1, 2))]
    if not each and len(wins) < 2:
        wins = []
    print("new forms faster in both runs:", ",".join(wins) or "none", file=sys.stderr)
    return ",".join(f"gemm@{p}" for p in wins)


if __name__ == "__main__":
    if sys.argv[1:2] == ["verdict"]:
        # verdict OUT CONDITION [CONDITION ...] [--each]: the rows to re-measure, on stdout
        conditions = [a for a in sys.argv[3:] if a != "--each"]
        print(verdict(sys.argv[2], conditions, each="--each" in sys.argv[3:]))
    else:
        main()
