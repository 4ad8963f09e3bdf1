"""``merit.perf.spans`` (where each TAU's cycles go) and the DRAM port's urgent reads (a
leader's multicast load served before the other TAUs' own loads, as ``meritz.arbiter`` does)."""

import pytest

from merit import perf
from merit import workloads as W
from merit.compile import compile_problem

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def _kernel(problem, taus, **kw):
    return compile_problem(problem, taus=taus, **kw, **SMALL)


CASES = {
    "conv, 1 TAU": (lambda: W.conv2d(1, 8, 16, 16, 8, 3), 1, {}),
    "dilated, 4 TAUs, 1-D": (lambda: W.conv2d(1, 8, 16, 16, 8, 3, dilation=2, padding=2), 4,
                              {"share_dims": 1}),
    "gemm, 4 TAUs, 2-D": (lambda: W.gemm(24, 40, 16), 4, {"share_dims": 2,
                                                          "share_counts": (2,)}),
    "edges, 4 TAUs, none": (lambda: W.conv2d(1, 8, 13, 13, 8, 3, padding=1), 4,
                            {"share_dims": 1}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_spans_cover_the_predicted_cycles(case):
    make, taus, kw = CASES[case]
    kernel = _kernel(make(), taus, **kw)
    cycles = perf.predict(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"]).cycles
    out = perf.spans(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"])
    assert len(out) == taus
    for tau in out:
        assert set(tau) == set(perf.SPANS)
        assert min(tau.values()) >= 0
        # every cycle of the run is charged to exactly one span (the span ends at the last
        # write response, rounded up to a whole cycle)
        assert cycles - 1 <= sum(tau.values()) <= cycles
        # the Compute Pipeline's cycles: at least the kernel's instructions on this TAU
        assert tau["compute"] > 0
    # all TAUs together compute at least the kernel's CP cycles (stalls come on top)
    total = sum(int(c) for c in perf.job_costs(kernel, taus)["compute"])
    assert sum(t["compute"] for t in out) >= total - 1


def test_spans_of_a_kernel_without_sharing_have_no_group_waits():
    kernel = _kernel(W.conv2d(1, 8, 16, 16, 8, 3), 2, share_dims=1)
    if kernel.config["share_log2"]:
        pytest.skip("the compiler shares this kernel")
    for tau in perf.spans(kernel, taus=2, rp_bytes=SMALL["rp_bytes"]):
        assert tau["leader"] == 0 and tau["credit"] == 0


def test_followers_wait_for_the_leader_at_the_start():
    """A 1-D group of 4: the followers' first jobs need the leader's shared load, which is
    larger than their own; they wait for it, the leader does not."""
    make, taus, kw = CASES["dilated, 4 TAUs, 1-D"]
    # its input on its 64-byte boundary: the 8 x 8 tiles whose shared load is the larger (placed
    # 4 bytes further, ``merit.compile.beat_aligned``, the compiler takes 4 x 4 tiles instead)
    kernel = _kernel(make(), taus, align_tensors=False, **kw)
    assert kernel.config["share_log2"] == 2
    out = perf.spans(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"])
    assert out[0]["leader"] == 0
    assert all(t["fill"] + t["leader"] >= out[0]["fill"] - 1 for t in out[1:])


def test_one_job_fill_is_the_load():
    """One TAU, one tile of one job: before its compute, the load's restart, latency and
    beats; nothing else."""
    # the model with single-port banks picks one tile (two-port banks: two, the second's load
    # beside the first's compute)
    kernel = compile_problem(W.conv2d(1, 4, 4, 8, 8, 1), taus=1, lanes=8, rp_ports=1)
    assert len(kernel.tiles) == 1
    (tau,) = perf.spans(kernel, taus=1, latency=40)
    beats = int(perf.job_costs(kernel)["read"].sum())
    assert tau["fill"] >= 40 + perf.CONSTANTS["restart"] + beats
    assert tau["leader"] == tau["credit"] == tau["dispatch"] == 0


def test_spans_checks_its_arguments():
    make, taus, kw = CASES["conv, 1 TAU"]
    kernel = _kernel(make(), taus, **kw)
    with pytest.raises(TypeError):
        perf.spans("kernel")
    with pytest.raises(ValueError):
        perf.spans(kernel, taus=0)


# ---- the port: urgent reads first ------------------------------------------------------------

def _rates(active, urgent, rate=1.0):
    dram = perf._Dram(rate)
    for key, beats in active.items():
        dram.active[key] = [beats, 1.0, 1.0, 1.0]
    dram.urgent.update(urgent)
    return dram.rates()


def test_port_shares_fairly_without_urgent_reads():
    rates = _rates({("r", 0): 100, ("r", 1): 100, ("r", 2): 100, ("r", 3): 100}, ())
    assert all(r == pytest.approx(0.25) for r in rates.values())


def test_port_gives_the_reads_and_the_writes_half_each():
    """The DRAM grants a read beat and a write beat in turn while both wait (``merit_dram.sv``,
    ``merit.sim.dram``): the reads of every TAU share one half of the port, the writes the
    other, whatever their numbers; a channel capped below its half leaves the rest to the
    other."""
    rates = _rates({("r", 0): 100, ("r", 1): 100, ("r", 2): 100, ("w", 3): 100}, ())
    assert rates[("w", 3)] == pytest.approx(0.5)
    assert all(rates[("r", i)] == pytest.approx(1 / 6) for i in range(3))
    rates = _rates({("r", 0): 100, ("r", 1): 100, ("w", 2): 100, ("w", 3): 100,
                    ("w", 4): 100, ("w", 5): 100}, ())
    assert all(rates[("r", i)] == pytest.approx(0.25) for i in range(2))
    assert all(rates[("w", i)] == pytest.approx(0.125) for i in range(2, 6))
    dram = perf._Dram(1.0)      # writes at a Compute Pipeline's pace, 0.1 beat a cycle each
    dram.active = {("r", 0): [100, 1.0, 1.0, 1.0], ("w", 1): [100, 0.1, 1.0, 1.0],
                   ("w", 2): [100, 0.1, 1.0, 1.0]}
    rates = dram.rates()
    assert rates[("w", 1)] == rates[("w", 2)] == pytest.approx(0.1)
    assert rates[("r", 0)] == pytest.approx(0.8)
    dram = perf._Dram(1.0)      # a read held to 0.2 by its data path
    dram.active = {("r", 0): [100, 0.2, 1.0, 1.0], ("w", 1): [100, 1.0, 1.0, 1.0]}
    rates = dram.rates()
    assert rates[("r", 0)] == pytest.approx(0.2) and rates[("w", 1)] == pytest.approx(0.8)


def test_port_serves_an_urgent_read_before_the_other_reads():
    """While a read is urgent each other read keeps one burst (``PLAIN_BURSTS``) in flight
    against the 16 rows (``MAX_BURST``) the urgent load runs ahead; the writes keep their half
    of the port. DRAM answers bursts in order, so the shares follow the bursts in flight:
    16 : 1 : 1."""
    assert (perf.PLAIN_BURSTS, perf.MAX_BURST) == (1, 16)
    rates = _rates({("r", 0): 100, ("r", 1): 100, ("r", 2): 100}, {("r", 0)})
    assert rates[("r", 0)] == pytest.approx(16 / 18)
    assert rates[("r", 1)] == pytest.approx(1 / 18) and rates[("r", 2)] == pytest.approx(1 / 18)
    rates = _rates({("r", 0): 100, ("r", 1): 100, ("w", 2): 100}, {("r", 0)})
    assert rates[("r", 0)] == pytest.approx(16 / 34) and rates[("w", 2)] == pytest.approx(0.5)
    assert rates[("r", 1)] == pytest.approx(1 / 34)
    # an urgent read capped below its share (its data path) leaves the rest to the others
    dram = perf._Dram(1.0)
    dram.active = {("r", 0): [100, 0.4, 1.0, 1.0], ("r", 1): [100, 1.0, 1.0, 1.0],
                   ("r", 2): [100, 1.0, 1.0, 1.0]}
    dram.urgent.add(("r", 0))
    rates = dram.rates()
    assert rates[("r", 0)] == pytest.approx(0.4)
    assert rates[("r", 1)] == pytest.approx(0.3) and rates[("r", 2)] == pytest.approx(0.3)
    # ... and a plain read capped below its share leaves the rest to the urgent one
    dram = perf._Dram(1.0)
    dram.urgent.add(("r", 0))
    dram.active = {("r", 0): [100, 1.0, 1.0, 1.0], ("r", 1): [100, 0.01, 1.0, 1.0],
                   ("r", 2): [100, 1.0, 1.0, 1.0]}
    rates = dram.rates()
    assert rates[("r", 1)] == pytest.approx(0.01)
    assert rates[("r", 2)] == pytest.approx(0.99 / 17)
    assert rates[("r", 0)] == pytest.approx(0.99 * 16 / 17)
    assert sum(rates.values()) == pytest.approx(1.0)
    # the rates are kept until a transfer starts, ends or turns urgent (``known`` cleared)
    assert dram.rates() is rates
    dram.active[("r", 1)] = [100, 1.0, 1.0, 1.0]
    dram.known = None
    assert dram.rates()[("r", 1)] == pytest.approx(1 / 18)
