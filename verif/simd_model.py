"""The SIMD array's command-level reference: the two register sets and the partial-result SRAM
rows of every lane, commands applied with :func:`merit.isa.step` (the golden ISA model), for
the benches and tests of :class:`meritz.tau.cp.simd.SimdArray`.

A command is ``(kind, word, move, index, lane_shift, lane_bits, set)``: an ``EXEC`` runs
``word`` on register set ``set``; a ``MOVE`` applies ``move`` = ``(save, save_row, clear, load,
load_row, regs)`` to set ``set`` (registers 0 .. regs-1 saved to the rows from ``save_row``,
then loaded from the rows from ``load_row``, or every register cleared). :func:`legacy` turns
the single-register commands the older benches wrote (``LOAD`` / ``STORE`` / ``CLEAR``) into
MOVEs on set 0.
"""

import numpy as np

from merit.isa import N_REGS, Op, decode, is_legal, step
from meritz.tau.cp.simd import Command

__all__ = ["CLEAR", "LOAD", "STORE", "SimdModel", "legacy", "move"]

#: the single-register commands of the older benches (see :func:`legacy`)
LOAD, STORE, CLEAR = "load", "store", "clear"


def move(*, save_row=None, load_row=None, clear=False, regs=0, set_=0):
    """A MOVE command on set ``set_``: save to the rows from ``save_row`` (None: no save), then
    load from ``load_row`` (None: no load) or clear."""
    return (Command.MOVE, 0, (int(save_row is not None), save_row or 0, int(clear),
                              int(load_row is not None), load_row or 0, regs), 0, 0, 0, set_)


def legacy(command, depth):
    """A command as a 7-tuple: ``STORE`` of register r at ``row`` becomes a MOVE that saves
    registers 0 .. r of set 0 (rows from ``row``, kept inside the ``depth`` rows: ``row`` is
    one of them), ``LOAD`` at ``row`` one that loads register 0 from ``row`` (a row a STORE
    wrote: the SRAM's other rows hold what the model cannot know), ``CLEAR`` a MOVE that
    clears set 0; other commands padded (set 0)."""
    command = tuple(command) + (0,) * (7 - len(command))
    kind, word, row = command[:3]
    if kind in (LOAD, STORE):
        regs = ((word >> 17) & 7) + 1 if kind == STORE else 1
        row = min(row, depth - regs)
        return move(save_row=row if kind == STORE else None,
                    load_row=row if kind == LOAD else None, regs=regs)
    if kind == CLEAR:
        return move(clear=True)
    return command


class SimdModel:
    """Both register sets and the SRAM of every lane; executes with :func:`merit.isa.step`."""

    def __init__(self, lanes, consts, luts):
        self.lanes, self.consts, self.luts = lanes, consts, luts
        self.regs = [np.zeros((N_REGS, lanes), dtype=np.int64) for _ in range(2)]
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
        kind, word, mv, index, lane_shift, lane_bits, set_ = cmd
        regs = self.regs[set_]
        if kind == Command.MOVE:
            save, save_row, clear, load, load_row, count = mv
            zero = np.zeros(self.lanes, dtype=np.int64)
            if save:
                for i in range(count):
                    self.sram[save_row + i] = regs[i].copy()
            if load:
                for i in range(count):
                    regs[i] = self.sram.get(load_row + i, zero)
            elif clear:
                regs[:] = 0
            return None
        if not is_legal(word):      # the array executes nothing (some decode all the same)
            self.error = 1
            return None
        ins = decode(word)
        idx = None
        if ins.op == Op.INDEX:
            lane = np.arange(self.lanes)
            idx = index + ((lane >> lane_shift) & ((1 << lane_bits) - 1)) if ins.b else index
        out = step(ins, regs, i0=None if i0 is None else np.array(i0),
                   i1=None if i1 is None else np.array(i1), consts=self.consts,
                   luts=self.luts, index=idx)
        return None if out is None else [int(v) for v in np.broadcast_to(out, (self.lanes,))]
