"""The autotuner's candidate lists made ahead in another process (``merit.gpu.precompile``,
``seed``; ``bench.gpu``'s workers): the same list as the autotuner's own, taken once."""

from merit import workloads as W
from merit.gpu import candidates, precompile, seed
from merit.gpu.spec import spec_of

H200 = "NVIDIA H200 sm_90"


def test_seeded_list_is_the_autotuners_and_taken_once():
    spec = spec_of(W.gemm(96, 80, 40), "float32", "bf16", operands="bfloat16")
    _, own = candidates(spec, H200)
    key, made = precompile(spec, H200)   # no GPU here: the compiles fail and are skipped
    assert key == spec.key() and list(made) == own and len(own) > 1
    marker = own[-1:]                    # a list the ranking would not give
    seed(key, H200, marker)
    assert candidates(spec, "NVIDIA H100 80GB HBM3 sm_90")[1] == own   # another device's
    assert candidates(spec, H200, tune=False)[1] == own[:1]            # untuned: not taken
    assert candidates(spec, H200)[1] == marker
    assert candidates(spec, H200)[1] == own                            # taken once


def test_bench_rows_precompile_the_specialization_they_run():
    import bench.gpu as B

    for key, kind, params in (("gemm", "gemm", dict(n=64, cols=48, k=40)),
                              ("conv", "conv", dict(n=1, c=3, h=9, w=9, m=8, k=3, stride=1,
                                                    padding=1, precision="fp16"))):
        spec = spec_of(B.problem_of(kind, params), "float32", params.get("precision", "fp32"),
                       operands="float16" if "precision" in params else "float32")
        got, tiles = B._rank_row(kind, params, H200)   # what the bench's workers rank
        assert got == spec.key(), key
        assert list(tiles) == candidates(spec, H200)[1], key
