"""InferenceSession on rtx modules and graphs: outputs against eager rtx, plan shape, API, errors."""
import numpy as np
import pytest

import rtx
import rtx.graph
import rtx.nn as nn
from rtx.inference import InferenceSession


@pytest.mark.parametrize("name", ["bnnet", "cnn", "mlp"])
@pytest.mark.parametrize("optimize", [True, False])
def test_matches_eager_at_several_batch_sizes(name, optimize, rng, zoo):
    shape = zoo.shapes[name]
    model = zoo.make(name)
    sess = InferenceSession(model, rtx.randn(2, *shape), optimize=optimize)
    for n in (1, 3, 64, 3):
        x = rng.standard_normal((n, *shape)).astype(np.float32)
        (out,) = sess.run(None, {sess.get_inputs()[0].name: x})
        ref = zoo.eager(model, x)
        assert out.shape == ref.shape and out.dtype == ref.dtype
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_plan_is_fused(zoo):
    sess = InferenceSession(zoo.make_cnn(), rtx.randn(2, 1, 8, 8))
    counts = sess.op_counts()
    # conv+bias+relu and linear+bias+relu each one kernel; nothing left to rtx's generic ops
    assert counts == {"Conv": 2, "MaxPool": 2, "Reshape": 1, "Linear": 2}
    acts = [op.attrs.get("act") for op in sess.program.ops if op.kind in ("Conv", "Linear")]
    assert acts == ["relu", "relu", "relu", None]
    bn = InferenceSession(zoo.make_bnnet(), rtx.randn(2, 3, 12, 12))
    # BatchNorm's Mul/Add folded into the conv; only the residual add stays elementwise
    assert bn.op_counts() == {"Conv": 3, "MaxPool": 1, "Binary": 1, "Mean": 1, "Reshape": 1, "Linear": 2, "Softmax": 1}
    first = bn.program.ops[0]
    assert first.kind == "Conv" and first.attrs["act"] == "relu"


def test_graph_input_is_not_modified(rng, zoo):
    model = zoo.make_bnnet()
    g = rtx.graph.trace(model, rtx.randn(2, 3, 12, 12))
    before = repr(g)
    sess = InferenceSession(g)
    assert repr(g) == before
    x = rng.standard_normal((4, 3, 12, 12)).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], zoo.eager(model, x), rtol=1e-5, atol=1e-6)
    g.optimize()                       # a graph already optimised by rtx.graph (fusion groups marked)
    assert g.fusion_groups
    opt = InferenceSession(g, optimize=False)
    np.testing.assert_allclose(opt.run(None, {"x": x})[0], zoo.eager(model, x), rtol=1e-5, atol=1e-6)


def test_generic_ops_and_multiple_outputs(rng):
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.out = nn.Linear(16, 4)

        def forward(self, x):
            h = self.enc(x)
            return self.out(h).mean(1), h.abs().sum(-1)

    rtx.manual_seed(3)
    model = Two().eval()
    sess = InferenceSession(model, rtx.randn(2, 5, 16), output_names=["logits", "peak"])
    assert [o.name for o in sess.get_outputs()] == ["logits", "peak"]
    assert any(k.startswith("Generic:") for k in sess.op_counts())
    x = rng.standard_normal((3, 5, 16)).astype(np.float32)
    with rtx.no_grad():
        ref = [t.numpy() for t in model(rtx.from_numpy(x))]
    out = sess.run(None, {"x": x})
    for a, b in zip(out, ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    (peak,) = sess.run(["peak"], {"x": x})
    np.testing.assert_allclose(peak, ref[1], rtol=1e-5, atol=1e-6)


def test_outputs_are_owned_by_the_caller(rng, zoo):
    sess = InferenceSession(zoo.make_mlp(), rtx.randn(2, 64))
    x1 = rng.standard_normal((4, 64)).astype(np.float32)
    x2 = rng.standard_normal((4, 64)).astype(np.float32)
    (a,) = sess.run(None, {"input": x1})
    keep = a.copy()
    sess.run(None, {"input": x2})     # same size: reuses every intermediate buffer
    np.testing.assert_array_equal(a, keep)
    x1_copy = x1.copy()
    sess.run(None, {"input": x1})
    np.testing.assert_array_equal(x1, x1_copy)   # inputs are never written


def test_weights_are_snapshotted(rng, zoo):
    model = zoo.make_mlp()
    sess = InferenceSession(model, rtx.randn(2, 64))
    x = rng.standard_normal((2, 64)).astype(np.float32)
    before = sess.run(None, {"input": x})[0]
    with rtx.no_grad():
        model[0].weight.mul_(2)
    np.testing.assert_array_equal(sess.run(None, {"input": x})[0], before)


def test_io_metadata_and_stats(rng, zoo):
    sess = InferenceSession(zoo.make_cnn(), np.zeros((2, 1, 8, 8), np.float32))
    (inp,), (out,) = sess.get_inputs(), sess.get_outputs()
    assert (inp.name, inp.shape, inp.dtype) == ("x", ["batch", 1, 8, 8], np.dtype(np.float32))
    assert inp.type == "tensor(float)" and out.shape == ["batch", 10]
    assert sess.stats()["count"] == 0
    sess.warmup(batch_sizes=(1, 8))
    assert sess.stats()["count"] == 0          # warm-up is not counted
    for _ in range(20):
        sess.run(None, {"x": rng.standard_normal((1, 1, 8, 8)).astype(np.float32)})
    s = sess.stats()
    assert s["count"] == 20 and 0 < s["p50_ms"] <= s["p90_ms"] <= s["p99_ms"] <= s["max_ms"]
    assert s["mean_ms"] > 0
    sess.reset_stats()
    assert sess.stats()["count"] == 0


def test_feed_errors_name_expected_and_found(zoo):
    sess = InferenceSession(zoo.make_cnn(), rtx.randn(2, 1, 8, 8))
    x = np.zeros((2, 1, 8, 8), np.float32)
    with pytest.raises(ValueError, match=r"unknown input name 'image'.*\['x'\]"):
        sess.run(None, {"image": x})
    with pytest.raises(ValueError, match=r"missing input"):
        sess.run(None, {})
    with pytest.raises(ValueError, match=r"dtype float64, expected float32"):
        sess.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(ValueError, match=r"rank 3 .*expected rank 4"):
        sess.run(None, {"x": x[0]})
    with pytest.raises(ValueError, match=r"shape \[2, 1, 7, 8\], expected \['batch', 1, 8, 8\] \(dim 2 must be 8\)"):
        sess.run(None, {"x": np.zeros((2, 1, 7, 8), np.float32)})
    with pytest.raises(ValueError, match=r"unknown output name 'probs'.*\['output'\]"):
        sess.run(["probs"], {"x": x})
    with pytest.raises(TypeError, match="feed must be a dict"):
        sess.run(None, [x])
    with pytest.raises(ValueError, match="must be an array"):
        sess.run(None, {"x": object()})
    with pytest.raises(TypeError, match="example_inputs"):
        InferenceSession(zoo.make_cnn())
    with pytest.raises(TypeError, match="got int"):
        InferenceSession(3)
    with pytest.raises(ValueError, match="device"):
        InferenceSession(zoo.make_cnn(), rtx.randn(1, 1, 8, 8), device="tpu")


def test_symbolic_sizes_must_agree(rng):
    class Pair(nn.Module):
        def forward(self, a, b):
            return a * 2 + b

    sess = InferenceSession(Pair(), (rtx.randn(2, 3), rtx.randn(2, 3)))
    a = rng.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"a": a, "b": a})[0], a * 3, rtol=1e-6)
    with pytest.raises(ValueError, match=r"dynamic size 'batch' is 4 in input 'a'"):
        sess.run(None, {"a": a, "b": a[:2]})


def test_lists_and_tensors_are_accepted(zoo):
    sess = InferenceSession(zoo.make_mlp(), rtx.randn(2, 64))
    x = np.ones((1, 64), np.float32)
    ref = sess.run(None, {"input": x})[0]
    np.testing.assert_array_equal(sess.run(None, {"input": x.tolist()})[0], ref)
    np.testing.assert_array_equal(sess.run(None, {"input": rtx.from_numpy(x)})[0], ref)
