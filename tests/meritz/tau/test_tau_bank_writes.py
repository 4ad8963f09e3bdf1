"""The rows a load writes into the RP banks while the Compute Pipeline reads them: with the
two-port banks of the TAU as built (``merit.arch.RP_PORTS``) no read ever waits for a write;
with single-port banks every row written costs a read cycle, as ``merit.perf`` charges it."""

import pytest
from tau_pysim import run_tau

from merit import perf
from merit import workloads as W
from merit.arch import RP_PORTS
from meritz.tau.rp.banks import BankedSram

SETUP = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, latency=4)


def _conv():
    # several accumulation tiles per output tile: the next job's tiles load while one computes
    return W.conv2d(1, 8, 9, 7, 4, 3, padding=1)


def _run(monkeypatch, ports):
    """Run the conv on one TAU with ``ports``-port RP banks; return the run's cycles, the cycles
    in which a bank read waited for a bank write (summed over both RPs), and the kernel."""
    banks = []
    elaborate = BankedSram.elaborate

    def recorded(self, platform):
        banks.append(self)
        return elaborate(self, platform)

    monkeypatch.setattr(BankedSram, "elaborate", recorded)
    waits = [0]

    def trace(ctx, cycle):
        for b in banks:
            free = not ctx.get(b.rdata.valid) or ctx.get(b.rdata.ready)
            if ctx.get(b.read.valid) and free and not ctx.get(b.read.ready):
                waits[0] += 1

    state, kernel, outs, expected, _, _ = run_tau(_conv(), max_cycles=30000, trace=trace,
                                                  ports=ports, **SETUP)
    assert state["done"] and state["errors"] == 0
    for got, want in zip(outs, expected, strict=True):
        assert (got == want).all()
    assert len(banks) == 2
    return state["cycles"], waits[0], kernel


def _banks_span(kernel, ports):
    return perf.spans(kernel, taus=1, latency=SETUP["latency"], rp_bytes=SETUP["rp_bytes"],
                      rp_ports=ports)[0]["banks"]


def test_the_tau_as_built_never_stalls_a_read_for_a_bank_write(monkeypatch):
    assert RP_PORTS == 2
    cycles, waits, kernel = _run(monkeypatch, None)
    assert waits == 0
    assert _banks_span(kernel, RP_PORTS) == 0


@pytest.mark.slow
def test_single_port_banks_stall_a_read_per_row_written_as_the_model_charges(monkeypatch):
    two, none, kernel = _run(monkeypatch, 2)
    one, waits, _ = _run(monkeypatch, 1)
    charged = _banks_span(kernel, 1)
    print(f"two-port {two} cycles, single-port {one} cycles, {waits} read waits, "
          f"model charges {charged:.0f}")
    assert none == 0 and charged > 0
    # each row written stops one read: the waits and the cycles the run loses are the model's
    assert abs(waits - charged) <= 0.1 * charged
    assert abs((one - two) - charged) <= 0.15 * charged
