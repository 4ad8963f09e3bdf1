"""Device probe of the persistent warp-specialized wgmma tiles (not a test): for GEMM 4096^3 and
VGG conv3_1 in FP16 / BF16 (half arrays) and TF32 (float32 arrays), every producer tile the
autotuner would time, in its one-tile-per-block form, its persistent form (``Tile.persist``,
``_g<blocks>``), its ping-pong form (``Tile.pingpong``, ``_pp``) and, for convolutions, the
channels-last forms (``Tile.cl``, ``_cl``, the layout copies in the timed launch; ``_cl_halo``:
one image box per row of taps, ``Tile.halo``), each checked
against float64 on the rounded operands and timed beside the library in the same precision.

``PYTHONPATH=sw python tests/merit/gpu/persist_probe.py [--only gemm,vgg] [--prec fp16,bf16,tf32]
[--grids 1000,264] [--row-vector] [--match _g132] [--fence] [--pingpong] [--pp-plain]
[--out DIR]``: one line per tile, the best of each form last, a JSON file under ``--out``.
``--grids``: the producer tiles are timed with these ``Tile.persist`` values too (one at least
the number of output tiles: one tile per block, with the persistent form's loop and 16-byte
stores, which separates the stores from the schedule).  ``--pingpong``: the ping-pong forms too
(not candidates by default); ``--pp-plain``: each ping-pong tile's box in one consumer group too.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from probelib import LAYERS, TC_TOL, measure  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="gemm,vgg")
    ap.add_argument("--prec", default="fp16,bf16,tf32")
    ap.add_argument("--grids", default="")
    ap.add_argument("--row-vector", action="store_true",
                    help="store four outputs at a time where the output's innermost index is a "
                         "row index too (mma.VECTOR_ROWS on; off by default)")
    ap.add_argument("--match", default="",
                    help="only the tiles whose label contains one of these (comma-separated)")
    ap.add_argument("--fence", action="store_true",
                    help="keep the consumers' proxy fence where both operands come by bulk "
                         "copies (ldsm.TMA_FENCE)")
    ap.add_argument("--pingpong", action="store_true",
                    help="time the ping-pong forms too (tiling.PINGPONG_TUNED on; off by "
                         "default)")
    ap.add_argument("--pp-plain", action="store_true",
                    help="time each ping-pong tile's box with one consumer group too (the same "
                         "persistent tile without Tile.pingpong: the same L2 traffic, no overlap)")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import dataclasses

    import cupy as cp
    import torch

    from merit.gpu import TUNED, _compile_all, ldsm, mma, tiling
    from merit.gpu.mma import roles
    from merit.gpu.runtime import time_launch, to_device
    from merit.gpu.spec import OPERAND_DTYPES, spec_of
    from merit.gpu.tiling import H100, WG_TUNED, rank

    mma.VECTOR_ROWS = mma.VECTOR_ROWS or args.row_vector
    ldsm.TMA_FENCE = ldsm.TMA_FENCE or args.fence
    tiling.PINGPONG_TUNED = tiling.PINGPONG_TUNED or args.pingpong
    rng = np.random.default_rng(17)
    rows, best = [], []
    for key in args.only.split(","):
        make, conv = LAYERS[key]
        prob = make()
        arrays = [torch.as_tensor(a, device="cuda") for a in prob.random_inputs(rng, np.float32)]
        names = [t.name for t in prob.tensors]
        for prec in args.prec.split(","):
            if prec == "tf32":
                ours = arrays
                wide = [a.double() for a in arrays]
                torch.backends.cuda.matmul.allow_tf32 = True
                torch.backends.cudnn.allow_tf32 = True
                peer_in = arrays
            else:
                dt = torch.float16 if prec == "fp16" else torch.bfloat16
                ours = [a.to(dt) for a in arrays]
                wide = [h.double() for h in ours]
                peer_in = ours
            if conv is None:
                ref = wide[0] @ wide[1]

                def peer(h=peer_in):
                    return h[0] @ h[1]
            else:
                ref = torch.nn.functional.conv2d(wide[0], wide[1], **conv)

                def peer(h=peer_in, c=conv):
                    return torch.nn.functional.conv2d(h[0], h[1], **c)
            ref = cp.asarray(ref)
            peer_ms = time_launch(peer)
            if prec == "tf32":
                spec = spec_of(prob, "float32", prec)
                by = dict(zip(names, [cp.asarray(a) for a in arrays], strict=True))
                inputs = [by[op.tensor] for op in prob.operands]
            else:
                od = OPERAND_DTYPES[prec]
                spec = spec_of(prob, "float32", prec, operands=od)
                by = dict(zip(names, [to_device(h, n) for h, n in zip(ours, names, strict=True)],
                              strict=True))
                inputs = [by[op.tensor] for op in prob.operands]
                assert roles(spec) is not None
            tiles = [t for t in rank(spec, count=TUNED + WG_TUNED, device=H100) if t.producer]
            tiles += [dataclasses.replace(t, persist=int(g)) for t in tiles if not t.persist
                      for g in filter(None, args.grids.split(","))]
            if args.match:
                tiles = [t for t in tiles if any(m in t.label() for m in args.match.split(","))]
            plain = ({dataclasses.replace(t, pingpong=False) for t in tiles if t.pingpong}
                     if args.pp_plain else set())
            tiles += sorted(plain, key=lambda t: t.label())
            _compile_all(spec, tiles)
            for t in tiles:
                row = measure(prob, spec, t, inputs, ref, TC_TOL[prec] if prec == "tf32" else 1e-5,
                              peer_ms, layer=key, prec=prec, persist=t.persist,
                              form="one group" if t in plain
                              else _form(t, ldsm.grid_blocks(spec, t)))
                rows.append(row)
                print(json.dumps(row), flush=True)
            for form in ("one tile", "persistent", "v4 one tile", "pingpong", "one group",
                         "one tile cl", "persistent cl", "v4 one tile cl", "one tile cl halo",
                         "persistent cl halo", "v4 one tile cl halo"):
                got = [x for x in rows if x["layer"] == key and x["prec"] == prec
                       and x["form"] == form and x.get("ok")]
                if got:
                    best.append((key, prec, form, min(got, key=lambda x: x["ms"])))
            cp.get_default_memory_pool().free_all_blocks()
            torch.cuda.empty_cache()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "persist_probe.json").write_text(json.dumps(rows, indent=1))
    bad = [x for x in rows if not x.get("ok")]
    for x in bad:
        print("BAD", json.dumps(x)[:400])
    print(f"{len([x for x in rows if 'ms' in x])} tiles timed, {len(bad)} bad")
    for key, prec, form, b in best:
        print(f"{key:5} {prec:5} {form:11} {b['tile']:50} {b['ms']:.3f} ms  peer "
              f"{b['peer_ms']:.3f}  {b['vs_peer']:.2f}x  err {b['rel_err']:.1e} "
              f"{b.get('ptxas', '')[-40:]}")


def _form(tile, grid):
    """"one tile" (no persist), "persistent" (fewer blocks than output tiles), "v4 one tile"
    (the persistent form with a block per output tile) or "pingpong" (``Tile.pingpong``, two
    consumer groups taking output tiles in turn); " cl" after it for the channels-last form
    (``Tile.cl``, its copies timed with it), " cl halo" for its row-of-taps form (``Tile.halo``);
    ``grid``: ``ldsm.grid_blocks``."""
    cl = (" cl halo" if tile.halo else " cl") if tile.cl else ""
    if not tile.persist:
        return "one tile" + cl
    if tile.pingpong:
        return "pingpong"
    ntiles, launched = grid
    return ("persistent" if launched < ntiles else "v4 one tile") + cl


if __name__ == "__main__":
    main()
