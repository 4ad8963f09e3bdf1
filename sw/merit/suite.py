"""The benchmark workloads of MERIT-z: moderate slices of the paper's layers.

:data:`WORKLOADS` names the problems that ``merit sim NAME`` runs, that ``python -m bench.tau``
measures on one TAU (``docs/results/tau.md``) and that :mod:`merit.perf` is calibrated on. Each has
at least 8 full tile rows of a 32-lane TAU (``docs/perf.md``).
"""

from merit import workloads as W

__all__ = ["WORKLOADS"]

#: name -> (problem factory, what it is)
WORKLOADS = {
    "conv3x3_c16": (lambda: W.conv2d(1, 16, 16, 32, 16, 3, padding=1),
                    "conv 3x3, 16 -> 16 channels, 16x32, pad 1"),
    "conv3x3_stride2": (lambda: W.conv2d(1, 16, 33, 33, 16, 3, stride=2, padding=1),
                        "conv 3x3 stride 2, 16 -> 16 channels, 33x33 -> 17x17"),
    "conv3x3_dilated": (lambda: W.conv2d(1, 16, 20, 36, 16, 3, dilation=2, padding=2),
                        "dilated conv 3x3 (dilation 2), 16 -> 16 channels, 20x36"),
    "depthwise3x3": (lambda: W.depthwise(1, 32, 16, 32, 3, padding=1),
                     "depthwise 3x3, 32 channels, 16x32"),
    "gemm": (lambda: W.gemm(64, 128, 64), "GEMM 64x128, k = 64"),
    "max_pool2x2": (lambda: W.max_pool2d(1, 16, 32, 32, 2), "max pool 2x2, 16 channels, 32x32"),
    "motion_sad": (lambda: W.motion_estimation(32, 32, block=8, search=4),
                   "full-search SAD, 8x8 blocks, +-4, 32x32 frame"),
    "bilateral": (lambda: W.bilateral(24, 32, sigma_s=2.0, sigma_r=20.0, radius=2),
                  "bilateral 5x5 (lookup), 24x32"),
    "correlation": (lambda: W.correlation(16, 16, 32, 3),
                    "FlowNet correlation, 16 channels, 16x32, displacements 7x7"),
}
