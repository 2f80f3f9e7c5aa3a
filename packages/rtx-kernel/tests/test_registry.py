"""The registry: every kernel the brief promises, each with a reference, a CPU and a CUDA path
and samples for tests and benchmarks; the public names are the registered kernels."""
import inspect
import subprocess
import sys

import numpy as np

import rtx.kernel as K
from rtx.kernel import KERNELS

REQUIRED = {"softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "layer_norm",
            "layer_norm_backward", "rms_norm", "rms_norm_backward", "gelu", "gelu_backward", "erf", "erfc",
            "erfinv", "lgamma", "digamma", "adam_step", "sgd_step", "bias_act", "bias_act_backward"}


def test_every_kernel_is_registered_and_public():
    assert REQUIRED <= set(KERNELS)
    for name, kernel in KERNELS.items():
        assert getattr(K, name) is kernel
        assert callable(kernel.reference) and callable(kernel.cpu) and callable(kernel.cuda)
        assert kernel.__doc__, f"{name}: the reference's docstring is the kernel's documentation"
        assert inspect.signature(kernel) == inspect.signature(kernel.reference)


def test_every_kernel_has_test_and_bench_samples():
    for kernel in KERNELS.values():
        for size in ("test", "bench"):
            first = next(iter(kernel.samples(np.random.default_rng(0), np.float32, size)), None)
            assert first is not None and first.label, f"{kernel.name} has no labelled {size} samples"


def test_importing_rtx_kernel_does_not_import_cupy():
    # (The layer rule, nothing above rtx.runtime, is the import-linter contract's job: the
    # root package rtx/__init__.py imports the tensor core, so sys.modules cannot tell.)
    code = "import sys, rtx.kernel; assert 'cupy' not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
