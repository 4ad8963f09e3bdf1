"""Small instances of every workload, shared by the GPU tests (source checks and device runs)."""

import pytest

from merit import Index, Problem, Transform
from merit import strategies as S
from merit import workloads as W
from merit.gpu.fixed import random_inputs


def device_module():
    """``(cupy, pytestmark)`` for a module of device tests: the module is skipped without CuPy,
    its tests (marked ``gpu``) without a CUDA device."""
    cp = pytest.importorskip("cupy")
    try:
        gpu = cp.cuda.runtime.getDeviceCount() > 0
    except cp.cuda.runtime.CUDARuntimeError:
        gpu = False
    return cp, [pytest.mark.gpu, pytest.mark.skipif(not gpu, reason="no CUDA device")]


def fake_runtime(monkeypatch, runtime, ms, device="Fake GPU sm_80"):
    """Patch ``runtime`` (``merit.gpu.runtime``) so that the autotuner (``merit.gpu._choose``)
    runs without a GPU: nothing is compiled or launched, every tile takes ``ms(tile)``
    milliseconds, by one launch or by a batch timer, on ``device``. Returns the list of the
    tiles timed one launch at a time, in order."""
    timed = []

    def time_launch(tile, **kw):
        timed.append(tile)
        return ms(tile)

    monkeypatch.setattr(runtime, "device_key", lambda: (0, device))
    monkeypatch.setattr(runtime, "compiled", lambda spec, tile: None)
    monkeypatch.setattr(runtime, "launcher", lambda spec, tile, inputs, out: tile)
    monkeypatch.setattr(runtime, "time_launch", time_launch)
    monkeypatch.setattr(runtime, "batch_timer", lambda tile, min_ms: lambda: ms(tile))
    return timed


def _total():
    """A whole reduction: no parallel index at all."""
    return Problem("total", S.Sum(), (), (64, 32),
                   [Transform((64, 32), p=[], a=[Index(0), Index(1)], name="x")])


def _outer_level_empty():
    """Two levels where the outer one holds no index (its pre/post run once)."""
    return Problem("sep_empty_outer", S.SeparableDot(), (20, 24), (5,),
                   [Transform((20, 24), p=[Index(0), Index(1)], a=[Index(1, 1, -2)], name="I"),
                    Transform((5,), p=[None, None], a=[Index(0)], name="h"),
                    Transform((1,), p=[None, None], a=[None], name="v")], levels=(0, 1))


CASES = {
    "gemm": lambda: W.gemm(64, 48, 40),
    "fc": lambda: W.fc(8, 30, 20),
    "conv": lambda: W.conv2d(2, 3, 17, 19, 5, 3, padding=1),
    "conv_s2_dil_groups": lambda: W.conv2d(2, 4, 16, 16, 6, 3, stride=2, padding=1, dilation=2,
                                           groups=2),
    "conv_relu": lambda: W.conv_relu(2, 3, 12, 12, 4, 3),
    "residual": lambda: W.residual(2, 3, 12, 12, 4, 3, padding=1),
    "depthwise": lambda: W.depthwise(2, 4, 12, 12, 3, padding=1),
    "deconv": lambda: W.deconv2d(2, 3, 7, 7, 4, 3, stride=2, padding=1),
    "max_pool": lambda: W.max_pool2d(2, 3, 13, 13, 3, stride=2, padding=1),
    "avg_pool": lambda: W.avg_pool2d(2, 3, 12, 12, 2),
    "pixel_shuffle": lambda: W.pixel_shuffle(2, 3, 5, 6, 2),
    "correlation": lambda: W.correlation(8, 12, 12, 2),
    "motion": lambda: W.motion_estimation(32, 48, block=8, search=3),
    "motion_best": lambda: W.motion_estimation(32, 48, block=8, search=3, best=True),
    "bilateral": lambda: W.bilateral(20, 24, sigma_s=1.5, sigma_r=0.5),
    "integral": lambda: W.integral_image(12, 10),
    "separable": lambda: W.separable_filter(20, 24, 5),
    "filter3x3": lambda: W.filter3x3(20, 24),
    "ece408": lambda: W.ece408(4, 1, 6, 12, 12, 5),
    "total": _total,
    "outer_level_empty": _outer_level_empty,
}

#: Cases that also run in int32 (fixed point); the others use float-only strategy bodies.
INT_CASES = ("gemm", "conv", "max_pool", "motion", "motion_best", "separable", "integral")

#: Dot-like cases the tensor cores run (rows >= 16, columns >= 8): every kind of convolution,
#: GEMM and FC, ragged boxes, a reduction whose chunk leaves a partial last tile (K = 37).
MMA_CASES = {
    "gemm": lambda: W.gemm(64, 48, 40),
    "gemm_odd": lambda: W.gemm(50, 40, 37),
    "fc": lambda: W.fc(8, 30, 20),
    "conv": lambda: W.conv2d(2, 3, 17, 19, 16, 3, padding=1),
    "conv_s2_dil_groups": lambda: W.conv2d(2, 8, 16, 16, 32, 3, stride=2, padding=1,
                                           dilation=2, groups=2),
    "conv_relu": lambda: W.conv_relu(2, 5, 12, 12, 12, 3),
    "residual": lambda: W.residual(2, 3, 12, 12, 8, 3, padding=1),
    "deconv": lambda: W.deconv2d(2, 3, 7, 7, 8, 3, stride=2, padding=1),
    "conv_1x1": lambda: W.conv2d(3, 24, 9, 11, 40, 1),
    "ece408": lambda: W.ece408(4, 1, 10, 12, 12, 5),
    "conv_c8": lambda: W.conv2d(2, 8, 12, 12, 16, 3, padding=1),
}

#: Workloads with a MERIT-z program, run in fixed point (int16) bit-exact with the ISA.
FIXED_CASES = {
    **{k: CASES[k] for k in ("gemm", "fc", "conv", "conv_s2_dil_groups", "conv_relu",
                             "residual", "depthwise", "deconv", "max_pool", "avg_pool",
                             "correlation", "motion", "motion_best", "separable", "filter3x3",
                             "integral", "ece408", "pixel_shuffle")},
    "bilateral": lambda: W.bilateral(12, 10, sigma_s=1.5, sigma_r=0.25),
}



def fixed_inputs(problem, rng, lo=-32768, hi=32768):
    """int16 inputs for a fixed-point run (see merit.gpu.fixed.random_inputs)."""
    return random_inputs(problem, rng, lo, hi)
