"""Op identity (every Primitive has one stable, unique op name) and the thread-local recording
hook that rtx.graph's tracer is built on."""
import re
import threading

import numpy as np
import pytest

import rtx
from rtx.extend import Primitive, current_hook, op_name, primitive, recording, registered_ops


def test_every_op_has_a_unique_snake_name_that_finds_its_class():
    import rtx.nn  # noqa: F401  (the layers' ops register on import)
    ops = registered_ops()
    assert len(ops) > 150
    for name, cls in ops.items():
        # core ops have bare snake names; an op defined by a package above the core is namespaced
        # "<package>.<snake>" (geom.spmm, distributions.polygamma) so it never takes a core name
        assert re.fullmatch(r"(?:[a-z][a-z0-9_]*\.)?_?[a-z][a-z0-9_]*", name), name
        assert op_name(cls) == name and primitive(name) is cls
    assert list(ops) == sorted(ops)


@pytest.mark.parametrize("name,cls_name", [
    ("add", "Add"), ("matmul", "MatMul"), ("abs", "AbsBackward"), ("relu", "ReluBackward"), ("eq", "eq"),
    ("logical_not", "logical_not"), ("getitem", "GetItem"), ("logsumexp", "LogSumExp"), ("fft_c2c", "FftC2C"),
    ("native_layer_norm", "NativeLayerNorm"), ("softmax", "Softmax"), ("log_softmax", "LogSoftmax"),
    ("convolution", "Conv"), ("leaky_relu", "LeakyReluBackward"), ("gelu", "Gelu"), ("gelu_backward", "GeluBackward"),
])
def test_names(name, cls_name):
    import rtx.nn  # noqa: F401
    cls = primitive(name)
    assert cls.__name__ == cls_name
    # name() keeps PyTorch's grad_fn spelling, whatever the op name is
    assert cls.__new__(cls).name() == cls_name.removesuffix("Backward") + "Backward0"


def test_the_two_softmax_primitives_have_distinct_names():
    import rtx.nn.functional as F
    x = rtx.randn(2, 5, requires_grad=True)
    assert op_name(F.softmax(x, -1).grad_fn) == "softmax"
    assert primitive("safe_softmax").__module__.endswith("attention")


def test_relu_is_one_op_however_it_is_called():
    import rtx.nn.functional as F
    x = rtx.randn(4, requires_grad=True)
    assert type(F.relu(x).grad_fn) is type(rtx.relu(x).grad_fn) is type(x.relu().grad_fn) is primitive("relu")


def test_derived_explicit_and_keyword_names():
    class _Probe(Primitive):
        pass

    class ProbeTwoBackward(_Probe):
        pass

    class Whatever(Primitive, op="probe_kw"):
        pass

    class Other(Primitive):
        op = "probe_attr"

    class OtherChild(Other):  # an explicit name is not inherited
        pass

    try:
        assert _Probe.op == "_probe" and ProbeTwoBackward.op == "probe_two"
        assert Whatever.op == "probe_kw" and Other.op == "probe_attr" and OtherChild.op == "other_child"
        assert primitive("probe_kw") is Whatever
    finally:
        from rtx._tensor import function
        for n in ("_probe", "probe_two", "probe_kw", "probe_attr", "other_child"):
            function._OPS.pop(n, None)


def test_duplicate_name_is_an_error_at_class_creation():
    with pytest.raises(TypeError, match=r"op name 'add' of .*Mine is already taken by rtx\._tensor\.ops\.arith\.Add"):
        class Mine(Primitive):
            op = "add"
    assert primitive("add").__name__ == "Add"


def test_unknown_name_suggests():
    with pytest.raises(KeyError, match="did you mean 'matmul'"):
        primitive("matmull")
    with pytest.raises(TypeError, match="expects a Primitive subclass"):
        op_name(int)


class _Log:
    """A hook that runs each op (unhooked) and logs its name."""

    def __init__(self):
        self.ops, self.writes, self.olds = [], [], []

    def primitive(self, cls, inputs, attrs):
        self.ops.append(cls.op)
        with recording(None):
            return cls.apply(*inputs, **attrs)

    def old_value(self, t, copy):
        self.olds.append(t)

    def write_result(self, t, result, write):
        self.writes.append(t)
        return write(t, result)


def test_hook_sees_fast_paths_and_in_place_ops():
    a, b = rtx.randn(16), rtx.randn(16)
    log = _Log()
    with recording(log):
        assert current_hook() is log
        c = a + b            # the fast path goes through the Primitive while recorded
        d = 2.0 * c
        c.relu_()
        e = c @ d
    assert current_hook() is None
    assert log.ops == ["add", "mul", "relu", "matmul"]
    assert log.olds == [c] and log.writes == [c]
    np.testing.assert_array_equal(e.numpy(), np.maximum(a.numpy() + b.numpy(), 0) @ (2.0 * (a.numpy() + b.numpy())))


def test_recording_is_thread_local():
    log = _Log()
    started, stop = threading.Event(), threading.Event()
    other = []

    def work():
        x = rtx.ones(8)
        started.set()
        while not stop.is_set():
            x = (x * 0.5 + 0.25).exp().log()
            other.append(current_hook())

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    with recording(log):
        y = rtx.ones(3)
        for _ in range(200):
            y = y - 0.5
    stop.set()
    t.join()
    assert set(log.ops) == {"sub"} and len(log.ops) == 200
    assert other and all(h is None for h in other)
