"""Array kernels of the plan: each builder turns one Op into a closure `step(v, B)` over raw
arrays (NumPy, or CuPy on a GPU): v is the run's value list, B its workspace (one per input-size
key and thread, see plan.py). No Tensor, no autograd, no dispatch in the loop.

Buffers: an op whose result is an intermediate (not a graph output) writes into a buffer kept
in B between runs (allocated on the first run of a size key: that first result becomes the
buffer), with `out=` (matmul, ufuncs, copyto). An elementwise op whose input is such a buffer
read by nothing else writes into that input's buffer (in place). Graph outputs are fresh
arrays, so the caller owns them.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from rtx.kernel import windows as _win

BUILDERS = {}


def builder(kind):
    def deco(fn):
        BUILDERS[kind] = fn
        return fn
    return deco


class Ctx:
    """What a builder gets: the array module, workspace slots, and the buffer decisions."""

    def __init__(self, xp, slots, buffered, inplace):
        self.xp, self._slots, self.buffered, self.inplace = xp, slots, buffered, inplace

    def slot(self):
        self._slots.append(None)
        return len(self._slots) - 1


# ---- activations (in place when src is dst) -----------------------------------------------------
def _sigmoid_into(xp, src, dst):
    xp.negative(src, out=dst)
    xp.exp(dst, out=dst)
    dst += 1
    return xp.reciprocal(dst, out=dst)


def activation(xp, name):
    """fn(src, dst) writing act(src) into dst (dst may be src); None for the identity."""
    if name in (None, "none", "identity"):
        return None
    if name == "relu":
        return lambda s, d: xp.maximum(s, 0, out=d)
    if name == "sigmoid":
        return lambda s, d: _sigmoid_into(xp, s, d)
    if name == "silu":
        return lambda s, d: xp.multiply(s, _sigmoid_into(xp, s, xp.empty_like(s)), out=d)
    if name in ("gelu", "gelu_tanh"):
        from rtx import kernel
        approx = "tanh" if name == "gelu_tanh" else "none"
        return lambda s, d: xp.copyto(d, kernel.gelu(s, approximate=approx))
    if name == "erf":
        from rtx import kernel
        return lambda s, d: xp.copyto(d, kernel.erf(s))
    if name in ("tanh", "exp", "log", "sqrt", "negative", "absolute", "reciprocal", "floor", "ceil", "sin",
                "cos", "sign"):
        f = getattr(xp, name)
        return lambda s, d: f(s, out=d)
    raise KeyError(name)


ACTIVATIONS = ("relu", "sigmoid", "silu", "gelu", "gelu_tanh", "tanh")


def _finish(out, b, act):
    """Bias add and activation on a result, in place."""
    if b is not None:
        out += b
    if act is not None:
        act(out, out)


# ---- elementwise ----------------------------------------------------------------------------------
def _elementwise(f, ins, o, ctx):
    """A closure for f(*arrays, out=...) with the buffer/in-place policy of the module notes."""
    k = ctx.slot() if ctx.buffered else None
    ip = ctx.inplace

    def first(v, B):
        r = f(*[v[i] for i in ins])
        if ip is not None:
            src = v[ins[ip]]
            if src.shape == r.shape and src.dtype == r.dtype:
                src[...] = r
                B[k] = src
                return src
        B[k] = r
        return r

    if len(ins) == 1:
        (a,) = ins
        if k is None:
            def step(v, B):
                v[o] = f(v[a])
        else:
            def step(v, B):
                out = B[k]
                v[o] = first(v, B) if out is None else f(v[a], out=out)
    elif len(ins) == 2:
        a, b = ins
        if k is None:
            def step(v, B):
                v[o] = f(v[a], v[b])
        else:
            def step(v, B):
                out = B[k]
                v[o] = first(v, B) if out is None else f(v[a], v[b], out=out)
    else:
        if k is None:
            def step(v, B):
                v[o] = f(*[v[i] for i in ins])
        else:
            def step(v, B):
                out = B[k]
                v[o] = first(v, B) if out is None else f(*[v[i] for i in ins], out=out)
    return step


@builder("Binary")
def build_binary(op, ctx):
    return _elementwise(getattr(ctx.xp, op.attrs["fn"]), op.inputs, op.outputs[0], ctx)


@builder("Unary")
def build_unary(op, ctx):
    act = activation(ctx.xp, op.attrs["act"])
    xp = ctx.xp

    def f(a, out=None):
        if out is None:
            out = xp.empty_like(a)
        act(a, out)
        return out
    return _elementwise(f, op.inputs, op.outputs[0], ctx)


@builder("MatMul")
def build_matmul(op, ctx):
    return _elementwise(ctx.xp.matmul, op.inputs, op.outputs[0], ctx)


# ---- linear: act(x @ W^T + b), W stored transposed and contiguous ---------------------------------
@builder("Linear")
def build_linear(op, ctx):
    xp = ctx.xp
    (x,), o = op.inputs, op.outputs[0]
    wt, b = op.attrs["wt"], op.attrs.get("b")
    relu = op.attrs.get("act") == "relu"          # inlined: the common case, one call fewer
    act = None if relu else activation(xp, op.attrs.get("act"))
    dot, maximum = xp.dot, xp.maximum             # dot: the 2-D GEMM with the least call overhead
    K, N = wt.shape
    k = ctx.slot() if ctx.buffered else None

    def step(v, B):
        a = v[x]
        lead = None
        if a.ndim != 2:  # one GEMM over all leading dims, not one per row block
            lead = a.shape[:-1]
            a = a.reshape(-1, K)
        if k is None:
            out = dot(a, wt)
        else:
            out = B[k]
            if out is None:
                out = B[k] = dot(a, wt)
            else:
                dot(a, wt, out=out)
        if b is not None:
            out += b
        if relu:
            maximum(out, 0, out=out)
        elif act is not None:
            act(out, out)
        v[o] = out if lead is None else out.reshape(lead + (N,))
    return step


# ---- convolution: im2col into a kept column buffer, one batched GEMM ------------------------------
def conv_geometry(in_sp, kern, stride, pads, dilation):
    return _win.out_shape(in_sp, kern, stride, dilation, pads)


class ConvWorkspace:
    """Per size key: the padded input, stored batch-last (C, *spatial, N) with its border written
    once (`fill`); a strided view of every receptive field over it; and the column matrix
    (groups, C/g*k, P*N) the fields are copied into, so the whole batch is one GEMM per group.
    Batch-last makes the copy's inner loop run over (output column, batch), long and contiguous,
    where batch-first gives inner loops as short as the output rows (4 floats for DigitsCNN). The
    view is rtx.kernel.windows's, made once per size key: each run is one copy of it (its "CK,LN"
    im2col layout), not a fresh view per run."""

    def __init__(self, xp, shape, dtype, kern, stride, pads, dilation, groups, out_channels, fill=0):
        N, C = shape[:2]
        nd = len(kern)
        self.g, self.O, self.N = groups, out_channels, N
        self.out_sp = conv_geometry(shape[2:], kern, stride, pads, dilation)
        self.P = P = math.prod(self.out_sp)
        padded = (C,) + tuple(n + lo + hi for n, (lo, hi) in zip(shape[2:], pads)) + (N,)
        self.xpad = xp.full(padded, fill, dtype=dtype)
        self.interior = self.xpad[(slice(None),) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(shape[2:], pads))]
        self.to_last = tuple(range(1, nd + 2)) + (0,)      # (N, C, *S) -> (C, *S, N)
        # (C, *kern, *out, N): every receptive field of the batch-last padded input
        self.win = _win.sliding_windows(self.xpad, kern, stride, dilation, out_shape=self.out_sp, axis=1)
        self.cols = xp.empty((groups, C // groups * math.prod(kern), P * N), dtype=dtype)
        self.cols_v = self.cols.reshape(self.win.shape)
        self.acc = None if N == 1 else xp.empty((groups, out_channels // groups, P * N), dtype=dtype)

    def product(self, xp, w3, a, out3, zp=0):
        """out3 (N, O, P) = the convolution of a (minus zero point zp) with w3 (g, O/g, C/g*k)."""
        self.interior[...] = a.transpose(self.to_last)
        if zp:
            self.interior -= zp
        xp.copyto(self.cols_v, self.win)
        if self.acc is None:
            xp.matmul(w3, self.cols, out=out3.reshape(self.g, self.O // self.g, self.P))
        else:
            xp.matmul(w3, self.cols, out=self.acc)
            xp.copyto(out3, self.acc.reshape(self.O, self.P, self.N).transpose(2, 0, 1))
        return out3


@builder("Conv")
def build_conv(op, ctx):
    xp = ctx.xp
    (x,), o = op.inputs, op.outputs[0]
    w, b = op.attrs["w"], op.attrs.get("b")
    stride, pads, dilation, g = op.attrs["stride"], op.attrs["pads"], op.attrs["dilation"], op.attrs["groups"]
    act = activation(xp, op.attrs.get("act"))
    O, kern = w.shape[0], w.shape[2:]
    w3 = xp.ascontiguousarray(w.reshape(g, O // g, -1))
    b2 = None if b is None else b.reshape(O, 1)
    pointwise = all(k == 1 for k in kern) and all(s == 1 for s in stride) and not any(lo or hi for lo, hi in pads)
    ws_k = ctx.slot()
    out_k = ctx.slot() if ctx.buffered else None

    def step(v, B):
        a = v[x]
        N = a.shape[0]
        ws = B[ws_k]
        if ws is None:
            ws = B[ws_k] = (None if pointwise and N == 1 else
                            ConvWorkspace(xp, a.shape, a.dtype, kern, stride, pads, dilation, g, O))
        out_sp = a.shape[2:] if ws is None else ws.out_sp
        out = B[out_k] if out_k is not None else None
        if out is None:
            out = xp.empty((N, O) + tuple(out_sp), dtype=a.dtype)
            if out_k is not None:
                B[out_k] = out
        out3 = out.reshape(N, O, math.prod(out_sp))   # not -1: a batch of 0 rows has no size to infer
        if ws is None:   # a 1x1 convolution of one image is one GEMM on the input itself
            xp.matmul(w3, a.reshape(g, a.shape[1] // g, -1), out=out3.reshape(g, O // g, -1))
        else:
            ws.product(xp, w3, a, out3)
        if b2 is not None or act is not None:
            _finish(out3, b2, act)
        v[o] = out
    return step


# ---- pooling, reductions, softmax -------------------------------------------------------------------
@builder("MaxPool")
def build_maxpool(op, ctx):
    xp = ctx.xp
    (x,), o = op.inputs, op.outputs[0]
    kern, stride, pads, dilation = op.attrs["kernel"], op.attrs["stride"], op.attrs["pads"], op.attrs["dilation"]
    padded = any(lo or hi for lo, hi in pads)
    ws_k = ctx.slot()
    out_k = ctx.slot() if ctx.buffered else None

    def setup(a):
        out_sp = conv_geometry(a.shape[2:], kern, stride, pads, dilation)
        xpad = interior = None
        if padded:
            shape = a.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(a.shape[2:], pads))
            xpad = xp.full(shape, -xp.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).min, dtype=a.dtype)
            interior = xpad[(slice(None), slice(None)) +
                            tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape[2:], pads))]
        sls = [(slice(None), slice(None)) + tuple(slice(k * d, k * d + s * (n - 1) + 1, s)
                                                  for k, d, s, n in zip(off, dilation, stride, out_sp))
               for off in itertools.product(*(range(k) for k in kern))]
        return xpad, interior, sls, a.shape[:2] + out_sp

    def step(v, B):
        a = v[x]
        ws = B[ws_k]
        if ws is None:
            ws = B[ws_k] = setup(a)
        xpad, interior, sls, shape = ws
        if xpad is not None:
            interior[...] = a
            a = xpad
        out = B[out_k] if out_k is not None else None
        if out is None:
            out = xp.empty(shape, dtype=a.dtype)
            if out_k is not None:
                B[out_k] = out
        xp.maximum(a[sls[0]], a[sls[1]], out=out) if len(sls) > 1 else xp.copyto(out, a[sls[0]])
        for sl in sls[2:]:
            xp.maximum(out, a[sl], out=out)
        v[o] = out
    return step


@builder("Mean")
def build_mean(op, ctx):
    xp = ctx.xp
    axes, keep = tuple(op.attrs["axes"]), op.attrs["keepdims"]
    return _elementwise(lambda a, out=None: xp.mean(a, axis=axes, keepdims=keep, out=out),
                        op.inputs, op.outputs[0], ctx)


@builder("Softmax")
def build_softmax(op, ctx):
    xp = ctx.xp
    axis, log = op.attrs["axis"], op.attrs.get("log", False)

    def f(a, out=None):
        if a.size == 0:   # an empty batch: nothing to normalise (max() of an empty axis raises)
            return xp.empty_like(a) if out is None else out
        out = xp.subtract(a, a.max(axis=axis, keepdims=True), out=out)
        if log:
            out -= xp.log(xp.exp(out).sum(axis=axis, keepdims=True))
            return out
        xp.exp(out, out=out)
        out /= out.sum(axis=axis, keepdims=True)
        return out
    return _elementwise(f, op.inputs, op.outputs[0], ctx)


# ---- views --------------------------------------------------------------------------------------------
@builder("Reshape")
def build_reshape(op, ctx):
    """attrs['target'](in_shape, env) -> the new shape, computed once per size key."""
    (x,), o = op.inputs, op.outputs[0]
    target = op.attrs["target"]
    k = ctx.slot()

    def step(v, B):
        a = v[x]
        shape = B[k]
        if shape is None:
            shape = B[k] = tuple(target(a.shape, B[0]))
        v[o] = a.reshape(shape)
    return step


@builder("Permute")
def build_permute(op, ctx):
    (x,), o = op.inputs, op.outputs[0]
    axes = tuple(op.attrs["axes"])

    def step(v, B):
        v[o] = v[x].transpose(axes)
    return step


@builder("Identity")
def build_identity(op, ctx):
    (x,), o = op.inputs, op.outputs[0]

    def step(v, B):
        v[o] = v[x]
    return step


# ---- anything else: rtx's own op on arrays --------------------------------------------------------------
@builder("Generic")
def build_generic(op, ctx):
    """attrs['fn'](arrays, env) -> tuple of arrays (the front end wraps rtx's op for it)."""
    fn, ins, outs = op.attrs["fn"], op.inputs, op.outputs

    def step(v, B):
        res = fn([None if i is None else v[i] for i in ins], B[0])
        for o, r in zip(outs, res):
            v[o] = r
    return step


# Kinds whose output is a fresh array or a kept buffer of their own (never a view of an input).
OWNING = {"Binary", "Unary", "MatMul", "Linear", "Conv", "MaxPool", "Mean", "Softmax"}
# Kinds that may run in place on an input's buffer.
ELEMENTWISE = {"Binary", "Unary"}
