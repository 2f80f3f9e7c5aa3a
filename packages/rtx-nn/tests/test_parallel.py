import subprocess
import sys

import numpy as np
import pytest

import rtx
from rtx import nn
from rtx.nn.parallel import gather, parallel_apply, replicate, scatter, scatter_kwargs


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 6)
        self.norm = nn.BatchNorm1d(6)
        self.a, self.b = nn.Linear(6, 3), nn.Linear(6, 2)

    def forward(self, x, scale=1.0):
        h = self.norm(self.body(x)).relu()
        return self.a(h) * scale, {"b": self.b(h)}


def test_data_parallel_is_a_passthrough_without_a_gpu():
    if rtx.cuda.is_available():
        pytest.skip("GPU present: DataParallel moves the module")
    rtx.manual_seed(0)
    m = TwoHeads()
    dp = nn.DataParallel(m)
    assert dp.module is m and dp.device_ids == []
    assert list(dp.state_dict()) == ["module." + k for k in m.state_dict()]
    x = rtx.randn(5, 4)
    out, extra = dp(x, scale=2.0)
    ref, ref_extra = m(x, scale=2.0)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    fresh = nn.DataParallel(TwoHeads())
    fresh.load_state_dict(dp.state_dict())
    np.testing.assert_array_equal(fresh.module.a.weight.detach().numpy(), m.a.weight.detach().numpy())
    assert rtx.nn.parallel.data_parallel(m, x).__class__ is tuple


def test_scatter_replicate_apply_gather_match_one_module():
    """The multi-device path, run over two CPU "devices": values and gradients equal the module's."""
    rtx.manual_seed(0)
    m = TwoHeads().eval()  # eval: batch-norm statistics do not depend on the split
    x = rtx.randn(7, 4, requires_grad=True)
    inputs, kwargs = scatter_kwargs((x,), {"scale": 3.0}, ["cpu", "cpu"])
    assert [i[0].shape[0] for i in inputs] == [4, 3] and kwargs == ({"scale": 3.0}, {"scale": 3.0})
    replicas = replicate(m, ["cpu", "cpu"])
    assert replicas[0] is not m and replicas[0].a is not m.a
    outs = parallel_apply(replicas, inputs, kwargs)
    out, extra = gather(outs, "cpu")
    (out.sum() + (extra["b"] ** 2).sum()).backward()
    grads = [p.grad.numpy().copy() for p in m.parameters()]
    xg = x.grad.numpy().copy()

    m.zero_grad()
    x.grad = None
    ref, ref_extra = m(x, scale=3.0)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(extra["b"].detach().numpy(), ref_extra["b"].detach().numpy(), rtol=1e-6)
    (ref.sum() + (ref_extra["b"] ** 2).sum()).backward()
    for g, p in zip(grads, m.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xg, x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_scatter_leaves_non_tensors_and_gather_stacks_scalars():
    parts = scatter((rtx.arange(4.0), "tag", [rtx.ones(2, 2)]), ["cpu", "cpu"])
    assert parts[0][1] == "tag" and parts[1][0].tolist() == [2.0, 3.0] and parts[1][2][0].shape == (1, 2)
    assert gather([rtx.tensor(1.0), rtx.tensor(2.0)], "cpu").tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="replica 1"):
        parallel_apply([nn.Linear(2, 2), nn.Linear(3, 2)], [(rtx.ones(1, 2),), (rtx.ones(1, 2),)])


def test_distributed_data_parallel_comes_through_the_entry_point():
    import rtx.nn.parallel as parallel
    pytest.importorskip("rtx.distributed")
    from rtx.distributed import DistributedDataParallel
    assert parallel.DistributedDataParallel is DistributedDataParallel
    assert rtx.nn.parallel is parallel
    # rtx-nn itself never imports rtx-distributed: importing rtx.nn.parallel does not load it
    code = "import sys, rtx.nn.parallel; print('rtx.distributed' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "False", r.stderr


def test_without_rtx_distributed_the_hint_names_the_package(monkeypatch):
    import importlib.metadata

    import rtx.nn.parallel as parallel
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])
    monkeypatch.delitem(parallel.__dict__, "DistributedDataParallel", raising=False)
    with pytest.raises(AttributeError, match="pip install rtx-distributed"):
        parallel.DistributedDataParallel  # noqa: B018
