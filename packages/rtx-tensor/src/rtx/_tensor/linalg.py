"""rtx.linalg: PyTorch's torch.linalg namespace. Batched over leading dims everywhere; the
decompositions and their derivatives live in ops/linalg_ops.py, the norms here; the rest are
compositions of differentiable ops."""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops import linalg_ops as _ops
from rtx._tensor.ops._util import cast, dims, wrap_dim, xp_of
from rtx._tensor.ops.linalg_ops import (
    QR,
    SVD,
    Cholesky,
    Eigh,
    LinAlgError,
    Solve,
    cross_along,
    det,
    eye_like,
    matrix_input,
    same_dtype,
    scalar_name,
    square_input,
)
from rtx._tensor.ops.matmul import matmul
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt


def _rt(name, fields):
    t = namedtuple(name, fields)
    t.__module__ = "rtx.return_types"
    return t


_SlogdetResult = _rt("linalg_slogdet", ["sign", "logabsdet"])
_EighResult = _rt("linalg_eigh", ["eigenvalues", "eigenvectors"])
_SVDResult = _rt("linalg_svd", ["U", "S", "Vh"])
_QRResult = _rt("linalg_qr", ["Q", "R"])
_InvExResult = _rt("linalg_inv_ex", ["inverse", "info"])
_CholeskyExResult = _rt("linalg_cholesky_ex", ["L", "info"])
_LstsqResult = _rt("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _out(result, out):
    if out is not None:
        out.copy_(result)
        return out
    return result


def _needs_grad(*ts):
    from rtx.autograd.grad_mode import _state
    return _state.enabled and any(t.requires_grad for t in ts)


# ---- inverse, solve, determinants ---------------------------------------------------------------


def inv(A, *, out=None):
    square_input(A, "linalg.inv")
    return _out(_ops.Inv.apply(A), out)


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info is 0, or the 1-based index of the zero pivot of a singular matrix
    (whose inverse comes back as NaN) unless check_errors."""
    square_input(A, "linalg.inv_ex")
    try:
        res = _ops.Inv.apply(A)
        info = xp_of(A).zeros(A._data.shape[:-2], dtype=np.int32)
        return _InvExResult(res, Tensor._make(info))
    except LinAlgError:
        if check_errors:
            raise
    a = A._data if isinstance(A._data, np.ndarray) else A._data.get()
    flat = a.reshape((-1,) + a.shape[-2:])
    infos = np.array([_ops._zero_pivot(m) for m in flat], dtype=np.int32)
    invs = np.stack([np.full_like(m, np.nan) if k else np.linalg.inv(m) for m, k in zip(flat, infos)])
    xp = xp_of(A)
    return _InvExResult(Tensor._make(xp.asarray(invs.reshape(a.shape))), Tensor._make(xp.asarray(
        infos.reshape(a.shape[:-2]))))


def solve(A, B, *, left=True, out=None):
    """X with A X = B (or X A = B when left=False); B a batch of matrices or of vectors."""
    square_input(A, "linalg.solve")
    same_dtype(A, B, "linalg.solve")
    if not left:
        return _out(solve(A.mT, B.mT).mT, out)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if Bm.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{n} and {'x'.join(str(s) for s in Bm.shape[-2:])})")
    X = Solve.apply(A, Bm)
    return _out(X.squeeze(-1) if vector else X, out)


def slogdet(A, *, out=None):
    """(sign, logabsdet): det(A) = sign * exp(logabsdet), stable where det would under/overflow."""
    sign, logabsdet = _ops.slogdet(A)
    return _SlogdetResult(sign, logabsdet)


def cholesky(A, *, upper=False, out=None):
    square_input(A, "linalg.cholesky")
    return _out(Cholesky.apply(A, upper=bool(upper)), out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    square_input(A, "linalg.cholesky_ex")
    try:
        L = Cholesky.apply(A, upper=bool(upper))
        return _CholeskyExResult(L, Tensor._make(xp_of(A).zeros(A._data.shape[:-2], dtype=np.int32)))
    except LinAlgError:
        if check_errors:
            raise
    a = A._data if isinstance(A._data, np.ndarray) else A._data.get()
    flat = a.reshape((-1,) + a.shape[-2:])
    infos = np.array([_ops._failing_minor(m) for m in flat], dtype=np.int32)
    Ls = np.stack([np.full_like(m, np.nan) if k else np.linalg.cholesky(m) for m, k in zip(flat, infos)])
    if upper:
        Ls = Ls.swapaxes(-1, -2).conj()
    xp = xp_of(A)
    return _CholeskyExResult(Tensor._make(xp.asarray(Ls.reshape(a.shape))),
                             Tensor._make(xp.asarray(infos.reshape(a.shape[:-2]))))


# ---- decompositions ---------------------------------------------------------------------------


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric / Hermitian matrices,
    read from the lower (UPLO='L') or upper triangle."""
    square_input(A, "linalg.eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _EighResult(*Eigh.apply(A, uplo=UPLO))


def eigvalsh(A, UPLO="L", *, out=None):
    square_input(A, "linalg.eigvalsh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    if _needs_grad(A):
        return _out(Eigh.apply(A, uplo=UPLO)[0], out)
    return _out(Tensor._make(np.linalg.eigvalsh(A._data, UPLO=UPLO)), out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U diag(S) Vh; S descending. Gradients need distinct singular values and a loss that
    does not depend on the signs (phases) of the singular vectors."""
    matrix_input(A, "linalg.svd")
    return _SVDResult(*SVD.apply(A, full_matrices=bool(full_matrices)))


def svdvals(A, *, driver=None, out=None):
    matrix_input(A, "linalg.svdvals")
    if _needs_grad(A):
        return _out(SVD.apply(A, full_matrices=False)[1], out)
    return _out(Tensor._make(np.linalg.svd(A._data, compute_uv=False)), out)


def qr(A, mode="reduced", *, out=None):
    matrix_input(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    return _QRResult(*QR.apply(A, mode=mode))


# ---- rank, pseudo-inverse, least squares ------------------------------------------------------


def _tolerance(S, m, n, atol, rtol, dtype):
    """max(atol, rtol * largest singular value) per matrix, as an array (a constant)."""
    s = S._data
    smax = s.max(axis=-1) if s.shape[-1] else xp_of(S).zeros(s.shape[:-1], dtype=s.dtype)
    if atol is None and rtol is None:
        rtol = np.finfo(np.dtype(dtype).type).eps * max(m, n)
    atol = 0.0 if atol is None else (atol._data if type(atol) is Tensor else atol)
    rtol = 0.0 if rtol is None else (rtol._data if type(rtol) is Tensor else rtol)
    return xp_of(S).maximum(atol, rtol * smax)


def _real_np(A):
    return np.dtype(A.dtype.to_real().np)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    matrix_input(A, "linalg.matrix_rank")
    if tol is not None:  # the deprecated spelling of atol
        atol, rtol = tol, 0.0 if rtol is None else rtol
    m, n = A._data.shape[-2:]
    s = np.abs(np.linalg.eigvalsh(A._data)) if hermitian else np.linalg.svd(A._data, compute_uv=False)
    S = Tensor._make(s)
    tol_ = _tolerance(S, m, n, atol, rtol, _real_np(A))
    return _out(Tensor._make((s > tol_[..., None]).sum(axis=-1).astype(np.int64)), out)


def pinv(A, *, atol=None, rtol=None, hermitian=False, rcond=None, out=None):
    """Moore-Penrose pseudo-inverse through the SVD (eigh when hermitian): singular values at or
    below max(atol, rtol * s_max) count as zero. Differentiable through the decomposition."""
    matrix_input(A, "linalg.pinv")
    if rcond is not None:
        rtol = rcond
    m, n = A._data.shape[-2:]
    if hermitian:
        w, V = Eigh.apply(A, uplo="L")
        tol_ = _tolerance(Tensor._make(np.abs(w._data)), m, n, atol, rtol, _real_np(A))
        mask = Tensor._make((np.abs(w._data) > tol_[..., None]).astype(w._data.dtype))
        winv = mask / (w + (1 - mask))
        return _out((V * winv.unsqueeze(-2)) @ V.mH, out)
    U, S, Vh = SVD.apply(A, full_matrices=False)
    tol_ = _tolerance(S, m, n, atol, rtol, _real_np(A))
    mask = Tensor._make((S._data > tol_[..., None]).astype(S._data.dtype))
    sinv = mask / (S + (1 - mask))
    return _out((Vh.mH * sinv.unsqueeze(-2)) @ U.mH, out)


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of A X = B through the pseudo-inverse (differentiable), with
    PyTorch's extra outputs: residuals (m > n and full rank, not for gelsy), rank (gelsy,
    gelsd, gelss), singular_values (gelsd, gelss); the rest come back empty."""
    matrix_input(A, "linalg.lstsq")
    same_dtype(A, B, "linalg.lstsq")
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    if not (vector or B.ndim == A.ndim) or B.ndim < 1:
        raise RuntimeError(f"torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1 (got {A.ndim} and {B.ndim})")
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A._data.shape[-2:]
    if Bm.shape[-2] != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) (got {m} and "
                           f"{Bm.shape[-2]})")
    if rcond is None:
        rcond = np.finfo(_real_np(A).type).eps * max(m, n)
    X = pinv(A, rtol=rcond) @ Bm
    xp = xp_of(A)
    empty = Tensor._make(xp.empty((0,), dtype=_real_np(A)))
    rank = matrix_rank(A, rtol=rcond) if driver != "gels" else Tensor._make(xp.empty((0,), dtype=np.int64))
    svals = svdvals(A) if driver in ("gelsd", "gelss") else empty
    residuals = empty
    full_rank = bool((matrix_rank(A, rtol=rcond)._data == n).all())
    if m > n and full_rank and driver != "gelsy":
        r = A @ X - Bm
        residuals = (r * r.conj() if r.is_complex() else r * r).sum(-2)
        residuals = residuals.squeeze(-1) if vector else residuals
    return _LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, svals)


# ---- norms --------------------------------------------------------------------------------------


def _unsqueeze_axes(t, axes):
    shape = list(t.shape)
    for ax in sorted(axes):
        shape.insert(ax, 1)
    return t.reshape(tuple(shape))


class _Extreme(Primitive):
    """amax / amin over axes; ties share the gradient evenly (PyTorch's amax rule)."""
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, axes, keepdim, largest):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        return (np.max if largest else np.min)(a._data, axis=axes, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        out = ctx.output()
        if not ctx.keepdim:
            out, grad = _unsqueeze_axes(out, ctx.axes), _unsqueeze_axes(grad, ctx.axes)
        mask = (a == out).to(grad.dtype)
        return grad * mask / mask.sum(ctx.axes, keepdim=True)


def _extreme(x, axes, keepdim, largest, op):
    if any(x._data.shape[ax] == 0 for ax in axes) or (x._data.size == 0 and not axes):
        raise RuntimeError(f"{op}: Expected a non-empty tensor to reduce over with ord={'inf' if largest else '-inf'}")
    return _Extreme.apply(x, axes=axes, keepdim=keepdim, largest=largest)


class _VectorNorm(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, x, *, p, axes, keepdim):
        ctx.save_for_backward(x)
        ctx.p, ctx.axes, ctx.keepdim = p, axes, keepdim
        a = x._data
        real = np.dtype(x.dtype.to_real().np)
        if real.itemsize < 4:  # float16 / bfloat16: accumulate in float32, as PyTorch does
            a = a.astype(np.float32)
        absx = np.abs(a)
        if p == 2:
            r = np.sqrt(np.sum(absx * absx, axis=axes, keepdims=keepdim))
        elif p == 1:
            r = np.sum(absx, axis=axes, keepdims=keepdim)
        else:
            r = np.sum(absx ** p, axis=axes, keepdims=keepdim) ** (1.0 / p)
        return xp_of(x).asarray(r).astype(real, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        p, norm = ctx.p, ctx.output()
        if not ctx.keepdim:
            norm, grad = _unsqueeze_axes(norm, ctx.axes), _unsqueeze_axes(grad, ctx.axes)
        if p == 1:
            return grad * x.sgn()
        safe_norm = norm + (norm == 0).to(norm.dtype)  # a zero vector gets a zero gradient, as PyTorch
        if p == 2:
            return grad * x / safe_norm
        absx = x.abs()
        safe_abs = absx + (absx == 0).to(absx.dtype)
        return grad * x.sgn() * (safe_abs / safe_norm) ** (p - 1)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """(sum |x|^ord)^(1/ord) over dim (all dims when None); ord inf / -inf: max / min |x|;
    ord 0: the number of nonzeros."""
    if type(x) is not Tensor:
        raise TypeError(f"linalg.vector_norm: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = cast(x, _dt.as_dtype(dtype).np)
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {scalar_name(x)}")
    if isinstance(ord, str) or not isinstance(ord, (int, float, np.integer, np.floating)):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    axes = dims(dim, x._data.ndim, "linalg.vector_norm") if not (isinstance(dim, (list, tuple)) and not dim) \
        else tuple(range(x._data.ndim))
    if math.isinf(ord):
        return _out(_extreme(x.abs(), axes, keepdim, ord > 0, "linalg.vector_norm"), out)
    if ord == 0:
        real = np.dtype(x.dtype.to_real().np)
        cnt = Tensor._make(xp_of(x).asarray(np.count_nonzero(x._data, axis=axes) if axes else (x._data != 0))
                           .astype(real))
        if keepdim:
            cnt = _unsqueeze_axes(cnt, axes)
        if x.requires_grad:  # PyTorch's ord=0 norm is differentiable with a zero gradient
            cnt = cnt + 0 * x.abs().sum(axes, keepdim=keepdim)
        return _out(cnt, out)
    return _out(_VectorNorm.apply(x, p=float(ord) if ord not in (1, 2) else int(ord), axes=axes, keepdim=keepdim),
                out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Frobenius, nuclear, or the operator norms 1, -1, 2, -2, inf, -inf of the matrices in dims."""
    if type(A) is not Tensor:
        raise TypeError(f"linalg.matrix_norm: expected a Tensor, got {type(A).__name__}")
    if dtype is not None:
        A = cast(A, _dt.as_dtype(dtype).np)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. "
                           f"Got {scalar_name(A)}")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {tuple(dim)}")
    d0, d1 = (wrap_dim(d, A.ndim, "linalg.matrix_norm") for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return _out(vector_norm(A, 2, (d0, d1), keepdim), out)
    if ord == "nuc" or ord in (2, -2):
        if A.dtype.name in ("float16", "bfloat16"):
            raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {scalar_name(A)}")
        rest = [i for i in range(A.ndim) if i not in (d0, d1)]
        S = svdvals(A.permute(rest + [d0, d1]))
        if ord == "nuc":
            r = S.sum(-1)
        else:
            r = _extreme(S, (S.ndim - 1,), False, ord == 2, "linalg.matrix_norm")
        return _out(_unsqueeze_axes(r, (d0, d1)) if keepdim else r, out)
    if ord in (1, -1, math.inf, -math.inf):
        sum_dim, max_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(sum_dim, keepdim=True)
        r = _extreme(s, (max_dim,), True, ord > 0, "linalg.matrix_norm")
        return _out(r if keepdim else _squeeze_two(r, d0, d1), out)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def _squeeze_two(t, d0, d1):
    shape = [s for i, s in enumerate(t.shape) if i not in (d0, d1)]
    return t.reshape(tuple(shape))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """A vector norm when dim is an int (or ord is None and dim is None: the flattened input), a
    matrix norm when dim is a 2-tuple (or A is 2-D and ord is given)."""
    if type(A) is not Tensor:
        raise TypeError(f"linalg.norm: expected a Tensor, got {type(A).__name__}")
    if dim is not None:
        if isinstance(dim, (int, np.integer)) or len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")


def cond(A, p=None):
    """Condition number: ratio of the largest to the smallest singular value (p None or 2)."""
    if p in (None, 2, -2):
        S = svdvals(A)
        r = S[..., 0] / S[..., -1]
        return r if p != -2 else 1 / r
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


# ---- products ------------------------------------------------------------------------------------


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices in the cheapest order (the first may be a row vector,
    the last a column vector), as numpy.linalg.multi_dot."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, n - 1) else (2,)
        if t.ndim not in allowed:
            where = "first" if i == 0 else "last" if i == n - 1 else f"{i}"
            raise RuntimeError(f"multi_dot(): {where} tensor must be {' or '.join(f'{a}D' for a in allowed)} but "
                               f"got {t.ndim}D")
    if first_vec:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vec:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    for i in range(n - 1):
        if tensors[i].shape[1] != tensors[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    result = _chain(tensors, _chain_order([t.shape[0] for t in tensors] + [tensors[-1].shape[1]]), 0, n - 1)
    if first_vec:
        result = result.squeeze(0)
    if last_vec:
        result = result.squeeze(-1)
    return _out(result, out)


def _chain_order(p):
    """The classic O(n^3) matrix-chain dynamic programme: split[i][j] is where to cut A_i..A_j."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(ts, split, i, j):
    if i == j:
        return ts[i]
    k = split[i][j]
    return _chain(ts, split, i, k) @ _chain(ts, split, k + 1, j)


def cross(input, other, *, dim=-1, out=None):
    return _out(cross_along(input, other, dim, "linalg.cross"), out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) over dim, batch dims broadcast."""
    return _out(((x.conj() if x.is_complex() else x) * y).sum(dim), out)


def matrix_power(A, n, *, out=None):
    return _out(_ops.matrix_power(A, n), out)


def matrix_exp(A):
    """exp(A) by scaling and squaring with a degree-12 Taylor polynomial (differentiable)."""
    square_input(A, "linalg.matrix_exp")
    a = A._data if isinstance(A._data, np.ndarray) else A._data.get()
    nrm = float(np.abs(a).sum(axis=-2).max()) if a.size else 0.0
    s = max(0, int(math.ceil(math.log2(nrm))) + 1) if nrm > 0.5 else 0
    X = A / (2 ** s)
    eye = eye_like(A)
    result, term = eye + X, X
    for k in range(2, 13):
        term = (term @ X) / k
        result = result + term
    for _ in range(s):
        result = result @ result
    return result


__all__ = ["LinAlgError", "inv", "inv_ex", "solve", "det", "slogdet", "cholesky", "cholesky_ex", "eigh", "eigvalsh",
           "svd", "svdvals", "qr", "matrix_rank", "pinv", "lstsq", "vector_norm", "matrix_norm", "norm", "cond",
           "multi_dot", "cross", "diagonal", "vecdot", "matmul", "matrix_power", "matrix_exp"]
