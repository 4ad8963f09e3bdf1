"""``merit plan WORKLOAD``: how a problem maps onto MERIT-z, as text and as a picture.

:func:`plan_text` lists, for a hardware architect, everything :func:`merit.compile.compile_problem`
decides and what :mod:`merit.perf` predicts: the problem in the paper's notation, the tiling and
lane grouping, per operand the footprint box (Eq. 9), its SRAM rows, bank layout (padding, XOR /
rotation hash), lane coefficients (Eq. 10) and hash property matrix H (Eq. 12, 16), the routing
through the butterflies, the DRAM layout, the program and the predicted cycles. :func:`plan_png`
draws the parallel tile grid over the output and, for one operand, the bank of every word of its
footprint with the words that one SIMD step reads, so that conflict-freedom can be seen.

A problem that cannot be mapped raises :class:`merit.compile.CompileError` or
:class:`merit.mapping.NoMapping` from the compiler, unchanged.
"""

from __future__ import annotations

import numpy as np

from .arch import RP_BYTES

__all__ = ["plan_text", "plan_png"]


def _kernel(problem, lanes, taus=1):
    from .compile import compile_problem, program_slots
    return compile_problem(problem, lanes=lanes, instructions=program_slots(problem), taus=taus)


def _check(problem, taus, dram_bytes_per_cycle):
    from .problem import Problem
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a merit.problem.Problem, not {type(problem).__name__}")
    from .perf import _check_bandwidth, _check_int
    _check_int("taus", taus, 1)
    _check_bandwidth(dram_bytes_per_cycle)


def _bank_text(bank):
    """A bank function in words."""
    if bank.is_identity:
        return "identity (bank = address mod N)"
    terms = [f"bank bit {j} ^= address bit {src}" for j, src in enumerate(bank.xor)
             if src is not None]
    return ("XOR hash: " + ", ".join(terms) if terms else "no XOR") + \
        (f"; rotate by {bank.rotate} bank bit(s)" if bank.rotate else "")


def _ahead(kernel):
    from .perf import _jobs
    return _jobs(kernel).ahead


def _matrix(rows, indent):
    """H as text: one line per address bit (LSB first), columns = lane bits (LSB first)."""
    return [f"{indent}bit {j:2d} | {' '.join(row)}" for j, row in enumerate(rows)]


def _address_bits(coeffs, bank):
    top = max([bank.bits] + [(abs(c) & -abs(c)).bit_length() for c in coeffs if c])
    return max(top, bank.hash_bits)


def _ports(kernel):
    """``(port, slot index, slot config, operand, operand report)`` per input slot."""
    from .isa.programs import operand_ports
    problem = kernel.problem
    ports = operand_ports(problem)
    seen = {0: 0, 1: 0}
    out = []
    for (port, _), op, rep in zip(ports, problem.operands, kernel.mapping.operands, strict=True):
        k = seen[port]
        seen[port] += 1
        out.append((port, k, kernel.config[f"rp{port}"][k], op, rep))
    return out


def plan_text(problem, *, lanes=32, taus=4, dram_bytes_per_cycle=8):
    """The plan of ``problem`` on MERIT-z as readable text.

    Parameters
    ----------
    problem : merit.problem.Problem
    lanes : int
        Lanes per TAU.
    taus : int
        TAUs sharing the DRAM port (for the prediction).
    dram_bytes_per_cycle : float
        DRAM bandwidth (for the prediction).

    Returns
    -------
    str
        Sections ``Problem``, ``Tiling``, ``Operands``, ``DRAM layout``, ``Program``,
        ``Performance``.
    """
    _check(problem, taus, dram_bytes_per_cycle)
    from .isa.asm import disassemble
    from .mapping.matrix import hash_property_matrix, property_matrix
    from .perf import predict

    kernel = _kernel(problem, lanes, taus)
    tiling = kernel.tiling
    m = lanes.bit_length() - 1
    out = [f"MERIT-z plan: {problem.name} ({lanes} lanes per TAU, {taus} TAU(s), DRAM "
           f"{dram_bytes_per_cycle:g} B/cycle)", ""]

    # ---- problem
    out += ["Problem",
            f"  strategy {type(problem.strategy).__name__}, parallel space p = "
            f"{tuple(problem.p_shape)}, accumulation space a = {tuple(problem.a_shape)}",
            "  inputs: " + ", ".join(f"{t.name} {tuple(t.shape)}" for t in problem.tensors),
            "  outputs: " + ", ".join(f"{o.name} {tuple(o.shape)}" for o in problem.outputs)]
    out += [f"  {line}" for line in problem.notation().splitlines()]
    out.append("")

    # ---- tiling
    grid = [-(-n // t) for n, t in zip(problem.p_shape, tiling.p_tile, strict=True)]
    a_grid = [-(-n // t) for n, t in zip(problem.a_shape, tiling.a_tile, strict=True)]
    outputs = int(np.prod(problem.p_shape))
    computed = len(kernel.tiles) * int(np.prod(tiling.p_tile))
    lane_map = ", ".join(f"lane bit {i} -> p{j}" for i, j in enumerate(tiling.lane_index))
    warps = int(np.prod(tiling.warps()))
    regs = int(kernel.config["regs"])
    out += ["Tiling",
            f"  parallel tile p_tile = {tuple(tiling.p_tile)}: grid {tuple(grid)} = "
            f"{len(kernel.tiles)} parallel tiles, dealt dynamically to the TAUs",
            f"  accumulation tile a_tile = {tuple(tiling.a_tile)}: grid {tuple(a_grid)} = "
            f"{int(np.prod(a_grid))} accumulation tile(s) per parallel tile (only the outermost "
            f"index is split)",
            f"  lane grouping: {lane_map}",
            f"  lanes per parallel index {tiling.lanes_per_index()}, warps per index "
            f"{tiling.warps()} = {warps} warps of {lanes} lanes per tile",
            f"  lane occupancy {outputs}/{computed} = {outputs / computed:.3f} (edge tiles "
            f"compute masked lanes)",
            f"  partial results: {regs} register(s) x {warps} warps = {regs * warps} of "
            f"{5120 * 8 // (32 * lanes)} CP SRAM rows (output stationary)",
            f"  RP tile FIFOs hold the tiles of {_ahead(kernel)} job(s) at once: the DMA "
            f"loads up to {_ahead(kernel) - 1} (parallel tile, accumulation tile) ahead of the CP",
            ""]

    # ---- operands
    out.append("Operands (footprint per (parallel tile, accumulation tile), Eq. 9)")
    for port, k, slot, op, rep in _ports(kernel):
        layout = rep.layout
        bank = layout.bank
        depth = RP_BYTES[port] // (2 * lanes)
        pad = layout.padding
        bank_text = _bank_text(bank)
        out += [f"  RP{port} slot {k}: tensor {op.tensor} ({op.stage}), "
                f"{op.transform.notation()}",
                f"    footprint box {tuple(layout.box)}, pitch {tuple(layout.pitch)} "
                f"({'no padding' if not pad else f'{pad} padding words'}), {layout.words} "
                f"words = {slot['rows']} SRAM rows of {lanes} (RP{port} holds {depth} rows)",
                f"    bank function: {bank_text}",
                f"    lane coefficients c (Eq. 10, lane bit 0 first): {tuple(rep.coeffs)}"]
        if not any(rep.coeffs):
            out.append("    every lane reads the same word (broadcast): no bank can conflict")
            out.append(f"    steps checked: {rep.steps} SIMD steps per tile, conflict-free")
            continue
        shared = [i for i, c in enumerate(rep.coeffs) if c == 0]
        if shared:
            out.append(f"    lane bits {shared} have c = 0: those lanes share words (multicast "
                       f"through the read butterfly)")
        bits = _address_bits(rep.coeffs, bank)
        H = property_matrix(rep.coeffs, bits)
        out.append(f"    H (Eq. 12): rows = address bits, columns = lane bits 0..{m - 1}")
        out += _matrix(H, "      ")
        if not bank.is_identity:
            RXH = hash_property_matrix(H, bank.xor_matrix(bits), bank.rotation_matrix())
            out.append("    R X H (Eq. 16): rows = bank bits")
            out += _matrix(RXH, "      ")
        state = ("conflict-free and routable" if rep.ok else
                 f"{rep.conflict_steps} conflicting, {rep.blocked_steps} blocked")
        out.append(f"    steps checked: {rep.steps} SIMD steps per tile, {state}")
    rot = max((rep.layout.bank.rotate for *_, rep in _ports(kernel)), default=0)
    omega = (m - 1).bit_length() if rot else 0
    out += [f"  routing: read butterfly {m} stages x {lanes} 2:1 multiplexers per RP "
            f"(multicast allowed); collector butterfly {m} stages"
            + (f" + {omega} omega (rotation) stage(s)" if omega else "") + "; every step of "
            "every operand checked by merit.mapping.analyze_operand", ""]

    # ---- DRAM
    out.append("DRAM layout (int16, dense row-major)")
    for t in problem.tensors:
        base = kernel.tensors[t.name]
        size = 2 * int(np.prod(t.shape))
        out.append(f"  {t.name:10} 0x{base:08x} .. 0x{base + size:08x}  {tuple(t.shape)} "
                   f"({size} bytes)")
    for name, base in kernel.outputs:
        size = 2 * outputs
        out.append(f"  {name:10} 0x{base:08x} .. 0x{base + size:08x}  {tuple(problem.p_shape)} "
                   f"({size} bytes, output)")
    out.append(f"  span {kernel.dram_bytes} bytes")
    out.append("")

    # ---- program
    prog = kernel.program
    out.append(f"Program ({len(prog.words)} instructions, {prog.regs} register(s); the k-th "
               f"reader of i0 / i1 reads RP0 / RP1 slot k)")
    out += [f"  {line}" for line in disassemble(prog).splitlines()]
    out.append("")

    # ---- performance
    out.append("Performance (merit.perf, docs/perf.md)")
    for n in sorted({1, taus}):
        p = predict(kernel, taus=n, dram_bytes_per_cycle=dram_bytes_per_cycle)
        out.append(f"  {n} TAU(s): {p.cycles} cycles, utilization {p.utilization:.3f}, "
                   f"bound by {p.bound}")
        if n == taus:
            t0 = p.per_tile[0]
            out += [f"    compute {p.compute_cycles} cycles per TAU; DRAM {p.dram_cycles} "
                    f"cycles of beats ({p.read_bytes} B read, {p.write_bytes} B written), "
                    f"{p.port_cycles} with the DMA data path; lane occupancy "
                    f"{p.lane_occupancy:.3f}",
                    f"    per parallel tile (first): {t0.compute_cycles} CP cycles, "
                    f"{t0.read_bytes} B read, {t0.write_bytes} B written, {t0.jobs} "
                    f"accumulation tile(s)"]
    return "\n".join(out) + "\n"


def _pick_operand(kernel, operand):
    """The slot to draw: ``operand`` (a tensor name), else the one whose SIMD step reads the most
    distinct words (a hashed or padded one among equals)."""
    ports = _ports(kernel)
    if operand is not None:
        for entry in ports:
            if entry[3].tensor == operand:
                return entry
        order = [t.name for t in kernel.problem.tensors]    # the problem's order (the compiler
        names = sorted((e[3].tensor for e in ports), key=order.index)  # may swap operands)
        raise ValueError(f"operand must name an input of the problem "
                         f"({', '.join(names)}), not {operand!r}")
    def interest(entry):
        rep = entry[4]
        plain = rep.layout.bank.is_identity and not rep.layout.padding
        return (len(set(_step_addresses(rep).tolist())), not plain)
    return max(ports, key=interest)


def _step_addresses(rep):
    """Tile addresses that the lanes of one SIMD step read (Eq. 10, lowest at 0)."""
    lanes = rep.layout.bank.lanes
    n = np.arange(lanes)
    offs = sum(np.int64(c) * ((n >> i) & 1) for i, c in enumerate(rep.coeffs))
    return offs - min(0, int(offs.min()))


def _draw_tiles(ax, kernel, pred):
    """The parallel tile grid over the two innermost parallel indices of the output."""
    from matplotlib.patches import Rectangle
    problem, tiling = kernel.problem, kernel.tiling
    shape = tuple(problem.p_shape)
    tile = tuple(tiling.p_tile)
    if len(shape) == 1:
        shape, tile = (1,) + shape, (1,) + tile
    h, w = shape[-2], shape[-1]
    th, tw = tile[-2], tile[-1]
    gh, gw = -(-h // th), -(-w // tw)
    ax.set_xlim(0, gw * tw)
    ax.set_ylim(gh * th, 0)
    ax.set_aspect("equal")
    taus = pred.taus
    cmap = _cmap(max(taus, 1))
    # the tiles of the first outer coordinates (every outer index at 0), in dispatch order
    index = {t.origin[-2:] if len(t.origin) > 1 else (0,) + t.origin: k
             for k, t in reversed(list(enumerate(pred.per_tile)))}
    for r in range(gh):
        for c in range(gw):
            k = index.get((r * th, c * tw), r * gw + c)
            tau = pred.per_tile[k].tau if k < len(pred.per_tile) else 0
            ax.add_patch(Rectangle((c * tw, r * th), tw, th, facecolor=cmap(tau),
                                   alpha=0.35, edgecolor="black", linewidth=1.2))
            ax.text(c * tw + tw / 2, r * th + th / 2, f"{k}\nTAU {tau}", ha="center",
                    va="center", fontsize=7)
    ax.add_patch(Rectangle((0, 0), w, h, fill=False, edgecolor="black", linewidth=2.5))
    if gw * tw > w or gh * th > h:
        ax.add_patch(Rectangle((w, 0), gw * tw - w, gh * th, facecolor="none", hatch="//",
                               edgecolor="grey", linewidth=0))
        ax.add_patch(Rectangle((0, h), w, gh * th - h, facecolor="none", hatch="//",
                               edgecolor="grey", linewidth=0))
    # the lanes of the first warp of tile 0 along these two indices
    coords = _lane_coords(kernel)
    ys, xs = (coords[-2], coords[-1]) if coords.shape[0] > 1 else (coords[0] * 0, coords[0])
    ax.scatter(xs + 0.5, ys + 0.5, s=6, color="black", zorder=3)
    outer = " x ".join(str(n) for n in shape[:-2]) or "1"
    last = len(problem.p_shape) - 1
    ax.set_title(f"parallel tiles {th}x{tw} over p{max(last - 1, 0)} x p{last} ({h}x{w}; "
                 f"outer {outer})\n"
                 f"number = dispatch order, colour = TAU (as the model deals them), "
                 f"dots = lanes of warp 0, hatched = masked", fontsize=8)
    ax.set_xlabel(f"p{len(problem.p_shape) - 1}")
    ax.set_ylabel(f"p{max(len(problem.p_shape) - 2, 0)}")


def _lane_coords(kernel):
    from .compile import lane_coords
    return lane_coords(kernel.tiling.lane_index, len(kernel.problem.p_shape))


def _cmap(n):
    import matplotlib
    return matplotlib.colormaps["tab20" if n <= 20 else "hsv"].resampled(max(n, 2))


def _draw_banks(ax, rep, name):
    """Footprint slice (two innermost axes, outer coordinates of lane 0's word): bank of every
    word as its colour, the words of one SIMD step outlined with their lane number."""
    from matplotlib.patches import Rectangle
    layout = rep.layout
    bank = layout.bank
    lanes = bank.lanes
    box = tuple(layout.box)
    pitch = tuple(layout.pitch)
    if len(box) == 1:
        cols = min(box[0], 2 * lanes)
        box, pitch = (-(-box[0] // cols), cols), (cols, 1)
    rows, cols = box[-2], box[-1]
    width = pitch[-2]                       # padding columns shown too
    step = _step_addresses(rep)
    outer = int(step[0]) - int(step[0]) % pitch[-3] if len(pitch) > 2 else 0
    rows_shown = min(rows, 40)
    addr = outer + np.arange(rows_shown)[:, None] * width + np.arange(width)[None, :]
    banks = bank.bank(addr).astype(float)
    banks[:, cols:] = np.nan
    cmap = _cmap(lanes)
    ax.imshow(banks, cmap=cmap, vmin=-0.5, vmax=lanes - 0.5, interpolation="nearest")
    if width > cols:
        ax.add_patch(Rectangle((cols - 0.5, -0.5), width - cols, rows_shown, facecolor="0.85",
                               edgecolor="none"))
    if rows_shown * width <= 900:
        for r in range(rows_shown):
            for c in range(cols):
                ax.text(c, r, str(int(banks[r, c])), ha="center", va="center", fontsize=5)
    inside = 0
    for a in step:
        rel = int(a) - outer
        r, c = divmod(rel, width)
        if 0 <= r < rows_shown and 0 <= c < width:
            inside += 1
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black",
                                   linewidth=1.5))
    hashed = _bank_text(bank).replace(" (bank = address mod N)", "")
    ax.set_title(f"{name}: footprint {tuple(layout.box)}, pitch {tuple(layout.pitch)}, bank "
                 f"{hashed}\ncolour / number = bank; outlined = the {inside} of {lanes} lane "
                 f"words of one step in this slice; grey = padding", fontsize=8)
    ax.set_xlabel("innermost axis (tile address step 1)")
    ax.set_ylabel(f"next axis (step {width})")


def _draw_sram(ax, rep, name):
    """The RP's SRAM as rows x banks: the words one SIMD step reads (one row per bank =
    conflict-free), each cell listing the lanes that read it (several = multicast)."""
    from matplotlib.patches import Rectangle
    bank = rep.layout.bank
    lanes = bank.lanes
    step = _step_addresses(rep)
    b, r = bank.locate(step)
    first = int(r.min())
    span = max(int(r.max()) - first + 1, 4)
    ax.set_xlim(-0.5, lanes - 0.5)
    ax.set_ylim(span - 0.5, -0.5)
    cmap = _cmap(lanes)
    readers = {}
    for lane in range(lanes):
        readers.setdefault((int(r[lane]) - first, int(b[lane])), []).append(lane)
    for (row, col), who in readers.items():
        ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, facecolor=cmap(col),
                               edgecolor="black", linewidth=0.8))
        ax.text(col, row, "\n".join(str(n) for n in who[:4]) + ("\n..." if len(who) > 4 else ""),
                ha="center", va="center", fontsize=5)
    ax.set_xticks(range(0, lanes, max(lanes // 8, 1)))
    ax.grid(True, color="0.9", linewidth=0.5)
    ax.set_axisbelow(True)
    rows_per_bank = [len({row for (row, col) in readers if col == k}) for k in range(lanes)]
    ok = max(rows_per_bank) <= 1
    ax.set_title(f"{name} in the SRAM: the words of one step (numbers = lanes)\n"
                 f"{len(readers)} words for {lanes} lanes, "
                 f"{'at most one row per bank: conflict-free' if ok else 'BANK CONFLICT'}",
                 fontsize=8)
    ax.set_xlabel("bank")
    ax.set_ylabel(f"SRAM row of the tile (from {first})")


def plan_png(problem, path, *, lanes=32, taus=4, dram_bytes_per_cycle=8, operand=None):
    """Draw the tiling and one operand's bank layout of ``problem`` into the PNG ``path``.

    Three panels: the parallel tile grid over the output (two innermost parallel indices), the
    bank of every word of one operand's footprint (colour = bank; the words one SIMD step reads
    outlined) and the same step in the banks x rows of the SRAM (one row per bank =
    conflict-free).

    Parameters
    ----------
    problem : merit.problem.Problem
    path : str or pathlib.Path
    lanes, taus, dram_bytes_per_cycle
        As :func:`plan_text` (``taus`` colours the tiles; the title gives the prediction).
    operand : str, optional
        Tensor to draw; default: the one whose SIMD step reads the most distinct words (a
        hashed or padded one among equals).

    Returns
    -------
    pathlib.Path
    """
    from pathlib import Path

    _check(problem, taus, dram_bytes_per_cycle)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .perf import predict
    kernel = _kernel(problem, lanes, taus)
    port, k, _, op, rep = _pick_operand(kernel, operand)
    pred = predict(kernel, taus=taus, dram_bytes_per_cycle=dram_bytes_per_cycle)
    fig, axes = plt.subplots(1, 3, figsize=(17, 6), gridspec_kw={"width_ratios": [1.2, 1.2, 1]})
    _draw_tiles(axes[0], kernel, pred)
    name = f"RP{port} slot {k} ({op.tensor})"
    _draw_banks(axes[1], rep, name)
    _draw_sram(axes[2], rep, name)
    fig.suptitle(f"MERIT-z plan: {problem.name}, p {tuple(problem.p_shape)}, a "
                 f"{tuple(problem.a_shape)}; tile p={tuple(kernel.tiling.p_tile)} "
                 f"a={tuple(kernel.tiling.a_tile)}; {lanes} lanes x {taus} TAU(s), "
                 f"{dram_bytes_per_cycle:g} B/cycle: {pred.cycles} cycles, utilization "
                 f"{pred.utilization:.2f} ({pred.bound})", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
