"""The two DRAM models held against each other: the fast one inside the Verilator model
(``merit.sim.fast``) and the Python one (cocotbext-axi's RAM behind coroutines,
``merit.sim.dram``).

On the same problem, seed and DRAM settings both runs must leave the same DRAM image bit for bit
(each run also checks its outputs against the golden ISA model), move the same beats and count
cycles within 1 %. The fast DRAM answers an access outside its memory with SLVERR and reports it.
"""

import pytest

from merit import workloads as W
from merit.arch import CP_BYTES, RP_BYTES
from merit.sim import BenchFailure, simulate, tau_for
from merit.sim.run import _problem_file

#: The 8-lane TAU of the guide and of ``merit sim --lanes 8`` (default SRAMs, 16 instruction
#: slots): ``make test`` builds both its models, fast and Python DRAM, for the guide anyway, so
#: the tests here share them (xdist group ``tau_n8``) instead of building a TAU of their own.
GUIDE_TAU = dict(lanes=8, rp_bytes=RP_BYTES, cp_bytes=CP_BYTES, instructions=16)
SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def _both(problem, **options):
    fast = simulate(problem, dram="fast", seed=7, **options)
    python = simulate(problem, dram="python", seed=7, **options)
    return fast, python


def _agree(fast, python):
    assert fast["dram_sha1"] == python["dram_sha1"]
    assert fast["read_beats"] == python["read_beats"]
    assert fast["write_beats"] == python["write_beats"]
    assert abs(fast["cycles"] - python["cycles"]) <= 0.01 * python["cycles"], \
        (fast["cycles"], python["cycles"])


@pytest.mark.sim
@pytest.mark.xdist_group("tau_n8")
def test_fast_and_python_dram_agree_on_a_tau():
    _agree(*_both(W.conv2d(1, 3, 9, 13, 4, 3, padding=1), **GUIDE_TAU))


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("bandwidth, latency", [(8, 20), (4, 3), (16, 40)])
def test_fast_and_python_dram_agree_on_dram_settings(bandwidth, latency):
    _agree(*_both(W.gemm(24, 16, 12), dram_bytes_per_cycle=bandwidth, latency=latency,
                  **SMALL, instructions=24))


@pytest.mark.sim
@pytest.mark.slow
def test_fast_and_python_dram_agree_on_the_processor():
    fast, python = _both(W.conv2d(1, 3, 9, 13, 4, 3, padding=1), taus=2, **SMALL)
    _agree(fast, python)
    # CYCLES counts START to done: the bench's span (first DRAM request to last write response)
    # plus the processor's own cycles before the first request and after the last response, which
    # no DRAM model changes. The spans may differ within 1 % (above); that overhead may not.
    overhead = [run["cycles_register"] - run["cycles"] for run in (fast, python)]
    assert overhead[0] == overhead[1] > 0, (overhead, fast["cycles"], python["cycles"])


@pytest.mark.sim
@pytest.mark.xdist_group("tau_n8")
def test_fast_dram_answers_outside_accesses_with_slverr():
    from merit.compile import compile_problem
    from merit.sim.fast import run

    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    lanes, rp_bytes, cp_bytes, instructions = (GUIDE_TAU[k] for k in (
        "lanes", "rp_bytes", "cp_bytes", "instructions"))
    kernel = compile_problem(problem, lanes=lanes, rp_bytes=rp_bytes, cp_bytes=cp_bytes,
                             instructions=instructions)
    size = kernel.dram_bytes // 2 // 8 * 8
    config = {"problem": str(_problem_file(problem)), "lanes": lanes, "rp_bytes": list(rp_bytes),
              "cp_bytes": cp_bytes, "instructions": instructions, "dram_bytes": size,
              "max_cycles": 200_000}
    top = tau_for(lanes, rp_bytes=rp_bytes, cp_bytes=cp_bytes, instructions=instructions)
    with pytest.raises(BenchFailure, match="fast_run_matches_the_isa_model") as failure:
        run(top, config=config, name=f"tau_n{lanes}", seed=1)
    text = open(str(failure.value).rsplit("see ", 1)[1]).read()
    first = int(text.split("DRAM accesses outside the memory: [('read', ")[1].split(")")[0])
    assert size <= first < kernel.dram_bytes



@pytest.mark.sim
@pytest.mark.xdist_group("tau_n8")
def test_fast_dram_trace_records_every_handshake(tmp_path, monkeypatch):
    """With ``MERIT_DRAM_TRACE`` the fast DRAM writes a line per handshake: the trace's R and W
    beats are the run's beat counts, its AR and AW bursts' lengths add up to them, the W beats'
    strobes to the output's bytes (2 bytes a word, every output written once), and from its
    first request to its last B response are the run's cycles."""
    import numpy as np

    trace = tmp_path / "dram.trace"
    monkeypatch.setenv("MERIT_DRAM_TRACE", str(trace))
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    metrics = simulate(problem, dram="fast", seed=7, **GUIDE_TAU)
    lines = [line.split() for line in trace.read_text().splitlines()]
    events = {ch: [(int(c), int(a, 16), int(n)) for c, k, _, a, n in lines if int(k) == ch]
              for ch in range(5)}
    assert len(events[1]) == metrics["read_beats"] > 0
    assert len(events[3]) == metrics["write_beats"] > 0
    assert sum(n + 1 for _, _, n in events[0]) == len(events[1])
    assert sum(n + 1 for _, _, n in events[2]) == len(events[3])
    assert sum(bin(a).count("1") for _, a, _ in events[3]) == 2 * int(np.prod(problem.p_shape))
    assert len(events[4]) == len(events[2]) == sum(n for _, _, n in events[3])   # WLAST
    first = min(c for ch in (0, 2) for c, _, _ in events[ch])
    assert max(c for c, _, _ in events[4]) - first == metrics["cycles"]
