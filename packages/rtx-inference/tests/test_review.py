"""Regression tests from the review: empty batches, old-opset softmax, models beyond the zoo
(GELU/LayerNorm/softmax MLP, strided CNN with BatchNorm and average pooling), NaN inputs."""
import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.inference import InferenceSession

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


class StridedCNN(nn.Module):
    """Stride-2 conv + BatchNorm, a residual conv, a 2x2 average pool (not global), a Linear."""

    def __init__(self):
        super().__init__()
        self.c1, self.bn1 = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8)
        self.c2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.pool, self.fc = nn.AvgPool2d(2), nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        h = F.relu(self.bn1(self.c1(x)))
        h = F.relu(h + self.bn2(self.c2(h)))
        return self.fc(self.pool(h).flatten(1))


class NormMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.ln, self.l2, self.l3 = nn.Linear(20, 32), nn.LayerNorm(32), nn.Linear(32, 32), nn.Linear(32, 7)

    def forward(self, x):
        h = self.ln(F.gelu(self.l1(x)))
        h = h + F.gelu(self.l2(h), approximate="tanh")
        return F.softmax(self.l3(h), dim=-1)


def _stats(m):
    with rtx.no_grad():
        for bn in (m.bn1, m.bn2):
            bn.running_mean.copy_(rtx.randn(8) * 0.3)
            bn.running_var.copy_(rtx.rand(8) + 0.5)
            bn.weight.copy_(rtx.rand(8) + 0.5)
            bn.bias.copy_(rtx.randn(8) * 0.2)
    return m.eval()


@pytest.mark.parametrize("make,shape", [(lambda: _stats(StridedCNN()), (3, 16, 16)), (NormMLP, (20,))])
def test_more_models_match_eager_including_an_empty_batch(make, shape, rng):
    rtx.manual_seed(5)
    model = make().eval()
    sess = InferenceSession(model, rtx.randn(2, *shape))
    for n in (1, 3, 0, 64):     # 0 rows: a convolution used to fail reshaping its (0, O, -1) output
        x = rng.standard_normal((n, *shape)).astype(np.float32)
        if n == 3:
            x[1] = np.nan       # NaN propagates to its row only, as in eager
        (out,) = sess.run(None, {"x": x})
        with rtx.no_grad():
            ref = model(rtx.from_numpy(x)).numpy()
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
        if n == 3:
            assert np.isnan(out[1]).all() and not np.isnan(out[[0, 2]]).any()


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -2])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_axes_and_opsets_match_onnxruntime(op, axis, opset, rng):
    # before opset 13, Softmax normalises over every axis from `axis` on (default 1); it used to run
    # through rtx.onnx's op, which failed on an empty batch
    kw = {} if axis is None else {"axis": axis}
    g = helper.make_graph([helper.make_node(op, ["x"], ["z"], **kw)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    sess = InferenceSession(m)
    assert sess.op_counts() == {"Softmax": 1}
    ref_sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (2, 0):
        x = rng.standard_normal((n, 3, 4)).astype(np.float32)
        (ours,), (ref,) = sess.run(None, {"x": x}), ref_sess.run(None, {"x": x})
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def _dynamic_model():
    """y = relu(x) + softmax(x, -1), z = x.sum(1), with both dims of x dynamic (N, T)."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Softmax", ["x"], ["s"], axis=-1),
                           helper.make_node("Add", ["r", "s"], ["y"]),
                           helper.make_node("ReduceSum", ["x"], ["z"], axes=[1], keepdims=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "T"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T"]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    return m


def _numpy_reference(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return [np.maximum(x, 0) + e / e.sum(-1, keepdims=True), x.sum(1)]


@pytest.mark.parametrize("max_batch_size, max_wait_ms", [(8, 2.0), (1, 0.0), (32, 0.0), (5, 20.0)])
def test_batcher_with_concurrent_submitters_of_mixed_shapes_and_dtypes(rng, max_batch_size, max_wait_ms):
    from concurrent.futures import ThreadPoolExecutor

    from rtx.inference import DynamicBatcher
    sess = InferenceSession(_dynamic_model())
    reqs = [rng.standard_normal((int(rng.integers(1, 7)), int(rng.choice([3, 5, 7])))).astype(
        np.float64 if i % 37 == 0 else np.float32) for i in range(300)]
    with DynamicBatcher(sess, max_batch_size=max_batch_size, max_wait_ms=max_wait_ms) as b:
        with ThreadPoolExecutor(16) as pool:
            futs = list(pool.map(lambda x: b.submit({"x": x}), reqs))
        for x, f in zip(reqs, futs):
            if x.dtype == np.float64:   # a wrong dtype fails its own request only
                with pytest.raises(ValueError, match="dtype float64"):
                    f.result(timeout=30)
                continue
            for ours, ref in zip(f.result(timeout=30), _numpy_reference(x)):
                assert ours.shape == ref.shape
                np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
        s = b.stats()
    assert s["requests"] == len(reqs) and s["queue_depth"] == 0
    # only requests larger than the limit run above it (alone)
    assert max(s["batch_sizes"]) <= max(max_batch_size, max(len(x) for x in reqs))
    if max_batch_size == 32:
        assert s["mean_batch_size"] > 2


def test_batcher_close_does_not_wait_out_max_wait(rng):
    import time

    from rtx.inference import DynamicBatcher
    sess = InferenceSession(_dynamic_model())
    b = DynamicBatcher(sess, max_batch_size=64, max_wait_ms=60_000)   # the worker waits for more rows
    x = rng.standard_normal((2, 3)).astype(np.float32)
    fut = b.submit({"x": x})
    time.sleep(0.05)
    t0 = time.perf_counter()
    b.close()
    assert time.perf_counter() - t0 < 5 and not b._worker.is_alive()
    np.testing.assert_allclose(fut.result(timeout=1)[1], x.sum(1), rtol=1e-6)
