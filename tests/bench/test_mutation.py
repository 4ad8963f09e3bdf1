"""The mutation bench's own parts: the mutator makes one change per mutant, samples do not
depend on the other files, equivalent mutants are matched by their text and not scored."""

import ast
import random

from bench import mutation

SOURCE = '''def f(a, b):
    """doc 7"""
    if a < b and b == 3:
        return a + 1
    return b << 2
'''


def test_each_mutant_changes_one_thing():
    found = {(line, what) for line, what, _ in mutation.mutants(SOURCE)}
    assert found == {(3, "Lt -> LtE"), (3, "Eq -> NotEq"), (3, "3 -> 4"), (3, "And -> Or"),
                     (4, "Add -> Sub"), (4, "1 -> 2"), (5, "LShift -> RShift"), (5, "2 -> 3")}
    original = ast.unparse(ast.parse(SOURCE))
    for line, _, text in mutation.mutants(SOURCE):
        diff = [(a, b) for a, b in zip(original.splitlines(), text.splitlines(), strict=True)
                if a != b]
        assert len(diff) == 1
        assert mutation._mutated_line(SOURCE, line, text)[1] == diff[0][1].strip()


def test_a_files_sample_depends_on_the_seed_and_the_file_only():
    items = list(range(100))
    one = mutation._rng(1, "a.py").sample(items, 10)
    assert mutation._rng(1, "a.py").sample(items, 10) == one
    assert mutation._rng(1, "b.py").sample(items, 10) != one
    assert mutation._rng(2, "a.py").sample(items, 10) != one
    assert isinstance(mutation._rng(1, "a.py"), random.Random)


def test_equivalent_survivors_are_not_scored():
    path, source, mutant, _ = mutation.EQUIVALENT[0]
    rows = [{"file": path, "source": source, "mutant": mutant or "x", "outcome": "survived"},
            {"file": path, "source": "other", "mutant": "y", "outcome": "survived"},
            {"file": path, "source": "z", "mutant": "w", "outcome": "killed"}]
    assert mutation._equivalent(rows[0]) and not mutation._equivalent(rows[1])
    rows[0]["outcome"] = "equivalent"
    assert mutation._score(rows) == 0.5 and mutation._counts(rows) == (2, 1, 1)
