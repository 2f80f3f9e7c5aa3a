"""rtx inference: a graph runtime with preallocated buffers, fused kernels, int8 matmul, a dynamic batcher.

    sess = InferenceSession(model, example_inputs)      # or an rtx.graph.Graph, an .onnx path, a ModelProto
    sess.run(None, {"x": array})                         # onnxruntime's signature; thread-safe
    batcher = DynamicBatcher(sess, max_batch_size=32, max_wait_ms=2.0)
    batcher.submit({"x": one_row}).result()
"""
__version__ = "0.1.0"

from rtx.inference.batcher import DynamicBatcher
from rtx.inference.session import InferenceSession

__all__ = ["InferenceSession", "DynamicBatcher"]
