"""The glibc malloc settings applied on the first CPU convolution (conv._keep_freed_memory):
freed multi-megabyte arrays are reused without new page faults, and the user's own malloc
settings or RTX_KEEP_FREED_MEMORY=0 leave malloc alone."""
import ctypes
import sys

import numpy as np
import pytest

from rtx.nn._functional import conv

resource = pytest.importorskip("resource")


def _glibc():
    try:
        return hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc only")


def _faults_per_alloc(nbytes, times=5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        a = np.empty(nbytes, np.uint8)
        a.fill(1)  # touch every page
        del a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / times


def test_freed_arrays_are_reused_without_page_faults(monkeypatch):
    for name in ("RTX_KEEP_FREED_MEMORY", "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        monkeypatch.delenv(name, raising=False)
    assert conv._keep_freed_memory() is True
    nbytes = 8 << 20  # a fresh mmap each time: ~70 faults per array here (NumPy asks for huge pages)
    _faults_per_alloc(nbytes, 1)  # warm: the heap grows once
    assert _faults_per_alloc(nbytes) < 10


@pytest.mark.parametrize("env", [{"RTX_KEEP_FREED_MEMORY": "0"}, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"},
                                 {"MALLOC_MMAP_THRESHOLD_": "131072"}, {"MALLOC_TRIM_THRESHOLD_": "0"}])
def test_user_malloc_settings_win(monkeypatch, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert conv._keep_freed_memory() is False
