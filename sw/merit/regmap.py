"""The MERIT-z register map: control registers, then the kernel configuration, then the LUT table.

The configuration registers are generated from the one description of the kernel configuration,
:mod:`merit.kernelcfg` (§V of the MERIT paper): its scalar fields, in bit order, are placed into
32-bit registers first-fit in order, a field never straddling two registers. The same map drives
the register bank (:mod:`meritz.regs`), the benches and the documentation
(``python -m merit.regmap`` writes ``docs/registers.md``). Every value written through
:meth:`RegisterMap.config_words` and :meth:`RegisterMap.lut_words_for` is checked against its
field first: nothing is truncated.

The two lookup tables of the ISA (``merit.isa``: 2 x 33 int16) are not registers: they live in a
table window at :data:`LUT_BASE`, two entries per word, written through the same control port.
"""

import enum
import sys
from dataclasses import dataclass
from pathlib import Path

from merit.isa import LUT_ENTRIES, N_LUTS

__all__ = ["Access", "Error", "RegField", "Register", "RegisterMap", "register_map",
           "CHECKS", "ID_MAGIC", "LUT_BASE", "BUDGET_BYTES", "markdown", "main"]

#: §V-A of the MERIT paper: everything a kernel needs in under 0.5 KB of registers.
BUDGET_BYTES = 512
#: Byte address of the lookup-table window (after the register budget).
LUT_BASE = 0x200
#: ``ID.magic``: "MZ".
ID_MAGIC = 0x4D5A


class Access(enum.Enum):
    RO = "ro"           # read only; writes ignored
    RW = "rw"           # read / write
    W1 = "w1"           # write 1 to act; reads 0
    W1C = "w1c"         # write 1 to clear


class Error(enum.IntEnum):
    """``STATUS.error``: why the last run stopped (0: it did not)."""
    NONE = 0
    CONFIG = 1          # a configuration check failed at START (STATUS.info = check number)
    CONFLICT = 2        # a read network detected a routing (bank) conflict (info = TAU)
    AXI_READ = 3        # a DRAM read returned SLVERR / DECERR
    AXI_WRITE = 4       # a DRAM write returned SLVERR / DECERR
    TAU = 5             # another TAU error: tile FIFO, illegal instruction (info = TAU)
    ABORTED = 6         # CTRL.abort while busy


#: The configuration checks made at START, numbered from 1 (``STATUS.info``); any failure refuses
#: the kernel: nothing is read or written, ``STATUS`` shows done with error CONFIG.
CHECKS = (
    ("sizes", "every p_size[j] and a_size[j] is at least 1"),
    ("tiles", "every p_tile[j] and a_tile[j] is at least 1"),
    ("lanes", "every lane bit names a parallel index (lane_index[i] < 6) and p_tile[j] is a "
              "multiple of the lanes on index j"),
    ("range", "the range table is valid: ends[k] <= instructions, begs non-increasing, ends "
              "non-decreasing, begs[0] <= ends[0]"),
    ("slots", "every enabled slot has extent, box and rows >= 1, rows within its RP's SRAM, "
              "rotate < log2(lanes) and an even base"),
    ("outputs", "every out_base is even (16-bit elements)"),
    ("share", "share_log2 is 0, or share_slot names an enabled slot that is the only enabled "
              "slot of its RP"),
    ("footprint", "every enabled slot's tile rows hold its footprint: (box[0] - 1) * lpitch[0] + "
                  "(box[1] - 1) * lpitch[1] + (box[2] - 1) * lpitch[2] + box[3] <= rows * lanes "
                  "(the DMA would otherwise hand on rows past the tile)"),
    ("rows", "the enabled slots of each RP fit its SRAM together: the sum of their rows is at "
             "most the RP's SRAM rows (a job holds one tile of every slot)"),
    ("share2", "share2_log2 is 0, or share_log2 is not 0 and share2_slot names an enabled slot "
               "that is the only enabled slot of the RP other than share_slot's (2-D sharing: "
               "one shared slot per RP)"),
    ("block", "share_block is 0, or share_log2 is not 0 and share2_log2 is 0 (the block walk "
              "with one shared slot: share_slot's groups take the tiles along the indices it "
              "does not move along)"),
    ("hold", "each RP whose hold bit is set has exactly one enabled slot, neither share_slot "
             "(share_log2 not 0) nor share2_slot (share2_log2 not 0): a held tile belongs to one "
             "TAU"),
)


@dataclass(frozen=True)
class RegField:
    """Bits ``[lsb, lsb + width)`` of a register; ``config`` = bit offset in the kernel
    configuration (``merit.kernelcfg.flatten``), None for control fields; ``access`` = how
    software sees the field when it differs from its register's (W1, W1C bits), else None."""
    name: str
    lsb: int
    width: int
    signed: bool = False
    config: int = None
    doc: str = ""
    access: Access = None

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: Access
    fields: tuple
    doc: str = ""


def _control_registers():
    return (
        Register("ID", 0x000, Access.RO, (
            RegField("magic", 0, 16, doc=f"{ID_MAGIC:#06x} (\"MZ\")"),
            RegField("lanes", 16, 8, doc="lanes per TAU"),
            RegField("taus", 24, 8, doc="number of TAUs"),
        ), "identification"),
        Register("CTRL", 0x004, Access.RW, (
            RegField("start", 0, 1, access=Access.W1,
                     doc="W1: check the configuration and start (ignored while busy)"),
            RegField("abort", 1, 1, access=Access.W1,
                     doc="W1: stop a run: no new tile, TAUs reset, the DRAM port drained; ends "
                         "with error ABORTED"),
            RegField("irq_enable", 2, 1, doc="RW: the irq line follows STATUS.done"),
        ), "control (start and abort read as 0)"),
        Register("STATUS", 0x008, Access.RO, (
            RegField("busy", 0, 1, doc="a run is in progress"),
            RegField("done", 1, 1, access=Access.W1C,
                     doc="W1C: the last run ended: every tile written and every write response "
                         "received, or refused / stopped (error)"),
            RegField("error", 4, 4, doc="merit.regmap.Error of the last run"),
            RegField("info", 8, 8, doc="CONFIG: number of the failed check; CONFLICT / TAU: the "
                                      "TAU"),
        ), "status (done and irq are cleared by writing 1 to done or by START)"),
        Register("TILES", 0x00C, Access.RO, (
            RegField("count", 0, 32, doc="parallel tiles handed to TAUs in this run"),
        ), "progress"),
        Register("CYCLES", 0x010, Access.RO, (
            RegField("count", 0, 32, doc="cycles from START to done (saturating)"),
        ), "run time"),
    )


class RegisterMap:
    """The register map for one kernel-configuration layout.

    Attributes
    ----------
    registers : tuple of Register
        Control registers first, then the configuration registers (``CFG<k>``), by offset.
    config_registers : tuple of Register
    lut_base, lut_words : int
        The LUT window: entry ``e`` of table ``t`` is half ``e % 2`` of word
        ``t * ceil(LUT_ENTRIES / 2) + e // 2``.
    size_bytes : int
        Bytes of registers (the LUT window excluded).
    config_bits : int
        Bits of the kernel configuration.
    """

    def __init__(self, **layout_params):
        from merit import kernelcfg

        self.fields = kernelcfg.fields(**layout_params)
        self.config_bits = kernelcfg.total_bits(self.fields)
        control = _control_registers()
        offset = control[-1].offset + 4
        config, fields, used = [], [], 0
        for name, bit, width, sgn in kernelcfg.flatten(self.fields):
            if used + width > 32:
                config.append(Register(f"CFG{len(config)}", offset, Access.RW, tuple(fields)))
                offset, fields, used = offset + 4, [], 0
            fields.append(RegField(name, used, width, sgn, config=bit))
            used += width
        config.append(Register(f"CFG{len(config)}", offset, Access.RW, tuple(fields)))
        self.config_registers = tuple(config)
        self.registers = control + self.config_registers
        self.size_bytes = self.registers[-1].offset + 4
        if self.size_bytes > LUT_BASE:
            raise ValueError(f"the configuration needs {self.size_bytes} bytes of registers, "
                             f"more than the {LUT_BASE} before the LUT window")
        self.lut_base = LUT_BASE
        self.lut_words_per_table = (LUT_ENTRIES + 1) // 2
        self.lut_words = N_LUTS * self.lut_words_per_table
        self._by_name = {r.name: r for r in self.registers}

    def __getitem__(self, name):
        return self._by_name[name]

    def field(self, register, name):
        for f in self[register].fields:
            if f.name == name:
                return f
        raise KeyError(f"{register} has no field {name!r}")

    def config_words(self, values):
        """``[(offset, word)]`` of every configuration register for ``values`` (nested dicts /
        lists as ``merit.compile`` makes; missing fields are 0).

        Raises ValueError (TypeError) naming the field, the value and its range for a value that
        does not fit its field, or listing the fields for an unknown key."""
        from merit.kernelcfg import check_config

        check_config(values, self.fields, where="RegisterMap.config_words")
        flat = dict(_flat_values(values))
        words = []
        for reg in self.config_registers:
            word = 0
            for f in reg.fields:
                word |= (int(flat.get(f.name, 0)) & ((1 << f.width) - 1)) << f.lsb
            words.append((reg.offset, word))
        return words

    @staticmethod
    def word_from_config(reg, bits):
        """The value of configuration register ``reg`` for the configuration integer ``bits``."""
        word = 0
        for f in reg.fields:
            word |= ((bits >> f.config) & ((1 << f.width) - 1)) << f.lsb
        return word

    def lut_words_for(self, luts):
        """``[(offset, word)]`` of the LUT window for ``luts`` (at most N_LUTS tables of at most
        LUT_ENTRIES int16 each; missing entries are 0). A table too many or too long, or an entry
        outside int16, raises ValueError naming it."""
        luts = list(luts)
        if len(luts) > N_LUTS:
            raise ValueError(f"RegisterMap.lut_words_for: {len(luts)} lookup tables; the LUT "
                             f"window at {self.lut_base:#05x} holds {N_LUTS}")
        words = []
        for t, table in enumerate(luts):
            table = list(table)
            if len(table) > LUT_ENTRIES:
                raise ValueError(f"RegisterMap.lut_words_for: table t{t} has {len(table)} "
                                 f"entries; a lookup table holds {LUT_ENTRIES}")
            for e, v in enumerate(table):
                if isinstance(v, bool) or not hasattr(v, "__index__"):
                    raise TypeError(f"RegisterMap.lut_words_for: t{t}[{e}] must be an integer, "
                                    f"not {v!r}")
                if not -32768 <= int(v) <= 32767:
                    raise ValueError(f"RegisterMap.lut_words_for: t{t}[{e}] = {int(v)} does not "
                                     f"fit its 16-bit signed entry (-32768..32767)")
            table = table + [0] * (2 * self.lut_words_per_table - len(table))
            for w in range(self.lut_words_per_table):
                lo, hi = int(table[2 * w]) & 0xFFFF, int(table[2 * w + 1]) & 0xFFFF
                offset = self.lut_base + 4 * (t * self.lut_words_per_table + w)
                words.append((offset, lo | hi << 16))
        return words


def _flat_values(values, prefix=""):
    """Yield ``(flat name, value)`` of the scalars of ``values`` (names as in ``flatten``)."""
    if isinstance(values, dict):
        for key, v in values.items():
            yield from _flat_values(v, f"{prefix}.{key}" if prefix else key)
    elif hasattr(values, "__len__") and not isinstance(values, (str, bytes)):
        for i, v in enumerate(values):
            yield from _flat_values(v, f"{prefix}[{i}]")
    else:
        yield prefix, values


def register_map(**layout_params):
    """The :class:`RegisterMap` of ``merit.kernelcfg.fields(**layout_params)``."""
    return RegisterMap(**layout_params)


def _bits(f):
    return f"{f.lsb + f.width - 1}:{f.lsb}" if f.width > 1 else f"{f.lsb}"


def markdown(rmap=None):
    """``docs/registers.md`` for ``rmap`` (default: the default configuration)."""
    rmap = register_map() if rmap is None else rmap
    out = [
        "# MERIT-z registers",
        "",
        "Generated by `python -m merit.regmap` from `merit.kernelcfg` (do not edit). The control",
        "port is an AXI4-Lite slave, 32-bit data, byte addresses. An address that holds no",
        "register answers SLVERR; so does a write to a configuration register or the LUT window",
        "while STATUS.busy (the configuration is held stable for the whole run).",
        "",
        f"**Total: {rmap.size_bytes} bytes of registers** ({len(rmap.registers)} registers: "
        f"{len(rmap.registers) - len(rmap.config_registers)} control, "
        f"{len(rmap.config_registers)} configuration holding {rmap.config_bits} bits), under the "
        f"{BUDGET_BYTES}-byte budget of §V-A of the MERIT paper. The lookup tables are a separate "
        f"window of {4 * rmap.lut_words} bytes at {rmap.lut_base:#05x}.",
        "",
        "## Running a kernel",
        "",
        "1. Write the configuration registers (`merit.regmap.RegisterMap.config_words`) and the",
        "   LUT window (`lut_words_for`).",
        "2. Write CTRL.start = 1 (with CTRL.irq_enable to get the interrupt).",
        "3. Wait for STATUS.done (or the irq line). done means every output tile has been written",
        "   and every write response received. STATUS.error says whether it succeeded.",
        "4. Write STATUS.done = 1 to clear done and the interrupt (START also clears them).",
        "",
        "## Error codes (STATUS.error)",
        "",
        "| code | name | meaning |",
        "|---|---|---|",
    ]
    meaning = {
        Error.NONE: "the run completed",
        Error.CONFIG: "a configuration check failed at START; nothing was read or written",
        Error.CONFLICT: "a Read Pipeline detected a bank conflict; the run was stopped",
        Error.AXI_READ: "a DRAM read answered SLVERR / DECERR; the run was stopped",
        Error.AXI_WRITE: "a DRAM write answered SLVERR / DECERR; the run was stopped",
        Error.TAU: "another TAU error (tile FIFO, illegal instruction); the run was stopped",
        Error.ABORTED: "CTRL.abort while busy",
    }
    out += [f"| {e.value} | {e.name} | {meaning[e]} |" for e in Error]
    out += ["", "A stopped run issues no new DRAM request; requests already accepted by DRAM are",
            "completed (writes with empty strobes), so a stopped run never hangs the bus.",
            "", "## Configuration checks (STATUS.info for error CONFIG)", "",
            "| info | check |", "|---|---|"]
    out += [f"| {i} | {doc} |" for i, (_, doc) in enumerate(CHECKS, 1)]
    out += ["", "## Control registers", "",
            "| offset | register | bits | field | access | meaning |", "|---|---|---|---|---|---|"]
    for reg in rmap.registers[:len(rmap.registers) - len(rmap.config_registers)]:
        for f in reg.fields:
            out.append(f"| {reg.offset:#05x} | {reg.name} | {_bits(f)} | {f.name} | "
                       f"{(f.access or reg.access).value} | {f.doc} |")
    out += ["", "## Configuration registers (read / write; meaning in `merit.kernelcfg`)", "",
            "| offset | register | bits | field | signed |", "|---|---|---|---|---|"]
    for reg in rmap.config_registers:
        for f in reg.fields:
            out.append(f"| {reg.offset:#05x} | {reg.name} | {_bits(f)} | {f.name} | "
                       f"{'yes' if f.signed else ''} |")
    out += ["", "## LUT window", "",
            f"{N_LUTS} tables of {LUT_ENTRIES} int16 entries; entry `e` of table `t` is bits "
            f"`16*(e%2)+15 : 16*(e%2)` of the word at `{rmap.lut_base:#05x} + 4*(t*"
            f"{rmap.lut_words_per_table} + e//2)`.", ""]
    return "\n".join(out)


def main(argv=None):
    """Write ``docs/registers.md`` (or the path given) and print the total."""
    argv = sys.argv[1:] if argv is None else argv
    rmap = register_map()
    path = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "docs" / "registers.md"
    path.write_text(markdown(rmap))
    print(f"{path}: {len(rmap.registers)} registers, {rmap.size_bytes} bytes "
          f"(budget {BUDGET_BYTES}); LUT window {4 * rmap.lut_words} bytes at "
          f"{rmap.lut_base:#05x}")


if __name__ == "__main__":
    main()
