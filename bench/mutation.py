"""Test strength: mutation runs over ``sw/merit`` (cosmic-ray) and ``hw/meritz`` (a small operator /
constant mutator), written to ``docs/results/mutation.md`` and ``mutation.json``.

``python -m bench.mutation`` (``make mutation``). For every target, a source file and the tests
that own it (its block's bench for the hardware: the Amaranth simulations of the block), a
random sample of mutants is run: the tests must fail on a mutant (killed) or it survives.

* ``sw/merit``: cosmic-ray (``cosmic-ray init`` / ``exec`` on the file; the session's work items
  are sampled down to ``--sw-per-file`` before ``exec``).
* ``hw/meritz``: :func:`mutants` of the Amaranth source: comparison swaps (``<`` / ``<=``,
  ``>`` / ``>=``, ``==`` / ``!=``), arithmetic and bit operator swaps (``+`` / ``-``, ``<<`` /
  ``>>``, ``&`` / ``|``), ``and`` / ``or``, and integer constants + 1, each applied alone.

Files are mutated in place and restored (``git diff`` is empty afterwards); run it with nothing
else using the working tree. Each mutant's test command has a timeout (a hang counts as killed,
as cosmic-ray counts it).
"""

import argparse
import ast
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTEST = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow"]

#: (source, tests) of the software core: golden model, ISA, mapping, compiler, register map
SW = [
    ("sw/merit/kernelcfg.py", ["tests/merit/test_field_ranges.py",
                               "tests/merit/test_catalogue_api.py"]),
    ("sw/merit/isa/alu.py", ["tests/merit/isa/test_alu.py", "tests/merit/isa/test_interp.py"]),
    ("sw/merit/execute.py", ["tests/merit/test_golden_strategies.py",
                             "tests/merit/test_golden_limits.py"]),
    ("sw/merit/compile.py", ["tests/merit/test_compile.py", "tests/merit/test_field_ranges.py",
                             "tests/merit/test_catalogue_api.py"]),
    ("sw/merit/regmap.py", ["tests/meritz/test_top_regmap.py", "tests/merit/test_field_ranges.py",
                            "tests/merit/test_catalogue_api.py"]),
    ("sw/merit/mapping/search.py", ["tests/merit/mapping/test_mapping_search.py",
                                    "tests/merit/test_field_ranges.py"]),
]
#: (source, tests) of the hardware blocks with Amaranth-simulation benches
HW = [
    ("hw/meritz/tau/rp/banks.py", ["tests/meritz/tau/rp/test_banks_amaranth.py"]),
    ("hw/meritz/tau/rp/agu.py", ["tests/meritz/tau/test_agu.py"]),
    ("hw/meritz/kernelcfg.py", ["tests/meritz/test_kernelcfg.py", "tests/meritz/tau/test_agu.py"]),
]

_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
          ast.NotEq: ast.Eq, ast.Add: ast.Sub, ast.Sub: ast.Add, ast.LShift: ast.RShift,
          ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
          ast.And: ast.Or, ast.Or: ast.And}


def _points(tree):
    """``(node, kind, index)`` of every mutation point of ``tree`` (docstrings excluded)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            out += [(node, "cmp", i) for i, op in enumerate(node.ops) if type(op) in _SWAPS]
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _SWAPS:
            out.append((node, "op", 0))
        elif isinstance(node, ast.BoolOp):
            out.append((node, "bool", 0))
        elif (isinstance(node, ast.Constant) and type(node.value) is int
              and id(node) not in docs):
            out.append((node, "const", 0))
    return out


def mutants(source):
    """Every single mutant of ``source``: a list of ``(line, description, mutated source)``."""
    tree = ast.parse(source)
    count = len(_points(tree))
    out = []
    for k in range(count):
        tree = ast.parse(source)
        node, kind, i = _points(tree)[k]
        if kind == "cmp":
            old = node.ops[i]
            node.ops[i] = _SWAPS[type(old)]()
            what = f"{type(old).__name__} -> {type(node.ops[i]).__name__}"
        elif kind in ("op", "bool"):
            old = node.op
            node.op = _SWAPS[type(old)]()
            what = f"{type(old).__name__} -> {type(node.op).__name__}"
        else:
            what = f"{node.value} -> {node.value + 1}"
            node.value += 1
        out.append((node.lineno, what, ast.unparse(tree)))
    return out


def _run(tests, timeout):
    try:
        result = subprocess.run(PYTEST + tests, cwd=REPO, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if result.returncode == 0 else "killed"


def run_hw(rng, per_file, timeout):
    rows = []
    for path, tests in HW:
        file = REPO / path
        original = file.read_text()
        assert _run(tests, timeout) == "survived", f"{tests} fail without a mutant"
        sample = rng.sample(mutants(original), min(per_file, len(mutants(original))))
        try:
            for line, what, text in sample:
                file.write_text(text)
                outcome = _run(tests, timeout)
                rows.append({"file": path, "line": line, "mutation": what, "outcome": outcome})
                print(f"[mutation] {path}:{line} {what}: {outcome}", flush=True)
        finally:
            file.write_text(original)
    return rows


def run_sw(rng, per_file, timeout):
    rows = []
    for path, tests in SW:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "cr.toml"
            session = Path(tmp) / "session.sqlite"
            command = " ".join(PYTEST[1:] + tests).replace("not slow", "'not slow'")
            config.write_text(
                "[cosmic-ray]\n"
                f'module-path = "{path}"\n'
                f"timeout = {float(timeout)}\n"
                "excluded-modules = []\n"
                f'test-command = "{sys.executable} {command}"\n'
                "[cosmic-ray.distributor]\nname = \"local\"\n")
            cr = str(Path(sys.executable).parent / "cosmic-ray")
            subprocess.run([cr, "init", str(config), str(session)], cwd=REPO, check=True,
                           capture_output=True)
            _sample_session(session, rng, per_file)
            subprocess.run([cr, "exec", str(config), str(session)], cwd=REPO, check=True,
                           capture_output=True)
            rows += _session_rows(session, path)
        done = [r for r in rows if r["file"] == path]
        print(f"[mutation] {path}: {sum(r['outcome'] != 'survived' for r in done)} of "
              f"{len(done)} killed", flush=True)
    return rows


def _sample_session(session, rng, per_file):
    """Keep a random ``per_file`` of the session's work items (cosmic-ray runs them all)."""
    db = sqlite3.connect(session)
    ids = [row[0] for row in db.execute("SELECT job_id FROM work_items")]
    drop = [i for i in ids if i not in set(rng.sample(ids, min(per_file, len(ids))))]
    db.executemany("DELETE FROM mutation_specs WHERE job_id = ?", [(i,) for i in drop])
    db.executemany("DELETE FROM work_items WHERE job_id = ?", [(i,) for i in drop])
    db.commit()
    db.close()


def _session_rows(session, path):
    db = sqlite3.connect(session)
    rows = []
    query = ("SELECT s.start_pos_row, s.operator_name, r.test_outcome, r.worker_outcome "
             "FROM mutation_specs s JOIN work_results r ON s.job_id = r.job_id")
    for line, operator, test, worker in db.execute(query):
        outcome = {"SURVIVED": "survived", "KILLED": "killed",
                   "INCOMPETENT": "incompetent"}.get(str(test).split(".")[-1].upper(), "killed")
        if str(worker).split(".")[-1].upper() == "ABNORMAL":
            outcome = "timeout"
        rows.append({"file": path, "line": line, "mutation": operator, "outcome": outcome})
    db.close()
    return rows


def _score(rows):
    """Killed (or timed out) over the mutants that ran (incompetent ones, which cannot even be
    imported, are left out, as cosmic-ray does)."""
    rows = [r for r in rows if r["outcome"] != "incompetent"]
    return sum(r["outcome"] != "survived" for r in rows) / len(rows) if rows else 0.0


def write(sw, hw, command, seconds):
    results = REPO / "docs" / "results"
    data = {"command": command, "date": time.strftime("%Y-%m-%d"), "seconds": round(seconds),
            "sw": {"mutants": len(sw), "score": round(_score(sw), 3), "rows": sw},
            "hw": {"mutants": len(hw), "score": round(_score(hw), 3), "rows": hw}}
    (results / "mutation.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = ["# Mutation testing", "",
             f"`{command}` ({data['date']}, {seconds / 60:.0f} min on a 2-core machine). "
             "A mutant is killed when the tests that own its file fail (or time out).", "",
             "| part | engine | mutants | killed | score |", "|---|---|---|---|---|",
             f"| sw/merit core | cosmic-ray | {len(sw)} | "
             f"{sum(r['outcome'] != 'survived' for r in sw)} | {_score(sw):.1%} |",
             f"| hw/meritz | operator / constant mutator | {len(hw)} | "
             f"{sum(r['outcome'] != 'survived' for r in hw)} | {_score(hw):.1%} |", "",
             "## Per file", "", "| file | mutants | killed | score |", "|---|---|---|---|"]
    for path in dict.fromkeys(r["file"] for r in sw + hw):
        rows = [r for r in sw + hw if r["file"] == path]
        lines.append(f"| `{path}` | {len(rows)} | "
                     f"{sum(r['outcome'] != 'survived' for r in rows)} | {_score(rows):.1%} |")
    lines += ["", "## Survivors", "", "| file | line | mutation |", "|---|---|---|"]
    lines += [f"| `{r['file']}` | {r['line']} | {r['mutation']} |" for r in sw + hw
              if r["outcome"] == "survived"]
    (results / "mutation.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sw-per-file", type=int, default=25)
    parser.add_argument("--hw-per-file", type=int, default=15)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("sw", "hw"))
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    start = time.monotonic()
    hw = [] if args.only == "sw" else run_hw(rng, args.hw_per_file, args.timeout)
    sw = [] if args.only == "hw" else run_sw(rng, args.sw_per_file, args.timeout)
    command = "python -m bench.mutation " + " ".join(argv if argv is not None else sys.argv[1:])
    write(sw, hw, command.strip(), time.monotonic() - start)
    print(f"sw: {_score(sw):.1%} of {len(sw)}; hw: {_score(hw):.1%} of {len(hw)}")


if __name__ == "__main__":
    main()
