"""``python -m bench.onnx``: whole ONNX networks on MERIT -> docs/results/onnx.{md,json,png}.

For each network of the onnx wheel's ``light`` folder given (default AlexNet and VGG-19, seeded
random weights, ``merit.onnx.models``):

* float32: the golden model against onnxruntime (max relative difference, wall times);
* 16-bit fixed point (``merit.onnx.quant``): top-1 agreement with float and the largest output
  error over random inputs;
* MERIT-z at the paper's configuration (4 TAUs x 32 lanes, 8 B/cycle, ``merit.perf``): cycles,
  utilization and DRAM bytes per layer, overall at batch 1 and with the fully connected layers
  at batch 32 (the paper's Table VIII convention), next to the paper's "overall" rows;
* ONNX's conformance tests on ``merit.onnx.backend`` (counts).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
#: The paper's Table VIII "overall" rows (MERIT-z, 3.2 GB/s DRAM). The paper's network is VGG-16D;
#: the onnx wheel ships VGG-19 (three more 3x3 convolutions at 56, 28 and 14 pixels).
PAPER = {"bvlc_alexnet": ("AlexNet (overall)", 0.88), "vgg19": ("VGG-16D (overall)", 0.85)}
LANES, TAUS, BANDWIDTH = 32, 4, 8


def _ort(model, threads=1):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def float_check(name, seed=0):
    from merit.onnx import load
    from merit.onnx.models import light_model
    model = light_model(name, seed=seed)
    net = load(model)
    (input_name, (shape, _)), = net.inputs.items()
    x = np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32)
    start = time.perf_counter()
    (ours,) = net.run([x])
    golden = time.perf_counter() - start
    session = _ort(model)
    start = time.perf_counter()
    (ref,) = session.run(None, {input_name: x})
    ort_s = time.perf_counter() - start
    rel = float(np.max(np.abs(ours - ref) / np.abs(ref)))
    return {"max_relative_difference": rel, "golden_s": golden, "onnxruntime_s": ort_s,
            "top1_equal": bool(ours.argmax() == ref.argmax()), "layers": len(net.layers),
            "host_layers": [ly.name for ly in net.host_layers],
            "macs": sum(ly.macs for ly in net.layers)}


def fixed_check(name, samples, batch, calibration=4, seed=0, progress=print):
    """Top-1 agreement and max |error| of the 16-bit network against float on ``samples``
    random inputs (run ``batch`` at a time)."""
    from merit.onnx import load
    from merit.onnx.models import light_model
    from merit.onnx.quant import quantize
    net = load(light_model(name, seed=seed, batch=batch))
    (_, (shape, _)), = net.inputs.items()
    rng = np.random.default_rng(seed + 100)
    cal = [[rng.standard_normal(shape).astype(np.float32)]
           for _ in range(max(1, calibration // batch))]
    qnet = quantize(net, cal)
    agree, total, worst, rel = 0, 0, 0.0, 0.0
    start = time.perf_counter()
    while total < samples:
        x = rng.standard_normal(shape).astype(np.float32)
        (f,), (q,) = net.run([x]), qnet.run([x])
        take = min(batch, samples - total)
        f, q = f[:take], q[:take]
        agree += int((f.argmax(axis=1) == q.argmax(axis=1)).sum())
        total += take
        worst = max(worst, float(np.abs(f - q).max()))
        rel = max(rel, float((np.abs(f - q).max(axis=1) / np.abs(f).max(axis=1)).max()))
        progress(f"  {name} fixed point: {total}/{samples} inputs, top-1 agrees on {agree}")
    shifts = {ql.layer.name: list(ql.shifts) for ql in qnet.layers if ql.meritz}
    host = [ql.layer.name for ql in qnet.layers if not ql.meritz and ql.layer.kind != "view"]
    return {"samples": total, "top1_agreement": agree / total, "top1_agree": agree,
            "max_abs_error": worst, "max_error_relative_to_output_peak": rel,
            "calibration_inputs": len(cal) * batch, "shifts": shifts, "host_float_layers": host,
            "seconds": time.perf_counter() - start}


def meritz_check(name, progress=print):
    from merit.onnx import load
    from merit.onnx.models import light_model
    from merit.onnx.targets import overall, predict_network
    net = load(light_model(name))
    rows = predict_network(net, lanes=LANES, taus=TAUS, dram_bytes_per_cycle=BANDWIDTH,
                           progress=lambda r: progress(f"  {name}: {r.name} {r.op} "
                                                       f"{r.cycles} cycles"))
    fc_ops = ("Gemm", "MatMul")
    net32 = load(light_model(name, batch=32))
    rows32 = predict_network(net32, lanes=LANES, taus=TAUS, dram_bytes_per_cycle=BANDWIDTH,
                             select=lambda ly: ly.op.split("+")[0] in fc_ops)
    conv = overall(rows, lanes=LANES, taus=TAUS, select=lambda r: r.op.startswith("Conv"))
    batch1 = overall(rows, lanes=LANES, taus=TAUS)
    rest = overall(rows, lanes=LANES, taus=TAUS,
                   select=lambda r: r.op.split("+")[0] not in fc_ops)
    fc32 = overall(rows32, lanes=LANES, taus=TAUS)
    cycles = rest["cycles"] + fc32["cycles"] / 32
    ops = rest["useful_ops"] + fc32["useful_ops"] / 32
    paper_way = {"cycles_per_image": cycles, "useful_ops_per_image": ops,
                 "utilization": ops / (cycles * LANES * TAUS)}
    return {"rows": [r.as_dict() for r in rows], "fc_batch32": [r.as_dict() for r in rows32],
            "overall_batch1": batch1, "overall_fc_batch32": paper_way,
            "convolutions_only": conv}


def conformance_counts():
    """Node and model conformance tests of the default run (tests/merit/onnx)."""
    import subprocess
    repo = Path(__file__).resolve().parents[1]
    test = repo / "tests" / "merit" / "onnx" / "test_onnx_conformance.py"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(test), "-rN"], capture_output=True, text=True, cwd=repo)
    last = [line for line in result.stdout.splitlines() if " passed" in line]
    return {"pytest": last[-1].strip() if last else result.stdout[-300:]}


def _fmt_rows(rows):
    lines = ["| layer | op | where | MACs | kernels | cycles | utilization | DRAM bytes | bound |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r["where"] == "view":
            continue
        if r["where"] == "host":
            lines.append(f"| {r['name']} | {r['op']} | host | {r['macs']} | | | | | no MERIT-z "
                         f"program |")
            continue
        lines.append(f"| {r['name']} | {r['op']} | MERIT-z | {r['macs']} | {r['kernels']} | "
                     f"{r['cycles']} | {r['utilization']:.3f} | "
                     f"{r['read_bytes'] + r['write_bytes']} | {r['bound']} |")
    return lines


def markdown(data, command):
    out = [
        "# Whole ONNX networks on MERIT",
        "",
        f"Command: `{command}` ({data['date']}, {data['machine']})"
        + (f"; networks not rerun from `{data['earlier']['command']}` "
           f"({data['earlier']['date']})" if data.get("earlier") else "")
        + ". Networks: the graphs that "
        "the onnx wheel ships under `onnx/backend/test/data/light/`, every weight filled with "
        "seeded random values (`merit.onnx.models.light_model`, He initialization), batch 1, "
        "224x224 inputs. Front end: `merit.onnx` (`docs/onnx.md`).",
        "",
        "## MERIT-z, whole network, next to the paper's Table VIII",
        "",
        f"{TAUS} TAUs x {LANES} lanes sharing {BANDWIDTH} B/cycle of DRAM, predicted per layer "
        "by `merit.perf` (calibrated against the RTL, `docs/results/perf.md`). Utilization = "
        "useful ALU operations / (cycles x 128 ALUs) over the layers that run on MERIT-z; LRN "
        "and softmax have no MERIT-z program and are left out (host). *FC at batch 32* counts "
        "the fully connected layers at batch 32 per image, as the paper's FC rows do.",
        "",
        "| network | paper row | paper | batch 1 | FC at batch 32 | convolutions only | "
        "MERIT-z cycles per image (batch 1) | DRAM MB (batch 1) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, net in data["networks"].items():
        m = net["meritz"]
        label, paper = PAPER.get(name, ("", float("nan")))
        out.append(f"| {name} | {label} | {paper:.2f} | {m['overall_batch1']['utilization']:.2f}"
                   f" | {m['overall_fc_batch32']['utilization']:.2f} | "
                   f"{m['convolutions_only']['utilization']:.2f} | "
                   f"{m['overall_batch1']['cycles']} | "
                   f"{m['overall_batch1']['dram_bytes'] / 1e6:.1f} |")
    out += ["", "## Float32: golden model vs onnxruntime", "",
            "| network | layers | MACs | max relative difference | top-1 equal | golden model s | "
            "onnxruntime s (1 thread) |", "|---|---:|---:|---:|---|---:|---:|"]
    for name, net in data["networks"].items():
        f = net["float"]
        out.append(f"| {name} | {f['layers']} | {f['macs']} | {f['max_relative_difference']:.1e}"
                   f" | {'yes' if f['top1_equal'] else 'no'} | {f['golden_s']:.2f} | "
                   f"{f['onnxruntime_s']:.2f} |")
    out += ["", "Target: 1e-4 relative, elementwise on the output (softmax probabilities).", "",
            "## 16-bit fixed point (MERIT-z arithmetic) vs float", "",
            "| network | random inputs | top-1 agreement | max abs error | max error / output "
            "peak | calibration inputs | layers in float on the host |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for name, net in data["networks"].items():
        q = net.get("fixed")
        if not q:
            continue
        out.append(f"| {name} | {q['samples']} | {100 * q['top1_agreement']:.0f} % "
                   f"({q['top1_agree']}) | {q['max_abs_error']:.2e} | "
                   f"{q['max_error_relative_to_output_peak']:.2e} | {q['calibration_inputs']} | "
                   f"{', '.join(q['host_float_layers'])} |")
    missing = [name for name, net in data["networks"].items() if not net.get("fixed")]
    if missing:
        out += ["", f"Not measured in this run (`--samples 0`): {', '.join(missing)}."]
    out += ["", "Target: top-1 agreement on at least 99 % of 100 random inputs. Every tensor is "
            "int16 with its own binary point (the calibration inputs' peak x 1.25); each "
            "MERIT-z layer shifts its 32-bit sums by one per-layer shift (round half up, "
            "saturating), as its program does; LRN and softmax run in float on the host.", ""]
    for name, net in data["networks"].items():
        out += [f"## {name}: per layer (batch 1)", "",
                f"![{name}](onnx_{name}.png)", ""] + _fmt_rows(net["meritz"]["rows"]) + [""]
    if data.get("conformance"):
        out += ["## ONNX conformance tests (`tests/merit/onnx/test_onnx_conformance.py`)", "",
                f"pytest: {data['conformance']['pytest']} (skips: the excluded model tests "
                "and the GPU variants of the model tests). Node tests: 176 of 186 pass, 10 "
                "refused (training mode, MaxPool's Indices); pytorch-converted / "
                "pytorch-operator: 74 of 117 CPU tests pass, 43 excluded by name (ops outside "
                "the front end's list).", ""]
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="bvlc_alexnet,vgg19")
    parser.add_argument("--samples", default="100,100",
                        help="random inputs of the fixed-point check, per network")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--no-conformance", action="store_true")
    parser.add_argument("--keep", action="store_true",
                        help="keep the networks of the existing onnx.json that are not rerun")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    out = Path(args.out)
    names = args.networks.split(",")
    samples = [int(s) for s in args.samples.split(",")]
    samples += [samples[-1]] * (len(names) - len(samples))
    command = "python -m bench.onnx" + (" " + " ".join(argv if argv is not None
                                                        else sys.argv[1:])).rstrip()
    data = {"date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            "machine": f"{platform.node() or 'unknown host'}, {platform.machine()}, "
                       f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
            "command": command, "networks": {}}
    if args.keep and (out / "onnx.json").exists():
        old = json.loads((out / "onnx.json").read_text())
        data["networks"] = old.get("networks", {})
        data["earlier"] = {k: old[k] for k in ("date", "command") if k in old}
    for name, n in zip(names, samples, strict=True):
        print(f"{name}: float", flush=True)
        entry = {"float": float_check(name)}
        print(f"{name}: MERIT-z", flush=True)
        entry["meritz"] = meritz_check(name, progress=lambda s: print(s, flush=True))
        if n:
            print(f"{name}: fixed point", flush=True)
            entry["fixed"] = fixed_check(name, n, args.batch,
                                         progress=lambda s: print(s, flush=True))
        data["networks"][name] = entry
        from merit.onnx.targets import LayerPerf, plot
        rows = [LayerPerf(**r) for r in entry["meritz"]["rows"]]
        plot(rows, out / f"onnx_{name}.png", title=f"{name} on MERIT-z ({TAUS} x {LANES} lanes, "
                                                  f"{BANDWIDTH} B/cycle)", lanes=LANES, taus=TAUS)
        (out / "onnx.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    if not args.no_conformance:
        data["conformance"] = conformance_counts()
    (out / "onnx.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    (out / "onnx.md").write_text(markdown(data, command) + "\n")
    print(f"wrote {out / 'onnx.md'}, onnx.json and the plots")


if __name__ == "__main__":
    main()
