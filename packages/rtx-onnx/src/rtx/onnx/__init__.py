"""rtx onnx: export to ONNX, import ONNX models, an ONNX backend.

Names are imported on first use (PEP 562), so `import rtx.onnx` does not import onnx itself:
`rtx.onnx.export` (rtx.onnx.export), `rtx.onnx.load` (the callable module rtx.onnx.load) /
`ModelModule` / `ONNXLoadError` / `UnsupportedOpError` / `supported_ops`, `rtx.onnx.backend`
(the onnx.backend.base.Backend module).
"""
import importlib as _importlib

__version__ = "0.1.0"

# Eager: the submodule rtx.onnx.export has the function's name, and importing the submodule
# later (as the exporter's own modules do) would otherwise leave the module in its place.
from rtx.onnx.export import export  # noqa: E402,F401  (imports onnx only when called)

_LAZY = {
    # the module itself: it is callable (load(path) -> ModelModule) and importing the submodule
    # rebinds this name to it anyway, so the name means one object whatever the import order
    "load": ("rtx.onnx.load", None),
    "supported_ops": ("rtx.onnx.load", "supported_ops"),
    "ModelModule": ("rtx.onnx.load", "ModelModule"),
    "ONNXLoadError": ("rtx.onnx.load", "ONNXLoadError"),
    "UnsupportedOpError": ("rtx.onnx.load", "UnsupportedOpError"),
    "backend": ("rtx.onnx.backend", None),
}


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        mod = _importlib.import_module(module)
        value = mod if attr is None else getattr(mod, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rtx.onnx' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
