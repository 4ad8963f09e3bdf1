"""Fixed-point programs of every strategy against the golden model (``problem.run``)."""

import numpy as np
import pytest

from merit import workloads as W
from merit.isa import IsaError, disassemble, operand_ports, program_for, run, supported
from merit.isa.programs import check_golden

EXACT = {
    "gemm": lambda: W.gemm(8, 12, 20),
    "fc": lambda: W.fc(3, 17, 5),
    "conv_pad": lambda: W.conv2d(1, 3, 8, 8, 4, 3, padding=1),
    "conv_stride_dil": lambda: W.conv2d(2, 2, 11, 11, 3, 3, stride=2, dilation=2, padding=2),
    "conv_groups": lambda: W.conv2d(1, 4, 6, 6, 4, 3, groups=2),
    "conv_relu": lambda: W.conv_relu(1, 3, 8, 8, 4, 3, padding=1),
    "residual_relu": lambda: W.residual(1, 3, 8, 8, 4, 3, padding=1),
    "residual": lambda: W.residual(1, 3, 8, 8, 4, 3, padding=1, relu=False),
    "depthwise": lambda: W.depthwise(1, 3, 8, 8, 3, padding=1),
    "deconv": lambda: W.deconv2d(1, 2, 5, 5, 3, 3, stride=2),
    "max_pool": lambda: W.max_pool2d(1, 2, 9, 9, 3, stride=2, padding=1),
    "pixel_shuffle": lambda: W.pixel_shuffle(1, 4, 4, 4, 2),
    "correlation": lambda: W.correlation(2, 8, 8, 2),
    "sad": lambda: W.motion_estimation(16, 16, block=4, search=2),
    "best_match": lambda: W.motion_estimation(16, 16, block=4, search=2, best=True),
    "integral_image": lambda: W.integral_image(6, 7),
    "separable": lambda: W.separable_filter(8, 9, 3),
    "filter3x3": lambda: W.filter3x3(8, 8),
    "conv_pool_max": lambda: W.conv_pool2d(1, 3, 12, 12, 4, 3, padding=1, pool=2),
    "conv_relu_pool_overlap": lambda: W.conv_pool2d(1, 3, 13, 13, 4, 3, stride=2, pool=3,
                                                    pool_stride=2, relu=True),
    "deconv_threshold": lambda: W.deconv2d(1, 3, 4, 5, 2, 5, stride=3, padding=1, threshold=4,
                                           high=255),
    "alpha_blend": lambda: W.alpha_blend(3, 6, 9, scale=3),
}


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _rounded(golden, shift):
    g = np.asarray(golden, dtype=np.int64)
    return np.clip((g + ((1 << shift) >> 1)) >> shift, -32768, 32767)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_integer_workloads_are_exact(name):
    problem = EXACT[name]()
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    arrays = problem.random_inputs(rng, np.int16, -8, 8)
    golden = _tuple(problem.run(*arrays))
    fixed = _tuple(run(problem, *arrays))
    for g, f in zip(golden, fixed, strict=True):
        assert f.dtype == np.int16 and f.shape == np.shape(g)
        np.testing.assert_array_equal(f, _rounded(g, 0))


@pytest.mark.parametrize("shift", [0, 1, 8, 31])
def test_shift_rounds_half_up_and_saturates(shift):
    problem = W.gemm(6, 7, 40)
    rng = np.random.default_rng(shift)
    arrays = problem.random_inputs(rng, np.int16, -32768, 32768)
    arrays[0][0, :] = -32768
    arrays[1][:, 0] = -32768          # out[0, 0] = 40 * 2**30: wraps in 32 bits
    golden = problem.run(*arrays)
    fixed = run(problem, *arrays, shift=shift)
    wrapped = (np.asarray(golden, np.int64) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(fixed, _rounded(wrapped, shift))
    if shift == 0:
        assert (np.abs(fixed) == 32767).mean() > 0.5 or (fixed == -32768).any()


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("shift", [0, 3])
def test_conv_avg_pool_rounds_the_mean_half_up(relu, shift):
    problem = W.conv_pool2d(2, 2, 9, 9, 3, 3, pool=2, pool_kind="avg", relu=relu)
    rng = np.random.default_rng(shift)
    arrays = problem.random_inputs(rng, np.int16, -64, 64)
    exact = problem.run(*arrays) * 4                   # the sum over the 2 x 2 window
    np.testing.assert_array_equal(run(problem, *arrays, shift=shift),
                                  _rounded(np.rint(exact).astype(np.int64), 2 + shift))


def test_conv_max_pool_with_a_shift_starts_below_every_sum():
    # every convolution output is below -32768: the running maximum must start lower still
    problem = W.conv_pool2d(1, 1, 4, 4, 1, 1, pool=2)
    img = np.full((1, 1, 4, 4), -32768, np.int16)
    img[0, 0, 0, 0] = -32000
    wgt = np.full((1, 1, 1, 1), 32767, np.int16)
    out = run(problem, img, wgt, shift=16)
    np.testing.assert_array_equal(out, _rounded(problem.run(img, wgt), 16))
    assert out[0, 0, 0, 0] == _rounded(-32000 * 32767, 16)


def test_conv_avg_pool_of_three_by_three_is_refused():
    with pytest.raises(IsaError, match="average pooling over 9 values"):
        program_for(W.conv_pool2d(1, 1, 9, 9, 1, 3, pool=3, pool_kind="avg"))


@pytest.mark.parametrize("k, stride, lo, hi", [(3, 1, -8, 8), (5, 2, -32768, 32767), (2, 2, -8, 8),
                                               (3, 3, 0, 4096), (7, 1, -32768, 32767)])
def test_mean_is_within_half_an_lsb_plus_the_reciprocal_error(k, stride, lo, hi):
    problem = W.avg_pool2d(1, 2, 12, 12, k, stride=stride)
    rng = np.random.default_rng(k)
    arrays = problem.random_inputs(rng, np.int16, lo, hi)
    err = np.abs(problem.run(*arrays) - run(problem, *arrays))
    assert err.max() <= 0.5 + 2**-14 * 32768 / 8


@pytest.mark.parametrize("sigma_s, sigma_r", [(1.0, 200.0), (0.7, 50.0), (2.0, 400.0),
                                              (1.0, 5.0)])
def test_bilateral_with_lookup_is_within_8_lsb_of_4095(sigma_s, sigma_r):
    problem = W.bilateral(16, 16, sigma_s=sigma_s, sigma_r=sigma_r)
    rng = np.random.default_rng(int(sigma_r))
    image = rng.integers(0, 4096, (16, 16)).astype(np.int16)
    weights = np.round(problem.tensors[1].value * 4096).astype(np.int16)
    golden = problem.run(image, weights / 4096.0)
    fixed = run(problem, image, weights)
    assert np.abs(golden - fixed).max() <= 8
    assert np.abs(golden - fixed).mean() <= 3


# strategies whose arithmetic (exp, reciprocal, fractional power of a running value) MERIT-z
# programs do not cover yet; docs/isa.md lists them, and program_for refuses them by name
WITHOUT_PROGRAM = {"Softmax", "LRN"}


def test_every_golden_strategy_has_a_program_or_is_refused_by_name():
    import inspect

    from merit import strategies as S
    names = [n for n in S.__all__ if inspect.isclass(getattr(S, n))
             and issubclass(getattr(S, n), S.Strategy) and n != "Strategy"]
    assert {n for n in names if not supported(n)} == WITHOUT_PROGRAM
    for problem in (W.softmax((4, 8), (1,)), W.lrn((1, 8, 4, 4), size=3)):
        name = type(problem.strategy).__name__
        with pytest.raises(IsaError, match=f"no MERIT-z program for strategy {name} "):
            program_for(problem)


@pytest.mark.parametrize("op, shapes", [("relu", [(4, 16)]), ("add", [(4, 16), (4, 16)]),
                                        ("add", [(4, 16), (16,), (4, 1)]),
                                        ("mul", [(4, 16), (16,)]),
                                        ("clip3", [(4, 16), (1,), (1,)]),
                                        ("affine", [(2, 3, 8), (3, 1), (3, 1)])])
@pytest.mark.parametrize("shift", [0, 5])
def test_elementwise_programs_equal_the_golden_model(op, shapes, shift):
    checks = check_golden(W.elementwise(op, shapes), shift=shift)
    assert checks and all(c.held for c in checks), checks


@pytest.mark.parametrize("op, params", [("leaky_relu", {"alpha": 0.1}), ("scale", {"alpha": 2.0}),
                                        ("sigmoid", {})])
def test_elementwise_with_real_parameters_is_refused_by_name(op, params):
    with pytest.raises(IsaError, match=f"no MERIT-z program for Elementwise '{op}': its "
                                       f"parameters are real numbers"):
        program_for(W.elementwise(op, [(4, 16)], **params))


def test_programs_fit_the_hardware():
    for name, make in EXACT.items():
        prog = program_for(make())
        assert len(prog.words) <= 32 and prog.regs <= 8, name
        assert program_for(make()) == prog
        assert disassemble(prog)
    bil = program_for(W.bilateral(8, 8, sigma_s=1.0, sigma_r=10.0))
    assert len(bil.words) <= 32 and bil.rp0 == ("I", "I") and bil.rp1 == ("G",)


def test_operand_ports_name_the_rp_slot_of_every_operand():
    bil = W.bilateral(8, 8, sigma_s=1.0, sigma_r=10.0)
    assert operand_ports(bil) == ((0, 0), (0, 1), (1, 0))
    res = W.residual(1, 2, 5, 5, 2, 3)
    assert operand_ports(res) == ((0, 0), (1, 0), (0, 1))
    for name, make in EXACT.items():
        problem = make()
        prog = program_for(problem)
        ports = operand_ports(problem)
        for op, (port, slot) in zip(problem.operands, ports, strict=True):
            assert (prog.rp0, prog.rp1)[port][slot] == op.tensor, name
        assert sorted(ports) == [(p, k) for p in (0, 1) for k in range(len(prog.reads(p)))]


def test_run_errors():
    problem = W.gemm(2, 2, 2)
    a = np.zeros((2, 2), np.int16)
    with pytest.raises(IsaError, match=r"tensor 'A' must be int16, not float32"):
        run(problem, a.astype(np.float32), a)
    with pytest.raises(IsaError, match=r"problem 'gemm' takes 2 arrays \(A, B\), got 1"):
        run(problem, a)
    with pytest.raises(IsaError, match=r"shift must be an integer in 0..31, not 32"):
        program_for(problem, shift=32)


def test_supported_names_the_elementwise_operations_with_a_program():
    from merit.strategies import Elementwise
    assert supported(Elementwise("relu")) and supported(Elementwise("add", 3))
    assert not supported(Elementwise("sigmoid"))
    assert not supported(Elementwise("scale", alpha=0.5))
