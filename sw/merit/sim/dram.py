"""The DRAM of the benches: cocotbext-axi's AXI RAM behind a throttle (``docs/perf.md``).

:class:`Dram` attaches ``AxiRamRead`` / ``AxiRamWrite`` (one shared memory) to the AXI4 manager
ports of a DUT and limits them the way the paper's DRAM does: **``bytes_per_cycle`` in all**
(8 by default, 3.2 GB/s at 400 MHz; read data and write data share it, one 64-bit beat costs 8),
a read **latency** in cycles from the read burst's acceptance to its first data beat (bursts are
pipelined, so latency costs throughput only when too few reads are in flight), and optional random
**backpressure** on every channel (seeded pause generators). For the robustness benches both
latencies may be random: a ``(low, high)`` range is drawn again for each read burst, and
``write_latency`` delays each write response after the burst's last W beat. Answers keep the order
of the requests, unless ``reorder``: then read bursts of different IDs are answered in any order
and their beats interleaved, as AXI4 allows (the beats of one ID stay in order).

It also measures the cycles from the first DRAM request (AR or AW valid) to the last write
response, the span ``docs/perf.md`` defines for utilization, and counts the bursts still owed an
answer (:meth:`Dram.describe` names them when a bench's watchdog fires).

An access outside the ``size`` bytes of memory answers SLVERR and changes nothing (cocotbext-axi's
RAM would wrap the address around); :attr:`Dram.outside` lists them.

Reset: the RAM's AXI ports follow ``reset`` (AXI resets both sides of an interface together):
bursts in flight are dropped, the memory keeps its contents.
"""

import itertools
import logging

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiReadBus, AxiWriteBus
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite

__all__ = ["Dram", "fill_dram", "int16_data", "check_outputs", "check_untouched"]


def _check_latency(name, value):
    """``value`` as ``(low, high)`` cycles (an int is a fixed latency)."""
    low_high = (value, value) if isinstance(value, int) and not isinstance(value, bool) else value
    if (not isinstance(low_high, (tuple, list)) or len(low_high) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in low_high)):
        raise TypeError(f"{name} must be an integer or a (low, high) pair, not {value!r}")
    low, high = low_high
    if not 0 <= low <= high:
        raise ValueError(f"{name} must be cycles with 0 <= low <= high, not {value!r}")
    return low, high


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
    latency : int or (int, int)
        Cycles from read-burst acceptance to its first data beat; a ``(low, high)`` range is
        drawn (inclusive) for each burst.
    write_latency : int or (int, int)
        Cycles from the last W beat of a burst to its write response being offered (drawn per
        burst from a range); 0 = at once.
    bytes_per_cycle : int
        Shared read + write bandwidth.
    rand : random.Random, optional
        With ``backpressure`` > 0: random stalls on AR, R, AW, W and B; draws the latencies.
    backpressure : float
        Probability that a channel stalls in a cycle.
    reorder : bool
        Each R beat comes from a burst chosen at random among the oldest ready burst of each
        ID: bursts of different IDs overtake each other and interleave.
    """

    def __init__(self, dut, prefix, clock, reset, *, size, read=True, write=True, latency=20,
                 write_latency=0, bytes_per_cycle=8, rand=None, backpressure=0.0,
                 reorder=False):
        self.clock = clock
        self.reset = reset
        self.latency = _check_latency("latency", latency)
        self.write_latency = _check_latency("write_latency", write_latency)
        if rand is None and (self.latency[0] != self.latency[1]
                             or self.write_latency[0] != self.write_latency[1]):
            raise ValueError("a random latency needs rand (a random.Random)")
        if reorder and rand is None:
            raise ValueError("reorder needs rand (a random.Random)")
        self.reorder = reorder
        self._bursts = []           # reorder: [{"id", "at", "beats", "done"}] held read bursts
        self.overtakes = 0          # reorder: R beats handed out before an older burst's
        self.bytes_per_cycle = bytes_per_cycle
        self.rand = rand
        self.backpressure = backpressure if rand is not None else 0.0
        self.cycle = 0
        self.first_request = None
        self.last_response = None
        self.read_beats = 0
        self.write_beats = 0
        self.reads_owed = 0         # read bursts accepted, last beat not yet taken
        self.writes_owed = 0        # write bursts accepted, response not yet taken
        self.last_handshake = None
        self.request_cycles = 0     # cycles with AR or AW valid
        self.outside = []           # ("read" / "write", address) of accesses outside the memory
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
        self.size = size
        if self.writer is not None:
            self.writer._write = self._inside("write", self.writer.write)
        if self.reader is not None:
            self.reader._read = self._inside("read", self.reader.read)
        for port in (self.writer, self.reader):
            if port is not None:      # one INFO line per burst would slow long runs down
                port.log.setLevel(logging.WARNING)
        # cycle from which the head of the R / B queue may go (one entry per queued beat)
        self._ready_at = []
        self._b_ready_at = []
        self._burst_start = True        # the next R beat queued starts a burst
        self._burst_latency = 0
        if self.writer is not None:
            self.writer.w_channel.queue_occupancy_limit = 32      # the DRAM's write buffer
        if self.reader is not None:
            # the RAM model queues the beats of every accepted burst at once (their latency runs
            # from acceptance, bursts overlap); its default of 2 would serialise the latency
            self.reader.r_channel.queue_occupancy_limit = -1
            if reorder:
                self.reader.r_channel.send = self._hold
            else:
                self.reader.r_channel.send = self._timed(self.reader.r_channel.send,
                                                         self._read_ready, self._ready_at)
        if self.writer is not None and self.write_latency != (0, 0):
            self.writer.b_channel.queue_occupancy_limit = -1    # responses wait here, not in W
            self.writer.b_channel.send = self._timed(self.writer.b_channel.send, self._b_ready,
                                                     self._b_ready_at)
        for port in self._stall_only():
            port.set_pause_generator(self._random_pauses())
        self._sigs = {name: getattr(dut, f"{prefix}_{name}", None)
                      for name in ("arvalid", "arready", "rvalid", "rready", "rlast", "awvalid",
                                   "awready", "wvalid", "wready", "bvalid", "bready")}
        cocotb.start_soon(self._run())

    def _inside(self, kind, access):
        """The RAM port's access, refused (the port answers SLVERR) outside the memory."""
        async def checked(address, data_or_length):
            length = data_or_length if kind == "read" else len(data_or_length)
            if not 0 <= address <= self.size - length:
                self.outside.append((kind, address))
                raise ValueError(f"{kind} at {address:#x} outside the {self.size} bytes of DRAM")
            return access(address, data_or_length)
        return checked

    @staticmethod
    def _timed(send, ready, times):
        """``send`` that appends to ``times`` the cycle from which the queued beat may go (after
        the put: a full queue blocks ``send`` with nothing recorded)."""
        async def timed_send(obj):
            at = ready(obj)
            await send(obj)
            times.append(at)
        return timed_send

    async def _hold(self, beat):
        """reorder: keep the RAM model's R beats by burst; ``_run`` hands them out."""
        if self._burst_start:
            self._bursts.append({"id": int(beat.rid), "beats": [], "done": False,
                                 "at": self.cycle + self._draw(self.latency) + 1})
        self._burst_start = bool(int(beat.rlast))
        burst = self._bursts[-1]
        burst["beats"].append(beat)
        burst["done"] = self._burst_start

    def _next_beat(self):
        """reorder: a beat of a random ready burst among the oldest burst of each ID."""
        heads = {}
        for burst in self._bursts:
            heads.setdefault(burst["id"], burst)
        ready = [b for b in heads.values() if b["at"] <= self.cycle and b["beats"]]
        if not ready:
            return None
        burst = self.rand.choice(ready)
        self.overtakes += burst is not self._bursts[0]
        beat = burst["beats"].pop(0)
        if burst["done"] and not burst["beats"]:
            self._bursts.remove(burst)
        return beat

    def _draw(self, low_high):
        low, high = low_high
        return low if low == high else self.rand.randint(low, high)

    def _read_ready(self, beat):
        if self._burst_start:
            self._burst_latency = self._draw(self.latency)
        self._burst_start = bool(int(beat.rlast))
        return self.cycle + self._burst_latency + 1

    def _b_ready(self, _response):
        return self.cycle + self._draw(self.write_latency)

    def _stall_only(self):
        ports = []
        if self.reader is not None:
            ports.append(self.reader.ar_channel)
        if self.writer is not None:
            ports.append(self.writer.aw_channel)
            if self.write_latency == (0, 0):
                ports.append(self.writer.b_channel)
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

    def _in_reset(self):
        return (self.reset is not None and self.reset.value.is_resolvable
                and int(self.reset.value) == 1)

    def _count(self):
        """Handshakes of this cycle: statistics and the bursts still owed an answer."""
        if self._high("arvalid") or self._high("awvalid"):
            self.request_cycles += 1
            if self.first_request is None:
                self.first_request = self.cycle
        fire = {ch: self._high(f"{ch}valid") and self._high(f"{ch}ready")
                for ch in ("ar", "r", "aw", "w", "b")}
        if fire["b"]:
            self.last_response = self.cycle
        self.read_beats += fire["r"]
        self.write_beats += fire["w"]
        self.reads_owed += fire["ar"] - (fire["r"] and self._high("rlast"))
        self.writes_owed += fire["aw"] - fire["b"]
        if any(fire.values()):
            self.last_handshake = self.cycle

    async def _run(self):
        tokens = 0
        last_was_write = False
        r = self.reader.r_channel if self.reader is not None else None
        w = self.writer.w_channel if self.writer is not None else None
        b = self.writer.b_channel if self.write_latency != (0, 0) else None
        edge = RisingEdge(self.clock)
        while True:         # the model of a DRAM: runs as long as the simulation
            await edge
            self.cycle += 1
            if self._in_reset():            # the RAM model drops its bursts
                self.reads_owed = self.writes_owed = 0
                self._burst_start = True
                self._bursts.clear()
                continue
            self._count()
            # the queues hold one entry per queued beat: drop those of beats already sent
            if r is not None:
                del self._ready_at[:len(self._ready_at) - r.count()]
                while self.reorder and r.count() < 2:      # two beats ahead: no bubble
                    beat = self._next_beat()
                    if beat is None:
                        break
                    r.send_nowait(beat)
                    self._ready_at.append(self.cycle)
            if b is not None:
                del self._b_ready_at[:len(self._b_ready_at) - b.count()]
                b.pause = not (self._b_ready_at and self._b_ready_at[0] <= self.cycle
                               and not self._stall())
            tokens = min(tokens + self.bytes_per_cycle, max(8, self.bytes_per_cycle))
            read_ok = bool(self._ready_at) and self._ready_at[0] <= self.cycle
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

    def describe(self):
        """The DRAM port's state in words (for a watchdog's message)."""
        levels = " ".join(f"{name}={int(self._high(name))}" for name in self._sigs)
        return (f"DRAM at cycle {self.cycle}: {self.reads_owed} read and {self.writes_owed} write "
                f"bursts owed an answer, last handshake at cycle {self.last_handshake}, "
                f"{len(self.outside)} accesses outside the memory, port {levels}")

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


def int16_data(nrng, shape):
    """Random int16 over the whole range, an eighth of the elements at each end (-32768, 32767),
    so that products, sums and ``out`` saturate."""
    a = nrng.integers(-32768, 32768, size=shape)
    ends = nrng.random(shape)
    a[ends < 0.125] = -32768
    a[ends > 0.875] = 32767
    return a.astype(np.int16)


def fill_dram(dram, kernel, problem, nrng):
    """Fill the whole DRAM of a compiled kernel with random bytes, then place the problem's input
    tensors (fixed values as the program reads them, ``merit.isa.programs.fixed_values``, or
    :func:`int16_data`) at their addresses.

    Returns ``(image, arrays)``: the bytes written and the int16 inputs in ``problem.tensors``
    order."""
    from merit.isa.programs import fixed_values

    fixed = fixed_values(problem)
    image = nrng.integers(0, 256, size=kernel.dram_bytes, dtype=np.uint8)
    arrays = []
    for tensor in problem.tensors:
        array = fixed[tensor.name] if tensor.name in fixed else int16_data(nrng, tensor.shape)
        arrays.append(array)
        start = kernel.tensors[tensor.name]
        image[start:start + array.nbytes] = np.frombuffer(array.astype("<i2").tobytes(),
                                                          np.uint8)
    dram.write(0, image.tobytes())
    return image, arrays


def _outputs(kernel, problem):
    """``[(name, start, elements)]`` of the kernel's outputs in DRAM: the byte address of each
    output tensor and, per parallel coordinate (an array of ``p_shape``), the element the
    problem writes (dense over ``p_shape``, or the output's affine map)."""
    return [(name, address, o.indices(problem.p_shape))
            for (name, address), o in zip(kernel.outputs, problem.outputs, strict=True)]


def check_untouched(dram, kernel, problem, image):
    """Assert that no DRAM byte outside the written output elements differs from ``image``
    (what was filled): an affine output's other elements are left alone too."""
    got_image = np.frombuffer(dram.read(0, kernel.dram_bytes), np.uint8)
    untouched = np.ones(kernel.dram_bytes, dtype=bool)
    for _, start, elements in _outputs(kernel, problem):
        byte = start + 2 * elements.reshape(-1)
        untouched[byte] = False
        untouched[byte + 1] = False
    changed = np.flatnonzero(untouched & (got_image != image))
    assert changed.size == 0, (f"{changed.size} DRAM bytes outside the outputs changed, first "
                               f"at {changed[0]:#x}")


def check_outputs(dram, kernel, problem, image, expected):
    """Assert that every output in DRAM equals ``expected`` (the golden ISA model's outputs, in
    ``problem.outputs`` order) and that no byte outside the outputs changed."""
    expected = expected if isinstance(expected, tuple) else (expected,)
    got_image = np.frombuffer(dram.read(0, kernel.dram_bytes), np.uint8)
    for (name, start, elements), out, want in zip(_outputs(kernel, problem), problem.outputs,
                                                  expected, strict=True):
        end = start + 2 * (int(elements.max()) + 1)
        raw = got_image[start:end].view("<i2")[elements]
        got = out.finish(raw)
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"output {name}: {len(bad)} of {got.size} values differ, first at "
                               f"{tuple(bad[0])}: got {got[tuple(bad[0])]}, "
                               f"expected {want[tuple(bad[0])]}")
    check_untouched(dram, kernel, problem, image)
