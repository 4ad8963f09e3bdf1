"""Build a generated kernel for sm_90a with nvcc and read ptxas's report (the CPU tests' check
that a tile compiles for Hopper without spilling registers)."""

import subprocess


def assert_builds_without_spills(cuda_source, tmp_path, what=""):
    """nvcc builds ``cuda_source`` for sm_90a and ptxas reports no spill stores."""
    cu = tmp_path / "k.cu"
    cu.write_text(cuda_source)
    res = subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17",
                          "-cubin", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"), str(cu)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 bytes spill stores" in res.stderr, (what, res.stderr[-400:])
