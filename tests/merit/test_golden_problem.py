"""Problem: tensors, operands, outputs (reshape/crop), test data."""

import numpy as np
import pytest

from merit import Index, Output, Problem, Transform, execute
from merit import strategies as S
from merit import workloads as wl


def test_structure_of_a_residual_layer():
    prob = wl.residual(1, 2, 5, 5, 3, 3, padding=1)
    assert [t.name for t in prob.tensors] == ["I", "W", "R"]
    assert [t.shape for t in prob.tensors] == [(1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 5, 5)]
    assert [(o.tensor, o.stage) for o in prob.operands] == [("I", "loop"), ("W", "loop"),
                                                            ("R", "post")]
    assert prob.steps == 1 * 3 * 5 * 5 * 2 * 3 * 3
    assert prob.outputs[0].shape == (1, 3, 5, 5)


def test_shared_tensor_and_fixed_value():
    prob = wl.bilateral(5, 6, sigma_s=1.0, sigma_r=1.0)
    assert [o.tensor for o in prob.operands] == ["I", "I", "G"]
    img, g = prob.random_inputs(np.random.default_rng(0), np.float64)
    assert img.shape == (5, 6) and g[2, 2] == 1.0 and g[0, 0] == pytest.approx(np.exp(-4.0))
    np.testing.assert_array_equal(g, prob.tensors[1].value)


def test_random_inputs_dtypes_and_ranges():
    prob = wl.gemm(3, 4, 5)
    a, b = prob.random_inputs(np.random.default_rng(1), np.int16, low=-2, high=3)
    assert a.dtype == np.int16 and a.min() >= -2 and b.max() <= 2
    with pytest.raises(TypeError, match="random_inputs: dtype must be integer or floating"):
        prob.random_inputs(np.random.default_rng(1), np.complex64)


def test_output_reshape_and_crop():
    out = Output("y", (2, 3), reshape=(3, 4), crop=(slice(1, 3), slice(0, 3)))
    np.testing.assert_array_equal(out.finish(np.arange(12).reshape(2, 6)),
                                  [[4, 5, 6], [8, 9, 10]])


def test_multi_output_problem_returns_a_tuple():
    prob = wl.motion_estimation(8, 8, block=4, search=1, best=True)
    res = prob.run(*prob.random_inputs(np.random.default_rng(2), np.int32))
    assert isinstance(res, tuple) and [r.shape for r in res] == [(2, 2)] * 3


def test_scalar_parallel_space_and_empty_accumulation():
    t = Transform((5,), p=[], a=[Index(0)])
    assert execute(S.Sum(), (), (5,), [(np.arange(5), t)]) == 10
    copy = Problem("copy", S.Copy(), (3,), (), [Transform((3,), [Index(0, -1, 2)], [])])
    np.testing.assert_array_equal(copy.run(np.array([1, 2, 3])), [3, 2, 1])


def test_values_must_match_a_tensor():
    t = Transform((3,), [Index(0)], [], name="x")
    with pytest.raises(ValueError, match="problem 'c': value given for unknown tensor 'y'"):
        Problem("c", S.Copy(), (3,), (), [t], values={"y": np.zeros(3)})
    with pytest.raises(ValueError, match=r"problem 'c': value of tensor 'x' has shape \(4,\), "
                                         r"expected \(3,\)"):
        Problem("c", S.Copy(), (3,), (), [t], values={"x": np.zeros(4)})


def test_output_reshape_must_keep_the_size():
    t = Transform((6,), [Index(0)], [], name="x")
    with pytest.raises(ValueError, match=r"problem 'c': output 'y' reshapes p_shape \(6,\) to "
                                         r"\(4, 2\), which has a different size"):
        Problem("c", S.Copy(), (6,), (), [t], outputs=[Output("y", (4, 2), reshape=(4, 2))])


def test_problem_notation():
    assert wl.residual(1, 2, 5, 5, 3, 3, padding=1).notation().splitlines() == [
        "M(I) = I[p0, a0, p2 + a1 - 1, p3 + a2 - 1]  (loop)",
        "M(W) = W[p1, a0, a1, a2]  (loop)",
        "M(R) = R[p0, p1, p2, p3]  (post)"]
