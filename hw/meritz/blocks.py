"""The configurations that ``make verilog`` emits, and how to build any of them.

``BLOCKS`` is the one table of emitted components: each row names the Verilog module stem, the
component class (as ``"module:Class"``, imported only when emitted) and its default keyword
parameters. :func:`build` applies a user's ``lanes`` / ``taus`` to every row whose component takes
them, so ``merit verilog --lanes 8 --taus 1`` and ``make verilog`` share one code path.
"""

import importlib
import inspect

from merit.checks import check_lanes, check_taus

__all__ = ["BLOCKS", "build"]

#: (module stem, "python.module:Class", default parameters). The emitted module is named
#: ``meritz_<stem>_n<lanes>`` (``_t<taus>`` added for components that take ``taus``).
BLOCKS = [
    # RP0 16 KB tile FIFO
    ("rp0_sram", "meritz.tau.rp.banks:TileBuffer", {"lanes": 32, "depth": 256}),
    # RP1 8 KB tile FIFO
    ("rp1_sram", "meritz.tau.rp.banks:TileBuffer", {"lanes": 32, "depth": 128}),
    # bank model for macro swaps
    ("sram_bank_256x16", "meritz.tau.rp.banks:SramBank", {"depth": 256}),
    # CP ALUs + 5 KB
    ("cp_simd", "meritz.tau.cp.simd:SimdArray", {"lanes": 32, "sram_bytes": 5120}),
    # the ranged-inner-product sequencer
    ("cp_sequencer", "meritz.tau.cp.sequencer:Sequencer", {"lanes": 32, "program_depth": 32}),
    # RP read addresses to banks
    ("rp_router", "meritz.tau.rp.butterfly:ButterflyRouter", {"lanes": 32, "row_bits": 8}),
    # RP read data, banks to lanes
    ("rp_butterfly", "meritz.tau.rp.butterfly:Butterfly", {"lanes": 32, "pipelined": True}),
    # DRAM line to banks
    ("rp_collector", "meritz.tau.rp.collector:Collector", {"lanes": 32, "row_bits": 8}),
    # MERIT-z: regs + dispatcher + TAUs + AXI
    ("top", "meritz.top:Top", {"lanes": 32, "taus": 4}),
    # one TAU: RP0 + RP1 + CP + WP + DMA, AXI4 manager
    ("tau", "meritz.tau:Tau", {"lanes": 32}),
]


def _component_class(path):
    module_name, _, class_name = path.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def build(lanes=None, taus=None, blocks=None):
    """Yield ``(module_name, component)`` for every row of ``blocks`` (default: :data:`BLOCKS`).

    ``lanes`` / ``taus`` override the defaults of the rows whose component accepts them.
    """
    if lanes is not None:
        check_lanes(lanes)
    if taus is not None:
        check_taus(taus)
    for stem, path, defaults in BLOCKS if blocks is None else blocks:
        cls = _component_class(path)
        accepted = inspect.signature(cls.__init__).parameters
        params = dict(defaults)
        if lanes is not None and "lanes" in accepted:
            params["lanes"] = lanes
        if taus is not None and "taus" in accepted:
            params["taus"] = taus
        name = f"meritz_{stem}"
        if "lanes" in params:
            name += f"_n{params['lanes']}"
        if "taus" in params:
            name += f"_t{params['taus']}"
        yield name, cls(**params)
