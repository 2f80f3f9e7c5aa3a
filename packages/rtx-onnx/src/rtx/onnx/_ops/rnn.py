"""Recurrent ops: RNN, GRU, LSTM (ONNX gate orders, directions, sequence_lens, layout, clip).

Written in rtx ops (one matmul for the input projection of all steps, then a loop over time),
so imported recurrent models can be fine-tuned.
"""
from __future__ import annotations

import numpy as np

import rtx
from rtx.onnx._ops import arr, const, ints, op


def _activation(name, alpha, beta):
    name_l = name.lower()
    if name_l == "sigmoid":
        return rtx.sigmoid
    if name_l == "tanh":
        return rtx.tanh
    if name_l == "relu":
        return rtx.relu
    if name_l == "affine":
        return lambda x: x * (1.0 if alpha is None else alpha) + (0.0 if beta is None else beta)
    if name_l == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda x: rtx.where(x >= 0, x, x * a)
    if name_l == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda x: rtx.where(x > a, x, rtx.zeros_like(x))
    if name_l == "scaledtanh":
        a, b = (1.0 if alpha is None else alpha), (1.0 if beta is None else beta)
        return lambda x: rtx.tanh(x * b) * a
    if name_l == "hardsigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda x: rtx.clamp(x * a + b, 0, 1)
    if name_l == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda x: rtx.where(x >= 0, x, (rtx.exp(rtx.clamp(x, max=0)) - 1) * a)
    if name_l == "softsign":
        return lambda x: x / (rtx.abs(x) + 1)
    if name_l == "softplus":
        return lambda x: rtx.clamp(x, min=0) + rtx.log1p(rtx.exp(-rtx.abs(x)))
    raise NotImplementedError(f"recurrent activation {name!r} is not supported")


def _activations(attrs, defaults, num_dir):
    names = attrs.get("activations") or defaults * num_dir
    if len(names) == len(defaults) and num_dir == 2:
        names = names * 2
    alphas = attrs.get("activation_alpha") or []
    betas = attrs.get("activation_beta") or []
    fns = [_activation(n, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
           for i, n in enumerate(names)]
    k = len(defaults)
    return [fns[d * k:(d + 1) * k] for d in range(num_dir)]


def _common(inputs, attrs):
    x, w, r = inputs[:3]
    b = inputs[3] if len(inputs) > 3 else None
    lens = inputs[4] if len(inputs) > 4 else None
    h0 = inputs[5] if len(inputs) > 5 else None
    layout = attrs.get("layout", 0)
    if layout:
        x = rtx.permute(x, (1, 0, 2))
        if h0 is not None:
            h0 = rtx.permute(h0, (1, 0, 2))
    direction = attrs.get("direction", "forward")
    num_dir = 2 if direction == "bidirectional" else 1
    seq, batch = arr(x).shape[:2]
    hidden = attrs.get("hidden_size") or arr(r).shape[-1]
    lens = None if lens is None else np.asarray(ints(lens), dtype=np.int64)
    if lens is not None and (lens == seq).all():
        lens = None
    return x, w, r, b, lens, h0, layout, direction, num_dir, seq, batch, hidden


def _reverse_padded(x, lens):
    """Reverse each batch column within its own length (positions past the length stay put)."""
    seq, batch = arr(x).shape[:2]
    if lens is None:
        return rtx.flip(x, (0,))
    t = np.arange(seq)[:, None]
    idx = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)
    return x[const(idx), const(np.arange(batch)[None, :])]


def _run_direction(x, lens, reverse, step, state):
    """Loop `step(x_t, state) -> (h_t, state)` over time; returns (Y [seq, batch, hidden], final state)."""
    seq, batch = arr(x).shape[:2]
    xs = _reverse_padded(x, lens) if reverse else x
    ys = []
    for t in range(seq):
        h, new_state = step(xs[t], state)
        if lens is not None:
            m = const((t < lens).astype(arr(x).dtype)[:, None])
            new_state = tuple(n * m + s * (1 - m) for n, s in zip(new_state, state))
            h = h * m
        state = new_state
        ys.append(h)
    y = rtx.stack(ys, 0) if ys else rtx.zeros((0, batch, arr(state[0]).shape[-1]), dtype=state[0].dtype)
    if reverse:
        y = _reverse_padded(y, lens)
    return y, state


def _outputs(ys, finals, layout):
    y = rtx.stack(ys, 1)  # [seq, num_dir, batch, hidden]
    finals = [rtx.stack(list(f), 0) for f in zip(*finals)]  # each [num_dir, batch, hidden]
    if layout:
        y = rtx.permute(y, (2, 0, 1, 3))
        finals = [rtx.permute(f, (1, 0, 2)) for f in finals]
    return (y, *finals)


def _clip(v, c):
    return v if c is None else rtx.clamp(v, -c, c)


def _zeros(batch, hidden, like):
    return rtx.zeros((batch, hidden), dtype=like.dtype)


@op("RNN")
def rnn(inputs, attrs, opset):
    x, w, r, b, lens, h0, layout, direction, num_dir, seq, batch, hidden = _common(inputs, attrs)
    acts = _activations(attrs, ["Tanh"], num_dir)
    clip = attrs.get("clip")
    ys, finals = [], []
    for d in range(num_dir):
        wi, ri = w[d], r[d]
        bias = (b[d][:hidden] + b[d][hidden:]) if b is not None else None
        xw = rtx.matmul(x, wi.t())
        if bias is not None:
            xw = xw + bias
        f = acts[d][0]

        def step(xt, state, ri=ri, f=f):
            h = f(_clip(xt + rtx.matmul(state[0], ri.t()), clip))
            return h, (h,)
        h_init = h0[d] if h0 is not None else _zeros(batch, hidden, x)
        reverse = direction == "reverse" or d == 1
        y, (h_last,) = _run_direction(xw, lens, reverse, step, (h_init,))
        ys.append(y)
        finals.append((h_last,))
    return _outputs(ys, finals, layout)


@op("GRU")
def gru(inputs, attrs, opset):
    x, w, r, b, lens, h0, layout, direction, num_dir, seq, batch, hidden = _common(inputs, attrs)
    acts = _activations(attrs, ["Sigmoid", "Tanh"], num_dir)
    clip = attrs.get("clip")
    lbr = attrs.get("linear_before_reset", 0)
    H = hidden
    ys, finals = [], []
    for d in range(num_dir):
        wd, rd = w[d], r[d]
        xw = rtx.matmul(x, wd.t())  # [seq, batch, 3H], gates z, r, h
        if b is not None:
            wb, rb = b[d][:3 * H], b[d][3 * H:]
            xw = xw + wb
        else:
            rb = None
        rz, rr, rh = rd[:H], rd[H:2 * H], rd[2 * H:]
        f, g = acts[d]

        def step(xt, state, rz=rz, rr=rr, rh=rh, rb=rb, f=f, g=g):
            hp = state[0]
            xz, xr, xh = xt[:, :H], xt[:, H:2 * H], xt[:, 2 * H:]
            hz = rtx.matmul(hp, rz.t())
            hr = rtx.matmul(hp, rr.t())
            if rb is not None:
                hz, hr = hz + rb[:H], hr + rb[H:2 * H]
            z = f(_clip(xz + hz, clip))
            rg = f(_clip(xr + hr, clip))
            rbh = rb[2 * H:] if rb is not None else None
            if lbr:
                hh = rtx.matmul(hp, rh.t())
                if rbh is not None:
                    hh = hh + rbh
                n = g(_clip(xh + rg * hh, clip))
            else:
                hh = rtx.matmul(rg * hp, rh.t())
                if rbh is not None:
                    hh = hh + rbh
                n = g(_clip(xh + hh, clip))
            h = (1 - z) * n + z * hp
            return h, (h,)
        h_init = h0[d] if h0 is not None else _zeros(batch, H, x)
        reverse = direction == "reverse" or d == 1
        y, (h_last,) = _run_direction(xw, lens, reverse, step, (h_init,))
        ys.append(y)
        finals.append((h_last,))
    return _outputs(ys, finals, layout)


@op("LSTM")
def lstm(inputs, attrs, opset):
    x, w, r, b, lens, h0, layout, direction, num_dir, seq, batch, hidden = _common(inputs, attrs)
    c0 = inputs[6] if len(inputs) > 6 else None
    p = inputs[7] if len(inputs) > 7 else None
    if layout and c0 is not None:
        c0 = rtx.permute(c0, (1, 0, 2))
    acts = _activations(attrs, ["Sigmoid", "Tanh", "Tanh"], num_dir)
    clip = attrs.get("clip")
    couple = attrs.get("input_forget", 0)
    H = hidden
    ys, finals = [], []
    for d in range(num_dir):
        xw = rtx.matmul(x, w[d].t())  # [seq, batch, 4H], gates i, o, f, c
        if b is not None:
            xw = xw + (b[d][:4 * H] + b[d][4 * H:])
        rd = r[d]
        pi, po, pf = (p[d][:H], p[d][H:2 * H], p[d][2 * H:]) if p is not None else (None, None, None)
        f, g, h_act = acts[d]

        def step(xt, state, rd=rd, pi=pi, po=po, pf=pf, f=f, g=g, h_act=h_act):
            hp, cp = state
            gates = xt + rtx.matmul(hp, rd.t())
            gi, go, gf, gc = gates[:, :H], gates[:, H:2 * H], gates[:, 2 * H:3 * H], gates[:, 3 * H:]
            if pi is not None:
                gi, gf = gi + pi * cp, gf + pf * cp
            i = f(_clip(gi, clip))
            fg = 1 - i if couple else f(_clip(gf, clip))
            c = fg * cp + i * g(_clip(gc, clip))
            if po is not None:
                go = go + po * c
            o = f(_clip(go, clip))
            h = o * h_act(c)
            return h, (h, c)
        h_init = h0[d] if h0 is not None else _zeros(batch, H, x)
        c_init = c0[d] if c0 is not None else _zeros(batch, H, x)
        reverse = direction == "reverse" or d == 1
        y, (h_last, c_last) = _run_direction(xw, lens, reverse, step, (h_init, c_init))
        ys.append(y)
        finals.append((h_last, c_last))
    return _outputs(ys, finals, layout)
