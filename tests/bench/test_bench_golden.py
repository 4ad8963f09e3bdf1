"""The measured code of bench.golden computes what it claims (small sizes)."""

import json

import numpy as np
import pytest

from bench import golden as bench
from merit import workloads as wl

RNG = np.random.default_rng(11)


def test_gemm_pair():
    A, B = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))
    np.testing.assert_allclose(bench.merit_gemm(4, 3, 5).run(A, B), A @ B)
    np.testing.assert_allclose(bench.naive_gemm(A, B), A @ B)


@pytest.mark.parametrize("s,pad", [(1, 0), (2, 1)])
def test_conv_pair(s, pad):
    prob = wl.conv2d(2, 3, 7, 6, 2, 3, stride=s, padding=pad)
    img, wgt = prob.random_inputs(RNG, np.float64)
    ref = prob.run(img, wgt)
    np.testing.assert_allclose(bench.merit_conv(2, 3, 7, 6, 2, 3, s, pad).run(img, wgt), ref)
    np.testing.assert_allclose(bench.naive_conv(img, wgt, s, pad), ref)
    np.testing.assert_allclose(bench.im2col_conv(img, wgt, s, pad), ref)


def test_motion_pair():
    prob = wl.motion_estimation(8, 12, block=4, search=1, best=True)
    cur, ref = prob.random_inputs(RNG, np.int64, 0, 5)
    want = prob.run(cur, ref)
    for got in (bench.merit_motion(8, 12, 4, 1).run(cur, ref), bench.naive_motion(cur, ref, 4, 1)):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_bilateral_pair():
    prob = wl.bilateral(6, 7, sigma_s=1.0, sigma_r=0.7)
    img, g = prob.random_inputs(RNG, np.float64)
    want = prob.run(img, g)
    np.testing.assert_allclose(bench.merit_bilateral(6, 7, 2, g, 0.7).run(img, g), want)
    np.testing.assert_allclose(bench.naive_bilateral(img, 2, g, 0.7), want)


def test_integral_and_separable_pairs():
    img = RNG.standard_normal((5, 6))
    want = wl.integral_image(5, 6).run(img)
    np.testing.assert_allclose(bench.merit_integral(5, 6).run(img), want)
    np.testing.assert_allclose(bench.naive_integral(img), want)
    hk, v = RNG.standard_normal(3), RNG.standard_normal(3)
    want = wl.separable_filter(5, 6, 3).run(img, hk, v)
    np.testing.assert_allclose(bench.merit_separable(5, 6, 3).run(img, hk, v), want)
    np.testing.assert_allclose(bench.naive_separable(img, hk, v), want)


def test_token_counters():
    assert bench.count_tokens("acc += a[i, t] * b.T  # x\nfor i in range(3): pass") == (8, 2)
    assert bench.count_c_tokens("float d = (float)in1 - c; acc = max(acc, 0.5f);") == (6, 3)
    rows = bench.measure_tokens()
    assert {r["kernel"] for r in rows} == set(bench.TOKEN_CASES)
    assert all(r["merit_identifiers"] > 0 and r["naive_operators"] > 0 for r in rows)


def test_main_writes_the_reports(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # as asked: no re-execution
    assert bench.main(["--out", str(tmp_path), "--repeat", "1"]) == 0
    data = json.loads((tmp_path / "golden.json").read_text())
    assert data["command"] == f"python -m bench.golden --out {tmp_path} --repeat 1"
    assert {"date", "machine", "speed", "tokens"} <= set(data)
    assert [r["layer"] for r in data["speed"]] == list(bench.SPEED_CASES)
    assert all(r["max_abs_diff"] < 1e-3 for r in data["speed"])
    assert "| AlexNet CONV1 |" in (tmp_path / "golden.md").read_text()
    assert "| GEMM | Dot |" in (tmp_path / "tokens.md").read_text()
