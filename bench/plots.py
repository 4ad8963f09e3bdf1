"""Figures of the results tables in ``docs/results`` (``python -m bench.plots``, end of make bench).

Reads the committed JSON results, writes one PNG per figure next to them and embeds the figures in
the results markdown between ``<!-- plots:begin -->`` and ``<!-- plots:end -->``. The writers of
the markdown (``bench.golden``, ``bench.gpu``, ``bench/tau.py``,
``bench.area``) rewrite their file without the block; running this module afterwards puts it back
at the same place (after the table it illustrates), and running it twice changes nothing. The PNGs
are byte-identical across runs with the same matplotlib (no software or date metadata, fixed dpi,
the font that matplotlib ships), so that git diffs stay clean.

A missing JSON or markdown file is skipped with a note. matplotlib is imported only when a figure
is drawn: ``import bench.plots`` does not need it.
"""

import argparse
import json
import textwrap
from pathlib import Path

from bench.area import PAPER_TABLE_VII, _tau_part

__all__ = ["BEGIN", "END", "FIGURES", "PAPER_TABLE_IX", "TAU_PAPER_ROWS", "gpu_speedups",
           "tau_utilization", "utilization_vs_paper", "utilization_scaling", "golden_speed",
           "golden_tokens",
           "area_split", "embed", "run", "main"]

BEGIN = "<!-- plots:begin -->"
END = "<!-- plots:end -->"

#: Table IX of the MERIT paper: utilization of a 4-TAU MERIT-z (4 x 32 ALUs, 3.2 GB/s DDR3) on
#: full layers.
PAPER_TABLE_IX = {"Dilated": 0.95, "Pixel shuffle (ESPCN)": 0.96, "Correlation (FlowNet)": 0.74,
                  "Depthwise (MobileNet)": 0.63, "GEMM (FC, RNN)": 0.92, "Motion estimation": 0.74}

#: Our TAU workloads (``bench/tau.py``) that are slices of a Table IX row.
TAU_PAPER_ROWS = {"conv3x3_dilated": "Dilated", "correlation": "Correlation (FlowNet)",
                  "depthwise3x3": "Depthwise (MobileNet)", "gemm": "GEMM (FC, RNN)",
                  "motion_sad": "Motion estimation"}

PAPER_LABEL = "paper (4 TAUs x 32 lanes, full layer)"
OURS_LABEL = "ours (slice, 1 TAU)"

_DPI = 100
_STYLE = {"font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10,
          "svg.hashsalt": "merit", "figure.dpi": _DPI}


# --- drawing -----------------------------------------------------------------------------------

def _figure(path, size, draw):
    """Draw ``draw(fig)`` on a fresh Agg figure of ``size`` inches and save it as ``path``."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=size, layout="constrained")
        FigureCanvasAgg(fig)
        draw(fig)
        fig.savefig(path, dpi=_DPI, metadata={"Software": None})
    return Path(path)


def _label_bars(ax, bars, fmt, **kwargs):
    kwargs.setdefault("fontsize", 7)
    ax.bar_label(bars, labels=[fmt(bar) for bar in bars], padding=2, **kwargs)


def _wrap(text, width):
    return textwrap.fill(text, width, break_long_words=False)


def _peer_family(name):
    """The library a GPU peer comes from, for its colour: cuDNN, cuBLAS, CuPy/cupyx or PyTorch."""
    for family in ("cuDNN", "cuBLAS"):
        if family in name:
            return family
    return "CuPy / cupyx" if name.lower().startswith("cupy") else "PyTorch ops"


_PEER_COLORS = {"cuDNN": "C0", "cuBLAS": "C1", "CuPy / cupyx": "C2", "PyTorch ops": "C3"}


def _speedups(data):
    """(workload label, [(peer, peer time / our time), ...]) for each row of ``gpu.json`` that
    has times; a row whose check failed says so in its label."""
    rows = [(r["label"] + ("" if r.get("ok", True) else " (check FAILED)"),
             [(peer, ms / r["ours_ms"]) for peer, ms in r["peers_ms"].items()])
            for r in data["rows"] if r.get("ours_ms") and r.get("peers_ms")]
    if not rows:
        raise ValueError("gpu.json has no row with ours_ms and peers_ms")
    return rows


def gpu_speedups(data, path):
    """Speed-up of ``merit.gpu`` over each peer (peer time / our time) per workload of ``gpu.json``.

    One horizontal bar group per workload, a bar per peer from 1 (as fast as the peer) to the
    speed-up, coloured by the peer's library and labelled with its name; log axis.
    """
    rows = _speedups(data)
    meta = data.get("meta", {})
    height = 0.8 / max(len(peers) for _, peers in rows)
    speedups = [s for _, peers in rows for _, s in peers]

    def draw(fig):
        from matplotlib.patches import Patch

        ax = fig.add_subplot()
        for i, (_label, peers) in enumerate(rows):
            y = len(rows) - 1 - i
            for j, (peer, speedup) in enumerate(peers):
                pos = y + 0.4 - height * (j + 0.5)
                ax.barh(pos, speedup - 1, left=1, height=height * 0.9,
                        color=_PEER_COLORS[_peer_family(peer)])
                ax.text(max(speedup, 1) * 1.04, pos, f"{speedup:.2f}x  {peer}", va="center",
                        fontsize=6.5)
        ax.set_yticks(range(len(rows) - 1, -1, -1), [_wrap(label, 48) for label, _ in rows],
                      fontsize=7)
        ax.set_xscale("log")
        ax.set_xlim(min(0.5, min(speedups) / 1.5), max(max(speedups), 1) * 8)
        ax.axvline(1, color="black", linewidth=1)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlabel("speed-up of merit.gpu = peer time / merit.gpu time (log scale; "
                      "> 1: merit.gpu is faster)")
        ax.grid(True, axis="x", which="both", alpha=0.3)
        ax.legend(handles=[Patch(color=c, label=f) for f, c in _PEER_COLORS.items()],
                  loc="lower right", fontsize=7, title="peer library", title_fontsize=7)
        versions = ", ".join(f"{k} {meta[k]}" for k in ("cupy", "torch") if k in meta)
        ax.set_title(f"merit.gpu vs peers (fp32 unless a row names tf32 / fp16 / bf16), median "
                     f"time per call: {meta.get('device', 'GPU')}"
                     + (f" ({versions})" if versions else ""))

    return _figure(path, (11, max(3.5, 0.55 * len(rows) + 1.6)), draw)


def _setting(setup):
    """A title fragment for a setup dict: lanes, TAUs, ALUs, DRAM bytes/cycle, read latency (other
    keys, such as the command or the date, are left out)."""
    names = {"lanes": "{} lanes", "taus": "{} TAU", "alus": "{} ALUs",
             "dram_bytes_per_cycle": "{} B/cycle DRAM", "latency": "read latency {} cycles"}
    return ", ".join(names[k].format(setup[k]) + ("s" if k == "taus" and setup[k] != 1 else "")
                     for k in names if k in setup)


def tau_utilization(data, path):
    """Utilization per workload on one TAU (``tau.json``), beside the paper's Table IX figure.

    Only the workloads of :data:`TAU_PAPER_ROWS` get a paper bar; the two are different settings
    (the paper: 4 TAUs of 32 lanes on full layers; ours: a slice on 1 TAU), as the legend says.
    """
    rows = data["workloads"]
    if not rows:
        raise ValueError("tau.json has no workloads")
    setup = data.get("setup", {})
    names = list(rows)

    def draw(fig):
        ax = fig.add_subplot()
        xs = range(len(names))
        ours = ax.bar([x - 0.2 if n in TAU_PAPER_ROWS else x for x, n in zip(xs, names,
                                                                            strict=True)],
                      [rows[n]["utilization"] for n in names], 0.4,
                      color="C0", label=f"{OURS_LABEL}, {setup.get('lanes', '?')} lanes")
        _label_bars(ax, ours, lambda b: f"{b.get_height():.2f}")
        paired = [(x, PAPER_TABLE_IX[TAU_PAPER_ROWS[n]]) for x, n in zip(xs, names, strict=True)
                  if n in TAU_PAPER_ROWS]
        if paired:
            paper = ax.bar([x + 0.2 for x, _ in paired], [u for _, u in paired], 0.4,
                           color="C7", label=PAPER_LABEL + ", Table IX")
            _label_bars(ax, paper, lambda b: f"{b.get_height():.2f}")
        ax.set_xticks(list(xs), [n + ("\n" + _wrap(f"paper: {TAU_PAPER_ROWS[n]}", 20)
                                      if n in TAU_PAPER_ROWS else "") for n in names], fontsize=7)
        ax.set(ylim=(0, 1.12), ylabel="utilization = useful ALU ops / (cycles x lanes)",
               title=f"Utilization on one TAU (Verilator, bit-exact): {_setting(setup)}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper right", fontsize=7)

    return _figure(path, (10, 4.8), draw)


_ROMAN = {"VIII": 8, "IX": 9}


def _std(row, key):
    """A row's standard-count figure (``key + "_std"``), else the older ALU-busy one."""
    value = row.get(key + "_std")
    return row.get(key) if value is None else value


def utilization_vs_paper(data, path):
    """Ours vs the paper per row of ``utilization.json``, one panel per paper table (VIII, IX).

    Bars: ours (RTL on a slice, the setup's TAUs and lanes) and the paper (full layer); a marker:
    the performance model on the full layer (``model_full``) where the row has one. Ticks are the
    rows' ``label`` (the paper's row name) where they have one; a row whose slice is the whole
    layer (``whole``) says so.
    """
    rows = data["rows"]
    tables = sorted({r["table"] for r in rows.values()},
                    key=lambda t: (_ROMAN.get(t, 99), t))
    if not tables:
        raise ValueError("utilization.json has no rows")
    setup = data.get("setup", {})
    from merit.paper import ROWS
    order = {r.name: i for i, r in enumerate(ROWS)}            # the paper's row order
    groups = {t: sorted([(n, r) for n, r in rows.items() if r["table"] == t],
                        key=lambda nr: (order.get(nr[0], len(order)), nr[0])) for t in tables}

    def draw(fig):
        axes = fig.subplots(1, len(tables), sharey=True, squeeze=False,
                            width_ratios=[len(groups[t]) + 1 for t in tables])[0]
        for ax, table in zip(axes, tables, strict=True):
            group = groups[table]
            xs = range(len(group))
            alone = [(x, r["one_tau"]) for x, (_, r) in zip(xs, group, strict=True)
                     if r.get("one_tau") is not None]
            width = 0.27 if alone else 0.4
            left = -width if alone else -0.2
            measured = [(x, _std(r, "utilization")) for x, (_, r) in zip(xs, group, strict=True)
                        if _std(r, "utilization") is not None]
            ours = ax.bar([x + left for x, _ in measured], [u for _, u in measured], width,
                          color="C0", label=f"ours (RTL on a slice, {setup.get('taus', '?')} "
                                            f"TAUs x {setup.get('lanes', '?')} lanes)")
            _label_bars(ax, ours, lambda b: f"{b.get_height():.2f}", label_type="center",
                        color="white", fontsize=6)
            if alone:
                bars = ax.bar([x for x, _ in alone], [u for _, u in alone], width, color="C2",
                              label=f"ours (RTL on a slice, one TAU of "
                                    f"{setup.get('lanes', '?')} lanes alone)")
                _label_bars(ax, bars, lambda b: f"{b.get_height():.2f}", label_type="center",
                            color="white", fontsize=6)
            paper = [(x, r["paper"]) for x, (_, r) in zip(xs, group, strict=True)
                     if r.get("paper") is not None]
            if paper:
                bars = ax.bar([x - left for x, _ in paper], [u for _, u in paper], width,
                              color="C7", label=PAPER_LABEL)
                _label_bars(ax, bars, lambda b: f"{b.get_height():.2f}", label_type="center",
                            color="white", fontsize=6)
            model = [(x, _std(r, "model_full")) for x, (_, r) in zip(xs, group, strict=True)
                     if _std(r, "model_full") is not None]
            if model:
                ax.plot([x + left for x, _ in model], [u for _, u in model], linestyle="none",
                        marker="D", color="black", markersize=5,
                        label="performance model (full layer)")
            ax.set_xticks(list(xs), [r.get("label", n) + (" (whole layer)" if r.get("whole")
                                                          else "") for n, r in group],
                          fontsize=7, rotation=35, ha="right")
            ax.set(ylim=(0, 1.12), title=f"Table {table} rows")
            ax.grid(True, axis="y", alpha=0.3)
        axes[0].set_ylabel("utilization = standard op count / (cycles x ALUs)")
        handles = {}
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, handle)
        fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=4,
                   fontsize=7)
        fig.suptitle(f"Utilization, ours ({_setting(setup)}) vs the paper", fontsize=10)

    return _figure(path, (max(7.0, 0.9 * len(rows) + 3), 4.8), draw)


def utilization_scaling(data, path):
    """Fig. 15 of the paper: utilization vs number of ALUs (``utilization.json["scaling"]``).

    Solid lines and filled markers: RTL measurements (missing points left out); dashed lines: the
    performance model; one colour per workload; log2 axis.
    """
    scaling = data["scaling"]
    alus = scaling["alus"]
    names = sorted(set(scaling.get("model", {})) | set(scaling.get("rtl", {})))
    if not alus or not names:
        raise ValueError("utilization.json has no scaling points")
    setup = data.get("setup", {})

    def draw(fig):
        from matplotlib.lines import Line2D

        ax = fig.add_subplot()
        for i, name in enumerate(names):
            label = name
            for key, style, marker in (("model", "--", None), ("rtl", "-", "o")):
                values = scaling.get(key, {}).get(name)
                if not values:
                    continue
                pts = [(a, u) for a, u in zip(alus, values, strict=True) if u is not None]
                if pts:
                    ax.plot(*zip(*pts, strict=True), linestyle=style, marker=marker,
                            color=f"C{i % 10}", label=label)
                    label = None
        ax.set_xscale("log", base=2)
        ax.set_xticks(alus, [str(a) for a in alus])
        ax.set(ylim=(0, 1.05), xlabel="number of ALUs (lanes x TAUs, log2)",
               ylabel="utilization = useful ALU ops / (cycles x ALUs)",
               title="Utilization vs ALUs (as the paper's Fig. 15): TAUs of " + _setting(
                   {k: v for k, v in setup.items() if k != "taus"}))
        ax.grid(True, which="both", alpha=0.3)
        first = ax.legend(loc="lower left", fontsize=7, title="workload", title_fontsize=7)
        ax.add_artist(first)
        ax.legend(handles=[Line2D([], [], color="gray", marker="o", label="RTL (Verilator)"),
                           Line2D([], [], color="gray", linestyle="--",
                                  label="performance model")], loc="upper right", fontsize=7)

    return _figure(path, (8, 5), draw)


def golden_speed(data, path):
    """Time per layer of the golden model vs im2col + matmul (``golden.json["speed"]``)."""
    rows = data["speed"]
    if not rows:
        raise ValueError("golden.json has no speed rows")
    machine = data.get("machine", {})

    def draw(fig):
        ax = fig.add_subplot()
        xs = range(len(rows))
        for offset, key, label, color in ((-0.2, "golden_s", "golden model (merit.workloads)",
                                           "C0"),
                                          (0.2, "im2col_s", "im2col + matmul (numpy)", "C7")):
            bars = ax.bar([x + offset for x in xs], [1e3 * r[key] for r in rows], 0.4,
                          color=color, label=label)
            _label_bars(ax, bars, lambda b: f"{b.get_height():.1f} ms")
        ax.set_xticks(list(xs), [f"{r['layer']}\n{r['macs'] / 1e6:,.0f} M MACs, golden / im2col"
                                 f" = {r['ratio']:.2f}" for r in rows], fontsize=8)
        ax.set(ylabel="time per layer (ms, best of 10)",
               title=f"Golden model speed, batch 1, float32\n{machine.get('processor', '?')}, "
                     f"{machine.get('cpus', '?')} CPUs, numpy {machine.get('numpy', '?')}, "
                     f"BLAS threads: {machine.get('blas_threads', '?')}")
        ax.margins(y=0.15)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper left", fontsize=7)

    return _figure(path, (7, 4.2), draw)


def golden_tokens(data, path):
    """Lexical tokens per kernel, ours vs the paper's Table IV (``golden.json["tokens"]``).

    Per kernel four stacked bars (identifiers, operators on top): MERIT (our C body for the GPU,
    closest to the paper's 'MERIT on GPU'), our naive loops, and the paper's two columns.
    """
    rows = data["tokens"]
    if not rows:
        raise ValueError("golden.json has no token rows")
    series = [("ours: MERIT (definition + C body)", "C0",
               lambda r: (r["merit_c_identifiers"], r["merit_c_operators"])),
              ("ours: naive loops (Python)", "#9ecae1",
               lambda r: (r["naive_identifiers"], r["naive_operators"])),
              ("paper: MERIT (C++/CUDA)", "C7",
               lambda r: (r["paper"]["merit_identifiers"], r["paper"]["merit_operators"])),
              ("paper: naive (C++/CUDA)", "#d9d9d9",
               lambda r: (r["paper"]["naive_identifiers"], r["paper"]["naive_operators"]))]

    def draw(fig):
        from matplotlib.patches import Patch

        ax = fig.add_subplot()
        xs = range(len(rows))
        width = 0.8 / len(series)
        for k, (label, color, counts) in enumerate(series):
            pos = [x - 0.4 + width * (k + 0.5) for x in xs]
            idents, ops = zip(*(counts(r) for r in rows), strict=True)
            ax.bar(pos, idents, width * 0.95, color=color, label=label, edgecolor="black",
                   linewidth=0.3)
            bars = ax.bar(pos, ops, width * 0.95, bottom=idents, color=color, hatch="///",
                          edgecolor="black", linewidth=0.3)
            _label_bars(ax, bars, lambda b: f"{b.get_y() + b.get_height():.0f}")
        ax.set_xticks(list(xs), [r["kernel"] for r in rows], fontsize=8)
        ax.set(ylabel="lexical tokens (identifiers + operators)",
               title="Tokens per kernel as in the paper's Table IV: ours count Python/C tokens, "
                     "the paper C++/CUDA")
        ax.margins(y=0.1)
        ax.grid(True, axis="y", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        handles += [Patch(facecolor="white", edgecolor="black", label="identifiers"),
                    Patch(facecolor="white", edgecolor="black", hatch="///", label="operators")]
        ax.legend(handles=handles, loc="upper right", fontsize=7, ncols=2)

    return _figure(path, (10, 4.5), draw)


def area_split(data, path):
    """The TAU's logic and SRAM split into Table VII's parts, ours vs the paper (``area.json``).

    Parts are assigned as in ``bench.area`` (``cp*``; ``rp*`` and ``dma*``; the rest). The paper's
    shares are its Table VII percentages of chip area renormalized to its logic and its SRAM.
    """
    tau = next((b for b in data["blocks"] if b["block"].startswith("tau") and "error" not in b
                and len(b.get("submodules", {})) > 1), None)
    if tau is None:
        raise ValueError("area.json has no TAU block with submodules")
    parts = {part: [0.0, 0] for part in PAPER_TABLE_VII}
    for name, area in tau["submodules"].items():
        parts[_tau_part(name)][0] += area["area_nand2"]
        parts[_tau_part(name)][1] += area["sram_bits"]
    paper_totals = [sum(v[i] for v in PAPER_TABLE_VII.values()) for i in (0, 1)]

    def draw(fig):
        names = list(parts)
        xs = range(len(names))
        for i, (ax, what, total) in enumerate(zip(
                fig.subplots(1, 2, sharey=True),
                ("logic (ours: NAND2 eq.)", "SRAM (ours: bits; paper: area)"),
                (tau["area_nand2"], tau["sram_bits"]), strict=True)):
            ours = ax.bar([x - 0.2 for x in xs], [parts[n][i] / total if total else 0
                                                  for n in names], 0.4, color="C0",
                          label=f"ours: one TAU, {data.get('block_lanes', '?')} lanes, "
                                "generic cells")
            paper = ax.bar([x + 0.2 for x in xs], [PAPER_TABLE_VII[n][i] / paper_totals[i]
                                                   for n in names], 0.4, color="C7",
                           label="paper: 4 TAUs x 32 lanes, TSMC 28 nm (Table VII)")
            for bars in (ours, paper):
                _label_bars(ax, bars, lambda b: f"{100 * b.get_height():.0f}%")
            ax.set_xticks(list(xs), [_wrap(n, 14) for n in names], fontsize=8)
            ax.set(ylim=(0, 1.1), title=f"share of the TAU's {what}")
            ax.grid(True, axis="y", alpha=0.3)
        fig.axes[0].set_ylabel("share of the TAU (fraction)")
        fig.axes[0].legend(loc="upper left", fontsize=7)
        fig.suptitle("The TAU's area split into the parts of the paper's Table VII (Yosys, "
                     "generic cells)", fontsize=10)

    return _figure(path, (9, 4), draw)


# --- markdown ----------------------------------------------------------------------------------

def _table_end(lines, start):
    """Index of the first line after the first markdown table at or after ``start``, or None."""
    i = start
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    if i == len(lines):
        return None
    while i < len(lines) and lines[i].startswith("|"):
        i += 1
    return i


def _anchor(lines, heading):
    """Where the figure block goes: after the first table under ``heading`` (a line prefix; the
    first table of the file when None), else at the end of the file."""
    start = 0
    if heading is not None:
        start = next((i for i, line in enumerate(lines) if line.startswith(heading)), len(lines))
    end = _table_end(lines, start)
    if end is None:
        return len(lines) - 1 if lines[-1] == "" else len(lines)
    return end


def embed(markdown, images, *, heading=None):
    """Embed ``images`` ((alt text, file name) pairs) in ``markdown`` between :data:`BEGIN` and
    :data:`END`; return True if the file changed.

    An existing block is replaced in place; without one, the block goes after the first table
    under ``heading`` (see :func:`_anchor`). Idempotent.
    """
    path = Path(markdown)
    text = path.read_text()
    lines = text.split("\n")
    figures = []
    for alt, name in images:
        figures += ["", f"![{alt}]({name})"]
    if BEGIN in lines and END in lines[lines.index(BEGIN):]:
        begin = lines.index(BEGIN)
        end = lines.index(END, begin)
        lines[begin:end + 1] = [BEGIN, *figures[1:], END]
    else:
        at = _anchor(lines, heading)
        lines[at:at] = ["", BEGIN, *figures[1:], END]
    new = "\n".join(lines)
    if new != text:
        path.write_text(new)
    return new != text


#: markdown file -> (heading of the table the block follows or None, its figures: (JSON file,
#: PNG file, alt text, function)). The block of a markdown file holds the figures whose JSON exists.
FIGURES = {
    "gpu.md": (None, [("gpu.json", "gpu_speedups.png", "GPU speed-ups vs peers", gpu_speedups)]),
    "tau.md": (None, [("tau.json", "tau_utilization.png",
                       "utilization per workload on one TAU vs the paper", tau_utilization)]),
    "utilization.md": (None, [
        ("utilization.json", "utilization_vs_paper.png", "utilization, ours vs the paper",
         utilization_vs_paper),
        ("utilization.json", "utilization_scaling.png", "utilization vs number of ALUs",
         utilization_scaling)]),
    "golden.md": (None, [("golden.json", "golden_speed.png", "golden model speed vs im2col",
                          golden_speed)]),
    "tokens.md": (None, [("golden.json", "golden_tokens.png", "tokens per kernel vs the paper",
                          golden_tokens)]),
    "area.md": ("## The TAU split as in Table VII",
                [("area.json", "area_tau_split.png", "TAU area split vs Table VII", area_split)]),
}


def run(results="docs/results", log=print):
    """Write every figure of :data:`FIGURES` whose JSON is in ``results`` and embed it in its
    markdown file. Returns the paths written (PNGs and changed markdown files)."""
    results = Path(results)
    written = []
    for markdown, (heading, figures) in FIGURES.items():
        images = []
        for source, png, alt, draw in figures:
            if not (results / source).is_file():
                log(f"plots: {results / source} not found, {png} skipped")
                continue
            data = json.loads((results / source).read_text())
            try:
                written.append(draw(data, results / png))
            except (KeyError, ValueError, TypeError, ZeroDivisionError) as error:
                log(f"plots: {source} cannot be drawn as {png} ({type(error).__name__}: "
                    f"{error}), skipped")
                continue
            images.append((alt, png))
        if not images:
            continue
        if not (results / markdown).is_file():
            log(f"plots: {results / markdown} not found, "
                f"{', '.join(png for _, png in images)} not embedded")
            continue
        if embed(results / markdown, images, heading=heading):
            written.append(results / markdown)
    for path in written:
        log(f"plots: wrote {path}")
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.plots",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="docs/results",
                        help="folder with the JSON results and markdown (docs/results)")
    args = parser.parse_args(argv)
    run(args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
