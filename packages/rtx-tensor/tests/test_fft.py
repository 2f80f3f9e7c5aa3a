"""rtx.fft: values against numpy.fft (scipy.fft for the n-D Hermitian transforms NumPy lacks) for
every function, norm, crop/pad, dims and dtype; gradients by finite differences and double
backward in float64 (complex inputs as a + ib with real leaves, complex outputs as their real and
imaginary parts, so the full real Jacobian is checked); vector-Jacobian products against torch's
(fixture written once by tests/data/make_fft_fixtures.py); fftfreq/rfftfreq/shifts against NumPy;
PyTorch's errors."""
import json
import pathlib

import numpy as np
import pytest
import scipy.fft as sfft

import rtx
import rtx.fft as F
from rtx.autograd import gradcheck, gradgradcheck
from rtx.testing import assert_close, devices

NORMS = [None, "backward", "forward", "ortho"]
rng = np.random.default_rng(18)


def sample(shape, dtype):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _np_norm(norm):
    return "backward" if norm is None else norm


def _full(s, x, axes):
    # numpy wants explicit sizes where PyTorch accepts -1 ("keep this dim's size")
    return None if s is None else [x.shape[a] if n == -1 else n for n, a in zip(s, axes)]


def _axes(x, s, dim):
    if dim is not None:
        return [d % x.ndim for d in ([dim] if isinstance(dim, int) else dim)]
    return list(range(x.ndim - len(s), x.ndim)) if s is not None else list(range(x.ndim))


def np_nd(fn):
    def ref(x, s=None, dim=None, norm=None):
        axes = _axes(x, s, dim)
        return fn(x, s=_full(s, x, axes), axes=axes, norm=_np_norm(norm))
    return ref


def np_c2r_nd(fn):
    def ref(x, s=None, dim=None, norm=None):
        axes = _axes(x, s, dim)
        full = _full(s, x, axes)
        if full is not None and s[-1] == -1:
            full[-1] = 2 * (x.shape[axes[-1]] - 1)
        return fn(x, s=full, axes=axes, norm=_np_norm(norm))
    return ref


def np_1d(fn):
    return lambda x, n=None, dim=-1, norm=None: fn(x, n=n, axis=dim, norm=_np_norm(norm))


def np_2d(ref):
    return lambda x, s=None, dim=(-2, -1), norm=None: ref(x, s=s, dim=dim, norm=norm)


# (name, rtx function, reference, input shape, input kind "r" (real only) or "c" (any), kwargs)
VALUE_CASES = [
    ("fft", F.fft, np_1d(np.fft.fft), (3, 7), "c", {}),
    ("fft_crop", F.fft, np_1d(np.fft.fft), (3, 7), "c", {"n": 4}),
    ("fft_pad_dim0", F.fft, np_1d(np.fft.fft), (3, 7), "c", {"n": 6, "dim": 0}),
    ("fft_negdim", F.fft, np_1d(np.fft.fft), (2, 5, 3), "c", {"dim": -2}),
    ("ifft", F.ifft, np_1d(np.fft.ifft), (3, 7), "c", {}),
    ("ifft_crop_dim0", F.ifft, np_1d(np.fft.ifft), (5, 4), "c", {"n": 2, "dim": 0}),
    ("ifft_pad", F.ifft, np_1d(np.fft.ifft), (3, 7), "c", {"n": 10}),
    ("rfft", F.rfft, np_1d(np.fft.rfft), (3, 8), "r", {}),
    ("rfft_odd_crop", F.rfft, np_1d(np.fft.rfft), (3, 8), "r", {"n": 5}),
    ("rfft_pad_dim0", F.rfft, np_1d(np.fft.rfft), (3, 4), "r", {"n": 7, "dim": 0}),
    ("irfft", F.irfft, np_1d(np.fft.irfft), (3, 5), "c", {}),
    ("irfft_odd", F.irfft, np_1d(np.fft.irfft), (3, 5), "c", {"n": 9}),
    ("irfft_crop", F.irfft, np_1d(np.fft.irfft), (3, 5), "c", {"n": 4}),
    ("irfft_pad_dim0", F.irfft, np_1d(np.fft.irfft), (3, 4), "c", {"n": 11, "dim": 0}),
    ("hfft", F.hfft, np_1d(np.fft.hfft), (3, 5), "c", {}),
    ("hfft_odd", F.hfft, np_1d(np.fft.hfft), (3, 5), "c", {"n": 7}),
    ("hfft_crop_dim0", F.hfft, np_1d(np.fft.hfft), (6, 2), "c", {"n": 3, "dim": 0}),
    ("ihfft", F.ihfft, np_1d(np.fft.ihfft), (3, 8), "r", {}),
    ("ihfft_odd_pad", F.ihfft, np_1d(np.fft.ihfft), (3, 8), "r", {"n": 11}),
    ("fftn_all", F.fftn, np_nd(np.fft.fftn), (2, 3, 4), "c", {}),
    ("fftn_s", F.fftn, np_nd(np.fft.fftn), (2, 3, 4), "c", {"s": (5, 2)}),
    ("fftn_dim", F.fftn, np_nd(np.fft.fftn), (2, 3, 4), "c", {"dim": (0, -1)}),
    ("fftn_s_dim_keep", F.fftn, np_nd(np.fft.fftn), (2, 3, 4), "c", {"s": (-1, 6), "dim": (2, 0)}),
    ("fftn_one_dim_int", F.fftn, np_nd(np.fft.fftn), (2, 3, 4), "c", {"dim": 1}),
    ("ifftn_all", F.ifftn, np_nd(np.fft.ifftn), (2, 3, 4), "c", {}),
    ("ifftn_s_dim", F.ifftn, np_nd(np.fft.ifftn), (2, 3, 4), "c", {"s": (3, 3), "dim": (-1, 0)}),
    ("fft2", F.fft2, np_2d(np_nd(np.fft.fftn)), (2, 3, 4), "c", {}),
    ("fft2_s", F.fft2, np_2d(np_nd(np.fft.fftn)), (3, 4), "c", {"s": (2, 6)}),
    ("ifft2", F.ifft2, np_2d(np_nd(np.fft.ifftn)), (2, 3, 4), "c", {}),
    ("rfftn_all", F.rfftn, np_nd(np.fft.rfftn), (2, 3, 6), "r", {}),
    ("rfftn_s_dim", F.rfftn, np_nd(np.fft.rfftn), (2, 3, 6), "r", {"s": (5, 3), "dim": (2, 1)}),
    ("rfft2", F.rfft2, np_2d(np_nd(np.fft.rfftn)), (2, 3, 5), "r", {}),
    ("irfftn_all", F.irfftn, np_c2r_nd(np.fft.irfftn), (2, 3, 4), "c", {}),
    ("irfftn_s", F.irfftn, np_c2r_nd(np.fft.irfftn), (2, 3, 4), "c", {"s": (4, 7)}),
    ("irfftn_dim_keep", F.irfftn, np_c2r_nd(np.fft.irfftn), (2, 3, 4), "c", {"s": (3, -1), "dim": (-1, 1)}),
    ("irfft2", F.irfft2, np_2d(np_c2r_nd(np.fft.irfftn)), (3, 4), "c", {}),
    ("irfft2_s", F.irfft2, np_2d(np_c2r_nd(np.fft.irfftn)), (2, 3, 4), "c", {"s": (5, 5)}),
    ("hfftn", F.hfftn, np_c2r_nd(sfft.hfftn), (2, 3, 4), "c", {}),
    ("hfftn_s_dim", F.hfftn, np_c2r_nd(sfft.hfftn), (2, 3, 4), "c", {"s": (4, 5), "dim": (2, 0)}),
    ("hfft2", F.hfft2, np_2d(np_c2r_nd(sfft.hfftn)), (3, 4), "c", {"s": (3, 7)}),
    ("ihfftn", F.ihfftn, np_nd(sfft.ihfftn), (2, 3, 4), "r", {}),
    ("ihfftn_s", F.ihfftn, np_nd(sfft.ihfftn), (2, 3, 4), "r", {"s": (2, 5)}),
    ("ihfft2", F.ihfft2, np_2d(np_nd(sfft.ihfftn)), (2, 4, 3), "r", {}),
]

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
_OUT_DTYPE = {  # (input dtype, the output is complex) -> output dtype, PyTorch's rule
    (np.float32, True): np.complex64, (np.float64, True): np.complex128,
    (np.complex64, True): np.complex64, (np.complex128, True): np.complex128,
    (np.float32, False): np.float32, (np.float64, False): np.float64,
    (np.complex64, False): np.float32, (np.complex128, False): np.float64,
}


# Real-input transforms (kind "r") take real dtypes only; complex input is an error tested below.
_CASE_DTYPES = [pytest.param(c, d, id=f"{c[0]}-{np.dtype(d).name}") for c in VALUE_CASES for d in DTYPES
                if c[4] == "c" or np.dtype(d).kind == "f"]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("case,dtype", _CASE_DTYPES)
def test_values(case, dtype, norm, device):
    name, fn, ref, shape, kind, kwargs = case
    x = sample(shape, dtype)
    out = fn(rtx.tensor(x, device=device), norm=norm, **kwargs)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    expected = ref(x.astype(wide), norm=norm, **kwargs)
    assert out.device.type == device
    assert np.dtype(out.dtype.np) == _OUT_DTYPE[(dtype, np.iscomplexobj(expected))]
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    assert_close(out.cpu(), expected, rtol=tol, atol=tol, check_dtype=False)


@pytest.mark.parametrize("fn,expected", [(F.fft, rtx.complex64), (F.ifft, rtx.complex64), (F.rfft, rtx.complex64),
                                         (F.irfft, rtx.float32), (F.hfft, rtx.float32), (F.ihfft, rtx.complex64),
                                         (F.fftn, rtx.complex64), (F.irfftn, rtx.float32)])
def test_integer_and_bool_inputs_promote_to_the_default_float(fn, expected):
    x = np.array([3, 1, 4, 1, 5, 9])
    out = fn(rtx.tensor(x))
    assert out.dtype == expected
    ref = {F.fft: np.fft.fft, F.ifft: np.fft.ifft, F.rfft: np.fft.rfft, F.irfft: np.fft.irfft, F.hfft: np.fft.hfft,
           F.ihfft: np.fft.ihfft, F.fftn: np.fft.fftn, F.irfftn: np.fft.irfftn}[fn]
    assert_close(out, ref(x.astype(np.float64)), rtol=1e-5, atol=1e-5, check_dtype=False)
    assert fn(rtx.tensor([True, False, True, True])).dtype == expected
    prev = rtx.get_default_dtype()
    rtx.set_default_dtype(rtx.float64)
    try:
        assert fn(rtx.tensor(x)).dtype == (rtx.complex128 if expected == rtx.complex64 else rtx.float64)
    finally:
        rtx.set_default_dtype(prev)


def test_zero_dim_tensor_with_no_dims_to_transform():
    out = F.fftn(rtx.tensor(3.0))
    assert out.dtype == rtx.complex64 and out.item() == 3 + 0j
    assert_close(F.fftn(rtx.tensor([[1.0, 2.0]]), dim=()), np.array([[1, 2]], dtype=np.complex64))


def test_round_trips():
    x = sample((4, 6), np.float64)
    z = sample((4, 6), np.complex128)
    t, c = rtx.tensor(x), rtx.tensor(z)
    for norm in NORMS:
        assert_close(F.ifft(F.fft(c, norm=norm), norm=norm), z)
        assert_close(F.irfft(F.rfft(t, norm=norm), n=6, norm=norm), x)
        assert_close(F.irfftn(F.rfftn(t, norm=norm), s=(4, 6), norm=norm), x)
        assert_close(F.hfft(F.ihfft(t, norm=norm), n=6, norm=norm), x)
        assert_close(F.hfftn(F.ihfftn(t, norm=norm), s=(4, 6), norm=norm), x)


def test_out_argument():
    x = rtx.tensor(sample((5,), np.complex128))
    out = rtx.empty(5, dtype=rtx.complex128)
    res = F.fft(x, out=out)
    assert res is out
    assert_close(out, np.fft.fft(x.numpy()))


# ---- gradients: finite differences in float64, double backward -------------------------------------------


def _real_view(fn, complex_input, kwargs):
    """fn as a map between real tensors: a complex input is a + ib with real leaves a and b, and a
    complex output is returned as (real, imag). Checking its full Jacobian checks the complex vjp."""
    def f(*parts):
        x = parts[0] + parts[1] * 1j if complex_input else parts[0]
        y = fn(x, **kwargs)
        return (y.real, y.imag) if y.is_complex() else y
    return f


GRAD_CASES = [  # (rtx function, input shape, complex input, kwargs)
    (F.fft, (2, 5), True, {}),
    (F.fft, (2, 5), False, {"n": 7, "norm": "ortho"}),
    (F.fft, (4, 3), True, {"n": 2, "dim": 0, "norm": "forward"}),
    (F.ifft, (2, 5), True, {"n": 6}),
    (F.ifft, (5,), False, {"norm": "forward"}),
    (F.rfft, (2, 6), False, {}),
    (F.rfft, (2, 6), False, {"n": 5, "norm": "ortho"}),
    (F.rfft, (3, 2), False, {"n": 4, "dim": 0, "norm": "forward"}),
    (F.irfft, (2, 4), True, {}),
    (F.irfft, (2, 4), True, {"n": 7, "norm": "ortho"}),
    (F.irfft, (2, 4), True, {"n": 3, "norm": "forward"}),
    (F.hfft, (2, 4), True, {"n": 5}),
    (F.hfft, (4,), True, {"norm": "ortho"}),
    (F.ihfft, (2, 6), False, {}),
    (F.ihfft, (7,), False, {"n": 5, "norm": "forward"}),
    (F.fftn, (2, 3, 2), True, {"s": (3, 4), "dim": (0, 2)}),
    (F.ifft2, (3, 4), True, {"norm": "ortho"}),
    (F.rfftn, (2, 3, 4), False, {}),
    (F.rfft2, (3, 5), False, {"s": (2, 6), "norm": "forward"}),
    (F.irfftn, (3, 2, 3), True, {"dim": (0, 2)}),
    (F.irfft2, (3, 3), True, {"s": (4, 5), "norm": "ortho"}),
    (F.hfftn, (2, 3), True, {"s": (3, 4)}),
    (F.ihfftn, (3, 4), False, {"norm": "ortho"}),
    (F.ihfft2, (2, 5), False, {"s": (3, 4)}),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: f"{c[0].__name__}-{c[1]}-{c[3]}")
def test_gradcheck_and_gradgradcheck(case):
    fn, shape, is_complex, kwargs = case
    parts = [rtx.tensor(rng.standard_normal(shape), requires_grad=True) for _ in range(2 if is_complex else 1)]
    f = _real_view(fn, is_complex, kwargs)
    assert gradcheck(f, parts, atol=1e-6, rtol=1e-5)
    assert gradgradcheck(f, parts, atol=1e-6, rtol=1e-5)


_FIXTURE = np.load(pathlib.Path(__file__).parent / "data" / "fft_torch_grads.npz")


@pytest.mark.parametrize("name", sorted({k.split("__")[0] for k in _FIXTURE.files}))
def test_vjp_matches_torch(name):
    """PyTorch's outputs and input gradients for a complex (or real) cotangent v."""
    call = json.loads(str(_FIXTURE[f"{name}__call"]))
    x = rtx.tensor(_FIXTURE[f"{name}__x"], requires_grad=True)
    y = getattr(F, call["fn"])(x, **call["kwargs"])
    assert_close(y, _FIXTURE[f"{name}__y"], rtol=1e-10, atol=1e-12)
    y.backward(rtx.tensor(_FIXTURE[f"{name}__v"]))
    assert x.grad.dtype == x.dtype
    assert_close(x.grad, _FIXTURE[f"{name}__g"], rtol=1e-10, atol=1e-12)


def test_grad_fn_names_follow_pytorch():
    x = rtx.randn(2, 4, requires_grad=True)
    assert F.fft(x).grad_fn.name() == "FftR2CBackward0"
    assert F.rfft(x).grad_fn.name() == "FftR2CBackward0"
    assert F.irfft(x).grad_fn.name() == "FftC2RBackward0"
    z = (x * 1j).detach().requires_grad_(True)
    assert F.fft(z).grad_fn.name() == "FftC2CBackward0"


def test_no_graph_without_grad():
    x = rtx.randn(8)
    assert F.rfft(x).grad_fn is None
    with rtx.no_grad():
        assert F.fft(rtx.randn(8, requires_grad=True)).grad_fn is None


@pytest.mark.parametrize("device", devices())
def test_backward_on_every_device(device):
    """The same vjp on each device as on the CPU (cuFFT on CUDA)."""
    x = sample((3, 6), np.float64)
    v = sample((3, 4), np.complex128)
    grads = []
    for dev in ("cpu", device):
        t = rtx.tensor(x, device=dev, requires_grad=True)
        F.rfft(t, n=7, norm="ortho").backward(rtx.tensor(v, device=dev))
        grads.append(t.grad.cpu().numpy())
    assert_close(grads[1], grads[0], rtol=1e-10, atol=1e-12)


# ---- frequencies and shifts ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.1, 3])
def test_fftfreq_rfftfreq(n, d):
    assert_close(F.fftfreq(n, d, dtype=rtx.float64), np.fft.fftfreq(n, d))
    assert_close(F.rfftfreq(n, d, dtype=rtx.float64), np.fft.rfftfreq(n, d))
    f = F.fftfreq(n, d)
    assert f.dtype == rtx.float32 and f.device.type == "cpu"
    assert_close(f, np.fft.fftfreq(n, d), rtol=1e-6, atol=1e-7, check_dtype=False)
    assert_close(F.rfftfreq(n, d), np.fft.rfftfreq(n, d), rtol=1e-6, atol=1e-7, check_dtype=False)


@pytest.mark.parametrize("device", devices())
def test_fftfreq_kwargs(device):
    f = F.fftfreq(4, device=device, requires_grad=True)
    assert f.device.type == device and f.requires_grad
    assert F.fftfreq(0).shape == (0,)
    with pytest.raises(RuntimeError, match="fftfreq requires a floating point or complex dtype"):
        F.fftfreq(4, dtype=rtx.int64)
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        F.fftfreq(-1)


@pytest.mark.parametrize("shape,dim", [((5,), None), ((4, 6), None), ((4, 5), 1), ((3, 4, 5), (0, 2)), ((3, 4, 5), -1)])
def test_shifts(shape, dim):
    x = rng.standard_normal(shape)
    t = rtx.tensor(x, requires_grad=True)
    assert_close(F.fftshift(t, dim), np.fft.fftshift(x, dim))
    assert_close(F.ifftshift(t, dim), np.fft.ifftshift(x, dim))
    assert_close(F.ifftshift(F.fftshift(t, dim), dim), x)
    # A permutation: its gradient is the inverse permutation of the cotangent.
    w = rng.standard_normal(shape)
    (F.fftshift(t, dim) * rtx.tensor(w)).sum().backward()
    assert_close(t.grad, np.fft.ifftshift(w, dim))


# ---- errors, in PyTorch's words -----------------------------------------------------------------------


def test_errors():
    x = rtx.randn(4)
    z = rtx.randn(4, 4, dtype=rtx.complex64)
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        F.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "Ortho"'):
        F.rfftn(x, norm="Ortho")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.fft(x, n=0)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(-1\) specified"):
        F.ifft(z, n=-1)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.irfft(rtx.randn(1))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.fftn(rtx.randn(3, 4), s=(0, -1))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        F.fft(x, dim=1)
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got -2\)"):
        F.fft2(x)
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no dimensions"):
        F.fft(rtx.tensor(3.0))
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got ComplexFloat"):
        F.rfft(z)
    with pytest.raises(RuntimeError, match="ihfft expects a real input tensor, but got ComplexFloat"):
        F.ihfft(z)
    with pytest.raises(RuntimeError, match="rfftn expects a real-valued input tensor, but got ComplexFloat"):
        F.rfft2(z)
    with pytest.raises(RuntimeError, match="ihfftn expects a real-valued input tensor, but got ComplexFloat"):
        F.ihfftn(z)
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        F.fftn(z, dim=(0, -2))
    with pytest.raises(RuntimeError, match="When given, dim and shape arguments must have the same length"):
        F.fftn(z, s=(2, 3), dim=(0,))
    with pytest.raises(RuntimeError, match="Got shape with 3 values but input tensor only has 2 dimensions."):
        F.fftn(z, s=(2, 3, 4))
    with pytest.raises(RuntimeError, match="irfftn must transform at least one axis"):
        F.irfftn(z, dim=())
    with pytest.raises(RuntimeError, match="rfftn must transform at least one axis"):
        F.rfftn(z.real, dim=())
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        F.fft(x.half())
    with pytest.raises(TypeError, match="argument 'input' must be Tensor"):
        F.fft(np.ones(4))


def test_module_is_reachable_as_torch_fft():
    import importlib
    assert rtx.fft is F and importlib.import_module("rtx.fft") is F
    from rtx.fft import fftshift, rfft  # noqa: F401
