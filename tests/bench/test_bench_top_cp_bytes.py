"""bench.top --cp-bytes without a simulator: the CP size reaches the compiler, the model and the
simulator, and its run writes its own page beside the default size's results."""

import json

import numpy as np

from bench import top as M
from merit.paper import row

#: partials of 32 bits in the CP of a 32-lane TAU: 5 KB hold 1,280, 8 KB hold 2,048
CAP_5KB = 5 * 1024 // 4
CAP_8KB = 8 * 1024 // 4


def _outputs(kernel):
    return int(np.prod(kernel.tiling.p_tile))


def test_a_larger_cp_reaches_the_compiler():
    (problem, _), = row("gemm").full()
    small = M.compile_row(problem, lanes=32, taus=4)
    large = M.compile_row(problem, lanes=32, taus=4, cp_bytes=8192)
    assert _outputs(small) <= CAP_5KB
    assert CAP_5KB < _outputs(large) <= CAP_8KB


def test_the_cp_size_reaches_the_model(monkeypatch):
    seen = []
    real = M.compile_row

    def spy(problem, **kw):
        seen.append(kw["cp_bytes"])
        return real(problem, **kw)

    monkeypatch.setattr(M, "compile_row", spy)
    entry = M.add_model({"simulated": "slice"}, "gemm", lanes=32, taus=4, bandwidth=8,
                        latency=20, cp_bytes=8192)
    assert seen and set(seen) == {8192}
    default = M.add_model({"simulated": "slice"}, "gemm", lanes=32, taus=4, bandwidth=8,
                          latency=20)
    # the prediction follows the CP's size; fewer cycles is not implied: at 5 KB the compiler
    # shares both of GEMM's operands (2-D, 76,697 cycles predicted), at 8 KB its larger tiles
    # keep 1-D sharing (77,902)
    assert entry["model_slice_cycles"] != default["model_slice_cycles"]
    assert entry["model_full_cycles"] != default["model_full_cycles"]


def _fake_simulate(calls):
    def simulate(problem, **kw):
        calls.append(kw)
        return {"cycles": 1000, "utilization": 0.5, "tiling": "p=(64, 32)", "tiles": 8,
                "dram_busy": 0.9, "useful_ops": 1, "read_beats": 2, "write_beats": 3,
                "sharing": "none"}
    return simulate


def test_the_cp_size_reaches_the_simulator_and_the_run_key(monkeypatch):
    import merit.sim
    calls = []
    monkeypatch.setattr(merit.sim, "simulate", _fake_simulate(calls))
    kw = dict(lanes=32, taus=4, bandwidth=8, latency=20, seed=1, done={})
    large = M.run_slice("gemm", cp_bytes=8192, **kw)
    default = M.run_slice("gemm", **kw)
    assert [c["cp_bytes"] for c in calls] == [8192, M.CP_BYTES]
    assert large["cp_bytes"] == 8192
    assert large["slice_key"] != default["slice_key"]
    # the default size keeps the keys of the stored results
    assert default["slice_key"] == M.slice_key(row("gemm").slice_problems(), 32, 4, 8, 20)


def test_the_part_simulated_is_chosen_for_the_default_cp(monkeypatch):
    # another CP size runs the problems of the default size's tables (slice or whole layer),
    # whatever the model predicts for the whole layer with it
    import merit.perf
    import merit.sim
    asked = []
    monkeypatch.setattr(merit.sim, "simulate", _fake_simulate([]))
    monkeypatch.setattr(M, "compile_row", lambda problem, **kw: asked.append(kw) or "kernel")
    monkeypatch.setattr(merit.perf, "predict",
                        lambda kernel, **kw: type("P", (), {"cycles": 10})())
    entry = M.run_slice("gemm", lanes=32, taus=4, bandwidth=8, latency=20, seed=1, done={},
                        whole_under=100, cp_bytes=8192)
    assert entry["simulated"] == "full" and asked
    assert all(kw.get("cp_bytes", M.CP_BYTES) == M.CP_BYTES for kw in asked)


def test_another_cp_size_writes_its_own_page_beside_the_default_run(monkeypatch, tmp_path):
    import merit.sim
    calls = []
    monkeypatch.setattr(merit.sim, "simulate", _fake_simulate(calls))
    monkeypatch.setattr(M, "_model", lambda problems, **kw: (0.5, 1100, "DRAM", 0.6))
    base = tmp_path / "utilization"
    key = M.slice_key(row("gemm").slice_problems(), 32, 4, 8, 20)
    base.with_suffix(".json").write_text(json.dumps({
        "setup": {"lanes": 32, "taus": 4, "dram_bytes_per_cycle": 8, "latency": 20,
                  "rtl_date": "then"},
        "rows": {"gemm": {"cycles": 84949, "utilization_std": 0.7712, "slice_key": key},
                 "alexnet_fc": {"cycles": 47599, "utilization_std": 0.69,
                                "slice_key": "another"}}}))
    monkeypatch.setattr(M, "DEFAULT_OUT", base)
    monkeypatch.setattr(M, "CP_OUT", tmp_path / "partial_store")
    M.main(["--cp-bytes", "8192", "--only", "gemm", "--only", "alexnet_fc"])
    assert {c["cp_bytes"] for c in calls} == {8192}
    assert not base.with_suffix(".md").exists()             # the default page is not written
    results = json.loads((tmp_path / "partial_store.json").read_text())
    assert results["setup"]["cp_bytes"] == 8192
    assert results["rows"]["gemm"]["cp_default"]["cycles"] == 84949
    assert results["rows"]["alexnet_fc"]["cp_default"] is None      # another slice: no column
    text = (tmp_path / "partial_store.md").read_text()
    assert "--cp-bytes 8192" in text and "CP (the partial-result SRAM) 8 KB per TAU" in text
    gemm = next(line for line in text.splitlines() if line.startswith("| GEMM"))
    cells = [c.strip() for c in gemm.split("|")[1:-1]]
    head = next(line for line in text.splitlines() if line.startswith("| row | paper"))
    assert len(cells) == len(head.split("|")) - 2
    # the slice's standard count over 1000 cycles x 128 ALUs, then the 5 KB run
    ops = sum(p.ops.count for p in row("gemm").slice_problems())
    assert cells[2] == f"{ops / (1000 * 128):.2f}"
    assert cells[3] == "0.77 (84949)"
    fc = next(line for line in text.splitlines() if line.startswith("| AlexNet FC1-3"))
    assert fc.split("|")[4].strip() == ""
    assert "| Dilated" not in text                          # rows not run are not listed
