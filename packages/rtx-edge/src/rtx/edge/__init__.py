"""rtx edge: int8 ONNX export and a NumPy-only runtime for devices.

    report = rtx.edge.export(model, example, "model.onnx", quantize="int8", calibration_data=x_cal,
                             eval_data=(x_test, y_test))
    sess = rtx.edge.Session("model.onnx")          # needs only numpy + onnx (runtime.py is standalone)
    (logits,) = sess.run(None, {"input": x})
"""
from rtx.edge.exporter import export
from rtx.edge.report import EdgeReport
from rtx.edge.runtime import NodeArg, Session, UnsupportedOpError, supported_ops

__version__ = "0.1.0"
__all__ = ["export", "EdgeReport", "Session", "NodeArg", "UnsupportedOpError", "supported_ops"]
