"""merit.gpu on a CUDA device: every workload against the golden model, over several tiles.

Skipped without CuPy or without a GPU.  Outputs are poisoned before each run, so an element the
kernel never writes fails the check; the float reference is the golden model in float64.
"""

import dataclasses
import functools
import itertools
import zlib

import numpy as np
import pytest
from gpu_cases import CASES, FIXED_CASES, INT_CASES, MMA_CASES, device_module, fixed_inputs

from merit import workloads as W
from merit.gpu import Tile, prepare, run, run_fixed
from merit.gpu.spec import spec_of
from merit.gpu.tiling import rank

cp, pytestmark = device_module()

POISON = {"float32": np.nan, "int32": np.iinfo(np.int32).min + 7}


def _seed(*key):
    """A generator seeded from ``key`` the same way in every process (``hash`` of a string is
    salted per process, so a case's data, and whether a borderline case passed, changed from run
    to run)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _run_checked(problem, arrays, tile, shape, precision, ref, tol=2e-6):
    """``tile`` run on outputs of ``shape`` poisoned with NaN: every output written and within
    ``tol`` (relative) of ``ref``, the sums of the operands as the tile's precision rounds them;
    returns the outputs."""
    out = (cp.full(shape, np.nan, dtype=np.float32),)
    got = cp.asnumpy(run(problem, *arrays, tile=tile, out=out, precision=precision))
    assert not np.isnan(cp.asnumpy(out[0])).any(), f"unwritten outputs with {tile}"
    err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
    assert err < tol, f"relative error {err:.2e} with {tile}"
    return got


def _check(problem, arrays, dtype, tile, ref):
    """Run ``tile`` on poisoned outputs and check them against ``ref``: the raw outputs (shape
    ``problem.p_shape``), as numpy arrays."""
    spec = spec_of(problem, dtype)
    out = tuple(cp.full(spec.pshape, POISON[spec.out_dtype], dtype=spec.out_dtype)
                for _ in range(spec.outputs))
    res = run(problem, *arrays, tile=tile, out=out)
    res = res if isinstance(res, tuple) else (res,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    raws = []
    for o, (raw, got, want) in enumerate(zip(out, res, ref, strict=True)):
        raw = cp.asnumpy(raw)
        raws.append(raw)
        if spec.out_dtype == "float32":
            assert not np.isnan(raw).any(), f"output {o}: {np.isnan(raw).sum()} unwritten elements"
            got = cp.asnumpy(got).astype(np.float64)
            err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
            assert err < 1e-5, f"output {o}: relative error {err:.2e} with {tile}"
        else:
            assert not (raw == POISON["int32"]).any(), f"output {o}: unwritten elements"
            np.testing.assert_array_equal(cp.asnumpy(got), want.astype(np.int64))
    return raws


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_matches_golden_over_tiles(name):
    problem = CASES[name]()
    rng = _seed(name)
    arrays = problem.random_inputs(rng, np.float32)
    ref = problem.run(*[a.astype(np.float64) for a in arrays])
    spec = spec_of(problem, "float32")
    for tile in rank(spec, count=4):
        _check(problem, arrays, "float32", tile, ref)


@pytest.mark.parametrize("name", INT_CASES)
def test_int32_matches_golden(name):
    problem = CASES[name]()
    rng = np.random.default_rng(7)
    arrays = problem.random_inputs(rng, np.int32)
    ref = problem.run(*arrays)
    spec = spec_of(problem, "int32")
    for tile in rank(spec, count=2):
        _check(problem, arrays, "int32", tile, ref)


def test_strided_registers_and_partial_tiles():
    """Register copies spaced by the thread count, ragged last tiles, a chunk not dividing a0."""
    problem = CASES["conv"]()
    rng = np.random.default_rng(3)
    arrays = problem.random_inputs(rng, np.float32)
    ref = problem.run(*[a.astype(np.float64) for a in arrays])
    tile = Tile(threads=(1, 2, 4, 8), regs=(1, 2, 3, 3), chunk=2, strided=(False, True, True,
                                                                           False))
    _check(problem, arrays, "float32", tile, ref)
    _check(problem, arrays, "float32", {"threads": (2, 1, 8, 4), "chunk": 3, "double": True},
           ref)


def test_register_runs_and_peeled_last_tile():
    """Register copies in runs of 4 (16-byte reads), and a chunk that does not divide a_0: whole
    accumulation tiles run unrolled, the last one a rolled copy."""
    problem = W.gemm(70, 52, 45)
    rng = np.random.default_rng(5)
    arrays = problem.random_inputs(rng, np.float32)
    ref = problem.run(*[a.astype(np.float64) for a in arrays])
    for strided in ((4, 4), (0, 4), (4, 0)):
        _check(problem, arrays, "float32",
               {"threads": (4, 4), "regs": (8, 8), "chunk": 8, "strided": strided}, ref)
    for stages in (3, 4):   # deeper copy pipelines, ragged last tile, word copies (odd rows)
        _check(problem, arrays, "float32",
               {"threads": (4, 4), "regs": (4, 4), "chunk": 4, "double": True,
                "stages": stages}, ref)
    problem = CASES["conv"]()
    arrays = problem.random_inputs(rng, np.float32)
    ref = problem.run(*[a.astype(np.float64) for a in arrays])
    _check(problem, arrays, "float32",
           {"threads": (1, 5, 2, 2), "regs": (2, 1, 2, 8), "chunk": 2, "strided": (0, 0, 0, 4)},
           ref)


def test_word_copies_by_rows_bit_for_bit():
    """Word copies (rows not 16-byte aligned) by rows, one column a thread (``Tile.wrows``):
    the same outputs, bit for bit, as the four-words-a-thread copies of the same tile, and
    against float64; ragged edges (zero boundaries), strided staging, unrolled (``lean``) and
    rolled copy loops, a last step with idle threads."""
    from merit.gpu import codegen, tiling
    from merit.gpu.tile import geometry

    cases = [
        (W.gemm(139, 75, 211), [{"threads": (16, 8), "regs": (7, 8), "chunk": 32, "double": True,
                                 "strided": (0, 4), "lean": True, "vread": True, "forder": 1,
                                 "ptxas": 1},
                                {"threads": (8, 8), "regs": (4, 4), "chunk": 16},
                                {"threads": (4, 8), "regs": (5, 2), "chunk": 8, "lean": True},
                                {"threads": (8, 4), "regs": (3, 5), "chunk": 16,
                                 "double": True},
                                {"threads": (2, 16), "regs": (3, 2), "chunk": 4, "lean": True}]),
        (W.conv2d(3, 21, 23, 29, 17, 1, stride=2), [
            {"threads": (1, 8, 4, 8), "regs": (3, 8, 1, 1), "chunk": 8, "double": True,
             "strided": (0, 4, 0, 0), "lean": True}]),
        (CASES["conv"](), [{"threads": (1, 5, 2, 2), "regs": (2, 1, 2, 8), "chunk": 2}]),
    ]
    rng = np.random.default_rng(11)
    used = 0
    for problem, tiles in cases:
        arrays = problem.random_inputs(rng, np.float32)
        ref = problem.run(*[a.astype(np.float64) for a in arrays])
        spec = spec_of(problem, "float32")
        for tile in tiles:
            t = tiling.complete(spec, Tile(**tile))
            used += sum(bool(t.shared[k]) and codegen.row_lanes(geometry(spec, t, k), t.nthreads)
                        for k in range(len(spec.inputs)))
            got = {}
            for on in (False, True):
                got[on] = _check(problem, arrays, "float32",
                                 dataclasses.replace(t, wrows=on), ref)[0]
            np.testing.assert_array_equal(got[False], got[True], err_msg=f"{t}")
    assert used >= 8


def test_padded_rows_bit_for_bit():
    """Loop inputs whose rows are not a multiple of 4 words read from copies padded to one
    (``Tile.padrows``, made in the launch): the same outputs, bit for bit (split-K tiles: to
    rounding, their atomic adds having no fixed order), as the same tile on the inputs as they
    are (16-byte copies instead of word copies, the same products in the same
    order), and against float64; ragged GEMMs (both operands padded), convolutions with odd
    rows under a zero boundary, split-K tiles, a launcher run twice (the copies filled
    again)."""
    from merit.gpu import codegen, runtime, tiling
    from merit.gpu.tile import geometry

    cases = [
        (W.gemm(139, 75, 211), [{"threads": (16, 8), "regs": (7, 8), "chunk": 32, "double": True,
                                 "strided": (0, 4), "lean": True, "vread": True, "forder": 1,
                                 "ptxas": 1},
                                {"threads": (8, 8), "regs": (4, 4), "chunk": 16},
                                {"threads": (8, 4), "regs": (3, 5), "chunk": 16,
                                 "double": True},
                                {"threads": (8, 8), "regs": (4, 4), "chunk": 16, "split": 3}]),
        (W.gemm(333, 201, 999), [{"threads": (16, 16), "regs": (8, 8), "chunk": 32,
                                  "double": True, "lean": True, "vread": True}]),
        (W.conv2d(3, 21, 23, 29, 17, 3, padding=1), [
            {"threads": (1, 4, 4, 8), "regs": (1, 4, 2, 2), "chunk": 4, "double": True}]),
        # split-K (outputs zeroed, then the copies, then the kernel's atomic adds), the
        # padding's reach under a zero boundary (x + kx - 1 up to 41 on rows of 41)
        (W.conv2d(2, 9, 13, 41, 11, 7, padding=1), [
            {"threads": (2, 16, 2, 5), "regs": (1, 1, 4, 8), "chunk": 4, "split": 3,
             "lean": True, "vread": True, "forder": 1, "ptxas": 1}]),
    ]
    rng = np.random.default_rng(12)
    vec = 0
    for problem, tiles in cases:
        arrays = problem.random_inputs(rng, np.float32)
        ref = problem.run(*[a.astype(np.float64) for a in arrays])
        spec = spec_of(problem, "float32")
        spec2, moves = codegen.padded_layout(spec)
        for tile in tiles:
            t = tiling.complete(spec, Tile(**tile))
            p = (tiling.pad_variants(spec, [(1.0, t)]) or [tiling.complete(
                spec, dataclasses.replace(t, padrows=True, pads=(), vector=()))])[0]
            vec += sum(bool(p.shared[k]) and geometry(spec2, p, k).vector for k in moves)
            got = {}
            for tw in (t, p):
                got[tw.padrows] = _check(problem, arrays, "float32", tw, ref)[0]
            # split-K tiles add their partial sums atomically, in no fixed order: not bit for bit
            same = np.testing.assert_array_equal if t.split == 1 else functools.partial(
                np.testing.assert_allclose, rtol=1e-5, atol=1e-5)
            same(got[False], got[True], err_msg=f"{p}")
            ins = [cp.asarray(a) for a in arrays]
            by = dict(zip([x.name for x in problem.tensors], ins, strict=True))
            out = (cp.full(spec.pshape, np.nan, dtype=np.float32),)
            go = runtime.launcher(spec, p, [by[op.tensor] for op in problem.operands], out)
            go()
            out[0].fill(cp.nan)
            go()
            same(cp.asnumpy(out[0]), got[True], err_msg=f"{p} again")
    assert vec >= 8


def test_torch_and_numpy_inputs():
    torch = pytest.importorskip("torch")
    problem = CASES["gemm"]()
    rng = np.random.default_rng(5)
    a, b = problem.random_inputs(rng, np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got_np = cp.asnumpy(run(problem, a, b))
    got_torch = cp.asnumpy(run(problem, torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()))
    for got in (got_np, got_torch):
        assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


def test_error_boundary_raises_before_launch():
    from merit import Index, Problem, Transform
    from merit.strategies import Sum

    tr = Transform((8,), p=[Index(0)], a=[Index(0, 1, 1)], boundary="error", name="x")
    problem = Problem("shift", Sum(), (8,), (2,), [tr])
    with pytest.raises(IndexError, match="tensor 'x': axis 0 is indexed over"):
        run(problem, np.zeros(8, np.float32))


def _round_operand(x, precision):
    """x (float32) rounded as the tensor cores see it, computed on the bits (float64 out)."""
    x = np.asarray(x, np.float32)
    if precision == "fp16":
        return x.astype(np.float16).astype(np.float64)
    bits = x.view(np.uint32).astype(np.uint64)
    if precision == "tf32":      # cvt.rna: to nearest, ties away from zero; 10 mantissa bits
        bits = (bits + 0x1000) & 0xFFFFE000
    else:                        # bf16, cvt.rn: to nearest, ties to even; 7 mantissa bits
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _tc_operands(problem, spec, tile, arrays, precision):
    """The inputs as ``tile`` feeds them to the tensor cores, in float64: loop operands rounded
    to the precision, or, on a TF32 tile with a producer warpgroup (which copies both operands
    as they are, by bulk tensor copies or ``cp.async`` of words), truncated (wgmma drops the
    low mantissa bits of the fp32 words); a tile taking wgmma's A from registers
    (``Tile.areg``) rounds A's elements to nearest there."""
    loop = {op.tensor for op in problem.operands[:2]}
    copied = loop if tile.producer and precision == "tf32" else set()
    if copied and tile.areg:   # wgmma's A from registers, rounded there; B truncated
        from merit.gpu.ldsm import tile_roles

        copied = {problem.operands[tile_roles(spec, tile).b].tensor}
    return [(_trunc_tf32(a) if t.name in copied else _round_operand(a, precision))
            if t.name in loop else a.astype(np.float64)
            for t, a in zip(problem.tensors, arrays, strict=True)]


@pytest.mark.parametrize("shape", [(1, 4065, 5543), (3, 1001, 777), (2, 33, 9), (1, 8, 40),
                                   (4, 130, 1029), (1, 4, 5)])
def test_gemv_streams_the_matrix(shape):
    """``Tile.gemv``: rows of every misalignment, steps past the last row, splits that leave a
    block one step, 1-4 rows of the output; every output written, fresh inputs twice."""
    from merit import workloads as W
    from merit.gpu import gemv
    from merit.gpu.tiling import H100

    problem = W.gemm(*shape)
    spec = spec_of(problem, "float32")
    rng = np.random.default_rng(sum(shape))
    tiles = gemv.candidates(spec, H100) + [
        gemv.tile_for(spec, t, u, s, g) for t, u, s, g in
        ((32, 4, 1, 1), (64, 16, 3, 1), (128, 12, 1000, 1), (128, 4, 1, 4), (256, 8, 5, 2))] + [
        gemv.tile_for(spec, t, u, s, g, cluster=True) for t, u, s, g in
        ((64, 4, 3, 1), (128, 8, 8, 2), (256, 4, 5, 4), (1024, 16, 8, 16))]
    tiles = [t for t in tiles if not gemv.fits(spec, t)]
    assert tiles
    for tile in tiles:
        for _ in range(2):
            a, b = problem.random_inputs(rng, np.float32)
            want = a.astype(np.float64) @ b.astype(np.float64)
            _run_checked(problem, (a, b), tile, shape[:2], "fp32", want, tol=1e-5)
        # one launcher three times: each launch leaves its workspace and counters zeroed
        a, b = problem.random_inputs(rng, np.float32)
        want = a.astype(np.float64) @ b.astype(np.float64)
        _, go, out = prepare(problem, cp.asarray(a), cp.asarray(b), tile=tile)
        for _ in range(3):
            out[0].fill(cp.nan)
            go()
            got = cp.asnumpy(out[0]).astype(np.float64)
            assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5, tile


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(MMA_CASES))
def test_tensor_cores_match_golden_on_rounded_operands(name, precision):
    """Tensor-core kernels over their 3 best tiles: the golden model on the operands rounded to
    the precision, summed in float64, is met to fp32 accumulation error (a wrong index fails)."""
    problem = MMA_CASES[name]()
    rng = _seed(name, precision)
    arrays = problem.random_inputs(rng, np.float32)
    exact = problem.run(*[a.astype(np.float64) for a in arrays])
    spec = spec_of(problem, "float32", precision)
    for tile in rank(spec, count=3):
        assert tile.mma == precision
        ref = problem.run(*_tc_operands(problem, spec, tile, arrays, precision))
        got = _run_checked(problem, arrays, tile, spec.pshape, precision, ref,
                           tol=5e-6 if tile.tma else 2e-6)
        bound = {"tf32": 3e-3, "fp16": 3e-3, "bf16": 2e-2}[precision]
        assert np.linalg.norm(got - exact) / np.linalg.norm(exact) < bound


def test_tensor_cores_partial_last_chunk_and_clamp():
    """A chunk that leaves a partial last accumulation tile (K = 37 = 16 + 16 + 5), with 2 and 4
    copy stages."""
    problem = MMA_CASES["gemm_odd"]()
    rng = np.random.default_rng(9)
    a, b = problem.random_inputs(rng, np.float32)
    ref = _round_operand(a, "tf32") @ _round_operand(b, "tf32")
    for tile in ({"mma": "tf32", "regs": (32, 16), "warps": (2, 1), "frags": (1, 2), "chunk": 16},
                 {"mma": "tf32", "regs": (16, 8), "warps": (1, 1), "frags": (1, 1), "chunk": 8,
                  "double": True},
                 {"mma": "tf32", "regs": (16, 8), "warps": (1, 1), "frags": (1, 1), "chunk": 8,
                  "double": True, "stages": 4}):
        got = cp.asnumpy(run(problem, a, b, tile=tile, precision="tf32"))
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 2e-6


@pytest.mark.parametrize("name", sorted(FIXED_CASES))
def test_fixed_point_is_bit_exact_with_the_isa(name):
    """run_fixed over the 2 best tiles: the ISA interpreter's int16 outputs, bit for bit."""
    from merit.isa import programs

    problem = FIXED_CASES[name]()
    rng = np.random.default_rng(len(name))
    for shift, (lo, hi) in ((0, (-8, 8)), (9, (-32768, 32768))):
        arrays = fixed_inputs(problem, rng, lo, hi)
        want = programs.run(problem, *arrays, shift=shift)
        want = want if isinstance(want, tuple) else (want,)
        spec = spec_of(problem, "int32", fixed=shift)
        for tile in rank(spec, count=2):
            got = run_fixed(problem, *arrays, shift=shift, tile=tile)
            got = got if isinstance(got, tuple) else (got,)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == np.int16
                np.testing.assert_array_equal(cp.asnumpy(g), w, err_msg=f"{tile}")


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_split_k_adds_partial_sums(dtype):
    """Split-K: blocks summing shares of the accumulation tiles into zeroed outputs."""
    from merit import workloads as W

    problem = W.gemm(8, 40, 300)
    rng = np.random.default_rng(4)
    a, b = problem.random_inputs(rng, dtype)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for tile in ({"threads": (8, 8), "regs": (1, 4), "chunk": 16, "split": 4},
                 {"threads": (4, 16), "chunk": 32, "split": 3, "double": True}):
        out = (cp.full((8, 40), POISON[np.dtype(dtype).name], dtype=dtype),)
        got = cp.asnumpy(run(problem, a, b, tile=tile, out=out)).astype(np.float64)
        if dtype == np.int32:
            np.testing.assert_array_equal(got, want)
        else:
            assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(MMA_CASES))
def test_staged_tensor_cores_match_golden_on_rounded_operands(name, precision):
    """The ldmatrix kernel (operands gathered into shared memory in their precision) over its 2
    best tiles, and the wgmma kernel over its 2 best, checked as above: a wrong gather index,
    swizzle or fragment order fails."""
    problem = MMA_CASES[name]()
    rng = _seed(name, precision, "ldsm")
    arrays = problem.random_inputs(rng, np.float32)
    loop = {op.tensor for op in problem.operands[:2]}
    ref_in = [_round_operand(a, precision) if t.name in loop else a.astype(np.float64)
              for t, a in zip(problem.tensors, arrays, strict=True)]
    ref = problem.run(*ref_in)
    spec = spec_of(problem, "float32", precision)
    tiles = ([t for t in rank(spec, count=8) if t.ldsm and not t.wgmma][:2]
             + [t for t in rank(spec, count=8) if t.wgmma][:2])
    assert tiles, "no staged tile"
    for tile in tiles:
        _run_checked(problem, arrays, tile, spec.pshape, precision, ref)


def test_staged_tensor_cores_partial_tiles_and_odd_lines():
    """K not a multiple of the staged k (37 = 32 + 5), lines that overhang the problem, a single
    8-column fragment (ldmatrix .x2) and slots that outnumber the tile's pieces."""
    problem = MMA_CASES["gemm_odd"]()
    rng = np.random.default_rng(11)
    a, b = problem.random_inputs(rng, np.float32)
    for prec, chunk in (("tf32", 16), ("tf32", 32), ("fp16", 32), ("bf16", 64)):
        ref = _round_operand(a, prec) @ _round_operand(b, prec)
        for warps, frags in (((1, 1), (1, 1)), ((2, 2), (2, 3)), ((4, 1), (1, 1))):
            regs = (16 * warps[0] * frags[0], 8 * warps[1] * frags[1])
            tile = {"mma": prec, "ldsm": True, "regs": regs, "warps": warps, "frags": frags,
                    "chunk": chunk}
            _run_checked(problem, (a, b), tile, (50, 40), prec, ref)


def test_wgmma_partial_tiles_and_odd_lines():
    """wgmma tiles: K not a multiple of the staged k, rows and columns that overhang the problem
    (50 x 40 outputs in blocks of 64 or 128 rows and 64 columns), one and two warpgroups along
    the rows, two along the columns."""
    problem = MMA_CASES["gemm_odd"]()
    rng = np.random.default_rng(12)
    a, b = problem.random_inputs(rng, np.float32)
    for prec, chunk in (("tf32", 32), ("fp16", 64), ("bf16", 64)):
        ref = _round_operand(a, prec) @ _round_operand(b, prec)
        for warps, fn, mb in (((4, 1), 8, 1), ((8, 1), 8, 1), ((4, 2), 8, 1), ((4, 1), 16, 1),
                              ((8, 1), 16, 2)):
            regs = (16 * warps[0], 8 * warps[1] * fn)
            tile = {"mma": prec, "ldsm": True, "wgmma": True, "regs": regs, "warps": warps,
                    "frags": (1, fn), "chunk": chunk, "minblocks": mb}
            _run_checked(problem, (a, b), tile, (50, 40), prec, ref)


def test_wgmma_clusters_share_b():
    """Cluster tiles (two blocks along the rows, each gathering half of the B lines into both
    blocks' shared memory): ragged rows, columns and k, one and two warpgroups."""
    problem = W.gemm(200, 136, 100)
    rng = np.random.default_rng(13)
    a, b = problem.random_inputs(rng, np.float32)
    for prec, chunk in (("tf32", 32), ("fp16", 64), ("bf16", 64)):
        ref = _round_operand(a, prec) @ _round_operand(b, prec)
        for warps, fn in (((4, 1), 8), ((8, 2), 8), ((4, 1), 32)):
            regs = (16 * warps[0], 8 * warps[1] * fn)
            tile = {"mma": prec, "ldsm": True, "wgmma": True, "cluster": 2, "regs": regs,
                    "warps": warps, "frags": (1, fn), "chunk": chunk}
            _run_checked(problem, (a, b), tile, (200, 136), prec, ref)


def _half_inputs(arrays, precision):
    """The arrays in the precision's half type (NumPy float16, or torch bfloat16 on the device)
    and their values as float64 (what the kernels must sum exactly, up to fp32 rounding)."""
    if precision == "fp16":
        half = [a.astype(np.float16) for a in arrays]
        return half, [h.astype(np.float64) for h in half]
    torch = pytest.importorskip("torch")
    half = [torch.as_tensor(a, device="cuda").to(torch.bfloat16) for a in arrays]
    return half, [h.double().cpu().numpy() for h in half]


def _half_cases(cases, *, seed):
    """``(problem, tile shape, precision, half arrays, reference, spec)`` for each ``(problem,
    tile shape)`` of ``cases`` in FP16 and BF16: random inputs from ``seed`` rounded to the half
    type, the reference summed from the rounded values, the spec of half operands."""
    from merit.gpu.spec import OPERAND_DTYPES

    for problem, shape in cases:
        arrays = problem.random_inputs(np.random.default_rng(seed), np.float32)
        for prec in ("fp16", "bf16"):
            half, wide = _half_inputs(arrays, prec)
            spec = spec_of(problem, "float32", prec, operands=OPERAND_DTYPES[prec])
            yield problem, shape, prec, half, problem.run(*wide), spec


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(MMA_CASES))
def test_half_operand_arrays_match_golden(name, precision):
    """float16 / bfloat16 arrays: every tile the autotuner would time (the half tiles, read with
    cp.async where four elements lie contiguous, 2 to 4 buffers; the others on float32 copies)
    against the golden model on the same values in float64."""
    from merit.gpu.spec import OPERAND_DTYPES

    problem = MMA_CASES[name]()
    rng = _seed(name, precision, "half")
    half, wide = _half_inputs(problem.random_inputs(rng, np.float32), precision)
    ref = problem.run(*wide)
    spec = spec_of(problem, "float32", precision, operands=OPERAND_DTYPES[precision])
    tiles = rank(spec, count=16)
    assert any(t.half for t in tiles), "no half tile ranked"
    for tile in tiles:
        _run_checked(problem, half, tile, spec.pshape, precision, ref)


def test_half_operand_partial_tiles_and_stages():
    """Half tiles on a ragged GEMM (K 37: a partial last k tile, zero-filled copies; lines that
    overhang), 2, 3 and 4 buffers, ldmatrix and wgmma, more k tiles than buffers."""
    for problem in (MMA_CASES["gemm_odd"](), W.gemm(70, 40, 300)):
        m, n = problem.p_shape
        rng = np.random.default_rng(14)
        for prec in ("fp16", "bf16"):
            half, (a, b) = _half_inputs(problem.random_inputs(rng, np.float32), prec)
            ref = a @ b
            for stages in (2, 3, 4):
                for tile in ({"mma": prec, "ldsm": True, "regs": (32, 16), "warps": (2, 2),
                              "frags": (1, 1), "chunk": 32},
                             {"mma": prec, "ldsm": True, "wgmma": True, "regs": (64, 64),
                              "warps": (4, 1), "frags": (1, 8), "chunk": 64},
                             {"mma": prec, "ldsm": True, "wgmma": True, "regs": (128, 64),
                              "warps": (8, 1), "frags": (1, 8), "chunk": 32}):
                    tile = dict(tile, half=True, stages=stages)
                    out = (cp.full((m, n), np.nan, dtype=np.float32),)
                    got = cp.asnumpy(run(problem, *half, tile=tile, out=out, precision=prec))
                    assert not np.isnan(cp.asnumpy(out[0])).any(), f"unwritten with {tile}"
                    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
                    assert err < 2e-6, f"relative error {err:.2e} with {tile}"


def test_wgmma_mn_major_operands():
    """wgmma tiles with MN-major operands (``Tile.mn``): GEMM's B (columns contiguous: 16-byte
    copies of eight columns; as wgmma's B, or as its A where B has the more lines), a padded
    image (lines through registers, checked per element) and an unpadded 1x1 image (16-byte
    copies of eight pixels) staged as rows of k and read with the transpose flag; ragged k
    (zero-filled tiles), lines that overhang, 2 to 4 buffers, half and float32 arrays, against
    float64 on the rounded operands."""
    cases = [
        (W.gemm(70, 40, 300), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}, (False, True)),
        # more columns than rows: B gives the wgmma rows (A, transposed), A the columns
        (W.gemm(130, 192, 136), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)},
         (True, False)),
        (W.conv2d(2, 24, 13, 16, 72, 3, padding=1),
         {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}, (True, False)),
        (W.conv2d(2, 32, 8, 16, 64, 1),
         {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}, (True, False)),
    ]
    from merit.gpu import ldsm
    from merit.gpu.spec import OPERAND_DTYPES
    from merit.gpu.tiling import check_tile

    for problem, shape, want in cases:
        rng = np.random.default_rng(23)
        arrays = problem.random_inputs(rng, np.float32)
        for prec in ("fp16", "bf16"):
            half, wide = _half_inputs(arrays, prec)
            ref = problem.run(*wide)
            for chunk, stages, hv in ((64, 2, True), (64, 4, True), (32, 3, True), (64, 2, False)):
                tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=True, chunk=chunk)
                if hv:
                    tile.update(half=True, stages=stages)
                    spec = spec_of(problem, "float32", prec, operands=OPERAND_DTYPES[prec])
                else:
                    spec = spec_of(problem, "float32", prec)
                assert ldsm.mn_ops(spec, check_tile(spec, tile)) == want
                given = half if hv else [w.astype(np.float32) for w in wide]
                _run_checked(problem, given, tile, spec.pshape, prec, ref)


def test_wgmma_producer_warpgroup():
    """Warp-specialized wgmma tiles (``Tile.producer``): a producer warpgroup fills a ring of 3
    or 4 buffers through full / empty mbarriers, the consumers only issue wgmma.  Ragged GEMMs
    with many more k tiles than buffers (the barriers' phases wrap several times), operands by
    ``cp.async`` alone (GEMM, a 1x1 image) and through the producer's registers (a padded image:
    twice the arrivals per phase), K-major and MN-major, 64- and 128-byte lines; with
    ``Tile.tma`` the plain-matrix operands by bulk tensor copies (both of a GEMM whose rows are
    16-byte multiples, one of them where the other's are not, a convolution's weights beside
    the image's cp.async or registers), zero-filled past the tensor; against float64 on the
    rounded operands."""
    cases = [
        (W.gemm(333, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}),
        (W.gemm(70, 40, 300), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}),
        (W.gemm(300, 260, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}),
        (W.conv2d(2, 24, 13, 16, 72, 3, padding=1),
         {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}),
        (W.conv2d(2, 32, 8, 16, 64, 1), {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}),
    ]
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    for problem, shape, prec, half, ref, spec in _half_cases(cases, seed=31):
        for chunk, stages, mn, tma in itertools.product((64, 32), (3, 4), (True, False),
                                                         (False, True)):
            tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=mn, chunk=chunk,
                        half=True, stages=stages, producer=True)
            if tma and not any(ldsm.tma_ops(spec, check_tile(spec, tile))):
                continue
            tile["tma"] = tma
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                _run_checked(problem, half, tile, spec.pshape, prec, ref)


def test_wgmma_producer_clusters_multicast_b():
    """Warp-specialized TMA tiles in clusters of two (``Tile.cluster`` 2): each block copies its
    A and half of the shared B tile's boxes, multicast into both blocks; a buffer is refilled
    once both blocks' consumers have released it (arrivals on the peer's barrier).  Ragged
    GEMMs, 2 and 4 boxes of B, 3 and 4 buffers, 64- and 128-byte lines, twice each."""
    cases = [
        (W.gemm(500, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}),
        (W.gemm(512, 296, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}),
    ]
    for problem, shape, prec, half, ref, spec in _half_cases(cases, seed=37):
        for chunk, stages in ((64, 4), (32, 3)):
            tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=True, chunk=chunk,
                        half=True, stages=stages, producer=True, tma=True, cluster=2)
            for _ in range(2):
                _run_checked(problem, half, tile, spec.pshape, prec, ref)


def _trunc_tf32(x):
    """x (float32) as wgmma reads fp32 bits as TF32: the 13 low mantissa bits dropped."""
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32).astype(np.float64)


def test_wgmma_tf32_producer_warpgroup():
    """TF32 wgmma tiles with a producer warpgroup on float32 arrays (``Tile.producer``, 3 or 4
    buffers): the operand the bulk tensor copy engine takes (``Tile.tma``: GEMM's A, a
    convolution's weights) and the other, copied word by word by ``cp.async`` into the K-major
    layout (transposing GEMM's B; a padded image zero-filled), reach the tensor cores as fp32
    bits, truncated to TF32.  Ragged GEMMs with many more k tiles than buffers, a padded and a
    1x1 image, A rows that are no 16-byte multiple (no bulk copy: both by words), 64- and
    128-byte lines, twice each; FP16 on float32 arrays (converted in the producer's registers,
    one k tile ahead) once; against float64 on the operands as each route rounds them."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    cases = [
        (W.gemm(333, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}),
        (W.gemm(70, 40, 300), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}),
        (W.gemm(300, 260, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}),
        (W.gemm(50, 40, 37), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}),
        (W.conv2d(2, 24, 13, 16, 72, 3, padding=1),
         {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}),
        (W.conv2d(2, 32, 8, 16, 64, 1), {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}),
    ]
    rng = np.random.default_rng(41)
    for problem, shape in cases:
        arrays = problem.random_inputs(rng, np.float32)
        spec = spec_of(problem, "float32", "tf32")
        for chunk, stages, tma in itertools.product((32, 16), (3, 4), (True, False)):
            tile = check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True, chunk=chunk,
                                         stages=stages, producer=True))
            if tma:
                if not any(ldsm.tma_ops(spec, tile)):
                    continue
                tile = check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True,
                                             chunk=chunk, stages=stages, producer=True, tma=True))
            ref = problem.run(*_tc_operands(problem, spec, tile, arrays, "tf32"))
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                # (H100: 2.4e-6 at K = 1000 against truncated operands, 1e-4 and more
                # against rounded ones: the copied words are truncated)
                _run_checked(problem, arrays, tile, spec.pshape, "tf32", ref, tol=5e-6)
    problem, shape = cases[0]
    arrays = problem.random_inputs(rng, np.float32)
    loop = {op.tensor for op in problem.operands[:2]}
    ref = problem.run(*[_round_operand(a, "fp16") if t.name in loop else a.astype(np.float64)
                        for t, a in zip(problem.tensors, arrays, strict=True)])
    tile = dict(shape, mma="fp16", ldsm=True, wgmma=True, chunk=64, stages=3, producer=True)
    _run_checked(problem, arrays, tile, spec_of(problem, "float32", "fp16").pshape, "fp16", ref)


def test_wgmma_persistent_grid():
    """Persistent warp-specialized tiles (``Tile.persist``): a grid of fewer blocks than output
    tiles, each looping over tiles ``blockIdx.x + i * grid`` (a number of tiles that is no
    multiple of the grid: some blocks take one more), the ring's phases carried across tiles,
    the outputs stored four at a time (along a GEMM's columns, a convolution's pixels) or one
    at a time (42 columns).  Ragged GEMMs (tiles past the edge, K not a multiple of the k tile),
    a padded image through the producer's registers and a 1x1 image by cp.async, the weights by
    bulk copies; FP16 / BF16 on half arrays, TF32 on float32 arrays; a grid larger than the
    tiles (one each); twice each, against float64 on the rounded operands."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    cases = [
        (W.gemm(333, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 4),
        (W.gemm(1000, 520, 200), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 7),
        (W.gemm(300, 260, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}, 5),
        (W.gemm(300, 42, 300), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}, 2),
        (W.conv2d(2, 24, 13, 16, 72, 3, padding=1),
         {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}, 3),
        (W.conv2d(2, 32, 8, 16, 64, 1), {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)},
         3),
    ]
    seen = set()
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases], seed=43):
        grid = next(g for p, _, g in cases if p is problem)
        for chunk, stages, persist in ((64, 4, grid), (32, 3, grid), (64, 3, 1000)):
            tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=True, chunk=chunk, half=True,
                        stages=stages, producer=True, persist=persist)
            if any(ldsm.tma_ops(spec, check_tile(spec, tile))):
                tile["tma"] = True
            n, launched = ldsm.grid_blocks(spec, check_tile(spec, tile))
            seen.add((n % launched != 0, launched == n))
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                _run_checked(problem, half, tile, spec.pshape, prec, ref)
    assert seen >= {(True, False), (False, True)}
    rng = np.random.default_rng(47)
    for problem, shape, grid in cases[:3] + cases[4:]:
        arrays = problem.random_inputs(rng, np.float32)
        spec = spec_of(problem, "float32", "tf32")
        tile = check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True, chunk=32,
                                     stages=3, producer=True, persist=grid))
        if any(ldsm.tma_ops(spec, tile)):
            tile = dataclasses.replace(tile, tma=True)
        ref = problem.run(*_tc_operands(problem, spec, tile, arrays, "tf32"))
        for _ in range(2):
            _run_checked(problem, arrays, tile, spec.pshape, "tf32", ref, tol=5e-6)


def test_wgmma_staged_epilogue():
    """Persistent producer tiles with a staged epilogue (``Tile.epi``): each consumer warpgroup
    writes its sums 64 x 32 at a time into 2 or 4 staging buffers and the bulk copy engine
    stores them (clipped at the output's edges) while the next output tile's products run.
    Ragged GEMMs and an FC layer (tiles past the edge, K not a multiple of the k tile), tile
    counts that are no multiple of the grid, a grid larger than the tiles, 2 to 8 chunks per
    warpgroup (and as many buffers: the whole tile staged), 3 and 4 buffers, MN-major and K-major
    B; FP16 / BF16 on half arrays, TF32 on
    float32 arrays; twice each, against float64 on the rounded operands."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    cases = [
        (W.gemm(333, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 4),
        (W.gemm(1000, 520, 200), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 7),
        (W.gemm(300, 260, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}, 5),
        (W.gemm(300, 48, 312), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}, 2),
        (W.fc(520, 312, 200), {"regs": (128, 128), "warps": (8, 2), "frags": (1, 8)}, 3),
    ]
    seen = set()
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases], seed=53):
        grid = next(g for p, _, g in cases if p is problem)
        for chunk, stages, persist, epi in ((64, 4, grid, 2), (32, 3, grid, 4), (64, 3, 1000, 2),
                                            (32, 4, grid, 0)):
            fn = shape["frags"][1]
            if not epi:   # the whole output tile staged (tiling.EPI_WHOLE)
                epi = 8 * fn // 32
            if (8 * fn // 32) % epi:
                epi = 2
            tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=problem.name == "gemm",
                        chunk=chunk, half=True, stages=stages, producer=True, tma=True,
                        persist=persist, epi=epi)
            t = check_tile(spec, tile)
            assert ldsm.epi_plan(spec, t) is not None, t.label()
            n, launched = ldsm.grid_blocks(spec, t)
            seen.add((n % launched != 0, launched == n))
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                _run_checked(problem, half, tile, spec.pshape, prec, ref)
    assert seen >= {(True, False), (False, True)}
    rng = np.random.default_rng(59)
    for problem, shape, grid in cases:
        arrays = problem.random_inputs(rng, np.float32)
        spec = spec_of(problem, "float32", "tf32")
        tile = check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True, chunk=32,
                                     stages=3, producer=True, tma=True, persist=grid, epi=2))
        assert ldsm.epi_plan(spec, tile) is not None
        ref = problem.run(*_tc_operands(problem, spec, tile, arrays, "tf32"))
        for _ in range(2):
            _run_checked(problem, arrays, tile, spec.pshape, "tf32", ref, tol=5e-6)


def test_wgmma_hold():
    """Staged-epilogue tiles holding some chunks of sums in registers (``Tile.hold``): stored
    from there, 8 bytes at a time, during the next output tile's k loop (the block's last tile's
    after the loop), the producer one warp.  Ragged GEMMs and an FC layer (tiles past the
    edges: guarded stores; K not a multiple of the k tile; fewer k tiles than held pairs),
    tile counts that are no multiple of the grid and a grid larger than the tiles, 1 to 4 of 4
    and 8 chunks held, 2 and 4 staging buffers, with a skew; FP16 / BF16 on half arrays, TF32
    on float32 arrays (the FC layer: both operands by bulk copies); twice each, against float64
    on the rounded operands and bit for bit against the same tile holding nothing."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    cases = [
        (W.gemm(333, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 4),
        (W.gemm(1000, 520, 200), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 7),
        (W.gemm(300, 264, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}, 5),
        (W.fc(520, 312, 200), {"regs": (64, 256), "warps": (4, 2), "frags": (1, 16)}, 3),
    ]
    seen = set()
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases], seed=71):
        grid = next(g for p, _, g in cases if p is problem)
        for chunk, stages, persist, epi, hold, skew in ((64, 4, grid, 2, 2, 0),
                                                        (32, 3, grid, 2, 3, 0),
                                                        (64, 4, 1000, 2, 1, 0),
                                                        (64, 3, grid, 4, 2, 2)):
            tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=problem.name == "gemm",
                        chunk=chunk, half=True, stages=stages, producer=True, tma=True,
                        persist=persist, epi=epi)
            plain = _run_checked(problem, half, tile, spec.pshape, prec, ref)
            form = dict(tile, hold=hold, skew=skew)
            t = check_tile(spec, form)
            assert t.hold == hold and t.nthreads == 384
            n, launched = ldsm.grid_blocks(spec, t)
            seen.add((n % launched != 0, launched == n))
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                got = _run_checked(problem, half, form, spec.pshape, prec, ref)
                assert np.array_equal(got, plain), t.label()
    assert seen >= {(True, False), (False, True)}
    rng = np.random.default_rng(73)
    problem = W.fc(520, 312, 200)
    arrays = problem.random_inputs(rng, np.float32)
    spec = spec_of(problem, "float32", "tf32")
    tile = dict(regs=(64, 256), warps=(4, 2), frags=(1, 16), mma="tf32", ldsm=True, wgmma=True,
                chunk=32, stages=3, producer=True, tma=True, persist=3, epi=2)
    t0 = check_tile(spec, tile)
    ref = problem.run(*_tc_operands(problem, spec, t0, arrays, "tf32"))
    plain = _run_checked(problem, arrays, tile, spec.pshape, "tf32", ref, tol=5e-6)
    for hold in (1, 3):
        for _ in range(2):
            got = _run_checked(problem, arrays, dict(tile, hold=hold), spec.pshape, "tf32", ref,
                               tol=5e-6)
            assert np.array_equal(got, plain)


def test_wgmma_skew():
    """Skewed persistent producer tiles (``Tile.skew``): the second consumer warpgroup starts
    each output tile's k loop only once the first has issued its first ``skew`` k tiles (a
    named barrier), the two sharing the ring.  Ragged GEMMs and an FC layer (K not a multiple
    of the k tile, 4 to 32 k tiles per output tile), tile counts that are no multiple of the
    grid and a grid larger than the tiles, skews 1 to 3 of 3 and 4 buffers, direct and staged
    epilogues, warpgroups along the rows and along the columns; FP16 / BF16 on half arrays,
    TF32 (A from registers) on float32 arrays; twice each, against float64 on the rounded
    operands and bit for bit against the same tile without the skew (the products and their
    order are the same)."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    cases = [
        (W.gemm(333, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 4),
        (W.gemm(1000, 520, 200), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 7),
        (W.gemm(300, 260, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}, 5),
        (W.fc(520, 312, 200), {"regs": (64, 256), "warps": (4, 2), "frags": (1, 16)}, 3),
    ]
    seen = set()
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases], seed=61):
        grid = next(g for p, _, g in cases if p is problem)
        for chunk, stages, persist, epi, skew in ((64, 4, grid, 2, 1), (64, 4, grid, 0, 2),
                                                  (32, 3, grid, 4, 2), (64, 4, 1000, 2, 3),
                                                  (32, 4, grid, 2, 3)):
            tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=problem.name == "gemm",
                        chunk=chunk, half=True, stages=stages, producer=True, tma=True,
                        persist=persist, epi=epi)
            if epi and ldsm.epi_plan(spec, check_tile(spec, tile)) is None:
                tile["epi"] = 0
            plain = _run_checked(problem, half, tile, spec.pshape, prec, ref)
            t = check_tile(spec, dict(tile, skew=skew))
            assert t.skew == skew and t.label().endswith(f"_sk{skew}")
            n, launched = ldsm.grid_blocks(spec, t)
            seen.add((n % launched != 0, launched == n, bool(t.epi)))
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                got = _run_checked(problem, half, dict(tile, skew=skew), spec.pshape, prec, ref)
                assert np.array_equal(got, plain), t.label()
    assert seen >= {(True, False, True), (False, True, True), (True, False, False)}
    rng = np.random.default_rng(67)
    problem = W.gemm(300, 260, 520)
    arrays = problem.random_inputs(rng, np.float32)
    spec = spec_of(problem, "float32", "tf32")
    base = check_tile(spec, dict(regs=(128, 256), warps=(8, 1), frags=(1, 32), mma="tf32",
                                 ldsm=True, wgmma=True, chunk=32, stages=4, producer=True,
                                 tma=True, persist=3))
    t0 = ldsm.areg_variant(spec, base)
    assert t0 is not None and t0.areg
    ref = problem.run(*_tc_operands(problem, spec, t0, arrays, "tf32"))
    plain = _run_checked(problem, arrays, t0, spec.pshape, "tf32", ref, tol=5e-6)
    for skew in (1, 3):
        t = dataclasses.replace(t0, skew=skew)
        assert not ldsm.wgmma_fits(spec, t)
        for _ in range(2):
            got = _run_checked(problem, arrays, t, spec.pshape, "tf32", ref, tol=5e-6)
            assert np.array_equal(got, plain)


def test_wgmma_persistent_clusters_and_l2_hints():
    """Persistent producer tiles in clusters of two (``Tile.cluster`` 2 with ``Tile.persist``):
    the cluster walks pairs of output tiles adjacent along the rows, each block's producer
    multicasts half of the shared B tile into both blocks, a buffer is refilled once both
    blocks' consumers have released it.  Ragged GEMMs and an FC layer (K-major B), an odd
    number of row blocks (the last pair's second tile past the output: copied, multiplied, not
    stored), pair counts that are no multiple of the clusters, a grid larger than the pairs;
    direct and staged epilogues; with the staged epilogue's L2 hints (``Tile.evict`` 1: bulk
    stores evict-first, 2: also the operand copies evict-last), in clusters and without; FP16 /
    BF16 on half arrays, the hints for TF32 too; twice each, against float64."""
    from merit.gpu import _compile_all, ldsm
    from merit.gpu.tiling import check_tile

    b128 = {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}
    b256 = {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}
    cases = [
        (W.gemm(333, 200, 1000), b128, 4),     # 3 x 2 blocks: odd rows
        (W.gemm(1000, 520, 200), b128, 6),     # 8 x 5 blocks, 20 pairs over 3 clusters
        (W.gemm(300, 264, 520), b256, 1000),   # 3 x 2 blocks, a grid larger than the pairs
        (W.fc(520, 312, 200), {"regs": (128, 128), "warps": (8, 2), "frags": (1, 8)}, 2),
    ]
    forms = ((64, 4, 2, 0, 0), (64, 3, 2, 2, 1), (32, 3, 2, 2, 2), (64, 3, 1, 2, 2))
    runs, seen = [], set()
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases], seed=61):
        grid = next(g for p, _, g in cases if p is problem)
        tiles = []
        for chunk, stages, cl, epi, ev in forms:
            t = check_tile(spec, dict(shape, mma=prec, ldsm=True, wgmma=True,
                                      mn=problem.name == "gemm", chunk=chunk, half=True,
                                      stages=stages, producer=True, tma=True, persist=grid,
                                      cluster=cl, epi=epi, evict=ev))
            if cl > 1:
                sched = ldsm.pair_schedule(spec, t)
                seen.add((None in sum(sched, []), len(sched) < ldsm.grid_blocks(spec, t)[0]))
            tiles.append(t)
            runs.append((problem, half, t, spec.pshape, prec, ref, 2e-6))
        _compile_all(spec, tiles)   # (concurrently; the runs below find them built)
    assert seen >= {(True, True), (False, True), (True, False)}, seen
    rng = np.random.default_rng(67)
    for problem, shape, grid in cases[:2]:
        arrays = problem.random_inputs(rng, np.float32)
        spec = spec_of(problem, "float32", "tf32")
        tiles = [check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True, chunk=32,
                                       stages=3, producer=True, tma=True, persist=grid, epi=2,
                                       evict=ev)) for ev in (1, 2)]
        _compile_all(spec, tiles)
        for t in tiles:
            ref = problem.run(*_tc_operands(problem, spec, t, arrays, "tf32"))
            runs.append((problem, arrays, t, spec.pshape, "tf32", ref, 5e-6))
    for problem, arrays, t, shape, prec, ref, tol in runs:
        for _ in range(2):   # twice: fresh poison, the same answer (no race)
            _run_checked(problem, arrays, t, shape, prec, ref, tol=tol)


def _persistent_forms(forms, seed):
    """Ragged GEMMs (tiles past the edges, K no multiple of the k tile) on grids below their
    output tiles: each of ``forms`` (``Tile`` fields over a 128 x 128 persistent producer tile)
    in FP16 / BF16 on half arrays, twice, against float64."""
    from merit.gpu import _compile_all
    from merit.gpu.tiling import check_tile

    b128 = {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}
    cases = [(W.gemm(333, 200, 1000), b128, 4), (W.gemm(1000, 520, 200), b128, 8)]
    runs = []
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases], seed=seed):
        grid = next(g for p, _, g in cases if p is problem)
        tiles = [check_tile(spec, dict(shape, mma=prec, ldsm=True, wgmma=True, half=True,
                                       mn=problem.name == "gemm", producer=True, tma=True,
                                       persist=grid, **f)) for f in forms]
        _compile_all(spec, tiles)
        runs += [(problem, half, t, spec.pshape, prec, ref) for t in tiles]
    for problem, arrays, t, shape, prec, ref in runs:
        for _ in range(2):   # twice: fresh poison, the same answer (no race)
            _run_checked(problem, arrays, t, shape, prec, ref)
    return [r[2] for r in runs]


def test_wgmma_persistent_clustered_placement():
    """Persistent producer tiles launched in clusters of two with nothing else changed
    (``Tile.place`` 2): direct and staged epilogues (with the evict-first hint)."""
    tiles = _persistent_forms([dict(chunk=64, stages=4, place=2),
                               dict(chunk=64, stages=3, epi=2, evict=1, place=2),
                               dict(chunk=32, stages=3, epi=4, place=2)], seed=71)
    assert all(t.place == 2 for t in tiles)


def test_wgmma_elected_producer():
    """Producers whose first warp alone polls the "empty" barriers (``Tile.elect``): one block
    per cluster and placed in clusters of two, direct and staged stores, and in the persistent
    cluster form (the other warps wait at the last cluster barrier)."""
    tiles = _persistent_forms([dict(chunk=64, stages=4, elect=True),
                               dict(chunk=64, stages=3, epi=2, evict=1, place=2, elect=True),
                               dict(chunk=64, stages=4, epi=2, cluster=2, elect=True)], seed=73)
    assert all(t.elect for t in tiles)


def test_wgmma_pingpong():
    """Ping-pong tiles (``Tile.pingpong``): two consumer warpgroups per block taking its output
    tiles in turn (one stores while the other's products run), the producer filling the ring for
    both in order, the groups' k loops ordered by two named barriers.  Ragged GEMMs (tiles past
    the edge, K not a multiple of the k tile, 2 to 32 k tiles per output tile), blocks with an
    odd and an even number of output tiles, a one-block grid (every tile in turn), a grid larger
    than the tiles (group 1 idle), a convolution with a padded image through the producer's
    registers; FP16 / BF16 on half arrays and TF32 on float32 arrays; twice each, against
    float64 on the rounded operands."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    cases = [
        (W.gemm(333, 200, 1000), {"regs": (64, 128), "warps": (4, 1), "frags": (1, 16)}, 4),
        (W.gemm(1000, 520, 200), {"regs": (64, 128), "warps": (4, 1), "frags": (1, 16)}, 7),
        (W.gemm(300, 260, 520), {"regs": (64, 256), "warps": (4, 1), "frags": (1, 32)}, 5),
        (W.gemm(520, 300, 96), {"regs": (64, 256), "warps": (4, 1), "frags": (1, 32)}, 1),
        (W.conv2d(2, 24, 13, 16, 72, 3, padding=1),
         {"regs": (1, 64, 4, 16), "warps": (4, 1), "frags": (1, 8)}, 3),
    ]
    seen = set()
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases], seed=53):
        grid = next(g for p, _, g in cases if p is problem)
        for chunk, stages, persist in ((64, 4, grid), (32, 3, grid), (64, 3, 1000)):
            tile = dict(shape, mma=prec, ldsm=True, wgmma=True, mn=True, chunk=chunk, half=True,
                        stages=stages, producer=True, persist=persist, pingpong=True)
            if any(ldsm.tma_ops(spec, check_tile(spec, tile))):
                tile["tma"] = True
            n, launched = ldsm.grid_blocks(spec, check_tile(spec, tile))
            seen.add(tuple(sorted({len(b) % 2 for b in ldsm.schedule(n, launched)})))
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                _run_checked(problem, half, tile, spec.pshape, prec, ref)
    assert seen >= {(0, 1), (1,)}
    rng = np.random.default_rng(59)
    for problem, shape, grid in cases[:3]:
        arrays = problem.random_inputs(rng, np.float32)
        spec = spec_of(problem, "float32", "tf32")
        tile = check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True, chunk=32,
                                     stages=3, producer=True, persist=grid, pingpong=True))
        if any(ldsm.tma_ops(spec, tile)):
            tile = dataclasses.replace(tile, tma=True)
        ref = problem.run(*_tc_operands(problem, spec, tile, arrays, "tf32"))
        for _ in range(2):
            _run_checked(problem, arrays, tile, spec.pshape, "tf32", ref, tol=5e-6)


def test_wgmma_tf32_areg():
    """TF32 tiles taking wgmma's A from registers (``Tile.areg``): GEMM's B, columns contiguous,
    in A's place (the roles exchanged), copied MN-major by the bulk copy engine and loaded by
    the consumers into the fragments (rounded to nearest), GEMM's A K-major by bulk copies
    (truncated by wgmma), or word by word where its rows are no 16-byte multiple.  Ragged GEMMs
    (rows, columns and k that no tile divides: the copy engine's zero fill, the epilogue's
    guards), 128 x 128, 128 x 256 and 64 x 64 boxes, BK 32 and 16, 3 and 4 buffers, one tile
    per block and persistent grids whose tile count is no multiple of the grid; twice each,
    against float64 on the operands so rounded."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    cases = [
        (W.gemm(333, 200, 1000), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 3),
        (W.gemm(300, 260, 520), {"regs": (128, 256), "warps": (8, 1), "frags": (1, 32)}, 5),
        (W.gemm(70, 44, 300), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}, 2),
        (W.gemm(1000, 520, 200), {"regs": (128, 128), "warps": (8, 1), "frags": (1, 16)}, 7),
        # A's rows 148 bytes apart: copied word by word beside B's bulk copies
        (W.gemm(50, 40, 37), {"regs": (64, 64), "warps": (4, 1), "frags": (1, 8)}, 1),
    ]
    rng = np.random.default_rng(53)
    ran = 0
    for problem, shape, grid in cases:
        arrays = problem.random_inputs(rng, np.float32)
        spec = spec_of(problem, "float32", "tf32")
        for chunk, stages, persist in ((32, 4, 0), (16, 3, 0), (32, 3, grid), (16, 4, grid)):
            base = check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True, chunk=chunk,
                                         stages=stages, producer=True, persist=persist))
            tile = ldsm.areg_variant(spec, dataclasses.replace(base, tma=True))
            assert tile is not None and ldsm.tile_roles(spec, tile).a == 1
            ref = problem.run(*_tc_operands(problem, spec, tile, arrays, "tf32"))
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                _run_checked(problem, arrays, tile, spec.pshape, "tf32", ref, tol=5e-6)
            ran += 1
    assert ran == 20


def _check_channels_last(cases, form, *, seeds, half_forms, tf32_forms):
    """Run each ``(problem, shape, persistent grid)`` of ``cases`` on the channels-last tiles
    ``form`` (``{"cl": True}``, with ``"halo": True`` for rows of taps): FP16 / BF16 on half
    arrays at ``half_forms``, TF32 on float32 arrays at ``tf32_forms`` (``(chunk, stages)``: the
    first one tile per block, the second persistent); twice each, against float64 on the
    operands as the tile reads them (fp32 sums over K up to 81 x 64: a few 1e-6 of rounding)."""
    from merit.gpu import ldsm
    from merit.gpu.tiling import check_tile

    flag = "halo" if form.get("halo") else "cl"
    for problem, shape, prec, half, ref, spec in _half_cases([c[:2] for c in cases],
                                                              seed=seeds[0]):
        grid = next(g for p, _, g in cases if p is problem)
        for (chunk, stages), persist in zip(half_forms, (0, grid), strict=True):
            tile = check_tile(spec, dict(shape, mma=prec, ldsm=True, wgmma=True, chunk=chunk,
                                         half=True, stages=stages, producer=True, tma=True,
                                         persist=persist, **form))
            assert ldsm.tma_ops(spec, tile)[0][flag]
            for _ in range(2):   # twice: fresh poison, the same answer (no race)
                _run_checked(problem, half, tile, spec.pshape, prec, ref, tol=1e-5)
    rng = np.random.default_rng(seeds[1])
    for problem, shape, grid in cases:
        arrays = problem.random_inputs(rng, np.float32)
        spec = spec_of(problem, "float32", "tf32")
        for (chunk, stages), persist in zip(tf32_forms, (0, grid), strict=True):
            tile = check_tile(spec, dict(shape, mma="tf32", ldsm=True, wgmma=True, chunk=chunk,
                                         stages=stages, producer=True, tma=True,
                                         persist=persist, **form))
            ref = problem.run(*_tc_operands(problem, spec, tile, arrays, "tf32"))
            for _ in range(2):
                _run_checked(problem, arrays, tile, spec.pshape, "tf32", ref, tol=1e-5)


def test_wgmma_channels_last_image_boxes():
    """Channels-last producer tiles (``Tile.cl``): both loop operands copied channels-last in the
    launch (channels zero-padded to the k tile), the image's k tile one bulk copy of a 4-D box
    per tap and channel block whose zero fill is the padding, the weights one 2-D box.  Ragged
    pixels, channels and filters; stride 2 (the box's traversal stride), dilation 3, k 1 / 3 /
    9; one tile per block and persistent; FP16 / BF16 on half arrays, TF32 on float32 arrays
    (truncated by wgmma); twice each, against float64 on the operands as the tile reads them."""

    cases = [
        (W.conv2d(2, 24, 13, 16, 72, 3, padding=1),
         {"regs": (1, 64, 2, 64), "warps": (8, 1), "frags": (1, 8)}, 3),
        (W.conv2d(3, 19, 23, 29, 40, 3, stride=2, padding=1),
         {"regs": (1, 64, 4, 32), "warps": (8, 1), "frags": (1, 8)}, 5),
        (W.conv2d(2, 40, 17, 21, 64, 3, padding=3, dilation=3),
         {"regs": (1, 64, 8, 16), "warps": (8, 1), "frags": (1, 8)}, 4),
        (W.conv2d(2, 32, 30, 30, 32, 9, padding=4),
         {"regs": (2, 32, 2, 32), "warps": (8, 1), "frags": (1, 4)}, 7),
        (W.conv2d(2, 32, 40, 36, 32, 9, stride=2, padding=4),
         {"regs": (1, 32, 4, 32), "warps": (8, 1), "frags": (1, 4)}, 3),
        (W.conv2d(3, 16, 9, 11, 24, 1, stride=2),
         {"regs": (2, 32, 8, 8), "warps": (8, 1), "frags": (1, 4)}, 1),
    ]
    _check_channels_last(cases, {"cl": True}, seeds=(53, 59), half_forms=((64, 4), (32, 3)),
                         tf32_forms=((32, 4), (16, 3)))


def test_wgmma_halo_rows_of_taps():
    """Row-of-taps tiles (``Tile.halo``): per ring buffer one bulk copy of the block's pixels
    widened by the window's halo per tap phase and the weights of a row of taps; the consumers
    read each tap at a descriptor start moved by whole lines.  k 9 / 5 / 3, dilation 2 and 3,
    stride 2 (two tap phases), ragged pixels and channels, two channel blocks, 64- and 128-byte
    lines; one tile per block and persistent; FP16 / BF16 on half arrays, TF32 on float32
    arrays; twice each, against float64 on the operands as the tile reads them."""

    cases = [
        (W.conv2d(2, 24, 6, 100, 16, 9, padding=4),
         {"regs": (1, 16, 2, 64), "warps": (8, 1), "frags": (1, 2)}, 3),
        (W.conv2d(2, 40, 5, 70, 8, 5, padding=4, dilation=2),
         {"regs": (1, 8, 1, 64), "warps": (4, 1), "frags": (1, 1)}, 5),
        (W.conv2d(2, 32, 20, 140, 32, 9, stride=2, padding=4),
         {"regs": (1, 32, 1, 64), "warps": (4, 1), "frags": (1, 4)}, 7),
        (W.conv2d(2, 16, 9, 150, 16, 3, stride=2, padding=3, dilation=3),
         {"regs": (1, 16, 1, 64), "warps": (4, 1), "frags": (1, 2)}, 4),
    ]
    _check_channels_last(cases, {"cl": True, "halo": True}, seeds=(61, 67),
                         half_forms=((64, 3), (32, 4)), tf32_forms=((32, 3), (16, 4)))


def test_cl_relayout_copies():
    """The channels-last copies (``runtime.relayout``), element by element and in 16-byte
    pieces, 2- and 4-byte elements: ``(outer, C, inner)`` as ``(outer, inner, Cp)`` with the
    padding channels zero, against NumPy; the destination poisoned first."""
    from merit.gpu.runtime import relayout

    rng = np.random.default_rng(61)
    for dt, (outer, C, inner, Cp) in itertools.product(
            (np.uint16, np.uint32), ((2, 24, 208, 32), (3, 19, 667, 64), (72, 40, 9, 64),
                                     (4, 128, 3136, 128), (1, 5, 64, 16))):
        src = rng.integers(1, 60000, size=(outer, C, inner)).astype(dt)
        want = np.zeros((outer, inner, Cp), dtype=dt)
        want[:, :, :C] = src.transpose(0, 2, 1)
        dst = cp.full(outer * inner * Cp, 65535, dtype=dt)
        relayout(cp.asarray(src).reshape(-1), dst, outer, C, inner, Cp)
        np.testing.assert_array_equal(cp.asnumpy(dst).reshape(want.shape), want)


def test_pad_rows_copies():
    """The padded-row copies (``runtime.pad_rows``): ``(rows, C)`` as ``(rows, Cp)``, the
    padding columns zero, rows starting at every word offset, fewer pieces than a block and more
    than the grid's threads, against NumPy; the destination poisoned first."""
    from merit.gpu.runtime import PAD_BLOCKS, PAD_THREADS, pad_rows

    rng = np.random.default_rng(71)
    big = PAD_BLOCKS * PAD_THREADS // 300 + 5   # rows of 300 words: past one pass of the grid
    for dt, (rows, C, Cp) in itertools.product(
            (np.uint32, np.float32), ((1, 1, 4), (3, 5, 8), (211, 75, 76), (139, 211, 212),
                                      (big, 1197, 1200), (17, 40, 44))):
        src = rng.integers(1, 2**31, size=(rows, C)).astype(np.uint32).view(dt)
        want = np.zeros((rows, Cp), dtype=dt)
        want[:, :C] = src
        dst = cp.full((rows, Cp), 7, dtype=np.uint32).view(dt)
        pad_rows(cp.asarray(src), dst, rows, C, Cp)
        np.testing.assert_array_equal(cp.asnumpy(dst).view(np.uint32), want.view(np.uint32))


def test_pad_rows_all_two_to_a_launch():
    """The copies of one launch (``runtime.pad_rows_all``: two to a launch, each its own blocks,
    a grid-stride loop each): one, two and three copies of rows starting at every word offset,
    one past a pass of its blocks, against NumPy on poisoned destinations."""
    from merit.gpu.runtime import PAD_BLOCKS, PAD_THREADS, pad_rows_all

    rng = np.random.default_rng(72)
    big = PAD_BLOCKS * PAD_THREADS // 300 + 5
    dims = [(211, 75, 76), (3, 5, 8), (big, 1197, 1200), (139, 211, 212)]
    for count in (1, 2, 3):
        for first in range(len(dims) - count + 1):
            jobs, wants = [], []
            for rows, C, Cp in dims[first:first + count]:
                src = rng.integers(1, 2**31, size=(rows, C)).astype(np.uint32)
                want = np.zeros((rows, Cp), dtype=np.uint32)
                want[:, :C] = src
                jobs.append((cp.asarray(src), cp.full((rows, Cp), 7, dtype=np.uint32), rows,
                             C, Cp))
                wants.append(want)
            pad_rows_all(jobs)
            for (_, dst, *_), want in zip(jobs, wants, strict=True):
                np.testing.assert_array_equal(cp.asnumpy(dst), want)
