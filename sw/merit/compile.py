"""Problem + hardware parameters -> the kernel configuration of a MERIT-z TAU (``docs/tau.md``).

The values are plain nested dicts and lists of the fields of :mod:`merit.kernelcfg`; every value is
checked against its field's range before the kernel is returned (``CompileError`` naming the field,
the value and the range), so nothing is truncated on its way into the registers.

Placement rules (``docs/tau.md`` §3-5):

* a problem's P parallel indices are the hardware indices ``0 .. P-1``, its A accumulation indices
  ``0 .. A-1`` (the convention of ``merit.isa``: ``Program.with_levels`` pads inner levels); unused
  inner indices have extent 1;
* a tensor of D axes uses hardware axes ``4 - D .. 3``; unused outer axes have extent 1;
* a slot's tile is the full footprint box (Eq. 9) of one (parallel tile, accumulation tile), laid
  out row-major with local pitches ``lpitch`` and hashed into banks by a ``BankFunction``;
* a slot's axes that every footprint covers whole are merged into the axis above them
  (:func:`merged_rows`): the DMA reads the same words in fewer, longer DRAM rows.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from dataclasses import dataclass

import numpy as np

from . import kernelcfg
from .arch import CP_BYTES, RP_BYTES, RP_PORTS, TILE_ADDRESS_BITS
from .checks import check_ports, check_taus
from .kernelcfg import A_INDICES, AXES, P_INDICES
from .mapping.bank import BankFunction
from .mapping.search import warps_along
from .transform import Index, Transform

#: Mapped tiles, cheapest in DRAM traffic per output first, that the compiler weighs (under
#: each cap of :func:`search_caps`): it keeps the cheapest whose sizes are powers of two unless
#: :func:`merit.perf.predict` finds another MARGIN faster: one of these, or one of the RANKED
#: tiles that :func:`estimate_time` puts first under each cap (compute with the idle lanes of
#: edge tiles, DRAM with operand sharing).
ALTERNATIVES = 4
RANKED = 4
#: (the model is within 4.6 % of every 4 x 32-lane measurement, and two tilings of one problem
#: share its biases: a 2 % margin keeps the choice away from its noise)
MARGIN = 0.02
#: A kernel of more jobs than RANKED_JOBS is predicted on the first of its tiles (in dispatch
#: order) that hold PREFIX_JOBS jobs, its cycles scaled by its tiles (the model walks every
#: job: a whole VGG layer of 50,000 jobs would take seconds per candidate).
RANKED_JOBS = 2048
PREFIX_JOBS = 512
#: An input tensor lies this many bytes past its region's 64-byte boundary, one of these
#: (:func:`beat_aligned`: the offset whose footprint rows the DMA reads in the fewest beats); a
#: region has room for the largest
TENSOR_OFFSETS = (0, 2, 4, 6)
#: :func:`beat_aligned` counts the read beats of the first this many tiles in dispatch order
ALIGN_TILES = 4096

__all__ = ["P_INDICES", "A_INDICES", "AXES", "CompileError", "Kernel", "Tiling", "compile_problem",
           "lane_coords", "program_slots", "search_caps", "share_choice", "share_plan",
           "share_plans", "share_walk", "share_order", "share_order_key", "lockstep_warps",
           "estimate_time", "merged_rows", "beat_aligned", "slot_config", "tile_words", "hw_index",
           "without_zero_init", "outermost", "slide_choices"]



class CompileError(ValueError):
    """A problem that cannot be mapped onto the TAU; the message says which limit and why."""


@dataclass(frozen=True)
class Tiling:
    """How a problem is cut for one TAU.

    Attributes
    ----------
    p_tile : tuple of int
        Parallel tile size per problem parallel index.
    a_tile : tuple of int
        Accumulation tile size per problem accumulation index.
    lane_index : tuple of int
        Per lane bit (low first), the problem parallel index it moves.
    """

    p_tile: tuple
    a_tile: tuple
    lane_index: tuple

    def lanes_per_index(self):
        """``lanes_j``: lanes along each problem parallel index."""
        out = [1] * len(self.p_tile)
        for j in self.lane_index:
            out[j] *= 2
        return tuple(out)

    def warps(self):
        """Warps along each parallel index (``p_tile[j] / lanes_j``)."""
        return tuple(t // n for t, n in zip(self.p_tile, self.lanes_per_index(), strict=True))

    def edge_warps(self, origin, p_shape):
        """Warps along each parallel index that the tile at ``origin`` runs: those holding an
        output, ``ceil(min(p_tile, p_shape - origin) / lanes_j)``, at least one (a void tile of a
        sharing group, wholly outside, runs one); ``meritz.tau.step_looper.edge_groups``."""
        return tuple(max(1, min(w, -(-(n - o) // k)))
                     for w, n, o, k in zip(self.warps(), p_shape, origin, self.lanes_per_index(),
                                           strict=True))


def hw_index(count, limit, j):
    """Hardware position of problem index ``j`` of ``count`` (padding after the last)."""
    if not 0 <= j < count <= limit:
        raise CompileError(f"index {j} of {count} does not fit {limit} hardware indices")
    return j


def lane_coords(lane_index, n_par):
    """Array (n_par, lanes): the coordinate of each lane along each problem parallel index."""
    lanes = 1 << len(lane_index)
    out = np.zeros((n_par, lanes), dtype=np.int64)
    rank = [0] * n_par
    for i, j in enumerate(lane_index):
        out[j] += ((np.arange(lanes) >> i) & 1) << rank[j]
        rank[j] += 1
    return out


def _check_tiling(transform: Transform, tiling: Tiling, lanes):
    if len(tiling.p_tile) != len(transform.p) or len(tiling.a_tile) != len(transform.a):
        raise CompileError(
            f"tensor {transform.name!r}: tiling has {len(tiling.p_tile)} parallel and "
            f"{len(tiling.a_tile)} accumulation sizes, the transform {len(transform.p)} and "
            f"{len(transform.a)}")
    if 1 << len(tiling.lane_index) != lanes:
        raise CompileError(f"lane_index must name one parallel index per lane bit "
                           f"({lanes.bit_length() - 1} for {lanes} lanes), not "
                           f"{len(tiling.lane_index)}")
    for j, (t, n) in enumerate(zip(tiling.p_tile, tiling.lanes_per_index(), strict=True)):
        if t % n:
            raise CompileError(f"parallel tile size {t} of index p[{j}] must be a multiple of its "
                               f"{n} lanes")
    if len(transform.source_shape) > AXES:
        raise CompileError(f"tensor {transform.name!r} has {len(transform.source_shape)} axes; "
                           f"the TAU reads tensors of at most {AXES}")


def tile_words(transform, tiling, lpitch=None):
    """``(box, lpitch, words)`` of a slot's tile: footprint, local pitches, addresses spanned."""
    box = transform.footprint(tiling.p_tile, tiling.a_tile)
    if lpitch is None:
        lpitch = [1]
        for b in reversed(box[1:]):
            lpitch.insert(0, lpitch[0] * b)
    lpitch = tuple(int(p) for p in lpitch)
    return box, lpitch, box[0] * lpitch[0]


def slot_config(transform: Transform, tiling: Tiling, lanes, *, base=0, bank=None, lpitch=None,
                depth=None, dpitch=None):
    """The configuration values of one input slot reading ``transform``.

    Parameters
    ----------
    transform : Transform
    tiling : Tiling
    lanes : int
    base : int
        DRAM byte address of the tensor's element 0.
    bank : BankFunction, optional
        Default: identity hash.
    lpitch : sequence of int, optional
        Local pitch per tensor axis (padding); default dense.
    depth : int, optional
        Rows of the RP's SRAM; a tile larger than it is refused.
    dpitch : sequence of int, optional
        DRAM pitch (elements) per axis of ``transform``; default dense row-major over its
        ``source_shape``. A view of the tensor with its axes in another order
        (:func:`outermost`) gives the tensor's own pitches in that order.
    """
    _check_tiling(transform, tiling, lanes)
    bank = BankFunction(lanes) if bank is None else bank
    if bank.lanes != lanes:
        raise CompileError(f"bank function has {bank.lanes} banks, the TAU {lanes} lanes")
    nd = len(transform.source_shape)
    shift = AXES - nd
    box, lp, words = tile_words(transform, tiling, lpitch)
    rows = -(-words // lanes)
    if depth is not None and rows > depth:
        raise CompileError(f"tensor {transform.name!r}: a tile of footprint {box} needs {rows} "
                           f"SRAM rows, the RP has {depth}; use smaller tiles")
    if words >= 1 << (TILE_ADDRESS_BITS - 1):
        raise CompileError(f"tensor {transform.name!r}: a tile spans {words} addresses; tile "
                           f"addresses have {TILE_ADDRESS_BITS - 1} bits")
    n_p, n_a = len(transform.p), len(transform.a)
    axis = [0] * (P_INDICES + A_INDICES)
    stride = [0] * (P_INDICES + A_INDICES)
    lstep = [0] * (P_INDICES + A_INDICES)
    origin = 0
    for pos, idx in enumerate(transform.indices):
        if idx is None:
            continue
        hw = (hw_index(n_p, P_INDICES, pos) if pos < n_p
              else P_INDICES + hw_index(n_a, A_INDICES, pos - n_p))
        if not -128 <= idx.stride < 128:
            raise CompileError(f"tensor {transform.name!r}: stride {idx.stride} does not fit the "
                               f"8-bit stride field")
        axis[hw] = idx.axis + shift
        stride[hw] = idx.stride
        lstep[hw] = idx.stride * lp[idx.axis]
        if idx.stride < 0:
            t = (tiling.p_tile + tiling.a_tile)[pos]
            origin += (t - 1) * -idx.stride * lp[idx.axis]
    pad = [1] * shift

    def padded(values, fill):
        return [fill] * shift + [int(v) for v in values]

    dense = [1]
    for n in reversed(transform.source_shape[1:]):
        dense.insert(0, dense[0] * n)
    if dpitch is not None:
        dense = [int(v) for v in dpitch]
    xor, rotate = bank.register_fields()
    return {
        "enable": 1,
        "base": int(base),
        "axis": axis,
        "stride": stride,
        "lstep": lstep,
        "offset": padded(transform.offset, 0),
        "extent": pad + list(transform.source_shape),
        "box": pad + list(box),
        "clamp": padded([m == "clamp" for m in transform.boundary], 0),
        "lpitch": (padded(lp, lp[0] if lp else 1))[:AXES - 1],
        "dpitch": padded(dense, dense[0])[:AXES - 1],
        "origin": origin,
        "rows": rows,
        "xor": list(xor) + [0] * (6 - len(xor)),
        "rotate": rotate,
    }


def clipped_box(slot, transform, tiling, p_shape, a_shape):
    """``slot`` (a :func:`slot_config` value of ``transform`` under ``tiling``) with its footprint
    box cut to the parallel space along every index whose tile is at least its size.

    Such an index has one tile, at origin 0, so its lanes beyond the size are void on every job
    (a tile of 4 along an index of 3, the lanes' power of two): their results are never written,
    and the words only they would read need not be loaded. The box counts those indices at their
    size (``1 + sum (min(t_j, n_j) - 1) |s_j|`` per axis, Eq. 9 on the space's part of the tile);
    the tile's layout (``lpitch``, ``rows``, the bank function) stays that of the whole tile, so
    a void lane still reads an address of its own, a word of the tile that the DMA left as it
    was. A negative-stride term keeps its tile (the low corner, ``origin``, counts it). So the
    DMA reads, per job, only the words some valid lane reads; ``merit.perf`` counts the beats
    from the box as the DMA does."""
    t = tuple(tiling.p_tile) + tuple(tiling.a_tile)
    n = tuple(p_shape) + tuple(a_shape)
    box = tuple(1 + sum(((min(t[pos], n[pos]) if s > 0 else t[pos]) - 1) * abs(s)
                        for pos, s in terms) for terms in transform.terms)
    pad = len(slot["box"]) - len(box)
    if tuple(slot["box"][pad:]) == box:
        return slot
    return dict(slot, box=list(slot["box"][:pad]) + list(box))


def merged_rows(slot, sizes, tiles):
    """``slot`` (a :func:`slot_config` value) with its DRAM rows merged where they are contiguous:
    the same words read into the same tile addresses, in fewer and longer rows.

    The DMA reads a footprint row by row along axis 3, each row in whole 8-byte beats from the
    one holding its first word; a 3 x 3 kernel's weights are rows of 3 words, 1 1/2 beats each
    for 3 words' worth. Axes ``d`` and ``d + 1`` merge into one (a tensor axis of ``extent[d] *
    extent[d + 1]`` elements; each index moving along ``d`` moves along it ``extent[d + 1]``
    times as far) where every job's footprint covers axis ``d + 1`` whole from 0 (its box the
    extent, its indices in one tile, its offset and negative-stride terms 0), neither axis
    clamps, and the tile and the tensor are dense across the pair (``lpitch[d] = extent[d + 1]
    * lpitch[d + 1]``, ``dpitch`` likewise): then an element's DRAM and tile addresses, and
    whether it lies outside the tensor (``zero``: read as 0), are the same on the merged axis.
    Merged from the innermost pair outwards while the fields allow (``stride`` 8 bits, ``extent``
    and ``box`` 16); the axes above move up by one, axis 0 becomes 1 long.

    ``sizes``, ``tiles``: ``p_size + a_size`` and ``p_tile + a_tile`` (hardware indices).
    """
    s = {k: list(v) if isinstance(v, list) else v for k, v in slot.items()}
    while (d := _mergeable(s, sizes, tiles)) is not None:
        n = s["extent"][d + 1]
        lp, dp = list(s["lpitch"]) + [1], list(s["dpitch"]) + [1]
        merged = {"extent": s["extent"][d] * n, "box": s["box"][d] * n,
                  "offset": s["offset"][d] * n, "clamp": 0}
        for j, stride in enumerate(s["stride"]):
            if stride:
                s["stride"][j] *= n if s["axis"][j] == d else 1
                s["axis"][j] += s["axis"][j] <= d
        for key, fill in (("extent", 1), ("box", 1), ("offset", 0), ("clamp", 0)):
            s[key] = [fill] + s[key][:d] + [merged[key]] + s[key][d + 2:]
        for key, pitch in (("lpitch", lp), ("dpitch", dp)):
            s[key] = ([pitch[0]] + pitch[:d] + pitch[d + 1:])[:AXES - 1]
    return s


def _mergeable(s, sizes, tiles):
    """The innermost axis ``d`` that :func:`merged_rows` merges into ``d + 1``, or None."""
    lp, dp = list(s["lpitch"]) + [1], list(s["dpitch"]) + [1]
    moving = [j for j, stride in enumerate(s["stride"]) if stride]
    for d in range(AXES - 2, -1, -1):
        n = s["extent"][d + 1]
        if s["extent"][d] == 1:
            continue
        inner = [j for j in moving if s["axis"][j] == d + 1]
        low = s["offset"][d + 1] + sum((tiles[j] - 1) * s["stride"][j] for j in inner
                                       if s["stride"][j] < 0)
        if not (s["box"][d + 1] == n and low == 0 and not s["clamp"][d] and not s["clamp"][d + 1]
                and all(tiles[j] >= sizes[j] for j in inner)
                and lp[d] == n * lp[d + 1] and dp[d] == n * dp[d + 1]):
            continue
        if all(-128 <= s["stride"][j] * n < 128 for j in moving if s["axis"][j] == d) \
                and s["extent"][d] * n < 1 << 16 and s["box"][d] * n < 1 << 16 \
                and -(1 << 15) <= s["offset"][d] * n < 1 << 15:
            return d
    return None


def outermost(transform, axis):
    """``(view, dpitch)``: ``transform`` read through a view of its tensor whose axis ``axis``
    comes first (outermost), the others in their order, and the tensor's DRAM pitches of the
    view's axes. The DMA walks a slot's axes 0..2 in order and places the rows row-major in the
    tile, so the view's tile has that axis outermost (a slide along it keeps the overlap as one
    run of rows, ``Kernel.slide``); the DRAM addresses are the tensor's own. The innermost axis
    (the DRAM row) stays innermost: ``axis`` must be another."""
    shape = transform.source_shape
    n = len(shape)
    if not 0 <= axis < n - 1:
        raise CompileError(f"tensor {transform.name!r}: axis {axis} cannot be laid outermost "
                           f"(axes 0..{n - 2}; the innermost axis is the DRAM row)")
    order = [axis] + [d for d in range(n) if d != axis]
    where = {d: i for i, d in enumerate(order)}
    dense = [1]
    for m in reversed(shape[1:]):
        dense.insert(0, dense[0] * m)

    def moved(idx):
        return None if idx is None else Index(where[idx.axis], idx.stride, idx.offset)

    view = Transform([shape[d] for d in order], [moved(i) for i in transform.p],
                     [moved(i) for i in transform.a],
                     boundary=[transform.boundary[d] for d in order],
                     name=transform.name if transform.named else None)
    return view, [dense[d] for d in order]


def slide_choices(problem, shift=0):
    """The slides :func:`compile_problem` weighs (``slide=True``): ``(operand, index)`` for each
    operand alone in its RP and each parallel index that moves it forward (a positive stride)
    along an axis other than its innermost that another index moves along too: laid outermost
    (:func:`outermost`), the operand's footprint moves along it from one tile to the next along
    that index, overlapping the last."""
    from .isa.programs import operand_ports
    ports = [r for r, _ in operand_ports(problem, shift=shift)]
    n_p = len(problem.p_shape)
    out = []
    for k, op in enumerate(problem.operands):
        if ports.count(ports[k]) != 1:
            continue
        tr = op.transform
        for j in range(n_p):
            idx = tr.indices[j]
            # another index moving the same axis makes the footprint's box along it longer
            # than the move (alone, the next tile's footprint would not overlap)
            if idx is not None and idx.stride > 0 and idx.axis < len(tr.source_shape) - 1 \
                    and problem.p_shape[j] > 1 and any(
                        i is not None and i.axis == idx.axis
                        for pos, i in enumerate(tr.indices) if pos != j):
                out.append((k, j))
    return out


def _slide_ok(slot, j, p_tile, lanes):
    """Whether ``slot`` (configured) slides along parallel index ``j`` (``Kernel.slide``): the
    axis ``j`` moves along is the outermost of the slot's layout (every axis above it one
    element), ``j`` moves the footprint forward by ``delta`` < its box along that axis, and
    the tile's base then moves by whole SRAM rows that keep every word in its bank, the new
    rows too (the bank function hashes the address within the tile,
    ``merit.mapping.BankFunction``, and the DMA writes the new part as a tile of its own right
    after the old one: ``delta`` and the box along the axis, each times the axis's pitch, are
    multiples of ``2**hash_bits``)."""
    axis, stride = slot["axis"][j], slot["stride"][j]
    if stride <= 0 or any(b != 1 for b in slot["box"][:axis]):
        return False
    delta = stride * p_tile[j]
    if not 0 < delta < slot["box"][axis]:
        return False
    lpitch = list(slot["lpitch"]) + [1]
    hash_bits = max([lanes.bit_length() - 1] + [x + 1 for x in slot["xor"] if x])
    return (delta * lpitch[axis]) % (1 << hash_bits) == 0 \
        and (slot["box"][axis] * lpitch[axis]) % (1 << hash_bits) == 0


def _slide_layout_ok(view, j, lanes, tile_p, tile_a, layout):
    """The mapping search's test of a sliding operand's layout (``Kernel.slide``, the view of
    :func:`outermost`): a move along parallel index ``j`` (the view's axis 0) by less than the
    box keeps the tile's rows whole and its words in their banks (:func:`_slide_ok`'s rule on the
    layout's pitch and bank function)."""
    delta = view.indices[j].stride * tile_p[j]
    if delta >= layout.box[0]:
        return True         # no slide with these tiles: any layout (the kernel loads whole)
    align = 1 << layout.bank.hash_bits
    return (delta * layout.pitch[0]) % align == 0 and layout.words % align == 0


def without_zero_init(program):
    """``program`` without its leading instructions that only set a register to 0.

    The first instructions of the outermost prologue (``Pre_1``, run once per output, at its
    first accumulation step) often clear an accumulator (``add r0, 0, 0, 0``). The Compute
    Pipeline clears a lane group's registers when it starts the group's first accumulation tile
    (``meritz.tau.cp.sequencer``: ``CLEAR``; a register reads 0 until written), as the ISA
    model starts from zero registers (:func:`merit.isa.execute`), so such an instruction
    costs an issue cycle a warp and changes nothing. Left out: each leading instruction of
    ``Pre_1`` that writes a register (not indexed) from constants and immediates alone, with
    the value 0; the range table moves down with the words. A program without one is returned
    as it is.
    """
    from dataclasses import replace

    from .isa.encoding import N_REGS, OPERAND_CONST, Op
    from .isa.interp import step

    codes = program.instructions
    prologue = program.begs[-2] if len(program.begs) > 1 else 0
    n = 0
    while n < min(prologue, len(codes) - 1):
        ins = codes[n]
        if ins.op in (Op.OUT, Op.INDEX, Op.LOOKUP) or ins.x or not ins.writes_reg \
                or any(code < OPERAND_CONST for code in ins.reads()):
            break
        regs = np.zeros((N_REGS, 1), dtype=np.int64)
        step(ins, regs, consts=program.consts)
        if regs[ins.d, 0] != 0:
            break
        n += 1
    if not n:
        return program
    return replace(program, words=program.words[n:],
                   begs=tuple(max(b - n, 0) for b in program.begs),
                   ends=tuple(e - n for e in program.ends))


def beat_aligned(kernel, offsets=TENSOR_OFFSETS, tiles=ALIGN_TILES):
    """``kernel`` with each input tensor moved to the byte offset of ``offsets`` past its
    address (the 64-byte boundary of its region, which has room for the largest) whose
    footprint rows the DMA reads in the fewest 8-byte beats over the first ``tiles`` tiles in
    dispatch order (:func:`merit.perf.slot_read_beats`, summed over the slots that read the
    tensor; ties: the smaller offset, so a kernel that gains nothing is unchanged).

    A row of a footprint costs the beats it touches: a 3 x 3 convolution's row of 10 words
    starting one word before an 8-word tile edge starts 6 bytes into a beat and touches 4 beats,
    the same row of a tensor 2 bytes further touches 3. The DMA reads a row from any 2-byte
    address (``meritz.tau.dma``) and the processor's configuration names each tensor by its
    address, so where a tensor lies is the compiler's choice, like its tiles."""
    import dataclasses

    from .perf import slot_read_beats
    head = kernel.tiles[:tiles]
    slots = [s for r in ("rp0", "rp1") for s in kernel.config[r] if s]
    config, tensors = kernel.config, dict(kernel.tensors)
    for name, address in kernel.tensors.items():
        mine = [s for s in slots if s["base"] == address]
        if not mine:
            continue
        best = None
        for offset in offsets:
            moved = [dict(s, base=address + offset) for s in mine]
            beats = sum(slot_read_beats(kernel, s, head) for s in moved)
            if best is None or beats < best[0]:
                best = (beats, offset)
        if best[1]:
            if config is kernel.config:
                config = dict(kernel.config)
                for r in ("rp0", "rp1"):
                    config[r] = [dict(s) for s in kernel.config[r]]
            for r in ("rp0", "rp1"):
                for s in config[r]:
                    if s and s["base"] == address:
                        s["base"] = address + best[1]
            tensors[name] = address + best[1]
    if config is kernel.config:
        return kernel
    return dataclasses.replace(kernel, config=config, tensors=tensors)


# ---- a whole kernel ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kernel:
    """Everything a TAU run needs, from :func:`compile_problem`.

    Attributes
    ----------
    problem, program, lanes, tiling
    mapping : merit.mapping.MappingReport
        The tile / layout / hash choice (conflict-free, routable).
    config : dict
        Values of ``meritz.kernelcfg.layout(...)`` (pack them with ``meritz.kernelcfg.pack``).
    tensors : dict
        Tensor name -> DRAM byte address (int16, dense row-major).
    outputs : tuple of (name, address)
        Output tensors (int16, dense, of ``problem.p_shape``, or of the output's ``shape`` for
        an affine output map, :class:`merit.problem.Output`), in ``out`` instruction order: the
        tensor's address (``config["out_base"]`` adds the map's offset).
    dram_bytes : int
        Bytes of DRAM the layout spans.
    tiles : tuple of tuple
        Parallel tile origins, in dispatch order.
    useful_ops : int
        ALU operations of the problem (instructions executed x outputs), the utilization
        numerator of the utilization (``docs/perf.md``).
    sharing : tuple of (int, int), or None
        Two-dimensional operand sharing chosen by ``compile_problem`` (by default where
        :func:`merit.perf.predict` finds it faster than 1-D; always with ``share_dims=2``):
        ``((slot, log2 of its group), (slot, log2))``, the first on the low TAU-index bits
        (:func:`share_plan`), in ``config`` as ``share_slot`` / ``share_log2`` and
        ``share2_slot`` / ``share2_log2``: the processor deals the block walk of
        :func:`share_walk` (``meritz.dispatcher``). None: 1-D sharing (``share_slot``,
        ``share_log2``, :func:`share_choice`) or none, which is also what ``share_dims=2``
        gives where the best plan shares no slot. One slot ``((slot, log2),)`` (``share_dims=2,
        share_counts=(1,)``, or the default where the model finds it faster): that slot shared on
        the block walk, a static deal of the tiles to the TAUs (each keeps its place in the
        walk), in ``config`` as ``share_slot`` / ``share_log2`` with ``share_block`` = 1.
    hold : bool
        Footprint reuse, chosen by ``compile_problem(hold=True)``: a slot alone in its RP and
        not shared between TAUs keeps its SRAM tile when the TAU's next job has the identical
        footprint (origins equal on every index the slot moves along), and the DMA skips that
        load; such a slot may take its whole RP. ``config["hold"]`` names the held RPs
        (:func:`held_rps`; the processor's ``meritz.tau.tile_looper``), which
        :func:`merit.perf.predict` models.
    slide : tuple of (int, int), or None
        Sliding-window reuse, chosen by ``compile_problem(slide=True)`` (a model of the
        processor, not built in it): ``(slot, index)``, the slot (DMA numbering: RP0's slots,
        then RP1's) alone in its RP, not shared, whose footprint moves forward along the
        outermost axis of its layout (:func:`outermost`) by less than its box from one tile to
        the next along parallel ``index``. A TAU's job whose footprint is its previous job's
        moved so keeps the overlap: the tile's base moves forward by the rows of the move
        (freed at the front when the previous job is done), the DMA loads only the new rows,
        appended after the tile; the same footprint is held. The tiles are dealt on the slide
        walk (``merit.perf``: the block walk with ``index`` innermost, each TAU keeping its place
        in its block).
    """

    problem: object
    program: object
    lanes: int
    tiling: Tiling
    mapping: object
    config: dict
    tensors: dict
    outputs: tuple
    dram_bytes: int
    tiles: tuple
    useful_ops: int
    sharing: tuple = None
    hold: bool = False
    slide: tuple = None

    @property
    def shares(self):
        """The operand sharing the processor deals, as text: ``"slot S / 2^L"`` for each shared
        slot and its group's log2 size (`` x `` between the two of 2-D sharing, `` block`` after
        one slot on the block walk), ``"none"``."""
        if self.sharing:
            return " x ".join(f"slot {s} / 2^{v}" for s, v in self.sharing) + (
                " block" if len(self.sharing) == 1 else "")
        if self.config.get("share_log2"):
            return f"slot {self.config['share_slot']} / 2^{self.config['share_log2']}"
        return "none"


def _lane_index(grouping, n_par):
    """The TAU's lane map of a mapping lane grouping, or CompileError if it has none."""
    index = [j for j, _ in grouping.bits]
    for j in range(n_par):
        bits = [b for jj, b in grouping.bits if jj == j]
        if bits != list(range(len(bits))):
            raise CompileError(f"lane grouping {grouping.bits}: the lanes of parallel index {j} "
                               f"must take its low tile-coordinate bits in order")
    if index != sorted(index, reverse=True):
        raise CompileError(f"lane grouping {grouping.bits}: inner parallel indices must take the "
                           f"low lane bits (the CP's lane fields)")
    return tuple(index)


def program_slots(problem, shift=0):
    """Instruction slots a TAU needs for ``problem``: 16, or 24 for longer programs (bilateral).

    A TAU alone holds either; the processor's register map fits 16 under the 0.5 KB of §V-A
    (``docs/decisions.md``)."""
    from .isa.programs import program_for
    return 16 if len(program_for(problem, shift=shift).words) <= 16 else 24


def _check_hardware(lanes, rp_bytes, cp_bytes, dram_base):
    """``(lanes, rp_bytes, cp_bytes)`` checked: lanes a power of two up to 2**LANE_BITS, SRAMs of
    whole rows (at least two per RP: double buffering), an even DRAM base."""
    lanes = kernelcfg.check_lanes(lanes)
    if isinstance(rp_bytes, (str, bytes)) or not hasattr(rp_bytes, "__len__") \
            or len(rp_bytes) != 2:
        raise TypeError(f"rp_bytes must be a pair (RP0 bytes, RP1 bytes), not {rp_bytes!r}")
    row = 2 * lanes
    for r, size in enumerate(rp_bytes):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"rp_bytes[{r}] must be an integer, not {size!r}")
        if size < 2 * row or size % row:
            raise ValueError(f"rp_bytes[{r}] must be whole SRAM rows of {lanes} lanes x 2 bytes "
                             f"({row} bytes), at least two (double buffering): a multiple of "
                             f"{row} from {2 * row}, not {size}")
    if isinstance(cp_bytes, bool) or not isinstance(cp_bytes, int):
        raise TypeError(f"cp_bytes must be an integer, not {cp_bytes!r}")
    if cp_bytes < 4 * lanes or cp_bytes % (4 * lanes):
        raise ValueError(f"cp_bytes must be whole rows of {lanes} lanes x 4 bytes: a multiple "
                         f"of {4 * lanes}, not {cp_bytes}")
    if isinstance(dram_base, bool) or not isinstance(dram_base, int):
        raise TypeError(f"dram_base must be an integer, not {dram_base!r}")
    if dram_base < 0 or dram_base % 2:
        raise ValueError(f"dram_base must be an even byte address >= 0, not {dram_base}")
    return lanes, tuple(rp_bytes), cp_bytes


def _check_fields(values, fields, problem, hint=""):
    """:func:`merit.kernelcfg.check_config` as a CompileError naming the problem."""
    try:
        kernelcfg.check_config(values, fields, where=f"problem {problem.name!r}")
    except ValueError as e:
        raise CompileError(f"{e}{hint}") from None


def _runs(tiles, dep):
    """Lengths of the runs of consecutive tiles whose origins agree on the indices ``dep``."""
    runs, key = [], None
    for t in tiles:
        k = tuple(t[j] for j in dep)
        if runs and k == key:
            runs[-1] += 1
        else:
            runs.append(1)
            key = k
    return runs


def _run_inner(shape, p_tile, dep):
    """How many outer parallel indices set a group's run (:func:`share_order_key`): those up to
    the innermost index of ``dep`` that more than one tile covers."""
    return max((j for j in dep if p_tile[j] < shape[j]), default=-1) + 1


def share_order_key(shape, p_tile, dep, whole_first=True):
    """Sort key of a tile origin in the dispatcher's order for 1-D groups sharing a slot that
    moves along the parallel indices ``dep`` (``meritz.dispatcher``, *whole tiles first*): the
    indices up to the innermost one of ``dep`` walk row-major outside (a *run*: the tiles a group
    may take together), and within a run the tiles whole along every inner index come before
    those cut by the edge of the parallel space, each row-major. A group's tiles then cost the
    same wherever the run has enough whole tiles (an edge tile of a group runs fewer warps, and
    the group waits for its largest tile, job after job). An index of ``dep`` that one tile
    covers does not end a run. ``whole_first=False``: the grid's order (row-major), the
    configuration's ``share_order`` = 0."""
    inner = _run_inner(shape, p_tile, dep)
    n_p = len(shape)

    def key(origin):
        cut = whole_first and any(origin[j] + p_tile[j] > shape[j] for j in range(inner, n_p))
        return (tuple(origin[:inner]), cut, tuple(origin[inner:]))
    return key


@functools.lru_cache(maxsize=4096)
def _lockstep(shape, p_tile, dep, group):
    """:func:`lockstep_warps` with one lane along every index (a tile costs its outputs), in the
    better of the two orders (:func:`share_order`)."""
    return min(lockstep_warps(shape, p_tile, (1,) * len(shape), dep, group, whole)
               for whole in (True, False))


def share_order(config, lanes_per_index, n_p):
    """The configuration's ``share_order`` for 1-D sharing: 1 (each run's whole tiles first)
    where that order's groups wait less for their largest tiles than the grid's order
    (:func:`lockstep_warps`, the warps of ``lanes_per_index``), else 0."""
    if not config["share_log2"] or config["share2_log2"]:
        return 0
    slots = list(config["rp0"]) + list(config["rp1"])
    dep = [j for j in range(n_p) if slots[config["share_slot"]]["stride"][j]]
    shape, p_tile = config["p_size"][:n_p], config["p_tile"][:n_p]
    g = 1 << config["share_log2"]
    whole, _ = lockstep_warps(shape, p_tile, lanes_per_index, dep, g, True)
    grid, _ = lockstep_warps(shape, p_tile, lanes_per_index, dep, g, False)
    return int(whole < grid)


def lockstep_warps(shape, p_tile, per_index, dep, group, whole_first=True):
    """``(warps, units)`` of the 1-D dealing in groups of ``group`` TAUs (the dispatcher's order,
    :func:`share_order_key` with ``whole_first``; ``dep``: the indices the shared slot moves
    along): the sum over the units (a group's tiles dealt at once) of the most warps one of its
    tiles runs, which the group's members take in lock step, and the number of units.
    ``per_index``: lanes along each index (an edge tile skips its warps wholly outside the
    space, as :func:`merit.mapping.search.computed_warps`)."""
    per = [np.asarray(warps_along(t, n, k), dtype=np.int64)
           for t, n, k in zip(p_tile, shape, per_index, strict=True)]
    inner = _run_inner(shape, p_tile, dep)
    outer = np.ones(1, dtype=np.int64)
    for w in per[:inner]:
        outer = np.multiply.outer(outer, w).ravel()
    warps = np.ones(1, dtype=np.int64)
    cut = np.zeros(1, dtype=bool)
    for j in range(inner, len(shape)):
        edge = np.asarray([o + p_tile[j] > shape[j] for o in range(0, shape[j], p_tile[j])])
        warps = np.multiply.outer(warps, per[j]).ravel()
        cut = np.logical_or.outer(cut, edge & whole_first).ravel()
    run = np.concatenate([warps[~cut], warps[cut]])
    pad = -len(run) % group
    # a void tile runs one warp (it computes in step with its group, writes nothing)
    run = np.concatenate([run, np.ones(pad, dtype=np.int64)]).reshape(-1, group)
    return int(outer.sum()) * int(run.max(axis=1).sum()), len(outer) * len(run)


def share_choice(config, tiles, taus, *, compute_per_tile, bytes_per_cycle=8):
    """``(share_slot, share_log2)``: the operand a group of ``2**share_log2`` TAUs fetches once.

    A group takes consecutive tiles of the dispatch order whose origins agree on every parallel
    index the shared slot moves along (so its footprints are identical); the group's first TAU
    fetches the slot and multicasts the rows, a group that runs out of such tiles fills its
    other TAUs with void tiles (computed, nothing written). A candidate slot is alone in its RP
    and leaves at least one parallel index free. Among the slots and group sizes (powers of two
    dividing ``taus``) the one with the least estimated time ``max(compute, DRAM)`` wins, then
    the one with the least traffic (``compute_per_tile``: CP cycles of one tile; DRAM at
    ``bytes_per_cycle``); ``(0, 0)`` when sharing saves nothing.
    """
    if taus < 2 or not tiles:
        return 0, 0
    slots = [(0, s) for s in config["rp0"]] + [(1, s) for s in config["rp1"]]
    a_tiles = int(np.prod([-(-a // t) for a, t in zip(config["a_size"], config["a_tile"],
                                                       strict=True)]))
    words = {}
    for n, (_, s) in enumerate(slots):
        if s and s.get("enable"):
            # 8-byte beats of the footprint rows (a row of b words starts anywhere in a beat)
            words[n] = int(np.prod(s["box"][:-1])) * (s["box"][-1] + 3) * a_tiles
    n_p = len(tiles[0])
    total = sum(words.values())
    best, choice = None, (0, 0)
    for n, w in words.items():
        port = slots[n][0]
        if sum(1 for k in words if slots[k][0] == port) > 1:
            continue
        s = slots[n][1]
        dep = [j for j in range(n_p) if s["stride"][j] != 0]
        free = [j for j in range(n_p) if j not in dep]
        if not free or any(config["p_size"][j] + config["p_tile"][j] >= 1 << 16 for j in free):
            continue
        runs = _runs(tiles, dep)
        for log2 in range(0, taus.bit_length()):
            g = 1 << log2
            if taus % g:
                continue
            groups = sum(-(-r // g) for r in runs)
            work = groups * g / taus * compute_per_tile
            dram = 2 * (len(tiles) * (total - w) + groups * w) / bytes_per_cycle
            cost = (round(max(work, dram), 6), dram)     # then the least traffic
            if best is None or cost < best:
                best, choice = cost, ((n, log2) if log2 else (0, 0))
    return choice


def _check_sharing(config, sharing, taus):
    """CompileError unless ``sharing`` is what the processor deals on the block walk (its START
    checks ``share``, ``share2`` and ``block``, ``merit.regmap.CHECKS``): one or two enabled
    slots, each alone in its own RP, groups whose blocks divide ``taus``."""
    ports = [port for port in (0, 1) for s in config[f"rp{port}"]]
    enabled = [bool(s and s.get("enable")) for port in (0, 1) for s in config[f"rp{port}"]]
    if len(sharing) == 1:
        (first, l1), = sharing
        if not (0 <= first < len(ports)) or not enabled[first] or sum(
                on for p, on in zip(ports, enabled, strict=True) if p == ports[first]) != 1:
            raise CompileError(f"block-walk sharing {sharing}: slot {first} must be an enabled "
                               f"slot alone in its RP")
        if l1 < 1 or taus % (1 << l1):
            raise CompileError(f"block-walk sharing {sharing}: groups of 2**{l1} TAUs must "
                               f"divide the {taus} TAUs")
        return
    (first, l1), (second, l2) = sharing
    for slot in (first, second):
        if not (0 <= slot < len(ports)) or not enabled[slot] or sum(
                on for p, on in zip(ports, enabled, strict=True) if p == ports[slot]) != 1:
            raise CompileError(f"2-D sharing {sharing}: slot {slot} must be an enabled slot alone "
                               f"in its RP")
    if ports[first] == ports[second]:
        raise CompileError(f"2-D sharing {sharing}: the two shared slots must lie in different "
                           f"RPs, not both in RP{ports[first]}")
    if l1 < 1 or l2 < 1 or taus % (1 << (l1 + l2)):
        raise CompileError(f"2-D sharing {sharing}: blocks of 2**{l1} x 2**{l2} TAUs must divide "
                           f"the {taus} TAUs")


def share_walk(n_p, deps):
    """The dispatcher's block walk for the shared slots moving along ``deps`` (a set of parallel
    indices per shared slot, the first on the low TAU-index bits): ``(X, Y, R)``.

    A block of ``g_1 x g_2`` TAUs (``x`` on the low bits) takes tiles ``(x, y)``: the first slot's
    group (same ``y``) must agree on ``deps[0]``, so ``x`` walks the indices ``X`` the first slot
    does not move along; the second's (same ``x``) on ``deps[1]``, so ``y`` walks ``Y``: the
    indices the second does not move along, less ``X``. ``R`` (every other index) stays fixed in a
    block. Walks are row-major over their indices; one slot: ``Y`` is empty."""
    xs = [j for j in range(n_p) if j not in deps[0]]
    ys = [j for j in range(n_p) if len(deps) > 1 and j not in deps[1] and j not in xs]
    rs = [j for j in range(n_p) if j not in xs and j not in ys]
    return xs, ys, rs


def _block_fetches(counts, deps, log2s):
    """``(blocks, fetches per shared slot)`` of the block walk over a tile grid of ``counts``:
    a block's row (column) whose tiles are real fetches the first (second) slot once."""
    xs, ys, rs = share_walk(len(counts), deps)
    nx, ny, nr = (int(np.prod([counts[j] for j in ix])) for ix in (xs, ys, rs))
    g = [1 << v for v in log2s] + [1]
    bx, by = -(-nx // g[0]), -(-ny // g[1])
    return nr * bx * by, [nr * ny * bx, nr * nx * by][:len(log2s)]


def _share_candidates(n_p, deps, alone, taus, sizes_ok, counts=(1, 2)):
    """Every (slots, log2s) of sharing ``counts`` slots (1: 1-D, 2: 2-D) on ``taus`` TAUs: slots
    alone in their RP (``alone``), leaving their walk an index (``sizes_ok(indices)``: void
    origins fit), the groups' product a power of two dividing ``taus``."""
    out = []
    for n in alone:
        for m in [None] + [m for m in alone if m != n]:
            if (1 if m is None else 2) not in counts:
                continue
            ds = [deps[n]] + ([deps[m]] if m is not None else [])
            xs, ys, _ = share_walk(n_p, ds)
            if not xs or (m is not None and not ys) or not sizes_ok(xs + ys):
                continue
            for l1 in range(1, taus.bit_length()):
                for l2 in ([0] if m is None else range(1, taus.bit_length())):
                    if taus % (1 << (l1 + l2)):
                        continue
                    out.append(((n,) if m is None else (n, m),
                                (l1,) if m is None else (l1, l2)))
    return out


def _plan_inputs(config, n_p):
    """``(slots, words, deps, alone)`` of a kernel's configuration for :func:`share_plan`: the
    slots as ``(RP, slot config)``, the 8-byte beats of each enabled slot's footprint rows over
    the accumulation tiles, the parallel indices each moves along, the slots alone in their
    RP."""
    slots = [(0, s) for s in config["rp0"]] + [(1, s) for s in config["rp1"]]
    a_tiles = int(np.prod([-(-a // t) for a, t in zip(config["a_size"], config["a_tile"],
                                                       strict=True)]))
    words, deps = {}, {}
    for n, (_, s) in enumerate(slots):
        if s and s.get("enable"):
            words[n] = int(np.prod(s["box"][:-1])) * (s["box"][-1] + 3) * a_tiles
            deps[n] = {j for j in range(n_p) if s["stride"][j] != 0}
    alone = [n for n in words if sum(1 for k in words if slots[k][0] == slots[n][0]) == 1]
    return slots, words, deps, alone


def _sizes_ok(config):
    """Whether void origins fit the parallel indices ``ix`` (a tile past the end of a walk)."""
    return lambda ix: all(config["p_size"][j] + config["p_tile"][j] < 1 << 16 for j in ix)


def share_plans(config, n_p, taus):
    """Every two-slot plan ``((slot, log2), (slot, log2))`` of :func:`share_plan`'s candidates
    that the processor deals (:func:`_check_sharing`) on ``taus`` TAUs, for a kernel of ``n_p``
    parallel indices: the plans ``compile_problem``'s default weighs with
    :func:`merit.perf.predict`."""
    _, _, deps, alone = _plan_inputs(config, n_p)
    out = []
    for ns, log2s in _share_candidates(n_p, deps, alone, taus, _sizes_ok(config), (2,)):
        plan = tuple(zip(ns, log2s, strict=True))
        try:
            _check_sharing(config, plan, taus)
        except CompileError:
            continue
        out.append(plan)
    return out


def share_plan(config, tiles, taus, *, compute_per_tile, bytes_per_cycle=8, counts=(1, 2),
               held=None, fixed=()):
    """Two-dimensional operand sharing: ``((slot, log2), ...)``, at most one slot per RP.

    As :func:`share_choice`, but up to two slots are shared at once, each by its own groups:
    ``2**log2_1 x 2**log2_2`` consecutive TAUs take a block of tiles (:func:`share_walk`), the
    TAUs of a block's row fetch the first slot once, those of a column the second. Void tiles
    fill rows or columns past the end of a walk. ``()`` when sharing saves nothing. The
    processor deals a plan of two slots (``meritz.dispatcher``: ``share2_slot``, ``share2_log2``)
    and one of one slot on the block walk (``share_block``; the processor's 1-D dealing in the
    grid's order is :func:`share_choice`'s). ``counts``: how many slots may be shared (``(2,)``:
    only 2-D, ``(1,)``: one slot on the block walk). ``held``: slot -> the tiles that load it
    where it is not shared (``compile_problem(hold=True)``, :func:`_held_loads`); every other
    slot not shared is loaded by every tile; ``fixed``: slots that may not be shared (a sliding
    slot, ``Kernel.slide``)."""
    if taus < 2 or not tiles:
        return ()
    n_p = len(tiles[0])
    _, words, deps, alone = _plan_inputs(config, n_p)
    alone = [n for n in alone if n not in fixed]
    grid = [len(range(0, config["p_size"][j], config["p_tile"][j])) for j in range(n_p)]
    held = held or {}
    loads = {n: held.get(n, len(tiles)) for n in words}
    total = sum(words[n] * loads[n] for n in words)
    ok = _sizes_ok(config)
    best = (round(max(len(tiles) / taus * compute_per_tile,
                      2 * total / bytes_per_cycle), 6),
            2 * total / bytes_per_cycle)
    choice = ()
    for ns, log2s in _share_candidates(n_p, deps, alone, taus, ok, counts):
        blocks, fetches = _block_fetches(grid, [deps[n] for n in ns], log2s)
        work = blocks * (1 << sum(log2s)) / taus * compute_per_tile
        traffic = total - sum(words[n] * loads[n] for n in ns) + sum(
            words[n] * f for n, f in zip(ns, fetches, strict=True))
        dram = 2 * traffic / bytes_per_cycle
        cost = (round(max(work, dram), 6), dram)
        if cost < best:
            best, choice = cost, tuple(zip(ns, log2s, strict=True))
    return choice


def estimate_time(problem, tile_p, tile_a, warps, lines=None, *, lanes, taus, ports, per_lane,
                  regs, bytes_per_cycle=8, share_dims=1, share_counts=(1, 2), hold=False,
                  slide=None):
    """Estimated cycles of ``problem`` cut into ``(tile_p, tile_a)`` on ``taus`` TAUs:
    ``max(compute / taus, DRAM)`` with the best operand sharing (as :func:`share_choice`).

    ``warps``: warps the tiles run (:func:`merit.mapping.search.computed_warps`, edge tiles'
    idle lanes included); each runs ``per_lane`` step cycles (the program's ranges over the
    accumulation) plus a restore and save of ``regs`` registers per accumulation tile. DRAM:
    every operand's footprint box per job in 8-byte beats (as :func:`share_choice`), and the
    outputs: ``lines`` beats per warp and output (:func:`merit.mapping.search.vector_lines`),
    or every output word once. ``ports``: the RP of each operand (``operand_ports``).
    ``share_dims=2``: sharing as :func:`share_plan` (``share_counts`` operands, the block walk).
    ``hold``: an operand alone in its RP is loaded once per change of its footprint along the
    tiles each TAU takes (:func:`_held_loads`); the sharing below counts it as loaded so.
    ``slide``: ``(operand, index)`` (``Kernel.slide``): along each line of tiles in the slide
    index's direction the operand's first footprint is loaded whole and each next one only by
    the part that the move adds (:func:`_slid_words`); it is never shared."""
    counts = [-(-n // t) for n, t in zip(problem.p_shape, tile_p, strict=True)]
    tiles = math.prod(counts)
    a_tiles = math.prod(-(-a // t) for a, t in zip(problem.a_shape, tile_a, strict=True))
    compute = warps * (per_lane + a_tiles * (2 * regs + 1)) + tiles * a_tiles
    words = []
    for k, op in enumerate(problem.operands):
        box = op.transform.footprint(tile_p, tile_a)
        words.append(math.prod(box[:-1]) * (box[-1] + 3) * a_tiles * tiles)
        if slide is not None and slide[0] == k:
            words[-1] = _slid_words(op.transform, slide[1], tile_p, tile_a, counts, a_tiles)
        elif hold and sum(1 for r, _ in ports if r == ports[k][0]) == 1:
            words[-1] = words[-1] * _held_loads(op.transform, counts, a_tiles, taus) \
                // (a_tiles * tiles)
    outs = (math.prod(problem.p_shape) if lines is None else 4 * lines * warps) \
        * max(len(problem.outputs), 1)
    total = sum(words) + outs
    best = max(compute / taus, 2 * total / bytes_per_cycle)
    n_p = len(problem.p_shape)
    if share_dims == 2:
        deps = []
        for op in problem.operands:
            idx = op.transform.indices
            deps.append({j for j in range(n_p) if idx[j] is not None and idx[j].stride != 0})
        alone = [k for k in range(len(deps))
                 if sum(1 for r, _ in ports if r == ports[k][0]) == 1
                 and (slide is None or k != slide[0])]
        for ns, log2s in _share_candidates(n_p, deps, alone, taus, lambda ix: True,
                                           share_counts):
            blocks, fetches = _block_fetches(counts, [deps[n] for n in ns], log2s)
            work = blocks * (1 << sum(log2s)) / tiles * compute / taus
            dram = 2 * (total - sum(words[n] for n in ns) + sum(
                words[n] / tiles * f for n, f in zip(ns, fetches, strict=True))) / bytes_per_cycle
            best = min(best, max(work, dram))
        return best
    if slide is not None:           # the slide walk deals the tiles, not the 1-D groups
        return best
    for k, op in enumerate(problem.operands):
        if sum(1 for r, _ in ports if r == ports[k][0]) > 1:
            continue
        idx = op.transform.indices
        dep = [j for j in range(n_p) if idx[j] is not None and idx[j].stride != 0]
        if len(dep) == n_p:
            continue
        # a run (the tiles of the grid's order, last index innermost, that agree on ``dep``)
        # ends where an index of ``dep`` changes: one of more than one tile (as ``_runs``)
        g = 2
        while g <= taus and taus % g == 0:
            # the groups' lock step (:func:`lockstep_warps`, edge tiles costing their outputs)
            # and the void tiles of runs that do not divide by the group
            units, groups = _lockstep(tuple(problem.p_shape), tuple(tile_p), tuple(dep), g)
            work = units * g / math.prod(problem.p_shape) * compute / taus
            dram = 2 * (total - words[k] + words[k] * groups / tiles) / bytes_per_cycle
            best = min(best, max(work, dram))
            g *= 2
    return best


def _slid_words(transform, j, tile_p, tile_a, counts, a_tiles):
    """:func:`estimate_time`'s words of an operand that slides along parallel index ``j``
    (``Kernel.slide``) over a grid of ``counts`` parallel tiles of ``a_tiles`` accumulation
    tiles: every job loads its footprint where an accumulation index with more than one tile
    moves it; else each line of tiles along ``j`` loads its first footprint whole and each next
    one's new part, the box along the sliding axis cut to the move (none where the move is not
    less than the box)."""
    n_p = len(counts)
    box = transform.footprint(tile_p, tile_a)
    full = math.prod(box[:-1]) * (box[-1] + 3)
    tiles = math.prod(counts)
    idx = transform.indices
    if a_tiles > 1 and any(i is not None for i in idx[n_p:]):
        return full * a_tiles * tiles
    axis = idx[j].axis
    delta = idx[j].stride * tile_p[j]
    new = full * delta // box[axis] if delta < box[axis] else full
    lines = tiles // counts[j]
    return lines * (full + (counts[j] - 1) * new)


def held_rps(config):
    """``config["hold"]`` for footprint reuse (``compile_problem(hold=True)``): bit ``r`` set
    where RP ``r`` has one enabled slot that no TAU group shares (``share_slot`` /
    ``share2_slot`` where their groups are not 0: the 1-D choice, the 2-D plan or the one slot
    on the block walk alike), as the configuration check ``hold`` (``merit.regmap.CHECKS``)
    requires."""
    shared = {config[slot] for slot, log2 in (("share_slot", "share_log2"),
                                              ("share2_slot", "share2_log2"))
              if config.get(log2)}
    numbered = [(port, s) for port in (0, 1) for s in config[f"rp{port}"]]
    bits = 0
    for port in (0, 1):
        mine = [n for n, (q, s) in enumerate(numbered) if q == port and s and s.get("enable")]
        if len(mine) == 1 and mine[0] not in shared:
            bits |= 1 << port
    return bits


def _held_loads(transform, counts, a_tiles, taus):
    """Jobs that load a held operand (``compile_problem(hold=True)``) over a grid of ``counts``
    parallel tiles of ``a_tiles`` accumulation tiles each, estimated: a footprint that moves
    along an accumulation index changes with every job; else it changes where the grid's order
    (row-major) changes one of the parallel indices it moves along, and each of the ``taus``
    TAUs, taking the tiles of such a run in turn, loads it once per run."""
    n_p = len(counts)
    idx = transform.indices
    tiles = math.prod(counts)
    if a_tiles > 1 and any(i is not None and i.stride != 0 for i in idx[n_p:]):
        return a_tiles * tiles
    dep = [j for j in range(n_p) if idx[j] is not None and idx[j].stride != 0 and counts[j] > 1]
    runs = math.prod(counts[:max(dep) + 1]) if dep else 1
    return min(tiles, runs * min(taus, tiles // runs))


def _align(value, to=64):
    return -(-value // to) * to


def swapped_operands(problem):
    """``problem`` with its first two operands exchanged, when its strategy says they commute
    (``Strategy.commutes``: a dot product, an absolute difference) and both tensors are named;
    else None. The tensors keep their order (the DRAM layout), so only the Read Pipeline that
    reads each operand changes: RP0 (16 KB) takes the other tensor's footprints."""
    import copy
    ops = problem.operands
    if not getattr(problem.strategy, "commutes", False) or len(ops) < 2 \
            or ops[0].stage != "loop" or ops[1].stage != "loop" \
            or not (ops[0].transform.named and ops[1].transform.named) \
            or ops[0].tensor == ops[1].tensor:
        return None
    from .problem import Operand
    out = copy.copy(problem)
    out.operands = (Operand(ops[1].tensor, ops[1].transform, ops[0].stage),
                    Operand(ops[0].tensor, ops[0].transform, ops[1].stage)) + tuple(ops[2:])
    return out


#: ``_predicted``'s cycles by kernel within one outermost ``compile_problem`` call (its 1-D and
#: 2-D compiles, operand swaps and window orders weigh many of the same kernels); None outside
_PREDICTED = None


def _memo_scope(compile_fn):
    """``compile_fn`` with ``_PREDICTED`` holding the predictions of one outermost call (and of
    the calls it makes), dropped when it returns."""
    @functools.wraps(compile_fn)
    def wrapper(*args, **kwargs):
        global _PREDICTED
        if _PREDICTED is not None:
            return compile_fn(*args, **kwargs)
        _PREDICTED = {}
        try:
            return compile_fn(*args, **kwargs)
        finally:
            _PREDICTED = None
    return wrapper


@_memo_scope
def compile_problem(problem, *, lanes=32, shift=0, rp_bytes=RP_BYTES, cp_bytes=CP_BYTES,
                    rp0_slots=2, rp1_slots=1, outputs=3, instructions=16, dram_base=0x1000,
                    max_outputs=None, taus=1, swap=True, share_dims=None, share_counts=(1, 2),
                    hold=False, window=True, rp_ports=RP_PORTS, merge_rows=True,
                    clear_init=True, align_tensors=True, slide=False, clip_box=True):
    """Map ``problem`` onto one TAU: program, tiling, layouts, configuration, DRAM layout.

    ``swap``: also compile the problem with its two commuting operands exchanged
    (:func:`swapped_operands`) and keep that kernel when :func:`merit.perf.predict` finds it
    MARGIN faster (its ``problem`` is then the swapped one: same tensors, outputs and results).

    ``taus`` TAUs (the processor, ``meritz.top``) may share operands' fetches; one TAU (the
    default) never does. ``share_dims=1``: one operand per TAU group (:func:`share_choice`).
    ``share_dims=2`` ranks the tiles with sharing on the block walk and, when its choice
    (:func:`share_plan`) shares one or two operands, puts it in ``Kernel.sharing`` and in
    ``config`` (``share_slot`` / ``share_log2``, ``share2_slot`` / ``share2_log2``: the
    processor's 2-D dealing; one slot: ``share_block`` = 1); otherwise ``config`` keeps the 1-D
    choice.
    ``share_counts``: how many operands that choice may share (``(2,)``: two, ``(1,)``: one).
    ``share_dims=None`` (the default) chooses by the model: on more than one TAU it compiles
    the 1-D kernel (``share_dims=1``) and the 2-D one (``share_dims=2, share_counts=(2,)``),
    weighs every two-slot plan the processor deals on the 2-D kernel's tiles
    (:func:`share_plans`: slots and group sizes) with :func:`merit.perf.predict`, and keeps the
    fastest 2-D plan only where it is predicted MARGIN faster than the 1-D kernel; with
    ``hold``, so is the kernel of one slot on the block walk (``share_dims=2,
    share_counts=(1,)``), and of the two the faster is kept.
    ``hold=True``: footprint reuse across a TAU's consecutive jobs (``Kernel.hold``,
    ``config["hold"]``, :func:`held_rps`): the tiles are chosen by the model with it, a slot
    alone in its RP budgeted at its whole RP as well as at half of it.
    ``slide=True``: also compile each sliding-window reuse of :func:`slide_choices`
    (``Kernel.slide``: the operand's footprint laid with the sliding axis outermost, budgeted
    at its whole RP, the tiles ranked and dealt on the slide walk) and keep the one that
    :func:`merit.perf.predict` finds fastest where it is MARGIN faster than the kernel without;
    ``slide=(operand, index)`` compiles that one (``Kernel.slide`` None where its tiles do not
    slide: :func:`_slide_ok`).
    ``window``: also compile a fused convolution and pooling with its window indices inside the
    channel passes (:func:`window_inside`, the innermost one, then both) and keep such a kernel
    when :func:`merit.perf.predict` finds it MARGIN faster (its ``problem`` is then the
    reordered one: same tensors, outputs and results).
    ``rp_ports``: the ports of the RP banks that the model weighs the choices with (default
    :data:`merit.arch.RP_PORTS`, the processor as built; 1 reproduces the choices of the
    single-port banks that earlier runs were made on).
    ``merge_rows``: each slot's contiguous DRAM rows merged (:func:`merged_rows`: the same words
    in fewer, longer rows, so fewer read beats); False reads the footprint in the source
    tensor's own rows (the kernels before it).
    ``clear_init``: the program's leading instructions that only set a register to 0 are left
    out (:func:`without_zero_init`: the CP clears an output's registers at its first
    accumulation tile); False keeps them (the kernels before it).
    ``align_tensors``: each input tensor placed at the offset within its first 8-byte beat
    whose footprint rows the DMA reads in the fewest beats (:func:`beat_aligned`); False: every
    tensor on a 64-byte boundary, right after the one before (the kernels before it).

    ``clip_box``: each slot's footprint box cut to the parallel space along the indices whose
    tile is at least their size (:func:`clipped_box`: the words only void lanes read are not
    loaded); False loads the whole tile's footprint (the kernels before it).

    Raises CompileError (or ``merit.mapping.NoMapping``) naming the limit that a problem exceeds.
    """
    check_taus(taus)
    check_ports("rp_ports", rp_ports)
    if share_dims not in (None, 1, 2) or isinstance(share_dims, bool):
        raise ValueError(f"share_dims must be None, 1 or 2, not {share_dims!r}")
    if not isinstance(hold, bool):
        raise TypeError(f"hold must be True or False, not {hold!r}")
    if not isinstance(clip_box, bool):
        raise TypeError(f"clip_box must be True or False, not {clip_box!r}")
    if not (isinstance(slide, bool) or (isinstance(slide, tuple) and len(slide) == 2
                                        and all(type(v) is int for v in slide))):
        raise TypeError(f"slide must be True, False or an (operand, parallel index) pair, "
                        f"not {slide!r}")
    from .isa import IsaError, Program, step_ranges
    from .isa.programs import operand_ports, program_for
    from .mapping.search import NoMapping, search
    from .problem import Problem

    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a merit.Problem, not {type(problem).__name__}")
    lanes, rp_bytes, cp_bytes = _check_hardware(lanes, rp_bytes, cp_bytes, dram_base)
    options = dict(lanes=lanes, shift=shift, rp_bytes=rp_bytes, cp_bytes=cp_bytes,
                   rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                   instructions=instructions, dram_base=dram_base, max_outputs=max_outputs,
                   taus=taus, swap=swap, share_dims=share_dims, share_counts=share_counts,
                   hold=hold, window=window, rp_ports=rp_ports, merge_rows=merge_rows,
                   clear_init=clear_init, align_tensors=align_tensors, clip_box=clip_box)
    if slide is True:
        return _slide_by_model(problem, options)
    if slide is False:
        slide = None
    if share_dims is None:
        if taus > 1:
            # :func:`_share_by_model` chooses the sharing itself
            del options["share_dims"], options["share_counts"]
            return _share_by_model(problem, taus, dict(options, slide=slide or False))
        share_dims = 1
    fields = kernelcfg.fields(rp0_slots=rp0_slots, rp1_slots=rp1_slots, outputs=outputs,
                              instructions=instructions)
    n_p, n_a = len(problem.p_shape), len(problem.a_shape)
    if n_p > P_INDICES or n_a > A_INDICES:
        raise CompileError(f"problem {problem.name!r} has {n_p} parallel and {n_a} accumulation "
                           f"indices; the TAU has {P_INDICES} and {A_INDICES}")
    try:
        program = program_for(problem, shift=shift)
    except IsaError as e:
        raise CompileError(f"problem {problem.name!r}: {e}") from None
    if clear_init:
        program = without_zero_init(program)
    _check_fields({"p_size": list(problem.p_shape), "a_size": list(problem.a_shape)}, fields,
                  problem, hint="; split the problem into kernels whose sizes fit")
    if len(program.words) > instructions:
        raise CompileError(f"problem {problem.name!r}: the program has {len(program.words)} "
                           f"instructions, the TAU holds {instructions}")
    if len(program.out_addresses) > outputs:
        raise CompileError(f"problem {problem.name!r}: {len(program.out_addresses)} outputs, the "
                           f"TAU writes at most {outputs}")
    ports = operand_ports(problem, shift=shift)
    slots = (rp0_slots, rp1_slots)
    for r in (0, 1):
        n = sum(1 for p, _ in ports if p == r)
        if n > slots[r]:
            raise CompileError(f"problem {problem.name!r}: {n} operands on RP{r}, which has "
                               f"{slots[r]} slot(s)")
    # a slide: the operand read through a view of its tensor with the sliding axis outermost
    views = {}
    searched = problem
    if slide is not None:
        k, j = slide
        if (k, j) not in slide_choices(problem, shift=shift):
            raise CompileError(f"problem {problem.name!r}: slide {slide} names no operand alone "
                               f"in its RP that parallel index {j} moves forward along an axis "
                               f"other than its innermost ({slide_choices(problem, shift=shift)})")
        op = problem.operands[k]
        views[k] = outermost(op.transform, op.transform.indices[j].axis)
        import copy

        from .problem import Operand
        searched = copy.copy(problem)
        searched.operands = tuple(Operand(o.tensor, views[n][0], o.stage) if n in views else o
                                  for n, o in enumerate(problem.operands))
        accept = {k: functools.partial(_slide_layout_ok, views[k][0], j, lanes)}
    else:
        accept = None
    prog6 = program.with_levels(max(n_a, 1)).with_levels(A_INDICES)
    regs = max(program.regs, 1)
    cp_rows = cp_bytes * 8 // (32 * lanes)
    if cp_rows < regs:
        raise CompileError(f"problem {problem.name!r}: the program keeps {regs} register(s) per "
                           f"warp, the CP's {cp_bytes} bytes hold {cp_rows} row(s) of {lanes} "
                           f"lanes")
    limit = lanes * (cp_rows // regs)
    if max_outputs is None:
        max_outputs = limit
    else:
        if isinstance(max_outputs, bool) or not isinstance(max_outputs, int):
            raise TypeError(f"max_outputs must be an integer, not {max_outputs!r}")
        if not lanes <= max_outputs <= limit:
            raise CompileError(f"max_outputs must be between the {lanes} lanes and the {limit} "
                               f"partial results the CP holds ({cp_rows} rows // {regs} "
                               f"register(s) x {lanes} lanes), not {max_outputs}")
    # DRAM layout: inputs, then outputs; the same for every tile, so its addresses are checked
    # before the search (a problem too large for the address fields is refused at once)
    address = dram_base
    layout_tensors = {}
    for t in problem.tensors:
        layout_tensors[t.name] = address
        # room to move the tensor within its first beat (:func:`beat_aligned`)
        address = _align(address + 2 * int(np.prod(t.shape))
                         + (max(TENSOR_OFFSETS) if align_tensors else 0))
    layout_outputs = []
    names = program.outputs or tuple(f"out{k}" for k in range(len(program.out_addresses)))
    for k, name in enumerate(names):
        layout_outputs.append((name, address))
        address = _align(address + 2 * problem.out_elements(k))
    # the WP writes element p of output k at out_base[k] + 2 * sum p_j out_pitch[j]: the
    # tensor's address plus its affine map's offset (0 for a dense p_shape output)
    out_bases = [a + 2 * problem.out_offset(k) for k, (_, a) in enumerate(layout_outputs)]
    bases = {"rp0": [], "rp1": []}
    for (r, _), op in zip(ports, problem.operands, strict=True):
        bases[f"rp{r}"].append({"base": layout_tensors[op.tensor]})
    _check_fields({**bases, "out_base": out_bases, "out_pitch": list(problem.out_pitch)},
                  fields, problem)
    budgets, whole = [], []
    for k, (r, _) in enumerate(ports):
        share = sum(1 for p, _ in ports if p == r)
        budgets.append(rp_bytes[r] // 2 // 2 // share)      # words, double-buffered
        # with ``hold`` a slot alone in its RP may also take the whole RP: loaded once per
        # change of its footprint, the next load into the RP waits for the tile to be freed;
        # so may a sliding one (the next job's rows wait for the front rows' free)
        whole.append(rp_bytes[r] // 2 // share if (hold or k in views) and share == 1
                     else budgets[-1])
    sets = [budgets] + ([whole] if whole != budgets else [])
    # the cheapest tiles in DRAM traffic under each cap of ``search_caps`` (and each budget):
    # those of a large cap are large tiles, so without the smaller cap's a larger CP could lose
    # a tile that a smaller one gets
    caps = search_caps(max_outputs, lanes)
    mappings = search(searched, lanes, sram_words=budgets, max_outputs=caps[0],
                      alternatives=ALTERNATIVES, accept=accept)
    for words, cap in itertools.product(sets, caps):
        if words is budgets and cap == caps[0]:
            continue
        try:
            smaller = search(searched, lanes, sram_words=words, max_outputs=cap,
                             alternatives=ALTERNATIVES, accept=accept)
        except NoMapping:
            continue
        have = {(m.tile_p, m.tile_a, m.grouping.bits) for m in mappings}
        mappings += [m for m in smaller if (m.tile_p, m.tile_a, m.grouping.bits) not in have]
    acc = tuple(problem.a_shape) or (1,)
    per_lane = sum(end - start for _, start, end in
                   step_ranges(program.with_levels(len(acc)) if program.levels < len(acc)
                               else program, acc))

    @functools.cache                        # the caps' searches rank the same tiles again
    def rank(tile_p, tile_a, warps, lines):
        return estimate_time(problem, tile_p, tile_a, warps, lines, lanes=lanes, taus=taus,
                             ports=ports, per_lane=per_lane, regs=regs, share_dims=share_dims,
                             share_counts=share_counts, hold=hold, slide=slide)

    ranked = []
    for words, cap in itertools.product(sets, caps):
        try:
            ranked += search(searched, lanes, sram_words=words, max_outputs=cap,
                             alternatives=RANKED, rank=rank, accept=accept)[:RANKED]
        except NoMapping:
            pass
    seen = {(m.tile_p, m.tile_a, m.grouping.bits) for m in mappings}
    extra = []
    for m in ranked:
        if (m.tile_p, m.tile_a, m.grouping.bits) not in seen:
            seen.add((m.tile_p, m.tile_a, m.grouping.bits))
            extra.append(m)

    def build(mapping):
        tiling = Tiling(tuple(mapping.tile_p), tuple(mapping.tile_a),
                        _lane_index(mapping.grouping, n_p))

        tensors, out_list = dict(layout_tensors), list(layout_outputs)
        rp = {0: [], 1: []}
        sizes = (list(problem.p_shape) + [1] * (P_INDICES - n_p) + list(problem.a_shape)
                 + [1] * (A_INDICES - n_a))
        sides = (list(tiling.p_tile) + [1] * (P_INDICES - n_p) + list(tiling.a_tile)
                 + [1] * (A_INDICES - n_a))
        numbers = []
        for k, ((r, _), op, layout) in enumerate(zip(ports, problem.operands, mapping.layouts(),
                                                     strict=True)):
            depth = rp_bytes[r] // (2 * lanes)
            view, dpitch = views.get(k, (op.transform, None))
            slot = slot_config(view, tiling, lanes, base=tensors[op.tensor],
                               bank=layout.bank, lpitch=layout.pitch, depth=depth, dpitch=dpitch)
            if clip_box:
                slot = clipped_box(slot, view, tiling, problem.p_shape, problem.a_shape)
            numbers.append(r * slots[0] + len(rp[r]))
            rp[r].append(merged_rows(slot, sizes, sides) if merge_rows else slot)
        rows = {r: sum(s["rows"] for s in rp[r]) for r in (0, 1)}
        for r in (0, 1):
            if rows[r] > rp_bytes[r] // (2 * lanes):
                raise CompileError(f"problem {problem.name!r}: one accumulation tile needs "
                                   f"{rows[r]} rows of RP{r}, which has "
                                   f"{rp_bytes[r] // (2 * lanes)}")
            rp[r] += [{}] * (slots[r] - len(rp[r]))

        pitch = list(problem.out_pitch)

        def pad(values, fill, n):
            return [int(v) for v in values] + [fill] * (n - len(values))

        config = {
            "p_size": pad(problem.p_shape, 1, P_INDICES),
            "a_size": pad(problem.a_shape, 1, A_INDICES),
            "p_tile": pad(tiling.p_tile, 1, P_INDICES),
            "a_tile": pad(tiling.a_tile, 1, A_INDICES),
            "lane_index": pad(tiling.lane_index, 0, 6),
            "program": pad(prog6.words, 0, instructions),
            "begs": list(prog6.begs),
            "ends": list(prog6.ends),
            "consts": list(prog6.consts),
            "regs": regs,
            "xstride": list(prog6.xstride),
            "rp0": rp[0],
            "rp1": rp[1],
            "out_base": pad(out_bases, 0, outputs),
            "out_pitch": pad(pitch, 0, P_INDICES),
        }
        grid = [range(0, n, t) for n, t in zip(problem.p_shape, tiling.p_tile, strict=True)]
        tiles = tuple(tuple(o) for o in itertools.product(*grid))
        useful = per_lane * int(np.prod(problem.p_shape))
        per_tile = per_lane * int(np.prod(tiling.p_tile)) / lanes
        config["share_slot"], config["share_log2"] = share_choice(
            config, list(tiles), taus, compute_per_tile=per_tile)
        if slide is not None:       # the slide walk deals the tiles, not the 1-D groups
            config["share_slot"], config["share_log2"] = 0, 0
        config["share2_slot"], config["share2_log2"] = 0, 0
        sharing = None
        if share_dims == 2:
            held = None
            if hold:
                counts = [len(g) for g in grid]
                a_count = int(np.prod([-(-n // t) for n, t in zip(problem.a_shape,
                                                                  tiling.a_tile, strict=True)]))
                held = {}
                for (r, _), op in zip(ports, problem.operands, strict=True):
                    if sum(1 for q, _ in ports if q == r) == 1:
                        held[r * slots[0]] = _held_loads(op.transform, counts, a_count, taus)
            if slide is not None:   # the sliding slot's loads, in whole footprints
                k, j = slide
                counts = [len(g) for g in grid]
                a_count = int(np.prod([-(-n // t) for n, t in zip(problem.a_shape,
                                                                  tiling.a_tile, strict=True)]))
                tr = problem.operands[k].transform
                box = tr.footprint(tiling.p_tile, tiling.a_tile)
                held = dict(held or {})
                held[numbers[k]] = _slid_words(tr, j, tiling.p_tile, tiling.a_tile, counts,
                                               a_count) / (a_count * math.prod(box[:-1])
                                                           * (box[-1] + 3))
            sharing = share_plan(config, list(tiles), taus, compute_per_tile=per_tile,
                                 counts=share_counts, held=held,
                                 fixed=() if slide is None else (numbers[slide[0]],))
            if len(sharing) == 2:       # the processor's 2-D dealing
                _check_sharing(config, sharing, taus)
                (config["share_slot"], config["share_log2"]), \
                    (config["share2_slot"], config["share2_log2"]) = sharing
            elif sharing:               # one slot on the block walk (``share_block``)
                _check_sharing(config, sharing, taus)
                (config["share_slot"], config["share_log2"]), = sharing
            else:                       # the 1-D choice
                sharing = None
        config["share_block"] = int(bool(sharing) and len(sharing) == 1)
        config["share_order"] = 0 if config["share_block"] else share_order(
            config, tiling.lanes_per_index(), n_p)
        if hold:
            config["hold"] = held_rps(config)
        _check_fields(config, fields, problem)
        assert isinstance(program, Program)
        slid = None
        if slide is not None:
            number, j = numbers[slide[0]], slide[1]
            numbered, _, moves, _ = _plan_inputs(config, n_p)
            slot = numbered[number][1]
            deps = [moves[n] for n, _ in (sharing or ())]
            # on the block walk the slide index must be one the shared slot moves along (its
            # blocks then walk it innermost), and the jobs must slide: no accumulation index of
            # more than one tile moves the slot (its footprint would change with every job),
            # more than one tile along ``j``
            split = any(slot["stride"][P_INDICES + i] and config["a_tile"][i] < config["a_size"][i]
                        for i in range(A_INDICES))
            if _slide_ok(slot, j, config["p_tile"], lanes) and len(sharing or ()) < 2 \
                    and all(j in d for d in deps) and not split \
                    and config["p_tile"][j] < config["p_size"][j]:
                slid = (number, j)
        kernel = Kernel(problem, program, lanes, tiling, mapping, config, tensors,
                        tuple(out_list), _align(address, 4096), tiles, useful, sharing,
                        bool(hold), slid)
        return beat_aligned(kernel) if align_tensors else kernel

    # the cheapest tile of powers of two (what the search returned before it tried other sizes),
    # unless a tile of other sizes, or one that the estimate ranks first, is predicted MARGIN
    # faster on these TAUs (at 8 B/cycle): the tiles cheapest in DRAM traffic differ in idle
    # lanes, sharing and turnaround
    powers = [m for m in mappings if _powers_of_two(m.tile_p)]
    others = [m for m in mappings if not powers or m is not powers[0]] + extra
    if not powers:
        try:
            powers = [search(searched, lanes, sram_words=budgets, max_outputs=max_outputs,
                             powers_only=True, accept=accept)]
        except NoMapping:
            pass
    kernel, error = None, None
    if powers:
        try:
            kernel = build(powers[0])
        except CompileError as e:
            error = e
    best = _predicted(kernel, taus, rp_bytes, rp_ports) if kernel else None
    for mapping in others:
        try:
            other = build(mapping)
        except CompileError as e:
            error = error or e
            continue
        cycles = _predicted(other, taus, rp_bytes, rp_ports,
                            stop=None if best is None else (1 - MARGIN) * best)
        if cycles is not None and (best is None or cycles < (1 - MARGIN) * best):
            kernel, best = other, cycles
    if kernel is None:
        raise error
    other = swapped_operands(problem) if swap and best is not None else None
    if other is not None:
        try:
            alt = compile_problem(other, lanes=lanes, shift=shift, rp_bytes=rp_bytes,
                                  cp_bytes=cp_bytes, rp0_slots=rp0_slots, rp1_slots=rp1_slots,
                                  outputs=outputs, instructions=instructions,
                                  dram_base=dram_base, max_outputs=max_outputs, taus=taus,
                                  swap=False, share_dims=share_dims,
                                  share_counts=share_counts, hold=hold, window=window,
                                  rp_ports=rp_ports, merge_rows=merge_rows,
                                  clear_init=clear_init, align_tensors=align_tensors,
                                  clip_box=clip_box,
                                  slide=False if slide is None else (
                                      {0: 1, 1: 0}.get(slide[0], slide[0]), slide[1]))
        except (CompileError, NoMapping):
            alt = None
        cycles = None if alt is None else _predicted(alt, taus, rp_bytes, rp_ports,
                                                     stop=(1 - MARGIN) * best)
        if cycles is not None and cycles < (1 - MARGIN) * best:
            kernel, best = alt, cycles
    for inside in range(1, A_INDICES) if window else ():
        other = window_inside(problem, inside)
        if other is None or best is None:
            continue
        try:
            # the caller's cap on outputs, within what the CP holds at this program's registers
            cap = None if max_outputs is None else min(
                max_outputs, lanes * (cp_rows // max(program_for(other, shift=shift).regs, 1)))
            alt = compile_problem(other, lanes=lanes, shift=shift, rp_bytes=rp_bytes,
                                  cp_bytes=cp_bytes, rp0_slots=rp0_slots, rp1_slots=rp1_slots,
                                  outputs=outputs, instructions=instructions,
                                  dram_base=dram_base, max_outputs=cap, taus=taus, swap=swap,
                                  share_dims=share_dims, share_counts=share_counts, hold=hold,
                                  rp_ports=rp_ports, merge_rows=merge_rows,
                                  clear_init=clear_init, align_tensors=align_tensors,
                                  clip_box=clip_box, slide=False if slide is None else slide)
        except (CompileError, NoMapping, IsaError):
            continue
        cycles = _predicted(alt, taus, rp_bytes, rp_ports, stop=(1 - MARGIN) * best)
        if cycles is not None and cycles < (1 - MARGIN) * best:
            kernel, best = alt, cycles
    return kernel


def _slide_by_model(problem, options):
    """``compile_problem(slide=True)``: the kernel without a slide, or the fastest of the
    slides of :func:`slide_choices` that :func:`merit.perf.predict` finds MARGIN faster."""
    from .mapping.search import NoMapping
    taus, rp_bytes, rp_ports = options["taus"], options["rp_bytes"], options["rp_ports"]
    kernel = compile_problem(problem, slide=False, **options)
    best = (1 - MARGIN) * _predicted(kernel, taus, rp_bytes, rp_ports)
    for choice in slide_choices(problem, shift=options["shift"]):
        try:
            alt = compile_problem(problem, slide=choice, **options)
        except (CompileError, NoMapping):
            continue
        if alt.slide is None:
            continue
        cycles = _predicted(alt, taus, rp_bytes, rp_ports, stop=best)
        if cycles is not None and cycles < best:
            kernel, best = alt, cycles
    return kernel


def _share_by_model(problem, taus, options):
    """``compile_problem``'s default on ``taus`` > 1 TAUs: the 1-D kernel, or the fastest of the
    kernel of one slot on the block walk (with ``hold``) and the best 2-D plan on the 2-D
    kernel's tiles among those that :func:`merit.perf.predict` finds MARGIN faster than the 1-D
    kernel."""
    import dataclasses

    from .isa.programs import operand_ports
    from .mapping.search import NoMapping
    rp_bytes, rp_ports = options["rp_bytes"], options["rp_ports"]
    one = compile_problem(problem, share_dims=1, **options)
    bar = (1 - MARGIN) * _predicted(one, taus, rp_bytes, rp_ports)
    best, best_cycles = one, None
    # with ``hold``, one slot shared on the block walk (``share_block``): each TAU keeps its
    # place in the walk, a static deal of the tiles (what footprint reuse gains from). Without
    # it the measured rows' kernels stay those they were measured with (``docs/decisions.md``:
    # six rows' kernels would change)
    static = None
    if options["hold"] or options.get("slide"):
        try:
            static = compile_problem(problem, share_dims=2, share_counts=(1,), **options)
        except (CompileError, NoMapping):
            static = None
    # a slide's kernel (``slide=(operand, index)``) on the block walk only where it slides
    if static is not None and static.sharing and (static.slide or not options.get("slide")):
        c = _predicted(static, taus, rp_bytes, rp_ports, stop=bar)
        if c is not None and c < bar:
            best, best_cycles = static, c
    ports = [r for r, _ in operand_ports(problem, shift=options["shift"])]
    # two shared slots: each alone in its own RP, and no slide (its slot is never shared, and
    # the slide walk has one shared slot at most)
    if sorted(ports) != [0, 1] or options.get("slide"):
        return best
    try:
        two = compile_problem(problem, share_dims=2, share_counts=(2,), **options)
    except (CompileError, NoMapping):
        return best
    if not two.sharing:
        return best
    plan_best, cycles = two, _predicted(two, taus, rp_bytes, rp_ports)
    for plan in share_plans(two.config, len(two.problem.p_shape), taus):
        if plan == two.sharing:
            continue
        config = dict(two.config)
        (config["share_slot"], config["share_log2"]), \
            (config["share2_slot"], config["share2_log2"]) = plan
        other = dataclasses.replace(two, config=config, sharing=plan)
        c = _predicted(other, taus, rp_bytes, rp_ports, stop=cycles)
        if c is not None and c < cycles:
            plan_best, cycles = other, c
    if cycles < bar and (best_cycles is None or cycles < best_cycles):
        return plan_best
    return best


def search_caps(max_outputs, lanes):
    """Largest parallel tiles (outputs) under which :func:`compile_problem` takes the mapping
    search's cheapest tiles: the CP's cap, and half of it in whole warps."""
    half = max_outputs // 2 // lanes * lanes
    return (max_outputs, half) if half >= lanes else (max_outputs,)


def _predicted(kernel, taus, rp_bytes, rp_ports=RP_PORTS, stop=None):
    """:func:`merit.perf.predict`'s cycles of ``kernel``; one of more than RANKED_JOBS jobs is
    predicted on the first of its tiles in dispatch order that hold at most PREFIX_JOBS jobs
    (at least four per TAU), and the cycles scaled by its tiles over those predicted.

    None where they are certain to be at least ``stop`` (:func:`merit.perf.predict_cycles`: a
    candidate that cannot be chosen is not simulated to its end). Within one
    ``compile_problem`` call a kernel is predicted once (``_PREDICTED``)."""
    import dataclasses

    from .perf import predict_cycles
    key = None
    if _PREDICTED is not None:
        key = (_kernel_key(kernel), taus, tuple(rp_bytes), rp_ports)
        known = _PREDICTED.get(key)
        if known is not None:
            exact, value = known
            if exact:
                return value
            if stop is not None and stop <= value:      # known to be at least value
                return None
    part, n = kernel, None
    if _jobs(kernel) > RANKED_JOBS:
        per_tile = max(1, _jobs(kernel) // max(1, len(kernel.tiles)))
        n = min(len(kernel.tiles), max(4 * taus, PREFIX_JOBS // per_tile))
        if kernel.sharing or kernel.slide:  # the block / slide walk: its first tiles
            from .perf import dispatch_tiles
            first = dispatch_tiles(kernel, taus)[:n]
            part = dataclasses.replace(kernel, tiles=tuple(kernel.tiles[t] for t in first))
        else:
            part = dataclasses.replace(kernel, tiles=kernel.tiles[:n])
    # the prefix's bound: a hair above stop scaled to its tiles, so that a prefix stopped at it
    # scales to at least stop
    bound = None if stop is None or n is None else stop * n / len(kernel.tiles) * (1 + 1e-9)
    cycles = predict_cycles(part, taus=taus, rp_bytes=rp_bytes, rp_ports=rp_ports,
                            stop=stop if n is None else bound)
    if cycles is None:
        if key is not None:
            _PREDICTED[key] = (False, stop)
        return None
    if n is not None:
        cycles = cycles * len(kernel.tiles) / n
    if key is not None:
        _PREDICTED[key] = (True, cycles)
    return cycles


def _kernel_key(kernel):
    """What :func:`merit.perf.predict` reads of ``kernel``, as a hashable value."""
    return (json.dumps(kernel.config, sort_keys=True, default=str), tuple(kernel.tiles),
            repr(kernel.sharing), bool(kernel.hold), kernel.slide, kernel.lanes,
            len(kernel.outputs),
            tuple(kernel.problem.p_shape), tuple(kernel.problem.a_shape), repr(kernel.program))


def _powers_of_two(sizes):
    return all(t & (t - 1) == 0 for t in sizes)


def _jobs(kernel):
    """(parallel tile, accumulation tile) pairs of ``kernel``."""
    a_tiles = int(np.prod([-(-a // t) for a, t in zip(kernel.config["a_size"],
                                                       kernel.config["a_tile"], strict=True)]))
    return len(kernel.tiles) * a_tiles


def window_inside(problem, inside):
    """``problem`` (a fused convolution and pooling, :class:`merit.strategies.DotPool` with its
    window outside the channels: accumulation (window | channel, taps)) with its last
    ``inside`` window indices walked inside the channel passes: accumulation (outer window |
    channel | inner window | taps), strategy ``DotPool(inside=inside)``. The same tensors,
    transforms (their accumulation entries reordered) and results; an accumulation tile that
    splits the channels then reads each channel tile's footprint over the inner window once
    instead of once per window position (``docs/decisions.md``, Compiler). None when
    ``problem`` is not such a kernel or ``inside`` is not 1 .. its window indices."""
    from .problem import Problem
    from .strategies import DotPool
    from .transform import Transform
    st = problem.strategy
    if type(st) is not DotPool or st.inside or len(problem.levels) != 2:
        return None
    nw, rest = problem.levels
    if not 1 <= inside <= nw or rest < 1:
        return None
    order = list(range(nw - inside)) + [nw] + list(range(nw - inside, nw)) + \
        list(range(nw + 1, nw + rest))
    ops = []
    for op in problem.operands:
        tr = op.transform
        ops.append(Transform(tr.source_shape, list(tr.p), [tr.a[j] for j in order],
                             boundary=tr.boundary, name=tr.name if tr.named else None))
    out = Problem(problem.name, DotPool(st.pool, relu=st.relu, inside=inside), problem.p_shape,
                  tuple(problem.a_shape[j] for j in order), ops,
                  levels=(nw - inside, 1, inside, rest - 1), outputs=problem.outputs,
                  values={t.name: t.value for t in problem.tensors if t.value is not None},
                  ops=problem.ops)
    return out
