"""Ranged inner products: function order (Fig. 4b), chunked vs per-step loops, the C bodies."""

import re
import subprocess
import sys

import numpy as np
import pytest

from merit import Index, Transform, execute
from merit import strategies as S
from merit import workloads as wl
from merit.transform import Gatherer

EXECUTE = sys.modules["merit.execute"]  # the module; merit.execute is the function

ALL = [S.Dot(), S.DotReLU(), S.DotResidual(), S.DotResidual(relu=True), S.SeparableDot(),
       S.Sum(), S.Copy(), S.Mean(), S.Max(), S.Min(), S.L1(), S.Bilateral(2.0), S.BestMatch()]


class Record(S.Strategy):
    levels = 3
    inputs = (S.Input("x", "loop"),)
    outputs = ("out",)

    def __init__(self):
        self.log = []

    def pre(self, s, level):
        self.log.append(f"pre{level}")

    def loop(self, s, x):
        self.log.append("loop" + "".join(map(str, s.a)))

    def post(self, s, level):
        self.log.append(f"post{level}")
        s.out[0] = 0


def test_fig4_function_ranges():
    """a = (i, j, k) in three levels of sizes (2, 1, 2): the ranges of §III-B, step by step."""
    rec = Record()
    x = Transform((1,), p=[None], a=[None, None, None])
    execute(rec, (1,), (2, 1, 2), [(np.zeros(1), x)], levels=(1, 1, 1))
    assert rec.log == [
        "pre0", "pre1", "pre2", "loop000", "loop001", "post2", "post1",
        "pre1", "pre2", "loop100", "loop101", "post2", "post1", "post0"]


def test_levels_with_several_indices():
    rec = Record()
    x = Transform((1,), p=[None], a=[None, None, None])
    execute(rec, (1,), (2, 2, 1), [(np.zeros(1), x)], levels=(2, 0, 1))
    starts = [i for i, e in enumerate(rec.log) if e == "pre1"]
    assert len(starts) == 4 and rec.log.count("pre0") == 1 and rec.log.count("post0") == 1


def _problems():
    return [wl.gemm(5, 6, 7), wl.conv2d(2, 4, 7, 6, 4, 3, padding=1, groups=2),
            wl.max_pool2d(1, 2, 6, 6, 3, stride=1, padding=1), wl.avg_pool2d(1, 2, 6, 6, 2),
            wl.motion_estimation(8, 16, block=4, search=2),
            wl.motion_estimation(8, 16, block=4, search=2, best=True),
            wl.separable_filter(6, 7, 3), wl.integral_image(4, 5), wl.correlation(3, 5, 6, 1)]


@pytest.mark.parametrize("prob", _problems(), ids=lambda p: p.name)
def test_chunked_loop_equals_per_step(prob, monkeypatch):
    """loop_chunk over big blocks, over blocks of one step, and plain loop agree exactly."""
    rng = np.random.default_rng(7)
    arrays = prob.random_inputs(rng, np.int32)

    def run():
        res = prob.run(*arrays)
        return res if isinstance(res, tuple) else (res,)
    big = run()
    monkeypatch.setattr(EXECUTE, "CHUNK_BUDGET", 1)
    ones = run()
    monkeypatch.setattr(prob.strategy, "loop_chunk", None, raising=False)
    plain = run()
    for a, b, c in zip(big, ones, plain, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_vectorized_steps_not_lanes(monkeypatch):
    """One gather per chunk of steps, however many lanes: no Python loop per output element."""
    calls = []
    real = Gatherer.__call__
    monkeypatch.setattr(Gatherer, "__call__", lambda self, *a: calls.append(1) or real(self, *a))
    prob = wl.conv2d(1, 2, 40, 40, 8, 3)
    monkeypatch.setattr(EXECUTE, "CHUNK_BUDGET", 1)
    prob.run(*prob.random_inputs(np.random.default_rng(0)))
    assert len(calls) == 2 * 2 * 3 * 3  # two operands, one gather per accumulation step


@pytest.mark.parametrize("strategy", ALL, ids=repr)
def test_c_body_convention(strategy):
    body = strategy.c_body
    assert set(body) == {"state", "pre", "loop", "post"}
    assert isinstance(body["state"], str) and isinstance(body["loop"], str)
    assert len(body["pre"]) == strategy.levels and len(body["post"]) == strategy.levels
    for stage, texts in (("pre", body["pre"]), ("loop", [body["loop"]]), ("post", body["post"])):
        allowed = set(strategy.stage_inputs(stage))
        for text in texts:
            used = {int(n) for n in re.findall(r"\bin(\d+)\b", text)}
            assert used <= allowed, (stage, text)
    outs = {int(n) for t in body["pre"] + [body["loop"]] + body["post"]
            for n in re.findall(r"\bout(\d+)\b", t)}
    assert outs == set(range(len(strategy.outputs)))


def test_input_order_is_enforced():
    with pytest.raises(TypeError, match="Bad.inputs must list pre, then loop, then post"):
        class Bad(S.Strategy):
            inputs = (S.Input("r", "post"), S.Input("x", "loop"))


def test_integer_max_min_use_dtype_limits():
    x = Transform((5,), p=[None], a=[Index(0)])
    v = np.array([-3, 7, 2, -9, 0], dtype=np.int16)
    assert execute(S.Max(), (1,), (5,), [(v, x)])[0] == 7
    assert execute(S.Min(), (1,), (5,), [(v, x)])[0] == -9


def test_import_needs_only_numpy():
    code = ("import sys, merit; merit.Problem; merit.workloads.gemm(2, 2, 2); "
            "bad = [m for m in ('scipy', 'amaranth', 'cocotb', 'cupy') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def _random_transform(rng, shape, np_, na, name):
    def entry():
        if rng.random() < 0.35:
            return None
        return Index(int(rng.integers(len(shape))), int(rng.choice([-2, -1, 1, 2])),
                     int(rng.integers(-2, 3)))
    return Transform(shape, [entry() for _ in range(np_)], [entry() for _ in range(na)],
                     boundary=str(rng.choice(["zero", "clamp"])), name=name)


@pytest.mark.parametrize("seed", range(20))
def test_execute_matches_materialized_reduction(seed):
    """Random transforms (broadcasts anywhere): execute == reduce over the materialized M(A)."""
    rng = np.random.default_rng(500 + seed)
    np_, na = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    p_shape = tuple(int(n) for n in rng.integers(1, 5, np_))
    a_shape = tuple(int(n) for n in rng.integers(1, 5, na))
    xs, ys = tuple(rng.integers(2, 6, 2)), tuple(rng.integers(2, 6, 3))
    tx = _random_transform(rng, xs, np_, na, "x")
    ty = _random_transform(rng, ys, np_, na, "y")
    x, y = rng.integers(-9, 9, xs), rng.integers(-9, 9, ys)
    mx, my = tx.apply(x, p_shape, a_shape), ty.apply(y, p_shape, a_shape)
    axes = tuple(range(np_, np_ + na))
    for strategy, want in [(S.Dot(), (mx * my).sum(axis=axes)),
                           (S.L1(), np.abs(mx - my).sum(axis=axes))]:
        got = execute(strategy, p_shape, a_shape, [(x, tx), (y, ty)])
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(execute(S.Max(), p_shape, a_shape, [(x, tx)]),
                                  mx.max(axis=axes))
