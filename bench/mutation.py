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
as cosmic-ray counts it). Each row keeps the source line and its mutated form, so a survivor can be
read off the results page. Mutants shown equivalent to the original (no input can tell them apart)
are listed in :data:`EQUIVALENT` with the reason; they are reported apart and left out of the
score.
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
                             "tests/merit/test_catalogue_api.py",
                             # share_choice's groups; the AGU's addresses from slot_config
                             # against the transform's
                             "tests/merit/test_perf_sharing.py", "tests/meritz/tau/test_agu.py"]),
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

#: Equivalent mutants: (file, source line, mutated line or None for any mutant of that line, why
#: no test can kill it). Matched on the stripped text of the line before and after the mutation,
#: so that they survive line moves.
EQUIVALENT = [
    ("sw/merit/execute.py", "CHUNK_BUDGET = 1 << 22", None,
     "the chunk size of the vectorised loop (floored at one step by `max(1, ...)`): any value "
     "gives the same outputs, only the speed and memory change"),
    ("sw/merit/execute.py", "run = int(np.prod(a_shape[first[-2]:], dtype=np.int64))",
     "run = int(np.prod(a_shape[first[- 1]:], dtype=np.int64))",
     "runs of one step: `pre` and `post` still fire only where every index of their level is "
     "at its first / last value, so the outputs are the same (the loop is slower)"),
    ("sw/merit/regmap.py", "self.lut_words_per_table = (LUT_ENTRIES + 1) // 2",
     "self.lut_words_per_table = (LUT_ENTRIES + 2) // 2",
     "LUT_ENTRIES is 33, odd: (33 + 1) // 2 == (33 + 2) // 2 == 17"),
    ("sw/merit/compile.py", "if rows[r] > rp_bytes[r] // (2 * lanes):",
     "if rows[r] > rp_bytes[r] // (2 | lanes):",
     "a looser limit (`2 | lanes` < `2 * lanes` for lanes >= 4, equal at 2) cannot trigger: the "
     "search gives each operand at most a quarter of its RP (double-buffered words), so a tile "
     "needs at most half the RP's rows (0.5 at most over the workloads at 2..64 lanes)"),
    ("sw/merit/compile.py", "depth = rp_bytes[r] // (2 * lanes)",
     "depth = rp_bytes[r] | (2 * lanes)",
     "`depth` only feeds slot_config's check that a tile's rows fit the RP; `|` gives a depth "
     "at least as large (a looser check), which cannot trigger for the reason above"),
    ("hw/meritz/tau/rp/banks.py",
     "words = Signal(range(depth * self._lanes + 1))    # words of the tile being filled so far",
     "words = Signal(range(depth * self._lanes + 2))",
     "depth and lanes are powers of two (at least 2), so depth * lanes + 1 and + 2 need the same "
     "number of bits: the same signal, the same netlist"),
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


def _mutated_line(original, line, text):
    """The line ``line`` of ``original`` and, best effort, its form in the mutant ``text`` (the
    first line of the unparsed mutant that differs from the unparsed original)."""
    before = original.splitlines()[line - 1].strip()
    old = ast.unparse(ast.parse(original)).splitlines()
    new = text.splitlines()
    after = next((b.strip() for a, b in zip(old, new, strict=False) if a != b), "")
    return before, after


def _run(tests, timeout):
    try:
        result = subprocess.run(PYTEST + tests, cwd=REPO, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if result.returncode == 0 else "killed"


def _rng(seed, path):
    """One generator per file, so that a file's sample does not depend on the other files."""
    return random.Random(f"{seed}:{path}")


def run_hw(seed, per_file, timeout, files=None):
    rows = []
    for path, tests in HW:
        if files and path not in files:
            continue
        file = REPO / path
        original = file.read_text()
        assert _run(tests, timeout) == "survived", f"{tests} fail without a mutant"
        every = mutants(original)
        sample = _rng(seed, path).sample(every, min(per_file, len(every)))
        try:
            for line, what, text in sample:
                file.write_text(text)
                outcome = _run(tests, timeout)
                before, after = _mutated_line(original, line, text)
                rows.append({"file": path, "line": line, "mutation": what, "outcome": outcome,
                             "source": before, "mutant": after})
                print(f"[mutation] {path}:{line} {what}: {outcome}", flush=True)
        finally:
            file.write_text(original)
    return rows


def run_sw(seed, per_file, timeout, files=None):
    rows = []
    for path, tests in SW:
        if files and path not in files:
            continue
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
            _sample_session(session, _rng(seed, path), per_file)
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
    ids = [row[0] for row in db.execute(
        "SELECT w.job_id FROM work_items w JOIN mutation_specs s ON w.job_id = s.job_id "
        "ORDER BY s.operator_name, s.start_pos_row, s.start_pos_col, s.occurrence")]
    keep = set(rng.sample(ids, min(per_file, len(ids))))
    drop = [i for i in ids if i not in keep]
    db.executemany("DELETE FROM mutation_specs WHERE job_id = ?", [(i,) for i in drop])
    db.executemany("DELETE FROM work_items WHERE job_id = ?", [(i,) for i in drop])
    db.commit()
    db.close()


def _session_rows(session, path):
    db = sqlite3.connect(session)
    rows = []
    query = ("SELECT s.start_pos_row, s.operator_name, r.test_outcome, r.worker_outcome, r.diff "
             "FROM mutation_specs s JOIN work_results r ON s.job_id = r.job_id")
    for line, operator, test, worker, diff in db.execute(query):
        outcome = {"SURVIVED": "survived", "KILLED": "killed",
                   "INCOMPETENT": "incompetent"}.get(str(test).split(".")[-1].upper(), "killed")
        if str(worker).split(".")[-1].upper() == "ABNORMAL":
            outcome = "timeout"
        lines = (diff or "").splitlines()
        before = " / ".join(x[1:].strip() for x in lines if x.startswith("-")
                            and not x.startswith("---"))
        after = " / ".join(x[1:].strip() for x in lines if x.startswith("+")
                           and not x.startswith("+++"))
        rows.append({"file": path, "line": line, "mutation": operator, "outcome": outcome,
                     "source": before, "mutant": after})
    db.close()
    return rows


def _equivalent(row):
    """The reason ``row`` is an equivalent mutant, or None."""
    for path, source, mutant, why in EQUIVALENT:
        if (row["file"] == path and row.get("source") == source
                and mutant in (None, row.get("mutant"))):
            return why
    return None


def _score(rows):
    """Killed (or timed out) over the mutants that ran (incompetent ones, which cannot even be
    imported, are left out, as cosmic-ray does, and so are equivalent ones)."""
    rows = [r for r in rows if r["outcome"] not in ("incompetent", "equivalent")]
    return sum(r["outcome"] != "survived" for r in rows) / len(rows) if rows else 0.0


def _counts(rows):
    scored = [r for r in rows if r["outcome"] not in ("incompetent", "equivalent")]
    return (len(scored), sum(r["outcome"] != "survived" for r in scored),
            sum(r["outcome"] == "equivalent" for r in rows))


def _cell(text):
    return text.replace("|", "\\|")


def _code(text):
    return _cell(f"`{text}`") if text else ""


def write(sw, hw, command, seconds, name="mutation"):
    for row in sw + hw:
        if row["outcome"] == "survived" and _equivalent(row):
            row["outcome"], row["why"] = "equivalent", _equivalent(row)
    results = REPO / "docs" / "results"
    data = {"command": command, "date": time.strftime("%Y-%m-%d"), "seconds": round(seconds),
            "sw": {"mutants": _counts(sw)[0], "score": round(_score(sw), 3), "rows": sw},
            "hw": {"mutants": _counts(hw)[0], "score": round(_score(hw), 3), "rows": hw}}
    (results / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = ["# Mutation testing", "",
             f"`{command}` ({data['date']}, {seconds / 60:.0f} min on a 2-core machine shared "
             "with other jobs). A mutant is killed when the tests that own its file fail (or time "
             "out). Equivalent mutants (no input tells them from the original; each with its "
             "reason below) and incompetent ones (they cannot be imported) are not scored.", "",
             "| part | engine | mutants scored | killed | equivalent | score |",
             "|---|---|---|---|---|---|"]
    for part, engine, rows in (("sw/merit core", "cosmic-ray", sw),
                               ("hw/meritz", "operator / constant mutator", hw)):
        if rows:
            n, killed, equivalent = _counts(rows)
            lines.append(f"| {part} | {engine} | {n} | {killed} | {equivalent} | "
                         f"{_score(rows):.1%} |")
    lines += ["", "## Per file", "", "| file | mutants scored | killed | equivalent | score |",
              "|---|---|---|---|---|"]
    for path in dict.fromkeys(r["file"] for r in sw + hw):
        rows = [r for r in sw + hw if r["file"] == path]
        n, killed, equivalent = _counts(rows)
        lines.append(f"| `{path}` | {n} | {killed} | {equivalent} | {_score(rows):.1%} |")
    lines += ["", "## Survivors", "", "| file | line | mutation | source | mutant |",
              "|---|---|---|---|---|"]
    lines += [f"| `{r['file']}` | {r['line']} | {r['mutation']} | {_code(r.get('source'))} | "
              f"{_code(r.get('mutant'))} |" for r in sw + hw if r["outcome"] == "survived"]
    lines += ["", "## Equivalent mutants (not scored)", "",
              "| file | line | source | mutant | why |", "|---|---|---|---|---|"]
    lines += [f"| `{r['file']}` | {r['line']} | {_code(r['source'])} | {_code(r['mutant'])} | "
              f"{_cell(r['why'])} |" for r in sw + hw if r["outcome"] == "equivalent"]
    lines += ["", "The sample is fixed by `--seed` and the file (cosmic-ray's work items and the "
              "mutator's points in source order), so a re-run after new tests runs the same "
              "mutants."]
    (results / f"{name}.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sw-per-file", type=int, default=25)
    parser.add_argument("--hw-per-file", type=int, default=15)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("sw", "hw"))
    parser.add_argument("--out", default="mutation",
                        help="results name: docs/results/OUT.md and OUT.json")
    parser.add_argument("--files", nargs="*", help="only these source files (a quick look; "
                        "writes the results page with them alone)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    hw = [] if args.only == "sw" else run_hw(args.seed, args.hw_per_file, args.timeout, args.files)
    sw = [] if args.only == "hw" else run_sw(args.seed, args.sw_per_file, args.timeout, args.files)
    command = "python -m bench.mutation " + " ".join(argv if argv is not None else sys.argv[1:])
    write(sw, hw, command.strip(), time.monotonic() - start, args.out)
    print(f"sw: {_score(sw):.1%} of {_counts(sw)[0]}; hw: {_score(hw):.1%} of {_counts(hw)[0]}")


if __name__ == "__main__":
    main()
