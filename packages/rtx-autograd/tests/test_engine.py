"""The backward engine: accumulation, retain_graph, create_graph, grad(), hooks, errors.
rtx-autograd never imports the tensor, so these tests drive it through `import rtx`."""
import numpy as np
import pytest

import rtx
from rtx.testing import assert_close


def leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rtx.tensor(rng.standard_normal(shape), requires_grad=True)


def test_gradient_accumulates_into_leaves():
    x = leaf(3)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert_close(x.grad, np.full(3, 5.0))


def test_shared_gradient_is_not_aliased_between_leaves():
    a, b = leaf(3), leaf(3, seed=1)
    (a + b).sum().backward()
    a.grad.add_(1)
    assert_close(b.grad, np.ones(3))


def test_diamond_graph_sums_paths():
    x = leaf(4)
    y = x * 2
    z = y * y + y  # dz/dx = (2y + 1) * 2
    z.sum().backward()
    assert_close(x.grad, (2 * (2 * x.detach().numpy()) + 1) * 2)


def test_backward_twice_without_retain_graph_raises():
    x = leaf(3)
    y = (x.exp()).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = leaf(3)
    y = (x.exp()).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, 2 * np.exp(x.detach().numpy()))


def test_non_scalar_backward_needs_gradient():
    x = leaf(3)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(rtx.tensor([1.0, 2.0, 3.0], dtype=rtx.float64))
    assert_close(x.grad, np.array([2.0, 4.0, 6.0]))


def test_grad_does_not_touch_dot_grad_and_supports_higher_order():
    x = leaf(5)
    y = (x ** 3).sum()
    (g,) = rtx.autograd.grad(y, x, create_graph=True)
    assert x.grad is None
    assert_close(g, 3 * x.detach().numpy() ** 2)
    (h,) = rtx.autograd.grad(g.sum(), x, create_graph=True)
    assert_close(h, 6 * x.detach().numpy())
    (t,) = rtx.autograd.grad(h.sum(), x)
    assert_close(t, np.full(5, 6.0))


def test_grad_of_intermediate_and_allow_unused():
    x, z = leaf(3), leaf(3, seed=2)
    y = x * 2
    out = (y * y).sum()
    gy, gz = rtx.autograd.grad(out, [y, z], allow_unused=True, retain_graph=True)
    assert_close(gy, 2 * y.detach().numpy())
    assert gz is None
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        rtx.autograd.grad(out, [z])


def test_grad_outputs_weight_the_vjp():
    x = leaf(3)
    y = x * x
    v = rtx.tensor([1.0, 0.0, 2.0], dtype=rtx.float64)
    (g,) = rtx.autograd.grad(y, x, grad_outputs=v)
    assert_close(g, 2 * x.detach().numpy() * v.numpy())


def test_backward_inputs_restricts_accumulation():
    a, b = leaf(2), leaf(2, seed=3)
    (a * b).sum().backward(inputs=[a])
    assert a.grad is not None and b.grad is None


def test_tensor_hooks_modify_gradients():
    x = leaf(3)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    seen = []
    x.register_hook(lambda g: seen.append(g.clone()))
    y.sum().backward()
    assert_close(x.grad, np.full(3, 20.0))
    assert_close(seen[0], np.full(3, 20.0))


def test_hook_handle_removes():
    x = leaf(3)
    h = x.register_hook(lambda g: g * 0)
    h.remove()
    (x * 1).sum().backward()
    assert_close(x.grad, np.ones(3))


def test_retain_grad_keeps_intermediate_gradient():
    x = leaf(3)
    y = x * 3
    y.retain_grad()
    (y * y).sum().backward()
    assert_close(y.grad, 2 * y.detach().numpy())
    assert y.retains_grad


def test_no_graph_under_no_grad_and_inference_mode():
    x = leaf(3)
    with rtx.no_grad():
        y = x * 2
    assert y.grad_fn is None and not y.requires_grad
    with rtx.inference_mode():
        z = x * 2
    assert z.grad_fn is None and z.is_inference
    with rtx.set_grad_enabled(False):
        assert not rtx.is_grad_enabled()
    assert rtx.is_grad_enabled()

    @rtx.no_grad()
    def f(t):
        return t * 2

    assert f(x).grad_fn is None
    with rtx.no_grad():
        with rtx.enable_grad():
            assert (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    import threading
    x = leaf(2)
    result = {}

    def worker():
        result["requires_grad"] = (x * 2).requires_grad

    with rtx.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert result["requires_grad"] is True


def test_inplace_on_leaf_that_requires_grad_raises():
    x = leaf(3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with rtx.no_grad():
        x.add_(1)  # allowed, as in PyTorch (optimizer updates)


def test_modifying_saved_tensor_raises_at_backward():
    x = leaf(3)
    y = x * 1
    y.exp()  # a second user of y
    w = y * y    # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()
    z2 = x.exp()
    z2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z2.sum().backward()


def test_inplace_on_non_leaf_records_history():
    x = leaf(3)
    y = x * 2
    y.mul_(3)
    y.sum().backward()
    assert_close(x.grad, np.full(3, 6.0))


def test_detach_shares_memory_and_version():
    x = leaf(3)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    with rtx.no_grad():
        x.mul_(2)
    assert_close(d, x.detach())
    assert d._version == x._version


def test_grad_fn_names_and_next_functions():
    x = leaf(2)
    y = (x * 2).sum()
    assert y.grad_fn.name() == "SumBackward0"
    (mul_fn, _), = y.grad_fn.next_functions
    assert mul_fn.name() == "MulBackward0"
    assert mul_fn.next_functions[0][0].name() == "AccumulateGrad"
    assert "grad_fn=<SumBackward0>" in repr(y)


def test_leaf_gradient_dtype_follows_leaf():
    x = rtx.ones(3, requires_grad=True)  # float32
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == rtx.float32
    assert_close(x.grad, np.full(3, 2.0, dtype=np.float32))


def test_requires_grad_only_for_float():
    with pytest.raises(RuntimeError, match="floating point"):
        rtx.tensor([1, 2]).requires_grad_()


def test_a_leafs_grad_never_aliases_the_callers_gradient():
    # x.backward(g) on a leaf: .grad is a copy (as torch's), so accumulating into it leaves g alone
    x = rtx.zeros(3, requires_grad=True)
    g = rtx.ones(3)
    x.backward(g)
    x.backward(g)
    np.testing.assert_array_equal(g.numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2, np.float32))


def test_grads_flowing_to_two_leaves_are_separate_tensors():
    # ((a + b) * 2).sum(): add's backward hands the same fresh gradient array to both leaves (not a view,
    # which is copied anyway); each leaf must get its own .grad
    a = rtx.ones(2, requires_grad=True)
    b = rtx.ones(2, requires_grad=True)
    ((a + b) * 2).sum().backward()
    a.grad.mul_(5)
    np.testing.assert_array_equal(b.grad.numpy(), np.full(2, 2, np.float32))
    a.grad = b.grad = None
    (a + b).backward(rtx.ones(2))
    a.grad.mul_(5)
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(2, np.float32))


def test_root_gradient_is_cast_to_its_outputs_dtype_as_pytorch():
    # PyTorch's engine casts a root gradient to its output's dtype: a float32 leaf keeps a float32 .grad
    x = rtx.randn(3, requires_grad=True)
    (x * 2).backward(rtx.ones(3, dtype=rtx.float64))
    assert x.grad.dtype == rtx.float32
    x = rtx.randn(3, requires_grad=True)
    (x * 2).backward(rtx.ones(3, dtype=rtx.int64))
    assert x.grad.dtype == rtx.float32 and np.array_equal(x.grad.numpy(), np.full(3, 2, np.float32))
    (g,) = rtx.autograd.grad(x * 3, x, rtx.ones(3, dtype=rtx.float64))
    assert g.dtype == rtx.float32


def test_real_gradient_for_a_complex_output_is_refused():
    x = rtx.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="For complex Tensors, both grad_output and output are required to have "
                                           "the same dtype"):
        (x * 2).to(rtx.complex64).backward(rtx.ones(3))
