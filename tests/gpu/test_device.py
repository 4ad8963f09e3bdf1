"""merit.gpu on a CUDA device: every workload against the golden model, over several tiles.

Skipped without CuPy or without a GPU.  Outputs are poisoned before each run, so an element the
kernel never writes fails the check; the float reference is the golden model in float64.
"""

import numpy as np
import pytest
from gpu_cases import CASES, INT_CASES

from merit.gpu import Tile, run
from merit.gpu.spec import spec_of
from merit.gpu.tiling import rank

cp = pytest.importorskip("cupy")
try:
    _GPU = cp.cuda.runtime.getDeviceCount() > 0
except cp.cuda.runtime.CUDARuntimeError:
    _GPU = False
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _GPU, reason="no CUDA device")]

POISON = {"float32": np.nan, "int32": np.iinfo(np.int32).min + 7}


def _check(problem, arrays, dtype, tile, ref):
    spec = spec_of(problem, dtype)
    out = tuple(cp.full(spec.pshape, POISON[spec.out_dtype], dtype=spec.out_dtype)
                for _ in range(spec.outputs))
    res = run(problem, *arrays, tile=tile, out=out)
    res = res if isinstance(res, tuple) else (res,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    for o, (raw, got, want) in enumerate(zip(out, res, ref, strict=True)):
        raw = cp.asnumpy(raw)
        if spec.out_dtype == "float32":
            assert not np.isnan(raw).any(), f"output {o}: {np.isnan(raw).sum()} unwritten elements"
            got = cp.asnumpy(got).astype(np.float64)
            err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
            assert err < 1e-5, f"output {o}: relative error {err:.2e} with {tile}"
        else:
            assert not (raw == POISON["int32"]).any(), f"output {o}: unwritten elements"
            np.testing.assert_array_equal(cp.asnumpy(got), want.astype(np.int64))


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_matches_golden_over_tiles(name):
    problem = CASES[name]()
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
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
