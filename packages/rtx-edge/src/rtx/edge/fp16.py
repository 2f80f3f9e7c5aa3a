"""fp16 storage: float32 weights stored as float16 and cast back to float32 when the model loads.

Why not a full float16 graph: onnxruntime's CPU provider has no float16 Conv/Gemm kernels on most
CPUs and NumPy computes float16 GEMMs slowly, so the math stays float32; what halves is the file
(and the download to the device). Runtimes constant-fold the Casts once at load.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_FP16_MAX = float(np.finfo(np.float16).max)


def to_fp16_storage(model):
    """A copy of `model` whose float32 initializers are float16, each read through a Cast to float32."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    inputs = {i.name for i in graph.input}  # an initializer that is also an input can be fed: leave it
    used = {i.name for i in graph.initializer} | {x for n in graph.node for x in list(n.input) + list(n.output)}
    casts, inits = [], []
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT or init.name in inputs:
            inits.append(init)
            continue
        w = numpy_helper.to_array(init)
        big = float(np.abs(w).max(initial=0.0))
        if big > _FP16_MAX:
            raise ValueError(f"initializer {init.name!r} holds {big:g}, beyond float16's range ({_FP16_MAX:g}); "
                             "export it with quantize=None or 'int8'")
        name, k = f"{init.name}_fp16", 1
        while name in used:
            name, k = f"{init.name}_fp16_{k}", k + 1
        used.add(name)
        inits.append(numpy_helper.from_array(w.astype(np.float16), name))
        casts.append(helper.make_node("Cast", [name], [init.name], to=TensorProto.FLOAT, name=f"{name}_Cast"))
    nodes = casts + list(graph.node)
    del graph.initializer[:]
    graph.initializer.extend(inits)
    del graph.node[:]
    graph.node.extend(nodes)
    return model
