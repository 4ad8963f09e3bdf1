"""docs/guide.md cannot rot: every fenced block of the guide is run here, in order.

Block kinds (the fence's info string: a language, then flags):

* ``console``: each ``$ command`` runs in a shell with ``.venv/bin`` first on ``PATH``, in a scratch
  folder, and must exit 0. The lines shown after it are the expected output: each must match a
  line of the real output, with numbers standing for any number, ``...`` for anything, spaces
  collapsed, and a progress line's ETA free; a line that is only ``...`` matches nothing.
* ``python``: executed in one namespace shared by the guide's Python blocks, in the scratch folder;
  ``python file=NAME`` is written to ``NAME`` there instead.
* flag ``setup``: the command runs in the repository as ``make --dry-run`` (the test never
  reinstalls the shared ``.venv``); ``slow``: only in the slow run (it builds a new Verilator
  model); ``gpu``: only where CuPy sees a CUDA GPU; ``norun``: shown, never run (it needs
  software that the checkout does not install, e.g. PyTorch).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "guide.md"
FENCE = re.compile(r"^```(\S*)(.*)$")
KINDS = ("console", "python")
FLAGS = ("setup", "slow", "gpu", "norun")


class Block:
    def __init__(self, line, kind, flags, text):
        self.line, self.kind, self.text = line, kind, text
        self.file = next((f[5:] for f in flags if f.startswith("file=")), None)
        self.flags = {f for f in flags if not f.startswith("file=")}

    def __repr__(self):
        return f"docs/guide.md:{self.line} ({self.kind})"


def guide_blocks(text):
    """Every fenced block of the guide, in order; refuses kinds and flags that no test runs."""
    blocks, current = [], None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if current is None and match:
            kind, flags = match.group(1), match.group(2).split()
            if kind not in KINDS or not set(f for f in flags if "=" not in f) <= set(FLAGS):
                raise ValueError(f"docs/guide.md:{number}: block {kind!r} {flags} is not run by "
                                 f"this test; use {KINDS} with flags {FLAGS} or file=NAME")
            current = (number, kind, flags, [])
        elif current is not None and line.startswith("```"):
            blocks.append(Block(current[0], current[1], current[2], "\n".join(current[3])))
            current = None
        elif current is not None:
            current[3].append(line)
    assert current is None, f"docs/guide.md:{current[0]}: unclosed block"
    return blocks


def commands(block):
    """``[(command, expected output lines)]`` of a console block."""
    out = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            assert out, f"{block}: output before the first '$ ' command"
            out[-1][1].append(line)
    return out


def _pattern(expected):
    """A regex for one expected output line (see the module docstring)."""
    line = " ".join(expected.split())
    if line.startswith("[merit] cycle"):
        line = line.split(" ETA ")[0] + " ETA ..."
    parts = []
    for token in re.split(r"(\.\.\.|\d+(?:\.\d+)?)", line):
        if token == "...":
            parts.append(".*")
        elif token and token[0].isdigit():
            parts.append(r"\d+(?:\.\d+)?")
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts))


def check_output(block, command, expected, output):
    lines = [" ".join(line.split()) for line in output.splitlines()]
    for want in expected:
        if want.strip() in ("", "..."):
            continue
        pattern = _pattern(want)
        assert any(pattern.fullmatch(line) for line in lines), (
            f"{block}: `{command}` printed no line like {want!r}; output:\n{output}")


def _has_gpu():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU here"
        return False


def run_block(block, scratch, namespace):
    if block.kind == "python" and block.file:
        (scratch / block.file).write_text(block.text + "\n")
        return
    if block.kind == "python":
        cwd = os.getcwd()
        os.chdir(scratch)
        try:
            exec(compile(block.text, str(block), "exec"), namespace)
        finally:
            os.chdir(cwd)
        return
    env = dict(os.environ, PATH=os.pathsep.join([str(REPO / ".venv" / "bin"),
                                                 str(Path(sys.executable).parent),
                                                 os.environ["PATH"]]))
    for command, expected in commands(block):
        if "setup" in block.flags:
            assert command.startswith("make "), f"{block}: a setup block runs make"
            run = ["make", "--dry-run", *command.split()[1:]]
            result = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True)
        else:
            result = subprocess.run(command, shell=True, cwd=scratch, env=env,
                                    capture_output=True, text=True)
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"{block}: `{command}` exited {result.returncode}:\n{output}"
        check_output(block, command, expected, output)


def run_guide(tmp_path, *, slow):
    """The guide's blocks in order, as a reader runs them in a fresh interpreter: the programs
    it registers (``merit.isa.register_program``) are taken out again afterwards, so that the
    guide can run twice in one process."""
    from merit.isa import programs

    namespace = {"__name__": "guide"}
    registered = dict(programs._BUILDERS)
    ran = 0
    try:
        for block in guide_blocks(GUIDE.read_text()):
            if "norun" in block.flags or "slow" in block.flags and not slow:
                continue
            if "gpu" in block.flags and not _has_gpu():
                continue
            run_block(block, tmp_path, namespace)
            ran += 1
    finally:
        programs._BUILDERS.clear()
        programs._BUILDERS.update(registered)
    return ran


def test_guide_blocks_are_all_known_kinds():
    blocks = guide_blocks(GUIDE.read_text())
    assert {b.kind for b in blocks} == set(KINDS)
    assert any(b.file == "mykernel.py" for b in blocks)
    with pytest.raises(ValueError, match=r"docs/guide.md:1: block 'text' \[\] is not run"):
        guide_blocks("```text\nhello\n```\n")


def test_output_patterns():
    assert _pattern("  cycles  158145  (first)").fullmatch("cycles 7 (first)")
    assert not _pattern("cycles 158145").fullmatch("cycles x")
    assert _pattern("tiles ...").fullmatch("tiles 8")
    assert _pattern("[merit] cycle 1, tiles done 3/8, 5 cycles/s, ETA 14 s").fullmatch(
        "[merit] cycle 20, tiles done 8/8, 7000 cycles/s, ETA unknown")


@pytest.mark.sim
@pytest.mark.xdist_group("tau_n8")      # the 8-lane TAU's builds, with the CLI's and ONNX's
def test_guide_commands(tmp_path):
    """Every block that is not slow (about half a minute with a built 8-lane TAU)."""
    assert run_guide(tmp_path, slow=False) >= 8


@pytest.mark.sim
@pytest.mark.slow
def test_guide_commands_with_new_builds(tmp_path):
    """Every block, the slow ones included (builds a 2-TAU top and a traced TAU)."""
    assert run_guide(tmp_path, slow=True) >= 10
