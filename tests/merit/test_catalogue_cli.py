# ruff: noqa: E501  (the catalogue keeps one case and its pinned message per line)
"""A catalogue of bad command lines: each exits 2 with one line ``merit: error: ...`` (pinned),
never a traceback, and before anything is built or simulated (the simulator is replaced by a stub
that fails the test if it is reached)."""

import sys

import pytest

from merit.cli import main

KERNELS = '''
import merit
from merit import isa, strategies as S
from merit import workloads as W


def boom():
    raise RuntimeError("boom")


def key():
    return {}["x"]


def big():
    return W.gemm(70000, 8, 8)


def small():
    return W.gemm(2, 2, 2)


def seven():
    return merit.Problem("p7", S.Sum(), (2,) * 7, (2,), [merit.Transform(
        (2,) * 8, p=[merit.Index(i) for i in range(7)], a=[merit.Index(7)])])


def huge():
    return W.gemm(100000, 100000, 100000)


def notp():
    return 3


def ok():
    return W.gemm(16, 16, 16)


def bil():
    return W.bilateral(16, 16, sigma_s=1.0, sigma_r=20.0)


class NoProgram(S.Strategy):
    inputs = (S.Input("x", "loop"),)


def noprog():
    return merit.Problem("np", NoProgram(), (16,), (4,), [merit.Transform(
        (16, 4), p=[merit.Index(0)], a=[merit.Index(1)])])


class SquaredDistance(S.Strategy):
    inputs = (S.Input("x", "loop"), S.Input("y", "loop"))

    def pre(self, s, level):
        s.acc = 0

    def loop(self, s, x, y):
        s.acc = s.acc + (x - y) ** 2

    def post(self, s, level):
        s.out[0] = s.acc


isa.register_program(SquaredDistance, lambda p, s: isa.ProgramParts(
    [["add r0, 0, 0, 0"]], ["l1 r0, r0, i0, i1"], [["out r0, 0"]], ["i0", "i1"]), replace=True)


def sqd():
    t = merit.Transform((16, 4), p=[merit.Index(0)], a=[merit.Index(1)], name="x")
    u = merit.Transform((16, 4), p=[merit.Index(0)], a=[merit.Index(1)], name="y")
    return merit.Problem("sqd", SquaredDistance(), (16,), (4,), [t, u])
'''

LANES = "lanes must be a power of two from 2 to 64 (the lane fields have 6 bits), not "

CASES = [
    (["plan", ":f"], "':f': expected MODULE:FUNCTION or path/to/file.py:FUNCTION, with a module and a function name"),
    (["plan", "kernels:"], "'kernels:': expected MODULE:FUNCTION or path/to/file.py:FUNCTION"),
    (["plan", "kernels:1x"], "'kernels:1x': expected MODULE:FUNCTION or path/to/file.py:FUNCTION"),
    (["plan", "syntaxerr:f"], "cannot import 'syntaxerr' of 'syntaxerr:f': SyntaxError: invalid syntax ("),
    (["plan", "importerr:f"], "cannot import 'importerr' of 'importerr:f': ZeroDivisionError: division by zero"),
    (["plan", "nomod:f"], "cannot import 'nomod' of 'nomod:f': ModuleNotFoundError: No module named 'nomod'"),
    (["plan", "nofile.py:f"], "'nofile.py:f': no file 'nofile.py'"),
    (["plan", "sub/none.py:f"], "'sub/none.py:f': no file 'sub/none.py'"),
    (["plan", "kernels:boom"], "kernels:boom() failed: RuntimeError: boom"),
    (["plan", "kernels.py:boom"], "kernels.py:boom() failed: RuntimeError: boom"),
    (["plan", "kernels:key"], "kernels:key() failed: KeyError: 'x'"),
    (["plan", "kernels:notp"], "kernels:notp must return a merit.Problem, not int"),
    (["plan", "kernels:nofunc"], "module 'kernels' has no function 'nofunc'"),
    (["plan", "kernels:big"], "kernels:big cannot run on MERIT-z with 4 TAUs of 32 lanes: problem 'gemm': p_size[0] = 70000 does not fit its 16-bit unsigned field (0..65535)"),
    (["plan", "kernels:huge"], "kernels:huge cannot run on MERIT-z with 4 TAUs of 32 lanes: problem 'gemm': p_size[0] = 100000 does not fit"),
    (["plan", "kernels:small", "--lanes", "8"], "kernels:small cannot run on MERIT-z with 4 TAUs of 8 lanes: problem 'gemm' has 4 parallel outputs, fewer than the 8 lanes of one step"),
    (["plan", "kernels:seven"], "kernels:seven cannot run on MERIT-z with 4 TAUs of 32 lanes: problem 'p7' has 7 parallel and 1 accumulation indices; the TAU has 6 and 6"),
    (["plan", "kernels:noprog"], "kernels:noprog cannot run on MERIT-z with 4 TAUs of 32 lanes: no MERIT-z program for strategy NoProgram"),
    (["plan", "kernels:sqd", "--lanes", "8"], "the ISA program of kernels:sqd differs from the golden model on the small data (max error"),
    (["plan", "kernels:ok", "--png", "/nonexistent/dir/x.png"], "--png '/nonexistent/dir/x.png': folder '/nonexistent/dir' does not exist"),
    (["plan", "kernels:ok", "--png", "."], "--png '.' is a folder; name a file"),
    (["plan", "kernels:ok", "--taus", "0"], "taus must be between 1 and 16, not 0"),
    (["plan", "kernels:ok", "--taus", "17"], "taus must be between 1 and 16, not 17"),
    (["plan", "kernels:ok", "--lanes", "128"], LANES + "128"),
    (["plan", "kernels:ok", "--lanes", "0"], LANES + "0"),
    (["plan", "kernels:ok", "--dram-bytes-per-cycle", "-1"], "--dram-bytes-per-cycle must be positive, not -1"),
    (["plan", "nothing"], "unknown workload 'nothing'; expected one of "),
    (["plan", "paper:nope"], "unknown paper row 'nope'; expected one of "),
    (["sim", "kernels:ok", "--lanes", "8", "--json", "/nonexistent/dir/x.json"], "--json '/nonexistent/dir/x.json': folder '/nonexistent/dir' does not exist"),
    (["sim", "kernels:ok", "--lanes", "8", "--json", "."], "--json '.' is a folder; name a file"),
    (["sim", "kernels:small", "--lanes", "8"], "kernels:small cannot run on one TAU of 8 lanes: problem 'gemm' has 4 parallel outputs, fewer than the 8 lanes of one step"),
    (["sim", "kernels:seven", "--lanes", "8"], "kernels:seven cannot run on one TAU of 8 lanes: problem 'p7' has 7 parallel and 1 accumulation indices"),
    (["sim", "kernels:big", "--lanes", "8"], "kernels:big cannot run on one TAU of 8 lanes: problem 'gemm': p_size[0] = 70000 does not fit"),
    (["sim", "kernels:sqd", "--lanes", "8"], "the ISA program of kernels:sqd differs from the golden model on the small data"),
    (["sim", "kernels:bil", "--lanes", "8", "--taus", "2"], "kernels:bil cannot run on MERIT-z with 2 TAUs of 8 lanes: the configuration needs "),
    (["sim", "kernels:boom", "--lanes", "8"], "kernels:boom() failed: RuntimeError: boom"),
    (["sim", "kernels:ok", "--lanes", "12"], LANES + "12"),
    (["sim", "kernels:ok", "--lanes", "1048576"], LANES + "1048576"),
    (["sim", "kernels:ok", "--lanes", "8", "--latency", "-5"], "--latency must be at least 0, not -5"),
    (["sim", "kernels:ok", "--lanes", "8", "--dram-bytes-per-cycle", "0"], "--dram-bytes-per-cycle must be positive, not 0"),
    (["sim", "kernels:ok", "--lanes", "8", "--waves", "x.txt"], "--waves must name an .fst or .vcd file, not 'x.txt'"),
    (["sim", "kernels:ok", "--lanes", "8", "--taus", "99"], "taus must be between 1 and 16, not 99"),
    (["verilog", "--lanes", "1048576"], LANES + "1048576"),
    (["verilog", "--lanes", "128"], LANES + "128"),
    (["verilog", "--lanes", "0"], LANES + "0"),
    (["verilog", "--lanes", "6"], LANES + "6"),
    (["verilog", "--taus", "0"], "taus must be between 1 and 16, not 0"),
    (["compile", "kernels:boom"], "kernels:boom() failed: RuntimeError: boom"),
    (["compile", "kernels:key"], "kernels:key() failed: KeyError: 'x'"),
    (["compile", "syntaxerr:f"], "cannot import 'syntaxerr' of 'syntaxerr:f': SyntaxError: invalid syntax ("),
    (["compile", "kernels:notp"], "kernels:notp must return a merit.Problem, not int"),
    (["compile", "nothing"], "unknown workload 'nothing'; expected one of "),
    (["compile", "kernels:big"], "kernels:big cannot run on one TAU of 32 lanes: problem 'gemm': p_size[0] = 70000 does not fit its 16-bit unsigned field (0..65535)"),
    (["compile", "kernels:small", "--lanes", "8"], "kernels:small cannot run on one TAU of 8 lanes: problem 'gemm' has 4 parallel outputs, fewer than the 8 lanes of one step"),
    (["compile", "kernels:seven"], "kernels:seven cannot run on one TAU of 32 lanes: problem 'p7' has 7 parallel and 1 accumulation indices"),
    (["compile", "kernels:noprog"], "kernels:noprog cannot run on one TAU of 32 lanes: problem 'np': no MERIT-z program for strategy NoProgram"),
    (["compile", "kernels:bil", "--lanes", "8"], "kernels:bil cannot run on one TAU of 8 lanes: problem 'bilateral': the program has 22 instructions, the TAU holds 16"),
    (["compile", "kernels:sqd", "--lanes", "8"], "the ISA program of kernels:sqd differs from the golden model on the small data"),
    (["compile", "kernels:ok", "--shift", "40"], "kernels:ok cannot run on one TAU of 32 lanes: problem 'gemm': shift must be an integer in 0..31, not 40"),
    (["compile", "kernels:ok", "--lanes", "12"], LANES + "12"),
    (["compile", "kernels:ok", "--lanes", "1048576"], LANES + "1048576"),
    (["compile", "kernels:ok", "--name", "a-b"], "the kernel name must be a C identifier, not 'a-b'"),
    (["compile", "kernels:ok", "--name", "1x"], "the kernel name must be a C identifier, not '1x'"),
    (["compile", "kernels:ok", "--out", "kernels.py"], "--out 'kernels.py' is a file; name a folder"),
    (["compile", "kernels:ok", "--out", "kernels.py/sub"], "--out 'kernels.py/sub': 'kernels.py' is not a folder"),
]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "syntaxerr.py").write_text("def f(:\n")
    (tmp_path / "importerr.py").write_text("x = 1 / 0\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("kernels", "syntaxerr", "importerr"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    def late(*args, **kwargs):
        raise AssertionError("reached the simulator: the error came late")

    import merit.sim
    monkeypatch.setattr(merit.sim, "simulate", late)
    return tmp_path


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_command_line_is_one_line_before_any_build(argv, message, folder, capsys,
                                                       monkeypatch):
    if argv[0] in ("verilog", "compile") and "--out" not in argv:
        argv = argv + ["--out", str(folder / "rtl")]
    if argv[0] == "compile":        # nothing written before the checks: no output folder
        import merit.flow.driver

        def late(*args, **kwargs):
            raise AssertionError("reached the C emission: the error came late")
        monkeypatch.setattr(merit.flow.driver, "emit_c", late)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"merit: error: {message}"), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (folder / "rtl").exists()


def test_the_cli_catalogue_covers_every_command():
    assert len(CASES) >= 60 and len({tuple(c[0]) for c in CASES}) == len(CASES)
    assert {c[0][0] for c in CASES} == {"plan", "sim", "compile", "verilog"}


def test_compile_writes_a_folder_it_makes(folder, capsys):
    assert main(["compile", "kernels:ok", "--lanes", "8", "--out", "new/deeper"]) == 0
    assert (folder / "new" / "deeper" / "ok.c").is_file()
    assert "wrote new/deeper/ok.c" in capsys.readouterr().out


def test_a_file_path_works_like_a_module(folder, capsys):
    assert main(["plan", "./kernels.py:ok", "--lanes", "8"]) == 0
    assert "MERIT-z plan: gemm" in capsys.readouterr().out


def test_internal_errors_are_one_line_too(folder, capsys, monkeypatch):
    import merit.cli as cli
    monkeypatch.setattr(cli, "_problem", lambda spec: 1 / 0)
    assert main(["plan", "kernels:ok"]) == 2
    assert capsys.readouterr().err == ("merit: error: internal error, ZeroDivisionError: division "
                                       "by zero (MERIT_DEBUG=1 shows the traceback)\n")
