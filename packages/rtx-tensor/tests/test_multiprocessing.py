import multiprocessing
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).parent / "mp_helpers"))
import rtx_mp_children as children  # noqa: E402

METHODS = [m for m in ("fork", "spawn", "forkserver") if m in multiprocessing.get_all_start_methods()]


def test_share_memory_keeps_values_and_later_views_are_shared():
    t = rtx.arange(12.0).reshape(3, 4)
    ref = t.numpy().copy()
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared()
    np.testing.assert_array_equal(t.numpy(), ref)
    v = t[1:, ::2]
    assert v.is_shared()
    v.fill_(-1.0)
    assert t[2, 2].item() == -1.0
    assert t.share_memory_().is_shared()  # a second call keeps the same memory
    assert not rtx.zeros(0).is_shared() and rtx.zeros(0).share_memory_().is_shared()


@pytest.mark.parametrize("method", METHODS)
def test_a_tensor_written_in_a_child_is_seen_in_the_parent(method):
    ctx = mp.get_context(method)
    t = rtx.zeros(2, 3).share_memory_()
    p = ctx.Process(target=children.fill, args=(t[1], 5.0))  # a view travels as a view
    p.start()
    p.join(60)
    assert p.exitcode == 0
    np.testing.assert_array_equal(t.numpy(), [[0, 0, 0], [5, 5, 5]])


@pytest.mark.parametrize("method", METHODS)
def test_a_tensor_sent_through_a_queue_is_moved_to_shared_memory(method):
    ctx = mp.get_context(method)
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=children.fill_from_queue, args=(q, done))
    p.start()
    t = rtx.ones(5, dtype=rtx.float64)
    q.put(t)
    assert done.get(timeout=60) is True
    p.join(60)
    assert t.is_shared()  # moved when sent, as PyTorch does
    np.testing.assert_array_equal(t.numpy(), np.full(5, 7.0))


def test_a_tensor_made_in_a_child_arrives_shared():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=children.put_new_tensor, args=(q,))
    p.start()
    t = q.get(timeout=60)
    q.put("got it")
    p.join(60)
    assert t.is_shared()
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])


def test_parameter_and_requires_grad_survive_and_non_leaf_is_refused():
    from multiprocessing.reduction import ForkingPickler
    w = rtx.randn(3, requires_grad=True)
    back = pickle.loads(ForkingPickler.dumps(w))
    assert back.requires_grad and back.is_shared()
    back.data.mul_(2)
    np.testing.assert_allclose(w.detach().numpy(), back.detach().numpy())
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        ForkingPickler.dumps(w * 2)


def test_file_system_strategy():
    from multiprocessing.reduction import ForkingPickler
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    mp.set_sharing_strategy("file_system")
    try:
        t = rtx.arange(3.0).share_memory_()
        back = pickle.loads(ForkingPickler.dumps(t))
        back.add_(1)
        np.testing.assert_array_equal(t.numpy(), [1, 2, 3])
    finally:
        mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file_descriptor"):
        mp.set_sharing_strategy("nope")


def test_pool_maps_over_tensors():
    with mp.get_context("fork").Pool(2) as pool:
        out = pool.map(children.square, [rtx.tensor([float(i)]) for i in range(4)])
    assert [o.item() for o in out] == [0, 1, 4, 9]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_spawn_runs_fn_with_the_index(method):
    t = rtx.zeros(3).share_memory_()
    assert mp.spawn(children.spawned_write, args=(t,), nprocs=3, start_method=method) is None
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3])


def test_spawn_propagates_a_child_exception():
    with pytest.raises(mp.ProcessRaisedException, match="child 1 failed on purpose") as e:
        mp.spawn(children.spawned_raise, nprocs=2)
    assert e.value.error_index == 1 and "ValueError" in str(e.value)


def test_spawn_reports_an_exit_code():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as e:
        mp.spawn(children.spawned_exit, nprocs=2, start_method="fork")
    assert e.value.exit_code == 3


def test_spawn_without_join_returns_a_context():
    ctx = mp.spawn(children.spawned_raise, nprocs=1, join=False, start_method="fork")
    assert len(ctx.pids()) == 1
    while not ctx.join():
        pass


def test_cuda_tensors_are_refused_with_a_hint():
    from rtx.multiprocessing.shared import reduce_tensor
    if not rtx.cuda.is_available():
        pytest.skip("no GPU")
    with pytest.raises(RuntimeError, match="CPU tensors only"):
        reduce_tensor(rtx.zeros(2, device="cuda"))


def test_stdlib_api_is_re_exported():
    for name in ("Process", "Pool", "Queue", "SimpleQueue", "get_context", "set_start_method",
                 "get_start_method", "cpu_count", "Manager", "Event", "Lock", "Value", "Array"):
        assert hasattr(mp, name), name
    assert mp.ProcessContext is mp.SpawnContext
