"""rtx as an ONNX backend (onnx.backend.base.Backend), so onnx's conformance suite runs against it.

    import rtx.onnx.backend as backend
    rep = backend.prepare(model, "CPU")
    outputs = rep.run([x])            # NumPy arrays in, a tuple of NumPy arrays out

`prepare`, `run_model`, `run_node` and `supports_device` are also module functions, as
onnxruntime.backend offers them. Device: "CPU". CUDA is not claimed: the importer's integer,
shape and string paths compute with NumPy on the host, and the CuPy path has never run on a GPU.
"""
from __future__ import annotations

import numpy as np

import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict
from rtx.onnx.load import ModelModule, read_model, run_numpy

__all__ = ["RtxBackend", "RtxBackendRep", "prepare", "run_model", "run_node", "supports_device"]


def _device(device: str) -> str:
    kind = str(device).split(":")[0].upper()
    if kind == "CPU":
        return "cpu"
    if kind == "CUDA":
        raise ValueError("rtx.onnx.backend runs on 'CPU' only for now (see supports_device); to try a GPU, "
                         "move the module yourself: rtx.onnx.load(path).to('cuda')")
    raise ValueError(f"rtx.onnx.backend: unknown device {device!r}; expected 'CPU'")


class RtxBackendRep(BackendRep):
    """A prepared model: run(inputs) as many times as needed."""

    def __init__(self, module: ModelModule, device: str = "cpu"):
        self.module = module
        self.device = device

    def run(self, inputs, **kwargs):
        m = self.module
        if isinstance(inputs, dict):
            inputs = [inputs[name] for name in m.input_names]
        elif isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        outs = run_numpy(m, list(inputs))
        return namedtupledict("Outputs", m.output_names)(*outs)


class RtxBackend(Backend):
    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        try:
            ModelModule(model, check=False)
        except NotImplementedError:
            return False
        return True

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        if not isinstance(model, onnx.ModelProto):
            model = read_model(model)
        else:
            read_model(model, check=True)
        dev = _device(device)
        return RtxBackendRep(ModelModule(model, check=False), dev)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Run one NodeProto on NumPy inputs (a model is built around it)."""
        super().run_node(node, inputs, device=device, outputs_info=outputs_info, **kwargs)
        from onnx import helper
        names = [n for n in node.input if n]
        if isinstance(inputs, dict):
            arrays = [inputs[n] for n in names]
        else:
            arrays = list(inputs)
        graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype),
                                                      np.asarray(a).shape) for n, a in zip(names, arrays)]
        graph_outputs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = helper.make_graph([node], "run_node", graph_inputs, graph_outputs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid(node.domain, opset)])
        rep = RtxBackendRep(ModelModule(model, check=False), _device(device))
        return rep.run(arrays)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).split(":")[0].upper() == "CPU"


backend = RtxBackend
prepare = RtxBackend.prepare
run_model = RtxBackend.run_model
run_node = RtxBackend.run_node
supports_device = RtxBackend.supports_device
is_compatible = RtxBackend.is_compatible
