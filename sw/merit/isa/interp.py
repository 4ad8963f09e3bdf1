"""Bit-exact interpreter of a ranged-inner-product program, vectorized over all lanes.

One Python iteration per (accumulation step, executed instruction); every lane (parallel output)
is an element of a numpy array, as in the SIMD hardware.
"""

from dataclasses import dataclass

import numpy as np

from .alu import alu, out_value
from .encoding import (
    N_REGS,
    OPERAND_CONST,
    OPERAND_IMM,
    OPERAND_RP0,
    OPERAND_RP1,
    IndexKind,
    IsaError,
    Op,
)
from .program import Program, step_ranges

__all__ = ["Trace", "execute", "operand_value", "step"]


@dataclass
class Trace:
    """What :func:`execute` produced.

    Attributes
    ----------
    outputs : list of numpy.ndarray
        One int16 array per ``out`` instruction (address order), shape (executions, lanes): one
        row per step at which that instruction ran, in step order.
    regs : numpy.ndarray
        Final registers, int32, shape (8, lanes).
    ops : int
        Lane operations executed (instructions run x lanes), the utilization numerator.
    """
    outputs: list
    regs: np.ndarray
    ops: int


def operand_value(code, regs, *, i0=None, i1=None, consts=(0, 0, 0, 0)):
    """The 32-bit value (int64) of operand ``code`` for every lane."""
    if code < N_REGS:
        return regs[code]
    if code in (OPERAND_RP0, OPERAND_RP1):
        value = i0 if code == OPERAND_RP0 else i1
        if value is None:
            raise IsaError(f"operand i{code - OPERAND_RP0} read but no RP element given")
        return np.asarray(value, dtype=np.int64)
    if OPERAND_CONST <= code < OPERAND_CONST + 4:
        return np.int64(consts[code - OPERAND_CONST])
    if code >= OPERAND_IMM:
        return np.int64(((code & 15) ^ 8) - 8)
    raise IsaError(f"reserved operand code {code}")


def step(ins, regs, *, i0=None, i1=None, consts=(0, 0, 0, 0), luts=(), index=None):
    """Execute one instruction on every lane: update ``regs`` (int64, (8, lanes)) in place.

    Returns the int16 values sent by ``out`` (None for the other instructions). ``i0`` / ``i1``
    are the RP elements the instruction reads; ``index`` the selected loop index of ``index``.
    """
    a = operand_value(ins.a, regs, i0=i0, i1=i1, consts=consts)
    if ins.op == Op.OUT:
        return out_value(ins, a, operand_value(ins.b, regs, i0=i0, i1=i1, consts=consts))
    if ins.op == Op.INDEX:
        regs[ins.d] = alu(ins, a, None, None, index=index)
        return None
    b = operand_value(ins.b, regs, i0=i0, i1=i1, consts=consts)
    c = (operand_value(ins.c, regs, i0=i0, i1=i1, consts=consts)
         if len(ins.reads()) == 3 else None)
    regs[ins.d] = alu(ins, a, b, c, luts=luts)
    return None


def _as_rp(arrays, port, program, shape, lanes):
    slots = program.reads(port)
    arrays = list(arrays)
    if len(arrays) != len(slots):
        raise IsaError(f"the program reads i{port} in {len(slots)} instruction(s) "
                       f"(addresses {list(slots)}), but {len(arrays)} RP{port} array(s) were given")
    out = []
    for k, arr in enumerate(arrays):
        arr = np.asarray(arr)
        if arr.shape != tuple(shape) + (lanes,):
            raise IsaError(f"RP{port} array {k} must have shape accumulation + (lanes,) = "
                           f"{tuple(shape) + (lanes,)}, not {arr.shape}")
        if arr.dtype != np.int16:
            raise IsaError(f"RP{port} array {k} must be int16, not {arr.dtype}")
        out.append(arr)
    return out


def execute(program: Program, acc_shape, *, rp0=(), rp1=(), pindex=None, lanes=None):
    """Run ``program`` over the accumulation space ``acc_shape`` for every lane at once.

    Parameters
    ----------
    program : Program
        Extended to ``len(acc_shape)`` levels when it has fewer.
    acc_shape : tuple of int
        Accumulation extents, outermost first (one level per index).
    rp0, rp1 : sequence of int16 arrays, shape ``acc_shape + (lanes,)``
        One array per instruction that reads ``i0`` / ``i1`` (address order): the element that
        instruction reads at each step.
    pindex : int array, shape (parallel dims, lanes), optional
        The parallel coordinates of each lane, read by ``index rd, a, pJ``.
    lanes : int, optional
        Number of lanes; taken from the arrays when omitted.

    Returns
    -------
    Trace
    """
    acc_shape = tuple(int(n) for n in acc_shape)
    if len(acc_shape) > program.levels:
        program = program.with_levels(len(acc_shape))
    if lanes is None:
        for arr in (*rp0, *rp1, *([] if pindex is None else [pindex])):
            lanes = np.asarray(arr).shape[-1]
            break
        else:
            raise IsaError("lanes must be given when no RP array or pindex is")
    rps = (_as_rp(rp0, 0, program, acc_shape, lanes), _as_rp(rp1, 1, program, acc_shape, lanes))
    if pindex is not None:
        pindex = np.asarray(pindex, dtype=np.int64)
        if pindex.ndim != 2 or pindex.shape[1] != lanes:
            raise IsaError(f"pindex must have shape (parallel dims, {lanes}), not {pindex.shape}")

    code = program.instructions
    slot = {}
    for port in (0, 1):
        for k, addr in enumerate(program.reads(port)):
            slot[(port, addr)] = k
    outs = {addr: [] for addr in program.out_addresses}
    regs = np.zeros((N_REGS, lanes), dtype=np.int64)
    consts = np.asarray(program.consts, dtype=np.int64)
    ops = 0
    indexed = any(ins.x for ins in code)

    for index, start, end in step_ranges(program, acc_shape):
        x = program.xoffset(index) if indexed else 0
        for addr in range(start, end):
            try:
                ins = code[addr].indexed(x)
            except IsaError as e:
                raise IsaError(f"address {addr}: {e}") from None
            i0 = rps[0][slot[(0, addr)]][index] if (0, addr) in slot else None
            i1 = rps[1][slot[(1, addr)]][index] if (1, addr) in slot else None
            idx = None
            if ins.op == Op.INDEX:
                if ins.b == IndexKind.ACC:
                    if ins.fn >= len(acc_shape):
                        raise IsaError(f"address {addr}: index a{ins.fn} but the accumulation "
                                       f"space has {len(acc_shape)} dimension(s)")
                    idx = index[ins.fn]
                else:
                    if pindex is None or ins.fn >= pindex.shape[0]:
                        raise IsaError(f"address {addr}: index p{ins.fn} needs pindex with at "
                                       f"least {ins.fn + 1} parallel dimension(s)")
                    idx = pindex[ins.fn]
            value = step(ins, regs, i0=i0, i1=i1, consts=consts, luts=program.luts, index=idx)
            if ins.op == Op.OUT:
                outs[addr].append(np.broadcast_to(value, (lanes,)))
            ops += lanes
    outputs = [np.array(v, dtype=np.int16).reshape(len(v), lanes) for v in outs.values()]
    return Trace(outputs, regs.astype(np.int32), ops)
