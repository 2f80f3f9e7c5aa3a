"""gradcheck/gradgradcheck, detect_anomaly and gradient checkpointing."""
import numpy as np
import pytest

import rtx
from rtx.autograd import Function
from rtx.testing import assert_close
from rtx.utils.checkpoint import checkpoint


def test_gradcheck_passes_and_catches_a_wrong_backward():
    x = rtx.tensor(np.random.default_rng(0).standard_normal(4), requires_grad=True)
    assert rtx.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
    assert rtx.autograd.gradgradcheck(lambda t: t.sin() * t, (x,))

    class WrongSquare(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * t  # should be 2 * g * t

    with pytest.raises(rtx.autograd.GradcheckError, match="Jacobian mismatch"):
        rtx.autograd.gradcheck(WrongSquare.apply, (x,))
    assert not rtx.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False)


def test_detect_anomaly_names_the_op_that_made_nan():
    x = rtx.tensor([0.0, 1.0], requires_grad=True)
    with rtx.autograd.detect_anomaly():
        y = x.sqrt() * 0  # forward finite; sqrt's backward at 0 gives inf * 0 = nan
        with pytest.raises(RuntimeError, match="SqrtBackward0.*returned nan"):
            y.sum().backward()


def _mlp_segment(x, w1, w2):
    return ((x @ w1).tanh() @ w2).tanh()


def test_checkpoint_matches_plain_gradients():
    rng = np.random.default_rng(0)
    x = rtx.tensor(rng.standard_normal((8, 16)), requires_grad=True)
    w1 = rtx.tensor(rng.standard_normal((16, 32)), requires_grad=True)
    w2 = rtx.tensor(rng.standard_normal((32, 4)), requires_grad=True)
    _mlp_segment(x, w1, w2).sum().backward()
    expected = [t.grad.clone() for t in (x, w1, w2)]
    for t in (x, w1, w2):
        t.grad = None
    out = checkpoint(_mlp_segment, x, w1, w2)
    out.sum().backward()
    for t, e in zip((x, w1, w2), expected):
        assert_close(t.grad, e)


def test_checkpoint_lowers_peak_memory():
    """Activations inside checkpointed segments are not kept: with 16 layers in 4 segments,
    peak traced memory during forward+backward falls well below the plain run's (NumPy reports
    its allocations to tracemalloc)."""
    import tracemalloc
    rng = np.random.default_rng(0)
    w = [rtx.tensor(rng.standard_normal((128, 128)).astype(np.float32) * 0.05, requires_grad=True)
         for _ in range(16)]

    def layers(chunk):
        def run(h):
            for m in chunk:
                h = (h @ m).tanh()
            return h
        return run

    def run(use_checkpoint):
        x = rtx.tensor(rng.standard_normal((1024, 128)).astype(np.float32), requires_grad=True)
        tracemalloc.start()
        tracemalloc.reset_peak()
        h = x
        for i in range(0, 16, 4):
            seg = layers(w[i:i + 4])
            h = checkpoint(seg, h) if use_checkpoint else seg(h)
        h.sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        for m in w:
            m.grad = None
        return peak

    plain, ckpt = run(False), run(True)
    assert ckpt < 0.7 * plain, (plain, ckpt)


def test_checkpoint_preserves_rng_state_for_dropout_like_segments():
    x = rtx.ones(1000, requires_grad=True)

    def noisy(t):
        return t * rtx.rand(1000, dtype=t.dtype)

    rtx.manual_seed(0)
    ref = noisy(x)
    ref.sum().backward()
    g_ref = x.grad.clone()
    x.grad = None
    rtx.manual_seed(0)
    out = checkpoint(noisy, x)
    assert_close(out, ref)
    out.sum().backward()
    assert_close(x.grad, g_ref)
