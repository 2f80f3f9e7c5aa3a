"""Recurrent layers: RNN, LSTM, GRU and their cells, with PyTorch's signatures, parameter names
(weight_ih_l{k}{_reverse}, ...), shapes, state_dict keys and init U(-1/sqrt(H), 1/sqrt(H)).

They accept a PackedSequence and return one (see rtx.nn.utils.rnn); internally a packed batch
runs padded with a per-step mask, which gives the same outputs and final states. Not
reproduced: cuDNN's flattened weight buffer (flatten_parameters() is a no-op) and the
deprecated `_flat_weights` in-place aliasing.
"""
from __future__ import annotations

import math
import numbers
import warnings

import rtx
from rtx.nn import init
from rtx.nn._functional import rnn as F
from rtx.nn.modules.module import Module
from rtx.nn.parameter import Parameter
from rtx.nn.utils.rnn import PackedSequence, _repack, pad_packed_sequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """The shared body of RNN, LSTM and GRU: parameters, checks and the call into the driver."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [(f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                          (f"weight_hh_l{layer}{suffix}", (gate_size, real_hidden))]
                if bias:
                    params += [(f"bias_ih_l{layer}{suffix}", (gate_size,)), (f"bias_hh_l{layer}{suffix}", (gate_size,))]
                if proj_size > 0:
                    params.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in params:
                    setattr(self, name, Parameter(rtx.empty(shape, **kw)))
                names = [name for name, _ in params]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """cuDNN packs the weights into one buffer; rtx keeps them apart, so nothing to do."""

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _weights(self):
        """Per layer and direction: (w_ih, w_hh, b_ih, b_hh, w_hr), None where absent."""
        out = []
        for names in self._all_weights:
            p = {n.split("_l")[0]: getattr(self, n) for n in names}
            out.append((p["weight_ih"], p["weight_hh"], p.get("bias_ih"), p.get("bias_hh"), p.get("weight_hr")))
        return out

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---- forward -------------------------------------------------------------------------------

    def _name(self):
        return type(self).__name__

    def _prepare(self, input):
        """-> (x (L, N, In), lengths or None, batched, packed)."""
        if isinstance(input, PackedSequence):
            padded, lengths = pad_packed_sequence(input)
            x, lens, batched = padded, lengths.tolist(), True
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"{self._name()}: Expected input to be 2D or 3D, got {input.dim()}D instead")
            batched = input.dim() == 3
            x = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                x = x.transpose(0, 1)
            lens = None
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{x.shape[-1]}")
        w = self.weight_ih_l0
        if x.dtype != w.dtype:
            raise RuntimeError(f"input must have the type {w.dtype}, got type {x.dtype}")
        return x, lens, batched

    def _hidden(self, hx, x, batched, size, what, msg):
        num = self.num_layers * (2 if self.bidirectional else 1)
        n = x.shape[1]
        if hx is None:
            return rtx.zeros((num, n, size), dtype=x.dtype, device=x.device)
        if batched and hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, {what} should also be 3-D but got {hx.dim()}-D tensor")
        if not batched:
            if hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, {what} should also be 2-D but got {hx.dim()}-D tensor")
            hx = hx.unsqueeze(1)
        if tuple(hx.shape) != (num, n, size):
            got = list(hx.shape) if batched else [hx.shape[0], hx.shape[2]]
            expected = (num, n, size) if batched else (num, size)
            raise RuntimeError(msg.format(expected, got))
        if hx.dtype != x.dtype:
            raise RuntimeError(f"{what} must have the same dtype as the input ({x.dtype}), got {hx.dtype}")
        return hx

    def _finish(self, input, out, hidden, batched):
        if isinstance(input, PackedSequence):
            return _repack(out, input), hidden
        if not batched:
            out = out.squeeze(1)
            hidden = tuple(h.squeeze(1) for h in hidden) if isinstance(hidden, tuple) else hidden.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, hidden

    def forward(self, input, hx=None):
        x, lens, batched = self._prepare(input)
        h_out = self.proj_size if self.proj_size > 0 else self.hidden_size
        if self.mode == "LSTM":
            if hx is None:
                h0 = self._hidden(None, x, batched, h_out, "hx", "")
                c0 = self._hidden(None, x, batched, self.hidden_size, "cx", "")
            else:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise RuntimeError("LSTM expects hx as a tuple (h_0, c_0)")
                h0, c0 = hx
                if h0.dim() != c0.dim():
                    raise RuntimeError(f"LSTM: h_0 and c_0 should have the same number of dimensions, got "
                                       f"({h0.dim()}-D, {c0.dim()}-D) tensors")
                h0 = self._hidden(h0, x, batched, h_out, "hx", "Expected hidden[0] size {}, got {}")
                c0 = self._hidden(c0, x, batched, self.hidden_size, "cx", "Expected hidden[1] size {}, got {}")
            hidden = (h0, c0)
        else:
            hidden = self._hidden(hx, x, batched, h_out, "hx", "Expected hidden size {}, got {}")
        out, hidden = F.rnn_forward(self.mode, x, hidden, self._weights(), self.num_layers, self.bidirectional,
                                    self.dropout, self.training, lens)
        return self._finish(input, out, hidden, batched)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh or relu(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity  # set before Module.__init__: plain attribute, as PyTorch
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory; proj_size > 0 projects h_t to proj_size (LSTMP)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit (PyTorch's variant: the n gate's hidden bias sits inside r * (...))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


# ---- cells ------------------------------------------------------------------------------------------


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(rtx.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(rtx.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(rtx.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(rtx.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _check(self, input, hx_list):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for hx in hx_list:
            if hx is not None and hx.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
            if hx is not None and hx.dim() != input.dim():
                raise RuntimeError(f"{name}: the input is {input.dim()}-D but the hidden state is {hx.dim()}-D; "
                                   f"both must be batched (2-D) or unbatched (1-D)")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        n = input.shape[0]
        out = []
        for hx in hx_list:
            if hx is None:
                hx = rtx.zeros((n, self.hidden_size), dtype=input.dtype, device=input.device)
            elif not batched:
                hx = hx.unsqueeze(0)
            if tuple(hx.shape) != (n, self.hidden_size):
                raise RuntimeError(f"hidden state has inconsistent size: got {list(hx.shape)}, expected "
                                   f"{[n, self.hidden_size]}")
            out.append(hx)
        return input, out, batched

    def _args(self):
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._check(input, [hx])
        cell = F.rnn_tanh_cell if self.nonlinearity == "tanh" else F.rnn_relu_cell
        h = cell(x, h, *self._args())
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise RuntimeError("LSTMCell expects hx as a tuple (h_0, c_0)")
        x, (h, c), batched = self._check(input, [None, None] if hx is None else list(hx))
        h, c = F.lstm_cell(x, (h, c), *self._args())
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._check(input, [hx])
        h = F.gru_cell(x, h, *self._args())
        return h if batched else h.squeeze(0)
