"""bench.top without a simulator: the roofline, slice identity and the rendered table."""

import types

import pytest

from bench import top as M
from merit.paper import row


def test_roofline_of_depthwise_is_compulsory_traffic():
    # 64x64x32 depthwise: 9 MACs per output (the standard count), 2 bytes read and 2 written
    # per output (+ the 288 weights): 4 B per 9 MACs at 8 B/cycle = 18 MACs/cycle
    (problem, _), = row("depthwise").full()
    outputs = 32 * 64 * 64
    words = 2 * outputs + 32 * 9
    expected = M.roofline([(problem, 1)], alus=128, bandwidth=8)
    assert expected == pytest.approx(9 * outputs / (2 * words / 8 * 128), rel=1e-9)
    assert M.roofline([(problem, 1)], alus=32, bandwidth=8) == pytest.approx(4 * expected)
    assert M.roofline([(problem, 1)], alus=32, bandwidth=10**6) == 1.0


def test_rows_with_the_same_slice_share_a_key():
    key = M.slice_key(row("alexnet_conv3").slice(), 32, 4, 8, 20)
    assert key == M.slice_key(row("alexnet_conv4").slice(), 32, 4, 8, 20)
    assert key != M.slice_key(row("alexnet_conv3").slice(), 32, 1, 8, 20)
    assert key != M.slice_key(row("dilated").slice(), 32, 4, 8, 20)


def test_slice_key_ignores_the_standard_count():
    problem = row("gemm").slice()
    bare = row("gemm").slice()
    bare.ops = None
    assert M.slice_key(problem, 32, 4, 8, 20) == M.slice_key(bare, 32, 4, 8, 20)


def test_render_judges_rows_on_the_standard_count():
    results = {"setup": {"lanes": 32, "taus": 4, "dram_bytes_per_cycle": 8, "latency": 20,
                         "command": "cmd`", "date": "today", "machine": "here"},
               "rows": {"depthwise": {"utilization": 0.16, "cycles": 73728, "dram_busy": 0.99,
                                      "taus": 4, "lanes": 32, "roofline_full": 0.14,
                                      "model_slice_std": 0.12, "model_error": 0.04,
                                      "model_full_std": 0.12, "model_full": 0.15,
                                      "bound": "DRAM"},
                        "gemm": {"utilization": 0.95, "utilization_std": 0.93, "cycles": 10,
                                 "dram_busy": 0.5, "roofline_full": 1.0},
                        "dilated": {"utilization": 0.96, "utilization_std": 0.94, "cycles": 10,
                                    "dram_busy": 0.5, "roofline_full": 1.0}}}
    text = M.render(results, {"depthwise": {"utilization": 0.62, "utilization_std": 0.61}})
    depthwise = next(line for line in text.splitlines() if line.startswith("| Depthwise"))
    # 9 MACs x 131072 outputs / (73728 cycles x 128 ALUs) = 0.125: std from the cycles,
    # printed halves up
    assert "| 0.63 | 0.13 | 0.16 |" in depthwise
    assert depthwise.endswith(
        "below; paper above the roofline; 1 TAU within 0.02 or above |")
    gemm = next(line for line in text.splitlines() if line.startswith("| GEMM"))
    assert gemm.endswith("| at or above |")
    dilated = next(line for line in text.splitlines() if line.startswith("| Dilated"))
    assert dilated.endswith("| below |")              # busy 0.96 >= 0.95, std 0.94 < 0.95
    assert "| AlexNet CONV1+Pool2 | 0.88 | not measured |" in text
    assert "1 of 3 measured rows keep the DRAM port busy" in text
    assert "Model error on the slices: max 4.0%" in text


def test_the_model_on_what_ran_alone_keeps_the_full_layer_columns(monkeypatch):
    """``add_model(full=False)`` (``--no-full-model``): the model on what ran is recomputed, the
    full-layer columns stay with their own date, and the page says which are older or missing;
    ``full=True`` replaces them and drops that date."""
    calls = []

    def model(problems, **kw):
        calls.append(len(problems))
        return (0.9, 1000 * len(problems), "ALUs", 0.8)

    monkeypatch.setattr(M, "_model", model)
    kw = dict(lanes=32, taus=4, bandwidth=8, latency=20)
    kept = {"simulated": "slice", "cycles": 1100, "model_full": 0.5, "model_full_std": 0.4,
            "model_full_cycles": 7, "bound": "DRAM", "model_date": "yesterday"}
    M.add_model(kept, "vgg16_conv5_13", full=False, **kw)
    assert calls == [1]                                 # the slice only, not the 9 layers
    assert (kept["model_slice_cycles"], kept["model_error"]) == (1000, round(1000 / 1100 - 1, 4))
    assert (kept["model_full"], kept["model_full_cycles"], kept["bound"]) == (0.5, 7, "DRAM")
    assert kept["model_full_date"] == "yesterday" and kept["model_date"] != "yesterday"
    empty = {"simulated": "slice", "cycles": 1100}
    M.add_model(empty, "vgg16_conv2_4", full=False, **kw)
    assert empty.get("model_full") is None and "model_full_date" not in empty
    results = {"setup": {"lanes": 32, "taus": 4, "dram_bytes_per_cycle": 8, "latency": 20,
                         "command": "cmd`", "date": "today", "machine": "here"},
               "rows": {"vgg16_conv5_13": dict(kept, label=row("vgg16_conv5_13").label),
                        "vgg16_conv2_4": dict(empty, label=row("vgg16_conv2_4").label)}}
    text = M.render(results)
    assert "the full-layer columns of VGG-16D CONV5-13+Pool2: yesterday" in text
    assert "no full-layer prediction yet for VGG-16D CONV2-4+Pool2" in text
    line = next(x for x in text.splitlines() if x.startswith("| VGG-16D CONV2-4+Pool2"))
    assert "| 0.80 (-9.1%) |  |  |  |" in line
    M.add_model(kept, "vgg16_conv5_13", **kw)
    assert calls == [1, 1, 1, 9] and kept["model_full_cycles"] == 9000
    assert "model_full_date" not in kept


def test_a_new_run_keeps_the_stored_full_layer_columns(monkeypatch):
    """A row measured again with ``--no-full-model`` (here on another part of the layer) keeps
    the stored entry's full-layer columns and their date; a stored entry without them adds
    nothing."""
    monkeypatch.setattr(M, "_model", lambda problems, **kw: (0.9, 1000, "ALUs", 0.8))
    stored = {"simulated": "slice", "cycles": 50, "model_full": 0.99, "model_full_std": 0.98,
              "model_full_cycles": 36, "bound": "ALUs", "model_date": "earlier"}
    entry = M.keep_full_model({"simulated": "layer", "cycles": 1100}, stored)
    M.add_model(entry, "vgg16_conv2_4", full=False, lanes=32, taus=4, bandwidth=8, latency=20)
    assert (entry["model_full"], entry["model_full_cycles"], entry["bound"]) == (0.99, 36, "ALUs")
    assert entry["model_full_date"] == "earlier" and entry["model_date"] != "earlier"
    assert M.keep_full_model({"cycles": 3}, {"cycles": 4, "model_date": "x"}) == {"cycles": 3}


def test_whole_layers_under_the_limit_are_simulated_whole():
    (problem,), part = M.simulated("depthwise", whole_under=10**7)
    assert part == "full" and problem.p_shape == row("depthwise").full()[0][0].p_shape
    # a row of several layers without a layer of its own, or a layer above the limit, runs
    # its slice
    assert row("vgg16_fc").layer is None
    assert M.simulated("vgg16_fc", whole_under=10**9)[1] == "slice"
    assert M.simulated("gemm", whole_under=1000)[1] == "slice"
    assert M.simulated("gemm")[1] == "slice"


def test_a_layer_of_groups_runs_one_group_when_all_of_it_is_under_the_limit():
    """AlexNet CONV5: two groups of the same kernel; the limit is on both groups' cycles, and
    the run is one group (the table's utilization is the layer's: the groups take the same
    cycles one after the other)."""
    from merit.perf import predict_problem
    (problem, groups), = row("alexnet_conv5").full()
    one = predict_problem(problem, lanes=32, taus=4).cycles
    assert groups == 2
    (ran,), part = M.simulated("alexnet_conv5", whole_under=2 * one + 1)
    assert part == "full" and M.describe_problem(ran) == M.describe_problem(problem)
    assert M.simulated("alexnet_conv5", whole_under=2 * one)[1] == "slice"
    assert M.simulated("alexnet_conv5", whole_under=one + 1)[1] == "slice"


def test_a_row_of_several_layers_runs_its_layer_whole_under_the_limit(monkeypatch):
    """VGG-16D CONV5-13: nine layers, of which CONV11 (``Row.layer``, the layer the slice is cut
    from) runs whole when the model predicts it under the limit; the slice column says so."""
    import merit.perf
    r = row("vgg16_conv5_13")
    (layer, repeat), = r.layer()
    asked = []
    monkeypatch.setattr(M, "compile_row", lambda problem, **kw: asked.append(problem) or kw)
    monkeypatch.setattr(merit.perf, "predict", lambda kernel, **kw: types.SimpleNamespace(
        cycles=1000))
    (ran,), part = M.simulated("vgg16_conv5_13", whole_under=1001)
    assert part == "layer" and repeat == 1
    assert M.describe_problem(ran) == M.describe_problem(layer)
    assert M.describe_problem(asked[0]) == M.describe_problem(layer)
    assert [M.describe_problem(p) for p in M.ran_problems("vgg16_conv5_13", "layer")] == [
        M.describe_problem(ran)]
    assert M.simulated("vgg16_conv5_13", whole_under=1000)[1] == "slice"
    assert len(r.full()) == 9 and r.whole()[1] == "layer"
    # the slice is cut from that layer: its input and output channels, the same image
    (cut,) = r.slice_problems()
    assert cut.tensors[0].shape[2:] == layer.tensors[0].shape[2:]
    assert cut.tensors[0].shape[1] < layer.tensors[0].shape[1]
    entry = {"simulated": "layer", "cycles": 1}
    monkeypatch.setattr(M, "run_slice", lambda name, **kw: dict(entry))
    labels = M.measure_row("vgg16_conv5_13", lanes=32, taus=4, bandwidth=8, latency=20, seed=1,
                           done={})
    assert labels["slice"] == f"{r.layer_what}: whole layer" and not labels["whole"]


def test_render_lists_the_share_prediction_with_its_bounds():
    point = [{"variant": label, "cycles": 1000 - 100 * k, "std": 0.4 + 0.1 * k,
              "tile": [8, 8], "groups": [[0, 2], [2, 4]][:k], "read_bytes": 1,
              "write_bytes": 3200, "compute_cycles": 960}
             for k, (label, _) in enumerate(M.SHARE_VARIANTS)]
    results = {"setup": {"lanes": 32, "taus": 4, "dram_bytes_per_cycle": 8, "latency": 20,
                         "command": "cmd`", "date": "today", "machine": "here"},
               "rows": {},
               "share_prediction": {"taus": [8], "dram_bytes_per_cycle": 8, "date": "today",
                                    "rows": {"gemm": [point]}}}
    text = M.render(results, {})
    assert "--share-prediction 8`" in text
    line = next(s for s in text.splitlines() if s.startswith("| gemm | 256 |"))
    # 2-D: 0.6 x 800 = 480 ALU-cycles of work: ALUs alone 480 / 960 = 0.50,
    # writes alone 480 / (3200 / 8) = 1.2 -> 1.00; 1-D: 0.40 (1000; 8x8; none)
    assert "| 0.40 (1000; 8x8; none) | 0.50 (900; 8x8; 0 x 2) |" in line
    assert line.endswith("| 0.60 (800; 8x8; 0 x 2, 2 x 4) | 0.50 | 1.00 |")


def test_scaling_simulates_only_the_rows_asked_for(monkeypatch):
    ran = []
    monkeypatch.setattr(M, "_model", lambda problems, **kw: (0.5, 100, "ALUs", 0.5))
    monkeypatch.setattr(M, "simulated", lambda name, **kw: ((), "full"))
    monkeypatch.setattr(M, "run_slice", lambda name, **kw: ran.append((name, kw["whole_under"]))
                        or {"utilization_std": 0.25, "simulated": "full", "cycles": 100})
    kept = [None, None, None, 0.3, None, None]
    results = {"setup": {"taus": 4}, "rows": {},
               "scaling": {"rtl": {"gemm": list(kept)}, "model": {"gemm": list(kept)}}}
    M.scaling(results, lanes=32, bandwidth=8, latency=20, rtl_taus=[8], seed=1, one_tau={},
              only=["dilated"], whole_under=10**6)
    assert ran == [("dilated", 10**6)]
    assert results["scaling"]["rtl"]["dilated"][3] == 0.25
    assert results["scaling"]["runs"]["dilated"]["256"]["cycles"] == 100
    assert results["scaling"]["rtl"]["gemm"] == kept            # not re-run, kept
    assert results["scaling"]["model"]["gemm"] == kept
    assert results["scaling"]["model"]["dilated"] == [0.5] * len(M.SCALING_ALUS)
    assert results["scaling"]["model_slice"]["dilated"] == [0.5] * len(M.SCALING_ALUS)
    assert results["scaling"]["bound"]["dilated"] == ["ALUs"] * len(M.SCALING_ALUS)


def test_scaling_keeps_whole_layers_and_slices_apart(monkeypatch):
    """A point of the whole layer goes to ``rtl``, one of the slice to ``rtl_slice``; the
    tables' run is reused at their TAU count, under the part it ran; the model is the whole
    layer's, beside the slice's."""
    seen = []
    monkeypatch.setattr(M, "_model", lambda problems, **kw: seen.append(problems) or
                        (0.5, 100, "DRAM", 0.6))
    monkeypatch.setattr(M, "run_slice", lambda name, **kw: {"utilization_std": 0.2,
                                                            "simulated": "slice"})
    results = {"setup": {"taus": 4},
               "rows": {"gemm": {"cycles": 10, "utilization_std": 0.85, "simulated": "full",
                                 "rtl_date": "then"}}}
    M.scaling(results, lanes=32, bandwidth=8, latency=20, rtl_taus=[2, 4], seed=1,
              one_tau={}, only=["gemm", "alexnet_conv3"])
    sc = results["scaling"]
    assert sc["rtl"]["gemm"] == [None, None, 0.85, None, None, None]       # the tables' run
    assert sc["runs"]["gemm"]["128"]["command"] == "the tables' run"
    assert sc["rtl_slice"]["gemm"] == [None, 0.2, None, None, None, None]  # the slice's run
    assert sc["rtl_slice"]["alexnet_conv3"] == [None, 0.2, 0.2, None, None, None]
    assert "alexnet_conv3" not in sc["rtl"] and "dilated" not in sc["rtl_slice"]
    # the model on the row's whole layer and on its slice, at every count
    def key(problems):
        return [(M.describe_problem(p), repeat) for p, repeat in problems]

    conv3 = row("alexnet_conv3")           # a row whose slice is not its whole layer
    full, part = key(conv3.full()), key([(p, 1) for p in conv3.slice_problems()])
    assert full != part
    calls = [key(p) for p in seen]
    assert calls.count(full) == calls.count(part) == len(M.SCALING_ALUS)
    assert sc["roofline"]["gemm"][0] >= sc["roofline"]["gemm"][-1]
    text = "\n".join(M._render_scaling(sc, {"dram_bytes_per_cycle": 8}))
    assert "| gemm | 0.60 (DRAM; roofline" in text
    assert "0.85 RTL / 0.60 model (DRAM; roofline" in text
    assert "### The slices" in text and "0.20 RTL / 0.60 model |" in text


def test_scaling_skips_a_whole_layer_over_the_limit(monkeypatch):
    """With ``whole_under``, a count whose whole layer the model puts over the limit gets no RTL
    point (not the slice's)."""
    ran = []
    monkeypatch.setattr(M, "_model", lambda problems, **kw: (0.5, 100, "ALUs", 0.5))
    monkeypatch.setattr(M, "simulated", lambda name, **kw: ((), "slice" if kw["taus"] == 2
                                                                else "full"))
    monkeypatch.setattr(M, "run_slice", lambda name, **kw: ran.append(kw["taus"]) or
                        {"utilization_std": 0.4, "simulated": "full", "cycles": 9})
    results = {"setup": {"taus": 4}, "rows": {}}
    M.scaling(results, lanes=32, bandwidth=8, latency=20, rtl_taus=[2, 8], seed=1, one_tau={},
              only=["gemm"], whole_under=1000)
    assert ran == [8]
    assert results["scaling"]["rtl"]["gemm"] == [None, None, None, 0.4, None, None]
    assert "rtl_slice" not in results["scaling"]
    assert list(results["scaling"]["model"]) == ["gemm"]     # the rows asked for only


def test_verdict_judges_a_slice_and_the_model_full_layer():
    """The paper measured full layers: a slice that reaches the paper's figure while the model's
    full layer does not (or the other way round) says so instead of counting as met."""
    conv2 = row("saliency_conv2")                                # paper 0.82
    sliced = {"utilization_std": 0.89, "model_full_std": 0.63, "whole": False,
              "roofline_full": 1.0}
    assert M._verdict(conv2, sliced, None) == "at or above on the slice; full layer 0.63 (model)"
    assert M._verdict(conv2, dict(sliced, model_full_std=0.85), None) == "at or above"
    assert M._verdict(conv2, dict(sliced, utilization_std=0.70, model_full_std=0.85), None) == \
        "below on the slice; full layer 0.85 (model)"
    # within the paper's two digits but under its figure: said, not counted as above
    assert M._verdict(conv2, dict(sliced, whole=True, utilization_std=0.8150), None) == \
        "at the paper's two digits (0.815)"
    # a whole layer is judged on the RTL alone
    assert M._verdict(conv2, dict(sliced, whole=True), None) == "at or above"
    assert M._verdict(conv2, dict(sliced, whole=True, utilization_std=0.70,
                                  model_full_std=0.85), None) == "below"


def test_a_run_compiled_with_hold_is_modelled_with_it():
    # bench.top --hold records the choice with the run; the model columns compile it so
    from bench.top import run_compiler
    assert run_compiler({"cycles": 1, "hold": True})["hold"] is True
    assert run_compiler({"cycles": 1})["hold"] is False     # a run from before the field
    assert run_compiler({}) == {}                           # a row not run: the compiler as is
