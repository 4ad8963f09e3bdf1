"""Ranged inner products (paper §III-B, Fig. 4): the arithmetic of a MERIT kernel as a strategy.

A strategy is a small class with one PreLoop and one PostLoop per accumulation level and one Loop.
For ``levels = D`` the functions run, on each step of the linearized accumulation loop, as the
range ``Pre_l .. Pre_D, Loop, Post_D .. Post_l'`` (§III-B of the MERIT paper): ``Pre_l`` runs
when the indices of level ``l`` and of every inner level are at their first value, ``Post_l`` when
they are at their last value.

Python functions receive arrays holding every lane (all parallel indices at once, broadcast shapes
allowed), never one element.  Levels are numbered from 0 (outermost) to ``D - 1`` (innermost).

Each strategy also carries ``c_body``, C-like snippets for the GPU back end; the convention is
described in ``docs/golden.md`` and in :class:`Strategy`.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

__all__ = [
    "Input", "Strategy", "Dot", "DotReLU", "DotResidual", "DotPool", "DotThreshold",
    "SeparableDot", "Sum", "Copy",
    "Mean", "Max", "Min", "L1", "Bilateral", "BestMatch", "Elementwise", "Softmax", "LRN",
    "ELEMENTWISE",
]

#: One input of a strategy: its name and the stage that reads it ("pre", "loop" or "post").
Input = namedtuple("Input", "name stage")

_STAGES = ("pre", "loop", "post")


class Strategy:
    """Base class of the ranged-inner-product strategies.

    Class attributes (a subclass sets them):

    levels : int
        ``D``, the number of nested accumulation levels (one pre and one post per level).
    inputs : tuple of Input
        In the order the strategy reads them and the order ``execute`` takes them: every "pre"
        input first, then "loop", then "post" inputs (UMI's order).
    outputs : tuple of str
        Output names; an output has the shape of the parallel space.
    c_body : dict
        ``"state"``: C declarations of the accumulators; ``"pre"``: list of ``levels`` C
        statements (outermost first); ``"loop"``: C statements; ``"post"``: list of ``levels``
        C statements (outermost first).  Inputs are ``in0, in1, ...`` (global numbering over all
        inputs, each used only in its own stage), outputs ``out0, out1, ...``; ``T`` is the data
        type; ``T_LOWEST``/``T_HIGHEST`` its extreme values; ``A_SIZE`` the number of accumulation
        steps; ``a0, a1, ...`` the current accumulation indices and ``p0, p1, ...`` the lane's
        parallel indices.
    chunk_by : str or None
        If the strategy implements ``loop_chunk``: ``"lanes"`` (its temporaries have the size of
        the parallel space per step) or ``"inputs"`` (only the inputs do: contractions).

    Functions (``s`` is the per-run :class:`State`; ``*ins`` are the inputs of that stage):
    ``pre(s, level, *ins)``, ``loop(s, *ins)``, ``post(s, level, *ins)`` and optionally
    ``loop_chunk(s, *ins)``, equivalent to ``loop`` called on each of ``len(ins[0])`` consecutive
    steps of one innermost-level run (each input has a leading step axis).
    """

    levels = 1
    inputs = (Input("x", "loop"), Input("w", "loop"))
    outputs = ("out",)
    c_body = {"state": "", "pre": [""], "loop": "", "post": [""]}
    chunk_by = None
    #: The first two inputs (both read in the loop) may be exchanged without changing any
    #: result bit (``x * w``, ``|x - y|``): the compiler may bind either to either RP.
    commutes = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        order = [_STAGES.index(i.stage) for i in cls.inputs]
        if order != sorted(order):
            raise TypeError(f"{cls.__name__}.inputs must list pre, then loop, then post inputs")

    def stage_inputs(self, stage):
        """Positions (in ``inputs``) of the inputs read in ``stage``."""
        return tuple(i for i, inp in enumerate(self.inputs) if inp.stage == stage)

    def output_dtype(self, work_dtype):
        """Dtype of the outputs for inputs computed in ``work_dtype``."""
        return work_dtype

    def int_bound(self, a_size, peaks):
        """Largest magnitude any integer value computed in a run can reach (a Python int).

        ``peaks`` holds, per input, the largest ``|x|`` of its array; ``a_size`` is the number
        of accumulation steps. The golden model computes integer inputs in int64 and refuses a
        run whose bound does not fit (``docs/golden.md``). The default, ``a_size`` times the
        product of the peaks (each at least 1), holds for any sum of products of the inputs;
        strategies override it where a tighter bound holds.
        """
        bound = a_size
        for p in peaks:
            bound *= max(int(p), 1)
        return bound

    def pre(self, s, level, *ins):
        raise NotImplementedError

    def loop(self, s, *ins):
        raise NotImplementedError

    def post(self, s, level, *ins):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class State:
    """Per-execution state handed to the strategy functions.

    Attributes
    ----------
    out : list
        Output values (set by any function; broadcast to the parallel shape at the end).
    dtype : numpy.dtype
        Work dtype (``T``): the inputs' floating dtype, or int64 for integer inputs.
    lowest, highest : scalar
        ``T_LOWEST``/``T_HIGHEST``: -inf/+inf for floats, the int64 limits for integers.
    a_size : int
        ``A_SIZE``: number of accumulation steps.
    p : tuple of ndarray
        The lane's parallel indices, broadcastable over the parallel shape (like ``np.ogrid``).
    a : tuple
        Current accumulation indices (ints; int arrays of the chunk's steps in ``loop_chunk``).
    """

    def __init__(self, n_outputs, dtype, p_shape, a_size):
        self.out = [None] * n_outputs
        self.dtype = np.dtype(dtype)
        if self.dtype.kind == "f":
            self.lowest, self.highest = self.dtype.type(-np.inf), self.dtype.type(np.inf)
        else:
            info = np.iinfo(self.dtype)
            self.lowest, self.highest = self.dtype.type(info.min), self.dtype.type(info.max)
        self.a_size = a_size
        self.p = tuple(np.ogrid[tuple(slice(0, n) for n in p_shape)]) if p_shape else ()
        self.a = ()


def _contract(x, w):
    """``sum(x * w, axis=0)`` with broadcasting over the other axes, as one (batched) matmul."""
    c = x.shape[0]
    rx, rw = x.shape[1:], w.shape[1:]
    both = [d for d in range(len(rx)) if rx[d] > 1 and rw[d] > 1]
    xo = [d for d in range(len(rx)) if rx[d] > 1 and rw[d] == 1]
    wo = [d for d in range(len(rx)) if rw[d] > 1 and rx[d] == 1]
    rest = [d for d in range(len(rx)) if d not in both + xo + wo]
    size = [max(a, b) for a, b in zip(rx, rw, strict=True)]
    nb = int(np.prod([size[d] for d in both], dtype=np.int64))
    nx = int(np.prod([size[d] for d in xo], dtype=np.int64))
    nw = int(np.prod([size[d] for d in wo], dtype=np.int64))
    # keep the step axis first: the big operand is then contracted in place (BLAS on a transposed
    # view) instead of being copied into a step-last layout
    xm = x.transpose([0] + [d + 1 for d in both + xo + wo + rest]).reshape(c, nb, nx)
    wm = w.transpose([0] + [d + 1 for d in both + wo + xo + rest]).reshape(c, nb, nw)
    if nb == 1:
        r = (wm[:, 0].T @ xm[:, 0]).T
    else:
        r = np.matmul(xm.transpose(1, 2, 0), wm.transpose(1, 0, 2))
    order = both + xo + wo
    r = r.reshape([size[d] for d in order]).transpose(np.argsort(order))
    return r.reshape([size[d] if d in order else 1 for d in range(len(size))])


class Dot(Strategy):
    """Dot product (Eq. 3): ``out = sum x * w``.  GEMM, convolution, FC, correlation."""

    inputs = (Input("x", "loop"), Input("w", "loop"))
    commutes = True
    c_body = {"state": "T acc;", "pre": ["acc = 0;"], "loop": "acc += in0 * in1;",
              "post": ["out0 = acc;"]}
    chunk_by = "inputs"

    def pre(self, s, level):
        s.acc = s.dtype.type(0)

    def loop(self, s, x, w):
        s.acc = s.acc + x * w

    def loop_chunk(self, s, x, w):
        s.acc = s.acc + _contract(x, w)

    def post(self, s, level):
        s.out[0] = s.acc


class DotReLU(Dot):
    """Listing 1: ``out = max(sum x * w, 0)`` (fused CONV + ReLU)."""

    c_body = {"state": "T acc;", "pre": ["acc = 0;"], "loop": "acc += in0 * in1;",
              "post": ["out0 = max(acc, (T)0);"]}

    def post(self, s, level):
        s.out[0] = np.maximum(s.acc, 0)


class DotThreshold(Dot):
    """``out = high if sum x * w >= threshold else 0``: a dot product turned into a binary mask."""

    def __init__(self, threshold, high=1):
        for what, v in (("threshold", threshold), ("high", high)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"DotThreshold {what} must be an integer, not {v!r}")
        self.threshold, self.high = int(threshold), int(high)
        self.c_body = dict(Dot.c_body, post=[
            f"out0 = acc >= (T){self.threshold} ? (T){self.high} : (T)0;"])

    def post(self, s, level):
        s.out[0] = np.where(s.acc >= self.threshold, self.high, 0)

    def __repr__(self):
        return f"DotThreshold({self.threshold}, high={self.high})"


_RESIDUAL_POST = {False: "out0 = acc + in2;", True: "out0 = max(acc + in2, (T)0);"}


class DotResidual(Dot):
    """Residual layer (§III-B): ``out = sum x * w + r``, ``r`` read in PostLoop; optional ReLU."""

    inputs = (Input("x", "loop"), Input("w", "loop"), Input("r", "post"))

    def __init__(self, relu=False):
        self.relu = bool(relu)
        self.c_body = dict(Dot.c_body, post=[_RESIDUAL_POST[self.relu]])

    def int_bound(self, a_size, peaks):
        x, w, r = (int(p) for p in peaks)
        return a_size * x * w + r

    def post(self, s, level, r):
        v = s.acc + r
        s.out[0] = np.maximum(v, 0) if self.relu else v

    def __repr__(self):
        return f"DotResidual(relu={self.relu})"


_POOLS = ("max", "avg")


class DotPool(Strategy):
    """Convolution fused with pooling (§III-B, nested ranged inner products): two levels.

    Level 0 walks the pooling window, level 1 the multiply-accumulate of one convolution output:
    ``out = max over the window of (sum x * w)`` (``pool="max"``) or the window's mean
    (``pool="avg"``). ``relu=True`` applies ReLU to each convolution output first (for max
    pooling, ``max(0, ...)``: the running maximum starts at 0).

    ``inside=k`` (k >= 1) is the same result with the last ``k`` window indices walked inside
    the channel passes (:func:`merit.compile.window_inside`): four levels, (the window indices
    outside | the channel | the ``k`` window indices inside | the taps), with one running
    convolution sum per inner window position kept across the channels; the maximum (or sum)
    over them is taken after the last channel.
    """

    levels = 2
    inputs = (Input("x", "loop"), Input("w", "loop"))
    chunk_by = "inputs"
    commutes = True

    def __init__(self, pool="max", relu=False, inside=0):
        if pool not in _POOLS:
            raise ValueError(f"DotPool pool must be one of {_POOLS}, not {pool!r}")
        if isinstance(inside, bool) or not isinstance(inside, int) or inside < 0:
            raise ValueError(f"DotPool inside must be an integer >= 0, not {inside!r}")
        self.pool = pool
        self.relu = bool(relu)
        self.inside = inside
        self.levels = 4 if inside else 2
        if pool == "max":
            init = "(T)0" if relu else "T_LOWEST"
            pre0, post1, post0 = f"best = {init};", "best = max(best, acc);", "out0 = best;"
        else:
            conv = "max(acc, (T)0)" if relu else "acc"
            pre0, post1 = "best = 0; n = 0;", f"best += {conv}; n += 1;"
            post0 = "out0 = best / (float)n;"
        self.c_body = {"state": "T acc; T best; int n;", "pre": [pre0, "acc = 0;"],
                       "loop": "acc += in0 * in1;", "post": [post0, post1]}
        if inside:
            # one sum per inner window position (at most the CP's 8 registers)
            fold = "best = max(best, part[i]);" if pool == "max" else (
                f"best += {'max(part[i], (T)0)' if relu else 'part[i]'}; n += 1;")
            self.c_body = {"state": "T part[8]; T best; int n; int pos; int i;",
                           "pre": [pre0, "for (i = 0; i < 8; i++) part[i] = 0;", "pos = 0;",
                                   ""],
                           "loop": "part[pos] += in0 * in1;",
                           "post": [post0, f"for (i = 0; i < 8; i++) {{ {fold} }}", "",
                                    "pos += 1;"]}

    def output_dtype(self, work_dtype):
        if self.pool == "avg" and work_dtype.kind != "f":
            return np.result_type(work_dtype, np.float64)
        return work_dtype

    def _fold(self, s, v):
        if self.relu and self.pool == "avg":
            v = np.maximum(v, 0)
        s.best = np.maximum(s.best, v) if self.pool == "max" else s.best + v
        s.window += 1

    def pre(self, s, level):
        if self.inside and level == 1:
            s.parts = []
        elif self.inside and level == 2:
            s.pos = 0
        elif level == (3 if self.inside else 1):
            s.acc = s.dtype.type(0)
        elif level == 0 and self.pool == "max" and not self.relu:
            s.best, s.window = s.lowest, 0
        elif level == 0:
            s.best, s.window = s.dtype.type(0), 0

    def _add(self, s, v):
        if not self.inside:
            s.acc = s.acc + v
        elif s.pos == len(s.parts):
            s.parts.append(s.dtype.type(0) + v)
        else:
            s.parts[s.pos] = s.parts[s.pos] + v

    def loop(self, s, x, w):
        self._add(s, x * w)

    def loop_chunk(self, s, x, w):
        self._add(s, _contract(x, w))

    def post(self, s, level):
        if self.inside and level == 3:
            s.pos += 1
        elif self.inside and level == 1:
            for v in s.parts:
                self._fold(s, v)
        elif not self.inside and level == 1:
            self._fold(s, s.acc)
        elif level == 0:
            s.out[0] = s.best if self.pool == "max" else s.best / s.window

    def __repr__(self):
        extra = f", inside={self.inside}" if self.inside else ""
        return f"DotPool(pool={self.pool!r}, relu={self.relu}{extra})"


class SeparableDot(Strategy):
    """Two-level separable filter (Fig. 4a): ``out = sum_i v[i] * sum_j h[j] * x[i, j]``.

    Level 0 walks the vertical taps ``i``, level 1 the horizontal taps ``j``; the vertical weight
    ``v`` is read in the inner PostLoop.
    """

    levels = 2
    inputs = (Input("x", "loop"), Input("h", "loop"), Input("v", "post"))
    c_body = {"state": "T acc; T row;", "pre": ["acc = 0;", "row = 0;"],
              "loop": "row += in0 * in1;", "post": ["out0 = acc;", "acc += in2 * row;"]}
    chunk_by = "inputs"

    def pre(self, s, level):
        if level == 0:
            s.acc = s.dtype.type(0)
        else:
            s.row = s.dtype.type(0)

    def loop(self, s, x, h):
        s.row = s.row + x * h

    def loop_chunk(self, s, x, h):
        s.row = s.row + _contract(x, h)

    def post(self, s, level, v):
        if level == 1:
            s.acc = s.acc + v * s.row
        else:
            s.out[0] = s.acc


class Sum(Strategy):
    """``out = sum x``: box filters, integral image, sum pooling."""

    inputs = (Input("x", "loop"),)
    c_body = {"state": "T acc;", "pre": ["acc = 0;"], "loop": "acc += in0;",
              "post": ["out0 = acc;"]}
    chunk_by = "lanes"

    def int_bound(self, a_size, peaks):
        return a_size * int(peaks[0])

    def pre(self, s, level):
        s.acc = s.dtype.type(0)

    def loop(self, s, x):
        s.acc = s.acc + x

    def loop_chunk(self, s, x):
        s.acc = s.acc + x.sum(axis=0)

    def post(self, s, level):
        s.out[0] = s.acc


class Copy(Strategy):
    """``out = x`` at the last step: pure data movement (pixel shuffle, crops, transposes)."""

    inputs = (Input("x", "loop"),)
    c_body = {"state": "T v;", "pre": [""], "loop": "v = in0;", "post": ["out0 = v;"]}

    def int_bound(self, a_size, peaks):
        return 0                # selects an input, computes no new value

    def pre(self, s, level):
        pass

    def loop(self, s, x):
        s.v = x

    def post(self, s, level):
        s.out[0] = s.v


class Mean(Sum):
    """``out = sum x / A_SIZE``: average pooling (padding counted, as a zero boundary gives)."""

    c_body = {"state": "T acc;", "pre": ["acc = 0;"], "loop": "acc += in0;",
              "post": ["out0 = acc / (float)A_SIZE;"]}

    def output_dtype(self, work_dtype):
        return np.result_type(work_dtype, np.float64) if work_dtype.kind != "f" else work_dtype

    def post(self, s, level):
        s.out[0] = s.acc / s.a_size


class Max(Strategy):
    """``out = max x``: max pooling (use boundary ``"clamp"`` for padded windows)."""

    inputs = (Input("x", "loop"),)
    c_body = {"state": "T acc;", "pre": ["acc = T_LOWEST;"], "loop": "acc = max(acc, in0);",
              "post": ["out0 = acc;"]}
    chunk_by = "lanes"
    _reduce = staticmethod(np.maximum)

    def int_bound(self, a_size, peaks):
        return 0                # selects an input, computes no new value

    def pre(self, s, level):
        s.acc = s.lowest

    def loop(self, s, x):
        s.acc = self._reduce(s.acc, x)

    def loop_chunk(self, s, x):
        s.acc = self._reduce(s.acc, self._reduce.reduce(x, axis=0))

    def post(self, s, level):
        s.out[0] = s.acc


class Min(Max):
    """``out = min x``."""

    c_body = {"state": "T acc;", "pre": ["acc = T_HIGHEST;"], "loop": "acc = min(acc, in0);",
              "post": ["out0 = acc;"]}
    _reduce = staticmethod(np.minimum)

    def pre(self, s, level):
        s.acc = s.highest


class L1(Strategy):
    """Eq. 4, second line: ``out = sum |x - y|`` (SAD: motion estimation, stereo cost)."""

    inputs = (Input("x", "loop"), Input("y", "loop"))
    c_body = {"state": "T acc;", "pre": ["acc = 0;"], "loop": "acc += abs(in0 - in1);",
              "post": ["out0 = acc;"]}
    chunk_by = "lanes"

    def pre(self, s, level):
        s.acc = s.dtype.type(0)

    def int_bound(self, a_size, peaks):
        return a_size * (int(peaks[0]) + int(peaks[1]))

    def loop(self, s, x, y):
        s.acc = s.acc + np.abs(x - y)

    def loop_chunk(self, s, x, y):
        s.acc = s.acc + np.abs(x - y).sum(axis=0)

    def post(self, s, level):
        s.out[0] = s.acc


def _bilateral_c_body(inv):
    return {
        "state": "float c; float num; float den;",
        "pre": ["c = (float)in0; num = 0.0f; den = 0.0f;"],
        "loop": (f"{{ float d = (float)in1 - c; float k = (float)in2 * "
                 f"expf(-d * d * {inv!r}f); num += k * (float)in1; den += k; }}"),
        "post": ["out0 = num / den;"],
    }


class Bilateral(Strategy):
    """Listing 2: bilateral filter.  ``c`` = centre pixel (PreLoop), ``x`` = neighbour, ``g`` =
    spatial weight of the tap; range weight ``exp(-(x - c)^2 / (2 sigma_r^2))``;
    ``out = sum(k * x) / sum(k)`` with ``k = g * range weight``.
    """

    inputs = (Input("c", "pre"), Input("x", "loop"), Input("g", "loop"))

    def __init__(self, sigma_r):
        sigma_r = float(sigma_r)
        if not sigma_r > 0:
            raise ValueError(f"Bilateral sigma_r must be positive, not {sigma_r}")
        self.sigma_r = sigma_r
        self._inv = 1.0 / (2.0 * sigma_r * sigma_r)
        self.c_body = _bilateral_c_body(self._inv)

    def output_dtype(self, work_dtype):
        return np.result_type(work_dtype, np.float32)

    def int_bound(self, a_size, peaks):
        return max(int(p) for p in peaks)        # integer inputs are read; the sums are floats

    def pre(self, s, level, c):
        s.c = c.astype(np.float64)
        s.num = 0.0
        s.den = 0.0

    def loop(self, s, x, g):
        d = x - s.c
        k = g * np.exp(-d * d * self._inv)
        s.num = s.num + k * x
        s.den = s.den + k

    def post(self, s, level):
        s.out[0] = s.num / s.den

    def __repr__(self):
        return f"Bilateral(sigma_r={self.sigma_r})"


class BestMatch(Strategy):
    """Full-search block matching with two levels: level 0 walks the candidate displacements
    ``(a0, a1)``, level 1 the pixels of the block.  Outputs the smallest SAD and the level-0
    indices of the first (raster order) candidate reaching it.
    """

    levels = 2
    inputs = (Input("cur", "loop"), Input("ref", "loop"))
    outputs = ("sad", "a0", "a1")
    c_body = {
        "state": "T best; T sad; T b0; T b1;",
        "pre": ["best = T_HIGHEST; b0 = 0; b1 = 0;", "sad = 0;"],
        "loop": "sad += abs(in0 - in1);",
        "post": ["out0 = best; out1 = b0; out2 = b1;",
                 "if (sad < best) { best = sad; b0 = a0; b1 = a1; }"],
    }
    chunk_by = "lanes"

    def pre(self, s, level):
        if level == 0:
            s.best, s.b0, s.b1 = s.highest, s.dtype.type(0), s.dtype.type(0)
        else:
            s.sad = s.dtype.type(0)

    def int_bound(self, a_size, peaks):
        return a_size * (int(peaks[0]) + int(peaks[1]))

    def loop(self, s, x, y):
        s.sad = s.sad + np.abs(x - y)

    def loop_chunk(self, s, x, y):
        s.sad = s.sad + np.abs(x - y).sum(axis=0)

    def post(self, s, level):
        if level == 1:
            better = s.sad < s.best
            s.best = np.where(better, s.sad, s.best)
            s.b0 = np.where(better, s.a[0], s.b0)
            s.b1 = np.where(better, s.a[1], s.b1)
        else:
            s.out[:] = [s.best, s.b0, s.b1]


def _sigmoid(x):
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    return np.exp(-np.logaddexp(0, -x)).astype(x.dtype)


def _c(value):
    return f"((T){float(value)!r})"


#: Elementwise operations: name -> (number of inputs or None for any, parameters,
#: numpy function(params, *inputs), C expression(params, n_inputs) over ``in0, in1, ...``).
ELEMENTWISE = {
    "relu": (1, (), lambda q, x: np.maximum(x, 0), lambda q, n: "max(in0, (T)0)"),
    "leaky_relu": (1, ("alpha",), lambda q, x: np.where(x >= 0, x, x * q["alpha"]),
                   lambda q, n: f"(in0 >= (T)0 ? in0 : in0 * {_c(q['alpha'])})"),
    "clip": (1, ("low", "high"),
             lambda q, x: np.minimum(np.maximum(x, q["low"]), q["high"]),
             lambda q, n: f"min(max(in0, {_c(q['low'])}), {_c(q['high'])})"),
    "clip3": (3, (), lambda q, x, lo, hi: np.minimum(np.maximum(x, lo), hi),
              lambda q, n: "min(max(in0, in1), in2)"),
    "sigmoid": (1, (), lambda q, x: _sigmoid(x),
                lambda q, n: "((T)1 / ((T)1 + expf(-in0)))"),
    "add": (None, (), lambda q, *xs: sum(xs[1:], xs[0]),
            lambda q, n: " + ".join(f"in{i}" for i in range(n))),
    "mul": (2, (), lambda q, x, y: x * y, lambda q, n: "in0 * in1"),
    "affine": (3, (), lambda q, x, s, t: x * s + t, lambda q, n: "in0 * in1 + in2"),
    "axpby": (2, ("alpha", "beta"), lambda q, x, y: x * q["alpha"] + y * q["beta"],
              lambda q, n: f"in0 * {_c(q['alpha'])} + in1 * {_c(q['beta'])}"),
    "scale": (1, ("alpha",), lambda q, x: x * q["alpha"], lambda q, n: f"in0 * {_c(q['alpha'])}"),
    "batchnorm": (5, ("epsilon",),
                  lambda q, x, s, b, m, v: (x - m) * (s / np.sqrt(v + q["epsilon"])) + b,
                  lambda q, n: f"(in0 - in3) * (in1 / sqrtf(in4 + {_c(q['epsilon'])})) + in2"),
}


class Elementwise(Strategy):
    """``out = f(x0, x1, ...)`` in a single step (``a = ()``): activations, sums, products,
    scales (:data:`ELEMENTWISE` lists them). Broadcasting is the transforms' business
    (a ``None`` index), so every input is one value per lane.

    Parameters
    ----------
    op : str
        A key of :data:`ELEMENTWISE`.
    n_inputs : int, optional
        Inputs of an n-ary operation (``"add"``); the others have a fixed count.
    **params : float
        The operation's parameters (``alpha`` of ``leaky_relu``, ``low``/``high`` of ``clip``...).
    """

    inputs = (Input("x0", "loop"),)

    def __init__(self, op, n_inputs=None, **params):
        if op not in ELEMENTWISE:
            raise ValueError(f"Elementwise op must be one of {', '.join(ELEMENTWISE)}, not {op!r}")
        arity, names, self._fn, c_expr = ELEMENTWISE[op]
        if arity is None:
            arity = 2 if n_inputs is None else n_inputs
        if n_inputs is not None and n_inputs != arity:
            raise ValueError(f"Elementwise {op!r} takes {arity} inputs, not {n_inputs}")
        if isinstance(arity, bool) or not isinstance(arity, int) or arity < 1:
            raise ValueError(f"Elementwise {op!r}: n_inputs must be a positive int, not {arity!r}")
        if set(params) != set(names):
            raise ValueError(f"Elementwise {op!r} takes parameters ({', '.join(names)}), "
                             f"got ({', '.join(sorted(params))})")
        self.op, self.params = op, {k: float(v) for k, v in params.items()}
        self.inputs = tuple(Input(f"x{i}", "loop") for i in range(arity))
        self.c_body = {"state": "T v;", "pre": [""],
                       "loop": f"v = {c_expr(self.params, arity)};", "post": ["out0 = v;"]}

    def pre(self, s, level):
        pass

    def loop(self, s, *xs):
        s.v = self._fn(self.params, *xs)

    def post(self, s, level):
        s.out[0] = s.v

    def output_dtype(self, work_dtype):
        if self.op == "sigmoid" or (self.op == "batchnorm" and work_dtype.kind != "f"):
            return np.result_type(work_dtype, np.float32)
        return work_dtype

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v in self.params.items())
        n = f", n_inputs={len(self.inputs)}" if ELEMENTWISE[self.op][0] is None else ""
        return f"Elementwise({self.op!r}{n}{extra})"


class Softmax(Strategy):
    """``out = exp(c - max x) / sum exp(x - max x)`` in one pass (online softmax): ``c`` = the
    lane's own element (PreLoop), ``x`` = the elements of its row (Loop).

    Loop keeps the running maximum ``m`` and the sum ``s`` of ``exp(x - m)``, rescaling ``s``
    when ``m`` grows; PostLoop divides.
    """

    inputs = (Input("c", "pre"), Input("x", "loop"))
    c_body = {"state": "float c; float m; float s;",
              "pre": ["c = (float)in0; m = -INFINITY; s = 0.0f;"],
              "loop": "{ float mn = fmaxf(m, (float)in1); s = s * expf(m - mn) + "
                      "expf((float)in1 - mn); m = mn; }",
              "post": ["out0 = expf(c - m) / s;"]}
    chunk_by = "lanes"

    def output_dtype(self, work_dtype):
        return np.result_type(work_dtype, np.float32)

    def pre(self, s, level, c):
        ft = np.result_type(s.dtype, np.float32)
        s.c = np.asarray(c, dtype=ft)
        s.m = np.asarray(-np.inf, dtype=ft)
        s.s = np.asarray(0, dtype=ft)

    def _step(self, s, top, total):
        mn = np.maximum(s.m, top)
        with np.errstate(invalid="ignore"):
            scale = np.where(s.m == mn, 1, np.exp(s.m - mn))
        s.s = s.s * scale + total(mn)
        s.m = mn

    def loop(self, s, x):
        self._step(s, x, lambda mn: np.exp(x - mn))

    def loop_chunk(self, s, x):
        self._step(s, x.max(axis=0), lambda mn: np.exp(x - mn).sum(axis=0))

    def post(self, s, level):
        s.out[0] = np.exp(s.c - s.m) / s.s


class LRN(Strategy):
    """Local response normalization (AlexNet): ``out = c / (bias + alpha / size * sum x^2) **
    beta``, ``c`` = the lane's element (PreLoop), ``x`` = its neighbours across channels (Loop).
    """

    inputs = (Input("c", "pre"), Input("x", "loop"))
    chunk_by = "lanes"

    def __init__(self, size, alpha=1e-4, beta=0.75, bias=1.0):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"LRN size must be a positive int, not {size!r}")
        self.size, self.alpha, self.beta, self.bias = int(size), float(alpha), float(beta), \
            float(bias)
        k = self.alpha / self.size
        self.c_body = {"state": "float c; float acc;",
                       "pre": ["c = (float)in0; acc = 0.0f;"],
                       "loop": "acc += (float)in1 * (float)in1;",
                       "post": [f"out0 = c / powf({self.bias!r}f + {k!r}f * acc, "
                                f"{self.beta!r}f);"]}

    def output_dtype(self, work_dtype):
        return np.result_type(work_dtype, np.float32)

    def pre(self, s, level, c):
        s.c = np.asarray(c, dtype=np.result_type(s.dtype, np.float32))
        s.acc = np.zeros((), s.c.dtype)

    def loop(self, s, x):
        s.acc = s.acc + x * x

    def loop_chunk(self, s, x):
        s.acc = s.acc + (x * x).sum(axis=0)

    def post(self, s, level):
        s.out[0] = s.c / (self.bias + self.alpha / self.size * s.acc) ** self.beta

    def __repr__(self):
        return f"LRN(size={self.size}, alpha={self.alpha}, beta={self.beta}, bias={self.bias})"
