"""Matrix products: matmul (batched, broadcasting), mm, bmm, mv, dot, outer, addmm, baddbmm.
One BLAS call per product: NumPy's matmul goes straight to OpenBLAS/cuBLAS."""
from __future__ import annotations

from rtx._tensor import autocast_state as _autocast
from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import check_same_device, sum_to
from rtx._tensor.tensor import Tensor


class MatMul(Primitive):
    op = "matmul"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        out = a._data @ b._data
        # bfloat16 @ bfloat16 comes back float32 from ml_dtypes; PyTorch keeps the input dtype.
        return out if out.dtype == a._data.dtype else out.astype(a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga, gb = ctx.needs_input_grad
        ra = rb = None
        if a.ndim == 1 and b.ndim == 1:
            return (grad * b if ga else None), (grad * a if gb else None)
        if a.ndim == 1:  # (k) @ (..., k, n) -> (..., n)
            g = grad.unsqueeze(-2)
            if ga:
                ra = sum_to((g @ b.mT).squeeze(-2), a.shape) if b.ndim > 2 else (g @ b.mT).squeeze(-2)
            if gb:
                rb = sum_to(a.unsqueeze(-1) @ g, b.shape)
            return ra, rb
        if b.ndim == 1:  # (..., m, k) @ (k) -> (..., m)
            g = grad.unsqueeze(-1)
            if ga:
                ra = sum_to(g @ b.unsqueeze(-2), a.shape)
            if gb:
                rb = (a.mT @ g).squeeze(-1)
                rb = rb.reshape(-1, rb.shape[-1]).sum(0) if rb.ndim > 1 else rb
            return ra, rb
        if ga:
            ra = sum_to(grad @ b.mT, a.shape)
        if gb:
            rb = sum_to(a.mT @ grad, b.shape)
        return ra, rb


def _check(a, b, op):
    if type(a) is not Tensor or type(b) is not Tensor:
        raise TypeError(f"{op}: expected Tensors, got {type(a).__name__} and {type(b).__name__}")
    check_same_device(a, b, op)
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"{op}: expected both operands to have the same dtype, but got {a.dtype} and {b.dtype}")
    if a._data.ndim == 0 or b._data.ndim == 0:
        raise RuntimeError(f"{op}: both arguments need at least 1 dimension, got {a._data.ndim}D and "
                           f"{b._data.ndim}D")


def matmul(input, other, *, out=None):
    if _autocast.active:  # on autocast's lower-precision list (so are mm, bmm, addmm, baddbmm: they call this)
        input, other = _autocast.lower(input, other)
    _check(input, other, "matmul")
    sa, sb = input._data.shape, other._data.shape
    ka = sa[-1]
    kb = sb[-2] if len(sb) > 1 else sb[0]
    if ka != kb:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_fmt(sa)} and {_fmt(sb)})")
    try:
        result = MatMul.apply(input, other)
    except ValueError as e:
        raise RuntimeError(f"matmul: shapes {tuple(sa)} and {tuple(sb)} do not broadcast: {e}") from None
    if out is not None:
        out.copy_(result)
        return out
    return result


def _fmt(shape):
    if len(shape) == 2:
        return f"{shape[0]}x{shape[1]}"
    return "x".join(str(s) for s in shape)


def mm(input, mat2, *, out=None):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2, out=out)


def bmm(input, mat2, *, out=None):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3-D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: {input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2, out=out)


def mv(input, vec, *, out=None):
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got {input.ndim}D and {vec.ndim}D")
    return matmul(input, vec, out=out)


def dot(input, other, *, out=None):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got "
                           f"{input.shape[0]} and {other.shape[0]} elements respectively")
    return matmul(input, other, out=out)


def inner(input, other, *, out=None):
    """Sum over the last dims: result shape input.shape[:-1] + other.shape[:-1]; scalars multiply."""
    if input.ndim == 0 or other.ndim == 0:
        return _outp(input * other, out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other, out=out)
    k = input.shape[-1]
    res = matmul(input.reshape(-1, k), other.reshape(-1, k).mT)
    return _outp(res.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1])), out)


def vdot(input, other, *, out=None):
    """dot with the first argument conjugated (the same as dot for real tensors)."""
    if input.is_complex():
        input = input.conj()
    return dot(input, other, out=out)


def _outp(result, out):
    if out is not None:
        out.copy_(result)
        return out
    return result


def outer(input, vec2):
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got {input.ndim}D and {vec2.ndim}D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if _autocast.active:
        input, mat1, mat2 = _autocast.lower(input, mat1, mat2)
    prod = mm(mat1, mat2)
    return (input * beta if beta != 1 else input) + (prod * alpha if alpha != 1 else prod)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    if _autocast.active:
        input, batch1, batch2 = _autocast.lower(input, batch1, batch2)
    prod = bmm(batch1, batch2)
    return (input * beta if beta != 1 else input) + (prod * alpha if alpha != 1 else prod)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    prod = mv(mat, vec)
    return (input * beta if beta != 1 else input) + (prod * alpha if alpha != 1 else prod)


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['matmul', 'mm', 'bmm', 'mv', 'dot', 'inner', 'vdot', 'outer', 'ger', 'addmm', 'baddbmm', 'addmv']
