"""``merit sim`` from a real install: ``pip install .`` into a fresh virtual environment, run
outside the checkout, with an empty Verilator build cache."""

import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[3]

#: what the copy of the checkout leaves out: local environments, build products, caches
_IGNORED = shutil.ignore_patterns(".git", ".venv", "sim_build", "rtl_out", "build", "results",
                                  "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache",
                                  ".hypothesis", "*.fst", "*.vcd")


def _clean_env(**extra):
    """The environment of a user's shell: no PYTHONPATH, no virtual environment of the checkout
    on PATH, no shared build cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MERIT_SIM_BUILD", "VERILATOR_ROOT")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not Path(p).resolve().is_relative_to(CHECKOUT))
    env.update(extra)
    return env


def _run(cmd, *, cwd, env):
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{cmd}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.sim
def test_merit_sim_runs_from_an_installed_wheel(tmp_path):
    """A copy of the sources (so that the build writes nothing into the checkout) is installed
    with its ``sim`` extra into a new virtual environment without system site packages; then
    ``merit sim`` of a small GEMM on a 4-lane TAU (the smallest model that shows the package
    whole: it builds in less time than the 8-lane one) runs in a folder of its own and builds its
    Verilator model from nothing."""
    source = tmp_path / "source"
    shutil.copytree(CHECKOUT, source, ignore=_IGNORED)
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    python = env_dir / "bin" / "python"
    env = _clean_env(MERIT_SIM_BUILD=str(tmp_path / "sim_build"))
    _run([str(python), "-m", "pip", "install", "--quiet", f"{source}[sim]"], cwd=tmp_path, env=env)
    shutil.rmtree(source)           # the installed package must not need its sources

    work = tmp_path / "work"
    work.mkdir()
    where = _run([str(python), "-c", "import merit, meritz, merit.sim; "
                  "print(merit.__file__, meritz.__file__, merit.sim.__file__)"], cwd=work, env=env)
    for path in where.split():
        assert Path(path).is_relative_to(env_dir), where

    (work / "tiny.py").write_text("from merit import workloads as W\n"
                                  "def gemm():\n    return W.gemm(12, 10, 7)\n")
    out = _run([str(env_dir / "bin" / "merit"), "sim", "tiny:gemm", "--lanes", "4", "--seed", "3",
                "--json", "m.json"], cwd=work, env=env)
    assert "RTL = ISA" in out and "ISA = golden" in out, out
    metrics = json.loads((work / "m.json").read_text())
    assert metrics["workload"] == "tiny:gemm"
    assert metrics["useful_ops"] == 12 * 10 * (7 + 1)    # k MACs, the out of post1 (no zero init)
    assert any((tmp_path / "sim_build").iterdir())       # the model was built here, not reused
