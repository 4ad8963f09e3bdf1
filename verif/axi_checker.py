"""An AXI4 / AXI4-Lite protocol checker for the benches: assertions on every channel of a port.

:class:`AxiChecker` watches one port every clock edge (cocotb side) and records a violation of:

* VALID / payload stability: once VALID is high without READY, VALID stays high and the payload
  does not change until the handshake (AXI spec A3.2.1), on every channel, whoever drives it;
* no X or Z on VALID / READY out of reset (the runs use ``--x-initial unique``);
* AXI4 bursts: WLAST exactly on the last beat of the oldest write burst (AWLEN + 1 beats), write
  data never more beats than the bursts announced plus one burst ahead; a B response only for an
  accepted write burst whose data are complete, with its ID; R beats only for an accepted read
  burst of that ID, RLAST exactly on its last beat;
* AXI4-Lite: one B per AW + W pair, one R per AR.

``violations`` lists them (the first 20, with cycle and channel); :meth:`check` raises
AssertionError naming the first ones, for the bench to fail on any violation. A reset clears the
outstanding transactions.
"""

from collections import defaultdict, deque

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

__all__ = ["AxiChecker"]

#: channel -> payload signals (valid / ready are ``<ch>valid`` / ``<ch>ready``)
_PAYLOAD = {
    "aw": ("awid", "awaddr", "awlen", "awsize", "awburst", "awprot"),
    "w": ("wdata", "wstrb", "wlast"),
    "b": ("bid", "bresp"),
    "ar": ("arid", "araddr", "arlen", "arsize", "arburst", "arprot"),
    "r": ("rid", "rdata", "rresp", "rlast"),
}


def _value(sig):
    """The integer on ``sig``, or None for X / Z."""
    v = sig.value
    return int(v) if v.is_resolvable else None


class AxiChecker:
    """Checks the port of ``dut`` whose signals are ``<prefix><name>`` (e.g. ``m_axi__awvalid``).

    Parameters
    ----------
    dut, prefix : the design and the signal prefix (``"m_axi__"``, ``"s_axil__"``)
    clock, reset : signals
    lite : bool
        AXI4-Lite (no IDs, no bursts).
    name : str
        The port's name in the messages.
    """

    def __init__(self, dut, prefix, clock, reset, *, lite=False, name=None):
        self.clock, self.reset, self.lite = clock, reset, lite
        self.name = name or prefix.rstrip("_")
        self.channels = {}
        for ch, payload in _PAYLOAD.items():
            valid = getattr(dut, f"{prefix}{ch}valid", None)
            ready = getattr(dut, f"{prefix}{ch}ready", None)
            if valid is None or ready is None:
                continue
            sigs = [getattr(dut, f"{prefix}{p}") for p in payload
                    if hasattr(dut, f"{prefix}{p}")]
            names = [p for p in payload if hasattr(dut, f"{prefix}{p}")]
            self.channels[ch] = (valid, ready, sigs, names)
        self.violations = []
        self.count = 0              # violations, all of them
        self.handshakes = defaultdict(int)
        self.cycle = 0
        self._clear()
        self._task = cocotb.start_soon(self._watch())

    def _clear(self):
        self.pending = {}                       # channel -> payload held while VALID & !READY
        self.writes = deque()                   # AW bursts: [id, beats] awaiting their data
        self.w_ahead = 0                        # W beats before their AW (allowed in AXI4)
        self.awaiting_b = defaultdict(int)      # id -> bursts with data complete, owed a B
        self.reads = defaultdict(deque)         # id -> deque of beats left per burst
        self.lite_aw = self.lite_w = self.lite_ar = 0

    def _fail(self, ch, what):
        self.count += 1
        if len(self.violations) < 20:
            self.violations.append(f"{self.name} cycle {self.cycle} {ch.upper()}: {what}")

    async def _watch(self):
        while True:
            await RisingEdge(self.clock)
            await ReadOnly()
            self.cycle += 1
            if _value(self.reset) != 0:
                self._clear()
                continue
            fired = []
            for ch, (valid, ready, sigs, names) in self.channels.items():
                v, r = _value(valid), _value(ready)
                if v is None or r is None:
                    self._fail(ch, f"VALID={valid.value} READY={ready.value} is X or Z")
                    continue
                payload = tuple(_value(s) for s in sigs)
                held = self.pending.pop(ch, None)
                if held is not None:
                    if not v:
                        self._fail(ch, "VALID dropped before READY")
                    elif payload != held:
                        changed = [n for n, a, b in zip(names, held, payload, strict=True)
                                   if a != b]
                        self._fail(ch, f"payload changed while VALID waited for READY: "
                                       f"{', '.join(changed)}")
                if v and not r:
                    self.pending[ch] = payload
                if v and r:
                    self.handshakes[ch] += 1
                    fired.append((ch, dict(zip(names, payload, strict=True))))
            for ch, beat in fired:
                (self._lite if self.lite else self._full)(ch, beat)

    def _full(self, ch, beat):
        if ch == "aw":
            beats = (beat.get("awlen") or 0) + 1
            self.writes.append([beat.get("awid", 0), beats])
            while self.w_ahead and self.writes:
                self._take_w(self.w_ahead and None)
        elif ch == "w":
            self._take_w(beat.get("wlast"))
        elif ch == "b":
            bid = beat.get("bid", 0)
            if self.awaiting_b[bid] <= 0:
                self._fail(ch, f"B with ID {bid} but no complete write burst of that ID")
            else:
                self.awaiting_b[bid] -= 1
        elif ch == "ar":
            self.reads[beat.get("arid", 0)].append((beat.get("arlen") or 0) + 1)
        elif ch == "r":
            rid = beat.get("rid", 0)
            bursts = self.reads[rid]
            if not bursts:
                self._fail(ch, f"R with ID {rid} but no read burst of that ID")
                return
            bursts[0] -= 1
            last = bursts[0] == 0
            if bool(beat.get("rlast")) != last:
                self._fail(ch, f"RLAST={beat.get('rlast')} with {bursts[0]} beat(s) of the "
                               f"burst left")
            if last or beat.get("rlast"):
                bursts.popleft()

    def _take_w(self, wlast):
        """One W beat (``wlast`` None: a beat that arrived before its AW, replayed)."""
        if not self.writes:
            self.w_ahead += 1
            if self.w_ahead > 256:
                self._fail("w", "more than a burst of write data before any AW")
            return
        if wlast is None:
            self.w_ahead -= 1
        burst = self.writes[0]
        burst[1] -= 1
        last = burst[1] == 0
        if wlast is not None and bool(wlast) != last:
            self._fail("w", f"WLAST={wlast} with {burst[1]} beat(s) of the burst left")
        if last:
            self.writes.popleft()
            self.awaiting_b[burst[0]] += 1

    def _lite(self, ch, beat):
        if ch == "aw":
            self.lite_aw += 1
        elif ch == "w":
            self.lite_w += 1
        elif ch == "ar":
            self.lite_ar += 1
        elif ch == "b":
            if min(self.lite_aw, self.lite_w) <= 0:
                self._fail(ch, "B without an accepted AW and W")
            else:
                self.lite_aw -= 1
                self.lite_w -= 1
        elif ch == "r":
            if self.lite_ar <= 0:
                self._fail(ch, "R without an accepted AR")
            else:
                self.lite_ar -= 1

    def check(self):
        """Raise AssertionError if any violation was seen."""
        assert not self.count, (f"{self.count} AXI protocol violation(s): "
                                + "; ".join(self.violations[:5]))
