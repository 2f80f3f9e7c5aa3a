"""Everything else: BitCast, random generators, signal processing (DFT, STFT, MelWeightMatrix),
detection (NonMaxSuppression, RoiAlign), GridSample beyond rtx's 2-D kernel, Col2Im, DeformConv,
TensorScatter. NumPy on the arrays: these ops carry no gradient here."""
from __future__ import annotations

import itertools

import numpy as np

import rtx.nn.functional as F
from rtx.kernel import windows as _win
from rtx.onnx._ops import arr, const, ints, is_grad_float, np_dtype, op, scalar, wrap_axis


@op("BitCast")
def bitcast(inputs, attrs, opset):
    a = arr(inputs[0])
    to = np_dtype(attrs["to"])
    if a.dtype.itemsize != to.itemsize or a.dtype.kind == "O" or to.kind == "O":
        raise ValueError(f"BitCast: {a.dtype} and {to} must be numeric types of the same width")
    return const(np.array(a, order="C").view(to))


# ---- random -------------------------------------------------------------------------------------
def _rng(attrs):
    seed = attrs.get("seed")
    return np.random.default_rng(None if seed is None else int(seed))


def _dtype(attrs, like=None, default=np.float32):
    if "dtype" in attrs:
        return np_dtype(attrs["dtype"])
    return arr(like).dtype if like is not None else np.dtype(default)


@op("RandomUniform")
def random_uniform(inputs, attrs, opset):
    return const(_rng(attrs).uniform(attrs.get("low", 0.0), attrs.get("high", 1.0), attrs["shape"])
                 .astype(_dtype(attrs)))


@op("RandomNormal")
def random_normal(inputs, attrs, opset):
    return const(_rng(attrs).normal(attrs.get("mean", 0.0), attrs.get("scale", 1.0), attrs["shape"])
                 .astype(_dtype(attrs)))


@op("RandomUniformLike")
def random_uniform_like(inputs, attrs, opset):
    shape = arr(inputs[0]).shape
    return const(_rng(attrs).uniform(attrs.get("low", 0.0), attrs.get("high", 1.0), shape)
                 .astype(_dtype(attrs, inputs[0])))


@op("RandomNormalLike")
def random_normal_like(inputs, attrs, opset):
    shape = arr(inputs[0]).shape
    return const(_rng(attrs).normal(attrs.get("mean", 0.0), attrs.get("scale", 1.0), shape)
                 .astype(_dtype(attrs, inputs[0])))


@op("Bernoulli")
def bernoulli(inputs, attrs, opset):
    p = arr(inputs[0])
    return const((_rng(attrs).uniform(size=p.shape) < p).astype(_dtype(attrs, inputs[0])))


@op("Multinomial")
def multinomial(inputs, attrs, opset):
    logits = arr(inputs[0]).astype(np.float64)
    n = attrs.get("sample_size", 1)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rng = _rng(attrs)
    out = np.stack([rng.choice(p.shape[1], size=n, p=row) for row in p])
    return const(out.astype(np_dtype(attrs.get("dtype", 6))))


# ---- signal processing --------------------------------------------------------------------------
def _complex(x):
    """[..., 1] real or [..., 2] (re, im) -> complex array without the last axis."""
    if x.shape[-1] == 1:
        return x[..., 0].astype(np.complex128)
    return x[..., 0] + 1j * x[..., 1]


def _as_pairs(c, dtype):
    return np.stack([c.real, c.imag], -1).astype(dtype)


@op("DFT")
def dft(inputs, attrs, opset):
    x = arr(inputs[0])
    length = inputs[1] if len(inputs) > 1 else None
    length = None if length is None or arr(length).size == 0 else int(scalar(length))
    if opset >= 20:
        ax = inputs[2] if len(inputs) > 2 else None
        axis = -2 if ax is None else int(scalar(ax))
    else:
        axis = attrs.get("axis", 1)
    axis = wrap_axis(axis, x.ndim, "DFT")
    inverse, onesided = attrs.get("inverse", 0), attrs.get("onesided", 0)
    sig = _complex(x)
    if length is None:
        length = 2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis]
    if inverse:
        if onesided:
            return const(np.fft.irfft(sig, n=length, axis=axis)[..., None].astype(x.dtype))
        return const(_as_pairs(np.fft.ifft(sig, n=length, axis=axis), x.dtype))
    out = np.fft.fft(sig, n=length, axis=axis)
    if onesided:
        out = np.take(out, np.arange(length // 2 + 1), axis=axis)
    return const(_as_pairs(out, x.dtype))


@op("STFT")
def stft(inputs, attrs, opset):
    x = arr(inputs[0])
    step = int(scalar(inputs[1]))
    window = arr(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else None
    flen = int(scalar(inputs[3])) if len(inputs) > 3 and inputs[3] is not None else window.shape[0]
    if window is None:
        window = np.ones(flen, x.dtype)
    onesided = attrs.get("onesided", 1)
    sig = _complex(x)  # [batch, length]
    n_frames = 1 + (sig.shape[1] - flen) // step
    frames = np.stack([sig[:, i * step:i * step + flen] for i in range(n_frames)], 1) * window
    out = np.fft.fft(frames, n=flen, axis=-1)
    if onesided:
        out = out[..., :flen // 2 + 1]
    return const(_as_pairs(out, x.dtype))


@op("MelWeightMatrix")
def mel_weight_matrix(inputs, attrs, opset):
    n_mel, n_dft, rate = int(scalar(inputs[0])), int(scalar(inputs[1])), int(scalar(inputs[2]))
    lo, hi = float(scalar(inputs[3])), float(scalar(inputs[4]))
    n_spec = n_dft // 2 + 1
    mel = lambda hz: 2595 * np.log10(1 + hz / 700)  # noqa: E731
    step = (mel(hi) - mel(lo)) / (n_mel + 2)
    hz = 700 * (10 ** ((np.arange(n_mel + 2) * step + mel(lo)) / 2595) - 1)
    bins = (((n_dft + 1) * hz) // rate).astype(int)
    out = np.zeros((n_spec, n_mel))
    for i in range(n_mel):
        left, center, right = bins[i], bins[i + 1], bins[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    return const(out.astype(np_dtype(attrs.get("output_datatype", 1))))


# ---- detection ----------------------------------------------------------------------------------
def _corners(b, center):
    if center:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], -1)
    y1, x1, y2, x2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], -1)


@op("NonMaxSuppression")
def non_max_suppression(inputs, attrs, opset):
    boxes, scores = arr(inputs[0]).astype(np.float64), arr(inputs[1]).astype(np.float64)
    get = lambda i, d: (scalar(inputs[i]) if len(inputs) > i and inputs[i] is not None  # noqa: E731
                        and arr(inputs[i]).size else d)
    max_out, iou_t, score_t = int(get(2, 0)), float(get(3, 0.0)), get(4, None)
    c = _corners(boxes, attrs.get("center_point_box", 0))
    area = (c[..., 2] - c[..., 0]) * (c[..., 3] - c[..., 1])
    selected = []
    for b in range(scores.shape[0]):
        for k in range(scores.shape[1]):
            s = scores[b, k]
            order = [i for i in np.argsort(-s, kind="stable") if score_t is None or s[i] > score_t]
            keep = []
            for i in order:
                if len(keep) >= max_out:
                    break
                ok = True
                for j in keep:
                    ih = min(c[b, i, 2], c[b, j, 2]) - max(c[b, i, 0], c[b, j, 0])
                    iw = min(c[b, i, 3], c[b, j, 3]) - max(c[b, i, 1], c[b, j, 1])
                    inter = max(ih, 0) * max(iw, 0)
                    union = area[b, i] + area[b, j] - inter
                    if union > 0 and inter / union > iou_t:
                        ok = False
                        break
                if ok:
                    keep.append(i)
            selected += [(b, k, i) for i in keep]
    return const(np.array(selected, np.int64).reshape(-1, 3))


@op("RoiAlign")
def roi_align(inputs, attrs, opset):
    x, rois, bidx = arr(inputs[0]), arr(inputs[1]).astype(np.float64), ints(inputs[2])
    oh, ow = attrs.get("output_height", 1), attrs.get("output_width", 1)
    ratio, scale = attrs.get("sampling_ratio", 0), attrs.get("spatial_scale", 1.0)
    mode = attrs.get("mode", "avg")
    half = attrs.get("coordinate_transformation_mode", "half_pixel" if opset >= 16 else "output_half_pixel")
    off = 0.5 if half == "half_pixel" else 0.0
    _, c, h, w = x.shape
    out = np.zeros((len(bidx), c, oh, ow), x.dtype)
    for n, b in enumerate(bidx):
        x1, y1, x2, y2 = rois[n] * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not off:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(np.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(np.ceil(rw / ow))
        count = max(gh * gw, 1)
        for ph in range(oh):
            for pw in range(ow):
                vals = []
                for iy in range(gh):
                    yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                        vals.append(_bilinear_taps(x[b], yy, xx, h, w))
                if mode == "avg":
                    out[n, :, ph, pw] = sum(sum(t) for t in vals) / count
                else:
                    out[n, :, ph, pw] = np.max([np.max(t, axis=0) for t in vals], axis=0)
    return const(out)


def _bilinear_taps(img, y, x, h, w):
    """The four weighted corner values of RoiAlign's bilinear sample (zeros outside)."""
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros((4, img.shape[0]), img.dtype)
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yl = yh = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xl = xh = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    return np.stack([hy * hx * img[:, yl, xl], hy * lx * img[:, yl, xh], ly * hx * img[:, yh, xl],
                     ly * lx * img[:, yh, xh]])


# ---- sampling -----------------------------------------------------------------------------------
def _reflect(x, lo, hi):
    rng = hi - lo
    below, above = x < lo, x > hi
    dx = np.where(below, lo - x, x - hi)
    n = np.floor(dx / rng)
    r = dx - n * rng
    even = n % 2 == 0
    return np.where(below, np.where(even, lo + r, hi - r), np.where(above, np.where(even, hi - r, lo + r), x))


def _cubic(t, a=-0.75):
    t = np.abs(t)
    return np.stack([((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                     ((a + 2) * t - (a + 3)) * t * t + 1,
                     ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                     ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a])


def grid_sample_np(x, grid, mode, padding, align):
    n, c = x.shape[:2]
    dims = x.shape[2:]
    nd = len(dims)
    g = grid.reshape(n, -1, nd)[..., ::-1].astype(np.float64)
    taps_idx, taps_w, borders = [], [], []
    for i, d in enumerate(dims):
        v = g[..., i]
        xs = (v + 1) / 2 * (d - 1) if align else ((v + 1) * d - 1) / 2
        if mode == "nearest":
            xs = np.rint(xs)
        lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
        borders.append((lo, hi))
        if padding == "border":
            xs = np.clip(xs, 0, d - 1)
        elif padding == "reflection":
            xs = _reflect(xs, lo, hi)
        if mode == "nearest":
            taps_idx.append([xs.astype(np.int64)])
            taps_w.append([np.ones_like(xs)])
        elif mode in ("linear", "bilinear"):
            x0 = np.floor(xs)
            t = xs - x0
            taps_idx.append([x0.astype(np.int64), x0.astype(np.int64) + 1])
            taps_w.append([1 - t, t])
        else:
            x0 = np.floor(xs)
            cw = _cubic(xs - x0)
            taps_idx.append([x0.astype(np.int64) + k for k in (-1, 0, 1, 2)])
            taps_w.append(list(cw))
    xf = x.astype(np.float64)
    out = np.zeros((n, g.shape[1], c))
    batch = np.arange(n)[:, None]
    for combo in itertools.product(*[range(len(t)) for t in taps_idx]):
        idx, wgt, valid = [], np.ones(g.shape[:2]), np.ones(g.shape[:2], bool)
        for i, k in enumerate(combo):
            j = taps_idx[i][k]
            wgt = wgt * taps_w[i][k]
            d = dims[i]
            if padding == "zeros":
                valid &= (j >= 0) & (j < d)
                j = np.clip(j, 0, d - 1)
            elif padding == "border":
                j = np.clip(j, 0, d - 1)
            else:
                j = np.clip(_reflect(j.astype(np.float64), *borders[i]).astype(np.int64), 0, d - 1)
            idx.append(j)
        vals = _gather(xf, batch, idx)
        out += (wgt * valid)[..., None] * vals
    return np.moveaxis(out, -1, 1).reshape((n, c) + grid.shape[1:-1]).astype(x.dtype)


def _gather(x, batch, idx):
    """x[b, :, i0, i1, ...] for index arrays (N, P) -> (N, P, C)."""
    moved = np.moveaxis(x, 1, -1)  # (N, *dims, C)
    return moved[(np.broadcast_to(batch, idx[0].shape),) + tuple(idx)]


@op("GridSample")
def grid_sample(inputs, attrs, opset):
    x, grid = inputs
    mode = attrs.get("mode", "linear" if opset >= 20 else "bilinear")
    padding = attrs.get("padding_mode", "zeros")
    align = bool(attrs.get("align_corners", 0))
    if arr(x).ndim == 4 and mode in ("linear", "bilinear", "nearest") and is_grad_float(x):
        return F.grid_sample(x, grid, mode="nearest" if mode == "nearest" else "bilinear",
                             padding_mode=padding, align_corners=align)
    return const(grid_sample_np(arr(x), arr(grid), mode, padding, align))


@op("Col2Im")
def col2im(inputs, attrs, opset):
    x = arr(inputs[0])
    image, block = ints(inputs[1]), ints(inputs[2])
    nd = len(image)
    dil = attrs.get("dilations") or [1] * nd
    pads = attrs.get("pads") or [0] * (2 * nd)
    strides = attrs.get("strides") or [1] * nd
    # contributions on the padding are dropped rather than summed into a padded image and cropped
    return const(_win.col2im(x, image, block, strides, dil, tuple(zip(pads[:nd], pads[nd:]))))


@op("DeformConv")
def deform_conv(inputs, attrs, opset):
    x, w, offset = arr(inputs[0]), arr(inputs[1]), arr(inputs[2])
    b = arr(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
    mask = arr(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else None
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    group, og = attrs.get("group", 1), attrs.get("offset_group", 1)
    sh, sw = attrs.get("strides") or [1, 1]
    dh, dw = attrs.get("dilations") or [1, 1]
    pads = attrs.get("pads") or [0, 0, 0, 0]
    oh, ow = offset.shape[2:]
    off = offset.reshape(n, og, kh * kw, 2, oh, ow)
    msk = np.ones((n, og, kh * kw, oh, ow)) if mask is None else mask.reshape(n, og, kh * kw, oh, ow)
    base_y = (np.arange(oh) * sh - pads[0])[:, None]
    base_x = (np.arange(ow) * sw - pads[1])[None, :]
    cols = np.zeros((n, c, kh * kw, oh, ow))
    cpo = c // og
    for k in range(kh * kw):
        i, j = divmod(k, kw)
        for g in range(og):
            py = base_y + i * dh + off[:, g, k, 0]
            px = base_x + j * dw + off[:, g, k, 1]
            sampled = _bilinear_zero(x[:, g * cpo:(g + 1) * cpo], py, px)
            cols[:, g * cpo:(g + 1) * cpo, k] = sampled * msk[:, g, k][:, None]
    cols = cols.reshape(n, group, (c // group) * kh * kw, oh * ow)
    wm = w.reshape(group, oc // group, cg * kh * kw)
    y = np.einsum("gok,ngkp->ngop", wm, cols).reshape(n, oc, oh, ow)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return const(y.astype(x.dtype))


def _bilinear_zero(x, py, px):
    """Bilinear samples of x (N, C, H, W) at per-batch positions py, px (N, OH, OW); zero outside."""
    n, c, h, w = x.shape
    y0, x0 = np.floor(py).astype(np.int64), np.floor(px).astype(np.int64)
    out = np.zeros((n, c) + py.shape[1:])
    nb = np.arange(n)[:, None, None]
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            wgt = (1 - np.abs(py - yy)) * (1 - np.abs(px - xx))
            ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            v = np.moveaxis(x, 1, -1)[nb, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]  # (N, OH, OW, C)
            out += np.moveaxis(v * (wgt * ok)[..., None], -1, 1)
    return out


@op("TensorScatter")
def tensor_scatter(inputs, attrs, opset):
    cache, update = arr(inputs[0]), arr(inputs[1])
    idx = ints(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else [0] * cache.shape[0]
    axis = wrap_axis(attrs.get("axis", -2), cache.ndim, "TensorScatter")
    circular = attrs.get("mode", "linear") == "circular"
    out = cache.copy()
    L, S = cache.shape[axis], update.shape[axis]
    for b in range(cache.shape[0]):
        for s in range(S):
            p = (s + idx[b]) % L if circular else s + idx[b]
            dst = [b] + [slice(None)] * (cache.ndim - 1)
            src = list(dst)
            dst[axis], src[axis] = p, s
            out[tuple(dst)] = update[tuple(src)]
    return const(out)

