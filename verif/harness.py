"""The pytest side of the benches in ``verif/``: :func:`run_bench` runs ``verif/<bench>.py``.

The build cache and the cocotb runner are :mod:`merit.sim.build`, shared with ``merit sim``.
"""

from pathlib import Path

from merit.sim import build as _build
from merit.sim.build import VERILATOR_ARGS, BenchFailure, build

__all__ = ["VERIF", "VERILATOR_ARGS", "BenchFailure", "build", "run_bench"]

VERIF = Path(__file__).resolve().parent


def run_bench(top, *, bench, **options):
    """Run the cocotb module ``verif/<bench>.py`` on the Verilator model of ``top``.

    The options are those of :func:`merit.sim.build.run_bench`; returns the metrics the bench
    recorded and raises :class:`~merit.sim.build.BenchFailure` naming the failed tests.
    """
    return _build.run_bench(top, bench=bench, path=[VERIF], **options)
