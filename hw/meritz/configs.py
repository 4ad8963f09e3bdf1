"""The configurations that ``make verilog`` emits, and how to build any of them.

``BLOCKS`` is the one table of emitted components: each row names the Verilog module stem, the
component class (as ``"module:Class"``, imported only when emitted) and its default keyword
parameters. :func:`build` applies a user's ``lanes`` / ``taus`` to every row whose component takes
them, so ``merit verilog --lanes 8 --taus 1`` and ``make verilog`` share one code path.
"""

import importlib
import inspect

__all__ = ["BLOCKS", "check_lanes", "check_taus", "build"]

#: (module stem, "python.module:Class", default parameters). The emitted module is named
#: ``meritz_<stem>_n<lanes>`` (``_t<taus>`` added for components that take ``taus``).
BLOCKS = [
    ("rp0_sram", "meritz.banks:TileBuffer", {"lanes": 32, "depth": 256}),  # RP0 16 KB tile FIFO
    ("rp1_sram", "meritz.banks:TileBuffer", {"lanes": 32, "depth": 128}),  # RP1 8 KB tile FIFO
    ("sram_bank_256x16", "meritz.banks:SramBank", {"depth": 256}),  # bank model for macro swaps
    ("cp_simd", "meritz.simd:SimdArray", {"lanes": 32, "sram_bytes": 5120}),  # CP ALUs + 5 KB
    ("cp_sequencer", "meritz.sequencer:Sequencer", {"lanes": 32, "program_depth": 32}),  # ranges
    ("rp_router", "meritz.butterfly:ButterflyRouter", {"lanes": 32, "row_bits": 8}),  # RP reads
    ("rp_butterfly", "meritz.butterfly:Butterfly", {"lanes": 32, "pipelined": True}),  # to lanes
    ("rp_collector", "meritz.collector:Collector", {"lanes": 32, "row_bits": 8}),  # line->banks
    ("top", "meritz.top:Top", {"lanes": 32, "taus": 4}),  # MERIT-z: regs + dispatcher + TAUs + AXI
    ("tau", "meritz.tau:Tau", {"lanes": 32}),  # one TAU: RP0 + RP1 + CP + WP + DMA, AXI4 manager
]


def check_lanes(lanes):
    if not isinstance(lanes, int) or isinstance(lanes, bool):
        raise TypeError(f"lanes must be an integer, not {lanes!r}")
    if lanes < 2 or lanes & (lanes - 1):
        raise ValueError(f"lanes must be a power of two of at least 2, not {lanes}")
    return lanes


def check_taus(taus):
    if not isinstance(taus, int) or isinstance(taus, bool):
        raise TypeError(f"taus must be an integer, not {taus!r}")
    if not 1 <= taus <= 16:
        raise ValueError(f"taus must be between 1 and 16, not {taus}")
    return taus


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
