"""The staged forms the autotuner times (``tiling.staged_variants``), without a GPU: tiles that
read a loop input through the read-only cache, with every loop input staged through shared
memory instead; which tiles get them, their fields and kernels, and the autotuner's third round
timing them on a fake runtime."""

import numpy as np
from gpu_cases import fake_runtime

import merit.gpu as gpu
from merit import Index, Problem, Transform
from merit import strategies as S
from merit import workloads as W
from merit.gpu import Tile, codegen, runtime, tiling
from merit.gpu.spec import spec_of


def row_sums(h=64, nb=32, b=16):
    """Sums of runs of ``b`` contiguous words: the summed axis is the contiguous one."""
    return Problem("row_sums", S.Sum(), (h, nb), (b,),
                   [Transform((h, nb, b), p=[Index(0), Index(1)], a=[Index(2)], name="x")])


def _timed(spec):
    ranked = tiling.rank(spec, count=gpu.TUNED)
    # the model's list timed in reverse order: the fastest bases are its last tiles
    return ranked, [(1.0 + 0.01 * (len(ranked) - j), t) for j, t in enumerate(ranked)]


def test_staged_forms_of_the_fastest_cached_tiles():
    spec = spec_of(row_sums(), "float32")
    ranked, times = _timed(spec)
    assert all(t.shared == (False,) for t in ranked)       # no reuse: through the cache
    got = tiling.staged_variants(spec, times)
    bases = [t for _, t in sorted(times, key=lambda mt: mt[0])][:tiling.STAGED_TUNED]
    assert {(v.threads, v.regs, v.chunk) for v in got} == {(b.threads, b.regs, b.chunk)
                                                           for b in bases}
    for v in got:
        assert v.shared == (True,)
        assert v == tiling.complete(spec, v)                # complete as the kernel runs it
        assert "_g" not in v.label() and "_s" in v.label()
    plain = [v for v in got if not v.vread]
    assert len(plain) == len(bases)
    assert all(tiling.vread_ok(spec, v) == any(u.vread and u.threads == v.threads
                                               and u.regs == v.regs for u in got)
               for v in plain)
    # timed already: not again; a staged base gives nothing
    assert tiling.staged_variants(spec, times + [(2.0, v) for v in got]) == []
    assert tiling.staged_variants(spec, [(1.0, got[0])]) == []


def test_staged_kernel_copies_where_the_cached_one_loads():
    spec = spec_of(row_sums(), "float32")
    ranked, times = _timed(spec)
    v = tiling.staged_variants(spec, times)[0]
    base = next(t for t in ranked if (t.threads, t.regs, t.chunk) == (v.threads, v.regs,
                                                                        v.chunk))
    src_base, src_v = codegen.source(spec, base)[1], codegen.source(spec, v)[1]
    # the cached tile loads through merit_ld0 (defined and called); the staged one copies
    assert src_base.count("merit_ld0(") >= 2 and "merit_ld0(" not in src_v
    assert src_v.count("merit_cp_async") > src_base.count("merit_cp_async")
    assert codegen.source(spec, v)[4] > 0 == codegen.source(spec, base)[4]   # shared bytes


def test_no_staged_forms_where_every_loop_input_is_staged_or_switched_off(monkeypatch):
    gemm = spec_of(W.gemm(64, 48, 40), "float32")
    _, times = _timed(gemm)
    assert all(all(t.shared) for _, t in times)
    assert tiling.staged_variants(gemm, times) == []
    spec = spec_of(row_sums(), "float32")
    _, times = _timed(spec)
    monkeypatch.setattr(tiling, "STAGED_TUNED", 0)
    assert tiling.staged_variants(spec, times) == []


def test_a_footprint_too_large_for_shared_memory_is_not_staged():
    spec = spec_of(row_sums(64, 8, 4096), "float32")
    t = tiling.complete(spec, Tile((8, 8), (1, 1), 4096))
    assert t.shared == (False,)
    assert tiling.staged_variants(spec, [(1.0, t)]) == []


def test_the_third_round_times_the_staged_forms_and_can_pick_one(monkeypatch, tmp_path):
    """``_choose`` on a fake runtime: the staged forms are timed after the first rounds, and the
    fastest of all is the pick."""
    spec = spec_of(row_sums(), "float32")
    ranked, times = _timed(spec)
    staged = tiling.staged_variants(spec, times)
    device = "Fake GPU sm_80"
    clock = {t: ms for ms, t in times}
    fast = staged[-1]
    timed = fake_runtime(monkeypatch, runtime,
                         lambda tile: 0.5 if tile == fast else clock.get(tile, 3.0), device)
    gpu.seed(spec.key(), device, ranked)
    cache = runtime.TileCache(tmp_path / "tiles.json")
    assert gpu._choose(spec, [], (), None, True, cache) == fast
    assert set(staged) <= set(timed)
    assert timed.index(staged[0]) > max(timed.index(t) for t in ranked)


def test_staged_sums_in_float64_equal_the_golden_model():
    """The staged form changes where the words come from, not the sums: the golden model's row
    sums against NumPy's, the reference the device test compares both forms with."""
    prob = row_sums(8, 4, 16)
    x = np.random.default_rng(3).standard_normal((8, 4, 16))
    np.testing.assert_allclose(prob.run(x), x.sum(-1), rtol=1e-12)
