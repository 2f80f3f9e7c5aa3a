"""nn.Transformer and its parts (and nn.MultiheadAttention, nn.RMSNorm) against PyTorch: state_dicts
written by PyTorch (data/make_transformer_fixtures.py) load and give PyTorch's outputs and
input gradients; plus a NumPy reference of the encoder layer, masks, and errors."""
import math
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F

FIXTURES = np.load(Path(__file__).parent / "data" / "transformer_fixtures.npz")
E, H = 16, 4

# The constructors of data/make_transformer_fixtures.py, case by case.
MODULES = {
    "mha_weights": lambda: nn.MultiheadAttention(E, H),
    "mha_per_head_weights": lambda: nn.MultiheadAttention(E, H),
    "mha_kdim_vdim": lambda: nn.MultiheadAttention(E, H, kdim=6, vdim=10, add_bias_kv=True, add_zero_attn=True),
    "mha_batch_first_causal": lambda: nn.MultiheadAttention(E, H, batch_first=True, bias=False),
    "mha_unbatched": lambda: nn.MultiheadAttention(E, H),
    "enc_layer_post_relu": lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=32, dropout=0.1),
    "enc_layer_pre_gelu": lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=24, dropout=0.0, activation="gelu",
                                                             batch_first=True, norm_first=True, layer_norm_eps=1e-6),
    "dec_layer_post": lambda: nn.TransformerDecoderLayer(E, H, dim_feedforward=32),
    "dec_layer_pre_nobias": lambda: nn.TransformerDecoderLayer(E, H, dim_feedforward=32, batch_first=True,
                                                               norm_first=True, bias=False),
    "encoder_nested": lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, dim_feedforward=32,
                                                                               batch_first=True), 2,
                                                    norm=nn.LayerNorm(E)),
    "encoder_plain": lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, dim_feedforward=32,
                                                                              batch_first=True), 2,
                                                   norm=nn.LayerNorm(E)),
    "transformer": lambda: nn.Transformer(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
                                          dim_feedforward=32),
    "rmsnorm_default_eps": lambda: nn.RMSNorm(E),
    "rmsnorm_2d_no_affine": lambda: nn.RMSNorm([5, E], eps=1e-3, elementwise_affine=False),
}
KWARGS = {
    "mha_per_head_weights": {"average_attn_weights": False},
    "mha_kdim_vdim": {"need_weights": False},
    "mha_batch_first_causal": {"need_weights": False, "is_causal": True},
    "enc_layer_pre_gelu": {"is_causal": True, "src_mask": nn.Transformer.generate_square_subsequent_mask(5)},
    "dec_layer_pre_nobias": {"tgt_is_causal": False},
}
NO_GRAD = {"encoder_nested"}


def _group(case, group):
    prefix = f"{case}/{group}/"
    return {k[len(prefix):]: FIXTURES[k] for k in FIXTURES.files if k.startswith(prefix)}


@pytest.mark.parametrize("case", list(MODULES))
def test_pytorch_state_dict_loads_and_gives_pytorchs_outputs(case):
    module = MODULES[case]()
    sd = _group(case, "sd")
    assert list(module.state_dict().keys()) == list(sd.keys())  # same names, same order
    result = module.load_state_dict({k: rtx.tensor(v) for k, v in sd.items()})
    assert not result.missing_keys and not result.unexpected_keys
    module.eval()
    arrays = {k: v for k, v in _group(case, "in").items() if k != "out_weights"}
    inputs = {k: rtx.tensor(v) for k, v in arrays.items()}
    for k in ("key", "value"):  # self-attention: PyTorch was given one tensor three times
        if k in arrays and arrays[k].shape == arrays["query"].shape and np.array_equal(arrays[k], arrays["query"]):
            inputs[k] = inputs["query"]
    grads = _group(case, "grad")
    for k in grads:
        inputs[k].requires_grad_(True)
    if case in NO_GRAD:
        with rtx.no_grad():
            out = module(**inputs, **KWARGS.get(case, {}))
    else:
        out = module(**inputs, **KWARGS.get(case, {}))
    outs = out if isinstance(out, tuple) else (out,)
    want = _group(case, "out")
    assert len([o for o in outs if o is not None]) == len(want)
    for i, o in enumerate(outs):
        if o is not None:
            np.testing.assert_allclose(o.detach().numpy(), want[str(i)], rtol=1e-5, atol=1e-5)
    if grads:
        (outs[0] * rtx.tensor(FIXTURES[f"{case}/in/out_weights"])).sum().backward()
        for k, g in grads.items():
            np.testing.assert_allclose(inputs[k].grad.numpy(), g, rtol=1e-4, atol=1e-5)


def test_nested_path_zeroes_padding_only_where_pytorch_does():
    out = FIXTURES["encoder_nested/out/0"]
    pad = FIXTURES["encoder_nested/in/src_key_padding_mask"]
    bias = FIXTURES["encoder_nested/sd/norm.bias"]
    np.testing.assert_allclose(out[pad], np.broadcast_to(bias, out[pad].shape), atol=1e-6)
    plain = FIXTURES["encoder_plain/out/0"]
    assert not np.allclose(plain[pad], bias)  # with gradients PyTorch keeps what the layers computed


# ---- a NumPy reference of the encoder layer (independent of the fixtures) --------------------------------


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _mha_ref(x, p, nhead, mask):
    L, N, Ed = x.shape
    hd = Ed // nhead
    qkv = x @ p["self_attn.in_proj_weight"].T + p["self_attn.in_proj_bias"]
    q, k, v = np.split(qkv, 3, axis=-1)

    def heads(t):
        return t.reshape(L, N * nhead, hd).transpose(1, 0, 2)
    q, k, v = heads(q), heads(k), heads(v)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    o = (s @ v).transpose(1, 0, 2).reshape(L, N, Ed)
    return o @ p["self_attn.out_proj.weight"].T + p["self_attn.out_proj.bias"]


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_a_numpy_reference(norm_first):
    rtx.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0, norm_first=norm_first,
                                       dtype=rtx.float64).eval()
    p = {k: v.numpy() for k, v in layer.state_dict().items()}
    x = np.random.default_rng(0).standard_normal((6, 2, 8))
    mask = np.triu(np.full((6, 6), -np.inf), 1)

    def ff(h):
        return np.maximum(h @ p["linear1.weight"].T + p["linear1.bias"], 0) @ p["linear2.weight"].T + p["linear2.bias"]
    n1 = lambda h: _ln(h, p["norm1.weight"], p["norm1.bias"], 1e-5)  # noqa: E731
    n2 = lambda h: _ln(h, p["norm2.weight"], p["norm2.bias"], 1e-5)  # noqa: E731
    if norm_first:
        h = x + _mha_ref(n1(x), p, 2, mask)
        want = h + ff(n2(h))
    else:
        h = n1(x + _mha_ref(x, p, 2, mask))
        want = n2(h + ff(h))
    got = layer(rtx.tensor(x), src_mask=rtx.tensor(mask))
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-10)
    # a bool mask (True = masked out) is the same mask
    got_bool = layer(rtx.tensor(x), src_mask=rtx.tensor(np.isinf(mask)))
    np.testing.assert_allclose(got_bool.detach().numpy(), want, rtol=1e-10, atol=1e-10)


def test_gradients_by_finite_differences():
    rtx.manual_seed(1)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8,
                           dropout=0.0, dtype=rtx.float64)
    src = rtx.randn(4, 2, 8, dtype=rtx.float64, requires_grad=True)
    tgt = rtx.randn(3, 2, 8, dtype=rtx.float64, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=rtx.float64)
    assert rtx.autograd.gradcheck(lambda s, t: model(s, t, tgt_mask=mask), (src, tgt))


def test_construction_defaults_and_init():
    model = nn.Transformer()
    assert (model.d_model, model.nhead, model.batch_first) == (512, 8, False)
    assert len(model.encoder.layers) == 6 and len(model.decoder.layers) == 6
    layer = model.encoder.layers[0]
    assert layer.linear1.weight.shape == (2048, 512) and layer.dropout.p == 0.1 and layer.norm1.eps == 1e-5
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
    assert model.encoder.layers[0].linear1.weight is not model.encoder.layers[1].linear1.weight  # deep copies
    w = model.encoder.layers[0].linear1.weight
    bound = math.sqrt(6 / (512 + 2048))  # xavier_uniform_ on every matrix, as PyTorch's _reset_parameters
    assert w.abs().max().item() <= bound and w.abs().max().item() > 0.9 * bound
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.tolist() == [[0.0, -math.inf, -math.inf], [0.0, 0.0, -math.inf], [0.0, 0.0, 0.0]]
    keys = set(nn.TransformerDecoderLayer(8, 2).state_dict())
    assert {"multihead_attn.in_proj_weight", "norm3.bias", "linear2.weight"} <= keys


def test_causal_mask_is_detected_and_errors_are_named():
    from rtx.nn.modules.transformer import _detect_is_causal_mask
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert _detect_is_causal_mask(m) and not _detect_is_causal_mask(m.flip(0)) and _detect_is_causal_mask(None, True)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="batch number"):
        model(rtx.randn(4, 2, 8), rtx.randn(3, 3, 8))
    with pytest.raises(RuntimeError, match="d_model"):
        model(rtx.randn(4, 2, 8), rtx.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(TypeError, match="Module"):
        nn.TransformerEncoder("layer", 2)


def test_batch_first_and_training_dropout():
    rtx.manual_seed(2)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=8, batch_first=True)
    x = rtx.randn(3, 5, 8)
    layer.eval()
    a = layer(x)
    b = nn.TransformerEncoderLayer(8, 2, dim_feedforward=8)
    b.load_state_dict(layer.state_dict())
    b.eval()
    np.testing.assert_allclose(a.detach().numpy(), b(x.transpose(0, 1)).transpose(0, 1).detach().numpy(), atol=1e-6)
    layer.train()
    assert not np.allclose(layer(x).detach().numpy(), a.detach().numpy())  # dropout is on in training
