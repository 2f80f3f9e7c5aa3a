"""Shared fixtures: registries of real models (rtx.hub), servers on loopback ports (uvicorn in a
thread), and the references the answers are checked against (the eager rtx model, onnxruntime)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import rtx
import rtx.onnx
from rtx.demo.model import DigitsCNN
from rtx.hub import Registry
from rtx.serving_api import create_app
from rtx.serving_api.models import ServedModel, load_version
from rtx.serving_api.protocol import Signature
from rtx.serving_api.testing import ServerThread

X = np.random.default_rng(0).random((5, 1, 8, 8), dtype=np.float32)

# Every datatype of the protocol, with the NumPy dtype tritonclient uses for it.
DTYPES = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
          "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
          "FP32": np.float32, "FP64": np.float64, "BF16": ml_dtypes.bfloat16, "BYTES": np.object_}


class _Arg:
    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, np.dtype(dtype), shape


class Reverse:
    """A session (onnxruntime's API) whose output out_<DT> is input in_<DT> reversed along its last
    axis: each answer depends on every element the server decoded, in order."""

    def get_inputs(self):
        return [_Arg(f"in_{d}", t, [-1, -1]) for d, t in DTYPES.items()]

    def get_outputs(self):
        return [_Arg(f"out_{d}", t, [-1, -1]) for d, t in DTYPES.items()]

    def run(self, names, feed):
        return [feed[f"in_{d}"][..., ::-1].copy() for d in DTYPES]


def reverse_loader(mv, batching):
    if mv.name != "reverse":
        return load_version(mv, batching)
    sig = Signature.from_dict({"inputs": [{"name": f"in_{d}", "datatype": d, "shape": [-1, -1]} for d in DTYPES],
                               "outputs": [{"name": f"out_{d}", "datatype": d, "shape": [-1, -1]} for d in DTYPES]})
    return ServedModel(mv.name, mv.version, mv.stage, mv.sha256, signature=sig, session=Reverse())


def sample(datatype, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if datatype == "BOOL":
        return rng.random(shape) < 0.5
    if datatype == "BYTES":
        words = [b"", b"a", "\u00e9t\u00e9".encode(), b"\x00\xff", b"rtx" * 40, b"z"]
        return np.array([words[i % len(words)] for i in range(n)], dtype=object).reshape(shape)
    dt = np.dtype(DTYPES[datatype])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)  # the extremes included
    return (rng.standard_normal(shape) * 100).astype(dt)




def digits_model(seed: int):
    rtx.manual_seed(seed)
    return DigitsCNN().eval()


def eager(model, x: np.ndarray) -> np.ndarray:
    """The reference: the model's own eager forward (not rtx.inference's compiled plan)."""
    with rtx.no_grad():
        return model(rtx.from_numpy(np.ascontiguousarray(x))).numpy()


def add_model_onnx(path):
    """An ONNX graph of two INT64 inputs a[-1, 3] + b[-1, 3] (and their product): a multi-input,
    multi-output, integer model whose answer NumPy gives exactly."""
    import onnx
    from onnx import TensorProto, helper
    a = helper.make_tensor_value_info("a", TensorProto.INT64, ["n", 3])
    b = helper.make_tensor_value_info("b", TensorProto.INT64, ["n", 3])
    s = helper.make_tensor_value_info("sum", TensorProto.INT64, ["n", 3])
    p = helper.make_tensor_value_info("prod", TensorProto.INT64, ["n", 3])
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Mul", ["a", "b"], ["prod"])]
    graph = helper.make_graph(nodes, "add", [a, b], [s, p])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


class Slow:
    """A session proxy that sleeps before each run: a model slow enough to be caught in flight."""

    def __init__(self, session, seconds):
        self.session, self.seconds = session, seconds

    def __getattr__(self, name):
        return getattr(self.session, name)

    def run(self, names, feed):
        import time
        time.sleep(self.seconds)
        return self.session.run(names, feed)


def slow_loader(seconds):
    """load_version, with every session slowed down by `seconds` per run (batched as configured)."""
    from rtx.inference import DynamicBatcher

    def load(mv, batching):
        m = load_version(mv, batching)
        if m.session is not None:
            m.session = Slow(m.session, seconds)
            if m.batcher is not None:
                m.batcher.close()
                m.batcher = DynamicBatcher(m.session, batching.max_batch_size, batching.max_wait_ms)
        return m
    return load


@pytest.fixture(scope="session")
def models():
    return {"1.0.0": digits_model(1), "2.0.0": digits_model(2)}


@pytest.fixture(scope="session")
def registry(tmp_path_factory, models):
    """digits 1.0.0 (production) and 2.0.0 (staging), an ONNX export of 1.0.0, the INT64 add model."""
    root = tmp_path_factory.mktemp("registry")
    reg = Registry(root)
    reg.register(models["1.0.0"], "digits", "1.0.0", example_inputs=X[:1], stage="production")
    reg.register(models["2.0.0"], "digits", "2.0.0", example_inputs=X[:1])
    onnx_path = root.parent / "digits.onnx"
    rtx.onnx.export(models["1.0.0"], rtx.from_numpy(X[:1]), str(onnx_path), input_names=["image"],
                    output_names=["logits"], dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    reg.register(onnx_path, "digits-onnx", "1.0.0", stage="production")
    reg.register(add_model_onnx(root.parent / "add.onnx"), "add", "1.0.0", stage="production")
    return reg


@pytest.fixture(scope="session")
def onnx_path(registry):
    return str(registry.get("digits-onnx").artifact)


@pytest.fixture(scope="session")
def server(registry):
    """One server over `registry` with the default configuration, shared by the protocol tests."""
    app = create_app(registry=registry)
    with ServerThread(app) as url:
        yield url


@pytest.fixture
def client(server):
    import httpx
    with httpx.Client(base_url=server, timeout=30) as c:
        yield c


def v2_body(name, x, datatype="FP32", **extra):
    return {"inputs": [{"name": name, "shape": list(x.shape), "datatype": datatype, "data": x.ravel().tolist()}],
            **extra}


@pytest.fixture(scope="session")
def h():
    """The helpers above, for test modules (which cannot import conftest under --import-mode=importlib)."""
    import types
    return types.SimpleNamespace(X=X, eager=eager, v2_body=v2_body, slow_loader=slow_loader,
                                 digits_model=digits_model, add_model_onnx=add_model_onnx, DTYPES=DTYPES,
                                 sample=sample, reverse_loader=reverse_loader)
