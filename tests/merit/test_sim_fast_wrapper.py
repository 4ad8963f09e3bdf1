"""The fast path's generated wrapper (``merit.sim.fast.wrapper_verilog``), without building it:
the DUT's Verilog is included unchanged, its DRAM port goes to the fast DRAM, and no input of the
wrapper reaches the DUT without a flip-flop between (what keeps Verilator from evaluating the
DUT's input logic at every evaluation)."""

import re

import pytest

from merit.sim.fast import wrapper_verilog
from merit.sim.run import tau_for, top_for

pytest.importorskip("amaranth")


def _wrapper(top, name):
    from meritz.emit import to_verilog
    text, metadata = to_verilog(top, name)
    return text, metadata, wrapper_verilog(name, metadata, tau="tiles" in top.signature.members)


def _dut_connections(wrapper, name):
    instance = re.search(rf"^    {name} dut \((.*)\);$", wrapper, re.M).group(1)
    return dict(re.findall(r"\.(\\?[\w$]+ ?)\(([^()]*(?:\([^()]*\))?[^()]*)\)", instance))


def _inputs(wrapper):
    return {m.strip().lstrip("\\")
            for m in re.findall(r"input logic (?:\[\d+:0\] )?(\\?[\w$]+ ?)", wrapper)}


@pytest.mark.parametrize("kind", ["tau", pytest.param("top", marks=pytest.mark.slow)])
def test_no_wrapper_input_drives_the_dut_directly(kind):
    top, name = (tau_for(4), "tau_n4") if kind == "tau" else (top_for(4, 2), "top_n4_t2")
    _, metadata, wrapper = _wrapper(top, name)
    connections = _dut_connections(wrapper, name)
    inputs = _inputs(wrapper) - {"clk"}
    dut_inputs = [p["name"] for p in metadata["ports"] if p["dir"] == "in" and p["name"] != "clk"]
    assert dut_inputs, "the DUT has inputs"
    for port in dut_inputs:
        key = next(k for k in connections if k.strip().lstrip("\\") == port)
        value = connections[key].strip()
        assert value.lstrip("!\\").strip() not in inputs, (port, value)
    assert connections[".rst" if ".rst" in connections else "rst"].strip() == "rst_q"


def test_the_dut_verilog_is_unchanged_and_its_dram_port_goes_to_the_fast_dram():
    from meritz.emit import to_verilog
    text, _, wrapper = _wrapper(tau_for(4), "tau_n4")
    assert "merit_sim_dram" not in text                       # the product Verilog
    assert to_verilog(tau_for(4), "tau_n4")[0] == text
    dram = re.search(r"merit_sim_dram #\(\.ID_W\(4\)\) dram \((.*)\);", wrapper).group(1)
    for channel in ("arvalid", "rready", "awaddr", "wdata", "bresp"):
        assert f".{channel}(m_axi__{channel})" in dram
    assert "tiles__valid" in wrapper and "merit_tiles_load" in wrapper
