"""16-bit fixed point for MERIT-z: per-tensor binary points from calibration data, one shift per
layer, and a bit-exact fast model of the layers' MERIT-z programs.

Every tensor ``t`` is stored as int16 ``q`` with ``t ~ q * 2**-frac[t]``. ``frac`` of an
activation is the largest that holds the calibration data's largest magnitude (times a margin);
each layer's weights get their own. A dot-product layer then needs one right shift,
``frac[x] + frac[w] - frac[y]``, done by its program's ``out`` (round half up, saturating to
int16, ``docs/isa.md``); a bias is stored at the output's point and added after the shift.

:meth:`QuantizedNetwork.run` computes the MERIT-z layers in integers as their programs do
(``merit.isa.programs``: 32-bit wrapping sums, rounding shift, saturation), from exact sums of
the golden model (float64 sums of int16 products are exact below 2**53), so that a whole network
runs at golden-model speed; ``tests/merit/onnx`` checks it bit for bit against the ISA interpreter.
Layers without a MERIT-z program (LRN, softmax, elementwise, host layers) run in float on the
host between a dequantize and a requantize.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import strategies as S
from ..execute import execute
from .network import run_layer, tensor_array

__all__ = ["QuantLayer", "QuantizedNetwork", "quantize", "frac_for", "MERITZ_STRATEGIES"]

#: Strategies whose MERIT-z program :func:`fixed_point` models (the others run on the host).
MERITZ_STRATEGIES = ("Dot", "DotReLU", "DotResidual", "Max", "Copy")

INT16 = (-32768, 32767)


def frac_for(magnitude, bits=16, margin=1.0):
    """The largest binary point ``f`` with ``magnitude * margin * 2**f <= 2**(bits-1) - 1``."""
    top = (1 << (bits - 1)) - 1
    m = float(magnitude) * margin
    if not m > 0:
        return bits - 1
    return int(np.floor(np.log2(top / m)))


def to_fixed(x, frac):
    """``round(x * 2**frac)`` saturated to int16."""
    return np.clip(np.rint(np.asarray(x, dtype=np.float64) * 2.0 ** frac), *INT16).astype(np.int16)


def from_fixed(q, frac):
    """``q * 2**-frac`` as float32."""
    return (np.asarray(q, dtype=np.float64) * 2.0 ** -frac).astype(np.float32)


def _wrap32(x):
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _sat16(x):
    return np.clip(x, *INT16)


def fixed_point(problem, arrays, shift):
    """The int16 result of ``problem`` (a :data:`MERITZ_STRATEGIES` strategy) on int16
    ``arrays`` as its MERIT-z program computes it (``merit.isa.program_for(problem,
    shift=shift)``), in the problem's output shape."""
    name = type(problem.strategy).__name__
    by_name = {t.name: np.asarray(a) for t, a in zip(problem.tensors, arrays, strict=True)}
    ops = problem.operands
    rnd = (1 << (shift - 1)) if shift else 0
    if name in ("Dot", "DotReLU", "DotResidual"):
        acc = execute(S.Dot(), problem.p_shape, problem.a_shape,
                      [(by_name[op.tensor].astype(np.float64), op.transform) for op in ops[:2]])
        acc = _wrap32(np.rint(acc).astype(np.int64))
        if name == "Dot":
            out = _sat16((acc + rnd) >> shift)
        else:
            r = _wrap32((acc + rnd) >> shift)
            if name == "DotResidual":
                t = ops[2].transform
                res = t.gather(by_name[ops[2].tensor].astype(np.int64), problem.p_shape,
                               [np.zeros(1, dtype=np.intp)] * len(t.a))[0]
                r = _wrap32(r + res)
            if name == "DotReLU" or problem.strategy.relu:
                r = np.maximum(r, 0)
            out = _sat16(r)
    elif name in ("Max", "Copy"):
        val = execute(problem.strategy, problem.p_shape, problem.a_shape,
                      [(by_name[op.tensor].astype(np.int64), op.transform) for op in ops])
        out = _sat16(np.asarray(val, dtype=np.int64) >> shift)
    else:
        raise ValueError(f"problem {problem.name!r}: no fixed-point model for strategy {name} "
                         f"(expected one of {', '.join(MERITZ_STRATEGIES)})")
    return problem.outputs[0].finish(np.broadcast_to(out, problem.p_shape)).astype(np.int16)


@dataclass
class QuantLayer:
    """How one layer runs in fixed point.

    Attributes
    ----------
    layer : Layer
    meritz : bool
        The layer runs as MERIT-z programs (else: float on the host, or a view).
    shifts : tuple of int
        The ``out`` shift of each part's program.
    frac_out : int
        Binary point of the layer's output.
    consts : list of dict
        Per part, tensor name -> int16 array of its quantized constants (weights, biases).
    """

    layer: object
    meritz: bool
    shifts: tuple
    frac_out: int
    consts: list


class QuantizedNetwork:
    """A network in 16-bit fixed point (from :func:`quantize`)."""

    def __init__(self, network, fracs, layers):
        self.network, self.fracs, self.layers = network, fracs, layers

    def run(self, feeds, *, keep=False):
        """Outputs (float, dequantized) for ``feeds``; ``keep=True`` also returns the int16
        values of every tensor (``{name: (q, frac)}``)."""
        net = self.network
        env = net._feeds(feeds)
        q = {}
        for name in net.inputs:
            q[name] = to_fixed(env[name], self.fracs[name])
        for ql in self.layers:
            ly = ql.layer
            if ly.kind == "view":
                outs = ly.fn(*[q[n] for n in ly.inputs])
                for name, value in zip(ly.outputs, outs, strict=True):
                    q[name] = value if value.dtype == bool else np.asarray(value)
                continue
            if ql.meritz:
                results = []
                for part, shift, consts in zip(ly.parts, ql.shifts, ql.consts, strict=True):
                    arrays = [consts[t.name] if t.name in consts
                              else tensor_array(part, t, q, results)
                              for t in part.problem.tensors]
                    results.append(fixed_point(part.problem, arrays, shift))
                outs = ly.combine(results) if ly.combine is not None else (results[-1],)
                for name, value, shape in zip(ly.outputs, outs, ly.shapes, strict=True):
                    q[name] = np.asarray(value).reshape(shape)
                continue
            floats = {n: from_fixed(q[n], self.fracs[n]) for n in ly.inputs}
            outs = run_layer(ly, {**net.constants, **floats},
                             lambda problem, arrays: problem.run(*arrays))
            for name, value in zip(ly.outputs, outs, strict=True):
                q[name] = to_fixed(value, self.fracs[name]) if value.dtype.kind == "f" \
                    else value
        result = [from_fixed(q[n], self.fracs[n]) if q[n].dtype == np.int16 else q[n]
                  for n in net.outputs]
        return (result, q) if keep else result

    def kernels(self, *, lanes=32, **compile_kwargs):
        """``[(layer name, part index, merit.compile.Kernel)]``: every MERIT-z layer's program
        compiled for a TAU of ``lanes`` lanes with its shift (a grouped convolution: the kernel
        that runs once per group)."""
        from ..compile import compile_problem
        compile_kwargs.setdefault("instructions", 24)
        out = []
        for ql in self.layers:
            if not ql.meritz:
                continue
            for k, (part, shift) in enumerate(zip(ql.layer.parts, ql.shifts, strict=True)):
                for problem, _ in part.meritz or [(part.problem, 1)]:
                    out.append((ql.layer.name, k, compile_problem(problem, lanes=lanes,
                                                                  shift=shift, **compile_kwargs)))
        return out


def _meritz_layer(layer):
    return layer.kind == "merit" and all(type(p.problem.strategy).__name__ in MERITZ_STRATEGIES
                                         for p in layer.parts)


def quantize(network, calibration, *, bits=16, margin=1.25):
    """Choose the binary points of ``network`` from calibration inputs.

    Parameters
    ----------
    network : Network
    calibration : sequence of feeds
        Inputs (each as ``Network.run`` takes them) whose activations set the ranges.
    bits : int
        Data width (16 on MERIT-z).
    margin : float
        Head room over the largest calibration magnitude of each tensor.
    """
    peak = {}
    for feeds in calibration:
        _, env = network.run(feeds, keep=True)
        for name, value in env.items():
            if name in network.constants or np.asarray(value).dtype.kind != "f":
                continue
            m = float(np.abs(value).max()) if np.size(value) else 0.0
            peak[name] = max(peak.get(name, 0.0), m)
    fracs = {name: frac_for(m, bits, margin) for name, m in peak.items()}
    layers = []
    for ly in network.layers:
        if ly.kind == "view":
            for src, out in zip(ly.inputs * len(ly.outputs), ly.outputs, strict=True):
                fracs[out] = fracs.get(src, fracs.get(out))
            layers.append(QuantLayer(ly, False, (), fracs.get(ly.outputs[0]), []))
            continue
        if not _meritz_layer(ly):
            layers.append(QuantLayer(ly, False, (), fracs.get(ly.outputs[0]), []))
            continue
        out = ly.outputs[0]
        shifts, consts = [], []
        for part in ly.parts:
            problem = part.problem
            name = type(problem.strategy).__name__
            qc, f_in = {}, []
            ops = problem.operands[:2] if name.startswith("Dot") else problem.operands
            for op in ops:
                src = part.bind[op.tensor]
                if src[0] == "const":
                    f = frac_for(np.abs(src[1]).max(), bits)
                    qc[op.tensor] = to_fixed(src[1], f)
                    f_in.append(f)
                else:
                    f_in.append(fracs[src[1]])
            if name.startswith("Dot"):
                # the 32-bit accumulator must hold the sum: lower the weights' point if needed
                # (twice the output's calibration peak: the pre-activation may be larger)
                f_acc = frac_for(peak.get(out, 0.0), 32, 2 * margin)
                for k, op in enumerate(ops):
                    over = f_in[0] + f_in[1] - f_acc
                    if over > 0 and op.tensor in qc:
                        f_in[k] -= over
                        qc[op.tensor] = to_fixed(part.bind[op.tensor][1], f_in[k])
                total = f_in[0] + f_in[1]
                fracs[out] = min(fracs[out], total)
                shift = total - fracs[out]
                if name == "DotResidual":
                    r = problem.operands[2].tensor
                    src = part.bind[r]
                    if src[0] != "const":
                        raise ValueError(f"layer {ly.name!r}: a residual computed at run time "
                                         f"needs its point aligned; not supported")
                    qc[r] = to_fixed(src[1], fracs[out])
            else:
                f = min(f_in)
                fracs[out] = min(fracs.get(out, f), f)
                shift = f - fracs[out]
            shifts.append(int(shift))
            consts.append(qc)
        if len(ly.parts) > 1:             # concat: every part shifts to the common point
            shifts = []
            for part in ly.parts:
                src = part.bind[part.problem.operands[0].tensor]
                shifts.append(int(fracs[src[1]] - fracs[out]) if src[0] != "const" else 0)
        if any(s < 0 or s > 31 for s in shifts):
            raise ValueError(f"layer {ly.name!r}: shifts {shifts} outside 0..31")
        layers.append(QuantLayer(ly, True, tuple(shifts), fracs[out], consts))
    return QuantizedNetwork(network, fracs, layers)
