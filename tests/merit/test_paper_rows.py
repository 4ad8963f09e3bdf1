"""The paper's table rows (merit.paper): every slice and full layer maps onto MERIT-z."""

import numpy as np
import pytest

from merit.compile import compile_problem
from merit.paper import ROWS, row


def test_rows_are_the_papers():
    viii = [r for r in ROWS if r.table == "VIII"]
    ix = [r for r in ROWS if r.table == "IX"]
    assert len(viii) == 16 and len(ix) == 6
    assert [r.label for r in viii[10:]] == [
        "Saliency CONV1+Pool3", "Saliency CONV2+Pool3", "Saliency CONV3+Pool3",
        "Saliency DECONV4", "Saliency DECONV5+threshold", "Saliency Alpha blending"]
    assert row("depthwise").paper == 0.63 and row("gemm").paper == 0.92
    assert len({r.name for r in ROWS}) == len(ROWS)
    with pytest.raises(KeyError, match="no paper row 'nope'; rows: alexnet_conv1"):
        row("nope")


#: The full layers compiled without the compiler's search over swapped operands and pooling
#: windows inside the channel passes (each candidate predicted whole: minutes on the deep fused
#: layers); ``make regress`` compiles them as ``merit plan`` and ``bench.top`` do.
LEAN = dict(swap=False, window=False)


@pytest.mark.parametrize("search", [pytest.param(LEAN, id="lean"),
                                    pytest.param({}, id="search", marks=pytest.mark.slow)])
@pytest.mark.parametrize("r", ROWS, ids=lambda r: r.name)
def test_slice_and_full_layer_compile_for_four_taus(r, search):
    kernels = [compile_problem(p, lanes=32) for p in r.slice_problems()]
    # docs/perf.md: a slice keeps several tiles per TAU (4 TAUs)
    assert sum(len(k.tiles) for k in kernels) >= 16, [len(k.tiles) for k in kernels]
    useful = 0
    for problem, repeat in r.full():
        assert repeat >= 1
        full = compile_problem(problem, lanes=32, **search)
        useful += full.useful_ops
        if not r.split:
            assert full.useful_ops >= kernels[0].useful_ops or r.slice_what == "whole layer"
    assert useful >= sum(k.useful_ops for k in kernels)
    assert all(p.ops is not None for p in r.slice_problems())
    assert all(p.ops is not None for p, _ in r.full())
    assert r.split == (len(r.slice_problems()) > 1)
    if "+Pool" in r.label:         # fused: the pooling window is the outer level
        assert all(p.strategy.levels == 2 for p, _ in r.full() if p.name == "conv_pool2d")
        assert any(p.name == "conv_pool2d" for p, _ in r.full())
    if r.slice_what == "whole layer":
        (problem, repeat), = r.full()
        assert repeat == 1 and problem.p_shape == r.slice_problems()[0].p_shape


def test_a_slice_is_a_part_of_its_layer():
    """The slice of a conv row computes what the full layer computes on that part."""
    r = row("dilated")
    (full, _), = r.full()
    part = r.slice()
    rng = np.random.default_rng(0)
    img = rng.standard_normal((1, 32, 64, 64))
    w = rng.standard_normal((32, 32, 3, 3))
    whole = full.run(img, w)
    # input channels 0-15 and output rows 0-15: the partial sum over the first 16 channels
    cut = part.run(img[:, :16, :16], w[:, :16])
    ref = full.run(np.concatenate([img[:, :16], np.zeros_like(img[:, 16:])], axis=1), w)
    np.testing.assert_allclose(cut[:, :, :14], ref[:, :, :14], rtol=1e-9, atol=1e-9)
    assert whole.shape == (1, 32, 64, 64)


@pytest.mark.parametrize("r", [r for r in ROWS if r.layer is not None], ids=lambda r: r.name)
def test_a_rows_layer_is_one_of_its_layers_and_its_slice_is_cut_from_it(r):
    """``Row.layer``, run whole in place of the slice of a row of several layers, is one of
    the row's layers, and the slice is a part of it: the same kernel and strategy, fewer
    channels or outputs."""
    assert len(r.full()) > 1 and not r.split and r.layer_what
    (layer, repeat), = r.layer()
    assert repeat == 1
    assert any((p.name, p.p_shape, p.a_shape) == (layer.name, layer.p_shape, layer.a_shape)
               for p, _ in r.full())
    (cut,) = r.slice_problems()
    assert cut.name == layer.name and repr(cut.strategy) == repr(layer.strategy)
    assert all(c <= w for c, w in zip(cut.p_shape + cut.a_shape,
                                      layer.p_shape + layer.a_shape, strict=True))
    assert cut.a_shape[-2:] == layer.a_shape[-2:]     # the same kernel taps
    assert r.whole()[1] == "layer"
