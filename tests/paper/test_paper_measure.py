"""verif/measure_top.py without a simulator: the roofline, slice identity and the rendered table."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verif"))

import measure_top as M  # noqa: E402
from merit.paper import row  # noqa: E402


def test_roofline_of_depthwise_is_compulsory_traffic():
    # 64x64x32 depthwise: 11 operations per output (9 MACs + init + out), 2 bytes read and
    # 2 written per output (+ the 288 weights): 4 B per 11 ops at 8 B/cycle = 22 ops/cycle
    (problem, _), = row("depthwise").full()
    outputs = 32 * 64 * 64
    words = 2 * outputs + 32 * 9
    expected = M.roofline([(problem, 1)], alus=128, bandwidth=8)
    assert expected == pytest.approx(11 * outputs / (2 * words / 8 * 128), rel=1e-9)
    assert M.roofline([(problem, 1)], alus=32, bandwidth=8) == pytest.approx(4 * expected)
    assert M.roofline([(problem, 1)], alus=32, bandwidth=10**6) == 1.0


def test_rows_with_the_same_slice_share_a_key():
    key = M.slice_key(row("alexnet_conv3").slice(), 32, 4, 8, 20)
    assert key == M.slice_key(row("alexnet_conv4").slice(), 32, 4, 8, 20)
    assert key != M.slice_key(row("alexnet_conv3").slice(), 32, 1, 8, 20)
    assert key != M.slice_key(row("dilated").slice(), 32, 4, 8, 20)


def test_render_marks_rows_against_the_paper_and_the_roofline():
    results = {"setup": {"lanes": 32, "taus": 4, "dram_bytes_per_cycle": 8, "latency": 20,
                         "command": "cmd`", "date": "today", "machine": "here"},
               "rows": {"depthwise": {"utilization": 0.16, "cycles": 1000, "dram_busy": 0.99,
                                      "slice": "whole layer", "roofline_full": 0.17,
                                      "model_slice": 0.15, "model_error": 0.04,
                                      "model_full": 0.15, "bound": "DRAM"},
                        "gemm": {"utilization": 0.95, "cycles": 10, "dram_busy": 0.5,
                                 "slice": "whole layer", "roofline_full": 1.0}}}
    text = M.render(results, {"depthwise": {"utilization": 0.62}})
    depthwise = next(line for line in text.splitlines() if line.startswith("| Depthwise"))
    assert depthwise.endswith("below; paper above the roofline; 1 TAU within 0.02 or above |")
    gemm = next(line for line in text.splitlines() if line.startswith("| GEMM"))
    assert gemm.endswith("at or above |")
    assert "| AlexNet CONV1+Pool2 | 0.88 | not measured |" in text
    assert "1 of 2 rows keep the DRAM port busy" in text
    assert "Model error on the slices: max 4.0%" in text
