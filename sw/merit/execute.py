"""The golden model: a MERIT transform per input followed by a ranged inner product.

``execute`` walks the linearized accumulation loop once for all lanes (every parallel index at
once, like the SIMD hardware).  Each step gathers the transformed inputs it needs straight from the
source tensors with precomputed index arrays; ``M(A)`` is never materialized whole.  Inside one run
of the innermost level a strategy with ``loop_chunk`` processes several steps per numpy call.
"""

from __future__ import annotations

import math

import numpy as np

from .strategies import State, Strategy
from .transform import Transform, _as_shape

__all__ = ["execute", "split_levels", "work_dtype", "check_int_range"]

#: Elements of temporaries per chunk of accumulation steps (about 32 MiB of float64).
CHUNK_BUDGET = 1 << 22


def work_dtype(dtypes):
    """The dtype the golden model computes in: the floating result type, or int64 for integers
    (and for a strategy without inputs)."""
    if not len(dtypes):
        return np.dtype(np.int64)
    dt = np.result_type(*dtypes)
    return dt if dt.kind == "f" else np.dtype(np.int64)


def split_levels(levels, a_shape, n_levels):
    """Validate ``levels`` (indices per level, outermost first); default: all in one level."""
    if levels is None:
        if n_levels != 1:
            raise ValueError(
                f"the strategy has {n_levels} accumulation levels: give levels=(n_0, ..., "
                f"n_{n_levels - 1}), the number of accumulation indices in each")
        return (len(a_shape),)
    levels = tuple(int(n) for n in levels)
    if len(levels) != n_levels or sum(levels) != len(a_shape) or min(levels) < 0:
        raise ValueError(
            f"levels {levels} must give {n_levels} non-negative counts summing to the "
            f"{len(a_shape)} accumulation indices of a_shape {a_shape}")
    return levels


#: The largest magnitude of an int64 value.
INT64_MAX = (1 << 63) - 1


def _peak(array):
    """``max |x|`` of an integer array, as a Python int (exact for every integer dtype)."""
    return max(abs(int(array.min())), abs(int(array.max())))


def check_int_range(strategy, a_size, arrays):
    """Refuse integer inputs whose run could overflow the int64 work type.

    The bound is :meth:`Strategy.int_bound` of the inputs' largest magnitudes: the golden model
    never wraps silently (``docs/golden.md``). Raises ValueError naming the bound.
    """
    for a in arrays:
        if a.dtype.kind == "u" and int(a.max()) > INT64_MAX:
            raise ValueError(f"{strategy!r}: an unsigned input holds {int(a.max())}, beyond int64 "
                             f"({INT64_MAX}); pass float64 arrays or smaller values")
    peaks = [_peak(a) for a in arrays]
    bound = strategy.int_bound(a_size, peaks)
    if bound > INT64_MAX:
        raise ValueError(
            f"{strategy!r}: integer inputs of magnitude up to {max(peaks)} over {a_size} "
            f"accumulation step(s) can reach {bound}, beyond int64 ({INT64_MAX}); the golden "
            f"model refuses rather than wrap: pass float64 arrays or smaller values")


def _check_inputs(strategy, p_shape, a_shape, inputs):
    inputs = list(inputs)
    names = ", ".join(i.name for i in strategy.inputs)
    if len(inputs) != len(strategy.inputs):
        raise ValueError(
            f"{strategy!r} reads {len(strategy.inputs)} inputs ({names}), got {len(inputs)}")
    arrays = []
    for n, pair in enumerate(inputs):
        try:
            array, tr = pair
        except (TypeError, ValueError):
            raise TypeError(f"input {n} must be an (array, Transform) pair, not "
                            f"{type(pair).__name__}") from None
        if not isinstance(tr, Transform):
            raise TypeError(f"input {n}: expected a Transform, not {tr!r}")
        array = np.asarray(array)
        if array.dtype.kind not in "iuf":
            raise TypeError(
                f"tensor {tr.name!r}: dtype {array.dtype} is not supported; expected an integer "
                f"or floating dtype")
        if array.shape != tr.source_shape:
            raise ValueError(
                f"tensor {tr.name!r}: array has shape {array.shape}, expected {tr.source_shape}")
        tr.check_shapes(p_shape, a_shape)
        tr.check_bounds(p_shape, a_shape)
        arrays.append(array)
    return arrays, [tr for _, tr in inputs]


def execute(strategy, p_shape, a_shape, inputs, levels=None):
    """Run ``strategy`` over ``M(A_0), M(A_1), ...`` on the golden model.

    Parameters
    ----------
    strategy : Strategy
    p_shape, a_shape : sequence of int
        Sizes of the parallel and accumulation indices (``a_shape`` may be empty: one step).
    inputs : sequence of (ndarray, Transform)
        In the strategy's input order (pre inputs, loop inputs, post inputs).
    levels : sequence of int, optional
        Number of accumulation indices in each level, outermost first (needed when
        ``strategy.levels > 1``).

    Returns
    -------
    ndarray of shape ``p_shape``, or a tuple of them for a multi-output strategy.
    """
    p_shape = _as_shape(p_shape, "p_shape")
    a_shape = _as_shape(a_shape, "a_shape")
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a merit.strategies.Strategy, not {strategy!r}")
    levels = split_levels(levels, a_shape, strategy.levels)
    arrays, transforms = _check_inputs(strategy, p_shape, a_shape, inputs)
    wdt = work_dtype([a.dtype for a in arrays])
    a_size = math.prod(a_shape)
    if wdt.kind != "f":
        check_int_range(strategy, a_size, arrays)
    arrays = [a.astype(wdt, copy=False) for a in arrays]
    s = State(len(strategy.outputs), wdt, p_shape, a_size)

    stage = {st: strategy.stage_inputs(st) for st in ("pre", "loop", "post")}
    # first accumulation position of each level, and the size of an innermost run
    first = np.cumsum((0,) + levels)
    run = int(np.prod(a_shape[first[-2]:], dtype=np.int64))
    lanes = max(int(np.prod(p_shape, dtype=np.int64)), 1)
    chunked = getattr(strategy, "loop_chunk", None) is not None and strategy.chunk_by
    chunk = 1
    if chunked:
        if strategy.chunk_by == "inputs":
            width = max([int(np.prod(transforms[i].reduced_p_shape(p_shape), dtype=np.int64))
                         for i in stage["loop"]] + [1])
        else:
            width = lanes
        chunk = max(1, CHUNK_BUDGET // width)

    readers = [tr.gatherer(a, p_shape, a_shape) for tr, a in zip(transforms, arrays, strict=True)]

    def gather(which, steps):
        return [readers[i](steps) for i in stage[which]]

    def at(t):
        return np.unravel_index(t, a_shape) if a_shape else ()

    for t0 in range(0, a_size, run):
        s.a = tuple(int(v) for v in at(t0))
        pre_in = [g[0] for g in gather("pre", [np.array([v]) for v in s.a])]
        for level in range(len(levels)):
            if all(v == 0 for v in s.a[first[level]:]):
                strategy.pre(s, level, *pre_in)
        for c0 in range(t0, t0 + run, chunk):
            c1 = min(c0 + chunk, t0 + run)
            steps = list(np.unravel_index(np.arange(c0, c1), a_shape)) if a_shape else []
            ins = gather("loop", steps)
            if chunked:
                s.a = tuple(steps)
                strategy.loop_chunk(s, *ins)
            else:
                s.a = tuple(int(v[0]) for v in steps)
                strategy.loop(s, *[g[0] for g in ins])
        s.a = tuple(int(v) for v in at(t0 + run - 1))
        post_in = [g[0] for g in gather("post", [np.array([v]) for v in s.a])]
        for level in reversed(range(len(levels))):
            if all(v == n - 1 for v, n in zip(s.a[first[level]:], a_shape[first[level]:],
                                                strict=True)):
                strategy.post(s, level, *post_in)

    odt = strategy.output_dtype(wdt)
    outs = []
    for n, v in enumerate(s.out):
        if v is None:
            raise RuntimeError(f"{strategy!r} never wrote output {n} ({strategy.outputs[n]})")
        outs.append(np.broadcast_to(np.asarray(v), p_shape).astype(odt))
    return outs[0] if len(outs) == 1 else tuple(outs)
