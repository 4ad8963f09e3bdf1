"""CuPy back end: one generated CUDA kernel per MERIT problem (paper §IV, UMI §4).

``merit.gpu.run(problem, *arrays)`` runs a :class:`merit.Problem` on the GPU: the transform and the
strategy's C bodies become one tiled kernel (see :mod:`merit.gpu.codegen`), its tile is chosen by
a cost model and a small autotuner (:mod:`merit.gpu.tiling`, cached on disk per device and
specialization), and the result comes back as CuPy arrays.  Importing this package and generating
source (:func:`kernel_source`, :func:`plan`) needs neither CuPy nor a GPU.
"""

from dataclasses import dataclass

from .codegen import kernel_name, source
from .spec import OPERAND_DTYPES, PRECISIONS, Spec, spec_of
from .tile import Tile
from .tiling import (
    H100,
    WG_TUNED,
    Device,
    check_tile,
    flat_variants,
    pad_variants,
    rank,
    row_variants,
    sector_variants,
    staged_variants,
    timed_variants,
    wino_variants,
)

__all__ = ["Plan", "Tile", "PRECISIONS", "plan", "kernel_source", "run", "run_fixed", "tune",
           "prepare", "dtype_of", "candidates", "precompile", "seed", "pick", "finalists",
           "in_turns", "finals"]

_DTYPES = {"float32": "float32", "int32": "int32"}


@dataclass(frozen=True)
class Plan:
    """A problem specialized for one element type and one tile, with its kernel source."""

    spec: Spec
    tile: Tile

    @property
    def name(self):
        return kernel_name(self.spec, self.tile)

    @property
    def source(self):
        return source(self.spec, self.tile)[1]

    @property
    def launch(self):
        """``(blocks, threads per block, dynamic shared memory bytes)``."""
        _, _, nb, nt, smem = source(self.spec, self.tile)
        return nb, nt, smem


def _check_problem(problem):
    from merit.problem import Problem

    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a merit.Problem, not {problem!r}")


def plan(problem, dtype="float32", tile=None, precision="fp32", operands="float32"):
    """Specialize ``problem`` for ``dtype`` ("float32" or "int32"), a precision and a tile.

    ``tile`` is a :class:`Tile`, a dict of some of its fields (``threads`` required), or None for
    the cost model's first choice (no timing; :func:`run` autotunes).  ``precision`` as in
    :func:`run`; ``operands`` the arrays' element type in memory ("float32", or "float16" /
    "bfloat16" with precision "fp16" / "bf16", see :func:`run`).
    """
    _check_problem(problem)
    if dtype not in _DTYPES:
        raise TypeError(f"dtype must be 'float32' or 'int32', not {dtype!r}")
    spec = spec_of(problem, dtype, precision, operands=operands)
    t = rank(spec, count=1)[0] if tile is None else check_tile(spec, tile)
    return Plan(spec, t)


def kernel_source(problem, dtype="float32", tile=None, precision="fp32", operands="float32"):
    """CUDA source of the kernel :func:`run` would launch for ``problem`` (no GPU needed)."""
    return plan(problem, dtype, tile, precision, operands).source


_HALF = ("float16", "bfloat16")


def _kind(array):
    """An array's element type by name ("float32", "float16", "bfloat16", ...), torch's too."""
    return str(array.dtype).removeprefix("torch.")


def operand_dtype(kinds, names, precision):
    """The operands' element type in memory for arrays of element types ``kinds``: "float32"
    (or "int32", ...) as :func:`dtype_of` checks them, or "float16" / "bfloat16" when every
    array is of the half type of ``precision`` "fp16" / "bf16"; a TypeError naming the tensor
    and what was expected otherwise."""
    want = OPERAND_DTYPES.get(precision)
    for kd, n in zip(kinds, names, strict=True):
        if kd in _HALF and kd != want:
            takes = f"float32 or {want}" if want else "float32"
            raise TypeError(f"tensor {n!r} has dtype {kd}; precision {precision!r} takes {takes} "
                            f"arrays ({kd} arrays go with precision "
                            f"{'fp16' if kd == 'float16' else 'bf16'!r})")
    if not any(kd in _HALF for kd in kinds):
        return "float32"
    if any(kd != want for kd in kinds):
        raise TypeError(f"the arrays mix dtypes {sorted(set(kinds))}; give all float32 or all "
                        f"{want} for precision {precision!r}")
    return want


def dtype_of(arrays, names):
    """The kernel element type for the given arrays: all float32 or all int32."""
    kinds = set()
    for a, n in zip(arrays, names, strict=True):
        dt = str(a.dtype)
        if dt not in _DTYPES:
            raise TypeError(f"tensor {n!r} has dtype {dt}; merit.gpu computes in float32 or "
                            f"int32 (cast the array first)")
        kinds.add(dt)
    if len(kinds) > 1:
        raise TypeError(f"the arrays mix dtypes {sorted(kinds)}; give all float32 or all int32")
    return kinds.pop() if kinds else "float32"


def _check_arrays(problem, arrays):
    if len(arrays) != len(problem.tensors):
        raise ValueError(
            f"problem {problem.name!r} takes {len(problem.tensors)} arrays "
            f"({', '.join(t.name for t in problem.tensors)}), got {len(arrays)}")
    for t, a in zip(problem.tensors, arrays, strict=True):
        if tuple(a.shape) != tuple(t.shape):
            raise ValueError(f"tensor {t.name!r}: array has shape {tuple(a.shape)}, "
                             f"expected {tuple(t.shape)}")


def _check_out(spec, out, cp):
    if len(out) != spec.outputs:
        raise ValueError(f"out must hold {spec.outputs} arrays, not {len(out)}")
    for o, a in enumerate(out):
        if not isinstance(a, cp.ndarray) or tuple(a.shape) != spec.pshape \
                or str(a.dtype) != spec.out_dtype or not a.flags.c_contiguous:
            raise ValueError(f"out[{o}] must be a C-contiguous cupy array of shape {spec.pshape} "
                             f"and dtype {spec.out_dtype}")


def prepare(problem, *arrays, tile=None, out=None, tune=True, cache=None, precision="fp32",
            fixed=None):
    """Check the arguments, choose the tile and allocate outputs, without launching.

    Returns ``(plan, go, raw_outputs)``: ``go()`` launches the kernel on these arrays and writes
    ``raw_outputs`` (shape ``problem.p_shape``).  Arguments as :func:`run`; ``fixed`` (an output
    shift) runs the MERIT-z program on int16 arrays as :func:`run_fixed` does.
    """
    from . import runtime

    _check_problem(problem)
    cp = runtime.cupy()
    names = [t.name for t in problem.tensors]
    operands = "float32"
    if len(arrays) == len(names):
        kinds = [_kind(a) for a in arrays]
        operands = operand_dtype(kinds, names, precision)
        arrays = [runtime.to_device(a, n) for a, n in zip(arrays, names, strict=True)]
    _check_arrays(problem, arrays)
    halves = None
    if operands != "float32":
        # half-precision arrays: the half tiles read them as they are; the other tiles (and
        # every pre / post input) read float32 copies, made once here (exact: fp16 and bf16
        # values are float32 values)
        halves = arrays
        arrays = [runtime.widen(a, operands) for a in arrays]
    if fixed is not None:
        for a, n in zip(arrays, names, strict=True):
            if str(a.dtype) != "int16":
                raise TypeError(f"tensor {n!r} has dtype {a.dtype}; fixed point takes int16 "
                                f"arrays (the MERIT-z data type)")
        arrays = [a.astype(cp.int32) for a in arrays]
    dtype = dtype_of(arrays, names)
    for op in problem.operands:
        op.transform.check_bounds(problem.p_shape, problem.a_shape)
    spec = spec_of(problem, dtype, precision, fixed, operands=operands)
    by_name = dict(zip(names, arrays, strict=True))
    inputs = [by_name[op.tensor] for op in problem.operands]
    half_inputs = None
    if halves is not None:
        from .mma import roles

        r = roles(spec)
        hby = dict(zip(names, halves, strict=True))
        half_inputs = [hby[op.tensor] if r is not None and k in (r.a, r.b) else inputs[k]
                       for k, op in enumerate(problem.operands)]
    if out is None:
        out = tuple(cp.empty(spec.pshape, dtype=spec.out_dtype) for _ in range(spec.outputs))
    else:
        out = tuple(out)
        _check_out(spec, out, cp)
    t = _choose(spec, inputs, out, tile, tune, cache, half_inputs)
    return Plan(spec, t), runtime.launcher(spec, t, half_inputs if t.half else inputs, out), out


def tune(problem, *arrays, cache=None, precision="fp32"):
    """The :class:`Plan` whose tile the autotuner picks for these arrays (cached on disk)."""
    return prepare(problem, *arrays, cache=cache, precision=precision)[0]


def run(problem, *arrays, tile=None, out=None, tune=True, cache=None, precision="fp32"):
    """Run ``problem`` on the current CUDA device.

    Parameters
    ----------
    problem : merit.Problem
    *arrays : CuPy, NumPy or DLPack (e.g. torch) arrays
        One per tensor, in ``problem.tensors`` order; all float32 or all int32.  With precision
        "fp16" / "bf16" they may instead all be float16 / bfloat16 (NumPy / CuPy float16, torch
        float16 or bfloat16): the staged tensor-core tiles then read the operands as 2-byte
        elements (``Tile.half``: ``cp.async`` into shared memory, a pipeline of up to 4 k
        tiles), and the autotuner also times them; the other tiles read float32 copies made once
        when the arrays are prepared.
    tile : Tile or dict, optional
        Override the automatic tile choice.
    out : sequence of cupy arrays, optional
        Where to write the raw outputs (shape ``problem.p_shape``); allocated when omitted.
    tune : bool
        Time the cost model's best candidates on first use of a specialization (and remember the
        winner on disk); otherwise take the model's first choice.
    cache : merit.gpu.runtime.TileCache, optional
        Where tuned tiles are remembered (default: ``$MERIT_GPU_CACHE`` or
        ``~/.cache/merit/gpu-tiles.json``).
    precision : {"fp32", "tf32", "fp16", "bf16"}
        "fp32": exact fp32 arithmetic on the SIMT cores.  The others run Dot-like problems
        (convolutions, GEMM, FC) on the tensor cores (:mod:`merit.gpu.mma`): operands rounded to
        TF32, FP16 or BF16 (when a fragment is read, or once when the operand tile is staged:
        :mod:`merit.gpu.ldsm`), products summed in fp32; the arrays stay float32.

    Returns
    -------
    cupy array, or a tuple of them for several outputs (after each Output's reshape/crop).
    """
    _, go, out = prepare(problem, *arrays, tile=tile, out=out, tune=tune, cache=cache,
                         precision=precision)
    go()
    res = tuple(o.finish(r) for o, r in zip(problem.outputs, out, strict=True))
    return res[0] if len(res) == 1 else res


def run_fixed(problem, *arrays, shift=0, tile=None, tune=True, cache=None):
    """Run ``problem``'s MERIT-z program on the GPU, bit-exact with ``merit.isa.programs.run``.

    ``arrays`` are int16 (one per tensor, as ``merit.isa.programs.run`` takes them); ``shift``
    (0..31) divides the 32-bit result by ``2**shift`` with round half up before the saturating
    16-bit ``out`` (docs/isa.md).  Returns int16 CuPy array(s) in the outputs' shapes.
    """
    from . import runtime

    cp = runtime.cupy()
    _, go, out = prepare(problem, *arrays, tile=tile, tune=tune, cache=cache, fixed=shift)
    go()
    res = tuple(o.finish(r).astype(cp.int16) for o, r in zip(problem.outputs, out, strict=True))
    return res[0] if len(res) == 1 else res


#: Candidates the autotuner times (the cost model's best first).
TUNED = 12


def _choose(spec, inputs, out, tile, tune, cache, half_inputs=None):
    from . import runtime

    if tile is not None:
        return check_tile(spec, tile)
    cache = cache if cache is not None else runtime.TileCache()
    _, device = runtime.device_key()
    hit = cache.get(device, spec)
    if hit is not None:
        return hit
    model, cands = candidates(spec, device, tune)
    best = cands[0]
    if tune and len(cands) > 1:
        def timed(tiles):
            _compile_all(spec, tiles)
            for t in tiles:
                try:
                    ms = runtime.time_launch(
                        runtime.launcher(spec, t, half_inputs if t.half else inputs, out),
                        min_ms=5.0, batches=3)
                except Exception:  # a candidate that fails to compile or launch is skipped
                    continue
                yield ms, t

        times = list(timed(cands))
        # the second round: the forms of the fastest plain tiles (SIMT sums)
        times += timed(timed_variants(spec, times, model))
        # the third round: the fastest tile's word copies by rows, and its padded-row copies;
        # the fastest tiles reading a loop input through the cache with it staged instead;
        # the fastest tiles copying from boxes misaligned at run time with their rows from the
        # sector below the box; a stride-1 convolution's Winograd form, a 1 x 1 convolution's
        # product form
        times += timed(row_variants(spec, times, model) + pad_variants(spec, times, model)
                       + staged_variants(spec, times, model)
                       + sector_variants(spec, times, model)
                       + wino_variants(spec, model) + flat_variants(spec, model))
        # the product form's fastest tile, where the third round made it the fastest of all: its
        # padded-row copies (the second round's forms of the product are not padded there)
        times += timed(pad_variants(spec, times, model))
        if times:
            # the finalists' round: the tiles within FINAL_MARGIN of the fastest, again in turns
            def turns(tiles):   # one batch timer per finalist, each sized once
                batches = [runtime.batch_timer(
                    runtime.launcher(spec, t, half_inputs if t.half else inputs, out),
                    min_ms=FINAL_MS) for t in tiles]
                return lambda k: batches[k]()

            best, record = pick(times, turns)
            record["spec"] = f"{spec.name} {spec.precision} {spec.digest()}"
            finals.append(record)
        cache.put(device, spec, best)
    return best


#: The finalists' round.  Each candidate of the three rounds is timed once (3 batches of 5 ms, a
#: median), and at the power cap one such timing does not separate tiles a few per cent apart:
#: on the H200 (2026-11-28) GEMM 4096^3 FP16 took its 3-stage tile (0.241 ms) where the run
#: before took the 4-stage one; timed in turns afterwards they ran 0.2430 and 0.2249 ms, and
#: cuBLAS's rounds spread 0.1965-0.2509.  So the tiles timed within ``FINAL_MARGIN`` of the
#: fastest (at most ``FINALISTS``, fastest first) are timed again in turns: ``FINAL_ROUNDS``
#: rounds, each a batch of at least ``FINAL_MS`` of every finalist, the order reversed every other
#: round, and the pick is the finalist of the least median.  The margin is 10 % (the 4-stage
#: tile's one timing had read at least 7 % over its median in turns).  It adds at most FINALISTS
#: x FINAL_ROUNDS x FINAL_MS (0.28 s) of launches to a specialization's tuning: 15.8 s of the
#: bench page's run (67 of 73 specializations with finalists, H200, 2026-11-28).
FINAL_MARGIN = 0.10
FINALISTS = 4
FINAL_ROUNDS = 7
FINAL_MS = 10.0

#: One record per specialization the autotuner tuned in this process, in order: its finalists
#: (labels, the first rounds' ms, the medians in turns) and the pick (for reports; the autotuner
#: does not read it).
finals = []


def finalists(times, margin=FINAL_MARGIN, count=FINALISTS):
    """The tiles of ``times`` (``(ms, tile)`` pairs) within ``margin`` (a fraction) of the fastest,
    fastest first (ties in the order timed), at most ``count``."""
    ranked = sorted(times, key=lambda mt: mt[0])
    if not ranked:
        return []
    top = ranked[0][0] * (1 + margin)
    return [t for ms, t in ranked[:count] if ms <= top]


def in_turns(count, time_batch, rounds=FINAL_ROUNDS):
    """Medians (ms) of ``count`` launches timed in turns: each of ``rounds`` rounds times one
    batch of each (``time_batch(k)``: ms per call of launch ``k``), in order, the order reversed
    every other round so that none always follows the same one."""
    from statistics import median

    got = [[] for _ in range(count)]
    for r in range(rounds):
        for k in (range(count) if r % 2 == 0 else reversed(range(count))):
            got[k].append(time_batch(k))
    return [median(g) for g in got]


def pick(times, turns, margin=FINAL_MARGIN, count=FINALISTS, rounds=FINAL_ROUNDS):
    """The autotuner's choice from its rounds' ``(ms, tile)`` pairs: the fastest, or where other
    tiles were timed within ``margin`` of it, the finalist of the least median in turns
    (:func:`finalists`, :func:`in_turns`; ``turns(tiles)`` gives the ``time_batch`` of those
    tiles; ties to the faster in the first rounds).  Returns ``(tile, record)``, the record for
    :data:`finals` (``pick_rank``: the pick's place among the finalists, 0 the first rounds'
    fastest)."""
    import time

    first = min(times, key=lambda mt: mt[0])[1]
    fin = finalists(times, margin, count)
    record = {"first_pick": first.label(), "pick": first.label(), "pick_rank": 0,
              "finalists": []}
    if len(fin) < 2:
        return first, record
    t0 = time.perf_counter()
    medians = in_turns(len(fin), turns(fin), rounds)
    record["turns_s"] = round(time.perf_counter() - t0, 3)
    best = min(range(len(fin)), key=lambda k: (medians[k], k))
    ms = {t: m for m, t in times}
    record["finalists"] = [(t.label(), round(ms[t], 5), round(m, 5))
                           for t, m in zip(fin, medians, strict=True)]
    record["pick"], record["pick_rank"] = fin[best].label(), best
    return fin[best], record


#: Candidate lists ranked by another process (:func:`precompile`), by (specialization, device
#: name): the autotuner takes such a list once instead of ranking again.
_SEEDED = {}


def candidates(spec, device, tune=True):
    """``(cost model, tiles)``: the tiles the autotuner times for ``spec`` on the device named
    ``device`` (as :func:`merit.gpu.runtime.device_key` names it), the cost model's first choice
    first; one tile without ``tune``.  A list :func:`seed` handed in is taken (once) instead of
    ranking again."""
    # wgmma is an sm_90a instruction: other devices get no wgmma tiles
    model = H100 if "sm_90" in device else Device(wgmma=False)
    seeded = _SEEDED.pop((spec.key(), device), None) if tune else None
    if seeded is not None:
        return model, list(seeded)
    # the wgmma tiles come on top of the TUNED others (which stay those ranked without them)
    extra = WG_TUNED if spec.precision != "fp32" and model.wgmma else 0
    return model, rank(spec, count=TUNED + extra if tune else 1, device=model)


def precompile(spec, device, workers=2):
    """Rank the autotuner's first candidates of ``spec`` for ``device`` and compile them in this
    process: ``(spec.key(), tiles)``.  For a process preparing another's later problems: with
    ``$MERIT_GPU_CUBINS`` (the NVRTC cubins) and CuPy's kernel cache on disk shared, the other
    process loads the kernels instead of compiling them, and takes the list by :func:`seed`."""
    tiles = candidates(spec, device)[1]
    _compile_all(spec, tiles, workers)
    return spec.key(), tuple(tiles)


def seed(key, device, tiles):
    """Hand in a candidate list :func:`precompile` made (``key``: the specialization's
    ``Spec.key()``): the next autotuning of that specialization on ``device`` takes it."""
    _SEEDED[key, device] = tuple(tiles)


def _compile_all(spec, tiles, workers=16):
    """Compile the candidates concurrently (NVRTC runs outside the interpreter lock); a candidate
    that fails here is compiled, and skipped, again in the timing loop."""
    from concurrent.futures import ThreadPoolExecutor

    from . import runtime

    def one(t):
        try:
            runtime.compiled(spec, t)
        except Exception:  # reported by the timing loop
            pass

    import os

    workers = max(1, min(workers, os.cpu_count() or 8, len(tiles)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, tiles))
