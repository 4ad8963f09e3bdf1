"""merit.plan: the text and the picture of ``merit plan WORKLOAD``."""

import pytest

from merit import perf, plan
from merit import workloads as W
from merit.compile import CompileError
from merit.mapping import NoMapping
from merit.suite import WORKLOADS

SECTIONS = ("Problem", "Tiling", "Operands", "DRAM layout", "Program", "Performance")


@pytest.mark.parametrize("name", ["conv3x3_c16", "correlation", "bilateral"])
def test_plan_text_has_every_section(name):
    problem = WORKLOADS[name][0]()
    text = plan.plan_text(problem, lanes=32, taus=4, dram_bytes_per_cycle=8)
    lines = text.splitlines()
    for section in SECTIONS:
        assert any(line.startswith(section) for line in lines), section
    for t in problem.tensors:
        assert f"tensor {t.name} " in text
    assert "footprint box" in text and "H (Eq. 12)" in text and "bank function" in text
    assert "conflict-free and routable" in text
    assert "read butterfly 5 stages" in text
    assert "1 TAU(s):" in text and "4 TAU(s):" in text


def test_plan_text_shows_the_compiled_choices():
    problem = WORKLOADS["correlation"][0]()
    text = plan.plan_text(problem, lanes=32, taus=1, dram_bytes_per_cycle=8)
    assert "p_tile = (4, 8, 4, 8)" in text
    assert "bank bit 3 ^= address bit 4, bank bit 4 ^= address bit 5" in text    # hashed
    assert "every lane reads the same word (broadcast)" in text                   # I1
    assert "R X H (Eq. 16)" in text
    assert "M(I1) = I1[" in text
    assert "mac" in text and "out" in text
    assert text.count("TAU(s):") == 1


def test_plan_text_prediction_matches_merit_perf():
    problem = W.gemm(64, 128, 64)
    text = plan.plan_text(problem, lanes=32, taus=2, dram_bytes_per_cycle=4)
    p = perf.predict_problem(problem, lanes=32, taus=2, dram_bytes_per_cycle=4,
                             instructions=16)
    assert f"2 TAU(s): {p.cycles} cycles" in text


@pytest.mark.parametrize("name", ["conv3x3_c16", "motion_sad"])
def test_plan_png_writes_a_png(tmp_path, name):
    import matplotlib.image
    out = plan.plan_png(WORKLOADS[name][0](), tmp_path / "plan.png", lanes=32, taus=4,
                        dram_bytes_per_cycle=8)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(out)
    assert image.shape[0] > 300 and image.shape[1] > 1000


def test_plan_png_operand_choice(tmp_path):
    problem = WORKLOADS["gemm"][0]()
    plan.plan_png(problem, tmp_path / "a.png", operand="B")
    with pytest.raises(ValueError, match=r"operand must name an input of the problem "
                                         r"\(A, B\), not 'C'"):
        plan.plan_png(problem, tmp_path / "b.png", operand="C")


def test_plan_bad_arguments():
    problem = W.gemm(8, 8, 8)
    with pytest.raises(TypeError, match=r"problem must be a merit\.problem\.Problem, not str"):
        plan.plan_text("gemm")
    with pytest.raises(ValueError, match=r"taus must be at least 1, not 0"):
        plan.plan_text(problem, taus=0)
    with pytest.raises(ValueError, match=r"dram_bytes_per_cycle must be positive, not 0"):
        plan.plan_png(problem, "unused.png", dram_bytes_per_cycle=0)


def test_plan_keeps_the_compiler_errors(tmp_path):
    too_small = W.conv2d(1, 2, 4, 4, 2, 3, padding=1)
    with pytest.raises(NoMapping, match=r"problem 'conv2d' has 32 parallel outputs, fewer than "
                                        r"the 64 lanes of one step"):
        plan.plan_text(too_small, lanes=64)
    with pytest.raises(NoMapping, match=r"fewer than the 64 lanes"):
        plan.plan_png(too_small, tmp_path / "x.png", lanes=64)
    assert issubclass(NoMapping, ValueError) and issubclass(CompileError, ValueError)
