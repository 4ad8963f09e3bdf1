"""Device probe (not a test): the k=3 separable filter 4096^2 (the bench row ``separable_3``,
one two-level problem) on the page's tile and on tiles the autotuner's first rounds do not give:
the page tile at higher occupancy (``Tile.minblocks``), other block shapes and thread counts,
the page tile's second-round forms, and the same tiles with their output stores streamed
(``codegen.STORE_HINT``); beside them two copies of the row's 64 MB (``cupy.copyto``, and the
generator's own k=1 filter, a copy through the same kernel), the bytes any filter must move.
Each tile checked against float64 on NaN-poisoned outputs and bit for bit against the page tile,
then timed in turns with the copies and the row's peers; registers and resident blocks printed.

``PYTHONPATH=sw python tests/merit/gpu/sep_probe.py [--rounds 5] [--cached | --chunks | --axes |
--columns | --sector [--aligns 4,8,32]] [--launch] [--dry]``; under Nsight Compute:
``tests/merit/gpu/sep_profile.sh``."""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from forms_probe import tile_of  # noqa: E402

#: the page's pick (seed 112826, 2026-11-29 00:24)
PAGE = "t4x64_r16x1_c3_u2_ssg"
#: block shapes the first rounds do not rank: (threads, regs)
SHAPES = [((4, 32), (16, 1)), ((2, 64), (32, 1)), ((4, 64), (32, 1)), ((8, 64), (8, 1)),
          ((4, 128), (16, 1)), ((2, 128), (32, 1)), ((4, 32), (8, 1)), ((8, 32), (4, 1)),
          ((16, 32), (4, 1)), ((8, 128), (8, 1)), ((2, 256), (16, 1)), ((1, 256), (32, 1)),
          ((4, 64), (8, 1)), ((2, 64), (16, 1))]


def variants(spec, page):
    from merit.gpu import tiling
    from merit.gpu.tiling import _replace

    out = [page] + [_replace(page, minblocks=m) for m in (2, 3, 4, 6, 8)]
    out += [t for t in tiling.rank(spec, count=12) if t != page]
    for th, rg in SHAPES:
        t = tiling.complete(spec, _replace(page, threads=th, regs=rg, pads=(), minblocks=1))
        out += [t, _replace(t, minblocks=max(1, 2048 // t.nthreads))]
    out += [v for _, v in tiling._lean_variants(spec, [(1.0, page)], tiling.H100,
                                                tiling.LEAN_VARIANTS + tiling._ptxas_forms())]
    seen, uniq = set(), []
    for t in out:
        if t not in seen:
            seen.add(t)
            uniq.append(t)
    return uniq


def cached(spec, page):
    """The page tile and the tiles of :data:`SHAPES` with the loop inputs read through the
    read-only cache (``shared`` all off: the image, then the image alone), completed."""
    from merit.gpu import tiling
    from merit.gpu.tiling import _replace

    out = [page]
    for th, rg in [(page.threads, page.regs)] + SHAPES:
        base = _replace(page, threads=th, regs=rg, pads=(), minblocks=1, double=False,
                        vector=())
        for shared in ((False, False, False), (False, True, False)):
            out.append(tiling.complete(spec, _replace(base, shared=shared)))
    return list(dict.fromkeys(out))


def chunked(spec, page):
    """The page tile and the shapes of :data:`SHAPES` with accumulation tiles of one row of
    taps (chunk 1: three tiles whose footprint copies a pipeline of 2 or 3 buffers overlaps with
    the taps of the tile before), completed."""
    from merit.gpu import tiling
    from merit.gpu.tiling import _replace

    out = [page]
    for th, rg in [(page.threads, page.regs)] + SHAPES[:8]:
        base = tiling.complete(spec, _replace(page, threads=th, regs=rg, chunk=1, pads=(),
                                              minblocks=1, double=False, vector=()))
        out += [base, _replace(base, stages=3)] if base.double else [base]
    return list(dict.fromkeys(out))


#: thread blocks of several adjacent columns a thread: (threads, regs)
COLUMNS = [((8, 32), (8, 4)), ((16, 16), (4, 4)), ((4, 64), (4, 4)), ((8, 32), (4, 4)),
           ((4, 32), (16, 2)), ((8, 32), (8, 2)), ((16, 32), (4, 2)), ((4, 64), (8, 2))]


def axes(page, image, launches, shapes=None, names=None, sector=0):
    """The page tile's block and thread shape (or ``shapes``: ``(threads, regs, vread)``) on the
    filter's horizontal taps alone, its vertical taps alone (``bench.gpu.separable_passes``)
    and a 3 x 3 filter of 9 taps (``workloads.filter3x3``), or the problems of ``names``, on the
    row's image: each checked against float64 on a NaN-poisoned output, its launch added to
    ``launches``; the probe's records."""
    import cupy as cp

    from bench.gpu import separable_passes
    from merit import workloads as W
    from merit.gpu import tiling
    from merit.gpu.spec import spec_of
    from merit.gpu.tiling import _replace

    n = image.shape[0]
    rng = np.random.default_rng(7)
    taps = cp.asarray(rng.standard_normal(3, dtype=np.float32))
    w9 = cp.asarray(rng.standard_normal((3, 3), dtype=np.float32))
    x = cp.pad(image.astype(cp.float64), 1)
    t64 = taps.astype(cp.float64)
    refs = {"separable_rows": sum(t64[j] * x[1:n + 1, j:j + n] for j in range(3)),
            "separable_cols": sum(t64[i] * x[i:i + n, 1:n + 1] for i in range(3)),
            "filter3x3": sum(float(w9[i, j]) * x[i:i + n, j:j + n]
                             for i in range(3) for j in range(3))}
    rows, cols = separable_passes(n, n, 3)
    recs = []
    shapes = shapes or [(page.threads, page.regs, False)]
    for prob, ins in ((rows, (image, taps)), (cols, (image, taps)),
                      (W.filter3x3(n, n), (image, w9))):
        if names and prob.name not in names:
            continue
        spec = spec_of(prob, "float32", "fp32")
        for th, rg, vr in shapes:
            t = tiling.complete(spec, _replace(page, threads=th, regs=rg, vread=vr, shared=(),
                                               pads=(), vector=(), double=False, sector=sector))
            recs.append(_checked(prob, spec, t, ins, refs[prob.name], launches))
    return recs


def _checked(prob, spec, t, ins, ref, launches):
    """``t`` launched once on a NaN-poisoned output, checked against ``ref``, its launch added to
    ``launches``: the probe's record."""
    import cupy as cp

    from merit.gpu import runtime

    o = cp.full(spec.pshape, cp.nan, dtype=cp.float32)
    go = runtime.launcher(spec, t, list(ins), (o,))
    go()
    cp.cuda.Device().synchronize()
    err = float(cp.linalg.norm(o.astype(cp.float64) - ref) / cp.linalg.norm(ref))
    name = f"{prob.name} {t.label()}"
    print(name, f"err {err:.2e}", "regs, blocks/SM", occupancy(spec, t), flush=True)
    assert err < 1e-5, name
    launches[name] = go
    return {"tile": name, "err": err}


def sectors(page, spec, prob, inputs, ref, image, launches):
    """The page tile, the first six shapes of :data:`SHAPES`, and the page tile's shape on the
    horizontal taps alone and on 3 x 3, with their footprint rows from the 16-byte piece below
    the box (4 words, as the page's tiles) and from the 8-, 16- or 32-word column below it
    (:attr:`Tile.sector`): each checked against float64 on a NaN-poisoned output and the forms
    bit for bit."""
    import cupy as cp

    from merit.gpu import runtime, tiling
    from merit.gpu.tiling import _replace

    recs = []
    for align in sectors.aligns:
        sc = 0 if align == 4 else align
        tiles = [tiling.complete(spec, _replace(page, threads=th, regs=rg, pads=(), vector=(),
                                                double=False, minblocks=1, sector=sc))
                 for th, rg in [(page.threads, page.regs)] + SHAPES[:6]]
        for t in tiles:
            o = cp.full(spec.pshape, cp.nan, dtype=cp.float32)
            go = runtime.launcher(spec, t, inputs, (o,))
            go()
            cp.cuda.Device().synchronize()
            got = prob.outputs[0].finish(o)
            err = float(cp.linalg.norm(got.astype(cp.float64) - ref) / cp.linalg.norm(ref))
            name = t.label()
            key = _replace(t, sector=0, pads=()).label()
            if align == 4:
                sectors.first[key] = cp.asnumpy(o)
            same = bool(np.array_equal(cp.asnumpy(o), sectors.first.get(key)))
            print(name, f"err {err:.2e}", "bit-equal", same, "regs, blocks/SM",
                  occupancy(spec, t), flush=True)
            assert err < 1e-5 and same, name
            launches[name] = go
            recs.append({"tile": name, "err": err, "bit_equal": same})
        recs += axes(page, image, launches, names=("separable_rows", "filter3x3"), sector=sc)
    return recs


sectors.first = {}
sectors.aligns = (4, 8)


def occupancy(spec, tile):
    """(registers, resident blocks an SM) of the compiled tile, where CuPy says."""
    from merit.gpu import runtime

    kernel, _, nthreads, smem = runtime.compiled(spec, tile)
    try:
        import cupy as cp
        regs = kernel.num_regs
        blocks = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            kernel.kernel.ptr, nthreads, smem)
        return regs, blocks
    except Exception as exc:   # noqa: BLE001 - reported
        return str(exc)[:60], None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hint", default="cs", help="store hint of the streamed side")
    ap.add_argument("--streamed", type=int, default=8, help="tiles also timed streamed")
    ap.add_argument("--cached", action="store_true",
                    help="the tiles reading the image through the cache (no streamed side)")
    ap.add_argument("--chunks", action="store_true",
                    help="the tiles of one row of taps per accumulation tile, pipelined")
    ap.add_argument("--axes", action="store_true",
                    help="the page tile's shape on the filter's taps along one axis and on 3x3")
    ap.add_argument("--columns", action="store_true",
                    help="tiles of several adjacent columns a thread (and their vread forms) "
                         "on the horizontal taps and on 3x3")
    ap.add_argument("--sector", action="store_true",
                    help="footprint rows from the 32-byte sector below the box (Tile.sector "
                         "8) against the 16-byte piece (4)")
    ap.add_argument("--aligns", default="4,8",
                    help="the --sector sides' row alignments in words (4: Tile.sector 0)")
    ap.add_argument("--launch", action="store_true",
                    help="launch and check each kernel once, no timing (for a profiler)")
    ap.add_argument("--dry", action="store_true")
    args = ap.parse_args()
    from merit import workloads as W
    from merit.gpu import codegen
    from merit.gpu.spec import spec_of

    spec3 = spec_of(W.separable_filter(4096, 4096, 3), "float32", "fp32")
    page = tile_of(spec3, PAGE)
    tiles = ([page] if args.axes or args.columns or args.sector
             else cached(spec3, page) if args.cached
             else chunked(spec3, page) if args.chunks else variants(spec3, page))
    if args.dry:
        for t in tiles:
            codegen.source(spec3, t)
            print(t.label())
        print(len(tiles), "tiles")
        return
    import cupy as cp
    from probelib import run_checked, setup, time_and_report

    from merit.gpu import _compile_all, runtime

    rng = np.random.default_rng(3)
    prob, spec, inputs, res, peers, refs = setup("separable", dict(n=4096, k=3), rng)
    assert spec.digest() == spec3.digest()
    launches, out = {}, []
    src = inputs[0]
    dst = cp.empty_like(src)
    launches["copyto 64 MB"] = lambda: cp.copyto(dst, src)
    # the generator's copy: a k=1 filter of the page tile's shape
    p1 = W.separable_filter(4096, 4096, 1)
    s1 = spec_of(p1, "float32", "fp32")
    by = dict(zip([t.name for t in p1.tensors],
                  [src, cp.asarray([1.0], dtype=cp.float32), cp.asarray([1.0], dtype=cp.float32)],
                  strict=True))
    o1 = cp.full(s1.pshape, cp.nan, dtype=cp.float32)
    from merit.gpu import tiling
    from merit.gpu.tiling import _replace

    k1 = tile_of(s1, PAGE.replace("_c3_", "_c1_"))
    for t1 in (k1, tiling.complete(s1, _replace(k1, shared=(True, True, False), pads=()))):
        go = runtime.launcher(s1, t1, [by[op.tensor] for op in p1.operands], (o1,))
        go()
        cp.cuda.Device().synchronize()
        assert bool(cp.array_equal(p1.outputs[0].finish(o1), src)), "k=1 copy differs"
        launches[f"k=1 copy {t1.label()}"] = go
        out.append({"tile": f"k=1 {t1.label()}", "occupancy": occupancy(s1, t1)})
    if args.sector:
        sectors.aligns = tuple(int(a) for a in args.aligns.split(","))
        out += sectors(page, spec, prob, inputs, refs[0], src, launches)
    if args.axes:
        out += axes(page, src, launches)
    if args.columns:
        shapes = [(th, rg, vr) for th, rg in [(page.threads, page.regs)] + COLUMNS
                  for vr in (False, True)]
        out += axes(page, src, launches, shapes, ("separable_rows", "filter3x3"))
    _compile_all(spec, tiles)
    first = None
    for hint in ("",) if (args.cached or args.chunks or args.axes or args.columns
                          or args.sector) else ("", args.hint):
        codegen.STORE_HINT = hint
        runtime.forget()
        for t in tiles if not hint else tiles[:args.streamed]:
            try:
                go, err = run_checked(prob, spec, t, inputs, res, refs)
            except Exception as exc:   # noqa: BLE001 - reported
                print(t.label(), "failed", str(exc)[:200], flush=True)
                out.append({"tile": t.label(), "hint": hint, "error": str(exc)[:400]})
                continue
            got = cp.asnumpy(res[0])
            first = got.copy() if first is None else first
            same = bool(np.array_equal(got, first))
            occ = occupancy(spec, t)
            name = f"{t.label()}{'_st' + hint if hint else ''}"
            print(name, f"err {err:.2e}", "bit-equal", same, "regs, blocks/SM", occ, flush=True)
            out.append({"tile": name, "err": err, "bit_equal": same, "occupancy": occ})
            assert err < 1e-5, name
            launches[name] = go
    codegen.STORE_HINT = ""
    runtime.forget()
    if args.launch:
        return
    time_and_report("sep_probe", out, launches, peers, args.rounds)


if __name__ == "__main__":
    main()
