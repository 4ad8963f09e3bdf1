"""Waves on a fresh machine: without the lz4 / zlib headers (simulated through
``MERIT_FST_HEADERS``, the probe's header list) ``--waves`` writes a VCD and says so."""

import json
import os
import subprocess
import sys

import pytest

from merit.sim.toolchain import FST_HEADERS_ENV, ToolchainError, check_fst_headers, wave_format

MISSING = "merit-no-such-header.h"


def test_a_missing_header_makes_the_probe_fail_and_waves_fall_back_to_vcd(monkeypatch):
    monkeypatch.setenv(FST_HEADERS_ENV, f"cstddef {MISSING}")
    with pytest.raises(ToolchainError, match="waves \\(FST\\) need the lz4 and zlib headers"):
        check_fst_headers()
    kind, why = wave_format()
    assert kind == "vcd" and "apt-get install liblz4-dev zlib1g-dev" in why


def test_headers_that_exist_pass_the_probe(monkeypatch):
    monkeypatch.setenv(FST_HEADERS_ENV, "cstddef cstdint")
    assert wave_format() == ("fst", None)


@pytest.mark.sim
def test_merit_sim_waves_without_fst_headers_writes_a_vcd_and_says_so(tmp_path):
    """``merit sim --waves run.fst`` on a TAU as on a machine without the headers (a traced build
    of its own the first time: 4 lanes, which build in less time than 8 and trace the same way)."""
    (tmp_path / "tiny.py").write_text("from merit import workloads as W\n"
                                      "def gemm():\n    return W.gemm(4, 8, 3)\n")
    env = dict(os.environ, **{FST_HEADERS_ENV: f"cstddef {MISSING}"})
    result = subprocess.run([sys.executable, "-m", "merit.cli", "sim", "tiny:gemm", "--lanes",
                             "4", "--seed", "1", "--waves", "run.fst", "--json", "m.json"],
                            cwd=tmp_path, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (tmp_path / "run.fst").exists()
    vcd = (tmp_path / "run.vcd").read_text(errors="replace")
    assert vcd.startswith("$") and "$enddefinitions" in vcd and "#" in vcd
    assert "run.vcd  (VCD instead of FST: waves (FST) need the lz4 and zlib headers" in \
        result.stdout
    assert json.loads((tmp_path / "m.json").read_text())["waves"] == "run.vcd"
