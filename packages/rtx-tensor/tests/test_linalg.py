"""Linear algebra (torch.* and rtx.linalg): values against numpy.linalg, gradients by finite
differences and double backward in float64 on well-conditioned inputs built inside the op
(SPD matrices for cholesky/eigh, A + n*I for inverses); batching; PyTorch's errors."""
import math

import numpy as np
import pytest

import rtx
import rtx.linalg as LA
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


def eye(x):
    return rtx.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def spd(x):
    """Symmetric positive definite from any square x (the gradient flows through x)."""
    return x @ x.mT + x.shape[-1] * eye(x)


def well(x):
    return x + x.shape[-1] * eye(x)


def np_spd(a):
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1])


def np_well(a):
    return a + a.shape[-1] * np.eye(a.shape[-1])


def T(a):
    return np.swapaxes(a, -1, -2)


def np_matrix_norm(a, ord):
    return np.linalg.norm(a, ord, axis=(-2, -1))


def np_cdist(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == math.inf:
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


def np_expm_sym(a):
    w, v = np.linalg.eigh(a)
    return (v * np.exp(w)[..., None, :]) @ T(v)


A3, A4, B32, A234 = r(3, 3), r(4, 4), r(3, 2), r(2, 3, 4)
TALL, WIDE = r(5, 3), r(3, 5)

CASES = [
    # inverse, solve, determinants
    OpCase("inv", lambda x: LA.inv(well(x)), lambda a: np.linalg.inv(np_well(a)), [A3]),
    OpCase("inv_batched", lambda x: LA.inv(well(x)), lambda a: np.linalg.inv(np_well(a)), [r(2, 3, 3)]),
    OpCase("inverse", lambda x: rtx.inverse(well(x)), lambda a: np.linalg.inv(np_well(a)), [A3]),
    OpCase("solve_matrix", lambda a, b: LA.solve(well(a), b), lambda a, b: np.linalg.solve(np_well(a), b), [A3, B32]),
    OpCase("solve_vector", lambda a, b: LA.solve(well(a), b), lambda a, b: np.linalg.solve(np_well(a), b),
           [A3, r(3)]),
    OpCase("solve_batched_vector", lambda a, b: LA.solve(well(a), b),
           lambda a, b: np.linalg.solve(np_well(a), b[..., None])[..., 0], [r(2, 3, 3), r(2, 3)]),
    OpCase("solve_broadcast", lambda a, b: LA.solve(well(a), b), lambda a, b: np.linalg.solve(np_well(a), b),
           [A3, r(2, 3, 2)]),
    OpCase("solve_left_false", lambda a, b: LA.solve(well(a), b, left=False),
           lambda a, b: b @ np.linalg.inv(np_well(a)), [A3, r(2, 3)]),
    OpCase("det", lambda x: LA.det(x), np.linalg.det, [A3]),
    OpCase("det_batched", lambda x: rtx.det(x), np.linalg.det, [r(2, 4, 4)]),
    OpCase("slogdet", lambda x: LA.slogdet(x), lambda a: tuple(np.linalg.slogdet(a)), [A4]),
    OpCase("slogdet_batched", lambda x: rtx.slogdet(x), lambda a: tuple(np.linalg.slogdet(a)), [r(2, 3, 3)]),
    OpCase("logdet", lambda x: rtx.logdet(spd(x)), lambda a: np.linalg.slogdet(np_spd(a))[1], [A3]),
    # decompositions
    OpCase("cholesky", lambda x: LA.cholesky(spd(x)), lambda a: np.linalg.cholesky(np_spd(a)), [A3]),
    OpCase("cholesky_upper", lambda x: LA.cholesky(spd(x), upper=True), lambda a: T(np.linalg.cholesky(np_spd(a))),
           [A3]),
    OpCase("cholesky_batched", lambda x: rtx.cholesky(spd(x)), lambda a: np.linalg.cholesky(np_spd(a)), [r(2, 3, 3)]),
    OpCase("cholesky_solve", lambda x, b: rtx.cholesky_solve(b, LA.cholesky(spd(x))),
           lambda a, b: np.linalg.solve(np_spd(a), b), [A3, B32]),
    OpCase("cholesky_inverse", lambda x: rtx.cholesky_inverse(LA.cholesky(spd(x))),
           lambda a: np.linalg.inv(np_spd(a)), [A3]),
    # eigenvectors and singular vectors only through sign-invariant functions of them
    OpCase("eigh", lambda x: (lambda w, v: (w, v * v))(*LA.eigh(spd(x))),
           lambda a: (lambda w, v: (w, v * v))(*np.linalg.eigh(np_spd(a))), [A3]),
    OpCase("eigh_upper_batched", lambda x: (lambda w, v: (w, v * v))(*LA.eigh(spd(x), UPLO="U")),
           lambda a: (lambda w, v: (w, v * v))(*np.linalg.eigh(np_spd(a), UPLO="U")), [r(2, 3, 3)]),
    OpCase("eigvalsh", lambda x: LA.eigvalsh(spd(x)), lambda a: np.linalg.eigvalsh(np_spd(a)), [A4]),
    OpCase("svd_tall", lambda x: (lambda u, s, vh: (s, u * u, vh * vh))(*LA.svd(x, full_matrices=False)),
           lambda a: (lambda u, s, vh: (s, u * u, vh * vh))(*np.linalg.svd(a, full_matrices=False)), [r(4, 3)]),
    OpCase("svd_wide_batched", lambda x: (lambda u, s, vh: (s, u * u, vh * vh))(*LA.svd(x, full_matrices=False)),
           lambda a: (lambda u, s, vh: (s, u * u, vh * vh))(*np.linalg.svd(a, full_matrices=False)), [A234]),
    # full_matrices: the extra columns of U are a gauge (any basis of the complement): only the first k count
    OpCase("svd_full", lambda x: (lambda u, s, vh: (s, u[:, :3] * u[:, :3]))(*LA.svd(x)),
           lambda a: (lambda u, s, vh: (s, u[:, :3] ** 2))(*np.linalg.svd(a)), [r(4, 3)]),
    OpCase("svd_uvh", lambda x: (lambda u, s, vh: u @ vh)(*LA.svd(x, full_matrices=False)),
           lambda a: (lambda u, s, vh: u @ vh)(*np.linalg.svd(a, full_matrices=False)), [A3]),
    OpCase("torch_svd", lambda x: (lambda u, s, v: (s, u @ v.mT))(*rtx.svd(x)),
           lambda a: (lambda u, s, vh: (s, u @ vh))(*np.linalg.svd(a, full_matrices=False)), [r(4, 3)]),
    OpCase("svdvals", LA.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [A234]),
    OpCase("qr_tall", lambda x: tuple(LA.qr(x)), lambda a: tuple(np.linalg.qr(a)), [r(4, 3)]),
    OpCase("qr_square_batched", lambda x: tuple(LA.qr(x)), lambda a: tuple(np.linalg.qr(a)), [r(2, 3, 3)]),
    OpCase("qr_wide", lambda x: tuple(LA.qr(x)), lambda a: tuple(np.linalg.qr(a)), [WIDE]),
    OpCase("qr_complete_square", lambda x: tuple(LA.qr(x, mode="complete")),
           lambda a: tuple(np.linalg.qr(a, mode="complete")), [A3]),
    OpCase("qr_r", lambda x: LA.qr(x, mode="r").R, lambda a: np.linalg.qr(a, mode="r"), [r(4, 3)], grad=False),
    OpCase("torch_qr", lambda x: tuple(rtx.qr(x)), lambda a: tuple(np.linalg.qr(a)), [r(4, 3)]),
    # rank, pseudo-inverse, least squares
    OpCase("pinv_tall", LA.pinv, np.linalg.pinv, [TALL]),
    OpCase("pinv_wide_batched", LA.pinv, np.linalg.pinv, [r(2, 3, 5)]),
    OpCase("pinv_hermitian", lambda x: LA.pinv(spd(x), hermitian=True), lambda a: np.linalg.pinv(np_spd(a)), [A3]),
    OpCase("pinverse", rtx.pinverse, np.linalg.pinv, [TALL]),
    OpCase("lstsq", lambda a, b: LA.lstsq(a, b).solution, lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
           [TALL, r(5, 2)]),
    OpCase("lstsq_vector", lambda a, b: LA.lstsq(a, b).solution, lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
           [TALL, r(5)]),
    OpCase("matrix_rank", LA.matrix_rank, np.linalg.matrix_rank, [r(4, 2) @ r(2, 5)], grad=False),
    OpCase("matrix_rank_batched", LA.matrix_rank, np.linalg.matrix_rank, [r(3, 4, 4)], grad=False),
    # norms
    OpCase("vector_norm", LA.vector_norm, lambda a: np.linalg.norm(a.ravel()), [A234]),
    OpCase("vector_norm_dim", lambda x: LA.vector_norm(x, dim=-1), lambda a: np.linalg.norm(a, axis=-1), [A234]),
    OpCase("vector_norm_dims_keepdim", lambda x: LA.vector_norm(x, 3, dim=(0, 2), keepdim=True),
           lambda a: (np.abs(a) ** 3).sum((0, 2), keepdims=True) ** (1 / 3), [A234]),
    OpCase("vector_norm_1", lambda x: LA.vector_norm(x, 1, dim=1), lambda a: np.abs(a).sum(1), [A234]),
    OpCase("vector_norm_half", lambda x: LA.vector_norm(x, 0.5), lambda a: (np.abs(a) ** 0.5).sum() ** 2, [A3]),
    OpCase("vector_norm_inf", lambda x: LA.vector_norm(x, math.inf, dim=-1), lambda a: np.abs(a).max(-1), [A234]),
    OpCase("vector_norm_neginf", lambda x: LA.vector_norm(x, -math.inf), lambda a: np.abs(a).min(), [A234]),
    OpCase("vector_norm_0", lambda x: LA.vector_norm(x, 0, dim=0), lambda a: (a != 0).sum(0).astype(float),
           [np.array([[0.0, 1.0], [2.0, 0.0], [3.0, 0.0]])], gradgrad=False),
]
for _ord in ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]:
    CASES.append(OpCase(f"matrix_norm_{_ord}", lambda x, o=_ord: LA.matrix_norm(x, o),
                        lambda a, o=_ord: np_matrix_norm(a, o), [A234]))
CASES += [
    OpCase("matrix_norm_dims_keepdim", lambda x: LA.matrix_norm(x, 1, dim=(2, 0), keepdim=True),
           lambda a: np.linalg.norm(a.transpose(1, 2, 0), 1, axis=(-2, -1))[None, :, None], [A234]),
    OpCase("matrix_norm_nuc_keepdim", lambda x: LA.matrix_norm(x, "nuc", keepdim=True),
           lambda a: np_matrix_norm(a, "nuc")[:, None, None], [A234]),
    OpCase("norm_default", LA.norm, lambda a: np.linalg.norm(a.ravel()), [A234]),
    OpCase("norm_dim_int", lambda x: LA.norm(x, dim=1), lambda a: np.linalg.norm(a, axis=1), [A234]),
    OpCase("norm_matrix_ord", lambda x: LA.norm(x, 2), lambda a: np.linalg.norm(a, 2), [A3]),
    OpCase("norm_vector_ord", lambda x: LA.norm(x, 1), lambda a: np.linalg.norm(a, 1), [r(5)]),
    OpCase("norm_matrix_dims", lambda x: LA.norm(x, "fro", dim=(0, 1)), lambda a: np.linalg.norm(a, axis=(0, 1)),
           [A234]),
    OpCase("cond", LA.cond, np.linalg.cond, [A3]),
    OpCase("matrix_exp", lambda x: LA.matrix_exp(x + x.mT), lambda a: np_expm_sym(a + a.T), [A3 * 2]),
    # products and the rest
    OpCase("multi_dot", lambda a, b, c, d: LA.multi_dot([a, b, c, d]),
           lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), [r(2, 5), r(5, 3), r(3, 4), r(4, 2)]),
    OpCase("multi_dot_vectors", lambda a, b, c: LA.multi_dot([a, b, c]),
           lambda a, b, c: np.linalg.multi_dot([a, b, c]), [r(3), r(3, 4), r(4)]),
    OpCase("chain_matmul", lambda a, b, c: rtx.chain_matmul(a, b, c), lambda a, b, c: a @ b @ c,
           [r(2, 3), r(3, 4), r(4, 2)]),
    OpCase("linalg_cross", lambda a, b: LA.cross(a, b), lambda a, b: np.cross(a, b), [r(4, 3), r(4, 3)]),
    OpCase("linalg_cross_broadcast", lambda a, b: LA.cross(a, b), lambda a, b: np.cross(a, b), [r(2, 4, 3), r(3)]),
    OpCase("cross_dim", lambda a, b: rtx.cross(a, b, dim=0), lambda a, b: np.cross(a, b, axis=0), [r(3, 4), r(3, 4)]),
    OpCase("linalg_diagonal", lambda x: LA.diagonal(x, offset=1), lambda a: np.diagonal(a, 1, -2, -1), [A234]),
    OpCase("vecdot", lambda a, b: LA.vecdot(a, b), lambda a, b: (a * b).sum(-1), [A234, r(3, 4)]),
    OpCase("linalg_matmul", LA.matmul, np.matmul, [A234, r(4, 2)]),
    OpCase("matrix_power_3", lambda x: LA.matrix_power(x, 3), lambda a: np.linalg.matrix_power(a, 3), [r(2, 3, 3)]),
    OpCase("matrix_power_neg", lambda x: rtx.matrix_power(well(x), -2),
           lambda a: np.linalg.matrix_power(np_well(a), -2), [A3]),
    OpCase("matrix_power_0", lambda x: rtx.matrix_power(x, 0), lambda a: np.broadcast_to(np.eye(3), a.shape),
           [r(2, 3, 3)], grad=False),
    OpCase("tensordot_int", lambda a, b: rtx.tensordot(a, b, 2), lambda a, b: np.tensordot(a, b, 2),
           [A234, r(3, 4, 5)]),
    OpCase("tensordot_lists", lambda a, b: rtx.tensordot(a, b, ([0, 2], [1, 0])),
           lambda a, b: np.tensordot(a, b, ([0, 2], [1, 0])), [A234, r(4, 2, 3)]),
    OpCase("tensordot_0", lambda a, b: rtx.tensordot(a, b, 0), lambda a, b: np.tensordot(a, b, 0), [r(2), r(3)]),
    OpCase("kron", rtx.kron, np.kron, [r(2, 3), r(3, 2)]),
    OpCase("kron_ranks", rtx.kron, np.kron, [r(2), r(2, 3)]),
    OpCase("trace", rtx.trace, np.trace, [r(3, 4)]),
    OpCase("diagflat", lambda x: rtx.diagflat(x, 1), lambda a: np.diagflat(a, 1), [r(2, 2)]),
    OpCase("cdist_2", rtx.cdist, lambda a, b: np_cdist(a, b, 2), [r(4, 3), r(5, 3)]),
    OpCase("cdist_1_batched", lambda a, b: rtx.cdist(a, b, p=1), lambda a, b: np_cdist(a, b, 1),
           [r(2, 4, 3), r(2, 5, 3)]),
    OpCase("cdist_3", lambda a, b: rtx.cdist(a, b, p=3), lambda a, b: np_cdist(a, b, 3), [r(4, 3), r(5, 3)]),
    OpCase("cdist_inf", lambda a, b: rtx.cdist(a, b, p=math.inf), lambda a, b: np_cdist(a, b, math.inf),
           [r(4, 3), r(5, 3)]),
    OpCase("cdist_mm", lambda a, b: rtx.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
           lambda a, b: np_cdist(a, b, 2), [r(4, 3), r(5, 3)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_op(case, device):
    check_case(case, device)


# ---- dtypes, shapes, special values -------------------------------------------------------------


def test_float32_results_keep_dtype():
    a = rtx.tensor(np_spd(r(3, 3)), dtype=rtx.float32)
    assert LA.inv(a).dtype == rtx.float32
    assert LA.cholesky(a).dtype == rtx.float32
    w, v = LA.eigh(a)
    assert w.dtype == v.dtype == rtx.float32
    assert LA.svd(a).S.dtype == rtx.float32
    assert LA.vector_norm(a).dtype == rtx.float32
    assert LA.matrix_rank(a).dtype == rtx.int64


def test_vector_norm_low_precision_and_dtype_arg():
    x = rtx.tensor(r(100), dtype=rtx.bfloat16)
    n = LA.vector_norm(x)
    assert n.dtype == rtx.bfloat16
    assert abs(n.item() - np.linalg.norm(x.float().numpy())) < 0.05 * n.item()
    assert LA.vector_norm(rtx.tensor([3.0, 4.0]), dtype=rtx.float64).dtype == rtx.float64
    h = rtx.tensor(r(4), dtype=rtx.float16, requires_grad=True)
    LA.vector_norm(h).backward()
    assert h.grad.dtype == rtx.float16


def test_norm_of_zero_vector_has_zero_gradient():
    x = rtx.zeros(3, dtype=rtx.float64, requires_grad=True)
    LA.vector_norm(x).backward()
    assert_close(x.grad, np.zeros(3))
    y = rtx.zeros(3, dtype=rtx.float64, requires_grad=True)
    LA.vector_norm(y, 3).backward()
    assert_close(y.grad, np.zeros(3))


def test_inf_norm_ties_share_gradient():
    x = rtx.tensor([1.0, -3.0, 3.0], dtype=rtx.float64, requires_grad=True)
    LA.vector_norm(x, math.inf).backward()
    assert_close(x.grad, [0.0, -0.5, 0.5])


def test_det_gradient_of_singular_matrix_is_the_cofactor():
    a = rtx.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=rtx.float64, requires_grad=True)
    d = LA.det(a)
    assert abs(d.item()) < 1e-12
    d.backward()
    assert_close(a.grad, [[4.0, -2.0], [-2.0, 1.0]], atol=1e-10)


def test_logdet_negative_and_zero():
    assert math.isnan(rtx.logdet(rtx.tensor([[0.0, 1.0], [1.0, 0.0]])).item())
    assert rtx.logdet(rtx.tensor([[1.0, 2.0], [2.0, 4.0]])).item() == -math.inf


def test_slogdet_named_fields():
    res = LA.slogdet(rtx.tensor([[2.0, 0.0], [0.0, -3.0]], dtype=rtx.float64))
    assert res.sign.item() == -1.0
    assert abs(res.logabsdet.item() - math.log(6.0)) < 1e-12
    assert type(res).__name__ == "linalg_slogdet"


def test_named_results():
    a = rtx.tensor(np_spd(r(3, 3)))
    assert LA.eigh(a).eigenvalues.shape == (3,)
    assert LA.svd(a).Vh.shape == (3, 3)
    assert LA.qr(a).R.shape == (3, 3)
    assert rtx.svd(a).V.shape == (3, 3)
    res = LA.lstsq(rtx.tensor(TALL), rtx.tensor(r(5, 2)), driver="gelsd")
    assert res.rank.item() == 3 and res.singular_values.shape == (3,)
    assert res.residuals.shape == (2,)
    assert LA.lstsq(rtx.tensor(TALL), rtx.tensor(r(5, 2))).residuals.shape == (0,)  # gelsy: none


def test_lstsq_residuals_match_numpy():
    a, b = TALL, r(5, 2)
    res = LA.lstsq(rtx.tensor(a), rtx.tensor(b), driver="gelsd")
    assert_close(res.residuals, np.linalg.lstsq(a, b, rcond=None)[1], rtol=1e-6, atol=1e-9)


def test_svd_full_matrices_shapes_and_reconstruction():
    a = r(2, 5, 3)
    U, S, Vh = LA.svd(rtx.tensor(a))
    assert U.shape == (2, 5, 5) and S.shape == (2, 3) and Vh.shape == (2, 3, 3)
    rec = (U[..., :3] * S.unsqueeze(-2)) @ Vh
    assert_close(rec, a, atol=1e-12)


def test_qr_complete_tall_shapes_and_no_gradient():
    a = rtx.tensor(r(5, 3), requires_grad=True)
    Q, R = LA.qr(a, mode="complete")
    assert Q.shape == (5, 5) and R.shape == (5, 3)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        Q.sum().backward()
    Q2, R2 = LA.qr(a, mode="r")
    assert Q2.shape == (0,)
    with pytest.raises(RuntimeError, match="mode='r'"):
        R2.sum().backward()


def test_inv_ex_and_cholesky_ex_report_info():
    a = rtx.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 2.0]]])
    inv, info = LA.inv_ex(a)
    assert info.tolist() == [2, 0] and info.dtype == rtx.int32
    assert np.isnan(inv[0].numpy()).all()
    assert_close(inv[1], np.eye(2) / 2)
    L, info = LA.cholesky_ex(rtx.tensor([[1.0, 2.0], [2.0, 1.0]]))
    assert info.item() == 2
    with pytest.raises(LA.LinAlgError):
        LA.inv_ex(a, check_errors=True)


def test_pinv_rank_deficient():
    a = r(4, 2) @ r(2, 5)
    assert_close(LA.pinv(rtx.tensor(a)), np.linalg.pinv(a), atol=1e-10)
    assert LA.matrix_rank(rtx.tensor(a)).item() == 2
    assert LA.matrix_rank(rtx.tensor(a), atol=1e3).item() == 0
    assert LA.matrix_rank(rtx.tensor(np_spd(r(3, 3))), hermitian=True).item() == 3


def test_cdist_mm_path_for_many_rows_matches_the_differences():
    a, b = r(30, 4), r(27, 4)
    d = rtx.cdist(rtx.tensor(a), rtx.tensor(b))
    assert_close(d, np_cdist(a, b, 2), rtol=1e-9, atol=1e-9)
    d0 = rtx.cdist(rtx.tensor(a), rtx.tensor(b), compute_mode="donot_use_mm_for_euclid_dist")
    assert_close(d0, np_cdist(a, b, 2), rtol=1e-12, atol=1e-12)


def test_methods_attached():
    a = rtx.tensor(np_well(r(3, 3)))
    assert_close(a.inverse(), np.linalg.inv(a.numpy()))
    assert_close(a.det(), np.linalg.det(a.numpy()))
    assert_close(a.trace(), np.trace(a.numpy()))
    assert_close(a.matrix_power(2), a.numpy() @ a.numpy())
    assert_close(rtx.tensor(r(3)).cross(rtx.tensor(r(3)), dim=0).shape, (3,))


def test_matmul_bfloat16_keeps_dtype_and_inner_nd():
    a = rtx.tensor(r(3, 4), dtype=rtx.bfloat16)
    assert (a @ a.mT).dtype == rtx.bfloat16
    x, y = r(2, 3, 4), r(5, 4)
    assert_close(rtx.inner(rtx.tensor(x), rtx.tensor(y)), np.inner(x, y), rtol=1e-12, atol=1e-12)
    assert_close(rtx.inner(rtx.tensor(2.0), rtx.tensor(x)), 2 * x)
    assert_close(rtx.vdot(rtx.tensor(r(3)), rtx.tensor(np.ones(3))).shape, ())


def test_double_backward_of_inverse_matches_the_closed_form():
    # f(x) = sum(inv(A + x I)): f'(x) = -sum(inv^2), f''(x) = 2 sum(inv^3)
    a = 0.3 * r(3, 3) + 3 * np.eye(3)
    t = rtx.tensor(0.3, dtype=rtx.float64, requires_grad=True)
    (g,) = rtx.autograd.grad(LA.inv(rtx.tensor(a) + t * rtx.eye(3, dtype=rtx.float64)).sum(), t, create_graph=True)
    (h,) = rtx.autograd.grad(g, t)
    m = np.linalg.inv(a + 0.3 * np.eye(3))
    assert_close(g, -(m @ m).sum(), rtol=1e-10)
    assert_close(h, 2 * (m @ m @ m).sum(), rtol=1e-10)


# ---- errors -------------------------------------------------------------------------------------


def test_non_square_names_the_shape():
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 3 by 4 matrices"):
        LA.inv(rtx.tensor(r(3, 4)))
    with pytest.raises(RuntimeError, match="linalg.det: A must be batches of square matrices, but they are 2 by 3"):
        rtx.det(rtx.tensor(r(2, 3)))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        LA.inv(rtx.tensor(r(3)))


def test_singular_inverse_message():
    with pytest.raises(LA.LinAlgError, match="linalg.inv: The diagonal element 2 is zero, the inversion could not "
                                             "be completed because the input matrix is singular."):
        LA.inv(rtx.tensor([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): The diagonal element 3 is zero"):
        LA.inv(rtx.tensor(np.stack([np.eye(3), np.diag([1.0, 2.0, 0.0])])))
    with pytest.raises(RuntimeError, match="linalg.solve: The solver failed because the input matrix is singular"):
        LA.solve(rtx.tensor(np.zeros((2, 2))), rtx.tensor(np.ones(2)))


def test_cholesky_not_positive_definite():
    with pytest.raises(LA.LinAlgError, match="not positive-definite \\(the leading minor of order 2 is not "
                                             "positive-definite\\)"):
        LA.cholesky(rtx.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(RuntimeError, match="leading minor of order 1"):
        rtx.cholesky(rtx.tensor([[-1.0, 0.0], [0.0, 1.0]]))


def test_dtype_errors():
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        LA.inv(rtx.tensor([[1, 0], [0, 1]]))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        LA.det(rtx.tensor(np.eye(2), dtype=rtx.float16))
    with pytest.raises(RuntimeError, match="same dtype"):
        LA.solve(rtx.tensor(np.eye(2)), rtx.tensor(np.ones(2), dtype=rtx.float32))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        LA.vector_norm(rtx.tensor([1, 2]))


def test_argument_errors():
    a = rtx.tensor(np_spd(r(3, 3)))
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(a, UPLO="X")
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'full'"):
        LA.qr(a, mode="full")
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        LA.matrix_norm(a, 3)
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        LA.norm(rtx.tensor(r(2, 2, 2)), 2)
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        LA.solve(a, rtx.tensor(r(4, 2)))
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3. Got 4 and 4"):
        LA.cross(rtx.tensor(r(4)), rtx.tensor(r(4)))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        rtx.tensordot(rtx.tensor(r(2, 3)), rtx.tensor(r(4, 2)), 1)
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        rtx.cdist(rtx.tensor(r(2, 3)), rtx.tensor(r(2, 4)))
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): expected at least 2 tensors"):
        LA.multi_dot([a])
    with pytest.raises(RuntimeError, match="trace: expected a matrix"):
        rtx.trace(rtx.tensor(r(3)))


def test_torch_cross_default_dim_warns():
    with pytest.warns(UserWarning, match="deprecated"):
        c = rtx.cross(rtx.tensor(r(4, 3)), rtx.tensor(r(4, 3)))
    assert c.shape == (4, 3)


def test_namespace():
    import importlib
    assert importlib.import_module("rtx.linalg") is LA
    assert rtx.linalg is LA
    for name in LA.__all__:
        assert hasattr(LA, name), name
