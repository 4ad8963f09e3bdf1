"""Verilator runs of the tile buffer bench (``bench_banks``).

CI (``make test``): 8 lanes with single-port banks, and a 32-lane RP1-sized smoke run. The
regression (``make regress``) adds two-port banks, the RP0 size and longer runs.
"""

import os
import subprocess

import pytest

from harness import VERILATOR_ARGS, run_bench
from merit.sim.toolchain import verilator_env
from meritz.emit import to_verilog
from meritz.tau.rp.banks import SramBank, TileBuffer

pytestmark = pytest.mark.sim

#: everything the random bench must have seen at least once in a run of CI length
COVER = ["grants", "refusals", "whole", "wraps", "full", "full_tiles", "empty", "conflicts",
         "bad_reads", "bad_writes", "misfrees", "frees"]
COVER_TP = [name for name in COVER if name != "conflicts"]
SMOKE = ["grants", "wraps", "conflicts", "bad_reads", "bad_writes", "frees"]

slow = pytest.mark.slow
CASES = [
    # name, lanes, depth, ports, max_tiles, cycles, cover
    pytest.param("n8_sp", 8, 32, 1, 4, 6000, COVER, id="n8_sp"),
    pytest.param("n32_rp1", 32, 128, 1, 8, 1500, SMOKE, id="n32_rp1_smoke"),
    pytest.param("n8_tp", 8, 16, 2, 4, 3000, COVER_TP, id="n8_tp", marks=slow),
    pytest.param("n8_sp_long", 8, 32, 1, 8, 100_000, COVER, id="n8_sp_long", marks=slow),
    pytest.param("n32_rp0", 32, 256, 1, 16, 20_000, COVER, id="n32_rp0", marks=slow),
]


@pytest.mark.parametrize("name, lanes, depth, ports, max_tiles, cycles, cover", CASES)
def test_tile_buffer(name, lanes, depth, ports, max_tiles, cycles, cover, record_property):
    top = TileBuffer(lanes=lanes, depth=depth, ports=ports, max_tiles=max_tiles)
    config = {"lanes": lanes, "depth": depth, "width": 16, "ports": ports,
              "max_tiles": max_tiles, "cycles": cycles, "cover": cover,
              # tiles of up to half the SRAM, or 16 rows on the big ones (more tiles per run)
              "max_rows": min(depth // 2, 16 if lanes == 32 else depth)}
    metrics = run_bench(top, bench="bench_banks", config=config)
    for key, value in metrics.items():
        record_property(key, value)


@pytest.mark.parametrize("ports", [1, 2])
def test_bank_macro_links_with_the_bank_model(tmp_path, ports):
    """Banks built as ``bank_macro`` instances link with the emitted bank model of that name."""
    (tmp_path / "top.v").write_text(to_verilog(
        TileBuffer(lanes=4, depth=16, ports=ports, bank_macro="my_sram"), "top")[0])
    (tmp_path / "my_sram.v").write_text(to_verilog(
        SramBank(depth=16, ports=ports), "my_sram")[0])
    result = subprocess.run(
        ["verilator", "--lint-only", *VERILATOR_ARGS, "--top-module", "top",
         str(tmp_path / "top.v"), str(tmp_path / "my_sram.v")],
        env={**os.environ, **verilator_env()}, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
