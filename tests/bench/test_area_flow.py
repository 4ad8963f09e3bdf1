"""The area flow (``merit.flow.synth``, ``bench.area``): Yosys runs, areas add up, SRAM stays out,
scaling, errors."""

import json

import pytest

amaranth = pytest.importorskip("amaranth")

from bench import area  # noqa: E402
from bench.area_baselines import Crossbar, MacArray  # noqa: E402
from merit.flow import synth  # noqa: E402
from meritz.tau.rp.banks import BankedSram  # noqa: E402


def _weighted(result):
    return sum(synth.CELL_AREAS[name][0] * count
               for name, count in result["cells_by_type"].items())


def test_small_component_has_cells_and_the_area_of_its_cells(tmp_path):
    result = synth.synthesize(Crossbar(lanes=4, width=8), "xbar4", tmp_path)
    assert result["module"] == "xbar4"
    assert result["cells"] > 0
    assert result["cells"] == sum(result["cells_by_type"].values())
    assert set(result["cells_by_type"]) <= set(synth.CELL_AREAS)
    assert result["area_nand2"] == pytest.approx(_weighted(result), abs=0.1)
    # a combinational network: no flip-flop, no memory
    assert result["sequential_nand2"] == 0 and result["sram_bits"] == 0
    # Yosys' own area report (from the Liberty file) agrees with our weights
    stats = json.loads((tmp_path / "stat.json").read_text())["modules"]["\\xbar4"]
    assert stats["area"] == pytest.approx(result["area_nand2"], abs=0.1)


def test_unchanged_runs_are_reused_and_changed_ones_are_not(tmp_path):
    first = synth.synthesize(Crossbar(lanes=2, width=4), "xbar2", tmp_path)
    log = tmp_path / "yosys.log"
    log.write_text("stale")
    assert synth.synthesize(Crossbar(lanes=2, width=4), "xbar2", tmp_path) == first
    assert log.read_text() == "stale"
    assert synth.synthesize(Crossbar(lanes=2, width=4), "xbar2", tmp_path, cache=False) == {
        **first, "seconds": pytest.approx(first["seconds"], abs=60)}
    assert log.read_text() != "stale"
    wider = synth.synthesize(Crossbar(lanes=2, width=8), "xbar2", tmp_path)
    assert wider["area_nand2"] > first["area_nand2"]


def test_memories_are_sram_macros_or_flip_flops(tmp_path):
    sram = BankedSram(lanes=2, depth=16, width=8)
    macro = synth.synthesize(sram, "banks2", tmp_path / "macro")
    assert macro["sram_bits"] == 2 * 16 * 8
    assert [(m["depth"], m["width"]) for m in macro["sram"]] == [(16, 8), (16, 8)]
    flops = synth.synthesize(sram, "banks2", tmp_path / "flops", memories="flops")
    assert flops["sram"] == [] and flops["sram_bits"] == 0
    assert flops["cells_by_type"]["DFF"] >= 2 * 16 * 8
    assert flops["area_nand2"] > macro["area_nand2"] + 2 * 16 * 8 * synth.CELL_AREAS["DFF"][0]


class _RegisterFile(amaranth.lib.wiring.Component):
    """8 x 4 bits, one write port and ``reads`` asynchronous read ports (as the SIMD lane
    registers)."""

    def __init__(self, reads):
        from amaranth.lib.wiring import In, Out
        self._reads = reads
        super().__init__({"we": In(1), "wa": In(3), "wd": In(4),
                          "ra": In(3).array(reads), "rd": Out(4).array(reads)})

    def elaborate(self, platform):
        from amaranth.lib import memory
        m = amaranth.Module()
        m.submodules.mem = mem = memory.Memory(shape=4, depth=8, init=[])
        wr = mem.write_port()
        m.d.comb += [wr.en.eq(self.we), wr.addr.eq(self.wa), wr.data.eq(self.wd)]
        for k in range(self._reads):
            rd = mem.read_port(domain="comb")
            m.d.comb += [rd.addr.eq(self.ra[k]), self.rd[k].eq(rd.data)]
        return m


def test_register_files_are_logic_not_sram(tmp_path):
    two = synth.synthesize(_RegisterFile(2), "rf2", tmp_path / "two")
    assert two["sram_bits"] == 8 * 4
    three = synth.synthesize(_RegisterFile(3), "rf3", tmp_path / "three")
    assert three["sram"] == [] and three["sram_bits"] == 0
    assert three["cells_by_type"]["DFF"] >= 8 * 4


def test_crossbar_grows_quadratically_and_the_butterfly_as_n_log_n(tmp_path):
    butterfly = pytest.importorskip("meritz.tau.rp.butterfly")
    area = {}
    for lanes in (4, 8):
        for name, component in (("xbar", Crossbar(lanes=lanes)),
                                ("bfly", butterfly.Butterfly(lanes=lanes))):
            area[name, lanes] = synth.synthesize(component, f"{name}{lanes}",
                                                 tmp_path / f"{name}{lanes}")["area_nand2"]
    xbar = area["xbar", 8] / area["xbar", 4]
    bfly = area["bfly", 8] / area["bfly", 4]
    # N (N - 1) multiplexers: 56 / 12 = 4.7; N log2 N: 24 / 8 = 3
    assert 3.8 < xbar < 5.5
    assert 2.6 < bfly < 3.4
    assert area["bfly", 8] < area["xbar", 8]


def test_mac_units_grow_linearly(tmp_path):
    one = synth.synthesize(MacArray(lanes=2, width=8), "macs2", tmp_path / "2")
    two = synth.synthesize(MacArray(lanes=4, width=8), "macs4", tmp_path / "4")
    assert two["area_nand2"] / one["area_nand2"] == pytest.approx(2, rel=0.05)
    assert one["cells_by_type"]["DFF"] == 2 * 32


def test_fpga_fit_counts_luts_and_block_rams(tmp_path):
    result = synth.fpga_fit(BankedSram(lanes=2, depth=512, width=16), "banks2", tmp_path)
    assert result["family"] == "ecp5"
    assert result["lut"] > 0 and result["ff"] > 0
    assert result["bram"] == 2
    assert result["fits"] == "LFE5U-12F" and result["fallback"] is None


def test_fpga_fit_falls_back_to_the_classic_mapper_where_abc9_fails(tmp_path, monkeypatch):
    """Where Yosys' ABC9 asserts, the fit runs again with the classic ``abc -lut 4`` in place of
    synth_ecp5's ``abc9`` step (Yosys 0.70's ``synth_ecp5 -noabc9`` still runs ABC9): the first
    run is made to fail here, the retry is real Yosys and must not map with ABC9."""
    real = synth._yosys_flow

    def abc9_fails(names, top, script, work, *args):
        if "abc -lut 4" not in script:
            (work / "yosys.log").write_text("ERROR: Assert `GetSize(conn.first)' failed.\n")
            raise synth.SynthesisError(f"synth_ecp5 of {top} failed: ERROR: Assert")
        return real(names, top, script, work, *args)

    monkeypatch.setattr(synth, "_yosys_flow", abc9_fails)
    result = synth.fpga_fit(BankedSram(lanes=2, depth=512, width=16), "banks2", tmp_path)
    assert result["bram"] == 2 and result["lut"] > 0
    assert result["fallback"].startswith("synth_ecp5 with the classic ABC (abc -lut 4); "
                                         "without it: synth_ecp5 of banks2")
    log = (tmp_path / "yosys.log").read_text()
    assert "Executing ABC pass" in log and "Executing ABC9 pass" not in log


def test_report_is_written(tmp_path, monkeypatch):
    import meritz.blocks

    monkeypatch.setattr(meritz.blocks, "BLOCKS",
                        [("xbar", "bench.area_baselines:Crossbar", {"lanes": 4, "width": 4})])
    monkeypatch.setattr(area, "_TAU_FALLBACK", ("tau", "bench.area_baselines:NoTau", {}))
    argv = ["--lanes", "2", "--block-lanes", "2", "--fpga-lanes", "2", "--out",
            str(tmp_path / "out"), "--work", str(tmp_path / "work")]
    assert area.main(argv) == 0
    report = json.loads((tmp_path / "out" / "area.json").read_text())
    assert report["command"].startswith("python -m bench.area --lanes 2")
    assert report["yosys"].startswith("Yosys ")
    (point,) = report["sweep"]
    assert point["lanes"] == 2 and point["crossbar"]["cells"] > 0 and point["macs"]["cells"] > 0
    assert [b["module"] for b in report["blocks"]] == ["meritz_xbar_n2"]
    assert report["blocks"][0]["component"] == "bench.area_baselines:Crossbar"
    assert report["fpga"]["blocks"][0]["lut"] > 0
    text = (tmp_path / "out" / "area.md").read_text()
    assert "| xbar | `meritz_xbar_n2` |" in text
    assert "no TAU is registered in `meritz.blocks.BLOCKS`: the Table VII split" in text
    png = (tmp_path / "out" / "area_butterfly_vs_crossbar.png").read_bytes()
    assert png.startswith(b"\x89PNG")


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"top": "1bad"}, ValueError, "top must be a Verilog module name, not '1bad'"),
    ({"memories": "sram"}, ValueError, "memories must be 'blackbox' or 'flops', not 'sram'"),
    ({"verilog": []}, ValueError, "verilog must name at least one Verilog file"),
    ({"verilog": "missing.v"}, FileNotFoundError, "Verilog file 'missing.v' does not exist"),
])
def test_bad_arguments(tmp_path, kwargs, error, match):
    source = tmp_path / "good.v"
    source.write_text("module good(input a, output y); assign y = ~a; endmodule\n")
    arguments = {"verilog": source, "top": "good", "work_dir": tmp_path / "work", **kwargs}
    with pytest.raises(error, match=match):
        synth.synthesize_verilog(**arguments)


def test_yosys_errors_name_the_module_and_the_log(tmp_path):
    source = tmp_path / "broken.v"
    source.write_text("module broken(input a, output y); assign y = ; endmodule\n")
    with pytest.raises(synth.SynthesisError, match=r"synthesis of broken failed: .*yosys\.log"):
        synth.synthesize_verilog(source, "broken", tmp_path / "work")
    with pytest.raises(synth.SynthesisError, match="synthesis of absent failed"):
        synth.synthesize_verilog(tmp_path / "broken.v", "absent", tmp_path / "work2")


def test_a_tool_error_leaves_out_the_tools_own_source_location():
    log = ("-- Running command `synth_ecp5' --\n"
           "ERROR: Assert `GetSize(conn.first) == GetSize(conn.second)' failed in "
           "/src/yosys/kernel/rtlil.cc:3091.\nEnd of script.\n")
    assert synth.last_error(log) == \
        "ERROR: Assert `GetSize(conn.first) == GetSize(conn.second)' failed."
    assert synth.last_error("ERROR: Module `absent' not found!") == \
        "ERROR: Module `absent' not found!"
    assert synth.last_error("no error line\n") == "no error line"


def test_bad_family_and_component(tmp_path):
    source = tmp_path / "good.v"
    source.write_text("module good(input a, output y); assign y = ~a; endmodule\n")
    with pytest.raises(ValueError, match="family must be one of \\['ecp5', 'ice40'\\], not 'xc7'"):
        synth.fpga_fit_verilog(source, "good", tmp_path, family="xc7")
    with pytest.raises(TypeError, match="top must be an amaranth.lib.wiring.Component"):
        synth.synthesize(object(), "thing", tmp_path)


def test_command_line_reports_bad_lanes(tmp_path, capsys):
    assert area.main(["--lanes", "6", "--out", str(tmp_path)]) == 2
    assert "bench.area: error: lanes must be a power of two of at least 2, not 6" in \
        capsys.readouterr().err


def test_tau_is_split_as_table_vii():
    def part(area, bits=0):
        return {"cells": 1, "area_nand2": area, "sequential_nand2": 0.0, "sram_bits": bits}

    tau = {"block": "tau", "area_nand2": 1000.0, "sram_bits": 400,
           "submodules": {"": part(50), "rp0": part(300, 200), "rp1": part(200, 100),
                          "cp": part(400, 100), "dma": part(40), "wp": part(10)}}
    lines = area._tau_table({"block_lanes": 8, "blocks": [tau]})
    rows = {line.split(" | ")[0]: line for line in lines if line.startswith("| ")}
    assert "| `dma`, `rp0`, `rp1` | 540 | 54% | 40% | 300 | 75% | 62% |" in rows["| Read Pipelines"]
    assert "| `cp` | 400 | 40% | 38% | 100 | 25% | 38% |" in rows["| Compute Pipeline"]
    assert "(own logic), `wp` | 60 | 6% | 22% | 0 | 0% | 0% |" in rows["| Write Pipeline + misc."]
    assert area._tau_table({"block_lanes": 8, "blocks": [{**tau, "block": "rp0_sram"}]}) == []
