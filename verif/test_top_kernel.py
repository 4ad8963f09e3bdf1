"""meritz.top.Top with real TAUs, one problem end to end through the control port (slow: the
model of two 8-lane TAUs is large to build)."""

import hashlib
import pickle

import pytest

from harness import REPO, run_bench
from merit import workloads as W
from meritz.top import Top

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def run_top(problem, *, taus, lanes, rp_bytes, cp_bytes, backpressure=0.0, seed=None):
    """Run ``problem`` on a ``taus``-TAU Top; return the bench's metrics."""
    blob = pickle.dumps(problem)
    folder = REPO / "sim_build" / "problems"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha1(blob).hexdigest()[:16]}.pkl"
    path.write_bytes(blob)
    top = Top(lanes=lanes, taus=taus, rp0_bytes=rp_bytes[0], rp1_bytes=rp_bytes[1],
              cp_bytes=cp_bytes)
    config = {"problem": str(path), "lanes": lanes, "taus": taus, "rp_bytes": list(rp_bytes),
              "cp_bytes": cp_bytes, "backpressure": backpressure}
    return run_bench(top, bench="bench_top_kernel", config=config, seed=seed,
                     name=f"top_n{lanes}_t{taus}")


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2])
def test_top_conv3x3(taus):
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    metrics = run_top(problem, taus=taus, backpressure=0.2, **SMALL)
    assert 0 < metrics["utilization"] <= 1
