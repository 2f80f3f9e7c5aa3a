"""Edge-of-domain cases for every activation of rtx.nn.functional (±inf, huge magnitudes, the
thresholds and kinks exactly, -0.0, exp overflow points), shared by tools/make_edge_grads.py
(run once with PyTorch 2.13 to write activation_edge_grads.json) and
test_activation_edge_grads.py (rtx against it).

Each case: (function(F, lib, *tensors), inputs as (values, dtype), which inputs get gradients).
F is torch.nn.functional or rtx.nn.functional, lib is torch or rtx."""
import math

INF = math.inf
F32, F64 = "float32", "float64"

# every threshold, kink and overflow point the activations have, and the infinities
X = [-INF, -1e30, -1e4, -100.0, -89.0, -88.7, -30.0, -20.0, -6.0, -3.0, -1.0, -0.5, -1e-8, -0.0, 0.0, 1e-8,
     0.5, 1.0, 3.0, 6.0, 10.0, 20.0, 20.5, 30.0, 44.4, 88.7, 89.0, 100.0, 1e4, 1e30, INF]
XF = [v for v in X if math.isfinite(v)]
ROWS = [[-INF, 0.0, 1.0, 2.0], [1e4, -1e4, 0.0, 1.0], [100.0, 100.0, -100.0, 0.0], [-INF, -INF, 0.0, 5.0],
        [1e30, 0.0, -1e30, 3.0], [0.0, 0.0, 0.0, 0.0]]


def _pw(fn, xs=X, dtype=F32):
    return (lambda F, lib, x: fn(F, x), [(xs, dtype)], [0])


CASES = {
    "relu": _pw(lambda F, x: F.relu(x)),
    "relu6": _pw(lambda F, x: F.relu6(x)),
    "leaky_relu": _pw(lambda F, x: F.leaky_relu(x, 0.1)),
    "elu": _pw(lambda F, x: F.elu(x, 1.5)),
    "selu": _pw(lambda F, x: F.selu(x)),
    "celu": _pw(lambda F, x: F.celu(x, 0.5)),
    "gelu": _pw(lambda F, x: F.gelu(x)),
    "gelu_tanh": _pw(lambda F, x: F.gelu(x, approximate="tanh")),
    "silu": _pw(lambda F, x: F.silu(x)),
    "mish": _pw(lambda F, x: F.mish(x)),
    "hardswish": _pw(lambda F, x: F.hardswish(x)),
    "hardsigmoid": _pw(lambda F, x: F.hardsigmoid(x)),
    "hardtanh": _pw(lambda F, x: F.hardtanh(x, -1.0, 1.0)),
    "softplus": _pw(lambda F, x: F.softplus(x)),
    "softplus_beta": _pw(lambda F, x: F.softplus(x, beta=2.0, threshold=10.0)),
    "softsign": _pw(lambda F, x: F.softsign(x)),
    "tanh": _pw(lambda F, x: F.tanh(x)),
    "sigmoid": _pw(lambda F, x: F.sigmoid(x)),
    "logsigmoid": _pw(lambda F, x: F.logsigmoid(x)),
    "threshold": _pw(lambda F, x: F.threshold(x, 0.5, -2.0)),
    "tanhshrink": _pw(lambda F, x: F.tanhshrink(x)),
    "softshrink": _pw(lambda F, x: F.softshrink(x, 0.5)),
    "hardshrink": _pw(lambda F, x: F.hardshrink(x, 0.5)),
    "rrelu_eval": _pw(lambda F, x: F.rrelu(x, training=False)),
    "silu_f64": _pw(lambda F, x: F.silu(x), dtype=F64),
    "mish_f64": _pw(lambda F, x: F.mish(x), dtype=F64),
    "gelu_f64": _pw(lambda F, x: F.gelu(x), dtype=F64),
    "logsigmoid_f64": _pw(lambda F, x: F.logsigmoid(x), dtype=F64),
    "softplus_f64": _pw(lambda F, x: F.softplus(x), dtype=F64),
    "elu_f64": _pw(lambda F, x: F.elu(x), dtype=F64),
    "prelu": (lambda F, lib, x, w: F.prelu(x, w), [(XF, F32), ([0.25], F32)], [0, 1]),
    "softmax": (lambda F, lib, x: F.softmax(x, dim=-1), [(ROWS, F32)], [0]),
    "log_softmax": (lambda F, lib, x: F.log_softmax(x, dim=-1), [(ROWS, F32)], [0]),
    "softmin": (lambda F, lib, x: F.softmin(x, dim=-1), [(ROWS, F32)], [0]),
    "glu": (lambda F, lib, x: F.glu(x, dim=-1), [(ROWS, F32)], [0]),
}


def grad_output(numel):
    """A fixed upstream gradient (not all ones, so sign and scale errors show)."""
    return [(-1.0) ** i * (0.5 + 0.25 * (i % 4)) for i in range(numel)]
