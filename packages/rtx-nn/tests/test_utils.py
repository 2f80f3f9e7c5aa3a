"""rtx.nn.utils: clip_grad_norm_ (every norm type, error_if_nonfinite, the returned norm),
get_total_norm / clip_grads_with_norm_, clip_grad_value_, parameters_to_vector /
vector_to_parameters, and the lazily imported rnn submodule."""
import math
import warnings

import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.nn import utils
from rtx.testing import assert_close

rng = np.random.default_rng(0)


def params_with_grads(*shapes, dtype=rtx.float64):
    ps = []
    for s in shapes:
        p = nn.Parameter(rtx.zeros(s, dtype=dtype))
        p.grad = rtx.tensor(rng.standard_normal(s), dtype=dtype)
        ps.append(p)
    return ps


def all_grads(ps):
    return np.concatenate([p.grad.numpy().ravel() for p in ps])


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf"), "inf"])
def test_clip_grad_norm_scales_to_max_norm(norm_type):
    ps = params_with_grads((3, 4), (5,), (2, 2, 2))
    g = all_grads(ps)
    p_ = float(norm_type)
    expected = np.abs(g).max() if math.isinf(p_) else (np.abs(g) ** p_).sum() ** (1 / p_)
    total = utils.clip_grad_norm_(ps, max_norm=0.5, norm_type=norm_type)
    assert total.ndim == 0 and total.dtype == rtx.float64
    assert total.item() == pytest.approx(expected, rel=1e-12)
    assert_close(all_grads(ps), g * 0.5 / (expected + 1e-6))


def test_clip_grad_norm_leaves_small_gradients_and_skips_missing():
    ps = params_with_grads((4,), (3,))
    ps.append(nn.Parameter(rtx.zeros(2)))  # no gradient: ignored
    g = all_grads(ps[:2])
    total = utils.clip_grad_norm_(iter(ps), max_norm=1e6)
    assert total.item() == pytest.approx(np.linalg.norm(g))
    assert_close(all_grads(ps[:2]), g)
    single = params_with_grads((3,))[0]
    utils.clip_grad_norm_(single, 1e-3)  # a single tensor is accepted
    assert np.linalg.norm(single.grad.numpy()) == pytest.approx(1e-3, rel=1e-2)


def test_clip_grad_norm_float32_and_empty():
    ps = params_with_grads((10,), dtype=rtx.float32)
    assert utils.clip_grad_norm_(ps, 1.0).dtype == rtx.float32
    assert utils.clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        utils.clip_grad_norm_((p for p in []), 1.0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_clip_grad_norm_nonfinite():
    ps = params_with_grads((3,))
    ps[0].grad[1] = float("inf")
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    total = utils.clip_grad_norm_(ps, 1.0)  # scales by the non-finite norm when allowed
    assert math.isinf(total.item())


def test_clip_grad_norm_with_a_model():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    model(rtx.randn(16, 4)).pow(2).sum().backward()
    before = np.sqrt(sum((p.grad.numpy().astype(np.float64) ** 2).sum() for p in model.parameters()))
    total = utils.clip_grad_norm_(model.parameters(), 0.25)
    assert total.item() == pytest.approx(before, rel=1e-5)
    after = np.sqrt(sum((p.grad.numpy().astype(np.float64) ** 2).sum() for p in model.parameters()))
    assert after == pytest.approx(min(before, 0.25), rel=1e-4)
    assert all(p.grad.grad_fn is None for p in model.parameters())


def test_get_total_norm_and_clip_grads_with_norm():
    ps = params_with_grads((6,), (2, 3))
    g = all_grads(ps)
    total = utils.get_total_norm([p.grad for p in ps])
    assert total.item() == pytest.approx(np.linalg.norm(g))
    utils.clip_grads_with_norm_(ps, 1.0, total)
    assert np.linalg.norm(all_grads(ps)) == pytest.approx(1.0, rel=1e-5)


def test_deprecated_clip_grad_norm():
    ps = params_with_grads((3,))
    with pytest.warns(FutureWarning, match="deprecated in favor of"):
        utils.clip_grad_norm(ps, 1.0)


def test_clip_grad_value():
    ps = params_with_grads((50,), (4, 4))
    g = all_grads(ps)
    assert utils.clip_grad_value_(ps, 0.3) is None
    assert_close(all_grads(ps), np.clip(g, -0.3, 0.3))
    utils.clip_grad_value_(ps[0], 0.1)
    assert np.abs(ps[0].grad.numpy()).max() <= 0.1


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = utils.parameters_to_vector(model.parameters())
    expected = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    assert vec.shape == (11,) and np.array_equal(vec.detach().numpy(), expected)
    assert vec.requires_grad  # differentiable: the parameters are inputs
    new = rtx.arange(11, dtype=rtx.float32)
    params = list(model.parameters())
    utils.vector_to_parameters(new, model.parameters())
    assert [p is q for p, q in zip(params, model.parameters())] == [True] * 4  # same Parameter objects
    assert model[0].weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert model[1].bias.tolist() == [10.0]
    with pytest.raises(TypeError, match="expected rtx.Tensor, but got: list"):
        utils.vector_to_parameters([1.0], model.parameters())


def test_rnn_submodule_is_lazy_and_reachable():
    import importlib.util
    assert "rnn" in utils.__all__
    if importlib.util.find_spec("rtx.nn.utils.rnn") is None:
        with pytest.raises(ModuleNotFoundError):
            _ = utils.rnn
    else:
        assert utils.rnn.__name__ == "rtx.nn.utils.rnn"
    assert nn.utils is utils
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = utils.nope


def test_no_warnings_in_normal_use():
    ps = params_with_grads((3,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        utils.clip_grad_norm_(ps, 1.0)
        utils.clip_grad_value_(ps, 1.0)
