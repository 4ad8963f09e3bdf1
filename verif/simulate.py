"""``simulate``: run one MERIT problem on the Verilator model of a TAU, bit-exact against the
golden ISA model, and return its cycle count and utilization (SPEC §5).

The entry point of ``merit sim WORKLOAD`` (the lead's CLI) and of the TAU benches::

    from simulate import simulate
    metrics = simulate(problem, lanes=32, dram_bytes_per_cycle=8)

The problem travels to the cocotb bench (``verif/bench_tau.py``) pickled; the bench compiles it
(``merit.compile.compile_problem``), fills the DRAM, dispatches every parallel tile, waits for the
TAU's ``idle`` (last write response), and checks every output and the whole DRAM image.
"""

import hashlib
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import REPO, run_bench  # noqa: E402

__all__ = ["simulate", "tau_for", "program_slots"]


def tau_for(lanes, *, rp_bytes=None, cp_bytes=5120, ports=1, instructions=16):
    """The :class:`meritz.tau.Tau` of ``lanes`` lanes (SRAM sizes of SPEC §5 by default)."""
    from meritz.tau import Tau
    rp0, rp1 = rp_bytes or (16384, 8192)
    return Tau(lanes=lanes, rp0_bytes=rp0, rp1_bytes=rp1, cp_bytes=cp_bytes, ports=ports,
               instructions=instructions)


def program_slots(problem, shift=0):
    """Instruction slots a TAU needs for ``problem``: 16, or 24 for longer programs (bilateral);
    both keep the configuration under the 0.5 KB budget."""
    from merit.isa.programs import program_for
    return 16 if len(program_for(problem, shift=shift).words) <= 16 else 24


def simulate(problem, *, lanes=32, dram_bytes_per_cycle=8, latency=20, shift=0, seed=None,
             backpressure=0.0, rp_bytes=None, cp_bytes=5120, max_outputs=None,
             instructions=None):
    """Run ``problem`` on one TAU; return ``{"cycles", "utilization", "useful_ops", ...}``.

    ``instructions``: program slots of the TAU (default: 16, or 24 when the program needs it).
    Raises ``harness.BenchFailure`` when the RTL result differs from the golden ISA model or any
    byte of DRAM outside the outputs changed.
    """
    blob = pickle.dumps(problem)
    folder = REPO / "sim_build" / "problems"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha1(blob).hexdigest()[:16]}.pkl"
    path.write_bytes(blob)
    rp_bytes = tuple(rp_bytes or (16384, 8192))
    instructions = program_slots(problem, shift) if instructions is None else instructions
    config = {"problem": str(path), "lanes": lanes, "bytes_per_cycle": dram_bytes_per_cycle,
              "latency": latency, "shift": shift, "backpressure": backpressure,
              "rp_bytes": list(rp_bytes), "cp_bytes": cp_bytes, "max_outputs": max_outputs,
              "instructions": instructions}
    top = tau_for(lanes, rp_bytes=rp_bytes, cp_bytes=cp_bytes, instructions=instructions)
    return run_bench(top, bench="bench_tau", config=config, seed=seed,
                     name=f"tau_n{lanes}")
