"""The C driver (``merit.flow.driver``, ``merit compile --emit c``): it compiles with
``cc -Wall -Werror``, its register stream is the Python driver's, STATUS decodes as the map says.
(The stream replayed on the simulated processor: ``verif/test_top_c_driver.py``.)"""

import shutil
import subprocess

import pytest

pytest.importorskip("amaranth")
pytest.importorskip("peakrdl_cheader")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

from merit import workloads as W  # noqa: E402
from merit.cli import main  # noqa: E402
from merit.compile import compile_problem  # noqa: E402
from merit.flow import driver  # noqa: E402
from merit.regmap import Error, register_map  # noqa: E402

SMALL = dict(rp_bytes=(2048, 1024), cp_bytes=2048)


@pytest.fixture(scope="module")
def conv(tmp_path_factory):
    out = tmp_path_factory.mktemp("conv")
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    driver.emit_c(problem, out, "conv", lanes=8, **SMALL)
    kernel = compile_problem(problem, lanes=8, instructions=16, **SMALL)
    return out, kernel, driver.parse_log(driver.dry_run(out, "conv"))


def test_the_c_stream_is_the_python_drivers(conv):
    _, kernel, log = conv
    rmap = register_map()
    status, ctrl = rmap["STATUS"].offset, rmap["CTRL"].offset
    # independent of the driver module: the map's own words, as the benches write them
    expected = (rmap.config_words(kernel.config) + rmap.lut_words_for(kernel.program.luts)
                + [(ctrl, 0b101)])
    assert log[0] == ("R", status, None)            # not busy?
    writes = [(offset, value) for kind, offset, value in log[1:len(expected) + 1]]
    assert all(kind == "W" for kind, _, _ in log[1:len(expected) + 1])
    assert writes == expected
    # then STATUS is polled until done (the dry run answers busy twice), and done is cleared
    assert log[len(expected) + 1:] == [("R", status, None)] * 3 + [("W", status, 0b10)]


def test_the_dry_run_reports_success(conv):
    out, _, _ = conv
    assert driver.dry_run(out, "conv").splitlines()[-1] == \
        "RESULT 0 STATUS 00000002 ERROR NONE INFO 0"


def test_status_decoding_follows_the_register_map(conv, tmp_path):
    out, _, _ = conv
    cases = [(e.value << 4 | 3 << 8 | 2, e.value, 3, e.name) for e in Error]
    cases.append((15 << 4 | 255 << 8, 15, 255, "UNKNOWN"))
    lines = ['#include <stdio.h>', '#include "meritz_driver.h"',
             "void meritz_write32(uint32_t o, uint32_t v) { (void)o; (void)v; }",
             "uint32_t meritz_read32(uint32_t o) { (void)o; return 0; }",
             "int main(void) {"]
    for status, _, _, _ in cases:
        lines.append(f'  printf("%u %u %s\\n", meritz_status_error({status}u), '
                     f'meritz_status_info({status}u), '
                     f'meritz_error_name(meritz_status_error({status}u)));')
    lines += ["  return 0;", "}", ""]
    (tmp_path / "decode.c").write_text("\n".join(lines))
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(out),
                    "-o", "decode", "decode.c", str(out / "meritz_driver.c")],
                   cwd=tmp_path, check=True)
    got = subprocess.run([str(tmp_path / "decode")], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert got == [f"{e} {i} {n}" for _, e, i, n in cases]


def test_bad_names_and_slot_counts_are_refused(tmp_path):
    with pytest.raises(ValueError, match="must be a C identifier, not '2x'"):
        driver.emit_c(W.gemm(8, 8, 8), tmp_path, "2x", lanes=8)
    with pytest.raises(ValueError, match="default register map of 16 instruction slots, not "
                                         "instructions=24"):
        driver.emit_c(W.gemm(8, 8, 8), tmp_path, "g", lanes=8, instructions=24)


def test_merit_compile_emit_c_writes_kernel_driver_and_header(tmp_path, capsys):
    assert main(["compile", "gemm", "--emit", "c", "--lanes", "8", "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["gemm.c", "gemm.h", "meritz.h", "meritz_driver.c", "meritz_driver.h"]
    assert "wrote" in capsys.readouterr().out
    assert driver.dry_run(tmp_path, "gemm").endswith("ERROR NONE INFO 0\n")


def test_merit_compile_refuses_a_program_beyond_the_default_slots(tmp_path, capsys):
    assert main(["compile", "bilateral", "--lanes", "8", "--out", str(tmp_path)]) == 2
    assert "the program has 22 instructions, the TAU holds 16" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
