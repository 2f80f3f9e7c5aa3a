"""einsum: values against numpy.einsum, gradients (through einsum itself, so double backward
too) by finite differences in float64; repeated indices, '...', size-1 broadcasting, the
list and sublist forms; PyTorch's errors."""
import numpy as np
import pytest

import rtx
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(1)


def r(*shape):
    return rng.standard_normal(shape)


def case(eq, *shapes, name=None, ref_eq=None, arrays=None):
    arrays = arrays if arrays is not None else [r(*s) for s in shapes]
    return OpCase(name or eq, lambda *xs: rtx.einsum(eq, *xs), lambda *a: np.einsum(ref_eq or eq, *a), arrays)


CASES = [
    case("ij,jk->ik", (2, 3), (3, 4), name="matmul"),
    case("bij,bjk->bik", (2, 2, 3), (2, 3, 4), name="batch_matmul"),
    case("ii", (3, 3), name="trace"),
    case("ii->i", (3, 3), name="diagonal"),
    case("i,j->ij", (3,), (4,), name="outer"),
    case("ij->ji", (2, 3), name="transpose"),
    case("ij->", (2, 3), name="sum_all"),
    case("ij->j", (2, 3), name="sum_rows"),
    case("ji", (2, 3), name="implicit_transpose"),
    case("ij,jk", (2, 3), (3, 4), name="implicit_matmul"),
    case("Ab,bC", (2, 3), (3, 4), name="implicit_upper_case"),
    case("i,i->", (4,), (4,), name="dot"),
    case("i,i", (4,), (4,), name="implicit_dot"),
    case("ij,ij->ij", (2, 3), (2, 3), name="hadamard"),
    case("...ij,...jk->...ik", (2, 3, 2, 3), (3, 4), name="ellipsis_broadcast_batch"),
    case("...ij->...ji", (2, 3, 4), name="ellipsis_transpose"),
    case("i...->...", (3, 2, 2), name="ellipsis_sum_first"),
    case("...i,...i->...", (2, 1, 3), (4, 3), name="ellipsis_size1_broadcast"),
    case("b...,b...", (2, 3), (2, 3), name="ellipsis_implicit"),
    case("ij,jk,kl->il", (2, 3), (3, 4), (4, 2), name="three_operands"),
    case("bn,anm,bm->ba", (2, 3), (4, 3, 5), (2, 5), name="bilinear"),
    case("iij->ij", (3, 3, 2), name="diagonal_3d"),
    case("iji->j", (3, 2, 3), name="trace_split"),
    case("ii,i->i", (3, 3), (3,), name="diag_times_vector"),
    case("iii->", (2, 2, 2), name="triple_diagonal"),
    case("ij,ij->ij", (1, 3), (2, 3), name="size1_broadcast"),
    case("ij,jk->k", (2, 3), (3, 4), name="summed_only_in_one"),
    case("i,jk->ijk", (2,), (3, 4), name="outer_3d"),
    case("i->i", (3,), name="identity"),
    case("->", arrays=[np.array(2.5)], name="scalar"),
    case(",ij->ij", arrays=[np.array(2.0), r(2, 3)], name="scalar_times_matrix"),
    OpCase("list_form", lambda a, b: rtx.einsum("ij,jk->ik", [a, b]), lambda a, b: a @ b, [r(2, 3), r(3, 4)]),
    OpCase("sublist_form", lambda a, b: rtx.einsum(a, [0, 1], b, [1, 2], [0, 2]), lambda a, b: a @ b,
           [r(2, 3), r(3, 4)]),
    OpCase("sublist_implicit_ellipsis", lambda a: rtx.einsum(a, [Ellipsis, 0, 0]),
           lambda a: np.einsum("...ii->...", a), [r(2, 3, 3)]),
    OpCase("spaces", lambda a, b: rtx.einsum(" ij , jk -> ik ", a, b), lambda a, b: a @ b, [r(2, 3), r(3, 4)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_einsum(case, device):
    check_case(case, device)


def test_bfloat16_upcasts_and_keeps_dtype():
    a, b = r(3, 4), r(4, 2)
    x = rtx.tensor(a, dtype=rtx.bfloat16)
    y = rtx.tensor(b, dtype=rtx.bfloat16)
    out = rtx.einsum("ij,jk->ik", x, y)
    assert out.dtype == rtx.bfloat16
    ref = x.float().numpy() @ y.float().numpy()
    assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)
    xg = rtx.tensor(a, dtype=rtx.bfloat16, requires_grad=True)
    rtx.einsum("ij->", xg).backward()
    assert xg.grad.dtype == rtx.bfloat16 and np.all(xg.grad.float().numpy() == 1)


def test_integers():
    a = np.arange(6).reshape(2, 3)
    out = rtx.einsum("ij,ij->i", rtx.tensor(a), rtx.tensor(a))
    assert out.dtype == rtx.int64
    assert out.tolist() == np.einsum("ij,ij->i", a, a).tolist()


def test_result_does_not_alias_the_input():
    x = rtx.tensor(r(2, 3))
    y = rtx.einsum("ij->ji", x)
    y.zero_()
    assert np.abs(x.numpy()).sum() > 0


def test_gradient_accumulates_for_an_operand_used_twice():
    a = r(3, 3)
    x = rtx.tensor(a, requires_grad=True)
    rtx.einsum("ij,jk->", x, x).backward()
    # d/dX sum(X @ X) = 1 X^T + X^T 1 with 1 the all-ones matrix
    ones = np.ones((3, 3))
    assert_close(x.grad, ones @ a.T + a.T @ ones, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eq, shapes, match", [
    ("ij,jk->ik", [(2, 3)], "fewer operands were provided than specified"),
    ("ij->ij", [(2, 3), (3,)], "more operands were provided than specified"),
    ("ijk->i", [(2, 3)], r"number of subscripts in the equation \(3\) does not match the number of dimensions \(2\) "
                         "for operand 0 and no ellipsis"),
    ("ij->k", [(2, 3)], "output subscript k does not appear in the equation for any input operand"),
    ("ij->ii", [(2, 3)], "output subscript i appears more than once in the output"),
    ("i1->i", [(2, 3)], "invalid subscript"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript j has size 4 for operand 1 which does not broadcast with previously "
                                    "seen size 3"),
    ("ii->i", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"),
    ("...i...->i", [(2, 3)], "more than one ellipsis"),
    ("ij->i->j", [(2, 3)], "more than one '->'"),
    ("...ijk->i", [(2, 3)], r"the number of subscripts in the equation \(3\) is more than the number of dimensions"),
])
def test_errors(eq, shapes, match):
    with pytest.raises(RuntimeError, match=match):
        rtx.einsum(eq, *[rtx.tensor(r(*s)) for s in shapes])


def test_type_errors():
    with pytest.raises(TypeError, match="operand 1 must be a Tensor"):
        rtx.einsum("i,i", rtx.tensor(r(2)), np.ones(2))
    with pytest.raises(RuntimeError, match="same dtype"):
        rtx.einsum("i,i", rtx.tensor(r(2)), rtx.tensor(r(2), dtype=rtx.float32))
    with pytest.raises(ValueError, match="not within the valid range"):
        rtx.einsum(rtx.tensor(r(2)), [60])
