"""The START checks of meritz.regs against their reference model (Amaranth's simulator, no
Verilator): every configuration of the error catalogue (``test_top_regs.bad_configs``), the edge
configurations, compiled kernels and random footprints give the first failing check that
``test_top_fuzz.expected_status`` (written from the checks' documentation) predicts."""

import random

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from merit import workloads as W
from merit.compile import compile_problem
from merit.regmap import CHECKS
from meritz import kernelcfg
from meritz.regs import _checks
from test_top_fuzz import expected_status
from test_top_regs import bad_configs, edge_configs, good_config

ROWS = (128, 64)


class _Checks(Elaboratable):
    def __init__(self, lanes):
        self.lanes = lanes
        self.config = Signal(kernelcfg.layout())
        self.passed = Signal(len(CHECKS))

    def elaborate(self, platform):
        m = Module()
        checks = _checks(self.config, lanes=self.lanes, instructions=16, rp0_rows=ROWS[0],
                         rp1_rows=ROWS[1])
        m.d.comb += self.passed.eq(sum(c.as_unsigned() << n for n, c in enumerate(checks)))
        return m


def _first_failed(lanes, configs):
    """The number of the first failing check of each configuration in the hardware (0: none)."""
    dut = _Checks(lanes)
    got = []

    async def bench(ctx):
        for values in configs:
            ctx.set(dut.config.as_value(), kernelcfg.pack(values))
            passed = ctx.get(dut.passed)
            failed = [n + 1 for n in range(len(CHECKS)) if not passed >> n & 1]
            got.append(failed[0] if failed else 0)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return got


def _compare(lanes, cases):
    got = _first_failed(lanes, [values for _, values in cases])
    for (what, values), number in zip(cases, got, strict=True):
        assert number == expected_status(values, lanes=lanes, rows=ROWS), what


@pytest.mark.parametrize("lanes", [2, 8, 32])
def test_error_catalogue_and_edges(lanes):
    good = good_config(lanes)
    cases = [(what, values) for _, what, values in bad_configs(good, lanes, ROWS)]
    cases += edge_configs(good, lanes, ROWS)
    assert {n for n, _, _ in bad_configs(good, lanes, ROWS)} == set(range(1, len(CHECKS) + 1))
    _compare(lanes, cases)


def test_compiled_kernels_pass_every_check():
    problems = [W.conv2d(1, 3, 9, 13, 4, 3, padding=1), W.gemm(12, 10, 7),
                W.conv2d(1, 2, 27, 27, 8, 3, padding=1), W.max_pool2d(1, 2, 8, 10, 2),
                W.conv2d(1, 2, 9, 11, 2, 3, dilation=2, padding=2)]
    configs = [compile_problem(p, lanes=8, rp_bytes=(2 * 8 * ROWS[0], 2 * 8 * ROWS[1]),
                               cp_bytes=2048, taus=taus, hold=hold).config
               for p in problems for taus, hold in ((2, False), (2, True), (1, True))]
    assert any(c.get("hold") for c in configs)
    assert _first_failed(8, configs) == [0] * len(configs)


def test_random_footprints():
    """Slots with random boxes, pitches and rows (small and extreme values): the footprint and
    rows checks agree with the model on each, refusing and accepting."""
    rand = random.Random(7)

    def pick(hi):
        return rand.choice([1, 2, rand.randint(1, 40), rand.randint(1, hi), hi])

    cases = []
    for n in range(300):
        values = good_config(8)
        port, k = rand.choice([("rp0", 0), ("rp0", 1), ("rp1", 0)])
        cap = ROWS[0] if port == "rp0" else ROWS[1]
        values[port][k].update(box=[pick(0xFFFF) for _ in range(4)],
                               lpitch=[rand.choice([0, pick(0xFFFF)]) for _ in range(3)],
                               rows=pick(cap))
        cases.append((f"random footprint {n}: {values[port][k]}", values))
    verdicts = [expected_status(values, lanes=8, rows=ROWS) for _, values in cases]
    names = [name for name, _ in CHECKS]
    assert verdicts.count(names.index("footprint") + 1) > 20 and verdicts.count(0) > 20
    assert verdicts.count(names.index("rows") + 1) > 5
    _compare(8, cases)
