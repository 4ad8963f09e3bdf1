"""How a kernel is tiled: thread block, register tile, accumulation tile and shared-memory layout.

A :class:`Tile` fixes every choice the code generator makes besides the problem itself.  The
block covers ``threads[j] * regs[j]`` values of parallel index ``j``; each thread computes
``prod(regs)`` outputs (register tiling).  Accumulation tiles hold ``chunk`` consecutive values of
the outermost accumulation index and every value of the others.  Inputs marked ``shared`` have the
footprint of each (block, accumulation tile) pair (Eq. 9) copied into shared memory once; the others
are read through the read-only data cache.
"""

import functools
import math
from dataclasses import dataclass, field

__all__ = ["Tile", "Geometry", "geometry"]


@dataclass(frozen=True)
class Tile:
    """One point of the tiling space.

    Attributes
    ----------
    threads : tuple of int
        Threads of the block along each parallel index.
    regs : tuple of int
        Register tile: outputs per thread along each parallel index.
    chunk : int
        Steps of accumulation index 0 per accumulation tile (1 when there is no accumulation).
    shared : tuple of bool
        Per input: its footprint goes through shared memory.
    pads : tuple of tuple of int
        Per input: words of padding added to the pitch of each footprint axis (bank conflicts).
    order : tuple of int
        Parallel indices from the fastest-varying to the slowest in the thread number (re-tiling).
    strided : tuple of int
        Per parallel index: a thread's register copies are adjacent (0 / False), ``threads[j]``
        apart (1 / True), or in runs of ``g`` adjacent values ``threads[j] * g`` apart (``g``;
        runs of 4 let 16-byte reads of neighbouring threads fall in consecutive banks).
    double : bool
        Pipeline the shared footprints across accumulation tiles (asynchronous copies).
    stages : int
        Buffers of that pipeline (2: double buffering; 3 or 4: the copies run further ahead).
    unroll : int
        Number of innermost accumulation indices whose loops are fully unrolled.
    vector : tuple of bool
        Per input: copy its footprint rows in 16-byte pieces when eligible (see
        :class:`Geometry`); empty = wherever eligible.
    mma : str
        "" for the SIMT kernel, or the tensor-core operand precision ("tf32", "fp16", "bf16") of
        the ``mma.sync`` kernel (see :mod:`merit.gpu.mma`).  Then ``threads`` are all 1, ``regs``
        is the block's box over the parallel indices, and the warps below compute it.
    warps : tuple of int
        Tensor-core tiles only: ``(WM, WN)`` warps along the rows and the columns of the block.
    frags : tuple of int
        Tensor-core tiles only: ``(FM, FN)`` fragments of 16 rows x 8 columns per warp.
    ldsm : bool
        Tensor-core tiles only: the operands' tiles are gathered into shared memory in the operand
        precision (2 bytes per FP16 / BF16 element) and read with ``ldmatrix``
        (:mod:`merit.gpu.ldsm`); ``chunk`` is then the number of flattened accumulation
        positions (k) per tile.
    vread : bool
        SIMT sums only: the fully unrolled accumulation steps are written out one by one, and
        every shared word a thread reads in them is loaded once, by an explicit 16-, 8- or 4-byte
        load (aligned groups of 4 or 2 words that the steps all use go 16 or 8 bytes at a time),
        at constant offsets from one base pointer per input (see
        :func:`merit.gpu.codegen.vector_reads`).
    lean : bool
        SIMT tiles only: the footprint copies are fully unrolled loops of a known trip count
        (:data:`merit.gpu.codegen.COPY_UNROLL` pieces per thread at most), and a copy pipeline
        takes one barrier per accumulation tile instead of two (the next tile's copies start
        after the barrier, into the buffer every thread has finished reading).
    wgmma : bool
        Staged tensor-core tiles only (``ldsm``): the products run as Hopper's
        ``wgmma.mma_async`` (sm_90a) on warpgroups of 4 warps reading both operand tiles straight
        from shared memory through matrix descriptors (128-byte rows, the canonical 128-byte
        swizzle), instead of ``ldmatrix`` + ``mma.sync`` (see :mod:`merit.gpu.ldsm`).
    cluster : int
        wgmma tiles only: 2 = blocks run in clusters of two that lie side by side along a row
        index and share the B tile: each gathers half of its lines and stores them into both
        blocks' shared memory (distributed shared memory, a cluster barrier per k tile), so the
        blocks read a third less from L2 on a 128 x 256 box.  With ``producer`` and ``tma``
        (both operands by bulk copies) each block's producer copies its A box and half of B's
        boxes, multicast into both blocks (``.multicast::cluster``); a buffer is refilled once
        the consumers of both blocks have released it.  With ``persist`` too the cluster walks
        pairs of output tiles adjacent along the row index (:func:`merit.gpu.ldsm.pair_index`;
        where that index has an odd number of blocks the last pair's second tile lies outside
        the output: its block copies and multiplies, and stores nothing).
        ``gemv`` tiles: the ``split`` blocks of a column block form one cluster (``cluster ==
        split``, 2 to 8) and add their sums through distributed shared memory: plain stores,
        no atomics and no zeroed output (:mod:`merit.gpu.gemv`).
    half : bool
        Staged tensor-core tiles only (``ldsm``, FP16 / BF16): the loop operands are read from
        arrays already in that precision (2 bytes per element,
        :attr:`merit.gpu.spec.Spec.operands`);
        four elements that lie contiguous and aligned in memory go straight into the swizzled
        shared layout with ``cp.async`` (zero-filled past the ends), the others are loaded as
        2-byte elements and stored without conversion; ``stages`` buffers (2 to 4) keep that many
        k tiles in flight.
    mn : bool
        FP16 / BF16 wgmma tiles only: an operand whose innermost line index walks memory with
        unit stride while its k do not (GEMM's B, a convolution's image) is staged MN-major:
        per k, 64 lines make one 128-byte row of an 8-k x 64-line atom (the 128-byte swizzle),
        read by wgmma with its transpose flag (``tnspA`` / ``tnspB``), so that its slots are
        copies of consecutive lines (16 bytes by ``cp.async`` where eight lie contiguous and
        aligned) instead of gathers of k one element at a time (see
        :func:`merit.gpu.ldsm.mn_ops`).
    producer : bool
        wgmma tiles of 3 or 4 buffers only (warp specialization): a fifth warpgroup
        (:data:`merit.gpu.ldsm.PRODUCER` threads, after the consumers) issues every copy of the
        operand tiles into a ring of ``stages`` buffers and the consumer warpgroups issue only
        wgmma; each buffer has a "full" and an "empty" mbarrier: a producer thread's copies arrive
        on "full" when they land (``cp.async.mbarrier.arrive.noinc``), the consumers wait on its
        phase parity, and arrive on "empty" once ``wgmma.wait_group`` says the buffer has been
        read, which the producer waits for before refilling it.  No block barrier in the loop.
        On float32 arrays TF32 operands are copied as they are (bulk copies, or ``cp.async`` of
        single words into the K-major layout, :func:`merit.gpu.ldsm.word_ops`: truncated to
        TF32 by wgmma), FP16 / BF16 ones converted in the producer's registers, one k tile
        ahead.
    tma : bool
        ``producer`` tiles only: operands that are plain matrices in memory (one line index, k
        contiguous, or lines contiguous and one k index; no boundary checks, see
        :func:`merit.gpu.ldsm.tma_ops`) are copied by the bulk tensor copy engine
        (``cp.async.bulk.tensor``, one instruction per operand box, issued by one producer
        thread, completing on the "full" mbarrier by its byte count) through tensor maps made on
        the host (``cuTensorMapEncodeTiled``) and passed as ``__grid_constant__`` parameters.
    persist : int
        ``producer`` tiles only: 0, or the number of blocks of a persistent grid (the device's
        SMs times the blocks per SM, set by the autotuner's candidates, at most the number of
        output tiles); each block takes output tiles ``blockIdx.x``, ``+ persist``, ... (a static
        stride schedule, :func:`merit.gpu.ldsm.schedule`).  The producer runs on into the next
        output tile's k tiles while the consumers store the last one's outputs: the mbarriers'
        phases are counted over every k tile the block has run (``g``), and the consumers release
        a tile's last buffer when its products are done.  The consumers store four adjacent fp32
        outputs at a time (16 bytes, after one lane exchange) where the output's innermost index
        is the columns' fastest (:func:`merit.gpu.mma.vector_store_ok`).
    areg : bool
        TF32 warp-specialized tiles with bulk tensor copies only: wgmma takes operand A from
        registers (``wgmma.mma_async ... {a0, a1, a2, a3}, descB``) instead of a shared-memory
        descriptor, so A may be MN-major in shared memory (wgmma reads TF32 operands from shared
        memory K-major only): the operand whose lines are contiguous in memory (GEMM's B) takes
        A's place (the roles are exchanged where it is B, :func:`merit.gpu.ldsm.tile_roles`),
        is copied MN-major by the copy engine (32 lines of 128 bytes per k row, the 128-byte
        swizzle) and each consumer loads its fragments with conflict-free 4-byte shared loads,
        rounding them to TF32 (to nearest, ties away) on the way; two register sets alternate
        over the k tiles (a tile's products may still read one while the next is loaded).
    pingpong : bool
        Persistent FP16 / BF16 / TF32 producer tiles of one consumer warpgroup (``warps`` of 4,
        a box of 64 rows): the block runs two such warpgroups, which take the block's output
        tiles in turn (ping-pong: group 0 its 1st, 3rd, ..., group 1 its 2nd, 4th, ...), so one
        stores a tile's outputs while the other's products run; the producer fills the ring for
        both in order, and the groups' k loops alternate through two named barriers (see
        :func:`merit.gpu.ldsm._emit_consumer_loop`).  Built and tested, not a candidate
        (:data:`merit.gpu.tiling.PINGPONG_TUNED`: slower).
    cl : bool
        Warp-specialized FP16 / BF16 (``half``) and TF32 tiles with bulk tensor copies only: a
        convolution-like problem whose row operand is an image (each axis moved by at most one
        row index and one accumulation index, one "channel" accumulation index alone on its
        own axis) runs on channels-last copies of both loop operands, made on the device in
        the same launch (the channel axis moved innermost and zero-padded to a multiple of
        ``chunk``; the accumulation indices reordered, the channel index innermost): each k tile
        is then one tap of the window by ``chunk`` channels, and the image's tile is one bulk
        copy of a 3- to 5-D box (channels x the block's pixels, the stride as the box's
        traversal stride) whose start moves with the tap, the zero fill outside the image
        being the padding (see :func:`merit.gpu.ldsm.cl_spec`, :func:`merit.gpu.ldsm.tma_ops`).
    halo : bool
        ``cl`` tiles whose image's innermost pixel axis is moved by a row index (stride ``s``)
        and a tap index (width ``kw`` > 1, dilation ``d``) alone, with a block extent along it
        that is a multiple of 64 (each consumer warpgroup's 64 rows within one row of the box):
        each ring buffer holds one row of taps (the other taps' digits and a channel block):
        per tap phase ``(kx d) % s`` one bulk copy of the block's pixels widened by the halo
        ``((kw - 1) d) // s``, and the ``kw`` taps' weights; the consumers read tap ``kx``
        from its phase's box at a start moved by ``(kx d) // s`` lines (the wgmma descriptors'
        start address; the swizzle pattern starts at the box, so the base offset stays 0).
        See :func:`merit.gpu.ldsm.halo_plan`.
    epi : int
        Persistent producer tiles whose output is a plain fp32 matrix (one row index, one column
        index innermost with unit stride, rows a multiple of 16 bytes apart: GEMM, FC): 0 (the
        consumers store their sums to global memory themselves), or the number of 8-KB staging
        buffers per consumer warpgroup of a staged epilogue: the warpgroup writes its sums 64
        rows x 32 columns at a time into a staging buffer (the 128-byte swizzle of the output's
        tensor map) and one of its threads hands each to the bulk copy engine
        (``cp.async.bulk.tensor`` from shared to global memory, clipped at the output's edges),
        so that the stores drain while the next output tile's products run.  See
        :func:`merit.gpu.ldsm.epi_plan`.
    evict : int
        L2 cache hints of a staged epilogue's tile (``epi``): 0 none; 1 the bulk stores of the
        outputs marked L2 evict-first (``createpolicy.fractional.L2::evict_first``, the output's
        lines leave the L2 before the operands'); 2 as 1, and the operands' bulk copies marked
        evict-last (each operand box is read again by other blocks).
    elect : bool
        Producer tiles whose operands all go by bulk tensor copies (``tma``) only: the producer
        warpgroup's warps other than its first leave at once (in clusters: after the last
        cluster barrier, which they meet as whole warps), so one warp alone polls the "empty"
        barriers and its first thread issues the copies (it did every copy already; the other
        three warps only polled the barriers beside it, taking issue slots from the consumers).
        Built and tested, not a candidate (:data:`merit.gpu.tiling.ELECT_TUNED`: not faster).
    place : int
        Persistent producer tiles without clusters (``cluster`` 1) only: 1, or 2 = the grid is
        launched in clusters of two blocks (``__cluster_dims__(2, 1, 1)`` on the kernel, the
        launch unchanged: the cluster shape is part of the compiled kernel), nothing else
        changed: no cluster code in the kernel, each block takes its own output tiles as
        before; only the blocks' placement differs (a cluster's two blocks run on SMs of one GPC
        at once).  The launched grid must be even.  Built and tested, not a candidate
        (:data:`merit.gpu.tiling.PLACE_TUNED`: not faster on the H100).
    hold : int
        Staged-epilogue tiles (``epi``) whose operands all go by bulk tensor copies only: 0, or
        the chunks (of :data:`merit.gpu.ldsm.EPI_COLS` columns) of each consumer warpgroup's
        sums that are not staged at the tile's epilogue but kept in registers and stored from
        there (8-byte stores) during the next output tile's k loop, a few per k tile (the last
        tile's after the loop), so that they leave while the tensor cores run instead of
        holding the consumers at the epilogue.  The registers come from the producer
        warpgroup (``setmaxnreg``: the producer drops to :data:`merit.gpu.ldsm.HOLD_REGS`
        ``[1]`` a thread, the consumers rise to ``[0]``).  See
        :func:`merit.gpu.ldsm.hold_fits`.
    skew : int
        Persistent producer tiles of two consumer warpgroups (cluster 1, no ping-pong) only: 0,
        or the k tiles by which the second warpgroup trails the first through each output tile:
        it starts the tile's k loop only once the first has issued its first ``skew`` k tiles
        (a named barrier, :data:`merit.gpu.ldsm.SKEW_BARRIER`).  The two warpgroups share the
        ring (each k tile's buffer is released by both), so the first reaches its epilogue while
        the second still has k tiles to multiply, and starts the next tile's k tiles (already in
        the ring) while the second stores: one warpgroup's products run beside the other's
        stores, at the same box and the same bytes from L2.  See
        :func:`merit.gpu.ldsm.skew_fits`.
    forder : int
        ``vread`` tiles only: the order of the register copies' products within one accumulation
        step (:func:`merit.gpu.codegen.fma_order`): 0 C order, 1 a snake over the last parallel
        index, 2 the first parallel index fastest, 3 its snake.  The products are the same; the
        order is what the compiler's register allocation and scheduling start from.
    vahead : bool
        ``vread`` tiles only: the shared loads of each group of 4 steps are written before the
        previous group's products (register double buffering in the source) instead of just
        before the group's own.
    ptxas : int
        SIMT tiles only: 0, or the optimization level ptxas compiles the kernel at (1: ``-O1``,
        passed through NVRTC's ``--ptxas-options``).  At the default level ptxas reschedules the
        unrolled steps freely and moves the sums between registers; at ``-O1`` it keeps the
        source's order of the products (:attr:`forder`), so that most products read one operand
        from the operand reuse cache and the sums stay in their registers.
    wrows : bool
        SIMT tiles only: footprints copied word by word (rows not in 16-byte pieces) whose row
        length divides the thread count go one column a thread, every ``threads / side``-th row
        (:func:`merit.gpu.codegen.row_lanes`), so that a warp's 4-byte ``cp.async`` copies
        touch one row (or ``32 / side``) instead of four: each global line a warp's copy touches
        costs a shared-memory wavefront (Nsight Compute counts the extra ones as LDGSTS bank
        conflicts); otherwise four adjacent words a thread.
    padrows : bool
        SIMT tiles only: the kernel reads copies of the loop inputs whose innermost axis is not a
        multiple of 4 words (so not copied in 16-byte pieces), that axis zero-padded to one
        (:func:`merit.gpu.codegen.padded_layout`), made in the same launch (timed with it): the
        footprints of those inputs then go by 16-byte ``cp.async`` copies.
    ragged : int
        ``padrows`` tiles only: 0, or the padded form's kernel reading the unpadded inputs
        itself, no copies (:func:`merit.gpu.codegen.ragged_inputs`): the footprints it would
        copy from the padded rows in 16-byte pieces are laid out in shared memory as there, each
        piece's 4 words read one by one from the row (which starts at any word), those outside
        the row read as zero, and written by one 16-byte shared store; 1 where the copy was (the
        loads waited for before the tile's steps), 2 the loads there into registers and the
        stores after the tile's steps (:data:`merit.gpu.codegen.RAGGED_STAGE` pieces a thread
        at most).  The shared memory holds the same words as the padded form's, so the sums are
        the same bit for bit.  (``codegen.RAGGED_PAIRS``, a generator switch: the words taken
        from the two aligned 16-byte pieces around them instead.)
    wino : int
        SIMT tiles only: 0, or ``m`` of Winograd's F(m x m, r x r) for a convolution of stride 1
        (:mod:`merit.gpu.wino`): the kernel is the batched product of the transformed weights
        and image tiles, the other fields its tile (over that product's indices), with the
        transforms launched around it (timed with it).
    flat : bool
        SIMT tiles only: a convolution of a 1 x 1 window run as the matrix product ``(M, C) @
        (N, C, Ho Wo)`` it is (:mod:`merit.gpu.flat`), the other fields its tile (over that
        product's indices), on views of the same arrays (no copy; a strided or padded
        convolution's image gathered into an ``(N, C, Ho Wo)`` array first, in the launch).
    sector : int
        SIMT tiles only: 0, or the words (8: a 32-byte sector) a footprint's rows start at a
        multiple of where they are copied in 16-byte pieces from a box whose misalignment is known
        only at run time (:class:`Geometry` ``align``; 0 keeps the 16-byte piece below the box,
        4 words).  Two neighbouring lanes' pieces then fall in one sector of a source row that
        starts on one, where a box starting a word before a block's first column (a filter's
        or a padded convolution's halo) puts every piece in a sector of its own: on the H200 the
        k=3 separable filter 4096^2 read 4.84 M L2 sectors for its 2.1 M (Nsight Compute) and ran
        0.0417 ms, 0.0383 with its rows from the sector below the box.
    minblocks : int
        SIMT and wgmma tiles: blocks per SM the compiler must make room for (the second argument of
        ``__launch_bounds__``: it caps the registers per thread at ``65536 / (minblocks *
        threads)``); 1 leaves the compiler free.
    split : int
        Split-K: the accumulation tiles are dealt to ``split`` blocks per output block, whose
        partial sums are added atomically into outputs zeroed first (sums only, see
        :func:`merit.gpu.tiling.splittable`).
    gemv : int
        SIMT sums that reuse one operand too little to tile it (a matrix read with unit stride
        along one output index, at most :data:`merit.gpu.gemv.ROWS` other outputs per column):
        0, or the matrix rows (4, 8, 12 or 16) a thread reads per step as aligned 16-byte pieces,
        every load of the step issued before its products (:mod:`merit.gpu.gemv`).  ``threads``
        then counts the block's threads (``threads / kgroups`` along that index, 4 columns
        each), ``chunk`` equals ``gemv`` and ``split`` deals the steps to blocks (their sums
        added atomically into the output that block 0 zeroes, or through a cluster).
    kgroups : int
        ``gemv`` tiles only: groups of the block's threads that take turns over its steps (group
        ``g`` the steps ``g, g + kgroups, ...``) and add their sums in shared memory before the
        atomic adds, so that a grid of as many threads adds ``kgroups`` times fewer.
    """

    threads: tuple
    regs: tuple
    chunk: int = 1
    shared: tuple = ()
    pads: tuple = ()
    order: tuple = ()
    strided: tuple = ()
    double: bool = False
    unroll: int = 0
    vector: tuple = ()
    mma: str = ""
    warps: tuple = ()
    frags: tuple = ()
    split: int = 1
    stages: int = 2
    ldsm: bool = False
    vread: bool = False
    lean: bool = False
    minblocks: int = 1
    # out of the repr (the kernel sources' tile comment): the label says "_wg", "_o1", "_a"
    forder: int = field(default=0, repr=False)
    vahead: bool = field(default=False, repr=False)
    ptxas: int = field(default=0, repr=False)
    wgmma: bool = field(default=False, repr=False)
    cluster: int = field(default=1, repr=False)
    half: bool = field(default=False, repr=False)
    mn: bool = field(default=False, repr=False)
    producer: bool = field(default=False, repr=False)
    tma: bool = field(default=False, repr=False)
    persist: int = field(default=0, repr=False)
    areg: bool = field(default=False, repr=False)
    pingpong: bool = field(default=False, repr=False)
    cl: bool = field(default=False, repr=False)
    halo: bool = field(default=False, repr=False)
    epi: int = field(default=0, repr=False)
    evict: int = field(default=0, repr=False)
    place: int = field(default=1, repr=False)
    elect: bool = field(default=False, repr=False)
    skew: int = field(default=0, repr=False)
    hold: int = field(default=0, repr=False)
    gemv: int = field(default=0, repr=False)
    kgroups: int = field(default=1, repr=False)
    wrows: bool = field(default=False, repr=False)
    padrows: bool = field(default=False, repr=False)
    ragged: int = field(default=0, repr=False)
    wino: int = field(default=0, repr=False)
    flat: bool = field(default=False, repr=False)
    sector: int = field(default=0, repr=False)

    def run(self, j):
        """Adjacent register copies per run along parallel index ``j`` (see ``strided``)."""
        s = int(self.strided[j]) if self.strided else 0
        return self.regs[j] if s == 0 else s

    def copy_offset(self, j, c):
        """Offset of register copy ``c`` along index ``j`` from the thread's first value."""
        g = self.run(j)
        return (c // g) * self.threads[j] * g + c % g

    @property
    def buffers(self):
        """Shared buffers per footprint: ``stages`` when pipelined, else 1."""
        return self.stages if self.double else 1

    @functools.cached_property
    def block(self):
        return tuple(t * r for t, r in zip(self.threads, self.regs, strict=True))

    @property
    def nthreads(self):
        if self.mma:   # a producer warpgroup after the consumers' warps
            return (32 * math.prod(self.warps) * (2 if self.pingpong else 1)
                    + (128 if self.producer else 0))
        return math.prod(self.threads)

    @property
    def nregs(self):
        return math.prod(self.regs)

    def label(self):
        """Short text naming the tile in kernel names and reports."""
        t = "x".join(map(str, self.threads))
        r = "x".join(map(str, self.regs))
        sh = "".join("s" if s else "g" for s in self.shared)
        db = ("_db" if self.stages == 2 else f"_p{self.stages}") if self.double else ""
        if self.mma:
            w = "x".join(map(str, self.warps))
            f = "x".join(map(str, self.frags))
            if self.ldsm:
                kind = ("wg" if self.wgmma else "lm") + (f"c{self.cluster}" if self.cluster > 1
                                                          else "")
                kind += f"_m{self.minblocks}" if self.minblocks > 1 else ""
                kind += f"_h{self.stages}" if self.half else ""
                kind += "_mn" if self.mn and not self.areg else ""
                kind += "_ra" if self.areg else ""
                kind += "_ws" if self.producer else ""
                kind += f"{self.stages}" if self.producer and not self.half else ""
                kind += "_tma" if self.tma else ""
                kind += f"_g{self.persist}" if self.persist else ""
                kind += "_pp" if self.pingpong else ""
                kind += "_cl" if self.cl else ""
                kind += "_halo" if self.halo else ""
                kind += f"_e{self.epi}" if self.epi else ""
                kind += f"_ef{self.evict}" if self.evict else ""
                kind += f"_pl{self.place}" if self.place > 1 else ""
                kind += "_el" if self.elect else ""
                kind += f"_sk{self.skew}" if self.skew else ""
                kind += f"_hd{self.hold}" if self.hold else ""
                return f"{self.mma}_b{r}_w{w}_f{f}_k{self.chunk}_{kind}"
            return f"{self.mma}_b{r}_w{w}_f{f}_c{self.chunk}_{sh}{db}"
        sk = f"_k{self.split}" if self.split > 1 else ""
        st = "_s" + "".join(str(int(g)) for g in self.strided) if any(self.strided) else ""
        vr = ("_l" if self.lean else "") + ("_v" if self.vread else "")
        vr += f"_o{self.forder}" if self.forder else ""
        vr += "_a" if self.vahead else ""
        vr += f"_x{self.ptxas}" if self.ptxas else ""
        vr += "_w" if self.wrows else ""
        vr += "_pr" if self.padrows else ""
        vr += f"_rg{self.ragged}" if self.ragged else ""
        vr += f"_wn{self.wino}" if self.wino else ""
        vr += "_fl" if self.flat else ""
        vr += f"_sc{self.sector}" if self.sector else ""
        vr += f"_m{self.minblocks}" if self.minblocks > 1 else ""
        vr += f"_gv{self.gemv}" if self.gemv else ""
        vr += f"g{self.kgroups}" if self.kgroups > 1 else ""
        vr += f"c{self.cluster}" if self.gemv and self.cluster > 1 else ""
        return f"t{t}_r{r}_c{self.chunk}_u{self.unroll}_{sh}{db}{sk}{st}{vr}"


@dataclass(frozen=True)
class Geometry:
    """Shared-memory layout of one input's footprint for a tile.

    ``sides``: footprint side per source axis (Eq. 9); ``pitches``: words between neighbours along
    each axis (padding included); ``shift``: per axis, how far the box's low corner lies below the
    coordinate of the tile's first element (non-zero only on axes walked by negative strides);
    ``words``: buffer size, a multiple of 4 (so that every buffer starts 16-byte aligned);
    ``elements``: footprint elements.

    ``vector``: the innermost axis is copied in aligned 16-byte pieces (the source rows are a
    multiple of 4 words and the box is at least 8 wide); each smem row then holds ``row`` words
    starting at the 4-aligned (``align``-aligned) column below the box, so reads add the box's
    misalignment (0..3, or 0 .. ``align - 1``) unless it is always 0 (``aligned``).
    ``aligned``: that misalignment is 0 for every block and accumulation tile (the box's low corner
    moves in multiples of 4 words), so the kernel needs no run-time correction and the compiler
    can prove 16-byte alignment of the reads.
    ``align``: where the box is not ``aligned``, the words its rows start at a multiple of (4,
    or :attr:`Tile.sector`): each smem row holds ``row`` words (a multiple of ``align``) from
    the ``align``-aligned column below the box, and the misalignment is 0 .. ``align - 1``.

    ``step``: per axis, the greatest common divisor of the strides of the positions that move
    within the tile (empty: all 1).  The tile reads only every ``step``-th word of the box along
    such an axis, so only those are staged: ``sides`` counts them and neighbours in shared memory
    are ``step`` source words apart (an axis read with stride 2 takes half the words and copies).
    :meth:`coef` turns a source stride into a shared-memory word offset.
    """

    sides: tuple
    pitches: tuple
    shift: tuple
    words: int
    elements: int
    vector: bool = False
    row: int = 0
    aligned: bool = False
    step: tuple = ()
    align: int = 4

    def coef(self, ax, s):
        """Shared words between elements ``s`` source words apart along axis ``ax`` (positions
        that do not move within the tile, whose stride ``step`` need not divide, add 0)."""
        if not self.step or self.step[ax] == 1:
            return s * self.pitches[ax]
        d = self.step[ax]
        return s // d * self.pitches[ax] if s % d == 0 else 0


def extents(spec, tile):
    """Per position of k = (p, a): how many values one block / accumulation tile covers."""
    a = tuple(spec.ashape)
    if a:
        a = (min(tile.chunk, a[0]),) + a[1:]
    return tuple(tile.block) + a


def geometry(spec, tile, k):
    """The :class:`Geometry` of input ``k`` for ``tile``."""
    pads = tile.pads[k] if tile.pads and tile.pads[k] else ()
    vec = not tile.vector or bool(tile.vector[k])
    return _geometry(spec, tile.block, tile.chunk, tuple(pads), vec, k, tile.sector or 4)


@functools.lru_cache(maxsize=1 << 16)
def _geometry(spec, block, chunk, pads, vec, k, align=4):
    tr = spec.inputs[k].transform
    tile = Tile(tuple(1 for _ in block), block, chunk)
    ext = extents(spec, tile)
    step = tuple(math.gcd(*[abs(s) for pos, s in terms if ext[pos] > 1]) or 1
                 for terms in tr.terms)
    sides = tuple(1 + sum((ext[pos] - 1) * abs(s) for pos, s in terms) // d
                  for terms, d in zip(tr.terms, step, strict=True))
    shift = tuple(-sum((ext[pos] - 1) * s for pos, s in terms if s < 0) for terms in tr.terms)
    pads = pads or (0,) * len(sides)
    n = len(sides)
    vector = (vec and n >= 1 and tr.source_shape[-1] % 4 == 0 and sides[-1] >= 8
              and step[-1] == 1)
    aligned = False
    if vector:
        steps = [s * (block[pos] if pos < spec.np else ext[pos]) for pos, s in tr.terms[-1]
                 if pos <= spec.np]
        aligned = all(v % 4 == 0 for v in steps + [tr.offset[-1] - shift[-1]])
    align = 4 if aligned or not vector else align
    row = (-(-(sides[-1] + align - 1) // align) * align if vector and not aligned
           else -(-sides[-1] // 4) * 4 if vector else (sides[-1] if n else 1))
    widths = sides[:-1] + (row,) if n else ()
    pitches = [1] * n
    for axis in range(n - 2, -1, -1):
        pitches[axis] = pitches[axis + 1] * widths[axis + 1] + pads[axis]
    words = -(-(pitches[0] * widths[0] if n else 1) // 4) * 4
    step = step if any(d > 1 for d in step) else ()
    return Geometry(sides, tuple(pitches), shift, words, math.prod(sides), vector, row, aligned,
                    step, align)
