"""Parameter checks of the top-level blocks (messages pinned) and the TAU interface check."""

import pytest
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from meritz.arbiter import Arbiter
from meritz.dispatcher import Dispatcher
from meritz.regs import Regs
from meritz.top import Top, check_tau
from stubs import StubTau

# the components built here are only inspected, never elaborated
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def test_regs_parameters():
    with pytest.raises(ValueError, match="rp0_rows must be between 1 and 65535, not 0"):
        Regs(lanes=8, taus=1, rp0_rows=0, rp1_rows=4)
    with pytest.raises(TypeError, match="rp1_rows must be an integer, not '4'"):
        Regs(lanes=8, taus=1, rp0_rows=4, rp1_rows="4")
    with pytest.raises(ValueError, match="lanes must be a power of two of at least 2, not 24"):
        Regs(lanes=24, taus=1, rp0_rows=4, rp1_rows=4)
    # without rows: those of the TAU's default SRAMs at the lanes, as the processor passes them
    regs = Regs(lanes=8, taus=1)
    assert (regs._rp0_rows, regs._rp1_rows) == (16384 // 16, 8192 // 16)


def test_arbiter_parameters():
    with pytest.raises(ValueError, match="managers must be between 1 and 16, not 17"):
        Arbiter(managers=17)
    with pytest.raises(TypeError, match="write_queue must be an integer, not 2.5"):
        Arbiter(managers=2, write_queue=2.5)


def test_arbiter_widens_ids_by_the_manager_number():
    assert Arbiter(managers=1).m_axi.arid.shape().width == 4
    assert Arbiter(managers=3).m_axi.arid.shape().width == 6
    assert Arbiter(managers=16).m_axi.bid.shape().width == 8


def test_dispatcher_parameters():
    with pytest.raises(ValueError, match="taus must be between 1 and 16, not 0"):
        Dispatcher(taus=0)


def test_top_parameters():
    with pytest.raises(ValueError, match="rp1_bytes must hold at least one row of 8 words, not 8"):
        Top(lanes=8, taus=1, rp1_bytes=8, tau=StubTau)
    with pytest.raises(TypeError, match="tau must be a callable building a TAU, not 3"):
        Top(lanes=8, taus=1, tau=3)
    with pytest.raises(ValueError, match="outputs must be between 1 and 4, not 0"):
        Top(lanes=8, taus=1, outputs=0, tau=StubTau)


def test_tau_interface_is_checked():
    class NoIdle(wiring.Component):
        config: In(1)
        tiles: In(1)
        m_axi: Out(1)
        errors: Out(1)

        def elaborate(self, platform):
            raise NotImplementedError

    with pytest.raises(TypeError, match="tau must have a member 'idle' of flow Out, not None"):
        Top(lanes=8, taus=1, tau=lambda **_: NoIdle())
    with pytest.raises(TypeError, match="tau must build an amaranth.lib.wiring.Component"):
        check_tau(object())
    top = Top(lanes=8, taus=3, tau=StubTau)
    assert len(top.tau_units) == 3 and top.m_axi.awid.shape().width == 6
