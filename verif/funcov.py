"""Functional coverage of the Verilator benches, with cocotb-coverage: what the fault and fuzz
regression, the butterfly bench and the TAU bench exercised, as bins and crosses.

* The processor (``test_top_fuzz``): run states of the register block (idle, running, flushing,
  done, and reset) and their transitions; how each run ended (scenario x error code, and the
  START check of each refusal); stops (abort, reset) by the state they hit and, for aborts near
  the end, the cycle relative to ``finished`` (the cycle the run would complete).
* The read butterfly (``test_butterfly``): routing cases (request kind x conflict, multicast,
  stages that swap).
* The TAU (``test_tau``): opcode x operand kind (and the LOGIC functions) of every instruction
  of the programs it runs.

Each bench samples into cocotb-coverage's ``coverage_db`` and hands :func:`export` to
``record_metric("coverage", ...)``; ``python -m bench.coverage`` (``make coverage``) merges the
benches' exports and lists the holes in ``docs/results/coverage.md``.
"""

from cocotb.triggers import FallingEdge, First
from cocotb_coverage.coverage import CoverCross, CoverPoint, coverage_db

from merit.isa import Op, decode
from merit.isa.encoding import OPERAND_CONST, OPERAND_IMM, OPERAND_RP0, OPERAND_RP1, Logic
from merit.regmap import CHECKS, Error

__all__ = ["STATES", "SCENARIOS", "OUTCOMES", "run_end", "fsm_change", "stop", "abort_vs_finished",
           "route_case",
           "instruction", "operand_kind", "RunMonitor", "export", "merge", "holes"]

#: Run states of the register block, from (rst, busy, flush, done).
STATES = ("reset", "idle", "running", "flushing", "done")
#: How a run of the fuzz bench was driven.
SCENARIOS = ("config_refused", "config_accepted", "abort", "abort_near_done", "abort_at_done",
             "start_abort", "start_abort_idle", "abort_idle", "after_reset", "clear_done",
             "abort_in_flush", "reset_lite", "reset_at_done", "reset_in_flush", "reset_storm",
             "abort_storm", "start_busy", "axi_errors_r", "axi_errors_b", "axi_errors_both")
ERRORS = tuple(e.name for e in Error)
CHECK_NAMES = tuple(name for name, _ in CHECKS)
#: Where a stop lands: a run state, or "finishing" (running, in the cycle ``finished`` is high).
STOP_STATES = ("idle", "done", "running", "finishing", "flushing")
#: Abort cycle minus the cycle ``finished`` is (or would be) high, near the end of a run.
NEAR_DONE = (-2, -1, 0, 1, 2)
OPERAND_KINDS = ("reg", "rp0", "rp1", "const", "imm")
ROUTE_KINDS = ("select", "affine", "random", "permutation", "paper")


#: The errors each scenario may end with (the benches assert it); the bins of the scenario x
#: error cross. Resets clear STATUS; an abort may come after the run has finished; START and
#: abort in one write abort a busy processor (start_abort: the run was launched first) and
#: start an idle one; a storm ends with a complete run.
OUTCOMES = {
    "config_refused": ("CONFIG",), "config_accepted": ("NONE",),
    "abort": ("NONE", "ABORTED"), "abort_near_done": ("NONE", "ABORTED"),
    "abort_at_done": ("NONE", "ABORTED"), "start_abort": ("ABORTED",),
    "start_abort_idle": ("NONE",), "abort_idle": ("NONE",), "after_reset": ("CONFIG",),
    "clear_done": ("NONE",), "abort_storm": ("NONE",), "start_busy": ("NONE",),
    "abort_in_flush": ("NONE", "ABORTED"),
    "reset_lite": ("NONE",), "reset_at_done": ("NONE",), "reset_in_flush": ("NONE",),
    "reset_storm": ("NONE",),
    "axi_errors_r": ("AXI_READ",), "axi_errors_b": ("AXI_WRITE",),
    "axi_errors_both": ("AXI_READ", "AXI_WRITE"),
}


@CoverPoint("top.run.scenario", xf=lambda scenario, error, info: scenario, bins=list(SCENARIOS))
@CoverPoint("top.run.error", xf=lambda scenario, error, info: error, bins=list(ERRORS))
@CoverPoint("top.run.check", xf=lambda scenario, error, info:
            CHECK_NAMES[info - 1] if error == "CONFIG" and 1 <= info <= len(CHECKS) else None,
            bins=list(CHECK_NAMES))
@CoverPoint("top.run.scenario_x_error", xf=lambda scenario, error, info: f"{scenario} x {error}",
            bins=[f"{s} x {e}" for s in SCENARIOS for e in OUTCOMES[s]])
def run_end(scenario, error, info):
    """A run of the fuzz bench ended: its ``scenario``, STATUS ``error`` (name) and ``info``."""
    if error not in OUTCOMES[scenario]:
        raise AssertionError(f"scenario {scenario} ended with error {error}, expected one of "
                             f"{OUTCOMES[scenario]}")


@CoverPoint("top.fsm.state", xf=lambda before, after: after, bins=list(STATES))
@CoverPoint("top.fsm.transition", xf=lambda before, after: f"{before} -> {after}",
            bins=[f"{a} -> {b}" for a in STATES for b in STATES if a != b])
def fsm_change(before, after):
    """The register block's run state changed from ``before`` to ``after``."""


@CoverPoint("top.stop.kind", xf=lambda kind, state: kind, bins=["abort", "reset"])
@CoverPoint("top.stop.state", xf=lambda kind, state: state, bins=list(STOP_STATES))
@CoverCross("top.stop.kind_x_state", items=["top.stop.kind", "top.stop.state"])
def stop(kind, state):
    """An abort (CTRL.abort performed) or a reset hit the processor in ``state``."""


@CoverPoint("top.stop.abort_vs_finished", vname="delta", bins=list(NEAR_DONE))
def abort_vs_finished(delta):
    """An abort performed ``delta`` cycles after the cycle ``finished`` is (or, for a negative
    ``delta``, would have been) high."""


def operand_kind(code):
    """The kind of operand code ``code`` (merit.isa)."""
    if code == OPERAND_RP0:
        return "rp0"
    if code == OPERAND_RP1:
        return "rp1"
    if code >= OPERAND_IMM:
        return "imm"
    if code >= OPERAND_CONST:
        return "const"
    return "reg"


def _among(values, b):
    return b in values


def _reads(word):
    ins = decode(word)
    return ins, [operand_kind(code) for code in ins.reads()]


@CoverPoint("tau.op", xf=lambda word: Op(decode(word).op).name, bins=[op.name for op in Op])
@CoverPoint("tau.logic_fn", xf=lambda word: Logic(decode(word).fn).name
            if decode(word).op == Op.LOGIC else None, bins=[fn.name for fn in Logic])
@CoverPoint("tau.operand_kind", xf=lambda word: _reads(word)[1], bins=list(OPERAND_KINDS),
            rel=_among, inj=False)
@CoverPoint("tau.op_x_operand", xf=lambda word: [f"{Op(decode(word).op).name} {kind}"
                                                 for kind in _reads(word)[1]],
            bins=[f"{op.name} {kind}" for op in Op for kind in OPERAND_KINDS], rel=_among,
            inj=False)
def instruction(word):
    """An instruction word of a program the TAU ran."""


@CoverPoint("butterfly.kind", xf=lambda kind, conflict, multicast, swaps, stages: kind,
            bins=list(ROUTE_KINDS))
@CoverPoint("butterfly.conflict", xf=lambda kind, conflict, multicast, swaps, stages:
            bool(conflict), bins=[False, True])
@CoverPoint("butterfly.multicast", xf=lambda kind, conflict, multicast, swaps, stages:
            bool(multicast), bins=[False, True])
@CoverPoint("butterfly.stages_swapping", xf=lambda kind, conflict, multicast, swaps, stages:
            f"{swaps}/{stages}", bins=[f"{k}/3" for k in range(4)])
@CoverCross("butterfly.kind_x_conflict", items=["butterfly.kind", "butterfly.conflict"])
@CoverCross("butterfly.kind_x_multicast", items=["butterfly.kind", "butterfly.multicast"])
def route_case(kind, conflict, multicast, swaps, stages):
    """A butterfly request: its ``kind``, whether the model calls it a conflict, whether lanes
    share a word (multicast), and in how many of the ``stages`` some select bit is set (binned
    for the 3 stages of 8 lanes)."""


def _state(rst, busy, flush, done):
    if rst:
        return "reset"
    if busy:
        return "flushing" if flush else "running"
    return "done" if done else "idle"


class RunMonitor:
    """Samples the register block of ``dut`` (a ``meritz.top.Top``) at falling clock edges.

    ``watch()`` (a coroutine to start once) samples every cycle in which ``rst``, ``busy``,
    ``flush`` or ``done`` changed and reports state changes to :func:`fsm_change`. While
    ``fine`` is set it samples every cycle: each cycle in which an abort is performed, or ``rst``
    rises, goes to :func:`stop` with the state it hit (an abort within two cycles after
    ``finished`` also to :func:`abort_vs_finished`); ``aborts`` ((cycle, state)) and ``finished``
    keep the cycles (``cycle``: falling edges since the monitor started) for exact timing checks.
    """

    def __init__(self, dut):
        regs = dut.regs
        self.dut = dut
        self.signals = (dut.rst, regs.busy, regs.flush, regs.done)
        self.abort, self.finished_signal = regs.abort, regs.finished
        self.state = None
        self.fine = False
        self.cycle = 0
        self.aborts, self.finished = [], []

    def _sample(self):
        rst, busy, flush, done = (int(s.value) for s in self.signals)
        state = _state(rst, busy, flush, done)
        if self.fine:
            finished = busy and not flush and int(self.finished_signal.value)
            if finished:
                self.finished.append(self.cycle)
            if int(self.abort.value):
                where = "finishing" if finished else state
                self.aborts.append((self.cycle, where))
                stop("abort", where)
                near = [self.cycle - f for f in self.finished[-3:] if self.cycle - f <= 2]
                if near:
                    abort_vs_finished(near[-1])
            if state == "reset" and self.state != "reset":
                stop("reset", self.state or "idle")
        if state != self.state and self.state is not None:
            fsm_change(self.state, state)
        self.state = state

    async def watch(self):
        falling = FallingEdge(self.dut.clk)
        while True:
            if not self.fine:
                await First(*(s.value_change for s in self.signals))
            await falling
            self.cycle += 1
            self._sample()


def export(prefix):
    """``{name: {"bins": {bin: hits}, "weight": w}}`` of every coverage item under ``prefix``."""
    out = {}
    for name in coverage_db:
        if not name.startswith(prefix + "."):
            continue
        item = coverage_db[name]
        if not isinstance(item, (CoverPoint, CoverCross)):
            continue
        out[name] = {"bins": {_key(b): int(h) for b, h in item.detailed_coverage.items()}}
    return out


def _key(b):
    return " x ".join(str(x) for x in b) if isinstance(b, tuple) else str(b)


def merge(*exports):
    """Add the hits of several :func:`export` results."""
    out = {}
    for ex in exports:
        for name, item in ex.items():
            bins = out.setdefault(name, {"bins": {}})["bins"]
            for b, h in item["bins"].items():
                bins[b] = bins.get(b, 0) + h
    return out


def holes(merged):
    """``{name: [bins never hit]}``."""
    return {name: [b for b, h in item["bins"].items() if not h] for name, item in merged.items()}
