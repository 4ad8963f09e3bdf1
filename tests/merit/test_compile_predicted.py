"""The compiler's predictions of its candidates: cut short where a candidate cannot be chosen
(``merit.perf.predict_cycles``), once per kernel within a compile (``merit.compile._PREDICTED``),
and the same kernels chosen as when every candidate is predicted whole, every time."""

import pytest

import merit.compile as C
from merit import perf
from merit import workloads as W
from merit.compile import compile_problem

SMALL = dict(lanes=8, rp_bytes=(1024, 512), cp_bytes=512, instructions=24)

PROBLEMS = {
    "conv": lambda: W.conv2d(1, 8, 13, 13, 32, 3, padding=1),
    "conv_pool": lambda: W.conv_pool2d(1, 16, 12, 12, 16, 3, padding=1, pool=2),
    "gemm": lambda: W.gemm(48, 32, 64),
    "fc": lambda: W.fc(8, 64, 64),
    "depthwise": lambda: W.depthwise(1, 8, 16, 16, 3, padding=1),
}


def _picks(kernel):
    return (kernel.problem.name, tuple(kernel.problem.a_shape), tuple(kernel.tiling.p_tile),
            tuple(kernel.tiling.a_tile), tuple(kernel.tiling.lane_index), kernel.sharing,
            tuple(kernel.config[k] for k in ("share_slot", "share_log2", "share2_slot",
                                              "share2_log2")),
            [s.get("base") for s in kernel.config["rp0"] if s], kernel.tiles)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_predict_cycles_is_predict_or_at_least_its_stop(name):
    kernel = compile_problem(PROBLEMS[name](), **SMALL, taus=4)
    rp = SMALL["rp_bytes"]
    cycles = perf.predict(kernel, taus=4, rp_bytes=rp).cycles
    assert perf.predict_cycles(kernel, taus=4, rp_bytes=rp) == cycles
    assert perf.predict_cycles(kernel, taus=4, rp_bytes=rp, stop=cycles + 1) == cycles
    # at or below the cycles: stopped, or the cycles themselves (never fewer)
    for stop in (cycles, cycles - 1, cycles // 2, 1):
        got = perf.predict_cycles(kernel, taus=4, rp_bytes=rp, stop=stop)
        assert got is None or got == cycles, (stop, got)
    assert perf.predict_cycles(kernel, taus=4, rp_bytes=rp, stop=1) is None


@pytest.mark.parametrize("taus", [1, 4])
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_the_same_kernel_as_with_every_candidate_predicted_whole(monkeypatch, name, taus):
    """Cutting the losers' predictions short and predicting each kernel once change nothing:
    the same tiles, sharing, operand order and predicted cycles as a compile that predicts every
    candidate to its end, every time it is weighed."""
    problem = PROBLEMS[name]()
    fast = compile_problem(problem, **SMALL, taus=taus)
    fast_cycles = C._predicted(fast, taus, SMALL["rp_bytes"])
    calls = []
    whole = perf.predict_cycles

    def unstopped(kernel, stop=None, **kw):
        calls.append(stop)
        return whole(kernel, **kw)

    monkeypatch.setattr(perf, "predict_cycles", unstopped)
    monkeypatch.setattr(C, "_kernel_key", lambda kernel: object())    # never the same key
    slow = compile_problem(problem, **SMALL, taus=taus)
    assert calls and any(stop is not None for stop in calls)
    assert _picks(slow) == _picks(fast)
    assert C._predicted(slow, taus, SMALL["rp_bytes"]) == fast_cycles


def test_a_compile_predicts_each_kernel_once_and_forgets_them(monkeypatch):
    keys = []
    key = C._kernel_key

    def counted(kernel):
        keys.append(key(kernel))
        return keys[-1]

    monkeypatch.setattr(C, "_kernel_key", counted)
    ran = []
    whole = perf.predict_cycles
    monkeypatch.setattr(perf, "predict_cycles",
                        lambda kernel, **kw: ran.append(key(kernel)) or whole(kernel, **kw))
    compile_problem(PROBLEMS["conv"](), **SMALL, taus=4)
    assert len(set(keys)) < len(keys)           # kernels weighed more than once ...
    assert len(ran) < len(keys)                 # ... are not all predicted again
    assert C._PREDICTED is None                 # nothing kept after the call


def test_a_layer_of_many_jobs_is_stopped_on_its_prefix(monkeypatch):
    """Above RANKED_JOBS the prefix's stop is the caller's scaled to the prefix's tiles: a
    prefix stopped there scales to at least the caller's stop."""
    problem = W.conv2d(1, 8, 64, 64, 16, 3, padding=1)
    kernel = compile_problem(problem, **SMALL, taus=2)
    monkeypatch.setattr(C, "RANKED_JOBS", C._jobs(kernel) // 4)
    monkeypatch.setattr(C, "PREFIX_JOBS", C._jobs(kernel) // 4)
    scaled = C._predicted(kernel, 2, SMALL["rp_bytes"])
    assert C._predicted(kernel, 2, SMALL["rp_bytes"], stop=scaled * 1.001) == scaled
    assert C._predicted(kernel, 2, SMALL["rp_bytes"], stop=scaled * 0.9) is None
