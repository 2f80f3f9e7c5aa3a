import sys
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.multiprocessing as mp
from rtx import nn

sys.path.insert(0, str(Path(__file__).parent / "mp_helpers"))
import rtx_nn_hogwild_child as child  # noqa: E402


def test_share_memory_moves_parameters_buffers_and_grads():
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    m(rtx.randn(5, 3)).sum().backward()
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    params = list(m.parameters())
    assert m.share_memory() is m
    assert [p is q for p, q in zip(params, m.parameters())] == [True] * len(params)  # optimizers keep theirs
    for k, v in m.state_dict().items():
        assert v.is_shared(), k
        np.testing.assert_array_equal(v.numpy(), before[k])
    assert all(p.grad.is_shared() for p in m.parameters())


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_hogwild_training_on_digits_with_two_processes(method):
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    train, test = order[:1400], order[1400:]
    rtx.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    model.share_memory()
    start = [p.detach().numpy().copy() for p in model.parameters()]
    xt, yt = rtx.from_numpy(x[train]), rtx.from_numpy(y[train])

    ctx = mp.get_context(method)
    procs = [ctx.Process(target=child.train, args=(rank, model, xt, yt, 8, 0.05, 1)) for rank in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(240)
    assert [p.exitcode for p in procs] == [0, 0]

    # the parent never stepped: every change to its weights was written by the two workers
    assert all(not np.allclose(s, p.detach().numpy()) for s, p in zip(start, model.parameters()))
    with rtx.no_grad():
        pred = model(rtx.from_numpy(x[test])).argmax(1).numpy()
    accuracy = (pred == y[test]).mean()
    print(f"hogwild {method}: test accuracy {accuracy:.3f}")
    assert accuracy >= 0.9, accuracy
