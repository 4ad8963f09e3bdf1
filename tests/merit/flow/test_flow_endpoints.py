"""merit.flow.endpoints: arrival times of register inputs in a hand-made ECP5 netlist, and the
grouping by the structure the latest path passes through."""

import pytest

from merit.flow.endpoints import DELAYS, arrivals, classify


def _ff(d, q, ce=None):
    conn = {"CLK": [2], "DI": [d], "Q": [q]}
    dirs = {"CLK": "input", "DI": "input", "Q": "output"}
    if ce is not None:
        conn["CE"], dirs["CE"] = [ce], "input"
    return {"type": "TRELLIS_FF", "connections": conn, "port_directions": dirs}


def _lut(ins, z):
    conn = {p: [b] for p, b in zip("ABCD", ins, strict=False)}
    conn["Z"] = [z]
    dirs = {p: "input" for p in conn}
    dirs["Z"] = "output"
    return {"type": "LUT4", "connections": conn, "port_directions": dirs}


def _netlist(cells, names):
    return {"modules": {"fpga_wrap": {
        "cells": cells,
        "netnames": {n: {"bits": [b]} for n, b in names.items()}}}}


def test_arrival_is_the_longest_path_through_luts_and_a_carry_chain():
    d = DELAYS
    # src (FF, q=10) -> lut a (11) -> lut b (12) -> dst.DI; and a short path q -> dst2.DI
    # src -> CCU2C (A0 -> COUT 20 -> next CCU2C CIN -> S0 21) -> dst3.DI
    ccu = {"type": "CCU2C",
           "connections": {"A0": [10], "COUT": [20], "S0": [30], "S1": [31]},
           "port_directions": {"A0": "input", "COUT": "output", "S0": "output",
                               "S1": "output"}}
    ccu2 = {"type": "CCU2C",
            "connections": {"A0": ["0"], "CIN": [20], "COUT": [22], "S0": [21], "S1": [32]},
            "port_directions": {"A0": "input", "CIN": "input", "COUT": "output",
                                "S0": "output", "S1": "output"}}
    cells = {"dut.src_TRELLIS_FF_Q": _ff(3, 10), "a": _lut([10], 11), "b": _lut([11, 10], 12),
             "dut.dst_TRELLIS_FF_Q": _ff(12, 13), "dut.dst2_TRELLIS_FF_Q": _ff(10, 14),
             "c0": ccu, "c1": ccu2, "dut.dst3_TRELLIS_FF_Q_4": _ff(21, 15)}
    names = {"dut.src": 10, "dut.mid": 11, "dut.late": 12, "dut.carry": 20, "dut.sum": 21}
    eps, bitnames = arrivals(_netlist(cells, names))
    by = {(c, p): (t, path) for t, c, p, path in eps}
    end = d["route"] + d["setup"]
    t, path = by[("dut.dst_TRELLIS_FF_Q", "DI")]
    assert t == pytest.approx(d["clk_q"] + 2 * (d["route"] + d["lut"]) + end)
    assert [bitnames[b] for b in path] == ["dut.late", "dut.mid", "dut.src"]
    assert by[("dut.dst2_TRELLIS_FF_Q", "DI")][0] == pytest.approx(d["clk_q"] + end)
    t3 = by[("dut.dst3_TRELLIS_FF_Q_4", "DI")][0]
    # into the first cell's carry out, then along the carry to the second cell's sum
    assert t3 == pytest.approx(d["clk_q"] + d["route"] + d["carry_in"] + d["carry_bit"]
                               + d["carry_out"] + end)
    groups = classify(eps, bitnames, [("through mid", lambda r, p, th: "dut.mid" in th),
                                      ("carry", lambda r, p, th: r == "dut.dst3")])
    assert [x[1] for x in groups["through mid"]] == ["dut.dst"]
    assert [x[1] for x in groups["carry"]] == ["dut.dst3"]
    assert {x[1] for x in groups["other"]} == {"dut.src", "dut.dst2"}
