"""The C driver's register stream on the simulated processor: ``merit compile --emit c`` output,
built with ``cc -Wall -Werror`` and dry-run on the host (``merit.flow.driver.dry_run``), replayed
through the AXI4-Lite port of an 8-lane, one-TAU Top; the result must equal the golden ISA model
bit for bit, as with the Python driver (``sw/merit/sim/cocotb_top.py``)."""

import shutil

import pytest

from merit import workloads as W

pytest.importorskip("peakrdl_cheader")

from merit.flow import driver  # noqa: E402
from merit.sim import simulate  # noqa: E402

#: The configuration of test_top_kernel's one-TAU run (one Verilator build for both).
SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


@pytest.mark.sim
@pytest.mark.slow       # a new build of the real-TAU top (shared with test_top_kernel's)
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_c_driver_stream_runs_the_kernel_bit_exact(tmp_path):
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    driver.emit_c(problem, tmp_path, "conv", **SMALL)
    log = tmp_path / "conv.log"
    log.write_text(driver.dry_run(tmp_path, "conv"))
    metrics = simulate(problem, taus=1, instructions=16, register_writes=log, backpressure=0.2,
                       **SMALL)
    assert metrics["tiles"] > 0
    assert metrics["cycles"] <= metrics["cycles_register"]
