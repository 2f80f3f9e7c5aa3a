"""Every registered kernel: the fast CPU path and (with a GPU) the CUDA path against the NumPy
reference, on each kernel's own samples, in float32 and float64."""
import numpy as np
import pytest

import rtx.runtime
from rtx.kernel import KERNELS

DTYPES = [np.float32, np.float64]
CASES = [(name, dtype) for name in sorted(KERNELS) for dtype in DTYPES]
IDS = [f"{name}-{np.dtype(dtype).name}" for name, dtype in CASES]


def assert_outputs_close(kernel, got, want, dtype, label):
    rtol, atol = kernel.tolerance(dtype)
    assert len(got) == len(want), f"{kernel.name} [{label}]: {len(got)} outputs, reference gave {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{kernel.name} [{label}] output {i}: shape {g.shape}, reference {w.shape}"
        assert g.dtype == w.dtype, f"{kernel.name} [{label}] output {i}: dtype {g.dtype}, reference {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{kernel.name} [{label}] output {i}")


@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_cpu_matches_reference(name, dtype):
    kernel = KERNELS[name]
    for sample in kernel.samples(np.random.default_rng(0), dtype, "test"):
        want = kernel.run(kernel.reference, sample)
        got = kernel.run(kernel.cpu, sample)
        assert_outputs_close(kernel, got, want, dtype, sample.label)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_public_call_dispatches_to_cpu_path(name):
    kernel = KERNELS[name]
    sample = next(iter(kernel.samples(np.random.default_rng(1), np.float64, "test")))
    want = kernel.run(kernel.cpu, sample)
    got = kernel.run(kernel, sample)
    assert_outputs_close(kernel, got, want, np.float64, sample.label)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_half_inputs_are_computed_in_float32(name):
    kernel = KERNELS[name]
    sample = next(iter(kernel.samples(np.random.default_rng(2), np.float32, "test")))
    half = type(sample)(tuple(a.astype(np.float16) if isinstance(a, np.ndarray) else a for a in sample.args),
                        {k: v.astype(np.float16) if isinstance(v, np.ndarray) else v for k, v in sample.kwargs.items()},
                        sample.label)
    got = kernel.run(kernel, half)
    want = kernel.run(kernel.cpu, type(sample)(
        tuple(a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in half.args),
        {k: v.astype(np.float32) if isinstance(v, np.ndarray) else v for k, v in half.kwargs.items()}))
    for g, w in zip(got, want):
        assert g.dtype == np.float16
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float16).astype(np.float32), rtol=1e-3,
                                   atol=1e-3, equal_nan=True)


def test_non_arrays_are_rejected_with_a_clear_error():
    with pytest.raises(TypeError, match="numpy.ndarray or cupy.ndarray"):
        KERNELS["softmax"]([1.0, 2.0])


@pytest.mark.skipif(not rtx.runtime.cuda.is_available(), reason="needs CUDA (CuPy and a GPU)")
@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_cuda_matches_reference(name, dtype):
    # The same check as `python -m rtx.kernel.gpu_check --quick`: every test sample through the
    # public call (which dispatches CuPy arrays to the CUDA path) against the float64 reference.
    from rtx.kernel import gpu_check
    _, failures = gpu_check.check_kernel(KERNELS[name], dtype, gpu_check.CudaBackend(), quick=True)
    assert not failures, "\n".join(failures)


def test_bfloat16_inputs_are_computed_in_float32():
    from rtx.runtime.dtypes import bfloat16
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(bfloat16.np)
    y = KERNELS["softmax"](x)
    assert y.dtype == bfloat16.np
    np.testing.assert_allclose(y.astype(np.float32), KERNELS["softmax"].reference(x.astype(np.float32)), rtol=1e-2)
    p, g = np.ones(5, bfloat16.np), np.ones(5, bfloat16.np)
    m, v = np.zeros(5, bfloat16.np), np.zeros(5, bfloat16.np)
    KERNELS["adam_step"](p, g, m, v, step=1, lr=0.5, beta1=0.9, beta2=0.999, eps=1e-8)
    assert p.dtype == bfloat16.np
    np.testing.assert_allclose(p.astype(np.float32), 0.5, rtol=1e-2)      # written back in place
    np.testing.assert_allclose(m.astype(np.float32), 0.1, rtol=1e-2)
