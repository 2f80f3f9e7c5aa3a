"""RNN, LSTM, GRU, their cells and packed sequences, against a NumPy reference of the published
equations (PyTorch's gate orders), with weights loaded by PyTorch's state_dict key names."""
import math

import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.autograd import gradcheck
from rtx.nn._functional import rnn as Frnn
from rtx.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)
from rtx.testing import assert_close

rng = np.random.default_rng(2)


def T(a, **kw):
    return rtx.tensor(a, **kw)


# ---- NumPy reference ---------------------------------------------------------------------------------


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_cell(mode, x, h, c, w):
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    if mode == "GRU":
        gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        i_r, i_z, i_n = np.split(gi, 3, -1)
        h_r, h_z, h_n = np.split(gh, 3, -1)
        r, z = sig(i_r + h_r), sig(i_z + h_z)
        n = np.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h, None
    pre = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    if mode == "RNN_TANH":
        return np.tanh(pre), None
    if mode == "RNN_RELU":
        return np.maximum(pre, 0), None
    i, f, g, o = np.split(pre, 4, -1)
    c = sig(f) * c + sig(i) * np.tanh(g)
    h = sig(o) * np.tanh(c)
    if w_hr is not None:
        h = h @ w_hr.T
    return h, c


def np_weights(sd, num_layers, D):
    out = []
    for layer in range(num_layers):
        for d in range(D):
            s = f"l{layer}{'_reverse' if d else ''}"
            g = sd[f"weight_ih_{s}"].shape[0]
            out.append((sd[f"weight_ih_{s}"], sd[f"weight_hh_{s}"], sd.get(f"bias_ih_{s}", np.zeros(g)),
                        sd.get(f"bias_hh_{s}", np.zeros(g)), sd.get(f"weight_hr_{s}")))
    return out


def np_rnn(mode, x, sd, num_layers, D, h0, c0=None, lengths=None):
    """x (L, N, In). Each sequence runs alone over its own length (what packing means).
    Returns output (L, N, D*H_out) zero-padded, h_n, c_n."""
    L, N, _ = x.shape
    lengths = [L] * N if lengths is None else lengths
    ws = np_weights(sd, num_layers, D)
    h_out = h0.shape[-1]
    out = np.zeros((L, N, D * h_out))
    h_n, c_n = np.zeros_like(h0), (np.zeros_like(c0) if c0 is not None else None)
    for b in range(N):
        seq = x[:lengths[b], b]
        for layer in range(num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                h = h0[k, b]
                c = c0[k, b] if c0 is not None else None
                steps = range(len(seq) - 1, -1, -1) if d else range(len(seq))
                o = np.zeros((len(seq), h_out))
                for t in steps:
                    h, c = np_cell(mode, seq[t], h, c, ws[k])
                    o[t] = h
                outs.append(o)
                h_n[k, b] = h
                if c is not None:
                    c_n[k, b] = c
            seq = np.concatenate(outs, -1)
        out[:lengths[b], b] = seq
    return out, h_n, c_n


# ---- helpers -------------------------------------------------------------------------------------------

MODES = {"RNN_TANH": lambda **kw: nn.RNN(nonlinearity="tanh", **kw),
         "RNN_RELU": lambda **kw: nn.RNN(nonlinearity="relu", **kw),
         "LSTM": lambda **kw: nn.LSTM(**kw),
         "LSTM_PROJ": lambda **kw: nn.LSTM(proj_size=2, **kw),
         "GRU": lambda **kw: nn.GRU(**kw)}


def expected_shapes(mode, input_size, hidden, num_layers, D, bias=True, proj=0):
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hidden
    real = proj or hidden
    shapes = {}
    for layer in range(num_layers):
        for d in range(D):
            s = f"l{layer}{'_reverse' if d else ''}"
            shapes[f"weight_ih_{s}"] = (gates, input_size if layer == 0 else real * D)
            shapes[f"weight_hh_{s}"] = (gates, real)
            if bias:
                shapes[f"bias_ih_{s}"] = (gates,)
                shapes[f"bias_hh_{s}"] = (gates,)
            if proj:
                shapes[f"weight_hr_{s}"] = (proj, hidden)
    return shapes


def build(name, input_size=3, hidden=4, num_layers=2, bidirectional=True, bias=True, seed=0, **kw):
    """A float64 layer with random weights loaded by PyTorch's key names; returns (module, numpy sd)."""
    m = MODES[name](input_size=input_size, hidden_size=hidden, num_layers=num_layers, bidirectional=bidirectional,
                    bias=bias, dtype=rtx.float64, **kw)
    mode = "LSTM" if name.startswith("LSTM") else name
    shapes = expected_shapes(mode, input_size, hidden, num_layers, 2 if bidirectional else 1, bias,
                             2 if name == "LSTM_PROJ" else 0)
    g = np.random.default_rng(seed)
    sd = {k: g.uniform(-0.8, 0.8, s) for k, s in shapes.items()}
    result = m.load_state_dict({k: T(v) for k, v in sd.items()})
    assert not result.missing_keys and not result.unexpected_keys
    return m, mode, sd


def run_and_compare(name, x, lengths=None, hx=True, **kw):
    m, mode, sd = build(name, **kw)
    D = 2 if m.bidirectional else 1
    h_out = m.proj_size or m.hidden_size
    N = x.shape[1]
    h0 = rng.standard_normal((m.num_layers * D, N, h_out)) if hx else np.zeros((m.num_layers * D, N, h_out))
    c0 = rng.standard_normal((m.num_layers * D, N, m.hidden_size)) if hx else np.zeros((m.num_layers * D, N,
                                                                                         m.hidden_size))
    ref_out, ref_h, ref_c = np_rnn(mode, x, sd, m.num_layers, D, h0, c0 if mode == "LSTM" else None, lengths)
    state = ((T(h0), T(c0)) if mode == "LSTM" else T(h0)) if hx else None
    return m, state, (ref_out, ref_h, ref_c)


# ---- values ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODES))
@pytest.mark.parametrize("layers,bidirectional,bias", [(2, True, True), (1, False, False), (2, False, True)])
def test_against_numpy(name, layers, bidirectional, bias):
    x = rng.standard_normal((5, 3, 3))
    m, state, (ref_out, ref_h, ref_c) = run_and_compare(name, x, num_layers=layers, bidirectional=bidirectional,
                                                        bias=bias)
    out, hidden = m(T(x), state)
    assert_close(out, ref_out)
    if isinstance(m, nn.LSTM):
        assert_close(hidden[0], ref_h)
        assert_close(hidden[1], ref_c)
    else:
        assert_close(hidden, ref_h)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN_TANH"])
def test_batch_first_and_default_hidden(name):
    x = rng.standard_normal((4, 2, 3))
    m, _, (ref_out, ref_h, ref_c) = run_and_compare(name, x, hx=False, batch_first=True)
    assert m.batch_first
    out, hidden = m(T(x.transpose(1, 0, 2)))
    assert_close(out, ref_out.transpose(1, 0, 2))
    assert_close(hidden[0] if isinstance(hidden, tuple) else hidden, ref_h)


@pytest.mark.parametrize("name", ["LSTM_PROJ", "GRU", "RNN_RELU"])
def test_unbatched(name):
    x = rng.standard_normal((4, 1, 3))
    m, state, (ref_out, ref_h, ref_c) = run_and_compare(name, x)
    if isinstance(state, tuple):
        state = tuple(s[:, 0] for s in state)
    else:
        state = state[:, 0]
    out, hidden = m(T(x[:, 0]), state)
    assert tuple(out.shape) == (4, ref_out.shape[-1])
    assert_close(out, ref_out[:, 0])
    assert_close(hidden[0] if isinstance(hidden, tuple) else hidden, ref_h[:, 0])


# ---- packed sequences ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODES))
def test_packed_matches_per_sequence_reference(name):
    lengths = [3, 5, 1, 4]
    x = rng.standard_normal((5, 4, 3))
    m, state, (ref_out, ref_h, ref_c) = run_and_compare(name, x, lengths=lengths)
    packed = pack_padded_sequence(T(x), lengths, enforce_sorted=False)
    out, hidden = m(packed, state)
    assert isinstance(out, PackedSequence)
    assert out.batch_sizes.tolist() == packed.batch_sizes.tolist()
    assert out.sorted_indices.tolist() == packed.sorted_indices.tolist()
    padded, out_lengths = pad_packed_sequence(out)
    assert out_lengths.tolist() == lengths
    assert_close(padded, ref_out)  # zero beyond each sequence's length
    h = hidden[0] if isinstance(hidden, tuple) else hidden
    assert_close(h, ref_h)  # taken at each sequence's last valid step
    if isinstance(hidden, tuple):
        assert_close(hidden[1], ref_c)


def test_packed_equals_each_sequence_alone():
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    seqs = [rtx.randn(k, 3) for k in (2, 5, 3)]
    out, h = m(pack_sequence(seqs, enforce_sorted=False))
    alone = [m(s) for s in seqs]
    for i, (o, hh) in enumerate(alone):
        assert_close(unpack_sequence(out)[i], o, rtol=1e-5, atol=1e-6)
        assert_close(h[:, i], hh, rtol=1e-5, atol=1e-6)


def test_packed_sorted_batch_first_lstm():
    lengths = [5, 3, 2]
    x = rng.standard_normal((5, 3, 3))
    m, state, (ref_out, ref_h, ref_c) = run_and_compare("LSTM", x, lengths=lengths, batch_first=True)
    packed = pack_padded_sequence(T(x.transpose(1, 0, 2)), T(np.array(lengths)), batch_first=True)
    assert packed.sorted_indices is None
    out, (h, c) = m(packed, state)
    padded, _ = pad_packed_sequence(out, batch_first=True)
    assert_close(padded, ref_out.transpose(1, 0, 2))
    assert_close(h, ref_h)
    assert_close(c, ref_c)


def test_gradcheck_packed_bidirectional_gru():
    m, _, _ = build("GRU", input_size=2, hidden=2, num_layers=1)
    x = T(rng.standard_normal((3, 2, 2)), requires_grad=True)
    w = T(m.weight_hh_l0_reverse.detach().numpy(), requires_grad=True)
    weights = [list(ws) for ws in m._weights()]
    weights[1][1] = None  # replaced by the input w below

    def f(x, w):
        ws = [tuple(weights[0]), (weights[1][0], w, *weights[1][2:])]
        out, h = Frnn.rnn_forward("GRU", x, x.new_zeros(2, 2, 2), ws, 1, True, lengths=[3, 1])
        return out, h

    assert gradcheck(f, [x, w])


# ---- gradients ------------------------------------------------------------------------------------------------


def test_gradcheck_tiny_lstm_float64():
    m, _, _ = build("LSTM_PROJ", input_size=2, hidden=3, num_layers=2, bidirectional=True, seed=4)
    x = T(rng.standard_normal((3, 2, 2)), requires_grad=True)
    h0 = T(rng.standard_normal((4, 2, 2)), requires_grad=True)
    c0 = T(rng.standard_normal((4, 2, 3)), requires_grad=True)
    w_ih = T(m.weight_ih_l1.detach().numpy(), requires_grad=True)
    w_hr = T(m.weight_hr_l0_reverse.detach().numpy(), requires_grad=True)
    base = m._weights()

    def f(x, h0, c0, w_ih, w_hr):
        ws = list(base)
        ws[1] = (*base[1][:4], w_hr)
        ws[2] = (w_ih, *base[2][1:])
        out, (h, c) = Frnn.rnn_forward("LSTM", x, (h0, c0), ws, 2, True)
        return out, h, c

    assert gradcheck(f, [x, h0, c0, w_ih, w_hr])


def test_backward_reaches_every_parameter():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    out, (h, c) = m(rtx.randn(5, 2, 3))
    (out.sum() + h.sum() + c.sum()).backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and tuple(p.grad.shape) == tuple(p.shape), name
        assert np.abs(p.grad.numpy()).sum() > 0, name


# ---- cells ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,mode", [(nn.RNNCell, "RNN_TANH"), (nn.LSTMCell, "LSTM"), (nn.GRUCell, "GRU")])
def test_cells(cls, mode):
    cell = cls(3, 4, dtype=rtx.float64)
    assert list(cell.state_dict()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    g = {"LSTM": 4, "GRU": 3}.get(mode, 1) * 4
    assert tuple(cell.weight_ih.shape) == (g, 3) and tuple(cell.weight_hh.shape) == (g, 4)
    sd = {"weight_ih": rng.uniform(-1, 1, (g, 3)), "weight_hh": rng.uniform(-1, 1, (g, 4)),
          "bias_ih": rng.uniform(-1, 1, g), "bias_hh": rng.uniform(-1, 1, g)}
    cell.load_state_dict({k: T(v) for k, v in sd.items()})
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    w = (sd["weight_ih"], sd["weight_hh"], sd["bias_ih"], sd["bias_hh"], None)
    ref_h, ref_c = np_cell(mode, x, h, c, w)
    if mode == "LSTM":
        out_h, out_c = cell(T(x), (T(h), T(c)))
        assert_close(out_c, ref_c)
        uh, uc = cell(T(x[0]), (T(h[0]), T(c[0])))  # unbatched
        assert_close(uh, ref_h[0])
        zh, _ = cell(T(x))  # default zeros
        assert_close(zh, np_cell(mode, x, 0 * h, 0 * c, w)[0])
    else:
        out_h = cell(T(x), T(h))
        assert_close(cell(T(x[1]), T(h[1])), ref_h[1])
        assert_close(cell(T(x)), np_cell(mode, x, 0 * h, None, w)[0])
    assert_close(out_h, ref_h)


def test_relu_cell_and_repr():
    cell = nn.RNNCell(3, 4, bias=False, nonlinearity="relu")
    assert repr(cell) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert list(cell.state_dict()) == ["weight_ih", "weight_hh"]
    assert np.all(cell(rtx.randn(2, 3)).detach().numpy() >= 0)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="gelu")


# ---- structure: names, init, repr, errors ----------------------------------------------------------------------


def test_state_dict_keys():
    # As PyTorch lists them for nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5).
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    assert list(m.state_dict()) == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0",
        "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
        "weight_hr_l0_reverse",
        "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1", "weight_hr_l1",
        "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse",
        "weight_hr_l1_reverse"]
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert shapes == expected_shapes("LSTM", 10, 20, 2, 2, proj=5)
    assert shapes["weight_ih_l1"] == (80, 10) and shapes["weight_hh_l0"] == (80, 5)
    g = nn.GRU(4, 6, bias=False)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (18, 4)
    assert [[tuple(p.shape) for p in layer] for layer in g.all_weights] == [[(18, 4), (18, 6)]]


def test_init_uniform_bound():
    m = nn.GRU(5, 16, num_layers=2)
    bound = 1 / math.sqrt(16)
    for name, p in m.named_parameters():
        a = p.detach().numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.8 * bound, name


def test_repr():
    assert repr(nn.LSTM(10, 20, 2, batch_first=True, dropout=0.5, bidirectional=True)) == \
        "LSTM(10, 20, num_layers=2, batch_first=True, dropout=0.5, bidirectional=True)"
    assert repr(nn.GRU(3, 4, bias=False)) == "GRU(3, 4, bias=False)"
    assert repr(nn.LSTM(3, 4, proj_size=2)) == "LSTM(3, 4, proj_size=2)"


def test_errors():
    m = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ValueError, match="2D or 3D"):
        m(rtx.randn(2, 3, 4, 3))
    with pytest.raises(RuntimeError, match="input_size. Expected 3, got 5"):
        m(rtx.randn(2, 3, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 3, 4\), got \[2, 2, 4\]"):
        m(rtx.randn(5, 3, 3), (rtx.zeros(2, 2, 4), rtx.zeros(2, 3, 4)))
    with pytest.raises(RuntimeError, match="3-D"):
        m(rtx.randn(5, 3, 3), (rtx.zeros(2, 4), rtx.zeros(2, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        nn.GRU(3, 4)(rtx.randn(5, 2, 3), rtx.zeros(1, 3, 4))
    with pytest.raises(RuntimeError, match="input must have the type"):
        nn.GRU(3, 4)(rtx.randn(5, 2, 3, dtype=rtx.float64))
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout"):
        nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


def test_dropout_between_layers_train_only():
    m = nn.LSTM(3, 8, num_layers=2, dropout=0.5)
    plain = nn.LSTM(3, 8, num_layers=2)
    plain.load_state_dict(m.state_dict())
    x = rtx.randn(4, 2, 3)
    m.eval()
    assert_close(m(x)[0], plain(x)[0])
    m.train()
    rtx.manual_seed(0)
    a = m(x)[0]
    rtx.manual_seed(0)
    b = m(x)[0]
    rtx.manual_seed(1)
    c = m(x)[0]
    assert_close(a, b)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())
    assert not np.allclose(a.detach().numpy(), plain(x)[0].detach().numpy())
    # one layer: nothing between layers, so no dropout at all
    with pytest.warns(UserWarning):
        one = nn.GRU(3, 4, dropout=0.5)
    assert_close(one(x)[0], one(x)[0])


# ---- nn.utils.rnn ----------------------------------------------------------------------------------------------


def test_pad_and_pack_utilities():
    seqs = [T([[1.0], [2.0], [3.0]]), T([[4.0]]), T([[5.0], [6.0]])]
    np.testing.assert_array_equal(pad_sequence(seqs)[..., 0].numpy(), [[1, 4, 5], [2, 0, 6], [3, 0, 0]])
    np.testing.assert_array_equal(pad_sequence(seqs, batch_first=True, padding_value=-1)[..., 0].numpy(),
                                  [[1, 2, 3], [4, -1, -1], [5, 6, -1]])
    np.testing.assert_array_equal(pad_sequence(seqs, batch_first=True, padding_side="left")[..., 0].numpy(),
                                  [[1, 2, 3], [0, 0, 4], [0, 5, 6]])
    p = pack_sequence(seqs, enforce_sorted=False)
    assert p.data[:, 0].tolist() == [1, 5, 4, 2, 6, 3]
    assert p.batch_sizes.tolist() == [3, 2, 1] and p.batch_sizes.dtype == rtx.int64
    assert p.sorted_indices.tolist() == [0, 2, 1] and p.unsorted_indices.tolist() == [0, 2, 1]
    padded, lengths = pad_packed_sequence(p, batch_first=True, total_length=4)
    assert tuple(padded.shape) == (3, 4, 1) and lengths.tolist() == [3, 1, 2]
    assert [s[:, 0].tolist() for s in unpack_sequence(p)] == [[1, 2, 3], [4], [5, 6]]
    assert [s[:, 0].tolist() for s in unpad_sequence(padded, lengths, batch_first=True)] == [[1, 2, 3], [4], [5, 6]]
    assert p.double().data.dtype == rtx.float64 and not p.is_cuda


def test_pack_errors():
    x = rtx.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(RuntimeError, match="greater than 0"):
        pack_padded_sequence(x, [2, 0, 0])
    with pytest.raises(ValueError, match="batch_size"):
        pack_padded_sequence(x, [2, 1])
    with pytest.raises(ValueError, match="total_length"):
        pad_packed_sequence(pack_padded_sequence(x, [4, 2, 1]), total_length=3)


def test_gradcheck_pack_and_pad():
    x = T(rng.standard_normal((4, 3, 2)), requires_grad=True)

    def f(x):
        p = pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        return pad_packed_sequence(p, padding_value=0.5)[0] * 2, p.data

    assert gradcheck(f, [x])
    seqs = [T(rng.standard_normal((k, 2)), requires_grad=True) for k in (3, 1)]
    assert gradcheck(lambda a, b: pad_sequence([a, b], padding_side="left"), seqs)
