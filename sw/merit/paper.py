"""The MERIT paper's utilization tables (Tables VIII and IX) as MERIT problems.

Each :class:`Row` names the paper's figure, the full layer (as one or more problems: a grouped
convolution runs once per group, a row that covers several layers lists them) and the **slice**
that the Verilator model simulates (``docs/perf.md``: layers too large to simulate whole are
measured on a contiguous slice, and the table says so). ``bench/top.py`` simulates the slices on
MERIT-z (4 TAUs x 32 lanes, 8 bytes per DRAM cycle) and ``merit.perf`` predicts the full layers.
A row that is one layer may be simulated whole instead of its slice; a row of several layers
names the one of them that may (``Row.layer``: the layer its slice is cut from).

Slices keep what sets the utilization of a layer: the kernel size, stride, dilation, the tile shape
the mapper chooses (so the same lane occupancy at the edges) and the operations per byte of DRAM
traffic. They cut the output (rows, columns, channels) and, for deep layers, the input channels
(the accumulation length): per parallel tile, compute and input traffic both scale with the
channels, so the slice is slightly pessimistic (its output writes and tile turnarounds weigh more).

The "CONV+Pool" rows are one fused kernel each (:func:`merit.workloads.conv_pool2d`: the pooling
window is the outer accumulation level, the MACs the inner one, §III-B). We read the paper's
"PoolK" as K x K max pooling with stride K (VGG-16's pools are 2 x 2 / 2; AlexNet's own are
3 x 3 / 2, overlapping, which a fused kernel would compute 2.25 times over: the label says 2).

**Saliency [22]** (Wu, Lin, Tu, Chien, "Hardware-efficient two-stage saliency detection", SiPS
2018): we found no public description of its layer shapes, so the six rows use this network,
every size an assumption of ours that keeps the paper's row names: a 3 x 216 x 324 image; CONV1-3
3 x 3 convolutions (padding 1) to 32, 64 and 128 channels, each fused with 3 x 3 / 3 max pooling
(216 x 324 -> 72 x 108 -> 24 x 36 -> 8 x 12); DECONV4 128 -> 64 and DECONV5 64 -> 1 transposed
convolutions (kernel 5, stride 3, padding 1: 8 x 12 -> 24 x 36 -> 72 x 108), DECONV5 thresholded
into a binary matte (:class:`~merit.strategies.DotThreshold`, threshold 0, 32767 inside); alpha
blending of the 3 x 216 x 324 image over a background with that matte, each matte pixel covering
3 x 3 image pixels (:func:`~merit.workloads.alpha_blend`).

DECONV4 runs as the four phase-group problems of :func:`~merit.workloads.deconv2d_phases` (exact
taps and outputs, each writing its strided part of the output; ALU-bound, the split saves the
nonexistent and cropped taps), DECONV5 as the one polyphase problem of
:func:`~merit.workloads.deconv2d` (DRAM-bound with one output channel: the four problems would read
its 64-channel input four times; ``docs/decisions.md``).

Each problem carries its standard arithmetic count (``problem.ops``: MACs as frameworks count
them, plus the pooling's compares), from which the tables' utilization is computed.
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
        ``slice() -> Problem``, or a tuple of problems run one after the other (a transposed
        convolution split into its phase groups, :func:`merit.workloads.deconv2d_phases`):
        what the Verilator model simulates.
    slice_what : str
        The slice in words (what was cut).
    split : bool
        The layer is one layer run as several problems (``full`` and ``slice`` list them), not
        several layers: it may be simulated whole.
    layer : callable or None
        A row of several layers: ``layer() -> list of (Problem, repeat)``, the one of its layers
        that may be simulated whole in place of the slice (``bench.top --whole-under``), the
        layer the slice is cut from.
    layer_what : str
        That layer in words.
    """

    name: str
    table: str
    label: str
    paper: float
    what: str
    full: object
    slice: object
    slice_what: str
    split: bool = False
    layer: object = None
    layer_what: str = ""

    def slice_problems(self):
        """The slice as a tuple of problems (one for most rows)."""
        part = self.slice()
        return tuple(part) if isinstance(part, (tuple, list)) else (part,)

    def whole(self):
        """The ``(Problem, repeat)``s that may be simulated whole instead of the slice, and
        ``"full"`` (the row is one layer: one problem, its groups, or a split layer) or
        ``"layer"`` (one layer of a row of several, :attr:`layer`); ``(None, None)`` when there
        is none."""
        full = self.full()
        if len(full) == 1 or self.split:
            return full, "full"
        if self.layer is not None:
            return self.layer(), "layer"
        return None, None

    def ran(self, part):
        """The tuple of problems a run of ``part`` simulates one after the other: ``"full"``
        the whole layer, ``"layer"`` the row's :attr:`layer` (their problems once each: a layer
        of groups runs one group), anything else the slice."""
        if part == "full":
            return tuple(p for p, _ in self.full())
        if part == "layer":
            return tuple(p for p, _ in self.layer())
        return self.slice_problems()


def _phases(problems):
    """A layer split into problems run once each (``Row.full``)."""
    return [(p, 1) for p in problems]


def _vgg(layers):
    """VGG-16 convolutions ``(c, hw, m)``, 3x3, padding 1, batch 1."""
    return lambda: [(W.conv2d(1, c, hw, hw, m, 3, padding=1), 1) for c, hw, m in layers]


def _vgg_pool(layers):
    """VGG-16 convolutions ``(c, hw, m, pooled)``, 3x3, padding 1; ``pooled``: fused with the
    2 x 2 / 2 max pooling that follows the layer."""
    return lambda: [(W.conv_pool2d(1, c, hw, hw, m, 3, padding=1, pool=2) if pooled
                     else W.conv2d(1, c, hw, hw, m, 3, padding=1), 1)
                    for c, hw, m, pooled in layers]


#: The saliency network's image (channels, height, width); see the module docstring.
SALIENCY_IMAGE = (3, 216, 324)


def _fc(layers, batch=32):
    return lambda: [(W.fc(batch, i, o), 1) for i, o in layers]


ROWS = (
    # ---- Table VIII: AlexNet, VGG-16 (3.2 GB/s DRAM = 8 B/cycle at 400 MHz) ----
    Row("alexnet_conv1", "VIII", "AlexNet CONV1+Pool2", 0.88,
        "conv 11x11 stride 4, 3 -> 96 channels, 227x227 -> 55x55, fused 2x2/2 max pool -> 27x27",
        lambda: [(W.conv_pool2d(1, 3, 227, 227, 96, 11, stride=4, pool=2), 1)],
        lambda: W.conv_pool2d(1, 3, 71, 263, 32, 11, stride=4, pool=2),
        "pooled rows 0-7, columns 0-31, channels 0-31 (conv rows 0-15, columns 0-63; input "
        "71x263)"),
    Row("alexnet_conv2", "VIII", "AlexNet CONV2+Pool2", 0.95,
        "conv 5x5 pad 2, 96 -> 256 channels in 2 groups, 27x27, fused 2x2/2 max pool -> 13x13 "
        "(one kernel per group)",
        lambda: [(W.conv_pool2d(1, 48, 27, 27, 128, 5, padding=2, pool=2), 2)],
        lambda: W.conv_pool2d(1, 16, 27, 27, 64, 5, padding=2, pool=2),
        "one group, input channels 0-15, output channels 0-63, all 13x13 pooled outputs"),
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
        "conv 3x3 pad 1: 64 -> 64 at 224x224 + pool, 64 -> 128 and 128 -> 128 at 112x112 + pool "
        "(2x2/2 max pools fused)",
        _vgg_pool([(64, 224, 64, True), (64, 112, 128, False), (128, 112, 128, True)]),
        lambda: W.conv_pool2d(1, 16, 16, 64, 32, 3, padding=1, pool=2),
        "CONV4+Pool (128 -> 128, 112x112): input channels 0-15, conv rows 0-15, columns 0-63 "
        "(pooled 8x32), channels 0-31",
        layer=_vgg_pool([(128, 112, 128, True)]),
        layer_what="CONV4+Pool (128 -> 128, 112x112, pooled 56x56)"),
    Row("vgg16_conv5_13", "VIII", "VGG-16D CONV5-13+Pool2", 0.83,
        "conv 3x3 pad 1: 128 -> 256 ... 512 -> 512, 56x56 to 14x14 (9 layers; the 2x2/2 max "
        "pools after CONV7, 10 and 13 fused)",
        _vgg_pool([(128, 56, 256, False), (256, 56, 256, False), (256, 56, 256, True),
                   (256, 28, 512, False), (512, 28, 512, False), (512, 28, 512, True),
                   (512, 14, 512, False), (512, 14, 512, False), (512, 14, 512, True)]),
        lambda: W.conv2d(1, 16, 14, 14, 128, 3, padding=1),
        "CONV11-12 (512 -> 512, 14x14, no pool): input channels 0-15, output channels 0-127",
        layer=_vgg([(512, 14, 512)]),
        layer_what="CONV11 (512 -> 512, 14x14, no pool; CONV12 the same layer)"),
    Row("vgg16_fc", "VIII", "VGG-16D FC1-3 (batch=32)", 0.92,
        "FC 25088 -> 4096 -> 4096 -> 1000, batch 32",
        _fc([(25088, 4096), (4096, 4096), (4096, 1000)]),
        lambda: W.fc(32, 256, 512),
        "as AlexNet FC's slice (batch 32, inputs 0-255, outputs 0-511)"),
    # ---- Table VIII: saliency [22] (shapes assumed: module docstring) ----
    Row("saliency_conv1", "VIII", "Saliency CONV1+Pool3", 0.72,
        "conv 3x3 pad 1, 3 -> 32 channels, 216x324, fused 3x3/3 max pool -> 72x108",
        lambda: [(W.conv_pool2d(1, 3, 216, 324, 32, 3, padding=1, pool=3), 1)],
        lambda: W.conv_pool2d(1, 3, 24, 96, 32, 3, padding=1, pool=3),
        "conv rows 0-23, columns 0-95 (pooled 8x32), all 32 channels"),
    Row("saliency_conv2", "VIII", "Saliency CONV2+Pool3", 0.82,
        "conv 3x3 pad 1, 32 -> 64 channels, 72x108, fused 3x3/3 max pool -> 24x36",
        lambda: [(W.conv_pool2d(1, 32, 72, 108, 64, 3, padding=1, pool=3), 1)],
        lambda: W.conv_pool2d(1, 16, 24, 48, 64, 3, padding=1, pool=3),
        "input channels 0-15, conv rows 0-23, columns 0-47 (pooled 8x16), all 64 channels"),
    Row("saliency_conv3", "VIII", "Saliency CONV3+Pool3", 0.65,
        "conv 3x3 pad 1, 64 -> 128 channels, 24x36, fused 3x3/3 max pool -> 8x12",
        lambda: [(W.conv_pool2d(1, 64, 24, 36, 128, 3, padding=1, pool=3), 1)],
        lambda: W.conv_pool2d(1, 16, 24, 36, 64, 3, padding=1, pool=3),
        "input channels 0-15, output channels 0-63, all 8x12 pooled outputs"),
    Row("saliency_deconv4", "VIII", "Saliency DECONV4", 0.87,
        "deconv 5x5 stride 3 pad 1, 128 -> 64 channels, 8x12 -> 24x36 (4 phase-group problems "
        "with exact taps)",
        lambda: _phases(W.deconv2d_phases(1, 128, 8, 12, 64, 5, stride=3, padding=1)),
        lambda: W.deconv2d_phases(1, 16, 8, 12, 32, 5, stride=3, padding=1),
        "input channels 0-15, output channels 0-31, all 24x36", split=True),
    Row("saliency_deconv5", "VIII", "Saliency DECONV5+threshold", 0.71,
        "deconv 5x5 stride 3 pad 1, 64 -> 1 channel, 24x36 -> 72x108, thresholded to a matte",
        lambda: [(W.deconv2d(1, 64, 24, 36, 1, 5, stride=3, padding=1, threshold=0,
                             high=32767), 1)],
        lambda: W.deconv2d(1, 16, 24, 36, 1, 5, stride=3, padding=1, threshold=0, high=32767),
        "input channels 0-15 (of 64), the whole 72x108 output"),
    Row("saliency_alpha", "VIII", "Saliency Alpha blending", 0.07,
        "alpha blending, 3 x 216 x 324 image over a background, matte 72x108 (3x3 pixels each)",
        lambda: [(W.alpha_blend(3, 216, 324, scale=3), 1)],
        lambda: W.alpha_blend(3, 72, 324, scale=3),
        "image rows 0-71 (of 216), all columns and channels"),
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
