"""Writes transformer_fixtures.npz, which test_transformer.py reads: PyTorch's MultiheadAttention
and Transformer modules (state_dict, inputs, outputs, and a few input gradients) on small
configurations. Run once with a real torch (CPU wheel, side venv):

    /work/torch-venv/bin/python packages/rtx-nn/tests/data/make_transformer_fixtures.py

Keys are "<case>/<group>/<name>": group "sd" holds the state_dict, "in" the inputs (masks
included), "out" the outputs, "grad" gradients of sum(out * weights) with respect to inputs.
The constructor arguments of each case are written down in the test, not here."""
import os

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
arrays = {}


def put(case, group, name, t):
    arrays[f"{case}/{group}/{name}"] = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def run(case, module, inputs, kwargs=None, grad_inputs=(), train=False, no_grad=False):
    """Forward module(**inputs, **kwargs) in eval mode; record state_dict, inputs, outputs."""
    module.train(train)
    for k, v in module.state_dict().items():
        put(case, "sd", k, v)
    for k, v in inputs.items():
        put(case, "in", k, v)
    for k in grad_inputs:
        inputs[k].requires_grad_(True)
    ctx = torch.no_grad() if no_grad else torch.enable_grad()
    with ctx:
        out = module(**inputs, **(kwargs or {}))
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        if o is not None:
            put(case, "out", str(i), o)
    if grad_inputs:
        w = torch.randn(outs[0].shape)
        put(case, "in", "out_weights", w)
        (outs[0] * w).sum().backward()
        for k in grad_inputs:
            put(case, "grad", k, inputs[k].grad)


E, H = 16, 4
L, S, N = 5, 7, 3
r = torch.randn

# -- MultiheadAttention ---------------------------------------------------------------------------------
mha = nn.MultiheadAttention(E, H)
kpm = torch.zeros(N, S, dtype=torch.bool)
kpm[1, -2:] = True
run("mha_weights", mha, {"query": r(L, N, E), "key": r(S, N, E), "value": r(S, N, E),
                         "key_padding_mask": kpm, "attn_mask": r(L, S)},
    grad_inputs=("query", "key"))
run("mha_per_head_weights", mha, {"query": r(L, N, E), "key": r(S, N, E), "value": r(S, N, E)},
    {"average_attn_weights": False})

mha_kv = nn.MultiheadAttention(E, H, kdim=6, vdim=10, add_bias_kv=True, add_zero_attn=True)
run("mha_kdim_vdim", mha_kv, {"query": r(L, N, E), "key": r(S, N, 6), "value": r(S, N, 10),
                              "key_padding_mask": kpm}, {"need_weights": False}, grad_inputs=("query", "value"))

mha_bf = nn.MultiheadAttention(E, H, batch_first=True, bias=False)
causal = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
x = r(N, L, E)
run("mha_batch_first_causal", mha_bf, {"query": x, "key": x, "value": x, "attn_mask": causal},
    {"need_weights": False, "is_causal": True}, grad_inputs=("query",))

run("mha_unbatched", mha, {"query": r(L, E), "key": r(S, E), "value": r(S, E)})

# -- layers ---------------------------------------------------------------------------------------------
enc = nn.TransformerEncoderLayer(E, H, dim_feedforward=32, dropout=0.1)
src_mask = r(L, L)
pad = torch.zeros(N, L, dtype=torch.bool)
pad[2, -1] = True
run("enc_layer_post_relu", enc, {"src": r(L, N, E), "src_mask": src_mask, "src_key_padding_mask": pad},
    grad_inputs=("src",))

enc2 = nn.TransformerEncoderLayer(E, H, dim_feedforward=24, dropout=0.0, activation="gelu", batch_first=True,
                                  norm_first=True, layer_norm_eps=1e-6)
run("enc_layer_pre_gelu", enc2, {"src": r(N, L, E)}, {"is_causal": True,
                                                      "src_mask": nn.Transformer.generate_square_subsequent_mask(L)},
    grad_inputs=("src",))

dec = nn.TransformerDecoderLayer(E, H, dim_feedforward=32)
mpad = torch.zeros(N, S, dtype=torch.bool)
mpad[0, -3:] = True
run("dec_layer_post", dec, {"tgt": r(L, N, E), "memory": r(S, N, E),
                            "tgt_mask": nn.Transformer.generate_square_subsequent_mask(L),
                            "memory_key_padding_mask": mpad}, grad_inputs=("tgt", "memory"))

dec2 = nn.TransformerDecoderLayer(E, H, dim_feedforward=32, batch_first=True, norm_first=True, bias=False)
run("dec_layer_pre_nobias", dec2, {"tgt": r(N, L, E), "memory": r(N, S, E)}, {"tgt_is_causal": False})

# -- stacks ----------------------------------------------------------------------------------------------
layer = nn.TransformerEncoderLayer(E, H, dim_feedforward=32, batch_first=True)
stack = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(E))
stack_pad = torch.zeros(N, L, dtype=torch.bool)
stack_pad[0, -2:] = True
stack_pad[2, -1:] = True
src = r(N, L, E)
# eval + no_grad + left-aligned padding: PyTorch's nested-tensor path (padded rows come out as norm(0))
run("encoder_nested", stack, {"src": src, "src_key_padding_mask": stack_pad}, no_grad=True)
# the same with gradients: the ordinary path
run("encoder_plain", stack, {"src": src.clone(), "src_key_padding_mask": stack_pad}, grad_inputs=("src",))

model = nn.Transformer(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32)
run("transformer", model, {"src": r(S, N, E), "tgt": r(L, N, E),
                           "tgt_mask": nn.Transformer.generate_square_subsequent_mask(L),
                           "src_key_padding_mask": mpad, "memory_key_padding_mask": mpad},
    grad_inputs=("src", "tgt"))

# -- RMSNorm (Llama's norm), checked here too ------------------------------------------------------------
rms = nn.RMSNorm(E)
with torch.no_grad():
    rms.weight.copy_(1 + 0.1 * r(E))
run("rmsnorm_default_eps", rms, {"x": r(N, L, E) * 3}, grad_inputs=("x",))
rms2 = nn.RMSNorm([L, E], eps=1e-3, elementwise_affine=False)
run("rmsnorm_2d_no_affine", rms2, {"x": r(N, L, E)})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transformer_fixtures.npz")
np.savez_compressed(path, **arrays)
print("torch", torch.__version__, "->", path, os.path.getsize(path), "bytes,", len(arrays), "arrays")
