"""Linear algebra at the torch.* level: einsum, tensordot, kron, cross, trace, diagflat, det,
logdet, slogdet, inverse, cholesky, cdist, matrix_power, chain_matmul, svd, qr, pinverse; and the
decomposition primitives (inv, solve, det, slogdet, cholesky, eigh, svd, qr) that rtx.linalg
(linalg.py) wraps.

Decompositions run in np.linalg, which hands CuPy arrays to cupy.linalg. Every derivative is
written in Tensor ops, so double backward works; the formulas are PyTorch's (FunctionsManual.cpp,
real case). Multi-output decompositions do not keep their outputs as graph tensors: under
create_graph, backward recomputes them from the saved input so the second derivative flows."""
from __future__ import annotations

import warnings
from collections import Counter, namedtuple

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import check_same_device, operands, sum_to, wrap_dim, xp_of
from rtx._tensor.tensor import Tensor
from rtx.autograd.grad_mode import _state
from rtx.runtime import dtypes as _dt


class LinAlgError(RuntimeError):
    """A singular or non-positive-definite input (torch.linalg.LinAlgError)."""


def _rt(name, fields):
    t = namedtuple(name, fields)
    t.__module__ = "rtx.return_types"
    return t


slogdet_result = _rt("slogdet", ["sign", "logabsdet"])
svd_result = _rt("svd", ["U", "S", "V"])
qr_result = _rt("qr", ["Q", "R"])

# ---- input checks ----------------------------------------------------------------------------

def scalar_name(t):
    return _dt.torch_name(t.dtype)


def float_input(A, op):
    """LAPACK works in float32/64 and complex: refuse the rest as PyTorch does."""
    if type(A) is not Tensor:
        raise TypeError(f"{op}: expected a Tensor as input, got {type(A).__name__}")
    if A.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {scalar_name(A)}")
    if A._data.dtype.kind not in "fc":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {scalar_name(A)}")


def matrix_input(A, op):
    float_input(A, op)
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")


def square_input(A, op):
    matrix_input(A, op)
    m, n = A._data.shape[-2:]
    if m != n:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {m} by {n} matrices")


def same_dtype(A, B, op):
    if type(B) is not Tensor:
        raise TypeError(f"{op}: expected B to be a Tensor, got {type(B).__name__}")
    check_same_device(A, B, op)
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type {scalar_name(A)} "
                           f"and B of type {scalar_name(B)} instead.")


def eye_like(A, n=None):
    """The identity of A's dtype and device (a constant)."""
    return Tensor._make(xp_of(A).eye(A._data.shape[-1] if n is None else n, dtype=A._data.dtype))


def _host(a):
    return a if isinstance(a, np.ndarray) else a.get()


def live(g):
    """A gradient that is present and not the engine's zero filler for an unused output."""
    return g is not None and bool(g._data.any())


def _outputs(ctx, recompute):
    """A multi-output op's outputs in backward: constants, or (under create_graph) recomputed
    from the saved input so that double backward reaches it."""
    if _state.enabled:
        return recompute()
    return tuple(Tensor._make(o) for o in ctx.outs)


# ---- error messages for singular and indefinite inputs -----------------------------------------


def _zero_pivot(m):
    """1-based index of the first exactly-zero pivot of LU with partial pivoting, or 0."""
    a = np.array(m, dtype=np.complex128 if np.iscomplexobj(m) else np.float64)
    n = a.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        if a[p, k] == 0:
            return k + 1
        if p != k:
            a[[k, p]] = a[[p, k]]
        a[k + 1:, k:] -= np.outer(a[k + 1:, k] / a[k, k], a[k, k:])
    return 0


def _batches(a):
    a = _host(a)
    return a.reshape((-1,) + a.shape[-2:]), a.ndim > 2


def singular_message(op, a):
    flat, batched = _batches(a)
    for b, m in enumerate(flat):
        k = _zero_pivot(m)
        if k:
            where = f"(Batch element {b}): " if batched else ""
            return (f"{op}: {where}The diagonal element {k} is zero, the inversion could not be completed because "
                    f"the input matrix is singular.")
    return f"{op}: The inversion could not be completed because the input matrix is singular."


def _failing_minor(m):
    """Order of the smallest leading minor that is not positive-definite (0 if none): it is
    monotone in the order, so bisect."""
    def ok(k):
        try:
            np.linalg.cholesky(m[:k, :k])
            return True
        except np.linalg.LinAlgError:
            return False
    n = m.shape[0]
    if ok(n):
        return 0
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


def not_pd_message(op, a):
    flat, batched = _batches(a)
    for b, m in enumerate(flat):
        k = _failing_minor(m)
        if k:
            where = f"(Batch element {b}): " if batched else ""
            return (f"{op}: {where}The factorization could not be completed because the input is not "
                    f"positive-definite (the leading minor of order {k} is not positive-definite).")
    return f"{op}: The factorization could not be completed because the input is not positive-definite."


# ---- decompositions: the primitives ------------------------------------------------------------


class Inv(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        try:
            return np.linalg.inv(a._data)
        except np.linalg.LinAlgError:
            raise LinAlgError(singular_message("linalg.inv", a._data)) from None

    @staticmethod
    def backward(ctx, grad):
        yh = ctx.output().mH
        return -(yh @ grad @ yh)


class Solve(Primitive):
    """X = A^-1 B for matrices B (..., n, k); batch dims broadcast."""
    saves_output = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a)
        ctx.b_shape = b._data.shape
        try:
            return np.linalg.solve(a._data, b._data)
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.solve: The solver failed because the input matrix is singular.") from None

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        gb = Solve.apply(a.mH, grad)
        ga = sum_to(-(gb @ ctx.output().mH), a.shape) if ctx.needs_input_grad[0] else None
        return ga, (sum_to(gb, ctx.b_shape) if ctx.needs_input_grad[1] else None)


def solve_matrix(A, B):
    return Solve.apply(A, B)


def _cofactor(a):
    """d det(A) / dA for any square A, singular included: det(U) det(Vh) U adj(S) Vh."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.where(np.eye(n, dtype=bool), 1, s[..., None, :])
    adj = np.prod(others, axis=-1)  # prod over j != i of s_j
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return (sign[..., None, None] * (u * adj[..., None, :]) @ vh).astype(a.dtype)


class Det(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.linalg.det(a._data)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        d = ctx.output()
        g = (grad * (d.conj() if d.is_complex() else d)).unsqueeze(-1).unsqueeze(-1)
        try:
            return g * Inv.apply(a).mH
        except LinAlgError:
            # Singular: the cofactor matrix, as a constant (no double backward through this branch).
            return grad.unsqueeze(-1).unsqueeze(-1) * Tensor._make(xp_of(a).asarray(_cofactor(_host(a._data))))


class Slogdet(Primitive):
    non_differentiable_outputs = (0,)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        sign, logabsdet = np.linalg.slogdet(a._data)
        return sign, logabsdet

    @staticmethod
    def backward(ctx, gsign, glogabsdet):
        (a,) = ctx.saved_tensors
        return glogabsdet.unsqueeze(-1).unsqueeze(-1) * Inv.apply(a).mH


class Cholesky(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, upper):
        ctx.upper = upper
        try:
            L = np.linalg.cholesky(a._data)
        except np.linalg.LinAlgError:
            raise LinAlgError(not_pd_message("linalg.cholesky", a._data)) from None
        return L.swapaxes(-1, -2).conj().copy() if upper else L

    @staticmethod
    def backward(ctx, grad):
        # Iain Murray (2016), arXiv 1602.07527, as PyTorch's cholesky_backward.
        L, gL = ctx.output(), grad
        if ctx.upper:
            L, gL = L.mH, gL.mH
        P = (L.mH @ gL).tril()
        S = 0.5 * (P + P.tril(-1).mH)
        X = Solve.apply(L.mH, S)               # L^-H S
        return Solve.apply(L.mH, X.mH).mH      # L^-H S L^-1


class Eigh(Primitive):
    @staticmethod
    def forward(ctx, a, *, uplo):
        ctx.save_for_backward(a)
        ctx.uplo = uplo
        w, v = np.linalg.eigh(a._data, UPLO=uplo)
        ctx.outs = (w, v)
        return w, v

    @staticmethod
    def backward(ctx, gw, gv):
        (a,) = ctx.saved_tensors
        w, V = _outputs(ctx, lambda: Eigh.apply(a, uplo=ctx.uplo))
        Vh = V.mH
        inner = gw.diag_embed() if live(gw) or not live(gv) else None
        if live(gv):
            VhgV = Vh @ gv
            skew = 0.5 * (VhgV - VhgV.mH)
            E = w.unsqueeze(-2) - w.unsqueeze(-1) + eye_like(V)  # E_ij = w_j - w_i; 1 on the diagonal
            term = skew / E
            inner = term if inner is None else inner + term
        return V @ inner @ Vh


class SVD(Primitive):
    @staticmethod
    def forward(ctx, a, *, full_matrices):
        ctx.save_for_backward(a)
        ctx.full = full_matrices
        u, s, vh = np.linalg.svd(a._data, full_matrices=full_matrices)
        ctx.outs = (u, s, vh)
        return u, s, vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        (a,) = ctx.saved_tensors
        U, S, Vh = _outputs(ctx, lambda: SVD.apply(a, full_matrices=ctx.full))
        m, n = a._data.shape[-2:]
        k = min(m, n)
        if ctx.full:  # only the first k singular vectors enter A = U S Vh
            U, Vh = U[..., :, :k], Vh[..., :k, :]
            gU, gVh = gU[..., :, :k], gVh[..., :k, :]
        return svd_grad(U, S, Vh, gU, gS, gVh, m, n)


def svd_grad(U, S, Vh, gU, gS, gVh, m, n):
    """PyTorch's svd_backward: gauge-invariant losses and distinct singular values."""
    use_u, use_v = live(gU), live(gVh)
    if not use_u and not use_v:
        return (U * gS.unsqueeze(-2)) @ Vh
    V, gV = Vh.mH, gVh.mH
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_like(S)  # E_jk = S_k^2 - S_j^2; 1 on the diagonal
    inner = gS.diag_embed()
    if use_u:
        UhgU = U.mH @ gU
        inner = inner + (UhgU - UhgU.mH) * S.unsqueeze(-2) / E
    if use_v:
        VhgV = V.mH @ gV
        inner = inner + S.unsqueeze(-1) * (VhgV - VhgV.mH) / E
    if m > n and use_u:
        gA = U @ inner
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mH @ gUSinv)
        return gA @ Vh
    if m < n and use_v:
        gA = inner @ Vh
        SinvgVh = gV.mH / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ V) @ Vh
        return U @ gA
    return U @ inner @ Vh


class QR(Primitive):
    @staticmethod
    def forward(ctx, a, *, mode):
        ctx.mode = mode
        if mode == "r":
            r = np.linalg.qr(a._data, mode="r")
            return xp_of(a).empty((0,), dtype=r.dtype), r
        ctx.save_for_backward(a)
        q, r = np.linalg.qr(a._data, mode=mode)
        ctx.outs = (q, r)
        return q, r

    @staticmethod
    def backward(ctx, gQ, gR):
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                               "through linalg.qr.")
        (a,) = ctx.saved_tensors
        m, n = a._data.shape[-2:]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        Q, R = _outputs(ctx, lambda: QR.apply(a, mode=ctx.mode))
        if m >= n:
            return _qr_grad(Q, R, gQ, gR)
        # Wide A = Q [R1 R2]: X = A[:, :m] = Q R1 is square; Y = A[:, m:] = Q R2 (Liao et al. 2019).
        R1, gR1, gR2 = R[..., :, :m], gR[..., :, :m], gR[..., :, m:]
        Y = a[..., :, m:]
        gX = _qr_grad(Q, R1, gQ + Y @ gR2.mH, gR1)
        from rtx._tensor.ops.shape import cat
        return cat([gX, Q @ gR2], -1)


def _qr_grad(Q, R, gQ, gR):
    # gA = [gQ + Q copyltu(M)] R^-H with M = R gR^H - gQ^H Q (m >= n, reduced)
    M = R @ gR.mH - gQ.mH @ Q
    copyltu = M.tril() + M.tril(-1).mH
    B = gQ + Q @ copyltu
    return Solve.apply(R, B.mH).mH


# ---- torch.* level functions -------------------------------------------------------------------


def det(input):
    square_input(input, "linalg.det")
    return Det.apply(input)


def slogdet(input):
    square_input(input, "linalg.slogdet")
    return slogdet_result(*Slogdet.apply(input))


def logdet(input):
    """log det(A): nan where det < 0 and -inf where det = 0, as PyTorch."""
    sign, logabsdet = slogdet(input)
    with np.errstate(divide="ignore", invalid="ignore"):
        return logabsdet + Tensor._make(np.log(sign._data))


def inverse(input, *, out=None):
    square_input(input, "linalg.inv")
    return _out(Inv.apply(input), out)


def cholesky(input, upper=False, *, out=None):
    square_input(input, "linalg.cholesky")
    return _out(Cholesky.apply(input, upper=bool(upper)), out)


def cholesky_solve(input, input2, upper=False):
    """Solve A X = B given the Cholesky factor of A (input2) and B (input)."""
    L = input2.mH if upper else input2
    return Solve.apply(L.mH, Solve.apply(L, input))


def cholesky_inverse(input, upper=False):
    L = input.mH if upper else input
    return inverse(L @ L.mH)


def svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V, not Vh; reduced unless some=False."""
    matrix_input(input, "svd")
    if not compute_uv:  # PyTorch: zero-filled U (m x m) and V (n x n)
        from rtx._tensor.linalg import svdvals
        S = svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return svd_result(input.new_zeros(batch + (m, m)), S, input.new_zeros(batch + (n, n)))
    U, S, Vh = SVD.apply(input, full_matrices=not some)
    return svd_result(U, S, Vh.mH)


def qr(input, some=True):
    matrix_input(input, "qr")
    return qr_result(*QR.apply(input, mode="reduced" if some else "complete"))


def pinverse(input, rcond=1e-15):
    from rtx._tensor import linalg
    return linalg.pinv(input, rtol=rcond)


def matrix_power(input, n):
    """A^n by repeated squaring; n < 0 inverts first; n = 0 gives the identity (batched)."""
    if input._data.ndim < 2 or input._data.shape[-1] != input._data.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{' by '.join(str(s) for s in input.shape[-2:])} matrices")
    n = int(n)
    if n == 0:
        eye = eye_like(input)
        return Tensor._make(xp_of(input).broadcast_to(eye._data, input._data.shape).copy())
    if n < 0:
        input, n = inverse(input), -n
    result, base = None, input
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def chain_matmul(*matrices, out=None):
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        return matrices[0].clone()
    from rtx._tensor import linalg
    return _out(linalg.multi_dot(matrices), out)


def _out(result, out):
    if out is not None:
        out.copy_(result)
        return out
    return result


def tensordot(a, b, dims=2, out=None):
    """Contract dims of a with dims of b: an int n (the last n of a with the first n of b) or
    a pair of lists. Built as permute + reshape + one matmul (one BLAS call)."""
    if type(a) is not Tensor or type(b) is not Tensor:
        raise TypeError(f"tensordot: expected Tensors, got {type(a).__name__} and {type(b).__name__}")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"tensordot expects both tensors to have the same dtype, but got {a.dtype} and {b.dtype}")
    if type(dims) is Tensor:
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        dims = int(dims)
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError(f"tensordot expects dims to be an int or a pair of lists, got {dims}")
        da, db = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
        if len(da) != len(db):
            raise RuntimeError(f"both dimension lists should have same length, got {da} and {db}")
        da = [wrap_dim(d, a.ndim, "tensordot") for d in da]
        db = [wrap_dim(d, b.ndim, "tensordot") for d in db]
    sa, sb = a._data.shape, b._data.shape
    for i, j in zip(da, db):
        if sa[i] != sb[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa[i]} in dim {i} and "
                               f"second has size {sb[j]} in dim {j}")
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [j for j in range(b.ndim) if j not in db]
    k = int(np.prod([sa[i] for i in da], dtype=np.int64))
    A = a.permute(fa + da).reshape(int(np.prod([sa[i] for i in fa], dtype=np.int64)), k)
    B = b.permute(db + fb).reshape(k, int(np.prod([sb[j] for j in fb], dtype=np.int64)))
    return _out((A @ B).reshape(tuple(sa[i] for i in fa) + tuple(sb[j] for j in fb)), out)


def kron(input, other):
    """Kronecker product: interleave the two shapes and multiply by broadcasting."""
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    A = input.reshape(tuple(x for s in sa for x in (s, 1)))
    B = other.reshape(tuple(x for s in sb for x in (1, s)))
    return (A * B).reshape(tuple(x * y for x, y in zip(sa, sb)))


def cross(input, other, dim=None):
    """Cross product of 3-vectors along dim (default: the first dim of size 3, deprecated as in
    PyTorch; rtx.linalg.cross defaults to -1). Batch dims broadcast."""
    if dim is None:
        from rtx._tensor.ops.shape import broadcast_shapes
        shape = broadcast_shapes(input.shape, other.shape)
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated. Please either pass the "
                      "dim explicitly or simply use torch.linalg.cross.", UserWarning, stacklevel=2)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input (shapes {list(input.shape)} and {list(other.shape)})")
    return cross_along(input, other, dim, "cross")


def cross_along(input, other, dim, op):
    from rtx._tensor.ops.shape import broadcast_shapes, cat
    a, b = operands(input, other, op)
    shape = broadcast_shapes(a.shape, b.shape)
    d = wrap_dim(dim, len(shape), op)
    off = len(shape) - a.ndim, len(shape) - b.ndim
    la = a.shape[d - off[0]] if d >= off[0] else 1
    lb = b.shape[d - off[1]] if d >= off[1] else 1
    if la != 3 or lb != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {la} and {lb}")
    a, b = a.expand(shape), b.expand(shape)
    a0, a1, a2 = (a.narrow(d, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(d, i, 1) for i in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def trace(input):
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    return input.diagonal().sum()


def diagflat(input, offset=0):
    """A 2-D matrix with the flattened input on diagonal `offset`."""
    return input.reshape(-1).diag(offset)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R).
    For p = 2 and more than 25 rows (or use_mm_for_euclid_dist) the distances come from one
    matmul, |x|^2 - 2 x.y + |y|^2, as PyTorch; otherwise from the differences, whose gradient
    is exact (0 at zero distance)."""
    for name, x in (("X1", x1), ("X2", x2)):
        if type(x) is not Tensor:
            raise TypeError(f"cdist: expected {name} to be a Tensor, got {type(x).__name__}")
        if x._data.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x._data.ndim}D")
        if not x.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {scalar_name(x)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    P, R = x1.shape[-2], x2.shape[-2]
    if p == 2 and (compute_mode == modes[1] or (compute_mode == modes[0] and (P > 25 or R > 25))):
        n1 = (x1 * x1).sum(-1, keepdim=True)
        n2 = (x2 * x2).sum(-1, keepdim=True)
        return (n1 - 2 * (x1 @ x2.mT) + n2.mT).clamp(min=0).sqrt()
    from rtx._tensor.linalg import vector_norm
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, dim=-1)


# ---- einsum ------------------------------------------------------------------------------------

# PyTorch's and NumPy's label order: upper case, then lower (written out: importing the string module
# compiles a regex, a cost `import rtx` would pay)
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def einsum(*args):
    """torch.einsum(equation, *operands), einsum(equation, [operands]), or the sublist form
    einsum(op0, [0, 1], op1, [1, 2], [0, 2]). '...' broadcasts; size-1 dims broadcast."""
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], str):
        equation, ops = args[0], list(args[1:])
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
    else:
        equation, ops = _sublist_equation(args)
    if not ops:
        raise ValueError("einsum(): must provide at least one operand")
    for i, op in enumerate(ops):
        if type(op) is not Tensor:
            raise TypeError(f"einsum(): operand {i} must be a Tensor, got {type(op).__name__}")
    for op in ops[1:]:
        check_same_device(ops[0], op, "einsum()")
        if op._data.dtype != ops[0]._data.dtype:
            raise RuntimeError(f"einsum(): expected all operands to have the same dtype, but got "
                               f"{ops[0].dtype} and {op.dtype}")
    terms, out = _parse_einsum(equation, [o._data.shape for o in ops])
    return einsum_terms(terms, out, ops)


def einsum_terms(terms, out, ops):
    """einsum on an equation already in explicit letters (no '...', explicit output)."""
    sizes = {}
    for i, (term, op) in enumerate(zip(terms, ops)):
        own = {}
        for c, s in zip(term, op._data.shape):
            if c in own and own[c] != s:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't match, "
                                   f"{own[c]} != {s}")
            own[c] = s
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = s
            elif s != prev and s != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast: subscript {c} has size {s} for operand "
                                   f"{i} which does not broadcast with previously seen size {prev}")
    return Einsum.apply(*ops, terms=tuple(terms), out=out, sizes=sizes)


def _sublist_equation(args):
    def letters(sub, what):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
                out.append(_LETTERS[s])
            else:
                raise ValueError(f"einsum(): subscript in subscript list {what} is not within the valid range "
                                 "[0, 52)")
        return "".join(out)
    if len(args) % 2:
        ops, subs, tail = list(args[0:-1:2]), list(args[1:-1:2]), args[-1]
    else:
        ops, subs, tail = list(args[0::2]), list(args[1::2]), None
    lhs = ",".join(letters(s, i) for i, s in enumerate(subs))
    return (lhs if tail is None else lhs + "->" + letters(tail, "out")), ops


def _check_term(term, what):
    if term.count("...") > 1:
        raise RuntimeError(f"einsum(): found more than one ellipsis ('...') in {what}")
    rest = term.replace("...", "")
    for c in rest:
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given in {what}: '{c}'; subscripts must be in "
                               "[a-zA-Z] (or '...')")
    return rest


def _parse_einsum(equation, shapes):
    """Terms and output with every '...' replaced by unused letters and the output explicit."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise RuntimeError("einsum(): more than one '->' found in the equation")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    explicit = [_check_term(t, f"operand {i}") for i, t in enumerate(terms)]
    ranks = []
    for i, (t, e, shape) in enumerate(zip(terms, explicit, shapes)):
        if "..." in t:
            if len(e) > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(e)}) is more than the "
                                   f"number of dimensions ({len(shape)}) for operand {i}")
            ranks.append(len(shape) - len(e))
        else:
            if len(e) != len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(e)}) does not match "
                                   f"the number of dimensions ({len(shape)}) for operand {i} and no ellipsis was "
                                   "given")
            ranks.append(None)
    used = set(eq)
    free = [c for c in _LETTERS if c not in used]
    ell_rank = max((r for r in ranks if r is not None), default=0)
    if ell_rank > len(free):
        raise RuntimeError("einsum(): too many dimensions: the equation uses more than 52 subscripts")
    ell = "".join(free[:ell_rank])
    terms = [t.replace("...", ell[ell_rank - r:]) if r is not None else t for t, r in zip(terms, ranks)]
    if arrow:
        out = _check_term(rhs, "the output")
        if "..." in rhs:
            out = rhs.replace("...", ell)
        seen = set()
        inputs = set("".join(explicit))
        for c in _check_term(rhs, "the output"):
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in inputs:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
            seen.add(c)
    else:
        counts = Counter("".join(explicit))
        out = (ell if any(r is not None for r in ranks) else "") + "".join(sorted(c for c, n in counts.items()
                                                                                  if n == 1))
    return terms, out


def _np_einsum(equation, arrays):
    bf16 = arrays[0].dtype == _dt.bfloat16.np
    if bf16:  # np.einsum has no bfloat16 loop
        arrays = [a.astype(np.float32) for a in arrays]
    lhs, out_term = equation.split("->")
    terms = lhs.split(",")
    out = _pair_matmul(terms[0], terms[1], out_term, *arrays) if len(arrays) == 2 else None
    if out is None:
        out = np.einsum(equation, *arrays, optimize=len(arrays) > 1)
    if bf16:
        out = out.astype(_dt.bfloat16.np)
    elif any(np.may_share_memory(out, a) for a in arrays):
        out = out.copy()  # a transpose-only equation returns a view; einsum's result owns its memory
    return out


def _pair_matmul(ta, tb, out, a, b):
    """Two operands as one (batched) matmul, as PyTorch does: np.einsum falls back to its C
    loop whenever a batch letter is shared, several times slower than BLAS. None where a letter
    repeats inside an operand (a diagonal: left to np.einsum)."""
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb):
        return None
    only_a = [c for c in ta if c not in tb and c not in out]
    if only_a:
        a = a.sum(axis=tuple(ta.index(c) for c in only_a))
        ta = "".join(c for c in ta if c not in only_a)
    only_b = [c for c in tb if c not in ta and c not in out]
    if only_b:
        b = b.sum(axis=tuple(tb.index(c) for c in only_b))
        tb = "".join(c for c in tb if c not in only_b)
    size = dict(zip(ta, a.shape))
    size.update(zip(tb, b.shape))
    batch = [c for c in ta if c in tb and c in out]
    contracted = [c for c in ta if c in tb and c not in out]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]
    if not contracted or not (left or right):  # no matrix product in it: np.einsum's loop is as good
        return np.einsum(f"{ta},{tb}->{out}", a, b)

    def prod(letters):
        n = 1
        for c in letters:
            n *= size[c]
        return n
    bshape = tuple(size[c] for c in batch)
    A = a.transpose([ta.index(c) for c in batch + left + contracted]).reshape(bshape + (prod(left), prod(contracted)))
    B = b.transpose([tb.index(c) for c in batch + contracted + right]).reshape(bshape + (prod(contracted),
                                                                                         prod(right)))
    C = (A @ B).reshape(bshape + tuple(size[c] for c in left + right))
    order = batch + left + right
    return C.transpose([order.index(c) for c in out])


class Einsum(Primitive):
    @staticmethod
    def forward(ctx, *ops, terms, out, sizes):
        ctx.save_for_backward(*ops)
        ctx.terms, ctx.out, ctx.sizes = terms, out, sizes
        arrays = []
        for term, op in zip(terms, ops):
            a = op._data
            full = tuple(sizes[c] for c in term)
            arrays.append(a if a.shape == full else xp_of(op).broadcast_to(a, full))
        return _np_einsum(",".join(terms) + "->" + out, arrays)

    @staticmethod
    def backward(ctx, grad):
        ops = ctx.saved_tensors
        return tuple(_einsum_grad(k, grad, ops, ctx.terms, ctx.out, ctx.sizes) if need else None
                     for k, need in enumerate(ctx.needs_input_grad))


def _einsum_grad(k, grad, ops, terms, out, sizes):
    """d/d operand k: einsum of the gradient with the other operands. Letters summed inside
    operand k alone are broadcast back; repeated letters (diagonals) are written back on the
    diagonal; dims that broadcast from size 1 are summed back."""
    others = []
    for j, (t, o) in enumerate(zip(terms, ops)):
        if j != k:
            full = tuple(sizes[c] for c in t)
            o = o if tuple(o.shape) == full else o.expand(full)
            others.append((t, o.conj() if o.is_complex() else o))  # PyTorch's convention: grad * conj(other)
    term = terms[k]
    uniq = list(dict.fromkeys(term))
    avail = set(out).union(*(set(t) for t, _ in others))
    keep = "".join(c for c in uniq if c in avail)
    g = einsum_terms([out] + [t for t, _ in others], keep, [grad] + [o for _, o in others])
    if len(keep) < len(uniq):
        g = g.reshape(tuple(sizes[c] if c in avail else 1 for c in uniq)).expand(tuple(sizes[c] for c in uniq))
    if len(uniq) < len(term):
        g = _onto_diagonals(g, term, sizes)
    return sum_to(g, ops[k].shape)


def _onto_diagonals(g, term, sizes):
    """g indexed by the distinct letters of term -> a tensor indexed by term, zero off the
    diagonals that repeated letters describe."""
    firsts = {}
    for p, c in enumerate(term):
        firsts.setdefault(c, p)
    g = g.reshape(tuple(sizes[c] if firsts[c] == p else 1 for p, c in enumerate(term)))
    xp = xp_of(g)
    mask = xp.ones((1,) * len(term), dtype=bool)
    for p, c in enumerate(term):
        q = firsts[c]
        if q != p:
            n = sizes[c]
            ar = xp.arange(n)
            shape_q = [1] * len(term)
            shape_q[q] = n
            shape_p = [1] * len(term)
            shape_p[p] = n
            mask = mask & (ar.reshape(shape_q) == ar.reshape(shape_p))
    return g * Tensor._make(mask.astype(g._data.dtype))


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ["kron", "cross", "trace", "diagflat", "det", "logdet", "slogdet", "inverse", "cholesky", "cholesky_solve",
           "cholesky_inverse", "matrix_power", "pinverse", "svd", "qr"]
__all__ = ["einsum", "tensordot", "kron", "cross", "trace", "diagflat", "det", "logdet", "slogdet", "inverse",
           "cholesky", "cholesky_solve", "cholesky_inverse", "cdist", "matrix_power", "chain_matmul", "pinverse",
           "svd", "qr"]
