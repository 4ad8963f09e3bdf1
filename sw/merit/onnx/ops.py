"""One mapper per ONNX op: a node (and what fuses into it) -> a :class:`Layer` of MERIT problems.

A mapper returns ``{"layer": Layer, "absorbed": [nodes fused into it], "folded": [names]}``, or
None with ``ctx.why`` saying why the node cannot be mapped (the loader turns that into an error
naming the node, or into a host layer when the user allows it).
"""

from __future__ import annotations

import numpy as np

from .. import workloads as W
from .network import Layer, Part

__all__ = ["OPS", "STATIC_INPUTS", "Context"]


class Context:
    """What the mappers see of the graph: constants, shapes and dtypes so far, consumers."""

    def __init__(self, *, consts, shapes, dtypes, opset, consumers, graph_outputs, fuse):
        self.consts, self.shapes, self.dtypes = consts, shapes, dtypes
        self.opset, self.consumers, self.graph_outputs = opset, consumers, graph_outputs
        self.fuse = fuse
        self.why = None

    def set_const(self, name, value):
        value = np.asarray(value)
        self.consts[name] = value
        self.shapes[name], self.dtypes[name] = value.shape, value.dtype

    def const(self, name):
        return self.consts.get(name) if name else None

    def shape(self, name):
        return tuple(self.shapes[name])

    def fail(self, why):
        self.why = why

    def single_consumer(self, name, op_type):
        """The one node reading ``name`` if it is an ``op_type`` and ``name`` is not a graph
        output (so the value can stay inside a fused kernel)."""
        users = self.consumers.get(name, [])
        if name in self.graph_outputs or len(users) != 1 or users[0].op_type != op_type:
            return None
        return users[0]

    def bind(self, name):
        """How a problem tensor reads the graph value ``name``."""
        c = self.const(name)
        return ("const", c) if c is not None else ("value", name)


def _inputs(node):
    return list(node.input) + [""] * 3


def _layer(ctx, name, op, parts, output, shape, dtype, nodes, *, note="", combine=None):
    reads = []
    for part in parts:
        for src in part.bind.values():
            if src[0] in ("value", "pad") and src[1] not in reads:
                reads.append(src[1])
    return Layer(name, op, "merit", tuple(reads), (output,), (tuple(shape),),
                 (np.dtype(dtype),), parts=parts, combine=combine, nodes=tuple(nodes), note=note)


def _view_layer(name, op, source, outputs, shapes, dtypes, fn):
    return {"layer": Layer(name, op, "view", (source,), tuple(outputs), tuple(shapes),
                           tuple(dtypes), fn=fn, nodes=(name,))}


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _auto_pads(attrs, size, kernel, strides, dilations, node_name):
    d = len(size)
    mode = _text(attrs.get("auto_pad", "NOTSET"))
    if mode in ("NOTSET", ""):
        pads = tuple(attrs.get("pads", (0,) * (2 * d)))
        return pads
    if mode == "VALID":
        return (0,) * (2 * d)
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"node {node_name!r}: auto_pad {mode!r} is not one of NOTSET, VALID, "
                         f"SAME_UPPER, SAME_LOWER")
    begin, end = [], []
    for i in range(d):
        out = -(-size[i] // strides[i])
        total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size[i])
        small, big = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else big)
        end.append(big if mode == "SAME_UPPER" else small)
    return tuple(begin + end)


def _spatial(attrs, d):
    return (tuple(attrs.get("strides", (1,) * d)), tuple(attrs.get("dilations", (1,) * d)))


# ---- convolution ------------------------------------------------------------------------------

def _fold_bn(ctx, bn, weights, bias):
    """Weights and bias of a convolution followed by inference BatchNormalization, or None."""
    attrs = {a.name: a for a in bn.attribute}
    if "training_mode" in attrs and attrs["training_mode"].i:
        return None
    params = [ctx.const(n) for n in bn.input[1:5]]
    if any(p is None for p in params) or len(bn.output) > 1 and any(bn.output[1:]):
        return None
    scale, beta, mean, var = (np.asarray(p, dtype=np.float64) for p in params)
    eps = attrs["epsilon"].f if "epsilon" in attrs else 1e-5
    k = scale / np.sqrt(var + eps)
    shape = (-1,) + (1,) * (weights.ndim - 1)
    new_w = (weights * k.reshape(shape)).astype(weights.dtype)
    b = np.zeros(len(k)) if bias is None else np.asarray(bias, dtype=np.float64)
    new_b = ((b - mean) * k + beta).astype(weights.dtype)
    return new_w, new_b


def _conv(ctx, node, attrs, name):
    x, w, b = _inputs(node)[:3]
    x_shape, w_shape = ctx.shape(x), ctx.shape(w)
    d = len(x_shape) - 2
    strides, dilations = _spatial(attrs, d)
    pads = _auto_pads(attrs, x_shape[2:], w_shape[2:], strides, dilations, name)
    weights, bias = ctx.const(w), ctx.const(b) if b else None
    out, nodes, absorbed, note = node.output[0], [name], [], []
    relu = False
    if ctx.fuse and weights is not None and (not b or bias is not None):
        bn = ctx.single_consumer(out, "BatchNormalization")
        folded = _fold_bn(ctx, bn, weights, bias) if bn is not None else None
        if folded is not None:
            weights, bias = folded
            b = b or "__bias"
            out = bn.output[0]
            absorbed.append(bn)
            nodes.append(bn.name or "BatchNormalization")
            note.append("BatchNormalization folded into the weights and bias")
    if ctx.fuse:
        act = ctx.single_consumer(out, "Relu")
        if act is not None:
            relu, out = True, act.output[0]
            absorbed.append(act)
            nodes.append(act.name or "Relu")
    groups = int(attrs.get("group", 1))
    problem = W.conv_nd(x_shape, w_shape, strides=strides, pads=pads, dilations=dilations,
                        groups=groups, bias=bool(b), relu=relu)
    per_group = None
    if groups > 1:      # MERIT-z: one kernel per group (as the paper runs AlexNet's CONV2/4/5)
        per_group = [(W.conv_nd((x_shape[0], x_shape[1] // groups) + x_shape[2:],
                                (w_shape[0] // groups,) + w_shape[1:], strides=strides,
                                pads=pads, dilations=dilations, bias=bool(b), relu=relu), groups)]
    bind = {"I": ("value", x),
            "W": ("const", weights) if weights is not None else ("value", w)}
    if b:
        bind["B"] = ("const", bias) if bias is not None else ("value", b)
    op = "+".join(["Conv"] + [n.op_type for n in absorbed])
    layer = _layer(ctx, name, op, [Part(problem, bind, per_group)], out,
                   problem.outputs[0].shape,
                   ctx.dtypes[x], nodes, note="; ".join(note))
    return {"layer": layer, "absorbed": absorbed, "folded": nodes[1:] if absorbed else []}


def _conv_transpose(ctx, node, attrs, name):
    x, w, b = _inputs(node)[:3]
    x_shape, w_shape = ctx.shape(x), ctx.shape(w)
    d = len(x_shape) - 2
    strides, dilations = _spatial(attrs, d)
    kernel = w_shape[2:]
    output_padding = list(attrs.get("output_padding", (0,) * d))
    mode = _text(attrs.get("auto_pad", "NOTSET"))
    target = attrs.get("output_shape")
    if target is None and mode in ("SAME_UPPER", "SAME_LOWER"):
        target = [x_shape[2 + i] * strides[i] for i in range(d)]
    if target is not None:
        target = list(target)[-d:]
        begin, end = [], []
        for i in range(d):
            total = (strides[i] * (x_shape[2 + i] - 1) + output_padding[i]
                     + (kernel[i] - 1) * dilations[i] + 1 - target[i])
            if total < 0:                 # a larger output: the extra rows come at the end
                output_padding[i] -= total
                total = 0
            half = total // 2
            if mode == "SAME_UPPER":
                begin.append(half)
                end.append(total - half)
            else:
                begin.append(total - half)
                end.append(half)
        pads = tuple(begin + end)
    elif mode == "VALID":
        pads = (0,) * (2 * d)
    else:
        pads = tuple(attrs.get("pads", (0,) * (2 * d)))
    try:
        problem = W.conv_transpose_nd(x_shape, w_shape, strides=strides, pads=pads,
                                      dilations=dilations, groups=int(attrs.get("group", 1)),
                                      output_padding=output_padding, bias=bool(b))
    except ValueError as exc:
        return ctx.fail(str(exc))
    bind = {"I": ("value", x), "W": ctx.bind(w)}
    if b:
        bind["B"] = ctx.bind(b)
    return {"layer": _layer(ctx, name, "ConvTranspose", [Part(problem, bind)], node.output[0],
                            problem.outputs[0].shape, ctx.dtypes[x], [name])}


# ---- pooling ----------------------------------------------------------------------------------

def _pool(ctx, node, attrs, name, kind, global_=False):
    if len([o for o in node.output if o]) > 1:
        return ctx.fail("the Indices output of MaxPool is not computed")
    x = node.input[0]
    x_shape = ctx.shape(x)
    d = len(x_shape) - 2
    if global_:
        kernel, strides, dilations, pads = x_shape[2:], (1,) * d, (1,) * d, (0,) * (2 * d)
        ceil_mode, include = False, True
    else:
        kernel = tuple(attrs["kernel_shape"])
        strides, dilations = _spatial(attrs, d)
        pads = _auto_pads(attrs, x_shape[2:], kernel, strides, dilations, name)
        ceil_mode = bool(attrs.get("ceil_mode", 0))
        include = bool(attrs.get("count_include_pad", 0))
    bind = {"I": ("value", x)}
    note = ""
    if kind == "max" and any(v > 1 for v in dilations) and (any(pads) or ceil_mode):
        # windows that skip the edge element: pad with the lowest value on the host
        width = [(0, 0), (0, 0)]
        for i in range(d):
            size = x_shape[2 + i]
            span = dilations[i] * (kernel[i] - 1) + 1
            total = size + pads[i] + pads[d + i] - span
            o = (-(-total // strides[i]) if ceil_mode else total // strides[i]) + 1
            if ceil_mode and (o - 1) * strides[i] >= size + pads[i]:
                o -= 1
            extra = max(0, (o - 1) * strides[i] + span - (size + pads[i] + pads[d + i]))
            width.append((pads[i], pads[d + i] + extra))
        bind = {"I": ("pad", x, tuple(width), -np.inf)}
        x_shape = tuple(n + lo + hi for n, (lo, hi) in zip(x_shape, width, strict=True))
        pads, ceil_mode = (0,) * (2 * d), False
        note = "input padded with its lowest value on the host (dilated windows past the edge)"
    problem = W.pool_nd(x_shape, kernel, kind=kind, strides=strides, pads=pads,
                        dilations=dilations, ceil_mode=ceil_mode, count_include_pad=include)
    return {"layer": _layer(ctx, name, node.op_type, [Part(problem, bind)], node.output[0],
                            problem.p_shape, ctx.dtypes[x], [name], note=note)}


# ---- GEMM -------------------------------------------------------------------------------------

def _gemm(ctx, node, attrs, name):
    a, b, c = _inputs(node)[:3]
    ta, tb = bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    if len(a_shape) != 2 or len(b_shape) != 2:
        return ctx.fail(f"Gemm takes 2-D A and B, not {a_shape} and {b_shape}")
    m, k = a_shape[::-1] if ta else a_shape
    n = b_shape[0] if tb else b_shape[1]
    bind = {"A": ctx.bind(a), "B": ctx.bind(b)}
    if alpha != 1.0:
        for key in ("B", "A"):
            if bind[key][0] == "const":
                bind[key] = ("const", (bind[key][1] * alpha).astype(bind[key][1].dtype))
                alpha = 1.0
                break
    if c and beta != 1.0 and ctx.const(c) is not None:
        bind_c = ("const", (ctx.const(c) * beta).astype(ctx.const(c).dtype))
        beta = 1.0
    elif c:
        bind_c = ctx.bind(c)
    out, absorbed, nodes = node.output[0], [], [name]
    simple = alpha == 1.0 and (not c or beta == 1.0)
    relu = False
    if ctx.fuse and simple:
        act = ctx.single_consumer(out, "Relu")
        if act is not None:
            relu, out = True, act.output[0]
            absorbed.append(act)
            nodes.append(act.name or "Relu")
    dtype = ctx.dtypes[a]
    if simple:
        cshape = ctx.shape(c) if c else None
        problem = W.gemm_t(m, n, k, trans_a=ta, trans_b=tb, bias_shape=cshape, relu=relu)
        if c:
            bind["C"] = bind_c
        parts = [Part(problem, bind)]
    else:
        first = W.gemm_t(m, n, k, trans_a=ta, trans_b=tb)
        if c:
            second = W.elementwise("axpby", [(m, n), ctx.shape(c)], names=["Y", "C"],
                                   alpha=alpha, beta=beta)
            parts = [Part(first, bind), Part(second, {"Y": ("part", 0), "C": bind_c})]
        else:
            second = W.elementwise("scale", [(m, n)], names=["Y"], alpha=alpha)
            parts = [Part(first, bind), Part(second, {"Y": ("part", 0)})]
    op = "+".join(["Gemm"] + [x.op_type for x in absorbed])
    return {"layer": _layer(ctx, name, op, parts, out, (m, n), dtype, nodes),
            "absorbed": absorbed}


def _matmul(ctx, node, attrs, name):
    a, b = node.input[:2]
    problem = W.matmul(ctx.shape(a), ctx.shape(b))
    return {"layer": _layer(ctx, name, "MatMul", [Part(problem, {"A": ctx.bind(a),
                                                                 "B": ctx.bind(b)})],
                            node.output[0], problem.outputs[0].shape, ctx.dtypes[a], [name])}


# ---- elementwise ------------------------------------------------------------------------------

def _elementwise(ctx, node, name, op, inputs, shapes=None, **params):
    shapes = [ctx.shape(n) for n in inputs] if shapes is None else shapes
    names = [f"X{i}" for i in range(len(inputs))]
    problem = W.elementwise(op, shapes, names=names, **params)
    bind = {nm: ctx.bind(n) for nm, n in zip(names, inputs, strict=True)}
    shape = tuple(np.broadcast_shapes(*shapes))
    return {"layer": _layer(ctx, name, node.op_type, [Part(problem, bind)], node.output[0],
                            shape, ctx.dtypes[inputs[0]], [name])}


def _relu(ctx, node, attrs, name):
    return _elementwise(ctx, node, name, "relu", [node.input[0]])


def _leaky_relu(ctx, node, attrs, name):
    return _elementwise(ctx, node, name, "leaky_relu", [node.input[0]],
                        alpha=attrs.get("alpha", 0.01))


def _sigmoid(ctx, node, attrs, name):
    return _elementwise(ctx, node, name, "sigmoid", [node.input[0]])


def _clip(ctx, node, attrs, name):
    x, lo, hi = _inputs(node)[:3]
    if ctx.opset < 11:
        low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    else:
        low = ctx.const(lo) if lo else -np.inf
        high = ctx.const(hi) if hi else np.inf
        if low is None or high is None:
            if not lo or not hi:
                return ctx.fail("Clip with one bound computed at run time and the other absent")
            return _elementwise(ctx, node, name, "clip3", [x, lo, hi])
    return _elementwise(ctx, node, name, "clip", [x], low=float(np.asarray(low)),
                        high=float(np.asarray(high)))


def _binary(op):
    def mapper(ctx, node, attrs, name):
        inputs = list(node.input[:2])
        shapes = [ctx.shape(n) for n in inputs]
        if ctx.opset < 7 and attrs.get("broadcast", 0) and "axis" in attrs:
            # legacy broadcast: B's axes line up with A's from ``axis`` on
            axis = int(attrs["axis"]) % len(shapes[0])
            shapes[1] = shapes[1] + (1,) * (len(shapes[0]) - axis - len(shapes[1]))
        return _elementwise(ctx, node, name, op, inputs, shapes)
    return mapper


def _sum(ctx, node, attrs, name):
    if len(node.input) == 1:
        return _identity(ctx, node, attrs, name)
    return _elementwise(ctx, node, name, "add", list(node.input))


def _batchnorm(ctx, node, attrs, name):
    if attrs.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        return ctx.fail("BatchNormalization in training mode (running statistics outputs)")
    x, scale, bias, mean, var = node.input[:5]
    x_shape = ctx.shape(x)
    view = (x_shape[1],) + (1,) * (len(x_shape) - 2)
    eps = float(attrs.get("epsilon", 1e-5))
    params = [ctx.const(n) for n in (scale, bias, mean, var)]
    names = ["X", "S", "T"]
    if all(p is not None for p in params):
        s, b, m, v = (np.asarray(p, dtype=np.float64) for p in params)
        k = s / np.sqrt(v + eps)
        dtype = ctx.dtypes[x]
        problem = W.elementwise("affine", [x_shape, view, view], names=names)
        bind = {"X": ("value", x), "S": ("const", k.reshape(view).astype(dtype)),
                "T": ("const", (b - m * k).reshape(view).astype(dtype))}
        note = "scale and shift computed at load time"
    else:
        names = ["X", "S", "B", "M", "V"]
        problem = W.elementwise("batchnorm", [x_shape] + [view] * 4, names=names, epsilon=eps)
        bind = {"X": ("value", x)}
        for key, n in zip(names[1:], (scale, bias, mean, var), strict=True):
            bind[key] = ctx.bind(n)
        note = ""
    return {"layer": _layer(ctx, name, "BatchNormalization", [Part(problem, bind)],
                            node.output[0], x_shape, ctx.dtypes[x], [name], note=note)}


def _lrn(ctx, node, attrs, name):
    x = node.input[0]
    problem = W.lrn(ctx.shape(x), int(attrs["size"]), alpha=attrs.get("alpha", 1e-4),
                    beta=attrs.get("beta", 0.75), bias=attrs.get("bias", 1.0))
    return {"layer": _layer(ctx, name, "LRN", [Part(problem, {"X": ("value", x)})],
                            node.output[0], ctx.shape(x), ctx.dtypes[x], [name])}


def _softmax(ctx, node, attrs, name):
    x = node.input[0]
    shape = ctx.shape(x)
    nd = len(shape)
    if ctx.opset >= 13:
        axes = [int(attrs.get("axis", -1)) % nd]
    else:
        axes = list(range(int(attrs.get("axis", 1)) % nd, nd))
    problem = W.softmax(shape, axes)
    return {"layer": _layer(ctx, name, "Softmax", [Part(problem, {"X": ("value", x)})],
                            node.output[0], shape, ctx.dtypes[x], [name])}


# ---- data movement ----------------------------------------------------------------------------

def _transpose(ctx, node, attrs, name):
    x = node.input[0]
    shape = ctx.shape(x)
    perm = tuple(attrs.get("perm", tuple(reversed(range(len(shape))))))
    problem = W.transpose(shape, perm)
    return {"layer": _layer(ctx, name, "Transpose", [Part(problem, {"I": ("value", x)})],
                            node.output[0], problem.p_shape, ctx.dtypes[x], [name])}


def _concat(ctx, node, attrs, name):
    shapes = [ctx.shape(n) for n in node.input]
    axis = int(attrs["axis"]) % len(shapes[0])
    parts = []
    for n, shape in zip(node.input, shapes, strict=True):
        parts.append(Part(W.transpose(shape, range(len(shape))), {"I": ctx.bind(n)}))
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return {"layer": _layer(ctx, name, "Concat", parts, node.output[0], out,
                            ctx.dtypes[node.input[0]], [name],
                            note="one Copy per input, each writing its slice of the output",
                            combine=lambda results: (np.concatenate(results, axis=axis),))}


def _depth_to_space(ctx, node, attrs, name):
    x = node.input[0]
    n, c, h, w = ctx.shape(x)
    r = int(attrs["blocksize"])
    problem = W.depth_to_space(n, c // (r * r), h, w, r, mode=_text(attrs.get("mode", "DCR")))
    return {"layer": _layer(ctx, name, "DepthToSpace", [Part(problem, {"I": ("value", x)})],
                            node.output[0], problem.outputs[0].shape, ctx.dtypes[x], [name])}


def _reshape_to(ctx, node, name, shape):
    x = node.input[0]
    dtype = ctx.dtypes[x]
    shape = tuple(int(v) for v in shape)
    return _view_layer(name, node.op_type, x, [node.output[0]], [shape], [dtype],
                       lambda a: (np.reshape(a, shape),))


def _reshape(ctx, node, attrs, name):
    x, s = node.input[:2]
    target = ctx.const(s)
    if target is None:
        return ctx.fail("the target shape is computed at run time")
    in_shape = ctx.shape(x)
    target = [int(v) for v in target]
    if not attrs.get("allowzero", 0):
        target = [in_shape[i] if v == 0 else v for i, v in enumerate(target)]
    shape = np.empty(int(np.prod(in_shape)), dtype=np.int8).reshape(target).shape
    return _reshape_to(ctx, node, name, shape)


def _flatten(ctx, node, attrs, name):
    shape = ctx.shape(node.input[0])
    axis = int(attrs.get("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    return _reshape_to(ctx, node, name, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))


def _unsqueeze(ctx, node, attrs, name):
    shape = list(ctx.shape(node.input[0]))
    axes = attrs.get("axes")
    if axes is None:
        axes = ctx.const(node.input[1]) if len(node.input) > 1 else None
        if axes is None:
            return ctx.fail("the axes are computed at run time")
    rank = len(shape) + len(axes)
    for a in sorted(int(v) % rank for v in axes):
        shape.insert(a, 1)
    return _reshape_to(ctx, node, name, shape)


def _squeeze(ctx, node, attrs, name):
    shape = ctx.shape(node.input[0])
    axes = attrs.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        axes = ctx.const(node.input[1])
        if axes is None:
            return ctx.fail("the axes are computed at run time")
    axes = [i for i, v in enumerate(shape) if v == 1] if axes is None else \
        [int(a) % len(shape) for a in axes]
    return _reshape_to(ctx, node, name, [v for i, v in enumerate(shape) if i not in axes])


def _identity(ctx, node, attrs, name):
    return _reshape_to(ctx, node, name, ctx.shape(node.input[0]))


def _dropout(ctx, node, attrs, name):
    x = node.input[0]
    training = ctx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(node.input) > 2 and node.input[2] and (training is None or bool(training)):
        return ctx.fail("Dropout in training mode")
    shape, dtype = ctx.shape(x), ctx.dtypes[x]
    outs = [o for o in node.output if o]
    shapes, dtypes = [shape], [dtype]
    if len(outs) > 1:
        shapes.append(shape)
        dtypes.append(np.dtype(bool))
    return _view_layer(name, "Dropout", x, outs, shapes, dtypes,
                       lambda a: (a, np.ones(a.shape, bool))[:len(outs)])


#: Inputs that give a shape, axes or bounds (op -> input positions): the backend binds their
#: values at load time when a model feeds them as graph inputs.
STATIC_INPUTS = {"Reshape": (1,), "Unsqueeze": (1,), "Squeeze": (1,), "Clip": (1, 2),
                 "Dropout": (1, 2)}

OPS = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": lambda c, n, a, nm: _pool(c, n, a, nm, "max"),
    "AveragePool": lambda c, n, a, nm: _pool(c, n, a, nm, "avg"),
    "GlobalAveragePool": lambda c, n, a, nm: _pool(c, n, a, nm, "avg", global_=True),
    "GlobalMaxPool": lambda c, n, a, nm: _pool(c, n, a, nm, "max", global_=True),
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batchnorm,
    "LRN": _lrn,
    "Relu": _relu,
    "LeakyRelu": _leaky_relu,
    "Clip": _clip,
    "Sigmoid": _sigmoid,
    "Add": _binary("add"),
    "Mul": _binary("mul"),
    "Sum": _sum,
    "Concat": _concat,
    "Transpose": _transpose,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Identity": _identity,
    "DepthToSpace": _depth_to_space,
    "Softmax": _softmax,
    "Dropout": _dropout,
}
