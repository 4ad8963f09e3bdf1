"""Golden-model measurements (run as ``python -m bench.golden``).

1. Speed: the golden model on AlexNet CONV1 and VGG-16 conv3_1 (batch 1) against a numpy
   im2col + matmul reference in the same run -> ``docs/results/golden.{md,json}``.
2. Expressiveness (the paper's Table IV): lexical tokens of a MERIT definition of each kernel
   (transforms + the strategy's Pre/Loop/Post) against a naive nested-loop version
   -> ``docs/results/tokens.md``.  The definitions and loops below are checked against the
   workload library in ``tests/bench/test_bench_golden.py``.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import inspect
import json
import keyword
import os
import platform
import re
import shlex
import sys
import textwrap
import time
import tokenize
from io import StringIO
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from merit import strategies as S
from merit import workloads
from merit.problem import Problem
from merit.transform import Index, Transform

__all__ = ["SPEED_CASES", "TOKEN_CASES", "count_c_tokens", "count_tokens", "im2col_conv", "main"]

# ---- speed ------------------------------------------------------------------------------------

#: name -> conv2d arguments (n, c, h, w, m, k, stride, padding)
SPEED_CASES = {
    "AlexNet CONV1": (1, 3, 227, 227, 96, 11, 4, 0),
    "VGG-16 conv3_1": (1, 128, 56, 56, 256, 3, 1, 1),
}


def im2col_conv(img, weights, stride, padding):
    """The usual CPU convolution: unroll patches to columns, one matmul (float32 stays float32)."""
    n, c, _, _ = img.shape
    m, _, k, _ = weights.shape
    padded = np.pad(img, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = sliding_window_view(padded, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    ho, wo = win.shape[2:4]
    cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k * k, ho * wo)
    return (weights.reshape(m, -1) @ cols).reshape(n, m, ho, wo)


def _best_times(fns, repeat):
    """Best wall time of each function, the calls interleaved so that both see the same load."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def measure_speed(repeat=10, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for name, (n, c, h, w, m, k, stride, padding) in SPEED_CASES.items():
        prob = workloads.conv2d(n, c, h, w, m, k, stride=stride, padding=padding)
        img, weights = prob.random_inputs(rng, np.float32)
        ours = prob.run(img, weights)
        ref = im2col_conv(img, weights, stride, padding)
        t_golden, t_ref = _best_times(
            [lambda: prob.run(img, weights),  # noqa: B023 (called before the loop moves on)
             lambda: im2col_conv(img, weights, stride, padding)], repeat)  # noqa: B023
        rows.append({
            "layer": name, "input": [n, c, h, w], "weights": [m, c, k, k], "stride": stride,
            "padding": padding, "output": list(ours.shape), "macs": prob.steps,
            "golden_s": t_golden, "im2col_s": t_ref, "ratio": t_golden / t_ref,
            "max_abs_diff": float(np.abs(ours - ref).max()),
        })
    return rows


# ---- token counts (Table IV) ------------------------------------------------------------------
# MERIT definitions: what a user writes (the strategy's Pre/Loop/Post are counted with them).

def merit_gemm(m, n, k):
    A = Transform((m, k), [Index(0), None], [Index(1)])
    B = Transform((k, n), [None, Index(1)], [Index(0)])
    return Problem("gemm", S.Dot(), (m, n), (k,), [A, B])


def merit_conv(n, c, h, w, m, k, s, pad):
    ho, wo = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    img = Transform((n, c, h, w), [Index(0), None, Index(2, s), Index(3, s)],
                    [Index(1), Index(2, 1, -pad), Index(3, 1, -pad)])
    wgt = Transform((m, c, k, k), [None, Index(0), None, None], [Index(1), Index(2), Index(3)])
    return Problem("conv", S.Dot(), (n, m, ho, wo), (c, k, k), [img, wgt])


def merit_motion(h, w, b, r):
    d = 2 * r + 1
    cur = Transform((h, w), [Index(0, b), Index(1, b)], [None, None, Index(0), Index(1)])
    ref = Transform((h, w), [Index(0, b), Index(1, b)],
                    [Index(0, 1, -r), Index(1, 1, -r), Index(0), Index(1)], "clamp")
    return Problem("me", S.BestMatch(), (h // b, w // b), (d, d, b, b), [cur, ref],
                   levels=(2, 2))


def merit_bilateral(h, w, r, g, sigma_r):
    img = Transform((h, w), [Index(0), Index(1)], [None, None], name="I")
    win = Transform((h, w), [Index(0), Index(1)], [Index(0, 1, -r), Index(1, 1, -r)], "clamp",
                    name="I")
    gw = Transform(g.shape, [None, None], [Index(0), Index(1)], name="G")
    return Problem("bilateral", S.Bilateral(sigma_r), (h, w), g.shape, [img, win, gw],
                   values={"G": g})


def merit_integral(h, w):
    img = Transform((h, w), [Index(0), Index(1)], [Index(0, -1), Index(1, -1)])
    return Problem("integral", S.Sum(), (h, w), (h, w), [img])


def merit_separable(h, w, k):
    r = k // 2
    img = Transform((h, w), [Index(0), Index(1)], [Index(0, 1, -r), Index(1, 1, -r)])
    hk = Transform((k,), [None, None], [None, Index(0)])
    v = Transform((k,), [None, None], [Index(0), None])
    return Problem("separable", S.SeparableDot(), (h, w), (k, k), [img, hk, v], levels=(1, 1))


# Naive nested loops, one output element at a time (the paper's "naive on CPU").

def naive_gemm(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            acc = 0
            for t in range(k):
                acc += A[i, t] * B[t, j]
            C[i, j] = acc
    return C


def naive_conv(img, wgt, s, pad):
    n, c, h, w = img.shape
    m, _, k, _ = wgt.shape
    ho, wo = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    out = np.zeros((n, m, ho, wo))
    for b in range(n):
        for o in range(m):
            for y in range(ho):
                for x in range(wo):
                    acc = 0
                    for i in range(c):
                        for dy in range(k):
                            for dx in range(k):
                                yy, xx = y * s + dy - pad, x * s + dx - pad
                                if 0 <= yy < h and 0 <= xx < w:
                                    acc += img[b, i, yy, xx] * wgt[o, i, dy, dx]
                    out[b, o, y, x] = acc
    return out


def naive_motion(cur, ref, b, r):
    h, w = cur.shape
    sad = np.zeros((h // b, w // b))
    u = np.zeros((h // b, w // b))
    v = np.zeros((h // b, w // b))
    for by in range(h // b):
        for bx in range(w // b):
            best = None
            for dy in range(2 * r + 1):
                for dx in range(2 * r + 1):
                    acc = 0
                    for i in range(b):
                        for j in range(b):
                            y = min(max(by * b + dy - r + i, 0), h - 1)
                            x = min(max(bx * b + dx - r + j, 0), w - 1)
                            acc += abs(cur[by * b + i, bx * b + j] - ref[y, x])
                    if best is None or acc < best:
                        best, u[by, bx], v[by, bx] = acc, dy, dx
            sad[by, bx] = best
    return sad, u, v


def naive_bilateral(img, r, g, sigma_r):
    h, w = img.shape
    out = np.zeros((h, w))
    for y in range(h):
        for x in range(w):
            num = den = 0
            for i in range(2 * r + 1):
                for j in range(2 * r + 1):
                    p = img[min(max(y + i - r, 0), h - 1), min(max(x + j - r, 0), w - 1)]
                    d = p - img[y, x]
                    kw = g[i, j] * np.exp(-d * d / (2 * sigma_r * sigma_r))
                    num += kw * p
                    den += kw
            out[y, x] = num / den
    return out


def naive_integral(img):
    h, w = img.shape
    out = np.zeros((h, w))
    for y in range(h):
        for x in range(w):
            acc = 0
            for i in range(y + 1):
                for j in range(x + 1):
                    acc += img[i, j]
            out[y, x] = acc
    return out


def naive_separable(img, hk, v):
    h, w = img.shape
    k = len(hk)
    r = k // 2
    out = np.zeros((h, w))
    for y in range(h):
        for x in range(w):
            acc = 0
            for i in range(k):
                row = 0
                for j in range(k):
                    if 0 <= y + i - r < h and 0 <= x + j - r < w:
                        row += hk[j] * img[y + i - r, x + j - r]
                acc += v[i] * row
            out[y, x] = acc
    return out


#: Table IV row -> (MERIT definition, its strategy, naive loops, paper's
#: (MERIT identifiers, MERIT operators, naive identifiers, naive operators))
TOKEN_CASES = {
    "Motion Estimation": (merit_motion, S.BestMatch(), naive_motion, (49, 11, 80, 45)),
    "Bilateral Filter": (merit_bilateral, S.Bilateral(10.0), naive_bilateral, (69, 22, 87, 49)),
    "Forward Propagation": (merit_conv, S.Dot(), naive_conv, (53, 7, 110, 65)),
    "GEMM": (merit_gemm, S.Dot(), naive_gemm, (34, 7, 34, 20)),
    "Integral Image": (merit_integral, S.Sum(), naive_integral, (24, 6, 23, 14)),
    "Separable Filter": (merit_separable, S.SeparableDot(), naive_separable, (35, 5, 50, 29)),
}

#: Operator tokens counted (arithmetic, comparison, assignment, bitwise); brackets, commas,
#: colons and dots are punctuation.
OPERATORS = frozenset(
    "+ - * / // % ** @ = += -= *= /= //= %= **= < > <= >= == != & | ^ ~ << >> &= |= ^=".split())


def count_tokens(source):
    """``(identifiers, operators)`` of Python source: non-keyword names and operator tokens."""
    ids = ops = 0
    for tok in tokenize.generate_tokens(StringIO(textwrap.dedent(source)).readline):
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            ids += 1
        elif tok.type == tokenize.OP and tok.string in OPERATORS:
            ops += 1
    return ids, ops


_C_TOKEN = re.compile(r"\s*(?:([A-Za-z_]\w*)|(\d+\.?\d*(?:e[-+]?\d+)?f?)|"
                      r"(<<=|>>=|\+\+|--|->|&&|\|\||[-+*/%=<>!&|^]=|<<|>>|[-+*/%=<>!&|^~?])|"
                      r"([()\[\]{};,.:]))")
_C_KEYWORDS = frozenset("float int double char short long unsigned signed void const if else for "
                        "while do return".split())


def count_c_tokens(source):
    """``(identifiers, operators)`` of a C snippet (the strategies' GPU bodies)."""
    ids = ops = 0
    pos, source = 0, source.strip()
    while pos < len(source):
        m = _C_TOKEN.match(source, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot tokenize C at {source[pos:pos + 20]!r}")
        pos = m.end()
        if m.group(1) and m.group(1) not in _C_KEYWORDS:
            ids += 1
        elif m.group(3):
            ops += 1
    return ids, ops


def c_body_source(strategy):
    """All C statements of a strategy's ``c_body``, as one snippet."""
    b = strategy.c_body
    return "\n".join([b["state"], *b["pre"], b["loop"], *b["post"]])


def _body(fn):
    """Source of a function without its ``def`` line and docstring."""
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return "\n".join(lines[body[0].lineno - 1:body[-1].end_lineno])


def strategy_source(cls):
    """The Pre/Loop/Post bodies (and ``__init__``) a strategy's author writes, without
    docstrings, ``loop_chunk`` (a speed-up) or the C bodies (the GPU back end's copy)."""
    parts = []
    for klass in cls.__mro__:
        if klass is S.Strategy or klass is object:
            break
        for name in ("__init__", "pre", "loop", "post"):
            fn = klass.__dict__.get(name)
            if fn is not None and all(name not in p[0] for p in parts):
                src = _body(fn)
                if name == "__init__":  # the arithmetic setup, not the C bodies
                    src = "\n".join(ln for ln in src.splitlines() if "c_body" not in ln)
                parts.append((name, src))
    return "\n".join(src for _, src in parts)


def measure_tokens():
    rows = []
    for name, (definition, strategy, naive, paper) in TOKEN_CASES.items():
        d_ids, d_ops = count_tokens(_body(definition))
        s_ids, s_ops = count_tokens(strategy_source(type(strategy)))
        c_ids, c_ops = count_c_tokens(c_body_source(strategy))
        n_ids, n_ops = count_tokens(_body(naive))
        rows.append({
            "kernel": name, "definition": definition.__name__,
            "strategy": type(strategy).__name__, "naive": naive.__name__,
            "merit_identifiers": d_ids + s_ids, "merit_operators": d_ops + s_ops,
            "merit_c_identifiers": d_ids + c_ids, "merit_c_operators": d_ops + c_ops,
            "definition_identifiers": d_ids, "definition_operators": d_ops,
            "strategy_identifiers": s_ids, "strategy_operators": s_ops,
            "c_body_identifiers": c_ids, "c_body_operators": c_ops,
            "naive_identifiers": n_ids, "naive_operators": n_ops,
            "paper": dict(zip(("merit_identifiers", "merit_operators", "naive_identifiers",
                               "naive_operators"), paper, strict=True)),
        })
    return rows


# ---- report -----------------------------------------------------------------------------------

def _machine():
    return {
        "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
        "blas_threads": os.environ.get(_THREADS_VAR, "default"),
    }


#: numpy's OpenBLAS reads its thread count at import; the bench re-executes itself to set it
_THREADS_VAR = "OPENBLAS_NUM_THREADS"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.golden", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="docs/results", help="output folder (docs/results)")
    parser.add_argument("--repeat", type=int, default=10,
                        help="timing repetitions, golden and im2col interleaved (best kept)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads for both sides (default 1: multi-threaded OpenBLAS on "
                             "a shared machine gives 10x swings between runs)")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else list(argv)
    if os.environ.get(_THREADS_VAR) != str(args.threads):
        env = dict(os.environ, **{_THREADS_VAR: str(args.threads)})
        os.execve(sys.executable, [sys.executable, "-m", "bench.golden", *argv], env)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.golden " + shlex.join(argv)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = _machine()
    speed = measure_speed(args.repeat)
    tokens = measure_tokens()
    (out / "golden.json").write_text(json.dumps(
        {"command": command.strip(), "date": date, "machine": machine, "speed": speed,
         "tokens": tokens}, indent=2) + "\n")

    head = (f"Command: `{command.strip()}`  \nDate: {date}  \nMachine: {machine['processor']}, "
            f"{machine['cpus']} CPUs, {machine['platform']}, Python {machine['python']}, "
            f"numpy {machine['numpy']}, {_THREADS_VAR}={machine['blas_threads']}\n")
    lines = ["# Golden model speed", "", head,
             f"Batch 1, float32 inputs, best of {args.repeat}, the two interleaved. `golden` = "
             "`merit.workloads.conv2d(...).run` (gathers per block of accumulation steps, one "
             "batched matmul each); `im2col` = patches unrolled with `sliding_window_view` and one "
             "`matmul`, same process, same data, same BLAS threads.", "",
             "| layer | output | MACs | golden (s) | im2col + matmul (s) | golden / im2col | "
             "max abs diff |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in speed:
        lines.append(f"| {r['layer']} | {'x'.join(map(str, r['output']))} | {r['macs']:,} | "
                     f"{r['golden_s']:.4f} | {r['im2col_s']:.4f} | {r['ratio']:.2f} | "
                     f"{r['max_abs_diff']:.2g} |")
    lines += ["", "Target: golden within 5x of im2col. Token counts: `tokens.md`."]
    (out / "golden.md").write_text("\n".join(lines) + "\n")

    lines = ["# Lexical token counts (the paper's Table IV)", "", head,
             "Python `tokenize`: identifiers = non-keyword NAME tokens; operators = arithmetic, "
             "comparison, assignment and bitwise OP tokens (brackets, commas, colons, dots "
             "excluded). MERIT = the definition function in `bench/golden.py` (transforms + "
             "`Problem`, Python) plus the strategy, counted two ways: its Python `pre`/`loop`/"
             "`post` (and `__init__` arithmetic, no docstrings, no `loop_chunk`), or its C body "
             "for the GPU (`c_body`, C tokens, type keywords not counted; closest to the paper's "
             "'MERIT on GPU'). Naive = the nested-loop Python function next to the definition. "
             "Definitions and loops are checked against the workload library in "
             "`tests/bench/test_bench_golden.py`. The paper counts C++/CUDA: compare ratios, not "
             "absolutes. Format: identifiers / operators.", "",
             "| kernel | strategy | MERIT, Python strategy | MERIT, C body | definition alone | "
             "naive loops | paper MERIT | paper naive |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in tokens:
        p = r["paper"]
        lines.append(
            f"| {r['kernel']} | {r['strategy']} | {r['merit_identifiers']} / "
            f"{r['merit_operators']} | {r['merit_c_identifiers']} / {r['merit_c_operators']} | "
            f"{r['definition_identifiers']} / {r['definition_operators']} | "
            f"{r['naive_identifiers']} / {r['naive_operators']} | "
            f"{p['merit_identifiers']} / {p['merit_operators']} | "
            f"{p['naive_identifiers']} / {p['naive_operators']} |")
    (out / "tokens.md").write_text("\n".join(lines) + "\n")
    for r in speed:
        print(f"{r['layer']}: golden {r['golden_s']:.4f} s, im2col {r['im2col_s']:.4f} s, "
              f"ratio {r['ratio']:.2f}")
    for r in tokens:
        print(f"{r['kernel']}: MERIT {r['merit_identifiers']} ids / {r['merit_operators']} ops "
              f"(C body: {r['merit_c_identifiers']} / {r['merit_c_operators']}), "
              f"naive {r['naive_identifiers']} / {r['naive_operators']}")
    print(f"wrote {out / 'golden.md'}, {out / 'golden.json'}, {out / 'tokens.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
