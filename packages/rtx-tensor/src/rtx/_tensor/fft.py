"""rtx.fft: PyTorch's torch.fft namespace on the array module's own FFT (NumPy's pocketfft on the
CPU, cuFFT through CuPy on the GPU).

Three primitives carry the gradients, as in PyTorch: FftC2C (complex to complex), FftR2C (real to
a one-sided or full spectrum) and FftC2R (one-sided spectrum to real), plus FftResize for the
crop / zero-pad that `n` and `s` ask for. Every transform is linear, so each backward is the
adjoint transform: the opposite direction with the scale swapped ("backward" <-> "forward",
"ortho" stays), plus PyTorch's Hermitian corrections for the one-sided r2c / c2r pair. Complex
gradients follow PyTorch's convention (the conjugate Wirtinger derivative), under which the
adjoint is exactly the vjp.
"""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast, wrap_dim, xp_of
from rtx._tensor.ops.linalg_ops import scalar_name
from rtx._tensor.ops.shape import roll
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2",
           "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

# The adjoint of a transform scaled by `norm` is the opposite transform scaled by _ADJOINT[norm].
_ADJOINT = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# ---- primitives ---------------------------------------------------------------------------------


class FftC2C(Primitive):
    @staticmethod
    def forward(ctx, x, *, dim, norm, forward):
        ctx.dim, ctx.norm, ctx.fwd = dim, norm, forward
        if not dim:
            return x._data.copy()
        f = xp_of(x).fft
        return (f.fftn if forward else f.ifftn)(x._data, axes=dim, norm=norm)

    @staticmethod
    def backward(ctx, grad):
        return FftC2C.apply(grad, dim=ctx.dim, norm=_ADJOINT[ctx.norm], forward=not ctx.fwd)


class FftR2C(Primitive):
    """Real to complex, forward direction; onesided keeps the non-negative frequencies of the
    last dim only (the rest follow by Hermitian symmetry)."""

    @staticmethod
    def forward(ctx, x, *, dim, norm, onesided):
        ctx.dim, ctx.norm, ctx.onesided = dim, norm, onesided
        ctx.last = x._data.shape[dim[-1]]
        f = xp_of(x).fft
        if onesided:
            return f.rfftn(x._data, axes=dim, norm=norm)
        return f.fftn(x._data.astype(np.result_type(x._data.dtype, np.complex64)), axes=dim, norm=norm)

    @staticmethod
    def backward(ctx, grad):
        if ctx.onesided:
            # The one-sided output is a full c2c transform with the upper half dropped: give that
            # half a zero gradient, then take the adjoint c2c.
            grad = FftResize.apply(grad, dim=ctx.dim[-1:], sizes=(ctx.last,))
        return FftC2C.apply(grad, dim=ctx.dim, norm=_ADJOINT[ctx.norm], forward=False).real


class FftC2R(Primitive):
    """One-sided spectrum to real, inverse direction; last_dim_size is the output's length along
    the last transformed dim (the input has last_dim_size // 2 + 1 there)."""

    @staticmethod
    def forward(ctx, x, *, dim, norm, last_dim_size):
        ctx.dim, ctx.norm = dim, norm
        s = [x._data.shape[d] for d in dim[:-1]] + [last_dim_size]
        return xp_of(x).fft.irfftn(x._data, s=s, axes=dim, norm=norm)

    @staticmethod
    def backward(ctx, grad):
        g = FftR2C.apply(grad, dim=ctx.dim, norm=_ADJOINT[ctx.norm], onesided=True)
        # Each entry 1 .. N - (N//2 + 1) of the one-sided input stands for itself and for its
        # conjugate mirror N - k, which lies outside the one-sided range: its gradient doubles.
        # DC (and Nyquist for even N) are their own mirrors.
        last = ctx.dim[-1]
        double = grad._data.shape[last] - g._data.shape[last]
        if double <= 0:
            return g
        w = np.ones(g._data.shape[last], dtype=grad._data.dtype)
        w[1:1 + double] = 2
        shape = [1] * g._data.ndim
        shape[last] = w.size
        return g * Tensor._make(xp_of(g).asarray(w.reshape(shape)))


class FftResize(Primitive):
    """Crop or zero-pad (from index 0) each dim in `dim` to `sizes`; its adjoint is the resize back."""

    @staticmethod
    def forward(ctx, x, *, dim, sizes):
        a = x._data
        ctx.dim, ctx.old = dim, tuple(a.shape[d] for d in dim)
        a = a[tuple(slice(0, sizes[dim.index(d)]) if d in dim else slice(None) for d in range(a.ndim))]
        if all(a.shape[d] == s for d, s in zip(dim, sizes)):
            return a.copy()
        out_shape = list(a.shape)
        for d, s in zip(dim, sizes):
            out_shape[d] = s
        out = xp_of(x).zeros(out_shape, dtype=a.dtype)
        out[tuple(slice(0, n) for n in a.shape)] = a
        return out

    @staticmethod
    def backward(ctx, grad):
        return FftResize.apply(grad, dim=ctx.dim, sizes=ctx.old)


# ---- argument handling (PyTorch's checks and messages) --------------------------------------------


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _ADJOINT:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _check_tensor(x, op):
    if type(x) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _promote(x, require_complex):
    """Integers and bool go to the default float dtype; half precision is refused (as PyTorch
    does on the CPU); real inputs become complex when the transform needs it."""
    dt = x.dtype
    if not dt.is_complex:
        if not dt.is_floating_point:
            x = cast(x, _dt.get_default_dtype().np)
        elif dt.itemsize < 4:
            raise RuntimeError(f"Unsupported dtype {scalar_name(x)}")
        if require_complex:
            x = cast(x, np.result_type(x._data.dtype, np.complex64))
    return x


def _real_input(x, op):
    if x.is_complex():
        raise RuntimeError(f"{op} expects a real input tensor, but got {scalar_name(x)}")


def _one_dim(x, dim, n):
    """(dims, size) for the 1-D transforms."""
    if x._data.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, x._data.ndim)
    size = x._data.shape[d] if n is None else n
    if size < 1:
        raise RuntimeError(f"Invalid number of data points ({size}) specified")
    return (d,), size


def _shape_and_dims(x, s, dim):
    """PyTorch's canonical (sizes, dims) for the n-D transforms: s alone names the last len(s)
    dims, dim alone keeps the input's sizes, neither means every dim; -1 in s keeps a size."""
    nd = x._data.ndim
    if dim is not None:
        dim = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if nd == 0 and dim:
            raise IndexError(f"Dimension specified as {dim[0]} but tensor has no dimensions")
        dims = tuple(wrap_dim(d, nd) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = (s,) if isinstance(s, (int, np.integer)) else tuple(s)
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
        if dim is None:
            dims = tuple(range(nd - len(s), nd))
        sizes = tuple(x._data.shape[d] if n == -1 else int(n) for n, d in zip(s, dims))
    elif dim is None:
        dims, sizes = tuple(range(nd)), tuple(x._data.shape)
    else:
        sizes = tuple(x._data.shape[d] for d in dims)
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return sizes, dims


def _c2r_shape_and_dims(x, s, dim, op):
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    s_last = None if s is None else ((s,) if isinstance(s, (int, np.integer)) else tuple(s))[-1]
    last = 2 * (x._data.shape[dims[-1]] - 1) if s_last in (None, -1) else sizes[-1]
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    return sizes[:-1] + (last // 2 + 1,), dims, last


def _resize(x, dims, sizes):
    if tuple(x._data.shape[d] for d in dims) == tuple(sizes):
        return x
    return FftResize.apply(x, dim=tuple(dims), sizes=tuple(sizes))


def _out(result, out):
    if out is not None:
        out.copy_(result)
        return out
    return result


# ---- complex to complex ---------------------------------------------------------------------------


def _c2c(x, sizes, dims, norm, forward):
    if not dims:  # nothing to transform: the input as complex
        return _promote(x, True) if not x.is_complex() else FftC2C.apply(x, dim=(), norm=norm, forward=forward)
    if not x.is_complex():
        # A real signal: PyTorch's full (two-sided) r2c; the inverse is the conjugate of the
        # forward transform with the opposite scale.
        y = FftR2C.apply(_resize(_promote(x, False), dims, sizes), dim=dims,
                         norm=norm if forward else _ADJOINT[norm], onesided=False)
        return y if forward else y.conj()
    return FftC2C.apply(_resize(x, dims, sizes), dim=dims, norm=norm, forward=forward)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform along dim, cropped or zero-padded to n points."""
    _check_tensor(input, "fft")
    dims, size = _one_dim(input, dim, n)
    return _out(_c2c(input, (size,), dims, _norm(norm), True), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of fft (scaled by 1/n with the default norm="backward")."""
    _check_tensor(input, "ifft")
    dims, size = _one_dim(input, dim, n)
    return _out(_c2c(input, (size,), dims, _norm(norm), False), out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    _check_tensor(input, "fftn")
    sizes, dims = _shape_and_dims(input, s, dim)
    return _out(_c2c(input, sizes, dims, _norm(norm), True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    _check_tensor(input, "ifftn")
    sizes, dims = _shape_and_dims(input, s, dim)
    return _out(_c2c(input, sizes, dims, _norm(norm), False), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ifftn(input, s, dim, norm, out=out)


# ---- real to one-sided complex and back -------------------------------------------------------------


def _r2c(x, sizes, dims, norm, op):
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    x = _resize(_promote(x, False), dims, sizes)
    return FftR2C.apply(x, dim=dims, norm=norm, onesided=True)


def _c2r(x, sizes, dims, last, norm):
    x = _resize(_promote(x, True), dims, sizes)
    return FftC2R.apply(x, dim=dims, norm=norm, last_dim_size=last)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The non-negative frequencies (n // 2 + 1 of them) of the fft of a real signal."""
    _check_tensor(input, "rfft")
    _real_input(input, "rfft")
    dims, size = _one_dim(input, dim, n)
    return _out(_r2c(input, (size,), dims, _norm(norm), "rfft"), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of n points (default 2 * (input.size(dim) - 1))."""
    _check_tensor(input, "irfft")
    dims, _ = _one_dim(input, dim, None)
    last = 2 * (input._data.shape[dims[0]] - 1) if n is None else n
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    return _out(_c2r(input, (last // 2 + 1,), dims, last, _norm(norm)), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    _check_tensor(input, "rfftn")
    if input.is_complex():
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {scalar_name(input)}")
    sizes, dims = _shape_and_dims(input, s, dim)
    return _out(_r2c(input, sizes, dims, _norm(norm), "rfftn"), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    _check_tensor(input, "irfftn")
    sizes, dims, last = _c2r_shape_and_dims(input, s, dim, "irfftn")
    return _out(_c2r(input, sizes, dims, last, _norm(norm)), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


# ---- Hermitian signals: hfft(x) = irfft(conj(x)) and ihfft(x) = conj(rfft(x)), scales swapped ----------


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The fft of a Hermitian-symmetric signal given by its first half: a real output of n points."""
    _check_tensor(input, "hfft")
    dims, _ = _one_dim(input, dim, None)
    last = 2 * (input._data.shape[dims[0]] - 1) if n is None else n
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    return _out(_c2r(_promote(input, True).conj(), (last // 2 + 1,), dims, last, _ADJOINT[_norm(norm)]), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the one-sided ifft of a real signal."""
    _check_tensor(input, "ihfft")
    _real_input(input, "ihfft")
    dims, size = _one_dim(input, dim, n)
    return _out(_r2c(input, (size,), dims, _ADJOINT[_norm(norm)], "ihfft").conj(), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    _check_tensor(input, "hfftn")
    sizes, dims, last = _c2r_shape_and_dims(input, s, dim, "hfftn")
    return _out(_c2r(_promote(input, True).conj(), sizes, dims, last, _ADJOINT[_norm(norm)]), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    _check_tensor(input, "ihfftn")
    if input.is_complex():
        raise RuntimeError(f"ihfftn expects a real-valued input tensor, but got {scalar_name(input)}")
    sizes, dims = _shape_and_dims(input, s, dim)
    return _out(_r2c(input, sizes, dims, _ADJOINT[_norm(norm)], "ihfftn").conj(), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


# ---- frequencies and shifts -------------------------------------------------------------------------


def _freq(values, n, d, dtype, device, requires_grad, op):
    from rtx._tensor.ops.creation import _finish
    dt = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{op} requires a floating point or complex dtype")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    # Computed in float64 and rounded once, as numpy.fft does.
    return _finish((values(n) / (n * d) if n else np.zeros(0)).astype(dt.np), device, requires_grad)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point fft with sample spacing d: [0, 1, ..., -2, -1] / (n d)."""
    def values(n):
        k = np.arange(n, dtype=np.float64)
        k[(n + 1) // 2:] -= n
        return k
    return _out(_freq(values, n, d, dtype, device, requires_grad, "fftfreq"), out)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (n d)."""
    return _out(_freq(lambda n: np.arange(n // 2 + 1, dtype=np.float64), n, d, dtype, device, requires_grad,
                      "rfftfreq"), out)


def _shift_dims(x, dim):
    if dim is None:
        return tuple(range(x._data.ndim))
    return (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)


def fftshift(input, dim=None):
    """Move the zero frequency to the centre (a roll by size // 2 along each dim)."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """The inverse of fftshift (a roll by (size + 1) // 2 along each dim)."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return roll(input, [(input.shape[d] + 1) // 2 for d in dims], dims)
