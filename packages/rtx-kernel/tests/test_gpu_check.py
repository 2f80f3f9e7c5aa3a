"""gpu_check's own logic, run with NumPy standing in for the device (the real run needs a GPU)."""
import numpy as np
import pytest

import rtx.runtime
from rtx.kernel import KERNELS, gpu_check


def test_checks_and_table_with_a_host_stand_in():
    rows, failures = gpu_check.run_checks(gpu_check.HostBackend(), ["softmax", "adam_step", "erf", "layer_norm"],
                                          ("float32",), timed="test")
    assert failures == []
    assert {r.kernel for r in rows} == {"softmax", "adam_step", "erf", "layer_norm"}
    assert all(r.error <= 1 for r in rows)
    table = gpu_check.format_table(rows, "numpy")
    assert table.splitlines()[0].split()[0] == "kernel" and len(table.splitlines()) == len(rows) + 1


def test_a_wrong_kernel_is_reported():
    kernel = KERNELS["softmax"]
    broken = type(kernel)("softmax", kernel.reference, lambda x, axis=-1: kernel.cpu(x, axis) * 1.001, kernel.cuda,
                          kernel.samples)
    _, failures = gpu_check.check_kernel(broken, np.float64, gpu_check.HostBackend(), quick=True)
    assert failures and "error" in failures[0]


@pytest.mark.skipif(rtx.runtime.cuda.is_available(), reason="checks the message on machines without a GPU")
def test_main_says_when_there_is_no_gpu(capsys):
    assert gpu_check.main([]) == 2
    assert "CUDA is not available" in capsys.readouterr().out
