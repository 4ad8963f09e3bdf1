"""A convolution whose window is one pixel, as the matrix product it is (``Tile.flat``).

A convolution of a 1 x 1 window with stride 1 and no padding is, for every image, one matrix
product: ``out[n] (M, H W) = w (M, C) @ x[n] (C, H W)``, the output's rows and columns one index
``q = y W + x`` of ``H W`` values.  Tiled as a convolution, its blocks cover rectangles of
``(rows, columns)`` that ragged image sizes leave partly empty (61 x 77 pixels in blocks of 32 x
16: 5 % of the rows and 4 % of the columns computed for nothing), and every row of a footprint
starts anywhere in memory.  As the product ``(M, C) @ (N, C, H W)`` (:func:`merit.workloads.matmul`,
the weights broadcast over the images) it is a MERIT problem like any GEMM, tiled by the same
generator, cost model and autotuner (:func:`merit.gpu.tiling.flat_variants`), its blocks along
``q`` rows of the images' contiguous pixels.

No copy is made: the image, the weights and the output are C-contiguous, so the product's
operands are reshaped views of the same memory (:func:`views`), and the product's output is the
convolution's.  The arithmetic is the direct sum's (the same products, summed over the channels
in the order the product's tile sums them).

Which convolutions qualify is read from the specialization's transforms (:func:`fits`), never
from a name.  A stride ``s > 1`` or a padding reads pixels that are no C-contiguous ``(C, Ho
Wo)`` view of the image: there the launch first gathers them (:func:`gather`, every ``s``-th
pixel from the padding's offset, zero outside the image) into an ``(N, C, Ho Wo)`` array, the
product's operand, in the timed launch (:func:`launch_fill`)."""

import dataclasses

__all__ = ["FLAT_MARK", "fits", "flat_spec", "views", "gather", "launch_parts", "launch_fill"]

#: Marks the product's specialization (its name ends so).
FLAT_MARK = "~flat"


def fits(spec):
    """The convolution's sizes as a dict, or a string saying why the product form does not apply:
    a float32 fp32 specialization of a plain sum (one level, loop inputs) of two inputs with
    p = (batch, filters, rows, columns) and a = (channels, 1, 1), the image ``(N, C, H, W)``
    moved by (batch; channels; sy row + tap row + oy; sx column + tap column + ox) with any
    positive strides ``sy``, ``sx`` and offsets ``oy``, ``ox`` (a padding; "zero" or "error"
    boundaries there), the weights ``(M, C, 1, 1)`` moved by (filter; channel; tap row; tap
    column).  ``gather``: whether the product's image operand is gathered (a stride, an offset
    or an output of other rows and columns than the image's) or a view of the image."""
    from .tiling import conv_inputs

    if spec.name.endswith(FLAT_MARK):
        return "the specialization is already the product form"
    roles = conv_inputs(spec, "the product form", lambda tr: not any(tr.offset[:2]),
                        lambda tr: not any(tr.offset), strided=True)
    if isinstance(roles, str):
        return roles
    if tuple(spec.ashape[1:]) != (1, 1):
        return f"the product form needs a 1 x 1 window, not {spec.ashape[1]} x {spec.ashape[2]}"
    if set(roles) != {"img", "wt"}:
        return ("the product form needs an image (N, C, H, W) moved by (batch; channels; "
                "row; column) with positive strides, and weights (M, C, 1, 1)")
    tr = spec.inputs[roles["img"]].transform
    N, C, H, W = tr.source_shape
    Mf = spec.inputs[roles["wt"]].transform.source_shape[0]
    if tuple(spec.pshape[:2]) != (N, Mf):
        return (f"the product form needs the output (N, M, rows, columns) with (N, M) = "
                f"{(N, Mf)}, not {tuple(spec.pshape)}")
    Ho, Wo = spec.pshape[2:]
    sy, sx = (dict(t)[pos] for t, pos in zip(tr.terms[2:], (2, 3), strict=True))
    oy, ox = tr.offset[2:]
    gather = (sy, sx, oy, ox, Ho, Wo) != (1, 1, 0, 0, H, W)
    if gather and "clamp" in tr.boundary[2:]:
        return "the product form gathers a padding that reads zero, not a clamped one"
    return dict(img=roles["img"], wt=roles["wt"], N=N, C=C, H=H, W=W, M=Mf, Q=Ho * Wo,
                Ho=Ho, Wo=Wo, sy=sy, sx=sx, oy=oy, ox=ox, gather=gather)


_SPECS = {}


def flat_spec(spec):
    """``(spec2, dims)``: the product ``(M, C) @ (N, C, H W)`` of a convolution :func:`fits`
    takes (``dims``: its dict), as a float32 specialization named ``<name>~flat`` whose inputs
    are (weights, image); a ValueError saying why where the form does not apply."""
    key = spec.key()
    if key not in _SPECS:
        from merit import workloads as W

        from .spec import spec_of

        d = fits(spec)
        if isinstance(d, str):
            raise ValueError(f"problem {spec.name!r}: {d} (Tile.flat)")
        s2 = spec_of(W.matmul((d["M"], d["C"]), (d["N"], d["C"], d["Q"])), "float32")
        _SPECS[key] = dataclasses.replace(s2, name=f"{spec.name}{FLAT_MARK}"), d
    return _SPECS[key]


def views(d, inputs, outputs, what="array"):
    """The product's operands and output as views of the convolution's arrays (anything with
    ``reshape`` and ``flags.c_contiguous``, NumPy or CuPy): ``((w (M, C), x (N, C, H W)),
    (out (N, M, Ho Wo),))``, the image's view None where the product's image is gathered
    (``d["gather"]``, :func:`gather`); a ValueError where one of them is not C-contiguous (a
    view would then not be the same memory)."""
    img, wt, out = inputs[d["img"]], inputs[d["wt"]], outputs[0]
    for a, name in ((img, "image"), (wt, "weights"), (out, "output")):
        if not a.flags.c_contiguous:
            raise ValueError(f"the product form (Tile.flat) needs a C-contiguous {name} {what}")
    N, C, Mf, Q = d["N"], d["C"], d["M"], d["Q"]
    x = None if d.get("gather") else img.reshape(N, C, Q)
    return (wt.reshape(Mf, C), x), (out.reshape(N, Mf, Q),)


def gather_index(d):
    """Per element of the gathered image ``(N, C, Ho Wo)``, flattened, the element of the image
    ``(N, C, H, W)``, flattened, it takes, or -1 where it reads the padding (zero): the rule
    :data:`_GATHER` follows, as NumPy arrays (for checks on the CPU)."""
    import numpy as np

    N, C, H, W, Ho, Wo = (d[k] for k in ("N", "C", "H", "W", "Ho", "Wo"))
    nc, y, x = np.meshgrid(np.arange(N * C), np.arange(Ho), np.arange(Wo), indexing="ij")
    yy, xx = y * d["sy"] + d["oy"], x * d["sx"] + d["ox"]
    ok = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
    return np.where(ok, (nc * H + yy) * W + xx, -1).reshape(-1)


_GATHER = r"""
extern "C" __global__ void merit_gather1x1(const float* __restrict__ x, float* __restrict__ g,
                                           long long n, int H, int W, int Ho, int Wo, int sy,
                                           int sx, int oy, int ox) {
    // g (N C, Ho Wo) <- x (N C, H, W) at rows sy y + oy, columns sx c + ox, zero outside
    const int Q = Ho * Wo;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long nc = i / Q;
        const int q = (int)(i - nc * Q);
        const int y = (q / Wo) * sy + oy, c = (q % Wo) * sx + ox;
        g[i] = ((unsigned)y < (unsigned)H && (unsigned)c < (unsigned)W)
            ? __ldg(x + (nc * H + y) * W + c) : 0.f;
    }
}
"""
_gather_kernel = []
#: threads of a :func:`gather` block, and its most blocks (the rest by the grid-stride loop)
GATHER_THREADS, GATHER_BLOCKS = 256, 4096


def gather(d, img, dst):
    """Launch the gather of the convolution's image ``img`` (CuPy, ``(N, C, H, W)``) into ``dst``
    (``(N, C, Ho Wo)``, float32): ``dst[n, c, y Wo + x] = img[n, c, sy y + oy, sx x + ox]``,
    zero outside the image."""
    import numpy as np

    from .runtime import cupy

    cp = cupy()
    if not _gather_kernel:
        _gather_kernel.append(cp.RawModule(code=_GATHER).get_function("merit_gather1x1"))
    n = d["N"] * d["C"] * d["Q"]
    blocks = max(1, min(-(-n // GATHER_THREADS), GATHER_BLOCKS))
    _gather_kernel[0]((blocks,), (GATHER_THREADS,), (
        img, dst, np.int64(n), *(np.int32(d[k]) for k in ("H", "W", "Ho", "Wo", "sy", "sx", "oy",
                                                          "ox"))))


def launch_parts(spec, tile, inputs, outputs):
    """A ``Tile.flat`` tile's launch where the product's operands are views (no gather):
    ``(spec2, inputs2, outputs2)``, the product's specialization and its operands and output as
    views of ``inputs`` / ``outputs``; a ValueError where the image is gathered
    (:func:`launch_fill`)."""
    spec2, ins, outs, fill = launch_fill(spec, tile, inputs, outputs)
    if fill is not None:
        raise ValueError(f"problem {spec.name!r}: its product form gathers the image "
                         f"(launch_fill)")
    return spec2, ins, outs


def launch_fill(spec, tile, inputs, outputs):
    """A ``Tile.flat`` tile's launch: ``(spec2, inputs2, outputs2, fill)``, the product's
    specialization, its operands and output (views of ``inputs`` / ``outputs``, the image
    gathered into an array allocated here where :func:`fits` says so) and the function launching
    the gather before the product (None where there is none)."""
    spec2, d = flat_spec(spec)
    (wt, x), outs = views(d, inputs, outputs, "cupy array")
    if x is not None:
        return spec2, (wt, x), outs, None
    from .runtime import cupy

    img = inputs[d["img"]]
    if img.dtype.itemsize != 4:
        raise ValueError("the product form's gather (Tile.flat) copies float32 images")
    buf = cupy().empty((d["N"], d["C"], d["Q"]), dtype=img.dtype)
    return spec2, (wt, buf), outs, lambda: gather(d, img, buf)


def macs(d):
    """Multiply-adds of the product (the convolution's)."""
    return d["N"] * d["M"] * d["C"] * d["Q"]
