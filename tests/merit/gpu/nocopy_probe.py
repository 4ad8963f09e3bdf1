"""Device probe (not a test): the padded-row form read inside the kernel, no copies
(``Tile.ragged``), against the padded form with its copies in the launch, on the rows of seed
112826 whose tiles pad: the GEMM 1735 x 1849 x 1873, the 1x1 conv N4 C181 M229 61x77 (the
product form's tile) and AlexNet CONV1 (their page tiles).

Each tile launched on NaN-poisoned outputs, checked against float64 and compared bit for bit
with the padded form's outputs (a split-K tile's atomic sums are in no fixed order, so its forms
are also compared at split 1, launched but not timed); the kernels' registers and spills from
ptxas; then every launch
(the padded form, its kernel alone on copies made once, ``ragged`` 1 and 2) and the row's peers
timed in turns.

``--stages``: instead, the 1x1 conv's page tile at 2, 3 and 4 pipeline stages and chunks of 16,
32 and 64 channels, each padded and ragged (form 1, words), in turns with cuDNN.

``--flat``: instead, the 1x1 conv's product tiles the autotuner times (``tiling.flat_variants``),
each as it is, padded and ragged (form 1, words), checked and timed in turns with cuDNN.

Each ragged form with its pieces taken from aligned pairs (``codegen.RAGGED_PAIRS``, "pairs")
and read word by word ("words"), a generator switch.

``PYTHONPATH=sw python tests/merit/gpu/nocopy_probe.py [--rows gemm,conv1x1,alexnet]
[--rounds 7] [--forms 1,2] [--reads pairs,words] [--flat | --stages]``"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from padwords_probe import TILES  # noqa: E402
from probelib import bench_table, run_checked, setup, time_and_report  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="gemm,conv1x1,alexnet")
    ap.add_argument("--forms", default="1,2")
    ap.add_argument("--reads", default="pairs,words")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--flat", action="store_true")
    ap.add_argument("--stages", action="store_true")
    args = ap.parse_args()
    if args.flat:
        return flat_forms(args.rounds)
    if args.stages:
        return stage_forms(args.rounds)
    import cupy as cp
    import numpy as np

    from merit.gpu import _compile_all, codegen, runtime, tiling
    from merit.gpu.flat import launch_parts

    table = bench_table(112826)
    out, gos, peers_all = {}, {}, {}
    forms = [int(f) for f in args.forms.split(",")]
    for row in args.rows.split(","):
        key, fields, _ = TILES[row]
        prob, spec, inputs, res, peers, refs = setup(*table[key], np.random.default_rng(13))
        for name, fn in peers.items():
            peers_all[f"{row} {name}"] = fn
        tiles = [(tiling.check_tile(spec, dict(fields, ragged=f)), how)
                 for f, how in [(0, "")] + [(f, r) for r in args.reads.split(",") for f in forms]]
        first = None
        for t, how in tiles:
            codegen.RAGGED_PAIRS = how != "words"
            runtime.forget()
            name = f"{row} {'padded' if not t.ragged else f'ragged {t.ragged} {how}'}"
            gos[name], err = run_checked(prob, spec, t, inputs, res, refs)
            got = cp.asnumpy(res[0]).copy()
            first = got if first is None else first
            regs = " | ".join(ln.strip() for n, log in runtime.ptxas_logs.items()
                              if t.label() in n for ln in log.splitlines()
                              if "registers" in ln or "spill" in ln)
            out[name] = dict(tile=t.label(), error=err, bit_equal=bool(np.array_equal(got, first)),
                             nan=bool(np.isnan(got).any()), ptxas=regs)
            print(name, out[name], flush=True)
        codegen.RAGGED_PAIRS = True
        runtime.forget()
        tiles = [t for t, _ in tiles]
        if tiles[0].split > 1:   # the same sums in a fixed order
            ones = [tiling.check_tile(spec, dict(fields, ragged=f, split=1)) for f in [0] + forms]
            _compile_all(spec, ones)
            first = None
            for t in ones:
                name = f"{row} split 1 {'padded' if not t.ragged else f'ragged {t.ragged}'}"
                _, err = run_checked(prob, spec, t, inputs, res, refs)
                got = cp.asnumpy(res[0]).copy()
                first = got if first is None else first
                out[name] = dict(tile=t.label(), error=err,
                                 bit_equal=bool(np.array_equal(got, first)))
                print(name, out[name], flush=True)
        t = tiles[0]
        s2, i2, o2 = launch_parts(spec, t, inputs, res) if t.flat else (spec, inputs, res)
        ins, fill = runtime._pad_inputs(s2, i2)
        kern, nb, nt, smem = runtime.compiled(s2, t)
        args_ = tuple(ins) + tuple(o2)
        zero = [(o.data.ptr, o.nbytes) for o in o2] if t.split > 1 else []
        fill()

        def kernel(kern=kern, nb=nb, nt=nt, smem=smem, args_=args_, zero=zero):
            for ptr, n in zero:
                cp.cuda.runtime.memsetAsync(ptr, 0, n, cp.cuda.get_current_stream().ptr)
            kern((nb,), (nt,), args_, shared_mem=smem)

        gos[f"{row} padded kernel alone"] = kernel
        gos[f"{row} padded copies alone"] = fill
    time_and_report("nocopy_probe", out, gos, peers_all, args.rounds)


def flat_forms(rounds):
    """The 1x1 conv's product tiles, each plain, padded and ragged, in turns with its peers."""
    import dataclasses

    import numpy as np

    from merit.gpu import _compile_all, tiling

    key, _, _ = TILES["conv1x1"]
    prob, spec, inputs, res, peers, refs = setup(*bench_table(112826)[key],
                                                 np.random.default_rng(13))
    tiles = []
    for t in tiling.flat_variants(spec):
        base = dataclasses.replace(t, padrows=False, ragged=0)
        if base.split > 1 or base.label() in {u.label() for u in tiles}:
            continue
        tiles.append(base)
        try:
            p = tiling.check_tile(spec, dataclasses.replace(base, padrows=True, pads=(),
                                                            vector=()))
        except ValueError:
            continue
        tiles += [p, dataclasses.replace(p, ragged=1)]
    _compile_all(spec, tiles)
    out, gos = {}, {}
    for t in tiles:
        try:
            gos[t.label()], err = run_checked(prob, spec, t, inputs, res, refs)
            out[t.label()] = dict(error=err)
        except Exception as exc:   # noqa: BLE001 - reported in the record
            out[t.label()] = dict(error=f"{type(exc).__name__}: {exc}"[:300])
        print(t.label(), out[t.label()], flush=True)
    time_and_report("nocopy_probe_flat", out, gos, peers, rounds)


def stage_forms(rounds):
    """The 1x1 conv's page tile at other pipeline depths and chunks, padded and ragged."""
    import numpy as np

    from merit.gpu import _compile_all, tiling

    key, fields, _ = TILES["conv1x1"]
    prob, spec, inputs, res, peers, refs = setup(*bench_table(112826)[key],
                                                 np.random.default_rng(13))
    tiles = []
    for stages in (2, 3, 4):
        for chunk in (16, 32, 64):
            for ragged in (0, 1):
                try:
                    tiles.append(tiling.check_tile(spec, dict(
                        fields, stages=stages, chunk=chunk, double=True, ragged=ragged)))
                except ValueError as exc:
                    print(stages, chunk, ragged, exc, flush=True)
    _compile_all(spec, tiles)
    out, gos = {}, {}
    for t in tiles:
        try:
            gos[t.label()], err = run_checked(prob, spec, t, inputs, res, refs)
            out[t.label()] = dict(error=err)
        except Exception as exc:   # noqa: BLE001 - reported in the record
            out[t.label()] = dict(error=f"{type(exc).__name__}: {exc}"[:300])
        print(t.label(), out[t.label()], flush=True)
    time_and_report("nocopy_probe_stages", out, gos, peers, rounds)


if __name__ == "__main__":
    main()
