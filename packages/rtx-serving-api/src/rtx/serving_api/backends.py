"""Execution backends for ONNX artifacts: rtx.inference (always there) or onnxruntime (the
`rtx-serving-api[onnxruntime]` extra). `auto` picks onnxruntime when it is installed. Registered
rtx modules and text generators always run on rtx."""
from __future__ import annotations

import importlib.util

import numpy as np

from rtx.runtime.dtypes import ONNX_TYPE_NAMES

BACKENDS = ("auto", "onnxruntime", "rtx")
_ORT_DTYPES = {f"tensor({onnx})": np.dtype(name) for name, onnx in ONNX_TYPE_NAMES.items()
               if name not in ("bfloat16",) and not name.startswith(("float8", "int4", "uint4", "complex"))}
_ORT_DTYPES["tensor(string)"] = np.dtype(object)


def onnxruntime_available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def choose(backend: str) -> str:
    """The backend an ONNX artifact runs on: "onnxruntime" or "rtx"."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "onnxruntime" if onnxruntime_available() else "rtx"
    if backend == "onnxruntime" and not onnxruntime_available():
        raise ValueError("backend 'onnxruntime' needs onnxruntime: pip install 'rtx-serving-api[onnxruntime]'")
    return backend


class _Arg:
    """onnxruntime's NodeArg with the NumPy dtype rtx.inference's NodeArgs carry."""

    def __init__(self, arg):
        self.name, self.shape, self.type = arg.name, arg.shape, arg.type
        if arg.type not in _ORT_DTYPES:
            raise ValueError(f"input/output {arg.name!r} has type {arg.type}, which the server cannot carry")
        self.dtype = _ORT_DTYPES[arg.type]


class OrtSession:
    """An onnxruntime.InferenceSession with rtx.inference's session interface (get_inputs/
    get_outputs with NumPy dtypes, run). One intra-op thread per request: the server runs several
    requests at once (and several workers), so each run keeps to one core."""

    def __init__(self, path):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        self._inputs = [_Arg(a) for a in self.session.get_inputs()]
        self._outputs = [_Arg(a) for a in self.session.get_outputs()]

    def get_inputs(self):
        return self._inputs

    def get_outputs(self):
        return self._outputs

    def run(self, output_names, feed):
        try:
            return self.session.run(output_names, feed)
        except Exception as e:  # onnxruntime's own errors (bad shapes): a client error, as rtx.inference's
            if type(e).__name__ in ("InvalidArgument", "Fail", "InvalidGraph"):
                raise ValueError(str(e)) from None
            raise
