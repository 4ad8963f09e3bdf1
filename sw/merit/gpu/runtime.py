"""Running generated kernels with CuPy: arrays in, compiled modules per device, the autotuner.

CuPy is imported on first use, so that generating and checking kernel source needs no GPU.
Compiled kernels are memoized per (device, source); the autotuner's choice per (device,
specialization) is kept in a JSON file (``$MERIT_GPU_CACHE``, default
``~/.cache/merit/gpu-tiles.json``) so a later process starts with the tuned tile.
"""

import hashlib
import json
import os
import threading
from pathlib import Path

from .codegen import source
from .tile import Tile

__all__ = ["cupy", "to_device", "widen", "compiled", "launcher", "launch", "TileCache",
           "time_launch", "batch_timer"]

_lock = threading.Lock()
_modules = {}


def cupy():
    """The ``cupy`` module, imported lazily; a clear error when it is missing."""
    try:
        import cupy as cp
    except ImportError:
        raise ImportError("merit.gpu.run needs CuPy and a CUDA GPU (pip install cupy-cuda12x); "
                          "kernel source generation works without them") from None
    return cp


def to_device(array, name):
    """A C-contiguous CuPy array from a CuPy, NumPy or DLPack (e.g. torch) array."""
    cp = cupy()
    if str(getattr(array, "dtype", "")) == "torch.bfloat16":
        # CuPy has no bfloat16: the bits travel as uint16 (merit.gpu.prepare knows the type)
        import torch

        array = array.contiguous().view(torch.int16)
        out = cp.from_dlpack(array).view(cp.uint16)
    elif isinstance(array, cp.ndarray):
        out = array
    elif hasattr(array, "__dlpack__") and not hasattr(array, "__array_interface__"):
        out = cp.from_dlpack(array)
    else:
        out = cp.asarray(array)
    out = cp.ascontiguousarray(out)
    if out.data.ptr % 16:
        out = out.copy()  # 16-byte copies into shared memory need aligned rows
    return out


def widen(array, kind):
    """A float32 copy of a device array of element type ``kind`` ("float16", or "bfloat16" held
    as uint16 bits); exact."""
    cp = cupy()
    if kind == "bfloat16":
        return (array.astype(cp.uint32) << 16).view(cp.float32)
    return array.astype(cp.float32)


def device_key():
    cp = cupy()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return dev.id, f"{name} sm_{props['major']}{props['minor']}"


def compiled(spec, tile):
    """``(kernel, nblocks, nthreads, smem_bytes)``, compiled once per device and specialization
    (the source is generated on the first call only; :func:`forget` after changing a generator
    setting by hand)."""
    cp = cupy()
    dev = cp.cuda.Device().id
    if tile.wino or tile.flat:   # one module for the original specialization and the rewritten
        from .codegen import flat_spec, wino_spec

        spec = flat_spec(wino_spec(spec, tile), tile)
    key = (dev, spec.key(), tile)
    with _lock:
        hit = _modules.get(key)
    if hit is None:
        name, code, nblocks, nthreads, smem = source(spec, tile)
        if tile.wgmma:
            module = _module_sm90a(name, code)
        elif tile.ptxas:
            props = cp.cuda.runtime.getDeviceProperties(dev)
            module = _module_nvrtc(name, code, f"sm_{props['major']}{props['minor']}",
                                   f"-O{tile.ptxas}")
        else:
            module = cp.RawModule(code=code, options=("-std=c++17",))
        kernel = module.get_function(name)
        if smem > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = smem
        hit = (kernel, nblocks, nthreads, smem)
        with _lock:
            _modules[key] = hit
    return hit


def forget():
    """Drop the modules :func:`compiled` keeps (the launchers made keep theirs): after a module
    setting of ``merit.gpu`` that changes the source of the same tile is changed in the process
    (a probe's generator switch), the next launcher compiles the source as it is then."""
    with _lock:
        _modules.clear()


#: ptxas reports (registers, spills) of the sm_90a kernels, by kernel name.
ptxas_logs = {}
_cubin_dir = []


def _module_sm90a(name, code):
    """A module compiled by NVRTC for sm_90a (``wgmma``): CuPy names the plain sm_90 target
    itself, which rejects the instruction, so the source goes to NVRTC here and the cubin to
    CuPy."""
    return _module_nvrtc(name, code, "sm_90a")


def _module_nvrtc(name, code, arch, ptxas=""):
    """A module compiled by NVRTC to a cubin for ``arch``, with ``ptxas`` options added to ``-v``
    (``Tile.ptxas``: ``-O1``), loaded by CuPy; ptxas's report goes to :data:`ptxas_logs`.  With
    ``$MERIT_GPU_CUBINS`` set, the cubins (and reports) are kept in that folder by the digest of
    source, target and options, and one found there is loaded instead of compiled again: processes
    compiling ahead of one that times (``bench.gpu``) share them."""
    import tempfile

    cp = cupy()
    shared = os.environ.get("MERIT_GPU_CUBINS")
    # the source's digest in the file name: a kernel name is not unique to its source (a module
    # flag a probe toggles changes the source, not the name), and CuPy keeps the module it
    # loaded from a path; the target and options too where the folder is shared
    digest = hashlib.sha1(f"{code}\0{arch}\0{ptxas}".encode()).hexdigest()[:16] if shared \
        else hashlib.sha1(code.encode()).hexdigest()[:12]
    if shared:
        path = Path(shared) / f"{name}_{digest}.cubin"
        if path.exists():
            log = path.with_suffix(".log")
            ptxas_logs[name] = log.read_text() if log.exists() else ""
            return cp.RawModule(path=str(path))
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(code, f"{name}.cu", [], [])
    opts = ["-std=c++17", f"-arch={arch}", "--ptxas-options=-v"]
    opts += [f"--ptxas-options={ptxas}"] if ptxas else []
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception as exc:
            raise RuntimeError(f"NVRTC failed on {name} for {arch}: {exc}\n"
                               f"{nvrtc.getProgramLog(prog)}") from exc
        ptxas_logs[name] = nvrtc.getProgramLog(prog)
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    if shared:
        Path(shared).mkdir(parents=True, exist_ok=True)
        for suffix, data in ((".log", ptxas_logs[name].encode()), (".cubin", cubin)):
            tmp = path.with_suffix(f".{os.getpid()}.tmp")   # complete files only, by rename
            tmp.write_bytes(data)
            tmp.replace(path.with_suffix(suffix))
        return cp.RawModule(path=str(path))
    with _lock:
        if not _cubin_dir:
            _cubin_dir.append(tempfile.mkdtemp(prefix="merit-gpu-"))
    path = Path(_cubin_dir[0]) / f"{name}_{digest}.cubin"
    path.write_bytes(cubin)
    return cp.RawModule(path=str(path))


#: cuTensorMapEncodeTiled's enumerations (CUDA driver API): 16- and 32-bit elements (bits as
#: they are: no conversion on the way), the swizzles by bytes, L2 promotion by 128 bytes; no
#: interleave, zero fill outside the tensor.
_TMAP_UINT = {2: 1, 4: 2}
_TMAP_SWIZZLE, _TMAP_L2_128 = {0: 0, 32: 1, 64: 2, 128: 3}, 2


def tensor_map(array, dims, strides, box, swizzle, esize=2, estrides=None):
    """A tiled tensor map (the driver's 128-byte ``CUtensorMap``) of a device array of
    ``esize``-byte elements (2 or 4), made by ``cuTensorMapEncodeTiled`` through the driver
    library, as a NumPy value that CuPy passes by value (a kernel's ``__grid_constant__``
    parameter).  ``dims`` / ``box`` innermost first, ``strides``: bytes between rows (one per
    dimension after the first); ``estrides``: the box's traversal stride per dimension (it copies
    ``box / estride`` elements along each; all 1 when None)."""
    import ctypes

    import numpy as np

    ptr = array.data.ptr
    if ptr % 16 or any(s % 16 for s in strides):
        raise ValueError(f"a tensor map needs 16-byte aligned addresses and row strides, not "
                         f"{ptr:#x}, {strides}")
    lib = _libcuda()
    out = np.zeros(1, dtype=[("v", "<u8", (16,))])
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    rc = lib.cuTensorMapEncodeTiled(
        ctypes.c_void_p(out.ctypes.data), ctypes.c_int(_TMAP_UINT[esize]), u32(len(dims)),
        ctypes.c_void_p(ptr), (u64 * len(dims))(*dims), (u64 * len(strides))(*strides),
        (u32 * len(box))(*box), (u32 * len(box))(*(estrides or [1] * len(box))), ctypes.c_int(0),
        ctypes.c_int(_TMAP_SWIZZLE[swizzle]), ctypes.c_int(_TMAP_L2_128), ctypes.c_int(0))
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({rc}): dims {dims}, strides "
                           f"{strides}, box {box}, swizzle {swizzle}")
    return out[0]


_libcuda_handle = []


def _libcuda():
    import ctypes

    if not _libcuda_handle:
        _libcuda_handle.append(ctypes.CDLL("libcuda.so.1"))
    return _libcuda_handle[0]


_RELAYOUT = r"""
extern "C" __global__ void merit_cl_relayout(const T* __restrict__ src, T* __restrict__ dst,
                                             int outer, int C, int inner, int Cp) {
    // (outer, C, inner) -> (outer, inner, Cp), channels C .. Cp - 1 zero: 32 x 32 tiles through
    // shared memory, read along inner and written along the channels
    __shared__ T t[32][33];
    const int i0 = blockIdx.x * 32, c0 = blockIdx.y * 32;
    for (int o = blockIdx.z; o < outer; o += gridDim.z) {
        const T* s = src + (long long)o * C * inner;
        T* d = dst + (long long)o * inner * Cp;
        for (int y = threadIdx.y; y < 32; y += 8) {
            const int c = c0 + y, i = i0 + threadIdx.x;
            t[y][threadIdx.x] = (c < C && i < inner) ? s[(long long)c * inner + i] : (T)0;
        }
        __syncthreads();
        for (int y = threadIdx.y; y < 32; y += 8) {
            const int i = i0 + y, c = c0 + threadIdx.x;
            if (i < inner && c < Cp) d[(long long)i * Cp + c] = t[threadIdx.x][y];
        }
        __syncthreads();
    }
}
"""
_RELAYOUT_E = r"""
extern "C" __global__ void merit_cl_relayout_e(const T* __restrict__ src, T* __restrict__ dst,
                                               int outer, int C, int inner, int Cp) {
    // the same copy one destination element per thread (a short inner axis, such as a filter's
    // taps, leaves most of a 32 x 32 tile idle): written in order, read a few lines apart
    const long long n = (long long)outer * inner * Cp;
    for (long long x = blockIdx.x * (long long)blockDim.x + threadIdx.x; x < n;
         x += (long long)gridDim.x * blockDim.x) {
        const int c = (int)(x % Cp);
        const long long oi = x / Cp;
        const int i = (int)(oi % inner);
        const long long o = oi / inner;
        dst[x] = c < C ? src[(o * C + c) * inner + i] : (T)0;
    }
}
"""
_RELAYOUT_V = r"""
extern "C" __global__ void merit_cl_relayout_v(const T* __restrict__ src, T* __restrict__ dst,
                                               int outer, int C, int inner, int Cp) {
    // the same copy in 16-byte pieces (V elements; inner and Cp multiples of V, 16-byte aligned
    // arrays), 64 x 64 tiles: pieces of V pixels of a channel read and stored transposed
    // (pixel-major, rows padded by one word), then pieces of V channels of a pixel written
    __shared__ T t[64][64 + 4 / sizeof(T)];
    const int i0 = blockIdx.x * 64, c0 = blockIdx.y * 64, per = 64 / V;
    for (int o = blockIdx.z; o < outer; o += gridDim.z) {
        const T* s = src + (long long)o * C * inner;
        T* d = dst + (long long)o * inner * Cp;
        for (int v = threadIdx.x; v < 64 * per; v += blockDim.x) {
            const int r = v / per, e = (v % per) * V, c = c0 + r, i = i0 + e;
            uint4 x = make_uint4(0u, 0u, 0u, 0u);
            if (c < C && i < inner)
                x = *reinterpret_cast<const uint4*>(s + (long long)c * inner + i);
            const T* xe = reinterpret_cast<const T*>(&x);
            #pragma unroll
            for (int k = 0; k < V; ++k) t[e + k][r] = xe[k];
        }
        __syncthreads();
        for (int v = threadIdx.x; v < 64 * per; v += blockDim.x) {
            const int r = v / per, e = (v % per) * V, i = i0 + r, c = c0 + e;
            if (i < inner && c < Cp) {
                uint4 x;
                T* xe = reinterpret_cast<T*>(&x);
                #pragma unroll
                for (int k = 0; k < V; ++k) xe[k] = t[r][e + k];
                *reinterpret_cast<uint4*>(d + (long long)i * Cp + c) = x;
            }
        }
        __syncthreads();
    }
}
"""
_relayout_kernels = {}


def relayout(src, dst, outer, C, inner, Cp):
    """Launch the copy of ``src`` viewed as ``(outer, C, inner)`` into ``dst`` as ``(outer,
    inner, Cp)`` (channels past ``C`` zero): the channels-last copies of ``Tile.cl`` tiles; in
    16-byte pieces both ways where ``inner`` and ``Cp`` are multiples of a piece, else through 32
    x 32 tiles element by element, or one element per thread where ``inner`` is under 32."""
    cp = cupy()
    es = src.dtype.itemsize
    vec = 16 // es
    v = (inner % vec == 0 and Cp % vec == 0 and src.data.ptr % 16 == 0
         and dst.data.ptr % 16 == 0)
    form = "v" if v else "e" if inner < 32 else ""
    kern = _relayout_kernels.get((es, form))
    if kern is None:
        ctype = {2: "unsigned short", 4: "unsigned int"}[es]
        head = f"typedef {ctype} T;\n" + (f"#define V {vec}\n" if v else "")
        code = {"v": _RELAYOUT_V, "e": _RELAYOUT_E, "": _RELAYOUT}[form]
        kern = cp.RawKernel(head + code, f"merit_cl_relayout{'_' + form if form else ''}")
        _relayout_kernels[es, form] = kern
    if form == "e":   # one element per thread
        n = outer * inner * Cp
        kern((min(-(-n // 256), 65535 * 4),), (256,), (src, dst, outer, C, inner, Cp))
    elif v:   # 16-byte pieces both ways
        kern((-(-inner // 64), -(-Cp // 64), min(outer, 65535)), (256,),
             (src, dst, outer, C, inner, Cp))
    else:
        kern((-(-inner // 32), -(-Cp // 32), min(outer, 65535)), (32, 8),
             (src, dst, outer, C, inner, Cp))


def _cl_inputs(spec, tile, inputs):
    """A ``Tile.cl`` tile's specialization, its inputs (the channels-last copies, allocated
    here, in place of the loop operands) and the function filling those copies."""
    from .ldsm import cl_layout

    cp = cupy()
    spec2, moves = cl_layout(spec, tile.chunk)
    inputs = list(inputs)
    jobs = []
    for k, (outer, C, inner, Cp) in sorted(moves.items()):
        buf = cp.empty(outer * inner * Cp, dtype=inputs[k].dtype)
        jobs.append((inputs[k], buf, outer, C, inner, Cp))
        inputs[k] = buf

    def fill():
        for src, dst, *dims in jobs:
            relayout(src, dst, *dims)

    return spec2, inputs, fill


_PAD_ROWS = r"""
__device__ __forceinline__ void merit_pad_pieces(const unsigned int* __restrict__ src,
                                                 uint4* __restrict__ dst, unsigned int n,
                                                 unsigned int q, int C, unsigned int block,
                                                 unsigned int blocks) {
    // (rows, C) -> (rows, 4 q), columns C .. 4 q - 1 zero: one 16-byte piece of a destination
    // row per thread (n = rows * q pieces), its 4 words read one by one (a source row starts
    // at any word), so that a warp reads 128 consecutive words and writes 512 bytes
    for (unsigned int x = block * blockDim.x + threadIdx.x; x < n; x += blocks * blockDim.x) {
        const unsigned int r = x / q;
        const int c = (int)(x - r * q) * 4;
        const unsigned int* s = src + (long long)r * C + c;
        uint4 v;
        v.x = c < C ? s[0] : 0u;
        v.y = c + 1 < C ? s[1] : 0u;
        v.z = c + 2 < C ? s[2] : 0u;
        v.w = c + 3 < C ? s[3] : 0u;
        dst[x] = v;
    }
}

extern "C" __global__ void merit_pad_rows(const unsigned int* __restrict__ src,
                                          uint4* __restrict__ dst, unsigned int n,
                                          unsigned int q, int C) {
    merit_pad_pieces(src, dst, n, q, C, blockIdx.x, gridDim.x);
}

extern "C" __global__ void merit_pad_rows2(const unsigned int* __restrict__ s0,
                                           uint4* __restrict__ d0, unsigned int n0,
                                           unsigned int q0, int C0, unsigned int b0,
                                           const unsigned int* __restrict__ s1,
                                           uint4* __restrict__ d1, unsigned int n1,
                                           unsigned int q1, int C1) {
    // two copies in one launch: blocks 0 .. b0 - 1 the first, the others the second
    if (blockIdx.x < b0)
        merit_pad_pieces(s0, d0, n0, q0, C0, blockIdx.x, b0);
    else
        merit_pad_pieces(s1, d1, n1, q1, C1, blockIdx.x - b0, gridDim.x - b0);
}
"""
#: threads of a :func:`pad_rows` block, and its most blocks (the rest by the grid-stride loop)
PAD_THREADS, PAD_BLOCKS = 256, 2048


def pad_grid(rows, C, Cp):
    """``(pieces, blocks)`` of :func:`pad_rows`'s launch: the 16-byte pieces of the ``(rows,
    Cp)`` copy (one a thread) and the blocks covering them (at most :data:`PAD_BLOCKS`)."""
    if Cp % 4 or Cp < C or C < 1:
        raise ValueError(f"rows of {C} words padded to {Cp}: not 4-word pieces")
    n = rows * (Cp // 4)
    if n >= 2**32:   # the kernel counts pieces in 32 bits
        raise ValueError(f"{rows} rows of {Cp} words: more than 2**32 16-byte pieces")
    return n, max(1, min(-(-n // PAD_THREADS), PAD_BLOCKS))


def _pad_kernel(name):
    cp = cupy()
    kern = _relayout_kernels.get(name)
    if kern is None:
        kern = _relayout_kernels[name] = cp.RawModule(code=_PAD_ROWS).get_function(name)
    return kern


def _pad_args(src, dst, rows, C, Cp):
    import numpy as np

    if src.dtype.itemsize != 4 or dst.dtype.itemsize != 4 or dst.data.ptr % 16:
        raise ValueError("pad_rows copies 4-byte words into a 16-byte aligned array")
    n, blocks = pad_grid(rows, C, Cp)
    return blocks, (src, dst, np.uint32(n), np.uint32(Cp // 4), np.int32(C))


def pad_rows(src, dst, rows, C, Cp):
    """Launch the copy of the 4-byte words ``src`` viewed as ``(rows, C)`` into ``dst`` as
    ``(rows, Cp)`` (``Cp`` a multiple of 4, columns past ``C`` zero, ``dst`` 16-byte aligned):
    the :attr:`Tile.padrows` copies, written in 16-byte pieces (the padding included, so that
    ``dst`` needs no zeroing)."""
    blocks, args = _pad_args(src, dst, rows, C, Cp)
    _pad_kernel("merit_pad_rows")((blocks,), (PAD_THREADS,), args)


def pad_launches(jobs):
    """The launches of :func:`pad_rows_all` for the copies ``jobs``: lists of job indices, two
    to a launch in order, an odd last one alone."""
    n = len(jobs)
    return [list(range(i, min(i + 2, n))) for i in range(0, n, 2)]


def pad_rows_all(jobs):
    """Launch the copies ``jobs`` (``(src, dst, rows, C, Cp)`` each, as :func:`pad_rows` takes
    them) two to a launch (:func:`pad_launches`): each copy's blocks as :func:`pad_grid` gives
    them, so a launch covers both copies' pieces in one wave of blocks where one launch a copy
    took two, and a launch's fixed cost is paid once."""
    import numpy as np

    for group in pad_launches(jobs):
        if len(group) == 1:
            pad_rows(*jobs[group[0]])
            continue
        b0, a0 = _pad_args(*jobs[group[0]])
        b1, a1 = _pad_args(*jobs[group[1]])
        _pad_kernel("merit_pad_rows2")((b0 + b1,), (PAD_THREADS,),
                                       a0 + (np.uint32(b0),) + a1)


def _pad_inputs(spec, inputs):
    """A ``Tile.padrows`` tile's inputs (the padded copies, allocated here, in place of the loop
    inputs :func:`merit.gpu.codegen.padded_layout` pads) and the function filling those copies
    (:func:`pad_rows_all`: two copies a launch, the padding written with them)."""
    from .codegen import padded_layout

    cp = cupy()
    _, moves = padded_layout(spec)
    inputs = list(inputs)
    jobs = []
    for k, (rows, C, Cp) in sorted(moves.items()):
        buf = cp.empty((rows, Cp), dtype=inputs[k].dtype)
        if not inputs[k].flags.c_contiguous:   # the copy reads the array as it is then
            raise ValueError(f"input {k}: padded copies need a C-contiguous array")
        jobs.append((inputs[k], buf, rows, C, Cp))
        inputs[k] = buf

    def fill():
        pad_rows_all(jobs)

    return inputs, fill


def launcher(spec, tile, inputs, outputs):
    """A no-argument function launching the kernel of (spec, tile) on these device arrays (a
    ``Tile.cl`` or ``Tile.padrows`` tile: the copies of the loop operands first, in the same
    function: timed with the kernel; a ``Tile.wino`` tile: the transforms before and after its
    batched product, :func:`merit.gpu.wino.launch_parts`; a ``Tile.flat`` tile: the matrix
    product on views of the same arrays, a strided or padded image gathered first,
    :func:`merit.gpu.flat.launch_fill`; a split-K tile: the outputs zeroed first)."""
    if tile.flat:   # a stride or padding: the image gathered first (flat.launch_fill)
        from .flat import launch_fill

        spec2, inputs2, outputs2, gather = launch_fill(spec, tile, inputs, outputs)
        return _launcher(spec2, tile, inputs2, outputs2, gather)
    if not tile.wino:
        return _launcher(spec, tile, inputs, outputs)
    from .codegen import wino_spec
    from .wino import launch_parts

    inputs, outputs, before, after = launch_parts(spec, tile, inputs, outputs)
    go = _launcher(wino_spec(spec, tile), tile, inputs, outputs, before)

    def wino_go():
        go()
        after()

    return wino_go


def _launcher(spec, tile, inputs, outputs, fill=None):
    kernel, nblocks, nthreads, smem = compiled(spec, tile)
    if tile.cl:
        spec, inputs, fill = _cl_inputs(spec, tile, inputs)
    if tile.padrows and not tile.ragged:   # copies of the inputs with their rows padded,
        inputs, pads = _pad_inputs(spec, inputs)   # made in the launch (after a gather)
        fill = pads if fill is None else (lambda first=fill: (first(), pads()))
    if tile.ragged:   # the kernel reads the unpadded rows (RAGGED_PAIRS: in aligned pieces)
        from . import codegen

        for k in codegen.ragged_inputs(spec, tile):
            if not inputs[k].flags.c_contiguous:
                raise ValueError(f"input {k}: a ragged tile reads a C-contiguous array")
            if codegen.RAGGED_PAIRS and inputs[k].data.ptr % 16:
                raise ValueError(f"input {k}: a ragged tile reading aligned pairs "
                                 f"(codegen.RAGGED_PAIRS) needs an array starting on 16 bytes")
    args = tuple(inputs) + tuple(outputs)
    if tile.tma:   # the tensor maps of the operands the bulk copy engine takes, after the arrays
        from .ldsm import tma_ops

        args += tuple(tensor_map(inputs[t["k"]], t["dims"], t["strides"], t["box"],
                                 t["swizzle"], t["esize"], t.get("estrides"))
                      for t in tma_ops(spec, tile) if t)
    if tile.epi:   # the output's tensor map: the staged epilogue's bulk stores
        from .ldsm import epi_plan

        e = epi_plan(spec, tile)
        args += (tensor_map(outputs[0], e["dims"], e["strides"], e["box"], e["swizzle"],
                            e["esize"]),)
    if fill is not None and tile.split == 1:
        def go():
            fill()
            kernel((nblocks,), (nthreads,), args, shared_mem=smem)

        return go
    if tile.gemv:   # the streaming form: no zeroing launch
        from .gemv import workspace

        if workspace(spec, tile):   # a flag and each launch's own number
            import numpy as np

            cp = cupy()
            args += (cp.zeros(1, dtype=cp.int32),)
            epoch = [0]

            def go():
                epoch[0] = epoch[0] % (2**31 - 1) + 1
                kernel((nblocks,), (nthreads,), args + (np.int32(epoch[0]),), shared_mem=smem)

            return go
    elif tile.split > 1:   # split-K adds partial sums atomically: outputs start at zero
        cp = cupy()
        zero = [(o.data.ptr, o.nbytes) for o in outputs]

        def go():
            if fill is not None:   # a padrows tile's copies, a wino tile's transforms
                fill()
            stream = cp.cuda.get_current_stream().ptr
            for ptr, n in zero:
                cp.cuda.runtime.memsetAsync(ptr, 0, n, stream)
            kernel((nblocks,), (nthreads,), args, shared_mem=smem)

        return go

    def go():
        kernel((nblocks,), (nthreads,), args, shared_mem=smem)

    return go


def launch(spec, tile, inputs, outputs):
    """Launch the kernel of (spec, tile) on device arrays ``inputs`` (one per operand)."""
    launcher(spec, tile, inputs, outputs)()


def batch_timer(fn, min_ms=10.0):
    """A function timing one batch of back-to-back ``fn()`` calls with CUDA events: it returns
    the device time (ms) of one call.  The batch is sized here, once, to at least ``min_ms``
    (after a warm-up call), so that several launches can be timed in turns batch by batch."""
    cp = cupy()
    fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    once = max(cp.cuda.get_elapsed_time(start, stop), 1e-3)
    n = int(max(1, min(1000, min_ms / once)))

    def batch():
        start.record()
        for _ in range(n):
            fn()
        stop.record()
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) / n

    return batch


def time_launch(fn, min_ms=20.0, batches=5):
    """Device time (ms) of one ``fn()``: CUDA events around batches of back-to-back calls sized
    to at least ``min_ms`` each, median over ``batches`` (after a warm-up)."""
    batch = batch_timer(fn, min_ms)
    times = sorted(batch() for _ in range(batches))
    return times[len(times) // 2]


#: Bumped when the generator, the Tile fields or the autotuner's way of choosing change, so older
#: cached choices are not reused (24: the finalists' round, ``merit.gpu.FINAL_MARGIN``; 25: the
#: Winograd form, ``Tile.wino``; 26: the product form of 1 x 1 convolutions, ``Tile.flat``; 27:
#: the product form's fastest tile timed with its padded-row copies, ``tiling.pad_variants``;
#: 28: the padded form read from the unpadded rows, ``Tile.ragged``; 29: the product form of
#: strided and padded 1 x 1 convolutions, their image gathered first; 30: the staged forms of the
#: tiles reading a loop input through the cache, ``tiling.staged_variants``; 31: footprint rows
#: from the 32-byte sector below a box misaligned at run time, ``tiling.sector_variants``).
CACHE_VERSION = 31


class TileCache:
    """Autotuned tiles on disk, keyed by generator version, device name and specialization."""

    def __init__(self, path=None):
        path = path or os.environ.get("MERIT_GPU_CACHE")
        self.path = Path(path) if path else Path.home() / ".cache" / "merit" / "gpu-tiles.json"
        self._data = None

    def _load(self):
        if self._data is None:
            try:
                self._data = json.loads(self.path.read_text())
            except (OSError, ValueError):
                self._data = {}
        return self._data

    def get(self, device, spec):
        entry = self._load().get(f"v{CACHE_VERSION}|{device}|{spec.digest()}")
        if entry is None:
            return None
        try:
            return Tile(**{k: _tuplify(v) for k, v in entry.items()})
        except TypeError:   # written by another version of the Tile class
            return None

    def put(self, device, spec, tile):
        data = self._load()
        data[f"v{CACHE_VERSION}|{device}|{spec.digest()}"] = {
            k: getattr(tile, k) for k in Tile.__dataclass_fields__}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            tmp.replace(self.path)
        except OSError:
            pass


def _tuplify(v):
    if isinstance(v, list):
        return tuple(_tuplify(x) for x in v)
    return v
