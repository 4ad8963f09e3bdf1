"""merit.isa.register_program: a new strategy's program through the public hook, checked."""

import numpy as np
import pytest

import merit
from merit import isa
from merit import strategies as S
from merit.compile import compile_problem


class Grid(S.Strategy):
    """No inputs: each lane writes its parallel coordinates."""

    inputs = ()
    outputs = ("row", "col")

    def pre(self, s, level):
        pass

    def loop(self, s):
        pass

    def post(self, s, level):
        s.out[0], s.out[1] = s.p


def _grid_program(problem, shift):
    return isa.ProgramParts(pre=[[]], loop=["index r0, 0, p0", "index r1, 0, p1"],
                            post=[["out r0, 0", "out r1, 0"]], ports=())


isa.register_program(Grid, _grid_program)


def test_a_problem_without_inputs_runs_on_the_isa_and_compiles():
    p = merit.Problem("meshgrid", Grid(), (4, 8), (), [])
    rows, cols = isa.run(p)
    ref_r, ref_c = p.run()
    assert (rows == ref_r).all() and (cols == ref_c).all()
    assert rows.dtype == np.int16 and int(cols.max()) == 7
    assert compile_problem(p, lanes=8).tiling.p_tile == (4, 8)


def test_registering_twice_needs_replace():
    with pytest.raises(ValueError, match="strategy Grid already has a program; pass "
                                         "replace=True"):
        isa.register_program(Grid, lambda problem, shift: None)
    assert isa.register_program(Grid, _grid_program) is _grid_program     # same builder: fine


class Twice(S.Strategy):
    inputs = (S.Input("x", "loop"),)

    def pre(self, s, level):
        s.acc = 0

    def loop(self, s, x):
        s.acc = s.acc + 2 * x

    def post(self, s, level):
        s.out[0] = s.acc


def _problem():
    t = merit.Transform((8, 4), p=[merit.Index(0)], a=[merit.Index(1)], name="x")
    return merit.Problem("twice", Twice(), (8,), (4,), [t])


@pytest.mark.parametrize("builder, message", [
    (lambda p, s: "add r0, 0, 0, 0",
     "the program builder of Twice must return a merit.isa.ProgramParts, not str"),
    (lambda p, s: isa.ProgramParts([["add r0, 0, 0, 0"]], ["add r0, r0, i0, i0"],
                                   [["out r0, 0"]], ports=["i2"]),
     r"must give one port 'i0' or 'i1' per strategy input \(1\), not \['i2'\]"),
    (lambda p, s: isa.ProgramParts([["add r0, 0, 0, 0"]], ["add r0, r0, i0, i0"],
                                   [["out r0, 0"]], ports=["i0", "i1"]),
     r"per strategy input \(1\), not \['i0', 'i1'\]"),
    (lambda p, s: isa.ProgramParts([["add r0, 0, 0, 0"]], ["add r0, r0, i0, i0"],
                                   [["out r0, 0"]], ports=["i0"], consts=[1] * 5),
     "gives 5 constants and 0 tables; a program has at most 4 and 2"),
    (lambda p, s: isa.ProgramParts([["add r0, 0, 0, 0"]],
                                   ["add r0, r0, i0, i0", "add r0, r0, i0, 0"],
                                   [["out r0, 0"]], ports=["i0"]),
     r"Twice program reads i0 2 time\(s\) but 1 operand\(s\) are bound to it"),
])
def test_bad_builders_are_named(builder, message):
    isa.register_program(Twice, builder, replace=True)
    with pytest.raises(isa.IsaError, match=message):
        isa.program_for(_problem())


def test_a_registered_program_matches_the_golden_model():
    isa.register_program(Twice, lambda p, s: isa.ProgramParts(
        [["add r0, 0, 0, 0"]], ["add r0, r0, i0, i0"], [[f"out r0, 0 >> {s}"]], ["i0"]),
        replace=True)
    p = _problem()
    x = np.random.default_rng(1).integers(-1000, 1000, (8, 4)).astype(np.int16)
    assert (isa.run(p, x) == p.run(x)).all()


@pytest.mark.parametrize("strategy, builder, exc, message", [
    (3, print, TypeError, "strategy must be a merit.strategies.Strategy subclass or its name, "
                          "not 3"),
    ("not a name", print, TypeError, "or its name, not 'not a name'"),
    (Twice, 3, TypeError, r"builder must be callable\(problem, shift\) -> ProgramParts, not 3"),
])
def test_register_program_arguments(strategy, builder, exc, message):
    with pytest.raises(exc, match=message):
        isa.register_program(strategy, builder)


def test_unknown_strategy_names_the_hook():
    class Nope(Twice):
        pass
    t = merit.Transform((8, 4), p=[merit.Index(0)], a=[merit.Index(1)], name="x")
    with pytest.raises(isa.IsaError, match="no MERIT-z program for strategy Nope .*"
                                           "merit.isa.register_program adds one"):
        isa.program_for(merit.Problem("nope", Nope(), (8,), (4,), [t]))
