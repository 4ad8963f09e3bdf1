"""The SIMD array's command-level reference: registers and partial-result SRAM rows of every lane,
commands applied with :func:`merit.isa.step` (the golden ISA model), for the benches and tests of
:class:`meritz.tau.cp.simd.SimdArray`."""

import numpy as np

from merit.isa import N_REGS, Op, decode, is_legal, step
from meritz.tau.cp.simd import Command

__all__ = ["SimdModel"]


class SimdModel:
    """Registers and SRAM of every lane; executes with :func:`merit.isa.step`."""

    def __init__(self, lanes, consts, luts):
        self.lanes, self.consts, self.luts = lanes, consts, luts
        self.regs = np.zeros((N_REGS, lanes), dtype=np.int64)
        self.sram = {}
        self.error = 0

    def needs(self, cmd):
        kind, word = cmd[0], cmd[1]
        if kind != Command.EXEC or not is_legal(word):
            return False, False
        ins = decode(word)
        return ins.reads_rp(0), ins.reads_rp(1)

    def apply(self, cmd, i0, i1):
        """Execute one command; returns the out vector (a list) or None."""
        kind, word, row, index, lane_shift, lane_bits = cmd
        if kind == Command.CLEAR:
            self.regs[:] = 0
            return None
        if kind in (Command.LOAD, Command.STORE):
            d = (word >> 17) & 7
            if kind == Command.STORE:
                self.sram[row] = self.regs[d].copy()
            else:
                self.regs[d] = self.sram[row]
            return None
        if not is_legal(word):      # the array executes nothing (some decode all the same)
            self.error = 1
            return None
        ins = decode(word)
        idx = None
        if ins.op == Op.INDEX:
            lane = np.arange(self.lanes)
            idx = index + ((lane >> lane_shift) & ((1 << lane_bits) - 1)) if ins.b else index
        out = step(ins, self.regs, i0=None if i0 is None else np.array(i0),
                   i1=None if i1 is None else np.array(i1), consts=self.consts,
                   luts=self.luts, index=idx)
        return None if out is None else [int(v) for v in np.broadcast_to(out, (self.lanes,))]
