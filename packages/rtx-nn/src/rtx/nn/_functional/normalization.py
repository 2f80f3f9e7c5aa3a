"""Normalization: batch_norm, instance_norm, layer_norm, group_norm, rms_norm and
local_response_norm, as torch.nn.functional.

layer_norm and rms_norm run rtx.kernel's fused kernels (forward and backward; measured on
64x768 float32 on the CPU: forward 78 us fused vs 111 us composed, forward + backward 214 us
vs 812 us). batch_norm and instance_norm normalise over non-trailing axes with one Primitive
(NativeBatchNorm) whose statistics are computed once on arrays; the running statistics are updated
in place, as PyTorch does (momentum, unbiased running_var).

Every backward pass is written so that double backward works: when a graph of the backward
is recorded (create_graph=True) the gradient is built from Tensor ops of the saved input;
otherwise the saved statistics (or the fused backward kernels) are used directly.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from rtx.extend import Primitive, Tensor, cast, current_hook, grad_mode, increment_version, raw, sum_to, wrap
from rtx.extend import autocast as _autocast
from rtx.runtime import dtypes as _dt

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "local_response_norm"]


def _check(input, op):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {input.dtype}")


def _like(t, input):
    """An affine parameter in the input's dtype (differentiably), or None."""
    if t is None:
        return None
    if type(t) is not Tensor:
        raise TypeError(f"expected a Tensor or None for the affine parameters, got {type(t).__name__}")
    return cast(t, raw(input).dtype) if raw(t).dtype != raw(input).dtype else t


def _arr(t):
    return None if t is None else raw(t)


def _eps_of(dtype):
    if dtype is _dt.bfloat16:
        return 2.0 ** -7
    return float(np.finfo(dtype.np).eps)


# ---- normalisation over arbitrary axes (batch_norm, instance_norm) ---------------------------------


def _stats(xd, axes):
    mean = xd.mean(axis=axes, keepdims=True)
    xc = xd - mean
    var = (xc * xc).mean(axis=axes, keepdims=True)
    return mean, var


class NativeBatchNorm(Primitive):
    """y = (x - mean) / sqrt(var + eps) * w + b, statistics over `axes` (given, computed on
    arrays by the caller, who also needs them for the running averages); w and b are None or
    broadcast against x."""

    @staticmethod
    def forward(ctx, x, w, b, *, axes, eps, mean, var):
        rstd = 1 / np.sqrt(var + eps)
        # x * scale + shift with the per-channel factors folded first, as PyTorch's CPU kernel
        # does: two whole-array passes and one allocation instead of four passes and two
        # (measured 0.30 vs 0.64 ms for 8x64x32x32 float32)
        scale = rstd if w is None else rstd * raw(w)
        shift = -mean * scale
        if b is not None:
            shift = shift + raw(b)
        y = np.multiply(raw(x), scale)
        y += shift
        ctx.save_for_backward(x, w)
        ctx.axes, ctx.eps, ctx.mean, ctx.rstd = axes, eps, mean, rstd
        ctx.b_shape = None if b is None else raw(b).shape
        return y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        axes = ctx.axes
        if not grad_mode.enabled:
            return _batch_norm_backward(raw(g), raw(x), _arr(w), ctx.mean, ctx.rstd, axes, ctx.b_shape, nx, nw, nb)
        # Recorded: the statistics as functions of x, so second derivatives are right.
        xc = x - x.mean(axes, keepdim=True)
        rstd = ((xc * xc).mean(axes, keepdim=True) + ctx.eps).rsqrt()
        xhat = xc * rstd
        gx = gw = gb = None
        if nx:
            gxhat = g * w if w is not None else g
            gx = rstd * (gxhat - gxhat.mean(axes, keepdim=True) - xhat * (gxhat * xhat).mean(axes, keepdim=True))
        if nw:
            gw = sum_to(g * xhat, w.shape)
        if nb:
            gb = sum_to(g, ctx.b_shape)
        return gx, gw, gb


def _batch_norm_backward(g, x, w, mean, rstd, axes, b_shape, nx, nw, nb):
    """NativeBatchNorm's backward on arrays (nothing recorded), the recorded formulas rearranged:
    with xc = x - mean, M values per statistic and a = rstd * w,
        gx = a * g - a * sum(g) / M - xc * (a * rstd**2 * sum(g * xc) / M)
        gw = sum(g * xc * rstd),  gb = sum(g)
    in a few whole-array passes and two temporaries (the Tensor version takes ~14 passes and
    as many temporaries: 23 of a ResNet-18 training step's ~225 ms on the CPU, measured)."""
    dt = g.dtype
    cdt = np.float32 if dt.itemsize < 4 else dt     # float16/bfloat16: sums in float32
    g, x = g.astype(cdt, copy=False), x.astype(cdt, copy=False)
    mean, rstd = mean.astype(cdt, copy=False), rstd.astype(cdt, copy=False)
    M = x.size // mean.size
    xc = x - mean
    t = np.multiply(g, xc)
    sum_gxc = t.sum(axis=axes, keepdims=True)
    sum_g = g.sum(axis=axes, keepdims=True)
    gx = gw = gb = None
    if nx:
        a = rstd if w is None else rstd * w.astype(cdt, copy=False)
        np.multiply(g, a, out=t)
        np.multiply(xc, a * rstd * rstd * sum_gxc / M, out=xc)
        t -= xc
        t -= a * sum_g / M
        gx = wrap(t.astype(dt, copy=False))
    if nw:
        gw = wrap(_sum_to(sum_gxc * rstd, w.shape).astype(dt, copy=False))
    if nb:
        gb = wrap(_sum_to(sum_g, b_shape).astype(dt, copy=False))
    return gx, gw, gb


def _sum_to(a, shape):
    """a (keepdims statistics shape) summed down to the broadcastable `shape` of w or b."""
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and a.shape[i + lead] != 1)
    return a.sum(axis=axes, keepdims=True).reshape(shape) if axes else a.reshape(shape)


def _update_running(running, batch_stat, momentum):
    """running <- (1 - momentum) * running + momentum * batch_stat, in place (a buffer)."""
    new = batch_stat.astype(raw(running).dtype, copy=False)
    r = raw(running)
    r *= 1 - momentum
    r += momentum * new
    increment_version(running)


def batch_norm_scale_shift(running_mean, running_var, eps, weight=None, bias=None):
    """(scale, shift) with which an eval BatchNorm is x * scale + shift per channel:
    scale = weight / sqrt(running_var + eps), shift = bias - running_mean * scale. The one copy of
    this formula: eval batch_norm/instance_norm and BatchNorm folding (rtx.nn.utils.fusion,
    rtx.compress) use it; differentiable in weight and bias."""
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    return scale, shift


def _eval_affine(input, running_mean, running_var, weight, bias, eps, shape):
    """(x - running_mean) / sqrt(running_var + eps) * w + b as x * scale + shift."""
    scale, shift = batch_norm_scale_shift(_like(running_mean, input), _like(running_var, input), eps, weight, bias)
    return input * scale.reshape(shape) + shift.reshape(shape)


def _verify_batch_size(size):
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _check_channels(C, **tensors):
    for name, t in tensors.items():
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Normalise each channel (dim 1) over the batch and spatial dims. In training the batch
    statistics are used and, when given, running_mean/running_var are updated in place
    (running_var with the unbiased batch variance); otherwise the running statistics are used."""
    _check(input, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of at least 2 dims (N, C, ...), got {input.ndim}D input "
                         f"of shape {list(input.shape)}")
    if training:
        _verify_batch_size(input.shape)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    C = input.shape[1]
    _check_channels(C, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    nd = input.ndim
    shape = (1, C) + (1,) * (nd - 2)
    w, b = _like(weight, input), _like(bias, input)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        return _eval_affine(input, running_mean, running_var, w, b, eps, shape)
    axes = (0,) + tuple(range(2, nd))
    mean, var = _stats(raw(input), axes)
    momentum = 0.0 if momentum is None else momentum
    n = input.numel() // C
    if running_mean is not None:
        _update_running(running_mean, mean.reshape(C), momentum)
    if running_var is not None:
        _update_running(running_var, var.reshape(C) * (n / (n - 1)), momentum)
    w = None if w is None else w.reshape(shape)
    b = None if b is None else b.reshape(shape)
    return NativeBatchNorm.apply(input, w, b, axes=axes, eps=eps, mean=mean, var=var)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    """Normalise each (sample, channel) over its spatial dims. With running statistics and
    use_input_stats, they are updated with the per-instance statistics averaged over the batch."""
    _check(input, "instance_norm")
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected an input of at least 2 dims (N, C, ...), got {input.ndim}D")
    if use_input_stats:
        size = tuple(input.shape)
        if math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(size)}")
    C = input.shape[1]
    _check_channels(C, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    nd = input.ndim
    shape = (1, C) + (1,) * (nd - 2)
    w, b = _like(weight, input), _like(bias, input)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return _eval_affine(input, running_mean, running_var, w, b, eps, shape)
    axes = tuple(range(2, nd))
    mean, var = _stats(raw(input), axes)
    momentum = 0.0 if momentum is None else momentum
    n = math.prod(input.shape[2:])
    if running_mean is not None:
        _update_running(running_mean, mean.reshape(-1, C).mean(axis=0), momentum)
    if running_var is not None:
        _update_running(running_var, (var.reshape(-1, C) * (n / (n - 1))).mean(axis=0), momentum)
    w = None if w is None else w.reshape(shape)
    b = None if b is None else b.reshape(shape)
    return NativeBatchNorm.apply(input, w, b, axes=axes, eps=eps, mean=mean, var=var)


# ---- trailing-axes normalisation through rtx.kernel (layer_norm, rms_norm, group_norm) ------------


class NativeLayerNorm(Primitive):
    @staticmethod
    def forward(ctx, x, w, b, *, nd, eps):
        from rtx import kernel
        y, mean, rstd = kernel.layer_norm(raw(x), _arr(w), _arr(b), eps, nd)
        ctx.save_for_backward(x, w)
        ctx.mean, ctx.rstd, ctx.nd, ctx.eps, ctx.has_bias = mean, rstd, nd, eps, b is not None
        return y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        if not grad_mode.enabled:
            from rtx import kernel
            gx, gw, gb = kernel.layer_norm_backward(raw(g), raw(x), _arr(w), ctx.mean, ctx.rstd, ctx.nd,
                                                    has_bias=ctx.has_bias)
            return (wrap(gx) if nx else None, wrap(gw) if nw else None,
                    wrap(gb) if nb else None)
        axes = tuple(range(x.ndim - ctx.nd, x.ndim))
        batch = tuple(range(x.ndim - ctx.nd))
        xc = x - x.mean(axes, keepdim=True)
        rstd = ((xc * xc).mean(axes, keepdim=True) + ctx.eps).rsqrt()
        xhat = xc * rstd
        gx = gw = gb = None
        if nx:
            gxhat = g * w if w is not None else g
            gx = rstd * (gxhat - gxhat.mean(axes, keepdim=True) - xhat * (gxhat * xhat).mean(axes, keepdim=True))
        if nw:
            gw = (g * xhat).sum(batch) if batch else g * xhat
        if nb:
            gb = g.sum(batch) if batch else g
        return gx, gw, gb


class FusedRmsNorm(Primitive):
    @staticmethod
    def forward(ctx, x, w, *, nd, eps):
        from rtx import kernel
        y, rstd = kernel.rms_norm(raw(x), _arr(w), eps, nd)
        ctx.save_for_backward(x, w)
        ctx.rstd, ctx.nd, ctx.eps = rstd, nd, eps
        return y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nx, nw = ctx.needs_input_grad
        if not grad_mode.enabled:
            from rtx import kernel
            gx, gw = kernel.rms_norm_backward(raw(g), raw(x), _arr(w), ctx.rstd, ctx.nd)
            return wrap(gx) if nx else None, wrap(gw) if nw else None
        axes = tuple(range(x.ndim - ctx.nd, x.ndim))
        batch = tuple(range(x.ndim - ctx.nd))
        rstd = ((x * x).mean(axes, keepdim=True) + ctx.eps).rsqrt()
        xhat = x * rstd
        gx = gw = None
        if nx:
            gxhat = g * w if w is not None else g
            gx = rstd * (gxhat - xhat * (gxhat * xhat).mean(axes, keepdim=True))
        if nw:
            gw = (g * xhat).sum(batch) if batch else g * xhat
        return gx, gw


def _normalized_shape(normalized_shape, input, op, star=", "):
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    ns = tuple(int(s) for s in normalized_shape)
    nd = len(ns)
    if nd == 0:
        raise RuntimeError(f"{op}: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                           "one element, but got normalized_shape = []")
    if input.ndim < nd or tuple(input.shape[input.ndim - nd:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{star}{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    return ns


def _check_param_shape(t, ns, name):
    if t is not None and tuple(t.shape) != ns:
        raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                           f"{list(t.shape)} and normalized_shape = {list(ns)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalise over the trailing dims given by normalized_shape (biased variance), then
    apply the elementwise weight and bias when given."""
    _check(input, "layer_norm")
    if _autocast.active:  # on CUDA autocast's float32 list
        input, weight, bias = _autocast.fp32("layer_norm", input, weight, bias)
    ns = _normalized_shape(normalized_shape, input, "layer_norm")
    _check_param_shape(weight, ns, "weight")
    _check_param_shape(bias, ns, "bias")
    return NativeLayerNorm.apply(input, _like(weight, input), _like(bias, input), nd=len(ns), eps=eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims; eps=None uses the machine
    epsilon of the input's dtype, as PyTorch."""
    _check(input, "rms_norm")
    ns = _normalized_shape(normalized_shape, input, "rms_norm", star="")
    _check_param_shape(weight, ns, "weight")
    if eps is None:
        eps = _eps_of(input.dtype)
    return FusedRmsNorm.apply(input, _like(weight, input), nd=len(ns), eps=eps)


def _fused_group_norm_fits(x, w, b):
    """Whether group_norm runs as one NativeGroupNorm: NumPy float32/float64 with both affine
    parameters of x's dtype, and no graph being recorded. A recorded graph (rtx.graph's tracer,
    rtx.onnx.export) gets the composed form, layer_norm's op plus a multiply and an add, whose ops
    the passes and exporters already handle; the values are the same to rounding."""
    return (w is not None and b is not None and type(raw(x)) is np.ndarray and raw(x).dtype in _GN_DTYPES
            and raw(w).dtype == raw(x).dtype and raw(b).dtype == raw(x).dtype and x.ndim > 2
            and current_hook() is None)


_GN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class NativeGroupNorm(Primitive):
    """group_norm with its per-channel affine in one op on the CPU. The composed form (layer_norm,
    then a broadcast multiply and add, each with its own backward and reductions) made ~15 passes
    over the activations forward and backward; this one makes 5 forward and 7 backward: the
    backward needs only the per-(sample, channel) sums of g and of g * (x - mean), from which the
    weight and bias gradients and the input gradient's per-group terms all follow (written out in
    backward). Measured in rtx-diffuse's UNet (batch 32): see packages/rtx-diffuse/README.md."""

    @staticmethod
    def forward(ctx, x, w, b, *, groups, eps):
        xd = raw(x)
        N, C = xd.shape[:2]
        x3 = xd.reshape(N, groups, -1)
        mean = x3.mean(axis=2, keepdims=True)                        # (N, G, 1)
        y = np.subtract(x3, mean)
        var = np.vecdot(y, y)[..., None] / x3.shape[2]
        rstd = 1.0 / np.sqrt(var + eps)                               # (N, G, 1)
        yc = y.reshape(N, C, -1)
        yc *= (rstd * raw(w).reshape(groups, -1)).reshape(N, C, 1)  # xhat * w in one pass
        yc += raw(b).reshape(C, 1)
        ctx.save_for_backward(x, w)
        ctx.mean, ctx.rstd, ctx.groups, ctx.eps = mean, rstd, groups, eps
        return y.reshape(xd.shape)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        G, shape = ctx.groups, raw(x).shape
        N, C = shape[:2]
        if grad_mode.enabled:  # a graph of the backward is wanted: differentiable ops
            return _group_norm_backward_composed(g, x, w, G, ctx.eps, nx, nw, nb)
        # With xc = x - mean, xhat = xc * rstd and gxhat = g * w (sums per group over D numbers):
        # gx = rstd * (gxhat - sum(gxhat) / D - xhat * sum(gxhat * xhat) / D), gw = sum g * xhat, gb = sum g.
        # Per (sample, channel): S1 = sum g, S2 = sum g * xhat = rstd * sum g * xc; the group sums are
        # sums of w * S1 and w * S2 over the group's channels.
        x3 = raw(x).reshape(N, G, -1)
        g3 = raw(g).reshape(N, C, -1)
        D = x3.shape[2]
        mean, rstd = ctx.mean, ctx.rstd                                   # (N, G, 1)
        xc = np.subtract(x3, mean).reshape(N, C, -1)
        S1 = g3.sum(axis=2)                                                # (N, C)
        S2 = (np.vecdot(g3, xc).reshape(N, G, -1) * rstd).reshape(N, C)
        gw = S2.sum(axis=0) if nw else None
        gb = S1.sum(axis=0) if nb else None
        gx = None
        if nx:
            wd = raw(w)
            A = (wd * S1).reshape(N, G, -1).sum(axis=2, keepdims=True) / D   # mean of gxhat per group
            B = (wd * S2).reshape(N, G, -1).sum(axis=2, keepdims=True) / D   # mean of gxhat * xhat
            cg = C // G
            gx = np.multiply(g3, (rstd * wd.reshape(G, cg)).reshape(N, C, 1))
            xc *= np.broadcast_to(-rstd * rstd * B, (N, G, cg)).reshape(N, C, 1)
            gx += xc
            gx += np.broadcast_to(-rstd * A, (N, G, cg)).reshape(N, C, 1)
            gx = wrap(gx.reshape(shape).astype(raw(x).dtype, copy=False))
        # each gradient in its input's dtype, as the composed ops give (g may come in wider than the output)
        wdt = raw(w).dtype
        return (gx, None if gw is None else wrap(gw.astype(wdt, copy=False)),
                None if gb is None else wrap(gb.astype(wdt, copy=False)))


def _group_norm_backward_composed(g, x, w, G, eps, nx, nw, nb):
    """NativeGroupNorm's backward in Tensor ops (double backward)."""
    shape = tuple(x.shape)
    N, C = shape[:2]
    x3 = x.reshape(N, G, -1)
    xc = x3 - x3.mean(2, keepdim=True)
    rstd = ((xc * xc).mean(2, keepdim=True) + eps).rsqrt()
    xhat = (xc * rstd).reshape(shape)
    red = (0,) + tuple(range(2, len(shape)))
    gx = gw = gb = None
    if nx:
        gxhat = (g * w.reshape((1, C) + (1,) * (len(shape) - 2))).reshape(N, G, -1)
        xh3 = xhat.reshape(N, G, -1)
        gx = (rstd * (gxhat - gxhat.mean(2, keepdim=True) - xh3 * (gxhat * xh3).mean(2, keepdim=True))).reshape(shape)
    if nw:
        gw = (g * xhat).sum(red)
    if nb:
        gb = g.sum(red)
    return gx, gw, gb


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalise each sample over groups of channels (and the spatial dims), then a
    per-channel affine."""
    _check(input, "group_norm")
    if _autocast.active:  # on CUDA autocast's float32 list
        input, weight, bias = _autocast.fp32("group_norm", input, weight, bias)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    shape = tuple(input.shape)
    N, C = shape[:2]
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(shape)} and num_groups={num_groups}")
    _verify_batch_size([N * C // num_groups, num_groups] + list(shape[2:]))
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(shape)}")
    if input.numel() == 0:  # an empty batch: an empty result, still in the graph (weight/bias get zero grads)
        y = input * 0
    elif _fused_group_norm_fits(input, weight, bias):
        return NativeGroupNorm.apply(input, weight, bias, groups=int(num_groups), eps=eps)
    else:
        y = NativeLayerNorm.apply(input.reshape(N, num_groups, -1), None, None, nd=1, eps=eps).reshape(shape)
    bshape = (1, C) + (1,) * (len(shape) - 2)
    if weight is not None:
        y = y * _like(weight, input).reshape(bshape)
    if bias is not None:
        y = y + _like(bias, input).reshape(bshape)
    return y


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ^ beta."""
    if type(input) is not Tensor:
        raise TypeError(f"local_response_norm(): argument 'input' must be Tensor, not {type(input).__name__}")
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    from rtx import cat
    sq = input * input
    C = input.shape[1]
    front, back = size // 2, (size - 1) // 2
    pads = []
    if front:
        pads.append(sq.new_zeros((sq.shape[0], front) + tuple(sq.shape[2:])))
    pads.append(sq)
    if back:
        pads.append(sq.new_zeros((sq.shape[0], back) + tuple(sq.shape[2:])))
    padded = cat(pads, 1) if len(pads) > 1 else sq
    window = padded[:, 0:C]
    for i in range(1, size):
        window = window + padded[:, i:i + C]
    div = (window * (alpha / size) + k) ** beta
    return input / div
