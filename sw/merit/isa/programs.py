"""Fixed-point MERIT-z programs for the golden model's strategies, and running a Problem on them.

:func:`program_for` returns the :class:`~merit.isa.Program` of a :class:`merit.Problem` (its
strategy, its accumulation levels, the RP port of every operand); :func:`run` executes the problem
on int16 data through the bit-exact interpreter, so a result can be compared with
``problem.run(...)`` (float or int64) and with the RTL. :func:`register_program` gives a new
strategy its program (``docs/guide.md`` §4.2).

Fixed-point conventions (``docs/isa.md`` §Programs): inputs are int16; sums accumulate in 32 bits
(wrapping); ``shift`` scales the result down with round-half-up before the saturating ``out``.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from .asm import assemble
from .encoding import LUT_ENTRIES, LUT_FRAC, N_CONSTS, N_LUTS, N_REGS, IsaError
from .interp import execute

__all__ = ["ProgramParts", "register_program", "check_golden", "GoldenCheck", "tolerance",
           "fixed_values", "program_for", "operand_ports", "run",
           "supported", "bilateral_tables"]


@dataclass(frozen=True)
class ProgramParts:
    """What a program builder returns: the assembler text of each part of a strategy's program.

    Attributes
    ----------
    pre, post : list
        One list of assembler lines per accumulation level of the strategy, outermost first (for
        a one-level strategy a plain list of lines is accepted).
    loop : list of str
        The lines of the loop body.
    ports : sequence of str
        Per strategy input (the strategy's order, i.e. ``problem.operands``), the RP that feeds
        it: ``"i0"`` (RP0) or ``"i1"`` (RP1). The k-th input bound to ``i0`` is read by the k-th
        instruction (address order) that reads ``i0``.
    consts : sequence of int
        Constants ``k0 .. k3`` (missing ones are 0).
    luts : sequence of sequence of int
        Lookup tables ``t0``, ``t1`` of 33 int16 entries.
    tolerance : int
        Largest ``|ISA - golden|`` in output units (after the golden result is shifted, rounded
        half up and saturated like ``out``): 0 for a program exact in integers, more for fixed-
        point approximations (reciprocals, lookup tables). :func:`check_golden` holds it.
    domain : (int, int)
        The input values the program is specified for (default: all of int16); e.g. the
        bilateral program's pixels are 0..4095.
    exact_below : int
        The program matches the golden model while ``strategy.int_bound`` of the inputs is
        below this (default 2**31: no 32-bit register wraps); e.g. the separable filter's row
        sums pass through the 16-bit multiplier, so 2**15 there.
    xstride, xspan : tuple of int, int
        The register stride of each accumulation index of the problem (outermost first) and the
        register offsets the program uses, for instructions with an indexed register ``rN+x``
        (:class:`merit.isa.Program`); default: none.
    value_frac : int
        Fraction bits of the tensors whose value is part of the problem (``Tensor.value``): the
        TAU reads ``round(value * 2**value_frac)`` as int16 (:func:`fixed_values`); e.g. the
        bilateral spatial weights are Q12.
    """

    pre: list
    loop: list
    post: list
    ports: tuple
    consts: tuple = ()
    luts: tuple = ()
    tolerance: int = 0
    domain: tuple = (-32768, 32767)
    exact_below: int = 1 << 31
    value_frac: int = 0
    xstride: tuple = ()
    xspan: int = 1


# strategy class name -> builder(problem, shift) -> ProgramParts (or the same six fields as a tuple)
_BUILDERS = {}


def register_program(strategy, builder, *, replace=False):
    """Give ``strategy`` its MERIT-z program: ``builder(problem, shift)`` returns
    :class:`ProgramParts` for a problem of that strategy.

    Parameters
    ----------
    strategy : type or str
        A :class:`merit.strategies.Strategy` subclass (or its class name). Programs are looked up
        by the class name of ``problem.strategy``.
    builder : callable
        ``builder(problem, shift) -> ProgramParts``; ``shift`` (0..31) is the right shift the
        ``out`` instructions should apply (round half up), as for :func:`program_for`.
    replace : bool
        Allow replacing a program already registered under that name.

    Returns ``builder``, so that the function also works as a decorator factory's result.
    """
    from ..strategies import Strategy

    if isinstance(strategy, type) and issubclass(strategy, Strategy):
        name = strategy.__name__
    elif isinstance(strategy, str) and strategy.isidentifier():
        name = strategy
    else:
        raise TypeError(f"strategy must be a merit.strategies.Strategy subclass or its name, "
                        f"not {strategy!r}")
    if not callable(builder):
        raise TypeError(f"builder must be callable(problem, shift) -> ProgramParts, not "
                        f"{builder!r}")
    if name in _BUILDERS and _BUILDERS[name] is not builder and not replace:
        raise ValueError(f"strategy {name} already has a program; pass replace=True to replace "
                         f"it")
    _BUILDERS[name] = builder
    return builder


# the built-in fixed-point programs that are not exact in integers: |ISA - golden| at most
# (Mean: the reciprocal; Bilateral: the exp and reciprocal lookup tables, docs/isa.md)
_TOLERANCES = {"Mean": 1, "Bilateral": 8}
_DOMAINS = {"Bilateral": (0, 4095)}
_VALUE_FRAC = {"Bilateral": 12}
_EXACT_BELOW = {"SeparableDot": 1 << 15}    # mac saturates the row sum r1 to int16


def _builder(*names):
    def register(fn):
        for name in names:
            _BUILDERS[name] = fn
        return fn
    return register


def _parts(problem, shift):
    """The checked :class:`ProgramParts` of ``problem``'s strategy."""
    name = type(problem.strategy).__name__
    if name not in _BUILDERS:
        raise IsaError(f"no MERIT-z program for strategy {name} (supported: "
                       f"{', '.join(sorted(_BUILDERS))}; merit.isa.register_program adds one)")
    parts = _BUILDERS[name](problem, shift)
    if isinstance(parts, tuple) and not isinstance(parts, ProgramParts) and len(parts) == 6:
        parts = ProgramParts(*parts, tolerance=_TOLERANCES.get(name, 0),
                             domain=_DOMAINS.get(name, (-32768, 32767)),
                             exact_below=_EXACT_BELOW.get(name, 1 << 31),
                             value_frac=_VALUE_FRAC.get(name, 0))
    if not isinstance(parts, ProgramParts):
        raise IsaError(f"the program builder of {name} must return a merit.isa.ProgramParts, "
                       f"not {type(parts).__name__}")
    ports = tuple(parts.ports)
    n_in = len(problem.strategy.inputs)
    if len(ports) != n_in or any(p not in ("i0", "i1") for p in ports):
        raise IsaError(f"the program builder of {name} must give one port 'i0' or 'i1' per "
                       f"strategy input ({n_in}), not {list(ports)}")
    if len(parts.consts) > N_CONSTS or len(parts.luts) > N_LUTS:
        raise IsaError(f"the program builder of {name} gives {len(parts.consts)} constants and "
                       f"{len(parts.luts)} tables; a program has at most {N_CONSTS} and "
                       f"{N_LUTS}")
    return replace(parts, ports=ports)


def _round(shift):
    """(constant, operand) adding 2**(shift-1) before a shift: round half up."""
    return (1 << (shift - 1), "k0") if shift else (0, "0")


@_builder("Dot", "DotReLU")
def _dot(problem, shift):
    k0, rnd = _round(shift)
    if type(problem.strategy).__name__ == "DotReLU":
        post = [f"add r0, 0, r0, {rnd} >> {shift}", "max r0, r0, 0", "out r0, 0"]
    else:
        post = [f"out r0, {rnd} >> {shift}"]
    return (["add r0, 0, 0, 0"], ["mac r0, r0, i0, i1"], post, ["i0", "i1"], [k0], [])


@_builder("DotResidual")
def _dot_residual(problem, shift):
    k0, rnd = _round(shift)
    post = [f"add r0, 0, r0, {rnd} >> {shift}", "add r0, r0, i0, 0"]
    if problem.strategy.relu:
        post.append("max r0, r0, 0")
    post.append("out r0, 0")
    return (["add r0, 0, 0, 0"], ["mac r0, r0, i0, i1"], post, ["i0", "i1", "i0"], [k0], [])


@_builder("DotPool")
def _dot_pool(problem, shift):
    strategy = problem.strategy
    if problem.levels[0] == 0 and not strategy.inside:
        raise IsaError("DotPool programs need the pooling window in level 0")
    window = int(np.prod(problem.a_shape[:problem.levels[0]], dtype=np.int64))
    if strategy.inside:
        return _dot_pool_inside(problem, shift)
    # r0: the pooled value (running max or sum), r1: one convolution output
    if strategy.pool == "max":
        init = 0 if strategy.relu else -(1 << 31)
        k0, rnd = _round(shift)
        post = [[f"out r0, {rnd} >> {shift}"], ["max r0, r0, r1"]]
        return ([["add r0, 0, k1, 0"], ["add r1, 0, 0, 0"]], ["mac r1, r1, i0, i1"], post,
                ["i0", "i1"], [k0, init], [])
    e = _pow2_window(window)
    k0, rnd = _round(e + shift)
    inner = (["max r1, r1, 0"] if strategy.relu else []) + ["add r0, r0, r1, 0"]
    return ([["add r0, 0, 0, 0"], ["add r1, 0, 0, 0"]], ["mac r1, r1, i0, i1"],
            [[f"out r0, {rnd} >> {e + shift}"], inner], ["i0", "i1"], [k0], [])


def _pow2_window(window):
    e = window.bit_length() - 1
    if window != 1 << e:
        raise IsaError(f"average pooling over {window} values: MERIT-z's DotPool program divides "
                       f"by powers of two only")
    return e


def _dot_pool_inside(problem, shift):
    """The window inside the channel passes (levels: outer window | channel | inner window |
    taps): one running convolution sum per inner window position, in r0.. (the whole window
    inside) or r1.. (r0 the pooled value over the outer window positions), addressed by the
    indexed accumulator ``rN+x`` of the loop's ``mac``; the max or sum over them after the last
    channel."""
    st = problem.strategy
    lv = problem.levels
    first = np.cumsum((0,) + tuple(lv))
    shape = problem.a_shape
    inner = shape[first[2]:first[3]]
    n = int(np.prod(inner, dtype=np.int64))
    window = int(np.prod(shape[:first[1]], dtype=np.int64)) * n
    whole = lv[0] == 0                  # no window index outside: no pooled register
    base = 0 if whole else 1
    if base + n > N_REGS:
        raise IsaError(f"DotPool with {n} window positions inside the channel passes needs "
                       f"{base + n} registers (one running sum per position"
                       f"{'' if whole else ' and the pooled value'}); the CP holds {N_REGS} per "
                       f"output")
    xstride, stride = [0] * len(shape), 1
    for j in reversed(range(first[2], first[3])):
        xstride[j], stride = stride, stride * shape[j]
    parts = [f"r{base + i}" for i in range(n)]
    zero = [f"add {r}, 0, 0, 0" for r in parts]
    e = _pow2_window(window) if st.pool == "avg" else 0
    k0, rnd = _round(e + shift)
    fin = [f"out r0, {rnd} >> {e + shift}"]
    if st.pool == "max":
        fold = [f"max r0, r0, {r}" for r in parts[1 if whole else 0:]]
        if whole and st.relu:
            fold.append("max r0, r0, 0")
    else:
        fold = ([f"max {r}, {r}, 0" for r in parts] if st.relu else []) + \
            [f"add r0, r0, {r}, 0" for r in parts[1 if whole else 0:]]
    loop = [f"mac r{base}+x, r{base}+x, i0, i1"]
    init = 0 if st.relu else -(1 << 31)
    if whole:
        pre, post = [zero, [], [], []], [fold + fin, [], [], []]
    else:
        start = ["add r0, 0, k1, 0"] if st.pool == "max" else ["add r0, 0, 0, 0"]
        pre, post = [start, zero, [], []], [fin, fold, [], []]
    consts = (k0,) if whole or st.pool == "avg" else (k0, init)
    return ProgramParts(pre, loop, post, ("i0", "i1"), consts, (),
                        xstride=tuple(xstride), xspan=n)


@_builder("DotThreshold")
def _dot_threshold(problem, shift):
    # (threshold - 1 - acc) >> 31 is -1 exactly when acc >= threshold
    st = problem.strategy
    rnd, _ = _round(shift)
    post = ["sub r1, 0, k0, r0 >> 31", "and r1, r1, k1", f"out r1, k2 >> {shift}"]
    return (["add r0, 0, 0, 0"], ["mac r0, r0, i0, i1"], post, ["i0", "i1"],
            [st.threshold - 1, st.high, rnd], [])


@_builder("SeparableDot")
def _separable(problem, shift):
    k0, rnd = _round(shift)
    return ([["add r0, 0, 0, 0"], ["add r1, 0, 0, 0"]], ["mac r1, r1, i0, i1"],
            [[f"out r0, {rnd} >> {shift}"], ["mac r0, r0, i1, r1"]],
            ["i0", "i1", "i1"], [k0], [])


@_builder("Sum")
def _sum(problem, shift):
    k0, rnd = _round(shift)
    return (["add r0, 0, 0, 0"], ["add r0, r0, i0, 0"], [f"out r0, {rnd} >> {shift}"],
            ["i0"], [k0], [])


@_builder("Mean")
def _mean(problem, shift):
    n = int(np.prod(problem.a_shape, dtype=np.int64))
    e = max(n - 1, 0).bit_length()          # n <= 2**e
    if n == 1 << e:
        k0, rnd = _round(e + shift)
        return (["add r0, 0, 0, 0"], ["add r0, r0, i0, 0"], [f"out r0, {rnd} >> {e + shift}"],
                ["i0"], [k0], [])
    # sum * K / 2**(14+e) with K = round(2**(14+e) / n) in [2**14, 2**15), the sum split into
    # hi = sum >> 8 and lo = sum & 255 so that both fit the 16-bit multiplier (|sum| < 2**23)
    recip = round((1 << (14 + e)) / n)
    fin = 6 + e + shift
    post = ["and r1, r0, k1", "mac r1, 0, r1, k0 >> 8", "add r0, 0, r0, 0 >> 8",
            "mac r0, r1, r0, k0", f"out r0, k2 >> {fin}"]
    return (["add r0, 0, 0, 0"], ["add r0, r0, i0, 0"], post, ["i0"],
            [recip, 255, 1 << (fin - 1)], [])


@_builder("Max", "Min")
def _max(problem, shift):
    op = type(problem.strategy).__name__.lower()
    init = -32768 if op == "max" else 32767
    return (["add r0, 0, k0, 0"], [f"{op} r0, r0, i0"], [f"out r0, 0 >> {shift}"],
            ["i0"], [init], [])


@_builder("Copy")
def _copy(problem, shift):
    return ([[]], ["add r0, 0, i0, 0"], [[f"out r0, 0 >> {shift}"]], ["i0"], [], [])


#: Elementwise operations whose integer form is exact, and how the loop computes them into r0
#: (inputs in strategy order; the k-th input bound to a port is read by that port's k-th read)
_ELEMENTWISE_INT = {
    "relu": (["max r0, i0, 0"], ["i0"]),
    "clip3": (["max r0, i0, i1", "min r0, r0, i0"], ["i0", "i1", "i0"]),
    "mul": (["mac r0, 0, i0, i1"], ["i0", "i1"]),
    "affine": (["mac r0, 0, i0, i1", "add r0, r0, i0, 0"], ["i0", "i1", "i0"]),
}


# builders that serve only some instances of their strategy: name -> accepts(strategy)
_ACCEPTS = {"Elementwise": lambda s: s.op == "add" or s.op in _ELEMENTWISE_INT}


@_builder("Elementwise")
def _elementwise(problem, shift):
    strategy = problem.strategy
    k0, rnd = _round(shift)
    n = len(strategy.inputs)
    if strategy.op == "add":
        loop = ["add r0, 0, i0, i1"] if n > 1 else ["add r0, 0, i0, 0"]
        loop += ["add r0, r0, i0, 0" if k % 2 == 0 else "add r0, r0, i1, 0"
                 for k in range(2, n)]
        ports = ["i0" if k % 2 == 0 else "i1" for k in range(n)]
    elif strategy.op in _ELEMENTWISE_INT:
        loop, ports = _ELEMENTWISE_INT[strategy.op]
    else:
        raise IsaError(f"no MERIT-z program for Elementwise {strategy.op!r}: its parameters are "
                       f"real numbers (programs exist for add, "
                       f"{', '.join(_ELEMENTWISE_INT)}; quantize the parameters into an input "
                       f"tensor, e.g. 'affine' for a scale and bias)")
    return ([[]], loop, [[f"out r0, {rnd} >> {shift}"]], ports, [k0], [])


@_builder("L1")
def _l1(problem, shift):
    k0, rnd = _round(shift)
    return (["add r0, 0, 0, 0"], ["l1 r0, r0, i0, i1"], [f"out r0, {rnd} >> {shift}"],
            ["i0", "i1"], [k0], [])


@_builder("BestMatch")
def _best_match(problem, shift):
    # r0 best, r1 sad, r2 b0, r3 b1, r4 "sad < best" (-1/0), r5 index
    pre = [["add r0, 0, k0, 0", "add r2, 0, 0, 0", "add r3, 0, 0, 0"], ["add r1, 0, 0, 0"]]
    nd0 = problem.levels[0]
    if nd0 != 2:
        raise IsaError(f"BestMatch programs need 2 displacement indices in level 0, not {nd0}")
    post = [[f"out r0, 0 >> {shift}", "out r2, 0", "out r3, 0"],
            ["sub r4, 0, r1, r0 >> 31", "sel r0, r4, r1, r0",
             "index r5, 0, a0", "sel r2, r4, r5, r2",
             "index r5, 0, a1", "sel r3, r4, r5, r3"]]
    return (pre, ["l1 r1, r1, i0, i1"], post, ["i0", "i1"], [(1 << 31) - 1], [])


def bilateral_tables(sigma_r, wsum):
    """The bilateral program's constants: ``(k_scale, s_in, exp_table, s_den, recip_table)``.

    ``exp_table[i] = 32767 exp(-d^2 / (2 sigma_r^2))`` at ``d = i * dmax / 32``, indexed by
    ``(|x - c| * k_scale) >> s_in``; ``recip_table`` holds ``32768 / (1 + j 2**s_den / 16)``
    (at most 32767) for the reciprocal of the weight sum ``den`` (Q12, at most ``wsum``)
    indexed by ``(den - 4096) >> s_den``.
    """
    dmax = 4.0 * sigma_r
    s_in = 0
    while s_in < 24 and round(8192 * 2 ** (s_in + 1) / dmax) <= 32767:
        s_in += 1
    k_scale = max(1, round(8192 * 2 ** s_in / dmax))
    dmax = 8192 * 2 ** s_in / k_scale
    d = np.arange(LUT_ENTRIES) * dmax / (LUT_ENTRIES - 1)
    exp_table = np.round(32767 * np.exp(-d * d / (2 * sigma_r * sigma_r))).astype(int)
    span = max(wsum - 1, 1) * 4096                       # den - 4096 < (wsum - 1) * 4096
    s_den = max(0, math.ceil(math.log2(span / ((LUT_ENTRIES - 1) << LUT_FRAC))))
    x = 1 + np.arange(LUT_ENTRIES) * (1 << (s_den + LUT_FRAC)) / 4096
    recip_table = np.minimum(np.round(32768 / x), 32767).astype(int)
    return k_scale, s_in, exp_table.tolist(), s_den, recip_table.tolist()


@_builder("Bilateral")
def _bilateral(problem, shift):
    taps = int(np.prod(problem.a_shape, dtype=np.int64))
    weights = [t.value for t in problem.tensors if t.value is not None]
    wsum = float(np.sum(weights[0])) / float(np.max(weights[0])) if weights else taps
    k_scale, s_in, t0, s_den, t1 = bilateral_tables(problem.strategy.sigma_r, wsum)
    t = max(0, (taps * 4096).bit_length() - 15)          # den >> t fits 16 bits
    a = max(0, (taps * 4096 * 4095).bit_length() - 15)   # num >> a fits 16 bits
    pre = ["add r0, 0, i0, 0", "add r1, 0, 0, 0", "add r4, 0, 0, 0"]
    loop = ["add r5, 0, i0, 0",                 # x
            "l1 r2, 0, r0, r5",                 # |c - x|
            "mac r2, 0, r2, k0",                # scaled to the table's input
            f"lut r2, 0, r2, 0, t0 >> {s_in}",  # range weight, Q15
            "mac r2, 0, r2, i1 >> 15",          # k = weight * g (g in Q12)
            "add r1, r1, r2, 0",                # den += k
            "mac r4, r4, r2, r5"]               # num += k * x
    post = [f"add r2, 0, r1, 0 >> {t}",         # den >> t
            f"lut r3, 0, r1, k1, t1 >> {s_den}",  # y0 ~ 2**15 * 4096 / den
            f"mac r2, 0, r2, r3 >> {12 - t}",   # e = den * y0, Q15
            "sub r2, k2, 0, r2 >> 1",           # f = 2 - e, Q14
            "mac r3, 0, r3, r2 >> 14",          # y1 = y0 * f (Newton step 1)
            f"add r2, 0, r1, 0 >> {t}",
            f"mac r2, 0, r2, r3 >> {12 - t}",
            "sub r2, k2, 0, r2 >> 1",
            "mac r3, 0, r3, r2 >> 14",          # Newton step 2
            f"add r4, 0, r4, 0 >> {a}",         # num >> a
            f"mac r4, 0, r4, r3 >> {27 - a + shift}",
            "out r4, 0"]
    return (pre, loop, post, ["i0", "i0", "i1"], [k_scale, 4096, 32768], [t0, t1])


def supported(strategy):
    """Whether MERIT-z has a program for ``strategy`` (an instance, or a class name: whether some
    instances have one; e.g. :class:`~merit.strategies.Elementwise` only for integer operations)."""
    if isinstance(strategy, str):
        return strategy in _BUILDERS
    name = type(strategy).__name__
    return name in _BUILDERS and _ACCEPTS.get(name, lambda s: True)(strategy)


def _lines(code):
    return [code] if isinstance(code, str) else list(code)


def program_for(problem, *, shift=0):
    """The fixed-point :class:`~merit.isa.Program` of ``problem`` (a :class:`merit.Problem`).

    ``shift`` (0..31) divides the result by ``2**shift`` (round half up) before the saturating
    16-bit ``out``. The program has one level per accumulation index of the problem; operand k
    (``problem.operands`` order) is bound to the RP named in the program's ``rp0`` / ``rp1``.
    """
    name = type(problem.strategy).__name__
    if not isinstance(shift, int) or isinstance(shift, bool) or not 0 <= shift <= 31:
        raise IsaError(f"shift must be an integer in 0..31, not {shift!r}")
    parts = _parts(problem, shift)
    pre, loop, post, ports = parts.pre, parts.loop, parts.post, parts.ports
    consts, luts = parts.consts, parts.luts
    levels = problem.levels
    if len(levels) == 1:
        pre, post = [pre] if pre and isinstance(pre[0], str) else pre, post
        post = [post] if post and isinstance(post[0], str) else post
    pre = [_lines(p) for p in (pre or [[]] * len(levels))]
    post = [_lines(p) for p in (post or [[]] * len(levels))]
    ndim = len(problem.a_shape)
    first = np.cumsum((0,) + tuple(levels))[:-1]
    sections = {}
    loop_lines = []
    for lv, j in enumerate(first):
        if j == ndim:
            loop_lines += pre[lv]
        else:
            sections.setdefault(f"pre{j + 1}", []).extend(pre[lv])
    loop_lines += list(loop)
    for lv in reversed(range(len(levels))):
        j = first[lv]
        if j == ndim:
            loop_lines += post[lv]
        else:
            sections.setdefault(f"post{j + 1}", []).extend(post[lv])
    text = [f".levels {max(ndim, 1)}"] if ndim else []
    if parts.xspan != 1 or any(parts.xstride):
        text += [".xstride " + " ".join(str(int(v)) for v in parts.xstride),
                 f".xspan {int(parts.xspan)}"]
    for j in range(1, ndim + 1):
        text += [f"pre{j}:"] + sections.get(f"pre{j}", [])
    text += ["loop:"] + loop_lines
    for j in range(ndim, 0, -1):
        text += [f"post{j}:"] + sections.get(f"post{j}", [])
    consts = list(consts) + [0] * (4 - len(consts))
    prog = assemble("\n".join(text), consts=consts, luts=luts)
    # operand k of the problem -> the RP slot of its reading instruction, in address order
    readers = {0: list(prog.reads(0)), 1: list(prog.reads(1))}
    names = {0: [], 1: []}
    for op, port in zip(problem.operands, ports, strict=True):
        names[int(port[1])].append(op.tensor)
    for port in (0, 1):
        if len(names[port]) != len(readers[port]):
            raise IsaError(f"{name} program reads i{port} {len(readers[port])} time(s) but "
                           f"{len(names[port])} operand(s) are bound to it")
    return replace(prog, rp0=tuple(names[0]), rp1=tuple(names[1]),
                   outputs=tuple(o.name for o in problem.outputs))


def operand_ports(problem, *, shift=0):
    """``(port, slot)`` of every operand of ``problem`` (``problem.operands`` order).

    Operand ``k`` is read by the ``slot``-th instruction (address order) of
    ``program_for(problem)`` that reads ``i<port>``: the RP tensor configuration it needs.
    """
    used = {0: 0, 1: 0}
    out = []
    for port in _parts(problem, shift).ports:
        r = int(port[1])
        out.append((r, used[r]))
        used[r] += 1
    return tuple(out)


def _operand_arrays(problem, ports, arrays):
    by_name = {t.name: a for t, a in zip(problem.tensors, arrays, strict=True)}
    lanes = int(np.prod(problem.p_shape, dtype=np.int64))
    acc = tuple(problem.a_shape) or (1,)
    rp = {0: [], 1: []}
    for op, port in zip(problem.operands, ports, strict=True):
        m = op.transform.apply(by_name[op.tensor], problem.p_shape, problem.a_shape)
        m = np.moveaxis(m.reshape(lanes, -1), 0, -1).reshape(acc + (lanes,))
        rp[int(port[1])].append(np.ascontiguousarray(m))
    return rp[0], rp[1], acc


def run(problem, *arrays, shift=0, program=None):
    """Run ``problem`` on MERIT-z's ISA (bit-exact interpreter) with int16 ``arrays``.

    One int16 array per tensor (``problem.tensors`` order, like ``problem.run``). Returns one
    int16 array per output (a tuple when there are several), in the outputs' shapes, taken from
    the last execution of each output's ``out`` instruction.
    """
    if len(arrays) != len(problem.tensors):
        raise IsaError(f"problem {problem.name!r} takes {len(problem.tensors)} arrays "
                       f"({', '.join(t.name for t in problem.tensors)}), got {len(arrays)}")
    for t, a in zip(problem.tensors, arrays, strict=True):
        if np.asarray(a).dtype != np.int16:
            raise IsaError(f"tensor {t.name!r} must be int16, not {np.asarray(a).dtype}")
    program = program_for(problem, shift=shift) if program is None else program
    ports = _parts(problem, shift).ports
    rp0, rp1, acc = _operand_arrays(problem, ports, arrays)
    lanes = int(np.prod(problem.p_shape, dtype=np.int64))
    pindex = np.indices(problem.p_shape).reshape(len(problem.p_shape), lanes)
    trace = execute(program, acc, rp0=rp0, rp1=rp1, pindex=pindex, lanes=lanes)
    outs = tuple(o.finish(v[-1].reshape(problem.p_shape))
                 for o, v in zip(problem.outputs, trace.outputs, strict=True))
    return outs[0] if len(outs) == 1 else outs


def tolerance(problem, *, shift=0):
    """``|ISA - golden|`` that :func:`check_golden` allows for ``problem`` (0: bit-exact)."""
    return int(_parts(problem, shift).tolerance)


@dataclass(frozen=True)
class GoldenCheck:
    """One comparison of the ISA interpreter with the golden model (:func:`check_golden`).

    Attributes
    ----------
    data : str
        Which inputs: ``"small"``, ``"medium"``, ``"large"`` or ``"given"`` (:func:`check_golden`).
    held : bool
        The relation held: bit-exact (``tolerance == 0``) or within the tolerance.
    tolerance, max_error : int
        Allowed and largest ``|ISA - golden|`` over every output.
    outputs, saturated : int
        Values compared; of them, golden values beyond int16 (``out`` saturates them).
    note : str
        Why a data set was not compared ('' when it was).
    """

    data: str
    held: bool
    tolerance: int
    max_error: int
    outputs: int
    saturated: int
    note: str = ""


def _peak_for(problem, limit):
    """The largest int16 magnitude ``m`` with ``strategy.int_bound(a_size, [m] * inputs) <
    limit`` (at least 1)."""
    a_size = math.prod(problem.a_shape)
    n = len(problem.strategy.inputs)
    lo, hi = 1, 32767
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if problem.strategy.int_bound(a_size, [mid] * n) < limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fixed_values(problem, *, shift=0):
    """``{tensor name: int16 array}`` of the tensors whose value belongs to ``problem``, as the
    TAU reads them: ``round(value * 2**value_frac)`` (:class:`ProgramParts`), refused (IsaError)
    where that leaves int16."""
    frac = int(_parts(problem, shift).value_frac)
    out = {}
    for t in problem.tensors:
        if t.value is None:
            continue
        v = np.round(np.asarray(t.value, dtype=np.float64) * (1 << frac))
        if v.size and (v.min() < -32768 or v.max() > 32767):
            raise IsaError(f"tensor {t.name!r}: its value scaled by 2**{frac} leaves int16 "
                           f"({v.min():g}..{v.max():g})")
        out[t.name] = v.astype(np.int16)
    return out


def _data(problem, rng, peak, domain, fixed):
    """int16 inputs in ``[-peak, peak]`` within ``domain``, a quarter of them at the ends."""
    low, high = max(-peak, domain[0]), min(peak, domain[1])
    out = []
    for t in problem.tensors:
        if t.name in fixed:
            out.append(fixed[t.name])
            continue
        a = rng.integers(low, high + 1, size=t.shape)
        ends = rng.random(t.shape) < 0.25
        a[ends] = rng.choice([low, high], size=int(ends.sum()))
        out.append(a.astype(np.int16))
    return out


def _expected(golden, shift):
    """The golden result as ``out`` writes it: divided by 2**shift, rounded half up, saturated."""
    g = np.asarray(golden, dtype=np.float64) / (1 << shift)
    return np.clip(np.floor(g + 0.5), -32768, 32767), np.abs(np.floor(g + 0.5)) > 32767


def check_golden(problem, *, shift=0, rng=None, arrays=None):
    """Run ``problem`` on the ISA interpreter and on the golden model and compare them.

    Three data sets, each with a quarter of its elements at the ends of its range and within the
    program's ``domain``: ``small`` in -64..63, ``medium`` (values whose sums stay below 2**17 by
    the strategy's :meth:`~merit.strategies.Strategy.int_bound`: some outputs saturate) and
    ``large`` (sums below 2**31, so no 32-bit register wraps: most outputs saturate); each
    bounded by the program's ``exact_below``;
    ``arrays`` (int16, ``problem.tensors`` order) adds a data set ``given``. The golden result is
    divided by ``2**shift``, rounded half up and saturated to int16 like ``out``; the ISA must
    equal it (``tolerance(problem) == 0``) or stay within the tolerance.

    Returns a list of :class:`GoldenCheck`. A strategy with several outputs (``BestMatch``) is
    compared on every output; ``shift`` applies to each.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    parts = _parts(problem, shift)
    tol, domain = int(parts.tolerance), tuple(parts.domain)
    fixed = fixed_values(problem, shift=shift)
    top = int(parts.exact_below)
    sets = [("small", _data(problem, rng, min(64, _peak_for(problem, top)), domain, fixed)),
            ("medium", _data(problem, rng, _peak_for(problem, min(1 << 17, top)), domain, fixed)),
            ("large", _data(problem, rng, _peak_for(problem, top), domain, fixed))]
    if arrays is not None:
        sets.append(("given", [np.asarray(a, dtype=np.int16) for a in arrays]))
    checks = []
    for name, data in sets:
        got = run(problem, *data, shift=shift)
        scale = float(1 << int(parts.value_frac))
        ref = problem.run(*[a / scale if t.name in fixed else a
                            for t, a in zip(problem.tensors, data, strict=True)])
        got = got if isinstance(got, tuple) else (got,)
        ref = ref if isinstance(ref, tuple) else (ref,)
        err, n, sat = 0, 0, 0
        for g, r in zip(got, ref, strict=True):
            expected, saturated = _expected(r, shift)
            err = max(err, int(np.abs(g.astype(np.float64) - expected).max(initial=0)))
            n += expected.size
            sat += int(saturated.sum())
        checks.append(GoldenCheck(name, err <= tol, tol, err, n, sat))
    return checks
