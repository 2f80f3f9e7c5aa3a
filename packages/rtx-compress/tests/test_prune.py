"""Pruning masks against NumPy argsort / norms, PyTorch's weight_orig / weight_mask layout."""
import numpy as np
import pytest

import rtx
import rtx.compress.prune as prune
import rtx.nn as nn


def _np(t):
    return t.detach().numpy()


def test_l1_unstructured_mask_matches_argsort():
    rtx.manual_seed(0)
    lin = nn.Linear(10, 6)
    w = _np(lin.weight).copy()
    prune.l1_unstructured(lin, "weight", amount=0.3)
    k = round(0.3 * w.size)
    expected = np.ones(w.size, np.float32)
    expected[np.argsort(np.abs(w).ravel())[:k]] = 0
    np.testing.assert_array_equal(lin.weight_mask.numpy().ravel(), expected)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
    assert "weight_mask" in dict(lin.named_buffers())
    np.testing.assert_array_equal(_np(lin.weight), w * expected.reshape(w.shape))
    assert prune.sparsity(lin) == pytest.approx(k / w.size)
    assert prune.is_pruned(lin)


def test_mask_is_applied_on_every_forward_and_grad_flows_to_orig():
    rtx.manual_seed(1)
    lin = nn.Linear(4, 3)
    prune.l1_unstructured(lin, "weight", amount=5)
    with rtx.no_grad():
        lin.weight_orig.add_(1.0)             # training moves weight_orig; the mask stays
    x = rtx.randn(2, 4)
    y = lin(x)
    mask = lin.weight_mask.numpy()
    np.testing.assert_allclose(_np(y), _np(x) @ (_np(lin.weight_orig) * mask).T + _np(lin.bias), rtol=1e-5)
    y.sum().backward()
    np.testing.assert_allclose(lin.weight_orig.grad.numpy(), np.ones((3, 1)) @ _np(x).sum(0, keepdims=True) * mask,
                               rtol=1e-5)


def test_pruning_twice_prunes_the_remaining_fraction():
    rtx.manual_seed(2)
    lin = nn.Linear(10, 10)
    w = np.abs(_np(lin.weight)).ravel()
    prune.l1_unstructured(lin, "weight", amount=0.5)
    prune.l1_unstructured(lin, "weight", amount=0.5)     # half of the 50 left: 75% in all
    expected = np.ones(100, np.float32)
    expected[np.argsort(w)[:75]] = 0
    np.testing.assert_array_equal(lin.weight_mask.numpy().ravel(), expected)
    assert len([h for h in lin._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]) == 1


def test_ln_structured_prunes_channels_by_norm():
    rtx.manual_seed(3)
    conv = nn.Conv2d(3, 8, 3)
    w = _np(conv.weight).copy()
    prune.ln_structured(conv, "weight", amount=0.5, n=1, dim=0)
    norms = np.abs(w).reshape(8, -1).sum(1)
    dead = np.argsort(norms)[:4]
    mask = conv.weight_mask.numpy()
    assert set(np.flatnonzero(mask.reshape(8, -1).max(1) == 0)) == set(dead.tolist())
    assert mask.reshape(8, -1).min(1).tolist() == mask.reshape(8, -1).max(1).tolist()   # whole channels
    # dim=1 (input channels), L2
    lin = nn.Linear(6, 4)
    wl = _np(lin.weight).copy()
    prune.ln_structured(lin, "weight", amount=2, n=2, dim=1)
    cols = np.argsort(np.linalg.norm(wl, axis=0))[:2]
    assert set(np.flatnonzero(lin.weight_mask.numpy().max(0) == 0)) == set(cols.tolist())


def test_global_unstructured_matches_argsort_over_all_layers():
    rtx.manual_seed(4)
    model = nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3))
    ws = [_np(model[0].weight).copy(), _np(model[2].weight).copy()]
    prune.global_unstructured([(model[0], "weight"), (model[2], "weight")], pruning_method=prune.L1Unstructured,
                              amount=0.4)
    allw = np.abs(np.concatenate([w.ravel() for w in ws]))
    threshold_idx = np.argsort(allw)[:round(0.4 * allw.size)]
    expected = np.ones(allw.size, np.float32)
    expected[threshold_idx] = 0
    got = np.concatenate([model[0].weight_mask.numpy().ravel(), model[2].weight_mask.numpy().ravel()])
    np.testing.assert_array_equal(got, expected)


def test_remove_makes_pruning_permanent(tmp_path):
    rtx.manual_seed(5)
    lin = nn.Linear(5, 5)
    prune.random_unstructured(lin, "weight", amount=0.4)
    pruned = _np(lin.weight).copy()
    prune.remove(lin, "weight")
    assert isinstance(lin.weight, nn.Parameter) and set(lin.state_dict()) == {"weight", "bias"}
    np.testing.assert_array_equal(_np(lin.weight), pruned)
    assert prune.sparsity(lin) == pytest.approx(0.4)
    assert not prune.is_pruned(lin)
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(lin, "weight")


def test_pruned_state_dict_roundtrip(tmp_path):
    rtx.manual_seed(6)
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    prune.l1_unstructured(a, "weight", 0.5)
    prune.identity(b, "weight")
    rtx.save(a.state_dict(), tmp_path / "p.safetensors")
    b.load_state_dict(rtx.load(tmp_path / "p.safetensors"))
    x = rtx.randn(3, 4)
    np.testing.assert_allclose(_np(b(x)), _np(a(x)), rtol=1e-6)


def test_heads_structured():
    rtx.manual_seed(7)
    mha = nn.MultiheadAttention(8, 4, batch_first=True)
    w = _np(mha.in_proj_weight).copy()
    prune.heads_structured(mha, amount=2)
    d = 2
    heads = [np.concatenate([w[p * 8 + h * d:p * 8 + (h + 1) * d] for p in range(3)]) for h in range(4)]
    dead = set(np.argsort([np.linalg.norm(h) for h in heads])[:2].tolist())
    rows = mha.in_proj_weight_mask.numpy().max(1)
    for h in range(4):
        for p in range(3):
            assert rows[p * 8 + h * d:p * 8 + (h + 1) * d].tolist() == [0.0 if h in dead else 1.0] * d
    np.testing.assert_array_equal(mha.in_proj_bias_mask.numpy(), rows)
    x = rtx.randn(2, 5, 8)
    out, _ = mha(x, x, x)
    assert out.shape == (2, 5, 8)
    with pytest.raises(TypeError, match="MultiheadAttention"):
        prune.heads_structured(nn.Linear(3, 3), 1)


def test_gradual_pruner_follows_the_cubic_schedule():
    rtx.manual_seed(8)
    lin = nn.Linear(20, 20)
    pruner = prune.GradualPruner([(lin, "weight")], final_sparsity=0.8, total_steps=10)
    seen = []
    for t in range(1, 13):
        pruner.step()
        expected = 0.8 + (0.0 - 0.8) * (1 - min(t, 10) / 10) ** 3
        assert prune.sparsity(lin) == pytest.approx(round(expected * 400) / 400)
        seen.append(lin.weight_mask.numpy().copy())
    for before, after in zip(seen, seen[1:]):
        assert np.all(after <= before)          # a pruned entry stays pruned
    structured = nn.Linear(6, 10)
    p2 = prune.GradualPruner([(structured, "weight")], 0.5, total_steps=2, method="ln_structured", dim=0)
    p2.step()
    p2.step()
    assert (structured.weight_mask.numpy().max(1) == 0).sum() == 5


def test_amount_errors():
    lin = nn.Linear(3, 3)
    with pytest.raises(ValueError, match="amount=1.5"):
        prune.l1_unstructured(lin, "weight", 1.5)
    with pytest.raises(ValueError, match="smaller than the number of parameters"):
        prune.l1_unstructured(lin, "weight", 10)
    with pytest.raises(ValueError, match="no parameter named 'kernel'"):
        prune.l1_unstructured(nn.Linear(3, 3), "kernel", 0.1)


def test_gradual_head_pruning():
    rtx.manual_seed(9)
    mha = nn.MultiheadAttention(16, 8)
    pruner = prune.GradualPruner([(mha, "in_proj_weight")], final_sparsity=0.5, total_steps=4, method="heads")
    dead_per_step = []
    for _ in range(4):
        pruner.step()
        rows = mha.in_proj_weight_mask.numpy().max(1).reshape(3, 8, 2)      # (q/k/v, head, row)
        dead = rows.max(axis=(0, 2)) == 0
        assert (rows.min(axis=(0, 2)) == rows.max(axis=(0, 2))).all()    # whole heads only
        np.testing.assert_array_equal(mha.in_proj_bias_mask.numpy(), rows.reshape(-1))
        dead_per_step.append(int(dead.sum()))
    expected = [round((0.5 - 0.5 * (1 - t / 4) ** 3) * 8) for t in range(1, 5)]
    assert dead_per_step == expected and dead_per_step[-1] == 4
    with pytest.raises(ValueError, match="MultiheadAttention"):
        prune.GradualPruner([(nn.Linear(2, 2), "weight")], 0.5, 4, method="heads")


def test_not_a_module_errors():
    import rtx.compress as C
    with pytest.raises(TypeError, match="nn.Module"):
        C.quantize_dynamic([1, 2])
    with pytest.raises(TypeError, match="nn.Module"):
        prune.l1_unstructured("layer", "weight", 0.5)
