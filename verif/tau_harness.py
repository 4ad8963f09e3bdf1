"""pytest-side helper of the TAU benches: ``run_bench`` with the Verilator warnings that the
Verilog emitted by Amaranth/Yosys for the TAU's arithmetic raises under ``-Wall``.

Yosys writes ``assign wide = narrow + narrow;``, ``!x[8:0]`` and ``x == 1'h1`` for Amaranth's
width-extending arithmetic, and a ``casez`` without default for every ``Array`` lookup; Verilator
reports them as WIDTHEXPAND / WIDTHTRUNC / CASEINCOMPLETE, and each ``SyncFIFO`` submodule as
DECLFILENAME. The lead's ``verif/waivers.vlt`` keeps width warnings fatal; until it waives these
(request in the TAU report), the TAU benches add them here, for their own builds only.
"""

import harness

__all__ = ["run_bench", "TAU_WAIVERS"]

TAU_WAIVERS = ["-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-CASEINCOMPLETE", "-Wno-DECLFILENAME"]


def run_bench(top, **kwargs):
    """:func:`harness.run_bench` with :data:`TAU_WAIVERS` added to the Verilator options."""
    saved = harness.VERILATOR_ARGS
    harness.VERILATOR_ARGS = saved + TAU_WAIVERS
    try:
        return harness.run_bench(top, **kwargs)
    finally:
        harness.VERILATOR_ARGS = saved
