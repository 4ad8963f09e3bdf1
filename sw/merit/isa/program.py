"""A ranged-inner-product program: instruction words, range table, constants and lookup tables.

The program is the concatenation Pre_1 .. Pre_D, Loop, Post_D .. Post_1 (level 1 outermost; one
level per accumulation index). The range table has D+1 entries per side:

* ``begs[k]``: first address executed at a step whose k innermost indices are at their first value
  and whose index k+1 (counted from the innermost) is not; ``begs[0]`` is the start of Loop and
  ``begs[k]`` (k >= 1) the start of Pre_{D-k+1}.
* ``ends[k]``: one past the last address executed at a step whose k innermost indices are at their
  last value; ``ends[0]`` is the end of Loop and ``ends[k]`` the end of Post_{D-k+1}.

So ``begs`` is non-increasing from ``begs[D] = 0``, ``ends`` non-decreasing to
``ends[D] = len(words)``, and ``begs[0] <= ends[0]``: every instruction is reachable.
"""

from dataclasses import dataclass, field

import numpy as np

from .encoding import (
    LUT_ENTRIES,
    MAX_LEVELS,
    N_CONSTS,
    N_LUTS,
    N_REGS,
    IsaError,
    Op,
    decode,
)

__all__ = ["Program", "check_range_table", "range_select", "step_ranges"]


@dataclass(frozen=True)
class Program:
    """An assembled program.

    Attributes
    ----------
    words : tuple of int
        32-bit instruction words, Pre_1 first.
    begs, ends : tuple of int
        The range table, D+1 entries each (see the module docstring).
    consts : tuple of int
        k0..k3, signed 32-bit.
    luts : tuple of tuple of int
        Lookup tables t0, t1, ... of 33 signed 16-bit entries each.
    rp0, rp1 : tuple of str
        Names bound to the RP0 / RP1 reads: the k-th instruction (in address order) that reads
        ``i0`` reads tensor ``rp0[k]``; empty when unnamed.
    outputs : tuple of str
        Names bound to the ``out`` instructions in address order.
    xstride : tuple of int
        Register stride of each level (outermost first; empty or missing: 0): at a step of
        accumulation index ``(a_0, ..., a_{D-1})`` an instruction with ``x`` set addresses
        ``d + x`` and ``a + x`` with ``x = sum_j a_j * xstride[j]`` (``docs/isa.md``).
    xspan : int
        The register offsets the program is written for: ``x`` runs over ``0 .. xspan - 1``
        (:attr:`regs` counts them; :func:`merit.isa.execute` refuses a space that goes past).
    """
    words: tuple
    begs: tuple
    ends: tuple
    consts: tuple = (0,) * N_CONSTS
    luts: tuple = ()
    rp0: tuple = field(default=())
    rp1: tuple = field(default=())
    outputs: tuple = field(default=())
    xstride: tuple = field(default=())
    xspan: int = 1

    def __post_init__(self):
        object.__setattr__(self, "words", tuple(int(w) for w in self.words))
        object.__setattr__(self, "begs", tuple(int(v) for v in self.begs))
        object.__setattr__(self, "ends", tuple(int(v) for v in self.ends))
        object.__setattr__(self, "consts", tuple(int(v) for v in self.consts))
        object.__setattr__(self, "luts", tuple(tuple(int(v) for v in t) for t in self.luts))
        xstride = tuple(int(v) for v in self.xstride)
        if len(xstride) > len(self.begs) - 1 or any(not 0 <= v < N_REGS for v in xstride):
            raise IsaError(f"xstride must give at most one register stride 0..{N_REGS - 1} per "
                           f"level ({len(self.begs) - 1}), not {list(xstride)}")
        xstride += (0,) * (len(self.begs) - 1 - len(xstride))
        object.__setattr__(self, "xstride", xstride)
        if isinstance(self.xspan, bool) or not 1 <= int(self.xspan) <= N_REGS:
            raise IsaError(f"xspan must be 1..{N_REGS}, not {self.xspan!r}")
        object.__setattr__(self, "xspan", int(self.xspan))
        check_range_table(self.begs, self.ends, len(self.words))
        for i, w in enumerate(self.words):
            try:
                decode(w)
            except IsaError as e:
                raise IsaError(f"address {i}: {e}") from None
        if len(self.consts) != N_CONSTS:
            raise IsaError(f"a program has {N_CONSTS} constants, not {len(self.consts)}")
        for k, v in enumerate(self.consts):
            if not -(1 << 31) <= v < (1 << 31):
                raise IsaError(f"constant k{k} must be a signed 32-bit value, not {v}")
        if len(self.luts) > N_LUTS:
            raise IsaError(f"at most {N_LUTS} lookup tables, not {len(self.luts)}")
        for t, table in enumerate(self.luts):
            if len(table) != LUT_ENTRIES or not all(-32768 <= v <= 32767 for v in table):
                raise IsaError(f"lookup table t{t} must have {LUT_ENTRIES} int16 entries")
        for ins in self.instructions:
            if ins.op == Op.LOOKUP and ins.fn >= len(self.luts):
                raise IsaError(f"lookup uses table t{ins.fn}, but the program defines "
                               f"{len(self.luts)} table(s)")
        for port, names in ((0, self.rp0), (1, self.rp1)):
            n = len(self.reads(port))
            if names and len(names) != n:
                raise IsaError(f"{n} instruction(s) read i{port} but {len(names)} "
                               f"name(s) are bound to it")
        if self.outputs and len(self.outputs) != len(self.out_addresses):
            raise IsaError(f"{len(self.out_addresses)} out instruction(s) but "
                           f"{len(self.outputs)} output name(s)")

    @property
    def levels(self):
        """D, the number of accumulation levels."""
        return len(self.begs) - 1

    @property
    def instructions(self):
        return tuple(decode(w) for w in self.words)

    def reads(self, port):
        """Addresses of the instructions that read RP``port``, in order (= tensor slots)."""
        return tuple(i for i, ins in enumerate(self.instructions) if ins.reads_rp(port))

    @property
    def out_addresses(self):
        return tuple(i for i, ins in enumerate(self.instructions) if ins.op == Op.OUT)

    @property
    def regs(self):
        """Registers used (highest register number read or written, plus one)."""
        used = [-1]
        for ins in self.instructions:
            top = self.xspan - 1 if ins.x else 0
            if ins.writes_reg:
                used.append(ins.d + top)
            used += [code + (top if n == 0 else 0) for n, code in enumerate(ins.reads())
                     if code < N_REGS]
        return max(used) + 1

    def xoffset(self, index):
        """The register offset ``x`` of the step at accumulation ``index`` (one entry per level,
        outermost first; IsaError beyond ``xspan``)."""
        x = sum(int(i) * s for i, s in zip(index, self.xstride, strict=True))
        if x >= self.xspan:
            raise IsaError(f"register offset x = {x} at accumulation index {tuple(index)}: the "
                           f"program's xspan is {self.xspan} (xstride {list(self.xstride)})")
        return x

    def with_levels(self, levels):
        """The same program for ``levels`` >= D accumulation levels (empty inner Pre/Post)."""
        extra = levels - self.levels
        if extra < 0:
            raise IsaError(f"the program has {self.levels} levels; cannot run it with {levels}")
        begs = (self.begs[0],) * extra + self.begs
        ends = (self.ends[0],) * extra + self.ends
        return Program(self.words, begs, ends, self.consts, self.luts, self.rp0, self.rp1,
                       self.outputs, self.xstride + (0,) * extra, self.xspan)


def check_range_table(begs, ends, length):
    """Raise IsaError unless (begs, ends) is a valid range table for a program of ``length``."""
    if len(begs) != len(ends):
        raise IsaError(f"range table: begs has {len(begs)} entries but ends has {len(ends)}")
    if not 1 <= len(begs) <= MAX_LEVELS + 1:
        raise IsaError(f"range table must have 1..{MAX_LEVELS + 1} entries per side "
                       f"(levels + 1), not {len(begs)}")
    for k in range(1, len(begs)):
        if begs[k] > begs[k - 1]:
            raise IsaError(f"range table: begs must be non-increasing, but begs[{k}]={begs[k]} "
                           f"> begs[{k - 1}]={begs[k - 1]}")
        if ends[k] < ends[k - 1]:
            raise IsaError(f"range table: ends must be non-decreasing, but ends[{k}]={ends[k]} "
                           f"< ends[{k - 1}]={ends[k - 1]}")
    if begs[-1] != 0 or ends[-1] != length:
        raise IsaError(f"range table: Pre_1 must start at 0 and Post_1 end at the program "
                       f"length {length}, not begs[-1]={begs[-1]}, ends[-1]={ends[-1]}")
    if begs[0] > ends[0]:
        raise IsaError(f"range table: Loop is [begs[0], ends[0]) = [{begs[0]}, {ends[0]}), "
                       f"begs[0] must not exceed ends[0]")


def range_select(index, shape):
    """(k_first, k_last) of one step: how many innermost indices are at their first / last value.

    ``index`` and ``shape`` are the accumulation index of the step and the accumulation extents,
    outermost first (one entry per level).
    """
    k_first = k_last = 0
    for i in reversed(index):
        if i != 0:
            break
        k_first += 1
    for i, n in zip(reversed(index), reversed(shape), strict=True):
        if i != n - 1:
            break
        k_last += 1
    return k_first, k_last


def step_ranges(program, shape):
    """Yield ``(index, start, end)`` for every step of the accumulation space ``shape`` in order.

    The accumulation space has one dimension per level; ``shape`` must have ``program.levels``
    entries (use :meth:`Program.with_levels` first when the program has fewer).
    """
    shape = tuple(int(n) for n in shape)
    if len(shape) != program.levels:
        raise IsaError(f"accumulation shape {shape} has {len(shape)} levels, the program "
                       f"{program.levels}")
    if any(n < 1 for n in shape):
        raise IsaError(f"accumulation extents must be at least 1, not {shape}")
    for index in np.ndindex(*shape):
        kf, kl = range_select(index, shape)
        yield index, program.begs[kf], program.ends[kl]
