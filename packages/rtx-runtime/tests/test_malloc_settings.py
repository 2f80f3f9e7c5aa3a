"""The glibc malloc setting (rtx.runtime.threads.keep_freed_memory), applied by the first CPU
kernel that asks for workers: freed multi-megabyte arrays are reused without new page faults,
and the user's own malloc settings or RTX_KEEP_FREED_MEMORY=0 leave malloc alone."""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

from rtx.runtime import threads

resource = pytest.importorskip("resource")


def _glibc():
    try:
        return hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc only")
_OPT_OUTS = [{"RTX_KEEP_FREED_MEMORY": "0"}, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"},
             {"MALLOC_MMAP_THRESHOLD_": "131072"}, {"MALLOC_TRIM_THRESHOLD_": "0"}]
_SETTINGS = ("RTX_KEEP_FREED_MEMORY", "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def _faults_per_alloc(nbytes, times=5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        a = np.empty(nbytes, np.uint8)
        a.fill(1)  # touch every page
        del a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / times


def test_freed_arrays_are_reused_without_page_faults(monkeypatch):
    for name in _SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert threads._apply_malloc_settings() is True
    nbytes = 8 << 20  # a fresh mmap each time: ~70 faults per array here (NumPy asks for huge pages)
    _faults_per_alloc(nbytes, 1)  # warm: the heap grows once
    assert _faults_per_alloc(nbytes) < 10


@pytest.mark.parametrize("env", _OPT_OUTS)
def test_user_malloc_settings_win(monkeypatch, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert threads._apply_malloc_settings() is False


_CHILD = """
import resource, numpy as np
from rtx.runtime import threads
threads.cpu_workers()  # what every CPU kernel asks first
def faults(nbytes=8 << 20, times=5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        a = np.empty(nbytes, np.uint8); a.fill(1); del a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / times
faults(times=1)
print(threads.keep_freed_memory(), faults())
"""


@pytest.mark.parametrize("env", [{}] + _OPT_OUTS[:2], ids=["default", "opt-out", "own-tunables"])
def test_first_kernel_applies_the_setting_once_unless_opted_out(env):
    # a fresh process: the setting is process-wide and applied once
    base = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
    out = subprocess.run([sys.executable, "-c", _CHILD], env={**base, **env}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    applied, faults = out.stdout.split()
    if env:
        assert applied == "False" and float(faults) > 30  # malloc's default: a fresh mmap per array
    else:
        assert applied == "True" and float(faults) < 10
