"""The math of the recurrent layers: one step of each cell, and the multi-layer,
bidirectional driver that nn.RNN, nn.LSTM and nn.GRU call.

Equations (PyTorch's; gate order LSTM i,f,g,o and GRU r,z,n):
    RNN   h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)
    LSTM  i,f,g,o = split(x W_ih^T + b_ih + h W_hh^T + b_hh); c' = s(f) c + s(i) tanh(g);
          h' = s(o) tanh(c'), then h' = h' W_hr^T with a projection
    GRU   r = s(x W_ir^T + b_ir + h W_hr^T + b_hr); z likewise;
          n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)); h' = (1 - z) n + z h

Speed: the input projection of a whole sequence is one matmul (x @ W_ih^T for all steps in
one BLAS call) before the loop; each step then does one small matmul for the hidden state.
Autograd runs through the composed rtx ops; the sequence is split once (unbind) and the
outputs joined once (stack), so backward stays linear in the length.

Variable lengths (packed sequences) run on the padded tensor with a per-step mask: where a
sequence has ended, its state is carried unchanged and its output is zero. For the reverse
direction the state therefore stays at h0 until the sequence's last valid step, which is where
a packed sequence starts. This is equivalent to PyTorch's packed kernels.
"""
from __future__ import annotations

import numpy as np

import rtx
from rtx.extend import raw, wrap
from rtx.nn._functional.dropout import dropout as _dropout
from rtx.nn._functional.linear import linear
from rtx.runtime import array_module

__all__: list[str] = []

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")


# ---- single cells (nn.RNNCell, nn.LSTMCell, nn.GRUCell) ---------------------------------------


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).relu()


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    h, c = hx
    return _lstm_step(linear(input, w_ih, b_ih), h, c, w_hh.t(), b_hh, None)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _gru_step(linear(input, w_ih, b_ih), hx, w_hh.t(), b_hh)


# ---- steps on a precomputed input projection xw = x W_ih^T + b_ih -------------------------------


def _rnn_step(xw, h, w_hh_t, b_hh, relu):
    pre = xw + h @ w_hh_t
    if b_hh is not None:
        pre = pre + b_hh
    return pre.relu() if relu else pre.tanh()


def _lstm_step(xw, h, c, w_hh_t, b_hh, w_hr_t):
    gates = xw + h @ w_hh_t
    if b_hh is not None:
        gates = gates + b_hh
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr_t is not None:
        h = h @ w_hr_t
    return h, c


def _gru_step(xw, h, w_hh_t, b_hh):
    hw = h @ w_hh_t
    if b_hh is not None:
        hw = hw + b_hh
    xr, xz, xn = xw.chunk(3, 1)
    hr, hz, hn = hw.chunk(3, 1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return n + z * (h - n)


# ---- one layer, one direction ------------------------------------------------------------------


def _direction(mode, x, h, c, w, reverse, masks):
    """Run (L, N, In) x through one layer in one direction. w: (w_ih, w_hh, b_ih, b_hh, w_hr),
    biases and w_hr may be None. masks: None or, per step, a (N, 1) bool Tensor (None where every
    sequence is still running). Returns (output (L, N, H_out), h_n, c_n or None)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    if mode != "GRU" and b_ih is not None:
        # The hidden bias does not depend on the step: fold it into the one big matmul.
        b_ih, b_hh = b_ih + b_hh, None
    # (L*N, In) @ W_ih^T: one BLAS call, and one for W_ih's gradient.
    xw = linear(x.reshape(-1, x.shape[-1]), w_ih, b_ih).reshape(x.shape[0], x.shape[1], w_ih.shape[0])
    steps = xw.unbind(0)
    w_hh_t = w_hh.t()
    w_hr_t = w_hr.t() if w_hr is not None else None
    length = len(steps)
    outs = [None] * length
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        if mode == "LSTM":
            h_new, c_new = _lstm_step(steps[t], h, c, w_hh_t, b_hh, w_hr_t)
        elif mode == "GRU":
            h_new = _gru_step(steps[t], h, w_hh_t, b_hh)
        else:
            h_new = _rnn_step(steps[t], h, w_hh_t, b_hh, mode == "RNN_RELU")
        m = masks[t] if masks is not None else None
        if m is None:
            h = outs[t] = h_new
            if mode == "LSTM":
                c = c_new
        else:
            outs[t] = rtx.where(m, h_new, 0.0)
            h = rtx.where(m, h_new, h)
            if mode == "LSTM":
                c = rtx.where(m, c_new, c)
    return rtx.stack(outs), h, c


def _step_masks(lengths, length, like):
    """Per step: a (N, 1) bool Tensor, True where the sequence is still running; None at steps
    where every sequence is (no masking work there)."""
    if lengths is None:
        return None
    lengths = np.asarray(lengths)
    xp = array_module(raw(like))
    out = []
    for t in range(length):
        alive = t < lengths
        out.append(None if alive.all() else wrap(xp.asarray(alive[:, None])))
    return out


def rnn_forward(mode, input, hx, weights, num_layers, bidirectional, dropout=0.0, training=False, lengths=None):
    """The multi-layer driver. input (L, N, In); hx (num_layers * D, N, H_out), for LSTM a pair
    (h0, c0); weights: per layer and direction (w_ih, w_hh, b_ih, b_hh, w_hr), in the order
    layer 0 forward, layer 0 reverse, layer 1 forward, ...; lengths: None or N ints.
    Returns (output (L, N, D * H_out), h_n) or, for LSTM, (output, (h_n, c_n))."""
    if mode not in MODES:
        raise ValueError(f"Unknown recurrent mode {mode!r}; expected one of {MODES}")
    D = 2 if bidirectional else 1
    lstm = mode == "LSTM"
    h0s = (hx[0] if lstm else hx).unbind(0)
    c0s = hx[1].unbind(0) if lstm else None
    masks = _step_masks(lengths, input.shape[0], input)
    h_n, c_n = [], []
    x = input
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            out, h, c = _direction(mode, x, h0s[k], c0s[k] if lstm else None, weights[k], d == 1, masks)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        x = outs[0] if D == 1 else rtx.cat(outs, 2)
        if dropout > 0.0 and training and layer < num_layers - 1:
            x = _dropout(x, dropout)
    if lstm:
        return x, (rtx.stack(h_n), rtx.stack(c_n))
    return x, rtx.stack(h_n)
