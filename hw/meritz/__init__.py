"""MERIT-z: the MERIT processor in Amaranth HDL (networks, SRAM banks, SIMD array, TAU, top).

Blocks live in their own modules (see ``docs/architecture.md``); :mod:`meritz.blocks` lists the
configurations that ``make verilog`` emits and :mod:`meritz.emit` writes them as Verilog.
"""
