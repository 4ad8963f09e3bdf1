"""The MERIT tensor transform (paper §III, Eq. 5) and its tile footprint (Eq. 9).

A transformed tensor ``M(A)`` has indices ``k = (p, a)``: ``p`` are the parallel indices (one
output each), ``a`` the accumulation indices.  Each index ``k_j`` moves along one axis ``d_j`` of
the source tensor ``A`` with stride ``s_j`` and offset ``o_j``::

    M(A)[p, a] = A[x],   x_i = sum over j with d_j = i of (k_j * s_j + o_j)

An index that does not move in ``A`` (the paper's ``s_j = 0``) is written ``None``: a broadcast.
A source coordinate outside ``A`` is resolved by the boundary mode of its axis.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

__all__ = ["BOUNDARIES", "Gatherer", "Index", "Transform"]

#: Boundary modes: ``zero`` pads with 0, ``clamp`` replicates the edge, ``error`` raises IndexError.
BOUNDARIES = ("zero", "clamp", "error")


def _as_int(value, what):
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {value!r}") from None


def _as_shape(shape, what):
    if type(shape) is tuple and all(type(n) is int and n > 0 for n in shape):
        return shape            # already a shape (the compiler's searches call this a lot)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        items = tuple(shape)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of integers, not {shape!r}") from None
    out = tuple(_as_int(n, f"{what}[{i}]") for i, n in enumerate(items))
    for i, n in enumerate(out):
        if n <= 0:
            raise ValueError(f"{what}[{i}] must be positive, not {n}")
    return out


@dataclass(frozen=True)
class Index:
    """How one transformed index ``k_j`` moves in the source tensor.

    Parameters
    ----------
    axis : int
        Source axis ``d_j`` (0-based).
    stride : int
        ``s_j``: source elements moved per step of ``k_j``.  Non-zero; a negative stride walks the
        axis backwards (kernel flips, prefix sums).  An index that does not move is ``None`` in the
        transform, not a stride of 0.
    offset : int
        ``o_j``, added to the coordinate on ``axis``; may be negative (padding).
    """

    axis: int
    stride: int = 1
    offset: int = 0

    def __post_init__(self):
        axis = _as_int(self.axis, "Index axis")
        stride = _as_int(self.stride, "Index stride")
        offset = _as_int(self.offset, "Index offset")
        if axis < 0:
            raise ValueError(f"Index axis must be >= 0, not {axis}")
        if stride == 0:
            raise ValueError(
                "Index stride must be non-zero, not 0 (write None for an index that does not move)")
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "stride", stride)
        object.__setattr__(self, "offset", offset)

    def __repr__(self):
        return f"Index({self.axis}, stride={self.stride}, offset={self.offset})"


class Transform:
    """A MERIT transform of one source tensor.

    Parameters
    ----------
    source_shape : sequence of int
        Shape of the source tensor ``A`` (all sizes positive).
    p : sequence of Index or None
        One entry per parallel index; ``None`` = broadcast (does not move in ``A``).
    a : sequence of Index or None
        One entry per accumulation index.
    boundary : str or sequence of str
        ``"zero"``, ``"clamp"`` or ``"error"``, for the whole tensor or one per source axis.
    name : str, optional
        Tensor name, used in error messages (``"A"`` when not given) and by ``Problem`` to tell
        which operands read the same tensor (an unnamed transform reads a tensor of its own).

    Attributes
    ----------
    source_shape, p, a, boundary (tuple, one mode per source axis), name (str),
    named (bool: a name was given)
    indices : tuple
        ``p + a``: the entries of ``k = (p, a)`` in order; a *position* is an index into it.
    terms : tuple
        Per source axis, a tuple of ``(position, stride)`` for the indices moving along it.
    offset : tuple
        Per source axis, the sum of the offsets of the indices moving along it (= ``origin()``).
    """

    def __init__(self, source_shape, p, a, boundary="zero", name=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Transform name must be a str, not {name!r}")
        self.named = name is not None
        self.name = name = name if self.named else "A"
        self.source_shape = _as_shape(source_shape, f"tensor {name!r}: source_shape")
        self.p = self._entries(p, "p")
        self.a = self._entries(a, "a")
        self.boundary = self._boundary(boundary)
        self.indices = self.p + self.a
        terms = [[] for _ in self.source_shape]
        offset = [0] * len(self.source_shape)
        for pos, idx in enumerate(self.indices):
            if idx is None:
                continue
            if idx.axis >= len(self.source_shape):
                raise ValueError(
                    f"tensor {name!r}: {self._label(pos)} moves along axis {idx.axis} but the "
                    f"source has {len(self.source_shape)} axes (shape {self.source_shape})")
            terms[idx.axis].append((pos, idx.stride))
            offset[idx.axis] += idx.offset
        self.terms = tuple(tuple(t) for t in terms)
        self.offset = tuple(offset)

    def _entries(self, entries, which):
        if isinstance(entries, Index) or entries is None:
            entries = (entries,)
        try:
            entries = tuple(entries)
        except TypeError:
            raise TypeError(
                f"tensor {self.name!r}: {which} must be a sequence of Index or None, "
                f"not {entries!r}") from None
        for j, e in enumerate(entries):
            if e is not None and not isinstance(e, Index):
                raise TypeError(
                    f"tensor {self.name!r}: {which}[{j}] must be an Index or None, not {e!r}")
        return entries

    def _boundary(self, boundary):
        modes = (boundary,) * len(self.source_shape) if isinstance(boundary, str) else boundary
        try:
            modes = tuple(modes)
        except TypeError:
            raise TypeError(
                f"tensor {self.name!r}: boundary must be a str or one str per axis, "
                f"not {boundary!r}") from None
        if len(modes) != len(self.source_shape):
            raise ValueError(
                f"tensor {self.name!r}: boundary has {len(modes)} modes but the source has "
                f"{len(self.source_shape)} axes")
        for m in modes:
            if m not in BOUNDARIES:
                raise ValueError(
                    f"tensor {self.name!r}: boundary must be one of {', '.join(BOUNDARIES)}, "
                    f"not {m!r}")
        return modes

    def _label(self, pos):
        n = len(self.p)
        return f"p[{pos}]" if pos < n else f"a[{pos - n}]"

    def __repr__(self):
        b = self.boundary[0] if len(set(self.boundary)) == 1 else self.boundary
        return (f"Transform({self.source_shape}, p={list(self.p)}, a={list(self.a)}, "
                f"boundary={b!r}" + (f", name={self.name!r})" if self.named else ")"))

    def notation(self):
        """The transform as the paper writes it (Eq. 6-8), e.g. ``"I[a0, 4*p1 + a1 - 5]"``.

        Parallel indices are ``p0, p1, ...``, accumulation indices ``a0, a1, ...`` (0-based).
        """
        coords = []
        for axis, terms in enumerate(self.terms):
            parts = []
            for pos, s in terms:
                k = self._label(pos).replace("[", "").replace("]", "")
                term = k if abs(s) == 1 else f"{abs(s)}*{k}"
                parts.append(("- " if s < 0 else "+ ") + term)
            off = self.offset[axis]
            if off or not parts:
                parts.append(("- " if off < 0 else "+ ") + str(abs(off)))
            text = " ".join(parts)
            coords.append(text[2:] if text.startswith("+ ") else "-" + text[2:])
        return f"{self.name}[{', '.join(coords)}]"

    # ---- shape checks -------------------------------------------------------------------------

    def check_shapes(self, p_shape, a_shape):
        """Validate ``p_shape``/``a_shape`` against this transform; return them as int tuples."""
        p_shape = _as_shape(p_shape, "p_shape")
        a_shape = _as_shape(a_shape, "a_shape")
        if len(p_shape) != len(self.p):
            raise ValueError(
                f"tensor {self.name!r}: the transform has {len(self.p)} parallel indices but "
                f"p_shape {p_shape} has {len(p_shape)}")
        if len(a_shape) != len(self.a):
            raise ValueError(
                f"tensor {self.name!r}: the transform has {len(self.a)} accumulation indices but "
                f"a_shape {a_shape} has {len(a_shape)}")
        return p_shape, a_shape

    def bounds(self, p_shape, a_shape):
        """Per source axis, the (lowest, highest) coordinate reached over the whole ``M(A)``."""
        sizes = self.check_shapes(p_shape, a_shape)
        sizes = sizes[0] + sizes[1]
        out = []
        for axis, terms in enumerate(self.terms):
            lo = hi = self.offset[axis]
            for pos, s in terms:
                span = (sizes[pos] - 1) * s
                lo += min(span, 0)
                hi += max(span, 0)
            out.append((lo, hi))
        return tuple(out)

    def check_bounds(self, p_shape, a_shape):
        """Raise IndexError if an axis with boundary ``"error"`` is left by ``M(A)``."""
        for axis, (lo, hi) in enumerate(self.bounds(p_shape, a_shape)):
            n = self.source_shape[axis]
            if self.boundary[axis] == "error" and (lo < 0 or hi >= n):
                moved = ", ".join(
                    f"{self._label(pos)} (stride {s}, offset {self.indices[pos].offset})"
                    for pos, s in self.terms[axis]) or "no index"
                raise IndexError(
                    f"tensor {self.name!r}: axis {axis} is indexed over [{lo}, {hi}] but must stay "
                    f"in [0, {n - 1}] (boundary='error'); moved by {moved}")

    # ---- tiles (Eq. 9) ------------------------------------------------------------------------

    def footprint(self, tile_p, tile_a):
        """Side per source axis of the box of ``A`` covering a ``(tile_p, tile_a)`` sub-tensor.

        Eq. 9: ``1 + sum_{j: d_j = i} (t_j - 1) * |s_j|``.
        """
        tp, ta = self.check_shapes(tile_p, tile_a)
        t = tp + ta
        return tuple(1 + sum((t[pos] - 1) * abs(s) for pos, s in terms) for terms in self.terms)

    def origin(self, p_start, a_start):
        """Source coordinates (possibly outside ``A``) of the element ``M(A)[p_start, a_start]``."""
        k = self._start(p_start, a_start)
        return tuple(self.offset[axis] + sum(k[pos] * s for pos, s in terms)
                     for axis, terms in enumerate(self.terms))

    def box(self, p_start, a_start, tile_p, tile_a):
        """``(low_corner, footprint)`` of a tile: the box of ``A`` that the tile reads.

        Differs from ``origin`` only on axes walked by a negative stride.
        """
        org = self.origin(p_start, a_start)
        tp, ta = self.check_shapes(tile_p, tile_a)
        t = tp + ta
        low = tuple(o + sum((t[pos] - 1) * s for pos, s in terms if s < 0)
                    for o, terms in zip(org, self.terms, strict=True))
        return low, self.footprint(tile_p, tile_a)

    def _start(self, p_start, a_start):
        k = tuple(p_start) + tuple(a_start)
        if len(k) != len(self.indices):
            raise ValueError(
                f"tensor {self.name!r}: a start needs {len(self.p)} parallel and {len(self.a)} "
                f"accumulation coordinates, got {tuple(p_start)} and {tuple(a_start)}")
        return tuple(_as_int(v, "start coordinate") for v in k)

    # ---- gathering ----------------------------------------------------------------------------

    def reduced_p_shape(self, p_shape):
        """``p_shape`` with broadcast (``None``) parallel indices set to 1."""
        return tuple(1 if idx is None else n for idx, n in zip(self.p, p_shape, strict=True))

    def gather(self, A, p_shape, a_steps):
        """Gather ``M(A)`` for a batch of accumulation steps; the back end of ``execute``.

        Parameters
        ----------
        A : ndarray of shape ``source_shape``
        p_shape : tuple
        a_steps : sequence of int arrays
            One array of shape ``(c,)`` per accumulation index: the ``a`` of ``c`` steps.

        Returns
        -------
        ndarray of shape ``(c,) + reduced_p_shape(p_shape)``.
        """
        rp = self.reduced_p_shape(p_shape)
        nd = len(rp)
        c = len(a_steps[0]) if a_steps else 1
        flat = np.zeros((c,) + (1,) * nd, dtype=np.intp)
        valid = None
        np_ = len(self.p)
        for axis, terms in enumerate(self.terms):
            x = np.full((1,) * (nd + 1), self.offset[axis], dtype=np.intp)
            for pos, s in terms:
                if pos < np_:
                    shape = [1] * (nd + 1)
                    shape[pos + 1] = rp[pos]
                    x = x + (np.arange(rp[pos], dtype=np.intp) * s).reshape(shape)
                else:
                    step = np.asarray(a_steps[pos - np_], dtype=np.intp) * s
                    x = x + step.reshape((c,) + (1,) * nd)
            n = self.source_shape[axis]
            mode = self.boundary[axis]
            if mode == "zero":
                inside = (x >= 0) & (x < n)
                if not inside.all():
                    valid = inside if valid is None else valid & inside
                    x = np.clip(x, 0, n - 1)
            elif mode == "clamp":
                x = np.clip(x, 0, n - 1)
            elif x.size and (x.min() < 0 or x.max() >= n):
                bad = x.min() if x.min() < 0 else x.max()
                raise IndexError(
                    f"tensor {self.name!r}: axis {axis} coordinate {int(bad)} is outside "
                    f"[0, {n - 1}] (boundary='error')")
            flat = flat + x * (int(np.prod(self.source_shape[axis + 1:], dtype=np.int64)))
        flat = np.broadcast_to(flat, (c,) + rp)
        out = np.asarray(A).reshape(-1).take(flat)
        if valid is not None:
            out = np.where(np.broadcast_to(valid, out.shape), out, out.dtype.type(0))
        return out

    def gatherer(self, A, p_shape, a_shape):
        """A :class:`Gatherer` reading ``M(A)`` for batches of steps (what ``execute`` uses)."""
        return Gatherer(self, A, p_shape, a_shape)

    def apply(self, A, p_shape, a_shape):
        """Materialize ``M(A)`` of shape ``p_shape + a_shape`` (a reference; memory grows fast)."""
        p_shape, a_shape = self.check_shapes(p_shape, a_shape)
        A = np.asarray(A)
        if A.shape != self.source_shape:
            raise ValueError(
                f"tensor {self.name!r}: array has shape {A.shape}, expected {self.source_shape}")
        self.check_bounds(p_shape, a_shape)
        grid = np.indices(a_shape).reshape(len(a_shape), -1) if a_shape else np.zeros((0, 1), int)
        g = self.gather(A, p_shape, list(grid))
        g = np.broadcast_to(g, g.shape[:1] + p_shape)
        g = np.moveaxis(g, 0, -1)
        return g.reshape(p_shape + a_shape)


class Gatherer:
    """Reads ``M(A)`` for batches of accumulation steps, as ``Transform.gather`` does, faster.

    The source is padded once by the overshoot of ``M(A)`` on each axis (zeros for ``"zero"``,
    edge copies for ``"clamp"``), so that every element is one flat index
    ``base[p] + sum_j a_j * coef_j`` in the padded array: one add and one ``take`` per batch.
    When the padding would be large (more than 4x the source), it falls back to
    ``Transform.gather``.
    """

    #: padded sizes up to ``PAD_FACTOR * size + PAD_SLACK`` elements take the fast path
    PAD_FACTOR, PAD_SLACK = 4, 1 << 20

    def __init__(self, transform, A, p_shape, a_shape):
        p_shape, a_shape = transform.check_shapes(p_shape, a_shape)
        transform.check_bounds(p_shape, a_shape)
        self.transform, self.A, self.p_shape = transform, np.asarray(A), p_shape
        shape = transform.source_shape
        pads = [(max(0, -lo), max(0, hi - n + 1))
                for (lo, hi), n in zip(transform.bounds(p_shape, a_shape), shape, strict=True)]
        padded = [n + lo + hi for n, (lo, hi) in zip(shape, pads, strict=True)]
        self.fast = np.prod(padded, dtype=np.float64) <= (
            self.PAD_FACTOR * np.prod(shape, dtype=np.float64) + self.PAD_SLACK)
        if not self.fast:
            return
        src = self.A
        for axis, (lo, hi) in enumerate(pads):
            if lo or hi:
                width = [(0, 0)] * len(shape)
                width[axis] = (lo, hi)
                mode = "constant" if transform.boundary[axis] == "zero" else "edge"
                src = np.pad(src, width, mode=mode)
        self.src = np.ascontiguousarray(src).reshape(-1)
        cs = [int(np.prod(padded[i + 1:], dtype=np.int64)) for i in range(len(shape))]
        rp = transform.reduced_p_shape(p_shape)
        n_p = len(transform.p)
        base = np.full((1,) * len(rp), sum((o + lo) * c for o, (lo, _), c
                                            in zip(transform.offset, pads, cs, strict=True)),
                       dtype=np.intp)
        self.coef = [0] * len(transform.a)
        self.pcoef = [0] * len(rp)
        self.base0 = int(base.reshape(-1)[0])
        for axis, terms in enumerate(transform.terms):
            for pos, stride in terms:
                if pos < n_p:
                    view = [1] * len(rp)
                    view[pos] = rp[pos]
                    base = base + (np.arange(rp[pos], dtype=np.intp) * (stride * cs[axis])
                                   ).reshape(view)
                    self.pcoef[pos] += stride * cs[axis]
                else:
                    self.coef[pos - n_p] = stride * cs[axis]
        self.base = np.broadcast_to(base, rp)

    def __call__(self, a_steps):
        """``M(A)`` at ``c`` steps (one int array of shape ``(c,)`` per accumulation index),
        shape ``(c,) + reduced_p_shape``."""
        if not self.fast:
            return self.transform.gather(self.A, self.p_shape, a_steps)
        c = len(a_steps[0]) if len(a_steps) else 1
        off = np.zeros(c, dtype=np.intp)
        for steps, coef in zip(a_steps, self.coef, strict=True):
            if coef:
                off = off + np.asarray(steps, dtype=np.intp) * coef
        step = int(off[1] - off[0]) if c > 1 else 0
        if c == 1 or (np.diff(off) == step).all():
            # the steps walk the padded source with one stride: a read-only strided view
            size = self.src.itemsize
            return np.lib.stride_tricks.as_strided(
                self.src[self.base0 + int(off[0]):], shape=(c,) + self.base.shape,
                strides=(step * size,) + tuple(p * size for p in self.pcoef), writeable=False)
        return self.src.take(off.reshape((c,) + (1,) * self.base.ndim) + self.base)
