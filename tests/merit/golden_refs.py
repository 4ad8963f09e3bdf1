"""Independent references for the workload library: numpy/scipy only, never merit.Transform."""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import signal


def conv2d(img, W, stride=1, padding=0, dilation=1, groups=1):
    """NCHW x MCKK cross-correlation through sliding windows and einsum, per group."""
    n, c, h, w = img.shape
    m, cg, k, _ = W.shape
    imgp = np.pad(img.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    span = dilation * (k - 1) + 1
    win = sliding_window_view(imgp, (span, span), axis=(2, 3))[..., ::dilation, ::dilation]
    win = win[:, :, ::stride, ::stride]
    mg = m // groups
    outs = [np.einsum("ncyxij,mcij->nmyx", win[:, g * cg:(g + 1) * cg],
                      W[g * mg:(g + 1) * mg].astype(np.float64)) for g in range(groups)]
    return np.concatenate(outs, axis=1)


def conv2d_scipy(img, W):
    """Valid convolution (groups = 1, stride 1) with scipy.signal.correlate, one plane at a time."""
    n, c = img.shape[:2]
    m = W.shape[0]
    out = None
    for b in range(n):
        for j in range(m):
            acc = sum(signal.correlate(img[b, i].astype(np.float64), W[j, i].astype(np.float64),
                                       mode="valid") for i in range(c))
            if out is None:
                out = np.zeros((n, m) + acc.shape)
            out[b, j] = acc
    return out


def deconv2d(img, W, stride=1, padding=0):
    """Transposed convolution as the scatter of every input pixel times the kernel."""
    n, c, h, w = img.shape
    _, m, k, _ = W.shape
    full = np.zeros((n, m, (h - 1) * stride + k, (w - 1) * stride + k))
    for ky in range(k):
        for kx in range(k):
            contrib = np.einsum("nchw,cm->nmhw", img.astype(np.float64), W[:, :, ky, kx])
            full[:, :, ky:ky + (h - 1) * stride + 1:stride,
                 kx:kx + (w - 1) * stride + 1:stride] += contrib
    ho, wo = full.shape[2] - 2 * padding, full.shape[3] - 2 * padding
    return full[:, :, padding:padding + ho, padding:padding + wo]


def pool2d(img, k, stride, padding, op):
    fill = -np.inf if op == "max" else 0.0
    imgp = np.pad(img.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)),
                constant_values=fill)
    win = sliding_window_view(imgp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    return win.max(axis=(-1, -2)) if op == "max" else win.mean(axis=(-1, -2))


def pixel_shuffle(img, r):
    n, crr, h, w = img.shape
    c = crr // (r * r)
    return img.reshape(n, c, r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c, h * r, w * r)


def correlation(I1, I2, d):
    c, h, w = I1.shape
    I2p = np.pad(I2.astype(np.float64), ((0, 0), (d, d), (d, d)))
    out = np.zeros((h, w, 2 * d + 1, 2 * d + 1))
    for u in range(2 * d + 1):
        for v in range(2 * d + 1):
            out[:, :, u, v] = (I1 * I2p[:, u:u + h, v:v + w]).sum(axis=0)
    return out


def sad_volume(cur, ref, block, search):
    h, w = cur.shape
    refp = np.pad(ref.astype(np.int64), search, mode="edge")
    d = 2 * search + 1
    out = np.zeros((h // block, w // block, d, d), dtype=np.int64)
    for u in range(d):
        for v in range(d):
            diff = np.abs(cur.astype(np.int64) - refp[u:u + h, v:v + w])
            out[:, :, u, v] = diff.reshape(h // block, block, w // block, block).sum(axis=(1, 3))
    return out


def bilateral(img, sigma_s, sigma_r, r):
    imgp = np.pad(img.astype(np.float64), r, mode="edge")
    win = sliding_window_view(imgp, (2 * r + 1, 2 * r + 1))
    t = np.arange(-r, r + 1)
    g = np.exp(-(t[:, None] ** 2 + t[None, :] ** 2) / (2 * sigma_s ** 2))
    k = g * np.exp(-(win - img[..., None, None]) ** 2 / (2 * sigma_r ** 2))
    return (k * win).sum(axis=(-1, -2)) / k.sum(axis=(-1, -2))


def same_filter(img, K):
    """'same' 2-D cross-correlation with zero padding (odd kernel)."""
    return signal.correlate2d(img.astype(np.float64), K.astype(np.float64), mode="same")
