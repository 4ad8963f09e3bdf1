"""The MERIT paper's utilization tables (Tables VIII and IX) as MERIT problems.

Each :class:`Row` names the paper's figure, the full layer (as one or more problems: a grouped
convolution runs once per group, a row that covers several layers lists them) and the **slice**
that the Verilator model simulates (SPEC §5: layers too large to simulate whole are measured on a
contiguous slice, and the table says so). ``verif/measure_top.py`` simulates the slices on
MERIT-z (4 TAUs x 32 lanes, 8 bytes per DRAM cycle) and ``merit.perf`` predicts the full layers.

Slices keep what sets the utilization of a layer: the kernel size, stride, dilation, the tile shape
the mapper chooses (so the same lane occupancy at the edges) and the operations per byte of DRAM
traffic. They cut the output (rows, columns, channels) and, for deep layers, the input channels
(the accumulation length): per parallel tile, compute and input traffic both scale with the
channels, so the slice is slightly pessimistic (its output writes and tile turnarounds weigh more).

Rows follow the paper; our rows are the convolutions alone: the paper's "CONV+Pool" rows fuse the
pooling into the convolution, which our compiler does not (pooling is its own kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import workloads as W

__all__ = ["Row", "ROWS", "row"]


@dataclass(frozen=True)
class Row:
    """One row of Table VIII or IX.

    Attributes
    ----------
    name : str
        Our identifier (``alexnet_conv1``).
    table : str
        ``"VIII"`` or ``"IX"``.
    label : str
        The paper's row label.
    paper : float
        The paper's utilization.
    what : str
        The full layer in words.
    full : callable
        ``full() -> list of (Problem, repeat)``: the layer (``repeat`` runs of each problem).
    slice : callable
        ``slice() -> Problem``: what the Verilator model simulates.
    slice_what : str
        The slice in words (what was cut).
    """

    name: str
    table: str
    label: str
    paper: float
    what: str
    full: object
    slice: object
    slice_what: str


def _vgg(layers):
    """VGG-16 convolutions ``(c, hw, m)``, 3x3, padding 1, batch 1."""
    return lambda: [(W.conv2d(1, c, hw, hw, m, 3, padding=1), 1) for c, hw, m in layers]


def _fc(layers, batch=32):
    return lambda: [(W.fc(batch, i, o), 1) for i, o in layers]


ROWS = (
    # ---- Table VIII: AlexNet, VGG-16 (3.2 GB/s DRAM = 8 B/cycle at 400 MHz) ----
    Row("alexnet_conv1", "VIII", "AlexNet CONV1+Pool2", 0.88,
        "conv 11x11 stride 4, 3 -> 96 channels, 227x227 -> 55x55",
        lambda: [(W.conv2d(1, 3, 227, 227, 96, 11, stride=4), 1)],
        lambda: W.conv2d(1, 3, 71, 135, 32, 11, stride=4),
        "output rows 0-15, columns 0-31, channels 0-31 (input 71x135)"),
    Row("alexnet_conv2", "VIII", "AlexNet CONV2+Pool2", 0.95,
        "conv 5x5 pad 2, 96 -> 256 channels in 2 groups, 27x27 (one kernel per group)",
        lambda: [(W.conv2d(1, 48, 27, 27, 128, 5, padding=2), 2)],
        lambda: W.conv2d(1, 16, 27, 27, 16, 5, padding=2),
        "one group, input channels 0-15, output channels 0-15, all 27x27"),
    Row("alexnet_conv3", "VIII", "AlexNet CONV3", 0.77,
        "conv 3x3 pad 1, 256 -> 384 channels, 13x13",
        lambda: [(W.conv2d(1, 256, 13, 13, 384, 3, padding=1), 1)],
        lambda: W.conv2d(1, 16, 13, 13, 128, 3, padding=1),
        "input channels 0-15, output channels 0-127, all 13x13"),
    Row("alexnet_conv4", "VIII", "AlexNet CONV4", 0.72,
        "conv 3x3 pad 1, 384 -> 384 channels in 2 groups, 13x13 (one kernel per group)",
        lambda: [(W.conv2d(1, 192, 13, 13, 192, 3, padding=1), 2)],
        lambda: W.conv2d(1, 16, 13, 13, 128, 3, padding=1),
        "as CONV3's slice (one group, input channels 0-15, output channels 0-127)"),
    Row("alexnet_conv5", "VIII", "AlexNet CONV5", 0.72,
        "conv 3x3 pad 1, 384 -> 256 channels in 2 groups, 13x13 (one kernel per group)",
        lambda: [(W.conv2d(1, 192, 13, 13, 128, 3, padding=1), 2)],
        lambda: W.conv2d(1, 16, 13, 13, 128, 3, padding=1),
        "as CONV3's slice (one group, input channels 0-15, output channels 0-127)"),
    Row("alexnet_fc", "VIII", "AlexNet FC1-3 (batch=32)", 0.92,
        "FC 9216 -> 4096 -> 4096 -> 1000, batch 32",
        _fc([(9216, 4096), (4096, 4096), (4096, 1000)]),
        lambda: W.fc(32, 256, 512),
        "batch 32, inputs 0-255, outputs 0-511"),
    Row("vgg16_conv1", "VIII", "VGG-16D CONV1", 0.89,
        "conv 3x3 pad 1, 3 -> 64 channels, 224x224",
        _vgg([(3, 224, 64)]),
        lambda: W.conv2d(1, 3, 16, 64, 64, 3, padding=1),
        "output rows 0-15, columns 0-63, all 64 channels"),
    Row("vgg16_conv2_4", "VIII", "VGG-16D CONV2-4+Pool2", 0.95,
        "conv 3x3 pad 1: 64 -> 64 at 224x224, 64 -> 128 and 128 -> 128 at 112x112",
        _vgg([(64, 224, 64), (64, 112, 128), (128, 112, 128)]),
        lambda: W.conv2d(1, 16, 16, 64, 32, 3, padding=1),
        "CONV4 (128 -> 128, 112x112): input channels 0-15, output rows 0-15, columns 0-63, "
        "channels 0-31"),
    Row("vgg16_conv5_13", "VIII", "VGG-16D CONV5-13+Pool2", 0.83,
        "conv 3x3 pad 1: 128 -> 256 ... 512 -> 512, 56x56 to 14x14 (9 layers)",
        _vgg([(128, 56, 256), (256, 56, 256), (256, 56, 256), (256, 28, 512), (512, 28, 512),
              (512, 28, 512), (512, 14, 512), (512, 14, 512), (512, 14, 512)]),
        lambda: W.conv2d(1, 16, 14, 14, 128, 3, padding=1),
        "CONV11-13 (512 -> 512, 14x14): input channels 0-15, output channels 0-127"),
    Row("vgg16_fc", "VIII", "VGG-16D FC1-3 (batch=32)", 0.92,
        "FC 25088 -> 4096 -> 4096 -> 1000, batch 32",
        _fc([(25088, 4096), (4096, 4096), (4096, 1000)]),
        lambda: W.fc(32, 256, 512),
        "as AlexNet FC's slice (batch 32, inputs 0-255, outputs 0-511)"),
    # ---- Table IX: layers from vision papers ----
    Row("dilated", "IX", "Dilated [13]", 0.95,
        "conv 3x3 dilation 2, 32 -> 32 channels, output 64x64x32",
        lambda: [(W.conv2d(1, 32, 64, 64, 32, 3, dilation=2, padding=2), 1)],
        lambda: W.conv2d(1, 16, 16, 64, 32, 3, dilation=2, padding=2),
        "input channels 0-15, output rows 0-15 (of 64), all columns and channels"),
    Row("pixel_shuffle", "IX", "Pixel Shuffle (ESPCN) [18]", 0.96,
        "ESPCN sub-pixel conv 3x3, 32 -> 128 channels at 16x16, shuffled to 32x32x32",
        lambda: [(W.subpixel_conv(1, 32, 16, 16, 32, 3, 2), 1)],
        lambda: W.subpixel_conv(1, 16, 16, 16, 32, 3, 2),
        "input channels 0-15 (of 32), the whole 32x32x32 output"),
    Row("correlation", "IX", "Correlation (FlowNet) [16]", 0.74,
        "FlowNet correlation, 64 channels, 64x64, 11x11 displacements",
        lambda: [(W.correlation(64, 64, 64, 5), 1)],
        lambda: W.correlation(64, 4, 64, 5),
        "output rows 0-3 (of 64): the first tile row, all columns and displacements"),
    Row("depthwise", "IX", "Depthwise (MobileNet) [17]", 0.63,
        "depthwise 3x3 pad 1, 32 channels, 64x64",
        lambda: [(W.depthwise(1, 32, 64, 64, 3, padding=1), 1)],
        lambda: W.depthwise(1, 32, 64, 64, 3, padding=1),
        "whole layer"),
    Row("gemm", "IX", "GEMM (FC, RNN)", 0.92,
        "GEMM 256x128 output, k = 256",
        lambda: [(W.gemm(256, 128, 256), 1)],
        lambda: W.gemm(256, 128, 256),
        "whole layer"),
    Row("motion_estimation", "IX", "Motion estimation", 0.74,
        "full-search SAD, 8x8 blocks, +-7, 720p (1280x720)",
        lambda: [(W.motion_estimation(720, 1280, block=8, search=7), 1)],
        lambda: W.motion_estimation(64, 256, block=8, search=7),
        "a 256x64 region: 8 block rows, 32 block columns (of 90 x 160)"),
)


def row(name):
    """The row called ``name``; KeyError listing the rows otherwise."""
    for r in ROWS:
        if r.name == name:
            return r
    raise KeyError(f"no paper row {name!r}; rows: {', '.join(r.name for r in ROWS)}")
