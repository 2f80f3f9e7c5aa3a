"""rtx.autograd.functional against closed forms."""
import numpy as np

import rtx
from rtx.autograd import functional as AF
from rtx.testing import assert_close

A = np.array([[2.0, -1.0, 0.5], [0.3, 1.0, 4.0]])


def f_lin(x):
    return rtx.tensor(A) @ x


def f_cubic(x):
    return (x ** 3).sum()


def test_jacobian_of_linear_map_is_the_matrix():
    x = rtx.tensor([1.0, 2.0, 3.0], dtype=rtx.float64)
    assert_close(AF.jacobian(f_lin, x), A)


def test_jacobian_multiple_inputs_shapes():
    x = rtx.tensor(np.ones((2, 3)))
    y = rtx.tensor(np.ones(3))
    jx, jy = AF.jacobian(lambda a, b: a * b, (x, y))
    assert tuple(jx.shape) == (2, 3, 2, 3) and tuple(jy.shape) == (2, 3, 3)


def test_hessian_closed_form():
    x = rtx.tensor([1.0, -2.0, 0.5], dtype=rtx.float64)
    assert_close(AF.hessian(f_cubic, x), np.diag(6 * x.numpy()))


def test_vjp_jvp_hvp_vhp():
    x = rtx.tensor([1.0, 2.0, 3.0], dtype=rtx.float64)
    v_out = rtx.tensor([1.0, -1.0], dtype=rtx.float64)
    out, g = AF.vjp(f_lin, x, v_out)
    assert_close(out, A @ x.numpy())
    assert_close(g, v_out.numpy() @ A)
    v_in = rtx.tensor([0.5, 0.0, -1.0], dtype=rtx.float64)
    out, jv = AF.jvp(f_lin, x, v_in)
    assert_close(jv, A @ v_in.numpy())
    out, hv = AF.hvp(f_cubic, x, v_in)
    assert_close(hv, 6 * x.numpy() * v_in.numpy())
    out, vh = AF.vhp(f_cubic, x, v_in)
    assert_close(vh, 6 * x.numpy() * v_in.numpy())
    assert_close(out, (x.numpy() ** 3).sum())


def test_create_graph_allows_differentiating_the_jacobian():
    x = rtx.tensor([1.0, 2.0], dtype=rtx.float64, requires_grad=True)
    j = AF.jacobian(lambda t: t ** 3, x, create_graph=True)
    j.sum().backward()
    assert_close(x.grad, 6 * x.detach().numpy())
