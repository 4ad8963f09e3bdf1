"""The functional coverage collector: bins hit by the sampling functions, merged exports, holes,
and the report's list of bins that cannot be hit naming bins that exist."""

import funcov
from merit.isa import encode
from merit.isa.encoding import OPERAND_IMM, OPERAND_RP0, OPERAND_RP1, Instruction, Logic, Op


def _hits(prefix):
    return {name: {b for b, h in item["bins"].items() if h}
            for name, item in funcov.export(prefix).items()}


def test_instruction_bins_follow_the_isa():
    before = funcov.export("tau")
    funcov.instruction(encode(Instruction(Op.MAC, d=1, a=1, b=OPERAND_RP0, c=OPERAND_RP1)))
    funcov.instruction(encode(Instruction(Op.LOGIC, fn=Logic.SEL, a=2, b=OPERAND_IMM, c=12)))
    after = funcov.export("tau")
    new = {name: {b for b, h in item["bins"].items() if h > before.get(name, {"bins": {}})
                  ["bins"].get(b, 0)} for name, item in after.items()}
    assert new["tau.op"] == {"MAC", "LOGIC"}
    assert new["tau.logic_fn"] == {"SEL"}
    assert new["tau.op_x_operand"] == {"MAC reg", "MAC rp0", "MAC rp1", "LOGIC reg",
                                       "LOGIC imm", "LOGIC const"}


def test_merge_adds_and_holes_list_the_zeros():
    a = {"x.p": {"bins": {"1": 1, "2": 0, "3": 0}}}
    b = {"x.p": {"bins": {"1": 0, "2": 2, "3": 0}}, "x.q": {"bins": {"a": 0}}}
    merged = funcov.merge(a, b)
    assert merged == {"x.p": {"bins": {"1": 1, "2": 2, "3": 0}}, "x.q": {"bins": {"a": 0}}}
    assert funcov.holes(merged) == {"x.p": ["3"], "x.q": ["a"]}


def test_run_states_and_crosses():
    funcov.run_end("config_refused", "CONFIG", 3)
    funcov.fsm_change("idle", "running")
    funcov.stop("abort", "finishing")
    funcov.abort_vs_finished(0)
    hits = _hits("top")
    assert "config_refused x CONFIG" in hits["top.run.scenario_x_error"]
    assert "lanes" in hits["top.run.check"]            # check 3 of merit.regmap.CHECKS
    assert "idle -> running" in hits["top.fsm.transition"]
    assert "abort x finishing" in hits["top.stop.kind_x_state"]
    assert "0" in hits["top.stop.abort_vs_finished"]
    assert funcov._state(0, 1, 1, 0) == "flushing" and funcov._state(1, 1, 0, 0) == "reset"
    assert funcov._state(0, 0, 0, 1) == "done" and funcov._state(0, 1, 0, 1) == "running"


def test_the_reports_by_design_bins_exist():
    from bench import coverage
    funcov.route_case("affine", False, True, 2, 3)
    items = {**funcov.export("top"), **funcov.export("butterfly")}
    for name, b in coverage.BY_DESIGN:
        assert b in items[name]["bins"], (name, b)
