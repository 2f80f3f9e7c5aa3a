"""The first CPU convolution applies rtx.runtime.threads' malloc setting (freed multi-megabyte
arrays reused without page faults), and RTX_KEEP_FREED_MEMORY=0 leaves malloc alone. In fresh
processes: the setting is process-wide and applied once. The setting's own tests are in
packages/rtx-runtime/tests/test_malloc_settings.py."""
import ctypes
import os
import subprocess
import sys

import pytest

pytest.importorskip("resource")


def _glibc():
    try:
        return hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc only")

_CHILD = """
import resource, numpy as np, rtx, rtx.nn.functional as F
from rtx.runtime import threads
assert not threads._malloc["applied"]  # importing rtx.nn changes nothing
F.conv2d(rtx.randn(2, 3, 8, 8), rtx.randn(4, 3, 3, 3))
def faults(nbytes=8 << 20, times=5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        a = np.empty(nbytes, np.uint8); a.fill(1); del a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / times
faults(times=1)
print(threads._malloc["applied"], threads.keep_freed_memory(), faults())
"""


@pytest.mark.parametrize("opt_out", [False, True])
def test_first_convolution_applies_the_malloc_setting_unless_opted_out(opt_out):
    env = {k: v for k, v in os.environ.items()
           if k not in ("RTX_KEEP_FREED_MEMORY", "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    if opt_out:
        env["RTX_KEEP_FREED_MEMORY"] = "0"
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    asked, applied, faults = out.stdout.split()
    assert asked == "True"
    if opt_out:
        assert applied == "False" and float(faults) > 30  # malloc's default: a fresh mmap per array
    else:
        assert applied == "True" and float(faults) < 10
