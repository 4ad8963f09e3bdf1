"""The architecture of MERIT-z as plain data: its constants and :class:`Arch`, one configuration.

Everything that the compiler, the performance model, the simulator and the RTL must agree on and
that is not a field of the kernel configuration (:mod:`merit.kernelcfg`) lives here: SRAM sizes,
the DRAM bus, burst and tile-address widths, the slot counts. ``meritz`` builds its components
from these numbers; nothing here imports Amaranth. Sizes follow §V of the MERIT paper and
``docs/architecture.md`` (Limits).
"""

from dataclasses import dataclass

from merit.checks import check_lanes, check_range, check_taus

__all__ = ["Arch", "RP_BYTES", "RP_PORTS", "CP_BYTES", "BEAT_BYTES", "WORD_BYTES", "WORDS_PER_BEAT",
           "MAX_BURST", "PLAIN_BURSTS", "TILE_ADDRESS_BITS", "RP0_SLOTS", "RP1_SLOTS", "OUTPUTS",
           "INSTRUCTIONS", "MAX_SLOTS", "MAX_OUTPUTS", "MAX_INSTRUCTIONS"]

#: SRAM bytes of the two Read Pipelines of one TAU (RP0, RP1) and of the Compute Pipeline's
#: partial results (§V of the MERIT paper: 16 KB + 8 KB, 5 KB).
RP_BYTES = (16384, 8192)
CP_BYTES = 5120
#: Ports of each SRAM bank of a Read Pipeline: 2, one read and one write port, so that the
#: rows a load writes never take a read cycle from the Compute Pipeline (``meritz.tau.rp.banks``,
#: ``merit.perf``); 1 builds single-port banks (writes win, a read waits a cycle per row).
RP_PORTS = 2
#: The DRAM data bus: 8-byte beats of four 16-bit words.
BEAT_BYTES = 8
WORD_BYTES = 2
WORDS_PER_BEAT = BEAT_BYTES // WORD_BYTES
#: Longest AXI4 burst of the DMA and the Write Pipeline (beats).
MAX_BURST = 16
#: While a TAU's load that other TAUs wait for is urgent (the DRAM port serves it first): read
#: bursts each other TAU may keep outstanding (``meritz.arbiter``, ``merit.perf``).
PLAIN_BURSTS = 1
#: Width of a tile address (an SRAM word address of one RP; wraps).
TILE_ADDRESS_BITS = 16
#: Most TAUs of MERIT-z (the dispatcher's and the control port's TAU fields).
MAX_TAUS = 16
#: Default slot counts: inputs of RP0 and RP1, output tensors, instruction slots; and their limits.
RP0_SLOTS, RP1_SLOTS, OUTPUTS, INSTRUCTIONS = 2, 1, 3, 16
MAX_SLOTS, MAX_OUTPUTS, MAX_INSTRUCTIONS = 4, 4, 64


@dataclass(frozen=True)
class Arch:
    """One MERIT-z configuration, checked when made.

    Parameters
    ----------
    lanes : int
        Lanes (ALUs, SRAM banks) per TAU, a power of two.
    taus : int
        Tile accumulation units, 1 to 16.
    rp_bytes : (int, int)
        SRAM bytes of RP0 and RP1, each a power-of-two number of ``lanes``-word rows.
    cp_bytes : int
        Partial-result SRAM bytes of the Compute Pipeline.
    rp0_slots, rp1_slots, outputs : int
        Input slots per RP and output tensors, 1 to 4.
    instructions : int
        Program slots, 1 to 64.
    """

    lanes: int = 32
    taus: int = 4
    rp_bytes: tuple = RP_BYTES
    cp_bytes: int = CP_BYTES
    rp0_slots: int = RP0_SLOTS
    rp1_slots: int = RP1_SLOTS
    outputs: int = OUTPUTS
    instructions: int = INSTRUCTIONS

    def __post_init__(self):
        check_lanes(self.lanes)
        check_taus(self.taus)
        if not isinstance(self.rp_bytes, (tuple, list)) or len(self.rp_bytes) != 2:
            raise TypeError(f"rp_bytes must be a pair (RP0, RP1) of byte counts, not "
                            f"{self.rp_bytes!r}")
        object.__setattr__(self, "rp_bytes", tuple(self.rp_bytes))
        for name, value in zip(("rp0_bytes", "rp1_bytes"), self.rp_bytes, strict=True):
            check_range(name, value, 2 * self.lanes, 1 << 30)
            rows = value // (2 * self.lanes)
            if value % (2 * self.lanes) or rows < 2 or rows & (rows - 1):
                raise ValueError(f"{name} must be a power-of-two number of {self.lanes}-word "
                                 f"rows, not {value}")
        check_range("cp_bytes", self.cp_bytes, 1, 1 << 30)
        check_range("rp0_slots", self.rp0_slots, 1, MAX_SLOTS)
        check_range("rp1_slots", self.rp1_slots, 1, MAX_SLOTS)
        check_range("outputs", self.outputs, 1, MAX_OUTPUTS)
        check_range("instructions", self.instructions, 1, MAX_INSTRUCTIONS)

    @property
    def rows(self):
        """SRAM rows of RP0 and RP1 (``lanes`` 16-bit words each)."""
        return tuple(b // (2 * self.lanes) for b in self.rp_bytes)

    @property
    def layout_params(self):
        """The keyword parameters of the kernel-configuration layout."""
        return dict(rp0_slots=self.rp0_slots, rp1_slots=self.rp1_slots, outputs=self.outputs,
                    instructions=self.instructions)
