"""Figures of the results (``bench.plots``): PNGs from small fake results, byte-stable."""

import json
import struct
import subprocess
import sys

import pytest

from bench import plots

pytest.importorskip("matplotlib")

GPU = {"meta": {"device": "Fake GPU sm_00", "cupy": "1.0", "torch": "2.0"},
       "rows": [{"key": "a", "label": "conv a", "ok": True, "ours_ms": 1.0,
                 "peers_ms": {"cuDNN fp32 (torch)": 2.0, "im2col + cuBLAS (cupy)": 0.5}},
                {"key": "b", "label": "filter b", "ok": False, "ours_ms": 0.1,
                 "peers_ms": {"cupyx.scipy.ndimage.correlate": 3.0}},
                {"key": "c", "label": "failed row", "error": "no kernel"}]}
TAU = {"setup": {"lanes": 8, "dram_bytes_per_cycle": 8, "latency": 20},
       "workloads": {"gemm": {"utilization": 0.9, "what": "GEMM"},
                     "max_pool2x2": {"utilization": 0.1, "what": "pool"}}}
UTILIZATION = {
    "setup": {"lanes": 32, "taus": 4, "dram_bytes_per_cycle": 8, "latency": 20,
              "command": "python bench/top.py", "date": "2026-01-01 00:00 UTC"},
    "rows": {"alexnet_conv2": {"table": "VIII", "label": "AlexNet CONV2+Pool2", "whole": False,
                               "paper": 0.95, "utilization": 0.9,
                               "model_full": 0.93, "what": "AlexNet CONV2 slice"},
             "saliency_blend": {"table": "VIII", "paper": None, "utilization": 0.1,
                                "model_full": None, "what": "alpha blending"},
             "vgg_conv1": {"table": "VIII", "paper": 0.89, "utilization": None,
                           "model_full": 0.9, "what": "not measured on the RTL"},
             "gemm": {"table": "IX", "paper": 0.92, "utilization": 0.88, "model_full": 0.9,
                      "what": "GEMM slice"}},
    "scaling": {"alus": [32, 64, 128, 256, 512, 1024],
                "rtl": {"gemm": [0.88, 0.87, None, None, None, None],
                        "dilated": [None, None, 0.9, None, None, None]},
                "model": {"gemm": [0.9, 0.9, 0.85, 0.7, 0.4, 0.2],
                          "depthwise": [0.6, 0.4, 0.2, 0.1, 0.05, 0.03]}}}
GOLDEN = {"machine": {"processor": "x86_64", "cpus": 2, "numpy": "2.0", "blas_threads": "1"},
          "speed": [{"layer": "AlexNet CONV1", "macs": 105415200, "golden_s": 0.006,
                     "im2col_s": 0.007, "ratio": 0.86}],
          "tokens": [{"kernel": "GEMM", "merit_c_identifiers": 28, "merit_c_operators": 6,
                      "naive_identifiers": 34, "naive_operators": 7,
                      "paper": {"merit_identifiers": 34, "merit_operators": 7,
                                "naive_identifiers": 34, "naive_operators": 20}}]}
AREA = {"block_lanes": 8,
        "blocks": [{"block": "cp_simd", "area_nand2": 10.0, "sram_bits": 0, "submodules": {}},
                   {"block": "tau", "area_nand2": 100.0, "sram_bits": 1000,
                    "submodules": {"": {"area_nand2": 10.0, "sram_bits": 0},
                                   "cp": {"area_nand2": 50.0, "sram_bits": 200},
                                   "rp0": {"area_nand2": 20.0, "sram_bits": 700},
                                   "dma": {"area_nand2": 20.0, "sram_bits": 100}}}]}

CASES = [(plots.gpu_speedups, GPU), (plots.tau_utilization, TAU),
         (plots.utilization_vs_paper, UTILIZATION), (plots.utilization_scaling, UTILIZATION),
         (plots.golden_speed, GOLDEN), (plots.golden_tokens, GOLDEN), (plots.area_split, AREA)]


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize(("draw", "data"), CASES, ids=[f.__name__ for f, _ in CASES])
def test_figure_is_a_png_and_the_same_bytes_when_redrawn(tmp_path, draw, data):
    first = draw(data, tmp_path / "a.png")
    second = draw(data, tmp_path / "b.png")
    width, height = _png_size(first)
    assert width >= 500 and height >= 300
    assert first.stat().st_size > 10_000
    assert first.read_bytes() == second.read_bytes()
    # no software / date metadata in the file
    assert b"matplotlib" not in first.read_bytes()


def test_gpu_speedups_are_peer_over_ours_and_skip_rows_without_times():
    assert plots._speedups(GPU) == [
        ("conv a", [("cuDNN fp32 (torch)", 2.0), ("im2col + cuBLAS (cupy)", 0.5)]),
        ("filter b (check FAILED)", [("cupyx.scipy.ndimage.correlate", pytest.approx(30.0))])]


@pytest.mark.parametrize(("draw", "data", "match"), [
    (plots.gpu_speedups, {"rows": [{"key": "c", "error": "x"}]},
     "gpu.json has no row with ours_ms and peers_ms"),
    (plots.tau_utilization, {"workloads": {}}, "tau.json has no workloads"),
    (plots.utilization_vs_paper, {"rows": {}}, "utilization.json has no rows"),
    (plots.utilization_scaling, {"scaling": {"alus": [32], "model": {}}},
     "utilization.json has no scaling points"),
    (plots.golden_speed, {"speed": []}, "golden.json has no speed rows"),
    (plots.golden_tokens, {"tokens": []}, "golden.json has no token rows"),
    (plots.area_split, {"blocks": AREA["blocks"][:1]},
     "area.json has no TAU block with submodules"),
])
def test_empty_results_are_refused(tmp_path, draw, data, match):
    with pytest.raises(ValueError, match=match):
        draw(data, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_setting_names_the_hardware_only():
    assert plots._setting(UTILIZATION["setup"]) == (
        "32 lanes, 4 TAUs, 8 B/cycle DRAM, read latency 20 cycles")
    assert plots._setting({"lanes": 8, "taus": 1}) == "8 lanes, 1 TAU"


def test_paper_rows_of_tau_workloads_are_table_ix_rows():
    assert set(plots.TAU_PAPER_ROWS.values()) <= set(plots.PAPER_TABLE_IX)
    assert all(0 < u < 1 for u in plots.PAPER_TABLE_IX.values())


def test_peer_families():
    assert plots._peer_family("cuDNN fp32 (torch conv2d 1xk, kx1)") == "cuDNN"
    assert plots._peer_family("im2col + cuBLAS (cupy)") == "cuBLAS"
    assert plots._peer_family("cupy.cumsum x2") == "CuPy / cupyx"
    assert plots._peer_family("cupyx.scipy.ndimage.correlate") == "CuPy / cupyx"
    assert plots._peer_family("torch.cumsum x2") == "PyTorch ops"


def test_import_merit_does_not_import_matplotlib():
    code = ("import sys, merit, bench.plots; "
            "assert not [m for m in sys.modules if m.startswith('matplotlib')], 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def _results(tmp_path, **files):
    for name, data in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    return tmp_path


def test_run_writes_figures_and_skips_missing_json_with_a_note(tmp_path):
    _results(tmp_path, gpu=GPU, tau=TAU)
    (tmp_path / "gpu.md").write_text("# GPU\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n")
    notes = []
    written = plots.run(tmp_path, log=notes.append)
    assert sorted(p.name for p in written) == ["gpu.md", "gpu_speedups.png",
                                               "tau_utilization.png"]
    assert f"plots: {tmp_path / 'utilization.json'} not found, utilization_vs_paper.png " \
           "skipped" in notes
    assert f"plots: {tmp_path / 'tau.md'} not found, tau_utilization.png not embedded" in notes
    assert not (tmp_path / "golden_speed.png").exists()
    assert "![GPU speed-ups vs peers](gpu_speedups.png)" in (tmp_path / "gpu.md").read_text()


def test_run_twice_changes_nothing(tmp_path):
    _results(tmp_path, gpu=GPU, tau=TAU, utilization=UTILIZATION, golden=GOLDEN, area=AREA)
    for name in ("gpu", "tau", "utilization", "golden", "tokens", "area"):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\n| a |\n|---|\n| 1 |\n")
    plots.run(tmp_path, log=lambda _: None)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert len([n for n in before if n.endswith(".png")]) == 7
    written = plots.run(tmp_path, log=lambda _: None)
    assert all(p.suffix == ".png" for p in written)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    text = (tmp_path / "utilization.md").read_text()
    assert text.index("utilization_vs_paper.png") < text.index("utilization_scaling.png")


def test_run_skips_a_malformed_json_with_a_note(tmp_path):
    _results(tmp_path, tau={"setup": {}})
    notes = []
    assert plots.run(tmp_path, log=notes.append) == []
    assert "plots: tau.json cannot be drawn as tau_utilization.png (KeyError: 'workloads'), " \
           "skipped" in notes


def test_main_takes_the_results_folder(tmp_path, capsys):
    _results(tmp_path, golden=GOLDEN)
    assert plots.main(["--results", str(tmp_path)]) == 0
    assert (tmp_path / "golden_speed.png").is_file()
    out = capsys.readouterr().out
    assert f"plots: wrote {tmp_path / 'golden_tokens.png'}" in out
    assert f"plots: {tmp_path / 'gpu.json'} not found, gpu_speedups.png skipped" in out
