"""``bench.perf.remeasure``: the 8-lane calibration rows run again and stored with the compiler's
choices they were compiled with (the simulator replaced by a recorder: no Verilator here)."""

import inspect
import json

import pytest

import merit.sim
from bench import perf as calibration
from merit.arch import RP_PORTS
from merit.compile import compile_problem

ROWS = {
    "gemm": {"bench": "tau", "cycles": 100, "dram_bytes_per_cycle": 8, "lanes": 8,
             "latency": 20, "problem": "gemm", "read_beats": 1, "taus": 1, "tiling": "old",
             "utilization": 0.5, "write_beats": 1, "remeasured": "an old note"},
    "top_gemm_t2": {"args": [32, 64, 64], "bench": "top", "cp_bytes": 2048, "cycles": 200,
                    "cycles_register": 210, "dram_bytes_per_cycle": 2, "function": "gemm",
                    "instructions": 16, "lanes": 8, "latency": 20, "read_beats": 1,
                    "rp_bytes": [2048, 1024], "taus": 2, "tiling": "old", "utilization": 0.5,
                    "write_beats": 1},
}


def _results(tmp_path):
    (tmp_path / "perf_n8.json").write_text(json.dumps(
        {"about": "runs", "rows": ROWS, "superseded": {"x": {}}}))
    return tmp_path


def _fake(calls, cycles):
    def simulate(problem, **options):
        calls.append((problem.name, options))
        return {"cycles": cycles, "read_beats": 7, "write_beats": 3, "utilization": 0.9,
                "tiling": "p=(1,) a=(1,)"}
    return simulate


def test_remeasure_runs_each_row_as_recorded(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(merit.sim, "simulate", _fake(calls, 150))
    done = calibration.remeasure(_results(tmp_path), progress=lambda line: None)
    assert set(done) == set(ROWS)
    tau = next(o for _, o in calls if "taus" not in o)
    top = next(o for _, o in calls if "taus" in o)
    assert tau == {"lanes": 8, "seed": 1, "latency": 20, "dram_bytes_per_cycle": 8,
                   "instructions": 24}
    assert top == {"lanes": 8, "seed": 1, "latency": 20, "dram_bytes_per_cycle": 2, "taus": 2,
                   "rp_bytes": (2048, 1024), "cp_bytes": 2048, "instructions": 16}
    assert len(calls) == 2
    stored = json.loads((tmp_path / "perf_n8.json").read_text())
    assert "superseded" not in stored and stored["about"] == "runs"
    gemm = stored["rows"]["gemm"]
    assert (gemm["cycles"], gemm["before"], gemm["read_beats"], gemm["tiling"]) == (
        150, 100, 7, "p=(1,) a=(1,)")
    assert "remeasured" not in gemm and "cycles_register" not in stored["rows"]["top_gemm_t2"]


def test_remeasure_only_named_rows_and_no_before_when_unchanged(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(merit.sim, "simulate", _fake(calls, 100))
    done = calibration.remeasure(_results(tmp_path), names={"gemm"}, progress=lambda line: None)
    assert list(done) == ["gemm"] and len(calls) == 1
    rows = json.loads((tmp_path / "perf_n8.json").read_text())["rows"]
    assert "before" not in rows["gemm"] and rows["top_gemm_t2"]["cycles"] == 200


def test_recorded_choices_are_the_compilers_defaults():
    """A re-run row is compiled again by ``recorded_compiler``: what it records must be what
    ``compile_problem`` and the simulator used, its defaults."""
    record = calibration.as_built()
    defaults = {name: p.default for name, p in
                inspect.signature(compile_problem).parameters.items()}
    for name, value in calibration.recorded_compiler(record).items():
        assert defaults[name] == value, name
    assert calibration.recorded_ports(record) == RP_PORTS == defaults["rp_ports"]
    assert calibration.as_built(hold=True)["hold"] is True


def test_remeasure_names_the_rows_it_does_not_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(merit.sim, "simulate", _fake([], 100))
    with pytest.raises(ValueError, match=r"no rows \['gemv'\].*gemm, top_gemm_t2"):
        calibration.remeasure(_results(tmp_path), names={"gemv", "gemm"})
