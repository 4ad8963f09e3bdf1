"""One Verilog module for all TAUs (meritz.emit.Shared): the emitted text, names and errors."""

import re

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from meritz.emit import Shared, to_verilog
from meritz.top import Top
from stubs import StubTau

# some components built here are only inspected, never elaborated
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def _modules(text):
    return re.findall(r"^module\s+(\\\S+|\w+)", text, re.M)


def _instances(text, module):
    return re.findall(rf"^\s*{module}\s+\S+\s*\(", text, re.M)


@pytest.mark.parametrize("taus", [1, 3])
def test_the_tau_is_emitted_once_and_instanced_per_tau(taus):
    text, _ = to_verilog(Top(lanes=8, taus=taus, tau=StubTau), "top")
    shared = [name for name in _modules(text) if name.startswith("meritz_tau_n8_")]
    assert len(shared) == 1, _modules(text)
    assert len(_instances(text, shared[0])) == taus
    # the top module is the only one marked as the design's top
    assert text.count("(* top =") <= 1


def test_unshared_top_elaborates_every_tau():
    text, _ = to_verilog(Top(lanes=8, taus=2, tau=StubTau, share=False), "top")
    assert not [name for name in _modules(text) if name.startswith("meritz_tau_")]
    assert {"\\top.tau0", "\\top.tau1"} <= set(_modules(text))


def test_module_name_depends_on_the_parameters():
    def name(**kw):
        return Top(lanes=8, taus=1, tau=StubTau, **kw).tau_units[0].module_name
    assert name() == name()
    assert name() != name(rp0_bytes=8192)
    assert name() != name(instructions=8)


class _Inc(wiring.Component):
    a: In(8)
    y: Out(8)

    def __init__(self, step):
        self.step = step
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.y.eq(self.a + self.step)
        return m


class _Pair(wiring.Component):
    y: Out(8)

    def __init__(self, first, second):
        self.units = [first, second]
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        count = Signal(8)
        m.d.sync += count.eq(count + 1)
        for i, unit in enumerate(self.units):
            m.submodules[f"u{i}"] = unit
            m.d.comb += unit.a.eq(count)
        m.d.comb += self.y.eq(self.units[0].y ^ self.units[1].y)
        return m


def test_ports_of_the_instance_match_the_module():
    inner = _Inc(1)
    text, _ = to_verilog(_Pair(Shared(inner, "inc"), Shared(inner, "inc")), "pair")
    assert _modules(text).count("inc") == 1
    assert len(re.findall(r"^\s*inc\s+\S+\s*\(", text, re.M)) == 2
    body = text[text.index("module inc("):]
    for port in ("clk", "rst", "a", "y"):
        assert re.search(rf"\b(input|output)\b.*\b{port};", body), port


def test_one_name_for_two_components_is_refused():
    with pytest.raises(ValueError, match="two different components share the module name 'inc'"):
        to_verilog(_Pair(Shared(_Inc(1), "inc"), Shared(_Inc(2), "inc")), "pair")


def test_shared_arguments():
    with pytest.raises(TypeError, match="inner must be an amaranth.lib.wiring.Component"):
        Shared(3, "inc")
    with pytest.raises(ValueError, match="module name must be a Verilog identifier, not 'a b'"):
        Shared(_Inc(1), "a b")
