"""The Compute Pipeline of a TAU: the :class:`~meritz.tau.cp.sequencer.Sequencer` feeding the
:class:`~meritz.tau.cp.simd.SimdArray` (§V-B of the MERIT paper)."""

from amaranth import Cat, Module, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from meritz.tau.cp.sequencer import Sequencer, job_layout, sequencer_config_layout
from meritz.tau.cp.simd import SimdArray, simd_config_layout

__all__ = ["ComputePipeline", "cp_config_layout"]


def cp_config_layout(program_depth):
    return data.StructLayout({
        "seq": sequencer_config_layout(program_depth),
        "simd": simd_config_layout(),
    })


class ComputePipeline(wiring.Component):
    """The Compute Pipeline: :class:`~meritz.tau.cp.sequencer.Sequencer` feeding a
    :class:`~meritz.tau.cp.simd.SimdArray`.

    Parameters
    ----------
    lanes, program_depth, sram_bytes
        As the two blocks.

    Members
    -------
    job : In(stream.Signature(job_layout()))
    rp0, rp1 : In(stream.Signature(ArrayLayout(signed(16), lanes)))
    out : Out(stream.Signature(ArrayLayout(signed(16), lanes)))
    config : In(cp_config_layout(program_depth))
    error : Out(2)
        Bit 0: illegal instruction (SIMD); bit 1: bad job (sequencer).
    idle : Out(1)
        No job in progress and the SIMD array drained.
    """

    def __init__(self, *, lanes=32, program_depth=32, sram_bytes=5120):
        self.simd = SimdArray(lanes=lanes, sram_bytes=sram_bytes)
        self.seq = Sequencer(lanes=lanes, program_depth=program_depth, sram_bytes=sram_bytes)
        self.lanes, self.program_depth = lanes, program_depth
        vec = stream.Signature(data.ArrayLayout(signed(16), lanes))
        super().__init__({
            "job": In(stream.Signature(job_layout())),
            "rp0": In(vec),
            "rp1": In(vec),
            "out": Out(vec),
            "config": In(cp_config_layout(program_depth)),
            "error": Out(2),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.seq = seq = self.seq
        m.submodules.simd = simd = self.simd
        connect(m, flipped(self.job), seq.job)
        connect(m, seq.cmd, simd.cmd)
        connect(m, flipped(self.rp0), simd.rp0)
        connect(m, flipped(self.rp1), simd.rp1)
        connect(m, simd.out, flipped(self.out))
        m.d.comb += [
            seq.config.eq(self.config.seq),
            simd.config.eq(self.config.simd),
            self.error.eq(Cat(simd.error, seq.error)),
            self.idle.eq(seq.idle & ~simd.busy),
        ]
        return m
