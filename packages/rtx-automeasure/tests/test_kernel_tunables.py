"""The kernels' side of the tuning cache: a cached choice is used, a corrupt or other-machine cache falls back to
the default (same results as with no cache), and the tuner stores what it measured faster under the keys a
layer's kernels ask for."""
import contextlib
import json
import time

import numpy as np
import pytest

import rtx
import rtx.nn.functional as F
from rtx.automeasure import tune as T
from rtx.nn._functional import conv as C
from rtx.nn._functional import linear as L
from rtx.runtime import threads, tuning


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "tuning.json"
    monkeypatch.setenv("RTX_TUNING_CACHE", str(path))
    tuning.clear_memo()
    yield path
    tuning.clear_memo()


def _conv_run(monkeypatch):
    """conv2d forward + backward on fixed data; returns (y, dx, dw) and the (chunks, workers) of every
    chunked kernel call (none when the whole batch is one set of columns)."""
    calls = []
    real = C._run_chunks

    def spy(arr, chunks, workers, fn):
        calls.append((len(chunks), workers))
        return real(arr, chunks, workers, fn)
    monkeypatch.setattr(C, "_run_chunks", spy)
    rng = np.random.default_rng(0)
    x = rtx.tensor(rng.standard_normal((4, 3, 9, 9)).astype(np.float32), requires_grad=True)
    w = rtx.tensor(rng.standard_normal((5, 3, 3, 3)).astype(np.float32), requires_grad=True)
    y = F.conv2d(x, w, stride=2, padding=1)
    y.backward(rtx.ones(*y.shape))
    monkeypatch.setattr(C, "_run_chunks", real)
    return (y.detach().numpy(), x.grad.numpy(), w.grad.numpy()), calls


# the key of that layer: (N, C, H, W, O, kh, kw, sh, sw)
CONV_KEY = ("conv2d", (4, 3, 9, 9, 5, 3, 3, 2, 2), "float32", "cpu")


def test_conv_uses_the_cached_chunk_size_and_workers(cache, monkeypatch):
    default, first = _conv_run(monkeypatch)
    # the default: 32 MB chunks, as many as BLAS has threads (the whole batch at once with one thread)
    assert all(c == (threads.cpu_workers(),) * 2 for c in first)
    tuning.store(*CONV_KEY, {"chunk_bytes": 1, "workers": 3})
    with tuning.record() as asked:
        tuned, calls = _conv_run(monkeypatch)
    assert calls == [(4, 3), (4, 3), (4, 3)]               # one sample a chunk, 3 workers: forward, dx, dw
    assert {a for a in asked if a[0] == "conv2d"} == {CONV_KEY}   # the three kernels ask with one key
    for a, b in zip(tuned, default):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_conv_ignores_a_corrupt_or_other_machine_cache(cache, monkeypatch):
    default, first = _conv_run(monkeypatch)
    key = tuning.store(*CONV_KEY, {"chunk_bytes": 1, "workers": 3})
    doc = json.loads(cache.read_text())
    doc["entries"][key.rsplit("|", 1)[0] + "|0123456789ab"] = doc["entries"].pop(key)   # another machine's
    cache.write_text(json.dumps(doc))
    tuning.clear_memo()
    out, calls = _conv_run(monkeypatch)
    assert calls == first and all(np.array_equal(a, b) for a, b in zip(out, default))     # bit-identical
    cache.write_text('{"format": 1, "entries": {"conv2d|4x')
    tuning.clear_memo()
    with pytest.warns(RuntimeWarning, match="ignored"):
        out, calls = _conv_run(monkeypatch)
    assert calls == first and all(np.array_equal(a, b) for a, b in zip(out, default))
    tuning.store(*CONV_KEY, {"chunk_bytes": "big", "workers": 0})   # values of the wrong kind: defaults
    out, calls = _conv_run(monkeypatch)
    assert calls == first and all(np.array_equal(a, b) for a, b in zip(out, default))


def test_small_gemm_policy_reads_the_cache(cache, monkeypatch):
    monkeypatch.setattr(threads, "cpu_workers", lambda: 2)
    a = np.zeros(1, np.float32)
    macs = 8 * 512 * 1000
    assert L.one_blas_thread(a, macs) is threads.single_threaded_blas()        # the default: one BLAS thread
    tuning.store("gemm_small", (macs,), "float32", "cpu", {"single_threaded": False})
    assert isinstance(L.one_blas_thread(a, macs), contextlib.nullcontext)      # measured: BLAS's threads
    assert L.one_blas_thread(a, 4 * macs) is threads.single_threaded_blas()    # another size bucket
    assert L.one_blas_thread(np.zeros(1), macs) is threads.single_threaded_blas()   # another dtype


def test_flash_attention_tiles_read_the_cache(cache, monkeypatch):
    fa = pytest.importorskip("rtx.flash_attn")
    from rtx.flash_attn import _cpu
    seen = []
    real = _cpu.block_sizes
    monkeypatch.setattr(_cpu, "block_sizes", lambda *a: seen.append(real(*a)) or seen[-1])
    rng = np.random.default_rng(0)
    q, k, v = (rtx.tensor(rng.standard_normal((1, 2, 64, 8)).astype(np.float32)) for _ in range(3))
    default = fa.flash_attention(q, k, v).numpy()
    tuning.store("flash_attn", (2, 64, 64, 8), "float32", "cpu", {"block_q": 16, "block_k": 32})
    tuned = fa.flash_attention(q, k, v).numpy()
    assert seen[0] == (64, 64) and seen[-1] == (16, 32)
    np.testing.assert_allclose(tuned, default, rtol=1e-5, atol=1e-6)
    assert _cpu.tuned_blocks(2, 64, 64, 8, np.float64) == (None, None)


def test_cuda_row_kernels_read_the_cache(cache):
    from rtx.kernel import _cuda

    class FakeKernel:   # stands in for a cupy.RawKernel: records the launch
        name = "softmax_fwd"

        def __init__(self):
            self.blocks = []

        def __call__(self, grid, block, args):
            self.blocks.append(block)
    kern, x = FakeKernel(), np.zeros((4, 100), np.float32)
    _cuda.launch_rows(kern, 4, 100, x)
    tuning.store("cuda_rows.softmax_fwd", (4, 100), "float32", "cuda:0", {"threads": 128})
    _cuda.launch_rows(kern, 4, 100, x)
    tuning.store("cuda_rows.softmax_fwd", (4, 100), "float32", "cuda:0", {"threads": 100})   # not whole warps
    _cuda.launch_rows(kern, 4, 100, x)
    assert kern.blocks == [(32,), (128,), (32,)]


def test_tune_task_stores_only_what_it_measured_faster(cache):
    def run():   # a "kernel" whose tuned config is 8x faster
        cfg = tuning.lookup("test.op", (8, 8), "float32", "cpu")
        time.sleep(0.0005 if cfg and cfg.get("fast") else 0.004)
    result = T.tune_task(T.Task("test.op", "fake layer", run, [{}, {"fast": True}]), rep_ms=40)
    assert result.config == {"fast": True} and result.speedup > 2
    assert tuning.lookup("test.op", (8, 8), "float32") == {"fast": True}
    (entry,) = tuning.entries().values()
    assert entry["layer"] == "fake layer" and set(entry["median_s"]) == {"default", "fast=True"}

    def same(**_):
        tuning.lookup("test.same", (4,), "float32", "cpu")
        time.sleep(0.001)
    result = T.tune_task(T.Task("test.same", "no gain", same, [{}, {"x": 1}, {"x": 2}]), rep_ms=20)
    assert result.config == {}                     # no candidate measured faster: the default stays
    assert T.tune_task(T.Task("test.none", "asks nothing", lambda: None, [{}, {"x": 1}]), rep_ms=5) is None


def test_tune_command_checks_its_arguments(capsys):
    with pytest.raises(SystemExit):
        T.main(["--ops", "conv,bogus"])
    assert "--ops expects" in capsys.readouterr().err


def test_tune_command_undoes_choices_that_made_a_workload_slower(cache, monkeypatch, capsys):
    # one fake workload whose single layer measures faster alone under {"fast": True}, but whose whole run is
    # slower with the cache than without (what a layer timed alone cannot see): the entry must be removed again
    def layer():
        cfg = tuning.lookup("test.op", (8, 8), "float32", "cpu")
        time.sleep(0.0005 if cfg and cfg.get("fast") else 0.004)

    def whole():
        time.sleep(0.03 if tuning.lookup("test.op", (8, 8), "float32", "cpu") else 0.01)
    monkeypatch.setattr(T, "find_tasks", lambda names, ops: [T.Task("test.op", "fake", layer, [{}, {"fast": True}],
                                                                    workload="fake workload")])
    monkeypatch.setattr(T, "workloads", lambda names=None: {"fake workload": lambda: (None, None, whole)})
    assert T.main(["--budget", "0.1", "--rounds", "3"]) == 0
    out = capsys.readouterr().out
    assert "1 changed from the default" in out and "entries removed" in out
    assert tuning.lookup("test.op", (8, 8), "float32") is None
