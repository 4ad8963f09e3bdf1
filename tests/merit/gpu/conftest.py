"""Fixtures of the GPU tests."""

import pytest


@pytest.fixture
def cupy():
    """CuPy on a machine with a CUDA device; the test is skipped without either."""
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cupy
