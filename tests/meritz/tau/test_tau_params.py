"""Parameter checks of the TAU blocks (messages pinned)."""

import pytest

from meritz.tau import Tau
from meritz.tau.rp.agu import LaneAddressGenerator
from meritz.tau.step_looper import StepLooper


def test_tau_sram_sizes_are_checked():
    with pytest.raises(ValueError, match="rp0_bytes must be a power-of-two number of 8-word "
                                         "rows, not 3000"):
        Tau(lanes=8, rp0_bytes=3000)
    with pytest.raises(TypeError, match="rp1_bytes must be an integer, not 1024.0"):
        Tau(lanes=8, rp1_bytes=1024.0)
    with pytest.raises(ValueError, match="lanes must be a power of two of at least 2, not 24"):
        Tau(lanes=24)
    # a 4-word beat spans 3 rows of 2 lanes: the DMA's two-row buffer cannot take it
    with pytest.raises(ValueError, match="the TAU's DMA needs at least 4 lanes .*, not 2"):
        Tau(lanes=2)


def test_agu_parameters_are_checked():
    with pytest.raises(ValueError, match="rp0_slots must be between 1 and 4, not 5"):
        StepLooper(lanes=8, rp0_slots=5)
    with pytest.raises(ValueError, match="port must be 0 or 1, not 2"):
        LaneAddressGenerator(lanes=8, port=2)
