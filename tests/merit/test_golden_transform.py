"""The transform as the paper writes it (Fig. 2, Eq. 6-9), checked element by element."""

import itertools

import numpy as np
import pytest

from merit import Index, Transform, execute
from merit import strategies as S
from merit.transform import Gatherer


def elements(transform, source, p_shape, a_shape, rule):
    """Compare M(A) with ``rule(p, a) -> source coordinates`` at every element (or None = 0)."""
    m = transform.apply(source, p_shape, a_shape)
    for p in itertools.product(*map(range, p_shape)):
        for a in itertools.product(*map(range, a_shape)):
            x = rule(p, a)
            inside = all(0 <= xi < n for xi, n in zip(x, source.shape, strict=True))
            assert m[p + a] == (source[x] if inside else 0), (p, a, x)


def test_gemm_fig2():
    rng = np.random.default_rng(1)
    A, B = rng.integers(-9, 9, (3, 4)), rng.integers(-9, 9, (4, 2))
    mA = Transform(A.shape, p=[Index(0), None], a=[Index(1)], name="A")
    mB = Transform(B.shape, p=[None, Index(1)], a=[Index(0)], name="B")
    elements(mA, A, (3, 2), (4,), lambda p, a: (p[0], a[0]))
    elements(mB, B, (3, 2), (4,), lambda p, a: (a[0], p[1]))
    np.testing.assert_array_equal(execute(S.Dot(), (3, 2), (4,), [(A, mA), (B, mB)]), A @ B)


def test_alexnet_conv1_eq6():
    # M(I)[p1,p2,p3,a1,a2,a3] = I[a1, 4 p2 + a2 - 5, 4 p3 + a3 - 5];  M(k) = k[p1, a1, a2, a3]
    p_shape, a_shape = (48, 55, 55), (3, 11, 11)
    mI = Transform((3, 227, 227), p=[None, Index(1, 4), Index(2, 4)],
                   a=[Index(0), Index(1, 1, -5), Index(2, 1, -5)], name="I")
    mk = Transform((48, 3, 11, 11), p=[Index(0), None, None],
                   a=[Index(1), Index(2), Index(3)], name="k")
    assert mI.bounds(p_shape, a_shape) == ((0, 2), (-5, 221), (-5, 221))
    rng = np.random.default_rng(2)
    I = rng.integers(-9, 9, (3, 227, 227))  # noqa: E741 (the paper's name)
    k = rng.integers(-9, 9, (48, 3, 11, 11))
    small = (2, 3, 3)  # check the rule on a corner of the index space, element by element
    elements(mI, I, small, a_shape, lambda p, a: (a[0], 4 * p[1] + a[1] - 5, 4 * p[2] + a[2] - 5))
    out = execute(S.Dot(), p_shape, a_shape, [(I, mI), (k, mk)])
    y, x, m = 17, 30, 7
    patch = np.pad(I, ((0, 0), (5, 5), (5, 5)))[:, 4 * y:4 * y + 11, 4 * x:4 * x + 11]
    assert out[m, y, x] == (patch * k[m]).sum()
    # the offset may sit on either index of the axis: Eq. 5 sums them
    mI2 = Transform((3, 227, 227), p=[None, Index(1, 4, -5), Index(2, 4, -2)],
                    a=[Index(0), Index(1), Index(2, 1, -3)], name="I")
    np.testing.assert_array_equal(execute(S.Dot(), p_shape, a_shape, [(I, mI2), (k, mk)]), out)


def test_dilated_eq7():
    # M(I)[p1,p2,p3,a1,a2,a3] = I[a1, p2 + 2 a2, p3 + 2 a3]
    mI = Transform((2, 9, 9), p=[None, Index(1), Index(2)],
                   a=[Index(0), Index(1, 2), Index(2, 2)], name="I")
    I = np.arange(2 * 9 * 9).reshape(2, 9, 9)  # noqa: E741
    elements(mI, I, (2, 5, 5), (2, 3, 3),
             lambda p, a: (a[0], p[1] + 2 * a[1], p[2] + 2 * a[2]))


def test_correlation_eq8():
    # M(I1)[p1..p4, a1] = I1[a1, p1, p2];  M(I2)[p1..p4, a1] = I2[a1, p1 + p3, p2 + p4]
    m1 = Transform((3, 5, 6), p=[Index(1), Index(2), None, None], a=[Index(0)], name="I1")
    m2 = Transform((3, 5, 6), p=[Index(1), Index(2), Index(1), Index(2)], a=[Index(0)],
                   name="I2")
    rng = np.random.default_rng(3)
    I1, I2 = rng.integers(0, 9, (3, 5, 6)), rng.integers(0, 9, (3, 5, 6))
    elements(m1, I1, (5, 6, 3, 3), (3,), lambda p, a: (a[0], p[0], p[1]))
    elements(m2, I2, (5, 6, 3, 3), (3,), lambda p, a: (a[0], p[0] + p[2], p[1] + p[3]))
    out = execute(S.Dot(), (5, 6, 3, 3), (3,), [(I1, m1), (I2, m2)])
    assert out[2, 1, 2, 1] == (I1[:, 2, 1] * I2[:, 4, 2]).sum()
    assert out[4, 5, 1, 1] == 0  # beyond the edge of I2: zero boundary


def test_footprint_eq9_paper_example():
    # 5x5 kernel, 16x8 output tile -> (20, 12)
    m = Transform((64, 64), p=[Index(0), Index(1)], a=[Index(0), Index(1)])
    assert m.footprint((16, 8), (5, 5)) == (20, 12)
    # AlexNet CONV1: a (1, 4, 4) output tile over all 3x11x11 taps
    mI = Transform((3, 227, 227), p=[None, Index(1, 4), Index(2, 4)],
                   a=[Index(0), Index(1, 1, -5), Index(2, 1, -5)])
    assert mI.footprint((1, 4, 4), (3, 11, 11)) == (3, 23, 23)
    assert mI.origin((0, 2, 3), (0, 0, 0)) == (0, 3, 7)
    assert mI.box((0, 2, 3), (0, 0, 0), (1, 4, 4), (3, 11, 11)) == ((0, 3, 7), (3, 23, 23))


@pytest.mark.parametrize("seed", range(20))
def test_footprint_contains_the_tile(seed):
    """Eq. 9 and box(): every element of a random tile lies in the box, the box is tight."""
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(n) for n in rng.integers(4, 9, ndim))
    def entry():
        if rng.random() < 0.25:
            return None
        return Index(int(rng.integers(ndim)), int(rng.choice([-3, -2, -1, 1, 2, 3])),
                     int(rng.integers(-3, 4)))
    np_, na = int(rng.integers(1, 3)), int(rng.integers(0, 3))
    m = Transform(shape, [entry() for _ in range(np_)], [entry() for _ in range(na)])
    p_shape = tuple(int(n) for n in rng.integers(2, 6, np_))
    a_shape = tuple(int(n) for n in rng.integers(2, 6, na))
    tile_p = tuple(int(rng.integers(1, n + 1)) for n in p_shape)
    tile_a = tuple(int(rng.integers(1, n + 1)) for n in a_shape)
    p0 = tuple(int(rng.integers(0, n - t + 1)) for n, t in zip(p_shape, tile_p, strict=True))
    a0 = tuple(int(rng.integers(0, n - t + 1)) for n, t in zip(a_shape, tile_a, strict=True))
    low, side = m.box(p0, a0, tile_p, tile_a)
    seen = [set() for _ in shape]
    for k in itertools.product(*[range(s, s + t) for s, t in zip(p0 + a0, tile_p + tile_a,
                                                                 strict=True)]):
        x = m.origin(k[:np_], k[np_:])
        for i, xi in enumerate(x):
            assert low[i] <= xi < low[i] + side[i]
            seen[i].add(xi)
    for i in range(ndim):
        assert min(seen[i]) == low[i] and max(seen[i]) == low[i] + side[i] - 1


def test_negative_stride_and_broadcast_apply():
    A = np.arange(12).reshape(3, 4)
    m = Transform(A.shape, p=[Index(1, -1, 3), None], a=[Index(0)], name="A")
    out = m.apply(A, (4, 2), (3,))
    np.testing.assert_array_equal(out[:, 0, :], A[:, ::-1].T)
    np.testing.assert_array_equal(out[:, 1, :], A[:, ::-1].T)


@pytest.mark.parametrize("boundary,expect", [("zero", [0, 0, 1, 2, 3, 4, 0, 0]),
                                             ("clamp", [1, 1, 1, 2, 3, 4, 4, 4])])
def test_boundaries(boundary, expect):
    A = np.arange(1, 5)
    m = Transform((4,), p=[Index(0, 1, -2)], a=[], boundary=boundary)
    np.testing.assert_array_equal(m.apply(A, (8,), ()), expect)


def test_per_axis_boundary():
    A = np.arange(1, 7).reshape(2, 3)
    m = Transform(A.shape, p=[Index(0, 1, -1), Index(1, 1, -1)], a=[],
                  boundary=("zero", "clamp"))
    out = m.apply(A, (4, 5), ())
    np.testing.assert_array_equal(out[0], 0)
    np.testing.assert_array_equal(out[1], [1, 1, 2, 3, 3])
    np.testing.assert_array_equal(out[3], 0)


def _reference_element(A, entries, boundary, k):
    """Eq. 5 for one element, straight from the Index entries (no Transform code)."""
    x = [0] * A.ndim
    for kj, idx in zip(k, entries, strict=True):
        if idx is not None:
            x[idx.axis] += kj * idx.stride + idx.offset
    for i, n in enumerate(A.shape):
        if not 0 <= x[i] < n:
            if boundary[i] == "zero":
                return 0
            x[i] = min(max(x[i], 0), n - 1)
    return A[tuple(x)]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("fast", [True, False])
def test_gather_paths_match_eq5(seed, fast, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(n) for n in rng.integers(2, 6, ndim))
    A = rng.integers(1, 100, shape)
    boundary = tuple(str(b) for b in rng.choice(["zero", "clamp"], ndim))

    def entry():
        if rng.random() < 0.25:
            return None
        return Index(int(rng.integers(ndim)), int(rng.choice([-2, -1, 1, 3])),
                     int(rng.integers(-4, 5)))
    np_, na = int(rng.integers(1, 3)), int(rng.integers(0, 3))
    p, a = [entry() for _ in range(np_)], [entry() for _ in range(na)]
    m = Transform(shape, p, a, boundary=boundary)
    p_shape = tuple(int(n) for n in rng.integers(1, 5, np_))
    a_shape = tuple(int(n) for n in rng.integers(1, 5, na))
    if not fast:
        monkeypatch.setattr(Gatherer, "PAD_FACTOR", 0)
        monkeypatch.setattr(Gatherer, "PAD_SLACK", 0)
    reader = m.gatherer(A, p_shape, a_shape)
    assert reader.fast == fast
    grid = list(np.indices(a_shape).reshape(na, -1)) if na else []
    got = np.broadcast_to(reader(grid), (len(grid[0]) if na else 1,) + p_shape)
    whole = m.apply(A, p_shape, a_shape)
    for t, ka in enumerate(itertools.product(*map(range, a_shape))):
        for kp in itertools.product(*map(range, p_shape)):
            want = _reference_element(A, p + a, boundary, kp + ka)
            assert got[(t,) + kp] == want and whole[kp + ka] == want


def test_notation_reads_like_the_paper():
    # Eq. 6 with 0-based names: I[a1, 4 p2 + a2 - 5, 4 p3 + a3 - 5] -> I[a0, 4*p1 + a1 - 5, ...]
    mI = Transform((3, 227, 227), p=[None, Index(1, 4), Index(2, 4)],
                   a=[Index(0), Index(1, 1, -5), Index(2, 1, -5)], name="I")
    assert mI.notation() == "I[a0, 4*p1 + a1 - 5, 4*p2 + a2 - 5]"
    m2 = Transform((3, 5, 6), p=[Index(1), Index(2), Index(1), Index(2)], a=[Index(0)],
                   name="I2")
    assert m2.notation() == "I2[a0, p0 + p2, p1 + p3]"  # Eq. 8
    flip = Transform((4, 4), p=[Index(0, -1, 3)], a=[Index(1, -2)], name="B")
    assert flip.notation() == "B[-p0 + 3, -2*a0]"
