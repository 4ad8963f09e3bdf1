"""Hardware tools of MERIT: Verilog of the MERIT-z configurations (:mod:`merit.flow.verilog`),
synthesis with Yosys (:mod:`merit.flow.synth`), the control port as SystemRDL and what PeakRDL
generates from it (:mod:`merit.flow.rdl`). With :mod:`merit.sim`, the only part of :mod:`merit`
that may import :mod:`meritz` (and so amaranth), always inside the functions."""
