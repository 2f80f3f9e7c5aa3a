"""rtx.fx.symbolic_trace wraps the public functions of rtx and rtx.nn.functional while a trace runs
(as torch.fx patches while it traces): a wrapper records only calls that receive a Proxy, so another
thread that trains meanwhile, through those same functions, gets bit-identical results."""
import numpy as np

import rtx
import rtx.fx as fx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.testing import run_while_working


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(16, 3)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = rtx.cat([h, rtx.tanh(h)], dim=1)
        return F.log_softmax(self.fc2(h), dim=-1)


def train(steps, progress=None):
    """SGD through the same namespace functions the tracer wraps (rtx.tanh, F.mse_loss)."""
    rtx.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.Linear(16, 2))
    x = rtx.randn(32, 6)
    y = (x[:, :2] * 2 + 1).detach()
    for _ in range(steps):
        loss = F.mse_loss(model[1](rtx.tanh(model[0](x))), y)
        model.zero_grad()
        loss.backward()
        with rtx.no_grad():
            for p in model.parameters():
                p -= 0.05 * p.grad
        if progress is not None:
            progress.append(1)
    return [p.detach().numpy().copy() for p in model.parameters()], float(loss)


def test_fx_trace_while_another_thread_trains():
    alone = train(150)
    rtx.manual_seed(0)
    model = Net().eval()
    x = rtx.randn(5, 4)
    ref = fx.symbolic_trace(model)
    results, trained, overlapped = run_while_working(lambda: fx.symbolic_trace(model),
                                                     lambda progress: train(150, progress), 3)
    assert overlapped >= 1
    for gm in results:
        assert gm.code == ref.code
        np.testing.assert_array_equal(gm(x).detach().numpy(), model(x).detach().numpy())
    assert all(np.array_equal(a, b) for a, b in zip(trained[0], alone[0])) and trained[1] == alone[1]
    assert rtx.tanh.__module__ != __name__ and not hasattr(rtx.tanh, "__wrapped__")  # restored
