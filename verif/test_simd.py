"""Verilator runs of the SIMD array bench (``bench_simd``): 8 lanes in CI, 32 lanes in regress."""

import pytest

from harness import run_bench
from meritz.tau.cp.simd import SimdArray

pytestmark = pytest.mark.sim

CASES = {
    # lanes, commands per test
    "n8": (8, 1500),
    "n32": (32, 300),
}


# the 32-lane smoke of CI is the Compute Pipeline's (verif/test_sequencer.py), which contains
# this array; the lone 32-lane array is one more 32-lane build, so it runs in `make regress`
@pytest.mark.parametrize("case", ["n8", pytest.param("n32", marks=pytest.mark.slow)])
def test_simd_random_programs(case):
    lanes, commands = CASES[case]
    top = SimdArray(lanes=lanes)
    metrics = run_bench(top, bench="bench_simd", name=f"simd_{case}",
                        config={"lanes": lanes, "depth": top.depth, "commands": commands})
    # recorded at the end of the bench: proves that the cocotb tests ran at all
    assert metrics["commands_per_cycle"] > 0.99, metrics


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lanes": 24}, ValueError, "lanes must be a power of two of at least 2, not 24"),
    ({"lanes": 8.0}, TypeError, "lanes must be an integer, not 8.0"),
    ({"lanes": 8, "sram_bytes": 100}, ValueError,
     r"sram_bytes must hold at least one group of 8 registers \(256 bytes for 8 lanes\), not 100"),
    ({"lanes": 8, "sram_bytes": "5K"}, TypeError, "sram_bytes must be an integer, not '5K'"),
])
def test_simd_parameters_are_validated(kwargs, error, match):
    with pytest.raises(error, match=match):
        SimdArray(**kwargs)


def test_simd_depth_is_5kb_of_32_bit_lane_registers():
    assert SimdArray(lanes=32).depth == 40
    assert SimdArray(lanes=8).depth == 160
