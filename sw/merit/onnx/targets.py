"""A loaded network on the back ends: MERIT-z (the performance model, per layer and overall), the
GPU (every problem through ``merit.gpu``) and the Verilator model of named layers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["LayerPerf", "meritz_problems", "predict_network", "overall", "gpu_runner",
           "simulate_layers", "table_text", "plot"]


@dataclass
class LayerPerf:
    """One layer on MERIT-z (``merit.perf``).

    ``where`` is ``"meritz"`` (every problem has a MERIT-z program), ``"host"`` (LRN, softmax,
    elementwise, host fallbacks: the host computes them) or ``"view"`` (no data moves).
    ``cycles``, ``read_bytes``, ``write_bytes``, ``useful_ops`` sum the layer's kernels (a
    grouped convolution: one kernel per group); ``utilization = useful_ops / (cycles x lanes x
    taus)``; ``bound`` is the model's verdict of its largest kernel.
    """

    name: str
    op: str
    where: str
    macs: int
    kernels: int = 0
    cycles: int = 0
    useful_ops: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    utilization: float = 0.0
    bound: str = ""

    def as_dict(self):
        return asdict(self)


def meritz_problems(layer):
    """``[(problem, repeat)]`` that MERIT-z runs for ``layer`` (empty unless every problem has a
    MERIT-z program)."""
    from ..isa.programs import supported
    out = []
    for part in layer.parts:
        out += part.meritz or [(part.problem, 1)]
    if layer.kind != "merit" or not all(supported(p.strategy) for p, _ in out):
        return []
    return out


def predict_network(network, *, lanes=32, taus=4, dram_bytes_per_cycle=8, latency=20,
                    progress=None, select=None):
    """:class:`LayerPerf` of every layer of ``network`` on MERIT-z (``taus`` TAUs of ``lanes``
    lanes sharing ``dram_bytes_per_cycle``), from :func:`merit.perf.predict_problem`.
    ``select(layer)``: predict only those layers (the others are left out)."""
    from ..perf import predict_problem
    rows = []
    for ly in network.layers:
        if select is not None and not select(ly):
            continue
        if ly.kind == "view":
            rows.append(LayerPerf(ly.name, ly.op, "view", 0))
            continue
        problems = meritz_problems(ly)
        if not problems:
            rows.append(LayerPerf(ly.name, ly.op, "host", ly.macs))
            continue
        row = LayerPerf(ly.name, ly.op, "meritz", ly.macs)
        biggest = 0
        for problem, repeat in problems:
            p = predict_problem(problem, lanes=lanes, taus=taus,
                                dram_bytes_per_cycle=dram_bytes_per_cycle, latency=latency)
            row.kernels += repeat
            row.cycles += repeat * p.cycles
            row.useful_ops += repeat * p.useful_ops
            row.read_bytes += repeat * p.read_bytes
            row.write_bytes += repeat * p.write_bytes
            if p.cycles > biggest:
                biggest, row.bound = p.cycles, p.bound
        row.utilization = row.useful_ops / (row.cycles * lanes * taus)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def overall(rows, *, lanes=32, taus=4, select=None):
    """Utilization of the MERIT-z layers of ``rows`` together (``select(row)`` filters):
    their useful operations over their cycles x ALUs."""
    chosen = [r for r in rows if r.where == "meritz" and (select is None or select(r))]
    cycles = sum(r.cycles for r in chosen)
    ops = sum(r.useful_ops for r in chosen)
    return {"layers": len(chosen), "cycles": cycles, "useful_ops": ops,
            "dram_bytes": sum(r.read_bytes + r.write_bytes for r in chosen),
            "utilization": ops / (cycles * lanes * taus) if cycles else 0.0}


def table_text(rows, *, lanes=32, taus=4):
    """The per-layer table as text (what ``merit run --on meritz`` prints)."""
    head = (f"{'layer':<16} {'op':<26} {'where':<7} {'MACs':>12} {'kernels':>7} {'cycles':>11} "
            f"{'util':>6} {'DRAM bytes':>12}  bound")
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.where == "view":
            continue
        if r.where == "host":
            lines.append(f"{r.name:<16} {r.op:<26} {'host':<7} {r.macs:>12} {'':>7} {'':>11} "
                         f"{'':>6} {'':>12}  no MERIT-z program: runs on the host")
            continue
        lines.append(f"{r.name:<16} {r.op:<26} {'meritz':<7} {r.macs:>12} {r.kernels:>7} "
                     f"{r.cycles:>11} {r.utilization:>6.3f} {r.read_bytes + r.write_bytes:>12}"
                     f"  {r.bound}")
    o = overall(rows, lanes=lanes, taus=taus)
    lines.append(f"{'overall':<16} {'MERIT-z layers':<26} {'':<7} {'':>12} {'':>7} "
                 f"{o['cycles']:>11} {o['utilization']:>6.3f} {o['dram_bytes']:>12}")
    return "\n".join(lines)


def plot(rows, path, *, title="", lanes=32, taus=4):
    """Bar chart of cycles (log scale) and utilization per MERIT-z layer into ``path`` (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    chosen = [r for r in rows if r.where == "meritz"]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(6, 0.45 * len(chosen) + 2), 6),
                                   sharex=True)
    x = np.arange(len(chosen))
    ax1.bar(x, [r.cycles for r in chosen], color="#4477aa")
    ax1.set_yscale("log")
    ax1.set_ylabel("cycles")
    ax1.set_title(title or f"MERIT-z, {taus} TAUs x {lanes} lanes")
    ax2.bar(x, [r.utilization for r in chosen], color="#228833")
    ax2.axhline(overall(rows, lanes=lanes, taus=taus)["utilization"], color="k", ls="--",
                lw=1, label="overall")
    ax2.set_ylim(0, 1)
    ax2.set_ylabel("utilization")
    ax2.legend(loc="upper right")
    ax2.set_xticks(x, [f"{r.name}\n{r.op}" for r in chosen], rotation=90, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def gpu_runner(**kwargs):
    """A ``Network.run`` runner that executes every problem through ``merit.gpu.run`` and brings
    the result back to the host (needs CuPy and a CUDA GPU at run time)."""
    from .. import gpu as mg

    def runner(problem, arrays):
        arrays = [np.asarray(a) for a in arrays]
        dtype = np.float32 if any(a.dtype.kind == "f" for a in arrays) else np.int32
        out = mg.run(problem, *[a.astype(dtype, copy=False) for a in arrays], **kwargs)
        return out.get() if hasattr(out, "get") else np.asarray(out)
    return runner


def simulate_layers(qnet, names, *, lanes=8, simulate=None, progress=None, **kwargs):
    """Simulate the MERIT-z kernels of the named layers of a quantized network on the Verilator
    model, each with its shift (``simulate`` checks every output bit for bit against the golden
    ISA model and raises otherwise). Returns ``[(layer, kernel index, metrics)]``."""
    if simulate is None:
        from ..sim import simulate
    known = {ql.layer.name: ql for ql in qnet.layers}
    missing = [n for n in names if n not in known]
    if missing:
        raise ValueError(f"no layer {missing[0]!r}; layers: {', '.join(known)}")
    out = []
    for name in names:
        ql = known[name]
        if not ql.meritz:
            raise ValueError(f"layer {name!r} ({ql.layer.op}) has no MERIT-z program; MERIT-z "
                             f"layers: {', '.join(q.layer.name for q in qnet.layers if q.meritz)}")
        for k, (part, shift) in enumerate(zip(ql.layer.parts, ql.shifts, strict=True)):
            for problem, _ in part.meritz or [(part.problem, 1)]:
                metrics = simulate(problem, lanes=lanes, shift=shift, progress=progress,
                                   **kwargs)
                out.append((name, k, metrics))
    return out
