"""rtx.runtime.threads: the re-entrant single-threaded-BLAS scope under many threads (a fake
BLAS that checks every switch, and the real one through threadpoolctl), thread counts, the
shared worker pool, and a fork inside an open scope."""
import random
import threading
import time

import pytest

from rtx.runtime import threads as T


class FakeBlas:
    """A BLAS lib controller (threadpoolctl's interface: num_threads, set_num_threads) that
    records its thread counts and fails on two switches at once."""

    def __init__(self, n):
        self._n, self.history, self._busy = n, [n], threading.Lock()

    @property
    def num_threads(self):
        return self._n

    def set_num_threads(self, n):
        if not self._busy.acquire(blocking=False):
            raise AssertionError("two threads switched the BLAS thread count at once")
        try:
            time.sleep(0)  # let another thread in, were the caller not holding the module's lock
            self._n = n
            self.history.append(n)
        finally:
            self._busy.release()


@pytest.fixture
def fake(monkeypatch):
    libs = [FakeBlas(4), FakeBlas(3)]  # e.g. OpenBLAS and a second BLAS loaded by another library
    monkeypatch.setitem(T._ctl, "libs", libs)
    assert T._scope == {"depth": 0, "saved": None}
    return libs


def test_scope_restores_after_random_interleavings(fake):
    inside = []   # (thread, BLAS counts seen inside a scope)
    configured = []
    start = threading.Barrier(16)

    def worker(seed):
        rng = random.Random(seed)
        start.wait()
        for _ in range(40):
            depth = rng.randint(1, 3)  # nested entries from one thread: re-entrant
            scopes = [T.single_threaded_blas() for _ in range(depth)]
            for s in scopes:
                s.__enter__()
                time.sleep(rng.random() * 2e-4)
                inside.append([lib.num_threads for lib in fake])
                configured.append(T.get_num_threads())
            for s in reversed(scopes):
                time.sleep(rng.random() * 2e-4)
                s.__exit__(None, None, None)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [lib.num_threads for lib in fake] == [4, 3]
    assert T._scope == {"depth": 0, "saved": None}
    assert len(inside) > 16 * 40 and all(seen == [1, 1] for seen in inside)
    assert set(configured) == {4}  # inside, the configured count is still answered
    for lib, n in zip(fake, (4, 3)):
        # the count only ever alternates between the original and 1: no thread saved a 1
        assert set(lib.history) == {n, 1}
        assert all(a != b for a, b in zip(lib.history, lib.history[1:]))


def test_overlapping_scopes_of_two_threads_restore_when_the_last_leaves(fake):
    # The interleaving that broke per-call save/restore: A enters, B enters (and would save 1),
    # A leaves (and would restore while B still runs), B leaves (and would restore 1).
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with T.single_threaded_blas():
            a_in.set()
            b_in.wait()
        a_out.set()

    def b():
        a_in.wait()
        with T.single_threaded_blas():
            b_in.set()
            a_out.wait()
            assert [lib.num_threads for lib in fake] == [1, 1]  # A's leaving kept B's BLAS at 1

    errors = []
    threads = [threading.Thread(target=lambda f=f: _record(f, errors)) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [lib.num_threads for lib in fake] == [4, 3]
    assert [lib.history for lib in fake] == [[4, 1, 4], [3, 1, 3]]


def _record(f, errors):
    try:
        f()
    except BaseException as e:  # noqa: BLE001 (reported by the main thread)
        errors.append(e)


def test_set_num_threads_inside_a_scope_applies_when_it_ends(fake):
    with T.single_threaded_blas():
        T.set_num_threads(2)
        assert [lib.num_threads for lib in fake] == [1, 1]
        assert T.get_num_threads() == 2
    assert [lib.num_threads for lib in fake] == [2, 2]
    with T.limit_threads(1):
        assert [lib.num_threads for lib in fake] == [1, 1]
    assert [lib.num_threads for lib in fake] == [2, 2]
    with T.limit_threads(None):
        assert [lib.num_threads for lib in fake] == [2, 2]


def test_exceptions_inside_a_scope_still_restore(fake):
    with pytest.raises(KeyError):
        with T.single_threaded_blas():
            with T.single_threaded_blas():
                raise KeyError("x")
    assert [lib.num_threads for lib in fake] == [4, 3]


def test_without_threadpoolctl_kernels_run_serially(monkeypatch):
    monkeypatch.setitem(T._ctl, "libs", [])
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert T.get_num_threads() == 3 and T.cpu_workers() == 1
    with T.single_threaded_blas():
        pass
    with pytest.warns(UserWarning, match="threadpoolctl"):
        T.set_num_threads(2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_counts_are_named(bad):
    with pytest.raises(ValueError, match="positive integer"):
        T.set_num_threads(bad)
    with pytest.raises(ValueError, match="positive integer"):
        T.limit_threads(bad)


# ---- the real BLAS ---------------------------------------------------------------------------------

@pytest.fixture
def blas():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    libs = T._libs()
    if not libs:
        pytest.skip("threadpoolctl found no BLAS to control")

    def counts():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    before = T.get_num_threads()
    T.set_num_threads(2)
    if max(counts()) != 2:
        T.set_num_threads(before)
        pytest.skip("this BLAS cannot run 2 threads")
    yield counts
    T.set_num_threads(before)


def test_real_blas_scope_under_many_threads(blas):
    import numpy as np
    a = np.random.default_rng(0).standard_normal((96, 96))
    want = a @ a
    seen, start = [], threading.Barrier(8)

    def worker(seed):
        rng = random.Random(seed)
        start.wait()
        for _ in range(25):
            with T.single_threaded_blas():
                with T.single_threaded_blas():
                    seen.append(max(lib.num_threads for lib in T._libs()))
                    assert np.allclose(a @ a, want)
                time.sleep(rng.random() * 1e-3)
            time.sleep(rng.random() * 1e-3)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    # the main thread sets the count through threadpoolctl first, as a user's threadpool_limits
    # would: threadpoolctl then drops other threads' sets, which the scope must not rely on
    with pytest.importorskip("threadpoolctl").threadpool_limits(limits=2, user_api="blas"):
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(seen) == 200 and set(seen) == {1}
    assert blas() == [2] * len(blas()) and T.get_num_threads() == 2


def test_parallel_map_keeps_order_runs_single_threaded_and_restores(blas):
    seen = []

    def item(x):
        seen.append((threading.current_thread().name, max(lib.num_threads for lib in T._libs())))
        time.sleep(0.002)
        return x * x

    assert T.parallel_map(item, range(12), workers=3) == [x * x for x in range(12)]
    assert {n for _, n in seen} == {1}
    assert any(name.startswith("rtx-worker") for name, _ in seen)
    assert blas() == [2] * len(blas())
    seen.clear()
    assert T.parallel_map(item, [5], workers=3) == [25]   # one item: serial, BLAS untouched
    assert seen == [(threading.current_thread().name, 2)]


def test_parallel_map_errors_and_nested_calls(blas):
    def boom(x):
        if x == 3:
            raise ValueError("item 3")
        time.sleep(0.001)
        return x

    with pytest.raises(ValueError, match="item 3"):
        T.parallel_map(boom, range(8), workers=2)
    assert blas() == [2] * len(blas())
    # an item that itself maps: the pool may be full, so its helpers may never start; the caller
    # does the work and cancels them instead of waiting (this would hang otherwise)
    out = T.parallel_map(lambda x: sum(T.parallel_map(lambda y: x * y, range(4), workers=2)), range(6), workers=2)
    assert out == [6 * x for x in range(6)]
    assert blas() == [2] * len(blas()) and T._scope["depth"] == 0


def test_fork_inside_an_open_scope_gives_the_child_its_threads(blas):
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with T.single_threaded_blas():  # open in this (the forking) thread
        p = ctx.Process(target=_child_counts, args=(q,))
        p.start()
        child = q.get(timeout=60)
        p.join(60)
    assert child == {"blas": 2, "depth": 0, "map": [0, 1, 4, 9]}
    assert blas() == [2] * len(blas())


def _child_counts(q):
    blas = max(lib.num_threads for lib in T._libs())
    q.put({"blas": blas, "depth": T._scope["depth"], "map": T.parallel_map(lambda x: x * x, range(4), workers=2)})
