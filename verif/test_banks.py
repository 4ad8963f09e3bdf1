"""Verilator runs of the tile buffer bench (``bench_banks``): 8 lanes in CI, one 32-lane smoke."""

import pytest

from harness import run_bench
from meritz.banks import TileBuffer

pytestmark = pytest.mark.sim

#: everything the random bench must have seen at least once in a CI-length run
COVER = ["grants", "refusals", "wraps", "full", "empty", "conflicts", "bad_reads", "bad_writes",
         "misfrees", "frees"]

CASES = {
    # lanes, depth, ports, max_tiles, cycles, cover
    "n8_sp": (8, 32, 1, 8, 6000, COVER),
    "n8_tp": (8, 16, 2, 4, 3000, [c for c in COVER if c != "conflicts"]),
    "n32_rp1_smoke": (32, 128, 1, 8, 1500, ["grants", "reads", "frees"]),
}


@pytest.mark.parametrize("case", CASES)
def test_tile_buffer_random(case):
    lanes, depth, ports, max_tiles, cycles, cover = CASES[case]
    top = TileBuffer(lanes=lanes, depth=depth, ports=ports, max_tiles=max_tiles)
    config = {"lanes": lanes, "depth": depth, "width": 16, "ports": ports,
              "max_tiles": max_tiles, "cycles": cycles, "cover": cover}
    if lanes == 32:
        config["max_rows"] = 16
    run_bench(top, bench="bench_banks", config=config, name=f"banks_{case}")
