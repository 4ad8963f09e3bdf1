"""merit.gpu without a GPU: imports, kernel source, tile choice, bank conflicts, argument checks."""

import dataclasses
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from gpu_cases import CASES
from sm90 import assert_builds_without_spills

from merit import Index, Problem, Transform
from merit import workloads as W
from merit.gpu import Tile, dtype_of, kernel_source, plan
from merit.gpu.codegen import source
from merit.gpu.runtime import TileCache
from merit.gpu.spec import spec_of
from merit.gpu.tile import extents, geometry
from merit.gpu.tiling import (
    SMEM_CAP,
    Device,
    _smem_bytes,
    check_tile,
    conflicts,
    rank,
    shared_inputs,
    shared_loads,
    wavefronts,
)
from merit.strategies import Dot


def test_import_needs_no_cupy_or_amaranth():
    code = ("import sys, merit.gpu, bench.gpu; "
            "print(sorted(m for m in ('cupy', 'amaranth', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", sorted(CASES))
def test_source_is_one_named_kernel(name):
    problem = CASES[name]()
    p = plan(problem)
    src = p.source
    assert src.count('extern "C" __global__') == 1
    assert f" {p.name}(" in src
    assert p.name.startswith(f"merit_{problem.name}_{p.tile.label()}_")
    assert src == kernel_source(problem, tile=p.tile)       # deterministic
    body = problem.strategy.c_body
    assert body["loop"] in src and all(f in src for f in body["pre"] + body["post"])
    nb, nt, smem = p.launch
    assert nt == p.tile.nthreads <= 1024 and smem <= SMEM_CAP
    grid = np.prod([-(-n // b) for n, b in zip(problem.p_shape, p.tile.block, strict=True)])
    assert nb == grid


def test_kernel_names_differ_per_specialization():
    a = plan(W.conv2d(1, 3, 16, 16, 4, 3))
    b = plan(W.conv2d(1, 3, 16, 16, 4, 5))
    c = plan(W.conv2d(1, 3, 16, 16, 4, 3), dtype="int32")
    assert len({a.name, b.name, c.name}) == 3
    assert "typedef int T;" in c.source and "typedef float T;" in a.source


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", ["conv", "motion_best", "bilateral", "separable", "deconv"])
def test_source_compiles_for_hopper(name, tmp_path):
    p = plan(CASES[name]())
    cu = tmp_path / "k.cu"
    cu.write_text(p.source)
    res = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
                          "-o", str(tmp_path / "k.cubin"), str(cu)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 bytes spill stores" in res.stderr


def test_footprint_geometry_is_eq9():
    problem = W.conv2d(2, 8, 32, 32, 16, 3, stride=2, padding=1)
    spec = spec_of(problem, "float32")
    tile = Tile(threads=(1, 2, 4, 8), regs=(1, 4, 2, 2), chunk=4)
    for k, op in enumerate(spec.inputs):
        g = geometry(spec, tile, k)
        assert g.sides == op.transform.footprint(tile.block, (4, 3, 3))
        assert g.elements == np.prod(g.sides) and g.words >= g.elements
        if g.vector:   # rows copied in aligned 16-byte pieces: room for the misalignment
            room = 0 if g.aligned else 3
            assert g.row % 4 == 0 and g.sides[-1] + room <= g.row < g.sides[-1] + room + 4


def test_negative_strides_shift_the_box():
    problem = W.deconv2d(1, 2, 6, 6, 3, 3, stride=2)
    spec = spec_of(problem, "float32")
    tile = Tile(threads=(1, 3, 2, 2, 2, 2), regs=(1, 1, 2, 1, 1, 1), chunk=2)
    g = geometry(spec, tile, 0)
    low, side = problem.operands[0].transform.box((0,) * 6, (0, 0, 0), tile.block, (2, 2, 2))
    assert g.sides == side
    assert tuple(-s for s in g.shift) == tuple(lo for lo in low)


def test_shared_rule_pre_post_inputs_use_the_cache():
    bil = spec_of(CASES["bilateral"](), "float32")
    res = spec_of(CASES["residual"](), "float32")
    for spec in (bil, res):
        t = rank(spec, count=1)[0]
        for k, op in enumerate(spec.inputs):
            if op.stage != "loop":
                assert not t.shared[k]
    conv = spec_of(W.conv2d(16, 32, 128, 128, 32, 3, padding=1), "float32")
    assert all(rank(conv, count=1)[0].shared)


def test_shared_rule_no_reuse_reads_through_cache():
    # pixel shuffle has no accumulation: nothing is reused, nothing goes to shared memory
    spec = spec_of(CASES["pixel_shuffle"](), "float32")
    t = rank(spec, count=1)[0]
    assert t.shared == (False,) and "smem" not in source(spec, t)[1]
    # an input read once per output (a = 1 step, lanes never overlap) is not shared either
    tr = Transform((64, 64), p=[Index(0), Index(1)], a=[Index(1, 64)], name="x")
    w = Transform((1,), p=[None, None], a=[None], name="w")
    spec = spec_of(Problem("copyish", Dot(), (64, 64), (1,), [tr, w]), "float32")
    assert shared_inputs(spec, Tile((8, 8), (1, 1), 1)) == (False, True)


def test_table_v_conv_tiles_use_registers_and_few_bank_conflicts():
    for k, s in ((3, 1), (9, 1), (3, 2), (9, 2)):
        spec = spec_of(W.conv2d(16, 32, 128, 128, 32, k, stride=s, padding=k // 2), "float32")
        # the model's tiles and their copies (not the doubled register tiles of WIDE_TUNED,
        # timed extras outside the model's candidates)
        for t in [t for t in rank(spec, count=3) if t.nregs <= 64]:
            assert t.nregs >= 16 and all(t.shared)
            # every load the layout leads to (1, 2 or 4 words) costs at most 2 shared cycles
            for inp in (0, 1):
                for width, n in shared_loads(spec, t, inp).items():
                    assert n == 0 or wavefronts(spec, t, inp, width) <= 2
            assert _smem_bytes(spec, t) <= SMEM_CAP


def test_conflict_counts_fast_path_matches_the_plain_count():
    """``conflicts`` (memoized, counted on the distinct words with NumPy) and the padding
    search's degrees of all trial paddings at once (``tiling._pad_degrees``) give the plain
    count: warp 0's addresses grouped by bank (``merit.mapping.BankFunction``), distinct words
    per bank, and the greedy search the same padding as with one plain count per trial; on a
    spread of the candidates of four shapes (strided, dilated, ragged), both thread orders,
    16-byte rows or words, from zero and from the aligned start."""
    import itertools

    from merit.gpu import tiling as T
    from merit.mapping.bank import BankFunction

    def plain(spec, t, k):
        addrs = T._lane_addresses(spec, t, k)
        per = {}
        for a, b in zip(addrs, BankFunction(32).bank(addrs).tolist(), strict=True):
            per.setdefault(b, set()).add(a)
        return max(len(v) for v in per.values())

    def plain_search(spec, t, k, start=None):
        nax = len(spec.inputs[k].transform.source_shape)
        base = list(start) if start else [0] * nax
        cur = list(base)
        deg = plain(spec, T._with_pad(t, k, cur), k)
        step = 4 if start or geometry(spec, t, k).vector else 1
        for ax in range(nax - 2, -1, -1):
            if deg == 1:
                break
            for pad in range(step, 33, step):
                trial = list(cur)
                trial[ax] = base[ax] + pad
                d = plain(spec, T._with_pad(t, k, trial), k)
                if d < deg:
                    deg, cur = d, trial
                    if d == 1:
                        break
        return cur, deg

    problems = [W.conv2d(16, 32, 128, 128, 32, 3, padding=1),
                W.conv2d(16, 32, 128, 128, 32, 9, stride=2, padding=4),
                W.conv2d(4, 39, 75, 41, 53, 3, stride=2, dilation=2),
                W.gemm(827, 1615, 1509)]
    checked = searched = 0
    for prob in problems:
        spec = spec_of(prob, "float32")
        tiles = list(itertools.islice(T._candidates(spec), 0, 1800, 300))
        assert len(tiles) >= 4
        for t in tiles:
            t = T.complete(spec, t)
            active = [j for j in t.order if t.threads[j] > 1]
            rest = tuple(j for j in t.order if t.threads[j] == 1)
            for perm in list(itertools.permutations(active))[:2]:
                for k in [k for k in range(len(spec.inputs)) if t.shared[k]]:
                    for v in (True, False):
                        tv = T._with_vector(dataclasses.replace(t, order=perm + rest), k, v)
                        nax = len(spec.inputs[k].transform.source_shape)
                        trials = [[(3 * i + 5 * ax) % 9 for ax in range(nax)] for i in range(4)]
                        want = [plain(spec, T._with_pad(tv, k, p), k) for p in trials]
                        assert T._pad_degrees(spec, tv, k, trials) == want
                        assert [T.conflicts(spec, T._with_pad(tv, k, p), k)
                                for p in trials] == want
                        for start in (None, T._align_pads(spec, tv, k)):
                            assert T._pad_search(spec, tv, k, start) == \
                                plain_search(spec, tv, k, start)
                            searched += 1
                        checked += len(trials)
    assert checked > 200 and searched > 50


def test_candidates_in_one_pass_are_both_lists():
    """``rank`` takes the default and the extended candidate lists from one pass
    (``_candidates(..., tagged=True)``): its tiles are the extended list, its tagged ones the
    default list, both in order (3- and 6-way splits, smaller chunks for a split and the strided
    tiles' splits untagged)."""
    from merit.gpu import tiling as T

    seen = set()
    for prob in (W.gemm(827, 1615, 1509), W.gemm(1, 4065, 5543),
                 W.conv2d(2, 16, 32, 32, 24, 3, padding=1)):
        spec = spec_of(prob, "float32")
        tagged = list(T._candidates(spec, tagged=True))
        assert [t for t, _ in tagged] == list(T._candidates(spec, extended=True))
        assert [t for t, d in tagged if d] == list(T._candidates(spec))
        seen |= {(t.split, any(t.strided), d) for t, d in tagged}
    assert {(3, False, False), (6, False, False), (2, False, True), (1, True, True),
            (2, True, False)} <= seen


def test_padding_removes_a_conflict():
    # 32 threads walk axis 0 of a 32-wide box: without padding every lane hits bank 0
    tr = Transform((64, 32), p=[Index(0)], a=[Index(1)], name="x")
    w = Transform((32,), p=[None], a=[Index(0)], name="w")
    spec = spec_of(Problem("rows", Dot(), (64,), (32,), [tr, w]), "float32")
    bare = Tile(threads=(32,), regs=(1,), chunk=32, shared=(True, True), pads=((0, 0), (0,)),
                order=(0,), strided=(False,), vector=(False, False))
    assert conflicts(spec, bare, 0) == 32
    # an odd pitch: one word per lane and step, conflict-free
    odd = Tile(threads=(32,), regs=(1,), chunk=32, shared=(True, True), pads=((1, 0), (0,)),
               order=(0,), strided=(False,), vector=(False, False), unroll=1)
    assert conflicts(spec, odd, 0) == 1 and shared_loads(spec, odd, 0) == {1: 32, 2: 0, 4: 0}
    # 16-byte rows keep pitches a multiple of 4 words: 4 ways for single words, but each lane
    # reads its row 4 words at a time (the 32 steps are unrolled), 4 cycles per 4 steps
    rows16 = Tile(threads=(32,), regs=(1,), chunk=32, shared=(True, True), pads=((4, 0), (0,)),
                  order=(0,), strided=(False,), vector=(True, False), unroll=1)
    assert geometry(spec, rows16, 0).vector and conflicts(spec, rows16, 0) == 4
    assert shared_loads(spec, rows16, 0) == {1: 0, 2: 0, 4: 8}
    assert wavefronts(spec, rows16, 0, 4) == 4
    # the tuner takes the cheaper of the two (a quarter of the load instructions)
    tuned = check_tile(spec, {"threads": (32,), "chunk": 32, "shared": (True, True)})
    assert shared_loads(spec, tuned, 0)[4] == 8 and geometry(spec, tuned, 0).vector


def test_user_tile_is_completed_and_checked():
    spec = spec_of(W.conv2d(2, 8, 32, 32, 16, 3, padding=1), "float32")
    t = check_tile(spec, {"threads": (1, 4, 4, 8), "regs": (1, 4, 2, 1), "chunk": 4})
    assert t.block == (1, 16, 8, 8) and t.shared == (True, True) and t.unroll >= 2
    with pytest.raises(ValueError, match=r"tile.threads must have one entry per parallel index "
                                         r"\(4\), not 3"):
        check_tile(spec, {"threads": (4, 4, 8)})
    with pytest.raises(ValueError, match=r"tile.regs\[1\] must be a positive integer, not 0"):
        check_tile(spec, {"threads": (1, 4, 4, 8), "regs": (1, 0, 1, 1)})
    with pytest.raises(ValueError, match="tile uses 2048 threads per block; the limit is 1024"):
        check_tile(spec, {"threads": (2, 16, 8, 8)})
    with pytest.raises(TypeError, match=r"tile has unknown fields \['lanes'\]"):
        check_tile(spec, {"threads": (1, 4, 4, 8), "lanes": 4})
    with pytest.raises(TypeError, match="tile must give 'threads'"):
        check_tile(spec, {"regs": (1, 1, 1, 1)})
    big = spec_of(W.conv2d(1, 512, 128, 128, 16, 3, padding=1), "float32")
    with pytest.raises(ValueError, match=r"tile needs \d+ bytes of shared memory; the device "
                                         r"allows 232448 per block"):
        check_tile(big, {"threads": (1, 1, 16, 16), "regs": (1, 16, 4, 4), "chunk": 512,
                         "shared": (True, True)})
    res = spec_of(CASES["residual"](), "float32")
    with pytest.raises(ValueError, match=r"tile.shared\[2\]: input 2 is read in the post stage"):
        check_tile(res, {"threads": (1, 4, 4, 4), "shared": (True, True, True)})


def test_dtype_checks():
    a32, b32 = np.zeros(3, np.float32), np.zeros(3, np.float32)
    assert dtype_of([a32, b32], ["a", "b"]) == "float32"
    assert dtype_of([np.zeros(2, np.int32)], ["a"]) == "int32"
    with pytest.raises(TypeError, match="tensor 'b' has dtype float64; merit.gpu computes in "
                                        "float32 or int32"):
        dtype_of([a32, np.zeros(3)], ["a", "b"])
    with pytest.raises(TypeError, match=r"the arrays mix dtypes \['float32', 'int32'\]"):
        dtype_of([a32, np.zeros(3, np.int32)], ["a", "b"])
    with pytest.raises(TypeError, match="dtype must be 'float32' or 'int32', not 'float16'"):
        plan(CASES["gemm"](), dtype="float16")
    with pytest.raises(TypeError, match="problem must be a merit.Problem"):
        plan("gemm")


def test_int32_outputs_of_float_strategies_are_float():
    spec = spec_of(W.avg_pool2d(1, 1, 8, 8, 2), "int32")
    assert (spec.dtype, spec.out_dtype) == ("int32", "float32")
    assert "float* __restrict__ g_out0" in source(spec, rank(spec, count=1)[0])[1]


def test_levels_become_nested_functions():
    src = plan(CASES["motion_best"]()).source
    for fn in ("pre0(", "pre1(", "loop(", "post1(", "post0("):
        assert f"s[r].{fn}" in src
    assert src.index("s[r].pre1(") < src.index("s[r].loop(") < src.index("s[r].post1(")


def test_tile_cache_round_trip(tmp_path):
    spec = spec_of(CASES["gemm"](), "float32")
    t = rank(spec, count=1)[0]
    cache = TileCache(tmp_path / "tiles.json")
    assert cache.get("dev", spec) is None
    cache.put("dev", spec, t)
    assert TileCache(tmp_path / "tiles.json").get("dev", spec) == t
    assert TileCache(tmp_path / "tiles.json").get("other", spec) is None


def test_run_without_cupy_says_what_is_missing():
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
    except ImportError:
        from merit.gpu import run

        with pytest.raises(ImportError, match="merit.gpu.run needs CuPy and a CUDA GPU"):
            run(CASES["gemm"](), np.zeros((64, 40), np.float32), np.zeros((40, 48), np.float32))
    else:
        pytest.skip("CuPy is installed")


def test_bench_compositions_match_the_golden_model():
    """The bench's multi-problem forms: integral image by blocked scans, separable in 2 passes."""
    from bench.gpu import integral_passes, separable_passes

    rng = np.random.default_rng(11)
    h, w, b = 8, 12, 4
    image = rng.standard_normal((h, w))
    probs, (nbx, nby) = integral_passes(h, w, b)
    one = np.ones(1)
    view = image.reshape(h, nbx, b)
    r1 = probs[2].run(view, one, probs[1].run(probs[0].run(view)))
    rv = r1.reshape(nby, b, w)
    out = probs[5].run(rv, one, probs[4].run(probs[3].run(rv))).reshape(h, w)
    np.testing.assert_allclose(out, image.cumsum(0).cumsum(1), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="integral_passes needs sides divisible by 32"):
        integral_passes(40, 64)

    sep = W.separable_filter(20, 24, 5)
    x, hk, v = sep.random_inputs(rng, np.float64)
    rows, cols = separable_passes(20, 24, 5)
    np.testing.assert_allclose(cols.run(rows.run(x, hk), v), sep.run(x, hk, v), rtol=1e-12,
                               atol=1e-12)


def test_a0_in_an_inner_level_is_never_split():
    spec = spec_of(CASES["outer_level_empty"](), "float32")
    assert check_tile(spec, {"threads": (4, 8), "chunk": 2}).chunk == 5
    assert all(t.chunk == 5 for t in rank(spec, count=3))


# ---- tensor cores -------------------------------------------------------------------------------

def test_mma_roles_split_rows_and_columns():
    from merit.gpu.mma import roles

    def r(problem):
        return roles(spec_of(problem, "float32", "tf32"))

    assert r(W.gemm(64, 48, 40)) == mma_roles(0, 1, (0,), (1,))
    # conv: rows are (n, y, x) of the image, columns the output channels of the weights
    assert r(W.conv2d(2, 3, 17, 19, 16, 3, padding=1)) == mma_roles(0, 1, (0, 2, 3), (1,))
    # grouped: the group index moves both inputs and takes one value per block
    assert r(W.conv2d(2, 8, 16, 16, 32, 3, groups=2)) == mma_roles(0, 1, (0, 3, 4), (2,))
    # the bigger side gives the rows
    assert r(W.fc(8, 30, 20)) == mma_roles(1, 0, (1,), (0,))
    # depthwise (one column), correlation (no row index), max pooling (not a dot product)
    assert r(W.depthwise(2, 4, 12, 12, 3)) is None
    assert r(W.correlation(8, 12, 12, 2)) is None
    assert r(W.max_pool2d(2, 3, 13, 13, 3)) is None


def mma_roles(a, b, rows, cols):
    from merit.gpu.mma import Roles

    return Roles(a, b, rows, cols)


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16"])
def test_mma_kernel_source(precision):
    problem = W.conv2d(2, 8, 20, 20, 32, 3, padding=1)
    p = plan(problem, precision=precision)
    assert p.tile.mma == precision and p.name.startswith(f"merit_conv2d_{precision}_b")
    kind = {"tf32": "m16n8k8.row.col.f32.tf32.tf32.f32", "fp16": "m16n8k16.row.col.f32.f16.f16",
            "bf16": "m16n8k16.row.col.f32.bf16.bf16"}[precision]
    assert f"mma.sync.aligned.{kind}" in p.source
    assert p.launch[1] == 32 * math.prod(p.tile.warps)
    rows = math.prod(p.tile.regs[j] for j in (0, 2, 3))
    assert rows == 16 * p.tile.warps[0] * p.tile.frags[0]
    assert p.tile.regs[1] == 8 * p.tile.warps[1] * p.tile.frags[1]
    assert plan(problem).source.count("mma.sync") == 0     # fp32 stays on the SIMT cores


def test_mma_gemm_fragment_reads_are_conflict_free():
    spec = spec_of(W.gemm(1024, 1024, 1024), "float32", "tf32")
    for t in rank(spec, count=3):
        assert conflicts(spec, t, 0) == 1 and conflicts(spec, t, 1) == 1


def test_mma_argument_checks():
    with pytest.raises(ValueError, match="precision must be one of 'fp32', 'tf32', 'fp16', "
                                         "'bf16', not 'fp8'"):
        plan(W.gemm(64, 48, 40), precision="fp8")
    with pytest.raises(ValueError, match="precision 'fp16' needs float32 arrays, not int32"):
        plan(W.gemm(64, 48, 40), dtype="int32", precision="fp16")
    with pytest.raises(ValueError, match=r"problem 'conv2d': precision 'tf32' runs on the tensor "
                                         r"cores, which need a dot product"):
        plan(W.depthwise(2, 4, 12, 12, 3), precision="tf32")
    spec = spec_of(W.gemm(64, 48, 40), "float32", "tf32")
    with pytest.raises(ValueError, match=r"tile.mma is '' but the problem is specialized for "
                                         r"precision 'tf32'"):
        check_tile(spec, {"threads": (8, 8)})
    with pytest.raises(ValueError, match=r"tensor-core tile box \(32, 32\) must hold 16\*WM\*FM "
                                         r"= 16 rows"):
        check_tile(spec, {"mma": "tf32", "regs": (32, 32), "warps": (1, 1), "frags": (1, 1)})
    t = check_tile(spec, {"mma": "tf32", "regs": (32, 16), "warps": (2, 1), "frags": (1, 2),
                          "chunk": 16})
    assert t.nthreads == 64 and t.shared == (True, True) and t.double


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_mma_source_compiles_for_hopper(precision, tmp_path):
    p = plan(W.conv2d(4, 32, 32, 32, 64, 3, padding=1), precision=precision)
    cu = tmp_path / "k.cu"
    cu.write_text(p.source)
    res = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
                          "-o", str(tmp_path / "k.cubin"), str(cu)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 bytes spill stores" in res.stderr


def test_split_k_tiles():
    from merit.gpu.tiling import splittable

    gemm = spec_of(W.gemm(8, 40, 300), "float32")
    assert splittable(gemm) and not splittable(spec_of(W.conv_relu(1, 3, 8, 8, 4, 3), "float32"))
    assert not splittable(spec_of(W.max_pool2d(1, 3, 8, 8, 2), "float32"))
    t = check_tile(gemm, {"threads": (8, 8), "regs": (1, 4), "chunk": 16, "split": 4})
    name, src, nb, _, _ = source(gemm, t)
    assert nb == 2 * 4 and "atomicAdd(g_out0 + at, s[r].out0)" in src and name.endswith(
        f"_k4_{gemm.digest()}")
    with pytest.raises(ValueError, match=r"tile.split=6 leaves a block without accumulation "
                                         r"tiles \(19 tiles of chunk 16\)"):
        check_tile(gemm, {"threads": (8, 8), "chunk": 16, "split": 6})
    relu = spec_of(W.conv_relu(1, 3, 8, 8, 4, 3), "float32")
    with pytest.raises(ValueError, match="tile.split=2: split-K needs a SIMT tile of a sum"):
        check_tile(relu, {"threads": (1, 4, 8, 8), "chunk": 1, "split": 2})
    # a skinny GEMM's 85 output blocks leave SMs idle: the model splits K
    skinny = spec_of(W.gemm(3, 5409, 4071), "float32")
    assert rank(skinny, count=1)[0].split > 1


def test_gemm_reads_are_16_bytes_wide():
    # both boxes move in multiples of 4 words: no run-time misalignment, 16-byte reads of a
    # thread's 8 x 8 register tile (8 rows x 32 steps of A, 32 steps x 8 columns of B)
    spec = spec_of(W.gemm(256, 256, 256), "float32")
    t = check_tile(spec, {"threads": (16, 16), "regs": (8, 8), "chunk": 32, "strided": (4, 4)})
    assert all(geometry(spec, t, k).aligned for k in (0, 1))
    assert shared_loads(spec, t, 0) == {1: 0, 2: 0, 4: 64}
    assert shared_loads(spec, t, 1) == {1: 0, 2: 0, 4: 64}
    src = plan(W.gemm(256, 256, 256), tile=t).source
    assert "sh0" not in src and "sh1" not in src
    # runs of 4 copies, 64 apart: lanes read consecutive 16-byte pieces of B (2 cycles a warp)
    assert "_s44" in t.label() and wavefronts(spec, t, 1, 4) == 2
    assert "((((r / 8) % 8) / 4) * 64 + ((r / 8) % 8) % 4) * 36" in src


def test_a_ragged_chunk_runs_unrolled_then_rolled():
    p = plan(W.gemm(64, 64, 45), tile={"threads": (8, 8), "regs": (4, 4), "chunk": 8})
    assert p.tile.unroll == 1
    src = p.source
    assert "if (ab0 + 8 <= 45) {" in src and "l0 < min(8, 45 - ab0)" in src


def _fp32_staged_source(problem, precision):
    """Source of the best tile of the kernel that stages fp32 footprints (not ldmatrix)."""
    spec = spec_of(problem, "float32", precision)
    tile = next(t for t in rank(spec, count=8) if not t.ldsm)
    return kernel_source(problem, tile=tile, precision=precision)


def test_mma_k_neighbours_are_read_in_pairs():
    # GEMM: A's offsets are k itself: FP16 A pairs in 8-byte reads
    src = _fp32_staged_source(W.gemm(128, 128, 64), "fp16")
    assert "merit_pack2(*reinterpret_cast<const float2*>" in src
    # TF32 fragments pair k with k + 4: no 8-byte reads
    assert "merit_pack2(" not in _fp32_staged_source(W.gemm(128, 128, 64), "tf32").split(
        "extern \"C\"")[1]
    # a convolution's image offsets follow (c, ky, kx): pairs only for the weights
    src = _fp32_staged_source(W.conv2d(2, 16, 16, 16, 32, 3, padding=1), "fp16")
    assert "merit_pack2(*reinterpret_cast<const float2*>(&Bs" in src or "(&pb_" in src
    assert "(&As" not in src and "(&pa_" not in src


def _replace_mma(tile, precision):
    from dataclasses import replace

    return replace(tile, mma=precision)


def _staged(problem, precision, **fields):
    spec = spec_of(problem, "float32", precision)
    if fields:
        return spec, check_tile(spec, {"mma": precision, "ldsm": True, **fields})
    return spec, next(t for t in rank(spec, count=8) if t.ldsm and not t.wgmma)


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16"])
def test_staged_kernel_feeds_mma_with_ldmatrix(precision):
    spec, t = _staged(W.gemm(256, 256, 128), precision)
    name, src, _, nt, smem = source(spec, t)
    assert t.ldsm and name.startswith(f"merit_gemm_{precision}_b") and "_lm_" in name
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in src and "ktab" not in src
    # operands are stored once in their precision: 2 bytes per FP16 / BF16 element
    if precision == "tf32":
        assert "st.shared.v4.b32" in src and "0xffffe000u" in src
    else:
        assert "st.shared.v2.b32" in src and f"cvt.rn.{precision.replace('p', '')}x2" in src
    bm, bn = t.regs
    assert smem == 2 * (bm + bn) * t.chunk * {"tf32": 4, "fp16": 2, "bf16": 2}[precision]
    # GEMM's A is contiguous along k: 16-byte loads into lines of k (ldmatrix).  B is contiguous
    # along its lines (columns): FP16 / BF16 stage it as rows of k holding columns, 16-byte
    # loads, read with ldmatrix.trans; TF32 (no 32-bit transposing ldmatrix) element by element
    assert src.count("reinterpret_cast<const float4*>(g_in0") >= 1
    if precision == "tf32":
        assert "reinterpret_cast<const float4*>(g_in1" not in src and "merit_ldsm4t(b" not in src
        assert "(lk)" in src and "(kl)" not in src
    else:
        assert "reinterpret_cast<const float4*>(g_in1" in src
        assert "merit_ldsm4t(b0_0, b0_1, b1_0, b1_1" in src and "operand 1 slot 0 (kl)" in src


def test_staged_operand_plans():
    from merit.gpu.ldsm import operand_plan

    vgg = spec_of(W.conv2d(2, 16, 14, 14, 32, 3, padding=1), "float32", "fp16")
    img, wts = operand_plan(vgg, 0, (0, 2, 3)), operand_plan(vgg, 1, (1,))
    # the image's y and x axes can leave it (padding 1): checked; lanes walk x
    assert img["checked"] == (2, 3) and not img["vector"] and not img["klanes"]
    # the weights are contiguous over (c, ky, kx) = k: 16-byte pieces, lanes walk k
    assert wts["checked"] == () and wts["vector"] and wts["klanes"]
    assert wts["coef"] == [0, 16 * 9, 0, 0, 9, 3, 1]
    # FP16: the image (x innermost, unit stride, 14 % 4 != 0) stays in lines of k; at 16 x 16
    # rows of k hold lines of four x, loaded element by element (kx shifts them off 16 bytes)
    from merit.gpu.ldsm import layout

    t = check_tile(vgg, {"mma": "fp16", "ldsm": True, "regs": (1, 32, 2, 16), "warps": (2, 2),
                         "frags": (1, 2), "chunk": 32})
    assert layout(vgg, t, 0, (0, 2, 3)) == ("lk", False)
    v16 = spec_of(W.conv2d(2, 16, 16, 16, 32, 3, padding=1), "float32", "fp16")
    assert layout(v16, t, 0, (0, 2, 3)) == ("kl", False)
    assert layout(v16, t, 1, (1,)) == ("lk", False)     # weights: 16-byte pieces along k
    assert layout(spec_of(W.conv2d(2, 16, 16, 16, 32, 3, padding=1), "float32", "tf32"),
                  _replace_mma(t, "tf32"), 0, (0, 2, 3)) == ("lk", False)
    g = spec_of(W.gemm(64, 48, 40), "float32", "tf32")
    assert operand_plan(g, 0, (0,))["vector"] and not operand_plan(g, 1, (1,))["klanes"]
    # K = 37 is not a multiple of 4: no 16-byte pieces
    assert not operand_plan(spec_of(W.gemm(50, 40, 37), "float32", "tf32"), 0, (0,))["vector"]


@pytest.mark.parametrize("chunks", [4, 8])
def test_staged_swizzle_is_conflict_free(chunks):
    """Every 8-line ldmatrix phase (any piece) and every 16-lane store phase of 8-byte pieces
    at one logical piece reach distinct 16-byte bank groups (or two lanes per group, same
    words: the 2-way floor of 16 x 8 bytes in 128)."""
    from merit.gpu.ldsm import swizzle

    rb = 16 * chunks
    for first in range(0, 64, 8):
        for piece in range(chunks):
            groups = {((r * rb + ((piece ^ swizzle(r, chunks)) << 4)) // 16) % 8
                      for r in range(first, first + 8)}
            assert len(groups) == 8, (first, piece)
    for piece in range(chunks):
        groups = [((r * rb + ((piece ^ swizzle(r, chunks)) << 4)) // 16) % 8 for r in range(16)]
        assert max(groups.count(g) for g in set(groups)) <= 2


def test_staged_tile_checks():
    spec = spec_of(W.gemm(64, 48, 40), "float32", "fp16")
    with pytest.raises(ValueError, match=r"tile.chunk 8 \(k per staged tile\) must be a multiple "
                                         r"of 16 and span at least 32 bytes \(16 elements\) for "
                                         r"fp16"):
        check_tile(spec, {"mma": "fp16", "ldsm": True, "regs": (32, 16), "warps": (2, 1),
                          "frags": (1, 2), "chunk": 8})
    t = check_tile(spec, {"mma": "fp16", "ldsm": True, "regs": (32, 16), "warps": (2, 1),
                          "frags": (1, 2), "chunk": 32})
    assert t.ldsm and t.chunk == 32 and not t.double and _smem_bytes(spec, t) == 2 * 48 * 64
    assert conflicts(spec, t, 0) == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("precision", ["tf32", "fp16"])
def test_staged_source_compiles_for_hopper(precision, tmp_path):
    spec, t = _staged(W.conv2d(4, 32, 32, 32, 64, 3, padding=1), precision)
    cu = tmp_path / "k.cu"
    cu.write_text(source(spec, t)[1])
    res = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
                          "-o", str(tmp_path / "k.cubin"), str(cu)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 bytes spill stores" in res.stderr


def _vread_addresses(spec, tile):
    """Per input, the shared word offsets the written-out steps of a ``vread`` source read, in
    call order, and the same offsets by the rolled form's address expression."""
    import re

    from merit.gpu.codegen import _shared_read, _stage_inputs, vector_reads

    geo = {k: geometry(spec, tile, k) for k in range(len(spec.inputs)) if tile.shared[k]}
    src = source(spec, tile)[1]
    ks = _stage_inputs(spec, "loop")
    body = src[src.index("const T* __restrict__ vb"):]
    body = body[:body.index("} else {")] if "} else {" in body else body
    lines = re.findall(r"s\[(\d+)\]\.loop\(([^;]*)\);", body)
    got = {k: [] for k in ks}
    for _, args in lines:
        vals = args.split(", ")[:len(ks)]
        for k, v in zip(ks, vals, strict=True):
            m = re.fullmatch(rf"v{k}_(m?)(\d+)(?:\.([xyzw]))?", v)
            lo = int(m.group(2)) * (-1 if m.group(1) else 1)
            got[k].append(lo + ("xyzw".index(m.group(3)) if m.group(3) else 0))
    nbuf = tile.buffers
    steps, _ = vector_reads(spec, tile, geo, nbuf, extents(spec, tile)[spec.np])
    inner = list(range(spec.na - tile.unroll, spec.na))
    want = {k: [] for k in ks}
    for st in steps:
        for r in range(tile.nregs):
            for k in ks:
                expr = _shared_read(spec, tile, k, geo[k], 0, nbuf)
                expr = expr[expr.index("[") + 1:-1].replace("/", "//")
                env = {f"so{k}": sum(geo[k].shift[a] * geo[k].pitches[a]
                                     for a in range(len(geo[k].sides))), "buf": 0, "r": r,
                       f"sh{k}": 0}
                env.update({f"l{i}": v for i, v in zip(inner, st, strict=True)})
                env.update({f"l{i}": 0 for i in range(spec.na) if i not in inner})
                want[k].append(eval(expr, env))
    return got, want, src


@pytest.mark.parametrize("case", ["gemm", "conv", "conv_ragged"])
def test_vread_steps_read_the_rolled_addresses(case):
    from merit.gpu.tiling import vread_ok

    problem = {"gemm": lambda: W.gemm(256, 256, 256),
               "conv": lambda: W.conv2d(2, 8, 16, 16, 32, 3, padding=1),
               "conv_ragged": lambda: W.conv2d(2, 5, 17, 19, 12, 3, padding=1)}[case]()
    spec = spec_of(problem, "float32")
    tile = check_tile(spec, dataclasses.replace(rank(spec, count=1)[0], vread=True))
    assert tile.vread and vread_ok(spec, tile) and tile.label().endswith("_v")
    got, want, src = _vread_addresses(spec, tile)
    assert got == want
    assert "T_LOWEST" in src and "s[0].loop(" in src


def test_vread_gemm_loads_are_16_bytes_and_as_counted():
    from merit.gpu.codegen import vector_reads

    spec = spec_of(W.gemm(256, 256, 256), "float32")
    t = check_tile(spec, {"threads": (16, 16), "regs": (8, 8), "chunk": 32, "strided": (4, 4),
                          "vread": True})
    geo = {k: geometry(spec, t, k) for k in (0, 1)}
    _, plan_ = vector_reads(spec, t, geo, t.buffers, 32)
    for k in (0, 1):
        units = {u for u, _ in plan_[k].values()}
        assert {w for _, w in units} == {4}
        assert len(units) == shared_loads(spec, t, k)[4] == 64
    src = plan(W.gemm(256, 256, 256), tile=t).source
    assert src.count("*reinterpret_cast<const float4*>(vb0") == 64
    assert src.count("*reinterpret_cast<const float4*>(vb1") == 64
    assert src.count(".loop(") == 64 * 32   # every step written out, no rolled copy (32 | 256)


def test_lean_tiles_copy_unrolled_with_one_barrier():
    spec = spec_of(W.gemm(256, 256, 256), "float32")
    fields = {"threads": (16, 16), "regs": (8, 8), "chunk": 32, "strided": (4, 4)}
    plain = source(spec, check_tile(spec, fields))[1]
    t = check_tile(spec, {**fields, "lean": True})
    assert t.lean and t.double and t.label().endswith("_l")
    lean = source(spec, t)[1]
    loop = lambda src: src[src.index("for (int at = 0;"):]   # noqa: E731
    assert loop(plain).count("__syncthreads();") == 2
    assert loop(lean).count("__syncthreads();") == 1
    # wait for this tile, barrier, then the next tile's copy into the buffer read last time
    body = loop(lean)
    assert body.index("merit_cp_wait<0>();") < body.index("__syncthreads();") \
        < body.index("merit_cp_async16") < body.index("merit_cp_commit();")
    # 128 x 32 words = 1024 pieces of 16 bytes over 256 threads: 4 per thread, no guard
    assert "for (int i = 0; i < 4; ++i)" in lean and "e < 1024" not in lean
    assert "for (int e = tid; e < 1024; e += 256)" in plain
    # a ragged count keeps a guard
    spec2 = spec_of(W.gemm(64, 64, 45), "float32")
    src2 = source(spec2, check_tile(spec2, {"threads": (8, 8), "regs": (4, 4), "chunk": 12,
                                            "lean": True}))[1]
    assert re.search(r"if \(e < \d+\)", src2)


def test_autotuner_times_lean_and_vread_variants_of_sums_only():
    from merit.gpu.tiling import FILL_TUNED, GRID_PER, GRID_TUNED, HEDGE, VARIANTS_OF

    spec = spec_of(W.gemm(512, 512, 512), "float32")
    tiles = rank(spec, count=6)
    base = tiles[:6]
    assert not any(t.lean or t.vread for t in base)
    plain = [t for t in tiles if not (t.lean or t.vread)]
    variants = [t for t in tiles if (t.lean or t.vread) and t.nregs <= 64]   # not the wide ones
    assert plain[:6] == base and len(plain) <= 6 + HEDGE + FILL_TUNED + GRID_TUNED * GRID_PER
    assert {(t.lean, t.vread) for t in variants} == {(True, False), (True, True)}
    assert all(dataclasses.replace(t, lean=False, vread=False, forder=0, ptxas=0,
                                   vahead=False) in plain for t in variants)
    # the loads-ahead snake -O1 form, for the model's best VARIANTS_OF tiles only
    ahead = [t for t in variants if t.vahead]
    assert ahead and all(t.vread and t.forder == 1 and t.ptxas == 1 for t in ahead)
    assert {dataclasses.replace(t, lean=False, vread=False, forder=0, ptxas=0, vahead=False)
            for t in ahead} <= set(base[:VARIANTS_OF])
    assert rank(spec, count=1) == base[:1]
    # not a sum: no variants
    relu = spec_of(W.conv_relu(2, 3, 12, 12, 4, 3), "float32")
    assert not any(t.lean or t.vread for t in rank(relu, count=6))


def test_autotuner_also_times_the_sm_tail_models_best():
    from merit.gpu.tiling import HEDGE, estimate

    spec = spec_of(W.gemm(827, 1615, 1509), "float32")
    t = check_tile(spec, {"threads": (8, 16), "regs": (8, 8), "chunk": 32, "split": 3})
    wave, sm = estimate(spec, t, tail="both")
    assert (wave, sm) == (estimate(spec, t), estimate(spec, t, tail="sm"))
    # 507 blocks, 3 per SM: a partial fourth "wave" by the wave model, 4 blocks on the busiest
    # SM by the sm model (3.84 on average)
    assert sm < wave
    tiles = rank(spec, count=6)
    plain = [t for t in tiles if not t.lean]
    hedged = plain[6:6 + HEDGE]
    assert 1 <= len(hedged) <= HEDGE
    for h in hedged:   # ranked below the first six by the default model, with a lean copy
        assert dataclasses.replace(h, lean=True) in tiles
        assert estimate(spec, h, tail="sm") <= max(estimate(spec, b, tail="sm")
                                                   for b in plain[:6])
    # the bench rows' default-model lists are kept whole
    assert plain[:6] == [t for t in rank(spec, count=6) if not t.lean][:6]


def test_minblocks_bounds_the_registers():
    spec = spec_of(W.gemm(256, 256, 256), "float32")
    t = check_tile(spec, {"threads": (16, 16), "regs": (4, 4), "chunk": 16, "minblocks": 2})
    assert t.label().endswith("_m2")
    assert "__launch_bounds__(256, 2)" in source(spec, t)[1]
    assert "__launch_bounds__(256)" in source(spec, dataclasses.replace(t, minblocks=1))[1]
    # a caller's pipeline depth survives completion
    deep = check_tile(spec, {"threads": (16, 16), "regs": (4, 4), "chunk": 16, "double": True,
                             "stages": 3})
    assert deep.stages == 3 and "_p3" in deep.label()


def test_fma_order_is_a_permutation_and_a_snake():
    from merit.gpu.codegen import fma_order

    spec = spec_of(W.gemm(256, 256, 256), "float32")
    fields = {"threads": (16, 16), "regs": (8, 4), "chunk": 32, "strided": (4, 4),
              "vread": True}
    orders = {f: fma_order(check_tile(spec, {**fields, "forder": f})) for f in range(4)}
    assert orders[0] == list(range(32))
    assert all(sorted(o) == list(range(32)) for o in orders.values())
    coords = {f: [divmod(r, 4) for r in o] for f, o in orders.items()}
    assert coords[2] == [(i, j) for j in range(4) for i in range(8)]
    for f in (1, 3):   # neighbours differ in one index by one: the other operand is shared
        assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1
                   for a, b in zip(coords[f], coords[f][1:], strict=False))
    assert coords[1][:5] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 3)]
    # a 4-index register tile: the snake runs over the last index
    conv = spec_of(W.conv2d(2, 8, 16, 16, 32, 3, padding=1), "float32")
    t = check_tile(conv, {"threads": (2, 4, 1, 8), "regs": (1, 4, 2, 2), "chunk": 4,
                          "vread": True, "forder": 1})
    assert sorted(fma_order(t)) == list(range(16)) and fma_order(t)[:4] == [0, 1, 3, 2]


@pytest.mark.parametrize("forder", [1, 2, 3])
def test_fma_order_moves_only_the_products(forder):
    """The written-out steps of a ``forder`` tile are those of C order, permuted within each
    step; the loads and the rest of the kernel are the same lines."""
    spec = spec_of(W.gemm(256, 256, 256), "float32")
    fields = {"threads": (16, 16), "regs": (8, 8), "chunk": 32, "strided": (4, 4),
              "vread": True, "lean": True}
    base = check_tile(spec, fields)
    t = check_tile(spec, {**fields, "forder": forder, "ptxas": 1})
    assert (t.forder, t.ptxas) == (forder, 1)
    assert t.label() == base.label() + f"_o{forder}_x1"
    got, want, _ = _vread_addresses(spec, t)
    a, b = source(spec, base)[1], source(spec, t)[1]
    calls = re.compile(r"\s*s\[\d+\]\.loop\(.*\);")
    strip = lambda src: [ln for ln in src.splitlines() if not calls.fullmatch(ln)]   # noqa
    # the same lines besides (the loads come in the order of the words' first use)
    assert sorted(strip(a.replace(base.label(), t.label()))) == sorted(strip(b))
    ca = [ln for ln in a.splitlines() if calls.fullmatch(ln)]
    cb = [ln for ln in b.splitlines() if calls.fullmatch(ln)]
    assert ca != cb and sorted(ca) == sorted(cb)
    for g in range(0, len(ca), 4 * 64):   # permuted within each group of 4 steps
        assert sorted(ca[g:g + 256]) == sorted(cb[g:g + 256])
    # the addresses each call reads, by the rolled form's expression, in the new order
    from merit.gpu.codegen import fma_order

    order = {r: n for n, r in enumerate(fma_order(t))}
    for k in got:
        for step in range(len(got[k]) // 64):
            ws = want[k][64 * step:64 * step + 64]
            assert got[k][64 * step:64 * step + 64] == [ws[r] for r in sorted(order,
                                                                                key=order.get)]


def test_order_and_ptxas_fields_are_vread_and_simt_only():
    spec = spec_of(W.gemm(256, 256, 256), "float32")
    t = check_tile(spec, {"threads": (16, 16), "regs": (8, 8), "chunk": 32, "forder": 1,
                          "vahead": True, "ptxas": 1})
    assert (t.vread, t.forder, t.vahead, t.ptxas) == (False, 0, False, 1)
    assert t.label().endswith("_x1")
    # the new fields stay out of the source's tile comment: other tiles' sources are unchanged
    assert "forder" not in repr(t) and "ptxas" not in repr(t)
    # the autotuner times the -O1 copies of the model's best sums, snake-ordered with vread
    tiles = rank(spec, count=6)
    assert any(x.ptxas == 1 and x.vread and x.forder == 1 and x.lean for x in tiles)
    assert any(x.ptxas == 1 and not x.vread and x.lean for x in tiles)
    assert not any(x.ptxas for x in tiles[:6]) and not rank(spec, count=1)[0].ptxas
    relu = spec_of(W.conv_relu(2, 3, 12, 12, 4, 3), "float32")
    assert not any(x.ptxas or x.forder for x in rank(relu, count=6))


def test_wide_variants_double_a_two_index_register_tile():
    from merit.gpu.tiling import _smem_bytes

    spec = spec_of(W.gemm(4096, 4096, 4096), "float32")
    tiles = rank(spec, count=12)
    wide = [t for t in tiles if t.nregs == 128]
    assert wide and all(t.vread and t.lean and t.forder == 1 and t.ptxas == 1 for t in wide)
    assert not any(t.nregs > 64 for t in tiles[:12])
    # the 8 x 8 tile of 16 x 16 threads becomes 16 x 8: the rows' register tile doubled
    w = next(t for t in wide if t.threads == (16, 16))
    assert w.regs == (16, 8) and w.block == (256, 128)
    assert 100 * 1024 < _smem_bytes(spec, w) <= 227 * 1024
    # register tiles on more than two indices (convolutions) get none
    conv = spec_of(W.conv2d(2, 8, 16, 16, 32, 3, padding=1), "float32")
    assert all(t.nregs <= 64 or sum(r > 1 for r in t.regs) == 2 for t in rank(conv, count=12))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("regs", [(8, 8), (16, 8)])
def test_snake_order_source_compiles_at_ptxas_o1(regs, tmp_path):
    spec = spec_of(W.gemm(512, 512, 512), "float32")
    t = check_tile(spec, {"threads": (16, 16), "regs": regs, "chunk": 32, "strided": (4, 4),
                          "vread": True, "lean": True, "forder": 1, "ptxas": 1})
    cu = tmp_path / "k.cu"
    cu.write_text(source(spec, t)[1])
    res = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
                          "-Xptxas", "-O1", "-o", str(tmp_path / "k.cubin"), str(cu)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 bytes spill stores" in res.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("case", ["gemm_ragged", "conv_ragged"])
def test_lean_vread_source_compiles_for_hopper(case, tmp_path):
    problem = {"gemm_ragged": lambda: W.gemm(60, 60, 45),
               "conv_ragged": lambda: W.conv2d(2, 5, 17, 19, 12, 3, padding=1)}[case]()
    spec = spec_of(problem, "float32")
    t = check_tile(spec, dataclasses.replace(rank(spec, count=1)[0], lean=True, vread=True))
    assert t.lean and t.vread
    cu = tmp_path / "k.cu"
    cu.write_text(source(spec, t)[1])
    res = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
                          "-o", str(tmp_path / "k.cubin"), str(cu)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 bytes spill stores" in res.stderr


def test_strided_footprint_stages_only_the_words_read():
    # 1x1 conv, stride 2: the image's row and column axes are read every other word
    spec = spec_of(W.conv2d(2, 19, 23, 37, 13, 1, stride=2), "float32")
    t = check_tile(spec, {"threads": (1, 4, 2, 8), "regs": (1, 1, 2, 2), "chunk": 8,
                          "shared": (True, True)})
    g = geometry(spec, t, 0)
    assert g.step == (1, 1, 2, 2)
    # 4 output rows and 16 columns per block: 4 x 16 staged words (7 x 31 source words span them)
    assert g.sides == (1, 8, 4, 16) and g.elements == 512 and not g.vector
    assert g.coef(3, 2) == 1 and g.coef(2, 2) == g.pitches[2] and g.coef(1, 1) == g.pitches[1]
    code = source(spec, t)[1]
    assert "(4 * v + i) * 2;" in code            # copies gather every other source word
    # the weights (unit strides) keep their layout
    assert geometry(spec, t, 1).step == ()
    # dilation 2 with stride 2: every word of the box a tile reads is 2 apart
    dil = spec_of(W.conv2d(2, 9, 23, 29, 11, 3, stride=2, padding=2, dilation=2), "float32")
    td = rank(dil, count=1)[0]
    gd = geometry(dil, td, 0)
    assert gd.step[-1] == 2
    # a k3 stride-2 window reads every word between: nothing to drop
    k3 = spec_of(W.conv2d(2, 4, 19, 21, 8, 3, stride=2, padding=1), "float32")
    assert all(geometry(k3, tk, k).step == () for tk in rank(k3, count=3) for k in range(2))


def test_word_copies_by_rows_source_and_third_round():
    """``Tile.wrows``: word copies whose row length divides the thread count go one column a
    thread (a warp's 4-byte copies in one row); other copies, and every tile without the
    field, keep four adjacent words a thread.  The autotuner's third round offers the field
    for the fastest SIMT tile only, and only where it changes a copy."""
    import dataclasses

    from merit.gpu import codegen, tiling

    spec = spec_of(W.gemm(139, 75, 211), "float32")   # rows of 211 and 75 words: word copies
    t = check_tile(spec, {"threads": (16, 8), "regs": (7, 8), "chunk": 32, "double": True})
    tw = dataclasses.replace(t, wrows=True)
    assert tw.label() == t.label() + "_w" and check_tile(spec, tw) == tw
    plain, rows = source(spec, t)[1], source(spec, tw)[1]
    assert "const int cq" not in plain and "4 * v" in plain
    # A's box: 112 rows of 32 words, 128 threads: 4 rows a step; B's: 32 x 64, 2 rows a step
    assert rows.count("const int cq = tid % 32;") == 2
    assert "for (int q0 = tid / 32; q0 < 112; q0 += 4)" in rows   # rolled: not ``lean``
    lean = source(spec, dataclasses.replace(tw, lean=True))[1]
    assert "int q = tid / 32 + j * 4;" in lean and "for (int j = 0; j < 28; ++j)" in lean
    assert rows.count("const int cq = tid % 64;") == 2 and "4 * v" not in rows
    assert all(codegen.row_lanes(geometry(spec, t, k), t.nthreads) for k in range(2))
    # a row length that does not divide the threads keeps the four-word copy
    t3 = check_tile(spec, {"threads": (8, 8), "regs": (4, 4), "chunk": 30, "wrows": True})
    assert not codegen.row_lanes(geometry(spec, t3, 0), 64) and "4 * v" in source(spec, t3)[1]
    # the third round: the fastest SIMT tile's copy, once; none for 16-byte row copies
    other = check_tile(spec, {"threads": (8, 8), "regs": (4, 4), "chunk": 16})
    assert tiling.row_variants(spec, [(2.0, other), (1.0, t)]) == [tw]
    assert tiling.row_variants(spec, [(1.0, t), (1.5, tw)]) == []
    aligned = spec_of(W.gemm(128, 128, 128), "float32")
    ta = check_tile(aligned, {"threads": (16, 8), "regs": (4, 8), "chunk": 32})
    assert all(geometry(aligned, ta, k).vector for k in range(2))
    assert tiling.row_variants(aligned, [(1.0, ta)]) == []


@pytest.mark.parametrize("case,prec,digest", [
    ("conv", "fp32", "b7dba9dd0de44677"),
    ("conv_k3_s2", "fp32", "649082b2f769a1e9"),
    ("dw_s2", "fp32", "bbdc64167d5932ab"),
    ("gemm", "tf32", "bb13611b79aedaab"),
])
def test_unstrided_sources_unchanged(case, prec, digest, monkeypatch):
    """Kernels whose footprints have no gaps are byte-identical to the generator before compact
    strided footprints (digests of the 3 best ranked tiles' sources, wgmma tiles left out of
    the ranking, and of the extras timed with them as they were then: without the grid-filling
    ones of ``test_fill_grid.py``; update them only on a deliberate change of the generated
    code)."""
    import hashlib

    from merit.gpu import tiling

    monkeypatch.setattr(tiling, "FILL_TUNED", 0)
    monkeypatch.setattr(tiling, "SPLIT_CHUNKS", False)
    monkeypatch.setattr(tiling, "HEDGE_VARIANTS", ({"lean": True},))
    monkeypatch.setattr(tiling, "PTXAS_TUNED", False)
    monkeypatch.setattr(tiling, "WIDE_TUNED", False)
    monkeypatch.setattr(tiling, "GRID_TUNED", 0)

    problem = {"conv": lambda: W.conv2d(2, 3, 17, 19, 5, 3, padding=1),
               "conv_k3_s2": lambda: W.conv2d(2, 4, 19, 21, 8, 3, stride=2, padding=1),
               "dw_s2": lambda: W.depthwise(2, 8, 20, 20, 3, stride=2, padding=1),
               "gemm": lambda: W.gemm(64, 48, 40)}[case]()
    spec = spec_of(problem, "float32", prec)
    m = hashlib.sha1()
    for t in rank(spec, count=3, device=Device(wgmma=False)):
        m.update(repr(source(spec, t)).encode())
    assert m.hexdigest()[:16] == digest


def _wg(problem, precision, **fields):
    spec = spec_of(problem, "float32", precision)
    if fields:
        return spec, check_tile(spec, {"mma": precision, "ldsm": True, "wgmma": True, **fields})
    return spec, next(t for t in rank(spec, count=8) if t.wgmma)


@pytest.mark.parametrize("precision,instr", [
    ("tf32", "m64n256k8.f32.tf32.tf32"), ("fp16", "m64n256k16.f32.f16.f16"),
    ("bf16", "m64n256k16.f32.bf16.bf16")])
def test_wgmma_kernel_source(precision, instr):
    spec, t = _wg(W.gemm(512, 512, 256), precision, regs=(128, 256), warps=(8, 1),
                  frags=(1, 32), chunk=128 // {"tf32": 4}.get(precision, 2))
    name, src, nblocks, nt, smem = source(spec, t)
    assert name.startswith(f"merit_gemm_{precision}_b128x256_w8x1_f1x32_") and "_wg_" in name
    assert (nblocks, nt) == (8, 256)
    # two buffers of 128-byte lines (A 128, B 256), aligned up to the swizzle's period
    assert smem == 2 * (128 + 256) * 128 + 1024
    # one per k step of 32 bytes per line: 4 per 128-byte k tile
    assert src.count(f"wgmma.mma_async.sync.aligned.{instr}") == 4
    for s in ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
              "wgmma.wait_group.sync.aligned 0", "fence.proxy.async.shared::cta", "& ~1023u"):
        assert s in src
    # no ldmatrix, no mma.sync call; both operands staged as lines of k (K-major)
    assert "merit_ldsm" not in src and "merit_mma(c" not in src


def test_wgmma_tile_checks():
    spec = spec_of(W.gemm(256, 256, 256), "float32", "fp16")
    ok = dict(regs=(64, 64), warps=(4, 1), frags=(1, 8), chunk=64)
    assert check_tile(spec, {"mma": "fp16", "ldsm": True, "wgmma": True, **ok}).wgmma
    assert check_tile(spec, {"mma": "fp16", "ldsm": True, "wgmma": True,
                             **dict(ok, chunk=32)}).chunk == 32
    with pytest.raises(ValueError, match="must make 128- or 64-byte lines of k"):
        check_tile(spec, {"mma": "fp16", "ldsm": True, "wgmma": True, **dict(ok, chunk=16)})
    with pytest.raises(ValueError, match=r"FM = 1 and WM a multiple of 4"):
        check_tile(spec, {"mma": "fp16", "ldsm": True, "wgmma": True, "regs": (64, 64),
                          "warps": (2, 1), "frags": (2, 8), "chunk": 64})
    with pytest.raises(ValueError, match="needs tile.ldsm"):
        check_tile(spec, {"mma": "fp16", "wgmma": True, **ok})
    tf = spec_of(W.gemm(256, 256, 256), "float32", "tf32")
    with pytest.raises(ValueError, match=r"\(32 or 16 elements for tf32\)"):
        check_tile(tf, {"mma": "tf32", "ldsm": True, "wgmma": True, **ok})


def test_wgmma_tiles_ranked_only_where_the_device_has_them():
    spec = spec_of(W.conv2d(4, 64, 28, 28, 128, 3, padding=1), "float32", "fp16")
    hopper = rank(spec, count=12)
    assert sum(t.wgmma for t in hopper) == 4 and [t.wgmma for t in hopper[:5]] == [
        False, True, True, True, True]
    assert all(t.frags[0] == 1 and t.warps[0] % 4 == 0 and t.chunk in (32, 64)
               for t in hopper if t.wgmma)
    assert not any(t.wgmma for t in rank(spec, count=12, device=Device(wgmma=False)))
    t = next(t for t in hopper if t.wgmma)
    assert "_wg" in t.label() and "wgmma" not in repr(Tile((1,), (16,)))

def _assert_compiles_without_spills(spec, tile, tmp_path):
    """nvcc builds the tile's kernel for sm_90a and ptxas reports no spill stores."""
    assert_builds_without_spills(source(spec, tile)[1], tmp_path, tile.label())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("precision", ["tf32", "fp16"])
def test_wgmma_source_compiles_for_sm90a(precision, tmp_path):
    spec, t = _wg(W.conv2d(4, 32, 32, 32, 64, 3, padding=1), precision)
    _assert_compiles_without_spills(spec, t, tmp_path)


def test_wgmma_cluster_tiles_share_b():
    spec = spec_of(W.gemm(512, 512, 256), "float32", "fp16")
    fields = {"mma": "fp16", "ldsm": True, "wgmma": True, "regs": (128, 256), "warps": (8, 1),
              "frags": (1, 32), "chunk": 64}
    one = check_tile(spec, fields)
    two = check_tile(spec, dict(fields, cluster=2))
    assert two.label() == one.label() + "c2" and two.cluster == 2
    src1, src2 = source(spec, one)[1], source(spec, two)[1]
    for s in ("__cluster_dims__(2, 1, 1)", "mapa.shared::cluster.u32",
              "barrier.cluster.arrive.release.aligned", "st.shared::cluster.v2.b32",
              "fence.proxy.async.shared::cluster", "crank * 128", "merit_st4x("):
        assert s in src2 and s not in src1
    # B: 256 lines x 16 pieces over 256 threads: 16 slots alone, 8 slots in a cluster
    assert src1.count("// operand 1 slot") == 16 and src2.count("// operand 1 slot") == 8
    # the row blocks of a cluster's two blocks are neighbours: (pair * 2 + rank) * 128
    assert "const int pb0 = ((bq % 2) * 2 + (int)crank) * 128;" in src2
    with pytest.raises(ValueError, match="even number of blocks along a row index"):
        check_tile(spec_of(W.gemm(640, 512, 256), "float32", "fp16"), dict(fields, cluster=2))
    with pytest.raises(ValueError, match="clusters are for wgmma tiles only"):
        check_tile(spec, {"mma": "fp16", "ldsm": True, "regs": (32, 16), "warps": (2, 1),
                          "frags": (1, 2), "chunk": 32, "cluster": 2})


def test_wgmma_64_byte_lines():
    """BK 32 (FP16) / 16 (TF32): 64-byte lines, the 64-byte swizzle (mode 2, 8 lines = 512
    bytes apart), two k steps per tile."""
    for prec, bk, instr in (("fp16", 32, "m64n128k16"), ("tf32", 16, "m64n128k8")):
        spec = spec_of(W.gemm(256, 256, 256), "float32", prec)
        t = check_tile(spec, {"mma": prec, "ldsm": True, "wgmma": True, "regs": (128, 128),
                              "warps": (8, 1), "frags": (1, 16), "chunk": bk})
        src = source(spec, t)[1]
        assert "(32ull << 32)" in src and "(2ull << 62)" in src
        assert src.count(f"wgmma.mma_async.sync.aligned.{instr}") == 2
        assert "merit_desc(sbase + (wm >> 2) * 4096)" in src


# ---- operands already in half precision in memory (Tile.half) ----

def _half(problem, precision="fp16", **kw):
    from merit.gpu.spec import OPERAND_DTYPES

    spec = spec_of(problem, "float32", precision, operands=OPERAND_DTYPES[precision])
    return spec, check_tile(spec, {"mma": precision, "ldsm": True, "half": True, **kw})


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_half_tile_source_copies_with_cp_async(stages):
    """GEMM: A (k contiguous) and B (columns contiguous, ldmatrix.trans) both go by cp.async,
    16 bytes (eight elements) per slot, into ``stages`` buffers; no conversion of operands in
    the kernel."""
    from merit.gpu import ldsm

    spec, t = _half(W.gemm(512, 512, 256), regs=(128, 128), warps=(2, 4), frags=(4, 4),
                    chunk=32, stages=stages)
    assert ldsm.async_ops(spec, t) == (True, True)
    name, src, _, nt, smem = source(spec, t)
    assert name.startswith(f"merit_gemm_fp16_b128x128_w2x4_f4x4_k32_lm_h{stages}_")
    assert smem == stages * (128 + 128) * 64
    assert "const unsigned short* __restrict__ g_in0" in src
    assert "const unsigned short* __restrict__ g_in1" in src
    assert f"merit_await<{stages - 2}>();" in src
    assert src.count("merit_acommit();") == stages - 1 + 1    # prologue + one per k tile
    assert ldsm.widths(spec, t) == (8, 8)
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in src
    # no register slots: nothing stored by st4 / st4h in the kernel body; 128 lines x 32 k of
    # each operand in 16-byte pieces over 256 threads: 2 slots each
    body = src[src.index('extern "C"'):]
    assert "merit_st4(" not in body and "merit_st4h(" not in body and "merit_acp8(" not in body
    assert body.count("// operand 0 slot") == 2 and body.count("// operand 1 slot") == 2


def test_half_tile_image_operand_loads_two_byte_elements():
    """A convolution's image with padding (its lines cross the border) is loaded as 2-byte
    elements and stored unconverted; the weights go by cp.async; wgmma fences after both."""
    from merit.gpu import ldsm

    spec, t = _half(W.conv2d(4, 32, 32, 32, 64, 3, padding=1), "bf16", regs=(1, 64, 1, 64),
                    warps=(4, 1), frags=(1, 8), chunk=64, wgmma=True, stages=3)
    assert ldsm.async_ops(spec, t) == (False, True)
    src = source(spec, t)[1]
    body = src[src.index('extern "C"'):]
    assert "unsigned short f0_0[4];" in body and "merit_st4h(" in body
    # the weights: eight k of a line (288 k per output channel) in one 16-byte copy
    assert ldsm.widths(spec, t) == (4, 8)
    assert "merit_st4(" not in body and "merit_acp16(" in body and "merit_acp8(" not in body
    assert "(unsigned short)0" in body
    assert body.count("merit_proxy_fence();") == 2        # after the copies, after the stores
    # three buffers: copies one tile ahead, one group of wgmma in flight
    assert "merit_await<0>();" in body and "(kt % 3)" in body and "merit_wg_wait1();" in body


def test_half_tile_checks_and_messages():
    f32 = spec_of(W.gemm(256, 256, 256), "float32", "fp16")
    ok = dict(regs=(64, 64), warps=(2, 2), frags=(2, 4), chunk=32)
    with pytest.raises(ValueError, match=r"tile.half reads float16 operand arrays, but problem "
                                         r"'gemm' was given float32 arrays"):
        check_tile(f32, {"mma": "fp16", "ldsm": True, "half": True, **ok})
    spec, t = _half(W.gemm(256, 256, 256), **ok)
    assert t.half and t.stages == 2 and "_h2" in t.label() and "half" not in repr(t)
    with pytest.raises(ValueError, match=r"it needs tile.ldsm and tile.mma 'fp16' or 'bf16'"):
        check_tile(spec, {"mma": "fp16", "half": True, "regs": (64, 64), "warps": (2, 2),
                          "frags": (2, 4), "chunk": 32})
    with pytest.raises(ValueError, match="tile.stages must be 2, 3 or 4"):
        check_tile(spec, {"mma": "fp16", "ldsm": True, "half": True, "stages": 5, **ok})
    with pytest.raises(ValueError, match=r"built for cluster tiles only with bulk tensor copies"):
        check_tile(spec, {"mma": "fp16", "ldsm": True, "wgmma": True, "half": True,
                          "cluster": 2, "regs": (64, 64), "warps": (4, 1), "frags": (1, 8),
                          "chunk": 64})


def test_half_operand_dtypes_and_messages():
    from merit.gpu import operand_dtype

    names = ["A", "B"]
    assert operand_dtype(["float32", "float32"], names, "fp16") == "float32"
    assert operand_dtype(["float16", "float16"], names, "fp16") == "float16"
    assert operand_dtype(["bfloat16", "bfloat16"], names, "bf16") == "bfloat16"
    with pytest.raises(TypeError, match=r"tensor 'A' has dtype float16; precision 'tf32' takes "
                                        r"float32 arrays \(float16 arrays go with precision "
                                        r"'fp16'\)"):
        operand_dtype(["float16", "float16"], names, "tf32")
    with pytest.raises(TypeError, match=r"tensor 'B' has dtype float16; precision 'bf16' takes "
                                        r"float32 or bfloat16 arrays"):
        operand_dtype(["bfloat16", "float16"], names, "bf16")
    with pytest.raises(TypeError, match=r"the arrays mix dtypes \['float16', 'float32'\]; give "
                                        r"all float32 or all float16 for precision 'fp16'"):
        operand_dtype(["float16", "float32"], names, "fp16")
    with pytest.raises(ValueError, match=r"float16 operand arrays need precision 'fp16', not "
                                         r"'bf16' \(precision 'bf16' takes float32 or bfloat16"):
        spec_of(W.gemm(64, 64, 64), "float32", "bf16", operands="float16")
    # float32 specs keep their key (kernel names, cached tiles); half ones differ
    a = spec_of(W.gemm(64, 64, 64), "float32", "fp16")
    b = spec_of(W.gemm(64, 64, 64), "float32", "fp16", operands="float16")
    assert not a.key().endswith("float16") and a.digest() != b.digest()


def test_half_tiles_ranked_only_for_half_arrays():
    prob = W.conv2d(4, 64, 28, 28, 128, 3, padding=1)
    assert not any(t.half for t in rank(spec_of(prob, "float32", "fp16"), count=16))
    spec = spec_of(prob, "float32", "fp16", operands="float16")
    tiles = rank(spec, count=16)
    half = [t for t in tiles if t.half]
    # the 16 of before stay first, whole; the half copies of the best staged tiles of each kind
    assert tiles[:16] == rank(spec_of(prob, "float32", "fp16"), count=16)
    assert half and tiles[16:] == half
    assert {t.wgmma for t in half} == {False, True} and {t.stages for t in half} >= {2, 4}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("wgmma", [False, True])
def test_half_source_compiles_without_spills(wgmma, tmp_path):
    kw = (dict(regs=(1, 64, 1, 64), warps=(4, 1), frags=(1, 8), chunk=64, wgmma=True)
          if wgmma else dict(regs=(1, 64, 1, 64), warps=(2, 2), frags=(2, 4), chunk=32))
    spec, t = _half(W.conv2d(4, 32, 32, 32, 64, 3, padding=1), stages=4, **kw)
    _assert_compiles_without_spills(spec, t, tmp_path)


def test_half_wgmma_deep_pipeline_keeps_one_group_in_flight():
    """3 or 4 buffers: copies S - 2 tiles ahead, wgmma.wait_group 1 in the loop, 0 after it."""
    spec, t = _half(W.gemm(512, 512, 256), regs=(128, 128), warps=(8, 1), frags=(1, 16),
                    chunk=64, wgmma=True, stages=4)
    body = source(spec, t)[1]
    body = body[body.index('extern "C"'):]
    loop = body[body.index("for (int kt = 0;"):]
    assert "merit_await<1>();" in loop and "merit_wg_wait1();" in loop
    assert "const int nx = kt + 2;" in loop and body.count("merit_acommit();") == 3
    assert loop.index("merit_wg_wait1();") < loop.index("merit_wg_wait();")
    spec, t2 = _half(W.gemm(512, 512, 256), regs=(128, 128), warps=(8, 1), frags=(1, 16),
                     chunk=64, wgmma=True, stages=2)
    assert "merit_wg_wait1();" not in source(spec, t2)[1].split('extern "C"')[1]


# ---- wgmma tiles with MN-major operands (Tile.mn) ----

def test_wgmma_descriptor_bits_by_hand():
    """The descriptor's fields (PTX ISA, matrix descriptor format), worked by hand: start
    address >> 4 in bits 0-13, leading byte offset >> 4 in 16-29, stride byte offset >> 4 in
    32-45, the swizzle in 62-63 (128 bytes: 1, 64: 2, 32: 3)."""
    from merit.gpu.ldsm import descriptor

    # MN-major, BK 64: LBO 64 * 128 = 8192 bytes (512 = 0x200), SBO 1024 (64 = 0x40), 128-byte
    assert descriptor(0, 8192, 1024, 128) == 0x4000_0040_0200_0000
    # address 0x12340 (>> 4: 0x1234), LBO 16 (1), SBO 1024 (64), 64-byte swizzle
    assert descriptor(0x12340, 16, 1024, 64) == (2 << 62) | (64 << 32) | (1 << 16) | 0x1234
    # only 18 address bits count: 0x40010 -> 0x0001
    assert descriptor(0x40010, 0, 0, 0) == 1
    with pytest.raises(ValueError, match="multiples of 16 bytes"):
        descriptor(8, 16, 16, 128)


def test_mn_major_offsets_by_hand():
    """wgmma's canonical MN-major layout with the 128-byte swizzle for 2-byte elements: 64
    lines a 128-byte row per k, 8 k an atom of 1024 bytes, piece c of row r at c ^ r."""
    from merit.gpu.ldsm import mn_offset

    assert mn_offset(0, 0, 64) == 0
    assert mn_offset(1, 0, 64) == 2                       # lines are contiguous within a row
    assert mn_offset(8, 0, 64) == 16                      # next 16-byte piece, row 0: no swap
    assert mn_offset(0, 1, 64) == 128 + 16                # row 1: piece 0 -> 1
    assert mn_offset(8, 1, 64) == 128 + 0                 # row 1: piece 1 -> 0
    assert mn_offset(56, 7, 64) == 7 * 128 + (7 ^ 7) * 16 # row 7: piece 7 -> 0
    assert mn_offset(0, 8, 64) == 1024                    # next 8 k: the stride byte offset
    assert mn_offset(64, 0, 64) == 64 * 128               # next 64 lines: the leading offset
    assert mn_offset(64, 0, 32) == 32 * 128
    # every (line, k) of a 128-line x 64-k tile lands on its own 2 bytes of the 16 KiB
    offs = {mn_offset(ln, kq, 64) for ln in range(128) for kq in range(64)}
    assert len(offs) == 128 * 64 and max(offs) == 128 * 64 * 2 - 2


def _mn(problem, precision="fp16", half=True, **kw):
    from merit.gpu.spec import OPERAND_DTYPES

    spec = spec_of(problem, "float32", precision,
                   operands=OPERAND_DTYPES[precision] if half else "float32")
    fields = {"mma": precision, "ldsm": True, "wgmma": True, "mn": True, **kw}
    if half:
        fields = {"half": True, "stages": 4, **fields}
    return spec, check_tile(spec, fields)


def test_mn_major_operands_chosen_from_strides():
    """GEMM: B (columns contiguous) goes MN-major, A (k contiguous) stays K-major; a convolution:
    the image (pixels contiguous) MN-major, the weights K-major; an image read with stride 2
    along x has no contiguous lines: nothing MN-major, so no such tile is a candidate."""
    from merit.gpu import ldsm

    box = dict(regs=(128, 256), warps=(8, 1), frags=(1, 32), chunk=64)
    spec, t = _mn(W.gemm(512, 512, 256), **box)
    assert ldsm.mn_ops(spec, t) == (False, True) and ldsm.widths(spec, t) == (8, 8)
    assert t.label().endswith("_wg_h4_mn") and "mn" not in repr(t)
    # the same tile without mn: B gathered four k at a time, element by element
    plain = check_tile(spec, dict(box, mma="fp16", ldsm=True, wgmma=True, half=True, stages=4))
    assert ldsm.mn_ops(spec, plain) == (False, False) and ldsm.widths(spec, plain) == (8, 4)
    conv = W.conv2d(4, 32, 32, 32, 64, 3, padding=1)
    spec, t = _mn(conv, regs=(1, 64, 1, 64), warps=(4, 1), frags=(1, 8), chunk=64)
    assert ldsm.mn_ops(spec, t) == (True, False)
    # the padded image's lines cross the border: loaded through registers, four lines a slot
    assert ldsm.async_ops(spec, t) == (False, True) and ldsm.widths(spec, t) == (4, 8)
    # an unpadded 1x1 image: eight pixels contiguous and aligned, one 16-byte copy
    spec, t = _mn(W.conv2d(2, 32, 8, 16, 64, 1), regs=(1, 64, 4, 16), warps=(4, 1),
                  frags=(1, 8), chunk=64)
    assert ldsm.mn_ops(spec, t) == (True, False) and ldsm.widths(spec, t) == (8, 8)
    s2 = spec_of(W.conv2d(4, 32, 32, 32, 64, 3, stride=2, padding=1), "float32", "fp16")
    assert not any(t.mn for t in ldsm.candidates(s2, "fp16", 200_000, wgmma=True))
    assert any(t.mn for t in ldsm.candidates(spec_of(conv, "float32", "fp16"), "fp16", 200_000,
                                             wgmma=True))


def test_mn_major_tile_source():
    """The MN-major operand: its own descriptor (leading byte offset 64 * 128, stride byte
    offset 1024, 128-byte swizzle), the transpose flag of B set, B's k steps 2048 bytes (128
    descriptor units) apart, A's 32 bytes; its slots 16-byte copies of eight columns at one k,
    stored at mn_offset()."""
    spec, t = _mn(W.gemm(512, 512, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32),
                  chunk=64)
    name, src, _, nt, smem = source(spec, t)
    assert "_wg_h4_mn_" in name and nt == 256 and smem == 4 * (128 + 256) * 128 + 1024
    assert "| 0x4000004002000000ull;" in src
    assert "merit_desc_mn(sbase + 16384 + wn * 32768)" in src
    assert "merit_desc(sbase + (wm >> 2) * 8192)" in src
    assert src.count("m64n256k16.f32.f16.f16") == 4 and src.count("p, 1, 1, 0, 1;") == 4
    for k in range(4):
        assert f'"l"(da0 + so + {2 * k}), "l"(db0 + so + {128 * k})' in src
    body = src[src.index('extern "C"'):]
    # B: 256 lines x 64 k in 16-byte pieces over 256 threads: 8 slots of eight columns each
    assert body.count("// operand 1 slot") == 8 and body.count("// operand 0 slot") == 4
    assert "const int ln1_0 = 8 * (v1_0 % 32), kq1_0 = v1_0 / 32;" in body
    assert ("const unsigned sa1_0 = 16384 + (ln1_0 >> 6) * 8192 + (kq1_0 >> 3) * 1024 + "
            "(kq1_0 & 7) * 128 + ((((ln1_0 & 63) >> 3) ^ (kq1_0 & 7)) << 4) + (ln1_0 & 7) * 2;"
            in body)
    assert "merit_acp16(" in body and "merit_acp8(" not in body and "merit_st4h(" not in body
    # the K-major form keeps its source: no transpose, no MN descriptor
    plain = check_tile(spec, {"mma": "fp16", "ldsm": True, "wgmma": True, "half": True,
                              "stages": 4, "regs": (128, 256), "warps": (8, 1), "frags": (1, 32),
                              "chunk": 64})
    psrc = source(spec, plain)[1]
    assert "merit_desc_mn" not in psrc and psrc.count("p, 1, 1, 0, 0;") == 4


def test_mn_major_tile_checks_and_ranking():
    with pytest.raises(ValueError, match=r"tile.mn \(MN-major operands\) needs FP16 / BF16"):
        check_tile(spec_of(W.gemm(256, 256, 256), "float32", "tf32"),
                   {"mma": "tf32", "ldsm": True, "wgmma": True, "mn": True, "regs": (64, 64),
                    "warps": (4, 1), "frags": (1, 8), "chunk": 32})
    with pytest.raises(ValueError, match=r"and tile.cluster 1"):
        check_tile(spec_of(W.gemm(512, 512, 256), "float32", "fp16"),
                   {"mma": "fp16", "ldsm": True, "wgmma": True, "mn": True, "cluster": 2,
                    "regs": (128, 256), "warps": (8, 1), "frags": (1, 32), "chunk": 64})
    # the autotuner times MN-major wgmma tiles (first at equal cost) and their half copies
    spec = spec_of(W.gemm(1024, 1024, 1024), "float32", "fp16", operands="float16")
    tiles = rank(spec, count=16)
    wg = [t for t in tiles if t.wgmma and not t.half]
    assert wg[0].mn and any(not t.mn for t in wg)
    assert any(t.mn and t.half for t in tiles)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("case", ["gemm", "conv"])
def test_mn_major_source_compiles_without_spills(case, tmp_path):
    if case == "gemm":
        spec, t = _mn(W.gemm(512, 512, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32),
                      chunk=64)
    else:
        spec, t = _mn(W.conv2d(4, 32, 32, 32, 64, 3, padding=1), "bf16", half=False,
                      regs=(1, 64, 1, 64), warps=(4, 1), frags=(1, 8), chunk=64)
    _assert_compiles_without_spills(spec, t, tmp_path)


def test_producer_phase_bookkeeping():
    """The ring's phases by hand: k tile kt takes buffer kt % S; the consumers wait for that
    buffer's (kt // S)-th filling (parity alternating 0, 1, 0, ...), the producer for the
    consumers' release of tile kt - S (none before the ring has gone round once)."""
    from merit.gpu import ldsm

    got = [ldsm.phases(kt, 3) for kt in range(8)]
    assert got == [(0, 0, None), (1, 0, None), (2, 0, None), (0, 1, 0), (1, 1, 0), (2, 1, 0),
                   (0, 0, 1), (1, 0, 1)]
    assert [ldsm.phases(kt, 4)[1:] for kt in (3, 4, 8, 12)] == [(0, None), (1, 0), (0, 1), (1, 0)]
    # copies only: one noinc arrival per producer thread; registers too: one more each
    assert ldsm.full_count(0) == 128 and ldsm.full_count(1) == 256
    t = Tile((1, 1), (128, 256), 64, mma="fp16", warps=(8, 1), frags=(1, 32), ldsm=True,
             wgmma=True, half=True, stages=4, producer=True)
    full, empty = ldsm.mbarriers(t, (128 + 256) * 128)
    assert full == [196608, 196616, 196624, 196632] and empty == [196640, 196648, 196656, 196664]


def test_producer_tile_source():
    """A warp-specialized GEMM tile: a fifth warpgroup (384 threads) whose 128 threads gather
    the whole tile (A: 128 lines x 64 k = 8 slots of eight k, B: 256 lines = 16 slots of eight
    columns), the mbarriers after the four buffers, one block barrier (after their
    initialization), the producer's waits on "empty" (parity of the previous round), the
    consumers' on "full", their release after wgmma.wait_group 1; the same products as the
    non-specialized tile."""
    spec, t = _mn(W.gemm(512, 512, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32),
                  chunk=64)
    ws = dataclasses.replace(t, producer=True)
    assert ws.nthreads == 384 and ws.label().endswith("_h4_mn_ws")
    name, src, _, nt, smem = source(spec, ws)
    assert nt == 384 and smem == 4 * (128 + 256) * 128 + 1024 + 4 * 16
    body = src[src.index('extern "C"'):]
    assert "__launch_bounds__(384)" in body and body.count("__syncthreads();") == 1
    assert body.count("// operand 0 slot") == 8 and body.count("// operand 1 slot") == 16
    assert "const int v1_15 = tid + 1920;" in body
    assert "const unsigned mbar = sbase + 196608;" in body
    assert "merit_mb_init(mbar + 8 * s, 128);" in body
    assert "merit_mb_init(mbar + 32 + 8 * s, 256);" in body
    assert "if (warp >= 8) {" in body and "const int tid = threadIdx.x - 256;" in body
    assert "if (kt >= 4) merit_mb_wait(mbar + 32 + 8 * s, ((kt / 4) + 1) & 1);" in body
    assert "merit_mb_cp_arrive(mbar + 8 * s);" in body
    assert "merit_mb_arrive(mbar + 8 * s)" not in body
    assert "merit_mb_wait(mbar + 8 * s, (kt / 4) & 1);" in body
    assert "if (kt > 0) merit_mb_arrive(mbar + 32 + 8 * ((kt + 3) % 4));" in body
    # the producer's branch ends before the consumers' loop; it issues no wgmma
    prod = body[body.index("if (warp >= 8) {"):body.index("return;")]
    assert "wgmma" not in prod and prod.count("merit_acp16(") == 24
    cons = body[body.index("return;"):]
    assert "merit_acp16(" not in cons and cons.count("m64n256k16.f32.f16.f16") == 4
    assert "merit_wg_wait1();" in cons
    plain = source(spec, t)[1]
    assert (re.findall(r"wgmma\.mma_async[^\"]*", plain)
            == re.findall(r"wgmma\.mma_async[^\"]*", src))


def test_producer_tile_registers_path_and_checks():
    """A padded image goes through the producer's registers: its stores, a proxy fence and a
    plain arrival beside the copies' (256 arrivals per phase).  Refused without half arrays,
    with 2 buffers or in clusters; ranked as half wgmma copies of 3 and 4 buffers."""
    spec, t = _mn(W.conv2d(2, 24, 13, 16, 72, 3, padding=1), regs=(1, 64, 4, 16), warps=(4, 1),
                  frags=(1, 8), chunk=64)
    src = source(spec, dataclasses.replace(t, producer=True, stages=3))[1]
    body = src[src.index('extern "C"'):]
    assert "merit_mb_init(mbar + 8 * s, 256);" in body
    prod = body[body.index("if (warp >= 4) {"):body.index("return;")]
    assert "merit_st4h(" in prod and "merit_proxy_fence();\n" in prod
    assert prod.index("merit_mb_arrive(mbar + 8 * s);") < prod.index("merit_mb_cp_arrive(")
    for bad, why in (({"stages": 2}, "3 or 4 stages"), ({"cluster": 2}, "tile.cluster must be 1")):
        with pytest.raises(ValueError, match=why):
            check_tile(spec, dict(mma="fp16", ldsm=True, wgmma=True, regs=(1, 64, 4, 16),
                                  warps=(4, 1), frags=(1, 8), chunk=64, half=True, stages=3,
                                  producer=True) | bad)
    g = spec_of(W.gemm(1024, 1024, 1024), "float32", "fp16", operands="float16")
    ws = [t for t in rank(g, count=16) if t.producer]
    assert ws and all(t.half and t.wgmma and t.tma and t.stages in (3, 4) for t in ws)
    # A's rows 1998 bytes apart, B's 18 (no 16-byte multiples): no operand for the copy engine,
    # so no warp-specialized candidate
    g = spec_of(W.gemm(1000, 9, 999), "float32", "fp16", operands="float16")
    assert not any(t.producer for t in rank(g, count=16))


def test_tma_operands_and_source():
    """Bulk tensor copies (``Tile.tma``): GEMM's A by one 64 k x 128 line box (K-major, 128-byte
    swizzle), its B (MN-major) by four 64 line x 64 k boxes 8192 bytes apart, both issued by one
    producer thread after the expected byte count (49152 per k tile: the whole stage), one
    arrival per phase; rows that are no multiple of 16 bytes keep cp.async (one more arrival per
    producer thread); a padded image's gathers never qualify."""
    from merit.gpu import ldsm

    spec, t = _mn(W.gemm(512, 384, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32),
                  chunk=64, producer=True, tma=True)
    a, b = ldsm.tma_ops(spec, t)
    assert (a["dims"], a["strides"], a["box"], a["swizzle"], a["boxes"]) == (
        (256, 512), (512,), (64, 128), 128, 1)
    assert (b["dims"], b["strides"], b["box"], b["swizzle"], b["boxes"]) == (
        (384, 256), (768,), (64, 64), 128, 4)
    name, src, _, nt, _ = source(spec, t)
    assert "_ws_tma_" in name and nt == 384
    body = src[src.index('extern "C"'):]
    assert "const __grid_constant__ MeritTmap tm0, const __grid_constant__ MeritTmap tm1)" in body
    assert "merit_mb_init(mbar + 8 * s, 1);" in body
    assert "merit_mb_expect(mbar + 8 * s, 49152);" in body
    assert ("merit_tma2(sbase + s * 49152 + 0 + 0 * 16384, &tm0, kt * 64, pb0 + 0 * 128, "
            "mbar + 8 * s);") in body
    for g in range(4):
        assert (f"merit_tma2(sbase + s * 49152 + 16384 + {g} * 8192, &tm1, pb1 + {g} * 64, "
                f"kt * 64, mbar + 8 * s);") in body
    assert "// operand" not in body and "merit_acp16(" not in body and "cp_arrive(mbar" not in body
    # A's rows 600 bytes apart: A by cp.async, B by the copy engine
    spec, t = _mn(W.gemm(70, 40, 300), regs=(64, 64), warps=(4, 1), frags=(1, 8), chunk=64,
                  stages=3, producer=True, tma=True)
    a, b = ldsm.tma_ops(spec, t)
    assert a is None and b["strides"] == (80,) and b["boxes"] == 1
    body = source(spec, t)[1]
    assert "merit_mb_init(mbar + 8 * s, 129);" in body
    assert "merit_mb_cp_arrive(mbar + 8 * s);" in body
    spec, t = _mn(W.conv2d(2, 24, 13, 16, 72, 3, padding=1), regs=(1, 64, 4, 16), warps=(4, 1),
                  frags=(1, 8), chunk=64, stages=3, producer=True)
    a, b = ldsm.tma_ops(spec, t)
    assert a is None and b["dims"] == (216, 72) and b["strides"] == (432,)
    with pytest.raises(ValueError, match="tile.tma"):
        check_tile(spec_of(W.gemm(512, 384, 256), "float32", "fp16", operands="float16"),
                   {"mma": "fp16", "ldsm": True, "wgmma": True, "mn": True, "half": True,
                    "stages": 4, "regs": (128, 256), "warps": (8, 1), "frags": (1, 32),
                    "chunk": 64, "tma": True})


def test_tma_cluster_tile_source():
    """Clusters of two with bulk copies: each block copies its A box and two of B's four 64-line
    boxes (by its rank) multicast into both blocks, expects the whole stage's bytes on its own
    barrier, and its consumers release a buffer to both blocks (one thread per warpgroup each:
    4 arrivals per phase); cluster barriers after the barriers' initialization and before the
    blocks leave.  Refused where A is no plain matrix (rows 600 bytes apart)."""
    spec, t = _mn(W.gemm(512, 512, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32),
                  chunk=64, producer=True, tma=True, cluster=2)
    body = source(spec, t)[1]
    body = body[body.index('extern "C"'):]
    assert "__cluster_dims__(2, 1, 1)" in body and "_wgc2_h4_mn_ws_tma_" in body
    assert "merit_mb_init(mbar + 32 + 8 * s, 4);" in body
    assert "merit_mb_expect(mbar + 8 * s, 49152);" in body
    assert body.count("merit_tma2mc(") == 2 and body.count("merit_tma2(") == 1
    assert ("merit_tma2mc(sbase + s * 49152 + 16384 + (2 + (int)crank) * 8192, &tm1, "
            "pb1 + (2 + (int)crank) * 64, kt * 64, mbar + 8 * s);") in body
    assert "merit_mb_arrive_peer(mbar + 32 + 8 * ((kt + 3) % 4), crank ^ 1u);" in body
    assert body.count("merit_cluster_sync();") == 3 and "__syncthreads();" not in body
    with pytest.raises(ValueError, match="multicasts B by bulk tensor copies"):
        _mn(W.gemm(256, 64, 300), regs=(64, 64), warps=(4, 1), frags=(1, 8), chunk=64,
            producer=True, tma=True, cluster=2)


def test_tf32_producer_tma_tile_source(monkeypatch):
    """TF32 on the warp-specialized path (float32 arrays): GEMM's A (k contiguous, rows 1024
    bytes apart) by one 32 k x 128 line box of 4-byte elements (128-byte swizzle), B (columns
    contiguous: wgmma reads TF32 K-major only) copied word by word by the producer's cp.async
    into lines of k (16 slots of four k per producer thread, the lanes of each group of 8 taking
    the k in rotated order): no registers, no stores, "full" counts 128 copy arrivals and the
    bulk copy's; ranked as TMA producer copies of the best wgmma tiles, 3 and 4 buffers, only
    where ``TF32_PRODUCER_TUNED``; FP16 on float32 arrays converts in the producer's registers."""
    from merit.gpu import ldsm, tiling

    spec = spec_of(W.gemm(512, 384, 256), "float32", "tf32")
    t = check_tile(spec, {"mma": "tf32", "ldsm": True, "wgmma": True, "regs": (128, 256),
                          "warps": (8, 1), "frags": (1, 32), "chunk": 32, "stages": 4,
                          "producer": True, "tma": True})
    assert t.stages == 4 and not t.half and t.label().endswith("_k32_wg_ws4_tma")
    a, b = ldsm.tma_ops(spec, t)
    assert b is None and (a["dims"], a["strides"], a["box"], a["swizzle"], a["esize"],
                          a["bytes"]) == ((256, 512), (1024,), (32, 128), 128, 4, 16384)
    assert ldsm.word_ops(spec, t) == (False, True)
    name, src, _, nt, smem = source(spec, t)
    assert nt == 384 and smem == 4 * (128 + 256) * 128 + 1024 + 4 * 16
    body = src[src.index('extern "C"'):]
    assert "const T* __restrict__ g_in0" in body and "__grid_constant__ MeritTmap tm0)" in body
    assert "merit_mb_init(mbar + 8 * s, 129);" in body
    assert "merit_mb_expect(mbar + 8 * s, 16384);" in body
    assert ("merit_tma2(sbase + s * 49152 + 0 + 0 * 16384, &tm0, kt * 32, pb0 + 0 * 128, "
            "mbar + 8 * s);") in body
    prod = body[body.index("if (warp >= 8) {"):body.index("return;")]
    assert prod.count("// operand 1 slot") == 16 and "// operand 0 slot" not in prod
    assert prod.count("merit_acp4(sbase + s * 49152 + sa1_") == 16
    assert "const int ee = (e + (lane >> 3)) & 3;" in prod
    assert "int at = lb1_0 + (int)a0 * 384;" in prod
    assert "merit_st4(" not in prod and "merit_mb_arrive(mbar + 8 * s)" not in prod
    assert "merit_mb_cp_arrive(mbar + 8 * s);" in prod
    # one copy instruction of a warp (slot 0: lanes on 32 consecutive columns, four k from
    # kq = 0, lane group g at k (e + g) % 4, each group 8 consecutive words of a row of B):
    # the swizzled words fall in 32 different banks
    for e in range(4):
        words = [ln * 32 + (0 ^ ldsm.swizzle(ln, 8)) * 4 + (e + ln // 8) % 4 for ln in range(32)]
        assert len({wd % 32 for wd in words}) == 32
    cons = body[body.index("return;"):]
    assert cons.count("m64n256k8.f32.tf32.tf32") == 4 and "merit_acp4(" not in cons
    # timed by the autotuner where TF32_PRODUCER_TUNED: the TMA copies (3, 4 buffers) of the
    # best wgmma tiles
    monkeypatch.setattr(tiling, "TF32_PRODUCER_TUNED", False)
    assert not any(x.producer for x in rank(spec, count=16))
    monkeypatch.setattr(tiling, "TF32_PRODUCER_TUNED", True)
    ws = [x for x in rank(spec, count=16) if x.producer]
    assert ws and all(x.tma and x.wgmma and not x.half and x.stages in (3, 4) for x in ws)
    assert {x.stages for x in ws} == {3, 4}
    # K = 37: rows of A 148 bytes apart, no bulk copies; a producer gathers both operands
    odd = spec_of(W.gemm(50, 40, 37), "float32", "tf32")
    f = check_tile(odd, {"mma": "tf32", "ldsm": True, "wgmma": True, "regs": (64, 64),
                         "warps": (4, 1), "frags": (1, 8), "chunk": 32, "stages": 3,
                         "producer": True})
    assert ldsm.tma_ops(odd, f) == (None, None) and ldsm.word_ops(odd, f) == (True, True)
    assert "merit_mb_init(mbar + 8 * s, 128);" in source(odd, f)[1]
    assert ldsm.wgmma_fits(odd, f) == ""
    plain = dataclasses.replace(f, producer=False, stages=2)
    # (only the form taking A from registers: B's lines, 160 bytes apart, go by bulk copies)
    assert all(x.areg for _, x in tiling._producer_variants(odd, [], [(0.0, plain)],
                                                             tiling.H100))
    # FP16 on float32 arrays: the producer converts in its registers; no bulk copies
    h = spec_of(W.gemm(512, 384, 256), "float32", "fp16")
    f = check_tile(h, {"mma": "fp16", "ldsm": True, "wgmma": True, "regs": (128, 256),
                       "warps": (8, 1), "frags": (1, 32), "chunk": 64, "stages": 3,
                       "producer": True})
    assert ldsm.tma_ops(h, f) == (None, None) and ldsm.word_ops(h, f) == (False, False)
    src = source(h, f)[1]
    assert "cvt.rn.f16x2.f32" in src and "merit_mb_init(mbar + 8 * s, 256);" in src
    prod = src[src.index("if (warp >= 8) {"):src.index("return;")]
    first, nxt = prod.index("f1_0[e] = "), prod.index("if (kt + 1 < 4) {")
    # the register slots run one k tile ahead: tile 0's loads before the loop, the next
    # tile's after this one's stores and arrival
    assert first < prod.index("for (int kt = 0; kt < 4; ++kt)") < nxt
    assert prod.index("merit_mb_arrive(mbar + 8 * s);") < nxt < prod.index("f1_0[e] = ", first + 1)
    with pytest.raises(ValueError, match="tile.tma"):
        check_tile(h, dataclasses.replace(f, tma=True))


def test_persistent_schedule_covers_every_tile_once():
    """The persistent grid's static stride schedule (``ldsm.schedule``) against a brute-force
    enumeration of (block, step) pairs: every output tile exactly once, blocks' loads within one
    tile of each other, each block's tiles in increasing order; the grid is at most the number
    of tiles (``grid_blocks``)."""
    from merit.gpu import ldsm

    for ntiles in (1, 5, 6, 7, 131, 132, 133, 448, 512):
        for nblocks in (1, 4, 5, 132, 264, 396):
            g = min(ntiles, nblocks)
            sched = ldsm.schedule(ntiles, g)
            assert len(sched) == g
            seen = {}
            for b in range(g):
                for step in range(ntiles + 1):   # brute force: t = b + step * g
                    t = b + step * g
                    if t < ntiles:
                        seen.setdefault(t, []).append(b)
                        assert t in sched[b]
            assert sorted(seen) == list(range(ntiles))
            assert all(len(v) == 1 for v in seen.values())
            assert sum(len(s) for s in sched) == ntiles
            assert all(s == sorted(s) for s in sched)
            assert max(map(len, sched)) - min(map(len, sched)) <= 1
    spec, t = _mn(W.gemm(300, 260, 520), regs=(128, 256), warps=(8, 1), frags=(1, 32), chunk=64,
                  stages=3, producer=True, tma=True, persist=4)
    assert ldsm.grid_blocks(spec, t) == (6, 4)
    big = dataclasses.replace(t, persist=64)
    assert ldsm.grid_blocks(spec, big) == (6, 6) and source(spec, big)[2] == 6


def _simulate_ring(ntiles, stages, tiles):
    """The ring's mbarriers as the persistent kernel drives them, step by step: the consumers
    release k tile g - 1 after tile g's products are issued (kt > 0) and a tile's last k tile
    after its products are done; the producer refills buffer g % S after waiting for the
    ("empty") phase of parity ((g // S) + 1) & 1, the consumers wait for the "full" phase of
    parity (g // S) & 1.  Returns the order of releases and, per k tile, the empty phase the
    producer's wait completes on (the number of phases of that buffer completed before it)."""
    releases = []
    for i in range(tiles):
        g0 = i * ntiles
        for kt in range(ntiles):
            g = g0 + kt
            if kt > 0:
                releases.append(g - 1)
        releases.append(g0 + ntiles - 1)
    done = [0] * stages   # phases completed per "empty" barrier
    when = {}
    for g in releases:
        when[g] = done[g % stages]
        done[g % stages] += 1
    return releases, when


def test_persistent_phase_bookkeeping_across_tiles():
    """Phases across output tiles: with the block's k tiles counted by ``g = g0 + kt``, each k
    tile is released exactly once, in order, so the producer's wait for the release of
    ``g - S`` (parity ``((g // S) + 1) & 1`` of buffer ``g % S``) is the wait for that buffer's
    ``(g // S - 1)``-th phase, whatever the number of k tiles per output tile (fewer than the
    buffers, equal, more); the consumers' "full" parity agrees with ``ldsm.phases``.  The
    generated source counts that way in both roles."""
    from merit.gpu import ldsm

    for ntiles in (1, 2, 3, 4, 5, 9):
        for stages in (3, 4):
            rel, when = _simulate_ring(ntiles, stages, 5)
            assert rel == list(range(5 * ntiles))
            for g in range(stages, 5 * ntiles):
                s, fpar, epar = ldsm.phases(g, stages)
                assert s == g % stages and when[g - stages] == g // stages - 1
                assert epar == ((g // stages) + 1) & 1 == when[g - stages] & 1
                assert fpar == (g // stages) & 1
    spec, t = _mn(W.gemm(500, 384, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32), chunk=64,
                  producer=True, tma=True, persist=5)
    name, src, nb, nt, _ = source(spec, t)
    assert "_ws_tma_g5_" in name and nb == 5 and nt == 384
    body = src[src.index('extern "C"'):]
    prod, cons = body[:body.index("return;")], body[body.index("return;"):]
    for part in (prod, cons):
        assert part.count("for (int t = blockIdx.x; t < 8; t += 5) {") == 1
        assert part.count("const int g = g0 + kt;") == 1 and part.count("g0 += 4;") == 1
        assert "const int pb0 = (bq % 4) * 128; bq /= 4;" in part
    assert "if (g >= 4) merit_mb_wait(mbar + 32 + 8 * s, ((g / 4) + 1) & 1);" in prod
    assert "merit_mb_wait(mbar + 8 * s, (g / 4) & 1);" in cons
    assert "if (kt > 0) merit_mb_arrive(mbar + 32 + 8 * ((g + 3) % 4));" in cons
    # the tile's last buffer released after wgmma.wait_group 0, before the epilogue's stores;
    # the sums zeroed per output tile, inside the tile loop
    end = cons.index("merit_mb_arrive(mbar + 32 + 8 * ((g0 + 3) % 4));")
    assert cons.index("merit_wg_wait();") < end < cons.index("float4")
    assert cons.index("for (int t = blockIdx.x") < cons.index("c0_31_3 = 0.f;") < cons.index(
        "for (int kt = 0")
    # the one-tile-per-block form counts by kt, as before
    plain = source(spec, dataclasses.replace(t, persist=0))[1]
    assert "g0" not in plain and "for (int t = " not in plain and "float4" not in plain


def _pingpong_loops(src):
    """The generated loop bounds of a ping-pong tile's producer and consumer groups, evaluated:
    per block, the producer's output tiles with their ``g0`` and per group its tiles with their
    ``g0``, from the source's ``for (int t = ...)`` lines and ``g0`` statements."""
    body = src[src.index('extern "C"'):]
    prod, cons = body[:body.index("return;")], body[body.index("return;"):]
    pat = re.compile(r"for \(int t = blockIdx\.x( \+ pp \* (\d+))?; t < (\d+); t \+= (\d+)\)")
    (_, _, n, step), = pat.findall(prod)
    (_, off, n2, step2), = pat.findall(cons)
    g0p = re.search(r"int g0 = 0;.*\n(?:.*\n)*?.*g0 \+= (\d+);", prod)
    g0c0 = re.search(r"int g0 = pp \* (\d+);", cons)
    g0c = re.findall(r"g0 \+= (\d+);", cons)
    assert n == n2 and len(g0c) == 1
    return (int(n), int(step), int(g0p[1]), int(off), int(step2), int(g0c0[1]), int(g0c[0]))


def _simulate_pingpong(tiles, kt, stages, ordered=True):
    """A block of a ping-pong tile run step by step, as its generated code drives the ring and
    the named barriers: ``tiles`` (the block's output tiles in order; group ``i % 2`` takes the
    i-th) of ``kt`` k tiles each.  The producer fills k tile g (block order) into buffer
    g % S once the "empty" barrier of that buffer has completed g // S phases (its waits on
    parity ((g // S) + 1) & 1 are the parity of phase g // S - 1); a group waits, per k tile, for
    the "full" phase of parity (g // S) & 1, which a real mbarrier reports complete as soon as
    the phase count's parity differs, even where the wanted phase is two behind (aliasing: the
    simulation records it as an error); it releases k tile g - 1 after issuing g, and its last
    after its products.  Group 1 waits at named barrier 2 before each of its tiles, group 0 at
    barrier 1 before each but its first; each arrives at the other's barrier after its k loop
    if the block has a next tile (``ordered`` False: the barriers pass at once).  Returns
    (errors, the k tiles each group read, in order, deadlocked, the barriers' balance)."""
    n = len(tiles)
    full, empty = [0] * stages, [0] * stages   # phases completed per buffer
    fills = 0   # k tiles the producer has filled (block order)
    bar = {1: 0, 2: 0}   # arrivals minus waits consumed per named barrier
    groups = []
    for p in (0, 1):
        mine = list(range(p, n, 2))
        groups.append(dict(p=p, tiles=mine, i=0, kt=0, state="bar", read=[]))
    errors = []
    for _ in range(100000):
        moved = False
        # producer: the next k tile, once its buffer's previous reader released it
        if fills < n * kt:
            s, need = fills % stages, fills // stages
            if empty[s] >= need:
                full[s] += 1
                fills += 1
                moved = True
        for gr in groups:
            p = gr["p"]
            if gr["i"] >= len(gr["tiles"]):
                continue
            local = gr["tiles"][gr["i"]]
            if gr["state"] == "bar":
                first = p == 0 and gr["i"] == 0
                if first or bar[1 + p] > 0 or not ordered:
                    if not first and ordered:
                        bar[1 + p] -= 1
                    gr["state"] = "loop"
                    moved = True
                continue
            g = local * kt + gr["kt"]
            s = g % stages
            if (full[s] & 1) != ((g // stages) & 1):   # the parity wait returns
                if full[s] != g // stages + 1:
                    errors.append(("aliased full wait", p, g, full[s]))
                gr["read"].append(g)
                if gr["kt"] > 0:
                    empty[(g - 1) % stages] += 1
                gr["kt"] += 1
                moved = True
                if gr["kt"] == kt:   # k loop done: the other group may start, then release
                    if local + 1 < n and ordered:
                        bar[2 - p] += 1
                    empty[g % stages] += 1
                    gr["kt"], gr["i"], gr["state"] = 0, gr["i"] + 1, "bar"
        if not moved:
            break
    stuck = fills < n * kt or any(gr["i"] < len(gr["tiles"]) for gr in groups)
    return errors, [gr["read"] for gr in groups], stuck, bar


def test_pingpong_schedule_and_phases():
    """Ping-pong tiles: the generated loops give each block's output tiles (the persistent
    schedule, against a brute-force enumeration) alternately to the two consumer groups, with
    ``g0`` counting every earlier tile's k tiles of the block (the producer's count); simulated
    over 1 to 9 k tiles per output tile, 3 and 4 buffers and 1 to 7 tiles per block, every
    "full" wait is for the next phase of its buffer (no parity aliasing), each group reads its
    own tiles' k tiles in order, the ring never deadlocks and the named barriers end balanced.
    Without the ordering (every barrier passed), a group's wait aliases: the check can fail."""
    from merit.gpu import ldsm

    spec, t = _mn(W.gemm(500, 384, 256), regs=(64, 256), warps=(4, 1), frags=(1, 32), chunk=64,
                  producer=True, tma=True, persist=5, pingpong=True)
    name, src, nb, nt, _ = source(spec, t)
    assert name.endswith(t.label() + "_" + name.split("_")[-1]) and "_g5_pp" in name
    assert nb == 5 and nt == 384 and t.nthreads == 384
    n, step, g0p, off, step2, g0c0, g0c = _pingpong_loops(src)
    kt = 4   # 256 / 64
    assert (n, step, g0p) == (16, 5, kt) and (off, step2, g0c0, g0c) == (5, 10, kt, 2 * kt)
    for b, sched in enumerate(ldsm.schedule(n, nb)):
        want = [t for t in range(n) if t % nb == b]   # brute force
        assert sched == want
        prod = list(range(b, n, step))
        assert prod == want
        for p in (0, 1):
            mine = list(range(b + p * off, n, step2))
            assert mine == want[p::2]
            # the group's g0 per tile: the k tiles of the block's tiles before it
            assert [g0c0 * p + g0c * i for i in range(len(mine))] == [
                want.index(x) * g0p for x in mine]
    cons = src[src.index("return;"):]
    assert "merit_mb_init(mbar + 32 + 8 * s, 128);" in src   # one group releases each k tile
    assert cons.index("if (pp == 1 || g0 > 0) merit_bar_sync(1 + pp, 256);") < cons.index(
        "for (int kt = 0")
    arrive = cons.index("if (t + 5 < 16) merit_bar_arrive(2 - pp, 256);")
    assert cons.rindex("merit_wg_wait1();") < arrive < cons.index("merit_wg_wait();") < \
        cons.index("float4")
    assert "const int wm = warp & 3, wn = 0, pp = (warp >> 2) & 1;" in src
    for kt in range(1, 10):
        for stages in (3, 4):
            for ntl in range(1, 8):
                errs, read, stuck, bar = _simulate_pingpong(list(range(ntl)), kt, stages)
                assert not errs and not stuck and bar == {1: 0, 2: 0}, (kt, stages, ntl)
                for p in (0, 1):
                    assert read[p] == [i * kt + k for i in range(p, ntl, 2) for k in range(kt)]
    # the check can fail: groups that do not wait for each other's k loops alias (group 1's
    # first wait, k tile 8 of buffer 2, returns on that buffer's first fill, for group 0)
    errs = _simulate_pingpong(list(range(4)), 8, 3, ordered=False)[0]
    assert ("aliased full wait", 1, 8, 1) in errs


def test_pingpong_candidates_refusals_and_compile(tmp_path, monkeypatch):
    """With ``PINGPONG_TUNED`` (off by default: measured slower) the autotuner times the
    ping-pong form (64-row box, warps (4, 1), persistent) beside each FP16 / BF16 producer tile
    with bulk copies whose two warpgroups split 128 rows, none with ``PERSIST_TUNED`` off;
    refusals: not persistent, more than one warpgroup per group.  The 4096^3 tile builds for
    sm_90a without spills."""
    from merit.gpu import tiling

    spec = spec_of(W.gemm(4096, 4096, 4096), "float32", "fp16", operands="float16")
    assert not tiling.PINGPONG_TUNED and not any(t.pingpong for t in rank(spec, count=16))
    monkeypatch.setattr(tiling, "PINGPONG_TUNED", True)
    ranked = rank(spec, count=16)
    pps = [t for t in ranked if t.pingpong]
    src = [t for t in ranked if t.producer and t.tma and not t.persist and t.warps == (8, 1)]
    assert pps and len(pps) == len(src)
    for t in pps:
        assert t.warps == (4, 1) and t.regs == (64, 256) and t.persist == 132
        assert t.label().endswith("_g132_pp") and t.nthreads == 384
    monkeypatch.setattr(tiling, "PERSIST_TUNED", False)
    assert not any(t.pingpong for t in rank(spec, count=16))
    monkeypatch.setattr(tiling, "PERSIST_TUNED", True)
    for kw in (dict(persist=0), dict(regs=(128, 256), warps=(8, 1))):
        with pytest.raises(ValueError, match="tile.pingpong"):
            _mn(W.gemm(512, 384, 256), **{**dict(regs=(64, 256), warps=(4, 1), frags=(1, 32),
                                                chunk=64, producer=True, tma=True, persist=4,
                                                pingpong=True), **kw})
    if shutil.which("nvcc"):
        _assert_compiles_without_spills(spec, pps[0], tmp_path)


def _eval_exchange(lines, lane_sums):
    """Evaluate the generated exchange statements of one fragment (``const float a = b ? c : d``
    and ``__shfl_xor_sync(mask, value, m)``) for the 32 lanes of a warp; ``lane_sums``: per lane
    the fragment's four sums.  Returns per lane the values ``v0 .. v3`` and the evaluated
    ``qr`` / ``qc`` expressions."""
    tern = re.compile(r"(\w+) \? (\w+) : (\w+)")
    env = [dict(gq=ln >> 2, tq=ln & 3, wm=0, wn=0, **{f"c0_0_{e}": lane_sums[ln][e]
                                                        for e in range(4)})
           for ln in range(32)]
    for ln in range(32):
        env[ln].update(odd=env[ln]["tq"] & 1, hi=(env[ln]["gq"] >> 1) & 1, lo=env[ln]["gq"] & 1)
    for line in lines:
        line = line.strip().rstrip(";")
        if line.startswith(("int qr", "int qc")):
            name, expr = line[4:].split(" = ")
            for e in env:
                e[name] = eval(expr, {}, dict(e))
            continue
        if not line.startswith("const float"):
            continue
        for decl in re.split(r", (?=\w+ = )", line[len("const float "):]):
            name, expr = decl.split(" = ", 1)
            m = re.match(r"__shfl_xor_sync\(0xffffffffu, (.*), (\d+)\)", expr)
            if m:
                sent = [e[tern.sub(lambda t, e=e: t[2] if e[t[1]] else t[3], m[1])]
                        for e in env]
                for ln, e in enumerate(env):
                    e[name] = sent[ln ^ int(m[2])]
            else:
                for e in env:
                    e[name] = e[tern.sub(lambda t, e=e: t[2] if e[t[1]] else t[3], expr)]
    return [([e[f"v{i}"] for i in range(4)], e["qr"], e["qc"]) for e in env]


@pytest.mark.parametrize("how", ["cols", "rows"])
def test_vector_store_exchange_puts_four_neighbours_in_each_lane(how, monkeypatch):
    """The persistent tiles' 16-byte stores: the generated lane exchanges, evaluated for a warp
    whose lanes hold the mma fragment's sums (row gq / gq + 8, columns 2 tq, 2 tq + 1) tagged
    by position, leave each lane four adjacent outputs (columns qc .. qc + 3 of row qr, or rows
    qr .. qr + 3 of column qc), and the warp's 32 lanes cover the fragment's 16 x 8 sums once.
    A GEMM stores along its columns, a convolution (output pixels innermost) along the rows
    where ``mma.VECTOR_ROWS`` (off: measured slower), else one output at a time; where the
    innermost extent is no multiple of 4, the stores stay scalar."""
    from merit.gpu import mma
    from merit.gpu.mma import vector_store_ok

    if how == "rows":
        spec, t = _mn(W.conv2d(2, 24, 13, 16, 72, 3, padding=1), regs=(1, 64, 4, 16),
                      warps=(4, 1), frags=(1, 8), chunk=64, stages=3, producer=True, persist=3)
        assert vector_store_ok(spec, t.block) == "" and "float4" not in source(spec, t)[1]
        monkeypatch.setattr(mma, "VECTOR_ROWS", True)
    if how == "cols":
        spec, t = _mn(W.gemm(500, 384, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32),
                      chunk=64, producer=True, tma=True, persist=5)
    else:
        spec, t = _mn(W.conv2d(2, 24, 13, 16, 72, 3, padding=1), regs=(1, 64, 4, 16),
                      warps=(4, 1), frags=(1, 8), chunk=64, stages=3, producer=True, persist=3)
    assert vector_store_ok(spec, t.block) == how
    body = source(spec, t)[1]
    body = body[body.index("return;"):]
    start = body.index("const float", body.index("merit_keep(c0_0_0)"))
    lines = body[start:body.index("const int p0", start)].splitlines()
    lines = [ln for ln in lines if "const float" in ln or "int q" in ln]
    # lane ln's sum e sits at row gq (+ 8 for e >= 2), column 2 tq (+ 1 for odd e): tagged
    # row * 100 + column
    sums = [[float(((ln >> 2) + 8 * (e >> 1)) * 100 + 2 * (ln & 3) + (e & 1)) for e in range(4)]
            for ln in range(32)]
    got = _eval_exchange(lines, sums)
    cover = []
    for vals, qr, qc in got:
        want = ([qr * 100 + qc + i for i in range(4)] if how == "cols"
                else [(qr + i) * 100 + qc for i in range(4)])
        assert vals == want
        assert (qc if how == "cols" else qr) % 4 == 0
        cover += want
    assert sorted(cover) == sorted(r * 100 + c for r in range(16) for c in range(8))
    assert body.count("*reinterpret_cast<float4*>(g_out0") == t.frags[1]
    narrow = spec_of(W.gemm(300, 42, 256), "float32", "fp16", operands="float16")
    assert vector_store_ok(narrow, (128, 64)) == ""
    t2 = check_tile(narrow, {"mma": "fp16", "ldsm": True, "wgmma": True, "mn": True,
                             "half": True, "stages": 3, "regs": (64, 64), "warps": (4, 1),
                             "frags": (1, 8), "chunk": 64, "producer": True, "persist": 2})
    src = source(narrow, t2)[1]
    assert "float4" not in src and "for (int t = blockIdx.x; t < 5; t += 2)" in src


def test_persistent_candidates_and_refusals():
    """The autotuner times the persistent form (grid: 132 SMs x the blocks per SM that shared
    memory leaves) beside each producer tile of a large GEMM, none where a problem has no more
    output tiles than that grid, none unless ``PERSIST_TUNED``; ``Tile.persist`` needs a
    producer tile, in clusters of two an even grid."""
    from merit.gpu import tiling

    spec = spec_of(W.gemm(4096, 4096, 4096), "float32", "fp16", operands="float16")
    ranked = rank(spec, count=16)
    ws = [t for t in ranked if t.producer and not t.persist]
    ps = [t for t in ranked if t.persist and not t.pingpong and not t.epi]   # (epi: its own test)
    assert ws and {dataclasses.replace(t, persist=0) for t in ps} == set(ws)
    for t in ps:
        per = tiling.H100.smem_sm // (tiling._smem_bytes(spec, t) + 1024)
        assert t.persist == 132 * max(1, min(per, 2048 // t.nthreads))
        assert t.label().endswith(f"_g{t.persist}")
    small = spec_of(W.gemm(300, 260, 520), "float32", "fp16", operands="float16")
    assert not any(t.persist for t in rank(small, count=16))
    try:
        tiling.PERSIST_TUNED = False
        assert not any(t.persist for t in rank(spec, count=16))
    finally:
        tiling.PERSIST_TUNED = True
    with pytest.raises(ValueError, match="tile.persist"):
        _mn(W.gemm(512, 384, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32), chunk=64,
            persist=4)
    with pytest.raises(ValueError, match="tile.persist"):
        _mn(W.gemm(512, 512, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32), chunk=64,
            producer=True, tma=True, cluster=2, persist=5)


def _areg_gemm(regs=(128, 256), warps=(8, 1), frags=(1, 32), chunk=32, **kw):
    """A TF32 producer tile of GEMM 512 x 384 x 256 with bulk copies, and its ``Tile.areg``
    form (wgmma's A from registers)."""
    from merit.gpu import ldsm

    spec = spec_of(W.gemm(512, 384, 256), "float32", "tf32")
    t = check_tile(spec, {"mma": "tf32", "ldsm": True, "wgmma": True, "regs": regs,
                          "warps": warps, "frags": frags, "chunk": chunk, "stages": 4,
                          "producer": True, "tma": True, **kw})
    return spec, t, ldsm.areg_variant(spec, t)


def test_tf32_areg_tile_exchanges_roles_and_copies_both_operands_in_bulk():
    """TF32 with wgmma's A from registers (``Tile.areg``): GEMM's B (columns contiguous) takes
    A's place, so the wgmma rows are the GEMM's columns (the box 256 x 128 for the 128 x 256
    tile); B goes MN-major by bulk copies of 32 lines x 32 k (128-byte rows of 4-byte
    elements, 4 boxes 4096 bytes apart), A K-major by one box: the producer copies nothing
    word by word, "full" counts the bulk copies' arrival only.  The consumers load four words
    per k step (rounded to TF32), fence, issue the register form of wgmma, commit and wait
    for all but the newest product (two register sets alternate), and release the tile before
    after the first k step.  The epilogue stores one output at a time at the rows of
    ``ldsm.areg_line``."""
    from merit.gpu import ldsm
    from merit.gpu.mma import Roles

    spec, t, a = _areg_gemm()
    assert a.areg and a.mn and a.regs == (256, 128) and a.warps == (8, 1)
    assert check_tile(spec, a) == a
    assert a.label() == "tf32_b256x128_w8x1_f1x32_k32_wg_ra_ws4_tma"
    assert ldsm.tile_roles(spec, a) == Roles(1, 0, (1,), (0,))
    assert ldsm.tile_roles(spec, t) == Roles(0, 1, (0,), (1,))
    ta, tb = ldsm.tma_ops(spec, a)
    assert (ta["k"], ta["mn"], ta["dims"], ta["strides"], ta["box"], ta["boxes"], ta["dstep"],
            ta["cstep"], ta["esize"], ta["bytes"]) == (1, True, (384, 256), (1536,), (32, 32), 4,
                                                       4096, 32, 4, 16384)
    assert (tb["k"], tb["mn"], tb["box"], tb["bytes"]) == (0, False, (32, 256), 32768)
    assert ldsm.word_ops(spec, a) == (False, False) and ldsm.mn_ops(spec, a) == (True, False)
    name, src, nb, nt, smem = source(spec, a)
    assert "_ra_ws4_tma_" in name and nb == 6 and nt == 384
    body = src[src.index('extern "C"'):]
    assert "__grid_constant__ MeritTmap tm0, const __grid_constant__ MeritTmap tm1)" in body
    assert "merit_mb_init(mbar + 8 * s, 1);" in body
    assert "merit_mb_expect(mbar + 8 * s, 49152);" in body
    prod, cons = body[:body.index("return;")], body[body.index("return;"):]
    for g in range(4):
        assert (f"merit_tma2(sbase + s * 49152 + 0 + {g} * 4096, &tm0, pb1 + {g} * 32, kt * 32, "
                f"mbar + 8 * s);") in prod
    assert "merit_tma2(sbase + s * 49152 + 16384 + 0 * 32768, &tm1, kt * 32, pb0 + 0 * 256" in prod
    assert "merit_acp4(" not in prod and "// operand" not in prod
    assert "cvt.rna.tf32.f32" in src and "merit_desc_mn" not in src and "da0" not in cons
    assert cons.count("merit_ldtf(") == 16
    ins = re.findall(r"wgmma\.mma_async[^;]*;", cons)
    assert len(ins) == 4 and all(
        "m64n256k8.f32.tf32.tf32 {%0, " in i and "}, {%128, %129, %130, %131}, %132, p, 1, 1;" in i
        for i in ins)
    loop = cons[cons.index("for (int kt = 0"):cons.index("merit_wg_wait();")]
    steps = loop.split("merit_wg_fence();")[1:]
    assert len(steps) == 4
    for k, st in enumerate(steps):
        q = k % 2
        assert f'"r"(ra{q}_0), "r"(ra{q}_1), "r"(ra{q}_2), "r"(ra{q}_3), "l"(db0 + so + {2 * k})' \
            in st
        assert st.index("merit_wg_commit();") < st.index("merit_wg_wait1();")
        nxt = st[st.index("merit_wg_wait1();"):]
        if k < 3:   # the next step's loads go into the other set, after the wait
            assert f"ra{1 - q}_0 = merit_ldtf(sa + ao00 + {1024 * (k + 1)});" in nxt
    assert steps[0].index("merit_wg_wait1();") < steps[0].index(
        "if (kt > 0) merit_mb_arrive(mbar + 32 + 8 * ((kt + 3) % 4));")
    assert "float4" not in cons and cons.count("g_out0[") == 128
    # the persistent form: the same loop over the block's output tiles
    p = ldsm.areg_variant(spec, dataclasses.replace(t, persist=4))
    assert p.label().endswith("_ra_ws4_tma_g4")
    psrc = source(spec, p)[1]
    assert "for (int t = blockIdx.x; t < 6; t += 4) {" in psrc and "float4" not in psrc


def _eval_c(expr, env):
    return eval(expr.replace("/", "//"), {}, dict(env))


@pytest.mark.parametrize("chunk", [32, 16])
def test_tf32_areg_fragments_read_the_bulk_copied_layout(chunk):
    """The consumers' A fragments of a ``Tile.areg`` tile, evaluated from the generated source
    for every warp and lane: each element's shared address is where the bulk copy engine puts
    (line, k) of the MN-major box (boxes of 32 lines x BK rows of 128 bytes, 16-byte piece c
    of row r at c ^ r % 8: a brute-force map of the swizzle); the rows wgmma gives a warp's
    registers (gq, gq + 8 at k tq, tq + 4) are lines ``ldsm.areg_line``, each of a warpgroup's
    64 lines once; the epilogue stores each sum at the same line; and each of a thread's four
    loads reads 32 different banks across the warp."""
    from merit.gpu import ldsm

    spec, _, a = _areg_gemm(chunk=chunk)
    bk = chunk
    # brute force: the bytes of one box as the copy engine writes them, (line, k) -> offset
    where = {}
    for box in range(a.regs[1] // 32):
        for r in range(bk):
            for e in range(32):
                c = (e * 4) // 16
                where[(box * 32 + e, r)] = (box * bk * 128 + r * 128 + ((c ^ (r % 8)) * 16)
                                            + e * 4 % 16)
    src = source(spec, a)[1]
    cons = src[src.index("return;"):]
    ao = dict(re.findall(r"const unsigned (ao\d\d) = ([^;]*);", cons))
    assert sorted(ao) == ["ao00", "ao01", "ao10", "ao11"]
    qr = re.findall(r"int qr = ([^;]*);", cons)
    wms = a.warps[0]
    lines = {}
    for wm in range(wms):
        for lane in range(32):
            gq, tq = lane >> 2, lane & 3
            env = {"wm": wm, "gq": gq, "tq": tq}
            for h in (0, 1):
                ln = ldsm.areg_line(wm, gq, h)
                if tq == 0:
                    lines.setdefault(wm >> 2, []).append(ln)
                for kb in (0, 1):
                    for ks in range(bk // 8):
                        got = _eval_c(ao[f"ao{h}{kb}"], env) + 1024 * ks
                        assert got == where[(ln, 8 * ks + tq + 4 * kb)]
                        assert got == ldsm.areg_offset(ln, 8 * ks + tq + 4 * kb, bk)
                assert {_eval_c(e, env) for e in qr if f"+ {8 * h} +" in e} == {ln}
    for wg, got in lines.items():
        assert sorted(got) == [wg * 64 + i for i in range(64)]
    for wm in range(wms):
        for h in (0, 1):
            for kb in (0, 1):
                banks = {(_eval_c(ao[f"ao{h}{kb}"], {"wm": wm, "gq": ln >> 2, "tq": ln & 3})
                          // 4) % 32 for ln in range(32)}
                assert len(banks) == 32


def test_tf32_areg_refusals_and_candidates(monkeypatch):
    """``Tile.areg`` only on TF32 producer tiles with bulk copies whose operand with contiguous
    lines the copy engine takes MN-major: not FP16, not without ``tma``, not for a padded
    image (gathered, no bulk copy) or a GEMM whose B rows are no 16-byte multiple (A's may be:
    the producer copies them word by word); ranked beside
    each TF32 producer tile where ``TF32_AREG_TUNED``."""
    from merit.gpu import ldsm, tiling

    spec, t, a = _areg_gemm()
    with pytest.raises(ValueError, match="tile.areg"):
        check_tile(spec, dataclasses.replace(a, tma=False))
    h = spec_of(W.gemm(512, 384, 256), "float32", "fp16")
    f = check_tile(h, {"mma": "fp16", "ldsm": True, "wgmma": True, "regs": (128, 256),
                       "warps": (8, 1), "frags": (1, 32), "chunk": 64, "stages": 3,
                       "producer": True})
    assert ldsm.areg_variant(h, f) is None
    assert "tile.areg" in ldsm.wgmma_fits(h, dataclasses.replace(f, areg=True, mn=True))
    conv = spec_of(W.conv2d(2, 24, 13, 16, 72, 3, padding=1), "float32", "tf32")
    c = check_tile(conv, {"mma": "tf32", "ldsm": True, "wgmma": True, "regs": (1, 64, 4, 16),
                          "warps": (4, 1), "frags": (1, 8), "chunk": 32, "stages": 3,
                          "producer": True, "tma": True})
    assert ldsm.areg_variant(conv, c) is None
    odd = spec_of(W.gemm(50, 40, 37), "float32", "tf32")
    o = check_tile(odd, {"mma": "tf32", "ldsm": True, "wgmma": True, "regs": (64, 64),
                         "warps": (4, 1), "frags": (1, 8), "chunk": 32, "stages": 3,
                         "producer": True})
    assert ldsm.areg_variant(odd, o) is None   # (it needs tile.tma)
    oa = ldsm.areg_variant(odd, dataclasses.replace(o, tma=True))
    assert oa is not None and check_tile(odd, oa) == oa   # B's rows 160 bytes apart: bulk
    assert ldsm.word_ops(odd, oa) == (False, True)   # A's rows 148 bytes apart: word copies
    odd2 = spec_of(W.gemm(50, 42, 37), "float32", "tf32")
    o2 = check_tile(odd2, {"mma": "tf32", "ldsm": True, "wgmma": True, "regs": (64, 64),
                           "warps": (4, 1), "frags": (1, 8), "chunk": 32, "stages": 3,
                           "producer": True})
    # B's rows 168 bytes apart: no bulk copy
    assert ldsm.areg_variant(odd2, dataclasses.replace(o2, tma=True)) is None
    big = spec_of(W.gemm(4096, 4096, 4096), "float32", "tf32")
    monkeypatch.setattr(tiling, "TF32_AREG_TUNED", False)
    assert not any(x.areg for x in rank(big, count=16))
    monkeypatch.setattr(tiling, "TF32_AREG_TUNED", True)
    ra = [x for x in rank(big, count=16) if x.areg]
    assert ra and all(x.producer and x.tma and x.mn and x.stages in (3, 4) for x in ra)
    assert any(x.persist for x in ra) and any(not x.persist for x in ra)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_tf32_areg_source_compiles_for_hopper(tmp_path):
    """The register-A form compiles for sm_90a without spills (the consumers' 128 sums and two
    sets of four A registers under the 384-thread cap), wgmma issued as HGMMA where the
    disassembler is at hand."""
    spec, t, a = _areg_gemm()
    p = dataclasses.replace(a, persist=4)
    cu = tmp_path / "k.cu"
    cu.write_text("typedef float T;\n" + source(spec, p)[1])
    res = subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-cubin",
                          "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"), str(cu)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 bytes spill stores" in res.stderr and "C7510" not in res.stderr


@pytest.mark.parametrize("wm", [0, 1, 2, 5])
def test_tf32_areg_rows_stored_four_at_a_time(wm, monkeypatch):
    """A persistent ``Tile.areg`` GEMM (output columns along the wgmma rows) stores four
    consecutive output columns per lane with one 16-byte store after the 4 x 4 lane exchange of
    the "rows" form where ``ldsm.AREG_VECTOR_ROWS`` (off: measured slower): evaluated from the
    generated source for a warp
    ``wm`` whose lanes hold sums tagged by (line of ``ldsm.areg_line``, column), each lane gets
    lines qr .. qr + 3 of column qc, qr a multiple of 4, and the warp's 32 lanes cover its 16
    lines x 8 columns once."""
    from merit.gpu import ldsm

    spec, t, _ = _areg_gemm()
    a = ldsm.areg_variant(spec, dataclasses.replace(t, persist=4))
    assert "float4" not in source(spec, a)[1]   # off by default: measured slower
    monkeypatch.setattr(ldsm, "AREG_VECTOR_ROWS", True)
    body = source(spec, a)[1]
    body = body[body.index("return;"):]
    start = body.index("const float", body.index("merit_keep(c0_0_0)"))
    lines = body[start:body.index("const int p0", start)].splitlines()
    lines = [ln.replace("wm", str(wm)) for ln in lines if "const float" in ln or "int q" in ln]
    sums = [[float(ldsm.areg_line(wm, ln >> 2, e >> 1) * 100 + 2 * (ln & 3) + (e & 1))
             for e in range(4)] for ln in range(32)]
    cover = []
    for vals, qr, qc in _eval_exchange(lines, sums):
        want = [(qr + i) * 100 + qc for i in range(4)]
        assert vals == want and qr % 4 == 0
        cover += want
    rows = sorted({ldsm.areg_line(wm, g, h) for g in range(8) for h in (0, 1)})
    assert sorted(cover) == sorted(r * 100 + c for r in rows for c in range(8))
    assert body.count("*reinterpret_cast<float4*>(g_out0") == 32


def test_consumer_proxy_fence_only_where_generic_copies_write(monkeypatch):
    """With ``ldsm.TMA_FENCE`` off, the consumers' ``fence.proxy.async`` after each wait for a
    buffer stays where the producer writes an operand by ``cp.async`` (TF32 word copies) and
    goes where the bulk copy engine writes both (FP16 GEMM with TMA on A and B, a
    ``Tile.areg`` GEMM); on (the default: dropping it measured no faster) it stays everywhere."""
    from merit.gpu import ldsm

    assert ldsm.TMA_FENCE
    monkeypatch.setattr(ldsm, "TMA_FENCE", False)

    def cons(spec, t):
        src = source(spec, t)[1]
        return src[src.index("return;"):]

    spec, t, a = _areg_gemm()
    assert all(ldsm.tma_ops(spec, a)) and "merit_proxy_fence();" not in cons(spec, a)
    assert not all(ldsm.tma_ops(spec, t)) and "merit_proxy_fence();" in cons(spec, t)
    hs, h = _mn(W.gemm(512, 384, 256), regs=(128, 256), warps=(8, 1), frags=(1, 32), chunk=64,
                producer=True, tma=True, persist=4)
    assert all(ldsm.tma_ops(hs, h)) and "merit_proxy_fence();" not in cons(hs, h)
    monkeypatch.setattr(ldsm, "TMA_FENCE", True)
    assert "merit_proxy_fence();" in cons(spec, a) and "merit_proxy_fence();" in cons(hs, h)
