"""Input/output signatures in KServe v2 terms: {"inputs": [{"name", "datatype", "shape"}], "outputs": [...]}.

Datatypes are the KServe/Triton names (FP32, INT64, BYTES, ...); a shape dimension of -1 means
"any size" (a batch or sequence axis)."""
from __future__ import annotations

import numpy as np

from rtx.hub.errors import RegistryError
from rtx.runtime.dtypes import KSERVE_NAMES, ONNX_TYPES

_NUMPY = KSERVE_NAMES  # "float32" -> "FP32"
DATATYPES = (*KSERVE_NAMES.values(), "BYTES")

# onnx.TensorProto.DataType numbers -> KServe names; 8 is onnx's STRING.
_ONNX = {ONNX_TYPES[name]: kserve for name, kserve in KSERVE_NAMES.items()} | {8: "BYTES"}


def datatype_of(dtype) -> str:
    """The KServe datatype of a NumPy (or rtx) dtype: float32 -> FP32, object/str/bytes -> BYTES."""
    name = getattr(dtype, "name", None) or str(dtype)
    if name in _NUMPY:
        return _NUMPY[name]
    try:
        if np.dtype(dtype).kind in "OSU":
            return "BYTES"
    except TypeError:
        pass
    raise RegistryError(f"no KServe datatype for dtype {name!r}; supported: {', '.join(_NUMPY)}, str/bytes")


def check_signature(sig: object) -> dict | None:
    """Validate a user-given signature and return it normalised (shapes as lists of ints)."""
    if sig is None:
        return None
    if not isinstance(sig, dict) or set(sig) - {"inputs", "outputs"}:
        raise RegistryError(f"signature must be a dict with keys 'inputs' and 'outputs', got {_short(sig)}")
    out = {}
    for side in ("inputs", "outputs"):
        tensors = sig.get(side, [])
        if not isinstance(tensors, (list, tuple)):
            raise RegistryError(f"signature[{side!r}] must be a list of tensors, got {_short(tensors)}")
        out[side] = [_check_tensor(t, f"signature[{side!r}][{i}]") for i, t in enumerate(tensors)]
        names = [t["name"] for t in out[side]]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise RegistryError(f"signature[{side!r}] names {dup} more than once")
    return out


def _check_tensor(t: object, where: str) -> dict:
    if not isinstance(t, dict):
        raise RegistryError(f"{where} must be a dict with 'name', 'datatype' and 'shape', got {_short(t)}")
    unknown = set(t) - {"name", "datatype", "shape"}
    if unknown:
        raise RegistryError(f"{where} has unknown keys {sorted(unknown)}; expected 'name', 'datatype', 'shape'")
    name, dt, shape = t.get("name"), t.get("datatype"), t.get("shape")
    if not isinstance(name, str) or not name:
        raise RegistryError(f"{where}['name'] must be a non-empty string, got {name!r}")
    if dt not in DATATYPES:
        raise RegistryError(f"{where}['datatype'] must be one of {', '.join(DATATYPES)}, got {dt!r}")
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in shape):
        raise RegistryError(f"{where}['shape'] must be a list of ints (-1 for any size), got {shape!r}")
    return {"name": name, "datatype": dt, "shape": [int(d) for d in shape]}


def onnx_signature(model) -> dict:
    """The signature of an onnx.ModelProto, from its graph's inputs (less initializers) and outputs."""
    init = {i.name for i in model.graph.initializer}
    return {"inputs": [_onnx_tensor(v) for v in model.graph.input if v.name not in init],
            "outputs": [_onnx_tensor(v) for v in model.graph.output]}


def _onnx_tensor(value_info) -> dict:
    tt = value_info.type.tensor_type
    dt = _ONNX.get(tt.elem_type)
    if dt is None:
        raise RegistryError(f"ONNX tensor {value_info.name!r} has element type {tt.elem_type}, which has no "
                            f"KServe datatype; pass signature= explicitly")
    # dim_value 0 means "unset" in protobuf: a symbolic (dim_param) or missing dimension is -1.
    shape = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
    return {"name": value_info.name, "datatype": dt, "shape": shape}


def example_signature(module, example_inputs) -> dict:
    """The signature of an rtx module, from one call on example inputs (a tensor/array or a tuple
    of them): dtypes and shapes as given, the first (batch) dimension as -1. Input names follow
    rtx.onnx.export: forward's parameter names when they match in number, else input/input_i."""
    import inspect

    import rtx

    examples = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    tensors = [e if isinstance(e, rtx.Tensor) else rtx.tensor(np.asarray(e)) for e in examples]
    with rtx.no_grad():
        outputs = module(*tensors)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    try:
        params = [p.name for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    in_names = params if len(params) == len(tensors) else _names("input", len(tensors))

    def spec(name, t):
        if not isinstance(t, rtx.Tensor):
            raise RegistryError(f"example_inputs: the module returned a {type(t).__name__}, expected tensors")
        shape = list(t.shape)
        return {"name": name, "datatype": datatype_of(t.dtype), "shape": [-1, *shape[1:]] if shape else []}

    return {"inputs": [spec(n, t) for n, t in zip(in_names, tensors)],
            "outputs": [spec(n, t) for n, t in zip(_names("output", len(outputs)), outputs)]}


def _names(base: str, n: int) -> list[str]:
    return [base] if n == 1 else [f"{base}_{i}" for i in range(n)]


def _short(v: object) -> str:
    text = repr(v)
    return (text[:77] + "...") if len(text) > 80 else text
