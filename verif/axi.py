"""The DRAM of the benches: cocotbext-axi's AXI RAM behind a throttle (SPEC §5).

:class:`Dram` attaches ``AxiRamRead`` / ``AxiRamWrite`` (one shared memory) to the AXI4 manager
ports of a DUT and limits them the way the paper's DRAM does: **``bytes_per_cycle`` in all**
(8 by default, 3.2 GB/s at 400 MHz; read data and write data share it, one 64-bit beat costs 8),
a read **latency** in cycles from the read burst's acceptance to its first data beat (bursts are
pipelined, so latency costs throughput only when too few reads are in flight), and optional random
**backpressure** on every channel (seeded pause generators). It also measures the cycles from the
first DRAM request (AR or AW valid) to the last write response, the span SPEC §5 defines for
utilization.
"""

import itertools
import logging

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiReadBus, AxiWriteBus
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite

__all__ = ["Dram", "fill_dram", "check_outputs"]


class Dram:
    """Throttled AXI RAM on the ``prefix`` ports of ``dut`` (``prefix`` = e.g. ``"m_axi_"`` for
    Amaranth's ``m_axi__awaddr``...).

    Parameters
    ----------
    dut, prefix, clock, reset
    size : int
        Bytes of memory.
    read, write : bool
        Which channels the DUT has.
    latency : int
        Cycles from read-burst acceptance to its first data beat.
    bytes_per_cycle : int
        Shared read + write bandwidth.
    rand : random.Random, optional
        With ``backpressure`` > 0: random stalls on AR, R, AW, W and B.
    backpressure : float
        Probability that a channel stalls in a cycle.
    """

    def __init__(self, dut, prefix, clock, reset, *, size, read=True, write=True, latency=20,
                 bytes_per_cycle=8, rand=None, backpressure=0.0):
        self.clock = clock
        self.latency = latency
        self.bytes_per_cycle = bytes_per_cycle
        self.rand = rand
        self.backpressure = backpressure if rand is not None else 0.0
        self.cycle = 0
        self.first_request = None
        self.last_response = None
        self.read_beats = 0
        self.write_beats = 0
        self.writer = self.reader = None
        mem = None
        if write:
            self.writer = AxiRamWrite(AxiWriteBus.from_prefix(dut, prefix), clock, reset,
                                      size=size)
            mem = self.writer.mem
        if read:
            self.reader = AxiRamRead(AxiReadBus.from_prefix(dut, prefix), clock, reset,
                                     size=size, mem=mem)
            mem = self.reader.mem
        self.mem = mem
        self._memory = self.writer or self.reader
        for port in (self.writer, self.reader):
            if port is not None:      # one INFO line per burst would slow long runs down
                port.log.setLevel(logging.WARNING)
        self._ready_at = []
        if self.writer is not None:
            self.writer.w_channel.queue_occupancy_limit = 32      # the DRAM's write buffer
        if self.reader is not None:
            # the RAM model queues the beats of every accepted burst at once (their latency runs
            # from acceptance, bursts overlap); its default of 2 would serialise the latency
            self.reader.r_channel.queue_occupancy_limit = -1
            channel = self.reader.r_channel
            send = channel.send

            async def timed_send(obj):
                self._ready_at.append(self.cycle + self.latency + 1)
                await send(obj)
            channel.send = timed_send
        for port in self._stall_only():
            port.set_pause_generator(self._random_pauses())
        self._sigs = {name: getattr(dut, f"{prefix}_{name}", None)
                      for name in ("arvalid", "awvalid", "bvalid", "bready", "rvalid", "rready",
                                   "wvalid", "wready")}
        cocotb.start_soon(self._run())

    def _stall_only(self):
        ports = []
        if self.reader is not None:
            ports.append(self.reader.ar_channel)
        if self.writer is not None:
            ports += [self.writer.aw_channel, self.writer.b_channel]
        return ports

    def _random_pauses(self):
        if not self.backpressure:
            return itertools.repeat(0)
        return (int(self.rand.random() < self.backpressure) for _ in itertools.count())

    def _stall(self):
        return bool(self.backpressure) and self.rand.random() < self.backpressure

    def _high(self, name):
        sig = self._sigs[name]
        return sig is not None and sig.value.is_resolvable and int(sig.value) == 1

    async def _run(self):
        tokens = 0
        last_was_write = False
        r = self.reader.r_channel if self.reader is not None else None
        w = self.writer.w_channel if self.writer is not None else None
        edge = RisingEdge(self.clock)
        while True:
            await edge
            self.cycle += 1
            if self.first_request is None and (self._high("arvalid") or self._high("awvalid")):
                self.first_request = self.cycle
            if self._high("bvalid") and self._high("bready"):
                self.last_response = self.cycle
            if self._high("rvalid") and self._high("rready"):
                self.read_beats += 1
            if self._high("wvalid") and self._high("wready"):
                self.write_beats += 1
            tokens = min(tokens + self.bytes_per_cycle, max(8, self.bytes_per_cycle))
            read_ok = False
            if r is not None:
                head = len(self._ready_at) - r.count()
                read_ok = r.count() > 0 and self._ready_at[head] <= self.cycle
            write_ok = w is not None and self._high("wvalid")
            give_read = give_write = False
            if tokens >= 8:
                if read_ok and (not write_ok or last_was_write):
                    give_read = True
                elif write_ok:
                    give_write = True
            if give_read and self._stall():
                give_read = False
            if give_write and self._stall():
                give_write = False
            if give_read or give_write:
                tokens -= 8
                last_was_write = give_write
            if r is not None:
                r.pause = not give_read
            if w is not None:
                w.pause = not give_write

    # ---- memory access for the benches ---------------------------------------------------------

    def write(self, address, data):
        self._memory.write(address, data)

    def read(self, address, length):
        return self._memory.read(address, length)

    @property
    def cycles(self):
        """Cycles from the first DRAM request to the last write response."""
        if self.first_request is None or self.last_response is None:
            return None
        return self.last_response - self.first_request


def fill_dram(dram, kernel, problem, nrng):
    """Fill the whole DRAM of a compiled kernel with random bytes, then place the problem's input
    tensors (fixed values, or random int16 in -64..63) at their addresses.

    Returns ``(image, arrays)``: the bytes written and the int16 inputs in ``problem.tensors``
    order."""
    image = nrng.integers(0, 256, size=kernel.dram_bytes, dtype=np.uint8)
    arrays = []
    for tensor in problem.tensors:
        array = (np.asarray(tensor.value).astype(np.int16) if tensor.value is not None
                 else nrng.integers(-64, 64, size=tensor.shape).astype(np.int16))
        arrays.append(array)
        start = kernel.tensors[tensor.name]
        image[start:start + array.nbytes] = np.frombuffer(array.astype("<i2").tobytes(),
                                                          np.uint8)
    dram.write(0, image.tobytes())
    return image, arrays


def check_outputs(dram, kernel, problem, image, expected):
    """Assert that every output in DRAM equals ``expected`` (the golden ISA model's outputs, in
    ``problem.outputs`` order) and that no byte outside the outputs changed."""
    expected = expected if isinstance(expected, tuple) else (expected,)
    got_image = np.frombuffer(dram.read(0, kernel.dram_bytes), np.uint8)
    untouched = np.ones(kernel.dram_bytes, dtype=bool)
    n_out = int(np.prod(problem.p_shape))
    for (name, address), out, want in zip(kernel.outputs, problem.outputs, expected,
                                          strict=True):
        untouched[address:address + 2 * n_out] = False
        raw = got_image[address:address + 2 * n_out].view("<i2").reshape(problem.p_shape)
        got = out.finish(raw)
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"output {name}: {len(bad)} of {got.size} values differ, first at "
                               f"{tuple(bad[0])}: got {got[tuple(bad[0])]}, "
                               f"expected {want[tuple(bad[0])]}")
    changed = np.flatnonzero(untouched & (got_image != image))
    assert changed.size == 0, (f"{changed.size} DRAM bytes outside the outputs changed, first "
                               f"at {changed[0]:#x}")
