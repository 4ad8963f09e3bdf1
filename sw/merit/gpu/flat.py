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
from a name.  A stride ``s > 1`` reads every ``s``-th pixel: its image is not a C-contiguous
``(C, H W)`` view, so it stays on the convolution's own tiles (which stage strided axes
compactly)."""

import dataclasses

__all__ = ["FLAT_MARK", "fits", "flat_spec", "views", "launch_parts"]

#: Marks the product's specialization (its name ends so).
FLAT_MARK = "~flat"


def fits(spec):
    """The convolution's sizes as a dict, or a string saying why the product form does not apply:
    a float32 fp32 specialization of a plain sum (one level, loop inputs) of two inputs with
    p = (batch, filters, rows, columns) and a = (channels, 1, 1), the image ``(N, C, H, W)``
    moved by (batch; channels; row + tap row; column + tap column) with stride 1 and no offsets
    (so ``H``, ``W`` are the output's rows and columns), the weights ``(M, C, 1, 1)`` moved by
    (filter; channel; tap row; tap column)."""
    from .tiling import conv_inputs

    if spec.name.endswith(FLAT_MARK):
        return "the specialization is already the product form"
    roles = conv_inputs(spec, "the product form", lambda tr: not any(tr.offset),
                        lambda tr: not any(tr.offset))
    if isinstance(roles, str):
        return roles
    if tuple(spec.ashape[1:]) != (1, 1):
        return f"the product form needs a 1 x 1 window, not {spec.ashape[1]} x {spec.ashape[2]}"
    if set(roles) != {"img", "wt"}:
        return ("the product form needs an image (N, C, H, W) moved by (batch; channels; "
                "row; column) with stride 1 and no padding, and weights (M, C, 1, 1)")
    N, C, H, W = spec.inputs[roles["img"]].transform.source_shape
    Mf = spec.inputs[roles["wt"]].transform.source_shape[0]
    if tuple(spec.pshape) != (N, Mf, H, W):
        return (f"the product form needs the output (N, M, H, W) = {(N, Mf, H, W)}, not "
                f"{tuple(spec.pshape)}")
    return dict(img=roles["img"], wt=roles["wt"], N=N, C=C, H=H, W=W, M=Mf, Q=H * W)


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
    (out (N, M, H W),))``; a ValueError where one of them is not C-contiguous (a view would
    then not be the same memory)."""
    img, wt, out = inputs[d["img"]], inputs[d["wt"]], outputs[0]
    for a, name in ((img, "image"), (wt, "weights"), (out, "output")):
        if not a.flags.c_contiguous:
            raise ValueError(f"the product form (Tile.flat) needs a C-contiguous {name} {what}")
    N, C, Mf, Q = d["N"], d["C"], d["M"], d["Q"]
    return (wt.reshape(Mf, C), img.reshape(N, C, Q)), (out.reshape(N, Mf, Q),)


def launch_parts(spec, tile, inputs, outputs):
    """A ``Tile.flat`` tile's launch: ``(spec2, inputs2, outputs2)``, the product's
    specialization and its operands and output as views of ``inputs`` / ``outputs``."""
    spec2, d = flat_spec(spec)
    ins, outs = views(d, inputs, outputs, "cupy array")
    return spec2, ins, outs


def macs(d):
    """Multiply-adds of the product (the convolution's)."""
    return d["N"] * d["M"] * d["C"] * d["Q"]
