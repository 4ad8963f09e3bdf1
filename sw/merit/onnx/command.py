"""``merit run MODEL --on golden|gpu|meritz``: an ONNX model on one of MERIT's back ends."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

__all__ = ["add_arguments", "run_command", "load_model"]

ON = ("golden", "gpu", "meritz")


class RunError(ValueError):
    """A user error of ``merit run`` (printed as one line by the CLI)."""


def add_arguments(parser):
    """The options of ``merit run`` (the CLI's subparser)."""
    parser.add_argument("model", help="an .onnx file, or light:NAME for a network of the onnx "
                                      "wheel with seeded random weights (light:bvlc_alexnet, "
                                      "light:vgg19, ...)")
    parser.add_argument("--on", choices=ON, default="golden",
                        help="golden: the numpy golden model (default); gpu: every layer "
                             "through merit.gpu (CUDA); meritz: 16-bit fixed point and the "
                             "performance model of MERIT-z per layer")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D,D,...",
                        help="shape of a graph input with symbolic dimensions (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input")
    parser.add_argument("--fallback", action="store_true",
                        help="run ops without a MERIT mapping on the host instead of failing")
    parser.add_argument("--check", action="store_true",
                        help="golden/gpu: compare the outputs with onnxruntime")
    parser.add_argument("--lanes", type=int, default=32, metavar="N",
                        help="meritz: lanes per TAU (default: 32)")
    parser.add_argument("--taus", type=int, default=4, metavar="T",
                        help="meritz: TAUs (default: 4, the paper's MERIT-z)")
    parser.add_argument("--dram-bytes-per-cycle", type=float, default=8, metavar="B",
                        help="meritz: DRAM bandwidth (default: 8, the paper's setting)")
    parser.add_argument("--calibration", type=int, default=2, metavar="K",
                        help="meritz: random inputs that set the fixed-point ranges (default: 2)")
    parser.add_argument("--rtl", metavar="LAYERS",
                        help="meritz: simulate these layers (comma-separated names) on the "
                             "Verilator model of one TAU of --lanes lanes, bit-exact against "
                             "the golden ISA model")
    parser.add_argument("--png", metavar="FILE", help="meritz: plot cycles and utilization")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")


def load_model(spec):
    """An ``onnx.ModelProto`` from a path or ``light:NAME``."""
    import onnx
    if spec.startswith("light:"):
        from .models import LIGHT, light_model
        name = spec.partition(":")[2]
        if name not in LIGHT:
            raise RunError(f"unknown light model {name!r}; expected one of {', '.join(LIGHT)}")
        return light_model(name)
    path = Path(spec)
    if not path.is_file():
        raise RunError(f"no ONNX model at {spec!r} (give a path or light:NAME)")
    try:
        return onnx.load(str(path))
    except Exception as exc:       # a protobuf parse error has no common base class
        raise RunError(f"{spec}: not an ONNX model ({exc})") from None


def _shapes(items):
    out = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            out[name] = tuple(int(d) for d in dims.split(","))
        except ValueError:
            raise RunError(f"--input-shape must be NAME=D,D,..., not {item!r}") from None
        if not sep or not name or any(d <= 0 for d in out[name]):
            raise RunError(f"--input-shape must be NAME=D,D,... with positive sizes, not "
                           f"{item!r}")
    return out


def _inputs(net, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (shape, dtype) in net.inputs.items():
        if np.dtype(dtype).kind == "f":
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[name] = rng.integers(0, 8, size=shape).astype(dtype)
    return feeds


def _summary(name, value):
    value = np.asarray(value)
    line = f"  {name}: shape {value.shape}, {value.dtype}"
    if value.dtype.kind == "f" and value.size:
        line += f", range [{value.min():.4g}, {value.max():.4g}]"
        if value.ndim == 2 and value.shape[1] > 1:
            top = np.argsort(value[0])[::-1][:5]
            line += f", top-5 of row 0: {', '.join(str(int(t)) for t in top)}"
    return line


def _onnxruntime(model, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_command(args, out=print):
    """Run ``merit run`` with parsed ``args``; returns the JSON record."""
    from .loader import load
    from .network import UnsupportedOp
    model = load_model(args.model)
    try:
        net = load(model, input_shapes=_shapes(args.input_shape), fallback=args.fallback)
    except UnsupportedOp as exc:
        raise RunError(str(exc)) from None
    feeds = _inputs(net, args.seed)
    macs = sum(ly.macs for ly in net.layers)
    out(f"{args.model}: {len(net.layers)} layers ({sum(ly.kind == 'merit' for ly in net.layers)}"
        f" MERIT, {len(net.host_layers)} host), {macs} inner-product steps, inputs "
        + ", ".join(f"{n} {s}" for n, (s, _) in net.inputs.items()))
    record = {"model": args.model, "on": args.on, "layers": len(net.layers), "macs": macs}
    if args.on in ("golden", "gpu"):
        record.update(_run_float(args, net, model, feeds, out))
    else:
        record.update(_run_meritz(args, net, feeds, out))
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        out(f"wrote {args.json}")
    return record


def _run_float(args, net, model, feeds, out):
    runner = None
    if args.on == "gpu":
        try:
            from ..gpu import runtime
            runtime.cupy()
        except Exception as exc:       # no CuPy, no driver, no device
            raise RunError(f"--on gpu needs CuPy and a CUDA GPU ({exc})") from None
        from .targets import gpu_runner
        runner = gpu_runner()
    times = {}
    last = [time.perf_counter()]

    def tick(layer, _):
        now = time.perf_counter()
        times[layer.name] = now - last[0]
        last[0] = now

    start = time.perf_counter()
    outputs = net.run(feeds, runner=runner, on_layer=tick)
    wall = time.perf_counter() - start
    out(f"{'layer':<16} {'op':<28} {'kind':<6} {'output':<22} {'ms':>9}")
    for ly in net.layers:
        out(f"{ly.name:<16} {ly.op:<28} {ly.kind:<6} {str(ly.shapes[0]):<22} "
            f"{1e3 * times[ly.name]:>9.2f}")
    out(f"ran on the {'golden model' if args.on == 'golden' else 'GPU'} in {wall:.3f} s")
    for name, value in zip(net.outputs, outputs, strict=True):
        out(_summary(name, value))
    record = {"seconds": wall, "layer_seconds": times}
    if args.check:
        ref = _onnxruntime(model, feeds)
        worst = max(float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-30)))
                    for a, b in zip(outputs, ref, strict=True))
        out(f"onnxruntime: max relative difference {worst:.2e}")
        record["max_relative_difference"] = worst
    return record


def _run_meritz(args, net, feeds, out):
    from .quant import quantize
    from .targets import overall, plot, predict_network, simulate_layers, table_text
    calibration = [_inputs(net, args.seed + 1 + k) for k in range(max(args.calibration, 1))]
    qnet = quantize(net, calibration)
    (ref,), (fixed,) = net.run(feeds)[:1], qnet.run(feeds)[:1]
    err = float(np.abs(np.asarray(ref) - np.asarray(fixed)).max())
    same = ref.ndim == 2 and bool((ref.argmax(axis=1) == fixed.argmax(axis=1)).all())
    out(f"16-bit fixed point (binary points from {len(calibration)} calibration input(s)): max "
        f"|error| {err:.3g} on output {net.outputs[0]!r}"
        + (f", top-1 {'agrees' if same else 'differs'}" if ref.ndim == 2 else ""))
    shifts = {ql.layer.name: list(ql.shifts) for ql in qnet.layers if ql.meritz}
    out("shifts: " + ", ".join(f"{n} {s[0] if len(s) == 1 else s}" for n, s in shifts.items()))
    rows = predict_network(net, lanes=args.lanes, taus=args.taus,
                           dram_bytes_per_cycle=args.dram_bytes_per_cycle)
    out(f"MERIT-z, {args.taus} TAU(s) x {args.lanes} lanes, DRAM {args.dram_bytes_per_cycle:g} "
        f"B/cycle (merit.perf):")
    out(table_text(rows, lanes=args.lanes, taus=args.taus))
    total = overall(rows, lanes=args.lanes, taus=args.taus)
    record = {"lanes": args.lanes, "taus": args.taus,
              "dram_bytes_per_cycle": args.dram_bytes_per_cycle,
              "fixed_point": {"max_error": err, "top1_agrees": same, "shifts": shifts},
              "rows": [r.as_dict() for r in rows], "overall": total}
    if args.png:
        plot(rows, args.png, title=f"{args.model} on MERIT-z ({args.taus} x {args.lanes} lanes)",
             lanes=args.lanes, taus=args.taus)
        out(f"wrote {args.png}")
    if args.rtl:
        names = [n for n in args.rtl.split(",") if n]
        done = simulate_layers(qnet, names, lanes=args.lanes,
                               progress=lambda line: out(line))
        record["rtl"] = []
        for name, k, m in done:
            out(f"RTL {name} (kernel {k}): {m['cycles']} cycles, utilization "
                f"{m['utilization']:.3f}, bit-exact against the golden ISA model")
            record["rtl"].append({"layer": name, "kernel": k, "cycles": m["cycles"],
                                  "utilization": m["utilization"]})
    return record
