"""How ``bench.gpu`` splits and describes a run, without a GPU: each row's data seeded by its key,
the header of a run measured in several calls or stopped with rows left, a vision row whose 5x
target lies under its floor."""

import numpy as np
import pytest

from bench.gpu import _calls, _five_note, _verdict, row_rng


def test_row_data_depend_on_the_key_alone():
    a = row_rng("gemm").standard_normal(4)
    row_rng("conv_3+1").standard_normal(100)          # another row drawn in between
    assert np.array_equal(row_rng("gemm").standard_normal(4), a)
    assert not np.array_equal(row_rng("gemm@fp16").standard_normal(4), a)


def test_header_names_each_call_and_the_rows_left():
    one = {"date": "d1", "device": "NVIDIA H200 sm_90", "wall_s": 500.0, "rows": 40, "jobs": 12}
    assert _calls({"calls": [one]}) == []             # one call: the usual header alone
    two = dict(one, date="d2", wall_s=120.4, rows=29)
    lines = _calls({"calls": [one, two]})
    assert len(lines) == 1 and "2 calls" in lines[0] and "--resume" in lines[0]
    assert "d1, 40 rows, 500 s" in lines[0] and "d2, 29 rows, 120 s" in lines[0]
    left = _calls({"calls": [one], "pending": ["rand4_gemm_odd", "q_conv"]})
    assert len(left) == 1 and "2 rows not yet measured (rand4_gemm_odd, q_conv)" in left[0]


def test_a_5x_target_under_the_floor_is_named_unreachable():
    row = {"key": "filter3x3", "target": "vision", "ours_ms": 0.0092, "floor_ms": 0.0079,
           "peers_ms": {"a": 0.0356, "b": 0.0360}}
    met, text = _verdict(row)
    assert not met
    assert ">= 5x best peer: NO (5x is 0.0071 ms, under the floor 0.0079: not reachable)" in text
    assert text.endswith("within 3x of floor: yes")
    (blank, line), = [_five_note([row, dict(row, key="sep", floor_ms=0.0060)])]
    assert blank == "" and "filter3x3 (best peer 0.0356 ms, 5x 0.0071" in line
    assert "sep" not in line                          # 5x over its floor: reachable
    reach = dict(row, floor_ms=0.0060)
    assert "not reachable" not in _verdict(reach)[1] and _five_note([reach]) == []
    gemm = {"target": "gemm", "ours_ms": 1.0, "peers_ms": {"a": 1.1}, "floor_ms": 0.9}
    assert _verdict(gemm) == (True, ">= 1.0x best peer (fp32, TF32 off): yes")


def test_integral_image_in_two_levels_of_blocked_scans_matches_the_golden_model():
    """The ten-problem form (the carries a blocked scan of the block totals) through the golden
    model in float64, against cumulative sums; the six-problem form beside it."""
    from bench.gpu import integral_passes, integral_run

    rng = np.random.default_rng(7)
    for h, w, b, b2 in ((32, 48, 4, 2), (24, 32, 2, 4), (8, 12, 4, None)):
        image = rng.standard_normal((h, w))
        probs, (nbx, nby) = integral_passes(h, w, b, b2)
        assert (nbx, nby) == (w // b, h // b) and len(probs) == (10 if b2 else 6)
        out = integral_run(probs, b, b2, image, lambda k, *a, p=probs: p[k].run(*a))
        np.testing.assert_allclose(out, image.cumsum(0).cumsum(1), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="divisible by 4 x 4"):
        integral_passes(32, 40, 4, 4)
