"""Draw ``docs/architecture.png``: the MERIT-z block diagram of ``docs/architecture.md``.

``python -m bench.archdiagram [OUT]`` (matplotlib, Agg backend; imported only when run).
"""

import sys

# (name, x, y, width, height, colour, label); coordinates in figure units
BOXES = [
    ("regs", 0.5, 11.0, 3.0, 1.2, "#dde8f5", "Regs (regs.py)\nAXI4-Lite, config, run/flush"),
    ("disp", 0.5, 8.6, 3.0, 1.2, "#dde8f5", "Dispatcher (dispatcher.py)\nparallel tiles"),
    ("arb", 0.5, 1.0, 3.0, 1.2, "#dde8f5", "Arbiter (arbiter.py)\nAXI4, round-robin"),
    ("looper", 5.0, 11.0, 3.2, 1.2, "#fff2cc", "TileLooper (tau.py)\nalloc, DMA requests, jobs"),
    ("step", 5.0, 8.6, 3.2, 1.2, "#fff2cc", "StepLooper (agu.py)\nbeats (warp, step)"),
    ("dma", 10.0, 11.0, 3.4, 1.2, "#e2f0d9", "DMA (dma.py)\nfootprint -> SRAM rows\n"
     "AXI4 reads (TAU m_axi)"),
    ("coll", 10.0, 8.6, 3.4, 1.2, "#e2f0d9", "Collector (collector.py)\nbank function"),
    ("tb", 10.0, 6.2, 3.4, 1.2, "#e2f0d9", "TileBuffer (banks.py)\nN banks + TileFifo"),
    ("agu", 5.0, 6.2, 3.2, 1.2, "#e2f0d9", "LaneAddressGenerator\n(agu.py) Eq. 10"),
    ("router", 5.0, 3.9, 3.2, 1.2, "#e2f0d9", "ButterflyRouter\n(butterfly.py)"),
    ("bfly", 10.0, 3.9, 3.4, 1.2, "#e2f0d9", "read Butterfly\n(butterfly.py) -> N lanes"),
    ("cp", 10.0, 1.0, 3.4, 1.6, "#fce4d6", "CP (sequencer.py, simd.py)\nSequencer -> SimdArray\n"
     "5 KB partial-result SRAM"),
    ("wp", 5.0, 1.0, 3.2, 1.2, "#fce4d6", "WP (wp.py)\nAXI4 write bursts"),
]

# (from, to, label)
ARROWS = [
    ("regs", "disp", "run / flush"),
    ("disp", "looper", "tiles"),
    ("looper", "dma", "request (base)"),
    ("looper", "step", "a tile"),
    ("dma", "coll", "rows"),
    ("coll", "tb", "write"),
    ("step", "agu", "beats"),
    ("agu", "router", "N tile addr"),
    ("router", "tb", "read (en, row)"),
    ("tb", "bfly", "rdata"),
    ("bfly", "cp", "rp0 / rp1"),
    ("cp", "wp", "out"),
    ("wp", "arb", "m_axi"),
]


def _centre(box):
    _, x, y, w, h, _, _ = box
    return x + w / 2, y + h / 2


def _edge(box, dx, dy, pad=0.12):
    """The point where the ray from ``box``'s centre along ``(dx, dy)`` leaves the box."""
    _, x, y, w, h, _, _ = box
    cx, cy = x + w / 2, y + h / 2
    tx = (w / 2 + pad) / abs(dx) if dx else float("inf")
    ty = (h / 2 + pad) / abs(dy) if dy else float("inf")
    t = min(tx, ty)
    return cx + t * dx, cy + t * dy


def draw(path="docs/architecture.png"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch, Polygon, Rectangle

    boxes = {b[0]: b for b in BOXES}
    fig, ax = plt.subplots(figsize=(12, 10))
    ax.set_xlim(0, 14)
    ax.set_ylim(0, 13)
    ax.axis("off")
    ax.add_patch(Rectangle((4.6, 0.6), 9.2, 12.0, fill=False, ls="--", ec="grey"))
    ax.text(13.7, 12.3, "TAU (tau.py), x T", ha="right", color="grey")
    rp = [(4.8, 3.7), (13.7, 3.7), (13.7, 10.0), (9.8, 10.0), (9.8, 7.6), (4.8, 7.6)]
    ax.add_patch(Polygon(rp, closed=True, fill=False, ls=":", ec="green"))
    ax.text(13.6, 3.45, "Read Pipeline RP0 / RP1 (rp.py)", ha="right", color="green", fontsize=8)
    for _name, x, y, w, h, colour, label in BOXES:
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=colour, ec="k"))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=8)
    for a, b, label in ARROWS:
        (cx0, cy0), (cx1, cy1) = _centre(boxes[a]), _centre(boxes[b])
        x0, y0 = _edge(boxes[a], cx1 - cx0, cy1 - cy0)
        x1, y1 = _edge(boxes[b], cx0 - cx1, cy0 - cy1)
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="->", shrinkA=0, shrinkB=0, color="k"))
        if label:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, label, fontsize=7, color="navy",
                    ha="center", va="center", bbox=dict(fc="white", ec="none", pad=0.5))
    ax.text(2.0, 12.5, "s_axil (AXI4-Lite)", ha="center", fontsize=8)
    ax.text(2.0, 0.4, "m_axi (AXI4) to DRAM", ha="center", fontsize=8)
    ax.set_title("MERIT-z: Top (Regs, Dispatcher, TAUs, Arbiter) and one TAU")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path


if __name__ == "__main__":
    print(draw(*sys.argv[1:2]))
