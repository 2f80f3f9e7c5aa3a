"""What a PyTorch script reaches after a bare `import torch`: lazily loaded submodules, backend
flags, accelerator queries, device predicates, global switches; and `import rtx` stays cheap."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rtx


def _run(code):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_submodules_are_reachable_after_a_bare_import():
    r = _run("import rtx\n"
             "print(rtx.utils.data.DataLoader.__name__, rtx.utils.checkpoint.checkpoint.__name__,"
             " rtx.nn.Linear.__name__, rtx.optim.SGD.__name__, rtx.autograd.grad.__name__,"
             " rtx.multiprocessing.spawn.__name__, rtx.backends.cudnn.enabled, rtx.accelerator.is_available(),"
             " rtx.linalg.norm.__name__, rtx.cuda.is_available(), rtx.amp.autocast.__name__)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["DataLoader", "checkpoint", "Linear", "SGD", "grad", "spawn", "True", "False",
                                "norm", "False", "autocast"]


def test_import_rtx_loads_nothing_heavy_and_stays_fast(tmp_path):
    # CPU time, not wall time: other processes on a busy machine do not count against us. With a warm
    # bytecode cache, as an installed wheel has (this machine sets PYTHONDONTWRITEBYTECODE=1, which
    # would compile every module at every import: a cost no user pays after the first import).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONWARNINGS="ignore", PYTHONPYCACHEPREFIX=str(tmp_path))
    code = ("import sys, time\nt = time.process_time()\nimport {m}\nprint(time.process_time() - t)\n"
            "print(' '.join(sorted(sys.modules)))")

    def run(m):
        r = subprocess.run([sys.executable, "-c", code.format(m=m)], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        seconds, mods = r.stdout.splitlines()
        return float(seconds), set(mods.split())

    # Loaded on first use only: the subpackages, and what the core needs only on some paths
    # (numpy.random until a random op runs, json until save/load, difflib/traceback for messages).
    heavy = {"rtx.nn", "rtx.data", "rtx.optim", "rtx.multiprocessing", "rtx.backends", "rtx.accelerator",
             "rtx.distributions", "rtx.utils.data", "cupy", "scipy", "ml_dtypes", "safetensors", "multiprocessing",
             "numpy.random", "json", "difflib", "traceback", "string", "subprocess"}
    run("rtx"), run("numpy")  # fill the bytecode cache
    rtx_t, np_t = [], []
    for _ in range(5):
        seconds, mods = run("rtx")
        assert not heavy & mods, heavy & mods
        rtx_t.append(seconds)
        np_t.append(run("numpy")[0])
    # rtx's own share (numpy's import excluded: it depends on the machine), measured 0.03-0.06 s
    assert min(rtx_t) - min(np_t) < 0.1, (rtx_t, np_t)
    # the bound on the whole import, NumPy included (measured 0.15 s CPU here)
    assert min(rtx_t) < 0.25, (rtx_t, np_t)


def test_a_missing_utils_submodule_is_an_attribute_error():
    assert not hasattr(rtx.utils, "no_such_module")
    with pytest.raises(AttributeError, match="rtx.utils' has no attribute 'no_such_module'"):
        rtx.utils.no_such_module  # noqa: B018


def test_device_predicates():
    t = rtx.ones(2)
    assert t.is_cpu and not t.is_cuda and t.get_device() == -1
    for name in ("is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_sparse_csr", "is_mkldnn",
                 "is_vulkan", "is_ipu", "is_hpu", "is_mtia", "is_maia", "is_nested"):
        assert getattr(t, name) is False, name


def test_backends_flags_are_stored_and_honest():
    b = rtx.backends
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.cudnn.is_available() == (b.cudnn.version() is not None)
    if not rtx.cuda.is_available():
        assert not b.cudnn.is_available()
    old = b.cudnn.benchmark, b.cudnn.deterministic
    b.cudnn.benchmark, b.cudnn.deterministic = True, True
    assert (b.cudnn.benchmark, b.cudnn.deterministic) == (True, True)
    with b.cudnn.flags(enabled=False, deterministic=False):
        assert b.cudnn.enabled is False and b.cudnn.deterministic is False
    assert b.cudnn.enabled is True and b.cudnn.deterministic is True
    b.cudnn.benchmark, b.cudnn.deterministic = old
    import numpy
    blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    assert b.mkl.is_available() == ("mkl" in blas.lower())
    assert isinstance(b.openmp.is_available(), bool) and isinstance(b.opt_einsum.is_available(), bool)
    assert b.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    assert b.cuda.matmul.allow_tf32 is False
    with pytest.raises(AttributeError, match="Unknown attribute"):
        b.cuda.matmul.allow_tf33 = True


def test_float32_matmul_precision_drives_allow_tf32():
    try:
        rtx.set_float32_matmul_precision("high")
        assert rtx.backends.cuda.matmul.allow_tf32 and rtx.get_float32_matmul_precision() == "high"
    finally:
        rtx.set_float32_matmul_precision("highest")
    assert not rtx.backends.cuda.matmul.allow_tf32
    with pytest.raises(RuntimeError, match="highest, high, medium"):
        rtx.set_float32_matmul_precision("low")


def test_accelerator_matches_cuda():
    a = rtx.accelerator
    assert a.is_available() == rtx.cuda.is_available()
    assert a.device_count() == rtx.cuda.device_count()
    if a.is_available():
        assert a.current_accelerator() == rtx.device("cuda")
        assert a.current_device_index() == 0
        a.synchronize()
    else:
        assert a.current_accelerator(check_available=True) is None
        a.synchronize()  # nothing to wait for: no error


def test_deterministic_switches():
    assert not rtx.are_deterministic_algorithms_enabled()
    try:
        rtx.use_deterministic_algorithms(True, warn_only=True)
        assert rtx.are_deterministic_algorithms_enabled() and rtx.is_deterministic_algorithms_warn_only_enabled()
        assert rtx.get_deterministic_debug_mode() == 1
        rtx.set_deterministic_debug_mode("error")
        assert rtx.get_deterministic_debug_mode() == 2
    finally:
        rtx.use_deterministic_algorithms(False)
    with pytest.raises(TypeError, match="bool"):
        rtx.use_deterministic_algorithms(1)


def test_num_threads_sets_blas_threads():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = rtx.get_num_threads()
    try:
        rtx.set_num_threads(1)
        blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert blas and all(i["num_threads"] == 1 for i in blas)
        assert rtx.get_num_threads() == 1
        a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
        np.testing.assert_allclose((rtx.from_numpy(a) @ rtx.from_numpy(a)).numpy(), a @ a, rtol=1e-5)
    finally:
        rtx.set_num_threads(before)
    with pytest.raises(ValueError, match="positive integer"):
        rtx.set_num_threads(0)
    rtx.set_num_interop_threads(2)
    assert rtx.get_num_interop_threads() == 2
