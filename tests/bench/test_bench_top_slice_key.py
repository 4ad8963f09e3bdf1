"""bench.top's slice key: a hash of a canonical description of the problems, so a stored run
stays matched to its slice when a class gains a field that leaves the slice as it was, and
changes when anything that runs changes."""

import dataclasses
import json
from pathlib import Path

import pytest

from bench import top as M
from merit.paper import row

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


def key(problem, **kw):
    setting = dict(lanes=32, taus=4, bandwidth=8, latency=20) | kw
    return M.slice_key(problem, setting["lanes"], setting["taus"], setting["bandwidth"],
                       setting["latency"], **({"cp_bytes": kw["cp_bytes"]} if "cp_bytes" in kw
                                              else {}))


def test_a_new_attribute_of_the_strategy_leaves_the_key():
    # a pickle of the problem changed with every attribute a strategy object gained
    problem = row("saliency_conv1").slice_problems()[0]
    before = key(problem)
    problem.strategy.unrelated_cache = {"anything": 1}
    assert key(problem) == before


def test_a_new_defaulted_field_leaves_the_description():
    old = dataclasses.make_dataclass("Output", [("name", str), ("shape", tuple)])
    new = dataclasses.make_dataclass("Output", [("name", str), ("shape", tuple),
                                                ("offset", int, dataclasses.field(default=0))])
    assert M._describe(old("out", (1, 2))) == M._describe(new("out", (1, 2)))
    assert M._describe(old("out", (1, 2))) != M._describe(new("out", (1, 2), offset=3))


def test_what_runs_changes_the_key():
    problem = row("saliency_conv1").slice_problems()[0]
    base = key(problem)
    assert base != key(row("saliency_conv2").slice_problems()[0])
    assert base != key(problem, taus=1)
    assert base != key(problem, bandwidth=4)
    assert base != key(problem, cp_bytes=10240)
    relu = row("saliency_conv1").slice_problems()[0]
    relu.strategy.relu = True                      # DotPool(relu=True): another program
    assert key(relu) != base
    wider = row("saliency_conv1").slice_problems()[0]
    w = wider.tensors[1]
    wider.tensors = (wider.tensors[0],
                     dataclasses.replace(w, shape=(w.shape[0] + 1,) + w.shape[1:]))
    assert key(wider) != base


def test_the_key_is_the_problems_not_their_standard_count():
    problem = row("gemm").slice()
    bare = row("gemm").slice()
    bare.ops = None
    assert key(problem) == key(bare)
    assert key(row("alexnet_conv3").slice()) == key(row("alexnet_conv4").slice())
    assert key([problem]) == key(problem)


@pytest.mark.parametrize("name", sorted(json.loads(
    (RESULTS / "utilization.json").read_text())["rows"]))
def test_every_stored_run_matches_its_rows_slice(name):
    """bench.top drops a stored run whose key differs from its row's slice now: every row of
    the page is kept by a run with another row."""
    results = json.loads((RESULTS / "utilization.json").read_text())
    entry, setup = results["rows"][name], results["setup"]
    ran = M.ran_problems(name, entry.get("simulated"))
    assert entry["slice_key"] == M.slice_key(ran, setup["lanes"], setup["taus"],
                                             setup["dram_bytes_per_cycle"], setup["latency"])
